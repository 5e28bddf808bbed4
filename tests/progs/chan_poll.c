/*
 * A ping-pong whose two sides sleep on a completion channel between
 * messages (tests/hosts/chan_poll.sh): each arms its CQ
 * (ibv_req_notify_cq), drains it, and then sleeps either in poll(2) on the
 * channel's fd before ibv_get_cq_event, as rdma-core documents and
 * libfabric, rsocket users and MPI progress threads do (-m poll, the
 * default), or in a blocking ibv_get_cq_event (-m event).
 *
 *   chan_poll [options]          server: echoes each message back
 *   chan_poll [options] HOST     client: sends N messages, times each
 *
 * Every message is SIZE bytes, each a function of its number and offset,
 * checked by the side that receives it (the server the request, the
 * client the echo, which the server builds anew from the number).
 * Output: "client N messages checked median_us=M p90_us=P" then "ok";
 * a wrong byte, a lost message or a deadline fails (exit 1).
 */
#include "hostpair.h"

#define MAX_SIZE 4096u

struct res {
	struct ibv_context *ctx;
	struct ibv_comp_channel *ch;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf; /* [0, MAX_SIZE): receive, [MAX_SIZE, 2 MAX_SIZE): send */
	int use_poll;
	int armed;
};

static uint8_t pattern(uint32_t n, uint32_t off, int echo)
{
	return (uint8_t)(n * 131u + off * 7u + (echo ? 0x5au : 0x17u));
}

static void fill(uint8_t *p, uint32_t n, uint32_t size, int echo)
{
	memcpy(p, &n, sizeof(n));
	for (uint32_t i = sizeof(n); i < size; i++)
		p[i] = pattern(n, i, echo);
}

static void check(const uint8_t *p, uint32_t n, uint32_t size, uint32_t len, int echo)
{
	uint32_t got;

	if (len != size)
		hp_fail("message %u: %u bytes, expected %u", n, len, size);
	memcpy(&got, p, sizeof(got));
	if (got != n)
		hp_fail("message %u: got number %u (lost or repeated)", n, got);
	for (uint32_t i = sizeof(n); i < size; i++)
		if (p[i] != pattern(n, i, echo))
			hp_fail("message %u offset %u: 0x%02x, expected 0x%02x", n, i, p[i],
				pattern(n, i, echo));
}

static void post_recv(struct res *r)
{
	struct ibv_sge sge = {.addr = (uintptr_t)r->buf, .length = MAX_SIZE, .lkey = r->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = 1, .sg_list = &sge, .num_sge = 1}, *bad;

	int err = ibv_post_recv(r->qp, &wr, &bad);

	if (err)
		hp_fail("ibv_post_recv: %s", strerror(err));
}

static void post_send(struct res *r, uint32_t size)
{
	struct ibv_sge sge = {
	    .addr = (uintptr_t)r->buf + MAX_SIZE, .length = size, .lkey = r->mr->lkey};
	struct ibv_send_wr wr = {.wr_id = 2,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad;

	int err = ibv_post_send(r->qp, &wr, &bad);

	if (err)
		hp_fail("ibv_post_send: %s", strerror(err));
}

/* The next completion, sleeping on the channel whenever the CQ is empty:
 * arm, poll again (a completion may have come before the arming), then
 * sleep in poll(2) on the fd or in ibv_get_cq_event. */
static void next_wc(struct res *r, struct ibv_wc *wc, int64_t end)
{
	for (;;) {
		struct ibv_cq *ecq;
		void *ectx;
		int n = ibv_poll_cq(r->cq, 1, wc);

		if (n < 0)
			hp_fail("ibv_poll_cq: %d", n);
		if (n == 1) {
			if (wc->status != IBV_WC_SUCCESS)
				hp_fail("completion %llu: %s", (unsigned long long)wc->wr_id,
					hp_wc_status_name(wc->status));
			return;
		}
		if (!r->armed) {
			if (ibv_req_notify_cq(r->cq, 0))
				hp_fail("ibv_req_notify_cq: %s", strerror(errno));
			r->armed = 1;
			continue;
		}
		if (r->use_poll) {
			struct pollfd pfd = {.fd = r->ch->fd, .events = POLLIN};
			int64_t left = (end - hp_now_us()) / 1000;

			if (left <= 0)
				hp_fail("no completion before the deadline");
			n = poll(&pfd, 1, left > 1000 ? 1000 : (int)left);
			if (n < 0 && errno != EINTR)
				hp_fail("poll: %s", strerror(errno));
			if (n <= 0)
				continue;
		}
		if (ibv_get_cq_event(r->ch, &ecq, &ectx)) {
			if (r->use_poll && errno == EAGAIN)
				continue;
			hp_fail("ibv_get_cq_event: %s", strerror(errno));
		}
		if (ecq != r->cq)
			hp_fail("event for another CQ");
		ibv_ack_cq_events(ecq, 1);
		r->armed = 0;
	}
}

/* The receive completion of the next message (the send completions of our
 * own messages pass by). */
static uint32_t next_recv(struct res *r, int64_t end)
{
	struct ibv_wc wc;

	do
		next_wc(r, &wc, end);
	while (wc.opcode != IBV_WC_RECV);
	return wc.byte_len;
}

static int cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static void usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s [options] [HOST]\n"
		"  -p PORT  TCP port of the rendezvous (default 18620)\n"
		"  -d DEV   RDMA device   -g INDEX  local GID index\n"
		"  -m MODE  poll (poll(2) on the channel fd, default) or event\n"
		"  -n N     messages (default 1000)\n"
		"  -s SIZE  bytes per message, 8..%u (default 64)\n"
		"  -T SECS  bound of the whole run (default 60)\n",
		argv0, MAX_SIZE);
	exit(2);
}

int main(int argc, char **argv)
{
	struct hp_opts hp;
	struct res r;
	struct hp_info me, peer;
	struct hp_path path;
	const char *host = NULL;
	uint32_t count = 1000, size = 64;
	int64_t end, *rtt = NULL;
	int c, sock, lsock, gid_index, err;
	union ibv_gid gid;

	setvbuf(stdout, NULL, _IOLBF, 0);
	memset(&r, 0, sizeof(r));
	r.use_poll = 1;
	hp_opts_init(&hp, "18620", 60);
	while ((c = getopt(argc, argv, "p:d:g:T:m:n:s:h")) != -1) {
		if (hp_opt(&hp, c, optarg))
			continue;
		switch (c) {
		case 'm':
			if (!strcmp(optarg, "poll"))
				r.use_poll = 1;
			else if (!strcmp(optarg, "event"))
				r.use_poll = 0;
			else
				usage(argv[0]);
			break;
		case 'n':
			count = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 's':
			size = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		default:
			usage(argv[0]);
		}
	}
	if (optind < argc)
		host = argv[optind++];
	if (optind != argc || !count || size < 8 || size > MAX_SIZE || hp.secs <= 0)
		usage(argv[0]);
	end = hp_now_us() + (int64_t)hp.secs * 1000000;

	r.ctx = hp_open(hp.dev);
	sock = hp_rendezvous(host, hp.port, hp.secs, &lsock);
	gid_index = hp_local_gid(r.ctx, hp.gid_index, sock, &gid);
	r.ch = ibv_create_comp_channel(r.ctx);
	r.pd = ibv_alloc_pd(r.ctx);
	if (!r.ch || !r.pd)
		hp_fail("channel/pd: %s", strerror(errno));
	r.cq = ibv_create_cq(r.ctx, 8, NULL, r.ch, 0);
	r.buf = aligned_alloc(4096, 2 * MAX_SIZE);
	if (!r.cq || !r.buf)
		hp_fail("cq/buffer: %s", strerror(errno));
	r.mr = ibv_reg_mr(r.pd, r.buf, 2 * MAX_SIZE, IBV_ACCESS_LOCAL_WRITE);
	if (!r.mr)
		hp_fail("ibv_reg_mr: %s", strerror(errno));
	r.qp = hp_create_qp(r.pd, r.cq, IBV_QPT_RC, 4, 4, 1);

	hp_info_self(&me, r.qp, &gid);
	hp_exchange(sock, &me, &peer, hp.secs);
	hp_path_peer(&path, gid_index, &me, &peer, IBV_MTU_1024);
	path.timeout = 14;
	path.retry_cnt = 7;
	path.rnr_retry = 7;
	path.min_rnr_timer = 1;
	path.max_rd_atomic = 1;
	path.max_dest_rd_atomic = 1;
	err = hp_qp_modify(r.qp, &path, IBV_QPS_RTS);
	if (err)
		hp_fail("ibv_modify_qp to RTS: %s", strerror(err));
	post_recv(&r); /* before the sync: the peer sends after it */
	hp_sync(sock, hp.secs);

	if (host) {
		rtt = calloc(count, sizeof(*rtt));
		if (!rtt)
			hp_fail("out of memory");
	}
	for (uint32_t i = 0; i < count; i++) {
		if (host) {
			int64_t t0 = hp_now_us();

			fill(r.buf + MAX_SIZE, i, size, 0);
			post_send(&r, size);
			check(r.buf, i, size, next_recv(&r, end), 1);
			rtt[i] = hp_now_us() - t0;
			post_recv(&r);
		} else {
			uint32_t len = next_recv(&r, end);

			check(r.buf, i, size, len, 0);
			post_recv(&r);
			fill(r.buf + MAX_SIZE, i, size, 1);
			post_send(&r, size);
		}
	}
	if (host) {
		qsort(rtt, count, sizeof(*rtt), cmp64);
		printf("client %u messages checked mode=%s median_us=%lld p90_us=%lld\n", count,
		       r.use_poll ? "poll" : "event", (long long)rtt[count / 2],
		       (long long)rtt[count * 9 / 10]);
	} else {
		printf("server %u messages checked mode=%s\n", count, r.use_poll ? "poll" : "event");
	}
	/* both sides done (the last send completed) before the QPs go away */
	hp_sync(sock, hp.secs);
	printf("ok\n");
	ibv_destroy_qp(r.qp);
	ibv_dereg_mr(r.mr);
	ibv_destroy_cq(r.cq);
	ibv_destroy_comp_channel(r.ch);
	ibv_dealloc_pd(r.pd);
	ibv_close_device(r.ctx);
	free(r.buf);
	free(rtt);
	close(sock);
	if (lsock >= 0)
		close(lsock);
	return 0;
}
