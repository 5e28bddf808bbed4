/*
 * The RoCEv2 transport of this process's own RC/UC QPs, run here instead
 * of in the daemon: the engine in the program (transport/README.md).
 *
 * Between hosts, a message through the daemon wakes the daemon of each
 * host, and on a small machine a cross-process wake-up costs more than
 * the whole UDP round trip. So a process (unless SOFTOFED_ENGINE=daemon
 * is in its environment) takes a steering slot from the daemon
 * (NET_ENGINE) when it creates its first RC/UC QP: receive sockets on port
 * 4791 to which the kernel steers the packets of the slot's QPNs, and
 * every RC/UC QP it creates from then on has a QPN of the slot. The
 * transport engine (transport/, the same as the daemon's) runs here on
 * the QP's own shared segments: the network send queue, the receive ring
 * or SRQ, the CQ rings. This file is its host in the program: it fills
 * the engine's host operations (transport/tp.h): the QPs as the engine
 * sees them (struct tp_qp, by QPN), the registered regions (the process's
 * own memory, checked against the context's MR table), the GID table, the
 * events; and it runs the loop.
 *
 * Who runs it: a thread that posts runs the requester at once; a thread
 * that polls a CQ of such a QP reads the sockets (busy polling: no wake-up
 * on the path); and a progress thread sleeps on the sockets and the timer
 * for when nobody polls. While some thread polls, the progress thread
 * leaves the sockets alone (a packet would wake it for nothing), keeps the
 * timers and looks every 0.2 ms whether the polls stopped, reading what
 * the polls left (every 20 us for a while when they left some: a program
 * that waits elsewhere between its polls; one-sided mode has its own
 * rules, tp_wake.c); a thread that goes to sleep in
 * ibv_get_cq_event hands the sockets to it at once, and so does arming a
 * CQ: the program may sleep in poll(2) on the channel's fd, where we do
 * not see it, so for ARM_WATCH_NS after that the progress thread keeps
 * watching the sockets though polls go on (the busy-poll path arms no
 * CQ). When it reads them
 * alone, it goes on reading them for 50 us after the last packet before it
 * sleeps on them (one-sided requests: tp_wake.c). One mutex serialises the engine.
 *
 * The RC/UC QPs of sofib0, the InfiniBand device, run here the same way
 * when the context that took the slot is sofib0's: the slot then has a
 * member of the InfiniBand link socket's group, on which the port's packet
 * half runs (transport/iblink.c, tp_ib_attach; tp_slot.c).
 *
 * UD QPs run here too (unless SOFTOFED_ENGINE_UD=daemon): their unicast
 * comes here; what comes to a group they are attached to goes to the
 * daemon, and what they send to a group goes to the daemon too, for this
 * host's members (MCAST_LOOP, tp_slot.c). Their CQs' polls read the
 * sockets once they sent to the network (before, the progress thread
 * watches them): a UD ping-pong on one host pays no read per poll.
 *
 * What stays with the daemon: the delivery of multicast, QP1, the QPs of a
 * second context open beside the one that has the slot (a context opened
 * after it closed takes a slot anew: tp_slot.c), and those of processes
 * of other users (a member of the steering group could change the group's
 * program: ops.c gives slots only to the daemon's own user). The engine
 * counts into a page of the slot that the daemon adds to its own counters
 * (`softofed status`). The slot and the flow sockets are in tp_slot.c,
 * the state both files share in tp_eng.h. An RC QP's responder state is
 * shared with the daemon, which runs it while this process does not
 * (transport/takeover.c; every modify voids it until the next request).
 */
#include "tp_eng.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

/* A QP whose transport runs here, as the engine sees it (transport/tp.h). */
struct sofv_eqp {
	struct tp_qp m;
	struct tp_cq scq, rcq;
	struct sofv_qp *qp;
	bool polled;	      /* counted in its CQs' eng_qps: its peer is on another host, or a
			       * UD QP of sofib0 or one that sent to the network */
	struct sof_link pend; /* in eng.pending: WQEs posted while packets flew */
	uint32_t post_epsn;   /* the responder's expected PSN at the last post */
};

/* While some thread polls, it reads the sockets itself and the progress
 * thread looks again after POLL_HOLD_NS, then after twice as long each
 * time it finds the polls going on, up to POLL_HOLD_MAX_NS: the longest
 * an ACK a poller held waits once the polls stop (a request to the CM or
 * arming a CQ sends them at once), and a wake-up of the progress thread,
 * on the poller's CPU when the program is pinned, costs a poll of a
 * ping-pong a few microseconds. */
#define POLL_HOLD_NS 200000L
#define POLL_HOLD_MAX_NS 1600000L
/* A thread that polls a CQ now and then but waits elsewhere in between
 * leaves packets unread while it waits: when the progress thread finds
 * some at the end of a hold, the polls do not read them all, and it looks
 * again after POLL_STUCK_NS, POLL_STUCK_CHECKS times since it last found
 * some. Not in one-sided mode, whose targets wait on memory
 * (ib_write_lat): the handoff and the looks of tp_wake.c serve them. */
#define POLL_STUCK_NS 20000L
#define POLL_STUCK_CHECKS 64
/* ... and only when the polls had left the sockets this long: a poller
 * that a look finds a few tens of microseconds behind was off its CPU for
 * a moment (for this thread's own look, when the two share a CPU), and
 * looks every POLL_STUCK_NS would keep preempting it to do its reads
 * (fi_pingpong verbs;ofi_rxm pinned: 17.5 -> 6.7 us per transfer). */
#define POLL_STUCK_GAP_NS 100000L
/* A poll this recent means a thread of the program runs a loop of its own
 * beside the progress thread (progress). */
#define POLL_LATELY_NS POLL_HOLD_MAX_NS

/* How long after a CQ was armed the progress thread keeps the sockets
 * whether or not some thread polls: past it, a thread still asleep on the
 * channel polls no more, and the holds above hand it the sockets. */
#define ARM_WATCH_NS (2 * POLL_HOLD_MAX_NS)
/* ibv_get_cq_event calls in a row that found their event there at once
 * before arming a CQ counts as a sleeper outside our calls. */
#define OUTSIDE_RUN 16u

/* The most polls that an ACK waits for the poller's next post. */
#define ACK_HOLD_POLLS 32u

struct sofv_eng eng = {.lock = PTHREAD_MUTEX_INITIALIZER,
		       .pending = {&eng.pending, &eng.pending},
		       .epfd = -1,
		       .fd4 = -1,
		       .fd6 = -1,
		       .fdib = -1,
		       .timer_fd = -1,
		       .stopfd = -1,
		       .kickfd = -1,
		       .revokefd = -1,
		       .watching = true,
		       .outside = true};

/* Whether a CQ was armed lately (a sleeper on its channel may need us). */
static bool arm_watch(void)
{
	uint64_t t = atomic_load(&eng.arm_ns);

	return t && sof_now_ns() - t < (uint64_t)ARM_WATCH_NS;
}

/* ---- the host operations (transport/tp.h) ---------------------------------- */

static void prog_log(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));
static void prog_log(const char *fmt, va_list ap)
{
	fputs("softofed: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void eng_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	prog_log(fmt, ap);
	va_end(ap);
}

static struct tp_qp *prog_qp_find(uint32_t qpn) { return sof_hmap_get(&eng.qps, qpn); }

static const struct sof_gid_entry *prog_gid(uint32_t index)
{
	if (index >= eng.num_gids || sof_gid_empty(&eng.gids[index]))
		return NULL;
	return &eng.gids[index];
}

static bool prog_gid_local(const uint8_t gid[16]) { return sofv_gid_is_local(eng.ctx, gid); }

static uint32_t prog_active_mtu(void) { return eng.ctx->dev.active_mtu; }

/* The channel's eventfd is this process's own: a plain write. The thread
 * it wakes may share the progress thread's CPU (tp_wake.c). The arm it
 * fires was a sleeper's, maybe in poll(2) on the fd (eng.outside): that
 * thread reads the CQ and arms it again, and the progress thread goes on
 * watching the sockets until then as it did since the arm. Timed from
 * the arm alone, the watch ran out between a ping's echoes: each reply
 * read then made it let the sockets go (the read CQ's poll left a stale
 * mark of a poller), and the arm that followed kicked it to take them
 * back: four epoll_ctl calls each way and a wake-up, whose engine lock
 * held up the post of the echo (traced, issue 21). */
static void prog_cq_kick(struct tp_cq *cq)
{
	uint64_t one = 1;

	sofv_wake_kicked();
	if (atomic_load_explicit(&eng.outside, memory_order_relaxed))
		atomic_store(&eng.arm_ns, sof_now_ns());
	if (write(cq->evfd, &one, sizeof(one)) < 0) {
		/* the counter is full: the waiter has events to read */
	}
}

/* Through the daemon, which raises it on this context's event socket as
 * for any other owner. */
static void notify(uint32_t event_type, uint32_t handle)
{
	uint32_t kind;

	switch (event_type) {
	case IBV_EVENT_QP_FATAL:
		kind = SOF_NOTIFY_QP_FATAL;
		break;
	case IBV_EVENT_QP_REQ_ERR:
		kind = SOF_NOTIFY_QP_REQ_ERR;
		break;
	case IBV_EVENT_QP_ACCESS_ERR:
		kind = SOF_NOTIFY_QP_ACCESS_ERR;
		break;
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		kind = SOF_NOTIFY_SRQ_LIMIT;
		break;
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		kind = SOF_NOTIFY_QP_LAST_WQE;
		break;
	default:
		return;
	}
	(void)sofv_notify(eng.ctx, kind, handle);
}

static void prog_qp_error(struct tp_qp *qp, uint32_t event)
{
	if (event)
		notify(event, qp->qpn);
}

static void prog_srq_limit(struct tp_srq *srq) { notify(IBV_EVENT_SRQ_LIMIT_REACHED, srq->handle); }

/* The region with key, checked as the daemon checks it (daemon/tp_host.c):
 * the QP's PD, the access bits in need, the range. The process's own
 * memory: the pointer is the region's address. The caller holds the
 * engine lock, which ibv_dereg_mr and ibv_rereg_mr take too to take a
 * region out (sofv_engine_lock, mr_unpublish): a region found here stays
 * while ctx->mr_gen stays, so the last ones found are kept, by key, and
 * taken again without the context's lock and map (two atomic
 * read-modify-writes and a look-up for each packet). */
static uint8_t *prog_mr_ptr(const struct tp_qp *m, uint32_t key, uint64_t va, uint64_t len,
			    uint32_t need)
{
	const struct sofv_eqp *e = sof_container_of(m, struct sofv_eqp, m);
	struct sofv_context *s = eng.ctx;
	uint64_t gen = atomic_load_explicit(&s->mr_gen, memory_order_acquire);
	unsigned slot = key % MR_CACHE;
	struct sofv_mr *mr;

	need &= ~TP_MR_PROBE; /* the pointer is the process's own: a check is a look-up */
	if (eng.mrs[slot].gen == gen && eng.mrs[slot].key == key) {
		mr = eng.mrs[slot].mr;
	} else {
		pthread_rwlock_rdlock(&s->obj_lock);
		mr = sof_hmap_get(&s->mrs, key);
		if (!mr) { /* a window of this process (mw.c), never cached */
			uint8_t *p = sofv_mw_ptr(s, e->qp, key, va, len, need);

			pthread_rwlock_unlock(&s->obj_lock);
			return p;
		}
		pthread_rwlock_unlock(&s->obj_lock);
		eng.mrs[slot].key = key;
		eng.mrs[slot].gen = gen;
		eng.mrs[slot].mr = mr;
	}
	if (mr->pd == e->qp->pd && (mr->access & need) == need && va >= mr->iova &&
	    len <= mr->ibmr.length && va - mr->iova <= mr->ibmr.length - len)
		return (uint8_t *)mr->ibmr.addr + (va - mr->iova);
	return NULL;
}

/* The process's own memory: written in place, nothing to do. */
static void prog_mr_done(const struct tp_qp *m, uint8_t *p, uint64_t written)
{
	(void)m;
	(void)p;
	(void)written;
}

/* XRC QPs run in the daemon's engine, never here */
static bool prog_xrc_srq(struct tp_qp *qp, uint32_t srqn)
{
	(void)qp;
	(void)srqn;
	return false;
}

/* Through the daemon, which holds the windows (verbs/mw.c); the engine
 * lock may be held: an RPC takes no engine lock. */
static int prog_mw_invalidate(const struct tp_qp *m, uint32_t rkey)
{
	return sofv_mw_inv(eng.ctx, m->qpn, rkey, true);
}

static const struct tp_host_ops prog_ops = {
    .log = prog_log,
    .qp_find = prog_qp_find,
    .mr_ptr = prog_mr_ptr,
    .mr_done = prog_mr_done,
    .gid = prog_gid,
    .gid_local = prog_gid_local,
    .active_mtu = prog_active_mtu,
    .cq_kick = prog_cq_kick,
    .qp_error = prog_qp_error,
    .srq_limit = prog_srq_limit,
    .xrc_srq = prog_xrc_srq,
    .mw_invalidate = prog_mw_invalidate,
    .flow_seen = eng_flow_seen,
    .raw_xmit = NULL, /* raw packet QPs are the daemon's */
};

/* ---- the loop ----------------------------------------------------------------- */

static void gids_refresh(void)
{
	struct sof_gid_entry g;

	eng.num_gids = 0;
	for (uint32_t i = 0; i < SOF_MAX_GIDS; i++) {
		int err = sofv_gid_read(eng.ctx, i, &g);

		if (err == -EINVAL)
			break;
		if (err)
			memset(&g, 0, sizeof(g));
		eng.gids[i] = g;
		eng.num_gids = i + 1;
	}
}

/* Send the ACKs that are due now. */
static void acks_send(void)
{
	tp_input_end();
	atomic_store_explicit(&eng.ack_hold, 0, memory_order_relaxed);
	sofv_wake_ack_sent();
}

/* Read the sockets. poller: the caller polls a CQ; the ACKs of what it
 * reads wait for its next post, so that in a ping-pong the ACK of a
 * request leaves in one system call with the answer (IBA 9.7.5.1.1 lets a
 * responder coalesce ACKs). The hold is bounded: it ends after
 * ACK_HOLD_POLLS polls or sofv_wake_ack_due's time, whichever comes first
 * (the progress thread sends them when the polls stop; a request to the
 * CM or arming a CQ sends them at once: sofv_engine_flush). A hold that
 * outlives the exchange it was for only keeps the peer waiting for its
 * ACK: on a loaded machine, past its tail-loss probe and up to its
 * transport timeout. (Not at the first poll that reads nothing: an answer
 * and the ACK the peer sent with it may come in two reads, and the ACK
 * held then lets the peer's poll take the next request.) The clock is
 * read once, before the sockets, for every deadline of the pass (the
 * ACK hold's, one-sided mode's, the transport timer's: one that passes
 * while the sockets are read is met by the next pass); the time is
 * returned. Under the lock. */
static uint64_t rx_run(bool poller, bool hold_acks)
{
	uint32_t hold = atomic_load_explicit(&eng.ack_hold, memory_order_relaxed);
	uint64_t now = sof_now_ns(); /* the one clock read of the pass */
	uint64_t got = tp_counter(SOF_CNT_rx_packets), reqs = tp_requests(), one = 1, polled;
	bool resp, loop;

	if (!hold_acks || hold == 1 || sofv_wake_ack_due(now))
		acks_send();
	else if (hold)
		atomic_store_explicit(&eng.ack_hold, hold - 1, memory_order_relaxed);
	tp_defer_acks(hold_acks);
	eng_rx_sockets(poller);
	tp_defer_acks(false);
	/* a poller read responses and no request: hand the sockets over */
	resp = poller && tp_counter(SOF_CNT_rx_packets) != got && tp_requests() == reqs;
	/* the progress thread's hold, beside a thread with a loop of its own */
	polled = atomic_load_explicit(&eng.poll_read_ns, memory_order_relaxed);
	loop = !poller && (int64_t)(now - polled) < POLL_LATELY_NS;
	if (sofv_wake_rx(now, hold_acks && tp_acks_due(), resp, loop) &&
	    !atomic_load(&eng.watching) && write(eng.kickfd, &one, sizeof(one)) < 0) {
		/* the counter is full: it is awake anyway */
	}
	if (hold_acks && !atomic_load_explicit(&eng.ack_hold, memory_order_relaxed) && tp_acks_due())
		atomic_store_explicit(&eng.ack_hold, ACK_HOLD_POLLS, memory_order_relaxed);
	while (!sof_list_empty(&eng.pending)) {
		struct sofv_eqp *e = sof_container_of(eng.pending.next, struct sofv_eqp, pend);

		sof_list_del(&e->pend);
		tp_qp_progress(&e->m);
	}
	/* after the sockets: an ACK that came while the poller was off its
	 * CPU ends its deadline first (as in the progress thread) */
	sofv_wake_timer_poll(now);
	tp_timer_update();
	tp_tx_flush();
	return now;
}

/* rx_run by the progress thread (hold_acks: in one-sided mode, tp_wake.c);
 * whether it read any packet. Under the lock. */
static bool rx_read_some(bool hold_acks)
{
	uint64_t got = tp_counter(SOF_CNT_rx_packets);

	rx_run(false, hold_acks);
	return tp_counter(SOF_CNT_rx_packets) != got;
}

/* A receive socket into the progress thread's epoll set (on), or out of
 * it. Out, not only silenced: a socket in a set runs the set's callback
 * under the set's lock for every datagram it receives, in the softirq of
 * the peer's send (RoCEv2 over veth: ~250 cycles, 0.11 us, of
 * ib_send_lat's sendmsg); back in, level-triggered, so what came
 * meanwhile is seen at once. */
static void socket_watch(int fd, void *ptr, bool on)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = ptr};

	if (fd < 0)
		return;
	if (!on)
		(void)epoll_ctl(eng.epfd, EPOLL_CTL_DEL, fd, NULL);
	else if (epoll_ctl(eng.epfd, EPOLL_CTL_ADD, fd, &ev) && errno == EEXIST)
		(void)epoll_ctl(eng.epfd, EPOLL_CTL_MOD, fd, &ev);
}

/* The receive sockets in the progress thread's set while it watches them,
 * out of it while threads poll (socket_watch). Under the lock (a poller
 * may add a flow socket: eng_flow_seen adds it only when armed). */
static void sockets_arm(bool on)
{
	struct epoll_event ev = {.events = on ? EPOLLIN : 0};

	eng.armed = on;
	for (unsigned i = 0; i < eng.nflows; i++)
		socket_watch(eng.flows[i].fd, &eng.fd4, on);
	socket_watch(eng.fd4, &eng.fd4, on);
	socket_watch(eng.fd6, &eng.fd6, on);
	/* sofib0's link member is also the socket its packets leave by: in
	 * the set, every datagram it sent would run the callback too when
	 * the peer frees it (sock_wfree; ~0.5 us a message over veth) */
	socket_watch(eng.fdib, &eng.fdib, on);
	/* the timer with them: while threads poll, they run it (tp_wake.c) */
	ev.data.ptr = &eng.timer_fd;
	if (eng.timer_fd >= 0 && !epoll_ctl(eng.epfd, EPOLL_CTL_MOD, eng.timer_fd, &ev))
		sofv_wake_timer_watched(on);
}

/* The progress thread: the timers always, the sockets while no thread
 * polls. While it waits for the sockets alone, a thread that starts to
 * poll wakes it once (note_active), so that it stops reading them and
 * looks again after POLL_HOLD_NS .. POLL_HOLD_MAX_NS: the ACKs a poller
 * holds then leave when the polls stop, without a packet to wake it; while
 * the polls go on it takes no lock. (It sets sleeping, then
 * looks at polled; a poller sets polled, then looks at sleeping: one of
 * the two sees the other.) */
static void *progress(void *arg)
{
	struct timespec hold = {.tv_nsec = POLL_HOLD_NS}, zero = {0, 0}, wait;
	bool armed = true;
	unsigned stuck = 0;

	(void)arg;
	/* its holds are short: no 50 us of timer slack on them */
	(void)prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
	sofv_wake_thread_init();
	atomic_store(&eng.watching, true);
	for (;;) {
		bool polling = atomic_exchange(&eng.polled, false), spin, os, timed, want;
		bool fired = false, lately;
		struct epoll_event ev[5];
		uint64_t v, kicks;
		int n;

		os = polling && sofv_wake_onesided();
		want = !polling || arm_watch() || (os && sofv_wake_handed(sof_now_ns()));
		if (!want && armed) {
			/* watching, then arm_ns: sofv_engine_flush stores them
			 * the other way round, so one of the two sees the other */
			atomic_store(&eng.watching, false);
			if (arm_watch()) {
				atomic_store(&eng.watching, true);
				want = true;
			}
		}
		if (want != armed) {
			armed = want;
			atomic_store(&eng.watching, armed);
			pthread_mutex_lock(&eng.lock);
			sockets_arm(armed);
			pthread_mutex_unlock(&eng.lock);
			if (!armed) /* threads poll: it no longer answers alone */
				sofv_wake_alone(false);
			hold.tv_nsec = POLL_HOLD_NS;
		} else if (polling && stuck) {
			hold.tv_nsec = POLL_STUCK_NS;
			stuck--;
		} else if (polling && hold.tv_nsec < (os ? POLL_HOLD_NS : POLL_HOLD_MAX_NS)) {
			hold.tv_nsec =
			    hold.tv_nsec < POLL_HOLD_NS ? POLL_HOLD_NS : hold.tv_nsec * 2;
		}
		spin = armed && sofv_wake_spinning();
		if (armed && !spin && !os) {
			atomic_store(&eng.sleeping, true);
			if (atomic_load(&eng.polled) && !arm_watch()) {
				atomic_store(&eng.sleeping, false);
				continue;
			}
		}
		timed = sofv_wake_wait(&wait, &hold) || os;
		n = epoll_pwait2(eng.epfd, ev, 5, spin ? &zero : armed && !timed ? NULL : &wait, NULL);
		atomic_store_explicit(&eng.sleeping, false, memory_order_relaxed);
		if (n <= 0 && spin && !sofv_wake_ack_due(sof_now_ns())) {
			sofv_wake_spin_yield();
			continue;
		}
		/* the polls go on and nothing came: read what they left, if
		 * the lock is free (a poller holds it while it reads) and no
		 * poller read the sockets just now (it has them in hand: a
		 * packet found here would be one it was about to read, and
		 * the stuck looks that follow would preempt it, on a busy
		 * CPU, to take its next ones as well) */
		if (n <= 0 && !armed && atomic_load_explicit(&eng.polled, memory_order_relaxed)) {
			uint64_t gap = sof_now_ns() - atomic_load_explicit(&eng.poll_read_ns,
									   memory_order_relaxed);

			if (gap < (uint64_t)POLL_STUCK_NS)
				continue;
			if (pthread_mutex_trylock(&eng.lock))
				continue;
			if (eng.ctx && rx_read_some(os) && !os && gap >= (uint64_t)POLL_STUCK_GAP_NS)
				stuck = POLL_STUCK_CHECKS;
			pthread_mutex_unlock(&eng.lock);
			continue;
		}
		pthread_mutex_lock(&eng.lock);
		for (int i = 0; i < n; i++) {
			if (ev[i].data.ptr == &eng.stopfd) {
				pthread_mutex_unlock(&eng.lock);
				return NULL;
			}
			if (ev[i].data.ptr == &eng.kickfd && read(eng.kickfd, &v, sizeof(v)) < 0) {
				/* nothing to read: another kick took it */
			}
			if (ev[i].data.ptr == &eng.revokefd) {
				if (read(eng.revokefd, &v, sizeof(v)) < 0) {
					/* another read took it */
				}
				eng_flows_revoked();
			}
			if (ev[i].data.ptr == &eng.timer_fd)
				fired = true;
		}
		/* a thread that polled lately runs a loop of its own beside
		 * this one (a one-sided ping-pong's poll between its waits on
		 * memory): a spin gives way to it (tp_wake.c) */
		v = atomic_load_explicit(&eng.poll_read_ns, memory_order_relaxed);
		lately = sof_now_ns() - v < (uint64_t)POLL_LATELY_NS;
		/* answering alone, it stands for the HCA (tp_wake.c) */
		sofv_wake_alone(!lately);
		kicks = sofv_wake_kicks();
		if ((armed || !atomic_load_explicit(&eng.polled, memory_order_relaxed)) &&
		    rx_read_some(sofv_wake_onesided()) && armed && !os)
			sofv_wake_spin_start(lately || sofv_wake_kicks() != kicks);
		/* the deadlines after the sockets: a thread the machine kept
		 * off its CPU past a transport deadline finds the ACK that
		 * came meanwhile first, not a timeout and a go-back */
		if (fired) {
			tp_timer_fired();
			tp_timer_update();
			tp_tx_flush();
		}
		pthread_mutex_unlock(&eng.lock);
	}
}

SOFV_EXPORT void sofv_engine_idle(void)
{
	uint64_t one = 1;

	if (eng.kickfd < 0 || (!atomic_exchange(&eng.polled, false) && atomic_load(&eng.sleeping)))
		return; /* no engine, or its thread reads the sockets already */
	if (write(eng.kickfd, &one, sizeof(one)) < 0) {
		/* the counter is full: it is awake anyway */
	}
}

/* A thread polls or posts: the progress thread leaves the sockets to it. */
static void note_active(void)
{
	uint64_t one = 1;

	if (atomic_load_explicit(&eng.polled, memory_order_relaxed))
		return;
	atomic_store(&eng.polled, true);
	/* a CQ armed lately: it keeps the sockets anyway (no kick to wake it
	 * for nothing) */
	if (atomic_load(&eng.sleeping) && !arm_watch() &&
	    write(eng.kickfd, &one, sizeof(one)) < 0) {
		/* the counter is full: it is awake anyway */
	}
}

int eng_epoll_add(int fd, void *ptr)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = ptr};

	if (fd < 0)
		return 0;
	return epoll_ctl(eng.epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

/* A child of fork() has no progress thread, and the engine's lock may have
 * been held by another thread: the child's QPs use the daemon's engine. */
static void at_fork_child(void)
{
	while (eng.nflows)
		eng_flow_close(0, false);
	pthread_mutex_init(&eng.lock, NULL);
	eng.ctx = NULL;
	eng.tried = true;
}

/* A process that leaves without destroying its QPs still acknowledges
 * what its pollers read. */
static void at_exit(void)
{
	if (pthread_mutex_trylock(&eng.lock))
		return;
	if (eng.ctx)
		acks_send();
	pthread_mutex_unlock(&eng.lock);
}

/* The process turns from its data path (a request to the CM; arming a
 * CQ to sleep, maybe in poll(2) on the channel's fd): the ACKs a poller holds leave now, so that a peer waiting
 * for its send's completion does not wait for a post that may never come
 * (the progress thread would send them within POLL_HOLD_MAX_NS). */
SOFV_EXPORT void sofv_engine_flush(void)
{
	uint64_t one = 1;

	/* it may go to sleep outside our calls: the progress thread watches
	 * the sockets from now on (woken when it was not) */
	if (atomic_load_explicit(&eng.outside, memory_order_relaxed)) {
		atomic_store(&eng.arm_ns, sof_now_ns());
		if (eng.kickfd >= 0 && !atomic_load(&eng.watching) &&
		    write(eng.kickfd, &one, sizeof(one)) < 0) {
			/* the counter is full: it is awake anyway */
		}
	}
	if (!atomic_load_explicit(&eng.ack_hold, memory_order_relaxed))
		return;
	pthread_mutex_lock(&eng.lock);
	if (eng.ctx && eng.ack_hold) {
		acks_send();
		tp_tx_flush();
	}
	pthread_mutex_unlock(&eng.lock);
}

/* A program that waits inside ibv_get_cq_event reads the sockets while it
 * spins there and hands them over before it sleeps (sofv_engine_idle):
 * the progress thread need not watch them when it arms a CQ (it would
 * read the packets the waiter is spinning for). */
void sofv_engine_sleeps_outside(bool outside)
{
	unsigned run = atomic_load_explicit(&eng.outside_run, memory_order_relaxed);

	/* an event found at once may also be one that fired while the
	 * program polled the CQ after arming it: only a run of them counts */
	if (outside && run < OUTSIDE_RUN)
		atomic_store_explicit(&eng.outside_run, ++run, memory_order_relaxed);
	else if (!outside && run)
		atomic_store_explicit(&eng.outside_run, 0, memory_order_relaxed);
	outside = run >= OUTSIDE_RUN;
	if (atomic_load_explicit(&eng.outside, memory_order_relaxed) == outside)
		return;
	atomic_store_explicit(&eng.outside, outside, memory_order_relaxed);
	if (!outside)
		atomic_store(&eng.arm_ns, 0);
}

/* Take a slot and set the engine up; its thread starts with the first QP
 * whose peer is on another host (thread_start). An engine that ran for a
 * context closed since keeps its state (its QPs are gone: send sockets,
 * timer, epoll set) and runs on the new slot. The caller holds the lock. */
static int start(struct sofv_context *ctx)
{
	int err;

	err = eng_slot_take(ctx);
	if (err)
		return err;
	eng.ctx = ctx;
	gids_refresh();
	if (eng.started) {
		tp_replug(eng.fd4, eng.fd6, eng.cnt->counters, eng.cnt->drops);
	} else {
		err = tp_start(&prog_ops, eng.fd4, eng.fd6, eng.cnt->counters, eng.cnt->drops);
		eng.timer_fd = tp_timer_fd();
		if (!err) {
			eng.epfd = epoll_create1(EPOLL_CLOEXEC);
			eng.stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
			eng.kickfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
			if (eng.epfd < 0 || eng.stopfd < 0 || eng.kickfd < 0)
				err = -errno;
		}
		if (!err)
			err = eng_epoll_add(eng.timer_fd, &eng.timer_fd);
		if (!err)
			err = eng_epoll_add(eng.stopfd, &eng.stopfd);
		if (!err)
			err = eng_epoll_add(eng.kickfd, &eng.kickfd);
		if (!err) {
			eng.started = true;
			(void)atexit(at_exit);
			(void)pthread_atfork(NULL, NULL, at_fork_child);
		}
	}
	if (!err)
		err = eng_epoll_add(eng.fd4, &eng.fd4);
	if (!err)
		err = eng_epoll_add(eng.fd6, &eng.fd6);
	if (!err)
		err = eng_epoll_add(eng.fdib, &eng.fdib);
	if (!err)
		err = eng_epoll_add(eng.revokefd, &eng.revokefd);
	if (err) {
		/* the slot's QPNs stay; their QPs would have no transport */
		eng_log("the transport cannot run in this process: %s", strerror(-err));
		eng.ctx = NULL;
		return err;
	}
	eng.armed = true;
	return 0;
}

/* The progress thread, at the first QP of another host's peer: a process
 * whose QPs all stay on this host has none. The caller holds the lock. */
static int thread_start(void)
{
	int err;

	if (eng.running)
		return 0;
	err = pthread_create(&eng.thread, NULL, progress, NULL);
	if (err) {
		eng_log("the transport's thread: %s", strerror(err));
		return -err;
	}
	eng.running = true;
	return 0;
}

/* What the engine counts while no slot is its own (nothing should). */
static struct sof_tp_counters idle_counters;

bool sofv_engine_start(struct sofv_context *ctx)
{
	const char *e = getenv("SOFTOFED_ENGINE");
	bool mine;

	if (e && !strcmp(e, "daemon"))
		return false;
	pthread_mutex_lock(&eng.lock);
	if (!eng.tried) {
		eng.tried = true;
		(void)start(ctx);
	}
	/* sofib0's QPs: only on the port's packet half (tp_slot.c) */
	mine = eng.ctx == ctx && (!ctx->ib || eng.fdib >= 0);
	pthread_mutex_unlock(&eng.lock);
	return mine;
}

void sofv_engine_ctx_close(struct sofv_context *ctx)
{
	uint64_t one = 1;

	if (eng.ctx != ctx)
		return;
	if (eng.running &&
	    (write(eng.stopfd, &one, sizeof(one)) < 0 || pthread_join(eng.thread, NULL)))
		eng_log("the transport's thread does not stop");
	/* the stop is read, or the next context's thread would stop at once */
	if (eng.running && read(eng.stopfd, &one, sizeof(one)) < 0)
		eng_log("the transport's stop stays set");
	eng.running = false;
	pthread_mutex_lock(&eng.lock);
	acks_send();
	tp_tx_flush();
	if (eng.qps.count) {
		/* QPs it leaked stay known to the engine: no other context may
		 * take it (their QPNs would come to the next slot's QPs) */
		while (eng.nflows)
			eng_flow_close(0, false);
		eng.npeers = 0;
	} else {
		eng_slot_drop();
		tp_replug(-1, -1, idle_counters.counters, idle_counters.drops);
		eng.tried = false; /* the next context may take a slot */
	}
	memset(eng.mrs, 0, sizeof(eng.mrs));
	eng.ctx = NULL;
	pthread_mutex_unlock(&eng.lock);
}

/* ---- QPs ------------------------------------------------------------------------ */

int sofv_engine_qp_new(struct sofv_qp *qp)
{
	struct sofv_eqp *e;
	int err;

	if (!eng.ctx || eng.ctx != to_sctx(qp->qpx.qp_base.context))
		return -EPROTO;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	sof_list_init(&e->pend);
	e->qp = qp;
	e->m.qpn = qp->qpn;
	e->m.type = qp->qpx.qp_base.qp_type;
	e->m.rq_size = qp->rq_size;
	e->m.rq_max_sge = qp->srq ? 0 : qp->cap.max_recv_sge;
	e->m.shm = qp->shm;
	/* the daemon may run its responder while we do not (takeover.c) */
	e->m.rshm = e->m.type == IBV_QPT_RC || e->m.type == IBV_QPT_UC ? &qp->shm->resp : NULL;
	e->m.nsq = qp->nsq;
	e->m.sq_size = qp->sq_size;
	e->m.sq_max_sge = qp->cap.max_send_sge;
	e->m.sq_max_inline = qp->cap.max_inline_data;
	e->m.sq_stride = qp->nsq_stride;
	e->scq.shm = qp->scq->shm;
	e->scq.evfd = qp->scq->channel ? qp->scq->channel->ch.fd : -1;
	e->rcq.shm = qp->rcq->shm;
	e->rcq.evfd = qp->rcq->channel ? qp->rcq->channel->ch.fd : -1;
	e->m.send_cq = &e->scq;
	e->m.recv_cq = &e->rcq;
	if (qp->srq)
		e->m.srq = qp->srq->tsrq; /* srq.c keeps it current */
	pthread_mutex_lock(&eng.lock);
	acks_send(); /* the program moved on: what it read is acknowledged */
	err = sof_hmap_put(&eng.qps, qp->qpn, &e->m);
	tp_tx_flush();
	pthread_mutex_unlock(&eng.lock);
	if (err) {
		free(e);
		return err;
	}
	qp->eng = e;
	return 0;
}

/* Polls of qp's CQs run the engine while its peer is on another host. */
static void polled_by(struct sofv_qp *qp, bool on)
{
	struct sofv_eqp *e = qp->eng;

	if (e->polled == on)
		return;
	e->polled = on;
	atomic_fetch_add(&qp->scq->eng_qps, on ? 1u : (uint32_t)-1);
	atomic_fetch_add(&qp->rcq->eng_qps, on ? 1u : (uint32_t)-1);
}

bool sofv_engine_linger(struct sofv_qp *qp, struct sof_linger *l)
{
	bool ok;

	pthread_mutex_lock(&eng.lock);
	acks_send();
	tp_tx_flush();
	ok = tp_qp_linger_info(&qp->eng->m, l);
	pthread_mutex_unlock(&eng.lock);
	return ok;
}

void sofv_engine_qp_release(struct sofv_qp *qp)
{
	struct sofv_eqp *e = qp->eng;

	if (!e)
		return;
	pthread_mutex_lock(&eng.lock);
	acks_send(); /* what it received is acknowledged before it goes */
	sof_list_del(&e->pend);
	tp_qp_destroy(&e->m);
	sof_hmap_del(&eng.qps, qp->qpn);
	tp_tx_flush();
	pthread_mutex_unlock(&eng.lock);
	polled_by(qp, false);
	qp->eng = NULL;
	free(e);
}

int sofv_engine_modify(struct sofv_qp *qp, const struct sof_modify_qp_req *req, bool *net)
{
	struct sofv_eqp *e = qp->eng;
	struct sof_modify_qp_req r = *req;
	bool netq;
	int err;

	/* the engine takes the QP on the way to RTR: the P_Key index was
	 * set at INIT, in the daemon (req carries every attribute, its mask
	 * only this modify's) */
	if (!e->m.t)
		r.attr_mask |= IBV_QP_PKEY_INDEX;
	pthread_mutex_lock(&eng.lock);
	/* to ERROR (rdma_disconnect, a DREQ taken): what already reached the
	 * host is taken first, as an HCA takes packets when they come, so an
	 * ACK that came before the DREQ completes its send with success
	 * rather than a flush (the CM's way runs beside the data's here) */
	if (e->m.t && (r.attr_mask & IBV_QP_STATE) && r.state == IBV_QPS_ERR)
		eng_rx_sockets(false);
	acks_send();
	gids_refresh();
	tp_resp_shared_void(&e->m);
	err = tp_qp_modify(&e->m, &r, net);
	/* A UD QP may hear from another host at any time: the progress
	 * thread watches the sockets for it. Its CQs' polls read them too
	 * (busy polling, no wake-up) on sofib0, whose every packet comes by
	 * the link, and on sof0 once it sent to the network (sofv_engine_post:
	 * its sends to this host's QPs stay the executor's, *net false, and a
	 * ping-pong on one host reads no socket per poll) */
	netq = *net ||
	       (e->m.type == IBV_QPT_UD && (to_sctx(qp->qpx.qp_base.context)->ib || e->polled));
	if (!err && (*net || e->m.type == IBV_QPT_UD))
		err = thread_start();
	eng.v6 = tp_any_net_v6();
	eng.roce = tp_any_net_roce();
	tp_tx_flush();
	pthread_mutex_unlock(&eng.lock);
	if (!err)
		polled_by(qp, netq);
	return err;
}

/* ---- the data path ---------------------------------------------------------------- */

/* A WQE went into qp's network send queue. With nothing of the QP in
 * flight it leaves at once (latency), and so it does with one WQE in
 * flight when the QP took in a request since its last post: an answer in
 * a ping-pong, whose peer sent the ACK of that WQE after the request.
 * Else it waits for the next poll or the ACK that wakes the progress
 * thread, and leaves with the others in one sendmmsg, as UDP GSO runs
 * (throughput: a system call per message costs more than the message,
 * and small WRITEs sent at once with one in flight lose rate;
 * bench/README.md). */
void sofv_engine_post(struct sofv_qp *qp)
{
	struct sofv_eqp *e = qp->eng;

	/* a UD QP of sof0 sent to the network: its peers answer by it */
	if (e->m.type == IBV_QPT_UD && !e->polled)
		polled_by(qp, true);
	/* A CQ of the QP armed: the program waits for its event, which the
	 * progress thread raises from the sockets it watches; a post is no
	 * poll then (a busy poller arms nothing, and its polls say so
	 * themselves). Taking the sockets from that thread woke it, and left
	 * the answer unread until its hold ended (issue 21: an echo over
	 * IPoIB, whose CQ is always armed: up to POLL_HOLD_NS). */
	if (atomic_load_explicit(&qp->scq->shm->armed, memory_order_relaxed) == SOF_CQ_ARM_NONE &&
	    atomic_load_explicit(&qp->rcq->shm->armed, memory_order_relaxed) == SOF_CQ_ARM_NONE)
		note_active();
	pthread_mutex_lock(&eng.lock);
	/* (a UD datagram has nothing in flight to go with: it leaves now) */
	if (e->m.type != IBV_QPT_UD && tp_qp_post_may_wait(&e->m, &e->post_epsn)) {
		if (sof_list_empty(&e->pend))
			sof_list_add(&eng.pending, &e->pend);
	} else {
		tp_qp_progress(&e->m);
		acks_send(); /* with this */
		tp_timer_update();
		tp_tx_flush();
	}
	pthread_mutex_unlock(&eng.lock);
}

void sofv_engine_poll(void)
{
	note_active();
	if (pthread_mutex_trylock(&eng.lock))
		return; /* another thread runs it */
	if (eng.ctx)
		atomic_store_explicit(&eng.poll_read_ns, rx_run(true, true), memory_order_relaxed);
	pthread_mutex_unlock(&eng.lock);
}

void sofv_engine_lock(struct sofv_context *ctx)
{
	if (eng.ctx == ctx)
		pthread_mutex_lock(&eng.lock);
}

void sofv_engine_unlock(struct sofv_context *ctx)
{
	if (eng.ctx == ctx)
		pthread_mutex_unlock(&eng.lock);
}
