/*
 * rsockets: the data path of a stream rsocket (rdma-core's protocol,
 * rsock.h). Buffers and their registration, the connection's private
 * data, the CQ (what the peer wrote, what completed), credits, and the
 * send and receive calls (riomap and riowrite: rs_iomap.c).
 *
 * Everything the peer wrote is checked before use: a data message longer
 * than the bytes granted to the peer, a message beyond the credits granted
 * (or more than the queue of messages holds), a SEND without immediate or
 * an unknown op put the socket in error (EPROTO) instead of reading
 * outside the receive buffer.
 */
#include "rsock.h"

#include <byteswap.h>
#include <endian.h>
#include <stdlib.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* Whole pages, so that a fork-safe (MADV_DONTFORK) registration leaves
 * nothing else out of the child. */
void *sofrs_page_alloc(size_t len)
{
	long page = sysconf(_SC_PAGESIZE);
	void *p;

	len = (len + (size_t)page - 1) / (size_t)page * (size_t)page;
	if (posix_memalign(&p, (size_t)page, len))
		return NULL;
	memset(p, 0, len);
	return p;
}

int sofrs_init_bufs(struct sofrs *rs)
{
	size_t len;

	rs->rmsg = calloc(rs->rq_size + 1, sizeof(*rs->rmsg));
	if (!rs->rmsg)
		return sofcm_err(ENOMEM);
	/* control messages that do not fit inline go from after sbuf */
	rs->sbuf = sofrs_page_alloc(rs->sbuf_size + sizeof(struct rs_sge) * RS_QP_CTRL_SIZE);
	if (!rs->sbuf)
		return sofcm_err(ENOMEM);
	rs->smr = rdma_reg_msgs(rs->cm_id, rs->sbuf,
				rs->sbuf_size + sizeof(struct rs_sge) * RS_QP_CTRL_SIZE);
	if (!rs->smr)
		return -1;

	len = sizeof(struct rs_sge) * RS_SGL_SIZE +
	      sizeof(struct rs_iomap) * rs->target_iomap_size;
	rs->target_buffer_list = sofrs_page_alloc(len);
	if (!rs->target_buffer_list)
		return sofcm_err(ENOMEM);
	rs->target_mr = rdma_reg_write(rs->cm_id, rs->target_buffer_list, len);
	if (!rs->target_mr)
		return -1;
	rs->target_sgl = rs->target_buffer_list;
	if (rs->target_iomap_size)
		rs->target_iomap = (struct rs_iomap *)((struct rs_sge *)rs->target_buffer_list +
						       RS_SGL_SIZE);

	rs->rbuf = sofrs_page_alloc(rs->rbuf_size);
	if (!rs->rbuf)
		return sofcm_err(ENOMEM);
	rs->rmr = rdma_reg_write(rs->cm_id, rs->rbuf, rs->rbuf_size);
	if (!rs->rmr)
		return -1;

	rs->ssgl[0].addr = rs->ssgl[1].addr = (uintptr_t)rs->sbuf;
	rs->ssgl[0].lkey = rs->ssgl[1].lkey = rs->smr->lkey;
	rs->sbuf_bytes_avail = rs->sbuf_size;
	/* the first half is granted in the private data */
	rs->rbuf_free_offset = rs->rbuf_size >> 1;
	rs->rbuf_bytes_avail = rs->rbuf_size >> 1;
	rs->rbuf_granted = rs->rbuf_size >> 1;
	rs->sqe_avail = rs->sq_size - rs->ctrl_max_seqno;
	rs->rseq_comp = rs->rq_size >> 1;
	rs->rseq_credit = rs->rq_size;
	return 0;
}

int sofrs_post_recv(struct sofrs *rs)
{
	struct ibv_recv_wr wr = { .wr_id = RS_WR_ID_FLAG_RECV }, *bad;

	return sofcm_ret(-ibv_post_recv(rs->cm_id->qp, &wr, &bad));
}

/* 8-bit scale of rdma-core: small values as they are, larger ones as a
 * mantissa shifted by 8. */
static int rs_value_to_scale(int value, int bits)
{
	return value <= (1 << (bits - 1)) ? value : (1 << (bits - 1)) | (value >> bits);
}

static int rs_scale_to_value(int value, int bits)
{
	return value <= (1 << (bits - 1)) ? value : (value & ~(1 << (bits - 1))) << bits;
}

void sofrs_format_conn_data(struct sofrs *rs, struct rs_conn_data *conn)
{
	memset(conn, 0, sizeof(*conn));
	conn->version = RS_CONN_VERSION;
	conn->flags = RS_CONN_FLAG_IOMAP | (__BYTE_ORDER == __BIG_ENDIAN ? RS_CONN_FLAG_NET : 0);
	conn->credits = htobe16(rs->rq_size);
	conn->target_iomap_size = (uint8_t)rs_value_to_scale(rs->target_iomap_size, 8);
	conn->target_sgl.addr = htobe64((uintptr_t)rs->target_sgl);
	conn->target_sgl.length = htobe32(RS_SGL_SIZE);
	conn->target_sgl.key = htobe32(rs->target_mr->rkey);
	conn->data_buf.addr = htobe64((uintptr_t)rs->rbuf);
	conn->data_buf.length = htobe32(rs->rbuf_size >> 1);
	conn->data_buf.key = htobe32(rs->rmr->rkey);
}

void sofrs_save_conn_data(struct sofrs *rs, const struct rs_conn_data *conn)
{
	rs->remote_sgl.addr = be64toh(conn->target_sgl.addr);
	rs->remote_sgl.length = be32toh(conn->target_sgl.length);
	rs->remote_sgl.key = be32toh(conn->target_sgl.key);
	/* the peer's SGL has at least the entry its data_buf stands for */
	if (!rs->remote_sgl.length)
		rs->remote_sgl.length = 1;
	rs->remote_sge = 1 % rs->remote_sgl.length;
	if (!!(conn->flags & RS_CONN_FLAG_NET) != (__BYTE_ORDER == __BIG_ENDIAN))
		rs->opts |= RS_OPT_SWAP_SGL;
	if (conn->flags & RS_CONN_FLAG_IOMAP) {
		rs->remote_iomap.addr =
			rs->remote_sgl.addr + sizeof(struct rs_sge) * rs->remote_sgl.length;
		rs->remote_iomap.length = (uint32_t)rs_scale_to_value(conn->target_iomap_size, 8);
		rs->remote_iomap.key = rs->remote_sgl.key;
	}
	rs->target_sgl[0].addr = be64toh(conn->data_buf.addr);
	rs->target_sgl[0].length = be32toh(conn->data_buf.length);
	rs->target_sgl[0].key = be32toh(conn->data_buf.key);
	rs->sseq_comp = be16toh(conn->credits);
}

/* ---- posting -------------------------------------------------------------- */

int sofrs_post_msg(struct sofrs *rs, uint32_t msg)
{
	struct ibv_send_wr wr = {
		.wr_id = msg,
		.opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
		.imm_data = htobe32(msg),
	}, *bad;

	return sofcm_ret(-ibv_post_send(rs->cm_id->qp, &wr, &bad));
}

int sofrs_post_write(struct sofrs *rs, struct ibv_sge *sgl, int nsge, uint32_t msg,
			 bool imm, int flags, uint64_t addr, uint32_t rkey)
{
	struct ibv_send_wr wr = {
		.wr_id = msg,
		.sg_list = sgl,
		.num_sge = nsge,
		.opcode = imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE,
		.send_flags = flags,
		.imm_data = imm ? htobe32(msg) : 0,
		.wr.rdma = { .remote_addr = addr, .rkey = rkey },
	}, *bad;

	return sofcm_ret(-ibv_post_send(rs->cm_id->qp, &wr, &bad));
}

/* A send WQE and bytes of the send buffer taken: under cq_lock, as the
 * completions that give them back may be reaped by another thread's CQ
 * poll (a reader's) at the same time. Needs slock. */
void sofrs_take_send(struct sofrs *rs, uint32_t bytes)
{
	pthread_mutex_lock(&rs->cq_lock);
	rs->sqe_avail--;
	rs->sbuf_bytes_avail -= (int)bytes;
	pthread_mutex_unlock(&rs->cq_lock);
}

/* Take the target entry's room before posting: the peer may rewrite the
 * entry as soon as it sees the data. Needs slock. */
static int rs_write_data(struct sofrs *rs, struct ibv_sge *sgl, int nsge, uint32_t length,
			 int flags)
{
	volatile struct rs_sge *t = &rs->target_sgl[rs->target_sge];
	uint64_t addr = t->addr;
	uint32_t rkey = t->key;

	rs->sseq_no++;
	sofrs_take_send(rs, length);
	t->addr += length;
	t->length -= length;
	if (!t->length && ++rs->target_sge == RS_SGL_SIZE)
		rs->target_sge = 0;
	return sofrs_post_write(rs, sgl, nsge, rs_msg_set(RS_OP_DATA, length), true, flags, addr,
			     rkey);
}

uint32_t sofrs_sbuf_left(struct sofrs *rs)
{
	return (uint32_t)((uintptr_t)&rs->sbuf[rs->sbuf_size] - rs->ssgl[0].addr);
}

/* Grant the peer credits up to rseq_no + rq_size, with a free half of the
 * receive buffer when there is one. Needs cq_lock. */
static void rs_send_credits(struct sofrs *rs)
{
	struct rs_sge sge, *ctrl;
	struct ibv_sge ibsge;
	uint32_t msg = rs_msg_set(RS_OP_SGL, (uint16_t)(rs->rseq_no + rs->rq_size));
	int flags = 0;

	rs->ctrl_seqno++;
	rs->rseq_comp = rs->rseq_no + (rs->rq_size >> 1);
	rs->rseq_credit = rs->rseq_no + rs->rq_size;
	if (rs->rbuf_bytes_avail < (int)(rs->rbuf_size >> 1)) {
		sofrs_post_msg(rs, msg);
		return;
	}
	sge.addr = (uintptr_t)&rs->rbuf[rs->rbuf_free_offset];
	sge.key = rs->rmr->rkey;
	sge.length = rs->rbuf_size >> 1;
	if (rs->opts & RS_OPT_SWAP_SGL) {
		sge.addr = bswap_64(sge.addr);
		sge.key = bswap_32(sge.key);
		sge.length = bswap_32(sge.length);
	}
	if (rs->sq_inline >= sizeof(sge)) {
		ibsge.addr = (uintptr_t)&sge;
		ibsge.lkey = 0;
		flags = IBV_SEND_INLINE;
	} else {
		ctrl = (struct rs_sge *)(rs->sbuf + rs->sbuf_size) +
		       (rs->ctrl_seqno & (RS_QP_CTRL_SIZE - 1));
		*ctrl = sge;
		ibsge.addr = (uintptr_t)ctrl;
		ibsge.lkey = rs->smr->lkey;
	}
	ibsge.length = sizeof(sge);
	sofrs_post_write(rs, &ibsge, 1, msg, true, flags,
		      rs->remote_sgl.addr + (uint64_t)rs->remote_sge * sizeof(struct rs_sge),
		      rs->remote_sgl.key);
	rs->rbuf_bytes_avail -= rs->rbuf_size >> 1;
	rs->rbuf_granted += rs->rbuf_size >> 1;
	rs->rbuf_free_offset += rs->rbuf_size >> 1;
	if (rs->rbuf_free_offset >= (int)rs->rbuf_size)
		rs->rbuf_free_offset = 0;
	if (++rs->remote_sge == (int)rs->remote_sgl.length)
		rs->remote_sge = 0;
}

bool sofrs_ctrl_avail(struct sofrs *rs) { return rs->ctrl_seqno != rs->ctrl_max_seqno; }

static void rs_update_credits(struct sofrs *rs)
{
	if (((rs->rbuf_bytes_avail >= (int)(rs->rbuf_size >> 1)) ||
	     ((int16_t)(rs->rseq_no - rs->rseq_comp) >= 0)) &&
	    sofrs_ctrl_avail(rs) && (rs->state & rs_connected))
		rs_send_credits(rs);
}

static void rs_proto_error(struct sofrs *rs)
{
	if (rs->state & rs_error)
		return;
	rs->state = rs_error;
	rs->err = EPROTO;
	sofcm_qp_err(sofcm_id(rs->cm_id));
}

/* A receive completion: what the peer's immediate says. Needs cq_lock. */
static void rs_recv_msg(struct sofrs *rs, const struct ibv_wc *wc)
{
	uint32_t msg, len;
	int next;

	if (!(wc->wc_flags & IBV_WC_WITH_IMM)) {
		rs_proto_error(rs);
		return;
	}
	msg = be32toh(wc->imm_data);
	/* data and iomap messages use the peer's credits */
	if (rs_msg_op(msg) == RS_OP_DATA || rs_msg_op(msg) == RS_OP_IOMAP_SGL) {
		if ((int16_t)(rs->rseq_recv - rs->rseq_credit) >= 0) {
			rs_proto_error(rs);
			return;
		}
		rs->rseq_recv++;
	}
	switch (rs_msg_op(msg)) {
	case RS_OP_SGL:
		rs->sseq_comp = (uint16_t)rs_msg_data(msg);
		break;
	case RS_OP_IOMAP_SGL:
		break; /* the peer updated our iomap table */
	case RS_OP_CTRL:
		if (rs_msg_data(msg) == RS_CTRL_DISCONNECT) {
			rs->state = rs_disconnected;
		} else if (rs_msg_data(msg) == RS_CTRL_SHUTDOWN) {
			if (rs->state & rs_writable)
				rs->state &= ~rs_readable;
			else
				rs->state = rs_disconnected;
		}
		break;
	case RS_OP_DATA:
		len = rs_msg_data(msg);
		next = rs->rmsg_tail + 1 == rs->rq_size + 1 ? 0 : rs->rmsg_tail + 1;
		/* the peer wrote no more than we granted, in no more
		 * messages than it had credits for */
		if (len > rs->rbuf_granted || next == rs->rmsg_head) {
			rs_proto_error(rs);
			return;
		}
		rs->rbuf_granted -= len;
		if (!len) {
			rs->rseq_no++; /* nothing to read: consumed now */
			break;
		}
		rs->rmsg[rs->rmsg_tail].op = RS_OP_DATA;
		rs->rmsg[rs->rmsg_tail].data = len;
		rs->rmsg_tail = next;
		break;
	default:
		rs_proto_error(rs);
		break;
	}
}

/* Reap the CQ. Needs cq_lock. 0 or -1/errno. */
static int rs_poll_cq(struct sofrs *rs)
{
	struct ibv_wc wc[16];
	int i, n, rcnt = 0, ret = 0;
	uint32_t data;

	while ((n = ibv_poll_cq(rs->cm_id->recv_cq, 16, wc)) > 0) {
		for (i = 0; i < n; i++) {
			if (wc[i].wr_id & RS_WR_ID_FLAG_RECV) {
				if (wc[i].status != IBV_WC_SUCCESS) {
					if (rs->state & rs_connected) {
						rs->state = rs_error;
						rs->err = ECONNRESET;
					}
					continue;
				}
				rcnt++;
				if (rs->state & (rs_connected | rs_disconnected))
					rs_recv_msg(rs, &wc[i]);
				continue;
			}
			data = (uint32_t)wc[i].wr_id;
			switch (rs_msg_op(data)) {
			case RS_OP_SGL:
			case RS_OP_CTRL:
				rs->ctrl_max_seqno++;
				break;
			case RS_OP_IOMAP_SGL:
				rs->sqe_avail++;
				rs->sbuf_bytes_avail += sizeof(struct rs_iomap);
				break;
			default:
				rs->sqe_avail++;
				rs->sbuf_bytes_avail += rs_msg_data(data);
				break;
			}
			if (wc[i].status != IBV_WC_SUCCESS && (rs->state & rs_connected)) {
				rs->state = rs_error;
				/* the peer gone silent (a keepalive found it) */
				rs->err = wc[i].status == IBV_WC_WR_FLUSH_ERR	 ? ECONNRESET
					  : wc[i].status == IBV_WC_RETRY_EXC_ERR ? ETIMEDOUT
										 : EIO;
			}
		}
	}
	if (rs->state & rs_connected) {
		while (!ret && rcnt--)
			ret = sofrs_post_recv(rs);
		if (ret) {
			rs->state = rs_error;
			rs->err = errno;
		}
	}
	return ret;
}

/* Read a CQ event the channel holds (its fd is non-blocking). Needs
 * cq_lock. */
static void rs_get_cq_event(struct sofrs *rs)
{
	struct ibv_cq *cq;
	void *ctx;

	if (ibv_get_cq_event(rs->cm_id->recv_cq_channel, &cq, &ctx))
		return;
	rs->cq_armed = false;
	if (++rs->unack_cqe >= 64) {
		ibv_ack_cq_events(rs->cm_id->recv_cq, rs->unack_cqe);
		rs->unack_cqe = 0;
	}
}

static uint64_t rs_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* Wait for the CQ channel or the CM channel; cq_lock is dropped meanwhile. */
static void rs_wait(struct sofrs *rs)
{
	struct pollfd pfd[2];
	int n;

	pthread_mutex_unlock(&rs->cq_lock);
	n = sofrs_wait_fds(rs, pfd);
	sofv_engine_idle(); /* a QP whose transport runs here moves on */
	if (poll(pfd, (nfds_t)n, 500) > 0)
		sofrs_wait_done(rs, pfd, n);
	pthread_mutex_lock(&rs->cq_lock);
}

void sofrs_wait_done(struct sofrs *rs, const struct pollfd *pfd, int n)
{
	if (rs->type == SOCK_DGRAM) {
		sofrs_ds_wait_done(rs);
		return;
	}
	if (n > 0 && pfd[0].revents) {
		pthread_mutex_lock(&rs->cq_lock);
		rs_get_cq_event(rs);
		pthread_mutex_unlock(&rs->cq_lock);
	}
	/* a listener's channel holds requests: raccept reads them */
	if (n > 1 && pfd[1].revents && (rs->state & (rs_connected | rs_disconnected | rs_error)))
		sofrs_cm_events(rs);
}

static int rs_process_cq(struct sofrs *rs, bool nonblock, bool (*test)(struct sofrs *rs))
{
	int ret;

	pthread_mutex_lock(&rs->cq_lock);
	for (;;) {
		rs_update_credits(rs);
		ret = rs_poll_cq(rs);
		if (test(rs)) {
			ret = 0;
			break;
		}
		if (ret)
			break;
		if (nonblock) {
			ret = sofcm_err(EWOULDBLOCK);
			break;
		}
		if (!rs->cq_armed) {
			ibv_req_notify_cq(rs->cm_id->recv_cq, 0);
			rs->cq_armed = true;
			continue; /* poll once more: a completion may have raced */
		}
		rs_update_credits(rs);
		rs_wait(rs);
	}
	rs_update_credits(rs);
	pthread_mutex_unlock(&rs->cq_lock);
	return ret;
}

/* Before sleeping, poll for a while: a wake-up through the channel costs
 * more than a short completion takes to come (rdma-core's polling_time;
 * polling also moves the transport of a QP whose engine runs here). When
 * it does (the peer is on another host), the poll does not yield the CPU
 * between its looks, as rdma-core's does not: on a busy machine
 * sched_yield hands the CPU to every other runnable task, and the answer
 * that came meanwhile waits for all of them. With a peer on this host the
 * daemon's engine moves the QP, and a poll that kept the CPU would keep
 * it from running (and the peer, when it shares the CPU): it yields. */
int sofrs_process_cq(struct sofrs *rs, bool nonblock, bool (*test)(struct sofrs *rs))
{
	uint64_t start = 0;
	int ret;

	if (nonblock)
		return rs_process_cq(rs, true, test);
	for (;;) {
		ret = rs_process_cq(rs, true, test);
		if (!ret || errno != EWOULDBLOCK)
			return ret;
		if (!start)
			start = rs_now_us();
		else if (rs_now_us() - start > sofrs_poll_us)
			break;
		if (!rs->peer_remote)
			sched_yield();
	}
	return rs_process_cq(rs, false, test);
}

/* ---- tests for sofrs_process_cq -------------------------------------------- */

bool sofrs_can_send(struct sofrs *rs)
{
	return rs->sqe_avail && rs->sbuf_bytes_avail >= RS_SNDLOWAT &&
	       rs->sseq_no != rs->sseq_comp && rs->target_sgl[rs->target_sge].length != 0;
}

static bool rs_conn_can_send(struct sofrs *rs)
{
	return sofrs_can_send(rs) || !(rs->state & rs_writable);
}

bool sofrs_conn_can_send_ctrl(struct sofrs *rs)
{
	return sofrs_ctrl_avail(rs) || !(rs->state & rs_connected);
}

bool sofrs_have_rdata(struct sofrs *rs) { return rs->rmsg_head != rs->rmsg_tail; }

bool sofrs_conn_have_rdata(struct sofrs *rs)
{
	return sofrs_have_rdata(rs) || !(rs->state & rs_readable);
}

bool sofrs_all_sends_done(struct sofrs *rs)
{
	return ((int)rs->ctrl_max_seqno - (int)rs->ctrl_seqno) + rs->sqe_avail == rs->sq_size ||
	       !(rs->state & rs_connected);
}

/* ---- send ------------------------------------------------------------------ */

/* Copy len bytes of the iovec array at (*iov, *off) to dst. */
static void rs_copy_iov(uint8_t *dst, const struct iovec **iov, size_t *off, size_t len)
{
	while (len) {
		size_t n = (*iov)->iov_len - *off;

		if (n > len)
			n = len;
		memcpy(dst, (uint8_t *)(*iov)->iov_base + *off, n);
		dst += n;
		len -= n;
		*off += n;
		if (*off == (*iov)->iov_len) {
			(*iov)++;
			*off = 0;
		}
	}
}

/* Wait until a message may go; -1/errno when the socket can't send. */
int sofrs_wait_send(struct sofrs *rs, int flags)
{
	if (sofrs_can_send(rs))
		return 0;
	if (sofrs_process_cq(rs, sofrs_nonblocking(rs, flags), rs_conn_can_send))
		return -1;
	if (!(rs->state & rs_writable))
		return sofcm_err(rs->state & rs_error && rs->err ? rs->err : EPIPE);
	return 0;
}

static ssize_t rs_sendv(struct sofrs *rs, const struct iovec *iov, int iovcnt, int flags)
{
	const struct iovec *cur = iov;
	size_t len = 0, left = 0, off = 0;
	uint32_t xfer;
	int i, ret = 0;

	for (i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	left = len;
	while (cur < iov + iovcnt && !cur->iov_len)
		cur++;
	if (rs->state == rs_opening) /* a non-blocking rconnect goes on */
		return sofcm_err(EAGAIN);
	if (!(rs->state & rs_connected))
		return sofcm_err(rs->state & (rs_disconnected | rs_error) ? EPIPE : ENOTCONN);
	if (!(rs->state & rs_writable))
		return sofcm_err(EPIPE);

	pthread_mutex_lock(&rs->slock);
	if (rs->iomap_pending) {
		ret = sofrs_send_iomaps(rs, flags);
		if (ret)
			goto out;
	}
	for (; left; left -= xfer) {
		ret = sofrs_wait_send(rs, flags);
		if (ret)
			break;
		/* whole pieces of RS_SEND_XFER from the first: rdma-core
		 * starts at 2 KiB and doubles, to overlap the copy with a
		 * NIC's DMA; here the engine sends in this thread, nothing
		 * overlaps, and each message costs a completion, a receive
		 * and their transport work (the receiver takes any length up
		 * to what it granted) */
		xfer = left < RS_SEND_XFER ? (uint32_t)left : RS_SEND_XFER;
		if (xfer > (uint32_t)rs->sbuf_bytes_avail)
			xfer = (uint32_t)rs->sbuf_bytes_avail;
		if (xfer > rs->target_sgl[rs->target_sge].length)
			xfer = rs->target_sgl[rs->target_sge].length;

		if (xfer <= sofrs_sbuf_left(rs)) {
			rs_copy_iov((uint8_t *)(uintptr_t)rs->ssgl[0].addr, &cur, &off, xfer);
			rs->ssgl[0].length = xfer;
			ret = rs_write_data(rs, rs->ssgl, 1, xfer,
					    xfer <= rs->sq_inline ? IBV_SEND_INLINE : 0);
			if (xfer < sofrs_sbuf_left(rs))
				rs->ssgl[0].addr += xfer;
			else
				rs->ssgl[0].addr = (uintptr_t)rs->sbuf;
		} else {
			/* the send buffer wraps: two pieces */
			rs->ssgl[0].length = sofrs_sbuf_left(rs);
			rs_copy_iov((uint8_t *)(uintptr_t)rs->ssgl[0].addr, &cur, &off,
				    rs->ssgl[0].length);
			rs->ssgl[1].length = xfer - rs->ssgl[0].length;
			rs_copy_iov(rs->sbuf, &cur, &off, rs->ssgl[1].length);
			ret = rs_write_data(rs, rs->ssgl, 2, xfer,
					    xfer <= rs->sq_inline ? IBV_SEND_INLINE : 0);
			rs->ssgl[0].addr = (uintptr_t)rs->sbuf + rs->ssgl[1].length;
		}
		if (ret)
			break;
	}
out:
	pthread_mutex_unlock(&rs->slock);
	return ret && left == len ? ret : (ssize_t)(len - left);
}

/* Every send call comes here: a datagram rsocket's to rs_dgram.c; a
 * stream rsocket ignores the address, as Linux's TCP does on a connected
 * socket (rdma-core says EISCONN; sockperf sends so). */
static ssize_t rs_send_call(int socket, const struct iovec *iov, int iovcnt, int flags,
			    const struct sockaddr *to, socklen_t tolen)
{
	struct sofrs *rs = sofrs_get(socket);
	ssize_t ret;

	if (!rs)
		return sofcm_err(EBADF);
	if (rs->type == SOCK_DGRAM)
		ret = sofrs_ds_sendv(rs, iov, iovcnt, flags, to, tolen);
	else
		ret = rs_sendv(rs, iov, iovcnt, flags);
	sofrs_put(rs);
	return ret;
}

SOFCM_EXPORT ssize_t rsend(int socket, const void *buf, size_t len, int flags)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return rs_send_call(socket, &iov, 1, flags, NULL, 0);
}

SOFCM_EXPORT ssize_t rsendto(int socket, const void *buf, size_t len, int flags,
			     const struct sockaddr *dest_addr, socklen_t addrlen)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return rs_send_call(socket, &iov, 1, flags, dest_addr, addrlen);
}

SOFCM_EXPORT ssize_t rsendmsg(int socket, const struct msghdr *msg, int flags)
{
	if (msg->msg_control && msg->msg_controllen)
		return sofcm_err(ENOTSUP);
	return rs_send_call(socket, msg->msg_iov, (int)msg->msg_iovlen, flags, msg->msg_name,
			    msg->msg_namelen);
}

SOFCM_EXPORT ssize_t rwrite(int socket, const void *buf, size_t count)
{
	return rsend(socket, buf, count, 0);
}

SOFCM_EXPORT ssize_t rwritev(int socket, const struct iovec *iov, int iovcnt)
{
	return rs_send_call(socket, iov, iovcnt, 0, NULL, 0);
}

/* ---- receive --------------------------------------------------------------- */

/* Copy out up to len bytes of queued data into the iovecs, from byte skip
 * of them on; consume it unless peek. Needs rlock and cq_lock. */
static size_t rs_copy_out(struct sofrs *rs, const struct iovec *iov, size_t skip, size_t len,
			  bool peek)
{
	int head = rs->rmsg_head, offset = rs->rbuf_offset;
	size_t done = 0, ioff = skip;
	int i = 0;

	while (done < len && head != rs->rmsg_tail) {
		uint32_t avail = rs->rmsg[head].data, n;

		n = len - done < avail ? (uint32_t)(len - done) : avail;
		avail -= n;
		if (!peek) {
			if (avail)
				rs->rmsg[head].data = avail;
			else
				rs->rseq_no++;
		}
		if (!avail)
			head = head + 1 == rs->rq_size + 1 ? 0 : head + 1;
		while (n) {
			uint32_t piece = n, end = rs->rbuf_size - (uint32_t)offset;
			size_t room;

			while (ioff >= iov[i].iov_len) {
				ioff -= iov[i].iov_len;
				i++;
			}
			room = iov[i].iov_len - ioff;
			if (piece > end)
				piece = end;
			if (piece > room)
				piece = (uint32_t)room;
			memcpy((uint8_t *)iov[i].iov_base + ioff, &rs->rbuf[offset], piece);
			ioff += piece;
			offset += (int)piece;
			if (offset == (int)rs->rbuf_size)
				offset = 0;
			n -= piece;
			done += piece;
			if (!peek)
				rs->rbuf_bytes_avail += (int)piece;
		}
	}
	if (!peek) {
		rs->rmsg_head = head;
		rs->rbuf_offset = offset;
	}
	return done;
}

static void rs_credits_now(struct sofrs *rs)
{
	pthread_mutex_lock(&rs->cq_lock);
	rs_update_credits(rs);
	pthread_mutex_unlock(&rs->cq_lock);
}

/* A test of sofrs_process_cq that any completion passes: one pass. */
bool sofrs_any(struct sofrs *rs)
{
	(void)rs;
	return true;
}

/* Data already queued is read even after the peer disconnected. */
static ssize_t rs_recvv(struct sofrs *rs, const struct iovec *iov, int iovcnt, int flags)
{
	size_t len = 0, done = 0;
	int i, ret = 0;

	for (i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	if (rs->state == rs_opening)
		return sofcm_err(EAGAIN);
	if (rs->state < rs_connected && !(rs->state & (rs_disconnected | rs_error)))
		return sofcm_err(ENOTCONN);
	if (!len)
		return 0;

	pthread_mutex_lock(&rs->rlock);
	/* Data queued: rdma-core's reader copies it without a look at the
	 * CQ, its NIC placing what comes meanwhile. With the peer on another
	 * host, the transport of our QP runs in this process and moves only
	 * when a thread polls: a reader kept busy by a stream would leave the
	 * packets in the sockets until the queue ran dry (or for the
	 * engine's progress thread, on the same CPU when the program is
	 * pinned), and the sender waiting for their ACKs and the grant of
	 * the next half. One non-blocking poll first places them, sends the
	 * ACKs and returns credits (bench/README.md, issue 22). */
	if (rs->peer_remote && sofrs_have_rdata(rs))
		rs_process_cq(rs, true, sofrs_any);
	for (;;) {
		if (!sofrs_have_rdata(rs)) {
			ret = sofrs_process_cq(rs, sofrs_nonblocking(rs, flags),
					       sofrs_conn_have_rdata);
			if (ret)
				break;
			if (!sofrs_have_rdata(rs)) {
				/* end of stream, or the error that ended it */
				if ((rs->state & rs_error) && rs->err && !done)
					ret = sofcm_err(rs->err);
				break;
			}
		}
		/* under cq_lock: a sender's CQ poll grants from the same
		 * counters (rbuf_bytes_avail, rseq_no) */
		pthread_mutex_lock(&rs->cq_lock);
		if (flags & MSG_PEEK) {
			done = rs_copy_out(rs, iov, 0, len, true);
			pthread_mutex_unlock(&rs->cq_lock);
			break;
		}
		done += rs_copy_out(rs, iov, done, len - done, false);
		pthread_mutex_unlock(&rs->cq_lock);
		if (done == len || !(flags & MSG_WAITALL) || !(rs->state & rs_readable))
			break;
		rs_credits_now(rs);
	}
	if (done && !(flags & MSG_PEEK))
		rs_credits_now(rs);
	pthread_mutex_unlock(&rs->rlock);
	return ret && !done ? ret : (ssize_t)done;
}

/* Every receive call comes here: a datagram rsocket's to rs_dgram.c
 * (the sender's address from the datagram), a stream rsocket's from its
 * peer's address. */
static ssize_t rs_recv_call(int socket, const struct iovec *iov, int iovcnt, int flags,
			    struct sockaddr *from, socklen_t *fromlen)
{
	struct sofrs *rs = sofrs_get(socket);
	ssize_t ret;

	if (!rs)
		return sofcm_err(EBADF);
	if (rs->type == SOCK_DGRAM) {
		ret = sofrs_ds_recvv(rs, iov, iovcnt, flags, from, fromlen);
	} else {
		ret = rs_recvv(rs, iov, iovcnt, flags);
		if (ret > 0 && from && fromlen)
			rgetpeername(socket, from, fromlen);
	}
	sofrs_put(rs);
	return ret;
}

SOFCM_EXPORT ssize_t rrecv(int socket, void *buf, size_t len, int flags)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return rs_recv_call(socket, &iov, 1, flags, NULL, NULL);
}

SOFCM_EXPORT ssize_t rrecvfrom(int socket, void *buf, size_t len, int flags,
			       struct sockaddr *src_addr, socklen_t *addrlen)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return rs_recv_call(socket, &iov, 1, flags, src_addr, addrlen);
}

SOFCM_EXPORT ssize_t rrecvmsg(int socket, struct msghdr *msg, int flags)
{
	ssize_t ret;

	if (msg->msg_control && msg->msg_controllen)
		return sofcm_err(ENOTSUP);
	ret = rs_recv_call(socket, msg->msg_iov, (int)msg->msg_iovlen, flags, msg->msg_name,
			   msg->msg_name ? &msg->msg_namelen : NULL);
	if (ret >= 0)
		msg->msg_flags = 0;
	return ret;
}

SOFCM_EXPORT ssize_t rread(int socket, void *buf, size_t count)
{
	return rrecv(socket, buf, count, 0);
}

SOFCM_EXPORT ssize_t rreadv(int socket, const struct iovec *iov, int iovcnt)
{
	return rs_recv_call(socket, iov, iovcnt, 0, NULL, NULL);
}
