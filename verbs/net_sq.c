/*
 * The network send queue: posting to the RoCEv2 transport.
 *
 * Work for another host is not executed here: the WQE is written into the
 * QP's network send queue (a memfd only this process and the daemon map,
 * common/sof_shm.h), whose requester turns it into RoCEv2 packets and
 * whose completer pushes the completion into the send CQ: the engine in
 * this process for a QP of its steering slot (tp_host.c, which runs at
 * once), else the daemon's, which the connection's doorbell eventfd wakes.
 * Which WQEs go there: every one of an RC/UC QP whose destination GID is
 * not on this host (qp->net, decided at modify time), and UD sends whose
 * address handle names another host or a multicast group (the daemon
 * sends it to the group and delivers it to the group's QPs on this host).
 */
#include "sofv.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

uint32_t sofv_net_outstanding(const struct sofv_qp *qp)
{
	return atomic_load_explicit(&qp->nsq->idx.tail, memory_order_relaxed) -
	       atomic_load_explicit(&qp->nsq->done, memory_order_acquire);
}

int sofv_net_post(struct sofv_qp *qp, const struct sofv_swqe *w)
{
	struct sofv_context *ctx = to_sctx(qp->qpx.qp_base.context);
	uint32_t tail = atomic_load_explicit(&qp->nsq->idx.tail, memory_order_relaxed);
	struct sof_nwqe *e;
	uint64_t one = 1;
	int db;

	/* what this list held back makes room first */
	if (sofv_net_outstanding(qp) >= qp->sq_size)
		sofv_net_post_end(qp);
	if (sofv_net_outstanding(qp) >= qp->sq_size)
		return ENOMEM;
	e = (struct sof_nwqe *)(qp->nsq_ring + (size_t)(tail & (qp->sq_size - 1)) * qp->nsq_stride);
	memset(e, 0, sizeof(*e));
	e->wr_id = w->wr_id;
	e->opcode = w->opcode;
	e->send_flags = w->send_flags;
	/* sq_sig_all is the daemon's to apply as well, but saying it here
	 * keeps the completer simple */
	if (qp->sq_sig_all)
		e->send_flags |= IBV_SEND_SIGNALED;
	e->imm_data = w->imm_data;
	e->rkey = w->rkey;
	e->remote_addr = w->remote_addr;
	e->compare_add = w->compare_add;
	e->swap = w->swap;
	if (w->send_flags & IBV_SEND_INLINE) {
		e->inline_len = w->inline_len;
		memcpy(e->sge, w->inline_buf, w->inline_len);
	} else {
		e->num_sge = w->num_sge;
		for (uint32_t i = 0; i < w->num_sge; i++) {
			e->sge[i].addr = w->sge[i].addr;
			e->sge[i].length = w->sge[i].length;
			e->sge[i].lkey = w->sge[i].lkey;
		}
	}
	/* XRC INI QP: the SRQ number its requests' XRCETH names */
	if (qp->qpx.qp_base.qp_type == IBV_QPT_XRC_SEND)
		e->remote_qpn = w->remote_qpn & 0xffffff;
	if (qp->qpx.qp_base.qp_type == IBV_QPT_UD && w->ah) {
		const struct ibv_global_route *g = &w->ah->attr.grh;

		e->remote_qpn = w->remote_qpn & 0xffffff;
		/* IBA 10.2.5: a Q_Key with the high bit set means "the QP's" */
		e->remote_qkey = (w->remote_qkey & 0x80000000u) ? qp->attr.qkey : w->remote_qkey;
		memcpy(e->dgid, g->dgid.raw, 16);
		e->flow_label = g->flow_label;
		e->sgid_index = g->sgid_index;
		e->hop_limit = g->hop_limit;
		e->traffic_class = g->traffic_class;
		/* sofib0: by the InfiniBand port, to the DLID */
		e->link = 0;
		if (to_sctx(qp->qpx.qp_base.context)->ib) {
			e->link = 1 | (w->ah->attr.is_global ? SOF_NWQE_GLOBAL : 0);
			e->dlid = w->ah->attr.dlid;
			e->sl = w->ah->attr.sl;
			e->path_bits = w->ah->attr.src_path_bits;
		}
	}
	atomic_store_explicit(&qp->nsq->idx.tail, tail + 1, memory_order_release);
	if (qp->eng) {
		/* one datagram of a UD list: the engine sends the list's
		 * datagrams in one pass at its end, so they leave in one
		 * system call (UDP GSO runs on the IB link), not one each */
		if (qp->post_list)
			qp->post_held = true;
		else
			sofv_engine_post(qp);
		return 0;
	}
	/* The doorbell only when the daemon had taken every WQE before this
	 * one: otherwise it has yet to take the last, and takes this one with
	 * it. Store tail, fence, read head here; store head, fence, read tail
	 * in the daemon (transport/requester.c): one of the two sees the
	 * other's store. A burst of posts rings once. */
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&qp->nsq->idx.head, memory_order_acquire) != tail)
		return 0;
	db = atomic_load_explicit(&ctx->doorbell, memory_order_relaxed);
	if (db >= 0 && write(db, &one, sizeof(one)) < 0) {
		/* the daemon is gone: the QP will see it as a fatal error */
	}
	return 0;
}

void sofv_net_post_end(struct sofv_qp *qp)
{
	if (!qp->post_held)
		return;
	qp->post_held = false;
	sofv_engine_post(qp);
}
