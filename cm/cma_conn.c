/*
 * The connection requests of an id: connect (REQ, or SIDR_REQ for UD),
 * disconnect, establish (the RTU after a REP), the QP's first packet
 * (COMM_EST), the QP attributes of each transition (INIT, RTR, RTS) from
 * what the two sides agreed, and ECE. The protocol sends; this file
 * checks the request and moves the id's RDMA CM state.
 */
#include "cma.h"

#include <errno.h>
#include <string.h>

CMA_OP(connect)
{
	const struct sof_cm_conn_req *r = rq->data;
	struct cm_id *id = cma_get_id(rq, r->id);
	int err;

	(void)rp;
	if (!id)
		return -ENOENT;
	if (id->cstate != CMA_ROUTE_RESOLVED || !cma_param_ok(&r->param))
		return -EINVAL;
	if (id->qp_type == IBV_QPT_UD) {
		err = cm_send_sidr_req(id, &r->param);
	} else {
		if (!r->param.qp_num || r->param.qp_num > 0xffffff)
			return -EINVAL;
		err = cm_send_req(id, &r->param);
	}
	if (!err)
		cma_set_state(id, CMA_CONNECT);
	return err;
}

CMA_OP(disconnect)
{
	const struct sof_cm_id_req *r = rq->data;
	struct cm_id *id = cma_get_id(rq, r->id);

	(void)rp;
	if (!id)
		return -ENOENT;
	switch (id->state) {
	case CM_ESTABLISHED:
	case CM_REP_SENT:
		if (cm_send_dreq(id))
			return -EINVAL;
		cma_set_state(id, CMA_DISCONNECT);
		return 0;
	case CM_REP_RCVD:
	case CM_REQ_SENT:
	case CM_MRA_REQ_RCVD:
		/* not yet connected: the attempt ends (IBA 12.9.6: REJ) */
		return cm_send_rej(id, CMW_REJ_CONSUMER, NULL, 0);
	case CM_DREQ_SENT:
	case CM_DREQ_RCVD:
	case CM_TIMEWAIT:
		return 0; /* already disconnecting */
	default:
		return id->qp_type == IBV_QPT_UD ? 0 : -EINVAL;
	}
}

CMA_OP(establish)
{
	const struct sof_cm_id_req *r = rq->data;
	struct cm_id *id = cma_get_id(rq, r->id);

	(void)rp;
	if (!id)
		return -ENOENT;
	if (id->state != CM_REP_RCVD)
		return -EINVAL;
	if (cm_send_rtu(id))
		return -EINVAL;
	cma_set_state(id, CMA_ESTABLISHED);
	return 0;
}

CMA_OP(notify)
{
	const struct sof_cm_id_req *r = rq->data;
	struct cm_id *id = cma_get_id(rq, r->id);

	(void)rp;
	if (!id)
		return -ENOENT;
	/* the protocol may take it for the RTU (its ESTABLISHED comes up) */
	if (r->arg == IBV_EVENT_COMM_EST)
		ibcm_comm_est(id);
	return 0;
}

static uint8_t ack_timeout(const struct cm_id *id)
{
	if (id->ack_timeout)
		return id->ack_timeout;
	return id->local_ack_timeout ? id->local_ack_timeout : cm_path_ack_timeout(id);
}

CMA_OP(init_qp_attr)
{
	const struct sof_cm_id_req *r = rq->data;
	struct cm_id *id = cma_get_id(rq, r->id);
	struct sof_cm_qp_attr *a = &cma_rbuf.attr;
	bool ud = id && id->qp_type == IBV_QPT_UD;

	if (!id)
		return -ENOENT;
	if (!id->have_dev)
		return -EINVAL;
	memset(a, 0, sizeof(*a));
	a->qp_state = r->arg;
	switch (r->arg) {
	case IBV_QPS_INIT:
		a->mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		a->port_num = 1;
		a->pkey_index = id->pkey_index; /* the id's partition (IBA 10.9.2) */
		if (ud) {
			a->mask |= IBV_QP_QKEY;
			a->qkey = id->qkey;
		} else {
			a->mask |= IBV_QP_ACCESS_FLAGS;
			a->qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
			if (id->qp_type == IBV_QPT_RC)
				a->qp_access_flags |=
				    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
		}
		break;
	case IBV_QPS_RTR:
		a->mask = IBV_QP_STATE;
		if (ud)
			break;
		if (!id->remote_qpn)
			return -EINVAL;
		a->mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
		a->path_mtu = id->mtu;
		a->dest_qp_num = id->remote_qpn;
		a->rq_psn = id->remote_psn;
		a->sgid_index = (uint8_t)id->sgid_index;
		a->hop_limit = CMA_HOP_LIMIT;
		a->traffic_class = id->tos;
		memcpy(a->dgid, id->dgid, 16);
		a->port_num = 1;
		if (id->ib) {
			/* the InfiniBand port: a subnet-local path by LID */
			a->no_grh = 1;
			a->dlid = id->dlid;
			a->sl = id->sl;
		}
		if (id->qp_type == IBV_QPT_RC) {
			a->mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
			a->max_dest_rd_atomic = id->responder_resources;
			a->min_rnr_timer = CM_MIN_RNR_TIMER;
		}
		break;
	case IBV_QPS_RTS:
		a->mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
		a->sq_psn = ud ? 0 : id->local_psn;
		if (id->qp_type == IBV_QPT_RC) {
			if (!id->remote_qpn)
				return -EINVAL;
			a->mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				   IBV_QP_MAX_QP_RD_ATOMIC;
			a->timeout = ack_timeout(id);
			a->retry_cnt = id->retry_count;
			a->rnr_retry = id->rnr_retry;
			a->max_rd_atomic = id->initiator_depth;
		}
		break;
	default:
		return -EINVAL;
	}
	rp->len = sizeof(*a);
	return 0;
}

CMA_OP(set_ece)
{
	const struct sof_cm_ece *r = rq->data;
	struct cm_id *id = cma_get_id(rq, r->id);

	(void)rp;
	if (!id)
		return -ENOENT;
	id->ece_vendor = r->vendor_id & 0xffffff;
	id->ece_options = r->options;
	return 0;
}

CMA_OP(get_ece)
{
	const struct sof_cm_id_req *r = rq->data;
	struct cm_id *id = cma_get_id(rq, r->id);

	if (!id)
		return -ENOENT;
	memset(&cma_rbuf.ece, 0, sizeof(cma_rbuf.ece));
	cma_rbuf.ece.id = id->handle;
	cma_rbuf.ece.vendor_id = id->remote_ece_vendor;
	cma_rbuf.ece.options = id->remote_ece_options;
	rp->len = sizeof(cma_rbuf.ece);
	return 0;
}
