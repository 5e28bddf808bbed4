/*
 * Unit tests of the asynchronous events and of CQ resizing under load:
 * IBV_EVENT_CQ_ERR on a CQ overrun, IBV_EVENT_QP_FATAL when the peer's
 * process is killed (a forked child), the flush that follows, IBV_EVENT_QP_LAST_WQE_REACHED for a
 * QP on an SRQ that enters the error state, and ibv_resize_cq keeping pending completions in order.
 *
 * Needs a running daemon (tests/run.sh starts one per test program).
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

static union ibv_gid gid0;

/* One end: context, PD, CQ, a registered buffer and an RC QP. */
struct end {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	uint8_t *buf;
};

static void end_init(struct end *e, struct ibv_context *ctx, int cqe, struct ibv_srq **srq)
{
	struct ibv_qp_init_attr ia;

	memset(e, 0, sizeof(*e));
	e->ctx = ctx;
	e->pd = ibv_alloc_pd(ctx);
	e->cq = ibv_create_cq(ctx, cqe, NULL, NULL, 0);
	e->buf = aligned_alloc(4096, 8192);
	CHECK(e->pd && e->cq && e->buf);
	memset(e->buf, 0, 8192);
	e->mr = ibv_reg_mr(e->pd, e->buf, 8192, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	CHECK(e->mr != NULL);
	if (srq) {
		struct ibv_srq_init_attr si;

		memset(&si, 0, sizeof(si));
		si.attr.max_wr = 8;
		si.attr.max_sge = 1;
		*srq = ibv_create_srq(e->pd, &si);
		CHECK(*srq != NULL);
	}
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = e->cq;
	ia.recv_cq = e->cq;
	ia.srq = srq ? *srq : NULL;
	ia.qp_type = IBV_QPT_RC;
	ia.sq_sig_all = 1;
	ia.cap.max_send_wr = 16;
	ia.cap.max_recv_wr = srq ? 0 : 16;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = srq ? 0 : 1;
	e->qp = ibv_create_qp(e->pd, &ia);
	CHECK(e->qp != NULL);
}

static void end_fini(struct end *e)
{
	if (e->qp)
		CHECK_EQ(ibv_destroy_qp(e->qp), 0);
	CHECK_EQ(ibv_dereg_mr(e->mr), 0);
	CHECK_EQ(ibv_destroy_cq(e->cq), 0);
	CHECK_EQ(ibv_dealloc_pd(e->pd), 0);
	free(e->buf);
}

static void to_rts(struct ibv_qp *qp, uint32_t dqpn)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
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

static int post_write(struct end *from, struct end *to, uint64_t wr_id)
{
	struct ibv_sge sg = {(uintptr_t)from->buf, 8, from->mr->lkey};
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = &sg;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = (uintptr_t)to->buf;
	wr.wr.rdma.rkey = to->mr->rkey;
	return ibv_post_send(from->qp, &wr, &bad);
}

/* Wait up to ms for an async event on c: 1 with *ev filled, or 0. */
static int wait_async(struct ibv_context *c, struct ibv_async_event *ev, int ms)
{
	struct pollfd pfd = {.fd = c->async_fd, .events = POLLIN};

	while (poll(&pfd, 1, ms) == 1) {
		if (ibv_get_async_event(c, ev) == 0)
			return 1;
	}
	return 0;
}

/* Poll one completion within ms: 1 or 0. */
static int poll1(struct ibv_cq *cq, struct ibv_wc *wc, int ms)
{
	for (int i = 0; i < ms * 10; i++) {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n)
			return n;
		usleep(100);
	}
	return 0;
}

/* a (a CQ of one entry) and b connected; a's CQ overrun by three more
 * completions than it holds: *ev is the CQ_ERR, not yet acked. */
static void overrun(struct end *a, struct end *b, struct ibv_context *ca, struct ibv_context *cb,
		    struct ibv_async_event *ev)
{
	struct ibv_wc wc;

	end_init(a, ca, 1, NULL);
	end_init(b, cb, 16, NULL);
	to_rts(a->qp, b->qp->qp_num);
	to_rts(b->qp, a->qp->qp_num);
	for (int i = 0; i < a->cq->cqe + 3; i++)
		CHECK_EQ(post_write(a, b, 100 + (uint64_t)i), 0);
	CHECK(ibv_poll_cq(a->cq, 1, &wc) >= 0);
	CHECK_EQ(wait_async(ca, ev, 1000), 1);
	CHECK_EQ(ev->event_type, IBV_EVENT_CQ_ERR);
}

TEST(cq_overrun_raises_cq_err)
{
	struct ibv_context *ca = test_open_dev(), *cb = test_open_dev();
	struct ibv_async_event ev;
	struct end a, b;

	overrun(&a, &b, ca, cb, &ev);
	CHECK(ev.element.cq == a.cq);
	ibv_ack_async_event(&ev);
	end_fini(&a);
	end_fini(&b);
	ibv_close_device(ca);
	ibv_close_device(cb);
}

/* Acks the event after a pause, from another thread. */
static void *ack_later(void *arg)
{
	usleep(200000);
	ibv_ack_async_event(arg);
	return NULL;
}

static long ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/* ibv_get_async_event(3): destroying a CQ (QP, SRQ) waits until every
 * affiliated event handed out about it was acked, so an ack that comes
 * late still finds its object (uDAPL acks from its event thread while
 * another destroys). */
TEST(destroy_waits_for_async_ack)
{
	struct ibv_context *ca = test_open_dev(), *cb = test_open_dev();
	struct ibv_async_event ev;
	struct timespec t0;
	struct end a, b;
	pthread_t th;

	overrun(&a, &b, ca, cb, &ev);
	CHECK_EQ(ibv_destroy_qp(a.qp), 0);
	a.qp = NULL;
	CHECK_EQ(pthread_create(&th, NULL, ack_later, &ev), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	end_fini(&a); /* destroys a.cq: returns once the event is acked */
	CHECK(ms_since(&t0) >= 150);
	CHECK_EQ(pthread_join(th, NULL), 0);
	end_fini(&b);
	ibv_close_device(ca);
	ibv_close_device(cb);
}

/* What the peer process tells the test over a pipe. */
struct peer_info {
	uint32_t qpn, rkey;
	uint64_t addr;
};

TEST(peer_process_killed_raises_qp_fatal)
{
	struct ibv_context *ca = test_open_dev();
	struct ibv_async_event ev;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	struct peer_info pi;
	int up[2], down[2], status;
	struct ibv_wc wc;
	struct end a, b;
	uint32_t aqpn;
	pid_t pid;

	end_init(&a, ca, 16, NULL);
	CHECK_EQ(pipe(up), 0);
	CHECK_EQ(pipe(down), 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		/* the peer: its own context and QP, connected, then killed */
		struct end e;

		end_init(&e, test_open_dev(), 16, NULL);
		pi.qpn = e.qp->qp_num;
		pi.rkey = e.mr->rkey;
		pi.addr = (uintptr_t)e.buf;
		if (write(up[1], &pi, sizeof(pi)) != sizeof(pi) ||
		    read(down[0], &aqpn, sizeof(aqpn)) != sizeof(aqpn))
			_exit(1);
		to_rts(e.qp, aqpn);
		if (write(up[1], &aqpn, sizeof(aqpn)) != sizeof(aqpn))
			_exit(1);
		pause();
		_exit(0);
	}
	CHECK_EQ(read(up[0], &pi, sizeof(pi)), sizeof(pi));
	aqpn = a.qp->qp_num;
	to_rts(a.qp, pi.qpn);
	CHECK_EQ(write(down[1], &aqpn, sizeof(aqpn)), sizeof(aqpn));
	CHECK_EQ(read(up[0], &aqpn, sizeof(aqpn)), sizeof(aqpn));
	/* a WRITE into the peer's memory works while it lives */
	memset(&b, 0, sizeof(b));
	b.buf = (uint8_t *)(uintptr_t)pi.addr;
	{
		struct ibv_mr fake = {.rkey = pi.rkey};

		b.mr = &fake;
		CHECK_EQ(post_write(&a, &b, 1), 0);
	}
	CHECK_EQ(poll1(a.cq, &wc, 1000), 1);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	kill(pid, SIGKILL);
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK_EQ(wait_async(ca, &ev, 2000), 1);
	CHECK_EQ(ev.event_type, IBV_EVENT_QP_FATAL);
	CHECK(ev.element.qp == a.qp);
	ibv_ack_async_event(&ev);
	CHECK_EQ(ibv_query_qp(a.qp, &qa, IBV_QP_STATE, &qia), 0);
	CHECK_EQ(qa.qp_state, IBV_QPS_ERR);
	/* a WQE posted now completes, flushed */
	{
		struct ibv_mr fake = {.rkey = pi.rkey};

		b.mr = &fake;
		CHECK_EQ(post_write(&a, &b, 2), 0);
	}
	CHECK_EQ(poll1(a.cq, &wc, 1000), 1);
	CHECK_EQ(wc.wr_id, 2);
	CHECK_EQ(wc.status, IBV_WC_WR_FLUSH_ERR);
	close(up[0]);
	close(up[1]);
	close(down[0]);
	close(down[1]);
	end_fini(&a);
	ibv_close_device(ca);
}

TEST(srq_qp_error_raises_last_wqe)
{
	struct ibv_context *ca = test_open_dev();
	struct ibv_async_event ev;
	struct ibv_qp_attr qa;
	struct ibv_srq *srq;
	struct end a;

	end_init(&a, ca, 16, &srq);
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_ERR;
	CHECK_EQ(ibv_modify_qp(a.qp, &qa, IBV_QP_STATE), 0);
	CHECK_EQ(wait_async(ca, &ev, 1000), 1);
	CHECK_EQ(ev.event_type, IBV_EVENT_QP_LAST_WQE_REACHED);
	CHECK(ev.element.qp == a.qp);
	ibv_ack_async_event(&ev);
	CHECK_EQ(ibv_destroy_qp(a.qp), 0);
	a.qp = NULL;
	CHECK_EQ(ibv_destroy_srq(srq), 0);
	end_fini(&a);
	ibv_close_device(ca);
}

TEST(resize_keeps_pending_completions)
{
	struct ibv_context *ca = test_open_dev(), *cb = test_open_dev();
	struct ibv_wc wc[8];
	struct end a, b;
	int i, n;

	end_init(&a, ca, 8, NULL);
	end_init(&b, cb, 16, NULL);
	to_rts(a.qp, b.qp->qp_num);
	to_rts(b.qp, a.qp->qp_num);
	for (i = 0; i < 5; i++)
		CHECK_EQ(post_write(&a, &b, 10 + (uint64_t)i), 0);
	/* smaller than what it holds: refused, nothing lost */
	CHECK_EQ(ibv_resize_cq(a.cq, 2), EINVAL);
	CHECK_EQ(ibv_resize_cq(a.cq, 300), 0);
	CHECK(a.cq->cqe >= 300);
	CHECK_EQ(post_write(&a, &b, 15), 0);
	n = ibv_poll_cq(a.cq, 8, wc);
	CHECK_EQ(n, 6);
	for (i = 0; i < n; i++) {
		CHECK_EQ(wc[i].wr_id, 10 + (uint64_t)i);
		CHECK_EQ(wc[i].status, IBV_WC_SUCCESS);
	}
	end_fini(&a);
	end_fini(&b);
	ibv_close_device(ca);
	ibv_close_device(cb);
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
	RUN(cq_overrun_raises_cq_err);
	RUN(destroy_waits_for_async_ack);
	RUN(peer_process_killed_raises_qp_fatal);
	RUN(srq_qp_error_raises_last_wqe);
	RUN(resize_keeps_pending_completions);
	return test_summary();
}
