/*
 * The connection manager's entry points for its host (cm_host.h): the
 * table of SOF_OP_CM_* requests (sof_cm_proto.h) with the size each must
 * have, start-up (the host's table, the id layer, then the protocol with
 * the callback it reports through), a channel's connection closing (its
 * process died or let go: every id of it is destroyed) or draining.
 */
#include "cma.h"

#include <errno.h>
#include <stdlib.h>

struct cma_op {
	int (*fn)(const struct cm_request *rq, struct cm_reply *rp);
	size_t len;
};

#define OP(op, f, t) [SOF_OP_CM_##op - SOF_OP_CM_CHANNEL] = {cma_op_##f, sizeof(t)}
static const struct cma_op cma_ops[SOF_OP_CM_REQUEUE - SOF_OP_CM_CHANNEL + 1] = {
    [0] = {cma_op_channel, 0},
    OP(CREATE_ID, create_id, struct sof_cm_create_req),
    OP(DESTROY_ID, destroy_id, struct sof_cm_id_req),
    OP(BIND_ADDR, bind, struct sof_cm_addr_req),
    OP(RESOLVE_ADDR, resolve_addr, struct sof_cm_addr_req),
    OP(RESOLVE_ROUTE, resolve_route, struct sof_cm_id_req),
    OP(QUERY, query, struct sof_cm_id_req),
    OP(LISTEN, listen, struct sof_cm_id_req),
    OP(CONNECT, connect, struct sof_cm_conn_req),
    OP(ACCEPT, accept, struct sof_cm_conn_req),
    OP(REJECT, reject, struct sof_cm_conn_req),
    OP(DISCONNECT, disconnect, struct sof_cm_id_req),
    OP(ESTABLISH, establish, struct sof_cm_id_req),
    OP(INIT_QP_ATTR, init_qp_attr, struct sof_cm_id_req),
    OP(MIGRATE_ID, migrate, struct sof_cm_id_req),
    OP(NOTIFY, notify, struct sof_cm_id_req),
    OP(SET_OPTION, set_option, struct sof_cm_option_req),
    OP(SET_ECE, set_ece, struct sof_cm_ece),
    OP(GET_ECE, get_ece, struct sof_cm_id_req),
    OP(JOIN_MCAST, join, struct sof_cm_mcast_req),
    OP(LEAVE_MCAST, leave, struct sof_cm_mcast_req),
    OP(REQUEUE, requeue, struct sof_cm_requeue_req),
};

/* Requests come copied and zero-padded to the largest (ops.c's buffer). */
int cm_op(const struct cm_request *rq, struct cm_reply *rp)
{
	const struct cma_op *o;

	if (rq->op < SOF_OP_CM_CHANNEL || rq->op > SOF_OP_CM_REQUEUE)
		return -EOPNOTSUPP;
	o = &cma_ops[rq->op - SOF_OP_CM_CHANNEL];
	if (rq->len < o->len || rq->nfds)
		return -EINVAL;
	/* only a channel's first request may be on it; the rest come on a
	 * command connection */
	if (rq->c->chan)
		return -EINVAL;
	rp->data = &cma_rbuf;
	rp->len = 0;
	return o->fn(rq, rp);
}

void cm_conn_closed(struct cm_conn *c)
{
	struct cm_channel *ch = c->chan;

	if (!ch)
		return;
	while (!sof_list_empty(&ch->ids))
		cma_id_destroy(sof_container_of(ch->ids.next, struct cm_id, link));
	cma_channel_drop_queue(ch);
	sof_hmap_del(&cma.channels, ch->handle);
	cm_counts.channels--;
	c->chan = NULL;
	free(ch);
}

void cm_conn_writable(struct cm_conn *c)
{
	if (c->chan)
		cma_channel_flush(c->chan);
}

int cm_init(const struct cm_host *host)
{
	cm_host = host;
	sof_list_init(&cma.lingering);
	cma.next_handle = sof_random32() & 0xffff;
	cma.mc_free = cma_mc_free;
	cma_ib_sa_mcmember_ops(&cma_mc_sa_ops);
	return ibcm_init(&cma_ibcm_ops);
}
