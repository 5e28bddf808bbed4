/*
 * Memory windows (ibv_alloc_mw(3), ibv_bind_mw(3), IBA 10.6.7): the verbs,
 * and the bind and invalidate work requests the executor runs in
 * send-queue order (same_host.c).
 *
 * The daemon holds every window and checks every bind (daemon/ops_mw.c);
 * a refusal is the WQE's IBV_WC_MW_BIND_ERR. Executors of other processes
 * reach a window through OPEN_MR like a region. The engine in this
 * process (tp_host.c) reaches this process's windows here (sofv_mw_ptr):
 * a window's binding is the daemon's answer to the bind, good while the
 * window's object-table generation stays, which any invalidation changes.
 */
#include "sofv.h"

#include "remote_cache.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct ibv_mw *sofv_alloc_mw(struct ibv_pd *ibpd, enum ibv_mw_type type)
{
	struct sofv_context *s = to_sctx(ibpd->context);
	struct sof_alloc_mw_req req = {.pd = to_spd(ibpd)->handle, .type = type};
	struct sof_mw_rep rep;
	struct sof_mw_req dreq;
	struct sofv_mw *mw;
	int err;

	if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2) {
		errno = EINVAL;
		return NULL;
	}
	mw = calloc(1, sizeof(*mw));
	if (!mw) {
		errno = ENOMEM;
		return NULL;
	}
	err = -sofv_rpc(s, SOF_OP_ALLOC_MW, &req, sizeof(req), NULL, 0, &rep, sizeof(rep), NULL,
			NULL);
	if (err) {
		free(mw);
		errno = err;
		return NULL;
	}
	mw->handle = rep.handle;
	mw->key = rep.rkey;
	mw->slot = rep.slot;
	mw->gen = rep.gen;
	mw->ibmw.context = ibpd->context;
	mw->ibmw.pd = ibpd;
	mw->ibmw.rkey = rep.rkey;
	mw->ibmw.handle = rep.handle;
	mw->ibmw.type = type;
	pthread_rwlock_wrlock(&s->obj_lock);
	err = sof_hmap_put(&s->mws, rep.rkey >> 8, mw);
	pthread_rwlock_unlock(&s->obj_lock);
	if (err) {
		dreq.handle = rep.handle;
		dreq.rsvd = 0;
		(void)sofv_rpc(s, SOF_OP_DEALLOC_MW, &dreq, sizeof(dreq), NULL, 0, NULL, 0, NULL,
			       NULL);
		free(mw);
		errno = ENOMEM;
		return NULL;
	}
	return &mw->ibmw;
}

int sofv_dealloc_mw(struct ibv_mw *ibmw)
{
	struct sofv_context *s = to_sctx(ibmw->context);
	struct sofv_mw *mw = sof_container_of(ibmw, struct sofv_mw, ibmw);
	struct sof_mw_req req = {.handle = mw->handle};
	int err;

	err = -sofv_rpc(s, SOF_OP_DEALLOC_MW, &req, sizeof(req), NULL, 0, NULL, 0, NULL, NULL);
	if (err && err != ENOTCONN && err != EPIPE && err != ECONNRESET)
		return err;
	/* the engine looks windows up under obj_lock: none is in use now */
	pthread_rwlock_wrlock(&s->obj_lock);
	sof_hmap_del(&s->mws, mw->handle >> 8);
	pthread_rwlock_unlock(&s->obj_lock);
	free(mw);
	return 0;
}

/* ibv_bind_mw(3): a type 1 bind is a bind WQE on qp, as in rdma-core's
 * providers; the window's rkey is the next one at once. */
int sofv_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *bind)
{
	struct ibv_send_wr wr, *bad;
	uint32_t rkey = ibv_inc_rkey(mw->rkey);
	int err;

	if (!bind || mw->type != IBV_MW_TYPE_1 || mw->pd != qp->pd)
		return EINVAL;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = bind->wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = bind->send_flags;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info = bind->bind_info;
	err = ibv_post_send(qp, &wr, &bad);
	if (!err)
		mw->rkey = rkey;
	return err;
}

int sofv_mw_exec_bind(struct sofv_qp *qp, const struct sofv_swqe *w)
{
	struct sofv_context *s = to_sctx(qp->qpx.qp_base.context);
	struct sofv_mw *mw = w->mw;
	struct sof_bind_mw_req req = {
	    .handle = mw->handle,
	    .qpn = qp->qpn,
	    .rkey = w->rkey,
	    .lkey = w->bind_lkey,
	    .addr = w->bind_addr,
	    .length = w->bind_len,
	    .access = w->bind_access,
	};
	struct sof_mw_rep rep;
	struct sofv_mr *mr = NULL;
	int err;

	err = sofv_rpc(s, SOF_OP_BIND_MW, &req, sizeof(req), NULL, 0, &rep, sizeof(rep), NULL,
		       NULL);
	if (err)
		return err;
	pthread_rwlock_wrlock(&s->obj_lock);
	if (w->bind_len)
		mr = sof_hmap_get(&s->mrs, w->bind_lkey);
	mw->mr = mr;
	mw->key = rep.rkey;
	mw->slot = rep.slot;
	mw->gen = rep.gen;
	mw->off = mr ? w->bind_addr - mr->iova : 0;
	mw->va = (w->bind_access & IBV_ACCESS_ZERO_BASED) ? 0 : w->bind_addr;
	mw->length = w->bind_len;
	mw->access = w->bind_access & ~(uint32_t)(IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE);
	mw->qpn = mw->ibmw.type == IBV_MW_TYPE_2 ? qp->qpn : 0;
	/* a type 2 window's rkey is the consumer's to track (ibv_inc_rkey);
	 * ours follows the daemon's */
	mw->ibmw.rkey = rep.rkey;
	pthread_rwlock_unlock(&s->obj_lock);
	return 0;
}

int sofv_mw_inv(struct sofv_context *s, uint32_t qpn, uint32_t rkey, bool remote)
{
	struct sof_inval_mw_req req = {.qpn = qpn, .rkey = rkey, .remote = remote};

	return sofv_rpc(s, SOF_OP_INVAL_MW, &req, sizeof(req), NULL, 0, NULL, 0, NULL, NULL);
}

uint8_t *sofv_mw_ptr(struct sofv_context *ctx, const struct sofv_qp *qp, uint32_t key,
		     uint64_t va, uint64_t len, uint32_t need)
{
	const struct sofv_mw *mw = sof_hmap_get(&ctx->mws, key >> 8);

	/* an lkey is never a window's */
	if (!(need & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)))
		return NULL;
	if (!mw || !mw->mr || mw->key != key || !objtab_valid(ctx, mw->slot, mw->gen))
		return NULL;
	if (mw->ibmw.pd != qp->qpx.qp_base.pd || (mw->qpn && mw->qpn != qp->qpn))
		return NULL;
	if ((mw->access & need) != need)
		return NULL;
	if (va < mw->va || len > mw->length || va - mw->va > mw->length - len)
		return NULL;
	return (uint8_t *)mw->mr->ibmr.addr + mw->off + (va - mw->va);
}
