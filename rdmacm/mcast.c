/*
 * Multicast on a UD id: rdma_join_multicast(_ex) asks the daemon to join
 * (SOF_OP_CM_JOIN_MCAST); the MULTICAST_JOIN event (event.c) carries the
 * group's address vector, and the id's QP is attached then.
 * rdma_leave_multicast detaches the QP, leaves, and waits until the
 * join's events handed out are acked, as rdma-core does.
 *
 * Each join has a library-made uid, echoed in its events; a join that was
 * left no longer matches, so its late events are dropped.
 */
#include "sof_proto.h"
#include "sofcm.h"

#include <stdlib.h>
#include <string.h>

static uint64_t next_uid = 1; /* under sofcm_lock */

static int join(struct rdma_cm_id *id, const struct sockaddr *addr, socklen_t addrlen,
		uint32_t join_flags, void *context)
{
	struct sofcm_id *idp = sofcm_id(id);
	struct sof_cm_mcast_req req;
	struct sofcm_mc *mc, **pos;
	int ret;

	mc = calloc(1, sizeof(*mc));
	if (!mc)
		return sofcm_err(ENOMEM);
	mc->idp = idp;
	mc->context = context;
	mc->join_flags = join_flags;
	memcpy(&mc->addr, addr, addrlen);
	mc->addrlen = addrlen;
	pthread_cond_init(&mc->cond, NULL);
	pthread_mutex_lock(&sofcm_lock);
	mc->uid = next_uid++;
	pthread_mutex_unlock(&sofcm_lock);

	pthread_mutex_lock(&idp->lock);
	mc->next = idp->mc_list;
	idp->mc_list = mc;
	pthread_mutex_unlock(&idp->lock);

	memset(&req, 0, sizeof(req));
	req.id = idp->handle;
	req.join_flags = join_flags;
	req.uid = mc->uid;
	memcpy(&req.addr, addr, addrlen);
	ret = sofcm_rpc(SOF_OP_CM_JOIN_MCAST, &req, sizeof(req), NULL, 0);
	if (ret) {
		pthread_mutex_lock(&idp->lock);
		for (pos = &idp->mc_list; *pos != mc; pos = &(*pos)->next)
			;
		*pos = mc->next;
		pthread_mutex_unlock(&idp->lock);
		pthread_cond_destroy(&mc->cond);
		free(mc);
		return sofcm_err(-ret);
	}
	return sofcm_complete(idp);
}

SOFCM_EXPORT int rdma_join_multicast_ex(struct rdma_cm_id *id,
					struct rdma_cm_join_mc_attr_ex *mc_join_attr, void *context)
{
	socklen_t len;

	if (!id || !mc_join_attr)
		return sofcm_err(EINVAL);
	if (mc_join_attr->comp_mask >= RDMA_CM_JOIN_MC_ATTR_RESERVED)
		return sofcm_err(ENOTSUP);
	if (!(mc_join_attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_ADDRESS))
		return sofcm_err(EINVAL);
	if (!(mc_join_attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS) ||
	    mc_join_attr->join_flags >= RDMA_MC_JOIN_FLAG_RESERVED)
		return sofcm_err(EINVAL);
	len = sofcm_addrlen(mc_join_attr->addr);
	if (!len)
		return sofcm_err(EINVAL);
	return join(id, mc_join_attr->addr, len, mc_join_attr->join_flags, context);
}

SOFCM_EXPORT int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr, void *context)
{
	socklen_t len = sofcm_addrlen(addr);

	if (!id || !len)
		return sofcm_err(EINVAL);
	return join(id, addr, len, RDMA_MC_JOIN_FLAG_FULLMEMBER, context);
}

SOFCM_EXPORT int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
	socklen_t len = sofcm_addrlen(addr);
	struct sof_cm_mcast_req req;
	struct sofcm_mc *mc, **pos;
	struct sofcm_id *idp;
	int ret;

	if (!id || !len)
		return sofcm_err(EINVAL);
	idp = sofcm_id(id);
	pthread_mutex_lock(&idp->lock);
	for (pos = &idp->mc_list; *pos; pos = &(*pos)->next)
		if ((*pos)->addrlen == len && !memcmp(&(*pos)->addr, addr, len))
			break;
	mc = *pos;
	if (mc)
		*pos = mc->next;
	pthread_mutex_unlock(&idp->lock);
	if (!mc)
		return sofcm_err(EADDRNOTAVAIL);

	if (id->qp && mc->attached)
		ibv_detach_mcast(id->qp, &mc->mgid, mc->mlid);
	memset(&req, 0, sizeof(req));
	req.id = idp->handle;
	req.join_flags = mc->join_flags;
	req.uid = mc->uid;
	memcpy(&req.addr, addr, len);
	ret = sofcm_rpc(SOF_OP_CM_LEAVE_MCAST, &req, sizeof(req), NULL, 0);
	/* its events handed out still point at it */
	pthread_mutex_lock(&idp->lock);
	while (mc->acked < mc->given)
		pthread_cond_wait(&mc->cond, &idp->lock);
	pthread_mutex_unlock(&idp->lock);
	pthread_cond_destroy(&mc->cond);
	free(mc);
	return sofcm_ret(ret);
}
