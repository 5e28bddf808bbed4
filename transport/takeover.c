/*
 * The responder of an RC or UC QP whose transport runs in its owner (the engine
 * in the program, verbs/tp_host.c), run by the daemon while the owner
 * does not run: a target process stopped (SIGSTOP) or not scheduled while
 * RDMA WRITEs into its memory go on (issue 18: one-sided operations
 * executed without the target process).
 *
 * The state both need lives in the QP's shared segment (struct
 * sof_resp_shm, common/sof_shm.h) under a lock word. The owner's engine
 * takes it for every request packet (tp_resp_packet), waiting the few
 * microseconds the daemon holds it; after the packet it publishes its
 * expected PSN, MSN and the message in progress. The daemon only tries
 * the lock: when the owner holds it (stopped in the middle of a packet)
 * the daemon does nothing. When the owner takes the lock and finds that
 * the daemon ran, it takes the state back first, so a request the daemon
 * executed is a duplicate to the owner and runs once.
 *
 * The daemon executes the requests in order (IBA 9.7.5.1: the expected
 * PSN), each with the owner's checks (R_Key, range and access by the
 * host's mr_ptr, 9.7.5.2.4; opcode sequence and lengths): RDMA WRITEs,
 * READs, atomics (compare-and-swap, fetch-and-add, ATOMIC WRITE), and
 * SENDs (with immediate data or invalidate) and WRITEs with immediate
 * data, which take a receive WQE from the QP's ring or SRQ (shared with
 * the owner; none: an RNR NAK, 9.7.5.2.8) and complete it in the QP's
 * receive CQ (shared too), as the owner's engine would: so the owner,
 * once it runs, polls every completion in order, once. The WQE in hand
 * in the middle of a SEND is in the shared state, so either side goes on
 * with a message the other began. It answers duplicates (9.7.5.1.2): a
 * SEND or WRITE acknowledged, a READ served again inside the range of
 * the original, an atomic answered with the result it returned, never
 * applied twice. For those the responder resources (9.7.5.1.4) live in
 * the shared state too: the owner publishes the ones it made, the daemon
 * adds its own, and the owner takes those into its ring when it takes
 * the state back, so a duplicate of an atomic the daemon executed gets
 * the daemon's result from the owner as well. What the owner would end
 * the QP for (9.7.5.2.4, 9.9.2: a key, access or range, an opcode out
 * of sequence, a length, a receive buffer too short, a window this QP
 * may not invalidate) the daemon ends it for the same way: the receive
 * WQE in error, the NAK, the QP in ERROR (take_fatal; the owner follows
 * when it runs). A packet ahead of the expected PSN it cannot keep (the
 * owner keeps those in its own memory): it NAKs the sequence error as a
 * responder that keeps none (9.7.5.2.1), and the requester goes back;
 * where the owner keeps packets ahead that it SACKed, the daemon's answer
 * once it reaches them is that NAK too, so the requester sends them again
 * (the owner forgets its copies behind the expected PSN it takes back).
 * A region the daemon cannot reach, a duplicate whose resource the shared
 * state no longer keeps: dropped without a NAK (the WQE taken for it
 * stays in hand), the requester's retry brings it to the owner once that
 * runs again, which answers it as the standard says. UC (9.8.2) the same
 * without answers. The ACKs and responses for the owner's own requests
 * the host keeps for it (host op keep), as an HCA would have taken them
 * while the program did not run. Counters: takeover (packets executed or
 * answered here), takeover_kept (kept for the owner's requester), drops
 * takeover (left for the owner).
 */
#include "tport.h"

#include "sof_wr.h"

#include "sof_gid.h"

/* ---- the daemon's side ----------------------------------------------------------- */

/* Where the daemon's answers go: back to where request h came from (a),
 * to the QP's peer dqpn, with the shared state's MSN. */
struct answer {
	struct tp_path path;
	uint32_t dqpn, msn;
};

static void answer(const struct answer *an, uint8_t opcode, uint32_t psn, struct roce_hdr *h)
{
	h->opcode = ROCE_SVC_RC | opcode;
	h->pkey = 0xffff;
	h->dqpn = an->dqpn;
	h->psn = psn & ROCE_PSN_MASK;
	h->syndrome = ROCE_AETH_ACK | ROCE_AETH_CREDIT_INVALID;
	h->msn = an->msn & 0xffffff;
}

static int gather_copy(void *arg, uint8_t *dst, uint32_t len)
{
	memcpy(dst, arg, len);
	return 0;
}

/* The responses to a READ of len bytes at va under rkey, the first with
 * PSN psn (IBA 9.7.5.1.3), each packet's range looked up anew; payloads
 * copied as the packet is built. */
static void serve_read(const struct tp_qp *qp, const struct answer *an, uint32_t mtu, uint32_t psn,
		       uint64_t va, uint32_t rkey, uint32_t len)
{
	uint32_t off = 0;

	do {
		uint32_t n = len - off > mtu ? mtu : len - off;
		bool first = off == 0, last = off + n >= len;
		struct roce_hdr h;
		uint8_t *p = NULL;

		memset(&h, 0, sizeof(h));
		answer(an,
		       first && last ? ROCE_READ_RESP_ONLY
		       : first	     ? ROCE_READ_RESP_FIRST
		       : last	     ? ROCE_READ_RESP_LAST
				     : ROCE_READ_RESP_MIDDLE,
		       psn, &h);
		if (n) {
			p = tp.host->mr_ptr(qp, rkey, va + off, n, IBV_ACCESS_REMOTE_READ);
			if (!p)
				return;
		}
		tp_send(&an->path, &h, n, gather_copy, p);
		if (p)
			tp.host->mr_done(qp, p, 0);
		off += n;
		psn++;
	} while (off < len);
}

static void send_atomic_ack(const struct answer *an, uint32_t psn, uint64_t orig)
{
	struct roce_hdr h;

	memset(&h, 0, sizeof(h));
	answer(an, ROCE_ATOMIC_ACK, psn, &h);
	h.orig = orig;
	tp_send(&an->path, &h, 0, NULL, NULL);
}

/* A new responder resource in the shared state, made by the daemon. */
static struct sof_resp_res *res_new(struct sof_resp_shm *rs)
{
	struct sof_resp_res *e = &rs->res[rs->res_next++ % SOF_RESP_RES];

	memset(e, 0, sizeof(*e));
	return e;
}

static const struct sof_resp_res *res_find(const struct sof_resp_shm *rs, uint32_t psn,
					   uint32_t type)
{
	for (uint32_t i = 0; i < SOF_RESP_RES; i++) {
		const struct sof_resp_res *e = &rs->res[i];
		int32_t d = roce_psn_diff(psn, e->psn & ROCE_PSN_MASK);

		if (e->type == type && d >= 0 && (uint32_t)d < e->npkts)
			return e;
	}
	return NULL;
}

/* What the daemon did with a request. */
enum took {
	TOOK_LEFT,     /* nothing: left for the owner (or lost, UC) */
	TOOK_DONE,     /* executed: an RC SEND or WRITE is acknowledged */
	TOOK_ANSWERED, /* answered already (responses, atomic ACK, NAKs) */
};

/* A fatal error of request h (IBA 9.7.5.2.4, 9.9.2: the owner's
 * fatal_nak, made here while it does not run, or a requester stopped
 * past its retries would end in RETRY_EXC instead of the NAK's error):
 * the NAK with code, which acknowledges what came before, and the QP
 * ends: ERROR in its shared segment (the owner's pollers flush its
 * receive queue; its engine, told by tp_resp_shared_enter or the state
 * it reads for a packet, its send queue), the owner's event. The
 * receive WQE in hand, if any, was completed in error by the caller. */
static enum took take_fatal(struct tp_qp *qp, struct sof_resp_shm *rs, const struct answer *an,
			    const struct roce_hdr *h, uint8_t code, uint32_t event)
{
	struct roce_hdr nak;

	memset(&nak, 0, sizeof(nak));
	answer(an, ROCE_ACK, h->psn, &nak);
	nak.syndrome = (uint8_t)(ROCE_AETH_NAK | code);
	tp_count(SOF_CNT_nak_sent, 1);
	tp_send(&an->path, &nak, 0, NULL, NULL);
	rs->valid = 0;
	rs->daemon_ran = 1;
	rs->in_msg = SOF_RESP_MSG_NONE;
	rs->rcv_active = 0;
	tp_qp_end(qp, event);
	return TOOK_ANSWERED;
}

static enum took access_error(struct tp_qp *qp, struct sof_resp_shm *rs, const struct answer *an,
			      const struct roce_hdr *h)
{
	tp_count(SOF_CNT_key_violations, 1);
	return take_fatal(qp, rs, an, h, ROCE_NAK_REM_ACCESS, IBV_EVENT_QP_ACCESS_ERR);
}

static enum took invalid_request(struct tp_qp *qp, struct sof_resp_shm *rs, const struct answer *an,
				 const struct roce_hdr *h)
{
	return take_fatal(qp, rs, an, h, ROCE_NAK_INV_REQ, IBV_EVENT_QP_REQ_ERR);
}

static bool remote_write_ok(const struct tp_qp *qp)
{
	return atomic_load_explicit(&qp->shm->access, memory_order_relaxed) &
	       IBV_ACCESS_REMOTE_WRITE;
}

/* The message in progress as the owner's engine keeps it (struct sof_tqp
 * in_msg), and back. */
static uint32_t msg_flags(uint32_t in_msg)
{
	return in_msg == SOF_RESP_MSG_WRITE  ? ROCE_F_WRITE
	       : in_msg == SOF_RESP_MSG_SEND ? ROCE_F_SEND
					     : 0;
}

static uint32_t msg_code(uint32_t flags)
{
	return flags == ROCE_F_WRITE  ? SOF_RESP_MSG_WRITE
	       : flags == ROCE_F_SEND ? SOF_RESP_MSG_SEND
				      : SOF_RESP_MSG_NONE;
}

/* The receive WQE for the message of request h from the QP's peer dqpn
 * (an: where an RC QP's answers go; NULL for UC): the one in hand, or the
 * next of the QP's ring or SRQ, shared with the owner (rwqe.c), into
 * rs->rcv_*. An RC QP with none sends an RNR NAK (IBA 9.7.5.2.8: the
 * requester waits min_rnr_timer, the state unchanged). A malformed WQE
 * (only a program that scribbles on its own ring makes one) completes in
 * error at once, as the owner completes it, with the owner's NAK (UC: the
 * request is left). TOOK_DONE when one is in hand. */
static enum took rcv_take(struct tp_qp *qp, struct sof_resp_shm *rs, const struct answer *an,
			  uint32_t dqpn, const struct roce_hdr *h, uint8_t wc_opcode)
{
	int err;

	if (!qp->recv_cq)
		return TOOK_LEFT;
	if (rs->rcv_active)
		return TOOK_DONE;
	err = tp_rwqe_take(qp, &rs->rcv_wr_id, rs->rcv_sge, &rs->rcv_nsge);
	if (err == -EAGAIN) {
		struct roce_hdr nak;
		uint32_t code;

		if (!an)
			return TOOK_LEFT; /* UC: the message is lost */
		code = atomic_load_explicit(&qp->shm->min_rnr_timer, memory_order_relaxed);
		memset(&nak, 0, sizeof(nak));
		answer(an, ROCE_ACK, h->psn, &nak);
		nak.syndrome = (uint8_t)(ROCE_AETH_RNR_NAK | (code & 0x1f));
		tp_count(SOF_CNT_rnr_nak_sent, 1);
		tp_send(&an->path, &nak, 0, NULL, NULL);
		return TOOK_ANSWERED;
	}
	rs->daemon_ran = 1;
	rs->rcv_off = 0;
	if (err) {
		rs->rcv_active = 0;
		tp_recv_complete(qp, rs->rcv_wr_id, dqpn, IBV_WC_LOC_QP_OP_ERR, wc_opcode, 0, h, 0);
		return an ? take_fatal(qp, rs, an, h, ROCE_NAK_REM_OP_ERR, 0) : TOOK_LEFT;
	}
	rs->rcv_active = 1;
	return TOOK_DONE;
}

/* The payload of a SEND into the receive WQE in hand at rs->rcv_off:
 * 0, or the error of tp_sgl_copy. */
static int rcv_place(const struct tp_qp *qp, const struct sof_resp_shm *rs, const uint8_t *payload,
		     uint32_t paylen)
{
	struct sof_sge sge[SOF_RESP_SGE];
	uint32_t nsge = rs->rcv_nsge;

	if (nsge > SOF_RESP_SGE)
		return -EINVAL;
	memcpy(sge, rs->rcv_sge, nsge * sizeof(sge[0]));
	return tp_sgl_copy(qp, sge, nsge, rs->rcv_off, (uint8_t *)payload, paylen, true);
}

/* Whether the keys of the receive WQE in hand grant [off, off + len)
 * (only the checks, TP_MR_PROBE): when rcv_place failed, a key the owner
 * would fail too, or only the daemon's view of a region (left). */
static bool rcv_keys_ok(const struct tp_qp *qp, const struct sof_resp_shm *rs, uint64_t off,
			uint64_t len)
{
	struct sof_sge sge[SOF_RESP_SGE];
	uint32_t nsge = rs->rcv_nsge;

	if (nsge > SOF_RESP_SGE)
		return true;
	memcpy(sge, rs->rcv_sge, nsge * sizeof(sge[0]));
	for (uint32_t i = 0; i < nsge && len; i++) {
		uint64_t n;

		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		n = sge[i].length - off < len ? sge[i].length - off : len;
		if (!tp.host->mr_ptr(qp, sge[i].lkey, sge[i].addr + off, n,
				     IBV_ACCESS_LOCAL_WRITE | TP_MR_PROBE))
			return false;
		len -= n;
		off = 0;
	}
	return true;
}

/* The receive WQE in hand completed for request h, which ends a message
 * of byte_len bytes. */
static void rcv_complete(struct tp_qp *qp, struct sof_resp_shm *rs, uint32_t dqpn,
			 const struct roce_hdr *h, uint8_t wc_opcode, uint64_t byte_len)
{
	rs->rcv_active = 0;
	tp_recv_complete(qp, rs->rcv_wr_id, dqpn, IBV_WC_SUCCESS, wc_opcode, (uint32_t)byte_len, h,
			 0);
}

/* An in-order RDMA WRITE, one that starts or one that continues the
 * WRITE in progress, each packet but the last a full MTU (IBA 9.7.5.1),
 * in the owner's order: the range of the whole WRITE checked at its
 * first packet, the receive WQE of one with immediate data taken (or RNR)
 * before its last packet's data moves, then placed and, with immediate
 * data, completed (9.4.1.1: the completion reports the DMA length). What
 * the owner would NAK is NAKed so (take_fatal); a region the daemon cannot
 * reach is left to the owner. */
static enum took take_write(struct tp_qp *qp, struct sof_resp_shm *rs, const struct roce_hdr *h,
			    uint32_t f, const uint8_t *payload, uint32_t paylen,
			    const struct answer *an)
{
	uint64_t wva, wlen, left;
	uint32_t wrkey;
	enum took r;
	uint8_t *p;

	/* the owner's execute: opcode sequence, full packets */
	if (rs->in_msg != ((f & ROCE_F_FIRST) ? SOF_RESP_MSG_NONE : SOF_RESP_MSG_WRITE) ||
	    paylen > rs->mtu || (!(f & ROCE_F_LAST) && paylen != rs->mtu))
		return invalid_request(qp, rs, an, h);
	if (f & ROCE_F_FIRST) {
		wva = h->va;
		wrkey = h->rkey;
		wlen = left = h->dmalen;
		if (wlen &&
		    (!remote_write_ok(qp) ||
		     !tp.host->mr_ptr(qp, wrkey, wva, wlen, IBV_ACCESS_REMOTE_WRITE | TP_MR_PROBE)))
			return access_error(qp, rs, an, h);
	} else {
		wva = rs->wr_va;
		wrkey = rs->wr_rkey;
		wlen = rs->wr_len;
		left = rs->wr_left;
	}
	if (wlen < left)
		return TOOK_LEFT;
	if (paylen > left || ((f & ROCE_F_LAST) && paylen != left))
		return invalid_request(qp, rs, an, h);
	if ((f & (ROCE_F_LAST | ROCE_F_IMMDT)) == (ROCE_F_LAST | ROCE_F_IMMDT)) {
		r = rcv_take(qp, rs, an, an->dqpn, h, IBV_WC_RECV_RDMA_WITH_IMM);
		if (r != TOOK_DONE)
			return r;
	}
	if (paylen) {
		p = tp.host->mr_ptr(qp, wrkey, wva + (wlen - left), paylen,
				    IBV_ACCESS_REMOTE_WRITE);
		if (!p)
			return TOOK_LEFT;
		memcpy(p, payload, paylen);
		tp.host->mr_done(qp, p, paylen);
	}
	rs->wr_va = wva;
	rs->wr_rkey = wrkey;
	rs->wr_len = wlen;
	rs->wr_left = left - paylen;
	rs->epsn = (rs->epsn + 1) & ROCE_PSN_MASK;
	if (!(f & ROCE_F_LAST)) {
		rs->in_msg = SOF_RESP_MSG_WRITE;
		return TOOK_DONE;
	}
	rs->in_msg = SOF_RESP_MSG_NONE;
	rs->msn = (rs->msn + 1) & 0xffffff;
	if (f & ROCE_F_IMMDT)
		rcv_complete(qp, rs, an->dqpn, h, IBV_WC_RECV_RDMA_WITH_IMM, wlen);
	return TOOK_DONE;
}

/* An in-order SEND (with immediate data, with invalidate; IBA 9.4.1.1),
 * one that starts or continues the SEND in progress: into the receive
 * WQE taken at its first packet (or RNR), completed at its last. A
 * message longer than the WQE's buffers, buffers whose keys fail, a
 * window this QP may not invalidate: the WQE completed in error and the
 * owner's NAK (do_send). Buffers the daemon cannot reach: left to the
 * owner, the WQE in hand, so that the requester's retry finds there what
 * it would have found. */
static enum took take_send(struct tp_qp *qp, struct sof_resp_shm *rs, const struct roce_hdr *h,
			   uint32_t f, const uint8_t *payload, uint32_t paylen,
			   const struct answer *an)
{
	enum took r;
	int err;

	if (rs->in_msg != ((f & ROCE_F_FIRST) ? SOF_RESP_MSG_NONE : SOF_RESP_MSG_SEND) ||
	    paylen > rs->mtu || (!(f & ROCE_F_LAST) && paylen != rs->mtu))
		return invalid_request(qp, rs, an, h);
	if (f & ROCE_F_FIRST) {
		r = rcv_take(qp, rs, an, an->dqpn, h, IBV_WC_RECV);
		if (r != TOOK_DONE)
			return r;
		rs->rcv_off = 0;
	}
	if (!rs->rcv_active)
		return TOOK_LEFT;
	err = rcv_place(qp, rs, payload, paylen);
	if (err == -EMSGSIZE) {
		/* longer than the receive buffers */
		rs->rcv_active = 0;
		tp_recv_complete(qp, rs->rcv_wr_id, an->dqpn, IBV_WC_LOC_LEN_ERR, IBV_WC_RECV, 0, h,
				 0);
		return invalid_request(qp, rs, an, h);
	}
	if (err == -EACCES && !rcv_keys_ok(qp, rs, rs->rcv_off, paylen)) {
		rs->rcv_active = 0;
		tp_recv_complete(qp, rs->rcv_wr_id, an->dqpn, IBV_WC_LOC_PROT_ERR, IBV_WC_RECV, 0,
				 h, 0);
		return take_fatal(qp, rs, an, h, ROCE_NAK_REM_OP_ERR, 0);
	}
	if (err)
		return TOOK_LEFT;
	if ((f & ROCE_F_IETH) &&
	    (!tp.host->mw_invalidate || tp.host->mw_invalidate(qp, h->inv_rkey))) {
		rs->rcv_active = 0;
		tp_recv_complete(qp, rs->rcv_wr_id, an->dqpn, IBV_WC_REM_INV_REQ_ERR, IBV_WC_RECV,
				 0, h, 0);
		return invalid_request(qp, rs, an, h);
	}
	rs->rcv_off += paylen;
	rs->epsn = (rs->epsn + 1) & ROCE_PSN_MASK;
	if (!(f & ROCE_F_LAST)) {
		rs->in_msg = SOF_RESP_MSG_SEND;
		return TOOK_DONE;
	}
	rs->in_msg = SOF_RESP_MSG_NONE;
	rs->msn = (rs->msn + 1) & 0xffffff;
	rcv_complete(qp, rs, an->dqpn, h, IBV_WC_RECV, rs->rcv_off);
	return TOOK_DONE;
}

/* An in-order READ (IBA 9.7.5.1.3): the checks of the owner's do_read
 * (failed: its NAK), a responder resource, the responses; or left when
 * the daemon cannot reach the region. */
static enum took take_read(struct tp_qp *qp, struct sof_resp_shm *rs, const struct roce_hdr *h,
			   struct answer *an)
{
	uint32_t npkts = h->dmalen ? (uint32_t)(((uint64_t)h->dmalen + rs->mtu - 1) / rs->mtu) : 1;
	struct sof_resp_res *e;
	uint8_t *p;

	if (!rs->max_dest || npkts > TP_MAX_MSG_PKTS)
		return invalid_request(qp, rs, an, h);
	if (h->dmalen) {
		if (!(atomic_load_explicit(&qp->shm->access, memory_order_relaxed) &
		      IBV_ACCESS_REMOTE_READ) ||
		    !tp.host->mr_ptr(qp, h->rkey, h->va, h->dmalen,
				     IBV_ACCESS_REMOTE_READ | TP_MR_PROBE))
			return access_error(qp, rs, an, h);
		/* the keys hold; the first response's bytes within reach */
		p = tp.host->mr_ptr(qp, h->rkey, h->va, h->dmalen < rs->mtu ? h->dmalen : rs->mtu,
				    IBV_ACCESS_REMOTE_READ);
		if (!p)
			return TOOK_LEFT;
		tp.host->mr_done(qp, p, 0);
	}
	e = res_new(rs);
	e->type = TP_RES_READ;
	e->psn = h->psn;
	e->npkts = npkts;
	e->va = h->va;
	e->rkey = h->rkey;
	e->len = h->dmalen;
	rs->msn = (rs->msn + 1) & 0xffffff;
	rs->epsn = (h->psn + npkts) & ROCE_PSN_MASK;
	an->msn = rs->msn;
	serve_read(qp, an, rs->mtu, h->psn, h->va, h->rkey, h->dmalen);
	return TOOK_ANSWERED;
}

/* The word of an atomic (need: its access) in the daemon's view, after
 * the owner's checks (do_atomic: IBA 9.4.5 alignment, then the key): NULL
 * with *r the NAK sent or TOOK_LEFT (a region the daemon cannot reach, a
 * word misaligned in its mapping: left to the owner). */
static uint64_t *atomic_word(struct tp_qp *qp, struct sof_resp_shm *rs, const struct roce_hdr *h,
			     const struct answer *an, uint32_t need, enum took *r)
{
	uint64_t *p;

	if (!rs->max_dest || (h->va & 7)) {
		*r = invalid_request(qp, rs, an, h);
		return NULL;
	}
	if (!(atomic_load_explicit(&qp->shm->access, memory_order_relaxed) & need) ||
	    !tp.host->mr_ptr(qp, h->rkey, h->va, 8, need | TP_MR_PROBE)) {
		*r = access_error(qp, rs, an, h);
		return NULL;
	}
	*r = TOOK_LEFT;
	p = (uint64_t *)(void *)tp.host->mr_ptr(qp, h->rkey, h->va, 8, need);
	if (p && ((uintptr_t)p & 7)) {
		tp.host->mr_done(qp, (uint8_t *)p, 0);
		p = NULL;
	}
	return p;
}

/* An in-order compare-and-swap or fetch-and-add (IBA 9.4.5, 9.7.5.1.4):
 * the checks of the owner's do_atomic, applied once, its result kept in
 * a responder resource. */
static enum took take_atomic(struct tp_qp *qp, struct sof_resp_shm *rs, const struct roce_hdr *h,
			     uint8_t op, struct answer *an)
{
	struct sof_resp_res *e;
	uint64_t *p, orig;
	enum took r;

	p = atomic_word(qp, rs, h, an, IBV_ACCESS_REMOTE_ATOMIC, &r);
	if (!p)
		return r;
	if (op == ROCE_FETCH_ADD) {
		orig = __atomic_fetch_add(p, h->swap_add, __ATOMIC_SEQ_CST);
	} else {
		orig = h->compare;
		__atomic_compare_exchange_n(p, &orig, h->swap_add, false, __ATOMIC_SEQ_CST,
					    __ATOMIC_SEQ_CST);
	}
	tp.host->mr_done(qp, (uint8_t *)p, 8);
	e = res_new(rs);
	e->type = TP_RES_ATOMIC;
	e->psn = h->psn;
	e->npkts = 1;
	e->orig = orig;
	rs->msn = (rs->msn + 1) & 0xffffff;
	rs->epsn = (h->psn + 1) & ROCE_PSN_MASK;
	an->msn = rs->msn;
	send_atomic_ack(an, h->psn, orig);
	return TOOK_ANSWERED;
}

/* An in-order ATOMIC WRITE (IBA 9.4.7): the checks of the owner's
 * do_atomic_write, stored once, a responder resource for its
 * duplicates, answered with a zero-length READ response; or false. */
static enum took take_atomic_write(struct tp_qp *qp, struct sof_resp_shm *rs,
				   const struct roce_hdr *h, const uint8_t *payload,
				   uint32_t paylen, struct answer *an)
{
	struct sof_resp_res *e;
	uint64_t *p, v;
	enum took r;

	if (h->dmalen != 8 || paylen != 8)
		return invalid_request(qp, rs, an, h);
	p = atomic_word(qp, rs, h, an, IBV_ACCESS_REMOTE_WRITE, &r);
	if (!p)
		return r;
	memcpy(&v, payload, 8);
	__atomic_store_n(p, v, __ATOMIC_SEQ_CST);
	tp.host->mr_done(qp, (uint8_t *)p, 8);
	e = res_new(rs);
	e->type = TP_RES_ATOMIC;
	e->psn = h->psn;
	e->npkts = 1;
	rs->msn = (rs->msn + 1) & 0xffffff;
	rs->epsn = (h->psn + 1) & ROCE_PSN_MASK;
	an->msn = rs->msn;
	serve_read(qp, an, rs->mtu, h->psn, 0, 0, 0);
	return TOOK_ANSWERED;
}

/* A duplicate (IBA 9.7.5.1.2): answered as the owner answers it, or
 * false when the shared state does not keep what that takes. */
static bool take_duplicate(const struct tp_qp *qp, const struct sof_resp_shm *rs,
			   const struct roce_hdr *h, uint32_t f, uint8_t op, struct answer *an)
{
	const struct sof_resp_res *e;
	struct roce_hdr a;

	if (op == ROCE_READ_REQ) {
		e = res_find(rs, h->psn, TP_RES_READ);
		/* only inside what the original request was granted */
		if (!e || h->rkey != e->rkey || h->va < e->va || h->dmalen > e->len ||
		    h->va - e->va > e->len - h->dmalen || rs->mtu < 256 || rs->mtu > 4096)
			return false;
		serve_read(qp, an, rs->mtu, h->psn, h->va, h->rkey, h->dmalen);
		return true;
	}
	if (op == ROCE_CMP_SWAP || op == ROCE_FETCH_ADD || op == ROCE_ATOMIC_WRITE) {
		e = res_find(rs, h->psn, TP_RES_ATOMIC);
		if (!e || (e->psn & ROCE_PSN_MASK) != h->psn)
			return false;
		if (op == ROCE_ATOMIC_WRITE)
			serve_read(qp, an, rs->mtu, h->psn, 0, 0, 0);
		else
			send_atomic_ack(an, h->psn, e->orig);
		return true;
	}
	if (!(f & (ROCE_F_SEND | ROCE_F_WRITE)))
		return false;
	memset(&a, 0, sizeof(a));
	answer(an, ROCE_ACK, rs->epsn - 1, &a);
	tp_send(&an->path, &a, 0, NULL, NULL);
	return true;
}

/* A sequence-error NAK naming the expected PSN (IBA 9.7.5.2.1): it
 * acknowledges every request before it, and the requester goes back to
 * it, resending all that follows (go-back-N; a SACKing requester too). So
 * it no longer counts on what the owner keeps. */
static void seq_nak(struct sof_resp_shm *rs, const struct answer *an)
{
	struct roce_hdr nak;

	memset(&nak, 0, sizeof(nak));
	answer(an, ROCE_ACK, rs->epsn, &nak);
	nak.syndrome = ROCE_AETH_NAK | ROCE_NAK_PSN_SEQ_ERR;
	tp_count(SOF_CNT_nak_sent, 1);
	tp_send(&an->path, &nak, 0, NULL, NULL);
	rs->nak_sent = 1;
	rs->kept = 0;
}

/* A request ahead of the expected PSN: the daemon has nowhere to keep it
 * (the owner keeps such packets in its own memory), so it answers as a
 * responder that keeps none (IBA 9.7.5.2.1), as the owner does for a
 * standard requester: one NAK per sequence error, and one more when the
 * requester evidently went back (a PSN at or below the last one ahead)
 * and lost the expected packet again; the rest is dropped. Without it a
 * loss while the owner does not run cost the requester a tail-loss probe
 * answered by nothing, then its transport timeout. */
static bool take_ahead(struct sof_resp_shm *rs, const struct roce_hdr *h, const struct answer *an)
{
	bool nak = !rs->nak_sent || roce_psn_diff(h->psn, rs->nak_oos & ROCE_PSN_MASK) <= 0;

	if (nak)
		seq_nak(rs, an);
	rs->nak_oos = h->psn;
	return nak;
}

/* The expected PSN moved on (the daemon executed the request before it):
 * a sequence error there is a new one. When the owner keeps packets from
 * there on that it SACKed (the requester will not send them again unless
 * it goes back), and the daemon cannot reach them, a sequence-error NAK
 * stands for the ACK (it acknowledges the same) and sends the requester
 * back to the expected PSN: true then. */
static bool moved(struct sof_resp_shm *rs, const struct answer *an)
{
	rs->nak_sent = 0;
	if (!rs->kept)
		return false;
	if (roce_psn_diff(rs->kept_top & ROCE_PSN_MASK, rs->epsn & ROCE_PSN_MASK) < 0) {
		rs->kept = 0; /* everything kept is behind it now */
		return false;
	}
	seq_nak(rs, an);
	rs->nak_oos = rs->kept_top;
	return true;
}

/* A UC packet (IBA 9.8.2), as the owner's uc_packet takes it: a gap in
 * the PSNs loses the message in progress, only a FIRST or ONLY starts
 * one; RDMA WRITEs are placed, SENDs and WRITEs with immediate data
 * delivered into the receive WQEs (none: the message is lost, as UC
 * allows). Nothing is answered. Buffers that fail their checks complete
 * the WQE in error and lose the message (the owner's QP would also go to
 * ERROR: the daemon leaves that to the owner's next error). True when
 * the packet was placed. */
static bool take_uc(struct tp_qp *qp, struct sof_resp_shm *rs, const struct roce_hdr *h, uint32_t f,
		    const uint8_t *payload, uint32_t paylen, uint32_t dqpn)
{
	uint32_t msg = msg_flags(rs->in_msg);
	bool imm_last = (f & (ROCE_F_LAST | ROCE_F_IMMDT)) == (ROCE_F_LAST | ROCE_F_IMMDT);
	uint8_t *p;
	int err;

	if (!rs->valid || rs->mtu < 256 || rs->mtu > 4096)
		return false;
	rs->daemon_ran = 1;
	if (h->psn != (rs->epsn & ROCE_PSN_MASK))
		msg = 0; /* lost: a FIRST or ONLY may start the next */
	rs->epsn = (h->psn + 1) & ROCE_PSN_MASK;
	rs->in_msg = SOF_RESP_MSG_NONE;
	if ((msg ? !(f & msg) || !(f & (ROCE_F_MIDDLE | ROCE_F_LAST)) : !(f & ROCE_F_FIRST)) ||
	    paylen > rs->mtu || (!(f & ROCE_F_LAST) && paylen != rs->mtu))
		return false;
	if (f & ROCE_F_WRITE) {
		if (f & ROCE_F_FIRST) {
			if (h->dmalen &&
			    (!remote_write_ok(qp) ||
			     !tp.host->mr_ptr(qp, h->rkey, h->va, h->dmalen,
					      IBV_ACCESS_REMOTE_WRITE | TP_MR_PROBE))) {
				tp_count(SOF_CNT_key_violations, 1);
				rs->in_msg = msg_code(msg);
				return false;
			}
			rs->wr_va = h->va;
			rs->wr_rkey = h->rkey;
			rs->wr_len = rs->wr_left = h->dmalen;
		}
		if (paylen > rs->wr_left || ((f & ROCE_F_LAST) && paylen != rs->wr_left) ||
		    rs->wr_len < rs->wr_left ||
		    (imm_last &&
		     rcv_take(qp, rs, NULL, dqpn, h, IBV_WC_RECV_RDMA_WITH_IMM) != TOOK_DONE))
			return false;
		if (paylen) {
			p = tp.host->mr_ptr(qp, rs->wr_rkey, rs->wr_va + (rs->wr_len - rs->wr_left),
					    paylen, IBV_ACCESS_REMOTE_WRITE);
			if (!p) {
				tp_count(SOF_CNT_key_violations, 1);
				return false;
			}
			memcpy(p, payload, paylen);
			tp.host->mr_done(qp, p, paylen);
			rs->wr_left -= paylen;
		}
		if (!(f & ROCE_F_LAST))
			rs->in_msg = SOF_RESP_MSG_WRITE;
		else if (imm_last)
			rcv_complete(qp, rs, dqpn, h, IBV_WC_RECV_RDMA_WITH_IMM, rs->wr_len);
		return true;
	}
	/* SEND */
	if ((f & ROCE_F_FIRST) && rcv_take(qp, rs, NULL, dqpn, h, IBV_WC_RECV) != TOOK_DONE)
		return false;
	if (!rs->rcv_active)
		return false;
	if (f & ROCE_F_FIRST)
		rs->rcv_off = 0;
	err = rcv_place(qp, rs, payload, paylen);
	if (err) {
		rs->rcv_active = 0;
		tp_recv_complete(qp, rs->rcv_wr_id, dqpn,
				 err == -EMSGSIZE ? IBV_WC_LOC_LEN_ERR : IBV_WC_LOC_PROT_ERR,
				 IBV_WC_RECV, 0, h, 0);
		return false;
	}
	rs->rcv_off += paylen;
	if (!(f & ROCE_F_LAST))
		rs->in_msg = SOF_RESP_MSG_SEND;
	else
		rcv_complete(qp, rs, dqpn, h, IBV_WC_RECV, rs->rcv_off);
	return true;
}

/* Request h for the QP of rs (its lock held), from a to the QP's peer
 * dqpn: executed or answered (true), or left for the owner (false). */
static bool take(struct tp_qp *qp, struct sof_resp_shm *rs, const struct roce_hdr *h,
		 const uint8_t *payload, uint32_t paylen, const struct roce_addr *a, uint32_t dqpn)
{
	uint32_t f = roce_opinfo(h->opcode)->flags;
	uint8_t op = h->opcode & ~ROCE_SVC_MASK;
	int32_t d = roce_psn_diff(h->psn, rs->epsn & ROCE_PSN_MASK);
	struct answer an = {.path = {.hop_limit = 64}, .dqpn = dqpn, .msn = rs->msn};
	struct roce_hdr ack;
	uint32_t before;
	enum took r;

	if (!rs->valid || rs->mtu < 256 || rs->mtu > 4096 || d < -TP_DUP_WINDOW)
		return false;
	memcpy(an.path.sgid, a->dst, 16);
	memcpy(an.path.dgid, a->src, 16);
	an.path.sport = tp_flow_port(!sof_gid_is_v4(a->src), qp->qpn, dqpn);
	if (d < 0)
		return take_duplicate(qp, rs, h, f, op, &an);
	if (d > 0)
		return take_ahead(rs, h, &an);
	before = rs->epsn;
	if (f & ROCE_F_SEND)
		r = take_send(qp, rs, h, f, payload, paylen, &an);
	else if (f & ROCE_F_WRITE)
		r = take_write(qp, rs, h, f, payload, paylen, &an);
	else if (rs->in_msg != SOF_RESP_MSG_NONE)
		r = invalid_request(qp, rs, &an, h); /* they start a message: none in progress */
	else if (op == ROCE_READ_REQ)
		r = take_read(qp, rs, h, &an);
	else if (op == ROCE_CMP_SWAP || op == ROCE_FETCH_ADD)
		r = take_atomic(qp, rs, h, op, &an);
	else if (op == ROCE_ATOMIC_WRITE)
		r = take_atomic_write(qp, rs, h, payload, paylen, &an);
	else
		r = TOOK_LEFT;
	if (r == TOOK_LEFT)
		return false;
	rs->daemon_ran = 1;
	an.msn = rs->msn;
	if (rs->epsn != before && rs->valid && moved(rs, &an))
		return true;
	if (r == TOOK_ANSWERED)
		return true;
	/* the SEND's or WRITE's ACK (IBA 9.7.5.1.2) */
	memset(&ack, 0, sizeof(ack));
	answer(&an, ROCE_ACK, rs->epsn - 1, &ack);
	tp_send(&an.path, &ack, 0, NULL, NULL);
	return true;
}

bool tp_takeover_packet(struct tp_qp *qp, const struct roce_hdr *h, const uint8_t *payload,
			uint32_t paylen, const struct roce_addr *a)
{
	uint32_t dqpn = 0, expect = SOF_RESP_FREE;
	struct sof_resp_shm *rs;
	bool done;

	if (!tp.host->takeover || (qp->type != IBV_QPT_RC && qp->type != IBV_QPT_UC))
		return false;
	rs = tp.host->takeover(qp, a->src, &dqpn);
	if (!rs)
		return false;
	/* an ACK or response for the owner's requester: kept for it by the
	 * host (which the owner takes in before anything else when it runs
	 * again: an ACK that came while it did not run ends its requests'
	 * deadlines, as an HCA's would, instead of a local ACK timeout and a
	 * resend, IBA 9.7.6.1.3); when it cannot be, dropped, and no more
	 * read for it now, so that the owner finds the rest */
	if (!(roce_opinfo(h->opcode)->flags & ROCE_F_REQ)) {
		if (tp.rx_pkt && tp.host->keep && tp.host->keep(qp, tp.rx_pkt, tp.rx_pkt_len, a)) {
			tp_count(SOF_CNT_takeover_kept, 1);
			return true;
		}
		tp_rx_stop();
		tp_drop(SOF_DROP_takeover);
		return true;
	}
	if ((h->opcode & ROCE_SVC_MASK) != (qp->type == IBV_QPT_UC ? ROCE_SVC_UC : ROCE_SVC_RC) ||
	    !tp_pkey_match(0xffff, h->pkey) ||
	    !sof_qp_state_receives(atomic_load_explicit(&qp->shm->state, memory_order_acquire)) ||
	    !atomic_compare_exchange_strong_explicit(&rs->lock, &expect, SOF_RESP_DAEMON,
						     memory_order_acquire, memory_order_relaxed)) {
		tp_drop(SOF_DROP_takeover);
		return true;
	}
	done = qp->type == IBV_QPT_UC
		   ? take_uc(qp, rs, h, roce_opinfo(h->opcode)->flags, payload, paylen, dqpn)
		   : take(qp, rs, h, payload, paylen, a, dqpn);
	atomic_store_explicit(&rs->lock, SOF_RESP_FREE, memory_order_release);
	if (done)
		tp_count(SOF_CNT_takeover, 1);
	else
		tp_drop(SOF_DROP_takeover);
	return true;
}
