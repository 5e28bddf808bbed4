/*
 * bench/cacheline_pingpong.c — the physical limit of issue 5's latency
 * target: two processes, each pinned to its own core, bounce one cache line
 * of shared memory. The parent writes an odd counter value, the child
 * answers with the next even one; each round trip moves the line twice.
 *
 * With LINES 2, each process writes a line of its own and waits on the
 * other's: the shape of a queue pair, where each side writes into its
 * peer's receive queue (a completion slot) and polls its own. Each writer
 * then stores into a line the other core holds, instead of one it has
 * just read, which on some machines costs twice the one-line figure.
 *
 * Prints "oneway_ns N": half the median round-trip time over ROUNDS round
 * trips measured in batches of 1000 (the median of the batches).
 *
 * Usage: cacheline_pingpong CPU_A CPU_B [ROUNDS [LINES]]
 *        (default 1000000 rounds, 1 line)
 */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BATCH 1000

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	_Atomic uint64_t *line, *to_child, *to_parent;
	uint64_t rounds = 1000000, nb, i, *batch;
	int cpu_a, cpu_b, status, lines = 1;
	pid_t child;

	if (argc < 3) {
		fprintf(stderr, "usage: %s CPU_A CPU_B [ROUNDS [LINES]]\n", argv[0]);
		return 2;
	}
	cpu_a = atoi(argv[1]);
	cpu_b = atoi(argv[2]);
	if (argc > 3)
		rounds = strtoull(argv[3], NULL, 10);
	if (argc > 4)
		lines = atoi(argv[4]);
	if (lines != 1 && lines != 2) {
		fprintf(stderr, "cacheline_pingpong: LINES is 1 or 2\n");
		return 2;
	}
	nb = rounds / BATCH;
	if (nb == 0)
		nb = 1;
	line = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	batch = calloc(nb, sizeof(*batch));
	if (line == MAP_FAILED || !batch) {
		perror("cacheline_pingpong");
		return 1;
	}
	/* two lines: the parent writes to_child, the child to_parent, 2 KiB
	 * apart in the page (no adjacent-line prefetch pairs them) */
	to_child = line;
	to_parent = lines == 2 ? line + 4096 / 2 / sizeof(*line) : line;
	atomic_store(to_child, 0);
	atomic_store(to_parent, 0);
	child = fork();
	if (child < 0) {
		perror("cacheline_pingpong: fork");
		return 1;
	}
	if (child == 0) {
		uint64_t v;

		if (pin(cpu_b))
			perror("cacheline_pingpong: pin child");
		for (v = 1; v < 2 * nb * BATCH; v += 2) {
			while (atomic_load_explicit(to_child, memory_order_acquire) != v)
				;
			atomic_store_explicit(to_parent, v + 1, memory_order_release);
		}
		_exit(0);
	}
	if (pin(cpu_a))
		perror("cacheline_pingpong: pin parent");
	for (i = 0; i < nb; i++) {
		uint64_t t0 = now_ns(), j, v;

		for (j = 0; j < BATCH; j++) {
			v = 2 * (i * BATCH + j) + 1;
			atomic_store_explicit(to_child, v, memory_order_release);
			while (atomic_load_explicit(to_parent, memory_order_acquire) != v + 1)
				;
		}
		batch[i] = now_ns() - t0;
	}
	if (waitpid(child, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "cacheline_pingpong: child failed\n");
		return 1;
	}
	qsort(batch, nb, sizeof(*batch), cmp_u64);
	printf("oneway_ns %.1f\n", (double)batch[nb / 2] / BATCH / 2.0);
	free(batch);
	return 0;
}
