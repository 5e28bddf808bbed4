/*
 * The subnet administrator (IBA 15): answers SA queries from the subnet
 * model (sm/subnet.h) and keeps the SA's own state: service records with
 * their leases, multicast groups and their members, event subscriptions
 * (InformInfo) and the Reports that forward Notices to them.
 *
 * The core (sm/sa.c and the sa_*.c files) does no I/O: sm_sa_process takes
 * one request and builds its response; Reports leave through the send
 * callback of struct sm_sa_ops. sm/sa_umad.c puts it on libibumad as one
 * of the SM loop's services (struct sm_service): an SA agent registered
 * with RMPP, so GetTable/GetMulti responses of any length leave in
 * segments (IBA 13.6).
 *
 * Methods: Get, GetTable (every record type of mad/sa.h), Set and Delete of
 * ServiceRecord and MCMemberRecord, Set of InformInfo, GetMulti of
 * MultiPathRecord, ClassPortInfo; errors as SA status codes (15.2.1.2).
 *
 * Multicast: the SA keeps groups (MGID, MLID, parameters, members); the
 * SM computes the spanning tree of a group and its MFTs. It learns which
 * groups changed from ops->mcast_changed and reads a group's member ports
 * with sm_sa_mcast_ports.
 *
 * Threading: everything runs on the SM's thread (the sm_service contract:
 * no sweep changes the model meanwhile). Names: sm_sa_.
 */
#ifndef SOF_SM_SM_SA_H
#define SOF_SM_SM_SA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sa.h"
#include "subnet.h"

/* Where a request came from / where a Report goes (the umad address) */
struct sm_sa_addr {
	uint16_t lid;
	uint8_t sl;
	uint32_t qpn, qkey;
	uint16_t pkey_index;
	bool grh;
	uint8_t gid[16];
};

struct sm_sa_ops {
	/* Send an unsolicited MAD (a Report) of len bytes; the transport
	 * retries it timeout_ms apart up to retries times until a response
	 * with its TID comes (sm_sa_process sees that ReportResp). */
	int (*send)(void *ctx, const struct sm_sa_addr *to, const uint8_t *mad, size_t len,
		    unsigned timeout_ms, unsigned retries);
	/* A multicast group was created, changed its members, or was
	 * deleted (then it has no ports): the SM recomputes its tree. */
	void (*mcast_changed)(void *ctx, uint16_t mlid);
};

struct sm_sa;

struct sm_sa_stats {
	uint64_t requests, answered, errors, dropped, reports_sent, records;
};

/* A new SA over sn (which it reads, never writes). ops may be NULL (no
 * Reports, no multicast notifications). NULL on no memory. */
struct sm_sa *sm_sa_new(struct sm_subnet *sn, const struct sm_sa_ops *ops, void *ctx);
void sm_sa_free(struct sm_sa *sa);
const struct sm_sa_stats *sm_sa_stats(const struct sm_sa *sa);
/* The most bytes of records one answer carries (0: the default, 8 MiB);
 * a GetTable that would need more is answered ERR_NO_RESOURCES. */
void sm_sa_set_max_table(struct sm_sa *sa, size_t bytes);
/* ClassPortInfo:CapabilityMask2 the SA advertises (default
 * SOF_SA_CAP2_SENDONLY_FULL); tests clear it to play an SA without
 * send-only full members */
void sm_sa_set_cap_mask2(struct sm_sa *sa, uint32_t mask);
/* PathRecord:PacketLifeTime of every path (default 18, OpenSM's); the
 * RDMA CM takes its local ACK timeout from it (lifetime + 1) */
void sm_sa_set_pkt_life(struct sm_sa *sa, uint8_t life);
/* PathRecord:SL of the paths in partition pkey (15 bits; a partition's
 * sl= in partitions.conf, which OpenSM gives its paths too); others SL 0.
 * -ENOSPC beyond SA_MAX_PART_SL partitions. */
int sm_sa_set_part_sl(struct sm_sa *sa, uint16_t pkey, uint8_t sl);

/* Handle one SA MAD of len bytes (256, or a reassembled RMPP message)
 * from `from`. Returns the length of the response it wrote to *resp
 * (malloc'd, the caller frees; RMPP-active when longer than a MAD or a
 * table), 0 when nothing is to be sent (dropped, or a ReportResp), or
 * -ENOMEM. now_us: the caller's clock, for leases. */
long sm_sa_process(struct sm_sa *sa, const struct sm_sa_addr *from, const uint8_t *mad, size_t len,
		   uint64_t now_us, uint8_t **resp);

/* Expire service leases; call now and then. */
void sm_sa_tick(struct sm_sa *sa, uint64_t now_us);
/* The model changed: ports that came or went are reported to
 * subscribers (traps 64 / 65, IBA 14.2.5.1), and members of groups whose
 * ports left are dropped. */
void sm_sa_subnet_changed(struct sm_sa *sa);

/* Forward a Notice to every subscriber whose InformInfo it matches
 * (IBA 13.4.8.3): a Report to each. Returns how many were sent. */
unsigned sm_sa_report(struct sm_sa *sa, const struct sof_sa_notice *n);

/* ---- multicast, for the SM ---- */
/* Create a group as a FullMember-less SA-owned group (the IPoIB
 * broadcast group of a partition at start), with the partition's SL
 * (sm_sa_set_part_sl first): 0 or -errno (-EEXIST). */
int sm_sa_mcast_create(struct sm_sa *sa, const uint8_t mgid[16], uint16_t pkey, uint32_t qkey,
		       uint8_t mtu, uint8_t rate);
/* The member ports of the group with MLID mlid (up to max into ports);
 * returns how many the group has (may exceed max), -ENOENT when none. */
int sm_sa_mcast_ports(const struct sm_sa *sa, uint16_t mlid, struct sm_port **ports, unsigned max);
/* The MLIDs in use, up to max; returns how many there are. */
unsigned sm_sa_mcast_mlids(const struct sm_sa *sa, uint16_t *mlids, unsigned max);

/* The IPoIB broadcast group of a partition (RFC 4391):
 * ff12:401b:PKEY:0:0:0:ffff:ffff */
void sm_sa_ipoib_mgid(uint8_t mgid[16], uint16_t pkey);

/* Register the SA as a service of the SM's loop (sm/sa_umad.c) */
int sm_sa_service_init(void);
/* The SA of the service (NULL before it started), for the SM's
 * sm_sa_mcast_ports / sm_sa_mcast_mlids / sm_sa_report, and the function
 * the SM's multicast routing gives to be called with each MLID whose
 * group changed (created, joined, left, deleted): there it computes the
 * group's spanning tree and writes the MFTs. Until it does, groups are
 * kept and answered but not routed. */
struct sm_sa *sm_sa_get(void);
void sm_sa_mcast_hook(void (*fn)(void *ctx, uint16_t mlid), void *ctx);
/* A trap's Notice (the 64 bytes of an SMP's data) the SM received: the
 * SA forwards it to its subscribers (sm_sa_report). */
void sm_sa_trap_in(const uint8_t *smp_data);

#endif
