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
 * The daemon executes only what needs no more state than that: RDMA
 * WRITEs without immediate data, in order (IBA 9.7.5.1: the expected PSN;
 * R_Key, range and access checked by the host's mr_ptr, 9.7.5.2.4), and
 * it acknowledges duplicates of SENDs and WRITEs (9.7.5.1.2). Everything
 * else (SEND, WRITE with immediate, READ, atomics, a packet ahead of the
 * expected PSN, a QP whose owner keeps packets ahead of a gap, a key or
 * length the owner would NAK) it drops without a NAK: the requester's
 * retry brings it to the owner once that runs again, which answers it as
 * the standard says. Counters: takeover (packets executed or answered
 * here), drops takeover (left for the owner).
 */
#include "tport.h"

#include "sof_wr.h"

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
}

void tp_resp_shared_leave(struct sof_tqp *t)
{
	struct sof_resp_shm *rs = t->qp->rshm;

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

/* Request h for the QP of rs (its lock held), from a to the QP's peer
 * dqpn: executed or acknowledged (true), or left for the owner (false). */
static bool take(const struct tp_qp *qp, struct sof_resp_shm *rs, const struct roce_hdr *h,
		 const uint8_t *payload, uint32_t paylen, const struct roce_addr *a, uint32_t dqpn)
{
	uint32_t f = roce_opinfo(h->opcode)->flags, epsn = rs->epsn & ROCE_PSN_MASK;
	uint32_t mtu = rs->mtu;
	struct tp_path path = {.hop_limit = 64};
	int32_t d = roce_psn_diff(h->psn, epsn);
	uint64_t va, left;
	uint8_t *p;

	if (!rs->valid || rs->kept || !(f & (ROCE_F_SEND | ROCE_F_WRITE)))
		return false;
	if (d > 0 || d < -TP_DUP_WINDOW)
		return false;
	if (d == 0) {
		/* in order: an RDMA WRITE without immediate data, one that
		 * starts or one that continues the WRITE in progress, each
		 * packet but the last a full MTU (IBA 9.7.5.1) */
		if (!(f & ROCE_F_WRITE) || (f & ROCE_F_IMMDT) ||
		    rs->in_msg != ((f & ROCE_F_FIRST) ? SOF_RESP_MSG_NONE : SOF_RESP_MSG_WRITE) ||
		    mtu < 256 || mtu > 4096 || paylen > mtu ||
		    (!(f & ROCE_F_LAST) && paylen != mtu) ||
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
		rs->epsn = epsn = (epsn + 1) & ROCE_PSN_MASK;
		if (f & ROCE_F_LAST) {
			rs->in_msg = SOF_RESP_MSG_NONE;
			rs->msn = (rs->msn + 1) & 0xffffff;
		} else {
			rs->in_msg = SOF_RESP_MSG_WRITE;
		}
		rs->daemon_ran = 1;
	}
	/* the ACK (of this request, or again of the last one for a
	 * duplicate, 9.7.5.1.2), back to where the request came from */
	memcpy(path.sgid, a->dst, 16);
	memcpy(path.dgid, a->src, 16);
	path.sport = tp_flow_port(!sof_gid_is_v4(a->src), qp->qpn, dqpn);
	tp_send_ack_to(&path, dqpn, ROCE_AETH_ACK | ROCE_AETH_CREDIT_INVALID,
		       (epsn - 1) & ROCE_PSN_MASK, rs->msn, ROCE_SVC_RC, 0xffff);
	return true;
}

bool tp_takeover_packet(struct tp_qp *qp, const struct roce_hdr *h, const uint8_t *payload,
			uint32_t paylen, const struct roce_addr *a)
{
	uint32_t dqpn = 0, expect = SOF_RESP_FREE;
	struct sof_resp_shm *rs;
	bool done;

	if (!tp.host->takeover || qp->type != IBV_QPT_RC)
		return false;
	rs = tp.host->takeover(qp, a->src, &dqpn);
	if (!rs)
		return false;
	if ((h->opcode & ROCE_SVC_MASK) != ROCE_SVC_RC ||
	    !(roce_opinfo(h->opcode)->flags & ROCE_F_REQ) || !tp_pkey_match(0xffff, h->pkey) ||
	    !sof_qp_state_receives(atomic_load_explicit(&qp->shm->state, memory_order_acquire)) ||
	    !atomic_compare_exchange_strong_explicit(&rs->lock, &expect, SOF_RESP_DAEMON,
						     memory_order_acquire, memory_order_relaxed)) {
		tp_drop(SOF_DROP_takeover);
		return true;
	}
	done = take(qp, rs, h, payload, paylen, a, dqpn);
	atomic_store_explicit(&rs->lock, SOF_RESP_FREE, memory_order_release);
	if (done)
		tp_count(SOF_CNT_takeover, 1);
	else
		tp_drop(SOF_DROP_takeover);
	return true;
}
