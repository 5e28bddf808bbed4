/*
 * When the progress thread of the engine in the program (tp_host.c) runs,
 * for one-sided requests: RDMA WRITE, READ and atomics that arrive from
 * another host for this process's QPs (issue 18).
 *
 * The target of a one-sided request need not run at all: ib_write_lat
 * spins on the byte the peer writes and polls its CQ only for its own
 * sends; a storage or MPI target waits elsewhere. While threads poll, the
 * progress thread leaves the sockets to them and looks only every so
 * often, so such a request would wait for that look. Hence:
 *   - one-sided mode: for ONESIDED_ARM_NS after the engine took in a
 *     one-sided request (tp_onesided grows), the requests of a peer come
 *     while the owner may be waiting on memory. The progress thread does
 *     not keep the sockets armed while threads poll (each packet would
 *     wake it across CPUs: 13-21 us of the sender's send call, then it
 *     preempts the poller for a packet the poller reads anyway), but it
 *     takes them when a poller's pass read responses and no request
 *     (sofv_wake_rx: the peer acknowledged without its next request, so
 *     that request will come while the owner waits on memory; the
 *     poller kicks it), until a one-sided request was executed or
 *     HANDOFF_NS passed; and it looks every POLL_HOLD_NS (no doubling in
 *     this mode), so a target that stops polling waits at most that long
 *     before it reads the sockets for it. SEND-only traffic never turns
 *     the mode on;
 *   - in that mode it holds the ACKs of what it executed for the owner's
 *     next post (whether or not threads polled lately), as a poller holds
 *     them: in a one-sided ping-pong the ACK then reaches the peer
 *     together with the next request while the peer still polls its CQ
 *     for that ACK, so the peer's poll executes that request at once, and
 *     the chain goes on with no thread woken on either side (IBA
 *     9.7.5.1.1 lets a responder coalesce ACKs); an ACK it sent alone
 *     broke the chain. Any hold (a poller's too, in any mode) ends after
 *     ACK_HOLD_NS, at the next poll or when the progress thread, whose
 *     wait it shortens, sends them; a lone WRITE's initiator waits at
 *     most that longer. The progress thread's own hold lasts up to
 *     ACK_HOLD_LOOP_NS when a thread of the program polled lately (it
 *     runs a loop of its own, as ib_write_lat's: wait on memory, post,
 *     poll): that thread posts once it sees the data, but on its CPU the
 *     progress thread that executed the request runs first, and so does
 *     its wake-up by that post (note_active): the post came 30-80 us
 *     after the data (traced), the ACK left alone at ACK_HOLD_NS, the
 *     peer's poll took it without the next request, and that request
 *     then needed the peer's progress thread, whose hold ran out in
 *     turn: a chain broken for hundreds of iterations in a row
 *     (ib_write_lat between hosts at ~76 us one-way each, t_avg 3.9x
 *     t_typical quiet). A lone flight's tail-loss probe waits more than a
 *     millisecond past its round trip (transport/sack.c): the longer
 *     hold draws none;
 *   - the progress thread asks for a short scheduler slice (SCHED_OTHER's
 *     sched_runtime: Linux 6.12's EEVDF custom slices, no privilege
 *     needed), so that its wake-up preempts a spinning thread at once
 *     instead of after that thread's slice, when every CPU is busy (the
 *     program's threads spin, a busy process runs beside it). Older
 *     kernels refuse or ignore it: nothing changes there;
 *   - while it answers alone (no thread of the program polled within
 *     POLL_LATELY_NS: a READ or atomic target that waits elsewhere), a
 *     nice PROGRESS_NICE_BELOW levels below the program's own
 *     (SOFTOFED_PROGRESS_NICE=N: N levels, 0 none), where the process may
 *     lower it (CAP_SYS_NICE, or RLIMIT_NICE; else its own, as before):
 *     it then stands for the HCA, whose work preempts the host's tasks as
 *     a NIC's interrupt does. At the program's weight its spin had a fair
 *     share of a CPU shared with a busy process, and the requests that
 *     came while the other task ran waited for its turn (busy
 *     ib_read_lat t_avg / t_typical quiet 3.0-3.1, 10 below 1.6; at
 *     load 6 4.8-7.3 and 1.5-3.7). Bounded by the scheduler's weights:
 *     beside a task of the program's nice it takes at most ~90 % of a
 *     CPU (weights 9548 and 1024), and only while it is runnable: its
 *     spin, PROGRESS_SPIN_NS after each packet, and its work. Beside a
 *     thread of the program that polls it keeps the program's nice: the
 *     two share the CPU, and at the lower nice it took the poller's
 *     turns (ib_write_lat's iterations over 50 us quiet: 1.8 -> 3.7 %,
 *     with a busy loop beside its target 4.1 -> 6.2 %). Not SCHED_FIFO:
 *     a spin at a real-time priority takes the whole CPU (up to the
 *     kernel's 95 % throttle);
 *   - its spin: when nobody polls, the progress thread reads the sockets
 *     again and again for PROGRESS_SPIN_NS after the last packet before it
 *     sleeps on them: the next request of a peer in a ping-pong (a READ or
 *     an atomic to a QP whose program waits elsewhere) comes sooner than a
 *     wake-up on a virtual machine; as long as ibv_get_cq_event's spin.
 *     Not in one-sided mode (threads poll). A wake-up is what a READ
 *     round trip paid: the target's progress thread slept in epoll between
 *     requests and was switched in 18-33 us after the packet woke it (perf
 *     sched timehist, median 19 us: an idle vCPU halts, and a busy one
 *     takes the interrupt through the hypervisor too), against a 6 us
 *     round trip when it spins. The spin yields nothing to other tasks
 *     unless what it read woke a thread of this process (a completion
 *     channel kicked, sofv_wake_kicked) or a thread of it polled lately
 *     (it runs a loop of its own, which may share this CPU: a one-sided
 *     ping-pong's poll between its waits on memory; tp_host.c's
 *     POLL_LATELY_NS): a yield gives the CPU to whoever
 *     else is runnable for that task's whole slice (milliseconds under
 *     EEVDF; a busy loop pinned beside the target made every READ wait
 *     one), where a spin that does not yield shares the CPU with it as the
 *     scheduler shares it between any two running tasks, as the SEND
 *     target's own poll does. Beside a thread of this process the spin
 *     yields, and it stops for SPIN_OFF_NS once a yield came back after
 *     more than SPIN_CONTENDED_NS (that thread, or another task, had the
 *     CPU: the thread would wait for the spin's slice, where a sleeper
 *     gives way at once);
 *   - its timer slack is the least (1 ns): its waits end the holds;
 *   - the transport timer: while threads poll, the progress thread takes
 *     the timerfd out of its wait along with the sockets (tp_host.c's
 *     sockets_arm), and rx_run, which a poller runs on every poll, runs
 *     the timers once their deadline passed. The timer is lazy
 *     (transport/timer.c) and a SACK peer's tail-loss probe falls due a
 *     fraction of a millisecond after every send, so it woke the progress
 *     thread thousands of times a second, each time preempting the poller
 *     of a pinned program on its CPU and contending for the lock with it
 *     (a ping-pong's round trip took several times as long at each).
 *
 * Lock contract: sofv_wake_rx, sofv_wake_ack_*, sofv_wake_kick*,
 * sofv_wake_spin_start and sofv_wake_timer_* under the engine's lock; the
 * others from the progress thread alone.
 */
#include "sofv.h"

#include "tp.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ONESIDED_ARM_NS 1000000000ull
#define ACK_HOLD_NS 30000ull
#define ACK_HOLD_LOOP_NS 200000ull
#define HANDOFF_NS 200000ull
#define PROGRESS_SLICE_NS 100000ull /* the shortest slice Linux takes */
#define PROGRESS_NICE_BELOW 10 /* nice levels below the program's */
#define PROGRESS_SPIN_NS 50000ull
#define SPIN_CONTENDED_NS 30000ull
#define SPIN_OFF_NS 100000000ull

static uint64_t onesided_seen; /* tp_onesided() as last looked at */
static _Atomic uint64_t onesided_until, ack_until, handoff_ns;
static uint64_t spin_until, nospin_until; /* the progress thread's */
static bool spin_yields;		  /* the progress thread's */
static uint64_t kicks;			  /* under the engine's lock */
static bool timer_watched = true;	  /* under the engine's lock */
static int nice_own, nice_alone, nice_cur; /* the progress thread's */

void sofv_wake_thread_init(void)
{
	/* struct sched_attr of linux/sched/types.h (SCHED_ATTR_SIZE_VER0),
	 * whose header clashes with glibc's sched.h */
	struct {
		uint32_t size, policy;
		uint64_t flags;
		int32_t nice;
		uint32_t priority;
		uint64_t runtime, deadline, period;
	} a = {.size = sizeof(a), .policy = SCHED_OTHER, .runtime = PROGRESS_SLICE_NS};
	const char *e = getenv("SOFTOFED_PROGRESS_NICE");
	long below = PROGRESS_NICE_BELOW;
	char *end;

	if (e && *e) {
		long v = strtol(e, &end, 10);

		if (!*end && v >= 0 && v <= 39)
			below = v;
	}
	errno = 0;
	nice_own = getpriority(PRIO_PROCESS, 0); /* this thread's, on Linux */
	if (nice_own == -1 && errno)
		nice_own = 0;
	nice_cur = nice_own;
	nice_alone = nice_own - below < -20 ? -20 : nice_own - (int)below;
	/* the nice value is part of the call: the one this thread inherited
	 * (a daemon such as softofed-ipoib raises it for its data path; 0
	 * here took that back, and a call asking more than an unprivileged
	 * program's own value failed, short slice and all) */
	a.nice = nice_own;
	(void)syscall(SYS_sched_setattr, 0, &a, 0U);
	/* its timed waits end a held ACK (ACK_HOLD_NS): the default timer
	 * slack (50 us) would more than double the hold */
	(void)prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
}

void sofv_wake_alone(bool alone)
{
	int want = alone ? nice_alone : nice_own;

	if (want == nice_cur)
		return;
	/* below its own nice: CAP_SYS_NICE or RLIMIT_NICE, else EACCES or
	 * EPERM, and the thread keeps its own from then on */
	if (setpriority(PRIO_PROCESS, 0, want)) {
		nice_alone = nice_own;
		return;
	}
	nice_cur = want;
}

bool sofv_wake_rx(uint64_t now, bool held, bool responses_only, bool loop)
{
	bool hand = false;

	if (tp_onesided() != onesided_seen) {
		onesided_seen = tp_onesided();
		atomic_store_explicit(&onesided_until, now + ONESIDED_ARM_NS, memory_order_relaxed);
		/* what the handoff waited for came */
		atomic_store_explicit(&handoff_ns, 0, memory_order_relaxed);
	} else if (responses_only &&
		   now < atomic_load_explicit(&onesided_until, memory_order_relaxed)) {
		/* the chain broke: the peer's next request will find nobody
		 * polling */
		atomic_store_explicit(&handoff_ns, now, memory_order_relaxed);
		hand = true;
	}
	/* every hold, a poller's too, ends by the deadline: left to the
	 * count of polls (ACK_HOLD_POLLS) or to the progress thread's looks,
	 * a busy CPU stretches it past the peer's probe and retry budget */
	if (held && !atomic_load_explicit(&ack_until, memory_order_relaxed))
		atomic_store_explicit(&ack_until, now + (loop ? ACK_HOLD_LOOP_NS : ACK_HOLD_NS),
				      memory_order_relaxed);
	return hand;
}

bool sofv_wake_handed(uint64_t now)
{
	uint64_t t = atomic_load_explicit(&handoff_ns, memory_order_relaxed);

	return t && now - t < HANDOFF_NS;
}

bool sofv_wake_onesided(void)
{
	return sof_now_ns() < atomic_load_explicit(&onesided_until, memory_order_relaxed);
}

bool sofv_wake_ack_due(uint64_t now)
{
	uint64_t until = atomic_load_explicit(&ack_until, memory_order_relaxed);

	return until && now >= until;
}

void sofv_wake_ack_sent(void) { atomic_store_explicit(&ack_until, 0, memory_order_relaxed); }

bool sofv_wake_wait(struct timespec *wait, const struct timespec *hold)
{
	uint64_t until = atomic_load_explicit(&ack_until, memory_order_relaxed), now;

	*wait = *hold;
	if (!until)
		return false;
	now = sof_now_ns();
	if (until <= now)
		wait->tv_nsec = 0;
	else if (until - now < (uint64_t)wait->tv_nsec)
		wait->tv_nsec = (long)(until - now);
	return true;
}

void sofv_wake_kicked(void) { kicks++; }

uint64_t sofv_wake_kicks(void) { return kicks; }

void sofv_wake_spin_start(bool yields)
{
	uint64_t now = sof_now_ns();

	spin_yields = yields;
	/* that thread would wait for this CPU while a contended spin goes on */
	spin_until = spin_yields && now < nospin_until ? 0 : now + PROGRESS_SPIN_NS;
}

bool sofv_wake_spinning(void) { return spin_until && sof_now_ns() < spin_until; }

void sofv_wake_spin_yield(void)
{
	uint64_t t0;

	if (!spin_yields)
		return;
	t0 = sof_now_ns();
	sched_yield();
	if (sof_now_ns() - t0 > SPIN_CONTENDED_NS) {
		spin_until = 0;
		nospin_until = sof_now_ns() + SPIN_OFF_NS;
	}
}

void sofv_wake_timer_watched(bool on)
{
	timer_watched = on;
	tp_timer_fd_live(on);
}

void sofv_wake_timer_poll(uint64_t now)
{
	uint64_t deadline = tp_timer_deadline();

	if (!timer_watched && deadline && now >= deadline)
		tp_timer_fired();
}
