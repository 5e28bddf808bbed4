/*
 * bench/reg_mr.c — issue 17's registration figures: ibv_reg_mr and
 * ibv_dereg_mr of 4 KiB, 1 MiB and 1 GiB of private anonymous memory,
 * touched (every page written before) and untouched (fresh mmap), beside
 * the physical limits of the same memory: memcpy of it (both buffers
 * touched) and faulting it in (the first write to every page of a fresh
 * mapping).
 *
 * Each figure is the median of N runs (fresh memory for each), printed as
 * "WHAT SIZE us" lines: reg_touched, dereg_touched, reg_untouched,
 * dereg_untouched, memcpy, fault. Runs through softofed run (links
 * libibverbs; the device is the first one).
 *
 * Usage: reg_mr [RUNS]   (default 5; 1 GiB always 3 at most)
 */
#define _GNU_SOURCE
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define ACC (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)
#define MAXR 16

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_d);
	return v[n / 2];
}

static void *fresh(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("reg_mr: mmap");
		exit(1);
	}
	return p;
}

/* reg and dereg of one fresh buffer, touched or not; the fault time of the
 * touch into *fault_us */
static int one(struct ibv_pd *pd, size_t len, int touch, double *reg_us, double *dereg_us,
	       double *fault_us)
{
	char *p = fresh(len);
	struct ibv_mr *mr;
	double t;

	if (touch) {
		t = now_us();
		memset(p, 0x5a, len);
		*fault_us = now_us() - t;
	}
	t = now_us();
	mr = ibv_reg_mr(pd, p, len, ACC);
	*reg_us = now_us() - t;
	if (!mr) {
		perror("reg_mr: ibv_reg_mr");
		return -1;
	}
	t = now_us();
	if (ibv_dereg_mr(mr)) {
		fprintf(stderr, "reg_mr: ibv_dereg_mr failed\n");
		return -1;
	}
	*dereg_us = now_us() - t;
	munmap(p, len);
	return 0;
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = {4096, 1 << 20, (size_t)1 << 30};
	int runs = argc > 1 ? atoi(argv[1]) : 5;
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_pd *pd;

	if (runs < 1 || runs > MAXR)
		runs = 5;
	list = ibv_get_device_list(NULL);
	if (!list || !list[0]) {
		fprintf(stderr, "reg_mr: no device\n");
		return 1;
	}
	ctx = ibv_open_device(list[0]);
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	if (!pd) {
		fprintf(stderr, "reg_mr: cannot open the device\n");
		return 1;
	}
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		size_t len = sizes[s];
		int n = len >= ((size_t)1 << 30) && runs > 3 ? 3 : runs;
		double rt[MAXR], dt[MAXR], ru[MAXR], du[MAXR], fl[MAXR], mc[MAXR], unused;

		for (int i = 0; i < n; i++) {
			if (one(pd, len, 1, &rt[i], &dt[i], &fl[i]) ||
			    one(pd, len, 0, &ru[i], &du[i], &unused))
				return 1;
		}
		for (int i = 0; i < n; i++) {
			char *a = fresh(len), *b = fresh(len);
			double t;

			memset(a, 1, len);
			memset(b, 2, len);
			t = now_us();
			memcpy(b, a, len);
			__asm__ __volatile__("" : : "r"(b) : "memory");
			mc[i] = now_us() - t;
			munmap(a, len);
			munmap(b, len);
		}
		printf("reg_touched %zu %.1f\n", len, median(rt, n));
		printf("dereg_touched %zu %.1f\n", len, median(dt, n));
		printf("reg_untouched %zu %.1f\n", len, median(ru, n));
		printf("dereg_untouched %zu %.1f\n", len, median(du, n));
		printf("memcpy %zu %.1f\n", len, median(mc, n));
		printf("fault %zu %.1f\n", len, median(fl, n));
		fflush(stdout);
	}
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return 0;
}
