/*
 * The fabric's directed-route SMPs walked along their path (fabric/node.c,
 * dr_hop) against the same SMPs moved hop by hop as packets through the
 * queue (f->hop_by_hop): two fabrics of one topology, all simulated, get
 * the same SMPs from H1 as a program there sends them (fabric/sim.c), and
 * after each one every port's counters, port state and LID, every node's
 * SMP drops and the fabric's own counters must be equal. The SMPs: Gets
 * of 1 to 4 hops, a PortInfo Set (a route may move), a path out of a port
 * with no link, one of 63 hops back and forth between two switches (the
 * queue's hop limit cuts its answer on the way back), an answer the queue
 * sees while a trap waits in it.
 */
#include "fabric.h"
#include "harness.h"

#include <stdlib.h>
#include <unistd.h>

/*   H1 - S1 - S2 - S4 - H2, S1 - S3 - S4, H3 on S2 */
static const char tree[] = "Hca 1 \"H1\"\n[1] \"S1\"[1]\n\n"
			   "Switch 8 \"S1\"\n[1] \"H1\"[1]\n[2] \"S2\"[2]\n[3] \"S3\"[2]\n\n"
			   "Switch 8 \"S2\"\n[1] \"H3\"[1]\n[2] \"S1\"[2]\n[3] \"S4\"[2]\n\n"
			   "Switch 8 \"S3\"\n[2] \"S1\"[3]\n[3] \"S4\"[3]\n\n"
			   "Switch 8 \"S4\"\n[1] \"H2\"[1]\n[2] \"S2\"[3]\n[3] \"S3\"[3]\n\n"
			   "Hca 1 \"H2\"\n[1] \"S4\"[1]\n\nHca 1 \"H3\"\n[1] \"S2\"[1]\n";

static struct topo topo;
static struct fabric walk, hops;

static void setup(void)
{
	char path[] = "/tmp/test_fabric_dr.XXXXXX";
	int fd = mkstemp(path);

	CHECK(fd >= 0);
	CHECK_EQ(write(fd, tree, sizeof(tree) - 1), (ssize_t)(sizeof(tree) - 1));
	close(fd);
	CHECK_EQ(topo_load(&topo, path), 0);
	unlink(path);
	CHECK_EQ(fab_build(&walk, &topo, NULL, 0), 0);
	CHECK_EQ(fab_build(&hops, &topo, NULL, 0), 0);
	hops.hop_by_hop = true;
}

/* A DR SMP from a program on H1 along path[0..n-1] (IBA 14.2.2.1: the
 * initial path's entry i is the port hop i leaves by), as fab_sim_input
 * sends one: H1's first step, then a packet out of its port 1. */
static void send_dr(struct fabric *f, uint8_t method, uint16_t attr, uint32_t mod,
		    const uint8_t *path, unsigned n, const uint8_t *data)
{
	struct fab_node *h1 = fab_find(f, "H1");
	uint8_t mad[256], pkt[FAB_MAD_PKT_LEN];
	struct sof_dr_next nx;

	sof_smp_init(mad, true, method, attr, mod, 0x1234, 0);
	mad[SOF_SMP_OFF_HOP_CNT] = (uint8_t)n;
	for (unsigned i = 0; i < n; i++)
		mad[SOF_SMP_OFF_INIT_PATH + 1 + i] = path[i];
	if (data)
		memcpy(mad + SOF_SMP_OFF_DATA, data, 64);
	CHECK_EQ(sof_smp_dr_step(h1->m, mad, 0, false, 0, &nx), SOF_DR_OUT_PORT);
	fab_mad_pkt(pkt, 0xffff, 0xffff, 0, 0xffff, 0, 0, 0, mad);
	fab_xmit(f, h1, nx.port, pkt, sizeof(pkt), false);
	fab_run(f);
	CHECK(!f->qhead);
}

/* both fabrics got the same SMP: everything they count must agree */
static void check_same(void)
{
	CHECK_MEM(&walk.st, &hops.st, sizeof(walk.st));
	for (unsigned i = 0; i < walk.nnodes; i++) {
		const struct sof_node *a = walk.nodes[i]->m, *b = hops.nodes[i]->m;

		CHECK_MEM(a->drops, b->drops, sizeof(a->drops));
		for (unsigned p = 0; p <= a->nports; p++) {
			CHECK_MEM(&a->port[p].cnt, &b->port[p].cnt, sizeof(a->port[p].cnt));
			CHECK_EQ(a->port[p].state, b->port[p].state);
			CHECK_EQ(a->port[p].lid, b->port[p].lid);
		}
	}
}

static void both(uint8_t method, uint16_t attr, uint32_t mod, const uint8_t *path, unsigned n,
		 const uint8_t *data)
{
	send_dr(&walk, method, attr, mod, path, n, data);
	send_dr(&hops, method, attr, mod, path, n, data);
	check_same();
}

TEST(gets_counted_alike)
{
	static const uint8_t to_s1[] = {1}, to_h3[] = {1, 2, 1}, to_h2[] = {1, 3, 3, 1};
	uint64_t xmit;

	setup();
	both(SOF_METHOD_GET, SOF_ATTR_NODE_INFO, 0, to_s1, 1, NULL);
	both(SOF_METHOD_GET, SOF_ATTR_NODE_INFO, 0, to_h3, 3, NULL);
	both(SOF_METHOD_GET, SOF_ATTR_PORT_INFO, 1, to_h2, 4, NULL);
	/* 1 + 3 + 4 hops there and as many back, each a packet counted
	 * at both ends; the answers reach H1, where no program takes them */
	CHECK_EQ(walk.st.pkts, 16);
	CHECK_EQ(walk.st.smp_drop, 3);
	xmit = walk.nodes[topo_find(&topo, "S3")]->m->port[3].cnt.xmit_pkts;
	CHECK_EQ(xmit, 1);
	/* walked: only the first hop, out of H1, took a queue entry */
	CHECK_EQ(walk.nfree, 1);
	CHECK(hops.nfree > 1);
}

TEST(set_and_dead_end_alike)
{
	static const uint8_t to_s4[] = {1, 2, 3}, dead[] = {1, 8};
	uint8_t pi[64] = {0};

	/* PortInfo of S4's port 0: LID 9 (a route may move) */
	sof_put16(pi + 16, 9);
	both(SOF_METHOD_SET, SOF_ATTR_PORT_INFO, 0, to_s4, 3, pi);
	CHECK_EQ(walk.nodes[topo_find(&topo, "S4")]->m->port[0].lid, 9);
	/* out of S1's port 8, which has no link: a discard at S1 */
	both(SOF_METHOD_GET, SOF_ATTR_NODE_INFO, 0, dead, 2, NULL);
	CHECK_EQ(walk.nodes[topo_find(&topo, "S1")]->m->port[8].cnt.xmit_discards, 1);
}

TEST(hop_limit_alike)
{
	uint8_t path[63];
	uint64_t loops = walk.st.loop;

	/* H1 to S1, then S1 and S2 by their ports 2 back and forth: 63 hops
	 * there, and the answer's 64th hop on the way back is the queue's
	 * last (FAB_MAX_HOPS) */
	path[0] = 1;
	memset(path + 1, 2, sizeof(path) - 1);
	both(SOF_METHOD_GET, SOF_ATTR_NODE_INFO, 0, path, sizeof(path), NULL);
	CHECK_EQ(walk.st.loop, loops + 1);
}

TEST(answer_behind_a_trap_alike)
{
	static const uint8_t to_s2[] = {1, 2};
	uint8_t pi[64] = {0};

	/* S2 gets a LID and its SM's and sends trap 128 when a port goes down
	 * PortInfo Set of S2's port 1 to Disabled (IBA 14.2.5.6)
	 * queues the trap before the answer, which then goes as packets */
	uint8_t lft[64] = {0};

	sof_put16(pi + 16, 2); /* its LID */
	sof_put16(pi + 18, 1); /* MasterSMLID */
	both(SOF_METHOD_SET, SOF_ATTR_PORT_INFO, 0, to_s2, 2, pi);
	lft[1] = 2; /* LID 1 (the SM's) by S2's port 2 */
	both(SOF_METHOD_SET, SOF_ATTR_LFT, 0, to_s2, 2, lft);
	memset(pi, 0, sizeof(pi));
	pi[33] = SOF_PHYS_DISABLED << 4; /* PortPhysicalState */
	both(SOF_METHOD_SET, SOF_ATTR_PORT_INFO, 1, to_s2, 2, pi);
	CHECK_EQ(walk.st.traps, 1);
	fab_free(&walk);
	fab_free(&hops);
	topo_free(&topo);
}

int main(void)
{
	RUN(gets_counted_alike);
	RUN(set_and_dead_end_alike);
	RUN(hop_limit_alike);
	RUN(answer_behind_a_trap_alike);
	return test_summary();
}
