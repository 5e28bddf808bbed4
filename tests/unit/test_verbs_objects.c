/*
 * Control-path verbs as an application sees them: protection domains,
 * memory regions (every access combination, iova, rereg), address handles,
 * completion queues and channels, shared receive queues and queue pairs with
 * the QP state machine and its attribute-mask rules (IBA 10.3 / 11.2.5,
 * as enforced by the kernel's ib_modify_qp_is_ok), and the EBUSY rules for
 * destroying objects still in use.
 *
 * Only the public <infiniband/verbs.h> API is used.
 */
#include "harness.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

static struct ibv_context *ctx;
static struct ibv_device_attr dattr;
static union ibv_gid gid0;

static void open_ctx(void)
{
	ctx = test_open_dev();
	if (ibv_query_device(ctx, &dattr) || ibv_query_gid(ctx, 1, 0, &gid0)) {
		fprintf(stderr, "cannot query device\n");
		exit(1);
	}
}

static void fill(uint8_t *p, size_t n, uint32_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)((i * 131u + seed * 7u) ^ (i >> 8));
}

static int filled(const uint8_t *p, size_t n, uint32_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != (uint8_t)((i * 131u + seed * 7u) ^ (i >> 8)))
			return 0;
	return 1;
}

/* ---- PD ---------------------------------------------------------------- */

TEST(pd_alloc_dealloc)
{
	struct ibv_pd *a, *b;

	a = ibv_alloc_pd(ctx);
	b = ibv_alloc_pd(ctx);
	CHECK(a != NULL && b != NULL);
	CHECK(a != b);
	CHECK(a->context == ctx);
	CHECK_EQ(ibv_dealloc_pd(a), 0);
	CHECK_EQ(ibv_dealloc_pd(b), 0);
}

TEST(pd_busy_with_mr)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	static uint8_t buf[4096];
	struct ibv_mr *mr;

	CHECK(pd != NULL);
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	CHECK(mr != NULL);
	CHECK_EQ(ibv_dealloc_pd(pd), EBUSY);
	CHECK_EQ(ibv_dereg_mr(mr), 0);
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
}

/* ---- MR ---------------------------------------------------------------- */

TEST(mr_access_combinations)
{
	static const int bits[] = { IBV_ACCESS_LOCAL_WRITE, IBV_ACCESS_REMOTE_WRITE,
				    IBV_ACCESS_REMOTE_READ, IBV_ACCESS_REMOTE_ATOMIC };
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	size_t len = 3 * 4096 + 100;
	struct ibv_mr *mrs[16];
	uint32_t keys[16];
	int nk = 0, c, i, j;
	uint8_t *buf;

	CHECK(pd != NULL);
	buf = malloc(len);
	CHECK(buf != NULL);
	fill(buf, len, 1);
	for (c = 0; c < 16; c++) {
		int acc = 0;
		bool bad;

		for (i = 0; i < 4; i++)
			if (c & (1 << i))
				acc |= bits[i];
		/* IBA 10.6.3.1 (o10-27): remote write or atomic needs local write */
		bad = (acc & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
		      !(acc & IBV_ACCESS_LOCAL_WRITE);
		errno = 0;
		mrs[c] = ibv_reg_mr(pd, buf + 7, len - 7, acc);
		if (bad) {
			if (mrs[c])
				test_fail(__FILE__, __LINE__, "access 0x%x accepted", acc);
			CHECK_EQ(errno, EINVAL);
			continue;
		}
		if (!mrs[c])
			test_fail(__FILE__, __LINE__, "access 0x%x: errno %d", acc, errno);
		CHECK(mrs[c]->addr == buf + 7);
		CHECK_EQ(mrs[c]->length, len - 7);
		CHECK(mrs[c]->pd == pd);
		CHECK(mrs[c]->context == ctx);
		CHECK_NE(mrs[c]->lkey, 0);
		CHECK_EQ(mrs[c]->lkey, mrs[c]->rkey);
		for (j = 0; j < nk; j++)
			CHECK_NE(keys[j], mrs[c]->lkey);
		keys[nk++] = mrs[c]->lkey;
	}
	/* Registering (several times) kept the contents, and the memory is
	 * still ordinary memory of ours. */
	CHECK(filled(buf, len, 1));
	fill(buf, len, 2);
	for (c = 0; c < 16; c++)
		if (mrs[c])
			CHECK_EQ(ibv_dereg_mr(mrs[c]), 0);
	CHECK(filled(buf, len, 2));
	fill(buf, len, 3);
	CHECK(filled(buf, len, 3));
	free(buf);
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
}

TEST(mr_optional_flags)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	static uint8_t buf[8192];
	struct ibv_mr *mr;

	CHECK(pd != NULL);
	/* Relaxed ordering is an optional flag: a device may ignore it. */
	mr = ibv_reg_mr(pd, buf, sizeof(buf),
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING);
	CHECK(mr != NULL);
	CHECK_EQ(ibv_dereg_mr(mr), 0);
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
}

TEST(mr_mmap_and_stack)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	uint8_t stackbuf[512];
	struct ibv_mr *a, *b;
	size_t len = 1 << 20;
	uint8_t *m;

	CHECK(pd != NULL);
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(m != MAP_FAILED);
	fill(m, len, 9);
	fill(stackbuf, sizeof(stackbuf), 10);
	a = ibv_reg_mr(pd, m, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	b = ibv_reg_mr(pd, stackbuf, sizeof(stackbuf), IBV_ACCESS_LOCAL_WRITE);
	CHECK(a != NULL && b != NULL);
	CHECK(filled(m, len, 9));
	CHECK(filled(stackbuf, sizeof(stackbuf), 10));
	CHECK_EQ(ibv_dereg_mr(b), 0);
	CHECK_EQ(ibv_dereg_mr(a), 0);
	CHECK(filled(stackbuf, sizeof(stackbuf), 10));
	CHECK(filled(m, len, 9));
	CHECK_EQ(munmap(m, len), 0);
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
}

TEST(mr_iova2)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	static uint8_t buf[3 * 4096];
	struct ibv_mr *mr;

	CHECK(pd != NULL);
	mr = ibv_reg_mr_iova2(pd, buf + 16, 8192, 0x10000000ull,
			      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	CHECK(mr != NULL);
	CHECK(mr->addr == buf + 16);
	CHECK_EQ(mr->length, 8192);
	CHECK_NE(mr->rkey, 0);
	CHECK_EQ(ibv_dereg_mr(mr), 0);
	/* ibv_reg_mr_iova (the older entry point) too */
	mr = ibv_reg_mr_iova(pd, buf, 4096, 0, IBV_ACCESS_LOCAL_WRITE);
	CHECK(mr != NULL);
	CHECK_EQ(ibv_dereg_mr(mr), 0);
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
}

TEST(mr_rereg)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx), *pd2 = ibv_alloc_pd(ctx);
	static uint8_t b1[8192], b2[3 * 4096];
	struct ibv_mr *mr;

	CHECK(pd != NULL && pd2 != NULL);
	fill(b1, sizeof(b1), 4);
	fill(b2, sizeof(b2), 5);
	mr = ibv_reg_mr(pd, b1, sizeof(b1), IBV_ACCESS_LOCAL_WRITE);
	CHECK(mr != NULL);
	/* translation */
	CHECK_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, b2 + 4,
			      sizeof(b2) - 4, 0), 0);
	CHECK(mr->addr == b2 + 4);
	CHECK_EQ(mr->length, sizeof(b2) - 4);
	CHECK(mr->pd == pd);
	CHECK_NE(mr->lkey, 0);
	CHECK(filled(b1, sizeof(b1), 4));
	CHECK(filled(b2, sizeof(b2), 5));
	/* access */
	CHECK_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				      IBV_ACCESS_REMOTE_READ), 0);
	CHECK(mr->addr == b2 + 4);
	/* access that breaks the local-write rule */
	CHECK_NE(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			      IBV_ACCESS_REMOTE_WRITE), 0);
	/* pd */
	CHECK_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0, 0), 0);
	CHECK(mr->pd == pd2);
	CHECK_EQ(ibv_dealloc_pd(pd2), EBUSY);
	/* bad input */
	CHECK_NE(ibv_rereg_mr(mr, 1 << 10, NULL, NULL, 0, 0), 0);
	CHECK_NE(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, b1, 0, 0), 0);
	CHECK_EQ(ibv_dereg_mr(mr), 0);
	CHECK(filled(b2, sizeof(b2), 5));
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
	CHECK_EQ(ibv_dealloc_pd(pd2), 0);
}

/* ---- AH ---------------------------------------------------------------- */

TEST(ah_create_destroy)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_ah_attr a;
	struct ibv_ah *ah;

	CHECK(pd != NULL);
	memset(&a, 0, sizeof(a));
	a.is_global = 1;
	a.port_num = 1;
	a.grh.dgid = gid0;
	a.grh.sgid_index = 0;
	a.grh.hop_limit = 64;
	ah = ibv_create_ah(pd, &a);
	CHECK(ah != NULL);
	CHECK(ah->pd == pd);
	CHECK(ah->context == ctx);
	CHECK_EQ(ibv_dealloc_pd(pd), EBUSY);
	CHECK_EQ(ibv_destroy_ah(ah), 0);

	/* RoCE needs a GRH */
	a.is_global = 0;
	errno = 0;
	ah = ibv_create_ah(pd, &a);
	CHECK(ah == NULL);
	CHECK_EQ(errno, EINVAL);
	/* bad port, bad sgid index */
	a.is_global = 1;
	a.port_num = 2;
	CHECK(ibv_create_ah(pd, &a) == NULL);
	a.port_num = 1;
	a.grh.sgid_index = 200;
	CHECK(ibv_create_ah(pd, &a) == NULL);
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
}

/* ---- CQ and channels --------------------------------------------------- */

TEST(cq_create_limits)
{
	struct ibv_cq *cq;

	errno = 0;
	cq = ibv_create_cq(ctx, 0, NULL, NULL, 0);
	CHECK(cq == NULL);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	cq = ibv_create_cq(ctx, dattr.max_cqe + 1, NULL, NULL, 0);
	CHECK(cq == NULL);
	CHECK_EQ(errno, EINVAL);
	cq = ibv_create_cq(ctx, -1, NULL, NULL, 0);
	CHECK(cq == NULL);

	cq = ibv_create_cq(ctx, 1, (void *)0x1234, NULL, 0);
	CHECK(cq != NULL);
	CHECK(cq->cqe >= 1);
	CHECK(cq->cq_context == (void *)0x1234);
	CHECK(cq->context == ctx);
	CHECK_EQ(ibv_destroy_cq(cq), 0);

	cq = ibv_create_cq(ctx, dattr.max_cqe, NULL, NULL, 0);
	CHECK(cq != NULL);
	CHECK(cq->cqe >= dattr.max_cqe);
	CHECK_EQ(ibv_destroy_cq(cq), 0);
}

TEST(cq_resize)
{
	struct ibv_wc wc[4];
	struct ibv_cq *cq;

	cq = ibv_create_cq(ctx, 10, NULL, NULL, 0);
	CHECK(cq != NULL);
	CHECK(cq->cqe >= 10);
	CHECK_EQ(ibv_resize_cq(cq, 1000), 0);
	CHECK(cq->cqe >= 1000);
	CHECK_EQ(ibv_poll_cq(cq, 4, wc), 0);
	CHECK_EQ(ibv_resize_cq(cq, 20), 0);
	CHECK(cq->cqe >= 20);
	CHECK_EQ(ibv_resize_cq(cq, dattr.max_cqe + 1), EINVAL);
	CHECK_EQ(ibv_resize_cq(cq, 0), EINVAL);
	CHECK(cq->cqe >= 20);
	CHECK_EQ(ibv_poll_cq(cq, 4, wc), 0);
	CHECK_EQ(ibv_destroy_cq(cq), 0);
}

TEST(comp_channel)
{
	struct ibv_comp_channel *ch, *ch2;
	struct ibv_cq *cq;

	ch = ibv_create_comp_channel(ctx);
	ch2 = ibv_create_comp_channel(ctx);
	CHECK(ch != NULL && ch2 != NULL);
	CHECK(ch->fd >= 0);
	CHECK(ch->fd != ch2->fd);
	CHECK(ch->context == ctx);
	CHECK(fcntl(ch->fd, F_GETFD) >= 0);
	cq = ibv_create_cq(ctx, 16, NULL, ch, 0);
	CHECK(cq != NULL);
	CHECK(cq->channel == ch);
	CHECK_EQ(ibv_req_notify_cq(cq, 0), 0);
	CHECK_EQ(ibv_req_notify_cq(cq, 1), 0);
	/* a channel in use cannot go */
	CHECK_EQ(ibv_destroy_comp_channel(ch), EBUSY);
	CHECK_EQ(ibv_destroy_cq(cq), 0);
	CHECK_EQ(ibv_destroy_comp_channel(ch), 0);
	CHECK_EQ(ibv_destroy_comp_channel(ch2), 0);
	/* comp_vector out of range */
	errno = 0;
	cq = ibv_create_cq(ctx, 16, NULL, NULL, ctx->num_comp_vectors);
	CHECK(cq == NULL);
	CHECK_EQ(errno, EINVAL);
}

/* ---- SRQ ----------------------------------------------------------------- */

TEST(srq_lifecycle)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_srq_init_attr ia;
	struct ibv_srq_attr sa;
	struct ibv_srq *srq;

	CHECK(pd != NULL);
	memset(&ia, 0, sizeof(ia));
	ia.srq_context = (void *)0x77;
	ia.attr.max_wr = 16;
	ia.attr.max_sge = 2;
	srq = ibv_create_srq(pd, &ia);
	CHECK(srq != NULL);
	CHECK(srq->srq_context == (void *)0x77);
	CHECK(srq->pd == pd);
	CHECK(ia.attr.max_wr >= 16);
	CHECK(ia.attr.max_sge >= 2);

	memset(&sa, 0xff, sizeof(sa));
	CHECK_EQ(ibv_query_srq(srq, &sa), 0);
	CHECK(sa.max_wr >= 16);
	CHECK(sa.max_sge >= 2);
	CHECK_EQ(sa.srq_limit, 0);

	sa.srq_limit = 5;
	CHECK_EQ(ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT), 0);
	memset(&sa, 0, sizeof(sa));
	CHECK_EQ(ibv_query_srq(srq, &sa), 0);
	CHECK_EQ(sa.srq_limit, 5);

	/* limit beyond the queue */
	sa.srq_limit = sa.max_wr + 1;
	CHECK_EQ(ibv_modify_srq(srq, &sa, IBV_SRQ_LIMIT), EINVAL);
	CHECK_EQ(ibv_query_srq(srq, &sa), 0);
	CHECK_EQ(sa.srq_limit, 5);

	CHECK_EQ(ibv_dealloc_pd(pd), EBUSY);
	CHECK_EQ(ibv_destroy_srq(srq), 0);

	/* beyond the device's limits */
	ia.attr.max_wr = dattr.max_srq_wr + 1;
	ia.attr.max_sge = 1;
	errno = 0;
	CHECK(ibv_create_srq(pd, &ia) == NULL);
	CHECK_EQ(errno, EINVAL);
	ia.attr.max_wr = 4;
	ia.attr.max_sge = dattr.max_srq_sge + 1;
	errno = 0;
	CHECK(ibv_create_srq(pd, &ia) == NULL);
	CHECK_EQ(errno, EINVAL);
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
}

/* ---- QP -------------------------------------------------------------------- */

static struct ibv_qp *mkqp(struct ibv_pd *pd, struct ibv_cq *scq, struct ibv_cq *rcq,
			   enum ibv_qp_type type, struct ibv_srq *srq)
{
	struct ibv_qp_init_attr ia;

	memset(&ia, 0, sizeof(ia));
	ia.qp_context = (void *)0x99;
	ia.send_cq = scq;
	ia.recv_cq = rcq;
	ia.srq = srq;
	ia.qp_type = type;
	ia.cap.max_send_wr = 16;
	ia.cap.max_recv_wr = srq ? 0 : 16;
	ia.cap.max_send_sge = 2;
	ia.cap.max_recv_sge = srq ? 0 : 2;
	ia.cap.max_inline_data = 64;
	return ibv_create_qp(pd, &ia);
}

TEST(qp_create_types)
{
	static const enum ibv_qp_type types[] = { IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD };
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr qa;
	struct ibv_qp *qp[3];
	int i, j;

	CHECK(pd != NULL && cq != NULL);
	for (i = 0; i < 3; i++) {
		memset(&ia, 0, sizeof(ia));
		ia.qp_context = (void *)0x99;
		ia.send_cq = cq;
		ia.recv_cq = cq;
		ia.qp_type = types[i];
		ia.cap.max_send_wr = 16;
		ia.cap.max_recv_wr = 17;
		ia.cap.max_send_sge = 2;
		ia.cap.max_recv_sge = 3;
		ia.cap.max_inline_data = 64;
		qp[i] = ibv_create_qp(pd, &ia);
		CHECK(qp[i] != NULL);
		CHECK(ia.cap.max_send_wr >= 16);
		CHECK(ia.cap.max_recv_wr >= 17);
		CHECK(ia.cap.max_send_sge >= 2);
		CHECK(ia.cap.max_recv_sge >= 3);
		CHECK(ia.cap.max_inline_data >= 64);
		CHECK_EQ(qp[i]->qp_type, types[i]);
		CHECK_EQ(qp[i]->state, IBV_QPS_RESET);
		CHECK(qp[i]->qp_num > 1 && qp[i]->qp_num < (1u << 24));
		CHECK(qp[i]->qp_context == (void *)0x99);
		CHECK(qp[i]->pd == pd && qp[i]->send_cq == cq && qp[i]->recv_cq == cq);
		CHECK(qp[i]->context == ctx);
		for (j = 0; j < i; j++)
			CHECK_NE(qp[i]->qp_num, qp[j]->qp_num);
		memset(&qa, 0xff, sizeof(qa));
		memset(&ia, 0, sizeof(ia));
		CHECK_EQ(ibv_query_qp(qp[i], &qa, IBV_QP_STATE | IBV_QP_CAP, &ia), 0);
		CHECK_EQ(qa.qp_state, IBV_QPS_RESET);
		CHECK(ia.cap.max_send_wr >= 16);
		CHECK(ia.cap.max_recv_wr >= 17);
		CHECK_EQ(ia.qp_type, types[i]);
		CHECK(ia.send_cq == cq && ia.recv_cq == cq);
	}
	/* busy: PD and CQ still hold QPs */
	CHECK_EQ(ibv_destroy_cq(cq), EBUSY);
	CHECK_EQ(ibv_dealloc_pd(pd), EBUSY);
	for (i = 0; i < 3; i++)
		CHECK_EQ(ibv_destroy_qp(qp[i]), 0);
	CHECK_EQ(ibv_destroy_cq(cq), 0);
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
}

TEST(qp_create_limits)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_qp_init_attr ia, base;
	struct ibv_qp *qp;

	CHECK(pd != NULL && cq != NULL);
	memset(&base, 0, sizeof(base));
	base.send_cq = cq;
	base.recv_cq = cq;
	base.qp_type = IBV_QPT_RC;
	base.cap.max_send_wr = 4;
	base.cap.max_recv_wr = 4;
	base.cap.max_send_sge = 1;
	base.cap.max_recv_sge = 1;

	ia = base;
	ia.cap.max_send_wr = dattr.max_qp_wr + 1;
	errno = 0;
	CHECK(ibv_create_qp(pd, &ia) == NULL);
	CHECK_EQ(errno, EINVAL);
	ia = base;
	ia.cap.max_recv_wr = dattr.max_qp_wr + 1;
	errno = 0;
	CHECK(ibv_create_qp(pd, &ia) == NULL);
	CHECK_EQ(errno, EINVAL);
	ia = base;
	ia.cap.max_send_sge = dattr.max_sge + 1;
	errno = 0;
	CHECK(ibv_create_qp(pd, &ia) == NULL);
	CHECK_EQ(errno, EINVAL);
	ia = base;
	ia.cap.max_recv_sge = dattr.max_sge + 1;
	errno = 0;
	CHECK(ibv_create_qp(pd, &ia) == NULL);
	CHECK_EQ(errno, EINVAL);
	ia = base;
	ia.cap.max_inline_data = 1u << 24;
	errno = 0;
	CHECK(ibv_create_qp(pd, &ia) == NULL);
	CHECK_EQ(errno, EINVAL);
	/* no CQ */
	ia = base;
	ia.send_cq = NULL;
	CHECK(ibv_create_qp(pd, &ia) == NULL);
	/* unsupported type */
	ia = base;
	ia.qp_type = IBV_QPT_DRIVER;
	CHECK(ibv_create_qp(pd, &ia) == NULL);
	/* a raw packet QP needs CAP_NET_RAW (tests/hosts/raw.sh runs both) */
	ia = base;
	ia.qp_type = IBV_QPT_RAW_PACKET;
	errno = 0;
	qp = ibv_create_qp(pd, &ia);
	if (qp)
		CHECK_EQ(ibv_destroy_qp(qp), 0);
	else
		CHECK_EQ(errno, EPERM);
	/* the maximum itself is fine */
	ia = base;
	ia.cap.max_send_wr = dattr.max_qp_wr;
	ia.cap.max_send_sge = dattr.max_sge;
	qp = ibv_create_qp(pd, &ia);
	CHECK(qp != NULL);
	CHECK_EQ(ibv_destroy_qp(qp), 0);
	CHECK_EQ(ibv_destroy_cq(cq), 0);
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
}

/* The masks rdma-core's documentation (ibv_modify_qp(3)) lists per step. */
#define RC_INIT_MASK (IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)
#define RC_RTR_MASK (IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | \
		     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)
#define RC_RTS_MASK (IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | \
		     IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC)

static void init_attr_rc(struct ibv_qp_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_INIT;
	a->pkey_index = 0;
	a->port_num = 1;
	a->qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
}

static void rtr_attr_rc(struct ibv_qp_attr *a, uint32_t dqpn)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_RTR;
	a->path_mtu = IBV_MTU_1024;
	a->dest_qp_num = dqpn;
	a->rq_psn = 0x123456;
	a->max_dest_rd_atomic = 4;
	a->min_rnr_timer = 12;
	a->ah_attr.is_global = 1;
	a->ah_attr.grh.dgid = gid0;
	a->ah_attr.grh.sgid_index = 0;
	a->ah_attr.grh.hop_limit = 1;
	a->ah_attr.port_num = 1;
}

static void rts_attr_rc(struct ibv_qp_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_RTS;
	a->timeout = 14;
	a->retry_cnt = 7;
	a->rnr_retry = 6;
	a->sq_psn = 0x654321;
	a->max_rd_atomic = 2;
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

TEST(qp_modify_rc_path)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;
	struct ibv_qp *qp;

	CHECK(pd != NULL && cq != NULL);
	qp = mkqp(pd, cq, cq, IBV_QPT_RC, NULL);
	CHECK(qp != NULL);

	/* RESET -> RTS, RESET -> RTR: invalid transitions */
	rts_attr_rc(&a);
	CHECK_EQ(ibv_modify_qp(qp, &a, RC_RTS_MASK), EINVAL);
	rtr_attr_rc(&a, qp->qp_num);
	CHECK_EQ(ibv_modify_qp(qp, &a, RC_RTR_MASK), EINVAL);
	CHECK_EQ(qp_state(qp), IBV_QPS_RESET);

	/* RESET -> INIT: missing port, extra sq_psn */
	init_attr_rc(&a);
	CHECK_EQ(ibv_modify_qp(qp, &a, RC_INIT_MASK & ~IBV_QP_PORT), EINVAL);
	CHECK_EQ(ibv_modify_qp(qp, &a, RC_INIT_MASK | IBV_QP_SQ_PSN), EINVAL);
	CHECK_EQ(qp_state(qp), IBV_QPS_RESET);
	a.port_num = 2;
	CHECK_EQ(ibv_modify_qp(qp, &a, RC_INIT_MASK), EINVAL);
	CHECK_EQ(qp_state(qp), IBV_QPS_RESET);
	init_attr_rc(&a);
	CHECK_EQ(ibv_modify_qp(qp, &a, RC_INIT_MASK), 0);
	CHECK_EQ(qp_state(qp), IBV_QPS_INIT);
	CHECK_EQ(qp->state, IBV_QPS_INIT);
	/* INIT -> INIT is allowed */
	CHECK_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS), 0);
	CHECK_EQ(qp_state(qp), IBV_QPS_INIT);

	/* INIT -> RTS invalid; INIT -> RTR missing dest qpn / extra timeout */
	rts_attr_rc(&a);
	CHECK_EQ(ibv_modify_qp(qp, &a, RC_RTS_MASK), EINVAL);
	rtr_attr_rc(&a, qp->qp_num);
	CHECK_EQ(ibv_modify_qp(qp, &a, RC_RTR_MASK & ~IBV_QP_DEST_QPN), EINVAL);
	CHECK_EQ(ibv_modify_qp(qp, &a, RC_RTR_MASK & ~IBV_QP_AV), EINVAL);
	CHECK_EQ(ibv_modify_qp(qp, &a, RC_RTR_MASK | IBV_QP_TIMEOUT), EINVAL);
	CHECK_EQ(qp_state(qp), IBV_QPS_INIT);
	CHECK_EQ(ibv_modify_qp(qp, &a, RC_RTR_MASK), 0);
	CHECK_EQ(qp_state(qp), IBV_QPS_RTR);

	/* RTR -> RTS missing sq_psn / extra dest_qpn */
	rts_attr_rc(&a);
	CHECK_EQ(ibv_modify_qp(qp, &a, RC_RTS_MASK & ~IBV_QP_SQ_PSN), EINVAL);
	a.dest_qp_num = 5;
	CHECK_EQ(ibv_modify_qp(qp, &a, RC_RTS_MASK | IBV_QP_DEST_QPN), EINVAL);
	CHECK_EQ(qp_state(qp), IBV_QPS_RTR);
	rts_attr_rc(&a);
	CHECK_EQ(ibv_modify_qp(qp, &a, RC_RTS_MASK), 0);
	CHECK_EQ(qp_state(qp), IBV_QPS_RTS);
	CHECK_EQ(qp->state, IBV_QPS_RTS);

	/* query returns what was set */
	memset(&a, 0, sizeof(a));
	memset(&ia, 0, sizeof(ia));
	CHECK_EQ(ibv_query_qp(qp, &a,
			      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				      IBV_QP_ACCESS_FLAGS | IBV_QP_AV | IBV_QP_PATH_MTU |
				      IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				      IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER |
				      IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				      IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_CAP,
			      &ia), 0);
	CHECK_EQ(a.qp_state, IBV_QPS_RTS);
	CHECK_EQ(a.port_num, 1);
	CHECK_EQ(a.pkey_index, 0);
	CHECK_EQ(a.qp_access_flags, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	CHECK_EQ(a.path_mtu, IBV_MTU_1024);
	CHECK_EQ(a.dest_qp_num, qp->qp_num);
	CHECK_EQ(a.rq_psn, 0x123456);
	CHECK_EQ(a.sq_psn, 0x654321);
	CHECK_EQ(a.max_dest_rd_atomic, 4);
	CHECK_EQ(a.max_rd_atomic, 2);
	CHECK_EQ(a.min_rnr_timer, 12);
	CHECK_EQ(a.timeout, 14);
	CHECK_EQ(a.retry_cnt, 7);
	CHECK_EQ(a.rnr_retry, 6);
	CHECK_EQ(a.ah_attr.is_global, 1);
	CHECK_EQ(a.ah_attr.port_num, 1);
	CHECK_MEM(&a.ah_attr.grh.dgid, &gid0, 16);
	CHECK_EQ(a.ah_attr.grh.hop_limit, 1);
	CHECK(ia.cap.max_send_wr >= 16);
	CHECK_EQ(ia.qp_type, IBV_QPT_RC);
	CHECK(ia.qp_context == (void *)0x99);

	/* RTS -> RTS with optional attrs; RTS -> RTR invalid */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.min_rnr_timer = 3;
	CHECK_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER), 0);
	CHECK_EQ(ibv_query_qp(qp, &a, IBV_QP_MIN_RNR_TIMER, &ia), 0);
	CHECK_EQ(a.min_rnr_timer, 3);
	rtr_attr_rc(&a, qp->qp_num);
	CHECK_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE), EINVAL);
	CHECK_EQ(qp_state(qp), IBV_QPS_RTS);

	/* -> SQD is the only other move; -> ERR and -> RESET from anywhere */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_ERR;
	CHECK_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	CHECK_EQ(qp_state(qp), IBV_QPS_ERR);
	a.qp_state = IBV_QPS_RTS;
	CHECK_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE), EINVAL);
	a.qp_state = IBV_QPS_RESET;
	CHECK_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	CHECK_EQ(qp_state(qp), IBV_QPS_RESET);
	/* and up again after the reset */
	init_attr_rc(&a);
	CHECK_EQ(ibv_modify_qp(qp, &a, RC_INIT_MASK), 0);
	CHECK_EQ(qp_state(qp), IBV_QPS_INIT);

	CHECK_EQ(ibv_destroy_cq(cq), EBUSY);
	CHECK_EQ(ibv_destroy_qp(qp), 0);
	CHECK_EQ(ibv_destroy_cq(cq), 0);
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
}

TEST(qp_modify_uc_ud)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_qp_init_attr ia;
	struct ibv_qp *uc, *ud;
	struct ibv_qp_attr a;

	CHECK(pd != NULL && cq != NULL);
	uc = mkqp(pd, cq, cq, IBV_QPT_UC, NULL);
	ud = mkqp(pd, cq, cq, IBV_QPT_UD, NULL);
	CHECK(uc != NULL && ud != NULL);

	/* UC: no atomics/rd atomics/timeouts */
	init_attr_rc(&a);
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	CHECK_EQ(ibv_modify_qp(uc, &a, RC_INIT_MASK), 0);
	rtr_attr_rc(&a, ud->qp_num);
	CHECK_EQ(ibv_modify_qp(uc, &a, RC_RTR_MASK), EINVAL); /* rd atomic, rnr */
	CHECK_EQ(ibv_modify_qp(uc, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN), 0);
	rts_attr_rc(&a);
	CHECK_EQ(ibv_modify_qp(uc, &a, RC_RTS_MASK), EINVAL);
	CHECK_EQ(ibv_modify_qp(uc, &a, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
	CHECK_EQ(qp_state(uc), IBV_QPS_RTS);

	/* UD: qkey instead of access flags; no AV */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qkey = 0x11111111;
	CHECK_EQ(ibv_modify_qp(ud, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					       IBV_QP_ACCESS_FLAGS), EINVAL);
	CHECK_EQ(ibv_modify_qp(ud, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT),
		 EINVAL);
	CHECK_EQ(ibv_modify_qp(ud, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					       IBV_QP_QKEY), 0);
	a.qp_state = IBV_QPS_RTR;
	rtr_attr_rc(&a, 5);
	CHECK_EQ(ibv_modify_qp(ud, &a, IBV_QP_STATE | IBV_QP_AV), EINVAL);
	CHECK_EQ(ibv_modify_qp(ud, &a, IBV_QP_STATE), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 77;
	CHECK_EQ(ibv_modify_qp(ud, &a, IBV_QP_STATE), EINVAL);
	CHECK_EQ(ibv_modify_qp(ud, &a, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
	CHECK_EQ(qp_state(ud), IBV_QPS_RTS);
	memset(&a, 0, sizeof(a));
	CHECK_EQ(ibv_query_qp(ud, &a, IBV_QP_QKEY | IBV_QP_SQ_PSN | IBV_QP_STATE, &ia), 0);
	CHECK_EQ(a.qkey, 0x11111111);
	CHECK_EQ(a.sq_psn, 77);
	CHECK_EQ(ia.qp_type, IBV_QPT_UD);

	CHECK_EQ(ibv_destroy_qp(uc), 0);
	CHECK_EQ(ibv_destroy_qp(ud), 0);
	CHECK_EQ(ibv_destroy_cq(cq), 0);
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
}

TEST(qp_with_srq)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *scq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_cq *rcq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_srq_init_attr si;
	struct ibv_srq *srq;
	struct ibv_qp *qp;

	CHECK(pd != NULL && scq != NULL && rcq != NULL);
	memset(&si, 0, sizeof(si));
	si.attr.max_wr = 8;
	si.attr.max_sge = 1;
	srq = ibv_create_srq(pd, &si);
	CHECK(srq != NULL);
	qp = mkqp(pd, scq, rcq, IBV_QPT_RC, srq);
	CHECK(qp != NULL);
	CHECK(qp->srq == srq);
	CHECK_EQ(ibv_destroy_srq(srq), EBUSY);
	CHECK_EQ(ibv_destroy_cq(rcq), EBUSY);
	CHECK_EQ(ibv_destroy_cq(scq), EBUSY);
	CHECK_EQ(ibv_destroy_qp(qp), 0);
	CHECK_EQ(ibv_destroy_srq(srq), 0);
	CHECK_EQ(ibv_destroy_cq(rcq), 0);
	CHECK_EQ(ibv_destroy_cq(scq), 0);
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
}

TEST(qp_ex_create)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_qp_init_attr_ex ia;
	struct ibv_qp_ex *qpx;
	struct ibv_qp *qp;

	CHECK(pd != NULL && cq != NULL);
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = cq;
	ia.recv_cq = cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = 8;
	ia.cap.max_recv_wr = 8;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	ia.pd = pd;
	ia.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE |
			    IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	qp = ibv_create_qp_ex(ctx, &ia);
	CHECK(qp != NULL);
	qpx = ibv_qp_to_qp_ex(qp);
	CHECK(qpx != NULL);
	CHECK(qpx->wr_send != NULL && qpx->wr_complete != NULL);
	CHECK_EQ(ibv_destroy_qp(qp), 0);
	/* no PD in the mask */
	ia.comp_mask = IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	CHECK(ibv_create_qp_ex(ctx, &ia) == NULL);
	CHECK_EQ(ibv_destroy_cq(cq), 0);
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
}

/* ---- multicast ------------------------------------------------------------- */

/* ibv_attach_mcast / ibv_detach_mcast as the kernel's uverbs answers them */
TEST(mcast_attach_errors)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	union ibv_gid g4, g6, uni;
	struct ibv_device_attr da;
	struct ibv_qp *ud, *rc;

	CHECK(pd != NULL && cq != NULL);
	ud = mkqp(pd, cq, cq, IBV_QPT_UD, NULL);
	rc = mkqp(pd, cq, cq, IBV_QPT_RC, NULL);
	CHECK(ud != NULL && rc != NULL);
	memset(&g4, 0, sizeof(g4));
	g4.raw[10] = g4.raw[11] = 0xff;
	g4.raw[12] = 239; /* ::ffff:239.7.7.7, an IPv4 group as rdma_cm names it */
	g4.raw[13] = g4.raw[14] = g4.raw[15] = 7;
	memset(&g6, 0, sizeof(g6));
	g6.raw[0] = 0xff;
	g6.raw[1] = 0x0e; /* ff0e::77 */
	g6.raw[15] = 0x77;
	uni = g4;
	uni.raw[12] = 10; /* ::ffff:10.7.7.7: not a group */

	CHECK_EQ(ibv_query_device(ctx, &da), 0);
	CHECK(da.max_mcast_grp > 0 && da.max_mcast_qp_attach > 0);
	CHECK(da.max_total_mcast_qp_attach >= da.max_mcast_qp_attach);

	/* only UD QPs, only multicast GIDs; the LID is ignored (RoCE) */
	CHECK_EQ(ibv_attach_mcast(rc, &g4, 0), EINVAL);
	CHECK_EQ(ibv_attach_mcast(ud, &uni, 0), EINVAL);
	CHECK_EQ(ibv_attach_mcast(ud, &gid0, 0), EINVAL);
	CHECK_EQ(ibv_attach_mcast(ud, &g4, 0xc001), 0);
	CHECK_EQ(ibv_attach_mcast(ud, &g4, 0), 0); /* twice: harmless */
	CHECK_EQ(ibv_attach_mcast(ud, &g6, 0), 0);
	/* an attached QP is not destroyed: detach first (uverbs: EBUSY) */
	CHECK_EQ(ibv_destroy_qp(ud), EBUSY);
	CHECK_EQ(ibv_detach_mcast(ud, &g4, 0), 0);
	CHECK_EQ(ibv_detach_mcast(ud, &g4, 0), EINVAL); /* no longer attached */
	CHECK_EQ(ibv_detach_mcast(rc, &g6, 0), EINVAL);
	CHECK_EQ(ibv_detach_mcast(ud, &uni, 0), EINVAL);
	CHECK_EQ(ibv_destroy_qp(ud), EBUSY);
	CHECK_EQ(ibv_detach_mcast(ud, &g6, 0), 0);
	CHECK_EQ(ibv_destroy_qp(ud), 0);
	CHECK_EQ(ibv_destroy_qp(rc), 0);
	CHECK_EQ(ibv_destroy_cq(cq), 0);
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
}

int main(void)
{
	open_ctx();
	RUN(pd_alloc_dealloc);
	RUN(pd_busy_with_mr);
	RUN(mr_access_combinations);
	RUN(mr_optional_flags);
	RUN(mr_mmap_and_stack);
	RUN(mr_iova2);
	RUN(mr_rereg);
	RUN(ah_create_destroy);
	RUN(cq_create_limits);
	RUN(cq_resize);
	RUN(comp_channel);
	RUN(srq_lifecycle);
	RUN(qp_create_types);
	RUN(qp_create_limits);
	RUN(qp_modify_rc_path);
	RUN(qp_modify_uc_ud);
	RUN(qp_with_srq);
	RUN(qp_ex_create);
	RUN(mcast_attach_errors);
	ibv_close_device(ctx);
	return test_summary();
}
