/*
 * SDP's active side (IBTA Annex A4.4): the connect over the RDMA CM on
 * A4's AF_IB addresses (the REQ carries our Hello, the REP's HelloAck is
 * checked), blocking or in a thread for a non-blocking socket, then the
 * connection's pump (sdp_conn.c); and the address helpers listeners share
 * (the AF_IB address of an IP address and port, the rdma_addrinfo).
 */
#include "sdp_qpc.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/ib.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* An address and TCP port as A4's AF_IB address: the address as its GID
 * (IPv4-mapped for IPv4, RoCEv2's; zero for any) and the SDP service ID
 * of the port. */
void sdp_sib(struct sockaddr_ib *sib, const struct sockaddr_in6 *a)
{
	memset(sib, 0, sizeof(*sib));
	sib->sib_family = AF_IB;
	sib->sib_pkey = htobe16(0xffff);
	if (!sdp_addr_any(a))
		memcpy(&sib->sib_addr, &a->sin6_addr, 16);
	sib->sib_sid = htobe64(SDP_SERVICE_ID(ntohs(a->sin6_port)));
	sib->sib_sid_mask = htobe64(~0ull);
}

struct rdma_addrinfo sdp_rai(struct sockaddr_ib *src, struct sockaddr_ib *dst, int passive)
{
	struct rdma_addrinfo rai;

	memset(&rai, 0, sizeof(rai));
	rai.ai_flags = passive ? RAI_PASSIVE : 0;
	rai.ai_family = AF_IB;
	rai.ai_qp_type = IBV_QPT_RC;
	rai.ai_port_space = RDMA_PS_IB;
	if (src) {
		rai.ai_src_addr = (struct sockaddr *)src;
		rai.ai_src_len = sizeof(*src);
	}
	if (dst) {
		rai.ai_dst_addr = (struct sockaddr *)dst;
		rai.ai_dst_len = sizeof(*dst);
	}
	return rai;
}

/* An id's source GID as an address (port 0), :: when it has none. */
struct sockaddr_in6 sdp_id_src(struct rdma_cm_id *id)
{
	const struct sockaddr_ib *sib = (const struct sockaddr_ib *)rdma_get_local_addr(id);
	static const uint8_t none[16];

	if (sib && sib->sib_family == AF_IB)
		return sdp_addr_of((const uint8_t *)&sib->sib_addr, 0);
	return sdp_addr_of(none, 0);
}

/* The socketpair of a connection: the pump keeps [1]. */
static int conn_pair(struct sdp_qpc *q, int *ufd)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return -errno;
	q->ufd = sv[1];
	*ufd = sv[0];
	return 0;
}

/* The RDMA CM connection to DST from SRC: REQ with our Hello, the REP's
 * HelloAck checked, the id on a non-blocking channel of its own. */
static int connect_rdma(struct sdp_qpc *q, const struct sockaddr_in6 *src,
			const struct sockaddr_in6 *dst)
{
	struct sockaddr_ib to, from;
	struct sockaddr_in6 me = *src;
	struct rdma_addrinfo rai;
	struct rdma_conn_param param;
	struct sdp_hh hh;
	char a[64];
	int ret, any = sdp_addr_any(src);

	sdp_sib(&to, dst);
	if (!any) {
		sdp_sib(&from, src);
		from.sib_sid = from.sib_sid_mask = 0;
	}
	rai = sdp_rai(any ? NULL : &from, &to, 0);
	if (rdma_create_ep(&q->id, &rai, NULL, NULL))
		return -errno;
	ret = sdp_qpc_resources(q);
	if (ret)
		return ret;
	if (any) {
		me = sdp_id_src(q->id);
		me.sin6_port = src->sin6_port;
	}
	sdp_hello_fill(&q->flow, &hh, SDP_BUFSZ, me.sin6_addr.s6_addr, ntohs(me.sin6_port),
		       dst->sin6_addr.s6_addr);
	sdp_conn_param(&param, &hh, sizeof(hh));
	if (rdma_connect(q->id, &param))
		return -errno;
	if (!q->id->event || sdp_hello_ack_parse(&q->flow, q->id->event->param.conn.private_data,
						 q->id->event->param.conn.private_data_len)) {
		sdp_addr_str(dst, a, sizeof(a));
		sdp_log(SDP_LOG_ERR, "no valid SDP HelloAck from %s", a);
		return -EPROTO;
	}
	q->ch = rdma_create_event_channel();
	if (!q->ch || sdp_real.fcntl(q->ch->fd, F_SETFL, O_NONBLOCK) ||
	    rdma_migrate_id(q->id, q->ch))
		return -EIO;
	q->established = 1;
	sdp_qpc_addrs(q, &me, dst);
	return 0;
}

static void connect_undo(struct sdp_qpc *q)
{
	if (q->id && q->id->qp)
		rdma_disconnect(q->id);
	sdp_qpc_free(q);
}

int sdp_connect(const struct sockaddr_in6 *src, const struct sockaddr_in6 *sin,
		struct sdp_conn **out, int *ufd)
{
	struct sdp_qpc *q = sdp_qpc_new();
	int ret;

	if (!q)
		return -ENOMEM;
	ret = connect_rdma(q, src, sin);
	if (!ret)
		ret = conn_pair(q, ufd);
	if (ret) {
		connect_undo(q);
		return ret;
	}
	atomic_fetch_add(&q->pub.ref, 1);
	ret = sdp_pump_start(q);
	if (ret) {
		atomic_fetch_sub(&q->pub.ref, 1);
		sdp_real.close(*ufd);
		connect_undo(q);
		return ret;
	}
	*out = &q->pub;
	return 0;
}

/* A non-blocking connect's thread: the program's end (a dup, pfd) has
 * its send buffer filled with `fill` bytes the pump end drops once the
 * connection is made, so poll(POLLOUT) says "connected" only then. Under
 * `use both` (tcp_fd: the program's kernel socket, kept) a failed SDP
 * connect is followed by the kernel's TCP connect from that socket, and
 * the thread then relays between the program's end and it. */
struct sdp_aconn {
	struct sdp_qpc *q;
	struct sockaddr_in6 src, sin;
	int pfd, sndbuf, tcp_fd;
	size_t fill;
};

static int send_all(int fd, const char *b, size_t n)
{
	while (n) {
		ssize_t w = send(fd, b, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Bytes both ways between the program's end UFD and the kernel's TCP
 * connection TFD, each end of stream passed on; over when both ways
 * ended, the program closed its end (POLLHUP), or either failed (the
 * error its reads then report). */
static void relay(struct sdp_conn *c, int ufd, int tfd)
{
	char buf[65536];
	int up = 1, down = 1;

	while (up || down) {
		struct pollfd p[2] = {{.fd = ufd, .events = up ? POLLIN : 0},
				      {.fd = tfd, .events = down ? POLLIN : 0}};
		ssize_t n;

		if (sdp_real.poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (!up && (p[0].revents & POLLHUP))
			break; /* nobody reads what the peer sends */
		if (up && (p[0].revents & (POLLIN | POLLHUP | POLLERR))) {
			n = recv(ufd, buf, sizeof(buf), 0);
			if (n > 0 && send_all(tfd, buf, (size_t)n) == 0)
				continue;
			sdp_real.shutdown(tfd, SHUT_WR);
			up = 0;
			if (n != 0)
				break;
		}
		if (down && (p[1].revents & (POLLIN | POLLHUP | POLLERR))) {
			n = recv(tfd, buf, sizeof(buf), 0);
			if (n > 0 && send_all(ufd, buf, (size_t)n) == 0)
				continue;
			if (n < 0)
				atomic_store(&c->error, errno);
			sdp_real.shutdown(ufd, n < 0 ? SHUT_RDWR : SHUT_WR);
			down = 0;
			if (n != 0)
				break;
		}
	}
}

/* `both`: SDP failed; the kernel's TCP connect from the program's socket
 * (blocking here), its own name the connection's */
static int connect_tcp(struct sdp_aconn *a)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = a->sin.sin6_port};
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int v6 = 0, fl = sdp_real.fcntl(a->tcp_fd, F_GETFL);

	sdp_real.fcntl(a->tcp_fd, F_SETFL, fl & ~O_NONBLOCK);
	if (!sdp_real.getsockname(a->tcp_fd, (struct sockaddr *)&ss, &len))
		v6 = ss.ss_family == AF_INET6;
	memcpy(&sin.sin_addr, &a->sin.sin6_addr.s6_addr[12], 4);
	if (v6 ? sdp_real.connect(a->tcp_fd, (struct sockaddr *)&a->sin, sizeof(a->sin))
	       : sdp_real.connect(a->tcp_fd, (struct sockaddr *)&sin, sizeof(sin)))
		return -errno;
	len = sizeof(ss);
	if (!sdp_real.getsockname(a->tcp_fd, (struct sockaddr *)&ss, &len))
		sdp_addr_in((struct sockaddr *)&ss, len, &a->q->pub.local);
	return 0;
}

static void *connect_thread(void *arg)
{
	struct sdp_aconn *a = arg;
	struct sdp_qpc *q = a->q;
	struct sdp_conn *c = &q->pub;
	char buf[4096], s[64];
	int ret = connect_rdma(q, &a->src, &a->sin), ufd = q->ufd, tcp = 0;

	sdp_addr_str(&c->peer, s, sizeof(s));
	if (ret && a->tcp_fd >= 0) {
		sdp_log(SDP_LOG_SUMMARY, "connect %s: no SDP (%s): tcp", s, strerror(-ret));
		/* the RDMA part goes; the connection stays the program's */
		atomic_fetch_add(&c->ref, 1);
		q->ufd = -1;
		connect_undo(q);
		tcp = 1;
		ret = connect_tcp(a);
	}
	/* connected before the program's end turns writable: a program
	 * that polls for POLLOUT then calls connect again (hiredis) must
	 * get EISCONN */
	if (!ret) {
		atomic_store(&c->connecting, 0);
		sdp_real.setsockopt(a->pfd, SOL_SOCKET, SO_SNDBUF, &a->sndbuf, sizeof(a->sndbuf));
	}
	while (!ret && a->fill) {
		ssize_t n = recv(ufd, buf, a->fill < sizeof(buf) ? a->fill : sizeof(buf), 0);

		if (n <= 0)
			ret = -EIO;
		else
			a->fill -= (size_t)n;
	}
	sdp_real.close(a->pfd);
	if (ret) {
		sdp_log(SDP_LOG_SUMMARY, "connect %s: no %s (%s): failed", s, tcp ? "TCP" : "SDP",
			strerror(-ret));
		/* as the kernel says (a TCP connect's own error), or SDP's */
		if (!tcp)
			ret = -ret == ETIMEDOUT ? -ETIMEDOUT : -ECONNREFUSED;
		atomic_store(&c->error, -ret);
		atomic_store(&c->so_error, -ret);
		atomic_store(&c->connecting, 0);
	}
	if (tcp) {
		if (!ret)
			relay(c, ufd, a->tcp_fd);
		sdp_real.close(ufd); /* the program's reads end */
		sdp_conn_put(c);
	} else if (ret) {
		connect_undo(q); /* closes the pump end: the program's reads end */
	}
	if (a->tcp_fd >= 0)
		sdp_real.close(a->tcp_fd);
	free(a);
	if (ret || tcp) {
		sdp_pump_uncount();
		return NULL;
	}
	return sdp_pump(q);
}

int sdp_connect_start(const struct sockaddr_in6 *src, const struct sockaddr_in6 *sin, int tcp_fd,
		      struct sdp_conn **out, int *ufd)
{
	static const char zeros[512];
	struct sdp_qpc *q = sdp_qpc_new();
	struct sdp_aconn *a = calloc(1, sizeof(*a));
	socklen_t sl = sizeof(int);
	int small = 1, ret;
	ssize_t n;

	if (!q || !a || conn_pair(q, ufd)) {
		free(a);
		if (q)
			sdp_qpc_free(q);
		return -ENOMEM;
	}
	a->tcp_fd = -1;
	a->q = q;
	a->src = *src;
	a->sin = *sin;
	q->pub.local = *src;
	q->pub.peer = *sin;
	q->pub.payload_max = SDP_BUFSZ - SDP_TX_DATA_OFF;
	a->pfd = sdp_real.fcntl(*ufd, F_DUPFD_CLOEXEC, 0);
	if (a->pfd < 0 || sdp_real.getsockopt(*ufd, SOL_SOCKET, SO_SNDBUF, &a->sndbuf, &sl) ||
	    sdp_real.setsockopt(*ufd, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)))
		goto err;
	a->sndbuf /= 2; /* the kernel doubles what is set */
	while ((n = send(*ufd, zeros, sizeof(zeros), MSG_DONTWAIT | MSG_NOSIGNAL)) > 0)
		a->fill += (size_t)n;
	atomic_store(&q->pub.connecting, 1);
	atomic_fetch_add(&q->pub.ref, 1); /* the program's */
	sdp_pump_count();
	a->tcp_fd = tcp_fd;
	ret = sdp_detached(connect_thread, a);
	if (ret) {
		a->tcp_fd = -1; /* (the caller's again) */
		sdp_pump_uncount();
		atomic_fetch_sub(&q->pub.ref, 1);
		goto err;
	}
	*out = &q->pub;
	return 0;
err:
	if (a->pfd >= 0)
		sdp_real.close(a->pfd);
	free(a);
	sdp_real.close(*ufd);
	sdp_qpc_free(q);
	return -EIO;
}
