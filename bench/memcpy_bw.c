/*
 * bench/memcpy_bw.c — the physical limit of issue 5's bandwidth targets:
 * single-thread memcpy bandwidth from 4 KiB to 64 MiB (powers of 4).
 *
 * For each size it copies between two distinct buffers (touched first, so
 * no page fault is timed) until about MEMCPY_MIN_NS of copying has been
 * timed, and prints one line "SIZE MiB/s" (MiB = 2^20 bytes, the unit
 * perftest's "MB/sec" uses). Pin it with taskset; run.sh takes medians.
 *
 * Usage: memcpy_bw [MIN_MS]   (default 200 ms per size)
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	const size_t max = (size_t)64 << 20;
	uint64_t min_ns = 200 * 1000000ull;
	unsigned char *src, *dst;
	size_t size;

	if (argc > 1)
		min_ns = strtoull(argv[1], NULL, 10) * 1000000ull;
	src = aligned_alloc(4096, max);
	dst = aligned_alloc(4096, max);
	if (!src || !dst) {
		perror("memcpy_bw: aligned_alloc");
		return 1;
	}
	memset(src, 0x5a, max);
	memset(dst, 0xa5, max);
	for (size = 4096; size <= max; size *= 4) {
		uint64_t t0, t, n = 0;

		memcpy(dst, src, size); /* warm-up */
		t0 = now_ns();
		do {
			memcpy(dst, src, size);
			/* keep the copy from being optimised away */
			__asm__ __volatile__("" : : "r"(dst) : "memory");
			n++;
			t = now_ns() - t0;
		} while (t < min_ns);
		printf("%zu %.1f\n", size, (double)size * (double)n / ((double)t / 1e9) / 1048576.0);
		fflush(stdout);
	}
	free(src);
	free(dst);
	return 0;
}
