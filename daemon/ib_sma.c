/*
 * The subnet management agent of the daemon's InfiniBand port (sofib0):
 * QP0's receive hook, answering from the node model of mad/smp.h with the
 * SMA of mad/sma.c (the same code the fabric's switches and simulated
 * HCAs answer with), and the glue between that model and the port
 * (transport/tp_ib.h).
 *
 * The model is the port's management view: what an SM sets through it
 * (PortState, LID/LMC, SM LID/SL, P_Keys, NeighborMTU, the GID prefix,
 * Disabled) goes to the port at once; what the link does (LinkUp and down
 * from the HELLOs, Armed to Active on the first data packet, ASSIGN's
 * GUIDs) comes back into the model when the port says it changed
 * (sofd_ib_sma_sync, from ib.c's publication). One CA node with one port,
 * VL0 only (VLCap 1, every SL to VL0).
 *
 * An SMP arrives on VL15 to QP0 (the port checked both); a directed-route
 * one goes through sof_smp_dr_step first, and so does the response, which
 * leaves from QP0 on VL15: LID-routed to the request's SLID, or directed
 * with the permissive LIDs. SMPs on the RoCEv2 port are dropped (`mad`).
 *
 * It is also the port's SMI for QP0's agents (an SM such as OpenSM through
 * libibumad, mad/mad.h): a response or trap that reaches this node goes to
 * the MAD layer, whose waiting send it answers; an SMP an agent sends takes
 * the directed-route step of its origin (IBA 14.2.2.2, hop pointer 0) and
 * leaves on VL15, or, addressed to this node (hop count 0, or our LID), is
 * answered by the SMA here and the answer handed back from the main loop,
 * as the kernel's smi does without the wire.
 *
 * The HCA's PMA (IBA 16.1) answers PerfMgt on QP1 of this port before any
 * libibumad agent sees it (gsi_local, the kernel's process_mad), from the
 * model's port counters, into which the port's own (tp_ib_counters) are
 * copied by their growth at each PMA or SMA access.
 *
 * IsSM (PortInfo:CapabilityMask bit 1) is set while a process holds the
 * port's issm device open, as the kernel's ib_umad sets it: sofib0's
 * /dev/infiniband/issmN is a FIFO this daemon makes (sof_umad_proto.h,
 * SOF_UMAD_ISSM_DIRS) and `softofed run` binds there. An SM's open for
 * reading lets the daemon's non-blocking open for writing succeed; when
 * every reader is gone, the write end polls POLLERR. Looked at before
 * anything reads IsSM (an SMP to this port, the CA's attributes for a
 * program) and at each tick: the kernel sets IsSM in the issm open
 * itself, so an SM that opened issm is IsSM to every later reader. At
 * the tick alone, IsSM lagged an SM's open (O_RDWR: it does not wait for
 * our end) by up to half a second: OpenSM started then read the port
 * without IsSM and became master beside ours; and it outlived an SM that
 * died by as long, the SMInfo Gets of the others unanswered.
 * A change of IsSM sends trap 144 to the SM, an SMP that fails the M_Key
 * check (IBA 14.2.4) trap 256, again each tick until the SM represses it
 * (TrapRepress with its TID; a TrapRepress with another TID goes to the
 * node's own SM, whose trap it may answer).
 */
#include "sofd.h"

#include "mad.h"
#include "smp.h"
#include "sof_umad_proto.h"
#include "tp_ib.h"

#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* the port's whole table in the model's (every block of it) */
_Static_assert(TP_IB_PKEYS <= SOF_NODE_PKEYS && TP_IB_PKEYS % 32 == 0, "P_Key blocks fit");

static struct {
	struct sof_node *node;
	uint32_t psn; /* QP0's send PSNs */
	uint64_t smps, replies, pmas;
	struct tp_ib_counters seen; /* the port's counters at the last copy */
	char issm_path[64];	    /* the FIFO, "" when none could be made */
	int issm_fd;		    /* our write end while an SM holds it, or -1 */
	/* the port's last trap, sent again each tick until the SM represses
	 * it (IBA 13.4.8.3) or TRAP_RESENDS times */
	bool trap_pending;
	unsigned trap_resends;
	uint32_t trap_tid;
	uint8_t trap_mad[SOF_SMP_LEN];
	uint64_t traps, traps_repressed;
} sma = {.issm_fd = -1};

#define TRAP_RESENDS 30

/* The port's counters (transport/iblink.c counts them) into the model's
 * port 1 by what they grew since the last copy, so that a PMA Set that
 * reset a model counter starts it again from zero (IBA 16.1.3.5). */
static void counters_sync(void)
{
	const struct tp_ib_counters *t = tp_ib_counters();
	struct sof_port_counters *c = &sma.node->port[1].cnt;
	struct tp_ib_counters *o = &sma.seen;

	c->xmit_data += t->xmit_data - o->xmit_data;
	c->rcv_data += t->rcv_data - o->rcv_data;
	c->xmit_pkts += t->xmit_pkts - o->xmit_pkts;
	c->rcv_pkts += t->rcv_pkts - o->rcv_pkts;
	/* no multicast by the LRH's DLID yet: every packet counts as unicast */
	c->uni_xmit_pkts += t->xmit_pkts - o->xmit_pkts;
	c->uni_rcv_pkts += t->rcv_pkts - o->rcv_pkts;
	c->rcv_errors += (uint32_t)(t->rcv_errors - o->rcv_errors);
	c->local_phys_errors += (uint32_t)(t->drops[IB_DROP_VCRC] - o->drops[IB_DROP_VCRC] +
					   t->drops[IB_DROP_ICRC] - o->drops[IB_DROP_ICRC]);
	c->malformed_pkt_errors += (uint32_t)(t->rcv_errors - o->rcv_errors) -
				   (uint32_t)(t->drops[IB_DROP_VCRC] - o->drops[IB_DROP_VCRC] +
					      t->drops[IB_DROP_ICRC] - o->drops[IB_DROP_ICRC]);
	c->xmit_discards += (uint32_t)(t->xmit_discards - o->xmit_discards);
	c->vl15_dropped += (uint32_t)(t->vl15_dropped - o->vl15_dropped);
	c->link_downed += (uint32_t)(t->link_downed - o->link_downed);
	sma.node->port[1].pkey_violations +=
	    (uint16_t)(t->pkey_violations - o->pkey_violations);
	*o = *t;
}

/* sofd_mad_smi_ops.gsi_local: the HCA's PMA (IBA 16.1) and congestion
 * control agent (annex A10) on QP1 of this port, which answer before any
 * program's agent as an HCA's firmware does. */
static int gsi_local(uint8_t *mad, const struct sofd_mad_addr *from)
{
	(void)from;
	if (!sma.node || (mad[1] != SOF_MCLASS_PERF && mad[1] != SOF_MCLASS_CC) ||
	    (mad[3] & SOF_METHOD_RESP_BIT))
		return 0;
	counters_sync();
	sma.node->now_ms = sof_now_ns() / 1000000u;
	switch (sof_gsi_agent_process(sma.node, 1, mad, SOF_SMP_LEN)) {
	case SOF_SMA_REPLY:
		sma.pmas++;
		return 1;
	case SOF_SMA_PASS:
		return 0;
	default:
		return -1;
	}
}

/* The model's port 1 after the port changed (the link, ASSIGN). */
void sofd_ib_sma_sync(void)
{
	const struct tp_ib_attr *a = tp_ib_attr();
	struct sof_port *p;

	if (!sma.node)
		return;
	p = &sma.node->port[1];
	sma.node->node_guid = sma.node->sys_guid = a->node_guid;
	p->guid = p->guids[0] = a->port_guid;
	if (a->phys_state == IB_PHYS_LINKUP && p->phys != SOF_PHYS_LINKUP)
		sof_port_link_up(sma.node, 1);
	else if (a->phys_state != IB_PHYS_LINKUP && p->phys == SOF_PHYS_LINKUP)
		sof_port_link_down(sma.node, 1);
	/* the port retrains after an SM's Down: Initialize again */
	if (a->state == SOF_PORT_INIT && p->state == SOF_PORT_DOWN && p->phys == SOF_PHYS_LINKUP)
		p->state = SOF_PORT_INIT;
	/* Armed to Active on a data packet (iblink.c, IBA 7.2.3) */
	if (a->state == SOF_PORT_ACTIVE && p->state == SOF_PORT_ARMED)
		p->state = SOF_PORT_ACTIVE;
}

static void trap_raise(uint16_t num);

/* What an SM set in the model goes to the port. */
static void apply(unsigned ev)
{
	const struct sof_port *p = &sma.node->port[1];

	/* IBA 14.2.4.1: a violation of the M_Key check is reported */
	if (ev & SOF_SMA_EV_MKEY)
		trap_raise(SOF_TRAP_BAD_MKEY);
	if (ev & SOF_SMA_EV_DISABLE)
		tp_ib_disable(true);
	if (ev & SOF_SMA_EV_ENABLE)
		tp_ib_disable(false);
	if (ev & SOF_SMA_EV_LID)
		(void)tp_ib_set_lid(p->lid, p->lmc, p->sm_lid, p->sm_sl);
	if (ev & SOF_SMA_EV_PKEYS)
		for (unsigned i = 0; i < TP_IB_PKEYS; i++)
			if (tp_ib_attr()->pkeys[i] != p->pkeys[i])
				(void)tp_ib_set_pkey(i, p->pkeys[i]);
	if (tp_ib_attr()->subnet_prefix != p->gid_prefix)
		tp_ib_set_subnet_prefix(p->gid_prefix);
	if (tp_ib_attr()->active_mtu != p->neighbor_mtu)
		(void)tp_ib_set_mtu(p->neighbor_mtu);
	if ((ev & SOF_SMA_EV_STATE) && tp_ib_attr()->state != p->state && tp_ib_set_state(p->state))
		sofd_log("ib: SMA state %s refused by the port (%u)",
			 sof_port_state_names[p->state < 5 ? p->state : 0], tp_ib_attr()->state);
	/* last, after the new LID and SM LID are published: the kernel's
	 * IB_EVENT_CLIENT_REREGISTER, which ipoib and the SA clients take
	 * as "join again, ask the SA again" */
	if (ev & SOF_SMA_EV_REREG)
		sofd_ib_port_event(IBV_EVENT_CLIENT_REREGISTER);
}

/* Send mad (256 bytes) from QP0 on VL15 to dlid. */
static void send_smp(uint16_t dlid, const uint8_t *mad)
{
	struct tp_path path = {.link = TP_LINK_IB, .dlid = dlid};
	int err = tp_ud_send(&path, 0, 0, 0, 0xffff, &sma.psn, mad, SOF_SMP_LEN);

	if (err)
		sofd_log("ib: SMP response not sent: %s", strerror(-err));
	else
		sma.replies++;
}

/* ---- traps (IBA 14.2.5.1 Notice): to the SM's LID, until repressed ---------- */

static void trap_send(void)
{
	const struct sof_port *p = &sma.node->port[1];

	if (p->sm_lid && p->lid)
		send_smp(p->sm_lid, sma.trap_mad);
}

/* A new trap of this port (144: its CapabilityMask changed; 256: an SMP
 * with a bad M_Key) for the SM. */
static void trap_raise(uint16_t num)
{
	const struct sof_port *p = &sma.node->port[1];

	if (!p->sm_lid || !p->lid || p->state != SOF_PORT_ACTIVE)
		return; /* no SM to tell yet: it reads the port when it comes */
	/* TIDs of our own, out of the agents' range (upper half nonzero) */
	sof_sma_trap(sma.node, 1, num, (uint64_t)0x534d4100u << 32 | ++sma.trap_tid, sma.trap_mad);
	sma.trap_pending = true;
	sma.trap_resends = 0;
	sma.traps++;
	trap_send();
}

/* true when mad represses this port's own pending trap */
static bool trap_repressed(const uint8_t *mad)
{
	/* the TID's low 32 bits: an SM through libumad2sim on the fabric
	 * has the high ones of its TrapRepress replaced (fabric/link.c) */
	if (sma.trap_pending && !memcmp(mad + 12, sma.trap_mad + 12, 4)) {
		sma.trap_pending = false;
		sma.traps_repressed++;
		return true;
	}
	return false;
}

static void issm_look(void);

/* TP_HOOK_QP0: an SMP (the port checked VL15, the LRH and the CRCs). */
static void qp0_input(const struct roce_hdr *h, const uint8_t *payload, uint32_t paylen,
		      const struct roce_addr *a, bool from_net)
{
	uint8_t mad[SOF_SMP_LEN];
	struct sof_dr_next next;
	uint16_t slid, dlid;
	unsigned ev = 0;
	bool directed, lid_routed;
	uint8_t sl;

	(void)a;
	(void)from_net;
	if (!tp_ib_rx_lrh(&slid, &dlid, &sl) || h->opcode != ROCE_UD_SEND_ONLY ||
	    paylen != SOF_SMP_LEN) {
		sofd.drops[SOF_DROP_mad]++;
		return;
	}
	memcpy(mad, payload, sizeof(mad));
	sma.smps++;
	counters_sync();
	issm_look(); /* PortInfo:CapabilityMask as it is now */
	directed = mad[1] == SOF_MCLASS_SMP_DR;
	lid_routed = dlid != IB_LID_PERMISSIVE;
	if (directed && sof_smp_dr_step(sma.node, mad, 1, lid_routed, 0, &next) != SOF_DR_LOCAL)
		return; /* a CA forwards nothing: dropped and counted by the model */
	sma.node->now_ms = sof_now_ns() / 1000000u;
	switch (sof_sma_process(sma.node, 1, mad, sizeof(mad), &ev)) {
	case SOF_SMA_REPLY:
		break;
	case SOF_SMA_PASS: {
		/* a response, trap or TrapRepress: for this node's SM (QP0's
		 * agents), unless it represses our own trap */
		struct sofd_mad_addr from = {.lid = slid, .sl = sl, .no_grh = true, .ib = true};

		apply(ev);
		if ((ev & SOF_SMA_EV_REPRESS) && trap_repressed(mad))
			return;
		from.remote_qpn = 0;
		sofd_mad_smi_input(mad, sizeof(mad), &from);
		return;
	}
	default:
		apply(ev);
		if (ev & SOF_SMA_EV_REPRESS)
			(void)trap_repressed(mad);
		return;
	}
	apply(ev);
	if (!directed) {
		send_smp(slid, mad);
		return;
	}
	switch (sof_smp_dr_step(sma.node, mad, 0, lid_routed, slid, &next)) {
	case SOF_DR_OUT_PORT:
		send_smp(IB_LID_PERMISSIVE, mad);
		break;
	case SOF_DR_OUT_LID:
		send_smp(next.lid, mad);
		break;
	default:
		break;
	}
}

/* An SMP this node's SMA answers for its own SM: the reply goes back to
 * QP0's agents from the main loop. */
static int smi_local(uint8_t *mad, bool directed, bool lid_routed)
{
	struct sofd_mad_addr from = {.no_grh = true, .ib = true};
	struct sof_dr_next next;
	unsigned ev = 0;

	sma.smps++;
	issm_look();
	sma.node->now_ms = sof_now_ns() / 1000000u;
	if (sof_sma_process(sma.node, 1, mad, SOF_SMP_LEN, &ev) != SOF_SMA_REPLY) {
		apply(ev);
		/* this host's SM repressing this port's trap */
		if (ev & SOF_SMA_EV_REPRESS)
			(void)trap_repressed(mad);
		return 0;
	}
	apply(ev);
	if (directed && sof_smp_dr_step(sma.node, mad, 0, lid_routed, 0, &next) == SOF_DR_DISCARD)
		return 0;
	from.lid = directed ? IB_LID_PERMISSIVE : tp_ib_attr()->lid;
	return sofd_mad_smi_loop(mad, &from);
}

/* The SMI's send (sofd_mad_smi_ops): an SMP of a QP0 agent. */
static int smi_send(const struct sofd_mad_addr *to, const uint8_t *smp)
{
	const struct tp_ib_attr *a = tp_ib_attr();
	uint8_t mad[SOF_SMP_LEN];
	struct sof_dr_next next;
	bool directed = smp[1] == SOF_MCLASS_SMP_DR;
	bool lid_routed = to->lid != IB_LID_PERMISSIVE;

	memcpy(mad, smp, sizeof(mad));
	if (!directed) {
		if (a->lid && (to->lid & ~((1u << a->lmc) - 1)) == a->lid)
			return smi_local(mad, false, true);
		send_smp(to->lid, mad);
		return 0;
	}
	switch (sof_smp_dr_step(sma.node, mad, 0, lid_routed, 0, &next)) {
	case SOF_DR_LOCAL:
		return smi_local(mad, true, lid_routed);
	case SOF_DR_OUT_PORT:
		send_smp(IB_LID_PERMISSIVE, mad);
		return 0;
	case SOF_DR_OUT_LID:
		send_smp(next.lid, mad);
		return 0;
	default:
		return -EINVAL;
	}
}

static const struct sofd_mad_smi_ops smi_ops = {
    .send = smi_send,
    .gsi_local = gsi_local,
};

/* ---- IsSM while the issm FIFO has a reader ---------------------------------- */

static void issm_set(bool on)
{
	struct sof_port *p = &sma.node->port[1];

	if (on == !!(p->cap_mask & SOF_CAP_IS_SM))
		return;
	if (on)
		p->cap_mask |= SOF_CAP_IS_SM;
	else
		p->cap_mask &= ~SOF_CAP_IS_SM;
	sofd_log("ib: IsSM %s", on ? "set (issm held open)" : "cleared (issm closed)");
	/* IBA 14.2.5.1: a CA port whose CapabilityMask changed says so */
	trap_raise(SOF_TRAP_CAP_CHANGE);
}

/* IsSM after whether a process holds the FIFO for reading now */
static void issm_look(void)
{
	struct pollfd pfd = {.fd = sma.issm_fd};

	if (!sma.node || !sma.issm_path[0])
		return;
	if (sma.issm_fd < 0) {
		/* ENXIO while nobody holds it for reading */
		sma.issm_fd = open(sma.issm_path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
		if (sma.issm_fd >= 0)
			issm_set(true);
		return;
	}
	if (poll(&pfd, 1, 0) == 1 && (pfd.revents & (POLLERR | POLLHUP))) {
		close(sma.issm_fd);
		sma.issm_fd = -1;
		issm_set(false);
	}
}

bool sofd_ib_is_sm(void)
{
	issm_look();
	return sma.node && (sma.node->port[1].cap_mask & SOF_CAP_IS_SM);
}

void sofd_ib_sma_tick(void)
{
	if (!sma.node)
		return;
	if (sma.trap_pending) {
		if (sma.trap_resends++ < TRAP_RESENDS)
			trap_send();
		else
			sma.trap_pending = false;
	}
	issm_look();
}

/* The FIFO in the first directory of SOF_UMAD_ISSM_DIRS we may write. */
static void issm_make(void)
{
	static const char *const dirs[] = {SOF_UMAD_ISSM_DIRS};

	for (unsigned i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(sma.issm_path, sizeof(sma.issm_path), SOF_UMAD_ISSM_FMT, dirs[i],
			 (long)getpid());
		(void)unlink(sma.issm_path); /* a dead daemon's of our pid */
		if (!mkfifo(sma.issm_path, 0600))
			return;
	}
	sofd_log("ib: no issm FIFO (%s): IsSM stays clear", strerror(errno));
	sma.issm_path[0] = '\0';
}

int sofd_ib_sma_init(const char *desc)
{
	const struct tp_ib_attr *a = tp_ib_attr();
	struct sof_port *p;

	sma.node = sof_node_new(SOF_NODE_CA, 1, a->node_guid);
	if (!sma.node)
		return -ENOMEM;
	snprintf(sma.node->desc, sizeof(sma.node->desc), "%s", desc);
	p = &sma.node->port[1];
	/* the default GID prefix (IBA 4.1.1: fe80::/64) until an SM sets one */
	p->gid_prefix = a->subnet_prefix;
	/* NodeInfo:PartitionCap: the entries the transport's port keeps
	 * (an SM places no P_Key beyond them) */
	sma.node->partition_cap = TP_IB_PKEYS;
	p->npkeys = TP_IB_PKEYS;
	/* VL0 only: VLCap and OperationalVLs 1, every SL to VL0 */
	p->vl_cap = p->op_vls = 1;
	memset(p->sl2vl[0], 0, sizeof(p->sl2vl[0]));
	/* responses, traps and SMInfo go to QP0's agents (an SM here), which
	 * the MAD layer drops and counts when none waits */
	sma.node->sm_agent = true;
	sma.seen = *tp_ib_counters();
	sofd_ib_sma_sync();
	tp_recv_hook(TP_HOOK_QP0, qp0_input);
	sofd_mad_smi_attach(&smi_ops);
	issm_make();
	return 0;
}

void sofd_ib_sma_traps(uint64_t *sent, uint64_t *repressed, uint64_t *pmas)
{
	*sent = sma.traps;
	*repressed = sma.traps_repressed;
	*pmas = sma.pmas;
}

void sofd_ib_sma_counts(uint64_t *smps, uint64_t *replies)
{
	*smps = sma.smps;
	*replies = sma.replies;
}

void sofd_ib_sma_fini(void)
{
	tp_recv_hook(TP_HOOK_QP0, NULL);
	sofd_mad_smi_attach(NULL);
	if (sma.issm_fd >= 0)
		close(sma.issm_fd);
	sma.issm_fd = -1;
	if (sma.issm_path[0])
		(void)unlink(sma.issm_path);
	sma.issm_path[0] = '\0';
	sof_node_free(sma.node);
	sma.node = NULL;
}
