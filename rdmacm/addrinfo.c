/*
 * rdma_getaddrinfo / rdma_freeaddrinfo, as rdma-core's: getaddrinfo(3)
 * resolves node and service (hints mapped: RAI_PASSIVE -> AI_PASSIVE,
 * RAI_NUMERICHOST -> AI_NUMERICHOST, the QP type to a socket type, the
 * port space to a protocol), and its first answer becomes the source
 * (passive) or destination address. The QP type and port space come from
 * the hints, else from that answer (stream: RC and RDMA_PS_TCP, datagram:
 * UD and RDMA_PS_UDP). With RAI_FAMILY, ai_family AF_IB and
 * RAI_NUMERICHOST the address is given as a struct sockaddr_ib: the GID is
 * the IPv6 address, or the IPv4-mapped one (::ffff:a.b.c.d) for IPv4, the
 * service ID is the port space and port (Annex A11), P_Key 0xffff.
 * Failures of getaddrinfo return its EAI_* code, as rdma-core does; others
 * -1 with errno. There is no ibacm: no route or connect data is added.
 */
#include "sofcm.h"

#include <endian.h>
#include <infiniband/ib.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

static void to_ai_hints(struct addrinfo *ai, const struct rdma_addrinfo *rai)
{
	memset(ai, 0, sizeof(*ai));
	if (rai->ai_flags & RAI_PASSIVE)
		ai->ai_flags = AI_PASSIVE;
	if (rai->ai_flags & RAI_NUMERICHOST)
		ai->ai_flags |= AI_NUMERICHOST;
	if (rai->ai_family != AF_IB)
		ai->ai_family = rai->ai_family;
	switch (rai->ai_qp_type) {
	case IBV_QPT_RC:
	case IBV_QPT_UC:
	case IBV_QPT_XRC_SEND:
	case IBV_QPT_XRC_RECV:
		ai->ai_socktype = SOCK_STREAM;
		break;
	case IBV_QPT_UD:
		ai->ai_socktype = SOCK_DGRAM;
		break;
	default:
		break;
	}
	switch (rai->ai_port_space) {
	case RDMA_PS_TCP:
		ai->ai_protocol = IPPROTO_TCP;
		break;
	case RDMA_PS_IPOIB:
	case RDMA_PS_UDP:
		ai->ai_protocol = IPPROTO_UDP;
		break;
	case RDMA_PS_IB:
		if (ai->ai_socktype == SOCK_STREAM)
			ai->ai_protocol = IPPROTO_TCP;
		else if (ai->ai_socktype == SOCK_DGRAM)
			ai->ai_protocol = IPPROTO_UDP;
		break;
	default:
		break;
	}
}

static int copy_addr(struct sockaddr **dst, socklen_t *dst_len, const void *src, socklen_t len)
{
	*dst = malloc(len);
	if (!*dst)
		return -ENOMEM;
	memcpy(*dst, src, len);
	*dst_len = len;
	return 0;
}

/* An IP address as AF_IB: the GID, and the service ID of port space ps. */
static int to_sib(int ps, struct sockaddr **dst, socklen_t *dst_len, const struct sockaddr *src)
{
	struct sockaddr_ib *sib = calloc(1, sizeof(*sib));
	uint16_t port = 0;

	if (!sib)
		return -ENOMEM;
	sib->sib_family = AF_IB;
	sib->sib_pkey = htobe16(0xffff);
	if (src->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)src;

		memcpy(&sib->sib_addr, &s6->sin6_addr, 16);
		sib->sib_flowinfo = s6->sin6_flowinfo;
		sib->sib_scope_id = s6->sin6_scope_id;
		port = be16toh(s6->sin6_port);
	} else {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)src;

		ib_addr_set(&sib->sib_addr, 0, 0, htobe32(0xffff), s4->sin_addr.s_addr);
		port = be16toh(s4->sin_port);
	}
	/* Annex A11: service ID = port space << 16 | port */
	sib->sib_sid = htobe64(((uint64_t)(unsigned int)ps << 16) + port);
	if (ps)
		sib->sib_sid_mask = htobe64(RDMA_IB_IP_PS_MASK);
	if (port)
		sib->sib_sid_mask |= htobe64(RDMA_IB_IP_PORT_MASK);
	*dst = (struct sockaddr *)sib;
	*dst_len = sizeof(*sib);
	return 0;
}

static int from_ai(struct rdma_addrinfo *rai, const struct rdma_addrinfo *hints,
		   const struct addrinfo *ai)
{
	bool want_ib = (hints->ai_flags & RAI_FAMILY) && hints->ai_family == AF_IB &&
		       (hints->ai_flags & RAI_NUMERICHOST) &&
		       (ai->ai_family == AF_INET || ai->ai_family == AF_INET6);
	bool passive = (hints->ai_flags & RAI_PASSIVE) || (ai->ai_flags & AI_PASSIVE);
	struct sockaddr **addr;
	socklen_t *len;
	char **canon;

	if (hints->ai_qp_type)
		rai->ai_qp_type = hints->ai_qp_type;
	else if (ai->ai_socktype == SOCK_STREAM)
		rai->ai_qp_type = IBV_QPT_RC;
	else if (ai->ai_socktype == SOCK_DGRAM)
		rai->ai_qp_type = IBV_QPT_UD;
	if (hints->ai_port_space)
		rai->ai_port_space = hints->ai_port_space;
	else if (ai->ai_protocol == IPPROTO_TCP)
		rai->ai_port_space = RDMA_PS_TCP;
	else if (ai->ai_protocol == IPPROTO_UDP)
		rai->ai_port_space = RDMA_PS_UDP;

	if (passive) {
		rai->ai_flags = RAI_PASSIVE;
		addr = &rai->ai_src_addr;
		len = &rai->ai_src_len;
		canon = &rai->ai_src_canonname;
	} else {
		addr = &rai->ai_dst_addr;
		len = &rai->ai_dst_len;
		canon = &rai->ai_dst_canonname;
	}
	if (ai->ai_canonname) {
		*canon = strdup(ai->ai_canonname);
		if (!*canon)
			return -ENOMEM;
	}
	if (want_ib) {
		rai->ai_family = AF_IB;
		return to_sib(rai->ai_port_space, addr, len, ai->ai_addr);
	}
	rai->ai_family = ai->ai_family;
	return copy_addr(addr, len, ai->ai_addr, ai->ai_addrlen);
}

SOFCM_EXPORT int rdma_getaddrinfo(const char *node, const char *service,
				  const struct rdma_addrinfo *hints, struct rdma_addrinfo **res)
{
	static const struct rdma_addrinfo nohints;
	struct rdma_addrinfo *rai;
	struct addrinfo aih, *ai;
	int ret = 0;

	if ((!service && !node && !hints) || !res)
		return sofcm_err(EINVAL);
	rai = calloc(1, sizeof(*rai));
	if (!rai)
		return sofcm_err(ENOMEM);
	if (node || service) {
		if (hints) {
			to_ai_hints(&aih, hints);
			ret = getaddrinfo(node, service, &aih, &ai);
		} else {
			ret = getaddrinfo(node, service, NULL, &ai);
			hints = &nohints;
		}
		if (ret) {
			rdma_freeaddrinfo(rai);
			return ret; /* EAI_* */
		}
		ret = from_ai(rai, hints, ai);
		freeaddrinfo(ai);
	} else {
		rai->ai_flags = hints->ai_flags;
		rai->ai_family = hints->ai_family;
		rai->ai_qp_type = hints->ai_qp_type;
		rai->ai_port_space = hints->ai_port_space;
		if (hints->ai_dst_len && hints->ai_dst_addr)
			ret = copy_addr(&rai->ai_dst_addr, &rai->ai_dst_len, hints->ai_dst_addr,
					hints->ai_dst_len);
	}
	if (!ret && hints && !rai->ai_src_len && hints->ai_src_len && hints->ai_src_addr)
		ret = copy_addr(&rai->ai_src_addr, &rai->ai_src_len, hints->ai_src_addr,
				hints->ai_src_len);
	if (ret) {
		rdma_freeaddrinfo(rai);
		return sofcm_err(-ret);
	}
	*res = rai;
	return 0;
}

SOFCM_EXPORT void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	struct rdma_addrinfo *next;

	for (; res; res = next) {
		next = res->ai_next;
		free(res->ai_connect);
		free(res->ai_route);
		free(res->ai_src_canonname);
		free(res->ai_dst_canonname);
		free(res->ai_src_addr);
		free(res->ai_dst_addr);
		free(res);
	}
}
