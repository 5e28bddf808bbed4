/*
 * Unit tests of the completion ring of a CQ segment (sof_shm.h) under
 * concurrency: two races that each left `ibv_rc_pingpong -e` asleep in
 * ibv_get_cq_event for ever, waiting for a completion that had been made.
 *
 * 1. The event handshake. A producer (sof_cq_push, in any process)
 *    publishes an entry, then looks at the arm; the owner arms
 *    (ibv_req_notify_cq), then polls. Whatever the timing, either the
 *    owner's poll finds the entry or the producer consumes the arm and
 *    raises an event, never neither. It is the store-buffering pattern
 *    (each side stores, then loads what the other stored), which x86 allows
 *    unless both sides put a full fence between their store and load. The
 *    two sides run on two threads (pinned to two CPUs when there are two)
 *    in lockstep rounds, the owner arming a little later each round so that
 *    the stores of both meet; a broken handshake fails here within a few
 *    hundred thousand rounds, a correct one never does.
 *
 * 2. The overflow check. A producer reads tail, then head; when other
 *    producers pushed and the owner polled in between, head is past the
 *    tail it read, and tail - head wraps: a CQ with room looked full and
 *    the completion was dropped. A timer signal runs that other producer
 *    and the owner inside the producer's loop, at arbitrary instructions,
 *    so it lands between those two reads often; the ring never holds more
 *    than a few entries, so no push may fail.
 *
 * Needs a running daemon (tests/run.sh starts one per test program).
 */
#include <infiniband/verbs.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/time.h>

#include "harness.h"
#include "sofv.h"

/* ---- 1. the event handshake --------------------------------------------- */

/* at most ROUNDS rounds or SECONDS seconds (a loaded machine is slow) */
#define ROUNDS 1000000u
#define SECONDS 15
#define MAX_DELAY 512u
#define STOP UINT32_MAX

static struct sof_cq_shm *shm;
static int chan_fd = -1; /* the completion channel of the CQ of the handshake test */
static _Atomic uint32_t go, pushed, push_err;

/* Wait until *v is want (true) or STOP (false). */
static bool spin_until(_Atomic uint32_t *v, uint32_t want)
{
	uint32_t x;

	for (unsigned int i = 0; (x = atomic_load_explicit(v, memory_order_acquire)) != want; i++) {
		if (x == STOP)
			return false;
		if (i > 1000)
			sched_yield();
	}
	return true;
}

static void delay(uint32_t n)
{
	for (volatile uint32_t i = 0; i < n; i++)
		;
}

/* Pin the calling thread to the nth CPU it may run on (best effort). */
static void pin(int nth)
{
	cpu_set_t set, one;

	if (sched_getaffinity(0, sizeof(set), &set) || CPU_COUNT(&set) < 2)
		return;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (CPU_ISSET(cpu, &set) && nth-- == 0) {
			CPU_ZERO(&one);
			CPU_SET(cpu, &one);
			pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
			return;
		}
	}
}

static void *producer(void *arg)
{
	struct sof_cqe c;

	(void)arg;
	pin(1);
	memset(&c, 0, sizeof(c));
	c.opcode = IBV_WC_RECV;
	for (uint32_t r = 1; spin_until(&go, r); r++) {
		c.wr_id = r;
		if (sof_cq_push(shm, &c, chan_fd, NULL) < 0)
			atomic_store(&push_err, r);
		atomic_store_explicit(&pushed, r, memory_order_release);
	}
	return NULL;
}

TEST(arm_then_poll_never_misses_a_push)
{
	struct ibv_context *ctx = test_open_dev();
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq *cq;
	struct ibv_wc wc;
	pthread_t th;
	uint32_t lost = 0, first = 0, r;
	uint64_t until = sof_now_ns() + SECONDS * 1000000000ull;

	CHECK(ch != NULL);
	cq = ibv_create_cq(ctx, 16, NULL, ch, 0);
	CHECK(cq != NULL);
	shm = to_scq(cq)->shm;
	chan_fd = ch->fd; /* as the library pushes into a CQ with a channel */
	CHECK_EQ(pthread_create(&th, NULL, producer, NULL), 0);
	pin(0);
	for (r = 1; r <= ROUNDS && (r % 1024 || sof_now_ns() < until); r++) {
		int n;

		atomic_store_explicit(&go, r, memory_order_release);
		delay(r % MAX_DELAY);
		CHECK_EQ(ibv_req_notify_cq(cq, 0), 0);
		n = ibv_poll_cq(cq, 1, &wc);
		spin_until(&pushed, r);
		CHECK_EQ(atomic_load(&push_err), 0);
		if (n == 0 && !atomic_load(&shm->event_pending)) {
			if (!lost++)
				first = r;
		}
		if (n == 0)
			n = ibv_poll_cq(cq, 1, &wc);
		CHECK_EQ(n, 1);
		CHECK_EQ(wc.wr_id, r);
		/* next round from a clean slate: no arm, no event due */
		atomic_store(&shm->armed, SOF_CQ_ARM_NONE);
		atomic_store(&shm->event_pending, 0);
	}
	atomic_store(&go, STOP);
	CHECK_EQ(pthread_join(th, NULL), 0);
	if (lost)
		test_fail(__FILE__, __LINE__,
			  "%u of %u pushes neither polled nor signalled (first in round %u)", lost,
			  r - 1, first);
	CHECK_EQ(ibv_destroy_cq(cq), 0);
	CHECK_EQ(ibv_destroy_comp_channel(ch), 0);
	CHECK_EQ(ibv_close_device(ctx), 0);
}

/* ---- 2. the overflow check ---------------------------------------------- */

static struct ibv_cq *ov_cq;
static volatile sig_atomic_t ov_ticks, ov_fail, ov_in_poll;

/* Another producer, then the owner, between two instructions of the loop
 * below (the owner only when the loop is not itself polling). */
static void ov_tick(int sig)
{
	struct sof_cqe c;
	struct ibv_wc wc[4];

	(void)sig;
	memset(&c, 0, sizeof(c));
	c.opcode = IBV_WC_SEND;
	c.wr_id = 2;
	/* (a poll of the loop that asks the daemon something may hold
	 * the loop long enough for many ticks: never fill the ring) */
	if ((int32_t)(atomic_load(&shm->tail) - atomic_load(&shm->head)) < 8 &&
	    sof_cq_push(shm, &c, -1, NULL) < 0)
		ov_fail = 1;
	if (!ov_in_poll)
		while (ibv_poll_cq(ov_cq, 4, wc) > 0)
			;
	ov_ticks++;
}

TEST(push_into_a_ring_with_room_never_overflows)
{
	struct ibv_context *ctx = test_open_dev();
	struct itimerval it = {.it_interval = {0, 50}, .it_value = {0, 50}};
	struct itimerval off = {{0, 0}, {0, 0}};
	struct sigaction sa, old;
	struct sof_cqe c;
	struct ibv_wc wc[4];
	uint64_t pushes = 0, fails = 0, until = sof_now_ns() + 5000000000ull;

	/* 16 entries; never more than nine are in it */
	ov_cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	CHECK(ov_cq != NULL);
	shm = to_scq(ov_cq)->shm;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = ov_tick;
	sigemptyset(&sa.sa_mask);
	CHECK_EQ(sigaction(SIGALRM, &sa, &old), 0);
	memset(&c, 0, sizeof(c));
	c.opcode = IBV_WC_RECV;
	c.wr_id = 1;
	CHECK_EQ(setitimer(ITIMER_REAL, &it, NULL), 0);
	while (ov_ticks < 20000 && sof_now_ns() < until) {
		pushes++;
		if (sof_cq_push(shm, &c, -1, NULL) < 0)
			fails++;
		ov_in_poll = 1;
		atomic_signal_fence(memory_order_seq_cst);
		while (ibv_poll_cq(ov_cq, 4, wc) > 0)
			;
		atomic_signal_fence(memory_order_seq_cst);
		ov_in_poll = 0;
	}
	setitimer(ITIMER_REAL, &off, NULL);
	sigaction(SIGALRM, &old, NULL);
	if (fails || ov_fail || atomic_load(&shm->overflow))
		test_fail(__FILE__, __LINE__,
			  "%" PRIu64 " of %" PRIu64 " pushes failed, tick failed %d, overflow %u "
			  "(%d ticks)",
			  fails, pushes, (int)ov_fail, atomic_load(&shm->overflow), (int)ov_ticks);
	CHECK_EQ(ibv_destroy_cq(ov_cq), 0);
	CHECK_EQ(ibv_close_device(ctx), 0);
}

/* ---- 3. producers' cached heads ------------------------------------------- */

#define CH_PRODUCERS 2
#define CH_PUSHES 10000u

static _Atomic uint32_t ch_stop, ch_enospc;
static cpu_set_t all_cpus;

static void *cached_producer(void *arg)
{
	uintptr_t me = (uintptr_t)arg;
	_Atomic uint32_t cache = 0; /* this producer's copy of the head */
	struct sof_cqe c;

	memset(&c, 0, sizeof(c));
	c.opcode = IBV_WC_RECV;
	for (uint32_t i = 0; i < CH_PUSHES && !atomic_load(&ch_stop);) {
		int r;

		/* keep the ring near full, not over it (an overflow is a CQ
		 * error): the cached heads are then tested at the edge */
		if (atomic_load(&shm->tail) - atomic_load(&shm->head) >= 15) {
			sched_yield();
			continue;
		}
		c.wr_id = (uint64_t)me << 32 | i;
		r = sof_cq_push(shm, &c, -1, &cache);
		if (r == -ENOSPC) {
			atomic_fetch_add(&ch_enospc, 1);
			atomic_store(&shm->overflow, 0);
			sched_yield();
			continue; /* full: the owner has not polled yet */
		}
		if (r < 0)
			atomic_store(&push_err, 1);
		i++;
	}
	return NULL;
}

/* A full ring is never taken for one with room: with each producer
 * reading the owner's head only when its cached copy says full, every
 * completion is polled exactly once, in each producer's order. */
TEST(cached_heads_never_overwrite)
{
	struct ibv_context *ctx = test_open_dev();
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	pthread_t th[CH_PRODUCERS];
	uint32_t next[CH_PRODUCERS] = {0}, got = 0, bad = 0;
	uint64_t until = sof_now_ns() + 90000000000ull; /* a safety net only */
	struct ibv_wc wc[8];

	/* the first test pinned this thread: all CPUs again */
	pthread_setaffinity_np(pthread_self(), sizeof(all_cpus), &all_cpus);
	CHECK(cq != NULL);
	shm = to_scq(cq)->shm;
	atomic_store(&push_err, 0);
	for (uintptr_t i = 0; i < CH_PRODUCERS; i++)
		CHECK_EQ(pthread_create(&th[i], NULL, cached_producer, (void *)i), 0);
	while (got < CH_PRODUCERS * CH_PUSHES && sof_now_ns() < until) {
		int n = ibv_poll_cq(cq, (int)(got % 8) + 1, wc); /* uneven polls */

		for (int i = 0; i < n; i++) {
			uint32_t p = (uint32_t)(wc[i].wr_id >> 32), seq = (uint32_t)wc[i].wr_id;

			if (p >= CH_PRODUCERS || seq != next[p])
				bad++;
			else
				next[p]++;
			got++;
		}
	}
	atomic_store(&ch_stop, 1);
	for (int i = 0; i < CH_PRODUCERS; i++)
		pthread_join(th[i], NULL);
	if (got != CH_PRODUCERS * CH_PUSHES)
		fprintf(stderr, "# polled %u: %u and %u in order, %u ENOSPC\n", got, next[0], next[1], atomic_load(&ch_enospc));
	CHECK_EQ(got, CH_PRODUCERS * CH_PUSHES);
	CHECK_EQ(bad, 0);
	CHECK_EQ(atomic_load(&push_err), 0);
	CHECK_EQ(ibv_destroy_cq(cq), 0);
	CHECK_EQ(ibv_close_device(ctx), 0);
}

int main(void)
{
	sched_getaffinity(0, sizeof(all_cpus), &all_cpus);
	RUN(arm_then_poll_never_misses_a_push);
	RUN(push_into_a_ring_with_room_never_overflows);
	RUN(cached_heads_never_overwrite);
	return test_summary();
}
