/*
 * softofed-sm's multicast routing (sm/mcast.c) on the hand-built subnet of
 * sa_fabric.h (H1, H2 on S1; S1 port 3 - S2 port 3; H3 on S2), the SA's
 * groups stood in for and the SMP engine replaced by a list the test
 * answers: the MFT blocks sent name the members' switch ports and the
 * link between the switches only where a member lies beyond it; blocks are
 * sent only when they differ from what the switch holds; a leave clears
 * the entries; MulticastFDBTop is raised to cover the MLIDs in use.
 */
#include "harness.h"

#include "sa_fabric.h"
#include "sm_sa.h"
#include "sm_smp_stub.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>

static struct sm SM;
static struct saf F;
static struct sm_port *MEMBERS[8];
static unsigned NMEMBERS;
static uint16_t MLID;
static void (*hook)(void *ctx, uint16_t mlid);
static void *hook_ctx;

struct sm_sa *sm_sa_get(void) { return (struct sm_sa *)&MLID; }
void sm_sa_mcast_hook(void (*fn)(void *ctx, uint16_t mlid), void *ctx)
{
	hook = fn;
	hook_ctx = ctx;
}
unsigned sm_sa_mcast_mlids(const struct sm_sa *sa, uint16_t *mlids, unsigned max)
{
	(void)sa;
	if (max)
		mlids[0] = MLID;
	return 1;
}
int sm_sa_mcast_ports(const struct sm_sa *sa, uint16_t mlid, struct sm_port **ports, unsigned max)
{
	(void)sa;
	if (mlid != MLID)
		return -ENOENT;
	for (unsigned i = 0; i < NMEMBERS && i < max; i++)
		ports[i] = MEMBERS[i];
	return (int)NMEMBERS;
}

/* answer every queued SMP with its own data (an SMA echoes a Set) */
static void answer_all(void)
{
	for (unsigned i = 0; i < NQ; i++) {
		Q[i]->done(&SM, Q[i], 0, Q[i]->mad);
		free(Q[i]);
	}
	NQ = 0;
}

/* how many MFT Sets went to node n */
static unsigned mft_sets(const struct sm_node *n, uint32_t *mod)
{
	unsigned c = 0;

	for (unsigned i = 0; i < NQ; i++)
		if (Q[i]->node == n && sof_get16(Q[i]->mad + SOF_SMP_OFF_ATTR_ID) == SOF_ATTR_MFT) {
			c++;
			*mod = sof_get32(Q[i]->mad + SOF_SMP_OFF_ATTR_MOD);
		}
	return c;
}

static uint64_t held(const struct sm_node *n, uint16_t mlid)
{
	return n->sw->mft ? n->sw->mft[mlid - 0xc000][0] : 0;
}

static void group(uint16_t mlid, unsigned n, ...)
{
	va_list ap;

	va_start(ap, n);
	MLID = mlid;
	NMEMBERS = n;
	for (unsigned i = 0; i < n; i++)
		MEMBERS[i] = va_arg(ap, struct sm_port *);
	va_end(ap);
	hook(hook_ctx, mlid);
	CHECK_EQ(sm_mcast_run(&SM), 0);
}

TEST(trees_and_blocks)
{
	uint32_t mod = 0;

	CHECK_EQ(saf_build(&F), 0);
	memcpy(&SM.sn, &F.sn, sizeof(F.sn));
	sm_mcast_init(&SM);
	CHECK(hook != NULL);

	/* H1 and H3: both switches, and the link S1:3 - S2:3 */
	group(0xc000, 2, &F.h1->port[1], &F.h3->port[1]);
	CHECK_EQ(mft_sets(F.s1, &mod), 1u);
	CHECK_EQ(mod, 0u); /* position 0, block 0 */
	CHECK_EQ(mft_sets(F.s2, &mod), 1u);
	answer_all();
	CHECK_EQ(held(F.s1, 0xc000), 1ull << 1 | 1ull << 3);
	CHECK_EQ(held(F.s2, 0xc000), 1ull << 1 | 1ull << 3);
	CHECK(F.s1->sw->mft_top >= 0xc000 && F.s2->sw->mft_top >= 0xc000);

	/* nothing changed: nothing sent */
	group(0xc000, 2, &F.h1->port[1], &F.h3->port[1]);
	CHECK_EQ(NQ, 0u);

	/* H1 and H2 on S1 alone, in block 1: S2 keeps out of it */
	group(0xc021, 2, &F.h1->port[1], &F.h2->port[1]);
	CHECK_EQ(mft_sets(F.s1, &mod), 1u);
	CHECK_EQ(mod, 1u);
	CHECK_EQ(mft_sets(F.s2, &mod), 0u);
	answer_all();
	CHECK_EQ(held(F.s1, 0xc021), 1ull << 1 | 1ull << 2);
	CHECK_EQ(held(F.s2, 0xc021), 0ull);

	/* H3 leaves 0xc000: S1 keeps H1 only, S2 drops everything */
	group(0xc000, 1, &F.h1->port[1]);
	CHECK_EQ(mft_sets(F.s1, &mod), 1u);
	CHECK_EQ(mft_sets(F.s2, &mod), 1u);
	answer_all();
	CHECK_EQ(held(F.s1, 0xc000), 1ull << 1);
	CHECK_EQ(held(F.s2, 0xc000), 0ull);
	CHECK_EQ(held(F.s1, 0xc021), 1ull << 1 | 1ull << 2); /* untouched */

	/* the switch's own port 0 as a member (an SM or a switch agent) */
	group(0xc000, 2, &F.s2->port[0], &F.h2->port[1]);
	answer_all();
	CHECK_EQ(held(F.s2, 0xc000), 1ull << 0 | 1ull << 3);
	CHECK_EQ(held(F.s1, 0xc000), 1ull << 2 | 1ull << 3);
	sm_subnet_free(&SM.sn);
}

int main(void)
{
	RUN(trees_and_blocks);
	return test_summary();
}
