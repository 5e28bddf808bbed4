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
	free(m);
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
struct sofv_rqp *sofv_rqp_get(struct sofv_context *ctx, uint32_t qpn)
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
	/* a window (win_off) is a range of its region's pages */
	if (rep->page_off >= 4096 || rep->win_off > total - rep->page_off ||
	    rep->length > total - rep->page_off - rep->win_off)
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
