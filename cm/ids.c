/*
 * The RDMA CM service: what librdmacm asks of the daemon (sof_cm_proto.h),
 * as the kernel's rdma_cm/ucma answer it. Event channels and rdma_cm_ids,
 * addresses (IPv4, IPv6, AF_IB) and port spaces, address and route
 * resolution over this host's GID table, listen with backlog, the QP
 * attributes of each transition, multicast joins, and the events.
 *
 * Address resolution on RoCEv2 needs no ARP of ours: the GID of an IP
 * address is the address itself (IPv4-mapped for IPv4). The source is the
 * address the kernel's routing table picks for the destination (a UDP
 * socket connected to it tells, sending nothing); it must be one of the
 * GIDs this device serves.
 */
#include "cm.h"

#include "roce_wire.h"
#include "sof_gid.h"

#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/ib.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

struct cm_state_all cm;

#define CM_MAX_BACKLOG 1024
#define CM_PORT_LO 32768 /* ephemeral ports, as ip_local_port_range */
#define CM_PORT_HI 60999
#define CM_MAX_RD_ATOM 128 /* the device's max_qp_rd_atom */
#define CM_HOP_LIMIT 64
#define CM_MAX_QUEUED 65536 /* events a channel may have waiting */

struct cm_mc {
	struct sofd_link link;
	uint8_t mgid[16];
	uint64_t uid;
};

struct queued_event {
	struct sofd_link link;
	struct sof_cm_event ev;
};

static const uint8_t v4pfx[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

/* ---- addresses ---------------------------------------------------------------------- */

static bool family_ok(int f) { return f == AF_INET || f == AF_INET6 || f == AF_IB; }

/* The GID of an address: IPv4-mapped, IPv6 as is, AF_IB's GID. */
static void addr_gid(const struct sockaddr_storage *ss, uint8_t gid[16])
{
	memset(gid, 0, 16);
	if (ss->ss_family == AF_INET) {
		memcpy(gid, v4pfx, 12);
		memcpy(gid + 12, &((const struct sockaddr_in *)ss)->sin_addr, 4);
	} else if (ss->ss_family == AF_INET6) {
		memcpy(gid, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
	} else if (ss->ss_family == AF_IB) {
		memcpy(gid, &((const struct sockaddr_ib *)ss)->sib_addr, 16);
	}
}

static uint16_t addr_port(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)ss)->sin_port);
	if (ss->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	if (ss->ss_family == AF_IB)
		return (uint16_t)be64toh(((const struct sockaddr_ib *)ss)->sib_sid);
	return 0;
}

static void addr_set_port(struct sockaddr_storage *ss, uint8_t ps, uint16_t port)
{
	if (ss->ss_family == AF_INET) {
		((struct sockaddr_in *)ss)->sin_port = htons(port);
	} else if (ss->ss_family == AF_INET6) {
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
	} else if (ss->ss_family == AF_IB) {
		struct sockaddr_ib *sib = (struct sockaddr_ib *)ss;

		sib->sib_sid = htobe64(cmw_ip_service_id(ps, port));
		sib->sib_sid_mask = htobe64(~0ull);
	}
}

/* Fill ss (of family) from a GID and a port. */
static void addr_from_gid(struct sockaddr_storage *ss, int family, const uint8_t gid[16],
			  uint8_t ps, uint16_t port)
{
	memset(ss, 0, sizeof(*ss));
	if (family == AF_INET || (family != AF_IB && family != AF_INET6 && sof_gid_is_v4(gid))) {
		ss->ss_family = AF_INET;
		memcpy(&((struct sockaddr_in *)ss)->sin_addr, gid + 12, 4);
	} else if (family == AF_IB) {
		ss->ss_family = AF_IB;
		memcpy(&((struct sockaddr_ib *)ss)->sib_addr, gid, 16);
		((struct sockaddr_ib *)ss)->sib_pkey = htons(0xffff);
	} else {
		ss->ss_family = AF_INET6;
		memcpy(&((struct sockaddr_in6 *)ss)->sin6_addr, gid, 16);
	}
	addr_set_port(ss, ps, port);
}

static bool gid_is_any(const uint8_t g[16])
{
	static const uint8_t zero[16];

	return !memcmp(g, zero, 16) || (!memcmp(g, v4pfx, 12) && !memcmp(g + 12, zero, 4));
}

static bool addr_is_any(const struct sockaddr_storage *ss)
{
	uint8_t g[16];

	addr_gid(ss, g);
	return gid_is_any(g);
}

/* The GID table index of gid, or -1. */
static int gid_index(const uint8_t gid[16])
{
	for (uint32_t i = 0; i < sofd.dev.num_gids && i < SOF_MAX_GIDS; i++)
		if (!sof_gid_empty(&sofd.dev.gids[i]) && !memcmp(sofd.dev.gids[i].gid, gid, 16))
			return (int)i;
	return -1;
}

/* The source address the routing table picks for dst (a GID). 0 or -errno. */
static int route_source(const uint8_t dst[16], uint8_t src[16])
{
	bool v4 = sof_gid_is_v4(dst);
	int fd = socket(v4 ? AF_INET : AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int err = 0;

	if (fd < 0)
		return -errno;
	memset(&ss, 0, sizeof(ss));
	if (v4) {
		struct sockaddr_in *s = (struct sockaddr_in *)&ss;

		s->sin_family = AF_INET;
		s->sin_port = htons(ROCE_UDP_PORT);
		memcpy(&s->sin_addr, dst + 12, 4);
		len = sizeof(*s);
	} else {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)&ss;

		s->sin6_family = AF_INET6;
		s->sin6_port = htons(ROCE_UDP_PORT);
		memcpy(&s->sin6_addr, dst, 16);
		len = sizeof(*s);
	}
	if (connect(fd, (struct sockaddr *)&ss, len)) {
		err = -errno;
		goto out;
	}
	len = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &len)) {
		err = -errno;
		goto out;
	}
	addr_gid(&ss, src);
out:
	close(fd);
	return err;
}

/* ---- ids and channels ------------------------------------------------------------------ */

static struct cm_id *get_id(const struct sofd_req *rq, uint32_t handle)
{
	struct cm_id *id = sof_hmap_get(&cm.ids, handle);

	if (!id || !id->ch || id->ch->c->pid != rq->c->pid || id->ch->c->uid != rq->c->uid)
		return NULL;
	return id;
}

static struct cm_channel *get_channel(const struct sofd_req *rq, uint32_t handle)
{
	struct cm_channel *ch = sof_hmap_get(&cm.channels, handle);

	if (!ch || ch->c->pid != rq->c->pid || ch->c->uid != rq->c->uid)
		return NULL;
	return ch;
}

static uint32_t new_handle(const struct sof_hmap *m)
{
	for (;;) {
		uint32_t h = ++cm.next_handle;

		if (h && !sof_hmap_get(m, h))
			return h;
	}
}

static struct cm_id *id_new(struct cm_channel *ch, uint8_t ps, uint32_t qp_type)
{
	struct cm_id *id = calloc(1, sizeof(*id));

	if (!id)
		return NULL;
	id->handle = new_handle(&cm.ids);
	if (sof_hmap_put(&cm.ids, id->handle, id)) {
		free(id);
		return NULL;
	}
	id->ch = ch;
	id->ps = ps;
	id->qp_type = qp_type;
	id->qkey = RDMA_UDP_QKEY;
	sofd_list_init(&id->timer_link);
	sofd_list_init(&id->mcs);
	sofd_list_add(&ch->ids, &id->link);
	sofd.n.cm_ids++;
	return id;
}

void cm_free(struct cm_id *id)
{
	cm_timer_set(id, 0);
	if (id->local_comm_id && sof_hmap_get(&cm.comm, id->local_comm_id) == id)
		sof_hmap_del(&cm.comm, id->local_comm_id);
	if (id->sidr_request_id && sof_hmap_get(&cm.sidr, id->sidr_request_id) == id)
		sof_hmap_del(&cm.sidr, id->sidr_request_id);
	if (id->state == CM_TIMEWAIT)
		sofd.n.cm_timewait--;
	while (!sofd_list_empty(&id->mcs)) {
		struct cm_mc *mc = sof_container_of(id->mcs.next, struct cm_mc, link);

		sofd_list_del(&mc->link);
		free(mc);
	}
	sofd_list_del(&id->link);
	if (id->ch) {
		sof_hmap_del(&cm.ids, id->handle);
		sofd.n.cm_ids--;
	}
	free(id);
}

/* The user lets go of id: end its protocol, then free it or let it linger. */
static void id_destroy(struct cm_id *id)
{
	if (id->cstate == CMA_LISTEN) {
		uint32_t pos = 0;
		uint64_t key;
		struct cm_id *o;

		sofd.n.cm_listeners--;
		while ((o = sof_hmap_next(&cm.ids, &pos, &key)))
			if (o->listener == id)
				o->listener = NULL;
	}
	if (id->listener) {
		id->listener->pending--;
		id->listener = NULL;
	}
	if (!cm_abandon(id)) {
		cm_free(id);
		return;
	}
	sof_hmap_del(&cm.ids, id->handle);
	sofd.n.cm_ids--;
	id->ch = NULL;
	sofd_list_del(&id->link);
	sofd_list_add(&cm.lingering, &id->link);
}

/* ---- events ---------------------------------------------------------------------------- */

static void channel_flush(struct cm_channel *ch)
{
	struct epoll_event eev = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = &ch->c->p};

	while (!sofd_list_empty(&ch->queue)) {
		struct queued_event *q = sof_container_of(ch->queue.next, struct queued_event, link);
		int err = sof_send_rec(ch->c->p.fd, &q->ev, sizeof(q->ev), NULL, 0);

		if (err == -EAGAIN) {
			eev.events |= EPOLLOUT;
			break;
		}
		/* sent, or the channel is going: either way it is done */
		sofd_list_del(&q->link);
		ch->queued--;
		free(q);
	}
	epoll_ctl(sofd.epfd, EPOLL_CTL_MOD, ch->c->p.fd, &eev);
}

static void channel_send(struct cm_channel *ch, const struct sof_cm_event *ev)
{
	struct queued_event *q;

	if (sofd_list_empty(&ch->queue) &&
	    sof_send_rec(ch->c->p.fd, ev, sizeof(*ev), NULL, 0) != -EAGAIN)
		return;
	if (ch->queued >= CM_MAX_QUEUED) {
		sofd_log("cm: channel %u not reading its events: one dropped", ch->handle);
		return;
	}
	q = malloc(sizeof(*q));
	if (!q)
		return;
	q->ev = *ev;
	sofd_list_add(ch->queue.prev, &q->link); /* at the tail */
	ch->queued++;
	channel_flush(ch);
}

static void fill_query(const struct cm_id *id, struct sof_cm_query_rep *q)
{
	memset(q, 0, sizeof(*q));
	q->src = id->src;
	q->dst = id->dst;
	memcpy(q->sgid, id->sgid, 16);
	memcpy(q->dgid, id->dgid, 16);
	q->sgid_index = id->sgid_index;
	q->pkey = 0xffff;
	q->port_num = id->have_dev ? 1 : 0;
	if (id->have_route) {
		q->num_paths = 1;
		q->mtu = id->mtu;
		q->hop_limit = CM_HOP_LIMIT;
		q->traffic_class = id->tos;
		q->packet_life_time = CM_PKT_LIFE;
		q->service_id = htobe64(cmw_ip_service_id(id->ps, addr_port(&id->dst)));
	}
}

static void event_init(struct sof_cm_event *ev, const struct cm_id *id, uint32_t event,
		       int status, const struct sof_cm_param *p)
{
	memset(ev, 0, sizeof(*ev));
	ev->id = id->handle;
	ev->event = event;
	ev->status = status;
	if (p)
		ev->param = *p;
}

void cm_event(struct cm_id *id, uint32_t event, int status, const struct sof_cm_param *p)
{
	struct sof_cm_event ev;

	if (!id->ch)
		return;
	event_init(&ev, id, event, status, p);
	channel_send(id->ch, &ev);
}

static void event_set_ah(struct sof_cm_event *ev, const struct cm_id *id)
{
	memcpy(ev->ah_dgid, id->dgid, 16);
	ev->ah_sgid_index = (uint8_t)id->sgid_index;
	ev->ah_hop_limit = CM_HOP_LIMIT;
	ev->ah_traffic_class = id->tos;
}

void cm_event_ud(struct cm_id *id, uint32_t event, int status, const struct sof_cm_param *p,
		 uint32_t qpn, uint32_t qkey)
{
	struct sof_cm_event ev;

	if (!id->ch)
		return;
	event_init(&ev, id, event, status, p);
	ev.param.qp_num = qpn;
	ev.param.qkey = qkey;
	event_set_ah(&ev, id);
	channel_send(id->ch, &ev);
}

void cm_event_conn_req(struct cm_id *listener, struct cm_id *child, const struct sof_cm_param *p)
{
	struct sof_cm_event ev;

	event_init(&ev, child, RDMA_CM_EVENT_CONNECT_REQUEST, 0, p);
	ev.listen_id = listener->handle;
	event_set_ah(&ev, child);
	fill_query(child, &ev.q);
	channel_send(child->ch, &ev);
}

/* ---- ports and listeners --------------------------------------------------------------- */

/* Whether a bind of (ps, port, gid) by id clashes with another id. */
static bool port_taken(const struct cm_id *self, uint8_t ps, uint16_t port, const uint8_t gid[16],
		       bool reuse)
{
	uint32_t pos = 0;
	uint64_t key;
	struct cm_id *o;

	while ((o = sof_hmap_next(&cm.ids, &pos, &key))) {
		uint8_t og[16];

		if (o == self || !o->bound || o->ps != ps || addr_port(&o->src) != port)
			continue;
		addr_gid(&o->src, og);
		if (!gid_is_any(og) && !gid_is_any(gid) && memcmp(og, gid, 16))
			continue;
		/* like SO_REUSEADDR: both ask for it and neither listens */
		if (reuse && o->reuseaddr && o->cstate != CMA_LISTEN)
			continue;
		return true;
	}
	return false;
}

static int bind_port(struct cm_id *id, const struct sockaddr_storage *src)
{
	uint16_t port = addr_port(src);
	uint8_t gid[16];

	addr_gid(src, gid);
	if (port) {
		if (port_taken(id, id->ps, port, gid, id->reuseaddr))
			return -EADDRINUSE;
	} else {
		uint32_t span = CM_PORT_HI - CM_PORT_LO + 1, start = sof_random32() % span, i;

		for (i = 0; i < span; i++) {
			port = (uint16_t)(CM_PORT_LO + (start + i) % span);
			if (!port_taken(id, id->ps, port, gid, false))
				break;
		}
		if (i == span)
			return -EADDRNOTAVAIL;
	}
	id->src = *src;
	addr_set_port(&id->src, id->ps, port);
	id->bound = true;
	if (!gid_is_any(gid)) {
		memcpy(id->sgid, gid, 16);
		id->sgid_index = (uint32_t)gid_index(gid);
		id->have_dev = true;
	}
	return 0;
}

struct cm_id *cm_find_listener(uint8_t ps, uint16_t port, const uint8_t dst[16])
{
	struct cm_id *any = NULL, *o;
	uint32_t pos = 0;
	uint64_t key;

	while ((o = sof_hmap_next(&cm.ids, &pos, &key))) {
		uint8_t g[16];

		if (o->cstate != CMA_LISTEN || o->ps != ps || addr_port(&o->src) != port)
			continue;
		addr_gid(&o->src, g);
		if (!memcmp(g, dst, 16))
			return o;
		if (gid_is_any(g)) {
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

struct cm_id *cm_new_child(struct cm_id *listener)
{
	struct cm_id *id;

	if (listener->pending >= listener->backlog || !listener->ch)
		return NULL;
	id = id_new(listener->ch, listener->ps, listener->qp_type);
	if (!id)
		return NULL;
	id->listener = listener;
	listener->pending++;
	id->tos = listener->tos;
	id->ack_timeout = listener->ack_timeout;
	id->qkey = listener->qkey;
	id->cstate = CMA_CONNECT;
	return id;
}

/* ---- timers ------------------------------------------------------------------------------ */

static void timer_arm(void)
{
	struct itimerspec its = {0};
	uint64_t next = UINT64_MAX, now;
	struct sofd_link *l;

	for (l = cm.timers.next; l != &cm.timers; l = l->next) {
		struct cm_id *id = sof_container_of(l, struct cm_id, timer_link);

		if (id->timer_ns < next)
			next = id->timer_ns;
	}
	if (next == cm.timer_armed_ns)
		return;
	cm.timer_armed_ns = next;
	if (next != UINT64_MAX) {
		now = sof_now_ns();
		next = next > now ? next - now : 1;
		its.it_value.tv_sec = (time_t)(next / 1000000000u);
		its.it_value.tv_nsec = (long)(next % 1000000000u);
	}
	timerfd_settime(cm.timer.fd, 0, &its, NULL);
}

void cm_timer_set(struct cm_id *id, uint64_t ns)
{
	if (ns) {
		id->timer_ns = sof_now_ns() + ns;
		if (sofd_list_empty(&id->timer_link))
			sofd_list_add(&cm.timers, &id->timer_link);
	} else {
		id->timer_ns = 0;
		sofd_list_del(&id->timer_link);
	}
	timer_arm();
}

void sofd_cm_timer_event(void)
{
	uint64_t buf, now = sof_now_ns();
	struct sofd_link due, *l;

	if (read(cm.timer.fd, &buf, sizeof(buf)) < 0) {
		/* spurious: re-armed below */
	}
	cm.timer_armed_ns = 0;
	sofd_list_init(&due);
	for (l = cm.timers.next; l != &cm.timers;) {
		struct cm_id *id = sof_container_of(l, struct cm_id, timer_link);

		l = l->next;
		if (id->timer_ns <= now) {
			sofd_list_del(&id->timer_link);
			sofd_list_add(&due, &id->timer_link);
		}
	}
	while (!sofd_list_empty(&due)) {
		struct cm_id *id = sof_container_of(due.next, struct cm_id, timer_link);

		sofd_list_del(&id->timer_link);
		id->timer_ns = 0;
		cm_timeout(id); /* may free id */
	}
	timer_arm();
}

/* ---- the ops ---------------------------------------------------------------------------- */

static union {
	struct sof_cm_channel_rep channel;
	struct sof_cm_id_rep id;
	struct sof_cm_query_rep query;
	struct sof_cm_qp_attr attr;
	struct sof_cm_ece ece;
} rbuf;

static int op_channel(struct sofd_req *rq, struct sofd_rep *rp)
{
	struct cm_channel *ch;

	if (rq->c->ctx_id || rq->c->cm_chan)
		return -EINVAL;
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return -ENOMEM;
	ch->handle = new_handle(&cm.channels);
	if (sof_hmap_put(&cm.channels, ch->handle, ch)) {
		free(ch);
		return -ENOMEM;
	}
	ch->c = rq->c;
	sofd_list_init(&ch->ids);
	sofd_list_init(&ch->queue);
	rq->c->cm_chan = ch;
	sofd.n.cm_channels++;
	rbuf.channel.channel = ch->handle;
	rp->len = sizeof(rbuf.channel);
	return 0;
}

void sofd_cm_conn_closed(struct sofd_conn *c)
{
	struct cm_channel *ch = c->cm_chan;

	if (!ch)
		return;
	while (!sofd_list_empty(&ch->ids))
		id_destroy(sof_container_of(ch->ids.next, struct cm_id, link));
	while (!sofd_list_empty(&ch->queue)) {
		struct queued_event *q = sof_container_of(ch->queue.next, struct queued_event, link);

		sofd_list_del(&q->link);
		free(q);
	}
	sof_hmap_del(&cm.channels, ch->handle);
	sofd.n.cm_channels--;
	c->cm_chan = NULL;
	free(ch);
}

void sofd_cm_conn_writable(struct sofd_conn *c)
{
	if (c->cm_chan)
		channel_flush(c->cm_chan);
}

static int op_create_id(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct sof_cm_create_req *r = rq->data;
	struct cm_channel *ch = get_channel(rq, r->channel);
	struct cm_id *id;

	if (!ch)
		return -ENOENT;
	if (r->ps != RDMA_PS_TCP && r->ps != RDMA_PS_UDP && r->ps != RDMA_PS_IB &&
	    r->ps != RDMA_PS_IPOIB)
		return -EPROTONOSUPPORT;
	if (r->qp_type != IBV_QPT_RC && r->qp_type != IBV_QPT_UC && r->qp_type != IBV_QPT_UD)
		return -EINVAL;
	id = id_new(ch, (uint8_t)r->ps, r->qp_type);
	if (!id)
		return -ENOMEM;
	rbuf.id.id = id->handle;
	rp->len = sizeof(rbuf.id);
	return 0;
}

static int op_destroy_id(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct sof_cm_id_req *r = rq->data;
	struct cm_id *id = get_id(rq, r->id);

	(void)rp;
	if (!id)
		return -ENOENT;
	id_destroy(id);
	return 0;
}

static int reply_query(struct cm_id *id, struct sofd_rep *rp)
{
	fill_query(id, &rbuf.query);
	rp->len = sizeof(rbuf.query);
	return 0;
}

static int op_bind(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct sof_cm_addr_req *r = rq->data;
	struct cm_id *id = get_id(rq, r->id);
	uint8_t gid[16];
	int err;

	if (!id)
		return -ENOENT;
	if (id->cstate != CMA_IDLE || id->bound)
		return -EINVAL;
	if (!family_ok(r->src.ss_family))
		return -EAFNOSUPPORT;
	addr_gid(&r->src, gid);
	if (!gid_is_any(gid) && gid_index(gid) < 0)
		return -EADDRNOTAVAIL;
	err = bind_port(id, &r->src);
	if (err)
		return err;
	id->cstate = CMA_ADDR_BOUND;
	return reply_query(id, rp);
}

static int op_resolve_addr(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct sof_cm_addr_req *r = rq->data;
	struct cm_id *id = get_id(rq, r->id);
	uint8_t dgid[16], sgid[16];
	int err = 0, idx;

	if (!id)
		return -ENOENT;
	if (id->cstate != CMA_IDLE && id->cstate != CMA_ADDR_BOUND && id->cstate != CMA_ADDR_RESOLVED)
		return -EINVAL;
	if (!family_ok(r->dst.ss_family) || (r->src.ss_family && !family_ok(r->src.ss_family)))
		return -EAFNOSUPPORT;
	addr_gid(&r->dst, dgid);
	if (gid_is_any(dgid))
		return -EINVAL;
	/* the source: as bound, as given, or as the routing table says */
	if (id->bound && !addr_is_any(&id->src))
		addr_gid(&id->src, sgid);
	else if (r->src.ss_family && !addr_is_any(&r->src))
		addr_gid(&r->src, sgid);
	else
		err = route_source(dgid, sgid);
	if (err)
		goto fail;
	idx = gid_index(sgid);
	if (idx < 0 || sof_gid_is_v4(sgid) != sof_gid_is_v4(dgid)) {
		err = -EADDRNOTAVAIL;
		goto fail;
	}
	if (!id->bound) {
		struct sockaddr_storage s;

		addr_from_gid(&s, r->dst.ss_family, sgid, id->ps, 0);
		if (r->src.ss_family && !addr_is_any(&r->src))
			s = r->src;
		err = bind_port(id, &s);
		if (err)
			goto fail;
	}
	memcpy(id->sgid, sgid, 16);
	id->sgid_index = (uint32_t)idx;
	id->have_dev = true;
	if (addr_is_any(&id->src)) {
		uint16_t port = addr_port(&id->src);

		addr_from_gid(&id->src, id->src.ss_family, sgid, id->ps, port);
	}
	memcpy(id->dgid, dgid, 16);
	id->dst = r->dst;
	id->cstate = CMA_ADDR_RESOLVED;
	cm_event(id, RDMA_CM_EVENT_ADDR_RESOLVED, 0, NULL);
	return reply_query(id, rp);
fail:
	/* asynchronous as in the kernel: the call worked, the event tells */
	cm_event(id, RDMA_CM_EVENT_ADDR_ERROR, err, NULL);
	return reply_query(id, rp);
}

static int op_resolve_route(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct sof_cm_id_req *r = rq->data;
	struct cm_id *id = get_id(rq, r->id);

	(void)rp;
	if (!id)
		return -ENOENT;
	if (id->cstate != CMA_ADDR_RESOLVED && id->cstate != CMA_ROUTE_RESOLVED)
		return -EINVAL;
	/* RoCEv2: the path is the IP route; the MTU is the port's */
	id->mtu = (uint8_t)sofd.dev.active_mtu;
	id->have_route = true;
	id->cstate = CMA_ROUTE_RESOLVED;
	cm_event(id, RDMA_CM_EVENT_ROUTE_RESOLVED, 0, NULL);
	return 0;
}

static int op_query(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct sof_cm_id_req *r = rq->data;
	struct cm_id *id = get_id(rq, r->id);

	if (!id)
		return -ENOENT;
	return reply_query(id, rp);
}

static int op_listen(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct sof_cm_id_req *r = rq->data;
	struct cm_id *id = get_id(rq, r->id);
	uint8_t gid[16];

	(void)rp;
	if (!id)
		return -ENOENT;
	if (id->cstate == CMA_LISTEN) {
		id->backlog = r->arg && r->arg < CM_MAX_BACKLOG ? r->arg : CM_MAX_BACKLOG;
		return 0;
	}
	if (id->cstate == CMA_IDLE) {
		struct sockaddr_storage any;
		int err;

		memset(&any, 0, sizeof(any));
		any.ss_family = AF_INET;
		err = bind_port(id, &any);
		if (err)
			return err;
		id->cstate = CMA_ADDR_BOUND;
	}
	if (id->cstate != CMA_ADDR_BOUND)
		return -EINVAL;
	addr_gid(&id->src, gid);
	{
		struct cm_id *o = cm_find_listener(id->ps, addr_port(&id->src), gid);
		uint8_t og[16];

		if (o) {
			addr_gid(&o->src, og);
			if (!memcmp(og, gid, 16))
				return -EADDRINUSE;
		}
	}
	id->backlog = r->arg && r->arg < CM_MAX_BACKLOG ? r->arg : CM_MAX_BACKLOG;
	id->cstate = CMA_LISTEN;
	sofd.n.cm_listeners++;
	return 0;
}

static bool param_ok(const struct sof_cm_param *p)
{
	return p->private_data_len <= SOF_CM_PDATA_MAX;
}

static int op_connect(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct sof_cm_conn_req *r = rq->data;
	struct cm_id *id = get_id(rq, r->id);

	(void)rp;
	if (!id)
		return -ENOENT;
	if (id->cstate != CMA_ROUTE_RESOLVED || !param_ok(&r->param))
		return -EINVAL;
	if (id->qp_type == IBV_QPT_UD)
		return cm_send_sidr_req(id, &r->param);
	if (!r->param.qp_num || r->param.qp_num > 0xffffff)
		return -EINVAL;
	return cm_send_req(id, &r->param);
}

static int op_accept(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct sof_cm_conn_req *r = rq->data;
	struct cm_id *id = get_id(rq, r->id);
	int err;

	(void)rp;
	if (!id)
		return -ENOENT;
	if (!param_ok(&r->param))
		return -EINVAL;
	if (id->state == CM_SIDR_REQ_RCVD)
		err = cm_send_sidr_rep(id, CMW_SIDR_OK, &r->param);
	else if (id->state == CM_REQ_RCVD || id->state == CM_MRA_REQ_SENT)
		err = cm_send_rep(id, &r->param);
	else
		return -EINVAL;
	if (!err && id->listener) {
		id->listener->pending--;
		id->listener = NULL;
	}
	return err;
}

static int op_reject(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct sof_cm_conn_req *r = rq->data;
	struct cm_id *id = get_id(rq, r->id);
	int err;

	(void)rp;
	if (!id)
		return -ENOENT;
	if (!param_ok(&r->param))
		return -EINVAL;
	if (id->state == CM_SIDR_REQ_RCVD)
		err = cm_send_sidr_rep(id, CMW_SIDR_REJECT, &r->param);
	else if (id->state == CM_REQ_RCVD || id->state == CM_MRA_REQ_SENT)
		err = cm_send_rej(id, r->reason ? (uint16_t)r->reason : CMW_REJ_CONSUMER,
				  r->param.private_data, r->param.private_data_len);
	else
		return -EINVAL;
	if (id->listener) {
		id->listener->pending--;
		id->listener = NULL;
	}
	return err;
}

static int op_disconnect(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct sof_cm_id_req *r = rq->data;
	struct cm_id *id = get_id(rq, r->id);

	(void)rp;
	if (!id)
		return -ENOENT;
	switch (id->state) {
	case CM_ESTABLISHED:
	case CM_REP_SENT:
		return cm_send_dreq(id);
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

static int op_establish(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct sof_cm_id_req *r = rq->data;
	struct cm_id *id = get_id(rq, r->id);

	(void)rp;
	if (!id)
		return -ENOENT;
	if (id->state != CM_REP_RCVD)
		return -EINVAL;
	return cm_send_rtu(id);
}

static int op_notify(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct sof_cm_id_req *r = rq->data;
	struct cm_id *id = get_id(rq, r->id);

	(void)rp;
	if (!id)
		return -ENOENT;
	/* IBA 12.9.6: a packet on the QP in REP_SENT stands for the RTU */
	if (r->arg == IBV_EVENT_COMM_EST && id->state == CM_REP_SENT) {
		cm_timer_set(id, 0);
		id->msg_valid = false;
		id->state = CM_ESTABLISHED;
		id->cstate = CMA_ESTABLISHED;
		cm_event(id, RDMA_CM_EVENT_ESTABLISHED, 0, NULL);
	}
	return 0;
}

static int op_migrate(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct sof_cm_id_req *r = rq->data;
	struct cm_id *id = get_id(rq, r->id);
	struct cm_channel *ch = get_channel(rq, r->arg);

	(void)rp;
	if (!id || !ch)
		return -ENOENT;
	sofd_list_del(&id->link);
	sofd_list_add(&ch->ids, &id->link);
	id->ch = ch;
	return 0;
}

static uint8_t ack_timeout(const struct cm_id *id)
{
	if (id->ack_timeout)
		return id->ack_timeout;
	return id->local_ack_timeout ? id->local_ack_timeout : CM_ACK_TIMEOUT;
}

static int op_init_qp_attr(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct sof_cm_id_req *r = rq->data;
	struct cm_id *id = get_id(rq, r->id);
	struct sof_cm_qp_attr *a = &rbuf.attr;
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
		if (ud) {
			a->mask |= IBV_QP_QKEY;
			a->qkey = id->qkey;
		} else {
			a->mask |= IBV_QP_ACCESS_FLAGS;
			a->qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
			if (id->qp_type == IBV_QPT_RC)
				a->qp_access_flags |= IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
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
		a->hop_limit = CM_HOP_LIMIT;
		a->traffic_class = id->tos;
		memcpy(a->dgid, id->dgid, 16);
		a->port_num = 1;
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

static int op_set_option(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct sof_cm_option_req *r = rq->data;
	struct cm_id *id = get_id(rq, r->id);
	int v = 0;

	(void)rp;
	if (!id)
		return -ENOENT;
	if (r->len > sizeof(r->value))
		return -EINVAL;
	if (r->len == sizeof(int))
		memcpy(&v, r->value, sizeof(v));
	if (r->level == RDMA_OPTION_ID) {
		switch (r->optname) {
		case RDMA_OPTION_ID_TOS:
			if (r->len != 1)
				return -EINVAL;
			id->tos = r->value[0];
			id->tos_set = true;
			return 0;
		case RDMA_OPTION_ID_REUSEADDR:
			if (r->len != sizeof(int))
				return -EINVAL;
			if (id->bound && id->cstate != CMA_IDLE && id->cstate != CMA_ADDR_BOUND)
				return -EINVAL;
			id->reuseaddr = v != 0;
			return 0;
		case RDMA_OPTION_ID_AFONLY:
			if (r->len != sizeof(int) || id->bound)
				return -EINVAL;
			id->afonly = v != 0;
			return 0;
		case RDMA_OPTION_ID_ACK_TIMEOUT:
			if (r->len != 1 || r->value[0] > 31)
				return -EINVAL;
			id->ack_timeout = r->value[0];
			return 0;
		}
	} else if (r->level == RDMA_OPTION_IB && r->optname == RDMA_OPTION_IB_PATH) {
		/* a path the user resolved: the route is what we would make */
		if (r->len < sizeof(struct ibv_path_data) || id->cstate != CMA_ADDR_RESOLVED)
			return -EINVAL;
		id->mtu = (uint8_t)sofd.dev.active_mtu;
		id->have_route = true;
		id->cstate = CMA_ROUTE_RESOLVED;
		cm_event(id, RDMA_CM_EVENT_ROUTE_RESOLVED, 0, NULL);
		return 0;
	}
	return -ENOSYS;
}

static int op_set_ece(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct sof_cm_ece *r = rq->data;
	struct cm_id *id = get_id(rq, r->id);

	(void)rp;
	if (!id)
		return -ENOENT;
	id->ece_vendor = r->vendor_id & 0xffffff;
	id->ece_options = r->options;
	return 0;
}

static int op_get_ece(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct sof_cm_id_req *r = rq->data;
	struct cm_id *id = get_id(rq, r->id);

	if (!id)
		return -ENOENT;
	memset(&rbuf.ece, 0, sizeof(rbuf.ece));
	rbuf.ece.id = id->handle;
	rbuf.ece.vendor_id = id->remote_ece_vendor;
	rbuf.ece.options = id->remote_ece_options;
	rp->len = sizeof(rbuf.ece);
	return 0;
}

/* RoCE multicast: the group is the IP multicast address (its GID); the
 * device joins the IP group when a QP attaches (ibv_attach_mcast). */
static int op_join(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct sof_cm_mcast_req *r = rq->data;
	struct cm_id *id = get_id(rq, r->id);
	struct sof_cm_event ev;
	struct cm_mc *mc;
	struct sofd_link *l;
	uint8_t mgid[16];

	(void)rp;
	if (!id)
		return -ENOENT;
	if (!family_ok(r->addr.ss_family))
		return -EAFNOSUPPORT;
	if (!id->have_dev)
		return -EINVAL;
	addr_gid(&r->addr, mgid);
	if (!sof_gid_is_mcast(mgid))
		return -EINVAL;
	for (l = id->mcs.next; l != &id->mcs; l = l->next)
		if (!memcmp(sof_container_of(l, struct cm_mc, link)->mgid, mgid, 16))
			return -EADDRINUSE;
	mc = calloc(1, sizeof(*mc));
	if (!mc)
		return -ENOMEM;
	memcpy(mc->mgid, mgid, 16);
	mc->uid = r->uid;
	sofd_list_add(&id->mcs, &mc->link);
	event_init(&ev, id, RDMA_CM_EVENT_MULTICAST_JOIN, 0, NULL);
	ev.mc_uid = r->uid;
	event_set_ah(&ev, id);
	memcpy(ev.ah_dgid, mgid, 16);
	ev.param.qp_num = 0xffffff;
	ev.param.qkey = id->qkey;
	channel_send(id->ch, &ev);
	return 0;
}

static int op_leave(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct sof_cm_mcast_req *r = rq->data;
	struct cm_id *id = get_id(rq, r->id);
	struct sofd_link *l;
	uint8_t mgid[16];

	(void)rp;
	if (!id)
		return -ENOENT;
	addr_gid(&r->addr, mgid);
	for (l = id->mcs.next; l != &id->mcs; l = l->next) {
		struct cm_mc *mc = sof_container_of(l, struct cm_mc, link);

		if (!memcmp(mc->mgid, mgid, 16)) {
			sofd_list_del(&mc->link);
			free(mc);
			return 0;
		}
	}
	return -EADDRNOTAVAIL;
}

struct cm_op {
	int (*fn)(struct sofd_req *rq, struct sofd_rep *rp);
	size_t len;
};

#define CM_OP(op, f, t) [SOF_OP_CM_##op - SOF_OP_CM_CHANNEL] = {f, sizeof(t)}
static const struct cm_op cm_ops[SOF_OP_CM_LEAVE_MCAST - SOF_OP_CM_CHANNEL + 1] = {
    [0] = {op_channel, 0},
    CM_OP(CREATE_ID, op_create_id, struct sof_cm_create_req),
    CM_OP(DESTROY_ID, op_destroy_id, struct sof_cm_id_req),
    CM_OP(BIND_ADDR, op_bind, struct sof_cm_addr_req),
    CM_OP(RESOLVE_ADDR, op_resolve_addr, struct sof_cm_addr_req),
    CM_OP(RESOLVE_ROUTE, op_resolve_route, struct sof_cm_id_req),
    CM_OP(QUERY, op_query, struct sof_cm_id_req),
    CM_OP(LISTEN, op_listen, struct sof_cm_id_req),
    CM_OP(CONNECT, op_connect, struct sof_cm_conn_req),
    CM_OP(ACCEPT, op_accept, struct sof_cm_conn_req),
    CM_OP(REJECT, op_reject, struct sof_cm_conn_req),
    CM_OP(DISCONNECT, op_disconnect, struct sof_cm_id_req),
    CM_OP(ESTABLISH, op_establish, struct sof_cm_id_req),
    CM_OP(INIT_QP_ATTR, op_init_qp_attr, struct sof_cm_id_req),
    CM_OP(MIGRATE_ID, op_migrate, struct sof_cm_id_req),
    CM_OP(NOTIFY, op_notify, struct sof_cm_id_req),
    CM_OP(SET_OPTION, op_set_option, struct sof_cm_option_req),
    CM_OP(SET_ECE, op_set_ece, struct sof_cm_ece),
    CM_OP(GET_ECE, op_get_ece, struct sof_cm_id_req),
    CM_OP(JOIN_MCAST, op_join, struct sof_cm_mcast_req),
    CM_OP(LEAVE_MCAST, op_leave, struct sof_cm_mcast_req),
};

/* Requests come copied and zero-padded to the largest (ops.c's buffer). */
int sofd_cm_op(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct cm_op *o;

	if (rq->op < SOF_OP_CM_CHANNEL || rq->op > SOF_OP_CM_LEAVE_MCAST)
		return -EOPNOTSUPP;
	o = &cm_ops[rq->op - SOF_OP_CM_CHANNEL];
	if (rq->len < o->len || rq->nfds)
		return -EINVAL;
	/* only a channel's first request may be on it; the rest come on a
	 * command connection */
	if (rq->c->cm_chan)
		return -EINVAL;
	rp->data = &rbuf;
	rp->len = 0;
	return o->fn(rq, rp);
}

int sofd_cm_init(int epfd)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &cm.timer};

	sofd_list_init(&cm.lingering);
	sofd_list_init(&cm.timers);
	cm.next_handle = sof_random32() & 0xffff;
	cm.timer.kind = SOFD_POLL_CM_TIMER;
	cm.timer.fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (cm.timer.fd < 0)
		return -errno;
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, cm.timer.fd, &ev))
		return -errno;
	cm.agent = sofd_mad_register(SOF_MGMT_CLASS_CM, CMW_CLASS_VERSION, cm_mad_recv);
	return cm.agent < 0 ? cm.agent : 0;
}
