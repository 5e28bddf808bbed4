/*
 * softofed-sm's internals: the SM context, the SMP engine (sm/smp_io.c:
 * requests queued, at most `window` outstanding on the umad port, matched
 * to their responses by TID, timed out and sent again), discovery
 * (sm/discover.c), LID assignment (sm/lid.c), routing (sm/route.c) and the
 * programming of the fabric (sm/program.c). One thread: everything runs
 * from the loop in sm/main.c, each SMP's completion as a callback.
 */
#ifndef SOF_SM_SM_H
#define SOF_SM_SM_H

#include <stdbool.h>
#include <stdint.h>

#include "subnet.h"

#define SM_WINDOW_MAX 1024
#define SM_MC_LIDS 0x4000	/* multicast LIDs 0xc000..0xffff */
/* SMInfo Set AttributeModifiers (IBA 14.2.5.13, table 180) */
#define SM_SMINFO_HANDOVER 1
#define SM_SMINFO_ACKNOWLEDGE 2
/* SL2VL/VLArb Sets queued at once between sweeps */
#define SM_QOS_BATCH 256
/* a trap 144 (CapabilityMask, IsSM) repeated until repressed: one check
 * of its port per this */
#define SM_TRAP144_US 1000000u
/* Background SMPs (sm_req.bg: the QoS pass, sm/qos.c) give way to the
 * SA: for SM_SVC_HOLD_US after a service (the SA) took a MAD they leave
 * one at a time, at most one per SM_BG_GAP_US, so a client's query does
 * not wait in the fabric behind a window of them (smp_io.c) */
#define SM_SVC_HOLD_US 50000u
#define SM_BG_GAP_US 1000u

struct sm;
struct sm_req;

/* Completion of an SMP: err 0 and the response MAD (256 bytes), or
 * -ETIMEDOUT (no answer after every try) / -EPROTO (a status the SMA set;
 * mad is then the response) */
typedef void sm_done_fn(struct sm *sm, struct sm_req *rq, int err, const uint8_t *mad);

struct sm_req {
	struct sm_req *next;	/* in the pending queue */
	uint8_t mad[256];	/* the request as built */
	bool dr;		/* directed route (else LID-routed to dlid) */
	uint16_t dlid;
	uint32_t tid;		/* low 32 bits of the TID in flight */
	unsigned tries;
	uint64_t deadline;	/* µs */
	sm_done_fn *done;
	bool bg;		/* background: held back while the SA is busy */
	/* the caller's context */
	struct sm_node *node;
	uint8_t port;
	uint32_t arg;
	uint64_t m_key;		/* with m_key_set: the M_Key to send (mkey.c) */
	bool m_key_set;
};

enum sm_phase {
	SM_PHASE_IDLE,
	SM_PHASE_DISCOVER,	/* heavy sweep: DR walk */
	SM_PHASE_PROGRAM,	/* LIDs, LFTs, SwitchInfo, PortInfo to Armed */
	SM_PHASE_ACTIVATE,	/* PortInfo to Active */
	SM_PHASE_LIGHT,		/* light sweep: SwitchInfo of every switch */
	SM_PHASE_PROBE,		/* SMInfo of the other SMs found */
	SM_PHASE_MAX
};
extern const char *const sm_phase_names[SM_PHASE_MAX];

enum sm_routing { SM_ROUTE_MINHOP, SM_ROUTE_UPDOWN, SM_ROUTE_FTREE };

/* Partitions (sm/partition.c), from a file in OpenSM's partitions.conf
 * syntax. A member names ports; its membership is limited, full or both
 * (both: a full member, IBA 10.9.1.1 has no "both" in a table). */
enum sm_part_who { SM_PART_GUID, SM_PART_ALL, SM_PART_ALL_CAS, SM_PART_ALL_SWITCHES, SM_PART_SELF };
enum sm_part_memb { SM_MEMB_LIMITED = 1, SM_MEMB_FULL = 2, SM_MEMB_BOTH = 3 };
extern const char *const sm_part_who_names[5];

struct sm_part_member {
	uint8_t who;  /* enum sm_part_who */
	uint8_t memb; /* enum sm_part_memb */
	uint64_t guid; /* SM_PART_GUID: a port GUID */
};

struct sm_partition {
	char name[64];
	uint16_t pkey;	/* 15 bits: the membership bit goes per port */
	bool ipoib;	/* the SA makes its IPoIB broadcast group at start */
	uint8_t mtu, rate, sl; /* of the broadcast group, 0: the SA's default */
	uint32_t qkey;
	struct sm_part_member *m;
	unsigned nm;
};

struct sm_parts {
	struct sm_partition *p;
	unsigned n;
};

/* Parse text (a whole file): 0, or -EINVAL with "line N: what" in err. */
int sm_part_parse(const char *text, struct sm_parts *out, char *err, size_t errlen);
void sm_part_free(struct sm_parts *ps);
/* The partitions the SM loaded (NULL: no --partitions), for the SA. */
const struct sm_parts *sm_parts_loaded(void);

struct sm {
	struct sm_subnet sn;
	/* the umad port */
	int fd;			/* umad_open_port's */
	int issm_fd;		/* the port's issm file, -1 none */
	int agent_dr, agent_lid; /* our QP0 agents (0x81, 0x01) */
	/* options */
	unsigned window;	/* SMPs outstanding at most */
	unsigned timeout_ms;	/* per try */
	unsigned retries;	/* tries after the first */
	unsigned sweep_s;	/* light sweep period, 0 none */
	enum sm_routing routing;
	const char *guid2lid;	/* file, NULL none */
	/* per-port M_Keys (mkey.c): --m_key_per_port, --guid2mkey FILE */
	bool m_key_per_port;
	const char *guid2mkey;
	bool m_key_release;	/* --m_key_release: keys cleared on leaving */
	bool mkey_clear;	/* PortInfo Sets queued now clear the M_Key */
	struct {
		struct sm_mkey_ent {
			uint64_t guid, key;
		} *e;		/* open addressing by GUID, cap a power of 2 */
		size_t n, cap;
		bool dirty;	/* not yet written to guid2mkey */
	} mkeys;
	uint64_t mkey_tries;	/* NodeInfos retried with a stored key */
	const char *partitions;	/* --partitions file, NULL: default tables */
	struct sm_parts parts;	/* as loaded */
	unsigned pkey_blocks;	/* P_KeyTable blocks the last sweep wrote */
	unsigned pkey_read;	/* P_KeyTable blocks the last sweep read */
	int verbose;
	bool once;		/* exit after SUBNET UP */
	/* guid2lid as loaded, sorted by GUID */
	struct sm_g2l {
		uint64_t guid;
		uint16_t lid;
	} *g2l;
	unsigned ng2l;
	/* the engine */
	struct sm_req *slot[SM_WINDOW_MAX]; /* in flight, by TID's low bits */
	unsigned inflight;
	unsigned inflight_bg;	/* of them background (sm_req.bg) */
	uint64_t bg_hold_until;	/* µs: background SMPs held back until then */
	uint64_t bg_next;	/* µs: the next background SMP while held */
	struct sm_req *qhead, *qtail;	/* waiting for the window */
	uint32_t tid_seq;
	uint64_t smps_sent, smps_timeout, smps_error, smps_dropped;
	/* the sweep */
	enum sm_phase phase;
	bool resweep;		/* a trap or change asked for a heavy sweep */
	bool changed;		/* this sweep found topology changes */
	bool rereg_all;		/* the next programming is our first as master:
				 * every port gets ClientReregister (program.c) */
	uint64_t t_start, t_phase, next_light; /* µs */
	uint64_t t_trap;	/* µs: the first link trap not yet rerouted, 0 none */
	unsigned errors;	/* Sets refused in this phase */
	unsigned sweep_errors;	/* of the last sweep: its Sets again by a heavy sweep */
	unsigned missed;	/* nodes of the last heavy sweep this one did not reach */
	unsigned lft_blocks;	/* LFT blocks this programming writes */
	/* another SM (sminfo.c) */
	struct sm_port *master;	/* the master we are standby of */
	uint64_t master_guid;
	uint64_t next_poll;	/* µs */
	unsigned poll_fails;
	struct sm_port *best;	/* the best STANDBY (a master: or MASTER) found */
	uint64_t best_guid;
	uint8_t best_prio;
	bool best_master;	/* best is a second master */
	struct sm_port *ho_target; /* HANDOVER sent, ACKNOWLEDGE awaited */
	uint64_t ho_guid, ho_deadline;
	bool ho_wait_release;	/* HANDOVER held until release_left is 0 */
	unsigned release_left;	/* --m_key_release Sets not answered yet */
	uint64_t next_trap144;	/* µs: a trap 144 may start a check */
	struct sm_port *check_port; /* a trap 144's port, asked for SMInfo */
	uint64_t check_until, next_check; /* µs */
	/* multicast (mcast.c): MLIDs (bit i: 0xc000 + i) to route again,
	 * MLIDs some switch was given entries for */
	uint64_t mc_dirty[SM_MC_LIDS / 64], mc_held[SM_MC_LIDS / 64];
	bool mc_pending;
	unsigned mft_blocks;	/* MFT blocks the last multicast run wrote */
	unsigned qos_ports, qos_smps; /* SL2VL/VLArb set since the last report */
	bool qos_pending;	/* a port may need them: after a sweep, a refusal */
};

uint64_t sm_now_us(void);
void sm_log(struct sm *sm, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* smp_io.c: a request for node (directed by its path, or through port
 * `via` of it to the next hop when via != 0) or to a LID. data: 64 bytes
 * for a Set, NULL for a Get. */
struct sm_req *sm_smp_dr(struct sm *sm, const uint8_t *path, unsigned hops, uint8_t method,
			 uint16_t attr, uint32_t mod, const uint8_t *data, sm_done_fn *done);
struct sm_req *sm_smp_lid(struct sm *sm, uint16_t dlid, uint8_t method, uint16_t attr,
			  uint32_t mod, const uint8_t *data, sm_done_fn *done);
/* send what the window allows (background SMPs held back, see
 * SM_SVC_HOLD_US); check time-outs */
void sm_io_pump(struct sm *sm);
/* a service (the SA) took a MAD at now: background SMPs give way */
void sm_io_hold_bg(struct sm *sm, uint64_t now);
/* background SMPs are held back now (queued ones leave one by one) */
bool sm_io_bg_held(const struct sm *sm);
/* a received umad of len bytes for agent */
void sm_io_input(struct sm *sm, int agent, void *umad, int len);
bool sm_io_idle(const struct sm *sm);
unsigned sm_io_queued(const struct sm *sm);
/* at exit: forget every request, in flight or queued */
void sm_io_drop_all(struct sm *sm);
/* the requests, queued or in flight, whose callback is done: each handed
 * to dropped, then freed (never completed; a late answer is unmatched);
 * their count */
unsigned sm_io_drop(struct sm *sm, sm_done_fn *done, void (*dropped)(struct sm *, struct sm_req *));
/* the data part of an SMP (64 bytes at offset 64) */
static inline const uint8_t *sm_smp_data(const uint8_t *mad) { return mad + 64; }

/* discover.c */
void sm_discover_start(struct sm *sm);
unsigned sm_discover_missed(struct sm *sm);
void sm_light_start(struct sm *sm);
/* lid.c */
void sm_lid_load(struct sm *sm);
int sm_lid_assign(struct sm *sm);
void sm_lid_save(struct sm *sm);
/* route.c */
int sm_route(struct sm *sm);
/* partition.c: load --partitions (0 or -errno, said on stderr); queue
 * the P_KeyTable Sets of a programming round; whether a switch port
 * enforces partitions (PortInfo PartitionEnforcementInbound/Outbound) */
int sm_part_load(struct sm *sm);
void sm_part_program(struct sm *sm);
bool sm_part_enforce(const struct sm *sm, const struct sm_port *p);
/* program.c */
void sm_program_start(struct sm *sm);
void sm_activate_start(struct sm *sm);
/* a PortInfo Set, addressing unchanged, to every management port with a
 * LID (mkey.c's release); the number queued */
unsigned sm_program_mgmt(struct sm *sm);
/* mcast.c: hook into the SA; route every group again (after a sweep);
 * route the groups that changed, sending the MFT blocks that differ */
void sm_mcast_init(struct sm *sm);
void sm_mcast_all(struct sm *sm);
int sm_mcast_run(struct sm *sm);
/* qos.c: SL2VL and VLArb Sets for ports not done, at most about budget
 * SMPs (returns how many); the tables for OperationalVLs op_vls */
unsigned sm_qos_run(struct sm *sm, unsigned budget);
/* a heavy sweep starts: the QoS Sets not answered yet are dropped (their
 * ports written again after it) */
void sm_qos_cancel(struct sm *sm);
void sm_qos_sl2vl(uint8_t op_vls, uint8_t *d);
void sm_qos_vlarb(uint8_t op_vls, unsigned block, unsigned cap, uint8_t *d);
/* sminfo.c: ask the other SMs (false: none); poll the master; become
 * master; an SMInfo Set's AttributeModifier */
bool sm_sminfo_probe(struct sm *sm);
void sm_sminfo_poll(struct sm *sm);
void sm_sminfo_take_over(struct sm *sm);
void sm_sminfo_set(struct sm *sm, uint32_t mod, const uint8_t *data);
/* our SMInfo (64 bytes); a master's hand-over to a better standby after
 * its probe; the hand-over's time-out */
void sm_sminfo_fill(const struct sm *sm, uint8_t *d);
void sm_sminfo_check_handover(struct sm *sm);
void sm_sminfo_tick(struct sm *sm);
/* a new standby's Trap 144 to the master it found */
void sm_sminfo_announce(struct sm *sm);
/* a master asks the port of `lid` (a trap 144's issuer) for its SMInfo:
 * a new standby of higher priority is handed over to */
void sm_sminfo_check(struct sm *sm, uint16_t lid);
/* main.c: a phase's SMPs are all answered */
void sm_phase_done(struct sm *sm);

/* subnet.c internals used by discovery */
struct sm_node *sm_node_add(struct sm_subnet *sn, uint8_t type, uint8_t nports, uint64_t guid);
int sm_port_hash_add(struct sm_subnet *sn, struct sm_port *p);
void sm_lid_table_set(struct sm_subnet *sn, struct sm_port *p, uint16_t lid, uint8_t lmc);

/* mkey.c: per-port M_Keys */
bool sm_mkey_per_port(const struct sm *sm);
int sm_mkey_load(struct sm *sm);
uint64_t sm_mkey_of_guid(struct sm *sm, uint64_t guid);
void sm_mkey_save(struct sm *sm);
uint64_t sm_mkey_for(const struct sm *sm, const struct sm_req *rq);
uint64_t sm_mkey_of_port(const struct sm *sm, const struct sm_port *p);
void sm_mkey_try_all(struct sm *sm, struct sm_req *rq, sm_done_fn *done);
unsigned sm_mkey_release(struct sm *sm);

#endif
