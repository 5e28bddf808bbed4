/*
 * RDMA WRITEs into a target process that is stopped or killed in the
 * middle (issue 18: one-sided operations executed without the target
 * process; tests/hosts/onesided.sh).
 *
 *   write_stop [options]          target: exposes COUNT 8-byte words
 *   write_stop [options] HOST     writer: one RDMA WRITE per word
 *
 * The writer writes word i = MAGIC ^ i, DEPTH WRITEs outstanding, each
 * signaled, and prints "progress n=N" every 50 ms (N: WRITEs completed),
 * so a script can tell whether WRITEs complete while the target is
 * stopped. With -o read it READs word i instead (the target filled them
 * so) and checks each; with -o fadd it does COUNT fetch-and-adds of 1 on
 * the target's word 0, each of which must return the number of those
 * before it, and word 0 must end at COUNT (exactly once each); with -u
 * both QPs are UC (completed as sent, so only the target's check tells
 * what arrived). With -o send it sends COUNT messages instead (SEND, and
 * SEND with immediate data i for every odd i), with -o wimm it does COUNT
 * RDMA WRITEs with immediate data i, message i of len_of(i) bytes (up to
 * four packets) into slot i % NSLOT of the target's buffer: the target
 * keeps RQ_DEPTH receive WQEs posted, polls their completions and checks
 * each (in order: wr_id, opcode, immediate data, byte_len and every byte)
 * before it posts the WQE again. Either way it then tells the target how
 * many it did; the target checks every word (and that the words beyond
 * are untouched), or that it received that many messages, and answers
 * its verdict. An error completion ends the writer with "error
 * status=NAME ok=N" and exit 4 (what a writer into a killed target must
 * get, IBA 9.7.6.1.3: retries exhausted, not a hang). With -F (writer,
 * -o send or write) the writer's next request after a SIGUSR1 is one the
 * target's responder must end the QP for, and the last: a SEND longer
 * than the target's receive buffers, a WRITE with an rkey the target
 * does not have. A target that finds its QP failed prints "target qp
 * state=N" (ibv_query_qp). With -G K (writer) the writer stops posting
 * after its K-th request, and once all K completed prints "gate n=K" and
 * waits for a SIGUSR2 before it posts the next: a script can stop or
 * kill the target there, so that every request after the K-th goes to a
 * target in that state whatever the load. With -Z PATH (target, -o send
 * or wimm) the target, at a SIGUSR1, posts OWN_WRITES RDMA WRITEs of its
 * own into the writer's buffer and at once writes 1 into PATH (its cgroup's
 * cgroup.freeze: it freezes itself, so that their ACKs come while it does
 * not run), and at the end prints "own writes=N ok=M" (M completed
 * without error).
 *
 * Output: "target ready pid=P" / "writer ready pid=P", "progress n=N", "gate n=K",
 * "own posted=N" (-Z),
 * "returned wrong=W" (read, fadd), "target words=N bad=B" and "ok" or
 * "fail: REASON". Exit 0 when everything holds,
 * 3 when data is wrong, 4 on an error completion, 1 otherwise.
 */
#include "hostpair.h"

#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>

#define MAX_DEPTH 16
#define MAGIC 0x5eedc0de00000000ull
/* -o send, wimm: receive WQEs the target keeps posted, the slots of its
 * buffer, the largest message */
#define RQ_DEPTH 512u
#define NSLOT (2 * RQ_DEPTH)
#define SLOT 4096u
/* -Z: the target's own RDMA WRITEs, 8 bytes each, into the writer's
 * last slot (a writer's buffer has MAX_DEPTH + 2) */
#define OWN_WRITES 8u

struct opts {
	struct hp_opts hp;
	const char *host;
	uint64_t count;
	unsigned int depth, pace_us;
	uint8_t timeout, retry_cnt;
	enum { OP_WRITE, OP_READ, OP_FADD, OP_SEND, OP_WIMM } op;
	int uc, fault;
	uint64_t gate;
	const char *freeze; /* -Z */
};

/* -F: the SIGUSR1 came */
static volatile sig_atomic_t fault_now;
/* -G: the SIGUSR2 came */
static volatile sig_atomic_t gate_open;
/* -Z: the target's own WRITEs, posted and completed (ok: without error) */
static unsigned int own_posted, own_done, own_ok;

static void on_usr1(int sig)
{
	(void)sig;
	fault_now = 1;
}

static void on_usr2(int sig)
{
	(void)sig;
	gate_open = 1;
}

/* The target's QP state, when something failed */
static void print_qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	if (!ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		printf("target qp state=%d\n", (int)a.qp_state);
}

static void usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s [options] [HOST]\n"
		"  without HOST: target; with HOST: writer\n"
		"  -p PORT  -d DEV  -g INDEX  -T SECS   as atomic_count\n"
		"  -n COUNT    words (default 20000)\n"
		"  -q DEPTH    outstanding WRITEs (writer, default 4, at most %d)\n"
		"  -w USEC     pause between posts (writer, default 100)\n"
		"  -t TIMEOUT  local ACK timeout exponent (default 14)\n"
		"  -r RETRY    retry_cnt (default 7)\n"
		"  -o OP       write (default), read, fadd, send or wimm (both sides)\n"
		"  -u          UC QPs (not read or fadd; both sides)\n"
		"  -F          after SIGUSR1 one request the target must NAK, the last\n"
		"              (the writer's; -o send: too long, -o write: a wrong rkey)\n"
		"  -G K        after K requests, all completed, wait for SIGUSR2 (writer)\n"
		"  -Z PATH     after SIGUSR1 %u WRITEs of its own, then 1 into PATH (target)\n",
		argv0, MAX_DEPTH, OWN_WRITES);
	exit(2);
}

static void parse(int argc, char **argv, struct opts *o)
{
	int c;

	memset(o, 0, sizeof(*o));
	hp_opts_init(&o->hp, "18650", 120);
	o->count = 20000;
	o->depth = 4;
	o->pace_us = 100;
	o->timeout = 14;
	o->retry_cnt = 7;
	while ((c = getopt(argc, argv, "p:d:g:n:q:w:t:r:o:uFG:T:Z:h")) != -1) {
		if (hp_opt(&o->hp, c, optarg))
			continue;
		switch (c) {
		case 'n':
			o->count = strtoull(optarg, NULL, 0);
			break;
		case 'q':
			o->depth = (unsigned int)atoi(optarg);
			break;
		case 'w':
			o->pace_us = (unsigned int)atoi(optarg);
			break;
		case 't':
			o->timeout = (uint8_t)atoi(optarg);
			break;
		case 'r':
			o->retry_cnt = (uint8_t)atoi(optarg);
			break;
		case 'u':
			o->uc = 1;
			break;
		case 'F':
			o->fault = 1;
			break;
		case 'G':
			o->gate = strtoull(optarg, NULL, 0);
			break;
		case 'Z':
			o->freeze = optarg;
			break;
		case 'o':
			if (!strcmp(optarg, "read"))
				o->op = OP_READ;
			else if (!strcmp(optarg, "fadd"))
				o->op = OP_FADD;
			else if (!strcmp(optarg, "send"))
				o->op = OP_SEND;
			else if (!strcmp(optarg, "wimm"))
				o->op = OP_WIMM;
			else if (strcmp(optarg, "write"))
				usage(argv[0]);
			break;
		default:
			usage(argv[0]);
		}
	}
	if (optind < argc)
		o->host = argv[optind++];
	if (optind != argc || !o->count || o->count > (1u << 24) || !o->depth ||
	    o->depth > MAX_DEPTH || o->hp.secs <= 0 || o->gate >= o->count ||
	    (o->uc && (o->op == OP_READ || o->op == OP_FADD)) ||
	    (o->fault && o->op != OP_SEND && o->op != OP_WRITE) ||
	    (o->freeze && (o->host || (o->op != OP_SEND && o->op != OP_WIMM))))
		usage(argv[0]);
}

/* -o send, wimm: message i's length (0 to four packets of 1024) and its
 * byte j */
static uint32_t len_of(uint64_t i)
{
	static const uint32_t lens[] = {8, 0, 64, 1500, SLOT, 16, 1024, 3000};

	return lens[i % (sizeof(lens) / sizeof(lens[0]))];
}

static uint8_t byte_of(uint64_t i, uint32_t j) { return (uint8_t)(i * 31 + j * 7 + 1); }

static bool recv_mode(const struct opts *o) { return o->op == OP_SEND || o->op == OP_WIMM; }

/* UC WRITEs complete at the writer as sent, not as placed (UC has no
 * acknowledgement, IBA 9.7.1): the last ones may still be on their way
 * (here: in the target's sockets, read by its engine) when the count
 * comes over TCP. Wait up to 2 s for the first `words` words to hold
 * their values; the check that follows reports what is still wrong. */
static void uc_settle(const uint64_t *buf, uint64_t nwords, uint64_t words)
{
	int64_t end = hp_now_us() + 2000000;

	for (;;) {
		uint64_t i;

		for (i = 0; i < nwords && i < words; i++)
			if (__atomic_load_n(&buf[i], __ATOMIC_ACQUIRE) != (MAGIC ^ i))
				break;
		if (i >= nwords || i >= words || hp_now_us() >= end)
			return;
		usleep(1000);
	}
}

/* The target of -o send, wimm: receive WQE k into slot k % NSLOT */
static void post_recv_k(struct ibv_qp *qp, struct ibv_mr *mr, uint8_t *buf, uint64_t k)
{
	struct ibv_sge sg = {
	    .addr = (uintptr_t)(buf + (k % NSLOT) * SLOT), .length = SLOT, .lkey = mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = k, .sg_list = &sg, .num_sge = 1}, *bad;

	if (ibv_post_recv(qp, &wr, &bad))
		hp_fail("ibv_post_recv: %s", strerror(errno));
}

/* -Z, at the SIGUSR1: OWN_WRITES RDMA WRITEs from the target's last slot
 * into the writer's last, then the target freezes itself (o->freeze: its
 * cgroup's cgroup.freeze), with them in flight */
static void own_writes(struct ibv_qp *qp, struct ibv_mr *mr, uint8_t *buf,
		       const struct hp_info *peer, const char *freeze)
{
	uint8_t *src = buf + NSLOT * SLOT;
	int fd;

	for (unsigned int i = 0; i < OWN_WRITES; i++) {
		struct ibv_sge sg = {
		    .addr = (uintptr_t)(src + i * 8), .length = 8, .lkey = mr->lkey};
		struct ibv_send_wr wr = {.wr_id = UINT64_MAX - i, .sg_list = &sg, .num_sge = 1},
				   *bad;

		wr.opcode = IBV_WR_RDMA_WRITE;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.rdma.remote_addr = peer->addr + (MAX_DEPTH + 1) * SLOT + i * 8;
		wr.wr.rdma.rkey = peer->rkey;
		if (ibv_post_send(qp, &wr, &bad))
			hp_fail("ibv_post_send (own): %s", strerror(errno));
		own_posted++;
	}
	fd = open(freeze, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "1", 1) != 1)
		hp_fail("%s: %s", freeze, strerror(errno));
	close(fd);
	printf("own posted=%u\n", own_posted);
}

/* -Z: wc, when it is one of the target's own WRITEs, counted (true) */
static bool own_wc(const struct ibv_wc *wc)
{
	if (wc->opcode != IBV_WC_RDMA_WRITE)
		return false;
	own_done++;
	own_ok += wc->status == IBV_WC_SUCCESS;
	return true;
}

/* The target of -o send, wimm: COUNT messages, each checked as it
 * completes (until none came for 5 s while it runs), into the RQ_DEPTH
 * receive WQEs posted before the writer starts (a UC SEND that finds
 * none is dropped, transport/responder.c); the number received, the bad
 * ones in *bad. */
static uint64_t receive_all(struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_mr *mr, uint8_t *buf,
			    const struct opts *o, const struct hp_info *peer, int64_t end,
			    uint64_t *bad)
{
	uint64_t k;
	struct ibv_wc wc;

	for (k = 0; k < o->count; k++) {
		int64_t quiet = hp_now_us() + 5000000, last = hp_now_us();
		uint32_t len = len_of(k), j;
		const uint8_t *m;
		bool imm, want_imm = o->op == OP_WIMM || (k & 1);
		int got = 0;

		/* a stop (SIGSTOP) does not count as quiet */
		while (!got && hp_now_us() < end && hp_now_us() < quiet) {
			if (o->freeze && fault_now && !own_posted)
				own_writes(qp, mr, buf, peer, o->freeze);
			got = ibv_poll_cq(cq, 1, &wc);
			if (got < 0)
				hp_fail("ibv_poll_cq: %d", got);
			if (got && own_wc(&wc))
				got = 0;
			if (hp_now_us() - last > 100000)
				quiet += hp_now_us() - last;
			last = hp_now_us();
		}
		if (!got)
			break;
		imm = wc.wc_flags & IBV_WC_WITH_IMM;
		m = buf + (wc.wr_id % NSLOT) * SLOT;
		if (wc.status != IBV_WC_SUCCESS || wc.wr_id != k ||
		    wc.opcode != (o->op == OP_WIMM ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV) ||
		    wc.byte_len != len || imm != want_imm || (imm && ntohl(wc.imm_data) != k)) {
			if ((*bad)++ < 5)
				printf("# message %llu: status %s wr_id %llu opcode %d "
				       "byte_len %u imm %d 0x%x\n",
				       (unsigned long long)k, hp_wc_status_name(wc.status),
				       (unsigned long long)wc.wr_id, (int)wc.opcode, wc.byte_len,
				       imm, ntohl(wc.imm_data));
			if (wc.status != IBV_WC_SUCCESS) {
				print_qp_state(qp);
				break;
			}
			post_recv_k(qp, mr, buf, k + RQ_DEPTH);
			continue;
		}
		/* WRITE with immediate: into slot k % NSLOT as the SEND's WQE */
		for (j = 0; j < len && m[j] == byte_of(k, j); j++)
			;
		if (j < len && (*bad)++ < 5)
			printf("# message %llu: byte %u is 0x%02x, expected 0x%02x\n",
			       (unsigned long long)k, j, m[j], byte_of(k, j));
		post_recv_k(qp, mr, buf, k + RQ_DEPTH);
	}
	return k;
}

/* The writer of -G: the first N requests completed; wait for the SIGUSR2
 * (until END) */
static void wait_gate(uint64_t n, int64_t end)
{
	printf("progress n=%llu\ngate n=%llu\n", (unsigned long long)n, (unsigned long long)n);
	while (!gate_open) {
		if (hp_now_us() >= end)
			hp_fail("no SIGUSR2 in time (gate %llu)", (unsigned long long)n);
		usleep(1000);
	}
}

/* The writer: the words, DEPTH outstanding; the number written, or exit 4
 * on an error completion. A READ or fetch-and-add that returned what it
 * should not is counted in *wrong. */
static uint64_t write_all(struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_mr *mr, uint64_t *src,
			  const struct opts *o, const struct hp_info *peer, int64_t end, uint64_t *wrong)
{
	uint64_t posted = 0, done = 0, limit = o->count;
	int64_t next_print = 0;
	struct ibv_wc wc;

	while (done < limit) {
		/* -G: none past the gate until it opens */
		while (posted < limit && posted - done < o->depth &&
		       (!o->gate || gate_open || posted < o->gate)) {
			bool fault = o->fault && fault_now;
			struct ibv_sge sg = {
			    .addr = (uintptr_t)&src[posted], .length = 8, .lkey = mr->lkey};
			struct ibv_send_wr wr, *bad;

			if (!recv_mode(o))
				src[posted] = o->op == OP_WRITE ? MAGIC ^ posted : ~0ull;
			memset(&wr, 0, sizeof(wr));
			wr.wr_id = posted;
			wr.sg_list = &sg;
			wr.num_sge = 1;
			wr.send_flags = IBV_SEND_SIGNALED;
			if (recv_mode(o)) {
				/* message posted from slot posted % MAX_DEPTH */
				uint8_t *m = (uint8_t *)src + (posted % MAX_DEPTH) * SLOT;

				sg.addr = (uintptr_t)m;
				sg.length = len_of(posted);
				for (uint32_t j = 0; j < sg.length; j++)
					m[j] = byte_of(posted, j);
				wr.imm_data = htonl((uint32_t)posted);
				if (o->op == OP_WIMM) {
					wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
					wr.wr.rdma.remote_addr =
					    peer->addr + (posted % NSLOT) * SLOT;
					wr.wr.rdma.rkey = peer->rkey;
				} else {
					wr.opcode = posted & 1 ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
				}
			} else if (o->op == OP_FADD) {
				wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
				wr.wr.atomic.remote_addr = peer->addr;
				wr.wr.atomic.rkey = peer->rkey;
				wr.wr.atomic.compare_add = 1;
			} else {
				wr.opcode = o->op == OP_READ ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE;
				wr.wr.rdma.remote_addr = peer->addr + posted * 8;
				wr.wr.rdma.rkey = peer->rkey;
			}
			if (fault && o->op == OP_SEND) {
				/* longer than a receive WQE's buffer (SLOT),
				 * from beyond the slots of messages in flight */
				sg.addr = (uintptr_t)src + MAX_DEPTH * SLOT;
				sg.length = SLOT + 64;
				memset((uint8_t *)src + MAX_DEPTH * SLOT, 0xab, sg.length);
			} else if (fault) {
				wr.wr.rdma.rkey = peer->rkey ^ 0x5a5a00u; /* not the target's */
			}
			if (ibv_post_send(qp, &wr, &bad))
				hp_fail("ibv_post_send: %s", strerror(errno));
			posted++;
			if (fault)
				limit = posted;
			if (o->pace_us)
				usleep(o->pace_us);
		}
		if (!hp_poll_until(cq, &wc, end, 0))
			hp_fail("no completion before the deadline (%llu done)",
				(unsigned long long)done);
		if (wc.status != IBV_WC_SUCCESS) {
			printf("error status=%s ok=%llu\n", hp_wc_status_name(wc.status),
			       (unsigned long long)done);
			exit(4);
		}
		/* a READ brings word i; the i-th fetch-and-add finds i before it */
		if ((o->op == OP_READ && src[wc.wr_id] != (MAGIC ^ wc.wr_id)) ||
		    (o->op == OP_FADD && src[wc.wr_id] != wc.wr_id)) {
			if ((*wrong)++ < 5)
				printf("# op %llu returned 0x%016llx\n", (unsigned long long)wc.wr_id,
				       (unsigned long long)src[wc.wr_id]);
		}
		done++;
		if (hp_now_us() >= next_print) {
			printf("progress n=%llu\n", (unsigned long long)done);
			next_print = hp_now_us() + 50000;
		}
		/* all posted before the gate completed (none after it posted) */
		if (o->gate && !gate_open && done == o->gate)
			wait_gate(done, end);
	}
	printf("progress n=%llu\n", (unsigned long long)done);
	return done;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct hp_info me, peer;
	struct hp_path path;
	struct ibv_device_attr dattr;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	union ibv_gid gid;
	uint64_t *buf, n[2], bad = 0, wrong = 0;
	uint32_t remote = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	size_t len;
	int sock, lsock = -1, gidx, rc = 0, err;
	int64_t end;

	setvbuf(stdout, NULL, _IOLBF, 0);
	parse(argc, argv, &o);
	if (o.fault || o.freeze)
		signal(SIGUSR1, on_usr1);
	if (o.gate)
		signal(SIGUSR2, on_usr2);
	end = hp_now_us() + (int64_t)o.hp.secs * 1000000;
	ctx = hp_open(o.hp.dev);
	sock = hp_rendezvous(o.host, o.hp.port, o.hp.secs, &lsock);
	if (ibv_query_device(ctx, &dattr))
		hp_fail("ibv_query_device");
	gidx = hp_local_gid(ctx, o.hp.gid_index, sock, &gid);
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 2 * MAX_DEPTH + 4 + (recv_mode(&o) ? (int)RQ_DEPTH : 0), NULL, NULL,
			   0);
	if (!pd || !cq)
		hp_fail("alloc pd/cq: %s", strerror(errno));
	/* the target's words and a page beyond them that nobody writes */
	len = ((size_t)o.count * 8 + 2 * 4096) & ~(size_t)4095;
	/* -o send, wimm: the target's slots, the writer's messages (and -F's
	 * long one) */
	if (recv_mode(&o) && len < (size_t)(o.host ? MAX_DEPTH + 2 : NSLOT + 1) * SLOT)
		len = (size_t)(o.host ? MAX_DEPTH + 2 : NSLOT + 1) * SLOT;
	buf = aligned_alloc(4096, len);
	if (!buf)
		hp_fail("out of memory");
	memset(buf, 0, len);
	if (!o.host && o.op == OP_READ)
		for (uint64_t i = 0; i < o.count; i++)
			buf[i] = MAGIC ^ i;
	/* a writer's takes the -Z target's own WRITEs */
	mr = ibv_reg_mr(pd, buf, len,
			IBV_ACCESS_LOCAL_WRITE | (o.host ? IBV_ACCESS_REMOTE_WRITE : remote));
	if (!mr)
		hp_fail("ibv_reg_mr: %s", strerror(errno));
	qp = hp_create_qp(pd, cq, o.uc ? IBV_QPT_UC : IBV_QPT_RC, MAX_DEPTH + 2,
			  recv_mode(&o) && !o.host ? RQ_DEPTH : 1, 1);

	hp_info_self(&me, qp, &gid);
	me.rkey = mr->rkey;
	me.addr = (uintptr_t)buf;
	me.len = o.count;
	hp_exchange(sock, &me, &peer, o.hp.secs);
	hp_path_peer(&path, gidx, &me, &peer, IBV_MTU_1024);
	path.timeout = o.timeout;
	path.retry_cnt = o.retry_cnt;
	path.rnr_retry = 7;
	path.min_rnr_timer = 12;
	path.max_rd_atomic = MAX_DEPTH;
	path.max_dest_rd_atomic = MAX_DEPTH;
	path.access = o.host || o.uc ? IBV_ACCESS_REMOTE_WRITE : remote;
	err = hp_qp_modify(qp, &path, IBV_QPS_RTS);
	if (err)
		hp_fail("ibv_modify_qp to RTS: %s", strerror(err));
	/* the target's receive WQEs before the writer's first message */
	for (uint64_t k = 0; !o.host && recv_mode(&o) && k < RQ_DEPTH; k++)
		post_recv_k(qp, mr, (uint8_t *)buf, k);
	hp_sync(sock, o.hp.secs);
	if (o.host) {
		printf("writer ready pid=%d\n", (int)getpid());
		n[0] = htobe64(write_all(qp, cq, mr, buf, &o, &peer, end, &wrong));
		if (o.op != OP_WRITE)
			printf("returned wrong=%llu\n", (unsigned long long)wrong);
		if (hp_io(sock, n, 8, 1, o.hp.secs))
			hp_fail("the target went away before the count");
		if (hp_io(sock, n, 16, 0, o.hp.secs))
			hp_fail("the target went away before its verdict");
		printf("target words=%llu bad=%llu\n", (unsigned long long)be64toh(n[0]),
		       (unsigned long long)be64toh(n[1]));
		if (n[1] || wrong)
			rc = 3;
	} else {
		int64_t left = (end - hp_now_us()) / 1000000;
		uint64_t words, i, got = 0;

		printf("target ready pid=%d\n", (int)getpid());
		if (recv_mode(&o)) {
			got = receive_all(qp, cq, mr, (uint8_t *)buf, &o, &peer, end, &bad);
			/* -Z: the own WRITEs not polled yet */
			while (own_done < own_posted && hp_now_us() < end) {
				struct ibv_wc wc;
				int got_own = ibv_poll_cq(cq, 1, &wc);

				if (got_own < 0)
					hp_fail("ibv_poll_cq: %d", got_own);
				if (got_own && !own_wc(&wc))
					printf("# opcode %d after the messages\n", (int)wc.opcode);
			}
			if (o.freeze)
				printf("own writes=%u ok=%u\n", own_done, own_ok);
			left = (end - hp_now_us()) / 1000000;
		}
		if (hp_io(sock, n, 8, 0, left > 1 ? (int)left : 1)) {
			print_qp_state(qp);
			hp_fail("the writer went away before its count");
		}
		words = be64toh(n[0]);
		if (recv_mode(&o)) {
			/* the messages received, all checked */
			if (got != words && bad++ < 5)
				printf("# %llu messages received of %llu\n",
				       (unsigned long long)got, (unsigned long long)words);
			words = got;
		}
		if (o.uc && o.op == OP_WRITE)
			uc_settle(buf, len / 8, words);
		for (i = 0; i < len / 8 && !recv_mode(&o); i++) {
			uint64_t want = o.op == OP_FADD ? (i ? 0 : words) : i < words ? MAGIC ^ i : 0;

			if (__atomic_load_n(&buf[i], __ATOMIC_ACQUIRE) != want && bad++ < 5)
				printf("# word %llu is 0x%016llx, expected 0x%016llx\n",
				       (unsigned long long)i, (unsigned long long)buf[i],
				       (unsigned long long)want);
		}
		printf("target words=%llu bad=%llu\n", (unsigned long long)words,
		       (unsigned long long)bad);
		n[0] = htobe64(words);
		n[1] = htobe64(bad);
		if (hp_io(sock, n, 16, 1, o.hp.secs))
			hp_fail("the writer went away before the verdict");
		if (bad)
			rc = 3;
	}
	hp_sync(sock, o.hp.secs);
	if (rc)
		printf("fail: %llu words wrong, %llu returned wrong\n", (unsigned long long)bad,
		       (unsigned long long)wrong);
	else
		printf("ok\n");
	ibv_destroy_qp(qp);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	free(buf);
	close(sock);
	if (lsock >= 0)
		close(lsock);
	return rc;
}
