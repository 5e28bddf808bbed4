/*
 * Subnet management packets and the node model their agents answer from:
 * the SMP layout (IBA 14.2.1: LID-routed and directed-route), the
 * attribute IDs and status codes, a model of one node (an HCA or a switch
 * with its ports: GUIDs, description, LID/LMC, SM LID/SL, port and
 * physical state, M_Key and its protection, P_Key table, SL-to-VL map, VL
 * arbitration, GUIDInfo, the switch's forwarding tables and SwitchInfo,
 * SMInfo, port counters), and pure functions over that model: the
 * directed-route step of IBA 14.2.2 (sof_smp_dr_step), the SMA
 * (sof_sma_process, mad/sma.c and mad/sma_port.c), the PMA (sof_pma_process,
 * mad/pma.c) and the congestion control agent (sof_cc_process, mad/cc.c).
 *
 * Nothing here does I/O or keeps global state, so both the daemon's
 * InfiniBand port and the fabric process (fabric/) answer from the same
 * code. A caller owns its nodes and serialises calls on each node.
 *
 * Names: sof_smp_ (layout, routing), sof_sma_, sof_pma_, sof_node_/sof_port_
 * (the model). MADs are 256 bytes, fields big-endian at IBA's offsets.
 */
#ifndef SOF_SMP_H
#define SOF_SMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sof_bytes.h"

#define SOF_SMP_LEN 256
#define SOF_SMP_DATA_LEN 64
#define SOF_SMP_MAX_HOPS 64 /* IBA 14.2.1.2: hop count 0..63 */

/* Management classes (IBA 13.4.4) */
#define SOF_MCLASS_SMP_LID 0x01
#define SOF_MCLASS_SMP_DR 0x81
#define SOF_MCLASS_PERF 0x04
#define SOF_MCLASS_CC 0x21 /* congestion control (IBA annex A10) */

/* Methods (IBA 13.4.5) */
#define SOF_METHOD_GET 0x01
#define SOF_METHOD_SET 0x02
#define SOF_METHOD_GET_RESP 0x81
#define SOF_METHOD_TRAP 0x05
#define SOF_METHOD_REPORT 0x06
#define SOF_METHOD_TRAP_REPRESS 0x07
#define SOF_METHOD_RESP_BIT 0x80

/* MAD status (IBA 13.4.7, table 110); for a DR SMP bit 15 is D. */
#define SOF_STATUS_OK 0x0000
#define SOF_STATUS_BUSY 0x0001
#define SOF_STATUS_BAD_VERSION 0x0004
#define SOF_STATUS_BAD_METHOD 0x0008
#define SOF_STATUS_BAD_ATTR 0x000c  /* method/attribute combination */
#define SOF_STATUS_BAD_VALUE 0x001c /* attribute or modifier value */
#define SOF_SMP_DIRECTION 0x8000

/* Byte offsets in an SMP (IBA 14.2.1.1 figure 161, 14.2.1.2 figure 162) */
#define SOF_SMP_OFF_STATUS 4
#define SOF_SMP_OFF_HOP_PTR 6
#define SOF_SMP_OFF_HOP_CNT 7
#define SOF_SMP_OFF_TID 8
#define SOF_SMP_OFF_ATTR_ID 16
#define SOF_SMP_OFF_ATTR_MOD 20
#define SOF_SMP_OFF_MKEY 24
#define SOF_SMP_OFF_DR_SLID 32
#define SOF_SMP_OFF_DR_DLID 34
#define SOF_SMP_OFF_DATA 64
#define SOF_SMP_OFF_INIT_PATH 128
#define SOF_SMP_OFF_RET_PATH 192
/* a PerfMgt MAD's data (IBA 16.1.1: 40 reserved bytes after the header) */
#define SOF_PMA_OFF_DATA 64

#define SOF_LID_PERMISSIVE 0xffff
#define SOF_LID_MCAST_BASE 0xc000

/* Attribute IDs: SMPs (IBA 14.2.5, table 145), PerfMgt (16.1.3) */
#define SOF_ATTR_CLASS_PORT_INFO 0x0001
#define SOF_ATTR_NOTICE 0x0002
#define SOF_ATTR_NODE_DESC 0x0010
#define SOF_ATTR_NODE_INFO 0x0011
#define SOF_ATTR_SWITCH_INFO 0x0012
#define SOF_ATTR_GUID_INFO 0x0014
#define SOF_ATTR_PORT_INFO 0x0015
#define SOF_ATTR_PKEY_TABLE 0x0016
#define SOF_ATTR_SL2VL 0x0017
#define SOF_ATTR_VL_ARB 0x0018
#define SOF_ATTR_LFT 0x0019
#define SOF_ATTR_RFT 0x001a
#define SOF_ATTR_MFT 0x001b
#define SOF_ATTR_SM_INFO 0x0020
#define SOF_ATTR_PORT_COUNTERS 0x0012
#define SOF_ATTR_PORT_COUNTERS_EXT 0x001d
#define SOF_ATTR_PORT_RCV_ERR_DETAILS 0x0015
#define SOF_ATTR_PORT_XMIT_DISC_DETAILS 0x0016

/* Traps the SMA sends (IBA 14.2.5.1, table 147) */
#define SOF_TRAP_LINK_STATE 128 /* a switch port's link state changed */
#define SOF_TRAP_CAP_CHANGE 144 /* a CA port's capability mask changed */
#define SOF_TRAP_BAD_MKEY 256

/* PortInfo:CapabilityMask bits (IBA 14.2.5.6 table 146) */
#define SOF_CAP_IS_SM 0x00000002u
#define SOF_CAP_IS_NOTICE 0x00000004u
#define SOF_CAP_IS_TRAP 0x00000008u
#define SOF_CAP_IS_SL_MAPPING 0x00000040u
#define SOF_CAP_IS_SM_DISABLED 0x00000400u
#define SOF_CAP_IS_SYS_GUID 0x00000800u
#define SOF_CAP_IS_PKEY_SWITCH_EXT 0x00001000u
#define SOF_CAP_IS_CM 0x00010000u
#define SOF_CAP_IS_CLIENT_REREG 0x02000000u

enum sof_node_type {
	SOF_NODE_CA = 1,
	SOF_NODE_SWITCH = 2,
	SOF_NODE_ROUTER = 3,
};

/* PortInfo:PortState (IBA 14.2.5.6); 0 on a Set means no change */
enum sof_port_state {
	SOF_PORT_NOP = 0,
	SOF_PORT_DOWN = 1,
	SOF_PORT_INIT = 2,
	SOF_PORT_ARMED = 3,
	SOF_PORT_ACTIVE = 4,
};
extern const char *const sof_port_state_names[5];

/* PortInfo:PortPhysicalState; 0 on a Set means no change */
enum sof_phys_state {
	SOF_PHYS_NOP = 0,
	SOF_PHYS_SLEEP = 1,
	SOF_PHYS_POLLING = 2,
	SOF_PHYS_DISABLED = 3,
	SOF_PHYS_TRAINING = 4,
	SOF_PHYS_LINKUP = 5,
	SOF_PHYS_ERROR_RECOVERY = 6,
};
extern const char *const sof_phys_state_names[7];

#define SOF_PKEY_DEFAULT 0xffff
/* PartitionCap of the model's CAs; a switch's external ports'
 * PartitionEnforcementCap */
#define SOF_NODE_PKEYS 64
/* PartitionCap of a switch: its management port's (port 0's) table, one
 * P_KeyTable block (IBA 14.2.5.3; ibsim's and Mellanox switches' 8): an SM
 * reads every block of it, so a larger one costs a Get per switch */
#define SOF_SW_PORT0_PKEYS 8
#define SOF_NODE_GUIDS 8      /* GUIDCap: one GUIDInfo block */
#define SOF_SW_LFT_CAP 0xc000 /* every unicast LID */
#define SOF_SW_MFT_CAP 1024   /* multicast LIDs 0xc000.. */

/* Port counters (IBA 16.1.3.5, 16.1.4.11). Kept 64-bit; the 32-bit
 * PortCounters view saturates them as IBA asks. Data in 4-byte words. */
struct sof_port_counters {
	uint64_t xmit_data, rcv_data, xmit_pkts, rcv_pkts;
	uint64_t uni_xmit_pkts, uni_rcv_pkts, mc_xmit_pkts, mc_rcv_pkts;
	uint32_t symbol_errors, link_error_recovery, link_downed;
	uint32_t rcv_errors, rcv_remote_phys_errors, rcv_switch_relay_errors;
	uint32_t xmit_discards, xmit_constraint_errors, rcv_constraint_errors;
	uint32_t local_link_integrity_errors, excessive_buffer_overruns;
	uint32_t vl15_dropped, xmit_wait;
	/* the details (IBA 16.1.4.1-2): PortRcvErrorDetails of rcv_errors and
	 * rcv_switch_relay_errors, PortXmitDiscardDetails of xmit_discards */
	uint32_t local_phys_errors, malformed_pkt_errors, dlid_map_errors;
	uint32_t inactive_discards;
};

/* One port. For a switch, port 0 is the management port: its LID, LMC,
 * M_Key, SM LID and GID prefix are the switch's; its external ports carry
 * none of their own (IBA 14.2.5.6, "components: switch external ports"). */
struct sof_port {
	uint64_t guid; /* CA: the port GUID; switch: port 0's for all */
	uint64_t gid_prefix;
	uint64_t mkey;
	uint16_t lid, sm_lid;
	uint8_t lmc, sm_sl;
	uint32_t cap_mask;
	uint16_t cap_mask2;
	uint16_t mkey_lease; /* M_KeyLeasePeriod, seconds (0: never ends) */
	uint8_t mkey_protect;
	uint64_t mkey_lease_end; /* node clock (ms) when the lease ends, 0: off */
	uint16_t mkey_violations, pkey_violations, qkey_violations;
	uint8_t state; /* enum sof_port_state */
	uint8_t phys;  /* enum sof_phys_state */
	uint8_t link_down_default;
	uint8_t width_enabled, width_supported, width_active;
	uint8_t speed_supported, speed_enabled, speed_active;
	uint8_t neighbor_mtu, mtu_cap; /* IBA MTU codes: 1 256 .. 5 4096 */
	uint8_t vl_cap, op_vls, vl_high_limit, vl_arb_high_cap, vl_arb_low_cap;
	uint8_t vl_stall, hoq_life;
	uint8_t init_type_reply;
	bool pe_inbound, pe_outbound, filter_raw_inbound, filter_raw_outbound;
	uint8_t guid_cap, subnet_timeout, resp_time, client_rereg;
	uint8_t local_phy_errors, overrun_errors; /* thresholds */
	uint16_t npkeys;
	uint16_t pkeys[SOF_NODE_PKEYS];
	uint64_t guids[SOF_NODE_GUIDS];
	/* SL-to-VL: CA ports one table; a switch's output port one per input
	 * port (0..nports), 16 four-bit entries each (IBA 14.2.5.8) */
	uint8_t (*sl2vl)[8];
	/* VLArbitrationTable blocks 1..4: low 0-31, low 32-63, high 0-31,
	 * high 32-63, 32 entries of (VL, weight) each (IBA 14.2.5.9) */
	uint8_t vlarb[4][64];
	struct sof_port_counters cnt;
	uint32_t cc_setting; /* a switch port's SwitchPortCongestionSetting */
};

/* SwitchInfo (IBA 14.2.5.4) and the forwarding tables */
struct sof_switch {
	uint16_t lft_cap, mft_cap, lft_top, mft_top;
	uint8_t default_port, default_mc_primary, default_mc_not_primary;
	uint8_t life_time;
	bool port_state_change;
	uint16_t lids_per_port, pe_cap;
	bool enhanced_port0;
	uint8_t *lft;		/* lft_cap entries: output port by LID, 255 none */
	uint16_t *mft;		/* mft_cap x mft_positions port masks */
	unsigned mft_positions; /* 16 ports each */
};

/* SMInfo (IBA 14.2.5.13) as the node's SM (if any) publishes it */
struct sof_sminfo {
	uint64_t guid, sm_key;
	uint32_t act_count;
	uint8_t priority, state;
};

/* Why SMPs and PerfMgt MADs were dropped (counted per node) */
enum sof_smp_drop {
	SOF_SMP_DROP_LEN,	 /* not 256 bytes */
	SOF_SMP_DROP_VERSION,	 /* base version not 1 */
	SOF_SMP_DROP_CLASS,	 /* not an SMP (or PerfMgt) class */
	SOF_SMP_DROP_HOP_CNT,	 /* hop count beyond 63 */
	SOF_SMP_DROP_HOP_PTR,	 /* hop pointer where it cannot be */
	SOF_SMP_DROP_PATH,	 /* a path entry naming no port */
	SOF_SMP_DROP_NOT_SWITCH, /* a CA asked to forward */
	SOF_SMP_DROP_MKEY,	 /* M_Key check failed (IBA 14.2.4.1) */
	SOF_SMP_DROP_RESPONSE,	 /* a response or trap nobody here waits for */
	SOF_SMP_DROP_MAX
};
extern const char *const sof_smp_drop_names[SOF_SMP_DROP_MAX];

/* The last SMP that failed the M_Key check: what trap 256 reports */
struct sof_mkey_bad {
	uint64_t mkey;
	uint32_t attr_mod;
	uint16_t attr_id, dr_slid;
	uint8_t port, method, hops;
	bool directed, truncated;
	uint8_t rpath[30];
};

/* What a congestion control manager set (IBA A10.4.3; mad/cc.c) */
struct sof_cc {
	uint64_t key; /* CC_Key (A10.4.1); 0 checks nothing */
	uint16_t lease, violations;
	bool protect;
	uint8_t sw_setting[76];		/* a switch's SwitchCongestionSetting */
	uint8_t ca_setting[4 + 16 * 8]; /* a CA's CACongestionSetting */
	uint8_t cct[4 + 64 * 2];	/* a CA's CongestionControlTable block 0 */
};

struct sof_node {
	uint8_t type; /* enum sof_node_type */
	uint8_t nports;
	uint64_t node_guid, sys_guid;
	uint16_t partition_cap, device_id;
	uint32_t vendor_id, revision;
	char desc[64];	      /* NodeDescription, NUL-padded */
	struct sof_switch sw; /* switches only */
	struct sof_sminfo sm;
	bool sm_agent; /* an SM takes this node's SMInfo and responses */
	uint64_t smp_in, smp_out;
	uint64_t drops[SOF_SMP_DROP_MAX];
	/* the caller's monotonic clock in ms, set before each SMA call (the
	 * M_Key lease, IBA 14.2.4.2); left 0, a lease never runs out */
	uint64_t now_ms;
	struct sof_mkey_bad mkey_bad;
	struct sof_cc cc;
	struct sof_port port[]; /* 0..nports; a CA's port 0 is unused */
};

/* A node with its ports set as a fresh device leaves them: Down and
 * Polling, LID 0, default P_Key, SL2VL identity, 4X widths and SDR..QDR
 * speeds, MTU 4096, VL0-7. NULL on no memory or a bad type/nports. */
struct sof_node *sof_node_new(enum sof_node_type type, unsigned nports, uint64_t node_guid);
void sof_node_free(struct sof_node *n);
/* The port an SMP on in_port is about (IBA 14.2.5: a switch's port 0
 * stands for the switch; a CA's port is the one the SMP came on). */
struct sof_port *sof_node_mgmt_port(struct sof_node *n, unsigned in_port);
/* Whether lid is one of the LIDs of port (base LID and its LMC range). */
bool sof_port_has_lid(const struct sof_port *p, uint16_t lid);

/* Physical link events of a port (IBA 7.2): up takes Down to Initialize;
 * down takes any state to Down (LinkDowned counted when it was up).
 * Return true when the port's state changed; on a switch that also sets
 * SwitchInfo:PortStateChange, after which the caller sends trap 128. */
bool sof_port_link_up(struct sof_node *n, unsigned port);
bool sof_port_link_down(struct sof_node *n, unsigned port);
/* Count a packet of len bytes (LRH through ICRC) out of / into a port. */
void sof_port_count_xmit(struct sof_port *p, uint32_t len, bool mcast);
void sof_port_count_rcv(struct sof_port *p, uint32_t len, bool mcast);

/* Directed-route step (IBA 14.2.2.2 outgoing, 14.2.2.4 returning): what a
 * node does with a DR SMP it holds, updating the hop pointer and the
 * return path in smp. in_port: the port it arrived on, 0 when this node
 * made it (a request from its SM, a response from its SMA); lid_routed:
 * it arrived LID-routed (LRH DLID not the permissive LID), or, for a
 * response made here, its request did; reply_lid: for such a response,
 * the LRH SLID its request came from. */
enum sof_dr_action {
	SOF_DR_DISCARD,
	SOF_DR_LOCAL,	 /* for this node's SMA (D=0) or SM (D=1) */
	SOF_DR_OUT_PORT, /* directed: out `port`, LRH DLID/SLID permissive */
	SOF_DR_OUT_LID,	 /* LID-routed to `lid` */
};
struct sof_dr_next {
	enum sof_dr_action action;
	uint8_t port;
	uint16_t lid;
};
enum sof_dr_action sof_smp_dr_step(struct sof_node *n, uint8_t *smp, unsigned in_port,
				   bool lid_routed, uint16_t reply_lid, struct sof_dr_next *next);

/* What sof_sma_process / sof_pma_process did with a MAD */
enum sof_sma_result {
	SOF_SMA_REPLY, /* mad is now the GetResp to send back */
	SOF_SMA_DROP,  /* dropped, counted in n->drops */
	SOF_SMA_PASS,  /* not the agent's: for the SM (responses, traps,
			* SMInfo on a node whose SM takes it; a TrapRepress
			* there, with SOF_SMA_EV_REPRESS: the caller keeps
			* it when its TID is its own trap's) */
	SOF_SMA_DONE,  /* consumed, no answer (a TrapRepress, no SM here) */
};

/* Events of one SMA call the caller acts on (bit mask) */
#define SOF_SMA_EV_STATE 0x01	  /* a port's PortState changed */
#define SOF_SMA_EV_LID 0x02	  /* LID, LMC or SM LID/SL changed */
#define SOF_SMA_EV_DISABLE 0x04	  /* a port was disabled: link goes down */
#define SOF_SMA_EV_ENABLE 0x08	  /* a disabled port was enabled (Polling) */
#define SOF_SMA_EV_MKEY 0x10	  /* M_Key violation (trap 256 due) */
#define SOF_SMA_EV_REPRESS 0x20	  /* the SM repressed our trap */
#define SOF_SMA_EV_PKEYS 0x40	  /* a P_Key table changed */
#define SOF_SMA_EV_FWD 0x80	  /* LFT/MFT/SwitchInfo changed */
#define SOF_SMA_EV_TRAP_128 0x100 /* PortStateChange newly set */
#define SOF_SMA_EV_REREG 0x200	  /* PortInfo Set with ClientReregister (IBA 14.4.11) */

/* The SMA (mad/sma.c): handle an SMP (len bytes; 256 or dropped) that
 * reached this node on in_port, already past sof_smp_dr_step for a DR
 * SMP. On SOF_SMA_REPLY, mad holds the response (for a DR SMP with D set;
 * the caller runs sof_smp_dr_step on it with in_port 0). *events gets
 * SOF_SMA_EV_* bits (may be NULL). */
enum sof_sma_result sof_sma_process(struct sof_node *n, unsigned in_port, uint8_t *mad, size_t len,
				    unsigned *events);

/* Build an unsolicited Trap(Notice) SMP, LID-routed to the port's SM
 * (IBA 14.2.5.1, 13.4.8.2). trap: 128 (a switch: its LID in LIDADDR),
 * 144 (a CA port's capability mask), 256 (bad M_Key: the SMP of the last
 * violation, n->mkey_bad; the caller sends it after SOF_SMA_EV_MKEY). */
void sof_sma_trap(const struct sof_node *n, unsigned port, uint16_t trap, uint64_t tid,
		  uint8_t *mad);

/* The PMA (mad/pma.c): ClassPortInfo, PortCounters, PortCountersExtended
 * (Get; Set resets the selected counters). Same results as the SMA. */
enum sof_sma_result sof_pma_process(struct sof_node *n, unsigned in_port, uint8_t *mad, size_t len);
/* The checks every agent's GMP passes first (mad/pma.c): 256 bytes, base
 * version 1, class mclass, a request; false when not (counted in
 * n->drops). */
bool sof_gmp_take(struct sof_node *n, const uint8_t *mad, size_t len, uint8_t mclass);
/* The congestion control agent (IBA annex A10, mad/cc.c): REPLY with the
 * GetResp in mad, or DROP (counted; a CC_Key violation counts in
 * n->cc.violations too). */
enum sof_sma_result sof_cc_process(struct sof_node *n, uint8_t *mad, size_t len);
/* A GMP for the node's QP1 to its agents, as an HCA's firmware answers
 * them: PerfMgt and congestion control requests; PASS for any other
 * class and for responses (a program or the SM may take those). */
enum sof_sma_result sof_gsi_agent_process(struct sof_node *n, unsigned in_port, uint8_t *mad,
					  size_t len);

/* Build the header of an SMP request (both kinds; hop count 0 and the
 * paths empty for DR: the caller fills them). */
void sof_smp_init(uint8_t *mad, bool directed, uint8_t method, uint16_t attr_id, uint32_t attr_mod,
		  uint64_t tid, uint64_t mkey);

#endif
