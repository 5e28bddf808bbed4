/*
 * A stream of RDMA WRITEs over RC, optionally under a QP rate limit
 * (IBV_QP_RATE_LIMIT, issue 17), timed and checked:
 *
 *   rate_stream [options]          server: exposes LEN bytes
 *   rate_stream [options] HOST     client: WRITEs them in CHUNK pieces
 *
 * With -r KBPS the client sets the rate with ibv_modify_qp_rate_limit
 * once its QP is in RTS and checks that ibv_query_qp reports it. The
 * client fills its buffer with a pattern, WRITEs it all (one WQE
 * outstanding per CHUNK, all signaled), and prints the time from the
 * first post to the last completion; the server checks every byte.
 *
 * Output: "client bytes=N rate_limit=K elapsed_ms=T mbit_s=M" / "server
 * bytes=N bad=B", then "ok" or "fail: REASON". Exit 0 when the data
 * arrived intact, 3 when not, 1 otherwise.
 */
#include "hostpair.h"

#include <getopt.h>

struct opts {
	struct hp_opts hp;
	const char *host;
	uint32_t len, chunk, kbps;
};

static uint8_t pat(uint32_t i) { return (uint8_t)((i * 2246822519u) >> 11); }

static void parse(int argc, char **argv, struct opts *o)
{
	int c;

	memset(o, 0, sizeof(*o));
	hp_opts_init(&o->hp, "18740", 60);
	o->len = 4u << 20;
	o->chunk = 65536;
	while ((c = getopt(argc, argv, "p:d:g:T:l:c:r:")) != -1) {
		if (hp_opt(&o->hp, c, optarg))
			continue;
		switch (c) {
		case 'l':
			o->len = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'c':
			o->chunk = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'r':
			o->kbps = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		default:
			fprintf(stderr,
				"usage: %s [-p PORT] [-d DEV] [-g GID] [-T SECS] [-l LEN] "
				"[-c CHUNK] [-r KBPS] [HOST]\n",
				argv[0]);
			exit(2);
		}
	}
	if (optind < argc)
		o->host = argv[optind];
	if (!o->len || !o->chunk || o->len % o->chunk)
		hp_fail("LEN must be a multiple of CHUNK");
}

int main(int argc, char **argv)
{
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	struct hp_info me, peer;
	struct hp_path path;
	union ibv_gid gid;
	struct opts o;
	uint8_t *buf;
	uint32_t i, bad = 0;
	int sock, lsock, gidx, rc = 0;
	uint64_t verdict;

	setvbuf(stdout, NULL, _IOLBF, 0);
	parse(argc, argv, &o);
	ctx = hp_open(o.hp.dev);
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	buf = aligned_alloc(4096, o.len);
	if (!pd || !cq || !buf)
		hp_fail("resources");
	for (i = 0; i < o.len; i++)
		buf[i] = o.host ? pat(i) : 0;
	mr = ibv_reg_mr(pd, buf, o.len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!mr)
		hp_fail("ibv_reg_mr: %s", strerror(errno));
	sock = hp_rendezvous(o.host, o.hp.port, o.hp.secs, &lsock);
	gidx = hp_local_gid(ctx, o.hp.gid_index, sock, &gid);
	qp = hp_create_qp(pd, cq, IBV_QPT_RC, 16, 4, 1);
	hp_info_self(&me, qp, &gid);
	me.rkey = mr->rkey;
	me.addr = (uintptr_t)buf;
	me.len = o.len;
	hp_exchange(sock, &me, &peer, o.hp.secs);
	hp_path_peer(&path, gidx, &me, &peer, IBV_MTU_1024);
	path.timeout = 14;
	path.retry_cnt = 7;
	path.rnr_retry = 7;
	path.min_rnr_timer = 12;
	path.max_rd_atomic = 1;
	path.max_dest_rd_atomic = 1;
	path.access = o.host ? 0 : IBV_ACCESS_REMOTE_WRITE;
	if (hp_qp_modify(qp, &path, IBV_QPS_RTS))
		hp_fail("ibv_modify_qp to RTS");
	if (o.host && o.kbps) {
		struct ibv_qp_rate_limit_attr rl = {.rate_limit = o.kbps};
		struct ibv_qp_init_attr init;
		struct ibv_qp_attr qa;
		int err = ibv_modify_qp_rate_limit(qp, &rl);

		if (err)
			hp_fail("ibv_modify_qp_rate_limit: %s", strerror(err));
		if (ibv_query_qp(qp, &qa, IBV_QP_RATE_LIMIT, &init) || qa.rate_limit != o.kbps)
			hp_fail("ibv_query_qp reports rate_limit %u", qa.rate_limit);
	}
	hp_sync(sock, o.hp.secs);

	if (o.host) {
		int64_t t0 = hp_now_us(), end = t0 + (int64_t)o.hp.secs * 1000000, us;
		uint32_t posted = 0, done = 0, n = o.len / o.chunk;

		if (peer.len != o.len)
			hp_fail("the server exposes %llu bytes", (unsigned long long)peer.len);
		while (done < n) {
			struct ibv_wc wc;

			while (posted < n && posted - done < 8) {
				struct ibv_sge sg = {(uintptr_t)buf + (uint64_t)posted * o.chunk,
						     o.chunk, mr->lkey};
				struct ibv_send_wr wr, *bwr;

				memset(&wr, 0, sizeof(wr));
				wr.sg_list = &sg;
				wr.num_sge = 1;
				wr.opcode = IBV_WR_RDMA_WRITE;
				wr.wr.rdma.remote_addr = peer.addr + (uint64_t)posted * o.chunk;
				wr.wr.rdma.rkey = peer.rkey;
				if (ibv_post_send(qp, &wr, &bwr))
					hp_fail("ibv_post_send: %s", strerror(errno));
				posted++;
			}
			if (!hp_poll_until(cq, &wc, end, 0))
				hp_fail("no completion within %d s", o.hp.secs);
			if (wc.status != IBV_WC_SUCCESS)
				hp_fail("completion status %s", hp_wc_status_name(wc.status));
			done++;
		}
		us = hp_now_us() - t0;
		printf("client bytes=%u rate_limit=%u elapsed_ms=%lld mbit_s=%.1f\n", o.len, o.kbps,
		       (long long)(us / 1000), us ? (double)o.len * 8 / (double)us : 0.0);
		verdict = 0;
		if (hp_io(sock, &verdict, sizeof(verdict), 1, o.hp.secs))
			hp_fail("server went away");
	} else {
		if (hp_io(sock, &verdict, sizeof(verdict), 0, o.hp.secs))
			hp_fail("client went away");
		for (i = 0; i < o.len; i++)
			bad += buf[i] != pat(i);
		printf("server bytes=%u bad=%u\n", o.len, bad);
		rc = bad ? 3 : 0;
	}
	hp_sync(sock, o.hp.secs);
	ibv_destroy_qp(qp);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	printf(rc ? "fail: data differ\n" : "ok\n");
	return rc;
}
