/*
 * Device memory reached over RC by another process or host (issue 17):
 *
 *   dm_remote [options]          server: a DM MR of LEN bytes
 *   dm_remote [options] HOST     client: RDMA READ and WRITE into it
 *
 * The server allocates device memory (ibv_alloc_dm), fills its first half
 * through ibv_memcpy_to_dm with a pattern and registers it zero based
 * (ibv_reg_dm_mr with IBV_ACCESS_ZERO_BASED): the client's remote
 * addresses are offsets. The client READs the first half and checks the
 * pattern, WRITEs another pattern to the second half and reports; the
 * server reads the memory back with ibv_memcpy_from_dm (whole 4-byte
 * words, as mlx5 and we require) and checks the second half.
 *
 * Output: "server dm_len=N" / "client read=N wrote=N", then "ok" or
 * "fail: REASON". Exit 0 when everything holds, 3 when data differ, 1
 * otherwise.
 */
#include "hostpair.h"

#include <getopt.h>

struct opts {
	struct hp_opts hp;
	const char *host;
	uint32_t len;
};

static uint8_t pat(uint32_t i, uint32_t seed) { return (uint8_t)((i * 2654435761u + seed) >> 13); }

static void parse(int argc, char **argv, struct opts *o)
{
	int c;

	memset(o, 0, sizeof(*o));
	hp_opts_init(&o->hp, "18700", 60);
	o->len = 65536;
	while ((c = getopt(argc, argv, "p:d:g:T:l:")) != -1) {
		if (hp_opt(&o->hp, c, optarg))
			continue;
		if (c == 'l') {
			o->len = (uint32_t)strtoul(optarg, NULL, 0);
			continue;
		}
		fprintf(stderr, "usage: %s [-p PORT] [-d DEV] [-g GID] [-T SECS] [-l LEN] [HOST]\n",
			argv[0]);
		exit(2);
	}
	if (optind < argc)
		o->host = argv[optind];
	if (o->len < 2 || o->len & 1)
		hp_fail("LEN must be even and at least 2");
}

/* One RDMA op of len bytes between buf and the peer's offset off. */
static void rdma(struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_mr *mr, void *buf, uint32_t len,
		 enum ibv_wr_opcode op, const struct hp_info *peer, uint64_t off)
{
	struct ibv_sge sg = {(uintptr_t)buf, len, mr->lkey};
	struct ibv_send_wr wr, *bad;
	struct ibv_wc wc;

	memset(&wr, 0, sizeof(wr));
	wr.sg_list = &sg;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = peer->addr + off;
	wr.wr.rdma.rkey = peer->rkey;
	if (ibv_post_send(qp, &wr, &bad))
		hp_fail("ibv_post_send: %s", strerror(errno));
	if (!hp_poll_until(cq, &wc, hp_now_us() + 10000000, 0))
		hp_fail("no completion");
	if (wc.status != IBV_WC_SUCCESS)
		hp_fail("completion status %s", hp_wc_status_name(wc.status));
}

int main(int argc, char **argv)
{
	struct ibv_device_attr_ex dx;
	struct ibv_alloc_dm_attr da;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	struct ibv_dm *dm = NULL;
	struct hp_info me, peer;
	struct hp_path path;
	union ibv_gid gid;
	struct opts o;
	uint8_t *buf;
	uint32_t half, i, bad = 0;
	int sock, lsock, gidx, rc = 0;
	uint64_t verdict;

	setvbuf(stdout, NULL, _IOLBF, 0);
	parse(argc, argv, &o);
	half = o.len / 2;
	ctx = hp_open(o.hp.dev);
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	buf = aligned_alloc(4096, ((size_t)o.len + 4095) & ~(size_t)4095);
	if (!pd || !cq || !buf)
		hp_fail("resources");
	memset(buf, 0, ((size_t)o.len + 4095) & ~(size_t)4095);
	sock = hp_rendezvous(o.host, o.hp.port, o.hp.secs, &lsock);
	gidx = hp_local_gid(ctx, o.hp.gid_index, sock, &gid);
	qp = hp_create_qp(pd, cq, IBV_QPT_RC, 4, 4, 1);
	memset(&me, 0, sizeof(me));
	if (o.host) {
		mr = ibv_reg_mr(pd, buf, o.len, IBV_ACCESS_LOCAL_WRITE);
		if (!mr)
			hp_fail("ibv_reg_mr: %s", strerror(errno));
	} else {
		if (ibv_query_device_ex(ctx, NULL, &dx))
			hp_fail("ibv_query_device_ex");
		if (dx.max_dm_size < o.len)
			hp_fail("max_dm_size %llu < %u", (unsigned long long)dx.max_dm_size, o.len);
		memset(&da, 0, sizeof(da));
		/* the copy verbs take whole 4-byte words (mlx5's rule, ours) */
		da.length = (o.len + 3) & ~3u;
		dm = ibv_alloc_dm(ctx, &da);
		if (!dm)
			hp_fail("ibv_alloc_dm: %s", strerror(errno));
		for (i = 0; i < half; i++)
			buf[i] = pat(i, 1);
		if (ibv_memcpy_to_dm(dm, 0, buf, (half + 3) & ~3u))
			hp_fail("ibv_memcpy_to_dm");
		mr = ibv_reg_dm_mr(pd, dm, 0, o.len,
				   IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE |
				       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
		if (!mr)
			hp_fail("ibv_reg_dm_mr: %s", strerror(errno));
		me.rkey = mr->rkey;
		me.addr = 0; /* zero based */
		me.len = o.len;
		printf("server dm_len=%u\n", o.len);
	}
	me.qpn = qp->qp_num;
	me.psn = hp_random_psn();
	memcpy(me.gid, gid.raw, 16);
	hp_exchange(sock, &me, &peer, o.hp.secs);
	hp_path_peer(&path, gidx, &me, &peer, IBV_MTU_1024);
	path.timeout = 14;
	path.retry_cnt = 7;
	path.rnr_retry = 7;
	path.min_rnr_timer = 12;
	path.max_rd_atomic = 1;
	path.max_dest_rd_atomic = 1;
	path.access = o.host ? 0 : IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
	if (hp_qp_modify(qp, &path, IBV_QPS_RTS))
		hp_fail("ibv_modify_qp to RTS");
	hp_sync(sock, o.hp.secs);

	if (o.host) {
		if (peer.len != o.len)
			hp_fail("the server's DM is %llu bytes", (unsigned long long)peer.len);
		rdma(qp, cq, mr, buf, half, IBV_WR_RDMA_READ, &peer, 0);
		for (i = 0; i < half; i++)
			bad += buf[i] != pat(i, 1);
		for (i = 0; i < half; i++)
			buf[half + i] = pat(i, 2);
		rdma(qp, cq, mr, buf + half, half, IBV_WR_RDMA_WRITE, &peer, half);
		printf("client read=%u wrote=%u bad=%u\n", half, half, bad);
		rc = bad ? 3 : 0;
		verdict = htobe64((uint64_t)rc);
		if (hp_io(sock, &verdict, sizeof(verdict), 1, o.hp.secs))
			hp_fail("server went away");
	} else {
		if (hp_io(sock, &verdict, sizeof(verdict), 0, o.hp.secs))
			hp_fail("client went away");
		if (ibv_memcpy_from_dm(buf, dm, 0, (o.len + 3) & ~3u))
			hp_fail("ibv_memcpy_from_dm");
		for (i = 0; i < half; i++)
			bad += buf[half + i] != pat(i, 2);
		printf("server checked=%u bad=%u client_verdict=%llu\n", half, bad,
		       (unsigned long long)be64toh(verdict));
		rc = bad || verdict ? 3 : 0;
	}
	hp_sync(sock, o.hp.secs);
	ibv_destroy_qp(qp);
	ibv_dereg_mr(mr);
	if (dm && ibv_free_dm(dm))
		hp_fail("ibv_free_dm");
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	printf(rc ? "fail: data differ\n" : "ok\n");
	return rc;
}
