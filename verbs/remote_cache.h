/*
 * The destination QPs and memory regions of other processes on this host,
 * as the same-host executor reaches them (remote_cache.c maps them).
 *
 * A destination's receive ring, CQ and memory regions are mapped from the
 * memfds the daemon hands out after its checks (OPEN_QP, OPEN_MR; a region
 * registered in place is reached by pread/pwrite instead), cached
 * per context, and revalidated against the generation of the daemon's
 * object table at every use, so a destroyed QP or a deregistered MR is
 * never touched again. The checks and reference drops that run per message
 * are inline here; mapping and unmapping are out of line.
 */
#ifndef SOFV_REMOTE_CACHE_H
#define SOFV_REMOTE_CACHE_H

#include "sgl.h"
#include "sofv.h"

/* ---- destination QPs ---------------------------------------------------- */

struct sofv_rqp {
	_Atomic int refs;
	uint32_t qpn, type, pd, slot;
	uint64_t gen;
	struct sof_qp_shm *shm;
	size_t shm_len;
	/* receive queue: the QP's own ring or its SRQ's */
	struct sof_ring_idx *rq;
	uint8_t *ring;
	uint32_t rq_size, rq_stride, rq_max_sge;
	bool has_srq;
	uint32_t srq_slot;
	uint64_t srq_gen;
	struct sof_srq_shm *srq_shm;
	size_t srq_len;
	uint32_t srq_handle;
	/* XRC TGT QP: the XRC SRQ of the XRCETH this entry was opened for
	 * (0 otherwise); what its regions are checked through: mr_qpn with
	 * use_local (receive buffers) and use_remote (RDMA keys) */
	uint32_t xrc_srqn;
	uint32_t mr_qpn, use_local, use_remote;
	/* receive CQ */
	struct sof_cq_shm *cq;
	int cq_evfd;
	/* what this process last read of the owner's indexes (sof_cq_push;
	 * take_rwqe): reading them on every message costs a cache line */
	_Atomic uint32_t cq_head_cache;
	_Atomic uint32_t rq_tail_cache;
};

/* ---- destination memory regions ----------------------------------------- */

struct sofv_rmr {
	_Atomic int refs;
	uint32_t key, access, pd, slot;
	uint64_t gen, iova, length;
	uint8_t *base; /* byte at iova (in place: in the owner's address space) */
	void *map;
	size_t map_len;
	/* in place (no memfd yet): the owner's /proc/<pid>/mem, its fence
	 * page, the fence's move count when opened, and the context whose
	 * object table says it is valid */
	int pmem_fd;
	struct sof_mem_fence *fence;
	uint32_t moves;
	struct sofv_context *ctx;
};

/* The region when it is reached by copies (in place), else NULL. */
static inline struct sofv_rmr *rmr_via(struct sofv_rmr *m) { return m->pmem_fd >= 0 ? m : NULL; }

enum sofv_rmr_atomic_op { RMR_CMP_SWAP, RMR_FETCH_ADD, RMR_STORE };

/* An 8-byte atomic (compare-and-swap, fetch-and-add, or ATOMIC WRITE's
 * store of compare_add) at the owner's address p of a region in place;
 * the original value. Atomic against the other executors of this process
 * only (remote_cache.c). */
uint64_t sofv_rmr_atomic(struct sofv_rmr *m, uint8_t *p, enum sofv_rmr_atomic_op op,
			 uint64_t compare_add, uint64_t swap);

static inline bool objtab_valid(struct sofv_context *ctx, uint32_t slot, uint64_t gen)
{
	if (slot >= SOF_OBJTAB_SLOTS)
		return false;
	return atomic_load_explicit(&ctx->objtab[slot], memory_order_acquire) == gen;
}

/* A cached region is still the one to use: not revoked, and, in place,
 * its owner moved nothing since (then it can be mapped: open it again). */
static inline bool rmr_current(struct sofv_context *ctx, const struct sofv_rmr *m)
{
	return objtab_valid(ctx, m->slot, m->gen) &&
	       (!m->fence ||
		atomic_load_explicit(&m->fence->moves, memory_order_relaxed) == m->moves);
}

/* Unmap and free a destination whose last reference went (remote_cache.c). */
void sofv_rqp_free(struct sofv_rqp *r);
void sofv_rmr_free(struct sofv_rmr *m);

static inline void rqp_put(struct sofv_rqp *r)
{
	if (!r || atomic_fetch_sub(&r->refs, 1) != 1)
		return;
	sofv_rqp_free(r);
}

static inline void rmr_put(struct sofv_rmr *m)
{
	if (!m || atomic_fetch_sub(&m->refs, 1) != 1)
		return;
	sofv_rmr_free(m);
}

static inline bool rqp_valid(struct sofv_context *ctx, struct sofv_rqp *r)
{
	return objtab_valid(ctx, r->slot, r->gen) &&
	       (!r->has_srq || objtab_valid(ctx, r->srq_slot, r->srq_gen));
}

static inline uint64_t rmr_cache_key(uint32_t key, uint32_t qpn, uint32_t use)
{
	return (uint64_t)key | ((uint64_t)use << 32) | ((uint64_t)qpn << 35);
}

/* Pointer to [addr, addr+len) of a mapped region, or NULL if out of range. */
static inline uint8_t *rmr_ptr(const struct sofv_rmr *m, uint64_t addr, uint64_t len)
{
	if (addr < m->iova || len > m->length || addr - m->iova > m->length - len)
		return NULL;
	/* in place the base may be 0 (implicit ODP): integer arithmetic */
	return (uint8_t *)((uintptr_t)m->base + (addr - m->iova));
}

/* Look up (or map) destination QP qpn. Returns a new reference or NULL when
 * the QP does not exist (any more) or may not be reached. Lock: takes
 * ctx->cache_lock. */
struct sofv_rqp *sofv_rqp_get(struct sofv_context *ctx, uint32_t qpn);
/* The same for XRC TGT QP qpn reached through XRC SRQ srqn (the XRCETH)
 * by the INI QP src_qpn: NULL with errno EINVAL when srqn names no XRC SRQ
 * of the QP's domain (the responder's invalid request; the daemon moves
 * the TGT QP to ERROR when src_qpn is its peer). */
struct sofv_rqp *sofv_rqp_get_xrc(struct sofv_context *ctx, uint32_t qpn, uint32_t srqn,
				  uint32_t src_qpn);

/* Drop the references a list holds on regions (see qp_rmr_get). */
static inline void sgl_release(struct sglist *l)
{
	for (int i = 0; i < l->nrefs; i++)
		rmr_put(l->refs[i]);
	l->nrefs = 0;
}

/* qp_rmr_get's miss: replace the QP's cached region for use i. */
struct sofv_rmr *sofv_qp_rmr_refill(struct sofv_qp *qp, int i, uint32_t key, uint32_t qpn,
				    uint32_t use, struct sglist *keep);

/* rmr_get for a WQE of qp (caller holds qp->sq_lock): the region qp reached
 * last with this use is kept with a reference of its own, checked against
 * the object table on every use, so a stream of messages to one buffer
 * skips the context's locked cache. The region returned is borrowed from
 * the QP: good until the next call with the same use, which may replace
 * it. Then the reference of the one replaced moves to keep, when given (a
 * list that still points into it), or is dropped. */
static inline struct sofv_rmr *qp_rmr_get(struct sofv_qp *qp, uint32_t key, uint32_t qpn,
					  uint32_t use, struct sglist *keep)
{
	int i = use == SOF_MR_REMOTE || use == SOF_MR_XRC_REMOTE;
	struct sofv_rmr *m = qp->rmr_last[i];

	if (m && qp->rmr_last_key[i] == rmr_cache_key(key, qpn, use) &&
	    rmr_current(to_sctx(qp->qpx.qp_base.context), m))
		return m;
	return sofv_qp_rmr_refill(qp, i, key, qpn, use, keep);
}

/* The QP goes: drop its cached destination and regions. Caller holds
 * qp->sq_lock or owns the QP alone. */
void sofv_remote_cache_qp_release(struct sofv_qp *qp);
/* The context closes: unmap every destination it cached. */
void sofv_remote_cache_clear(struct sofv_context *ctx);

#endif
