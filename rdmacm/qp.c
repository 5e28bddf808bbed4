/*
 * QPs and SRQs on an rdma_cm_id, and the QP state changes the library
 * makes with the attributes the daemon computes (SOF_OP_CM_INIT_QP_ATTR),
 * as rdma-core's librdmacm does with the kernel's:
 *  - rdma_create_qp: CQs (each with its completion channel) when the
 *    attributes name none, then INIT; a UD QP goes on to RTR and RTS at
 *    once (sq_psn 0);
 *  - connection: RTR (after INIT again, which picks up access flags the
 *    negotiation decided) and RTS; the responder resources and initiator
 *    depth the application accepted override the daemon's;
 *  - rejection and disconnection: ERROR.
 */
#include "sof_proto.h"
#include "sofcm.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

int sofcm_init_qp_attr(struct sofcm_id *idp, struct ibv_qp_attr *attr, int *mask)
{
	struct sof_cm_qp_attr a;
	int ret;

	ret = sofcm_rpc_id(SOF_OP_CM_INIT_QP_ATTR, idp->handle, attr->qp_state, &a, sizeof(a));
	if (ret)
		return ret;
	memset(attr, 0, sizeof(*attr));
	attr->qp_state = a.qp_state;
	attr->qp_access_flags = (int)a.qp_access_flags;
	attr->qkey = a.qkey;
	attr->path_mtu = a.path_mtu;
	attr->dest_qp_num = a.dest_qp_num;
	attr->rq_psn = a.rq_psn;
	attr->sq_psn = a.sq_psn;
	attr->pkey_index = a.pkey_index;
	attr->port_num = a.port_num;
	attr->max_rd_atomic = a.max_rd_atomic;
	attr->max_dest_rd_atomic = a.max_dest_rd_atomic;
	attr->min_rnr_timer = a.min_rnr_timer;
	attr->timeout = a.timeout;
	attr->retry_cnt = a.retry_cnt;
	attr->rnr_retry = a.rnr_retry;
	/* RoCE: global; the InfiniBand port: by LID without GRH */
	attr->ah_attr.is_global = !a.no_grh;
	attr->ah_attr.dlid = a.dlid;
	attr->ah_attr.sl = a.sl;
	attr->ah_attr.port_num = a.port_num;
	memcpy(attr->ah_attr.grh.dgid.raw, a.dgid, 16);
	attr->ah_attr.grh.sgid_index = a.sgid_index;
	attr->ah_attr.grh.hop_limit = a.hop_limit;
	attr->ah_attr.grh.traffic_class = a.traffic_class;
	attr->ah_attr.grh.flow_label = a.flow_label;
	*mask = (int)a.mask;
	return 0;
}

SOFCM_EXPORT int rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *qp_attr,
				   int *qp_attr_mask)
{
	if (!id || !qp_attr || !qp_attr_mask)
		return sofcm_err(EINVAL);
	return sofcm_ret(sofcm_init_qp_attr(sofcm_id(id), qp_attr, qp_attr_mask));
}

/* The id's QP to the daemon's attributes for state. 0 or -errno. */
static int modify_to(struct sofcm_id *idp, enum ibv_qp_state state, int override, uint8_t value)
{
	struct ibv_qp_attr attr;
	int mask, ret;

	attr.qp_state = state;
	ret = sofcm_init_qp_attr(idp, &attr, &mask);
	if (ret)
		return ret;
	if (override == IBV_QP_MAX_DEST_RD_ATOMIC)
		attr.max_dest_rd_atomic = value;
	else if (override == IBV_QP_MAX_QP_RD_ATOMIC)
		attr.max_rd_atomic = value;
	return -ibv_modify_qp(idp->id.qp, &attr, mask);
}

int sofcm_qp_rtr(struct sofcm_id *idp, uint8_t resp_res)
{
	int ret;

	if (!idp->id.qp)
		return 0;
	ret = modify_to(idp, IBV_QPS_INIT, 0, 0);
	if (ret)
		return ret;
	return modify_to(idp, IBV_QPS_RTR,
			 resp_res != RDMA_MAX_RESP_RES ? IBV_QP_MAX_DEST_RD_ATOMIC : 0, resp_res);
}

int sofcm_qp_rts(struct sofcm_id *idp, uint8_t init_depth)
{
	if (!idp->id.qp)
		return 0;
	return modify_to(idp, IBV_QPS_RTS,
			 init_depth != RDMA_MAX_INIT_DEPTH ? IBV_QP_MAX_QP_RD_ATOMIC : 0,
			 init_depth);
}

int sofcm_qp_err(struct sofcm_id *idp)
{
	struct ibv_qp_attr attr;

	if (!idp->id.qp)
		return 0;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_ERR;
	return -ibv_modify_qp(idp->id.qp, &attr, IBV_QP_STATE);
}

static void destroy_cqs(struct rdma_cm_id *id)
{
	if (id->qp_type == IBV_QPT_XRC_RECV && id->srq)
		return;
	if (id->recv_cq) {
		ibv_destroy_cq(id->recv_cq);
		if (id->send_cq && id->send_cq != id->recv_cq)
			ibv_destroy_cq(id->send_cq);
		id->send_cq = NULL;
		id->recv_cq = NULL;
	} else if (id->send_cq) {
		ibv_destroy_cq(id->send_cq);
		id->send_cq = NULL;
	}
	if (id->recv_cq_channel) {
		ibv_destroy_comp_channel(id->recv_cq_channel);
		if (id->send_cq_channel && id->send_cq_channel != id->recv_cq_channel)
			ibv_destroy_comp_channel(id->send_cq_channel);
		id->send_cq_channel = NULL;
		id->recv_cq_channel = NULL;
	} else if (id->send_cq_channel) {
		ibv_destroy_comp_channel(id->send_cq_channel);
		id->send_cq_channel = NULL;
	}
}

/* CQs of the given sizes (0: none), each with its completion channel and
 * the id as its context. 0 or -errno (what was made is undone). */
static int create_cqs(struct rdma_cm_id *id, uint32_t send_size, uint32_t recv_size)
{
	if (recv_size) {
		id->recv_cq_channel = ibv_create_comp_channel(id->verbs);
		if (!id->recv_cq_channel)
			goto err;
		id->recv_cq = ibv_create_cq(id->verbs, (int)recv_size, id, id->recv_cq_channel, 0);
		if (!id->recv_cq)
			goto err;
	}
	if (send_size) {
		id->send_cq_channel = ibv_create_comp_channel(id->verbs);
		if (!id->send_cq_channel)
			goto err;
		id->send_cq = ibv_create_cq(id->verbs, (int)send_size, id, id->send_cq_channel, 0);
		if (!id->send_cq)
			goto err;
	}
	return 0;

err : {
	int err = errno ? errno : ENOMEM;

	destroy_cqs(id);
	return -err;
}
}

/* The device's XRC domain for ids of type XRC_RECV (opened once). */
static struct ibv_xrcd *device_xrcd(struct rdma_cm_id *id)
{
	static struct ibv_xrcd *xrcd; /* under sofcm_lock */
	struct ibv_xrcd_init_attr attr;
	struct ibv_xrcd *x;

	pthread_mutex_lock(&sofcm_lock);
	if (!xrcd) {
		memset(&attr, 0, sizeof(attr));
		attr.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
		attr.fd = -1;
		attr.oflags = O_CREAT;
		xrcd = ibv_open_xrcd(id->verbs, &attr);
	}
	x = xrcd;
	pthread_mutex_unlock(&sofcm_lock);
	return x;
}

/* INIT, and for UD also RTR and RTS, with the daemon's attributes. */
static int init_qp(struct sofcm_id *idp, struct ibv_qp *qp)
{
	struct ibv_qp_attr attr;
	int mask, ret;

	attr.qp_state = IBV_QPS_INIT;
	ret = sofcm_init_qp_attr(idp, &attr, &mask);
	if (ret)
		return ret;
	ret = ibv_modify_qp(qp, &attr, mask);
	if (ret)
		return -ret;
	if (idp->id.qp_type != IBV_QPT_UD)
		return 0;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTR;
	ret = ibv_modify_qp(qp, &attr, IBV_QP_STATE);
	if (ret)
		return -ret;
	attr.qp_state = IBV_QPS_RTS;
	attr.sq_psn = 0;
	return -ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

SOFCM_EXPORT int rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *attr)
{
	struct ibv_qp *qp;
	int ret;

	if (!id || !attr || id->qp || !id->verbs)
		return sofcm_err(EINVAL);
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd) {
		attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
		attr->pd = id->pd;
		if (!attr->pd)
			return sofcm_err(EINVAL);
	} else if (attr->pd->context != id->verbs) {
		return sofcm_err(EINVAL);
	}
	if ((id->recv_cq && attr->recv_cq && id->recv_cq != attr->recv_cq) ||
	    (id->send_cq && attr->send_cq && id->send_cq != attr->send_cq))
		return sofcm_err(EINVAL);
	if (id->qp_type == IBV_QPT_XRC_RECV &&
	    (!(attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) || !attr->xrcd)) {
		attr->xrcd = device_xrcd(id);
		if (!attr->xrcd)
			return -1;
		attr->comp_mask |= IBV_QP_INIT_ATTR_XRCD;
	}

	ret = create_cqs(id, attr->send_cq || id->send_cq ? 0 : attr->cap.max_send_wr,
			 attr->recv_cq || id->recv_cq ? 0 : attr->cap.max_recv_wr);
	if (ret)
		return sofcm_err(-ret);
	if (!attr->send_cq)
		attr->send_cq = id->send_cq;
	if (!attr->recv_cq)
		attr->recv_cq = id->recv_cq;
	if (id->srq && !attr->srq)
		attr->srq = id->srq;
	qp = ibv_create_qp_ex(id->verbs, attr);
	if (!qp) {
		ret = errno ? -errno : -ENOMEM;
		goto err_cqs;
	}
	ret = init_qp(sofcm_id(id), qp);
	if (ret)
		goto err_qp;
	id->pd = qp->pd;
	id->qp = qp;
	return 0;

err_qp:
	ibv_destroy_qp(qp);
err_cqs:
	destroy_cqs(id);
	return sofcm_err(-ret);
}

SOFCM_EXPORT int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
				struct ibv_qp_init_attr *qp_init_attr)
{
	struct ibv_qp_init_attr_ex ax;
	int ret;

	if (!id || !qp_init_attr)
		return sofcm_err(EINVAL);
	memset(&ax, 0, sizeof(ax));
	memcpy(&ax, qp_init_attr, sizeof(*qp_init_attr));
	ax.comp_mask = IBV_QP_INIT_ATTR_PD;
	ax.pd = pd ? pd : id->pd;
	ret = rdma_create_qp_ex(id, &ax);
	/* the caller sees the CQs made for it and the capabilities granted */
	memcpy(qp_init_attr, &ax, sizeof(*qp_init_attr));
	return ret;
}

SOFCM_EXPORT void rdma_destroy_qp(struct rdma_cm_id *id)
{
	if (!id)
		return;
	if (id->qp)
		ibv_destroy_qp(id->qp);
	id->qp = NULL;
	destroy_cqs(id);
}

SOFCM_EXPORT int rdma_create_srq_ex(struct rdma_cm_id *id, struct ibv_srq_init_attr_ex *attr)
{
	struct ibv_srq *srq;
	int ret;

	if (!id || !attr || !id->verbs || !(attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE))
		return sofcm_err(EINVAL);
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd) {
		attr->pd = id->pd;
		attr->comp_mask |= IBV_SRQ_INIT_ATTR_PD;
	}
	if (attr->srq_type == IBV_SRQT_XRC) {
		if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) || !attr->xrcd) {
			attr->xrcd = device_xrcd(id);
			if (!attr->xrcd)
				return -1;
		}
		if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ) || !attr->cq) {
			ret = create_cqs(id, 0, attr->attr.max_wr);
			if (ret)
				return sofcm_err(-ret);
			attr->cq = id->recv_cq;
		}
		attr->comp_mask |= IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
	}
	srq = ibv_create_srq_ex(id->verbs, attr);
	if (!srq) {
		ret = errno ? errno : ENOMEM;
		destroy_cqs(id);
		return sofcm_err(ret);
	}
	if (!id->pd)
		id->pd = attr->pd;
	id->srq = srq;
	return 0;
}

SOFCM_EXPORT int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd,
				 struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_init_attr_ex ax;
	int ret;

	if (!id || !attr)
		return sofcm_err(EINVAL);
	memset(&ax, 0, sizeof(ax));
	memcpy(&ax, attr, sizeof(*attr));
	ax.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD;
	ax.srq_type = id->qp_type == IBV_QPT_XRC_RECV ? IBV_SRQT_XRC : IBV_SRQT_BASIC;
	ax.pd = pd;
	ret = rdma_create_srq_ex(id, &ax);
	memcpy(attr, &ax, sizeof(*attr));
	return ret;
}

SOFCM_EXPORT void rdma_destroy_srq(struct rdma_cm_id *id)
{
	if (!id)
		return;
	if (id->srq)
		ibv_destroy_srq(id->srq);
	id->srq = NULL;
	destroy_cqs(id);
}
