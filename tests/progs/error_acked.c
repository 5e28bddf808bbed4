/*
 * A QP moved to ERROR first takes what already reached its host: a SEND
 * whose ACK came before the program asked for ERROR completes with
 * success, not IBV_WC_WR_FLUSH_ERR, as an HCA processes packets when they
 * come (ibv_modify_qp(3) to ERROR flushes the WQEs still outstanding).
 *
 *   error_acked [options]        server (a receive posted, holds its QP)
 *   error_acked [options] HOST   client
 *
 * Both connect an RC QP (local ACK timeout 20, about 4 s: no
 * retransmission within the test's steps) and sync over TCP. The client
 * then waits for -w FILE, posts one signaled 64-byte SEND, creates -P FILE
 * 300 ms later, waits for -e FILE, moves its QP to ERROR and reads the
 * SEND's completion. The test orders the rest with the daemons (hosts/
 * engine.sh): the server's stopped before the SEND leaves, the client's
 * stopped, datagrams to the client's host then the server's daemon
 * continued (its ACK waits in the client's host behind them), the modify
 * asked, the client's daemon continued.
 *
 * Output: "ready" once connected, then "status=NAME" of the SEND; exit 0
 * when it is IBV_WC_SUCCESS, 3 for another status, 4 when none came, 1 on
 * setup failures. The server exits when the client closes the connection.
 */
#include <sys/stat.h>

#include "hostpair.h"

static void wait_file(const char *path)
{
	struct stat st;
	int64_t end = hp_now_us() + 60 * 1000000ll;

	while (stat(path, &st)) {
		if (hp_now_us() > end)
			hp_fail("%s did not appear within 60 s", path);
		hp_sleep_ms(5);
	}
}

static void make_file(const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f)
		hp_fail("cannot create %s", path);
	fclose(f);
}

int main(int argc, char **argv)
{
	struct hp_opts hp;
	const char *host = NULL, *gofile = NULL, *postedfile = NULL, *errfile = NULL;
	struct ibv_context *ctx;
	struct hp_rc rc;
	struct ibv_qp_attr qa;
	struct hp_info me, peer;
	struct hp_path path;
	struct ibv_wc wc;
	union ibv_gid gid;
	static uint8_t buf[4096];
	int sock, lsock = -1, gid_index, err, c;

	setvbuf(stdout, NULL, _IOLBF, 0);
	hp_opts_init(&hp, "18710", 0);
	while ((c = getopt(argc, argv, "p:d:g:w:P:e:")) != -1) {
		if (hp_opt(&hp, c, optarg))
			continue;
		if (c == 'w')
			gofile = optarg;
		else if (c == 'P')
			postedfile = optarg;
		else if (c == 'e')
			errfile = optarg;
		else
			hp_fail("usage: %s [-p PORT] [-d DEV] [-g GIDX] [-w FILE -P FILE -e FILE] "
				"[HOST]",
				argv[0]);
	}
	if (optind < argc)
		host = argv[optind++];
	if (optind != argc || (host && (!gofile || !postedfile || !errfile)))
		hp_fail("the client needs -w, -P and -e");

	ctx = hp_open(hp.dev);
	sock = hp_rendezvous(host, hp.port, 30, &lsock);
	gid_index = hp_local_gid(ctx, hp.gid_index, sock, &gid);
	hp_rc_open(&rc, ctx, buf, sizeof(buf));
	hp_info_self(&me, rc.qp, &gid);
	hp_exchange(sock, &me, &peer, 30);
	hp_path_peer(&path, gid_index, &me, &peer, IBV_MTU_1024);
	path.timeout = 20;
	path.retry_cnt = 7;
	path.rnr_retry = 7;
	path.min_rnr_timer = 1;
	path.max_rd_atomic = 1;
	path.max_dest_rd_atomic = 1;
	err = hp_qp_modify(rc.qp, &path, IBV_QPS_RTS);
	if (err)
		hp_fail("ibv_modify_qp to RTS: %s", strerror(err));
	if (!host)
		hp_rc_recv(&rc);
	hp_sync(sock, 30);
	printf("ready qpn=0x%06x peer_qpn=0x%06x\n", rc.qp->qp_num, peer.qpn);

	if (!host) {
		struct pollfd pf = {.fd = sock, .events = POLLIN};

		poll(&pf, 1, 60000);
		if (hp_poll_until(rc.cq, &wc, hp_now_us(), 0))
			printf("server: received %s\n", hp_wc_status_name(wc.status));
		printf("server done\n");
	} else {
		struct ibv_sge sg = {.addr = (uintptr_t)buf, .length = 64, .lkey = rc.mr->lkey};
		struct ibv_send_wr wr = {.wr_id = 7,
					 .sg_list = &sg,
					 .num_sge = 1,
					 .opcode = IBV_WR_SEND,
					 .send_flags = IBV_SEND_SIGNALED},
				   *bad;

		wait_file(gofile);
		if (ibv_post_send(rc.qp, &wr, &bad))
			hp_fail("ibv_post_send: %s", strerror(errno));
		hp_sleep_ms(300);
		make_file(postedfile);
		wait_file(errfile);
		memset(&qa, 0, sizeof(qa));
		qa.qp_state = IBV_QPS_ERR;
		err = ibv_modify_qp(rc.qp, &qa, IBV_QP_STATE);
		if (err)
			hp_fail("ibv_modify_qp to ERROR: %s", strerror(err));
		if (!hp_poll_until(rc.cq, &wc, hp_now_us() + 5000000, 1000)) {
			printf("status=none\n");
			return 4;
		}
		printf("status=%s wr_id=%llu\n", hp_wc_status_name(wc.status),
		       (unsigned long long)wc.wr_id);
		if (wc.status != IBV_WC_SUCCESS || wc.wr_id != 7)
			return 3;
		printf("ok\n");
	}
	close(sock);
	if (lsock >= 0)
		close(lsock);
	hp_rc_close(&rc);
	ibv_close_device(ctx);
	return 0;
}
