/*
 * The synchronous end-point API of rdma_verbs.h: rdma_create_ep,
 * rdma_destroy_ep, rdma_get_request. An end point is a synchronous id
 * (private channel). Active: address and route resolved (2 s each), a QP
 * when attributes are given. Passive: bound, and the QP attributes kept
 * for the ids rdma_get_request returns.
 */
#include "sofcm.h"

#include <stdlib.h>
#include <string.h>

static int passive_ep(struct rdma_cm_id *id, struct rdma_addrinfo *res, struct ibv_pd *pd,
		      struct ibv_qp_init_attr *qp_init_attr)
{
	struct sofcm_id *idp = sofcm_id(id);

	if (rdma_bind_addr(id, res->ai_src_addr))
		return -1;
	if (pd)
		id->pd = pd;
	if (qp_init_attr) {
		idp->qp_init_attr = malloc(sizeof(*qp_init_attr));
		if (!idp->qp_init_attr)
			return sofcm_err(ENOMEM);
		*idp->qp_init_attr = *qp_init_attr;
		idp->qp_init_attr->qp_type = res->ai_qp_type;
	}
	return 0;
}

SOFCM_EXPORT int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res,
				struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr)
{
	struct rdma_cm_id *cm_id;
	struct sofcm_id *idp;
	int ret, err;

	if (!id || !res)
		return sofcm_err(EINVAL);
	if (sofcm_create_id2(NULL, &cm_id, NULL, res->ai_port_space, res->ai_qp_type))
		return -1;
	idp = sofcm_id(cm_id);

	if (res->ai_flags & RAI_PASSIVE) {
		ret = passive_ep(cm_id, res, pd, qp_init_attr);
		if (ret)
			goto err;
		*id = cm_id;
		return 0;
	}

	ret = rdma_resolve_addr(cm_id, res->ai_src_addr, res->ai_dst_addr, 2000);
	if (ret)
		goto err;
	if (res->ai_route_len) {
		ret = rdma_set_option(cm_id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, res->ai_route,
				      res->ai_route_len);
		if (!ret)
			ret = sofcm_complete(idp);
	} else {
		ret = rdma_resolve_route(cm_id, 2000);
	}
	if (ret)
		goto err;
	if (qp_init_attr) {
		qp_init_attr->qp_type = res->ai_qp_type;
		ret = rdma_create_qp(cm_id, pd, qp_init_attr);
		if (ret)
			goto err;
	}
	if (res->ai_connect_len) {
		idp->connect = malloc(res->ai_connect_len);
		if (!idp->connect) {
			errno = ENOMEM;
			goto err;
		}
		memcpy(idp->connect, res->ai_connect, res->ai_connect_len);
		idp->connect_len = res->ai_connect_len;
	}
	*id = cm_id;
	return 0;

err:
	err = errno;
	rdma_destroy_ep(cm_id);
	return sofcm_err(err);
}

SOFCM_EXPORT void rdma_destroy_ep(struct rdma_cm_id *id)
{
	if (!id)
		return;
	if (id->qp)
		rdma_destroy_qp(id);
	if (id->srq)
		rdma_destroy_srq(id);
	rdma_destroy_id(id);
}

SOFCM_EXPORT int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)
{
	struct rdma_cm_event *event;
	struct sofcm_id *lidp;
	int ret;

	if (!listen || !id)
		return sofcm_err(EINVAL);
	lidp = sofcm_id(listen);
	if (!lidp->sync)
		return sofcm_err(EINVAL);
	if (listen->event) {
		rdma_ack_cm_event(listen->event);
		listen->event = NULL;
	}
	if (rdma_get_cm_event(listen->channel, &event))
		return -1;
	if (event->event == RDMA_CM_EVENT_REJECTED) {
		ret = sofcm_err(ECONNREFUSED);
		goto err;
	}
	if (event->status) {
		ret = sofcm_err(event->status < 0 ? -event->status : event->status);
		goto err;
	}
	if (event->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
		ret = sofcm_err(EINVAL);
		goto err;
	}
	if (lidp->qp_init_attr) {
		struct ibv_qp_init_attr attr = *lidp->qp_init_attr;

		ret = rdma_create_qp(event->id, listen->pd, &attr);
		if (ret)
			goto err;
	}
	*id = event->id;
	(*id)->event = event;
	return 0;

err:
	listen->event = event;
	return ret;
}
