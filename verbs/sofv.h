/*
 * Internal objects of softofed's drop-in libibverbs.
 *
 * Each public object (struct ibv_pd, ibv_mr, ibv_cq, ...) is the first member
 * of a library object that adds what the device needs. The control path
 * (context.c, pd_mr.c, cq.c, srq.c, qp.c, ...) creates and destroys them
 * through the daemon (rpc.c); the data path (post.c, send_router.c and the
 * executor behind it, poll.c) moves data through the shared segments
 * described in common/sof_shm.h.
 *
 * Names: sofv_ for everything internal to this library.
 */
#ifndef SOFV_H
#define SOFV_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "sof_client.h"
#include "sof_gid.h"
#include "sof_hmap.h"
#include "sof_proto.h"
#include "sof_shm.h"
#include "sof_util.h"

#define SOFV_EXPORT __attribute__((visibility("default")))

/* Device limits reported by ibv_query_device and enforced at creation. */
#define SOFV_MAX_QP 65536
#define SOFV_MAX_QP_WR 16384
#define SOFV_MAX_SGE 32
#define SOFV_MAX_INLINE 1024
#define SOFV_MAX_CQ 65536
#define SOFV_MAX_CQE ((int)SOF_CQ_MAX_CQE - 1)
#define SOFV_MAX_MR 65536
#define SOFV_MAX_MR_SIZE (1ull << 40)
#define SOFV_MAX_PD 65536
#define SOFV_MAX_QP_RD_ATOM 128
#define SOFV_MAX_SRQ 16384
#define SOFV_MAX_SRQ_WR 16384
#define SOFV_MAX_SRQ_SGE 32
#define SOFV_MAX_AH 65536
#define SOFV_MAX_PKEYS 1
#define SOFV_DEFAULT_PKEY 0xffff
#define SOFV_MAX_MSG_SZ (1u << 31)
/* QP rate limit (IBV_QP_RATE_LIMIT) bounds in kbit/s, reported in
 * packet_pacing_caps; the transport paces packets to other hosts. */
#define SOFV_RATE_LIMIT_MIN 1000u
#define SOFV_RATE_LIMIT_MAX 100000000u
/* resource_type passed to a parent domain's allocator for the library's
 * CQ object (mlx5dv's numbering in the low half, no driver in the high). */
#define SOFV_RES_TYPE_CQ 5u
/* Device memory (dm.c): the largest allocation, max_dm_size. */
#define SOFV_MAX_DM_SIZE (256u * 1024)

/* ---- device and context ------------------------------------------------- */

struct sofv_device {
	struct ibv_device ibdev;
	struct sof_devinfo info;  /* as the daemon answered at list time */
	bool ib;                  /* sofib0: the daemon's InfiniBand port */
};

struct sofv_rqp;
struct sofv_rmr;

struct sofv_context {
	struct verbs_context vctx;  /* ibv_context is its last member */
	int sock;                   /* RPC socket, also ibv_context.cmd_fd */
	pthread_mutex_t rpc_lock;   /* serializes requests on sock */
	uint32_t ctx_id;
	struct sof_devinfo dev;
	bool ib;                    /* a context of sofib0, the InfiniBand device */
	const _Atomic uint64_t *objtab; /* daemon's generations, read-only */
	const struct sof_gid_shm *gidtab; /* the live GID table, in objtab's memfd */

	/* Local objects by handle, for async events and the data path.
	 * Protected by obj_lock (writers) ; readers on the data path take
	 * the read side. */
	pthread_rwlock_t obj_lock;
	struct sof_hmap mrs;        /* lkey -> struct sofv_mr * */
	struct sof_hmap qps;        /* qpn  -> struct sofv_qp * */
	struct sof_hmap cqs;        /* cq handle -> struct sofv_cq * */
	struct sof_hmap srqs;       /* srq handle -> struct sofv_srq * */
	struct sof_hmap mws;        /* rkey >> 8 -> struct sofv_mw * (mw.c) */
	/* Bumped (under the write side of obj_lock) whenever an MR leaves
	 * mrs: what a QP cached of an MR (sofv_qp.lmr) is good while this
	 * has not moved since. Starts at 1; 0 marks an empty cache. */
	_Atomic uint64_t mr_gen;

	/* 0: the daemon does not have this process's /proc/self/mem and
	 * fence yet (the first registration brings them, under mem_lock) */
	_Atomic bool mem_attached;
	pthread_mutex_t mem_lock;
	/* registration without a round trip (mr_post.c), made by the first
	 * registration after the attach; NULL until then or when the daemon
	 * refused it (mr_post_off) */
	struct sofv_mr_post *_Atomic mr_post;
	_Atomic bool mr_post_off;

	/* Executor caches of other processes' objects (remote_cache.c). */
	pthread_mutex_t cache_lock;
	struct sof_hmap rqps;       /* qpn -> struct sofv_rqp * */
	struct sof_hmap rmrs;       /* see rmr_cache_key() in remote_cache.h */

	/* Progress thread for deferred WQEs (progress.c), started on first use. */
	pthread_mutex_t prog_lock;
	pthread_cond_t prog_cond;
	pthread_t prog_thread;
	bool prog_started, prog_stop;
	struct sofv_qp **prog_qps;
	int prog_n, prog_cap;

	/* Asynchronous events (context.c): events handed out and acked, and
	 * whether the loss of the daemon was reported as IBV_EVENT_DEVICE_FATAL. */
	_Atomic uint32_t async_gets, async_acks;
	_Atomic bool async_fatal;

	/* The connection's doorbell eventfd (wakes the daemon's network
	 * transport after posting to a network send ring); -1 until the
	 * first QP is created. */
	_Atomic int doorbell;

	/* An imported context (import.c): its copy of the shared command
	 * socket, kept open while the context lives; -1 otherwise. */
	int import_fd;

	/* Parent domains, freed when the context closes (domain.c). */
	pthread_mutex_t domain_lock;
	struct sofv_pd *pdoms;
};

static inline struct sofv_context *to_sctx(struct ibv_context *ctx)
{
	return sof_container_of(ctx, struct sofv_context, vctx.context);
}

/* ---- protection domains and memory ---------------------------------------- */

struct sofv_pd {
	struct ibv_pd ibpd;
	uint32_t handle;
	/* Address handles on this PD (ah.c): they exist only in the library,
	 * so ibv_dealloc_pd must itself fail with EBUSY while this is not 0. */
	_Atomic uint32_t nah;
	/* A parent domain (domain.c): the PD it was made on (whose nah it
	 * counts in), its thread domain and allocators; NULL parent for a PD. */
	struct sofv_pd *parent;
	struct ibv_td *td;
	void *(*alloc)(struct ibv_pd *pd, void *pd_context, size_t size, size_t alignment,
		       uint64_t resource_type);
	void (*free)(struct ibv_pd *pd, void *pd_context, void *ptr, uint64_t resource_type);
	void *pd_context;
	_Atomic bool dead;            /* deallocated, kept until the context closes */
	struct sofv_pd *pdom_next;    /* on the context's pdoms, under domain_lock */
};

static inline struct sofv_pd *to_spd(struct ibv_pd *pd)
{
	return sof_container_of(pd, struct sofv_pd, ibpd);
}

/* A run of pages of this process remapped onto a sealed memfd (mem_share.c). */
struct sofv_seg;

struct sofv_mr {
	struct ibv_mr ibmr;         /* addr/length as registered; lkey == rkey */
	uint32_t access;
	uint64_t iova;
	struct sofv_pd *pd;
	/* Registered in place; once a peer asked, its pages are moved onto
	 * memfds (mem_share.c's thread) and it holds these segments. The
	 * three below are under mem_share.c's ip_lock while it is tracked. */
	int nsegs;
	struct sofv_seg **segs;
	bool ip_tried;              /* moved, or found unmovable */
	struct sofv_mr *ip_next;    /* in mem_share.c's list of regions */
	uint32_t rec;               /* 1 + its record in the region table (mr_post.c), 0: none */
};

/* mr_post.c: registration without a round trip. sofv_mr_post registers m
 * (access, iova, addr, length and pd set; lkey and rkey filled) by a
 * record of the context's region table: 0, or -EAGAIN when it cannot (the
 * caller asks the daemon). sofv_mr_unpost: m goes; true when its record
 * was still the library's alone (then nothing is left to do at the
 * daemon), false when the daemon took it (the caller deregisters it there,
 * then calls sofv_mr_rec_free). */
int sofv_mr_post(struct sofv_context *s, struct sofv_mr *m);
bool sofv_mr_unpost(struct sofv_context *s, struct sofv_mr *m);
void sofv_mr_rec_free(struct sofv_context *s, struct sofv_mr *m);
void sofv_mr_post_free(struct sofv_context *s);

static inline struct sofv_mr *to_smr(struct ibv_mr *mr)
{
	return sof_container_of(mr, struct sofv_mr, ibmr);
}

/* ---- XRC domains (xrc.c) ---------------------------------------------------- */

struct sofv_xrcd {
	struct ibv_xrcd ibxrcd;
	uint32_t handle;              /* this open's handle at the daemon */
};

static inline struct sofv_xrcd *to_sxrcd(struct ibv_xrcd *x)
{
	return sof_container_of(x, struct sofv_xrcd, ibxrcd);
}

/* A memory window (mw.c): the binding as the daemon last granted it. A
 * binding is good while the window's object-table generation is gen: an
 * invalidation by anyone (a peer's SEND_WITH_INV included) changes it. */
struct sofv_mw {
	struct ibv_mw ibmw;
	uint32_t handle;
	struct sofv_mr *mr; /* NULL: not bound */
	uint64_t va, length, off; /* off: va's byte from mr->iova */
	uint32_t key, access, qpn, slot;
	uint64_t gen;
};

/* mw.c: the verbs, the bind and invalidate WQEs the executor runs (0 or
 * -errno), and the pointer behind a window's rkey for the engine in this
 * process (NULL when the window does not grant it); caller of
 * sofv_mw_ptr holds obj_lock for reading. */
struct ibv_mw *sofv_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int sofv_dealloc_mw(struct ibv_mw *mw);
int sofv_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *bind);
struct sofv_qp;
struct sofv_swqe;
static inline bool sofv_wr_is_local(uint32_t opcode)
{
	return opcode == IBV_WR_BIND_MW || opcode == IBV_WR_LOCAL_INV;
}
int sofv_mw_exec_bind(struct sofv_qp *qp, const struct sofv_swqe *w);
int sofv_mw_inv(struct sofv_context *ctx, uint32_t qpn, uint32_t rkey, bool remote);
uint8_t *sofv_mw_ptr(struct sofv_context *ctx, const struct sofv_qp *qp, uint32_t key,
		     uint64_t va, uint64_t len, uint32_t need);

/* ---- completion ----------------------------------------------------------- */

struct sofv_cq;

struct sofv_channel {
	struct ibv_comp_channel ch;   /* ch.fd is an EFD_SEMAPHORE eventfd */
	pthread_mutex_t lock;
	struct sofv_cq *cqs;          /* CQs using this channel (cq->ch_next) */
};

struct sofv_qp;

struct sofv_cq {
	struct ibv_cq_ex ibcq;        /* struct ibv_cq is its prefix */
	uint32_t handle;
	int memfd;
	struct sof_cq_shm *shm;       /* SOF_CQ_SEG_SIZE bytes */
	struct sof_cqe *ring;
	uint32_t size;                /* entries, power of two */
	struct sofv_channel *channel;
	struct sofv_cq *ch_next;
	pthread_spinlock_t lock;      /* consumer side: poll, flush */
	bool ex_polled;               /* polled through ibv_start_poll (cq.c's stale events) */
	struct sof_cqe cur;           /* entry being read through ibv_cq_ex */
	uint32_t wc_flags_ex;         /* IBV_WC_EX_WITH_* requested */
	/* QPs whose send or receive queue completes here (for flushing). */
	pthread_mutex_t qps_lock;
	struct sofv_qp **qps;
	int nqps, qps_cap;
	_Atomic int deferred;         /* QPs with deferred send WQEs here */
	_Atomic uint32_t events_got;  /* completion events handed out (cq.c) */
	uint32_t async_got;           /* async events handed out; ibcq.mutex */
	_Atomic uint32_t arm_last;    /* SOF_CQ_ARM_* of the program's last arm */
	_Atomic uint32_t push_head_cache; /* sof_cq_push by this process */
	/* The receive ring head of the last receive completion polled that
	 * carried one (sof_cqe.rq_head): (qpn + 1) << 32 | head, 0 for none.
	 * Written by the poller, read by ibv_post_recv of that QP (post.c). */
	_Atomic uint64_t rq_hint;
	/* The slot the next ibv_post_recv of a QP receiving here writes
	 * (post.c), prefetched for writing by a poll that found an entry: the
	 * line's invalidation moves while the program handles the completion
	 * instead of inside the post calls' locks. A prefetch never faults, so
	 * a stale address is harmless; 0: none. */
	_Atomic uintptr_t pf_own_rwqe;
	/* The receive WQE a same-host peer carried in the last SEND completion
	 * polled here (sof_cqe.carry), for the next SEND of the QP that
	 * received it (same_host.c). A sequence lock: the poller, under lock,
	 * is the only writer; carry_seq is odd while it writes. */
	_Atomic uint32_t carry_seq;
	uint32_t carry_qpn1;          /* receiving QP's number + 1, 0: none */
	uint32_t carry_src;           /* the QP that carried it */
	uint32_t carry_idx;           /* the WQE's index in the peer's ring */
	struct sof_cqe_carry carry;
	_Atomic uint32_t eng_qps;     /* QPs whose transport runs here (tp_host.c) */
	/* Created on a parent domain: this object came from its allocator
	 * when custom_alloc (domain.c). */
	struct ibv_pd *pdom;
	bool custom_alloc;
};

static inline struct sofv_cq *to_scq(struct ibv_cq *cq)
{
	return sof_container_of((struct ibv_cq_ex *)cq, struct sofv_cq, ibcq);
}

/* ---- shared receive queues -------------------------------------------------- */

struct tp_srq;

struct sofv_srq {
	struct ibv_srq ibsrq;
	uint32_t handle;
	int memfd;
	struct sof_srq_shm *shm;
	uint8_t *ring;
	uint32_t size;                /* ring entries, power of two */
	uint32_t max_wr;              /* as granted to the user */
	uint32_t max_sge;
	uint32_t stride;
	uint32_t limit;
	struct sofv_pd *pd;
	uint32_t srqn;                /* XRC SRQ: its number (ibv_get_srq_num), else 0 */
	uint32_t head_cache;          /* consumers' head as last read (post.c) */
	uint32_t async_got;           /* async events handed out; ibsrq.mutex */
	pthread_spinlock_t lock;      /* producer side */
	/* the program's engine's view (tp_host.c), shared by its QPs on this
	 * SRQ; a resize re-points it under the engine's lock */
	struct tp_srq *tsrq;
};

static inline struct sofv_srq *to_ssrq(struct ibv_srq *srq)
{
	return sof_container_of(srq, struct sofv_srq, ibsrq);
}

/* ---- address handles ----------------------------------------------------- */

struct sofv_ah {
	struct ibv_ah ibah;
	struct ibv_ah_attr attr;
};

static inline struct sofv_ah *to_sah(struct ibv_ah *ah)
{
	return sof_container_of(ah, struct sofv_ah, ibah);
}

/* ---- queue pairs --------------------------------------------------------- */

/* A send WQE kept because it could not run at post time (RNR wait), or a
 * work request being built through the ibv_wr_* API. */
struct sofv_swqe {
	uint64_t wr_id;
	uint32_t opcode;              /* enum ibv_wr_opcode */
	uint32_t send_flags;          /* enum ibv_send_flags */
	uint32_t imm_data;            /* network order; invalidate rkey */
	uint32_t num_sge;
	uint64_t remote_addr;
	uint32_t rkey;
	uint32_t remote_qpn;          /* UD; XRC INI QP: the remote XRC SRQ number */
	uint32_t remote_qkey;         /* UD */
	struct sofv_ah *ah;           /* UD */
	uint64_t compare_add;
	uint64_t swap;
	/* IBV_WR_BIND_MW (the new rkey in rkey; mw.c) */
	struct sofv_mw *mw;
	uint64_t bind_addr, bind_len;
	uint32_t bind_lkey, bind_access;
	struct ibv_sge sge[SOFV_MAX_SGE];
	uint32_t inline_len;          /* IBV_SEND_INLINE: bytes in inline_buf */
	uint8_t *inline_buf;          /* points into the QP's inline area */
	/* Waiting state of a deferred WQE (same_host.c, progress.c) */
	uint8_t wait;                 /* SOFV_WAIT_* */
	int rnr_left;                 /* RNR retries left; 7 = infinite */
	uint64_t deadline_ns;         /* next RNR retry / transport timeout */
};

/* *d = *s, copying only the SGEs in use: a whole WQE is 600 bytes, most of
 * them unused SGE slots, and it is copied for every message. */
static inline void sofv_swqe_copy(struct sofv_swqe *d, const struct sofv_swqe *s)
{
	uint32_t n = s->num_sge < SOFV_MAX_SGE ? s->num_sge : SOFV_MAX_SGE;

	memcpy(d, s, offsetof(struct sofv_swqe, sge));
	memcpy(d->sge, s->sge, sizeof(struct ibv_sge) * n);
	d->inline_len = s->inline_len;
	d->inline_buf = s->inline_buf;
	d->wait = s->wait;
	d->rnr_left = s->rnr_left;
	d->deadline_ns = s->deadline_ns;
}

enum {
	SOFV_WAIT_NONE = 0,
	SOFV_WAIT_RNR = 1,            /* receiver had no receive WQE */
	SOFV_WAIT_PEER = 2,           /* receiver not ready (not RTR / not ours) */
};

/* An entry of a work-request list built through ibv_wr_* (post.c). */
struct sofv_wr_ent {
	struct sofv_swqe w;
	uint8_t data[SOFV_MAX_INLINE];
};

/* What a QP keeps of the local MR its WQEs last named (same_host.c): a copy,
 * never a pointer, since a racing ibv_dereg_mr frees the MR. */
struct sofv_lmr {
	uint64_t gen;                 /* ctx->mr_gen when copied; 0: empty */
	uint32_t lkey, access;
	uint64_t iova, length;
	uint8_t *addr;                /* byte at iova */
};

struct sofv_qp {
	struct ibv_qp_ex qpx;         /* struct ibv_qp is its prefix */
	bool is_ex;                   /* created with send_ops_flags */
	bool xrc_opened;              /* an XRC TGT QP's handle from ibv_open_qp */
	uint32_t qpn;
	struct sofv_pd *pd;
	struct sofv_cq *scq, *rcq;
	struct sofv_srq *srq;
	uint32_t sq_sig_all;
	uint32_t send_ops;            /* bit 1 << op: the type accepts send opcode op */
	struct ibv_qp_cap cap;        /* as granted */
	uint32_t async_got;           /* async events handed out; qpx.qp_base.mutex */

	/* Segment with the receive ring (RQ producer side: rq_lock). */
	int memfd;
	struct sof_qp_shm *shm;
	size_t shm_len;
	uint8_t *rq_ring;
	uint32_t rq_size, rq_stride;
	uint32_t rq_head_cache;       /* consumers' head as last read (post.c) */
	pthread_spinlock_t rq_lock;

	/* Attributes as last modified (query_qp); under sq_lock. */
	struct ibv_qp_attr attr;
	struct ibv_ah_attr ah;        /* primary path, RC/UC */

	/* Send side, executed in this process (same_host.c), under sq_lock. */
	pthread_spinlock_t sq_lock;
	struct sofv_swqe *sq;         /* deferred WQEs ring, cap.max_send_wr */
	uint32_t sq_size, sq_head, sq_tail;
	uint8_t *inline_area;         /* sq_size * max(cap.max_inline_data,1) */
	uint32_t inline_stride;       /* max(cap.max_inline_data, 1) */
	struct sofv_rqp *peer;        /* cached destination (RC/UC) */
	/* remote_cache.h: the regions this QP's WQEs last reached at a destination,
	 * [0] receive buffers, [1] RDMA keys, each with a reference and its
	 * cache key; under sq_lock */
	struct sofv_rmr *rmr_last[2];
	uint64_t rmr_last_key[2];
	/* same_host.c: the local MR its WQEs last named, taken from ctx->mrs,
	 * of the QP's PD, good while ctx->mr_gen equals lmr.gen; under
	 * sq_lock */
	struct sofv_lmr lmr;
	bool flushed_sq, flushed_rq;

	/* ibv_wr_* building state (post.c), under sq_lock from wr_start */
	int wr_err;
	struct sofv_wr_ent *wr_list;  /* WRs built since wr_start */
	uint32_t wr_nlist, wr_list_cap;

	/* On the context's progress list (progress.c), under ctx->prog_lock. */
	bool on_prog;

	/* Network send ring in the segment (net_sq.c), under sq_lock. net:
	 * the daemon said the RC/UC peer is on another host, so every send
	 * WQE goes there. */
	int nsq_fd;
	struct sof_nsq_shm *nsq;
	size_t nsq_len;
	uint8_t *nsq_ring;
	uint32_t nsq_stride;
	bool net;
	/* tp_host.c: the transport of this QP runs in this process */
	struct sofv_eqp *eng;
	/* post.c: a UD QP's list of WRs being posted (post_list); the engine
	 * is told once, at its end, when net_sq.c held any (post_held): the
	 * list's datagrams leave together; under sq_lock */
	bool post_list, post_held;
	/* IBV_QP_RATE_LIMIT's burst and packet size (domain.c), under sq_lock;
	 * the rate itself is attr.rate_limit. ECE options as set (kernel_abi.c). */
	uint32_t rl_max_burst, rl_typical_pkt;
	uint32_t ece_options;
};

static inline struct sofv_qp *to_sqp(struct ibv_qp *qp)
{
	return sof_container_of((struct ibv_qp_ex *)qp, struct sofv_qp, qpx);
}

/* ---- rpc.c: requests to the daemon --------------------------------------- */

/* Send op with req (reqlen bytes) and fds; receive the reply into rep
 * (replen bytes) and up to *nrfds descriptors. Returns the daemon's
 * status (0 or -errno). Thread-safe per context. */
int sofv_rpc(struct sofv_context *ctx, uint32_t op, const void *req,
	     size_t reqlen, const int *fds, int nfds, void *rep, size_t replen,
	     int *rfds, int *nrfds);

/* ---- mem_share.c: registered memory made shareable ------------------------- */

/* Remap the pages under [addr, addr+length) onto sealed memfds so that peers
 * can map them. Fills runs/fds (fds owned by the caller after return) and the
 * segment references for the MR. 0 or -errno. */
int sofv_mem_share(void *addr, size_t length, struct sof_mr_run *runs,
		   int *fds, int *nruns, struct sofv_seg ***segs, int *nsegs);
/* Drop the MR's references; the last one copies the pages back to private
 * memory. */
void sofv_mem_unshare(struct sofv_seg **segs, int nsegs);
/* Check [addr, addr+length) for registration in place: every page mapped
 * and readable, and writable with write (not for odp: on demand, pages are
 * looked up at use). With attach, give fds[0] this process's /proc/self/mem and
 * fds[1] its fence page (struct sof_mem_fence; owned by the caller). 0 or
 * -errno (EFAULT for a hole or an unreadable page). */
int sofv_mem_inplace(void *addr, size_t length, bool odp, bool write, bool attach, int fds[2]);
/* ibv_advise_mr (pd_mr.c) */
int sofv_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags,
		   struct ibv_sge *sg_list, uint32_t num_sge);
/* Track a region registered in place, so that a peer's request moves its
 * pages onto memfds (SHARE_MR); untrack waits for a move in progress. */
void sofv_mem_track(struct sofv_mr *m);
void sofv_mem_untrack(struct sofv_mr *m);
/* The context closes: forget its regions. */
void sofv_mem_ctx_close(struct sofv_context *s);
/* After the daemon retired a region registered in place: wait until no
 * peer is copying into or out of it. */
void sofv_mem_fence(void);
/* Called by ibv_fork_init: make registered memory safe across fork().
 * 0 or -errno. */
int sofv_mem_fork_init(void);

/* ---- the data path: post.c, send_router.c, same_host.c, progress.c,
 *      qp_error.c, net_sq.c, poll.c ------------------------------------------- */

int sofv_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		   struct ibv_send_wr **bad_wr);
int sofv_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		   struct ibv_recv_wr **bad_wr);
int sofv_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad_wr);
int sofv_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
int sofv_req_notify_cq(struct ibv_cq *cq, int solicited_only);
/* ibv_cq_ex polling callbacks are installed by sofv_cq_ex_init. */
void sofv_cq_ex_init(struct sofv_cq *cq);
/* ibv_wr_* callbacks are installed by sofv_qp_ex_init. */
void sofv_qp_ex_init(struct sofv_qp *qp, uint64_t send_ops_flags);

/* Post one already-validated WQE (used by post_send and wr_complete); it
 * is executed in place (its wait state changes), and copied only when it
 * must wait. Caller holds qp->sq_lock. Returns 0 or a positive errno for
 * the immediate-failure cases of ibv_post_send. */
int sofv_exec_post(struct sofv_qp *qp, struct sofv_swqe *wqe);
/* net_sq.c: hand a validated WQE to the daemon's network transport (RC/UC
 * QPs with qp->net, UD sends to other hosts). Caller holds qp->sq_lock.
 * 0 or ENOMEM when the send queue is full. */
int sofv_net_post(struct sofv_qp *qp, const struct sofv_swqe *wqe);
/* The end of a list of WRs (post.c): the engine takes what net_sq.c held
 * back for it (qp->post_held), all in one pass. Caller holds sq_lock. */
void sofv_net_post_end(struct sofv_qp *qp);
/* Send WQEs handed to the daemon and not completed yet. */
uint32_t sofv_net_outstanding(const struct sofv_qp *qp);

/* progress.c: run deferred WQEs and flushes of a QP; caller holds
 * qp->sq_lock. */
void sofv_exec_progress(struct sofv_qp *qp);

/* qp_error.c: move a local QP to ERROR and flush what it holds. Caller
 * holds qp->sq_lock. */
void sofv_qp_set_error(struct sofv_qp *qp);
/* Flush the posted receives of a QP in ERROR; needs no lock. */
void sofv_qp_flush_rq(struct sofv_qp *qp);
/* send_router.c: forget cached mappings of a peer QP (qp.c on destroy). */
void sofv_exec_qp_release(struct sofv_qp *qp);
/* Initialise the executor state of a new context (open), and drop every
 * executor mapping and stop its progress thread (close). */
void sofv_exec_ctx_init(struct sofv_context *ctx);
void sofv_exec_ctx_cleanup(struct sofv_context *ctx);

/* ---- tp_host.c: the transport of this process's RC/UC QPs ------------------ */

/* Before connecting an RC/UC QP to another host: the first context that
 * asks gets a steering slot and the engine starts (not with
 * SOFTOFED_ENGINE=daemon, nor for a process of another user than the
 * daemon's); once that context closes, the next one that asks. Whether
 * ctx's QPs may have their transport here. */
bool sofv_engine_start(struct sofv_context *ctx);
/* The context closes: the engine's thread stops and, unless QPs of it
 * were left alive, its slot goes back (tp_slot.c). */
void sofv_engine_ctx_close(struct sofv_context *ctx);
/* The daemon steers a QP's packets here (MODIFY_QP): its engine state
 * (qp->eng). 0 or -errno. */
int sofv_engine_qp_new(struct sofv_qp *qp);
/* Before destroying a QP with qp->eng: what the daemon needs to linger
 * for it (struct sof_linger), when it does (an RC QP connected to
 * another host). */
bool sofv_engine_linger(struct sofv_qp *qp, struct sof_linger *l);
/* The QP goes: the engine forgets it. */
void sofv_engine_qp_release(struct sofv_qp *qp);
/* The daemon accepted a modify of a QP with qp->eng: the engine's part.
 * *net: its sends go to the network send queue. 0 or -errno. */
int sofv_engine_modify(struct sofv_qp *qp, const struct sof_modify_qp_req *req, bool *net);
/* A WQE was written to qp's network send queue (qp->eng): send it. */
void sofv_engine_post(struct sofv_qp *qp);
/* A CQ of such a QP is polled: read the sockets, run the timers. */
void sofv_engine_poll(void);
/* The ACKs a poller holds leave now (before a request to the CM,
 * arming a CQ). No lock held; exported to librdmacm. */
void sofv_engine_flush(void);
/* A thread that polled is going to sleep (ibv_get_cq_event): the progress
 * thread reads the sockets from now on, not after its hold. */
void sofv_engine_idle(void);
/* How the program waits for its channels' events (ibv_get_cq_event): it
 * found the event there, woken outside our calls (poll(2) on the fd), or
 * it waited inside ibv_get_cq_event. Arming a CQ keeps the progress
 * thread on the sockets only in the first case. */
void sofv_engine_sleeps_outside(bool outside);
/* Around taking a region out of ctx's MR table (no packet of the engine
 * is then half-way through it). */
void sofv_engine_lock(struct sofv_context *ctx);
void sofv_engine_unlock(struct sofv_context *ctx);

/* ---- tp_wake.c: when tp_host.c's progress thread runs, for one-sided
 * requests (its lock contract) ------------------------------------------ */

/* The progress thread starts: its short scheduler slice. */
void sofv_wake_thread_init(void);
/* The progress thread after reading the sockets: whether it answers alone
 * (no thread of the program polled lately): its nice below the program's
 * then, where the process may lower it; its own otherwise. */
void sofv_wake_alone(bool alone);
/* After reading the sockets: one-sided requests executed start or extend
 * one-sided mode; held: ACKs are held, which leave by a deadline
 * (sofv_wake_ack_due: it passed; sofv_wake_ack_sent: they left). now:
 * sof_now_ns() of the caller's pass over the sockets (one clock read per
 * poll: it is a good part of what a poll that finds nothing costs).
 * responses_only: a poller's pass read packets and no request. True: in
 * one-sided mode the sockets go to the progress thread (kick it when it
 * does not watch them); sofv_wake_handed tells it, until a one-sided
 * request is executed. loop: the progress thread read them while a thread
 * of the program runs a loop of its own (it polled lately): its hold's
 * deadline is longer (tp_wake.c). */
bool sofv_wake_rx(uint64_t now, bool held, bool responses_only, bool loop);
bool sofv_wake_handed(uint64_t now);
/* Whether one-sided mode is on. */
bool sofv_wake_onesided(void);
bool sofv_wake_ack_due(uint64_t now);
void sofv_wake_ack_sent(void);
/* The progress thread's wait: hold, shortened to that deadline; whether
 * there is one. */
bool sofv_wake_wait(struct timespec *wait, const struct timespec *hold);
/* A completion channel fired (sofv_wake_kicked; sofv_wake_kicks counts
 * them). The progress thread read packets with nobody polling: it spins on
 * the sockets for a while (sofv_wake_spinning), yielding the CPU in
 * between (sofv_wake_spin_yield) only beside a thread of this process
 * (yields: the count moved while it read them, or a thread polled lately). */
void sofv_wake_kicked(void);
uint64_t sofv_wake_kicks(void);
void sofv_wake_spin_start(bool yields);
bool sofv_wake_spinning(void);
void sofv_wake_spin_yield(void);
/* While the progress thread leaves the sockets to pollers it does not
 * wait for the transport timer either (sofv_wake_timer_watched(false)):
 * rx_run runs it once its deadline passed (sofv_wake_timer_poll). */
void sofv_wake_timer_watched(bool on);
void sofv_wake_timer_poll(uint64_t now);

/* ---- entry points installed in the context's operation tables ---------- */

/* context.c */
/* The InfiniBand port of the daemon, as published now (context.c): 0,
 * -ENODEV without one, -EIO. */
int sofv_ib_port(const struct sofv_context *s, struct sof_ib_port *p);
int sofv_query_port(struct ibv_context *ctx, uint8_t port,
		    struct ibv_port_attr *attr, size_t attr_len);
int sofv_query_device_ex(struct ibv_context *ctx,
			 const struct ibv_query_device_ex_input *input,
			 struct ibv_device_attr_ex *attr, size_t attr_size);
/* gid.c: the GID table of port 1 as the daemon keeps it now (it follows the
 * interface addresses): read from shared memory, no system call, any
 * thread. Entry index into *out (out may be NULL: is it valid?): 0,
 * -EINVAL (index beyond the table), -ENODATA (empty entry) or -EIO. */
int sofv_gid_read(const struct sofv_context *ctx, uint32_t index,
		  struct sof_gid_entry *out);
/* The index of gid in the table now, or -ENOENT (-EIO). */
int sofv_gid_find(const struct sofv_context *ctx, const uint8_t gid[16]);
/* Whether gid is one of this device's GIDs now. */
bool sofv_gid_is_local(const struct sofv_context *ctx, const uint8_t gid[16]);
/* cq.c */
struct ibv_cq_ex *sofv_create_cq_ex(struct ibv_context *ctx,
				    struct ibv_cq_init_attr_ex *attr);
/* qp.c */
struct ibv_qp *sofv_create_qp_ex(struct ibv_context *ctx,
				 struct ibv_qp_init_attr_ex *attr);
/* srq.c */
struct ibv_srq *sofv_create_srq_ex(struct ibv_context *ctx,
				   struct ibv_srq_init_attr_ex *attr);
/* xrc.c: XRC domains, SRQ numbers, ibv_open_qp */
struct ibv_xrcd *sofv_open_xrcd(struct ibv_context *ctx, struct ibv_xrcd_init_attr *attr);
int sofv_close_xrcd(struct ibv_xrcd *xrcd);
int sofv_get_srq_num(struct ibv_srq *srq, uint32_t *srq_num);
struct ibv_qp *sofv_open_qp(struct ibv_context *ctx, struct ibv_qp_open_attr *attr);
/* qp.c: ibv_open_qp's QP object, of the segment memfd (taken) */
struct ibv_qp *sofv_qp_opened(struct ibv_context *ctx, const struct ibv_qp_open_attr *attr,
			      const struct sof_create_qp_rep *rep, int memfd);

/* Ask the daemon to raise an asynchronous event at the owner of an object
 * (SOF_NOTIFY_*). 0 or -errno. Defined in rpc.c. */
int sofv_notify(struct sofv_context *ctx, uint32_t kind, uint32_t handle);

/* context.c: a context on daemon connection sock (not taken on failure),
 * introduced by op (HELLO, or IMPORT); cmd_fd: an imported context's
 * command socket, or -1. NULL with errno on failure. */
struct ibv_context *sofv_context_open(int sock, uint32_t op, const void *req, size_t reqlen,
				      int cmd_fd);

/* domain.c: thread and parent domains, the clock, the rate limit. */
void sofv_domain_set_ops(struct sofv_context *s);
/* flow.c: ibv_create_flow / ibv_destroy_flow into the context's ops */
void sofv_flow_set_ops(struct verbs_context *v);
/* dm.c: device memory */
void sofv_dm_set_ops(struct sofv_context *s);
void sofv_domains_free(struct sofv_context *s);
int sofv_dealloc_parent_domain(struct sofv_pd *pd);
/* Memory for a library object of type on pd: from the parent domain's
 * allocator when it has one (*custom = true), else zeroed from calloc.
 * Free it with sofv_pd_free(pd, p, type, *custom). */
void *sofv_pd_alloc(struct ibv_pd *pd, size_t size, uint64_t type, bool *custom);
void sofv_pd_free(struct ibv_pd *pd, void *p, uint64_t type, bool custom);
/* CLOCK_REALTIME - CLOCK_MONOTONIC now, in ns (wallclock timestamps). */
uint64_t sofv_wallclock_offset_ns(void);
/* Whether a QP of type t accepts rate_limit kbit/s (0: no limit). */
bool sofv_rate_limit_ok(enum ibv_qp_type t, uint32_t kbps);

/* CQ <-> QP attachment for flushing (cq.c). */
int sofv_cq_attach_qp(struct sofv_cq *cq, struct sofv_qp *qp);
void sofv_cq_detach_qp(struct sofv_cq *cq, struct sofv_qp *qp);
/* Drop every completion of QP qpn from cq, the others kept in order. */
void sofv_cq_clean(struct sofv_cq *cq, uint32_t qpn);

#endif
