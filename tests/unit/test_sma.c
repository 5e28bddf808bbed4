/*
 * The SMA, PMA and congestion control agent over the node model
 * (mad/smp.h, mad/sma.c, mad/pma.c, mad/cc.c),
 * without a daemon: attributes at IBA's byte offsets, a directed-route
 * walk through a small fabric of models (H1 - S1 - H2) both ways, with a
 * LID-routed end and a LID-routed start, bad hop pointers and counts and
 * paths dropped and counted, PortInfo state transitions and their
 * rejections, M_Key protection levels, P_Key / SL2VL / VLArb / GUIDInfo /
 * LFT / MFT / SwitchInfo round trips, the PMA's counters and their reset.
 */
#include "harness.h"

#include "smp.h"

#include <stdlib.h>

#define GUID_H1 0x0002c90300000100ull
#define GUID_S1 0x0002c90300000200ull
#define GUID_H2 0x0002c90300000300ull

static struct sof_node *h1, *s1, *h2;

static void fabric_new(void)
{
	h1 = sof_node_new(SOF_NODE_CA, 1, GUID_H1);
	s1 = sof_node_new(SOF_NODE_SWITCH, 8, GUID_S1);
	h2 = sof_node_new(SOF_NODE_CA, 1, GUID_H2);
	CHECK(h1 && s1 && h2);
	snprintf(h2->desc, sizeof(h2->desc), "H2 HCA-1");
	CHECK(sof_port_link_up(h1, 1));
	CHECK(sof_port_link_up(s1, 1));
	CHECK(sof_port_link_up(s1, 2));
	CHECK(sof_port_link_up(h2, 1));
}

static void fabric_free(void)
{
	sof_node_free(h1);
	sof_node_free(s1);
	sof_node_free(h2);
	h1 = s1 = h2 = NULL;
}

static uint16_t status_of(const uint8_t *mad) { return sof_get16(mad + SOF_SMP_OFF_STATUS); }

/* a Get/Set straight to node's SMA on in_port; returns the status */
static uint16_t sma(struct sof_node *n, unsigned in_port, uint8_t *mad)
{
	enum sof_sma_result r = sof_sma_process(n, in_port, mad, SOF_SMP_LEN, NULL);

	CHECK_EQ(r, SOF_SMA_REPLY);
	CHECK_EQ(mad[3], SOF_METHOD_GET_RESP);
	return status_of(mad);
}

TEST(node_info_ca_and_switch)
{
	uint8_t mad[SOF_SMP_LEN];
	const uint8_t *d = mad + SOF_SMP_OFF_DATA;

	fabric_new();
	sof_smp_init(mad, false, SOF_METHOD_GET, SOF_ATTR_NODE_INFO, 0, 1, 0);
	CHECK_EQ(sma(h1, 1, mad), 0);
	CHECK_EQ(d[0], 1);
	CHECK_EQ(d[2], SOF_NODE_CA);
	CHECK_EQ(d[3], 1);
	CHECK_EQ(sof_get64(d + 12), GUID_H1);
	CHECK_EQ(sof_get64(d + 20), GUID_H1 + 1); /* port GUID */
	CHECK_EQ(sof_get16(d + 28), SOF_NODE_PKEYS);
	CHECK_EQ(d[36], 1); /* LocalPortNum */

	sof_smp_init(mad, false, SOF_METHOD_GET, SOF_ATTR_NODE_INFO, 0, 2, 0);
	CHECK_EQ(sma(s1, 5, mad), 0);
	CHECK_EQ(d[2], SOF_NODE_SWITCH);
	CHECK_EQ(d[3], 8);
	CHECK_EQ(sof_get64(d + 20), GUID_S1);
	CHECK_EQ(sof_get16(d + 28), SOF_SW_PORT0_PKEYS); /* one block: one Get */
	CHECK_EQ(d[36], 5);
	CHECK_EQ(sof_get64(mad + SOF_SMP_OFF_TID), 2);

	sof_smp_init(mad, false, SOF_METHOD_SET, SOF_ATTR_NODE_INFO, 0, 3, 0);
	CHECK_EQ(sma(s1, 5, mad), SOF_STATUS_BAD_ATTR);
	sof_smp_init(mad, false, SOF_METHOD_GET, 0x00ff, 0, 3, 0);
	CHECK_EQ(sma(s1, 5, mad), SOF_STATUS_BAD_ATTR);
	sof_smp_init(mad, false, 0x04, SOF_ATTR_NODE_INFO, 0, 3, 0);
	CHECK_EQ(sma(s1, 5, mad), SOF_STATUS_BAD_METHOD);
	sof_smp_init(mad, false, SOF_METHOD_GET, SOF_ATTR_NODE_INFO, 0, 3, 0);
	mad[2] = 2;
	CHECK_EQ(sma(s1, 5, mad), SOF_STATUS_BAD_VERSION);
	sof_smp_init(mad, false, SOF_METHOD_GET, SOF_ATTR_SWITCH_INFO, 0, 3, 0);
	CHECK_EQ(sma(h1, 1, mad), SOF_STATUS_BAD_ATTR);
	fabric_free();
}

/* carry a DR SMP from node to node as the fabric would; returns the node
 * that took it locally, following LID-routed legs by LID */
static struct sof_node *node_by_lid(uint16_t lid)
{
	if (sof_port_has_lid(&h1->port[1], lid))
		return h1;
	if (sof_port_has_lid(&s1->port[0], lid))
		return s1;
	if (sof_port_has_lid(&h2->port[1], lid))
		return h2;
	return NULL;
}

/* S1's port p leads to: 1 H1, 2 H2 */
static struct sof_node *peer(struct sof_node *n, unsigned port, unsigned *peer_port)
{
	if (n == s1) {
		*peer_port = 1;
		return port == 1 ? h1 : port == 2 ? h2 : NULL;
	}
	*peer_port = n == h1 ? 1 : 2;
	return s1;
}

/* run steps from n (in_port, lid_routed) until LOCAL or DISCARD */
static struct sof_node *carry(struct sof_node *n, uint8_t *mad, unsigned in_port, bool lid_routed,
			      uint16_t reply_lid, int *hops)
{
	struct sof_dr_next nx;

	for (*hops = 0; *hops < 16; (*hops)++) {
		switch (sof_smp_dr_step(n, mad, in_port, lid_routed, reply_lid, &nx)) {
		case SOF_DR_LOCAL:
			return n;
		case SOF_DR_DISCARD:
			return NULL;
		case SOF_DR_OUT_PORT:
			n = peer(n, nx.port, &in_port);
			lid_routed = false;
			break;
		case SOF_DR_OUT_LID:
			/* one LID-routed leg: the switch or the HCA behind it */
			if (n == s1) {
				n = node_by_lid(nx.lid);
				in_port = 1;
			} else {
				in_port = n == h1 ? 1 : 2;
				n = s1;
			}
			lid_routed = true;
			break;
		}
		if (!n)
			return NULL;
	}
	return NULL;
}

TEST(dr_walk_both_ways)
{
	uint8_t mad[SOF_SMP_LEN];
	int hops;

	fabric_new();
	/* H1's SM asks H2 (path 1,2) for NodeInfo */
	sof_smp_init(mad, true, SOF_METHOD_GET, SOF_ATTR_NODE_INFO, 0, 7, 0);
	mad[SOF_SMP_OFF_HOP_CNT] = 2;
	mad[SOF_SMP_OFF_INIT_PATH + 1] = 1;
	mad[SOF_SMP_OFF_INIT_PATH + 2] = 2;
	CHECK(carry(h1, mad, 0, false, 0, &hops) == h2);
	CHECK_EQ(hops, 2);
	CHECK_EQ(mad[SOF_SMP_OFF_HOP_PTR], 3);
	CHECK_EQ(mad[SOF_SMP_OFF_RET_PATH + 1], 1);
	CHECK_EQ(mad[SOF_SMP_OFF_RET_PATH + 2], 1);
	CHECK_EQ(sma(h2, 1, mad), SOF_SMP_DIRECTION);
	CHECK_EQ(sof_get64(mad + SOF_SMP_OFF_DATA + 12), GUID_H2);
	CHECK(carry(h2, mad, 0, false, 0, &hops) == h1);
	CHECK_EQ(hops, 2);
	CHECK_EQ(mad[SOF_SMP_OFF_HOP_PTR], 0);
	CHECK_EQ(sof_get64(mad + SOF_SMP_OFF_DATA + 12), GUID_H2);

	/* the switch itself, one hop: NodeDescription of S1 */
	sof_smp_init(mad, true, SOF_METHOD_GET, SOF_ATTR_NODE_INFO, 0, 8, 0);
	mad[SOF_SMP_OFF_HOP_CNT] = 1;
	mad[SOF_SMP_OFF_INIT_PATH + 1] = 1;
	CHECK(carry(h1, mad, 0, false, 0, &hops) == s1);
	CHECK_EQ(sma(s1, 1, mad), SOF_SMP_DIRECTION);
	CHECK_EQ(mad[SOF_SMP_OFF_DATA + 36], 1); /* it came in on port 1 */
	CHECK(carry(s1, mad, 0, false, 0, &hops) == h1);
	fabric_free();
}

TEST(dr_lid_routed_ends)
{
	uint8_t mad[SOF_SMP_LEN];
	int hops;

	fabric_new();
	h1->port[1].lid = 1;
	s1->port[0].lid = 2;
	h2->port[1].lid = 3;
	/* directed to S1, then LID-routed to H2's LID 3 */
	sof_smp_init(mad, true, SOF_METHOD_GET, SOF_ATTR_NODE_DESC, 0, 9, 0);
	mad[SOF_SMP_OFF_HOP_CNT] = 1;
	mad[SOF_SMP_OFF_INIT_PATH + 1] = 1;
	sof_put16(mad + SOF_SMP_OFF_DR_DLID, 3);
	CHECK(carry(h1, mad, 0, false, 0, &hops) == h2);
	CHECK_EQ(mad[SOF_SMP_OFF_HOP_PTR], 2);
	CHECK_EQ(sma(h2, 1, mad), SOF_SMP_DIRECTION);
	CHECK(!memcmp(mad + SOF_SMP_OFF_DATA, "H2 HCA-1", 9));
	/* back LID-routed to S1 (the request's LRH SLID), then directed */
	CHECK(carry(h2, mad, 0, true, 2, &hops) == h1);
	CHECK_EQ(mad[SOF_SMP_OFF_HOP_PTR], 0);

	/* LID-routed start: from H1's LID 1 to S1 by LID, then directed
	 * out port 2 to H2; back directed to S1, then LID-routed to 1 */
	sof_smp_init(mad, true, SOF_METHOD_GET, SOF_ATTR_NODE_INFO, 0, 10, 0);
	mad[SOF_SMP_OFF_HOP_CNT] = 1;
	mad[SOF_SMP_OFF_INIT_PATH + 1] = 2;
	sof_put16(mad + SOF_SMP_OFF_DR_SLID, 1);
	CHECK(carry(s1, mad, 1, true, 0, &hops) == h2);
	CHECK_EQ(sma(h2, 1, mad), SOF_SMP_DIRECTION);
	CHECK(carry(h2, mad, 0, false, 0, &hops) == h1);
	CHECK_EQ(mad[SOF_SMP_OFF_HOP_PTR], 0);
	CHECK_EQ(sof_get64(mad + SOF_SMP_OFF_DATA + 12), GUID_H2);
	fabric_free();
}

TEST(dr_bad_paths_dropped_and_counted)
{
	uint8_t mad[SOF_SMP_LEN];
	struct sof_dr_next nx;

	fabric_new();
	/* hop count 64 */
	sof_smp_init(mad, true, SOF_METHOD_GET, SOF_ATTR_NODE_INFO, 0, 1, 0);
	mad[SOF_SMP_OFF_HOP_CNT] = 64;
	CHECK_EQ(sof_smp_dr_step(s1, mad, 1, false, 0, &nx), SOF_DR_DISCARD);
	CHECK_EQ(s1->drops[SOF_SMP_DROP_HOP_CNT], 1);
	/* hop pointer beyond hop count + 1 */
	mad[SOF_SMP_OFF_HOP_CNT] = 2;
	mad[SOF_SMP_OFF_HOP_PTR] = 9;
	CHECK_EQ(sof_smp_dr_step(s1, mad, 1, false, 0, &nx), SOF_DR_DISCARD);
	/* hop pointer 0 on a packet that came directed */
	mad[SOF_SMP_OFF_HOP_PTR] = 0;
	CHECK_EQ(sof_smp_dr_step(s1, mad, 1, false, 0, &nx), SOF_DR_DISCARD);
	CHECK_EQ(s1->drops[SOF_SMP_DROP_HOP_PTR], 2);
	/* a path naming port 0 and one beyond the switch's ports */
	mad[SOF_SMP_OFF_HOP_PTR] = 1;
	mad[SOF_SMP_OFF_INIT_PATH + 2] = 0;
	CHECK_EQ(sof_smp_dr_step(s1, mad, 1, false, 0, &nx), SOF_DR_DISCARD);
	mad[SOF_SMP_OFF_HOP_PTR] = 1;
	mad[SOF_SMP_OFF_INIT_PATH + 2] = 9;
	CHECK_EQ(sof_smp_dr_step(s1, mad, 1, false, 0, &nx), SOF_DR_DISCARD);
	CHECK_EQ(s1->drops[SOF_SMP_DROP_PATH], 2);
	/* an HCA asked to forward */
	mad[SOF_SMP_OFF_HOP_PTR] = 1;
	mad[SOF_SMP_OFF_INIT_PATH + 2] = 1;
	CHECK_EQ(sof_smp_dr_step(h2, mad, 1, false, 0, &nx), SOF_DR_DISCARD);
	CHECK_EQ(h2->drops[SOF_SMP_DROP_NOT_SWITCH], 1);
	/* an HCA at the end with a LID-routed rest to go */
	mad[SOF_SMP_OFF_HOP_CNT] = 1;
	mad[SOF_SMP_OFF_HOP_PTR] = 1;
	sof_put16(mad + SOF_SMP_OFF_DR_DLID, 77);
	CHECK_EQ(sof_smp_dr_step(h2, mad, 1, false, 0, &nx), SOF_DR_DISCARD);
	CHECK_EQ(h2->drops[SOF_SMP_DROP_NOT_SWITCH], 2);
	/* a short MAD and a wrong class never reach an attribute */
	sof_smp_init(mad, true, SOF_METHOD_GET, SOF_ATTR_NODE_INFO, 0, 1, 0);
	CHECK_EQ(sof_sma_process(s1, 1, mad, 255, NULL), SOF_SMA_DROP);
	mad[1] = 0x02;
	CHECK_EQ(sof_sma_process(s1, 1, mad, SOF_SMP_LEN, NULL), SOF_SMA_DROP);
	mad[1] = SOF_MCLASS_SMP_DR;
	mad[0] = 2;
	CHECK_EQ(sof_sma_process(s1, 1, mad, SOF_SMP_LEN, NULL), SOF_SMA_DROP);
	CHECK_EQ(s1->drops[SOF_SMP_DROP_LEN], 1);
	CHECK_EQ(s1->drops[SOF_SMP_DROP_CLASS], 1);
	CHECK_EQ(s1->drops[SOF_SMP_DROP_VERSION], 1);
	/* a GetResp nobody waits for */
	sof_smp_init(mad, true, SOF_METHOD_GET_RESP, SOF_ATTR_NODE_INFO, 0, 1, 0);
	CHECK_EQ(sof_sma_process(s1, 1, mad, SOF_SMP_LEN, NULL), SOF_SMA_DROP);
	CHECK_EQ(s1->drops[SOF_SMP_DROP_RESPONSE], 1);
	s1->sm_agent = true;
	CHECK_EQ(sof_sma_process(s1, 1, mad, SOF_SMP_LEN, NULL), SOF_SMA_PASS);
	fabric_free();
}

static void port_info_set(uint8_t *mad, unsigned port, unsigned state, unsigned phys, uint16_t lid,
			  uint64_t mkey)
{
	uint8_t *d = mad + SOF_SMP_OFF_DATA;

	sof_smp_init(mad, false, SOF_METHOD_SET, SOF_ATTR_PORT_INFO, port, 5, mkey);
	sof_put64(d, mkey);
	sof_put16(d + 16, lid);
	sof_put16(d + 18, 1);
	d[32] = (uint8_t)state;
	d[33] = (uint8_t)(phys << 4);
}

TEST(port_info_states)
{
	uint8_t mad[SOF_SMP_LEN];
	const uint8_t *d = mad + SOF_SMP_OFF_DATA;
	unsigned ev;

	fabric_new();
	CHECK(sof_port_link_down(h1, 1));
	/* Down: Armed refused, nothing changes */
	port_info_set(mad, 1, SOF_PORT_ARMED, 0, 9, 0);
	CHECK_EQ(sma(h1, 1, mad), SOF_STATUS_BAD_VALUE);
	CHECK_EQ(d[32] & 0xf, SOF_PORT_DOWN);
	CHECK_EQ(sof_get16(d + 16), 0);
	CHECK_EQ(h1->port[1].cnt.link_downed, 1);
	CHECK(sof_port_link_up(h1, 1));
	/* Init: LID set, Active refused */
	port_info_set(mad, 0, SOF_PORT_NOP, 0, 9, 0);
	CHECK_EQ(sof_sma_process(h1, 1, mad, SOF_SMP_LEN, &ev), SOF_SMA_REPLY);
	CHECK_EQ(status_of(mad), 0);
	CHECK(ev & SOF_SMA_EV_LID);
	CHECK_EQ(h1->port[1].lid, 9);
	CHECK_EQ(d[32] & 0xf, SOF_PORT_INIT);
	CHECK_EQ(d[33] >> 4, SOF_PHYS_LINKUP);
	port_info_set(mad, 1, SOF_PORT_ACTIVE, 0, 9, 0);
	CHECK_EQ(sma(h1, 1, mad), SOF_STATUS_BAD_VALUE);
	/* what was read, written back (Init, LinkUp): no change, no error */
	port_info_set(mad, 1, SOF_PORT_INIT, SOF_PHYS_LINKUP, 9, 0);
	CHECK_EQ(sma(h1, 1, mad), 0);
	CHECK_EQ(h1->port[1].state, SOF_PORT_INIT);
	/* other physical states cannot be set */
	port_info_set(mad, 1, 0, SOF_PHYS_TRAINING, 9, 0);
	CHECK_EQ(sma(h1, 1, mad), SOF_STATUS_BAD_VALUE);
	port_info_set(mad, 1, SOF_PORT_ARMED, 0, 9, 0);
	CHECK_EQ(sof_sma_process(h1, 1, mad, SOF_SMP_LEN, &ev), SOF_SMA_REPLY);
	CHECK_EQ(status_of(mad), 0);
	CHECK(ev & SOF_SMA_EV_STATE);
	CHECK_EQ(h1->port[1].state, SOF_PORT_ARMED);
	port_info_set(mad, 1, SOF_PORT_ACTIVE, 0, 9, 0);
	CHECK_EQ(sma(h1, 1, mad), 0);
	CHECK_EQ(h1->port[1].state, SOF_PORT_ACTIVE);
	port_info_set(mad, 1, SOF_PORT_ARMED, 0, 9, 0);
	CHECK_EQ(sma(h1, 1, mad), SOF_STATUS_BAD_VALUE);
	/* LID in the multicast range refused */
	port_info_set(mad, 1, 0, 0, 0xc001, 0);
	CHECK_EQ(sma(h1, 1, mad), SOF_STATUS_BAD_VALUE);
	CHECK_EQ(h1->port[1].lid, 9);

	/* switch port disabled (ibportstate disable), trap 128 due */
	s1->sw.port_state_change = false;
	port_info_set(mad, 2, 0, SOF_PHYS_DISABLED, 0, 0);
	CHECK_EQ(sof_sma_process(s1, 1, mad, SOF_SMP_LEN, &ev), SOF_SMA_REPLY);
	CHECK_EQ(status_of(mad), 0);
	CHECK(ev & SOF_SMA_EV_DISABLE);
	CHECK(ev & SOF_SMA_EV_TRAP_128);
	CHECK_EQ(s1->port[2].state, SOF_PORT_DOWN);
	CHECK_EQ(s1->port[2].phys, SOF_PHYS_DISABLED);
	CHECK(!sof_port_link_up(s1, 2)); /* stays down while disabled */
	port_info_set(mad, 2, 0, SOF_PHYS_POLLING, 0, 0);
	CHECK_EQ(sof_sma_process(s1, 1, mad, SOF_SMP_LEN, &ev), SOF_SMA_REPLY);
	CHECK(ev & SOF_SMA_EV_ENABLE);
	CHECK(sof_port_link_up(s1, 2));
	CHECK_EQ(s1->port[2].state, SOF_PORT_INIT);
	/* SwitchInfo shows PortStateChange; writing 1 clears it */
	sof_smp_init(mad, false, SOF_METHOD_GET, SOF_ATTR_SWITCH_INFO, 0, 1, 0);
	CHECK_EQ(sma(s1, 1, mad), 0);
	CHECK_EQ(d[11] & 0x04, 0x04);
	mad[3] = SOF_METHOD_SET;
	CHECK_EQ(sma(s1, 1, mad), 0);
	CHECK_EQ(d[11] & 0x04, 0);
	/* base switch port 0 keeps its state; its LID is the switch's */
	port_info_set(mad, 0, SOF_PORT_ARMED, 0, 7, 0);
	CHECK_EQ(sma(s1, 1, mad), 0);
	CHECK_EQ(s1->port[0].state, SOF_PORT_ACTIVE);
	CHECK_EQ(s1->port[0].lid, 7);
	/* a switch port beyond its ports */
	sof_smp_init(mad, false, SOF_METHOD_GET, SOF_ATTR_PORT_INFO, 9, 1, 0);
	CHECK_EQ(sma(s1, 1, mad), SOF_STATUS_BAD_VALUE);
	fabric_free();
}

TEST(mkey_protection)
{
	uint8_t mad[SOF_SMP_LEN];
	const uint8_t *d = mad + SOF_SMP_OFF_DATA;
	unsigned ev;

	fabric_new();
	port_info_set(mad, 1, 0, 0, 4, 0x1122334455667788ull);
	mad[SOF_SMP_OFF_DATA + 34] = 1 << 6; /* protect level 1 */
	CHECK_EQ(sma(h1, 1, mad), 0);
	CHECK_EQ(h1->port[1].mkey, 0x1122334455667788ull);
	/* level 1: a Get with a wrong M_Key answers, the M_Key reads 0 */
	sof_smp_init(mad, false, SOF_METHOD_GET, SOF_ATTR_PORT_INFO, 1, 1, 0x99);
	CHECK_EQ(sma(h1, 1, mad), 0);
	CHECK_EQ(sof_get64(d), 0);
	CHECK_EQ(sof_get16(d + 16), 4);
	sof_smp_init(mad, false, SOF_METHOD_GET, SOF_ATTR_PORT_INFO, 1, 1, 0x1122334455667788ull);
	CHECK_EQ(sma(h1, 1, mad), 0);
	CHECK_EQ(sof_get64(d), 0x1122334455667788ull);
	/* a Set with a wrong M_Key: dropped, counted, nothing changed */
	port_info_set(mad, 1, 0, 0, 5, 0x99);
	CHECK_EQ(sof_sma_process(h1, 1, mad, SOF_SMP_LEN, &ev), SOF_SMA_DROP);
	CHECK(ev & SOF_SMA_EV_MKEY);
	CHECK_EQ(h1->drops[SOF_SMP_DROP_MKEY], 1);
	CHECK_EQ(h1->port[1].mkey_violations, 1);
	CHECK_EQ(h1->port[1].lid, 4);
	/* level 2: a Get with a wrong M_Key is dropped too */
	port_info_set(mad, 1, 0, 0, 4, 0x1122334455667788ull);
	mad[SOF_SMP_OFF_DATA + 34] = 2 << 6;
	sof_put16(mad + SOF_SMP_OFF_DATA + 44, 1);
	CHECK_EQ(sma(h1, 1, mad), 0);
	sof_smp_init(mad, false, SOF_METHOD_GET, SOF_ATTR_NODE_INFO, 0, 1, 0x99);
	CHECK_EQ(sof_sma_process(h1, 1, mad, SOF_SMP_LEN, NULL), SOF_SMA_DROP);
	CHECK_EQ(h1->drops[SOF_SMP_DROP_MKEY], 2);
	CHECK_EQ(h1->port[1].mkey_violations, 2);
	sof_smp_init(mad, false, SOF_METHOD_GET, SOF_ATTR_NODE_INFO, 0, 1, 0x1122334455667788ull);
	CHECK_EQ(sma(h1, 1, mad), 0);
	/* trap 256 built for the SM */
	h1->port[1].sm_lid = 1;
	sof_sma_trap(h1, 1, SOF_TRAP_BAD_MKEY, 44, mad);
	CHECK_EQ(mad[1], SOF_MCLASS_SMP_LID);
	CHECK_EQ(mad[3], SOF_METHOD_TRAP);
	CHECK_EQ(sof_get16(mad + SOF_SMP_OFF_ATTR_ID), SOF_ATTR_NOTICE);
	CHECK_EQ(sof_get16(d + 4), 256);
	CHECK_EQ(sof_get16(d + 6), 4);
	/* its details name the SMP that failed (IBA 14.2.5.1 table 147) */
	CHECK_EQ(sof_get16(d + 12), 4);
	CHECK_EQ(d[16], SOF_METHOD_GET);
	CHECK_EQ(sof_get16(d + 18), SOF_ATTR_NODE_INFO);
	CHECK_EQ(sof_get64(d + 24), 0x99);
	CHECK_EQ(sof_get64(mad + SOF_SMP_OFF_MKEY), 0x1122334455667788ull);

	/* TrapRepress: checked too; for the SM when the node has one */
	sof_smp_init(mad, false, SOF_METHOD_TRAP_REPRESS, SOF_ATTR_NOTICE, 0, 44, 0x99);
	CHECK_EQ(sof_sma_process(h1, 1, mad, SOF_SMP_LEN, &ev), SOF_SMA_DROP);
	CHECK(ev & SOF_SMA_EV_MKEY);
	sof_smp_init(mad, false, SOF_METHOD_TRAP_REPRESS, SOF_ATTR_NOTICE, 0, 44,
		     0x1122334455667788ull);
	CHECK_EQ(sof_sma_process(h1, 1, mad, SOF_SMP_LEN, &ev), SOF_SMA_DONE);
	CHECK_EQ(ev, SOF_SMA_EV_REPRESS);
	h1->sm_agent = true;
	CHECK_EQ(sof_sma_process(h1, 1, mad, SOF_SMP_LEN, &ev), SOF_SMA_PASS);
	CHECK_EQ(ev, SOF_SMA_EV_REPRESS);
	/* SMInfo goes to the node's SM after the M_Key check: at level 2
	 * a Get without the key is dropped (trap 256), with it passed; a
	 * Set needs the key at every level */
	sof_smp_init(mad, false, SOF_METHOD_GET, SOF_ATTR_SM_INFO, 0, 45, 0x99);
	CHECK_EQ(sof_sma_process(h1, 1, mad, SOF_SMP_LEN, &ev), SOF_SMA_DROP);
	CHECK(ev & SOF_SMA_EV_MKEY);
	CHECK_EQ(h1->drops[SOF_SMP_DROP_MKEY], 4);
	CHECK_EQ(h1->mkey_bad.attr_id, SOF_ATTR_SM_INFO);
	sof_smp_init(mad, false, SOF_METHOD_GET, SOF_ATTR_SM_INFO, 0, 46, 0x1122334455667788ull);
	CHECK_EQ(sof_sma_process(h1, 1, mad, SOF_SMP_LEN, &ev), SOF_SMA_PASS);
	h1->port[1].mkey_protect = 0;
	sof_smp_init(mad, false, SOF_METHOD_GET, SOF_ATTR_SM_INFO, 0, 47, 0x99);
	CHECK_EQ(sof_sma_process(h1, 1, mad, SOF_SMP_LEN, &ev), SOF_SMA_PASS);
	sof_smp_init(mad, false, SOF_METHOD_SET, SOF_ATTR_SM_INFO, 1, 48, 0x99);
	CHECK_EQ(sof_sma_process(h1, 1, mad, SOF_SMP_LEN, &ev), SOF_SMA_DROP);
	CHECK(ev & SOF_SMA_EV_MKEY);
	sof_smp_init(mad, false, SOF_METHOD_SET, SOF_ATTR_SM_INFO, 1, 49, 0x1122334455667788ull);
	CHECK_EQ(sof_sma_process(h1, 1, mad, SOF_SMP_LEN, &ev), SOF_SMA_PASS);
	h1->port[1].mkey_protect = 2;
	h1->sm_agent = false;

	/* the lease (IBA 14.2.4.2): 2 s from a violation; an SMP with the
	 * right M_Key stops it */
	h1->port[1].mkey_lease = 2;
	h1->port[1].mkey_lease_end = 0;
	h1->now_ms = 1000;
	sof_smp_init(mad, false, SOF_METHOD_GET, SOF_ATTR_NODE_INFO, 0, 1, 0x99);
	CHECK_EQ(sof_sma_process(h1, 1, mad, SOF_SMP_LEN, NULL), SOF_SMA_DROP);
	CHECK_EQ(h1->port[1].mkey_lease_end, 3000);
	h1->now_ms = 1500;
	sof_smp_init(mad, false, SOF_METHOD_GET, SOF_ATTR_NODE_INFO, 0, 1, 0x1122334455667788ull);
	CHECK_EQ(sma(h1, 1, mad), 0);
	CHECK_EQ(h1->port[1].mkey_lease_end, 0);
	h1->now_ms = 5000;
	sof_smp_init(mad, false, SOF_METHOD_GET, SOF_ATTR_NODE_INFO, 0, 1, 0x99);
	CHECK_EQ(sof_sma_process(h1, 1, mad, SOF_SMP_LEN, NULL), SOF_SMA_DROP);
	CHECK_EQ(h1->port[1].mkey_lease_end, 7000);
	/* still running at 6.999 s (a violation does not restart it) */
	h1->now_ms = 6999;
	CHECK_EQ(sof_sma_process(h1, 1, mad, SOF_SMP_LEN, NULL), SOF_SMA_DROP);
	CHECK_EQ(h1->port[1].mkey_lease_end, 7000);
	/* run out: protection bits 0, the SMP at hand passes, and a new SM
	 * sets its own M_Key */
	h1->now_ms = 7000;
	port_info_set(mad, 1, 0, 0, 4, 0x77);
	CHECK_EQ(sma(h1, 1, mad), 0);
	CHECK_EQ(h1->port[1].mkey, 0x77);
	CHECK_EQ(h1->port[1].mkey_protect, 0);
	CHECK_EQ(h1->port[1].mkey_lease_end, 0);
	CHECK_EQ(d[34] >> 6, 0);
	fabric_free();
}

TEST(tables_round_trip)
{
	uint8_t mad[SOF_SMP_LEN];
	uint8_t *d = mad + SOF_SMP_OFF_DATA;
	unsigned i;

	fabric_new();
	/* P_Key: switch port 3 block 1 */
	sof_smp_init(mad, false, SOF_METHOD_SET, SOF_ATTR_PKEY_TABLE, 3u << 16 | 1, 1, 0);
	for (i = 0; i < 32; i++)
		sof_put16(d + 2 * i, (uint16_t)(0x8000 | i));
	CHECK_EQ(sma(s1, 1, mad), 0);
	CHECK_EQ(s1->port[3].pkeys[32 + 5], 0x8005);
	sof_smp_init(mad, false, SOF_METHOD_GET, SOF_ATTR_PKEY_TABLE, 3u << 16 | 1, 1, 0);
	CHECK_EQ(sma(s1, 1, mad), 0);
	CHECK_EQ(sof_get16(d + 62), 0x801f);
	sof_smp_init(mad, false, SOF_METHOD_GET, SOF_ATTR_PKEY_TABLE, 2, 1, 0);
	CHECK_EQ(sma(h1, 1, mad), SOF_STATUS_BAD_VALUE);
	/* the switch's management port: PartitionCap entries, one block */
	sof_smp_init(mad, false, SOF_METHOD_GET, SOF_ATTR_PKEY_TABLE, 1, 1, 0);
	CHECK_EQ(sma(s1, 1, mad), SOF_STATUS_BAD_VALUE);
	sof_smp_init(mad, false, SOF_METHOD_GET, SOF_ATTR_PKEY_TABLE, 0, 1, 0);
	CHECK_EQ(sma(s1, 1, mad), 0);
	CHECK_EQ(sof_get16(d), 0xffff);
	sof_smp_init(mad, false, SOF_METHOD_GET, SOF_ATTR_PKEY_TABLE, 0, 1, 0);
	CHECK_EQ(sma(h1, 1, mad), 0);
	CHECK_EQ(sof_get16(d), 0xffff);
	/* SL2VL: switch in 2 out 1 */
	sof_smp_init(mad, false, SOF_METHOD_SET, SOF_ATTR_SL2VL, 2u << 8 | 1, 1, 0);
	for (i = 0; i < 8; i++)
		d[i] = (uint8_t)(0x10 * i + i);
	CHECK_EQ(sma(s1, 1, mad), 0);
	CHECK_EQ(s1->port[1].sl2vl[2][3], 0x33);
	CHECK_EQ(s1->port[1].sl2vl[1][3], 0);
	sof_smp_init(mad, false, SOF_METHOD_GET, SOF_ATTR_SL2VL, 9u << 8 | 1, 1, 0);
	CHECK_EQ(sma(s1, 1, mad), SOF_STATUS_BAD_VALUE);
	/* VLArb: block 3 of H1 */
	sof_smp_init(mad, false, SOF_METHOD_SET, SOF_ATTR_VL_ARB, 3u << 16, 1, 0);
	d[0] = 2;
	d[1] = 0x40;
	CHECK_EQ(sma(h1, 1, mad), 0);
	CHECK_EQ(h1->port[1].vlarb[2][1], 0x40);
	sof_smp_init(mad, false, SOF_METHOD_GET, SOF_ATTR_VL_ARB, 5u << 16, 1, 0);
	CHECK_EQ(sma(h1, 1, mad), SOF_STATUS_BAD_VALUE);
	/* GUIDInfo: index 0 stays the port GUID */
	sof_smp_init(mad, false, SOF_METHOD_SET, SOF_ATTR_GUID_INFO, 0, 1, 0);
	sof_put64(d, 0xdead);
	sof_put64(d + 8, 0xbeef);
	CHECK_EQ(sma(h1, 1, mad), 0);
	CHECK_EQ(sof_get64(d), GUID_H1 + 1);
	CHECK_EQ(sof_get64(d + 8), 0xbeef);
	/* LFT block 1: LID 64+7 -> port 2 */
	sof_smp_init(mad, false, SOF_METHOD_SET, SOF_ATTR_LFT, 1, 1, 0);
	memset(d, 0xff, 64);
	d[7] = 2;
	CHECK_EQ(sma(s1, 1, mad), 0);
	CHECK_EQ(s1->sw.lft[71], 2);
	sof_smp_init(mad, false, SOF_METHOD_GET, SOF_ATTR_LFT, 1, 1, 0);
	CHECK_EQ(sma(s1, 1, mad), 0);
	CHECK_EQ(d[7], 2);
	CHECK_EQ(d[8], 0xff);
	sof_smp_init(mad, false, SOF_METHOD_GET, SOF_ATTR_LFT, 0xc000 / 64, 1, 0);
	CHECK_EQ(sma(s1, 1, mad), SOF_STATUS_BAD_VALUE);
	/* MFT: MLID 0xc000 + 33, position 0 */
	sof_smp_init(mad, false, SOF_METHOD_SET, SOF_ATTR_MFT, 1, 1, 0);
	sof_put16(d + 2, 0x0006);
	CHECK_EQ(sma(s1, 1, mad), 0);
	CHECK_EQ(s1->sw.mft[33 * s1->sw.mft_positions], 6);
	sof_smp_init(mad, false, SOF_METHOD_GET, SOF_ATTR_MFT, 1u << 28 | 1, 1, 0);
	CHECK_EQ(sma(s1, 1, mad), SOF_STATUS_BAD_VALUE); /* 9 ports: one position */
	/* SwitchInfo: LinearFDBTop, bad default port */
	sof_smp_init(mad, false, SOF_METHOD_SET, SOF_ATTR_SWITCH_INFO, 0, 1, 0);
	sof_put16(d + 6, 71);
	CHECK_EQ(sma(s1, 1, mad), 0);
	CHECK_EQ(s1->sw.lft_top, 71);
	CHECK_EQ(sof_get16(d), SOF_SW_LFT_CAP);
	/* MulticastFDBTop 0xBFFF: no multicast entries, accepted */
	sof_smp_init(mad, false, SOF_METHOD_SET, SOF_ATTR_SWITCH_INFO, 0, 1, 0);
	sof_put16(d + 6, 71);
	sof_put16(d + 18, 0xbfff);
	CHECK_EQ(sma(s1, 1, mad), 0);
	CHECK_EQ(s1->sw.mft_top, 0xbfff);
	sof_smp_init(mad, false, SOF_METHOD_SET, SOF_ATTR_SWITCH_INFO, 0, 1, 0);
	d[8] = 20;
	CHECK_EQ(sma(s1, 1, mad), SOF_STATUS_BAD_VALUE);
	CHECK_EQ(sof_get16(d + 6), 71);
	/* SMInfo: no SM on this node */
	sof_smp_init(mad, false, SOF_METHOD_GET, SOF_ATTR_SM_INFO, 0, 1, 0);
	CHECK_EQ(sma(h1, 1, mad), SOF_STATUS_BAD_ATTR);
	h1->port[1].cap_mask |= SOF_CAP_IS_SM;
	h1->sm.guid = GUID_H1;
	h1->sm.priority = 3;
	h1->sm.state = 3;
	sof_smp_init(mad, false, SOF_METHOD_GET, SOF_ATTR_SM_INFO, 0, 1, 0);
	CHECK_EQ(sma(h1, 1, mad), 0);
	CHECK_EQ(sof_get64(d), GUID_H1);
	CHECK_EQ(d[20], 0x33);
	fabric_free();
}

static uint16_t pma(struct sof_node *n, unsigned in_port, uint8_t *mad)
{
	CHECK_EQ(sof_pma_process(n, in_port, mad, SOF_SMP_LEN), SOF_SMA_REPLY);
	return status_of(mad);
}

static void pma_init(uint8_t *mad, uint8_t method, uint16_t attr, uint8_t port, uint16_t sel)
{
	memset(mad, 0, SOF_SMP_LEN);
	mad[0] = 1;
	mad[1] = SOF_MCLASS_PERF;
	mad[2] = 1;
	mad[3] = method;
	sof_put16(mad + SOF_SMP_OFF_ATTR_ID, attr);
	mad[SOF_PMA_OFF_DATA + 1] = port;
	sof_put16(mad + SOF_PMA_OFF_DATA + 2, sel);
}

TEST(pma_counters)
{
	uint8_t mad[SOF_SMP_LEN];
	const uint8_t *d = mad + SOF_PMA_OFF_DATA;
	unsigned i;

	fabric_new();
	pma_init(mad, SOF_METHOD_GET, SOF_ATTR_CLASS_PORT_INFO, 0, 0);
	CHECK_EQ(pma(h1, 1, mad), 0);
	CHECK_EQ(sof_get16(d + 2) & 0x0300, 0x0300);
	for (i = 0; i < 10; i++)
		sof_port_count_xmit(&s1->port[2], 4096 + 32, false);
	sof_port_count_rcv(&s1->port[2], 100, true);
	sof_port_count_rcv(&s1->port[3], 200, false);
	pma_init(mad, SOF_METHOD_GET, SOF_ATTR_PORT_COUNTERS, 2, 0);
	CHECK_EQ(pma(s1, 1, mad), 0);
	CHECK_EQ(d[1], 2);
	CHECK_EQ(sof_get32(d + 24), 10 * (4096 + 32) / 4);
	CHECK_EQ(sof_get32(d + 32), 10);
	CHECK_EQ(sof_get32(d + 36), 1);
	CHECK_EQ(sof_get32(d + 28), 25);
	pma_init(mad, SOF_METHOD_GET, SOF_ATTR_PORT_COUNTERS_EXT, 0xff, 0);
	CHECK_EQ(pma(s1, 1, mad), 0);
	CHECK_EQ(sof_get64(d + 32), 2); /* rcv packets, all ports */
	CHECK_EQ(sof_get64(d + 48), 1); /* unicast rcv */
	CHECK_EQ(sof_get64(d + 64), 1); /* multicast rcv */
	/* 32-bit data saturates; the extended one does not */
	s1->port[4].cnt.xmit_data = 0x123456789ull;
	pma_init(mad, SOF_METHOD_GET, SOF_ATTR_PORT_COUNTERS, 4, 0);
	CHECK_EQ(pma(s1, 1, mad), 0);
	CHECK_EQ(sof_get32(d + 24), 0xffffffffu);
	pma_init(mad, SOF_METHOD_GET, SOF_ATTR_PORT_COUNTERS_EXT, 4, 0);
	CHECK_EQ(pma(s1, 1, mad), 0);
	CHECK_EQ(sof_get64(d + 8), 0x123456789ull);
	/* reset (perfquery -R): every counter of port 2 */
	pma_init(mad, SOF_METHOD_SET, SOF_ATTR_PORT_COUNTERS, 2, 0xffff);
	CHECK_EQ(pma(s1, 1, mad), 0);
	CHECK_EQ(sof_get32(d + 32), 0);
	CHECK_EQ(s1->port[2].cnt.xmit_pkts, 0);
	CHECK_EQ(s1->port[2].cnt.rcv_pkts, 0);
	/* only RcvPkts of port 3 */
	pma_init(mad, SOF_METHOD_SET, SOF_ATTR_PORT_COUNTERS_EXT, 3, 0x08);
	sof_port_count_xmit(&s1->port[3], 64, false);
	CHECK_EQ(pma(s1, 1, mad), 0);
	CHECK_EQ(s1->port[3].cnt.rcv_pkts, 0);
	CHECK_EQ(s1->port[3].cnt.xmit_pkts, 1);
	/* CA port 0 is its receiving port; beyond its ports refused */
	sof_port_count_rcv(&h1->port[1], 40, false);
	pma_init(mad, SOF_METHOD_GET, SOF_ATTR_PORT_COUNTERS, 0, 0);
	CHECK_EQ(pma(h1, 1, mad), 0);
	CHECK_EQ(sof_get32(d + 36), 1);
	pma_init(mad, SOF_METHOD_GET, SOF_ATTR_PORT_COUNTERS, 2, 0);
	CHECK_EQ(pma(h1, 1, mad), SOF_STATUS_BAD_VALUE);
	pma_init(mad, SOF_METHOD_GET, 0x0099, 1, 0);
	CHECK_EQ(pma(h1, 1, mad), SOF_STATUS_BAD_ATTR);
	pma_init(mad, SOF_METHOD_GET_RESP, SOF_ATTR_PORT_COUNTERS, 1, 0);
	CHECK_EQ(sof_pma_process(h1, 1, mad, SOF_SMP_LEN), SOF_SMA_DROP);
	fabric_free();
}

/* PortRcvErrorDetails / PortXmitDiscardDetails (IBA 16.1.4.1-2): the
 * reasons behind PortRcvErrors, relay errors and PortXmitDiscards */
TEST(pma_details)
{
	uint8_t mad[SOF_SMP_LEN];
	const uint8_t *d = mad + SOF_PMA_OFF_DATA;

	fabric_new();
	s1->port[2].cnt.local_phys_errors = 3;
	s1->port[2].cnt.malformed_pkt_errors = 5;
	s1->port[3].cnt.dlid_map_errors = 0x12345; /* saturates at 16 bits */
	s1->port[2].cnt.inactive_discards = 7;
	pma_init(mad, SOF_METHOD_GET, SOF_ATTR_PORT_RCV_ERR_DETAILS, 2, 0);
	CHECK_EQ(pma(s1, 1, mad), 0);
	CHECK_EQ(sof_get16(d + 4), 3);
	CHECK_EQ(sof_get16(d + 6), 5);
	CHECK_EQ(sof_get16(d + 10), 0);
	pma_init(mad, SOF_METHOD_GET, SOF_ATTR_PORT_RCV_ERR_DETAILS, 0xff, 0);
	CHECK_EQ(pma(s1, 1, mad), 0);
	CHECK_EQ(sof_get16(d + 10), 0xffff);
	pma_init(mad, SOF_METHOD_GET, SOF_ATTR_PORT_XMIT_DISC_DETAILS, 2, 0);
	CHECK_EQ(pma(s1, 1, mad), 0);
	CHECK_EQ(sof_get16(d + 4), 7);
	CHECK_EQ(sof_get16(d + 6), 0);
	/* CounterSelect bit 1 resets the malformed packets only */
	pma_init(mad, SOF_METHOD_SET, SOF_ATTR_PORT_RCV_ERR_DETAILS, 2, 0x0002);
	CHECK_EQ(pma(s1, 1, mad), 0);
	CHECK_EQ(sof_get16(d + 4), 3);
	CHECK_EQ(sof_get16(d + 6), 0);
	CHECK_EQ(s1->port[2].cnt.malformed_pkt_errors, 0);
	pma_init(mad, SOF_METHOD_SET, SOF_ATTR_PORT_XMIT_DISC_DETAILS, 2, 0x0001);
	CHECK_EQ(pma(s1, 1, mad), 0);
	CHECK_EQ(s1->port[2].cnt.inactive_discards, 0);
	fabric_free();
}

/* a congestion control MAD (IBA A10.4.1): class 0x21, version 2 */
static void cc_init(uint8_t *mad, uint8_t method, uint16_t attr, uint32_t mod, uint64_t key)
{
	memset(mad, 0, SOF_SMP_LEN);
	mad[0] = 1;
	mad[1] = SOF_MCLASS_CC;
	mad[2] = 2;
	mad[3] = method;
	sof_put16(mad + SOF_SMP_OFF_ATTR_ID, attr);
	sof_put32(mad + SOF_SMP_OFF_ATTR_MOD, mod);
	sof_put64(mad + 24, key);
}

static uint16_t cc(struct sof_node *n, uint8_t *mad)
{
	CHECK_EQ(sof_gsi_agent_process(n, 1, mad, SOF_SMP_LEN), SOF_SMA_REPLY);
	CHECK_EQ(mad[3], SOF_METHOD_GET_RESP);
	return status_of(mad);
}

TEST(cc_agent)
{
	uint8_t mad[SOF_SMP_LEN];
	uint8_t *d = mad + 64;
	unsigned i;

	fabric_new();
	/* CongestionInfo: a CA has one CCT block, a switch none */
	cc_init(mad, SOF_METHOD_GET, 0x0011, 0, 0);
	CHECK_EQ(cc(h1, mad), 0);
	CHECK_EQ(d[2], 1);
	cc_init(mad, SOF_METHOD_GET, 0x0011, 0, 0);
	CHECK_EQ(cc(s1, mad), 0);
	CHECK_EQ(d[2], 0);
	/* SwitchCongestionSetting round trip; reserved bits dropped */
	cc_init(mad, SOF_METHOD_SET, 0x0014, 0, 0);
	sof_put32(d, 0x1f);
	d[4 + 31] = 0x06; /* victim ports 1, 2 */
	d[68] = 0xff;	  /* Threshold 0xf, reserved nibble */
	d[69] = 8;
	sof_put16(d + 74, 3);
	CHECK_EQ(cc(s1, mad), 0);
	cc_init(mad, SOF_METHOD_GET, 0x0014, 0, 0);
	CHECK_EQ(cc(s1, mad), 0);
	CHECK_EQ(sof_get32(d), 0x1f);
	CHECK_EQ(d[35], 0x06);
	CHECK_EQ(d[68], 0xf0);
	CHECK_EQ(d[69], 8);
	CHECK_EQ(sof_get16(d + 74), 3);
	/* ... which a CA does not have */
	cc_init(mad, SOF_METHOD_GET, 0x0014, 0, 0);
	CHECK_EQ(cc(h1, mad), SOF_STATUS_BAD_ATTR);
	/* SwitchPortCongestionSetting: port 3 of block 0; block 1 is past
	 * the switch's ports */
	cc_init(mad, SOF_METHOD_SET, 0x0015, 0, 0);
	sof_put32(d + 12, 0x85060007);
	CHECK_EQ(cc(s1, mad), 0);
	CHECK_EQ(s1->port[3].cc_setting, 0x85060007);
	cc_init(mad, SOF_METHOD_GET, 0x0015, 0, 0);
	CHECK_EQ(cc(s1, mad), 0);
	CHECK_EQ(sof_get32(d + 12), 0x85060007);
	CHECK_EQ(sof_get32(d + 8), 0);
	cc_init(mad, SOF_METHOD_GET, 0x0015, 1, 0);
	CHECK_EQ(cc(s1, mad), SOF_STATUS_BAD_VALUE);
	/* CACongestionSetting and the CCT's block 0 of a CA */
	cc_init(mad, SOF_METHOD_SET, 0x0016, 0, 0);
	sof_put16(d, 1);
	sof_put16(d + 2, 0x3);
	sof_put16(d + 4 + 8, 150); /* SL 1 CCTI_Timer */
	d[4 + 8 + 2] = 1;
	CHECK_EQ(cc(h1, mad), 0);
	cc_init(mad, SOF_METHOD_GET, 0x0016, 0, 0);
	CHECK_EQ(cc(h1, mad), 0);
	CHECK_EQ(sof_get16(d + 2), 0x3);
	CHECK_EQ(sof_get16(d + 12), 150);
	CHECK_EQ(d[14], 1);
	cc_init(mad, SOF_METHOD_SET, 0x0017, 0, 0);
	sof_put16(d, 63);
	for (i = 0; i < 64; i++)
		sof_put16(d + 4 + 2 * i, (uint16_t)i);
	CHECK_EQ(cc(h1, mad), 0);
	cc_init(mad, SOF_METHOD_GET, 0x0017, 0, 0);
	CHECK_EQ(cc(h1, mad), 0);
	CHECK_EQ(sof_get16(d), 63);
	CHECK_EQ(sof_get16(d + 4 + 2 * 63), 63);
	cc_init(mad, SOF_METHOD_GET, 0x0017, 1, 0);
	CHECK_EQ(cc(h1, mad), SOF_STATUS_BAD_VALUE);
	/* CC_Key with protection: a Set or Get under another key is dropped
	 * and counted; the right key passes */
	cc_init(mad, SOF_METHOD_SET, 0x0012, 0, 0);
	sof_put64(d, 0x1234);
	d[8] = 0x80;
	CHECK_EQ(cc(h1, mad), 0);
	cc_init(mad, SOF_METHOD_GET, 0x0012, 0, 0);
	CHECK_EQ(sof_gsi_agent_process(h1, 1, mad, SOF_SMP_LEN), SOF_SMA_DROP);
	cc_init(mad, SOF_METHOD_SET, 0x0016, 0, 0x9999);
	CHECK_EQ(sof_gsi_agent_process(h1, 1, mad, SOF_SMP_LEN), SOF_SMA_DROP);
	cc_init(mad, SOF_METHOD_GET, 0x0012, 0, 0x1234);
	CHECK_EQ(cc(h1, mad), 0);
	CHECK_EQ(sof_get64(d), 0x1234);
	CHECK_EQ(d[8], 0x80);
	CHECK_EQ(sof_get16(d + 12), 2);
	cc_init(mad, SOF_METHOD_GET, 0x0016, 0, 0x1234);
	CHECK_EQ(cc(h1, mad), 0);
	CHECK_EQ(sof_get16(d + 2), 0x3); /* the refused Set changed nothing */
	/* the log is empty; class version 1, an unknown method or attribute
	 * are answered with their status; a response passes to the caller */
	cc_init(mad, SOF_METHOD_GET, 0x0013, 0, 0);
	CHECK_EQ(cc(s1, mad), 0);
	CHECK_EQ(mad[32], 1); /* LogType: switch */
	cc_init(mad, SOF_METHOD_GET, 0x0018, 0, 0);
	mad[2] = 1;
	CHECK_EQ(cc(s1, mad), SOF_STATUS_BAD_VERSION);
	cc_init(mad, 0x03, 0x0018, 0, 0);
	CHECK_EQ(cc(s1, mad), SOF_STATUS_BAD_METHOD);
	cc_init(mad, SOF_METHOD_GET, 0x0099, 0, 0);
	CHECK_EQ(cc(s1, mad), SOF_STATUS_BAD_ATTR);
	cc_init(mad, SOF_METHOD_GET_RESP, 0x0018, 0, 0);
	CHECK_EQ(sof_gsi_agent_process(s1, 1, mad, SOF_SMP_LEN), SOF_SMA_PASS);
	mad[1] = 0x0a; /* another class */
	mad[3] = SOF_METHOD_GET;
	CHECK_EQ(sof_gsi_agent_process(s1, 1, mad, SOF_SMP_LEN), SOF_SMA_PASS);
	fabric_free();
}

TEST(trap_128)
{
	uint8_t mad[SOF_SMP_LEN];
	const uint8_t *d = mad + SOF_SMP_OFF_DATA;
	unsigned ev;

	fabric_new();
	s1->port[0].lid = 2;
	s1->sw.port_state_change = false;
	CHECK(sof_port_link_down(s1, 2));
	CHECK(s1->sw.port_state_change);
	sof_sma_trap(s1, 0, SOF_TRAP_LINK_STATE, 0x55, mad);
	CHECK_EQ(d[0], 0x81);
	CHECK_EQ(d[3], SOF_NODE_SWITCH);
	CHECK_EQ(sof_get16(d + 4), 128);
	CHECK_EQ(sof_get16(d + 6), 2);
	CHECK_EQ(sof_get16(d + 10), 2);
	/* TrapRepress consumed */
	mad[3] = SOF_METHOD_TRAP_REPRESS;
	CHECK_EQ(sof_sma_process(s1, 1, mad, SOF_SMP_LEN, &ev), SOF_SMA_DONE);
	CHECK(ev & SOF_SMA_EV_REPRESS);
	fabric_free();
}

int main(void)
{
	RUN(node_info_ca_and_switch);
	RUN(dr_walk_both_ways);
	RUN(dr_lid_routed_ends);
	RUN(dr_bad_paths_dropped_and_counted);
	RUN(port_info_states);
	RUN(mkey_protection);
	RUN(tables_round_trip);
	RUN(pma_counters);
	RUN(pma_details);
	RUN(cc_agent);
	RUN(trap_128);
	return test_summary();
}
