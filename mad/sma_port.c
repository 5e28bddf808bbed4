/*
 * The SMA's ports: the management port of an SMP, the physical link
 * events (IBA 7.2), PortInfo (IBA 14.2.5.6) and the M_Key (14.2.4).
 * mad/sma.c calls in here, never the other way. PortInfo Get
 * (a switch's external ports show the switch's addressing, port 0's) and
 * Set (the state machine Init -> Armed -> Active, Down and Disabled, the
 * enables a port supports, the addressing and M_Key fields of a
 * management port), and the M_Key check every SMP passes first: the
 * protection levels, the violation counter, the lease after which an
 * unreachable SM's protection lapses, the details trap 256 reports.
 * Pure: no I/O, no globals (the caller's clock is n->now_ms).
 */
#include "sma_int.h"

#include <string.h>

struct sof_port *sof_node_mgmt_port(struct sof_node *n, unsigned in_port)
{
	if (n->type == SOF_NODE_SWITCH)
		return &n->port[0];
	if (in_port < 1 || in_port > n->nports)
		return &n->port[1];
	return &n->port[in_port];
}

/* A switch port's state changed: SwitchInfo:PortStateChange */
static void port_state_changed(struct sof_node *n)
{
	if (n->type == SOF_NODE_SWITCH)
		n->sw.port_state_change = true;
}

bool sof_port_link_up(struct sof_node *n, unsigned port)
{
	struct sof_port *p;

	if (port < 1 || port > n->nports)
		return false;
	p = &n->port[port];
	if (p->phys == SOF_PHYS_DISABLED)
		return false;
	p->phys = SOF_PHYS_LINKUP;
	if (p->state != SOF_PORT_DOWN)
		return false;
	p->state = SOF_PORT_INIT; /* IBA 7.2: Down -> Initialize at link up */
	port_state_changed(n);
	return true;
}

bool sof_port_link_down(struct sof_node *n, unsigned port)
{
	struct sof_port *p;

	if (port < 1 || port > n->nports)
		return false;
	p = &n->port[port];
	if (p->phys != SOF_PHYS_DISABLED)
		p->phys = SOF_PHYS_POLLING;
	if (p->state == SOF_PORT_DOWN)
		return false;
	p->state = SOF_PORT_DOWN;
	if (p->cnt.link_downed < 0xff)
		p->cnt.link_downed++;
	port_state_changed(n);
	return true;
}

static void port_info_get(struct sma_req *r, const struct sof_port *q)
{
	const struct sof_port *m = sof_node_mgmt_port(r->n, r->in_port);
	uint8_t *d = r->d;

	if (r->n->type != SOF_NODE_SWITCH)
		m = q;
	memset(d, 0, SOF_SMP_DATA_LEN);
	sof_put64(d + 0, r->hide_mkey ? 0 : m->mkey);
	sof_put64(d + 8, m->gid_prefix);
	sof_put16(d + 16, m->lid);
	sof_put16(d + 18, m->sm_lid);
	sof_put32(d + 20, q->cap_mask);
	sof_put16(d + 26, m->mkey_lease);
	d[28] = (uint8_t)r->in_port;
	d[29] = q->width_enabled;
	d[30] = q->width_supported;
	d[31] = q->width_active;
	d[32] = (uint8_t)(q->speed_supported << 4 | q->state);
	d[33] = (uint8_t)(q->phys << 4 | q->link_down_default);
	d[34] = (uint8_t)(m->mkey_protect << 6 | m->lmc);
	d[35] = (uint8_t)(q->speed_active << 4 | q->speed_enabled);
	d[36] = (uint8_t)(q->neighbor_mtu << 4 | m->sm_sl);
	d[37] = (uint8_t)(q->vl_cap << 4);
	d[38] = q->vl_high_limit;
	d[39] = q->vl_arb_high_cap;
	d[40] = q->vl_arb_low_cap;
	d[41] = (uint8_t)(q->init_type_reply << 4 | q->mtu_cap);
	d[42] = (uint8_t)(q->vl_stall << 5 | q->hoq_life);
	d[43] = (uint8_t)(q->op_vls << 4 | q->pe_inbound << 3 | q->pe_outbound << 2 |
			  q->filter_raw_inbound << 1 | q->filter_raw_outbound);
	sof_put16(d + 44, m->mkey_violations);
	sof_put16(d + 46, q->pkey_violations);
	sof_put16(d + 48, q->qkey_violations);
	d[50] = q->guid_cap;
	d[51] = m->subnet_timeout & 0x1f;
	d[52] = q->resp_time & 0x1f;
	d[53] = (uint8_t)(q->local_phy_errors << 4 | q->overrun_errors);
	sof_put16(d + 60, q->cap_mask2);
}

/* 0: no change; 255 / 15: all supported; else what of it is supported
 * (an SM may ask for more than the port has: it gets the part it has) */
static bool enable_ok(unsigned v, unsigned all, unsigned supported)
{
	return v == 0 || v == all || (v & supported) != 0;
}

/* IBA 14.2.5.6 PortState on Set: Down from any state; Armed from
 * Initialize; Active from Armed; the state the port is in (an SM or a
 * tool writing back what it read) changes nothing; nothing else. */
static bool state_ok(unsigned cur, unsigned req)
{
	if (req == cur)
		return true;
	switch (req) {
	case SOF_PORT_NOP:
	case SOF_PORT_DOWN:
		return true;
	case SOF_PORT_ARMED:
		return cur == SOF_PORT_INIT || cur == SOF_PORT_ARMED;
	case SOF_PORT_ACTIVE:
		return cur == SOF_PORT_ARMED || cur == SOF_PORT_ACTIVE;
	default:
		return false;
	}
}

static uint16_t port_info_set(struct sma_req *r, unsigned portnum, struct sof_port *q)
{
	const uint8_t *d = r->d;
	struct sof_node *n = r->n;
	bool mgmt = n->type != SOF_NODE_SWITCH || portnum == 0;
	unsigned state = d[32] & 0xf, phys = d[33] >> 4, ldd = d[33] & 0xf;
	unsigned width = d[29], speed = d[35] & 0xf, nmtu = d[36] >> 4, opvls = d[43] >> 4;
	uint16_t lid = sof_get16(d + 16);

	/* PortPhysicalState: Polling enables, Disabled disables; the value
	 * the port has is written back unchanged */
	if (phys == q->phys && phys != SOF_PHYS_DISABLED)
		phys = SOF_PHYS_NOP;
	/* base switch port 0 has no link: its state stays as it is */
	if (n->type == SOF_NODE_SWITCH && portnum == 0)
		state = SOF_PORT_NOP;
	if (!state_ok(q->state, state) ||
	    (phys && phys != SOF_PHYS_POLLING && phys != SOF_PHYS_DISABLED) ||
	    (ldd && ldd != SOF_PHYS_SLEEP && ldd != SOF_PHYS_POLLING) ||
	    !enable_ok(width, 0xff, q->width_supported) ||
	    !enable_ok(speed, 0xf, q->speed_supported) || nmtu > q->mtu_cap || opvls > q->vl_cap ||
	    (mgmt && lid >= SOF_LID_MCAST_BASE))
		return SOF_STATUS_BAD_VALUE;
	/* a port whose link is down cannot be armed (IBA 7.2) */
	if ((state == SOF_PORT_ARMED || state == SOF_PORT_ACTIVE) && q->state == SOF_PORT_DOWN)
		return SOF_STATUS_BAD_VALUE;

	if (mgmt) {
		uint8_t lmc = d[34] & 7, smsl = d[36] & 0xf;
		uint16_t smlid = sof_get16(d + 18);

		if (lid != q->lid || lmc != q->lmc || smlid != q->sm_lid || smsl != q->sm_sl)
			r->ev |= SOF_SMA_EV_LID;
		q->mkey = sof_get64(d + 0);
		q->gid_prefix = sof_get64(d + 8);
		q->lid = lid;
		q->sm_lid = smlid;
		q->mkey_lease = sof_get16(d + 26);
		q->mkey_protect = d[34] >> 6;
		q->lmc = lmc;
		q->sm_sl = smsl;
		q->mkey_violations = sof_get16(d + 44);
		q->subnet_timeout = d[51] & 0x1f;
		q->client_rereg = d[51] >> 7;
		/* IBA 14.4.11: the SM asks the port's clients to register
		 * again (subscriptions, multicast joins): a port event */
		if (q->client_rereg)
			r->ev |= SOF_SMA_EV_REREG;
	}
	if (width)
		q->width_enabled =
		    (uint8_t)(width == 0xff ? q->width_supported : width & q->width_supported);
	if (speed)
		q->speed_enabled =
		    (uint8_t)(speed == 0xf ? q->speed_supported : speed & q->speed_supported);
	if (nmtu)
		q->neighbor_mtu = (uint8_t)nmtu;
	if (opvls)
		q->op_vls = (uint8_t)opvls;
	if (ldd)
		q->link_down_default = (uint8_t)ldd;
	q->vl_high_limit = d[38];
	q->vl_stall = d[42] >> 5;
	q->hoq_life = d[42] & 0x1f;
	q->pe_inbound = d[43] >> 3 & 1;
	q->pe_outbound = d[43] >> 2 & 1;
	q->filter_raw_inbound = d[43] >> 1 & 1;
	q->filter_raw_outbound = d[43] & 1;
	q->pkey_violations = sof_get16(d + 46);
	q->qkey_violations = sof_get16(d + 48);
	q->local_phy_errors = d[53] >> 4;
	q->overrun_errors = d[53] & 0xf;

	if (phys == SOF_PHYS_DISABLED && q->phys != SOF_PHYS_DISABLED && portnum != 0) {
		sof_port_link_down(n, portnum);
		q->phys = SOF_PHYS_DISABLED;
		r->ev |= SOF_SMA_EV_DISABLE | SOF_SMA_EV_STATE;
	} else if (phys == SOF_PHYS_POLLING && q->phys == SOF_PHYS_DISABLED) {
		q->phys = SOF_PHYS_POLLING;
		r->ev |= SOF_SMA_EV_ENABLE;
	}
	if (state == SOF_PORT_DOWN && q->state != SOF_PORT_DOWN) {
		/* the link retrains: Down, then Initialize while it is up */
		if (portnum != 0 && q->phys == SOF_PHYS_LINKUP) {
			q->state = SOF_PORT_DOWN;
			port_state_changed(n);
			q->state = SOF_PORT_INIT;
		} else if (portnum != 0) {
			q->state = SOF_PORT_DOWN;
			port_state_changed(n);
		}
		r->ev |= SOF_SMA_EV_STATE;
	} else if ((state == SOF_PORT_ARMED || state == SOF_PORT_ACTIVE) && state != q->state) {
		q->state = (uint8_t)state;
		r->ev |= SOF_SMA_EV_STATE;
	}
	return SOF_STATUS_OK;
}

uint16_t sma_port_info(struct sma_req *r)
{
	unsigned portnum = r->mod;
	struct sof_port *q;
	uint16_t st = SOF_STATUS_OK;

	if (r->n->type == SOF_NODE_SWITCH) {
		if (portnum > r->n->nports)
			return SOF_STATUS_BAD_VALUE;
	} else {
		if (portnum == 0)
			portnum = r->in_port;
		if (portnum < 1 || portnum > r->n->nports)
			return SOF_STATUS_BAD_VALUE;
	}
	q = &r->n->port[portnum];
	if (r->set)
		st = port_info_set(r, portnum, q);
	port_info_get(r, q);
	return st;
}

/* IBA 14.2.4.1 (table "M_Key protection levels"): a zero M_Key or a
 * match passes; otherwise a Get passes at levels 0 and 1 (level 1 reads
 * PortInfo:M_Key as 0), and fails at levels 2 and 3 as every Set and
 * TrapRepress does. A failure is a violation: M_KeyViolations counted,
 * trap 256 due, and the lease timer started when it is not running
 * (14.2.4.2); when the lease runs out with no SMP carrying the right
 * M_Key in between, M_KeyProtectBits go to 0 and the SMP at hand passes
 * (as the kernel's qib does), so that a new SM can take the port. A
 * lease period of 0 never runs out. */
bool sma_mkey_check(struct sma_req *r, const uint8_t *mad)
{
	struct sof_port *m = sof_node_mgmt_port(r->n, r->in_port);
	uint64_t mkey = sof_get64(mad + SOF_SMP_OFF_MKEY);
	uint8_t method = mad[3];
	struct sof_mkey_bad *b = &r->n->mkey_bad;

	if (m->mkey == 0 || mkey == m->mkey) {
		m->mkey_lease_end = 0;
		return true;
	}
	if (m->mkey_lease_end && r->n->now_ms >= m->mkey_lease_end) {
		m->mkey_lease_end = 0;
		m->mkey_protect = 0;
		return true;
	}
	if (method == SOF_METHOD_GET && m->mkey_protect < 2) {
		r->hide_mkey = m->mkey_protect == 1;
		return true;
	}
	if (m->mkey_violations < 0xffff)
		m->mkey_violations++;
	if (!m->mkey_lease_end && m->mkey_lease)
		m->mkey_lease_end = r->n->now_ms + m->mkey_lease * 1000ull;
	/* what trap 256 tells the SM (IBA 14.2.5.1, table 147) */
	memset(b, 0, sizeof(*b));
	b->port = (uint8_t)r->in_port;
	b->method = method;
	b->attr_id = sof_get16(mad + SOF_SMP_OFF_ATTR_ID);
	b->attr_mod = sof_get32(mad + SOF_SMP_OFF_ATTR_MOD);
	b->mkey = mkey;
	if (mad[1] == SOF_MCLASS_SMP_DR) {
		unsigned hc = mad[SOF_SMP_OFF_HOP_CNT];

		b->directed = true;
		b->dr_slid = sof_get16(mad + SOF_SMP_OFF_DR_SLID);
		b->hops = (uint8_t)(hc < 63 ? hc : 63);
		b->truncated = hc > sizeof(b->rpath) - 1;
		memcpy(b->rpath, mad + SOF_SMP_OFF_RET_PATH, sizeof(b->rpath));
	}
	r->ev |= SOF_SMA_EV_MKEY;
	return false;
}
