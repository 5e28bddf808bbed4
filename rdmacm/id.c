/*
 * rdma_cm_id: creation, destruction, migration between channels, the
 * event counts (rdma_ack_cm_event), bind, listen and options; the steps
 * that wait for an event on a synchronous id (resolve address and route)
 * are in resolve.c, above event.c.
 *
 * Every id has the daemon's handle; the library finds an id by handle in a
 * map (events name ids by handle). An id counts the events handed to the
 * user and those acked: rdma_destroy_id and rdma_migrate_id wait until
 * every event handed out is acked, as rdma-core's do with the kernel's
 * events_reported. An id created with no channel is synchronous: it gets a
 * private channel, and each call that starts an asynchronous step waits
 * for that step's event itself (sofcm_complete, event.c).
 */
#include "sof_hmap.h"
#include "sof_proto.h"
#include "sofcm.h"

#include <endian.h>
#include <infiniband/ib.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* Under sofcm_lock: daemon handle + 1 (key 0 is the map's) -> id. */
static struct sof_hmap ids;

static uint64_t id_key(uint32_t handle) { return (uint64_t)handle + 1; }

struct sofcm_id *sofcm_id_lookup(uint32_t handle) { return sof_hmap_get(&ids, id_key(handle)); }

int sofcm_id_insert(struct sofcm_id *idp)
{
	int ret;

	pthread_mutex_lock(&sofcm_lock);
	if (sof_hmap_get(&ids, id_key(idp->handle)))
		ret = -EEXIST;
	else
		ret = sof_hmap_put(&ids, id_key(idp->handle), idp);
	pthread_mutex_unlock(&sofcm_lock);
	return ret;
}

void sofcm_id_remove(struct sofcm_id *idp)
{
	pthread_mutex_lock(&sofcm_lock);
	if (sof_hmap_get(&ids, id_key(idp->handle)) == idp)
		sof_hmap_del(&ids, id_key(idp->handle));
	pthread_mutex_unlock(&sofcm_lock);
}

socklen_t sofcm_addrlen(const struct sockaddr *addr)
{
	if (!addr)
		return 0;
	switch (addr->sa_family) {
	case AF_INET:
		return sizeof(struct sockaddr_in);
	case AF_INET6:
		return sizeof(struct sockaddr_in6);
	case AF_IB:
		return sizeof(struct sockaddr_ib);
	default:
		return 0;
	}
}

struct sofcm_id *sofcm_id_alloc(struct rdma_event_channel *channel, void *context,
				enum rdma_port_space ps, enum ibv_qp_type qp_type)
{
	struct sofcm_id *idp = calloc(1, sizeof(*idp));
	struct sofcm_channel *chan;

	if (!idp)
		return NULL;
	idp->id.context = context;
	idp->id.ps = ps;
	idp->id.qp_type = qp_type;
	idp->handle = UINT32_MAX;
	if (!channel) {
		chan = sofcm_channel_create();
		if (!chan) {
			free(idp);
			return NULL;
		}
		idp->id.channel = &chan->ch;
		idp->sync = true;
	} else {
		idp->id.channel = channel;
	}
	pthread_mutex_init(&idp->lock, NULL);
	pthread_cond_init(&idp->cond, NULL);
	return idp;
}

void sofcm_id_free(struct sofcm_id *idp)
{
	struct sofcm_mc *mc, *next;

	sofcm_id_remove(idp);
	sofcm_device_put(idp->dev);
	for (mc = idp->mc_list; mc; mc = next) {
		next = mc->next;
		pthread_cond_destroy(&mc->cond);
		free(mc);
	}
	free(idp->id.route.path_rec);
	if (idp->sync)
		sofcm_channel_destroy(sofcm_chan(idp->id.channel));
	free(idp->connect);
	free(idp->qp_init_attr);
	pthread_cond_destroy(&idp->cond);
	pthread_mutex_destroy(&idp->lock);
	free(idp);
}

void sofcm_id_charge(struct sofcm_id *idp, struct sofcm_mc *mc)
{
	pthread_mutex_lock(&idp->lock);
	idp->given++;
	if (mc)
		mc->given++;
	pthread_mutex_unlock(&idp->lock);
}

void sofcm_id_complete(struct sofcm_id *idp, struct sofcm_mc *mc)
{
	pthread_mutex_lock(&idp->lock);
	idp->acked++;
	if (mc) {
		mc->acked++;
		pthread_cond_broadcast(&mc->cond);
	}
	pthread_cond_broadcast(&idp->cond);
	pthread_mutex_unlock(&idp->lock);
}

SOFCM_EXPORT int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	struct sofcm_event *evt = (struct sofcm_event *)event;

	if (!event)
		return sofcm_err(EINVAL);
	sofcm_id_complete(evt->idp, evt->mc);
	free(evt);
	return 0;
}

/* Wait until every event handed out on idp is acked. */
static void wait_acked(struct sofcm_id *idp)
{
	pthread_mutex_lock(&idp->lock);
	while (idp->acked < idp->given)
		pthread_cond_wait(&idp->cond, &idp->lock);
	pthread_mutex_unlock(&idp->lock);
}

/* Copy an address the daemon sent, when its family is one we know. */
static void copy_addr(struct sockaddr_storage *dst, const struct sockaddr_storage *src)
{
	socklen_t len = sofcm_addrlen((const struct sockaddr *)src);

	if (!len)
		return;
	memset(dst, 0, sizeof(*dst));
	memcpy(dst, src, len);
}

int sofcm_apply_query(struct sofcm_id *idp, const struct sof_cm_query_rep *q)
{
	struct rdma_cm_id *id = &idp->id;
	struct ibv_sa_path_rec *p;

	copy_addr(&id->route.addr.src_storage, &q->src);
	copy_addr(&id->route.addr.dst_storage, &q->dst);
	memcpy(id->route.addr.addr.ibaddr.sgid.raw, q->sgid, 16);
	memcpy(id->route.addr.addr.ibaddr.dgid.raw, q->dgid, 16);
	id->route.addr.addr.ibaddr.pkey = htobe16(q->pkey);

	if (q->port_num && !idp->dev) {
		struct sofcm_device *dev = sofcm_device_get(q->ib);

		if (!dev)
			return -errno;
		idp->dev = dev;
		id->verbs = dev->verbs;
		if (!id->pd)
			id->pd = dev->pd;
		id->port_num = q->port_num;
	}

	if (q->num_paths) {
		p = id->route.path_rec;
		if (!p) {
			p = calloc(1, sizeof(*p));
			if (!p)
				return -ENOMEM;
			id->route.path_rec = p;
		}
		memset(p, 0, sizeof(*p));
		memcpy(p->dgid.raw, q->dgid, 16);
		memcpy(p->sgid.raw, q->sgid, 16);
		/* RoCE: no LIDs; the InfiniBand port: the path's */
		p->dlid = htobe16(q->dlid);
		p->slid = htobe16(q->slid);
		p->sl = q->sl;
		p->flow_label = htobe32(q->flow_label);
		p->hop_limit = q->hop_limit;
		p->traffic_class = q->traffic_class;
		p->reversible = 1;
		p->numb_path = 1;
		p->pkey = htobe16(q->pkey);
		p->mtu_selector = 2; /* exactly */
		p->mtu = q->mtu;
		p->rate_selector = 2;
		p->rate = IBV_RATE_10_GBPS;
		p->packet_life_time_selector = 2;
		p->packet_life_time = q->packet_life_time;
		id->route.num_paths = 1;
	}
	return 0;
}

int sofcm_query(struct sofcm_id *idp)
{
	struct sof_cm_query_rep q;
	int ret;

	ret = sofcm_rpc_id(SOF_OP_CM_QUERY, idp->handle, 0, &q, sizeof(q));
	return ret ? ret : sofcm_apply_query(idp, &q);
}

int sofcm_create_id2(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context,
		     enum rdma_port_space ps, enum ibv_qp_type qp_type)
{
	struct sof_cm_create_req req;
	struct sof_cm_id_rep rep;
	struct sofcm_id *idp;
	int ret;

	if (!id)
		return sofcm_err(EINVAL);
	idp = sofcm_id_alloc(channel, context, ps, qp_type);
	if (!idp)
		return -1;
	memset(&req, 0, sizeof(req));
	req.channel = sofcm_chan(idp->id.channel)->handle;
	req.ps = ps;
	req.qp_type = qp_type;
	ret = sofcm_rpc(SOF_OP_CM_CREATE_ID, &req, sizeof(req), &rep, sizeof(rep));
	if (ret)
		goto err;
	idp->handle = rep.id;
	ret = sofcm_id_insert(idp);
	if (ret) {
		/* the daemon named an id we have: not ours to destroy */
		ret = -EPROTO;
		goto err;
	}
	*id = &idp->id;
	return 0;

err:
	sofcm_id_free(idp);
	return sofcm_err(-ret);
}

SOFCM_EXPORT int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id,
				void *context, enum rdma_port_space ps)
{
	enum ibv_qp_type qp_type =
	    ps == RDMA_PS_IPOIB || ps == RDMA_PS_UDP ? IBV_QPT_UD : IBV_QPT_RC;

	return sofcm_create_id2(channel, id, context, ps, qp_type);
}

SOFCM_EXPORT int rdma_destroy_id(struct rdma_cm_id *id)
{
	struct sofcm_id *idp;
	int ret;

	if (!id)
		return sofcm_err(EINVAL);
	idp = sofcm_id(id);
	ret = sofcm_rpc_id(SOF_OP_CM_DESTROY_ID, idp->handle, 0, NULL, 0);
	/* An id the daemon no longer has (or a daemon that is gone) is
	 * released here all the same. */
	if (ret && ret != -ENOENT && ret != -EIO && ret != -ENODEV && ret != -ECONNREFUSED)
		return sofcm_err(-ret);
	/* From here on, its events still in flight are dropped. */
	sofcm_id_remove(idp);
	if (id->event) {
		rdma_ack_cm_event(id->event);
		id->event = NULL;
	}
	wait_acked(idp);
	sofcm_id_free(idp);
	return 0;
}

/* Move what the old private channel still holds to the new channel. */
static void drain_private(struct sofcm_channel *from, struct sofcm_channel *to)
{
	struct sof_cm_event ev;
	ssize_t n;

	for (;;) {
		n = recv(from->ch.fd, &ev, sizeof(ev), MSG_DONTWAIT | MSG_TRUNC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n != (ssize_t)sizeof(ev)) {
			if (n > 0)
				continue; /* not an event */
			return;
		}
		sofcm_channel_push(to, &ev);
	}
}

/* The events the shared channel from holds now, each given back to the
 * daemon to write again: to `to` when it is the migrated id's (not a
 * request it listens for), else to from. What the daemon queued before
 * the move is in from's socket by now (the MIGRATE reply came after it),
 * so the id's events reach `to` readably and in order, as the kernel's
 * ucma_migrate_id moves them; a program that waits on the new channel
 * (librpma: the connection's ESTABLISHED, queued on the listener's
 * channel between rdma_accept and the move) gets them. Another thread
 * reading from at the same time may take one first: event.c then hands
 * it over by the backlog, as before. */
static void requeue_moved(struct sofcm_channel *from, struct sofcm_channel *to, uint32_t idh)
{
	struct sof_cm_requeue_req req;
	struct sof_cm_event *evs = NULL, *grown;
	size_t n = 0, cap = 0;
	ssize_t got;

	for (;;) {
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			grown = realloc(evs, cap * sizeof(*evs));
			if (!grown)
				break;
			evs = grown;
		}
		got = recv(from->ch.fd, &evs[n], sizeof(evs[n]), MSG_DONTWAIT | MSG_TRUNC);
		if (got < 0 && errno == EINTR)
			continue;
		if (got == (ssize_t)sizeof(evs[n]))
			n++;
		else if (got <= 0)
			break; /* (a record of another size is not an event: dropped) */
	}
	for (size_t i = 0; i < n; i++) {
		bool mine = evs[i].id == idh && evs[i].event != RDMA_CM_EVENT_CONNECT_REQUEST;

		memset(&req, 0, sizeof(req));
		req.channel = mine ? to->handle : from->handle;
		req.ev = evs[i];
		if (sofcm_rpc(SOF_OP_CM_REQUEUE, &req, sizeof(req), NULL, 0))
			sofcm_channel_push(mine ? to : from, &evs[i]); /* readable late */
	}
	free(evs);
}

SOFCM_EXPORT int rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel)
{
	struct sofcm_channel *to, *old;
	struct sofcm_id *idp;
	bool sync, was_sync;
	int ret;

	if (!id)
		return sofcm_err(EINVAL);
	idp = sofcm_id(id);
	if (idp->sync && !channel)
		return sofcm_err(EINVAL);
	sync = !channel;
	if (sync) {
		to = sofcm_channel_create();
		if (!to)
			return -1;
	} else {
		to = sofcm_chan(channel);
	}
	ret = sofcm_rpc_id(SOF_OP_CM_MIGRATE_ID, idp->handle, to->handle, NULL, 0);
	if (ret) {
		if (sync)
			sofcm_channel_destroy(to);
		return sofcm_err(-ret);
	}
	was_sync = idp->sync;
	if (was_sync && id->event) {
		rdma_ack_cm_event(id->event);
		id->event = NULL;
	}
	pthread_mutex_lock(&sofcm_lock);
	old = sofcm_chan(id->channel);
	id->channel = &to->ch;
	idp->sync = sync;
	pthread_mutex_unlock(&sofcm_lock);
	if (was_sync) {
		drain_private(old, to);
		sofcm_channel_destroy(old);
	} else if (old != to) {
		requeue_moved(old, to, idp->handle);
	}
	wait_acked(idp);
	return 0;
}

SOFCM_EXPORT int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct sof_cm_query_rep q;
	struct sof_cm_addr_req req;
	socklen_t len = sofcm_addrlen(addr);
	int ret;

	if (!id || !len)
		return sofcm_err(EINVAL);
	memset(&req, 0, sizeof(req));
	req.id = sofcm_id(id)->handle;
	memcpy(&req.src, addr, len);
	/* an address of an IPoIB interface: the id is on the InfiniBand port */
	req.ib = sofcm_ipoib_addr(addr, &req.pkey);
	ret = sofcm_rpc(SOF_OP_CM_BIND_ADDR, &req, sizeof(req), &q, sizeof(q));
	if (!ret)
		ret = sofcm_apply_query(sofcm_id(id), &q);
	return sofcm_ret(ret);
}

SOFCM_EXPORT int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	int ret;

	if (!id)
		return sofcm_err(EINVAL);
	ret = sofcm_rpc_id(SOF_OP_CM_LISTEN, sofcm_id(id)->handle,
			   backlog > 0 ? (uint32_t)backlog : 0, NULL, 0);
	if (!ret)
		ret = sofcm_query(sofcm_id(id));
	return sofcm_ret(ret);
}

_Static_assert(sizeof(((struct sof_cm_option_req *)0)->value) >= sizeof(struct ibv_path_data),
	       "RDMA_OPTION_IB_PATH must fit");

SOFCM_EXPORT int rdma_set_option(struct rdma_cm_id *id, int level, int optname, void *optval,
				 size_t optlen)
{
	struct sof_cm_option_req req;

	if (!id || (optlen && !optval) || optlen > sizeof(req.value) || level < 0 || optname < 0)
		return sofcm_err(EINVAL);
	memset(&req, 0, sizeof(req));
	req.id = sofcm_id(id)->handle;
	req.level = (uint32_t)level;
	req.optname = (uint32_t)optname;
	req.len = (uint32_t)optlen;
	if (optlen)
		memcpy(req.value, optval, optlen);
	return sofcm_ret(sofcm_rpc(SOF_OP_CM_SET_OPTION, &req, sizeof(req), NULL, 0));
}

SOFCM_EXPORT int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
	if (!id)
		return sofcm_err(EINVAL);
	return sofcm_ret(
	    sofcm_rpc_id(SOF_OP_CM_NOTIFY, sofcm_id(id)->handle, (uint32_t)event, NULL, 0));
}

/* The port of an address in network order; AF_IB: the service ID's low
 * 16 bits (the port of the RDMA IP CM service ID, Annex A11). */
static __be16 addr_port(const struct sockaddr *addr)
{
	switch (addr->sa_family) {
	case AF_INET:
		return ((const struct sockaddr_in *)addr)->sin_port;
	case AF_INET6:
		return ((const struct sockaddr_in6 *)addr)->sin6_port;
	case AF_IB:
		return htobe16((uint16_t)be64toh(((const struct sockaddr_ib *)addr)->sib_sid));
	default:
		return 0;
	}
}

SOFCM_EXPORT __be16 rdma_get_src_port(struct rdma_cm_id *id)
{
	return addr_port(&id->route.addr.src_addr);
}

SOFCM_EXPORT __be16 rdma_get_dst_port(struct rdma_cm_id *id)
{
	return addr_port(&id->route.addr.dst_addr);
}

int sofcm_set_ece(struct sofcm_id *idp, uint32_t vendor_id, uint32_t options)
{
	struct sof_cm_ece req = {.id = idp->handle, .vendor_id = vendor_id, .options = options};

	return sofcm_rpc(SOF_OP_CM_SET_ECE, &req, sizeof(req), NULL, 0);
}

SOFCM_EXPORT int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	struct sofcm_id *idp;
	int ret;

	/* as rdma-core: only for ids whose QP the application manages */
	if (!id || id->qp || !ece || !ece->vendor_id || ece->comp_mask)
		return sofcm_err(EINVAL);
	idp = sofcm_id(id);
	ret = sofcm_set_ece(idp, ece->vendor_id, ece->options);
	if (ret)
		return sofcm_err(-ret);
	idp->local_ece.vendor_id = ece->vendor_id;
	idp->local_ece.options = ece->options;
	return 0;
}

SOFCM_EXPORT int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	struct sofcm_id *idp;

	if (!id || id->qp || !ece)
		return sofcm_err(EINVAL);
	idp = sofcm_id(id);
	ece->vendor_id = idp->remote_ece.vendor_id;
	ece->options = idp->remote_ece.options;
	ece->comp_mask = 0;
	return 0;
}
