/*
 * The requester (IBA 9.7.4, 9.7.6): takes send WQEs from a QP's network
 * send queue, copies and validates them, and turns each into packets —
 * SEND and RDMA WRITE segmented by the path MTU, one READ request whose
 * responses occupy as many PSNs as they have packets, one atomic request.
 * RC keeps at most a congestion window of packets unacknowledged (AIMD,
 * at most TP_WINDOW) and at most
 * max_rd_atomic READs and atomics outstanding, honours IBV_SEND_FENCE, and
 * goes back N (tp_req_rewind) after a NAK or when the local ACK timer
 * (4.096 µs × 2^timeout, IBA 9.7.6.1.3) expires, retry_cnt times at most.
 * UC and UD complete a WQE as soon as its packets are sent; a UD datagram
 * to a multicast group (the multicast QPN and a multicast GID) is also
 * delivered to the QPs of this host attached to the group (mcast.c).
 */
#include "tp_ib.h"
#include "tport.h"

#include "sof_wr.h"

/* Marks of WQEs that fail when they are the oldest: malformed is
 * UINT32_MAX, failed a local check while sent is UINT32_MAX - 1. */
#define OP_TOO_LONG (UINT32_MAX - 2)

/* Copy ring entry idx into t->wq and validate it. Returns false when it is
 * malformed (the owner's library never writes such a thing, so the QP's
 * owner is misbehaving: the WQE fails with a local QP operation error). */
static bool take(struct sof_tqp *t, uint32_t idx)
{
	struct tp_qp *qp = t->qp;
	const uint8_t *slot = (const uint8_t *)qp->nsq + SOF_NSQ_RING_OFF +
			      (size_t)(idx & (qp->sq_size - 1)) * qp->sq_stride;
	struct tp_swqe *w = &t->wq[idx & (qp->sq_size - 1)];
	struct sof_nwqe e;

	memcpy(&e, slot, sizeof(e));
	/* all but the SGEs, of which num_sge are copied below (the array is
	 * most of the entry: zeroing it cost a 2-byte SEND a tenth of its
	 * instructions) */
	memset(w, 0, offsetof(struct tp_swqe, sge));
	memset(&w->inl, 0, sizeof(*w) - offsetof(struct tp_swqe, inl));
	w->wr_id = e.wr_id;
	w->opcode = e.opcode;
	w->send_flags = e.send_flags;
	w->imm_be = e.imm_data;
	w->rkey = e.rkey;
	w->remote_addr = e.remote_addr;
	w->compare_add = e.compare_add;
	w->swap = e.swap;
	w->state = TP_W_NEW;
	if (qp->type == IBV_QPT_XRC_SEND)
		w->xrcsrq = e.remote_qpn & ROCE_QPN_MASK;
	if (!sof_wr_opcode_allowed(qp->type, e.opcode))
		return false;
	if (e.send_flags & IBV_SEND_INLINE) {
		if (e.inline_len > qp->sq_max_inline || sof_wr_is_rd_atomic(e.opcode))
			return false;
		w->inl = slot + sizeof(struct sof_nwqe);
		w->len = e.inline_len;
	} else {
		if (e.num_sge > qp->sq_max_sge)
			return false;
		w->num_sge = e.num_sge;
		memcpy(w->sge, slot + sizeof(struct sof_nwqe), e.num_sge * sizeof(struct sof_sge));
		for (uint32_t i = 0; i < e.num_sge; i++)
			w->len += w->sge[i].length;
	}
	if (w->len > (1ull << 31))
		return false;
	/* a message may not take more than a quarter of the PSN space
	 * (IBA 9.7.1: the duplicate window); at path MTU 256 that is 1 GiB */
	if (qp->type != IBV_QPT_UD && t->mtu && w->len > (uint64_t)t->mtu * TP_MAX_MSG_PKTS)
		w->opcode = OP_TOO_LONG;
	if ((e.opcode == IBV_WR_ATOMIC_CMP_AND_SWP || e.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) &&
	    w->len != 8)
		return false;
	if (qp->type == IBV_QPT_UD && (e.link & 0x7f) == TP_LINK_IB) {
		w->remote_qpn = e.remote_qpn & ROCE_QPN_MASK;
		w->remote_qkey = e.remote_qkey;
		return tp_ib_ud_path(&w->ud_path, e.dgid, e.dlid, e.sl, e.path_bits,
				     (e.link & SOF_NWQE_GLOBAL) != 0, e.traffic_class, e.hop_limit,
				     e.flow_label);
	}
	if (qp->type == IBV_QPT_UD) {
		const struct sof_gid_entry *sg = tp.host->gid(e.sgid_index);

		w->remote_qpn = e.remote_qpn & ROCE_QPN_MASK;
		w->remote_qkey = e.remote_qkey;
		if (!sg || sof_gid_is_v4(sg->gid) != sof_gid_is_v4(e.dgid))
			return false;
		memcpy(w->ud_path.sgid, sg->gid, 16);
		memcpy(w->ud_path.dgid, e.dgid, 16);
		w->ud_path.ifindex = sg->ifindex;
		w->ud_path.tclass = e.traffic_class;
		w->ud_path.hop_limit = e.hop_limit;
		w->ud_path.flow_label = e.flow_label;
	}
	return true;
}

/* ---- building packets ---------------------------------------------------------- */

struct gather {
	struct sof_tqp *t;
	const struct tp_swqe *w;
	uint64_t off;
};

static int gather_wqe(void *arg, uint8_t *dst, uint32_t len)
{
	struct gather *g = arg;

	if (g->w->inl) {
		memcpy(dst, g->w->inl + g->off, len);
		return 0;
	}
	return tp_sgl_copy(g->t->qp, g->w->sge, g->w->num_sge, g->off, dst, len, false);
}

/* The opcode of the packet of w that starts at byte off (IBA 9.2 table 35:
 * FIRST / MIDDLE / LAST / ONLY, with immediate on the last). */
static uint8_t seg_opcode(const struct sof_tqp *t, const struct tp_swqe *w, uint64_t off,
			  uint32_t n)
{
	bool first = off == 0, last = off + n >= w->len;
	bool imm = w->opcode == IBV_WR_SEND_WITH_IMM || w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
	bool inv = w->opcode == IBV_WR_SEND_WITH_INV; /* RC only (sof_wr_opcode_allowed) */
	uint8_t svc = tp_svc(t->qp->type);
	uint8_t op;

	if (w->opcode == IBV_WR_SEND || w->opcode == IBV_WR_SEND_WITH_IMM || inv) {
		if (first && last)
			op = inv ? ROCE_SEND_ONLY_INV : imm ? ROCE_SEND_ONLY_IMM : ROCE_SEND_ONLY;
		else if (first)
			op = ROCE_SEND_FIRST;
		else if (last)
			op = inv ? ROCE_SEND_LAST_INV : imm ? ROCE_SEND_LAST_IMM : ROCE_SEND_LAST;
		else
			op = ROCE_SEND_MIDDLE;
	} else {
		if (first && last)
			op = imm ? ROCE_WRITE_ONLY_IMM : ROCE_WRITE_ONLY;
		else if (first)
			op = ROCE_WRITE_FIRST;
		else if (last)
			op = imm ? ROCE_WRITE_LAST_IMM : ROCE_WRITE_LAST;
		else
			op = ROCE_WRITE_MIDDLE;
	}
	return (uint8_t)(svc | op);
}

static void bth(const struct sof_tqp *t, struct roce_hdr *h, uint8_t opcode, uint32_t psn)
{
	tp_now_fresh(); /* a packet of its own: its own time */
	memset(h, 0, sizeof(*h));
	h->opcode = opcode;
	h->pkey = tp_qp_pkey(t);
	h->dqpn = t->dqpn;
	h->psn = psn & ROCE_PSN_MASK;
	h->ext = tp_sack_on && t->qp->type == IBV_QPT_RC; /* sack.c */
	tp_sack_sent(t, h->psn);
}

/* Send the next packet of w (RC/UC). Returns 0, 1 when w is fully sent,
 * or -EACCES when its local SGEs fail their checks. */
static int send_segment(struct sof_tqp *t, struct tp_swqe *w)
{
	struct roce_hdr h;
	struct gather g = {t, w, t->send_off};
	uint64_t left = w->len - t->send_off;
	uint32_t n = left > t->mtu ? t->mtu : (uint32_t)left, flight;
	bool last;
	int err;

	bth(t, &h, seg_opcode(t, w, t->send_off, n), t->psn);
	h.xrcsrq = w->xrcsrq;
	last = t->send_off + n >= w->len;
	if (t->send_off == 0 &&
	    (w->opcode == IBV_WR_RDMA_WRITE || w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM)) {
		h.va = w->remote_addr;
		h.rkey = w->rkey;
		h.dmalen = (uint32_t)w->len;
	}
	if (last) {
		h.imm_be = w->imm_be;
		/* IETH (IBA 9.3.7): the library keeps the rkey in imm_data */
		h.inv_rkey = w->imm_be;
		h.se = (w->send_flags & IBV_SEND_SOLICITED) != 0;
	}
	/* an ACK at least every TP_ACKREQ_EVERY packets, and for the one that
	 * fills the window: a standard responder (rxe) acknowledges only
	 * what asks for it, and a small window (slow start) waits for it */
	flight = (t->psn - t->una_psn) & ROCE_PSN_MASK;
	h.ackreq =
	    tp_reliable(t->qp->type) &&
	    (last || flight % TP_ACKREQ_EVERY == TP_ACKREQ_EVERY - 1 || flight + 1 >= t->cwnd);
	err = -E2BIG;
	if (tp_reliable(t->qp->type) && !w->inl && n) {
		/* RC: the payload by reference, since the WQE (and so its
		 * buffer) completes only when acknowledged, long after the
		 * packet left; UC completes at once, so it copies */
		struct iovec pay[TP_TX_REFS];

		err = tp_sgl_map(t->qp, w->sge, w->num_sge, t->send_off, n, pay, TP_TX_REFS);
		if (err >= 0)
			err = tp_send_ref(&t->path, &h, pay, (uint32_t)err);
	}
	if (err == -E2BIG)
		err = tp_send(&t->path, &h, n, gather_wqe, &g);
	if (err == -EACCES)
		return err;
	t->psn = (t->psn + 1) & ROCE_PSN_MASK;
	t->send_off += n;
	return last ? 1 : 0;
}

/* A READ request for bytes [off, len) of w, with the PSN of the response
 * that carries byte off (IBA 9.7.5.1.3: the responder answers it from the
 * request's VA and length, first response at the request's PSN; a retry
 * starts at the first response missing, its VA and length moved by what
 * came, C9-xx's READ retry). */
static void read_request(struct sof_tqp *t, const struct tp_swqe *w, uint64_t off, uint32_t psn)
{
	struct roce_hdr h;
	uint64_t left = w->len - off;

	bth(t, &h, tp_svc(t->qp->type) | ROCE_READ_REQ, psn);
	h.xrcsrq = w->xrcsrq;
	h.ackreq = true;
	h.va = w->remote_addr + off;
	h.rkey = w->rkey;
	h.dmalen = (uint32_t)left;
	tp_send(&t->path, &h, 0, NULL, NULL);
	/* its responses' PSNs left with it (sack.c) */
	for (uint32_t i = 1; i < tp_npkts(t, left) && i < TP_OOO_SLOTS; i++)
		tp_sack_sent(t, (psn + i) & ROCE_PSN_MASK);
}

/* A READ request for what is still missing of w, at the current PSN. */
static void send_read(struct sof_tqp *t, struct tp_swqe *w)
{
	read_request(t, w, w->read_got, t->psn);
	t->psn = (t->psn + tp_npkts(t, w->len - w->read_got)) & ROCE_PSN_MASK;
}

static void send_atomic(struct sof_tqp *t, struct tp_swqe *w)
{
	struct roce_hdr h;

	bth(t, &h,
	    tp_svc(t->qp->type) |
		(w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ? ROCE_CMP_SWAP : ROCE_FETCH_ADD),
	    t->psn);
	h.xrcsrq = w->xrcsrq;
	h.ackreq = true;
	h.va = w->remote_addr;
	h.rkey = w->rkey;
	h.swap_add = w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ? w->swap : w->compare_add;
	h.compare = w->compare_add;
	tp_send(&t->path, &h, 0, NULL, NULL);
	t->psn = (t->psn + 1) & ROCE_PSN_MASK;
}

static int gather_buf(void *arg, uint8_t *dst, uint32_t len)
{
	memcpy(dst, arg, len);
	return 0;
}

/* ATOMIC WRITE (IBA 1.5): RETH and the 8 bytes, as the consumer gave them
 * (ibv_wr_atomic_write keeps them in compare_add) */
static void send_atomic_write(struct sof_tqp *t, struct tp_swqe *w)
{
	struct roce_hdr h;

	bth(t, &h, ROCE_SVC_RC | ROCE_ATOMIC_WRITE, t->psn);
	h.ackreq = true;
	h.va = w->remote_addr;
	h.rkey = w->rkey;
	h.dmalen = 8;
	tp_send(&t->path, &h, 8, gather_buf, &w->compare_add);
	t->psn = (t->psn + 1) & ROCE_PSN_MASK;
}

/* A datagram to a group: gathered once, so that the wire and the QPs
 * attached on this host get the same bytes; sent once to the group's
 * address, then delivered here. 0 or -EACCES (the local SGEs). */
static int send_mcast(struct sof_tqp *t, struct tp_swqe *w, struct roce_hdr *h)
{
	static uint8_t data[4096];
	struct gather g = {t, w, 0};
	struct roce_addr a;
	int err = 0;

	if (w->len)
		err = gather_wqe(&g, data, (uint32_t)w->len);
	if (err)
		return err;
	/* lost on the wire (no route, no interface) is still delivered here */
	(void)tp_send(&w->ud_path, h, (uint32_t)w->len, gather_buf, data);
	memset(&a, 0, sizeof(a));
	memcpy(a.src, w->ud_path.sgid, 16);
	memcpy(a.dst, w->ud_path.dgid, 16);
	a.sport = w->ud_path.sport;
	a.dport = ROCE_UDP_PORT;
	/* this host's QPs in the group get it here (no socket loops it back) */
	if (tp.hooks[TP_HOOK_MCAST])
		tp.hooks[TP_HOOK_MCAST](h, data, (uint32_t)w->len, &a, false);
	return 0;
}

/* UD: one datagram, complete at once (IBA 9.8.3: unreliable). */
static void send_ud(struct sof_tqp *t, struct tp_swqe *w)
{
	struct gather g = {t, w, 0};
	struct roce_hdr h;
	int err;

	/* IBA 9.8.3: a datagram fits the MTU of the port it leaves by (the
	 * InfiniBand port's for a datagram by LID, not the RoCE port's) */
	if (w->len > 4096 ||
	    w->len > (128u << (w->ud_path.link == TP_LINK_IB ? tp_ib_attr()->active_mtu
							     : tp.host->active_mtu()))) {
		tp_comp_wqe(t, IBV_WC_LOC_LEN_ERR);
		return;
	}
	memset(&h, 0, sizeof(h));
	h.opcode = w->opcode == IBV_WR_SEND_WITH_IMM ? ROCE_UD_SEND_ONLY_IMM : ROCE_UD_SEND_ONLY;
	h.pkey = tp_qp_pkey(t);
	h.dqpn = w->remote_qpn;
	h.psn = t->psn;
	h.se = (w->send_flags & IBV_SEND_SOLICITED) != 0;
	h.imm_be = w->imm_be;
	h.qkey = w->remote_qkey;
	h.sqpn = t->qp->qpn;
	w->ud_path.sport = tp_flow_port(!sof_gid_is_v4(w->ud_path.dgid), t->qp->qpn, w->remote_qpn);
	t->psn = (t->psn + 1) & ROCE_PSN_MASK;
	if (w->remote_qpn == SOF_MCAST_QPN && sof_gid_is_mcast(w->ud_path.dgid))
		err = send_mcast(t, w, &h);
	else
		err = tp_send(&w->ud_path, &h, (uint32_t)w->len, gather_wqe, &g);
	tp_comp_wqe(t, err == -EACCES ? IBV_WC_LOC_PROT_ERR : IBV_WC_SUCCESS);
	if (err == -EACCES)
		tp_qp_error(t, 0);
}

/* A RAW_PACKET QP's send: the gathered bytes are the whole Ethernet frame. */
static void send_raw(struct sof_tqp *t, struct tp_swqe *w)
{
	static uint8_t frame[TP_RAW_MAX_FRAME];
	struct gather g = {t, w, 0};
	int err;

	if (w->len > sizeof(frame) || w->len < 14) {
		tp_comp_wqe(t, IBV_WC_LOC_LEN_ERR);
		return;
	}
	err = gather_wqe(&g, frame, (uint32_t)w->len);
	if (!err)
		err = tp.host->raw_xmit ? tp.host->raw_xmit(t->qp, frame, (uint32_t)w->len)
					: -EOPNOTSUPP;
	if (err == -EACCES || err == -EFAULT) {
		tp_comp_wqe(t, IBV_WC_LOC_PROT_ERR);
		tp_qp_error(t, 0);
		return;
	}
	/* a frame the link refuses is lost, as on a NIC */
	tp_comp_wqe(t, IBV_WC_SUCCESS);
}

/* The early go-back comes this long after the last progress: 16 of the
 * least or 4 of the smoothed round trips, at least PROBE_MIN_NS, and only
 * when that is under a quarter of the transport timeout. It is armed only
 * within PROBE_AFTER_LOSS_NS of a loss: on this kind of machine an ACK can
 * be late by a scheduler's time slice (a peer's thread that must run to
 * answer shares its CPU with a busy-polling one), and on a link that loses
 * nothing a go-back then only resends what arrives anyway. */
#define PROBE_RTTS 16
#define PROBE_SRTTS 4
#define PROBE_MIN_NS 500000u
#define PROBE_AFTER_LOSS_NS 1000000000u

void tp_req_arm(struct sof_tqp *t)
{
	uint64_t to = sof_ack_timeout_ns(t->timeout), now, p;

	t->timer_ns = t->probe_ns = 0;
	if (!tp_reliable(t->qp->type) || !to || t->psn == t->una_psn)
		return;
	now = tp_now();
	t->timer_ns = now + to;
	if (t->sack_ok || (tp_sack_on && !t->sack_seen)) {
		t->sack_tlps = 0;
		t->sack_deferred = false;
		t->probe_ns = tp_sack_probe_ns(t, now, to);
	} else if (t->mrtt_ns && t->loss_ns && now - t->loss_ns < PROBE_AFTER_LOSS_NS) {
		p = t->mrtt_ns * PROBE_RTTS > PROBE_MIN_NS ? t->mrtt_ns * PROBE_RTTS : PROBE_MIN_NS;
		if (p < t->srtt_ns * PROBE_SRTTS)
			p = t->srtt_ns * PROBE_SRTTS;
		if (p < to / 4)
			t->probe_ns = now + p;
	}
	tp_timer_watch(t);
}

/* Bytes a packet occupies on the wire beyond its payload: Ethernet with
 * preamble and gap, IPv4, UDP, BTH, the largest extended header, ICRC. */
#define PACE_OVERHEAD 96u

/* IBV_QP_RATE_LIMIT: whether the next packet may leave now; if not, the
 * timer resumes the send loop when it may. */
static bool pace_ok(struct sof_tqp *t)
{
	uint64_t now = sof_now_ns();

	if (now >= t->pace_ns)
		return true;
	t->pace_wait_ns = t->pace_ns;
	tp_timer_watch(t);
	return false;
}

/* A packet of payload bytes leaves: the next one waits its time at the
 * rate (kbit/s: 8e6 / rate ns per byte). Time the send loop lost waking
 * late is made up by up to PACE_BURST full packets sent back to back, so
 * the rate holds however coarse the timer is. */
#define PACE_BURST 8u

static void pace_charge(struct sof_tqp *t, uint64_t payload)
{
	uint64_t now, ns, burst, from;

	if (!t->rate_kbps)
		return;
	now = sof_now_ns();
	ns = (payload + PACE_OVERHEAD) * 8000000ull / t->rate_kbps;
	burst = (uint64_t)PACE_BURST * (t->mtu + PACE_OVERHEAD) * 8000000ull / t->rate_kbps;
	from = now > burst ? now - burst : 0;
	t->pace_ns = (t->pace_ns > from ? t->pace_ns : from) + ns;
}

static void req_progress(struct sof_tqp *t)
{
	struct tp_qp *qp = t->qp;
	uint32_t tail = atomic_load_explicit(&qp->nsq->idx.tail, memory_order_acquire);
	uint32_t rd_max = t->max_rd_atomic ? t->max_rd_atomic : 1;
	bool was_idle = t->psn == t->una_psn;
	uint32_t old_max = t->max_psn;

	/* an XRC TGT QP has no send CQ and sends no requests: whatever its
	 * owner writes into its send queue stays there */
	if (!qp->send_cq)
		return;
	/* take what was posted: at most a queue's worth beyond the oldest */
	for (;;) {
		while (t->wq_tail != tail && t->wq_tail - t->wq_head < qp->sq_size) {
			bool ok = take(t, t->wq_tail);

			t->wq_tail++;
			atomic_store_explicit(&qp->nsq->idx.head, t->wq_tail, memory_order_release);
			if (!ok) {
				/* everything before it still completes first */
				t->wq[(t->wq_tail - 1) & (qp->sq_size - 1)].state = TP_W_SENT;
				t->wq[(t->wq_tail - 1) & (qp->sq_size - 1)].opcode = UINT32_MAX;
			}
		}
		/* The owner rings the doorbell only when it finds head caught
		 * up with the tail it posted behind (verbs/net_sq.c): it stores
		 * tail, fences, reads head; we store head, fence, read tail, so
		 * one of us sees the other's store and no WQE waits unseen. */
		uint32_t again;

		atomic_thread_fence(memory_order_seq_cst);
		again = atomic_load_explicit(&qp->nsq->idx.tail, memory_order_acquire);
		if (again == tail || t->wq_tail != tail)
			break;
		tail = again;
	}
	if (t->state == IBV_QPS_ERR) {
		tp_flush(t);
		return;
	}
	if (t->state != IBV_QPS_RTS || t->rnr_ns)
		return; /* SQD and SQE hold new work; an RNR wait holds everything */

	while (t->wq_send != t->wq_tail) {
		struct tp_swqe *w = &t->wq[t->wq_send & (qp->sq_size - 1)];
		uint32_t npsn;
		int r;

		if (t->rate_kbps && !pace_ok(t))
			break;

		/* malformed or too long: fails in order */
		if (w->opcode == UINT32_MAX || w->opcode == OP_TOO_LONG) {
			if (t->wq_head != t->wq_send)
				break;
			tp_comp_wqe(t, w->opcode == UINT32_MAX ? IBV_WC_LOC_QP_OP_ERR
							       : IBV_WC_LOC_LEN_ERR);
			tp_qp_error(t, 0);
			return;
		}

		if (qp->type == IBV_QPT_UD || qp->type == IBV_QPT_RAW_PACKET) {
			t->wq_send++;
			pace_charge(t, w->len);
			if (qp->type == IBV_QPT_RAW_PACKET)
				send_raw(t, w);
			else
				send_ud(t, w);
			if (t->state == IBV_QPS_ERR)
				return;
			continue;
		}
		/* (a READ's request takes a PSN per response packet) */
		npsn = w->opcode == IBV_WR_RDMA_READ ? tp_npkts(t, w->len - w->read_got) : 1;
		if (tp_reliable(qp->type) && !tp_sack_window_open(t, npsn))
			break;
		if (w->state == TP_W_NEW) {
			if (sof_wr_is_rd_atomic(w->opcode) && t->rd_out >= rd_max)
				break;
			/* IBA 10.8.3.3: a fenced WQE waits for earlier READs
			 * and atomics to complete */
			if ((w->send_flags & IBV_SEND_FENCE) && t->rd_out)
				break;
			if (w->opcode == IBV_WR_RDMA_READ) {
				/* a READ resumed after read_got bytes keeps
				 * the PSNs of its responses */
				w->first_psn =
				    (t->psn - (uint32_t)(w->read_got / t->mtu)) & ROCE_PSN_MASK;
				w->npkts = tp_npkts(t, w->len);
			} else {
				w->first_psn = t->psn;
				w->npkts = sof_wr_is_rd_atomic(w->opcode) ? 1 : tp_npkts(t, w->len);
				t->send_off = 0;
			}
			w->state = TP_W_SENDING;
			w->sent_once = true;
			if (sof_wr_is_rd_atomic(w->opcode))
				t->rd_out++;
		}
		if (w->opcode == IBV_WR_RDMA_READ) {
			pace_charge(t, 0);
			send_read(t, w);
			r = 1;
		} else if (w->opcode == IBV_WR_ATOMIC_WRITE) {
			send_atomic_write(t, w);
			r = 1;
		} else if (sof_wr_is_rd_atomic(w->opcode)) {
			pace_charge(t, 0);
			send_atomic(t, w);
			r = 1;
		} else {
			uint64_t left = w->len - t->send_off;

			pace_charge(t, left > t->mtu ? t->mtu : left);
			r = send_segment(t, w);
		}
		if (r == -EACCES) {
			/* a local protection error fails this WQE, in order */
			w->state = TP_W_SENT;
			w->opcode = UINT32_MAX - 1;
			t->wq_send++;
			break;
		}
		if (r == 1) {
			w->state = TP_W_SENT;
			t->wq_send++;
			if (qp->type == IBV_QPT_UC) {
				/* unreliable: done once sent */
				tp_comp_wqe(t, IBV_WC_SUCCESS);
				t->una_psn = t->psn;
			}
		}
	}
	if (roce_psn_diff(t->psn, t->max_psn) > 0) {
		t->max_psn = t->psn;
		/* time the newest packet, sent for the first time */
		if (!t->rtt_ns && roce_psn_diff(t->psn, old_max) > 0 && tp_reliable(qp->type)) {
			t->rtt_psn = (t->psn - 1) & ROCE_PSN_MASK;
			t->rtt_ns = tp_now();
		}
	}
	/* a WQE that failed locally completes when it is the oldest */
	while (t->wq_head != t->wq_send) {
		struct tp_swqe *w = &t->wq[t->wq_head & (qp->sq_size - 1)];

		if (w->opcode != UINT32_MAX - 1)
			break;
		tp_comp_wqe(t, IBV_WC_LOC_PROT_ERR);
		tp_qp_error(t, 0);
		return;
	}
	if (was_idle || !t->timer_ns)
		tp_req_arm(t);
	tp_trace(
	    "qp %06x sent: una %06x psn %06x cwnd %u rd_out %u head %u send %u tail %u timer %d",
	    qp->qpn, t->una_psn, t->psn, t->cwnd, t->rd_out, t->wq_head, t->wq_send, t->wq_tail,
	    t->timer_ns != 0);
}

/* Each packet it sends reads the clock once (tp_now; bth): its send
 * time, and the round-trip start and timer of the last one. */
void tp_req_progress(struct sof_tqp *t)
{
	tp_now_enter();
	req_progress(t);
	tp_now_leave();
}

bool tp_req_resend(struct sof_tqp *t, uint32_t psn, bool probe)
{
	uint32_t mask = t->qp->sq_size - 1, save_psn = t->psn;
	uint64_t save_off = t->send_off;

	/* the caller asks only for a PSN before t->psn: sent in this pass */
	for (uint32_t i = t->wq_head; i != t->wq_tail; i++) {
		struct tp_swqe *w = &t->wq[i & mask];
		int32_t d = roce_psn_diff(psn, w->first_psn);

		if (!w->sent_once || d < 0)
			return false;
		if ((uint32_t)d >= w->npkts)
			continue;
		/* A probe of a READ asks for its last response alone (a
		 * duplicate READ for the middle of an earlier one is served
		 * from the request's VA, length and PSN, IBA 9.7.5.1.3): a
		 * READ answered late, not lost, then costs one response
		 * again, not all of them (a 1 MiB READ: 256 at MTU 4096);
		 * its answer, ahead of a lost response, makes the completer
		 * ask for the rest (completer.c), and the SACK of a peer
		 * that kept it, because the READ's request was lost, names
		 * the request's PSN as a hole (sack.c). Only when one of
		 * these follows: the peer SACKs, or the request is known in
		 * (responses came); else a standard peer that keeps it
		 * quietly would leave the loss to the transport timer. */
		if (probe && w->opcode == IBV_WR_RDMA_READ && d > 0 &&
		    (uint32_t)d == w->npkts - 1 && (t->sack_ok || w->read_got) &&
		    (uint64_t)d * t->mtu >= w->read_got) {
			read_request(t, w, (uint64_t)d * t->mtu, psn);
			tp_trace("qp %06x probe: READ %06x's last response %06x", t->qp->qpn,
				 w->first_psn, psn);
			return true;
		}
		/* a READ's responses come back by themselves once its request
		 * is in; only the request is sent again */
		if (sof_wr_is_rd_atomic(w->opcode) && (d || w->read_got))
			return false;
		t->psn = psn;
		if (w->opcode == IBV_WR_RDMA_READ) {
			send_read(t, w);
		} else if (sof_wr_is_rd_atomic(w->opcode)) {
			send_atomic(t, w);
		} else {
			t->send_off = (uint64_t)d * t->mtu;
			if (send_segment(t, w) < 0) {
				t->psn = save_psn;
				t->send_off = save_off;
				return false;
			}
		}
		t->psn = save_psn;
		t->send_off = save_off;
		return true;
	}
	return false;
}

void tp_req_rewind(struct sof_tqp *t, uint32_t psn)
{
	uint32_t mask = t->qp->sq_size - 1, i;

	t->rd_out = 0;
	t->rtt_ns = 0; /* an ACK may now be for a packet sent twice */
	for (i = t->wq_head; i != t->wq_tail; i++) {
		struct tp_swqe *w = &t->wq[i & mask];
		int32_t d;

		if (!w->sent_once)
			break;
		d = roce_psn_diff(psn, w->first_psn);
		if (d < 0)
			return; /* before the oldest WQE: nothing to do */
		if ((uint32_t)d < w->npkts) {
			/* resume inside w; the WQEs after it start over */
			if (w->opcode == IBV_WR_RDMA_READ) {
				w->read_got = (uint64_t)d * t->mtu;
				if (w->read_got > w->len)
					w->read_got = w->len;
			}
			t->send_off = w->opcode == IBV_WR_RDMA_READ ? 0 : (uint64_t)d * t->mtu;
			for (uint32_t j = i + 1; j != t->wq_tail && t->wq[j & mask].sent_once; j++)
				t->wq[j & mask].state = TP_W_NEW;
			/* resumed mid-message, it keeps its first PSN */
			w->state = d > 0 && w->opcode != IBV_WR_RDMA_READ ? TP_W_SENDING : TP_W_NEW;
			t->wq_send = i;
			t->psn = psn;
			return;
		}
		/* w lies wholly before psn: all of it was sent */
		w->state = TP_W_SENT;
		if (sof_wr_is_rd_atomic(w->opcode))
			t->rd_out++;
	}
	/* psn follows everything sent so far */
	t->wq_send = i;
	t->send_off = 0;
	t->psn = psn;
}

void tp_req_timer(struct sof_tqp *t, uint64_t now)
{
	if (t->pace_wait_ns && now >= t->pace_wait_ns) {
		t->pace_wait_ns = 0;
		tp_req_progress(t);
	}
	if (t->rnr_ns && now >= t->rnr_ns) {
		t->rnr_ns = 0;
		tp_req_rewind(t, t->una_psn);
		tp_req_progress(t);
	}
	/* With a SACKing peer a timeout comes only after a probe drew
	 * nothing: when the transport timer is due and no probe went since
	 * the last progress (a loaded machine stopped this process past
	 * both deadlines, and the ACKs may be waiting in the socket), the
	 * probe goes now; and the timer waits a quarter timeout more, or two
	 * smoothed round trips if longer, once per progress: a loaded
	 * machine can stop a peer, or the path's own processes, for about a
	 * timeout, and a timeout's go-back resends a window (a dead peer
	 * exhausts retry_cnt that much later). */
	if (t->timer_ns && now >= t->timer_ns && t->sack_ok && !t->sack_deferred &&
	    t->state == IBV_QPS_RTS && !t->rnr_ns) {
		uint64_t wait = sof_ack_timeout_ns(t->timeout) / 4;

		/* a probe's answer needs a round trip (at most half the
		 * timeout: tp_rtt_sample) */
		if (wait < 2 * t->srtt_ns)
			wait = 2 * t->srtt_ns;
		t->timer_ns = now + wait;
		t->sack_deferred = true;
		if (!t->sack_tlps)
			t->probe_ns = now;
	}
	if (t->timer_ns && now >= t->timer_ns) {
		/* how long after its deadline this engine ran it (a process
		 * the machine kept off its CPU): traced */
		uint64_t late = now - t->timer_ns;

		t->timer_ns = t->probe_ns = 0;
		if (t->state != IBV_QPS_RTS)
			return;
		if (t->psn == t->una_psn) { /* nothing in flight: just send */
			tp_req_progress(t);
			return;
		}
		tp_count(SOF_CNT_timeouts, 1);
		tp_trace("qp %06x timeout: una %06x psn %06x max %06x retry_left %u cwnd %u head "
			 "%u send %u tail %u late %llu",
			 t->qp->qpn, t->una_psn, t->psn, t->max_psn, t->retry_left, t->cwnd,
			 t->wq_head, t->wq_send, t->wq_tail, (unsigned long long)late);
		/* IBA 9.7.6.1.3: retry_cnt retries, then the WQE fails */
		if (!t->retry_left) {
			tp_comp_wqe(t, IBV_WC_RETRY_EXC_ERR);
			tp_qp_error(t, 0);
			return;
		}
		t->retry_left--;
		tp_req_loss(t, true);
		tp_count(SOF_CNT_retransmits, 1);
		tp_req_rewind(t, t->una_psn);
		tp_req_progress(t);
		tp_req_arm(t);
		/* no progress: the next timeout is not deferred */
		t->sack_tlps = 1;
		t->sack_deferred = true;
	} else if (t->probe_ns && now >= t->probe_ns) {
		uint64_t deadline = t->timer_ns;

		/* Nothing acknowledged for many round trips: the last packets
		 * of a burst, or the resend a NAK asked for, were lost, and
		 * no later packet will make the responder NAK. Go back to
		 * the oldest unacknowledged PSN as a sequence-error NAK would
		 * have it (IBA 9.7.5.2.1), once: it spends no retry and does
		 * not move the transport timer, so a dead peer still exhausts
		 * retry_cnt at the same time (IBA 9.7.6.1.3). The window
		 * stays: a late ACK is likelier here than a lost one, and a
		 * loss the resend reveals draws a NAK that shrinks it. */
		t->probe_ns = 0;
		if (t->state != IBV_QPS_RTS || t->rnr_ns || t->psn == t->una_psn)
			return;
		tp_count(SOF_CNT_probes, 1);
		tp_count(SOF_CNT_retransmits, 1);
		/* a peer that SACKs: the tail-loss probe resends the newest
		 * packet alone, and the SACK it draws names the holes */
		tp_trace("qp %06x probe: una %06x psn %06x sent -%llu srtt %llu var %llu peak %llu "
			 "tlps %u",
			 t->qp->qpn, t->una_psn, t->psn,
			 (unsigned long long)(t->rtt_ns ? now - t->rtt_ns : 0),
			 (unsigned long long)t->srtt_ns, (unsigned long long)t->rttvar_ns,
			 (unsigned long long)t->prtt_ns, t->sack_tlps);
		t->tlp_ns = now;
		if ((t->sack_ok || (tp_sack_on && !t->sack_seen)) && tp_sack_probe(t)) {
			/* the probe or its answer may be lost too: it comes
			 * again, twice as late each time (sack.c) */
			if (t->sack_tlps < UINT8_MAX)
				t->sack_tlps++;
			if (t->timer_ns) /* a probe spends no retry either */
				t->timer_ns = deadline;
			t->probe_ns = tp_sack_probe_ns(t, now, sof_ack_timeout_ns(t->timeout));
			return;
		}
		if (!t->sack_ok && !t->sack_seen) /* fresh, nothing to probe with */
			return;
		if (t->sack_tlps < UINT8_MAX) /* a probe went (as a go-back) */
			t->sack_tlps++;
		tp_req_rewind(t, t->una_psn);
		tp_req_progress(t);
		if (t->timer_ns)
			t->timer_ns = deadline;
		t->probe_ns = 0;
	}
}

void tp_req_loss(struct sof_tqp *t, bool timeout)
{
	uint32_t n;

	t->loss_ns = sof_now_ns();
	if (t->in_recovery && roce_psn_diff(t->una_psn, t->recover_psn) < 0)
		return;
	/* with SACKs (sack.c: only a congested round trip comes here) a
	 * quarter off, else TCP's half */
	n = t->sack_ok && !timeout ? t->cwnd - t->cwnd / 4 : t->cwnd / 2;
	t->ssthresh = n > TP_MIN_CWND ? n : TP_MIN_CWND;
	t->cwnd = timeout ? TP_MIN_CWND : t->ssthresh;
	t->cwnd_acc = 0;
	t->recover_psn = t->psn;
	t->in_recovery = true;
}

void tp_req_acked(struct sof_tqp *t, uint32_t una)
{
	int32_t n = roce_psn_diff(una, t->una_psn);

	if (n <= 0)
		return;
	tp_sack_acked(t, t->una_psn, una);
	t->una_psn = una;
	if (t->rtt_ns && roce_psn_diff(una, t->rtt_psn) > 0) {
		uint64_t now = tp_now();
		/* after a probe of the timed packet the ACK may answer either:
		 * only the time since the probe tells how late an answer can
		 * be (sack.c), a lost packet's round trip would not */
		uint64_t rtt = tp_rtt_sample(
		    t, now - t->rtt_ns, t->tlp_ns > t->rtt_ns ? now - t->tlp_ns : now - t->rtt_ns);

		if (t->tlp_ns > t->rtt_ns)
			tp_trace("qp %06x acked after probe: sent -%llu probe -%llu", t->qp->qpn,
				 (unsigned long long)(now - t->rtt_ns),
				 (unsigned long long)(now - t->tlp_ns));

		if (!t->mrtt_ns || rtt < t->mrtt_ns)
			t->mrtt_ns = rtt;
		else
			t->mrtt_ns += (rtt - t->mrtt_ns) / 64;
		t->rtt_ns = 0;
	}
	if (t->in_recovery && roce_psn_diff(una, t->recover_psn) >= 0)
		t->in_recovery = false;
	if (t->cwnd < t->ssthresh) { /* slow start */
		t->cwnd += (uint32_t)n;
	} else { /* congestion avoidance: one more per window acknowledged */
		t->cwnd_acc += (uint32_t)n;
		if (t->cwnd_acc >= t->cwnd) {
			t->cwnd_acc -= t->cwnd;
			t->cwnd++;
		}
	}
	if (t->cwnd > TP_WINDOW)
		t->cwnd = TP_WINDOW;
}
