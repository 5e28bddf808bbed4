/*
 * A continuous RC RDMA WRITE stream between two processes, for the
 * kill-in-the-middle integration test (tests/integration/kill_write.sh).
 *
 *   write_stream server COUNT          target: prints "port N", then waits
 *   write_stream client PORT COUNT     writer
 *
 * The two exchange QP number, rkey and address over a TCP connection on
 * 127.0.0.1 and then use it for nothing else: a process learns that its peer
 * died only from its completion queue. The writer sends chunks of 16 KiB
 * with RDMA WRITE WITH IMMEDIATE (imm = sequence number) into a ring of 64
 * chunks at the target; the target checks each chunk's contents when its
 * receive completes and reposts the receive, so the writer can never be
 * more than the receive depth ahead. COUNT 0 streams until an error.
 *
 * Output (one line each, flushed): "ready pid=P" once the QP is connected;
 * "done n=N" after COUNT messages (exit 0); "error status=S (text) at_ns=T
 * ok=N" when an error completion is polled (T = CLOCK_REALTIME, exit 3);
 * "fail ..." for anything else (exit 1).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CHUNK 16384u
#define NCHUNK 64u
#define RDEPTH 16
#define SDEPTH 64
#define SIGNAL_EVERY 8

struct wire {
	uint32_t qpn;
	uint32_t rkey;
	uint64_t addr;
};

static int64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void die(const char *what)
{
	printf("fail %s: %s\n", what, strerror(errno));
	fflush(stdout);
	exit(1);
}

static void chunk_fill(uint8_t *p, uint32_t seq)
{
	uint32_t x = seq * 2654435761u + 12345, i;

	for (i = 0; i < CHUNK; i += 4) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		memcpy(p + i, &x, 4);
	}
}

static int chunk_ok(const uint8_t *p, uint32_t seq)
{
	uint32_t x = seq * 2654435761u + 12345, i;

	for (i = 0; i < CHUNK; i += 4) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		if (memcmp(p + i, &x, 4))
			return 0;
	}
	return 1;
}

static void report_error(const struct ibv_wc *wc, unsigned long ok)
{
	printf("error status=%d (%s) at_ns=%lld ok=%lu\n", wc->status,
	       ibv_wc_status_str(wc->status), (long long)realtime_ns(), ok);
	fflush(stdout);
	exit(3);
}

static void full_io(int fd, void *buf, size_t len, int out)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = out ? write(fd, p, len) : read(fd, p, len);

		if (n <= 0)
			die("exchange");
		p += n;
		len -= (size_t)n;
	}
}

static void qp_connect(struct ibv_qp *qp, uint32_t dqpn, const union ibv_gid *gid)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					  IBV_QP_ACCESS_FLAGS))
		die("modify INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_4096;
	a.dest_qp_num = dqpn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *gid;
	a.ah_attr.grh.hop_limit = 1;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("modify RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
					  IBV_QP_MAX_QP_RD_ATOMIC))
		die("modify RTS");
}

int main(int argc, char **argv)
{
	int server, sock, lsock = -1, i;
	unsigned long count, done = 0, posted = 0, acked = 0;
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	struct ibv_qp_init_attr ia;
	union ibv_gid gid;
	struct wire me, peer;
	struct sockaddr_in sa;
	socklen_t slen = sizeof(sa);
	struct ibv_wc wc;
	uint8_t *buf;
	int64_t last;

	if (argc < 3 || (strcmp(argv[1], "server") && strcmp(argv[1], "client")) ||
	    (!strcmp(argv[1], "client") && argc < 4)) {
		fprintf(stderr, "usage: %s server COUNT | client PORT COUNT\n", argv[0]);
		return 2;
	}
	server = !strcmp(argv[1], "server");
	count = strtoul(argv[server ? 2 : 3], NULL, 0);

	list = ibv_get_device_list(NULL);
	if (!list || !list[0])
		die("no device");
	ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	if (!ctx || ibv_query_gid(ctx, 1, 0, &gid))
		die("open device");
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 256, NULL, NULL, 0);
	buf = aligned_alloc(4096, (size_t)CHUNK * NCHUNK);
	if (!pd || !cq || !buf)
		die("alloc");
	memset(buf, 0, (size_t)CHUNK * NCHUNK);
	mr = ibv_reg_mr(pd, buf, (size_t)CHUNK * NCHUNK,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!mr)
		die("reg_mr");
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = cq;
	ia.recv_cq = cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = SDEPTH;
	ia.cap.max_recv_wr = RDEPTH;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	qp = ibv_create_qp(pd, &ia);
	if (!qp)
		die("create_qp");

	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (server) {
		int one = 1;

		lsock = socket(AF_INET, SOCK_STREAM, 0);
		if (lsock < 0)
			die("socket");
		setsockopt(lsock, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(lsock, (struct sockaddr *)&sa, sizeof(sa)) || listen(lsock, 1) ||
		    getsockname(lsock, (struct sockaddr *)&sa, &slen))
			die("listen");
		printf("port %u\n", ntohs(sa.sin_port));
		fflush(stdout);
		sock = accept(lsock, NULL, NULL);
		if (sock < 0)
			die("accept");
	} else {
		sa.sin_port = htons((uint16_t)atoi(argv[2]));
		sock = socket(AF_INET, SOCK_STREAM, 0);
		if (sock < 0 || connect(sock, (struct sockaddr *)&sa, sizeof(sa)))
			die("connect");
	}
	me.qpn = htonl(qp->qp_num);
	me.rkey = htonl(mr->rkey);
	me.addr = (uintptr_t)buf;
	full_io(sock, &me, sizeof(me), 1);
	full_io(sock, &peer, sizeof(peer), 0);
	peer.qpn = ntohl(peer.qpn);
	peer.rkey = ntohl(peer.rkey);

	qp_connect(qp, peer.qpn, &gid);
	/* receives need a QP out of RESET (IBA 10.8.2); the writer starts
	 * only after the handshake below */
	if (server) {
		for (i = 0; i < RDEPTH; i++) {
			struct ibv_recv_wr rwr = { .wr_id = (uint64_t)i }, *bad;

			if (ibv_post_recv(qp, &rwr, &bad))
				die("post_recv");
		}
	}
	/* both sides connected before the stream starts */
	full_io(sock, &me, 1, 1);
	full_io(sock, &peer, 1, 0);
	printf("ready pid=%d qpn=0x%06x\n", (int)getpid(), qp->qp_num);
	fflush(stdout);

	last = mono_ms();
	if (server) {
		/* target: check each chunk when its WRITE WITH IMM arrives */
		while (!count || done < count) {
			int n = ibv_poll_cq(cq, 1, &wc);

			if (n < 0)
				die("poll_cq");
			if (n == 0) {
				if (mono_ms() - last > 20000) {
					printf("fail no traffic for 20 s\n");
					return 1;
				}
				sched_yield();
				continue;
			}
			last = mono_ms();
			if (wc.status != IBV_WC_SUCCESS)
				report_error(&wc, done);
			if (wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM || ntohl(wc.imm_data) != done ||
			    wc.byte_len != CHUNK) {
				printf("fail unexpected completion op=%d imm=%u len=%u at %lu\n",
				       wc.opcode, ntohl(wc.imm_data), wc.byte_len, done);
				return 1;
			}
			if (!chunk_ok(buf + (size_t)(done % NCHUNK) * CHUNK, (uint32_t)done)) {
				printf("fail chunk %lu corrupt\n", done);
				return 1;
			}
			done++;
			{
				struct ibv_recv_wr rwr = { .wr_id = done }, *bad;

				if (ibv_post_recv(qp, &rwr, &bad))
					die("post_recv");
			}
		}
	} else {
		/* writer: keep the send queue busy, signal every SIGNAL_EVERY */
		uint8_t *src = buf;
		int post_err = 0;

		while (!count || acked < count) {
			while (!post_err && posted - acked < SDEPTH - SIGNAL_EVERY &&
			       (!count || posted < count)) {
				struct ibv_sge sg;
				struct ibv_send_wr wr, *bad;
				uint8_t *c = src + (size_t)(posted % NCHUNK) * CHUNK;

				chunk_fill(c, (uint32_t)posted);
				sg.addr = (uintptr_t)c;
				sg.length = CHUNK;
				sg.lkey = mr->lkey;
				memset(&wr, 0, sizeof(wr));
				wr.wr_id = posted;
				wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
				wr.imm_data = htonl((uint32_t)posted);
				wr.sg_list = &sg;
				wr.num_sge = 1;
				/* the last one of a finite stream is signaled too */
				if (posted % SIGNAL_EVERY == SIGNAL_EVERY - 1 ||
				    (count && posted == count - 1))
					wr.send_flags = IBV_SEND_SIGNALED;
				wr.wr.rdma.remote_addr = peer.addr + (posted % NCHUNK) * CHUNK;
				wr.wr.rdma.rkey = peer.rkey;
				/* a QP in ERROR may refuse new work: keep polling
				 * for the completion that says why */
				post_err = ibv_post_send(qp, &wr, &bad);
				if (post_err)
					break;
				posted++;
			}
			{
				int n = ibv_poll_cq(cq, 1, &wc);

				if (n < 0)
					die("poll_cq");
				if (n == 0) {
					if (mono_ms() - last > 20000) {
						printf("fail no completion for 20 s\n");
						return 1;
					}
					sched_yield();
					continue;
				}
				last = mono_ms();
				if (wc.status != IBV_WC_SUCCESS)
					report_error(&wc, acked);
				acked = wc.wr_id + 1;
			}
		}
		done = acked;
	}
	printf("done n=%lu\n", done);
	fflush(stdout);
	/* let the peer finish before the QP goes away */
	full_io(sock, &me, 1, 1);
	full_io(sock, &peer, 1, 0);
	ibv_destroy_qp(qp);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	close(sock);
	if (lsock >= 0)
		close(lsock);
	free(buf);
	return 0;
}
