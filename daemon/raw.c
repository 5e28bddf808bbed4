/*
 * Raw packet QPs and flow steering (ibv_create_flow): what the Ethernet
 * port of a NIC's raw packet QP sees, over the served interfaces.
 *
 * Creating a RAW_PACKET QP needs CAP_NET_RAW, as in the kernel's
 * ib_uverbs create_qp (-EPERM otherwise): such a process could open an
 * AF_PACKET socket itself, so a flow shows it nothing it could not
 * capture. The capability is read from /proc/PID/status of the
 * connection's SO_PEERCRED pid, whose effective uid must still be the
 * connection's (a reused pid fails) and whose user namespace must be the
 * daemon's (capabilities of a child namespace do not count).
 *
 * While any flow exists the daemon holds one AF_PACKET socket (ETH_P_ALL)
 * in its epoll loop; every frame received on a served interface (one with
 * a GID) is matched against the flows and copied whole into the receive
 * queue of each QP whose flow takes it (transport: tp_raw_input), once
 * per QP. As on mlx5, NORMAL flows of the best (lowest) priority that
 * match take a frame; ALL_DEFAULT and MC_DEFAULT take what no NORMAL flow
 * took; SNIFFER flows take everything. Frames the host sends are not
 * seen. Frames are copied, not taken from the host's stack. A frame whose
 * checksum the sending host left to the NIC (veth: CHECKSUM_PARTIAL, told
 * by the socket's virtio_net_hdr) gets it completed here, as it would be
 * on the wire. A frame a raw QP sends leaves by a packet socket on the
 * first served non-loopback interface. All of this needs the daemon to
 * hold CAP_NET_RAW (root in the tests' namespaces): without it CREATE_FLOW
 * fails with -EPERM and sent frames are lost.
 */
#include "sofd.h"
#include "tp.h"

#include "sof_gid.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/virtio_net.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

struct flow {
	struct sof_link link; /* in flows */
	struct sofd_qp *qp;
	uint32_t handle;
	struct sof_flow_rule r;
};

static struct sof_link flows = {&flows, &flows};
static uint32_t nflows, next_handle = 1;
static struct sofd_pollable rx = {SOFD_POLL_RAW, -1};
static int tx_fd = -1;

/* ---- the capability ---------------------------------------------------------- */

bool sofd_raw_permitted(const struct sofd_conn *c)
{
	char path[64], line[256];
	struct stat mine, theirs;
	bool uid_ok = false, cap = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)c->pid);
	if (stat("/proc/self/ns/user", &mine) || stat(path, &theirs) ||
	    mine.st_ino != theirs.st_ino || mine.st_dev != theirs.st_dev)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)c->pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long eff;
		unsigned ruid, euid;

		if (sscanf(line, "Uid: %u %u", &ruid, &euid) == 2)
			uid_ok = euid == c->uid;
		else if (sscanf(line, "CapEff: %llx", &eff) == 1)
			cap = (eff >> 13) & 1; /* CAP_NET_RAW */
	}
	fclose(f);
	return uid_ok && cap;
}

/* ---- matching ---------------------------------------------------------------- */

static bool masked_eq(const uint8_t *a, const uint8_t *v, const uint8_t *m, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((a[i] ^ v[i]) & m[i])
			return false;
	return true;
}

static bool eq16(const uint8_t *p, uint16_t v_be, uint16_t m_be)
{
	uint16_t x;

	memcpy(&x, p, 2);
	return !((x ^ v_be) & m_be);
}

static bool eq32(const uint8_t *p, uint32_t v_be, uint32_t m_be)
{
	uint32_t x;

	memcpy(&x, p, 4);
	return !((x ^ v_be) & m_be);
}

/* Whether NORMAL rule r matches frame f of len bytes (fields in network
 * order; an 802.1Q tag is taken off by the kernel, so a VLAN mask never
 * matches). */
static bool rule_match(const struct sof_flow_rule *r, const uint8_t *f, uint32_t len)
{
	uint16_t et = (uint16_t)(f[12] << 8 | f[13]);
	const uint8_t *l3 = f + 14, *l4 = NULL;
	uint32_t l3len = len - 14;
	uint8_t proto = 0;

	if ((r->layers & SOF_FLOW_ETH) &&
	    (!masked_eq(f, r->dmac, r->dmac_m, 6) || !masked_eq(f + 6, r->smac, r->smac_m, 6) ||
	     !eq16(f + 12, r->ether_type, r->ether_type_m) || r->vlan_m))
		return false;
	if (et == ETH_P_IP && l3len >= 20 && (l3[0] >> 4) == 4) {
		uint32_t ihl = (l3[0] & 15u) * 4;

		if (r->layers & SOF_FLOW_IPV6)
			return false;
		if ((r->layers & SOF_FLOW_IPV4) &&
		    (!eq32(l3 + 12, r->src4, r->src4_m) || !eq32(l3 + 16, r->dst4, r->dst4_m) ||
		     ((l3[9] ^ r->proto4) & r->proto4_m) || ((l3[1] ^ r->tos4) & r->tos4_m)))
			return false;
		proto = l3[9];
		/* a fragment after the first has no L4 header */
		if (ihl >= 20 && l3len >= ihl + 4 && !((l3[6] & 0x1f) | l3[7]))
			l4 = l3 + ihl;
	} else if (et == ETH_P_IPV6 && l3len >= 40) {
		if (r->layers & SOF_FLOW_IPV4)
			return false;
		if ((r->layers & SOF_FLOW_IPV6) && (!masked_eq(l3 + 8, r->src6, r->src6_m, 16) ||
						    !masked_eq(l3 + 24, r->dst6, r->dst6_m, 16)))
			return false;
		proto = l3[6];
		if (l3len >= 44)
			l4 = l3 + 40;
	} else if (r->layers & (SOF_FLOW_IPV4 | SOF_FLOW_IPV6 | SOF_FLOW_TCP | SOF_FLOW_UDP)) {
		return false;
	}
	if (r->layers & (SOF_FLOW_TCP | SOF_FLOW_UDP)) {
		uint8_t want = (r->layers & SOF_FLOW_TCP) ? IPPROTO_TCP : IPPROTO_UDP;

		if (!l4 || proto != want || !eq16(l4, r->sport, r->sport_m) ||
		    !eq16(l4 + 2, r->dport, r->dport_m))
			return false;
	}
	return true;
}

static bool served(int ifindex)
{
	for (uint32_t i = 0; i < sofd.dev.num_gids && i < SOF_MAX_GIDS; i++)
		if (!sof_gid_empty(&sofd.dev.gids[i]) &&
		    sofd.dev.gids[i].ifindex == (uint32_t)ifindex)
			return true;
	return false;
}

/* A frame to every QP whose flow takes it (the top of this file). */
static void deliver(const uint8_t *f, uint32_t len)
{
	static uint64_t stamp;
	uint32_t best = UINT32_MAX;
	struct sof_link *l;
	bool normal = false;

	stamp++;
	for (l = flows.next; l != &flows; l = l->next) {
		struct flow *fl = sof_container_of(l, struct flow, link);

		if (fl->r.type == IBV_FLOW_ATTR_NORMAL && fl->r.priority < best &&
		    rule_match(&fl->r, f, len))
			best = fl->r.priority;
	}
	for (l = flows.next; l != &flows; l = l->next) {
		struct flow *fl = sof_container_of(l, struct flow, link);
		bool take = false;

		if (fl->r.type == IBV_FLOW_ATTR_NORMAL)
			take = fl->r.priority == best && rule_match(&fl->r, f, len);
		else if (fl->r.type == IBV_FLOW_ATTR_SNIFFER)
			take = true;
		if (take && fl->r.type == IBV_FLOW_ATTR_NORMAL)
			normal = true;
		if (take && fl->qp->raw_stamp != stamp) {
			fl->qp->raw_stamp = stamp;
			tp_raw_input(&fl->qp->tq, f, len);
		}
	}
	if (normal)
		return;
	for (l = flows.next; l != &flows; l = l->next) {
		struct flow *fl = sof_container_of(l, struct flow, link);
		bool take = fl->r.type == IBV_FLOW_ATTR_ALL_DEFAULT ||
			    (fl->r.type == IBV_FLOW_ATTR_MC_DEFAULT && (f[0] & 1));

		if (take && fl->qp->raw_stamp != stamp) {
			fl->qp->raw_stamp = stamp;
			tp_raw_input(&fl->qp->tq, f, len);
		}
	}
}

/* The checksum the sender left to the NIC: the Internet checksum of
 * [start, n) into start + off, whose field holds the pseudo-header's sum
 * (RFC 1071). */
static void csum_complete(uint8_t *f, size_t n, size_t start, size_t off)
{
	uint32_t s = 0;
	uint16_t c;

	if (start >= n || start + off + 2 > n)
		return;
	for (size_t i = start; i + 1 < n; i += 2)
		s += (uint32_t)(f[i] << 8 | f[i + 1]);
	if ((n - start) & 1)
		s += (uint32_t)(f[n - 1] << 8);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	c = (uint16_t)~s;
	f[start + off] = (uint8_t)(c >> 8);
	f[start + off + 1] = (uint8_t)c;
}

void sofd_raw_event(void)
{
	static uint8_t buf[TP_RAW_MAX_FRAME];

	for (int i = 0; i < 64 && rx.fd >= 0; i++) {
		struct virtio_net_hdr vh;
		struct sockaddr_ll sll;
		struct iovec iov[2] = {{&vh, sizeof(vh)}, {buf, sizeof(buf)}};
		struct msghdr mh = {
		    .msg_name = &sll, .msg_namelen = sizeof(sll), .msg_iov = iov, .msg_iovlen = 2};
		ssize_t n = recvmsg(rx.fd, &mh, 0);

		if (n < 0)
			break;
		n -= (ssize_t)sizeof(vh);
		if (n < 14 || (mh.msg_flags & MSG_TRUNC) || sll.sll_pkttype == PACKET_OUTGOING ||
		    !served(sll.sll_ifindex))
			continue;
		if (vh.flags & VIRTIO_NET_HDR_F_NEEDS_CSUM)
			csum_complete(buf, (size_t)n, vh.csum_start, vh.csum_offset);
		deliver(buf, (uint32_t)n);
	}
}

/* ---- flows ------------------------------------------------------------------- */

static int rx_open(void)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &rx};

	if (rx.fd >= 0)
		return 0;
	rx.fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, htons(ETH_P_ALL));
	if (rx.fd < 0)
		return -errno;
	/* each frame after a virtio_net_hdr: where its checksum is missing */
	if (setsockopt(rx.fd, SOL_PACKET, PACKET_VNET_HDR, &(int){1}, sizeof(int)) ||
	    epoll_ctl(sofd.epfd, EPOLL_CTL_ADD, rx.fd, &ev)) {
		int err = -errno;

		close(rx.fd);
		rx.fd = -1;
		return err;
	}
	sofd_log("raw packet socket open: flows attached");
	return 0;
}

static void flow_free(struct flow *fl)
{
	sof_list_del(&fl->link);
	fl->qp->nflows--;
	fl->qp->owner->n.flows--;
	free(fl);
	if (--nflows == 0 && rx.fd >= 0) {
		close(rx.fd); /* leaves the epoll set */
		rx.fd = -1;
		sofd_log("raw packet socket closed: no flows");
	}
}

int sofd_raw_create_flow(struct sofd_req *rq, struct sofd_rep *rp)
{
	static struct sof_flow_rep rep;
	const struct sof_flow_req *req = rq->data;
	struct sofd_qp *qp = sof_hmap_get(&sofd.qps, req->qpn);
	struct flow *fl;
	int err;

	if (!qp || qp->owner != rq->c)
		return -ENOENT;
	if (qp->type != IBV_QPT_RAW_PACKET || req->rule.type > IBV_FLOW_ATTR_SNIFFER ||
	    (req->rule.layers & ~(uint32_t)(SOF_FLOW_ETH | SOF_FLOW_IPV4 | SOF_FLOW_IPV6 |
					    SOF_FLOW_TCP | SOF_FLOW_UDP)))
		return -EINVAL;
	if (rq->c->n.flows >= SOF_MAX_FLOWS)
		return -ENOMEM;
	err = rx_open();
	if (err)
		return err == -EACCES ? -EPERM : err;
	fl = calloc(1, sizeof(*fl));
	if (!fl) {
		if (!nflows) {
			close(rx.fd);
			rx.fd = -1;
		}
		return -ENOMEM;
	}
	fl->qp = qp;
	fl->r = req->rule;
	fl->handle = next_handle++;
	if (!next_handle)
		next_handle = 1;
	sof_list_add(&flows, &fl->link);
	nflows++;
	qp->nflows++;
	rq->c->n.flows++;
	rep.handle = fl->handle;
	rp->data = &rep;
	rp->len = sizeof(rep);
	return 0;
}

int sofd_raw_destroy_flow(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct sof_flow_rep *req = rq->data;

	(void)rp;
	for (struct sof_link *l = flows.next; l != &flows; l = l->next) {
		struct flow *fl = sof_container_of(l, struct flow, link);

		if (fl->handle == req->handle && fl->qp->owner == rq->c) {
			flow_free(fl);
			return 0;
		}
	}
	return -ENOENT;
}

void sofd_raw_qp_release(struct sofd_qp *qp)
{
	struct sof_link *l, *next;

	if (!qp->nflows)
		return;
	for (l = flows.next; l != &flows; l = next) {
		struct flow *fl = sof_container_of(l, struct flow, link);

		next = l->next;
		if (fl->qp == qp)
			flow_free(fl);
	}
}

/* ---- sending ----------------------------------------------------------------- */

/* The interface raw frames leave by: the first served non-loopback one. */
static int tx_ifindex(void)
{
	int first = 0;

	for (uint32_t i = 0; i < sofd.dev.num_gids && i < SOF_MAX_GIDS; i++) {
		const struct sof_gid_entry *g = &sofd.dev.gids[i];
		struct ifreq ifr;

		if (sof_gid_empty(g))
			continue;
		if (!first)
			first = (int)g->ifindex;
		memset(&ifr, 0, sizeof(ifr));
		if (!if_indextoname(g->ifindex, ifr.ifr_name) || ioctl(tx_fd, SIOCGIFFLAGS, &ifr) ||
		    (ifr.ifr_flags & IFF_LOOPBACK))
			continue;
		return (int)g->ifindex;
	}
	return first;
}

int sofd_raw_xmit(const uint8_t *frame, uint32_t len)
{
	struct sockaddr_ll sll;

	if (tx_fd < 0) {
		/* protocol 0: a socket that sends and receives nothing */
		tx_fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (tx_fd < 0)
			return errno == EACCES ? -EPERM : -errno;
	}
	memset(&sll, 0, sizeof(sll));
	sll.sll_family = AF_PACKET;
	sll.sll_ifindex = tx_ifindex();
	sll.sll_halen = 6;
	memcpy(sll.sll_addr, frame, 6);
	if (!sll.sll_ifindex)
		return -ENETDOWN;
	if (sendto(tx_fd, frame, len, 0, (struct sockaddr *)&sll, sizeof(sll)) < 0)
		return -errno;
	return 0;
}
