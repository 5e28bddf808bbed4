/*
 * Inside the RDMA CM id layer (cma_*.c): what librdmacm asks of the
 * daemon (sof_cm_proto.h), as the kernel's rdma_cm/ucma answer it. Its
 * files: at the base cma_id.c (ids, channels, their lifetime),
 * cma_addr.c (addresses, ports, the GID table) and cma_event.c (events to
 * a channel's socket); on them the request handlers by role,
 * cma_resolve.c, cma_listen.c, cma_conn.c, cma_mcast.c; on top
 * cma_upcall.c (what the protocol reports) and cma_ops.c (the host's
 * entry points, cm_host.h).
 */
#ifndef CMA_H
#define CMA_H

#include "ibcm.h"
#include "sa.h"

#define CMA_MAX_BACKLOG 1024
#define CMA_PORT_LO 32768 /* ephemeral ports, as ip_local_port_range */
#define CMA_PORT_HI 60999
#define CMA_HOP_LIMIT 64
#define CMA_MAX_QUEUED 65536 /* events a channel may have waiting */

struct cm_channel {
	struct cm_conn *c; /* its own connection: events go there */
	uint32_t handle;
	struct sof_link ids;
	struct sof_link queue; /* events the socket could not take yet */
	uint32_t queued;
};

/* A multicast group an id joined. */
struct cm_mc {
	struct sof_link link;
	uint8_t mgid[16];
	uint64_t uid;
	/* on the InfiniBand port: the SA join (cma_mcast.c) */
	struct sof_link wait_link; /* in the joins waiting for the SA */
	struct cm_id *id;
	uint32_t tid;		      /* the SA request's TID (low half), 0: none waiting */
	bool joined;		      /* the SA made us a member: a leave is owed */
	uint8_t mcgid[16];	      /* the IB MGID (mgid is the address's GID) */
	uint8_t join_state;	      /* JoinState bits asked (IBA 15.2.5.17.1), left the same */
	bool cpi_wait;		      /* waits for the SA's ClassPortInfo (send-only) */
	bool bcast_wait;	      /* waits for the broadcast group's record */
	struct sof_sa_mcmember bcast; /* that record: the join's parameters */
};

struct cma_table {
	struct sof_hmap channels; /* handle -> struct cm_channel */
	struct sof_hmap ids;	  /* handle -> struct cm_id (not lingering) */
	struct sof_link lingering;
	uint32_t next_handle;
	/* cma_mcast.c's, set by cm_init: forget a group of an id that ends */
	void (*mc_free)(struct cm_mc *mc);
};

extern struct cma_table cma;

/* What a request is answered with (cm_op points rp->data here). */
union cma_reply {
	struct sof_cm_channel_rep channel;
	struct sof_cm_id_rep id;
	struct sof_cm_query_rep query;
	struct sof_cm_qp_attr attr;
	struct sof_cm_ece ece;
};

extern union cma_reply cma_rbuf;

/* The private data a user's request may carry. */
static inline bool cma_param_ok(const struct sof_cm_param *p)
{
	return p->private_data_len <= SOF_CM_PDATA_MAX;
}

/* A request handler: 0 or -errno; a reply of rp->len bytes in cma_rbuf. */
#define CMA_OP(name) int cma_op_##name(const struct cm_request *rq, struct cm_reply *rp)

/* ---- cma_id.c ------------------------------------------------------------------- */

/* Every change of id->cstate goes through here (traced by name). */
void cma_set_state(struct cm_id *id, enum cma_state s);
/* The id or channel of handle if the requester owns it, else NULL. */
struct cm_id *cma_get_id(const struct cm_request *rq, uint32_t handle);
struct cm_channel *cma_get_channel(const struct cm_request *rq, uint32_t handle);
struct cm_id *cma_id_new(struct cm_channel *ch, uint8_t ps, uint32_t qp_type);
/* Free an id that has nothing more to do. */
void cma_free(struct cm_id *id);
/* The user lets go of id: end its protocol, then free it or let it linger. */
void cma_id_destroy(struct cm_id *id);
/* The child of a request answered (accepted or rejected) or dropped:
 * its listener's backlog has room again. */
void cma_child_answered(struct cm_id *id);
CMA_OP(channel);
CMA_OP(create_id);
CMA_OP(destroy_id);
CMA_OP(migrate);
CMA_OP(requeue);

/* ---- cma_addr.c ----------------------------------------------------------------- */

bool cma_family_ok(int f);
/* The GID of an address: IPv4-mapped, IPv6 as is, AF_IB's GID. */
void cma_addr_gid(const struct sockaddr_storage *ss, uint8_t gid[16]);
uint16_t cma_addr_port(const struct sockaddr_storage *ss);
/* The service ID of an address: its own (cm_raw_sid), else A11's of port
 * space ps and the port. */
uint64_t cma_addr_sid(const struct sockaddr_storage *ss, uint8_t ps);
/* Fill ss (of family) from a GID and a port. */
void cma_addr_from_gid(struct sockaddr_storage *ss, int family, const uint8_t gid[16], uint8_t ps,
		       uint16_t port);
bool cma_gid_is_any(const uint8_t g[16]);
bool cma_addr_is_any(const struct sockaddr_storage *ss);
/* 127/8 or ::1 (as IPv4-mapped or IPv6 GID bytes) */
bool cma_gid_is_loopback(const uint8_t g[16]);
/* The kernel's cma_any_addr: the wildcard or a loopback address, which
 * bind, ports and listeners treat alike. */
bool cma_gid_is_wild(const uint8_t g[16]);
bool cma_addr_is_wild(const struct sockaddr_storage *ss);
/* The source GID for a loopback (or wildcard) destination. 0 or -errno. */
int cma_loopback_source(const uint8_t dst[16], uint8_t src[16]);
/* The GID table index of gid, or -1. */
int cma_gid_index(const uint8_t gid[16]);
/* Whether gid is the GID of the InfiniBand port (sofib0), which *port
 * (when not NULL) gets as it is now. */
bool cma_ib_gid(const uint8_t gid[16], struct sof_ib_port *port);
/* The InfiniBand port's GID 0. 0 or -ENODEV. */
int cma_ib_own_gid(uint8_t gid[16]);
/* Whether gid has the InfiniBand port's subnet prefix. */
bool cma_ib_on_subnet(const uint8_t gid[16]);
/* The source address the routing table picks for dst (a GID). 0 or -errno. */
int cma_route_source(const uint8_t dst[16], uint8_t src[16]);
/* Bind id to src (port 0: an ephemeral one). 0 or -errno. */
int cma_bind_port(struct cm_id *id, const struct sockaddr_storage *src);
void cma_fill_query(const struct cm_id *id, struct sof_cm_query_rep *q);

/* ---- cma_ib.c: the route on the InfiniBand port --------------------------------- */

/* Ask the SA for the id's path (ROUTE_RESOLVED or ROUTE_ERROR follow).
 * 0 or -errno (-ENETUNREACH: the port has no SM). */
int cma_ib_resolve_route(struct cm_id *id);
/* The path the user resolved (RDMA_OPTION_IB_PATH). 0 or -errno. */
int cma_ib_path_set(struct cm_id *id, const struct ibv_path_record *p);
/* Send the SA request mad from the port of sgid to its SM; a request that
 * waits (timeout_ms > 0) is reported to cookie's owner if unanswered. */
int cma_ib_sa_send(const uint8_t sgid[16], const uint8_t *mad, uint32_t timeout_ms,
		   uint64_t cookie);
/* Who takes the SA agent's MCMemberRecord answers (cma_mcast.c's, given by
 * cm_init): an answer (record at rec), and a request the SA did not
 * answer (cookie as sent). */
struct cma_sa_ops {
	void (*recv)(const struct sof_mad_hdr *h, const uint8_t *rec);
	void (*failed)(uint64_t cookie, int status);
	void (*cpi_done)(void); /* the SA's ClassPortInfo answered (or not) */
};
void cma_ib_sa_mcmember_ops(const struct cma_sa_ops *ops);
/* The ClassPortInfo:CapabilityMask2 of the SA the port of sgid knows
 * (asked per SM LID, kept CPI_KEEP_NS, as the kernel's ib_sa keeps it
 * per port): 0,
 * or -EAGAIN while the SA is asked (cpi_done follows), -ENETUNREACH with
 * no SM. An SA that did not answer counts as one without capabilities,
 * once: the next call asks again. */
int cma_ib_sa_cap_mask2(const uint8_t sgid[16], uint32_t *cap_mask2);

/* ---- cma_mcast.c ----------------------------------------------------------------- */

/* The joins' SA answers (for cma_ib_sa_mcmember_ops; cookie: the
 * request's TID). */
extern const struct cma_sa_ops cma_mc_sa_ops;
/* Forget a group of its id (leaving it at the SA when joined there). */
void cma_mc_free(struct cm_mc *mc);

/* ---- cma_event.c ---------------------------------------------------------------- */

void cma_event_init(struct sof_cm_event *ev, const struct cm_id *id, uint32_t event, int status,
		    const struct sof_cm_param *p);
/* The address handle of a UD peer (or group) in ev. */
void cma_event_set_ah(struct sof_cm_event *ev, const struct cm_id *id);
void cma_channel_send(struct cm_channel *ch, const struct sof_cm_event *ev);
void cma_channel_flush(struct cm_channel *ch);
void cma_channel_drop_queue(struct cm_channel *ch);
/* Queue an event for id's channel (nothing when the id lingers). */
void cma_event(struct cm_id *id, uint32_t event, int status, const struct sof_cm_param *p);
/* cma_event with the destination filled from id (a UD peer). */
void cma_event_ud(struct cm_id *id, uint32_t event, int status, const struct sof_cm_param *p,
		  uint32_t qpn, uint32_t qkey);
/* CONNECT_REQUEST: child was made for the listener it names. */
void cma_event_conn_req(struct cm_id *child, const struct sof_cm_param *p);

/* ---- cma_resolve.c -------------------------------------------------------------- */

CMA_OP(bind);
CMA_OP(resolve_addr);
CMA_OP(resolve_route);
CMA_OP(query);
CMA_OP(set_option);

/* ---- cma_listen.c --------------------------------------------------------------- */

/* A connection request from the protocol (IBCM_EV_REQ). 0 or -errno. */
int cma_req_arrived(struct ibcm_event *ev);
CMA_OP(listen);
CMA_OP(accept);
CMA_OP(reject);

/* ---- cma_conn.c ----------------------------------------------------------------- */

CMA_OP(connect);
CMA_OP(disconnect);
CMA_OP(establish);
CMA_OP(notify);
CMA_OP(init_qp_attr);
CMA_OP(set_ece);
CMA_OP(get_ece);

/* ---- cma_mcast.c ---------------------------------------------------------------- */

CMA_OP(join);
CMA_OP(leave);

/* ---- cma_upcall.c --------------------------------------------------------------- */

extern const struct ibcm_ops cma_ibcm_ops;

#endif
