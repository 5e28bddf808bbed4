/*
 * SA records and the SA header (IBA 15.2): each record as a table of its
 * fields in component order, so packing a field, reading it and matching
 * a record against a query under a ComponentMask are one loop each; the
 * structs of the records a server takes from requests, packed and
 * unpacked through the same tables; and the parser of an SA request from
 * the wire (sof_sa_parse), which checks everything a server would
 * otherwise trust: length, versions, method and attribute, the RMPP
 * header, the mask. Pure: no I/O, no state.
 */
#include "sa.h"

#include <errno.h>
#include <string.h>

#include "smp.h"

/* a field at byte B, bit b of that byte (0 = most significant), n bits */
#define F(c, B, b, n)                                                                              \
	{                                                                                          \
		.comp = (c), .bit = (uint16_t)((B)*8 + (b)), .bits = (n)                           \
	}
#define REC(nm, attr, l, tbl)                                                                      \
	{                                                                                          \
		.name = (nm), .attr_id = (attr), .len = (l),                                       \
		.ncomp = (uint8_t)(sizeof(tbl) / sizeof((tbl)[0])),                                \
		.nfields = (uint8_t)(sizeof(tbl) / sizeof((tbl)[0])), .fields = (tbl)              \
	}

static const struct sof_sa_field path_f[] = {
    F(SOF_PR_SERVICE_ID_MSB, 0, 0, 32),
    F(SOF_PR_SERVICE_ID_LSB, 4, 0, 32),
    F(SOF_PR_DGID, 8, 0, 128),
    F(SOF_PR_SGID, 24, 0, 128),
    F(SOF_PR_DLID, 40, 0, 16),
    F(SOF_PR_SLID, 42, 0, 16),
    F(SOF_PR_RAW, 44, 0, 1),
    F(SOF_PR_RESV0, 44, 1, 3),
    F(SOF_PR_FLOW_LABEL, 44, 4, 20),
    F(SOF_PR_HOP_LIMIT, 47, 0, 8),
    F(SOF_PR_TCLASS, 48, 0, 8),
    F(SOF_PR_REVERSIBLE, 49, 0, 1),
    F(SOF_PR_NUMB_PATH, 49, 1, 7),
    F(SOF_PR_PKEY, 50, 0, 16),
    F(SOF_PR_QOS_CLASS, 52, 0, 12),
    F(SOF_PR_SL, 53, 4, 4),
    F(SOF_PR_MTU_SEL, 54, 0, 2),
    F(SOF_PR_MTU, 54, 2, 6),
    F(SOF_PR_RATE_SEL, 55, 0, 2),
    F(SOF_PR_RATE, 55, 2, 6),
    F(SOF_PR_LIFE_SEL, 56, 0, 2),
    F(SOF_PR_LIFE, 56, 2, 6),
    F(SOF_PR_PREFERENCE, 57, 0, 8),
    F(SOF_PR_RESV2, 58, 0, 48),
};

static const struct sof_sa_field multipath_f[] = {
    F(SOF_MPR_RAW, 0, 0, 1),
    F(SOF_MPR_RESV0, 0, 1, 3),
    F(SOF_MPR_FLOW_LABEL, 0, 4, 20),
    F(SOF_MPR_HOP_LIMIT, 3, 0, 8),
    F(SOF_MPR_TCLASS, 4, 0, 8),
    F(SOF_MPR_REVERSIBLE, 5, 0, 1),
    F(SOF_MPR_NUMB_PATH, 5, 1, 7),
    F(SOF_MPR_PKEY, 6, 0, 16),
    F(SOF_MPR_QOS_CLASS, 8, 0, 12),
    F(SOF_MPR_SL, 9, 4, 4),
    F(SOF_MPR_MTU_SEL, 10, 0, 2),
    F(SOF_MPR_MTU, 10, 2, 6),
    F(SOF_MPR_RATE_SEL, 11, 0, 2),
    F(SOF_MPR_RATE, 11, 2, 6),
    F(SOF_MPR_LIFE_SEL, 12, 0, 2),
    F(SOF_MPR_LIFE, 12, 2, 6),
    F(SOF_MPR_SERVICE_ID_MSB, 13, 0, 8),
    F(SOF_MPR_INDEP_SEL, 14, 0, 2),
    F(SOF_MPR_RESV2, 14, 2, 6),
    F(SOF_MPR_SGID_COUNT, 15, 0, 8),
    F(SOF_MPR_DGID_COUNT, 16, 0, 8),
    F(SOF_MPR_SERVICE_ID_LSB, 17, 0, 56),
};

static const struct sof_sa_field node_f[] = {
    F(SOF_NR_LID, 0, 0, 16),	     F(SOF_NR_RESV, 2, 0, 16),
    F(SOF_NR_BASE_VERSION, 4, 0, 8), F(SOF_NR_CLASS_VERSION, 5, 0, 8),
    F(SOF_NR_NODE_TYPE, 6, 0, 8),    F(SOF_NR_NUM_PORTS, 7, 0, 8),
    F(SOF_NR_SYS_GUID, 8, 0, 64),    F(SOF_NR_NODE_GUID, 16, 0, 64),
    F(SOF_NR_PORT_GUID, 24, 0, 64),  F(SOF_NR_PART_CAP, 32, 0, 16),
    F(SOF_NR_DEVICE_ID, 34, 0, 16),  F(SOF_NR_REVISION, 36, 0, 32),
    F(SOF_NR_LOCAL_PORT, 40, 0, 8),  F(SOF_NR_VENDOR_ID, 41, 0, 24),
    F(SOF_NR_DESC, 44, 0, 512),
};

/* PortInfo (IBA 14.2.5.6) at byte 4 of the record */
#define P(c, B, b, n) F(c, (B) + SOF_SA_PIR_INFO_OFF, b, n)
static const struct sof_sa_field portinfo_f[] = {
    F(SOF_PIR_LID, 0, 0, 16),
    F(SOF_PIR_PORT_NUM, 2, 0, 8),
    F(SOF_PIR_OPTIONS, 3, 0, 8),
    P(SOF_PIR_MKEY, 0, 0, 64),
    P(SOF_PIR_GID_PREFIX, 8, 0, 64),
    P(SOF_PIR_BASE_LID, 16, 0, 16),
    P(SOF_PIR_SM_LID, 18, 0, 16),
    P(SOF_PIR_CAP_MASK, 20, 0, 32),
    P(SOF_PIR_DIAG, 24, 0, 16),
    P(SOF_PIR_MKEY_LEASE, 26, 0, 16),
    P(SOF_PIR_LOCAL_PORT, 28, 0, 8),
    P(SOF_PIR_WIDTH_EN, 29, 0, 8),
    P(SOF_PIR_WIDTH_SUP, 30, 0, 8),
    P(SOF_PIR_WIDTH_ACT, 31, 0, 8),
    P(SOF_PIR_SPEED_SUP, 32, 0, 4),
    P(SOF_PIR_STATE, 32, 4, 4),
    P(SOF_PIR_PHYS, 33, 0, 4),
    P(SOF_PIR_DOWN_DEF, 33, 4, 4),
    P(SOF_PIR_MKEY_PROT, 34, 0, 2),
    P(SOF_PIR_RESV1, 34, 2, 3),
    P(SOF_PIR_LMC, 34, 5, 3),
    P(SOF_PIR_SPEED_ACT, 35, 0, 4),
    P(SOF_PIR_SPEED_EN, 35, 4, 4),
    P(SOF_PIR_NEIGHBOR_MTU, 36, 0, 4),
    P(SOF_PIR_SM_SL, 36, 4, 4),
    P(SOF_PIR_VL_CAP, 37, 0, 4),
    P(SOF_PIR_INIT_TYPE, 37, 4, 4),
    P(SOF_PIR_VL_HIGH_LIMIT, 38, 0, 8),
    P(SOF_PIR_VL_ARB_HIGH, 39, 0, 8),
    P(SOF_PIR_VL_ARB_LOW, 40, 0, 8),
    P(SOF_PIR_INIT_TYPE_REPLY, 41, 0, 4),
    P(SOF_PIR_MTU_CAP, 41, 4, 4),
    P(SOF_PIR_VL_STALL, 42, 0, 3),
    P(SOF_PIR_HOQ_LIFE, 42, 3, 5),
    P(SOF_PIR_OP_VLS, 43, 0, 4),
    P(SOF_PIR_PE_IN, 43, 4, 1),
    P(SOF_PIR_PE_OUT, 43, 5, 1),
    P(SOF_PIR_FILTER_IN, 43, 6, 1),
    P(SOF_PIR_FILTER_OUT, 43, 7, 1),
    P(SOF_PIR_MKEY_VIOL, 44, 0, 16),
    P(SOF_PIR_PKEY_VIOL, 46, 0, 16),
    P(SOF_PIR_QKEY_VIOL, 48, 0, 16),
    P(SOF_PIR_GUID_CAP, 50, 0, 8),
    P(SOF_PIR_CLIENT_REREG, 51, 0, 1),
    P(SOF_PIR_RESV2, 51, 1, 2),
    P(SOF_PIR_SUBNET_TIMEOUT, 51, 3, 5),
    P(SOF_PIR_RESV3, 52, 0, 3),
    P(SOF_PIR_RESP_TIME, 52, 3, 5),
    P(SOF_PIR_LOCAL_PHY_ERR, 53, 0, 4),
    P(SOF_PIR_OVERRUN_ERR, 53, 4, 4),
    P(SOF_PIR_MAX_CREDIT_HINT, 54, 0, 16),
    P(SOF_PIR_RESV4, 56, 0, 8),
    P(SOF_PIR_LINK_RT_LATENCY, 57, 0, 24),
    P(SOF_PIR_CAP_MASK2, 60, 0, 16),
    P(SOF_PIR_SPEED_EXT_ACT, 62, 0, 4),
    P(SOF_PIR_SPEED_EXT_SUP, 62, 4, 4),
    P(SOF_PIR_RESV5, 63, 0, 3),
    P(SOF_PIR_SPEED_EXT_EN, 63, 3, 5),
};
#undef P

static const struct sof_sa_field link_f[] = {
    F(SOF_LR_FROM_LID, 0, 0, 16),
    F(SOF_LR_FROM_PORT, 2, 0, 8),
    F(SOF_LR_TO_PORT, 3, 0, 8),
    F(SOF_LR_TO_LID, 4, 0, 16),
};

/* SwitchInfo (IBA 14.2.5.4) at byte 4 */
static const struct sof_sa_field switchinfo_f[] = {
    F(SOF_SWIR_LID, 0, 0, 16),
    F(SOF_SWIR_RESV, 2, 0, 16),
    F(SOF_SWIR_LFT_CAP, 4, 0, 16),
    F(SOF_SWIR_RFT_CAP, 6, 0, 16),
    F(SOF_SWIR_MFT_CAP, 8, 0, 16),
    F(SOF_SWIR_LFT_TOP, 10, 0, 16),
    F(SOF_SWIR_DEFAULT_PORT, 12, 0, 8),
    F(SOF_SWIR_DEF_MC_PRI, 13, 0, 8),
    F(SOF_SWIR_DEF_MC_NOT_PRI, 14, 0, 8),
    F(SOF_SWIR_LIFE_TIME, 15, 0, 5),
    F(SOF_SWIR_PORT_STATE_CHANGE, 15, 5, 1),
    F(SOF_SWIR_OPT_SL2VL, 15, 6, 2),
    F(SOF_SWIR_LIDS_PER_PORT, 16, 0, 16),
    F(SOF_SWIR_PE_CAP, 18, 0, 16),
    F(SOF_SWIR_IN_ENF, 20, 0, 1),
    F(SOF_SWIR_OUT_ENF, 20, 1, 1),
    F(SOF_SWIR_FILTER_IN, 20, 2, 1),
    F(SOF_SWIR_FILTER_OUT, 20, 3, 1),
    F(SOF_SWIR_ENH_PORT0, 20, 4, 1),
    F(SOF_SWIR_RESV2, 20, 5, 11),
    F(SOF_SWIR_MFT_TOP, 22, 0, 16),
};

static const struct sof_sa_field lft_f[] = {
    F(SOF_LFTR_LID, 0, 0, 16),
    F(SOF_LFTR_BLOCK, 2, 0, 16),
    F(SOF_LFTR_RESV, 4, 0, 32),
    F(SOF_LFTR_TABLE, 8, 0, 512),
};

static const struct sof_sa_field mft_f[] = {
    F(SOF_MFTR_LID, 0, 0, 16),	F(SOF_MFTR_POSITION, 2, 0, 4), F(SOF_MFTR_RESV, 2, 4, 3),
    F(SOF_MFTR_BLOCK, 2, 7, 9), F(SOF_MFTR_RESV2, 4, 0, 32),   F(SOF_MFTR_TABLE, 8, 0, 512),
};

static const struct sof_sa_field guidinfo_f[] = {
    F(SOF_GIR_LID, 0, 0, 16),	     F(SOF_GIR_BLOCK, 2, 0, 8),
    F(SOF_GIR_RESV, 3, 0, 8),	     F(SOF_GIR_RESV2, 4, 0, 32),
    F(SOF_GIR_GUID0, 8, 0, 64),	     F(SOF_GIR_GUID0 + 1, 16, 0, 64),
    F(SOF_GIR_GUID0 + 2, 24, 0, 64), F(SOF_GIR_GUID0 + 3, 32, 0, 64),
    F(SOF_GIR_GUID0 + 4, 40, 0, 64), F(SOF_GIR_GUID0 + 5, 48, 0, 64),
    F(SOF_GIR_GUID0 + 6, 56, 0, 64), F(SOF_GIR_GUID0 + 7, 64, 0, 64),
};

static const struct sof_sa_field pkey_f[] = {
    F(SOF_PKTR_LID, 0, 0, 16),	F(SOF_PKTR_BLOCK, 2, 0, 16),  F(SOF_PKTR_PORT, 4, 0, 8),
    F(SOF_PKTR_RESV, 5, 0, 24), F(SOF_PKTR_TABLE, 8, 0, 512),
};

static const struct sof_sa_field sminfo_f[] = {
    F(SOF_SMIR_LID, 0, 0, 16),	   F(SOF_SMIR_RESV, 2, 0, 16),	     F(SOF_SMIR_GUID, 4, 0, 64),
    F(SOF_SMIR_SM_KEY, 12, 0, 64), F(SOF_SMIR_ACT_COUNT, 20, 0, 32), F(SOF_SMIR_PRIORITY, 24, 0, 4),
    F(SOF_SMIR_STATE, 24, 4, 4),
};

#define D8(i) F(SOF_SR_DATA8_0 + (i), 112 + (i), 0, 8)
#define D16(i) F(SOF_SR_DATA16_0 + (i), 128 + 2 * (i), 0, 16)
#define D32(i) F(SOF_SR_DATA32_0 + (i), 144 + 4 * (i), 0, 32)
static const struct sof_sa_field service_f[] = {
    F(SOF_SR_ID, 0, 0, 64),
    F(SOF_SR_GID, 8, 0, 128),
    F(SOF_SR_PKEY, 24, 0, 16),
    F(SOF_SR_RESV, 26, 0, 16),
    F(SOF_SR_LEASE, 28, 0, 32),
    F(SOF_SR_KEY, 32, 0, 128),
    F(SOF_SR_NAME, 48, 0, 512),
    D8(0),
    D8(1),
    D8(2),
    D8(3),
    D8(4),
    D8(5),
    D8(6),
    D8(7),
    D8(8),
    D8(9),
    D8(10),
    D8(11),
    D8(12),
    D8(13),
    D8(14),
    D8(15),
    D16(0),
    D16(1),
    D16(2),
    D16(3),
    D16(4),
    D16(5),
    D16(6),
    D16(7),
    D32(0),
    D32(1),
    D32(2),
    D32(3),
    F(SOF_SR_DATA64_0, 160, 0, 64),
    F(SOF_SR_DATA64_0 + 1, 168, 0, 64),
};
#undef D8
#undef D16
#undef D32

static const struct sof_sa_field mcmember_f[] = {
    F(SOF_MCMR_MGID, 0, 0, 128),      F(SOF_MCMR_PORT_GID, 16, 0, 128),
    F(SOF_MCMR_QKEY, 32, 0, 32),      F(SOF_MCMR_MLID, 36, 0, 16),
    F(SOF_MCMR_MTU_SEL, 38, 0, 2),    F(SOF_MCMR_MTU, 38, 2, 6),
    F(SOF_MCMR_TCLASS, 39, 0, 8),     F(SOF_MCMR_PKEY, 40, 0, 16),
    F(SOF_MCMR_RATE_SEL, 42, 0, 2),   F(SOF_MCMR_RATE, 42, 2, 6),
    F(SOF_MCMR_LIFE_SEL, 43, 0, 2),   F(SOF_MCMR_LIFE, 43, 2, 6),
    F(SOF_MCMR_SL, 44, 0, 4),	      F(SOF_MCMR_FLOW_LABEL, 44, 4, 20),
    F(SOF_MCMR_HOP_LIMIT, 47, 0, 8),  F(SOF_MCMR_SCOPE, 48, 0, 4),
    F(SOF_MCMR_JOIN_STATE, 48, 4, 4), F(SOF_MCMR_PROXY_JOIN, 49, 0, 1),
    F(SOF_MCMR_RESV, 49, 1, 23),
};

static const struct sof_sa_field inform_f[] = {
    F(SOF_II_GID, 0, 0, 128),	   F(SOF_II_LID_BEGIN, 16, 0, 16), F(SOF_II_LID_END, 18, 0, 16),
    F(SOF_II_RESV, 20, 0, 16),	   F(SOF_II_IS_GENERIC, 22, 0, 8), F(SOF_II_SUBSCRIBE, 23, 0, 8),
    F(SOF_II_TYPE, 24, 0, 16),	   F(SOF_II_TRAP_NUM, 26, 0, 16),  F(SOF_II_QPN, 28, 0, 24),
    F(SOF_II_RESV2, 31, 0, 3),	   F(SOF_II_RESP_TIME, 31, 3, 5),  F(SOF_II_RESV3, 32, 0, 8),
    F(SOF_II_PRODUCER, 33, 0, 24),
};

static const struct sof_sa_field inform_rec_f[] = {
    F(SOF_IIR_GID, 0, 0, 128),
    F(SOF_IIR_ENUM, 16, 0, 16),
    F(SOF_IIR_RESV, 18, 0, 48),
    F(SOF_IIR_INFO, SOF_SA_IIR_INFO_OFF, 0, 288),
};

const struct sof_sa_rec_desc sof_sa_recs[SOF_SA_REC_MAX] = {
    [SOF_SA_REC_PATH] = REC("PathRecord", SOF_SA_ATTR_PATH_REC, 64, path_f),
    [SOF_SA_REC_MULTIPATH] = REC("MultiPathRecord", SOF_SA_ATTR_MULTIPATH_REC, 200, multipath_f),
    [SOF_SA_REC_NODE] = REC("NodeRecord", SOF_SA_ATTR_NODE_REC, 108, node_f),
    [SOF_SA_REC_PORTINFO] = REC("PortInfoRecord", SOF_SA_ATTR_PORTINFO_REC, 68, portinfo_f),
    [SOF_SA_REC_LINK] = REC("LinkRecord", SOF_SA_ATTR_LINK_REC, 8, link_f),
    [SOF_SA_REC_SWITCHINFO] = REC("SwitchInfoRecord", SOF_SA_ATTR_SWITCHINFO_REC, 24, switchinfo_f),
    [SOF_SA_REC_LFT] = REC("LinearForwardingTableRecord", SOF_SA_ATTR_LFT_REC, 72, lft_f),
    [SOF_SA_REC_MFT] = REC("MulticastForwardingTableRecord", SOF_SA_ATTR_MFT_REC, 72, mft_f),
    [SOF_SA_REC_GUIDINFO] = REC("GUIDInfoRecord", SOF_SA_ATTR_GUIDINFO_REC, 72, guidinfo_f),
    [SOF_SA_REC_PKEY_TABLE] = REC("P_KeyTableRecord", SOF_SA_ATTR_PKEY_TABLE_REC, 72, pkey_f),
    [SOF_SA_REC_SMINFO] = REC("SMInfoRecord", SOF_SA_ATTR_SMINFO_REC, 25, sminfo_f),
    [SOF_SA_REC_SERVICE] = REC("ServiceRecord", SOF_SA_ATTR_SERVICE_REC, 176, service_f),
    [SOF_SA_REC_MCMEMBER] = REC("MCMemberRecord", SOF_SA_ATTR_MCMEMBER_REC, 52, mcmember_f),
    [SOF_SA_REC_INFORM_INFO] = REC("InformInfo", SOF_SA_ATTR_INFORM_INFO, 36, inform_f),
    [SOF_SA_REC_INFORM_INFO_REC] =
	REC("InformInfoRecord", SOF_SA_ATTR_INFORM_INFO_REC, 60, inform_rec_f),
};

const char *sof_sa_status_name(uint16_t status)
{
	switch (status) {
	case SOF_SA_ST_OK:
		return "OK";
	case SOF_SA_ST_BAD_VERSION:
		return "bad class version";
	case SOF_SA_ST_BAD_METHOD:
		return "method not supported";
	case SOF_SA_ST_BAD_ATTR:
		return "method/attribute not supported";
	case SOF_SA_ST_BAD_VALUE:
		return "bad attribute value";
	case SOF_SA_ST_NO_RESOURCES:
		return "ERR_NO_RESOURCES";
	case SOF_SA_ST_REQ_INVALID:
		return "ERR_REQ_INVALID";
	case SOF_SA_ST_NO_RECORDS:
		return "ERR_NO_RECORDS";
	case SOF_SA_ST_TOO_MANY_RECORDS:
		return "ERR_REQ_TOO_MANY_RECORDS";
	case SOF_SA_ST_INVALID_GID:
		return "ERR_REQ_INVALID_GID";
	case SOF_SA_ST_INSUFFICIENT_COMPONENTS:
		return "ERR_REQ_INSUFFICIENT_COMPONENTS";
	case SOF_SA_ST_REQ_DENIED:
		return "ERR_REQ_DENIED";
	}
	return "unknown status";
}

const struct sof_sa_rec_desc *sof_sa_rec_by_attr(uint16_t attr_id)
{
	unsigned i;

	for (i = 0; i < SOF_SA_REC_MAX; i++)
		if (sof_sa_recs[i].attr_id == attr_id)
			return &sof_sa_recs[i];
	return NULL;
}

const struct sof_sa_field *sof_sa_field_of(const struct sof_sa_rec_desc *d, unsigned comp)
{
	/* the tables list each component once, in order */
	if (comp >= d->nfields || d->fields[comp].comp != comp)
		return NULL;
	return &d->fields[comp];
}

static uint64_t bits_get(const uint8_t *rec, unsigned bit, unsigned bits)
{
	uint64_t v = 0;
	unsigned i;

	if (!(bit & 7) && !(bits & 7)) {
		for (i = 0; i < bits / 8; i++)
			v = v << 8 | rec[bit / 8 + i];
		return v;
	}
	for (i = 0; i < bits; i++) {
		unsigned b = bit + i;

		v = v << 1 | ((rec[b >> 3] >> (7 - (b & 7))) & 1u);
	}
	return v;
}

static void bits_put(uint8_t *rec, unsigned bit, unsigned bits, uint64_t v)
{
	unsigned i;

	for (i = 0; i < bits; i++) {
		unsigned b = bit + bits - 1 - i;
		uint8_t m = (uint8_t)(1u << (7 - (b & 7)));

		if ((v >> i) & 1)
			rec[b >> 3] |= m;
		else
			rec[b >> 3] &= (uint8_t)~m;
	}
}

uint64_t sof_sa_get(const struct sof_sa_rec_desc *d, const uint8_t *rec, unsigned comp)
{
	const struct sof_sa_field *f = sof_sa_field_of(d, comp);

	if (!f || f->bits > 64)
		return 0;
	return bits_get(rec, f->bit, f->bits);
}

int sof_sa_set(const struct sof_sa_rec_desc *d, uint8_t *rec, unsigned comp, uint64_t v)
{
	const struct sof_sa_field *f = sof_sa_field_of(d, comp);

	if (!f || f->bits > 64)
		return -EINVAL;
	bits_put(rec, f->bit, f->bits, v);
	return 0;
}

static bool field_eq(const struct sof_sa_field *f, const uint8_t *a, const uint8_t *b)
{
	if (f->bits > 64) /* GIDs, names, tables: whole bytes */
		return !memcmp(a + f->bit / 8, b + f->bit / 8, f->bits / 8u);
	return bits_get(a, f->bit, f->bits) == bits_get(b, f->bit, f->bits);
}

bool sof_sa_match(const struct sof_sa_rec_desc *d, const uint8_t *query, const uint8_t *rec,
		  uint64_t mask)
{
	unsigned i;

	for (i = 0; i < d->nfields && mask; i++) {
		const struct sof_sa_field *f = &d->fields[i];

		if (!(mask >> f->comp & 1))
			continue;
		mask &= ~(1ull << f->comp);
		if (!field_eq(f, query, rec))
			return false;
	}
	return true;
}

bool sof_sa_mask_valid(const struct sof_sa_rec_desc *d, uint64_t mask)
{
	return d->ncomp >= 64 || !(mask >> d->ncomp);
}

/* ---- the request parser ---- */

/* Whether method may go with the attribute (IBA 15.2.5, table 190's
 * "methods" column, as this SA serves them) */
static bool method_takes(uint8_t method, uint16_t attr, const struct sof_sa_rec_desc *rec)
{
	switch (method) {
	case SOF_SA_GET:
		return attr == SOF_SA_ATTR_CLASS_PORT_INFO ||
		       (rec && attr != SOF_SA_ATTR_MULTIPATH_REC &&
			attr != SOF_SA_ATTR_INFORM_INFO);
	case SOF_SA_GET_TABLE:
		return rec && attr != SOF_SA_ATTR_MULTIPATH_REC && attr != SOF_SA_ATTR_INFORM_INFO;
	case SOF_SA_SET:
		return attr == SOF_SA_ATTR_SERVICE_REC || attr == SOF_SA_ATTR_MCMEMBER_REC ||
		       attr == SOF_SA_ATTR_INFORM_INFO;
	case SOF_SA_DELETE:
		return attr == SOF_SA_ATTR_SERVICE_REC || attr == SOF_SA_ATTR_MCMEMBER_REC;
	case SOF_SA_GET_MULTI:
		return attr == SOF_SA_ATTR_MULTIPATH_REC;
	case SOF_SA_REPORT_RESP:
		return attr == SOF_SA_ATTR_NOTICE;
	}
	return false;
}

int sof_sa_parse(const uint8_t *mad, size_t len, struct sof_sa_req *r)
{
	uint8_t rmpp_version;

	memset(r, 0, sizeof(*r));
	if (!mad || len < SOF_SA_MAD_LEN || mad[0] != 1 || mad[1] != SOF_MCLASS_SA)
		return -EINVAL;
	r->class_version = mad[2];
	r->method = mad[3];
	r->status = sof_get16(mad + 4);
	r->tid = sof_get64(mad + 8);
	r->attr_id = sof_get16(mad + 16);
	r->attr_mod = sof_get32(mad + 20);
	rmpp_version = mad[SOF_SA_OFF_RMPP];
	r->rmpp_type = mad[SOF_SA_OFF_RMPP_TYPE];
	r->rmpp_flags = mad[SOF_SA_OFF_RMPP_FLAGS] & 0x07;
	r->sm_key = sof_get64(mad + SOF_SA_OFF_SM_KEY);
	r->attr_offset = sof_get16(mad + SOF_SA_OFF_ATTR_OFFSET);
	r->comp_mask = sof_get64(mad + SOF_SA_OFF_COMP_MASK);
	r->data = mad + SOF_SA_OFF_DATA;
	r->data_len = len - SOF_SA_HDR_LEN;

	/* responses are not requests; only a subscriber's ReportResp is
	 * taken (it ends our Report's retries, IBA 13.4.8.2) */
	if ((r->method & SOF_SA_RESP) && r->method != SOF_SA_REPORT_RESP)
		return -EINVAL;
	/* RMPP control packets belong to the MAD layer, never to the SA */
	if (rmpp_version && (r->rmpp_flags & SOF_SA_RMPP_ACTIVE) &&
	    r->rmpp_type != SOF_SA_RMPP_TYPE_DATA)
		return -EINVAL;
	if (r->class_version != SOF_SA_CLASS_VERSION)
		return SOF_SA_ST_BAD_VERSION;
	/* IBA 13.6.2.1: a message longer than one MAD came as RMPP DATA;
	 * one that says it is RMPP must be version 1, DATA, and whole */
	if (len > SOF_SA_MAD_LEN &&
	    (rmpp_version != SOF_SA_RMPP_VERSION || !(r->rmpp_flags & SOF_SA_RMPP_ACTIVE)))
		return SOF_SA_ST_REQ_INVALID;
	if (r->rmpp_flags & SOF_SA_RMPP_ACTIVE) {
		if (rmpp_version != SOF_SA_RMPP_VERSION)
			return SOF_SA_ST_REQ_INVALID;
		if (len == SOF_SA_MAD_LEN &&
		    (r->rmpp_flags & (SOF_SA_RMPP_FIRST | SOF_SA_RMPP_LAST)) !=
			(SOF_SA_RMPP_FIRST | SOF_SA_RMPP_LAST))
			return SOF_SA_ST_REQ_INVALID;
	}
	switch (r->method) {
	case SOF_SA_GET:
	case SOF_SA_SET:
	case SOF_SA_GET_TABLE:
	case SOF_SA_GET_MULTI:
	case SOF_SA_DELETE:
	case SOF_SA_REPORT_RESP:
		break;
	default:
		return SOF_SA_ST_BAD_METHOD;
	}
	r->rec = sof_sa_rec_by_attr(r->attr_id);
	if (!r->rec && r->attr_id != SOF_SA_ATTR_CLASS_PORT_INFO &&
	    r->attr_id != SOF_SA_ATTR_NOTICE)
		return SOF_SA_ST_BAD_ATTR;
	if (!method_takes(r->method, r->attr_id, r->rec))
		return SOF_SA_ST_BAD_ATTR;
	if (r->rec && r->data_len < r->rec->len)
		return SOF_SA_ST_REQ_INVALID;
	if (r->rec && !sof_sa_mask_valid(r->rec, r->comp_mask))
		return SOF_SA_ST_REQ_INVALID;
	return 0;
}

void sof_sa_resp_init(uint8_t *mad, const struct sof_sa_req *r, uint16_t status,
		      uint16_t attr_offset, bool rmpp)
{
	memset(mad, 0, SOF_SA_HDR_LEN);
	mad[0] = 1;
	mad[1] = SOF_MCLASS_SA;
	mad[2] = SOF_SA_CLASS_VERSION;
	/* IBA 15.2.2 table 187: a Set is answered by a GetResp, the others
	 * by their own method with the response bit */
	mad[3] =
	    (uint8_t)(r->method == SOF_SA_SET ? SOF_SA_GET | SOF_SA_RESP : r->method | SOF_SA_RESP);
	sof_put16(mad + 4, status);
	sof_put64(mad + 8, r->tid);
	sof_put16(mad + 16, r->attr_id);
	sof_put32(mad + 20, r->attr_mod);
	if (rmpp) {
		mad[SOF_SA_OFF_RMPP] = SOF_SA_RMPP_VERSION;
		mad[SOF_SA_OFF_RMPP_TYPE] = SOF_SA_RMPP_TYPE_DATA;
		mad[SOF_SA_OFF_RMPP_FLAGS] =
		    SOF_SA_RMPP_ACTIVE | SOF_SA_RMPP_FIRST | SOF_SA_RMPP_LAST;
	}
	sof_put16(mad + SOF_SA_OFF_ATTR_OFFSET, attr_offset);
	sof_put64(mad + SOF_SA_OFF_COMP_MASK, r->comp_mask);
}

void sof_sa_req_init(uint8_t *mad, uint8_t method, uint16_t attr_id, uint32_t attr_mod,
		     uint64_t tid, uint64_t comp_mask)
{
	memset(mad, 0, SOF_SA_MAD_LEN);
	mad[0] = 1;
	mad[1] = SOF_MCLASS_SA;
	mad[2] = SOF_SA_CLASS_VERSION;
	mad[3] = method;
	sof_put64(mad + 8, tid);
	sof_put16(mad + 16, attr_id);
	sof_put32(mad + 20, attr_mod);
	sof_put64(mad + SOF_SA_OFF_COMP_MASK, comp_mask);
}

/* ---- records with structs ---- */

#define PR (&sof_sa_recs[SOF_SA_REC_PATH])
void sof_sa_path_pack(uint8_t *rec, const struct sof_sa_path *p)
{
	memset(rec, 0, 64);
	sof_put64(rec, p->service_id);
	memcpy(rec + 8, p->dgid, 16);
	memcpy(rec + 24, p->sgid, 16);
	sof_put16(rec + 40, p->dlid);
	sof_put16(rec + 42, p->slid);
	sof_sa_set(PR, rec, SOF_PR_RAW, p->raw);
	sof_sa_set(PR, rec, SOF_PR_FLOW_LABEL, p->flow_label);
	sof_sa_set(PR, rec, SOF_PR_HOP_LIMIT, p->hop_limit);
	sof_sa_set(PR, rec, SOF_PR_TCLASS, p->tclass);
	sof_sa_set(PR, rec, SOF_PR_REVERSIBLE, p->reversible);
	sof_sa_set(PR, rec, SOF_PR_NUMB_PATH, p->numb_path);
	sof_sa_set(PR, rec, SOF_PR_PKEY, p->pkey);
	sof_sa_set(PR, rec, SOF_PR_QOS_CLASS, p->qos_class);
	sof_sa_set(PR, rec, SOF_PR_SL, p->sl);
	sof_sa_set(PR, rec, SOF_PR_MTU_SEL, p->mtu_sel);
	sof_sa_set(PR, rec, SOF_PR_MTU, p->mtu);
	sof_sa_set(PR, rec, SOF_PR_RATE_SEL, p->rate_sel);
	sof_sa_set(PR, rec, SOF_PR_RATE, p->rate);
	sof_sa_set(PR, rec, SOF_PR_LIFE_SEL, p->life_sel);
	sof_sa_set(PR, rec, SOF_PR_LIFE, p->life);
	sof_sa_set(PR, rec, SOF_PR_PREFERENCE, p->preference);
}

void sof_sa_path_unpack(const uint8_t *rec, struct sof_sa_path *p)
{
	memset(p, 0, sizeof(*p));
	p->service_id = sof_get64(rec);
	memcpy(p->dgid, rec + 8, 16);
	memcpy(p->sgid, rec + 24, 16);
	p->dlid = sof_get16(rec + 40);
	p->slid = sof_get16(rec + 42);
	p->raw = sof_sa_get(PR, rec, SOF_PR_RAW);
	p->flow_label = (uint32_t)sof_sa_get(PR, rec, SOF_PR_FLOW_LABEL);
	p->hop_limit = rec[47];
	p->tclass = rec[48];
	p->reversible = sof_sa_get(PR, rec, SOF_PR_REVERSIBLE);
	p->numb_path = (uint8_t)sof_sa_get(PR, rec, SOF_PR_NUMB_PATH);
	p->pkey = sof_get16(rec + 50);
	p->qos_class = (uint16_t)sof_sa_get(PR, rec, SOF_PR_QOS_CLASS);
	p->sl = rec[53] & 0x0f;
	p->mtu_sel = rec[54] >> 6;
	p->mtu = rec[54] & 0x3f;
	p->rate_sel = rec[55] >> 6;
	p->rate = rec[55] & 0x3f;
	p->life_sel = rec[56] >> 6;
	p->life = rec[56] & 0x3f;
	p->preference = rec[57];
}
#undef PR

#define MPR (&sof_sa_recs[SOF_SA_REC_MULTIPATH])
void sof_sa_multipath_pack(uint8_t *rec, const struct sof_sa_multipath *m)
{
	unsigned n = (unsigned)m->sgid_count + m->dgid_count;

	memset(rec, 0, 200);
	sof_sa_set(MPR, rec, SOF_MPR_RAW, m->raw);
	sof_sa_set(MPR, rec, SOF_MPR_FLOW_LABEL, m->flow_label);
	sof_sa_set(MPR, rec, SOF_MPR_HOP_LIMIT, m->hop_limit);
	sof_sa_set(MPR, rec, SOF_MPR_TCLASS, m->tclass);
	sof_sa_set(MPR, rec, SOF_MPR_REVERSIBLE, m->reversible);
	sof_sa_set(MPR, rec, SOF_MPR_NUMB_PATH, m->numb_path);
	sof_sa_set(MPR, rec, SOF_MPR_PKEY, m->pkey);
	sof_sa_set(MPR, rec, SOF_MPR_QOS_CLASS, m->qos_class);
	sof_sa_set(MPR, rec, SOF_MPR_SL, m->sl);
	sof_sa_set(MPR, rec, SOF_MPR_MTU_SEL, m->mtu_sel);
	sof_sa_set(MPR, rec, SOF_MPR_MTU, m->mtu);
	sof_sa_set(MPR, rec, SOF_MPR_RATE_SEL, m->rate_sel);
	sof_sa_set(MPR, rec, SOF_MPR_RATE, m->rate);
	sof_sa_set(MPR, rec, SOF_MPR_LIFE_SEL, m->life_sel);
	sof_sa_set(MPR, rec, SOF_MPR_LIFE, m->life);
	sof_sa_set(MPR, rec, SOF_MPR_SERVICE_ID_MSB, m->service_id >> 56);
	sof_sa_set(MPR, rec, SOF_MPR_INDEP_SEL, m->indep_sel);
	sof_sa_set(MPR, rec, SOF_MPR_SGID_COUNT, m->sgid_count);
	sof_sa_set(MPR, rec, SOF_MPR_DGID_COUNT, m->dgid_count);
	sof_sa_set(MPR, rec, SOF_MPR_SERVICE_ID_LSB, m->service_id & 0x00ffffffffffffffull);
	if (n > SOF_SA_MPR_MAX_GIDS)
		n = SOF_SA_MPR_MAX_GIDS;
	memcpy(rec + SOF_SA_MPR_GIDS_OFF, m->gids, n * 16u);
}

int sof_sa_multipath_unpack(const uint8_t *rec, struct sof_sa_multipath *m)
{
	unsigned n;

	memset(m, 0, sizeof(*m));
	m->raw = sof_sa_get(MPR, rec, SOF_MPR_RAW);
	m->flow_label = (uint32_t)sof_sa_get(MPR, rec, SOF_MPR_FLOW_LABEL);
	m->hop_limit = rec[3];
	m->tclass = rec[4];
	m->reversible = sof_sa_get(MPR, rec, SOF_MPR_REVERSIBLE);
	m->numb_path = (uint8_t)sof_sa_get(MPR, rec, SOF_MPR_NUMB_PATH);
	m->pkey = sof_get16(rec + 6);
	m->qos_class = (uint16_t)sof_sa_get(MPR, rec, SOF_MPR_QOS_CLASS);
	m->sl = rec[9] & 0x0f;
	m->mtu_sel = rec[10] >> 6;
	m->mtu = rec[10] & 0x3f;
	m->rate_sel = rec[11] >> 6;
	m->rate = rec[11] & 0x3f;
	m->life_sel = rec[12] >> 6;
	m->life = rec[12] & 0x3f;
	m->service_id = (uint64_t)rec[13] << 56 | sof_sa_get(MPR, rec, SOF_MPR_SERVICE_ID_LSB);
	m->indep_sel = rec[14] >> 6;
	m->sgid_count = rec[15];
	m->dgid_count = rec[16];
	n = (unsigned)m->sgid_count + m->dgid_count;
	if (n > SOF_SA_MPR_MAX_GIDS)
		return -EINVAL;
	memcpy(m->gids, rec + SOF_SA_MPR_GIDS_OFF, n * 16u);
	return 0;
}
#undef MPR

#define MCR (&sof_sa_recs[SOF_SA_REC_MCMEMBER])
void sof_sa_mcmember_pack(uint8_t *rec, const struct sof_sa_mcmember *m)
{
	memset(rec, 0, 52);
	memcpy(rec, m->mgid, 16);
	memcpy(rec + 16, m->port_gid, 16);
	sof_put32(rec + 32, m->qkey);
	sof_put16(rec + 36, m->mlid);
	rec[38] = (uint8_t)(m->mtu_sel << 6 | (m->mtu & 0x3f));
	rec[39] = m->tclass;
	sof_put16(rec + 40, m->pkey);
	rec[42] = (uint8_t)(m->rate_sel << 6 | (m->rate & 0x3f));
	rec[43] = (uint8_t)(m->life_sel << 6 | (m->life & 0x3f));
	sof_sa_set(MCR, rec, SOF_MCMR_SL, m->sl);
	sof_sa_set(MCR, rec, SOF_MCMR_FLOW_LABEL, m->flow_label);
	rec[47] = m->hop_limit;
	rec[48] = (uint8_t)(m->scope << 4 | (m->join_state & 0x0f));
	rec[49] = (uint8_t)(m->proxy_join ? 0x80 : 0);
}

void sof_sa_mcmember_unpack(const uint8_t *rec, struct sof_sa_mcmember *m)
{
	memset(m, 0, sizeof(*m));
	memcpy(m->mgid, rec, 16);
	memcpy(m->port_gid, rec + 16, 16);
	m->qkey = sof_get32(rec + 32);
	m->mlid = sof_get16(rec + 36);
	m->mtu_sel = rec[38] >> 6;
	m->mtu = rec[38] & 0x3f;
	m->tclass = rec[39];
	m->pkey = sof_get16(rec + 40);
	m->rate_sel = rec[42] >> 6;
	m->rate = rec[42] & 0x3f;
	m->life_sel = rec[43] >> 6;
	m->life = rec[43] & 0x3f;
	m->sl = rec[44] >> 4;
	m->flow_label = (uint32_t)sof_sa_get(MCR, rec, SOF_MCMR_FLOW_LABEL);
	m->hop_limit = rec[47];
	m->scope = rec[48] >> 4;
	m->join_state = rec[48] & 0x0f;
	m->proxy_join = rec[49] >> 7;
}
#undef MCR

void sof_sa_service_pack(uint8_t *rec, const struct sof_sa_service *s)
{
	unsigned i;

	memset(rec, 0, 176);
	sof_put64(rec, s->id);
	memcpy(rec + 8, s->gid, 16);
	sof_put16(rec + 24, s->pkey);
	sof_put32(rec + 28, s->lease);
	memcpy(rec + 32, s->key, 16);
	memcpy(rec + 48, s->name, 64);
	memcpy(rec + 112, s->data8, 16);
	for (i = 0; i < 8; i++)
		sof_put16(rec + 128 + 2 * i, s->data16[i]);
	for (i = 0; i < 4; i++)
		sof_put32(rec + 144 + 4 * i, s->data32[i]);
	for (i = 0; i < 2; i++)
		sof_put64(rec + 160 + 8 * i, s->data64[i]);
}

void sof_sa_service_unpack(const uint8_t *rec, struct sof_sa_service *s)
{
	unsigned i;

	memset(s, 0, sizeof(*s));
	s->id = sof_get64(rec);
	memcpy(s->gid, rec + 8, 16);
	s->pkey = sof_get16(rec + 24);
	s->lease = sof_get32(rec + 28);
	memcpy(s->key, rec + 32, 16);
	memcpy(s->name, rec + 48, 64);
	memcpy(s->data8, rec + 112, 16);
	for (i = 0; i < 8; i++)
		s->data16[i] = sof_get16(rec + 128 + 2 * i);
	for (i = 0; i < 4; i++)
		s->data32[i] = sof_get32(rec + 144 + 4 * i);
	for (i = 0; i < 2; i++)
		s->data64[i] = sof_get64(rec + 160 + 8 * i);
}

void sof_sa_inform_pack(uint8_t *rec, const struct sof_sa_inform *ii)
{
	memset(rec, 0, 36);
	memcpy(rec, ii->gid, 16);
	sof_put16(rec + 16, ii->lid_begin);
	sof_put16(rec + 18, ii->lid_end);
	rec[22] = ii->is_generic;
	rec[23] = ii->subscribe;
	sof_put16(rec + 24, ii->type);
	sof_put16(rec + 26, ii->trap_num);
	sof_put32(rec + 28, (ii->qpn & 0xffffffu) << 8 | (ii->resp_time & 0x1fu));
	sof_put32(rec + 32, ii->producer & 0xffffffu);
}

void sof_sa_inform_unpack(const uint8_t *rec, struct sof_sa_inform *ii)
{
	memset(ii, 0, sizeof(*ii));
	memcpy(ii->gid, rec, 16);
	ii->lid_begin = sof_get16(rec + 16);
	ii->lid_end = sof_get16(rec + 18);
	ii->is_generic = rec[22] != 0;
	ii->subscribe = rec[23] != 0;
	ii->type = sof_get16(rec + 24);
	ii->trap_num = sof_get16(rec + 26);
	ii->qpn = sof_get32(rec + 28) >> 8;
	ii->resp_time = rec[31] & 0x1f;
	ii->producer = sof_get32(rec + 32) & 0xffffffu;
}

void sof_sa_notice_pack(uint8_t *rec, const struct sof_sa_notice *n)
{
	memset(rec, 0, SOF_SA_NOTICE_LEN);
	sof_put32(rec, (uint32_t)n->is_generic << 31 | (uint32_t)(n->type & 0x7f) << 24 |
			   (n->producer & 0xffffffu));
	sof_put16(rec + 4, n->trap_num);
	sof_put16(rec + 6, n->issuer_lid);
	sof_put16(rec + 8, (uint16_t)((unsigned)n->toggle << 15 | (n->count & 0x7fffu)));
	memcpy(rec + 10, n->details, SOF_SA_NOTICE_DETAILS_LEN);
	memcpy(rec + 64, n->issuer_gid, 16);
}

void sof_sa_notice_unpack(const uint8_t *rec, struct sof_sa_notice *n)
{
	uint32_t w = sof_get32(rec);

	memset(n, 0, sizeof(*n));
	n->is_generic = w >> 31;
	n->type = (uint8_t)(w >> 24 & 0x7f);
	n->producer = w & 0xffffffu;
	n->trap_num = sof_get16(rec + 4);
	n->issuer_lid = sof_get16(rec + 6);
	n->toggle = rec[8] >> 7;
	n->count = sof_get16(rec + 8) & 0x7fff;
	memcpy(n->details, rec + 10, SOF_SA_NOTICE_DETAILS_LEN);
	memcpy(n->issuer_gid, rec + 64, 16);
}

void sof_sa_cpi_pack(uint8_t *rec, uint16_t cap_mask, uint32_t cap_mask2, uint8_t resp_time)
{
	memset(rec, 0, SOF_SA_CPI_LEN);
	rec[0] = 1;
	rec[1] = SOF_SA_CLASS_VERSION;
	sof_put16(rec + 2, cap_mask);
	sof_put32(rec + 4, (cap_mask2 & 0x7ffffffu) << 5 | (resp_time & 0x1fu));
}

uint32_t sof_sa_cpi_cap_mask2(const uint8_t *rec) { return sof_get32(rec + 4) >> 5; }
