/*
 * Data-path verbs as an application sees them, within one process: pairs of
 * QPs on two device contexts (each context its own PD, as two programs
 * would have), connected to each other through GID 0 of the port. Covers
 * every operation of RC, UC and UD, inline data, several SGEs, signaled and
 * unsignaled WQEs, solicited events on a completion channel, the extended
 * CQ and the ibv_wr_* API, SRQs with their limit event, the error semantics
 * of IBA 9.7.5.2 / 10.8.3 (remote access, local protection, RNR retries,
 * flushing), the atomicity of fetch-and-add between threads, and one QP
 * with its CQs shared by threads (each message once, each send completed).
 *
 * Only the public <infiniband/verbs.h> API is used.
 */
#include "harness.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/epoll.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define BUFSZ ((size_t)(2u << 20))
#define QKEY 0x11223344u
#define ALL_REMOTE (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)
#define MR_ALL (IBV_ACCESS_LOCAL_WRITE | ALL_REMOTE)

static struct ibv_context *ctx_a, *ctx_b;
static union ibv_gid gid0;

enum {
	SIDE_CHAN = 1,    /* receive CQ with a completion channel */
	SIDE_CQEX = 2,    /* receive CQ created with ibv_create_cq_ex */
	SIDE_NOQP = 4,    /* resources only */
	SIDE_QPEX = 8,    /* QP created with ibv_create_qp_ex and send_ops_flags */
	SIDE_UNSIG = 16,  /* sq_sig_all = 0 (default is 1) */
};

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
	struct ibv_cq_ex *rcqx;
	struct ibv_comp_channel *ch;
	struct ibv_qp *qp;
	uint8_t *buf;
	struct ibv_mr *mr;
};

struct conn_opts {
	int qp_access;       /* responder access flags of the QP */
	uint8_t rnr_retry;
	uint8_t min_rnr_timer;
};

static const struct conn_opts def_opts = { ALL_REMOTE, 7, 1 };

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void pattern(uint8_t *p, size_t n, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1;
	size_t i;

	for (i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p[i] = (uint8_t)x;
	}
}

static struct ibv_qp *side_qp(struct side *s, enum ibv_qp_type type, struct ibv_srq *srq,
			      int flags)
{
	struct ibv_qp_init_attr_ex ia;

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = s->scq;
	ia.recv_cq = s->rcq;
	ia.srq = srq;
	ia.qp_type = type;
	ia.sq_sig_all = !(flags & SIDE_UNSIG);
	ia.cap.max_send_wr = 64;
	ia.cap.max_recv_wr = srq ? 0 : 64;
	ia.cap.max_send_sge = 4;
	ia.cap.max_recv_sge = srq ? 0 : 4;
	ia.cap.max_inline_data = 256;
	ia.comp_mask = IBV_QP_INIT_ATTR_PD;
	ia.pd = s->pd;
	if (flags & SIDE_QPEX) {
		ia.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		ia.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
				    IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ |
				    IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	}
	return ibv_create_qp_ex(s->ctx, &ia);
}

static void side_init(struct side *s, struct ibv_context *ctx, enum ibv_qp_type type,
		      int mr_access, int flags)
{
	memset(s, 0, sizeof(*s));
	s->ctx = ctx;
	s->pd = ibv_alloc_pd(ctx);
	CHECK(s->pd != NULL);
	s->scq = ibv_create_cq(ctx, 256, NULL, NULL, 0);
	CHECK(s->scq != NULL);
	if (flags & SIDE_CHAN) {
		s->ch = ibv_create_comp_channel(ctx);
		CHECK(s->ch != NULL);
	}
	if (flags & SIDE_CQEX) {
		struct ibv_cq_init_attr_ex ca;

		memset(&ca, 0, sizeof(ca));
		ca.cqe = 256;
		ca.channel = s->ch;
		ca.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM |
			      IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP |
			      IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |
			      IBV_WC_EX_WITH_DLID_PATH_BITS;
		s->rcqx = ibv_create_cq_ex(ctx, &ca);
		CHECK(s->rcqx != NULL);
		s->rcq = ibv_cq_ex_to_cq(s->rcqx);
	} else {
		s->rcq = ibv_create_cq(ctx, 256, (void *)s, s->ch, 0);
		CHECK(s->rcq != NULL);
	}
	s->buf = aligned_alloc(4096, BUFSZ);
	CHECK(s->buf != NULL);
	memset(s->buf, 0xee, BUFSZ);
	s->mr = ibv_reg_mr(s->pd, s->buf, BUFSZ, mr_access);
	CHECK(s->mr != NULL);
	if (!(flags & SIDE_NOQP)) {
		s->qp = side_qp(s, type, NULL, flags);
		CHECK(s->qp != NULL);
	}
}

static void side_fini(struct side *s)
{
	if (s->qp)
		CHECK_EQ(ibv_destroy_qp(s->qp), 0);
	CHECK_EQ(ibv_dereg_mr(s->mr), 0);
	free(s->buf);
	CHECK_EQ(ibv_destroy_cq(s->rcq), 0);
	CHECK_EQ(ibv_destroy_cq(s->scq), 0);
	if (s->ch)
		CHECK_EQ(ibv_destroy_comp_channel(s->ch), 0);
	CHECK_EQ(ibv_dealloc_pd(s->pd), 0);
}

/* RESET -> INIT -> RTR -> RTS with the masks of ibv_modify_qp(3). */
static void qp_up(struct ibv_qp *qp, uint32_t dqpn, const struct conn_opts *o)
{
	struct ibv_qp_attr a;
	int t = qp->qp_type;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.pkey_index = 0;
	if (t == IBV_QPT_UD) {
		a.qkey = QKEY;
		CHECK_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
						       IBV_QP_PORT | IBV_QP_QKEY), 0);
	} else {
		a.qp_access_flags = t == IBV_QPT_UC ? o->qp_access & IBV_ACCESS_REMOTE_WRITE
						    : o->qp_access;
		CHECK_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
						       IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0);
	}

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	if (t == IBV_QPT_UD) {
		CHECK_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	} else {
		int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			   IBV_QP_RQ_PSN;

		a.path_mtu = IBV_MTU_1024;
		a.dest_qp_num = dqpn;
		a.rq_psn = 0;
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = gid0;
		a.ah_attr.grh.sgid_index = 0;
		a.ah_attr.grh.hop_limit = 1;
		a.ah_attr.port_num = 1;
		if (t == IBV_QPT_RC) {
			a.max_dest_rd_atomic = 16;
			a.min_rnr_timer = o->min_rnr_timer;
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		}
		CHECK_EQ(ibv_modify_qp(qp, &a, mask), 0);
	}

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	if (t == IBV_QPT_RC) {
		a.timeout = 14;
		a.retry_cnt = 7;
		a.rnr_retry = o->rnr_retry;
		a.max_rd_atomic = 16;
		CHECK_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
						       IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
						       IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC), 0);
	} else {
		CHECK_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
	}
}

static void connect2(struct ibv_qp *a, struct ibv_qp *b, const struct conn_opts *oa,
		     const struct conn_opts *ob)
{
	qp_up(a, b->qp_num, oa);
	qp_up(b, a->qp_num, ob);
}

static void pair_up(struct side *a, struct side *b, enum ibv_qp_type type, int fa, int fb)
{
	side_init(a, ctx_a, type, MR_ALL, fa);
	side_init(b, ctx_b, type, MR_ALL, fb);
	connect2(a->qp, b->qp, &def_opts, &def_opts);
}

static void pair_down(struct side *a, struct side *b)
{
	side_fini(a);
	side_fini(b);
}

/* Wait up to ms for one completion; returns 1 or 0. */
static int poll1(struct ibv_cq *cq, struct ibv_wc *wc, int ms)
{
	uint64_t end = now_ms() + (uint64_t)ms;
	int n;

	for (;;) {
		n = ibv_poll_cq(cq, 1, wc);
		if (n != 0)
			return n;
		if (now_ms() > end)
			return 0;
		sched_yield();
	}
}

#define WAIT_WC(cq, wc) CHECK_EQ(poll1((cq), &(wc), 3000), 1)
#define NO_WC(cq, wc) CHECK_EQ(poll1((cq), &(wc), 100), 0)
#define CHECK_WC(wc, id, st, op)                                               \
	do {                                                                   \
		CHECK_EQ((wc).status, (st));                                   \
		CHECK_EQ((wc).wr_id, (id));                                    \
		if ((st) == IBV_WC_SUCCESS)                                    \
			CHECK_EQ((wc).opcode, (op));                           \
	} while (0)

static int post_recv(struct ibv_qp *qp, uint64_t id, void *addr, uint32_t len, uint32_t lkey)
{
	struct ibv_sge sg = { .addr = (uintptr_t)addr, .length = len, .lkey = lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sg, .num_sge = 1 }, *bad;

	return ibv_post_recv(qp, &wr, &bad);
}

static int post_send(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t id, int flags,
		     void *addr, uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey,
		     uint32_t imm)
{
	struct ibv_sge sg = { .addr = (uintptr_t)addr, .length = len, .lkey = lkey };
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = id;
	wr.opcode = op;
	wr.send_flags = flags;
	wr.sg_list = &sg;
	wr.num_sge = 1;
	wr.imm_data = htonl(imm);
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(qp, &wr, &bad);
}

static int post_atomic(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t id, void *res,
		       uint32_t lkey, uint64_t raddr, uint32_t rkey, uint64_t cmp_add,
		       uint64_t swap)
{
	struct ibv_sge sg = { .addr = (uintptr_t)res, .length = 8, .lkey = lkey };
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = id;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &sg;
	wr.num_sge = 1;
	wr.wr.atomic.remote_addr = raddr;
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = cmp_add;
	wr.wr.atomic.swap = swap;
	return ibv_post_send(qp, &wr, &bad);
}

static int qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		return -1;
	return a.qp_state;
}

static uint64_t raddr(struct side *s, size_t off)
{
	return (uintptr_t)s->buf + off;
}

/* ---- RC ------------------------------------------------------------------ */

TEST(rc_send)
{
	struct side a, b;
	struct ibv_wc wc;
	uint8_t *exp = malloc(1 << 20);

	CHECK(exp != NULL);
	pair_up(&a, &b, IBV_QPT_RC, 0, 0);
	pattern(a.buf, 1000, 1);
	CHECK_EQ(post_recv(b.qp, 0xb1, b.buf, 4096, b.mr->lkey), 0);
	CHECK_EQ(post_send(a.qp, IBV_WR_SEND, 0xa1, IBV_SEND_SIGNALED, a.buf, 1000,
			   a.mr->lkey, 0, 0, 0), 0);
	WAIT_WC(a.scq, wc);
	CHECK_WC(wc, 0xa1, IBV_WC_SUCCESS, IBV_WC_SEND);
	CHECK_EQ(wc.qp_num, a.qp->qp_num);
	WAIT_WC(b.rcq, wc);
	CHECK_WC(wc, 0xb1, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, 1000);
	CHECK_EQ(wc.qp_num, b.qp->qp_num);
	CHECK_EQ(wc.wc_flags & IBV_WC_WITH_IMM, 0);
	CHECK_MEM(b.buf, a.buf, 1000);
	CHECK_EQ(b.buf[1000], 0xee);
	NO_WC(b.rcq, wc);

	/* 1 MiB, many pages */
	pattern(a.buf, 1 << 20, 2);
	memcpy(exp, a.buf, 1 << 20);
	CHECK_EQ(post_recv(b.qp, 0xb2, b.buf + 8, 1 << 20, b.mr->lkey), 0);
	CHECK_EQ(post_send(a.qp, IBV_WR_SEND, 0xa2, 0, a.buf, 1 << 20, a.mr->lkey, 0, 0, 0), 0);
	WAIT_WC(a.scq, wc);
	CHECK_WC(wc, 0xa2, IBV_WC_SUCCESS, IBV_WC_SEND);
	WAIT_WC(b.rcq, wc);
	CHECK_WC(wc, 0xb2, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, 1 << 20);
	CHECK_MEM(b.buf + 8, exp, 1 << 20);

	/* zero-length send */
	CHECK_EQ(post_recv(b.qp, 0xb3, b.buf, 64, b.mr->lkey), 0);
	{
		struct ibv_send_wr wr = { .wr_id = 0xa3, .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED }, *bad;

		CHECK_EQ(ibv_post_send(a.qp, &wr, &bad), 0);
	}
	WAIT_WC(a.scq, wc);
	CHECK_WC(wc, 0xa3, IBV_WC_SUCCESS, IBV_WC_SEND);
	WAIT_WC(b.rcq, wc);
	CHECK_WC(wc, 0xb3, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, 0);
	/* a receive too small: local length error at the responder */
	CHECK_EQ(post_recv(b.qp, 0xb4, b.buf, 10, b.mr->lkey), 0);
	CHECK_EQ(post_send(a.qp, IBV_WR_SEND, 0xa4, 0, a.buf, 11, a.mr->lkey, 0, 0, 0), 0);
	WAIT_WC(b.rcq, wc);
	CHECK_EQ(wc.wr_id, 0xb4);
	CHECK_EQ(wc.status, IBV_WC_LOC_LEN_ERR);
	WAIT_WC(a.scq, wc);
	CHECK_EQ(wc.wr_id, 0xa4);
	CHECK_NE(wc.status, IBV_WC_SUCCESS);
	free(exp);
	pair_down(&a, &b);
}

/* One ping-pong step of rc_pingpong_carry: from sends 8 bytes of pattern
 * k, to takes them into the receive WQE it posted n-th (a ring of 4
 * buffers at to->buf + 4096) and posts the n + 4-th into the same slot. */
static void carry_step(struct side *from, struct side *to, uint64_t to_base, uint32_t *n,
		       uint8_t k)
{
	struct ibv_wc wc;
	uint8_t *slot = to->buf + 4096 + (*n % 4) * 64;

	memset(from->buf, k, 8);
	CHECK_EQ(post_send(from->qp, IBV_WR_SEND, 0x5000 + k, IBV_SEND_SIGNALED, from->buf, 8,
			   from->mr->lkey, 0, 0, 0), 0);
	WAIT_WC(from->scq, wc);
	CHECK_WC(wc, 0x5000 + k, IBV_WC_SUCCESS, IBV_WC_SEND);
	WAIT_WC(to->rcq, wc);
	CHECK_WC(wc, to_base + *n, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, 8);
	CHECK_EQ(wc.wc_flags & IBV_WC_WITH_IMM, 0);
	CHECK_EQ(wc.vendor_err, 0);
	CHECK_EQ(wc.src_qp, from->qp->qp_num);
	for (int i = 0; i < 8; i++)
		CHECK_EQ(slot[i], k);
	CHECK_EQ(slot[8], 0xee); /* nothing beyond the message */
	memset(slot, 0xee, 64);
	CHECK_EQ(post_recv(to->qp, to_base + *n + 4, slot, 64, to->mr->lkey), 0);
	(*n)++;
}

/* Same host, the receive WQE a SEND's completion carries for the answer
 * (sof_cqe.carry): a ping-pong, then bursts one way and the other (the
 * carried WQE is taken once, the others from the ring), then a SEND with
 * immediate (no carry: its imm_data arrives). Each message lands in the
 * WQE it should, in order, with its wr_id. */
TEST(rc_pingpong_carry)
{
	struct side a, b;
	struct ibv_wc wc;
	uint32_t na = 0, nb = 0;
	uint8_t k = 1;

	pair_up(&a, &b, IBV_QPT_RC, 0, 0);
	memset(a.buf + 4096, 0xee, 4 * 64);
	memset(b.buf + 4096, 0xee, 4 * 64);
	for (uint32_t i = 0; i < 4; i++) {
		CHECK_EQ(post_recv(a.qp, 0xa000 + i, a.buf + 4096 + i * 64, 64, a.mr->lkey), 0);
		CHECK_EQ(post_recv(b.qp, 0xb000 + i, b.buf + 4096 + i * 64, 64, b.mr->lkey), 0);
	}
	for (int i = 0; i < 200; i++, k++) {
		if (i % 2 == 0)
			carry_step(&a, &b, 0xb000, &nb, k);
		else
			carry_step(&b, &a, 0xa000, &na, k);
	}
	for (int i = 0; i < 11; i++, k++)
		carry_step(&a, &b, 0xb000, &nb, k);
	for (int i = 0; i < 11; i++, k++)
		carry_step(&b, &a, 0xa000, &na, k);
	for (int i = 0; i < 9; i++, k++)
		carry_step(i % 3 ? &a : &b, i % 3 ? &b : &a, i % 3 ? 0xb000 : 0xa000,
			   i % 3 ? &nb : &na, k);
	CHECK_EQ(post_send(a.qp, IBV_WR_SEND_WITH_IMM, 0xa9, IBV_SEND_SIGNALED, a.buf, 8,
			   a.mr->lkey, 0, 0, 0x1234567), 0);
	WAIT_WC(a.scq, wc);
	WAIT_WC(b.rcq, wc);
	CHECK_WC(wc, 0xb000 + nb, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK(wc.wc_flags & IBV_WC_WITH_IMM);
	CHECK_EQ(ntohl(wc.imm_data), 0x1234567);
	NO_WC(a.rcq, wc);
	pair_down(&a, &b);
}

/* The short way of a small SEND (same_host.c sofv_send_fast), taken once
 * the sender holds the WQE its peer carried, and a case it leaves to the
 * general way: an inline SEND from an unregistered buffer that is
 * overwritten at once and an unsignaled SEND land intact in the carried
 * WQEs, with their wr_ids; a carried WQE too short for the message fails
 * as the general way fails it (b LOC_LEN_ERR in that WQE, a
 * REM_INV_REQ_ERR). */
TEST(rc_carry_short_way)
{
	struct side a, b;
	struct ibv_wc wc;
	uint8_t src[8];

	side_init(&a, ctx_a, IBV_QPT_RC, MR_ALL, 0);
	side_init(&b, ctx_b, IBV_QPT_RC, MR_ALL, SIDE_UNSIG);
	connect2(a.qp, b.qp, &def_opts, &def_opts);
	memset(a.buf + 4096, 0xee, 256);
	memset(b.buf + 4096, 0xee, 256);
	CHECK_EQ(post_recv(a.qp, 0xa0, a.buf + 4096, 64, a.mr->lkey), 0);
	CHECK_EQ(post_recv(b.qp, 0xb0, b.buf + 4096, 64, b.mr->lkey), 0);
	/* a -> b carries a's 0xa0 to b */
	memset(a.buf, 1, 8);
	CHECK_EQ(post_send(a.qp, IBV_WR_SEND, 1, IBV_SEND_SIGNALED, a.buf, 8, a.mr->lkey, 0, 0,
			   0), 0);
	WAIT_WC(a.scq, wc);
	CHECK_WC(wc, 1, IBV_WC_SUCCESS, IBV_WC_SEND);
	WAIT_WC(b.rcq, wc);
	CHECK_WC(wc, 0xb0, IBV_WC_SUCCESS, IBV_WC_RECV);
	/* b -> a into the carried 0xa0, carrying b's 0xb1 */
	CHECK_EQ(post_recv(b.qp, 0xb1, b.buf + 4096 + 64, 64, b.mr->lkey), 0);
	memset(b.buf, 2, 8);
	CHECK_EQ(post_send(b.qp, IBV_WR_SEND, 2, IBV_SEND_SIGNALED, b.buf, 8, b.mr->lkey, 0, 0,
			   0), 0);
	WAIT_WC(b.scq, wc);
	CHECK_WC(wc, 2, IBV_WC_SUCCESS, IBV_WC_SEND);
	WAIT_WC(a.rcq, wc);
	CHECK_WC(wc, 0xa0, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, 8);
	CHECK_EQ(a.buf[4096 + 7], 2);
	/* inline, unregistered, overwritten after the post: into 0xb1 */
	CHECK_EQ(post_recv(a.qp, 0xa1, a.buf + 4096 + 64, 64, a.mr->lkey), 0);
	memset(src, 3, sizeof(src));
	CHECK_EQ(post_send(a.qp, IBV_WR_SEND, 3, IBV_SEND_SIGNALED | IBV_SEND_INLINE, src, 8, 0, 0,
			   0, 0), 0);
	memset(src, 0x55, sizeof(src));
	WAIT_WC(a.scq, wc);
	CHECK_WC(wc, 3, IBV_WC_SUCCESS, IBV_WC_SEND);
	WAIT_WC(b.rcq, wc);
	CHECK_WC(wc, 0xb1, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, 8);
	CHECK_EQ(wc.src_qp, a.qp->qp_num);
	for (int i = 0; i < 8; i++)
		CHECK_EQ(b.buf[4096 + 64 + i], 3);
	CHECK_EQ(b.buf[4096 + 64 + 8], 0xee);
	/* unsignaled b -> a into 0xa1, carrying b's short 0xb2 */
	CHECK_EQ(post_recv(b.qp, 0xb2, b.buf + 4096 + 128, 4, b.mr->lkey), 0);
	memset(b.buf, 4, 8);
	CHECK_EQ(post_send(b.qp, IBV_WR_SEND, 4, 0, b.buf, 8, b.mr->lkey, 0, 0, 0), 0);
	WAIT_WC(a.rcq, wc);
	CHECK_WC(wc, 0xa1, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(a.buf[4096 + 64 + 7], 4);
	NO_WC(b.scq, wc);
	/* 8 bytes into the carried 4: the general way's length error */
	CHECK_EQ(post_send(a.qp, IBV_WR_SEND, 5, IBV_SEND_SIGNALED, a.buf, 8, a.mr->lkey, 0, 0,
			   0), 0);
	WAIT_WC(a.scq, wc);
	CHECK_WC(wc, 5, IBV_WC_REM_INV_REQ_ERR, IBV_WC_SEND);
	WAIT_WC(b.rcq, wc);
	CHECK_EQ(wc.wr_id, 0xb2);
	CHECK_EQ(wc.status, IBV_WC_LOC_LEN_ERR);
	CHECK_EQ(b.buf[4096 + 128], 0xee);
	pair_down(&a, &b);
}

TEST(rc_send_imm)
{
	struct side a, b;
	struct ibv_wc wc;

	pair_up(&a, &b, IBV_QPT_RC, 0, 0);
	pattern(a.buf, 300, 3);
	CHECK_EQ(post_recv(b.qp, 7, b.buf, 4096, b.mr->lkey), 0);
	CHECK_EQ(post_send(a.qp, IBV_WR_SEND_WITH_IMM, 8, 0, a.buf, 300, a.mr->lkey, 0, 0,
			   0x12345678), 0);
	WAIT_WC(a.scq, wc);
	CHECK_WC(wc, 8, IBV_WC_SUCCESS, IBV_WC_SEND);
	WAIT_WC(b.rcq, wc);
	CHECK_WC(wc, 7, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK(wc.wc_flags & IBV_WC_WITH_IMM);
	CHECK_EQ(ntohl(wc.imm_data), 0x12345678);
	CHECK_EQ(wc.byte_len, 300);
	CHECK_MEM(b.buf, a.buf, 300);
	pair_down(&a, &b);
}

TEST(rc_write)
{
	struct side a, b;
	struct ibv_wc wc;

	pair_up(&a, &b, IBV_QPT_RC, 0, 0);
	pattern(a.buf, 1 << 20, 4);
	CHECK_EQ(post_send(a.qp, IBV_WR_RDMA_WRITE, 9, 0, a.buf + 3, (1 << 20) - 3,
			   a.mr->lkey, raddr(&b, 4096 + 5), b.mr->rkey, 0), 0);
	WAIT_WC(a.scq, wc);
	CHECK_WC(wc, 9, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK_MEM(b.buf + 4096 + 5, a.buf + 3, (1 << 20) - 3);
	CHECK_EQ(b.buf[4096 + 4], 0xee);
	CHECK_EQ(b.buf[4096 + 5 + (1 << 20) - 3], 0xee);
	NO_WC(b.rcq, wc);
	/* a write to the last byte of the region */
	a.buf[0] = 0x42;
	CHECK_EQ(post_send(a.qp, IBV_WR_RDMA_WRITE, 10, 0, a.buf, 1, a.mr->lkey,
			   raddr(&b, BUFSZ - 1), b.mr->rkey, 0), 0);
	WAIT_WC(a.scq, wc);
	CHECK_WC(wc, 10, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK_EQ(b.buf[BUFSZ - 1], 0x42);
	pair_down(&a, &b);
}

TEST(rc_write_imm)
{
	struct side a, b;
	struct ibv_recv_wr rwr = { .wr_id = 77, .num_sge = 0 }, *rbad;
	struct ibv_wc wc;

	pair_up(&a, &b, IBV_QPT_RC, 0, 0);
	pattern(a.buf, 5000, 5);
	CHECK_EQ(ibv_post_recv(b.qp, &rwr, &rbad), 0);
	CHECK_EQ(post_send(a.qp, IBV_WR_RDMA_WRITE_WITH_IMM, 11, 0, a.buf, 5000, a.mr->lkey,
			   raddr(&b, 100), b.mr->rkey, 0xdeadbeef), 0);
	WAIT_WC(a.scq, wc);
	CHECK_WC(wc, 11, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	WAIT_WC(b.rcq, wc);
	CHECK_WC(wc, 77, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM);
	CHECK(wc.wc_flags & IBV_WC_WITH_IMM);
	CHECK_EQ(ntohl(wc.imm_data), 0xdeadbeef);
	CHECK_EQ(wc.byte_len, 5000);
	CHECK_EQ(wc.qp_num, b.qp->qp_num);
	CHECK_MEM(b.buf + 100, a.buf, 5000);
	pair_down(&a, &b);
}

TEST(rc_read)
{
	struct side a, b;
	struct ibv_wc wc;

	pair_up(&a, &b, IBV_QPT_RC, 0, 0);
	pattern(b.buf, 65536 + 7, 6);
	CHECK_EQ(post_send(a.qp, IBV_WR_RDMA_READ, 12, 0, a.buf + 1, 65536 + 7, a.mr->lkey,
			   raddr(&b, 0), b.mr->rkey, 0), 0);
	WAIT_WC(a.scq, wc);
	CHECK_WC(wc, 12, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
	CHECK_EQ(wc.byte_len, 65536 + 7);
	CHECK_MEM(a.buf + 1, b.buf, 65536 + 7);
	CHECK_EQ(a.buf[0], 0xee);
	CHECK_EQ(a.buf[65536 + 8], 0xee);
	NO_WC(b.rcq, wc);
	pair_down(&a, &b);
}

TEST(rc_atomics)
{
	struct side a, b;
	uint64_t *target, *res;
	struct ibv_wc wc;

	pair_up(&a, &b, IBV_QPT_RC, 0, 0);
	target = (uint64_t *)(b.buf + 4096);
	res = (uint64_t *)(a.buf + 64);
	*target = 100;
	*res = 0;
	/* compare matches: swap */
	CHECK_EQ(post_atomic(a.qp, IBV_WR_ATOMIC_CMP_AND_SWP, 13, res, a.mr->lkey,
			     (uintptr_t)target, b.mr->rkey, 100, 200), 0);
	WAIT_WC(a.scq, wc);
	CHECK_WC(wc, 13, IBV_WC_SUCCESS, IBV_WC_COMP_SWAP);
	CHECK_EQ(wc.byte_len, 8);
	CHECK_EQ(*res, 100);
	CHECK_EQ(*target, 200);
	/* compare fails: no swap, old value returned */
	CHECK_EQ(post_atomic(a.qp, IBV_WR_ATOMIC_CMP_AND_SWP, 14, res, a.mr->lkey,
			     (uintptr_t)target, b.mr->rkey, 100, 300), 0);
	WAIT_WC(a.scq, wc);
	CHECK_WC(wc, 14, IBV_WC_SUCCESS, IBV_WC_COMP_SWAP);
	CHECK_EQ(*res, 200);
	CHECK_EQ(*target, 200);
	/* fetch and add, with a carry across 32 bits */
	*target = 0xfffffffeull;
	CHECK_EQ(post_atomic(a.qp, IBV_WR_ATOMIC_FETCH_AND_ADD, 15, res, a.mr->lkey,
			     (uintptr_t)target, b.mr->rkey, 5, 0), 0);
	WAIT_WC(a.scq, wc);
	CHECK_WC(wc, 15, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD);
	CHECK_EQ(*res, 0xfffffffeull);
	CHECK_EQ(*target, 0x100000003ull);
	/* misaligned target: invalid request */
	CHECK_EQ(post_atomic(a.qp, IBV_WR_ATOMIC_FETCH_AND_ADD, 16, res, a.mr->lkey,
			     (uintptr_t)target + 4, b.mr->rkey, 1, 0), 0);
	WAIT_WC(a.scq, wc);
	CHECK_EQ(wc.wr_id, 16);
	CHECK_NE(wc.status, IBV_WC_SUCCESS);
	CHECK_EQ(*target, 0x100000003ull);
	pair_down(&a, &b);
}

TEST(rc_inline)
{
	struct side a, b;
	uint8_t src[200], exp[200];
	struct ibv_wc wc;

	pair_up(&a, &b, IBV_QPT_RC, 0, 0);
	pattern(src, sizeof(src), 7);
	memcpy(exp, src, sizeof(src));
	CHECK_EQ(post_recv(b.qp, 1, b.buf, 4096, b.mr->lkey), 0);
	/* not registered, lkey ignored */
	CHECK_EQ(post_send(a.qp, IBV_WR_SEND, 2, IBV_SEND_INLINE, src, sizeof(src), 0, 0, 0,
			   0), 0);
	memset(src, 0, sizeof(src));
	WAIT_WC(b.rcq, wc);
	CHECK_WC(wc, 1, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, sizeof(exp));
	CHECK_MEM(b.buf, exp, sizeof(exp));
	WAIT_WC(a.scq, wc);
	CHECK_WC(wc, 2, IBV_WC_SUCCESS, IBV_WC_SEND);
	/* inline RDMA write */
	pattern(src, sizeof(src), 8);
	memcpy(exp, src, sizeof(src));
	CHECK_EQ(post_send(a.qp, IBV_WR_RDMA_WRITE, 3, IBV_SEND_INLINE, src, sizeof(src), 0,
			   raddr(&b, 8192), b.mr->rkey, 0), 0);
	memset(src, 0, sizeof(src));
	WAIT_WC(a.scq, wc);
	CHECK_WC(wc, 3, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK_MEM(b.buf + 8192, exp, sizeof(exp));
	/* more than max_inline_data is refused at post time */
	{
		uint8_t big[4096];

		CHECK_NE(post_send(a.qp, IBV_WR_SEND, 4, IBV_SEND_INLINE, big, sizeof(big), 0,
				   0, 0, 0), 0);
	}
	NO_WC(a.scq, wc);
	pair_down(&a, &b);
}

TEST(rc_three_sges)
{
	struct side a, b;
	struct ibv_sge s[3], r[3];
	struct ibv_send_wr wr, *bad;
	struct ibv_recv_wr rwr, *rbad;
	uint8_t exp[407];
	struct ibv_wc wc;

	pair_up(&a, &b, IBV_QPT_RC, 0, 0);
	pattern(a.buf, 8192, 9);
	s[0] = (struct ibv_sge){ (uintptr_t)a.buf, 100, a.mr->lkey };
	s[1] = (struct ibv_sge){ (uintptr_t)a.buf + 1000, 300, a.mr->lkey };
	s[2] = (struct ibv_sge){ (uintptr_t)a.buf + 5000, 7, a.mr->lkey };
	memcpy(exp, a.buf, 100);
	memcpy(exp + 100, a.buf + 1000, 300);
	memcpy(exp + 400, a.buf + 5000, 7);
	r[0] = (struct ibv_sge){ (uintptr_t)b.buf, 50, b.mr->lkey };
	r[1] = (struct ibv_sge){ (uintptr_t)b.buf + 2000, 300, b.mr->lkey };
	r[2] = (struct ibv_sge){ (uintptr_t)b.buf + 8000, 100, b.mr->lkey };
	memset(&rwr, 0, sizeof(rwr));
	rwr.wr_id = 5;
	rwr.sg_list = r;
	rwr.num_sge = 3;
	CHECK_EQ(ibv_post_recv(b.qp, &rwr, &rbad), 0);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 6;
	wr.opcode = IBV_WR_SEND;
	wr.sg_list = s;
	wr.num_sge = 3;
	CHECK_EQ(ibv_post_send(a.qp, &wr, &bad), 0);
	WAIT_WC(b.rcq, wc);
	CHECK_WC(wc, 5, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, 407);
	CHECK_MEM(b.buf, exp, 50);
	CHECK_MEM(b.buf + 2000, exp + 50, 300);
	CHECK_MEM(b.buf + 8000, exp + 350, 57);
	CHECK_EQ(b.buf[8057], 0xee);
	CHECK_EQ(b.buf[50], 0xee);
	WAIT_WC(a.scq, wc);
	CHECK_WC(wc, 6, IBV_WC_SUCCESS, IBV_WC_SEND);

	/* RDMA WRITE gathering 3 SGEs into one remote range */
	wr.wr_id = 7;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = raddr(&b, 20000);
	wr.wr.rdma.rkey = b.mr->rkey;
	CHECK_EQ(ibv_post_send(a.qp, &wr, &bad), 0);
	WAIT_WC(a.scq, wc);
	CHECK_WC(wc, 7, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK_MEM(b.buf + 20000, exp, 407);

	/* RDMA READ scattering into 3 SGEs */
	memset(a.buf, 0, 8192);
	wr.wr_id = 8;
	wr.opcode = IBV_WR_RDMA_READ;
	CHECK_EQ(ibv_post_send(a.qp, &wr, &bad), 0);
	WAIT_WC(a.scq, wc);
	CHECK_WC(wc, 8, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
	CHECK_MEM(a.buf, exp, 100);
	CHECK_MEM(a.buf + 1000, exp + 100, 300);
	CHECK_MEM(a.buf + 5000, exp + 400, 7);
	CHECK_EQ(a.buf[100], 0);
	pair_down(&a, &b);
}

TEST(rc_unsignaled)
{
	struct side a, b;
	struct ibv_wc wc;
	int i;

	side_init(&a, ctx_a, IBV_QPT_RC, MR_ALL, SIDE_UNSIG);
	side_init(&b, ctx_b, IBV_QPT_RC, MR_ALL, 0);
	connect2(a.qp, b.qp, &def_opts, &def_opts);
	pattern(a.buf, 4096, 10);
	for (i = 0; i < 3; i++)
		CHECK_EQ(post_send(a.qp, IBV_WR_RDMA_WRITE, 100 + i, 0, a.buf + i * 1000, 1000,
				   a.mr->lkey, raddr(&b, i * 1000), b.mr->rkey, 0), 0);
	CHECK_EQ(post_send(a.qp, IBV_WR_RDMA_WRITE, 103, IBV_SEND_SIGNALED, a.buf + 3000,
			   1000, a.mr->lkey, raddr(&b, 3000), b.mr->rkey, 0), 0);
	WAIT_WC(a.scq, wc);
	CHECK_WC(wc, 103, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	NO_WC(a.scq, wc);
	CHECK_MEM(b.buf, a.buf, 4000);
	/* many unsignaled ones (more than the send queue holds) never fill it */
	for (i = 0; i < 500; i++) {
		int ret = post_send(a.qp, IBV_WR_RDMA_WRITE, 1000 + i,
				    (i % 50 == 49) ? IBV_SEND_SIGNALED : 0, a.buf, 8,
				    a.mr->lkey, raddr(&b, 0), b.mr->rkey, 0);

		CHECK_EQ(ret, 0);
		if (i % 50 == 49) {
			WAIT_WC(a.scq, wc);
			CHECK_WC(wc, 1000 + i, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
		}
	}
	NO_WC(a.scq, wc);
	pair_down(&a, &b);
}

TEST(rc_solicited_events)
{
	struct side a, b;
	struct ibv_cq *ecq;
	struct ibv_wc wc;
	struct pollfd pfd;
	void *ectx;
	int i;

	pair_up(&a, &b, IBV_QPT_RC, 0, SIDE_CHAN);
	pfd.fd = b.ch->fd;
	pfd.events = POLLIN;
	for (i = 0; i < 5; i++)
		CHECK_EQ(post_recv(b.qp, 50 + i, b.buf + i * 64, 64, b.mr->lkey), 0);
	pattern(a.buf, 64 * 5, 11);

	CHECK_EQ(ibv_req_notify_cq(b.rcq, 1), 0);
	/* an unsolicited completion does not wake a solicited-only arm */
	CHECK_EQ(post_send(a.qp, IBV_WR_SEND, 1, 0, a.buf, 64, a.mr->lkey, 0, 0, 0), 0);
	WAIT_WC(a.scq, wc);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_EQ(poll(&pfd, 1, 200), 0);
	/* a solicited one does */
	CHECK_EQ(post_send(a.qp, IBV_WR_SEND_WITH_IMM, 2, IBV_SEND_SOLICITED, a.buf + 64, 64,
			   a.mr->lkey, 0, 0, 42), 0);
	CHECK_EQ(poll(&pfd, 1, 1000), 1);
	CHECK(pfd.revents & POLLIN);
	CHECK_EQ(ibv_get_cq_event(b.ch, &ecq, &ectx), 0);
	CHECK(ecq == b.rcq);
	CHECK(ectx == (void *)&b);
	ibv_ack_cq_events(ecq, 1);
	CHECK_EQ(poll(&pfd, 1, 0), 0);
	WAIT_WC(b.rcq, wc);
	CHECK_WC(wc, 50, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_MEM(b.buf, a.buf, 64);
	WAIT_WC(b.rcq, wc);
	CHECK_WC(wc, 51, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(ntohl(wc.imm_data), 42);
	CHECK_MEM(b.buf + 64, a.buf + 64, 64);

	/* not armed: no event */
	CHECK_EQ(post_send(a.qp, IBV_WR_SEND, 3, IBV_SEND_SOLICITED, a.buf + 128, 64,
			   a.mr->lkey, 0, 0, 0), 0);
	CHECK_EQ(poll(&pfd, 1, 200), 0);
	WAIT_WC(b.rcq, wc);
	CHECK_WC(wc, 52, IBV_WC_SUCCESS, IBV_WC_RECV);

	/* armed for any completion: an unsolicited one wakes */
	CHECK_EQ(ibv_req_notify_cq(b.rcq, 0), 0);
	CHECK_EQ(post_send(a.qp, IBV_WR_SEND, 4, 0, a.buf + 192, 64, a.mr->lkey, 0, 0, 0), 0);
	CHECK_EQ(poll(&pfd, 1, 1000), 1);
	CHECK_EQ(ibv_get_cq_event(b.ch, &ecq, &ectx), 0);
	CHECK(ecq == b.rcq);
	ibv_ack_cq_events(ecq, 1);
	WAIT_WC(b.rcq, wc);
	CHECK_WC(wc, 53, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_MEM(b.buf + 192, a.buf + 192, 64);
	/* one event per arm */
	CHECK_EQ(post_send(a.qp, IBV_WR_SEND, 5, 0, a.buf, 64, a.mr->lkey, 0, 0, 0), 0);
	WAIT_WC(b.rcq, wc);
	CHECK_WC(wc, 54, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(poll(&pfd, 1, 100), 0);
	while (poll1(a.scq, &wc, 50))
		;
	pair_down(&a, &b);
}

/* A stale event (its CQ empty when read: the entry that fired the arm was
 * polled first) of a CQ polled through ibv_start_poll is dropped and the
 * arm given back with its type, so the next completion fires it: no event
 * is lost, and the dropped one is not counted (pair_down's ibv_destroy_cq
 * waits for every counted event's ack). An entry added after the arm fired
 * keeps the event; a CQ only ever read by ibv_poll_cq keeps its stale
 * events (see verbs/cq.c). */
TEST(channel_stale_event)
{
	struct side a, b;
	struct ibv_cq *ecq;
	struct ibv_wc wc;
	struct pollfd pfd;
	void *ectx;
	struct ibv_poll_cq_attr pa = { 0 };
	int i, fl;

	/* read by ibv_poll_cq only: the stale event is handed out */
	pair_up(&a, &b, IBV_QPT_RC, 0, SIDE_CHAN);
	CHECK_EQ(post_recv(b.qp, 1, b.buf, 64, b.mr->lkey), 0);
	CHECK_EQ(ibv_req_notify_cq(b.rcq, 0), 0);
	CHECK_EQ(post_send(a.qp, IBV_WR_SEND, 1, 0, a.buf, 64, a.mr->lkey, 0, 0, 0), 0);
	WAIT_WC(b.rcq, wc);
	CHECK_EQ(ibv_get_cq_event(b.ch, &ecq, &ectx), 0);
	ibv_ack_cq_events(ecq, 1);
	while (poll1(a.scq, &wc, 50))
		;
	pair_down(&a, &b);

	pair_up(&a, &b, IBV_QPT_RC, 0, SIDE_CHAN | SIDE_CQEX);
	CHECK_EQ(ibv_start_poll(b.rcqx, &pa), ENOENT);
	pfd.fd = b.ch->fd;
	pfd.events = POLLIN;
	fl = fcntl(b.ch->fd, F_GETFL);
	CHECK_EQ(fcntl(b.ch->fd, F_SETFL, fl | O_NONBLOCK), 0);
	for (i = 0; i < 8; i++)
		CHECK_EQ(post_recv(b.qp, 300 + i, b.buf + i * 64, 64, b.mr->lkey), 0);
	pattern(a.buf, 64 * 8, 13);

	/* armed for any completion: fired, polled, then the event is stale */
	CHECK_EQ(ibv_req_notify_cq(b.rcq, 0), 0);
	CHECK_EQ(post_send(a.qp, IBV_WR_SEND, 1, 0, a.buf, 64, a.mr->lkey, 0, 0, 0), 0);
	CHECK_EQ(poll(&pfd, 1, 1000), 1);
	WAIT_WC(b.rcq, wc);
	CHECK_WC(wc, 300, IBV_WC_SUCCESS, IBV_WC_RECV);
	errno = 0;
	CHECK_EQ(ibv_get_cq_event(b.ch, &ecq, &ectx), -1);
	CHECK_EQ(errno, EAGAIN);
	CHECK_EQ(poll(&pfd, 1, 0), 0);
	/* the arm is back: the next completion fires it */
	CHECK_EQ(post_send(a.qp, IBV_WR_SEND, 2, 0, a.buf + 64, 64, a.mr->lkey, 0, 0, 0), 0);
	CHECK_EQ(poll(&pfd, 1, 1000), 1);
	CHECK_EQ(ibv_get_cq_event(b.ch, &ecq, &ectx), 0);
	CHECK(ecq == b.rcq);
	ibv_ack_cq_events(ecq, 1);
	WAIT_WC(b.rcq, wc);
	CHECK_WC(wc, 301, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_MEM(b.buf + 64, a.buf + 64, 64);

	/* solicited-only: given back as solicited-only */
	CHECK_EQ(ibv_req_notify_cq(b.rcq, 1), 0);
	CHECK_EQ(post_send(a.qp, IBV_WR_SEND, 3, IBV_SEND_SOLICITED, a.buf + 128, 64,
			   a.mr->lkey, 0, 0, 0), 0);
	CHECK_EQ(poll(&pfd, 1, 1000), 1);
	WAIT_WC(b.rcq, wc);
	CHECK_WC(wc, 302, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(ibv_get_cq_event(b.ch, &ecq, &ectx), -1);
	CHECK_EQ(post_send(a.qp, IBV_WR_SEND, 4, 0, a.buf + 192, 64, a.mr->lkey, 0, 0, 0), 0);
	CHECK_EQ(poll(&pfd, 1, 200), 0);
	CHECK_EQ(post_send(a.qp, IBV_WR_SEND, 5, IBV_SEND_SOLICITED, a.buf + 256, 64,
			   a.mr->lkey, 0, 0, 0), 0);
	CHECK_EQ(poll(&pfd, 1, 1000), 1);
	CHECK_EQ(ibv_get_cq_event(b.ch, &ecq, &ectx), 0);
	ibv_ack_cq_events(ecq, 1);
	WAIT_WC(b.rcq, wc);
	CHECK_WC(wc, 303, IBV_WC_SUCCESS, IBV_WC_RECV);
	WAIT_WC(b.rcq, wc);
	CHECK_WC(wc, 304, IBV_WC_SUCCESS, IBV_WC_RECV);

	/* fired and polled, but another entry came after: the event stands
	 * (blocking channel: it must return at once) */
	CHECK_EQ(fcntl(b.ch->fd, F_SETFL, fl), 0);
	CHECK_EQ(ibv_req_notify_cq(b.rcq, 0), 0);
	CHECK_EQ(post_send(a.qp, IBV_WR_SEND, 6, 0, a.buf + 320, 64, a.mr->lkey, 0, 0, 0), 0);
	CHECK_EQ(poll(&pfd, 1, 1000), 1);
	WAIT_WC(b.rcq, wc);
	CHECK_WC(wc, 305, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(post_send(a.qp, IBV_WR_SEND, 7, 0, a.buf + 384, 64, a.mr->lkey, 0, 0, 0), 0);
	do /* an RC send completes after its receive */
		WAIT_WC(a.scq, wc);
	while (wc.wr_id != 7);
	CHECK_EQ(ibv_get_cq_event(b.ch, &ecq, &ectx), 0);
	ibv_ack_cq_events(ecq, 1);
	WAIT_WC(b.rcq, wc);
	CHECK_WC(wc, 306, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_MEM(b.buf + 384, a.buf + 384, 64);
	CHECK_EQ(poll(&pfd, 1, 0), 0);
	while (poll1(a.scq, &wc, 50))
		;
	pair_down(&a, &b);
}

TEST(channel_epoll)
{
	struct side a, b;
	struct epoll_event ev = { .events = EPOLLIN }, out;
	struct ibv_cq *ecq;
	struct ibv_wc wc;
	void *ectx;
	int ep;

	pair_up(&a, &b, IBV_QPT_RC, 0, SIDE_CHAN);
	ep = epoll_create1(0);
	CHECK(ep >= 0);
	ev.data.u64 = 0x1234;
	CHECK_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, b.ch->fd, &ev), 0);
	CHECK_EQ(post_recv(b.qp, 1, b.buf, 64, b.mr->lkey), 0);
	CHECK_EQ(ibv_req_notify_cq(b.rcq, 0), 0);
	CHECK_EQ(epoll_wait(ep, &out, 1, 100), 0);
	a.buf[0] = 0x77;
	CHECK_EQ(post_send(a.qp, IBV_WR_SEND, 2, 0, a.buf, 1, a.mr->lkey, 0, 0, 0), 0);
	CHECK_EQ(epoll_wait(ep, &out, 1, 1000), 1);
	CHECK_EQ(out.data.u64, 0x1234);
	CHECK(out.events & EPOLLIN);
	CHECK_EQ(ibv_get_cq_event(b.ch, &ecq, &ectx), 0);
	CHECK(ecq == b.rcq);
	ibv_ack_cq_events(ecq, 1);
	CHECK_EQ(epoll_wait(ep, &out, 1, 0), 0);
	WAIT_WC(b.rcq, wc);
	CHECK_WC(wc, 1, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(b.buf[0], 0x77);
	WAIT_WC(a.scq, wc);
	close(ep);
	pair_down(&a, &b);
}

TEST(cq_ex_poll)
{
	struct side a, b;
	struct ibv_poll_cq_attr pa = { 0 };
	struct ibv_wc wc;
	uint64_t end;
	int i, ret;

	pair_up(&a, &b, IBV_QPT_RC, 0, SIDE_CQEX);
	CHECK_EQ(ibv_start_poll(b.rcqx, &pa), ENOENT);
	pattern(a.buf, 3000, 12);
	for (i = 0; i < 3; i++)
		CHECK_EQ(post_recv(b.qp, 200 + i, b.buf + i * 1024, 1024, b.mr->lkey), 0);
	for (i = 0; i < 3; i++) {
		CHECK_EQ(post_send(a.qp, IBV_WR_SEND_WITH_IMM, i, 0, a.buf + i * 1000, 100 + i,
				   a.mr->lkey, 0, 0, 1000 + i), 0);
		WAIT_WC(a.scq, wc);
		CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	}
	end = now_ms() + 3000;
	while ((ret = ibv_start_poll(b.rcqx, &pa)) == ENOENT && now_ms() < end)
		sched_yield();
	CHECK_EQ(ret, 0);
	for (i = 0; i < 3; i++) {
		if (i) {
			ret = ibv_next_poll(b.rcqx);
			if (ret) {
				ibv_end_poll(b.rcqx);
				CHECK_EQ(ret, 0);
			}
		}
		CHECK_EQ(b.rcqx->wr_id, 200 + i);
		CHECK_EQ(b.rcqx->status, IBV_WC_SUCCESS);
		CHECK_EQ(ibv_wc_read_opcode(b.rcqx), IBV_WC_RECV);
		CHECK_EQ(ibv_wc_read_byte_len(b.rcqx), 100 + i);
		CHECK_EQ(ntohl(ibv_wc_read_imm_data(b.rcqx)), 1000 + i);
		CHECK(ibv_wc_read_wc_flags(b.rcqx) & IBV_WC_WITH_IMM);
		CHECK_EQ(ibv_wc_read_qp_num(b.rcqx), b.qp->qp_num);
		CHECK_MEM(b.buf + i * 1024, a.buf + i * 1000, 100 + i);
	}
	CHECK_EQ(ibv_next_poll(b.rcqx), ENOENT);
	ibv_end_poll(b.rcqx);
	CHECK_EQ(ibv_start_poll(b.rcqx, &pa), ENOENT);
	/* the same CQ through ibv_poll_cq */
	CHECK_EQ(post_recv(b.qp, 300, b.buf, 1024, b.mr->lkey), 0);
	CHECK_EQ(post_send(a.qp, IBV_WR_SEND, 9, 0, a.buf, 10, a.mr->lkey, 0, 0, 0), 0);
	WAIT_WC(b.rcq, wc);
	CHECK_WC(wc, 300, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, 10);
	pair_down(&a, &b);
}

TEST(qp_ex_wr_api)
{
	struct side a, b;
	struct ibv_qp_ex *qx;
	uint8_t inl[50];
	uint64_t *target, *res;
	struct ibv_wc wc;

	side_init(&a, ctx_a, IBV_QPT_RC, MR_ALL, SIDE_QPEX);
	side_init(&b, ctx_b, IBV_QPT_RC, MR_ALL, 0);
	connect2(a.qp, b.qp, &def_opts, &def_opts);
	qx = ibv_qp_to_qp_ex(a.qp);
	CHECK(qx != NULL);
	pattern(a.buf, 4096, 13);
	pattern(inl, sizeof(inl), 14);
	target = (uint64_t *)(b.buf + 65536);
	res = (uint64_t *)(a.buf + 65536);
	*target = 41;
	CHECK_EQ(post_recv(b.qp, 60, b.buf, 1024, b.mr->lkey), 0);
	CHECK_EQ(post_recv(b.qp, 61, b.buf + 1024, 1024, b.mr->lkey), 0);

	ibv_wr_start(qx);
	qx->wr_id = 1;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qx);
	ibv_wr_set_sge(qx, a.mr->lkey, (uintptr_t)a.buf, 100);
	qx->wr_id = 2;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(qx, b.mr->rkey, raddr(&b, 4096));
	ibv_wr_set_sge(qx, a.mr->lkey, (uintptr_t)a.buf + 100, 200);
	qx->wr_id = 3;
	qx->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
	ibv_wr_send_imm(qx, htonl(0xabcd));
	ibv_wr_set_inline_data(qx, inl, sizeof(inl));
	qx->wr_id = 4;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_fetch_add(qx, b.mr->rkey, (uintptr_t)target, 1);
	ibv_wr_set_sge(qx, a.mr->lkey, (uintptr_t)res, 8);
	CHECK_EQ(ibv_wr_complete(qx), 0);
	memset(inl, 0, sizeof(inl));

	WAIT_WC(a.scq, wc);
	CHECK_WC(wc, 1, IBV_WC_SUCCESS, IBV_WC_SEND);
	WAIT_WC(a.scq, wc);
	CHECK_WC(wc, 2, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	WAIT_WC(a.scq, wc);
	CHECK_WC(wc, 3, IBV_WC_SUCCESS, IBV_WC_SEND);
	WAIT_WC(a.scq, wc);
	CHECK_WC(wc, 4, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD);
	WAIT_WC(b.rcq, wc);
	CHECK_WC(wc, 60, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, 100);
	CHECK_MEM(b.buf, a.buf, 100);
	WAIT_WC(b.rcq, wc);
	CHECK_WC(wc, 61, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, 50);
	CHECK_EQ(ntohl(wc.imm_data), 0xabcd);
	pattern(inl, sizeof(inl), 14);
	CHECK_MEM(b.buf + 1024, inl, 50);
	CHECK_MEM(b.buf + 4096, a.buf + 100, 200);
	CHECK_EQ(*res, 41);
	CHECK_EQ(*target, 42);

	/* abort discards what was built */
	CHECK_EQ(post_recv(b.qp, 62, b.buf, 1024, b.mr->lkey), 0);
	ibv_wr_start(qx);
	qx->wr_id = 5;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qx);
	ibv_wr_set_sge(qx, a.mr->lkey, (uintptr_t)a.buf, 10);
	ibv_wr_abort(qx);
	NO_WC(b.rcq, wc);
	NO_WC(a.scq, wc);
	/* and the QP still works */
	ibv_wr_start(qx);
	qx->wr_id = 6;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qx);
	ibv_wr_set_sge(qx, a.mr->lkey, (uintptr_t)a.buf + 7, 10);
	CHECK_EQ(ibv_wr_complete(qx), 0);
	WAIT_WC(a.scq, wc);
	CHECK_WC(wc, 6, IBV_WC_SUCCESS, IBV_WC_SEND);
	WAIT_WC(b.rcq, wc);
	CHECK_WC(wc, 62, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_MEM(b.buf, a.buf + 7, 10);
	pair_down(&a, &b);
}

/* The responder's data is visible through rereg'd access and translation,
 * and an iova-based region is addressed by its iova. */
TEST(rc_rereg_and_iova)
{
	struct side a, b;
	struct ibv_mr *mr;
	uint8_t *nb;
	struct ibv_wc wc;

	pair_up(&a, &b, IBV_QPT_RC, 0, 0);
	nb = aligned_alloc(4096, 65536);
	CHECK(nb != NULL);
	memset(nb, 0, 65536);
	mr = ibv_reg_mr(b.pd, nb, 32768, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	CHECK(mr != NULL);
	CHECK_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE), 0);
	pattern(a.buf, 4096, 15);
	CHECK_EQ(post_send(a.qp, IBV_WR_RDMA_WRITE, 1, 0, a.buf, 100, a.mr->lkey,
			   (uintptr_t)nb + 10, mr->rkey, 0), 0);
	WAIT_WC(a.scq, wc);
	CHECK_WC(wc, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK_MEM(nb + 10, a.buf, 100);
	/* translation: the region now covers the second half */
	CHECK_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, nb + 32768, 32768, 0),
		 0);
	CHECK_EQ(post_send(a.qp, IBV_WR_RDMA_WRITE, 2, 0, a.buf + 200, 100, a.mr->lkey,
			   (uintptr_t)nb + 32768 + 20, mr->rkey, 0), 0);
	WAIT_WC(a.scq, wc);
	CHECK_WC(wc, 2, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK_MEM(nb + 32768 + 20, a.buf + 200, 100);
	CHECK_EQ(ibv_dereg_mr(mr), 0);

	/* iova */
	mr = ibv_reg_mr_iova2(b.pd, nb, 65536, 0x7000000000ull, MR_ALL);
	CHECK(mr != NULL);
	CHECK_EQ(post_send(a.qp, IBV_WR_RDMA_WRITE, 3, 0, a.buf + 300, 64, a.mr->lkey,
			   0x7000000000ull + 1000, mr->rkey, 0), 0);
	WAIT_WC(a.scq, wc);
	CHECK_WC(wc, 3, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK_MEM(nb + 1000, a.buf + 300, 64);
	pattern(nb + 5000, 64, 16);
	CHECK_EQ(post_send(a.qp, IBV_WR_RDMA_READ, 4, 0, a.buf + 8192, 64, a.mr->lkey,
			   0x7000000000ull + 5000, mr->rkey, 0), 0);
	WAIT_WC(a.scq, wc);
	CHECK_WC(wc, 4, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
	CHECK_MEM(a.buf + 8192, nb + 5000, 64);
	/* the virtual address is not the iova: out of range */
	CHECK_EQ(post_send(a.qp, IBV_WR_RDMA_WRITE, 5, 0, a.buf, 8, a.mr->lkey,
			   (uintptr_t)nb + 0x8000000000ull, mr->rkey, 0), 0);
	WAIT_WC(a.scq, wc);
	CHECK_EQ(wc.wr_id, 5);
	CHECK_EQ(wc.status, IBV_WC_REM_ACCESS_ERR);
	CHECK_EQ(ibv_dereg_mr(mr), 0);
	free(nb);
	pair_down(&a, &b);
}

/* ibv_rereg_mr keeps lkey and rkey (as rxe and mlx5 do); the peer's next
 * access through the same rkey sees the new access at once, the old one is
 * revoked, and a refused rereg leaves the region working as it was. */
TEST(rc_rereg_keeps_keys_access)
{
	struct side a, b;
	uint32_t lkey, rkey;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	uint8_t *nb;

	pair_up(&a, &b, IBV_QPT_RC, 0, 0);
	nb = aligned_alloc(4096, 8192);
	CHECK(nb != NULL);
	memset(nb, 0, 8192);
	mr = ibv_reg_mr(b.pd, nb, 8192, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	CHECK(mr != NULL);
	lkey = mr->lkey;
	rkey = mr->rkey;
	pattern(a.buf, 4096, 17);
	CHECK_EQ(post_send(a.qp, IBV_WR_RDMA_WRITE, 1, 0, a.buf, 100, a.mr->lkey,
			   (uintptr_t)nb, rkey, 0), 0);
	WAIT_WC(a.scq, wc);
	CHECK_WC(wc, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	/* bad input: refused, nothing lost */
	CHECK_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			      IBV_ACCESS_REMOTE_WRITE), IBV_REREG_MR_ERR_INPUT);
	CHECK_EQ(mr->lkey, lkey);
	CHECK_EQ(mr->rkey, rkey);
	CHECK_EQ(post_send(a.qp, IBV_WR_RDMA_WRITE, 2, 0, a.buf + 100, 100, a.mr->lkey,
			   (uintptr_t)nb + 100, rkey, 0), 0);
	WAIT_WC(a.scq, wc);
	CHECK_WC(wc, 2, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK_MEM(nb, a.buf, 200);
	/* read instead of write, same keys */
	CHECK_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ), 0);
	CHECK_EQ(mr->lkey, lkey);
	CHECK_EQ(mr->rkey, rkey);
	pattern(nb + 4096, 64, 18);
	CHECK_EQ(post_send(a.qp, IBV_WR_RDMA_READ, 3, 0, a.buf + 8192, 64, a.mr->lkey,
			   (uintptr_t)nb + 4096, rkey, 0), 0);
	WAIT_WC(a.scq, wc);
	CHECK_WC(wc, 3, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
	CHECK_MEM(a.buf + 8192, nb + 4096, 64);
	/* the region's own key still serves local SGEs */
	CHECK_EQ(post_recv(b.qp, 40, nb + 6000, 64, mr->lkey), 0);
	CHECK_EQ(post_send(a.qp, IBV_WR_SEND, 4, 0, a.buf, 64, a.mr->lkey, 0, 0, 0), 0);
	WAIT_WC(a.scq, wc);
	CHECK_WC(wc, 4, IBV_WC_SUCCESS, IBV_WC_SEND);
	WAIT_WC(b.rcq, wc);
	CHECK_WC(wc, 40, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_MEM(nb + 6000, a.buf, 64);
	/* remote write was revoked at once */
	CHECK_EQ(post_send(a.qp, IBV_WR_RDMA_WRITE, 5, 0, a.buf, 8, a.mr->lkey,
			   (uintptr_t)nb, rkey, 0), 0);
	WAIT_WC(a.scq, wc);
	CHECK_EQ(wc.wr_id, 5);
	CHECK_EQ(wc.status, IBV_WC_REM_ACCESS_ERR);
	CHECK_MEM(nb, a.buf, 200);
	CHECK_EQ(ibv_dereg_mr(mr), 0);
	free(nb);
	pair_down(&a, &b);
}

/* Translation and PD changes keep the keys too; moving the region to
 * another PD revokes the peer's access through the old one at once. */
TEST(rc_rereg_keeps_keys_pd)
{
	struct ibv_pd *pd2;
	struct side a, b;
	uint32_t lkey, rkey;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	uint8_t *nb;

	pair_up(&a, &b, IBV_QPT_RC, 0, 0);
	pd2 = ibv_alloc_pd(ctx_b);
	CHECK(pd2 != NULL);
	nb = aligned_alloc(4096, 16384);
	CHECK(nb != NULL);
	memset(nb, 0, 16384);
	mr = ibv_reg_mr(b.pd, nb, 8192, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	CHECK(mr != NULL);
	lkey = mr->lkey;
	rkey = mr->rkey;
	pattern(nb, 16384, 19);
	CHECK_EQ(post_send(a.qp, IBV_WR_RDMA_READ, 1, 0, a.buf, 64, a.mr->lkey,
			   (uintptr_t)nb + 8, rkey, 0), 0);
	WAIT_WC(a.scq, wc);
	CHECK_WC(wc, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
	CHECK_MEM(a.buf, nb + 8, 64);
	CHECK_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, nb + 8192, 8192, 0), 0);
	CHECK_EQ(mr->lkey, lkey);
	CHECK_EQ(mr->rkey, rkey);
	CHECK_EQ(post_send(a.qp, IBV_WR_RDMA_READ, 2, 0, a.buf + 64, 64, a.mr->lkey,
			   (uintptr_t)nb + 8192 + 16, rkey, 0), 0);
	WAIT_WC(a.scq, wc);
	CHECK_WC(wc, 2, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
	CHECK_MEM(a.buf + 64, nb + 8192 + 16, 64);
	CHECK_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0, 0), 0);
	CHECK_EQ(mr->lkey, lkey);
	CHECK_EQ(mr->rkey, rkey);
	CHECK(mr->pd == pd2);
	CHECK_EQ(post_send(a.qp, IBV_WR_RDMA_READ, 3, 0, a.buf, 64, a.mr->lkey,
			   (uintptr_t)nb + 8192, rkey, 0), 0);
	WAIT_WC(a.scq, wc);
	CHECK_EQ(wc.wr_id, 3);
	CHECK_EQ(wc.status, IBV_WC_REM_ACCESS_ERR);
	CHECK_EQ(ibv_dereg_mr(mr), 0);
	CHECK_EQ(ibv_dealloc_pd(pd2), 0);
	free(nb);
	pair_down(&a, &b);
}

static void to_state(struct ibv_qp *qp, enum ibv_qp_state st)
{
	struct ibv_qp_attr qa;

	memset(&qa, 0, sizeof(qa));
	qa.qp_state = st;
	CHECK_EQ(ibv_modify_qp(qp, &qa, IBV_QP_STATE), 0);
}

/* ERROR -> RESET takes the QP's completions out of its CQs, flush errors
 * included, as providers do (mlx5's CQ clean on RESET): the next poll
 * returns no stale IBV_WC_WR_FLUSH_ERR of it, and another QP sharing the
 * CQs keeps its entries, in order. */
TEST(qp_reset_cleans_cqs)
{
	struct ibv_qp_attr qa;
	struct ibv_qp *qp2;
	struct side a, b;
	struct ibv_wc wc;

	pair_up(&a, &b, IBV_QPT_RC, 0, 0);
	qp2 = side_qp(&a, IBV_QPT_RC, NULL, 0); /* same send and receive CQs */
	CHECK(qp2 != NULL);
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_INIT;
	qa.port_num = 1;
	qa.qp_access_flags = ALL_REMOTE;
	CHECK_EQ(ibv_modify_qp(qp2, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					      IBV_QP_ACCESS_FLAGS), 0);
	/* a completion of a.qp that is polled before the reset */
	CHECK_EQ(post_recv(b.qp, 1, b.buf, 64, b.mr->lkey), 0);
	CHECK_EQ(post_send(a.qp, IBV_WR_SEND, 2, 0, a.buf, 64, a.mr->lkey, 0, 0, 0), 0);
	WAIT_WC(a.scq, wc);
	CHECK_WC(wc, 2, IBV_WC_SUCCESS, IBV_WC_SEND);
	/* a.qp's and qp2's flush errors, interleaved in the CQs */
	CHECK_EQ(post_recv(a.qp, 101, a.buf, 64, a.mr->lkey), 0);
	CHECK_EQ(post_recv(a.qp, 102, a.buf, 64, a.mr->lkey), 0);
	CHECK_EQ(post_recv(qp2, 201, a.buf, 64, a.mr->lkey), 0);
	to_state(a.qp, IBV_QPS_ERR);
	to_state(qp2, IBV_QPS_ERR);
	CHECK_EQ(post_recv(a.qp, 103, a.buf, 64, a.mr->lkey), 0);
	CHECK_EQ(post_recv(qp2, 202, a.buf, 64, a.mr->lkey), 0);
	CHECK_EQ(post_send(a.qp, IBV_WR_SEND, 104, 0, a.buf, 8, a.mr->lkey, 0, 0, 0), 0);
	CHECK_EQ(post_send(qp2, IBV_WR_SEND, 203, 0, a.buf, 8, a.mr->lkey, 0, 0, 0), 0);
	CHECK_EQ(post_send(a.qp, IBV_WR_SEND, 105, 0, a.buf, 8, a.mr->lkey, 0, 0, 0), 0);
	to_state(a.qp, IBV_QPS_RESET);
	CHECK_EQ(qp_state(a.qp), IBV_QPS_RESET);
	/* only qp2's, in the order they were made */
	WAIT_WC(a.rcq, wc);
	CHECK_WC(wc, 201, IBV_WC_WR_FLUSH_ERR, 0);
	CHECK_EQ(wc.qp_num, qp2->qp_num);
	WAIT_WC(a.rcq, wc);
	CHECK_WC(wc, 202, IBV_WC_WR_FLUSH_ERR, 0);
	NO_WC(a.rcq, wc);
	WAIT_WC(a.scq, wc);
	CHECK_WC(wc, 203, IBV_WC_WR_FLUSH_ERR, 0);
	NO_WC(a.scq, wc);
	/* and the CQs go on: the reset QP comes up again and completes */
	to_state(qp2, IBV_QPS_RESET);
	CHECK_EQ(ibv_destroy_qp(qp2), 0);
	to_state(b.qp, IBV_QPS_RESET);
	connect2(a.qp, b.qp, &def_opts, &def_opts);
	CHECK_EQ(post_recv(b.qp, 3, b.buf, 64, b.mr->lkey), 0);
	CHECK_EQ(post_send(a.qp, IBV_WR_SEND, 4, 0, a.buf, 64, a.mr->lkey, 0, 0, 0), 0);
	WAIT_WC(a.scq, wc);
	CHECK_WC(wc, 4, IBV_WC_SUCCESS, IBV_WC_SEND);
	WAIT_WC(b.rcq, wc);
	CHECK_WC(wc, 3, IBV_WC_SUCCESS, IBV_WC_RECV);
	pair_down(&a, &b);
}

/* ---- UC and UD -------------------------------------------------------------- */

TEST(uc_ops)
{
	struct side a, b;
	struct ibv_wc wc;
	int ret;

	pair_up(&a, &b, IBV_QPT_UC, 0, 0);
	pattern(a.buf, 65536, 17);
	CHECK_EQ(post_recv(b.qp, 1, b.buf, 8192, b.mr->lkey), 0);
	CHECK_EQ(post_recv(b.qp, 2, b.buf + 8192, 8192, b.mr->lkey), 0);
	CHECK_EQ(post_send(a.qp, IBV_WR_SEND, 10, 0, a.buf, 3000, a.mr->lkey, 0, 0, 0), 0);
	WAIT_WC(a.scq, wc);
	CHECK_WC(wc, 10, IBV_WC_SUCCESS, IBV_WC_SEND);
	WAIT_WC(b.rcq, wc);
	CHECK_WC(wc, 1, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, 3000);
	CHECK_MEM(b.buf, a.buf, 3000);
	CHECK_EQ(post_send(a.qp, IBV_WR_RDMA_WRITE, 11, 0, a.buf + 5, 40000, a.mr->lkey,
			   raddr(&b, 100000), b.mr->rkey, 0), 0);
	WAIT_WC(a.scq, wc);
	CHECK_WC(wc, 11, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK_MEM(b.buf + 100000, a.buf + 5, 40000);
	CHECK_EQ(post_send(a.qp, IBV_WR_RDMA_WRITE_WITH_IMM, 12, 0, a.buf, 10, a.mr->lkey,
			   raddr(&b, 200000), b.mr->rkey, 99), 0);
	WAIT_WC(b.rcq, wc);
	CHECK_WC(wc, 2, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM);
	CHECK_EQ(ntohl(wc.imm_data), 99);
	CHECK_MEM(b.buf + 200000, a.buf, 10);
	WAIT_WC(a.scq, wc);
	CHECK_WC(wc, 12, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	/* UC has no RDMA READ (IBA table 89) */
	ret = post_send(a.qp, IBV_WR_RDMA_READ, 13, 0, a.buf, 10, a.mr->lkey, raddr(&b, 0),
			b.mr->rkey, 0);
	if (ret == 0) {
		WAIT_WC(a.scq, wc);
		CHECK_EQ(wc.wr_id, 13);
		CHECK_NE(wc.status, IBV_WC_SUCCESS);
	}
	pair_down(&a, &b);
}

static int post_ud(struct ibv_qp *qp, uint64_t id, struct ibv_ah *ah, uint32_t qpn,
		   uint32_t qkey, void *addr, uint32_t len, uint32_t lkey)
{
	struct ibv_sge sg = { .addr = (uintptr_t)addr, .length = len, .lkey = lkey };
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = id;
	wr.opcode = IBV_WR_SEND;
	wr.sg_list = &sg;
	wr.num_sge = 1;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qpn;
	wr.wr.ud.remote_qkey = qkey;
	return ibv_post_send(qp, &wr, &bad);
}

TEST(ud_grh)
{
	static const uint8_t lo4[4] = { 127, 0, 0, 1 };
	struct side a, b;
	struct ibv_ah_attr aa;
	struct ibv_ah *ah, *back;
	struct ibv_wc wc;

	side_init(&a, ctx_a, IBV_QPT_UD, MR_ALL, 0);
	side_init(&b, ctx_b, IBV_QPT_UD, MR_ALL, 0);
	qp_up(a.qp, 0, &def_opts);
	qp_up(b.qp, 0, &def_opts);
	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	aa.port_num = 1;
	aa.grh.dgid = gid0;
	aa.grh.sgid_index = 0;
	aa.grh.hop_limit = 64;
	ah = ibv_create_ah(a.pd, &aa);
	CHECK(ah != NULL);

	pattern(a.buf, 1024, 18);
	CHECK_EQ(post_recv(b.qp, 1, b.buf, 40 + 2048, b.mr->lkey), 0);
	CHECK_EQ(post_ud(a.qp, 2, ah, b.qp->qp_num, QKEY, a.buf, 1000, a.mr->lkey), 0);
	WAIT_WC(a.scq, wc);
	CHECK_WC(wc, 2, IBV_WC_SUCCESS, IBV_WC_SEND);
	WAIT_WC(b.rcq, wc);
	CHECK_WC(wc, 1, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK(wc.wc_flags & IBV_WC_GRH);
	CHECK_EQ(wc.byte_len, 1040);
	CHECK_EQ(wc.src_qp, a.qp->qp_num);
	CHECK_EQ(wc.qp_num, b.qp->qp_num);
	CHECK_MEM(b.buf + 40, a.buf, 1000);
	/* RoCEv2 over IPv4: the IPv4 header fills the last 20 bytes of the GRH */
	CHECK_EQ(b.buf[20], 0x45);
	CHECK_MEM(b.buf + 20 + 12, lo4, 4);
	CHECK_MEM(b.buf + 20 + 16, lo4, 4);
	/* the sl tells the GRH's layout, as mlx5's roce_pkt_type: v2, IPv4 */
	CHECK_EQ(wc.sl, 0xa);

	/* answer through an AH made from the work completion */
	back = ibv_create_ah_from_wc(b.pd, &wc, (struct ibv_grh *)b.buf, 1);
	CHECK(back != NULL);
	pattern(b.buf + 4096, 500, 19);
	CHECK_EQ(post_recv(a.qp, 3, a.buf + 8192, 40 + 500, a.mr->lkey), 0);
	CHECK_EQ(post_ud(b.qp, 4, back, wc.src_qp, QKEY, b.buf + 4096, 500, b.mr->lkey), 0);
	WAIT_WC(b.scq, wc);
	CHECK_WC(wc, 4, IBV_WC_SUCCESS, IBV_WC_SEND);
	WAIT_WC(a.rcq, wc);
	CHECK_WC(wc, 3, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc.src_qp, b.qp->qp_num);
	CHECK_EQ(wc.byte_len, 540);
	CHECK_MEM(a.buf + 8192 + 40, b.buf + 4096, 500);
	CHECK_EQ(ibv_destroy_ah(back), 0);

	/* wrong Q_Key: silently dropped, the sender still completes */
	CHECK_EQ(post_recv(b.qp, 5, b.buf, 40 + 2048, b.mr->lkey), 0);
	CHECK_EQ(post_ud(a.qp, 6, ah, b.qp->qp_num, QKEY ^ 1, a.buf, 10, a.mr->lkey), 0);
	WAIT_WC(a.scq, wc);
	CHECK_WC(wc, 6, IBV_WC_SUCCESS, IBV_WC_SEND);
	NO_WC(b.rcq, wc);
	/* to a QP number that does not exist: dropped too */
	CHECK_EQ(post_ud(a.qp, 7, ah, 0xfffff3, QKEY, a.buf, 10, a.mr->lkey), 0);
	WAIT_WC(a.scq, wc);
	CHECK_WC(wc, 7, IBV_WC_SUCCESS, IBV_WC_SEND);
	/* the posted receive still takes the next good one */
	CHECK_EQ(post_ud(a.qp, 8, ah, b.qp->qp_num, QKEY, a.buf + 10, 20, a.mr->lkey), 0);
	WAIT_WC(b.rcq, wc);
	CHECK_WC(wc, 5, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, 60);
	CHECK_MEM(b.buf + 40, a.buf + 10, 20);
	WAIT_WC(a.scq, wc);
	/* a UD message larger than the path MTU is not sent */
	{
		int ret = post_ud(a.qp, 9, ah, b.qp->qp_num, QKEY, a.buf, 4097, a.mr->lkey);

		if (ret == 0) {
			WAIT_WC(a.scq, wc);
			CHECK_EQ(wc.wr_id, 9);
			CHECK_NE(wc.status, IBV_WC_SUCCESS);
		}
	}
	CHECK_EQ(ibv_destroy_ah(ah), 0);
	pair_down(&a, &b);
}

/* A multicast group on one host: the daemon delivers a datagram to the
 * multicast QPN to every QP attached here whose Q_Key matches, in any
 * context, the sender's own QP included when it is attached. */
TEST(ud_multicast_local)
{
	static const uint8_t grp[4] = { 239, 1, 2, 3 };
	struct side s, r1, r2, r3;
	struct ibv_ah_attr aa;
	union ibv_gid mgid;
	struct ibv_qp_attr qa;
	struct ibv_ah *ah;
	struct ibv_wc wc;

	side_init(&s, ctx_a, IBV_QPT_UD, MR_ALL, 0);
	side_init(&r1, ctx_a, IBV_QPT_UD, MR_ALL, 0);
	side_init(&r2, ctx_b, IBV_QPT_UD, MR_ALL, 0);
	side_init(&r3, ctx_b, IBV_QPT_UD, MR_ALL, 0);
	qp_up(s.qp, 0, &def_opts);
	qp_up(r1.qp, 0, &def_opts);
	qp_up(r2.qp, 0, &def_opts);
	qp_up(r3.qp, 0, &def_opts);
	memset(&qa, 0, sizeof(qa));
	qa.qkey = QKEY ^ 1; /* r3: another Q_Key */
	CHECK_EQ(ibv_modify_qp(r3.qp, &qa, IBV_QP_QKEY), 0);
	memset(&mgid, 0, sizeof(mgid));
	mgid.raw[10] = mgid.raw[11] = 0xff;
	memcpy(&mgid.raw[12], grp, 4);
	CHECK_EQ(ibv_attach_mcast(r1.qp, &mgid, 0), 0);
	CHECK_EQ(ibv_attach_mcast(r2.qp, &mgid, 0), 0);
	CHECK_EQ(ibv_attach_mcast(r3.qp, &mgid, 0), 0);
	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	aa.port_num = 1;
	aa.grh.dgid = mgid;
	aa.grh.sgid_index = 0;
	aa.grh.hop_limit = 1;
	ah = ibv_create_ah(s.pd, &aa);
	CHECK(ah != NULL);

	for (int i = 0; i < 8; i++) {
		CHECK_EQ(post_recv(r1.qp, 100 + i, r1.buf + i * 4096, 40 + 2048, r1.mr->lkey), 0);
		CHECK_EQ(post_recv(r2.qp, 200 + i, r2.buf + i * 4096, 40 + 2048, r2.mr->lkey), 0);
		CHECK_EQ(post_recv(r3.qp, 300 + i, r3.buf + i * 4096, 40 + 2048, r3.mr->lkey), 0);
	}
	for (int i = 0; i < 4; i++) {
		pattern(s.buf + i * 4096, 100 + i * 300, 40 + i);
		CHECK_EQ(post_ud(s.qp, 10 + i, ah, 0xffffff, QKEY, s.buf + i * 4096, 100 + i * 300,
				 s.mr->lkey), 0);
		WAIT_WC(s.scq, wc);
		CHECK_WC(wc, 10 + i, IBV_WC_SUCCESS, IBV_WC_SEND);
	}
	for (int i = 0; i < 4; i++) {
		struct side *r[2] = { &r1, &r2 };

		for (int k = 0; k < 2; k++) {
			uint8_t *got = r[k]->buf + i * 4096;

			WAIT_WC(r[k]->rcq, wc);
			CHECK_WC(wc, (k + 1) * 100 + i, IBV_WC_SUCCESS, IBV_WC_RECV);
			CHECK(wc.wc_flags & IBV_WC_GRH);
			CHECK_EQ(wc.byte_len, 40 + 100 + i * 300);
			CHECK_EQ(wc.src_qp, s.qp->qp_num);
			CHECK_EQ(wc.qp_num, r[k]->qp->qp_num);
			CHECK_MEM(got + 40, s.buf + i * 4096, 100 + i * 300);
			/* the IPv4 header in the GRH area names the group */
			CHECK_EQ(got[20], 0x45);
			CHECK_MEM(got + 20 + 16, grp, 4);
			CHECK_EQ(wc.sl, 0xa); /* RoCEv2 over IPv4, as mlx5 says */
		}
	}
	NO_WC(r3.rcq, wc); /* its Q_Key differs */

	/* a datagram to the group's GID that does not name the multicast
	 * QPN reaches nobody */
	CHECK_EQ(post_ud(s.qp, 20, ah, r1.qp->qp_num, QKEY, s.buf, 10, s.mr->lkey), 0);
	WAIT_WC(s.scq, wc);
	CHECK_WC(wc, 20, IBV_WC_SUCCESS, IBV_WC_SEND);
	NO_WC(r1.rcq, wc);

	/* detached: r2 gets nothing more; the sender attached gets its own */
	CHECK_EQ(ibv_detach_mcast(r2.qp, &mgid, 0), 0);
	CHECK_EQ(ibv_attach_mcast(s.qp, &mgid, 0), 0);
	CHECK_EQ(post_recv(s.qp, 400, s.buf + 65536, 40 + 2048, s.mr->lkey), 0);
	pattern(s.buf + 8192, 77, 50);
	CHECK_EQ(post_ud(s.qp, 21, ah, 0xffffff, QKEY, s.buf + 8192, 77, s.mr->lkey), 0);
	WAIT_WC(s.scq, wc);
	CHECK_WC(wc, 21, IBV_WC_SUCCESS, IBV_WC_SEND);
	WAIT_WC(r1.rcq, wc);
	CHECK_WC(wc, 104, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_MEM(r1.buf + 4 * 4096 + 40, s.buf + 8192, 77);
	WAIT_WC(s.rcq, wc);
	CHECK_WC(wc, 400, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_MEM(s.buf + 65536 + 40, s.buf + 8192, 77);
	NO_WC(r2.rcq, wc);
	NO_WC(r3.rcq, wc);

	CHECK_EQ(ibv_destroy_ah(ah), 0);
	CHECK_EQ(ibv_detach_mcast(s.qp, &mgid, 0), 0);
	CHECK_EQ(ibv_detach_mcast(r1.qp, &mgid, 0), 0);
	CHECK_EQ(ibv_detach_mcast(r3.qp, &mgid, 0), 0);
	side_fini(&s);
	side_fini(&r1);
	side_fini(&r2);
	side_fini(&r3);
}

/* ---- SRQ ------------------------------------------------------------------------ */

static int wait_async(struct ibv_context *c, struct ibv_async_event *ev, int ms)
{
	struct pollfd pfd = { .fd = c->async_fd, .events = POLLIN };

	if (poll(&pfd, 1, ms) != 1)
		return 0;
	return ibv_get_async_event(c, ev) == 0;
}

TEST(srq_two_qps_limit)
{
	struct side a1, a2, b;
	struct ibv_srq_init_attr si;
	struct ibv_srq_attr sa;
	struct ibv_async_event ev;
	struct ibv_qp *b1, *b2;
	struct ibv_srq *srq;
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_sge sg;
	struct ibv_wc wc;
	uint32_t expect_qp[5];
	int i;

	side_init(&b, ctx_b, IBV_QPT_RC, MR_ALL, SIDE_NOQP);
	memset(&si, 0, sizeof(si));
	si.srq_context = (void *)0x5151;
	si.attr.max_wr = 16;
	si.attr.max_sge = 1;
	srq = ibv_create_srq(b.pd, &si);
	CHECK(srq != NULL);
	b1 = side_qp(&b, IBV_QPT_RC, srq, 0);
	b2 = side_qp(&b, IBV_QPT_RC, srq, 0);
	CHECK(b1 != NULL && b2 != NULL);
	side_init(&a1, ctx_a, IBV_QPT_RC, MR_ALL, 0);
	side_init(&a2, ctx_a, IBV_QPT_RC, MR_ALL, 0);
	connect2(a1.qp, b1, &def_opts, &def_opts);
	connect2(a2.qp, b2, &def_opts, &def_opts);

	for (i = 0; i < 8; i++) {
		sg = (struct ibv_sge){ (uintptr_t)b.buf + i * 256, 256, b.mr->lkey };
		memset(&rwr, 0, sizeof(rwr));
		rwr.wr_id = 100 + i;
		rwr.sg_list = &sg;
		rwr.num_sge = 1;
		CHECK_EQ(ibv_post_srq_recv(srq, &rwr, &rbad), 0);
	}
	sa.srq_limit = 4;
	CHECK_EQ(ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT), 0);
	pattern(a1.buf, 4096, 20);
	pattern(a2.buf, 4096, 21);
	/* messages k = 0..3: a1, a1, a2, a2; 4 left, not below the limit */
	for (i = 0; i < 4; i++) {
		struct side *s = i < 2 ? &a1 : &a2;

		CHECK_EQ(post_send(s->qp, IBV_WR_SEND, i, 0, s->buf + i * 100, 100,
				   s->mr->lkey, 0, 0, 0), 0);
		WAIT_WC(s->scq, wc);
		CHECK_WC(wc, i, IBV_WC_SUCCESS, IBV_WC_SEND);
		expect_qp[i] = i < 2 ? b1->qp_num : b2->qp_num;
	}
	CHECK_EQ(wait_async(ctx_b, &ev, 200), 0);
	CHECK_EQ(ibv_query_srq(srq, &sa), 0);
	CHECK_EQ(sa.srq_limit, 4);
	/* the fifth leaves 3 < 4: one SRQ_LIMIT_REACHED event, limit disarmed */
	CHECK_EQ(post_send(a1.qp, IBV_WR_SEND, 4, 0, a1.buf + 400, 100, a1.mr->lkey, 0, 0, 0),
		 0);
	WAIT_WC(a1.scq, wc);
	CHECK_WC(wc, 4, IBV_WC_SUCCESS, IBV_WC_SEND);
	expect_qp[4] = b1->qp_num;
	CHECK_EQ(wait_async(ctx_b, &ev, 1000), 1);
	CHECK_EQ(ev.event_type, IBV_EVENT_SRQ_LIMIT_REACHED);
	CHECK(ev.element.srq == srq);
	ibv_ack_async_event(&ev);
	CHECK_EQ(ibv_query_srq(srq, &sa), 0);
	CHECK_EQ(sa.srq_limit, 0);
	CHECK_EQ(wait_async(ctx_a, &ev, 0), 0);

	for (i = 0; i < 5; i++) {
		struct side *s = expect_qp[i] == b1->qp_num ? &a1 : &a2;

		WAIT_WC(b.rcq, wc);
		CHECK_WC(wc, 100 + i, IBV_WC_SUCCESS, IBV_WC_RECV);
		CHECK_EQ(wc.qp_num, expect_qp[i]);
		CHECK_EQ(wc.byte_len, 100);
		CHECK_MEM(b.buf + i * 256, s->buf + i * 100, 100);
	}
	NO_WC(b.rcq, wc);
	/* no more events once disarmed */
	CHECK_EQ(post_send(a2.qp, IBV_WR_SEND, 5, 0, a2.buf, 10, a2.mr->lkey, 0, 0, 0), 0);
	WAIT_WC(b.rcq, wc);
	CHECK_EQ(wc.qp_num, b2->qp_num);
	CHECK_EQ(wait_async(ctx_b, &ev, 100), 0);
	while (poll1(a2.scq, &wc, 50))
		;

	CHECK_EQ(ibv_destroy_srq(srq), EBUSY);
	side_fini(&a1);
	side_fini(&a2);
	CHECK_EQ(ibv_destroy_qp(b1), 0);
	CHECK_EQ(ibv_destroy_qp(b2), 0);
	CHECK_EQ(ibv_destroy_srq(srq), 0);
	side_fini(&b);
}

static void srq_post(struct ibv_srq *srq, struct side *b, int i)
{
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_sge sg = { (uintptr_t)b->buf + (size_t)i * 512, 512, b->mr->lkey };

	memset(&rwr, 0, sizeof(rwr));
	rwr.wr_id = 1000 + i;
	rwr.sg_list = &sg;
	rwr.num_sge = 1;
	CHECK_EQ(ibv_post_srq_recv(srq, &rwr, &rbad), 0);
}

/* Send messages [from, to) of a's buffer, each received by the next WQE
 * of the SRQ in posting order with its bytes. */
static void srq_stream(struct side *a, struct side *b, int from, int to)
{
	struct ibv_wc wc;

	for (int i = from; i < to; i++) {
		CHECK_EQ(post_send(a->qp, IBV_WR_SEND, i, 0, a->buf + (size_t)i * 512, 300 + i,
				   a->mr->lkey, 0, 0, 0), 0);
		WAIT_WC(a->scq, wc);
		CHECK_WC(wc, i, IBV_WC_SUCCESS, IBV_WC_SEND);
		WAIT_WC(b->rcq, wc);
		CHECK_WC(wc, 1000 + i, IBV_WC_SUCCESS, IBV_WC_RECV);
		CHECK_EQ(wc.byte_len, 300 + i);
		CHECK_MEM(b->buf + (size_t)i * 512, a->buf + (size_t)i * 512, 300 + i);
	}
}

/* ibv_modify_srq with IBV_SRQ_MAX_WR (IBV_DEVICE_SRQ_RESIZE), as rxe: the
 * size granted is a power of two; WQEs posted before a grow or a shrink
 * are received after it, in order; a size below the WQEs outstanding, or
 * below the armed limit, is EINVAL and changes nothing; max_wr and the
 * limit in one call. The sender is another context (the same-host
 * executor, which caches the SRQ's mapping). */
TEST(srq_resize)
{
	struct ibv_device_attr da;
	struct ibv_srq_init_attr si;
	struct ibv_async_event ev;
	struct ibv_srq_attr sa;
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_srq *srq;
	struct ibv_qp *bq;
	struct side a, b;
	int i;

	CHECK_EQ(ibv_query_device(ctx_b, &da), 0);
	CHECK(da.device_cap_flags & IBV_DEVICE_SRQ_RESIZE);
	side_init(&b, ctx_b, IBV_QPT_RC, MR_ALL, SIDE_NOQP);
	memset(&si, 0, sizeof(si));
	si.attr.max_wr = 6;
	si.attr.max_sge = 1;
	srq = ibv_create_srq(b.pd, &si);
	CHECK(srq != NULL);
	CHECK_EQ(si.attr.max_wr, 8);
	bq = side_qp(&b, IBV_QPT_RC, srq, 0);
	CHECK(bq != NULL);
	side_init(&a, ctx_a, IBV_QPT_RC, MR_ALL, 0);
	connect2(a.qp, bq, &def_opts, &def_opts);
	pattern(a.buf, 64 * 512, 33);

	for (i = 0; i < 6; i++)
		srq_post(srq, &b, i);
	srq_stream(&a, &b, 0, 2); /* the executor has the SRQ mapped now */
	/* 4 outstanding: 3 is too small, nothing changes */
	sa.max_wr = 3;
	CHECK_EQ(ibv_modify_srq(srq, &sa, IBV_SRQ_MAX_WR), EINVAL);
	sa.max_wr = 0;
	CHECK_EQ(ibv_modify_srq(srq, &sa, IBV_SRQ_MAX_WR), EINVAL);
	sa.max_wr = da.max_srq_wr + 1;
	CHECK_EQ(ibv_modify_srq(srq, &sa, IBV_SRQ_MAX_WR), EINVAL);
	CHECK_EQ(ibv_query_srq(srq, &sa), 0);
	CHECK_EQ(sa.max_wr, 8);
	/* grow and arm the limit at once: 20 is granted as 32 */
	sa.max_wr = 20;
	sa.srq_limit = 3;
	CHECK_EQ(ibv_modify_srq(srq, &sa, IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT), 0);
	memset(&sa, 0, sizeof(sa));
	CHECK_EQ(ibv_query_srq(srq, &sa), 0);
	CHECK_EQ(sa.max_wr, 32);
	CHECK_EQ(sa.max_sge, 1);
	CHECK_EQ(sa.srq_limit, 3);
	/* below the armed limit */
	sa.max_wr = 2;
	CHECK_EQ(ibv_modify_srq(srq, &sa, IBV_SRQ_MAX_WR), EINVAL);
	for (i = 6; i < 32; i++) /* 4 old + 26 new: 30 of 32 */
		srq_post(srq, &b, i);
	srq_stream(&a, &b, 2, 28); /* 4 left: not below 3 */
	CHECK_EQ(wait_async(ctx_b, &ev, 100), 0);
	srq_stream(&a, &b, 28, 30); /* 2 left: one limit event */
	CHECK_EQ(wait_async(ctx_b, &ev, 1000), 1);
	CHECK_EQ(ev.event_type, IBV_EVENT_SRQ_LIMIT_REACHED);
	CHECK(ev.element.srq == srq);
	ibv_ack_async_event(&ev);
	/* shrink to what is outstanding (2), granted as 2 */
	sa.max_wr = 2;
	CHECK_EQ(ibv_modify_srq(srq, &sa, IBV_SRQ_MAX_WR), 0);
	CHECK_EQ(ibv_query_srq(srq, &sa), 0);
	CHECK_EQ(sa.max_wr, 2);
	CHECK_EQ(sa.srq_limit, 0);
	memset(&rwr, 0, sizeof(rwr));
	CHECK_EQ(ibv_post_srq_recv(srq, &rwr, &rbad), ENOMEM); /* full */
	srq_stream(&a, &b, 30, 32);
	/* an empty SRQ grows and shrinks freely; a same size is a no-op */
	sa.max_wr = 64;
	CHECK_EQ(ibv_modify_srq(srq, &sa, IBV_SRQ_MAX_WR), 0);
	CHECK_EQ(ibv_modify_srq(srq, &sa, IBV_SRQ_MAX_WR), 0);
	for (i = 32; i < 64; i++)
		srq_post(srq, &b, i);
	sa.max_wr = 32;
	CHECK_EQ(ibv_modify_srq(srq, &sa, IBV_SRQ_MAX_WR), 0);
	srq_stream(&a, &b, 32, 64);
	{
		struct ibv_wc wc;

		NO_WC(b.rcq, wc);
	}
	side_fini(&a);
	CHECK_EQ(ibv_destroy_qp(bq), 0);
	CHECK_EQ(ibv_destroy_srq(srq), 0);
	side_fini(&b);
}

/* An XRC SRQ resizes as a basic one: below the WQEs outstanding EINVAL,
 * a grow granted as a power of two and reported, its WQEs kept (after the
 * grow, 4 is still below the 5 outstanding and 5 is granted as 8). The
 * data path through a TGT QP: progs/xrc_check. */
TEST(srq_resize_xrc)
{
	struct ibv_xrcd_init_attr xa = { .comp_mask = IBV_XRCD_INIT_ATTR_FD |
					 IBV_XRCD_INIT_ATTR_OFLAGS,
					 .fd = -1, .oflags = O_CREAT };
	struct ibv_srq_init_attr_ex a;
	struct ibv_srq_attr sa;
	struct ibv_xrcd *x;
	struct ibv_srq *srq;
	struct side b;
	int i;

	side_init(&b, ctx_b, IBV_QPT_RC, MR_ALL, SIDE_NOQP);
	x = ibv_open_xrcd(ctx_b, &xa);
	CHECK(x != NULL);
	memset(&a, 0, sizeof(a));
	a.attr.max_wr = 8;
	a.attr.max_sge = 1;
	a.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD |
		      IBV_SRQ_INIT_ATTR_CQ;
	a.srq_type = IBV_SRQT_XRC;
	a.pd = b.pd;
	a.xrcd = x;
	a.cq = b.rcq;
	srq = ibv_create_srq_ex(ctx_b, &a);
	CHECK(srq != NULL);
	for (i = 0; i < 5; i++)
		srq_post(srq, &b, i);
	sa.max_wr = 4;
	CHECK_EQ(ibv_modify_srq(srq, &sa, IBV_SRQ_MAX_WR), EINVAL);
	sa.max_wr = 100;
	CHECK_EQ(ibv_modify_srq(srq, &sa, IBV_SRQ_MAX_WR), 0);
	CHECK_EQ(ibv_query_srq(srq, &sa), 0);
	CHECK_EQ(sa.max_wr, 128);
	sa.max_wr = 4;
	CHECK_EQ(ibv_modify_srq(srq, &sa, IBV_SRQ_MAX_WR), EINVAL);
	sa.max_wr = 5;
	CHECK_EQ(ibv_modify_srq(srq, &sa, IBV_SRQ_MAX_WR), 0);
	CHECK_EQ(ibv_query_srq(srq, &sa), 0);
	CHECK_EQ(sa.max_wr, 8);
	CHECK_EQ(ibv_destroy_srq(srq), 0);
	CHECK_EQ(ibv_close_xrcd(x), 0);
	side_fini(&b);
}

/* ---- error semantics --------------------------------------------------------------- */

/* After a requester error: the QP is in ERROR and what follows is flushed. */
static void check_flushed_after(struct side *a, uint64_t id)
{
	struct ibv_wc wc;

	CHECK_EQ(qp_state(a->qp), IBV_QPS_ERR);
	CHECK_EQ(post_send(a->qp, IBV_WR_SEND, id, 0, a->buf, 8, a->mr->lkey, 0, 0, 0), 0);
	WAIT_WC(a->scq, wc);
	CHECK_EQ(wc.wr_id, id);
	CHECK_EQ(wc.status, IBV_WC_WR_FLUSH_ERR);
	CHECK_EQ(wc.qp_num, a->qp->qp_num);
	NO_WC(a->scq, wc);
}

TEST(err_bad_rkey)
{
	struct side a, b;
	struct ibv_send_wr wr[2], *bad;
	struct ibv_sge sg[2];
	struct ibv_wc wc;

	pair_up(&a, &b, IBV_QPT_RC, 0, 0);
	memset(wr, 0, sizeof(wr));
	sg[0] = (struct ibv_sge){ (uintptr_t)a.buf, 64, a.mr->lkey };
	sg[1] = sg[0];
	wr[0].wr_id = 1;
	wr[0].opcode = IBV_WR_RDMA_WRITE;
	wr[0].sg_list = &sg[0];
	wr[0].num_sge = 1;
	wr[0].wr.rdma.remote_addr = raddr(&b, 0);
	wr[0].wr.rdma.rkey = b.mr->rkey ^ 0x00010000;
	wr[0].next = &wr[1];
	wr[1] = wr[0];
	wr[1].wr_id = 2;
	wr[1].sg_list = &sg[1];
	wr[1].wr.rdma.rkey = b.mr->rkey;
	wr[1].next = NULL;
	pattern(a.buf, 64, 22);
	CHECK_EQ(ibv_post_send(a.qp, wr, &bad), 0);
	WAIT_WC(a.scq, wc);
	CHECK_EQ(wc.wr_id, 1);
	CHECK_EQ(wc.status, IBV_WC_REM_ACCESS_ERR);
	CHECK_EQ(wc.qp_num, a.qp->qp_num);
	WAIT_WC(a.scq, wc);
	CHECK_EQ(wc.wr_id, 2);
	CHECK_EQ(wc.status, IBV_WC_WR_FLUSH_ERR);
	CHECK_EQ(b.buf[0], 0xee);
	check_flushed_after(&a, 3);
	/* the responder went to ERROR as well (class C error, IBA 9.9.3.1.3) */
	CHECK_EQ(qp_state(b.qp), IBV_QPS_ERR);
	pair_down(&a, &b);
}

static void expect_access_err(enum ibv_wr_opcode op, int mr_access, int qp_access,
			      int64_t off, uint32_t len)
{
	struct side a, b;
	struct conn_opts ob = def_opts;
	struct ibv_wc wc;
	uint64_t *res;

	side_init(&a, ctx_a, IBV_QPT_RC, MR_ALL, 0);
	side_init(&b, ctx_b, IBV_QPT_RC, mr_access, 0);
	ob.qp_access = qp_access;
	connect2(a.qp, b.qp, &def_opts, &ob);
	res = (uint64_t *)a.buf;
	*res = 0x1111;
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD)
		CHECK_EQ(post_atomic(a.qp, op, 1, res, a.mr->lkey, raddr(&b, 0) + off,
				     b.mr->rkey, 1, 0), 0);
	else
		CHECK_EQ(post_send(a.qp, op, 1, 0, a.buf + 64, len, a.mr->lkey,
				   raddr(&b, 0) + off, b.mr->rkey, 0), 0);
	WAIT_WC(a.scq, wc);
	CHECK_EQ(wc.wr_id, 1);
	CHECK_EQ(wc.status, IBV_WC_REM_ACCESS_ERR);
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD)
		CHECK_EQ(*res, 0x1111);
	CHECK_EQ(b.buf[0], 0xee);
	CHECK_EQ(b.buf[BUFSZ - 1], 0xee);
	check_flushed_after(&a, 2);
	pair_down(&a, &b);
}

TEST(err_out_of_range)
{
	expect_access_err(IBV_WR_RDMA_WRITE, MR_ALL, ALL_REMOTE, (int64_t)BUFSZ - 4, 16);
	expect_access_err(IBV_WR_RDMA_READ, MR_ALL, ALL_REMOTE, (int64_t)BUFSZ - 4, 16);
	expect_access_err(IBV_WR_RDMA_WRITE, MR_ALL, ALL_REMOTE, -8, 16);
	expect_access_err(IBV_WR_ATOMIC_FETCH_AND_ADD, MR_ALL, ALL_REMOTE, (int64_t)BUFSZ, 8);
}

TEST(err_missing_mr_access)
{
	expect_access_err(IBV_WR_RDMA_WRITE, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ,
			  ALL_REMOTE, 0, 16);
	expect_access_err(IBV_WR_RDMA_READ, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
			  ALL_REMOTE, 0, 16);
	expect_access_err(IBV_WR_ATOMIC_FETCH_AND_ADD,
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				  IBV_ACCESS_REMOTE_READ,
			  ALL_REMOTE, 0, 8);
}

TEST(err_missing_qp_access)
{
	expect_access_err(IBV_WR_RDMA_WRITE, MR_ALL, IBV_ACCESS_REMOTE_READ, 0, 16);
	expect_access_err(IBV_WR_RDMA_READ, MR_ALL, IBV_ACCESS_REMOTE_WRITE, 0, 16);
	expect_access_err(IBV_WR_ATOMIC_FETCH_AND_ADD, MR_ALL,
			  IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, 0, 8);
}

TEST(err_rkey_of_other_pd)
{
	struct side a, b;
	struct ibv_pd *pd2;
	struct ibv_mr *mr2;
	uint8_t *buf2;
	struct ibv_wc wc;

	pair_up(&a, &b, IBV_QPT_RC, 0, 0);
	pd2 = ibv_alloc_pd(ctx_b);
	buf2 = calloc(1, 4096);
	CHECK(pd2 != NULL && buf2 != NULL);
	mr2 = ibv_reg_mr(pd2, buf2, 4096, MR_ALL);
	CHECK(mr2 != NULL);
	CHECK_EQ(post_send(a.qp, IBV_WR_RDMA_WRITE, 1, 0, a.buf, 8, a.mr->lkey,
			   (uintptr_t)buf2, mr2->rkey, 0), 0);
	WAIT_WC(a.scq, wc);
	CHECK_EQ(wc.status, IBV_WC_REM_ACCESS_ERR);
	CHECK_EQ(ibv_dereg_mr(mr2), 0);
	CHECK_EQ(ibv_dealloc_pd(pd2), 0);
	free(buf2);
	pair_down(&a, &b);
}

TEST(err_dereg_rkey)
{
	struct side a, b;
	struct ibv_mr *mr2;
	uint32_t rkey;
	struct ibv_wc wc;

	pair_up(&a, &b, IBV_QPT_RC, 0, 0);
	/* works while registered, fails once deregistered */
	mr2 = ibv_reg_mr(b.pd, b.buf + 65536, 4096, MR_ALL);
	CHECK(mr2 != NULL);
	rkey = mr2->rkey;
	a.buf[0] = 0x5c;
	CHECK_EQ(post_send(a.qp, IBV_WR_RDMA_WRITE, 1, 0, a.buf, 1, a.mr->lkey,
			   raddr(&b, 65536), rkey, 0), 0);
	WAIT_WC(a.scq, wc);
	CHECK_WC(wc, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK_EQ(b.buf[65536], 0x5c);
	CHECK_EQ(ibv_dereg_mr(mr2), 0);
	a.buf[0] = 0x5d;
	CHECK_EQ(post_send(a.qp, IBV_WR_RDMA_WRITE, 2, 0, a.buf, 1, a.mr->lkey,
			   raddr(&b, 65536), rkey, 0), 0);
	WAIT_WC(a.scq, wc);
	CHECK_EQ(wc.wr_id, 2);
	CHECK_EQ(wc.status, IBV_WC_REM_ACCESS_ERR);
	CHECK_EQ(b.buf[65536], 0x5c);
	pair_down(&a, &b);
}

/* The QP keeps a copy of the local MR it used last (same_host.c): a
 * deregistration must still make its lkey fail at once. */
TEST(err_dereg_lkey)
{
	struct side a, b;
	struct ibv_mr *mr2;
	uint32_t lkey;
	struct ibv_wc wc;

	pair_up(&a, &b, IBV_QPT_RC, 0, 0);
	mr2 = ibv_reg_mr(a.pd, a.buf + 65536, 4096, MR_ALL);
	CHECK(mr2 != NULL);
	lkey = mr2->lkey;
	a.buf[65536] = 0x6c;
	CHECK_EQ(post_send(a.qp, IBV_WR_RDMA_WRITE, 1, 0, a.buf + 65536, 1, lkey, raddr(&b, 0),
			   b.mr->rkey, 0), 0);
	WAIT_WC(a.scq, wc);
	CHECK_WC(wc, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	CHECK_EQ(b.buf[0], 0x6c);
	CHECK_EQ(ibv_dereg_mr(mr2), 0);
	a.buf[65536] = 0x6d;
	CHECK_EQ(post_send(a.qp, IBV_WR_RDMA_WRITE, 2, 0, a.buf + 65536, 1, lkey, raddr(&b, 0),
			   b.mr->rkey, 0), 0);
	WAIT_WC(a.scq, wc);
	CHECK_EQ(wc.wr_id, 2);
	CHECK_EQ(wc.status, IBV_WC_LOC_PROT_ERR);
	CHECK_EQ(b.buf[0], 0x6c);
	pair_down(&a, &b);
}

TEST(err_bad_lkey)
{
	struct side a, b;
	struct ibv_wc wc;

	pair_up(&a, &b, IBV_QPT_RC, 0, 0);
	CHECK_EQ(post_recv(b.qp, 1, b.buf, 4096, b.mr->lkey), 0);
	CHECK_EQ(post_send(a.qp, IBV_WR_SEND, 2, 0, a.buf, 64, a.mr->lkey ^ 0x5a5a, 0, 0, 0),
		 0);
	WAIT_WC(a.scq, wc);
	CHECK_EQ(wc.wr_id, 2);
	CHECK_EQ(wc.status, IBV_WC_LOC_PROT_ERR);
	NO_WC(b.rcq, wc);
	check_flushed_after(&a, 3);
	pair_down(&a, &b);

	/* an lkey in range but past the region's end */
	pair_up(&a, &b, IBV_QPT_RC, 0, 0);
	CHECK_EQ(post_send(a.qp, IBV_WR_RDMA_WRITE, 4, 0, a.buf + BUFSZ - 8, 16, a.mr->lkey,
			   raddr(&b, 0), b.mr->rkey, 0), 0);
	WAIT_WC(a.scq, wc);
	CHECK_EQ(wc.wr_id, 4);
	CHECK_EQ(wc.status, IBV_WC_LOC_PROT_ERR);
	CHECK_EQ(b.buf[0], 0xee);
	pair_down(&a, &b);
}

TEST(err_rnr_retry_exceeded)
{
	struct side a, b;
	struct conn_opts oa = def_opts, ob = def_opts;
	struct ibv_wc wc;
	uint64_t t0;

	oa.rnr_retry = 1;
	ob.min_rnr_timer = 1; /* 0.01 ms */
	side_init(&a, ctx_a, IBV_QPT_RC, MR_ALL, 0);
	side_init(&b, ctx_b, IBV_QPT_RC, MR_ALL, 0);
	connect2(a.qp, b.qp, &oa, &ob);
	t0 = now_ms();
	CHECK_EQ(post_send(a.qp, IBV_WR_SEND, 1, 0, a.buf, 8, a.mr->lkey, 0, 0, 0), 0);
	CHECK_EQ(post_send(a.qp, IBV_WR_SEND, 2, 0, a.buf, 8, a.mr->lkey, 0, 0, 0), 0);
	WAIT_WC(a.scq, wc);
	CHECK_EQ(wc.wr_id, 1);
	CHECK_EQ(wc.status, IBV_WC_RNR_RETRY_EXC_ERR);
	CHECK(now_ms() - t0 < 2000);
	WAIT_WC(a.scq, wc);
	CHECK_EQ(wc.wr_id, 2);
	CHECK_EQ(wc.status, IBV_WC_WR_FLUSH_ERR);
	check_flushed_after(&a, 3);
	/* the receiver never saw anything */
	NO_WC(b.rcq, wc);
	pair_down(&a, &b);
}

TEST(rnr_then_recv_posted)
{
	struct side a, b;
	struct ibv_wc wc;

	/* rnr_retry 7: retry for ever; a receive posted later lets it through */
	pair_up(&a, &b, IBV_QPT_RC, 0, 0);
	pattern(a.buf, 100, 23);
	CHECK_EQ(post_send(a.qp, IBV_WR_SEND, 1, 0, a.buf, 100, a.mr->lkey, 0, 0, 0), 0);
	NO_WC(a.scq, wc);
	CHECK_EQ(post_recv(b.qp, 2, b.buf, 4096, b.mr->lkey), 0);
	WAIT_WC(b.rcq, wc);
	CHECK_WC(wc, 2, IBV_WC_SUCCESS, IBV_WC_RECV);
	CHECK_EQ(wc.byte_len, 100);
	CHECK_MEM(b.buf, a.buf, 100);
	WAIT_WC(a.scq, wc);
	CHECK_WC(wc, 1, IBV_WC_SUCCESS, IBV_WC_SEND);
	pair_down(&a, &b);
}

TEST(err_modify_to_err_flushes_recvs)
{
	struct side a, b;
	struct ibv_qp_attr qa;
	struct ibv_wc wc;
	int i;

	pair_up(&a, &b, IBV_QPT_RC, 0, 0);
	for (i = 0; i < 5; i++)
		CHECK_EQ(post_recv(b.qp, 500 + i, b.buf + i * 64, 64, b.mr->lkey), 0);
	NO_WC(b.rcq, wc);
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_ERR;
	CHECK_EQ(ibv_modify_qp(b.qp, &qa, IBV_QP_STATE), 0);
	for (i = 0; i < 5; i++) {
		WAIT_WC(b.rcq, wc);
		CHECK_EQ(wc.wr_id, 500 + i);
		CHECK_EQ(wc.status, IBV_WC_WR_FLUSH_ERR);
		CHECK_EQ(wc.qp_num, b.qp->qp_num);
	}
	NO_WC(b.rcq, wc);
	/* receives posted in ERROR are flushed too */
	CHECK_EQ(post_recv(b.qp, 600, b.buf, 64, b.mr->lkey), 0);
	WAIT_WC(b.rcq, wc);
	CHECK_EQ(wc.wr_id, 600);
	CHECK_EQ(wc.status, IBV_WC_WR_FLUSH_ERR);
	/* the requester toward an ERROR responder fails rather than hangs */
	CHECK_EQ(post_send(a.qp, IBV_WR_SEND, 7, 0, a.buf, 8, a.mr->lkey, 0, 0, 0), 0);
	WAIT_WC(a.scq, wc);
	CHECK_EQ(wc.wr_id, 7);
	CHECK_NE(wc.status, IBV_WC_SUCCESS);
	pair_down(&a, &b);
}

/* ---- atomicity between threads ------------------------------------------------------ */

#define FAA_N 10000

struct faa_arg {
	struct side *s;
	uint64_t raddr;
	uint32_t rkey;
	int errors;
	int first_status;
};

static void *faa_thread(void *p)
{
	struct faa_arg *t = p;
	uint64_t *res = (uint64_t *)t->s->buf;
	struct ibv_wc wc;
	int i;

	for (i = 0; i < FAA_N; i++) {
		if (post_atomic(t->s->qp, IBV_WR_ATOMIC_FETCH_AND_ADD, i, &res[i],
				t->s->mr->lkey, t->raddr, t->rkey, 1, 0)) {
			t->errors++;
			break;
		}
		if (poll1(t->s->scq, &wc, 3000) != 1 || wc.status != IBV_WC_SUCCESS ||
		    wc.wr_id != (uint64_t)i) {
			if (!t->errors)
				t->first_status = wc.status;
			t->errors++;
			break;
		}
	}
	return NULL;
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

TEST(atomics_two_threads)
{
	struct side a1, a2, b;
	struct ibv_qp *b1, *b2;
	struct faa_arg t1, t2;
	pthread_t th1, th2;
	uint64_t *counter, *all;
	int i;

	side_init(&b, ctx_b, IBV_QPT_RC, MR_ALL, SIDE_NOQP);
	b1 = side_qp(&b, IBV_QPT_RC, NULL, 0);
	b2 = side_qp(&b, IBV_QPT_RC, NULL, 0);
	CHECK(b1 != NULL && b2 != NULL);
	side_init(&a1, ctx_a, IBV_QPT_RC, MR_ALL, 0);
	side_init(&a2, ctx_a, IBV_QPT_RC, MR_ALL, 0);
	connect2(a1.qp, b1, &def_opts, &def_opts);
	connect2(a2.qp, b2, &def_opts, &def_opts);
	counter = (uint64_t *)(b.buf + 4096);
	*counter = 0;
	t1 = (struct faa_arg){ &a1, (uintptr_t)counter, b.mr->rkey, 0, 0 };
	t2 = (struct faa_arg){ &a2, (uintptr_t)counter, b.mr->rkey, 0, 0 };
	CHECK_EQ(pthread_create(&th1, NULL, faa_thread, &t1), 0);
	CHECK_EQ(pthread_create(&th2, NULL, faa_thread, &t2), 0);
	pthread_join(th1, NULL);
	pthread_join(th2, NULL);
	CHECK_EQ(t1.errors, 0);
	CHECK_EQ(t2.errors, 0);
	CHECK_EQ(*counter, 2 * FAA_N);
	/* every old value was returned exactly once */
	all = malloc(2 * FAA_N * sizeof(*all));
	CHECK(all != NULL);
	memcpy(all, a1.buf, FAA_N * sizeof(*all));
	memcpy(all + FAA_N, a2.buf, FAA_N * sizeof(*all));
	qsort(all, 2 * FAA_N, sizeof(*all), cmp_u64);
	for (i = 0; i < 2 * FAA_N; i++)
		if (all[i] != (uint64_t)i)
			test_fail(__FILE__, __LINE__, "old value #%d is %" PRIu64, i, all[i]);
	free(all);
	side_fini(&a1);
	side_fini(&a2);
	CHECK_EQ(ibv_destroy_qp(b1), 0);
	CHECK_EQ(ibv_destroy_qp(b2), 0);
	side_fini(&b);
}

/* ---- one QP and its CQs shared by threads ------------------------------------------- */

/* Four threads post SENDs on one QP and poll its send CQ; two take the
 * receive completions from one CQ and repost the buffers on the receiving
 * QP. The send queue's, receive queue's and CQs' spin locks are contended,
 * taken inline on the data path and by the library's own calls elsewhere
 * (same_host.h): every message must arrive once, intact, and every send
 * complete once. */
#define SHQ_T 4
#define SHQ_R 2
#define SHQ_N 4000
#define SHQ_SLOTS 64

struct shq {
	struct side *a, *b;
	int tid;
	_Atomic int *seen; /* [SHQ_T][SHQ_N] */
	_Atomic int *received, *bad;
};

static void *shq_sender(void *p)
{
	struct shq *t = p;
	uint32_t msg[2];
	struct ibv_wc wc;

	for (uint32_t i = 0; i < SHQ_N; i++) {
		msg[0] = (uint32_t)t->tid;
		msg[1] = i;
		if (post_send(t->a->qp, IBV_WR_SEND, (uint64_t)t->tid << 32 | i, IBV_SEND_INLINE,
			      msg, sizeof(msg), 0, 0, 0, 0) ||
		    poll1(t->a->scq, &wc, 5000) != 1 || wc.status != IBV_WC_SUCCESS ||
		    wc.opcode != IBV_WC_SEND) {
			atomic_fetch_add(t->bad, 1);
			break;
		}
	}
	return NULL;
}

static void *shq_receiver(void *p)
{
	struct shq *t = p;
	struct ibv_wc wc;

	while (atomic_load(t->received) < SHQ_T * SHQ_N && !atomic_load(t->bad)) {
		uint32_t msg[2];
		uint8_t *slot;
		int n = ibv_poll_cq(t->b->rcq, 1, &wc);

		if (n == 0) {
			sched_yield();
			continue;
		}
		if (n != 1 || wc.status != IBV_WC_SUCCESS || wc.byte_len != sizeof(msg) ||
		    wc.wr_id >= SHQ_SLOTS) {
			atomic_fetch_add(t->bad, 1);
			break;
		}
		slot = t->b->buf + wc.wr_id * 16;
		memcpy(msg, slot, sizeof(msg));
		if (msg[0] >= SHQ_T || msg[1] >= SHQ_N) {
			atomic_fetch_add(t->bad, 1);
			break;
		}
		atomic_fetch_add(&t->seen[msg[0] * SHQ_N + msg[1]], 1);
		atomic_fetch_add(t->received, 1);
		memset(slot, 0xee, 16);
		if (post_recv(t->b->qp, wc.wr_id, slot, 16, t->b->mr->lkey)) {
			atomic_fetch_add(t->bad, 1);
			break;
		}
	}
	return NULL;
}

TEST(shared_qp_threads)
{
	struct side a, b;
	struct shq ts[SHQ_T + SHQ_R];
	pthread_t th[SHQ_T + SHQ_R];
	_Atomic int *seen = calloc(SHQ_T * SHQ_N, sizeof(*seen));
	_Atomic int received = 0, bad = 0;
	int i, dup = 0, lost = 0;

	CHECK(seen != NULL);
	side_init(&a, ctx_a, IBV_QPT_RC, MR_ALL, 0);
	side_init(&b, ctx_b, IBV_QPT_RC, MR_ALL, 0);
	connect2(a.qp, b.qp, &def_opts, &def_opts);
	for (i = 0; i < SHQ_SLOTS; i++)
		CHECK_EQ(post_recv(b.qp, (uint64_t)i, b.buf + i * 16, 16, b.mr->lkey), 0);
	for (i = 0; i < SHQ_T + SHQ_R; i++) {
		ts[i] = (struct shq){ &a, &b, i, seen, &received, &bad };
		CHECK_EQ(pthread_create(&th[i], NULL, i < SHQ_T ? shq_sender : shq_receiver,
					&ts[i]),
			 0);
	}
	for (i = 0; i < SHQ_T + SHQ_R; i++)
		pthread_join(th[i], NULL);
	CHECK_EQ(atomic_load(&bad), 0);
	CHECK_EQ(atomic_load(&received), SHQ_T * SHQ_N);
	for (i = 0; i < SHQ_T * SHQ_N; i++) {
		dup += atomic_load(&seen[i]) > 1;
		lost += atomic_load(&seen[i]) == 0;
	}
	CHECK_EQ(dup, 0);
	CHECK_EQ(lost, 0);
	free(seen);
	side_fini(&a);
	side_fini(&b);
}

int main(void)
{
	ctx_a = test_open_dev();
	ctx_b = test_open_dev();
	if (ibv_query_gid(ctx_a, 1, 0, &gid0)) {
		fprintf(stderr, "query_gid failed\n");
		return 1;
	}
	alarm(55);
	RUN(rc_send);
	RUN(rc_pingpong_carry);
	RUN(rc_carry_short_way);
	RUN(rc_send_imm);
	RUN(rc_write);
	RUN(rc_write_imm);
	RUN(rc_read);
	RUN(rc_atomics);
	RUN(rc_inline);
	RUN(rc_three_sges);
	RUN(rc_unsignaled);
	RUN(rc_solicited_events);
	RUN(channel_stale_event);
	RUN(channel_epoll);
	RUN(cq_ex_poll);
	RUN(qp_ex_wr_api);
	RUN(rc_rereg_and_iova);
	RUN(rc_rereg_keeps_keys_access);
	RUN(rc_rereg_keeps_keys_pd);
	RUN(qp_reset_cleans_cqs);
	RUN(uc_ops);
	RUN(ud_grh);
	RUN(ud_multicast_local);
	RUN(srq_two_qps_limit);
	RUN(srq_resize);
	RUN(srq_resize_xrc);
	RUN(err_bad_rkey);
	RUN(err_out_of_range);
	RUN(err_missing_mr_access);
	RUN(err_missing_qp_access);
	RUN(err_rkey_of_other_pd);
	RUN(err_dereg_rkey);
	RUN(err_dereg_lkey);
	RUN(err_bad_lkey);
	RUN(err_rnr_retry_exceeded);
	RUN(rnr_then_recv_posted);
	RUN(err_modify_to_err_flushes_recvs);
	RUN(atomics_two_threads);
	RUN(shared_qp_threads);
	ibv_close_device(ctx_a);
	ibv_close_device(ctx_b);
	return test_summary();
}
