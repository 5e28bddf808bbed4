/*
 * Posting work requests: ibv_post_send, ibv_post_recv, ibv_post_srq_recv
 * and the ibv_wr_* builder of extended QPs.
 *
 * A send WQE is checked here against the QP's type, state and capabilities
 * (the immediate errors of ibv_post_send: a positive errno and *bad_wr) and
 * then handed to the send path (send_router.c). A receive WQE is written
 * into the QP's or SRQ's shared receive ring, where an executor in any
 * process takes it; posting makes no system call.
 */
#include "sofv.h"

#include "same_host.h"
#include "sgl.h"
#include "sof_wr.h"

#include <alloca.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static bool is_atomic(uint32_t op)
{
	return op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

/* The checks every send WQE passes before it is executed. 0 or errno. */
static int check_swqe(struct sofv_qp *qp, const struct sofv_swqe *w)
{
	enum ibv_qp_type t = qp->qpx.qp_base.qp_type;
	uint32_t state = atomic_load_explicit(&qp->shm->state, memory_order_acquire);
	uint64_t len = 0;

	/* Sends are accepted in RTS (and SQD/SQE/ERR, where they flush). */
	if (state == IBV_QPS_RESET || state == IBV_QPS_INIT || state == IBV_QPS_RTR)
		return EINVAL;
	/* sof_wr_opcode_allowed, as computed when the QP was created */
	if (w->opcode >= 32 || !(qp->send_ops & (1u << w->opcode)))
		return EINVAL;
	if (w->num_sge > qp->cap.max_send_sge)
		return EINVAL;
	/* local operations move no data */
	if ((w->opcode == IBV_WR_BIND_MW || w->opcode == IBV_WR_LOCAL_INV ||
	     w->opcode == IBV_WR_ATOMIC_WRITE) &&
	    (w->num_sge || (w->send_flags & IBV_SEND_INLINE)))
		return EINVAL;
	if (w->send_flags & IBV_SEND_INLINE) {
		if (w->opcode == IBV_WR_RDMA_READ || is_atomic(w->opcode) ||
		    w->inline_len > qp->cap.max_inline_data)
			return EINVAL;
		len = w->inline_len;
	} else {
		for (uint32_t i = 0; i < w->num_sge; i++)
			len += w->sge[i].length;
	}
	if (len > SOFV_MAX_MSG_SZ)
		return EINVAL;
	/* A misaligned atomic target is the responder's to reject (invalid
	 * request, IBA 9.4.5); the local buffer must be one 8-byte SGE. */
	if (is_atomic(w->opcode) && (w->num_sge != 1 || w->sge[0].length != 8))
		return EINVAL;
	if (t == IBV_QPT_UD && (!w->ah || w->ah->ibah.context != qp->qpx.qp_base.context))
		return EINVAL;
	return 0;
}

static void set_bind(struct sofv_swqe *w, struct ibv_mw *mw, uint32_t rkey,
		     const struct ibv_mw_bind_info *info)
{
	w->mw = sof_container_of(mw, struct sofv_mw, ibmw);
	w->rkey = rkey;
	w->bind_lkey = info->mr ? info->mr->lkey : 0;
	w->bind_addr = info->addr;
	w->bind_len = info->mr ? info->length : 0;
	w->bind_access = info->mw_access_flags;
}

/* Copy a struct ibv_send_wr into w; inline data is gathered into inl. */
static int build_swqe(struct sofv_qp *qp, const struct ibv_send_wr *wr, struct sofv_swqe *w,
		      uint8_t *inl)
{
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > SOFV_MAX_SGE)
		return EINVAL;
	w->wr_id = wr->wr_id;
	w->opcode = wr->opcode;
	w->send_flags = wr->send_flags;
	w->imm_data = wr->imm_data;
	w->num_sge = (uint32_t)wr->num_sge;
	w->wait = SOFV_WAIT_NONE;
	w->inline_len = 0;
	w->inline_buf = inl;
	w->ah = NULL;
	switch (wr->opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
		w->remote_addr = wr->wr.rdma.remote_addr;
		w->rkey = wr->wr.rdma.rkey;
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		w->remote_addr = wr->wr.atomic.remote_addr;
		w->rkey = wr->wr.atomic.rkey;
		w->compare_add = wr->wr.atomic.compare_add;
		w->swap = wr->wr.atomic.swap;
		break;
	case IBV_WR_BIND_MW:
		if (!wr->bind_mw.mw || wr->bind_mw.mw->context != qp->qpx.qp_base.context)
			return EINVAL;
		set_bind(w, wr->bind_mw.mw, wr->bind_mw.rkey, &wr->bind_mw.bind_info);
		break;
	case IBV_WR_LOCAL_INV:
	case IBV_WR_SEND_WITH_INV:
		w->imm_data = wr->invalidate_rkey;
		break;
	case IBV_WR_ATOMIC_WRITE:
		/* ibv_post_send(3) of rdma-core 44 defines no layout for it:
		 * ibv_wr_atomic_write only */
		return EINVAL;
	default:
		break;
	}
	if (qp->qpx.qp_base.qp_type == IBV_QPT_UD) {
		w->ah = wr->wr.ud.ah ? to_sah(wr->wr.ud.ah) : NULL;
		w->remote_qpn = wr->wr.ud.remote_qpn & 0xffffff;
		w->remote_qkey = wr->wr.ud.remote_qkey;
	} else if (qp->qpx.qp_base.qp_type == IBV_QPT_XRC_SEND) {
		/* the XRCETH's SRQ number; the responder judges it */
		w->remote_qpn = wr->qp_type.xrc.remote_srqn & 0xffffff;
	}
	if (w->num_sge == 1) /* no call for the usual case */
		w->sge[0] = wr->sg_list[0];
	else if (w->num_sge)
		memcpy(w->sge, wr->sg_list, sizeof(struct ibv_sge) * w->num_sge);
	if (wr->send_flags & IBV_SEND_INLINE) {
		uint64_t len = 0;

		for (uint32_t i = 0; i < w->num_sge; i++)
			len += w->sge[i].length;
		if (len > qp->cap.max_inline_data)
			return EINVAL;
		for (uint32_t i = 0; i < w->num_sge; i++) {
			sgl_memcpy(inl + w->inline_len, (void *)(uintptr_t)w->sge[i].addr,
				   w->sge[i].length);
			w->inline_len += w->sge[i].length;
		}
	}
	return check_swqe(qp, w);
}

int sofv_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	struct sofv_qp *qp = to_sqp(ibqp);
	uint8_t *inl = alloca(SOFV_MAX_INLINE);
	struct sofv_swqe w;
	int err = 0;

	sofv_spin_lock(&qp->sq_lock);
	if (wr && !wr->next && sofv_send_fast(qp, wr)) {
		sofv_spin_unlock(&qp->sq_lock);
		return 0;
	}
	/* a UD list's datagrams leave together (net_sq.c) */
	qp->post_list = wr && wr->next && qp->qpx.qp_base.qp_type == IBV_QPT_UD;
	for (; wr; wr = wr->next) {
		err = build_swqe(qp, wr, &w, inl);
		if (!err)
			err = sofv_exec_post(qp, &w);
		if (err)
			break;
	}
	qp->post_list = false;
	sofv_net_post_end(qp);
	sofv_spin_unlock(&qp->sq_lock);
	if (err)
		*bad_wr = wr;
	return err;
}

/* Write receive WQEs into a shared ring. Caller holds the producer lock.
 * hint (a QP's own ring) is its receive CQ's head hint, or NULL. */
static inline int post_ring(struct sof_ring_idx *idx, uint8_t *ring, uint32_t size, uint32_t stride,
			    uint32_t max_wr, uint32_t max_sge, uint32_t *head_cache,
			    _Atomic uint64_t *hint, uint32_t qpn, _Atomic uintptr_t *pf_next,
			    struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	uint32_t tail = atomic_load_explicit(&idx->tail, memory_order_relaxed);

	for (; wr; wr = wr->next) {
		/* the consumers' head, as last read: reading it on every post
		 * costs a cache line from the sender's CPU, and a head read
		 * earlier is never ahead of the real one */
		uint32_t head = *head_cache;
		struct sof_rwqe *q;

		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > max_sge) {
			*bad_wr = wr;
			return EINVAL;
		}
		if ((tail - head >= max_wr || tail - head >= size) && hint) {
			head = sofv_rq_hint_head(hint, qpn, head, tail);
			__atomic_store_n(head_cache, head, __ATOMIC_RELAXED);
		}
		if (tail - head >= max_wr || tail - head >= size) {
			head = atomic_load_explicit(&idx->head, memory_order_acquire);
			__atomic_store_n(head_cache, head, __ATOMIC_RELAXED);
		}
		if (tail - head >= max_wr || tail - head >= size) {
			*bad_wr = wr;
			return ENOMEM;
		}
		q = (struct sof_rwqe *)(ring + (size_t)(tail & (size - 1)) * stride);
		q->wr_id = wr->wr_id;
		q->num_sge = (uint32_t)wr->num_sge;
		q->rsvd = 0;
		for (int i = 0; i < wr->num_sge; i++) {
			q->sge[i].addr = wr->sg_list[i].addr;
			q->sge[i].length = wr->sg_list[i].length;
			q->sge[i].lkey = wr->sg_list[i].lkey;
		}
		tail++;
		atomic_store_explicit(&idx->tail, tail, memory_order_release);
	}
	/* the slot the next post writes: its CQ's poll prefetches it (poll.c) */
	if (pf_next)
		atomic_store_explicit(pf_next,
				      (uintptr_t)(ring + (size_t)(tail & (size - 1)) * stride),
				      memory_order_relaxed);
	return 0;
}

int sofv_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	struct sofv_qp *qp = to_sqp(ibqp);
	uint32_t state = atomic_load_explicit(&qp->shm->state, memory_order_acquire);
	int err;

	/* A QP attached to an SRQ has no receive queue of its own; receives
	 * cannot be posted in RESET (IBA 10.8.2). */
	if (qp->srq || !qp->rq_size || state == IBV_QPS_RESET) {
		*bad_wr = wr;
		return EINVAL;
	}
	sofv_spin_lock(&qp->rq_lock);
	err =
	    post_ring(&qp->shm->rq, qp->rq_ring, qp->rq_size, qp->rq_stride, qp->cap.max_recv_wr,
		      qp->cap.max_recv_sge, &qp->rq_head_cache, qp->rcq ? &qp->rcq->rq_hint : NULL,
		      qp->qpn, qp->rcq ? &qp->rcq->pf_own_rwqe : NULL, wr, bad_wr);
	sofv_spin_unlock(&qp->rq_lock);
	if (state == IBV_QPS_ERR)
		sofv_qp_flush_rq(qp);
	return err;
}

int sofv_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	struct sofv_srq *srq = to_ssrq(ibsrq);
	int err;

	sofv_spin_lock(&srq->lock);
	err = post_ring(&srq->shm->rq, srq->ring, srq->size, srq->stride, srq->max_wr, srq->max_sge,
			&srq->head_cache, NULL, 0, NULL, wr, bad_wr);
	sofv_spin_unlock(&srq->lock);
	return err;
}

/* ---- ibv_wr_* --------------------------------------------------------------- */

static struct sofv_qp *qx_to_sqp(struct ibv_qp_ex *qx)
{
	return sof_container_of(qx, struct sofv_qp, qpx);
}

/* Start a new WQE of the list; NULL once the list has failed. */
static struct sofv_swqe *wr_new(struct ibv_qp_ex *qx, uint32_t opcode)
{
	struct sofv_qp *qp = qx_to_sqp(qx);
	struct sofv_wr_ent *e;

	if (qp->wr_err)
		return NULL;
	if (qp->wr_nlist == qp->wr_list_cap) {
		uint32_t ncap = qp->wr_list_cap ? qp->wr_list_cap * 2 : 16;
		struct sofv_wr_ent *n = realloc(qp->wr_list, sizeof(*n) * ncap);

		if (!n) {
			qp->wr_err = ENOMEM;
			return NULL;
		}
		qp->wr_list = n;
		qp->wr_list_cap = ncap;
	}
	e = &qp->wr_list[qp->wr_nlist++];
	memset(&e->w, 0, sizeof(e->w));
	e->w.wr_id = qx->wr_id;
	e->w.send_flags = qx->wr_flags;
	e->w.opcode = opcode;
	return &e->w;
}

/* The WQE the setters apply to. */
static struct sofv_wr_ent *wr_cur(struct ibv_qp_ex *qx)
{
	struct sofv_qp *qp = qx_to_sqp(qx);

	if (qp->wr_err)
		return NULL;
	if (!qp->wr_nlist) {
		qp->wr_err = EINVAL;
		return NULL;
	}
	return &qp->wr_list[qp->wr_nlist - 1];
}

static void wr_start(struct ibv_qp_ex *qx)
{
	struct sofv_qp *qp = qx_to_sqp(qx);

	sofv_spin_lock(&qp->sq_lock);
	qp->wr_err = 0;
	qp->wr_nlist = 0;
}

static int wr_complete(struct ibv_qp_ex *qx)
{
	struct sofv_qp *qp = qx_to_sqp(qx);
	int err = qp->wr_err;

	qp->post_list = qp->wr_nlist > 1 && qp->qpx.qp_base.qp_type == IBV_QPT_UD;
	for (uint32_t i = 0; !err && i < qp->wr_nlist; i++) {
		struct sofv_wr_ent *e = &qp->wr_list[i];

		e->w.inline_buf = e->data;
		err = check_swqe(qp, &e->w);
		if (!err)
			err = sofv_exec_post(qp, &e->w);
	}
	qp->post_list = false;
	sofv_net_post_end(qp);
	qp->wr_nlist = 0;
	sofv_spin_unlock(&qp->sq_lock);
	return err;
}

static void wr_abort(struct ibv_qp_ex *qx)
{
	struct sofv_qp *qp = qx_to_sqp(qx);

	qp->wr_nlist = 0;
	sofv_spin_unlock(&qp->sq_lock);
}

static void wr_send(struct ibv_qp_ex *qx) { wr_new(qx, IBV_WR_SEND); }

static void wr_send_imm(struct ibv_qp_ex *qx, __be32 imm)
{
	struct sofv_swqe *w = wr_new(qx, IBV_WR_SEND_WITH_IMM);

	if (w)
		w->imm_data = imm;
}

static void wr_rdma(struct ibv_qp_ex *qx, uint32_t op, uint32_t rkey, uint64_t addr, __be32 imm)
{
	struct sofv_swqe *w = wr_new(qx, op);

	if (w) {
		w->rkey = rkey;
		w->remote_addr = addr;
		w->imm_data = imm;
	}
}

static void wr_rdma_write(struct ibv_qp_ex *qx, uint32_t rkey, uint64_t addr)
{
	wr_rdma(qx, IBV_WR_RDMA_WRITE, rkey, addr, 0);
}

static void wr_rdma_write_imm(struct ibv_qp_ex *qx, uint32_t rkey, uint64_t addr, __be32 imm)
{
	wr_rdma(qx, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, addr, imm);
}

static void wr_rdma_read(struct ibv_qp_ex *qx, uint32_t rkey, uint64_t addr)
{
	wr_rdma(qx, IBV_WR_RDMA_READ, rkey, addr, 0);
}

static void wr_atomic_cmp_swp(struct ibv_qp_ex *qx, uint32_t rkey, uint64_t addr, uint64_t compare,
			      uint64_t swap)
{
	struct sofv_swqe *w = wr_new(qx, IBV_WR_ATOMIC_CMP_AND_SWP);

	if (w) {
		w->rkey = rkey;
		w->remote_addr = addr;
		w->compare_add = compare;
		w->swap = swap;
	}
}

static void wr_atomic_fetch_add(struct ibv_qp_ex *qx, uint32_t rkey, uint64_t addr, uint64_t add)
{
	struct sofv_swqe *w = wr_new(qx, IBV_WR_ATOMIC_FETCH_AND_ADD);

	if (w) {
		w->rkey = rkey;
		w->remote_addr = addr;
		w->compare_add = add;
	}
}

static void wr_set_ud_addr(struct ibv_qp_ex *qx, struct ibv_ah *ah, uint32_t remote_qpn,
			   uint32_t remote_qkey)
{
	struct sofv_wr_ent *e = wr_cur(qx);

	if (e) {
		e->w.ah = ah ? to_sah(ah) : NULL;
		e->w.remote_qpn = remote_qpn & 0xffffff;
		e->w.remote_qkey = remote_qkey;
	}
}

static void wr_set_sge_list(struct ibv_qp_ex *qx, size_t num_sge, const struct ibv_sge *sg)
{
	struct sofv_wr_ent *e = wr_cur(qx);

	if (!e)
		return;
	if (num_sge > SOFV_MAX_SGE) {
		qx_to_sqp(qx)->wr_err = EINVAL;
		return;
	}
	e->w.num_sge = (uint32_t)num_sge;
	memcpy(e->w.sge, sg, sizeof(*sg) * num_sge);
}

static void wr_set_sge(struct ibv_qp_ex *qx, uint32_t lkey, uint64_t addr, uint32_t length)
{
	struct ibv_sge s = {.addr = addr, .length = length, .lkey = lkey};

	wr_set_sge_list(qx, 1, &s);
}

static void wr_set_inline_data_list(struct ibv_qp_ex *qx, size_t num_buf,
				    const struct ibv_data_buf *buf)
{
	struct sofv_wr_ent *e = wr_cur(qx);
	size_t len = 0;

	if (!e)
		return;
	for (size_t i = 0; i < num_buf; i++)
		len += buf[i].length;
	if (len > qx_to_sqp(qx)->cap.max_inline_data || len > SOFV_MAX_INLINE) {
		qx_to_sqp(qx)->wr_err = EINVAL;
		return;
	}
	e->w.inline_len = 0;
	for (size_t i = 0; i < num_buf; i++) {
		memcpy(e->data + e->w.inline_len, buf[i].addr, buf[i].length);
		e->w.inline_len += (uint32_t)buf[i].length;
	}
	e->w.send_flags |= IBV_SEND_INLINE;
	e->w.num_sge = 0;
}

static void wr_set_inline_data(struct ibv_qp_ex *qx, void *addr, size_t length)
{
	struct ibv_data_buf b = {.addr = addr, .length = length};

	wr_set_inline_data_list(qx, 1, &b);
}

/* Operations this device does not offer fail the whole list. */
static void wr_unsupported(struct ibv_qp_ex *qx) { qx_to_sqp(qx)->wr_err = EOPNOTSUPP; }

static void wr_bind_mw(struct ibv_qp_ex *qx, struct ibv_mw *mw, uint32_t rkey,
		       const struct ibv_mw_bind_info *info)
{
	struct sofv_swqe *w = wr_new(qx, IBV_WR_BIND_MW);

	if (!w)
		return;
	if (!mw || !info || mw->context != qx->qp_base.context) {
		qx_to_sqp(qx)->wr_err = EINVAL;
		return;
	}
	set_bind(w, mw, rkey, info);
}

static void wr_local_inv(struct ibv_qp_ex *qx, uint32_t rkey)
{
	struct sofv_swqe *w = wr_new(qx, IBV_WR_LOCAL_INV);

	if (w)
		w->imm_data = rkey;
}

static void wr_send_inv(struct ibv_qp_ex *qx, uint32_t rkey)
{
	struct sofv_swqe *w = wr_new(qx, IBV_WR_SEND_WITH_INV);

	if (w)
		w->imm_data = rkey;
}

static void wr_send_tso(struct ibv_qp_ex *qx, void *hdr, uint16_t hdr_sz, uint16_t mss)
{
	(void)hdr;
	(void)hdr_sz;
	(void)mss;
	wr_unsupported(qx);
}

static void wr_set_xrc_srqn(struct ibv_qp_ex *qx, uint32_t srqn)
{
	struct sofv_wr_ent *e = wr_cur(qx);

	if (!e)
		return;
	if (qx->qp_base.qp_type != IBV_QPT_XRC_SEND) {
		qx_to_sqp(qx)->wr_err = EINVAL;
		return;
	}
	e->w.remote_qpn = srqn & 0xffffff;
}

/* ibv_wr_atomic_write: 8 bytes stored at once at the responder (IBA 1.5);
 * the bytes travel as given, kept in compare_add. */
static void wr_atomic_write(struct ibv_qp_ex *qx, uint32_t rkey, uint64_t addr, const void *data)
{
	struct sofv_swqe *w = wr_new(qx, IBV_WR_ATOMIC_WRITE);

	if (!w)
		return;
	if (!data) {
		qx_to_sqp(qx)->wr_err = EINVAL;
		return;
	}
	w->rkey = rkey;
	w->remote_addr = addr;
	memcpy(&w->compare_add, data, 8);
}

void sofv_qp_ex_init(struct sofv_qp *qp, uint64_t send_ops_flags)
{
	struct ibv_qp_ex *qx = &qp->qpx;

	(void)send_ops_flags; /* qp.c rejected the flags we do not support */
	qx->wr_start = wr_start;
	qx->wr_complete = wr_complete;
	qx->wr_abort = wr_abort;
	qx->wr_send = wr_send;
	qx->wr_send_imm = wr_send_imm;
	qx->wr_rdma_write = wr_rdma_write;
	qx->wr_rdma_write_imm = wr_rdma_write_imm;
	qx->wr_rdma_read = wr_rdma_read;
	qx->wr_atomic_cmp_swp = wr_atomic_cmp_swp;
	qx->wr_atomic_fetch_add = wr_atomic_fetch_add;
	qx->wr_set_ud_addr = wr_set_ud_addr;
	qx->wr_set_sge = wr_set_sge;
	qx->wr_set_sge_list = wr_set_sge_list;
	qx->wr_set_inline_data = wr_set_inline_data;
	qx->wr_set_inline_data_list = wr_set_inline_data_list;
	qx->wr_bind_mw = wr_bind_mw;
	qx->wr_local_inv = wr_local_inv;
	qx->wr_send_inv = wr_send_inv;
	qx->wr_send_tso = wr_send_tso;
	qx->wr_set_xrc_srqn = wr_set_xrc_srqn;
	qx->wr_atomic_write = wr_atomic_write;
}
