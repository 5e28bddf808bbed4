/*
 * Internals of softofedd, the device daemon (the software HCA).
 *
 * The daemon is single-threaded: one epoll loop (main.c) accepts library
 * connections and reads their requests (conn.c), one handler per protocol
 * op (ops.c) validates each untrusted request against the registry of
 * objects (registry.c) and answers; device.c owns the device identity.
 * Because there is one thread, nothing here takes a lock.
 *
 * Names: sofd_ for everything internal to the daemon.
 */
#ifndef SOFD_H
#define SOFD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cm_host.h"
#include "sof_hmap.h"
#include "sof_list.h"
#include "sof_proto.h"
#include "sof_shm.h"
#include "sof_util.h"
#include "tp.h"

#define SOFD_PAGE 4096ull
#define SOFD_MAX_MR_LEN (1ull << 40) /* SOFV_MAX_MR_SIZE of the library */
#define SOFD_MAX_RQ 32768u	     /* ring entries: 2 * max_qp_wr */
#define SOFD_MAX_SGE 32u
#define SOFD_MAX_SQ 16384u    /* network send queue entries: max_qp_wr */
#define SOFD_MAX_INLINE 1024u /* SOFV_MAX_INLINE of the library */

/* Objects one connection may hold (the device limits the library reports);
 * beyond them creation fails with -ENOMEM, as on hardware. */
#define SOFD_CONN_MAX_PD 65536u
#define SOFD_CONN_MAX_MR 65536u
#define SOFD_CONN_MAX_CQ 65536u
#define SOFD_CONN_MAX_SRQ 16384u
#define SOFD_CONN_MAX_QP 65536u
#define SOFD_CONN_MAX_XRCD 4096u /* XRCD handles (each may hold a file open) */

struct sofd_counts {
	uint32_t contexts, pds, mrs, cqs, srqs, qps, mws;
	uint32_t xrcds; /* XRCD handles (ops_xrc.c) */
	uint32_t flows; /* ibv_create_flow rules (raw.c) */
	/* daemon-wide: MAD layer (multicast groups: tp_mcast_groups, the
	 * connection manager's: cm_counts) */
	uint32_t mads;
};

/* ---- connections ---------------------------------------------------------- */

/* What an epoll event's data.ptr points at: the first member of each. */
enum sofd_pollkind {
	SOFD_POLL_LISTEN,
	SOFD_POLL_SIGNAL,
	SOFD_POLL_CONN,
	SOFD_POLL_NETLINK,  /* address and link changes (device.c) */
	SOFD_POLL_DOORBELL, /* a connection's doorbell eventfd (transport) */
	SOFD_POLL_NET,	    /* a RoCEv2 UDP socket (transport), IPv4 */
	SOFD_POLL_NET6,	    /* the same, IPv6 */
	SOFD_POLL_TIMER,    /* the transport's timerfd */
	SOFD_POLL_CM_TIMER, /* the connection manager's timerfd (cm/) */
	SOFD_POLL_RAW,	    /* the packet socket of flow steering (raw.c) */
	SOFD_POLL_IB,	    /* the InfiniBand port's link socket (ib.c) */
	SOFD_POLL_IB_TIMER, /* its half-second tick (ib.c) */
};

struct sofd_pollable {
	enum sofd_pollkind kind;
	int fd;
};

/* A connection's doorbell: the eventfd its owner writes after posting to
 * a network send queue, as a pollable of its own, so that the transport
 * looks only at that connection's QPs. When the connection closes, c
 * becomes NULL and the doorbell lives on until the end of the epoll batch
 * (an event of it may still be in the batch): sofd_reap frees it. */
struct sofd_doorbell {
	struct sofd_pollable p; /* SOFD_POLL_DOORBELL, p.fd the eventfd */
	struct sofd_conn *c;
	struct sofd_doorbell *next_dead;
};

/* One library connection = one device context once it said HELLO. */
struct sofd_conn {
	struct sofd_pollable p; /* p.fd: the control socket */
	uint32_t id;		/* connection number, for logs */
	uint32_t ctx_id;	/* 0 until HELLO */
	int async_fd;		/* daemon's end of the event socket, or -1 */
	pid_t pid;		/* SO_PEERCRED at accept */
	uid_t uid;
	gid_t gid;
	bool dead;		  /* closing: stop reading requests */
	int db_fd;		  /* doorbell eventfd (-1 until the first QP) */
	struct sofd_doorbell *db; /* its pollable, or NULL */
	struct sofd_counts n;	  /* objects it holds */
	struct cm_conn cm;	  /* cm/'s part: the rdma_cm event channel it is */
	struct sofd_umad *umad;	  /* ops_umad.c: the MAD port it opened, or NULL */
	uint32_t net_slot;	  /* steering slot of NET_ENGINE, 0: none */
	/* its process's /proc/self/mem and fence page, handed over with its
	 * first region in place (REG_MR), or -1 / NULL */
	int pmem_fd, fence_fd;
	struct sof_mem_fence *fence;
	/* registration without a round trip (ops_mr.c, SOF_OP_MR_KEYS): the
	 * region table its library writes, or NULL; the keys reserved for it
	 * (those still in sofd.mr_rsv under it are neither taken nor dropped) */
	struct sof_mr_rec *mr_tab;
	uint32_t *rsv;
	uint32_t nrsv, rsv_cap;
	struct sof_link pds, mrs, cqs, srqs, qps, mws;
	struct sof_link link; /* in sofd.conns */
	/* ibv_import_device (ops_import.c): an importer's connection acts as
	 * the connection whose command socket it was given (alias; orphan once
	 * that one closed); a nonce the shared socket announced, not yet
	 * claimed. */
	struct sofd_conn *alias;
	bool orphan;
	bool import_armed;
	uint8_t import_nonce[16];
};

/* ---- objects ---------------------------------------------------------------- */

struct sofd_pd {
	struct sof_link link; /* in owner->pds */
	struct sofd_conn *owner;
	uint32_t handle;
	uint32_t users; /* MRs, QPs and SRQs in this PD */
};

struct sofd_mr {
	struct sof_link link;
	struct sofd_conn *owner;
	/* The connection of the process whose address space holds the
	 * region: the owner's, or an importer's (ibv_import_device) when the
	 * importer registered it on the shared context. */
	struct sofd_conn *mem;
	struct sofd_pd *pd;
	uint32_t key; /* lkey == rkey */
	uint32_t access;
	uint32_t slot;
	uint32_t nruns;
	uint64_t gen;
	uint64_t iova, addr, length, page_off;
	struct sof_mr_run runs[SOF_MAX_MR_RUNS];
	int fds[SOF_MAX_MR_RUNS];
	/* In place: the pages stay in the process of mem, reached through its
	 * connection's pmem_fd (only processes of the owner's user get it,
	 * OPEN_MR) until SHARE_MR gives the region runs. */
	bool inplace;
	bool stays; /* in place for good: its owner will not move it */
	/* The transport's mapping of the region (transport/mr.c), made on
	 * first use: base is the byte at iova. */
	void *map;
	size_t map_len;
	uint8_t *base;
	bool map_rw;
};

/* A memory window (IBA 10.6.7): a key of its own onto a range of a region,
 * with access of its own. Type 1 is bound by ibv_bind_mw, type 2 (2B) by a
 * bind WQE and then only usable through the QP that bound it. Its slot's
 * generation changes at every bind, invalidation and release, so every
 * executor's mapping of the old binding stops being used. */
struct sofd_mw {
	struct sof_link link; /* in owner->mws */
	struct sofd_conn *owner;
	struct sofd_pd *pd;
	uint32_t handle;
	uint32_t key;  /* index << 8 | the 8-bit key the consumer chose */
	uint32_t type; /* IBV_MW_TYPE_1 or IBV_MW_TYPE_2 */
	uint32_t slot;
	uint64_t gen;
	/* the binding; mr NULL: not bound (invalid) */
	struct sofd_mr *mr;
	uint64_t va, length, off; /* off: va's byte from mr->iova */
	uint32_t access;
	uint32_t qpn; /* type 2: the QP it is bound to */
};

/* What a remote key names (sofd_key_resolve): a region or a bound window,
 * as the range, access and PD that a remote access must fit. */
struct sofd_key_view {
	struct sofd_mr *mr;
	struct sofd_pd *pd;
	uint64_t iova, length, off; /* iova: the first byte, at mr->iova + off */
	uint32_t access;
	uint32_t qpn; /* 0: any QP of the PD */
	uint32_t slot;
	uint64_t gen;
};

struct sofd_cq {
	struct sof_link link;
	struct sofd_conn *owner;
	uint32_t handle;
	uint32_t cqe;
	uint32_t users; /* QPs using it as send or recv CQ */
	int memfd;
	int evfd;		/* completion channel eventfd, or -1 */
	struct sof_cq_shm *shm; /* the whole segment (SOF_CQ_SEG_SIZE), RW */
	struct tp_cq tcq;	/* the transport's view: shm and evfd */
};

/* XRC (ops_xrc.c): a domain, shared by the processes that open the same
 * file, and a connection's handle on it (one per ibv_open_xrcd). */
struct sofd_xrcd {
	uint32_t refs; /* handles, SRQs and TGT QPs */
	int fd;	       /* the file (kept: its inode is the key), or -1 */
	uint64_t dev, ino;
	struct sofd_xrcd *next; /* in the list of shared domains */
};

struct sofd_xrcd_h {
	struct sofd_conn *owner;
	uint32_t handle;
	uint32_t users; /* SRQs and TGT QPs made or opened through it */
	struct sofd_xrcd *d;
};

/* An ibv_open_qp of an XRC TGT QP by another handle than its creator's. */
struct sofd_xopen {
	struct sofd_conn *c;
	struct sofd_xrcd_h *xh;
};

struct sofd_srq {
	struct sof_link link;
	struct sofd_conn *owner;
	struct sofd_pd *pd;
	struct sofd_xrcd_h *xh; /* XRC SRQ: the handle it was made through */
	struct sofd_cq *cq;	/* XRC SRQ: where its receives complete */
	uint32_t srqn;		/* XRC SRQ: its number (24 bits) */
	uint32_t handle;
	uint32_t size, max_sge;
	uint32_t slot;
	uint32_t users; /* QPs attached */
	uint64_t gen;
	int memfd;
	struct sof_srq_shm *shm; /* the whole segment, RW */
	size_t shm_len;
	struct tp_srq tsrq; /* the transport's view */
};

struct sofd_qp {
	struct sof_link link;
	struct sofd_conn *owner;
	struct sofd_pd *pd;
	struct sofd_cq *send_cq, *recv_cq;
	struct sofd_srq *srq; /* or NULL */
	/* XRC TGT QP (no PD, no CQs): the handle of its owner and the other
	 * handles that opened it (ibv_open_qp) */
	struct sofd_xrcd_h *xh;
	struct sofd_srq *xrc_cur;	 /* the SRQ of the XRC request in hand (transport) */
	struct sof_modify_qp_req *xattr; /* its attributes as last modified (TGT) */
	struct sofd_xopen *xopens;
	uint32_t nxopens, xopens_cap;
	uint32_t qpn;
	uint32_t type; /* IBV_QPT_RC, _UC, _UD, _XRC_SEND, _XRC_RECV or _RAW_PACKET */
	uint32_t rq_size, rq_max_sge;
	uint32_t sq_sig_all;
	uint32_t state; /* as last reported by MODIFY_QP */
	uint32_t dest_qpn, qkey;
	uint32_t slot;
	uint64_t gen;
	int memfd;
	struct sof_qp_shm *shm; /* the whole segment (header, receive ring), RW */
	size_t shm_len;
	/* network send queue (owner and daemon only) */
	struct sof_nsq_shm *nsq;
	size_t nsq_len;
	uint32_t sq_size, sq_max_sge, sq_max_inline, sq_stride;
	/* the transport's view (transport/tp.h): copies of the fields
	 * above, its state (tq.t), tq.dying (its connection is being
	 * released), tq.nmcast (multicast groups it is attached to) */
	struct tp_qp tq;
	bool net;	    /* RC/UC whose peer is on another host */
	bool steered;	    /* its packets go to its owner's slot, which runs its transport */
	uint8_t dgid[16];   /* RC/UC: its peer, from the last MODIFY_QP with a path */
	uint32_t nflows;    /* RAW_PACKET: its flows (raw.c) */
	uint64_t raw_stamp; /* raw.c: the last frame delivered to it */
};

/* ---- the daemon's global state ---------------------------------------------- */

struct sofd {
	bool foreground;
	bool stop; /* leave the loop after this batch */
	uid_t uid; /* the daemon's own uid (SHUTDOWN) */
	uint64_t start_ns;
	int epfd;
	struct sofd_pollable listen;
	struct sofd_pollable sig;
	/* address and link changes (device.c); fd -1 when not followed */
	struct sofd_pollable netlink;
	struct sofd_pollable doorbell;	/* every connection's doorbell at once (fd -1) */
	struct sofd_doorbell *dead_dbs; /* of connections closed in this batch */
	int spare_fd;			/* reserved fd to shed connections at EMFILE */
	struct sof_link conns;
	uint32_t next_conn_id, next_ctx_id, next_handle;
	struct sofd_counts n;
	struct sof_devinfo dev;
	uint64_t counters[SOF_CNT_NR]; /* network transport, sof_proto.h */
	uint64_t drops[SOF_DROP_NR];

	/* registry */
	struct sof_hmap pds;	/* handle -> struct sofd_pd */
	struct sof_hmap mrs;	/* key    -> struct sofd_mr */
	struct sof_hmap mr_rsv; /* key  -> struct sofd_conn: reserved (MR_KEYS), not taken */
	struct sof_hmap mws;	/* key >> 8 -> struct sofd_mw */
	struct sof_hmap cqs;	/* handle -> struct sofd_cq */
	struct sof_hmap srqs;	/* handle -> struct sofd_srq */
	struct sof_hmap qps;	/* qpn    -> struct sofd_qp */

	/* object table */
	int objtab_fd;	  /* RW memfd */
	int objtab_ro_fd; /* read-only description handed to clients */
	_Atomic uint64_t *objtab;
	uint32_t *free_slots; /* stack of released slots */
	uint32_t nfree, free_cap;
	uint32_t next_slot; /* slots below it have been used */
};

extern struct sofd sofd;

/* ---- main.c ------------------------------------------------------------------ */

void sofd_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- device.c --------------------------------------------------------------- */

/* Serve the interfaces of a comma-separated list (option -i; repeatable);
 * without it every interface with an address is served. Prints what is
 * wrong to stderr. 0 or -errno (-ENODEV: no such interface). */
int sofd_device_select(const char *list);
/* Fill sofd.dev: name, GUIDs, attributes and the GID table, and open
 * sofd.netlink to follow address changes. 0 or -errno. */
int sofd_device_init(void);
/* Rebuild the GID table from the current addresses of the served
 * interfaces, keeping the index of every entry that stays. On a change the
 * table is published and every context gets IBV_EVENT_GID_CHANGE. Returns
 * whether it changed. */
bool sofd_device_refresh_gids(void);
/* Write sofd.dev's GID table into the shared page of the object table. */
void sofd_device_publish_gids(void);
/* sofd.netlink is readable: take the notifications, refresh if needed. */
void sofd_device_netlink_event(void);
/* Whether gid is one of this host's GIDs. */
bool sofd_gid_local(const uint8_t gid[16]);
/* The interfaces served, for NETDEVS. */
void sofd_device_netdevs(struct sof_netdevs_rep *r);

/* ---- raw.c: raw packet QPs and flow steering ----------------------------------- */

struct sofd_req;
struct sofd_rep;

/* Whether the process of c holds CAP_NET_RAW (in the daemon's user
 * namespace): RAW_PACKET QPs are its alone. */
bool sofd_raw_permitted(const struct sofd_conn *c);
/* CREATE_FLOW and DESTROY_FLOW. 0 or -errno. */
int sofd_raw_create_flow(struct sofd_req *rq, struct sofd_rep *rp);
int sofd_raw_destroy_flow(struct sofd_req *rq, struct sofd_rep *rp);
/* The flows of qp go (it is being destroyed). */
void sofd_raw_qp_release(struct sofd_qp *qp);
/* The packet socket is readable: match and deliver its frames. */
void sofd_raw_event(void);
/* A raw packet QP's frame onto the port. 0 or -errno. */
int sofd_raw_xmit(const uint8_t *frame, uint32_t len);

/* ---- ib.c: the InfiniBand port (device sofib0) ------------------------------- */

/* A daemon option (--ib-fabric ADDR:PORT, --ib-node NAME, --ib-port PORT);
 * opt without the dashes. 0, or -EINVAL with a message on stderr. */
int sofd_ib_option(const char *opt, const char *val);
/* Start the port when --ib-fabric was given; its pollables into epfd. */
int sofd_ib_init(int epfd);
/* SOFD_POLL_IB or SOFD_POLL_IB_TIMER is readable. */
void sofd_ib_event(struct sofd_pollable *p);
/* What waits in the port's link socket, read now (sof_tp_modify_qp). */
void sofd_ib_rx_now(void);
/* BYE on the link (the daemon exits). */
void sofd_ib_fini(void);
/* Whether the daemon has the port. */
bool sofd_ib_present(void);
/* IB_STATUS: the port and its counters. */
int sofd_ib_status(struct sofd_req *rq, struct sofd_rep *rp);
/* ib_sma.c: the SMA of the port (QP0), its node model named desc; the
 * model follows the port after a change (sync); its SMP counts. */
int sofd_ib_sma_init(const char *desc);
void sofd_ib_sma_sync(void);
/* A port event of sofib0 (IBV_EVENT_*) to every context (ib.c) */
void sofd_ib_port_event(uint32_t type);
void sofd_ib_sma_counts(uint64_t *smps, uint64_t *replies);
void sofd_ib_sma_traps(uint64_t *sent, uint64_t *repressed, uint64_t *pmas);
void sofd_ib_sma_fini(void);
/* IsSM: whether a process holds sofib0's issm open (looked at now, as
 * before every SMP to the port); the tick that looks too */
bool sofd_ib_is_sm(void);
void sofd_ib_sma_tick(void);

/* ---- conn.c ------------------------------------------------------------------ */

/* Accept every pending connection on the listening socket. */
void sofd_accept(void);
/* Handle readiness of a connection (requests, hang-up). */
void sofd_conn_event(struct sofd_conn *c, uint32_t events);
/* Release a connection and everything it owned. */
void sofd_conn_close(struct sofd_conn *c, const char *why);
/* Free what closed connections left for the end of the epoll batch. */
void sofd_reap(void);

/* ---- ops.c ------------------------------------------------------------------- */

/* A request as received: the op payload after struct sof_msg, and the
 * descriptors that came with it. A handler that keeps a descriptor sets its
 * entry to -1; the rest are closed by the caller. */
struct sofd_req {
	struct sofd_conn *c;   /* whose objects: an importer's alias, else via */
	struct sofd_conn *via; /* the connection the request came on */
	uint32_t op;
	const void *data;
	size_t len;
	int *fds;
	int nfds;
};

/* What a handler answers: payload bytes and descriptors to send. Descriptors
 * marked in close_fds are the daemon's temporary copies, closed after
 * sending. */
struct sofd_rep {
	void *data;
	size_t len;
	int fds[SOF_MAX_FDS];
	bool close_fds[SOF_MAX_FDS];
	int nfds;
};

/* Hand fd over with the reply; temporary: closed once it is sent. */
static inline void sofd_rep_fd(struct sofd_rep *rp, int fd, bool temporary)
{
	rp->fds[rp->nfds] = fd;
	rp->close_fds[rp->nfds] = temporary;
	rp->nfds++;
}

/* A context's event socket and read-only object table, as HELLO (and
 * IMPORT) hand them out: our end of the socket in *ours (non-blocking,
 * never read), the reply h (ctx_id 0: the caller's to set) with the other
 * end and the table. 0 or -errno, with nothing left open. */
int sofd_hello_answer(struct sofd_rep *rp, struct sof_hello_rep *h, int *ours);

/* Run the handler of req->op. Returns 0 or -errno (the reply status). */
int sofd_dispatch(struct sofd_req *req, struct sofd_rep *rep);

/* ops_mr.c: REG_MR and REREG_MR (the region keeps its key). 0 or -errno. */
#define SOF_REG_MR_MIN offsetof(struct sof_reg_mr_req, runs)
int sofd_reg_mr(struct sofd_req *rq, struct sof_reg_mr_rep *rep);
/* ops_import.c: ibv_import_device and the look-ups of ibv_import_pd/_mr */
void sofd_import_bind(struct sofd_conn *c, const void *data, size_t len);
int sofd_import(struct sofd_req *rq, struct sofd_rep *rp);
int sofd_query_pd(struct sofd_req *rq, struct sofd_rep *rp);
int sofd_query_mr(struct sofd_req *rq, struct sofd_rep *rp);
void sofd_import_conn_closed(struct sofd_conn *c);
int sofd_rereg_mr(struct sofd_req *rq, struct sof_reg_mr_rep *rep);
int sofd_share_mr(struct sofd_req *rq);
/* MR_KEYS: keys reserved for the connection, its region table the first
 * time (struct sof_mr_rec). 0 or -errno. */
int sofd_mr_keys(struct sofd_req *rq, struct sof_mr_keys_rep *rep);
/* The region of key: the daemon's record, else the connection's POSTED
 * record of that reserved key, taken now. NULL: none. */
struct sofd_mr *sofd_mr_get(uint32_t key);
/* Take every record c posted in PD handle pd (they are its users). */
void sofd_mr_take_pd(struct sofd_conn *c, uint32_t pd);
/* The connection goes: its reserved keys and its table. */
void sofd_mr_keys_release(struct sofd_conn *c);
/* Ask a region's owner to move it onto memfds (its fence page). */
void sofd_mem_ask_move(const struct sofd_mr *mr);

/* ops_xrc.c: XRC domains, SRQs and TGT QPs (sof_proto.h). */
int sofd_open_xrcd(struct sofd_req *rq, struct sofd_rep *rp);
int sofd_close_xrcd(struct sofd_req *rq, struct sofd_rep *rp);
int sofd_open_xrc_qp(struct sofd_req *rq, struct sofd_rep *rp);
/* CREATE_SRQ of an XRC SRQ: check and take the handle and CQ, number it.
 * 0 or -errno; sofd_xrc_srq_release undoes it. */
int sofd_xrc_srq_init(struct sofd_conn *c, struct sofd_srq *srq, uint32_t xrcd, uint32_t cq);
void sofd_xrc_srq_release(struct sofd_srq *srq);
/* CREATE_QP of a TGT QP: the handle of c named xrcd, or NULL. */
struct sofd_xrcd_h *sofd_xrc_handle(struct sofd_conn *c, uint32_t xrcd);
/* A QP c may modify: its own, or a TGT QP c opened. */
struct sofd_qp *sofd_xrc_qp_of(struct sofd_conn *c, uint32_t qpn);
/* DESTROY_QP by c of a TGT QP it opened (not created): drop the handle.
 * 0 or -ENOENT. */
int sofd_xrc_qp_close(struct sofd_conn *c, uint32_t qpn);
/* The owner's handle on TGT QP qp goes (destroy or death): when another
 * handle holds it, it becomes the owner and true is returned (the QP
 * stays); else false (the caller releases it). */
bool sofd_xrc_qp_handover(struct sofd_qp *qp);
/* MODIFY_QP of a TGT QP by any of its handles: *out is the QP's last
 * attributes with those req's attr_mask sets (RESET: req's). 0 or
 * -ENOMEM. */
int sofd_xrc_modify_merge(struct sofd_qp *qp, const struct sof_modify_qp_req *req,
			  struct sof_modify_qp_req *out);
/* The TGT QP goes: its handles and its hold on the domain. */
void sofd_xrc_qp_release(struct sofd_qp *qp);
/* OPEN_QP of an XRC TGT QP by c (the executor): the SRQ named by
 * req->xrc_srqn (sof_proto.h). */
int sofd_xrc_open_tgt(struct sofd_conn *c, struct sofd_qp *qp, const struct sof_open_qp_req *req,
		      struct sofd_rep *rp, struct sof_open_qp_rep *r);
/* The transport's XRC request to TGT QP qp names srqn: that XRC SRQ when
 * it is of qp's domain, else NULL. */
struct sofd_srq *sofd_xrc_srq_find(const struct sofd_qp *qp, uint32_t srqn);
/* OPEN_MR's check for the XRC uses: 0 or -EACCES. */
int sofd_xrc_mr_check(const struct sofd_mr *mr, const struct sofd_pd *pd, uint32_t srqn,
		      uint32_t use);
/* c closes: its handles on TGT QPs of others (before its QPs go), then its
 * XRCD handles (after its SRQs and QPs went). */
void sofd_xrc_conn_release_opens(struct sofd_conn *c);
void sofd_xrc_conn_release(struct sofd_conn *c);

/* ops_mw.c: memory windows. The ops, 0 or -errno; */
int sofd_op_alloc_mw(struct sofd_req *rq, struct sofd_rep *rp);
/* ops_srq.c: RESIZE_SRQ (sof_proto.h); 0 or -errno */
int sofd_op_resize_srq(struct sofd_req *rq, struct sofd_rep *rp);

/* ---- ops_exec.c: what same-host executors ask ---------------------------------- */

int sofd_op_open_qp(struct sofd_req *rq, struct sofd_rep *rp);
int sofd_op_open_mr(struct sofd_req *rq, struct sofd_rep *rp);
int sofd_op_async_notify(struct sofd_req *rq, struct sofd_rep *rp);
int sofd_op_dealloc_mw(struct sofd_req *rq, struct sofd_rep *rp);
int sofd_op_bind_mw(struct sofd_req *rq, struct sofd_rep *rp);
int sofd_op_inval_mw(struct sofd_req *rq, struct sofd_rep *rp);
/* the one place a remote key is resolved (OPEN_MR, the daemon's engine):
 * a region (mr_only: lkeys) or a bound window; 0 or -EACCES; */
int sofd_key_resolve(uint32_t key, bool mr_only, struct sofd_key_view *v);
/* the windows bound to mr (of its owner) become invalid; a window's release */
void sofd_mr_unbind_mws(struct sofd_mr *mr);
void sofd_mw_release(struct sofd_mw *mw);
/* invalidate window rkey for qp (remote: a SEND with invalidate to qp);
 * 0 or -EINVAL */
int sofd_mw_invalidate(const struct sofd_qp *qp, uint32_t rkey, bool remote);
/* the type 2 windows bound to qp become invalid (qp goes) */
void sofd_qp_unbind_mws(struct sofd_qp *qp);
/* whether some window is bound to mr */
bool sofd_mr_has_mws(const struct sofd_mr *mr);

/* ---- registry.c --------------------------------------------------------------- */

int sofd_registry_init(void);

uint32_t sofd_new_handle(const struct sof_hmap *m);
/* Random MR key (never 0) / QP number (24-bit, never 0, 1 or the
 * multicast QPN 0xffffff), unused. */
uint32_t sofd_new_key(void);
uint32_t sofd_new_qpn(void);

/* Object table: take a slot with a fresh generation / retire it (changing
 * its generation first, so cached mappings of it die). */
int sofd_slot_alloc(uint32_t *slot, uint64_t *gen);
void sofd_slot_free(uint32_t slot);
/* A live object changed what it hands out (SRQ resize): a new generation
 * in its slot, so the executors that cached it open it again. */
void sofd_slot_renew(uint32_t slot, uint64_t *gen);

void sofd_pd_release(struct sofd_pd *pd);
void sofd_mr_release(struct sofd_mr *mr);
void sofd_cq_release(struct sofd_cq *cq);
void sofd_srq_release(struct sofd_srq *srq);
void sofd_qp_release(struct sofd_qp *qp);

/* Release everything c owns, in dependency order, and move the connected
 * QPs of other connections whose peer died to ERROR. */
void sofd_release_all(struct sofd_conn *c);

/* Send one asynchronous event to c's event socket; dropped when the socket
 * is full or gone. */
void sofd_async_send(struct sofd_conn *c, uint32_t event_type, uint32_t handle);
/* Add 1 to a client's eventfd without ever blocking the daemon. */
void sofd_evfd_kick(int fd);
/* Tell the owner of cq to look at its QPs (attention flag, arm, event). */
void sofd_cq_attention(struct sofd_cq *cq);

/* ---- the connection manager (cm/, hosted by cm_host.c) -------------------------- */

/* Start the CM: its timer (added to epfd) and its MAD agent. 0 or -errno. */
int sofd_cm_init(int epfd);
/* The CM's timerfd fired. */
void sofd_cm_timer_event(void);
/* One SOF_OP_CM_* request (sof_cm_proto.h). 0 or -errno. */
int sofd_cm_op(struct sofd_req *rq, struct sofd_rep *rp);
/* c closes: if it is an event channel, its ids go (DREQ, REJ to peers). */
void sofd_cm_conn_closed(struct sofd_conn *c);
/* c's socket can take more: send the events that waited. */
void sofd_cm_conn_writable(struct sofd_conn *c);

/* ---- ops_umad.c: libibumad's MAD ports (sof_umad_proto.h) ------------------------ */

/* One SOF_OP_UMAD_* request. 0 or -errno. */
int sofd_umad_op(struct sofd_req *rq, struct sofd_rep *rp);
/* c closes: the agents of its MAD port go, with what they had waiting. */
void sofd_umad_conn_closed(struct sofd_conn *c);
/* MAD ports open and their agents (STATUS). */
uint32_t sofd_umad_ports(void);
uint32_t sofd_umad_agents(void);

/* ---- the network transport (transport/, hosted by tp_host.c) ------------------- */

/* Start the engine on the receive sockets fd4 and fd6 (-1: none) with the
 * daemon's host operations (sof_tp_init does it). wire false: no socket
 * at all, packets are lost as on a cut cable (the fuzz targets). 0 or
 * -errno. */
int sofd_tp_start(int fd4, int fd6, bool wire);
/* steer.c: the steering program onto the receive sockets' groups. 0. */
int sofd_steer_init(int fd4, int fd6);
/* steer.c: the InfiniBand link socket's group too (ib.c, once the port
 * started): slots made from then on have a member of it. 0. */
int sofd_steer_ib(int fd);

/* Open the RoCEv2 sockets and the timer and add them to epfd. 0 or -errno. */
int sof_tp_init(int epfd);
/* Readiness of a transport pollable (socket, timer, doorbell). */
void sof_tp_event(struct sofd_pollable *p);
/* Arm the transport timer for its earliest deadline and send what the
 * transport has queued (the loop calls it before it sleeps: packets built
 * by requests, MADs and timers leave in batches, and deadlines set outside
 * sof_tp_event, e.g. by the InfiniBand port's receive, get their timer). */
void sof_tp_flush(void);
/* A QP was made (CREATE_QP): fill its transport view qp->tq from it. */
void sof_tp_qp_init(struct sofd_qp *qp);
/* A QP was modified (req validated by ops.c): update the transport state.
 * *net is set when the QP's sends go to the network send queue.
 * 0 or -errno. */
int sof_tp_modify_qp(struct sofd_qp *qp, const struct sof_modify_qp_req *req, bool *net);
/* Steering slots (NET_ENGINE): take a slot for c, its receive sockets
 * (-1 for a family without one; fdib: on the InfiniBand link) and its counter page (the daemon
 * keeps its own descriptors), or give c's slot back (the daemon reads its sockets until the slot is
 * taken again). The slot, or -errno. */
int sof_tp_slot_take(struct sofd_conn *c, int *fd4, int *fd6, int *fdib, int *cfd, int *efd);
void sof_tp_slot_release(struct sofd_conn *c);
/* Flows (NET_FLOW, sof_proto.h): may c's slot take flows from peer? 0
 * (claimed), -EBUSY or -EPERM. A QP of c (steered: slot) became connected
 * to peer: take the flows of every other slot that claimed peer back. */
int sof_tp_flow_claim(struct sofd_conn *c, const uint8_t peer[16]);
void sof_tp_flow_connected(const struct sofd_qp *qp, uint32_t slot);
/* Steer the packets of QP qpn to its owner's slot (the owner runs its
 * transport), or stop: 0, or -ENOSPC when the steering program is full
 * (the daemon then runs the QP's transport) or -errno. */
int sof_tp_steer_add(uint32_t qpn, uint32_t slot);
void sof_tp_steer_del(uint32_t qpn);
/* The takeover of a stalled engine's responder (steer.c): the tick that
 * looks at the held slots (a SOFD_POLL_TIMER pollable of its own), and
 * whether the daemon reads qp's slot for its stalled owner right now. */
bool sof_tp_steer_is_tick(const struct sofd_pollable *p);
void sof_tp_steer_tick(void);
bool sof_tp_steer_taking(const struct sofd_qp *qp);
/* tp_host_ops.keep: an ACK or response for a QP whose owner's slot the
 * daemon reads now (sof_tp_steer_taking), kept in the slot's page for
 * the owner's engine; false when it is not or the page is full. */
bool sof_tp_steer_keep(const struct tp_qp *tq, const uint8_t *pkt, size_t len,
		       const struct roce_addr *a);
/* A UD QP of the InfiniBand port is steered (on) or no longer (off): its
 * unicast runs in its owner, its multicast stays here, where the daemon
 * keeps a receive-only view of it (steer.c). */
void sof_tp_steer_ud_view(struct sofd_qp *qp, bool on);
/* A steered QP is destroyed: it lingers here as in its process
 * (DESTROY_QP). */
void sof_tp_linger(uint32_t qpn, const struct sof_linger *l);
/* Add what the slots' processes counted (STATUS); on the InfiniBand port
 * (struct tp_ib_counters) too, *rcv and *xmit their packets. */
void sof_tp_slot_counters(uint64_t *counters, uint64_t *drops);
struct tp_ib_counters;
void sof_tp_slot_ib_counters(struct tp_ib_counters *sum, uint64_t *rcv, uint64_t *xmit);
/* The QP, MR or connection goes away: drop what the transport holds of it. */
void sof_tp_qp_release(struct sofd_qp *qp);
void sof_tp_mr_release(struct sofd_mr *mr);
/* Multicast (transport/mcast.c): attach a UD QP to the group of a
 * multicast GID, or detach it. The first QP of a group joins the IP group
 * on the served interfaces, the last one leaves it; tp_mcast_groups()
 * counts the groups. 0 or -errno: attach -ENOMEM beyond the limits of
 * sof_proto.h, detach -EINVAL when the QP is not attached. */
int sof_tp_mcast_attach(struct sofd_qp *qp, const uint8_t mgid[16]);
int sof_tp_mcast_detach(struct sofd_qp *qp, const uint8_t mgid[16]);
/* The QP goes away: detach it from every group. */
void sof_tp_mcast_qp_release(struct sofd_qp *qp);
/* MCAST_LOOP (ops.c checked the caller and the QP): deliver req's
 * datagram to the QPs attached to its group. 0 or -EINVAL (bad addresses,
 * length, or a QP without its receive-only view). */
int sof_tp_mcast_loop(struct sofd_qp *qp, const struct sof_mcast_loop_req *req);
/* The GID table changed: join the groups on interfaces that came, forget
 * those that went. */
void sof_tp_mcast_refresh(void);

#endif
