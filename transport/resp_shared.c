/*
 * The owner's side of the responder state an RC or UC QP shares with the
 * daemon (struct sof_resp_shm, common/sof_shm.h; the daemon's side and
 * the whole design in takeover.c): the lock word the owner's engine takes
 * for every request packet, the take-back of what the daemon executed
 * while the owner did not run, and the publication of the owner's state
 * after each request.
 */
#include "tport.h"

#include <sched.h>

/* The owner waits this long for a daemon that holds the lock (it holds it
 * for one packet); past it the daemon is taken to be gone. */
#define OWNER_WAIT_NS 1000000000ull

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

/* The daemon executed requests meanwhile: its state is ours. Under the
 * owner's lock. */
static void take_back(struct sof_tqp *t, struct sof_resp_shm *rs)
{
	uint32_t n, end;

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
	} else if (rs->in_msg == SOF_RESP_MSG_SEND) {
		t->in_msg = ROCE_F_SEND;
	} else if (rs->in_msg == SOF_RESP_MSG_NONE) {
		t->in_msg = 0;
	}
	/* the receive WQE in hand: taken by either of us */
	t->rcv_active = rs->rcv_active != 0;
	if (t->rcv_active) {
		t->rcv_wr_id = rs->rcv_wr_id;
		t->rcv_off = rs->rcv_off;
		t->rcv_nsge = rs->rcv_nsge <= TP_MAX_SGE ? rs->rcv_nsge : 0;
		memcpy(t->rcv_sge, rs->rcv_sge, t->rcv_nsge * sizeof(struct sof_sge));
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

bool tp_resp_shared_enter(struct sof_tqp *t)
{
	struct sof_resp_shm *rs = t->qp->rshm;

	owner_lock(rs);
	if (!rs->daemon_ran)
		return false;
	take_back(t, rs);
	/* the daemon ended the QP with a fatal NAK (take_fatal): so do we,
	 * and the packet that brought us here is dropped (tp_resp_packet) */
	if (t->state != IBV_QPS_ERR &&
	    atomic_load_explicit(&t->qp->shm->state, memory_order_acquire) == IBV_QPS_ERR)
		tp_qp_error(t, 0);
	return true;
}

void tp_resp_shared_leave(struct sof_tqp *t)
{
	struct sof_resp_shm *rs = t->qp->rshm;
	uint32_t n;

	rs->epsn = t->epsn;
	rs->msn = t->msn;
	rs->in_msg = !t->in_msg			 ? SOF_RESP_MSG_NONE
		     : t->in_msg == ROCE_F_WRITE ? SOF_RESP_MSG_WRITE
						 : SOF_RESP_MSG_SEND;
	/* a receive WQE is in hand between packets only in the middle of a
	 * SEND (or after a lost UC message): then it is copied */
	rs->rcv_active = t->rcv_active;
	if (t->rcv_active) {
		rs->rcv_wr_id = t->rcv_wr_id;
		rs->rcv_off = t->rcv_off;
		rs->rcv_nsge = t->rcv_nsge;
		memcpy(rs->rcv_sge, t->rcv_sge, t->rcv_nsge * sizeof(struct sof_sge));
	}
	rs->wr_rkey = t->wr_rkey;
	rs->wr_va = t->wr_va;
	rs->wr_len = t->wr_len;
	rs->wr_left = t->wr_left;
	/* what it keeps ahead of a gap, when the requester knows (SACKed) */
	rs->kept = t->sack_peer ? t->nooo : 0;
	rs->kept_top = t->ooo_top;
	rs->nak_sent = 0; /* the owner NAKs as it sees fit */
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
	/* what the daemon executed is the QP's before the modify: taken
	 * back, or the owner would execute those requests again */
	if (qp->t && qp->rshm->daemon_ran)
		take_back(qp->t, qp->rshm);
	qp->rshm->valid = 0;
	qp->rshm->daemon_ran = 0;
	owner_unlock(qp->rshm);
}
