/*
 * Queue pairs on the control path: ibv_create_qp(_ex), ibv_modify_qp with
 * the state machine and attribute checks of IBA 10.3 / 11.2.5
 * (qp_state.c), ibv_query_qp, ibv_destroy_qp, ibv_qp_to_qp_ex, and the
 * multicast attach calls.
 *
 * A QP is a memfd segment (struct sof_qp_shm and the receive ring) shared
 * with the daemon and with executors in other processes, plus a private
 * send side: send WQEs run in ibv_post_send (same_host.c) and only those that
 * must wait are kept in the QP's deferred ring. What executors of other
 * processes need from the QP's attributes (state, access flags, Q_Key,
 * destination QPN, RNR timer) is published in the segment; the daemon keeps
 * a copy for peer look-up and clean-up.
 */
#include "qp_state.h"
#include "sofv.h"

#include "sof_wr.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define SUPPORTED_SEND_OPS                                                                         \
	(IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_WRITE |          \
	 IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ |                           \
	 IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |                 \
	 IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_SEND_WITH_INV |        \
	 IBV_QP_EX_WITH_ATOMIC_WRITE)
#define UD_SEND_OPS (IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM)
#define UC_SEND_OPS                                                                                \
	(UD_SEND_OPS | IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |            \
	 IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV)

static int qp_check_init_attr(struct ibv_context *ctx, const struct ibv_qp_init_attr_ex *a)
{
	const struct ibv_qp_cap *c = &a->cap;

	if (a->comp_mask & ~(uint32_t)(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS |
				       IBV_QP_INIT_ATTR_SEND_OPS_FLAGS | IBV_QP_INIT_ATTR_XRCD))
		return EOPNOTSUPP;
	if ((a->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && a->create_flags)
		return EOPNOTSUPP;
	if (a->qp_type == IBV_QPT_XRC_RECV) {
		/* an XRC TGT QP: a domain, no PD, CQs nor queues of its own */
		if (!(a->comp_mask & IBV_QP_INIT_ATTR_XRCD) || !a->xrcd || a->xrcd->context != ctx)
			return EINVAL;
		if (a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)
			return EINVAL;
		return 0;
	}
	if (!(a->comp_mask & IBV_QP_INIT_ATTR_PD) || !a->pd || a->pd->context != ctx)
		return EINVAL;
	if (a->qp_type != IBV_QPT_RC && a->qp_type != IBV_QPT_UC && a->qp_type != IBV_QPT_UD &&
	    a->qp_type != IBV_QPT_XRC_SEND && a->qp_type != IBV_QPT_RAW_PACKET)
		return EOPNOTSUPP;
	/* an XRC INI QP sends only: its receive side is ignored */
	if (a->qp_type == IBV_QPT_XRC_SEND && a->send_cq && a->send_cq->context == ctx) {
		if (c->max_send_wr > SOFV_MAX_QP_WR || c->max_send_sge > SOFV_MAX_SGE ||
		    c->max_inline_data > SOFV_MAX_INLINE)
			return EINVAL;
		if ((a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
		    (a->send_ops_flags & ~(uint64_t)(SUPPORTED_SEND_OPS)))
			return EOPNOTSUPP;
		return 0;
	}
	if (!a->send_cq || !a->recv_cq || a->send_cq->context != ctx || a->recv_cq->context != ctx)
		return EINVAL;
	if (a->srq && a->srq->context != ctx)
		return EINVAL;
	if (c->max_send_wr > SOFV_MAX_QP_WR || c->max_send_sge > SOFV_MAX_SGE ||
	    c->max_inline_data > SOFV_MAX_INLINE)
		return EINVAL;
	if (!a->srq && (c->max_recv_wr > SOFV_MAX_QP_WR || c->max_recv_sge > SOFV_MAX_SGE))
		return EINVAL;
	if (a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		uint64_t allowed = a->qp_type == IBV_QPT_UD	      ? UD_SEND_OPS
				   : a->qp_type == IBV_QPT_UC	      ? UC_SEND_OPS
				   : a->qp_type == IBV_QPT_RAW_PACKET ? IBV_QP_EX_WITH_SEND
								      : SUPPORTED_SEND_OPS;

		if (a->send_ops_flags & ~allowed)
			return EOPNOTSUPP;
	}
	return 0;
}

static void qp_free(struct sofv_qp *qp)
{
	if (qp->shm)
		munmap(qp->shm, qp->shm_len);
	if (qp->memfd >= 0)
		close(qp->memfd);
	if (qp->nsq)
		munmap(qp->nsq, qp->nsq_len);
	if (qp->nsq_fd >= 0)
		close(qp->nsq_fd);
	if (qp->sq)
		munmap(qp->sq, (size_t)qp->sq_size * sizeof(*qp->sq));
	free(qp->inline_area);
	free(qp->wr_list);
	free(qp);
}

struct ibv_qp *sofv_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr)
{
	struct sofv_context *s = to_sctx(ctx);
	struct sof_create_qp_req req;
	struct sof_create_qp_rep rep;
	struct ibv_qp *ib;
	struct sofv_qp *qp;
	uint32_t rq_sge, max_inline;
	int err, dbfd = -1, ndb = 1, fds[2];
	void *p;

	err = qp_check_init_attr(ctx, attr);
	if (err)
		goto err_out;
	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		err = ENOMEM;
		goto err_out;
	}
	qp->memfd = -1;
	qp->nsq_fd = -1;
	if (attr->qp_type == IBV_QPT_XRC_RECV) {
		memset(&attr->cap, 0, sizeof(attr->cap));
		attr->send_cq = attr->recv_cq = NULL;
		attr->srq = NULL;
		attr->pd = NULL;
	} else if (attr->qp_type == IBV_QPT_XRC_SEND) {
		/* completions of the INI QP: its send CQ for both (the daemon
		 * keeps the invariant of two CQs; nothing is received) */
		attr->recv_cq = attr->send_cq;
		attr->srq = NULL;
		attr->cap.max_recv_wr = attr->cap.max_recv_sge = 0;
	}
	qp->pd = attr->pd ? to_spd(attr->pd) : NULL;
	qp->scq = attr->send_cq ? to_scq(attr->send_cq) : NULL;
	qp->rcq = attr->recv_cq ? to_scq(attr->recv_cq) : NULL;
	qp->srq = attr->srq ? to_ssrq(attr->srq) : NULL;
	qp->sq_sig_all = attr->sq_sig_all ? 1 : 0;
	qp->is_ex = (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) != 0;
	for (uint32_t op = 0; op < 32; op++)
		if (sof_wr_opcode_allowed(attr->qp_type, op))
			qp->send_ops |= 1u << op;

	/* Send side: the deferred ring and the inline copies of its WQEs. */
	qp->sq_size = sof_roundup_pow2(attr->cap.max_send_wr ? attr->cap.max_send_wr : 1);
	/* Inline room is at least what the gather list could describe, as
	 * rxe and mlx5 round it (programs such as rdma_xclient ask for 0 and
	 * post small inline sends). */
	max_inline = attr->cap.max_inline_data;
	if (max_inline < (attr->cap.max_send_sge ? attr->cap.max_send_sge : 1) * 16u)
		max_inline = (attr->cap.max_send_sge ? attr->cap.max_send_sge : 1) * 16u;
	if (max_inline > SOFV_MAX_INLINE)
		max_inline = SOFV_MAX_INLINE;
	qp->inline_stride = max_inline;
	/* Anonymous pages: only the entries a QP uses take memory (at 600
	 * bytes an entry, a QP that never sends would hold 77 KiB of heap) */
	qp->sq = mmap(NULL, (size_t)qp->sq_size * sizeof(*qp->sq), PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (qp->sq == MAP_FAILED)
		qp->sq = NULL;
	qp->inline_area = calloc(qp->sq_size, qp->inline_stride);
	if (!qp->sq || !qp->inline_area) {
		err = ENOMEM;
		goto err_free;
	}
	qp->cap.max_send_wr = qp->sq_size;
	qp->cap.max_send_sge = attr->cap.max_send_sge ? attr->cap.max_send_sge : 1;
	qp->cap.max_inline_data = max_inline;

	/* Receive side: the shared ring, absent with an SRQ and for XRC. */
	rq_sge = 0;
	if (!qp->srq && attr->qp_type != IBV_QPT_XRC_SEND && attr->qp_type != IBV_QPT_XRC_RECV) {
		qp->rq_size = sof_roundup_pow2(attr->cap.max_recv_wr ? attr->cap.max_recv_wr : 1);
		rq_sge = attr->cap.max_recv_sge ? attr->cap.max_recv_sge : 1;
		qp->rq_stride = SOF_RWQE_STRIDE(rq_sge);
		qp->cap.max_recv_wr = qp->rq_size;
		qp->cap.max_recv_sge = rq_sge;
	}
	/* Network send queue: as deep as the send queue, a memfd of its own. */
	qp->nsq_stride = SOF_NWQE_STRIDE(qp->cap.max_send_sge, qp->cap.max_inline_data);
	qp->nsq_len = SOF_NSQ_SEG_LEN(qp->sq_size, qp->nsq_stride);
	qp->nsq_fd = sof_memfd_create("softofed-nsq", qp->nsq_len);
	if (qp->nsq_fd < 0) {
		err = -qp->nsq_fd;
		qp->nsq_fd = -1;
		goto err_free;
	}
	p = mmap(NULL, qp->nsq_len, PROT_READ | PROT_WRITE, MAP_SHARED, qp->nsq_fd, 0);
	if (p == MAP_FAILED) {
		err = errno;
		goto err_free;
	}
	qp->nsq = p;
	qp->nsq_ring = (uint8_t *)p + SOF_NSQ_RING_OFF;

	qp->shm_len = SOF_QP_RQ_OFF + (size_t)qp->rq_size * SOF_RWQE_STRIDE(rq_sge);
	qp->memfd = sof_memfd_create("softofed-qp", qp->shm_len);
	if (qp->memfd < 0) {
		err = -qp->memfd;
		qp->memfd = -1;
		goto err_free;
	}
	p = mmap(NULL, qp->shm_len, PROT_READ | PROT_WRITE, MAP_SHARED, qp->memfd, 0);
	if (p == MAP_FAILED) {
		err = errno;
		goto err_free;
	}
	qp->shm = p;
	qp->rq_ring = qp->rq_size ? (uint8_t *)p + SOF_QP_RQ_OFF : NULL;
	atomic_store(&qp->shm->state, IBV_QPS_RESET);

	memset(&req, 0, sizeof(req));
	req.pd = qp->pd ? qp->pd->handle : 0;
	req.qp_type = attr->qp_type;
	req.send_cq = qp->scq ? qp->scq->handle : 0;
	req.recv_cq = qp->rcq ? qp->rcq->handle : 0;
	req.xrcd = attr->qp_type == IBV_QPT_XRC_RECV ? to_sxrcd(attr->xrcd)->handle : 0;
	req.srq = qp->srq ? qp->srq->handle : 0;
	req.rq_size = qp->rq_size;
	req.rq_max_sge = rq_sge;
	req.sq_sig_all = qp->sq_sig_all;
	req.sq_size = qp->sq_size;
	req.sq_max_sge = qp->cap.max_send_sge;
	req.sq_max_inline = qp->cap.max_inline_data;
	fds[0] = qp->memfd;
	fds[1] = qp->nsq_fd;
	err = -sofv_rpc(s, SOF_OP_CREATE_QP, &req, sizeof(req), fds, 2, &rep, sizeof(rep), &dbfd,
			&ndb);
	if (err)
		goto err_free;
	/* The connection's doorbell comes with every QP; keep the first. */
	if (ndb == 1) {
		int none = -1;

		if (!atomic_compare_exchange_strong(&s->doorbell, &none, dbfd))
			close(dbfd);
	}
	qp->qpn = rep.qpn;
	/* The segments stay mapped; their descriptors are the daemon's to
	 * hand out now. Keeping them would cost two per QP of the process's
	 * descriptor limit (10,000 QPs did not fit in 20,000). */
	close(qp->memfd);
	qp->memfd = -1;
	close(qp->nsq_fd);
	qp->nsq_fd = -1;
	pthread_spin_init(&qp->rq_lock, PTHREAD_PROCESS_PRIVATE);
	pthread_spin_init(&qp->sq_lock, PTHREAD_PROCESS_PRIVATE);

	ib = &qp->qpx.qp_base;
	ib->context = ctx;
	ib->qp_context = attr->qp_context;
	ib->pd = attr->pd;
	ib->send_cq = attr->send_cq;
	ib->recv_cq = attr->recv_cq;
	ib->srq = attr->srq;
	ib->handle = qp->qpn;
	ib->qp_num = qp->qpn;
	ib->state = IBV_QPS_RESET;
	ib->qp_type = attr->qp_type;
	pthread_mutex_init(&ib->mutex, NULL);
	pthread_cond_init(&ib->cond, NULL);
	ib->events_completed = 0;
	qp->attr.qp_state = IBV_QPS_RESET;
	qp->attr.cur_qp_state = IBV_QPS_RESET;
	qp->attr.path_mtu = IBV_MTU_1024;
	qp->attr.path_mig_state = IBV_MIG_MIGRATED;
	qp->attr.port_num = 1;
	qp->attr.cap = qp->cap;
	sofv_qp_ex_init(qp, attr->send_ops_flags);
	if (qp->is_ex)
		qp->qpx.comp_mask = 0;

	if (qp->scq && sofv_cq_attach_qp(qp->scq, qp))
		goto err_nomem;
	if (qp->rcq != qp->scq && sofv_cq_attach_qp(qp->rcq, qp)) {
		sofv_cq_detach_qp(qp->scq, qp);
		goto err_nomem;
	}
	pthread_rwlock_wrlock(&s->obj_lock);
	err = -sof_hmap_put(&s->qps, qp->qpn, qp);
	pthread_rwlock_unlock(&s->obj_lock);
	if (err) {
		if (qp->scq)
			sofv_cq_detach_qp(qp->scq, qp);
		if (qp->rcq != qp->scq)
			sofv_cq_detach_qp(qp->rcq, qp);
		goto err_nomem;
	}
	attr->cap = qp->cap;
	return ib;

err_nomem:
	/* The daemon holds the QP: release it there before freeing. */
	{
		struct sof_qp_req d = {.qpn = qp->qpn};

		sofv_rpc(s, SOF_OP_DESTROY_QP, &d, sizeof(d), NULL, 0, NULL, 0, NULL, NULL);
	}
	err = ENOMEM;
err_free:
	qp_free(qp);
err_out:
	errno = err;
	return NULL;
}

/* ibv_open_qp (xrc.c): a handle of this context on an XRC TGT QP that
 * another handle created; the segment (memfd, taken) is the QP's own, so
 * state and attributes published there are shared. */
struct ibv_qp *sofv_qp_opened(struct ibv_context *ctx, const struct ibv_qp_open_attr *attr,
			      const struct sof_create_qp_rep *rep, int memfd)
{
	struct sofv_context *s = to_sctx(ctx);
	struct sofv_qp *qp;
	struct ibv_qp *ib;
	void *p;
	int err;

	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		close(memfd);
		errno = ENOMEM;
		return NULL;
	}
	qp->memfd = memfd;
	qp->nsq_fd = -1;
	qp->xrc_opened = true;
	qp->qpn = rep->qpn;
	qp->shm_len = SOF_QP_RQ_OFF;
	err = sof_memfd_check(memfd, qp->shm_len);
	p = err ? MAP_FAILED
		: mmap(NULL, qp->shm_len, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (p == MAP_FAILED) {
		err = err ? -err : errno;
		goto err_free;
	}
	qp->shm = p;
	close(qp->memfd);
	qp->memfd = -1;
	pthread_spin_init(&qp->rq_lock, PTHREAD_PROCESS_PRIVATE);
	pthread_spin_init(&qp->sq_lock, PTHREAD_PROCESS_PRIVATE);
	ib = &qp->qpx.qp_base;
	ib->context = ctx;
	ib->qp_context = attr->qp_context;
	ib->handle = qp->qpn;
	ib->qp_num = qp->qpn;
	ib->state = (enum ibv_qp_state)atomic_load(&qp->shm->state);
	ib->qp_type = IBV_QPT_XRC_RECV;
	pthread_mutex_init(&ib->mutex, NULL);
	pthread_cond_init(&ib->cond, NULL);
	qp->attr.qp_state = ib->state;
	qp->attr.cur_qp_state = ib->state;
	qp->attr.path_mtu = IBV_MTU_1024;
	qp->attr.path_mig_state = IBV_MIG_MIGRATED;
	qp->attr.port_num = 1;
	sofv_qp_ex_init(qp, 0);
	pthread_rwlock_wrlock(&s->obj_lock);
	err = -sof_hmap_put(&s->qps, qp->qpn, qp);
	pthread_rwlock_unlock(&s->obj_lock);
	if (err) {
		struct sof_qp_req d = {.qpn = qp->qpn};

		sofv_rpc(s, SOF_OP_DESTROY_QP, &d, sizeof(d), NULL, 0, NULL, 0, NULL, NULL);
		goto err_free;
	}
	return ib;

err_free:
	qp_free(qp);
	errno = err;
	return NULL;
}

SOFV_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex a;
	struct ibv_qp *qp;

	if (!pd || !attr) {
		errno = EINVAL;
		return NULL;
	}
	memset(&a, 0, sizeof(a));
	a.qp_context = attr->qp_context;
	a.send_cq = attr->send_cq;
	a.recv_cq = attr->recv_cq;
	a.srq = attr->srq;
	a.cap = attr->cap;
	a.qp_type = attr->qp_type;
	a.sq_sig_all = attr->sq_sig_all;
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.pd = pd;
	qp = sofv_create_qp_ex(pd->context, &a);
	if (qp)
		attr->cap = a.cap;
	return qp;
}

SOFV_EXPORT struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *ibqp)
{
	struct sofv_qp *qp;

	if (!ibqp)
		return NULL;
	qp = to_sqp(ibqp);
	return qp->is_ex ? &qp->qpx : NULL;
}

/* ---- modify ------------------------------------------------------------------ */

/* Attribute values (IBA 10.3, ibv_modify_qp(3)). 0 or EINVAL. */
static int check_attr_values(struct sofv_qp *qp, const struct ibv_qp_attr *a, int mask)
{
	struct sofv_context *s = to_sctx(qp->qpx.qp_base.context);

	if ((mask & IBV_QP_PORT) && a->port_num != 1)
		return EINVAL;
	if ((mask & IBV_QP_PKEY_INDEX) && a->pkey_index >= (s->ib ? SOF_IB_PKEYS : SOFV_MAX_PKEYS))
		return EINVAL;
	/* qp_access_flags: only the remote bits mean anything to a QP; others
	 * (IBV_ACCESS_ON_DEMAND, as rdma-core's ODP tests pass the MR's
	 * flags) are kept and ignored, as the kernel and rxe do */
	if ((mask & IBV_QP_AV) && s->ib) {
		/* sofib0: by LID (a unicast DLID), a GRH only when global
		 * (its one GID, index 0) */
		if (!a->ah_attr.dlid || a->ah_attr.dlid >= 0xc000 || a->ah_attr.sl > 15 ||
		    (a->ah_attr.is_global && a->ah_attr.grh.sgid_index != 0) ||
		    a->ah_attr.port_num > 1)
			return EINVAL;
	} else if (mask & IBV_QP_AV) {
		/* RoCE: every path has a GRH (IBA A16.4 / A17.4). */
		if (!a->ah_attr.is_global || sofv_gid_read(s, a->ah_attr.grh.sgid_index, NULL) ||
		    a->ah_attr.port_num > 1)
			return EINVAL;
	}
	if ((mask & IBV_QP_PATH_MTU) && (a->path_mtu < IBV_MTU_256 || a->path_mtu > IBV_MTU_4096 ||
					 (uint32_t)a->path_mtu > s->dev.active_mtu))
		return EINVAL;
	if ((mask & IBV_QP_DEST_QPN) && a->dest_qp_num > 0xffffff)
		return EINVAL;
	if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && a->max_dest_rd_atomic > SOFV_MAX_QP_RD_ATOM)
		return EINVAL;
	if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && a->max_rd_atomic > SOFV_MAX_QP_RD_ATOM)
		return EINVAL;
	if ((mask & IBV_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31)
		return EINVAL;
	if ((mask & IBV_QP_TIMEOUT) && a->timeout > 31)
		return EINVAL;
	if ((mask & IBV_QP_RETRY_CNT) && a->retry_cnt > 7)
		return EINVAL;
	if ((mask & IBV_QP_RNR_RETRY) && a->rnr_retry > 7)
		return EINVAL;
	if ((mask & IBV_QP_RATE_LIMIT) &&
	    !sofv_rate_limit_ok(qp->qpx.qp_base.qp_type, a->rate_limit))
		return EINVAL;
	if ((mask & IBV_QP_PATH_MIG_STATE) && a->path_mig_state != IBV_MIG_MIGRATED)
		return EINVAL; /* no alternate path */
	if (mask & IBV_QP_ALT_PATH)
		return EINVAL;
	return 0;
}

/* Record the attributes. Caller holds qp->sq_lock. */
static void apply_attr(struct sofv_qp *qp, const struct ibv_qp_attr *a, int mask)
{
	struct ibv_qp_attr *q = &qp->attr;

	if (mask & IBV_QP_PKEY_INDEX)
		q->pkey_index = a->pkey_index;
	if (mask & IBV_QP_PORT)
		q->port_num = a->port_num;
	if (mask & IBV_QP_QKEY) {
		q->qkey = a->qkey;
		atomic_store(&qp->shm->qkey, a->qkey);
	}
	if (mask & IBV_QP_ACCESS_FLAGS) {
		q->qp_access_flags = a->qp_access_flags;
		atomic_store(&qp->shm->access, a->qp_access_flags);
	}
	if (mask & IBV_QP_AV) {
		qp->ah = a->ah_attr;
		if (!qp->ah.port_num)
			qp->ah.port_num = 1;
		q->ah_attr = qp->ah;
	}
	if (mask & IBV_QP_PATH_MTU)
		q->path_mtu = a->path_mtu;
	if (mask & IBV_QP_DEST_QPN) {
		q->dest_qp_num = a->dest_qp_num;
		atomic_store(&qp->shm->dest_qpn, a->dest_qp_num);
	}
	if (mask & IBV_QP_RQ_PSN)
		q->rq_psn = a->rq_psn & 0xffffff;
	if (mask & IBV_QP_SQ_PSN)
		q->sq_psn = a->sq_psn & 0xffffff;
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
		q->max_dest_rd_atomic = a->max_dest_rd_atomic;
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
		q->max_rd_atomic = a->max_rd_atomic;
	if (mask & IBV_QP_MIN_RNR_TIMER) {
		q->min_rnr_timer = a->min_rnr_timer;
		atomic_store(&qp->shm->min_rnr_timer, a->min_rnr_timer);
	}
	if (mask & IBV_QP_TIMEOUT)
		q->timeout = a->timeout;
	if (mask & IBV_QP_RETRY_CNT)
		q->retry_cnt = a->retry_cnt;
	if (mask & IBV_QP_RNR_RETRY)
		q->rnr_retry = a->rnr_retry;
	if (mask & IBV_QP_EN_SQD_ASYNC_NOTIFY)
		q->en_sqd_async_notify = a->en_sqd_async_notify;
	if (mask & IBV_QP_RATE_LIMIT)
		q->rate_limit = a->rate_limit; /* the transport paces (requester.c) */
}

/* Whether a UD QP's transport runs here: yes unless
 * SOFTOFED_ENGINE_UD=daemon (the RC/UC QPs still run here then), on both
 * devices. Each datagram then costs no wake-up of the daemon at either
 * end (through the daemon, a round trip wakes the two daemons four
 * times); a datagram the QP sends to a multicast group goes to the
 * network from here and to this host's members by the daemon (sof0:
 * MCAST_LOOP, tp_slot.c; sofib0: over the link, transport/ibpkt.c). */
static bool ud_engine_ok(void)
{
	const char *e = getenv("SOFTOFED_ENGINE_UD");

	return !e || strcmp(e, "daemon") != 0;
}

/* The daemon's view of the QP after a modify: the attributes as they will
 * be once attr (attr_mask) is applied. Caller holds qp->sq_lock. */
static void modify_req(const struct sofv_qp *qp, const struct ibv_qp_attr *attr, int attr_mask,
		       enum ibv_qp_state next, struct sof_modify_qp_req *req)
{
	struct ibv_qp_attr a = qp->attr;
	struct ibv_ah_attr ah = qp->ah;

	if (next == IBV_QPS_RESET) {
		memset(&a, 0, sizeof(a));
		memset(&ah, 0, sizeof(ah));
	}
	if (attr_mask & IBV_QP_QKEY)
		a.qkey = attr->qkey;
	if (attr_mask & IBV_QP_ACCESS_FLAGS)
		a.qp_access_flags = attr->qp_access_flags;
	if (attr_mask & IBV_QP_AV)
		ah = attr->ah_attr;
	if (attr_mask & IBV_QP_PATH_MTU)
		a.path_mtu = attr->path_mtu;
	if (attr_mask & IBV_QP_DEST_QPN)
		a.dest_qp_num = attr->dest_qp_num;
	if (attr_mask & IBV_QP_RQ_PSN)
		a.rq_psn = attr->rq_psn & 0xffffff;
	if (attr_mask & IBV_QP_SQ_PSN)
		a.sq_psn = attr->sq_psn & 0xffffff;
	if (attr_mask & IBV_QP_MAX_DEST_RD_ATOMIC)
		a.max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if (attr_mask & IBV_QP_MAX_QP_RD_ATOMIC)
		a.max_rd_atomic = attr->max_rd_atomic;
	if (attr_mask & IBV_QP_MIN_RNR_TIMER)
		a.min_rnr_timer = attr->min_rnr_timer;
	if (attr_mask & IBV_QP_TIMEOUT)
		a.timeout = attr->timeout;
	if (attr_mask & IBV_QP_RETRY_CNT)
		a.retry_cnt = attr->retry_cnt;
	if (attr_mask & IBV_QP_RNR_RETRY)
		a.rnr_retry = attr->rnr_retry;
	if (attr_mask & IBV_QP_PKEY_INDEX)
		a.pkey_index = attr->pkey_index;

	memset(req, 0, sizeof(*req));
	req->qpn = qp->qpn;
	req->state = next;
	req->dest_qpn = a.dest_qp_num;
	req->qkey = a.qkey;
	req->attr_mask = (uint32_t)attr_mask;
	req->access = a.qp_access_flags;
	memcpy(req->dgid, ah.grh.dgid.raw, 16);
	req->flow_label = ah.grh.flow_label;
	req->sgid_index = ah.grh.sgid_index;
	req->hop_limit = ah.grh.hop_limit;
	req->traffic_class = ah.grh.traffic_class;
	req->path_mtu = (uint8_t)a.path_mtu;
	req->sq_psn = a.sq_psn;
	req->rq_psn = a.rq_psn;
	req->timeout = a.timeout;
	req->retry_cnt = a.retry_cnt;
	req->rnr_retry = a.rnr_retry;
	req->min_rnr_timer = a.min_rnr_timer;
	req->max_rd_atomic = a.max_rd_atomic;
	req->max_dest_rd_atomic = a.max_dest_rd_atomic;
	req->pkey_index = a.pkey_index;
	req->rate_limit = (attr_mask & IBV_QP_RATE_LIMIT) ? attr->rate_limit : a.rate_limit;
	if (to_sctx(qp->qpx.qp_base.context)->ib) {
		req->link = 1; /* TP_LINK_IB: the daemon's InfiniBand port */
		req->dlid = ah.dlid;
		req->sl = ah.sl;
		req->path_bits = ah.src_path_bits;
		req->is_global = ah.is_global;
	}
}

/* IBA 10.3.1: RESET discards every WQE without completing it and returns
 * the attributes to their initial values. Caller holds qp->sq_lock. */
static void qp_reset(struct sofv_qp *qp)
{
	struct ibv_qp_cap cap = qp->cap;

	sofv_exec_qp_release(qp);
	qp->sq_head = qp->sq_tail;
	pthread_spin_lock(&qp->rq_lock);
	atomic_store(&qp->shm->rq.head, atomic_load(&qp->shm->rq.tail));
	pthread_spin_unlock(&qp->rq_lock);
	atomic_store(&qp->shm->dest_qpn, 0);
	atomic_store(&qp->shm->qkey, 0);
	atomic_store(&qp->shm->access, 0);
	atomic_store(&qp->shm->min_rnr_timer, 0);
	atomic_store(&qp->shm->peer_gone, 0);
	memset(&qp->attr, 0, sizeof(qp->attr));
	memset(&qp->ah, 0, sizeof(qp->ah));
	qp->attr.path_mtu = IBV_MTU_1024;
	qp->attr.path_mig_state = IBV_MIG_MIGRATED;
	qp->attr.port_num = 1;
	qp->attr.cap = cap;
	qp->flushed_sq = qp->flushed_rq = false;
}

SOFV_EXPORT int ibv_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask)
{
	struct sofv_context *s;
	struct sof_modify_qp_req req;
	struct sof_modify_qp_rep rep;
	enum ibv_qp_state cur, next;
	bool eng_kind;
	struct sofv_qp *qp;
	int err;

	if (!ibqp || !attr)
		return EINVAL;
	/* the kernel's uverbs ignores (removes from the mask) the attributes
	 * an XRC QP's half does not have: a responder's on an INI QP, a
	 * requester's on a TGT QP; programs (perftest -c XRC) set them */
	if (ibqp->qp_type == IBV_QPT_XRC_SEND)
		attr_mask &= ~(IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	else if (ibqp->qp_type == IBV_QPT_XRC_RECV)
		attr_mask &= ~(IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY);
	qp = to_sqp(ibqp);
	s = to_sctx(ibqp->context);
	pthread_spin_lock(&qp->sq_lock);
	cur = (enum ibv_qp_state)atomic_load(&qp->shm->state);
	if ((attr_mask & IBV_QP_CUR_STATE) && attr->cur_qp_state != cur &&
	    !(cur == IBV_QPS_SQE && attr->cur_qp_state == IBV_QPS_RTS)) {
		err = EINVAL;
		goto out;
	}
	next = (attr_mask & IBV_QP_STATE) ? attr->qp_state : cur;
	if (!sofv_qp_transition_ok(ibqp->qp_type, cur, next, attr_mask)) {
		err = EINVAL;
		goto out;
	}
	err = check_attr_values(qp, attr, attr_mask);
	if (err)
		goto out;

	/* The daemon learns every modify: peers look QPs up there. The
	 * transport of an RC/UC QP whose peer is on another host runs in
	 * this process when the daemon steers its packets here (tp_host.c),
	 * else in the daemon. */
	modify_req(qp, attr, attr_mask, next, &req);
	/* sofib0's too (the port's packet half runs in the process): their
	 * packets always leave by the port, whatever the peer; and UD QPs
	 * (both devices), whose unicast then comes here (what comes to a
	 * group they are attached to stays with the daemon, daemon/steer.c) */
	if (ibqp->qp_type == IBV_QPT_UD)
		eng_kind = ud_engine_ok();
	else
		eng_kind = (ibqp->qp_type == IBV_QPT_RC || ibqp->qp_type == IBV_QPT_UC) &&
			   (s->ib || !sofv_gid_is_local(s, req.dgid));
	req.engine = qp->eng || (eng_kind && next >= IBV_QPS_RTR && next <= IBV_QPS_SQE &&
				 sofv_engine_start(s));
	err = -sofv_rpc(s, SOF_OP_MODIFY_QP, &req, sizeof(req), NULL, 0, &rep, sizeof(rep), NULL,
			NULL);
	if (!err && rep.steered && !qp->eng)
		err = -sofv_engine_qp_new(qp);
	if (!err && rep.steered) {
		bool net = false;

		err = -sofv_engine_modify(qp, &req, &net);
		rep.net = net;
	} else if (!err && qp->eng) {
		sofv_engine_qp_release(qp); /* reset: the daemon's again */
	}
	if (err)
		goto out;
	qp->net = rep.net != 0;

	if (next == IBV_QPS_RESET) {
		qp_reset(qp);
		/* as providers do: nothing of it stays in its CQs */
		if (qp->scq)
			sofv_cq_clean(qp->scq, qp->qpn);
		if (qp->rcq != qp->scq)
			sofv_cq_clean(qp->rcq, qp->qpn);
	} else {
		apply_attr(qp, attr, attr_mask);
	}
	if (next == IBV_QPS_ERR) {
		sofv_qp_set_error(qp);
	} else {
		qp->attr.qp_state = next;
		qp->attr.cur_qp_state = next;
		ibqp->state = next;
		atomic_store_explicit(&qp->shm->state, next, memory_order_release);
	}
	/* RTS from SQD: deferred WQEs may go again */
	if (next == IBV_QPS_RTS && qp->sq_head != qp->sq_tail)
		sofv_exec_progress(qp);
out:
	pthread_spin_unlock(&qp->sq_lock);
	return err;
}

SOFV_EXPORT int ibv_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask,
			     struct ibv_qp_init_attr *init_attr)
{
	struct sofv_qp *qp;
	uint32_t state;

	(void)attr_mask; /* everything is returned, as the man page allows */
	if (!ibqp || !attr || !init_attr)
		return EINVAL;
	qp = to_sqp(ibqp);
	pthread_spin_lock(&qp->sq_lock);
	*attr = qp->attr;
	state = atomic_load_explicit(&qp->shm->state, memory_order_acquire);
	pthread_spin_unlock(&qp->sq_lock);
	attr->qp_state = (enum ibv_qp_state)state;
	attr->cur_qp_state = (enum ibv_qp_state)state;
	attr->cap = qp->cap;
	attr->sq_draining = 0;
	memset(init_attr, 0, sizeof(*init_attr));
	init_attr->qp_context = ibqp->qp_context;
	init_attr->send_cq = ibqp->send_cq;
	init_attr->recv_cq = ibqp->recv_cq;
	init_attr->srq = ibqp->srq;
	init_attr->cap = qp->cap;
	init_attr->qp_type = ibqp->qp_type;
	init_attr->sq_sig_all = (int)qp->sq_sig_all;
	return 0;
}

SOFV_EXPORT int ibv_destroy_qp(struct ibv_qp *ibqp)
{
	struct sofv_context *s;
	struct sof_destroy_qp_req req;
	struct sofv_qp *qp;
	int err;

	if (!ibqp)
		return EINVAL;
	qp = to_sqp(ibqp);
	s = to_sctx(ibqp->context);
	memset(&req, 0, sizeof(req));
	req.qpn = qp->qpn;
	if (qp->eng)
		req.linger = sofv_engine_linger(qp, &req.l);
	err = -sofv_rpc(s, SOF_OP_DESTROY_QP, &req, sizeof(req), NULL, 0, NULL, 0, NULL, NULL);
	if (err && err != ENOTCONN && err != EPIPE && err != ECONNRESET)
		return err;
	pthread_rwlock_wrlock(&s->obj_lock);
	sof_hmap_del(&s->qps, qp->qpn);
	pthread_rwlock_unlock(&s->obj_lock);
	sofv_engine_qp_release(qp);
	/* After these no poller or progress thread can reach the QP. */
	if (qp->scq)
		sofv_cq_detach_qp(qp->scq, qp);
	if (qp->rcq != qp->scq)
		sofv_cq_detach_qp(qp->rcq, qp);
	/* Its completions go with it, as mlx4 and mlx5 clean a destroyed QP's
	 * entries from its CQs: a program that frees what its wr_ids point at
	 * after ibv_destroy_qp and polls on (libfabric's endpoints do) must
	 * not find them. */
	if (qp->scq)
		sofv_cq_clean(qp->scq, qp->qpn);
	if (qp->rcq && qp->rcq != qp->scq)
		sofv_cq_clean(qp->rcq, qp->qpn);
	pthread_spin_lock(&qp->sq_lock);
	sofv_exec_qp_release(qp);
	pthread_spin_unlock(&qp->sq_lock);
	pthread_spin_destroy(&qp->sq_lock);
	pthread_spin_destroy(&qp->rq_lock);
	/* As with the kernel: wait until every async event handed out about
	 * the QP was acked (ibv_get_async_event(3)). */
	pthread_mutex_lock(&ibqp->mutex);
	while (ibqp->events_completed != qp->async_got)
		pthread_cond_wait(&ibqp->cond, &ibqp->mutex);
	pthread_mutex_unlock(&ibqp->mutex);
	pthread_mutex_destroy(&ibqp->mutex);
	pthread_cond_destroy(&ibqp->cond);
	qp_free(qp);
	return 0;
}

/* ---- multicast ------------------------------------------------------------------ */

/* The daemon keeps the groups and carries them as IP multicast
 * (transport/mcast.c). Errors as the kernel's uverbs and ib_attach_mcast:
 * EINVAL for a QP that is not UD or a GID that is not multicast (ff00::/8,
 * or an IPv4 group ::ffff:224.0.0.0/4), attaching twice succeeds, detaching
 * a group the QP is not attached to is EINVAL, ENOMEM beyond the device's
 * max_mcast_* limits. The LID is ignored, as on every RoCE port. While a
 * QP is attached, ibv_destroy_qp fails with EBUSY. */
static int mcast_op(struct ibv_qp *ibqp, const union ibv_gid *gid, uint16_t lid, uint32_t op)
{
	struct sof_mcast_req req;

	if (!ibqp || !gid || ibqp->qp_type != IBV_QPT_UD || !sof_gid_is_mcast(gid->raw))
		return EINVAL;
	memset(&req, 0, sizeof(req));
	req.qpn = to_sqp(ibqp)->qpn;
	req.lid = lid;
	memcpy(req.gid, gid->raw, 16);
	return -sofv_rpc(to_sctx(ibqp->context), op, &req, sizeof(req), NULL, 0, NULL, 0, NULL,
			 NULL);
}

SOFV_EXPORT int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return mcast_op(qp, gid, lid, SOF_OP_ATTACH_MCAST);
}

SOFV_EXPORT int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return mcast_op(qp, gid, lid, SOF_OP_DETACH_MCAST);
}
