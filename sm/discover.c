/*
 * Discovery (IBA 14.2.2, 14.4.1): a walk of the fabric by directed-route
 * SMPs from the SM's port. NodeInfo through every link that is up finds
 * the node at its far end (by its NodeGUID: a node met again is a link,
 * not a new node, so loops end); a node met the first time in a sweep is
 * asked for its NodeDescription, SwitchInfo (switches) and the PortInfo of
 * its ports, and the ports that are up lead on, but for those whose link a
 * NodeInfo from the far end already crossed in this sweep (each link is
 * asked about once, not from both ends). Every request is queued to
 * the SMP engine, so the walk runs with `window` SMPs outstanding.
 *
 * Answers are checked before use and a lying one is dropped, not
 * trusted: a node type or port count that changed since the node was first
 * seen, a LocalPortNum beyond NumPorts, paths beyond 63 hops.
 *
 * The light sweep reads every switch's SwitchInfo and asks for a heavy
 * sweep when one has PortStateChange set or does not answer.
 */
#include <errno.h>
#include <string.h>

#include "sm.h"
#include "smp.h"

static void on_nodeinfo(struct sm *sm, struct sm_req *rq, int err, const uint8_t *mad);

/* NodeInfo of the node behind port `port` of n (port 0: n itself, hops 0) */
static void ask_nodeinfo(struct sm *sm, struct sm_node *n, const uint8_t *path, unsigned hops,
			 uint8_t port)
{
	uint8_t p[SM_MAX_DR_HOPS + 1];
	struct sm_req *rq;

	if (hops + (port ? 1u : 0u) > SM_MAX_DR_HOPS)
		return;
	memcpy(p, path, hops + 1u);
	if (port)
		p[++hops] = port;
	rq = sm_smp_dr(sm, p, hops, SOF_METHOD_GET, SOF_ATTR_NODE_INFO, 0, NULL, on_nodeinfo);
	if (rq) {
		rq->node = n;
		rq->port = port;
		/* a port whose key the SM does not know yet may hold one of
		 * the guid2mkey file's (a restart): those tried at once */
		sm_mkey_try_all(sm, rq, on_nodeinfo);
	}
}

static void on_nodedesc(struct sm *sm, struct sm_req *rq, int err, const uint8_t *mad)
{
	struct sm_node *n = rq->node;

	(void)sm;
	if (err)
		return;
	memcpy(n->raw_desc, sm_smp_data(mad), 64);
	memcpy(n->desc, n->raw_desc, 64);
	n->desc[64] = 0;
}

static void on_switchinfo(struct sm *sm, struct sm_req *rq, int err, const uint8_t *mad)
{
	struct sm_switch *s = rq->node->sw;
	const uint8_t *d;

	if (err) {
		if (sm->phase == SM_PHASE_LIGHT)
			sm->resweep = true;
		return;
	}
	d = sm_smp_data(mad);
	if (sm->phase == SM_PHASE_LIGHT) {
		if (d[11] & 0x04)
			sm->resweep = true;
		return;
	}
	memcpy(s->raw_switchinfo, d, 64);
	s->lft_cap = sof_get16(d + 0);
	if (s->lft_cap > SM_UCAST_LIDS)
		s->lft_cap = SM_UCAST_LIDS;
	s->mft_cap = sof_get16(d + 4);
	s->lft_top = sof_get16(d + 6);
	s->default_port = d[8];
	s->life_time = d[11] >> 3;
	s->port_state_change = d[11] >> 2 & 1;
	s->lids_per_port = sof_get16(d + 12);
	s->partition_enf_cap = sof_get16(d + 14);
	s->enhanced_port0 = d[16] >> 3 & 1;
	s->mft_top = sof_get16(d + 18);
}

static void on_portinfo(struct sm *sm, struct sm_req *rq, int err, const uint8_t *mad)
{
	struct sm_node *n = rq->node;
	struct sm_port *p = &n->port[rq->port];
	const uint8_t *d;
	bool back;

	if (err)
		return;
	d = sm_smp_data(mad);
	memcpy(p->raw_portinfo, d, 64);
	p->present = true;
	/* absent from the last heavy sweep (new, or back after a reset):
	 * no PortInfo answer then (pi_sweep; seen_sweep will not do, as
	 * on_nodeinfo sets a CA port's before asking for its PortInfo) */
	back = !p->pi_sweep || p->pi_sweep + 1 < sm->sn.sweep;
	/* its P_KeyTable is read again before it is written */
	if (back && !p->pkeys_reading) {
		p->pkeys_read = false;
		p->pkeys_set = 0;
	}
	/* having joined the subnet anew, its clients register again
	 * (IBA 14.4.11; program.c) */
	if (back)
		p->rereg = true;
	p->pi_sweep = sm->sn.sweep;
	p->seen_sweep = sm->sn.sweep;
	p->gid_prefix = sof_get64(d + 8);
	/* the LID the port has now: kept when free (an SM restart) */
	if (!p->lid_wanted)
		p->lid_wanted = sof_get16(d + 16);
	p->sm_lid = sof_get16(d + 18);
	p->cap_mask = sof_get32(d + 20);
	p->local_port = d[28];
	p->width_enabled = d[29];
	p->width_supported = d[30];
	p->width_active = d[31];
	p->speed_supported = d[32] >> 4;
	p->state = d[32] & 0xf;
	p->phys = d[33] >> 4;
	p->speed_active = d[35] >> 4;
	p->speed_enabled = d[35] & 0xf;
	p->neighbor_mtu = d[36] >> 4;
	p->sm_sl = d[36] & 0xf;
	p->vl_cap = d[37] >> 4;
	p->mtu_cap = d[41] & 0xf;
	p->op_vls = d[43] >> 4;
	p->subnet_timeout = d[51] & 0x1f;
	p->resp_time = d[52] & 0x1f;
	p->cap_mask2 = sof_get16(d + 60);
	/* IBA 14.2.4.1: at protection level 0 a Get shows the M_Key, and a
	 * port whose lease ran out (14.2.4.2) is at 0 with the key of the
	 * SM that set it: our SMPs to it carry that key until our PortInfo
	 * Set gives it ours (mkey.c) */
	if ((n->sw ? rq->port == 0 : rq->port != 0) && !(d[34] >> 6) && sof_get64(d) &&
	    sof_get64(d) != (p->m_key ? p->m_key : sm->sn.m_key))
		p->m_key_held = sof_get64(d);
	else
		p->m_key_held = 0;
	/* and its M_Key ours (shown to the SMP that carried it; a port an
	 * SM released holds 0) */
	p->lid_set = sof_get16(d + 16) == p->lid && p->lid && p->sm_lid == sm->sn.sm_lid &&
		     (d[34] & 7) == p->lmc &&
		     sof_get64(d) == (p->m_key ? p->m_key : sm->sn.m_key) &&
		     (d[34] >> 6) == (sm->sn.m_key_protect & 3);
	if (p->state < SOF_PORT_INIT)
		p->peer = NULL;
	/* go on through a switch's ports that are up, and out of the SM's
	 * own CA port; not across a link whose far end a NodeInfo from
	 * there already named in this sweep (the port it entered by, or a
	 * link between two switches met from the other side first): one
	 * NodeInfo per link, not one per end */
	if (p->peer && p->link_sweep == sm->sn.sweep && p->peer->link_sweep == sm->sn.sweep &&
	    p->peer->peer == p)
		return;
	if (p->state >= SOF_PORT_INIT && rq->port &&
	    (n->type == SOF_NODE_SWITCH || n->hops == 0))
		ask_nodeinfo(sm, n, n->type == SOF_NODE_SWITCH ? n->path : p->path,
			     n->type == SOF_NODE_SWITCH ? n->hops : p->hops, rq->port);
}

static void ask(struct sm *sm, struct sm_node *n, const uint8_t *path, unsigned hops,
		uint16_t attr, uint8_t port, sm_done_fn *done)
{
	struct sm_req *rq = sm_smp_dr(sm, path, hops, SOF_METHOD_GET, attr, port, NULL, done);

	if (rq) {
		rq->node = n;
		rq->port = port;
	}
}

static void link_ports(struct sm_port *a, struct sm_port *b)
{
	if (a->peer && a->peer != b && a->peer->peer == a)
		a->peer->peer = NULL;
	if (b->peer && b->peer != a && b->peer->peer == b)
		b->peer->peer = NULL;
	a->peer = b;
	b->peer = a;
}

static void on_nodeinfo(struct sm *sm, struct sm_req *rq, int err, const uint8_t *mad)
{
	struct sm_subnet *sn = &sm->sn;
	struct sm_node *parent = rq->node, *n;
	const uint8_t *d, *path = rq->mad + SOF_SMP_OFF_INIT_PATH;
	unsigned hops = rq->mad[SOF_SMP_OFF_HOP_CNT], i;
	uint8_t type, nports, lport;
	uint64_t guid, pguid;
	struct sm_port *p;

	if (err) {
		/* one of several keys tried (mkey.c): another may answer */
		if (rq->m_key_set)
			return;
		if (parent && parent->port[rq->port].peer) {
			parent->port[rq->port].peer = NULL;
			sm->changed = true;
		}
		return;
	}
	d = sm_smp_data(mad);
	type = d[2];
	nports = d[3];
	guid = sof_get64(d + 12);
	pguid = sof_get64(d + 20);
	lport = d[36];
	if (type < SOF_NODE_CA || type > SOF_NODE_ROUTER || !nports || nports > 254 || !guid ||
	    (type == SOF_NODE_SWITCH ? lport > nports : lport < 1 || lport > nports)) {
		sm_log(sm, 1, "NodeInfo with bad type/ports/GUID at %u hops: ignored", hops);
		return;
	}
	/* a switch answers on the port the SMP entered by; at hops 0 it is
	 * the SM's own switch (port 0) */
	n = sm_node_by_guid(sn, guid);
	if (n && (n->type != type || n->nports != nports)) {
		sm_log(sm, 1, "node %#llx changed type or ports: answer ignored",
		       (unsigned long long)guid);
		return;
	}
	if (!n) {
		n = sm_node_add(sn, type, nports, guid);
		if (!n)
			return;
		sm->changed = true;
	}
	p = &n->port[type == SOF_NODE_SWITCH ? 0 : lport];
	if (parent && rq->port && lport) {
		link_ports(&parent->port[rq->port], &n->port[lport]);
		parent->port[rq->port].link_sweep = n->port[lport].link_sweep = sn->sweep;
	}
	if (!parent) {
		sn->self = p;
		sn->sm_guid = pguid;
	}
	if (type != SOF_NODE_SWITCH && p->seen_sweep != sn->sweep) {
		/* a CA port met the first time in this sweep: its path,
		 * GUID and PortInfo */
		p->seen_sweep = sn->sweep;
		memcpy(p->path, path, hops + 1u);
		p->hops = (uint8_t)hops;
		if (p->guid != pguid) {
			p->guid = pguid;
			sm_port_hash_add(sn, p);
		}
		p->m_key = sm_mkey_of_guid(sm, pguid);
		ask(sm, n, p->path, p->hops, SOF_ATTR_PORT_INFO, lport, on_portinfo);
	}
	if (n->seen_sweep == sn->sweep)
		return;
	n->seen_sweep = sn->sweep;
	n->present = true;
	memcpy(n->raw_nodeinfo, d, 64);
	n->sys_guid = sof_get64(d + 4);
	n->partition_cap = sof_get16(d + 28);
	n->device_id = sof_get16(d + 30);
	n->revision = sof_get32(d + 32);
	n->vendor_id = sof_get32(d + 36) & 0xffffff;
	memcpy(n->path, path, hops + 1u);
	n->hops = (uint8_t)hops;
	n->in_port = lport;
	ask(sm, n, n->path, n->hops, SOF_ATTR_NODE_DESC, 0, on_nodedesc);
	if (type != SOF_NODE_SWITCH)
		return;
	if (n->port[0].guid != pguid) {
		n->port[0].guid = pguid;
		sm_port_hash_add(sn, &n->port[0]);
	}
	n->port[0].m_key = sm_mkey_of_guid(sm, pguid);
	for (i = 1; i <= nports; i++)
		n->port[i].guid = pguid;
	ask(sm, n, n->path, n->hops, SOF_ATTR_SWITCH_INFO, 0, on_switchinfo);
	for (i = 0; i <= nports; i++)
		ask(sm, n, n->path, n->hops, SOF_ATTR_PORT_INFO, (uint8_t)i, on_portinfo);
}

void sm_discover_start(struct sm *sm)
{
	struct sm_subnet *sn = &sm->sn;
	unsigned i, j;
	uint8_t path[SM_MAX_DR_HOPS + 1] = {0};

	sn->sweep++;
	for (i = 0; i < sn->nnodes; i++) {
		sn->nodes[i]->present = false;
		for (j = 0; j <= sn->nodes[i]->nports; j++)
			sn->nodes[i]->port[j].present = false;
	}
	sm->changed = false;
	sm->resweep = false;
	sm->phase = SM_PHASE_DISCOVER;
	sm->t_phase = sm_now_us();
	ask_nodeinfo(sm, NULL, path, 0, 0);
}

static void on_ping(struct sm *sm, struct sm_req *rq, int err, const uint8_t *mad)
{
	(void)sm;
	(void)rq;
	(void)err;
	(void)mad;
}

#define SM_MISSED_SWEEPS 4

/* Called when a heavy sweep's walk is done: the nodes one of the last
 * SM_MISSED_SWEEPS heavy sweeps reached and this one did not. A port that another SM protects
 * at M_Key protection level 2 or 3 (a master gone without releasing its
 * keys) drops our NodeInfo, and the walk stops there: the nodes behind
 * it are not even asked, so their M_Key lease timers (IBA 14.2.4.2), which
 * a refused SMP starts, would start only when the walk reaches them,
 * one hop per lease period. So each missed node is sent one NodeInfo
 * along the path the last sweep took (a directed-route SMP is checked
 * only where it ends, 14.2.2): one lease period later every port is
 * free at once (a node is pinged the first sweep it is missed). The
 * answers are not waited for; the count makes the next periodic sweep a
 * heavy one, so a node gone for good costs at most SM_MISSED_SWEEPS
 * heavy sweeps. */
unsigned sm_discover_missed(struct sm *sm)
{
	struct sm_subnet *sn = &sm->sn;
	unsigned i, n = 0;

	for (i = 0; i < sn->nnodes; i++) {
		struct sm_node *node = sn->nodes[i];
		const struct sm_port *mgmt = NULL;
		struct sm_req *rq;

		if (node->seen_sweep == sn->sweep ||
		    node->seen_sweep + SM_MISSED_SWEEPS < sn->sweep)
			continue;
		n++;
		if (node->seen_sweep + 1 != sn->sweep)
			continue; /* pinged when first missed */
		if (node->sw)
			mgmt = &node->port[0];
		else if (node->in_port <= node->nports)
			mgmt = &node->port[node->in_port];
		rq = sm_smp_dr(sm, node->path, node->hops, SOF_METHOD_GET, SOF_ATTR_NODE_INFO, 0,
			       NULL, on_ping);
		if (!rq)
			continue;
		/* the key of its management port, as any SMP to it */
		rq->m_key = sm_mkey_of_port(sm, mgmt);
		rq->m_key_set = true;
		rq->tries = sm->retries; /* one try */
	}
	sm->missed = n;
	if (n)
		sm_log(sm, 1, "sweep %u: %u nodes of the last heavy sweep not reached", sn->sweep,
		       n);
	return n;
}

void sm_light_start(struct sm *sm)
{
	struct sm_subnet *sn = &sm->sn;
	unsigned i;

	sm->phase = SM_PHASE_LIGHT;
	sm->t_phase = sm_now_us();
	for (i = 0; i < sn->nnodes; i++) {
		struct sm_node *n = sn->nodes[i];

		if (n->present && n->sw)
			ask(sm, n, n->path, n->hops, SOF_ATTR_SWITCH_INFO, 0, on_switchinfo);
	}
}
