/*
 * Shared receive queues on the control path: ibv_create_srq(_ex),
 * ibv_modify_srq, ibv_query_srq, ibv_destroy_srq.
 *
 * An SRQ is a memfd segment (struct sof_srq_shm and a ring of receive WQEs)
 * that any executor delivering to one of its QPs consumes. The limit event
 * (IBA 10.2.9.2, 11.5.2.4) is armed by writing the limit into the segment;
 * the executor that takes the WQE dropping the queue below it disarms it and
 * has the daemon raise IBV_EVENT_SRQ_LIMIT_REACHED at the owner.
 */
#include "sofv.h"

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

SOFV_EXPORT int ibv_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr, int mask)
{
	struct sofv_srq *srq;

	if (!ibsrq || !attr || (mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT)))
		return EINVAL;
	srq = to_ssrq(ibsrq);
	/* Resizing is an optional capability (IBV_DEVICE_SRQ_RESIZE), not
	 * offered: the ring is shared with executors in other processes. */
	if (mask & IBV_SRQ_MAX_WR)
		return EINVAL;
	if (mask & IBV_SRQ_LIMIT) {
		if (attr->srq_limit > srq->max_wr)
			return EINVAL;
		pthread_spin_lock(&srq->lock);
		srq->limit = attr->srq_limit;
		atomic_store_explicit(&srq->shm->limit, attr->srq_limit, memory_order_release);
		pthread_spin_unlock(&srq->lock);
	}
	return 0;
}

SOFV_EXPORT int ibv_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct sofv_srq *srq;

	if (!ibsrq || !attr)
		return EINVAL;
	srq = to_ssrq(ibsrq);
	attr->max_wr = srq->max_wr;
	attr->max_sge = srq->max_sge;
	/* 0 once the limit event fired (the executor disarms it) */
	attr->srq_limit = atomic_load_explicit(&srq->shm->limit, memory_order_acquire);
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
	munmap(srq->shm, srq_seg_len(srq->size, srq->max_sge));
	pthread_spin_destroy(&srq->lock);
	pthread_mutex_destroy(&ibsrq->mutex);
	pthread_cond_destroy(&ibsrq->cond);
	free(srq);
	return 0;
}
