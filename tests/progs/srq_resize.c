/*
 * SRQ resize under traffic (ibv_modify_srq with IBV_SRQ_MAX_WR, issue 17
 * item 3): a sender in another process (or on another host) streams SENDs
 * to an RC QP on an SRQ while the receiver grows and shrinks the SRQ.
 *
 *   srq_resize [options]          server: the receiver, with the SRQ
 *   srq_resize [options] HOST     client: the sender
 *
 * The server posts receive WQEs into the SRQ, one slot of its buffer
 * each, up to its current max_wr or the next size when that is smaller,
 * refills as messages arrive, and every EVERY messages resizes the SRQ
 * through a cycle of sizes (16 to 1024 and back) with WQEs outstanding:
 * a size at least the WQEs it posted and has not seen complete must
 * succeed and ibv_query_srq must report it rounded up to a power of two;
 * a smaller one (WQEs posted for the size before) may be EINVAL, and then
 * the size must not change. Message k has length 1 + (k * 97) % SLOT and the
 * bytes of a pattern seeded by k; one QP on the SRQ takes its WQEs in
 * posting order, so message k must complete WQE k: wr_id, byte_len and
 * every byte are checked, and each message arrives exactly once.
 *
 * Output: "server received N messages in order, every byte checked,
 * R resizes (G grows, S shrinks, E EINVAL)" / "client sent N messages",
 * then "ok" or "fail: REASON". Exit 0 when everything holds, 1 otherwise.
 */
#include "hostpair.h"

#define SLOT 4096u
#define NSLOT 1024u /* the largest size of the cycle */
#define DEPTH 32u

struct opts {
	struct hp_opts hp;
	const char *host;
	uint32_t count, every;
};

static const uint32_t cycle[] = {32, 64, 20, 128, 256, 512, 1024, 300, 64, 16, 700, 40};

static void usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s [options] [HOST]\n"
		"  without HOST: server (the SRQ); with HOST: client (the sender)\n"
		"  -p PORT   TCP port of the rendezvous (default 18700)\n"
		"  -d DEV    RDMA device (default: the first)\n"
		"  -g INDEX  local GID index (default: by the TCP connection's address)\n"
		"  -n COUNT  messages (default 3000)\n"
		"  -e EVERY  messages between resizes (server, default 50)\n"
		"  -T SECS   bound of the whole run (default 120)\n",
		argv0);
	exit(2);
}

static uint32_t msg_len(uint32_t k)
{
	return 1 + (k * 97u) % SLOT;
}

static void fill(uint8_t *p, uint32_t n, uint32_t k)
{
	uint32_t x = k * 2654435761u + 7;

	for (uint32_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p[i] = (uint8_t)x;
	}
}

static uint32_t pow2_up(uint32_t v)
{
	uint32_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

struct res {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	int gid_index;
	union ibv_gid gid;
};

static void post_recv(struct res *r, uint32_t k)
{
	struct ibv_sge sg = {.addr = (uintptr_t)r->buf + (size_t)(k % NSLOT) * SLOT,
			     .length = SLOT,
			     .lkey = r->mr->lkey};
	struct ibv_recv_wr wr, *bad;
	int err;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = k;
	wr.sg_list = &sg;
	wr.num_sge = 1;
	err = ibv_post_srq_recv(r->srq, &wr, &bad);
	if (err)
		hp_fail("ibv_post_srq_recv %u: %s", k, strerror(err));
}

static uint32_t srq_size(struct res *r)
{
	struct ibv_srq_attr a;

	if (ibv_query_srq(r->srq, &a))
		hp_fail("ibv_query_srq");
	return a.max_wr;
}

static int run_server(struct res *r, const struct opts *o, int64_t end)
{
	uint32_t posted = 0, got = 0, size = srq_size(r), ci = 0;
	uint32_t grows = 0, shrinks = 0, einval = 0;
	struct ibv_wc wc;

	while (got < o->count) {
		/* filled up to the size, or the next size when smaller, so the
		 * next resize never finds more WQEs than it asks for */
		uint32_t next = cycle[ci % (sizeof(cycle) / sizeof(cycle[0]))];
		uint32_t level = next < size ? next : size;

		while (posted < o->count && posted - got < level)
			post_recv(r, posted++);
		if (!hp_poll_until(r->cq, &wc, end, 0))
			hp_fail("message %u did not arrive before the deadline", got);
		if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV)
			hp_fail("message %u: %s opcode %d", got, hp_wc_status_name(wc.status),
				wc.opcode);
		if (wc.wr_id != got)
			hp_fail("message %u completed WQE %llu: out of order, lost or twice", got,
				(unsigned long long)wc.wr_id);
		if (wc.byte_len != msg_len(got))
			hp_fail("message %u: byte_len %u, expected %u", got, wc.byte_len,
				msg_len(got));
		{
			uint8_t want[SLOT];

			fill(want, msg_len(got), got);
			if (memcmp(r->buf + (size_t)(got % NSLOT) * SLOT, want, msg_len(got)))
				hp_fail("message %u: its bytes differ", got);
		}
		got++;
		if (got % o->every == 0 && got < o->count) {
			struct ibv_srq_attr a = {.max_wr = cycle[ci++ % (sizeof(cycle) / sizeof(cycle[0]))]};
			uint32_t out = posted - got; /* at least what is outstanding */
			int err = ibv_modify_srq(r->srq, &a, IBV_SRQ_MAX_WR);
			uint32_t now = srq_size(r);

			/* more posted than asked for: the sender may have
			 * taken enough meanwhile, or not */
			if (err && (err != EINVAL || a.max_wr >= out))
				hp_fail("ibv_modify_srq max_wr %u with %u outstanding: %s", a.max_wr,
					out, strerror(err));
			if (err && now != size)
				hp_fail("a refused resize changed the size %u to %u", size, now);
			if (!err && now != pow2_up(a.max_wr))
				hp_fail("resized to %u, ibv_query_srq says %u", a.max_wr, now);
			if (err)
				einval++;
			else if (now > size)
				grows++;
			else if (now < size)
				shrinks++;
			size = now;
		}
	}
	printf("server received %u messages in order, every byte checked, %u resizes (%u grows, "
	       "%u shrinks, %u EINVAL)\n",
	       got, grows + shrinks, grows, shrinks, einval);
	return 0;
}

static int run_client(struct res *r, const struct opts *o, int64_t end)
{
	uint32_t posted = 0, done = 0;
	struct ibv_wc wc;

	while (done < o->count) {
		while (posted < o->count && posted - done < DEPTH) {
			uint8_t *p = r->buf + (size_t)(posted % DEPTH) * SLOT;
			struct ibv_sge sg = {.addr = (uintptr_t)p, .length = msg_len(posted),
					     .lkey = r->mr->lkey};
			struct ibv_send_wr wr, *bad;

			fill(p, msg_len(posted), posted);
			memset(&wr, 0, sizeof(wr));
			wr.wr_id = posted;
			wr.sg_list = &sg;
			wr.num_sge = 1;
			wr.opcode = IBV_WR_SEND;
			wr.send_flags = IBV_SEND_SIGNALED;
			if (ibv_post_send(r->qp, &wr, &bad))
				hp_fail("ibv_post_send %u: %s", posted, strerror(errno));
			posted++;
		}
		if (!hp_poll_until(r->cq, &wc, end, 0))
			hp_fail("send %u not complete before the deadline", done);
		if (wc.status != IBV_WC_SUCCESS || wc.wr_id != done)
			hp_fail("send %u: %s (wr_id %llu)", done, hp_wc_status_name(wc.status),
				(unsigned long long)wc.wr_id);
		done++;
	}
	printf("client sent %u messages\n", done);
	return 0;
}

int main(int argc, char **argv)
{
	struct hp_info me, peer;
	struct hp_path path;
	struct opts o;
	struct res r;
	int c, sock, lsock;
	int64_t end;

	memset(&o, 0, sizeof(o));
	hp_opts_init(&o.hp, "18700", 120);
	o.count = 3000;
	o.every = 50;
	while ((c = getopt(argc, argv, "p:d:g:n:e:T:h")) != -1) {
		if (hp_opt(&o.hp, c, optarg))
			continue;
		switch (c) {
		case 'n':
			o.count = (uint32_t)atoi(optarg);
			break;
		case 'e':
			o.every = (uint32_t)atoi(optarg);
			break;
		default:
			usage(argv[0]);
		}
	}
	if (optind < argc)
		o.host = argv[optind++];
	if (optind != argc || !o.count || !o.every || o.hp.secs <= 0)
		usage(argv[0]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	end = hp_now_us() + (int64_t)o.hp.secs * 1000000;

	memset(&r, 0, sizeof(r));
	r.ctx = hp_open(o.hp.dev);
	sock = hp_rendezvous(o.host, o.hp.port, o.hp.secs, &lsock);
	r.gid_index = hp_local_gid(r.ctx, o.hp.gid_index, sock, &r.gid);
	r.pd = ibv_alloc_pd(r.ctx);
	r.cq = ibv_create_cq(r.ctx, 2048, NULL, NULL, 0);
	r.buf = aligned_alloc(4096, (size_t)NSLOT * SLOT);
	if (!r.pd || !r.cq || !r.buf)
		hp_fail("alloc pd/cq/buffer: %s", strerror(errno));
	memset(r.buf, 0, (size_t)NSLOT * SLOT);
	r.mr = ibv_reg_mr(r.pd, r.buf, (size_t)NSLOT * SLOT, IBV_ACCESS_LOCAL_WRITE);
	if (!r.mr)
		hp_fail("ibv_reg_mr: %s", strerror(errno));
	if (o.host) {
		r.qp = hp_create_qp(r.pd, r.cq, IBV_QPT_RC, DEPTH, 1, 1);
	} else {
		struct ibv_device_attr da;
		struct ibv_srq_init_attr si;
		struct ibv_qp_init_attr ia;

		if (ibv_query_device(r.ctx, &da))
			hp_fail("ibv_query_device");
		if (!(da.device_cap_flags & IBV_DEVICE_SRQ_RESIZE))
			hp_fail("IBV_DEVICE_SRQ_RESIZE is not advertised");
		memset(&si, 0, sizeof(si));
		si.attr.max_wr = 16;
		si.attr.max_sge = 1;
		r.srq = ibv_create_srq(r.pd, &si);
		if (!r.srq)
			hp_fail("ibv_create_srq: %s", strerror(errno));
		memset(&ia, 0, sizeof(ia));
		ia.send_cq = r.cq;
		ia.recv_cq = r.cq;
		ia.srq = r.srq;
		ia.qp_type = IBV_QPT_RC;
		ia.cap.max_send_wr = 1;
		ia.cap.max_send_sge = 1;
		r.qp = ibv_create_qp(r.pd, &ia);
		if (!r.qp)
			hp_fail("ibv_create_qp: %s", strerror(errno));
	}
	hp_info_self(&me, r.qp, &r.gid);
	hp_exchange(sock, &me, &peer, o.hp.secs);
	hp_path_peer(&path, r.gid_index, &me, &peer, IBV_MTU_1024);
	path.timeout = 14;
	path.retry_cnt = 7;
	path.rnr_retry = 7; /* an empty SRQ for an instant is an RNR NAK, retried */
	path.min_rnr_timer = 1;
	path.access = IBV_ACCESS_LOCAL_WRITE;
	if (hp_qp_modify(r.qp, &path, o.host ? IBV_QPS_RTS : IBV_QPS_RTR))
		hp_fail("modify QP: %s", strerror(errno));
	hp_sync(sock, o.hp.secs);
	if (o.host)
		run_client(&r, &o, end);
	else
		run_server(&r, &o, end);
	hp_sync(sock, o.hp.secs);
	printf("ok\n");
	return 0;
}
