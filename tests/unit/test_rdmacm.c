/*
 * Unit tests of the drop-in librdmacm. Without the daemon's connection
 * manager: rdma_getaddrinfo (IPv4, IPv6, passive, hints, AF_IB as the
 * IP-mapped GID with the RDMA IP service ID), rdma_event_str, the port
 * getters, rdma_get_devices, argument checks that fail before any request,
 * the rsocket stubs (rpoll/rselect work, the rest ENOSYS). With it, on
 * 127.0.0.1: the channel's fd polls readable for an event, binding a
 * loopback address takes no device (as the wildcard), listening on port 0
 * picks a port, a synchronous id, RDMA_OPTION_IB_PATH as the route, ECE
 * and private data through a REQ and its REJ, the listen backlog, an
 * accepted id's queued events moving with it (rdma_migrate_id), IPv4 and
 * AF-only IPv6 wildcard listeners on one port, a loopback listener as a
 * wildcard one.
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
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* The next event of ch within 5 s, which must be want. */
static struct rdma_cm_event *next_event(struct rdma_event_channel *ch, enum rdma_cm_event_type want)
{
	struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
	struct rdma_cm_event *ev = NULL;

	CHECK_EQ(poll(&pfd, 1, 5000), 1);
	CHECK_EQ(rdma_get_cm_event(ch, &ev), 0);
	if (ev->event != want)
		test_fail(__FILE__, __LINE__, "event %s (status %d), wanted %s",
			  rdma_event_str(ev->event), ev->status, rdma_event_str(want));
	return ev;
}

static void loopback(struct sockaddr_in *sin, uint16_t port)
{
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htobe32(0x7f000001);
	sin->sin_port = htobe16(port);
}

TEST(channel_event_and_device)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_event *ev;
	struct sockaddr_in dst;
	struct rdma_cm_id *id;

	CHECK(ch != NULL);
	CHECK_EQ(rdma_create_id(ch, &id, (void *)0x1234, RDMA_PS_TCP), 0);
	CHECK(id->verbs == NULL);
	CHECK_EQ(id->qp_type, IBV_QPT_RC);
	loopback(&dst, 19411);
	CHECK_EQ(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000), 0);
	ev = next_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	CHECK(ev->id == id);
	CHECK(ev->id->context == (void *)0x1234);
	CHECK(id->verbs != NULL);
	CHECK(id->pd != NULL);
	CHECK_EQ(id->port_num, 1);
	CHECK_EQ(id->route.addr.src_addr.sa_family, AF_INET);
	CHECK_EQ(be16toh(rdma_get_dst_port(id)), 19411);
	CHECK_EQ(rdma_ack_cm_event(ev), 0);
	CHECK_EQ(rdma_resolve_route(id, 2000), 0);
	ev = next_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
	CHECK(id->route.path_rec != NULL);
	CHECK_EQ(id->route.num_paths, 1);
	CHECK_EQ(id->route.path_rec[0].pkey, htobe16(0xffff));
	CHECK_MEM(&id->route.path_rec[0].dgid, &id->route.addr.addr.ibaddr.dgid, 16);
	CHECK_EQ(rdma_ack_cm_event(ev), 0);
	CHECK_EQ(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(ch);
}

TEST(listen_port_zero)
{
	struct rdma_cm_id *id;
	struct sockaddr_in sin;

	CHECK_EQ(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP), 0);
	loopback(&sin, 0);
	CHECK_EQ(rdma_bind_addr(id, (struct sockaddr *)&sin), 0);
	CHECK(id->verbs == NULL); /* a loopback bind takes no device */
	CHECK_EQ(rdma_listen(id, 4), 0);
	CHECK_NE(rdma_get_src_port(id), 0);
	CHECK_EQ(rdma_destroy_id(id), 0);
}

/* an unknown port space: EINVAL, as the kernel's rdma_ucm answers */
TEST(create_id_bad_ps)
{
	struct rdma_cm_id *id = NULL;

	errno = 0;
	CHECK_EQ(rdma_create_id(NULL, &id, NULL, (enum rdma_port_space)0x0999), -1);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK_EQ(rdma_create_id(NULL, &id, NULL, (enum rdma_port_space)0), -1);
	CHECK_EQ(errno, EINVAL);
	CHECK(id == NULL);
}

TEST(sync_resolve)
{
	struct rdma_cm_id *id;
	struct sockaddr_in dst;

	CHECK_EQ(rdma_create_id(NULL, &id, NULL, RDMA_PS_UDP), 0);
	CHECK_EQ(id->qp_type, IBV_QPT_UD);
	loopback(&dst, 19412);
	/* synchronous: returns once the event is there, kept in id->event */
	CHECK_EQ(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000), 0);
	CHECK(id->event != NULL);
	CHECK_EQ(id->event->event, RDMA_CM_EVENT_ADDR_RESOLVED);
	CHECK_EQ(rdma_resolve_route(id, 2000), 0);
	CHECK_EQ(id->event->event, RDMA_CM_EVENT_ROUTE_RESOLVED);
	CHECK_EQ(rdma_destroy_id(id), 0);
}

TEST(ib_path_option)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct ibv_path_data path;
	struct rdma_cm_event *ev;
	struct sockaddr_in dst;
	struct rdma_cm_id *id;

	CHECK(ch != NULL);
	CHECK_EQ(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	loopback(&dst, 19413);
	CHECK_EQ(rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000), 0);
	CHECK_EQ(rdma_ack_cm_event(next_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED)), 0);
	memset(&path, 0, sizeof(path));
	memcpy(&path.path.sgid, &id->route.addr.addr.ibaddr.sgid, 16);
	memcpy(&path.path.dgid, &id->route.addr.addr.ibaddr.dgid, 16);
	path.path.pkey = htobe16(0xffff);
	path.flags = IBV_PATH_FLAG_GMP | IBV_PATH_FLAG_PRIMARY | IBV_PATH_FLAG_BIDIRECTIONAL;
	CHECK_EQ(rdma_set_option(id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, &path, sizeof(path)), 0);
	ev = next_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
	CHECK(id->route.path_rec != NULL);
	CHECK_EQ(rdma_ack_cm_event(ev), 0);
	/* an option value longer than any is refused here */
	{
		uint8_t big[200] = {0};

		errno = 0;
		CHECK_EQ(rdma_set_option(id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, big, sizeof(big)),
			 -1);
		CHECK_EQ(errno, EINVAL);
	}
	CHECK_EQ(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(ch);
}

TEST(ece_and_reject)
{
	struct rdma_event_channel *lch = rdma_create_event_channel(),
				  *cch = rdma_create_event_channel();
	struct ibv_ece ece = {.vendor_id = 0x15b3, .options = 5}, got;
	static const char why[] = "go away";
	struct rdma_cm_id *lid, *cid, *nid;
	struct rdma_conn_param param;
	struct rdma_cm_event *ev;
	struct sockaddr_in sin;

	CHECK(lch && cch);
	CHECK_EQ(rdma_create_id(lch, &lid, NULL, RDMA_PS_TCP), 0);
	loopback(&sin, 19414);
	CHECK_EQ(rdma_bind_addr(lid, (struct sockaddr *)&sin), 0);
	CHECK_EQ(rdma_listen(lid, 1), 0);
	/* rdma_get_request is for synchronous listeners only */
	errno = 0;
	CHECK_EQ(rdma_get_request(lid, &nid), -1);
	CHECK_EQ(errno, EINVAL);

	CHECK_EQ(rdma_create_id(cch, &cid, NULL, RDMA_PS_TCP), 0);
	CHECK_EQ(rdma_resolve_addr(cid, NULL, (struct sockaddr *)&sin, 2000), 0);
	CHECK_EQ(rdma_ack_cm_event(next_event(cch, RDMA_CM_EVENT_ADDR_RESOLVED)), 0);
	CHECK_EQ(rdma_resolve_route(cid, 2000), 0);
	CHECK_EQ(rdma_ack_cm_event(next_event(cch, RDMA_CM_EVENT_ROUTE_RESOLVED)), 0);
	CHECK_EQ(rdma_set_local_ece(cid, &ece), 0);
	memset(&param, 0, sizeof(param));
	param.qp_num = 0x123456; /* no QP: the application's own */
	param.responder_resources = 1;
	param.initiator_depth = 1;
	param.private_data = "hello";
	param.private_data_len = 6;
	CHECK_EQ(rdma_connect(cid, &param), 0);

	ev = next_event(lch, RDMA_CM_EVENT_CONNECT_REQUEST);
	nid = ev->id;
	CHECK(ev->listen_id == lid);
	CHECK(nid != lid && nid->verbs != NULL);
	CHECK(ev->param.conn.private_data_len >= 6);
	CHECK(!memcmp(ev->param.conn.private_data, "hello", 6));
	CHECK_EQ(ev->param.conn.qp_num, 0x123456);
	CHECK_EQ(rdma_get_remote_ece(nid, &got), 0);
	CHECK_EQ(got.vendor_id, 0x15b3);
	CHECK_EQ(got.options, 5);
	CHECK_EQ(be16toh(rdma_get_src_port(nid)), 19414);
	CHECK_EQ(rdma_ack_cm_event(ev), 0);
	CHECK_EQ(rdma_reject(nid, why, sizeof(why)), 0);

	ev = next_event(cch, RDMA_CM_EVENT_REJECTED);
	CHECK(ev->id == cid);
	CHECK_EQ(ev->status, 28); /* IBA 12.6.7.2: consumer defined */
	CHECK(ev->param.conn.private_data_len >= sizeof(why));
	CHECK(!memcmp(ev->param.conn.private_data, why, sizeof(why)));
	CHECK_EQ(rdma_ack_cm_event(ev), 0);
	CHECK_EQ(rdma_destroy_id(nid), 0);
	CHECK_EQ(rdma_destroy_id(cid), 0);
	CHECK_EQ(rdma_destroy_id(lid), 0);
	rdma_destroy_event_channel(lch);
	rdma_destroy_event_channel(cch);
}

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

/* rpoll on an ordinary descriptor is poll; the rsocket calls' argument
 * errors (stream rsockets work: consumers/rsocket.sh) */
TEST(rsocket_args)
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
	CHECK_EQ(rsocket(AF_UNIX, SOCK_STREAM, 0), -1);
	CHECK_EQ(errno, ENOTSUP);
	CHECK_EQ(rsocket(AF_INET, SOCK_STREAM, IPPROTO_UDP), -1);
	CHECK_EQ(errno, ENOTSUP);
	CHECK_EQ(rclose(3), -1); /* not an rsocket */
	CHECK_EQ(errno, EBADF);
}

/* An id of ch resolved to 127.0.0.1:port and connecting (no QP). */
static struct rdma_cm_id *connecting(struct rdma_event_channel *ch, uint16_t port)
{
	struct rdma_conn_param param;
	struct sockaddr_in sin;
	struct rdma_cm_id *id;

	loopback(&sin, port);
	CHECK_EQ(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	CHECK_EQ(rdma_resolve_addr(id, NULL, (struct sockaddr *)&sin, 2000), 0);
	CHECK_EQ(rdma_ack_cm_event(next_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED)), 0);
	CHECK_EQ(rdma_resolve_route(id, 2000), 0);
	CHECK_EQ(rdma_ack_cm_event(next_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED)), 0);
	memset(&param, 0, sizeof(param));
	param.qp_num = 0x4242;
	CHECK_EQ(rdma_connect(id, &param), 0);
	return id;
}

TEST(listen_backlog)
{
	struct rdma_event_channel *lch = rdma_create_event_channel(),
				  *c1 = rdma_create_event_channel(),
				  *c2 = rdma_create_event_channel();
	struct rdma_cm_id *lid, *a, *b, *nid;
	struct rdma_cm_event *ev;
	struct sockaddr_in sin;
	struct pollfd pfd;

	CHECK(lch && c1 && c2);
	CHECK_EQ(rdma_create_id(lch, &lid, NULL, RDMA_PS_TCP), 0);
	loopback(&sin, 19415);
	CHECK_EQ(rdma_bind_addr(lid, (struct sockaddr *)&sin), 0);
	CHECK_EQ(rdma_listen(lid, 1), 0);
	a = connecting(c1, 19415);
	ev = next_event(lch, RDMA_CM_EVENT_CONNECT_REQUEST);
	nid = ev->id;
	CHECK_EQ(rdma_ack_cm_event(ev), 0);
	/* one request pending: the next one is refused */
	b = connecting(c2, 19415);
	ev = next_event(c2, RDMA_CM_EVENT_REJECTED);
	CHECK(ev->id == b);
	CHECK_EQ(rdma_ack_cm_event(ev), 0);
	pfd.fd = lch->fd;
	pfd.events = POLLIN;
	CHECK_EQ(poll(&pfd, 1, 200), 0);
	CHECK_EQ(rdma_reject(nid, NULL, 0), 0);
	CHECK_EQ(rdma_ack_cm_event(next_event(c1, RDMA_CM_EVENT_REJECTED)), 0);
	CHECK_EQ(rdma_destroy_id(nid), 0);
	CHECK_EQ(rdma_destroy_id(a), 0);
	CHECK_EQ(rdma_destroy_id(b), 0);
	CHECK_EQ(rdma_destroy_id(lid), 0);
	rdma_destroy_event_channel(lch);
	rdma_destroy_event_channel(c1);
	rdma_destroy_event_channel(c2);
}

/* rdma_migrate_id moves the events queued for the id on its old channel
 * to the new one, readable there, as the kernel's ucma_migrate_id
 * (librpma migrates the accepted id after rdma_accept, and its
 * ESTABLISHED may already wait on the listener's channel). */
TEST(migrate_takes_queued_events)
{
	struct rdma_event_channel *lch = rdma_create_event_channel(),
				  *cch = rdma_create_event_channel(),
				  *nch = rdma_create_event_channel();
	struct rdma_conn_param param;
	struct rdma_cm_id *lid, *cid, *nid;
	struct rdma_cm_event *ev;
	struct sockaddr_in sin;
	struct pollfd pfd;

	CHECK(lch && cch && nch);
	CHECK_EQ(rdma_create_id(lch, &lid, NULL, RDMA_PS_TCP), 0);
	loopback(&sin, 19417);
	CHECK_EQ(rdma_bind_addr(lid, (struct sockaddr *)&sin), 0);
	CHECK_EQ(rdma_listen(lid, 1), 0);
	cid = connecting(cch, 19417);
	ev = next_event(lch, RDMA_CM_EVENT_CONNECT_REQUEST);
	nid = ev->id;
	CHECK_EQ(rdma_ack_cm_event(ev), 0);
	memset(&param, 0, sizeof(param));
	param.qp_num = 0x4343; /* no QP: the application's own */
	CHECK_EQ(rdma_accept(nid, &param), 0);
	/* the client has no QP either: it establishes (RTU) itself */
	CHECK_EQ(rdma_ack_cm_event(next_event(cch, RDMA_CM_EVENT_CONNECT_RESPONSE)), 0);
	CHECK_EQ(rdma_establish(cid), 0);
	/* the server's ESTABLISHED waits on the listener's channel ... */
	pfd.fd = lch->fd;
	pfd.events = POLLIN;
	CHECK_EQ(poll(&pfd, 1, 5000), 1);
	/* ... and goes with the id */
	CHECK_EQ(rdma_migrate_id(nid, nch), 0);
	ev = next_event(nch, RDMA_CM_EVENT_ESTABLISHED);
	CHECK(ev->id == nid);
	CHECK_EQ(rdma_ack_cm_event(ev), 0);
	CHECK_EQ(poll(&pfd, 1, 100), 0);
	CHECK_EQ(rdma_disconnect(cid), 0);
	CHECK_EQ(rdma_ack_cm_event(next_event(nch, RDMA_CM_EVENT_DISCONNECTED)), 0);
	CHECK_EQ(rdma_destroy_id(cid), 0);
	CHECK_EQ(rdma_destroy_id(nid), 0);
	CHECK_EQ(rdma_destroy_id(lid), 0);
	rdma_destroy_event_channel(lch);
	rdma_destroy_event_channel(cch);
	rdma_destroy_event_channel(nch);
}

/* net.ipv6.bindv6only of this network namespace (the daemon's). */
static int bindv6only(void)
{
	FILE *f = fopen("/proc/sys/net/ipv6/bindv6only", "r");
	int v = 0;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

/* Set it, only in the network namespace of our own that sof_ns_run
 * (tests/lib.sh) made: never the host's. 0 or -1. */
static int set_bindv6only(int v)
{
	FILE *f;
	int err;

	if (!getenv("SOF_NS_PIDFILE"))
		return -1;
	f = fopen("/proc/sys/net/ipv6/bindv6only", "w");
	if (!f)
		return -1;
	err = fprintf(f, "%d\n", v) < 0;
	return fclose(f) || err ? -1 : 0;
}

static int bind_any6(struct rdma_cm_id *id, uint16_t port)
{
	struct sockaddr_in6 s6;

	memset(&s6, 0, sizeof(s6));
	s6.sin6_family = AF_INET6;
	s6.sin6_addr = in6addr_any;
	s6.sin6_port = htobe16(port);
	return rdma_bind_addr(id, (struct sockaddr *)&s6);
}

/* As the kernel's rdma_cm: an IPv4 wildcard listener (AF_INET ids are
 * always AF-only) and an IPv6 wildcard one that asked for
 * RDMA_OPTION_ID_AFONLY share a port, and an IPv4 request reaches the IPv4
 * one; an IPv6 id that is not AF-only (the option 0, or left to
 * net.ipv6.bindv6only = 0) clashes with the IPv4 wildcard. */
TEST(wildcard_listeners_afonly)
{
	struct rdma_event_channel *lch = rdma_create_event_channel(),
				  *c1 = rdma_create_event_channel();
	struct rdma_cm_id *id4, *id6, *x, *a;
	struct rdma_cm_event *ev;
	struct sockaddr_in sin;
	int one = 1, zero = 0;

	CHECK(lch && c1);
	CHECK_EQ(rdma_create_id(lch, &id4, NULL, RDMA_PS_TCP), 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htobe16(19416);
	CHECK_EQ(rdma_bind_addr(id4, (struct sockaddr *)&sin), 0);
	CHECK_EQ(rdma_listen(id4, 4), 0);

	CHECK_EQ(rdma_create_id(lch, &id6, NULL, RDMA_PS_TCP), 0);
	CHECK_EQ(rdma_set_option(id6, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &one, sizeof(one)), 0);
	CHECK_EQ(bind_any6(id6, 19416), 0);
	CHECK_EQ(rdma_listen(id6, 4), 0);

	/* not AF-only: clashes, by the option or by the namespace's default */
	CHECK_EQ(rdma_create_id(NULL, &x, NULL, RDMA_PS_TCP), 0);
	CHECK_EQ(rdma_set_option(x, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &zero, sizeof(zero)), 0);
	CHECK_EQ(bind_any6(x, 19416), -1);
	CHECK_EQ(errno, EADDRINUSE);
	CHECK_EQ(rdma_destroy_id(x), 0);
	/* without the option: bindv6only 0 clashes with id4, 1 with id6 */
	CHECK_EQ(rdma_create_id(NULL, &x, NULL, RDMA_PS_TCP), 0);
	CHECK_EQ(bind_any6(x, 19416), -1);
	CHECK_EQ(errno, EADDRINUSE);
	CHECK_EQ(rdma_destroy_id(x), 0);
	/* and where only id4 holds the port, bindv6only decides */
	sin.sin_port = htobe16(19417);
	CHECK_EQ(rdma_create_id(NULL, &a, NULL, RDMA_PS_TCP), 0);
	CHECK_EQ(rdma_bind_addr(a, (struct sockaddr *)&sin), 0);
	for (int v6only = 0; v6only < 2; v6only++) {
		if (set_bindv6only(v6only) && bindv6only() != v6only)
			continue; /* cannot change it here: the value it has is tried */
		CHECK_EQ(rdma_create_id(NULL, &x, NULL, RDMA_PS_TCP), 0);
		CHECK_EQ(bind_any6(x, 19417), bindv6only() ? 0 : -1);
		CHECK_EQ(rdma_destroy_id(x), 0);
	}
	set_bindv6only(0);
	CHECK_EQ(rdma_destroy_id(a), 0);
	sin.sin_port = htobe16(19416);
	/* two of one family still clash */
	CHECK_EQ(rdma_create_id(NULL, &x, NULL, RDMA_PS_TCP), 0);
	CHECK_EQ(rdma_bind_addr(x, (struct sockaddr *)&sin), -1);
	CHECK_EQ(errno, EADDRINUSE);
	CHECK_EQ(rdma_destroy_id(x), 0);

	/* an IPv4 request finds the IPv4 listener */
	a = connecting(c1, 19416);
	ev = next_event(lch, RDMA_CM_EVENT_CONNECT_REQUEST);
	CHECK(ev->listen_id == id4);
	x = ev->id;
	CHECK_EQ(rdma_ack_cm_event(ev), 0);
	CHECK_EQ(rdma_reject(x, NULL, 0), 0);
	CHECK_EQ(rdma_ack_cm_event(next_event(c1, RDMA_CM_EVENT_REJECTED)), 0);
	CHECK_EQ(rdma_destroy_id(x), 0);
	CHECK_EQ(rdma_destroy_id(a), 0);
	CHECK_EQ(rdma_destroy_id(id6), 0);
	CHECK_EQ(rdma_destroy_id(id4), 0);
	rdma_destroy_event_channel(lch);
	rdma_destroy_event_channel(c1);
}

/* As the kernel's rdma_cm (cma_any_addr): a loopback address binds like
 * the wildcard, with no device (id->verbs NULL, libfabric's verbs provider
 * relies on it), holds its port against the wildcard, and a listener on it
 * takes a request for any address of its family. */
TEST(loopback_binds_as_wildcard)
{
	struct rdma_event_channel *lch = rdma_create_event_channel(),
				  *c1 = rdma_create_event_channel();
	struct rdma_cm_id *lid, *x, *a;
	struct rdma_cm_event *ev;
	struct sockaddr_in sin;

	CHECK(lch && c1);
	CHECK_EQ(rdma_create_id(lch, &lid, NULL, RDMA_PS_TCP), 0);
	loopback(&sin, 19418);
	sin.sin_addr.s_addr = htobe32(0x7f000002); /* any of 127/8 */
	CHECK_EQ(rdma_bind_addr(lid, (struct sockaddr *)&sin), 0);
	CHECK(lid->verbs == NULL);
	CHECK_EQ(lid->port_num, 0);
	CHECK_EQ(rdma_listen(lid, 4), 0);
	CHECK(lid->verbs == NULL);

	/* the wildcard on the same port clashes */
	CHECK_EQ(rdma_create_id(NULL, &x, NULL, RDMA_PS_TCP), 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htobe16(19418);
	CHECK_EQ(rdma_bind_addr(x, (struct sockaddr *)&sin), -1);
	CHECK_EQ(errno, EADDRINUSE);
	CHECK_EQ(rdma_destroy_id(x), 0);

	/* a request for 127.0.0.1 reaches it; the child has the device */
	a = connecting(c1, 19418);
	ev = next_event(lch, RDMA_CM_EVENT_CONNECT_REQUEST);
	CHECK(ev->listen_id == lid);
	x = ev->id;
	CHECK(x->verbs != NULL);
	CHECK_EQ(rdma_ack_cm_event(ev), 0);
	CHECK_EQ(rdma_reject(x, NULL, 0), 0);
	CHECK_EQ(rdma_ack_cm_event(next_event(c1, RDMA_CM_EVENT_REJECTED)), 0);
	CHECK_EQ(rdma_destroy_id(x), 0);
	CHECK_EQ(rdma_destroy_id(a), 0);
	CHECK_EQ(rdma_destroy_id(lid), 0);
	rdma_destroy_event_channel(lch);
	rdma_destroy_event_channel(c1);
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
	RUN(rsocket_args);
	RUN(channel_event_and_device);
	RUN(listen_port_zero);
	RUN(create_id_bad_ps);
	RUN(sync_resolve);
	RUN(ib_path_option);
	RUN(ece_and_reject);
	RUN(listen_backlog);
	RUN(migrate_takes_queued_events);
	RUN(wildcard_listeners_afonly);
	RUN(loopback_binds_as_wildcard);
	return test_summary();
}
