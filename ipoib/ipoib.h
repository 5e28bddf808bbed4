/*
 * IPoIB (RFC 4391, datagram mode) as an upper-layer program: a TUN
 * interface ib0 (L3) whose packets travel as IPoIB over a UD QP of the
 * InfiniBand port sofib0, with address resolution (ARP, IPv6 neighbour
 * discovery) done here on the IB side, path records and multicast joins
 * from the SA through libibumad. What the files share.
 *
 *   main.c    arguments, the TUN interface, the loop, the control socket
 *   ud.c      the verbs: device, UD QP, buffers, address handles, sends
 *   sa.c      the SA client: MCMemberRecord Set/Delete, PathRecord Get
 *   proto.c   the wire: encapsulation, ARP and ND in RFC 4391 form, MGIDs,
 *             the receive path (ipoib_input, also the fuzz target's entry)
 *   neigh.c   neighbours (IP -> hardware address -> path -> AH) and the
 *             transmit path (ipoib_output)
 *   mcast.c   multicast groups: the broadcast group, the kernel's groups
 *   cm.c      connected mode (RFC 4755): an RC connection per peer through
 *             the IB CM, an SRQ, idle teardown, fallback to datagram
 *   cm_proto.c  connected mode's wire: REQ/REP private data, the ICMP
 *             "too big" a packet over a datagram peer's MTU earns
 *
 * Lock contract: one thread; nothing is shared.
 */
#ifndef SOF_IPOIB_H
#define SOF_IPOIB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IPOIB_HDR_LEN 4	   /* RFC 4391 section 6: type (2), reserved (2) */
#define IPOIB_HW_LEN 20	   /* RFC 4391 section 9.1.1: flags+QPN (4), GID (16) */
#define IPOIB_GRH_LEN 40   /* the GRH area of every UD receive buffer */
#define IPOIB_QKEY 0x0b1bu /* the default IPoIB Q_Key (RFC 4391 section 4) */
#define IPOIB_ARPHRD 32	   /* ARP hardware type InfiniBand (RFC 4391 section 8) */
#define IPOIB_BUF 4096	   /* largest UD payload: a 4096 IB MTU */
#define IPOIB_CM_MTU 65520 /* connected mode's largest IP MTU (as Linux's ipoib) */
#define IPOIB_HW_C 0x80	   /* RFC 4755 3.1: the 'C' flag of the hardware address */

#define ETH_P_IPV4 0x0800
#define ETH_P_ARPV 0x0806
#define ETH_P_IPV6V 0x86dd

/* Counters, with their names in ipoib_cnt_names (proto.c). */
enum ipoib_cnt {
	IC_rx_packets,
	IC_rx_bytes,
	IC_tx_packets,
	IC_tx_bytes,
	IC_rx_mcast,
	IC_tx_mcast,
	IC_arp_rx,
	IC_arp_tx,
	IC_nd_rx,
	IC_nd_tx,
	IC_drop_short,	  /* shorter than the GRH area and header */
	IC_drop_header,	  /* reserved bits set in the encapsulation header */
	IC_drop_type,	  /* an EtherType IPoIB does not carry */
	IC_drop_ip,	  /* an IP header that does not fit */
	IC_drop_arp,	  /* ARP: wrong hardware type, lengths, operation */
	IC_drop_nd,	  /* ND: bad option, length, hop limit */
	IC_drop_oversize, /* longer than the interface MTU */
	IC_drop_own,	  /* our own multicast, looped back */
	IC_tx_drop_neigh, /* no neighbour could be resolved */
	IC_tx_drop_queue, /* the resolution queue was full */
	IC_tx_drop_oversize,
	IC_tx_drop_post, /* the send queue refused */
	IC_path_queries,
	IC_path_fails,
	IC_mcast_joins,
	IC_mcast_leaves,
	IC_port_events,	  /* SM change, LID change, client reregister */
	IC_cm_tx_packets, /* frames sent over an RC connection */
	IC_cm_rx_packets, /* frames received over one */
	IC_cm_connects,	  /* connections we made (REP received) */
	IC_cm_accepts,	  /* connections a peer made to us */
	IC_cm_refused,	  /* REQs we rejected (malformed private data) */
	IC_cm_fails,	  /* our REQs rejected, unreachable: datagram to that peer */
	IC_cm_resets,	  /* connections ended by an error or the peer */
	IC_cm_idle,	  /* connections ended for idleness */
	IC_cm_drop_queue, /* frames dropped while a connection was made */
	IC_tx_too_big,	  /* over a datagram peer's MTU: ICMP too big to the kernel */
	IC_drop_tun,	  /* received, but the kernel refused the TUN write */
	IC_tx_gso,	  /* TSO packets from the kernel cut into segments here */
	IC_tx_gso_segs,	  /* the segments they made */
	IC_tx_drop_vnet,  /* a TUN header or TSO packet we do not take */
	IC_rx_gro,	  /* received segments joined to the one before (GRO) */
	IC_NR
};
extern const char *const ipoib_cnt_names[IC_NR];

/* A 20-byte IPoIB hardware address: flags (RFC 4755's 'C'), QPN (24
 * bits) and port GID. */
struct ipoib_hw {
	uint8_t flags;
	uint32_t qpn;
	uint8_t gid[16];
};

/* The IB side of a destination: what an address handle needs. */
struct ipoib_path {
	uint16_t dlid;
	uint8_t sl;
	bool global; /* multicast: GRH with the MGID */
	uint8_t dgid[16];
	uint8_t tclass, hop_limit;
	uint32_t flow_label;
};

struct ipoib_ah; /* ud.c's */

/* How the receive path acts (proto.c calls, main.c fills in; the fuzz
 * target fills in stubs). */
struct ipoib_ops {
	/* an IP packet for the kernel */
	void (*deliver)(const uint8_t *pkt, size_t len);
	/* an IPoIB frame (header included) to a hardware address */
	void (*send_hw)(const struct ipoib_hw *to, const uint8_t *frame, size_t len);
	/* a neighbour's hardware address was learnt (ip: 16 bytes, IPv4 mapped) */
	void (*learn)(const uint8_t ip[16], const struct ipoib_hw *hw);
	/* is this address one of the interface's? */
	bool (*local_addr)(const uint8_t ip[16]);
};

struct ipoib {
	const struct ipoib_ops *ops;
	struct ipoib_hw hw; /* ours */
	uint16_t lid;
	uint16_t pkey;	 /* with the full-member bit */
	uint32_t mtu;	 /* IP MTU: IB MTU less the header; 65520 connected */
	uint32_t ud_mtu; /* the datagram MTU (broadcast group's) */
	bool connected;	 /* connected mode (RFC 4755) */
	uint32_t qkey;
	uint64_t cnt[IC_NR];
};

extern struct ipoib ipoib;

/* ---- proto.c --------------------------------------------------------------- */

/* A received UD buffer (GRH area, header, packet), its source QPN and LID. */
void ipoib_input(struct ipoib *p, const uint8_t *buf, size_t len, uint32_t src_qpn, uint16_t slid);
void ipoib_hw_put(uint8_t out[IPOIB_HW_LEN], const struct ipoib_hw *hw);
void ipoib_hw_get(struct ipoib_hw *hw, const uint8_t in[IPOIB_HW_LEN]);
/* RFC 4391 section 4: the MGID of an IPv4 or IPv6 group (ip: 16 bytes,
 * IPv4 mapped), or of the partition's broadcast group (ip NULL). */
void ipoib_mgid(uint8_t mgid[16], uint16_t pkey, const uint8_t *ip);
/* Build an ARP request for target (4 bytes) from src (4 bytes) into
 * frame (header included); its length. */
size_t ipoib_arp_request(const struct ipoib *p, uint8_t *frame, const uint8_t src[4],
			 const uint8_t target[4]);
/* Build an NS for target from src (16 bytes each) into frame; its length
 * and, in dst, the solicited-node group it goes to. */
size_t ipoib_nd_solicit(const struct ipoib *p, uint8_t *frame, const uint8_t src[16],
			const uint8_t target[16], uint8_t dst[16]);
/* An outgoing packet the interface must not send (the kernel's own ND,
 * MLD, router solicitations: resolution and joins happen here). */
bool ipoib_out_filtered(const uint8_t *pkt, size_t len);
void ipoib_ip_str(const uint8_t ip[16], char *buf, size_t len);
void ipoib_gid_str(const uint8_t gid[16], char *buf, size_t len);

/* ---- ud.c ------------------------------------------------------------------ */

struct ipoib_ud_info {
	uint16_t lid, sm_lid;
	uint8_t sm_sl, port_state;
	int ib_mtu; /* bytes */
	uint8_t gid[16];
	uint16_t pkey_index;
};
int ud_open(const char *dev, int port, uint16_t pkey, struct ipoib_ud_info *info);
int ud_start(uint32_t qkey, uint32_t *qpn);
int ud_query(struct ipoib_ud_info *info);
int ud_fd(void);
/* Handle the completion channel: receives go to ipoib_input. */
void ud_poll(void);
struct ipoib_ah *ud_ah(const struct ipoib_path *path);
void ud_ah_put(struct ipoib_ah *ah);
/* Send frame (header included) to qpn through ah; 0 or -errno. */
int ud_send(struct ipoib_ah *ah, uint32_t qpn, uint32_t qkey, const uint8_t *frame, size_t len);
/* Post the sends ud_send gathered (one ibv_post_send for the lot): the
 * loop calls it before it waits. */
void ud_flush(void);
/* Free send slots (completions reaped when none). */
unsigned ud_sq_free(void);
int ud_attach(const uint8_t mgid[16], uint16_t mlid);
int ud_detach(const uint8_t mgid[16], uint16_t mlid);
void ud_close(void);
/* for connected mode's QPs: the device and PD */
struct ibv_context *ud_ctx(void);
struct ibv_pd *ud_pd(void);
int ud_port(void);

/* ---- sa.c ------------------------------------------------------------------ */

struct sa_mcm {
	uint8_t mgid[16];
	uint32_t qkey;
	uint16_t mlid, pkey;
	uint8_t mtu, rate, sl, tclass, hop_limit;
	uint32_t flow_label;
};
/* Done: status 0 and the record, or -errno / the SA's status (> 0). */
typedef void (*sa_mcm_cb)(void *arg, int status, const struct sa_mcm *rec);
typedef void (*sa_path_cb)(void *arg, int status, const struct ipoib_path *path);

int sa_open(const char *dev, int port, const uint8_t port_gid[16], uint16_t pkey);
int sa_fd(void);
void sa_poll(void);
/* A join of mgid with JoinState join_state (SOF_MC_JOIN_*); tmpl: the
 * broadcast group's record, whose parameters create the group when it
 * does not exist (NULL: join only). */
int sa_join(const uint8_t mgid[16], uint8_t join_state, const struct sa_mcm *tmpl, sa_mcm_cb cb,
	    void *arg);
/* A leave of the JoinState bits join_state. */
int sa_leave(const uint8_t mgid[16], uint8_t join_state);
/* The SA takes send-only full members (its ClassPortInfo, asked when
 * the SM LID changes, has CapabilityMask2 bit 12); false while unknown,
 * as the kernel's ib_sa_sendonly_fullmem_support. */
bool sa_sendonly_full(void);
int sa_path(const uint8_t dgid[16], sa_path_cb cb, void *arg);
/* Forget the callbacks that name arg (its owner goes away). */
void sa_cancel(void *arg);
/* The SM is at sm_lid: a new one (or again: a port event said so) gets a
 * ClassPortInfo Get, and after the first, mcast_rejoin on its answer. */
void sa_set_sm(uint16_t sm_lid, uint8_t sm_sl, bool again);
void sa_close(void);

/* ---- neigh.c --------------------------------------------------------------- */

/* An IP packet from the kernel. */
/* pkt has IPOIB_HDR_LEN writable bytes before it (the header's place) */
void ipoib_output(uint8_t *pkt, size_t len);
/* The largest IP packet the destination of pkt takes in one frame: the
 * interface MTU for a connected mode peer (or one being resolved), the
 * peer's when its REP said less, else the datagram MTU. */
size_t neigh_tx_mtu(const uint8_t *pkt, size_t len);
void neigh_learn(const uint8_t ip[16], const struct ipoib_hw *hw);
void neigh_send_hw(const struct ipoib_hw *to, const uint8_t *frame, size_t len);
void neigh_tick(uint64_t now_ms);
void neigh_flush(void);
void neigh_dump(char *buf, size_t len);
/* The control socket's NEIGH (the RDMA CM resolving an address over this
 * interface): 1 and *hw when ip's hardware address is known, 0 while it
 * is being resolved (a solicitation from src started when it was
 * unknown), -EHOSTUNREACH when resolution failed. */
int neigh_query(const uint8_t ip[16], const uint8_t src[16], struct ipoib_hw *hw);

/* ---- mcast.c --------------------------------------------------------------- */

/* Join the broadcast group; done calls back with 0 once joined. */
int mcast_start(void (*done)(int status));
/* Send frame to the group of mgid (joined on first use). */
void mcast_send(const uint8_t mgid[16], const uint8_t *frame, size_t len);
struct ipoib_ah *mcast_bcast_ah(void);
const struct sa_mcm *mcast_bcast(void);
/* Join every group again, the broadcast group first in line (an SA that
 * restarted forgot them; JoinState chosen again from what it takes). */
void mcast_rejoin(void);
/* Follow the kernel's memberships of ifname (/proc/net/igmp, igmp6). */
void mcast_tick(const char *ifname, uint64_t now_ms);
void mcast_stop(void);
void mcast_dump(char *buf, size_t len);

/* ---- cm.c, cm_proto.c (connected mode) ------------------------------------ */

struct pollfd;
#define IPOIB_CM_SID 0x1000000000000000ull /* | QPN: the IETF range (IBA A3), as Linux's */
#define IPOIB_CM_PDATA 8		   /* RFC 4755 6: receive QPN, receive size */
/* Listen on our service ID; 0 or -errno. */
int cm_start(const char *dev);
/* The descriptors to poll (2): the CM's event channel and the CQ's. */
void cm_fds(struct pollfd *p);
void cm_poll(void);
/* A frame (header included) to hw over its RC connection: 0 sent or
 * queued while the connection is made, -EMSGSIZE over the peer's MTU
 * (an ICMP too big went to the kernel), -ENOTCONN: the peer takes
 * datagrams only (it refused, or is unreachable), -errno. */
int cm_xmit(const struct ipoib_hw *hw, const uint8_t *frame, size_t len);
/* Free send slots (the loop reads from the kernel while there are). */
unsigned cm_sq_free(void);
/* The largest IP packet hw's connection takes: its peer's receive size
 * less the header when up, 0 when the peer takes datagrams only, the
 * interface MTU while unknown. */
size_t cm_tx_mtu(const struct ipoib_hw *hw);
void cm_tick(uint64_t now_ms);
void cm_dump(char *buf, size_t len);
void cm_stop(void);

struct ipoib_cm_data {
	uint32_t qpn;	/* the sender's UD QPN */
	uint32_t rsize; /* the largest frame it receives: header and packet */
};
void ipoib_cm_data_put(uint8_t out[IPOIB_CM_PDATA], const struct ipoib_cm_data *d);
/* 0, or -EINVAL for private data RFC 4755 section 6 does not allow
 * (short, a QPN no UD QP has, a receive size that holds no IP packet) */
int ipoib_cm_data_get(struct ipoib_cm_data *d, const uint8_t *in, size_t len);
/* Hand the kernel the ICMP (IPv4 fragmentation needed, ICMPv6 packet too
 * big) that a frame (header included) over mtu earns, as from its
 * destination; the kernel's path MTU takes it. false: none fits (no DF,
 * not IP). */
bool ipoib_too_big(struct ipoib *p, const uint8_t *frame, size_t len, uint32_t mtu);

/* ---- gso.c (the TUN interface's offloads) ---------------------------------- */

struct virtio_net_hdr;
/* RFC 1071's sum of len bytes added to sum, and its folding to 16 bits */
uint64_t ipoib_csum_add(uint64_t sum, const uint8_t *p, size_t len);
uint16_t ipoib_csum_fold(uint64_t sum);
/* A packet read from the TUN interface with its header vh: its checksum
 * finished and out called once when it is no TSO packet or at most limit
 * bytes, else once per segment of gso_size bytes of payload; each packet
 * out gets has IPOIB_HDR_LEN writable bytes before it. -EINVAL: a header
 * or packet we do not take (nothing went out). */
int ipoib_tx_offload(uint8_t *pkt, size_t len, const struct virtio_net_hdr *vh, size_t limit,
		     void (*out)(uint8_t *pkt, size_t len));
/* The receive side's joining: packets for the kernel go through
 * ipoib_gro_input, which calls write (set by ipoib_gro_init) with a GSO
 * header for joined TCP segments; ipoib_gro_flush writes what is held
 * (the end of each batch of completions). */
void ipoib_gro_init(void (*write)(const struct virtio_net_hdr *vh, const uint8_t *pkt, size_t len));
void ipoib_gro_input(const uint8_t *pkt, size_t len);
void ipoib_gro_flush(void);

/* ---- main.c ---------------------------------------------------------------- */

uint64_t ipoib_now_ms(void);
/* the interface's addresses (16 bytes, IPv4 mapped); an IPv4 subnet
 * broadcast of one of them (4 bytes) */
bool ipoib_local_addr(const uint8_t ip[16]);
bool ipoib_local_bcast4(const uint8_t ip[4]);
/* the i-th address of the interface into ip; false past the last */
bool ipoib_addr(unsigned i, uint8_t ip[16]);
void ipoib_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
