/*
 * The cache of other processes' objects that the same-host executor
 * reaches: destination QPs (receive ring or SRQ, receive CQ) and memory
 * regions (for RDMA keys and for receive buffers), mapped from the memfds
 * the daemon hands out after checking the key, PD and access (OPEN_QP,
 * OPEN_MR). Entries live in the context's maps under ctx->cache_lock and
 * are revalidated against the object table's generation at every use
 * (remote_cache.h).
 *
 * Everything the daemon answers is checked before use: sizes are powers of
 * two within the device limits, memfds are sealed and long enough, and a
 * read-only region is mapped read-only.
 */
#include "remote_cache.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

void sofv_rqp_free(struct sofv_rqp *r)
{
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

void sofv_rmr_free(struct sofv_rmr *m)
{
	if (m->map)
		munmap(m->map, m->map_len);
	if (m->fence)
		munmap(m->fence, sizeof(*m->fence));
	if (m->pmem_fd >= 0)
		close(m->pmem_fd);
	free(m);
}

/* ---- regions in place: copies through the owner's /proc/<pid>/mem ----------- */

/* Count this copy in the owner's fence (common/sof_shm.h, mem_reg.c),
 * waiting while the owner moves pages, then check that the region is
 * still valid: a deregistration either sees the count and waits, or made
 * the region invalid before the check. Returns the epoch slot to leave,
 * or -1 (the region is gone; nothing counted). */
static int fence_enter(struct sofv_rmr *m)
{
	struct timespec ts = {0, 50000};
	int e;

	/* the owner's to write: after some 2 s of moving, copy anyway */
	for (int tries = 0;; tries++) {
		e = (int)(atomic_load(&m->fence->epoch) & 1);
		atomic_fetch_add(&m->fence->cnt[e], 1);
		if (!atomic_load(&m->fence->moving) || tries >= 40000)
			break;
		atomic_fetch_sub(&m->fence->cnt[e], 1);
		nanosleep(&ts, NULL);
	}
	if (objtab_valid(m->ctx, m->slot, m->gen))
		return e;
	atomic_fetch_sub(&m->fence->cnt[e], 1);
	return -1;
}

static void fence_leave(struct sofv_rmr *m, int e)
{
	uint32_t v = atomic_load(&m->fence->cnt[e]);

	/* never below zero: the owner clears a count it gave up on */
	while (v && !atomic_compare_exchange_weak(&m->fence->cnt[e], &v, v - 1))
		;
}

static void pmem_rw(int fd, uint8_t *remote, uint8_t *local, uint64_t n, bool to_remote)
{
	while (n) {
		ssize_t k = to_remote ? pwrite(fd, local, n, (off_t)(uintptr_t)remote)
				      : pread(fd, local, n, (off_t)(uintptr_t)remote);

		if (k <= 0) {
			if (k < 0 && errno == EINTR)
				continue;
			return; /* the owner is gone, or unmapped the pages */
		}
		remote += k;
		local += k;
		n -= (uint64_t)k;
	}
}

/* A region deregistered meanwhile is not touched, as a mapping of it
 * would have been taken back: the copy is dropped. */
void sofv_rmr_xfer(struct sofv_rmr *m, uint8_t *remote, uint8_t *local, uint64_t n, bool to_remote)
{
	int e = fence_enter(m);

	if (e < 0)
		return;
	pmem_rw(m->pmem_fd, remote, local, n, to_remote);
	fence_leave(m, e);
}

/* Under the fence's alock, which peers and the daemon take for their
 * atomics on the owner's memory (bounded: the owner's page); not atomic
 * against the owner's own CPU atomics on the word (verbs/README.md). */
uint64_t sofv_rmr_atomic(struct sofv_rmr *m, uint8_t *p, enum sofv_rmr_atomic_op op,
			 uint64_t compare_add, uint64_t swap)
{
	struct timespec ts = {0, 1000};
	uint64_t orig = 0, v;
	int e = fence_enter(m);
	uint32_t z;

	if (e < 0)
		return 0;
	for (int tries = 0; tries < 100000; tries++) {
		z = 0;
		if (atomic_compare_exchange_strong(&m->fence->alock, &z, 1))
			break;
		nanosleep(&ts, NULL);
	}
	pmem_rw(m->pmem_fd, p, (uint8_t *)&orig, 8, false);
	v = op == RMR_FETCH_ADD ? orig + compare_add
	    : op == RMR_STORE	? compare_add
	    : orig == compare_add ? swap
				  : orig;
	if (v != orig)
		pmem_rw(m->pmem_fd, p, (uint8_t *)&v, 8, true);
	atomic_store(&m->fence->alock, 0);
	fence_leave(m, e);
	return orig;
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
static struct sofv_rqp *rqp_open(struct sofv_context *ctx, uint32_t qpn, uint32_t srqn,
				 uint32_t src_qpn)
{
	struct sof_open_qp_req req = {.qpn = qpn, .xrc_srqn = srqn, .src_qpn = src_qpn};
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
	r->mr_qpn = qpn;
	r->use_local = SOF_MR_LOCAL;
	r->use_remote = SOF_MR_REMOTE;
	if (rep.qp_type == IBV_QPT_XRC_RECV) {
		if (!srqn || !rep.has_srq)
			goto err_free;
		r->xrc_srqn = srqn;
		r->mr_qpn = srqn;
		r->use_local = SOF_MR_XRC_LOCAL;
		r->use_remote = SOF_MR_XRC_REMOTE;
	}
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

/* Look up (or map) destination QP qpn (through XRC SRQ srqn when not 0).
 * Returns a new reference or NULL when the QP does not exist (any more)
 * or may not be reached. */
static struct sofv_rqp *rqp_get(struct sofv_context *ctx, uint32_t qpn, uint32_t srqn,
				uint32_t src_qpn)
{
	/* an XRC TGT QP is one entry per SRQ reached through it */
	uint64_t key = srqn ? (1ull << 56) | ((uint64_t)srqn << 24) | qpn : qpn;
	struct sofv_rqp *r;
	int err = 0;

	pthread_mutex_lock(&ctx->cache_lock);
	r = sof_hmap_get(&ctx->rqps, key);
	if (r && !rqp_valid(ctx, r)) {
		sof_hmap_del(&ctx->rqps, key);
		rqp_put(r);
		r = NULL;
	}
	if (!r) {
		r = rqp_open(ctx, qpn, srqn, src_qpn);
		err = r ? 0 : errno;
		if (r && sof_hmap_put(&ctx->rqps, key, r)) {
			rqp_put(r);
			r = NULL;
		}
	}
	if (r)
		atomic_fetch_add(&r->refs, 1);
	pthread_mutex_unlock(&ctx->cache_lock);
	if (!r)
		errno = err ? err : ENOMEM;
	return r;
}

/* Whether the owner would move the region for us (mem_reg.c): not ODP,
 * not larger than SOF_MOVE_MAX. */
static bool movable(const struct sofv_rmr *m)
{
	return !(m->access & IBV_ACCESS_ON_DEMAND) && m->length <= SOF_MOVE_MAX;
}

/* A region in place from OPEN_MR's answer: fds[0] the owner's
 * /proc/<pid>/mem, fds[1] its fence page (both taken on success); the
 * region's address in runs[0].offset. The access checks stay the
 * executor's (rmr_ptr and m->access), as for a mapped region. */
static struct sofv_rmr *rmr_open_inplace(struct sofv_context *ctx, uint32_t key,
					 const struct sof_open_mr_rep *rep, int *fds)
{
	struct sofv_rmr *m;
	void *f;

	if (sof_memfd_check(fds[1], sizeof(struct sof_mem_fence)) ||
	    rep->runs[0].length != rep->length ||
	    (rep->length > SOFV_MAX_MR_SIZE && !(rep->access & IBV_ACCESS_ON_DEMAND)))
		return NULL;
	f = mmap(NULL, sizeof(struct sof_mem_fence), PROT_READ | PROT_WRITE, MAP_SHARED, fds[1], 0);
	if (f == MAP_FAILED)
		return NULL;
	m = calloc(1, sizeof(*m));
	if (!m) {
		munmap(f, sizeof(struct sof_mem_fence));
		return NULL;
	}
	atomic_init(&m->refs, 1);
	m->key = key;
	m->access = rep->access;
	m->pd = rep->pd;
	m->slot = rep->slot;
	m->gen = rep->gen;
	m->iova = rep->iova;
	m->length = rep->length;
	m->base = (uint8_t *)(uintptr_t)rep->runs[0].offset;
	m->fence = f;
	m->moves = atomic_load(&m->fence->moves);
	m->ctx = ctx;
	m->pmem_fd = fds[0];
	fds[0] = -1;
	if (movable(m))
		sof_fence_ask_move(m->fence, m->fence->req, key);
	return m;
}

/* After asking for a move: wait a little for it (the owner's thread moves
 * a small region in well under a millisecond, when it gets a CPU), so that
 * the messages that follow take the mapped path; a large region, or an
 * owner that keeps it in place, is copied meanwhile. True when something
 * was moved. */
static bool move_wait(const struct sofv_rmr *m)
{
	struct timespec ts = {0, 50000};

	if (!movable(m))
		return false;
	for (int i = 0; i < 400; i++) { /* 20 ms */
		if (atomic_load(&m->fence->moves) != m->moves)
			return true;
		nanosleep(&ts, NULL);
	}
	return false;
}

struct sofv_rqp *sofv_rqp_get(struct sofv_context *ctx, uint32_t qpn)
{
	return rqp_get(ctx, qpn, 0, 0);
}

struct sofv_rqp *sofv_rqp_get_xrc(struct sofv_context *ctx, uint32_t qpn, uint32_t srqn,
				  uint32_t src_qpn)
{
	return rqp_get(ctx, qpn, srqn, src_qpn);
}

/* Map the region with key for access on behalf of destination QP qpn. */
static struct sofv_rmr *rmr_open(struct sofv_context *ctx, uint32_t key, uint32_t qpn, uint32_t use)
{
	struct sof_open_mr_req req = {.key = key, .qpn = qpn, .use = use};
	struct sof_open_mr_rep *rep;
	int fds[SOF_MAX_MR_RUNS], nfds = SOF_MAX_MR_RUNS, err;
	struct sofv_rmr *m = NULL;
	bool rw, retried = false;
	uint64_t total = 0;
	uint8_t *p;

	rep = malloc(sizeof(*rep));
	if (!rep)
		return NULL;
again:
	/* EAGAIN: a region in place of another user's process, which the
	 * daemon asked to move it onto memfds (the one way this process may
	 * reach it): wait for the move, up to 2 s */
	for (int tries = 0;; tries++) {
		struct timespec ts = {0, 1000000};

		nfds = SOF_MAX_MR_RUNS;
		err = sofv_rpc(ctx, SOF_OP_OPEN_MR, &req, sizeof(req), NULL, 0, rep, sizeof(*rep),
			       fds, &nfds);
		if (err != -EAGAIN || tries >= 2000)
			break;
		nanosleep(&ts, NULL);
	}
	if (err) {
		sof_close_fds(fds, nfds);
		free(rep);
		return NULL;
	}
	if (rep->nruns == 0 && nfds == 2) {
		m = rmr_open_inplace(ctx, key, rep, fds);
		if (m && !retried && move_wait(m)) {
			rmr_put(m);
			m = NULL;
			sof_close_fds(fds, nfds);
			retried = true;
			goto again; /* moved: map it */
		}
		goto out;
	}
	if (rep->nruns == 0 || rep->nruns > SOF_MAX_MR_RUNS || (int)rep->nruns != nfds)
		goto out;
	for (uint32_t i = 0; i < rep->nruns; i++) {
		if (rep->runs[i].length % 4096 || rep->runs[i].offset % 4096 ||
		    rep->runs[i].length > SOFV_MAX_MR_SIZE)
			goto out;
		total += rep->runs[i].length;
	}
	/* a window (win_off) is a range of its region's pages */
	if (rep->page_off >= 4096 || rep->win_off > total - rep->page_off ||
	    rep->length > total - rep->page_off - rep->win_off)
		goto out;
	m = calloc(1, sizeof(*m));
	if (!m)
		goto out;
	atomic_init(&m->refs, 1);
	m->pmem_fd = -1;
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
	/* as the daemon decided which runs it hands out writable (OPEN_MR):
	 * an rkey through an XRC SRQ is a remote use too */
	if (use == SOF_MR_REMOTE || use == SOF_MR_XRC_REMOTE)
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
	m->base = (uint8_t *)m->map + rep->page_off + rep->win_off;
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
	if (m && !rmr_current(ctx, m)) {
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

struct sofv_rmr *sofv_qp_rmr_refill(struct sofv_qp *qp, int i, uint32_t key, uint32_t qpn,
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

void sofv_remote_cache_qp_release(struct sofv_qp *qp)
{
	rqp_put(qp->peer);
	qp->peer = NULL;
	for (int i = 0; i < 2; i++) {
		rmr_put(qp->rmr_last[i]);
		qp->rmr_last[i] = NULL;
	}
}

void sofv_remote_cache_clear(struct sofv_context *ctx)
{
	uint32_t pos = 0;
	void *v;

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
