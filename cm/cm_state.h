/*
 * The two state machines of a connection manager id, each enum with its
 * table of names beside it (SOFTOFED_TRACE prints transitions by name):
 * the RDMA CM side (as the kernel's enum rdma_cm_state), which the id
 * layer (cma_*.c) moves, and the IB CM side (IBA 12.9.6 figure 150, 12.11
 * for SIDR), which the protocol (ibcm_*.c) moves.
 *
 * A neutral header: both layers include it, it includes nothing of cm/.
 */
#ifndef CM_STATE_H
#define CM_STATE_H

/* The RDMA CM side of an id. */
enum cma_state {
	CMA_IDLE,
	CMA_ADDR_BOUND,
	CMA_ADDR_RESOLVED,
	CMA_ROUTE_RESOLVED,
	CMA_LISTEN,
	CMA_CONNECT, /* REQ sent or received, not yet established */
	CMA_ESTABLISHED,
	CMA_DISCONNECT, /* DREQ sent or received */
	CMA_NR
};

static inline const char *cma_state_name(enum cma_state s)
{
	static const char *const names[CMA_NR] = {
	    [CMA_IDLE] = "IDLE",
	    [CMA_ADDR_BOUND] = "ADDR_BOUND",
	    [CMA_ADDR_RESOLVED] = "ADDR_RESOLVED",
	    [CMA_ROUTE_RESOLVED] = "ROUTE_RESOLVED",
	    [CMA_LISTEN] = "LISTEN",
	    [CMA_CONNECT] = "CONNECT",
	    [CMA_ESTABLISHED] = "ESTABLISHED",
	    [CMA_DISCONNECT] = "DISCONNECT",
	};

	return (unsigned)s < CMA_NR ? names[s] : "?";
}

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

static inline const char *cm_state_name(enum cm_state s)
{
	static const char *const names[CM_NR] = {
	    [CM_IDLE] = "IDLE",
	    [CM_REQ_SENT] = "REQ_SENT",
	    [CM_MRA_REQ_RCVD] = "MRA_REQ_RCVD",
	    [CM_REQ_RCVD] = "REQ_RCVD",
	    [CM_MRA_REQ_SENT] = "MRA_REQ_SENT",
	    [CM_REP_SENT] = "REP_SENT",
	    [CM_REP_RCVD] = "REP_RCVD",
	    [CM_ESTABLISHED] = "ESTABLISHED",
	    [CM_DREQ_SENT] = "DREQ_SENT",
	    [CM_DREQ_RCVD] = "DREQ_RCVD",
	    [CM_TIMEWAIT] = "TIMEWAIT",
	    [CM_SIDR_REQ_SENT] = "SIDR_REQ_SENT",
	    [CM_SIDR_REQ_RCVD] = "SIDR_REQ_RCVD",
	};

	return (unsigned)s < CM_NR ? names[s] : "?";
}

#endif
