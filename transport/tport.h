/*
 * The RoCEv2 transport engine of the device daemon: the part of the
 * software HCA that reaches other hosts, as Linux rxe is for the kernel.
 *
 * It runs in the daemon's single epoll thread (no locks): net.c owns the
 * UDP sockets, the timer and the per-QP transport state; requester.c turns
 * send WQEs of a QP's network send queue into packets and retransmits them;
 * completer.c takes ACKs, NAKs, read responses and atomic ACKs and completes
 * send WQEs; responder.c executes incoming requests and answers them; mr.c
 * maps registered memory and checks every key, range and access.
 *
 * Names: tp_ for everything internal to the engine; sof_tp_ for what the
 * daemon calls (sofd.h).
 */
#ifndef TPORT_H
#define TPORT_H

#include "roce_wire.h"
#include "sofd.h"

#include <infiniband/verbs.h>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103 /* linux/udp.h, Linux 4.18 */
#endif
#ifndef UDP_GRO
#define UDP_GRO 104 /* linux/udp.h, Linux 5.0 */
#endif
#ifndef SOL_UDP
#define SOL_UDP 17
#endif

/* Largest UDP payload: headers, 4096 bytes of payload, pad, ICRC. */
#define TP_MAX_PKT (ROCE_MAX_HDR + 4096 + 4 + ROCE_ICRC_LEN)
/* Packets a requester may have sent and not seen acknowledged (the
 * largest congestion window). */
#define TP_WINDOW 512u
#define TP_MIN_CWND 2u
/* The requester asks for an ACK at least every this many packets. */
#define TP_ACKREQ_EVERY 64u
/* A PSN further behind the expected one than this is not a duplicate but
 * garbage (IBA 9.7.5.1.2: the duplicate region is half the PSN space; we
 * keep much less history). */
#define TP_DUP_WINDOW (1 << 22)
/* The most packets one message may take: a quarter of the PSN space. */
#define TP_MAX_MSG_PKTS (1u << 22)

/* Where a QP's packets go: addresses as GIDs (IPv4 as ::ffff:a.b.c.d). */
struct tp_path {
	uint8_t sgid[16];
	uint8_t dgid[16];
	uint16_t sport; /* UDP source port: the flow's entropy (Annex A17.3.1) */
	uint8_t tclass;
	uint8_t hop_limit;
	uint32_t flow_label;
	uint32_t ifindex; /* to a multicast GID: the interface of sgid, 0: any */
};

/* A send WQE the requester took from the network send queue: copied and
 * validated. Inline data stays in its ring slot, which is ours until the
 * WQE completes (the owner reuses a slot only after sq_done passed it). */
enum tp_wstate {
	TP_W_NEW = 0, /* no packet of this pass sent */
	TP_W_SENDING, /* some packets sent */
	TP_W_SENT,    /* every packet sent, waiting for its ACK or response */
};

struct tp_swqe {
	uint64_t wr_id;
	uint32_t opcode; /* enum ibv_wr_opcode */
	uint32_t send_flags;
	uint32_t imm_be;
	uint32_t rkey;
	uint64_t remote_addr;
	uint64_t compare_add;
	uint64_t swap;
	uint64_t len;	  /* message length */
	uint32_t num_sge; /* 0 with inline data */
	struct sof_sge sge[SOFD_MAX_SGE];
	const uint8_t *inl; /* inline data in the ring slot */
	/* UD */
	uint32_t remote_qpn, remote_qkey;
	struct tp_path ud_path;
	/* progress */
	uint8_t state;	    /* enum tp_wstate */
	uint32_t first_psn; /* PSN of its first packet */
	uint32_t npkts;	    /* PSNs it occupies (a READ: its responses) */
	uint64_t read_got;  /* READ: bytes of response received */
	bool sent_once;	    /* first_psn and npkts are valid */
	bool reread;	    /* READ: the rest asked for again, no response since */
};

/* A responder resource (IBA 9.7.5.1.4): what a READ or atomic needs to be
 * answered again when its request is repeated. */
enum tp_res_type { TP_RES_NONE = 0, TP_RES_READ, TP_RES_ATOMIC };

struct tp_res {
	uint8_t type;
	uint32_t psn;	/* PSN of the request */
	uint32_t npkts; /* PSNs it occupies */
	uint64_t va;	/* READ: the range the request was granted */
	uint32_t rkey;
	uint32_t len;
	uint64_t orig; /* atomic: the value returned */
};

/* A request that arrived ahead of the expected PSN, kept (responder.c). */
#define TP_OOO_SLOTS 32u
#define TP_OOO_NAK_AFTER 3u
struct tp_ooo {
	bool used;
	struct roce_hdr h;
	uint32_t paylen;
	uint8_t payload[4096];
};

struct sof_tqp {
	struct sofd_qp *qp;
	struct sofd_link link;	     /* in tp.qps */
	struct sofd_link ack_link;   /* in tp.acks while a coalesced ACK is due */
	struct sofd_link timer_link; /* in tp.timers while a timer may be set */
	bool net;		     /* RC/UC whose peer is on another host */
	uint32_t state;		     /* enum ibv_qp_state, as last modified */
	struct tp_path path;	     /* RC/UC primary path */
	uint32_t mtu;		     /* path MTU in bytes */
	uint32_t dqpn;
	uint32_t qkey;
	uint32_t access; /* qp_access_flags */
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
	uint8_t max_rd_atomic, max_dest_rd_atomic;

	/* requester (requester.c, completer.c); ring indexes are those of
	 * the network send queue: wq_head oldest not completed, wq_send next
	 * to transmit, wq_tail next to take */
	struct tp_swqe *wq; /* sq_size entries, anonymous pages of wq_len bytes */
	size_t wq_len;
	uint32_t wq_head, wq_send, wq_tail;
	uint64_t send_off; /* bytes of wq[wq_send] already sent */
	uint32_t psn;	   /* next PSN to send */
	uint32_t rd_out;   /* READs and atomics sent, not answered */
	uint8_t retry_left, rnr_left;
	uint64_t timer_ns; /* retransmission deadline, 0: not armed */
	uint64_t rnr_ns;   /* RNR wait: no sending before this, 0: none */
	uint64_t probe_ns; /* early go-back when no ACK came by then, 0: none */
	uint32_t una_psn;  /* oldest PSN not acknowledged */
	uint32_t max_psn;  /* the PSN after the highest ever sent */
	/* Congestion window (packets in flight), AIMD as TCP's: go-back-N
	 * on a lossy link resends a whole window per loss, so the window
	 * shrinks on loss and grows back with acknowledged packets. */
	uint32_t cwnd, ssthresh, cwnd_acc;
	uint32_t recover_psn; /* losses before una passes it are one event */
	bool in_recovery;
	uint64_t loss_ns; /* the last loss seen (tp_req_loss), 0: none yet */
	uint32_t nak_psn, nak_una; /* the last sequence-error NAK acted on */
	uint64_t nak_ns;
	/* round-trip time: one packet sent for the first time is timed to
	 * the ACK that covers it (none across a go-back: Karn's rule) */
	uint32_t rtt_psn;
	uint64_t rtt_ns;  /* when rtt_psn left, 0: none timed */
	uint64_t srtt_ns; /* smoothed (1/8 per sample), 0: none yet */
	uint64_t mrtt_ns; /* the least, drifting up by 1/64 of each larger sample */

	/* responder (responder.c) */
	uint32_t epsn;	  /* expected PSN */
	uint32_t msn;	  /* messages completed (IBA 9.7.5.1.1) */
	bool nak_sent;	  /* a sequence-error NAK is out (9.7.5.2.1) */
	uint32_t oos_psn; /* the last PSN seen ahead of epsn */
	bool ack_pending; /* a coalesced ACK is due */
	uint32_t in_msg;  /* 0, or ROCE_F_SEND / ROCE_F_WRITE: message in progress */
	bool rcv_active;  /* a receive WQE is taken for the SEND in progress */
	uint64_t rcv_wr_id;
	uint32_t rcv_nsge;
	struct sof_sge rcv_sge[SOFD_MAX_SGE];
	uint64_t rcv_off; /* bytes of the SEND received so far */
	uint64_t wr_va;	  /* WRITE in progress */
	uint32_t wr_rkey;
	uint64_t wr_left;
	uint64_t wr_len;
	struct tp_res *res; /* max_dest_rd_atomic entries (ring) */
	struct tp_ooo *ooo; /* TP_OOO_SLOTS, by PSN; allocated on first use */
	uint32_t nooo;
	uint32_t nres, res_next;
};

/* The engine's global state (net.c). */
struct tp_state {
	int fd4, fd6; /* receive sockets bound to port 4791 */
	struct sofd_pollable p4, p6, timer;
	int tx4[8], tx6[8]; /* send sockets, one source port each */
	uint16_t txport4[8], txport6[8];
	int ntx4, ntx6;
	uint64_t timer_armed_ns;
	struct sofd_link qps;	    /* every sof_tqp */
	struct sofd_link acks;	    /* those owing a coalesced ACK */
	struct sofd_link timers;    /* those whose timer_ns or rnr_ns may be set */
	uint32_t ntx;		    /* packets built, not yet handed to the kernel */
	bool gso;		    /* UDP GSO in use (off: SOFTOFED_NO_GSO, or refused) */
	bool gro;		    /* the receive sockets take UDP GRO */
	uint64_t *counters, *drops; /* where the engine counts (sof_proto.h) */
	/* tp_input_end leaves the ACKs due for its next call: a program
	 * that polls sends them with its next packet (verbs/engine.c) */
	bool defer_acks;
	/* A program's flow sockets (verbs/engine.c): flow_seen, when set,
	 * hears of each packet an RC or UC QP took from a socket that is not
	 * one (rx_flow false); rx_flow is set while tp_rx reads one, and
	 * flow_foreign tells that a packet of it named a QP not ours (the
	 * engine clears it). */
	void (*flow_seen)(const struct roce_addr *a);
	bool rx_flow, flow_foreign;
	struct roce_icrc_cache icrc; /* what the ICRCs of sent and received packets keep */
};

extern struct tp_state tp;

static inline void tp_count(enum sof_counter c, uint64_t n) { tp.counters[c] += n; }

/* Protocol tracing into the daemon's log, when SOFTOFED_TRACE is set in
 * its environment (net.c reads it at start). */
extern bool tp_tracing;
#define tp_trace(...)                                                                              \
	do {                                                                                       \
		if (tp_tracing)                                                                    \
			sofd_log(__VA_ARGS__);                                                     \
	} while (0)
static inline void tp_drop(enum sof_dropctr d) { tp.drops[d]++; }

/* PSNs a message of len bytes takes on t's path (a zero-length one: 1). */
static inline uint32_t tp_npkts(const struct sof_tqp *t, uint64_t len)
{
	return len ? (uint32_t)((len + t->mtu - 1) / t->mtu) : 1;
}

/* ---- net.c --------------------------------------------------------------- */

/* A nonblocking UDP socket of the family bound to port on every address,
 * with the options of a RoCEv2 socket (packet info, DF); reuseport: a
 * member of the port's SO_REUSEPORT group. The descriptor or -errno. */
int tp_udp_socket(bool v6, uint16_t port, bool reuseport);
/* A flow socket: a receive socket bound to a's destination address and
 * port 4791 (SO_REUSEPORT, as the daemon's sockets, lets it bind beside
 * them) and connected to a's source address and port, so that the kernel
 * hands it that flow's datagrams without a route look-up (early demux);
 * DF as tp_udp_socket, UDP GRO when the engine uses it, no packet info
 * (tp_rx takes the flow's addresses from a). Bound to an address, not
 * the wildcard, it forms a reuseport group of its own:
 * the daemon's group, whose members the steering program names by
 * position (steer.c), neither gains nor loses a member. The descriptor or
 * -errno. */
int tp_flow_socket(const struct roce_addr *a);
/* Start the engine around the receive sockets fd4 and fd6 (-1: none):
 * UDP GRO on them, the send sockets, the timerfd; it counts into
 * counters and drops (SOF_CNT_NR and SOF_DROP_NR entries). 0 or -errno.
 * The daemon calls it from sof_tp_init (steer.c), a program that runs the
 * transport of its QPs from verbs/engine.c. */
int tp_start(int fd4, int fd6, uint64_t *counters, uint64_t *drops);
/* Read what the receive socket fd holds (bounded), then send the ACKs that
 * became due: one ACK for a whole batch is the coalescing of IBA
 * 9.7.5.1.1. flow: fd is tp_flow_socket(flow), whose datagrams all come
 * from flow->src and port flow->sport to flow->dst; NULL: a socket of
 * tp_udp_socket, which names both. */
int tp_rx(int fd, bool v6, const struct roce_addr *flow);

/* The GID at index of the table, or NULL when the entry is empty. */
const uint8_t *tp_sgid(uint32_t index);
/* The interface of the GID at index (0 when the entry is empty). */
uint32_t tp_sgid_ifindex(uint32_t index);
/* Build the BTH and extended headers of h, copy the payload from the
 * gather callback, pad, append the ICRC, and queue it to be sent on path
 * (tp_tx_flush sends the queue; it runs when the queue is full and at the
 * end of every event of the daemon's loop). 0, or -errno when the packet
 * could not be built (the gather's error, -EMSGSIZE) or has no socket to
 * leave by (-ENETUNREACH). A packet the kernel refuses later is lost, as
 * on a wire, and the transport recovers. */
typedef int (*tp_gather_fn)(void *arg, uint8_t *dst, uint32_t len);
int tp_send(const struct tp_path *path, struct roce_hdr *h, uint32_t paylen, tp_gather_fn gather,
	    void *arg);
/* The same with the payload by reference, in at most TP_TX_REFS pieces
 * (registered memory of an RC WRITE or SEND, or of a READ's responses): the
 * memory must stay mapped until the queue is sent (sof_tp_mr_release sends
 * it first) and its contents are what the packet carries, so only for
 * what no completion releases before that (not UC, UD or inline data). */
#define TP_TX_REFS 4u
int tp_send_ref(const struct tp_path *path, struct roce_hdr *h, const struct iovec *pay,
		uint32_t npay);
/* Hand every queued packet to the kernel, in order: sendmmsg, and runs of
 * same-size packets on one path as one UDP GSO send. */
void tp_tx_flush(void);
/* The UDP source port for a flow between two QPs. */
uint16_t tp_flow_port(bool v6, uint32_t sqpn, uint32_t dqpn);
/* Arm the timerfd for the earliest deadline of tp.timers. */
void tp_timer_update(void);
/* t set timer_ns, probe_ns or rnr_ns: the timer handler must look at it. */
void tp_timer_watch(struct sof_tqp *t);
/* A coalesced ACK of t is due at the end of this receive batch. */
void tp_ack_due(struct sof_tqp *t);
/* One packet from the network: the UDP payload (ICRC included) that came
 * from a->src to a->dst. Validated, then executed, or dropped and counted.
 * rx() calls it for every datagram; tests/fuzz/fuzz_engine.c feeds it. */
void tp_input(const uint8_t *buf, size_t len, const struct roce_addr *a);
/* The end of a batch of tp_input: send the ACKs that became due (one per
 * batch: the coalescing of IBA 9.7.5.1.1). */
void tp_input_end(void);

/* ---- mcast.c ------------------------------------------------------------- */

/* A UD datagram to the multicast QPN for the group a->dst: every QP
 * attached to the group whose state and Q_Key accept it receives it.
 * from_net: it came from the network, and is counted as dropped when no QP
 * took it. */
void tp_mcast_input(const struct roce_hdr *h, const uint8_t *payload, uint32_t paylen,
		    const struct roce_addr *a, bool from_net);

/* ---- mr.c ---------------------------------------------------------------- */

/* The registered region with key, checked for use by qp: same PD, the
 * access bits in need (IBV_ACCESS_*) all granted, [va, va+len) inside it.
 * Returns a pointer to va in the daemon's mapping, or NULL. */
uint8_t *tp_mr_ptr(const struct sofd_qp *qp, uint32_t key, uint64_t va, uint64_t len,
		   uint32_t need);
/* Copy between a linear buffer and an SGE list of the owner of qp,
 * starting off bytes into the list. to_sgl: write into the SGEs (they need
 * IBV_ACCESS_LOCAL_WRITE). 0, -EACCES (a key, range or access check failed)
 * or -EMSGSIZE (past the end of the list). */
int tp_sgl_copy(const struct sofd_qp *qp, const struct sof_sge *sge, uint32_t nsge, uint64_t off,
		uint8_t *buf, uint64_t len, bool to_sgl);
/* Bytes [off, off+len) of an SGE list of the owner of qp, checked for
 * reading as tp_sgl_copy does, as at most max pieces of the daemon's
 * mappings. The number of pieces, -EACCES, -EMSGSIZE (past the end of the
 * list) or -E2BIG (more than max pieces). */
int tp_sgl_map(const struct sofd_qp *qp, const struct sof_sge *sge, uint32_t nsge, uint64_t off,
	       uint64_t len, struct iovec *iov, uint32_t max);

/* ---- requester.c ----------------------------------------------------------- */

/* Take new WQEs of the network send queue and send what the window allows. */
void tp_req_progress(struct sof_tqp *t);
/* Start sending again from psn (go-back-N, IBA 9.7.5.2.1 and 9.7.6.1.3). */
void tp_req_rewind(struct sof_tqp *t, uint32_t psn);
/* The retransmission and RNR timers of t; now is sof_now_ns(). */
void tp_req_timer(struct sof_tqp *t, uint64_t now);
/* (Re)start the transport timer and the early go-back of t from now, when
 * an RC QP has packets unacknowledged; stop both otherwise. */
void tp_req_arm(struct sof_tqp *t);
/* Packets were lost (a sequence-error NAK, timeout: a timer expiry):
 * the congestion window shrinks, once per window of data. */
void tp_req_loss(struct sof_tqp *t, bool timeout);
/* The oldest unacknowledged PSN moves to una: the window grows. */
void tp_req_acked(struct sof_tqp *t, uint32_t una);

/* ---- completer.c ------------------------------------------------------------ */

/* A response packet (ACK, NAK, read response, atomic ACK) for t. */
void tp_comp_packet(struct sof_tqp *t, const struct roce_hdr *h, const uint8_t *payload,
		    uint32_t paylen);
/* Complete the oldest WQE of t with status (successful ones only when
 * signaled) and release its slot. */
void tp_comp_wqe(struct sof_tqp *t, int status);
/* Move the QP to ERROR (IBA 10.3.1): flush every WQE of the network send
 * queue and tell the owner. event: async event for the owner or 0. */
void tp_qp_error(struct sof_tqp *t, uint32_t event);
/* Flush what the network send queue holds of a QP in ERROR. */
void tp_flush(struct sof_tqp *t);

/* ---- responder.c ------------------------------------------------------------ */

/* A request packet for t from src (already validated against the QP). */
void tp_resp_packet(struct sof_tqp *t, const struct roce_hdr *h, const uint8_t *payload,
		    uint32_t paylen, const struct roce_addr *a);
/* Forget the requests kept ahead of the expected PSN. */
void tp_resp_ooo_clear(struct sof_tqp *t);
/* Send the coalesced ACK of t if one is due. */
void tp_resp_flush_ack(struct sof_tqp *t);
/* t's QP is destroyed: it lingers to acknowledge repeated requests. */
void tp_resp_linger(const struct sof_tqp *t);
/* The same from what a program's engine knew of its QP (DESTROY_QP). */
void tp_linger_add(uint32_t qpn, uint32_t dqpn, uint32_t epsn, uint32_t msn,
		   const struct tp_path *path);
/* A request for QP qpn, which no longer exists: answered when the QP
 * lingers and the request repeats one it had received. */
bool tp_resp_lingering(uint32_t qpn, const struct roce_hdr *h, const struct roce_addr *a);
/* A UD datagram for t. */
void tp_resp_ud(struct sof_tqp *t, const struct roce_hdr *h, const uint8_t *payload,
		uint32_t paylen, const struct roce_addr *a);

#endif
