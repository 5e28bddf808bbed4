/*
 * The same-host executor: carries out send work requests whose destination
 * is a QP of this host.
 *
 * A send WQE is executed by the process that posted it, in ibv_post_send
 * (or later by the progress thread, progress.c): it plays both the
 * requester and, for the destination QP, the responder of IBA chapter 9.
 * The destination's receive ring, CQ and memory regions come from the
 * cache of other processes' objects (remote_cache.c); this file resolves
 * the local SGEs against the process's own MRs, takes receive WQEs,
 * copies the data and writes both completions.
 *
 * Where the wire protocol would NAK, the executor produces the same outcome:
 *   RNR NAK (9.7.5.2.8)          → the WQE waits, retried per rnr_retry
 *   remote access error (9.7.5.2.4, class C) → IBV_WC_REM_ACCESS_ERR, both QPs
 *                                  to ERROR
 *   invalid request (9.7.5.2.4)  → IBV_WC_REM_INV_REQ_ERR, both QPs to ERROR
 *   remote operational error     → IBV_WC_REM_OP_ERR (responder's local
 *                                  protection error), both QPs to ERROR
 *   no response (9.7.6.1.3)      → retried until (retry_cnt+1) local ACK
 *                                  timeouts, then IBV_WC_RETRY_EXC_ERR
 * A QP whose peer was destroyed gets no answer either: IBV_WC_RETRY_EXC_ERR
 * when the timer runs out. When the peer's process dies, the daemon moves
 * the QP to ERROR at once, and what it holds is flushed.
 *
 * Everything read from the destination's segments is untrusted: receive WQEs
 * are copied before validation, indexes are masked, keys are checked by the
 * daemon and ranges here.
 */
#include "same_host.h"

#include "remote_cache.h"
#include "sgl.h"

#include <alloca.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

/* ---- the data path's spin locks (same_host.h) ------------------------------- */

int sofv_spin_free, sofv_spin_held;
bool sofv_spin_inline;

/* Learn the C library's spin lock protocol on a lock of our own: inline
 * locking only when init, trylock, lock and unlock show two distinct
 * values, "held" after both ways of taking it and "free" after unlock.
 * Runs when the library is loaded, before any QP or CQ exists. */
static void __attribute__((constructor)) sofv_spin_probe(void)
{
	pthread_spinlock_t l;
	int f, h, h2, f2;

	if (pthread_spin_init(&l, PTHREAD_PROCESS_PRIVATE))
		return;
	f = __atomic_load_n(&l, __ATOMIC_RELAXED);
	if (pthread_spin_trylock(&l) == 0) {
		h = __atomic_load_n(&l, __ATOMIC_RELAXED);
		pthread_spin_unlock(&l);
		f2 = __atomic_load_n(&l, __ATOMIC_RELAXED);
		pthread_spin_lock(&l);
		h2 = __atomic_load_n(&l, __ATOMIC_RELAXED);
		pthread_spin_unlock(&l);
		if (f != h && f2 == f && h2 == h && __atomic_load_n(&l, __ATOMIC_RELAXED) == f) {
			sofv_spin_free = f;
			sofv_spin_held = h;
			sofv_spin_inline = true;
		}
	}
	pthread_spin_destroy(&l);
}

/* ---- the local SGEs --------------------------------------------------------- */

/* qp_lmr_get's miss: copy the MR lkey names from ctx->mrs into qp->lmr. */
static __attribute__((noinline)) const struct sofv_lmr *qp_lmr_refill(struct sofv_qp *qp,
								      uint32_t lkey)
{
	struct sofv_context *ctx = to_sctx(qp->qpx.qp_base.context);
	struct sofv_mr *mr;
	bool found;

	pthread_rwlock_rdlock(&ctx->obj_lock);
	mr = sof_hmap_get(&ctx->mrs, lkey);
	found = mr && mr->pd == qp->pd;
	if (found) {
		/* read under the lock: the gen of the table mr was found in */
		qp->lmr.gen = atomic_load_explicit(&ctx->mr_gen, memory_order_relaxed);
		qp->lmr.lkey = lkey;
		qp->lmr.access = mr->access;
		qp->lmr.iova = mr->iova;
		qp->lmr.length = mr->ibmr.length;
		qp->lmr.addr = mr->ibmr.addr;
	}
	pthread_rwlock_unlock(&ctx->obj_lock);
	return found ? &qp->lmr : NULL;
}

/* The local MR lkey names, for a WQE of qp (caller holds qp->sq_lock): a
 * copy kept in qp->lmr, refilled from ctx->mrs when the key differs or an
 * MR left ctx->mrs since (ctx->mr_gen moved). A copy never points at a
 * struct sofv_mr, which ibv_dereg_mr frees. NULL when no MR of the QP's PD
 * has that key. */
static inline const struct sofv_lmr *qp_lmr_get(struct sofv_qp *qp, uint32_t lkey)
{
	struct sofv_context *ctx = to_sctx(qp->qpx.qp_base.context);

	if (qp->lmr.lkey == lkey &&
	    qp->lmr.gen == atomic_load_explicit(&ctx->mr_gen, memory_order_acquire))
		return &qp->lmr;
	return qp_lmr_refill(qp, lkey);
}

/* The bytes an SGE names, checked against the QP's copy of the MR of its
 * lkey (access need, range); NULL when a check fails. */
static inline uint8_t *lmr_bytes(struct sofv_qp *qp, const struct ibv_sge *s, uint32_t need)
{
	const struct sofv_lmr *mr = qp_lmr_get(qp, s->lkey);

	if (!mr || (mr->access & need) != need || s->addr < mr->iova || s->length > mr->length ||
	    s->addr - mr->iova > mr->length - s->length)
		return NULL;
	return mr->addr + (s->addr - mr->iova);
}

/* Resolve the local SGEs of a send WQE (this process's own memory). need is
 * IBV_ACCESS_LOCAL_WRITE when the HCA writes into them (READ, atomics).
 * Returns 0 or IBV_WC_LOC_PROT_ERR. */
static inline int local_sgl(struct sofv_qp *qp, const struct sofv_swqe *w, uint32_t need,
			    struct sglist *l)
{
	uint8_t *p;

	if (w->send_flags & IBV_SEND_INLINE) {
		sgl_one(l, w->inline_buf, w->inline_len);
		l->n = !!w->inline_len;
		return 0;
	}
	if (w->num_sge == 1 && w->sge[0].length) { /* the usual case, straight */
		p = lmr_bytes(qp, &w->sge[0], need);
		if (!p)
			return IBV_WC_LOC_PROT_ERR;
		sgl_one(l, p, w->sge[0].length);
		return 0;
	}
	l->n = 0;
	l->total = 0;
	l->nrefs = 0;
	for (uint32_t i = 0; i < w->num_sge; i++) {
		const struct ibv_sge *s = &w->sge[i];

		if (!s->length)
			continue;
		p = lmr_bytes(qp, s, need);
		if (!p)
			return IBV_WC_LOC_PROT_ERR;
		sgl_add(l, p, s->length);
	}
	return 0;
}

/* ---- receive side of the destination ------------------------------------- */

/* Take the next receive WQE of destination r into *out (copied), *nhead
 * the ring's head after it. Returns 0, -EAGAIN when the queue is empty,
 * -EINVAL when the entry is malformed (it is consumed). */
static int take_rwqe(struct sofv_rqp *r, struct sof_rwqe *out, uint32_t *nhead)
{
	const uint8_t *src;
	uint32_t head, tail;

	for (;;) {
		head = atomic_load_explicit(&r->rq->head, memory_order_acquire);
		/* A tail read earlier is never ahead of the real one: while it
		 * is ahead of head, the entry at head is published. */
		tail = atomic_load_explicit(&r->rq_tail_cache, memory_order_relaxed);
		if (tail - head - 1 >= r->rq_size) {
			tail = atomic_load_explicit(&r->rq->tail, memory_order_acquire);
			atomic_store_explicit(&r->rq_tail_cache, tail, memory_order_relaxed);
		}
		if (head == tail || !r->rq_size)
			return -EAGAIN;
		src = r->ring + (size_t)(head & (r->rq_size - 1)) * r->rq_stride;
		if (r->rq_stride == SOF_RWQE_STRIDE(1)) /* the usual one: no call */
			memcpy(out, src, SOF_RWQE_STRIDE(1));
		else
			memcpy(out, src, r->rq_stride);
		if (atomic_compare_exchange_weak_explicit(
			&r->rq->head, &head, head + 1, memory_order_acq_rel, memory_order_relaxed))
			break;
	}
	*nhead = head + 1;
	if (r->has_srq) {
		uint32_t limit = atomic_load_explicit(&r->srq_shm->limit, memory_order_relaxed);

		if (limit) /* the real count, not the cached one */
			tail = atomic_load_explicit(&r->rq->tail, memory_order_acquire);
		if (limit && tail - head - 1 < limit &&
		    atomic_compare_exchange_strong(&r->srq_shm->limit, &limit, 0))
			out->rsvd = 1; /* caller raises the limit event */
		else
			out->rsvd = 0;
	} else {
		out->rsvd = 0;
	}
	if (out->num_sge > r->rq_max_sge)
		return -EINVAL;
	return 0;
}

/* carried_rwqe: the WQE of r that r's QP carried in its last SEND
 * completion to qp (sof_cqe.carry, kept by qp's receive CQ: poll.c), read
 * under the CQ's sequence lock, and its ring index; take_idx takes it. */
static inline bool carried_rwqe(struct sofv_qp *qp, struct sofv_rqp *r, struct sof_cqe_carry *k,
				uint32_t *idx)
{
	struct sofv_cq *cq = qp->rcq;
	uint32_t s, qpn1, src;

	if (!cq || r->has_srq || !r->rq_size || r->rq_max_sge < 1)
		return false;
	s = atomic_load_explicit(&cq->carry_seq, memory_order_acquire);
	qpn1 = __atomic_load_n(&cq->carry_qpn1, __ATOMIC_RELAXED);
	src = __atomic_load_n(&cq->carry_src, __ATOMIC_RELAXED);
	if ((s & 1) || qpn1 != qp->qpn + 1 || src != r->qpn)
		return false;
	*idx = __atomic_load_n(&cq->carry_idx, __ATOMIC_RELAXED);
	k->wr_id = __atomic_load_n(&cq->carry.wr_id, __ATOMIC_RELAXED);
	k->addr = __atomic_load_n(&cq->carry.addr, __ATOMIC_RELAXED);
	k->length = __atomic_load_n(&cq->carry.length, __ATOMIC_RELAXED);
	k->lkey = __atomic_load_n(&cq->carry.lkey, __ATOMIC_RELAXED);
	atomic_thread_fence(memory_order_acquire);
	return atomic_load_explicit(&cq->carry_seq, memory_order_relaxed) == s;
}

/* The CAS that takes the carried WQE of index idx: only while it is still
 * the ring's next one. */
static inline bool take_idx(struct sofv_rqp *r, uint32_t idx)
{
	uint32_t head = atomic_load_explicit(&r->rq->head, memory_order_acquire);

	return head == idx &&
	       atomic_compare_exchange_strong_explicit(&r->rq->head, &head, idx + 1,
						       memory_order_acq_rel, memory_order_relaxed);
}

/* Take the receive WQE of destination r that r's QP carried in its last
 * SEND completion to qp (sof_cqe.carry, kept by qp's receive CQ: poll.c)
 * when it is still the next one of r's ring: the ring's line is not read.
 * The CAS on head decides, as in take_rwqe; a WQE that was consumed or
 * discarded meanwhile (head moved past it) is never taken again. */
static bool take_carried(struct sofv_qp *qp, struct sofv_rqp *r, struct sof_rwqe *out,
			 uint32_t *nhead)
{
	struct sof_cqe_carry k;
	uint32_t idx;

	if (!carried_rwqe(qp, r, &k, &idx) || !take_idx(r, idx))
		return false;
	out->wr_id = k.wr_id;
	out->num_sge = 1;
	out->rsvd = 0;
	out->sge[0].addr = k.addr;
	out->sge[0].length = k.length;
	out->sge[0].lkey = k.lkey;
	*nhead = idx + 1;
	return true;
}

/* Put qp's own next receive WQE into the completion c of a SEND to its peer
 * (sof_cqe.carry): the peer's answer then takes it without reading our
 * ring's cache line (take_carried), and our next ibv_post_recv writes a
 * line the peer did not read. The head is the one the last receive
 * completion told (never ahead of the real one): a WQE consumed since is
 * never taken from a carry. */
static void carry_own_rwqe(struct sofv_qp *qp, struct sof_cqe *c)
{
	const struct sof_rwqe *q;
	uint32_t head, tail;

	if (!qp->rq_size || qp->srq || !qp->rcq)
		return;
	tail = atomic_load_explicit(&qp->shm->rq.tail, memory_order_acquire);
	head = sofv_rq_hint_head(&qp->rcq->rq_hint, qp->qpn,
				 __atomic_load_n(&qp->rq_head_cache, __ATOMIC_RELAXED), tail);
	if (head == tail)
		return;
	q = (const struct sof_rwqe *)(qp->rq_ring +
				      (size_t)(head & (qp->rq_size - 1)) * qp->rq_stride);
	if (q->num_sge != 1)
		return;
	c->carry.wr_id = q->wr_id;
	c->carry.addr = q->sge[0].addr;
	c->carry.length = q->sge[0].length;
	c->carry.lkey = q->sge[0].lkey;
	c->imm_data = head;
	c->xflags |= SOF_CQE_CARRY;
}

static bool rq_nonempty(struct sofv_rqp *r)
{
	return atomic_load_explicit(&r->rq->head, memory_order_acquire) !=
	       atomic_load_explicit(&r->rq->tail, memory_order_acquire);
}

/* Resolve the SGEs of a receive WQE of destination r (its owner's memory). */
static int remote_local_sgl(struct sofv_qp *qp, struct sofv_rqp *r, const struct sof_rwqe *wqe,
			    struct sglist *l)
{
	l->nrefs = 0;
	if (wqe->num_sge == 1 && wqe->sge[0].length) { /* the usual case, straight */
		const struct sof_sge *s = &wqe->sge[0];
		struct sofv_rmr *m = qp_rmr_get(qp, s->lkey, r->mr_qpn, r->use_local, l);
		uint8_t *p;

		if (!m)
			return -EACCES;
		p = rmr_ptr(m, s->addr, s->length);
		if (!p || !(m->access & IBV_ACCESS_LOCAL_WRITE))
			return -EACCES;
		/* not sgl_one: l may hold a reference qp_rmr_get moved there */
		l->n = 1;
		l->total = s->length;
		l->e[0].p = p;
		l->e[0].len = s->length;
		l->e[0].rm = rmr_via(m);
		return 0;
	}
	l->n = 0;
	l->total = 0;
	for (uint32_t i = 0; i < wqe->num_sge; i++) {
		const struct sof_sge *s = &wqe->sge[i];
		struct sofv_rmr *m;
		uint8_t *p;

		if (!s->length)
			continue;
		/* borrowed: a region replaced in the QP's cache by a later
		 * piece has its reference moved to l */
		m = qp_rmr_get(qp, s->lkey, r->mr_qpn, r->use_local, l);
		if (!m)
			return -EACCES;
		p = rmr_ptr(m, s->addr, s->length);
		if (!p || !(m->access & IBV_ACCESS_LOCAL_WRITE))
			return -EACCES;
		sgl_add(l, p, s->length);
		l->e[l->n - 1].rm = rmr_via(m);
	}
	return 0;
}

static void cqe_post_remote(struct sofv_rqp *r, const struct sof_cqe *cqe)
{
	sof_cq_push(r->cq, cqe, r->cq_evfd, &r->cq_head_cache);
}

/* Move destination r to ERROR (its owner flushes it on its next look). */
static void rqp_fail(struct sofv_context *ctx, struct sofv_rqp *r, uint32_t notify)
{
	uint32_t a;

	atomic_store(&r->shm->state, IBV_QPS_ERR);
	atomic_store(&r->cq->attention, 1);
	/* store, then load what the owner stores: the arm handshake of
	 * sof_cq_push needs a full fence here too */
	atomic_thread_fence(memory_order_seq_cst);
	a = atomic_load(&r->cq->armed);
	if (a != SOF_CQ_ARM_NONE && r->cq_evfd >= 0 &&
	    atomic_compare_exchange_strong(&r->cq->armed, &a, SOF_CQ_ARM_NONE)) {
		uint64_t one = 1;

		atomic_fetch_add_explicit(&r->cq->event_pending, 1, memory_order_release);
		if (write(r->cq_evfd, &one, sizeof(one)) < 0) {
			/* the owner is gone or its counter is saturated */
		}
	}
	if (notify)
		sofv_notify(ctx, notify, r->qpn);
}

/* ---- executing one WQE ------------------------------------------------------- */

static bool gid_local(struct sofv_context *ctx, const union ibv_gid *g)
{
	return sofv_gid_is_local(ctx, g->raw);
}

/* The QP failed: complete w with status and move to ERROR. */
static enum exec_res fail_wqe(struct sofv_qp *qp, const struct sofv_swqe *w, int status)
{
	complete_send(qp, w, status, 0);
	atomic_store(&qp->shm->state, IBV_QPS_ERR);
	qp->qpx.qp_base.state = IBV_QPS_ERR;
	qp->attr.qp_state = IBV_QPS_ERR;
	return EXEC_DONE;
}

/* No response from the peer: retry until the transport timer expires. */
static enum exec_res no_response(struct sofv_qp *qp, struct sofv_swqe *w)
{
	uint64_t t = sof_ack_timeout_ns(qp->attr.timeout), now = sof_now_ns();

	if (w->wait != SOFV_WAIT_PEER) {
		w->wait = SOFV_WAIT_PEER;
		w->deadline_ns = t ? now + t * ((uint64_t)qp->attr.retry_cnt + 1) : UINT64_MAX;
		return EXEC_WAIT;
	}
	if (now < w->deadline_ns)
		return EXEC_WAIT;
	return fail_wqe(qp, w, IBV_WC_RETRY_EXC_ERR);
}

/* The receiver has no receive WQE: IBA 9.7.5.2.8 RNR NAK handling. */
static enum exec_res rnr(struct sofv_qp *qp, struct sofv_swqe *w, struct sofv_rqp *r)
{
	uint64_t now = sof_now_ns();
	uint32_t code = atomic_load_explicit(&r->shm->min_rnr_timer, memory_order_relaxed);
	uint64_t delay = (uint64_t)sof_rnr_timer_us(code) * 1000;

	if (w->wait != SOFV_WAIT_RNR) {
		w->wait = SOFV_WAIT_RNR;
		w->rnr_left = qp->attr.rnr_retry;
		if (w->rnr_left == 0)
			return fail_wqe(qp, w, IBV_WC_RNR_RETRY_EXC_ERR);
		w->deadline_ns = now + delay;
		return EXEC_WAIT;
	}
	if (now < w->deadline_ns)
		return EXEC_WAIT;
	/* rnr_retry 7 means retry for ever (IBA 9.7.5.2.8) */
	if (w->rnr_left != 7 && --w->rnr_left <= 0)
		return fail_wqe(qp, w, IBV_WC_RNR_RETRY_EXC_ERR);
	w->deadline_ns = now + delay;
	return EXEC_WAIT;
}

/* Deliver a SEND (or the receive side of WRITE_WITH_IMM) to destination r.
 * Returns 0, -EAGAIN (no receive WQE), or a responder error:
 * -EMSGSIZE (length), -EACCES (receive buffer protection). */
static int deliver_recv(struct sofv_context *ctx, struct sofv_qp *qp, const struct sofv_swqe *w,
			struct sofv_rqp *r, const struct sglist *src, const struct sofv_ah *ah)
{
	struct sof_rwqe *rw = alloca(r->rq_stride);
	struct sglist dst;
	struct sof_cqe c;
	bool reserved = false;
	uint32_t slot = 0;
	bool imm = w->opcode == IBV_WR_SEND_WITH_IMM || w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM ||
		   w->opcode == IBV_WR_SEND_WITH_INV;
	bool is_write = w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
	uint64_t grh = r->type == IBV_QPT_UD ? 40 : 0;
	uint32_t nhead;
	int err;

	err = take_carried(qp, r, rw, &nhead) ? 0 : take_rwqe(r, rw, &nhead);
	if (err == -EAGAIN)
		return err;
	if (rw->rsvd)
		sofv_notify(ctx, SOF_NOTIFY_SRQ_LIMIT, r->srq_handle);
	memset(&c, 0, sizeof(c));
	/* the owner's ibv_post_recv learns the room from the entry it polls,
	 * not from the head's line (an SRQ's ring is shared: no hint) */
	if (!r->has_srq) {
		c.rq_head = nhead;
		c.xflags |= SOF_CQE_RQ_HEAD;
	}
	c.wr_id = rw->wr_id;
	c.qp_num = r->qpn;
	c.src_qp = qp->qpn;
	c.opcode = is_write ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV;
	c.solicited = !!(w->send_flags & IBV_SEND_SOLICITED);
	if (imm) {
		/* the invalidated rkey shares the field (ibv_wc's union) */
		c.imm_data = w->imm_data;
		c.wc_flags |= w->opcode == IBV_WR_SEND_WITH_INV ? IBV_WC_WITH_INV : IBV_WC_WITH_IMM;
	}
	if (err) {
		c.status = IBV_WC_LOC_QP_OP_ERR;
		cqe_post_remote(r, &c);
		return -EACCES;
	}
	if (!is_write) {
		err = remote_local_sgl(qp, r, rw, &dst);
		if (err) {
			sgl_release(&dst);
			c.status = IBV_WC_LOC_PROT_ERR;
			cqe_post_remote(r, &c);
			return -EACCES;
		}
		if (src->total + grh > dst.total) {
			sgl_release(&dst);
			c.status = IBV_WC_LOC_LEN_ERR;
			cqe_post_remote(r, &c);
			return -EMSGSIZE;
		}
		/* A plain copy: take the CQ's slot first, so that the stores of
		 * the data and of the entry leave the store buffer together
		 * (the slot's CAS would otherwise wait for the data's line). */
		if (dst.n == 1 && !dst.e[0].rm)
			reserved = !sof_cq_reserve(r->cq, &r->cq_head_cache, &slot);
		if (grh) {
			uint8_t g[40];
			const struct ibv_global_route *gr = &ah->attr.grh;
			struct sof_gid_entry sg = {0};

			(void)sofv_gid_read(ctx, gr->sgid_index, &sg); /* as it is now */
			sof_make_grh(g, sg.gid, gr->dgid.raw, gr->traffic_class, gr->hop_limit,
				     gr->flow_label, (uint32_t)src->total);
			sg_write(&dst, 0, g, 40);
			c.wc_flags |= IBV_WC_GRH;
			c.sl = sof_roce_wc_sl(sg.gid, gr->dgid.raw);
		}
		sg_copy(&dst, grh, src);
		sgl_release(&dst);
	}
	c.byte_len = (uint32_t)(src->total + grh);
	c.status = IBV_WC_SUCCESS;
	if (w->opcode == IBV_WR_SEND && (r->type == IBV_QPT_RC || r->type == IBV_QPT_UC))
		carry_own_rwqe(qp, &c);
	if (reserved)
		sof_cq_publish(r->cq, slot, &c, r->cq_evfd);
	else
		cqe_post_remote(r, &c);
	return 0;
}

/* Resolve and check the destination of an RC/UC WQE. Returns qp->peer,
 * whose reference is the QP's (good while the caller holds qp->sq_lock:
 * only this function replaces it), or NULL with *res set to the outcome
 * for w. */
static struct sofv_rqp *connected_dest(struct sofv_qp *qp, struct sofv_swqe *w, enum exec_res *res,
				       bool *gone)
{
	struct sofv_context *ctx = to_sctx(qp->qpx.qp_base.context);
	bool xrc = qp->qpx.qp_base.qp_type == IBV_QPT_XRC_SEND;
	uint32_t srqn = xrc ? w->remote_qpn : 0; /* the XRCETH's */
	struct sofv_rqp *r = qp->peer;

	*gone = false;
	/* The cache goes when the peer is destroyed or the QP was given
	 * another destination (XRC: the WQE names another SRQ). */
	if (r && (r->qpn != qp->attr.dest_qp_num || r->xrc_srqn != srqn || !rqp_valid(ctx, r))) {
		rqp_put(r);
		r = qp->peer = NULL;
	}
	if (!r) {
		if (!gid_local(ctx, &qp->ah.grh.dgid)) {
			/* another host: no path yet (RoCEv2 link comes with issue 3) */
			*res = no_response(qp, w);
			return NULL;
		}
		r = xrc ? sofv_rqp_get_xrc(ctx, qp->attr.dest_qp_num, srqn, qp->qpn)
			: sofv_rqp_get(ctx, qp->attr.dest_qp_num);
		if (!r && xrc && errno == EINVAL) {
			/* no XRC SRQ of that number in the TGT QP's domain:
			 * NAK invalid request (IBA 9.7.5.2.4, XRC annex) */
			*res = fail_wqe(qp, w, IBV_WC_REM_INV_REQ_ERR);
			return NULL;
		}
		if (!r) {
			*gone = true;
			return NULL;
		}
		qp->peer = r;
	}
	if (r->type != (xrc ? IBV_QPT_XRC_RECV : qp->qpx.qp_base.qp_type) ||
	    !sof_qp_state_receives(atomic_load_explicit(&r->shm->state, memory_order_acquire)) ||
	    atomic_load_explicit(&r->shm->dest_qpn, memory_order_relaxed) != qp->qpn) {
		if (atomic_load_explicit(&r->shm->state, memory_order_acquire) == IBV_QPS_ERR &&
		    atomic_load_explicit(&r->shm->peer_gone, memory_order_relaxed)) {
			*gone = true;
			return NULL;
		}
		*res = no_response(qp, w);
		return NULL;
	}
	return r;
}

/* Execute w on an RC or UC QP. */
static enum exec_res exec_connected(struct sofv_qp *qp, struct sofv_swqe *w)
{
	struct sofv_context *ctx = to_sctx(qp->qpx.qp_base.context);
	/* XRC is reliable connected, one SRQ per message */
	bool rc = qp->qpx.qp_base.qp_type == IBV_QPT_RC ||
		  qp->qpx.qp_base.qp_type == IBV_QPT_XRC_SEND,
	     gone;
	enum exec_res res = EXEC_DONE;
	struct sglist src;
	struct sofv_rqp *r;
	struct sofv_rmr *m = NULL;
	uint32_t need, qacc, byte_len = 0;
	int err;

	need = (w->opcode == IBV_WR_RDMA_READ || w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
		w->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD)
		   ? IBV_ACCESS_LOCAL_WRITE
		   : 0;
	if (local_sgl(qp, w, need, &src))
		return fail_wqe(qp, w, IBV_WC_LOC_PROT_ERR);

	r = connected_dest(qp, w, &res, &gone);
	if (!r) {
		if (!gone)
			return res;
		/* The peer QP no longer exists. UC: the packets are lost. RC:
		 * nobody answers, so the transport timer runs out as on the
		 * wire (IBA 9.7.6.1.3); a peer that was destroyed while its
		 * process lives is no reason to fail sooner. (When the peer's
		 * process dies, the daemon moves this QP to ERROR at once.) */
		if (!rc) {
			complete_send(qp, w, IBV_WC_SUCCESS, (uint32_t)src.total);
			return EXEC_DONE;
		}
		return no_response(qp, w);
	}
	/* the peer answers: its transport timer stops (an RNR wait goes on) */
	if (w->wait == SOFV_WAIT_PEER)
		w->wait = SOFV_WAIT_NONE;
	qacc = atomic_load_explicit(&r->shm->access, memory_order_relaxed);

	switch (w->opcode) {
	case IBV_WR_SEND_WITH_INV:
		/* IBA 9.4.1.1: the responder invalidates the rkey, then the
		 * receive completes; a key it may not invalidate is an invalid
		 * request (rxe: class J) */
		if (!rq_nonempty(r))
			return rnr(qp, w, r);
		if (sofv_mw_inv(ctx, r->qpn, w->imm_data, true)) {
			rqp_fail(ctx, r, SOF_NOTIFY_QP_REQ_ERR);
			return fail_wqe(qp, w, IBV_WC_REM_INV_REQ_ERR);
		}
		/* fall through */
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		err = deliver_recv(ctx, qp, w, r, &src, NULL);
		if (err == -EAGAIN) {
			if (!rc) /* UC: no receive WQE, the message is dropped */
				break;
			return rnr(qp, w, r);
		}
		if (err == -EMSGSIZE && rc) {
			rqp_fail(ctx, r, 0);
			return fail_wqe(qp, w, IBV_WC_REM_INV_REQ_ERR);
		}
		if (err && rc) {
			rqp_fail(ctx, r, 0);
			return fail_wqe(qp, w, IBV_WC_REM_OP_ERR);
		}
		byte_len = (uint32_t)src.total;
		break;

	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM: {
		uint8_t *p = NULL;

		/* RNR is decided before any data moves, so a retry is clean. */
		if (w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM && !rq_nonempty(r)) {
			if (!rc)
				break;
			return rnr(qp, w, r);
		}
		/* IBA 9.4.3: a zero-length WRITE does not validate the R_Key */
		if (src.total) {
			m = qp_rmr_get(qp, w->rkey, r->mr_qpn, r->use_remote, NULL);
			if (m && (qacc & IBV_ACCESS_REMOTE_WRITE) &&
			    (m->access & IBV_ACCESS_REMOTE_WRITE))
				p = rmr_ptr(m, w->remote_addr, src.total);
			if (!p) {
				if (!rc)
					break;
				rqp_fail(ctx, r, SOF_NOTIFY_QP_ACCESS_ERR);
				return fail_wqe(qp, w, IBV_WC_REM_ACCESS_ERR);
			}
			{
				struct sglist d;

				sgl_one(&d, p, src.total);
				d.e[0].rm = rmr_via(m);
				sg_copy(&d, 0, &src);
			}
		}
		if (w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM)
			deliver_recv(ctx, qp, w, r, &src, NULL);
		byte_len = (uint32_t)src.total;
		break;
	}

	case IBV_WR_RDMA_READ: {
		uint8_t *p = NULL;
		uint64_t len = 0;

		for (uint32_t i = 0; i < w->num_sge; i++)
			len += w->sge[i].length;
		if (len) {
			m = qp_rmr_get(qp, w->rkey, r->mr_qpn, r->use_remote, NULL);
			if (m && (qacc & IBV_ACCESS_REMOTE_READ) &&
			    (m->access & IBV_ACCESS_REMOTE_READ))
				p = rmr_ptr(m, w->remote_addr, len);
			if (!p) {
				rqp_fail(ctx, r, SOF_NOTIFY_QP_ACCESS_ERR);
				return fail_wqe(qp, w, IBV_WC_REM_ACCESS_ERR);
			}
			{
				struct sglist s;

				sgl_one(&s, p, len);
				s.e[0].rm = rmr_via(m);
				sg_copy(&src, 0, &s);
			}
		}
		byte_len = (uint32_t)len;
		break;
	}

	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD: {
		uint64_t *p = NULL, orig;

		/* IBA 9.4.5: atomics need an 8-byte aligned virtual address */
		if (w->remote_addr & 7) {
			rqp_fail(ctx, r, SOF_NOTIFY_QP_REQ_ERR);
			return fail_wqe(qp, w, IBV_WC_REM_INV_REQ_ERR);
		}
		m = qp_rmr_get(qp, w->rkey, r->mr_qpn, r->use_remote, NULL);
		if (m && (qacc & IBV_ACCESS_REMOTE_ATOMIC) &&
		    (m->access & IBV_ACCESS_REMOTE_ATOMIC))
			p = (uint64_t *)rmr_ptr(m, w->remote_addr, 8);
		if (!p) {
			rqp_fail(ctx, r, SOF_NOTIFY_QP_ACCESS_ERR);
			return fail_wqe(qp, w, IBV_WC_REM_ACCESS_ERR);
		}
		/* IBV_ATOMIC_HCA: atomic against every other atomic of the
		 * device, because all of them are CPU atomics on the same page
		 * (but for a region registered in place: remote_cache.c) */
		if (rmr_via(m)) {
			orig = sofv_rmr_atomic(m, (uint8_t *)p,
					       w->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD ? RMR_FETCH_ADD
											: RMR_CMP_SWAP,
					       w->compare_add, w->swap);
		} else if (w->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
			orig = __atomic_fetch_add(p, w->compare_add, __ATOMIC_SEQ_CST);
		} else {
			orig = w->compare_add;
			__atomic_compare_exchange_n(p, &orig, w->swap, false, __ATOMIC_SEQ_CST,
						    __ATOMIC_SEQ_CST);
		}
		{
			struct sglist s;

			sgl_one(&s, (uint8_t *)&orig, 8);
			sg_copy(&src, 0, &s);
		}
		byte_len = 8;
		break;
	}

	case IBV_WR_ATOMIC_WRITE: {
		uint64_t *p = NULL;

		/* as the responder of transport/responder.c: aligned, remote
		 * write access, the 8 bytes stored at once */
		if (w->remote_addr & 7) {
			rqp_fail(ctx, r, SOF_NOTIFY_QP_REQ_ERR);
			return fail_wqe(qp, w, IBV_WC_REM_INV_REQ_ERR);
		}
		m = qp_rmr_get(qp, w->rkey, r->mr_qpn, r->use_remote, NULL);
		if (m && (qacc & IBV_ACCESS_REMOTE_WRITE) && (m->access & IBV_ACCESS_REMOTE_WRITE))
			p = (uint64_t *)rmr_ptr(m, w->remote_addr, 8);
		if (!p) {
			rqp_fail(ctx, r, SOF_NOTIFY_QP_ACCESS_ERR);
			return fail_wqe(qp, w, IBV_WC_REM_ACCESS_ERR);
		}
		if (rmr_via(m)) /* in place: remote_cache.c */
			sofv_rmr_atomic(m, (uint8_t *)p, RMR_STORE, w->compare_add, 0);
		else
			__atomic_store_n(p, w->compare_add, __ATOMIC_SEQ_CST);
		break;
	}

	default:
		return fail_wqe(qp, w, IBV_WC_LOC_QP_OP_ERR);
	}
	complete_send(qp, w, IBV_WC_SUCCESS, byte_len);
	return EXEC_DONE;
}

/* Execute w on a UD QP: unreliable, a message that cannot be delivered is
 * silently dropped (IBA 9.8.3). */
static enum exec_res exec_ud(struct sofv_qp *qp, struct sofv_swqe *w)
{
	struct sofv_context *ctx = to_sctx(qp->qpx.qp_base.context);
	uint32_t mtu_bytes = 256u << (ctx->dev.active_mtu ? ctx->dev.active_mtu - 1 : 0);
	struct sofv_rqp *r;
	struct sglist src;
	uint32_t qkey;

	/* Another host, or a multicast group (its members here and on other
	 * hosts: the daemon delivers to both): the daemon's transport sends
	 * it and completes it. */
	if (w->ah &&
	    (sof_gid_is_mcast(w->ah->attr.grh.dgid.raw) || !gid_local(ctx, &w->ah->attr.grh.dgid)))
		return sofv_net_post(qp, w) ? EXEC_WAIT : EXEC_DONE;
	/* Send completions stay in order behind those the daemon owes. */
	if (sofv_net_outstanding(qp))
		return EXEC_WAIT;
	if (local_sgl(qp, w, 0, &src))
		return fail_wqe(qp, w, IBV_WC_LOC_PROT_ERR);
	if (src.total > mtu_bytes)
		return fail_wqe(qp, w, IBV_WC_LOC_LEN_ERR);
	/* IBA 10.2.5: a Q_Key with the high bit set means "use the QP's" */
	qkey = (w->remote_qkey & 0x80000000u) ? qp->attr.qkey : w->remote_qkey;
	if (!w->ah)
		goto done;
	r = sofv_rqp_get(ctx, w->remote_qpn);
	if (!r)
		goto done;
	if (r->type == IBV_QPT_UD &&
	    sof_qp_state_receives(atomic_load_explicit(&r->shm->state, memory_order_acquire)) &&
	    atomic_load_explicit(&r->shm->qkey, memory_order_relaxed) == qkey)
		deliver_recv(ctx, qp, w, r, &src, w->ah);
	rqp_put(r);
done:
	complete_send(qp, w, IBV_WC_SUCCESS, (uint32_t)src.total);
	return EXEC_DONE;
}

/* A bind or local invalidation: the daemon checks and records it
 * (mw.c). A failed bind is a local error (IBA 10.6.7.2.3): the WQE
 * completes with IBV_WC_MW_BIND_ERR and the QP goes to ERROR; a failed
 * local invalidation likewise with IBV_WC_LOC_QP_OP_ERR (as rxe). */
static enum exec_res exec_local(struct sofv_qp *qp, struct sofv_swqe *w)
{
	int err;

	if (w->opcode == IBV_WR_BIND_MW)
		err = sofv_mw_exec_bind(qp, w);
	else
		err = sofv_mw_inv(to_sctx(qp->qpx.qp_base.context), qp->qpn, w->imm_data, false);
	if (err)
		return fail_wqe(qp, w,
				w->opcode == IBV_WR_BIND_MW ? IBV_WC_MW_BIND_ERR : IBV_WC_LOC_QP_OP_ERR);
	complete_send(qp, w, IBV_WC_SUCCESS, 0);
	return EXEC_DONE;
}

/* ---- the small SEND's short way ---------------------------------------------- */

bool sofv_send_fast(struct sofv_qp *qp, const struct ibv_send_wr *wr)
{
	const struct ibv_sge *s = wr->sg_list;
	struct sofv_rqp *r = qp->peer;
	enum ibv_qp_type t = qp->qpx.qp_base.qp_type;
	uint32_t flags = wr->send_flags, len, idx, slot = 0;
	struct sofv_context *ctx;
	struct sof_cqe_carry k;
	struct sofv_swqe w;
	struct sofv_rmr *m;
	const uint8_t *src;
	struct sof_cqe c, *e;
	uint8_t *dst;

	/* what check_swqe and sofv_exec_post would pass without a word */
	if (wr->opcode != IBV_WR_SEND || wr->num_sge != 1 || !r || qp->net ||
	    qp->sq_head != qp->sq_tail || (t != IBV_QPT_RC && t != IBV_QPT_UC) ||
	    (flags & ~(unsigned int)(IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_INLINE)) ||
	    !(qp->send_ops & (1u << IBV_WR_SEND)) || !qp->cap.max_send_sge ||
	    atomic_load_explicit(&qp->shm->state, memory_order_acquire) != IBV_QPS_RTS)
		return false;
	len = s->length;
	if (!len || len > SOFV_MAX_MSG_SZ)
		return false;
	if (flags & IBV_SEND_INLINE) {
		/* read in place: the caller's buffer is good during the call */
		if (len > qp->cap.max_inline_data)
			return false;
		src = (const uint8_t *)(uintptr_t)s->addr;
	} else {
		src = lmr_bytes(qp, s, 0);
		if (!src)
			return false;
	}
	/* the destination as connected_dest keeps it */
	ctx = to_sctx(qp->qpx.qp_base.context);
	if (r->qpn != qp->attr.dest_qp_num || r->xrc_srqn || !rqp_valid(ctx, r) || r->type != t ||
	    !sof_qp_state_receives(atomic_load_explicit(&r->shm->state, memory_order_acquire)) ||
	    atomic_load_explicit(&r->shm->dest_qpn, memory_order_relaxed) != qp->qpn)
		return false;
	/* its receive WQE, checked as remote_local_sgl and deliver_recv
	 * would, before it is taken: one piece of mapped memory, room */
	if (!carried_rwqe(qp, r, &k, &idx) || k.length < len)
		return false;
	m = qp_rmr_get(qp, k.lkey, r->mr_qpn, r->use_local, NULL);
	if (!m || rmr_via(m) || !(m->access & IBV_ACCESS_LOCAL_WRITE))
		return false;
	dst = rmr_ptr(m, k.addr, k.length);
	if (!dst || !take_idx(r, idx))
		return false;
	/* taken: from here on this is deliver_recv's success, its entry
	 * written straight into the slot when one could be reserved */
	e = sof_cq_reserve(r->cq, &r->cq_head_cache, &slot) ? &c : sof_cq_slot(r->cq, slot);
	sgl_memcpy(dst, src, len);
	if (e) {
		memset(e, 0, offsetof(struct sof_cqe, seq));
		e->rq_head = idx + 1;
		e->xflags = SOF_CQE_RQ_HEAD;
		e->wr_id = k.wr_id;
		e->qp_num = r->qpn;
		e->src_qp = qp->qpn;
		e->opcode = IBV_WC_RECV;
		e->solicited = !!(flags & IBV_SEND_SOLICITED);
		e->byte_len = len;
		carry_own_rwqe(qp, e);
		if (e == &c)
			cqe_post_remote(r, &c);
		else
			sof_cq_commit(r->cq, slot, e, r->cq_evfd);
	}
	w.wr_id = wr->wr_id;
	w.opcode = IBV_WR_SEND;
	w.send_flags = flags;
	complete_send(qp, &w, IBV_WC_SUCCESS, len);
	if (atomic_load_explicit(&qp->shm->state, memory_order_relaxed) == IBV_QPS_ERR)
		sofv_qp_set_error(qp);
	return true;
}

enum exec_res sofv_exec_one(struct sofv_qp *qp, struct sofv_swqe *w)
{
	if (atomic_load_explicit(&qp->shm->state, memory_order_acquire) == IBV_QPS_ERR) {
		complete_send(qp, w, IBV_WC_WR_FLUSH_ERR, 0);
		return EXEC_DONE;
	}
	if (sofv_wr_is_local(w->opcode)) {
		/* after every WQE before it has completed (send-queue order) */
		if (qp->net && sofv_net_outstanding(qp))
			return EXEC_WAIT;
		return exec_local(qp, w);
	}
	/* a WQE queued behind a local one, of a QP to another host */
	if (qp->net)
		return sofv_net_post(qp, w) ? EXEC_WAIT : EXEC_DONE;
	if (qp->qpx.qp_base.qp_type == IBV_QPT_UD)
		return exec_ud(qp, w);
	return exec_connected(qp, w);
}
