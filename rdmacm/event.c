/*
 * From the daemon's event records (struct sof_cm_event) to the
 * struct rdma_cm_event the application gets, doing on the way what
 * rdma-core's librdmacm does on top of the kernel's events:
 *  - ADDR_RESOLVED / ROUTE_RESOLVED: the id's addresses, device and path
 *    are queried (a failed query turns the event into ADDR_ERROR /
 *    ROUTE_ERROR);
 *  - CONNECT_REQUEST: a new rdma_cm_id on the listener's channel with the
 *    listener's context (moved to a private channel of its own when the
 *    listener is synchronous); for an unknown listener the new id is
 *    destroyed;
 *  - CONNECT_RESPONSE on an id with a QP: the QP goes to RTR and RTS, the
 *    daemon sends the RTU (SOF_OP_CM_ESTABLISH) and the user gets
 *    ESTABLISHED; when that fails, the connection is rejected and the user
 *    gets CONNECT_ERROR (the REJECTED or DISCONNECTED that may follow is
 *    kept from the user, as rdma-core does);
 *  - REJECTED: the QP goes to ERROR;
 *  - MULTICAST_JOIN: the id's QP is attached to the group (not for a
 *    send-only join); the event's private_data is the join's context.
 * Events of ids the library no longer knows are dropped.
 *
 * Here too the two calls that read events: rdma_get_cm_event (the next
 * record of a channel, channel.c, converted) and sofcm_complete (a
 * synchronous id waits for the event of its step).
 */
#include "sof_proto.h"
#include "sofcm.h"

#include <stdlib.h>
#include <string.h>

static void copy_conn(struct sofcm_event *evt, const struct sof_cm_param *p)
{
	struct rdma_conn_param *c = &evt->event.param.conn;

	c->private_data_len = p->private_data_len;
	if (p->private_data_len) {
		memcpy(evt->private_data, p->private_data, p->private_data_len);
		c->private_data = evt->private_data;
	}
	c->responder_resources = p->responder_resources;
	c->initiator_depth = p->initiator_depth;
	c->flow_control = p->flow_control;
	c->retry_count = p->retry_count;
	c->rnr_retry_count = p->rnr_retry_count;
	c->srq = p->srq;
	c->qp_num = p->qp_num;
}

/* UD: the destination as an address vector (RoCE: always global). */
static void copy_ud(struct sofcm_event *evt, const struct sof_cm_event *ev, uint8_t port)
{
	struct rdma_ud_param *u = &evt->event.param.ud;
	struct ibv_ah_attr *ah = &u->ah_attr;

	u->private_data_len = ev->param.private_data_len;
	if (ev->param.private_data_len) {
		memcpy(evt->private_data, ev->param.private_data, ev->param.private_data_len);
		u->private_data = evt->private_data;
	}
	memset(ah, 0, sizeof(*ah));
	ah->port_num = port ? port : 1;
	if (ev->ah_no_grh) {
		/* the InfiniBand port: the peer by LID and SL, no GRH, as
		 * rdma-core gives for an IB path without one */
		ah->dlid = ev->ah_dlid;
		ah->sl = ev->ah_sl;
		u->qp_num = ev->param.qp_num;
		u->qkey = ev->param.qkey;
		return;
	}
	/* a GRH, and on the InfiniBand port a LID too (a multicast
	 * group's MLID and SL, from the SA) */
	ah->dlid = ev->ah_dlid;
	ah->sl = ev->ah_sl;
	ah->is_global = 1;
	memcpy(ah->grh.dgid.raw, ev->ah_dgid, 16);
	ah->grh.flow_label = ev->ah_flow_label;
	ah->grh.sgid_index = ev->ah_sgid_index;
	ah->grh.hop_limit = ev->ah_hop_limit;
	ah->grh.traffic_class = ev->ah_traffic_class;
	u->qp_num = ev->param.qp_num;
	u->qkey = ev->param.qkey;
}

static void copy_param(struct sofcm_event *evt, struct sofcm_id *idp, const struct sof_cm_event *ev)
{
	if (idp->id.qp_type == IBV_QPT_UD)
		copy_ud(evt, ev, idp->id.port_num);
	else
		copy_conn(evt, &ev->param);
}

/* The active side's QP after the REP: RTR, RTS, then the RTU. */
static int conn_resp(struct sofcm_id *idp)
{
	int ret;

	ret = sofcm_qp_rtr(idp, RDMA_MAX_RESP_RES);
	if (!ret)
		ret = sofcm_qp_rts(idp, RDMA_MAX_INIT_DEPTH);
	if (!ret)
		ret = sofcm_rpc_id(SOF_OP_CM_ESTABLISH, idp->handle, 0, NULL, 0);
	if (ret) {
		struct sof_cm_conn_req rej;

		sofcm_qp_err(idp);
		memset(&rej, 0, sizeof(rej));
		rej.id = idp->handle;
		sofcm_rpc(SOF_OP_CM_REJECT, &rej, sizeof(rej), NULL, 0);
	}
	return ret;
}

static void destroy_unknown(uint32_t handle)
{
	sofcm_rpc_id(SOF_OP_CM_DESTROY_ID, handle, 0, NULL, 0);
}

static bool conn_request(struct sofcm_channel *chan, const struct sof_cm_event *ev,
			 struct sofcm_event *evt)
{
	struct sofcm_id *lidp, *nidp;
	int ret;

	pthread_mutex_lock(&sofcm_lock);
	lidp = sofcm_id_lookup(ev->listen_id);
	if (!lidp) {
		pthread_mutex_unlock(&sofcm_lock);
		destroy_unknown(ev->id);
		return false;
	}
	if (sofcm_chan(lidp->id.channel) != chan) {
		sofcm_channel_push(sofcm_chan(lidp->id.channel), ev);
		pthread_mutex_unlock(&sofcm_lock);
		return false;
	}
	if (sofcm_id_lookup(ev->id)) {
		/* an id we already have cannot be new */
		pthread_mutex_unlock(&sofcm_lock);
		return false;
	}
	/* the listener stays until this event is acked */
	sofcm_id_charge(lidp, NULL);
	pthread_mutex_unlock(&sofcm_lock);

	nidp = sofcm_id_alloc(lidp->id.channel, lidp->id.context, lidp->id.ps, lidp->id.qp_type);
	if (!nidp) {
		destroy_unknown(ev->id);
		goto err;
	}
	nidp->handle = ev->id;
	nidp->initiator_depth = ev->param.initiator_depth;
	nidp->responder_resources = ev->param.responder_resources;
	nidp->remote_ece.vendor_id = ev->param.ece_vendor_id;
	nidp->remote_ece.options = ev->param.ece_options;
	if (sofcm_id_insert(nidp)) {
		destroy_unknown(ev->id);
		sofcm_id_free(nidp);
		goto err;
	}
	ret = sofcm_apply_query(nidp, &ev->q);
	if (!ret && lidp->sync && rdma_migrate_id(&nidp->id, NULL))
		ret = -errno;
	if (ret) {
		rdma_destroy_id(&nidp->id);
		goto err;
	}
	evt->idp = lidp;
	evt->event.id = &nidp->id;
	evt->event.listen_id = &lidp->id;
	evt->event.event = RDMA_CM_EVENT_CONNECT_REQUEST;
	evt->event.status = ev->status;
	copy_param(evt, nidp, ev);
	return true;

err:
	sofcm_id_complete(lidp, NULL);
	return false;
}

static struct sofcm_mc *find_mc(struct sofcm_id *idp, uint64_t uid)
{
	struct sofcm_mc *mc;

	for (mc = idp->mc_list; mc; mc = mc->next)
		if (mc->uid == uid)
			return mc;
	return NULL;
}

static void mcast_join(struct sofcm_event *evt, struct sofcm_id *idp, struct sofcm_mc *mc)
{
	int ret;

	memcpy(mc->mgid.raw, evt->event.param.ud.ah_attr.grh.dgid.raw, 16);
	mc->mlid = evt->event.param.ud.ah_attr.dlid;
	if (!idp->id.qp || mc->join_flags == RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER)
		return;
	ret = ibv_attach_mcast(idp->id.qp, &mc->mgid, mc->mlid);
	if (ret) {
		evt->event.event = RDMA_CM_EVENT_MULTICAST_ERROR;
		evt->event.status = -ret;
		return;
	}
	mc->attached = true;
}

bool sofcm_event_process(struct sofcm_channel *chan, const struct sof_cm_event *in,
			 struct sofcm_event *evt)
{
	struct sof_cm_event ev = *in;
	struct sofcm_mc *mc = NULL;
	struct sofcm_id *idp;
	int ret;

	if (ev.event > RDMA_CM_EVENT_TIMEWAIT_EXIT)
		return false;
	if (ev.param.private_data_len > SOF_CM_PDATA_MAX)
		ev.param.private_data_len = SOF_CM_PDATA_MAX;
	if (ev.event == RDMA_CM_EVENT_CONNECT_REQUEST)
		return conn_request(chan, &ev, evt);

	pthread_mutex_lock(&sofcm_lock);
	idp = sofcm_id_lookup(ev.id);
	if (!idp) {
		pthread_mutex_unlock(&sofcm_lock);
		return false;
	}
	if (sofcm_chan(idp->id.channel) != chan) {
		/* queued before the id migrated */
		sofcm_channel_push(sofcm_chan(idp->id.channel), &ev);
		pthread_mutex_unlock(&sofcm_lock);
		return false;
	}
	if (ev.event == RDMA_CM_EVENT_MULTICAST_JOIN || ev.event == RDMA_CM_EVENT_MULTICAST_ERROR) {
		pthread_mutex_lock(&idp->lock);
		mc = find_mc(idp, ev.mc_uid);
		pthread_mutex_unlock(&idp->lock);
		if (!mc) {
			pthread_mutex_unlock(&sofcm_lock);
			return false;
		}
	}
	sofcm_id_charge(idp, mc);
	pthread_mutex_unlock(&sofcm_lock);

	evt->idp = idp;
	evt->mc = mc;
	evt->event.id = &idp->id;
	evt->event.event = ev.event;
	evt->event.status = ev.status;

	switch (ev.event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		ret = sofcm_query(idp);
		if (ret) {
			evt->event.event = RDMA_CM_EVENT_ADDR_ERROR;
			evt->event.status = ret;
		}
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		ret = sofcm_query(idp);
		if (ret) {
			evt->event.event = RDMA_CM_EVENT_ROUTE_ERROR;
			evt->event.status = ret;
		}
		break;
	case RDMA_CM_EVENT_CONNECT_RESPONSE:
		copy_conn(evt, &ev.param);
		idp->remote_ece.vendor_id = ev.param.ece_vendor_id;
		idp->remote_ece.options = ev.param.ece_options;
		if (!idp->id.qp)
			break; /* the application calls rdma_establish */
		ret = conn_resp(idp);
		if (ret) {
			evt->event.event = RDMA_CM_EVENT_CONNECT_ERROR;
			evt->event.status = ret;
			idp->connect_error = true;
		} else {
			evt->event.event = RDMA_CM_EVENT_ESTABLISHED;
		}
		break;
	case RDMA_CM_EVENT_REJECTED:
		if (idp->connect_error)
			goto keep;
		copy_conn(evt, &ev.param);
		sofcm_qp_err(idp);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		if (idp->connect_error)
			goto keep;
		copy_conn(evt, &ev.param);
		break;
	case RDMA_CM_EVENT_MULTICAST_JOIN:
		copy_ud(evt, &ev, idp->id.port_num);
		evt->event.param.ud.private_data = mc->context;
		mcast_join(evt, idp, mc);
		break;
	case RDMA_CM_EVENT_MULTICAST_ERROR:
		evt->event.param.ud.private_data = mc->context;
		break;
	default:
		copy_param(evt, idp, &ev);
		break;
	}
	return true;

keep:
	sofcm_id_complete(idp, mc);
	return false;
}

SOFCM_EXPORT int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
	struct sofcm_channel *chan;
	struct sofcm_event *evt;
	struct sof_cm_event ev;
	int ret;

	if (!channel || !event)
		return sofcm_err(EINVAL);
	chan = sofcm_chan(channel);
	evt = malloc(sizeof(*evt));
	if (!evt)
		return sofcm_err(ENOMEM);
	atomic_fetch_add(&chan->readers, 1);
	for (;;) {
		ret = sofcm_channel_next(chan, &ev);
		if (ret) {
			atomic_fetch_sub(&chan->readers, 1);
			free(evt);
			return sofcm_err(-ret);
		}
		memset(evt, 0, sizeof(*evt));
		if (sofcm_event_process(chan, &ev, evt)) {
			atomic_fetch_sub(&chan->readers, 1);
			*event = &evt->event;
			return 0;
		}
	}
}

int sofcm_complete(struct sofcm_id *idp)
{
	struct rdma_cm_event *ev;

	if (!idp->sync)
		return 0;
	if (idp->id.event) {
		rdma_ack_cm_event(idp->id.event);
		idp->id.event = NULL;
	}
	if (rdma_get_cm_event(idp->id.channel, &idp->id.event))
		return -1;
	ev = idp->id.event;
	if (!ev->status)
		return 0;
	if (ev->event == RDMA_CM_EVENT_REJECTED)
		return sofcm_err(ECONNREFUSED);
	return sofcm_err(ev->status < 0 ? -ev->status : ev->status);
}
