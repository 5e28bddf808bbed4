/*
 * One SDP connection's data path (IBTA Annex A4), under its lock: the
 * posts (Data and the other messages from the tx slots, receive buffers,
 * the RDMA READ of a peer's SrcAvail, the RDMA WRITE into its SinkAvail),
 * the completions (sends free their slot, receives are checked by
 * sdp_proto.c and queued in order), the delivery of what came to the
 * program's socketpair and the transmission of what the program wrote
 * (the send ring's pieces first, sdp_ring.c, then the socketpair's).
 * The connection's life, its CM events and its pump are sdp_conn.c's.
 */
#include "sdp_qpc.h"

#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

int sdp_post_recv(struct sdp_qpc *q, uint32_t idx)
{
	struct ibv_sge sge = {
	    .addr = (uintptr_t)(q->rx_buf + (size_t)idx * SDP_BUFSZ),
	    .length = SDP_BUFSZ,
	    .lkey = q->rx_mr->lkey,
	};
	struct ibv_recv_wr wr = {.wr_id = idx, .sg_list = &sge, .num_sge = 1}, *bad;

	return ibv_post_recv(q->id->qp, &wr, &bad) ? -EIO : 0;
}

/* Whether tx slot tx_head may be written: not while it holds what our
 * outstanding SrcAvail advertises. */
static int slot_free(struct sdp_qpc *q)
{
	return q->tx_inflight < SDP_TXN && !(q->flow.src_out && q->tx_head % SDP_TXN == q->zc_slot);
}

static uint8_t *tx_slot(struct sdp_qpc *q)
{
	return q->tx_buf + (size_t)(q->tx_head % SDP_TXN) * SDP_BUFSZ;
}

/* Post LEN bytes at OFF of tx slot tx_head (its BSDH already written). */
static int post_slot(struct sdp_qpc *q, uint32_t off, uint32_t len)
{
	uint32_t slot = q->tx_head % SDP_TXN;
	struct ibv_sge sge = {
	    .addr = (uintptr_t)(tx_slot(q) + off), .length = len, .lkey = q->tx_mr->lkey};
	struct ibv_send_wr wr =
			       {
				   .wr_id = SDP_WR_SEND | slot,
				   .sg_list = &sge,
				   .num_sge = 1,
				   .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED,
			       },
			   *bad;

	if (ibv_post_send(q->id->qp, &wr, &bad))
		return -EIO;
	q->tx_head++;
	q->tx_inflight++;
	q->ticks++;
	return 0;
}

/* A message of LEN bytes (BSDH included), its payload at SDP_TX_DATA_OFF. */
int sdp_post_msg(struct sdp_qpc *q, uint8_t mid, uint32_t len)
{
	uint32_t off = SDP_TX_DATA_OFF - SDP_BSDH_LEN;

	sdp_hdr_fill(&q->flow, (struct sdp_bsdh *)(tx_slot(q) + off), mid, len);
	return post_slot(q, off, len);
}

/* A4.6.5: offer the N bytes at DATA for the peer to READ, from tx slot
 * tx_head: the bytes read into it (RING 0), or ring slot RING - 1's; the
 * slot is ours again at its RdmaRdCompl. */
static int post_srcavail(struct sdp_qpc *q, uint32_t n, const uint8_t *data, uint32_t ring)
{
	uint8_t *slot = tx_slot(q);

	q->zc_slot = ring ? UINT32_MAX : q->tx_head % SDP_TXN;
	q->zc_ring = ring;
	q->zc_len = n;
	q->n_srcavail++;
	sdp_srcavail_fill(&q->flow, slot, n, q->tx_mr->rkey, (uintptr_t)data);
	return post_slot(q, 0, SDP_BSDH_LEN + (uint32_t)sizeof(struct sdp_srcah));
}

/* Data straight from ring slot I: its BSDH just before the payload. */
static int post_ring_data(struct sdp_qpc *q, uint32_t i, uint32_t n)
{
	uint8_t *hdr = sdp_ring_slot(q, i) + SDP_TX_DATA_OFF - SDP_BSDH_LEN;
	struct ibv_sge sge = {
	    .addr = (uintptr_t)hdr, .length = SDP_BSDH_LEN + n, .lkey = q->tx_mr->lkey};
	struct ibv_send_wr wr =
			       {
				   .wr_id = SDP_WR_RING | (i % SDP_RING_N),
				   .sg_list = &sge,
				   .num_sge = 1,
				   .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED,
			       },
			   *bad;

	sdp_hdr_fill(&q->flow, (struct sdp_bsdh *)hdr, SDP_MID_DATA, SDP_BSDH_LEN + n);
	q->n_data++;
	q->n_data_bytes += n;
	if (ibv_post_send(q->id->qp, &wr, &bad))
		return -EIO;
	q->ticks++;
	return 0;
}

/* READ what the peer's SrcAvail offers into the sink buffer. */
static int post_read(struct sdp_qpc *q, const struct sdp_rx *rx)
{
	struct ibv_sge sge = {
	    .addr = (uintptr_t)q->sink_buf, .length = rx->zlen, .lkey = q->sink_mr->lkey};
	struct ibv_send_wr wr =
			       {
				   .wr_id = SDP_WR_READ,
				   .sg_list = &sge,
				   .num_sge = 1,
				   .opcode = IBV_WR_RDMA_READ,
				   .send_flags = IBV_SEND_SIGNALED,
				   .wr.rdma = {.remote_addr = rx->zva, .rkey = rx->zrkey},
			       },
			   *bad;

	return ibv_post_send(q->id->qp, &wr, &bad) ? -EIO : 0;
}

/* A4.6.5 write mode: our SinkAvail, the wsink buffer offered whole */
static int post_sinkavail(struct sdp_qpc *q)
{
	sdp_sinkavail_fill(&q->flow, tx_slot(q), SDP_MAX_ZCOPY, q->wsink_mr->rkey,
			   (uintptr_t)q->wsink_buf);
	q->wsink_busy = 1;
	q->n_sinkavail++;
	return post_slot(q, 0, SDP_BSDH_LEN + (uint32_t)sizeof(struct sdp_sinkah));
}

/* WRITE the N bytes at DATA (read into tx slot tx_head, or a ring
 * slot's: WR_ID's) into the peer's SinkAvail buffer, then its RdmaWrCompl
 * from tx slot tx_head (RC completes the WRITE before the SEND, so the
 * slot is free again at the SEND's completion). */
static int post_write(struct sdp_qpc *q, uint32_t n, const uint8_t *data, uint64_t wr_id)
{
	uint8_t *slot = tx_slot(q);
	struct ibv_sge sge = {.addr = (uintptr_t)data, .length = n, .lkey = q->tx_mr->lkey};
	struct ibv_send_wr wr =
			       {
				   .wr_id = wr_id,
				   .sg_list = &sge,
				   .num_sge = 1,
				   .opcode = IBV_WR_RDMA_WRITE,
				   .send_flags = IBV_SEND_SIGNALED,
				   .wr.rdma = {.remote_addr = q->peer_sink_va,
					       .rkey = q->peer_sink_rkey},
			       },
			   *bad;

	if (ibv_post_send(q->id->qp, &wr, &bad))
		return -EIO;
	sdp_wrcompl_fill(&q->flow, slot, n);
	q->n_wrcompl++;
	return post_slot(q, 0, SDP_BSDH_LEN + (uint32_t)sizeof(struct sdp_rwch));
}

static void rxq_push(struct sdp_qpc *q, struct sdp_rxq e)
{
	q->rxq[(q->rxq_head + q->rxq_n) % SDP_RXQ] = e;
	q->rxq_n++;
}

/* The completions: sends free their slot, receives are checked and
 * queued for the program in order. */
int sdp_drain_cq(struct sdp_qpc *q)
{
	struct ibv_wc wc[16];
	struct sdp_rx rx;
	int n, i, ret;

	while ((n = ibv_poll_cq(q->cq, 16, wc)) > 0) {
		for (i = 0; i < n; i++) {
			q->ticks++;
			if (wc[i].status != IBV_WC_SUCCESS)
				return -ECONNRESET;
			if (wc[i].wr_id & SDP_WR_RING) {
				sdp_ring_done(q, (uint32_t)(wc[i].wr_id & 0xffff));
				continue;
			}
			if (wc[i].wr_id & SDP_WR_SEND) {
				if (wc[i].wr_id & SDP_WR_USER)
					q->user_out--;
				q->tx_inflight--;
				continue;
			}
			if (wc[i].wr_id & SDP_WR_WRITE)
				continue;
			if (wc[i].wr_id & SDP_WR_READ) {
				for (unsigned int k = 0; k < q->rxq_n; k++) {
					struct sdp_rxq *e = &q->rxq[(q->rxq_head + k) % SDP_RXQ];

					if (e->sink == SDP_SINK_READ)
						e->ready = 1;
				}
				continue;
			}
			q->flow.rx_posted--;
			ret = sdp_rx_msg(&q->flow, q->rx_buf + wc[i].wr_id * SDP_BUFSZ,
					 wc[i].byte_len, &rx);
			if (!ret)
				q->established = 1; /* the peer has our REP */
			if (ret) {
				sdp_log(SDP_LOG_ERR,
					"peer %s broke SDP: a message it sent was malformed",
					q->peer_str);
				return ret;
			}
			if (rx.kind == SDP_RX_ABORT)
				return -ECONNRESET;
			/* the length our SrcAvail offered, or the peer lies */
			if (rx.kind == SDP_RX_RDCOMPL && rx.zlen != q->zc_len)
				return -EPROTO;
			/* the peer has read the ring slot our SrcAvail offered */
			if (rx.kind == SDP_RX_RDCOMPL && q->zc_ring) {
				sdp_ring_done(q, q->zc_ring - 1);
				q->zc_ring = 0;
			}
			/* no more than our SinkAvail offered */
			if (rx.kind == SDP_RX_WRCOMPL && rx.zlen > SDP_MAX_ZCOPY)
				return -EPROTO;
			if (rx.kind == SDP_RX_SINKAVAIL) {
				q->peer_sink_len = rx.zlen;
				q->peer_sink_rkey = rx.zrkey;
				q->peer_sink_va = rx.zva;
			}
			rxq_push(q, (struct sdp_rxq){.idx = (uint32_t)wc[i].wr_id,
						     .off = rx.off,
						     .len = rx.len});
			if (rx.kind == SDP_RX_SRCAVAIL) {
				if (post_read(q, &rx))
					return -EIO;
				rxq_push(q,
					 (struct sdp_rxq){.sink = SDP_SINK_READ, .len = rx.zlen});
				q->n_read++;
				q->wsink_want = 1; /* the peer has large pieces */
			}
			if (rx.kind == SDP_RX_WRCOMPL && ++q->n_written)
				rxq_push(q, (struct sdp_rxq){.sink = SDP_SINK_WRITE,
							     .ready = 1,
							     .len = rx.zlen});
		}
	}
	return n < 0 ? -EIO : 0;
}

/* Copy up to N bytes at FROM into the direct reader's iovec (`take`,
 * from its position on): how many it took. */
static uint32_t take_copy(struct sdp_qpc *q, const uint8_t *from, uint32_t n)
{
	const struct msghdr *m = q->take;
	uint32_t done = 0;

	while (done < n && q->take_iov < m->msg_iovlen) {
		const struct iovec *v = &m->msg_iov[q->take_iov];
		size_t k = v->iov_len - q->take_off;

		if (k > n - done)
			k = n - done;
		memcpy((uint8_t *)v->iov_base + q->take_off, from + done, k);
		done += (uint32_t)k;
		q->take_off += k;
		if (q->take_off == v->iov_len) {
			q->take_iov++;
			q->take_off = 0;
		}
	}
	q->taken += done;
	return done;
}

/* Write queued payload to the program (or a direct reader's step: into
 * its iovec, until that is full); repost the buffers written out. */
static int deliver(struct sdp_qpc *q)
{
	int take = (q->step_mode & SDP_STEP_TAKE) != 0;

	q->out_blocked = 0;
	/* a direct reader came lately and none sleeps: what came is its
	 * next read's, out of the receive buffers (one copy, not two) */
	if ((!q->step_mode || (q->step_mode & SDP_STEP_HOLD)) && sdp_qpc_holds(q))
		return 0;
	while (q->rxq_n) {
		struct sdp_rxq *e = &q->rxq[q->rxq_head];
		uint8_t *from = e->sink == SDP_SINK_READ ? q->sink_buf
				: e->sink == SDP_SINK_WRITE
				    ? q->wsink_buf
				    : q->rx_buf + (size_t)e->idx * SDP_BUFSZ;
		ssize_t n = 0;

		if (e->sink && !e->ready)
			return 0; /* its READ is on its way */
		/* the reader's iovec is full; a sink's bytes go by the
		 * socketpair (zero copy, LIBSDP_ZCOPY) */
		if (take && e->len && (e->sink || q->take_iov == q->take->msg_iovlen))
			return 0;
		if (take && e->len && !q->app_gone) {
			n = take_copy(q, from + e->off, e->len);
		} else if (e->len && !q->app_gone) {
			n = sdp_real.sendto(q->ufd, from + e->off, e->len,
					    MSG_NOSIGNAL | MSG_DONTWAIT, NULL, 0);
			/* EFAULT: the buffer's pages are being moved onto
			 * shared memory (a remote-writable buffer a peer of
			 * this host first wrote: transmit's EFAULT); so later */
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EFAULT)) {
				q->out_blocked = 1;
				atomic_store(&q->out_wait, 1);
				return 0;
			}
			if (n < 0) {
				sdp_log(SDP_LOG_DEBUG, "the program's end takes no more: %s",
					strerror(errno));
				q->app_gone = 1; /* EPIPE: closed, or shut for reading */
			}
			atomic_fetch_add(&q->out_seq, 1);
		}
		q->ticks++;
		if (n > 0 && (uint32_t)n < e->len) {
			e->off += (uint32_t)n;
			e->len -= (uint32_t)n;
			continue;
		}
		if (e->sink == SDP_SINK_READ) {
			/* written out: the peer may have its buffer back */
			q->rrc_due = e->off + e->len + 1;
		} else if (e->sink == SDP_SINK_WRITE) {
			q->wsink_busy = 0; /* ours to offer again */
		} else {
			if (sdp_post_recv(q, e->idx))
				return -EIO;
			q->flow.rx_posted++;
		}
		q->rxq_head = (q->rxq_head + 1) % SDP_RXQ;
		q->rxq_n--;
	}
	atomic_store(&q->out_wait, 0);
	return 0;
}

int sdp_deliver(struct sdp_qpc *q)
{
	int ret = deliver(q);

	atomic_store(&q->held, q->rxq_n != 0);
	return ret;
}

/* The MR of the program's buffer of LEN bytes at P: registered (its
 * pages, local access only) once the writes came from the same start
 * twice in a row, and kept while they do; NULL meanwhile. */
static struct ibv_mr *user_mr(struct sdp_qpc *q, uint8_t *p, size_t len)
{
	uintptr_t a = (uintptr_t)p, lo = a & ~(uintptr_t)4095;
	uintptr_t hi = (a + len + 4095) & ~(uintptr_t)4095;
	struct ibv_mr *mr = q->umr;

	if (mr && a >= (uintptr_t)mr->addr && a + len <= (uintptr_t)mr->addr + mr->length)
		return mr;
	/* a registration is a call to the daemon: not for a buffer used
	 * once, nor again after one failed */
	if (q->umr_seen != a || q->umr_failed) {
		q->umr_seen = a;
		return NULL;
	}
	if (mr)
		ibv_dereg_mr(mr);
	q->umr = ibv_reg_mr(q->pd, (void *)lo, hi - lo, 0);
	q->umr_failed = !q->umr;
	return q->umr;
}

size_t sdp_send_user(struct sdp_qpc *q, struct msghdr *m, int *err)
{
	uint32_t max = q->pub.payload_max;
	size_t sent = 0;

	*err = 0;
	/* (after the peer's DREQ the QP sends nothing: pump_step) */
	while (m->msg_iovlen && m->msg_iov->iov_len >= max && q->established && !q->rd_eof &&
	       !q->dreq && q->tx_inflight < SDP_TXN - 2 && slot_free(q) && sdp_credits(&q->flow) >= 2) {
		uint8_t *p = m->msg_iov->iov_base, *hdr = tx_slot(q) + SDP_TX_DATA_OFF - SDP_BSDH_LEN;
		struct ibv_mr *mr = user_mr(q, p, m->msg_iov->iov_len);
		struct ibv_sge sge[2] = {
		    {.addr = (uintptr_t)hdr, .length = SDP_BSDH_LEN, .lkey = q->tx_mr->lkey},
		    {.addr = (uintptr_t)p, .length = max},
		};
		struct ibv_send_wr wr = {.wr_id = SDP_WR_SEND | SDP_WR_USER | (q->tx_head % SDP_TXN),
					 .sg_list = sge,
					 .num_sge = 2,
					 .opcode = IBV_WR_SEND,
					 .send_flags = IBV_SEND_SIGNALED},
				   *bad;

		if (!mr)
			break;
		sge[1].lkey = mr->lkey;
		sdp_hdr_fill(&q->flow, (struct sdp_bsdh *)hdr, SDP_MID_DATA, SDP_BSDH_LEN + max);
		if (ibv_post_send(q->id->qp, &wr, &bad)) {
			*err = -EIO;
			break;
		}
		q->tx_head++;
		q->tx_inflight++;
		q->user_out++;
		q->ticks++;
		q->n_data++;
		q->n_data_bytes += max;
		q->n_user_bytes += max;
		sent += max;
		m->msg_iov->iov_base = p + max;
		m->msg_iov->iov_len -= max;
		if (!m->msg_iov->iov_len) {
			m->msg_iov++;
			m->msg_iovlen--;
		}
	}
	/* the buffer is the program's again only once the engine copied it
	 * (on this host in the post itself, as a rule) */
	while (q->user_out && !*err) {
		*err = sdp_drain_cq(q);
		if (q->user_out && !*err)
			sched_yield();
	}
	return sent;
}

/* Send the ring's published pieces, in order, while credits allow (as
 * the socketpair's: Data, or by zero copy when ZC). With sends in flight
 * a small last piece is left for the writer to add to (as Nagle's
 * algorithm; a step after their completions sends it) by a writer's step,
 * or by any step after a whole piece: a bulk writer's 128 KiB writes are
 * not two whole pieces and a 64-byte one each (a ping-pong's messages go
 * at once); a slot the writer is adding to is left for the step that
 * follows its write. */
static int ring_send(struct sdp_qpc *q, int zc)
{
	uint32_t p = atomic_load_explicit(&q->prod, memory_order_acquire);
	uint32_t i = atomic_load_explicit(&q->posted, memory_order_relaxed);
	int ret;

	while (i != p && q->established && q->tx_inflight < SDP_TXN - 2 && slot_free(q) &&
	       sdp_credits(&q->flow) >= 2) {
		struct sdp_ring_slot *s = &q->ring[i % SDP_RING_N];
		uint8_t *data = sdp_ring_slot(q, i) + SDP_TX_DATA_OFF;
		unsigned int st = SDP_RS_FILLED;
		uint32_t n, in_flight = q->tx_inflight + (i - atomic_load(&q->freed));

		if (in_flight >= SDP_TX_GATHER && i + 1 == p &&
		    ((q->step_mode & SDP_STEP_SHORT) || q->tx_last == q->pub.payload_max) &&
		    atomic_load_explicit(&s->len, memory_order_relaxed) < SDP_TX_SMALL)
			break;
		/* acquire: the writer's bytes, appended ones too */
		if (!atomic_compare_exchange_strong(&s->state, &st, SDP_RS_POSTED))
			break;
		n = atomic_load_explicit(&s->len, memory_order_relaxed);
		atomic_store(&q->posted, ++i);
		q->tx_last = n;
		q->n_ring_bytes += n;
		if (n == q->pub.payload_max)
			q->app_bulk = 1;
		if (zc && q->flow.wsink_in && n >= SDP_ZCOPY_MIN && n <= q->peer_sink_len)
			ret = post_write(q, n, data,
					 SDP_WR_WRITE | SDP_WR_RING | ((i - 1) % SDP_RING_N));
		else if (zc && !q->flow.src_out && n >= SDP_ZCOPY_MIN)
			ret = post_srcavail(q, n, data, (i - 1) % SDP_RING_N + 1);
		else
			ret = post_ring_data(q, i - 1, n);
		if (ret)
			return ret;
	}
	return 0;
}

/* Read what the program wrote and send it while credits allow (a large
 * piece offered by SrcAvail when no other is outstanding); then DisConn at
 * its end of stream, and credit updates. A RdmaRdCompl due goes first. */
int sdp_transmit(struct sdp_qpc *q)
{
	uint32_t off = SDP_TX_DATA_OFF - SDP_BSDH_LEN;
	/* a reader's step leaves the program's bytes to the writer's own
	 * (sdp_drive), unless one asked for them meanwhile */
	int rd = !(q->step_mode & SDP_STEP_NO_READ) || atomic_exchange(&q->want_read, 0);
	/* zero copy (A4.6.5) is offered only when LIBSDP_ZCOPY asks for it
	 * (sdp_qpc_addrs): the send ring's slots already hold the copy of the
	 * program's bytes that a SEND goes from, and the peer's READ (or our
	 * WRITE) moves them as a SEND does, so an advert saves no copy and
	 * costs a SrcAvail or SinkAvail, its RdmaRdCompl or RdmaWrCompl and a
	 * round trip, one at a time, with the peer's delivery stalled behind
	 * its READ (one host, iperf3 128 KiB: 2.50x without; between veth
	 * hosts: sdp/README.md "Zero copy") */
	int zc = q->zcopy;
	int ret;

	q->in_blocked = !rd;
	if (!(q->step_mode & SDP_STEP_NO_READ))
		atomic_store(&q->want_read, 0);
	if (q->rrc_due && q->established && slot_free(q) && sdp_credits(&q->flow) >= 1) {
		sdp_rdcompl_fill(&q->flow, tx_slot(q) + off, q->rrc_due - 1);
		q->rrc_due = 0;
		ret = post_slot(q, off, SDP_BSDH_LEN + (uint32_t)sizeof(struct sdp_rrch));
		if (ret)
			return ret;
	}
	/* the data sink chooses write mode (A4.6.5) once the peer showed it
	 * has large pieces: one SinkAvail at a time, not after its DisConn,
	 * and never with the last credit (kept for a credit update) */
	if (zc && q->wmode && q->wsink_want && !q->wsink_busy && !q->flow.wsink_out &&
	    !q->flow.got_disconn && q->established && slot_free(q) && sdp_credits(&q->flow) >= 2) {
		ret = post_sinkavail(q);
		if (ret)
			return ret;
	}
	ret = ring_send(q, zc);
	if (ret)
		return ret;
	while (rd && q->established && !q->rd_eof && q->tx_inflight < SDP_TXN - 2 && slot_free(q) &&
	       sdp_credits(&q->flow) >= 2) {
		/* a writer's step with sends in flight leaves its bytes to
		 * gather in the socketpair (as Nagle's algorithm): the next
		 * step after a completion sends them as one message, so a
		 * stream of small writes is not a message each (after a
		 * small piece only: a bulk writer's pieces are whole) */
		if ((q->step_mode & SDP_STEP_SHORT) && q->tx_inflight >= SDP_TX_GATHER &&
		    q->tx_last < SDP_TX_SMALL) {
			atomic_store(&q->want_read, 1);
			q->in_blocked = 1;
			break;
		}
		/* the peer's SinkAvail takes the next piece if it is large */
		int wr = zc && q->flow.wsink_in;
		uint32_t max = wr && q->peer_sink_len < q->pub.payload_max ? q->peer_sink_len
									   : q->pub.payload_max;
		ssize_t n;

		/* the socketpair's bytes follow the ring's: read only with
		 * every published slot posted, the writer kept out (sdp_ring.c) */
		if (pthread_mutex_trylock(&q->wlock)) {
			q->in_blocked = 1;
			break;
		}
		if (atomic_load(&q->prod) != atomic_load(&q->posted)) {
			pthread_mutex_unlock(&q->wlock);
			break;
		}
		n = sdp_real.recv(q->ufd, tx_slot(q) + SDP_TX_DATA_OFF, max, MSG_DONTWAIT);
		pthread_mutex_unlock(&q->wlock);

		/* EFAULT: the slots are remote-readable, and libibverbs moves
		 * such pages onto shared memory when a peer of this host first
		 * reads them; a system call writing there meanwhile fails, the
		 * data stays in the socket (our libibverbs' mem_share.c) */
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EFAULT)) {
			q->in_blocked = 1;
			break;
		}
		if ((size_t)n == max)
			q->app_bulk = 1; /* more may be on its way: spin_yields */
		if (n > 0)
			q->tx_last = (uint32_t)n;
		if (n <= 0) {
			sdp_log(SDP_LOG_DEBUG, "end of the program's stream: %zd (%s)", n,
				n ? strerror(errno) : "end");
			q->rd_eof = 1;
			break;
		}
		if (wr && (uint32_t)n >= SDP_ZCOPY_MIN)
			ret =
			    post_write(q, (uint32_t)n, tx_slot(q) + SDP_TX_DATA_OFF, SDP_WR_WRITE);
		else if (zc && !q->flow.src_out && (uint32_t)n >= SDP_ZCOPY_MIN)
			ret = post_srcavail(q, (uint32_t)n, tx_slot(q) + SDP_TX_DATA_OFF, 0);
		else {
			q->n_data++;
			q->n_data_bytes += (uint64_t)n;
			ret = sdp_post_msg(q, SDP_MID_DATA, SDP_BSDH_LEN + (uint32_t)n);
		}
		if (ret)
			return ret;
		/* a writer's step: what it wrote is out (a short piece), more
		 * is another writer's, whose own step follows */
		if ((q->step_mode & SDP_STEP_SHORT) && (uint32_t)n < max) {
			q->in_blocked = 1;
			break;
		}
	}
	if (!q->established || !slot_free(q) || sdp_credits(&q->flow) < 1)
		return 0;
	if (q->rd_eof && !q->sent_disconn) {
		q->sent_disconn = 1;
		return sdp_post_msg(q, SDP_MID_DISCONN, SDP_BSDH_LEN);
	}
	if (sdp_want_update(&q->flow))
		return sdp_post_msg(q, SDP_MID_DATA, SDP_BSDH_LEN);
	return 0;
}
