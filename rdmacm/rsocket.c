/*
 * rsockets (rdma/rsocket.h): the socket calls of a stream rsocket — its
 * life (rsocket, rbind, rconnect, rshutdown, rclose), names, options and
 * flags. Listeners are rs_listen.c's, the data path rs_data.c and
 * rs_iomap.c, rpoll/rselect rs_poll.c; the objects and the wire protocol
 * rsock.h.
 *
 * An rsocket is a synchronous rdma_cm_id (its own event channel); its
 * number is that channel's fd (an accepted one's a copy of it), as in
 * rdma-core, so librspreload can map a program's descriptor to it.
 * rconnect is rs_conn.c's. A datagram rsocket (rs_dgram.c) is
 * numbered by its kernel UDP socket, as in rdma-core; the calls here pass
 * it on there.
 */
#include "rsock.h"
#include "sof_peer.h"
#include "sof_util.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Defaults as rdma-core's but for the buffers, overridden by files of
 * /etc/rdma/rsocket. The receive buffer is the sender's window (half of
 * it granted at a time, rs_data.c): rdma-core's 128 KiB suits a NIC's
 * round trip of a few microseconds, not one through software engines on
 * both hosts, where it bounded a stream to a fraction of kernel TCP. */
static uint16_t def_sqsize = 384, def_rqsize = 384, def_inline = 64, def_iomap_size;
static uint32_t def_mem = 1 << 20, def_wmem = 1 << 20;

uint32_t sofrs_poll_us = 50;

static pthread_once_t rs_conf_once = PTHREAD_ONCE_INIT;

static void rs_conf_read(const char *name, uint32_t *val)
{
	char path[128];
	unsigned int v;
	FILE *f;

	snprintf(path, sizeof(path), "/etc/rdma/rsocket/%s", name);
	f = fopen(path, "r");
	if (!f)
		return;
	if (fscanf(f, "%u", &v) == 1)
		*val = v;
	fclose(f);
}

static void rs_configure(void)
{
	uint32_t v;

	v = def_sqsize;
	rs_conf_read("sqsize_default", &v);
	def_sqsize = (uint16_t)v;
	v = def_rqsize;
	rs_conf_read("rqsize_default", &v);
	def_rqsize = (uint16_t)v;
	v = def_inline;
	rs_conf_read("inline_default", &v);
	def_inline = (uint16_t)v;
	v = def_iomap_size;
	rs_conf_read("iomap_size", &v);
	def_iomap_size = (uint16_t)(v > 256 ? 256 : v);
	rs_conf_read("mem_default", &def_mem);
	if (def_mem < RS_SNDLOWAT * 2)
		def_mem = RS_SNDLOWAT * 2;
	rs_conf_read("polling_time", &sofrs_poll_us);
	rs_conf_read("wmem_default", &def_wmem);
	if (def_wmem < RS_SNDLOWAT * 2)
		def_wmem = RS_SNDLOWAT * 2;
}

/* ---- the table of rsockets ---------------------------------------------------- */

static pthread_rwlock_t rs_map_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct sofrs **rs_map;
static int rs_map_len;

struct sofrs *sofrs_lookup(int index)
{
	struct sofrs *rs = NULL;

	pthread_rwlock_rdlock(&rs_map_lock);
	if (index >= 0 && index < rs_map_len)
		rs = rs_map[index];
	pthread_rwlock_unlock(&rs_map_lock);
	return rs;
}

_Thread_local int sofrs_internal;

struct sofrs *sofrs_get(int index)
{
	struct sofrs *rs = NULL;

	pthread_rwlock_rdlock(&rs_map_lock);
	if (index >= 0 && index < rs_map_len)
		rs = rs_map[index];
	if (rs) {
		atomic_fetch_add(&rs->users, 1);
		sofrs_internal++;
	}
	pthread_rwlock_unlock(&rs_map_lock);
	return rs;
}

void sofrs_put(struct sofrs *rs)
{
	sofrs_internal--;
	atomic_fetch_sub(&rs->users, 1);
}

int sofrs_insert(struct sofrs *rs, int index)
{
	int ret = 0;

	pthread_rwlock_wrlock(&rs_map_lock);
	if (index >= rs_map_len) {
		int len = index + 1024;
		struct sofrs **map = realloc(rs_map, sizeof(*map) * (size_t)len);

		if (!map) {
			ret = sofcm_err(ENOMEM);
			goto out;
		}
		memset(map + rs_map_len, 0, sizeof(*map) * (size_t)(len - rs_map_len));
		rs_map = map;
		rs_map_len = len;
	}
	rs_map[index] = rs;
	rs->index = index;
out:
	pthread_rwlock_unlock(&rs_map_lock);
	return ret;
}

void sofrs_remove(struct sofrs *rs)
{
	pthread_rwlock_wrlock(&rs_map_lock);
	if (rs->index >= 0 && rs->index < rs_map_len && rs_map[rs->index] == rs)
		rs_map[rs->index] = NULL;
	pthread_rwlock_unlock(&rs_map_lock);
}

/* ---- objects ----------------------------------------------------------------- */

/* A new rsocket; a listener's settings pass to what it accepts. */
struct sofrs *sofrs_alloc(const struct sofrs *parent)
{
	struct sofrs *rs = calloc(1, sizeof(*rs));

	if (!rs)
		return NULL;
	rs->type = SOCK_STREAM;
	rs->index = -1;
	if (parent) {
		rs->sbuf_size = parent->sbuf_size;
		rs->rbuf_size = parent->rbuf_size;
		rs->sq_inline = parent->sq_inline;
		rs->sq_size = parent->sq_size;
		rs->rq_size = parent->rq_size;
		rs->target_iomap_size = parent->target_iomap_size;
		rs->so_opts = parent->so_opts;
		rs->tcp_opts = parent->tcp_opts;
		rs->keepalive_time = parent->keepalive_time;
	} else {
		rs->sbuf_size = def_wmem;
		rs->rbuf_size = def_mem;
		rs->sq_inline = def_inline;
		rs->sq_size = def_sqsize;
		rs->rq_size = def_rqsize;
		rs->target_iomap_size = def_iomap_size;
		rs->keepalive_time = sofrs_keepalive_default();
	}
	rs->conn_efd = -1;
	rs->ctrl_max_seqno = RS_QP_CTRL_SIZE;
	rs->accept_queue[0] = rs->accept_queue[1] = -1;
	rs->index_fd = -1;
	rs->udp_sock = rs->epfd = -1;
	pthread_mutex_init(&rs->slock, NULL);
	pthread_mutex_init(&rs->rlock, NULL);
	pthread_mutex_init(&rs->cq_lock, NULL);
	pthread_mutex_init(&rs->map_lock, NULL);
	return rs;
}

void sofrs_free(struct sofrs *rs)
{
	struct rdma_cm_id *id = rs->cm_id;

	if (rs->index >= 0)
		sofrs_remove(rs);
	if (rs->index_fd >= 0)
		close(rs->index_fd);
	if (rs->ka_on)
		sofrs_keepalive(rs, false);
	if (rs->conn_efd >= 0)
		close(rs->conn_efd);
	if (rs->type == SOCK_DGRAM)
		sofrs_ds_free(rs);
	if (id) {
		sofrs_free_iomaps(rs);
		if (id->event) {
			rdma_ack_cm_event(id->event);
			id->event = NULL;
		}
	}
	if (rs->smr)
		ibv_dereg_mr(rs->smr);
	if (rs->rmr)
		ibv_dereg_mr(rs->rmr);
	if (rs->target_mr)
		ibv_dereg_mr(rs->target_mr);
	/* the CQ's events acked first: destroying it waits for that */
	if (id && id->recv_cq && rs->unack_cqe)
		ibv_ack_cq_events(id->recv_cq, rs->unack_cqe);
	if (id && id->qp)
		rdma_destroy_qp(id); /* and the CQ and channel, as rdma-core's */
	if (id && id->recv_cq) {
		ibv_destroy_cq(id->recv_cq);
		id->recv_cq = id->send_cq = NULL;
	}
	if (id && id->recv_cq_channel) {
		ibv_destroy_comp_channel(id->recv_cq_channel);
		id->recv_cq_channel = id->send_cq_channel = NULL;
	}
	if (id)
		rdma_destroy_id(id);
	free(rs->sbuf);
	free(rs->rbuf);
	free(rs->target_buffer_list);
	free(rs->rmsg);
	free(rs->route);
	pthread_mutex_destroy(&rs->slock);
	pthread_mutex_destroy(&rs->rlock);
	pthread_mutex_destroy(&rs->cq_lock);
	pthread_mutex_destroy(&rs->map_lock);
	free(rs);
}

static int rs_set_fd_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* The QP, its CQ (one for both queues, on a non-blocking channel), the
 * buffers, and a receive for each credit. -1/errno. */
int sofrs_create_ep(struct sofrs *rs)
{
	struct rdma_cm_id *id = rs->cm_id;
	struct sofcm_id *idp = sofcm_id(id);
	struct ibv_qp_init_attr attr;
	int max = RS_QP_MAX_SIZE, i;

	if (idp->dev && idp->dev->max_qp_wr && idp->dev->max_qp_wr < max)
		max = idp->dev->max_qp_wr;
	if (rs->sq_size > max)
		rs->sq_size = (uint16_t)max;
	if (rs->sq_size < RS_QP_MIN_SIZE)
		rs->sq_size = RS_QP_MIN_SIZE;
	if (rs->rq_size > max)
		rs->rq_size = (uint16_t)max;
	if (rs->rq_size < RS_QP_MIN_SIZE)
		rs->rq_size = RS_QP_MIN_SIZE;

	id->recv_cq_channel = ibv_create_comp_channel(id->verbs);
	if (!id->recv_cq_channel)
		return -1;
	if (rs_set_fd_nonblock(id->recv_cq_channel->fd))
		return -1;
	id->recv_cq = ibv_create_cq(id->verbs, rs->sq_size + rs->rq_size, id,
				    id->recv_cq_channel, 0);
	if (!id->recv_cq)
		return -1;
	id->send_cq_channel = id->recv_cq_channel;
	id->send_cq = id->recv_cq;

	memset(&attr, 0, sizeof(attr));
	attr.qp_context = rs;
	attr.send_cq = id->send_cq;
	attr.recv_cq = id->recv_cq;
	attr.qp_type = IBV_QPT_RC;
	attr.sq_sig_all = 1;
	attr.cap.max_send_wr = rs->sq_size;
	attr.cap.max_recv_wr = rs->rq_size;
	attr.cap.max_send_sge = 2;
	attr.cap.max_recv_sge = 1;
	attr.cap.max_inline_data = rs->sq_inline;
	if (rdma_create_qp(id, NULL, &attr))
		return -1;
	rs->sq_inline = attr.cap.max_inline_data;
	if (sofrs_init_bufs(rs))
		return -1;
	for (i = 0; i < rs->rq_size; i++)
		if (sofrs_post_recv(rs))
			return -1;
	return 0;
}

/* Connected: from now on the CM channel is read only when poll says so. */
void sofrs_connected_now(struct sofrs *rs)
{
	/* a peer on another host: polling moves the QP (sof_peer.h) */
	rs->peer_remote = sof_peer_remote(rs->cm_id->qp, rs->cm_id->verbs, rs->cm_id->port_num);
	if (rs->cm_id->event) {
		rdma_ack_cm_event(rs->cm_id->event);
		rs->cm_id->event = NULL;
	}
	rs_set_fd_nonblock(rs->cm_id->channel->fd);
	pthread_mutex_lock(&rs->cq_lock);
	rs->state = rs_connect_rdwr;
	pthread_mutex_unlock(&rs->cq_lock);
	if ((rs->so_opts & (1ULL << SO_KEEPALIVE)) && !rs->ka_on)
		sofrs_keepalive(rs, true);
}

/* Events on a connected rsocket's channel: the peer's DREQ. */
void sofrs_cm_events(struct sofrs *rs)
{
	struct rdma_cm_event *ev;
	struct pollfd pfd = { .fd = rs->cm_id->channel->fd, .events = POLLIN };

	while (poll(&pfd, 1, 0) > 0 && !rdma_get_cm_event(rs->cm_id->channel, &ev)) {
		bool gone = ev->event == RDMA_CM_EVENT_DISCONNECTED ||
			    ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL ||
			    ev->event == RDMA_CM_EVENT_TIMEWAIT_EXIT;

		rdma_ack_cm_event(ev);
		if (!gone)
			continue;
		pthread_mutex_lock(&rs->cq_lock);
		if (rs->state & rs_connected)
			rs->state = rs_disconnected;
		pthread_mutex_unlock(&rs->cq_lock);
		rdma_disconnect(rs->cm_id);
	}
}

/* A readiness check of a connected rsocket (rs_poll.c) reads its channel
 * too, at most once a RS_CM_CHECK_NS: rpoll reads the channels when it
 * sleeps, but one that always finds another descriptor ready never
 * sleeps. A peer that vanished (its process killed: no RS_CTRL_DISCONNECT,
 * only the DREQ its daemon sends) was then never seen, and a program that
 * waits for its end spun forever (iperf3's server, its data stream at end
 * of stream, never read its control connection's). */
#define RS_CM_CHECK_NS 10000000ull

void sofrs_cm_check(struct sofrs *rs)
{
	uint64_t now = sof_now_ns();

	if (now - atomic_load_explicit(&rs->cm_checked, memory_order_relaxed) < RS_CM_CHECK_NS)
		return;
	atomic_store_explicit(&rs->cm_checked, now, memory_order_relaxed);
	sofrs_cm_events(rs);
}

/* ---- the socket calls ------------------------------------------------------------ */

SOFCM_EXPORT int rsocket(int domain, int type, int protocol)
{
	int stype = type & ~(SOCK_CLOEXEC | SOCK_NONBLOCK);
	struct sofrs *rs;
	int err;

	if (sofrs_internal) /* a socket of our own stack */
		return sofcm_err(ENOTSUP);
	if ((domain != AF_INET && domain != AF_INET6) ||
	    (stype != SOCK_STREAM && stype != SOCK_DGRAM) ||
	    (protocol && protocol != (stype == SOCK_STREAM ? IPPROTO_TCP : IPPROTO_UDP)))
		return sofcm_err(ENOTSUP);
	pthread_once(&rs_conf_once, rs_configure);
	rs = sofrs_alloc(NULL);
	if (!rs)
		return sofcm_err(ENOMEM);
	rs->fd_flags = type & SOCK_CLOEXEC ? FD_CLOEXEC : 0;
	rs->fs_flags = type & SOCK_NONBLOCK ? O_NONBLOCK : 0;
	if (stype == SOCK_DGRAM) {
		if (sofrs_ds_init(rs, domain) || sofrs_insert(rs, rs->udp_sock))
			goto err;
		return rs->index;
	}
	if (rdma_create_id(NULL, &rs->cm_id, rs, RDMA_PS_TCP))
		goto err;
	rs->cm_id->route.addr.src_addr.sa_family = (sa_family_t)domain;
	if (sofrs_insert(rs, rs->cm_id->channel->fd))
		goto err;
	return rs->index;

err:
	err = errno;
	sofrs_free(rs);
	return sofcm_err(err);
}

SOFCM_EXPORT int rbind(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	struct sofrs *rs = sofrs_lookup(socket);

	if (!rs)
		return sofcm_err(EBADF);
	if (!addr || addrlen < sizeof(struct sockaddr_in))
		return sofcm_err(EINVAL);
	if (rs->type == SOCK_DGRAM)
		return sofrs_ds_bind(rs, addr, addrlen);
	if (rs->state != rs_init)
		return sofcm_err(EINVAL);
	if (rdma_bind_addr(rs->cm_id, (struct sockaddr *)addr))
		return -1;
	rs->state = rs_bound;
	return 0;
}

void sofrs_copy_addr(struct sockaddr *dst, const struct sockaddr *src, socklen_t *len)
{
	socklen_t size = src->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
						     : sizeof(struct sockaddr_in);

	memcpy(dst, src, *len < size ? *len : size);
	*len = size;
}

/* An id of a refused request: its event acked, then destroyed. */
void sofrs_drop_id(struct rdma_cm_id *id)
{
	if (id->event) {
		rdma_ack_cm_event(id->event);
		id->event = NULL;
	}
	rdma_destroy_id(id);
}

static int rs_shutdown(struct sofrs *rs, int how)
{
	uint32_t ctrl;
	int ret = 0;

	if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR)
		return sofcm_err(EINVAL);
	if (rs->type == SOCK_DGRAM)
		return shutdown(rs->udp_sock, how);
	if (!(rs->state & (rs_connected | rs_disconnected | rs_error)))
		return sofcm_err(ENOTCONN);
	if (rs->state & rs_connected) {
		pthread_mutex_lock(&rs->cq_lock);
		if (how == SHUT_RDWR) {
			ctrl = RS_CTRL_DISCONNECT;
			rs->state &= ~(rs_readable | rs_writable);
		} else if (how == SHUT_WR) {
			rs->state &= ~rs_writable;
			ctrl = rs->state & rs_readable ? RS_CTRL_SHUTDOWN : RS_CTRL_DISCONNECT;
		} else {
			rs->state &= ~rs_readable;
			ctrl = rs->state & rs_writable ? UINT32_MAX : RS_CTRL_DISCONNECT;
		}
		pthread_mutex_unlock(&rs->cq_lock);
		if (ctrl == UINT32_MAX)
			return 0;
		if (!sofrs_ctrl_avail(rs))
			ret = sofrs_process_cq(rs, false, sofrs_conn_can_send_ctrl);
		pthread_mutex_lock(&rs->cq_lock);
		if (!ret && (rs->state & rs_connected) && sofrs_ctrl_avail(rs)) {
			rs->ctrl_seqno++;
			ret = sofrs_post_msg(rs, rs_msg_set(RS_OP_CTRL, ctrl));
		}
		pthread_mutex_unlock(&rs->cq_lock);
	}
	if (rs->state & rs_connected)
		sofrs_process_cq(rs, false, sofrs_all_sends_done);
	if ((rs->state & (rs_disconnected | rs_error)) && rs->cm_id->qp) {
		/* wake pollers: the QP flushes its receives */
		ibv_req_notify_cq(rs->cm_id->recv_cq, 0);
		sofcm_qp_err(sofcm_id(rs->cm_id));
	}
	return ret;
}

SOFCM_EXPORT int rshutdown(int socket, int how)
{
	struct sofrs *rs = sofrs_get(socket);
	int ret;

	if (!rs)
		return sofcm_err(EBADF);
	ret = rs_shutdown(rs, how);
	sofrs_put(rs);
	return ret;
}

/* Another thread may wait in the socket: it is out of the table first (no
 * new call finds it), shut down (what waits sees the end, within a poll
 * step of 500 ms), and freed once the calls inside have left. */
SOFCM_EXPORT int rclose(int socket)
{
	struct sofrs *rs = sofrs_lookup(socket);

	if (!rs)
		return sofcm_err(EBADF);
	sofrs_internal++;
	sofrs_remove(rs);
	atomic_store(&rs->closing, true);
	if (rs->type == SOCK_DGRAM)
		sofrs_ds_shutdown(rs);
	else if (rs->state == rs_listening)
		sofrs_listen_stop(rs);
	if (rs->ka_on)
		sofrs_keepalive(rs, false);
	if (rs->state & rs_connected)
		rs_shutdown(rs, SHUT_RDWR);
	/* a non-blocking rconnect's thread is waited for to its end */
	for (int i = 0; atomic_load(&rs->users) > 0 && (i < 10000 || rs->state == rs_opening); i++)
		usleep(1000);
	sofrs_free(rs);
	sofrs_internal--;
	return 0;
}

SOFCM_EXPORT int rgetpeername(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	struct sofrs *rs = sofrs_lookup(socket);

	if (!rs)
		return sofcm_err(EBADF);
	if (!addr || !addrlen)
		return sofcm_err(EFAULT);
	if (rs->type == SOCK_DGRAM)
		return getpeername(rs->udp_sock, addr, addrlen);
	if (!(rs->state & (rs_connected | rs_disconnected | rs_error)))
		return sofcm_err(ENOTCONN);
	sofrs_copy_addr(addr, rdma_get_peer_addr(rs->cm_id), addrlen);
	return 0;
}

SOFCM_EXPORT int rgetsockname(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	struct sofrs *rs = sofrs_lookup(socket);
	struct sockaddr *src;

	if (!rs)
		return sofcm_err(EBADF);
	if (!addr || !addrlen)
		return sofcm_err(EFAULT);
	if (rs->type == SOCK_DGRAM)
		return getsockname(rs->udp_sock, addr, addrlen);
	src = rdma_get_local_addr(rs->cm_id);
	if (!src->sa_family)
		src->sa_family = AF_INET;
	sofrs_copy_addr(addr, src, addrlen);
	return 0;
}

static void rs_flag(uint64_t *opts, int optname, bool on)
{
	if (on)
		*opts |= 1ULL << optname;
	else
		*opts &= ~(1ULL << optname);
}

/* A datagram rsocket's options are its UDP socket's; the buffer sizes
 * also size its slots (before its first QP, as rdma-core). */
static int rs_ds_setsockopt(struct sofrs *rs, int level, int optname, const void *optval,
			    socklen_t optlen)
{
	int val = *(const int *)optval;

	if (setsockopt(rs->udp_sock, level, optname, optval, optlen))
		return -1;
	if (level == SOL_SOCKET && optname == SO_RCVBUF && !rs->qp_list && val > 0)
		rs->rbuf_size = (uint32_t)val << 1 < RS_SNDLOWAT * 2 ? RS_SNDLOWAT * 2
								 : (uint32_t)val << 1;
	if (level == SOL_SOCKET && optname == SO_SNDBUF && !rs->sbuf && val > 0)
		rs->sbuf_size = (uint32_t)val << 1 < RS_SNDLOWAT * 2 ? RS_SNDLOWAT * 2
								 : (uint32_t)val << 1;
	return 0;
}

/* Options as rdma-core takes them; SO_KEEPALIVE and TCP_KEEPIDLE drive
 * the keepalive service (rs_conn.c). */
SOFCM_EXPORT int rsetsockopt(int socket, int level, int optname, const void *optval,
			     socklen_t optlen)
{
	struct sofrs *rs = sofrs_lookup(socket);
	int val;

	if (!rs)
		return sofcm_err(EBADF);
	if (!optval || optlen < sizeof(int))
		return sofcm_err(EINVAL);
	val = *(const int *)optval;
	if (rs->type == SOCK_DGRAM && level != SOL_RDMA)
		return rs_ds_setsockopt(rs, level, optname, optval, optlen);
	switch (level) {
	case SOL_SOCKET:
		switch (optname) {
		case SO_REUSEADDR:
			rdma_set_option(rs->cm_id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR,
					(void *)optval, optlen);
			/* fall through */
		case SO_OOBINLINE:
			rs_flag(&rs->so_opts, optname, val);
			return 0;
		case SO_KEEPALIVE:
			if (sofrs_keepalive(rs, val != 0))
				return -1;
			rs_flag(&rs->so_opts, optname, val);
			return 0;
		case SO_RCVBUF:
			if (!rs->rbuf && val > 0)
				rs->rbuf_size = (uint32_t)val << 1;
			if (rs->rbuf_size < RS_SNDLOWAT * 2)
				rs->rbuf_size = RS_SNDLOWAT * 2;
			return 0;
		case SO_SNDBUF:
			if (!rs->sbuf && val > 0)
				rs->sbuf_size = (uint32_t)val << 1;
			if (rs->sbuf_size < RS_SNDLOWAT * 2)
				rs->sbuf_size = RS_SNDLOWAT * 2;
			return 0;
		case SO_LINGER:
			if (optlen < sizeof(struct linger))
				return sofcm_err(EINVAL);
			rs->linger = *(const struct linger *)optval;
			return 0;
		}
		break;
	case IPPROTO_IP:
		if (optname == IP_TOS) {
			rs->ipv4_tos = val;
			return rdma_set_option(rs->cm_id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS,
					       (void *)optval, optlen) ? 0 : 0;
		}
		break;
	case IPPROTO_TCP:
		switch (optname) {
		case TCP_NODELAY:
			rs_flag(&rs->tcp_opts, optname, val);
			return 0;
		case TCP_KEEPIDLE:
			if (val <= 0)
				return sofcm_err(EINVAL);
			rs->keepalive_time = (unsigned int)val;
			return rs->ka_on ? sofrs_keepalive(rs, true) : 0;
		case TCP_KEEPCNT:
		case TCP_KEEPINTVL:
		case TCP_MAXSEG:
		case TCP_CONGESTION:
			return 0;
		}
		break;
	case IPPROTO_IPV6:
		if (optname == IPV6_V6ONLY) {
			rdma_set_option(rs->cm_id, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY,
					(void *)optval, optlen);
			rs_flag(&rs->ipv6_opts, optname, val);
			return 0;
		}
		break;
	case SOL_RDMA:
		if (rs->state >= rs_opening)
			return sofcm_err(EINVAL);
		switch (optname) {
		case RDMA_SQSIZE:
			rs->sq_size = (uint16_t)((uint32_t)val > RS_QP_MAX_SIZE ? RS_QP_MAX_SIZE
										 : (uint32_t)val);
			return 0;
		case RDMA_RQSIZE:
			rs->rq_size = (uint16_t)((uint32_t)val > RS_QP_MAX_SIZE ? RS_QP_MAX_SIZE
										 : (uint32_t)val);
			return 0;
		case RDMA_INLINE:
			rs->sq_inline = (uint32_t)val > RS_QP_MAX_SIZE ? RS_QP_MAX_SIZE
								       : (uint32_t)val;
			return 0;
		case RDMA_IOMAPSIZE:
			rs->target_iomap_size = (uint16_t)(val < 0 ? 0 : val > 256 ? 256 : val);
			return 0;
		case RDMA_ROUTE:
			free(rs->route);
			rs->route = malloc(optlen);
			if (!rs->route)
				return sofcm_err(ENOMEM);
			memcpy(rs->route, optval, optlen);
			rs->route_len = optlen;
			return 0;
		}
		break;
	}
	return sofcm_err(ENOTSUP);
}

static int rs_put_int(void *optval, socklen_t *optlen, int v)
{
	if (*optlen < sizeof(int))
		return sofcm_err(EINVAL);
	*(int *)optval = v;
	*optlen = sizeof(int);
	return 0;
}

SOFCM_EXPORT int rgetsockopt(int socket, int level, int optname, void *optval, socklen_t *optlen)
{
	struct sofrs *rs = sofrs_lookup(socket);
	int err;

	if (!rs)
		return sofcm_err(EBADF);
	if (!optval || !optlen)
		return sofcm_err(EFAULT);
	if (rs->type == SOCK_DGRAM && level != SOL_RDMA &&
	    !(level == SOL_SOCKET && (optname == SO_RCVBUF || optname == SO_SNDBUF)))
		return getsockopt(rs->udp_sock, level, optname, optval, optlen);
	switch (level) {
	case SOL_SOCKET:
		switch (optname) {
		case SO_REUSEADDR:
		case SO_KEEPALIVE:
		case SO_OOBINLINE:
			return rs_put_int(optval, optlen, !!(rs->so_opts & (1ULL << optname)));
		case SO_RCVBUF:
			return rs_put_int(optval, optlen, (int)rs->rbuf_size);
		case SO_SNDBUF:
			return rs_put_int(optval, optlen, (int)rs->sbuf_size);
		case SO_TYPE:
			return rs_put_int(optval, optlen, rs->type);
		case SO_ERROR:
			err = rs->state == rs_connect_error || (rs->state & rs_error) ? rs->err : 0;
			if (rs->state == rs_connect_error)
				rs->err = 0;
			return rs_put_int(optval, optlen, err);
		case SO_LINGER:
			if (*optlen < sizeof(struct linger))
				return sofcm_err(EINVAL);
			*(struct linger *)optval = rs->linger;
			*optlen = sizeof(struct linger);
			return 0;
		}
		break;
	case IPPROTO_IP:
		if (optname == IP_TOS)
			return rs_put_int(optval, optlen, rs->ipv4_tos);
		break;
	case IPPROTO_TCP:
		switch (optname) {
		case TCP_NODELAY:
			return rs_put_int(optval, optlen, !!(rs->tcp_opts & (1ULL << optname)));
		case TCP_KEEPIDLE:
			return rs_put_int(optval, optlen, (int)rs->keepalive_time);
		case TCP_KEEPCNT:
		case TCP_KEEPINTVL:
		case TCP_CONGESTION:
			return rs_put_int(optval, optlen, 1); /* rdma-core: not applicable */
		case TCP_MAXSEG: {
			/* as the kernel's, the path MTU less 40 bytes of
			 * headers, and no more than a datagram rsocket's slot
			 * (rdma-core: the MTU): programs size datagrams by it
			 * (iperf3 -u by its control connection's), and those
			 * must fit one UD message */
			int mtu = rs->cm_id && rs->cm_id->route.num_paths
					  ? 1 << (7 + rs->cm_id->route.path_rec->mtu)
					  : RS_SNDLOWAT;

			return rs_put_int(optval, optlen, (mtu < RS_SNDLOWAT ? mtu : RS_SNDLOWAT) - 40);
		}
		case TCP_INFO: {
			struct tcp_info info;
			socklen_t n = *optlen < sizeof(info) ? *optlen : sizeof(info);

			memset(&info, 0, sizeof(info));
			info.tcpi_state = (rs->state & rs_connected) ? TCP_ESTABLISHED : TCP_CLOSE;
			info.tcpi_snd_cwnd = rs->sq_size;
			info.tcpi_snd_mss = 2048;
			info.tcpi_rcv_mss = 2048;
			memcpy(optval, &info, n);
			*optlen = n;
			return 0;
		}
		}
		break;
	case IPPROTO_IPV6:
		if (optname == IPV6_V6ONLY)
			return rs_put_int(optval, optlen, !!(rs->ipv6_opts & (1ULL << optname)));
		break;
	case SOL_RDMA:
		switch (optname) {
		case RDMA_SQSIZE:
			return rs_put_int(optval, optlen, rs->sq_size);
		case RDMA_RQSIZE:
			return rs_put_int(optval, optlen, rs->rq_size);
		case RDMA_INLINE:
			return rs_put_int(optval, optlen, (int)rs->sq_inline);
		case RDMA_IOMAPSIZE:
			return rs_put_int(optval, optlen, rs->target_iomap_size);
		}
		break;
	}
	return sofcm_err(ENOTSUP);
}

SOFCM_EXPORT int rfcntl(int socket, int cmd, ...)
{
	struct sofrs *rs = sofrs_lookup(socket);
	va_list ap;
	long arg;

	if (!rs)
		return sofcm_err(EBADF);
	switch (cmd) {
	case F_GETFL:
		return rs->fs_flags | O_RDWR;
	case F_SETFL:
		va_start(ap, cmd);
		arg = va_arg(ap, long);
		va_end(ap);
		rs->fs_flags = (int)(arg & O_NONBLOCK);
		return 0;
	case F_GETFD:
		return rs->fd_flags;
	case F_SETFD:
		va_start(ap, cmd);
		arg = va_arg(ap, long);
		va_end(ap);
		rs->fd_flags = (int)(arg & FD_CLOEXEC);
		return 0;
	}
	return sofcm_err(ENOTSUP);
}
