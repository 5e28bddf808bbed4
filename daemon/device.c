/*
 * The device identity: name, GUIDs, attributes, the interfaces it serves
 * and the GID table they make.
 *
 * The device serves the interfaces named with -i, or (without -i) every
 * interface with an address, loopback included. Like Soft-RoCE, the node
 * GUID is the EUI-64 made from the MAC address of the first served
 * non-loopback interface (a random locally administered one when there is
 * none), and the GID table lists the served interfaces' IP addresses as
 * RoCEv2 GIDs: IPv4 as IPv4-mapped IPv6 (::ffff:a.b.c.d), IPv6 as is, IPv6
 * link-local included (as the kernel lists them), tentative IPv6 addresses
 * only once duplicate address detection succeeded. Loopback addresses come
 * after those of the other interfaces: a RoCE NIC has no loopback GID, and
 * libraries (UCX) take GID index 0 as the address peers reach them at; on
 * a host with only lo, lo's addresses are index 0 as before.
 *
 * The table follows the addresses while the daemon runs: an rtnetlink socket
 * subscribed to address and link changes wakes the epoll loop, and the table
 * is rebuilt from a fresh address dump (also at each HELLO and STATUS, so an
 * answer is never older than the request). Indexes are stable (sof_gid.h).
 * A change is published in the shared page every context maps and announced
 * to every context with IBV_EVENT_GID_CHANGE.
 */
#include "sofd.h"

#include "sof_gid.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <infiniband/verbs.h>
#include <linux/if_packet.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

/* IBTA A3.3.1: the VendorID of a generic device, rxe's too. */
#define SOFD_VENDOR_ID 0xffffffu

/* Addresses considered per dump; a table holds SOF_MAX_GIDS of them. */
#define SOFD_MAX_ADDRS 256

/* The interfaces served: every one (named == false) or those named. */
static struct {
	bool named;
	uint32_t n;
	char names[SOF_MAX_NETDEVS][IF_NAMESIZE];
} sel;

/* Served interfaces that had a GID at the last dump, by ifindex. */
static uint32_t seen[SOF_MAX_NETDEVS];
static uint32_t nseen;

static bool published; /* the shared page holds the table */
static uint32_t dump_seq;
static uint8_t nlbuf[32768] __attribute__((aligned(8)));

/* ---- interface selection ------------------------------------------------------- */

static bool name_selected(const char *name)
{
	if (!sel.named)
		return true;
	for (uint32_t i = 0; i < sel.n; i++)
		if (!strcmp(sel.names[i], name))
			return true;
	return false;
}

int sofd_device_select(const char *list)
{
	const char *p = list;

	for (;;) {
		size_t len = strcspn(p, ",");
		char name[IF_NAMESIZE];

		if (len == 0 || len >= IF_NAMESIZE) {
			fprintf(stderr, "softofedd: bad interface name '%.*s'\n", (int)len, p);
			return -EINVAL;
		}
		memcpy(name, p, len);
		name[len] = '\0';
		if (!if_nametoindex(name)) {
			fprintf(stderr, "softofedd: no such interface: %s\n", name);
			return -ENODEV;
		}
		sel.named = true;
		if (!name_selected(name)) {
			if (sel.n == SOF_MAX_NETDEVS) {
				fprintf(stderr, "softofedd: at most %d interfaces\n",
					SOF_MAX_NETDEVS);
				return -E2BIG;
			}
			memcpy(sel.names[sel.n++], name, len + 1);
		}
		if (!p[len])
			return 0;
		p += len + 1;
	}
}

/* ---- identity ------------------------------------------------------------------ */

/* EUI-64 from a MAC (RFC 4291 appendix A): flip the universal/local bit and
 * insert ff:fe in the middle. Returned as the bytes in network order. */
static uint64_t mac_to_guid(const uint8_t mac[6])
{
	uint8_t b[8] = {(uint8_t)(mac[0] ^ 2), mac[1], mac[2], 0xff, 0xfe, mac[3], mac[4], mac[5]};
	uint64_t g;

	memcpy(&g, b, sizeof(g));
	return g;
}

static bool guid_from_interfaces(uint64_t *guid)
{
	struct ifaddrs *ifa, *i;
	bool found = false;

	if (getifaddrs(&ifa))
		return false;
	for (i = ifa; i && !found; i = i->ifa_next) {
		const struct sockaddr_ll *ll;
		static const uint8_t zero[6];

		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_PACKET)
			continue;
		if (i->ifa_flags & IFF_LOOPBACK || !name_selected(i->ifa_name))
			continue;
		ll = (const struct sockaddr_ll *)(const void *)i->ifa_addr;
		if (ll->sll_halen != 6 || !memcmp(ll->sll_addr, zero, 6))
			continue;
		*guid = mac_to_guid(ll->sll_addr);
		found = true;
	}
	freeifaddrs(ifa);
	return found;
}

/* ---- the addresses of the served interfaces -------------------------------------- */

static void note_seen(uint32_t ifindex)
{
	uint32_t i = 0;

	while (i < nseen && seen[i] < ifindex)
		i++;
	if ((i < nseen && seen[i] == ifindex) || nseen == SOF_MAX_NETDEVS)
		return;
	memmove(&seen[i + 1], &seen[i], (nseen - i) * sizeof(seen[0]));
	seen[i] = ifindex;
	nseen++;
}

/* Read the messages answering dump request seq on fd into want. 0, -EAGAIN
 * when the dump was interrupted by a change (do it again), or -errno. */
static int dump_read(int fd, uint32_t seq, const uint32_t *ifx, struct sof_gid_entry *want,
		     size_t cap, size_t *n)
{
	bool intr = false;

	for (;;) {
		struct sockaddr_nl from;
		socklen_t flen = sizeof(from);
		ssize_t got =
		    recvfrom(fd, nlbuf, sizeof(nlbuf), 0, (struct sockaddr *)&from, &flen);
		size_t off = 0;

		if (got < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		}
		if (flen < sizeof(from) || from.nl_pid != 0)
			continue; /* only the kernel answers a dump */
		while ((size_t)got - off >= sizeof(struct nlmsghdr)) {
			struct nlmsghdr nh;
			struct sof_gid_entry e;

			memcpy(&nh, nlbuf + off, sizeof(nh));
			if (nh.nlmsg_len < sizeof(nh) || nh.nlmsg_len > (size_t)got - off)
				return -EPROTO;
			if (nh.nlmsg_seq == seq) {
				if (nh.nlmsg_flags & NLM_F_DUMP_INTR)
					intr = true;
				if (nh.nlmsg_type == NLMSG_DONE)
					return intr ? -EAGAIN : 0;
				if (nh.nlmsg_type == NLMSG_ERROR) {
					struct nlmsgerr err;

					if (nh.nlmsg_len < NLMSG_LENGTH(sizeof(err)))
						return -EPROTO;
					memcpy(&err, nlbuf + off + NLMSG_HDRLEN, sizeof(err));
					return err.error < 0 ? err.error : -EPROTO;
				}
				if (sof_gid_parse_ifaddr(nlbuf + off, nh.nlmsg_len, &e) == 1) {
					bool served = !sel.named;

					for (uint32_t k = 0; k < sel.n && !served; k++)
						served = ifx[k] == e.ifindex;
					if (served && *n < cap) {
						want[(*n)++] = e;
						note_seen(e.ifindex);
					}
				}
			}
			off += NLMSG_ALIGN(nh.nlmsg_len);
			if (off > (size_t)got)
				break;
		}
	}
}

/* Whether interface ifindex is a loopback interface (false when it is gone). */
static bool if_loopback(uint32_t ifindex)
{
	struct ifreq ifr;
	bool lo = false;
	int fd;

	memset(&ifr, 0, sizeof(ifr));
	if (!if_indextoname(ifindex, ifr.ifr_name))
		return false;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	if (!ioctl(fd, SIOCGIFFLAGS, &ifr))
		lo = (ifr.ifr_flags & IFF_LOOPBACK) != 0;
	close(fd);
	return lo;
}

/* Move the addresses of loopback interfaces behind the others, each group
 * in the order it had: new GIDs take the first free entries in this order
 * (sof_gid_merge), so lo's come last. */
static void loopback_last(struct sof_gid_entry *want, size_t n)
{
	struct sof_gid_entry lo[SOFD_MAX_ADDRS];
	size_t nlo = 0, k = 0;

	for (size_t j = 0; j < n; j++) {
		if (if_loopback(want[j].ifindex) && nlo < SOF_ARRAY_SIZE(lo))
			lo[nlo++] = want[j];
		else
			want[k++] = want[j];
	}
	memcpy(&want[k], lo, nlo * sizeof(lo[0]));
}

/* The usable addresses of the served interfaces, in the kernel's order
 * (IPv4 first, then IPv6, each by interface), loopback ones last. 0 or
 * -errno. */
static int dump_addrs(struct sof_gid_entry *want, size_t cap, size_t *n)
{
	struct {
		struct nlmsghdr nh;
		struct ifaddrmsg ifa;
	} req;
	struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
	struct timeval tv = {.tv_sec = 1};
	uint32_t ifx[SOF_MAX_NETDEVS];
	int fd, err = -EAGAIN;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	for (int attempt = 0; attempt < 4 && err == -EAGAIN; attempt++) {
		/* Names are resolved at each dump: an interface that is
		 * deleted and created again is served again. */
		for (uint32_t k = 0; k < sel.n; k++)
			ifx[k] = if_nametoindex(sel.names[k]);
		*n = 0;
		nseen = 0;
		memset(&req, 0, sizeof(req));
		req.nh.nlmsg_len = sizeof(req);
		req.nh.nlmsg_type = RTM_GETADDR;
		req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
		req.nh.nlmsg_seq = ++dump_seq;
		req.ifa.ifa_family = AF_UNSPEC;
		if (sendto(fd, &req, sizeof(req), 0, (struct sockaddr *)&kernel, sizeof(kernel)) <
		    0)
			err = -errno;
		else
			err = dump_read(fd, dump_seq, ifx, want, cap, n);
	}
	close(fd);
	if (!err)
		loopback_last(want, *n);
	return err;
}

/* ---- the GID table ---------------------------------------------------------------- */

static void log_entry(uint32_t i, const struct sof_gid_entry *e, const char *what)
{
	char a[INET6_ADDRSTRLEN], ifn[IF_NAMESIZE];

	if (!inet_ntop(AF_INET6, e->gid, a, sizeof(a)))
		snprintf(a, sizeof(a), "?");
	if (!if_indextoname(e->ifindex, ifn))
		snprintf(ifn, sizeof(ifn), "#%u", e->ifindex);
	sofd_log("GID[%u] %s %s (%s)", i, a, what, ifn);
}

static struct sof_gid_shm *gid_page(void)
{
	return sofd.objtab ? (struct sof_gid_shm *)((char *)sofd.objtab + SOF_OBJTAB_GID_OFF)
			   : NULL;
}

void sofd_device_publish_gids(void)
{
	struct sof_gid_shm *shm = gid_page();

	if (!shm)
		return;
	sof_gid_publish(shm, sofd.dev.gids);
	published = true;
}

/* The port's active MTU follows the served interfaces, as rxe's follows
 * its netdev: the largest IB MTU whose packets (IPv6 + UDP + BTH + the
 * longest extended headers + ICRC: 92 bytes) fit the smallest interface
 * MTU among those with addresses. */
static uint32_t active_mtu(void)
{
	uint32_t min = UINT32_MAX;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return IBV_MTU_4096;
	for (uint32_t i = 0; i < nseen; i++) {
		struct ifreq ifr;

		memset(&ifr, 0, sizeof(ifr));
		if (!if_indextoname(seen[i], ifr.ifr_name) || ioctl(fd, SIOCGIFMTU, &ifr))
			continue;
		if (ifr.ifr_mtu > 0 && (uint32_t)ifr.ifr_mtu < min)
			min = (uint32_t)ifr.ifr_mtu;
	}
	close(fd);
	for (uint32_t m = IBV_MTU_4096; m > IBV_MTU_256; m--)
		if ((128u << m) + 92 <= min)
			return m;
	return IBV_MTU_256;
}

bool sofd_device_refresh_gids(void)
{
	struct sof_gid_entry want[SOFD_MAX_ADDRS], tab[SOF_MAX_GIDS];
	struct sof_devinfo *d = &sofd.dev;
	size_t n = 0;
	bool changed;
	int err;

	err = dump_addrs(want, SOF_ARRAY_SIZE(want), &n);
	if (err) {
		sofd_log("reading the interface addresses failed: %s", strerror(-err));
		return false; /* keep the table as it is */
	}
	memcpy(tab, d->gids, sizeof(tab));
	changed = sof_gid_merge(tab, want, n);
	if (changed) {
		for (uint32_t i = 0; i < SOF_MAX_GIDS; i++) {
			if (!memcmp(&tab[i], &d->gids[i], sizeof(tab[i])))
				continue;
			if (!sof_gid_empty(&d->gids[i]))
				log_entry(i, &d->gids[i], "removed");
			if (!sof_gid_empty(&tab[i]))
				log_entry(i, &tab[i], "added");
		}
		memcpy(d->gids, tab, sizeof(tab));
	}
	d->num_gids = sof_gid_table_len(d->gids);
	d->active_mtu = active_mtu();
	if (changed || !published)
		sofd_device_publish_gids();
	if (changed) {
		sof_tp_mcast_refresh();
		/* As the kernel's GID cache does on a change: one event per
		 * port to every context. */
		for (struct sof_link *l = sofd.conns.next; l != &sofd.conns; l = l->next) {
			struct sofd_conn *c = sof_container_of(l, struct sofd_conn, link);

			if (c->ctx_id)
				sofd_async_send(c, IBV_EVENT_GID_CHANGE, 1);
		}
	}
	return changed;
}

void sofd_device_netdevs(struct sof_netdevs_rep *r)
{
	memset(r, 0, sizeof(*r));
	sofd_device_refresh_gids();
	r->all = !sel.named;
	if (sel.named) {
		for (uint32_t i = 0; i < sel.n; i++) {
			memcpy(r->dev[i].name, sel.names[i], sizeof(r->dev[i].name));
			r->dev[i].ifindex = if_nametoindex(sel.names[i]);
		}
		r->n = sel.n;
		return;
	}
	for (uint32_t i = 0; i < nseen; i++) {
		if (!if_indextoname(seen[i], r->dev[r->n].name))
			continue;
		r->dev[r->n++].ifindex = seen[i];
	}
}

/* ---- following changes ------------------------------------------------------------ */

/* Subscribe to address and link changes. Without it the table is still
 * refreshed at each HELLO and STATUS. */
static void watch_open(void)
{
	struct sockaddr_nl sa = {
	    .nl_family = AF_NETLINK,
	    .nl_groups = RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR,
	};
	int fd, sz = 1 << 20;

	sofd.netlink.kind = SOFD_POLL_NETLINK;
	sofd.netlink.fd = -1;
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		sofd_log("cannot follow address changes (rtnetlink): %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	/* Overflow is harmless (ENOBUFS means: read the table again), but
	 * rare overflows mean fewer dumps. */
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	sofd.netlink.fd = fd;
}

void sofd_device_netlink_event(void)
{
	bool refresh = false;

	for (;;) {
		struct sockaddr_nl from;
		socklen_t flen = sizeof(from);
		ssize_t got = recvfrom(sofd.netlink.fd, nlbuf, sizeof(nlbuf), MSG_DONTWAIT,
				       (struct sockaddr *)&from, &flen);
		size_t off = 0;

		if (got < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ENOBUFS) { /* notifications were lost */
				refresh = true;
				continue;
			}
			break;
		}
		if (got == 0)
			break;
		if (flen < sizeof(from) || from.nl_pid != 0)
			continue; /* not from the kernel */
		while ((size_t)got - off >= sizeof(struct nlmsghdr)) {
			struct nlmsghdr nh;

			memcpy(&nh, nlbuf + off, sizeof(nh));
			if (nh.nlmsg_len < sizeof(nh) || nh.nlmsg_len > (size_t)got - off)
				break;
			if (nh.nlmsg_type == RTM_NEWADDR || nh.nlmsg_type == RTM_DELADDR ||
			    nh.nlmsg_type == RTM_NEWLINK || nh.nlmsg_type == RTM_DELLINK)
				refresh = true;
			off += NLMSG_ALIGN(nh.nlmsg_len);
			if (off > (size_t)got)
				break;
		}
	}
	if (refresh)
		sofd_device_refresh_gids();
}

int sofd_device_init(void)
{
	struct sof_devinfo *d = &sofd.dev;
	uint64_t guid;

	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), "sof0");
	if (!guid_from_interfaces(&guid)) {
		uint8_t mac[6];
		int err = sof_random(mac, sizeof(mac));

		if (err)
			return err;
		mac[0] = (uint8_t)((mac[0] & 0xfc) | 0x02); /* unicast, local */
		guid = mac_to_guid(mac);
	}
	d->node_guid = guid;
	d->sys_image_guid = guid;
	/* As Soft-RoCE: IBTA A3.3.1 lets a generic device with no vendor
	 * driver use VendorID 0xFFFFFF, which rxe reports (tools take 0 for
	 * "no device"); rxe's part id and hardware version are 0. */
	d->vendor_id = SOFD_VENDOR_ID;
	d->vendor_part_id = 0;
	d->hw_ver = 0;
	snprintf(d->fw_ver, sizeof(d->fw_ver), "1.0.0");
	d->active_mtu = IBV_MTU_4096;
	d->port_state = IBV_PORT_ACTIVE;
	/* Subscribe before the first dump, so that no change falls between. */
	watch_open();
	sofd_device_refresh_gids();
	return 0;
}

bool sofd_gid_local(const uint8_t gid[16])
{
	for (uint32_t i = 0; i < sofd.dev.num_gids && i < SOF_MAX_GIDS; i++)
		if (!sof_gid_empty(&sofd.dev.gids[i]) && !memcmp(sofd.dev.gids[i].gid, gid, 16))
			return true;
	return false;
}
