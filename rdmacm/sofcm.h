/*
 * Internal objects of softofed's drop-in librdmacm.
 *
 * The device daemon plays the kernel's rdma_cm (common/sof_cm_proto.h):
 * it owns every id's state and speaks the IB CM protocol. This library is
 * the user-space half, as rdma-core's librdmacm is on top of the kernel:
 * it keeps the public objects (struct rdma_cm_id, rdma_event_channel,
 * rdma_cm_event), turns daemon events into rdma_cm_events, and moves the
 * QPs it created through INIT, RTR and RTS with the attributes the daemon
 * gives.
 *
 * Sockets: one command connection per process (cmd.c, one mutex around
 * it), one connection per event channel that only receives events.
 *
 * Locks, outermost first:
 *   sofcm_lock       the id map, the device, every id's channel pointer
 *   channel->lock    the channel's backlog
 *   id->lock         event counts and multicast list of one id
 * The command connection's mutex is taken alone (never while waiting for
 * an event).
 *
 * Names: sofcm_ for everything internal to this library.
 */
#ifndef SOFCM_H
#define SOFCM_H

#include <errno.h>
#include <infiniband/verbs.h>
#include <pthread.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "sof_cm_proto.h"

/* softofed's libibverbs (SOFTOFED_PRIVATE): the ACKs its engine's
 * pollers hold leave now; the engine's progress thread takes the sockets
 * over at once (a thread is about to sleep in poll(2)). */
void sofv_engine_flush(void);
void sofv_engine_idle(void);

#define SOFCM_EXPORT __attribute__((visibility("default")))

/* rdma_* return -1 with errno set. */
static inline int sofcm_err(int err)
{
	errno = err;
	return -1;
}

/* A negative errno from inside the library as the ABI wants it. */
static inline int sofcm_ret(int ret) { return ret < 0 ? sofcm_err(-ret) : 0; }

/* ---- the device (device.c) ------------------------------------------------- */

/* A device (sof0, or sofib0 for an id on the InfiniBand port): its verbs context stays open for the
 * life of the process, its PD lives while some id or device list refers to it. */
struct sofcm_device {
	struct ibv_context *verbs;
	struct ibv_pd *pd;
	int refcnt;
	int max_qp_wr;
	uint8_t max_init_depth;
	uint8_t max_resp_res;
};

/* Open the device when not open yet. 0 or -errno. */
int sofcm_device_open(void);
/* A reference on the device (opened on demand), its PD allocated. Returns
 * the device or NULL with errno set. */
struct sofcm_device *sofcm_device_get(bool ib);
void sofcm_device_put(struct sofcm_device *dev);
/* Whether the local IP address a is on an IPoIB interface (resolve.c);
 * *pkey its P_Key then (0: unknown, the default). */
bool sofcm_ipoib_addr(const struct sockaddr *a, uint16_t *pkey);

/* ---- the command connection (cmd.c) --------------------------------------- */

/* One request on the process's command connection. 0 or -errno. */
int sofcm_rpc(uint32_t op, const void *req, size_t reqlen, void *rep, size_t replen);
/* The ops that name one id and one number (struct sof_cm_id_req). */
int sofcm_rpc_id(uint32_t op, uint32_t handle, uint32_t arg, void *rep, size_t replen);

/* ---- channels and events (channel.c, event.c) ------------------------------- */

struct sofcm_pending {
	struct sofcm_pending *next;
	struct sof_cm_event ev;
};

struct sofcm_channel {
	struct rdma_event_channel ch; /* ch.fd: the channel's own connection */
	uint32_t handle;	      /* the daemon's number for it */
	pthread_mutex_t lock;
	/* Events read on another channel for an id that migrated here. */
	struct sofcm_pending *backlog, *backlog_tail;
	/* threads in rdma_get_cm_event, and whether the channel was
	 * destroyed under them (channel.c) */
	_Atomic int readers;
	_Atomic bool destroyed;
};

static inline struct sofcm_channel *sofcm_chan(struct rdma_event_channel *ch)
{
	return (struct sofcm_channel *)ch;
}

struct sofcm_id;

struct sofcm_mc {
	struct sofcm_mc *next;
	struct sofcm_id *idp;
	void *context;
	uint64_t uid; /* echoed by the daemon in MULTICAST_* events */
	uint32_t join_flags;
	unsigned int given, acked; /* events handed to the user, acked */
	bool attached;
	union ibv_gid mgid;
	uint16_t mlid;
	struct sockaddr_storage addr;
	socklen_t addrlen;
	pthread_cond_t cond;
};

struct sofcm_id {
	struct rdma_cm_id id;
	uint32_t handle;	  /* the daemon's number */
	bool sync;		  /* created with no channel: a private one */
	struct sofcm_device *dev; /* NULL until bound to the device */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned int given, acked; /* events handed to the user, acked */
	struct sofcm_mc *mc_list;
	struct ibv_qp_init_attr *qp_init_attr; /* rdma_create_ep, passive */
	uint8_t initiator_depth;
	uint8_t responder_resources;
	bool connect_error; /* the REP could not be completed */
	struct ibv_ece local_ece, remote_ece;
	void *connect; /* private data to prepend (rdma_create_ep) */
	size_t connect_len;
};

static inline struct sofcm_id *sofcm_id(struct rdma_cm_id *id) { return (struct sofcm_id *)id; }

struct sofcm_event {
	struct rdma_cm_event event;
	struct sofcm_id *idp; /* the id whose count the event is on */
	struct sofcm_mc *mc;
	uint8_t private_data[SOF_CM_PDATA_MAX];
};

/* queue.c: the lock, and a channel's backlog. */
extern pthread_mutex_t sofcm_lock;
/* Queue an event for a reader of chan. Needs sofcm_lock. */
void sofcm_channel_push(struct sofcm_channel *chan, const struct sof_cm_event *ev);
/* Take the oldest event of chan's backlog: false when it is empty. */
bool sofcm_channel_pop(struct sofcm_channel *chan, struct sof_cm_event *ev);

/* A new channel: its connection, SOF_OP_CM_CHANNEL. NULL with errno. */
struct sofcm_channel *sofcm_channel_create(void);
void sofcm_channel_destroy(struct sofcm_channel *chan);
/* The next record of chan (its backlog first, then its socket). 0 or
 * -errno (-EAGAIN: non-blocking and nothing there; -ENODEV: the daemon
 * is gone). A reader of a channel destroyed meanwhile waits for ever, or
 * gets -EAGAIN when the fd is non-blocking, as on rdma-core's file. */
int sofcm_channel_next(struct sofcm_channel *chan, struct sof_cm_event *ev);
/* A daemon event read on chan as the user sees it (event.c): fills the
 * zeroed evt and returns true, or false when the library keeps the event
 * for itself or drops it. */
bool sofcm_event_process(struct sofcm_channel *chan, const struct sof_cm_event *ev,
			 struct sofcm_event *evt);

/* The id of a daemon handle. Needs sofcm_lock. */
struct sofcm_id *sofcm_id_lookup(uint32_t handle);
/* Add or remove an id in the map (they take sofcm_lock). */
int sofcm_id_insert(struct sofcm_id *idp);
void sofcm_id_remove(struct sofcm_id *idp);
/* A new library id (no daemon request): on channel, or a private channel
 * when channel is NULL. NULL with errno set. */
struct sofcm_id *sofcm_id_alloc(struct rdma_event_channel *channel, void *context,
				enum rdma_port_space ps, enum ibv_qp_type qp_type);
void sofcm_id_free(struct sofcm_id *idp);
/* rdma_create_id with the QP type given (rdma_create_ep). -1/errno. */
int sofcm_create_id2(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context,
		     enum rdma_port_space ps, enum ibv_qp_type qp_type);
/* Count an event handed to the user / acked (id->lock inside). */
void sofcm_id_charge(struct sofcm_id *idp, struct sofcm_mc *mc);
void sofcm_id_complete(struct sofcm_id *idp, struct sofcm_mc *mc);

/* What the daemon says the id looks like (QUERY, BIND_ADDR, ...): its
 * addresses, GIDs, device and path. 0 or -errno. */
int sofcm_apply_query(struct sofcm_id *idp, const struct sof_cm_query_rep *q);
int sofcm_query(struct sofcm_id *idp);

/* Synchronous ids: wait for the next event of the id's private channel
 * (kept in id->event); its failure as -1/errno (event.c). */
int sofcm_complete(struct sofcm_id *idp);

/* QP transitions (qp.c): 0 or -errno; nothing to do without a QP. */
int sofcm_qp_rtr(struct sofcm_id *idp, uint8_t resp_res);
int sofcm_qp_rts(struct sofcm_id *idp, uint8_t init_depth);
int sofcm_qp_err(struct sofcm_id *idp);
/* The conversion of rdma_init_qp_attr. 0 or -errno. */
int sofcm_init_qp_attr(struct sofcm_id *idp, struct ibv_qp_attr *attr, int *mask);

/* What the id's REQ or REP will carry as ECE (SOF_OP_CM_SET_ECE). */
int sofcm_set_ece(struct sofcm_id *idp, uint32_t vendor_id, uint32_t options);

/* Address length by family (AF_INET, AF_INET6, AF_IB), 0 if none. */
socklen_t sofcm_addrlen(const struct sockaddr *addr);

#endif
