/*
 * Receive WQEs as the responder uses them: the next one taken from a
 * QP's ring or its SRQ (shared with the owner, which posts them, and with
 * every other process that takes from them: the head moves by
 * compare-and-swap), and its completion pushed into the QP's receive CQ.
 * The engine's responder (responder.c) and the daemon that runs it for a
 * stopped owner (takeover.c) take and complete them the same way.
 */
#include "tport.h"

int tp_rwqe_take(struct tp_qp *qp, uint64_t *wr_id, struct sof_sge *sge, uint32_t *nsge)
{
	struct sof_ring_idx *idx;
	const uint8_t *ring;
	uint32_t size, max_sge, stride, head, tail, spins = 0;
	struct sof_rwqe wq;

	if (qp->srq) {
		idx = &qp->srq->shm->rq;
		ring = (const uint8_t *)qp->srq->shm + SOF_SRQ_RQ_OFF;
		size = qp->srq->size;
		max_sge = qp->srq->max_sge;
	} else {
		idx = &qp->shm->rq;
		ring = (const uint8_t *)qp->shm + SOF_QP_RQ_OFF;
		size = qp->rq_size;
		max_sge = qp->rq_max_sge;
	}
	if (!size)
		return -EAGAIN;
	stride = SOF_RWQE_STRIDE(max_sge);
	for (;;) {
		const uint8_t *slot;

		head = atomic_load_explicit(&idx->head, memory_order_acquire);
		tail = atomic_load_explicit(&idx->tail, memory_order_acquire);
		if (head == tail || tail - head > size)
			return -EAGAIN;
		slot = ring + (size_t)(head & (size - 1)) * stride;
		memcpy(&wq, slot, sizeof(wq));
		if (wq.num_sge <= max_sge && wq.num_sge <= TP_MAX_SGE)
			memcpy(sge, slot + sizeof(wq), wq.num_sge * sizeof(struct sof_sge));
		if (atomic_compare_exchange_weak_explicit(
			&idx->head, &head, head + 1, memory_order_acq_rel, memory_order_relaxed))
			break;
		if (++spins > 1000)
			return -EAGAIN; /* contended by a misbehaving process */
	}
	*wr_id = wq.wr_id;
	*nsge = 0;
	if (qp->srq) {
		struct sof_srq_shm *s = qp->srq->shm;
		uint32_t limit = atomic_load_explicit(&s->limit, memory_order_relaxed);

		/* IBA 11.5.2.4: the limit event fires once when the SRQ
		 * drops below its armed limit */
		if (limit && tail - head - 1 < limit &&
		    atomic_compare_exchange_strong(&s->limit, &limit, 0))
			tp.host->srq_limit(qp->srq);
	}
	if (wq.num_sge > max_sge || wq.num_sge > TP_MAX_SGE)
		return -EINVAL; /* consumed: the caller completes it in error */
	*nsge = wq.num_sge;
	return 0;
}

void tp_recv_complete(struct tp_qp *qp, uint64_t wr_id, uint32_t src_qp, int status, uint8_t opcode,
		      uint32_t byte_len, const struct roce_hdr *h, uint32_t extra_flags)
{
	struct tp_cq *cq = qp->recv_cq;
	struct sof_cqe c;

	memset(&c, 0, sizeof(c));
	c.wr_id = wr_id;
	c.status = (uint8_t)status;
	c.opcode = opcode;
	c.byte_len = byte_len;
	c.qp_num = qp->qpn;
	c.src_qp = src_qp;
	c.wc_flags = (uint8_t)extra_flags;
	c.sl = (uint8_t)(extra_flags >> 8);		 /* a UD datagram's packet type (grh.c) */
	tp_ib_wc_lrh(&c.slid, &c.sl, &c.dlid_path_bits); /* by the IB port: its LRH's */
	if (roce_opinfo(h->opcode)->flags & ROCE_F_IMMDT) {
		c.imm_data = h->imm_be;
		c.wc_flags |= IBV_WC_WITH_IMM;
	}
	/* ibv_wc.invalidated_rkey shares imm_data, in host order */
	if (status == IBV_WC_SUCCESS && (roce_opinfo(h->opcode)->flags & ROCE_F_IETH)) {
		c.imm_data = h->inv_rkey;
		c.wc_flags |= IBV_WC_WITH_INV;
	}
	c.solicited = h->se;
	if (sof_cq_push_daemon(cq->shm, &c) == 1 && cq->evfd >= 0)
		tp.host->cq_kick(cq);
}
