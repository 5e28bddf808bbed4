/*
 * The IB CM protocol (ibcm_*.c) as the id layer above it sees it: the
 * messages a user's request sends, what happens when a user lets go of
 * an id, and the one callback through which the protocol reports back
 * (struct ibcm_ops, registered at start-up, as ib_cm reports to its
 * cm_id's event handler). The protocol never calls the id layer by name;
 * its timers (retransmission, MRA, TIMEWAIT) are its own.
 */
#ifndef IBCM_H
#define IBCM_H

#include "cm.h"

/* What the protocol reports. */
enum ibcm_event_type {
	/* An rdma_cm event for id's user (event, status, param); with ud,
	 * the peer's QP number and Q_Key and an address handle (SIDR). */
	IBCM_EV_USER,
	/* A connection request (REQ or SIDR_REQ; id is NULL): find the
	 * listener of service_id and make its child (ev->child, ev->has_ip).
	 * 0; -ENOENT: no listener; -EPROTOTYPE: the listener is of another
	 * transport; -ENOBUFS: at its backlog, or out of memory. */
	IBCM_EV_REQ,
	/* The child made for IBCM_EV_REQ cannot be taken up: undo it. */
	IBCM_EV_DISCARD,
	/* The protocol is done with id: free it if its user is gone. */
	IBCM_EV_DONE,
};

struct ibcm_event {
	enum ibcm_event_type type;
	/* IBCM_EV_USER */
	uint32_t event; /* enum rdma_cm_event_type */
	int status;
	const struct sof_cm_param *param;
	bool ud;
	uint32_t qpn, qkey;
	/* IBCM_EV_REQ, in */
	uint64_t service_id;
	const uint8_t *pdata; /* the request's private data */
	const struct sofd_mad_addr *from;
	uint32_t qp_type; /* what the request is for: IBV_QPT_RC, _UC, _UD */
	uint16_t pkey;	  /* the request's P_Key (the connection's partition) */
	/* IBCM_EV_REQ, out */
	struct cm_id *child;
	bool has_ip; /* pdata starts with the A11 header */
};

struct ibcm_ops {
	/* 0 or -errno (only IBCM_EV_REQ fails). */
	int (*event)(struct cm_id *id, struct ibcm_event *ev);
};

/* Start: the MAD agent on QP1 and the protocol's timerfd (polled by the
 * host). 0 or -errno. */
int ibcm_init(const struct ibcm_ops *ops);
/* A new id's protocol side (before any other call). */
void ibcm_id_init(struct cm_id *id);
/* id is going away: its deadline, comm ID and SIDR request ID end. */
void ibcm_release(struct cm_id *id);

/* The messages of a user's request (validated by the id layer). 0 or
 * -errno. */
int cm_send_req(struct cm_id *id, const struct sof_cm_param *p);
int cm_send_rep(struct cm_id *id, const struct sof_cm_param *p);
int cm_send_rtu(struct cm_id *id);
int cm_send_rej(struct cm_id *id, uint16_t reason, const uint8_t *pdata, uint8_t len);
int cm_send_dreq(struct cm_id *id);
int cm_send_sidr_req(struct cm_id *id, const struct sof_cm_param *p);
int cm_send_sidr_rep(struct cm_id *id, uint8_t status, const struct sof_cm_param *p);
/* A packet arrived on the QP of id (IBV_EVENT_COMM_EST). */
void ibcm_comm_est(struct cm_id *id);
/* The id's user is gone (destroy or process death): end the connection
 * the way IBA asks for its state. Returns true when the id must linger
 * (the protocol still needs it), false when it can be freed now. */
bool ibcm_abandon(struct cm_id *id);

/* Run every deadline due at now (cm_timer_event; tests pass
 * UINT64_MAX to expire them all). */
void ibcm_timers_fire(uint64_t now);

#endif
