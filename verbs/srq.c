/*
 * Shared receive queues on the control path: ibv_create_srq(_ex),
 * ibv_modify_srq, ibv_query_srq, ibv_destroy_srq.
 *
 * An SRQ is a memfd segment (struct sof_srq_shm and a ring of receive WQEs)
 * that any executor delivering to one of its QPs consumes. The limit event
 * (IBA 10.2.9.2, 11.5.2.4) is armed by writing the limit into the segment;
 * the executor that takes the WQE dropping the queue below it disarms it and
 * has the daemon raise IBV_EVENT_SRQ_LIMIT_REACHED at the owner.
 *
 * Resize (IBV_SRQ_MAX_WR, as rxe: grow or shrink, never below the WQEs
 * outstanding) never changes a ring others map: a new segment is made and
 * handed to the daemon (RESIZE_SRQ), which re-points its engine and
 * changes the SRQ's generation so that every executor maps it again; the
 * program's own engine is re-pointed under its lock. Then the WQEs left in
 * the old ring move over in order, all taken by one compare-and-swap of
 * the old head (the consumers' own): a WQE an executor took before it is
 * the oldest, its own (delivered once, in order), the rest land in the new
 * ring. A message that
 * comes in the instant between the swap and the end of the move (the old
 * ring drained, the new one still filling) may find no WQE, as on an
 * empty queue: RC answers RNR and retries it (nothing lost); UC and UD
 * drop it, as they drop any message that finds the queue empty.
 */
#include "sofv.h"

#include "tp.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static size_t srq_seg_len(uint32_t size, uint32_t max_sge)
{
	return SOF_SRQ_RQ_OFF + (size_t)size * SOF_RWQE_STRIDE(max_sge);
}

struct ibv_srq *sofv_create_srq_ex(struct ibv_context *ctx, struct ibv_srq_init_attr_ex *attr)
{
	struct sofv_context *s = to_sctx(ctx);
	struct sof_create_srq_req req;
	struct sof_srq_rep rep;
	struct sofv_srq *srq;
	size_t len;
	int err;
	void *p;

	bool xrc = (attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) && attr->srq_type == IBV_SRQT_XRC;

	if (attr->comp_mask & ~(uint32_t)(IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
					  IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ)) {
		err = EOPNOTSUPP;
		goto err_out;
	}
	if ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) && attr->srq_type != IBV_SRQT_BASIC &&
	    !xrc) {
		err = EOPNOTSUPP;
		goto err_out;
	}
	/* an XRC SRQ names its domain and the CQ its receives complete on */
	if (xrc && (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) || !attr->xrcd ||
		    attr->xrcd->context != ctx || !(attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ) ||
		    !attr->cq || attr->cq->context != ctx)) {
		err = EINVAL;
		goto err_out;
	}
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd || attr->pd->context != ctx ||
	    attr->attr.max_wr < 1 || attr->attr.max_wr > SOFV_MAX_SRQ_WR ||
	    attr->attr.max_sge > SOFV_MAX_SRQ_SGE) {
		err = EINVAL;
		goto err_out;
	}
	srq = calloc(1, sizeof(*srq));
	if (!srq) {
		err = ENOMEM;
		goto err_out;
	}
	srq->tsrq = calloc(1, sizeof(*srq->tsrq));
	if (!srq->tsrq) {
		err = ENOMEM;
		goto err_free;
	}
	srq->size = sof_roundup_pow2(attr->attr.max_wr);
	srq->max_wr = srq->size;
	srq->max_sge = attr->attr.max_sge ? attr->attr.max_sge : 1;
	srq->stride = SOF_RWQE_STRIDE(srq->max_sge);
	srq->pd = to_spd(attr->pd);
	len = srq_seg_len(srq->size, srq->max_sge);
	srq->memfd = sof_memfd_create("softofed-srq", len);
	if (srq->memfd < 0) {
		err = -srq->memfd;
		goto err_free;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, srq->memfd, 0);
	if (p == MAP_FAILED) {
		err = errno;
		goto err_close;
	}
	srq->shm = p;
	srq->ring = (uint8_t *)p + SOF_SRQ_RQ_OFF;

	memset(&req, 0, sizeof(req));
	req.pd = srq->pd->handle;
	req.size = srq->size;
	req.max_sge = srq->max_sge;
	if (xrc) {
		req.xrcd = to_sxrcd(attr->xrcd)->handle;
		req.cq = to_scq(attr->cq)->handle;
	}
	err = -sofv_rpc(s, SOF_OP_CREATE_SRQ, &req, sizeof(req), &srq->memfd, 1, &rep, sizeof(rep),
			NULL, NULL);
	if (err)
		goto err_unmap;
	srq->handle = rep.srq;
	srq->srqn = xrc ? rep.srqn & 0xffffff : 0;
	*srq->tsrq = (struct tp_srq){
	    .shm = srq->shm, .size = srq->size, .max_sge = srq->max_sge, .handle = srq->handle};
	/* mapped for good; the daemon hands the descriptor to executors */
	close(srq->memfd);
	srq->memfd = -1;
	pthread_spin_init(&srq->lock, PTHREAD_PROCESS_PRIVATE);
	srq->ibsrq.context = ctx;
	srq->ibsrq.srq_context = attr->srq_context;
	srq->ibsrq.pd = attr->pd;
	srq->ibsrq.handle = srq->handle;
	srq->ibsrq.events_completed = 0;
	pthread_mutex_init(&srq->ibsrq.mutex, NULL);
	pthread_cond_init(&srq->ibsrq.cond, NULL);
	/* what was granted (ibv_create_srq(3)); srq_limit is not armed here */
	attr->attr.max_wr = srq->max_wr;
	attr->attr.max_sge = srq->max_sge;

	pthread_rwlock_wrlock(&s->obj_lock);
	err = -sof_hmap_put(&s->srqs, srq->handle, srq);
	pthread_rwlock_unlock(&s->obj_lock);
	if (err) {
		errno = err; /* the daemon releases it with the context */
		return NULL;
	}
	return &srq->ibsrq;

err_unmap:
	munmap(p, len);
err_close:
	close(srq->memfd);
err_free:
	free(srq->tsrq);
	free(srq);
err_out:
	errno = err;
	return NULL;
}

SOFV_EXPORT struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_init_attr_ex a;
	struct ibv_srq *srq;

	if (!pd || !attr) {
		errno = EINVAL;
		return NULL;
	}
	memset(&a, 0, sizeof(a));
	a.srq_context = attr->srq_context;
	a.attr = attr->attr;
	a.comp_mask = IBV_SRQ_INIT_ATTR_PD;
	a.pd = pd;
	srq = sofv_create_srq_ex(pd->context, &a);
	if (srq)
		attr->attr = a.attr;
	return srq;
}

/* Move what the consumers have not taken from the old ring (oshm, oring)
 * to the start of the new one, in order; returns how many moved. All of
 * them are copied, then taken by one compare-and-swap of the old head to
 * its tail: an executor that still takes from the old ring (it checked its
 * mapping before the swap) either wins the oldest WQE first, in order, or
 * finds the ring empty. Taking them one by one let it win a WQE behind
 * some already moved, so a message overtook those of the new ring. The
 * caller holds srq->lock: nothing is posted meanwhile. */
static uint32_t srq_move_wqes(struct sofv_srq *srq, struct sof_srq_shm *oshm, const uint8_t *oring,
			      uint32_t osize)
{
	uint32_t tail = atomic_load_explicit(&oshm->rq.tail, memory_order_relaxed), n;
	uint32_t head = atomic_load_explicit(&oshm->rq.head, memory_order_acquire);

	for (;;) {
		n = tail - head;
		/* copied before the take: once the head moves, the entries
		 * are the new ring's, and published only then */
		for (uint32_t i = 0; i < n; i++)
			memcpy(srq->ring + (size_t)i * srq->stride,
			       oring + (size_t)((head + i) & (osize - 1)) * srq->stride,
			       srq->stride);
		if (!n || atomic_compare_exchange_strong_explicit(&oshm->rq.head, &head, tail,
								  memory_order_acq_rel,
								  memory_order_acquire))
			break;
		/* an executor took the oldest: head is its successor now */
	}
	atomic_store_explicit(&srq->shm->rq.tail, n, memory_order_release);
	return n;
}

/* ibv_modify_srq with IBV_SRQ_MAX_WR (the file's comment). 0 or an
 * errno. Caller holds srq->lock (posts wait; a resize is rare). */
static int srq_resize(struct sofv_srq *srq, uint32_t max_wr)
{
	struct sofv_context *s = to_sctx(srq->ibsrq.context);
	uint32_t size = sof_roundup_pow2(max_wr), osize = srq->size, head, tail;
	struct sof_srq_shm *oshm = srq->shm;
	uint8_t *oring = srq->ring;
	struct sof_resize_srq_req req;
	uint32_t limit;
	size_t len;
	int fd, err;
	void *p;

	head = atomic_load_explicit(&oshm->rq.head, memory_order_acquire);
	tail = atomic_load_explicit(&oshm->rq.tail, memory_order_relaxed);
	/* the WQEs outstanding must fit the max_wr asked for (rxe compares
	 * with its rounded-up capacity: a little laxer) */
	if (tail - head > max_wr)
		return EINVAL;
	if (size == osize)
		return 0;
	len = srq_seg_len(size, srq->max_sge);
	fd = sof_memfd_create("softofed-srq", len);
	if (fd < 0)
		return -fd;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		err = errno;
		close(fd);
		return err;
	}
	memset(&req, 0, sizeof(req));
	req.srq = srq->handle;
	req.size = size;
	err = -sofv_rpc(s, SOF_OP_RESIZE_SRQ, &req, sizeof(req), &fd, 1, NULL, 0, NULL, NULL);
	close(fd);
	if (err) {
		munmap(p, len);
		return err;
	}
	/* the daemon's engine and every executor now take from p */
	sofv_engine_lock(s);
	srq->shm = p;
	srq->ring = (uint8_t *)p + SOF_SRQ_RQ_OFF;
	srq->size = size;
	srq->max_wr = size;
	srq->head_cache = 0;
	srq->tsrq->shm = p;
	srq->tsrq->size = size;
	sofv_engine_unlock(s);
	/* the limit moves with the WQEs, armed once they are all there: a
	 * take from the half-filled new ring is no drop below it */
	limit = atomic_exchange_explicit(&oshm->limit, 0, memory_order_acq_rel);
	srq_move_wqes(srq, oshm, oring, osize);
	atomic_store_explicit(&srq->shm->limit, limit, memory_order_release);
	munmap(oshm, srq_seg_len(osize, srq->max_sge));
	return 0;
}

SOFV_EXPORT int ibv_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr, int mask)
{
	struct sofv_srq *srq;
	uint32_t max_wr, limit;
	int err = 0;

	if (!ibsrq || !attr || (mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT)))
		return EINVAL;
	srq = to_ssrq(ibsrq);
	pthread_spin_lock(&srq->lock);
	max_wr = (mask & IBV_SRQ_MAX_WR) ? attr->max_wr : srq->max_wr;
	limit = (mask & IBV_SRQ_LIMIT)
		    ? attr->srq_limit
		    : atomic_load_explicit(&srq->shm->limit, memory_order_acquire);
	/* rxe's checks: a size the device offers, not below the armed limit
	 * (or the one given with it); a limit within the size */
	if (max_wr < 1 || max_wr > SOFV_MAX_SRQ_WR || limit > max_wr)
		err = EINVAL;
	if (!err && (mask & IBV_SRQ_MAX_WR))
		err = srq_resize(srq, max_wr);
	if (!err && (mask & IBV_SRQ_LIMIT)) {
		srq->limit = attr->srq_limit;
		atomic_store_explicit(&srq->shm->limit, attr->srq_limit, memory_order_release);
	}
	pthread_spin_unlock(&srq->lock);
	return err;
}

SOFV_EXPORT int ibv_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct sofv_srq *srq;

	if (!ibsrq || !attr)
		return EINVAL;
	srq = to_ssrq(ibsrq);
	pthread_spin_lock(&srq->lock); /* a resize may swap the segment */
	attr->max_wr = srq->max_wr;
	attr->max_sge = srq->max_sge;
	/* 0 once the limit event fired (the executor disarms it) */
	attr->srq_limit = atomic_load_explicit(&srq->shm->limit, memory_order_acquire);
	pthread_spin_unlock(&srq->lock);
	return 0;
}

SOFV_EXPORT int ibv_destroy_srq(struct ibv_srq *ibsrq)
{
	struct sofv_context *s;
	struct sofv_srq *srq;
	struct sof_srq_req req;
	int err;

	if (!ibsrq)
		return EINVAL;
	srq = to_ssrq(ibsrq);
	s = to_sctx(ibsrq->context);
	memset(&req, 0, sizeof(req));
	req.srq = srq->handle;
	err = -sofv_rpc(s, SOF_OP_DESTROY_SRQ, &req, sizeof(req), NULL, 0, NULL, 0, NULL, NULL);
	if (err && err != ENOTCONN && err != EPIPE && err != ECONNRESET)
		return err; /* EBUSY while QPs use it */
	pthread_rwlock_wrlock(&s->obj_lock);
	sof_hmap_del(&s->srqs, srq->handle);
	pthread_rwlock_unlock(&s->obj_lock);
	/* As with the kernel: wait until every async event handed out about
	 * the SRQ was acked (ibv_get_async_event(3)). */
	pthread_mutex_lock(&ibsrq->mutex);
	while (ibsrq->events_completed != srq->async_got)
		pthread_cond_wait(&ibsrq->cond, &ibsrq->mutex);
	pthread_mutex_unlock(&ibsrq->mutex);
	munmap(srq->shm, srq_seg_len(srq->size, srq->max_sge));
	pthread_spin_destroy(&srq->lock);
	pthread_mutex_destroy(&ibsrq->mutex);
	pthread_cond_destroy(&ibsrq->cond);
	free(srq->tsrq);
	free(srq);
	return 0;
}
