/*
 * libFuzzer target: the receive path of a stream rsocket (rdmacm/rs_data.c)
 * against a peer that writes anything (issue 22).
 *
 * One connected rsocket with a small queue (16 credits) and buffers of
 * 4 KiB sits on a fake QP and CQ (their ops tables are this file's). The
 * input is a list of 5-byte records, each a kind and a 32-bit value:
 *   kind & 3 == 0  a receive completion the peer caused: the value as
 *                  immediate data (kind bit 2: no immediate; bit 3: a
 *                  flush error instead of success);
 *   kind & 3 == 1  rrecv of value % 6000 bytes (bit 2: MSG_PEEK,
 *                  bit 3: MSG_WAITALL), non-blocking;
 *   kind & 3 == 2  the peer rewrites an entry of our target SGL (what it
 *                  may RDMA-write there): length value, entry kind bit 2;
 *   kind & 3 == 3  rsend of value % 6000 bytes, non-blocking (our own
 *                  sends complete at once, successfully).
 * Bit 4 of the first record's kind puts the peer on another host (a
 * receive that finds data queued then polls the CQ first).
 * Nothing may read or write outside the buffers (ASan), a receive returns
 * at most what was asked, and the ring offsets stay inside the buffers.
 *
 * tests/fuzz/run.sh builds it from the files on these lines:
 * FUZZ_SOURCES: tests/fuzz/fuzz_rsocket.c rdmacm/rs_data.c rdmacm/rs_iomap.c
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
		fprintf(stderr, "fuzz_rsocket: " __VA_ARGS__);                                     \
		fputc('\n', stderr);                                                               \
		abort();                                                                           \
	} while (0)

/* ---- the fake device: completions in a FIFO ------------------------------------ */

#define NWC 256
static struct ibv_wc wcs[NWC];
static unsigned int wc_head, wc_tail;

static void wc_push(const struct ibv_wc *wc)
{
	if (wc_tail - wc_head < NWC)
		wcs[wc_tail++ % NWC] = *wc;
}

static int f_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	int i = 0;

	(void)cq;
	while (i < n && wc_head != wc_tail)
		wc[i++] = wcs[wc_head++ % NWC];
	return i;
}

static int f_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	(void)qp;
	(void)bad;
	for (; wr; wr = wr->next) {
		struct ibv_wc wc = { .wr_id = wr->wr_id, .status = IBV_WC_SUCCESS };

		for (int i = 0; i < wr->num_sge; i++) /* the bytes are read */
			if (wr->sg_list[i].length && !(wr->send_flags & IBV_SEND_INLINE) &&
			    wr->sg_list[i].lkey != 0x5a)
				FAIL("a send SGE with the wrong key");
		wc_push(&wc);
	}
	return 0;
}

static int f_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	(void)qp;
	(void)wr;
	(void)bad;
	return 0;
}

static int f_req_notify(struct ibv_cq *cq, int solicited)
{
	(void)cq;
	(void)solicited;
	return 0;
}

static struct ibv_context ctx;
static struct ibv_cq cq;
static struct ibv_qp qp;
static struct ibv_pd pd;
static struct rdma_cm_id cm_id;
static struct sofrs *cur;

/* ---- what rs_data.c calls outside itself ---------------------------------------- */

uint32_t sofrs_poll_us = 50; /* rs_poll.c's polling_time */
struct sofrs *sofrs_lookup(int index) { return index == 3 ? cur : NULL; }
struct sofrs *sofrs_get(int index) { return sofrs_lookup(index); }
void sofrs_put(struct sofrs *rs) { (void)rs; }
int sofrs_wait_fds(struct sofrs *rs, struct pollfd *pfd)
{
	(void)rs;
	pfd[0].fd = pfd[1].fd = -1;
	return 2;
}
void sofrs_cm_events(struct sofrs *rs) { (void)rs; }
int rgetpeername(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	(void)socket;
	(void)addr;
	(void)addrlen;
	return 0;
}
void sofv_engine_idle(void) {}
/* datagram rsockets (rs_dgram.c) are not this target's */
ssize_t sofrs_ds_sendv(struct sofrs *rs, const struct iovec *iov, int iovcnt, int flags,
		       const struct sockaddr *to, socklen_t tolen)
{
	(void)rs, (void)iov, (void)iovcnt, (void)flags, (void)to, (void)tolen;
	return sofcm_err(ENOTSUP);
}
ssize_t sofrs_ds_recvv(struct sofrs *rs, const struct iovec *iov, int iovcnt, int flags,
		       struct sockaddr *from, socklen_t *fromlen)
{
	(void)rs, (void)iov, (void)iovcnt, (void)flags, (void)from, (void)fromlen;
	return sofcm_err(ENOTSUP);
}
void sofrs_ds_wait_done(struct sofrs *rs) { (void)rs; }
int sofcm_qp_err(struct sofcm_id *idp)
{
	(void)idp;
	return 0;
}
int ibv_get_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **c, void **context)
{
	(void)ch;
	(void)c;
	(void)context;
	errno = EAGAIN;
	return -1;
}
void ibv_ack_cq_events(struct ibv_cq *c, unsigned int n)
{
	(void)c;
	(void)n;
}

static struct ibv_mr *fake_mr(void *addr, size_t len)
{
	struct ibv_mr *mr = calloc(1, sizeof(*mr));

	if (mr) {
		mr->addr = addr;
		mr->length = len;
		mr->lkey = 0x5a;
		mr->rkey = 0xa5;
	}
	return mr;
}

#undef ibv_reg_mr
struct ibv_mr *ibv_reg_mr(struct ibv_pd *p, void *addr, size_t len, int access)
{
	(void)p;
	(void)access;
	return fake_mr(addr, len);
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *p, void *addr, size_t len, uint64_t iova,
				unsigned int access)
{
	(void)p;
	(void)iova;
	(void)access;
	return fake_mr(addr, len);
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
	free(mr);
	return 0;
}

/* ---- one input ------------------------------------------------------------------ */

static void check(struct sofrs *rs)
{
	if (rs->rbuf_offset < 0 || rs->rbuf_offset >= (int)rs->rbuf_size)
		FAIL("rbuf_offset %d outside 0..%u", rs->rbuf_offset, rs->rbuf_size);
	if (rs->rmsg_head < 0 || rs->rmsg_head > rs->rq_size || rs->rmsg_tail < 0 ||
	    rs->rmsg_tail > rs->rq_size)
		FAIL("message ring %d..%d outside 0..%u", rs->rmsg_head, rs->rmsg_tail, rs->rq_size);
	if (rs->ssgl[0].addr < (uintptr_t)rs->sbuf ||
	    rs->ssgl[0].addr >= (uintptr_t)rs->sbuf + rs->sbuf_size)
		FAIL("send cursor outside the send buffer");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t out[6000];
	struct rs_conn_data conn;
	struct sofrs *rs;

	ctx.ops.poll_cq = f_poll_cq;
	ctx.ops.post_send = f_post_send;
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

	rs = calloc(1, sizeof(*rs));
	if (!rs)
		return 0;
	rs->type = SOCK_STREAM;
	rs->index = 3;
	rs->cm_id = &cm_id;
	pthread_mutex_init(&rs->slock, NULL);
	pthread_mutex_init(&rs->rlock, NULL);
	pthread_mutex_init(&rs->cq_lock, NULL);
	pthread_mutex_init(&rs->map_lock, NULL);
	rs->sbuf_size = rs->rbuf_size = 4096;
	rs->sq_size = rs->rq_size = 16;
	rs->sq_inline = 64;
	rs->ctrl_max_seqno = RS_QP_CTRL_SIZE;
	rs->fs_flags = O_NONBLOCK;
	if (sofrs_init_bufs(rs))
		FAIL("init_bufs");
	/* the peer's private data: its target SGL, a first half of its
	 * buffer, 16 credits */
	memset(&conn, 0, sizeof(conn));
	conn.version = 1;
	conn.credits = htobe16(16);
	conn.target_sgl.addr = htobe64(0x10000);
	conn.target_sgl.length = htobe32(2);
	conn.target_sgl.key = htobe32(7);
	conn.data_buf.addr = htobe64(0x20000);
	conn.data_buf.length = htobe32(2048);
	conn.data_buf.key = htobe32(8);
	sofrs_save_conn_data(rs, &conn);
	rs->state = rs_connect_rdwr;
	rs->peer_remote = size && (data[0] & 16);
	cur = rs;

	for (size_t i = 0; i + 5 <= size; i += 5) {
		uint8_t kind = data[i];
		uint32_t v;
		ssize_t n;

		memcpy(&v, data + i + 1, 4);
		switch (kind & 3) {
		case 0: {
			struct ibv_wc wc = {
				.wr_id = RS_WR_ID_FLAG_RECV,
				.status = kind & 8 ? IBV_WC_WR_FLUSH_ERR : IBV_WC_SUCCESS,
				.wc_flags = kind & 4 ? 0 : IBV_WC_WITH_IMM,
				.imm_data = htobe32(v),
			};

			wc_push(&wc);
			break;
		}
		case 1:
			n = rrecv(3, out, v % sizeof(out),
				  (kind & 4 ? MSG_PEEK : 0) | (kind & 8 ? MSG_WAITALL : 0));
			if (n > (ssize_t)(v % sizeof(out)))
				FAIL("rrecv returned %zd for %zu", n, (size_t)(v % sizeof(out)));
			break;
		case 2:
			rs->target_sgl[kind & 4 ? 1 : 0].length = v;
			break;
		case 3:
			memset(out, kind, sizeof(out));
			n = rsend(3, out, v % sizeof(out), 0);
			if (n > (ssize_t)(v % sizeof(out)))
				FAIL("rsend returned %zd for %zu", n, (size_t)(v % sizeof(out)));
			break;
		}
		check(rs);
	}

	ibv_dereg_mr(rs->smr);
	ibv_dereg_mr(rs->rmr);
	ibv_dereg_mr(rs->target_mr);
	free(rs->sbuf);
	free(rs->rbuf);
	free(rs->target_buffer_list);
	free(rs->rmsg);
	pthread_mutex_destroy(&rs->slock);
	pthread_mutex_destroy(&rs->rlock);
	pthread_mutex_destroy(&rs->cq_lock);
	pthread_mutex_destroy(&rs->map_lock);
	free(rs);
	cur = NULL;
	return 0;
}
