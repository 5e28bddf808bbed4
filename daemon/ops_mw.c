/*
 * Memory windows (IBA 10.6.7; ibv_alloc_mw(3), ibv_bind_mw(3)) and the one
 * place where a remote key is resolved, to a region or to a window over
 * one (sofd_key_resolve): OPEN_MR (same-host executors) and the daemon's
 * transport engine (tp_host.c) both check through it.
 *
 * A window's key is index << 8 | an 8-bit key part that the consumer picks
 * at each bind (ibv_inc_rkey: for a type 2 window in the bind WQE, for
 * type 1 ibv_bind_mw does it). Windows live in sofd.mws by index; no region key shares
 * a window's index (sofd_new_key). The library executes bind, local
 * invalidate and send-with-invalidate WQEs in send-queue order and asks
 * here (BIND_MW, INVAL_MW); a refusal becomes the WQE's error completion
 * (IBV_WC_MW_BIND_ERR, a local error: the QP goes to ERROR).
 */
#include "sofd.h"

#include <errno.h>
#include <infiniband/verbs.h>
#include <stdlib.h>

#define MW_ACCESS                                                                                  \
	(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |             \
	 IBV_ACCESS_ZERO_BASED)

static struct sof_mw_rep mw_rep;

/* A window's handle is its first key, whose index it keeps for life. */
static struct sofd_mw *own_mw(struct sofd_conn *c, uint32_t handle)
{
	struct sofd_mw *mw = sof_hmap_get(&sofd.mws, handle >> 8);

	return mw && mw->owner == c && mw->handle == handle ? mw : NULL;
}

static uint32_t new_mw_index(void)
{
	for (;;) {
		uint32_t idx = sof_random32() & 0xffffff;
		bool used = !idx || sof_hmap_get(&sofd.mws, idx);

		for (uint32_t k = 0; !used && k < 256; k++)
			used = sof_hmap_get(&sofd.mrs, idx << 8 | k) ||
			       sof_hmap_get(&sofd.mr_rsv, idx << 8 | k);
		if (!used)
			return idx;
	}
}

/* The binding goes: a new generation, so no executor keeps it. */
static void mw_invalidate(struct sofd_mw *mw)
{
	uint64_t gen;

	mw->mr = NULL;
	mw->qpn = 0;
	/* a fresh slot value: sofd_slot_free then alloc keeps the slot */
	sofd_slot_free(mw->slot);
	if (sofd_slot_alloc(&mw->slot, &gen) == 0)
		mw->gen = gen;
	else
		mw->slot = 0; /* no slot left: the window stays invalid */
}

static void fill_rep(struct sofd_rep *rp, const struct sofd_mw *mw)
{
	mw_rep.handle = mw->handle;
	mw_rep.rkey = mw->key;
	mw_rep.slot = mw->slot;
	mw_rep.rsvd = 0;
	mw_rep.gen = mw->gen;
	rp->data = &mw_rep;
	rp->len = sizeof(mw_rep);
}

int sofd_op_alloc_mw(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct sof_alloc_mw_req *req = rq->data;
	struct sofd_pd *pd = sof_hmap_get(&sofd.pds, req->pd);
	struct sofd_mw *mw;
	uint8_t k8;

	if (!pd || pd->owner != rq->c)
		return -ENOENT;
	if (req->type != IBV_MW_TYPE_1 && req->type != IBV_MW_TYPE_2)
		return -EINVAL;
	if (rq->c->n.mws >= SOFD_CONN_MAX_MR)
		return -ENOMEM;
	mw = calloc(1, sizeof(*mw));
	if (!mw)
		return -ENOMEM;
	if (sofd_slot_alloc(&mw->slot, &mw->gen)) {
		free(mw);
		return -ENOMEM;
	}
	k8 = (uint8_t)sof_random32();
	mw->key = new_mw_index() << 8 | k8;
	if (sof_hmap_put(&sofd.mws, mw->key >> 8, mw)) {
		sofd_slot_free(mw->slot);
		free(mw);
		return -ENOMEM;
	}
	mw->handle = mw->key; /* unique among live windows, like the index */
	mw->owner = rq->c;
	mw->pd = pd;
	mw->type = req->type;
	pd->users++;
	sof_list_add(&rq->c->mws, &mw->link);
	rq->c->n.mws++;
	sofd.n.mws++;
	fill_rep(rp, mw);
	return 0;
}

void sofd_mw_release(struct sofd_mw *mw)
{
	sof_hmap_del(&sofd.mws, mw->key >> 8);
	sof_list_del(&mw->link);
	sofd_slot_free(mw->slot);
	mw->pd->users--;
	mw->owner->n.mws--;
	sofd.n.mws--;
	free(mw);
}

/* ibv_dealloc_mw(3): a bound window may be freed; its binding goes. */
int sofd_op_dealloc_mw(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct sof_mw_req *req = rq->data;
	struct sofd_mw *mw = own_mw(rq->c, req->handle);

	(void)rp;
	if (!mw)
		return -ENOENT;
	sofd_mw_release(mw);
	return 0;
}

/* Execute a bind WQE of QP qpn: the checks of IBA 10.6.7.2 (o10-36..)
 * as rxe makes them. -EINVAL for any violation: the WQE completes with
 * IBV_WC_MW_BIND_ERR. */
int sofd_op_bind_mw(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct sof_bind_mw_req *req = rq->data;
	struct sofd_mw *mw = own_mw(rq->c, req->handle);
	struct sofd_qp *qp = sof_hmap_get(&sofd.qps, req->qpn);
	struct sofd_mr *mr;
	uint32_t key;

	if (!mw || !qp || qp->owner != rq->c)
		return -ENOENT;
	/* local write grants a window nothing (it gives remote access only)
	 * and is ignored, as rxe and mlx5 do: rdma-core's own tests bind
	 * windows with it */
	if (mw->pd != qp->pd || (req->access & ~(uint32_t)(MW_ACCESS | IBV_ACCESS_LOCAL_WRITE)))
		return -EINVAL;
	/* the new key keeps the window's index; its 8-bit part is the
	 * consumer's (ibv_inc_rkey; ibv_bind_mw makes it for type 1) */
	if ((req->rkey >> 8) != (mw->key >> 8))
		return -EINVAL;
	key = req->rkey;
	/* a type 2 window is bound only while invalid (IBA 10.6.7.2.2);
	 * type 1 windows are not zero-based (as rxe) */
	if (mw->type == IBV_MW_TYPE_2 && (mw->mr || !req->length))
		return -EINVAL;
	if (mw->type == IBV_MW_TYPE_1 && (req->access & IBV_ACCESS_ZERO_BASED))
		return -EINVAL;
	if (!req->length) { /* type 1: unbind */
		mw_invalidate(mw);
		mw->key = key;
		fill_rep(rp, mw);
		return 0;
	}
	mr = sofd_mr_get(req->lkey);
	if (!mr || mr->owner != rq->c || mr->pd != qp->pd)
		return -EINVAL;
	if (!(mr->access & IBV_ACCESS_MW_BIND))
		return -EINVAL;
	/* remote write or atomic through the window needs local write */
	if ((req->access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(mr->access & IBV_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	if (req->addr < mr->iova || req->length > mr->length ||
	    req->addr - mr->iova > mr->length - req->length)
		return -EINVAL;
	mw_invalidate(mw);
	if (!mw->slot)
		return -ENOMEM;
	mw->key = key;
	mw->mr = mr;
	mw->off = req->addr - mr->iova;
	mw->va = (req->access & IBV_ACCESS_ZERO_BASED) ? 0 : req->addr;
	mw->length = req->length;
	mw->access = req->access & ~(uint32_t)(IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE);
	mw->qpn = mw->type == IBV_MW_TYPE_2 ? qp->qpn : 0;
	fill_rep(rp, mw);
	return 0;
}

/* Execute a LOCAL_INV of QP qpn, or the invalidation a SEND_WITH_INV
 * carries to QP qpn (remote). IBA 10.6.7.2.4 / 9.4.1.1: a window of the
 * QP's PD; remotely only a type 2 window, bound to that QP. Local
 * invalidation of a region's key is for fast-registered regions, which
 * this device has not. */
int sofd_mw_invalidate(const struct sofd_qp *qp, uint32_t rkey, bool remote)
{
	struct sofd_mw *mw = sof_hmap_get(&sofd.mws, rkey >> 8);

	if (!mw || mw->key != rkey || !mw->mr || mw->pd != qp->pd)
		return -EINVAL;
	if (mw->type == IBV_MW_TYPE_1 || (remote && mw->qpn != qp->qpn))
		return -EINVAL;
	mw_invalidate(mw);
	return 0;
}

int sofd_op_inval_mw(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct sof_inval_mw_req *req = rq->data;
	struct sofd_qp *qp = sof_hmap_get(&sofd.qps, req->qpn);

	(void)rp;
	if (!qp)
		return -EINVAL;
	/* a remote invalidation comes from the QP's own engine (the owner)
	 * or from the same-host executor of the QP connected to it */
	if (qp->owner != rq->c) {
		struct sofd_qp *peer = sof_hmap_get(&sofd.qps, qp->dest_qpn);

		if (!req->remote || !peer || peer->owner != rq->c || peer->dest_qpn != qp->qpn)
			return -EINVAL;
	}
	return sofd_mw_invalidate(qp, req->rkey, req->remote != 0);
}

int sofd_key_resolve(uint32_t key, bool mr_only, struct sofd_key_view *v)
{
	struct sofd_mr *mr = sofd_mr_get(key);
	struct sofd_mw *mw;

	if (mr) {
		v->mr = mr;
		v->pd = mr->pd;
		v->iova = mr->iova;
		v->length = mr->length;
		v->off = 0;
		v->access = mr->access;
		v->qpn = 0;
		v->slot = mr->slot;
		v->gen = mr->gen;
		return 0;
	}
	mw = mr_only ? NULL : sof_hmap_get(&sofd.mws, key >> 8);
	if (!mw || mw->key != key || !mw->mr || !mw->slot)
		return -EACCES;
	v->mr = mw->mr;
	v->pd = mw->pd;
	v->iova = mw->va;
	v->length = mw->length;
	v->off = mw->off;
	/* the window's remote access; the region's local write says whether
	 * its memory may be mapped writable at all */
	v->access = mw->access | (mw->mr->access & IBV_ACCESS_LOCAL_WRITE);
	v->qpn = mw->qpn;
	v->slot = mw->slot;
	v->gen = mw->gen;
	return 0;
}

void sofd_mr_unbind_mws(struct sofd_mr *mr)
{
	for (struct sof_link *l = mr->owner->mws.next; l != &mr->owner->mws; l = l->next) {
		struct sofd_mw *mw = sof_container_of(l, struct sofd_mw, link);

		if (mw->mr == mr)
			mw_invalidate(mw);
	}
}

/* A type 2 window bound to a QP that goes can never be used again (only
 * that QP could reach it): invalid, so a later QP given the same number
 * does not inherit it. */
void sofd_qp_unbind_mws(struct sofd_qp *qp)
{
	for (struct sof_link *l = qp->owner->mws.next; l != &qp->owner->mws; l = l->next) {
		struct sofd_mw *mw = sof_container_of(l, struct sofd_mw, link);

		if (mw->mr && mw->qpn == qp->qpn)
			mw_invalidate(mw);
	}
}

bool sofd_mr_has_mws(const struct sofd_mr *mr)
{
	for (struct sof_link *l = mr->owner->mws.next; l != &mr->owner->mws; l = l->next)
		if (sof_container_of(l, struct sofd_mw, link)->mr == mr)
			return true;
	return false;
}
