/*
 * A minimal unit-test harness. A test program defines cases with TEST(name),
 * lists them in main with RUN(name), and ends with return test_summary().
 * Each case prints "ok - name" or "not ok - name"; a failed CHECK prints
 * both values, the file and the line, and ends that case. tests/run.sh
 * counts the ok / not ok lines of every program.
 */
#ifndef SOF_TEST_HARNESS_H
#define SOF_TEST_HARNESS_H

#include <inttypes.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>

extern jmp_buf test_jmp;
extern const char *test_current;
void test_fail(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4), noreturn));
void test_run(const char *name, void (*fn)(void));
int test_summary(void);

/* The XINUSE bits (XGETBV 1, Intel SDM vol. 1 13.6) of the upper halves
 * of the vector registers (YMM_Hi128, bit 2; ZMM_Hi256, bit 6): nonzero
 * when code left them dirty without VZEROUPPER, which makes every SSE
 * instruction after it wait on them; 0 too where the CPU cannot tell. */
uint64_t test_vector_upper_dirty(void);

struct ibv_context;
/* Open the first verbs device; exits with a message when there is none
 * (the programs need the daemon tests/run.sh starts). */
struct ibv_context *test_open_dev(void);

#define TEST(name) static void test_##name(void)
#define RUN(name) test_run(#name, test_##name)

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond))                                                   \
			test_fail(__FILE__, __LINE__, "CHECK(%s)", #cond);     \
	} while (0)

#define CHECK_EQ(a, b)                                                         \
	do {                                                                   \
		long long _a = (long long)(a), _b = (long long)(b);            \
		if (_a != _b)                                                  \
			test_fail(__FILE__, __LINE__,                          \
				  "%s == %s: %lld != %lld", #a, #b, _a, _b);   \
	} while (0)

#define CHECK_NE(a, b)                                                         \
	do {                                                                   \
		long long _a = (long long)(a), _b = (long long)(b);            \
		if (_a == _b)                                                  \
			test_fail(__FILE__, __LINE__,                          \
				  "%s != %s: both %lld", #a, #b, _a);          \
	} while (0)

#define CHECK_MEM(a, b, n)                                                     \
	do {                                                                   \
		if (memcmp((a), (b), (n)))                                     \
			test_fail(__FILE__, __LINE__, "memory %s != %s (%zu bytes)", \
				  #a, #b, (size_t)(n));                        \
	} while (0)

#endif
