/*
 * The connection manager of the device daemon: what the kernel's rdma_cm
 * and ib_cm are under OFED. This header is the object both layers share:
 *
 *  - cma_*.c (cma.h): the RDMA CM service librdmacm talks to
 *    (sof_cm_proto.h): event channels, rdma_cm_ids, addresses and ports,
 *    route, listen, the attributes for the QP transitions, events.
 *  - ibcm_*.c (ibcm.h): the IB CM protocol (IBA chapter 12) in MADs on
 *    QP1 (mad/); it reports to the id layer through one event callback
 *    (struct ibcm_ops) and keeps its own timers.
 *  - cm_wire.c: the message formats.
 *
 * One struct cm_id is both the user's rdma_cm_id and its IB CM
 * connection; each field says which layer writes it. When the user
 * destroys it (or its process dies) while the connection still needs to
 * say goodbye (DREQ, REJ, TIMEWAIT), the id loses its channel and lingers
 * until the protocol is done.
 *
 * Single-threaded like the rest of the daemon: no locks.
 * Names: cma_ for the id layer, ibcm_ and cm_send_ for the protocol,
 * cm_ for what both share and for the host's entry points (cm_host.h).
 */
#ifndef CM_H
#define CM_H

#include "cm_host.h"
#include "cm_state.h"
#include "cm_wire.h"
#include "mad.h"
#include "sof_cm_proto.h"
#include "sof_hmap.h"
#include "sof_list.h"
#include "sof_util.h"

#include <endian.h>
#include <infiniband/ib.h>
#include <netinet/in.h>
#include <rdma/rdma_cma.h>

/* Timing (RoCE has no SA to ask): the packet lifetime of every path,
 * 4.096 us * 2^14 = 67 ms; how long we allow the peer's CM to answer,
 * 2^17 = 537 ms, and how often a message is sent again before the
 * attempt fails (REQ: UNREACHABLE after about 4 s); how long we ask for
 * with an MRA when the user is slow to answer a REQ, 2^21 = 8.6 s; and
 * TIMEWAIT (IBA 12.9.7). */
#define CM_PKT_LIFE 14
#define CM_RESPONSE_TIMEOUT 17
#define CM_MAX_RETRIES 5
#define CM_MRA_TIMEOUT 21
/* Local ACK timeout of a connected QP whose user set none
 * (RDMA_OPTION_ID_ACK_TIMEOUT): 2^17 x 4.096 us = 537 ms, what Linux's
 * RDMA CM gives a RoCE QP (packet lifetime 16, plus one).
 * With rping's retry_count 7 a peer gone without a word is given up after
 * 4.3 s, time for several tries of its DREQ: a peer that got the last
 * message, whose ACK was lost, and left at once, ends the connection
 * with DISCONNECTED, not with a retry error on the other side. */
#define CM_ACK_TIMEOUT 17
#define CM_TIMEWAIT_NS 1000000000ull

/* RNR NAK timer of connected QPs (IBA 9.7.5.2.8, table 45): 0.64 ms */
#define CM_MIN_RNR_TIMER 12

struct cm_channel;

/* The host cm_init was given (cm_base.c). */
extern const struct cm_host *cm_host;

/* The index of pkey in the InfiniBand port's P_Key table, matched on the
 * low 15 bits as the kernel's ib_find_cached_pkey (a full member's entry
 * before a limited one's), or -ENOENT; -ENODEV without the port. */
int cm_pkey_index(uint16_t pkey);

/* A line in the host's log. */
void cm_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* State transitions and protocol decisions into the daemon's log, when
 * SOFTOFED_TRACE is set in its environment (read at start-up). */
extern bool cm_tracing;
#define cm_trace(...)                                                                              \
	do {                                                                                       \
		if (cm_tracing)                                                                    \
			cm_log(__VA_ARGS__);                                                       \
	} while (0)

/* The id. The id layer writes the user's side (channel, addresses,
 * options, cstate, listening); the protocol writes the connection (IBA
 * 12.6), state, its messages and its deadline, and reads the rest. */
struct cm_id {
	struct sof_link link;	    /* in ch->ids, or cma.lingering */
	struct sof_link timer_link; /* in ibcm.timers while timer_ns is set */
	struct sof_link sidr_link;  /* in ibcm.sidr_rcvd while SIDR_REQ_RCVD */
	struct cm_channel *ch;	    /* NULL: destroyed by its user, lingering */
	uint32_t handle;
	uint8_t ps;	       /* enum rdma_port_space */
	uint32_t qp_type;      /* enum ibv_qp_type */
	enum cma_state cstate; /* the id layer's (cma_set_state) */
	enum cm_state state;   /* the protocol's (ibcm_set_state) */

	/* addresses: src and dst as the user sees them (port included) */
	struct sockaddr_storage src, dst;
	bool bound; /* src holds a port of ours */
	bool reuseaddr, afonly;
	bool afonly_set; /* RDMA_OPTION_ID_AFONLY given: bind keeps afonly */
	uint8_t tos;
	bool tos_set;
	uint8_t ack_timeout; /* RDMA_OPTION_ID_ACK_TIMEOUT, 0: default */
	uint32_t sgid_index;
	uint8_t sgid[16], dgid[16];
	bool have_dev; /* sgid is set: the id is on our device */
	bool have_route;
	uint8_t mtu; /* enum ibv_mtu of the path */
	/* on the InfiniBand port (sofib0): the path by LID, no GRH (IBA
	 * 12.6.5: a subnet-local path) */
	bool ib;
	uint16_t slid, dlid;
	uint8_t sl;
	uint8_t pkt_life; /* PathRecord:PacketLifeTime, 0: none (RoCE) */
	/* the partition (IBA 10.9): the P_Key of the IPoIB interface the id
	 * is on (a child ib0.8001's), an AF_IB address's sib_pkey, or the
	 * REQ's on the passive side; pkey_index is its entry in the port's
	 * table, for the QP and the CM's MADs. RoCE: 0xffff at index 0. */
	uint16_t pkey, pkey_index;

	/* listening */
	uint32_t backlog, pending; /* connection requests not yet answered */
	struct cm_id *listener;	   /* a child whose request is pending */

	/* the connection (IBA 12.6) */
	uint32_t local_comm_id, remote_comm_id;
	uint64_t remote_ca_guid;
	uint32_t local_qpn, remote_qpn;
	uint32_t local_psn, remote_psn; /* starting PSNs */
	uint8_t responder_resources;	/* ours: max_dest_rd_atomic */
	uint8_t initiator_depth;	/* ours: max_rd_atomic */
	uint8_t retry_count;		/* RTS retry_cnt */
	uint8_t rnr_retry;		/* RTS rnr_retry: what the peer said */
	uint8_t local_ack_timeout;
	bool flow_control, srq;
	uint32_t qkey; /* UD: ours; SIDR: the peer's */
	uint32_t ece_vendor, ece_options;
	uint32_t remote_ece_vendor, remote_ece_options;
	uint32_t sidr_request_id;

	/* retransmission: the last message that wants an answer */
	uint8_t msg[SOF_MAD_LEN];
	bool msg_valid;
	uint64_t timer_ns;   /* deadline, 0: none */
	uint64_t timeout_ns; /* per try */
	uint32_t retries_left;
	/* the last reply, sent again when the peer repeats itself */
	uint8_t reply[SOF_MAD_LEN];
	bool reply_valid;
	struct sofd_mad_addr peer; /* where the MADs go */

	struct sof_link mcs; /* joined groups (struct cm_mc) */
};

/* An AF_IB service ID the user named that is none of A11's IP ones (a
 * bit above the low 24 set: RFC 4755's IPoIB-CM IDs, IBA Annex A3's
 * ranges) is the id's as given, as the kernel's rdma_cm takes sib_sid on
 * AF_IB (cma_get_service_id); 0 for any other address. A port space and
 * port alone (librdmacm's AF_IB form of an IP service) are not one. */
static inline uint64_t cm_raw_sid(const struct sockaddr_storage *ss)
{
	uint64_t sid;

	if (ss->ss_family != AF_IB)
		return 0;
	sid = be64toh(((const struct sockaddr_ib *)(const void *)ss)->sib_sid);
	return (sid >> 24) && !cmw_is_ip_service(sid) ? sid : 0;
}

/* The packet lifetime of an id's path: the SA's (an IB path) or
 * CM_PKT_LIFE. */
static inline uint8_t cm_pkt_life(const struct cm_id *id)
{
	return id->pkt_life ? id->pkt_life : CM_PKT_LIFE;
}

/* The local ACK timeout of a path (the REQ's Primary Local ACK Timeout,
 * IBA 12.6.5 table 106): an SA path's PacketLifeTime + 1, at most 31, as
 * the kernel's ib_cm (cm_ack_timeout) puts it in the REQ and the QP; RoCE
 * CM_ACK_TIMEOUT. */
static inline uint8_t cm_path_ack_timeout(const struct cm_id *id)
{
	if (!id->ib || !id->pkt_life)
		return CM_ACK_TIMEOUT;
	return id->pkt_life >= 30 ? 31 : (uint8_t)(id->pkt_life + 1);
}

#endif
