/*
 * SDP connections over the RDMA CM and one RC QP each (IBTA Annex A4,
 * buffer copy mode): the active side's REQ carries our Hello, the passive
 * side's REP the HelloAck (A4.4). Ids are made with the public librdmacm
 * calls on AF_IB addresses with A4's service IDs (0x000000000001PPPP,
 * RDMA_PS_IB; RC, as rdma_create_ep makes it from an rdma_addrinfo); the
 * QP, CQ and buffers with the public libibverbs calls.
 *
 * Each connection has a pump thread: it posts SDP_NBUFS receive buffers
 * of SDP_BUFSZ bytes, reads what the program wrote into its end of the
 * socketpair and sends it as Data messages (A4.6.1) while the peer has
 * credits, a large piece as a SrcAvail the peer READs (A4.6.5, read
 * mode) or, when the peer advertised a SinkAvail, RDMA WRITEs it there and
 * sends RdmaWrCompl (write mode); and writes the payload of what arrives
 * (what it READ for the peer's SrcAvail, then answering RdmaRdCompl; what
 * the peer wrote into our SinkAvail's buffer) to the socketpair,
 * reposting each buffer once it is written out. As data sink it offers a
 * SinkAvail once the peer sent a SrcAvail (it has large pieces: the sink
 * chooses write mode, A4.6.5), and again each time the written bytes went
 * to the program. End of stream is DisConn both ways (A4.6.4), then rdma_disconnect. A peer that breaks the
 * protocol (sdp_proto.c), aborts, or disappears (a failed completion, a
 * DREQ before its DisConn) ends the connection with an error the
 * program's next read reports (sdp_preload.c). The active side's connect
 * is sdp_connect.c's; the data path (posts, completions, delivery,
 * transmission) sdp_data.c's.
 */
#include "sdp_qpc.h"
#include "sof_peer.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/ib.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* The pumps of this process (pump_pid: a forked child has none), and
 * those that are still sending what the program wrote before its end of
 * stream: exit waits for them (sdp_conn_flush). */
static atomic_int pumps_alive, pumps_draining;
static pid_t pump_pid;

/* (a connection is its sdp_qpc's first member, or stands alone: a child's
 * view of one, sdp_preload.c) */
void sdp_conn_put(struct sdp_conn *c)
{
	struct sdp_qpc *q = c->priv;

	if (atomic_fetch_sub(&c->ref, 1) != 1)
		return;
	if (q) {
		/* the last reference: no calling thread wakes it any more */
		if (q->wake_fd >= 0)
			sdp_real.close(q->wake_fd);
		pthread_mutex_destroy(&q->lock);
		pthread_mutex_destroy(&q->wlock);
	}
	free(c);
}

/* The QP, its buffers and the pump's end of the socketpair. */
static void qpc_release(struct sdp_qpc *q)
{
	if (q->id && q->id->qp)
		rdma_destroy_qp(q->id);
	if (q->cq)
		ibv_destroy_cq(q->cq);
	if (q->comp)
		ibv_destroy_comp_channel(q->comp);
	if (q->rx_mr)
		ibv_dereg_mr(q->rx_mr);
	if (q->tx_mr)
		ibv_dereg_mr(q->tx_mr);
	if (q->sink_mr)
		ibv_dereg_mr(q->sink_mr);
	if (q->wsink_mr)
		ibv_dereg_mr(q->wsink_mr);
	if (q->umr)
		ibv_dereg_mr(q->umr);
	if (q->pd)
		ibv_dealloc_pd(q->pd);
	if (q->id)
		rdma_destroy_id(q->id);
	if (q->ch)
		rdma_destroy_event_channel(q->ch);
	free(q->rx_buf);
	free(q->tx_buf);
	free(q->sink_buf);
	free(q->wsink_buf);
	if (q->ufd >= 0)
		sdp_real.close(q->ufd);
	q->ufd = -1;
	q->id = NULL;
}

void sdp_qpc_free(struct sdp_qpc *q)
{
	qpc_release(q);
	sdp_conn_put(&q->pub);
}

struct sdp_qpc *sdp_qpc_new(void)
{
	struct sdp_qpc *q = calloc(1, sizeof(*q));

	if (!q)
		return NULL;
	atomic_init(&q->pub.ref, 1);
	q->pub.priv = q;
	q->ufd = -1;
	pthread_mutex_init(&q->lock, NULL);
	pthread_mutex_init(&q->wlock, NULL);
	q->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (q->wake_fd < 0) {
		pthread_mutex_destroy(&q->lock);
		pthread_mutex_destroy(&q->wlock);
		free(q);
		return NULL;
	}
	sdp_flow_init(&q->flow, SDP_NBUFS);
	return q;
}

/* The PD, CQ, QP and buffers of id; all receive buffers posted. */
int sdp_qpc_resources(struct sdp_qpc *q)
{
	struct ibv_qp_init_attr attr;
	uint32_t i;

	q->pd = ibv_alloc_pd(q->id->verbs);
	q->comp = q->pd ? ibv_create_comp_channel(q->id->verbs) : NULL;
	q->cq = q->comp ? ibv_create_cq(q->id->verbs, SDP_NBUFS + SDP_TXN + SDP_RING_N + 6, NULL,
					  q->comp, 0) : NULL;
	q->rx_buf = aligned_alloc(4096, (size_t)SDP_NBUFS * SDP_BUFSZ);
	/* the tx slots, then the send ring's (sdp_ring.c) */
	q->tx_buf = aligned_alloc(4096, (size_t)(SDP_TXN + SDP_RING_N) * SDP_BUFSZ);
	q->sink_buf = aligned_alloc(4096, SDP_MAX_ZCOPY);
	q->wsink_buf = aligned_alloc(4096, SDP_MAX_ZCOPY);
	if (!q->cq || !q->rx_buf || !q->tx_buf || !q->sink_buf || !q->wsink_buf)
		return -ENOMEM;
	q->rx_mr = ibv_reg_mr(q->pd, q->rx_buf, (size_t)SDP_NBUFS * SDP_BUFSZ, IBV_ACCESS_LOCAL_WRITE);
	/* the peer reads what a SrcAvail advertises */
	q->tx_mr = ibv_reg_mr(q->pd, q->tx_buf, (size_t)(SDP_TXN + SDP_RING_N) * SDP_BUFSZ,
			      IBV_ACCESS_REMOTE_READ);
	q->sink_mr = ibv_reg_mr(q->pd, q->sink_buf, SDP_MAX_ZCOPY, IBV_ACCESS_LOCAL_WRITE);
	/* the peer writes what our SinkAvail advertises */
	q->wsink_mr = ibv_reg_mr(q->pd, q->wsink_buf, SDP_MAX_ZCOPY,
				 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!q->rx_mr || !q->tx_mr || !q->sink_mr || !q->wsink_mr)
		return -ENOMEM;
	memset(&attr, 0, sizeof(attr));
	attr.send_cq = q->cq;
	attr.recv_cq = q->cq;
	attr.qp_type = IBV_QPT_RC;
	attr.cap.max_send_wr = SDP_TXN + SDP_RING_N + 2 * SDP_MAX_ADVERTS;
	attr.cap.max_recv_wr = SDP_NBUFS;
	attr.cap.max_send_sge = 2; /* a BSDH and the program's bytes (sdp_send_user) */
	attr.cap.max_recv_sge = 1;
	attr.sq_sig_all = 1;
	if (rdma_create_qp(q->id, q->pd, &attr))
		return -errno;
	for (i = 0; i < SDP_NBUFS; i++)
		if (sdp_post_recv(q, i))
			return -EIO;
	if (ibv_req_notify_cq(q->cq, 0))
		return -EIO;
	return 0;
}

void sdp_conn_param(struct rdma_conn_param *p, const void *pd, size_t len)
{
	memset(p, 0, sizeof(*p));
	p->private_data = pd;
	p->private_data_len = (uint8_t)len;
	p->retry_count = 7;
	p->rnr_retry_count = 7;
	/* the READs of SrcAvails, each way */
	p->responder_resources = SDP_MAX_ADVERTS;
	p->initiator_depth = SDP_MAX_ADVERTS;
}

/* The names the program sees: the ends' addresses and ports. */
void sdp_qpc_addrs(struct sdp_qpc *q, const struct sockaddr_in6 *local,
		   const struct sockaddr_in6 *peer)
{
	const char *zc = getenv("LIBSDP_ZCOPY");

	q->pub.local = *local;
	q->pub.peer = *peer;
	sdp_addr_str(peer, q->peer_str, sizeof(q->peer_str));
	q->pub.payload_max = q->flow.peer_rcvsz - SDP_BSDH_LEN < SDP_BUFSZ - SDP_TX_DATA_OFF ?
				     q->flow.peer_rcvsz - SDP_BSDH_LEN : SDP_BUFSZ - SDP_TX_DATA_OFF;
	/* LIBSDP_ZCOPY: 1 both modes, `read` read mode only (no SinkAvail);
	 * unset, empty or 0: none (sdp_transmit says why) */
	q->zcopy = q->flow.peer_adverts > 0 && zc && *zc && strcmp(zc, "0");
	q->wmode = q->zcopy && strcmp(zc, "read");
}

static int cm_event(struct sdp_qpc *q)
{
	struct rdma_cm_event *ev;
	enum rdma_cm_event_type type;

	if (rdma_get_cm_event(q->ch, &ev))
		return errno == EAGAIN ? 2 : -EIO;
	type = ev->event;
	rdma_ack_cm_event(ev);
	switch (type) {
	case RDMA_CM_EVENT_ESTABLISHED:
		q->established = 1;
		return 0;
	case RDMA_CM_EVENT_DISCONNECTED:
		/* what the peer sent before its DREQ is in the CQ: it goes to
		 * the program before the end (pump_step), also when the end is
		 * a reset (no DisConn: the peer's process is gone, or its QP
		 * failed), as a TCP peer's data before its RST */
		if (sdp_drain_cq(q) || !q->flow.got_disconn)
			q->reset = 1;
		q->dreq = 1;
		return 0;
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		return -ECONNRESET;
	default:
		return 0;
	}
}

static long ms_since(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - t->tv_sec) * 1000 + (now.tv_nsec - t->tv_nsec) / 1000000;
}

static void set_draining(struct sdp_qpc *q, int on)
{
	if (on == q->draining)
		return;
	q->draining = (uint8_t)on;
	atomic_fetch_add(&pumps_draining, on ? 1 : -1);
}

void sdp_conn_flush(int ms)
{
	int t;

	if (getpid() != pump_pid)
		return;
	for (t = 0; t < ms && atomic_load(&pumps_alive); t++) {
		/* the rest are held open elsewhere (a child's copy) */
		if (t >= 200 && !atomic_load(&pumps_draining))
			break;
		usleep(1000);
	}
}

/* One step; 1 when the connection has ended as agreed, < 0 on error. */
static int pump_step(struct sdp_qpc *q)
{
	/* after the peer's DREQ the QP sends and receives nothing more */
	int ret = q->dreq ? 0 : sdp_drain_cq(q), dret;

	/* what arrived before an error is the program's */
	dret = sdp_deliver(q);
	if (!ret)
		ret = dret;
	if (!ret && !q->dreq)
		ret = sdp_transmit(q);
	if (ret)
		return ret;
	if (q->flow.got_disconn && !q->rxq_n && !q->app_gone && !q->shut_wr) {
		sdp_real.shutdown(q->ufd, SHUT_WR); /* the program reads its end of stream */
		q->shut_wr = 1;
		atomic_fetch_add(&q->out_seq, 1);
	}
	if (q->dreq && !q->rxq_n)
		return q->reset ? -ECONNRESET : 1; /* all the peer sent went to the program */
	/* the program reads no more (EPIPE: closed, or shutdown SHUT_RD) and
	 * writes no more: the peer's DisConn is waited for a while only */
	if (q->app_gone && q->rd_eof && !q->gone_at.tv_sec)
		clock_gettime(CLOCK_MONOTONIC, &q->gone_at);
	/* what the program wrote is still being sent: exit waits for it */
	set_draining(q, (q->rd_eof || sdp_ring_busy(q)) &&
			    !(q->sent_disconn && !q->tx_inflight && !q->flow.src_out));
	if (q->sent_disconn && q->flow.got_disconn && !q->rxq_n && !q->tx_inflight &&
	    !q->flow.src_out && !q->rrc_due && !sdp_ring_busy(q))
		return 1;
	if (q->app_gone && q->gone_at.tv_sec && ms_since(&q->gone_at) > SDP_CLOSE_MS)
		return -ETIMEDOUT;
	return 0;
}

int sdp_qpc_step(struct sdp_qpc *q, int mode)
{
	int ret;

	q->step_mode = (uint8_t)mode;
	ret = pump_step(q);
	q->step_mode = 0;
	return ret;
}

uint64_t sdp_now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* How long a pump, or a program's thread in its call, polls before it
 * sleeps. */
uint64_t sdp_spin_ns(void)
{
	static uint64_t ns;
	const char *env;

	if (ns)
		return ns;
	env = getenv("LIBSDP_SPIN_US");
	ns = env ? strtoull(env, NULL, 10) * 1000 + 1 : SDP_SPIN_NS;
	return ns;
}

/* (under the lock) */
int sdp_qpc_local(struct sdp_qpc *q)
{
	if (!q->locality && q->established)
		q->locality = sof_peer_remote(q->id->qp, q->id->verbs, q->id->port_num) ?
				      SDP_PEER_REMOTE :
				      SDP_PEER_LOCAL;
	return q->locality != SDP_PEER_REMOTE;
}

/* Whether the spin yields the CPU after a look. With the peer on this
 * host it does: the daemon's engine moves the QP (and the peer may share
 * the CPU), a spin that kept the CPU would keep them from running. With
 * the peer on another host polling moves the QP, and a yield on a busy
 * machine lets every other runnable task run before the answer is seen;
 * so only while the program's thread competes with the pump (it may be
 * on the same CPU: a program pinned with taskset): bytes we wrote wait in
 * its end for it to read, or bytes it wrote wait in ours, so it is about
 * to run (or runs) on the socket, or it writes in bulk (it filled a whole
 * piece since the pump last slept: the pump's read may just have woken it
 * from a full socket). Otherwise it sleeps in a read or poll for the
 * peer's answer and the spin keeps the CPU. (under the lock) */
static int spin_yields(struct sdp_qpc *q)
{
	int n;

	if (sdp_qpc_local(q) || q->app_bulk)
		return 1;
	if (!ioctl(q->ufd, SIOCOUTQ, &n) && n > 0)
		return 1;
	return !ioctl(q->ufd, SIOCINQ, &n) && n > 0;
}

/* What the pump does under the lock besides its step (the lock is taken
 * only in pump_locked, so that a step a calling thread asked for while
 * the pump held it is never left undone). */
struct pump_look {
	unsigned long ticks; /* out: the work done counter, */
	unsigned long ticks_before; /* and before the step */
	int yields;	     /* out: spin_yields */
	int arm;	     /* in: arm the CQ first */
	int clear_bulk;	     /* in: app_bulk = 0 */
	struct pollfd *p;    /* out: what the pump's sleep watches, */
	int timeout;	     /* and for how long */
};

/* The pump's step under the lock: the CM's events, then pump_step; again
 * while a calling thread asked for one meanwhile (sdp_drive). A result
 * that ends the connection stays in `end`. */
static int pump_locked(struct sdp_qpc *q, struct pump_look *lk)
{
	unsigned int w;
	int ret;

	do {
		pthread_mutex_lock(&q->lock);
		w = atomic_load(&q->work);
		ret = q->end;
		if (lk)
			lk->ticks_before = q->ticks;
		if (!ret && lk && lk->arm && ibv_req_notify_cq(q->cq, 0))
			ret = -EIO;
		/* every event: the channel's fd is non-blocking, and events
		 * of the id's first (synchronous) channel may wait in the
		 * library's backlog, which the fd does not show */
		while (!ret && (ret = cm_event(q)) == 0)
			;
		if (ret == 2)
			ret = pump_step(q);
		q->end = ret;
		if (lk) {
			lk->ticks = q->ticks;
			lk->yields = !ret && spin_yields(q);
			if (lk->clear_bulk)
				q->app_bulk = 0;
			if (lk->p) {
				lk->p[0] = (struct pollfd){ .fd = q->comp->fd, .events = POLLIN };
				lk->p[1] = (struct pollfd){ .fd = q->ch->fd, .events = POLLIN };
				lk->p[2] = (struct pollfd){ .fd = q->ufd, .events = 0 };
				lk->p[3] = (struct pollfd){ .fd = q->wake_fd, .events = POLLIN };
				if (q->in_blocked)
					lk->p[2].events |= POLLIN;
				if (q->out_blocked)
					lk->p[2].events |= POLLOUT;
				/* bytes left for a direct reader: they go to
				 * the socketpair once it stopped coming */
				lk->timeout = q->app_gone ? 200
					      : atomic_load(&q->held) ? SDP_HOLD_NS / 1000000 + 1
								    : -1;
			}
		}
		pthread_mutex_unlock(&q->lock);
	} while (!ret && atomic_load(&q->work) != w);
	return ret;
}

static int spin(struct sdp_qpc *q, int *ret)
{
	struct pump_look lk = { 0 };
	unsigned long t0;
	unsigned int d0 = atomic_load(&q->drives);
	uint64_t until = sdp_now_ns() + sdp_spin_ns();

	*ret = pump_locked(q, &lk);
	if (*ret)
		return 1;
	t0 = lk.ticks;
	do {
		*ret = pump_locked(q, &lk);
		/* something moved, or the program's threads step it */
		if (*ret || lk.ticks != t0 || atomic_load(&q->drives) != d0)
			return 1;
		if (lk.yields)
			sched_yield();
	} while (sdp_now_ns() < until);
	lk.clear_bulk = 1;
	*ret = pump_locked(q, &lk);
	return *ret != 0;
}

static void wake_drain(struct sdp_qpc *q)
{
	uint64_t v;

	if (sdp_real.read(q->wake_fd, &v, sizeof(v)) < 0)
		return; /* nothing to drain: EAGAIN */
}

/* While the program's threads step the connection in their calls (the
 * count moved since the last look) and none sleeps in the kernel on it,
 * the pump keeps out of their way: it sleeps a tick watching only the
 * CM's channel and its wake-up, neither the CQ (whose events would wake
 * it for every message) nor the socketpair (the program's writes). 1 when
 * it slept so. */
static int pump_quiet(struct sdp_qpc *q)
{
	unsigned int d = atomic_load(&q->drives);
	struct pollfd p[2] = {
		{ .fd = q->ch->fd, .events = POLLIN },
		{ .fd = q->wake_fd, .events = POLLIN },
	};

	if (d == q->drives_seen)
		return 0;
	q->drives_seen = d;
	/* quiet first, then the sleepers: a thread that goes to sleep
	 * counts itself first, then looks whether to wake us */
	atomic_store(&q->quiet, 1);
	if (atomic_load(&q->sleepers) || atomic_load(&sdp_sleepers_all)) {
		atomic_store(&q->quiet, 0);
		return 0;
	}
	sdp_real.poll(p, 2, atomic_load(&q->held) ? SDP_HOLD_NS / 1000000 + 1 : SDP_QUIET_MS);
	atomic_store(&q->quiet, 0);
	if (p[1].revents & POLLIN)
		wake_drain(q);
	return 1;
}

void *sdp_pump(void *arg)
{
	struct sdp_qpc *q = arg;
	struct pollfd p[4];
	int ret;

	q->pid = getpid();
	q->drives_seen = atomic_load(&q->drives);
	atomic_store(&q->ring_on, 1);
	atomic_store(&q->live, 1);
	sdp_drive_add(q);
	for (;;) {
		struct pump_look lk = { .arm = 1, .p = p }, first = { 0 };

		ret = pump_locked(q, &first);
		if (ret)
			break;
		/* quiet only while its own steps find nothing to do: a bulk
		 * transfer keeps the pump moving bytes beside the program */
		if (first.ticks == first.ticks_before && pump_quiet(q))
			continue;
		if (spin(q, &ret)) {
			if (ret)
				break;
			continue;
		}
		/* armed, then a step: what came before the arm is seen */
		ret = pump_locked(q, &lk);
		if (ret)
			break;
		if (sdp_real.poll(p, 4, lk.timeout) < 0 && errno != EINTR) {
			ret = -EIO;
			break;
		}
		if (p[0].revents & POLLIN) {
			struct ibv_cq *cq;
			void *ctx;

			if (!ibv_get_cq_event(q->comp, &cq, &ctx))
				ibv_ack_cq_events(cq, 1);
		}
		if (p[3].revents & POLLIN)
			wake_drain(q);
	}
	sdp_drive_del(q);
	/* the writers go to the socketpair (shut below) from now on */
	sdp_ring_close(q);
	pthread_mutex_lock(&q->lock);
	if (ret < 0) {
		atomic_store(&q->pub.error, -ret);
		sdp_log(SDP_LOG_WARN, "SDP connection with %s ended: %s", q->peer_str,
			strerror(-ret));
		if (ret == -EPROTO && q->tx_inflight < SDP_TXN && sdp_credits(&q->flow) >= 1)
			sdp_post_msg(q, SDP_MID_ABORT, SDP_BSDH_LEN);
	}
	sdp_log(SDP_LOG_DEBUG,
		"SDP connection with %s: zero copy: %u SrcAvail sent, %u RdmaWrCompl sent, "
		"%u SinkAvail offered, %u SrcAvail read, %u RdmaWrCompl received; "
		"%llu Data messages of %llu bytes, %llu bytes from the send ring; "
		"%llu bytes read straight from the receive buffers, %llu sent from the program's",
		q->peer_str, q->n_srcavail, q->n_wrcompl, q->n_sinkavail, q->n_read, q->n_written,
		(unsigned long long)q->n_data, (unsigned long long)q->n_data_bytes,
		(unsigned long long)q->n_ring_bytes, (unsigned long long)q->n_taken, (unsigned long long)q->n_user_bytes);
	if (ret < 0)
		sdp_real.shutdown(q->ufd, SHUT_RDWR);
	else
		sdp_real.shutdown(q->ufd, SHUT_WR);
	rdma_disconnect(q->id);
	set_draining(q, 0);
	q->dead = 1;
	atomic_fetch_add(&q->out_seq, 1);
	qpc_release(q);
	pthread_mutex_unlock(&q->lock);
	sdp_conn_put(&q->pub);
	atomic_fetch_sub(&pumps_alive, 1);
	return NULL;
}

/* A pump (or a connect that becomes one) of this process: counted for
 * the exit's wait; a forked child starts its own count. */
void sdp_pump_count(void)
{
	if (pump_pid != getpid()) {
		pump_pid = getpid();
		atomic_store(&pumps_alive, 0);
		atomic_store(&pumps_draining, 0);
	}
	atomic_fetch_add(&pumps_alive, 1);
}

int sdp_detached(void *(*fn)(void *), void *arg)
{
	pthread_attr_t a;
	pthread_t t;
	int ret;

	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	ret = pthread_create(&t, &a, fn, arg);
	pthread_attr_destroy(&a);
	return -ret;
}

int sdp_pump_start(struct sdp_qpc *q)
{
	int ret;

	sdp_pump_count();
	ret = sdp_detached(sdp_pump, q);
	if (ret)
		atomic_fetch_sub(&pumps_alive, 1);
	return ret;
}

/* a counted pump (or connect) that never ran */
void sdp_pump_uncount(void) { atomic_fetch_sub(&pumps_alive, 1); }
