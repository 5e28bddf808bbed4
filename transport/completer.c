/*
 * The completer (IBA 9.7.5.1, 9.7.5.2): what comes back to a requester.
 * ACKs retire every WQE whose packets they cover (they coalesce: an ACK of
 * PSN n acknowledges everything up to n); an RNR NAK makes the requester
 * wait the responder's timer and send again, rnr_retry times (7: for ever);
 * a sequence-error NAK makes it go back to the PSN named; the other NAKs
 * fail the WQE with the matching status and move the QP to ERROR. READ
 * responses are written into the WQE's local buffers in PSN order; an
 * atomic ACK brings the original value. Completions go into the send CQ in
 * WQE order; a failed WQE always completes, signaled or not, and after it
 * every WQE still queued is flushed (IBA 10.3.1).
 */
#include "tport.h"

#include "sof_wr.h"

static void push_cqe(struct tp_cq *cq, const struct sof_cqe *c)
{
	if (sof_cq_push_daemon(cq->shm, c) == 1 && cq->evfd >= 0)
		tp.host->cq_kick(cq);
}

/* Tell the owner of cq to look at its QPs: set attention and, when the CQ
 * is armed, consume the arm and fire its completion channel. */
static void cq_attention(struct tp_cq *cq)
{
	/* (an XRC TGT QP has no CQ of its own) */
	if (cq && cq->shm && sof_cq_attention(cq->shm) && cq->evfd >= 0)
		tp.host->cq_kick(cq);
}

void tp_comp_wqe(struct sof_tqp *t, int status)
{
	struct tp_qp *qp = t->qp;
	struct tp_swqe *w = &t->wq[t->wq_head & (qp->sq_size - 1)];

	/* only a WQE that is there: past wq_tail, tp_flush would go round
	 * the whole index space before it met wq_tail again */
	if (t->wq_head == t->wq_tail)
		return;
	if (sof_wr_is_rd_atomic(w->opcode) && w->state != TP_W_NEW && t->rd_out)
		t->rd_out--;
	t->wq_head++;
	if ((int32_t)(t->wq_send - t->wq_head) < 0)
		t->wq_send = t->wq_head;
	/* the slot is free before the completion is seen: a program that
	 * polls it may post again at once, with a queue of one */
	atomic_store_explicit(&qp->nsq->done, t->wq_head, memory_order_release);
	if (status != IBV_WC_SUCCESS || (w->send_flags & IBV_SEND_SIGNALED)) {
		struct sof_cqe c;

		memset(&c, 0, sizeof(c));
		c.wr_id = w->wr_id;
		c.status = (uint8_t)status;
		c.opcode = (uint8_t)sof_wc_opcode(w->opcode);
		c.byte_len = status == IBV_WC_SUCCESS ? (uint32_t)w->len : 0;
		c.qp_num = qp->qpn;
		push_cqe(qp->send_cq, &c);
	}
}

void tp_flush(struct sof_tqp *t)
{
	struct tp_qp *qp = t->qp;

	/* (an XRC TGT QP, without a send CQ, has no send queue to flush) */
	for (; qp->send_cq;) {
		uint32_t tail = atomic_load_explicit(&qp->nsq->idx.tail, memory_order_acquire);

		while (t->wq_head != t->wq_tail) {
			t->wq[t->wq_head & (qp->sq_size - 1)].send_flags = 0;
			tp_comp_wqe(t, IBV_WC_WR_FLUSH_ERR);
		}
		if (tail == t->wq_tail || tail - t->wq_tail > qp->sq_size)
			break;
		/* posted but not taken: they flush too, with their wr_id */
		while (t->wq_tail != tail) {
			const struct sof_nwqe *e =
			    (const struct sof_nwqe *)((const uint8_t *)qp->nsq + SOF_NSQ_RING_OFF +
						      (size_t)(t->wq_tail & (qp->sq_size - 1)) *
							  qp->sq_stride);
			struct tp_swqe *w = &t->wq[t->wq_tail & (qp->sq_size - 1)];

			memset(w, 0, sizeof(*w));
			w->wr_id = e->wr_id;
			w->opcode = e->opcode;
			t->wq_tail++;
		}
		atomic_store_explicit(&qp->nsq->idx.head, t->wq_tail, memory_order_release);
		/* before tail is read again: see tp_req_progress */
		atomic_thread_fence(memory_order_seq_cst);
	}
	t->wq_send = t->wq_head;
	t->rd_out = 0;
	t->timer_ns = t->rnr_ns = t->probe_ns = 0;
}

void tp_qp_error(struct sof_tqp *t, uint32_t event)
{
	struct tp_qp *qp = t->qp;

	atomic_store_explicit(&qp->shm->state, IBV_QPS_ERR, memory_order_release);
	t->state = IBV_QPS_ERR;
	t->in_msg = 0;
	t->rcv_active = false;
	tp_resp_ooo_clear(t);
	tp_flush(t);
	tp_qp_end(qp, event);
}

void tp_qp_end(struct tp_qp *qp, uint32_t event)
{
	atomic_store_explicit(&qp->shm->state, IBV_QPS_ERR, memory_order_release);
	/* the owner flushes its receive queue and sees the new state */
	cq_attention(qp->recv_cq);
	if (qp->send_cq != qp->recv_cq)
		cq_attention(qp->send_cq);
	/* the host's record of the state, and the owner's event */
	tp.host->qp_error(qp, event);
}

/* The requester made progress: its retry counters start over and the
 * transport timer runs from now (IBA 9.7.6.1.3). */
static void progress_made(struct sof_tqp *t)
{
	t->retry_left = t->retry_cnt;
	t->rnr_left = t->rnr_retry;
	tp_req_arm(t);
	t->stream_ns = 0;
}

/* Whether the rest of READ w may be asked for again now (and note that
 * it is): once per answer, until a response of it comes in turn; and
 * not again within a smoothed round trip, before which no response of
 * that request can come. On a network that reorders, a response or an
 * ACK that overtook the responses before it is no loss (they come
 * next); asked again for each, the responder sent a whole new answer of
 * the rest of a large READ per packet overtaken: a flood that queued the
 * next READ's answer behind it until that READ's retries ran out. The
 * local ACK timer (and the probe) cover a request lost again. */
static bool reread_ok(struct sof_tqp *t, struct tp_swqe *w)
{
	uint64_t now = sof_now_ns();

	if (w->reread || now - t->reread_ns < t->srtt_ns)
		return false;
	w->reread = true;
	t->reread_ns = now;
	return true;
}

/* Every packet up to and including PSN a is acknowledged. Retires the WQEs
 * it covers. A READ or atomic covered by it whose response is missing had
 * its response lost: it is asked again (IBA 9.7.5.1.2's implied NAK).
 * Returns false for an ACK of nothing we sent. */
static bool ack_upto(struct sof_tqp *t, uint32_t a)
{
	uint32_t mask = t->qp->sq_size - 1, upto = (a + 1) & ROCE_PSN_MASK;

	/* a must lie in [una - 1, highest PSN sent] */
	if (roce_psn_diff(a, (t->max_psn - 1) & ROCE_PSN_MASK) > 0 ||
	    roce_psn_diff(a, (t->una_psn - 1) & ROCE_PSN_MASK) < 0)
		return false;
	/* it covers packets we had gone back to send again: skip them */
	if (roce_psn_diff((a + 1) & ROCE_PSN_MASK, t->psn) > 0)
		tp_req_rewind(t, (a + 1) & ROCE_PSN_MASK);
	while (t->wq_head != t->wq_tail) {
		struct tp_swqe *w = &t->wq[t->wq_head & mask];
		uint32_t last = (w->first_psn + w->npkts - 1) & ROCE_PSN_MASK;

		if (w->state == TP_W_NEW || roce_psn_diff(a, w->first_psn) < 0)
			break;
		if (sof_wr_is_rd_atomic(w->opcode)) {
			/* covered, but its answer never came: it is asked
			 * again (a READ: reread_ok), and nothing from its
			 * missing answer on counts as acknowledged */
			upto = (w->first_psn + (uint32_t)(w->read_got / t->mtu)) & ROCE_PSN_MASK;
			if (w->opcode != IBV_WR_RDMA_READ || reread_ok(t, w)) {
				tp_count(SOF_CNT_retransmits, 1);
				tp_req_rewind(t, upto);
			}
			break;
		}
		if (roce_psn_diff(last, a) > 0 || w->state != TP_W_SENT)
			break;
		tp_comp_wqe(t, IBV_WC_SUCCESS);
	}
	if (roce_psn_diff(upto, t->una_psn) > 0) {
		tp_req_acked(t, upto);
		progress_made(t);
	}
	return true;
}

/* The oldest WQE, when it is the READ or atomic that PSN p answers. */
static struct tp_swqe *answered(struct sof_tqp *t, uint32_t p, bool read)
{
	struct tp_swqe *w;

	/* the response acknowledges everything before its request */
	while (t->wq_head != t->wq_send) {
		w = &t->wq[t->wq_head & (t->qp->sq_size - 1)];
		if (sof_wr_is_rd_atomic(w->opcode) || w->state != TP_W_SENT ||
		    roce_psn_diff((w->first_psn + w->npkts - 1) & ROCE_PSN_MASK, p) >= 0)
			break;
		tp_comp_wqe(t, IBV_WC_SUCCESS);
	}
	if (t->wq_head == t->wq_send)
		return NULL;
	w = &t->wq[t->wq_head & (t->qp->sq_size - 1)];
	/* an ATOMIC WRITE is answered by a zero-length read response */
	if (w->state == TP_W_NEW ||
	    (w->opcode == IBV_WR_RDMA_READ || w->opcode == IBV_WR_ATOMIC_WRITE) != read ||
	    !sof_wr_is_rd_atomic(w->opcode))
		return NULL;
	if (roce_psn_diff(p, w->first_psn) < 0 || roce_psn_diff(p, w->first_psn) >= (int)w->npkts)
		return NULL;
	return w;
}

/* A READ response that makes no progress (the answer to a request asked
 * again, a response ahead of a lost one, or one of a later READ while an
 * earlier one waits for its rest) still shows that the responder is
 * answering, in order, requests that this QP sent before the one it
 * waits for: that answer comes behind them. So the transport timer's
 * deadline runs from it, as from progress (IBA 9.7.6.1.3), but the retry
 * count stays: only progress gives the retries back. On a loaded machine
 * a late responder serves each READ asked again in full, a stream that
 * can outlast the timeout: each timeout then asks for the READ once
 * more, a longer stream behind which the answer waits, and retry_cnt can
 * run out (IBV_WC_RETRY_EXC_ERR) with the responder answering all along.
 * A peer that keeps answering
 * without progress puts the timer off for at most STREAM_TIMEOUTS
 * timeouts from the first such response; its timeouts then come as usual. */
#define STREAM_TIMEOUTS 8u

static void read_stream_alive(struct sof_tqp *t, uint32_t psn)
{
	uint64_t to = sof_ack_timeout_ns(t->timeout), now;
	int32_t d = roce_psn_diff(psn, t->max_psn);

	if (!t->timer_ns || t->psn == t->una_psn || d >= 0 || d <= -(int32_t)TP_DUP_WINDOW)
		return;
	now = sof_now_ns();
	if (!t->stream_ns)
		t->stream_ns = now;
	if (now - t->stream_ns < STREAM_TIMEOUTS * to && now + to > t->timer_ns)
		t->timer_ns = now + to;
}

/* A response to a request sent after the oldest READ, while that READ
 * still misses responses: a responder answers in PSN order (IBA 9.5,
 * 9.7.5.1.3), so the missing ones were lost, as for a response ahead of
 * its turn within the READ; its rest is asked for again (reread_ok).
 * Without this a lost tail of one READ with another READ behind it waited
 * for the transport timer: the later READ's responses, and a probe's, are
 * dropped while the older one is incomplete. */
static void later_response(struct sof_tqp *t, uint32_t psn)
{
	struct tp_swqe *w;
	uint32_t expect;

	if (t->wq_head == t->wq_send)
		return;
	w = &t->wq[t->wq_head & (t->qp->sq_size - 1)];
	if (w->opcode != IBV_WR_RDMA_READ || w->state == TP_W_NEW ||
	    roce_psn_diff(psn, (w->first_psn + w->npkts) & ROCE_PSN_MASK) < 0 ||
	    roce_psn_diff(psn, t->psn) >= 0 || !reread_ok(t, w))
		return;
	expect = (w->first_psn + (uint32_t)(w->read_got / t->mtu)) & ROCE_PSN_MASK;
	tp_trace("qp %06x READ %06x: response %06x of a later request, rest from %06x", t->qp->qpn,
		 w->first_psn, psn, expect);
	tp_count(SOF_CNT_retransmits, 1);
	tp_req_rewind(t, expect);
	tp_req_progress(t);
}

static void read_response(struct sof_tqp *t, const struct roce_hdr *h, const uint8_t *payload,
			  uint32_t paylen)
{
	uint8_t op = h->opcode & ~ROCE_SVC_MASK;
	struct tp_swqe *w = answered(t, h->psn, true);
	uint32_t expect;
	bool last = op == ROCE_READ_RESP_LAST || op == ROCE_READ_RESP_ONLY;
	int err;

	if (!w) {
		read_stream_alive(t, h->psn);
		later_response(t, h->psn);
		tp_drop(SOF_DROP_psn);
		return;
	}
	expect = (w->first_psn + (uint32_t)(w->read_got / t->mtu)) & ROCE_PSN_MASK;
	if (h->psn != expect) {
		read_stream_alive(t, h->psn);
		/* a response was lost (or overtaken): ask for the rest
		 * again (reread_ok); the later responses of the same answer
		 * find it asked, as rxe's started_retry */
		if (roce_psn_diff(h->psn, expect) > 0 && reread_ok(t, w)) {
			tp_count(SOF_CNT_retransmits, 1);
			tp_req_rewind(t, expect);
			tp_req_progress(t);
		}
		tp_drop(SOF_DROP_psn);
		return;
	}
	w->reread = false;
	/* IBA 9.7.5.1.3: every response but the last carries a full MTU */
	if ((!last && (paylen != t->mtu || w->read_got + paylen >= w->len)) ||
	    (last && w->read_got + paylen != w->len)) {
		tp_drop(SOF_DROP_payload);
		return;
	}
	err = tp_sgl_copy(t->qp, w->sge, w->num_sge, w->read_got, (uint8_t *)payload, paylen, true);
	if (err) {
		tp_comp_wqe(t, IBV_WC_LOC_PROT_ERR);
		tp_qp_error(t, 0);
		return;
	}
	w->read_got += paylen;
	tp_req_acked(t, (h->psn + 1) & ROCE_PSN_MASK);
	progress_made(t);
	if (last) {
		tp_comp_wqe(t, IBV_WC_SUCCESS);
		progress_made(t);
		tp_req_progress(t);
	}
}

static void atomic_ack(struct sof_tqp *t, const struct roce_hdr *h)
{
	struct tp_swqe *w = answered(t, h->psn, false);
	uint64_t orig = h->orig;

	if (!w) {
		tp_drop(SOF_DROP_psn);
		return;
	}
	if (tp_sgl_copy(t->qp, w->sge, w->num_sge, 0, (uint8_t *)&orig, 8, true)) {
		tp_comp_wqe(t, IBV_WC_LOC_PROT_ERR);
		tp_qp_error(t, 0);
		return;
	}
	tp_req_acked(t, (h->psn + 1) & ROCE_PSN_MASK);
	tp_comp_wqe(t, IBV_WC_SUCCESS);
	progress_made(t);
	tp_req_progress(t);
}

/* How long a repeated sequence-error NAK is taken for a copy of the last
 * one. Our responder NAKs the same PSN again only when it sees the
 * requester go back (responder.c), so a NAK that the resend drew, because
 * the resent packet was lost again, comes back a round trip after the
 * resend, at the soonest; a copy (the network duplicated a packet or the
 * NAK) comes about when the first did. Taking a copy for new costs one
 * needless go-back, missing a new one a whole transport timeout (67 ms at
 * timeout 14): so half the least round trip seen lately, at least 5 µs;
 * before any round trip was measured, an eighth of the local ACK timeout,
 * at least 100 µs. */
static uint64_t nak_holdoff_ns(const struct sof_tqp *t)
{
	uint64_t to = sof_ack_timeout_ns(t->timeout), h = to / 8 > 100000 ? to / 8 : 100000;

	if (t->mrtt_ns && t->mrtt_ns / 2 < h)
		h = t->mrtt_ns / 2 > 5000 ? t->mrtt_ns / 2 : 5000;
	return h;
}

static int nak_status(uint8_t code)
{
	switch (code) {
	case ROCE_NAK_INV_REQ:
		return IBV_WC_REM_INV_REQ_ERR;
	case ROCE_NAK_REM_ACCESS:
		return IBV_WC_REM_ACCESS_ERR;
	case ROCE_NAK_INV_RD_REQ:
		return IBV_WC_REM_INV_RD_REQ_ERR;
	default:
		return IBV_WC_REM_OP_ERR;
	}
}

void tp_comp_packet(struct sof_tqp *t, const struct roce_hdr *h, const uint8_t *payload,
		    uint32_t paylen)
{
	uint8_t op = h->opcode & ~ROCE_SVC_MASK;
	uint32_t before = t->una_psn;

	/* the peer answers: a fresh QP's probe is no longer needed (sack.c) */
	t->sack_seen = true;
	if (op == ROCE_READ_RESP_FIRST || op == ROCE_READ_RESP_MIDDLE ||
	    op == ROCE_READ_RESP_LAST || op == ROCE_READ_RESP_ONLY) {
		read_response(t, h, payload, paylen);
		return;
	}
	if (op == ROCE_ATOMIC_ACK) {
		atomic_ack(t, h);
		return;
	}
	tp_trace("qp %06x aeth %02x psn %06x: una %06x psn %06x max %06x head %u send %u tail %u",
		 t->qp->qpn, h->syndrome, h->psn, t->una_psn, t->psn, t->max_psn, t->wq_head,
		 t->wq_send, t->wq_tail);
	/* ROCE_ACK: an ACK or a NAK, IBA 9.7.5.2 */
	switch (h->syndrome & ROCE_AETH_TYPE_MASK) {
	case ROCE_AETH_ACK:
		/* the responder speaks the extension (sack.c) */
		if (h->ext && tp_sack_on && t->qp->type == IBV_QPT_RC && !t->sack_ok)
			tp_sack_begin(t);
		if (!ack_upto(t, h->psn))
			tp_drop(SOF_DROP_psn);
		else if (t->sack_ok)
			tp_sack_input(t, h->psn, payload, paylen);
		tp_req_progress(t);
		return;
	case ROCE_AETH_RNR_NAK: {
		uint64_t us = sof_rnr_timer_us(h->syndrome & 0x1f);

		tp_count(SOF_CNT_rnr_nak_rcvd, 1);
		if (!ack_upto(t, (h->psn - 1) & ROCE_PSN_MASK))
			return;
		if (t->psn == t->una_psn)
			return;
		/* IBA 9.7.5.2.8: rnr_retry 7 retries for ever */
		if (!t->rnr_left) {
			tp_comp_wqe(t, IBV_WC_RNR_RETRY_EXC_ERR);
			tp_qp_error(t, 0);
			return;
		}
		if (t->rnr_left != 7)
			t->rnr_left--;
		t->rnr_ns = sof_now_ns() + us * 1000;
		tp_timer_watch(t);
		t->timer_ns = t->probe_ns = 0;
		return;
	}
	case ROCE_AETH_NAK:
		tp_count(SOF_CNT_nak_rcvd, 1);
		if (!ack_upto(t, (h->psn - 1) & ROCE_PSN_MASK))
			return;
		/* no PSN unacknowledged: it NAKs nothing we sent, and must
		 * neither use up retries nor fail a WQE. (A fatal NAK whose
		 * implied ACK covered a READ still unanswered finds t->psn
		 * rewound to una by ack_upto, with requests outstanding
		 * beyond: it still ends the QP.) */
		if (t->psn == t->una_psn &&
		    ((h->syndrome & 0x1f) == ROCE_NAK_PSN_SEQ_ERR || t->max_psn == t->una_psn)) {
			tp_drop(SOF_DROP_psn);
			tp_req_progress(t); /* ack_upto may have gone back */
			return;
		}
		if ((h->syndrome & 0x1f) == ROCE_NAK_PSN_SEQ_ERR) {
			uint64_t now = sof_now_ns();

			/* IBA 9.7.5.2.1: go back to the PSN the responder
			 * expects. A NAK repeating the last one before any
			 * progress, sooner than a resend could have drawn it,
			 * is a duplicate or was overtaken: going back again
			 * would only resend the same window. Timeouts, not
			 * NAKs, count against retry_cnt. */
			if (h->psn == t->nak_psn && t->una_psn == before &&
			    t->una_psn == t->nak_una && now - t->nak_ns < nak_holdoff_ns(t)) {
				tp_req_progress(t); /* ack_upto may have gone back */
				return;
			}
			t->nak_psn = h->psn;
			t->nak_una = t->una_psn;
			t->nak_ns = now;
			tp_req_loss(t, false);
			tp_count(SOF_CNT_retransmits, 1);
			/* from the NAK's PSN, or from a READ or atomic before
			 * it whose answer is missing (ack_upto stopped there) */
			tp_req_rewind(t, t->una_psn);
			tp_req_progress(t);
			return;
		}
		if (t->wq_head != t->wq_tail &&
		    (t->wq[t->wq_head & (t->qp->sq_size - 1)].state != TP_W_NEW ||
		     t->wq[t->wq_head & (t->qp->sq_size - 1)].sent_once)) {
			tp_comp_wqe(t, nak_status(h->syndrome & 0x1f));
			tp_qp_error(t, 0);
		}
		return;
	default:
		tp_drop(SOF_DROP_opcode);
		return;
	}
}
