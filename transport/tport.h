/*
 * The RoCEv2 transport engine's insides, shared by the files of
 * transport/ and by tests that drive the engine directly (tests/fuzz,
 * tests/unit): the per-QP transport state and the functions the roles
 * call of each other. A host uses only tp.h.
 *
 * Files by role, as Linux rxe: the port (udp.c: sockets and send
 * batching, RoCEv2 over UDP), the receive classifier (recv.c), the
 * per-QP state (qp.c), the timers (timer.c), the requester
 * (requester.c), the completer (completer.c), the responder
 * (responder.c), registered memory (mr.c), multicast groups (mcast.c).
 * No locks: see tp.h's lock contract.
 */
#ifndef TPORT_H
#define TPORT_H

#include "tp.h"

#include "sof_list.h"
#include "sof_util.h"

#include <errno.h>
#include <infiniband/verbs.h>
#include <stdatomic.h>
#include <string.h>

/* The most SGEs of a work request (the device limit, max_sge). */
#define TP_MAX_SGE 32u
_Static_assert(TP_MAX_SGE == SOF_RESP_SGE, "the shared responder state holds any receive WQE");

/* Largest UDP payload: headers, 4096 bytes of payload, pad, ICRC. */
#define TP_MAX_PKT (ROCE_MAX_HDR + 4096 + 4 + ROCE_ICRC_LEN)
/* Packets a requester may have sent and not seen acknowledged (the
 * largest congestion window). */
#define TP_WINDOW 512u
#define TP_MIN_CWND 2u
/* A fresh QP's first window (slow start from it up to TP_WINDOW): a whole
 * TP_WINDOW at once queues behind itself, and the round trips its first
 * packets measure are then the queue's, not the path's. */
#define TP_INIT_CWND 16u
/* The requester asks for an ACK at least every this many packets. */
#define TP_ACKREQ_EVERY 64u
/* A PSN further behind the expected one than this is not a duplicate but
 * garbage (IBA 9.7.5.1.2: the duplicate region is half the PSN space; we
 * keep much less history). */
#define TP_DUP_WINDOW (1 << 22)
/* The most packets one message may take: a quarter of the PSN space. */
#define TP_MAX_MSG_PKTS (1u << 22)

/* RC and XRC (INI and TGT QPs) are the reliable connected service: ACKs,
 * retransmission, READ and atomics (IBA 9.7; XRC annex) */
static inline bool tp_reliable(uint32_t type)
{
	return type == IBV_QPT_RC || type == IBV_QPT_XRC_SEND || type == IBV_QPT_XRC_RECV;
}

/* The service bits of the opcodes a connected QP sends */
static inline uint8_t tp_svc(uint32_t type)
{
	if (type == IBV_QPT_UC)
		return ROCE_SVC_UC;
	if (type == IBV_QPT_XRC_SEND || type == IBV_QPT_XRC_RECV)
		return ROCE_SVC_XRC;
	return ROCE_SVC_RC;
}

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
	uint32_t xrcsrq;  /* XRC INI QP: the XRCETH's SRQ number */
	struct sof_sge sge[TP_MAX_SGE];
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

/* A request that arrived ahead of the expected PSN, kept (responder.c):
 * up to TP_OOO_SLOTS ahead from a requester that speaks the extension
 * (what a SACK's map can name), TP_OOO_STD from any other. A slot's
 * payload buffer is allocated when the slot is first used. */
#define TP_OOO_SLOTS ROCE_SACK_MAX_BITS
#define TP_OOO_STD ROCE_SACK_BITS
#define TP_OOO_NAK_AFTER 3u
#define TP_OOO_PAYLOAD 4096u
struct tp_ooo {
	bool used;
	struct roce_hdr h;
	uint32_t paylen;
	uint8_t *payload; /* TP_OOO_PAYLOAD bytes */
};

/* Requester with a SACKing peer: when each PSN of the window last left
 * and whether it was a resend (sack.c), by PSN modulo TP_OOO_SLOTS. */
struct tp_sack_tx {
	uint64_t ns;
	bool resent;
	bool sacked; /* a SACK named it since it last left */
};

struct sof_tqp {
	struct tp_qp *qp;
	struct sof_link link;	    /* in tp.qps */
	struct sof_link ack_link;   /* in tp.acks while a coalesced ACK is due */
	struct sof_link timer_link; /* in tp.timers while a timer may be set */
	bool net;		    /* RC/UC whose peer is on another host */
	uint32_t state;		    /* enum ibv_qp_state, as last modified */
	struct tp_path path;	    /* RC/UC primary path */
	uint32_t mtu;		    /* path MTU in bytes */
	uint32_t dqpn;
	uint32_t qkey;
	uint32_t xrcsrq; /* XRC TGT QP: the XRCETH of the message in progress */
	uint32_t access; /* qp_access_flags */
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
	uint8_t max_rd_atomic, max_dest_rd_atomic;
	/* IBV_QP_PKEY_INDEX: the entry of the port's P_Key table its
	 * packets carry and its receives are checked against (IBA 10.9.2);
	 * ib: a QP of sofib0 (the RoCE port's table is the default alone) */
	uint16_t pkey_index;
	bool ib;

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
	/* IBV_QP_RATE_LIMIT (requester.c): a token bucket, the next packet
	 * no earlier than pace_ns; pace_wait_ns the timer that resumes the
	 * send loop, 0: none */
	uint32_t rate_kbps;
	uint64_t pace_ns, pace_wait_ns;
	uint32_t una_psn;  /* oldest PSN not acknowledged */
	uint32_t max_psn;  /* the PSN after the highest ever sent */
	/* Congestion window (packets in flight), AIMD as TCP's: go-back-N
	 * on a lossy link resends a whole window per loss, so the window
	 * shrinks on loss and grows back with acknowledged packets. */
	uint32_t cwnd, ssthresh, cwnd_acc;
	uint32_t recover_psn; /* losses before una passes it are one event */
	bool in_recovery;
	uint64_t loss_ns;	   /* the last loss seen (tp_req_loss), 0: none yet */
	uint32_t nak_psn, nak_una; /* the last sequence-error NAK acted on */
	uint64_t nak_ns;
	uint64_t reread_ns; /* the rest of a READ was last asked for again then */
	uint64_t stream_ns; /* first READ response since progress that made none, 0: none */
	/* round-trip time: one packet sent for the first time is timed to
	 * the ACK that covers it (none across a go-back: Karn's rule) */
	uint32_t rtt_psn;
	uint64_t rtt_ns;    /* when rtt_psn left, 0: none timed */
	uint64_t srtt_ns;   /* smoothed (1/8 per sample), 0: none yet */
	uint64_t rttvar_ns; /* its mean deviation (1/4 per sample, RFC 6298) */
	uint64_t mrtt_ns;   /* the least, drifting up by 1/64 of each larger sample */
	uint64_t prtt_ns;   /* the largest, falling by 1/PRTT_FALL of the gap to each smaller one */
	uint64_t tlp_ns;    /* the last tail-loss probe or early go-back went then */

	/* responder (responder.c) */
	uint32_t epsn;	  /* expected PSN */
	uint32_t msn;	  /* messages completed (IBA 9.7.5.1.1) */
	bool nak_sent;	  /* a sequence-error NAK is out (9.7.5.2.1) */
	uint32_t oos_psn; /* the last PSN seen ahead of epsn */
	bool ack_pending; /* a coalesced ACK is due */
	bool ack_now;	  /* a resend or probe came: no host may hold that ACK */
	uint32_t in_msg;  /* 0, or ROCE_F_SEND / ROCE_F_WRITE: message in progress */
	bool rcv_active;  /* a receive WQE is taken for the SEND in progress */
	uint64_t rcv_wr_id;
	uint32_t rcv_nsge;
	struct sof_sge rcv_sge[TP_MAX_SGE];
	uint64_t rcv_off; /* bytes of the SEND received so far */
	uint64_t wr_va;	  /* WRITE in progress */
	uint32_t wr_rkey;
	uint64_t wr_left;
	uint64_t wr_len;
	struct tp_res *res; /* max_dest_rd_atomic entries (ring) */
	struct tp_ooo *ooo; /* TP_OOO_SLOTS, by PSN; allocated on first use */
	uint32_t nooo;
	uint32_t ooo_top; /* the highest PSN kept while nooo */
	uint32_t nres, res_next;
	uint32_t res_pub; /* res_next when last published (takeover.c) */

	/* selective acknowledgements (sack.c), negotiated in-band */
	bool sack_peer;		/* responder: the requester set ext: ACKs carry SACKs */
	bool sack_ok;		/* requester: the responder answered with ext */
	bool sack_seen;		/* requester: an answer came (with ext or not) */
	struct tp_sack_tx *sack_tx; /* TP_OOO_SLOTS; allocated with sack_ok */
	uint64_t sack_rack_ns;	/* the newest send known to have arrived (RACK) */
	uint64_t sack_first_ns;	/* the same of first sends only (reordering) */
	uint64_t sack_rtt_ns;	/* the round trip of that send, 0: a resend */
	uint64_t sack_base_ns;	/* the least such round trip */
	uint64_t sack_cut_ns;	/* the window was last cut for delay then */
	bool sack_reordered;	/* a packet arrived after one sent later */
	uint32_t sack_cnt;	/* PSNs beyond una the last SACK said arrived */
	uint32_t sack_lost;	/* holes seen since sack_epoch */
	uint32_t sack_epoch;	/* PSN that ends the round trip being counted */
	uint8_t sack_tlps;	/* tail-loss probes since the last progress */
	bool sack_deferred;	/* the transport timer was deferred since then */
};

/* The link layer under the engine: how a packet leaves and arrives on
 * one kind of port (transport/README.md). RoCEv2 over UDP (udp.c) is the
 * first; an InfiniBand port (LRH, LID routing, VCRC) or an iWARP one
 * fills the same table. The engine calls send once per packet and flush
 * once per batch; receive is the port's own (it calls tp_recv). */
typedef int (*tp_gather_fn)(void *arg, uint8_t *dst, uint32_t len);
struct tp_port_ops {
	const char *name;
	/* bytes of a port address (a GID: 16) and the largest payload of a
	 * packet (the path MTU caps it further) */
	uint32_t addr_len, max_payload;
	/* Build what goes below the BTH and after the payload (RoCEv2: pad
	 * and ICRC over the IP/UDP pseudo-header; IB: LRH, GRH, ICRC, VCRC),
	 * with the BTH and extended headers of h and the payload from gather
	 * or, when ref is not NULL, by reference; queue it on path. */
	int (*send)(const struct tp_path *path, struct roce_hdr *h, uint32_t paylen,
		    tp_gather_fn gather, void *arg, const struct iovec *ref, uint32_t nref);
	/* hand what send queued to the link, in order */
	void (*flush)(void);
	/* the flow entropy of a path between two QPs (RoCEv2: the UDP source port) */
	uint16_t (*flow_port)(bool v6, uint32_t sqpn, uint32_t dqpn);
};
extern const struct tp_port_ops tp_roce_udp_port;
extern const struct tp_port_ops tp_ib_port;

/* The engine's global state (tp.c). */
struct tp_state {
	const struct tp_host_ops *host;
	const struct tp_port_ops *port; /* the RoCEv2 port (a test's own in tests/) */
	const struct tp_port_ops *ib;	/* the InfiniBand port, NULL: none (tp_ib_start) */
	/* the LRH of the packet being classified when it came by the IB
	 * port (iblink.c): a UD receive completes with its SLID and SL */
	struct {
		bool on;
		uint16_t slid, dlid;
		uint8_t sl;
		bool global;
	} rx_ib;
	int timer_fd;
	uint64_t timer_armed_ns;    /* the earliest deadline the timer is for */
	uint64_t timer_fd_ns;	    /* what the timerfd is set for, 0 once read */
	bool timer_fd_idle;	    /* the host runs the deadline: timerfd left alone */
	struct sof_link qps;	    /* every sof_tqp */
	struct sof_link acks;	    /* those owing a coalesced ACK */
	struct sof_link timers;	    /* those whose timer_ns or rnr_ns may be set */
	uint32_t ntx;		    /* packets the port queued, not yet sent */
	uint64_t *counters, *drops; /* where the engine counts (sof_proto.h) */
	/* tp_input_end leaves the ACKs due for its next call (tp_defer_acks) */
	bool defer_acks;
	/* rx_flow is set while tp_rx reads a flow socket, and flow_foreign
	 * tells that a packet of it named a QP not ours */
	bool rx_flow, flow_foreign;
	bool rx_stop; /* tp_rx_stop: the tp_rx under way reads no more */
	/* the packet tp_input has in hand (the UDP payload as it came),
	 * NULL: none (one of the InfiniBand link) */
	const uint8_t *rx_pkt;
	size_t rx_pkt_len;
	tp_recv_fn hooks[3]; /* TP_HOOK_* */
	/* RDMA WRITE, READ and atomic request packets received (tp_onesided) */
	uint64_t onesided;
	/* request packets of connected QPs received, any opcode (tp_requests) */
	uint64_t requests;
	/* tp_now's clock: while now_scope, read once (now_ns, 0: not yet) */
	unsigned now_scope;
	uint64_t now_ns;
};

extern struct tp_state tp;

/* The clock for the transport's deadlines and round-trip samples. In the
 * handling of one packet (tp_recv: a packet received; tp_req_progress,
 * anew for each packet built: one sent) it is read once, at its first
 * use, and that time serves the rest of the handling: an ACK's SACK and
 * round-trip sample, a request's send time, its round-trip start and
 * its timer (each sof_now_ns costs ~40 ns on a virtual machine: five of
 * them were ~0.2 us of a ping-pong's one-way time). The timers are
 * microseconds to milliseconds long; a time older by one packet's
 * handling moves none of them measurably. Outside a handling: read
 * each time. */
static inline uint64_t tp_now(void)
{
	if (!tp.now_scope)
		return sof_now_ns();
	if (!tp.now_ns)
		tp.now_ns = sof_now_ns();
	return tp.now_ns;
}

/* A handling begins (the clock is read afresh at its first use), or one
 * more packet of it: tp_now_fresh. */
static inline void tp_now_enter(void)
{
	if (!tp.now_scope++)
		tp.now_ns = 0;
}

static inline void tp_now_leave(void) { tp.now_scope--; }

static inline void tp_now_fresh(void) { tp.now_ns = 0; }

static inline void tp_count(enum sof_counter c, uint64_t n) { tp.counters[c] += n; }
static inline void tp_drop(enum sof_dropctr d) { tp.drops[d]++; }

/* Protocol tracing into the host's log, when SOFTOFED_TRACE is set in
 * its environment (tp_start reads it). */
extern bool tp_tracing;
#define tp_trace(...)                                                                              \
	do {                                                                                       \
		if (tp_tracing)                                                                    \
			tp_log(__VA_ARGS__);                                                       \
	} while (0)

/* PSNs a message of len bytes takes on t's path (a zero-length one: 1). */
static inline uint32_t tp_npkts(const struct sof_tqp *t, uint64_t len)
{
	return len ? (uint32_t)((len + t->mtu - 1) / t->mtu) : 1;
}

/* ---- the port (udp.c for RoCEv2) ------------------------------------------ */

/* Build a packet and queue it to be sent on path (tp_tx_flush sends the
 * queue; it runs when the queue is full and at the end of every event of
 * the host's loop). 0, or -errno when the packet could not be built (the
 * gather's error, -EMSGSIZE) or has no way to leave by (-ENETUNREACH). A
 * packet the link refuses later is lost, as on a wire, and the transport
 * recovers. */
static inline int tp_send(const struct tp_path *path, struct roce_hdr *h, uint32_t paylen,
			  tp_gather_fn gather, void *arg)
{
	const struct tp_port_ops *p = path->link == TP_LINK_IB ? tp.ib : tp.port;

	if (!p)
		return -ENETUNREACH;
	return p->send(path, h, paylen, gather, arg, NULL, 0);
}
/* The same with the payload by reference, in at most TP_TX_REFS pieces
 * (registered memory of an RC WRITE or SEND, or of a READ's responses): the
 * memory must stay mapped until the queue is sent (a host revokes a region
 * only after tp_tx_flush) and its contents are what the packet carries, so
 * only for what no completion releases before that (not UC, UD or inline
 * data). */
#define TP_TX_REFS 4u
int tp_send_ref(const struct tp_path *path, struct roce_hdr *h, const struct iovec *pay,
		uint32_t npay);
/* The RoCEv2 port's start: UDP GRO on the receive sockets fd4 and fd6
 * (-1: none), and (tx) the send sockets. */
void tp_udp_start(int fd4, int fd6, bool tx);
/* The port's receive socket of a family (-1: none): multicast joins it
 * to groups (mcast.c). */
int tp_udp_rx_fd(bool v6);
/* The GID at index of the host's table, or NULL when the entry is empty. */
const uint8_t *tp_sgid(uint32_t index);

/* ---- iblink.c: what the roles ask of the InfiniBand port ------------------------ */

/* A UD WQE's path by the IB port (a sofib0 QP): to dlid, a GRH when
 * global (dgid the peer's GID), else LID GIDs. false when it cannot be
 * (no IB port, a DLID not unicast). */
bool tp_ib_ud_path(struct tp_path *p, const uint8_t dgid[16], uint16_t dlid, uint8_t sl,
		   uint8_t path_bits, bool global, uint8_t tclass, uint8_t hop_limit,
		   uint32_t flow_label);
/* A receive completion of what the IB port took (tp.rx_ib.on): the LRH's
 * SLID, SL and the DLID's path bits; of the RoCEv2 port: left as they are. */
void tp_ib_wc_lrh(uint16_t *slid, uint8_t *sl, uint8_t *path_bits);
/* The 40 bytes before a UD datagram of paylen bytes from a, and the
 * completion's flags for them: of the RoCEv2 port its IP header
 * (sof_make_grh), IBV_WC_GRH and the packet type in bits 8-15; of the IB
 * port its GRH when it had one (then IBV_WC_GRH), else zeros and 0. */
uint32_t tp_ud_grh(uint8_t grh[40], const struct roce_addr *a, uint32_t paylen);

/* ---- recv.c: the receive classifier -------------------------------------------- */

/* A packet the port parsed and checked (tp_input): classify it by its
 * destination QP, validate it against the QP, and hand it to the
 * completer, the responder, or a hook. */
void tp_recv(const struct roce_hdr *h, const uint8_t *payload, uint32_t paylen,
	     const struct roce_addr *a);
/* A coalesced ACK of t is due at the end of this receive batch. */
void tp_ack_due(struct sof_tqp *t);

/* ---- timer.c ------------------------------------------------------------------ */

/* t set timer_ns, probe_ns or rnr_ns: the timer handler must look at it. */
void tp_timer_watch(struct sof_tqp *t);

/* ---- mr.c ---------------------------------------------------------------- */

/* The registered region with key, checked for use by qp: same PD, the
 * access bits in need (IBV_ACCESS_*) all granted, [va, va+len) inside it.
 * Returns a pointer to va in the host's view of it, or NULL: the host's
 * look-up (one indirect call per SGE). */
static inline uint8_t *tp_mr_ptr(const struct tp_qp *qp, uint32_t key, uint64_t va, uint64_t len,
				 uint32_t need)
{
	return tp.host->mr_ptr(qp, key, va, len, need);
}

/* After writing through a pointer of tp_mr_ptr (tp_host_ops.mr_done). */
static inline void tp_mr_done(const struct tp_qp *qp, uint8_t *p, uint64_t written)
{
	tp.host->mr_done(qp, p, written);
}
/* Copy between a linear buffer and an SGE list of the owner of qp,
 * starting off bytes into the list. to_sgl: write into the SGEs (they need
 * IBV_ACCESS_LOCAL_WRITE). 0, -EACCES (a key, range or access check failed)
 * or -EMSGSIZE (past the end of the list). */
int tp_sgl_copy(const struct tp_qp *qp, const struct sof_sge *sge, uint32_t nsge, uint64_t off,
		uint8_t *buf, uint64_t len, bool to_sgl);
/* Bytes [off, off+len) of an SGE list of the owner of qp, checked for
 * reading as tp_sgl_copy does, as at most max pieces of the host's
 * mappings. The number of pieces, -EACCES, -EMSGSIZE (past the end of the
 * list) or -E2BIG (more than max pieces). */
int tp_sgl_map(const struct tp_qp *qp, const struct sof_sge *sge, uint32_t nsge, uint64_t off,
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
/* The QP's state ERROR in its shared segment, its CQs' owners told, the
 * host's record and event (the end of tp_qp_error; the daemon's takeover
 * ends a program's QP with it). */
void tp_qp_end(struct tp_qp *qp, uint32_t event);
/* Flush what the network send queue holds of a QP in ERROR. */
void tp_flush(struct sof_tqp *t);

/* ---- sack.c: selective acknowledgements ------------------------------------- */

/* Whether this engine speaks the extension (by default; SOFTOFED_SACK=0
 * makes it a standard IBA peer); tp_start sets it. */
extern bool tp_sack_on;
void tp_sack_start(void);
/* Responder: the SACK of what is kept ahead of epsn, into buf
 * (ROCE_SACK_MAX_LEN bytes); returns its length. */
uint32_t tp_sack_build(const struct sof_tqp *t, uint8_t *buf);
/* Requester: the SACK an ACK of PSN a carried (after ack_upto; paylen 0:
 * none, a plain ACK). */
void tp_sack_input(struct sof_tqp *t, uint32_t a, const uint8_t *payload, uint32_t paylen);
/* Requester: packets in flight, the SACKed ones not counted; and whether
 * the window lets the next packet leave, which takes npsn PSNs (a READ
 * request: one per response packet). */
bool tp_sack_window_open(const struct sof_tqp *t, uint32_t npsn);
/* Requester: the tail-loss probe's deadline from now, 0: none. */
uint64_t tp_sack_probe_ns(const struct sof_tqp *t, uint64_t now, uint64_t to);
/* Requester: a round-trip sample of rtt ns into srtt_ns, and of wait ns
 * (at most rtt: how long the answer took after the last send of what it
 * answers) into prtt_ns; returns rtt as taken (bounded: a stall of this
 * process is no round trip). */
uint64_t tp_rtt_sample(struct sof_tqp *t, uint64_t rtt, uint64_t wait);
/* Requester: una moved from old to una (tp_req_acked). */
void tp_sack_acked(struct sof_tqp *t, uint32_t old, uint32_t una);
/* Requester: the responder answered with the extension's bit; false
 * when its records cannot be had (the QP stays with go-back-N). */
bool tp_sack_begin(struct sof_tqp *t);
/* Requester: PSN psn of t leaves now (its send time, for RACK). */
void tp_sack_sent(const struct sof_tqp *t, uint32_t psn);
/* Requester: the tail-loss probe, the newest packet that can be sent
 * alone sent again; false when none can. */
bool tp_sack_probe(struct sof_tqp *t);
/* Requester (requester.c): send PSN psn once more, alone; false when it
 * cannot be (not a packet of a WQE in flight). A READ is asked for again
 * from its first PSN only; for a probe, also for its last response alone. */
bool tp_req_resend(struct sof_tqp *t, uint32_t psn, bool probe);

/* ---- responder.c ------------------------------------------------------------ */

/* What the responder decided about a request (tp_resp_names, traced with
 * SOFTOFED_TRACE), in the order of its checks: the PSN first (IBA
 * 9.7.5.1), then the request's own checks, each failure a NAK class. */
enum tp_resp_decision {
	TP_RESP_PSN_OK,		 /* the expected PSN: its checks follow, then it runs */
	TP_RESP_AHEAD_KEPT,	 /* ahead of the expected PSN, kept for its turn */
	TP_RESP_SEQ_ERR_NAK,	 /* ahead: PSN sequence error NAK (9.7.5.2.1) */
	TP_RESP_SEQ_ERR_DROP,	 /* ahead: dropped, the NAK is out already */
	TP_RESP_DUPLICATE,	 /* behind: answered again, not executed (9.7.5.1.2) */
	TP_RESP_DUP_DROP,	 /* behind: beyond the window or no matching resource */
	TP_RESP_RNR,		 /* no receive WQE: RNR NAK (9.7.5.2.8) */
	TP_RESP_REMOTE_ACCESS,	 /* R_Key, range or access: NAK (9.7.5.2.4, class C) */
	TP_RESP_INVALID_REQUEST, /* opcode sequence, length, resources: NAK (class B) */
	TP_RESP_REMOTE_OP_ERR,	 /* the receive WQE's buffers failed: NAK (class D) */
	TP_RESP_NR
};
extern const char *const tp_resp_names[TP_RESP_NR];

/* A request packet for t from src (already validated against the QP). */
void tp_resp_packet(struct sof_tqp *t, const struct roce_hdr *h, const uint8_t *payload,
		    uint32_t paylen, const struct roce_addr *a);
/* Forget the requests kept ahead of the expected PSN; _free: and their
 * buffers. */
void tp_resp_ooo_clear(struct sof_tqp *t);
void tp_resp_ooo_free(struct sof_tqp *t);
/* Send the coalesced ACK of t if one is due. */
void tp_resp_flush_ack(struct sof_tqp *t);
/* An ACK or NAK (syndrome) of psn/msn on path to dqpn, from no QP: an
 * RC or UC answer (responder.c), also for a lingering QP (qp.c), with
 * P_Key pkey. */
void tp_send_ack_to(const struct tp_path *path, uint32_t dqpn, uint8_t syndrome, uint32_t psn,
		    uint32_t msn, uint8_t svc, uint16_t pkey);
/* The P_Key of t's packets: its port's table at its index (qp.c). */
uint16_t tp_qp_pkey(const struct sof_tqp *t);
/* IBA 10.9.3: P_Keys a and b match when their low 15 bits are equal and
 * not 0, and at least one is a full member (bit 15). */
static inline bool tp_pkey_match(uint16_t a, uint16_t b)
{
	return (a & 0x7fff) && (a & 0x7fff) == (b & 0x7fff) && ((a | b) & 0x8000);
}
/* t's QP is destroyed: it lingers to acknowledge repeated requests (qp.c). */
void tp_resp_linger(const struct sof_tqp *t);
/* A request for QP qpn, which no longer exists: answered when the QP
 * lingers and the request repeats one it had received. */
bool tp_resp_lingering(uint32_t qpn, const struct roce_hdr *h, const struct roce_addr *a);
/* The responder state of t's QP shared with the daemon (qp->rshm,
 * takeover.c): taken, and taken back from the daemon when it ran (true),
 * before a request; published and given up after it. */
bool tp_resp_shared_enter(struct sof_tqp *t);
void tp_resp_shared_leave(struct sof_tqp *t);
/* A request for qp, whose transport runs in its owner, read by a host
 * that runs its responder while the owner does not (takeover.c): true
 * when taken care of (executed, acknowledged or dropped), false when the
 * host does not take over qp now. */
bool tp_takeover_packet(struct tp_qp *qp, const struct roce_hdr *h, const uint8_t *payload,
			uint32_t paylen, const struct roce_addr *a);
/* The next receive WQE of qp (its RQ or SRQ; rwqe.c): consumed, its
 * wr_id, SGEs (up to TP_MAX_SGE) and their number. 0, -EAGAIN when there
 * is none, -EINVAL when it is malformed (consumed, *wr_id set, *nsge 0:
 * the caller completes it in error). */
int tp_rwqe_take(struct tp_qp *qp, uint64_t *wr_id, struct sof_sge *sge, uint32_t *nsge);
/* A receive completion of qp for the WQE wr_id taken for request h (its
 * immediate data or invalidated R_Key reported), from src_qp, pushed
 * into qp's receive CQ (rwqe.c). extra_flags: IBV_WC_* flags in bits 7:0,
 * the completion's sl in 15:8. */
void tp_recv_complete(struct tp_qp *qp, uint64_t wr_id, uint32_t src_qp, int status, uint8_t opcode,
		      uint32_t byte_len, const struct roce_hdr *h, uint32_t extra_flags);
/* A UD datagram for t. */
void tp_resp_ud(struct sof_tqp *t, const struct roce_hdr *h, const uint8_t *payload,
		uint32_t paylen, const struct roce_addr *a);

#endif
