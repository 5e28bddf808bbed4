/*
 * The RDMA CM id model: event channels and rdma_cm_ids, their handles
 * (checked against the requester's process and user on every request),
 * and their lifetime. An id the user destroys while its connection still
 * needs the protocol (DREQ, TIMEWAIT) leaves its channel and the handle
 * table and lingers until the protocol reports it is done.
 */
#include "cma.h"

#include <errno.h>
#include <stdlib.h>

struct cma_table cma;
union cma_reply cma_rbuf;

void cma_set_state(struct cm_id *id, enum cma_state s)
{
	if (id->cstate != s)
		cm_trace("cma id %u: %s -> %s", id->handle, cma_state_name(id->cstate),
			 cma_state_name(s));
	id->cstate = s;
}

struct cm_id *cma_get_id(const struct cm_request *rq, uint32_t handle)
{
	struct cm_id *id = sof_hmap_get(&cma.ids, handle);

	if (!id || !id->ch || !cm_host->ops->conn_same_owner(id->ch->c, rq->c))
		return NULL;
	return id;
}

struct cm_channel *cma_get_channel(const struct cm_request *rq, uint32_t handle)
{
	struct cm_channel *ch = sof_hmap_get(&cma.channels, handle);

	if (!ch || !cm_host->ops->conn_same_owner(ch->c, rq->c))
		return NULL;
	return ch;
}

static uint32_t new_handle(const struct sof_hmap *m)
{
	for (;;) {
		uint32_t h = ++cma.next_handle;

		if (h && !sof_hmap_get(m, h))
			return h;
	}
}

struct cm_id *cma_id_new(struct cm_channel *ch, uint8_t ps, uint32_t qp_type)
{
	struct cm_id *id = calloc(1, sizeof(*id));

	if (!id)
		return NULL;
	id->handle = new_handle(&cma.ids);
	if (sof_hmap_put(&cma.ids, id->handle, id)) {
		free(id);
		return NULL;
	}
	id->ch = ch;
	id->ps = ps;
	id->qp_type = qp_type;
	id->qkey = RDMA_UDP_QKEY;
	id->pkey = 0xffff;
	ibcm_id_init(id);
	sof_list_init(&id->mcs);
	sof_list_add(&ch->ids, &id->link);
	cm_counts.ids++;
	return id;
}

void cma_free(struct cm_id *id)
{
	ibcm_release(id);
	while (!sof_list_empty(&id->mcs)) {
		struct cm_mc *mc = sof_container_of(id->mcs.next, struct cm_mc, link);

		if (cma.mc_free) {
			cma.mc_free(mc);
		} else {
			sof_list_del(&mc->link);
			free(mc);
		}
	}
	sof_list_del(&id->link);
	if (id->ch) {
		sof_hmap_del(&cma.ids, id->handle);
		cm_counts.ids--;
	}
	free(id);
}

void cma_child_answered(struct cm_id *id)
{
	if (id->listener) {
		id->listener->pending--;
		id->listener = NULL;
	}
}

void cma_id_destroy(struct cm_id *id)
{
	if (id->cstate == CMA_LISTEN) {
		uint32_t pos = 0;
		uint64_t key;
		struct cm_id *o;

		cm_counts.listeners--;
		while ((o = sof_hmap_next(&cma.ids, &pos, &key)))
			if (o->listener == id)
				o->listener = NULL;
	}
	cma_child_answered(id);
	if (!ibcm_abandon(id)) {
		cma_free(id);
		return;
	}
	sof_hmap_del(&cma.ids, id->handle);
	cm_counts.ids--;
	id->ch = NULL;
	sof_list_del(&id->link);
	sof_list_add(&cma.lingering, &id->link);
}

CMA_OP(channel)
{
	struct cm_channel *ch;

	if (cm_host->ops->conn_is_context(rq->c) || rq->c->chan)
		return -EINVAL;
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return -ENOMEM;
	ch->handle = new_handle(&cma.channels);
	if (sof_hmap_put(&cma.channels, ch->handle, ch)) {
		free(ch);
		return -ENOMEM;
	}
	ch->c = rq->c;
	sof_list_init(&ch->ids);
	sof_list_init(&ch->queue);
	rq->c->chan = ch;
	cm_counts.channels++;
	cma_rbuf.channel.channel = ch->handle;
	rp->len = sizeof(cma_rbuf.channel);
	return 0;
}

CMA_OP(create_id)
{
	const struct sof_cm_create_req *r = rq->data;
	struct cm_channel *ch = cma_get_channel(rq, r->channel);
	struct cm_id *id;

	if (!ch)
		return -ENOENT;
	/* an unknown port space is EINVAL, as the kernel's ucma_create_id
	 * answers (its ucma_get_qp_type), which pyverbs' CM tests expect */
	if (r->ps != RDMA_PS_TCP && r->ps != RDMA_PS_UDP && r->ps != RDMA_PS_IB &&
	    r->ps != RDMA_PS_IPOIB)
		return -EINVAL;
	if (r->qp_type != IBV_QPT_RC && r->qp_type != IBV_QPT_UC && r->qp_type != IBV_QPT_UD)
		return -EINVAL;
	id = cma_id_new(ch, (uint8_t)r->ps, r->qp_type);
	if (!id)
		return -ENOMEM;
	cma_rbuf.id.id = id->handle;
	rp->len = sizeof(cma_rbuf.id);
	return 0;
}

CMA_OP(destroy_id)
{
	const struct sof_cm_id_req *r = rq->data;
	struct cm_id *id = cma_get_id(rq, r->id);

	(void)rp;
	if (!id)
		return -ENOENT;
	cma_id_destroy(id);
	return 0;
}

CMA_OP(migrate)
{
	const struct sof_cm_id_req *r = rq->data;
	struct cm_id *id = cma_get_id(rq, r->id);
	struct cm_channel *ch = cma_get_channel(rq, r->arg);

	(void)rp;
	if (!id || !ch)
		return -ENOENT;
	sof_list_del(&id->link);
	sof_list_add(&ch->ids, &id->link);
	id->ch = ch;
	return 0;
}

CMA_OP(requeue)
{
	const struct sof_cm_requeue_req *r = rq->data;
	struct cm_channel *ch = cma_get_channel(rq, r->channel);

	(void)rp;
	if (!ch)
		return -ENOENT;
	/* only the caller's own events go back: its id, and for a request
	 * its listener too */
	if (r->ev.event > RDMA_CM_EVENT_TIMEWAIT_EXIT || !cma_get_id(rq, r->ev.id) ||
	    (r->ev.event == RDMA_CM_EVENT_CONNECT_REQUEST && !cma_get_id(rq, r->ev.listen_id)))
		return -EINVAL;
	cma_channel_send(ch, &r->ev);
	return 0;
}
