/*
 * The connection manager of the device daemon: what the kernel's rdma_cm
 * and ib_cm are under OFED.
 *
 *  - ids.c: the RDMA CM service librdmacm talks to (sof_cm_proto.h): event
 *    channels, rdma_cm_ids, addresses and ports, route, listen, the
 *    attributes for the QP transitions, events.
 *  - ibcm.c: the IB CM protocol (IBA chapter 12) in MADs on QP1 (mad/):
 *    REQ, MRA, REJ, REP, RTU, DREQ, DREP, SIDR_REQ/SIDR_REP; the state of
 *    each connection (12.9.6), retransmission with the response timeouts,
 *    duplicate detection, TIMEWAIT.
 *  - cm_wire.c: the message formats.
 *
 * One struct cm_id is both the user's rdma_cm_id and its IB CM
 * connection. When the user destroys it (or its process dies) while the
 * connection still needs to say goodbye (DREQ, REJ, TIMEWAIT), the id
 * loses its channel and lingers until the protocol is done.
 *
 * Single-threaded like the rest of the daemon: no locks.
 * Names: cm_ for everything internal; sofd_cm_ for what the daemon calls.
 */
#ifndef CM_H
#define CM_H

#include "sofd.h"

#include "cm_wire.h"
#include "mad.h"
#include "sof_cm_proto.h"

#include <netinet/in.h>
#include <rdma/rdma_cma.h>

/* Timing (RoCE has no SA to ask): the packet lifetime of every path,
 * 4.096 us * 2^14 = 67 ms; how long we allow the peer's CM to answer,
 * 2^17 = 537 ms, and how often a message is sent again before the
 * attempt fails (REQ: UNREACHABLE after about 4 s); how long we ask for
 * with an MRA when the user is slow to answer a REQ, 2^21 = 8.6 s; and
 * TIMEWAIT (IBA 12.9.7). */
#define CM_PKT_LIFE 14
#define CM_RESPONSE_TIMEOUT 17
#define CM_MAX_RETRIES 5
#define CM_MRA_TIMEOUT 21
/* Local ACK timeout of a connected QP whose user set none
 * (RDMA_OPTION_ID_ACK_TIMEOUT): 2^17 x 4.096 us = 537 ms, what Linux's
 * RDMA CM gives a RoCE QP (packet lifetime 16, plus one).
 * With rping's retry_count 7 a peer gone without a word is given up after
 * 4.3 s, time for several tries of its DREQ: a peer that got the last
 * message, whose ACK was lost, and left at once, ends the connection
 * with DISCONNECTED, not with a retry error on the other side. */
#define CM_ACK_TIMEOUT 17
#define CM_TIMEWAIT_NS 1000000000ull
/* RNR NAK timer of connected QPs (IBA 9.7.5.2.8, table 45): 0.64 ms */
#define CM_MIN_RNR_TIMER 12

/* The RDMA CM side of an id (as the kernel's enum rdma_cm_state). */
enum cma_state {
	CMA_IDLE,
	CMA_ADDR_BOUND,
	CMA_ADDR_RESOLVED,
	CMA_ROUTE_RESOLVED,
	CMA_LISTEN,
	CMA_CONNECT,	 /* REQ sent or received, not yet established */
	CMA_ESTABLISHED,
	CMA_DISCONNECT,	 /* DREQ sent or received */
	CMA_NR
};

/* The IB CM side, IBA 12.9.6 figure 150 (and 12.11 for SIDR). */
enum cm_state {
	CM_IDLE,
	CM_REQ_SENT,
	CM_MRA_REQ_RCVD, /* REQ sent, the peer asked for more time */
	CM_REQ_RCVD,
	CM_MRA_REQ_SENT, /* REQ received, we asked for more time */
	CM_REP_SENT,
	CM_REP_RCVD,
	CM_ESTABLISHED,
	CM_DREQ_SENT,
	CM_DREQ_RCVD,
	CM_TIMEWAIT,
	CM_SIDR_REQ_SENT,
	CM_SIDR_REQ_RCVD,
	CM_NR
};

extern const char *const cm_state_names[CM_NR];

struct cm_channel;

struct cm_id {
	struct sofd_link link;	      /* in ch->ids, or cm.lingering */
	struct sofd_link timer_link;  /* in cm.timers while timer_ns is set */
	struct cm_channel *ch;	      /* NULL: destroyed by its user, lingering */
	uint32_t handle;
	uint8_t ps;		      /* enum rdma_port_space */
	uint32_t qp_type;	      /* enum ibv_qp_type */
	enum cma_state cstate;
	enum cm_state state;

	/* addresses: src and dst as the user sees them (port included) */
	struct sockaddr_storage src, dst;
	bool bound;		   /* src holds a port of ours */
	bool reuseaddr, afonly;
	uint8_t tos;
	bool tos_set;
	uint8_t ack_timeout;	   /* RDMA_OPTION_ID_ACK_TIMEOUT, 0: default */
	uint32_t sgid_index;
	uint8_t sgid[16], dgid[16];
	bool have_dev;		   /* sgid is set: the id is on our device */
	bool have_route;
	uint8_t mtu;		   /* enum ibv_mtu of the path */

	/* listening */
	uint32_t backlog, pending; /* connection requests not yet answered */
	struct cm_id *listener;	   /* a child whose request is pending */

	/* the connection (IBA 12.6) */
	uint32_t local_comm_id, remote_comm_id;
	uint64_t remote_ca_guid;
	uint32_t local_qpn, remote_qpn;
	uint32_t local_psn, remote_psn; /* starting PSNs */
	uint8_t responder_resources;   /* ours: max_dest_rd_atomic */
	uint8_t initiator_depth;       /* ours: max_rd_atomic */
	uint8_t retry_count;	       /* RTS retry_cnt */
	uint8_t rnr_retry;	       /* RTS rnr_retry: what the peer said */
	uint8_t local_ack_timeout;
	bool flow_control, srq;
	uint32_t qkey;		       /* UD: ours; SIDR: the peer's */
	uint32_t ece_vendor, ece_options;
	uint32_t remote_ece_vendor, remote_ece_options;
	uint32_t sidr_request_id;

	/* retransmission: the last message that wants an answer */
	uint8_t msg[SOF_MAD_LEN];
	bool msg_valid;
	uint64_t timer_ns;	       /* deadline, 0: none */
	uint64_t timeout_ns;	       /* per try */
	uint32_t retries_left;
	/* the last reply, sent again when the peer repeats itself */
	uint8_t reply[SOF_MAD_LEN];
	bool reply_valid;
	struct sofd_mad_addr peer;     /* where the MADs go */

	struct sofd_link mcs;	       /* joined groups (struct cm_mc) */
};

struct cm_channel {
	struct sofd_conn *c; /* its own connection: events go there */
	uint32_t handle;
	struct sofd_link ids;
	struct sofd_link queue; /* events the socket could not take yet */
	uint32_t queued;
};

struct cm_state_all {
	struct sof_hmap channels; /* handle -> struct cm_channel */
	struct sof_hmap ids;	  /* handle -> struct cm_id */
	struct sof_hmap comm;	  /* local comm ID -> struct cm_id */
	struct sof_hmap sidr;	  /* SIDR request ID -> struct cm_id (active) */
	struct sofd_link lingering;
	struct sofd_link timers;
	struct sofd_pollable timer;
	uint64_t timer_armed_ns;
	int agent; /* MAD agent number */
	uint32_t next_handle;
};

extern struct cm_state_all cm;

/* ---- ids.c ------------------------------------------------------------------ */

/* Queue an event for id's channel (nothing when the id lingers). */
void cm_event(struct cm_id *id, uint32_t event, int status, const struct sof_cm_param *p);
/* CONNECT_REQUEST: child was made for listener. */
void cm_event_conn_req(struct cm_id *listener, struct cm_id *child, const struct sof_cm_param *p);
/* A UD event (SIDR ESTABLISHED, CONNECT_REQUEST of a UD service) is
 * cm_event with the destination filled from id. */
void cm_event_ud(struct cm_id *id, uint32_t event, int status, const struct sof_cm_param *p,
		 uint32_t qpn, uint32_t qkey);
/* The listener of (ps, port) for dst (IPv4-mapped or IPv6 GID bytes),
 * or NULL. */
struct cm_id *cm_find_listener(uint8_t ps, uint16_t port, const uint8_t dst[16]);
/* A new id on listener's channel for a connection request; NULL at the
 * backlog or out of memory. */
struct cm_id *cm_new_child(struct cm_id *listener);
/* Free an id that has nothing more to do (timers off, maps cleaned). */
void cm_free(struct cm_id *id);
/* Timers (ibcm.c uses them): set id's deadline, now + ns; 0 clears. */
void cm_timer_set(struct cm_id *id, uint64_t ns);

/* ---- ibcm.c ------------------------------------------------------------------ */

void cm_mad_recv(const uint8_t *mad, const struct sofd_mad_addr *from);
/* The protocol side of the ops (validated by ids.c). 0 or -errno. */
int cm_send_req(struct cm_id *id, const struct sof_cm_param *p);
int cm_send_rep(struct cm_id *id, const struct sof_cm_param *p);
int cm_send_rtu(struct cm_id *id);
int cm_send_rej(struct cm_id *id, uint16_t reason, const uint8_t *pdata, uint8_t len);
int cm_send_dreq(struct cm_id *id);
int cm_send_sidr_req(struct cm_id *id, const struct sof_cm_param *p);
int cm_send_sidr_rep(struct cm_id *id, uint8_t status, const struct sof_cm_param *p);
/* The id's user is gone (destroy or process death): end the connection
 * the way IBA asks for its state. Returns true when the id must linger
 * (the protocol still needs it), false when it can be freed now. */
bool cm_abandon(struct cm_id *id);
/* id's timer expired. */
void cm_timeout(struct cm_id *id);

#endif
