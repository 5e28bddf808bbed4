/*
 * What the two-host helper programs of tests/hosts/ share (atomic_count,
 * rc_timeout, qp_hold, mcast_ud): a TCP rendezvous bounded in time (like
 * ibv_rc_pingpong's, but IPv4 or IPv6), device and GID selection, QP
 * creation, the path to the peer of an exchange, the RC/UC/UD state
 * transitions of IBA 10.3 with every parameter explicit, and a completion
 * poll with a deadline. cm_cycles takes its failure exit and clock from
 * here too.
 *
 * Only the public verbs API is used, so the programs run on rdma-core and
 * kernel Soft-RoCE as well as on softofed. Every wait has a deadline.
 *
 * Header-only (static inline) because each .c file in tests/progs is a program of
 * its own; names carry the prefix hp_.
 */
#ifndef HOSTPAIR_H
#define HOSTPAIR_H

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* What each side tells the other over TCP; integers in network order. */
struct hp_info {
	uint32_t qpn;
	uint32_t psn;
	uint32_t rkey;
	uint32_t arg;  /* program-specific (responder resources, ...) */
	uint64_t addr; /* start of the exposed region */
	uint64_t len;  /* program-specific (length, count, ...) */
	uint8_t gid[16];
	uint16_t lid;  /* port 1's LID on an InfiniBand port (hp_port_lid), else 0 */
	uint8_t rsvd[6];
};

/* A QP's path and parameters for hp_qp_modify. */
struct hp_path {
	uint8_t port;
	int sgid_index;
	union ibv_gid dgid;
	uint16_t dlid; /* not 0: by LID, no GRH (an InfiniBand port) */
	enum ibv_mtu mtu;
	uint32_t dqpn;
	uint32_t rq_psn;
	uint32_t sq_psn;
	uint32_t qkey;
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t min_rnr_timer;
	uint8_t max_rd_atomic;
	uint8_t max_dest_rd_atomic;
	unsigned int access;
};

__attribute__((format(printf, 1, 2), noreturn)) static inline void hp_fail(const char *fmt, ...)
{
	va_list ap;

	printf("fail: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	exit(1);
}

static inline int64_t hp_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static inline void hp_sleep_ms(int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};

	nanosleep(&ts, NULL);
}

/* A random 24-bit PSN (IBA 9.7.1: any starting value is valid). */
static inline uint32_t hp_random_psn(void)
{
	uint32_t v = 0;

	if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v))
		v = (uint32_t)getpid() * 2654435761u ^ (uint32_t)hp_now_us();
	return v & 0xffffff;
}

/* hp_parse_mtu: 256..4096 bytes to the enum, 0 when invalid */
static inline enum ibv_mtu hp_parse_mtu(const char *s)
{
	switch (atoi(s)) {
	case 256:
		return IBV_MTU_256;
	case 512:
		return IBV_MTU_512;
	case 1024:
		return IBV_MTU_1024;
	case 2048:
		return IBV_MTU_2048;
	case 4096:
		return IBV_MTU_4096;
	default:
		return (enum ibv_mtu)0;
	}
}

/* hp_listen: a TCP socket listening on PORT, dual-stack when IPv6 is there */
static inline int hp_listen(const char *port)
{
	struct sockaddr_in6 s6;
	struct sockaddr_in s4;
	int one = 1, zero = 0, fd;

	fd = socket(AF_INET6, SOCK_STREAM, 0);
	if (fd >= 0) {
		memset(&s6, 0, sizeof(s6));
		s6.sin6_family = AF_INET6;
		s6.sin6_port = htons((uint16_t)atoi(port));
		s6.sin6_addr = in6addr_any;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		if (!bind(fd, (struct sockaddr *)&s6, sizeof(s6)) && !listen(fd, 1))
			return fd;
		close(fd);
	}
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		hp_fail("socket: %s", strerror(errno));
	memset(&s4, 0, sizeof(s4));
	s4.sin_family = AF_INET;
	s4.sin_port = htons((uint16_t)atoi(port));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&s4, sizeof(s4)) || listen(fd, 1))
		hp_fail("listen on port %s: %s", port, strerror(errno));
	return fd;
}

/* hp_accept: one connection on LFD within SECS seconds */
static inline int hp_accept(int lfd, int secs)
{
	struct pollfd p = {.fd = lfd, .events = POLLIN};
	int fd, n;

	do
		n = poll(&p, 1, secs * 1000);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		hp_fail("no client connected within %d s", secs);
	fd = accept(lfd, NULL, NULL);
	if (fd < 0)
		hp_fail("accept: %s", strerror(errno));
	return fd;
}

/* hp_connect: TCP connection to HOST:PORT, retried for up to SECS seconds
 * (the server may not listen yet) */
static inline int hp_connect(const char *host, const char *port, int secs)
{
	struct addrinfo hints, *res, *ai;
	int64_t end = hp_now_us() + (int64_t)secs * 1000000;
	int fd, err;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	err = getaddrinfo(host, port, &hints, &res);
	if (err)
		hp_fail("%s:%s: %s", host, port, gai_strerror(err));
	for (;;) {
		for (ai = res; ai; ai = ai->ai_next) {
			fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
			if (fd < 0)
				continue;
			if (!connect(fd, ai->ai_addr, ai->ai_addrlen)) {
				freeaddrinfo(res);
				return fd;
			}
			close(fd);
		}
		if (hp_now_us() > end)
			hp_fail("cannot connect to %s:%s within %d s", host, port, secs);
		hp_sleep_ms(100);
	}
}

/* hp_io: send (OUT) or receive exactly LEN bytes within SECS seconds;
 * returns 0, or -1 when the peer closed the connection first */
static inline int hp_io(int fd, void *buf, size_t len, int out, int secs)
{
	int64_t end = hp_now_us() + (int64_t)secs * 1000000;
	uint8_t *p = buf;

	while (len) {
		struct pollfd pf = {.fd = fd, .events = out ? POLLOUT : POLLIN};
		int64_t left = (end - hp_now_us()) / 1000;
		ssize_t n;

		if (left <= 0)
			hp_fail("TCP exchange timed out after %d s", secs);
		if (poll(&pf, 1, (int)left) <= 0)
			continue;
		n = out ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);
		if (n == 0)
			return -1;
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			if (errno == ECONNRESET || errno == EPIPE)
				return -1;
			hp_fail("TCP exchange: %s", strerror(errno));
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* hp_exchange: send ME, receive PEER (host order in and out) */
static inline void hp_exchange(int fd, const struct hp_info *me, struct hp_info *peer, int secs)
{
	struct hp_info w = *me;

	w.qpn = htonl(me->qpn);
	w.psn = htonl(me->psn);
	w.rkey = htonl(me->rkey);
	w.arg = htonl(me->arg);
	w.addr = htobe64(me->addr);
	w.len = htobe64(me->len);
	w.lid = htons(me->lid);
	if (hp_io(fd, &w, sizeof(w), 1, secs) || hp_io(fd, peer, sizeof(*peer), 0, secs))
		hp_fail("peer closed the connection during the exchange");
	peer->qpn = ntohl(peer->qpn);
	peer->psn = ntohl(peer->psn);
	peer->rkey = ntohl(peer->rkey);
	peer->arg = ntohl(peer->arg);
	peer->addr = be64toh(peer->addr);
	peer->len = be64toh(peer->len);
	peer->lid = ntohs(peer->lid);
}

/* hp_port_lid: port's LID when its link layer is InfiniBand, else 0 (a
 * RoCE path is by GID) */
static inline uint16_t hp_port_lid(struct ibv_context *ctx, uint8_t port)
{
	struct ibv_port_attr pa;

	if (ibv_query_port(ctx, port, &pa) || pa.link_layer != IBV_LINK_LAYER_INFINIBAND)
		return 0;
	return pa.lid;
}

/* hp_sync: one byte each way, so both sides passed the same point */
static inline void hp_sync(int fd, int secs)
{
	char c = 's';

	if (hp_io(fd, &c, 1, 1, secs) || hp_io(fd, &c, 1, 0, secs))
		hp_fail("peer closed the connection at a sync point");
}

/* hp_open: the device called NAME (NULL: the first one) */
static inline struct ibv_context *hp_open(const char *name)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int i;

	list = ibv_get_device_list(NULL);
	if (!list || !list[0])
		hp_fail("no RDMA device");
	for (i = 0; list[i]; i++)
		if (!name || !strcmp(ibv_get_device_name(list[i]), name))
			break;
	if (!list[i])
		hp_fail("no device %s", name);
	ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!ctx)
		hp_fail("ibv_open_device: %s", strerror(errno));
	return ctx;
}

/* hp_addr_gid: the GID of an IPv4 (IPv4-mapped, RoCEv2) or IPv6 address
 * literal; 0 on success */
static inline int hp_addr_gid(const char *addr, union ibv_gid *gid)
{
	struct in_addr a4;

	memset(gid, 0, sizeof(*gid));
	if (inet_pton(AF_INET, addr, &a4) == 1) {
		gid->raw[10] = 0xff;
		gid->raw[11] = 0xff;
		memcpy(&gid->raw[12], &a4, 4);
		return 0;
	}
	return inet_pton(AF_INET6, addr, gid->raw) == 1 ? 0 : -1;
}

/* hp_gid_index: the index of GID in the port's table, -1 when absent */
static inline int hp_gid_index(struct ibv_context *ctx, uint8_t port, const union ibv_gid *gid)
{
	struct ibv_port_attr pa;
	union ibv_gid g;
	int i;

	if (ibv_query_port(ctx, port, &pa))
		return -1;
	for (i = 0; i < pa.gid_tbl_len; i++)
		if (!ibv_query_gid(ctx, port, i, &g) && !memcmp(&g, gid, sizeof(g)))
			return i;
	return -1;
}

/* hp_sock_gid_index: the GID index of the local address of a connected TCP
 * socket (the address the peer reaches us at), -1 when none matches */
static inline int hp_sock_gid_index(struct ibv_context *ctx, uint8_t port, int fd)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	union ibv_gid gid;

	if (getsockname(fd, (struct sockaddr *)&ss, &sl))
		return -1;
	memset(&gid, 0, sizeof(gid));
	if (ss.ss_family == AF_INET) {
		gid.raw[10] = 0xff;
		gid.raw[11] = 0xff;
		memcpy(&gid.raw[12], &((struct sockaddr_in *)&ss)->sin_addr, 4);
	} else if (ss.ss_family == AF_INET6) {
		memcpy(gid.raw, &((struct sockaddr_in6 *)&ss)->sin6_addr, 16);
	} else {
		return -1;
	}
	return hp_gid_index(ctx, port, &gid);
}

/* hp_gid_str: a GID as text (inet_ntop of the 16 bytes) */
static inline const char *hp_gid_str(const union ibv_gid *gid, char *buf, size_t len)
{
	if (!inet_ntop(AF_INET6, gid->raw, buf, (socklen_t)len))
		snprintf(buf, len, "?");
	return buf;
}

/* hp_qp_modify: move QP from RESET through INIT and RTR up to TARGET with
 * the parameters of P (IBA 10.3.1 / 11.2.5.2); 0 or an errno */
static inline int hp_qp_modify(struct ibv_qp *qp, const struct hp_path *p, enum ibv_qp_state target)
{
	struct ibv_qp_attr a;
	int mask, err;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = p->port;
	mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
	if (qp->qp_type == IBV_QPT_UD) {
		a.qkey = p->qkey;
		mask |= IBV_QP_QKEY;
	} else {
		a.qp_access_flags = p->access;
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	err = ibv_modify_qp(qp, &a, mask);
	if (err || target == IBV_QPS_INIT)
		return err;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	mask = IBV_QP_STATE;
	if (qp->qp_type != IBV_QPT_UD) {
		a.path_mtu = p->mtu;
		a.dest_qp_num = p->dqpn;
		a.rq_psn = p->rq_psn;
		if (p->dlid && hp_port_lid(qp->context, p->port)) {
			a.ah_attr.dlid = p->dlid;
		} else {
			a.ah_attr.is_global = 1;
			a.ah_attr.grh.dgid = p->dgid;
			a.ah_attr.grh.sgid_index = (uint8_t)p->sgid_index;
			a.ah_attr.grh.hop_limit = 64;
		}
		a.ah_attr.port_num = p->port;
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
		if (qp->qp_type == IBV_QPT_RC) {
			a.max_dest_rd_atomic = p->max_dest_rd_atomic;
			a.min_rnr_timer = p->min_rnr_timer;
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		}
	}
	err = ibv_modify_qp(qp, &a, mask);
	if (err || target == IBV_QPS_RTR)
		return err;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = p->sq_psn;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (qp->qp_type == IBV_QPT_RC) {
		a.timeout = p->timeout;
		a.retry_cnt = p->retry_cnt;
		a.rnr_retry = p->rnr_retry;
		a.max_rd_atomic = p->max_rd_atomic;
		mask |=
		    IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
	}
	return ibv_modify_qp(qp, &a, mask);
}

/* The options the programs spell alike: -p PORT (the TCP rendezvous),
 * -d DEV (the RDMA device, default the first), -g INDEX (the local GID
 * index; -1, the default, picks it by address), -T SECS (the program's
 * time bound). hp_opts_init sets the defaults, hp_opt takes one option of
 * getopt: 1 when it was one of these. */
struct hp_opts {
	const char *port, *dev;
	int gid_index;
	int secs;
};

static inline void hp_opts_init(struct hp_opts *h, const char *port, int secs)
{
	h->port = port;
	h->dev = NULL;
	h->gid_index = -1;
	h->secs = secs;
}

static inline int hp_opt(struct hp_opts *h, int c, const char *arg)
{
	switch (c) {
	case 'p':
		h->port = arg;
		return 1;
	case 'd':
		h->dev = arg;
		return 1;
	case 'g':
		h->gid_index = atoi(arg);
		return 1;
	case 'T':
		h->secs = atoi(arg);
		return 1;
	}
	return 0;
}

/* hp_rendezvous: the TCP connection to the other side: to host (a
 * client), or, with host NULL, a listener on port ("listening on port P"
 * printed once it listens) and the one connection it accepts; *lsock gets
 * the listener (-1 for a client). Fails the program after secs. */
static inline int hp_rendezvous(const char *host, const char *port, int secs, int *lsock)
{
	*lsock = -1;
	if (host)
		return hp_connect(host, port, secs);
	*lsock = hp_listen(port);
	printf("listening on port %s\n", port);
	fflush(stdout);
	return hp_accept(*lsock, secs);
}

/* hp_local_gid: the GID index to use on port 1 (gid_index, or when it is
 * negative the one of the address sock is bound to, else 0) and its GID */
static inline int hp_local_gid(struct ibv_context *ctx, int gid_index, int sock, union ibv_gid *gid)
{
	if (gid_index < 0)
		gid_index = hp_sock_gid_index(ctx, 1, sock);
	if (gid_index < 0)
		gid_index = 0;
	if (ibv_query_gid(ctx, 1, gid_index, gid))
		hp_fail("ibv_query_gid %d", gid_index);
	return gid_index;
}

/* hp_create_qp: a QP of type on pd with cq for both queues, one SGE per
 * WR, send_wr / recv_wr deep; sig_all: every send completes */
static inline struct ibv_qp *hp_create_qp(struct ibv_pd *pd, struct ibv_cq *cq,
					  enum ibv_qp_type type, uint32_t send_wr, uint32_t recv_wr,
					  int sig_all)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp *qp;

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = cq;
	ia.recv_cq = cq;
	ia.qp_type = type;
	ia.sq_sig_all = sig_all;
	ia.cap.max_send_wr = send_wr;
	ia.cap.max_recv_wr = recv_wr;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	qp = ibv_create_qp(pd, &ia);
	if (!qp)
		hp_fail("ibv_create_qp: %s", strerror(errno));
	return qp;
}

/* hp_info_self: what this side tells its peer about qp: its QPN, a random
 * first PSN and the GID; the rest zero, for the caller to fill */
static inline void hp_info_self(struct hp_info *me, const struct ibv_qp *qp,
				const union ibv_gid *gid)
{
	memset(me, 0, sizeof(*me));
	me->qpn = qp->qp_num;
	me->psn = hp_random_psn();
	memcpy(me->gid, gid->raw, 16);
}

/* The plain RC set-up of a two-host check: a PD, a 16-entry CQ, a buffer
 * registered for local writes and an RC QP of 4 sends and 4 receives. */
struct hp_rc {
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
};

static inline void hp_rc_open(struct hp_rc *rc, struct ibv_context *ctx, void *buf, size_t len)
{
	rc->pd = ibv_alloc_pd(ctx);
	rc->cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	rc->mr = rc->pd ? ibv_reg_mr(rc->pd, buf, len, IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!rc->pd || !rc->cq || !rc->mr)
		hp_fail("alloc pd/cq/mr: %s", strerror(errno));
	rc->qp = hp_create_qp(rc->pd, rc->cq, IBV_QPT_RC, 4, 4, 0);
}

static inline void hp_rc_close(struct hp_rc *rc)
{
	ibv_destroy_qp(rc->qp);
	ibv_dereg_mr(rc->mr);
	ibv_destroy_cq(rc->cq);
	ibv_dealloc_pd(rc->pd);
}

/* hp_rc_recv: one receive WR (wr_id 1) of the whole registered buffer */
static inline void hp_rc_recv(const struct hp_rc *rc)
{
	struct ibv_sge sg = {.addr = (uintptr_t)rc->mr->addr,
			     .length = (uint32_t)rc->mr->length,
			     .lkey = rc->mr->lkey};
	struct ibv_recv_wr rwr = {.wr_id = 1, .sg_list = &sg, .num_sge = 1}, *bad;

	if (ibv_post_recv(rc->qp, &rwr, &bad))
		hp_fail("ibv_post_recv");
}

/* hp_path_peer: the path to the peer of an exchange (port 1, our GID
 * index, its GID and QPN, its PSN for our receive queue and ours for our
 * send queue) at mtu; the rest of *p zero, for the caller to fill */
static inline void hp_path_peer(struct hp_path *p, int sgid_index, const struct hp_info *me,
				const struct hp_info *peer, enum ibv_mtu mtu)
{
	memset(p, 0, sizeof(*p));
	p->port = 1;
	p->sgid_index = sgid_index;
	memcpy(p->dgid.raw, peer->gid, 16);
	p->dlid = peer->lid;
	p->mtu = mtu;
	p->dqpn = peer->qpn;
	p->rq_psn = peer->psn;
	p->sq_psn = me->psn;
}

/* hp_poll_until: the next completion into *wc before deadline (µs, as
 * hp_now_us), napping nap_us between empty polls (0: spin); 1, or 0 when
 * none came */
static inline int hp_poll_until(struct ibv_cq *cq, struct ibv_wc *wc, int64_t deadline,
				unsigned int nap_us)
{
	for (;;) {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n < 0)
			hp_fail("ibv_poll_cq: %d", n);
		if (n == 1)
			return 1;
		if (hp_now_us() >= deadline)
			return 0;
		if (nap_us)
			usleep(nap_us);
	}
}

/* hp_wc_status_name: the enum's name, as the tests grep for it */
static inline const char *hp_wc_status_name(enum ibv_wc_status s)
{
	static const char *const names[] = {
	    [IBV_WC_SUCCESS] = "IBV_WC_SUCCESS",
	    [IBV_WC_LOC_LEN_ERR] = "IBV_WC_LOC_LEN_ERR",
	    [IBV_WC_LOC_QP_OP_ERR] = "IBV_WC_LOC_QP_OP_ERR",
	    [IBV_WC_LOC_EEC_OP_ERR] = "IBV_WC_LOC_EEC_OP_ERR",
	    [IBV_WC_LOC_PROT_ERR] = "IBV_WC_LOC_PROT_ERR",
	    [IBV_WC_WR_FLUSH_ERR] = "IBV_WC_WR_FLUSH_ERR",
	    [IBV_WC_MW_BIND_ERR] = "IBV_WC_MW_BIND_ERR",
	    [IBV_WC_BAD_RESP_ERR] = "IBV_WC_BAD_RESP_ERR",
	    [IBV_WC_LOC_ACCESS_ERR] = "IBV_WC_LOC_ACCESS_ERR",
	    [IBV_WC_REM_INV_REQ_ERR] = "IBV_WC_REM_INV_REQ_ERR",
	    [IBV_WC_REM_ACCESS_ERR] = "IBV_WC_REM_ACCESS_ERR",
	    [IBV_WC_REM_OP_ERR] = "IBV_WC_REM_OP_ERR",
	    [IBV_WC_RETRY_EXC_ERR] = "IBV_WC_RETRY_EXC_ERR",
	    [IBV_WC_RNR_RETRY_EXC_ERR] = "IBV_WC_RNR_RETRY_EXC_ERR",
	    [IBV_WC_LOC_RDD_VIOL_ERR] = "IBV_WC_LOC_RDD_VIOL_ERR",
	    [IBV_WC_REM_INV_RD_REQ_ERR] = "IBV_WC_REM_INV_RD_REQ_ERR",
	    [IBV_WC_REM_ABORT_ERR] = "IBV_WC_REM_ABORT_ERR",
	    [IBV_WC_INV_EECN_ERR] = "IBV_WC_INV_EECN_ERR",
	    [IBV_WC_INV_EEC_STATE_ERR] = "IBV_WC_INV_EEC_STATE_ERR",
	    [IBV_WC_FATAL_ERR] = "IBV_WC_FATAL_ERR",
	    [IBV_WC_RESP_TIMEOUT_ERR] = "IBV_WC_RESP_TIMEOUT_ERR",
	    [IBV_WC_GENERAL_ERR] = "IBV_WC_GENERAL_ERR",
	};

	if ((unsigned)s < sizeof(names) / sizeof(names[0]) && names[s])
		return names[s];
	return "IBV_WC_UNKNOWN";
}

#endif
