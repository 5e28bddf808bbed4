/*
 * The subnet management agent over the node model of mad/smp.h: the
 * node's defaults, the directed-route step of IBA 14.2.2 and the handling
 * of SubnGet/SubnSet for every
 * attribute an SM reads or programs (IBA 14.2.5), each with its M_Key
 * check (14.2.4) and the GetResp it makes. Pure: no I/O, no globals.
 */
#include "sma_int.h"

#include <stdlib.h>
#include <string.h>

const char *const sof_port_state_names[5] = {
    [SOF_PORT_NOP] = "NOP",	[SOF_PORT_DOWN] = "DOWN",     [SOF_PORT_INIT] = "INIT",
    [SOF_PORT_ARMED] = "ARMED", [SOF_PORT_ACTIVE] = "ACTIVE",
};

const char *const sof_phys_state_names[7] = {
    [SOF_PHYS_NOP] = "NOP",
    [SOF_PHYS_SLEEP] = "Sleep",
    [SOF_PHYS_POLLING] = "Polling",
    [SOF_PHYS_DISABLED] = "Disabled",
    [SOF_PHYS_TRAINING] = "PortConfigurationTraining",
    [SOF_PHYS_LINKUP] = "LinkUp",
    [SOF_PHYS_ERROR_RECOVERY] = "LinkErrorRecovery",
};

const char *const sof_smp_drop_names[SOF_SMP_DROP_MAX] = {
    [SOF_SMP_DROP_LEN] = "length",
    [SOF_SMP_DROP_VERSION] = "base_version",
    [SOF_SMP_DROP_CLASS] = "class",
    [SOF_SMP_DROP_HOP_CNT] = "hop_count",
    [SOF_SMP_DROP_HOP_PTR] = "hop_pointer",
    [SOF_SMP_DROP_PATH] = "path",
    [SOF_SMP_DROP_NOT_SWITCH] = "not_switch",
    [SOF_SMP_DROP_MKEY] = "mkey",
    [SOF_SMP_DROP_RESPONSE] = "response",
};

/* ---- the model ---- */

static int port_init(struct sof_node *n, unsigned i)
{
	struct sof_port *p = &n->port[i];
	bool sw = n->type == SOF_NODE_SWITCH;
	unsigned rows = sw ? n->nports + 1u : 1u;

	p->sl2vl = calloc(rows, sizeof(*p->sl2vl));
	if (!p->sl2vl)
		return -1;
	p->guid = sw ? n->node_guid : n->node_guid + i;
	p->state = SOF_PORT_DOWN;
	p->phys = SOF_PHYS_POLLING;
	p->link_down_default = SOF_PHYS_POLLING;
	p->width_supported = p->width_enabled = 0x03; /* 1X, 4X */
	p->width_active = 0x02;
	p->speed_supported = p->speed_enabled = 0x07; /* SDR, DDR, QDR */
	p->speed_active = 0x04;
	p->mtu_cap = p->neighbor_mtu = 5; /* 4096 */
	p->vl_cap = p->op_vls = 4;	  /* VL0-7 */
	p->vl_arb_high_cap = p->vl_arb_low_cap = 8;
	p->resp_time = 8;
	p->guid_cap = sw ? 1 : SOF_NODE_GUIDS;
	p->guids[0] = p->guid;
	p->npkeys = sw && i == 0 ? SOF_SW_PORT0_PKEYS : SOF_NODE_PKEYS;
	p->pkeys[0] = SOF_PKEY_DEFAULT;
	if (!sw || i == 0)
		p->cap_mask = SOF_CAP_IS_TRAP | SOF_CAP_IS_SL_MAPPING | SOF_CAP_IS_SYS_GUID |
			      (sw ? 0 : SOF_CAP_IS_CM | SOF_CAP_IS_CLIENT_REREG);
	if (sw && i == 0) {
		/* base switch port 0: always there, its link never trains */
		p->state = SOF_PORT_ACTIVE;
		p->phys = SOF_PHYS_LINKUP;
	}
	return 0;
}

struct sof_node *sof_node_new(enum sof_node_type type, unsigned nports, uint64_t node_guid)
{
	struct sof_node *n;
	unsigned i;

	if ((type != SOF_NODE_CA && type != SOF_NODE_SWITCH) || nports < 1 || nports > 254)
		return NULL;
	n = calloc(1, sizeof(*n) + (nports + 1u) * sizeof(n->port[0]));
	if (!n)
		return NULL;
	n->type = (uint8_t)type;
	n->nports = (uint8_t)nports;
	n->node_guid = n->sys_guid = node_guid;
	n->partition_cap = type == SOF_NODE_SWITCH ? SOF_SW_PORT0_PKEYS : SOF_NODE_PKEYS;
	n->device_id = type == SOF_NODE_SWITCH ? 0x5302 : 0x5301;
	n->revision = 1;
	if (type == SOF_NODE_SWITCH) {
		struct sof_switch *s = &n->sw;

		s->lft_cap = SOF_SW_LFT_CAP;
		s->mft_cap = SOF_SW_MFT_CAP;
		s->mft_positions = (nports + 1u + 15u) / 16u;
		s->pe_cap = SOF_NODE_PKEYS;
		s->life_time = 18;
		s->lft = malloc(s->lft_cap);
		s->mft = calloc((size_t)s->mft_cap * s->mft_positions, sizeof(*s->mft));
		if (!s->lft || !s->mft)
			goto err_free;
		memset(s->lft, 0xff, s->lft_cap);
	}
	for (i = 0; i <= nports; i++)
		if (port_init(n, i))
			goto err_free;
	return n;

err_free:
	sof_node_free(n);
	return NULL;
}

void sof_node_free(struct sof_node *n)
{
	unsigned i;

	if (!n)
		return;
	for (i = 0; i <= n->nports; i++)
		free(n->port[i].sl2vl);
	free(n->sw.lft);
	free(n->sw.mft);
	free(n);
}

bool sof_port_has_lid(const struct sof_port *p, uint16_t lid)
{
	uint16_t base = p->lid & (uint16_t) ~((1u << p->lmc) - 1u);

	return p->lid && lid >= base && lid < base + (1u << p->lmc);
}

void sof_port_count_xmit(struct sof_port *p, uint32_t len, bool mcast)
{
	p->cnt.xmit_data += len / 4;
	p->cnt.xmit_pkts++;
	if (mcast)
		p->cnt.mc_xmit_pkts++;
	else
		p->cnt.uni_xmit_pkts++;
}

void sof_port_count_rcv(struct sof_port *p, uint32_t len, bool mcast)
{
	p->cnt.rcv_data += len / 4;
	p->cnt.rcv_pkts++;
	if (mcast)
		p->cnt.mc_rcv_pkts++;
	else
		p->cnt.uni_rcv_pkts++;
}

void sof_smp_init(uint8_t *mad, bool directed, uint8_t method, uint16_t attr_id, uint32_t attr_mod,
		  uint64_t tid, uint64_t mkey)
{
	memset(mad, 0, SOF_SMP_LEN);
	mad[0] = 1;
	mad[1] = directed ? SOF_MCLASS_SMP_DR : SOF_MCLASS_SMP_LID;
	mad[2] = 1;
	mad[3] = method;
	sof_put64(mad + SOF_SMP_OFF_TID, tid);
	sof_put16(mad + SOF_SMP_OFF_ATTR_ID, attr_id);
	sof_put32(mad + SOF_SMP_OFF_ATTR_MOD, attr_mod);
	sof_put64(mad + SOF_SMP_OFF_MKEY, mkey);
	if (directed) {
		sof_put16(mad + SOF_SMP_OFF_DR_SLID, SOF_LID_PERMISSIVE);
		sof_put16(mad + SOF_SMP_OFF_DR_DLID, SOF_LID_PERMISSIVE);
	}
}

/* ---- directed route (IBA 14.2.2) ---- */

static enum sof_dr_action dr_drop(struct sof_node *n, enum sof_smp_drop why,
				  struct sof_dr_next *next)
{
	n->drops[why]++;
	next->action = SOF_DR_DISCARD;
	return SOF_DR_DISCARD;
}

static enum sof_dr_action dr_out(struct sof_node *n, uint8_t port, struct sof_dr_next *next)
{
	if (port < 1 || port > n->nports)
		return dr_drop(n, SOF_SMP_DROP_PATH, next);
	next->action = SOF_DR_OUT_PORT;
	next->port = port;
	return next->action;
}

static bool is_own_lid(struct sof_node *n, uint16_t lid)
{
	unsigned i;

	if (n->type == SOF_NODE_SWITCH)
		return sof_port_has_lid(&n->port[0], lid);
	for (i = 1; i <= n->nports; i++)
		if (sof_port_has_lid(&n->port[i], lid))
			return true;
	return false;
}

/* The end of a directed part: for this node, or LID-routed on to lid
 * (only a switch routes; IBA 14.2.2.2 C14-9:3, 14.2.2.4 C14-13:3). */
static enum sof_dr_action dr_end(struct sof_node *n, uint16_t lid, struct sof_dr_next *next)
{
	if (lid == SOF_LID_PERMISSIVE || is_own_lid(n, lid)) {
		next->action = SOF_DR_LOCAL;
		return next->action;
	}
	if (n->type != SOF_NODE_SWITCH)
		return dr_drop(n, SOF_SMP_DROP_NOT_SWITCH, next);
	next->action = SOF_DR_OUT_LID;
	next->lid = lid;
	return next->action;
}

enum sof_dr_action sof_smp_dr_step(struct sof_node *n, uint8_t *smp, unsigned in_port,
				   bool lid_routed, uint16_t reply_lid, struct sof_dr_next *next)
{
	uint8_t *hp = &smp[SOF_SMP_OFF_HOP_PTR];
	unsigned hc = smp[SOF_SMP_OFF_HOP_CNT];
	const uint8_t *ipath = smp + SOF_SMP_OFF_INIT_PATH;
	uint8_t *rpath = smp + SOF_SMP_OFF_RET_PATH;
	bool returning = sof_get16(smp + SOF_SMP_OFF_STATUS) & SOF_SMP_DIRECTION;
	bool sw = n->type == SOF_NODE_SWITCH;
	bool arrived = in_port != 0;

	memset(next, 0, sizeof(*next));
	if (hc >= SOF_SMP_MAX_HOPS)
		return dr_drop(n, SOF_SMP_DROP_HOP_CNT, next);
	if (arrived && in_port > n->nports)
		return dr_drop(n, SOF_SMP_DROP_PATH, next);

	if (!returning) {
		if (*hp == 0) {
			/* made here, or LID-routed to the switch where the
			 * directed part starts */
			if (arrived && !lid_routed)
				return dr_drop(n, SOF_SMP_DROP_HOP_PTR, next);
			if (hc == 0) {
				*hp = 1;
				next->action = SOF_DR_LOCAL;
				return next->action;
			}
			*hp = 1;
			return dr_out(n, ipath[1], next);
		}
		if (*hp < hc) { /* C14-9:2, an intermediate switch */
			if (!arrived || lid_routed)
				return dr_drop(n, SOF_SMP_DROP_HOP_PTR, next);
			if (!sw)
				return dr_drop(n, SOF_SMP_DROP_NOT_SWITCH, next);
			rpath[*hp] = (uint8_t)in_port;
			(*hp)++;
			return dr_out(n, ipath[*hp], next);
		}
		if (*hp == hc) { /* C14-9:3, the end of the directed part */
			if (!arrived || lid_routed)
				return dr_drop(n, SOF_SMP_DROP_HOP_PTR, next);
			rpath[*hp] = (uint8_t)in_port;
			(*hp)++;
			return dr_end(n, sof_get16(smp + SOF_SMP_OFF_DR_DLID), next);
		}
		if (*hp == hc + 1 && arrived && lid_routed) { /* C14-9:4 */
			next->action = SOF_DR_LOCAL;
			return next->action;
		}
		return dr_drop(n, SOF_SMP_DROP_HOP_PTR, next);
	}

	/* returning (D = 1) */
	if (hc && *hp == hc + 1) { /* C14-13:1 */
		if (!arrived && lid_routed) {
			/* our response to a request that came LID-routed: back
			 * to the switch that ends the directed part */
			next->action = SOF_DR_OUT_LID;
			next->lid = reply_lid;
			return next->action;
		}
		if (arrived && (!lid_routed || !sw))
			return dr_drop(n, SOF_SMP_DROP_HOP_PTR, next);
		(*hp)--;
		return dr_out(n, rpath[*hp], next);
	}
	if (*hp >= 2 && *hp <= hc) { /* C14-13:2 */
		if (!arrived || lid_routed)
			return dr_drop(n, SOF_SMP_DROP_HOP_PTR, next);
		if (!sw)
			return dr_drop(n, SOF_SMP_DROP_NOT_SWITCH, next);
		(*hp)--;
		return dr_out(n, rpath[*hp], next);
	}
	if (*hp == 1) { /* C14-13:3, the start of the directed part */
		if (arrived && lid_routed)
			return dr_drop(n, SOF_SMP_DROP_HOP_PTR, next);
		*hp = 0;
		return dr_end(n, sof_get16(smp + SOF_SMP_OFF_DR_SLID), next);
	}
	if (*hp == 0 && arrived && lid_routed) { /* C14-13:4 */
		next->action = SOF_DR_LOCAL;
		return next->action;
	}
	return dr_drop(n, SOF_SMP_DROP_HOP_PTR, next);
}

/* ---- attributes (IBA 14.2.5) ---- */

static uint16_t node_info(struct sma_req *r)
{
	struct sof_node *n = r->n;
	uint8_t *d = r->d;

	if (r->set)
		return SOF_STATUS_BAD_ATTR;
	memset(d, 0, SOF_SMP_DATA_LEN);
	d[0] = 1;
	d[1] = 1;
	d[2] = n->type;
	d[3] = n->nports;
	sof_put64(d + 4, n->sys_guid);
	sof_put64(d + 12, n->node_guid);
	sof_put64(d + 20, sof_node_mgmt_port(n, r->in_port)->guid);
	sof_put16(d + 28, n->partition_cap);
	sof_put16(d + 30, n->device_id);
	sof_put32(d + 32, n->revision);
	sof_put32(d + 36, n->vendor_id & 0xffffff);
	d[36] = (uint8_t)r->in_port; /* LocalPortNum, then 24-bit VendorID */
	return SOF_STATUS_OK;
}

static uint16_t node_desc(struct sma_req *r)
{
	if (r->set)
		return SOF_STATUS_BAD_ATTR;
	memcpy(r->d, r->n->desc, SOF_SMP_DATA_LEN);
	return SOF_STATUS_OK;
}

/* the port a switch's attribute modifier names, or a CA's receiving port */
static struct sof_port *mod_port(struct sma_req *r, unsigned portnum)
{
	if (r->n->type == SOF_NODE_SWITCH)
		return portnum <= r->n->nports ? &r->n->port[portnum] : NULL;
	return sof_node_mgmt_port(r->n, r->in_port);
}

static uint16_t guid_info(struct sma_req *r)
{
	struct sof_port *p = sof_node_mgmt_port(r->n, r->in_port);
	unsigned block = r->mod, i;

	if (block >= (p->guid_cap + 7u) / 8u || block >= SOF_NODE_GUIDS / 8)
		return SOF_STATUS_BAD_VALUE;
	if (r->set)
		for (i = 1; i < 8 && i < p->guid_cap; i++) /* index 0 is the port GUID */
			p->guids[block * 8 + i] = sof_get64(r->d + 8 * i);
	memset(r->d, 0, SOF_SMP_DATA_LEN);
	for (i = 0; i < 8 && block * 8 + i < p->guid_cap; i++)
		sof_put64(r->d + 8 * i, p->guids[block * 8 + i]);
	return SOF_STATUS_OK;
}

static uint16_t pkey_table(struct sma_req *r)
{
	struct sof_port *p = mod_port(r, r->mod >> 16);
	unsigned block = r->mod & 0xffff, i;

	if (!p || block * 32 >= p->npkeys)
		return SOF_STATUS_BAD_VALUE;
	if (r->set) {
		for (i = 0; i < 32 && block * 32 + i < p->npkeys; i++)
			p->pkeys[block * 32 + i] = sof_get16(r->d + 2 * i);
		r->ev |= SOF_SMA_EV_PKEYS;
	}
	memset(r->d, 0, SOF_SMP_DATA_LEN);
	for (i = 0; i < 32 && block * 32 + i < p->npkeys; i++)
		sof_put16(r->d + 2 * i, p->pkeys[block * 32 + i]);
	return SOF_STATUS_OK;
}

static uint16_t sl2vl(struct sma_req *r)
{
	unsigned in = 0, out = r->mod & 0xff;
	struct sof_port *p;

	if (r->n->type == SOF_NODE_SWITCH) {
		in = (r->mod >> 8) & 0xff;
		if (in > r->n->nports)
			return SOF_STATUS_BAD_VALUE;
	}
	p = mod_port(r, out);
	if (!p)
		return SOF_STATUS_BAD_VALUE;
	if (r->set)
		memcpy(p->sl2vl[in], r->d, 8);
	memset(r->d, 0, SOF_SMP_DATA_LEN);
	memcpy(r->d, p->sl2vl[in], 8);
	return SOF_STATUS_OK;
}

static uint16_t vl_arb(struct sma_req *r)
{
	unsigned block = r->mod >> 16;
	struct sof_port *p = mod_port(r, r->mod & 0xffff);

	if (!p || block < 1 || block > 4)
		return SOF_STATUS_BAD_VALUE;
	if (r->set)
		memcpy(p->vlarb[block - 1], r->d, 64);
	memcpy(r->d, p->vlarb[block - 1], 64);
	return SOF_STATUS_OK;
}

static uint16_t switch_info(struct sma_req *r)
{
	struct sof_switch *s = &r->n->sw;
	uint8_t *d = r->d;

	if (r->n->type != SOF_NODE_SWITCH)
		return SOF_STATUS_BAD_ATTR;
	if (r->set) {
		uint16_t lft_top = sof_get16(d + 6), mft_top = sof_get16(d + 18);

		/* MulticastFDBTop 0xBFFF: no entries (IBA 14.2.5.4) */
		if (lft_top >= s->lft_cap ||
		    (mft_top && (mft_top < SOF_LID_MCAST_BASE - 1 ||
				 mft_top >= SOF_LID_MCAST_BASE + s->mft_cap)) ||
		    d[8] > r->n->nports || (d[9] > r->n->nports && d[9] != 0xff) ||
		    (d[10] > r->n->nports && d[10] != 0xff))
			return SOF_STATUS_BAD_VALUE;
		s->lft_top = lft_top;
		s->default_port = d[8];
		s->default_mc_primary = d[9];
		s->default_mc_not_primary = d[10];
		s->life_time = d[11] >> 3;
		if (d[11] & 0x04) /* PortStateChange: a 1 clears it */
			s->port_state_change = false;
		s->mft_top = mft_top;
		r->ev |= SOF_SMA_EV_FWD;
	}
	memset(d, 0, SOF_SMP_DATA_LEN);
	sof_put16(d + 0, s->lft_cap);
	sof_put16(d + 4, s->mft_cap);
	sof_put16(d + 6, s->lft_top);
	d[8] = s->default_port;
	d[9] = s->default_mc_primary;
	d[10] = s->default_mc_not_primary;
	d[11] = (uint8_t)(s->life_time << 3 | s->port_state_change << 2);
	sof_put16(d + 12, s->lids_per_port);
	sof_put16(d + 14, s->pe_cap);
	/* inbound and outbound enforcement, enhanced port 0 as it is */
	d[16] = (uint8_t)(0xc0 | s->enhanced_port0 << 3);
	sof_put16(d + 18, s->mft_top);
	return SOF_STATUS_OK;
}

static uint16_t lft(struct sma_req *r)
{
	struct sof_switch *s = &r->n->sw;

	if (r->n->type != SOF_NODE_SWITCH)
		return SOF_STATUS_BAD_ATTR;
	if (r->mod >= s->lft_cap / 64u)
		return SOF_STATUS_BAD_VALUE;
	if (r->set) {
		memcpy(s->lft + r->mod * 64, r->d, 64);
		r->ev |= SOF_SMA_EV_FWD;
	}
	memcpy(r->d, s->lft + r->mod * 64, 64);
	return SOF_STATUS_OK;
}

static uint16_t mft(struct sma_req *r)
{
	struct sof_switch *s = &r->n->sw;
	unsigned block = r->mod & 0x1ff, pos = r->mod >> 28, i;

	if (r->n->type != SOF_NODE_SWITCH)
		return SOF_STATUS_BAD_ATTR;
	if (block >= s->mft_cap / 32u || pos >= s->mft_positions)
		return SOF_STATUS_BAD_VALUE;
	for (i = 0; i < 32; i++) {
		uint16_t *e = &s->mft[(block * 32 + i) * s->mft_positions + pos];

		if (r->set)
			*e = sof_get16(r->d + 2 * i);
		sof_put16(r->d + 2 * i, *e);
	}
	if (r->set)
		r->ev |= SOF_SMA_EV_FWD;
	return SOF_STATUS_OK;
}

static uint16_t sm_info(struct sma_req *r)
{
	const struct sof_sminfo *sm = &r->n->sm;
	uint8_t *d = r->d;

	if (!(sof_node_mgmt_port(r->n, r->in_port)->cap_mask & SOF_CAP_IS_SM) || r->set)
		return SOF_STATUS_BAD_ATTR;
	memset(d, 0, SOF_SMP_DATA_LEN);
	sof_put64(d + 0, sm->guid);
	sof_put64(d + 8, r->hide_mkey ? 0 : sm->sm_key);
	sof_put32(d + 16, sm->act_count);
	d[20] = (uint8_t)(sm->priority << 4 | (sm->state & 0xf));
	return SOF_STATUS_OK;
}

struct sma_attr {
	uint16_t id;
	uint16_t (*fn)(struct sma_req *r);
};

static const struct sma_attr sma_attrs[] = {
    {.id = SOF_ATTR_NODE_DESC, .fn = node_desc},
    {.id = SOF_ATTR_NODE_INFO, .fn = node_info},
    {.id = SOF_ATTR_SWITCH_INFO, .fn = switch_info},
    {.id = SOF_ATTR_GUID_INFO, .fn = guid_info},
    {.id = SOF_ATTR_PORT_INFO, .fn = sma_port_info},
    {.id = SOF_ATTR_PKEY_TABLE, .fn = pkey_table},
    {.id = SOF_ATTR_SL2VL, .fn = sl2vl},
    {.id = SOF_ATTR_VL_ARB, .fn = vl_arb},
    {.id = SOF_ATTR_LFT, .fn = lft},
    {.id = SOF_ATTR_MFT, .fn = mft},
    {.id = SOF_ATTR_SM_INFO, .fn = sm_info},
};

static enum sof_sma_result sma_drop(struct sof_node *n, enum sof_smp_drop why)
{
	n->drops[why]++;
	return SOF_SMA_DROP;
}

enum sof_sma_result sof_sma_process(struct sof_node *n, unsigned in_port, uint8_t *mad, size_t len,
				    unsigned *events)
{
	struct sma_req r = {.n = n, .in_port = in_port, .d = mad + SOF_SMP_OFF_DATA};
	uint8_t method;
	uint16_t attr, status = SOF_STATUS_OK, dbit;
	size_t i;

	if (events)
		*events = 0;
	if (len != SOF_SMP_LEN)
		return sma_drop(n, SOF_SMP_DROP_LEN);
	if (mad[0] != 1)
		return sma_drop(n, SOF_SMP_DROP_VERSION);
	if (mad[1] != SOF_MCLASS_SMP_LID && mad[1] != SOF_MCLASS_SMP_DR)
		return sma_drop(n, SOF_SMP_DROP_CLASS);
	if (in_port > n->nports || (in_port == 0 && n->type != SOF_NODE_SWITCH))
		return sma_drop(n, SOF_SMP_DROP_PATH);
	method = mad[3];
	attr = sof_get16(mad + SOF_SMP_OFF_ATTR_ID);
	r.mod = sof_get32(mad + SOF_SMP_OFF_ATTR_MOD);
	dbit = mad[1] == SOF_MCLASS_SMP_DR ? SOF_SMP_DIRECTION : 0;

	/* responses, traps and reports are the SM's business */
	if ((method & SOF_METHOD_RESP_BIT) || method == SOF_METHOD_TRAP ||
	    method == SOF_METHOD_REPORT)
		return n->sm_agent ? SOF_SMA_PASS : sma_drop(n, SOF_SMP_DROP_RESPONSE);
	if (attr == SOF_ATTR_SM_INFO && n->sm_agent) {
		/* the node's SM answers its SMInfo, after the M_Key check
		 * of every SubnGet/SubnSet (IBA 14.2.4.1: a Get passes
		 * below protection level 2, a Set needs the key), as the
		 * kernel's qib and hfi1 SMAs check it before the SM sees
		 * the SMP */
		if ((method == SOF_METHOD_GET || method == SOF_METHOD_SET) &&
		    !sma_mkey_check(&r, mad)) {
			if (events)
				*events = r.ev;
			return sma_drop(n, SOF_SMP_DROP_MKEY);
		}
		return SOF_SMA_PASS;
	}
	n->smp_in++;
	if (method == SOF_METHOD_TRAP_REPRESS) {
		if (!sma_mkey_check(&r, mad)) {
			if (events)
				*events = r.ev;
			return sma_drop(n, SOF_SMP_DROP_MKEY);
		}
		if (events)
			*events = SOF_SMA_EV_REPRESS;
		/* the repress of this node's trap (the caller matches the
		 * TID), or, on a node with an SM, maybe of the SM's trap */
		return n->sm_agent ? SOF_SMA_PASS : SOF_SMA_DONE;
	}

	if (mad[2] != 1) {
		status = SOF_STATUS_BAD_VERSION;
	} else if (method != SOF_METHOD_GET && method != SOF_METHOD_SET) {
		status = SOF_STATUS_BAD_METHOD;
	} else if (!sma_mkey_check(&r, mad)) {
		if (events)
			*events = r.ev;
		return sma_drop(n, SOF_SMP_DROP_MKEY);
	} else {
		r.set = method == SOF_METHOD_SET;
		status = SOF_STATUS_BAD_ATTR;
		for (i = 0; i < sizeof(sma_attrs) / sizeof(sma_attrs[0]); i++)
			if (sma_attrs[i].id == attr) {
				status = sma_attrs[i].fn(&r);
				break;
			}
		if (status == SOF_STATUS_BAD_VALUE && r.set) {
			/* a rejected Set changes nothing; the response shows
			 * the attribute as it is */
			r.set = false;
			(void)sma_attrs[i].fn(&r);
		}
		if (status == SOF_STATUS_BAD_ATTR)
			memset(r.d, 0, SOF_SMP_DATA_LEN);
	}
	if (n->type == SOF_NODE_SWITCH && n->sw.port_state_change &&
	    (r.ev & (SOF_SMA_EV_STATE | SOF_SMA_EV_DISABLE)))
		r.ev |= SOF_SMA_EV_TRAP_128;
	mad[3] = SOF_METHOD_GET_RESP;
	sof_put16(mad + SOF_SMP_OFF_STATUS, (uint16_t)(status | dbit));
	n->smp_out++;
	if (events)
		*events = r.ev;
	return SOF_SMA_REPLY;
}

/* IBA 14.2.5.1 Notice, 13.4.8.2: generic notice, producer by node type */
void sof_sma_trap(const struct sof_node *n, unsigned port, uint16_t trap, uint64_t tid,
		  uint8_t *mad)
{
	const struct sof_port *m = n->type == SOF_NODE_SWITCH
				       ? &n->port[0]
				       : &n->port[port >= 1 && port <= n->nports ? port : 1];
	uint8_t *d = mad + SOF_SMP_OFF_DATA;
	uint8_t type = trap == SOF_TRAP_LINK_STATE ? 1 /* urgent */
		       : trap == SOF_TRAP_BAD_MKEY ? 2 /* security */
						   : 4 /* informational */;

	sof_smp_init(mad, false, SOF_METHOD_TRAP, SOF_ATTR_NOTICE, 0, tid, m->mkey);
	d[0] = (uint8_t)(0x80 | type);
	d[3] = n->type; /* ProducerType: 1 CA, 2 switch */
	sof_put16(d + 4, trap);
	sof_put16(d + 6, m->lid);
	switch (trap) {
	case SOF_TRAP_LINK_STATE:
		sof_put16(d + 10, m->lid); /* LIDADDR */
		break;
	case SOF_TRAP_CAP_CHANGE:
		sof_put16(d + 12, m->lid);
		sof_put32(d + 16, m->cap_mask);
		sof_put16(d + 22, m->cap_mask2);
		break;
	case SOF_TRAP_BAD_MKEY: {
		/* the SMP that failed the check (IBA 14.2.5.1 table 147:
		 * LIDADDR, DRSLID, Method, AttributeID/Modifier, M_Key, the
		 * DR hop count and return path, truncated to 30 hops) */
		const struct sof_mkey_bad *b = &n->mkey_bad;

		sof_put16(d + 12, m->lid);
		sof_put16(d + 14, b->dr_slid);
		d[16] = b->method;
		sof_put16(d + 18, b->attr_id);
		sof_put32(d + 20, b->attr_mod);
		sof_put64(d + 24, b->mkey);
		d[33] = (uint8_t)(b->directed << 7 | b->truncated << 6 | (b->hops & 0x3f));
		memcpy(d + 34, b->rpath, sizeof(b->rpath));
		break;
	}
	default:
		break;
	}
}
