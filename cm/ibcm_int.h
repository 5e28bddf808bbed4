/*
 * Inside the IB CM protocol: its state and what its files share. At the
 * base ibcm_conn.c (a connection's state, its kept messages, its
 * deadline, the callback up); on it ibcm_send.c (what a user's request
 * sends) and ibcm_recv.c (what a peer's message does, and the agent on
 * QP1); on top ibcm_timer.c (what a deadline that passes does, which may
 * send a REJ).
 */
#ifndef IBCM_INT_H
#define IBCM_INT_H

#include "ibcm.h"

struct ibcm_state {
	struct sof_hmap comm;	   /* local comm ID -> struct cm_id */
	struct sof_hmap sidr;	   /* SIDR request ID -> struct cm_id (active) */
	struct sof_link sidr_rcvd; /* passive ids in SIDR_REQ_RCVD */
	struct sof_link timers;	   /* ids with a deadline */
	int timer_fd;		   /* the timerfd, polled by the host */
	uint64_t timer_armed_ns;
	int agent; /* MAD agent number */
	const struct ibcm_ops *ops;
};

extern struct ibcm_state ibcm;

/* ---- ibcm_conn.c ------------------------------------------------------------ */

/* 4.096 us * 2^t in ns (t <= 31) */
uint64_t ibcm_iba_time_ns(uint8_t t);
/* How long an answer to one of our messages may take: the peer's time
 * plus a round trip of packet lifetimes (12.7.25, 12.7.26). */
uint64_t ibcm_answer_ns(const struct cm_id *id, uint8_t peer_timeout);
uint32_t ibcm_new_comm_id(void);
/* Every change of id->state goes through here (traced by name). */
void ibcm_set_state(struct cm_id *id, enum cm_state s);
/* id->peer: the peer's CM on QP1, by the id's GIDs. */
void ibcm_peer_init(struct cm_id *id);
/* A CM MAD header of ours into mad (zeroed first). */
void ibcm_mad_hdr(uint8_t *mad, uint16_t attr, uint32_t attr_mod);
/* Send id->msg (built by the caller) and keep it for retransmission. */
int ibcm_send_request(struct cm_id *id, uint64_t timeout_ns, uint32_t retries);
/* Send id->reply (built by the caller); it is sent again on duplicates. */
void ibcm_send_reply(struct cm_id *id);
/* A MAD to the CM of from (a message that fits no connection). */
void ibcm_send_stateless(const struct sofd_mad_addr *from, const uint8_t *mad);
void ibcm_enter_timewait(struct cm_id *id);
/* id's deadline: now + ns; 0 clears it. */
void ibcm_timer_set(struct cm_id *id, uint64_t ns);
int ibcm_timer_init(void);
/* Move the ids whose deadline is at or before now from ibcm.timers to
 * due; the caller clears each deadline as it runs it, then calls
 * ibcm_timer_arm. */
void ibcm_timer_take_due(uint64_t now, struct sof_link *due);
void ibcm_timer_arm(void);
/* Report to the id layer (the one callback). */
void ibcm_report(struct cm_id *id, uint32_t event, int status, const struct sof_cm_param *p);
/* The protocol is done with id (it may be freed: touch it no more). */
void ibcm_done(struct cm_id *id);
int ibcm_up(struct cm_id *id, struct ibcm_event *ev);

/* ---- ibcm_recv.c ------------------------------------------------------------ */

void ibcm_mad_recv(const uint8_t *mad, const struct sofd_mad_addr *from);

/* ---- ibcm_timer.c ----------------------------------------------------------- */

/* id's deadline passed. */
void ibcm_timeout(struct cm_id *id);

#endif
