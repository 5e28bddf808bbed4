/*
 * The RC transport timer (IBA 9.7.6.1.3) and retry counter (9.7.6.1.4),
 * measured from a verbs program: a SEND that is never acknowledged must
 * complete with IBV_WC_RETRY_EXC_ERR after about (retry_cnt + 1) local ACK
 * timeouts of 4.096 us * 2^timeout each, and the QP's next WQE must then be
 * flushed (IBV_WC_WR_FLUSH_ERR, even unsignaled: IBA 10.8.3.3).
 *
 *   rc_timeout [options]          server
 *   rc_timeout [options] HOST     client (the requester that is measured)
 *
 * Both connect an RC QP and sync over TCP. Then the peer disappears:
 *   - default: the server destroys its QP and exits right after the sync
 *     (the client waits for the TCP connection to close);
 *   - with -w FILE on the client: the client waits until FILE exists (the
 *     test cuts the link with tc netem 100 % loss, then creates FILE); the
 *     server keeps its QP, with a receive posted, for -H SECS or until the
 *     client closes the TCP connection.
 * The client then posts one signaled SEND and one unsignaled SEND and
 * measures the time until the first completes.
 *
 * Output: "ready" once connected, then
 *   "status=IBV_WC_RETRY_EXC_ERR elapsed_ms=N expected_ms=M timeout=T
 *    retry_cnt=R flush=IBV_WC_WR_FLUSH_ERR"
 * Exit 0 when the first SEND failed with IBV_WC_RETRY_EXC_ERR and the
 * second was flushed; 3 for another status, 4 when no completion came
 * within the bound (-T, default 10 x expected, at least 30 s), 5 when the
 * second WQE was not flushed within 5 s, 1 on setup failures.
 */
#include <sys/stat.h>

#include "hostpair.h"

struct opts {
	struct hp_opts hp;
	const char *host, *gofile;
	int hold;
	uint8_t timeout, retry_cnt;
};

static void usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s [options] [HOST]\n"
		"  without HOST: server; with HOST: client, whose SEND is measured\n"
		"  -p PORT     TCP port of the rendezvous (default 18700)\n"
		"  -d DEV      RDMA device (default: the first)\n"
		"  -g INDEX    local GID index (default: the GID of the TCP connection's\n"
		"              local address, else 0)\n"
		"  -t TIMEOUT  local ACK timeout exponent, 1..31 (client, default 14)\n"
		"  -r RETRY    retry_cnt, 0..7 (client, default 3)\n"
		"  -w FILE     client: post once FILE exists (default: once the server\n"
		"              closed the TCP connection)\n"
		"  -H SECS     server: keep the QP for SECS seconds after the sync\n"
		"              (default 0: destroy it and exit at once)\n"
		"  -T SECS     client: wait at most SECS for the completion\n"
		"              (default max(30, 10 x expected))\n",
		argv0);
	exit(2);
}

static void parse(int argc, char **argv, struct opts *o)
{
	int c;

	memset(o, 0, sizeof(*o));
	hp_opts_init(&o->hp, "18700", 0);
	o->timeout = 14;
	o->retry_cnt = 3;
	while ((c = getopt(argc, argv, "p:d:g:t:r:w:H:T:h")) != -1) {
		if (hp_opt(&o->hp, c, optarg))
			continue;
		switch (c) {
		case 't':
			o->timeout = (uint8_t)atoi(optarg);
			break;
		case 'r':
			o->retry_cnt = (uint8_t)atoi(optarg);
			break;
		case 'w':
			o->gofile = optarg;
			break;
		case 'H':
			o->hold = atoi(optarg);
			break;
		default:
			usage(argv[0]);
		}
	}
	if (optind < argc)
		o->host = argv[optind++];
	if (optind != argc || o->timeout < 1 || o->timeout > 31 || o->retry_cnt > 7 ||
	    o->hold < 0 || o->hp.secs < 0)
		usage(argv[0]);
}

int main(int argc, char **argv)
{
	struct opts o;
	struct ibv_context *ctx;
	struct hp_rc rc;
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr qa;
	struct hp_info me, peer;
	struct hp_path path;
	struct ibv_wc wc;
	union ibv_gid gid;
	static uint8_t buf[4096];
	int sock, lsock = -1, gid_index, err, ret;
	double expected_ms;
	int64_t t0, t1, bound_us;
	char c, gs[INET6_ADDRSTRLEN];

	setvbuf(stdout, NULL, _IOLBF, 0);
	parse(argc, argv, &o);
	/* IBA 9.7.6.1.3: 4.096 us * 2^timeout per try, retry_cnt retries */
	expected_ms = (o.retry_cnt + 1) * 4.096e-3 * (double)(1ull << o.timeout);
	bound_us = o.hp.secs ? (int64_t)o.hp.secs * 1000000 : (int64_t)(expected_ms * 10000);
	if (bound_us < 30000000)
		bound_us = 30000000;

	ctx = hp_open(o.hp.dev);
	sock = hp_rendezvous(o.host, o.hp.port, o.host ? 30 : 60, &lsock);
	gid_index = hp_local_gid(ctx, o.hp.gid_index, sock, &gid);
	hp_rc_open(&rc, ctx, buf, sizeof(buf));
	hp_info_self(&me, rc.qp, &gid);
	hp_exchange(sock, &me, &peer, 30);
	hp_path_peer(&path, gid_index, &me, &peer, IBV_MTU_1024);
	path.timeout = o.timeout;
	path.retry_cnt = o.retry_cnt;
	path.rnr_retry = 0; /* an RNR NAK would end at once, not at the timer */
	path.min_rnr_timer = 1;
	path.max_rd_atomic = 1;
	path.max_dest_rd_atomic = 1;
	path.access = 0;
	err = hp_qp_modify(rc.qp, &path, IBV_QPS_RTS);
	if (err)
		hp_fail("ibv_modify_qp to RTS: %s", strerror(err));
	/* a receive, so that a SEND over a link that is not cut succeeds (and
	 * the test says so) instead of ending in RNR */
	if (!o.host)
		hp_rc_recv(&rc);
	hp_sync(sock, 30);
	printf("ready qpn=0x%06x gid_index=%d gid=%s peer_qpn=0x%06x\n", rc.qp->qp_num, gid_index,
	       hp_gid_str(&gid, gs, sizeof(gs)), peer.qpn);

	if (!o.host) {
		/* server: go away at once, or hold the QP until the client is
		 * done (it closes the connection) or -H runs out */
		if (o.hold) {
			struct pollfd pf = {.fd = sock, .events = POLLIN};

			poll(&pf, 1, o.hold * 1000);
			if (hp_poll_until(rc.cq, &wc, hp_now_us(), 1000))
				printf("server: a completion arrived: %s (the link was not cut?)\n",
				       hp_wc_status_name(wc.status));
		}
		printf("server done\n");
		hp_rc_close(&rc);
		close(sock);
		close(lsock);
		ibv_close_device(ctx);
		return 0;
	}

	/* client: wait for the go */
	if (o.gofile) {
		struct stat st;
		int64_t end = hp_now_us() + 120 * 1000000ll;

		while (stat(o.gofile, &st)) {
			if (hp_now_us() > end)
				hp_fail("%s did not appear within 120 s", o.gofile);
			hp_sleep_ms(5);
		}
	} else {
		struct pollfd pf = {.fd = sock, .events = POLLIN};

		if (poll(&pf, 1, 60000) <= 0 || recv(sock, &c, 1, 0) != 0)
			hp_fail("the server did not close the connection within 60 s");
	}

	{
		struct ibv_sge sg = {.addr = (uintptr_t)buf, .length = 64, .lkey = rc.mr->lkey};
		struct ibv_send_wr wr[2], *bad;

		memset(wr, 0, sizeof(wr));
		wr[0].wr_id = 1;
		wr[0].sg_list = &sg;
		wr[0].num_sge = 1;
		wr[0].opcode = IBV_WR_SEND;
		wr[0].send_flags = IBV_SEND_SIGNALED;
		wr[0].next = &wr[1];
		wr[1] = wr[0];
		wr[1].wr_id = 2;
		wr[1].send_flags = 0;
		wr[1].next = NULL;
		t0 = hp_now_us();
		if (ibv_post_send(rc.qp, wr, &bad))
			hp_fail("ibv_post_send: %s", strerror(errno));
	}
	if (!hp_poll_until(rc.cq, &wc, t0 + bound_us, 1000)) {
		printf("status=none elapsed_ms=%lld expected_ms=%.0f timeout=%u retry_cnt=%u\n",
		       (long long)((hp_now_us() - t0) / 1000), expected_ms, o.timeout, o.retry_cnt);
		printf("fail: no completion within %lld s\n", (long long)(bound_us / 1000000));
		return 4;
	}
	t1 = hp_now_us();
	ret = wc.status == IBV_WC_RETRY_EXC_ERR && wc.wr_id == 1 ? 0 : 3;
	{
		struct ibv_wc wc2;
		const char *flush = "none";

		if (hp_poll_until(rc.cq, &wc2, hp_now_us() + 5000000, 1000)) {
			flush = hp_wc_status_name(wc2.status);
			if (wc2.wr_id != 2)
				flush = "wrong-wr_id";
		}
		printf("status=%s elapsed_ms=%lld expected_ms=%.0f timeout=%u retry_cnt=%u "
		       "flush=%s\n",
		       hp_wc_status_name(wc.status), (long long)((t1 - t0) / 1000), expected_ms,
		       o.timeout, o.retry_cnt, flush);
		if (!ret && strcmp(flush, "IBV_WC_WR_FLUSH_ERR"))
			ret = 5;
	}
	memset(&qa, 0, sizeof(qa));
	if (!ibv_query_qp(rc.qp, &qa, IBV_QP_STATE, &ia))
		printf("qp_state=%s\n", qa.qp_state == IBV_QPS_ERR ? "ERR" : "not-ERR");
	if (ret == 3)
		printf("fail: the SEND completed with %s, expected IBV_WC_RETRY_EXC_ERR\n",
		       hp_wc_status_name(wc.status));
	else if (ret == 5)
		printf("fail: the second WQE was not flushed\n");
	else
		printf("ok\n");
	hp_rc_close(&rc);
	ibv_close_device(ctx);
	close(sock);
	return ret;
}
