/*
 * The congestion control agent (IBA annex A10) over the node model of
 * mad/smp.h, and the entry of a node's GSI agents (sof_gsi_agent_process):
 * PerfMgt to mad/pma.c, congestion control here, anything else to the
 * caller (a program on the HCA may take it).
 *
 * The agent keeps what a congestion control manager (OpenSM's
 * --congestion_control, ibccconfig) sets and reads it back: CC_Key and
 * its protection (A10.4.1), SwitchCongestionSetting and the per-port
 * SwitchPortCongestionSetting of a switch, CACongestionSetting and one
 * block of the CongestionControlTable of a CA, the TimeStamp. softofed's
 * switches mark no FECN and its CAs do not slow down on a BECN, so the
 * CongestionLog is always empty. Pure; the caller serialises calls
 * on a node and sets n->now_ms.
 */
#include "smp.h"

#include <string.h>

/* A10.4.1: the CC MAD: header, CC_Key at 24, log data at 32, data at 64 */
#define CC_OFF_KEY 24
#define CC_OFF_LOG 32
#define CC_OFF_DATA 64
#define CC_CLASS_VERSION 2

/* A10.4.3 attributes (table 501) */
#define CC_ATTR_CONG_INFO 0x0011
#define CC_ATTR_KEY_INFO 0x0012
#define CC_ATTR_LOG 0x0013
#define CC_ATTR_SW_SETTING 0x0014
#define CC_ATTR_SW_PORT_SETTING 0x0015
#define CC_ATTR_CA_SETTING 0x0016
#define CC_ATTR_CC_TABLE 0x0017
#define CC_ATTR_TIMESTAMP 0x0018

#define CC_LOG_SWITCH 0x01 /* A10.4.3.5 LogType */
#define CC_LOG_CA 0x02
#define CC_PORTS_PER_BLOCK 32 /* SwitchPortCongestionSetting elements */

/* A10.4.1.1: a Get passes with any key unless CC_KeyProtectBit is set; a
 * node whose CC_Key is 0 checks nothing */
static bool key_ok(const struct sof_cc *cc, const uint8_t *mad, bool set)
{
	if (cc->key == 0 || sof_get64(mad + CC_OFF_KEY) == cc->key)
		return true;
	return !set && !cc->protect;
}

static uint32_t timestamp(const struct sof_node *n)
{
	/* A10.4.3.10: a free-running count of 1.024 us */
	return (uint32_t)(n->now_ms * 1000000u / 1024u);
}

static uint16_t class_port_info(bool set, uint8_t *d)
{
	if (set)
		return SOF_STATUS_BAD_ATTR;
	d[0] = 1;		 /* BaseVersion */
	d[1] = CC_CLASS_VERSION; /* ClassVersion */
	sof_put32(d + 4, 18);	 /* RespTimeValue */
	return SOF_STATUS_OK;
}

static uint16_t key_info(struct sof_cc *cc, bool set, const uint8_t *in, uint8_t *d)
{
	if (set) {
		cc->key = sof_get64(in);
		cc->protect = in[8] >> 7;
		cc->lease = sof_get16(in + 10);
		cc->violations = sof_get16(in + 12);
	}
	sof_put64(d, cc->key);
	d[8] = (uint8_t)(cc->protect << 7);
	sof_put16(d + 10, cc->lease);
	sof_put16(d + 12, cc->violations);
	return SOF_STATUS_OK;
}

/* A10.4.3.5: nothing is ever logged (see the head of the file) */
static uint16_t cong_log(const struct sof_node *n, bool set, uint8_t *mad)
{
	uint8_t *l = mad + CC_OFF_LOG;

	if (set)
		return SOF_STATUS_BAD_ATTR;
	memset(l, 0, SOF_SMP_LEN - CC_OFF_LOG);
	if (n->type == SOF_NODE_SWITCH) {
		l[0] = CC_LOG_SWITCH;
		sof_put32(l + 4, timestamp(n));
	} else {
		l[0] = CC_LOG_CA;
		sof_put32(l + 8, timestamp(n));
	}
	return SOF_STATUS_OK;
}

/* A10.4.3.6: Control_Map (0), Victim_Mask (4), Credit_Mask (36),
 * Threshold (68, high nibble), Packet_Size (69), CS_Threshold (70, high
 * nibble), CS_ReturnDelay (72), Marking_Rate (74) */
static uint16_t sw_setting(struct sof_cc *cc, bool set, const uint8_t *in, uint8_t *d)
{
	if (set) {
		memcpy(cc->sw_setting, in, sizeof(cc->sw_setting));
		cc->sw_setting[68] &= 0xf0;
		cc->sw_setting[70] &= 0xf0;
		cc->sw_setting[71] = 0;
	}
	memcpy(d, cc->sw_setting, sizeof(cc->sw_setting));
	return SOF_STATUS_OK;
}

/* A10.4.3.7: 32 ports a block (AttributeModifier), 32 bits each: Valid,
 * Control_Type, Threshold (low nibble of byte 0), Packet_Size,
 * Cong_Parm; port 0 (the switch itself) has none */
static uint16_t sw_port_setting(struct sof_node *n, uint32_t block, bool set, const uint8_t *in,
				uint8_t *d)
{
	unsigned i, port;

	if (block > n->nports / CC_PORTS_PER_BLOCK)
		return SOF_STATUS_BAD_VALUE;
	for (i = 0; i < CC_PORTS_PER_BLOCK; i++) {
		port = block * CC_PORTS_PER_BLOCK + i;
		if (port > n->nports)
			break;
		if (set && port > 0)
			n->port[port].cc_setting = sof_get32(in + 4 * i) & 0xcfffffffu;
		sof_put32(d + 4 * i, port > 0 ? n->port[port].cc_setting : 0);
	}
	return SOF_STATUS_OK;
}

/* A10.4.3.8: Port_Control (0), Control_Map (2), then per SL an entry of 8
 * bytes: CCTI_Timer (0), CCTI_Increase (2), Trigger_Threshold (3),
 * CCTI_Min (4) */
static uint16_t ca_setting(struct sof_cc *cc, bool set, const uint8_t *in, uint8_t *d)
{
	unsigned sl;

	if (set) {
		memcpy(cc->ca_setting, in, sizeof(cc->ca_setting));
		for (sl = 0; sl < 16; sl++)
			memset(cc->ca_setting + 4 + 8 * sl + 5, 0, 3);
	}
	memcpy(d, cc->ca_setting, sizeof(cc->ca_setting));
	return SOF_STATUS_OK;
}

/* A10.4.3.9: CCTI_Limit (0), then 64 entries of 16 bits (CCT_Shift,
 * CCT_Multiplier) at 4; block 0 only (ControlTableCap 1) */
static uint16_t cc_table(struct sof_cc *cc, bool set, const uint8_t *in, uint8_t *d)
{
	if (set) {
		memcpy(cc->cct, in, sizeof(cc->cct));
		cc->cct[2] = cc->cct[3] = 0;
	}
	memcpy(d, cc->cct, sizeof(cc->cct));
	return SOF_STATUS_OK;
}

/* in: the request's data (64..255); the answer goes into mad, whose data
 * the caller zeroed */
static uint16_t attribute(struct sof_node *n, uint16_t attr, uint32_t mod, bool set,
			  const uint8_t *in, uint8_t *mad)
{
	bool sw = n->type == SOF_NODE_SWITCH;
	uint8_t *d = mad + CC_OFF_DATA;

	switch (attr) {
	case SOF_ATTR_CLASS_PORT_INFO:
		return class_port_info(set, d);
	case CC_ATTR_CONG_INFO:
		/* CongestionInfo 0 (no credit starvation); a CA's
		 * ControlTableCap: one block of 64 entries */
		if (set)
			return SOF_STATUS_BAD_ATTR;
		d[2] = sw ? 0 : 1;
		return SOF_STATUS_OK;
	case CC_ATTR_KEY_INFO:
		return key_info(&n->cc, set, in, d);
	case CC_ATTR_LOG:
		return cong_log(n, set, mad);
	case CC_ATTR_SW_SETTING:
		return sw ? sw_setting(&n->cc, set, in, d) : SOF_STATUS_BAD_ATTR;
	case CC_ATTR_SW_PORT_SETTING:
		return sw ? sw_port_setting(n, mod, set, in, d) : SOF_STATUS_BAD_ATTR;
	case CC_ATTR_CA_SETTING:
		return sw ? SOF_STATUS_BAD_ATTR : ca_setting(&n->cc, set, in, d);
	case CC_ATTR_CC_TABLE:
		if (sw)
			return SOF_STATUS_BAD_ATTR;
		return mod == 0 ? cc_table(&n->cc, set, in, d) : SOF_STATUS_BAD_VALUE;
	case CC_ATTR_TIMESTAMP:
		if (set)
			return SOF_STATUS_BAD_ATTR;
		sof_put32(d, timestamp(n));
		return SOF_STATUS_OK;
	default:
		return SOF_STATUS_BAD_ATTR;
	}
}

enum sof_sma_result sof_cc_process(struct sof_node *n, uint8_t *mad, size_t len)
{
	uint16_t status = SOF_STATUS_OK, attr;
	uint8_t req[SOF_SMP_LEN - CC_OFF_DATA];
	uint8_t method;
	bool set;

	if (!sof_gmp_take(n, mad, len, SOF_MCLASS_CC))
		return SOF_SMA_DROP;
	method = mad[3];
	set = method == SOF_METHOD_SET;
	if (!key_ok(&n->cc, mad, set)) {
		/* A10.4.1.1: discarded without a response, counted */
		if (n->cc.violations < 0xffff)
			n->cc.violations++;
		n->drops[SOF_SMP_DROP_MKEY]++;
		return SOF_SMA_DROP;
	}
	attr = sof_get16(mad + SOF_SMP_OFF_ATTR_ID);
	if (mad[2] != CC_CLASS_VERSION)
		status = SOF_STATUS_BAD_VERSION;
	else if (method != SOF_METHOD_GET && !set)
		status = SOF_STATUS_BAD_METHOD;
	if (status == SOF_STATUS_OK) {
		memcpy(req, mad + CC_OFF_DATA, sizeof(req));
		memset(mad + CC_OFF_DATA, 0, sizeof(req));
		status = attribute(n, attr, sof_get32(mad + SOF_SMP_OFF_ATTR_MOD), set, req, mad);
		if (status != SOF_STATUS_OK)
			memcpy(mad + CC_OFF_DATA, req, sizeof(req));
	}
	mad[3] = SOF_METHOD_GET_RESP;
	sof_put16(mad + SOF_SMP_OFF_STATUS, status);
	return SOF_SMA_REPLY;
}

enum sof_sma_result sof_gsi_agent_process(struct sof_node *n, unsigned in_port, uint8_t *mad,
					  size_t len)
{
	if (len < 4 || (mad[3] & SOF_METHOD_RESP_BIT))
		return SOF_SMA_PASS;
	if (mad[1] == SOF_MCLASS_PERF)
		return sof_pma_process(n, in_port, mad, len);
	if (mad[1] == SOF_MCLASS_CC)
		return sof_cc_process(n, mad, len);
	return SOF_SMA_PASS;
}
