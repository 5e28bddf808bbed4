/*
 * The RoCEv2 port: the engine's link layer over UDP (IBA Annex A17).
 *
 * Receiving: one socket per address family bound to port 4791 on every
 * address of the namespace, with the destination address of each datagram
 * (IP_PKTINFO / IPV6_RECVPKTINFO), so the ICRC can be checked over the
 * addresses it covers. Every packet is parsed and validated before use —
 * length, version, opcode, ICRC, destination QP, its type and state, P_Key,
 * Q_Key, the source address of a connected QP — and dropped and counted
 * otherwise (sof_proto.h's drop counters).
 *
 * Sending: a few sockets per family, each bound to its own UDP source port
 * in 49152-65535, so that flows spread over ports as Annex A17.3.1 asks;
 * the source address is set per packet (IP_PKTINFO). Packets are built
 * into a queue and leave together (sendmmsg) at the end of each event of
 * the host's loop or when the queue is full; consecutive packets of the
 * same size on the same path leave as one UDP GSO send (UDP_SEGMENT, up
 * to 64 KiB), which the kernel cuts into the same packets — over veth it
 * crosses whole, as TCP's segments do (a capture there shows the joined
 * datagram; tests/lib.sh's captures turn the veth's UDP segmentation off
 * to see the packets). IPv4 packets leave with DF set; one sent alone has
 * IP ID 0, the k-th segment of a GSO send ID k, and the ICRC is made for
 * that (icrc.c). The receive sockets take UDP GRO: a datagram the kernel
 * joined from packets of one flow (a GSO send that crossed veth whole, or
 * GRO on a NIC) is cut again here, and each packet validated on its own.
 *
 * Multicast (mcast.c): a datagram to a group leaves by the interface of
 * its source GID with the sockets' multicast TTL (1); no socket loops
 * multicast back (the daemon delivers to this host's QPs itself), and the
 * receive sockets get only the groups mcast.c joined. A datagram to the
 * multicast QPN goes to every QP attached to its destination group.
 *
 * This file is the RoCEv2 port (struct tp_port_ops, tport.h): the only
 * file of the engine that knows UDP; tp_input checks the ICRC and hands
 * each packet to the receive classifier (recv.c).
 */
#include "sys_msg.h"
#include "tport.h"

#include "sof_gid.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The port's sockets and what the ICRCs keep. */
static struct {
	int fd4, fd6;	    /* receive sockets bound to port 4791 (the host's) */
	int tx4[8], tx6[8]; /* send sockets, one source port each */
	uint16_t txport4[8], txport6[8];
	int ntx4, ntx6;
	bool gso;		     /* UDP GSO in use (off: SOFTOFED_NO_GSO, or refused) */
	bool gro;		     /* the receive sockets take UDP GRO */
	struct roce_icrc_cache icrc; /* what the ICRCs of sent and received packets keep */
} udp;

static const uint8_t v4pfx[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

/* ---- sockets ------------------------------------------------------------------ */

#ifndef IPV6_MULTICAST_ALL
#define IPV6_MULTICAST_ALL 29 /* linux/in6.h, Linux 4.20 */
#endif

/* Multicast: nothing sent loops back to this host (the daemon delivers a
 * datagram to its own QPs when it sends it), and a socket receives only
 * the groups it joined, not every group some process of the namespace
 * joined. Best effort: without them the source check of tp_input and the
 * group look-up of mcast.c still drop what is not ours. */
static void mcast_opts(int fd, bool v6)
{
	int zero = 0;

	if (v6) {
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_LOOP, &zero, sizeof(zero));
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_ALL, &zero, sizeof(zero));
	} else {
		(void)setsockopt(fd, IPPROTO_IP, IP_MULTICAST_LOOP, &zero, sizeof(zero));
		(void)setsockopt(fd, IPPROTO_IP, IP_MULTICAST_ALL, &zero, sizeof(zero));
	}
}

int tp_udp_socket(bool v6, uint16_t port, bool reuseport)
{
	int fd = sof_udp_socket(v6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK);
	int one = 1, pmtu = v6 ? IPV6_PMTUDISC_DO : IP_PMTUDISC_DO;

	if (fd < 0)
		return -errno;
	if (reuseport && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)))
		goto err;
	mcast_opts(fd, v6);
	if (v6) {
		struct sockaddr_in6 sa = {.sin6_family = AF_INET6, .sin6_port = htons(port)};

		if (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) ||
		    setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof(one)) ||
		    setsockopt(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, &pmtu, sizeof(pmtu)) ||
		    bind(fd, (struct sockaddr *)&sa, sizeof(sa)))
			goto err;
	} else {
		struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};

		if (setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one)) ||
		    setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu)) ||
		    bind(fd, (struct sockaddr *)&sa, sizeof(sa)))
			goto err;
	}
	sof_sock_bufs(fd, 8 << 20);
	return fd;
err:
	one = -errno;
	close(fd);
	return one;
}

int tp_flow_socket(const struct roce_addr *a)
{
	bool v6 = !sof_gid_is_v4(a->dst);
	union {
		struct sockaddr_in v4;
		struct sockaddr_in6 v6;
	} local = {0}, peer = {0};
	socklen_t len = v6 ? sizeof(local.v6) : sizeof(local.v4);
	int one = 1, pmtu = v6 ? IPV6_PMTUDISC_DO : IP_PMTUDISC_DO;
	int fd = sof_udp_socket(v6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (fd < 0)
		return -errno;
	if (v6) {
		local.v6.sin6_family = peer.v6.sin6_family = AF_INET6;
		memcpy(&local.v6.sin6_addr, a->dst, 16);
		memcpy(&peer.v6.sin6_addr, a->src, 16);
		local.v6.sin6_port = htons(ROCE_UDP_PORT);
		peer.v6.sin6_port = htons(a->sport);
	} else {
		local.v4.sin_family = peer.v4.sin_family = AF_INET;
		memcpy(&local.v4.sin_addr, a->dst + 12, 4);
		memcpy(&peer.v4.sin_addr, a->src + 12, 4);
		local.v4.sin_port = htons(ROCE_UDP_PORT);
		peer.v4.sin_port = htons(a->sport);
	}
	/* no IP_PKTINFO and no source address per datagram: the flow's
	 * addresses are a's (tp_rx's flow), and the kernel's receive is
	 * shorter without them */
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) ||
	    (v6 && (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) ||
		    setsockopt(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, &pmtu, sizeof(pmtu)))) ||
	    (!v6 && setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu))) ||
	    (udp.gro && setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof(one))) ||
	    bind(fd, (struct sockaddr *)&local, len) ||
	    connect(fd, (struct sockaddr *)&peer, len)) {
		one = -errno;
		close(fd);
		return one;
	}
	sof_sock_bufs(fd, 8 << 20);
	return fd;
}

/* Send sockets on source ports from 0xc000 up, skipping ports in use. */
static void open_tx(bool v6, int *fds, uint16_t *ports, int *n)
{
	uint16_t port = (uint16_t)(0xc000 | (sof_random32() & 0x3fff));

	for (int tries = 0; *n < 8 && tries < 256; tries++, port++) {
		int fd;

		if (port < 0xc000)
			port = 0xc000;
		fd = tp_udp_socket(v6, port, false);
		if (fd < 0)
			continue;
		fds[*n] = fd;
		ports[*n] = port;
		(*n)++;
	}
}

/* The port's half of tp_start: UDP GRO on the receive sockets, the send
 * sockets. */
void tp_udp_start(int fd4, int fd6, bool tx)
{
	udp.fd4 = fd4;
	udp.fd6 = fd6;
	/* GSO and GRO (the top comment); SOFTOFED_NO_GSO turns both off */
	udp.gso = getenv("SOFTOFED_NO_GSO") == NULL;
	if (udp.gso) {
		int one = 1;

		udp.gro = (fd4 < 0 || !setsockopt(fd4, SOL_UDP, UDP_GRO, &one, sizeof(one))) &&
			  (fd6 < 0 || !setsockopt(fd6, SOL_UDP, UDP_GRO, &one, sizeof(one)));
	}
	if (!tx)
		return;
	open_tx(false, udp.tx4, udp.txport4, &udp.ntx4);
	open_tx(true, udp.tx6, udp.txport6, &udp.ntx6);
}

bool tp_gro(void) { return udp.gro; }

int tp_udp_rx_fd(bool v6) { return v6 ? udp.fd6 : udp.fd4; }

static uint16_t udp_flow_port(bool v6, uint32_t sqpn, uint32_t dqpn)
{
	uint32_t h = (sqpn * 0x9e3779b1u) ^ (dqpn * 0x85ebca6bu);
	int n = v6 ? udp.ntx6 : udp.ntx4;

	if (!n)
		return 0;
	h ^= h >> 15;
	return v6 ? udp.txport6[h % (uint32_t)n] : udp.txport4[h % (uint32_t)n];
}

static int tx_fd(bool v6, uint16_t sport)
{
	for (int i = 0; i < (v6 ? udp.ntx6 : udp.ntx4); i++)
		if ((v6 ? udp.txport6[i] : udp.txport4[i]) == sport)
			return v6 ? udp.tx6[i] : udp.tx4[i];
	return -1;
}

/* ---- sending ------------------------------------------------------------------- */

/* Packets built and not yet sent: tp_send fills the queue, tp_tx_flush
 * empties it with sendmmsg. TX_GSO_SEGS and TX_GSO_BYTES bound one GSO
 * send (the kernel's UDP_MAX_SEGMENTS, and one IP datagram of 64 KiB). */
#define TX_BATCH 64
#define TX_GSO_SEGS 64u
#define TX_GSO_BYTES 65000u
#define TX_IOV (2 + TP_TX_REFS)

struct tx_pkt {
	uint32_t len; /* UDP payload, ICRC included */
	int fd;
	bool v6, mcast;
	uint16_t sport;
	uint32_t ifindex;
	uint8_t sgid[16], dgid[16];
	/* the packet in pieces: headers (and a copied payload) in buf, a
	 * payload sent by reference, pad and ICRC in tail */
	uint32_t niov, tlen;
	struct iovec iov[TX_IOV];
	uint8_t tail[8];
	uint8_t buf[TP_MAX_PKT];
};

static struct tx_pkt txq[TX_BATCH];

static void udp_flush(void);

/* The port's send (tp_send, tp_send_ref): ref, when not NULL, holds the
 * payload */
static int tx_build(const struct tp_path *path, struct roce_hdr *h, uint32_t paylen,
		    tp_gather_fn gather, void *arg, const struct iovec *ref, uint32_t nref)
{
	struct tx_pkt *t = &txq[tp.ntx];
	bool v6 = !sof_gid_is_v4(path->dgid);
	struct roce_addr a;
	uint32_t crc;
	size_t hl;
	int err;

	if (paylen > 4096 || nref > TP_TX_REFS)
		return -EMSGSIZE;
	h->pad = (uint8_t)((4 - (paylen & 3)) & 3);
	hl = roce_hdr_write(t->buf, h);
	if (!hl)
		return -EINVAL;
	t->niov = 0;
	t->iov[t->niov++] = (struct iovec){t->buf, hl};
	if (ref) {
		for (uint32_t i = 0; i < nref; i++)
			t->iov[t->niov++] = ref[i];
	} else if (paylen) {
		err = gather(arg, t->buf + hl, paylen);
		if (err)
			return err;
		t->iov[0].iov_len += paylen;
	}
	memset(t->tail, 0, h->pad);
	t->iov[t->niov++] = (struct iovec){t->tail, h->pad};
	memcpy(a.src, path->sgid, 16);
	memcpy(a.dst, path->dgid, 16);
	a.sport = path->sport;
	a.dport = ROCE_UDP_PORT;
	/* IPv4: the ICRC of IP ID 0, what a datagram sent alone carries;
	 * tp_tx_flush corrects it for a GSO segment */
	crc = roce_icrc_iov_c(&udp.icrc, &a, t->iov, t->niov);
	t->tail[h->pad] = (uint8_t)crc;
	t->tail[h->pad + 1] = (uint8_t)(crc >> 8);
	t->tail[h->pad + 2] = (uint8_t)(crc >> 16);
	t->tail[h->pad + 3] = (uint8_t)(crc >> 24);
	t->tlen = h->pad + ROCE_ICRC_LEN;
	t->iov[t->niov - 1].iov_len = t->tlen;

	/* only now: a packet without a socket to leave by is still built,
	 * so its memory is checked (-EACCES) with or without a network */
	t->fd = tx_fd(v6, path->sport);
	if (t->fd < 0)
		return -ENETUNREACH;
	t->len = (uint32_t)(hl + paylen + t->tlen);
	t->v6 = v6;
	t->mcast = sof_gid_is_mcast(path->dgid);
	t->sport = path->sport;
	t->ifindex = path->ifindex;
	memcpy(t->sgid, path->sgid, 16);
	memcpy(t->dgid, path->dgid, 16);
	if (++tp.ntx == TX_BATCH)
		udp_flush();
	return 0;
}

/* Turn t's ICRC of IP ID 0 into the one of ID id (IPv4), or back. */
static void icrc_ipid(struct tx_pkt *t, uint16_t id)
{
	uint32_t d = roce_icrc_ipid_delta_c(&udp.icrc, t->len - ROCE_ICRC_LEN, id);
	uint8_t *w = t->tail + t->tlen - ROCE_ICRC_LEN;

	w[0] ^= (uint8_t)d;
	w[1] ^= (uint8_t)(d >> 8);
	w[2] ^= (uint8_t)(d >> 16);
	w[3] ^= (uint8_t)(d >> 24);
}

/* May b follow a in one GSO send? Same socket and addresses, and a's size
 * (the last segment of a send may be shorter). */
static bool same_run(const struct tx_pkt *a, const struct tx_pkt *b)
{
	return b->fd == a->fd && !a->mcast && !b->mcast && b->len <= a->len &&
	       !memcmp(b->dgid, a->dgid, 16) && !memcmp(b->sgid, a->sgid, 16);
}

union tx_ctl {
	char b4[CMSG_SPACE(sizeof(struct in_pktinfo)) + CMSG_SPACE(sizeof(uint16_t))];
	char b6[CMSG_SPACE(sizeof(struct in6_pktinfo)) + CMSG_SPACE(sizeof(uint16_t))];
	struct cmsghdr align;
};

union tx_addr {
	struct sockaddr_in v4;
	struct sockaddr_in6 v6;
};

/* A message of at most TX_STAGE bytes in more than one piece is copied
 * into one (stage): the kernel's cost of a UDP send grows with the
 * pieces (a small SEND and the ACK that leaves with it are five:
 * headers, payload, pad and ICRC, each ACK's headers and ICRC), by far
 * more than the copy costs (bench/README.md). */
#define TX_STAGE 512u

/* A unicast packet leaves without IP_PKTINFO when the kernel would give
 * it its GID's address anyway: the route look-up of a send that names its
 * source costs more (the source address's device is looked up first). A UDP socket connected to the
 * destination tells which source the kernel picks (getsockname); the answer is kept for SRC_PAIRS
 * source/destination pairs and asked again after SRC_CHECK_NS, so that a change of addresses or
 * routes (the GID of a second address, a route with another preferred source) takes the source back
 * into the message within that time. Multicast and IPv6 link-local sources keep it always. */
#define SRC_PAIRS 8
#define SRC_CHECK_NS 100000000ull

static struct {
	struct {
		uint8_t sgid[16], dgid[16];
		bool used, kernel_picks;
		uint64_t checked_ns;
	} pair[SRC_PAIRS];
	unsigned next;
} route_src;

/* The socket of route_source_is, one per family, opened at its first use
 * and kept: one opened and closed at each check ran in the program's
 * process beside the program's own descriptors, took the lowest free
 * number for a moment, and a program that closes a number twice (iperf3
 * 3.12 closes each stream's twice) closed ours, or we closed the
 * program's descriptor that took the number meanwhile. Its inode tells
 * whether the number is still ours (a program's double close, then a new
 * descriptor of its own on the number: that one is left alone). A child
 * of fork() shares it, but runs no engine (its QPs use the daemon's).
 * Serialised as the rest of the send path (route_src). */
static struct {
	int fd;
	ino_t ino;
	dev_t dev;
} route_sock[2] = {{.fd = -1}, {.fd = -1}};

static int route_socket(bool v6)
{
	struct stat st;
	int fd, i = v6;

	if (route_sock[i].fd >= 0 && !fstat(route_sock[i].fd, &st) &&
	    st.st_ino == route_sock[i].ino && st.st_dev == route_sock[i].dev)
		return route_sock[i].fd;
	/* never opened, or no longer ours: not closed, a new one */
	route_sock[i].fd = -1;
	fd = sof_udp_socket(v6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_CLOEXEC);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st)) {
		close(fd);
		return -1;
	}
	route_sock[i].fd = fd;
	route_sock[i].ino = st.st_ino;
	route_sock[i].dev = st.st_dev;
	return fd;
}

/* Does the kernel send from sgid to dgid by itself? Connecting a UDP
 * socket looks the route up and sends nothing. The source the first
 * connect chose stays the socket's (a connect to another address keeps
 * it, or fails when that address is not reachable from it): the socket is
 * disconnected first (AF_UNSPEC), which gives it back, and each check
 * looks the route up as a new socket's connect would. */
static bool route_source_is(bool v6, const uint8_t sgid[16], const uint8_t dgid[16])
{
	union tx_addr to = {0}, me = {0};
	socklen_t len = v6 ? sizeof(me.v6) : sizeof(me.v4);
	struct sockaddr none = {.sa_family = AF_UNSPEC};
	int fd = route_socket(v6);

	if (fd < 0)
		return false;
	(void)connect(fd, &none, sizeof(none));
	if (v6) {
		to.v6.sin6_family = AF_INET6;
		to.v6.sin6_port = htons(ROCE_UDP_PORT);
		memcpy(&to.v6.sin6_addr, dgid, 16);
	} else {
		to.v4.sin_family = AF_INET;
		to.v4.sin_port = htons(ROCE_UDP_PORT);
		memcpy(&to.v4.sin_addr, dgid + 12, 4);
	}
	return !connect(fd, (struct sockaddr *)&to, len) &&
	       !getsockname(fd, (struct sockaddr *)&me, &len) &&
	       (v6 ? !memcmp(&me.v6.sin6_addr, sgid, 16) : !memcmp(&me.v4.sin_addr, sgid + 12, 4));
}

/* May t leave without IP_PKTINFO? */
static bool src_by_route(const struct tx_pkt *t)
{
	struct timespec ts;
	uint64_t now;
	unsigned k;

	if (t->mcast || (t->v6 && t->sgid[0] == 0xfe && (t->sgid[1] & 0xc0) == 0x80))
		return false;
	/* coarse: a few ns, and a tenth of a second is all it must tell */
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	for (k = 0; k < SRC_PAIRS; k++)
		if (route_src.pair[k].used && !memcmp(route_src.pair[k].dgid, t->dgid, 16) &&
		    !memcmp(route_src.pair[k].sgid, t->sgid, 16))
			break;
	if (k == SRC_PAIRS) {
		k = route_src.next++ % SRC_PAIRS;
		memcpy(route_src.pair[k].sgid, t->sgid, 16);
		memcpy(route_src.pair[k].dgid, t->dgid, 16);
		route_src.pair[k].used = true;
	} else if (now - route_src.pair[k].checked_ns < SRC_CHECK_NS) {
		return route_src.pair[k].kernel_picks;
	}
	route_src.pair[k].checked_ns = now;
	route_src.pair[k].kernel_picks = route_source_is(t->v6, t->sgid, t->dgid);
	return route_src.pair[k].kernel_picks;
}

/* Fill m to send the n packets from t (n > 1: one GSO send, segments of
 * t->len bytes). The source address goes per message (IP_PKTINFO) unless
 * the kernel picks it by itself (src_by_route). */
static void tx_msg(struct msghdr *m, struct iovec *iov, union tx_addr *dst, union tx_ctl *ctl,
		   uint8_t *stage, struct tx_pkt *t, uint32_t n)
{
	uint32_t bytes = 0;
	struct cmsghdr *c;

	memset(m, 0, sizeof(*m));
	memset(dst, 0, sizeof(*dst));
	memset(ctl, 0, sizeof(*ctl));
	m->msg_name = dst;
	c = &ctl->align;
	if (t->v6) {
		dst->v6.sin6_family = AF_INET6;
		dst->v6.sin6_port = htons(ROCE_UDP_PORT);
		memcpy(&dst->v6.sin6_addr, t->dgid, 16);
		m->msg_namelen = sizeof(dst->v6);
	} else {
		dst->v4.sin_family = AF_INET;
		dst->v4.sin_port = htons(ROCE_UDP_PORT);
		memcpy(&dst->v4.sin_addr, t->dgid + 12, 4);
		m->msg_namelen = sizeof(dst->v4);
	}
	if (!src_by_route(t)) {
		if (t->v6) {
			struct in6_pktinfo pi = {0};

			c->cmsg_level = IPPROTO_IPV6;
			c->cmsg_type = IPV6_PKTINFO;
			c->cmsg_len = CMSG_LEN(sizeof(pi));
			memcpy(&pi.ipi6_addr, t->sgid, 16);
			if (t->mcast) /* by the source's interface */
				pi.ipi6_ifindex = t->ifindex;
			memcpy(CMSG_DATA(c), &pi, sizeof(pi));
		} else {
			struct in_pktinfo pi = {0};

			c->cmsg_level = IPPROTO_IP;
			c->cmsg_type = IP_PKTINFO;
			c->cmsg_len = CMSG_LEN(sizeof(pi));
			memcpy(&pi.ipi_spec_dst, t->sgid + 12, 4);
			if (t->mcast)
				pi.ipi_ifindex = (int)t->ifindex;
			memcpy(CMSG_DATA(c), &pi, sizeof(pi));
		}
		m->msg_controllen = CMSG_SPACE(c->cmsg_len - CMSG_LEN(0));
	}
	if (n > 1) {
		uint16_t seg = (uint16_t)t->len;

		c = (struct cmsghdr *)((char *)ctl + m->msg_controllen);
		c->cmsg_level = SOL_UDP;
		c->cmsg_type = UDP_SEGMENT;
		c->cmsg_len = CMSG_LEN(sizeof(seg));
		memcpy(CMSG_DATA(c), &seg, sizeof(seg));
		m->msg_controllen += CMSG_SPACE(sizeof(seg));
	}
	if (m->msg_controllen)
		m->msg_control = ctl;
	m->msg_iov = iov;
	m->msg_iovlen = 0;
	for (uint32_t i = 0; i < n; i++) {
		bytes += t[i].len;
		for (uint32_t k = 0; k < t[i].niov; k++)
			if (t[i].iov[k].iov_len)
				iov[m->msg_iovlen++] = t[i].iov[k];
	}
	if (m->msg_iovlen > 1 && bytes <= TX_STAGE) {
		size_t off = 0;

		for (size_t k = 0; k < m->msg_iovlen; k++) {
			memcpy(stage + off, iov[k].iov_base, iov[k].iov_len);
			off += iov[k].iov_len;
		}
		iov[0] = (struct iovec){stage, off};
		m->msg_iovlen = 1;
	}
}

static void tx_count(const struct tx_pkt *t, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		tp_count(SOF_CNT_tx_packets, 1);
		tp_count(SOF_CNT_tx_bytes, t[i].len);
	}
}

/* sendmmsg of msgs[0..n) on fd (their packets: first[i], count[i]).
 * A message the kernel refuses is lost, as on a wire; a GSO send refused
 * as such (a kernel or route without UDP GSO) turns GSO off and goes
 * again packet by packet. */
static void tx_send(int fd, struct mmsghdr *msgs, const uint32_t *first, const uint32_t *count,
		    uint32_t n)
{
	uint32_t done = 0;

	while (done < n) {
		int r = tp_sys_sendmmsg(fd, msgs + done, n - done, MSG_DONTWAIT);

		if (r > 0) {
			for (int i = 0; i < r; i++)
				tx_count(&txq[first[done + i]], count[done + i]);
			done += (uint32_t)r;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && count[done] > 1 &&
		    (errno == EIO || errno == EINVAL || errno == ENOPROTOOPT)) {
			union tx_ctl ctl;
			union tx_addr dst;
			struct iovec iov[TX_IOV];
			uint8_t stage[TX_STAGE];
			struct msghdr m;

			tp_log("UDP GSO refused (%s): sending packet by packet", strerror(errno));
			udp.gso = false;
			for (uint32_t i = 0; i < count[done]; i++) {
				struct tx_pkt *t = &txq[first[done] + i];

				/* back to the ICRC of a datagram sent alone */
				if (!t->v6 && i)
					icrc_ipid(t, (uint16_t)i);
				tx_msg(&m, iov, &dst, &ctl, stage, t, 1);
				if (sendmsg(fd, &m, MSG_DONTWAIT) >= 0)
					tx_count(t, 1);
			}
		}
		done++; /* lost, as on a wire; the transport recovers */
	}
}

/* Hand every queued packet to the kernel, in order: sendmmsg, and runs of
 * same-size packets on one path as one UDP GSO send. */
static void udp_flush(void)
{
	static struct mmsghdr msgs[TX_BATCH];
	static struct iovec iovs[TX_BATCH * TX_IOV];
	static union tx_addr dsts[TX_BATCH];
	static union tx_ctl ctls[TX_BATCH];
	static uint8_t stages[TX_BATCH][TX_STAGE];
	static uint32_t first[TX_BATCH], count[TX_BATCH];
	uint32_t nmsg = 0, i = 0, ntx = tp.ntx;
	int fd = -1;

	while (i < ntx) {
		struct tx_pkt *t = &txq[i];
		uint32_t n = 1, bytes = t->len;

		if (udp.gso) {
			while (i + n < ntx && n < TX_GSO_SEGS &&
			       bytes + txq[i + n].len <= TX_GSO_BYTES && same_run(t, &txq[i + n])) {
				bytes += txq[i + n].len;
				/* a shorter one ends the run */
				if (txq[i + n++].len < t->len)
					break;
			}
		}
		if (t->fd != fd && nmsg) {
			tx_send(fd, msgs, first, count, nmsg);
			nmsg = 0;
		}
		fd = t->fd;
		/* IPv4: segment k of a GSO send leaves with IP ID k (icrc.c) */
		for (uint32_t k = 1; k < n && !t->v6; k++)
			icrc_ipid(&txq[i + k], (uint16_t)k);
		tx_msg(&msgs[nmsg].msg_hdr, &iovs[i * TX_IOV], &dsts[nmsg], &ctls[nmsg],
		       stages[nmsg], t, n);
		first[nmsg] = i;
		count[nmsg] = n;
		nmsg++;
		i += n;
	}
	if (nmsg)
		tx_send(fd, msgs, first, count, nmsg);
	tp.ntx = 0;
}

/* ---- receiving ------------------------------------------------------------------ */

/* One packet from the network: the UDP payload, ICRC included. The
 * transport headers are parsed and checked here with the ICRC, which
 * covers the IP and UDP headers (Annex A17.3.3); the classifier does the
 * rest. */
void tp_input(const uint8_t *buf, size_t len, const struct roce_addr *a)
{
	const uint8_t *payload;
	struct roce_hdr h;
	uint32_t paylen;
	enum roce_drop d;

	tp_count(SOF_CNT_rx_packets, 1);
	tp_count(SOF_CNT_rx_bytes, len);
	d = roce_parse(buf, len, &h, &payload, &paylen);
	if (d != ROCE_DROP_NONE) {
		tp_drop((enum sof_dropctr)(d - 1));
		return;
	}
	if (!roce_icrc_check_c(&udp.icrc, a, buf, len)) {
		tp_drop(SOF_DROP_icrc);
		return;
	}
	tp.rx_pkt = buf;
	tp.rx_pkt_len = len;
	tp_recv(&h, payload, paylen, a);
	tp.rx_pkt = NULL;
}

/* A receive batch: RX_BATCH datagrams, each up to 64 KiB, which a UDP
 * GRO datagram (many packets of one flow, joined by the kernel) may be. */
#define RX_BATCH 32
#define RX_BUF 65536

static struct {
	uint8_t bufs[RX_BATCH][RX_BUF];
	char ctl[RX_BATCH][CMSG_SPACE(sizeof(struct in6_pktinfo)) + CMSG_SPACE(sizeof(int)) + 64];
	struct mmsghdr msgs[RX_BATCH];
	struct iovec iovs[RX_BATCH];
	struct sockaddr_in6 srcs[RX_BATCH];
	bool ready; /* the buffers are set up */
} rxb;

/* Take in datagram i of the batch: one packet, or with UDP GRO (gso: the
 * size of each but the last) several. Its addresses: the source's and
 * the one in its IP_PKTINFO, or flow's (a flow socket's: neither is
 * asked for). */
static void rx_datagram(unsigned i, bool v6, const struct roce_addr *flow)
{
	struct msghdr *mh = &rxb.msgs[i].msg_hdr;
	const uint8_t *buf = rxb.bufs[i];
	size_t len = rxb.msgs[i].msg_len, gso = 0;
	struct roce_addr a;
	struct cmsghdr *c;
	bool have_dst = flow != NULL;

	if (mh->msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
		tp_count(SOF_CNT_rx_packets, 1);
		tp_drop(SOF_DROP_short);
		return;
	}
	if (flow) {
		a = *flow;
	} else if (v6) {
		memset(&a, 0, sizeof(a));
		memcpy(a.src, &rxb.srcs[i].sin6_addr, 16);
		a.sport = ntohs(rxb.srcs[i].sin6_port);
	} else {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)&rxb.srcs[i];

		memset(&a, 0, sizeof(a));
		memcpy(a.src, v4pfx, 12);
		memcpy(a.src + 12, &s4->sin_addr, 4);
		a.sport = ntohs(s4->sin_port);
	}
	a.dport = ROCE_UDP_PORT;
	gso = sof_udp_gro_size(mh);
	for (c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		if (!flow && v6 && c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO) {
			struct in6_pktinfo pi;

			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			memcpy(a.dst, &pi.ipi6_addr, 16);
			have_dst = true;
		} else if (!flow && !v6 && c->cmsg_level == IPPROTO_IP &&
			   c->cmsg_type == IP_PKTINFO) {
			struct in_pktinfo pi;

			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			memcpy(a.dst, v4pfx, 12);
			memcpy(a.dst + 12, &pi.ipi_addr, 4);
			have_dst = true;
		}
	}
	if (!have_dst) {
		tp_count(SOF_CNT_rx_packets, 1);
		tp_drop(SOF_DROP_short);
		return;
	}
	if (!gso || gso >= len) {
		tp_input(buf, len, &a);
		return;
	}
	/* the packets the kernel joined: each of gso bytes, the last what
	 * is left; each validated on its own */
	for (size_t off = 0; off < len; off += gso)
		tp_input(buf + off, len - off < gso ? len - off : gso, &a);
}

/* Read what the socket holds (bounded), then send the ACKs that became
 * due: one ACK for a whole batch is the coalescing of IBA 9.7.5.1.1.
 * recvmmsg asks for as many datagrams as the last call of the family
 * found, twice as many when it found all it asked for, at least one: the
 * kernel tries for each one asked, so a ping-pong that finds its one
 * datagram does not pay for a try on the emptied socket before it goes
 * on, and a stream soon reads RX_BATCH at a time. */
int tp_rx(int fd, bool v6, const struct roce_addr *flow)
{
	static int want[2] = {1, 1};
	int rounds = 0, n, got = 0;

	if (!rxb.ready) {
		for (int i = 0; i < RX_BATCH; i++) {
			rxb.iovs[i].iov_base = rxb.bufs[i];
			rxb.iovs[i].iov_len = sizeof(rxb.bufs[i]);
			rxb.msgs[i].msg_hdr.msg_iov = &rxb.iovs[i];
			rxb.msgs[i].msg_hdr.msg_iovlen = 1;
			rxb.msgs[i].msg_hdr.msg_control = rxb.ctl[i];
		}
		rxb.ready = true;
	}
	tp.rx_flow = flow != NULL;
	tp.flow_foreign = false;
	tp.rx_stop = false;
	do {
		for (int i = 0; i < want[v6]; i++) {
			rxb.msgs[i].msg_hdr.msg_name = flow ? NULL : &rxb.srcs[i];
			rxb.msgs[i].msg_hdr.msg_namelen = flow ? 0 : sizeof(rxb.srcs[i]);
			rxb.msgs[i].msg_hdr.msg_controllen = sizeof(rxb.ctl[i]);
			rxb.msgs[i].msg_hdr.msg_flags = 0;
		}
		n = tp_sys_recvmmsg(fd, rxb.msgs, (unsigned)want[v6], MSG_DONTWAIT);
		got += n > 0 ? n : 0;
		for (int i = 0; i < n; i++)
			rx_datagram((unsigned)i, v6, flow);
		if (n == want[v6])
			want[v6] = n * 2 < RX_BATCH ? n * 2 : RX_BATCH;
		else
			want[v6] = n > 1 ? n : 1;
	} while (n == RX_BATCH && ++rounds < 32 && !tp.rx_stop);
	tp.rx_flow = false;
	tp_input_end();
	return got;
}

const struct tp_port_ops tp_roce_udp_port = {
    .name = "RoCEv2",
    .addr_len = 16,
    .max_payload = 4096,
    .send = tx_build,
    .flush = udp_flush,
    .flow_port = udp_flow_port,
};
