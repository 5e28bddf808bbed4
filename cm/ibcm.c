/*
 * The IB Communication Manager protocol (IBA vol. 1, chapter 12) as the
 * CM agent of QP1: connection establishment REQ -> REP -> RTU with MRA
 * for a slow side and REJ for a refusal (12.6, 12.9), release DREQ ->
 * DREP and TIMEWAIT (12.9.7), and Service ID Resolution for UD services
 * SIDR_REQ -> SIDR_REP (12.11). The RDMA IP CM service (Annex A11) rides
 * in the private data of REQ and SIDR_REQ.
 *
 * Every message that wants an answer (REQ, REP, DREQ, SIDR_REQ) is kept
 * and sent again when its timer runs out, up to the retry count; the
 * last answer we gave (MRA, REP, RTU, DREP, REJ) is kept and sent again
 * when the peer repeats a message (12.9.6: duplicates are recognised by
 * the communication IDs, not the transaction IDs). Received MADs are
 * validated against the connection's state and IDs before they change
 * anything; a message that fits no connection is dropped and counted, or
 * answered as IBA asks (a REQ for no listener: REJ "invalid service ID";
 * a DREQ for a connection long gone: DREP).
 */
#include "cm.h"

#include "sof_gid.h"

#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/ib.h>
#include <string.h>

const char *const cm_state_names[CM_NR] = {
    [CM_IDLE] = "IDLE",
    [CM_REQ_SENT] = "REQ_SENT",
    [CM_MRA_REQ_RCVD] = "MRA_REQ_RCVD",
    [CM_REQ_RCVD] = "REQ_RCVD",
    [CM_MRA_REQ_SENT] = "MRA_REQ_SENT",
    [CM_REP_SENT] = "REP_SENT",
    [CM_REP_RCVD] = "REP_RCVD",
    [CM_ESTABLISHED] = "ESTABLISHED",
    [CM_DREQ_SENT] = "DREQ_SENT",
    [CM_DREQ_RCVD] = "DREQ_RCVD",
    [CM_TIMEWAIT] = "TIMEWAIT",
    [CM_SIDR_REQ_SENT] = "SIDR_REQ_SENT",
    [CM_SIDR_REQ_RCVD] = "SIDR_REQ_RCVD",
};

/* 4.096 us * 2^t in ns (t <= 31) */
static uint64_t iba_time_ns(uint8_t t) { return 4096ull << (t > 31 ? 31 : t); }

/* How long an answer to one of our messages may take: the peer's time
 * plus a round trip of packet lifetimes (12.7.25, 12.7.26). */
static uint64_t answer_ns(uint8_t peer_timeout)
{
	return iba_time_ns(peer_timeout) + 2 * iba_time_ns(CM_PKT_LIFE);
}

static uint32_t new_comm_id(void)
{
	for (;;) {
		uint32_t c = sof_random32();

		if (c && !sof_hmap_get(&cm.comm, c))
			return c;
	}
}

static void set_state(struct cm_id *id, enum cm_state s)
{
	if (id->state == CM_TIMEWAIT)
		sofd.n.cm_timewait--;
	if (s == CM_TIMEWAIT)
		sofd.n.cm_timewait++;
	id->state = s;
}

static void peer_init(struct cm_id *id)
{
	memset(&id->peer, 0, sizeof(id->peer));
	memcpy(id->peer.sgid, id->sgid, 16);
	memcpy(id->peer.dgid, id->dgid, 16);
	id->peer.remote_qpn = SOF_GSI_QPN;
	id->peer.remote_qkey = SOF_GSI_QKEY;
	id->peer.pkey = 0xffff;
	id->peer.traffic_class = id->tos;
	id->peer.hop_limit = 64;
}

static void mad_hdr(uint8_t *mad, uint16_t attr, uint32_t attr_mod)
{
	struct sof_mad_hdr h = {
	    .base_version = SOF_MAD_BASE_VERSION,
	    .mgmt_class = SOF_MGMT_CLASS_CM,
	    .class_version = CMW_CLASS_VERSION,
	    .method = SOF_MAD_METHOD_SEND,
	    .tid = sofd_mad_new_tid(cm.agent),
	    .attr_id = attr,
	    .attr_mod = attr_mod,
	};

	memset(mad, 0, SOF_MAD_LEN);
	sof_mad_hdr_put(mad, &h);
}

/* Send id->msg (built by the caller) and keep it for retransmission. */
static int send_request(struct cm_id *id, uint64_t timeout_ns, uint32_t retries)
{
	id->msg_valid = true;
	id->timeout_ns = timeout_ns;
	id->retries_left = retries;
	cm_timer_set(id, timeout_ns);
	/* a MAD lost on the wire is what the timer is for */
	(void)sofd_mad_send(&id->peer, id->msg);
	return 0;
}

/* Send id->reply (built by the caller); it is sent again on duplicates. */
static void send_reply(struct cm_id *id)
{
	id->reply_valid = true;
	(void)sofd_mad_send(&id->peer, id->reply);
}

static void enter_timewait(struct cm_id *id)
{
	id->msg_valid = false;
	set_state(id, CM_TIMEWAIT);
	id->cstate = CMA_DISCONNECT;
	cm_timer_set(id, CM_TIMEWAIT_NS);
}

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

static void ip_hdr(const struct cm_id *id, uint8_t *p)
{
	struct cmw_ip_hdr h;

	memset(&h, 0, sizeof(h));
	h.ip_version = sof_gid_is_v4(id->sgid) ? 4 : 6;
	h.src_port = port_of(&id->src);
	memcpy(h.src, id->sgid, 16);
	memcpy(h.dst, id->dgid, 16);
	cmw_ip_hdr_put(p, &h);
}

static uint16_t dst_port(const struct cm_id *id) { return port_of(&id->dst); }

static uint8_t cap_rd(uint8_t v) { return v; /* 8 bits: at most 255, the device takes 128 */ }

/* ---- sending ----------------------------------------------------------------------- */

int cm_send_req(struct cm_id *id, const struct sof_cm_param *p)
{
	struct cmw_req req;
	uint8_t off = pdata_offset(id);

	if (p->private_data_len > CMW_REQ_PDATA - off)
		return -EINVAL;
	memset(&req, 0, sizeof(req));
	id->local_comm_id = new_comm_id();
	if (sof_hmap_put(&cm.comm, id->local_comm_id, id))
		return -ENOMEM;
	id->local_qpn = p->qp_num;
	id->local_psn = sof_random32() & 0xffffff;
	id->responder_resources = cap_rd(p->responder_resources);
	id->initiator_depth = cap_rd(p->initiator_depth);
	id->retry_count = p->retry_count > 7 ? 7 : p->retry_count;
	id->flow_control = p->flow_control;
	id->srq = p->srq;
	id->local_ack_timeout = id->ack_timeout ? id->ack_timeout : CM_ACK_TIMEOUT;
	req.local_comm_id = id->local_comm_id;
	req.vendor_id = id->ece_vendor;
	req.service_id = cmw_ip_service_id(id->ps, dst_port(id));
	req.local_ca_guid = be64toh(sofd.dev.node_guid);
	req.local_qpn = id->local_qpn;
	req.responder_resources = id->responder_resources;
	req.initiator_depth = id->initiator_depth;
	req.remote_cm_response_timeout = CM_RESPONSE_TIMEOUT;
	req.transport_type = id->qp_type == IBV_QPT_UC ? CMW_TS_UC : CMW_TS_RC;
	req.flow_control = p->flow_control;
	req.starting_psn = id->local_psn;
	req.local_cm_response_timeout = CM_RESPONSE_TIMEOUT;
	req.retry_count = id->retry_count;
	req.pkey = 0xffff;
	req.mtu = id->mtu;
	req.rnr_retry_count = p->rnr_retry_count > 7 ? 7 : p->rnr_retry_count;
	req.max_cm_retries = CM_MAX_RETRIES;
	req.srq = p->srq;
	req.local_lid = req.remote_lid = 0xffff; /* RoCE: the permissive LID */
	memcpy(req.local_gid, id->sgid, 16);
	memcpy(req.remote_gid, id->dgid, 16);
	req.packet_rate = 0x3f & 7; /* 2.5 Gb/s: nominal */
	req.traffic_class = id->tos;
	req.hop_limit = 64;
	req.local_ack_timeout = id->local_ack_timeout;
	if (off)
		ip_hdr(id, req.private_data);
	memcpy(req.private_data + off, p->private_data, p->private_data_len);
	peer_init(id);
	mad_hdr(id->msg, CMW_REQ, id->ece_options);
	cmw_req_put(id->msg + SOF_MAD_HDR_LEN, &req);
	set_state(id, CM_REQ_SENT);
	id->cstate = CMA_CONNECT;
	return send_request(id, answer_ns(CM_RESPONSE_TIMEOUT), CM_MAX_RETRIES);
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
	rep.local_ca_guid = be64toh(sofd.dev.node_guid);
	memcpy(rep.private_data, p->private_data, p->private_data_len);
	mad_hdr(id->msg, CMW_REP, id->ece_options);
	cmw_rep_put(id->msg + SOF_MAD_HDR_LEN, &rep);
	set_state(id, CM_REP_SENT);
	/* the REP itself is the answer a repeated REQ gets */
	id->reply_valid = false;
	return send_request(id, id->timeout_ns, id->retries_left);
}

int cm_send_rtu(struct cm_id *id)
{
	struct cmw_rtu rtu;

	memset(&rtu, 0, sizeof(rtu));
	rtu.local_comm_id = id->local_comm_id;
	rtu.remote_comm_id = id->remote_comm_id;
	mad_hdr(id->reply, CMW_RTU, 0);
	cmw_rtu_put(id->reply + SOF_MAD_HDR_LEN, &rtu);
	set_state(id, CM_ESTABLISHED);
	id->cstate = CMA_ESTABLISHED;
	send_reply(id);
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
			   : id->state == CM_REP_RCVD				 ? CMW_MSG_REP
										 : CMW_MSG_OTHER;
	rej.reason = reason;
	if (len)
		memcpy(rej.private_data, pdata, len);
	mad_hdr(id->reply, CMW_REJ, 0);
	cmw_rej_put(id->reply + SOF_MAD_HDR_LEN, &rej);
	cm_timer_set(id, 0);
	id->msg_valid = false;
	set_state(id, CM_IDLE);
	send_reply(id);
	return 0;
}

int cm_send_dreq(struct cm_id *id)
{
	struct cmw_dreq dreq;

	memset(&dreq, 0, sizeof(dreq));
	dreq.local_comm_id = id->local_comm_id;
	dreq.remote_comm_id = id->remote_comm_id;
	dreq.remote_qpn = id->remote_qpn;
	mad_hdr(id->msg, CMW_DREQ, 0);
	cmw_dreq_put(id->msg + SOF_MAD_HDR_LEN, &dreq);
	set_state(id, CM_DREQ_SENT);
	id->cstate = CMA_DISCONNECT;
	return send_request(id, answer_ns(CM_RESPONSE_TIMEOUT), CM_MAX_RETRIES);
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
	while (!id->sidr_request_id || sof_hmap_get(&cm.sidr, id->sidr_request_id));
	if (sof_hmap_put(&cm.sidr, id->sidr_request_id, id))
		return -ENOMEM;
	req.request_id = id->sidr_request_id;
	req.pkey = 0xffff;
	req.service_id = cmw_ip_service_id(id->ps, dst_port(id));
	if (off)
		ip_hdr(id, req.private_data);
	memcpy(req.private_data + off, p->private_data, p->private_data_len);
	peer_init(id);
	mad_hdr(id->msg, CMW_SIDR_REQ, 0);
	cmw_sidr_req_put(id->msg + SOF_MAD_HDR_LEN, &req);
	set_state(id, CM_SIDR_REQ_SENT);
	id->cstate = CMA_CONNECT;
	return send_request(id, answer_ns(CM_RESPONSE_TIMEOUT), CM_MAX_RETRIES);
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
	rep.service_id = cmw_ip_service_id(id->ps, port_of(&id->src)); /* the one asked for */
	memcpy(rep.private_data, p->private_data, p->private_data_len);
	mad_hdr(id->reply, CMW_SIDR_REP, 0);
	cmw_sidr_rep_put(id->reply + SOF_MAD_HDR_LEN, &rep);
	set_state(id, CM_IDLE);
	id->cstate = status == CMW_SIDR_OK ? CMA_ESTABLISHED : CMA_IDLE;
	send_reply(id);
	return 0;
}

bool cm_abandon(struct cm_id *id)
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

void cm_timeout(struct cm_id *id)
{
	switch (id->state) {
	case CM_REQ_SENT:
	case CM_MRA_REQ_RCVD:
	case CM_REP_SENT:
	case CM_DREQ_SENT:
	case CM_SIDR_REQ_SENT:
		if (id->msg_valid && id->retries_left) {
			id->retries_left--;
			sofd.counters[SOF_CNT_retransmits]++;
			cm_timer_set(id, id->timeout_ns);
			(void)sofd_mad_send(&id->peer, id->msg);
			return;
		}
		break;
	case CM_TIMEWAIT:
		/* 12.9.7: the IDs may be used again */
		set_state(id, CM_IDLE);
		if (sof_hmap_get(&cm.comm, id->local_comm_id) == id)
			sof_hmap_del(&cm.comm, id->local_comm_id);
		id->local_comm_id = 0;
		if (!id->ch)
			cm_free(id);
		return;
	default:
		return;
	}
	/* out of retries */
	id->msg_valid = false;
	switch (id->state) {
	case CM_DREQ_SENT:
		cm_event(id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL);
		enter_timewait(id);
		return;
	case CM_SIDR_REQ_SENT:
		set_state(id, CM_IDLE);
		id->cstate = CMA_ROUTE_RESOLVED;
		cm_event(id, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, NULL);
		break;
	default:
		/* REQ or REP unanswered: 12.9.6 says REJ "timeout" */
		cm_send_rej(id, CMW_REJ_TIMEOUT, NULL, 0);
		id->cstate = CMA_ROUTE_RESOLVED;
		cm_event(id, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, NULL);
		break;
	}
	if (!id->ch)
		cm_free(id);
}

/* ---- receiving ------------------------------------------------------------------------- */

static void pdata_to_param(struct sof_cm_param *p, const uint8_t *data, uint32_t len)
{
	if (len > SOF_CM_PDATA_MAX)
		len = SOF_CM_PDATA_MAX;
	memcpy(p->private_data, data, len);
	p->private_data_len = (uint8_t)len;
}

/* A REJ for a message that fits no connection of ours (12.6.7). */
static void rej_stateless(const struct sofd_mad_addr *from, uint32_t remote_comm_id,
			  uint8_t msg, uint16_t reason)
{
	struct sofd_mad_addr to;
	struct cmw_rej rej;
	uint8_t mad[SOF_MAD_LEN];

	memset(&rej, 0, sizeof(rej));
	rej.remote_comm_id = remote_comm_id;
	rej.msg_rejected = msg;
	rej.reason = reason;
	mad_hdr(mad, CMW_REJ, 0);
	cmw_rej_put(mad + SOF_MAD_HDR_LEN, &rej);
	to = *from;
	to.remote_qpn = SOF_GSI_QPN;
	to.remote_qkey = SOF_GSI_QKEY;
	(void)sofd_mad_send(&to, mad);
}

/* The id with local comm ID local whose peer is remote (0: not yet
 * known, so any), or NULL. */
static struct cm_id *by_comm(uint32_t local, uint32_t remote)
{
	struct cm_id *id = local ? sof_hmap_get(&cm.comm, local) : NULL;

	if (id && remote && id->remote_comm_id && id->remote_comm_id != remote)
		return NULL;
	return id;
}

/* A REQ already received: the same remote comm ID from the same CA. */
static struct cm_id *dup_req(const struct cmw_req *req)
{
	uint32_t pos = 0;
	uint64_t key;
	struct cm_id *id;

	while ((id = sof_hmap_next(&cm.comm, &pos, &key)))
		if (id->remote_comm_id == req->local_comm_id &&
		    id->remote_ca_guid == req->local_ca_guid && id->state != CM_IDLE)
			return id;
	return NULL;
}

static void send_mra(struct cm_id *id)
{
	struct cmw_mra mra;

	memset(&mra, 0, sizeof(mra));
	mra.local_comm_id = id->local_comm_id;
	mra.remote_comm_id = id->remote_comm_id;
	mra.msg_mraed = CMW_MSG_REQ;
	mra.service_timeout = CM_MRA_TIMEOUT;
	mad_hdr(id->reply, CMW_MRA, 0);
	cmw_mra_put(id->reply + SOF_MAD_HDR_LEN, &mra);
	set_state(id, CM_MRA_REQ_SENT);
	send_reply(id);
}

/* The listener a request is for, from its service ID and A11 header. */
static struct cm_id *req_listener(uint64_t sid, const uint8_t *pdata, const uint8_t *our_gid,
				  struct cmw_ip_hdr *ip, bool *has_ip)
{
	uint8_t ps = (uint8_t)(sid >> 16);
	uint16_t port = (uint16_t)sid;
	struct cm_id *l;

	if (!cmw_is_ip_service(sid))
		return NULL;
	*has_ip = cmw_ip_hdr_get(pdata, ip);
	l = cm_find_listener(ps, port, *has_ip ? ip->dst : our_gid);
	if (l && l->src.ss_family != AF_IB && !*has_ip)
		return NULL; /* an IP listener needs the A11 header */
	if (l && l->src.ss_family == AF_IB)
		*has_ip = false;
	return l;
}

/* The new id's view of the connection: addresses and path. */
static void child_addrs(struct cm_id *child, const struct cm_id *l, const struct sofd_mad_addr *from,
			const struct cmw_ip_hdr *ip, bool has_ip)
{
	memcpy(child->sgid, from->sgid, 16);
	memcpy(child->dgid, from->dgid, 16);
	for (uint32_t i = 0; i < sofd.dev.num_gids && i < SOF_MAX_GIDS; i++)
		if (!memcmp(sofd.dev.gids[i].gid, child->sgid, 16))
			child->sgid_index = i;
	child->have_dev = true;
	child->have_route = true;
	child->mtu = (uint8_t)sofd.dev.active_mtu;
	memset(&child->src, 0, sizeof(child->src));
	memset(&child->dst, 0, sizeof(child->dst));
	if (l->src.ss_family == AF_IB || !has_ip) {
		struct sockaddr_ib *s = (struct sockaddr_ib *)&child->src;
		struct sockaddr_ib *d = (struct sockaddr_ib *)&child->dst;

		s->sib_family = d->sib_family = AF_IB;
		memcpy(&s->sib_addr, child->sgid, 16);
		memcpy(&d->sib_addr, child->dgid, 16);
		s->sib_sid = ((const struct sockaddr_ib *)&l->src)->sib_sid;
		s->sib_pkey = d->sib_pkey = htons(0xffff);
		return;
	}
	if (ip->ip_version == 4) {
		struct sockaddr_in *s = (struct sockaddr_in *)&child->src;
		struct sockaddr_in *d = (struct sockaddr_in *)&child->dst;

		s->sin_family = d->sin_family = AF_INET;
		memcpy(&s->sin_addr, ip->dst + 12, 4);
		memcpy(&d->sin_addr, ip->src + 12, 4);
		s->sin_port = ((const struct sockaddr_in *)&l->src)->sin_port;
		d->sin_port = htons(ip->src_port);
	} else {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)&child->src;
		struct sockaddr_in6 *d = (struct sockaddr_in6 *)&child->dst;

		s->sin6_family = d->sin6_family = AF_INET6;
		memcpy(&s->sin6_addr, ip->dst, 16);
		memcpy(&d->sin6_addr, ip->src, 16);
		s->sin6_port = l->src.ss_family == AF_INET6
				   ? ((const struct sockaddr_in6 *)&l->src)->sin6_port
				   : ((const struct sockaddr_in *)&l->src)->sin_port;
		d->sin6_port = htons(ip->src_port);
	}
}

static void recv_req(const struct sof_mad_hdr *h, const uint8_t *body,
		     const struct sofd_mad_addr *from)
{
	struct sof_cm_param p;
	struct cmw_ip_hdr ip;
	struct cmw_req req;
	struct cm_id *l, *id;
	bool has_ip = false;

	cmw_req_get(body, &req);
	id = dup_req(&req);
	if (id) {
		/* 12.9.6: a repeated REQ gets what we answered, or an MRA */
		if (id->state == CM_REQ_RCVD)
			send_mra(id);
		else if (id->state == CM_MRA_REQ_SENT && id->reply_valid)
			(void)sofd_mad_send(&id->peer, id->reply);
		else if (id->state == CM_REP_SENT && id->msg_valid)
			(void)sofd_mad_send(&id->peer, id->msg);
		return;
	}
	if (req.transport_type != CMW_TS_RC && req.transport_type != CMW_TS_UC) {
		rej_stateless(from, req.local_comm_id, CMW_MSG_REQ, CMW_REJ_INVALID_TRANSPORT);
		return;
	}
	if (memcmp(req.remote_gid, from->sgid, 16) || memcmp(req.local_gid, from->dgid, 16)) {
		rej_stateless(from, req.local_comm_id, CMW_MSG_REQ, CMW_REJ_INVALID_GID);
		return;
	}
	l = req_listener(req.service_id, req.private_data, from->sgid, &ip, &has_ip);
	if (!l) {
		rej_stateless(from, req.local_comm_id, CMW_MSG_REQ, CMW_REJ_INVALID_SERVICE_ID);
		return;
	}
	if ((l->qp_type == IBV_QPT_UC) != (req.transport_type == CMW_TS_UC)) {
		rej_stateless(from, req.local_comm_id, CMW_MSG_REQ, CMW_REJ_INVALID_TRANSPORT);
		return;
	}
	id = cm_new_child(l);
	if (!id) {
		rej_stateless(from, req.local_comm_id, CMW_MSG_REQ, CMW_REJ_NO_RESOURCES);
		return;
	}
	id->local_comm_id = new_comm_id();
	if (sof_hmap_put(&cm.comm, id->local_comm_id, id)) {
		id->local_comm_id = 0;
		rej_stateless(from, req.local_comm_id, CMW_MSG_REQ, CMW_REJ_NO_RESOURCES);
		l->pending--;
		cm_free(id);
		return;
	}
	child_addrs(id, l, from, &ip, has_ip);
	id->remote_comm_id = req.local_comm_id;
	id->remote_ca_guid = req.local_ca_guid;
	id->remote_qpn = req.local_qpn;
	id->remote_psn = req.starting_psn;
	id->local_psn = sof_random32() & 0xffffff;
	/* from this side: the peer's initiator depth is what we must serve */
	id->responder_resources = req.initiator_depth;
	id->initiator_depth = req.responder_resources;
	id->retry_count = req.retry_count;
	id->rnr_retry = req.rnr_retry_count;
	id->flow_control = req.flow_control;
	id->local_ack_timeout = req.local_ack_timeout;
	if (req.mtu && req.mtu < id->mtu)
		id->mtu = req.mtu;
	id->tos = req.traffic_class;
	id->remote_ece_vendor = req.vendor_id;
	id->remote_ece_options = h->attr_mod;
	/* our REP waits the peer's own response time (12.7.27) */
	id->timeout_ns = answer_ns(req.local_cm_response_timeout);
	id->retries_left = req.max_cm_retries;
	peer_init(id);
	set_state(id, CM_REQ_RCVD);

	memset(&p, 0, sizeof(p));
	p.qp_num = req.local_qpn;
	p.responder_resources = id->responder_resources;
	p.initiator_depth = id->initiator_depth;
	p.flow_control = req.flow_control;
	p.retry_count = req.retry_count;
	p.rnr_retry_count = req.rnr_retry_count;
	p.srq = req.srq;
	p.ece_vendor_id = req.vendor_id;
	p.ece_options = h->attr_mod;
	if (has_ip)
		pdata_to_param(&p, req.private_data + CMW_IP_HDR_LEN, CMW_REQ_PDATA - CMW_IP_HDR_LEN);
	else
		pdata_to_param(&p, req.private_data, CMW_REQ_PDATA);
	cm_event_conn_req(l, id, &p);
}

static void recv_rep(const struct sof_mad_hdr *h, const uint8_t *body)
{
	struct sof_cm_param p;
	struct cmw_rep rep;
	struct cm_id *id;

	cmw_rep_get(body, &rep);
	id = by_comm(rep.remote_comm_id, 0);
	if (!id) {
		sofd.drops[SOF_DROP_mad]++;
		return;
	}
	if (id->state == CM_ESTABLISHED && id->remote_comm_id == rep.local_comm_id) {
		/* our RTU was lost: again */
		if (id->reply_valid)
			(void)sofd_mad_send(&id->peer, id->reply);
		return;
	}
	if (id->state != CM_REQ_SENT && id->state != CM_MRA_REQ_RCVD) {
		sofd.drops[SOF_DROP_mad]++;
		return;
	}
	cm_timer_set(id, 0);
	id->msg_valid = false;
	id->remote_comm_id = rep.local_comm_id;
	id->remote_ca_guid = rep.local_ca_guid;
	id->remote_qpn = rep.local_qpn;
	id->remote_psn = rep.starting_psn;
	id->rnr_retry = rep.rnr_retry_count;
	/* what the peer will serve bounds what we may have outstanding */
	if (rep.responder_resources < id->initiator_depth)
		id->initiator_depth = rep.responder_resources;
	id->remote_ece_vendor = rep.vendor_id;
	id->remote_ece_options = h->attr_mod;
	set_state(id, CM_REP_RCVD);

	memset(&p, 0, sizeof(p));
	p.qp_num = rep.local_qpn;
	p.responder_resources = rep.initiator_depth;
	p.initiator_depth = rep.responder_resources;
	p.flow_control = rep.flow_control;
	p.rnr_retry_count = rep.rnr_retry_count;
	p.srq = rep.srq;
	p.ece_vendor_id = rep.vendor_id;
	p.ece_options = h->attr_mod;
	pdata_to_param(&p, rep.private_data, CMW_REP_PDATA);
	cm_event(id, RDMA_CM_EVENT_CONNECT_RESPONSE, 0, &p);
}

static void recv_rtu(const uint8_t *body)
{
	struct cmw_rtu rtu;
	struct cm_id *id;

	cmw_rtu_get(body, &rtu);
	id = by_comm(rtu.remote_comm_id, rtu.local_comm_id);
	if (!id || id->state != CM_REP_SENT) {
		if (!id)
			sofd.drops[SOF_DROP_mad]++;
		return; /* a repeated RTU changes nothing */
	}
	cm_timer_set(id, 0);
	id->msg_valid = false;
	set_state(id, CM_ESTABLISHED);
	id->cstate = CMA_ESTABLISHED;
	cm_event(id, RDMA_CM_EVENT_ESTABLISHED, 0, NULL);
}

static void recv_mra(const uint8_t *body)
{
	struct cmw_mra mra;
	struct cm_id *id;

	cmw_mra_get(body, &mra);
	id = by_comm(mra.remote_comm_id, mra.local_comm_id);
	if (!id) {
		sofd.drops[SOF_DROP_mad]++;
		return;
	}
	/* 12.6.6: the peer needs service_timeout more; keep retrying after */
	if ((id->state == CM_REQ_SENT || id->state == CM_MRA_REQ_RCVD) &&
	    mra.msg_mraed == CMW_MSG_REQ) {
		id->remote_comm_id = mra.local_comm_id;
		set_state(id, CM_MRA_REQ_RCVD);
		cm_timer_set(id, answer_ns(mra.service_timeout));
	} else if (id->state == CM_REP_SENT && mra.msg_mraed == CMW_MSG_REP) {
		cm_timer_set(id, answer_ns(mra.service_timeout));
	}
}

static void recv_rej(const uint8_t *body)
{
	struct sof_cm_param p;
	struct cmw_rej rej;
	struct cm_id *id;

	cmw_rej_get(body, &rej);
	id = by_comm(rej.remote_comm_id, rej.local_comm_id);
	if (!id) {
		sofd.drops[SOF_DROP_mad]++;
		return;
	}
	switch (id->state) {
	case CM_REQ_SENT:
	case CM_MRA_REQ_RCVD:
	case CM_REP_SENT:
	case CM_REP_RCVD:
		break;
	case CM_ESTABLISHED:
		/* 12.9.6: a REJ of an established connection (stale) */
		if (rej.remote_comm_id != id->local_comm_id)
			return;
		cm_timer_set(id, 0);
		cm_event(id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL);
		enter_timewait(id);
		return;
	default:
		return;
	}
	cm_timer_set(id, 0);
	id->msg_valid = false;
	set_state(id, CM_IDLE);
	id->cstate = CMA_ROUTE_RESOLVED;
	memset(&p, 0, sizeof(p));
	pdata_to_param(&p, rej.private_data, CMW_REJ_PDATA);
	cm_event(id, RDMA_CM_EVENT_REJECTED, rej.reason, &p);
	if (!id->ch)
		cm_free(id);
}

static void send_drep(struct cm_id *id)
{
	struct cmw_rtu drep;

	memset(&drep, 0, sizeof(drep));
	drep.local_comm_id = id->local_comm_id;
	drep.remote_comm_id = id->remote_comm_id;
	mad_hdr(id->reply, CMW_DREP, 0);
	cmw_rtu_put(id->reply + SOF_MAD_HDR_LEN, &drep);
	send_reply(id);
}

static void recv_dreq(const uint8_t *body, const struct sofd_mad_addr *from)
{
	struct cmw_dreq dreq;
	struct cm_id *id;

	cmw_dreq_get(body, &dreq);
	id = by_comm(dreq.remote_comm_id, dreq.local_comm_id);
	if (!id || !id->remote_comm_id) {
		/* 12.9.8: a DREQ for no connection still gets its DREP */
		struct sofd_mad_addr to = *from;
		struct cmw_rtu drep;
		uint8_t mad[SOF_MAD_LEN];

		memset(&drep, 0, sizeof(drep));
		drep.local_comm_id = dreq.remote_comm_id;
		drep.remote_comm_id = dreq.local_comm_id;
		mad_hdr(mad, CMW_DREP, 0);
		cmw_rtu_put(mad + SOF_MAD_HDR_LEN, &drep);
		to.remote_qpn = SOF_GSI_QPN;
		to.remote_qkey = SOF_GSI_QKEY;
		(void)sofd_mad_send(&to, mad);
		return;
	}
	switch (id->state) {
	case CM_ESTABLISHED:
	case CM_REP_SENT: /* the RTU was lost; the DREQ says it was sent */
	case CM_DREQ_SENT: /* both sides at once */
		cm_timer_set(id, 0);
		id->msg_valid = false;
		send_drep(id);
		cm_event(id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL);
		enter_timewait(id);
		return;
	case CM_TIMEWAIT:
		if (id->reply_valid)
			(void)sofd_mad_send(&id->peer, id->reply);
		return;
	default:
		return;
	}
}

static void recv_drep(const uint8_t *body)
{
	struct cmw_rtu drep;
	struct cm_id *id;

	cmw_rtu_get(body, &drep);
	id = by_comm(drep.remote_comm_id, drep.local_comm_id);
	if (!id || id->state != CM_DREQ_SENT)
		return;
	cm_timer_set(id, 0);
	cm_event(id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL);
	enter_timewait(id);
}

static void recv_sidr_req(const uint8_t *body, const struct sofd_mad_addr *from)
{
	struct cmw_sidr_req req;
	struct sof_cm_param p;
	struct cmw_ip_hdr ip;
	struct cm_id *l, *id;
	bool has_ip = false;
	uint32_t pos = 0;
	uint64_t key;

	cmw_sidr_req_get(body, &req);
	/* a repeated request: the answer again, or nothing while it waits */
	while ((id = sof_hmap_next(&cm.ids, &pos, &key))) {
		if (id->sidr_request_id == req.request_id && id->state == CM_SIDR_REQ_RCVD &&
		    !memcmp(id->dgid, from->dgid, 16))
			return;
	}
	l = req_listener(req.service_id, req.private_data, from->sgid, &ip, &has_ip);
	if (!l || l->qp_type != IBV_QPT_UD || !(id = cm_new_child(l))) {
		struct cmw_sidr_rep rep;
		struct sofd_mad_addr to = *from;
		uint8_t mad[SOF_MAD_LEN];

		memset(&rep, 0, sizeof(rep));
		rep.request_id = req.request_id;
		rep.status = l && l->qp_type == IBV_QPT_UD ? CMW_SIDR_REJECT : CMW_SIDR_NO_SERVICE;
		rep.service_id = req.service_id;
		mad_hdr(mad, CMW_SIDR_REP, 0);
		cmw_sidr_rep_put(mad + SOF_MAD_HDR_LEN, &rep);
		to.remote_qpn = SOF_GSI_QPN;
		to.remote_qkey = SOF_GSI_QKEY;
		(void)sofd_mad_send(&to, mad);
		return;
	}
	child_addrs(id, l, from, &ip, has_ip);
	id->sidr_request_id = req.request_id;
	peer_init(id);
	set_state(id, CM_SIDR_REQ_RCVD);
	memset(&p, 0, sizeof(p));
	if (has_ip)
		pdata_to_param(&p, req.private_data + CMW_IP_HDR_LEN,
			       CMW_SIDR_REQ_PDATA - CMW_IP_HDR_LEN);
	else
		pdata_to_param(&p, req.private_data, CMW_SIDR_REQ_PDATA);
	cm_event_conn_req(l, id, &p);
}

static void recv_sidr_rep(const uint8_t *body)
{
	struct cmw_sidr_rep rep;
	struct sof_cm_param p;
	struct cm_id *id;

	cmw_sidr_rep_get(body, &rep);
	id = rep.request_id ? sof_hmap_get(&cm.sidr, rep.request_id) : NULL;
	if (!id || id->state != CM_SIDR_REQ_SENT) {
		sofd.drops[SOF_DROP_mad]++;
		return;
	}
	cm_timer_set(id, 0);
	id->msg_valid = false;
	sof_hmap_del(&cm.sidr, id->sidr_request_id);
	id->sidr_request_id = 0;
	set_state(id, CM_IDLE);
	memset(&p, 0, sizeof(p));
	pdata_to_param(&p, rep.private_data, CMW_SIDR_REP_PDATA);
	if (rep.status != CMW_SIDR_OK) {
		id->cstate = CMA_ROUTE_RESOLVED;
		cm_event(id, RDMA_CM_EVENT_UNREACHABLE, rep.status, &p);
		return;
	}
	id->cstate = CMA_ESTABLISHED;
	id->remote_qpn = rep.qpn;
	cm_event_ud(id, RDMA_CM_EVENT_ESTABLISHED, 0, &p, rep.qpn, rep.qkey);
}

void cm_mad_recv(const uint8_t *mad, const struct sofd_mad_addr *from)
{
	const uint8_t *body = mad + SOF_MAD_HDR_LEN;
	struct sof_mad_hdr h;

	sof_mad_hdr_get(mad, &h);
	/* 13.4.5: the CM's messages are all Sends (ClassPortInfo Get aside,
	 * which this CM does not serve) */
	if (h.method != SOF_MAD_METHOD_SEND || from->remote_qpn != SOF_GSI_QPN) {
		sofd.drops[SOF_DROP_mad]++;
		return;
	}
	switch (h.attr_id) {
	case CMW_REQ:
		recv_req(&h, body, from);
		break;
	case CMW_MRA:
		recv_mra(body);
		break;
	case CMW_REJ:
		recv_rej(body);
		break;
	case CMW_REP:
		recv_rep(&h, body);
		break;
	case CMW_RTU:
		recv_rtu(body);
		break;
	case CMW_DREQ:
		recv_dreq(body, from);
		break;
	case CMW_DREP:
		recv_drep(body);
		break;
	case CMW_SIDR_REQ:
		recv_sidr_req(body, from);
		break;
	case CMW_SIDR_REP:
		recv_sidr_rep(body);
		break;
	default:
		/* LAP/APR: no alternate paths on this device */
		sofd.drops[SOF_DROP_mad]++;
		break;
	}
}
