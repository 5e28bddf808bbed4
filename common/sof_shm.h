/*
 * Shared-memory layouts of the software HCA.
 *
 * Every queue a verbs object owns lives in a sealed memfd that the owning
 * library creates, hands to the device daemon, and that executors in other
 * processes map after the daemon has checked their right to it:
 *
 *   QP segment:   struct sof_qp_shm, then the receive ring (absent with SRQ)
 *   SRQ segment:  struct sof_srq_shm, then the receive ring
 *   CQ segment:   struct sof_cq_shm, then SOF_CQ_CAPACITY(cqe) entries
 *   object table: the daemon's array of 64-bit generations, then the GID
 *                 table (sof_gid.h); read-only for all
 *
 * Everything in these segments may have been written by another process and
 * is untrusted: sizes and strides come from the daemon's answer, never from
 * the segment; indexes read from a segment are masked before use; entries
 * are copied before they are validated.
 */
#ifndef SOF_SHM_H
#define SOF_SHM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sof_util.h"

#define SOF_CACHELINE 64
#define SOF_ALIGNED __attribute__((aligned(SOF_CACHELINE)))

/* Producer and consumer indexes of a ring, each on its own cache line. */
struct sof_ring_idx {
	_Atomic uint32_t head SOF_ALIGNED; /* consumer: next entry to take */
	_Atomic uint32_t tail SOF_ALIGNED; /* producer: next entry to fill */
};

struct sof_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

/* Receive WQE as posted by the owner; stride = SOF_RWQE_STRIDE(max_sge). */
struct sof_rwqe {
	uint64_t wr_id;
	uint32_t num_sge;
	uint32_t rsvd;
	struct sof_sge sge[];
};
#define SOF_RWQE_STRIDE(max_sge) \
	((uint32_t)(sizeof(struct sof_rwqe) + (max_sge) * sizeof(struct sof_sge)))

/* A responder resource (IBA 9.7.5.1.4), shared: a READ or atomic
 * executed, kept for its duplicates (struct tp_res, transport/tport.h). */
struct sof_resp_res {
	uint32_t type;	      /* TP_RES_* (transport/tport.h), 0: none */
	uint32_t psn, npkts;  /* the request's PSN, the PSNs it occupies */
	uint32_t rkey, len;   /* READ: the range the request was granted */
	uint32_t rsvd;
	uint64_t va;
	uint64_t orig; /* atomic: the value returned */
};
/* the most recent responder resources the shared state keeps */
#define SOF_RESP_RES 16u

/* The largest receive WQE (SGEs) the shared responder state holds:
 * transport/tport.h's TP_MAX_SGE. */
#define SOF_RESP_SGE 32u

/* The responder state of an RC or UC QP whose transport runs in its owner
 * (the engine in the program), shared with the daemon, which runs that
 * responder for in-order requests while the owner does not
 * (transport/takeover.c): it places WRITEs, answers READs and atomics,
 * and delivers SENDs and WRITEs with immediate data into the receive WQEs
 * of the QP's ring (or SRQ), completed in its receive CQ as the owner
 * would. Every field but lock is read and written only by the holder of
 * lock; the daemon only try-locks it and checks everything it reads. */
struct sof_resp_shm {
	_Atomic uint32_t lock; /* SOF_RESP_FREE, _OWNER or _DAEMON */
	uint32_t valid;	       /* the owner published its state since the last modify */
	uint32_t epsn, msn;    /* the expected PSN, messages completed */
	uint32_t in_msg;       /* SOF_RESP_MSG_* */
	uint32_t kept;	       /* the owner keeps packets ahead of epsn */
	uint32_t mtu;	       /* path MTU in bytes */
	uint32_t wr_rkey;      /* the RDMA WRITE in progress (SOF_RESP_MSG_WRITE) */
	uint64_t wr_va, wr_len, wr_left;
	uint32_t daemon_ran; /* the daemon changed the above: the owner takes them */
	uint32_t max_dest;   /* max_dest_rd_atomic: 0, no READ or atomic */
	/* res[i % SOF_RESP_RES] for the last SOF_RESP_RES i < res_next; those
	 * from res_owner on the daemon's (the owner takes them) */
	uint32_t res_next, res_owner;
	struct sof_resp_res res[SOF_RESP_RES];
	/* the receive WQE taken for the SEND in progress (or kept by a UC
	 * message that was lost): rcv_active, its wr_id and SGEs, and the
	 * bytes of the SEND placed so far */
	uint32_t rcv_active, rcv_nsge;
	uint64_t rcv_wr_id, rcv_off;
	struct sof_sge rcv_sge[SOF_RESP_SGE];
	uint32_t kept_top; /* while kept: the highest PSN the owner keeps */
	/* the daemon's sequence-error NAK for epsn (IBA 9.7.5.2.1): sent,
	 * and the highest PSN that came ahead of epsn since */
	uint32_t nak_sent, nak_oos;
};
#define SOF_RESP_FREE 0u
#define SOF_RESP_OWNER 1u
#define SOF_RESP_DAEMON 2u
#define SOF_RESP_MSG_NONE 0u  /* between messages */
#define SOF_RESP_MSG_WRITE 1u /* an RDMA WRITE in progress, wr_* */
#define SOF_RESP_MSG_SEND 2u  /* a SEND in progress, into rcv_* */

/* QP segment header. State fields are written by the owner library and by
 * the daemon (which moves a QP to ERROR when its peer dies). */
struct sof_qp_shm {
	_Atomic uint32_t state;       /* enum ibv_qp_state */
	_Atomic uint32_t dest_qpn;    /* RC/UC: connected peer */
	_Atomic uint32_t qkey;        /* UD */
	_Atomic uint32_t access;      /* qp_access_flags (remote R/W/atomic) */
	_Atomic uint32_t min_rnr_timer; /* RC responder's RNR NAK timer code */
	_Atomic uint32_t rq_waiters;  /* senders waiting on an empty RQ */
	_Atomic uint32_t peer_gone;   /* set by the daemon: connected peer died */
	struct sof_resp_shm resp;     /* RC, engine in the program: its responder */
	struct sof_ring_idx rq SOF_ALIGNED;
	/* receive ring at SOF_QP_RQ_OFF */
};
#define SOF_QP_RQ_OFF ((size_t)sizeof(struct sof_qp_shm))

/* A send WQE in the network send ring, as the owner posted it; stride
 * SOF_NWQE_STRIDE(max_sge, max_inline). Followed by num_sge struct sof_sge,
 * or with IBV_SEND_INLINE by inline_len bytes of data. */
struct sof_nwqe {
	uint64_t wr_id;
	uint32_t opcode;      /* enum ibv_wr_opcode */
	uint32_t send_flags;  /* enum ibv_send_flags */
	uint32_t imm_data;    /* network order */
	uint32_t num_sge;
	uint32_t inline_len;
	uint32_t rkey;
	uint64_t remote_addr;
	uint64_t compare_add;
	uint64_t swap;
	/* UD: the destination (Q_Key already resolved against the QP's);
	 * XRC INI QP: remote_qpn is the XRC SRQ number */
	uint32_t remote_qpn;
	uint32_t remote_qkey;
	uint8_t dgid[16];
	uint32_t flow_label;
	uint8_t sgid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint8_t rsvd;
	/* UD of sofib0: link 1 (the InfiniBand port), SOF_NWQE_GLOBAL when a
	 * GRH goes (dgid the peer's GID); the DLID, SL and path bits */
	uint8_t link;
	uint8_t sl;
	uint8_t path_bits;
	uint8_t rsvd2;
	uint16_t dlid;
	uint16_t rsvd3;
	struct sof_sge sge[];
};
#define SOF_NWQE_GLOBAL 0x80u
#define SOF_NWQE_STRIDE(max_sge, max_inline)                                            \
	((uint32_t)((sizeof(struct sof_nwqe) +                                          \
		     ((size_t)(max_sge) * sizeof(struct sof_sge) > (size_t)(max_inline)    \
			  ? (size_t)(max_sge) * sizeof(struct sof_sge)                  \
			  : (size_t)(max_inline)) +                                     \
		     SOF_CACHELINE - 1) &                                               \
		    ~(size_t)(SOF_CACHELINE - 1)))

/* Network send queue segment of a QP: send WQEs the daemon's transport
 * executes (every one of an RC/UC QP whose peer is on another host; UD
 * sends to other hosts). A memfd of its own, mapped only by the owner and
 * the daemon: executors of other processes map the QP segment, and must not
 * be able to post work in the owner's name. */
struct sof_nsq_shm {
	/* tail: the owner's next entry; head: entries the daemon has taken
	 * (copied) */
	struct sof_ring_idx idx;
	/* WQEs the daemon has completed or flushed: tail - done is what
	 * occupies the send queue */
	_Atomic uint32_t done SOF_ALIGNED;
};
#define SOF_NSQ_RING_OFF ((size_t)sizeof(struct sof_nsq_shm))
#define SOF_NSQ_SEG_LEN(size, stride) (SOF_NSQ_RING_OFF + (size_t)(size) * (stride))

struct sof_srq_shm {
	_Atomic uint32_t limit;       /* armed limit, 0 = not armed */
	_Atomic uint32_t error;
	struct sof_ring_idx rq SOF_ALIGNED;
	/* receive ring at SOF_SRQ_RQ_OFF */
};
#define SOF_SRQ_RQ_OFF ((size_t)sizeof(struct sof_srq_shm))

/* The receive WQE a same-host executor carries in a SEND's completion
 * (SOF_CQE_CARRY): the next WQE of the sending QP's own receive ring, which
 * the peer's answer will take, so that the peer's executor need not read
 * it from the ring's cache line (verbs/same_host.c). One SGE. */
struct sof_cqe_carry {
	uint64_t wr_id;
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

enum {
	SOF_CQE_RQ_HEAD = 1 << 0, /* rq_head is valid */
	SOF_CQE_CARRY = 1 << 1,   /* carry and its index (imm_data) are valid */
};

/* A completion entry. Producers reserve a slot by advancing tail, fill it and
 * publish it by storing seq = index + 1 (release); the consumer takes the
 * entry at head once seq matches (acquire). 64 bytes, one cache line. With
 * SOF_CQE_CARRY (a successful SEND without immediate on RC/UC, no stamp),
 * carry overlays the fields that are zero then and imm_data holds the
 * carried WQE's ring index; the consumer reports those fields as zero. */
struct sof_cqe {
	uint64_t wr_id;
	uint32_t byte_len;
	uint32_t imm_data;   /* network order, as in struct ibv_wc */
	uint32_t qp_num;
	uint32_t src_qp;
	uint8_t status;      /* enum ibv_wc_status */
	uint8_t opcode;      /* enum ibv_wc_opcode */
	uint8_t wc_flags;    /* enum ibv_wc_flags (low 8 bits) */
	uint8_t solicited;
	uint8_t xflags;      /* SOF_CQE_*; producers that leave them out zero it */
	uint8_t rsvd[3];
	union {
		struct {
			uint32_t vendor_err;
			uint16_t pkey_index;
			uint16_t slid;
			uint8_t sl;
			uint8_t dlid_path_bits;
			uint8_t rsvd2[6];
			uint64_t timestamp; /* CLOCK_MONOTONIC ns at the push, when shm->stamp */
		};
		struct sof_cqe_carry carry;
	};
	_Atomic uint32_t seq;
	/* SOF_CQE_RQ_HEAD: a receive taken from the QP's own receive ring by a
	 * same-host executor: the ring's head after the take, a hint for the
	 * owner's ibv_post_recv, which then need not read the consumers'
	 * cache line (verbs/poll.c, post.c). */
	uint32_t rq_head;
};
_Static_assert(sizeof(struct sof_cqe) == 64, "cqe is one cache line");
_Static_assert(offsetof(struct sof_cqe, seq) == 56, "seq ends the copied body");

/* Copy an entry's contents but seq (publishing is the caller's). */
static inline void sof_cqe_copy_body(struct sof_cqe *dst, const struct sof_cqe *src)
{
	__builtin_memcpy(dst, src, offsetof(struct sof_cqe, seq));
	dst->rq_head = src->rq_head;
}

enum {
	SOF_CQ_ARM_NONE = 0,
	SOF_CQ_ARM_NEXT = 1,
	SOF_CQ_ARM_SOLICITED = 2,
};

/* Bit 31 of cq tail: the owner is resizing, producers wait. */
#define SOF_CQ_TAIL_LOCK 0x80000000u

struct sof_cq_shm {
	_Atomic uint32_t tail SOF_ALIGNED;   /* producers (any process) */
	_Atomic uint32_t head SOF_ALIGNED;   /* the owner */
	_Atomic uint32_t armed SOF_ALIGNED;  /* SOF_CQ_ARM_* */
	_Atomic uint32_t size;               /* current entries, power of two */
	_Atomic uint32_t attention;          /* daemon: look at attached QPs */
	_Atomic uint32_t overflow;           /* a producer found the CQ full */
	_Atomic uint32_t event_pending;      /* completion events due (one per eventfd token) */
	_Atomic uint32_t stamp;              /* owner: producers set cqe.timestamp */
	/* entries at SOF_CQ_RING_OFF, capacity fixed at creation */
};
#define SOF_CQ_RING_OFF ((size_t)sizeof(struct sof_cq_shm))
/* Every CQ is created with room for the device maximum so that it can be
 * resized in place while producers in other processes hold it mapped; only
 * the pages that are touched take memory (a memfd reserves nothing). The
 * maximum is mlx5's (max_cqe 2^22 - 1): libraries size CQs from the number
 * of peers they expect (libfabric's ofi_rxm asks for 65,536 entries by
 * default), trusting what hardware allows. */
#define SOF_CQ_MAX_CQE 4194304u
#define SOF_CQ_SEG_SIZE (SOF_CQ_RING_OFF + (size_t)SOF_CQ_MAX_CQE * sizeof(struct sof_cqe))

/* Push a completion into the CQ segment at shm (any process may; cqring.c).
 * cq_evfd is the CQ's channel eventfd or -1. head_cache, or NULL: the
 * producer's own copy of the owner's head (0 at first), so that a push
 * reads the owner's cache line only when the ring looks full. cq_evfd is
 * the eventfd of the CQ's completion channel, -1 when the CQ has none (it
 * can never be armed, so the arm is not looked at). Returns 0, 1 when the
 * push consumed the CQ's arm (the event was written to cq_evfd), -ENOSPC when the CQ
 * overflowed (the overflow flag is set for the owner), -EINVAL when the
 * segment's size field is corrupt, -EBUSY when a resize never ends. */
int sof_cq_push(struct sof_cq_shm *shm, const struct sof_cqe *cqe, int cq_evfd,
		_Atomic uint32_t *head_cache);
/* sof_cq_push in two steps, for a producer that moves the data a
 * completion reports after taking its slot, so that the stores of the data
 * and of the entry go out together: sof_cq_reserve takes the slot (its
 * index in *idx; the errors of sof_cq_push), sof_cq_publish fills and
 * publishes it (its return values). A reserved slot must be published
 * soon: the owner's poll stops at it, a resize waits for it. */
int sof_cq_reserve(struct sof_cq_shm *shm, _Atomic uint32_t *head_cache, uint32_t *idx);
int sof_cq_publish(struct sof_cq_shm *shm, uint32_t idx, const struct sof_cqe *cqe, int cq_evfd);
/* sof_cq_publish in place: sof_cq_slot is the reserved slot (NULL when the
 * segment's size field is corrupt: then nothing can be published), which
 * the producer fills (every field but seq, zeros included) and
 * sof_cq_commit publishes (sof_cq_publish's return values). */
struct sof_cqe *sof_cq_slot(struct sof_cq_shm *shm, uint32_t idx);
int sof_cq_commit(struct sof_cq_shm *shm, uint32_t idx, struct sof_cqe *slot, int cq_evfd);
/* The same for the daemon, which serves everyone and must not be held by
 * one CQ owner: a resize or a race that lasts longer than about a thousand
 * yields loses the completion (-EBUSY). Never writes an eventfd. */
int sof_cq_push_daemon(struct sof_cq_shm *shm, const struct sof_cqe *cqe);
/* Tell the owner of a CQ to look at its QPs (a QP moved to ERROR): set
 * attention and, when the CQ is armed, consume the arm and count an event.
 * Returns whether the completion channel must be woken. */
bool sof_cq_attention(struct sof_cq_shm *shm);

/* Object table: one generation word per slot. A cached mapping of a remote
 * object is valid while table[slot] still equals the generation the daemon
 * gave with it; destroying or deregistering changes it. */
#define SOF_OBJTAB_SLOTS (1u << 20)
#define SOF_OBJTAB_SIZE ((size_t)SOF_OBJTAB_SLOTS * sizeof(uint64_t))
/* The same memfd holds, after the table, one page with the port's GID table
 * as the daemon keeps it now (struct sof_gid_shm, sof_gid.h). */
#define SOF_OBJTAB_GID_OFF SOF_OBJTAB_SIZE
#define SOF_OBJTAB_GID_SIZE ((size_t)4096)
#define SOF_OBJTAB_MAP_SIZE (SOF_OBJTAB_GID_OFF + SOF_OBJTAB_GID_SIZE)

/*
 * The fence page of a process that registers memory in place (verbs/
 * mem_share.c): made by that process, handed by the daemon with its
 * /proc/<pid>/mem to the executors of its user. A peer counts itself in
 * cnt[epoch & 1] around each copy into or out of the owner's memory;
 * the owner, to revoke (deregistration) or to move pages (moving set),
 * starts a new epoch and waits until the old one's count drains. A peer
 * that wants a region moved onto a memfd, so that it can map it, writes
 * its key into a slot of req and bumps req_seq (a futex the owner's
 * thread waits on); moves counts what was moved, so peers open again.
 * The owner moves only regions of up to SOF_MOVE_MAX bytes for a peer of
 * its user (larger ones are copied: a move freezes the pages while they
 * are copied); the daemon asks in req_any for a process of another user,
 * which has no other way.
 * Atomics of peers and of the daemon on the owner's memory are a read and
 * a write under alock (not atomic against the owner's own CPU atomics).
 * Written by other processes: every reader bounds its waits.
 */
#define SOF_FENCE_REQS 64
#define SOF_MOVE_MAX (64ull << 20)

struct sof_mem_fence {
	_Atomic uint32_t epoch;
	_Atomic uint32_t cnt[2];
	_Atomic uint32_t moving;
	_Atomic uint32_t moves;
	_Atomic uint32_t req_seq;
	_Atomic uint32_t req_next;
	_Atomic uint32_t alock; /* held over an atomic's read and write */
	_Atomic uint32_t req[SOF_FENCE_REQS];
	_Atomic uint32_t req_any[SOF_FENCE_REQS]; /* the daemon's: whatever the size */
};

/* Ask the owner of fence f to move the region of key onto memfds: a slot
 * of ring (f->req, or the daemon's f->req_any), then a wake of the futex
 * the owner's thread waits on. A request lost to a full ring only keeps
 * the asker copying. */
static inline void sof_fence_ask_move(struct sof_mem_fence *f, _Atomic uint32_t *ring, uint32_t key)
{
	uint32_t i = atomic_fetch_add(&f->req_next, 1) % SOF_FENCE_REQS;

	atomic_store(&ring[i], key);
	atomic_fetch_add(&f->req_seq, 1);
	sof_futex_wake(&f->req_seq, 1, true);
}

/*
 * A connection's region table (SOF_OP_MR_KEYS): registration without a
 * round trip. ibv_reg_mr fills a FREE record with a key the daemon
 * reserved for the connection and makes it POSTED (a release store of
 * state); the daemon takes it (compare-and-swap POSTED -> TAKEN, then its
 * own copy) at the first use of that key by anyone: an executor's
 * OPEN_MR, a packet for the daemon's engine, a window bind, SHARE_MR,
 * REREG_MR, DEREG_MR, QUERY_MR. It checks a record as REG_MR's request;
 * one it refuses becomes BAD, and its key names nothing. A region
 * deregistered while its record is still POSTED is the library's alone
 * (POSTED -> FREE); its key goes back to the daemon with the next
 * MR_KEYS and is never used again. The library writes a record's fields
 * only while it is FREE (or BAD, its own to reuse).
 */
#define SOF_MR_RECS 4096u

enum sof_mr_rec_state { SOF_MR_REC_FREE, SOF_MR_REC_POSTED, SOF_MR_REC_TAKEN, SOF_MR_REC_BAD };

struct sof_mr_rec {
	_Atomic uint32_t state; /* enum sof_mr_rec_state */
	uint32_t key;		/* lkey == rkey */
	uint32_t pd;
	uint32_t access; /* enum ibv_access_flags, in place (SOF_MR_INPLACE implied) */
	uint64_t iova;
	uint64_t addr;
	uint64_t length;
};

#endif
