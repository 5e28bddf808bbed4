/*
 * Subnet administration MADs (IBA 15.2) without I/O: the SA header
 * (15.2.1.1: the RMPP header, SM_Key, AttributeOffset, ComponentMask),
 * the methods, attributes and status codes, the parser that takes a
 * request from the wire apart (sof_sa_parse), and the records of 15.2.5
 * described field by field (component number, bit offset, width) so that
 * one function packs a field, one reads it and one decides whether a
 * record matches a query under a ComponentMask (a record matches when
 * every field the mask selects equals the query's).
 *
 * The records a server parses from requests (PathRecord, MultiPathRecord,
 * MCMemberRecord, ServiceRecord, InformInfo) and those it sends on its own
 * (Notice, ClassPortInfo) also have structs with pack/unpack; the others
 * are built with sof_sa_set by component (SOF_NR_*, SOF_PIR_*, ...), their
 * embedded SMP attributes (NodeInfo, PortInfo, SwitchInfo, a table block)
 * copied whole where they sit in the record (SOF_SA_*_OFF).
 *
 * Pure (mad/sa_rec.c, CMake's sof_sa library): the SM's SA (sm/sa.c), the
 * fuzz target and the unit tests use the same code. Names: sof_sa_.
 */
#ifndef SOF_SA_H
#define SOF_SA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SOF_MCLASS_SA 0x03
#define SOF_SA_CLASS_VERSION 2

/* Byte offsets in an SA MAD (IBA 15.2.1.1, figure 194) */
#define SOF_SA_OFF_RMPP 24
#define SOF_SA_OFF_RMPP_TYPE 25
#define SOF_SA_OFF_RMPP_FLAGS 26
#define SOF_SA_OFF_RMPP_STATUS 27
#define SOF_SA_OFF_RMPP_SEG 28
#define SOF_SA_OFF_RMPP_PAYLEN 32
#define SOF_SA_OFF_SM_KEY 36
#define SOF_SA_OFF_ATTR_OFFSET 44 /* in 8-byte words */
#define SOF_SA_OFF_COMP_MASK 48
#define SOF_SA_OFF_DATA 56
#define SOF_SA_HDR_LEN 56
#define SOF_SA_MAD_LEN 256
#define SOF_SA_DATA_LEN 200

/* RMPP (IBA 13.6.2.1): version 1, DATA segments, the flags */
#define SOF_SA_RMPP_VERSION 1
#define SOF_SA_RMPP_TYPE_DATA 1
#define SOF_SA_RMPP_TYPE_ACK 2
#define SOF_SA_RMPP_TYPE_STOP 3
#define SOF_SA_RMPP_TYPE_ABORT 4
#define SOF_SA_RMPP_ACTIVE 0x01
#define SOF_SA_RMPP_FIRST 0x02
#define SOF_SA_RMPP_LAST 0x04

/* SA methods (IBA 15.2.2, table 187) */
#define SOF_SA_GET 0x01
#define SOF_SA_SET 0x02
#define SOF_SA_REPORT 0x06
#define SOF_SA_GET_TABLE 0x12
#define SOF_SA_GET_TRACE_TABLE 0x13
#define SOF_SA_GET_MULTI 0x14
#define SOF_SA_DELETE 0x15
#define SOF_SA_RESP 0x80 /* the response bit: GetResp 0x81 ... DeleteResp 0x95 */
#define SOF_SA_REPORT_RESP 0x86

/* MAD status: the common bits (13.4.7) and SA's class-specific codes in
 * bits 8-14 (IBA 15.2.1.2, table 184) */
#define SOF_SA_ST_OK 0x0000
#define SOF_SA_ST_BAD_VERSION 0x0004
#define SOF_SA_ST_BAD_METHOD 0x0008
#define SOF_SA_ST_BAD_ATTR 0x000c
#define SOF_SA_ST_BAD_VALUE 0x001c
#define SOF_SA_ST_NO_RESOURCES 0x0100
#define SOF_SA_ST_REQ_INVALID 0x0200
#define SOF_SA_ST_NO_RECORDS 0x0300
#define SOF_SA_ST_TOO_MANY_RECORDS 0x0400
#define SOF_SA_ST_INVALID_GID 0x0500
#define SOF_SA_ST_INSUFFICIENT_COMPONENTS 0x0600
#define SOF_SA_ST_REQ_DENIED 0x0700
const char *sof_sa_status_name(uint16_t status);

/* SA attributes (IBA 15.2.5, table 190) */
#define SOF_SA_ATTR_CLASS_PORT_INFO 0x0001
#define SOF_SA_ATTR_NOTICE 0x0002
#define SOF_SA_ATTR_INFORM_INFO 0x0003
#define SOF_SA_ATTR_NODE_REC 0x0011
#define SOF_SA_ATTR_PORTINFO_REC 0x0012
#define SOF_SA_ATTR_SWITCHINFO_REC 0x0014
#define SOF_SA_ATTR_LFT_REC 0x0015
#define SOF_SA_ATTR_MFT_REC 0x0017
#define SOF_SA_ATTR_SMINFO_REC 0x0018
#define SOF_SA_ATTR_LINK_REC 0x0020
#define SOF_SA_ATTR_GUIDINFO_REC 0x0030
#define SOF_SA_ATTR_SERVICE_REC 0x0031
#define SOF_SA_ATTR_PKEY_TABLE_REC 0x0033
#define SOF_SA_ATTR_PATH_REC 0x0035
#define SOF_SA_ATTR_MCMEMBER_REC 0x0038
#define SOF_SA_ATTR_MULTIPATH_REC 0x003a
#define SOF_SA_ATTR_INFORM_INFO_REC 0x00f3

/* The records this SA knows, in a table indexed by this enum */
enum sof_sa_rec_type {
	SOF_SA_REC_PATH,
	SOF_SA_REC_MULTIPATH,
	SOF_SA_REC_NODE,
	SOF_SA_REC_PORTINFO,
	SOF_SA_REC_LINK,
	SOF_SA_REC_SWITCHINFO,
	SOF_SA_REC_LFT,
	SOF_SA_REC_MFT,
	SOF_SA_REC_GUIDINFO,
	SOF_SA_REC_PKEY_TABLE,
	SOF_SA_REC_SMINFO,
	SOF_SA_REC_SERVICE,
	SOF_SA_REC_MCMEMBER,
	SOF_SA_REC_INFORM_INFO,
	SOF_SA_REC_INFORM_INFO_REC,
	SOF_SA_REC_MAX
};

/* One field of a record: its component number (the ComponentMask bit),
 * where it starts (bits from the record's first byte, most significant
 * bit first as IBA draws them) and its width. Reserved fields have
 * components too: IBA numbers them, and a mask may select them. */
struct sof_sa_field {
	uint8_t comp;
	uint16_t bit;
	uint16_t bits;
};

struct sof_sa_rec_desc {
	const char *name;
	uint16_t attr_id;
	uint16_t len;  /* bytes on the wire, before padding to 8 */
	uint8_t ncomp; /* components 0..ncomp-1 */
	uint8_t nfields;
	const struct sof_sa_field *fields; /* by component, one each */
};
extern const struct sof_sa_rec_desc sof_sa_recs[SOF_SA_REC_MAX];

/* The record type of an attribute ID; NULL when none. */
const struct sof_sa_rec_desc *sof_sa_rec_by_attr(uint16_t attr_id);
/* AttributeOffset of a record (IBA 15.2.1.1: its length in 8-byte words) */
static inline uint16_t sof_sa_attr_offset(const struct sof_sa_rec_desc *d)
{
	return (uint16_t)((d->len + 7u) / 8u);
}
/* The field of component comp; NULL when the record has none. */
const struct sof_sa_field *sof_sa_field_of(const struct sof_sa_rec_desc *d, unsigned comp);
/* Read / write a field of up to 64 bits (wider ones: 0 / unchanged;
 * -EINVAL from set). rec holds at least d->len bytes. */
uint64_t sof_sa_get(const struct sof_sa_rec_desc *d, const uint8_t *rec, unsigned comp);
int sof_sa_set(const struct sof_sa_rec_desc *d, uint8_t *rec, unsigned comp, uint64_t v);
/* Whether rec matches query under mask: each selected field equal, bit
 * for bit. Mask bits beyond the record's components select nothing (see
 * sof_sa_mask_valid). */
bool sof_sa_match(const struct sof_sa_rec_desc *d, const uint8_t *query, const uint8_t *rec,
		  uint64_t mask);
/* Whether a mask names only components the record has. */
bool sof_sa_mask_valid(const struct sof_sa_rec_desc *d, uint64_t mask);

/* ---- A request taken apart (the SA's query parser) ---- */
struct sof_sa_req {
	uint8_t method, class_version;
	uint16_t status, attr_id;
	uint32_t attr_mod;
	uint64_t tid, sm_key, comp_mask;
	uint16_t attr_offset;
	uint8_t rmpp_type, rmpp_flags;
	const struct sof_sa_rec_desc *rec; /* NULL for ClassPortInfo/Notice */
	const uint8_t *data;		   /* the record (or records) in the MAD */
	size_t data_len;		   /* bytes after the SA header */
};

/* Parse an SA MAD of len bytes (256, or a reassembled RMPP message). On
 * success fills *r (data points into mad) and returns 0. Returns the SA
 * status to answer with (> 0: BAD_VERSION, BAD_METHOD, BAD_ATTR,
 * REQ_INVALID for malformed RMPP, an attribute/method pair that does not
 * go together, or a mask naming components the record lacks), with *r
 * filled as far as it could be (the TID to answer); or -EINVAL for what
 * must be dropped unanswered (short, not base version 1, not the SA
 * class, a response, an RMPP ACK/STOP/ABORT). */
int sof_sa_parse(const uint8_t *mad, size_t len, struct sof_sa_req *r);

/* Fill the SA header of a response to r in mad (256 bytes at least):
 * method | R, status, the request's TID/attribute/modifier, the
 * ComponentMask echoed, AttributeOffset for a table. rmpp: set the RMPP
 * header (version 1, DATA, Active|First|Last) as the response will be
 * sent through an RMPP agent. */
void sof_sa_resp_init(uint8_t *mad, const struct sof_sa_req *r, uint16_t status,
		      uint16_t attr_offset, bool rmpp);
/* Build a request header: method, attribute, TID, mask (RMPP header zero). */
void sof_sa_req_init(uint8_t *mad, uint8_t method, uint16_t attr_id, uint32_t attr_mod,
		     uint64_t tid, uint64_t comp_mask);

/* ---- Records with structs ---- */

/* PathRecord (IBA 15.2.5.16), 64 bytes */
enum sof_pr_comp {
	SOF_PR_SERVICE_ID_MSB,
	SOF_PR_SERVICE_ID_LSB,
	SOF_PR_DGID,
	SOF_PR_SGID,
	SOF_PR_DLID,
	SOF_PR_SLID,
	SOF_PR_RAW,
	SOF_PR_RESV0,
	SOF_PR_FLOW_LABEL,
	SOF_PR_HOP_LIMIT,
	SOF_PR_TCLASS,
	SOF_PR_REVERSIBLE,
	SOF_PR_NUMB_PATH,
	SOF_PR_PKEY,
	SOF_PR_QOS_CLASS,
	SOF_PR_SL,
	SOF_PR_MTU_SEL,
	SOF_PR_MTU,
	SOF_PR_RATE_SEL,
	SOF_PR_RATE,
	SOF_PR_LIFE_SEL,
	SOF_PR_LIFE,
	SOF_PR_PREFERENCE,
	SOF_PR_RESV2,
};
struct sof_sa_path {
	uint64_t service_id;
	uint8_t dgid[16], sgid[16];
	uint16_t dlid, slid;
	bool raw, reversible;
	uint32_t flow_label;
	uint8_t hop_limit, tclass, numb_path;
	uint16_t pkey, qos_class;
	uint8_t sl, mtu_sel, mtu, rate_sel, rate, life_sel, life, preference;
};
void sof_sa_path_pack(uint8_t *rec, const struct sof_sa_path *p);
void sof_sa_path_unpack(const uint8_t *rec, struct sof_sa_path *p);

/* MultiPathRecord (IBA 15.2.5.20): a fixed part and up to 11 GIDs */
enum sof_mpr_comp {
	SOF_MPR_RAW,
	SOF_MPR_RESV0,
	SOF_MPR_FLOW_LABEL,
	SOF_MPR_HOP_LIMIT,
	SOF_MPR_TCLASS,
	SOF_MPR_REVERSIBLE,
	SOF_MPR_NUMB_PATH,
	SOF_MPR_PKEY,
	SOF_MPR_QOS_CLASS,
	SOF_MPR_SL,
	SOF_MPR_MTU_SEL,
	SOF_MPR_MTU,
	SOF_MPR_RATE_SEL,
	SOF_MPR_RATE,
	SOF_MPR_LIFE_SEL,
	SOF_MPR_LIFE,
	SOF_MPR_SERVICE_ID_MSB,
	SOF_MPR_INDEP_SEL,
	SOF_MPR_RESV2,
	SOF_MPR_SGID_COUNT,
	SOF_MPR_DGID_COUNT,
	SOF_MPR_SERVICE_ID_LSB,
};
#define SOF_SA_MPR_GIDS_OFF 24
#define SOF_SA_MPR_MAX_GIDS 11
struct sof_sa_multipath {
	bool raw, reversible;
	uint32_t flow_label;
	uint8_t hop_limit, tclass, numb_path;
	uint16_t pkey, qos_class;
	uint8_t sl, mtu_sel, mtu, rate_sel, rate, life_sel, life, indep_sel;
	uint64_t service_id;
	uint8_t sgid_count, dgid_count;
	uint8_t gids[SOF_SA_MPR_MAX_GIDS][16]; /* SGIDs, then DGIDs */
};
void sof_sa_multipath_pack(uint8_t *rec, const struct sof_sa_multipath *m);
/* -EINVAL when the GID counts do not fit the record (their sum over 11) */
int sof_sa_multipath_unpack(const uint8_t *rec, struct sof_sa_multipath *m);

/* MCMemberRecord (IBA 15.2.5.17), 52 bytes */
enum sof_mcmr_comp {
	SOF_MCMR_MGID,
	SOF_MCMR_PORT_GID,
	SOF_MCMR_QKEY,
	SOF_MCMR_MLID,
	SOF_MCMR_MTU_SEL,
	SOF_MCMR_MTU,
	SOF_MCMR_TCLASS,
	SOF_MCMR_PKEY,
	SOF_MCMR_RATE_SEL,
	SOF_MCMR_RATE,
	SOF_MCMR_LIFE_SEL,
	SOF_MCMR_LIFE,
	SOF_MCMR_SL,
	SOF_MCMR_FLOW_LABEL,
	SOF_MCMR_HOP_LIMIT,
	SOF_MCMR_SCOPE,
	SOF_MCMR_JOIN_STATE,
	SOF_MCMR_PROXY_JOIN,
	SOF_MCMR_RESV,
};
/* JoinState bits (IBA 15.2.5.17.1) */
#define SOF_MC_JOIN_FULL 0x1
#define SOF_MC_JOIN_NON 0x2
#define SOF_MC_JOIN_SEND_ONLY 0x4
#define SOF_MC_JOIN_SEND_ONLY_FULL 0x8
struct sof_sa_mcmember {
	uint8_t mgid[16], port_gid[16];
	uint32_t qkey, flow_label;
	uint16_t mlid, pkey;
	uint8_t mtu_sel, mtu, tclass, rate_sel, rate, life_sel, life, sl, hop_limit;
	uint8_t scope, join_state;
	bool proxy_join;
};
void sof_sa_mcmember_pack(uint8_t *rec, const struct sof_sa_mcmember *m);
void sof_sa_mcmember_unpack(const uint8_t *rec, struct sof_sa_mcmember *m);

/* ServiceRecord (IBA 15.2.5.14), 176 bytes */
enum sof_sr_comp {
	SOF_SR_ID,
	SOF_SR_GID,
	SOF_SR_PKEY,
	SOF_SR_RESV,
	SOF_SR_LEASE,
	SOF_SR_KEY,
	SOF_SR_NAME,
	SOF_SR_DATA8_0,			       /* ..15 */
	SOF_SR_DATA16_0 = SOF_SR_DATA8_0 + 16, /* ..7 */
	SOF_SR_DATA32_0 = SOF_SR_DATA16_0 + 8, /* ..3 */
	SOF_SR_DATA64_0 = SOF_SR_DATA32_0 + 4, /* ..1 */
};
#define SOF_SA_SR_LEASE_INFINITE 0xffffffffu
struct sof_sa_service {
	uint64_t id;
	uint8_t gid[16];
	uint16_t pkey;
	uint32_t lease; /* seconds; 0xffffffff: forever */
	uint8_t key[16];
	char name[64]; /* as on the wire, NUL-padded, not always terminated */
	uint8_t data8[16];
	uint16_t data16[8];
	uint32_t data32[4];
	uint64_t data64[2];
};
void sof_sa_service_pack(uint8_t *rec, const struct sof_sa_service *s);
void sof_sa_service_unpack(const uint8_t *rec, struct sof_sa_service *s);

/* InformInfo (IBA 13.4.8.3), 36 bytes, and InformInfoRecord (15.2.5.16):
 * SubscriberGID, Enum, then the InformInfo at SOF_SA_IIR_INFO_OFF */
enum sof_ii_comp {
	SOF_II_GID,
	SOF_II_LID_BEGIN,
	SOF_II_LID_END,
	SOF_II_RESV,
	SOF_II_IS_GENERIC,
	SOF_II_SUBSCRIBE,
	SOF_II_TYPE,
	SOF_II_TRAP_NUM,
	SOF_II_QPN,
	SOF_II_RESV2,
	SOF_II_RESP_TIME,
	SOF_II_RESV3,
	SOF_II_PRODUCER,
};
enum sof_iir_comp { SOF_IIR_GID, SOF_IIR_ENUM, SOF_IIR_RESV, SOF_IIR_INFO };
#define SOF_SA_IIR_INFO_OFF 24
#define SOF_II_TYPE_ALL 0xffff
#define SOF_II_TRAP_ALL 0xffff
#define SOF_II_LID_ALL 0xffff
struct sof_sa_inform {
	uint8_t gid[16];
	uint16_t lid_begin, lid_end;
	bool is_generic, subscribe;
	uint16_t type, trap_num; /* trap_num: DeviceID when not generic */
	uint32_t qpn;		 /* 24 bits */
	uint8_t resp_time;
	uint32_t producer; /* ProducerType / VendorID, 24 bits */
};
void sof_sa_inform_pack(uint8_t *rec, const struct sof_sa_inform *ii);
void sof_sa_inform_unpack(const uint8_t *rec, struct sof_sa_inform *ii);

/* Notice (IBA 13.4.8.2), 80 bytes */
#define SOF_SA_NOTICE_LEN 80
#define SOF_SA_NOTICE_DETAILS_LEN 54
struct sof_sa_notice {
	bool is_generic, toggle;
	uint8_t type;
	uint32_t producer; /* 24 bits */
	uint16_t trap_num, issuer_lid, count;
	uint8_t details[SOF_SA_NOTICE_DETAILS_LEN];
	uint8_t issuer_gid[16];
};
void sof_sa_notice_pack(uint8_t *rec, const struct sof_sa_notice *n);
void sof_sa_notice_unpack(const uint8_t *rec, struct sof_sa_notice *n);

/* ClassPortInfo (IBA 13.4.8.1), 72 bytes: the SA sets its base/class
 * version, capability masks and response time; no redirection.
 * CapabilityMask2 is the upper 27 bits of the word at byte 4, under
 * RespTimeValue's 5. */
#define SOF_SA_CPI_LEN 72
#define SOF_SA_CAP_NOTICE 0x0002      /* IsNoticeSupported (13.4.8.1): InformInfo, Reports */
#define SOF_SA_CAP_OPT_RECORDS 0x0100 /* IsSubnetOptionalRecordsSupported */
#define SOF_SA_CAP_UD_MCAST 0x0200    /* IsUDMulticastSupported */
#define SOF_SA_CAP_MULTIPATH 0x0400   /* IsMultiPathSupported */
/* CapabilityMask2 bit 12 (IBA 15.2.5.1 note): the SA takes
 * SendOnlyFullMember joins (JoinState bit 3); a joiner whose SA lacks it
 * joins as a full member (Linux's ipoib) or refuses (its rdma_cm) */
#define SOF_SA_CAP2_SENDONLY_FULL (1u << 12)
void sof_sa_cpi_pack(uint8_t *rec, uint16_t cap_mask, uint32_t cap_mask2, uint8_t resp_time);
/* CapabilityMask2 of a ClassPortInfo (rec: SOF_SA_CPI_LEN bytes) */
uint32_t sof_sa_cpi_cap_mask2(const uint8_t *rec);

/* ---- Records built by component ---- */

/* NodeRecord (15.2.5.2): LID, reserved, NodeInfo's fields, description */
enum sof_nr_comp {
	SOF_NR_LID,
	SOF_NR_RESV,
	SOF_NR_BASE_VERSION,
	SOF_NR_CLASS_VERSION,
	SOF_NR_NODE_TYPE,
	SOF_NR_NUM_PORTS,
	SOF_NR_SYS_GUID,
	SOF_NR_NODE_GUID,
	SOF_NR_PORT_GUID,
	SOF_NR_PART_CAP,
	SOF_NR_DEVICE_ID,
	SOF_NR_REVISION,
	SOF_NR_LOCAL_PORT,
	SOF_NR_VENDOR_ID,
	SOF_NR_DESC,
};
#define SOF_SA_NR_INFO_OFF 4  /* NodeInfo, 40 bytes */
#define SOF_SA_NR_DESC_OFF 44 /* NodeDescription, 64 bytes */

/* PortInfoRecord (15.2.5.3): EndportLID, PortNum, Options, PortInfo */
enum sof_pir_comp {
	SOF_PIR_LID,
	SOF_PIR_PORT_NUM,
	SOF_PIR_OPTIONS,
	SOF_PIR_MKEY,
	SOF_PIR_GID_PREFIX,
	SOF_PIR_BASE_LID,
	SOF_PIR_SM_LID,
	SOF_PIR_CAP_MASK,
	SOF_PIR_DIAG,
	SOF_PIR_MKEY_LEASE,
	SOF_PIR_LOCAL_PORT,
	SOF_PIR_WIDTH_EN,
	SOF_PIR_WIDTH_SUP,
	SOF_PIR_WIDTH_ACT,
	SOF_PIR_SPEED_SUP,
	SOF_PIR_STATE,
	SOF_PIR_PHYS,
	SOF_PIR_DOWN_DEF,
	SOF_PIR_MKEY_PROT,
	SOF_PIR_RESV1,
	SOF_PIR_LMC,
	SOF_PIR_SPEED_ACT,
	SOF_PIR_SPEED_EN,
	SOF_PIR_NEIGHBOR_MTU,
	SOF_PIR_SM_SL,
	SOF_PIR_VL_CAP,
	SOF_PIR_INIT_TYPE,
	SOF_PIR_VL_HIGH_LIMIT,
	SOF_PIR_VL_ARB_HIGH,
	SOF_PIR_VL_ARB_LOW,
	SOF_PIR_INIT_TYPE_REPLY,
	SOF_PIR_MTU_CAP,
	SOF_PIR_VL_STALL,
	SOF_PIR_HOQ_LIFE,
	SOF_PIR_OP_VLS,
	SOF_PIR_PE_IN,
	SOF_PIR_PE_OUT,
	SOF_PIR_FILTER_IN,
	SOF_PIR_FILTER_OUT,
	SOF_PIR_MKEY_VIOL,
	SOF_PIR_PKEY_VIOL,
	SOF_PIR_QKEY_VIOL,
	SOF_PIR_GUID_CAP,
	SOF_PIR_CLIENT_REREG,
	SOF_PIR_RESV2,
	SOF_PIR_SUBNET_TIMEOUT,
	SOF_PIR_RESV3,
	SOF_PIR_RESP_TIME,
	SOF_PIR_LOCAL_PHY_ERR,
	SOF_PIR_OVERRUN_ERR,
	SOF_PIR_MAX_CREDIT_HINT,
	SOF_PIR_RESV4,
	SOF_PIR_LINK_RT_LATENCY,
	SOF_PIR_CAP_MASK2,
	SOF_PIR_SPEED_EXT_ACT,
	SOF_PIR_SPEED_EXT_SUP,
	SOF_PIR_RESV5,
	SOF_PIR_SPEED_EXT_EN,
};
#define SOF_SA_PIR_INFO_OFF 4 /* PortInfo, 64 bytes */

/* LinkRecord (15.2.5.13) */
enum sof_lr_comp { SOF_LR_FROM_LID, SOF_LR_FROM_PORT, SOF_LR_TO_PORT, SOF_LR_TO_LID };

/* SwitchInfoRecord (15.2.5.4): LID, reserved, SwitchInfo's fields */
enum sof_swir_comp {
	SOF_SWIR_LID,
	SOF_SWIR_RESV,
	SOF_SWIR_LFT_CAP,
	SOF_SWIR_RFT_CAP,
	SOF_SWIR_MFT_CAP,
	SOF_SWIR_LFT_TOP,
	SOF_SWIR_DEFAULT_PORT,
	SOF_SWIR_DEF_MC_PRI,
	SOF_SWIR_DEF_MC_NOT_PRI,
	SOF_SWIR_LIFE_TIME,
	SOF_SWIR_PORT_STATE_CHANGE,
	SOF_SWIR_OPT_SL2VL,
	SOF_SWIR_LIDS_PER_PORT,
	SOF_SWIR_PE_CAP,
	SOF_SWIR_IN_ENF,
	SOF_SWIR_OUT_ENF,
	SOF_SWIR_FILTER_IN,
	SOF_SWIR_FILTER_OUT,
	SOF_SWIR_ENH_PORT0,
	SOF_SWIR_RESV2,
	SOF_SWIR_MFT_TOP,
};
#define SOF_SA_SWIR_INFO_OFF 4 /* SwitchInfo, 20 bytes */

/* LinearForwardingTableRecord (15.2.5.6): LID, BlockNum, 64 ports */
enum sof_lftr_comp { SOF_LFTR_LID, SOF_LFTR_BLOCK, SOF_LFTR_RESV, SOF_LFTR_TABLE };
/* MulticastForwardingTableRecord (15.2.5.8): LID, Position, BlockNum,
 * 32 port masks */
enum sof_mftr_comp {
	SOF_MFTR_LID,
	SOF_MFTR_POSITION,
	SOF_MFTR_RESV,
	SOF_MFTR_BLOCK,
	SOF_MFTR_RESV2,
	SOF_MFTR_TABLE,
};
/* GUIDInfoRecord (15.2.5.18): LID, BlockNum, 8 GUIDs */
enum sof_gir_comp {
	SOF_GIR_LID,
	SOF_GIR_BLOCK,
	SOF_GIR_RESV,
	SOF_GIR_RESV2,
	SOF_GIR_GUID0, /* ..7 */
};
/* P_KeyTableRecord (15.2.5.11): LID, BlockNum, PortNum, 32 P_Keys */
enum sof_pktr_comp { SOF_PKTR_LID, SOF_PKTR_BLOCK, SOF_PKTR_PORT, SOF_PKTR_RESV, SOF_PKTR_TABLE };
/* SMInfoRecord (15.2.5.12): LID, reserved, SMInfo's fields */
enum sof_smir_comp {
	SOF_SMIR_LID,
	SOF_SMIR_RESV,
	SOF_SMIR_GUID,
	SOF_SMIR_SM_KEY,
	SOF_SMIR_ACT_COUNT,
	SOF_SMIR_PRIORITY,
	SOF_SMIR_STATE,
};
/* where each record's table (or block) starts */
#define SOF_SA_TABLE_OFF 8

#endif
