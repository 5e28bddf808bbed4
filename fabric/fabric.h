/*
 * The fabric process: switches, simulated HCAs and links, built from an
 * ibnetdiscover / ibsim topology file; real hosts attach their HCA's port
 * over UDP (fabric/README.md, "Link protocol").
 *
 * Single-threaded: the main loop (main.c) reads datagrams from real hosts
 * and control requests, and every packet then moves through the fabric
 * from a queue (fab_run), so a node is never re-entered while it handles
 * a packet; a directed-route SMP may go on to the next node without the
 * queue (node.c's dr_hop), only as a node's last step and with the queue
 * empty, which is the same order. Each simulated node's management
 * state is a node model of mad/smp.h; its SMA and PMA are mad/sma.c and
 * mad/pma.c.
 *
 * Files: topo.c (the topology file), pkt.c (IB packets: sealing, link
 * checks, MAD packets, UD parse; LRH, CRCs and SOFL are
 * transport/ib_wire.c's), node.c (a packet at a switch or a simulated HCA),
 * link.c (real hosts' links, link state, cut and restore, traps),
 * main.c (arguments, control socket, loop). Names: fab_.
 */
#ifndef FAB_FABRIC_H
#define FAB_FABRIC_H

#include "ib_wire.h"
#include "smp.h"

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define FAB_NAME_LEN 64
#define FAB_MAX_PKT 4400 /* LRH+GRH+headers+4096+ICRC+VCRC, rounded up */

/* ---- the topology file (topo.c) ---- */

struct topo_port {
	int peer; /* index of the node at the other end, -1: none */
	uint8_t peer_port;
};

struct topo_node {
	enum sof_node_type type;
	unsigned nports;
	char name[FAB_NAME_LEN];
	uint64_t guid;		 /* node GUID (from the file or assigned) */
	uint64_t port_guid;	 /* CA: port 1's GUID; ports follow */
	struct topo_port *ports; /* [0..nports] */
};

struct topo {
	unsigned nnodes;
	struct topo_node *nodes;
};

/* Parse FILE. 0, or -errno after printing "FILE:LINE: what" to stderr. */
int topo_load(struct topo *t, const char *path);
void topo_free(struct topo *t);
int topo_find(const struct topo *t, const char *name);

/* ---- packets (pkt.c) ---- */

#define FAB_LRH_LEN IB_LRH_LEN
#define FAB_GRH_LEN IB_GRH_LEN
#define FAB_BTH_LEN ROCE_BTH_LEN
#define FAB_DETH_LEN ROCE_DETH_LEN
#define FAB_ICRC_LEN ROCE_ICRC_LEN
#define FAB_VCRC_LEN IB_VCRC_LEN
#define FAB_MAD_PKT_LEN                                                                            \
	(FAB_LRH_LEN + FAB_BTH_LEN + FAB_DETH_LEN + 256 + FAB_ICRC_LEN + FAB_VCRC_LEN)
#define FAB_OP_UD_SEND 0x64
#define FAB_GSI_QKEY 0x80010000u

/* The LRH (ib_lrh_read), the CRCs (ib_icrc, ib_vcrc) and the SOFL link
 * control messages (ib_sofl_*) are transport/ib_wire.h's. */

/* Recompute ICRC and VCRC of a packet of len bytes (VCRC included). */
void fab_pkt_seal(uint8_t *p, size_t len);
/* Only the VCRC (a switch changes nothing the ICRC covers). */
void fab_pkt_vseal(uint8_t *p, size_t len);
/* Why fab_pkt_check refused a datagram (counted as PortRcvErrors) */
enum fab_bad { FAB_OK = 0, FAB_BAD_SHORT, FAB_BAD_LVER, FAB_BAD_PKTLEN, FAB_BAD_VCRC, FAB_BAD_MAX };
extern const char *const fab_bad_names[FAB_BAD_MAX];
enum fab_bad fab_pkt_check(const uint8_t *p, size_t len, struct ib_lrh *l);
/* A UD packet carrying one 256-byte MAD: VL15 for QP0, VL0 else. Writes
 * FAB_MAD_PKT_LEN bytes, not sealed (fab_pkt_seal: see fab_xmit). */
void fab_mad_pkt(uint8_t *p, uint16_t dlid, uint16_t slid, uint8_t sl, uint16_t pkey, uint32_t dqp,
		 uint32_t sqp, uint32_t qkey, const uint8_t *mad);
/* The MAD of a UD packet to QP0/QP1 (LNH 2 or 3): 0 and its pieces, or -1. */
struct ud_info {
	uint16_t pkey;
	uint32_t dqp, sqp, qkey;
	const uint8_t *mad;
	size_t madlen;
	bool global;
};
int fab_ud_parse(const uint8_t *p, size_t len, const struct ib_lrh *l, struct ud_info *u);

/* ---- the fabric ---- */

struct fab_node;

struct fab_port {
	struct fab_node *peer;
	uint8_t peer_port;
	bool cut; /* cut by a fabric command */
};

/* A real host attached to an HCA of the topology */
struct fab_host {
	struct sockaddr_storage addr;
	socklen_t addrlen;
	bool attached;
	/* it mapped the direct-path segment (its SOFL DIRECT said so since it
	 * attached): only then do routes from or to it go straight */
	bool direct;
	uint8_t phys;	     /* as its HELLOs say */
	uint64_t last_hello; /* ns */
};

struct fab_node {
	unsigned index;
	unsigned sim_clients; /* ibsim clients attached here (sim.c) */
	char name[FAB_NAME_LEN];
	bool real;
	struct fab_host host; /* real HCAs only */
	struct sof_node *m;   /* the model: SMA/PMA state, LFT, counters */
	uint64_t trap_tid;
	/* the last trap this switch sent, sent again each tick until the SM
	 * represses it (IBA 13.4.8.3) or FAB_TRAP_RESENDS times */
	bool trap_pending;
	uint8_t trap_resends;
	uint8_t trap_mad[256];
	struct fab_port port[]; /* [0..nports] */
};

struct fab_stats {
	uint64_t pkts, forwarded, delivered, to_hosts, from_hosts;
	uint64_t bad[FAB_BAD_MAX];
	uint64_t no_route, port_down, pkey, not_mine, unknown_host, sofl_bad, traps;
	uint64_t trap_resends, trap_repressed;
	uint64_t tx_lost; /* to hosts, the socket full */
	uint64_t smp_drop, mad_drop;
	uint64_t loop, queue_full; /* forwarding loops cut, queue overflow */
	uint64_t sim_from_clients, sim_to_clients, sim_unclaimed, sim_lost;
	uint64_t captures, captured, cap_dropped; /* capture.c */
	/* packets the hosts sent straight (direct.c) */
	uint64_t direct;
};

/* a program attached through ibsim's client protocol (sim.c) */
#define FAB_SIM_CLIENTS 10
#define FAB_SIM_REQ_LEN 288 /* ibsim's struct sim_request */
/* MADs for a client wait for the end of the loop's turn (fab_sim_flush),
 * at most this many; its socket holds 10 (net.unix.max_dgram_qlen) */
#define FAB_SIM_OUTQ 8
struct fab_sim_client {
	int fd;		  /* our "BASE:outN", connected to its "BASE:inPID" */
	uint32_t pid, qp; /* pid 0: slot free */
	bool issm;
	struct fab_node *node;
	unsigned nout;
	uint8_t out[FAB_SIM_OUTQ][FAB_SIM_REQ_LEN];
};

struct fabric {
	unsigned nnodes;
	struct fab_node **nodes;
	int udp; /* real hosts' links */
	struct fab_stats st;
	/* the packet queue, and the entries it used kept for reuse */
	struct fab_qpkt *qhead, **qtail, *qfree;
	unsigned qlen, nfree;
	/* directed-route SMPs go hop by hop through the queue as packets,
	 * not along their path at once (node.c's dr_hop): a test compares */
	bool hop_by_hop;
	unsigned cur_hops; /* hops of the packet being handled (fab_run) */
	bool cur_sealed;   /* and whether its ICRC and VCRC are computed */
	/* its queue entry, which a unicast forward (move set around its
	 * fab_xmit: the packet is not used after) takes on to the next hop
	 * instead of a copy (cur_moved) */
	struct fab_qpkt *cur_q;
	bool move, cur_moved;
	int sim_ctl; /* ibsim's control socket, -1: not enabled */
	char sim_base[64];
	struct fab_sim_client sim[FAB_SIM_CLIENTS];
	/* answers to clients wait for fab_sim_flush (main.c: when this
	 * process runs on one CPU), else leave at once */
	bool sim_batch;
	struct fab_cap *cap; /* the capture running, NULL: none (capture.c) */
	/* the direct paths' segment, NULL: none (--no-direct; direct.c) */
	struct fab_direct *direct;
};

/* IB has no hop limit in its headers; a packet is dropped after this many
 * switch hops (a forwarding loop of badly programmed tables), and the queue
 * takes no more than FAB_QUEUE_MAX packets (a multicast loop's flood). */
#define FAB_MAX_HOPS 64
#define FAB_QUEUE_MAX 65536

/* Build the fabric of topo: nodes, models, links up between simulated
 * nodes. real: the names of the HCAs real hosts will attach. */
int fab_build(struct fabric *f, const struct topo *t, char **real, unsigned nreal);
void fab_free(struct fabric *f);
struct fab_node *fab_find(struct fabric *f, const char *name);

/* Queue a packet of len bytes arriving at node n on port (copied).
 * from_host: it came from a real host's link, so the port checks it
 * (length, LVer, PktLen, VCRC); a packet one of our own nodes sent is
 * whole by construction and is not checked again at every hop. */
void fab_enqueue(struct fabric *f, struct fab_node *n, unsigned port, const uint8_t *p,
		 size_t len, bool from_host, bool sealed);
/* Move every queued packet on until none is left. */
void fab_run(struct fabric *f);
/* Send a packet out of n's port (counting, link and state checks).
 * sealed: its ICRC and VCRC are computed. Packets the fabric makes are
 * not, while they stay inside (no internal hop checks them); they are
 * sealed when they leave to a real host. */
void fab_xmit(struct fabric *f, struct fab_node *n, unsigned port, uint8_t *p, size_t len,
	      bool sealed);

/* P_Key matching (IBA 10.9.3) and the P_Key of an IBA transport packet
 * (-1: none) */
bool fab_pkey_ok(const struct sof_port *p, uint16_t pkey, bool sw);
int fab_pkt_pkey(const uint8_t *p, size_t len);

/* node.c: a packet at a node (its link already checked) */
void fab_node_input(struct fabric *f, struct fab_node *n, unsigned port, uint8_t *p, size_t len);

/* link.c: link state and real hosts */
bool fab_link_up(const struct fab_node *n, unsigned port);
/* Re-evaluate a link after an event on either end; sends trap 128 when a
 * switch's port changed state. */
void fab_link_update(struct fabric *f, struct fab_node *n, unsigned port);
void fab_link_cut(struct fabric *f, struct fab_node *n, unsigned port, bool cut);
void fab_udp_input(struct fabric *f, const uint8_t *p, size_t len,
		   const struct sockaddr_storage *from, socklen_t fromlen);
/* A datagram from the fabric's socket: one packet or SOFL message, or
 * (seg > 0: UDP GRO) a host's GSO run cut into packets of seg bytes, the
 * last shorter or equal, each to fab_udp_input; how many. */
unsigned fab_udp_datagram(struct fabric *f, const uint8_t *p, size_t len, size_t seg,
			  const struct sockaddr_storage *from, socklen_t fromlen);
void fab_host_send(struct fabric *f, struct fab_node *n, const uint8_t *p, size_t len,
		   bool sealed);
/* Once a second: HELLOs to attached hosts, expiry of silent ones. */
void fab_tick(struct fabric *f, uint64_t now);
/* Send what waits for real hosts (fab_host_send batches them). */
void fab_tx_flush(struct fabric *f);
/* The SM repressed the trap of TID tid at switch sw: true when it was
 * sw's pending trap. */
bool fab_trap_repressed(struct fabric *f, struct fab_node *sw, uint64_t tid);
#define FAB_TRAP_RESENDS 30
/* A trap of simulated node n to its SM (128: a switch's port state
 * change, 256: bad M_Key), sent again each tick until repressed. */
void fab_trap(struct fabric *f, struct fab_node *n, uint16_t num);

/* node.c: an SMP for node n's own SMA from a program on it (sim.c) */
void fab_node_local_smp(struct fabric *f, struct fab_node *n, uint8_t *mad, bool lid_routed,
			uint16_t req_slid);

/* sim.c: ibsim's client protocol (`--ibsim`) */
int fab_sim_open(struct fabric *f, const char *base);
void fab_sim_ctl(struct fabric *f);
/* One datagram from client c, if any (false: none waited) */
bool fab_sim_input(struct fabric *f, struct fab_sim_client *c);
/* Give a MAD that reached node n (and no agent of the fabric's answered)
 * to the program attached there; false when none is. With sim_batch it
 * leaves at the next fab_sim_flush (or once FAB_SIM_OUTQ wait). */
bool fab_sim_deliver(struct fabric *f, struct fab_node *n, uint16_t slid, uint32_t dqp,
		     uint32_t sqp, const uint8_t *mad);
/* Send the MADs waiting for each client, each client's in one call */
void fab_sim_flush(struct fabric *f);

uint64_t fab_now(void);

/* capture.c: a pcap stream of the packets crossing links (`CAPTURE COUNT
 * SECS [NAME PORT]` on control connection fd, which it keeps on success;
 * on failure -errno and a message in err). fab_cap_pkt: a packet leaving
 * node n's port onto its link (call only while f->cap). */
int fab_cap_start(struct fabric *f, int fd, const char *args, char *err, size_t errlen);
void fab_cap_pkt(struct fabric *f, const struct fab_node *n, unsigned port, const uint8_t *p,
		 size_t len, bool sealed);
/* The main loop: the fd to poll (-1: none) and its events; after poll,
 * writing out, the end of the capture (now: fab_now()). */
int fab_cap_fd(const struct fabric *f, short *events);
void fab_cap_io(struct fabric *f, short revents, uint64_t now);
void fab_cap_free(struct fabric *f);

int fab_direct_open(struct fabric *f);
void fab_direct_close(struct fabric *f);
void fab_direct_dirty(struct fabric *f);
/* the loop's poll timeout, shorter while routes wait to be made anew */
int fab_direct_timeout(const struct fabric *f, int ms);
void fab_direct_count(struct fabric *f, const struct fab_node *h, const uint8_t *rec);
void fab_direct_mapped(struct fabric *f, struct fab_node *h, const char *path);
void fab_direct_publish(struct fabric *f);
const char *fab_direct_path(const struct fabric *f);

#endif
