/*
 * softofed-sm's partitions (sm/partition.c): the parser of OpenSM's
 * partitions.conf syntax (names, P_Keys, flags, members and their
 * membership, comments and statements across lines; malformed lines
 * refused with their line number and what is wrong), then the P_KeyTable
 * Sets a programming round sends on the hand-built subnet of
 * sa_fabric.h (H1, H2 on S1; S1 - S2; H3 on S2; the SM on H1): default
 * partition first, full bit per membership, the SM's port always a full
 * member of the default, switch ports to CAs given their CA's table,
 * nothing sent again when the tables are already right, and nothing at
 * all without --partitions. Each port's blocks are read (Get) before any
 * Set: only blocks that differ are written, a P_Key a port holds keeps
 * its index, an entry of a partition not in the file is cleared.
 */
#include "harness.h"

#include "sa_fabric.h"
#include "sm_smp_stub.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>

static struct sm SM;
static struct saf F;

static void answer_all(void)
{
	for (unsigned i = 0; i < NQ; i++) {
		Q[i]->done(&SM, Q[i], 0, Q[i]->mad);
		free(Q[i]);
	}
	NQ = 0;
}

/* what the ports hold when asked (P_KeyTable GetResp): entry i of block
 * b of (n, port); the SMA's own default unless a test says otherwise */
static uint16_t had_default(const struct sm_node *n, unsigned port, unsigned b, unsigned i)
{
	(void)n;
	(void)port;
	return b == 0 && i == 0 ? 0xffff : 0;
}
static uint16_t (*HAD)(const struct sm_node *n, unsigned port, unsigned b, unsigned i) =
    had_default;

/* answer the P_KeyTable Gets queued (the Sets they lead to stay in Q) */
static unsigned read_all(void)
{
	struct sm_req *gets[64];
	unsigned ng = 0, nread = 0;

	for (unsigned i = 0; i < NQ; i++)
		gets[ng++] = Q[i];
	NQ = 0;
	for (unsigned i = 0; i < ng; i++) {
		struct sm_req *rq = gets[i];
		uint32_t mod = sof_get32(rq->mad + SOF_SMP_OFF_ATTR_MOD);
		uint8_t mad[256];

		if (rq->mad[3] != SOF_METHOD_GET) {
			Q[NQ++] = rq; /* not a Get: left queued */
			continue;
		}
		memcpy(mad, rq->mad, 256);
		for (unsigned k = 0; k < 32; k++)
			sof_put16(mad + SOF_SMP_OFF_DATA + 2 * k,
				  HAD(rq->node, rq->port, mod & 0xffff, k));
		rq->done(&SM, rq, 0, mad);
		free(rq);
		nread++;
	}
	return nread;
}

/* the error of parsing text, "" when it parsed */
static const char *parse_err(const char *text)
{
	static char err[256];
	struct sm_parts ps;
	int rc;

	err[0] = 0;
	rc = sm_part_parse(text, &ps, err, sizeof(err));
	if (!rc)
		sm_part_free(&ps);
	else if (rc != -EINVAL)
		snprintf(err, sizeof(err), "rc %d", rc);
	return err;
}

TEST(parse_good)
{
	struct sm_parts ps;
	char err[256];
	const char *text = "# OpenSM's example\n"
			   "Default=0x7fff, ipoib : ALL=full ;\n"
			   "\n"
			   "storage=0x8001, ipoib, mtu=4, rate=7 :\n"
			   "   0x0002c90300000101=full,   # H1\n"
			   "   0x0002c90300000201=limited, SELF ;\n"
			   "lim = 0x0002, defmember=full : ALL_CAS, ALL_SWITCHES=limited;\n"
			   "empty=0x0003:;\n";

	CHECK_EQ(sm_part_parse(text, &ps, err, sizeof(err)), 0);
	CHECK_EQ(ps.n, 4u);
	CHECK(!strcmp(ps.p[0].name, "Default"));
	CHECK_EQ(ps.p[0].pkey, 0x7fff);
	CHECK(ps.p[0].ipoib);
	CHECK_EQ(ps.p[0].nm, 1u);
	CHECK_EQ(ps.p[0].m[0].who, SM_PART_ALL);
	CHECK_EQ(ps.p[0].m[0].memb, SM_MEMB_FULL);
	CHECK(!strcmp(ps.p[1].name, "storage"));
	CHECK_EQ(ps.p[1].pkey, 0x0001); /* the membership bit goes per port */
	CHECK_EQ(ps.p[1].mtu, 4);
	CHECK_EQ(ps.p[1].rate, 7);
	CHECK_EQ(ps.p[1].nm, 3u);
	CHECK_EQ(ps.p[1].m[0].guid, SAF_H1 + 1);
	CHECK_EQ(ps.p[1].m[0].memb, SM_MEMB_FULL);
	CHECK_EQ(ps.p[1].m[1].memb, SM_MEMB_LIMITED);
	CHECK_EQ(ps.p[1].m[2].who, SM_PART_SELF);
	CHECK_EQ(ps.p[1].m[2].memb, SM_MEMB_LIMITED); /* OpenSM's default */
	CHECK(!ps.p[2].ipoib);
	CHECK_EQ(ps.p[2].m[0].who, SM_PART_ALL_CAS);
	CHECK_EQ(ps.p[2].m[0].memb, SM_MEMB_FULL); /* defmember=full */
	CHECK_EQ(ps.p[2].m[1].who, SM_PART_ALL_SWITCHES);
	CHECK_EQ(ps.p[2].m[1].memb, SM_MEMB_LIMITED);
	CHECK_EQ(ps.p[3].nm, 0u);
	sm_part_free(&ps);
	CHECK(!strcmp(parse_err("Default : ALL=both;"), ""));
	CHECK(!strcmp(parse_err(""), ""));
	CHECK(!strcmp(parse_err("# nothing\n;;\n"), ""));
}

TEST(parse_bad)
{
	static const struct {
		const char *text, *err;
	} cases[] = {
	    {"Default=0x7fff : ALL=full ;\nx=0x8001 ALL ;\n", "line 2: no ':'"},
	    {"Default=0x7fff : ALL=full\n", "line 1: statement without its closing ';'"},
	    {"\n\np=0x10000 : ALL ;", "line 3: bad P_Key '0x10000'"},
	    {"p=0x8000 : ALL ;", "line 1: bad P_Key '0x8000'"},
	    {"p=zz : ALL ;", "line 1: bad P_Key 'zz'"},
	    {"p : ALL ;", "line 1: partition 'p' has no P_Key"},
	    {"=0x8001 : ALL ;", "line 1: partition name missing"},
	    {"a b=0x8001 : ALL ;", "line 1: bad character ' '"},
	    {"p=0x8001, fast : ALL ;", "line 1: unknown flag 'fast'"},
	    {"p=0x8001, mtu=9 : ALL ;", "line 1: bad flag 'mtu=9'"},
	    {"p=0x8001, defmember=half : ALL ;", "line 1: membership 'half'"},
	    {"p=0x8001 :\n ALL=fulll ;", "line 2: membership 'fulll'"},
	    {"p=0x8001 :\n\n  nobody ;", "line 3: member 'nobody' is not a port GUID"},
	    {"p=0x8001 : ALL,, SELF ;", "line 1: empty member"},
	    {"p=0x8001 : ALL, ;", "line 1: a ',' with no member after it"},
	    {"p=0x8001 : ALL ;\nq=0x0001 : ALL ;", "line 2: P_Key 0x0001 of 'q' is also 'p''s"},
	    {"p=0x8001 : ALL ;\np=0x0002 : ALL ;", "line 2: partition 'p' defined twice"},
	    {"p=0x8001 : ALL : SELF ;", "line 1: a second ':'"},
	};

	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *e = parse_err(cases[i].text);

		if (strncmp(e, cases[i].err, strlen(cases[i].err)))
			test_fail(__FILE__, __LINE__, "case %u: got \"%s\", want \"%s...\"", i, e,
				  cases[i].err);
	}
}

/* the table the last Set to port (node n, port num) carried, or NULL */
static const uint8_t *table_sent(const struct sm_node *n, unsigned num)
{
	for (unsigned i = 0; i < NQ; i++)
		if (Q[i]->node == n && Q[i]->port == num &&
		    sof_get16(Q[i]->mad + SOF_SMP_OFF_ATTR_ID) == SOF_ATTR_PKEY_TABLE)
			return Q[i]->mad + SOF_SMP_OFF_DATA;
	return NULL;
}

TEST(tables)
{
	char err[256];
	const uint8_t *t;
	struct sm_node *nodes[5];

	memset(&SM, 0, sizeof(SM));
	CHECK_EQ(saf_build(&F), 0);
	memcpy(&SM.sn, &F.sn, sizeof(F.sn));
	nodes[0] = F.h1, nodes[1] = F.h2, nodes[2] = F.h3, nodes[3] = F.s1, nodes[4] = F.s2;
	for (unsigned i = 0; i < 5; i++)
		nodes[i]->partition_cap = 16;
	F.s1->sw->partition_enf_cap = 16; /* S2 cannot enforce */

	/* without --partitions: no table is written */
	sm_part_program(&SM);
	CHECK_EQ(NQ, 0u);

	SM.partitions = "test";
	CHECK_EQ(sm_part_parse("Default=0x7fff : ALL_CAS=limited, ALL_SWITCHES=full ;\n"
			       "p1=0x8001, ipoib : 0x0002c90300000201=full, 0x0002c90300000301=limited ;\n"
			       "p2=0x0002 : ALL_CAS=limited ;\n",
			       &SM.parts, err, sizeof(err)),
		 0);
	sm_part_program(&SM);
	/* first contact: every port's block read first, nothing Set yet */
	CHECK_EQ(NQ, 7u);
	for (unsigned i = 0; i < NQ; i++)
		CHECK_EQ(Q[i]->mad[3], SOF_METHOD_GET);
	CHECK_EQ(read_all(), 7u);
	CHECK_EQ(SM.pkey_read, 7u);
	/* H1 (the SM): default full although ALL_CAS says limited */
	t = table_sent(F.h1, 1);
	CHECK(t != NULL);
	if (t) {
		CHECK_EQ(sof_get16(t), 0xffff);
		CHECK_EQ(sof_get16(t + 2), 0x0002);
		CHECK_EQ(sof_get16(t + 4), 0);
		CHECK_EQ(sof_get32(Q[0]->mad + SOF_SMP_OFF_ATTR_MOD), 0u);
	}
	t = table_sent(F.h2, 1);
	CHECK(t != NULL);
	if (t) {
		CHECK_EQ(sof_get16(t), 0x7fff);
		CHECK_EQ(sof_get16(t + 2), 0x8001);
		CHECK_EQ(sof_get16(t + 4), 0x0002);
	}
	t = table_sent(F.h3, 1);
	CHECK(t != NULL);
	if (t) {
		CHECK_EQ(sof_get16(t), 0x7fff);
		CHECK_EQ(sof_get16(t + 2), 0x0001);
	}
	/* S1's and S2's port 0 hold what the file gives them (the default,
	 * full): not written */
	CHECK(table_sent(F.s1, 0) == NULL);
	CHECK(table_sent(F.s2, 0) == NULL);
	CHECK_EQ(F.s1->port[0].pkeys_set, 1);
	CHECK_EQ(F.s1->port[0].pkeys[0], 0xffff);
	/* S1's port 2 (to H2) enforces H2's table; port 3 (to S2) nothing;
	 * S2 has no PartitionEnforcementCap: its port 1 nothing */
	t = table_sent(F.s1, 2);
	CHECK(t != NULL);
	if (t) {
		CHECK_EQ(sof_get16(t + 2), 0x8001);
		for (unsigned i = 0; i < NQ; i++)
			if (Q[i]->node == F.s1 && Q[i]->port == 2)
				CHECK_EQ(sof_get32(Q[i]->mad + SOF_SMP_OFF_ATTR_MOD), 2u << 16);
	}
	CHECK(sm_part_enforce(&SM, &F.s1->port[2]));
	CHECK(!sm_part_enforce(&SM, &F.s1->port[3]));
	CHECK(!sm_part_enforce(&SM, &F.s2->port[1]));
	CHECK(table_sent(F.s1, 3) == NULL);
	CHECK(table_sent(F.s2, 1) == NULL);
	CHECK_EQ(NQ, 5u); /* H1 H2 H3, S1 1 2 */
	CHECK_EQ(SM.pkey_blocks, 5u);
	answer_all();
	CHECK(F.h2->port[1].pkeys_set);
	CHECK_EQ(F.h2->port[1].pkeys[1], 0x8001);
	/* the tables are right: nothing is sent again */
	sm_part_program(&SM);
	CHECK_EQ(NQ, 0u);
	sm_part_free(&SM.parts);
	sm_subnet_free(&SM.sn);
}

/* the table block `block` of the last Set to (n, num), or NULL */
static const uint8_t *block_sent(const struct sm_node *n, unsigned num, unsigned block)
{
	for (unsigned i = 0; i < NQ; i++)
		if (Q[i]->node == n && Q[i]->port == num &&
		    sof_get16(Q[i]->mad + SOF_SMP_OFF_ATTR_ID) == SOF_ATTR_PKEY_TABLE &&
		    (sof_get32(Q[i]->mad + SOF_SMP_OFF_ATTR_MOD) & 0xffff) == block)
			return Q[i]->mad + SOF_SMP_OFF_DATA;
	return NULL;
}

/* S1's port 0 holds a stale 0x8abc in block 1 (a previous SM's) */
static uint16_t had_stale(const struct sm_node *n, unsigned port, unsigned b, unsigned i)
{
	if (n == F.s1 && port == 0 && b == 1 && i == 5)
		return 0x8abc;
	return had_default(n, port, b, i);
}

/* H2 holds p2 at index 1, an unknown 0x0777 at 2, p1 at 3 */
static uint16_t had_h2(const struct sm_node *n, unsigned port, unsigned b, unsigned i)
{
	static const uint16_t t[4] = {0xffff, 0x8002, 0x0777, 0x8001};

	if (n == F.h2 && b == 0 && i < 4)
		return t[i];
	return had_default(n, port, b, i);
}

/* the table read first: H2's p1 and p2 stay at their indexes, 0x0777 (in
 * no partition) is cleared and p3 takes its index; a port whose table is
 * right gets no Set */
TEST(tables_read)
{
	char err[256];
	const uint8_t *t;

	memset(&SM, 0, sizeof(SM));
	CHECK_EQ(saf_build(&F), 0);
	memcpy(&SM.sn, &F.sn, sizeof(F.sn));
	SM.partitions = "test";
	CHECK_EQ(sm_part_parse("Default=0x7fff : ALL=full ;\n"
			       "p1=0x0001 : ALL_CAS=full ;\n"
			       "p2=0x0002 : ALL_CAS=full ;\n"
			       "p3=0x0003 : ALL_CAS=full ;\n",
			       &SM.parts, err, sizeof(err)),
		 0);
	HAD = had_h2;
	sm_part_program(&SM);
	read_all();
	HAD = had_default;
	t = block_sent(F.h2, 1, 0);
	CHECK(t != NULL);
	if (t) {
		CHECK_EQ(sof_get16(t), 0xffff);
		CHECK_EQ(sof_get16(t + 2), 0x8002);
		CHECK_EQ(sof_get16(t + 4), 0x8003);
		CHECK_EQ(sof_get16(t + 6), 0x8001);
		CHECK_EQ(sof_get16(t + 8), 0);
	}
	/* H1, H3 in file order after the default */
	t = block_sent(F.h3, 1, 0);
	CHECK(t != NULL);
	if (t) {
		CHECK_EQ(sof_get16(t + 2), 0x8001);
		CHECK_EQ(sof_get16(t + 6), 0x8003);
	}
	CHECK(block_sent(F.s1, 0, 0) == NULL);
	answer_all();
	CHECK_EQ(F.h2->port[1].pkeys[2], 0x8003);
	sm_part_program(&SM);
	CHECK_EQ(NQ, 0u);
	sm_part_free(&SM.parts);
	sm_subnet_free(&SM.sn);
}

/* 40 partitions besides the default: a second block (IBA 14.2.5.7) where
 * PartitionCap allows it, the first block alone where it does not */
TEST(tables_blocks)
{
	static char text[8192];
	char err[256];
	const uint8_t *t;
	size_t len;

	memset(&SM, 0, sizeof(SM));
	CHECK_EQ(saf_build(&F), 0);
	memcpy(&SM.sn, &F.sn, sizeof(F.sn));
	F.h3->partition_cap = 16;
	F.s1->sw->partition_enf_cap = 64;
	len = (size_t)snprintf(text, sizeof(text), "Default=0x7fff : ALL=full ;\n");
	for (unsigned i = 1; i <= 40; i++)
		len +=
		    (size_t)snprintf(text + len, sizeof(text) - len, "p%u=0x%04x : ALL_CAS=%s ;\n",
				     i, 0x100 + i, i % 2 ? "full" : "limited");
	SM.partitions = "test";
	CHECK_EQ(sm_part_parse(text, &SM.parts, err, sizeof(err)), 0);
	HAD = had_stale;
	sm_part_program(&SM);
	read_all();
	HAD = had_default;
	/* H2: 41 entries, block 0 the default and p1..p31, block 1 p32..p40 */
	t = block_sent(F.h2, 1, 0);
	CHECK(t != NULL);
	if (t) {
		CHECK_EQ(sof_get16(t), 0xffff);
		CHECK_EQ(sof_get16(t + 2), 0x8101);
		CHECK_EQ(sof_get16(t + 62), 0x8000 | 0x11f);
	}
	t = block_sent(F.h2, 1, 1);
	CHECK(t != NULL);
	if (t) {
		CHECK_EQ(sof_get16(t), 0x0120);	     /* p32, limited */
		CHECK_EQ(sof_get16(t + 16), 0x0128); /* p40 */
		CHECK_EQ(sof_get16(t + 18), 0);
	}
	/* S1's port 2 to H2: H2's block 1 at modifier (2 << 16) | 1 */
	t = block_sent(F.s1, 2, 1);
	CHECK(t != NULL);
	if (t)
		CHECK_EQ(sof_get16(t + 16), 0x0128);
	/* H3 holds 16: block 0 with its first 16, no block 1 */
	t = block_sent(F.h3, 1, 0);
	CHECK(t != NULL);
	if (t) {
		CHECK_EQ(sof_get16(t + 30), 0x8000 | 0x10f);
		CHECK_EQ(sof_get16(t + 32), 0);
	}
	CHECK(block_sent(F.h3, 1, 1) == NULL);
	/* the switches' port 0 are in the default only: S1's block 1, where
	 * a previous SM left an entry, is cleared; S2's, empty, not written */
	t = block_sent(F.s1, 0, 1);
	CHECK(t != NULL);
	if (t)
		CHECK_EQ(sof_get16(t), 0);
	CHECK(block_sent(F.s1, 0, 0) == NULL);
	CHECK(block_sent(F.s2, 0, 1) == NULL);
	answer_all();
	CHECK_EQ(F.h2->port[1].pkeys_set, 3);
	CHECK_EQ(F.h2->port[1].pkeys[40], 0x0128);
	sm_part_program(&SM);
	CHECK_EQ(NQ, 0u);
	/* down to 10 partitions: block 1, written before, is cleared */
	sm_part_free(&SM.parts);
	text[0] = 0;
	len = (size_t)snprintf(text, sizeof(text), "Default=0x7fff : ALL=full ;\n");
	for (unsigned i = 1; i <= 10; i++)
		len += (size_t)snprintf(text + len, sizeof(text) - len, "p%u=0x%04x : ALL_CAS ;\n",
					i, 0x100 + i);
	CHECK_EQ(sm_part_parse(text, &SM.parts, err, sizeof(err)), 0);
	sm_part_program(&SM);
	t = block_sent(F.h2, 1, 1);
	CHECK(t != NULL);
	if (t)
		CHECK_EQ(sof_get16(t), 0);
	answer_all();
	sm_part_program(&SM);
	CHECK_EQ(NQ, 0u);
	sm_part_free(&SM.parts);
	sm_subnet_free(&SM.sn);
}

int main(void)
{
	RUN(parse_good);
	RUN(parse_bad);
	RUN(tables);
	RUN(tables_blocks);
	RUN(tables_read);
	return test_summary();
}
