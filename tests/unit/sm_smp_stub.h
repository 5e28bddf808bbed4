/*
 * The SMP engine of softofed-sm (sm/smp_io.c needs a umad port) stood in
 * for by a list the unit tests answer: sm_smp_dr() queues each
 * directed-route SMP it is given in Q (at most 64: more aborts), the clock
 * is 0 and the log is silent. Included once by a test of sm/ files that
 * send SMPs (test_sm_mcast, test_sm_part); the test drains Q itself.
 */
#ifndef SOF_TEST_SM_SMP_STUB_H
#define SOF_TEST_SM_SMP_STUB_H

#include "sm.h"
#include "smp.h"

#include <stdlib.h>
#include <string.h>

static struct sm_req *Q[64];
static unsigned NQ;

uint64_t sm_now_us(void) { return 0; }
void sm_log(struct sm *sm, int level, const char *fmt, ...)
{
	(void)sm;
	(void)level;
	(void)fmt;
}

struct sm_req *sm_smp_dr(struct sm *sm, const uint8_t *path, unsigned hops, uint8_t method,
			 uint16_t attr, uint32_t mod, const uint8_t *data, sm_done_fn *done)
{
	struct sm_req *rq = calloc(1, sizeof(*rq));

	(void)sm;
	(void)path;
	(void)hops;
	if (!rq || NQ == 64)
		abort();
	sof_smp_init(rq->mad, true, method, attr, mod, 0, 0);
	if (data)
		memcpy(rq->mad + SOF_SMP_OFF_DATA, data, 64);
	rq->done = done;
	Q[NQ++] = rq;
	return rq;
}

#endif
