/*
 * What the same-host executors of other processes ask the daemon: a
 * destination QP's rings (OPEN_QP), a region behind a key (OPEN_MR), and
 * the asynchronous events their work raises at an object's owner
 * (ASYNC_NOTIFY). These are the only ops that reach other connections'
 * objects. OPEN_MR answers -EACCES for every refusal, so that keys cannot
 * be probed by error code, and hands out read-only descriptors when the
 * region grants no write access for the use asked for.
 */
#include "sofd.h"

#include <errno.h>
#include <infiniband/verbs.h>
#include <stddef.h>
#include <string.h>

/* Reply payloads of this file's ops. */
static union {
	struct sof_open_qp_rep open_qp;
	struct sof_open_mr_rep open_mr;
} ebuf;

int sofd_op_open_qp(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct sof_open_qp_req *req = rq->data; /* zero-padded (qbuf) */
	struct sof_open_qp_rep *r = &ebuf.open_qp;
	struct sofd_qp *qp = sof_hmap_get(&sofd.qps, req->qpn);

	rp->data = r;
	if (!qp)
		return -ENOENT;
	if (qp->type == IBV_QPT_XRC_RECV)
		return sofd_xrc_open_tgt(rq->c, qp, req, rp, r);
	memset(r, 0, sizeof(*r));
	r->qpn = qp->qpn;
	r->qp_type = qp->type;
	r->pd = qp->pd->handle;
	r->owner_ctx = qp->owner->ctx_id;
	r->rq_size = qp->rq_size;
	r->rq_max_sge = qp->rq_max_sge;
	r->recv_cq = qp->recv_cq->handle;
	r->slot = qp->slot;
	r->gen = qp->gen;
	sofd_rep_fd(rp, qp->memfd, false);
	sofd_rep_fd(rp, qp->recv_cq->memfd, false);
	if (qp->srq) {
		r->has_srq = 1;
		r->srq = qp->srq->handle;
		r->srq_size = qp->srq->size;
		r->srq_max_sge = qp->srq->max_sge;
		r->srq_slot = qp->srq->slot;
		r->srq_gen = qp->srq->gen;
		sofd_rep_fd(rp, qp->srq->memfd, false);
	}
	if (qp->recv_cq->evfd >= 0) {
		r->cq_has_channel = 1;
		sofd_rep_fd(rp, qp->recv_cq->evfd, false);
	}
	rp->len = sizeof(*r);
	return 0;
}

int sofd_op_open_mr(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct sof_open_mr_req *req = rq->data;
	struct sof_open_mr_rep *r = &ebuf.open_mr;
	struct sofd_qp *qp = sof_hmap_get(&sofd.qps, req->qpn);
	struct sofd_key_view v;
	struct sofd_mr *mr;
	uint32_t wr;
	bool ro;

	rp->data = r;
	if (req->use < SOF_MR_REMOTE || req->use > SOF_MR_XRC_LOCAL)
		return -EINVAL;
	if (sofd_key_resolve(req->key, req->use == SOF_MR_LOCAL || req->use == SOF_MR_XRC_LOCAL,
			     &v))
		return -EACCES;
	mr = v.mr;
	if (req->use >= SOF_MR_XRC_REMOTE) {
		/* qpn is an XRC SRQ number: its PD (and owner) decide */
		if (sofd_xrc_mr_check(mr, v.pd, req->qpn, req->use))
			return -EACCES;
	} else {
		if (!qp)
			return -EACCES;
		/* A receive WQE taken from an SRQ may use a region of the SRQ's PD. */
		if (v.pd != qp->pd && !(req->use == SOF_MR_LOCAL && qp->srq && v.pd == qp->srq->pd))
			return -EACCES;
		/* a type 2 window serves only the QP it is bound to */
		if (v.qpn && v.qpn != qp->qpn)
			return -EACCES;
		if (req->use == SOF_MR_LOCAL && mr->owner != qp->owner)
			return -EACCES;
	}
	if (req->access & ~v.access)
		return -EACCES;
	wr = req->use == SOF_MR_REMOTE || req->use == SOF_MR_XRC_REMOTE
		 ? IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC
		 : IBV_ACCESS_LOCAL_WRITE;
	ro = !(v.access & wr);
	memset(r, 0, offsetof(struct sof_open_mr_rep, runs));
	r->iova = v.iova;
	r->length = v.length;
	r->win_off = v.off;
	r->page_off = mr->page_off;
	r->access = v.access;
	r->pd = v.pd->handle;
	r->slot = v.slot;
	r->gen = v.gen;
	r->nruns = mr->nruns;
	if (!mr->nruns) {
		/* in place: the owner's whole address space, for its own user
		 * only, who could read it through ptrace anyway; the region's
		 * address in runs[0] */
		if (!mr->inplace || mr->mem->pmem_fd < 0)
			return -EACCES;
		/* another user: only through memfds; the owner moves private
		 * pages when asked (EAGAIN: ask again), not ODP, shared or
		 * hugetlb ones (SHARE_MR without runs said so) */
		if (rq->c->uid != mr->mem->uid) {
			if (mr->stays || (mr->access & IBV_ACCESS_ON_DEMAND))
				return -EACCES;
			sofd_mem_ask_move(mr);
			return -EAGAIN;
		}
		memset(r->runs, 0, sizeof(r->runs));
		/* a window: its own first byte and length */
		r->runs[0] = (struct sof_mr_run){.offset = mr->addr + v.off, .length = v.length};
		sofd_rep_fd(rp, mr->mem->pmem_fd, false);
		sofd_rep_fd(rp, mr->mem->fence_fd, false);
		rp->len = sizeof(*r);
		return 0;
	}
	for (uint32_t i = 0; i < mr->nruns; i++) {
		r->runs[i] = mr->runs[i];
		if (ro) {
			int fd = sof_fd_reopen_ro(mr->fds[i]);

			if (fd < 0)
				return fd; /* the caller closes what we opened */
			sofd_rep_fd(rp, fd, true);
		} else {
			sofd_rep_fd(rp, mr->fds[i], false);
		}
	}
	memset(&r->runs[mr->nruns], 0, (SOF_MAX_MR_RUNS - mr->nruns) * sizeof(r->runs[0]));
	rp->len = sizeof(*r);
	return 0;
}

int sofd_op_async_notify(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct sof_notify_req *req = rq->data;
	struct sofd_conn *owner;
	uint32_t ev;

	(void)rp;
	switch (req->kind) {
	case SOF_NOTIFY_SRQ_LIMIT: {
		struct sofd_srq *srq = sof_hmap_get(&sofd.srqs, req->handle);

		if (!srq)
			return -ENOENT;
		owner = srq->owner;
		ev = IBV_EVENT_SRQ_LIMIT_REACHED;
		break;
	}
	case SOF_NOTIFY_CQ_ERR: {
		struct sofd_cq *cq = sof_hmap_get(&sofd.cqs, req->handle);

		if (!cq)
			return -ENOENT;
		owner = cq->owner;
		ev = IBV_EVENT_CQ_ERR;
		break;
	}
	case SOF_NOTIFY_QP_FATAL:
	case SOF_NOTIFY_QP_REQ_ERR:
	case SOF_NOTIFY_QP_ACCESS_ERR:
	case SOF_NOTIFY_QP_LAST_WQE: {
		static const uint32_t qp_ev[] = {
		    [SOF_NOTIFY_QP_FATAL] = IBV_EVENT_QP_FATAL,
		    [SOF_NOTIFY_QP_REQ_ERR] = IBV_EVENT_QP_REQ_ERR,
		    [SOF_NOTIFY_QP_ACCESS_ERR] = IBV_EVENT_QP_ACCESS_ERR,
		    [SOF_NOTIFY_QP_LAST_WQE] = IBV_EVENT_QP_LAST_WQE_REACHED,
		};
		struct sofd_qp *qp = sof_hmap_get(&sofd.qps, req->handle);

		if (!qp)
			return -ENOENT;
		owner = qp->owner;
		ev = qp_ev[req->kind];
		break;
	}
	default:
		return -EINVAL;
	}
	sofd_async_send(owner, ev, req->handle);
	return 0;
}
