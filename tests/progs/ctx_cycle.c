/*
 * A process that opens the device, moves data over an RC QP to another
 * host, closes the device and does it all again, ROUNDS times, as
 * libraries do that open a context per phase (ucx_perftest's batches,
 * libfabric's probes) (tests/hosts/engine.sh: each round's QP runs in the
 * process, not only the first).
 *
 *   ctx_cycle [-p PORT] [-d DEV] [-g INDEX] [-T SECS] [-r ROUNDS] [HOST]
 *
 * Without HOST: the server (prints "listening on port P" and accepts one
 * TCP connection, kept for every round). With HOST: the client. Each
 * round: a fresh context, PD, CQ, a 64 KiB region and an RC QP, their
 * numbers exchanged over the TCP connection; the client RDMA-WRITEs the
 * round's pattern into the server's region and SENDs 8 bytes; the server's
 * receive completes and it checks every byte of the region, then both tear
 * everything down and close the device.
 *
 * Output (one line each, flushed): "round R qpn=0x...", "round R ok" on the
 * server once the region is right; "done rounds=N" (exit 0); "fail: ..."
 * (exit 1).
 */
#include "hostpair.h"

#include <stdbool.h>

#define LEN 65536u

static uint8_t pattern(unsigned round, size_t i) { return (uint8_t)(i * 7u + round * 31u + 1u); }

static void one_round(const struct hp_opts *o, int fd, bool client, unsigned round)
{
	struct hp_info me, peer;
	struct hp_path path;
	struct ibv_context *ctx = hp_open(o->dev);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	uint8_t *buf = aligned_alloc(4096, LEN + 4096);
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	struct ibv_wc wc;
	union ibv_gid gid;
	int gi, err;

	if (!pd || !cq || !buf)
		hp_fail("round %u: alloc: %s", round, strerror(errno));
	for (size_t i = 0; i < LEN; i++)
		buf[i] = client ? pattern(round, i) : 0;
	mr = ibv_reg_mr(pd, buf, LEN + 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!mr)
		hp_fail("round %u: ibv_reg_mr: %s", round, strerror(errno));
	qp = hp_create_qp(pd, cq, IBV_QPT_RC, 4, 4, 1);
	gi = hp_local_gid(ctx, o->gid_index, fd, &gid);
	hp_info_self(&me, qp, &gid);
	me.rkey = mr->rkey;
	me.addr = (uintptr_t)buf;
	hp_exchange(fd, &me, &peer, o->secs);
	printf("round %u qpn=0x%06x\n", round, qp->qp_num);
	hp_path_peer(&path, gi, &me, &peer, IBV_MTU_1024);
	path.timeout = 14;
	path.retry_cnt = 7;
	path.rnr_retry = 7;
	path.min_rnr_timer = 12;
	path.max_rd_atomic = 1;
	path.max_dest_rd_atomic = 1;
	path.access = IBV_ACCESS_REMOTE_WRITE;
	err = hp_qp_modify(qp, &path, IBV_QPS_RTS);
	if (err)
		hp_fail("round %u: ibv_modify_qp: %s", round, strerror(err));
	if (!client) {
		struct ibv_sge sg = {
		    .addr = (uintptr_t)(buf + LEN), .length = 4096, .lkey = mr->lkey};
		struct ibv_recv_wr rwr = {.wr_id = 1, .sg_list = &sg, .num_sge = 1}, *bad;

		if (ibv_post_recv(qp, &rwr, &bad))
			hp_fail("round %u: ibv_post_recv", round);
	}
	hp_sync(fd, o->secs);
	if (client) {
		struct ibv_sge ws = {.addr = (uintptr_t)buf, .length = LEN, .lkey = mr->lkey};
		struct ibv_sge ss = {.addr = (uintptr_t)buf, .length = 8, .lkey = mr->lkey};
		struct ibv_send_wr send = {
		    .wr_id = 2, .sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND};
		struct ibv_send_wr write = {.wr_id = 1,
					    .next = &send,
					    .sg_list = &ws,
					    .num_sge = 1,
					    .opcode = IBV_WR_RDMA_WRITE};
		struct ibv_send_wr *bad;

		write.wr.rdma.remote_addr = peer.addr;
		write.wr.rdma.rkey = peer.rkey;
		if (ibv_post_send(qp, &write, &bad))
			hp_fail("round %u: ibv_post_send", round);
		for (int k = 0; k < 2; k++)
			if (!hp_poll_until(cq, &wc, hp_now_us() + o->secs * 1000000LL, 0) ||
			    wc.status != IBV_WC_SUCCESS)
				hp_fail("round %u: send completion %d", round, k);
	} else {
		if (!hp_poll_until(cq, &wc, hp_now_us() + o->secs * 1000000LL, 0) ||
		    wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV)
			hp_fail("round %u: no receive completion", round);
		for (size_t i = 0; i < LEN; i++)
			if (buf[i] != pattern(round, i))
				hp_fail("round %u: byte %zu is 0x%02x, want 0x%02x", round, i,
					buf[i], pattern(round, i));
		printf("round %u ok\n", round);
	}
	hp_sync(fd, o->secs); /* both done before either destroys */
	if (ibv_destroy_qp(qp) || ibv_dereg_mr(mr) || ibv_destroy_cq(cq) || ibv_dealloc_pd(pd) ||
	    ibv_close_device(ctx))
		hp_fail("round %u: teardown: %s", round, strerror(errno));
	free(buf);
}

int main(int argc, char **argv)
{
	struct hp_opts o;
	unsigned rounds = 3;
	int c, fd, lsock;

	setvbuf(stdout, NULL, _IOLBF, 0);
	hp_opts_init(&o, "18515", 60);
	while ((c = getopt(argc, argv, "p:d:g:T:r:")) != -1) {
		if (hp_opt(&o, c, optarg))
			continue;
		if (c != 'r') {
			fprintf(stderr,
				"usage: %s [-p PORT] [-d DEV] [-g INDEX] [-T SECS] [-r ROUNDS] "
				"[HOST]\n",
				argv[0]);
			return 2;
		}
		rounds = (unsigned)atoi(optarg);
	}
	fd = hp_rendezvous(optind < argc ? argv[optind] : NULL, o.port, o.secs, &lsock);
	for (unsigned r = 1; r <= rounds; r++)
		one_round(&o, fd, optind < argc, r);
	printf("done rounds=%u\n", rounds);
	close(fd);
	if (lsock >= 0)
		close(lsock);
	return 0;
}
