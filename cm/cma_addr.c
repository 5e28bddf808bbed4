/*
 * Addresses of the RDMA CM on RoCEv2: the GID of an IP address is the
 * address itself (IPv4-mapped for IPv4), AF_IB carries its GID; ports per
 * port space, bound like UDP ports (SO_REUSEADDR's rules, AF-only ids of
 * two families sharing a port as the kernel's rdma_cm lets them, an
 * ephemeral range); the source of a route is the address the kernel's routing table
 * picks for the destination (a UDP socket connected to it tells, sending
 * nothing), and it must be one of the GIDs this device serves. A loopback
 * address (127/8, ::1) is, as in the kernel's rdma_cm (cma_any_addr), a
 * wildcard for bind, ports and listeners: binding it takes no device.
 */
#include "cma.h"

#include "roce_wire.h"
#include "sof_gid.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/ib.h>
#include <string.h>
#include <unistd.h>

static const uint8_t v4pfx[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

bool cma_family_ok(int f) { return f == AF_INET || f == AF_INET6 || f == AF_IB; }

/* The GID of an address: IPv4-mapped, IPv6 as is, AF_IB's GID. */
void cma_addr_gid(const struct sockaddr_storage *ss, uint8_t gid[16])
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

uint16_t cma_addr_port(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)ss)->sin_port);
	if (ss->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	if (ss->ss_family == AF_IB)
		return (uint16_t)be64toh(((const struct sockaddr_ib *)ss)->sib_sid);
	return 0;
}

uint64_t cma_addr_sid(const struct sockaddr_storage *ss, uint8_t ps)
{
	uint64_t raw = cm_raw_sid(ss);

	return raw ? raw : cmw_ip_service_id(ps, cma_addr_port(ss));
}

static void addr_set_port(struct sockaddr_storage *ss, uint8_t ps, uint16_t port)
{
	if (cm_raw_sid(ss))
		return; /* the user's service ID stays */
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
void cma_addr_from_gid(struct sockaddr_storage *ss, int family, const uint8_t gid[16], uint8_t ps,
		       uint16_t port)
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

bool cma_gid_is_any(const uint8_t g[16])
{
	static const uint8_t zero[16];

	return !memcmp(g, zero, 16) || (!memcmp(g, v4pfx, 12) && !memcmp(g + 12, zero, 4));
}

bool cma_addr_is_any(const struct sockaddr_storage *ss)
{
	uint8_t g[16];

	cma_addr_gid(ss, g);
	return cma_gid_is_any(g);
}

bool cma_gid_is_loopback(const uint8_t g[16])
{
	static const uint8_t v6lo[16] = {[15] = 1};

	return !memcmp(g, v6lo, 16) || (!memcmp(g, v4pfx, 12) && g[12] == 127);
}

bool cma_gid_is_wild(const uint8_t g[16]) { return cma_gid_is_any(g) || cma_gid_is_loopback(g); }

bool cma_addr_is_wild(const struct sockaddr_storage *ss)
{
	uint8_t g[16];

	if (ss->ss_family == AF_IB)
		return cma_addr_is_any(ss);
	cma_addr_gid(ss, g);
	return cma_gid_is_wild(g);
}

/* The source GID of a loopback destination, as the kernel's
 * cma_bind_loopback picks a device port's GID: the served loopback address
 * itself when lo is served, else the first GID of dst's family (IPv4-mapped
 * or not), else the first GID. 0 or -EADDRNOTAVAIL (no GID at all). */
int cma_loopback_source(const uint8_t dst[16], uint8_t src[16])
{
	int first = -1, fam = -1;

	if (cma_gid_is_loopback(dst) && cma_gid_index(dst) >= 0) {
		memcpy(src, dst, 16);
		return 0;
	}
	for (uint32_t i = 0; i < cm_host->dev->num_gids && i < SOF_MAX_GIDS; i++) {
		const uint8_t *g = cm_host->dev->gids[i].gid;

		if (sof_gid_empty(&cm_host->dev->gids[i]) || cma_gid_is_loopback(g))
			continue;
		if (first < 0)
			first = (int)i;
		if (fam < 0 && sof_gid_is_v4(g) == sof_gid_is_v4(dst))
			fam = (int)i;
	}
	if (fam < 0)
		fam = first;
	if (fam < 0)
		return -EADDRNOTAVAIL;
	memcpy(src, cm_host->dev->gids[fam].gid, 16);
	return 0;
}

/* The GID table index of gid, or -1. */
int cma_gid_index(const uint8_t gid[16])
{
	for (uint32_t i = 0; i < cm_host->dev->num_gids && i < SOF_MAX_GIDS; i++)
		if (!sof_gid_empty(&cm_host->dev->gids[i]) &&
		    !memcmp(cm_host->dev->gids[i].gid, gid, 16))
			return (int)i;
	return -1;
}

bool cma_ib_gid(const uint8_t gid[16], struct sof_ib_port *port)
{
	struct sof_ib_port p;
	uint64_t prefix, guid;

	if (!cm_host->ops->ib_port || cm_host->ops->ib_port(&p))
		return false;
	memcpy(&prefix, gid, 8);
	memcpy(&guid, gid + 8, 8);
	/* the port's GID 0: subnet prefix and port GUID (IBA 4.1.1) */
	if (be64toh(prefix) != p.subnet_prefix || be64toh(guid) != p.port_guid)
		return false;
	if (port)
		*port = p;
	return true;
}

int cma_ib_own_gid(uint8_t gid[16])
{
	struct sof_ib_port p;
	uint64_t v;

	if (!cm_host->ops->ib_port || cm_host->ops->ib_port(&p))
		return -ENODEV;
	v = htobe64(p.subnet_prefix);
	memcpy(gid, &v, 8);
	v = htobe64(p.port_guid);
	memcpy(gid + 8, &v, 8);
	return 0;
}

bool cma_ib_on_subnet(const uint8_t gid[16])
{
	uint8_t own[16];

	return !cma_ib_own_gid(own) && !memcmp(own, gid, 8);
}

/* The source address the routing table picks for dst (a GID). 0 or -errno. */
int cma_route_source(const uint8_t dst[16], uint8_t src[16])
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
	cma_addr_gid(&ss, src);
out:
	close(fd);
	return err;
}

/* Whether a bind of (ps, port, gid) of family by id clashes with another
 * id. As the kernel's rdma_cm: ids of different families that are both
 * AF-only never clash, so an IPv4 and an AF-only IPv6 wildcard share a
 * port. */
static bool port_taken(const struct cm_id *self, uint8_t ps, uint16_t port, const uint8_t gid[16],
		       int family, bool reuse)
{
	uint32_t pos = 0;
	uint64_t key;
	struct cm_id *o;

	while ((o = sof_hmap_next(&cma.ids, &pos, &key))) {
		uint8_t og[16];

		if (o == self || !o->bound || o->ps != ps || cma_addr_port(&o->src) != port ||
		    cm_raw_sid(&o->src))
			continue;
		if (self->afonly && o->afonly && o->src.ss_family != family)
			continue;
		cma_addr_gid(&o->src, og);
		if (!cma_addr_is_wild(&o->src) &&
		    !(family == AF_IB ? cma_gid_is_any(gid) : cma_gid_is_wild(gid)) &&
		    memcmp(og, gid, 16))
			continue;
		/* like SO_REUSEADDR: both ask for it and neither listens */
		if (reuse && o->reuseaddr && o->cstate != CMA_LISTEN)
			continue;
		return true;
	}
	return false;
}

/* net.ipv6.bindv6only of the daemon's network namespace (the callers'). */
static bool bindv6only(void)
{
	char c = '0';
	int fd = open("/proc/sys/net/ipv6/bindv6only", O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		if (read(fd, &c, 1) != 1)
			c = '0';
		close(fd);
	}
	return c == '1';
}

int cma_bind_port(struct cm_id *id, const struct sockaddr_storage *src)
{
	uint16_t port = cma_addr_port(src);
	uint8_t gid[16];

	/* The kernel's default when RDMA_OPTION_ID_AFONLY was not given: an
	 * AF_INET id is AF-only, an AF_INET6 one as net.ipv6.bindv6only
	 * says (as an IPv6 socket's IPV6_V6ONLY). */
	if (!id->afonly_set)
		id->afonly =
		    src->ss_family == AF_INET || (src->ss_family == AF_INET6 && bindv6only());
	cma_addr_gid(src, gid);
	if (cm_raw_sid(src)) {
		/* a service ID of the user's: one bound id per ID */
		uint32_t pos = 0;
		uint64_t key;
		struct cm_id *o;

		while ((o = sof_hmap_next(&cma.ids, &pos, &key)))
			if (o != id && o->bound && cm_raw_sid(&o->src) == cm_raw_sid(src))
				return -EADDRINUSE;
	} else if (port) {
		if (port_taken(id, id->ps, port, gid, src->ss_family, id->reuseaddr))
			return -EADDRINUSE;
	} else {
		uint32_t span = CMA_PORT_HI - CMA_PORT_LO + 1, start = sof_random32() % span, i;

		for (i = 0; i < span; i++) {
			port = (uint16_t)(CMA_PORT_LO + (start + i) % span);
			if (!port_taken(id, id->ps, port, gid, src->ss_family, false))
				break;
		}
		if (i == span)
			return -EADDRNOTAVAIL;
	}
	id->src = *src;
	addr_set_port(&id->src, id->ps, port);
	id->bound = true;
	if (!cma_addr_is_wild(src)) {
		memcpy(id->sgid, gid, 16);
		id->ib = src->ss_family == AF_IB && cma_ib_gid(gid, NULL);
		id->sgid_index = id->ib ? 0 : (uint32_t)cma_gid_index(gid);
		id->have_dev = true;
	}
	return 0;
}

void cma_fill_query(const struct cm_id *id, struct sof_cm_query_rep *q)
{
	memset(q, 0, sizeof(*q));
	q->src = id->src;
	q->dst = id->dst;
	memcpy(q->sgid, id->sgid, 16);
	memcpy(q->dgid, id->dgid, 16);
	q->sgid_index = id->sgid_index;
	q->pkey = id->pkey;
	q->port_num = id->have_dev ? 1 : 0;
	q->ib = id->ib;
	if (id->have_route) {
		q->num_paths = 1;
		q->dlid = id->dlid;
		q->slid = id->slid;
		q->sl = id->sl;
		q->mtu = id->mtu;
		q->hop_limit = CMA_HOP_LIMIT;
		q->traffic_class = id->tos;
		q->packet_life_time = cm_pkt_life(id);
		q->service_id = htobe64(cma_addr_sid(&id->dst, id->ps));
	}
}
