/*
 * The unit-test harness (see harness.h).
 */
#include "harness.h"

#include <infiniband/verbs.h>
#include <stdarg.h>
#include <stdlib.h>

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
