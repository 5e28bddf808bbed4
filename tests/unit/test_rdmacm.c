/*
 * Unit tests of the drop-in librdmacm's parts that need no connection
 * manager in the daemon: rdma_getaddrinfo (IPv4, IPv6, passive, hints,
 * AF_IB as the IP-mapped GID with the RDMA IP service ID), rdma_event_str,
 * the port getters, rdma_get_devices, argument checks that fail before any
 * request, and the rsocket stubs (rpoll/rselect work, the rest ENOSYS).
 */
#include "harness.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <infiniband/ib.h>
#include <netdb.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <rdma/rsocket.h>
#include <unistd.h>

TEST(getaddrinfo_ipv4_active)
{
	struct rdma_addrinfo hints, *res;
	struct sockaddr_in *sin;

	memset(&hints, 0, sizeof(hints));
	hints.ai_port_space = RDMA_PS_TCP;
	CHECK_EQ(rdma_getaddrinfo("127.0.0.1", "7471", &hints, &res), 0);
	CHECK_EQ(res->ai_family, AF_INET);
	CHECK_EQ(res->ai_port_space, RDMA_PS_TCP);
	CHECK_EQ(res->ai_qp_type, IBV_QPT_RC);
	CHECK_EQ(res->ai_flags & RAI_PASSIVE, 0);
	CHECK(res->ai_src_addr == NULL);
	CHECK_EQ(res->ai_dst_len, sizeof(struct sockaddr_in));
	sin = (struct sockaddr_in *)res->ai_dst_addr;
	CHECK_EQ(sin->sin_family, AF_INET);
	CHECK_EQ(be16toh(sin->sin_port), 7471);
	CHECK_EQ(sin->sin_addr.s_addr, htobe32(0x7f000001));
	rdma_freeaddrinfo(res);
}

TEST(getaddrinfo_passive_udp)
{
	struct rdma_addrinfo hints, *res;
	struct sockaddr_in *sin;

	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_PASSIVE;
	hints.ai_family = AF_INET;
	hints.ai_port_space = RDMA_PS_UDP;
	CHECK_EQ(rdma_getaddrinfo(NULL, "7174", &hints, &res), 0);
	CHECK(res->ai_flags & RAI_PASSIVE);
	CHECK_EQ(res->ai_qp_type, IBV_QPT_UD);
	CHECK_EQ(res->ai_port_space, RDMA_PS_UDP);
	CHECK(res->ai_dst_addr == NULL);
	CHECK_EQ(res->ai_src_len, sizeof(struct sockaddr_in));
	sin = (struct sockaddr_in *)res->ai_src_addr;
	CHECK_EQ(sin->sin_addr.s_addr, INADDR_ANY);
	CHECK_EQ(be16toh(sin->sin_port), 7174);
	rdma_freeaddrinfo(res);
}

TEST(getaddrinfo_ipv6_numeric)
{
	struct rdma_addrinfo hints, *res;
	struct sockaddr_in6 *s6;
	struct in6_addr want;

	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_NUMERICHOST;
	hints.ai_qp_type = IBV_QPT_RC;
	CHECK_EQ(rdma_getaddrinfo("fd77::2", "18515", &hints, &res), 0);
	CHECK_EQ(res->ai_family, AF_INET6);
	CHECK_EQ(res->ai_dst_len, sizeof(struct sockaddr_in6));
	s6 = (struct sockaddr_in6 *)res->ai_dst_addr;
	inet_pton(AF_INET6, "fd77::2", &want);
	CHECK_MEM(&s6->sin6_addr, &want, 16);
	CHECK_EQ(be16toh(s6->sin6_port), 18515);
	rdma_freeaddrinfo(res);
	/* RAI_NUMERICHOST refuses names */
	CHECK_NE(rdma_getaddrinfo("localhost", "1", &hints, &res), 0);
}

TEST(getaddrinfo_af_ib)
{
	static const uint8_t v4gid[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 77, 0, 1};
	struct rdma_addrinfo hints, *res;
	struct sockaddr_ib *sib;
	struct in6_addr want;

	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = RAI_NUMERICHOST | RAI_FAMILY;
	hints.ai_family = AF_IB;
	hints.ai_port_space = RDMA_PS_TCP;
	CHECK_EQ(rdma_getaddrinfo("10.77.0.1", "7471", &hints, &res), 0);
	CHECK_EQ(res->ai_family, AF_IB);
	CHECK_EQ(res->ai_dst_len, sizeof(struct sockaddr_ib));
	sib = (struct sockaddr_ib *)res->ai_dst_addr;
	CHECK_EQ(sib->sib_family, AF_IB);
	CHECK_MEM(&sib->sib_addr, v4gid, 16);
	CHECK_EQ(be64toh(sib->sib_sid), RDMA_IB_IP_PS_TCP | 7471);
	CHECK_EQ(be64toh(sib->sib_sid_mask), RDMA_IB_IP_PS_MASK | RDMA_IB_IP_PORT_MASK);
	CHECK_EQ(be16toh(sib->sib_pkey), 0xffff);
	rdma_freeaddrinfo(res);

	CHECK_EQ(rdma_getaddrinfo("fd77::1", NULL, &hints, &res), 0);
	sib = (struct sockaddr_ib *)res->ai_dst_addr;
	inet_pton(AF_INET6, "fd77::1", &want);
	CHECK_MEM(&sib->sib_addr, &want, 16);
	CHECK_EQ(be64toh(sib->sib_sid), RDMA_IB_IP_PS_TCP);
	CHECK_EQ(be64toh(sib->sib_sid_mask), RDMA_IB_IP_PS_MASK);
	rdma_freeaddrinfo(res);
}

TEST(getaddrinfo_hints_only)
{
	struct sockaddr_in src = {.sin_family = AF_INET, .sin_port = htobe16(5)};
	struct sockaddr_in dst = {.sin_family = AF_INET, .sin_port = htobe16(6)};
	struct rdma_addrinfo hints, *res;

	memset(&hints, 0, sizeof(hints));
	hints.ai_qp_type = IBV_QPT_UD;
	hints.ai_port_space = RDMA_PS_UDP;
	hints.ai_src_addr = (struct sockaddr *)&src;
	hints.ai_src_len = sizeof(src);
	hints.ai_dst_addr = (struct sockaddr *)&dst;
	hints.ai_dst_len = sizeof(dst);
	CHECK_EQ(rdma_getaddrinfo(NULL, NULL, &hints, &res), 0);
	CHECK_EQ(res->ai_qp_type, IBV_QPT_UD);
	CHECK_EQ(res->ai_src_len, sizeof(src));
	CHECK_MEM(res->ai_src_addr, &src, sizeof(src));
	CHECK_EQ(res->ai_dst_len, sizeof(dst));
	CHECK_MEM(res->ai_dst_addr, &dst, sizeof(dst));
	CHECK(res->ai_src_addr != hints.ai_src_addr);
	rdma_freeaddrinfo(res);

	errno = 0;
	CHECK_EQ(rdma_getaddrinfo(NULL, NULL, NULL, &res), -1);
	CHECK_EQ(errno, EINVAL);
	rdma_freeaddrinfo(NULL);
}

TEST(event_str)
{
	CHECK(!strcmp(rdma_event_str(RDMA_CM_EVENT_ADDR_RESOLVED), "RDMA_CM_EVENT_ADDR_RESOLVED"));
	CHECK(!strcmp(rdma_event_str(RDMA_CM_EVENT_REJECTED), "RDMA_CM_EVENT_REJECTED"));
	CHECK(!strcmp(rdma_event_str(RDMA_CM_EVENT_TIMEWAIT_EXIT), "RDMA_CM_EVENT_TIMEWAIT_EXIT"));
	CHECK(!strcmp(rdma_event_str((enum rdma_cm_event_type)99), "UNKNOWN EVENT"));
}

TEST(ports)
{
	struct rdma_cm_id id;
	struct sockaddr_in6 *s6 = &id.route.addr.dst_sin6;
	struct sockaddr_ib *sib = (struct sockaddr_ib *)&id.route.addr.src_storage;

	memset(&id, 0, sizeof(id));
	s6->sin6_family = AF_INET6;
	s6->sin6_port = htobe16(4791);
	sib->sib_family = AF_IB;
	sib->sib_sid = htobe64(RDMA_IB_IP_PS_TCP | 18515);
	CHECK_EQ(be16toh(rdma_get_dst_port(&id)), 4791);
	CHECK_EQ(be16toh(rdma_get_src_port(&id)), 18515);
}

TEST(devices)
{
	struct ibv_context **list;
	int n = -1;

	list = rdma_get_devices(&n);
	CHECK(list != NULL);
	CHECK_EQ(n, 1);
	CHECK(list[0] != NULL);
	CHECK(list[1] == NULL);
	CHECK(!strcmp(ibv_get_device_name(list[0]->device), "sof0"));
	rdma_free_devices(list);
	/* the context stays the same for the life of the process */
	list = rdma_get_devices(NULL);
	CHECK(list && list[0]);
	rdma_free_devices(list);
}

TEST(bad_arguments)
{
	struct rdma_cm_join_mc_attr_ex mc;
	struct sockaddr_in sin = {.sin_family = AF_INET};
	struct rdma_cm_id id;

	memset(&id, 0, sizeof(id));
	memset(&mc, 0, sizeof(mc));
	mc.comp_mask = RDMA_CM_JOIN_MC_ATTR_RESERVED;
	errno = 0;
	CHECK_EQ(rdma_join_multicast_ex(&id, &mc, NULL), -1);
	CHECK_EQ(errno, ENOTSUP);
	mc.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS;
	mc.addr = (struct sockaddr *)&sin;
	CHECK_EQ(rdma_join_multicast_ex(&id, &mc, NULL), -1);
	CHECK_EQ(errno, EINVAL);
	mc.comp_mask |= RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;
	mc.join_flags = RDMA_MC_JOIN_FLAG_RESERVED;
	CHECK_EQ(rdma_join_multicast_ex(&id, &mc, NULL), -1);
	CHECK_EQ(errno, EINVAL);
	/* an address of no family */
	sin.sin_family = AF_UNIX;
	CHECK_EQ(rdma_join_multicast(&id, (struct sockaddr *)&sin, NULL), -1);
	CHECK_EQ(errno, EINVAL);
	CHECK_EQ(rdma_bind_addr(&id, (struct sockaddr *)&sin), -1);
	CHECK_EQ(errno, EINVAL);
	CHECK_EQ(rdma_resolve_addr(&id, NULL, (struct sockaddr *)&sin, 100), -1);
	CHECK_EQ(errno, EINVAL);
	CHECK_EQ(rdma_get_cm_event(NULL, NULL), -1);
	CHECK_EQ(errno, EINVAL);
	CHECK_EQ(rdma_ack_cm_event(NULL), -1);
	CHECK_EQ(errno, EINVAL);
	/* ECE: vendor 0 and ids with a QP are refused */
	{
		struct ibv_ece ece = {.vendor_id = 0};

		CHECK_EQ(rdma_set_local_ece(&id, &ece), -1);
		CHECK_EQ(errno, EINVAL);
	}
}

TEST(rsocket_stubs)
{
	struct pollfd pfd;
	int p[2];

	CHECK_EQ(pipe(p), 0);
	CHECK_EQ(write(p[1], "x", 1), 1);
	pfd.fd = p[0];
	pfd.events = POLLIN;
	pfd.revents = 0;
	CHECK_EQ(rpoll(&pfd, 1, 1000), 1);
	CHECK(pfd.revents & POLLIN);
	close(p[0]);
	close(p[1]);
	errno = 0;
	CHECK_EQ(rsocket(AF_INET, SOCK_STREAM, 0), -1);
	CHECK_EQ(errno, ENOSYS);
	CHECK_EQ(rclose(3), -1);
	CHECK_EQ(errno, ENOSYS);
}

int main(void)
{
	RUN(getaddrinfo_ipv4_active);
	RUN(getaddrinfo_passive_udp);
	RUN(getaddrinfo_ipv6_numeric);
	RUN(getaddrinfo_af_ib);
	RUN(getaddrinfo_hints_only);
	RUN(event_str);
	RUN(ports);
	RUN(devices);
	RUN(bad_arguments);
	RUN(rsocket_stubs);
	return test_summary();
}
