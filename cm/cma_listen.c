/*
 * Listening and the requests that reach a listener: listen with a
 * backlog; a connection request the protocol reports (IBCM_EV_REQ) finds
 * its listener by port space, port and address (a wildcard one last,
 * AFONLY kept), becomes a child id on the listener's channel with the
 * addresses of the A11 header (Annex A11) or of the path, and waits for
 * its user's accept or reject.
 */
#include "cma.h"

#include "sof_gid.h"

#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/ib.h>
#include <string.h>

/* The listener of (ps, port) for dst (IPv4-mapped or IPv6 GID bytes),
 * or NULL. */
static struct cm_id *find_listener(uint8_t ps, uint16_t port, const uint8_t dst[16])
{
	struct cm_id *any = NULL, *o;
	uint32_t pos = 0;
	uint64_t key;

	while ((o = sof_hmap_next(&cma.ids, &pos, &key))) {
		uint8_t g[16];

		if (o->cstate != CMA_LISTEN || o->ps != ps || cma_addr_port(&o->src) != port ||
		    cm_raw_sid(&o->src))
			continue;
		cma_addr_gid(&o->src, g);
		if (!memcmp(g, dst, 16) && !cma_addr_is_wild(&o->src))
			return o;
		/* a listener bound to the wildcard or to a loopback address
		 * takes requests for any address (the kernel's
		 * cma_match_private_data) */
		if (cma_addr_is_wild(&o->src)) {
			/* AFONLY: an IPv6 wildcard takes no IPv4 */
			if (o->src.ss_family == AF_INET && !sof_gid_is_v4(dst))
				continue;
			if (o->src.ss_family == AF_INET6 && o->afonly && sof_gid_is_v4(dst))
				continue;
			any = o;
		}
	}
	return any;
}

/* A new id on listener's channel for a connection request; NULL at the
 * backlog or out of memory. */
static struct cm_id *new_child(struct cm_id *listener)
{
	struct cm_id *id;

	if (listener->pending >= listener->backlog || !listener->ch)
		return NULL;
	id = cma_id_new(listener->ch, listener->ps, listener->qp_type);
	if (!id)
		return NULL;
	id->listener = listener;
	listener->pending++;
	id->tos = listener->tos;
	id->ack_timeout = listener->ack_timeout;
	id->qkey = listener->qkey;
	cma_set_state(id, CMA_CONNECT);
	return id;
}

/* The listener of a service ID and A11 header, whatever the partition. */
static struct cm_id *req_listener_any(uint64_t sid, const uint8_t *pdata, const uint8_t *our_gid,
				      struct cmw_ip_hdr *ip, bool *has_ip)
{
	uint8_t ps = (uint8_t)(sid >> 16);
	uint16_t port = (uint16_t)sid;
	struct cm_id *l;

	if (!cmw_is_ip_service(sid)) {
		/* a service ID of its user's (AF_IB): that listener */
		uint32_t pos = 0;
		uint64_t key;

		*has_ip = false;
		while ((l = sof_hmap_next(&cma.ids, &pos, &key)))
			if (l->cstate == CMA_LISTEN && cm_raw_sid(&l->src) == sid)
				return l;
		return NULL;
	}
	*has_ip = cmw_ip_hdr_get(pdata, ip);
	l = find_listener(ps, port, *has_ip ? ip->dst : our_gid);
	if (l && l->src.ss_family != AF_IB && !*has_ip)
		return NULL; /* an IP listener needs the A11 header */
	if (l && l->src.ss_family == AF_IB)
		*has_ip = false;
	return l;
}

/* The listener a request is for, from its service ID and A11 header;
 * one bound to an address of an IPoIB interface takes only requests in
 * that interface's partition (pkey), as the kernel's rdma_cm finds the
 * net device by the REQ's P_Key (cma_get_net_dev). */
static struct cm_id *req_listener(uint64_t sid, const uint8_t *pdata, const uint8_t *our_gid,
				  uint16_t pkey, struct cmw_ip_hdr *ip, bool *has_ip)
{
	struct cm_id *l = req_listener_any(sid, pdata, our_gid, ip, has_ip);

	if (l && l->ib && l->bound && !cma_addr_is_wild(&l->src) &&
	    (l->pkey & 0x7fff) != (pkey & 0x7fff)) {
		cm_trace("cma id %u: request for P_Key 0x%04x, listener in 0x%04x", l->handle, pkey,
			 l->pkey);
		return NULL;
	}
	return l;
}

/* The new id's view of the connection: addresses and path. */
static void child_addrs(struct cm_id *child, const struct cm_id *l,
			const struct sofd_mad_addr *from, const struct cmw_ip_hdr *ip, bool has_ip)
{
	memcpy(child->sgid, from->sgid, 16);
	memcpy(child->dgid, from->dgid, 16);
	for (uint32_t i = 0; i < cm_host->dev->num_gids && i < SOF_MAX_GIDS; i++)
		if (!memcmp(cm_host->dev->gids[i].gid, child->sgid, 16))
			child->sgid_index = i;
	child->have_dev = true;
	child->have_route = true;
	child->mtu = (uint8_t)cm_host->dev->active_mtu;
	memset(&child->src, 0, sizeof(child->src));
	memset(&child->dst, 0, sizeof(child->dst));
	if (l->src.ss_family == AF_IB || !has_ip) {
		struct sockaddr_ib *s = (struct sockaddr_ib *)&child->src;
		struct sockaddr_ib *d = (struct sockaddr_ib *)&child->dst;

		s->sib_family = d->sib_family = AF_IB;
		memcpy(&s->sib_addr, child->sgid, 16);
		memcpy(&d->sib_addr, child->dgid, 16);
		s->sib_sid = ((const struct sockaddr_ib *)&l->src)->sib_sid;
		s->sib_pkey = d->sib_pkey = htons(child->pkey);
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

int cma_req_arrived(struct ibcm_event *ev)
{
	struct cmw_ip_hdr ip;
	struct cm_id *l, *child;
	bool has_ip = false, wrong;

	l = req_listener(ev->service_id, ev->pdata, ev->from->sgid, ev->pkey ? ev->pkey : 0xffff,
			 &ip, &has_ip);
	if (!l)
		return -ENOENT;
	/* a SIDR_REQ needs a UD listener; a REQ is told apart only as UC or
	 * not (an RC REQ finds a UD listener too, as it always did) */
	if (ev->qp_type == IBV_QPT_UD)
		wrong = l->qp_type != IBV_QPT_UD;
	else
		wrong = (l->qp_type == IBV_QPT_UC) != (ev->qp_type == IBV_QPT_UC);
	if (wrong)
		return -EPROTOTYPE;
	child = new_child(l);
	if (!child)
		return -ENOBUFS;
	if (ev->from->ib && ev->pkey) {
		/* the child is in the request's partition (recv checked it) */
		int idx = cm_pkey_index(ev->pkey);

		child->pkey = ev->pkey;
		child->pkey_index = idx >= 0 ? (uint16_t)idx : 0;
	}
	child_addrs(child, l, ev->from, &ip, has_ip);
	ev->child = child;
	ev->has_ip = has_ip;
	return 0;
}

CMA_OP(listen)
{
	const struct sof_cm_id_req *r = rq->data;
	struct cm_id *id = cma_get_id(rq, r->id);
	uint8_t gid[16];

	(void)rp;
	if (!id)
		return -ENOENT;
	if (id->cstate == CMA_LISTEN) {
		id->backlog = r->arg && r->arg < CMA_MAX_BACKLOG ? r->arg : CMA_MAX_BACKLOG;
		return 0;
	}
	if (id->cstate == CMA_IDLE) {
		struct sockaddr_storage any;
		int err;

		memset(&any, 0, sizeof(any));
		any.ss_family = AF_INET;
		err = cma_bind_port(id, &any);
		if (err)
			return err;
		cma_set_state(id, CMA_ADDR_BOUND);
	}
	if (id->cstate != CMA_ADDR_BOUND)
		return -EINVAL;
	cma_addr_gid(&id->src, gid);
	if (!cm_raw_sid(&id->src)) {
		struct cm_id *o = find_listener(id->ps, cma_addr_port(&id->src), gid);
		uint8_t og[16];

		if (o) {
			cma_addr_gid(&o->src, og);
			if (!memcmp(og, gid, 16) ||
			    (cma_addr_is_wild(&o->src) && cma_addr_is_wild(&id->src) &&
			     o->src.ss_family == id->src.ss_family))
				return -EADDRINUSE;
		}
	}
	id->backlog = r->arg && r->arg < CMA_MAX_BACKLOG ? r->arg : CMA_MAX_BACKLOG;
	cma_set_state(id, CMA_LISTEN);
	cm_counts.listeners++;
	return 0;
}

CMA_OP(accept)
{
	const struct sof_cm_conn_req *r = rq->data;
	struct cm_id *id = cma_get_id(rq, r->id);
	int err;

	(void)rp;
	if (!id)
		return -ENOENT;
	if (!cma_param_ok(&r->param))
		return -EINVAL;
	if (id->state == CM_SIDR_REQ_RCVD) {
		err = cm_send_sidr_rep(id, CMW_SIDR_OK, &r->param);
		if (!err)
			cma_set_state(id, CMA_ESTABLISHED);
	} else if (id->state == CM_REQ_RCVD || id->state == CM_MRA_REQ_SENT) {
		err = cm_send_rep(id, &r->param);
	} else {
		return -EINVAL;
	}
	if (!err)
		cma_child_answered(id);
	return err;
}

CMA_OP(reject)
{
	const struct sof_cm_conn_req *r = rq->data;
	struct cm_id *id = cma_get_id(rq, r->id);
	int err;

	(void)rp;
	if (!id)
		return -ENOENT;
	if (!cma_param_ok(&r->param))
		return -EINVAL;
	if (id->state == CM_SIDR_REQ_RCVD) {
		err = cm_send_sidr_rep(id, CMW_SIDR_REJECT, &r->param);
		if (!err)
			cma_set_state(id, CMA_IDLE);
	} else if (id->state == CM_REQ_RCVD || id->state == CM_MRA_REQ_SENT) {
		err = cm_send_rej(id, r->reason ? (uint16_t)r->reason : CMW_REJ_CONSUMER,
				  r->param.private_data, r->param.private_data_len);
	} else {
		return -EINVAL;
	}
	cma_child_answered(id);
	return err;
}
