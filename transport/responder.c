/*
 * The responder (IBA 9.7.5): executes the requests that arrive for a QP and
 * answers them.
 *
 * RC, for a request with PSN p and expected PSN e (9.7.5.1):
 *   p == e  execute: SEND into the next receive WQE (none: RNR NAK with
 *           min_rnr_timer, 9.7.5.2.8), RDMA WRITE into the region the
 *           RETH's R_Key names, READ answered with responses at once,
 *           atomics applied once and their result kept (9.7.5.1.4);
 *           ACKs coalesce to one per batch of received packets;
 *   p > e   PSN sequence error: one NAK naming e until e arrives
 *           (9.7.5.2.1), the packet dropped;
 *   p < e   duplicate: a SEND or WRITE is acknowledged, not executed
 *           again; a READ is served again only inside the key and range
 *           of the original; an atomic returns the saved result, never
 *           applied twice.
 * Errors are NAKs, and the QP goes to ERROR: remote access (class C:
 * R_Key, range or access; 9.7.5.2.4) with IBV_EVENT_QP_ACCESS_ERR, invalid
 * request (opcode sequence, length, misaligned atomic, no responder
 * resources) with IBV_EVENT_QP_REQ_ERR, remote operational error (a
 * receive WQE whose buffers fail their checks).
 * UC (9.8.2): no ACKs; a gap in the PSNs drops the message in progress.
 * UD (9.8.3): one datagram into one receive WQE, the IP header in the GRH
 * area of the buffer (Annex A17.4.5.1).
 */
#include "tport.h"

#include "sof_wr.h"

#include <stdlib.h>

const char *const tp_resp_names[TP_RESP_NR] = {
    [TP_RESP_PSN_OK] = "PSN ok",
    [TP_RESP_AHEAD_KEPT] = "ahead, kept",
    [TP_RESP_SEQ_ERR_NAK] = "PSN sequence error NAK",
    [TP_RESP_SEQ_ERR_DROP] = "ahead, dropped",
    [TP_RESP_DUPLICATE] = "duplicate",
    [TP_RESP_DUP_DROP] = "duplicate, dropped",
    [TP_RESP_RNR] = "RNR NAK",
    [TP_RESP_REMOTE_ACCESS] = "remote access error NAK",
    [TP_RESP_INVALID_REQUEST] = "invalid request NAK",
    [TP_RESP_REMOTE_OP_ERR] = "remote operational error NAK",
};

/* Trace what was decided about request h (SOFTOFED_TRACE). */
static inline void decided(const struct sof_tqp *t, uint32_t psn, enum tp_resp_decision d)
{
	tp_trace("QP 0x%06x responder: PSN %u (expected %u): %s", t->qp->qpn, psn, t->epsn,
		 tp_resp_names[d]);
}

/* ---- receive WQEs --------------------------------------------------------------- */

static void recv_cqe(struct sof_tqp *t, int status, uint8_t opcode, uint32_t byte_len,
		     const struct roce_hdr *h, uint32_t extra_flags);

/* Take the next receive WQE of t's QP (its RQ or its SRQ) into t->rcv_*.
 * 0, -EAGAIN when there is none, -EINVAL when it is malformed (consumed). */
static int take_rwqe(struct sof_tqp *t)
{
	int err = tp_rwqe_take(t->qp, &t->rcv_wr_id, t->rcv_sge, &t->rcv_nsge);

	if (err != -EAGAIN) {
		t->rcv_off = 0;
		t->rcv_active = !err;
	}
	return err;
}

/* UC: take a receive WQE; one that is malformed completes in error at once
 * (UC has no NAK to send). Returns true when one is ready. */
static bool uc_take(struct sof_tqp *t, const struct roce_hdr *h, uint8_t opcode)
{
	int err = take_rwqe(t);

	if (err == -EINVAL)
		recv_cqe(t, IBV_WC_LOC_QP_OP_ERR, opcode, 0, h, 0);
	return !err;
}

/* extra_flags: IBV_WC_* flags in bits 7:0, the completion's sl in 15:8. */
static void recv_cqe(struct sof_tqp *t, int status, uint8_t opcode, uint32_t byte_len,
		     const struct roce_hdr *h, uint32_t extra_flags)
{
	t->rcv_active = false;
	tp_recv_complete(t->qp, t->rcv_wr_id, t->qp->type == IBV_QPT_UD ? h->sqpn : t->dqpn, status,
			 opcode, byte_len, h, extra_flags);
}

/* ---- answers ------------------------------------------------------------------- */

void tp_send_ack_to(const struct tp_path *path, uint32_t dqpn, uint8_t syndrome, uint32_t psn,
		    uint32_t msn, uint8_t svc, uint16_t pkey)
{
	struct roce_hdr h;

	memset(&h, 0, sizeof(h));
	h.opcode = svc | ROCE_ACK;
	h.pkey = pkey;
	h.dqpn = dqpn;
	h.psn = psn & ROCE_PSN_MASK;
	h.syndrome = syndrome;
	h.msn = msn & 0xffffff;
	tp_send(path, &h, 0, NULL, NULL);
}

static int gather_sack(void *arg, uint8_t *dst, uint32_t len)
{
	memcpy(dst, arg, len);
	return 0;
}

/* An ACK or NAK of t. To a requester that speaks the extension (sack.c)
 * the BTH ext bit is set, and an ACK while packets are kept ahead of a
 * gap carries the SACK of them. */
static void send_aeth(struct sof_tqp *t, uint8_t syndrome, uint32_t psn)
{
	uint8_t sack[ROCE_SACK_MAX_LEN];
	struct roce_hdr h;

	if (!t->sack_peer || t->qp->type != IBV_QPT_RC) {
		tp_send_ack_to(&t->path, t->dqpn, syndrome, psn, t->msn, tp_svc(t->qp->type),
			       tp_qp_pkey(t));
		return;
	}
	memset(&h, 0, sizeof(h));
	h.opcode = ROCE_SVC_RC | ROCE_ACK;
	h.pkey = tp_qp_pkey(t);
	h.dqpn = t->dqpn;
	h.psn = psn & ROCE_PSN_MASK;
	h.syndrome = syndrome;
	h.msn = t->msn & 0xffffff;
	h.ext = true;
	if (t->nooo && (syndrome & ROCE_AETH_TYPE_MASK) == ROCE_AETH_ACK) {
		tp_send(&t->path, &h, tp_sack_build(t, sack), gather_sack, sack);
		return;
	}
	tp_send(&t->path, &h, 0, NULL, NULL);
}

void tp_resp_flush_ack(struct sof_tqp *t)
{
	if (!t->ack_pending)
		return;
	t->ack_pending = false;
	send_aeth(t, ROCE_AETH_ACK | ROCE_AETH_CREDIT_INVALID, (t->epsn - 1) & ROCE_PSN_MASK);
}

/* A NAK that ends the QP (IBA 9.7.5.2.4): the NAK acknowledges everything
 * before the failing request, so no ACK is owed any more. */
static void fatal_nak(struct sof_tqp *t, uint8_t code, uint32_t psn, uint32_t event)
{
	decided(t, psn,
		code == ROCE_NAK_REM_ACCESS ? TP_RESP_REMOTE_ACCESS
		: code == ROCE_NAK_INV_REQ  ? TP_RESP_INVALID_REQUEST
					    : TP_RESP_REMOTE_OP_ERR);
	t->ack_pending = false;
	tp_count(SOF_CNT_nak_sent, 1);
	send_aeth(t, (uint8_t)(ROCE_AETH_NAK | code), psn);
	tp_qp_error(t, event);
}

static void rnr_nak(struct sof_tqp *t, uint32_t psn)
{
	decided(t, psn, TP_RESP_RNR);
	t->ack_pending = false;
	tp_count(SOF_CNT_rnr_nak_sent, 1);
	send_aeth(t, (uint8_t)(ROCE_AETH_RNR_NAK | (t->min_rnr_timer & 0x1f)), psn);
}

static void access_error(struct sof_tqp *t, uint32_t psn)
{
	tp_count(SOF_CNT_key_violations, 1);
	fatal_nak(t, ROCE_NAK_REM_ACCESS, psn, IBV_EVENT_QP_ACCESS_ERR);
}

static void invalid_request(struct sof_tqp *t, uint32_t psn)
{
	fatal_nak(t, ROCE_NAK_INV_REQ, psn, IBV_EVENT_QP_REQ_ERR);
}

/* ---- READ responses ------------------------------------------------------------- */

/* Send the responses to a READ of len bytes at va, the first with PSN psn
 * (IBA 9.7.5.1.3: FIRST, MIDDLE..., LAST or ONLY; AETH on all but MIDDLE).
 * Every packet looks the region up anew, so a region deregistered
 * meanwhile is never read; the payload goes by reference, and a
 * deregistration sends the queue before the region goes
 * (a host revokes a region only after tp_tx_flush). */
static void serve_read(struct sof_tqp *t, uint32_t psn, uint64_t va, uint32_t rkey, uint32_t len)
{
	uint32_t off = 0;

	do {
		uint32_t n = len - off > t->mtu ? t->mtu : len - off;
		bool first = off == 0, last = off + n >= len;
		struct roce_hdr h;

		memset(&h, 0, sizeof(h));
		h.opcode = tp_svc(t->qp->type) | (first && last ? ROCE_READ_RESP_ONLY
					  : first	? ROCE_READ_RESP_FIRST
					  : last	? ROCE_READ_RESP_LAST
							: ROCE_READ_RESP_MIDDLE);
		h.pkey = tp_qp_pkey(t);
		h.dqpn = t->dqpn;
		h.psn = psn & ROCE_PSN_MASK;
		h.syndrome = ROCE_AETH_ACK | ROCE_AETH_CREDIT_INVALID;
		h.msn = t->msn & 0xffffff;
		if (n) {
			struct iovec v = {
			    tp_mr_ptr(t->qp, rkey, va + off, n, IBV_ACCESS_REMOTE_READ), n};

			if (!v.iov_base)
				return;
			tp_send_ref(&t->path, &h, &v, 1);
		} else if (tp_send(&t->path, &h, 0, NULL, NULL) == -EACCES) {
			return;
		}
		off += n;
		psn++;
	} while (off < len);
}

/* IBA 9.5.3: the atomic ACK of the request with PSN psn. */
static void send_atomic_ack(struct sof_tqp *t, uint32_t psn, uint64_t orig)
{
	struct roce_hdr a;

	memset(&a, 0, sizeof(a));
	a.opcode = tp_svc(t->qp->type) | ROCE_ATOMIC_ACK;
	a.pkey = tp_qp_pkey(t);
	a.dqpn = t->dqpn;
	a.psn = psn & ROCE_PSN_MASK;
	a.syndrome = ROCE_AETH_ACK | ROCE_AETH_CREDIT_INVALID;
	a.msn = t->msn & 0xffffff;
	a.orig = orig;
	tp_send(&t->path, &a, 0, NULL, NULL);
}

static struct tp_res *res_find(struct sof_tqp *t, uint32_t psn, uint8_t type)
{
	for (uint32_t i = 0; i < t->nres; i++) {
		struct tp_res *r = &t->res[i];
		int32_t d = roce_psn_diff(psn, r->psn);

		if (r->type == type && d >= 0 && (uint32_t)d < r->npkts)
			return r;
	}
	return NULL;
}

static struct tp_res *res_new(struct sof_tqp *t)
{
	struct tp_res *r = &t->res[t->res_next++ % t->nres];

	memset(r, 0, sizeof(*r));
	return r;
}

/* ---- RC requests ---------------------------------------------------------------- */

static void duplicate(struct sof_tqp *t, const struct roce_hdr *h, uint8_t op)
{
	struct tp_res *r;

	tp_count(SOF_CNT_dup_req, 1);
	if (op == ROCE_READ_REQ) {
		r = res_find(t, h->psn, TP_RES_READ);
		/* only inside what the original request was granted */
		if (!r || h->rkey != r->rkey || h->va < r->va || h->dmalen > r->len ||
		    h->va - r->va > r->len - h->dmalen) {
			decided(t, h->psn, TP_RESP_DUP_DROP);
			tp_drop(SOF_DROP_psn);
			return;
		}
		decided(t, h->psn, TP_RESP_DUPLICATE);
		serve_read(t, h->psn, h->va, h->rkey, h->dmalen);
		return;
	}
	if (op == ROCE_ATOMIC_WRITE) {
		r = res_find(t, h->psn, TP_RES_ATOMIC);
		if (!r || r->psn != h->psn) {
			decided(t, h->psn, TP_RESP_DUP_DROP);
			tp_drop(SOF_DROP_psn);
			return;
		}
		decided(t, h->psn, TP_RESP_DUPLICATE);
		serve_read(t, h->psn, 0, 0, 0);
		return;
	}
	if (op == ROCE_CMP_SWAP || op == ROCE_FETCH_ADD) {
		r = res_find(t, h->psn, TP_RES_ATOMIC);
		if (!r || r->psn != h->psn) {
			decided(t, h->psn, TP_RESP_DUP_DROP);
			tp_drop(SOF_DROP_psn);
			return;
		}
		decided(t, h->psn, TP_RESP_DUPLICATE);
		send_atomic_ack(t, h->psn, r->orig);
		return;
	}
	/* a repeated SEND or WRITE: acknowledged, not executed */
	decided(t, h->psn, TP_RESP_DUPLICATE);
	tp_ack_due(t);
}

static void do_send(struct sof_tqp *t, const struct roce_hdr *h, uint32_t f, const uint8_t *payload,
		    uint32_t paylen)
{
	int err;

	if ((f & ROCE_F_FIRST) && !t->rcv_active) {
		err = take_rwqe(t);
		if (err == -EAGAIN) {
			rnr_nak(t, h->psn);
			return;
		}
		if (err) {
			recv_cqe(t, IBV_WC_LOC_QP_OP_ERR, IBV_WC_RECV, 0, h, 0);
			fatal_nak(t, ROCE_NAK_REM_OP_ERR, h->psn, 0);
			return;
		}
	}
	if (f & ROCE_F_FIRST)
		t->rcv_off = 0;
	err = tp_sgl_copy(t->qp, t->rcv_sge, t->rcv_nsge, t->rcv_off, (uint8_t *)payload, paylen,
			  true);
	if (err == -EMSGSIZE) {
		/* the message is longer than the receive buffers */
		recv_cqe(t, IBV_WC_LOC_LEN_ERR, IBV_WC_RECV, 0, h, 0);
		invalid_request(t, h->psn);
		return;
	}
	if (err) {
		recv_cqe(t, IBV_WC_LOC_PROT_ERR, IBV_WC_RECV, 0, h, 0);
		fatal_nak(t, ROCE_NAK_REM_OP_ERR, h->psn, 0);
		return;
	}
	/* SEND with invalidate: the window goes before the receive completes
	 * (IBA 9.4.1.1); a key this QP may not invalidate is an invalid
	 * request (as rxe, class J) */
	if ((f & ROCE_F_IETH) &&
	    (!tp.host->mw_invalidate || tp.host->mw_invalidate(t->qp, h->inv_rkey))) {
		recv_cqe(t, IBV_WC_REM_INV_REQ_ERR, IBV_WC_RECV, 0, h, 0);
		fatal_nak(t, ROCE_NAK_INV_REQ, h->psn, IBV_EVENT_QP_REQ_ERR);
		return;
	}
	t->rcv_off += paylen;
	t->epsn = (t->epsn + 1) & ROCE_PSN_MASK;
	tp_ack_due(t);
	if (f & ROCE_F_LAST) {
		t->in_msg = 0;
		t->msn++;
		recv_cqe(t, IBV_WC_SUCCESS, IBV_WC_RECV, (uint32_t)t->rcv_off, h, 0);
	} else {
		t->in_msg = ROCE_F_SEND;
	}
}

static void do_write(struct sof_tqp *t, const struct roce_hdr *h, uint32_t f,
		     const uint8_t *payload, uint32_t paylen)
{
	bool imm = f & ROCE_F_IMMDT;
	uint8_t *p;

	if (f & ROCE_F_FIRST) {
		if (h->dmalen &&
		    (!(t->access & IBV_ACCESS_REMOTE_WRITE) ||
		     !tp_mr_ptr(t->qp, h->rkey, h->va, h->dmalen,
				IBV_ACCESS_REMOTE_WRITE | TP_MR_PROBE))) {
			access_error(t, h->psn);
			return;
		}
		t->wr_va = h->va;
		t->wr_rkey = h->rkey;
		t->wr_len = t->wr_left = h->dmalen;
	}
	/* RNR is decided before any data of this packet moves, so the
	 * retried packet finds everything as it was */
	if ((f & ROCE_F_LAST) && imm && !t->rcv_active) {
		int err = take_rwqe(t);

		if (err == -EAGAIN) {
			rnr_nak(t, h->psn);
			return;
		}
		if (err) {
			recv_cqe(t, IBV_WC_LOC_QP_OP_ERR, IBV_WC_RECV_RDMA_WITH_IMM, 0, h, 0);
			fatal_nak(t, ROCE_NAK_REM_OP_ERR, h->psn, 0);
			return;
		}
	}
	if (paylen > t->wr_left || ((f & ROCE_F_LAST) && paylen != t->wr_left)) {
		invalid_request(t, h->psn);
		return;
	}
	if (paylen) {
		p = tp_mr_ptr(t->qp, t->wr_rkey, t->wr_va + (t->wr_len - t->wr_left), paylen,
			      IBV_ACCESS_REMOTE_WRITE);
		if (!p) { /* deregistered in the middle of the message */
			access_error(t, h->psn);
			return;
		}
		memcpy(p, payload, paylen);
		tp_mr_done(t->qp, p, paylen);
		t->wr_left -= paylen;
	}
	t->epsn = (t->epsn + 1) & ROCE_PSN_MASK;
	tp_ack_due(t);
	if (f & ROCE_F_LAST) {
		t->in_msg = 0;
		t->msn++;
		if (imm)
			recv_cqe(t, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM, (uint32_t)t->wr_len,
				 h, 0);
	} else {
		t->in_msg = ROCE_F_WRITE;
	}
}

static void do_read(struct sof_tqp *t, const struct roce_hdr *h)
{
	struct tp_res *r;

	/* IBA 9.7.5.1.4: no responder resources, no READ; and a READ whose
	 * responses would take more than a quarter of the PSN space cannot
	 * be told apart from old ones (9.7.1) */
	if (!t->max_dest_rd_atomic || tp_npkts(t, h->dmalen) > TP_MAX_MSG_PKTS) {
		invalid_request(t, h->psn);
		return;
	}
	if (h->dmalen && (!(t->access & IBV_ACCESS_REMOTE_READ) ||
			  !tp_mr_ptr(t->qp, h->rkey, h->va, h->dmalen,
				     IBV_ACCESS_REMOTE_READ | TP_MR_PROBE))) {
		access_error(t, h->psn);
		return;
	}
	r = res_new(t);
	r->type = TP_RES_READ;
	r->psn = h->psn;
	r->npkts = tp_npkts(t, h->dmalen);
	r->va = h->va;
	r->rkey = h->rkey;
	r->len = h->dmalen;
	/* the responses acknowledge what came before */
	t->ack_pending = false;
	t->msn++;
	t->epsn = (h->psn + r->npkts) & ROCE_PSN_MASK;
	serve_read(t, h->psn, h->va, h->rkey, h->dmalen);
}

static void do_atomic(struct sof_tqp *t, const struct roce_hdr *h, uint8_t op)
{
	struct tp_res *r;
	uint64_t *p, orig;

	if (!t->max_dest_rd_atomic) {
		invalid_request(t, h->psn);
		return;
	}
	/* IBA 9.4.5: the target must be 8-byte aligned */
	if (h->va & 7) {
		invalid_request(t, h->psn);
		return;
	}
	p = t->access & IBV_ACCESS_REMOTE_ATOMIC
		? (uint64_t *)(void *)tp_mr_ptr(t->qp, h->rkey, h->va, 8, IBV_ACCESS_REMOTE_ATOMIC)
		: NULL;
	if (!p) {
		access_error(t, h->psn);
		return;
	}
	/* ... and so must the word in our mapping: a region whose iova and
	 * address differ in their offset in the page (REG_MR allows it, the
	 * kernel's does not) turns an aligned va into a misaligned word, even
	 * one astride two cache lines, where a locked instruction is a split
	 * lock: stalled or, where the kernel makes those fatal, SIGBUS */
	if ((uintptr_t)p & 7) {
		tp_mr_done(t->qp, (uint8_t *)p, 0);
		invalid_request(t, h->psn);
		return;
	}
	/* IBV_ATOMIC_HCA: CPU atomics on the shared page, so atomic against
	 * the same-host executors too */
	if (op == ROCE_FETCH_ADD) {
		orig = __atomic_fetch_add(p, h->swap_add, __ATOMIC_SEQ_CST);
	} else {
		orig = h->compare;
		__atomic_compare_exchange_n(p, &orig, h->swap_add, false, __ATOMIC_SEQ_CST,
					    __ATOMIC_SEQ_CST);
	}
	tp_mr_done(t->qp, (uint8_t *)p, 8);
	r = res_new(t);
	r->type = TP_RES_ATOMIC;
	r->psn = h->psn;
	r->npkts = 1;
	r->orig = orig;
	t->ack_pending = false;
	t->msn++;
	t->epsn = (h->psn + 1) & ROCE_PSN_MASK;
	send_atomic_ack(t, h->psn, orig);
}

static void uc_packet(struct sof_tqp *t, const struct roce_hdr *h, uint32_t f,
		      const uint8_t *payload, uint32_t paylen);

/* ATOMIC WRITE (IBA 1.5, 9.4.7): exactly 8 bytes to an aligned va, with
 * remote write access, stored at once; a responder resource remembers it,
 * so a duplicate is answered and not applied again. The answer is a
 * zero-length RDMA READ Response Only (as rxe). */
static void do_atomic_write(struct sof_tqp *t, const struct roce_hdr *h, const uint8_t *payload,
			    uint32_t paylen)
{
	struct tp_res *r;
	uint64_t *p, v;

	if (!t->max_dest_rd_atomic || h->dmalen != 8 || paylen != 8 || (h->va & 7)) {
		invalid_request(t, h->psn);
		return;
	}
	p = (uint64_t *)(void *)tp_mr_ptr(t->qp, h->rkey, h->va, 8, IBV_ACCESS_REMOTE_WRITE);
	if (!p || !(t->access & IBV_ACCESS_REMOTE_WRITE)) {
		if (p)
			tp_mr_done(t->qp, (uint8_t *)p, 0);
		access_error(t, h->psn);
		return;
	}
	if ((uintptr_t)p & 7) { /* see do_atomic */
		tp_mr_done(t->qp, (uint8_t *)p, 0);
		invalid_request(t, h->psn);
		return;
	}
	memcpy(&v, payload, 8);
	__atomic_store_n(p, v, __ATOMIC_SEQ_CST);
	tp_mr_done(t->qp, (uint8_t *)p, 8); /* a host's copy goes back */
	r = res_new(t);
	r->type = TP_RES_ATOMIC;
	r->psn = h->psn;
	r->npkts = 1;
	t->ack_pending = false;
	t->msn++;
	t->epsn = (h->psn + 1) & ROCE_PSN_MASK;
	serve_read(t, h->psn, 0, 0, 0);
}

/* Execute a request with the expected PSN. */
static void execute(struct sof_tqp *t, const struct roce_hdr *h, const uint8_t *payload,
		    uint32_t paylen)
{
	uint32_t f = roce_opinfo(h->opcode)->flags;
	uint8_t op = h->opcode & ~ROCE_SVC_MASK;

	decided(t, h->psn, TP_RESP_PSN_OK);
	t->nak_sent = false;
	/* IBA 9.7.5.1.? opcode sequence: a message in progress continues
	 * with its MIDDLE or LAST; anything else starts with FIRST/ONLY */
	if (t->in_msg ? !(f & t->in_msg) || !(f & (ROCE_F_MIDDLE | ROCE_F_LAST))
		      : (f & (ROCE_F_MIDDLE | ROCE_F_LAST)) && !(f & ROCE_F_FIRST)) {
		invalid_request(t, h->psn);
		return;
	}
	/* every packet but the last of a message carries a full MTU */
	if ((f & ROCE_F_PAYLOAD) && (paylen > t->mtu || (!(f & ROCE_F_LAST) && paylen != t->mtu))) {
		invalid_request(t, h->psn);
		return;
	}
	/* XRC: the XRCETH names the SRQ (of the TGT QP's domain) whose
	 * receive WQEs, PD and CQ serve the request; one that names none,
	 * or changes within a message, is an invalid request (XRC annex) */
	if (f & ROCE_F_XRCETH) {
		if ((t->in_msg && h->xrcsrq != t->xrcsrq) ||
		    !tp.host->xrc_srq(t->qp, h->xrcsrq)) {
			invalid_request(t, h->psn);
			return;
		}
		t->xrcsrq = h->xrcsrq;
	}
	if (f & ROCE_F_SEND)
		do_send(t, h, f, payload, paylen);
	else if (f & ROCE_F_WRITE)
		do_write(t, h, f, payload, paylen);
	else if (op == ROCE_READ_REQ)
		do_read(t, h);
	else if (op == ROCE_CMP_SWAP || op == ROCE_FETCH_ADD)
		do_atomic(t, h, op);
	else if (op == ROCE_ATOMIC_WRITE)
		do_atomic_write(t, h, payload, paylen);
	else
		invalid_request(t, h->psn);
}

/* ---- packets that arrive ahead of their turn ----------------------------------- */

/* IBA 9.7.5.2.1 lets a responder drop a packet ahead of the expected PSN
 * and NAK; on a network that reorders (IP may), dropping turns every
 * overtaking packet into a go-back-N resend. So a packet up to TP_OOO_STD
 * ahead (TP_OOO_SLOTS from a requester that speaks the extension) is
 * kept, and runs once the gap before it has filled; the NAK goes out when
 * TP_OOO_NAK_AFTER packets wait behind the gap (a loss, not a reordering)
 * or when one arrives that cannot be kept. */
void tp_resp_ooo_clear(struct sof_tqp *t)
{
	if (!t->ooo)
		return;
	for (uint32_t i = 0; i < TP_OOO_SLOTS; i++)
		t->ooo[i].used = false;
	t->nooo = 0;
}

void tp_resp_ooo_free(struct sof_tqp *t)
{
	for (uint32_t i = 0; t->ooo && i < TP_OOO_SLOTS; i++)
		free(t->ooo[i].payload);
	free(t->ooo);
	t->ooo = NULL;
	t->nooo = 0;
}

static bool ooo_put(struct sof_tqp *t, const struct roce_hdr *h, const uint8_t *payload,
		    uint32_t paylen)
{
	struct tp_ooo *o;

	if (paylen > TP_OOO_PAYLOAD)
		return false;
	if (!t->ooo) {
		t->ooo = calloc(TP_OOO_SLOTS, sizeof(*t->ooo));
		if (!t->ooo)
			return false;
	}
	o = &t->ooo[h->psn % TP_OOO_SLOTS];
	if (o->used && roce_psn_diff(o->h.psn, t->epsn) >= 0)
		return o->h.psn == h->psn; /* a duplicate of one kept */
	if (!o->payload) {
		o->payload = malloc(TP_OOO_PAYLOAD);
		if (!o->payload)
			return false;
	}
	if (!o->used)
		t->nooo++;
	if (t->nooo == 1 || roce_psn_diff(h->psn, t->ooo_top) > 0)
		t->ooo_top = h->psn;
	o->used = true;
	o->h = *h;
	o->paylen = paylen;
	memcpy(o->payload, payload, paylen);
	return true;
}

/* Run the kept packets that are now in turn. */
static void ooo_drain(struct sof_tqp *t)
{
	while (t->nooo && t->state != IBV_QPS_ERR) {
		struct tp_ooo *o = &t->ooo[t->epsn % TP_OOO_SLOTS];
		uint32_t before = t->epsn;

		if (!o->used || o->h.psn != t->epsn)
			return;
		o->used = false;
		t->nooo--;
		execute(t, &o->h, o->payload, o->paylen);
		if (t->epsn == before) /* RNR: the requester sends it again */
			return;
	}
	if (t->state == IBV_QPS_ERR)
		tp_resp_ooo_clear(t);
}

/* The daemon ran the responder meanwhile (takeover.c): what was kept
 * below the expected PSN it took back, the daemon executed (from the
 * requester's resends: it NAKs what comes ahead, so the requester went
 * back), and is forgotten; what is now in turn runs. */
static void ooo_taken_back(struct sof_tqp *t)
{
	for (uint32_t i = 0; t->nooo && i < TP_OOO_SLOTS; i++) {
		struct tp_ooo *o = &t->ooo[i];

		if (o->used && roce_psn_diff(o->h.psn, t->epsn) < 0) {
			o->used = false;
			t->nooo--;
		}
	}
	ooo_drain(t);
}

/* Ahead of the expected PSN, from a requester that speaks the extension:
 * kept when it fits in the window, and no NAK: the coalesced ACK of this
 * batch carries the SACK of what is kept (sack.c). */
static void ahead_sack(struct sof_tqp *t, const struct roce_hdr *h, const uint8_t *payload,
		       uint32_t paylen, int32_t d)
{
	bool kept = d < (int32_t)TP_OOO_SLOTS && ooo_put(t, h, payload, paylen);

	tp_count(SOF_CNT_seq_err, 1);
	if (!kept)
		tp_drop(SOF_DROP_psn);
	decided(t, h->psn, kept ? TP_RESP_AHEAD_KEPT : TP_RESP_SEQ_ERR_DROP);
	t->oos_psn = h->psn;
	tp_ack_due(t);
}

static void rc_packet(struct sof_tqp *t, const struct roce_hdr *h, uint32_t f,
		      const uint8_t *payload, uint32_t paylen)
{
	uint8_t op = h->opcode & ~ROCE_SVC_MASK;
	int32_t d;

	if (h->ext && tp_sack_on)
		t->sack_peer = true;
	d = roce_psn_diff(h->psn, t->epsn);
	if (d > 0 && t->sack_peer) {
		ahead_sack(t, h, payload, paylen, d);
		return;
	}
	if (d > 0) {
		bool kept = d < (int32_t)TP_OOO_STD && ooo_put(t, h, payload, paylen);

		tp_count(SOF_CNT_seq_err, 1);
		if (!kept)
			tp_drop(SOF_DROP_psn);
		if (kept && t->nooo < TP_OOO_NAK_AFTER) {
			decided(t, h->psn, TP_RESP_AHEAD_KEPT);
			return;
		}
		/* IBA 9.7.5.2.1: one NAK per sequence error, and one more
		 * when the requester has evidently gone back (the PSNs
		 * restart below the highest seen) and lost the expected
		 * packet again, instead of a transport timeout */
		if (!t->nak_sent || roce_psn_diff(h->psn, t->oos_psn) <= 0) {
			decided(t, h->psn, TP_RESP_SEQ_ERR_NAK);
			t->nak_sent = true;
			t->ack_pending = false;
			tp_count(SOF_CNT_nak_sent, 1);
			send_aeth(t, ROCE_AETH_NAK | ROCE_NAK_PSN_SEQ_ERR, t->epsn);
		} else {
			decided(t, h->psn, kept ? TP_RESP_AHEAD_KEPT : TP_RESP_SEQ_ERR_DROP);
		}
		t->oos_psn = h->psn;
		return;
	}
	if (d < 0) {
		if (d < -TP_DUP_WINDOW) {
			decided(t, h->psn, TP_RESP_DUP_DROP);
			tp_drop(SOF_DROP_psn);
			return;
		}
		/* XRC: a READ served again reads through the PD of the SRQ
		 * its XRCETH names */
		if ((f & ROCE_F_XRCETH) && !tp.host->xrc_srq(t->qp, h->xrcsrq)) {
			decided(t, h->psn, TP_RESP_DUP_DROP);
			tp_drop(SOF_DROP_psn);
			return;
		}
		duplicate(t, h, op);
		return;
	}
	execute(t, h, payload, paylen);
	ooo_drain(t);
}

void tp_resp_packet(struct sof_tqp *t, const struct roce_hdr *h, const uint8_t *payload,
		    uint32_t paylen, const struct roce_addr *a)
{
	uint32_t f = roce_opinfo(h->opcode)->flags;
	bool shared = t->qp->rshm; /* the daemon may run it while we do not (takeover.c) */

	(void)a;
	if (shared && tp_resp_shared_enter(t) && t->nooo)
		ooo_taken_back(t);
	if (t->state == IBV_QPS_ERR) /* ended by the daemon meanwhile */
		tp_drop(SOF_DROP_qp_state);
	else if (t->qp->type == IBV_QPT_UC)
		uc_packet(t, h, f, payload, paylen);
	else
		rc_packet(t, h, f, payload, paylen);
	if (shared)
		tp_resp_shared_leave(t);
}

/* ---- UC ------------------------------------------------------------------------ */

static void uc_packet(struct sof_tqp *t, const struct roce_hdr *h, uint32_t f,
		      const uint8_t *payload, uint32_t paylen)
{
	int err;

	/* IBA 9.8.2: a gap in the PSNs loses the message in progress; only a
	 * FIRST or ONLY starts the next one */
	if (h->psn != t->epsn && t->in_msg) {
		t->in_msg = 0;
		tp_drop(SOF_DROP_psn);
	}
	t->epsn = (h->psn + 1) & ROCE_PSN_MASK;
	if (t->in_msg ? !(f & t->in_msg) || !(f & (ROCE_F_MIDDLE | ROCE_F_LAST))
		      : !(f & ROCE_F_FIRST)) {
		t->in_msg = 0;
		tp_drop(SOF_DROP_psn);
		return;
	}
	if (paylen > t->mtu || (!(f & ROCE_F_LAST) && paylen != t->mtu)) {
		t->in_msg = 0;
		tp_drop(SOF_DROP_payload);
		return;
	}
	if (f & ROCE_F_WRITE) {
		bool imm = f & ROCE_F_IMMDT;
		uint8_t *p;

		if (f & ROCE_F_FIRST) {
			if (h->dmalen && (!(t->access & IBV_ACCESS_REMOTE_WRITE) ||
					  !tp_mr_ptr(t->qp, h->rkey, h->va, h->dmalen,
						     IBV_ACCESS_REMOTE_WRITE | TP_MR_PROBE))) {
				tp_count(SOF_CNT_key_violations, 1);
				return; /* UC: silently dropped */
			}
			t->wr_va = h->va;
			t->wr_rkey = h->rkey;
			t->wr_len = t->wr_left = h->dmalen;
		}
		if (paylen > t->wr_left || ((f & ROCE_F_LAST) && paylen != t->wr_left)) {
			t->in_msg = 0;
			tp_drop(SOF_DROP_payload);
			return;
		}
		if ((f & ROCE_F_LAST) && imm && !t->rcv_active &&
		    !uc_take(t, h, IBV_WC_RECV_RDMA_WITH_IMM)) {
			t->in_msg = 0;
			return;
		}
		if (paylen) {
			p = tp_mr_ptr(t->qp, t->wr_rkey, t->wr_va + (t->wr_len - t->wr_left),
				      paylen, IBV_ACCESS_REMOTE_WRITE);
			if (!p) {
				t->in_msg = 0;
				tp_count(SOF_CNT_key_violations, 1);
				return;
			}
			memcpy(p, payload, paylen);
			tp_mr_done(t->qp, p, paylen);
			t->wr_left -= paylen;
		}
		t->in_msg = (f & ROCE_F_LAST) ? 0 : ROCE_F_WRITE;
		if ((f & ROCE_F_LAST) && imm)
			recv_cqe(t, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM, (uint32_t)t->wr_len,
				 h, 0);
		return;
	}
	/* SEND */
	if ((f & ROCE_F_FIRST) && !t->rcv_active && !uc_take(t, h, IBV_WC_RECV)) {
		t->in_msg = 0; /* no receive WQE: the message is dropped */
		return;
	}
	if (f & ROCE_F_FIRST)
		t->rcv_off = 0;
	err = tp_sgl_copy(t->qp, t->rcv_sge, t->rcv_nsge, t->rcv_off, (uint8_t *)payload, paylen,
			  true);
	if (err) {
		recv_cqe(t, err == -EMSGSIZE ? IBV_WC_LOC_LEN_ERR : IBV_WC_LOC_PROT_ERR,
			 IBV_WC_RECV, 0, h, 0);
		tp_qp_error(t, 0);
		return;
	}
	t->rcv_off += paylen;
	t->in_msg = (f & ROCE_F_LAST) ? 0 : ROCE_F_SEND;
	if (f & ROCE_F_LAST)
		recv_cqe(t, IBV_WC_SUCCESS, IBV_WC_RECV, (uint32_t)t->rcv_off, h, 0);
}

/* ---- raw packet ------------------------------------------------------------------ */

void tp_raw_input(struct tp_qp *qp, const uint8_t *frame, uint32_t len)
{
	struct sof_tqp *t = qp->t;
	struct roce_hdr h;
	int err;

	if (!t || qp->dying || !sof_qp_state_receives(t->state))
		return;
	memset(&h, 0, sizeof(h));
	h.opcode = ROCE_UD_SEND_ONLY; /* no immediate, no solicited event */
	err = take_rwqe(t);
	if (err == -EAGAIN)
		return; /* as a NIC: no receive WQE, the frame is dropped */
	if (!err)
		err = tp_sgl_copy(qp, t->rcv_sge, t->rcv_nsge, 0, (uint8_t *)frame, len, true);
	if (err) {
		recv_cqe(t, err == -EMSGSIZE ? IBV_WC_LOC_LEN_ERR : IBV_WC_LOC_PROT_ERR,
			 IBV_WC_RECV, 0, &h, 0);
		return;
	}
	recv_cqe(t, IBV_WC_SUCCESS, IBV_WC_RECV, len, &h, 0);
}

/* ---- UD ------------------------------------------------------------------------- */

void tp_resp_ud(struct sof_tqp *t, const struct roce_hdr *h, const uint8_t *payload,
		uint32_t paylen, const struct roce_addr *a)
{
	uint8_t grh[40];
	uint32_t extra;
	int err;

	err = take_rwqe(t);
	if (err == -EAGAIN)
		return; /* IBA 9.8.3: no receive WQE, the datagram is dropped */
	if (err) {
		recv_cqe(t, IBV_WC_LOC_QP_OP_ERR, IBV_WC_RECV, 0, h, 0);
		return;
	}
	extra = tp_ud_grh(grh, a, paylen);
	err = tp_sgl_copy(t->qp, t->rcv_sge, t->rcv_nsge, 0, grh, sizeof(grh), true);
	if (!err)
		err = tp_sgl_copy(t->qp, t->rcv_sge, t->rcv_nsge, sizeof(grh), (uint8_t *)payload,
				  paylen, true);
	if (err) {
		recv_cqe(t, err == -EMSGSIZE ? IBV_WC_LOC_LEN_ERR : IBV_WC_LOC_PROT_ERR,
			 IBV_WC_RECV, 0, h, 0);
		return;
	}
	recv_cqe(t, IBV_WC_SUCCESS, IBV_WC_RECV, paylen + (uint32_t)sizeof(grh), h, extra);
}
