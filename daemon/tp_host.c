/*
 * The daemon as the transport engine's host (transport/tp.h): the table of
 * host operations, filled here and nowhere else, and the daemon's side of
 * every call into the engine (sof_tp_*, sofd.h): its pollables (the
 * RoCEv2 sockets, the timer, the doorbells), QP and region life cycles,
 * multicast. The engine sees the daemon's objects through the handles
 * they embed (struct tp_qp in sofd_qp, tp_cq in sofd_cq, tp_srq in
 * sofd_srq).
 *
 * Registered memory: the daemon maps a region's memfd runs (handed over at
 * REG_MR or SHARE_MR) on first use, or reaches a region registered in
 * place through its owner's /proc/<pid>/mem (bounce, below); every access
 * is checked against the key, the QP's protection domain, the access flags
 * and the byte range (IBA 10.6.3 / 9.7.5.2.4); deregistration unmaps at
 * once (sof_tp_mr_release), and since the daemon has one thread no packet
 * is half-way through a region when it goes.
 */
#include "sofd.h"
#include "tp.h"

#include "sof_gid.h"

#include <errno.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <unistd.h>

static struct sofd_pollable p4 = {SOFD_POLL_NET, -1}, p6 = {SOFD_POLL_NET6, -1},
			    timer = {SOFD_POLL_TIMER, -1};

/* ---- the host operations ----------------------------------------------------- */

static void host_log(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));
static void host_log(const char *fmt, va_list ap)
{
	char buf[1024];

	vsnprintf(buf, sizeof(buf), fmt, ap);
	sofd_log("%s", buf);
}

static struct tp_qp *host_qp_find(uint32_t qpn)
{
	struct sofd_qp *qp = sof_hmap_get(&sofd.qps, qpn);

	return qp ? &qp->tq : NULL;
}

/* Map a region's memfd runs contiguously, so the byte at iova is base[0];
 * a region without local write is mapped read-only. */
static int mr_map(struct sofd_mr *mr)
{
	bool rw = mr->access & IBV_ACCESS_LOCAL_WRITE;
	size_t total = 0;
	uint8_t *p;

	for (uint32_t i = 0; i < mr->nruns; i++)
		total += mr->runs[i].length;
	p = mmap(NULL, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return -ENOMEM;
	mr->map = p;
	mr->map_len = total;
	for (uint32_t i = 0; i < mr->nruns; i++) {
		if (mmap(p, mr->runs[i].length, PROT_READ | (rw ? PROT_WRITE : 0),
			 MAP_SHARED | MAP_FIXED, mr->fds[i],
			 (off_t)mr->runs[i].offset) == MAP_FAILED) {
			munmap(mr->map, total);
			mr->map = NULL;
			return -ENOMEM;
		}
		p += mr->runs[i].length;
	}
	mr->map_rw = rw;
	mr->base = (uint8_t *)mr->map + mr->page_off;
	return 0;
}

void sof_tp_mr_release(struct sofd_mr *mr)
{
	/* queued packets may point into the mapping (tp_send_ref) */
	tp_tx_flush();
	if (mr->map)
		munmap(mr->map, mr->map_len);
	mr->map = NULL;
	mr->base = NULL;
}

/*
 * A region registered in place has no memfd to map (until SHARE_MR gives
 * it runs): the daemon reaches it through its owner's /proc/<pid>/mem
 * (the connection's pmem_fd), with copies in a bounce ring, counted in the
 * owner's fence as the executors' copies are (the wait for a move in
 * progress is bounded: the fence page is the owner's to write). What is
 * read is copied in at mr_ptr; the copy stays until the ring comes round
 * again, which is after the packets that refer to it were sent (at most
 * TX_BATCH of at most one MTU each are queued: the ring holds many times
 * that). What is written goes to the owner at mr_done. An atomic is a
 * read and a write under the fence's alock, which the executors of the
 * owner's peers take too; the owner's own CPU atomics do not.
 */
#define BOUNCE_LEN (8u << 20)
#define BOUNCE_MAX (256u << 10)

static struct {
	uint8_t *ring;
	size_t pos;
	/* the last view handed out for a write: where it goes */
	uint8_t *wp;
	uint64_t wlen, waddr;
	int wfd;
	struct sof_mem_fence *wfence;
	struct sof_mem_fence *alocked; /* an atomic's alock held until mr_done */
} bnc = {.wfd = -1};

/* The fence's alock for an atomic's read and write (bounded: the owner's
 * page), released by mr_done. */
static void alock_take(struct sof_mem_fence *f)
{
	for (int tries = 0; tries < 2000; tries++) {
		uint32_t z = 0;

		if (atomic_compare_exchange_strong(&f->alock, &z, 1)) {
			bnc.alocked = f;
			return;
		}
		usleep(50);
	}
}

static void alock_drop(void)
{
	if (bnc.alocked)
		atomic_store(&bnc.alocked->alock, 0);
	bnc.alocked = NULL;
}

/* Count a copy into the owner's memory in its fence (common/sof_shm.h);
 * the epoch slot to leave. */
static int fence_enter(struct sof_mem_fence *f)
{
	for (int tries = 0;; tries++) {
		int e = (int)(atomic_load(&f->epoch) & 1);

		atomic_fetch_add(&f->cnt[e], 1);
		if (!atomic_load(&f->moving) || tries >= 2000)
			return e;
		atomic_fetch_sub(&f->cnt[e], 1);
		usleep(50); /* a move in progress: at most 100 ms */
	}
}

static void fence_leave(struct sof_mem_fence *f, int e)
{
	uint32_t v = atomic_load(&f->cnt[e]);

	while (v && !atomic_compare_exchange_weak(&f->cnt[e], &v, v - 1))
		;
}

static uint8_t *bounce(const struct sofd_mr *mr, uint64_t addr, uint64_t len, uint32_t need)
{
	struct sofd_conn *o = mr->mem;
	uint8_t *b;
	ssize_t n;
	int e;

	if (len > BOUNCE_MAX)
		return NULL; /* more than a packet's: not asked for */
	if (!bnc.ring) {
		void *p = mmap(NULL, BOUNCE_LEN, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			return NULL;
		bnc.ring = p;
	}
	/* the same offset in a cache line as the address: an atomic's
	 * alignment check sees what it would see in a mapping */
	bnc.pos = (bnc.pos + 63) & ~(size_t)63;
	if (bnc.pos + 64 + len > BOUNCE_LEN)
		bnc.pos = 0;
	b = bnc.ring + bnc.pos + (addr & 63);
	bnc.pos += (addr & 63) + len;
	if (need & (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) {
		bnc.wp = b;
		bnc.wlen = len;
		bnc.waddr = addr;
		bnc.wfd = o->pmem_fd;
		bnc.wfence = o->fence;
		if (!(need & IBV_ACCESS_REMOTE_ATOMIC))
			return b; /* written whole by the engine */
		alock_take(o->fence);
	}
	e = fence_enter(o->fence);
	n = pread(o->pmem_fd, b, len, (off_t)addr);
	fence_leave(o->fence, e);
	if (n == (ssize_t)len)
		return b;
	alock_drop(); /* the owner is gone or unmapped the pages */
	return NULL;
}

/* tp_host_ops.mr_done */
static void host_mr_done(const struct tp_qp *tq, uint8_t *p, uint64_t written)
{
	int e;

	(void)tq;
	if (!written || bnc.wfd < 0 || p < bnc.wp || p + written > bnc.wp + bnc.wlen) {
		alock_drop();
		return; /* a mapping's pointer: written in place */
	}
	e = fence_enter(bnc.wfence);
	/* a short write: the owner went meanwhile, nobody is left to tell */
	if (pwrite(bnc.wfd, p, written, (off_t)(bnc.waddr + (uint64_t)(p - bnc.wp)))) {
	}
	fence_leave(bnc.wfence, e);
	alock_drop();
	bnc.wfd = -1;
}

/* tp_host_ops.mr_ptr: the region's daemon mapping, made on first use (or
 * a copy of a region in place); a window's key reaches its region through
 * sofd_key_resolve (ops_mw.c). */
static uint8_t *host_mr_ptr(const struct tp_qp *tq, uint32_t key, uint64_t va, uint64_t len,
			    uint32_t need)
{
	const struct sofd_qp *qp = sof_container_of(tq, struct sofd_qp, tq);
	/* an XRC TGT QP has no PD: its request's SRQ has (XRC annex) */
	const struct sofd_pd *pd = qp->xrc_cur ? qp->xrc_cur->pd : qp->pd;
	bool probe = need & TP_MR_PROBE;
	struct sofd_key_view v;
	struct sofd_mr *mr;
	uint64_t addr;
	bool local;

	need &= ~TP_MR_PROBE;
	/* an lkey (local access of a WQE) is a region's, never a window's */
	local = !(need &
		  (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC));
	if (!pd || sofd_key_resolve(key, local, &v) || v.pd != pd || (v.access & need) != need)
		return NULL;
	if (v.qpn && v.qpn != qp->qpn)
		return NULL;
	if (va < v.iova || len > v.length || va - v.iova > v.length - len)
		return NULL;
	mr = v.mr;
	/* the byte's address in the process of mr->mem */
	addr = mr->addr + v.off + (va - v.iova);
	/* only the checks (the takeover tells a key the owner would fail
	 * from a region this view cannot reach by it) */
	if (probe)
		return (uint8_t *)(uintptr_t)addr; /* not used */
	if (!mr->nruns && mr->inplace)
		return mr->mem->pmem_fd < 0 ? NULL : bounce(mr, addr, len, need);
	if (!mr->map && mr_map(mr))
		return NULL;
	/* writes need a writable mapping (remote write implies local write) */
	if ((need &
	     (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !mr->map_rw)
		return NULL;
	return mr->base + v.off + (va - v.iova);
}

static const struct sof_gid_entry *host_gid(uint32_t index)
{
	if (index >= sofd.dev.num_gids || index >= SOF_MAX_GIDS ||
	    sof_gid_empty(&sofd.dev.gids[index]))
		return NULL;
	return &sofd.dev.gids[index];
}

static uint32_t host_active_mtu(void) { return sofd.dev.active_mtu; }

static void host_cq_kick(struct tp_cq *cq) { sofd_evfd_kick(cq->evfd); }

static void host_qp_error(struct tp_qp *tq, uint32_t event)
{
	struct sofd_qp *qp = sof_container_of(tq, struct sofd_qp, tq);

	qp->state = IBV_QPS_ERR;
	if (event)
		sofd_async_send(qp->owner, event, qp->qpn);
}

static void host_srq_limit(struct tp_srq *ts)
{
	struct sofd_srq *srq = sof_container_of(ts, struct sofd_srq, tsrq);

	sofd_async_send(srq->owner, IBV_EVENT_SRQ_LIMIT_REACHED, srq->handle);
}

/* A request for a steered QP, read from its owner's slot while the owner
 * does not run (steer.c, transport/takeover.c): only from the QP's peer,
 * and only while the daemon reads that slot for it. */
static struct sof_resp_shm *host_takeover(const struct tp_qp *tq, const uint8_t src[16],
					  uint32_t *dqpn)
{
	const struct sofd_qp *qp = sof_container_of(tq, struct sofd_qp, tq);

	if (!sof_tp_steer_taking(qp) || memcmp(src, qp->dgid, 16))
		return NULL;
	*dqpn = qp->dest_qpn & 0xffffff;
	return &qp->shm->resp;
}

/* tp_host_ops.xrc_srq: the SRQ an XRC request names, of the TGT QP's
 * domain (ops_xrc.c), serves it */
static bool host_xrc_srq(struct tp_qp *tq, uint32_t srqn)
{
	struct sofd_qp *qp = sof_container_of(tq, struct sofd_qp, tq);
	struct sofd_srq *srq = sofd_xrc_srq_find(qp, srqn);

	if (!srq)
		return false;
	qp->xrc_cur = srq;
	tq->srq = &srq->tsrq;
	tq->recv_cq = &srq->cq->tcq;
	return true;
}

static int host_mw_invalidate(const struct tp_qp *tq, uint32_t rkey)
{
	return sofd_mw_invalidate(sof_container_of(tq, struct sofd_qp, tq), rkey, true);
}

static int host_raw_xmit(const struct tp_qp *tq, const uint8_t *frame, uint32_t len)
{
	(void)tq;
	return sofd_raw_xmit(frame, len);
}

static const struct tp_host_ops host_ops = {
    .log = host_log,
    .qp_find = host_qp_find,
    .mr_ptr = host_mr_ptr,
    .mr_done = host_mr_done,
    .gid = host_gid,
    .gid_local = sofd_gid_local,
    .active_mtu = host_active_mtu,
    .cq_kick = host_cq_kick,
    .qp_error = host_qp_error,
    .srq_limit = host_srq_limit,
    .xrc_srq = host_xrc_srq,
    .mw_invalidate = host_mw_invalidate,
    .flow_seen = NULL, /* the daemon's sockets are the group's, not a flow's */
    .raw_xmit = host_raw_xmit,
    .takeover = host_takeover,
    .keep = sof_tp_steer_keep,
};

/* ---- start and the loop ---------------------------------------------------------- */

static int epoll_in(int epfd, struct sofd_pollable *p)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = p};

	if (p->fd < 0)
		return 0;
	return epoll_ctl(epfd, EPOLL_CTL_ADD, p->fd, &ev) ? -errno : 0;
}

int sofd_tp_start(int fd4, int fd6, bool wire)
{
	int err = wire ? tp_start(&host_ops, fd4, fd6, sofd.counters, sofd.drops)
		       : tp_start_unplugged(&host_ops, sofd.counters, sofd.drops);

	p4.fd = fd4;
	p6.fd = fd6;
	timer.fd = tp_timer_fd();
	/* datagrams to a group go to the QPs attached to it (mcast.c) */
	tp_recv_hook(TP_HOOK_MCAST, tp_mcast_input);
	return err;
}

int sof_tp_init(int epfd)
{
	int fd4 = tp_udp_socket(false, ROCE_UDP_PORT, true);
	int fd6 = tp_udp_socket(true, ROCE_UDP_PORT, true);
	int err;

	if (fd4 < 0)
		sofd_log("RoCEv2 over IPv4 unavailable: port %u: %s", ROCE_UDP_PORT,
			 strerror(-fd4));
	if (fd6 < 0 && fd6 != -EAFNOSUPPORT)
		sofd_log("RoCEv2 over IPv6 unavailable: port %u: %s", ROCE_UDP_PORT,
			 strerror(-fd6));
	fd4 = fd4 < 0 ? -1 : fd4;
	fd6 = fd6 < 0 ? -1 : fd6;
	err = sofd_tp_start(fd4, fd6, true);
	if (!err)
		err = sofd_steer_init(fd4, fd6);
	if (!err)
		err = epoll_in(epfd, &timer);
	if (!err)
		err = epoll_in(epfd, &p4);
	if (!err)
		err = epoll_in(epfd, &p6);
	return err;
}

/* A connection's doorbell: only its QPs can have new WQEs (each context
 * rings its own); sofd.doorbell stands for every connection's at once. */
static void doorbell(struct sofd_pollable *p)
{
	struct sof_link *l, *next;

	if (p != &sofd.doorbell) {
		struct sofd_doorbell *db = sof_container_of(p, struct sofd_doorbell, p);

		if (!db->c) /* closed earlier in this batch */
			return;
		for (l = db->c->qps.next; l != &db->c->qps; l = next) {
			struct sofd_qp *qp = sof_container_of(l, struct sofd_qp, link);

			next = l->next;
			tp_qp_doorbell(&qp->tq);
		}
		return;
	}
	tp_doorbell_all();
}

void sof_tp_event(struct sofd_pollable *p)
{
	switch (p->kind) {
	case SOFD_POLL_NET:
	case SOFD_POLL_NET6:
		tp_rx(p->fd, p->kind == SOFD_POLL_NET6, NULL);
		break;
	case SOFD_POLL_TIMER:
		if (sof_tp_steer_is_tick(p))
			sof_tp_steer_tick();
		else
			tp_timer_fired();
		break;
	case SOFD_POLL_DOORBELL:
		doorbell(p);
		break;
	default:
		break;
	}
	tp_timer_update();
	tp_tx_flush();
}

/* Before the daemon waits: the timer armed for the earliest deadline and
 * the queued packets out. Not only sof_tp_event reaches the engine: the
 * InfiniBand port's receive (tp_ib_rx, daemon/ib.c) and requests on a
 * connection (MODIFY_QP to RTS sends what was posted before) run the
 * requester and completer too, and a deadline they set (a retransmission
 * timeout, a probe, the end of an RNR wait) was never armed when the
 * timer was idle: a lost packet, or an RNR NAK, then waited for an
 * unrelated event (the next doorbell) that a ping-pong never sends. */
void sof_tp_flush(void)
{
	tp_timer_update();
	tp_tx_flush();
}

/* ---- QPs ------------------------------------------------------------------------ */

void sof_tp_qp_init(struct sofd_qp *qp)
{
	qp->tq = (struct tp_qp){.qpn = qp->qpn,
				.type = qp->type,
				.shm = qp->shm,
				.rq_size = qp->rq_size,
				.rq_max_sge = qp->rq_max_sge,
				.nsq = qp->nsq,
				.sq_size = qp->sq_size,
				.sq_max_sge = qp->sq_max_sge,
				.sq_max_inline = qp->sq_max_inline,
				.sq_stride = qp->sq_stride,
				/* an XRC TGT QP has none: its requests
				 * name an SRQ with its CQ (host_xrc_srq) */
				.send_cq = qp->send_cq ? &qp->send_cq->tcq : NULL,
				.recv_cq = qp->recv_cq ? &qp->recv_cq->tcq : NULL,
				.srq = qp->srq ? &qp->srq->tsrq : NULL};
}

/* Read a socket until a read finds it empty: tp_rx reads a batch whose
 * size follows what the previous reads found (at most RX_BATCH times 32),
 * so one call may leave datagrams queued. Bounded (a flood that keeps
 * coming waits for the loop's next turn). */
static void rx_drain(const struct sofd_pollable *p)
{
	for (int i = 0; p->fd >= 0 && i < 64; i++)
		if (tp_rx(p->fd, p->kind == SOFD_POLL_NET6, NULL) <= 0)
			break;
}

int sof_tp_modify_qp(struct sofd_qp *qp, const struct sof_modify_qp_req *req, bool *net)
{
	int err;

	/* to ERROR (rdma_disconnect, a DREQ taken): what already reached the
	 * host is taken first, as an HCA takes packets when they come, so an
	 * ACK that came before the request completes its send with success
	 * rather than a flush. The request may come before the sockets'
	 * turn in the loop, or after a read that left datagrams queued
	 * (tp_rx reads by batches): the daemon reads them now. */
	if (qp->tq.t && (req->attr_mask & IBV_QP_STATE) && req->state == IBV_QPS_ERR) {
		rx_drain(&p4);
		rx_drain(&p6);
		sofd_ib_rx_now();
	}
	err = tp_qp_modify(&qp->tq, req, net);

	if (!err)
		qp->net = *net;
	return err;
}

void sof_tp_qp_release(struct sofd_qp *qp)
{
	if (!qp->tq.t)
		return;
	tp_qp_destroy(&qp->tq);
	qp->net = false;
}

/* ---- multicast (transport/mcast.c) ------------------------------------------------ */

int sof_tp_mcast_attach(struct sofd_qp *qp, const uint8_t mgid[16])
{
	return tp_mcast_attach(&qp->tq, mgid);
}

int sof_tp_mcast_detach(struct sofd_qp *qp, const uint8_t mgid[16])
{
	return tp_mcast_detach(&qp->tq, mgid);
}

void sof_tp_mcast_qp_release(struct sofd_qp *qp) { tp_mcast_qp_release(&qp->tq); }

int sof_tp_mcast_loop(struct sofd_qp *qp, const struct sof_mcast_loop_req *req)
{
	uint32_t imm = req->imm_be;

	return tp_mcast_loop(&qp->tq, req->sgid, req->mgid, req->qkey,
			     (req->flags & SOF_MCAST_LOOP_IMM) ? &imm : NULL,
			     (req->flags & SOF_MCAST_LOOP_SE) != 0, req->data, req->len);
}

void sof_tp_mcast_refresh(void) { tp_mcast_refresh(); }
