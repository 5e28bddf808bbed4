/*
 * The engine's InfiniBand port (iblink.c), what a host sees of it: its
 * start on a link (fabric/README.md's link protocol: IB packets LRH..VCRC
 * in UDP datagrams, SOFL HELLO/BYE/ASSIGN), its socket and tick for the
 * host's loop, its attributes as PortInfo has them (IBA 14.2.5.6) and the
 * setters the subnet management agent calls, and its counters.
 *
 * A path leaves by this port when tp_path.link is TP_LINK_IB; its address
 * is then the DLID (and, when global, the GIDs of a GRH). Packets of a
 * LID-routed path carry no GIDs, so the classifier sees their source and
 * destination as LID GIDs (tp_ib_lid_gid): a connected QP's path names its
 * peer by the LID GID of its DLID, and the source check of recv.c holds
 * for both link layers unchanged.
 *
 * Same lock contract as tp.h: one thread at a time.
 */
#ifndef TP_IB_H
#define TP_IB_H

#include "ib_wire.h"
#include "tp.h"

#include <sys/socket.h>

#define TP_IB_PKEYS 64u /* P_Key table entries: two blocks of 32 (IBA 14.2.5.7) */

/* The port as PortInfo and NodeInfo describe it; GUIDs in host order. */
struct tp_ib_attr {
	uint8_t state;	    /* enum ibv_port_state: DOWN, INIT, ARMED, ACTIVE */
	uint8_t phys_state; /* enum ib_phys_state */
	uint8_t port_num;   /* the port's number on its node (ASSIGN), 1 by default */
	uint8_t lmc;
	uint16_t lid, sm_lid;
	uint8_t sm_sl;
	uint8_t active_mtu; /* enum ibv_mtu */
	uint8_t vl_cap;	    /* data VLs: VL0 .. vl_cap - 1 */
	uint64_t node_guid, port_guid, subnet_prefix;
	uint16_t pkeys[TP_IB_PKEYS]; /* 0: empty */
	uint8_t sl2vl[16];
	char peer[IB_SOFL_NAME_LEN + 1]; /* the far end's name (its HELLO) */
	/* the fabric's direct-path segment, /proc/PID/fd/N (ibdirect.c), "": none */
	char direct[IB_SOFL_NAME_LEN + 1];
};

/* What the port counted: PortCounters (IBA 16.1.3.5) and the reasons. */
struct tp_ib_counters {
	uint64_t rcv_pkts, xmit_pkts; /* PortRcvPkts, PortXmitPkts */
	uint64_t rcv_data, xmit_data; /* PortRcvData, PortXmitData (4-byte words) */
	uint64_t rcv_errors;	      /* PortRcvErrors: malformed, VCRC, ICRC */
	uint64_t xmit_discards;	      /* PortXmitDiscards: not Active, link down */
	uint64_t vl15_dropped;	      /* VL15Dropped */
	uint64_t link_downed;	      /* LinkDownedCounter */
	uint64_t pkey_violations;     /* P_Key mismatches at the HCA (IBA 10.9.3) */
	uint64_t dlid_drops;	      /* not our LID */
	uint64_t state_drops;	      /* received in a state that takes none of it */
	uint64_t link_msgs;	      /* SOFL messages taken */
	uint64_t link_bad;	      /* SOFL malformed, or from another address */
	uint64_t drops[IB_DROP_NR];   /* by ib_parse's reason */
	/* UDP datagrams handed to the kernel: a GSO run of packets is one
	 * (after the older fields: a program's slot page keeps their words in place) */
	uint64_t xmit_sends;
	uint64_t direct_bad;	      /* from a host, on no direct route ending here */
};

/* Where and as what the port attaches. */
struct tp_ib_config {
	struct sockaddr_storage peer; /* the far end: the fabric or another host */
	socklen_t peer_len;
	uint16_t local_port;	       /* UDP port to bind (0: any) */
	const char *name;	       /* the node's name in the topology ("H1") */
	uint64_t node_guid, port_guid; /* until ASSIGN gives others */
	/* the attributes or the link changed (publish them) */
	void (*changed)(void);
	/* add what the programs' members counted (tp_ib_counters) */
	void (*add_counters)(struct tp_ib_counters *sum);
};

struct sof_gid_shm;

/* Start the port: its UDP socket and the first HELLO. 0 or -errno. */
int tp_ib_start(const struct tp_ib_config *c);
/* Say BYE and close the socket. */
void tp_ib_stop(void);
/* Whether the port exists; its socket (poll for input, then tp_ib_rx). */
bool tp_ib_on(void);
int tp_ib_fd(void);
/* Read what the socket holds (bounded), then send the ACKs that became due. */
void tp_ib_rx(void);
/* The same from another member of the link's group (a slot's socket the
 * daemon reads, or a program's own): the number of datagrams read. */
int tp_ib_rx_fd(int fd);
/* Daemon: a new member of the link socket's SO_REUSEPORT group (the same
 * family, address and port). fd or -errno. */
int tp_ib_member_socket(void);
/* Program: run the packet half of the port on member socket fd (not
 * closed here), with the attributes the daemon publishes in shm and the
 * counters in cnt. 0, -EBUSY (a port runs), -ENODEV (no port published). */
int tp_ib_attach(int fd, const struct sof_gid_shm *shm, struct tp_ib_counters *cnt);
void tp_ib_detach(void);
/* Once a second: HELLO, and the link goes down after 3 s without one. */
void tp_ib_tick(void);

const struct tp_ib_attr *tp_ib_attr(void);
/* The port's counters: in the daemon with its programs' (add_counters). */
const struct tp_ib_counters *tp_ib_counters(void);
/* What this process counted itself. */
const struct tp_ib_counters *tp_ib_own_counters(void);

/* The subnet management agent's PortInfo Set (IBA 14.2.5.6): PortState
 * (enum ibv_port_state; 0 NoStateChange) with the transitions of IBA
 * 7.2: DOWN from any (the link retrains), ARMED from INIT, ACTIVE from
 * ARMED; -EINVAL otherwise. */
int tp_ib_set_state(uint8_t state);
/* LID, LMC, SM LID and SM SL; MTU (enum ibv_mtu); subnet prefix. */
int tp_ib_set_lid(uint16_t lid, uint8_t lmc, uint16_t sm_lid, uint8_t sm_sl);
int tp_ib_set_mtu(uint8_t mtu);
void tp_ib_set_subnet_prefix(uint64_t prefix);
/* P_KeyTable and SL2VLMappingTable entries. */
int tp_ib_set_pkey(unsigned index, uint16_t pkey);
int tp_ib_set_sl2vl(unsigned sl, uint8_t vl);
/* PortPhysicalState Disabled (true) or Polling again (IBA 14.2.5.6):
 * a disabled port says so in its HELLOs, which keeps the link down. */
void tp_ib_disable(bool off);

/* The LRH of the packet being classified, when it came by this port (a
 * hook's question: the QP0 hook answers to the SLID); false otherwise. */
bool tp_ib_rx_lrh(uint16_t *slid, uint16_t *dlid, uint8_t *sl);

/* A packet the port took failed a QP's P_Key check (recv.c): counted
 * with the port's own P_Key violations. */
void tp_ib_pkey_violation(void);
/* Whether pkey matches an entry of the port's table (IBA 10.9.3). */
bool tp_ib_pkey_ok(uint16_t pkey);

/* Program: the TP_HOOK_MCAST hook of a program's engine on the port. A
 * UD QP of the program sent a datagram to a group (requester.c
 * send_mcast): the fabric carries it to the group's other ports, not back
 * to this one, so it goes to the daemon too, over loopback from the
 * program's member of the link socket's group, and the daemon delivers
 * it to this host's QPs attached to the group (tp_ib_ud_loop_input) as
 * when it sends one itself. A datagram from the net (none is steered
 * here: DestQP 0xFFFFFF goes to the daemon) is dropped. */
void tp_ib_ud_mcast_loop(const struct roce_hdr *h, const uint8_t *payload, uint32_t paylen,
			 const struct roce_addr *a, bool from_net);
/* Daemon: whether datagram p of r bytes from src came over loopback from
 * a member of the link socket's group (its port; only the daemon's user
 * binds there); if so it was tp_ib_ud_mcast_loop's and is delivered to
 * the group's QPs here, or dropped when malformed. */
bool tp_ib_ud_loop_input(const struct sockaddr_storage *src, socklen_t srclen, const uint8_t *p,
			 size_t r);

/* The GID the classifier sees for a LID on a LID-routed path: fe80::LID
 * (never on the wire). */
void tp_ib_lid_gid(uint16_t lid, uint8_t gid[16]);

#endif
