/*
 * The fabric's direct paths (on unless softofed-fabric --no-direct): the routes
 * the fabric process (fabric/direct.c) publishes and the hosts' engines
 * (transport/ibdirect.c) read, so that a packet whose every hop is a plain
 * LFT forward between Active ports leaves the sending host straight for
 * the receiving host's link socket, without waking the fabric process.
 *
 * The segment is a memfd the fabric sealed (F_SEAL_SHRINK, F_SEAL_GROW,
 * F_SEAL_FUTURE_WRITE, F_SEAL_SEAL) after mapping it writable: only that
 * one mapping of the fabric's writes it; a host opens it as
 * /proc/PID/fd/N (the name the fabric sends on the link), checks the
 * seals and maps it read-only. No host writes anything shared: what a
 * host sent straight it reports to the fabric in SOFL COUNT messages from
 * its link address (fabric/README.md), which the fabric adds to the
 * crossed ports' counters of the route from that host.
 *
 * A route is 0 (through the fabric, as before) for: a DLID outside
 * 1..IB_DIRECT_LIDS-1, a path through a port that is not Active or whose
 * link is down or cut, through enforcing ports whose partitions in common
 * are more than IB_DIRECT_PKEYS, to a switch itself or a simulated HCA,
 * with no LFT entry, or longer than IB_DIRECT_HOPS; and every route while
 * a capture runs (off), so that a capture sees every packet. VL15 packets
 * (SMPs), MADs to QP1 and multicast never take it (the sender's check);
 * RC, UC and unicast UD do.
 *
 * Writer: the fabric alone, under seq (odd while it writes). Readers load
 * each field once into their own memory, check seq again, then validate
 * what they copied (every index bounded) before using it.
 */
#ifndef SOF_IB_DIRECT_H
#define SOF_IB_DIRECT_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/socket.h>

#define IB_DIRECT_MAGIC 0x534f4644u /* "SOFD" */
#define IB_DIRECT_VERSION 2
#define IB_DIRECT_HOSTS 16
#define IB_DIRECT_LIDS 4096
#define IB_DIRECT_HOPS 16
#define IB_DIRECT_PKEYS 4	/* partitions a route may allow, else none */
#define IB_DIRECT_ANY_PKEY 0xff /* npkeys of a route through no enforcing port */
/* the seals a host requires before it maps the segment */
#define IB_DIRECT_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL)

struct ib_direct_host {
	uint64_t port_guid; /* the real HCA's port 1 */
	uint32_t attached;  /* 1: its link is up and it is attached */
	uint32_t addrlen;
	struct sockaddr_storage addr; /* its link socket as the fabric sees it */
};

struct ib_direct_shm {
	uint32_t magic, version;
	_Atomic uint32_t seq;
	uint32_t pid; /* the fabric's */
	uint32_t nhosts;
	_Atomic uint32_t off; /* 1: no direct path at all (a capture runs) */
	struct ib_direct_host host[IB_DIRECT_HOSTS];
	/* route[src][dlid]: 0 through the fabric; k + 1: straight to host k */
	uint8_t route[IB_DIRECT_HOSTS][IB_DIRECT_LIDS];
	/* the partitions (P_Key low 15 bits) every enforcing port on the
	 * route takes (IBA 10.9.4: a switch port checks the partition only):
	 * npkeys of them, or IB_DIRECT_ANY_PKEY (no port on it enforces); a
	 * packet of another partition goes through the fabric, which drops
	 * and counts it */
	uint8_t npkeys[IB_DIRECT_HOSTS][IB_DIRECT_LIDS];
	uint16_t pkeys[IB_DIRECT_HOSTS][IB_DIRECT_LIDS][IB_DIRECT_PKEYS];
};

/* SOFL COUNT (host to fabric): the name field holds up to this many
 * records of 16 bytes, big-endian: DLID (2), 0 (2), packets (4), words
 * (8, 4-byte words LRH through ICRC) sent straight since the last COUNT;
 * a record of DLID 0 ends the list. */
#define IB_DIRECT_COUNT_RECS 4

#endif
