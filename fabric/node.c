/*
 * A packet at a node of the fabric, its link layer already checked
 * (fab_run): a switch forwards by its linear and multicast forwarding
 * tables (IBA 18.2.4), passes directed-route SMPs on VL15 along their
 * paths (IBA 14.2.2, through sof_smp_dr_step), enforces partitions on
 * its ports (IBA 10.9.3) and answers SMPs and PerfMgt MADs addressed to
 * itself; a simulated HCA answers SMPs (QP0) and PerfMgt MADs (QP1) and
 * nothing else (it carries no data).
 */
#include "fabric.h"

#include <string.h>

static uint16_t own_lid(const struct fab_node *n, unsigned in_port)
{
	const struct sof_node *m = n->m;

	if (m->type == SOF_NODE_SWITCH)
		return m->port[0].lid;
	return m->port[in_port >= 1 && in_port <= m->nports ? in_port : 1].lid;
}

/* the port a LID-routed packet made at n leaves by (0: n itself; 255:
 * no route) */
static unsigned route(const struct fab_node *n, unsigned in_port, uint16_t dlid)
{
	const struct sof_node *m = n->m;

	if (m->type != SOF_NODE_SWITCH)
		return in_port ? in_port : 1;
	if (sof_port_has_lid(&m->port[0], dlid))
		return 0;
	return dlid < m->sw.lft_cap ? m->sw.lft[dlid] : 255;
}

static void send_mad(struct fabric *f, struct fab_node *n, unsigned out, uint16_t dlid,
		     uint16_t slid, uint8_t sl, uint16_t pkey, uint32_t dqp, uint32_t sqp,
		     uint32_t qkey, const uint8_t *mad)
{
	uint8_t pkt[FAB_MAD_PKT_LEN];

	if (out < 1 || out > n->m->nports) {
		f->st.no_route++;
		return;
	}
	fab_mad_pkt(pkt, dlid, slid, sl, pkey, dqp, sqp, qkey, mad);
	fab_xmit(f, n, out, pkt, sizeof(pkt), false);
}

static void smp_send_lid(struct fabric *f, struct fab_node *n, unsigned in_port, uint16_t dlid,
			 const uint8_t *mad)
{
	unsigned out = route(n, in_port, dlid);

	/* to a program on this HCA itself (sim.c) */
	if (n->m->type != SOF_NODE_SWITCH && sof_port_has_lid(&n->m->port[out], dlid)) {
		if (!fab_sim_deliver(f, n, dlid, 0, 0, mad))
			f->st.smp_drop++;
		return;
	}
	if (out == 0 || out > n->m->nports) {
		f->st.no_route++;
		return;
	}
	send_mad(f, n, out, dlid, own_lid(n, in_port), 0, 0xffff, 0, 0, 0, mad);
}

static void local_smp(struct fabric *f, struct fab_node *n, unsigned in_port, uint8_t *mad,
		      bool lid_routed, uint16_t req_slid);
static bool set_moves_routes(const uint8_t *mad);

/* A directed-route SMP leaving n by port out, taken to the node at the
 * other end at once rather than as a packet through the queue: the node
 * there, its port in *in_port; NULL when the packet must go (then
 * send_mad). It is the same thing when the queue is empty (the packet
 * would be the next one fab_run takes, and every caller sends it last),
 * no capture sees the link (f->cap), the other end is simulated (a real
 * host gets the packet) and the hop limit is not reached; the link
 * checks and their discard counters stay fab_xmit's (a link down goes
 * the packet's way). What fab_xmit, fab_run and fab_node_input count for
 * the packet is counted here alike: PortXmitPkts/Data at n, PortRcvPkts/
 * Data at the peer (the VCRC excluded, as there), the packet and its
 * delivery, and a SubnSet that may change the direct routes. OpenSM's
 * start on ft128 took 24,438 such hops for 4,282 SMPs. */
static struct fab_node *dr_hop(struct fabric *f, struct fab_node *n, unsigned out,
			       unsigned *in_port, const uint8_t *mad)
{
	const uint32_t len = FAB_MAD_PKT_LEN - FAB_VCRC_LEN;
	struct fab_node *peer;
	unsigned pp;

	if (f->hop_by_hop || f->cap || f->qhead || f->cur_hops >= FAB_MAX_HOPS ||
	    !fab_link_up(n, out))
		return NULL;
	peer = n->port[out].peer;
	pp = n->port[out].peer_port;
	if (peer->real)
		return NULL;
	sof_port_count_xmit(&n->m->port[out], len, false);
	f->st.pkts++;
	sof_port_count_rcv(&peer->m->port[pp], len, false);
	f->cur_hops++;
	f->st.delivered++;
	if (mad[3] == 0x02 && set_moves_routes(mad))
		fab_direct_dirty(f);
	*in_port = pp;
	return peer;
}

/* Where sof_smp_dr_step sent a directed-route SMP; along its path while
 * dr_hop takes it from node to node (the hop count f->cur_hops as the
 * packet's would be, and back to the caller's after). */
static void dr_dispatch(struct fabric *f, struct fab_node *n, unsigned in_port, uint8_t *mad,
			const struct sof_dr_next *first, bool lid_routed, uint16_t req_slid,
			bool reply)
{
	unsigned hops = f->cur_hops;
	struct sof_dr_next nx = *first;
	struct fab_node *next;

	for (;;) {
		switch (nx.action) {
		case SOF_DR_LOCAL:
			if (reply) { /* our answer to a program on this node */
				if (!fab_sim_deliver(f, n, 0xffff, 0, 0, mad))
					f->st.smp_drop++;
			} else
				local_smp(f, n, in_port, mad, lid_routed, req_slid);
			break;
		case SOF_DR_OUT_PORT:
			next = dr_hop(f, n, nx.port, &in_port, mad);
			if (!next) {
				send_mad(f, n, nx.port, 0xffff, 0xffff, 0, 0xffff, 0, 0, 0, mad);
				break;
			}
			/* at the next node, as smi_input takes the packet:
			 * DLID and SLID permissive */
			n = next;
			lid_routed = false;
			req_slid = 0xffff;
			reply = false;
			sof_smp_dr_step(n->m, mad, in_port, false, 0xffff, &nx);
			continue;
		case SOF_DR_OUT_LID:
			smp_send_lid(f, n, in_port, nx.lid, mad);
			break;
		case SOF_DR_DISCARD:
			f->st.smp_drop++;
			break;
		}
		break;
	}
	f->cur_hops = hops;
}

/* The port whose PortState or PortPhysicalState an SMP's PortInfo Set
 * changed: the AttributeModifier (IBA 14.2.5.6; on a CA 0 names the port
 * the SMP came in by), as mad/sma_port.c reads it; a switch's port 0 has
 * no link. -1 when the SMP is not a PortInfo: every port is looked at. */
static int set_port(const struct fab_node *n, unsigned in_port, const uint8_t *mad)
{
	uint32_t p = sof_get32(mad + SOF_SMP_OFF_ATTR_MOD);

	if (sof_get16(mad + SOF_SMP_OFF_ATTR_ID) != SOF_ATTR_PORT_INFO || p > n->m->nports)
		return -1;
	if (p == 0 && n->m->type != SOF_NODE_SWITCH)
		p = in_port;
	return (int)p;
}

static void sma_events(struct fabric *f, struct fab_node *n, unsigned ev, int port)
{
	/* the link of the port the Set changed, not of every port: an SM
	 * sets each port of a switch in turn, and looking at all its links
	 * each time was 34,000 link updates in OpenSM's start on ft128
	 * (1,150 now) */
	if ((ev & (SOF_SMA_EV_DISABLE | SOF_SMA_EV_ENABLE | SOF_SMA_EV_STATE)) && port >= 0)
		fab_link_update(f, n, (unsigned)port);
	else if (ev & (SOF_SMA_EV_DISABLE | SOF_SMA_EV_ENABLE | SOF_SMA_EV_STATE))
		for (unsigned p = 1; p <= n->m->nports; p++)
			fab_link_update(f, n, p);
	if (ev & SOF_SMA_EV_TRAP_128)
		fab_trap(f, n, SOF_TRAP_LINK_STATE);
	if (ev & SOF_SMA_EV_MKEY)
		fab_trap(f, n, SOF_TRAP_BAD_MKEY);
}

/* an SMP for this node's SMA; the response goes back the way IBA says */
static void local_smp(struct fabric *f, struct fab_node *n, unsigned in_port, uint8_t *mad,
		      bool lid_routed, uint16_t req_slid)
{
	enum sof_sma_result r;
	struct sof_dr_next nx;
	unsigned ev;

	n->m->now_ms = fab_now() / 1000000u;
	r = sof_sma_process(n->m, in_port, mad, 256, &ev);
	sma_events(f, n, ev, set_port(n, in_port, mad));
	/* a TrapRepress of the node's own trap; on a node with an SM client
	 * (sim.c) one with another TID is the SM's (r is PASS) */
	if ((ev & SOF_SMA_EV_REPRESS) && fab_trap_repressed(f, n, sof_get64(mad + 8)))
		return;
	if (r == SOF_SMA_PASS && fab_sim_deliver(f, n, req_slid, 0, 0, mad))
		return;
	if (r != SOF_SMA_REPLY) {
		if (r == SOF_SMA_DROP || r == SOF_SMA_PASS)
			f->st.smp_drop++;
		return;
	}
	if (mad[1] == SOF_MCLASS_SMP_DR) {
		sof_smp_dr_step(n->m, mad, 0, lid_routed, req_slid, &nx);
		dr_dispatch(f, n, in_port, mad, &nx, lid_routed, req_slid, true);
	} else {
		smp_send_lid(f, n, in_port, req_slid, mad);
	}
}

/* a packet on VL15 for this node (DLID permissive or ours) */
static void smi_input(struct fabric *f, struct fab_node *n, unsigned in_port, const uint8_t *p,
		      size_t len, const struct ib_lrh *l)
{
	struct sof_dr_next nx;
	struct ud_info u;
	uint8_t mad[256];
	bool lid_routed = l->dlid != 0xffff;

	if (fab_ud_parse(p, len, l, &u) || u.dqp != 0) {
		f->st.not_mine++;
		return;
	}
	if (u.madlen != 256) {
		n->m->drops[SOF_SMP_DROP_LEN]++;
		f->st.smp_drop++;
		return;
	}
	memcpy(mad, u.mad, 256);
	if (mad[1] == SOF_MCLASS_SMP_DR) {
		sof_smp_dr_step(n->m, mad, in_port, lid_routed, l->slid, &nx);
		dr_dispatch(f, n, in_port, mad, &nx, lid_routed, l->slid, false);
	} else if (mad[1] == SOF_MCLASS_SMP_LID) {
		local_smp(f, n, in_port, mad, true, l->slid);
	} else {
		n->m->drops[SOF_SMP_DROP_CLASS]++;
		f->st.smp_drop++;
	}
}

/* a GMP for this node's QP1: the PMA and the congestion control agent
 * answer (sof_gsi_agent_process); other classes go to an ibsim client */
static void gsi_input(struct fabric *f, struct fab_node *n, unsigned in_port, const uint8_t *p,
		      size_t len, const struct ib_lrh *l)
{
	struct sof_port *pp = sof_node_mgmt_port(n->m, in_port);
	struct ud_info u;
	uint8_t mad[256];

	if (fab_ud_parse(p, len, l, &u) || u.dqp != 1) {
		f->st.not_mine++;
		return;
	}
	if (!fab_pkey_ok(pp, u.pkey, false)) { /* IBA 10.9.2: at the HCA */
		if (pp->pkey_violations < 0xffff)
			pp->pkey_violations++;
		f->st.pkey++;
		return;
	}
	if (u.qkey != FAB_GSI_QKEY) {
		if (pp->qkey_violations < 0xffff)
			pp->qkey_violations++;
		f->st.mad_drop++;
		return;
	}
	if (u.madlen != 256) {
		f->st.mad_drop++;
		return;
	}
	memcpy(mad, u.mad, 256);
	n->m->now_ms = fab_now() / 1000000u;
	switch (sof_gsi_agent_process(n->m, in_port, mad, 256)) {
	case SOF_SMA_REPLY:
		break;
	case SOF_SMA_PASS:
		/* not for the node's agents: a program on this HCA may take it */
		if (n->m->type == SOF_NODE_SWITCH ||
		    !fab_sim_deliver(f, n, l->slid, u.dqp, u.sqp, u.mad))
			f->st.mad_drop++;
		return;
	default:
		f->st.mad_drop++;
		return;
	}
	send_mad(f, n, route(n, in_port, l->slid), l->slid, own_lid(n, in_port), l->sl, u.pkey,
		 u.sqp, 1, FAB_GSI_QKEY, mad);
}

static void forward_unicast(struct fabric *f, struct fab_node *n, unsigned in_port, uint8_t *p,
			    size_t len, const struct ib_lrh *l)
{
	unsigned out = route(n, in_port, l->dlid);

	if (out > n->m->nports) {
		/* no entry: a switch relay error of the receiving port */
		n->m->port[in_port].cnt.rcv_switch_relay_errors++;
		n->m->port[in_port].cnt.dlid_map_errors++;
		f->st.no_route++;
		return;
	}
	if (out == 0) {
		if (l->vl == 15)
			smi_input(f, n, in_port, p, len, l);
		else
			gsi_input(f, n, in_port, p, len, l);
		return;
	}
	f->st.forwarded++;
	f->move = true; /* p is not used after this: its queue entry moves on */
	fab_xmit(f, n, out, p, len, f->cur_sealed);
	f->move = false;
}

static void forward_mcast(struct fabric *f, struct fab_node *n, unsigned in_port, uint8_t *p,
			  size_t len, const struct ib_lrh *l)
{
	const struct sof_switch *s = &n->m->sw;
	unsigned idx = l->dlid - SOF_LID_MCAST_BASE, port;
	bool any = false;

	if (idx >= s->mft_cap) {
		n->m->port[in_port].cnt.rcv_switch_relay_errors++;
		n->m->port[in_port].cnt.dlid_map_errors++;
		f->st.no_route++;
		return;
	}
	for (port = 1; port <= n->m->nports; port++) {
		uint16_t mask = s->mft[idx * s->mft_positions + port / 16];

		if (port != in_port && (mask >> (port % 16)) & 1) {
			fab_xmit(f, n, port, p, len, f->cur_sealed);
			any = true;
		}
	}
	if (any)
		f->st.forwarded++;
}

static void switch_input(struct fabric *f, struct fab_node *n, unsigned in_port, uint8_t *p,
			 size_t len, const struct ib_lrh *l)
{
	struct sof_port *inp = &n->m->port[in_port];

	if (l->vl == 15) {
		if (l->dlid == 0xffff || sof_port_has_lid(&n->m->port[0], l->dlid))
			smi_input(f, n, in_port, p, len, l);
		else
			forward_unicast(f, n, in_port, p, len, l);
		return;
	}
	/* IBA 7.2: only an Active port takes packets other than VL15's */
	if (inp->state != SOF_PORT_ACTIVE) {
		f->st.port_down++;
		return;
	}
	if (inp->pe_inbound) {
		int pkey = fab_pkt_pkey(p, len);

		if (pkey >= 0 && !fab_pkey_ok(inp, (uint16_t)pkey, true)) {
			inp->cnt.rcv_constraint_errors++;
			f->st.pkey++;
			return;
		}
	}
	if (l->dlid >= SOF_LID_MCAST_BASE && l->dlid != 0xffff)
		forward_mcast(f, n, in_port, p, len, l);
	else
		forward_unicast(f, n, in_port, p, len, l);
}

static void hca_input(struct fabric *f, struct fab_node *n, unsigned in_port, uint8_t *p,
		      size_t len, const struct ib_lrh *l)
{
	struct sof_port *pp = &n->m->port[in_port];

	if (l->vl == 15) {
		if (l->dlid == 0xffff || sof_port_has_lid(pp, l->dlid))
			smi_input(f, n, in_port, p, len, l);
		else
			f->st.not_mine++;
		return;
	}
	if (pp->state != SOF_PORT_ACTIVE) {
		f->st.port_down++;
		return;
	}
	if (!sof_port_has_lid(pp, l->dlid)) {
		f->st.not_mine++;
		return;
	}
	gsi_input(f, n, in_port, p, len, l);
}

void fab_node_local_smp(struct fabric *f, struct fab_node *n, uint8_t *mad, bool lid_routed,
			uint16_t req_slid)
{
	local_smp(f, n, 1, mad, lid_routed, req_slid);
	fab_run(f);
}

/* where an SMP's MAD starts in its packet */
#define SMP_MAD_AT (IB_LRH_LEN + ROCE_BTH_LEN + ROCE_DETH_LEN)

/* Whether a SubnSet of this attribute (AttributeID, MAD bytes 16-17, IBA
 * 13.4.2) may change a direct route (direct.c's walk reads PortInfo,
 * P_KeyTable, SwitchInfo and the LFT): not the multicast tables, which an
 * SM sets at each IPoIB join, nor SL2VL, VLArb, GUIDInfo, SMInfo or a
 * NodeDescription. Every other one, known or not, may. Each one that
 * may stops the hosts' direct paths until the routes are made again, and
 * a datagram sent straight just before it is dropped by its receiver
 * (seq odd there): RC sends it again, UD loses it. */
static bool set_moves_routes(const uint8_t *mad)
{
	switch (sof_get16(mad + 16)) {
	case SOF_ATTR_MFT:
	case SOF_ATTR_SL2VL:
	case SOF_ATTR_VL_ARB:
	case SOF_ATTR_GUID_INFO:
	case SOF_ATTR_SM_INFO:
	case SOF_ATTR_NODE_DESC:
		return false;
	default:
		return true;
	}
}

void fab_node_input(struct fabric *f, struct fab_node *n, unsigned port, uint8_t *p, size_t len)
{
	struct ib_lrh l;

	ib_lrh_read(p, &l);
	f->st.delivered++;
	/* a SubnSet (IBA 13.4.5, method 0x02; the MAD after LRH, BTH and
	 * DETH, SMPs have no GRH) may change what the direct routes read:
	 * LFT, port states, partitions; a Get, a trap or its repress never */
	if (l.vl == 15 && (len < SMP_MAD_AT + 18 ||
			   (p[SMP_MAD_AT + 3] == 0x02 && set_moves_routes(p + SMP_MAD_AT))))
		fab_direct_dirty(f);
	if (n->m->type == SOF_NODE_SWITCH)
		switch_input(f, n, port, p, len, &l);
	else
		hca_input(f, n, port, p, len, &l);
}
