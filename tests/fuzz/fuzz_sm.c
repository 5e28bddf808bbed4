/*
 * libFuzzer target: softofed-sm's handling of SMP responses (sm/): a whole
 * sweep — discovery, LID assignment, routing, programming, activation —
 * where every answer comes from the input, so answers lie: NodeInfo with
 * GUIDs that repeat (loops, two nodes claiming one GUID, a node changing
 * type or port count), LocalPortNum out of range, port states that flap,
 * SwitchInfo with any LinearFDBCap, Sets refused or unanswered. The SM's
 * engine (sm/smp_io.c, which needs a umad port) is replaced here by a queue
 * the harness answers one request at a time.
 *
 * Input, per request in order: one byte, its low 2 bits the fate (0 time
 * out, 1 a status, 2-3 an answer) and, for an answer, the next bytes build
 * its 64 data bytes: NodeInfo from a small space (type, 1-8 ports, GUID
 * 1..16, local port) so loops and repeats are common, the others raw.
 * When the input ends every request times out. Checks, per input:
 *   - the sweep ends: no more than MAX_REQS requests (a loop that keeps
 *     asking would exceed it);
 *   - LIDs: no two ports share one (the LID table and the ports agree);
 *   - LFT entries name a port of their switch or 255;
 *   - nothing leaks (the subnet is freed each input; ASan's leak check).
 *
 * tests/fuzz/run.sh builds it from the files on these lines:
 * FUZZ_SOURCES: tests/fuzz/fuzz_sm.c sm/discover.c sm/lid.c sm/route.c sm/program.c sm/subnet.c mad/sma.c mad/pma.c
 * FUZZ_INCLUDES: sm mad common
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sm.h"
#include "smp.h"

#define MAX_REQS 200000

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint8_t *in;
static size_t in_left;
static unsigned nreqs;

static uint8_t next_byte(void)
{
	if (!in_left)
		return 0;
	in_left--;
	return *in++;
}

uint64_t sm_now_us(void)
{
	return 0;
}

void sm_log(struct sm *sm, int level, const char *fmt, ...)
{
	(void)sm;
	(void)level;
	(void)fmt;
}

static struct sm_req *queue(struct sm *sm, uint8_t method, uint16_t attr, uint32_t mod,
			    const uint8_t *d, bool dr, sm_done_fn *done)
{
	struct sm_req *rq = calloc(1, sizeof(*rq));

	if (!rq)
		abort();
	sof_smp_init(rq->mad, dr, method, attr, mod, 0, 0);
	if (d)
		memcpy(rq->mad + SOF_SMP_OFF_DATA, d, 64);
	rq->dr = dr;
	rq->done = done;
	if (sm->qtail)
		sm->qtail->next = rq;
	else
		sm->qhead = rq;
	sm->qtail = rq;
	if (++nreqs > MAX_REQS) {
		fprintf(stderr, "fuzz_sm: more than %u requests: the sweep does not end\n", MAX_REQS);
		abort();
	}
	return rq;
}

struct sm_req *sm_smp_dr(struct sm *sm, const uint8_t *path, unsigned hops, uint8_t method,
			 uint16_t attr, uint32_t mod, const uint8_t *data, sm_done_fn *done)
{
	struct sm_req *rq;

	if (hops > SM_MAX_DR_HOPS)
		return NULL;
	rq = queue(sm, method, attr, mod, data, true, done);
	rq->mad[SOF_SMP_OFF_HOP_CNT] = (uint8_t)hops;
	memcpy(rq->mad + SOF_SMP_OFF_INIT_PATH, path, hops + 1u);
	return rq;
}

struct sm_req *sm_smp_lid(struct sm *sm, uint16_t dlid, uint8_t method, uint16_t attr,
			  uint32_t mod, const uint8_t *data, sm_done_fn *done)
{
	struct sm_req *rq = queue(sm, method, attr, mod, data, false, done);

	rq->dlid = dlid;
	return rq;
}

static void answer(struct sm *sm, struct sm_req *rq)
{
	uint8_t mad[256], *d = mad + SOF_SMP_OFF_DATA, fate = next_byte();
	uint16_t attr = sof_get16(rq->mad + SOF_SMP_OFF_ATTR_ID);
	unsigned i;

	memcpy(mad, rq->mad, 256);
	mad[3] = SOF_METHOD_GET_RESP;
	if (!in_left || (fate & 3) == 0) {
		rq->done(sm, rq, -ETIMEDOUT, NULL);
		return;
	}
	if ((fate & 3) == 1) {
		sof_put16(mad + SOF_SMP_OFF_STATUS, SOF_STATUS_BAD_VALUE);
		rq->done(sm, rq, -EPROTO, mad);
		return;
	}
	if (attr == SOF_ATTR_NODE_INFO) {
		uint8_t b = next_byte(), g = next_byte();

		memset(d, 0, 64);
		d[0] = d[1] = 1;
		d[2] = (uint8_t)(b & 3);	     /* 0 and 3 are bad or routers */
		d[3] = (uint8_t)((b >> 2 & 7) + 1); /* 1..8 ports */
		sof_put64(d + 4, 0x100u + (g & 15));
		sof_put64(d + 12, 0x100u + (g & 15));
		sof_put64(d + 20, 0x200u + (g & 15) * 16 + (b >> 5));
		d[36] = (uint8_t)(g >> 4);	     /* local port, maybe bad */
	} else {
		for (i = 0; i < 64; i++)
			d[i] = next_byte();
		if (attr == SOF_ATTR_PORT_INFO && (fate & 4))
			d[32] = (uint8_t)((d[32] & 0xf0) | SOF_PORT_INIT); /* mostly up */
	}
	rq->done(sm, rq, 0, mad);
}

/* answer everything queued, requests made meanwhile included */
static void drain(struct sm *sm)
{
	while (sm->qhead) {
		struct sm_req *rq = sm->qhead;

		sm->qhead = rq->next;
		if (!sm->qhead)
			sm->qtail = NULL;
		answer(sm, rq);
		free(rq);
	}
}

static void check(struct sm *sm)
{
	struct sm_subnet *sn = &sm->sn;
	unsigned i, j, lid;

	for (lid = 1; lid < SM_UCAST_LIDS; lid++) {
		struct sm_port *p = sn->lid_port[lid];

		if (p && (lid < p->lid || lid >= p->lid + (1u << p->lmc))) {
			fprintf(stderr, "fuzz_sm: LID %u names a port with LID %u LMC %u\n", lid,
				p->lid, p->lmc);
			abort();
		}
	}
	for (i = 0; i < sn->nnodes; i++) {
		struct sm_node *n = sn->nodes[i];

		for (j = 0; j <= n->nports; j++)
			if (n->port[j].lid && sm_port_by_lid(sn, n->port[j].lid) != &n->port[j]) {
				fprintf(stderr, "fuzz_sm: two ports with LID %u\n", n->port[j].lid);
				abort();
			}
		if (!n->sw)
			continue;
		for (lid = 1; lid <= sn->max_lid; lid++)
			if (n->sw->lft[lid] != 255 && n->sw->lft[lid] > n->nports) {
				fprintf(stderr, "fuzz_sm: LFT entry %u of a %u-port switch\n",
					n->sw->lft[lid], n->nports);
				abort();
			}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct sm sm;
	unsigned round;

	memset(&sm, 0, sizeof(sm));
	if (sm_subnet_init(&sm.sn))
		return 0;
	in = data;
	in_left = size;
	nreqs = 0;
	sm.routing = size ? (enum sm_routing)((data[0] >> 6) % 3) : SM_ROUTE_MINHOP;
	sm.sn.lmc = size ? data[0] & 3 : 0;
	/* two sweeps: the second meets the model the first left */
	for (round = 0; round < 2; round++) {
		sm_discover_start(&sm);
		drain(&sm);
		if (sm.sn.self && !sm_lid_assign(&sm)) {
			sm.sn.sm_lid = sm.sn.self->lid;
			if (sm_route(&sm))
				abort();
			check(&sm);
			sm_program_start(&sm);
			drain(&sm);
			sm_activate_start(&sm);
			drain(&sm);
		}
	}
	sm_subnet_free(&sm.sn);
	return 0;
}
