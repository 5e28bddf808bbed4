/*
 * A QP in the error state (IBA 10.3.1): every outstanding send WQE and
 * posted receive completes with IBV_WC_WR_FLUSH_ERR, signaled or not, and
 * a QP on an SRQ reports its last WQE (11.6.3.3). The executor, the
 * progress thread, ibv_modify_qp and pollers bring QPs here.
 */
#include "same_host.h"

#include <alloca.h>
#include <string.h>

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
