/*
 * bench/qp_scale.c — issue 5's scale figure: COUNT connected RC QPs in one
 * process. It creates COUNT RC QPs (send and receive queues of 128 entries,
 * one SGE, no inline data), one CQ for every PER_CQ QPs (used as send and
 * receive CQ of each; sized PER_CQ x 256 entries), then connects them in
 * pairs on this host — QP 2i to QP 2i+1, RESET -> INIT -> RTR -> RTS, the
 * address vector naming GID index GID of port 1 — and sends one message on
 * the first and the last pair to show they carry data. It reports, as
 * "key value" lines: the time to create and to connect, the resident memory
 * (VmRSS of /proc/self/status) before and after and per QP, and, given the
 * daemon's PID, the daemon's VmRSS before, with the QPs, and after they are
 * destroyed.
 *
 * Each QP holds file descriptors (its shared-memory segments), so the
 * program raises RLIMIT_NOFILE first (the hard limit too when it may). When
 * a creation fails, it says where and why ("failed_at N: ...") and reports
 * the figures of the QPs it did create: the largest count that worked.
 *
 * Built by bench/run.sh against softofed's libibverbs; run it through
 * `softofed run`:
 *   qp_scale [-n COUNT] [-c PER_CQ] [-g GID] [-D DAEMON_PID]
 *   (defaults 10000, 100, 0, none)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define QUEUE_DEPTH 128

struct scale {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq **cqs;
	struct ibv_qp **qps;
	int ncq, nqp;
	int per_cq;
	int gid_index;
	union ibv_gid gid;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* rss_kib PID: VmRSS of PID (0: this process) in KiB, -1 when unknown */
static long rss_kib(int pid)
{
	char path[64], line[256];
	long v = -1;
	FILE *f;

	if (pid > 0)
		snprintf(path, sizeof(path), "/proc/%d/status", pid);
	else
		snprintf(path, sizeof(path), "/proc/self/status");
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &v) == 1)
			break;
	fclose(f);
	return v;
}

/* raise_nofile: soft limit up to the hard one, both higher when allowed */
static void raise_nofile(void)
{
	struct rlimit rl;
	rlim_t want = 1u << 20;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return;
	if (rl.rlim_max < want) {
		struct rlimit up = { want, want };

		/* fs.nr_open may be lower: halve until the kernel takes it */
		while (up.rlim_max > rl.rlim_max && setrlimit(RLIMIT_NOFILE, &up)) {
			up.rlim_cur /= 2;
			up.rlim_max /= 2;
		}
		if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur == rl.rlim_max)
			return;
	}
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
}

static int create_all(struct scale *s, int count)
{
	int i;

	for (i = 0; i < count; i++) {
		struct ibv_qp_init_attr a;

		if (i % s->per_cq == 0) {
			struct ibv_cq *cq = ibv_create_cq(s->ctx, s->per_cq * 2 * QUEUE_DEPTH, NULL, NULL, 0);

			if (!cq) {
				printf("failed_at %d: ibv_create_cq (CQ %d): %s\n", i, s->ncq, strerror(errno));
				return -1;
			}
			s->cqs[s->ncq++] = cq;
		}
		memset(&a, 0, sizeof(a));
		a.send_cq = s->cqs[s->ncq - 1];
		a.recv_cq = s->cqs[s->ncq - 1];
		a.qp_type = IBV_QPT_RC;
		a.cap.max_send_wr = QUEUE_DEPTH;
		a.cap.max_recv_wr = QUEUE_DEPTH;
		a.cap.max_send_sge = 1;
		a.cap.max_recv_sge = 1;
		s->qps[i] = ibv_create_qp(s->pd, &a);
		if (!s->qps[i]) {
			printf("failed_at %d: ibv_create_qp: %s\n", i, strerror(errno));
			return -1;
		}
		s->nqp = i + 1;
	}
	return 0;
}

/* connect_one QP PEER: RESET -> INIT -> RTR (to PEER on this host) -> RTS */
static int connect_one(struct scale *s, struct ibv_qp *qp, struct ibv_qp *peer)
{
	struct ibv_qp_attr a;
	int err;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.pkey_index = 0;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	err = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (err)
		return err;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = peer->qp_num;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = s->gid;
	a.ah_attr.grh.sgid_index = (uint8_t)s->gid_index;
	a.ah_attr.grh.hop_limit = 1;
	a.ah_attr.port_num = 1;
	err = ibv_modify_qp(qp, &a,
			    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (err)
		return err;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 0;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(qp, &a,
			     IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				     IBV_QP_MAX_QP_RD_ATOMIC);
}

static struct ibv_cq *cq_of(struct scale *s, int qp_index)
{
	return s->cqs[qp_index / s->per_cq];
}

/* poll_two CQ_A CQ_B: wait (at most 5 s) for the completions 1 (the SEND,
 * on CQ_A) and 2 (the receive, on CQ_B); the two may be one CQ */
static int poll_two(struct ibv_cq *cq_a, struct ibv_cq *cq_b)
{
	double end = now_s() + 5;
	struct ibv_wc wc;
	int seen = 0;

	while (seen != 3 && now_s() < end) {
		struct ibv_cq *cq = (seen & 1) ? cq_b : cq_a;
		int n = ibv_poll_cq(cq, 1, &wc);

		if (n == 0 && cq_a != cq_b)
			n = ibv_poll_cq(cq == cq_a ? cq_b : cq_a, 1, &wc);
		if (n < 0)
			return -1;
		if (n == 0)
			continue;
		if (wc.status != IBV_WC_SUCCESS) {
			printf("# completion %llu: %s\n", (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status));
			return -1;
		}
		if (wc.wr_id == 1 || wc.wr_id == 2)
			seen |= (int)wc.wr_id;
	}
	if (seen != 3)
		printf("# completions: %d of 2 within 5 s\n", (seen & 1) + (seen >> 1));
	return seen == 3 ? 0 : -1;
}

/* check_pair A: one 64-byte SEND from QP A to QP A+1, data compared */
static int check_pair(struct scale *s, int a)
{
	char buf[128];
	struct ibv_mr *mr;
	struct ibv_sge sge;
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_send_wr swr, *sbad;
	int rc = -1;

	memset(buf, 0, sizeof(buf));
	snprintf(buf, 64, "qp_scale pair %d", a);
	mr = ibv_reg_mr(s->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		return -1;
	memset(&rwr, 0, sizeof(rwr));
	sge.addr = (uintptr_t)(buf + 64);
	sge.length = 64;
	sge.lkey = mr->lkey;
	rwr.wr_id = 2;
	rwr.sg_list = &sge;
	rwr.num_sge = 1;
	if (ibv_post_recv(s->qps[a + 1], &rwr, &rbad))
		goto out;
	struct ibv_sge ssge = { (uintptr_t)buf, 64, mr->lkey };

	memset(&swr, 0, sizeof(swr));
	swr.wr_id = 1;
	swr.sg_list = &ssge;
	swr.num_sge = 1;
	swr.opcode = IBV_WR_SEND;
	swr.send_flags = IBV_SEND_SIGNALED;
	if (ibv_post_send(s->qps[a], &swr, &sbad))
		goto out;
	if (poll_two(cq_of(s, a), cq_of(s, a + 1)))
		goto out;
	rc = memcmp(buf, buf + 64, 64) ? -1 : 0;
out:
	ibv_dereg_mr(mr);
	return rc;
}

int main(int argc, char **argv)
{
	struct scale s = { .per_cq = 100 };
	struct ibv_device **list;
	int count = 10000, dpid = 0, opt, i, nconn = 0, ndev;
	long rss0, rss1, rss2, drss0 = -1, drss1 = -1, drss2 = -1;
	double t0, t1, t2, t3;
	struct rlimit rl;

	while ((opt = getopt(argc, argv, "n:c:g:D:")) != -1) {
		switch (opt) {
		case 'n':
			count = atoi(optarg);
			break;
		case 'c':
			s.per_cq = atoi(optarg);
			break;
		case 'g':
			s.gid_index = atoi(optarg);
			break;
		case 'D':
			dpid = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: qp_scale [-n COUNT] [-c PER_CQ] [-g GID] [-D DAEMON_PID]\n");
			return 2;
		}
	}
	if (count < 2 || s.per_cq < 1) {
		fprintf(stderr, "qp_scale: COUNT >= 2, PER_CQ >= 1\n");
		return 2;
	}
	count &= ~1; /* pairs */
	raise_nofile();
	getrlimit(RLIMIT_NOFILE, &rl);
	printf("nofile_limit %llu\n", (unsigned long long)rl.rlim_cur);
	s.qps = calloc((size_t)count, sizeof(*s.qps));
	s.cqs = calloc((size_t)count / (size_t)s.per_cq + 1, sizeof(*s.cqs));
	if (!s.qps || !s.cqs)
		return 1;

	list = ibv_get_device_list(&ndev);
	if (!list || ndev < 1) {
		fprintf(stderr, "qp_scale: no RDMA device\n");
		return 1;
	}
	s.ctx = ibv_open_device(list[0]);
	if (!s.ctx) {
		fprintf(stderr, "qp_scale: ibv_open_device: %s\n", strerror(errno));
		return 1;
	}
	s.pd = ibv_alloc_pd(s.ctx);
	if (!s.pd || ibv_query_gid(s.ctx, 1, s.gid_index, &s.gid)) {
		fprintf(stderr, "qp_scale: PD or GID %d: %s\n", s.gid_index, strerror(errno));
		return 1;
	}
	printf("device %s\n", ibv_get_device_name(list[0]));
	if (dpid)
		drss0 = rss_kib(dpid);
	rss0 = rss_kib(0);

	t0 = now_s();
	create_all(&s, count);
	t1 = now_s();
	if (s.nqp & 1) { /* an odd QP out has no peer */
		ibv_destroy_qp(s.qps[--s.nqp]);
	}
	rss1 = rss_kib(0);
	for (i = 0; i + 1 < s.nqp; i += 2) {
		int err = connect_one(&s, s.qps[i], s.qps[i + 1]);

		if (!err)
			err = connect_one(&s, s.qps[i + 1], s.qps[i]);
		if (err) {
			printf("failed_at_connect %d: ibv_modify_qp: %s\n", i, strerror(err));
			break;
		}
		nconn = i + 2;
	}
	t2 = now_s();
	rss2 = rss_kib(0);
	if (dpid)
		drss1 = rss_kib(dpid);

	printf("requested %d\n", count);
	printf("qps %d\n", s.nqp);
	printf("connected %d\n", nconn);
	printf("cqs %d\n", s.ncq);
	printf("qps_per_cq %d\n", s.per_cq);
	printf("queue_depth %d\n", QUEUE_DEPTH);
	if (s.nqp > 0) {
		printf("create_s %.3f\n", t1 - t0);
		printf("create_us_per_qp %.1f\n", (t1 - t0) * 1e6 / s.nqp);
	}
	if (nconn > 0) {
		printf("connect_s %.3f\n", t2 - t1);
		printf("connect_us_per_qp %.1f\n", (t2 - t1) * 1e6 / nconn);
	}
	printf("rss_before_kib %ld\n", rss0);
	printf("rss_created_kib %ld\n", rss1);
	printf("rss_connected_kib %ld\n", rss2);
	if (s.nqp > 0)
		printf("rss_per_qp_kib %.2f\n", (double)(rss2 - rss0) / s.nqp);
	if (dpid) {
		printf("daemon_rss_before_kib %ld\n", drss0);
		printf("daemon_rss_with_kib %ld\n", drss1);
		if (s.nqp > 0)
			printf("daemon_rss_per_qp_kib %.2f\n", (double)(drss1 - drss0) / s.nqp);
	}
	if (nconn >= 2) {
		int ok = !check_pair(&s, 0) && !check_pair(&s, nconn - 2);

		printf("data_check %s\n", ok ? "ok" : "failed");
	}

	t3 = now_s();
	for (i = 0; i < s.nqp; i++)
		ibv_destroy_qp(s.qps[i]);
	for (i = 0; i < s.ncq; i++)
		ibv_destroy_cq(s.cqs[i]);
	printf("destroy_s %.3f\n", now_s() - t3);
	if (dpid) {
		usleep(200000);
		drss2 = rss_kib(dpid);
		printf("daemon_rss_after_kib %ld\n", drss2);
	}
	ibv_dealloc_pd(s.pd);
	ibv_close_device(s.ctx);
	ibv_free_device_list(list);
	free(s.qps);
	free(s.cqs);
	return s.nqp == count && nconn == count ? 0 : 3;
}
