/*
 * What the SA's files share (sm/sa.c, sa_tables.c, sa_path.c, sa_mcast.c,
 * sa_inform.c): the SA's state (service records, multicast groups,
 * subscriptions), the request being answered, and the record collector
 * every Get/GetTable runs its candidates through (sa_emit: a record is
 * kept when it matches the query under the ComponentMask).
 */
#ifndef SOF_SM_SA_INT_H
#define SOF_SM_SA_INT_H

#include "sm_sa.h"
#include "smp.h"

/* at most this many bytes of records in one response: a GetTable that
 * would need more is answered ERR_NO_RESOURCES rather than building an
 * unbounded RMPP message */
#define SA_MAX_TABLE_BYTES (8u << 20)
#define SA_MAX_SERVICES 4096
#define SA_MAX_GROUPS 1024   /* MLIDs 0xc000..0xc3ff */
#define SA_MAX_MEMBERS 65536 /* members of one group */
#define SA_MAX_SUBS 4096
/* PacketLifeTime the paths carry unless sm_sa_set_pkt_life says
 * otherwise (4.096 us * 2^18, about 1 s: OpenSM's packet_life_time
 * default, 0x12) */
#define SA_PKT_LIFE 18
#define SA_MAX_PART_SL 64 /* partitions with an SL of their own */
/* ClassPortInfo:RespTimeValue: 4.096 us * 2^16, about 268 ms, what
 * OpenSM says for its 200 ms transaction time-out; clients time their
 * queries by it (IBA 13.4.6.2) */
#define SA_RESP_TIME 16
#define SA_REPORT_TIMEOUT_MS 200
#define SA_REPORT_RETRIES 3

struct sa_service {
	struct sof_sa_service rec;
	uint64_t expires_us; /* 0: never */
};

struct sa_member {
	uint8_t gid[16];
	uint8_t join_state;
	bool proxy;
};

struct sa_group {
	struct sof_sa_mcmember p; /* the group's parameters (port_gid, join_state unused) */
	struct sa_member *m;
	unsigned nm, cap;
	bool sa_owned; /* made by the SA at start; kept with no members */
};

struct sa_sub {
	struct sof_sa_inform ii;
	uint8_t subscriber_gid[16];
	struct sm_sa_addr to;
	uint16_t enm;
};

struct sm_sa {
	struct sm_subnet *sn;
	const struct sm_sa_ops *ops;
	void *ctx;
	struct sm_sa_stats st;
	size_t max_table;   /* bytes of records in one answer */
	uint32_t cap_mask2; /* ClassPortInfo:CapabilityMask2 */
	uint8_t pkt_life;   /* PathRecord:PacketLifeTime */
	struct {
		uint16_t pkey; /* 15 bits */
		uint8_t sl;
	} part_sl[SA_MAX_PART_SL]; /* PathRecord:SL of a partition's paths */
	unsigned npart_sl;
	uint64_t now_us;
	struct sa_service *svc;
	unsigned nsvc, svc_cap;
	struct sa_group *grp;
	unsigned ngrp, grp_cap;
	uint32_t mgid_seq;
	struct sa_sub *sub;
	unsigned nsub, sub_cap;
	uint16_t sub_enum;
	uint32_t report_tid;
	/* ports known active at the last sm_sa_subnet_changed (traps 64/65) */
	uint64_t *known;
	unsigned nknown;
	bool known_valid;
};

/* the request being answered */
struct sa_q {
	const struct sof_sa_req *r;
	const struct sm_sa_addr *from;
	bool trusted; /* SM_Key matched: M_Key and SM_Key shown */
};

/* the records collected for one response */
struct sa_out {
	const struct sof_sa_rec_desc *d;
	const uint8_t *query;
	uint64_t mask;
	uint8_t *buf; /* records at stride attr_offset * 8 */
	size_t len, cap;
	unsigned n;
	unsigned limit;	  /* stop after this many (Get: 2, to see "too many") */
	size_t max_bytes; /* of records: beyond, -E2BIG */
	int err;	  /* -ENOMEM, -E2BIG */
	uint16_t status;  /* set by a generator that refuses the query */
};

/* Keep rec (d->len bytes) when it matches; returns false when the
 * collector is full (stop generating). */
bool sa_emit(struct sa_out *o, const uint8_t *rec);
/* Whether the query selects component c */
static inline bool sa_has(const struct sa_out *o, unsigned c) { return o->mask >> c & 1; }
static inline uint64_t sa_qget(const struct sa_out *o, unsigned c)
{
	return sof_sa_get(o->d, o->query, c);
}

/* The GID of a port (the subnet prefix, the port GUID) */
void sa_port_gid(const struct sm_subnet *sn, const struct sm_port *p, uint8_t gid[16]);
/* The port a GID names (our prefix or the link-local one); NULL if none */
struct sm_port *sa_port_by_gid(const struct sm_subnet *sn, const uint8_t gid[16]);
/* Port p's membership of partition pkey (IBA 10.9.1.1): 0 none, 1
 * limited, 2 full; from the table the SM wrote (sm/partition.c), else the
 * default partition alone, as the SMA starts (sa_path.c). */
unsigned sa_pkey_memb(const struct sm_port *p, uint16_t pkey);
/* The LID a port answers by (a switch's external port: port 0's) */
uint16_t sa_port_lid(const struct sm_port *p);
/* the SL a partition's paths and SA-made groups carry (sa.c) */
uint8_t sa_part_sl(const struct sm_sa *sa, uint16_t pkey);

/* A switch's LFT entry for lid: what the SM wrote (lft_hw), or what it
 * computed where it has written nothing yet (0xfe, unknown); 255: none */
static inline uint8_t sa_lft(const struct sm_switch *sw, uint16_t lid)
{
	uint8_t e = sw->lft_hw ? sw->lft_hw[lid] : 0xfe;

	if (e == 0xfe)
		e = sw->lft ? sw->lft[lid] : 0xff;
	return e;
}

/* Generators: each runs its candidates through sa_emit */
void sa_gen_node(struct sm_sa *sa, const struct sa_q *q, struct sa_out *o);
void sa_gen_portinfo(struct sm_sa *sa, const struct sa_q *q, struct sa_out *o);
void sa_gen_link(struct sm_sa *sa, const struct sa_q *q, struct sa_out *o);
void sa_gen_switchinfo(struct sm_sa *sa, const struct sa_q *q, struct sa_out *o);
void sa_gen_lft(struct sm_sa *sa, const struct sa_q *q, struct sa_out *o);
void sa_gen_mft(struct sm_sa *sa, const struct sa_q *q, struct sa_out *o);
void sa_gen_guidinfo(struct sm_sa *sa, const struct sa_q *q, struct sa_out *o);
void sa_gen_pkey(struct sm_sa *sa, const struct sa_q *q, struct sa_out *o);
void sa_gen_sminfo(struct sm_sa *sa, const struct sa_q *q, struct sa_out *o);
void sa_gen_path(struct sm_sa *sa, const struct sa_q *q, struct sa_out *o);
void sa_gen_service(struct sm_sa *sa, const struct sa_q *q, struct sa_out *o);
void sa_gen_mcmember(struct sm_sa *sa, const struct sa_q *q, struct sa_out *o);
void sa_gen_inform_rec(struct sm_sa *sa, const struct sa_q *q, struct sa_out *o);

/* GetMulti(MultiPathRecord): PathRecords into o (its d is PathRecord) */
uint16_t sa_multipath(struct sm_sa *sa, const struct sa_q *q, struct sa_out *o);

/* Set/Delete: answer with status, the record written back into rec */
uint16_t sa_service_set(struct sm_sa *sa, const struct sa_q *q, uint8_t *rec);
uint16_t sa_service_delete(struct sm_sa *sa, const struct sa_q *q, uint8_t *rec);
uint16_t sa_mcmember_join(struct sm_sa *sa, const struct sa_q *q, uint8_t *rec);
uint16_t sa_mcmember_leave(struct sm_sa *sa, const struct sa_q *q, uint8_t *rec);
uint16_t sa_inform_set(struct sm_sa *sa, const struct sa_q *q, uint8_t *rec);
void sa_services_expire(struct sm_sa *sa, uint64_t now_us);
void sa_mcast_drop_gone(struct sm_sa *sa);
void sa_mcast_free(struct sm_sa *sa);
void sa_inform_free(struct sm_sa *sa);
/* Trap 66/67 (group created/deleted) to subscribers */
void sa_report_mcast(struct sm_sa *sa, uint16_t trap, const uint8_t mgid[16]);

#endif
