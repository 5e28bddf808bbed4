/*
 * A target QP for crafted packets (tests/hosts/badpackets.sh): creates one
 * RC, UC or UD QP in a chosen state, connected (RC/UC) to a peer address
 * that sends nothing itself, so that packets made by roce_inject from that
 * address reach a QP in a known state with a known PSN, rkey and Q_Key.
 *
 *   qp_hold [options]
 *
 * Memory: one 128 KiB region; the first 64 KiB (filled with 0x5a) is the
 * target of RDMA WRITE/READ/atomics (rkey, addr), the second 64 KiB holds
 * 16 posted receives of 4 KiB each (receives are posted from INIT on).
 *
 * Output, one line each (flushed):
 *   "qpn=0x... type=RC state=RTS rkey=0x... addr=0x... len=65536
 *    rq_psn=N qkey=0x... gid_index=N"             once the QP is ready
 *   "wc status=NAME opcode=N byte_len=N psn_next=N" for each completion
 *   "exit completions=N target_changed=0|1"        on SIGTERM/SIGINT or
 *                                                  after -T SECS
 * Exit 0 then (1 on setup failures).
 */
#include <signal.h>

#include "hostpair.h"

#define TARGET_LEN 65536u
#define RECV_LEN 4096u
#define NRECV 16u

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s [options]\n"
		"  -d DEV      RDMA device (default: the first)\n"
		"  -g INDEX    local GID index (default 0)\n"
		"  -l ADDR     local address: use the GID of ADDR instead of -g\n"
		"  -t TYPE     rc, uc or ud (default rc)\n"
		"  -s STATE    init, rtr or rts (default rts)\n"
		"  -a ADDR     the peer's IPv4/IPv6 address (RC/UC, required from rtr on)\n"
		"  -q QPN      the peer's QP number (default 0x000abc)\n"
		"  -r PSN      expected receive PSN (default 1000)\n"
		"  -k QKEY     Q_Key of a UD QP (default 0x11111111)\n"
		"  -m MTU      path MTU 256..4096 (default 1024)\n"
		"  -T SECS     exit after SECS seconds (default 300)\n"
		"  -B          poll the CQ without a pause (default: 2 ms between empty polls)\n",
		argv0);
	exit(2);
}

int main(int argc, char **argv)
{
	const char *dev = NULL, *peer = NULL, *local = NULL, *type = "rc", *state = "rts";
	enum ibv_qp_state target;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	enum ibv_qp_type qpt;
	struct hp_path path;
	struct sigaction sa;
	uint8_t *buf;
	unsigned long completions = 0, i;
	int c, err, secs = 300, changed = 0, busy = 0;
	int64_t end;

	setvbuf(stdout, NULL, _IOLBF, 0);
	memset(&path, 0, sizeof(path));
	path.port = 1;
	path.mtu = IBV_MTU_1024;
	path.dqpn = 0xabc;
	path.rq_psn = 1000;
	path.sq_psn = 2000;
	path.qkey = 0x11111111;
	path.timeout = 14;
	path.retry_cnt = 7;
	path.rnr_retry = 7;
	path.min_rnr_timer = 12;
	path.max_rd_atomic = 1;
	path.max_dest_rd_atomic = 4;
	path.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	while ((c = getopt(argc, argv, "d:g:l:t:s:a:q:r:k:m:T:Bh")) != -1) {
		switch (c) {
		case 'd':
			dev = optarg;
			break;
		case 'g':
			path.sgid_index = atoi(optarg);
			break;
		case 'l':
			local = optarg;
			break;
		case 't':
			type = optarg;
			break;
		case 's':
			state = optarg;
			break;
		case 'a':
			peer = optarg;
			break;
		case 'q':
			path.dqpn = (uint32_t)strtoul(optarg, NULL, 0) & 0xffffff;
			break;
		case 'r':
			path.rq_psn = (uint32_t)strtoul(optarg, NULL, 0) & 0xffffff;
			break;
		case 'k':
			path.qkey = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'm':
			path.mtu = hp_parse_mtu(optarg);
			break;
		case 'T':
			secs = atoi(optarg);
			break;
		case 'B':
			busy = 1;
			break;
		default:
			usage(argv[0]);
		}
	}
	if (optind != argc || !path.mtu || secs <= 0)
		usage(argv[0]);
	if (!strcmp(type, "rc"))
		qpt = IBV_QPT_RC;
	else if (!strcmp(type, "uc"))
		qpt = IBV_QPT_UC;
	else if (!strcmp(type, "ud"))
		qpt = IBV_QPT_UD;
	else
		usage(argv[0]);
	if (!strcmp(state, "init"))
		target = IBV_QPS_INIT;
	else if (!strcmp(state, "rtr"))
		target = IBV_QPS_RTR;
	else if (!strcmp(state, "rts"))
		target = IBV_QPS_RTS;
	else
		usage(argv[0]);
	if (qpt != IBV_QPT_UD && target != IBV_QPS_INIT && (!peer || hp_addr_gid(peer, &path.dgid)))
		hp_fail("-a ADDR (an IPv4 or IPv6 literal) is needed for an RC/UC QP in %s", state);

	ctx = hp_open(dev);
	if (local) {
		union ibv_gid lg;

		if (hp_addr_gid(local, &lg))
			hp_fail("-l %s is not an address", local);
		path.sgid_index = hp_gid_index(ctx, 1, &lg);
		if (path.sgid_index < 0)
			hp_fail("no GID of %s in the GID table", local);
	}
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	buf = aligned_alloc(4096, TARGET_LEN + NRECV * RECV_LEN);
	if (!pd || !cq || !buf)
		hp_fail("alloc: %s", strerror(errno));
	memset(buf, 0x5a, TARGET_LEN);
	memset(buf + TARGET_LEN, 0, NRECV * RECV_LEN);
	mr = ibv_reg_mr(pd, buf, TARGET_LEN + NRECV * RECV_LEN,
			IBV_ACCESS_LOCAL_WRITE | (int)path.access);
	if (!mr)
		hp_fail("ibv_reg_mr: %s", strerror(errno));
	qp = hp_create_qp(pd, cq, qpt, 4, NRECV, 0);
	err = hp_qp_modify(qp, &path, target);
	if (err)
		hp_fail("ibv_modify_qp to %s: %s", state, strerror(err));
	for (i = 0; i < NRECV; i++) {
		struct ibv_sge sg = {.addr = (uintptr_t)(buf + TARGET_LEN + i * RECV_LEN),
				     .length = RECV_LEN,
				     .lkey = mr->lkey};
		struct ibv_recv_wr rwr = {.wr_id = i, .sg_list = &sg, .num_sge = 1}, *bad;

		if (ibv_post_recv(qp, &rwr, &bad))
			hp_fail("ibv_post_recv: %s", strerror(errno));
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	printf("qpn=0x%06x type=%s state=%s rkey=0x%08x addr=0x%llx len=%u rq_psn=%u qkey=0x%08x "
	       "gid_index=%d\n",
	       qp->qp_num, type, state, mr->rkey, (unsigned long long)(uintptr_t)buf, TARGET_LEN,
	       path.rq_psn, path.qkey, path.sgid_index);

	end = hp_now_us() + (int64_t)secs * 1000000;
	while (!stop && hp_now_us() < end) {
		struct ibv_wc wc;
		int n = ibv_poll_cq(cq, 1, &wc);

		if (n < 0)
			hp_fail("ibv_poll_cq");
		if (n == 0) {
			if (!busy)
				hp_sleep_ms(2);
			continue;
		}
		completions++;
		if (wc.status == IBV_WC_SUCCESS && (wc.opcode & IBV_WC_RECV))
			path.rq_psn = (path.rq_psn + 1) & 0xffffff;
		printf("wc status=%s opcode=%d byte_len=%u psn_next=%u\n",
		       hp_wc_status_name(wc.status), wc.opcode, wc.byte_len, path.rq_psn);
	}
	for (i = 0; i < TARGET_LEN; i++)
		if (buf[i] != 0x5a) {
			changed = 1;
			break;
		}
	printf("exit completions=%lu target_changed=%d\n", completions, changed);
	ibv_destroy_qp(qp);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	free(buf);
	return 0;
}
