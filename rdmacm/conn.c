/*
 * Connection establishment and teardown: rdma_connect, rdma_accept,
 * rdma_reject, rdma_establish, rdma_disconnect, with rdma-core's
 * parameter rules:
 *  - RDMA_PS_TCP needs a QP or connection parameters; responder resources
 *    and initiator depth beyond the device's are EINVAL, and
 *    RDMA_MAX_RESP_RES / RDMA_MAX_INIT_DEPTH mean "the device's" (on
 *    accept: the request's, capped by the device's);
 *  - with no parameters the active side asks for 7 retries and 7 RNR
 *    retries;
 *  - the QP number and SRQ flag come from the id's QP when it has one.
 * The active side's QP is moved to RTR/RTS when the REP arrives
 * (event.c); the passive side's before the ACCEPT is sent.
 */
#include "sof_proto.h"
#include "sofcm.h"

#include <stdlib.h>
#include <string.h>

/* rdma-core's ucma_valid_param. */
static int valid_param(struct sofcm_id *idp, const struct rdma_conn_param *param)
{
	if (idp->id.ps != RDMA_PS_TCP)
		return 0;
	if (!idp->id.qp && !param)
		return -EINVAL;
	if (!param)
		return 0;
	if (!idp->dev)
		return -EINVAL;
	if (param->responder_resources != RDMA_MAX_RESP_RES &&
	    param->responder_resources > idp->dev->max_resp_res)
		return -EINVAL;
	if (param->initiator_depth != RDMA_MAX_INIT_DEPTH &&
	    param->initiator_depth > idp->dev->max_init_depth)
		return -EINVAL;
	return 0;
}

/* The wire parameters: the id's private data (rdma_create_ep's) first,
 * then the caller's. -EINVAL when they do not fit. */
static int fill_param(struct sofcm_id *idp, struct sof_cm_param *dst,
		      const struct rdma_conn_param *src, uint32_t qp_num, uint8_t srq)
{
	size_t len = idp->connect_len;

	dst->qp_num = qp_num;
	dst->srq = srq;
	dst->responder_resources = idp->responder_resources;
	dst->initiator_depth = idp->initiator_depth;
	if (src && src->private_data && src->private_data_len)
		len += src->private_data_len;
	if (len > SOF_CM_PDATA_MAX)
		return -EINVAL;
	if (idp->connect_len)
		memcpy(dst->private_data, idp->connect, idp->connect_len);
	if (src) {
		dst->flow_control = src->flow_control;
		/* 3-bit fields on the wire: the kernel's CMA takes
		 * min(7, value) (7: RNR retries without end), it does not
		 * cut the bits (fio asks for 10) */
		dst->retry_count = src->retry_count > 7 ? 7 : src->retry_count;
		dst->rnr_retry_count = src->rnr_retry_count > 7 ? 7 : src->rnr_retry_count;
		if (src->private_data && src->private_data_len)
			memcpy(dst->private_data + idp->connect_len, src->private_data,
			       src->private_data_len);
	} else {
		dst->retry_count = 7;
		dst->rnr_retry_count = 7;
	}
	dst->private_data_len = (uint8_t)len;
	return 0;
}

SOFCM_EXPORT int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	uint32_t qp_num = conn_param ? conn_param->qp_num : 0;
	uint8_t srq = conn_param ? conn_param->srq : 0;
	struct sof_cm_conn_req req;
	struct sofcm_id *idp;
	int ret;

	if (!id)
		return sofcm_err(EINVAL);
	idp = sofcm_id(id);
	ret = valid_param(idp, conn_param);
	if (ret)
		return sofcm_err(-ret);
	if (conn_param && conn_param->initiator_depth != RDMA_MAX_INIT_DEPTH)
		idp->initiator_depth = conn_param->initiator_depth;
	else
		idp->initiator_depth = idp->dev ? idp->dev->max_init_depth : 0;
	if (conn_param && conn_param->responder_resources != RDMA_MAX_RESP_RES)
		idp->responder_resources = conn_param->responder_resources;
	else
		idp->responder_resources = idp->dev ? idp->dev->max_resp_res : 0;
	if (id->qp) {
		qp_num = id->qp->qp_num;
		srq = id->qp->srq != NULL;
	}

	memset(&req, 0, sizeof(req));
	req.id = idp->handle;
	ret = fill_param(idp, &req.param, conn_param, qp_num, srq);
	if (ret)
		return sofcm_err(-ret);
	req.param.ece_vendor_id = idp->local_ece.vendor_id;
	req.param.ece_options = idp->local_ece.options;
	ret = sofcm_rpc(SOF_OP_CM_CONNECT, &req, sizeof(req), NULL, 0);
	if (ret)
		return sofcm_err(-ret);
	if (idp->connect_len) {
		free(idp->connect);
		idp->connect = NULL;
		idp->connect_len = 0;
	}
	return sofcm_complete(idp);
}

/* The Q_Key a UD id answers with (SIDR_REP): its QP's, else the RDMA
 * CM's well-known one. */
static uint32_t ud_qkey(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;

	if (id->qp && !ibv_query_qp(id->qp, &attr, IBV_QP_QKEY, &init))
		return attr.qkey;
	return RDMA_UDP_QKEY;
}

SOFCM_EXPORT int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	struct sof_cm_conn_req req;
	struct sofcm_id *idp;
	uint32_t qp_num;
	uint8_t srq;
	int ret;

	if (!id || (!id->qp && !conn_param))
		return sofcm_err(EINVAL);
	idp = sofcm_id(id);
	qp_num = id->qp ? id->qp->qp_num : conn_param->qp_num;
	srq = id->qp ? id->qp->srq != NULL : conn_param->srq;
	ret = valid_param(idp, conn_param);
	if (ret)
		return sofcm_err(-ret);
	if (!conn_param || conn_param->initiator_depth == RDMA_MAX_INIT_DEPTH) {
		if (idp->dev && idp->initiator_depth > idp->dev->max_init_depth)
			idp->initiator_depth = idp->dev->max_init_depth;
	} else {
		idp->initiator_depth = conn_param->initiator_depth;
	}
	if (!conn_param || conn_param->responder_resources == RDMA_MAX_RESP_RES) {
		if (idp->dev && idp->responder_resources > idp->dev->max_resp_res)
			idp->responder_resources = idp->dev->max_resp_res;
	} else {
		idp->responder_resources = conn_param->responder_resources;
	}

	if (id->qp_type != IBV_QPT_UD) {
		ret = sofcm_qp_rtr(idp, idp->responder_resources);
		if (!ret)
			ret = sofcm_qp_rts(idp, idp->initiator_depth);
		if (ret)
			return sofcm_err(-ret);
	}

	memset(&req, 0, sizeof(req));
	req.id = idp->handle;
	ret = fill_param(idp, &req.param, conn_param, qp_num, srq);
	if (ret)
		return sofcm_err(-ret);
	if (id->qp_type == IBV_QPT_UD)
		req.param.qkey = ud_qkey(id);
	/* as rdma-core: the REP answers with the peer's vendor and our
	 * options */
	req.param.ece_vendor_id = idp->remote_ece.vendor_id;
	req.param.ece_options = idp->local_ece.options;
	ret = 0;
	if (idp->remote_ece.vendor_id)
		ret = sofcm_set_ece(idp, idp->remote_ece.vendor_id, idp->local_ece.options);
	if (!ret)
		ret = sofcm_rpc(SOF_OP_CM_ACCEPT, &req, sizeof(req), NULL, 0);
	if (ret) {
		sofcm_qp_err(idp);
		return sofcm_err(-ret);
	}
	if (id->qp_type == IBV_QPT_UD)
		return 0;
	return sofcm_complete(idp);
}

/* reason: IBA 12.6.7.2, 0 for "consumer defined" (28). */
static int reject(struct rdma_cm_id *id, const void *private_data, uint8_t len, uint32_t reason)
{
	struct sof_cm_conn_req req;

	if (!id || len > SOF_CM_PDATA_MAX)
		return sofcm_err(EINVAL);
	memset(&req, 0, sizeof(req));
	req.id = sofcm_id(id)->handle;
	req.reason = reason;
	if (private_data && len) {
		memcpy(req.param.private_data, private_data, len);
		req.param.private_data_len = len;
	}
	return sofcm_ret(sofcm_rpc(SOF_OP_CM_REJECT, &req, sizeof(req), NULL, 0));
}

SOFCM_EXPORT int rdma_reject(struct rdma_cm_id *id, const void *private_data,
			     uint8_t private_data_len)
{
	return reject(id, private_data, private_data_len, 0);
}

SOFCM_EXPORT int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data,
				 uint8_t private_data_len)
{
	/* IBA 12.6.7.2: 35, vendor option not supported */
	return reject(id, private_data, private_data_len, 35);
}

SOFCM_EXPORT int rdma_establish(struct rdma_cm_id *id)
{
	if (!id || id->qp)
		return sofcm_err(EINVAL);
	/* no QP to move: only the RTU */
	return sofcm_ret(sofcm_rpc_id(SOF_OP_CM_ESTABLISH, sofcm_id(id)->handle, 0, NULL, 0));
}

SOFCM_EXPORT int rdma_disconnect(struct rdma_cm_id *id)
{
	int ret;

	/* as rdma-core: the QP stops first (IB transport: ERROR) */
	if (!id || !id->verbs)
		return sofcm_err(EINVAL);
	ret = sofcm_qp_err(sofcm_id(id));
	if (ret)
		return sofcm_err(-ret);
	ret = sofcm_rpc_id(SOF_OP_CM_DISCONNECT, sofcm_id(id)->handle, 0, NULL, 0);
	if (ret)
		return sofcm_err(-ret);
	return sofcm_complete(sofcm_id(id));
}
