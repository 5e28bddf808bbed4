/*
 * Connect / transfer / disconnect cycles through the RDMA CM in one
 * process (tests/consumers/rdmacm.sh): a listener, and in each cycle a
 * client id and the id the listener accepts, each with a QP made by
 * rdma_create_qp (CQs and PD from the library), one SEND checked byte for
 * byte, a disconnect started by the client in even cycles and by the
 * server in odd ones, then everything destroyed. The daemon's resource
 * counts (what `softofed status` prints) are read after the first cycle
 * and after the last: any growth is a failure (a connection may sit in
 * TIMEWAIT for a while: the last counts are retried for SETTLE seconds).
 *
 *   cm_cycles [-a ADDR] [-p PORT] [-n CYCLES] [-s SIZE] [-T SECS]
 *
 * Output: "cycle N ok" every tenth cycle, "counts first: ...", "counts
 * last: ...", then "ok" or "fail: REASON". Exit 0 when all holds, 1 not.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <netdb.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hostpair.h"
#include "sof_client.h"
#include "sof_proto.h"

#define WAIT_MS 10000
#define SETTLE_MS 10000

static const char *addr_str = "127.0.0.1";
static const char *port_str = "19990";
static int cycles = 100;
static size_t size = 4096;

/* milliseconds of CLOCK_MONOTONIC */
static uint64_t now_ms(void) { return (uint64_t)hp_now_us() / 1000; }

/* The next event of chan, which must be want (for id, when id is set). */
static struct rdma_cm_event *expect(struct rdma_event_channel *chan, enum rdma_cm_event_type want,
				    const char *what)
{
	struct pollfd pfd = {.fd = chan->fd, .events = POLLIN};
	struct rdma_cm_event *ev;
	int n;

	do
		n = poll(&pfd, 1, WAIT_MS);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		hp_fail("%s: no %s within %d ms", what, rdma_event_str(want), WAIT_MS);
	if (rdma_get_cm_event(chan, &ev))
		hp_fail("%s: rdma_get_cm_event: %s", what, strerror(errno));
	if (ev->event != want)
		hp_fail("%s: got %s (status %d), wanted %s", what, rdma_event_str(ev->event),
			ev->status, rdma_event_str(want));
	return ev;
}

static void ack(struct rdma_cm_event *ev)
{
	if (rdma_ack_cm_event(ev))
		hp_fail("rdma_ack_cm_event: %s", strerror(errno));
}

struct side {
	struct rdma_cm_id *id;
	struct ibv_mr *mr;
	uint8_t *buf;
};

static void make_qp(struct side *s, const char *who)
{
	struct ibv_qp_init_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.cap.max_send_wr = 4;
	attr.cap.max_recv_wr = 4;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;
	attr.qp_type = IBV_QPT_RC;
	attr.sq_sig_all = 1;
	if (rdma_create_qp(s->id, NULL, &attr))
		hp_fail("%s: rdma_create_qp: %s", who, strerror(errno));
	if (!s->id->send_cq || !s->id->recv_cq)
		hp_fail("%s: rdma_create_qp made no CQs", who);
	s->buf = calloc(1, size);
	if (!s->buf)
		hp_fail("out of memory");
	s->mr = ibv_reg_mr(s->id->pd, s->buf, size, IBV_ACCESS_LOCAL_WRITE);
	if (!s->mr)
		hp_fail("%s: ibv_reg_mr: %s", who, strerror(errno));
}

static void post_recv(struct side *s)
{
	struct ibv_sge sge = {
	    .addr = (uintptr_t)s->buf, .length = (uint32_t)size, .lkey = s->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = 1, .sg_list = &sge, .num_sge = 1}, *bad;

	if (ibv_post_recv(s->id->qp, &wr, &bad))
		hp_fail("ibv_post_recv");
}

static void post_send(struct side *s)
{
	struct ibv_sge sge = {
	    .addr = (uintptr_t)s->buf, .length = (uint32_t)size, .lkey = s->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = 2, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND},
			   *bad;

	if (ibv_post_send(s->id->qp, &wr, &bad))
		hp_fail("ibv_post_send");
}

static void poll_one(struct ibv_cq *cq, const char *what)
{
	uint64_t end = now_ms() + WAIT_MS;
	struct ibv_wc wc;
	int n;

	while ((n = ibv_poll_cq(cq, 1, &wc)) == 0) {
		if (now_ms() > end)
			hp_fail("%s: no completion within %d ms", what, WAIT_MS);
		usleep(50);
	}
	if (n < 0)
		hp_fail("%s: ibv_poll_cq failed", what);
	if (wc.status != IBV_WC_SUCCESS)
		hp_fail("%s: completion status %s", what, ibv_wc_status_str(wc.status));
}

static void teardown(struct side *s)
{
	rdma_destroy_qp(s->id);
	if (ibv_dereg_mr(s->mr))
		hp_fail("ibv_dereg_mr");
	free(s->buf);
	if (rdma_destroy_id(s->id))
		hp_fail("rdma_destroy_id: %s", strerror(errno));
	memset(s, 0, sizeof(*s));
}

static void one_cycle(int n, struct rdma_event_channel *lch, struct rdma_event_channel *cch,
		      struct sockaddr *dst)
{
	struct side cli = {0}, srv = {0};
	struct rdma_conn_param param;
	struct rdma_cm_event *ev;
	struct side *first, *second;
	struct rdma_event_channel *first_ch, *second_ch;

	if (rdma_create_id(cch, &cli.id, NULL, RDMA_PS_TCP))
		hp_fail("rdma_create_id: %s", strerror(errno));
	if (rdma_resolve_addr(cli.id, NULL, dst, 2000))
		hp_fail("rdma_resolve_addr: %s", strerror(errno));
	ack(expect(cch, RDMA_CM_EVENT_ADDR_RESOLVED, "client"));
	if (rdma_resolve_route(cli.id, 2000))
		hp_fail("rdma_resolve_route: %s", strerror(errno));
	ack(expect(cch, RDMA_CM_EVENT_ROUTE_RESOLVED, "client"));
	if (!cli.id->verbs || !cli.id->pd || !cli.id->route.path_rec)
		hp_fail("client: no device, PD or path after route resolution");
	make_qp(&cli, "client");
	post_recv(&cli);
	memset(&param, 0, sizeof(param));
	param.responder_resources = 1;
	param.initiator_depth = 1;
	param.retry_count = 7;
	param.rnr_retry_count = 7;
	param.private_data = &n;
	param.private_data_len = sizeof(n);
	if (rdma_connect(cli.id, &param))
		hp_fail("rdma_connect: %s", strerror(errno));

	ev = expect(lch, RDMA_CM_EVENT_CONNECT_REQUEST, "server");
	srv.id = ev->id;
	if (ev->param.conn.private_data_len < sizeof(n) ||
	    memcmp(ev->param.conn.private_data, &n, sizeof(n)))
		hp_fail("server: the request's private data is not the client's");
	ack(ev);
	make_qp(&srv, "server");
	post_recv(&srv);
	if (rdma_accept(srv.id, NULL))
		hp_fail("rdma_accept: %s", strerror(errno));
	ack(expect(cch, RDMA_CM_EVENT_ESTABLISHED, "client"));
	ack(expect(lch, RDMA_CM_EVENT_ESTABLISHED, "server"));

	/* one SEND each way, checked */
	for (size_t i = 0; i < size; i++)
		cli.buf[i] = (uint8_t)(i * 7 + (size_t)n);
	post_send(&cli);
	poll_one(cli.id->send_cq, "client send");
	poll_one(srv.id->recv_cq, "server receive");
	for (size_t i = 0; i < size; i++)
		if (srv.buf[i] != (uint8_t)(i * 7 + (size_t)n))
			hp_fail("cycle %d: byte %zu received wrong", n, i);
	post_send(&srv);
	poll_one(srv.id->send_cq, "server send");
	poll_one(cli.id->recv_cq, "client receive");

	if (n % 2 == 0) {
		first = &cli, first_ch = cch, second = &srv, second_ch = lch;
	} else {
		first = &srv, first_ch = lch, second = &cli, second_ch = cch;
	}
	if (rdma_disconnect(first->id))
		hp_fail("rdma_disconnect: %s", strerror(errno));
	ack(expect(second_ch, RDMA_CM_EVENT_DISCONNECTED, "peer of the disconnect"));
	if (rdma_disconnect(second->id))
		hp_fail("rdma_disconnect (answering): %s", strerror(errno));
	ack(expect(first_ch, RDMA_CM_EVENT_DISCONNECTED, "side that disconnected"));
	teardown(&cli);
	teardown(&srv);
}

struct counts {
	uint32_t v[9];
};

static const char *const count_names[9] = {
    "contexts", "pds", "mrs", "cqs", "srqs", "qps", "cm_channels", "cm_ids", "mcast_groups"};

static void get_counts(struct counts *c, uint32_t *timewait)
{
	struct sof_status_rep st;
	int fd, ret;

	fd = sof_client_connect();
	if (fd < 0)
		hp_fail("cannot reach the daemon: %s", strerror(-fd));
	ret = sof_client_rpc(fd, SOF_OP_STATUS, NULL, 0, NULL, 0, &st, sizeof(st), NULL, NULL);
	close(fd);
	if (ret)
		hp_fail("status: %s", strerror(-ret));
	c->v[0] = st.contexts;
	c->v[1] = st.pds;
	c->v[2] = st.mrs;
	c->v[3] = st.cqs;
	c->v[4] = st.srqs;
	c->v[5] = st.qps;
	c->v[6] = st.cm_channels;
	c->v[7] = st.cm_ids;
	c->v[8] = st.mcast_groups;
	*timewait = st.cm_timewait;
}

static void print_counts(const char *label, const struct counts *c, uint32_t timewait)
{
	printf("counts %s:", label);
	for (int i = 0; i < 9; i++)
		printf(" %s %u", count_names[i], c->v[i]);
	printf(" cm_timewait %u\n", timewait);
}

static int grown(const struct counts *a, const struct counts *b)
{
	for (int i = 0; i < 9; i++)
		if (b->v[i] > a->v[i])
			return i + 1;
	return 0;
}

int main(int argc, char **argv)
{
	struct rdma_event_channel *lch, *cch;
	struct addrinfo hints, *ai;
	struct rdma_cm_id *listen_id;
	struct counts first, last;
	uint32_t tw_first, tw_last;
	uint64_t end;
	int c, secs = 300, g;

	while ((c = getopt(argc, argv, "a:p:n:s:T:")) != -1) {
		switch (c) {
		case 'a':
			addr_str = optarg;
			break;
		case 'p':
			port_str = optarg;
			break;
		case 'n':
			cycles = atoi(optarg);
			break;
		case 's':
			size = (size_t)strtoul(optarg, NULL, 0);
			break;
		case 'T':
			secs = atoi(optarg);
			break;
		default:
			fprintf(stderr,
				"usage: %s [-a ADDR] [-p PORT] [-n CYCLES] [-s SIZE] [-T SECS]\n",
				argv[0]);
			return 2;
		}
	}
	if (cycles < 2 || size < sizeof(int))
		hp_fail("need at least 2 cycles and %zu bytes", sizeof(int));
	alarm((unsigned int)secs);

	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = AI_NUMERICHOST;
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(addr_str, port_str, &hints, &ai))
		hp_fail("bad address %s port %s", addr_str, port_str);

	lch = rdma_create_event_channel();
	cch = rdma_create_event_channel();
	if (!lch || !cch)
		hp_fail("rdma_create_event_channel: %s", strerror(errno));
	if (rdma_create_id(lch, &listen_id, NULL, RDMA_PS_TCP))
		hp_fail("rdma_create_id (listener): %s", strerror(errno));
	if (rdma_bind_addr(listen_id, ai->ai_addr))
		hp_fail("rdma_bind_addr: %s", strerror(errno));
	if (rdma_listen(listen_id, 16))
		hp_fail("rdma_listen: %s", strerror(errno));
	if (rdma_get_src_port(listen_id) != ((struct sockaddr_in *)ai->ai_addr)->sin_port)
		hp_fail("rdma_get_src_port of the listener is not the bound port");

	for (int n = 1; n <= cycles; n++) {
		one_cycle(n, lch, cch, ai->ai_addr);
		if (n == 1) {
			get_counts(&first, &tw_first);
			print_counts("first", &first, tw_first);
		}
		if (n % 10 == 0) {
			printf("cycle %d ok\n", n);
			fflush(stdout);
		}
	}
	end = now_ms() + SETTLE_MS;
	for (;;) {
		get_counts(&last, &tw_last);
		g = grown(&first, &last);
		if (!g || now_ms() > end)
			break;
		usleep(200000);
	}
	print_counts("last", &last, tw_last);
	if (g)
		hp_fail("%s grew from %u to %u over %d cycles", count_names[g - 1], first.v[g - 1],
			last.v[g - 1], cycles);

	if (rdma_destroy_id(listen_id))
		hp_fail("rdma_destroy_id (listener): %s", strerror(errno));
	rdma_destroy_event_channel(lch);
	rdma_destroy_event_channel(cch);
	freeaddrinfo(ai);
	printf("ok\n");
	return 0;
}
