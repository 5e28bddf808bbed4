/*
 * Multicast for UD QPs (ibv_attach_mcast): the device's groups and the IP
 * multicast that carries them between hosts.
 *
 * A group is named by its MGID, a multicast GID: an IPv6 multicast address,
 * or an IPv4 group IPv4-mapped (::ffff:239.1.2.3, the MGID rdma_cm makes for
 * an IPv4 group). On RoCEv2 the MGID is the IP address the group's
 * datagrams are sent to (Annex A17). The daemon keeps the QPs attached to
 * each group; while a group has one, the receive socket of its family (the
 * one bound to port 4791) is a member of the IP group on every served
 * interface that has a GID of that family and can multicast (loopback
 * cannot: nothing reaches another host through it), and the last detach
 * leaves it. That socket is given only the groups it joined
 * (IP_MULTICAST_ALL off, udp.c).
 *
 * A datagram to a group carries the destination QPN 0xFFFFFF and reaches
 * every QP attached to the group, each of which takes it as any UD receive
 * after checking its own state and Q_Key; the GRH area holds the IP header,
 * whose destination is the group. A datagram from another host arrives
 * through the socket (udp.c tp_input, recv.c tp_recv, then the
 * TP_HOOK_MCAST hook the daemon sets to tp_mcast_input); one sent here
 * leaves once for the group's address on the interface of its source GID
 * and is delivered by
 * the engine itself to the QPs attached here (requester.c send_ud). The
 * send sockets do not loop multicast back, and a multicast datagram whose
 * source is one of this host's addresses is dropped on arrival, so no QP
 * receives a datagram twice.
 *
 * A UD QP whose transport runs in its program (steered) sends there, to
 * the network; the program then hands the datagram to the daemon
 * (MCAST_LOOP on RoCEv2, tp_mcast_loop; over the InfiniBand link socket
 * on sofib0, ibpkt.c), and the daemon delivers it here as its own. What
 * comes from the network for the group comes to the daemon, which
 * delivers it to such a QP through its receive-only view
 * (daemon/steer.c).
 *
 * Groups are found by a hash of the MGID (a fixed table of chained
 * buckets). Only the daemon links this file (a program's engine delivers
 * no multicast: its UD QPs' groups are the daemon's); the lock contract
 * is tp.h's.
 */
#include "tport.h"

#include "sof_gid.h"
#include "sof_wr.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

struct mgroup {
	struct sof_link link; /* in groups */
	struct mgroup *hnext; /* in the same bucket */
	uint8_t mgid[16];
	struct tp_qp **qps; /* attached, in no order */
	uint32_t nqps, cap;
	/* interfaces on which the receive socket is a member of the IP group */
	uint32_t joined[SOF_MAX_NETDEVS];
	uint32_t njoined;
};

/* Static, not in tp: the host may refresh its GID table (and so call
 * tp_mcast_refresh) before the engine starts. */
#define NBUCKETS 256u
static struct sof_link groups = {&groups, &groups};
static struct mgroup *buckets[NBUCKETS]; /* by a hash of the MGID, chained */
static uint32_t nattach;		 /* attachments of all groups */
static uint32_t ngroups;		 /* groups with a QP */

/* FNV-1a of the MGID */
static struct mgroup **bucket(const uint8_t mgid[16])
{
	uint32_t h = 0x811c9dc5u;

	for (int i = 0; i < 16; i++)
		h = (h ^ mgid[i]) * 0x01000193u;
	return &buckets[(h ^ (h >> 16)) % NBUCKETS];
}

static struct mgroup *group_find(const uint8_t mgid[16])
{
	struct mgroup *g = *bucket(mgid);

	while (g && memcmp(g->mgid, mgid, 16))
		g = g->hnext;
	return g;
}

static const char *mgid_str(const uint8_t mgid[16], char *buf, size_t len)
{
	if (sof_gid_is_v4(mgid) ? !inet_ntop(AF_INET, mgid + 12, buf, (socklen_t)len)
				: !inet_ntop(AF_INET6, mgid, buf, (socklen_t)len))
		snprintf(buf, len, "?");
	return buf;
}

/* ---- IP group membership --------------------------------------------------------- */

/* Whether the interface can carry multicast to other hosts. */
static bool if_multicast(int fd, uint32_t ifindex)
{
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	if (!if_indextoname(ifindex, ifr.ifr_name) || ioctl(fd, SIOCGIFFLAGS, &ifr))
		return false;
	return (ifr.ifr_flags & IFF_MULTICAST) && !(ifr.ifr_flags & IFF_LOOPBACK);
}

/* The served interfaces a group of family v4 is joined on: those with a
 * GID of that family that can multicast. */
static uint32_t wanted_ifs(int fd, bool v4, uint32_t *out)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < SOF_MAX_GIDS; i++) {
		const struct sof_gid_entry *e = tp.host->gid(i);
		bool dup = false;

		if (!e || sof_gid_is_v4(e->gid) != v4 || !e->ifindex)
			continue;
		for (uint32_t k = 0; k < n && !dup; k++)
			dup = out[k] == e->ifindex;
		if (!dup && n < SOF_MAX_NETDEVS && if_multicast(fd, e->ifindex))
			out[n++] = e->ifindex;
	}
	return n;
}

/* Join or leave the IP group of g on one interface. 0 or -errno. */
static int membership(int fd, const struct mgroup *g, uint32_t ifindex, bool join)
{
	int r;

	if (sof_gid_is_v4(g->mgid)) {
		struct ip_mreqn m;

		memset(&m, 0, sizeof(m));
		memcpy(&m.imr_multiaddr, g->mgid + 12, 4);
		m.imr_ifindex = (int)ifindex;
		r = setsockopt(fd, IPPROTO_IP, join ? IP_ADD_MEMBERSHIP : IP_DROP_MEMBERSHIP, &m,
			       sizeof(m));
	} else {
		struct ipv6_mreq m;

		memset(&m, 0, sizeof(m));
		memcpy(&m.ipv6mr_multiaddr, g->mgid, 16);
		m.ipv6mr_interface = ifindex;
		r = setsockopt(fd, IPPROTO_IPV6, join ? IPV6_ADD_MEMBERSHIP : IPV6_DROP_MEMBERSHIP,
			       &m, sizeof(m));
	}
	return r ? -errno : 0;
}

static void log_membership(const struct mgroup *g, uint32_t ifindex, const char *what, int err)
{
	char a[INET6_ADDRSTRLEN], ifn[IF_NAMESIZE];

	if (!if_indextoname(ifindex, ifn))
		snprintf(ifn, sizeof(ifn), "#%u", ifindex);
	if (err)
		tp_log("multicast group %s: cannot %s on %s: %s%s", mgid_str(g->mgid, a, sizeof(a)),
		       what, ifn, strerror(-err),
		       err == -ENOBUFS ? " (see net.ipv4.igmp_max_memberships)" : "");
	else
		tp_log("multicast group %s: %s on %s", mgid_str(g->mgid, a, sizeof(a)), what, ifn);
}

/* Make the memberships of g those the served interfaces want now; with
 * none (the group goes away) leave every one. A join that fails is logged
 * and tried again at the next change of the GID table. */
static void group_sync(struct mgroup *g, bool none)
{
	bool v4 = sof_gid_is_v4(g->mgid);
	int fd = tp_udp_rx_fd(!v4);
	uint32_t want[SOF_MAX_NETDEVS], nwant = 0;

	if (fd < 0)
		return;
	if (!none)
		nwant = wanted_ifs(fd, v4, want);
	for (uint32_t i = 0; i < g->njoined;) {
		bool keep = false;

		for (uint32_t k = 0; k < nwant && !keep; k++)
			keep = want[k] == g->joined[i];
		if (keep) {
			i++;
			continue;
		}
		/* (an interface that went away took the membership with it) */
		if (!membership(fd, g, g->joined[i], false))
			log_membership(g, g->joined[i], "left", 0);
		g->joined[i] = g->joined[--g->njoined];
	}
	for (uint32_t k = 0; k < nwant; k++) {
		bool have = false;
		int err;

		for (uint32_t i = 0; i < g->njoined && !have; i++)
			have = g->joined[i] == want[k];
		if (have)
			continue;
		err = membership(fd, g, want[k], true);
		log_membership(g, want[k], "joined", err);
		if (!err)
			g->joined[g->njoined++] = want[k];
	}
}

void tp_mcast_refresh(void)
{
	for (struct sof_link *l = groups.next; l != &groups; l = l->next)
		group_sync(sof_container_of(l, struct mgroup, link), false);
}

uint32_t tp_mcast_groups(void) { return ngroups; }

/* ---- groups ------------------------------------------------------------------------ */

static struct mgroup *group_new(const uint8_t mgid[16])
{
	struct mgroup *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	memcpy(g->mgid, mgid, 16);
	g->hnext = *bucket(mgid);
	*bucket(mgid) = g;
	sof_list_add(&groups, &g->link);
	ngroups++;
	group_sync(g, false);
	return g;
}

static void group_free(struct mgroup *g)
{
	struct mgroup **p = bucket(g->mgid);
	char a[INET6_ADDRSTRLEN];

	group_sync(g, true);
	while (*p != g)
		p = &(*p)->hnext;
	*p = g->hnext;
	sof_list_del(&g->link);
	ngroups--;
	tp_log("multicast group %s: no QP left", mgid_str(g->mgid, a, sizeof(a)));
	free(g->qps);
	free(g);
}

static int group_index(const struct mgroup *g, const struct tp_qp *qp)
{
	for (uint32_t i = 0; i < g->nqps; i++)
		if (g->qps[i] == qp)
			return (int)i;
	return -1;
}

/* Take qp out of g (it is attached); the group goes with its last QP. */
static void group_remove(struct mgroup *g, uint32_t i)
{
	g->qps[i]->nmcast--;
	g->qps[i] = g->qps[--g->nqps];
	nattach--;
	if (!g->nqps)
		group_free(g);
}

int tp_mcast_attach(struct tp_qp *qp, const uint8_t mgid[16])
{
	struct mgroup *g = group_find(mgid);
	bool fresh = false;

	if (g && group_index(g, qp) >= 0)
		return 0; /* attached already: it still receives one copy */
	if (nattach >= SOF_MAX_TOTAL_MCAST_QP_ATTACH)
		return -ENOMEM;
	if (!g) {
		if (ngroups >= SOF_MAX_MCAST_GRP)
			return -ENOMEM;
		g = group_new(mgid);
		if (!g)
			return -ENOMEM;
		fresh = true;
	} else if (g->nqps >= SOF_MAX_MCAST_QP_ATTACH) {
		return -ENOMEM;
	}
	if (g->nqps == g->cap) {
		uint32_t ncap = g->cap ? g->cap * 2 : 4;
		struct tp_qp **n = realloc(g->qps, ncap * sizeof(*n));

		if (!n) {
			if (fresh)
				group_free(g);
			return -ENOMEM;
		}
		g->qps = n;
		g->cap = ncap;
	}
	g->qps[g->nqps++] = qp;
	qp->nmcast++;
	nattach++;
	return 0;
}

int tp_mcast_detach(struct tp_qp *qp, const uint8_t mgid[16])
{
	struct mgroup *g = group_find(mgid);
	int i = g ? group_index(g, qp) : -1;

	if (i < 0)
		return -EINVAL;
	group_remove(g, (uint32_t)i);
	return 0;
}

void tp_mcast_qp_release(struct tp_qp *qp)
{
	struct sof_link *l, *next;

	for (l = groups.next; l != &groups && qp->nmcast; l = next) {
		struct mgroup *g = sof_container_of(l, struct mgroup, link);
		int i = group_index(g, qp);

		next = l->next; /* g may go */
		if (i >= 0)
			group_remove(g, (uint32_t)i);
	}
}

/* ---- delivery ---------------------------------------------------------------------- */

void tp_mcast_input(const struct roce_hdr *h, const uint8_t *payload, uint32_t paylen,
		    const struct roce_addr *a, bool from_net)
{
	struct mgroup *g = group_find(a->dst);
	enum sof_dropctr why = SOF_DROP_qpn; /* a group with no QP here */
	bool taken = false;

	for (uint32_t i = 0; g && i < g->nqps; i++) {
		struct tp_qp *qp = g->qps[i];
		struct sof_tqp *t = qp->t;

		/* each QP checks the datagram as any UD receive (IBA 10.2.5:
		 * its own Q_Key) */
		if (!t || qp->dying) {
			why = SOF_DROP_qp_state;
			continue;
		}
		t->state = atomic_load_explicit(&qp->shm->state, memory_order_acquire);
		if (!sof_qp_state_receives(t->state)) {
			why = SOF_DROP_qp_state;
			continue;
		}
		if (h->qkey != t->qkey) {
			why = SOF_DROP_qkey;
			continue;
		}
		tp_resp_ud(t, h, payload, paylen, a);
		taken = true;
	}
	/* counted once per datagram, with the reason of a QP that refused it */
	if (!taken && from_net)
		tp_drop(why);
}

int tp_mcast_loop(struct tp_qp *qp, const uint8_t sgid[16], const uint8_t mgid[16], uint32_t qkey,
		  const uint32_t *imm_be, bool se, const uint8_t *data, uint32_t len)
{
	struct roce_hdr h;
	struct roce_addr a;

	/* (sofib0's QPs hand theirs over by the link, tp_ib_ud_loop_input) */
	if (!qp->t || qp->t->ib || qp->type != IBV_QPT_UD || !sof_gid_is_mcast(mgid) ||
	    !tp.host->gid_local(sgid) || sof_gid_is_v4(sgid) != sof_gid_is_v4(mgid) || len > 4096 ||
	    len > (128u << tp.host->active_mtu()))
		return -EINVAL;
	/* the headers send_ud gives it; the PSN of a datagram means nothing
	 * to its receivers */
	memset(&h, 0, sizeof(h));
	h.opcode = imm_be ? ROCE_UD_SEND_ONLY_IMM : ROCE_UD_SEND_ONLY;
	h.pkey = tp_qp_pkey(qp->t);
	h.dqpn = SOF_MCAST_QPN;
	h.se = se;
	h.imm_be = imm_be ? *imm_be : 0;
	h.qkey = qkey;
	h.sqpn = qp->qpn;
	memset(&a, 0, sizeof(a));
	memcpy(a.src, sgid, 16);
	memcpy(a.dst, mgid, 16);
	a.sport = tp_flow_port(!sof_gid_is_v4(mgid), qp->qpn, SOF_MCAST_QPN);
	a.dport = ROCE_UDP_PORT;
	tp_mcast_input(&h, data, len, &a, false);
	return 0;
}
