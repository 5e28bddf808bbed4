/*
 * The VCRC of the InfiniBand link (transport/ib_wire.c ib_vcrc) on its
 * own: ns per call for a 4 KiB packet (and 256 B, 64 B), the median of
 * 15 batches of 20,000 calls, each packet at another 8-byte offset of a
 * buffer that stays in the cache. The time is the thread's CPU time, not
 * the wall clock: on a shared machine a batch is preempted. bench/vcrc.sh builds it against the
 * ib_wire.c of two commits and runs them in alternating rounds.
 */
#include "ib_wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define BATCHES 15
#define CALLS 20000

static double cpu_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(void)
{
	static const size_t lens[] = {4096, 256, 64};
	static uint8_t buf[4096 + 64];
	volatile uint16_t sink = 0;

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 131 + 7);
	for (unsigned l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
		double ns[BATCHES];

		for (int b = 0; b < BATCHES; b++) {
			double t0 = cpu_ns();

			for (int i = 0; i < CALLS; i++)
				sink ^= ib_vcrc(buf + (i & 7) * 8, lens[l]);
			ns[b] = (cpu_ns() - t0) / CALLS;
		}
		qsort(ns, BATCHES, sizeof(ns[0]), cmp_double);
		printf("vcrc %zu %.1f\n", lens[l], ns[BATCHES / 2]);
	}
	return sink == 0xbeef ? 1 : 0;
}
