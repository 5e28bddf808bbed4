/*
 * What a peer's CM message does (IBA 12.6, 12.9.6, 12.11), and the CM
 * agent on QP1 that receives them. Received MADs are validated against
 * the connection's state and IDs before they change anything; a message
 * that fits no connection is dropped and counted, or answered as IBA asks
 * (a REQ for no listener: REJ "invalid service ID"; a DREQ for a
 * connection long gone: DREP). Duplicates are recognised by the
 * communication IDs, not the transaction IDs (12.9.6), and get the answer
 * we gave before. A request for a service goes up to the id layer, which
 * finds the listener and makes the new id (IBCM_EV_REQ).
 */
#include "ibcm_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void pdata_to_param(struct sof_cm_param *p, const uint8_t *data, uint32_t len)
{
	if (len > SOF_CM_PDATA_MAX)
		len = SOF_CM_PDATA_MAX;
	memcpy(p->private_data, data, len);
	p->private_data_len = (uint8_t)len;
}

/* A REJ for a message that fits no connection of ours (12.6.7). */
static void rej_stateless(const struct sofd_mad_addr *from, uint32_t remote_comm_id, uint8_t msg,
			  uint16_t reason)
{
	struct cmw_rej rej;
	uint8_t mad[SOF_MAD_LEN];

	memset(&rej, 0, sizeof(rej));
	rej.remote_comm_id = remote_comm_id;
	rej.msg_rejected = msg;
	rej.reason = reason;
	ibcm_mad_hdr(mad, CMW_REJ, 0);
	cmw_rej_put(mad + SOF_MAD_HDR_LEN, &rej);
	ibcm_send_stateless(from, mad);
}

/* The id with local comm ID local whose peer is remote (0: not yet
 * known, so any), or NULL. */
static struct cm_id *by_comm(uint32_t local, uint32_t remote)
{
	struct cm_id *id = local ? sof_hmap_get(&ibcm.comm, local) : NULL;

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

	while ((id = sof_hmap_next(&ibcm.comm, &pos, &key)))
		if (id->remote_comm_id == req->local_comm_id &&
		    id->remote_ca_guid == req->local_ca_guid && id->state != CM_IDLE)
			return id;
	return NULL;
}

/* 12.6.6: more time for our user to answer msg (the REQ: accept or
 * reject; the REP: the RTU once its QP is ready). An id that MRAs a REP
 * stays REP_RCVD (IBA's MRA_REP_SENT): the MRA is its reply until the RTU
 * replaces it. */
static void send_mra(struct cm_id *id, uint8_t msg)
{
	struct cmw_mra mra;

	memset(&mra, 0, sizeof(mra));
	mra.local_comm_id = id->local_comm_id;
	mra.remote_comm_id = id->remote_comm_id;
	mra.msg_mraed = msg;
	mra.service_timeout = CM_MRA_TIMEOUT;
	ibcm_mad_hdr(id->reply, CMW_MRA, 0);
	cmw_mra_put(id->reply + SOF_MAD_HDR_LEN, &mra);
	if (msg == CMW_MSG_REQ)
		ibcm_set_state(id, CM_MRA_REQ_SENT);
	ibcm_send_reply(id);
}

/* A REQ that came by LID without GRH (the InfiniBand port): its GIDs are
 * the ones it names, when the remote one is our port's GID 0 and the
 * remote LID our LID; *f gets them. False: not for this port. */
static bool ib_req_addr(const struct cmw_req *req, const struct sofd_mad_addr *from,
			struct sofd_mad_addr *f)
{
	struct sof_ib_port p;
	uint64_t prefix, guid;

	if (!cm_host->ops->ib_port || cm_host->ops->ib_port(&p))
		return false;
	memcpy(&prefix, req->remote_gid, 8);
	memcpy(&guid, req->remote_gid + 8, 8);
	if (be64toh(prefix) != p.subnet_prefix || be64toh(guid) != p.port_guid ||
	    req->remote_lid != p.lid || req->local_lid != from->lid)
		return false;
	*f = *from;
	memcpy(f->sgid, req->remote_gid, 16);
	memcpy(f->dgid, req->local_gid, 16);
	return true;
}

/* A SIDR_REQ that came by LID without GRH: it names no GIDs (table 119),
 * so ours is our port's GID 0 and the peer has none; the answer and the
 * peer's address vector go by its LID. False: no InfiniBand port. */
static bool ib_sidr_addr(const struct sofd_mad_addr *from, struct sofd_mad_addr *f)
{
	struct sof_ib_port p;
	uint64_t prefix, guid;

	if (!cm_host->ops->ib_port || cm_host->ops->ib_port(&p))
		return false;
	prefix = htobe64(p.subnet_prefix);
	guid = htobe64(p.port_guid);
	*f = *from;
	memcpy(f->sgid, &prefix, 8);
	memcpy(f->sgid + 8, &guid, 8);
	memset(f->dgid, 0, 16);
	return true;
}

static void recv_req(const struct sof_mad_hdr *h, const uint8_t *body,
		     const struct sofd_mad_addr *from)
{
	struct ibcm_event ev = {.type = IBCM_EV_REQ, .from = from};
	struct sofd_mad_addr ibfrom;
	struct sof_cm_param p;
	struct cmw_req req;
	struct cm_id *id;
	uint16_t reason;
	int err;

	cmw_req_get(body, &req);
	if (from->ib && from->no_grh) {
		if (!ib_req_addr(&req, from, &ibfrom)) {
			rej_stateless(from, req.local_comm_id, CMW_MSG_REQ, CMW_REJ_INVALID_GID);
			return;
		}
		from = ev.from = &ibfrom;
	}
	id = dup_req(&req);
	if (id) {
		/* 12.9.6: a repeated REQ gets what we answered, or an MRA */
		if (id->state == CM_REQ_RCVD)
			send_mra(id, CMW_MSG_REQ);
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
	/* the REQ's P_Key (12.6.5 table 106) is the connection's partition:
	 * one our port does not carry cannot be served (the kernel's
	 * cm_req_handler fails to make the address vector and rejects with
	 * Invalid GID, as here) */
	if (from->ib && cm_pkey_index(req.pkey) < 0) {
		cm_trace("cm: REQ for P_Key 0x%04x, not in our table", req.pkey);
		rej_stateless(from, req.local_comm_id, CMW_MSG_REQ, CMW_REJ_INVALID_GID);
		return;
	}
	ev.pkey = req.pkey;
	/* the id layer finds the listener and makes its child */
	ev.service_id = req.service_id;
	ev.pdata = req.private_data;
	ev.qp_type = req.transport_type == CMW_TS_UC ? IBV_QPT_UC : IBV_QPT_RC;
	err = ibcm_up(NULL, &ev);
	if (err) {
		reason = err == -ENOENT	      ? CMW_REJ_INVALID_SERVICE_ID
			 : err == -EPROTOTYPE ? CMW_REJ_INVALID_TRANSPORT
					      : CMW_REJ_NO_RESOURCES;
		rej_stateless(from, req.local_comm_id, CMW_MSG_REQ, reason);
		return;
	}
	id = ev.child;
	id->local_comm_id = ibcm_new_comm_id();
	if (sof_hmap_put(&ibcm.comm, id->local_comm_id, id)) {
		id->local_comm_id = 0;
		rej_stateless(from, req.local_comm_id, CMW_MSG_REQ, CMW_REJ_NO_RESOURCES);
		ev.type = IBCM_EV_DISCARD;
		ibcm_up(id, &ev);
		return;
	}
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
	if (from->ib) {
		/* the path's lifetime, as the kernel's ib_cm reads it from the
		 * REQ: the ACK timeout less one */
		id->pkt_life = req.local_ack_timeout ? req.local_ack_timeout - 1u : 0;
		/* the path of the REQ seen from here (12.6.5): its local LID
		 * is the peer's; the MTU is what the active side's SA gave */
		id->ib = true;
		id->sgid_index = 0;
		id->dlid = req.local_lid;
		id->slid = req.remote_lid;
		id->sl = req.sl;
		if (req.mtu)
			id->mtu = req.mtu;
	} else if (req.mtu && req.mtu < id->mtu) {
		id->mtu = req.mtu;
	}
	id->tos = req.traffic_class;
	id->remote_ece_vendor = req.vendor_id;
	id->remote_ece_options = h->attr_mod;
	/* our REP waits the peer's own response time (12.7.27) */
	id->timeout_ns = ibcm_answer_ns(id, req.local_cm_response_timeout);
	id->retries_left = req.max_cm_retries;
	ibcm_peer_init(id);
	ibcm_set_state(id, CM_REQ_RCVD);

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
	if (ev.has_ip)
		pdata_to_param(&p, req.private_data + CMW_IP_HDR_LEN,
			       CMW_REQ_PDATA - CMW_IP_HDR_LEN);
	else
		pdata_to_param(&p, req.private_data, CMW_REQ_PDATA);
	ibcm_report(id, RDMA_CM_EVENT_CONNECT_REQUEST, 0, &p);
}

static void recv_rep(const struct sof_mad_hdr *h, const uint8_t *body)
{
	struct sof_cm_param p;
	struct cmw_rep rep;
	struct cm_id *id;

	cmw_rep_get(body, &rep);
	id = by_comm(rep.remote_comm_id, 0);
	if (!id) {
		cm_host->drops[SOF_DROP_mad]++;
		return;
	}
	if (id->state == CM_ESTABLISHED && id->remote_comm_id == rep.local_comm_id) {
		/* our RTU was lost: again */
		if (id->reply_valid)
			(void)sofd_mad_send(&id->peer, id->reply);
		return;
	}
	if (id->state == CM_REP_RCVD && id->remote_comm_id == rep.local_comm_id) {
		/* 12.9.6: the REP again, our user has not established yet (its
		 * process slow to run: the RTU waits for it to ready its QP).
		 * Without an MRA the peer gave up after its last try (about
		 * 4 s) and rejected, while our user went on to establish a
		 * connection the peer no longer had: an rsocket's connect
		 * failed, or one that had succeeded read the REJ as its end
		 * (issue 22). Linux's RDMA CM MRAs every REP for the same. */
		send_mra(id, CMW_MSG_REP);
		return;
	}
	if (id->state != CM_REQ_SENT && id->state != CM_MRA_REQ_RCVD) {
		cm_host->drops[SOF_DROP_mad]++;
		return;
	}
	ibcm_timer_set(id, 0);
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
	ibcm_set_state(id, CM_REP_RCVD);

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
	ibcm_report(id, RDMA_CM_EVENT_CONNECT_RESPONSE, 0, &p);
}

static void recv_rtu(const uint8_t *body)
{
	struct cmw_rtu rtu;
	struct cm_id *id;

	cmw_rtu_get(body, &rtu);
	id = by_comm(rtu.remote_comm_id, rtu.local_comm_id);
	if (!id || id->state != CM_REP_SENT) {
		if (!id)
			cm_host->drops[SOF_DROP_mad]++;
		return; /* a repeated RTU changes nothing */
	}
	ibcm_timer_set(id, 0);
	id->msg_valid = false;
	ibcm_set_state(id, CM_ESTABLISHED);
	ibcm_report(id, RDMA_CM_EVENT_ESTABLISHED, 0, NULL);
}

static void recv_mra(const uint8_t *body)
{
	struct cmw_mra mra;
	struct cm_id *id;

	cmw_mra_get(body, &mra);
	id = by_comm(mra.remote_comm_id, mra.local_comm_id);
	if (!id) {
		cm_host->drops[SOF_DROP_mad]++;
		return;
	}
	/* 12.6.6: the peer needs service_timeout more; keep retrying after */
	if ((id->state == CM_REQ_SENT || id->state == CM_MRA_REQ_RCVD) &&
	    mra.msg_mraed == CMW_MSG_REQ) {
		id->remote_comm_id = mra.local_comm_id;
		ibcm_set_state(id, CM_MRA_REQ_RCVD);
		ibcm_timer_set(id, ibcm_answer_ns(id, mra.service_timeout));
	} else if (id->state == CM_REP_SENT && mra.msg_mraed == CMW_MSG_REP) {
		ibcm_timer_set(id, ibcm_answer_ns(id, mra.service_timeout));
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
		cm_host->drops[SOF_DROP_mad]++;
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
		ibcm_timer_set(id, 0);
		ibcm_report(id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL);
		ibcm_enter_timewait(id);
		return;
	default:
		return;
	}
	ibcm_timer_set(id, 0);
	id->msg_valid = false;
	ibcm_set_state(id, CM_IDLE);
	memset(&p, 0, sizeof(p));
	pdata_to_param(&p, rej.private_data, CMW_REJ_PDATA);
	ibcm_report(id, RDMA_CM_EVENT_REJECTED, rej.reason, &p);
	ibcm_done(id);
}

static void send_drep(struct cm_id *id)
{
	struct cmw_rtu drep;

	memset(&drep, 0, sizeof(drep));
	drep.local_comm_id = id->local_comm_id;
	drep.remote_comm_id = id->remote_comm_id;
	ibcm_mad_hdr(id->reply, CMW_DREP, 0);
	cmw_rtu_put(id->reply + SOF_MAD_HDR_LEN, &drep);
	ibcm_send_reply(id);
}

static void recv_dreq(const uint8_t *body, const struct sofd_mad_addr *from)
{
	struct cmw_dreq dreq;
	struct cm_id *id;

	cmw_dreq_get(body, &dreq);
	id = by_comm(dreq.remote_comm_id, dreq.local_comm_id);
	if (!id || !id->remote_comm_id) {
		/* 12.9.8: a DREQ for no connection still gets its DREP */
		struct cmw_rtu drep;
		uint8_t mad[SOF_MAD_LEN];

		memset(&drep, 0, sizeof(drep));
		drep.local_comm_id = dreq.remote_comm_id;
		drep.remote_comm_id = dreq.local_comm_id;
		ibcm_mad_hdr(mad, CMW_DREP, 0);
		cmw_rtu_put(mad + SOF_MAD_HDR_LEN, &drep);
		ibcm_send_stateless(from, mad);
		return;
	}
	switch (id->state) {
	case CM_ESTABLISHED:
	case CM_REP_SENT:  /* the RTU was lost; the DREQ says it was sent */
	case CM_DREQ_SENT: /* both sides at once */
		ibcm_timer_set(id, 0);
		id->msg_valid = false;
		send_drep(id);
		ibcm_report(id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL);
		ibcm_enter_timewait(id);
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
	ibcm_timer_set(id, 0);
	ibcm_report(id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL);
	ibcm_enter_timewait(id);
}

static void recv_sidr_req(const uint8_t *body, const struct sofd_mad_addr *from)
{
	struct ibcm_event ev = {.type = IBCM_EV_REQ, .from = from, .qp_type = IBV_QPT_UD};
	struct sofd_mad_addr ibfrom;
	struct cmw_sidr_req req;
	struct sof_cm_param p;
	struct sof_link *l;
	struct cm_id *id;
	int err;

	cmw_sidr_req_get(body, &req);
	if (from->ib && from->no_grh) {
		if (!ib_sidr_addr(from, &ibfrom))
			return;
		from = ev.from = &ibfrom;
	}
	/* a repeated request: the answer again, or nothing while it waits */
	for (l = ibcm.sidr_rcvd.next; l != &ibcm.sidr_rcvd; l = l->next) {
		id = sof_container_of(l, struct cm_id, sidr_link);
		if (id->sidr_request_id == req.request_id && !memcmp(id->dgid, from->dgid, 16) &&
		    (!from->ib || id->dlid == from->lid))
			return;
	}
	ev.service_id = req.service_id;
	ev.pdata = req.private_data;
	ev.pkey = req.pkey;
	err = from->ib && cm_pkey_index(req.pkey) < 0 ? -ENOENT : ibcm_up(NULL, &ev);
	if (err) {
		struct cmw_sidr_rep rep;
		uint8_t mad[SOF_MAD_LEN];

		memset(&rep, 0, sizeof(rep));
		rep.request_id = req.request_id;
		/* 12.11: a UD service at its backlog refuses, any other has none */
		rep.status = err == -ENOBUFS ? CMW_SIDR_REJECT : CMW_SIDR_NO_SERVICE;
		rep.service_id = req.service_id;
		ibcm_mad_hdr(mad, CMW_SIDR_REP, 0);
		cmw_sidr_rep_put(mad + SOF_MAD_HDR_LEN, &rep);
		ibcm_send_stateless(from, mad);
		return;
	}
	id = ev.child;
	id->sidr_request_id = req.request_id;
	if (from->ib) {
		/* the peer by the LID and SL the request came by */
		id->ib = true;
		id->sgid_index = 0;
		id->dlid = from->lid;
		id->sl = from->sl;
	}
	ibcm_peer_init(id);
	ibcm_set_state(id, CM_SIDR_REQ_RCVD);
	memset(&p, 0, sizeof(p));
	if (ev.has_ip)
		pdata_to_param(&p, req.private_data + CMW_IP_HDR_LEN,
			       CMW_SIDR_REQ_PDATA - CMW_IP_HDR_LEN);
	else
		pdata_to_param(&p, req.private_data, CMW_SIDR_REQ_PDATA);
	ibcm_report(id, RDMA_CM_EVENT_CONNECT_REQUEST, 0, &p);
}

static void recv_sidr_rep(const uint8_t *body)
{
	struct ibcm_event ev = {
	    .type = IBCM_EV_USER, .event = RDMA_CM_EVENT_ESTABLISHED, .ud = true};
	struct cmw_sidr_rep rep;
	struct sof_cm_param p;
	struct cm_id *id;

	cmw_sidr_rep_get(body, &rep);
	id = rep.request_id ? sof_hmap_get(&ibcm.sidr, rep.request_id) : NULL;
	if (!id || id->state != CM_SIDR_REQ_SENT) {
		cm_host->drops[SOF_DROP_mad]++;
		return;
	}
	ibcm_timer_set(id, 0);
	id->msg_valid = false;
	sof_hmap_del(&ibcm.sidr, id->sidr_request_id);
	id->sidr_request_id = 0;
	ibcm_set_state(id, CM_IDLE);
	memset(&p, 0, sizeof(p));
	pdata_to_param(&p, rep.private_data, CMW_SIDR_REP_PDATA);
	if (rep.status != CMW_SIDR_OK) {
		ibcm_report(id, RDMA_CM_EVENT_UNREACHABLE, rep.status, &p);
		return;
	}
	id->remote_qpn = rep.qpn;
	ev.param = &p;
	ev.qpn = rep.qpn;
	ev.qkey = rep.qkey;
	ibcm_up(id, &ev);
}

void ibcm_mad_recv(const uint8_t *mad, const struct sofd_mad_addr *from)
{
	const uint8_t *body = mad + SOF_MAD_HDR_LEN;
	struct sof_mad_hdr h;

	sof_mad_hdr_get(mad, &h);
	/* 13.4.5: the CM's messages are all Sends (ClassPortInfo Get aside,
	 * which this CM does not serve) */
	if (h.method != SOF_MAD_METHOD_SEND || from->remote_qpn != SOF_GSI_QPN) {
		cm_host->drops[SOF_DROP_mad]++;
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
		cm_host->drops[SOF_DROP_mad]++;
		break;
	}
}

int ibcm_init(const struct ibcm_ops *ops)
{
	int err;

	ibcm.ops = ops;
	cm_tracing = getenv("SOFTOFED_TRACE") != NULL;
	err = ibcm_timer_init();
	if (err)
		return err;
	ibcm.agent = sofd_mad_register(SOF_MGMT_CLASS_CM, CMW_CLASS_VERSION, ibcm_mad_recv);
	return ibcm.agent < 0 ? ibcm.agent : 0;
}
