/*
 * The transport engine's interface: what a host of the engine gives it and
 * what it may call. Two hosts exist: the device daemon (daemon/tp_host.c),
 * which runs the transport of every QP it is not told to leave to a
 * program, and the library (verbs/tp_host.c), which runs the transport of
 * its own process's RC/UC QPs (and UD QPs of the InfiniBand port). The engine knows neither: it sees its host
 * only through struct tp_host_ops, and its QPs, CQs and SRQs only through
 * the handles below, which a host embeds in its own objects (and finds its
 * object from again with sof_container_of).
 *
 * Lock contract: the engine has no lock of its own. Every function here
 * must be called by one thread at a time (the daemon has one; the library
 * holds its engine mutex), and the host ops are called under the same.
 *
 * Names: tp_ for the engine's functions and types; tport.h holds what is
 * internal to transport/.
 */
#ifndef TP_H
#define TP_H

#include "roce_wire.h"

#include "sof_proto.h"
#include "sof_shm.h"
#include "sof_util.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>


struct sof_tqp;

/* A completion queue: its shared rings, and the completion channel's
 * eventfd (-1: none) that tp_host_ops.cq_kick fires. */
struct tp_cq {
	struct sof_cq_shm *shm;
	int evfd;
};

/* A shared receive queue: its shared segment and geometry. */
struct tp_srq {
	struct sof_srq_shm *shm;
	uint32_t size, max_sge;
	uint32_t handle; /* the host's name for it, if it wants one */
};

/* A QP as the engine sees it: filled by the host when it creates the QP,
 * read by the engine. The shared segments are the owner's memory: the
 * engine copies and validates what it reads from them. */
struct tp_qp {
	uint32_t qpn;
	uint32_t type;		/* IBV_QPT_RC, _UC, _UD, _XRC_SEND, _XRC_RECV or _RAW_PACKET */
	struct sof_qp_shm *shm; /* header and receive ring */
	uint32_t rq_size, rq_max_sge;
	struct sof_nsq_shm *nsq; /* the network send queue */
	uint32_t sq_size, sq_max_sge, sq_max_inline, sq_stride;
	struct tp_cq *send_cq, *recv_cq;
	struct tp_srq *srq; /* or NULL */
	bool dying;	    /* its owner is being released: no more packets for it */
	uint32_t nmcast;    /* multicast groups it is attached to (mcast.c) */
	struct sof_tqp *t;  /* the engine's state, NULL until the first modify */
	/* an RC QP of the engine in the program: its responder state as
	 * shared with the daemon (takeover.c); NULL: none */
	struct sof_resp_shm *rshm;
};

/* mr_ptr's need: only check, the pointer will not be used */
#define TP_MR_PROBE (1u << 31)

/* What the engine needs of its host. Every member must be set. */
struct tp_host_ops {
	/* a line for the host's log (no newline) */
	void (*log)(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));
	/* the QP with number qpn, or NULL: once per packet received */
	struct tp_qp *(*qp_find)(uint32_t qpn);
	/* The registered region with key, checked for use by qp: same PD,
	 * the access bits in need (IBV_ACCESS_*) all granted, [va, va+len)
	 * inside it (IBA 10.6.3). A pointer to va in the host's view of the
	 * region, or NULL. It stays valid until the host revokes the region,
	 * which it does only after tp_tx_flush (packets may point into it).
	 * With TP_MR_PROBE in need only the checks are asked for: the
	 * pointer is not used. The host's view may be a copy (the daemon's of
	 * a region registered in place): what the engine writes through it
	 * reaches the region at mr_done. */
	uint8_t *(*mr_ptr)(const struct tp_qp *qp, uint32_t key, uint64_t va, uint64_t len,
			   uint32_t need);
	/* The engine is done with p, which mr_ptr gave for a write or an
	 * atomic (need with IBV_ACCESS_LOCAL_WRITE, _REMOTE_WRITE or
	 * _REMOTE_ATOMIC), before its next mr_ptr; it wrote the written
	 * bytes at p (0: none). */
	void (*mr_done)(const struct tp_qp *qp, uint8_t *p, uint64_t written);
	/* the GID table entry at index, or NULL when it is empty */
	const struct sof_gid_entry *(*gid)(uint32_t index);
	/* whether gid is one of this host's (its QPs are reached without the
	 * network) */
	bool (*gid_local)(const uint8_t gid[16]);
	/* the port's active MTU (enum ibv_mtu): the largest UD datagram */
	uint32_t (*active_mtu)(void);
	/* a completion went into an armed CQ, or one needs its owner's
	 * attention: fire its channel (cq->evfd >= 0) */
	void (*cq_kick)(struct tp_cq *cq);
	/* the engine moved qp to ERROR (its shared state says so already);
	 * event: the affiliated asynchronous event for its owner, or 0 */
	void (*qp_error)(struct tp_qp *qp, uint32_t event);
	/* srq fell below its armed limit (IBA 11.5.2.4) */
	void (*srq_limit)(struct tp_srq *srq);
	/* An XRC request to TGT QP qp names XRC SRQ srqn: when it is an SRQ
	 * of qp's domain, point qp->srq and qp->recv_cq at it and its CQ
	 * (and check regions against its PD) and answer true; else false
	 * (the request is invalid). Hosts without XRC answer false. */
	bool (*xrc_srq)(struct tp_qp *qp, uint32_t srqn);
	/* optional: invalidate the memory window rkey as a SEND with
	 * invalidate to qp asks (IBA 9.4.1.1, 10.6.7.2.4); 0, or -errno when
	 * qp may not (NULL: never) */
	int (*mw_invalidate)(const struct tp_qp *qp, uint32_t rkey);
	/* optional: an RC/UC packet came from a flow that a tp_flow_socket
	 * could take (not called for packets read from one) */
	void (*flow_seen)(const struct roce_addr *a);
	/* optional (NULL: a raw packet send completes in error): put frame,
	 * a whole Ethernet frame a RAW_PACKET QP sends, on the port. 0 or
	 * -errno */
	int (*raw_xmit)(const struct tp_qp *qp, const uint8_t *frame, uint32_t len);
	/* optional (NULL: never): a request for qp, a QP whose transport
	 * runs in its owner, came while the host runs that QP's responder
	 * for the owner, which does not run (takeover.c): the shared
	 * responder state, and in dqpn the QP's peer as the host knows it;
	 * NULL: not now, the packet is dropped */
	struct sof_resp_shm *(*takeover)(const struct tp_qp *qp, const uint8_t src[16],
					 uint32_t *dqpn);
	/* optional (NULL: never): an ACK or response for the requester of
	 * such a qp came then (takeover answered it): keep the packet pkt
	 * (len bytes, the UDP payload as it came from a) for the owner to
	 * take in when it runs again; true when kept (else it is dropped) */
	bool (*keep)(const struct tp_qp *qp, const uint8_t *pkt, size_t len,
		     const struct roce_addr *a);
};

/* The link layer a path leaves by (struct tp_port_ops, tport.h). */
#define TP_LINK_ROCE 0u /* RoCEv2 over UDP (udp.c) */
#define TP_LINK_IB 1u	/* the InfiniBand port (iblink.c, tp_ib.h) */

/* Where a QP's packets go: addresses as GIDs (IPv4 as ::ffff:a.b.c.d). On
 * the InfiniBand link the address is the DLID, and a GRH with the GIDs
 * goes only when global is set; without one the GIDs are LID GIDs
 * (tp_ib_lid_gid), which the classifier compares as any GID. */
struct tp_path {
	uint8_t sgid[16];
	uint8_t dgid[16];
	uint16_t sport; /* UDP source port: the flow's entropy (Annex A17.3.1) */
	uint8_t tclass;
	uint8_t hop_limit;
	uint32_t flow_label;
	uint32_t ifindex; /* to a multicast GID: the interface of sgid, 0: any */
	uint8_t link;	  /* TP_LINK_ROCE (0) or TP_LINK_IB */
	/* TP_LINK_IB: LRH service level, DLID, the SLID's path bits (LMC),
	 * and whether a GRH goes */
	uint8_t sl;
	uint8_t path_bits;
	bool global;
	uint16_t dlid;
};

/* ---- start, sockets, the loop ------------------------------------------------ */

/* Start the engine for host around the receive sockets fd4 and fd6 (-1:
 * none): UDP GRO on them, the send sockets, the timer; it counts into
 * counters and drops (SOF_CNT_NR and SOF_DROP_NR entries). 0 or -errno. */
int tp_start(const struct tp_host_ops *host, int fd4, int fd6, uint64_t *counters, uint64_t *drops);
/* The same without a wire: no socket at all, every packet is built (its
 * memory checked) and then lost, as on a cut cable (-ENETUNREACH). For
 * test and fuzz hosts, which feed tp_input themselves. */
int tp_start_unplugged(const struct tp_host_ops *host, uint64_t *counters, uint64_t *drops);
/* A started engine on other receive sockets (-1: none) and counter pages,
 * its send sockets and timer kept: a program's engine that gave its
 * steering slot back and takes another (verbs/tp_host.c). */
void tp_replug(int fd4, int fd6, uint64_t *counters, uint64_t *drops);
/* The timerfd the host watches; when readable, it calls tp_timer_fired. */
int tp_timer_fd(void);
void tp_timer_fired(void);
/* The time the timer is armed for (CLOCK_MONOTONIC ns), 0 when it is not:
 * a host that takes the timerfd out of its wait runs tp_timer_fired itself
 * once this has passed. */
uint64_t tp_timer_deadline(void);
/* Arm the timer for the earliest deadline of any QP (after a batch). */
void tp_timer_update(void);
/* live false: the host took the timerfd out of its wait and runs
 * tp_timer_fired itself once tp_timer_deadline has passed, so the
 * deadlines set from now on are kept without a system call (a VM exit on
 * a virtual machine: a poller in a ping-pong set the timer about every
 * third message); true: the timerfd is set for the deadline again. */
void tp_timer_fd_live(bool live);

/* A nonblocking UDP socket of the family bound to port on every address,
 * with the options of a RoCEv2 socket (packet info, DF); reuseport: a
 * member of the port's SO_REUSEPORT group. The descriptor or -errno. */
int tp_udp_socket(bool v6, uint16_t port, bool reuseport);
/* A flow socket: a receive socket bound to a's destination address and
 * port 4791 (SO_REUSEPORT lets it bind beside the group's sockets) and
 * connected to a's source address and port, so that the kernel hands it
 * that flow's datagrams without a route look-up (early demux); DF as
 * tp_udp_socket, UDP GRO when the engine uses it, no packet info (tp_rx
 * takes the flow's addresses from a). Bound to an address, not the
 * wildcard, it forms a reuseport group of its own. The descriptor or
 * -errno. */
int tp_flow_socket(const struct roce_addr *a);
/* Whether the engine takes UDP GRO on its receive sockets. */
bool tp_gro(void);

/* Read what the receive socket fd holds (bounded), then send the ACKs that
 * became due. flow: fd is tp_flow_socket(flow), whose datagrams all come
 * from flow->src and port flow->sport to flow->dst; NULL: a socket of
 * tp_udp_socket, which names both. The number of datagrams read. */
int tp_rx(int fd, bool v6, const struct roce_addr *flow);
/* Whether the last tp_rx of a flow socket took a packet for a QP that
 * is not the host's (the flow carries others' traffic). */
bool tp_rx_foreign(void);
/* The tp_rx under way reads no further batch (a host that reads another
 * process's sockets for it, takeover.c: what comes is for that process's
 * own requests, which only it can take). */
void tp_rx_stop(void);
/* One packet: the UDP payload (ICRC included) that came from a->src to
 * a->dst. Validated, then executed, or dropped and counted. */
void tp_input(const uint8_t *buf, size_t len, const struct roce_addr *a);
/* The end of a batch of tp_input: send the ACKs that became due (one per
 * batch: the coalescing of IBA 9.7.5.1.1), unless deferred. */
void tp_input_end(void);
/* on: tp_input_end leaves the ACKs due for its next call without defer
 * (a program that polls sends them with its next packet). */
void tp_defer_acks(bool on);
/* Whether coalesced ACKs wait to be sent. */
bool tp_acks_due(void);
/* Hand every queued packet to the kernel, in order. */
void tp_tx_flush(void);
/* What the engine counted (sof_proto.h's counters and drops). */
uint64_t tp_counter(enum sof_counter c);
/* How many one-sided request packets (RDMA WRITE, READ, atomics) came to
 * a responder so far: a host whose owner may not run (it polls memory,
 * not a CQ) keeps reading the sockets itself while this grows. */
uint64_t tp_onesided(void);
/* How many request packets of any opcode came to a responder of a
 * connected QP so far (a host tells a batch of responses alone). */
uint64_t tp_requests(void);
void tp_count_add(enum sof_counter c, uint64_t n);
void tp_drop_add(enum sof_dropctr d);
/* A line for the host's log. */
void tp_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Whether gid is one of the host's (tp_host_ops.gid_local). */
bool tp_gid_local(const uint8_t gid[16]);

/* ---- QPs ------------------------------------------------------------------- */

/* qp was modified (req validated by the host): update the transport state.
 * *net is set when the QP's sends go to the network send queue.
 * 0 or -errno. */
int tp_qp_modify(struct tp_qp *qp, const struct sof_modify_qp_req *req, bool *net);
/* The QP goes away: drop what the engine holds of it (an RC QP that was
 * connected lingers to acknowledge repeated requests). */
void tp_qp_destroy(struct tp_qp *qp);
/* The owner rang: take new WQEs of the network send queue and send what
 * the window allows. */
void tp_qp_doorbell(struct tp_qp *qp);
/* Send what qp's window allows (WQEs the owner posted, or packets to send
 * again), whether or not new WQEs came. */
void tp_qp_progress(struct tp_qp *qp);
/* tp_qp_doorbell for every QP (a doorbell that does not say whose). */
void tp_doorbell_all(void);
/* The owner posted: may the requester leave the WQE for later (packets of
 * the QP are in flight and this is not the answer in a ping-pong: the
 * next ACK or poll takes it)? *post_epsn: the responder's expected PSN at
 * the owner's last post, updated. */
bool tp_qp_post_may_wait(const struct tp_qp *qp, uint32_t *post_epsn);
/* What a connected RC QP's peer needs it to acknowledge once it is gone
 * (DESTROY_QP asks the daemon to linger for it). False: nothing. */
bool tp_qp_linger_info(const struct tp_qp *qp, struct sof_linger *l);
/* Whether a QP whose peer is on another host reaches it over IPv6, or a
 * RoCEv2 UD QP is there (its peers may be of either family). */
bool tp_any_net_v6(void);
/* whether some QP of a RoCE port (not sofib0) has its peer on another host */
bool tp_any_net_roce(void);
/* A QP destroyed elsewhere (a program's) lingers here: repeated requests
 * to qpn are acknowledged as its responder would have. */
void tp_linger_add(uint32_t qpn, uint32_t dqpn, uint32_t epsn, uint32_t msn,
		   const struct tp_path *path);
/* The owner of qp (an RC QP with rshm) modifies it: what the daemon
 * executed meanwhile is taken back first, then its responder state as
 * published is void until its next request (takeover.c). */
void tp_resp_shared_void(struct tp_qp *qp);
/* The UDP source port for a flow between two QPs. */
uint16_t tp_flow_port(bool v6, uint32_t sqpn, uint32_t dqpn);

/* ---- packets the engine does not deliver to a QP of its own ------------------ */

/* QP0 and QP1 (the MAD layer registers a hook for them) and the multicast
 * QPN (the daemon's multicast, mcast.c). A hook gets each packet that
 * passed the checks of every packet (length, version, opcode, ICRC) and,
 * for multicast, those of a datagram to a group. from_net: it came from
 * the network (false: a copy of one this host sent). Without a hook the
 * packet is looked up as for any QP (and dropped: no QP has the number). */
typedef void (*tp_recv_fn)(const struct roce_hdr *h, const uint8_t *payload, uint32_t paylen,
			   const struct roce_addr *a, bool from_net);
#define TP_HOOK_QP0 0u
#define TP_HOOK_QP1 1u
#define TP_HOOK_MCAST 2u
void tp_recv_hook(unsigned which, tp_recv_fn fn);
/* Send one UD datagram of len bytes from QP sqpn (QP1's MADs) on path to
 * QP dqpn with qkey and pkey; *psn counts the sender's PSNs. 0 or -errno. */
int tp_ud_send(const struct tp_path *path, uint32_t sqpn, uint32_t dqpn, uint32_t qkey,
	       uint16_t pkey, uint32_t *psn, const uint8_t *data, uint32_t len);

/* ---- multicast (mcast.c: a host that serves UD groups links it) ------------- */

/* Attach a UD QP to the group of a multicast GID, or detach it. The first
 * QP of a group joins the IP group on the served interfaces, the last one
 * leaves it. 0 or -errno: attach -ENOMEM beyond the limits of
 * sof_proto.h, detach -EINVAL when the QP is not attached. */
/* The largest frame a RAW_PACKET QP sends or receives. */
#define TP_RAW_MAX_FRAME 16384u

/* A frame a flow of RAW_PACKET QP qp matched: copied whole into its next
 * receive WQE, completed with byte_len len (dropped without a WQE). */
void tp_raw_input(struct tp_qp *qp, const uint8_t *frame, uint32_t len);

int tp_mcast_attach(struct tp_qp *qp, const uint8_t mgid[16]);
int tp_mcast_detach(struct tp_qp *qp, const uint8_t mgid[16]);
/* The QP goes away: detach it from every group. */
void tp_mcast_qp_release(struct tp_qp *qp);
/* The GID table changed: join the groups on interfaces that came, forget
 * those that went. */
void tp_mcast_refresh(void);
/* Groups with at least one QP. */
uint32_t tp_mcast_groups(void);
/* The delivery of a datagram to a group: the TP_HOOK_MCAST hook. */
void tp_mcast_input(const struct roce_hdr *h, const uint8_t *payload, uint32_t paylen,
		    const struct roce_addr *a, bool from_net);
/* A datagram that UD QP qp, whose transport runs in its program, sent
 * from its GID sgid to the group mgid (its program sent it to the
 * network, which does not bring it back): delivered to the QPs attached
 * here as send_mcast delivers what this engine sends. qp's state here is
 * the receive-only view (its Q_Key, P_Key). 0, or -EINVAL when qp has no
 * engine state or is not a RoCEv2 UD QP, mgid is not a multicast GID, sgid is not
 * one of the host's or not of mgid's family, or len exceeds 4096 bytes
 * or the port's MTU (IBA 9.8.3). */
int tp_mcast_loop(struct tp_qp *qp, const uint8_t sgid[16], const uint8_t mgid[16], uint32_t qkey,
		  const uint32_t *imm_be, bool se, const uint8_t *data, uint32_t len);

#endif
