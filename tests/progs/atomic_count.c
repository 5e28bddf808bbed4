/*
 * An atomic counter over RC, to prove that no fetch-and-add is executed
 * twice (IBA 9.4.5 / 9.7.5.1.3: a repeated atomic returns the saved result
 * and is never applied again), e.g. under packet loss and duplication
 * (tests/hosts/netem.sh).
 *
 *   atomic_count [options]          server: exposes one 8-byte counter
 *   atomic_count [options] HOST     client: COUNT fetch-and-adds of +1
 *
 * The server registers the counter (REMOTE_ATOMIC | REMOTE_READ), starting
 * at BASE (by default just below 2^32, so the count crosses into the upper
 * word). The client keeps DEPTH fetch-and-adds outstanding until COUNT
 * were done, checks that every returned original value is distinct and in
 * [BASE, BASE + COUNT), then reads the counter back with an RDMA READ and
 * requires exactly BASE + COUNT. The server checks its local value too.
 *
 * Output: "server counter=V expected=E" / "client count=N depth=D
 * distinct=N final=V expected=E elapsed_ms=T", then "ok" or "fail: REASON".
 * Exit 0 when everything holds, 3 when the counts are wrong, 1 otherwise.
 */
#include "hostpair.h"

#define MAX_DEPTH 16

struct opts {
	struct hp_opts hp;
	const char *host;
	enum ibv_mtu mtu;
	uint64_t count, base;
	unsigned int depth;
	uint8_t timeout, retry_cnt;
};

static void usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s [options] [HOST]\n"
		"  without HOST: server, exposes an 8-byte counter; with HOST: client\n"
		"  -p PORT     TCP port of the rendezvous (default 18600)\n"
		"  -d DEV      RDMA device (default: the first)\n"
		"  -g INDEX    local GID index (default: the GID of the TCP connection's\n"
		"              local address, else 0)\n"
		"  -n COUNT    fetch-and-adds (client, default 10000)\n"
		"  -q DEPTH    outstanding atomics (client, default 8, at most %d)\n"
		"  -b BASE     the counter's start value (server, default 2^32 - 100)\n"
		"  -m MTU      path MTU 256..4096 (default 1024)\n"
		"  -t TIMEOUT  local ACK timeout exponent (default 14)\n"
		"  -r RETRY    retry_cnt (default 7)\n"
		"  -T SECS     bound of the whole run (default 120)\n",
		argv0, MAX_DEPTH);
	exit(2);
}

static void parse(int argc, char **argv, struct opts *o)
{
	int c;

	memset(o, 0, sizeof(*o));
	hp_opts_init(&o->hp, "18600", 120);
	o->mtu = IBV_MTU_1024;
	o->count = 10000;
	o->base = (1ull << 32) - 100;
	o->depth = 8;
	o->timeout = 14;
	o->retry_cnt = 7;
	while ((c = getopt(argc, argv, "p:d:g:n:q:b:m:t:r:T:h")) != -1) {
		if (hp_opt(&o->hp, c, optarg))
			continue;
		switch (c) {
		case 'n':
			o->count = strtoull(optarg, NULL, 0);
			break;
		case 'q':
			o->depth = (unsigned int)atoi(optarg);
			break;
		case 'b':
			o->base = strtoull(optarg, NULL, 0);
			break;
		case 'm':
			o->mtu = hp_parse_mtu(optarg);
			break;
		case 't':
			o->timeout = (uint8_t)atoi(optarg);
			break;
		case 'r':
			o->retry_cnt = (uint8_t)atoi(optarg);
			break;
		default:
			usage(argv[0]);
		}
	}
	if (optind < argc)
		o->host = argv[optind++];
	if (optind != argc || !o->mtu || !o->count || o->count > (1u << 24) || !o->depth ||
	    o->depth > MAX_DEPTH || o->hp.secs <= 0)
		usage(argv[0]);
}

struct res {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint64_t *buf; /* server: [0] the counter; client: results + [count] */
	size_t len;
	int gid_index;
	union ibv_gid gid;
	struct ibv_device_attr dattr;
};

static void setup(struct res *r, const struct opts *o, int sock)
{
	unsigned int access;

	if (ibv_query_device(r->ctx, &r->dattr))
		hp_fail("ibv_query_device");
	r->gid_index = hp_local_gid(r->ctx, o->hp.gid_index, sock, &r->gid);
	r->pd = ibv_alloc_pd(r->ctx);
	r->cq = ibv_create_cq(r->ctx, 2 * MAX_DEPTH + 4, NULL, NULL, 0);
	if (!r->pd || !r->cq)
		hp_fail("alloc pd/cq: %s", strerror(errno));
	/* client: one result slot per fetch-and-add, one for the READ */
	r->len = o->host ? (size_t)(o->count + 1) * 8 : 4096;
	r->buf = aligned_alloc(4096, (r->len + 4095) & ~(size_t)4095);
	if (!r->buf)
		hp_fail("out of memory");
	memset(r->buf, 0, r->len);
	access = IBV_ACCESS_LOCAL_WRITE;
	if (!o->host) {
		r->buf[0] = o->base;
		access |= IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_REMOTE_READ;
	}
	r->mr = ibv_reg_mr(r->pd, r->buf, r->len, (int)access);
	if (!r->mr)
		hp_fail("ibv_reg_mr: %s", strerror(errno));
	r->qp = hp_create_qp(r->pd, r->cq, IBV_QPT_RC, MAX_DEPTH + 2, 1, 1);
}

static void post_one(struct res *r, const struct hp_info *peer, uint64_t id, enum ibv_wr_opcode op)
{
	struct ibv_sge sg = {.addr = (uintptr_t)&r->buf[id], .length = 8, .lkey = r->mr->lkey};
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = id;
	wr.sg_list = &sg;
	wr.num_sge = 1;
	wr.opcode = op;
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = peer->addr;
		wr.wr.atomic.rkey = peer->rkey;
		wr.wr.atomic.compare_add = 1;
	} else {
		wr.wr.rdma.remote_addr = peer->addr;
		wr.wr.rdma.rkey = peer->rkey;
	}
	if (ibv_post_send(r->qp, &wr, &bad))
		hp_fail("ibv_post_send: %s", strerror(errno));
}

/* poll_one: the next completion within the run's deadline; fails on error */
static void poll_one(struct res *r, struct ibv_wc *wc, int64_t end, uint64_t done)
{
	if (!hp_poll_until(r->cq, wc, end, 0))
		hp_fail("no completion before the deadline (%llu done)", (unsigned long long)done);
	if (wc->status != IBV_WC_SUCCESS)
		hp_fail("completion %llu: %s (%s) after %llu done", (unsigned long long)wc->wr_id,
			hp_wc_status_name(wc->status), ibv_wc_status_str(wc->status),
			(unsigned long long)done);
}

static int run_client(struct res *r, const struct opts *o, const struct hp_info *peer, int64_t end)
{
	uint64_t posted = 0, done = 0, i, base = peer->len, final, distinct = 0;
	unsigned int depth = o->depth;
	uint8_t *seen;
	struct ibv_wc wc;
	int64_t t0 = hp_now_us();
	int bad = 0;

	/* the responder grants peer->arg resources (IBA 9.4.4) */
	if (depth > peer->arg)
		depth = peer->arg;
	if (depth > (unsigned int)r->dattr.max_qp_init_rd_atom)
		depth = (unsigned int)r->dattr.max_qp_init_rd_atom;
	if (!depth)
		depth = 1;
	while (done < o->count) {
		while (posted < o->count && posted - done < depth)
			post_one(r, peer, posted++, IBV_WR_ATOMIC_FETCH_AND_ADD);
		poll_one(r, &wc, end, done);
		if (wc.opcode != IBV_WC_FETCH_ADD)
			hp_fail("completion opcode %d, expected IBV_WC_FETCH_ADD", wc.opcode);
		done++;
	}
	seen = calloc(o->count, 1);
	if (!seen)
		hp_fail("out of memory");
	for (i = 0; i < o->count; i++) {
		uint64_t v = r->buf[i];

		if (v < base || v - base >= o->count) {
			if (bad++ < 5)
				printf("# fetch-and-add %llu returned %llu, outside [%llu, %llu)\n",
				       (unsigned long long)i, (unsigned long long)v,
				       (unsigned long long)base,
				       (unsigned long long)(base + o->count));
			continue;
		}
		if (seen[v - base]) {
			if (bad++ < 5)
				printf("# fetch-and-add %llu returned %llu twice\n",
				       (unsigned long long)i, (unsigned long long)v);
			continue;
		}
		seen[v - base] = 1;
		distinct++;
	}
	free(seen);
	/* read the counter back */
	r->buf[o->count] = 0;
	post_one(r, peer, o->count, IBV_WR_RDMA_READ);
	poll_one(r, &wc, end, done);
	final = r->buf[o->count];
	printf("client count=%llu depth=%u distinct=%llu final=%llu expected=%llu "
	       "elapsed_ms=%lld\n",
	       (unsigned long long)o->count, depth, (unsigned long long)distinct,
	       (unsigned long long) final, (unsigned long long)(base + o->count),
	       (long long)((hp_now_us() - t0) / 1000));
	if (bad || distinct != o->count) {
		printf("fail: %d returned values out of range or repeated\n", bad);
		return 3;
	}
	if (final != base + o->count) {
		printf("fail: the counter is %llu, expected %llu (%lld fetch-and-adds applied "
		       "more than once or lost)\n",
		       (unsigned long long) final, (unsigned long long)(base + o->count),
		       (long long)(final - base - o->count));
		return 3;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct res r;
	struct hp_info me, peer;
	struct hp_path path;
	int sock, lsock = -1, rc = 0, err;
	int64_t end;
	char gs[INET6_ADDRSTRLEN];
	uint64_t verdict[2];

	setvbuf(stdout, NULL, _IOLBF, 0);
	parse(argc, argv, &o);
	end = hp_now_us() + (int64_t)o.hp.secs * 1000000;
	memset(&r, 0, sizeof(r));
	r.ctx = hp_open(o.hp.dev);
	sock = hp_rendezvous(o.host, o.hp.port, o.hp.secs, &lsock);
	setup(&r, &o, sock);

	hp_info_self(&me, r.qp, &r.gid);
	me.rkey = r.mr->rkey;
	me.addr = (uintptr_t)r.buf;
	if (o.host) {
		me.len = o.count;
	} else {
		me.len = o.base;
		/* responder resources: what the device allows, up to MAX_DEPTH */
		me.arg = (uint32_t)r.dattr.max_qp_rd_atom;
		if (me.arg > MAX_DEPTH)
			me.arg = MAX_DEPTH;
	}
	hp_exchange(sock, &me, &peer, o.hp.secs);

	hp_path_peer(&path, r.gid_index, &me, &peer, o.mtu);
	path.timeout = o.timeout;
	path.retry_cnt = o.retry_cnt;
	path.rnr_retry = 7;
	path.min_rnr_timer = 12;
	path.max_rd_atomic = MAX_DEPTH;
	if (path.max_rd_atomic > r.dattr.max_qp_init_rd_atom)
		path.max_rd_atomic = (uint8_t)r.dattr.max_qp_init_rd_atom;
	/* never more outstanding than the responder accepts (IBA 9.4.4) */
	if (o.host && path.max_rd_atomic > peer.arg)
		path.max_rd_atomic = (uint8_t)peer.arg;
	path.max_dest_rd_atomic = o.host ? 1 : (uint8_t)me.arg;
	path.access = o.host ? 0 : IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_REMOTE_READ;
	err = hp_qp_modify(r.qp, &path, IBV_QPS_RTS);
	if (err)
		hp_fail("ibv_modify_qp to RTS: %s", strerror(err));
	printf("%s qpn=0x%06x gid_index=%d gid=%s peer_qpn=0x%06x\n", o.host ? "client" : "server",
	       r.qp->qp_num, r.gid_index, hp_gid_str(&r.gid, gs, sizeof(gs)), peer.qpn);
	hp_sync(sock, o.hp.secs);

	if (o.host) {
		rc = run_client(&r, &o, &peer, end);
		/* tell the server the count and our verdict */
		verdict[0] = htobe64(o.count);
		verdict[1] = htobe64((uint64_t)rc);
		if (hp_io(sock, verdict, sizeof(verdict), 1, o.hp.secs))
			hp_fail("server went away before the verdict");
	} else {
		int64_t left = (end - hp_now_us()) / 1000000;
		uint64_t count, expect, v;

		if (hp_io(sock, verdict, sizeof(verdict), 0, left > 1 ? (int)left : 1))
			hp_fail("client went away before its verdict");
		count = be64toh(verdict[0]);
		expect = o.base + count;
		v = __atomic_load_n(&r.buf[0], __ATOMIC_SEQ_CST);
		printf("server counter=%llu expected=%llu client_verdict=%llu\n",
		       (unsigned long long)v, (unsigned long long)expect,
		       (unsigned long long)be64toh(verdict[1]));
		if (v != expect) {
			printf("fail: counter %llu, expected %llu\n", (unsigned long long)v,
			       (unsigned long long)expect);
			rc = 3;
		} else if (be64toh(verdict[1])) {
			printf("fail: the client found wrong results\n");
			rc = 3;
		}
	}
	/* both sides done before the QPs go away */
	hp_sync(sock, o.hp.secs);
	if (!rc)
		printf("ok\n");
	ibv_destroy_qp(r.qp);
	ibv_dereg_mr(r.mr);
	ibv_destroy_cq(r.cq);
	ibv_dealloc_pd(r.pd);
	ibv_close_device(r.ctx);
	free(r.buf);
	close(sock);
	if (lsock >= 0)
		close(lsock);
	return rc;
}
