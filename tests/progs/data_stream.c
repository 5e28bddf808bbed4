/*
 * A byte-exact stream of RC messages between two processes, for every test
 * that runs between hosts or over an impaired link (tests/hosts/netem.sh,
 * pingpong.sh, perftest.sh) and on one host (tests/consumers/pingpong.sh).
 * The ping-pong examples' --chk compares almost nothing; this does.
 *
 *   data_stream [options]          server: the responder's side
 *   data_stream [options] HOST     client: the requester
 *
 * For each opcode of -o (SEND, RDMA WRITE, RDMA WRITE WITH IMMEDIATE, RDMA
 * READ) the client moves the messages of -s, one size after the other in
 * turn. Byte OFF of message SEQ of opcode OP is a function of (OP, SEQ,
 * OFF) alone (pattern_word), so a message that is lost, repeated, cut,
 * misplaced or changed shows as wrong bytes, a wrong length or a wrong
 * immediate. Messages go in batches, packed back to back at any alignment
 * into one region of each side. Before a batch the server poisons its
 * region and posts one receive per message of exactly its length (SEND,
 * WRITE WITH IMM: the immediate must be SEQ), or fills the region with the
 * batch's messages (READ; the client poisons its own). Once the client has
 * all its completions (in order, each IBV_WC_SUCCESS) it says so over TCP,
 * and the checker compares every byte: the server for SEND, WRITE and
 * WRITE WITH IMM (a receive completion per message, in order, nothing
 * more), the client for READ as each one completes. After the last batch
 * the server keeps a receive posted for a while: a repeated SEND would
 * complete it. The two sides agree over TCP (hostpair.h) on QPs, keys and
 * the client's schedule, and then on each batch.
 *
 * Output, one line each: "checked OP messages=N bytes=B" from the side that
 * checked OP, then "ok" (and on the client "client ... elapsed_ms=T").
 * A wrong byte: "fail: OP message SEQ (LEN bytes at region offset R): byte
 * K: expected 0xEE got 0xGG (W wrong bytes; ...)" and exit 3; anything
 * else "fail: ..." and exit 1. -x SEQ corrupts one byte of message SEQ of
 * each opcode at its sender, so a test can show that the check fails.
 * -E FILE (client) goes through the whole schedule again, round after
 * round, until FILE exists (looked at after each round; the server learns
 * each round's end over TCP), so that a test ends the stream once what
 * it waits for has happened, however fast the machine moves the bytes;
 * the client's line then says "rounds=R" and the counts are R schedules'.
 */
#include "hostpair.h"

#include <sched.h>
#include <stdbool.h>

#define BATCH_MAX 256u		      /* messages per batch */
#define REGION_MIN (8u << 20)	      /* bytes per batch, at least */
#define MAX_MSG (64u << 20)	      /* largest -s size */
#define MAX_SIZES 16u
#define POISON 0xa5
#define SPEC_LEN 512

enum op { OP_SEND, OP_WRITE, OP_WRITE_IMM, OP_READ, OP_NR };

static const char *const op_names[OP_NR] = {
    [OP_SEND] = "send",
    [OP_WRITE] = "write",
    [OP_WRITE_IMM] = "write_imm",
    [OP_READ] = "read",
};

/* What the client asks for; the server learns it over TCP (SPEC_LEN). */
struct spec {
	unsigned int ops[OP_NR], nops;
	uint32_t size[MAX_SIZES], count[MAX_SIZES];
	unsigned int nsizes;
	long long corrupt; /* -x: message to corrupt, -1: none */
	bool until;	   /* -E: rounds until the client's file exists */
};

struct opts {
	const char *port, *dev, *host, *until; /* -E FILE */
	int gid_index, secs;
	enum ibv_mtu mtu;
	unsigned int depth;
	uint8_t timeout, retry_cnt;
	char spec[SPEC_LEN]; /* "-o OPS -s SIZES -x SEQ" as text */
};

struct msg {
	uint64_t seq;
	uint64_t off; /* in the region */
	uint32_t len;
};

struct batch {
	enum op op;
	unsigned int n;
	struct msg m[BATCH_MAX];
};

struct res {
	struct ibv_context *ctx;
	struct ibv_comp_channel *ch;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	size_t len;
	int gid_index;
	union ibv_gid gid;
	struct ibv_device_attr dattr;
	int sock;
	int64_t end;
	uint64_t checked[OP_NR], bytes[OP_NR];
	unsigned int rounds; /* -E: schedules gone through */
};

static void usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s [options] [HOST]\n"
		"  without HOST: server; with HOST: client (it chooses -o, -s, -x)\n"
		"  -p PORT     TCP port of the rendezvous (default 18700)\n"
		"  -d DEV      RDMA device (default: the first)\n"
		"  -g INDEX    local GID index (default: the GID of the TCP connection's\n"
		"              local address, else 0)\n"
		"  -m MTU      path MTU 256..4096 (default 1024)\n"
		"  -o OPS      opcodes in order, of send,write,write_imm,read (default all)\n"
		"  -s SIZES    SIZE[xCOUNT],... messages per opcode, sizes in turn\n"
		"              (default 1x64,1023x64,1024x64,1025x64,4096x16,65536x8,1048576x3)\n"
		"  -q DEPTH    work requests outstanding (default 16)\n"
		"  -x SEQ      corrupt one byte of message SEQ of each opcode (a test of the test)\n"
		"  -t TIMEOUT  local ACK timeout exponent (default 14)\n"
		"  -r RETRY    retry_cnt (default 7)\n"
		"  -T SECS     bound of the whole run (default 120)\n"
		"  -E FILE     (client) the schedule again and again until FILE exists\n",
		argv0);
	exit(2);
}

static void parse(int argc, char **argv, struct opts *o)
{
	const char *ops = "send,write,write_imm,read",
		   *sizes = "1x64,1023x64,1024x64,1025x64,4096x16,65536x8,1048576x3";
	long long corrupt = -1;
	int c;

	memset(o, 0, sizeof(*o));
	o->port = "18700";
	o->gid_index = -1;
	o->mtu = IBV_MTU_1024;
	o->depth = 16;
	o->secs = 120;
	o->timeout = 14;
	o->retry_cnt = 7;
	while ((c = getopt(argc, argv, "p:d:g:m:o:s:q:x:t:r:T:E:h")) != -1) {
		switch (c) {
		case 'p':
			o->port = optarg;
			break;
		case 'd':
			o->dev = optarg;
			break;
		case 'g':
			o->gid_index = atoi(optarg);
			break;
		case 'm':
			o->mtu = hp_parse_mtu(optarg);
			break;
		case 'o':
			ops = optarg;
			break;
		case 's':
			sizes = optarg;
			break;
		case 'q':
			o->depth = (unsigned int)atoi(optarg);
			break;
		case 'x':
			corrupt = atoll(optarg);
			break;
		case 't':
			o->timeout = (uint8_t)atoi(optarg);
			break;
		case 'r':
			o->retry_cnt = (uint8_t)atoi(optarg);
			break;
		case 'T':
			o->secs = atoi(optarg);
			break;
		case 'E':
			o->until = optarg;
			break;
		default:
			usage(argv[0]);
		}
	}
	if (optind < argc)
		o->host = argv[optind++];
	if (optind != argc || !o->mtu || !o->depth || o->depth > BATCH_MAX || o->secs <= 0)
		usage(argv[0]);
	if (snprintf(o->spec, sizeof(o->spec), "%s %s %lld %d", ops, sizes, corrupt,
		     o->until != NULL) >= (int)sizeof(o->spec))
		usage(argv[0]);
}

/* parse_spec: "OPS SIZES CORRUPT [UNTIL]" (struct opts.spec) into S; 0 or -1 */
static int parse_spec(const char *text, struct spec *s)
{
	char buf[SPEC_LEN], *save, *ops, *sizes, *cor, *until, *w;

	memset(s, 0, sizeof(*s));
	snprintf(buf, sizeof(buf), "%s", text);
	ops = strtok_r(buf, " ", &save);
	sizes = strtok_r(NULL, " ", &save);
	cor = strtok_r(NULL, " ", &save);
	until = strtok_r(NULL, " ", &save);
	if (!ops || !sizes || !cor)
		return -1;
	s->corrupt = atoll(cor);
	s->until = until && atoi(until);
	for (w = strtok_r(ops, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		unsigned int i;

		for (i = 0; i < OP_NR && strcmp(w, op_names[i]); i++)
			;
		if (i == OP_NR || s->nops == OP_NR)
			return -1;
		s->ops[s->nops++] = i;
	}
	for (w = strtok_r(sizes, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		char *x;
		unsigned long sz = strtoul(w, &x, 10), n = 1;

		if (*x == 'x')
			n = strtoul(x + 1, &x, 10);
		if (*x || !sz || sz > MAX_MSG || !n || n > 1000000 || s->nsizes == MAX_SIZES)
			return -1;
		s->size[s->nsizes] = (uint32_t)sz;
		s->count[s->nsizes++] = (uint32_t)n;
	}
	return s->nops && s->nsizes ? 0 : -1;
}

/* ---- the pattern ------------------------------------------------------------ */

/* Word J (bytes 8J..8J+7, little-endian) of message SEQ of opcode OP: a
 * splitmix64 finalizer over the three, so no two messages look alike. */
static uint64_t pattern_word(unsigned int op, uint64_t seq, uint64_t j)
{
	uint64_t z = ((seq << 2 | op) + 1) * 0x9e3779b97f4a7c15ull ^ (j + 1) * 0xd6e8feb86659fd93ull;

	z ^= z >> 30;
	z *= 0xbf58476d1ce4e5b9ull;
	z ^= z >> 27;
	z *= 0x94d049bb133111ebull;
	z ^= z >> 31;
	return z;
}

static uint8_t pattern_byte(unsigned int op, uint64_t seq, uint64_t off)
{
	return (uint8_t)(pattern_word(op, seq, off / 8) >> (8 * (off % 8)));
}

static void pattern_fill(uint8_t *p, unsigned int op, uint64_t seq, uint32_t len)
{
	uint64_t j, w;

	for (j = 0; j < len / 8; j++) {
		w = htole64(pattern_word(op, seq, j));
		memcpy(p + 8 * j, &w, 8);
	}
	for (j = len & ~7u; j < len; j++)
		p[j] = pattern_byte(op, seq, j);
}

/* pattern_first_bad: the offset of the first wrong byte, LEN when none */
static uint32_t pattern_first_bad(const uint8_t *p, unsigned int op, uint64_t seq, uint32_t len)
{
	uint64_t j, w;
	uint32_t k;

	for (j = 0; j < len / 8; j++) {
		w = htole64(pattern_word(op, seq, j));
		if (memcmp(p + 8 * j, &w, 8))
			break;
	}
	for (k = (uint32_t)(8 * j); k < len; k++)
		if (p[k] != pattern_byte(op, seq, k))
			return k;
	return len;
}

/* whose: what the first 8 bytes at P look like (another message, the
 * poison), to name a missing or repeated message */
static void whose(const uint8_t *p, uint32_t len, unsigned int mop, uint64_t seq, char *out,
		  size_t n)
{
	uint64_t w, lo = seq > 4096 ? seq - 4096 : 0;
	unsigned int op;
	uint32_t k;

	snprintf(out, n, "not the start of any message near it");
	if (len < 8)
		return;
	for (k = 0; k < 8 && p[k] == POISON; k++)
		;
	if (k == 8) {
		snprintf(out, n, "never written (poison 0x%02x)", POISON);
		return;
	}
	memcpy(&w, p, 8);
	w = le64toh(w);
	for (op = 0; op < OP_NR; op++)
		for (uint64_t s = lo; s < seq + 4096; s++)
			if (pattern_word(op, s, 0) == w) {
				if (op == mop && s == seq)
					snprintf(out, n, "its first 8 bytes are right");
				else
					snprintf(out, n, "it starts as %s message %llu does",
						 op_names[op], (unsigned long long)s);
				return;
			}
}

/* check_msg: every byte of message M of OP at P; reports and exits 3 */
static void check_msg(struct res *r, unsigned int op, const struct msg *m, const uint8_t *p)
{
	uint32_t bad = pattern_first_bad(p, op, m->seq, m->len), nbad = 0, k;
	char who[128];

	if (bad == m->len) {
		r->checked[op]++;
		r->bytes[op] += m->len;
		return;
	}
	for (k = bad; k < m->len; k++)
		nbad += p[k] != pattern_byte(op, m->seq, k);
	whose(p, m->len, op, m->seq, who, sizeof(who));
	printf("fail: %s message %llu (%u bytes at region offset %llu): byte %u: expected "
	       "0x%02x got 0x%02x (%u wrong bytes; %s)\n",
	       op_names[op], (unsigned long long)m->seq, m->len, (unsigned long long)m->off, bad,
	       pattern_byte(op, m->seq, bad), p[bad], nbad, who);
	exit(3);
}

/* ---- the schedule -------------------------------------------------------- */

/* Walks the messages of every opcode in order and cuts them into batches. */
struct walker {
	const struct spec *s;
	unsigned int opi;	     /* index into s->ops */
	uint32_t left[MAX_SIZES];    /* of this opcode */
	unsigned int next;	     /* the size to take next */
	uint64_t seq;		     /* of the next message */
	size_t region;
};

static void walker_start(struct walker *w, const struct spec *s, size_t region)
{
	memset(w, 0, sizeof(*w));
	w->s = s;
	w->region = region;
	memcpy(w->left, s->count, sizeof(w->left));
}

/* next_batch: the next batch into B; 0 when there is none left */
static int next_batch(struct walker *w, struct batch *b)
{
	const struct spec *s = w->s;
	uint64_t off = 0;
	unsigned int tries;

	b->n = 0;
	while (w->opi < s->nops) {
		b->op = s->ops[w->opi];
		while (b->n < BATCH_MAX) {
			for (tries = 0; tries < s->nsizes && !w->left[w->next]; tries++)
				w->next = (w->next + 1) % s->nsizes;
			if (tries == s->nsizes)
				break; /* this opcode is done */
			if (off + s->size[w->next] > w->region)
				return 1;
			b->m[b->n].seq = w->seq++;
			b->m[b->n].off = off;
			b->m[b->n].len = s->size[w->next];
			off += s->size[w->next];
			b->n++;
			w->left[w->next]--;
			w->next = (w->next + 1) % s->nsizes;
		}
		if (b->n)
			return 1;
		/* the next opcode starts over */
		w->opi++;
		w->seq = 0;
		w->next = 0;
		memcpy(w->left, s->count, sizeof(w->left));
	}
	return 0;
}

/* ---- verbs --------------------------------------------------------------- */

static void setup(struct res *r, const struct opts *o, size_t region)
{
	struct ibv_qp_init_attr ia;

	if (ibv_query_device(r->ctx, &r->dattr))
		hp_fail("ibv_query_device");
	r->gid_index = o->gid_index >= 0 ? o->gid_index : hp_sock_gid_index(r->ctx, 1, r->sock);
	if (r->gid_index < 0)
		r->gid_index = 0;
	if (ibv_query_gid(r->ctx, 1, r->gid_index, &r->gid))
		hp_fail("ibv_query_gid %d", r->gid_index);
	r->ch = ibv_create_comp_channel(r->ctx);
	r->pd = ibv_alloc_pd(r->ctx);
	if (!r->ch || !r->pd)
		hp_fail("comp channel / pd: %s", strerror(errno));
	r->cq = ibv_create_cq(r->ctx, 2 * BATCH_MAX + 16, NULL, r->ch, 0);
	if (!r->cq)
		hp_fail("ibv_create_cq: %s", strerror(errno));
	r->len = region;
	r->buf = aligned_alloc(4096, r->len);
	if (!r->buf)
		hp_fail("out of memory (%zu bytes)", r->len);
	memset(r->buf, POISON, r->len);
	r->mr = ibv_reg_mr(r->pd, r->buf, r->len,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!r->mr)
		hp_fail("ibv_reg_mr: %s", strerror(errno));
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = r->cq;
	ia.recv_cq = r->cq;
	ia.qp_type = IBV_QPT_RC;
	ia.sq_sig_all = 1;
	ia.cap.max_send_wr = o->depth;
	ia.cap.max_recv_wr = BATCH_MAX + 1;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	r->qp = ibv_create_qp(r->pd, &ia);
	if (!r->qp)
		hp_fail("ibv_create_qp: %s", strerror(errno));
}

/* next_wc: the next completion, waiting on the channel once the queue is
 * empty; 0, or -1 when the deadline passed (or UNTIL_US, when not 0) */
static int next_wc(struct res *r, struct ibv_wc *wc, int64_t until_us)
{
	int64_t end = until_us ? until_us : r->end;
	int spins = 0;

	for (;;) {
		struct ibv_cq *ecq;
		void *ectx;
		int n = ibv_poll_cq(r->cq, 1, wc);

		if (n < 0)
			hp_fail("ibv_poll_cq");
		if (n == 1)
			return 0;
		if (hp_now_us() > end)
			return -1;
		if (spins++ < 64) {
			sched_yield();
			continue;
		}
		/* arm, look once more, then sleep on the channel */
		if (ibv_req_notify_cq(r->cq, 0))
			hp_fail("ibv_req_notify_cq");
		n = ibv_poll_cq(r->cq, 1, wc);
		if (n == 1)
			return 0;
		{
			struct pollfd pf = {.fd = r->ch->fd, .events = POLLIN};
			int64_t left = (end - hp_now_us()) / 1000;

			if (poll(&pf, 1, left > 100 ? 100 : left < 1 ? 1 : (int)left) == 1 &&
			    !ibv_get_cq_event(r->ch, &ecq, &ectx))
				ibv_ack_cq_events(ecq, 1);
		}
		spins = 0;
	}
}

static void post_recv(struct res *r, uint64_t id, uint8_t *addr, uint32_t len)
{
	struct ibv_sge sg = {.addr = (uintptr_t)addr, .length = len, .lkey = r->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = id, .sg_list = &sg, .num_sge = addr ? 1 : 0}, *bad;

	if (ibv_post_recv(r->qp, &wr, &bad))
		hp_fail("ibv_post_recv: %s", strerror(errno));
}

/* ---- the agreement over TCP ------------------------------------------------ */

/* AGAIN, END: the client's word after a round (-E) */
enum ctl_kind { CTL_READY = 1, CTL_DONE = 2, CTL_FAIL = 3, CTL_AGAIN = 4, CTL_END = 5 };

static void ctl_send(struct res *r, uint32_t kind, uint32_t batch)
{
	uint32_t m[2] = {htonl(kind), htonl(batch)};
	int64_t left = (r->end - hp_now_us()) / 1000000;

	if (hp_io(r->sock, m, sizeof(m), 1, left > 1 ? (int)left : 1))
		hp_fail("the peer closed the TCP connection");
}

/* ctl_recv: the peer's next word about batch BATCH; exits when it failed */
static uint32_t ctl_recv(struct res *r, uint32_t batch)
{
	uint32_t m[2];
	int64_t left = (r->end - hp_now_us()) / 1000000;

	if (hp_io(r->sock, m, sizeof(m), 0, left > 1 ? (int)left : 1))
		hp_fail("the peer closed the TCP connection at batch %u", batch);
	if (ntohl(m[0]) == CTL_FAIL)
		hp_fail("the peer failed at batch %u (its output says why)", ntohl(m[1]));
	if (ntohl(m[1]) != batch)
		hp_fail("out of step: the peer is at batch %u, this side at %u", ntohl(m[1]), batch);
	return ntohl(m[0]);
}

/* ---- server --------------------------------------------------------------- */

static void server_prepare(struct res *r, const struct spec *s, const struct batch *b)
{
	unsigned int i;

	if (b->op == OP_READ) {
		for (i = 0; i < b->n; i++) {
			pattern_fill(r->buf + b->m[i].off, b->op, b->m[i].seq, b->m[i].len);
			if ((long long)b->m[i].seq == s->corrupt)
				r->buf[b->m[i].off + b->m[i].len / 2] ^= 1;
		}
		return;
	}
	memset(r->buf, POISON, b->m[b->n - 1].off + b->m[b->n - 1].len);
	if (b->op == OP_SEND)
		for (i = 0; i < b->n; i++)
			post_recv(r, i, r->buf + b->m[i].off, b->m[i].len);
	else if (b->op == OP_WRITE_IMM)
		for (i = 0; i < b->n; i++)
			post_recv(r, i, NULL, 0);
}

/* server_check: the batch as it arrived; exits on anything wrong */
static void server_check(struct res *r, const struct batch *b)
{
	enum ibv_wc_opcode want = b->op == OP_SEND ? IBV_WC_RECV : IBV_WC_RECV_RDMA_WITH_IMM;
	const char *name = op_names[b->op];
	struct ibv_wc wc;
	unsigned int i;

	for (i = 0; i < b->n; i++) {
		const struct msg *m = &b->m[i];

		if (b->op == OP_SEND || b->op == OP_WRITE_IMM) {
			if (next_wc(r, &wc, 0))
				hp_fail("%s message %llu: no receive completion (%u of %u in the "
					"batch came)",
					name, (unsigned long long)m->seq, i, b->n);
			if (wc.status != IBV_WC_SUCCESS)
				hp_fail("%s message %llu: receive completed with %s", name,
					(unsigned long long)m->seq, hp_wc_status_name(wc.status));
			if (wc.wr_id != i || wc.opcode != want)
				hp_fail("%s message %llu: completion of receive %llu opcode %d, "
					"expected receive %u opcode %d",
					name, (unsigned long long)m->seq,
					(unsigned long long)wc.wr_id, wc.opcode, i, want);
			if (wc.byte_len != m->len)
				hp_fail("%s message %llu: %u bytes arrived, expected %u", name,
					(unsigned long long)m->seq, wc.byte_len, m->len);
			if (b->op == OP_SEND && (wc.wc_flags & IBV_WC_WITH_IMM))
				hp_fail("send message %llu: arrived with an immediate",
					(unsigned long long)m->seq);
			if (b->op == OP_WRITE_IMM &&
			    (!(wc.wc_flags & IBV_WC_WITH_IMM) ||
			     ntohl(wc.imm_data) != (uint32_t)m->seq))
				hp_fail("write_imm message %llu: immediate %u, expected %u "
					"(a message missing or repeated)",
					(unsigned long long)m->seq, ntohl(wc.imm_data),
					(uint32_t)m->seq);
		}
		check_msg(r, b->op, m, r->buf + m->off);
	}
	/* nothing more: no receive is left posted, so only a stray
	 * completion of another kind could be here */
	if (ibv_poll_cq(r->cq, 1, &wc) == 1)
		hp_fail("%s: a completion too many after the batch (receive %llu, opcode %d, "
			"status %s)",
			name, (unsigned long long)wc.wr_id, wc.opcode, hp_wc_status_name(wc.status));
}

static void run_server(struct res *r, const struct spec *s)
{
	struct walker w;
	struct batch *b = malloc(sizeof(*b));
	uint32_t nb = 0;
	struct ibv_wc wc;
	int more;

	if (!b)
		hp_fail("out of memory");
	walker_start(&w, s, r->len);
	more = next_batch(&w, b);
	while (more) {
		server_prepare(r, s, b);
		ctl_send(r, CTL_READY, nb);
		ctl_recv(r, nb);
		if (b->op != OP_READ)
			server_check(r, b);
		nb++;
		more = next_batch(&w, b);
		if (!more && s->until && ctl_recv(r, nb) == CTL_AGAIN) {
			walker_start(&w, s, r->len);
			more = next_batch(&w, b);
		}
	}
	/* a SEND delivered twice would complete this one */
	post_recv(r, BATCH_MAX, r->buf, (uint32_t)r->len);
	if (!next_wc(r, &wc, hp_now_us() + 300000))
		hp_fail("an extra receive completion after the last batch: opcode %d, %u bytes, "
			"status %s (a message delivered twice)",
			wc.opcode, wc.byte_len, hp_wc_status_name(wc.status));
	ctl_send(r, CTL_READY, nb);
	free(b);
}

/* ---- client --------------------------------------------------------------- */

static void post_send(struct res *r, const struct hp_info *peer, const struct batch *b,
		      unsigned int i)
{
	static const enum ibv_wr_opcode wr_op[OP_NR] = {
	    [OP_SEND] = IBV_WR_SEND,
	    [OP_WRITE] = IBV_WR_RDMA_WRITE,
	    [OP_WRITE_IMM] = IBV_WR_RDMA_WRITE_WITH_IMM,
	    [OP_READ] = IBV_WR_RDMA_READ,
	};
	const struct msg *m = &b->m[i];
	struct ibv_sge sg = {.addr = (uintptr_t)(r->buf + m->off), .length = m->len,
			     .lkey = r->mr->lkey};
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = i;
	wr.sg_list = &sg;
	wr.num_sge = 1;
	wr.opcode = wr_op[b->op];
	if (b->op == OP_WRITE_IMM)
		wr.imm_data = htonl((uint32_t)m->seq);
	if (b->op != OP_SEND) {
		wr.wr.rdma.remote_addr = peer->addr + m->off;
		wr.wr.rdma.rkey = peer->rkey;
	}
	if (ibv_post_send(r->qp, &wr, &bad))
		hp_fail("ibv_post_send %s message %llu: %s", op_names[b->op],
			(unsigned long long)m->seq, strerror(errno));
}

static void client_batch(struct res *r, const struct spec *s, const struct hp_info *peer,
			 const struct batch *b, unsigned int depth)
{
	static const enum ibv_wc_opcode wc_op[OP_NR] = {
	    [OP_SEND] = IBV_WC_SEND,
	    [OP_WRITE] = IBV_WC_RDMA_WRITE,
	    [OP_WRITE_IMM] = IBV_WC_RDMA_WRITE,
	    [OP_READ] = IBV_WC_RDMA_READ,
	};
	unsigned int posted = 0, done = 0, i;
	struct ibv_wc wc;

	if (b->op == OP_READ) {
		memset(r->buf, POISON, b->m[b->n - 1].off + b->m[b->n - 1].len);
	} else {
		for (i = 0; i < b->n; i++) {
			pattern_fill(r->buf + b->m[i].off, b->op, b->m[i].seq, b->m[i].len);
			if ((long long)b->m[i].seq == s->corrupt)
				r->buf[b->m[i].off + b->m[i].len / 2] ^= 1;
		}
	}
	while (done < b->n) {
		while (posted < b->n && posted - done < depth)
			post_send(r, peer, b, posted++);
		if (next_wc(r, &wc, 0))
			hp_fail("%s message %llu: no completion before the deadline",
				op_names[b->op], (unsigned long long)b->m[done].seq);
		if (wc.status != IBV_WC_SUCCESS)
			hp_fail("%s message %llu: completed with %s (%s)", op_names[b->op],
				(unsigned long long)b->m[wc.wr_id < b->n ? wc.wr_id : done].seq,
				hp_wc_status_name(wc.status), ibv_wc_status_str(wc.status));
		if (wc.wr_id != done || wc.opcode != wc_op[b->op])
			hp_fail("%s: completion of work request %llu opcode %d, expected %u "
				"opcode %d",
				op_names[b->op], (unsigned long long)wc.wr_id, wc.opcode, done,
				wc_op[b->op]);
		if (b->op == OP_READ)
			check_msg(r, OP_READ, &b->m[done], r->buf + b->m[done].off);
		done++;
	}
}

static void run_client(struct res *r, const struct spec *s, const struct hp_info *peer,
		       unsigned int depth, const char *until)
{
	struct walker w;
	struct batch *b = malloc(sizeof(*b));
	uint32_t nb = 0;
	bool again;

	if (!b)
		hp_fail("out of memory");
	do {
		walker_start(&w, s, peer->len);
		while (next_batch(&w, b)) {
			ctl_recv(r, nb);
			client_batch(r, s, peer, b, depth);
			ctl_send(r, CTL_DONE, nb);
			nb++;
		}
		r->rounds++;
		again = until && access(until, F_OK) != 0;
		if (until)
			ctl_send(r, again ? CTL_AGAIN : CTL_END, nb);
	} while (again);
	/* the server's word on the last batch (and on stray receives) */
	ctl_recv(r, nb);
	free(b);
}

int main(int argc, char **argv)
{
	struct opts o;
	struct spec s;
	struct res r;
	struct hp_info me, peer;
	struct hp_path path;
	char spec[SPEC_LEN];
	size_t region = REGION_MIN;
	unsigned int i, depth;
	int lsock = -1, err;
	int64_t t0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	parse(argc, argv, &o);
	memset(&r, 0, sizeof(r));
	r.end = hp_now_us() + (int64_t)o.secs * 1000000;
	r.ctx = hp_open(o.dev);
	if (o.host) {
		r.sock = hp_connect(o.host, o.port, o.secs);
		memcpy(spec, o.spec, sizeof(spec));
		if (hp_io(r.sock, spec, sizeof(spec), 1, o.secs))
			hp_fail("the server closed the TCP connection");
	} else {
		lsock = hp_listen(o.port);
		printf("listening on port %s\n", o.port);
		r.sock = hp_accept(lsock, o.secs);
		if (hp_io(r.sock, spec, sizeof(spec), 0, o.secs))
			hp_fail("the client closed the TCP connection");
		spec[SPEC_LEN - 1] = 0;
	}
	if (parse_spec(spec, &s))
		hp_fail("bad -o / -s: %s", spec);
	for (i = 0; i < s.nsizes; i++)
		if (s.size[i] > region)
			region = s.size[i];
	setup(&r, &o, region);

	memset(&me, 0, sizeof(me));
	me.qpn = r.qp->qp_num;
	me.psn = hp_random_psn();
	me.rkey = r.mr->rkey;
	me.addr = (uintptr_t)r.buf;
	me.len = r.len;
	/* responder resources for the client's READs (IBA 9.4.4) */
	me.arg = (uint32_t)(r.dattr.max_qp_rd_atom < 16 ? r.dattr.max_qp_rd_atom : 16);
	memcpy(me.gid, r.gid.raw, 16);
	me.lid = hp_port_lid(r.ctx, 1);
	hp_exchange(r.sock, &me, &peer, o.secs);
	if (peer.len != r.len)
		hp_fail("the two sides' regions differ (%llu, %zu bytes)",
			(unsigned long long)peer.len, r.len);

	memset(&path, 0, sizeof(path));
	path.port = 1;
	path.sgid_index = r.gid_index;
	memcpy(path.dgid.raw, peer.gid, 16);
	path.dlid = peer.lid; /* an InfiniBand port: by LID */
	path.mtu = o.mtu;
	path.dqpn = peer.qpn;
	path.rq_psn = peer.psn;
	path.sq_psn = me.psn;
	path.timeout = o.timeout;
	path.retry_cnt = o.retry_cnt;
	path.rnr_retry = 7;
	path.min_rnr_timer = 1;
	path.max_dest_rd_atomic = (uint8_t)me.arg;
	path.max_rd_atomic = (uint8_t)(peer.arg < (uint32_t)r.dattr.max_qp_init_rd_atom
					   ? peer.arg
					   : (uint32_t)r.dattr.max_qp_init_rd_atom);
	if (!path.max_rd_atomic)
		path.max_rd_atomic = 1;
	path.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	err = hp_qp_modify(r.qp, &path, IBV_QPS_RTS);
	if (err)
		hp_fail("modify QP to RTS: %s", strerror(err));
	hp_sync(r.sock, o.secs);

	t0 = hp_now_us();
	depth = o.depth;
	if (o.host)
		run_client(&r, &s, &peer, depth, o.until);
	else
		run_server(&r, &s);
	for (i = 0; i < s.nops; i++) {
		unsigned int op = s.ops[i];

		if ((op == OP_READ) == !!o.host)
			printf("checked %s messages=%llu bytes=%llu\n", op_names[op],
			       (unsigned long long)r.checked[op], (unsigned long long)r.bytes[op]);
	}
	if (o.host && o.until)
		printf("client mtu=%u ops=%u rounds=%u elapsed_ms=%lld\n", 128u << o.mtu, s.nops,
		       r.rounds, (long long)((hp_now_us() - t0) / 1000));
	else if (o.host)
		printf("client mtu=%u ops=%u elapsed_ms=%lld\n", 128u << o.mtu, s.nops,
		       (long long)((hp_now_us() - t0) / 1000));
	hp_sync(r.sock, o.secs);
	ibv_destroy_qp(r.qp);
	ibv_dereg_mr(r.mr);
	ibv_destroy_cq(r.cq);
	ibv_destroy_comp_channel(r.ch);
	ibv_dealloc_pd(r.pd);
	ibv_close_device(r.ctx);
	close(r.sock);
	if (lsock >= 0)
		close(lsock);
	free(r.buf);
	printf("ok\n");
	return 0;
}
