/*
 * Multicast joins of an id. On RoCE the group is the IP multicast
 * address (its GID) and there is no SA to join: the join is answered at
 * once with the group's address handle, and the device joins the IP
 * group when a QP attaches (ibv_attach_mcast, transport/mcast.c).
 */
#include "cma.h"

#include "sof_gid.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

CMA_OP(join)
{
	const struct sof_cm_mcast_req *r = rq->data;
	struct cm_id *id = cma_get_id(rq, r->id);
	struct sof_cm_event ev;
	struct cm_mc *mc;
	struct sof_link *l;
	uint8_t mgid[16];

	(void)rp;
	if (!id)
		return -ENOENT;
	if (!cma_family_ok(r->addr.ss_family))
		return -EAFNOSUPPORT;
	if (!id->have_dev)
		return -EINVAL;
	cma_addr_gid(&r->addr, mgid);
	if (!sof_gid_is_mcast(mgid))
		return -EINVAL;
	for (l = id->mcs.next; l != &id->mcs; l = l->next)
		if (!memcmp(sof_container_of(l, struct cm_mc, link)->mgid, mgid, 16))
			return -EADDRINUSE;
	mc = calloc(1, sizeof(*mc));
	if (!mc)
		return -ENOMEM;
	memcpy(mc->mgid, mgid, 16);
	mc->uid = r->uid;
	sof_list_add(&id->mcs, &mc->link);
	cma_event_init(&ev, id, RDMA_CM_EVENT_MULTICAST_JOIN, 0, NULL);
	ev.mc_uid = r->uid;
	cma_event_set_ah(&ev, id);
	memcpy(ev.ah_dgid, mgid, 16);
	ev.param.qp_num = 0xffffff;
	ev.param.qkey = id->qkey;
	cma_channel_send(id->ch, &ev);
	return 0;
}

CMA_OP(leave)
{
	const struct sof_cm_mcast_req *r = rq->data;
	struct cm_id *id = cma_get_id(rq, r->id);
	struct sof_link *l;
	uint8_t mgid[16];

	(void)rp;
	if (!id)
		return -ENOENT;
	cma_addr_gid(&r->addr, mgid);
	for (l = id->mcs.next; l != &id->mcs; l = l->next) {
		struct cm_mc *mc = sof_container_of(l, struct cm_mc, link);

		if (!memcmp(mc->mgid, mgid, 16)) {
			sof_list_del(&mc->link);
			free(mc);
			return 0;
		}
	}
	return -EADDRNOTAVAIL;
}
