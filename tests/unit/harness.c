/*
 * The unit-test harness (see harness.h).
 */
#include "harness.h"

#include <infiniband/verbs.h>
#include <stdarg.h>
#include <stdlib.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#endif

jmp_buf test_jmp;
const char *test_current;
static int passed, failed;

void test_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "# %s: %s:%d: ", test_current, file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	longjmp(test_jmp, 1);
}

void test_run(const char *name, void (*fn)(void))
{
	test_current = name;
	if (setjmp(test_jmp) == 0) {
		fn();
		passed++;
		printf("ok - %s\n", name);
	} else {
		failed++;
		printf("not ok - %s\n", name);
	}
	fflush(stdout);
}

int test_summary(void)
{
	printf("# %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}

uint64_t test_vector_upper_dirty(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
	unsigned a, b, c, d;
	uint32_t lo, hi;

	/* CPUID 0Dh.1: EAX bit 2, XGETBV with ECX = 1 */
	if (!__get_cpuid_count(0xd, 1, &a, &b, &c, &d) || !(a & 4))
		return 0;
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(1));
	return ((uint64_t)hi << 32 | lo) & (1u << 2 | 1u << 6);
#else
	return 0;
#endif
}

struct ibv_context *test_open_dev(void)
{
	struct ibv_device **list;
	struct ibv_context *c;
	int n = 0;

	list = ibv_get_device_list(&n);
	if (!list || n < 1) {
		fprintf(stderr, "no device\n");
		exit(1);
	}
	c = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	if (!c) {
		fprintf(stderr, "cannot open device\n");
		exit(1);
	}
	return c;
}
