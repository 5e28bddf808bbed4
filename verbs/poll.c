/*
 * Completion queues on the data path: pushing completions (from any
 * process), polling them (ibv_poll_cq and the ibv_cq_ex iterator), arming
 * notifications, and flushing a QP that went to the error state.
 *
 * A CQ segment is a multi-producer, single-consumer ring (sof_shm.h):
 * producers reserve a slot by advancing tail with a CAS, fill it and publish
 * it by storing seq = index + 1; the owner takes entries in order. An entry
 * written by another process is copied and its enums are checked before it
 * reaches the application.
 */
#include "sofv.h"

#include "same_host.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

static bool wc_opcode_valid(uint8_t op)
{
	switch (op) {
	case IBV_WC_SEND:
	case IBV_WC_RDMA_WRITE:
	case IBV_WC_RDMA_READ:
	case IBV_WC_COMP_SWAP:
	case IBV_WC_FETCH_ADD:
	case IBV_WC_BIND_MW:
	case IBV_WC_LOCAL_INV:
	case IBV_WC_ATOMIC_WRITE:
	case IBV_WC_RECV:
	case IBV_WC_RECV_RDMA_WITH_IMM:
		return true;
	default:
		return false;
	}
}

/* A receive completion that names its ring's head (sof_cqe.rq_head): kept
 * for the QP's next ibv_post_recv (post.c), which takes it only for its own
 * QP number and only between the head it knew and its tail. */
static inline void cq_note_rq_head(struct sofv_cq *cq, uint32_t qpn, uint32_t rq_head)
{
	atomic_store_explicit(&cq->rq_hint, ((uint64_t)(qpn + 1) << 32) | rq_head,
			      memory_order_relaxed);
}

/* Keep the receive WQE entry c carries for its QP's next SEND (sof_cqe.
 * carry; same_host.c take_carried). Caller holds cq->lock: the only writer
 * of the sequence lock. */
static void cq_keep_carry(struct sofv_cq *cq, const struct sof_cqe *c)
{
	uint32_t s = atomic_load_explicit(&cq->carry_seq, memory_order_relaxed);

	atomic_store_explicit(&cq->carry_seq, s + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	__atomic_store_n(&cq->carry_qpn1, c->qp_num + 1, __ATOMIC_RELAXED);
	__atomic_store_n(&cq->carry_src, c->src_qp, __ATOMIC_RELAXED);
	__atomic_store_n(&cq->carry_idx, c->imm_data, __ATOMIC_RELAXED);
	__atomic_store_n(&cq->carry.wr_id, c->carry.wr_id, __ATOMIC_RELAXED);
	__atomic_store_n(&cq->carry.addr, c->carry.addr, __ATOMIC_RELAXED);
	__atomic_store_n(&cq->carry.length, c->carry.length, __ATOMIC_RELAXED);
	__atomic_store_n(&cq->carry.lkey, c->carry.lkey, __ATOMIC_RELAXED);
	atomic_store_explicit(&cq->carry_seq, s + 2, memory_order_release);
}

/* Take the entry at head into *out. Caller holds cq->lock. */
static bool cq_take(struct sofv_cq *cq, struct sof_cqe *out)
{
	uint32_t head = atomic_load_explicit(&cq->shm->head, memory_order_relaxed);
	struct sof_cqe *slot = &cq->ring[head & (cq->size - 1)];

	if (atomic_load_explicit(&slot->seq, memory_order_acquire) != head + 1)
		return false;
	memcpy(out, slot, sizeof(*out));
	atomic_store_explicit(&cq->shm->head, head + 1, memory_order_release);
	if (out->xflags & SOF_CQE_RQ_HEAD)
		cq_note_rq_head(cq, out->qp_num, out->rq_head);
	if (out->xflags & SOF_CQE_CARRY) {
		/* the fields it overlays are zero for such a completion */
		cq_keep_carry(cq, out);
		memset(&out->carry, 0, sizeof(out->carry));
		out->imm_data = 0;
	}
	if (out->status > IBV_WC_TM_RNDV_INCOMPLETE || !wc_opcode_valid(out->opcode)) {
		out->status = IBV_WC_GENERAL_ERR;
		out->opcode = IBV_WC_RECV;
	}
	return true;
}

/* The work of cq_service, when there is some. */
static __attribute__((noinline)) void cq_service_slow(struct sofv_cq *cq)
{
	/* Read before exchanging: an exchange on every poll would take the
	 * header's cache line away from the producers, which read size and
	 * armed there on every push. */
	bool attention = atomic_load_explicit(&cq->shm->attention, memory_order_relaxed) &&
			 atomic_exchange(&cq->shm->attention, 0);

	if (atomic_load_explicit(&cq->shm->overflow, memory_order_relaxed) &&
	    atomic_exchange(&cq->shm->overflow, 0))
		sofv_notify(to_sctx(cq->ibcq.context), SOF_NOTIFY_CQ_ERR, cq->handle);
	if (!attention && !atomic_load_explicit(&cq->deferred, memory_order_relaxed))
		return;
	pthread_mutex_lock(&cq->qps_lock);
	for (int i = 0; i < cq->nqps; i++) {
		struct sofv_qp *qp = cq->qps[i];
		bool err = atomic_load(&qp->shm->state) == IBV_QPS_ERR;

		if (!err && qp->sq_head == qp->sq_tail)
			continue;
		if (err && !attention && qp->sq_head == qp->sq_tail)
			continue;
		if (pthread_spin_trylock(&qp->sq_lock))
			continue;
		sofv_exec_progress(qp);
		if (err)
			sofv_qp_set_error(qp);
		sofv_spin_unlock(&qp->sq_lock);
	}
	pthread_mutex_unlock(&cq->qps_lock);
}

/* Flush QPs that went to ERROR behind our back (peer death, responder
 * errors) and run deferred sends. Caller holds cq->lock. Usually there is
 * nothing to do: that is decided here, without a call. */
static inline void cq_service(struct sofv_cq *cq)
{
	if (atomic_load_explicit(&cq->shm->attention, memory_order_relaxed) ||
	    atomic_load_explicit(&cq->shm->overflow, memory_order_relaxed) ||
	    atomic_load_explicit(&cq->deferred, memory_order_relaxed))
		cq_service_slow(cq);
}

/* cq_take for ibv_poll_cq: the entry is copied straight from the slot into
 * *wc (each field read once), then checked there. Caller holds cq->lock. */
static bool cq_take_wc(struct sofv_cq *cq, struct ibv_wc *wc)
{
	uint32_t head = atomic_load_explicit(&cq->shm->head, memory_order_relaxed);
	const struct sof_cqe *c = &cq->ring[head & (cq->size - 1)];
	uint8_t xflags;

	if (atomic_load_explicit(&c->seq, memory_order_acquire) != head + 1)
		return false;
	xflags = c->xflags;
	wc->wr_id = c->wr_id;
	wc->status = c->status;
	wc->opcode = c->opcode;
	wc->byte_len = c->byte_len;
	wc->qp_num = c->qp_num;
	wc->src_qp = c->src_qp;
	wc->wc_flags = c->wc_flags;
	if (xflags & SOF_CQE_CARRY) {
		/* the fields it overlays are zero for such a completion */
		cq_keep_carry(cq, c);
		wc->imm_data = 0;
		wc->vendor_err = 0;
		wc->pkey_index = 0;
		wc->slid = 0;
		wc->sl = 0;
		wc->dlid_path_bits = 0;
	} else {
		wc->imm_data = c->imm_data;
		wc->vendor_err = c->vendor_err;
		wc->pkey_index = c->pkey_index;
		wc->slid = c->slid;
		wc->sl = c->sl;
		wc->dlid_path_bits = c->dlid_path_bits;
	}
	if (xflags & SOF_CQE_RQ_HEAD)
		cq_note_rq_head(cq, wc->qp_num, c->rq_head);
	/* the slot is the producers' again once head moves past it */
	atomic_store_explicit(&cq->shm->head, head + 1, memory_order_release);
	if (wc->status > IBV_WC_TM_RNDV_INCOMPLETE || !wc_opcode_valid((uint8_t)wc->opcode)) {
		wc->status = IBV_WC_GENERAL_ERR;
		wc->opcode = IBV_WC_RECV;
	}
	return true;
}

/* Nothing to take and nothing to look after: the usual answer of a busy
 * poll, given without taking the lock. A size read during a resize by
 * another thread can only make this poll miss an entry the next one takes
 * (the ring has room for the largest size). */
static inline __attribute__((always_inline)) bool cq_idle(struct sofv_cq *cq)
{
	uint32_t head = atomic_load_explicit(&cq->shm->head, memory_order_relaxed);
	uint32_t size = __atomic_load_n(&cq->size, __ATOMIC_RELAXED);
	const struct sof_cqe *slot = &cq->ring[head & (size - 1)];

	return atomic_load_explicit(&slot->seq, memory_order_acquire) != head + 1 &&
	       !atomic_load_explicit(&cq->shm->attention, memory_order_relaxed) &&
	       !atomic_load_explicit(&cq->shm->overflow, memory_order_relaxed) &&
	       !atomic_load_explicit(&cq->deferred, memory_order_relaxed);
}

/* A completion came in: our next ibv_post_recv writes a slot a same-host
 * peer may have read. Start its line moving now, while the program handles
 * the completion, rather than in the post calls' locks. */
static inline void cq_prefetch_next(struct sofv_cq *cq)
{
	uintptr_t own = atomic_load_explicit(&cq->pf_own_rwqe, memory_order_relaxed);

	if (own)
		__builtin_prefetch((const void *)own, 1, 3);
}

/* sofv_poll_cq when there may be something to do: out of line, so that a
 * busy poll that finds nothing runs no prologue (its SMT sibling may be
 * the producer). */
static __attribute__((noinline)) int poll_locked(struct sofv_cq *cq, int num_entries,
						 struct ibv_wc *wc)
{
	int n = 0;

	sofv_spin_lock(&cq->lock);
	cq_service(cq);
	while (n < num_entries && cq_take_wc(cq, &wc[n]))
		n++;
	sofv_spin_unlock(&cq->lock);
	if (n)
		cq_prefetch_next(cq);
	return n;
}

int sofv_poll_cq(struct ibv_cq *ibcq, int num_entries, struct ibv_wc *wc)
{
	struct sofv_cq *cq = to_scq(ibcq);

	if (num_entries < 0)
		return -EINVAL;
	/* the engine's sockets only when nothing waits here already */
	if (atomic_load_explicit(&cq->eng_qps, memory_order_relaxed) && cq_idle(cq))
		sofv_engine_poll();
	if (cq_idle(cq))
		return 0;
	return poll_locked(cq, num_entries, wc);
}

int sofv_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct sofv_cq *cq = to_scq(ibcq);
	uint32_t type = solicited_only ? SOF_CQ_ARM_SOLICITED : SOF_CQ_ARM_NEXT;

	if (!cq->channel)
		return EINVAL;
	sofv_engine_flush(); /* it is going to sleep */
	/* the arm a stale event gives back (cq.c) */
	atomic_store_explicit(&cq->arm_last, type, memory_order_relaxed);
	atomic_store_explicit(&cq->shm->armed, type, memory_order_release);
	/* The next poll must see every entry published by a producer that
	 * looked at the arm before this store: pairs with the fence in
	 * sof_cq_push (and in the daemon, which sets attention). */
	atomic_thread_fence(memory_order_seq_cst);
	return 0;
}

/* ---- ibv_cq_ex ----------------------------------------------------------------- */

static struct sofv_cq *ex_to_scq(struct ibv_cq_ex *cq)
{
	return sof_container_of(cq, struct sofv_cq, ibcq);
}

static void ex_load(struct sofv_cq *cq)
{
	cq->ibcq.wr_id = cq->cur.wr_id;
	cq->ibcq.status = cq->cur.status;
}

static int ex_start_poll(struct ibv_cq_ex *ibcq, struct ibv_poll_cq_attr *attr)
{
	struct sofv_cq *cq = ex_to_scq(ibcq);

	if (attr->comp_mask)
		return EINVAL;
	if (!__atomic_load_n(&cq->ex_polled, __ATOMIC_RELAXED))
		__atomic_store_n(&cq->ex_polled, true, __ATOMIC_RELAXED);
	if (atomic_load_explicit(&cq->eng_qps, memory_order_relaxed) && cq_idle(cq))
		sofv_engine_poll();
	sofv_spin_lock(&cq->lock);
	cq_service(cq);
	if (!cq_take(cq, &cq->cur)) {
		sofv_spin_unlock(&cq->lock);
		return ENOENT;
	}
	ex_load(cq);
	return 0;
}

static int ex_next_poll(struct ibv_cq_ex *ibcq)
{
	struct sofv_cq *cq = ex_to_scq(ibcq);

	if (!cq_take(cq, &cq->cur))
		return ENOENT;
	ex_load(cq);
	return 0;
}

static void ex_end_poll(struct ibv_cq_ex *ibcq)
{
	sofv_spin_unlock(&ex_to_scq(ibcq)->lock);
}

static enum ibv_wc_opcode ex_read_opcode(struct ibv_cq_ex *c)
{
	return ex_to_scq(c)->cur.opcode;
}

static uint32_t ex_read_vendor_err(struct ibv_cq_ex *c)
{
	return ex_to_scq(c)->cur.vendor_err;
}

static uint32_t ex_read_byte_len(struct ibv_cq_ex *c)
{
	return ex_to_scq(c)->cur.byte_len;
}

static __be32 ex_read_imm_data(struct ibv_cq_ex *c)
{
	return ex_to_scq(c)->cur.imm_data;
}

static uint32_t ex_read_qp_num(struct ibv_cq_ex *c)
{
	return ex_to_scq(c)->cur.qp_num;
}

static uint32_t ex_read_src_qp(struct ibv_cq_ex *c)
{
	return ex_to_scq(c)->cur.src_qp;
}

static unsigned int ex_read_wc_flags(struct ibv_cq_ex *c)
{
	return ex_to_scq(c)->cur.wc_flags;
}

static uint32_t ex_read_slid(struct ibv_cq_ex *c)
{
	return ex_to_scq(c)->cur.slid;
}

static uint8_t ex_read_sl(struct ibv_cq_ex *c)
{
	return ex_to_scq(c)->cur.sl;
}

static uint8_t ex_read_dlid_path_bits(struct ibv_cq_ex *c)
{
	return ex_to_scq(c)->cur.dlid_path_bits;
}

/* The device clock when the producer pushed the entry (cqring.c):
 * CLOCK_MONOTONIC ns, what ibv_query_rt_values_ex reads (domain.c). */
static uint64_t ex_read_completion_ts(struct ibv_cq_ex *c)
{
	return ex_to_scq(c)->cur.timestamp;
}

/* The same instant on CLOCK_REALTIME. */
static uint64_t ex_read_completion_wallclock_ns(struct ibv_cq_ex *c)
{
	return ex_to_scq(c)->cur.timestamp + sofv_wallclock_offset_ns();
}

void sofv_cq_ex_init(struct sofv_cq *cq)
{
	struct ibv_cq_ex *c = &cq->ibcq;

	c->start_poll = ex_start_poll;
	c->next_poll = ex_next_poll;
	c->end_poll = ex_end_poll;
	c->read_opcode = ex_read_opcode;
	c->read_vendor_err = ex_read_vendor_err;
	c->read_byte_len = ex_read_byte_len;
	c->read_imm_data = ex_read_imm_data;
	c->read_qp_num = ex_read_qp_num;
	c->read_src_qp = ex_read_src_qp;
	c->read_wc_flags = ex_read_wc_flags;
	c->read_slid = ex_read_slid;
	c->read_sl = ex_read_sl;
	c->read_dlid_path_bits = ex_read_dlid_path_bits;
	c->read_completion_ts = ex_read_completion_ts;
	c->read_completion_wallclock_ns = ex_read_completion_wallclock_ns;
}
