/*
 * rsockets: datagram rsockets (SOCK_DGRAM) on rdma-core's protocol
 * (rsock.h: struct rs_ds_header, struct rs_ds_udp_header), so that they
 * talk to rdma-core's.
 *
 * A datagram rsocket is a kernel UDP socket (its fd is the rsocket's
 * number; bind, connect and names are its) and a UD QP for each local
 * source address it sends from or is reached at, each QP on an rdma_cm_id
 * of RDMA_PS_UDP bound to that address. A peer address (struct
 * sofrs_dsdest) gets the QP of the source address the kernel's routing
 * picks for it. Its address handle and QPN are learnt the first time:
 * until then datagrams go through the UDP socket behind an rs_ds_udp_header
 * (op RS_OP_DATA, our QPN); the peer's service thread answers with an
 * RS_OP_CTRL header carrying its QPN (our service thread then resolves the
 * peer's address through the RDMA CM into an address handle), resolves us
 * the same way, and forwards the datagram to its own QP, so the receiver
 * reads everything from its QPs' CQs. After that, each datagram is one UD
 * SEND of a RS_SNDLOWAT slot: the sender's address (rs_ds_header), then
 * the data; the header says what rrecvfrom reports.
 *
 * The service thread (rdma-core's udp_svc) is rs_dsvc.c's. Lock order:
 * the service's svc_lock, then the rsocket's slock or rlock, map_lock,
 * cq_lock.
 *
 * Received messages are checked before use: a GRH and at least a header,
 * a header of a known version whose length fits what arrived; what fails is
 * dropped and its slot posted again. A datagram longer than a slot or the
 * UD path MTU allows (less the header) is EMSGSIZE.
 */
#include "rsock.h"

#include <endian.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

static uint64_t ds_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static socklen_t ds_addrlen(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

/* Addresses compare by family, port and address (rdma-core compares the
 * whole sockaddr_in / sockaddr_in6). */
static bool ds_same_addr(const union sofrs_addr *a, const struct sockaddr *b)
{
	const union sofrs_addr *u = (const union sofrs_addr *)b;

	if (a->sa.sa_family != b->sa_family)
		return false;
	if (b->sa_family == AF_INET)
		return a->sin.sin_port == u->sin.sin_port &&
		       a->sin.sin_addr.s_addr == u->sin.sin_addr.s_addr;
	return a->sin6.sin6_port == u->sin6.sin6_port &&
	       !memcmp(&a->sin6.sin6_addr, &u->sin6.sin6_addr, 16);
}

void sofrs_ds_set_addr(union sofrs_addr *dst, const struct sockaddr *src)
{
	memset(dst, 0, sizeof(*dst));
	memcpy(dst, src, ds_addrlen(src));
}

void sofrs_ds_format_hdr(struct rs_ds_header *hdr, const union sofrs_addr *addr)
{
	memset(hdr, 0, sizeof(*hdr));
	if (addr->sa.sa_family == AF_INET) {
		hdr->version = 4;
		hdr->length = RS_DS_IPV4_HDR_LEN;
		hdr->port = addr->sin.sin_port;
		hdr->addr.ipv4 = addr->sin.sin_addr.s_addr;
	} else {
		hdr->version = 6;
		hdr->length = RS_DS_IPV6_HDR_LEN;
		hdr->port = addr->sin6.sin6_port;
		hdr->addr.ipv6.flowinfo = addr->sin6.sin6_flowinfo;
		memcpy(hdr->addr.ipv6.addr, &addr->sin6.sin6_addr, 16);
	}
}

/* The address a header names, cut to *len as recvfrom(2) does. */
static void ds_hdr_addr(const struct rs_ds_header *hdr, struct sockaddr *addr, socklen_t *len)
{
	union sofrs_addr sa;
	socklen_t n;

	memset(&sa, 0, sizeof(sa));
	if (hdr->version == 4) {
		sa.sin.sin_family = AF_INET;
		sa.sin.sin_port = hdr->port;
		sa.sin.sin_addr.s_addr = hdr->addr.ipv4;
		n = sizeof(sa.sin);
	} else {
		sa.sin6.sin6_family = AF_INET6;
		sa.sin6.sin6_port = hdr->port;
		sa.sin6.sin6_flowinfo = hdr->addr.ipv6.flowinfo;
		memcpy(&sa.sin6.sin6_addr, hdr->addr.ipv6.addr, 16);
		n = sizeof(sa.sin6);
	}
	memcpy(addr, &sa, *len < n ? *len : n);
	*len = n;
}

/* ---- QPs and destinations ------------------------------------------------------ */

static uint8_t ds_sgid_index(struct sofrs_dsqp *qp, const union ibv_gid *gid)
{
	struct ibv_port_attr pa;
	union ibv_gid g;

	if (ibv_query_port(qp->cm_id->verbs, qp->cm_id->port_num, &pa))
		return 0;
	for (int i = 0; i < pa.gid_tbl_len && i < 256; i++)
		if (!ibv_query_gid(qp->cm_id->verbs, qp->cm_id->port_num, i, &g) &&
		    !memcmp(&g, gid, sizeof(g)))
			return (uint8_t)i;
	return 0;
}

/* An address handle from our GID to dgid (a path record's fields);
 * Ethernet ports always take a GRH (RoCE), IB ones when it leaves the
 * subnet. */
struct ibv_ah *sofrs_ds_make_ah(struct sofrs_dsqp *qp, const union ibv_gid *sgid,
				 const union ibv_gid *dgid, uint16_t dlid, uint8_t hop_limit,
				 uint8_t tclass, uint32_t flow_label)
{
	struct ibv_ah_attr attr;
	struct ibv_port_attr pa;
	bool eth = !ibv_query_port(qp->cm_id->verbs, qp->cm_id->port_num, &pa) &&
		   pa.link_layer == IBV_LINK_LAYER_ETHERNET;

	memset(&attr, 0, sizeof(attr));
	attr.dlid = dlid;
	attr.port_num = qp->cm_id->port_num;
	if (eth || hop_limit > 1) {
		attr.is_global = 1;
		attr.grh.dgid = *dgid;
		attr.grh.sgid_index = ds_sgid_index(qp, sgid);
		attr.grh.hop_limit = hop_limit ? hop_limit : 64;
		attr.grh.traffic_class = tclass;
		attr.grh.flow_label = flow_label;
	}
	return ibv_create_ah(qp->cm_id->pd, &attr);
}

static void ds_free_qp(struct sofrs_dsqp *qp)
{
	struct rdma_cm_id *id = qp->cm_id;

	if (qp->dest.ah)
		ibv_destroy_ah(qp->dest.ah);
	if (qp->smr)
		ibv_dereg_mr(qp->smr);
	if (qp->rmr)
		ibv_dereg_mr(qp->rmr);
	if (id) {
		if (id->recv_cq && qp->unack_cqe)
			ibv_ack_cq_events(id->recv_cq, qp->unack_cqe);
		if (id->qp)
			rdma_destroy_qp(id);
		if (id->recv_cq)
			ibv_destroy_cq(id->recv_cq);
		if (id->recv_cq_channel)
			ibv_destroy_comp_channel(id->recv_cq_channel);
		id->recv_cq = id->send_cq = NULL;
		id->recv_cq_channel = id->send_cq_channel = NULL;
		rdma_destroy_id(id);
	}
	free(qp->rbuf);
	free(qp);
}

static int ds_post_recv(struct sofrs *rs, struct sofrs_dsqp *qp, uint32_t offset)
{
	struct ibv_sge sge[2] = {
		{ .addr = (uintptr_t)qp->rbuf + rs->rbuf_size, .length = sizeof(struct ibv_grh),
		  .lkey = qp->rmr->lkey },
		{ .addr = (uintptr_t)qp->rbuf + offset, .length = RS_SNDLOWAT, .lkey = qp->rmr->lkey },
	};
	struct ibv_recv_wr wr = { .wr_id = RS_WR_ID_FLAG_RECV | offset, .sg_list = sge,
				  .num_sge = 2 },
			   *bad;

	return sofcm_ret(-ibv_post_recv(qp->cm_id->qp, &wr, &bad));
}

/* The QP of a local address: a UD QP on an id bound there, its CQ on a
 * non-blocking channel in the rsocket's epoll set (armed: a datagram
 * wakes a poller), a receive in each slot. Needs map_lock. */
static int ds_create_qp(struct sofrs *rs, const union sofrs_addr *src, struct sofrs_dsqp **out)
{
	struct sofrs_dsqp *qp = calloc(1, sizeof(*qp));
	struct ibv_qp_init_attr attr;
	struct epoll_event ev = { .events = EPOLLIN };
	struct ibv_port_attr pa;
	struct rdma_cm_id *id;
	uint32_t mtu;
	int err;

	if (!qp)
		return sofcm_err(ENOMEM);
	qp->rs = rs;
	sofrs_ds_format_hdr(&qp->hdr, src);
	if (rdma_create_id(NULL, &qp->cm_id, qp, RDMA_PS_UDP) ||
	    rdma_bind_addr(qp->cm_id, (struct sockaddr *)&src->sa))
		goto err;
	id = qp->cm_id;
	/* a loopback address binds no device: resolving it to itself does */
	if (!id->verbs && rdma_resolve_addr(id, NULL, (struct sockaddr *)&src->sa,
					    RS_DS_RESOLVE_MS))
		goto err;
	if (!id->verbs) {
		errno = ENODEV;
		goto err;
	}
	qp->rbuf = sofrs_page_alloc(rs->rbuf_size + sizeof(struct ibv_grh));
	if (!qp->rbuf) {
		errno = ENOMEM;
		goto err;
	}
	qp->smr = rdma_reg_msgs(id, rs->sbuf, rs->sbuf_size);
	qp->rmr = rdma_reg_msgs(id, qp->rbuf, rs->rbuf_size + sizeof(struct ibv_grh));
	if (!qp->smr || !qp->rmr)
		goto err;
	id->recv_cq_channel = ibv_create_comp_channel(id->verbs);
	if (!id->recv_cq_channel)
		goto err;
	if (fcntl(id->recv_cq_channel->fd, F_SETFL,
		  fcntl(id->recv_cq_channel->fd, F_GETFL) | O_NONBLOCK))
		goto err;
	id->recv_cq = ibv_create_cq(id->verbs, rs->sq_size + rs->rq_size, id,
				    id->recv_cq_channel, 0);
	if (!id->recv_cq)
		goto err;
	id->send_cq_channel = id->recv_cq_channel;
	id->send_cq = id->recv_cq;
	memset(&attr, 0, sizeof(attr));
	attr.qp_context = qp;
	attr.send_cq = id->send_cq;
	attr.recv_cq = id->recv_cq;
	attr.qp_type = IBV_QPT_UD;
	attr.sq_sig_all = 1;
	attr.cap.max_send_wr = rs->sq_size;
	attr.cap.max_recv_wr = rs->rq_size;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 2;
	attr.cap.max_inline_data = rs->sq_inline;
	if (rdma_create_qp(id, NULL, &attr))
		goto err;
	rs->sq_inline = attr.cap.max_inline_data;

	/* the largest datagram: a slot, and a UD message is one packet */
	mtu = RS_SNDLOWAT;
	if (!ibv_query_port(id->verbs, id->port_num, &pa) && (128u << pa.active_mtu) < mtu)
		mtu = 128u << pa.active_mtu;
	qp->max_data = mtu - qp->hdr.length;

	/* itself, where the service thread forwards */
	sofrs_ds_set_addr(&qp->dest.addr, &src->sa);
	qp->dest.qp = qp;
	qp->dest.qpn = id->qp->qp_num;
	qp->dest.ah = sofrs_ds_make_ah(qp, &id->route.addr.addr.ibaddr.sgid,
				 &id->route.addr.addr.ibaddr.sgid, 0, 1, 0, 0);
	if (!qp->dest.ah)
		goto err;

	ibv_req_notify_cq(id->recv_cq, 0);
	qp->cq_armed = true;
	ev.data.ptr = qp;
	if (epoll_ctl(rs->epfd, EPOLL_CTL_ADD, id->recv_cq_channel->fd, &ev))
		goto err;
	for (uint32_t i = 0; i < rs->rq_size; i++)
		if (ds_post_recv(rs, qp, i * RS_SNDLOWAT))
			goto err;
	pthread_mutex_lock(&rs->cq_lock);
	qp->next = rs->qp_list;
	rs->qp_list = qp;
	pthread_mutex_unlock(&rs->cq_lock);
	*out = qp;
	return 0;

err:
	err = errno ? errno : EINVAL;
	if (qp->cm_id && qp->cm_id->recv_cq_channel)
		epoll_ctl(rs->epfd, EPOLL_CTL_DEL, qp->cm_id->recv_cq_channel->fd, NULL);
	ds_free_qp(qp);
	return sofcm_err(err);
}

/* The local address a datagram to dst leaves from: the socket's, or when
 * it is bound to a wildcard, what routing picks, with the socket's port. */
static int ds_src_addr(struct sofrs *rs, const struct sockaddr *dst, union sofrs_addr *src)
{
	socklen_t len = sizeof(*src);
	union sofrs_addr r;
	uint16_t port;
	int s, ret;

	memset(src, 0, sizeof(*src));
	if (getsockname(rs->udp_sock, &src->sa, &len))
		return -1;
	if (!src->sin.sin_port) {
		/* bound now, as the kernel would at the first send: the port
		 * goes in every header (sin6_port is where sin_port is) */
		len = ds_addrlen(&src->sa);
		if (bind(rs->udp_sock, &src->sa, len) ||
		    getsockname(rs->udp_sock, &src->sa, &len))
			return -1;
	}
	if (src->sa.sa_family == AF_INET ? src->sin.sin_addr.s_addr != htonl(INADDR_ANY)
					 : !!memcmp(&src->sin6.sin6_addr, &in6addr_any, 16))
		return 0;
	port = src->sin.sin_port; /* sin6_port is at the same place */
	s = socket(dst->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -1;
	ret = connect(s, dst, ds_addrlen(dst));
	len = sizeof(r);
	if (!ret)
		ret = getsockname(s, &r.sa, &len);
	close(s);
	if (ret)
		return -1;
	*src = r;
	src->sin.sin_port = port;
	return 0;
}

/* The destination of a peer address: found, or made with the QP of the
 * source address that reaches it (made too when new). */
int sofrs_ds_get_dest(struct sofrs *rs, const struct sockaddr *addr, struct sofrs_dsdest **out)
{
	struct sofrs_dsdest *d;
	struct sofrs_dsqp *qp;
	union sofrs_addr src;
	int ret = 0;

	pthread_mutex_lock(&rs->map_lock);
	for (d = rs->dest_list; d; d = d->next)
		if (ds_same_addr(&d->addr, addr))
			goto found;
	if (ds_src_addr(rs, addr, &src)) {
		ret = -1;
		goto out;
	}
	for (qp = rs->qp_list; qp; qp = qp->next)
		if (ds_same_addr(&qp->dest.addr, &src.sa))
			break;
	if (!qp && ds_create_qp(rs, &src, &qp)) {
		ret = -1;
		goto out;
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		ret = sofcm_err(ENOMEM);
		goto out;
	}
	sofrs_ds_set_addr(&d->addr, addr);
	d->qp = qp;
	d->next = rs->dest_list;
	rs->dest_list = d;
found:
	*out = d;
out:
	pthread_mutex_unlock(&rs->map_lock);
	return ret;
}

/* ---- the CQs ----------------------------------------------------------------------- */

static bool ds_valid_recv(struct sofrs *rs, struct sofrs_dsqp *qp, const struct ibv_wc *wc)
{
	uint32_t off = (uint32_t)wc->wr_id;
	const struct rs_ds_header *hdr;

	if (wc->status != IBV_WC_SUCCESS || off % RS_SNDLOWAT || off >= rs->rbuf_size ||
	    wc->byte_len < sizeof(struct ibv_grh) + RS_DS_IPV4_HDR_LEN ||
	    wc->byte_len > sizeof(struct ibv_grh) + RS_SNDLOWAT)
		return false;
	hdr = (const struct rs_ds_header *)(qp->rbuf + off);
	if (!((hdr->version == 4 && hdr->length == RS_DS_IPV4_HDR_LEN) ||
	      (hdr->version == 6 && hdr->length == RS_DS_IPV6_HDR_LEN)))
		return false;
	return wc->byte_len - sizeof(struct ibv_grh) >= hdr->length;
}

/* Poll every QP's CQ: received datagrams into the ring while it has room
 * (others dropped, their slots posted again), sent slots back to the
 * free list. Needs cq_lock. */
static void ds_poll_cqs(struct sofrs *rs)
{
	bool more = true;

	while (more) {
		more = false;
		for (struct sofrs_dsqp *qp = rs->qp_list; qp; qp = qp->next) {
			struct ibv_wc wc;

			if (ibv_poll_cq(qp->cm_id->recv_cq, 1, &wc) <= 0)
				continue;
			more = true;
			if (!(wc.wr_id & RS_WR_ID_FLAG_RECV)) {
				void **slot = (void **)(rs->sbuf + (uint32_t)wc.wr_id);

				*slot = rs->smsg_free;
				rs->smsg_free = slot;
				rs->sqe_avail++;
			} else if (rs->rqe_avail && ds_valid_recv(rs, qp, &wc)) {
				struct sofrs_dsmsg *m = &rs->dmsg[rs->rmsg_tail];

				rs->rqe_avail--;
				m->qp = qp;
				m->offset = (uint32_t)wc.wr_id;
				m->length = wc.byte_len - (uint32_t)sizeof(struct ibv_grh);
				m->hlen = ((struct rs_ds_header *)(qp->rbuf + m->offset))->length;
				rs->rmsg_tail = rs->rmsg_tail == rs->rq_size ? 0 : rs->rmsg_tail + 1;
			} else if (wc.status != IBV_WC_WR_FLUSH_ERR &&
				   (uint32_t)wc.wr_id % RS_SNDLOWAT == 0 &&
				   (uint32_t)wc.wr_id < rs->rbuf_size) {
				ds_post_recv(rs, qp, (uint32_t)wc.wr_id);
			}
		}
	}
}

static void ds_arm(struct sofrs *rs)
{
	for (struct sofrs_dsqp *qp = rs->qp_list; qp; qp = qp->next)
		if (!qp->cq_armed) {
			ibv_req_notify_cq(qp->cm_id->recv_cq, 0);
			qp->cq_armed = true;
		}
}

/* Read the CQ events the epoll set reports (channels non-blocking). */
void sofrs_ds_wait_done(struct sofrs *rs)
{
	struct epoll_event ev[8];
	int n = epoll_wait(rs->epfd, ev, 8, 0);

	pthread_mutex_lock(&rs->cq_lock);
	for (int i = 0; i < n; i++) {
		struct sofrs_dsqp *qp = ev[i].data.ptr;
		struct ibv_cq *cq;
		void *ctx;

		if (ibv_get_cq_event(qp->cm_id->recv_cq_channel, &cq, &ctx))
			continue;
		qp->cq_armed = false;
		if (++qp->unack_cqe >= 64) {
			ibv_ack_cq_events(qp->cm_id->recv_cq, qp->unack_cqe);
			qp->unack_cqe = 0;
		}
	}
	pthread_mutex_unlock(&rs->cq_lock);
}

static bool ds_have_rdata(struct sofrs *rs)
{
	return rs->rmsg_head != rs->rmsg_tail || !(rs->state & rs_readable);
}

static bool ds_can_send(struct sofrs *rs) { return rs->sqe_avail || !(rs->state & rs_writable); }

static bool ds_all_sends_done(struct sofrs *rs) { return rs->sqe_avail == rs->sq_size; }

/* Poll until test holds; unless nonblock, poll sofrs_poll_us, then sleep on
 * the epoll set of the CQ channels (500 ms steps: a close is seen). */
static int ds_process(struct sofrs *rs, bool nonblock, bool (*test)(struct sofrs *rs))
{
	uint64_t start = 0;
	struct pollfd pfd = { .fd = rs->epfd, .events = POLLIN };

	pthread_mutex_lock(&rs->cq_lock);
	for (;;) {
		ds_poll_cqs(rs);
		if (test(rs))
			break;
		if (nonblock || atomic_load(&rs->closing)) {
			pthread_mutex_unlock(&rs->cq_lock);
			return sofcm_err(nonblock ? EWOULDBLOCK : EBADF);
		}
		if (!start)
			start = ds_now_us();
		if (ds_now_us() - start < sofrs_poll_us) {
			pthread_mutex_unlock(&rs->cq_lock);
			sched_yield();
			pthread_mutex_lock(&rs->cq_lock);
			continue;
		}
		ds_arm(rs);
		ds_poll_cqs(rs); /* a completion may have raced the arming */
		if (test(rs))
			break;
		pthread_mutex_unlock(&rs->cq_lock);
		sofv_engine_idle();
		if (poll(&pfd, 1, 500) > 0)
			sofrs_ds_wait_done(rs);
		pthread_mutex_lock(&rs->cq_lock);
	}
	pthread_mutex_unlock(&rs->cq_lock);
	return 0;
}

/* ---- life -------------------------------------------------------------------------- */

int sofrs_ds_init(struct sofrs *rs, int domain)
{
	rs->type = SOCK_DGRAM;
	rs->udp_sock = socket(domain, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (rs->udp_sock < 0)
		return -1;
	rs->epfd = epoll_create1(EPOLL_CLOEXEC);
	return rs->epfd < 0 ? -1 : 0;
}

/* Sizes (rdma-core's ds_set_qp_size: a slot of RS_SNDLOWAT per WQE and
 * the buffers a whole number of slots), the send slots, the ring, and the
 * service thread. Needs slock. */
static int ds_init_ep(struct sofrs *rs)
{
	uint8_t *p;

	if (rs->state != rs_init)
		return 0;
	if (rs->rq_size > rs->rbuf_size / RS_SNDLOWAT)
		rs->rq_size = (uint16_t)(rs->rbuf_size / RS_SNDLOWAT);
	else
		rs->rbuf_size = rs->rq_size * RS_SNDLOWAT;
	if (rs->sq_size > rs->sbuf_size / RS_SNDLOWAT)
		rs->sq_size = (uint16_t)(rs->sbuf_size / RS_SNDLOWAT);
	else
		rs->sbuf_size = rs->sq_size * RS_SNDLOWAT;
	if (!rs->sq_size || !rs->rq_size)
		return sofcm_err(EINVAL);
	rs->sbuf = sofrs_page_alloc(rs->sbuf_size);
	rs->dmsg = calloc((size_t)rs->rq_size + 1, sizeof(*rs->dmsg));
	if (!rs->sbuf || !rs->dmsg)
		return sofcm_err(ENOMEM);
	rs->smsg_free = NULL;
	for (p = rs->sbuf + rs->sbuf_size - RS_SNDLOWAT; p >= rs->sbuf; p -= RS_SNDLOWAT) {
		*(void **)p = rs->smsg_free;
		rs->smsg_free = p;
	}
	rs->sqe_avail = rs->sq_size;
	rs->rqe_avail = rs->rq_size;
	if (sofrs_svc_add(rs))
		return -1;
	rs->state = rs_readable | rs_writable;
	return 0;
}

int sofrs_ds_bind(struct sofrs *rs, const struct sockaddr *addr, socklen_t addrlen)
{
	int ret;

	pthread_mutex_lock(&rs->slock);
	ret = ds_init_ep(rs);
	pthread_mutex_unlock(&rs->slock);
	return ret ? ret : bind(rs->udp_sock, addr, addrlen);
}

int sofrs_ds_connect(struct sofrs *rs, const struct sockaddr *addr, socklen_t addrlen)
{
	int ret;

	pthread_mutex_lock(&rs->slock);
	ret = ds_init_ep(rs);
	if (!ret)
		ret = connect(rs->udp_sock, addr, addrlen);
	if (!ret)
		ret = sofrs_ds_get_dest(rs, addr, &rs->conn_dest);
	pthread_mutex_unlock(&rs->slock);
	return ret;
}

/* Out of the service thread, no more calls in, what was sent gone (1 s at
 * most: a UD send completes on its own). */
void sofrs_ds_shutdown(struct sofrs *rs)
{
	uint64_t end = ds_now_us() + 1000000;

	if (rs->in_svc)
		sofrs_svc_remove(rs);
	pthread_mutex_lock(&rs->cq_lock);
	rs->state &= ~(rs_readable | rs_writable);
	pthread_mutex_unlock(&rs->cq_lock);
	while (rs->sbuf && ds_now_us() < end) {
		pthread_mutex_lock(&rs->cq_lock);
		ds_poll_cqs(rs);
		pthread_mutex_unlock(&rs->cq_lock);
		if (ds_all_sends_done(rs))
			break;
		usleep(100);
	}
}

void sofrs_ds_free(struct sofrs *rs)
{
	struct sofrs_dsdest *d;
	struct sofrs_dsqp *qp;

	if (rs->in_svc)
		sofrs_svc_remove(rs);
	while ((d = rs->dest_list)) {
		rs->dest_list = d->next;
		if (d->ah)
			ibv_destroy_ah(d->ah);
		free(d);
	}
	while ((qp = rs->qp_list)) {
		rs->qp_list = qp->next;
		ds_free_qp(qp);
	}
	if (rs->udp_sock >= 0)
		close(rs->udp_sock);
	if (rs->epfd >= 0)
		close(rs->epfd);
	free(rs->dmsg);
}

/* ---- send ---------------------------------------------------------------------------- */

static size_t ds_iov_len(const struct iovec *iov, int iovcnt)
{
	size_t len = 0;

	for (int i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	return len;
}

/* Through the UDP socket, behind an rs_ds_udp_header of op (no data for
 * RS_OP_CTRL). Needs slock. */
ssize_t sofrs_ds_send_udp(struct sofrs *rs, struct sofrs_dsdest *dest, const struct iovec *iov,
			   int iovcnt, int flags, uint8_t op)
{
	struct sofrs_dsqp *qp = dest->qp;
	struct rs_ds_udp_header hdr;
	struct iovec miov[9];
	struct msghdr msg;
	ssize_t ret;

	if (iovcnt > 8)
		return sofcm_err(ENOTSUP);
	memset(&hdr, 0, sizeof(hdr));
	hdr.tag = htobe32(RS_DS_UDP_TAG);
	hdr.version = qp->hdr.version;
	hdr.op = op;
	hdr.qpn = htobe32(qp->cm_id->qp->qp_num & 0xFFFFFF);
	if (qp->hdr.version == 4) {
		hdr.length = RS_DS_UDP_IPV4_HDR_LEN;
		hdr.addr.ipv4 = qp->hdr.addr.ipv4;
	} else {
		hdr.length = RS_DS_UDP_IPV6_HDR_LEN;
		memcpy(hdr.addr.ipv6, qp->hdr.addr.ipv6.addr, 16);
	}
	miov[0].iov_base = &hdr;
	miov[0].iov_len = hdr.length;
	for (int i = 0; i < iovcnt; i++)
		miov[i + 1] = iov[i];
	memset(&msg, 0, sizeof(msg));
	msg.msg_name = &dest->addr;
	msg.msg_namelen = ds_addrlen(&dest->addr.sa);
	msg.msg_iov = miov;
	msg.msg_iovlen = (size_t)iovcnt + 1;
	ret = sendmsg(rs->udp_sock, &msg, flags & (MSG_DONTWAIT | MSG_CONFIRM));
	return ret > 0 ? ret - hdr.length : ret;
}

/* One UD SEND of a slot to dest: hdr, then the data. Needs slock. */
int sofrs_ds_post_slot(struct sofrs *rs, struct sofrs_dsdest *dest, const struct rs_ds_header *hdr,
			const struct iovec *iov, int iovcnt, size_t len, bool nonblock)
{
	struct sofrs_dsqp *qp = dest->qp;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	uint8_t *slot, *p;
	int ret;

	if (ds_process(rs, nonblock, ds_can_send))
		return -1;
	if (!(rs->state & rs_writable))
		return sofcm_err(EPIPE);
	pthread_mutex_lock(&rs->cq_lock);
	slot = rs->smsg_free;
	rs->smsg_free = *(void **)slot;
	rs->sqe_avail--;
	pthread_mutex_unlock(&rs->cq_lock);
	memcpy(slot, hdr, hdr->length);
	p = slot + hdr->length;
	for (int i = 0; i < iovcnt; i++) {
		memcpy(p, iov[i].iov_base, iov[i].iov_len);
		p += iov[i].iov_len;
	}
	sge.addr = (uintptr_t)slot;
	sge.length = (uint32_t)(hdr->length + len);
	sge.lkey = qp->smr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = (uint64_t)(slot - rs->sbuf);
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = sge.length <= rs->sq_inline ? IBV_SEND_INLINE : 0;
	wr.wr.ud.ah = dest->ah;
	wr.wr.ud.remote_qpn = dest->qpn;
	wr.wr.ud.remote_qkey = RDMA_UDP_QKEY;
	ret = ibv_post_send(qp->cm_id->qp, &wr, &bad);
	if (ret) {
		pthread_mutex_lock(&rs->cq_lock);
		*(void **)slot = rs->smsg_free;
		rs->smsg_free = slot;
		rs->sqe_avail++;
		pthread_mutex_unlock(&rs->cq_lock);
		return sofcm_err(ret);
	}
	return 0;
}

ssize_t sofrs_ds_sendv(struct sofrs *rs, const struct iovec *iov, int iovcnt, int flags,
		       const struct sockaddr *to, socklen_t tolen)
{
	size_t len = ds_iov_len(iov, iovcnt);
	struct sofrs_dsdest *dest;
	ssize_t ret;

	if (to && (tolen < sizeof(struct sockaddr_in) ||
		   (to->sa_family != AF_INET && to->sa_family != AF_INET6) ||
		   tolen < ds_addrlen(to)))
		return sofcm_err(EINVAL);
	pthread_mutex_lock(&rs->slock);
	ret = ds_init_ep(rs);
	if (ret)
		goto out;
	if (to) {
		if (!rs->conn_dest || !ds_same_addr(&rs->conn_dest->addr, to)) {
			ret = sofrs_ds_get_dest(rs, to, &dest);
			if (ret)
				goto out;
		} else {
			dest = rs->conn_dest;
		}
	} else if (!(dest = rs->conn_dest)) {
		ret = sofcm_err(EDESTADDRREQ);
		goto out;
	}
	if (len > dest->qp->max_data) {
		ret = sofcm_err(EMSGSIZE);
		goto out;
	}
	if (!dest->ah)
		ret = sofrs_ds_send_udp(rs, dest, iov, iovcnt, flags, RS_OP_DATA);
	else if (!(ret = sofrs_ds_post_slot(rs, dest, &dest->qp->hdr, iov, iovcnt, len,
				      sofrs_nonblocking(rs, flags))))
		ret = (ssize_t)len;
out:
	pthread_mutex_unlock(&rs->slock);
	return ret;
}

/* ---- receive ------------------------------------------------------------------------- */

ssize_t sofrs_ds_recvv(struct sofrs *rs, const struct iovec *iov, int iovcnt, int flags,
		       struct sockaddr *from, socklen_t *fromlen)
{
	const struct rs_ds_header *hdr;
	struct sofrs_dsmsg *m;
	size_t len, done = 0;
	const uint8_t *data;

	pthread_mutex_lock(&rs->rlock);
	if (rs->state == rs_init) {
		/* nothing can come before a bind or a send: wait as UDP does */
		pthread_mutex_lock(&rs->slock);
		len = (size_t)ds_init_ep(rs);
		pthread_mutex_unlock(&rs->slock);
		if (len) {
			pthread_mutex_unlock(&rs->rlock);
			return -1;
		}
	}
	if (ds_process(rs, sofrs_nonblocking(rs, flags), ds_have_rdata)) {
		pthread_mutex_unlock(&rs->rlock);
		return -1;
	}
	pthread_mutex_lock(&rs->cq_lock);
	if (rs->rmsg_head == rs->rmsg_tail) {
		pthread_mutex_unlock(&rs->cq_lock);
		pthread_mutex_unlock(&rs->rlock);
		return sofcm_err(EBADF); /* closed while waiting */
	}
	m = &rs->dmsg[rs->rmsg_head];
	pthread_mutex_unlock(&rs->cq_lock);
	hdr = (const struct rs_ds_header *)(m->qp->rbuf + m->offset);
	data = (const uint8_t *)hdr + m->hlen;
	len = m->length - m->hlen;
	for (int i = 0; i < iovcnt && done < len; i++) {
		size_t n = len - done < iov[i].iov_len ? len - done : iov[i].iov_len;

		memcpy(iov[i].iov_base, data + done, n);
		done += n;
	}
	if (from && fromlen)
		ds_hdr_addr(hdr, from, fromlen);
	if (flags & MSG_TRUNC)
		done = len; /* as Linux UDP: the datagram's real length */
	if (!(flags & MSG_PEEK)) {
		pthread_mutex_lock(&rs->cq_lock);
		ds_post_recv(rs, m->qp, m->offset);
		rs->rmsg_head = rs->rmsg_head == rs->rq_size ? 0 : rs->rmsg_head + 1;
		rs->rqe_avail++;
		pthread_mutex_unlock(&rs->cq_lock);
	}
	pthread_mutex_unlock(&rs->rlock);
	return (ssize_t)done;
}

/* rpoll: readable with a datagram queued, writable with a free slot (or
 * before the first send); armed CQs when rpoll is about to sleep. */
short sofrs_ds_poll(struct sofrs *rs, short events, bool arm)
{
	short revents = 0;

	if (rs->state == rs_init)
		return events & POLLOUT;
	pthread_mutex_lock(&rs->cq_lock);
	ds_poll_cqs(rs);
	if (arm) {
		ds_arm(rs);
		ds_poll_cqs(rs);
	}
	if ((events & POLLIN) && rs->rmsg_head != rs->rmsg_tail)
		revents |= POLLIN;
	if ((events & POLLOUT) && rs->sqe_avail)
		revents |= POLLOUT;
	pthread_mutex_unlock(&rs->cq_lock);
	return revents;
}

