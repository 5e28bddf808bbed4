/*
 * The responder of an RC QP whose transport runs in its owner (the engine
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
 * The daemon executes what needs no more state than that: RDMA WRITEs
 * without immediate data, READs and atomics (compare-and-swap,
 * fetch-and-add), in order (IBA 9.7.5.1: the expected PSN; R_Key, range
 * and access checked by the host's mr_ptr as the owner checks them,
 * 9.7.5.2.4), and it answers duplicates (9.7.5.1.2): a SEND or WRITE
 * acknowledged, a READ served again inside the range of the original, an
 * atomic answered with the result it returned, never applied twice. For
 * those the responder resources (9.7.5.1.4) live in the shared state too:
 * the owner publishes the ones it made, the daemon adds its own, and the
 * owner takes those into its ring when it takes the state back, so a
 * duplicate of an atomic the daemon executed gets the daemon's result
 * from the owner as well. Everything else (SEND, WRITE with immediate,
 * ATOMIC WRITE, a packet ahead of the expected PSN, a QP whose owner
 * keeps packets ahead of a gap, a key or length the owner would NAK, a
 * duplicate whose resource the shared state no longer keeps) it drops
 * without a NAK: the requester's retry brings it to the owner once that
 * runs again, which answers it as the standard says. Counters: takeover
 * (packets executed or answered here), drops takeover (left for the
 * owner).
 */
#include "tport.h"

#include "sof_wr.h"

#include "sof_gid.h"

#include <sched.h>

/* The owner waits this long for a daemon that holds the lock (it holds it
 * for one packet); past it the daemon is taken to be gone. */
#define OWNER_WAIT_NS 1000000000ull

/* ---- the owner's side ------------------------------------------------------------ */

static void owner_lock(struct sof_resp_shm *rs)
{
	uint64_t until = 0;

	for (;;) {
		uint32_t expect = SOF_RESP_FREE;

		if (atomic_compare_exchange_weak_explicit(&rs->lock, &expect, SOF_RESP_OWNER,
							  memory_order_acquire,
							  memory_order_relaxed))
			return;
		if (expect == SOF_RESP_OWNER) /* left so by an owner that died */
			return;
		if (!until)
			until = sof_now_ns() + OWNER_WAIT_NS;
		else if (sof_now_ns() > until) {
			atomic_store_explicit(&rs->lock, SOF_RESP_OWNER, memory_order_relaxed);
			return;
		}
		sched_yield();
	}
}

static void owner_unlock(struct sof_resp_shm *rs)
{
	atomic_store_explicit(&rs->lock, SOF_RESP_FREE, memory_order_release);
}

void tp_resp_shared_enter(struct sof_tqp *t)
{
	struct sof_resp_shm *rs = t->qp->rshm;
	uint32_t n, end;

	owner_lock(rs);
	if (!rs->daemon_ran)
		return;
	/* the daemon executed requests meanwhile: its state is ours */
	rs->daemon_ran = 0;
	t->epsn = rs->epsn & ROCE_PSN_MASK;
	t->msn = rs->msn & 0xffffff;
	t->nak_sent = false;
	if (rs->in_msg == SOF_RESP_MSG_WRITE) {
		t->in_msg = ROCE_F_WRITE;
		t->wr_rkey = rs->wr_rkey;
		t->wr_va = rs->wr_va;
		t->wr_len = rs->wr_len;
		t->wr_left = rs->wr_left;
	} else if (rs->in_msg == SOF_RESP_MSG_NONE) {
		t->in_msg = 0;
	}
	/* the READs and atomics it executed are duplicates to us now */
	end = rs->res_next; /* read once: the loop's bound stays put */
	n = end - rs->res_owner;
	if (n > SOF_RESP_RES)
		n = SOF_RESP_RES;
	for (uint32_t i = end - n; i != end; i++) {
		const struct sof_resp_res *e = &rs->res[i % SOF_RESP_RES];
		struct tp_res *r = &t->res[t->res_next++ % t->nres];

		*r = (struct tp_res){.type = (uint8_t)e->type,
				     .psn = e->psn,
				     .npkts = e->npkts,
				     .va = e->va,
				     .rkey = e->rkey,
				     .len = e->len,
				     .orig = e->orig};
	}
	t->res_pub = t->res_next;
}

void tp_resp_shared_leave(struct sof_tqp *t)
{
	struct sof_resp_shm *rs = t->qp->rshm;
	uint32_t n;

	rs->epsn = t->epsn;
	rs->msn = t->msn;
	rs->in_msg = !t->in_msg			 ? SOF_RESP_MSG_NONE
		     : t->in_msg == ROCE_F_WRITE ? SOF_RESP_MSG_WRITE
						 : SOF_RESP_MSG_OTHER;
	rs->wr_rkey = t->wr_rkey;
	rs->wr_va = t->wr_va;
	rs->wr_len = t->wr_len;
	rs->wr_left = t->wr_left;
	rs->kept = t->nooo;
	rs->mtu = t->mtu;
	rs->max_dest = t->max_dest_rd_atomic;
	/* the responder resources made since the last time (a modify that
	 * resized the ring restarted its count) */
	n = t->res_next - t->res_pub;
	if (n > t->nres || n > t->res_next)
		n = t->nres < t->res_next ? t->nres : t->res_next;
	if (n > SOF_RESP_RES)
		n = SOF_RESP_RES;
	for (uint32_t i = t->res_next - n; i != t->res_next; i++) {
		const struct tp_res *r = &t->res[i % t->nres];

		rs->res[rs->res_next++ % SOF_RESP_RES] = (struct sof_resp_res){.type = r->type,
									      .psn = r->psn,
									      .npkts = r->npkts,
									      .rkey = r->rkey,
									      .len = r->len,
									      .va = r->va,
									      .orig = r->orig};
	}
	rs->res_owner = rs->res_next;
	t->res_pub = t->res_next;
	/* a QP in ERROR answers nothing: the daemon must not either */
	rs->valid = t->state != IBV_QPS_ERR;
	owner_unlock(rs);
}

void tp_resp_shared_void(struct tp_qp *qp)
{
	if (!qp->rshm)
		return;
	owner_lock(qp->rshm);
	qp->rshm->valid = 0;
	qp->rshm->daemon_ran = 0;
	owner_unlock(qp->rshm);
}

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

/* An in-order RDMA WRITE without immediate data, one that starts or one
 * that continues the WRITE in progress, each packet but the last a full
 * MTU (IBA 9.7.5.1): placed, or false. */
static bool take_write(const struct tp_qp *qp, struct sof_resp_shm *rs, const struct roce_hdr *h,
		       uint32_t f, const uint8_t *payload, uint32_t paylen)
{
	uint64_t va, left;
	uint8_t *p;

	if ((f & ROCE_F_IMMDT) ||
	    rs->in_msg != ((f & ROCE_F_FIRST) ? SOF_RESP_MSG_NONE : SOF_RESP_MSG_WRITE) ||
	    paylen > rs->mtu || (!(f & ROCE_F_LAST) && paylen != rs->mtu) ||
	    !(atomic_load_explicit(&qp->shm->access, memory_order_relaxed) &
	      IBV_ACCESS_REMOTE_WRITE))
		return false;
	if (f & ROCE_F_FIRST) {
		rs->wr_va = h->va;
		rs->wr_rkey = h->rkey;
		rs->wr_len = rs->wr_left = h->dmalen;
	}
	left = rs->wr_left;
	if (paylen > left || ((f & ROCE_F_LAST) && paylen != left) || rs->wr_len < left)
		return false;
	va = rs->wr_va + (rs->wr_len - left);
	if (paylen) {
		p = tp.host->mr_ptr(qp, rs->wr_rkey, va, paylen, IBV_ACCESS_REMOTE_WRITE);
		if (!p)
			return false;
		memcpy(p, payload, paylen);
		tp.host->mr_done(qp, p, paylen);
	}
	rs->wr_left = left - paylen;
	rs->epsn = (rs->epsn + 1) & ROCE_PSN_MASK;
	if (f & ROCE_F_LAST) {
		rs->in_msg = SOF_RESP_MSG_NONE;
		rs->msn = (rs->msn + 1) & 0xffffff;
	} else {
		rs->in_msg = SOF_RESP_MSG_WRITE;
	}
	return true;
}

/* An in-order READ (IBA 9.7.5.1.3): the checks of the owner's do_read,
 * a responder resource, the responses; or false. */
static bool take_read(const struct tp_qp *qp, struct sof_resp_shm *rs, const struct roce_hdr *h,
		      struct answer *an)
{
	uint32_t npkts = h->dmalen ? (uint32_t)(((uint64_t)h->dmalen + rs->mtu - 1) / rs->mtu) : 1;
	struct sof_resp_res *e;
	uint8_t *p;

	if (!rs->max_dest || npkts > TP_MAX_MSG_PKTS ||
	    !(atomic_load_explicit(&qp->shm->access, memory_order_relaxed) &
	      IBV_ACCESS_REMOTE_READ))
		return false;
	if (h->dmalen) {
		p = tp.host->mr_ptr(qp, h->rkey, h->va, h->dmalen,
				    IBV_ACCESS_REMOTE_READ | TP_MR_PROBE);
		if (!p)
			return false;
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
	return true;
}

/* An in-order compare-and-swap or fetch-and-add (IBA 9.4.5, 9.7.5.1.4):
 * the checks of the owner's do_atomic, applied once, its result kept in
 * a responder resource; or false. */
static bool take_atomic(const struct tp_qp *qp, struct sof_resp_shm *rs, const struct roce_hdr *h,
			uint8_t op, struct answer *an)
{
	struct sof_resp_res *e;
	uint64_t *p, orig;

	if (!rs->max_dest || (h->va & 7) ||
	    !(atomic_load_explicit(&qp->shm->access, memory_order_relaxed) &
	      IBV_ACCESS_REMOTE_ATOMIC))
		return false;
	p = (uint64_t *)(void *)tp.host->mr_ptr(qp, h->rkey, h->va, 8, IBV_ACCESS_REMOTE_ATOMIC);
	if (!p)
		return false;
	/* a word misaligned in this mapping: the owner's invalid request */
	if ((uintptr_t)p & 7) {
		tp.host->mr_done(qp, (uint8_t *)p, 0);
		return false;
	}
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
	return true;
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
	if (op == ROCE_CMP_SWAP || op == ROCE_FETCH_ADD) {
		e = res_find(rs, h->psn, TP_RES_ATOMIC);
		if (!e || (e->psn & ROCE_PSN_MASK) != h->psn)
			return false;
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

/* A UC packet (IBA 9.8.2), as the owner's uc_packet takes it: a gap in
 * the PSNs loses the message in progress, only a FIRST or ONLY starts
 * one, and RDMA WRITEs without immediate data are placed. A packet that
 * would take a receive WQE (a SEND, a WRITE with immediate) the daemon
 * cannot deliver: its message is lost, as UC allows on a wire, the state
 * moved past it as the owner would move it. Nothing is answered. True
 * when the packet was placed. */
static bool take_uc(const struct tp_qp *qp, struct sof_resp_shm *rs, const struct roce_hdr *h,
		    uint32_t f, const uint8_t *payload, uint32_t paylen)
{
	bool cont = rs->in_msg == SOF_RESP_MSG_WRITE, ok;
	uint8_t *p;

	if (!rs->valid || rs->mtu < 256 || rs->mtu > 4096)
		return false;
	rs->daemon_ran = 1;
	if (h->psn != (rs->epsn & ROCE_PSN_MASK))
		cont = false; /* lost: a FIRST or ONLY may start the next */
	rs->epsn = (h->psn + 1) & ROCE_PSN_MASK;
	ok = (f & ROCE_F_WRITE) && !(f & ROCE_F_IMMDT) &&
	     (cont ? (f & (ROCE_F_MIDDLE | ROCE_F_LAST)) : (f & ROCE_F_FIRST)) &&
	     paylen <= rs->mtu && ((f & ROCE_F_LAST) || paylen == rs->mtu);
	rs->in_msg = SOF_RESP_MSG_NONE;
	if (!ok)
		return false;
	if (f & ROCE_F_FIRST) {
		if (h->dmalen &&
		    (!(atomic_load_explicit(&qp->shm->access, memory_order_relaxed) &
		       IBV_ACCESS_REMOTE_WRITE) ||
		     !(p = tp.host->mr_ptr(qp, h->rkey, h->va, h->dmalen,
					   IBV_ACCESS_REMOTE_WRITE | TP_MR_PROBE)))) {
			tp_count(SOF_CNT_key_violations, 1);
			return false;
		}
		if (h->dmalen)
			tp.host->mr_done(qp, p, 0);
		rs->wr_va = h->va;
		rs->wr_rkey = h->rkey;
		rs->wr_len = rs->wr_left = h->dmalen;
	}
	if (paylen > rs->wr_left || ((f & ROCE_F_LAST) && paylen != rs->wr_left) ||
	    rs->wr_len < rs->wr_left)
		return false;
	if (paylen) {
		p = tp.host->mr_ptr(qp, rs->wr_rkey, rs->wr_va + (rs->wr_len - rs->wr_left), paylen,
				    IBV_ACCESS_REMOTE_WRITE);
		if (!p) {
			tp_count(SOF_CNT_key_violations, 1);
			return false;
		}
		memcpy(p, payload, paylen);
		tp.host->mr_done(qp, p, paylen);
		rs->wr_left -= paylen;
	}
	rs->in_msg = (f & ROCE_F_LAST) ? SOF_RESP_MSG_NONE : SOF_RESP_MSG_WRITE;
	return true;
}

/* Request h for the QP of rs (its lock held), from a to the QP's peer
 * dqpn: executed or answered (true), or left for the owner (false). */
static bool take(const struct tp_qp *qp, struct sof_resp_shm *rs, const struct roce_hdr *h,
		 const uint8_t *payload, uint32_t paylen, const struct roce_addr *a, uint32_t dqpn)
{
	uint32_t f = roce_opinfo(h->opcode)->flags;
	uint8_t op = h->opcode & ~ROCE_SVC_MASK;
	int32_t d = roce_psn_diff(h->psn, rs->epsn & ROCE_PSN_MASK);
	struct answer an = {.path = {.hop_limit = 64}, .dqpn = dqpn, .msn = rs->msn};
	struct roce_hdr ack;
	bool done;

	if (!rs->valid || rs->kept || rs->mtu < 256 || rs->mtu > 4096 || d > 0 ||
	    d < -TP_DUP_WINDOW)
		return false;
	memcpy(an.path.sgid, a->dst, 16);
	memcpy(an.path.dgid, a->src, 16);
	an.path.sport = tp_flow_port(!sof_gid_is_v4(a->src), qp->qpn, dqpn);
	if (d < 0)
		return take_duplicate(qp, rs, h, f, op, &an);
	if (f & ROCE_F_WRITE)
		done = take_write(qp, rs, h, f, payload, paylen);
	else if (rs->in_msg != SOF_RESP_MSG_NONE)
		done = false; /* a READ or atomic starts a message: none may be in progress */
	else if (op == ROCE_READ_REQ)
		done = take_read(qp, rs, h, &an);
	else if (op == ROCE_CMP_SWAP || op == ROCE_FETCH_ADD)
		done = take_atomic(qp, rs, h, op, &an);
	else
		done = false;
	if (!done)
		return false;
	rs->daemon_ran = 1;
	if (!(f & ROCE_F_WRITE))
		return true; /* answered with its responses or atomic ACK */
	/* the WRITE's ACK (IBA 9.7.5.1.2) */
	memset(&ack, 0, sizeof(ack));
	an.msn = rs->msn;
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
	if ((h->opcode & ROCE_SVC_MASK) != (qp->type == IBV_QPT_UC ? ROCE_SVC_UC : ROCE_SVC_RC) ||
	    !(roce_opinfo(h->opcode)->flags & ROCE_F_REQ) || !tp_pkey_match(0xffff, h->pkey) ||
	    !sof_qp_state_receives(atomic_load_explicit(&qp->shm->state, memory_order_acquire)) ||
	    !atomic_compare_exchange_strong_explicit(&rs->lock, &expect, SOF_RESP_DAEMON,
						     memory_order_acquire, memory_order_relaxed)) {
		tp_drop(SOF_DROP_takeover);
		return true;
	}
	done = qp->type == IBV_QPT_UC
		   ? take_uc(qp, rs, h, roce_opinfo(h->opcode)->flags, payload, paylen)
		   : take(qp, rs, h, payload, paylen, a, dqpn);
	atomic_store_explicit(&rs->lock, SOF_RESP_FREE, memory_order_release);
	if (done)
		tp_count(SOF_CNT_takeover, 1);
	else
		tp_drop(SOF_DROP_takeover);
	return true;
}
