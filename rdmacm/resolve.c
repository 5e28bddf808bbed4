/*
 * Address and route resolution: the steps of an id that end with an
 * event (ADDR_RESOLVED, ROUTE_RESOLVED), which a synchronous id waits for
 * (sofcm_complete, event.c). An IP address on an IPoIB interface (ib0 of
 * softofed-ipoib) is resolved here, in the caller, through that
 * interface's control socket: the daemon gets the peer's GID and puts the
 * id on the InfiniBand port, whose route it asks the SA for. Above event.c, since the events they
 * wait for may make and move ids (id.c).
 */
#include "sof_proto.h"
#include "sofcm.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <string.h>

#define IPOIB_ASK_MS 50 /* between NEIGH questions while it resolves */

static bool same_addr(const struct sockaddr *a, const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	return a->sa_family == AF_INET6 &&
	       !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		       &((const struct sockaddr_in6 *)b)->sin6_addr, 16);
}

/* A connection to the softofed-ipoib that serves the interface holding
 * the local IP address a (its control socket, abstract
 * softofed/ipoib/IFNAME), or -1: a is not on an IPoIB interface. */
static int ipoib_ctl(const struct sockaddr *a)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	struct ifaddrs *ifa, *i;
	int fd = -1, n = -1;

	if (a->sa_family != AF_INET && a->sa_family != AF_INET6)
		return -1;
	if (getifaddrs(&ifa))
		return -1;
	for (i = ifa; i; i = i->ifa_next)
		if (i->ifa_addr && same_addr(i->ifa_addr, a)) {
			n = snprintf(sun.sun_path + 1, sizeof(sun.sun_path) - 1,
				     "softofed/ipoib/%s", i->ifa_name);
			break;
		}
	freeifaddrs(ifa);
	if (n <= 0)
		return -1;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 &&
	    connect(fd, (struct sockaddr *)&sun,
		    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

bool sofcm_ipoib_addr(const struct sockaddr *a, uint16_t *pkey)
{
	static const char q[] = "PKEY\n";
	int fd = ipoib_ctl(a);
	struct pollfd p = {.fd = fd, .events = POLLIN};
	unsigned v = 0;
	char rep[64];
	ssize_t n = -1;

	if (fd < 0)
		return false;
	/* its partition, which the id takes (0: the default) */
	if (write(fd, q, sizeof(q) - 1) == (ssize_t)sizeof(q) - 1 && poll(&p, 1, 1000) == 1)
		n = read(fd, rep, sizeof(rep) - 1);
	close(fd);
	if (n > 0) {
		rep[n] = '\0';
		if (sscanf(rep, "pkey %x", &v) != 1 || v > 0xffff)
			v = 0;
	}
	*pkey = (uint16_t)v;
	return true;
}

static const char *ip_str(const struct sockaddr *a, char *buf, size_t len)
{
	return inet_ntop(a->sa_family,
			 a->sa_family == AF_INET
			     ? (const void *)&((const struct sockaddr_in *)a)->sin_addr
			     : (const void *)&((const struct sockaddr_in6 *)a)->sin6_addr,
			 buf, (socklen_t)len);
}

/* One NEIGH question to src's IPoIB: 1 and dgid when dst's hardware
 * address is known, 0 while resolving, -1 when it failed. */
static int ipoib_ask(const struct sockaddr *src, const struct sockaddr *dst, uint8_t dgid[16])
{
	char req[128], rep[256], d[INET6_ADDRSTRLEN], s[INET6_ADDRSTRLEN], gid[64];
	struct pollfd p;
	unsigned qpn;
	ssize_t n = -1;
	int fd = ipoib_ctl(src), len;

	if (fd < 0 || !ip_str(dst, d, sizeof(d)) || !ip_str(src, s, sizeof(s)))
		goto out;
	len = snprintf(req, sizeof(req), "NEIGH %s %s\n", d, s);
	if (write(fd, req, (size_t)len) != len)
		goto out;
	p = (struct pollfd){.fd = fd, .events = POLLIN};
	if (poll(&p, 1, 1000) == 1)
		n = read(fd, rep, sizeof(rep) - 1);
out:
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return -1;
	rep[n] = '\0';
	if (!strncmp(rep, "neigh incomplete", 16))
		return 0;
	if (sscanf(rep, "neigh ready %x %63s", &qpn, gid) == 2 &&
	    inet_pton(AF_INET6, gid, dgid) == 1)
		return 1;
	return -1;
}

/* rdma_resolve_addr of an IP destination: when the route to it leaves by
 * an IPoIB interface, the GID of its hardware address, asked of that
 * interface's softofed-ipoib (which resolves it by ARP/ND when unknown)
 * for up to timeout_ms, as the kernel's rdma_cm asks the neighbour table;
 * req->ib set then (req->dgid zero when it could not be resolved). */
static void ipoib_resolve(struct sof_cm_addr_req *req, int timeout_ms)
{
	struct sockaddr_storage src;
	const struct sockaddr *dst = (const struct sockaddr *)&req->dst;
	socklen_t slen = sizeof(src);
	struct timespec t0, t;
	int fd, r;

	if (dst->sa_family != AF_INET && dst->sa_family != AF_INET6)
		return;
	memset(&src, 0, sizeof(src));
	if ((req->src.ss_family == AF_INET &&
	     ((const struct sockaddr_in *)&req->src)->sin_addr.s_addr) ||
	    (req->src.ss_family == AF_INET6 &&
	     !IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)&req->src)->sin6_addr))) {
		src = req->src;
	} else {
		/* the source the routing table picks for dst */
		fd = socket(dst->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return;
		r = connect(fd, dst, sofcm_addrlen(dst)) ||
		    getsockname(fd, (struct sockaddr *)&src, &slen);
		close(fd);
		if (r)
			return;
	}
	if (!sofcm_ipoib_addr((const struct sockaddr *)&src, &req->pkey))
		return;
	req->ib = 1;
	/* a multicast group has no neighbour: the daemon maps it (MGID) */
	if ((dst->sa_family == AF_INET &&
	     IN_MULTICAST(ntohl(((const struct sockaddr_in *)(const void *)dst)->sin_addr.s_addr))) ||
	    (dst->sa_family == AF_INET6 &&
	     IN6_IS_ADDR_MULTICAST(&((const struct sockaddr_in6 *)(const void *)dst)->sin6_addr)))
		return;
	if (timeout_ms <= 0)
		timeout_ms = 2000;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		r = ipoib_ask((const struct sockaddr *)&src, dst, req->dgid);
		if (r)
			break;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 >=
		    timeout_ms)
			break;
		usleep(IPOIB_ASK_MS * 1000);
	}
	if (r != 1)
		memset(req->dgid, 0, sizeof(req->dgid));
}

SOFCM_EXPORT int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr,
				   struct sockaddr *dst_addr, int timeout_ms)
{
	socklen_t dlen = sofcm_addrlen(dst_addr), slen = sofcm_addrlen(src_addr);
	struct sof_cm_query_rep q;
	struct sof_cm_addr_req req;
	int ret;

	if (!id || !dlen || (src_addr && !slen))
		return sofcm_err(EINVAL);
	memset(&req, 0, sizeof(req));
	req.id = sofcm_id(id)->handle;
	req.timeout_ms = timeout_ms > 0 ? (uint32_t)timeout_ms : 0;
	if (slen)
		memcpy(&req.src, src_addr, slen);
	memcpy(&req.dst, dst_addr, dlen);
	ipoib_resolve(&req, timeout_ms);
	ret = sofcm_rpc(SOF_OP_CM_RESOLVE_ADDR, &req, sizeof(req), &q, sizeof(q));
	if (!ret)
		ret = sofcm_apply_query(sofcm_id(id), &q);
	if (ret)
		return sofcm_err(-ret);
	memset(&id->route.addr.dst_storage, 0, sizeof(id->route.addr.dst_storage));
	memcpy(&id->route.addr.dst_storage, dst_addr, dlen);
	return sofcm_complete(sofcm_id(id));
}

SOFCM_EXPORT int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	int ret;

	if (!id)
		return sofcm_err(EINVAL);
	ret = sofcm_rpc_id(SOF_OP_CM_RESOLVE_ROUTE, sofcm_id(id)->handle,
			   timeout_ms > 0 ? (uint32_t)timeout_ms : 0, NULL, 0);
	if (ret)
		return sofcm_err(-ret);
	return sofcm_complete(sofcm_id(id));
}
