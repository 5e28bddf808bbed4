/*
 * The executor: carries out send work requests on the same host.
 *
 * A send WQE is executed by the process that posted it, in ibv_post_send:
 * it plays both the requester and, for the destination QP, the responder of
 * IBA chapter 9. The destination's receive ring, CQ and memory regions are
 * mapped from the memfds the daemon hands out after its checks (OPEN_QP,
 * OPEN_MR), cached per context and revalidated against the daemon's object
 * table generation at every use, so a destroyed QP or deregistered MR is
 * never touched again.
 *
 * Where the wire protocol would NAK, the executor produces the same outcome:
 *   RNR NAK (9.7.5.2.8)          → the WQE waits, retried per rnr_retry
 *   remote access error (9.7.5.2.4, class C) → IBV_WC_REM_ACCESS_ERR, both QPs
 *                                  to ERROR
 *   invalid request (9.7.5.2.4)  → IBV_WC_REM_INV_REQ_ERR, both QPs to ERROR
 *   remote operational error     → IBV_WC_REM_OP_ERR (responder's local
 *                                  protection error), both QPs to ERROR
 *   no response (9.7.6.1.3)      → retried until (retry_cnt+1) local ACK
 *                                  timeouts, then IBV_WC_RETRY_EXC_ERR
 * A QP whose peer was destroyed gets no answer either: IBV_WC_RETRY_EXC_ERR
 * when the timer runs out. When the peer's process dies, the daemon moves
 * the QP to ERROR at once, and what it holds is flushed.
 *
 * Everything read from the destination's segments is untrusted: receive WQEs
 * are copied before validation, indexes are masked, keys are checked by the
 * daemon and ranges here.
 */
#include "sofv.h"

#include "sof_wr.h"

#include <alloca.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

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
	uint8_t *base; /* byte at iova */
	void *map;
	size_t map_len;
};

static bool objtab_valid(struct sofv_context *ctx, uint32_t slot, uint64_t gen)
{
	if (slot >= SOF_OBJTAB_SLOTS)
		return false;
	return atomic_load_explicit(&ctx->objtab[slot], memory_order_acquire) == gen;
}

static void rqp_put(struct sofv_rqp *r)
{
	if (!r || atomic_fetch_sub(&r->refs, 1) != 1)
		return;
	if (r->shm)
		munmap(r->shm, r->shm_len);
	if (r->srq_shm)
		munmap(r->srq_shm, r->srq_len);
	if (r->cq)
		munmap(r->cq, SOF_CQ_SEG_SIZE);
	if (r->cq_evfd >= 0)
		close(r->cq_evfd);
	free(r);
}

static void rmr_put(struct sofv_rmr *m)
{
	if (!m || atomic_fetch_sub(&m->refs, 1) != 1)
		return;
	if (m->map)
		munmap(m->map, m->map_len);
	free(m);
}

static bool rqp_valid(struct sofv_context *ctx, struct sofv_rqp *r)
{
	return objtab_valid(ctx, r->slot, r->gen) &&
	       (!r->has_srq || objtab_valid(ctx, r->srq_slot, r->srq_gen));
}

static void *map_fd(int fd, size_t len, int prot)
{
	void *p;

	if (sof_memfd_check(fd, len))
		return NULL;
	p = mmap(NULL, len, prot, MAP_SHARED, fd, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* Map a destination QP from the daemon's answer. Returns a new reference
 * or NULL with errno. Caller holds ctx->cache_lock. */
static struct sofv_rqp *rqp_open(struct sofv_context *ctx, uint32_t qpn)
{
	struct sof_qp_req req = {.qpn = qpn};
	struct sof_open_qp_rep rep;
	int fds[4] = {-1, -1, -1, -1}, nfds = 4, fi, err;
	struct sofv_rqp *r;

	err = sofv_rpc(ctx, SOF_OP_OPEN_QP, &req, sizeof(req), NULL, 0, &rep, sizeof(rep), fds,
		       &nfds);
	if (err) {
		sof_close_fds(fds, nfds);
		errno = -err;
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		goto err_fds;
	r->cq_evfd = -1;
	atomic_init(&r->refs, 1);
	r->qpn = rep.qpn;
	r->type = rep.qp_type;
	r->pd = rep.pd;
	r->slot = rep.slot;
	r->gen = rep.gen;
	if (rep.qpn != qpn || nfds < 2 + (rep.has_srq ? 1 : 0) + (rep.cq_has_channel ? 1 : 0))
		goto err_free;
	if (rep.has_srq) {
		if (!rep.srq_size || (rep.srq_size & (rep.srq_size - 1)) ||
		    rep.srq_size > SOFV_MAX_SRQ_WR * 2 || rep.srq_max_sge > SOFV_MAX_SRQ_SGE)
			goto err_free;
	} else if (rep.rq_size & (rep.rq_size - 1) || rep.rq_size > SOFV_MAX_QP_WR * 2 ||
		   rep.rq_max_sge > SOFV_MAX_SGE) {
		goto err_free;
	}
	r->shm_len = SOF_QP_RQ_OFF + (size_t)rep.rq_size * SOF_RWQE_STRIDE(rep.rq_max_sge);
	r->shm = map_fd(fds[0], r->shm_len, PROT_READ | PROT_WRITE);
	if (!r->shm)
		goto err_free;
	r->cq = map_fd(fds[1], SOF_CQ_SEG_SIZE, PROT_READ | PROT_WRITE);
	if (!r->cq)
		goto err_free;
	fi = 2;
	if (rep.has_srq) {
		r->has_srq = true;
		r->srq_handle = rep.srq;
		r->srq_slot = rep.srq_slot;
		r->srq_gen = rep.srq_gen;
		r->srq_len =
		    SOF_SRQ_RQ_OFF + (size_t)rep.srq_size * SOF_RWQE_STRIDE(rep.srq_max_sge);
		r->srq_shm = map_fd(fds[fi++], r->srq_len, PROT_READ | PROT_WRITE);
		if (!r->srq_shm)
			goto err_free;
		r->rq = &r->srq_shm->rq;
		r->ring = (uint8_t *)r->srq_shm + SOF_SRQ_RQ_OFF;
		r->rq_size = rep.srq_size;
		r->rq_max_sge = rep.srq_max_sge;
	} else {
		r->rq = &r->shm->rq;
		r->ring = (uint8_t *)r->shm + SOF_QP_RQ_OFF;
		r->rq_size = rep.rq_size;
		r->rq_max_sge = rep.rq_max_sge;
	}
	r->rq_stride = SOF_RWQE_STRIDE(r->rq_max_sge);
	if (rep.cq_has_channel) {
		r->cq_evfd = fds[fi];
		fds[fi] = -1;
	}
	sof_close_fds(fds, nfds);
	return r;

err_free:
	rqp_put(r);
err_fds:
	sof_close_fds(fds, nfds);
	errno = EPROTO;
	return NULL;
}

/* Look up (or map) destination QP qpn. Returns a new reference or NULL when
 * the QP does not exist (any more) or may not be reached. */
static struct sofv_rqp *rqp_get(struct sofv_context *ctx, uint32_t qpn)
{
	struct sofv_rqp *r;

	pthread_mutex_lock(&ctx->cache_lock);
	r = sof_hmap_get(&ctx->rqps, qpn);
	if (r && !rqp_valid(ctx, r)) {
		sof_hmap_del(&ctx->rqps, qpn);
		rqp_put(r);
		r = NULL;
	}
	if (!r) {
		r = rqp_open(ctx, qpn);
		if (r && sof_hmap_put(&ctx->rqps, qpn, r)) {
			rqp_put(r);
			r = NULL;
		}
	}
	if (r)
		atomic_fetch_add(&r->refs, 1);
	pthread_mutex_unlock(&ctx->cache_lock);
	return r;
}

static uint64_t rmr_cache_key(uint32_t key, uint32_t qpn, uint32_t use)
{
	return (uint64_t)key | ((uint64_t)use << 32) | ((uint64_t)qpn << 34);
}

/* Map the region with key for access on behalf of destination QP qpn. */
static struct sofv_rmr *rmr_open(struct sofv_context *ctx, uint32_t key, uint32_t qpn, uint32_t use)
{
	struct sof_open_mr_req req = {.key = key, .qpn = qpn, .use = use};
	struct sof_open_mr_rep *rep;
	int fds[SOF_MAX_MR_RUNS], nfds = SOF_MAX_MR_RUNS, err;
	struct sofv_rmr *m = NULL;
	uint64_t total = 0;
	bool rw;
	uint8_t *p;

	rep = malloc(sizeof(*rep));
	if (!rep)
		return NULL;
	err = sofv_rpc(ctx, SOF_OP_OPEN_MR, &req, sizeof(req), NULL, 0, rep, sizeof(*rep), fds,
		       &nfds);
	if (err) {
		sof_close_fds(fds, nfds);
		free(rep);
		return NULL;
	}
	if (rep->nruns == 0 || rep->nruns > SOF_MAX_MR_RUNS || (int)rep->nruns != nfds)
		goto out;
	for (uint32_t i = 0; i < rep->nruns; i++) {
		if (rep->runs[i].length % 4096 || rep->runs[i].offset % 4096 ||
		    rep->runs[i].length > SOFV_MAX_MR_SIZE)
			goto out;
		total += rep->runs[i].length;
	}
	if (rep->page_off >= 4096 || rep->length > total - rep->page_off)
		goto out;
	m = calloc(1, sizeof(*m));
	if (!m)
		goto out;
	atomic_init(&m->refs, 1);
	m->key = key;
	m->access = rep->access;
	m->pd = rep->pd;
	m->slot = rep->slot;
	m->gen = rep->gen;
	m->iova = rep->iova;
	m->length = rep->length;
	m->map_len = total;
	m->map = mmap(NULL, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m->map == MAP_FAILED) {
		m->map = NULL;
		goto err_mr;
	}
	if (use == SOF_MR_REMOTE)
		rw = m->access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
	else
		rw = m->access & IBV_ACCESS_LOCAL_WRITE;
	p = m->map;
	for (uint32_t i = 0; i < rep->nruns; i++) {
		int prot = PROT_READ | (rw ? PROT_WRITE : 0);

		if (sof_memfd_check(fds[i], rep->runs[i].offset + rep->runs[i].length) ||
		    mmap(p, rep->runs[i].length, prot, MAP_SHARED | MAP_FIXED, fds[i],
			 (off_t)rep->runs[i].offset) == MAP_FAILED)
			goto err_mr;
		p += rep->runs[i].length;
	}
	if (!rw)
		m->access &= ~(uint32_t)(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC |
					 IBV_ACCESS_LOCAL_WRITE);
	m->base = (uint8_t *)m->map + rep->page_off;
	goto out;

err_mr:
	rmr_put(m);
	m = NULL;
out:
	sof_close_fds(fds, nfds);
	free(rep);
	return m;
}

static struct sofv_rmr *rmr_get(struct sofv_context *ctx, uint32_t key, uint32_t qpn, uint32_t use)
{
	uint64_t ck = rmr_cache_key(key, qpn, use);
	struct sofv_rmr *m;

	pthread_mutex_lock(&ctx->cache_lock);
	m = sof_hmap_get(&ctx->rmrs, ck);
	if (m && !objtab_valid(ctx, m->slot, m->gen)) {
		sof_hmap_del(&ctx->rmrs, ck);
		rmr_put(m);
		m = NULL;
	}
	if (!m) {
		m = rmr_open(ctx, key, qpn, use);
		if (m && sof_hmap_put(&ctx->rmrs, ck, m)) {
			rmr_put(m);
			m = NULL;
		}
	}
	if (m)
		atomic_fetch_add(&m->refs, 1);
	pthread_mutex_unlock(&ctx->cache_lock);
	return m;
}

/* Pointer to [addr, addr+len) of a mapped region, or NULL if out of range. */
static uint8_t *rmr_ptr(const struct sofv_rmr *m, uint64_t addr, uint64_t len)
{
	if (addr < m->iova || len > m->length || addr - m->iova > m->length - len)
		return NULL;
	return m->base + (addr - m->iova);
}

/* ---- scatter/gather lists -------------------------------------------------- */

struct sg {
	uint8_t *p;
	uint64_t len;
};

#define SG_MAX (SOFV_MAX_SGE + 2)

struct sglist {
	int n;
	uint64_t total;
	struct sg e[SG_MAX];
	struct sofv_rmr *refs[SG_MAX]; /* references to drop */
	int nrefs;
};

static void sgl_release(struct sglist *l)
{
	for (int i = 0; i < l->nrefs; i++)
		rmr_put(l->refs[i]);
	l->nrefs = 0;
}

/* qp_rmr_get's miss: replace the QP's cached region for use i. */
static __attribute__((noinline)) struct sofv_rmr *qp_rmr_refill(struct sofv_qp *qp, int i,
								uint32_t key, uint32_t qpn,
								uint32_t use, struct sglist *keep)
{
	struct sofv_context *ctx = to_sctx(qp->qpx.qp_base.context);
	struct sofv_rmr *m = qp->rmr_last[i];

	if (m && keep)
		keep->refs[keep->nrefs++] = m;
	else
		rmr_put(m);
	qp->rmr_last[i] = m = rmr_get(ctx, key, qpn, use);
	qp->rmr_last_key[i] = rmr_cache_key(key, qpn, use);
	return m;
}

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
	int i = use == SOF_MR_REMOTE;
	struct sofv_rmr *m = qp->rmr_last[i];

	if (m && qp->rmr_last_key[i] == rmr_cache_key(key, qpn, use) &&
	    objtab_valid(to_sctx(qp->qpx.qp_base.context), m->slot, m->gen))
		return m;
	return qp_rmr_refill(qp, i, key, qpn, use, keep);
}

/* l holds the one piece [p, p+len). Not an initializer: that would zero the
 * whole list (SG_MAX pieces) on every message. */
static void sgl_one(struct sglist *l, uint8_t *p, uint64_t len)
{
	l->n = 1;
	l->total = len;
	l->e[0].p = p;
	l->e[0].len = len;
	l->nrefs = 0;
}

static void sgl_add(struct sglist *l, uint8_t *p, uint64_t len)
{
	if (!len)
		return;
	l->e[l->n].p = p;
	l->e[l->n].len = len;
	l->n++;
	l->total += len;
}

/* sg_copy of lists in pieces. */
static void sg_copy_pieces(const struct sglist *dst, uint64_t skip, const struct sglist *src)
{
	int di = 0, si = 0;
	uint64_t doff = 0, soff = 0;

	while (di < dst->n && skip >= dst->e[di].len) {
		skip -= dst->e[di].len;
		di++;
	}
	doff = skip;
	while (di < dst->n && si < src->n) {
		uint64_t n = dst->e[di].len - doff;

		if (src->e[si].len - soff < n)
			n = src->e[si].len - soff;
		memcpy(dst->e[di].p + doff, src->e[si].p + soff, n);
		doff += n;
		soff += n;
		if (doff == dst->e[di].len) {
			di++;
			doff = 0;
		}
		if (soff == src->e[si].len) {
			si++;
			soff = 0;
		}
	}
}

/* Copy min(dst total, src total) bytes from src to dst, skipping skip bytes
 * of dst first. */
static inline void sg_copy(const struct sglist *dst, uint64_t skip, const struct sglist *src)
{
	if (dst->n == 1 && src->n == 1 && skip <= dst->e[0].len) { /* the usual case */
		uint64_t n = dst->e[0].len - skip;

		memcpy(dst->e[0].p + skip, src->e[0].p, n < src->e[0].len ? n : src->e[0].len);
		return;
	}
	sg_copy_pieces(dst, skip, src);
}

static void sg_write(const struct sglist *dst, uint64_t off, const void *buf, uint64_t len)
{
	struct sglist s;

	sgl_one(&s, (uint8_t *)buf, len);
	sg_copy(dst, off, &s);
}

/* qp_lmr_get's miss: copy the MR lkey names from ctx->mrs into qp->lmr. */
static __attribute__((noinline)) const struct sofv_lmr *qp_lmr_refill(struct sofv_qp *qp,
								      uint32_t lkey)
{
	struct sofv_context *ctx = to_sctx(qp->qpx.qp_base.context);
	struct sofv_mr *mr;
	bool found;

	pthread_rwlock_rdlock(&ctx->obj_lock);
	mr = sof_hmap_get(&ctx->mrs, lkey);
	found = mr && mr->pd == qp->pd;
	if (found) {
		/* read under the lock: the gen of the table mr was found in */
		qp->lmr.gen = atomic_load_explicit(&ctx->mr_gen, memory_order_relaxed);
		qp->lmr.lkey = lkey;
		qp->lmr.access = mr->access;
		qp->lmr.iova = mr->iova;
		qp->lmr.length = mr->ibmr.length;
		qp->lmr.addr = mr->ibmr.addr;
	}
	pthread_rwlock_unlock(&ctx->obj_lock);
	return found ? &qp->lmr : NULL;
}

/* The local MR lkey names, for a WQE of qp (caller holds qp->sq_lock): a
 * copy kept in qp->lmr, refilled from ctx->mrs when the key differs or an
 * MR left ctx->mrs since (ctx->mr_gen moved). A copy never points at a
 * struct sofv_mr, which ibv_dereg_mr frees. NULL when no MR of the QP's PD
 * has that key. */
static inline const struct sofv_lmr *qp_lmr_get(struct sofv_qp *qp, uint32_t lkey)
{
	struct sofv_context *ctx = to_sctx(qp->qpx.qp_base.context);

	if (qp->lmr.lkey == lkey &&
	    qp->lmr.gen == atomic_load_explicit(&ctx->mr_gen, memory_order_acquire))
		return &qp->lmr;
	return qp_lmr_refill(qp, lkey);
}

/* The bytes an SGE names, checked against the QP's copy of the MR of its
 * lkey (access need, range); NULL when a check fails. */
static inline uint8_t *lmr_bytes(struct sofv_qp *qp, const struct ibv_sge *s, uint32_t need)
{
	const struct sofv_lmr *mr = qp_lmr_get(qp, s->lkey);

	if (!mr || (mr->access & need) != need || s->addr < mr->iova || s->length > mr->length ||
	    s->addr - mr->iova > mr->length - s->length)
		return NULL;
	return mr->addr + (s->addr - mr->iova);
}

/* Resolve the local SGEs of a send WQE (this process's own memory). need is
 * IBV_ACCESS_LOCAL_WRITE when the HCA writes into them (READ, atomics).
 * Returns 0 or IBV_WC_LOC_PROT_ERR. */
static inline int local_sgl(struct sofv_qp *qp, const struct sofv_swqe *w, uint32_t need,
			    struct sglist *l)
{
	uint8_t *p;

	if (w->send_flags & IBV_SEND_INLINE) {
		sgl_one(l, w->inline_buf, w->inline_len);
		l->n = !!w->inline_len;
		return 0;
	}
	if (w->num_sge == 1 && w->sge[0].length) { /* the usual case, straight */
		p = lmr_bytes(qp, &w->sge[0], need);
		if (!p)
			return IBV_WC_LOC_PROT_ERR;
		sgl_one(l, p, w->sge[0].length);
		return 0;
	}
	l->n = 0;
	l->total = 0;
	l->nrefs = 0;
	for (uint32_t i = 0; i < w->num_sge; i++) {
		const struct ibv_sge *s = &w->sge[i];

		if (!s->length)
			continue;
		p = lmr_bytes(qp, s, need);
		if (!p)
			return IBV_WC_LOC_PROT_ERR;
		sgl_add(l, p, s->length);
	}
	return 0;
}

/* ---- receive side of the destination ------------------------------------- */

/* Take the next receive WQE of destination r into *out (copied). Returns 0,
 * -EAGAIN when the queue is empty, -EINVAL when the entry is malformed (it
 * is consumed). */
static int take_rwqe(struct sofv_rqp *r, struct sof_rwqe *out)
{
	const uint8_t *src;
	uint32_t head, tail;

	for (;;) {
		head = atomic_load_explicit(&r->rq->head, memory_order_acquire);
		/* A tail read earlier is never ahead of the real one: while it
		 * is ahead of head, the entry at head is published. */
		tail = atomic_load_explicit(&r->rq_tail_cache, memory_order_relaxed);
		if (tail - head - 1 >= r->rq_size) {
			tail = atomic_load_explicit(&r->rq->tail, memory_order_acquire);
			atomic_store_explicit(&r->rq_tail_cache, tail, memory_order_relaxed);
		}
		if (head == tail || !r->rq_size)
			return -EAGAIN;
		src = r->ring + (size_t)(head & (r->rq_size - 1)) * r->rq_stride;
		if (r->rq_stride == SOF_RWQE_STRIDE(1)) /* the usual one: no call */
			memcpy(out, src, SOF_RWQE_STRIDE(1));
		else
			memcpy(out, src, r->rq_stride);
		if (atomic_compare_exchange_weak_explicit(
			&r->rq->head, &head, head + 1, memory_order_acq_rel, memory_order_relaxed))
			break;
	}
	if (r->has_srq) {
		uint32_t limit = atomic_load_explicit(&r->srq_shm->limit, memory_order_relaxed);

		if (limit) /* the real count, not the cached one */
			tail = atomic_load_explicit(&r->rq->tail, memory_order_acquire);
		if (limit && tail - head - 1 < limit &&
		    atomic_compare_exchange_strong(&r->srq_shm->limit, &limit, 0))
			out->rsvd = 1; /* caller raises the limit event */
		else
			out->rsvd = 0;
	} else {
		out->rsvd = 0;
	}
	if (out->num_sge > r->rq_max_sge)
		return -EINVAL;
	return 0;
}

static bool rq_nonempty(struct sofv_rqp *r)
{
	return atomic_load_explicit(&r->rq->head, memory_order_acquire) !=
	       atomic_load_explicit(&r->rq->tail, memory_order_acquire);
}

/* Resolve the SGEs of a receive WQE of destination r (its owner's memory). */
static int remote_local_sgl(struct sofv_qp *qp, struct sofv_rqp *r, const struct sof_rwqe *wqe,
			    struct sglist *l)
{
	l->nrefs = 0;
	if (wqe->num_sge == 1 && wqe->sge[0].length) { /* the usual case, straight */
		const struct sof_sge *s = &wqe->sge[0];
		struct sofv_rmr *m = qp_rmr_get(qp, s->lkey, r->qpn, SOF_MR_LOCAL, l);
		uint8_t *p;

		if (!m)
			return -EACCES;
		p = rmr_ptr(m, s->addr, s->length);
		if (!p || !(m->access & IBV_ACCESS_LOCAL_WRITE))
			return -EACCES;
		/* not sgl_one: l may hold a reference qp_rmr_get moved there */
		l->n = 1;
		l->total = s->length;
		l->e[0].p = p;
		l->e[0].len = s->length;
		return 0;
	}
	l->n = 0;
	l->total = 0;
	for (uint32_t i = 0; i < wqe->num_sge; i++) {
		const struct sof_sge *s = &wqe->sge[i];
		struct sofv_rmr *m;
		uint8_t *p;

		if (!s->length)
			continue;
		/* borrowed: a region replaced in the QP's cache by a later
		 * piece has its reference moved to l */
		m = qp_rmr_get(qp, s->lkey, r->qpn, SOF_MR_LOCAL, l);
		if (!m)
			return -EACCES;
		p = rmr_ptr(m, s->addr, s->length);
		if (!p || !(m->access & IBV_ACCESS_LOCAL_WRITE))
			return -EACCES;
		sgl_add(l, p, s->length);
	}
	return 0;
}

static void cqe_post_remote(struct sofv_rqp *r, const struct sof_cqe *cqe)
{
	sof_cq_push(r->cq, cqe, r->cq_evfd, &r->cq_head_cache);
}

/* Move destination r to ERROR (its owner flushes it on its next look). */
static void rqp_fail(struct sofv_context *ctx, struct sofv_rqp *r, uint32_t notify)
{
	uint32_t a;

	atomic_store(&r->shm->state, IBV_QPS_ERR);
	atomic_store(&r->cq->attention, 1);
	/* store, then load what the owner stores: the arm handshake of
	 * sof_cq_push needs a full fence here too */
	atomic_thread_fence(memory_order_seq_cst);
	a = atomic_load(&r->cq->armed);
	if (a != SOF_CQ_ARM_NONE && r->cq_evfd >= 0 &&
	    atomic_compare_exchange_strong(&r->cq->armed, &a, SOF_CQ_ARM_NONE)) {
		uint64_t one = 1;

		atomic_fetch_add_explicit(&r->cq->event_pending, 1, memory_order_release);
		if (write(r->cq_evfd, &one, sizeof(one)) < 0) {
			/* the owner is gone or its counter is saturated */
		}
	}
	if (notify)
		sofv_notify(ctx, notify, r->qpn);
}

/* ---- timers ---------------------------------------------------------------- */

/* ---- completion helpers ------------------------------------------------------ */

static bool wqe_signaled(const struct sofv_qp *qp, const struct sofv_swqe *w)
{
	return qp->sq_sig_all || (w->send_flags & IBV_SEND_SIGNALED);
}

/* Complete send WQE w with status; a failed WQE always completes. */
static void complete_send(struct sofv_qp *qp, const struct sofv_swqe *w, int status,
			  uint32_t byte_len)
{
	struct sofv_cq *cq = qp->scq;
	struct sof_cqe c;

	if (status == IBV_WC_SUCCESS && !wqe_signaled(qp, w))
		return;
	memset(&c, 0, sizeof(c));
	c.wr_id = w->wr_id;
	c.status = (uint8_t)status;
	c.opcode = (uint8_t)sof_wc_opcode(w->opcode);
	c.byte_len = byte_len;
	c.qp_num = qp->qpn;
	sof_cq_push(cq->shm, &c, cq->channel ? cq->channel->ch.fd : -1, &cq->push_head_cache);
}

/* ---- executing one WQE ------------------------------------------------------- */

enum exec_res {
	EXEC_DONE, /* completed (successfully or not) */
	EXEC_WAIT, /* must be retried later */
};

static bool gid_local(struct sofv_context *ctx, const union ibv_gid *g)
{
	return sofv_gid_is_local(ctx, g->raw);
}

/* The QP failed: complete w with status and move to ERROR. */
static enum exec_res fail_wqe(struct sofv_qp *qp, const struct sofv_swqe *w, int status)
{
	complete_send(qp, w, status, 0);
	atomic_store(&qp->shm->state, IBV_QPS_ERR);
	qp->qpx.qp_base.state = IBV_QPS_ERR;
	qp->attr.qp_state = IBV_QPS_ERR;
	return EXEC_DONE;
}

/* No response from the peer: retry until the transport timer expires. */
static enum exec_res no_response(struct sofv_qp *qp, struct sofv_swqe *w)
{
	uint64_t t = sof_ack_timeout_ns(qp->attr.timeout), now = sof_now_ns();

	if (w->wait != SOFV_WAIT_PEER) {
		w->wait = SOFV_WAIT_PEER;
		w->deadline_ns = t ? now + t * ((uint64_t)qp->attr.retry_cnt + 1) : UINT64_MAX;
		return EXEC_WAIT;
	}
	if (now < w->deadline_ns)
		return EXEC_WAIT;
	return fail_wqe(qp, w, IBV_WC_RETRY_EXC_ERR);
}

/* The receiver has no receive WQE: IBA 9.7.5.2.8 RNR NAK handling. */
static enum exec_res rnr(struct sofv_qp *qp, struct sofv_swqe *w, struct sofv_rqp *r)
{
	uint64_t now = sof_now_ns();
	uint32_t code = atomic_load_explicit(&r->shm->min_rnr_timer, memory_order_relaxed);
	uint64_t delay = (uint64_t)sof_rnr_timer_us(code) * 1000;

	if (w->wait != SOFV_WAIT_RNR) {
		w->wait = SOFV_WAIT_RNR;
		w->rnr_left = qp->attr.rnr_retry;
		if (w->rnr_left == 0)
			return fail_wqe(qp, w, IBV_WC_RNR_RETRY_EXC_ERR);
		w->deadline_ns = now + delay;
		return EXEC_WAIT;
	}
	if (now < w->deadline_ns)
		return EXEC_WAIT;
	/* rnr_retry 7 means retry for ever (IBA 9.7.5.2.8) */
	if (w->rnr_left != 7 && --w->rnr_left <= 0)
		return fail_wqe(qp, w, IBV_WC_RNR_RETRY_EXC_ERR);
	w->deadline_ns = now + delay;
	return EXEC_WAIT;
}

/* Deliver a SEND (or the receive side of WRITE_WITH_IMM) to destination r.
 * Returns 0, -EAGAIN (no receive WQE), or a responder error:
 * -EMSGSIZE (length), -EACCES (receive buffer protection). */
static int deliver_recv(struct sofv_context *ctx, struct sofv_qp *qp, const struct sofv_swqe *w,
			struct sofv_rqp *r, const struct sglist *src, const struct sofv_ah *ah)
{
	struct sof_rwqe *rw = alloca(r->rq_stride);
	struct sglist dst;
	struct sof_cqe c;
	bool imm = w->opcode == IBV_WR_SEND_WITH_IMM || w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
	bool is_write = w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
	uint64_t grh = r->type == IBV_QPT_UD ? 40 : 0;
	int err;

	err = take_rwqe(r, rw);
	if (err == -EAGAIN)
		return err;
	if (rw->rsvd)
		sofv_notify(ctx, SOF_NOTIFY_SRQ_LIMIT, r->srq_handle);
	memset(&c, 0, sizeof(c));
	c.wr_id = rw->wr_id;
	c.qp_num = r->qpn;
	c.src_qp = qp->qpn;
	c.opcode = is_write ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV;
	c.solicited = !!(w->send_flags & IBV_SEND_SOLICITED);
	if (imm) {
		c.imm_data = w->imm_data;
		c.wc_flags |= IBV_WC_WITH_IMM;
	}
	if (err) {
		c.status = IBV_WC_LOC_QP_OP_ERR;
		cqe_post_remote(r, &c);
		return -EACCES;
	}
	if (!is_write) {
		err = remote_local_sgl(qp, r, rw, &dst);
		if (err) {
			sgl_release(&dst);
			c.status = IBV_WC_LOC_PROT_ERR;
			cqe_post_remote(r, &c);
			return -EACCES;
		}
		if (src->total + grh > dst.total) {
			sgl_release(&dst);
			c.status = IBV_WC_LOC_LEN_ERR;
			cqe_post_remote(r, &c);
			return -EMSGSIZE;
		}
		if (grh) {
			uint8_t g[40];
			const struct ibv_global_route *gr = &ah->attr.grh;
			struct sof_gid_entry sg = {0};

			(void)sofv_gid_read(ctx, gr->sgid_index, &sg); /* as it is now */
			sof_make_grh(g, sg.gid, gr->dgid.raw, gr->traffic_class, gr->hop_limit,
				     gr->flow_label, (uint32_t)src->total);
			sg_write(&dst, 0, g, 40);
			c.wc_flags |= IBV_WC_GRH;
		}
		sg_copy(&dst, grh, src);
		sgl_release(&dst);
	}
	c.byte_len = (uint32_t)(src->total + grh);
	c.status = IBV_WC_SUCCESS;
	cqe_post_remote(r, &c);
	return 0;
}

/* Resolve and check the destination of an RC/UC WQE. Returns qp->peer,
 * whose reference is the QP's (good while the caller holds qp->sq_lock:
 * only this function replaces it), or NULL with *res set to the outcome
 * for w. */
static struct sofv_rqp *connected_dest(struct sofv_qp *qp, struct sofv_swqe *w, enum exec_res *res,
				       bool *gone)
{
	struct sofv_context *ctx = to_sctx(qp->qpx.qp_base.context);
	struct sofv_rqp *r = qp->peer;

	*gone = false;
	/* The cache goes when the peer is destroyed or the QP was given
	 * another destination. */
	if (r && (r->qpn != qp->attr.dest_qp_num || !rqp_valid(ctx, r))) {
		rqp_put(r);
		r = qp->peer = NULL;
	}
	if (!r) {
		if (!gid_local(ctx, &qp->ah.grh.dgid)) {
			/* another host: no path yet (RoCEv2 link comes with issue 3) */
			*res = no_response(qp, w);
			return NULL;
		}
		r = rqp_get(ctx, qp->attr.dest_qp_num);
		if (!r) {
			*gone = true;
			return NULL;
		}
		qp->peer = r;
	}
	if (r->type != qp->qpx.qp_base.qp_type ||
	    !sof_qp_state_receives(atomic_load_explicit(&r->shm->state, memory_order_acquire)) ||
	    atomic_load_explicit(&r->shm->dest_qpn, memory_order_relaxed) != qp->qpn) {
		if (atomic_load_explicit(&r->shm->state, memory_order_acquire) == IBV_QPS_ERR &&
		    atomic_load_explicit(&r->shm->peer_gone, memory_order_relaxed)) {
			*gone = true;
			return NULL;
		}
		*res = no_response(qp, w);
		return NULL;
	}
	return r;
}

/* Execute w on an RC or UC QP. */
static enum exec_res exec_connected(struct sofv_qp *qp, struct sofv_swqe *w)
{
	struct sofv_context *ctx = to_sctx(qp->qpx.qp_base.context);
	bool rc = qp->qpx.qp_base.qp_type == IBV_QPT_RC, gone;
	enum exec_res res = EXEC_DONE;
	struct sglist src;
	struct sofv_rqp *r;
	struct sofv_rmr *m = NULL;
	uint32_t need, qacc, byte_len = 0;
	int err;

	need = (w->opcode == IBV_WR_RDMA_READ || w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
		w->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD)
		   ? IBV_ACCESS_LOCAL_WRITE
		   : 0;
	if (local_sgl(qp, w, need, &src))
		return fail_wqe(qp, w, IBV_WC_LOC_PROT_ERR);

	r = connected_dest(qp, w, &res, &gone);
	if (!r) {
		if (!gone)
			return res;
		/* The peer QP no longer exists. UC: the packets are lost. RC:
		 * nobody answers, so the transport timer runs out as on the
		 * wire (IBA 9.7.6.1.3); a peer that was destroyed while its
		 * process lives is no reason to fail sooner. (When the peer's
		 * process dies, the daemon moves this QP to ERROR at once.) */
		if (!rc) {
			complete_send(qp, w, IBV_WC_SUCCESS, (uint32_t)src.total);
			return EXEC_DONE;
		}
		return no_response(qp, w);
	}
	/* the peer answers: its transport timer stops (an RNR wait goes on) */
	if (w->wait == SOFV_WAIT_PEER)
		w->wait = SOFV_WAIT_NONE;
	qacc = atomic_load_explicit(&r->shm->access, memory_order_relaxed);

	switch (w->opcode) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		err = deliver_recv(ctx, qp, w, r, &src, NULL);
		if (err == -EAGAIN) {
			if (!rc) /* UC: no receive WQE, the message is dropped */
				break;
			return rnr(qp, w, r);
		}
		if (err == -EMSGSIZE && rc) {
			rqp_fail(ctx, r, 0);
			return fail_wqe(qp, w, IBV_WC_REM_INV_REQ_ERR);
		}
		if (err && rc) {
			rqp_fail(ctx, r, 0);
			return fail_wqe(qp, w, IBV_WC_REM_OP_ERR);
		}
		byte_len = (uint32_t)src.total;
		break;

	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM: {
		uint8_t *p = NULL;

		/* RNR is decided before any data moves, so a retry is clean. */
		if (w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM && !rq_nonempty(r)) {
			if (!rc)
				break;
			return rnr(qp, w, r);
		}
		/* IBA 9.4.3: a zero-length WRITE does not validate the R_Key */
		if (src.total) {
			m = qp_rmr_get(qp, w->rkey, r->qpn, SOF_MR_REMOTE, NULL);
			if (m && (qacc & IBV_ACCESS_REMOTE_WRITE) &&
			    (m->access & IBV_ACCESS_REMOTE_WRITE))
				p = rmr_ptr(m, w->remote_addr, src.total);
			if (!p) {
				if (!rc)
					break;
				rqp_fail(ctx, r, SOF_NOTIFY_QP_ACCESS_ERR);
				return fail_wqe(qp, w, IBV_WC_REM_ACCESS_ERR);
			}
			{
				struct sglist d;

				sgl_one(&d, p, src.total);
				sg_copy(&d, 0, &src);
			}
		}
		if (w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM)
			deliver_recv(ctx, qp, w, r, &src, NULL);
		byte_len = (uint32_t)src.total;
		break;
	}

	case IBV_WR_RDMA_READ: {
		uint8_t *p = NULL;
		uint64_t len = 0;

		for (uint32_t i = 0; i < w->num_sge; i++)
			len += w->sge[i].length;
		if (len) {
			m = qp_rmr_get(qp, w->rkey, r->qpn, SOF_MR_REMOTE, NULL);
			if (m && (qacc & IBV_ACCESS_REMOTE_READ) &&
			    (m->access & IBV_ACCESS_REMOTE_READ))
				p = rmr_ptr(m, w->remote_addr, len);
			if (!p) {
				rqp_fail(ctx, r, SOF_NOTIFY_QP_ACCESS_ERR);
				return fail_wqe(qp, w, IBV_WC_REM_ACCESS_ERR);
			}
			{
				struct sglist s;

				sgl_one(&s, p, len);
				sg_copy(&src, 0, &s);
			}
		}
		byte_len = (uint32_t)len;
		break;
	}

	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD: {
		uint64_t *p = NULL, orig;

		/* IBA 9.4.5: atomics need an 8-byte aligned virtual address */
		if (w->remote_addr & 7) {
			rqp_fail(ctx, r, SOF_NOTIFY_QP_REQ_ERR);
			return fail_wqe(qp, w, IBV_WC_REM_INV_REQ_ERR);
		}
		m = qp_rmr_get(qp, w->rkey, r->qpn, SOF_MR_REMOTE, NULL);
		if (m && (qacc & IBV_ACCESS_REMOTE_ATOMIC) &&
		    (m->access & IBV_ACCESS_REMOTE_ATOMIC))
			p = (uint64_t *)rmr_ptr(m, w->remote_addr, 8);
		if (!p) {
			rqp_fail(ctx, r, SOF_NOTIFY_QP_ACCESS_ERR);
			return fail_wqe(qp, w, IBV_WC_REM_ACCESS_ERR);
		}
		/* IBV_ATOMIC_HCA: atomic against every other atomic of the
		 * device, because all of them are CPU atomics on the same page */
		if (w->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
			orig = __atomic_fetch_add(p, w->compare_add, __ATOMIC_SEQ_CST);
		} else {
			orig = w->compare_add;
			__atomic_compare_exchange_n(p, &orig, w->swap, false, __ATOMIC_SEQ_CST,
						    __ATOMIC_SEQ_CST);
		}
		{
			struct sglist s;

			sgl_one(&s, (uint8_t *)&orig, 8);
			sg_copy(&src, 0, &s);
		}
		byte_len = 8;
		break;
	}

	default:
		return fail_wqe(qp, w, IBV_WC_LOC_QP_OP_ERR);
	}
	complete_send(qp, w, IBV_WC_SUCCESS, byte_len);
	return EXEC_DONE;
}

/* Execute w on a UD QP: unreliable, a message that cannot be delivered is
 * silently dropped (IBA 9.8.3). */
static enum exec_res exec_ud(struct sofv_qp *qp, struct sofv_swqe *w)
{
	struct sofv_context *ctx = to_sctx(qp->qpx.qp_base.context);
	uint32_t mtu_bytes = 256u << (ctx->dev.active_mtu ? ctx->dev.active_mtu - 1 : 0);
	struct sofv_rqp *r;
	struct sglist src;
	uint32_t qkey;

	/* Another host, or a multicast group (its members here and on other
	 * hosts: the daemon delivers to both): the daemon's transport sends
	 * it and completes it. */
	if (w->ah &&
	    (sof_gid_is_mcast(w->ah->attr.grh.dgid.raw) || !gid_local(ctx, &w->ah->attr.grh.dgid)))
		return sofv_net_post(qp, w) ? EXEC_WAIT : EXEC_DONE;
	/* Send completions stay in order behind those the daemon owes. */
	if (sofv_net_outstanding(qp))
		return EXEC_WAIT;
	if (local_sgl(qp, w, 0, &src))
		return fail_wqe(qp, w, IBV_WC_LOC_PROT_ERR);
	if (src.total > mtu_bytes)
		return fail_wqe(qp, w, IBV_WC_LOC_LEN_ERR);
	/* IBA 10.2.5: a Q_Key with the high bit set means "use the QP's" */
	qkey = (w->remote_qkey & 0x80000000u) ? qp->attr.qkey : w->remote_qkey;
	if (!w->ah)
		goto done;
	r = rqp_get(ctx, w->remote_qpn);
	if (!r)
		goto done;
	if (r->type == IBV_QPT_UD &&
	    sof_qp_state_receives(atomic_load_explicit(&r->shm->state, memory_order_acquire)) &&
	    atomic_load_explicit(&r->shm->qkey, memory_order_relaxed) == qkey)
		deliver_recv(ctx, qp, w, r, &src, w->ah);
	rqp_put(r);
done:
	complete_send(qp, w, IBV_WC_SUCCESS, (uint32_t)src.total);
	return EXEC_DONE;
}

static enum exec_res exec_one(struct sofv_qp *qp, struct sofv_swqe *w)
{
	if (atomic_load_explicit(&qp->shm->state, memory_order_acquire) == IBV_QPS_ERR) {
		complete_send(qp, w, IBV_WC_WR_FLUSH_ERR, 0);
		return EXEC_DONE;
	}
	if (qp->qpx.qp_base.qp_type == IBV_QPT_UD)
		return exec_ud(qp, w);
	return exec_connected(qp, w);
}

/* ---- deferred WQEs and the progress thread -------------------------------- */

static void *progress_main(void *arg);

static void prog_add(struct sofv_qp *qp)
{
	struct sofv_context *ctx = to_sctx(qp->qpx.qp_base.context);

	pthread_mutex_lock(&ctx->prog_lock);
	if (!qp->on_prog) {
		if (ctx->prog_n == ctx->prog_cap) {
			int ncap = ctx->prog_cap ? ctx->prog_cap * 2 : 8;
			struct sofv_qp **n = realloc(ctx->prog_qps, sizeof(*n) * (size_t)ncap);

			if (!n)
				goto out;
			ctx->prog_qps = n;
			ctx->prog_cap = ncap;
		}
		ctx->prog_qps[ctx->prog_n++] = qp;
		qp->on_prog = true;
		atomic_fetch_add(&qp->scq->deferred, 1);
	}
	if (!ctx->prog_started) {
		if (pthread_create(&ctx->prog_thread, NULL, progress_main, ctx) == 0)
			ctx->prog_started = true;
	}
	pthread_cond_signal(&ctx->prog_cond);
out:
	pthread_mutex_unlock(&ctx->prog_lock);
}

/* Caller holds ctx->prog_lock. */
static void prog_remove_locked(struct sofv_context *ctx, struct sofv_qp *qp)
{
	for (int i = 0; i < ctx->prog_n; i++) {
		if (ctx->prog_qps[i] == qp) {
			ctx->prog_qps[i] = ctx->prog_qps[--ctx->prog_n];
			qp->on_prog = false;
			atomic_fetch_sub(&qp->scq->deferred, 1);
			return;
		}
	}
}

static void *progress_main(void *arg)
{
	struct sofv_context *ctx = arg;
	struct timespec ts = {0, 0};

	pthread_mutex_lock(&ctx->prog_lock);
	while (!ctx->prog_stop) {
		if (!ctx->prog_n) {
			pthread_cond_wait(&ctx->prog_cond, &ctx->prog_lock);
			continue;
		}
		for (int i = 0; i < ctx->prog_n; i++) {
			struct sofv_qp *qp = ctx->prog_qps[i];

			if (pthread_spin_trylock(&qp->sq_lock))
				continue;
			sofv_exec_progress(qp);
			if (qp->sq_head == qp->sq_tail) {
				prog_remove_locked(ctx, qp);
				i--;
			}
			pthread_spin_unlock(&qp->sq_lock);
		}
		/* RNR and transport timers are at least 10 µs; poll gently. */
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 200000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&ctx->prog_cond, &ctx->prog_lock, &ts);
	}
	pthread_mutex_unlock(&ctx->prog_lock);
	return NULL;
}

void sofv_exec_progress(struct sofv_qp *qp)
{
	while (qp->sq_head != qp->sq_tail) {
		struct sofv_swqe *w = &qp->sq[qp->sq_head & (qp->sq_size - 1)];

		if (exec_one(qp, w) == EXEC_WAIT)
			return;
		qp->sq_head++;
	}
	if (atomic_load_explicit(&qp->shm->state, memory_order_acquire) == IBV_QPS_ERR)
		sofv_qp_set_error(qp);
}

int sofv_exec_post(struct sofv_qp *qp, struct sofv_swqe *wqe)
{
	struct sofv_swqe *w;

	/* RC/UC to another host: every WQE is the daemon's. */
	if (qp->net)
		return sofv_net_post(qp, wqe);

	wqe->wait = SOFV_WAIT_NONE;
	if (qp->sq_head == qp->sq_tail) {
		/* run in place; copied into the ring only if it must wait */
		if (exec_one(qp, wqe) == EXEC_DONE) {
			if (atomic_load_explicit(&qp->shm->state, memory_order_relaxed) ==
			    IBV_QPS_ERR)
				sofv_qp_set_error(qp);
			return 0;
		}
	}
	if (qp->sq_tail - qp->sq_head >= qp->sq_size)
		return ENOMEM;
	w = &qp->sq[qp->sq_tail & (qp->sq_size - 1)];
	sofv_swqe_copy(w, wqe); /* with its wait state */
	/* Inline data must outlive the caller's buffer. */
	if (w->send_flags & IBV_SEND_INLINE) {
		uint8_t *dst =
		    qp->inline_area + (size_t)(qp->sq_tail & (qp->sq_size - 1)) * qp->inline_stride;

		memcpy(dst, w->inline_buf, w->inline_len);
		w->inline_buf = dst;
	}
	qp->sq_tail++;
	sofv_exec_progress(qp);
	if (qp->sq_head != qp->sq_tail)
		prog_add(qp);
	return 0;
}

/* ---- the error state ------------------------------------------------------------ */

void sofv_qp_flush_rq(struct sofv_qp *qp)
{
	struct sof_rwqe *rw;
	struct sof_cqe c;

	if (qp->srq || !qp->rq_size)
		return;
	rw = alloca(qp->rq_stride);
	for (;;) {
		uint32_t head = atomic_load_explicit(&qp->shm->rq.head, memory_order_acquire);
		uint32_t tail = atomic_load_explicit(&qp->shm->rq.tail, memory_order_acquire);

		if (head == tail)
			return;
		memcpy(rw, qp->rq_ring + (size_t)(head & (qp->rq_size - 1)) * qp->rq_stride,
		       qp->rq_stride);
		if (!atomic_compare_exchange_weak(&qp->shm->rq.head, &head, head + 1))
			continue;
		memset(&c, 0, sizeof(c));
		c.wr_id = rw->wr_id;
		c.status = IBV_WC_WR_FLUSH_ERR;
		c.opcode = IBV_WC_RECV;
		c.qp_num = qp->qpn;
		sof_cq_push(qp->rcq->shm, &c, qp->rcq->channel ? qp->rcq->channel->ch.fd : -1,
			    &qp->rcq->push_head_cache);
	}
}

void sofv_qp_set_error(struct sofv_qp *qp)
{
	atomic_store(&qp->shm->state, IBV_QPS_ERR);
	qp->qpx.qp_base.state = IBV_QPS_ERR;
	qp->attr.qp_state = IBV_QPS_ERR;
	/* IBA 10.3.1: in the error state every outstanding WQE completes with
	 * a flush error, whether it was signaled or not. */
	while (qp->sq_head != qp->sq_tail) {
		struct sofv_swqe *w = &qp->sq[qp->sq_head & (qp->sq_size - 1)];

		complete_send(qp, w, IBV_WC_WR_FLUSH_ERR, 0);
		qp->sq_head++;
	}
	sofv_qp_flush_rq(qp);
	if (qp->srq && !qp->flushed_rq) {
		/* IBA 11.6.3.3: a QP on an SRQ reports its last WQE */
		qp->flushed_rq = true;
		sofv_notify(to_sctx(qp->qpx.qp_base.context), SOF_NOTIFY_QP_LAST_WQE, qp->qpn);
	}
}

/* ---- life cycle ---------------------------------------------------------------- */

void sofv_exec_qp_release(struct sofv_qp *qp)
{
	struct sofv_context *ctx = to_sctx(qp->qpx.qp_base.context);

	pthread_mutex_lock(&ctx->prog_lock);
	if (qp->on_prog)
		prog_remove_locked(ctx, qp);
	pthread_mutex_unlock(&ctx->prog_lock);
	rqp_put(qp->peer);
	qp->peer = NULL;
	for (int i = 0; i < 2; i++) {
		rmr_put(qp->rmr_last[i]);
		qp->rmr_last[i] = NULL;
	}
	qp->lmr.gen = 0;
}

void sofv_exec_ctx_init(struct sofv_context *ctx)
{
	atomic_init(&ctx->mr_gen, 1);
	pthread_mutex_init(&ctx->cache_lock, NULL);
	pthread_mutex_init(&ctx->prog_lock, NULL);
	pthread_cond_init(&ctx->prog_cond, NULL);
}

void sofv_exec_ctx_cleanup(struct sofv_context *ctx)
{
	uint32_t pos = 0;
	void *v;

	pthread_mutex_lock(&ctx->prog_lock);
	ctx->prog_stop = true;
	pthread_cond_signal(&ctx->prog_cond);
	pthread_mutex_unlock(&ctx->prog_lock);
	if (ctx->prog_started)
		pthread_join(ctx->prog_thread, NULL);
	ctx->prog_started = false;
	free(ctx->prog_qps);
	ctx->prog_qps = NULL;
	ctx->prog_n = ctx->prog_cap = 0;

	pthread_mutex_lock(&ctx->cache_lock);
	while ((v = sof_hmap_next(&ctx->rqps, &pos, NULL)))
		rqp_put(v);
	sof_hmap_free(&ctx->rqps);
	pos = 0;
	while ((v = sof_hmap_next(&ctx->rmrs, &pos, NULL)))
		rmr_put(v);
	sof_hmap_free(&ctx->rmrs);
	pthread_mutex_unlock(&ctx->cache_lock);
}
