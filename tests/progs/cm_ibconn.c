/*
 * An RC connection through the RDMA CM on the InfiniBand port, by AF_IB
 * address (tests/hosts/ibcm.sh): the server listens on sofib0's GID 0, the
 * client resolves the server's GID from its own, the route from the SA
 * (a PathRecord: DLID, SL, MTU), connects, and both exchange SIZE bytes
 * each way, checked byte for byte; the client disconnects.
 *
 *   cm_ibconn -s [-p PORT] [-z SIZE]
 *   cm_ibconn -c SERVER_GID [-p PORT] [-z SIZE]
 *
 * Output: "gid GID" (its own), the client "path dlid N slid N sl N mtu N",
 * then "ok" or "fail: REASON". Exit 0 when all holds, 1 not.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <infiniband/ib.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WAIT_MS 20000

static void fail(const char *why)
{
	printf("fail: %s (%s)\n", why, strerror(errno));
	fflush(stdout);
	exit(1);
}

static struct rdma_cm_event *expect(struct rdma_event_channel *ch, enum rdma_cm_event_type want)
{
	struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
	struct rdma_cm_event *ev;

	if (poll(&pfd, 1, WAIT_MS) != 1)
		fail("no event");
	if (rdma_get_cm_event(ch, &ev))
		fail("rdma_get_cm_event");
	if (ev->event != want) {
		printf("fail: event %s (status %d), wanted %s\n", rdma_event_str(ev->event),
		       ev->status, rdma_event_str(want));
		exit(1);
	}
	return ev;
}

static void own_gid(union ibv_gid *gid)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;

	for (int i = 0; list && list[i] && !ctx; i++)
		if (!strcmp(ibv_get_device_name(list[i]), "sofib0"))
			ctx = ibv_open_device(list[i]);
	if (!ctx || ibv_query_gid(ctx, 1, 0, gid))
		fail("sofib0");
	ibv_close_device(ctx);
	ibv_free_device_list(list);
}

static void ib_addr(struct sockaddr_ib *a, const union ibv_gid *gid, uint16_t port)
{
	memset(a, 0, sizeof(*a));
	a->sib_family = AF_IB;
	memcpy(&a->sib_addr, gid->raw, 16);
	a->sib_pkey = htons(0xffff);
	a->sib_sid = htobe64(RDMA_IB_IP_PS_TCP | port);
	a->sib_sid_mask = htobe64(~0ull);
}

static void wait_wc(struct ibv_cq *cq, enum ibv_wc_opcode op)
{
	struct timespec t0, t;
	struct ibv_wc wc;
	int n;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		n = ibv_poll_cq(cq, 1, &wc);
		if (n < 0)
			fail("ibv_poll_cq");
		if (n == 1) {
			if (wc.status != IBV_WC_SUCCESS || wc.opcode != op) {
				printf("fail: completion %s opcode %d\n",
				       ibv_wc_status_str(wc.status), wc.opcode);
				exit(1);
			}
			return;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 > WAIT_MS)
			fail("no completion");
		usleep(100);
	}
}

/* Send our pattern, receive the peer's, check it (the pattern of seed). */
static void exchange(struct rdma_cm_id *id, struct ibv_mr *mr, char *buf, size_t size,
		     unsigned seed_out, unsigned seed_in)
{
	struct ibv_sge sge = {
	    .addr = (uintptr_t)(buf + size), .length = (uint32_t)size, .lkey = mr->lkey};
	struct ibv_send_wr wr = {.sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad;

	for (size_t i = 0; i < size; i++)
		buf[size + i] = (char)(i * 7 + seed_out);
	if (ibv_post_send(id->qp, &wr, &bad))
		fail("ibv_post_send");
	wait_wc(id->send_cq, IBV_WC_SEND);
	wait_wc(id->recv_cq, IBV_WC_RECV);
	for (size_t i = 0; i < size; i++)
		if (buf[i] != (char)(i * 7 + seed_in)) {
			printf("fail: byte %zu differs\n", i);
			exit(1);
		}
}

static struct ibv_mr *setup_qp(struct rdma_cm_id *id, char *buf, size_t size)
{
	struct ibv_qp_init_attr qa = {
	    .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1},
	    .qp_type = IBV_QPT_RC,
	    .sq_sig_all = 0};
	struct ibv_mr *mr;
	struct ibv_sge sge;
	struct ibv_recv_wr rwr = {.sg_list = &sge, .num_sge = 1}, *bad;

	if (!id->verbs || strcmp(ibv_get_device_name(id->verbs->device), "sofib0"))
		fail("the id is not on sofib0");
	if (rdma_create_qp(id, NULL, &qa))
		fail("rdma_create_qp");
	mr = ibv_reg_mr(id->pd, buf, 2 * size, IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		fail("ibv_reg_mr");
	sge = (struct ibv_sge){.addr = (uintptr_t)buf, .length = (uint32_t)size, .lkey = mr->lkey};
	if (ibv_post_recv(id->qp, &rwr, &bad))
		fail("ibv_post_recv");
	return mr;
}

int main(int argc, char **argv)
{
	struct rdma_conn_param cp = {
	    .responder_resources = 1, .initiator_depth = 1, .retry_count = 7, .rnr_retry_count = 7};
	struct rdma_event_channel *ch;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id, *cid;
	struct sockaddr_ib src, dst;
	union ibv_gid gid, peer;
	const char *server = NULL;
	char gs[INET6_ADDRSTRLEN];
	bool serve = false;
	uint16_t port = 7471;
	size_t size = 4096;
	struct ibv_mr *mr;
	char *buf;
	int c;

	while ((c = getopt(argc, argv, "sc:p:z:")) != -1) {
		switch (c) {
		case 's':
			serve = true;
			break;
		case 'c':
			server = optarg;
			break;
		case 'p':
			port = (uint16_t)atoi(optarg);
			break;
		case 'z':
			size = (size_t)atol(optarg);
			break;
		default:
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (serve == !!server || !size)
		return 2;
	buf = calloc(2, size);
	own_gid(&gid);
	printf("gid %s\n", inet_ntop(AF_INET6, gid.raw, gs, sizeof(gs)));
	ch = rdma_create_event_channel();
	if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
		fail("rdma_create_id");
	ib_addr(&src, &gid, serve ? port : 0);
	if (serve) {
		if (rdma_bind_addr(id, (struct sockaddr *)&src) || rdma_listen(id, 4))
			fail("bind/listen");
		ev = expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
		cid = ev->id;
		rdma_ack_cm_event(ev);
		mr = setup_qp(cid, buf, size);
		if (rdma_accept(cid, &cp))
			fail("rdma_accept");
		rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ESTABLISHED));
		exchange(cid, mr, buf, size, 2, 1);
		rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED));
		printf("ok\n");
		return 0;
	}
	if (inet_pton(AF_INET6, server, peer.raw) != 1)
		return 2;
	ib_addr(&dst, &peer, port);
	if (rdma_resolve_addr(id, (struct sockaddr *)&src, (struct sockaddr *)&dst, 2000))
		fail("rdma_resolve_addr");
	rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
	if (rdma_resolve_route(id, 2000))
		fail("rdma_resolve_route");
	rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	if (!id->route.path_rec || !id->route.path_rec->dlid)
		fail("no path");
	printf("path dlid %u slid %u sl %u mtu %u\n", be16toh(id->route.path_rec->dlid),
	       be16toh(id->route.path_rec->slid), id->route.path_rec->sl, id->route.path_rec->mtu);
	mr = setup_qp(id, buf, size);
	if (rdma_connect(id, &cp))
		fail("rdma_connect");
	rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_ESTABLISHED));
	exchange(id, mr, buf, size, 1, 2);
	if (rdma_disconnect(id))
		fail("rdma_disconnect");
	rdma_ack_cm_event(expect(ch, RDMA_CM_EVENT_DISCONNECTED));
	printf("ok\n");
	return 0;
}
