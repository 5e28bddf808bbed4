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
 *   - multicast (sm/mcast.c, after the sweep, over a stand-in SA whose
 *     groups' members the input picks): every MFT entry, as computed and
 *     as written, names a port of its switch that is port 0 or has a link,
 *     and each group's tree reaches every member's switch from any other
 *     member's switch along marked links;
 *   - nothing leaks (the subnet is freed each input; ASan's leak check).
 * Bit 5 of the first byte loads partitions (sm/partition.c): the P_Key
 * tables and switch ports' enforcement are written through the same
 * answers.
 *
 * tests/fuzz/run.sh builds it from the files on these lines:
 * FUZZ_SOURCES: tests/fuzz/fuzz_sm.c sm/discover.c sm/lid.c sm/route.c sm/program.c sm/partition.c sm/mcast.c sm/mkey.c sm/subnet.c mad/sma.c mad/sma_port.c mad/pma.c mad/cc.c
 * FUZZ_INCLUDES: sm mad common
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sm.h"
#include "sm_sa.h"
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

/* The stand-in SA: four groups (MLIDs in the first, second and last MFT
 * block); port i of the subnet's ports with a LID is a member of group g
 * when bit (i + 5g) % 32 of `members` is set */
static const uint16_t fake_mlids[] = {0xc000, 0xc001, 0xc020, 0xc3ff};
static uint32_t members;
static struct sm *cur_sm;
static void (*hook_fn)(void *ctx, uint16_t mlid);
static void *hook_ctx;

struct sm_sa *sm_sa_get(void)
{
	return (struct sm_sa *)&members;
}

void sm_sa_mcast_hook(void (*fn)(void *ctx, uint16_t mlid), void *ctx)
{
	hook_fn = fn;
	hook_ctx = ctx;
}

unsigned sm_sa_mcast_mlids(const struct sm_sa *sa, uint16_t *mlids, unsigned max)
{
	unsigned i;

	(void)sa;
	for (i = 0; i < 4 && i < max; i++)
		mlids[i] = fake_mlids[i];
	return 4;
}

int sm_sa_mcast_ports(const struct sm_sa *sa, uint16_t mlid, struct sm_port **ports, unsigned max)
{
	struct sm_subnet *sn = &cur_sm->sn;
	unsigned g, i, j, k = 0, n = 0;

	(void)sa;
	for (g = 0; g < 4 && fake_mlids[g] != mlid; g++)
		;
	if (g == 4)
		return -ENOENT;
	for (i = 0; i < sn->nnodes; i++)
		for (j = 0; j <= sn->nodes[i]->nports; j++) {
			struct sm_port *p = &sn->nodes[i]->port[j];

			if (!p->lid || !p->present)
				continue;
			if (members >> ((k++ + 5 * g) % 32) & 1) {
				if (n < max)
					ports[n] = p;
				n++;
			}
		}
	return (int)n;
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

static void check_mask(const struct sm_node *n, const uint64_t *m, const char *what)
{
	unsigned p, w;

	for (w = 0; w < 4; w++)
		for (uint64_t bits = m[w]; bits; bits &= bits - 1) {
			p = w * 64 + (unsigned)__builtin_ctzll(bits);
			if (p > n->nports || (p && !n->port[p].peer)) {
				fprintf(stderr, "fuzz_sm: %s MFT names port %u of a %u-port switch%s\n",
					what, p, n->nports, p <= n->nports ? " (no link)" : "");
				abort();
			}
		}
}

/* the switches reached from s over links (marked for MLID index idx at
 * both ends when `marked`), as mcast.c walks them */
static void reach(struct sm_subnet *sn, struct sm_node *s, unsigned idx, bool marked, bool *seen)
{
	struct sm_node **q = calloc(sn->nnodes + 1, sizeof(*q));
	unsigned head = 0, tail = 0, p;

	if (!q)
		abort();
	memset(seen, 0, sn->nnodes);
	seen[s->index] = true;
	q[tail++] = s;
	while (head < tail) {
		struct sm_node *x = q[head++];

		for (p = 1; p <= x->nports; p++) {
			struct sm_port *pe = x->port[p].peer;

			if (!x->port[p].present || !pe || !pe->node->sw || !pe->node->present ||
			    seen[pe->node->index])
				continue;
			if (marked && (!(x->sw->mft_want[idx][p / 64] >> (p % 64) & 1) ||
				       !pe->node->sw->mft_want ||
				       !(pe->node->sw->mft_want[idx][pe->num / 64] >> (pe->num % 64) & 1)))
				continue;
			seen[pe->node->index] = true;
			q[tail++] = pe->node;
		}
	}
	free(q);
}

/* when the member switches of group g are connected, the marked links
 * connect them too: each member gets the group's packets */
static void check_tree(struct sm *sm, unsigned g)
{
	struct sm_subnet *sn = &sm->sn;
	struct sm_port *ports[512];
	struct sm_node *msw[512];
	bool *seen = calloc(sn->nnodes + 1, 1);
	unsigned idx = fake_mlids[g] - SM_MCAST_LID_BASE, nmsw = 0, i;
	int n = sm_sa_mcast_ports(NULL, fake_mlids[g], ports, 512);

	if (!seen)
		abort();
	for (i = 0; i < (unsigned)n && i < 512; i++) {
		struct sm_port *m = ports[i];
		struct sm_node *s = m->node->sw ? m->node : m->peer ? m->peer->node : NULL;

		if (s && s->sw && s->present && s->sw->mft_want && idx < s->sw->mft_cap)
			msw[nmsw++] = s;
	}
	if (nmsw < 2)
		goto out;
	reach(sn, msw[0], idx, false, seen);
	for (i = 1; i < nmsw; i++)
		if (!seen[msw[i]->index])
			goto out; /* not connected: no tree is asked for */
	reach(sn, msw[0], idx, true, seen);
	for (i = 1; i < nmsw; i++)
		if (!seen[msw[i]->index]) {
			fprintf(stderr, "fuzz_sm: group %#x: member switch %u not on the tree\n",
				fake_mlids[g], msw[i]->index);
			abort();
		}
out:
	free(seen);
}

static void check_mcast(struct sm *sm)
{
	struct sm_subnet *sn = &sm->sn;
	unsigned i, e, g;

	for (i = 0; i < sn->nnodes; i++) {
		const struct sm_node *n = sn->nodes[i];

		if (!n->sw || !n->sw->mft)
			continue;
		for (e = 0; e < n->sw->mft_cap; e++) {
			check_mask(n, n->sw->mft[e], "written");
			check_mask(n, n->sw->mft_want[e], "computed");
		}
	}
	for (g = 0; g < 4; g++)
		check_tree(sm, g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct sm sm;
	unsigned round;

	memset(&sm, 0, sizeof(sm));
	cur_sm = &sm;
	members = size >= 5 ? sof_get32(data + 1) : 0x5555;
	sm_mcast_init(&sm);
	if (hook_fn != NULL && hook_ctx != &sm)
		abort();
	if (sm_subnet_init(&sm.sn))
		return 0;
	in = data;
	in_left = size;
	nreqs = 0;
	sm.routing = size ? (enum sm_routing)((data[0] >> 6) % 3) : SM_ROUTE_MINHOP;
	sm.sn.lmc = size ? data[0] & 3 : 0;
	/* bit 5: partitions (sm/partition.c), so P_KeyTable Sets and switch
	 * ports' enforcement go through the lying answers too */
	if (size && data[0] & 0x20) {
		char err[128];

		if (sm_part_parse("Default=0x7fff : ALL=full ; p=0x8001 : ALL_CAS=limited, SELF=full ;",
				  &sm.parts, err, sizeof(err)))
			abort();
		sm.partitions = "fuzz";
	}
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
			sm_mcast_all(&sm);
			if (sm_mcast_run(&sm))
				abort();
			drain(&sm);
			check_mcast(&sm);
		}
	}
	sm_part_free(&sm.parts);
	sm_subnet_free(&sm.sn);
	return 0;
}
