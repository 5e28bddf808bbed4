/*
 * The performance management agent (IBA 16.1) over the node model of
 * mad/smp.h: ClassPortInfo, PortCounters (32-bit, saturating),
 * PortCountersExtended (64-bit data and packets), PortRcvErrorDetails and
 * PortXmitDiscardDetails (16-bit, saturating), Get, and Set to reset the
 * counters CounterSelect names. The counters are the ports' own,
 * counted by whoever moves the packets (sof_port_count_xmit/_rcv). Pure.
 */
#include "smp.h"

#include <string.h>

/* PerfMgt ClassPortInfo:CapabilityMask (IBA 16.1.2, table 226) */
#define PMA_CAP_ALL_PORT_SELECT 0x0100
#define PMA_CAP_EXT_WIDTH 0x0200
#define PMA_CAP_XMIT_WAIT 0x1000
#define PMA_ALL_PORTS 0xff

static uint32_t sat(uint64_t v, uint32_t max) { return v > max ? max : (uint32_t)v; }

static void sum(struct sof_port_counters *t, const struct sof_port_counters *c)
{
	t->xmit_data += c->xmit_data;
	t->rcv_data += c->rcv_data;
	t->xmit_pkts += c->xmit_pkts;
	t->rcv_pkts += c->rcv_pkts;
	t->uni_xmit_pkts += c->uni_xmit_pkts;
	t->uni_rcv_pkts += c->uni_rcv_pkts;
	t->mc_xmit_pkts += c->mc_xmit_pkts;
	t->mc_rcv_pkts += c->mc_rcv_pkts;
	t->symbol_errors += c->symbol_errors;
	t->link_error_recovery += c->link_error_recovery;
	t->link_downed += c->link_downed;
	t->rcv_errors += c->rcv_errors;
	t->rcv_remote_phys_errors += c->rcv_remote_phys_errors;
	t->rcv_switch_relay_errors += c->rcv_switch_relay_errors;
	t->xmit_discards += c->xmit_discards;
	t->xmit_constraint_errors += c->xmit_constraint_errors;
	t->rcv_constraint_errors += c->rcv_constraint_errors;
	t->local_link_integrity_errors += c->local_link_integrity_errors;
	t->excessive_buffer_overruns += c->excessive_buffer_overruns;
	t->vl15_dropped += c->vl15_dropped;
	t->xmit_wait += c->xmit_wait;
	t->local_phys_errors += c->local_phys_errors;
	t->malformed_pkt_errors += c->malformed_pkt_errors;
	t->dlid_map_errors += c->dlid_map_errors;
	t->inactive_discards += c->inactive_discards;
}

/* IBA 16.1.3.5 PortCounters: CounterSelect bit i resets field i */
static void reset_basic(struct sof_port_counters *c, uint16_t sel)
{
	if (sel & 0x0001)
		c->symbol_errors = 0;
	if (sel & 0x0002)
		c->link_error_recovery = 0;
	if (sel & 0x0004)
		c->link_downed = 0;
	if (sel & 0x0008)
		c->rcv_errors = 0;
	if (sel & 0x0010)
		c->rcv_remote_phys_errors = 0;
	if (sel & 0x0020)
		c->rcv_switch_relay_errors = 0;
	if (sel & 0x0040)
		c->xmit_discards = 0;
	if (sel & 0x0080)
		c->xmit_constraint_errors = 0;
	if (sel & 0x0100)
		c->rcv_constraint_errors = 0;
	if (sel & 0x0200)
		c->local_link_integrity_errors = 0;
	if (sel & 0x0400)
		c->excessive_buffer_overruns = 0;
	if (sel & 0x0800)
		c->vl15_dropped = 0;
	if (sel & 0x1000)
		c->xmit_data = 0;
	if (sel & 0x2000)
		c->rcv_data = 0;
	if (sel & 0x4000)
		c->xmit_pkts = 0;
	if (sel & 0x8000)
		c->rcv_pkts = 0;
	if (sel == 0xffff)
		c->xmit_wait = 0;
}

/* IBA 16.1.4.11 PortCountersExtended: CounterSelect bits 0..7 */
static void reset_ext(struct sof_port_counters *c, uint16_t sel)
{
	if (sel & 0x01)
		c->xmit_data = 0;
	if (sel & 0x02)
		c->rcv_data = 0;
	if (sel & 0x04)
		c->xmit_pkts = 0;
	if (sel & 0x08)
		c->rcv_pkts = 0;
	if (sel & 0x10)
		c->uni_xmit_pkts = 0;
	if (sel & 0x20)
		c->uni_rcv_pkts = 0;
	if (sel & 0x40)
		c->mc_xmit_pkts = 0;
	if (sel & 0x80)
		c->mc_rcv_pkts = 0;
}

/* IBA 16.1.4.1 PortRcvErrorDetails: CounterSelect bits 0..5, of which
 * local physical (0), malformed packet (1) and DLID mapping (3) errors
 * happen here; buffer overrun, VL mapping and looping errors cannot */
static void reset_rcv_err(struct sof_port_counters *c, uint16_t sel)
{
	if (sel & 0x01)
		c->local_phys_errors = 0;
	if (sel & 0x02)
		c->malformed_pkt_errors = 0;
	if (sel & 0x08)
		c->dlid_map_errors = 0;
}

/* IBA 16.1.4.2 PortXmitDiscardDetails: bit 0 inactive discards; neighbor
 * MTU and lifetime discards (bits 1..3) cannot happen here */
static void reset_xmit_disc(struct sof_port_counters *c, uint16_t sel)
{
	if (sel & 0x01)
		c->inactive_discards = 0;
}

static void put_basic(uint8_t *d, const struct sof_port_counters *c)
{
	sof_put16(d + 4, (uint16_t)sat(c->symbol_errors, 0xffff));
	d[6] = (uint8_t)sat(c->link_error_recovery, 0xff);
	d[7] = (uint8_t)sat(c->link_downed, 0xff);
	sof_put16(d + 8, (uint16_t)sat(c->rcv_errors, 0xffff));
	sof_put16(d + 10, (uint16_t)sat(c->rcv_remote_phys_errors, 0xffff));
	sof_put16(d + 12, (uint16_t)sat(c->rcv_switch_relay_errors, 0xffff));
	sof_put16(d + 14, (uint16_t)sat(c->xmit_discards, 0xffff));
	d[16] = (uint8_t)sat(c->xmit_constraint_errors, 0xff);
	d[17] = (uint8_t)sat(c->rcv_constraint_errors, 0xff);
	d[19] = (uint8_t)(sat(c->local_link_integrity_errors, 0xf) << 4 |
			  sat(c->excessive_buffer_overruns, 0xf));
	sof_put16(d + 22, (uint16_t)sat(c->vl15_dropped, 0xffff));
	sof_put32(d + 24, sat(c->xmit_data, 0xffffffffu));
	sof_put32(d + 28, sat(c->rcv_data, 0xffffffffu));
	sof_put32(d + 32, sat(c->xmit_pkts, 0xffffffffu));
	sof_put32(d + 36, sat(c->rcv_pkts, 0xffffffffu));
	sof_put32(d + 40, c->xmit_wait);
}

static void put_ext(uint8_t *d, const struct sof_port_counters *c)
{
	sof_put64(d + 8, c->xmit_data);
	sof_put64(d + 16, c->rcv_data);
	sof_put64(d + 24, c->xmit_pkts);
	sof_put64(d + 32, c->rcv_pkts);
	sof_put64(d + 40, c->uni_xmit_pkts);
	sof_put64(d + 48, c->uni_rcv_pkts);
	sof_put64(d + 56, c->mc_xmit_pkts);
	sof_put64(d + 64, c->mc_rcv_pkts);
}

enum pma_set { PMA_BASIC, PMA_EXT, PMA_RCV_ERR, PMA_XMIT_DISC };

static void reset(struct sof_port_counters *c, enum pma_set which, uint16_t csel)
{
	switch (which) {
	case PMA_BASIC:
		reset_basic(c, csel);
		break;
	case PMA_EXT:
		reset_ext(c, csel);
		break;
	case PMA_RCV_ERR:
		reset_rcv_err(c, csel);
		break;
	case PMA_XMIT_DISC:
		reset_xmit_disc(c, csel);
		break;
	}
}

static void put(uint8_t *d, enum pma_set which, const struct sof_port_counters *c)
{
	switch (which) {
	case PMA_BASIC:
		put_basic(d, c);
		break;
	case PMA_EXT:
		put_ext(d, c);
		break;
	case PMA_RCV_ERR:
		sof_put16(d + 4, (uint16_t)sat(c->local_phys_errors, 0xffff));
		sof_put16(d + 6, (uint16_t)sat(c->malformed_pkt_errors, 0xffff));
		sof_put16(d + 10, (uint16_t)sat(c->dlid_map_errors, 0xffff));
		break;
	case PMA_XMIT_DISC:
		sof_put16(d + 4, (uint16_t)sat(c->inactive_discards, 0xffff));
		break;
	}
}

static uint16_t counters(struct sof_node *n, unsigned in_port, bool set, enum pma_set which,
			 uint8_t *d)
{
	unsigned sel = d[1], first, last, i;
	uint16_t csel = sof_get16(d + 2);
	struct sof_port_counters total;

	if (sel == PMA_ALL_PORTS) {
		first = 1;
		last = n->nports;
	} else {
		if (sel == 0 && n->type != SOF_NODE_SWITCH)
			sel = in_port;
		if (sel > n->nports)
			return SOF_STATUS_BAD_VALUE;
		first = last = sel;
	}
	memset(&total, 0, sizeof(total));
	for (i = first; i <= last; i++) {
		struct sof_port_counters *c = &n->port[i].cnt;

		if (set)
			reset(c, which, csel);
		sum(&total, c);
	}
	memset(d + 4, 0, 192 - 4);
	put(d, which, &total);
	return SOF_STATUS_OK;
}

static uint16_t class_port_info(bool set, uint8_t *d)
{
	if (set)
		return SOF_STATUS_BAD_ATTR;
	memset(d, 0, 192);
	d[0] = 1;
	d[1] = 1;
	sof_put16(d + 2, PMA_CAP_ALL_PORT_SELECT | PMA_CAP_EXT_WIDTH | PMA_CAP_XMIT_WAIT);
	sof_put32(d + 4, 18); /* RespTimeValue */
	return SOF_STATUS_OK;
}

bool sof_gmp_take(struct sof_node *n, const uint8_t *mad, size_t len, uint8_t mclass)
{
	enum sof_smp_drop why;

	if (len != SOF_SMP_LEN)
		why = SOF_SMP_DROP_LEN;
	else if (mad[0] != 1)
		why = SOF_SMP_DROP_VERSION;
	else if (mad[1] != mclass)
		why = SOF_SMP_DROP_CLASS;
	else if (mad[3] & SOF_METHOD_RESP_BIT)
		why = SOF_SMP_DROP_RESPONSE;
	else
		return true;
	n->drops[why]++;
	return false;
}

enum sof_sma_result sof_pma_process(struct sof_node *n, unsigned in_port, uint8_t *mad, size_t len)
{
	uint8_t *d = mad + SOF_PMA_OFF_DATA;
	uint16_t status, attr;
	uint8_t method;
	bool set;

	if (!sof_gmp_take(n, mad, len, SOF_MCLASS_PERF))
		return SOF_SMA_DROP;
	if (in_port > n->nports || (in_port == 0 && n->type != SOF_NODE_SWITCH)) {
		n->drops[SOF_SMP_DROP_PATH]++;
		return SOF_SMA_DROP;
	}
	method = mad[3];
	attr = sof_get16(mad + SOF_SMP_OFF_ATTR_ID);
	set = method == SOF_METHOD_SET;
	if (mad[2] != 1)
		status = SOF_STATUS_BAD_VERSION;
	else if (method != SOF_METHOD_GET && !set)
		status = SOF_STATUS_BAD_METHOD;
	else if (attr == SOF_ATTR_CLASS_PORT_INFO)
		status = class_port_info(set, d);
	else if (attr == SOF_ATTR_PORT_COUNTERS)
		status = counters(n, in_port, set, PMA_BASIC, d);
	else if (attr == SOF_ATTR_PORT_COUNTERS_EXT)
		status = counters(n, in_port, set, PMA_EXT, d);
	else if (attr == SOF_ATTR_PORT_RCV_ERR_DETAILS)
		status = counters(n, in_port, set, PMA_RCV_ERR, d);
	else if (attr == SOF_ATTR_PORT_XMIT_DISC_DETAILS)
		status = counters(n, in_port, set, PMA_XMIT_DISC, d);
	else
		status = SOF_STATUS_BAD_ATTR;
	mad[3] = SOF_METHOD_GET_RESP;
	sof_put16(mad + SOF_SMP_OFF_STATUS, status);
	return SOF_SMA_REPLY;
}
