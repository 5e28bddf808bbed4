/*
 * The discovered subnet: what softofed-sm's sweeps fill in and what the
 * SA (sm/sa*.c) answers its records from. Nodes (CAs, switches, routers)
 * with the attributes read from their SMAs (NodeInfo, NodeDescription,
 * PortInfo of every port, SwitchInfo), the links found between them, the
 * LIDs the SM gave, the forwarding tables it computed and wrote, and the
 * SM's own identity and SMInfo state.
 *
 * Lifetime: a node or port object, once made, lives until sm_subnet_free
 * (a node that left the fabric stays with `present` false, so pointers
 * the SA keeps stay valid; its LIDs leave the LID table). Fields are
 * host-endian; the raw_* arrays hold the attribute exactly as the last
 * GetResp brought it (64 bytes, IBA layout, big-endian), which is what an
 * SA record's attribute part carries (IBA 15.2.5: NodeRecord, PortInfoRecord,
 * SwitchInfoRecord embed the SMP attribute).
 *
 * Lock contract: the SM changes the model only while holding `lock` for
 * writing (a sweep's results applied, LIDs assigned, tables computed);
 * a reader in another thread holds it for reading. Code called from the
 * SM's own loop (struct sm_service hooks below) already runs with no
 * sweep in progress and needs no lock. `generation` grows by one each
 * time the SM changed the model, so an SA can cache answers per generation.
 *
 * This is the interface the SA reads: fields are added, never renamed.
 */
#ifndef SOF_SM_SUBNET_H
#define SOF_SM_SUBNET_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SM_MAX_PORTS 255       /* NodeInfo:NumPorts is 8 bits */
#define SM_UCAST_LIDS 0xc000   /* unicast LIDs 1..0xbfff (IBA 4.1.3) */
#define SM_MCAST_LID_BASE 0xc000
#define SM_MAX_DR_HOPS 63       /* IBA 14.2.1.2: hop count 1..63 */
#define SM_LFT_BLOCK 64         /* LFT entries per SMP block (IBA 14.2.5.10) */
#define SM_MFT_BLOCK 32         /* MFT entries per block (IBA 14.2.5.12) */
#define SM_PKEY_MAX 256         /* P_Key entries the SM writes at most: 8 blocks */
#define SM_DEFAULT_PREFIX 0xfe80000000000000ull

struct sm_node;

/* One port of a node. A switch's port 0 is its management port: the LID,
 * LMC and GUID of the switch are port 0's; external ports 1..n have the
 * link fields but no LID of their own (IBA 14.2.5.6). A CA's port 0 is
 * unused (present false). */
struct sm_port {
	struct sm_node *node; /* owner */
	uint8_t num;	      /* port number on the node */
	bool present;	      /* PortInfo read in the last sweep */
	uint64_t guid;	      /* port GUID (CA: NodeInfo:PortGUID of this port;
			       * switch: port 0's, the same for every port) */
	/* addressing (meaningful on CA ports and switch port 0) */
	uint16_t lid;	      /* base LID given by the SM (0: none yet) */
	uint8_t lmc;	      /* LID mask control: 2^lmc LIDs from lid */
	uint64_t gid_prefix;  /* PortInfo:GidPrefix as set */
	uint16_t sm_lid;      /* PortInfo:MasterSMLID as set */
	uint8_t sm_sl;	      /* PortInfo:MasterSMSL */
	uint32_t cap_mask;    /* PortInfo:CapabilityMask (SOF_CAP_* bits) */
	uint16_t cap_mask2;   /* PortInfo:CapabilityMask2 */
	/* link */
	uint8_t state;	      /* PortInfo:PortState (enum sof_port_state) */
	uint8_t phys;	      /* PortInfo:PortPhysicalState (enum sof_phys_state) */
	uint8_t local_port;   /* PortInfo:LocalPortNum (port the SMP came in) */
	uint8_t width_active; /* PortInfo:LinkWidthActive (1 1x, 2 4x, 4 8x, 8 12x) */
	uint8_t width_supported, width_enabled;
	uint8_t speed_active; /* PortInfo:LinkSpeedActive (1 SDR, 2 DDR, 4 QDR) */
	uint8_t speed_supported, speed_enabled;
	uint8_t mtu_cap;      /* PortInfo:MTUCap (IBA MTU code 1..5) */
	uint8_t neighbor_mtu; /* PortInfo:NeighborMTU as set */
	uint8_t vl_cap;	      /* PortInfo:VLCap */
	uint8_t op_vls;	      /* PortInfo:OperationalVLs as set */
	uint8_t subnet_timeout; /* PortInfo:SubnetTimeOut as set */
	uint8_t resp_time;    /* PortInfo:RespTimeValue */
	uint8_t raw_portinfo[64]; /* the last PortInfo GetResp's attribute */
	/* the P_KeyTable (IBA 14.2.5.7) as the port holds it, read at first
	 * contact and as the SM wrote it since: SM_PKEY_MAX entries,
	 * allocated at the first read; pkeys_set has a bit per block known
	 * (none: the port keeps its own, the default) */
	uint16_t *pkeys;
	uint8_t pkeys_set;
	/* the link's far end, NULL when none was found (or the port is down) */
	struct sm_port *peer;
	/* the directed route to this port's node entering by this port (CA
	 * ports; a multi-port CA is reached once per port), as sm_node.path */
	uint8_t path[SM_MAX_DR_HOPS + 1];
	uint8_t hops;
	/* SM-private bookkeeping below; the SA need not read it */
	uint32_t seen_sweep;  /* last heavy sweep to meet it (CA: NodeInfo; else PortInfo) */
	uint32_t link_sweep;  /* sweep in which a NodeInfo across the link
			       * named its far end (either end's) */
	uint16_t lid_wanted;  /* LID from guid2lid to reuse, 0 none */
	bool lid_set;	      /* the SM's LID/SM LID are in the port's PortInfo */
	uint8_t qos_vls;      /* OperationalVLs its SL2VL/VLArb were set for, 0 not */
	bool pkeys_read;      /* its P_KeyTable blocks were asked for (partition.c) */
	uint64_t m_key;       /* the M_Key the SM gives it (mkey.c), 0 not yet */
	uint64_t m_key_held;  /* another's it showed at protection 0, until ours replaces it */
	uint8_t pkeys_reading; /* P_KeyTable Gets not answered yet */
	uint32_t pi_sweep;    /* heavy sweep of the last PortInfo answer */
	bool rereg;	      /* a ClientReregister is owed (program.c): new to
			       * this SM, or its first sweep as master */
};

/* A switch: SwitchInfo (IBA 14.2.5.4) and the forwarding tables the SM
 * computed (lft) and the ones it knows are on the switch (lft_hw). */
struct sm_switch {
	uint16_t lft_cap;	/* SwitchInfo:LinearFDBCap */
	uint16_t mft_cap;	/* SwitchInfo:MulticastFDBCap */
	uint16_t lft_top;	/* SwitchInfo:LinearFDBTop as set */
	uint16_t mft_top;	/* SwitchInfo:MulticastFDBTop */
	uint8_t default_port;	/* SwitchInfo:DefaultPort */
	uint8_t life_time;	/* SwitchInfo:LifeTimeValue */
	bool port_state_change; /* SwitchInfo:PortStateChange as last read */
	uint16_t lids_per_port; /* SwitchInfo:LIDsPerPort */
	uint16_t partition_enf_cap; /* SwitchInfo:PartitionEnforcementCap */
	bool enhanced_port0;	/* SwitchInfo:EnhancedPort0 */
	uint8_t raw_switchinfo[64]; /* the last SwitchInfo GetResp's attribute */
	/* unicast: output port by LID, SM_UCAST_LIDS entries, 255 = no route */
	uint8_t *lft;		/* as computed by the routing engine */
	uint8_t *lft_hw;	/* as written to the switch (what the SA's
				 * LinearForwardingTableRecord reports);
				 * 0xfe where not written yet (unknown) */
	/* multicast: port masks (bit p = port p) by MLID - 0xc000;
	 * mft_cap entries, SM_MAX_PORTS + 1 bits each; NULL until the SM
	 * does multicast */
	uint64_t (*mft)[4];
	uint64_t (*mft_want)[4]; /* SM-private: as the trees ask, like mft */
	uint8_t *hops;		/* SM-private, unused yet: min hop count, [lid] */
};

/* One node (IBA 14.2.5.3 NodeInfo, 14.2.5.2 NodeDescription) */
struct sm_node {
	unsigned index;	       /* position in sm_subnet.nodes */
	bool present;	       /* answered in the last heavy sweep */
	uint8_t type;	       /* NodeInfo:NodeType (enum sof_node_type) */
	uint8_t nports;	       /* NodeInfo:NumPorts */
	uint64_t node_guid;    /* NodeInfo:NodeGUID */
	uint64_t sys_guid;     /* NodeInfo:SystemImageGUID */
	uint16_t partition_cap; /* NodeInfo:PartitionCap */
	uint16_t device_id;    /* NodeInfo:DeviceID */
	uint32_t revision;     /* NodeInfo:Revision */
	uint32_t vendor_id;    /* NodeInfo:VendorID (24 bits) */
	uint8_t raw_nodeinfo[64]; /* the last NodeInfo GetResp's attribute
				   * (its PortGUID/LocalPortNum are those of
				   * the port it was read through) */
	char desc[65];	       /* NodeDescription, NUL-terminated */
	uint8_t raw_desc[64];  /* NodeDescription as read */
	/* directed route from the SM's port (IBA 14.2.2): path[1..hops] are
	 * the output ports; hops 0 is the SM's own node */
	uint8_t path[SM_MAX_DR_HOPS + 1];
	uint8_t hops;
	uint8_t in_port;       /* the port the path enters this node by */
	struct sm_switch *sw;  /* switches only, else NULL */
	struct sm_port *port;  /* ports 0..nports */
	/* SM-private */
	uint32_t seen_sweep;   /* sweep number of the last NodeInfo read */
	int rank;	       /* up/down and fat-tree: distance from the roots */
};

/* SMInfo state (IBA 14.2.5.13, SMState) */
enum sm_state {
	SM_STATE_NOT_ACTIVE = 0,
	SM_STATE_DISCOVERING = 1,
	SM_STATE_STANDBY = 2,
	SM_STATE_MASTER = 3,
};
extern const char *const sm_state_names[4];

struct sm_subnet {
	pthread_rwlock_t lock;	/* see the lock contract above */
	uint64_t generation;	/* grows each time the model changed */
	uint32_t sweep;		/* number of the current/last heavy sweep */
	bool up;		/* all ports the SM manages are Active (SUBNET UP) */
	uint64_t prefix;	/* subnet prefix (GID prefix given to ports) */
	uint8_t lmc;		/* LMC given to CA ports (switch port 0: 0,
				 * as enhanced port 0 has LMC 0) */
	uint8_t subnet_timeout; /* PortInfo:SubnetTimeOut the SM sets */
	/* nodes, in the order found (nodes[0] is the SM's own) */
	struct sm_node **nodes;
	unsigned nnodes, nodes_cap;
	/* LID -> port owning it (all 2^LMC LIDs of a base LID map to the
	 * port); SM_UCAST_LIDS entries, NULL where no port has the LID */
	struct sm_port **lid_port;
	uint16_t max_lid;	/* highest LID given */
	/* GUID hash tables (open addressing; private to subnet.c) */
	struct sm_node **node_hash;	/* by node GUID */
	struct sm_port **port_hash;	/* by port GUID */
	unsigned node_hash_size, port_hash_size; /* powers of two */
	unsigned port_hash_used;
	/* the SM itself */
	struct sm_port *self;	/* the SM's port (on nodes[0]) */
	uint16_t sm_lid;	/* its LID */
	uint8_t sm_sl;		/* the SL SMPs to it use */
	uint64_t sm_guid;	/* its port GUID (SMInfo:GUID) */
	uint64_t sm_key;	/* SMInfo:SM_Key (0 unless configured) */
	/* M_Key (IBA 14.2.4): set in every port's PortInfo and carried by
	 * every SMP the SM sends; 0: none (OpenSM's m_key) */
	uint64_t m_key;
	uint8_t m_key_protect;	/* M_KeyProtectBits 0..3 */
	uint16_t m_key_lease;	/* M_KeyLeasePeriod, seconds (0: never) */
	uint8_t sm_priority;	/* SMInfo:Priority */
	uint8_t sm_state;	/* SMInfo:SMState (enum sm_state) */
	uint32_t act_count;	/* SMInfo:ActCount, grows as the SM works */
	uint16_t master_lid;	/* the master's LID when we are standby */
	char routing[16];	/* the routing engine in use: "minhop", ... */
	char ca_name[64];	/* the umad CA and port the SM runs on */
	int ca_port;
};

/* Make an empty subnet / free it and every node. */
int sm_subnet_init(struct sm_subnet *sn);
void sm_subnet_free(struct sm_subnet *sn);

/* Look-ups (the caller holds lock for reading, or runs in the SM loop).
 * NULL when not found. sm_port_by_lid takes any of a port's 2^LMC LIDs. */
struct sm_node *sm_node_by_guid(const struct sm_subnet *sn, uint64_t node_guid);
struct sm_port *sm_port_by_guid(const struct sm_subnet *sn, uint64_t port_guid);
struct sm_port *sm_port_by_lid(const struct sm_subnet *sn, uint16_t lid);

/* The port whose LID identifies a node to the SA (a switch: port 0; a CA:
 * the port asked for, or its first present port). */
struct sm_port *sm_node_lid_port(const struct sm_node *n);

/* The SM's loop serves other management classes (the SA) on its umad
 * port: a service is given the descriptor to umad_register its agents on,
 * the MADs for those agents, and a tick. Called from the SM's thread, with
 * no sweep under way (the model may be read without the lock). */
struct sm_service {
	const char *name;
	/* after the port is open; register agents on fd; 0 or -errno */
	int (*start)(void *ctx, struct sm_subnet *sn, int fd);
	/* a received umad (struct ib_user_mad + MAD, len bytes in all) for
	 * agent `agent`; return true when the service took it */
	bool (*recv)(void *ctx, int agent, void *umad, int len);
	/* every loop turn (at least every 10 ms); now in microseconds */
	void (*tick)(void *ctx, uint64_t now_us);
	/* after the SM changed the model (LIDs, links, tables) */
	void (*changed)(void *ctx);
	void (*stop)(void *ctx);
};

/* Add a service before the SM starts; at most a few. 0 or -ENOSPC. A
 * service in its own file registers itself from a constructor
 * (__attribute__((constructor))), so main.c needs no change: every sm/ file is
 * all linked into softofed-sm. The SM's loop reads MADs of one MAD's
 * length first and a longer (RMPP) message again into a larger buffer, so
 * recv gets whole messages, len the MAD part's length. */
int sm_service_add(const struct sm_service *ops, void *ctx);

#endif
