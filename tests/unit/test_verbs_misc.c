/*
 * Unit tests of the smaller standard verbs of issue 17: CQ resize growing
 * and shrinking with the pending entries kept in order; completion
 * timestamps (raw and wallclock) against ibv_query_rt_values_ex and the
 * device clock of ibv_query_device_ex; thread and parent domains with
 * custom allocators (the library's CQ object taken from them; QP, CQ, MR
 * on the parent domain moving data as on its PD; EBUSY while in use); the
 * QP rate limit (bounds, states, reported; its pacing: tests/hosts/ratelimit.sh);
 * ECE set and query; device
 * memory (copy round trip, bounds, a zero-based DM MR as local SGE and as
 * the target of RDMA WRITE and READ from another process); importing a
 * context whose command fd came by SCM_RIGHTS (the same PD and MR handles,
 * keys and range; QPs on the imported PD reading and writing the owner's
 * MR; the owner's own requests undisturbed).
 *
 * Needs a running daemon (tests/run.sh starts one per test program).
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

static union ibv_gid gid0;

struct end {
	struct ibv_context *ctx;
	struct ibv_pd *pd; /* the PD, or a parent domain */
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	uint8_t *buf;
};

static void end_init(struct end *e, struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr ia;

	e->ctx = ctx;
	e->pd = pd;
	e->cq = cq;
	e->buf = aligned_alloc(4096, 8192);
	CHECK(e->buf != NULL);
	memset(e->buf, 0, 8192);
	e->mr =
	    ibv_reg_mr(pd, e->buf, 8192,
		       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	CHECK(e->mr != NULL);
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = cq;
	ia.recv_cq = cq;
	ia.qp_type = IBV_QPT_RC;
	ia.sq_sig_all = 1;
	ia.cap.max_send_wr = 64;
	ia.cap.max_recv_wr = 16;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	e->qp = ibv_create_qp(pd, &ia);
	CHECK(e->qp != NULL);
}

static void end_fini(struct end *e)
{
	CHECK_EQ(ibv_destroy_qp(e->qp), 0);
	CHECK_EQ(ibv_dereg_mr(e->mr), 0);
	free(e->buf);
}

static void to_rts(struct ibv_qp *qp, uint32_t dqpn)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	CHECK_EQ(ibv_modify_qp(
		     qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
		 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dqpn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = gid0;
	a.ah_attr.grh.hop_limit = 1;
	a.ah_attr.port_num = 1;
	CHECK_EQ(ibv_modify_qp(qp, &a,
			       IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				   IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				   IBV_QP_MIN_RNR_TIMER),
		 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 10;
	a.retry_cnt = 1;
	a.rnr_retry = 1;
	a.max_rd_atomic = 1;
	CHECK_EQ(ibv_modify_qp(qp, &a,
			       IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				   IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC),
		 0);
}

static int post_write(struct end *from, struct end *to, uint64_t wr_id, size_t off, uint32_t len)
{
	struct ibv_sge sg = {(uintptr_t)from->buf + off, len, from->mr->lkey};
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = &sg;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = (uintptr_t)to->buf + off;
	wr.wr.rdma.rkey = to->mr->rkey;
	return ibv_post_send(from->qp, &wr, &bad);
}

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t raw_clock(struct ibv_context *c)
{
	struct ibv_values_ex v;

	memset(&v, 0, sizeof(v));
	v.comp_mask = IBV_VALUES_MASK_RAW_CLOCK;
	CHECK_EQ(ibv_query_rt_values_ex(c, &v), 0);
	CHECK_EQ(v.comp_mask, IBV_VALUES_MASK_RAW_CLOCK);
	CHECK_EQ(v.raw_clock.tv_sec, 0);
	return (uint64_t)v.raw_clock.tv_nsec;
}

/* Grow then shrink a CQ that holds completions: they stay, in order; a
 * size below what it holds is EINVAL and loses nothing. */
TEST(cq_resize_shrink_keeps_entries)
{
	struct ibv_context *c = test_open_dev();
	struct ibv_pd *pd = ibv_alloc_pd(c);
	struct ibv_cq *cq = ibv_create_cq(c, 16, NULL, NULL, 0), *cqb;
	struct ibv_wc wc[32];
	struct end a, b;
	int i, n;

	CHECK(pd && cq);
	cqb = ibv_create_cq(c, 16, NULL, NULL, 0);
	CHECK(cqb != NULL);
	end_init(&a, c, pd, cq);
	end_init(&b, c, pd, cqb);
	to_rts(a.qp, b.qp->qp_num);
	to_rts(b.qp, a.qp->qp_num);
	for (i = 0; i < 10; i++)
		CHECK_EQ(post_write(&a, &b, 100 + (uint64_t)i, 0, 8), 0);
	CHECK_EQ(ibv_resize_cq(cq, 1024), 0);
	CHECK(cq->cqe >= 1024);
	for (i = 10; i < 12; i++)
		CHECK_EQ(post_write(&a, &b, 100 + (uint64_t)i, 0, 8), 0);
	CHECK_EQ(ibv_resize_cq(cq, 8), EINVAL); /* 12 outstanding */
	CHECK_EQ(ibv_resize_cq(cq, 12), 0);	/* shrink: they all fit */
	CHECK(cq->cqe >= 12 && cq->cqe < 1024);
	n = ibv_poll_cq(cq, 32, wc);
	CHECK_EQ(n, 12);
	for (i = 0; i < n; i++) {
		CHECK_EQ(wc[i].wr_id, 100 + (uint64_t)i);
		CHECK_EQ(wc[i].status, IBV_WC_SUCCESS);
	}
	/* the shrunk CQ still works across its wrap */
	for (int round = 0; round < 5; round++) {
		for (i = 0; i < 10; i++)
			CHECK_EQ(post_write(&a, &b, (uint64_t)(round * 10 + i), 0, 8), 0);
		CHECK_EQ(ibv_poll_cq(cq, 32, wc), 10);
		for (i = 0; i < 10; i++)
			CHECK_EQ(wc[i].wr_id, (uint64_t)(round * 10 + i));
	}
	end_fini(&a);
	end_fini(&b);
	CHECK_EQ(ibv_destroy_cq(cq), 0);
	CHECK_EQ(ibv_destroy_cq(cqb), 0);
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
	ibv_close_device(c);
}

/* Raw completion timestamps are the device clock of ibv_query_rt_values_ex
 * (1 GHz per hca_core_clock), taken when the completion was made, not when
 * it was polled; the wallclock ones are CLOCK_REALTIME. */
TEST(completion_timestamps)
{
	struct ibv_context *c = test_open_dev();
	struct ibv_device_attr_ex dx;
	struct ibv_cq_init_attr_ex ca;
	struct ibv_poll_cq_attr pa = {0};
	struct ibv_pd *pd = ibv_alloc_pd(c);
	struct ibv_cq_ex *cqx;
	struct ibv_cq *cqb;
	uint64_t r0, w0, r1, w1, rpoll, last = 0;
	struct end a, b;
	int i, n = 0;

	CHECK_EQ(ibv_query_device_ex(c, NULL, &dx), 0);
	CHECK_EQ(dx.hca_core_clock, 1000000); /* kHz */
	CHECK(dx.completion_timestamp_mask != 0);
	memset(&ca, 0, sizeof(ca));
	ca.cqe = 64;
	ca.wc_flags = IBV_WC_STANDARD_FLAGS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
		      IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK;
	cqx = ibv_create_cq_ex(c, &ca);
	CHECK(cqx != NULL);
	cqb = ibv_create_cq(c, 64, NULL, NULL, 0);
	CHECK(pd && cqb);
	end_init(&a, c, pd, ibv_cq_ex_to_cq(cqx));
	end_init(&b, c, pd, cqb);
	to_rts(a.qp, b.qp->qp_num);
	to_rts(b.qp, a.qp->qp_num);

	r0 = raw_clock(c);
	w0 = clock_ns(CLOCK_REALTIME);
	for (i = 0; i < 20; i++)
		CHECK_EQ(post_write(&a, &b, (uint64_t)i, 0, 64), 0);
	r1 = raw_clock(c);
	w1 = clock_ns(CLOCK_REALTIME);
	usleep(20000); /* a poll 20 ms later must not move the stamps */
	rpoll = raw_clock(c);
	CHECK_EQ(ibv_start_poll(cqx, &pa), 0);
	do {
		uint64_t ts = ibv_wc_read_completion_ts(cqx);
		uint64_t wall = ibv_wc_read_completion_wallclock_ns(cqx);

		CHECK_EQ(cqx->status, IBV_WC_SUCCESS);
		CHECK_EQ(cqx->wr_id, (uint64_t)n);
		CHECK(ts >= r0 && ts <= r1);
		CHECK(ts >= last);
		CHECK(ts < rpoll);
		/* the same instant on the wall clock, within the clocks' skew */
		CHECK(wall + 1000000 >= w0 && wall <= w1 + 1000000);
		last = ts;
		n++;
	} while (ibv_next_poll(cqx) == 0);
	ibv_end_poll(cqx);
	CHECK_EQ(n, 20);
	end_fini(&a);
	end_fini(&b);
	CHECK_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)), 0);
	CHECK_EQ(ibv_destroy_cq(cqb), 0);
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
	ibv_close_device(c);
}

static struct alloc_log {
	int allocs, frees, use_default;
	void *pd_context_seen;
	struct ibv_pd *pd_seen;
	uint64_t type;
} alog;

static void *my_alloc(struct ibv_pd *pd, void *pd_context, size_t size, size_t alignment,
		      uint64_t resource_type)
{
	void *p;

	alog.pd_seen = pd;
	alog.pd_context_seen = pd_context;
	alog.type = resource_type;
	if (alog.use_default)
		return IBV_ALLOCATOR_USE_DEFAULT;
	if (posix_memalign(&p, alignment < sizeof(void *) ? sizeof(void *) : alignment, size))
		return NULL;
	memset(p, 0xa5, size); /* the library must not trust it is zeroed */
	alog.allocs++;
	return p;
}

static void my_free(struct ibv_pd *pd, void *pd_context, void *ptr, uint64_t resource_type)
{
	(void)pd;
	(void)pd_context;
	(void)resource_type;
	alog.frees++;
	free(ptr);
}

/* Parent domain with a thread domain and allocators: a CQ on it takes its
 * object from the allocator (and gives it back), QPs and MRs on it move
 * data as on the PD; the PD and the TD are busy while it holds them. */
TEST(parent_domain)
{
	struct ibv_context *c = test_open_dev();
	struct ibv_td_init_attr tda = {0};
	struct ibv_parent_domain_init_attr pa;
	struct ibv_cq_init_attr_ex ca;
	struct ibv_pd *pd = ibv_alloc_pd(c), *par;
	struct ibv_td *td;
	struct ibv_cq_ex *cqx;
	struct ibv_cq *cqb;
	struct ibv_wc wc[4];
	struct end a, b;
	int ctx_cookie = 7;

	CHECK(pd != NULL);
	tda.comp_mask = 1;
	CHECK(ibv_alloc_td(c, &tda) == NULL);
	CHECK_EQ(errno, EINVAL);
	tda.comp_mask = 0;
	td = ibv_alloc_td(c, &tda);
	CHECK(td != NULL);
	memset(&pa, 0, sizeof(pa));
	pa.pd = pd;
	pa.td = td;
	pa.comp_mask =
	    IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
	pa.alloc = my_alloc;
	pa.free = my_free;
	pa.pd_context = &ctx_cookie;
	par = ibv_alloc_parent_domain(c, &pa);
	CHECK(par != NULL);
	CHECK(par->context == c);
	CHECK_EQ(ibv_dealloc_pd(pd), EBUSY);
	CHECK_EQ(ibv_dealloc_td(td), EBUSY);
	/* a parent domain of a parent domain is refused */
	pa.pd = par;
	CHECK(ibv_alloc_parent_domain(c, &pa) == NULL);
	CHECK_EQ(errno, EINVAL);

	memset(&alog, 0, sizeof(alog));
	memset(&ca, 0, sizeof(ca));
	ca.cqe = 16;
	ca.wc_flags = IBV_WC_STANDARD_FLAGS;
	ca.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
	ca.parent_domain = pd; /* a plain PD: refused, as mlx5 */
	CHECK(ibv_create_cq_ex(c, &ca) == NULL);
	ca.parent_domain = par;
	cqx = ibv_create_cq_ex(c, &ca);
	CHECK(cqx != NULL);
	CHECK_EQ(alog.allocs, 1);
	CHECK(alog.pd_seen == par);
	CHECK(alog.pd_context_seen == &ctx_cookie);
	CHECK_EQ(alog.type, 5);
	cqb = ibv_create_cq(c, 16, NULL, NULL, 0);
	CHECK(cqb != NULL);

	end_init(&a, c, par, ibv_cq_ex_to_cq(cqx));
	end_init(&b, c, pd, cqb); /* the PD's and the parent's objects meet */
	CHECK(a.qp->pd == par);
	to_rts(a.qp, b.qp->qp_num);
	to_rts(b.qp, a.qp->qp_num);
	for (int i = 0; i < 4096; i++)
		a.buf[i] = (uint8_t)(i * 7 + 3);
	CHECK_EQ(post_write(&a, &b, 1, 0, 4096), 0);
	CHECK_EQ(ibv_poll_cq(ibv_cq_ex_to_cq(cqx), 4, wc), 1);
	CHECK_EQ(wc[0].status, IBV_WC_SUCCESS);
	CHECK_MEM(b.buf, a.buf, 4096);
	end_fini(&a);
	end_fini(&b);
	CHECK_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)), 0);
	CHECK_EQ(alog.frees, 1);

	/* IBV_ALLOCATOR_USE_DEFAULT: the library's own memory */
	alog.use_default = 1;
	cqx = ibv_create_cq_ex(c, &ca);
	CHECK(cqx != NULL);
	CHECK_EQ(alog.allocs, 1);
	CHECK_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)), 0);
	CHECK_EQ(alog.frees, 1);

	CHECK_EQ(ibv_destroy_cq(cqb), 0);
	CHECK_EQ(ibv_dealloc_pd(par), 0);
	CHECK_EQ(ibv_dealloc_td(td), 0);
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
	ibv_close_device(c);
}

/* IBV_QP_RATE_LIMIT: within packet_pacing_caps, into RTS, reported. */
TEST(qp_rate_limit)
{
	struct ibv_context *c = test_open_dev();
	struct ibv_pd *pd = ibv_alloc_pd(c);
	struct ibv_cq *cq = ibv_create_cq(c, 64, NULL, NULL, 0);
	struct ibv_qp_rate_limit_attr rl;
	struct ibv_device_attr_ex dx;
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr qa;
	struct end a, b;

	CHECK_EQ(ibv_query_device_ex(c, NULL, &dx), 0);
	CHECK(dx.packet_pacing_caps.qp_rate_limit_min > 0);
	CHECK(dx.packet_pacing_caps.qp_rate_limit_max >= dx.packet_pacing_caps.qp_rate_limit_min);
	CHECK(dx.packet_pacing_caps.supported_qpts & (1u << IBV_QPT_RC));
	end_init(&a, c, pd, cq);
	end_init(&b, c, pd, cq);
	memset(&rl, 0, sizeof(rl));
	rl.rate_limit = dx.packet_pacing_caps.qp_rate_limit_min;
	CHECK_EQ(ibv_modify_qp_rate_limit(a.qp, &rl), EINVAL); /* not in RTS */
	to_rts(a.qp, b.qp->qp_num);
	to_rts(b.qp, a.qp->qp_num);
	rl.rate_limit = 50000;
	rl.max_burst_sz = 4096;
	rl.typical_pkt_sz = 1024;
	CHECK_EQ(ibv_modify_qp_rate_limit(a.qp, &rl), 0);
	CHECK_EQ(ibv_query_qp(a.qp, &qa, IBV_QP_RATE_LIMIT, &init), 0);
	CHECK_EQ(qa.rate_limit, 50000);
	rl.rate_limit = dx.packet_pacing_caps.qp_rate_limit_max + 1;
	CHECK_EQ(ibv_modify_qp_rate_limit(a.qp, &rl), EINVAL);
	rl.rate_limit = 0; /* no limit */
	CHECK_EQ(ibv_modify_qp_rate_limit(a.qp, &rl), 0);
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_RTS;
	qa.rate_limit = 2000;
	CHECK_EQ(ibv_modify_qp(a.qp, &qa, IBV_QP_STATE | IBV_QP_RATE_LIMIT), 0);
	CHECK_EQ(ibv_modify_qp(a.qp, &qa, IBV_QP_RATE_LIMIT), 0);
	CHECK_EQ(ibv_query_qp(a.qp, &qa, IBV_QP_RATE_LIMIT, &init), 0);
	CHECK_EQ(qa.rate_limit, 2000);
	/* the data still flows */
	a.buf[5] = 0x5a;
	CHECK_EQ(post_write(&a, &b, 9, 0, 64), 0);
	{
		struct ibv_wc wc;

		CHECK_EQ(ibv_poll_cq(cq, 1, &wc), 1);
		CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	}
	CHECK_EQ(b.buf[5], 0x5a);
	end_fini(&a);
	end_fini(&b);
	CHECK_EQ(ibv_destroy_cq(cq), 0);
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
	ibv_close_device(c);
}

/* ECE: options for this device's vendor are accepted and reported. */
TEST(ece)
{
	struct ibv_context *c = test_open_dev();
	struct ibv_pd *pd = ibv_alloc_pd(c);
	struct ibv_cq *cq = ibv_create_cq(c, 16, NULL, NULL, 0);
	struct ibv_device_attr da;
	struct ibv_ece e;
	struct end a;

	CHECK_EQ(ibv_query_device(c, &da), 0);
	end_init(&a, c, pd, cq);
	memset(&e, 0, sizeof(e));
	CHECK_EQ(ibv_query_ece(a.qp, &e), 0);
	CHECK_EQ(e.vendor_id, da.vendor_id);
	CHECK_EQ(e.options, 0);
	e.vendor_id = da.vendor_id + 1;
	e.options = 0x1234;
	CHECK_EQ(ibv_set_ece(a.qp, &e), EINVAL);
	e.vendor_id = da.vendor_id;
	e.comp_mask = 1;
	CHECK_EQ(ibv_set_ece(a.qp, &e), EINVAL);
	e.comp_mask = 0;
	CHECK_EQ(ibv_set_ece(a.qp, &e), 0);
	memset(&e, 0, sizeof(e));
	CHECK_EQ(ibv_query_ece(a.qp, &e), 0);
	CHECK_EQ(e.options, 0x1234);
	CHECK_EQ(e.vendor_id, da.vendor_id);
	end_fini(&a);
	CHECK_EQ(ibv_destroy_cq(cq), 0);
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
	ibv_close_device(c);
}

struct dm_msg {
	uint32_t qpn, rkey;
	uint64_t off;
};

/* The other process: a QP connected to the parent's; it writes pattern
 * bytes into the parent's DM MR at m.off, reads them back with RDMA READ
 * into a second buffer and exits 0 when they match. */
static int dm_child(int rd, int wr)
{
	struct ibv_context *c = ibv_open_device(*ibv_get_device_list(NULL));
	struct ibv_pd *pd = ibv_alloc_pd(c);
	struct ibv_cq *cq = ibv_create_cq(c, 16, NULL, NULL, 0);
	struct ibv_send_wr swr, *bad;
	struct ibv_sge sg;
	struct ibv_wc wc;
	struct dm_msg m;
	struct end e;
	int n;

	end_init(&e, c, pd, cq);
	m.qpn = e.qp->qp_num;
	if (write(wr, &m, sizeof(m)) != sizeof(m) || read(rd, &m, sizeof(m)) != sizeof(m))
		return 2;
	to_rts(e.qp, m.qpn);
	for (int i = 0; i < 1000; i++)
		e.buf[i] = (uint8_t)(i ^ 0x3c);
	for (int op = 0; op < 2; op++) {
		sg.addr = (uintptr_t)e.buf + (op ? 4096 : 0);
		sg.length = 1000;
		sg.lkey = e.mr->lkey;
		memset(&swr, 0, sizeof(swr));
		swr.sg_list = &sg;
		swr.num_sge = 1;
		swr.opcode = op ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE;
		swr.wr.rdma.remote_addr = m.off; /* zero based: an offset */
		swr.wr.rdma.rkey = m.rkey;
		if (ibv_post_send(e.qp, &swr, &bad))
			return 3;
		for (n = 0; n < 100000 && ibv_poll_cq(cq, 1, &wc) == 0; n++)
			usleep(10);
		if (n == 100000 || wc.status != IBV_WC_SUCCESS)
			return 4;
	}
	if (memcmp(e.buf, e.buf + 4096, 1000))
		return 5;
	n = 1;
	if (write(wr, &n, sizeof(n)) != sizeof(n) || read(rd, &n, sizeof(n)) != sizeof(n))
		return 6;
	return 0;
}

TEST(device_memory)
{
	struct ibv_context *c = test_open_dev();
	struct ibv_pd *pd = ibv_alloc_pd(c);
	struct ibv_cq *cq = ibv_create_cq(c, 16, NULL, NULL, 0);
	struct ibv_device_attr_ex dx;
	struct ibv_alloc_dm_attr da;
	uint8_t in[3000], out[3000];
	struct ibv_mr *dmr;
	struct ibv_dm *dm;
	struct dm_msg m;
	int p2c[2], c2p[2], st, one;
	pid_t pid;
	struct end e;

	CHECK_EQ(ibv_query_device_ex(c, NULL, &dx), 0);
	CHECK(dx.max_dm_size >= 4096);
	memset(&da, 0, sizeof(da));
	da.length = dx.max_dm_size + 1;
	CHECK(ibv_alloc_dm(c, &da) == NULL);
	CHECK_EQ(errno, EINVAL);
	da.length = 8192;
	dm = ibv_alloc_dm(c, &da);
	CHECK(dm != NULL);
	for (int i = 0; i < 3000; i++)
		in[i] = (uint8_t)(i * 13 + 1);
	CHECK_EQ(ibv_memcpy_to_dm(dm, 100, in, 3000), 0);
	CHECK_EQ(ibv_memcpy_from_dm(out, dm, 100, 3000), 0);
	CHECK_MEM(out, in, 3000);
	CHECK_EQ(ibv_memcpy_to_dm(dm, 8000, in, 200), EFAULT);
	CHECK_EQ(ibv_memcpy_from_dm(out, dm, 8193, 1), EFAULT);
	/* whole 4-byte words only, as mlx5 (rdma-core's tests expect it) */
	CHECK_EQ(ibv_memcpy_to_dm(dm, 101, in, 4), EINVAL);
	CHECK_EQ(ibv_memcpy_from_dm(out, dm, 100, 3), EINVAL);
	/* a DM MR is zero based */
	CHECK(ibv_reg_dm_mr(pd, dm, 0, 8192, IBV_ACCESS_LOCAL_WRITE) == NULL);
	CHECK(ibv_reg_dm_mr(pd, dm, 4096, 8192, IBV_ACCESS_ZERO_BASED) == NULL);
	dmr = ibv_reg_dm_mr(pd, dm, 0, 8192,
			    IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE |
				IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	CHECK(dmr != NULL);
	CHECK_EQ(ibv_free_dm(dm), EBUSY);

	end_init(&e, c, pd, cq);
	CHECK_EQ(pipe(p2c), 0);
	CHECK_EQ(pipe(c2p), 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		close(p2c[1]);
		close(c2p[0]);
		_exit(dm_child(p2c[0], c2p[1]));
	}
	close(p2c[0]);
	close(c2p[1]);
	CHECK_EQ(read(c2p[0], &m, sizeof(m)), sizeof(m));
	to_rts(e.qp, m.qpn);
	m.qpn = e.qp->qp_num;
	m.rkey = dmr->rkey;
	m.off = 5000;
	CHECK_EQ(write(p2c[1], &m, sizeof(m)), sizeof(m));
	CHECK_EQ(read(c2p[0], &one, sizeof(one)), sizeof(one));
	CHECK_EQ(one, 1);
	/* what the other process wrote is in the device memory */
	CHECK_EQ(ibv_memcpy_from_dm(out, dm, 5000, 1000), 0);
	for (int i = 0; i < 1000; i++)
		CHECK_EQ(out[i], (uint8_t)(i ^ 0x3c));
	/* the DM MR as a local SGE (offsets 100 .. 3099) of an RDMA WRITE */
	{
		struct ibv_sge sg = {100, 3000, dmr->lkey};
		struct ibv_send_wr wr, *bad;
		struct ibv_wc wc;
		struct end x, y;

		end_init(&x, c, pd, cq);
		end_init(&y, c, pd, cq);
		to_rts(x.qp, y.qp->qp_num);
		to_rts(y.qp, x.qp->qp_num);
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 77;
		wr.sg_list = &sg;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_RDMA_WRITE;
		wr.wr.rdma.remote_addr = (uintptr_t)y.buf;
		wr.wr.rdma.rkey = y.mr->rkey;
		CHECK_EQ(ibv_post_send(x.qp, &wr, &bad), 0);
		CHECK_EQ(ibv_poll_cq(cq, 1, &wc), 1);
		CHECK_EQ(wc.wr_id, 77);
		CHECK_EQ(wc.status, IBV_WC_SUCCESS);
		CHECK_MEM(y.buf, in, 3000);
		end_fini(&x);
		end_fini(&y);
	}
	CHECK_EQ(write(p2c[1], &one, sizeof(one)), sizeof(one));
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), 0);
	close(p2c[1]);
	close(c2p[0]);
	end_fini(&e);
	CHECK_EQ(ibv_dereg_mr(dmr), 0);
	CHECK_EQ(ibv_free_dm(dm), 0);
	CHECK_EQ(ibv_destroy_cq(cq), 0);
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
	ibv_close_device(c);
}

struct imp_msg {
	uint32_t pd, mr, lkey, rkey;
	uint64_t addr, length;
};

static int send_fd(int sock, int fd)
{
	char c = 'f';
	struct iovec iov = {&c, 1};
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = u.buf,
			    .msg_controllen = sizeof(u.buf)};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);

	memset(&u, 0, sizeof(u));
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(sock, &mh, 0) == 1 ? 0 : -1;
}

static int recv_fd(int sock)
{
	char c;
	struct iovec iov = {&c, 1};
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = u.buf,
			    .msg_controllen = sizeof(u.buf)};
	struct cmsghdr *cm;
	int fd = -1;

	if (recvmsg(sock, &mh, 0) != 1)
		return -1;
	cm = CMSG_FIRSTHDR(&mh);
	if (cm && cm->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

/* The importer: checks what it sees of the owner's PD and MR, then with two
 * QPs of its own on the imported PD READs the owner's MR and WRITEs its
 * bytes reversed back into it. Exit status: 0, or the step that failed. */
static int import_child(int sock)
{
	struct ibv_context *c;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct imp_msg m;
	struct end a, b;
	struct ibv_wc wc;
	int fd, done = 0;

	fd = recv_fd(sock);
	if (fd < 0 || read(sock, &m, sizeof(m)) != sizeof(m))
		return 10;
	if (ibv_import_device(-1) || errno != EINVAL)
		return 11;
	if (ibv_import_device(sock) || errno != EINVAL) /* not the daemon's */
		return 12;
	c = ibv_import_device(fd);
	if (!c)
		return 13;
	close(fd);				    /* the context keeps its own copy */
	if (ibv_import_pd(c, 0) || errno != EINVAL) /* handles start at 1 */
		return 14;
	pd = ibv_import_pd(c, m.pd);
	if (!pd || pd->handle != m.pd || pd->context != c)
		return 15;
	mr = ibv_import_mr(pd, m.mr);
	if (!mr || mr->handle != m.mr || mr->lkey != m.lkey || mr->rkey != m.rkey ||
	    (uintptr_t)mr->addr != m.addr || mr->length != m.length || mr->pd != pd)
		return 16;
	cq = ibv_create_cq(c, 16, NULL, NULL, 0);
	if (!cq)
		return 17;
	end_init(&a, c, pd, cq);
	end_init(&b, c, pd, cq);
	to_rts(a.qp, b.qp->qp_num);
	to_rts(b.qp, a.qp->qp_num);
	for (int op = 0; op < 2; op++) {
		struct ibv_sge sg = {(uintptr_t)a.buf, 4096, a.mr->lkey};
		struct ibv_send_wr wr, *bad;

		if (op)
			for (int i = 0; i < 4096; i++)
				a.buf[i] = (uint8_t)~a.buf[i];
		memset(&wr, 0, sizeof(wr));
		wr.sg_list = &sg;
		wr.num_sge = 1;
		wr.opcode = op ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
		wr.wr.rdma.remote_addr = m.addr;
		wr.wr.rdma.rkey = mr->rkey;
		if (ibv_post_send(a.qp, &wr, &bad))
			return 18;
		for (int n = 0; ibv_poll_cq(cq, 1, &wc) == 0; n++) {
			if (n > 100000)
				return 19;
			usleep(10);
		}
		if (wc.status != IBV_WC_SUCCESS)
			return 20;
		if (!op)
			for (int i = 0; i < 4096; i++)
				if (a.buf[i] != (uint8_t)(i * 5 + 1))
					return 21;
	}
	end_fini(&a);
	end_fini(&b);
	ibv_destroy_cq(cq);
	ibv_unimport_mr(mr);
	ibv_unimport_pd(pd);
	ibv_close_device(c);
	if (write(sock, &done, sizeof(done)) != sizeof(done))
		return 22;
	return 0;
}

TEST(import_over_scm_rights)
{
	struct ibv_context *c;
	struct ibv_pd *pd, *pd2;
	struct ibv_mr *mr;
	uint8_t *buf;
	struct imp_msg m;
	int sv[2], st, done = -1;
	pid_t pid;

	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	pid = fork(); /* before the context: the child gets its fd only by SCM_RIGHTS */
	CHECK(pid >= 0);
	if (pid == 0) {
		close(sv[0]);
		_exit(import_child(sv[1]));
	}
	close(sv[1]);
	c = test_open_dev();
	pd = ibv_alloc_pd(c);
	buf = aligned_alloc(4096, 4096);
	CHECK(pd && buf);
	for (int i = 0; i < 4096; i++)
		buf[i] = (uint8_t)(i * 5 + 1);
	mr = ibv_reg_mr(pd, buf, 4096,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
	CHECK(mr != NULL);
	m = (struct imp_msg){pd->handle, mr->handle,	      mr->lkey,
			     mr->rkey,	 (uintptr_t)mr->addr, mr->length};
	CHECK_EQ(send_fd(sv[0], c->cmd_fd), 0);
	CHECK_EQ(write(sv[0], &m, sizeof(m)), sizeof(m));
	/* the owner keeps using its context meanwhile */
	for (int i = 0; i < 200; i++) {
		pd2 = ibv_alloc_pd(c);
		CHECK(pd2 != NULL);
		CHECK_EQ(ibv_dealloc_pd(pd2), 0);
	}
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), 0);
	CHECK_EQ(read(sv[0], &done, sizeof(done)), sizeof(done));
	CHECK_EQ(done, 0);
	/* what the importer wrote through the imported MR's key */
	for (int i = 0; i < 4096; i++)
		CHECK_EQ(buf[i], (uint8_t) ~(uint8_t)(i * 5 + 1));
	close(sv[0]);
	CHECK_EQ(ibv_dereg_mr(mr), 0);
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
	free(buf);
	ibv_close_device(c);
}

int main(void)
{
	struct ibv_context *c = test_open_dev();

	if (ibv_query_gid(c, 1, 0, &gid0)) {
		fprintf(stderr, "query_gid failed\n");
		return 1;
	}
	ibv_close_device(c);
	alarm(60);
	RUN(cq_resize_shrink_keeps_entries);
	RUN(completion_timestamps);
	RUN(parent_domain);
	RUN(qp_rate_limit);
	RUN(ece);
	RUN(device_memory);
	RUN(import_over_scm_rights);
	return test_summary();
}
