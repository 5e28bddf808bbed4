/*
 * libFuzzer target: the receive path of a datagram rsocket
 * (rdmacm/rs_dgram.c) against peers that send anything by UD (issue 22).
 *
 * One datagram rsocket with a receive ring of 8 slots of RS_SNDLOWAT sits
 * on one fake UD QP and CQ (their ops tables are this file's). The input
 * is a list of 16-byte records, a kind, a 32-bit value, a 16-bit length and
 * 9 bytes:
 *   kind & 1 == 0  a receive completion the peer caused: wr_id the
 *                  receive flag and value (an offset, maybe not one we
 *                  posted), byte_len the length (GRH included); the 9
 *                  bytes are written at the slot first when the offset is
 *                  inside the buffer (the start of an rs_ds_header);
 *                  kind bit 1: an error status instead of success
 *   kind & 1 == 1  rrecvfrom of value % 3000 bytes, non-blocking (kind
 *                  bit 1: MSG_PEEK, bit 2: MSG_TRUNC), the sender's
 *                  address asked into a buffer of length % 40 bytes
 * Nothing may read or write outside the buffers (ASan), a receive returns
 * at most what was asked (the datagram's length with MSG_TRUNC, never more
 * than a slot) and the address length reported is a sockaddr's.
 *
 * tests/fuzz/run.sh builds it from the files on these lines:
 * FUZZ_SOURCES: tests/fuzz/fuzz_rsdgram.c rdmacm/rs_dgram.c
 * FUZZ_INCLUDES: rdmacm common
 * FUZZ_SECS: 6
 */
#include "rsock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FAIL(...)                                                                                  \
	do {                                                                                       \
		fprintf(stderr, "fuzz_rsdgram: " __VA_ARGS__);                                     \
		fputc('\n', stderr);                                                               \
		abort();                                                                           \
	} while (0)

#define RQ 8

/* ---- the fake device: completions in a FIFO ------------------------------------ */

#define NWC 64
static struct ibv_wc wcs[NWC];
static unsigned int wc_head, wc_tail;
static unsigned int posted; /* receives posted back */

static int f_poll_cq(struct ibv_cq *c, int n, struct ibv_wc *wc)
{
	int i = 0;

	(void)c;
	while (i < n && wc_head != wc_tail)
		wc[i++] = wcs[wc_head++ % NWC];
	return i;
}

static struct sofrs_dsqp *qp0;

static int f_post_recv(struct ibv_qp *q, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	(void)q;
	(void)bad;
	for (; wr; wr = wr->next) {
		for (int i = 0; i < wr->num_sge; i++) {
			uintptr_t a = (uintptr_t)wr->sg_list[i].addr;

			if (a < (uintptr_t)qp0->rbuf ||
			    a + wr->sg_list[i].length > (uintptr_t)qp0->rbuf + RQ * RS_SNDLOWAT +
								sizeof(struct ibv_grh))
				FAIL("a receive posted outside the buffer");
		}
		posted++;
	}
	return 0;
}

static int f_req_notify(struct ibv_cq *c, int solicited)
{
	(void)c;
	(void)solicited;
	return 0;
}

static struct ibv_context ctx;
static struct ibv_cq cq;
static struct ibv_qp qp;
static struct ibv_pd pd;
static struct rdma_cm_id cm_id;
static struct ibv_mr mr = { .lkey = 0x5a };

/* ---- what rs_dgram.c calls outside itself (the receive path uses none of
 * these but the page allocator and the engine's idle hook) ------------------------ */

uint32_t sofrs_poll_us = 50; /* rs_poll.c's polling_time */
void *sofrs_page_alloc(size_t len) { return calloc(1, len); }
int sofrs_svc_add(struct sofrs *rs)
{
	(void)rs;
	return 0;
}
void sofrs_svc_remove(struct sofrs *rs) { (void)rs; }
void sofv_engine_idle(void) {}
void ibv_ack_cq_events(struct ibv_cq *c, unsigned int n)
{
	(void)c;
	(void)n;
}
struct ibv_ah *ibv_create_ah(struct ibv_pd *p, struct ibv_ah_attr *attr)
{
	(void)p;
	(void)attr;
	return NULL;
}
int ibv_destroy_ah(struct ibv_ah *ah)
{
	(void)ah;
	return 0;
}
struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *c)
{
	(void)c;
	return NULL;
}
int ibv_destroy_comp_channel(struct ibv_comp_channel *ch)
{
	(void)ch;
	return 0;
}
struct ibv_cq *ibv_create_cq(struct ibv_context *c, int cqe, void *cq_context,
			     struct ibv_comp_channel *ch, int comp_vector)
{
	(void)c, (void)cqe, (void)cq_context, (void)ch, (void)comp_vector;
	return NULL;
}
int ibv_destroy_cq(struct ibv_cq *c)
{
	(void)c;
	return 0;
}
int ibv_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **c, void **context)
{
	(void)ch, (void)c, (void)context;
	errno = EAGAIN;
	return -1;
}
int ibv_query_gid(struct ibv_context *c, uint8_t port, int index, union ibv_gid *gid)
{
	(void)c, (void)port, (void)index, (void)gid;
	return -1;
}
#undef ibv_query_port
int ibv_query_port(struct ibv_context *c, uint8_t port, struct _compat_ibv_port_attr *attr)
{
	(void)c, (void)port, (void)attr;
	return -1;
}
#undef ibv_reg_mr
struct ibv_mr *ibv_reg_mr(struct ibv_pd *p, void *addr, size_t len, int access)
{
	(void)p, (void)addr, (void)len, (void)access;
	return NULL;
}
int ibv_dereg_mr(struct ibv_mr *m)
{
	(void)m;
	return 0;
}
int rdma_create_id(struct rdma_event_channel *ch, struct rdma_cm_id **id, void *context,
		   enum rdma_port_space ps)
{
	(void)ch, (void)id, (void)context, (void)ps;
	return -1;
}
int rdma_destroy_id(struct rdma_cm_id *id)
{
	(void)id;
	return 0;
}
int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	(void)id, (void)addr;
	return -1;
}
int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src, struct sockaddr *dst,
		      int timeout_ms)
{
	(void)id, (void)src, (void)dst, (void)timeout_ms;
	return -1;
}
int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *p, struct ibv_qp_init_attr *attr)
{
	(void)id, (void)p, (void)attr;
	return -1;
}
void rdma_destroy_qp(struct rdma_cm_id *id) { (void)id; }

/* ---- one input ------------------------------------------------------------------ */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t out[3000];
	struct sofrs *rs;
	struct sofrs_dsqp *q;

	ctx.ops.poll_cq = f_poll_cq;
	ctx.ops.post_recv = f_post_recv;
	ctx.ops.req_notify_cq = f_req_notify;
	cq.context = &ctx;
	qp.context = &ctx;
	pd.context = &ctx;
	cm_id.verbs = &ctx;
	cm_id.pd = &pd;
	cm_id.qp = &qp;
	cm_id.recv_cq = cm_id.send_cq = &cq;
	wc_head = wc_tail = 0;
	posted = 0;

	rs = calloc(1, sizeof(*rs));
	q = calloc(1, sizeof(*q));
	if (!rs || !q)
		FAIL("calloc");
	rs->type = SOCK_DGRAM;
	rs->udp_sock = rs->epfd = -1;
	pthread_mutex_init(&rs->slock, NULL);
	pthread_mutex_init(&rs->rlock, NULL);
	pthread_mutex_init(&rs->cq_lock, NULL);
	pthread_mutex_init(&rs->map_lock, NULL);
	rs->rq_size = rs->sq_size = RQ;
	rs->rbuf_size = rs->sbuf_size = RQ * RS_SNDLOWAT;
	rs->rqe_avail = RQ;
	rs->sqe_avail = RQ;
	rs->dmsg = calloc(RQ + 1, sizeof(*rs->dmsg));
	rs->fs_flags = O_NONBLOCK;
	rs->state = rs_readable | rs_writable;
	q->rs = rs;
	q->cm_id = &cm_id;
	q->rbuf = malloc(rs->rbuf_size + sizeof(struct ibv_grh));
	q->rmr = q->smr = &mr;
	if (!rs->dmsg || !q->rbuf)
		FAIL("malloc");
	memset(q->rbuf, 0xee, rs->rbuf_size + sizeof(struct ibv_grh));
	rs->qp_list = q;
	qp0 = q;

	for (size_t i = 0; i + 16 <= size; i += 16) {
		const uint8_t *r = data + i;
		uint8_t kind = r[0];
		uint32_t v;
		uint16_t len;

		memcpy(&v, r + 1, 4);
		memcpy(&len, r + 5, 2);
		if (!(kind & 1)) {
			struct ibv_wc wc = {
				.wr_id = RS_WR_ID_FLAG_RECV | (v & 0x3ffff),
				.status = kind & 2 ? IBV_WC_LOC_LEN_ERR : IBV_WC_SUCCESS,
				.byte_len = len,
			};

			if ((v & 0x3ffff) + 9 <= rs->rbuf_size)
				memcpy(q->rbuf + (v & 0x3ffff), r + 7, 9);
			if (wc_tail - wc_head < NWC)
				wcs[wc_tail++ % NWC] = wc;
		} else {
			union sofrs_addr from;
			socklen_t fl = len % 40, asked = fl;
			size_t want = v % sizeof(out);
			int flags = (kind & 2 ? MSG_PEEK : 0) | (kind & 4 ? MSG_TRUNC : 0);
			struct iovec iov = { .iov_base = out, .iov_len = want };
			ssize_t n = sofrs_ds_recvv(rs, &iov, 1, flags, &from.sa, &fl);

			if (n > (ssize_t)RS_SNDLOWAT || (!(flags & MSG_TRUNC) && n > (ssize_t)want))
				FAIL("rrecvfrom returned %zd for %zu", n, want);
			if (n >= 0 && fl != sizeof(struct sockaddr_in) && fl != sizeof(struct sockaddr_in6))
				FAIL("address length %u (asked %u)", fl, asked);
		}
		if (rs->rmsg_head < 0 || rs->rmsg_head > RQ || rs->rmsg_tail < 0 || rs->rmsg_tail > RQ ||
		    rs->rqe_avail < 0 || rs->rqe_avail > RQ)
			FAIL("ring %d..%d, %d free", rs->rmsg_head, rs->rmsg_tail, rs->rqe_avail);
	}

	free(q->rbuf);
	free(q);
	free(rs->dmsg);
	pthread_mutex_destroy(&rs->slock);
	pthread_mutex_destroy(&rs->rlock);
	pthread_mutex_destroy(&rs->cq_lock);
	pthread_mutex_destroy(&rs->map_lock);
	free(rs);
	return 0;
}
