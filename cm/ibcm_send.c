/*
 * What a user's request sends (IBA 12.6, 12.9.6): REQ, REP, RTU, REJ,
 * DREQ, SIDR_REQ and SIDR_REP, built from the id and kept for sending
 * again (a request until it is answered, a reply while the peer may
 * repeat itself); and how a connection ends when its user lets go of it.
 * The RDMA IP CM service (Annex A11) rides in the private data of REQ and
 * SIDR_REQ. The RDMA CM state of the id is the id layer's to change.
 */
#include "ibcm_int.h"

#include "sof_gid.h"

#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/ib.h>
#include <string.h>

/* The private data the user gave, after the A11 header when the service
 * is an IP one. */
static uint8_t pdata_offset(const struct cm_id *id)
{
	return id->src.ss_family == AF_IB ? 0 : CMW_IP_HDR_LEN;
}

static uint16_t port_of(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)ss)->sin_port);
	if (ss->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	return (uint16_t)be64toh(((const struct sockaddr_ib *)ss)->sib_sid);
}

/* An IP address as A11's header holds it (IPv4 mapped). */
static void ip_of(const struct sockaddr_storage *ss, uint8_t ip[16])
{
	if (ss->ss_family == AF_INET)
		sof_gid_from_v4(ip, &((const struct sockaddr_in *)ss)->sin_addr);
	else
		memcpy(ip, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
}

static void ip_hdr(const struct cm_id *id, uint8_t *p)
{
	struct cmw_ip_hdr h;

	memset(&h, 0, sizeof(h));
	h.src_port = port_of(&id->src);
	if (id->ib) {
		/* on the InfiniBand port the GIDs are not the IP addresses */
		ip_of(&id->src, h.src);
		ip_of(&id->dst, h.dst);
	} else {
		memcpy(h.src, id->sgid, 16);
		memcpy(h.dst, id->dgid, 16);
	}
	h.ip_version = sof_gid_is_v4(h.src) ? 4 : 6;
	cmw_ip_hdr_put(p, &h);
}

static uint16_t dst_port(const struct cm_id *id) { return port_of(&id->dst); }

/* The service ID a request names: the destination's own (cm_raw_sid),
 * else A11's. */
static uint64_t dst_sid(const struct cm_id *id)
{
	uint64_t raw = cm_raw_sid(&id->dst);

	return raw ? raw : cmw_ip_service_id(id->ps, dst_port(id));
}

static uint8_t cap_rd(uint8_t v) { return v; /* 8 bits: at most 255, the device takes 128 */ }

int cm_send_req(struct cm_id *id, const struct sof_cm_param *p)
{
	struct cmw_req req;
	uint8_t off = pdata_offset(id);

	if (p->private_data_len > CMW_REQ_PDATA - off)
		return -EINVAL;
	memset(&req, 0, sizeof(req));
	id->local_comm_id = ibcm_new_comm_id();
	if (sof_hmap_put(&ibcm.comm, id->local_comm_id, id))
		return -ENOMEM;
	id->local_qpn = p->qp_num;
	id->local_psn = sof_random32() & 0xffffff;
	id->responder_resources = cap_rd(p->responder_resources);
	id->initiator_depth = cap_rd(p->initiator_depth);
	id->retry_count = p->retry_count > 7 ? 7 : p->retry_count;
	id->flow_control = p->flow_control;
	id->srq = p->srq;
	id->local_ack_timeout = id->ack_timeout ? id->ack_timeout : cm_path_ack_timeout(id);
	req.local_comm_id = id->local_comm_id;
	req.vendor_id = id->ece_vendor;
	req.service_id = dst_sid(id);
	req.local_ca_guid = be64toh(cm_host->dev->node_guid);
	req.local_qpn = id->local_qpn;
	req.responder_resources = id->responder_resources;
	req.initiator_depth = id->initiator_depth;
	req.remote_cm_response_timeout = CM_RESPONSE_TIMEOUT;
	req.transport_type = id->qp_type == IBV_QPT_UC ? CMW_TS_UC : CMW_TS_RC;
	req.flow_control = p->flow_control;
	req.starting_psn = id->local_psn;
	req.local_cm_response_timeout = CM_RESPONSE_TIMEOUT;
	req.retry_count = id->retry_count;
	req.pkey = id->pkey; /* the connection's partition (12.6.5 table 106) */
	req.mtu = id->mtu;
	req.rnr_retry_count = p->rnr_retry_count > 7 ? 7 : p->rnr_retry_count;
	req.max_cm_retries = CM_MAX_RETRIES;
	req.srq = p->srq;
	memcpy(req.local_gid, id->sgid, 16);
	memcpy(req.remote_gid, id->dgid, 16);
	req.packet_rate = 0x3f & 7; /* 2.5 Gb/s: nominal */
	req.traffic_class = id->tos;
	if (id->ib) {
		/* 12.6.5: an IB path: the ports' LIDs and the SL; subnet local,
		 * so the hop limit is 0 and the QPs go without GRH */
		req.local_lid = id->slid;
		req.remote_lid = id->dlid;
		req.sl = id->sl;
		req.subnet_local = true;
		req.hop_limit = 0;
	} else {
		req.local_lid = req.remote_lid = 0xffff; /* RoCE: the permissive LID */
		req.hop_limit = 64;
	}
	req.local_ack_timeout = id->local_ack_timeout;
	if (off)
		ip_hdr(id, req.private_data);
	memcpy(req.private_data + off, p->private_data, p->private_data_len);
	ibcm_peer_init(id);
	ibcm_mad_hdr(id->msg, CMW_REQ, id->ece_options);
	cmw_req_put(id->msg + SOF_MAD_HDR_LEN, &req);
	ibcm_set_state(id, CM_REQ_SENT);
	return ibcm_send_request(id, ibcm_answer_ns(id, CM_RESPONSE_TIMEOUT), CM_MAX_RETRIES);
}

int cm_send_rep(struct cm_id *id, const struct sof_cm_param *p)
{
	struct cmw_rep rep;

	if (p->private_data_len > CMW_REP_PDATA || !p->qp_num || p->qp_num > 0xffffff)
		return -EINVAL;
	memset(&rep, 0, sizeof(rep));
	id->local_qpn = p->qp_num;
	/* the user may lower what the request asked for (rdma_accept) */
	if (p->responder_resources < id->responder_resources)
		id->responder_resources = p->responder_resources;
	if (p->initiator_depth < id->initiator_depth)
		id->initiator_depth = p->initiator_depth;
	rep.local_comm_id = id->local_comm_id;
	rep.remote_comm_id = id->remote_comm_id;
	rep.local_qpn = id->local_qpn;
	rep.vendor_id = id->ece_vendor;
	rep.starting_psn = id->local_psn;
	rep.responder_resources = id->responder_resources;
	rep.initiator_depth = id->initiator_depth;
	rep.target_ack_delay = 0;
	rep.flow_control = p->flow_control;
	rep.rnr_retry_count = p->rnr_retry_count > 7 ? 7 : p->rnr_retry_count;
	rep.srq = p->srq;
	rep.local_ca_guid = be64toh(cm_host->dev->node_guid);
	memcpy(rep.private_data, p->private_data, p->private_data_len);
	ibcm_mad_hdr(id->msg, CMW_REP, id->ece_options);
	cmw_rep_put(id->msg + SOF_MAD_HDR_LEN, &rep);
	ibcm_set_state(id, CM_REP_SENT);
	/* the REP itself is the answer a repeated REQ gets */
	id->reply_valid = false;
	return ibcm_send_request(id, id->timeout_ns, id->retries_left);
}

int cm_send_rtu(struct cm_id *id)
{
	struct cmw_rtu rtu;

	memset(&rtu, 0, sizeof(rtu));
	rtu.local_comm_id = id->local_comm_id;
	rtu.remote_comm_id = id->remote_comm_id;
	ibcm_mad_hdr(id->reply, CMW_RTU, 0);
	cmw_rtu_put(id->reply + SOF_MAD_HDR_LEN, &rtu);
	ibcm_set_state(id, CM_ESTABLISHED);
	ibcm_send_reply(id);
	return 0;
}

/* REJ to the peer of id, which leaves the attempt (12.6.7). */
int cm_send_rej(struct cm_id *id, uint16_t reason, const uint8_t *pdata, uint8_t len)
{
	struct cmw_rej rej;

	if (len > CMW_REJ_PDATA)
		return -EINVAL;
	memset(&rej, 0, sizeof(rej));
	rej.local_comm_id = id->local_comm_id;
	rej.remote_comm_id = id->remote_comm_id;
	rej.msg_rejected = id->state == CM_REQ_RCVD || id->state == CM_MRA_REQ_SENT ? CMW_MSG_REQ
			   : id->state == CM_REP_RCVD				    ? CMW_MSG_REP
										    : CMW_MSG_OTHER;
	rej.reason = reason;
	if (len)
		memcpy(rej.private_data, pdata, len);
	ibcm_mad_hdr(id->reply, CMW_REJ, 0);
	cmw_rej_put(id->reply + SOF_MAD_HDR_LEN, &rej);
	ibcm_timer_set(id, 0);
	id->msg_valid = false;
	ibcm_set_state(id, CM_IDLE);
	ibcm_send_reply(id);
	return 0;
}

int cm_send_dreq(struct cm_id *id)
{
	struct cmw_dreq dreq;

	memset(&dreq, 0, sizeof(dreq));
	dreq.local_comm_id = id->local_comm_id;
	dreq.remote_comm_id = id->remote_comm_id;
	dreq.remote_qpn = id->remote_qpn;
	ibcm_mad_hdr(id->msg, CMW_DREQ, 0);
	cmw_dreq_put(id->msg + SOF_MAD_HDR_LEN, &dreq);
	ibcm_set_state(id, CM_DREQ_SENT);
	return ibcm_send_request(id, ibcm_answer_ns(id, CM_RESPONSE_TIMEOUT), CM_MAX_RETRIES);
}

int cm_send_sidr_req(struct cm_id *id, const struct sof_cm_param *p)
{
	struct cmw_sidr_req req;
	uint8_t off = pdata_offset(id);

	if (p->private_data_len > CMW_SIDR_REQ_PDATA - off)
		return -EINVAL;
	memset(&req, 0, sizeof(req));
	do
		id->sidr_request_id = sof_random32();
	while (!id->sidr_request_id || sof_hmap_get(&ibcm.sidr, id->sidr_request_id));
	if (sof_hmap_put(&ibcm.sidr, id->sidr_request_id, id))
		return -ENOMEM;
	req.request_id = id->sidr_request_id;
	req.pkey = id->pkey;
	req.service_id = dst_sid(id);
	if (off)
		ip_hdr(id, req.private_data);
	memcpy(req.private_data + off, p->private_data, p->private_data_len);
	ibcm_peer_init(id);
	ibcm_mad_hdr(id->msg, CMW_SIDR_REQ, 0);
	cmw_sidr_req_put(id->msg + SOF_MAD_HDR_LEN, &req);
	ibcm_set_state(id, CM_SIDR_REQ_SENT);
	return ibcm_send_request(id, ibcm_answer_ns(id, CM_RESPONSE_TIMEOUT), CM_MAX_RETRIES);
}

int cm_send_sidr_rep(struct cm_id *id, uint8_t status, const struct sof_cm_param *p)
{
	struct cmw_sidr_rep rep;

	if (p->private_data_len > CMW_SIDR_REP_PDATA)
		return -EINVAL;
	if (status == CMW_SIDR_OK && (!p->qp_num || p->qp_num > 0xffffff))
		return -EINVAL;
	memset(&rep, 0, sizeof(rep));
	rep.request_id = id->sidr_request_id;
	rep.status = status;
	rep.qpn = status == CMW_SIDR_OK ? p->qp_num : 0;
	rep.qkey = status == CMW_SIDR_OK ? (p->qkey ? p->qkey : id->qkey) : 0;
	rep.service_id = cm_raw_sid(&id->src) ? cm_raw_sid(&id->src)
					      : cmw_ip_service_id(id->ps, port_of(&id->src));
	memcpy(rep.private_data, p->private_data, p->private_data_len);
	ibcm_mad_hdr(id->reply, CMW_SIDR_REP, 0);
	cmw_sidr_rep_put(id->reply + SOF_MAD_HDR_LEN, &rep);
	ibcm_set_state(id, CM_IDLE);
	ibcm_send_reply(id);
	return 0;
}

bool ibcm_abandon(struct cm_id *id)
{
	static const struct sof_cm_param none;

	switch (id->state) {
	case CM_REQ_SENT:
	case CM_MRA_REQ_RCVD:
		cm_send_rej(id, CMW_REJ_TIMEOUT, NULL, 0);
		return false;
	case CM_REQ_RCVD:
	case CM_MRA_REQ_SENT:
	case CM_REP_SENT:
	case CM_REP_RCVD:
		cm_send_rej(id, CMW_REJ_CONSUMER, NULL, 0);
		return false;
	case CM_ESTABLISHED:
		cm_send_dreq(id);
		return true;
	case CM_DREQ_SENT:
	case CM_DREQ_RCVD:
	case CM_TIMEWAIT:
		return true;
	case CM_SIDR_REQ_RCVD:
		cm_send_sidr_rep(id, CMW_SIDR_REJECT, &none);
		return false;
	default:
		return false;
	}
}

void ibcm_comm_est(struct cm_id *id)
{
	/* IBA 12.9.6: a packet on the QP in REP_SENT stands for the RTU */
	if (id->state != CM_REP_SENT)
		return;
	ibcm_timer_set(id, 0);
	id->msg_valid = false;
	ibcm_set_state(id, CM_ESTABLISHED);
	ibcm_report(id, RDMA_CM_EVENT_ESTABLISHED, 0, NULL);
}
