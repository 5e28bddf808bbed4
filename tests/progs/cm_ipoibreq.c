/*
 * A REQ to an IPoIB connected-mode interface (RFC 4755) from outside it
 * (tests/hosts/ipoib_cm.sh): an AF_IB id in the IB port space resolves
 * the peer's GID, its route from the SA, and connects to the service ID
 * 0x1000000000000000 | QPN with the private data given in hex. Prints the
 * event that answers: "event RDMA_CM_EVENT_REJECTED" (a malformed REQ),
 * or "event RDMA_CM_EVENT_ESTABLISHED rep qpn 0xQPN rsize N" with the
 * REP's private data (RFC 4755 section 6), then disconnects. PKEY (the
 * id's sib_pkey, default 0xffff) names the partition of the request: an
 * interface of another partition (a child ib0.8001) rejects it. A QPN
 * above 24 bits is a whole service ID instead, in its port space (an A11
 * IP service: HEX then holds the A11 header, since AF_IB ids send none),
 * to reach an RDMA CM listener on an IP address. Before the REQ it prints
 * "route sl S life L" (the SA's PathRecord as rdma_resolve_route gave
 * it) and "qp_attr sl S timeout T" (rdma_init_qp_attr's RTR ah_attr.sl and
 * RTS local ACK timeout: the kernel's PacketLifeTime + 1).
 *
 *   cm_ipoibreq GID QPN|SID HEX [PKEY]
 *
 * Exit 0 once an event answered the REQ, 1 when none did.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <infiniband/ib.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WAIT_MS 20000

static void fail(const char *why)
{
	printf("fail: %s (%s)\n", why, strerror(errno));
	exit(1);
}

static struct rdma_cm_event *next(struct rdma_event_channel *ch)
{
	struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
	struct rdma_cm_event *ev;

	if (poll(&pfd, 1, WAIT_MS) != 1 || rdma_get_cm_event(ch, &ev))
		fail("no event");
	return ev;
}

static void expect(struct rdma_event_channel *ch, enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev = next(ch);

	if (ev->event != want) {
		printf("fail: event %s, wanted %s\n", rdma_event_str(ev->event),
		       rdma_event_str(want));
		exit(1);
	}
	rdma_ack_cm_event(ev);
}

static void ib_addr(struct sockaddr_ib *a, const uint8_t gid[16], uint64_t sid, uint16_t pkey)
{
	memset(a, 0, sizeof(*a));
	a->sib_family = AF_IB;
	memcpy(&a->sib_addr, gid, 16);
	a->sib_pkey = htons(pkey);
	a->sib_sid = htobe64(sid);
	a->sib_sid_mask = htobe64(~0ull);
}

int main(int argc, char **argv)
{
	struct ibv_qp_init_attr qa = {
	    .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1},
	    .qp_type = IBV_QPT_RC};
	struct rdma_conn_param cp = {.retry_count = 7, .rnr_retry_count = 7};
	struct rdma_event_channel *ch;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	struct sockaddr_ib dst;
	uint8_t peer[16], pdata[64];
	size_t plen = 0;
	const char *hex;
	uint16_t pkey = 0xffff;
	enum rdma_port_space ps = RDMA_PS_IB;
	uint64_t sid;

	if ((argc != 4 && argc != 5) || inet_pton(AF_INET6, argv[1], peer) != 1)
		return 2;
	if (argc == 5)
		pkey = (uint16_t)strtoul(argv[4], NULL, 0);
	for (hex = argv[3]; hex[0] && hex[1] && plen < sizeof(pdata); hex += 2) {
		unsigned v;

		if (sscanf(hex, "%2x", &v) != 1)
			return 2;
		pdata[plen++] = (uint8_t)v;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	sid = strtoull(argv[2], NULL, 0);
	if (sid > 0xffffff)
		ps = (enum rdma_port_space)((sid >> 16) & 0xffff);
	else
		sid |= 0x1000000000000000ull;
	ch = rdma_create_event_channel();
	if (!ch || rdma_create_id(ch, &id, NULL, ps))
		fail("rdma_create_id");
	ib_addr(&dst, peer, sid, pkey);
	if (rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000))
		fail("rdma_resolve_addr");
	expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	if (rdma_resolve_route(id, 2000))
		fail("rdma_resolve_route");
	expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
	if (id->route.num_paths)
		printf("route sl %u life %u\n", id->route.path_rec->sl & 0xf,
		       id->route.path_rec->packet_life_time & 0x3f);
	if (rdma_create_qp(id, NULL, &qa))
		fail("rdma_create_qp");
	cp.private_data = plen ? pdata : NULL;
	cp.private_data_len = (uint8_t)plen;
	if (rdma_connect(id, &cp))
		fail("rdma_connect");
	ev = next(ch);
	if (ev->event == RDMA_CM_EVENT_ESTABLISHED) {
		struct ibv_qp_attr qpa;
		int mask;
		unsigned sl;

		qpa.qp_state = IBV_QPS_RTR;
		if (rdma_init_qp_attr(id, &qpa, &mask))
			fail("rdma_init_qp_attr RTR");
		sl = qpa.ah_attr.sl;
		qpa.qp_state = IBV_QPS_RTS;
		if (rdma_init_qp_attr(id, &qpa, &mask))
			fail("rdma_init_qp_attr RTS");
		printf("qp_attr sl %u timeout %u\n", sl, qpa.timeout);
	}
	printf("event %s", rdma_event_str(ev->event));
	if (ev->event == RDMA_CM_EVENT_ESTABLISHED && ev->param.conn.private_data_len >= 8) {
		const uint8_t *p = ev->param.conn.private_data;

		printf(" rep qpn 0x%06x rsize %u",
		       (unsigned)(p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3]),
		       (unsigned)(p[4] << 24 | p[5] << 16 | p[6] << 8 | p[7]));
	}
	printf("\n");
	if (ev->event == RDMA_CM_EVENT_ESTABLISHED) {
		rdma_ack_cm_event(ev);
		rdma_disconnect(id);
		ev = next(ch);
	}
	rdma_ack_cm_event(ev);
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	return 0;
}
