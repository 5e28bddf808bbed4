/*
 * Programming the fabric (IBA 14.4.4-14.4.6) once LIDs and routes are
 * known, in two rounds of SMPs, each round all in flight at once:
 *   1. every switch's SwitchInfo (LinearFDBTop, PortStateChange cleared)
 *      and the 64-entry LFT blocks that differ from what the switch holds;
 *      every CA port and switch port 0 its PortInfo (LID, LMC, SM LID and
 *      SL, GID prefix, subnet time-out, NeighborMTU) with PortState Armed
 *      when it is in Initialize, and ClientReregister in our first sweep
 *      as master and on a port new to the subnet; switch external ports
 *      in Initialize Armed;
 *      with --partitions, the P_KeyTables (partition.c) and partition
 *      enforcement on switch ports to CAs;
 *   2. every port in Armed to Active.
 * All by directed route, so nothing depends on the tables being written.
 * A Set refused (a status) is logged and counted; the port stays as it is
 * and the next sweep tries again.
 */
#include <errno.h>
#include <string.h>

#include "sm.h"
#include "smp.h"

static void on_switchinfo_set(struct sm *sm, struct sm_req *rq, int err, const uint8_t *mad)
{
	struct sm_switch *s = rq->node->sw;

	if (err) {
		sm->errors++;
		sm_log(sm, 1, "SwitchInfo Set on %s: %s", rq->node->desc,
		       err == -ETIMEDOUT ? "no answer" : "refused");
		return;
	}
	s->lft_top = sof_get16(sm_smp_data(mad) + 6);
	s->port_state_change = sm_smp_data(mad)[11] >> 2 & 1;
}

static void on_lft_set(struct sm *sm, struct sm_req *rq, int err, const uint8_t *mad)
{
	struct sm_switch *s = rq->node->sw;

	(void)mad;
	if (err) {
		sm->errors++;
		sm_log(sm, 1, "LFT block %u Set on %s: %s", rq->arg, rq->node->desc,
		       err == -ETIMEDOUT ? "no answer" : "refused");
		return;
	}
	memcpy(s->lft_hw + rq->arg * SM_LFT_BLOCK, rq->mad + SOF_SMP_OFF_DATA, SM_LFT_BLOCK);
}

static void on_portinfo_set(struct sm *sm, struct sm_req *rq, int err, const uint8_t *mad)
{
	struct sm_port *p = &rq->node->port[rq->port];
	const uint8_t *d;

	if (err) {
		sm->errors++;
		sm_log(sm, 1, "PortInfo Set on %s port %u: %s", rq->node->desc, rq->port,
		       err == -ETIMEDOUT ? "no answer" : "refused");
		if (rq->arg == 2 && sm->release_left)
			sm->release_left--;
		return;
	}
	d = sm_smp_data(mad);
	memcpy(p->raw_portinfo, d, 64);
	p->state = d[32] & 0xf;
	p->sm_lid = sof_get16(d + 18);
	p->neighbor_mtu = d[36] >> 4;
	p->sm_sl = d[36] & 0xf;
	p->subnet_timeout = d[51] & 0x1f;
	p->gid_prefix = sof_get64(d + 8);
	if (rq->arg) /* the port holds our key (or 0, released) now */
		p->m_key_held = 0;
	if (rq->arg == 2 && sm->release_left) /* mkey.c's release */
		sm->release_left--;
	else if (rq->arg)
		p->lid_set = sof_get16(d + 16) == p->lid;
	if (rq->mad[SOF_SMP_OFF_DATA + 51] & 0x80) /* the ClientReregister owed, given */
		p->rereg = false;
}

static const uint8_t *node_path(const struct sm_port *p, unsigned *hops)
{
	if (p->node->type == SOF_NODE_SWITCH) {
		*hops = p->node->hops;
		return p->node->path;
	}
	*hops = p->hops;
	return p->path;
}

/* A PortInfo Set from what was read: no-change values where IBA has them
 * (PortPhysicalState, LinkDownDefaultState, LinkWidthEnabled,
 * LinkSpeedEnabled 0), PortState `state`, and for a port with a LID
 * (mgmt) its addressing, with ClientReregister when `rereg`. */
static void portinfo_set(struct sm *sm, struct sm_port *p, uint8_t state, bool mgmt, bool rereg)
{
	struct sm_subnet *sn = &sm->sn;
	uint8_t d[64];
	unsigned hops;
	const uint8_t *path = node_path(p, &hops);
	struct sm_req *rq;

	memcpy(d, p->raw_portinfo, 64);
	d[32] = (uint8_t)((d[32] & 0xf0) | state);
	d[33] = 0;
	d[29] = 0;
	d[35] &= 0xf0;
	d[51] &= 0x7f; /* ClientReregister only where asked for */
	if (p->peer && p->num) {
		uint8_t mtu = p->mtu_cap < p->peer->mtu_cap ? p->mtu_cap : p->peer->mtu_cap;

		if (mtu)
			d[36] = (uint8_t)((mtu << 4) | (d[36] & 0xf));
	}
	/* IBA 14.2.5.6: PartitionEnforcementInbound/Outbound on a switch
	 * port to a CA when partitions are configured (partition.c) */
	if (sm_part_enforce(sm, p))
		d[43] |= 0x0c;
	if (mgmt) {
		/* M_Key, its lease and protection (IBA 14.2.4; 0: none;
		 * mkey_clear: given up, mkey.c) */
		sof_put64(d, sm->mkey_clear ? 0 : p->m_key ? p->m_key : sn->m_key);
		sof_put16(d + 26, sn->m_key_lease);
		sof_put64(d + 8, sn->prefix);
		sof_put16(d + 16, p->lid);
		sof_put16(d + 18, sn->sm_lid);
		d[34] = (uint8_t)((sm->mkey_clear ? 0 : (sn->m_key_protect & 3) << 6) | (d[34] & 0x38) |
				  p->lmc);
		d[36] = (uint8_t)((d[36] & 0xf0) | sn->sm_sl);
		/* IBA 14.4.11: ClientReregister asks the port's clients
		 * to register with the SA again (an event on the port) */
		d[51] = (uint8_t)((rereg ? 0x80 : 0) | (sn->subnet_timeout & 0x1f));
	}
	rq = sm_smp_dr(sm, path, hops, SOF_METHOD_SET, SOF_ATTR_PORT_INFO, p->num, d,
		       on_portinfo_set);
	if (rq) {
		rq->node = p->node;
		rq->port = p->num;
		rq->arg = sm->mkey_clear ? 2 : mgmt; /* 2: a release (mkey.c) */
	}
}

static void program_switch(struct sm *sm, struct sm_node *n)
{
	struct sm_switch *s = n->sw;
	unsigned top = sm->sn.max_lid, b, nblocks;
	struct sm_req *rq;

	if (top >= s->lft_cap)
		top = s->lft_cap ? s->lft_cap - 1u : 0;
	if (s->lft_top != top || s->port_state_change) {
		uint8_t d[64];

		memcpy(d, s->raw_switchinfo, 64);
		sof_put16(d + 6, (uint16_t)top);
		d[11] |= 0x04; /* PortStateChange: writing 1 clears it */
		rq = sm_smp_dr(sm, n->path, n->hops, SOF_METHOD_SET, SOF_ATTR_SWITCH_INFO, 0, d,
			       on_switchinfo_set);
		if (rq)
			rq->node = n;
	}
	nblocks = top / SM_LFT_BLOCK + 1;
	for (b = 0; b < nblocks; b++) {
		const uint8_t *want = s->lft + b * SM_LFT_BLOCK;

		if (!memcmp(want, s->lft_hw + b * SM_LFT_BLOCK, SM_LFT_BLOCK))
			continue;
		rq = sm_smp_dr(sm, n->path, n->hops, SOF_METHOD_SET, SOF_ATTR_LFT, b, want,
			       on_lft_set);
		if (rq) {
			rq->node = n;
			rq->arg = b;
			sm->lft_blocks++;
		}
	}
}

void sm_program_start(struct sm *sm)
{
	struct sm_subnet *sn = &sm->sn;
	unsigned i, j, nrereg = 0;

	sm->phase = SM_PHASE_PROGRAM;
	sm->t_phase = sm_now_us();
	sm->errors = 0;
	sm->lft_blocks = 0;
	for (i = 0; i < sn->nnodes; i++) {
		struct sm_node *n = sn->nodes[i];

		if (!n->present)
			continue;
		if (n->sw)
			program_switch(sm, n);
		for (j = 0; j <= n->nports; j++) {
			struct sm_port *p = &n->port[j];
			bool mgmt = n->sw ? j == 0 : j != 0;
			uint8_t st;
			bool rereg;

			if (!p->present || (!mgmt && !p->peer))
				continue;
			/* ClientReregister (IBA 14.4.11), as OpenSM: on every
			 * port of our first sweep as master (after start or
			 * taking over: our SA knows no client) and on a port
			 * new to the subnet; once, where the port can */
			if (sm->rereg_all && mgmt)
				p->rereg = true;
			if (!(p->cap_mask & SOF_CAP_IS_CLIENT_REREG))
				p->rereg = false;
			rereg = mgmt && p->lid && p->rereg;
			st = p->state == SOF_PORT_INIT && (p->peer || !p->num) ? SOF_PORT_ARMED
									     : SOF_PORT_NOP;
			if (n->sw && j == 0)
				st = SOF_PORT_NOP;
			if ((mgmt && (!p->lid_set || p->sm_lid != sn->sm_lid)) ||
			    st != SOF_PORT_NOP ||
			    (sm_part_enforce(sm, p) && (p->raw_portinfo[43] & 0x0c) != 0x0c) ||
			    rereg)
				portinfo_set(sm, p, st, mgmt && p->lid, rereg);
			nrereg += rereg;
		}
	}
	if (nrereg)
		sm_log(sm, 1, "sweep %u: ClientReregister to %u ports%s", sn->sweep, nrereg,
		       sm->rereg_all ? " (first sweep as master)" : "");
	sm->rereg_all = false;
	sm_part_program(sm);
}

void sm_activate_start(struct sm *sm)
{
	struct sm_subnet *sn = &sm->sn;
	unsigned i, j;

	sm->phase = SM_PHASE_ACTIVATE;
	sm->t_phase = sm_now_us();
	for (i = 0; i < sn->nnodes; i++) {
		struct sm_node *n = sn->nodes[i];

		if (!n->present)
			continue;
		for (j = n->sw ? 1 : 0; j <= n->nports; j++) {
			struct sm_port *p = &n->port[j];

			if (p->present && p->state == SOF_PORT_ARMED)
				portinfo_set(sm, p, SOF_PORT_ACTIVE, false, false);
		}
	}
}

unsigned sm_program_mgmt(struct sm *sm)
{
	struct sm_subnet *sn = &sm->sn;
	unsigned i, j, n = 0;

	for (i = 0; i < sn->nnodes; i++) {
		struct sm_node *nd = sn->nodes[i];

		if (!nd->present)
			continue;
		for (j = nd->sw ? 0 : 1; j <= (nd->sw ? 0u : nd->nports); j++) {
			struct sm_port *p = &nd->port[j];

			if (!p->present || !p->lid)
				continue;
			portinfo_set(sm, p, SOF_PORT_NOP, true, false);
			p->lid_set = false; /* a later sweep of ours writes it again */
			n++;
			sm->release_left += sm->mkey_clear;
		}
	}
	return n;
}
