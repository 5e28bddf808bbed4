/*
 * The receive classifier, as Linux rxe's rxe_recv: every packet the port
 * parsed and checked (ICRC included) is matched to its destination QP and
 * validated against it — the QP exists and is not going away, the
 * transport type matches the opcode, P_Key, state, Q_Key of a UD QP, the
 * source address of a connected QP (IBA 9.6.1.5) — and handed to the
 * completer (responses), the responder (requests) or a registered hook
 * (QP0/QP1 to the MAD layer, the multicast QPN to mcast.c); what fails is
 * dropped and counted (sof_proto.h's drop counters). It also keeps the
 * list of QPs owing a coalesced ACK, sent at the end of each batch.
 */
#include "tp_ib.h"
#include "tport.h"

#include "sof_wr.h"

/* ---- receiving ------------------------------------------------------------------ */

/* P_Key check of a datagram to a multicast group (IBA 10.9.3): the
 * InfiniBand port checked it against its whole table (iblink.c); the
 * RoCE port's table is the default P_Key alone. */
static bool port_pkey_ok(uint16_t pkey)
{
	uint16_t slid, dlid;
	uint8_t sl;

	return tp_ib_rx_lrh(&slid, &dlid, &sl) || tp_pkey_match(0xffff, pkey);
}

/* IBA 10.9.3: a packet to a QP carries a P_Key matching the QP's own
 * (its index in the port's table); a mismatch by the InfiniBand port is
 * one of the port's P_Key violations (PortInfo.P_KeyViolations). */
static bool qp_pkey_ok(const struct sof_tqp *t, uint16_t pkey)
{
	uint16_t slid, dlid;
	uint8_t sl;

	if (tp_pkey_match(tp_qp_pkey(t), pkey))
		return true;
	if (tp_ib_rx_lrh(&slid, &dlid, &sl))
		tp_ib_pkey_violation();
	return false;
}

void tp_recv_hook(unsigned which, tp_recv_fn fn)
{
	if (which < SOF_ARRAY_SIZE(tp.hooks))
		tp.hooks[which] = fn;
}

static void recv_packet(const struct roce_hdr *h, const uint8_t *payload, uint32_t paylen,
			const struct roce_addr *a)
{
	const struct roce_opinfo *oi = roce_opinfo(h->opcode);
	struct tp_qp *qp;
	struct sof_tqp *t;
	uint32_t svc;

	if (h->dqpn <= TP_HOOK_QP1 && tp.hooks[h->dqpn]) {
		tp.hooks[h->dqpn](h, payload, paylen, a, true);
		return;
	}
	/* A datagram to a group names the multicast QPN, and only such a
	 * datagram may: both or neither. (A host without multicast leaves
	 * these to the QP look-up, which finds no such QP.) */
	if (tp.hooks[TP_HOOK_MCAST] && (h->dqpn == SOF_MCAST_QPN || sof_gid_is_mcast(a->dst))) {
		if (h->dqpn != SOF_MCAST_QPN || !sof_gid_is_mcast(a->dst)) {
			tp_drop(SOF_DROP_qpn);
			return;
		}
		if ((h->opcode & ROCE_SVC_MASK) != ROCE_SVC_UD) {
			tp_drop(SOF_DROP_qp_type);
			return;
		}
		if (!port_pkey_ok(h->pkey)) {
			tp_drop(SOF_DROP_pkey);
			return;
		}
		/* sent by this host and looped back: its QPs got it when it
		 * was sent */
		if (tp.host->gid_local(a->src)) {
			tp_drop(SOF_DROP_src_addr);
			return;
		}
		tp.hooks[TP_HOOK_MCAST](h, payload, paylen, a, true);
		return;
	}
	qp = tp.host->qp_find(h->dqpn);
	if (!qp || !qp->t || qp->dying) {
		if (!qp && tp_resp_lingering(h->dqpn, h, a))
			return;
		/* a QP of a program that does not run (takeover.c) */
		if (qp && !qp->t && !qp->dying && tp_takeover_packet(qp, h, payload, paylen, a))
			return;
		/* a flow socket took a packet for another process */
		if (!qp)
			tp.flow_foreign |= tp.rx_flow;
		tp_drop(SOF_DROP_qpn);
		return;
	}
	t = qp->t;
	svc = h->opcode & ROCE_SVC_MASK;
	if ((svc == ROCE_SVC_RC && qp->type != IBV_QPT_RC) ||
	    (svc == ROCE_SVC_UC && qp->type != IBV_QPT_UC) ||
	    /* XRC: requests to a TGT QP, responses to an INI QP */
	    (svc == ROCE_SVC_XRC &&
	     qp->type != ((oi->flags & ROCE_F_REQ) ? IBV_QPT_XRC_RECV : IBV_QPT_XRC_SEND)) ||
	    (svc == ROCE_SVC_UD && qp->type != IBV_QPT_UD)) {
		tp_drop(SOF_DROP_qp_type);
		return;
	}
	if (!qp_pkey_ok(t, h->pkey)) {
		tp_drop(SOF_DROP_pkey);
		return;
	}
	t->state = atomic_load_explicit(&qp->shm->state, memory_order_acquire);
	if (qp->type == IBV_QPT_UD) {
		if (!sof_qp_state_receives(t->state)) {
			tp_drop(SOF_DROP_qp_state);
			return;
		}
		/* IBA 10.2.5: the DETH Q_Key must match the QP's */
		if (h->qkey != t->qkey) {
			tp_drop(SOF_DROP_qkey);
			return;
		}
		tp_resp_ud(t, h, payload, paylen, a);
		return;
	}
	/* connected: only the peer, from its address (IBA 9.6.1.5 checks
	 * the source of a connected QP's packets) */
	if (!t->net) {
		tp_drop(SOF_DROP_qp_state);
		return;
	}
	if (memcmp(a->src, t->path.dgid, 16)) {
		tp_drop(SOF_DROP_src_addr);
		return;
	}
	if (tp.host->flow_seen && !tp.rx_flow)
		tp.host->flow_seen(a);
	if (oi->flags & ROCE_F_RESP) {
		/* responses go to a requester: RTS, SQD or SQE */
		if (t->state != IBV_QPS_RTS && t->state != IBV_QPS_SQD && t->state != IBV_QPS_SQE) {
			tp_drop(SOF_DROP_qp_state);
			return;
		}
		tp_comp_packet(t, h, payload, paylen);
	} else {
		if (!sof_qp_state_receives(t->state)) {
			tp_drop(SOF_DROP_qp_state);
			return;
		}
		/* a host whose owner may not run counts on it (tp_onesided) */
		tp.onesided += !!(oi->flags & (ROCE_F_WRITE | ROCE_F_READ | ROCE_F_ATOMIC));
		tp.requests++;
		/* a request seen before (a resend, a tail-loss probe): its
		 * requester is waiting for this very ACK, past a deadline */
		t->ack_now |= roce_psn_diff(h->psn, t->epsn) < 0;
		tp_resp_packet(t, h, payload, paylen, a);
	}
}

void tp_ack_due(struct sof_tqp *t)
{
	t->ack_pending = true;
	if (sof_list_empty(&t->ack_link))
		sof_list_add(&tp.acks, &t->ack_link);
}

/* One packet's handling reads the clock once (tp_now). */
void tp_recv(const struct roce_hdr *h, const uint8_t *payload, uint32_t paylen,
	     const struct roce_addr *a)
{
	tp_now_enter();
	recv_packet(h, payload, paylen, a);
	tp_now_leave();
}

void tp_input_end(void)
{
	if (tp.defer_acks) {
		/* a host may hold ACKs for its owner's next post; a SACK is
		 * a loss signal the requester waits for (a resend, or the
		 * answer to its tail-loss probe), and so is the ACK of a
		 * duplicate: they leave now */
		for (struct sof_link *l = tp.acks.next, *n; l != &tp.acks; l = n) {
			struct sof_tqp *t = sof_container_of(l, struct sof_tqp, ack_link);

			n = l->next;
			if ((t->nooo && t->sack_peer) || t->ack_now) {
				sof_list_del(&t->ack_link);
				t->ack_now = false;
				tp_resp_flush_ack(t);
			}
		}
		return;
	}
	while (!sof_list_empty(&tp.acks)) {
		struct sof_tqp *t = sof_container_of(tp.acks.next, struct sof_tqp, ack_link);

		sof_list_del(&t->ack_link);
		t->ack_now = false;
		tp_resp_flush_ack(t);
	}
}
