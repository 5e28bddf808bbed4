/*
 * libsdp.so internals shared by the connection (sdp_conn.c, its data
 * path in sdp_data.c, its connect in sdp_connect.c) and the listener
 * (sdp_listen.c) code: one SDP connection's QP, buffers, flow and
 * pump state. Once the pump runs, a connection's state is under its
 * `lock`, taken by the pump or by a program's thread that steps the
 * connection itself in its own call (sdp_drive.c); the public part's
 * error is read without it.
 */
#ifndef SDP_QPC_H
#define SDP_QPC_H

#include "sdp.h"

#include <infiniband/ib.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <stdatomic.h>
#include <sys/types.h>
#include <time.h>

#define SDP_NBUFS 16
#define SDP_BUFSZ (64u * 1024)
#define SDP_TXN (SDP_NBUFS + 4)
#define SDP_WR_SEND (1ull << 32)
#define SDP_WR_READ (1ull << 33)
#define SDP_WR_WRITE (1ull << 34)
/* a piece of the send ring (its slot in the low bits): a SEND of Data
 * straight from it, or (with SDP_WR_WRITE) the RDMA WRITE of it */
#define SDP_WR_RING (1ull << 35)
/* a Data SEND straight from the program's buffer (sdp_send_user) */
#define SDP_WR_USER (1ull << 36)
/* the send ring (sdp_ring.c): slots of SDP_BUFSZ after the tx slots, in
 * tx_buf, the payload at SDP_TX_DATA_OFF as a tx slot's; twice the peer's
 * buffers, so that the writer fills the next while a full window is in
 * flight (16: one host iperf3 0.64 of the socketpair's, 32: ahead) */
#define SDP_RING_N 32
/* the receive queue: every buffer, a READ sink and a WRITE sink */
#define SDP_RXQ (SDP_NBUFS + 2 * SDP_MAX_ADVERTS)
/* a tx slot: [0, 32) SrcAvail's BSDH and header, or [16, 32) a message's
 * BSDH; the payload read from the program at 32 */
#define SDP_TX_DATA_OFF 32u
/* payloads from this size on are offered by SrcAvail (zero copy, read
 * mode) when the peer takes adverts (LIBSDP_ZCOPY=0: never) */
#define SDP_ZCOPY_MIN (32u * 1024)
/* a writer's step with this many sends in flight leaves small writes
 * to gather (sdp_data.c sdp_transmit) */
#define SDP_TX_GATHER 4
#define SDP_TX_SMALL 2048
/* a direct bulk read (sdp_drive_take) came this recently: the pump's
 * steps leave what came in the receive buffers for the reader's next
 * one, unless a thread sleeps in the kernel on the connection */
#define SDP_HOLD_NS 1000000
/* how long the end waits for the peer's DisConn once the program is gone */
#define SDP_CLOSE_MS 5000
/* how long a pump polls before it sleeps: a completion channel's wake-up
 * costs more than a short answer takes to come, and a polled CQ moves the
 * transport of a QP whose engine runs in the program (as ibv_get_cq_event
 * spins before it sleeps). LIBSDP_SPIN_US sets it. */
#define SDP_SPIN_NS 200000
/* how long a quiet pump sleeps (the program's threads step the
 * connection in their calls) before it looks whether they still do */
#define SDP_QUIET_MS 5

/* what the program is to get, in order: a received buffer's payload, or
 * (sink) the data read for a SrcAvail, once the READ is done (ready), or
 * written by the peer into our SinkAvail's buffer */
enum sdp_sink { SDP_SINK_NONE, SDP_SINK_READ, SDP_SINK_WRITE };

/* where the connection's peer is: its spin yields for a local one
 * (sdp_conn.c) */
enum sdp_peer_at { SDP_PEER_UNKNOWN, SDP_PEER_LOCAL, SDP_PEER_REMOTE };

struct sdp_rxq {
	uint32_t idx, off, len;
	uint8_t sink, ready;
};

/* A send ring slot's state: FREE (the writer's once the ring's `freed`
 * passed it), FILLED (published; the writer may still append to the
 * last one, APPEND meanwhile), POSTED (claimed by a step: its SEND,
 * WRITE or SrcAvail's READ is the peer's until its completion, or
 * RdmaRdCompl, frees it) */
enum sdp_ring_state { SDP_RS_FREE, SDP_RS_FILLED, SDP_RS_APPEND, SDP_RS_POSTED };

struct sdp_ring_slot {
	atomic_uint state; /* enum sdp_ring_state */
	atomic_uint len;   /* payload bytes at SDP_TX_DATA_OFF */
};

struct sdp_qpc {
	struct sdp_conn pub;
	struct rdma_cm_id *id;
	struct rdma_event_channel *ch;
	struct ibv_pd *pd;
	struct ibv_comp_channel *comp;
	struct ibv_cq *cq;
	struct ibv_mr *rx_mr, *tx_mr, *sink_mr, *wsink_mr;
	uint8_t *rx_buf, *tx_buf, *sink_buf, *wsink_buf;
	struct sdp_flow flow;
	int ufd;		/* the pump's end of the socketpair */
	struct sdp_rxq rxq[SDP_RXQ];
	unsigned int rxq_head, rxq_n;
	unsigned int tx_head, tx_inflight;
	uint8_t dreq;	     /* the peer's DREQ came */
	/* ... without its DisConn, or its QP failed: ECONNRESET once what
	 * came before is the program's */
	uint8_t reset;
	uint8_t established, rd_eof, sent_disconn, app_gone, out_blocked, in_blocked, shut_wr;
	int err;
	uint8_t draining;
	uint8_t zcopy;	     /* we offer SrcAvails (LIBSDP_ZCOPY set) */
	uint32_t zc_slot;    /* the tx slot our SrcAvail advertises */
	uint32_t zc_len;
	uint32_t rrc_due;    /* a RdmaRdCompl of this many bytes to send (+1) */
	/* write mode (A4.6.5): we offer SinkAvails once the peer sent a
	 * SrcAvail (it has large pieces); our wsink buffer is the peer's
	 * from the SinkAvail until its data is written to the program */
	uint8_t wmode, wsink_want, wsink_busy;
	uint32_t peer_sink_len, peer_sink_rkey; /* the peer's SinkAvail */
	uint64_t peer_sink_va;
	/* zero-copy counts, logged at the end (LIBSDP_LOG_LEVEL 1) */
	uint32_t n_srcavail, n_wrcompl, n_sinkavail, n_read, n_written;
	/* Data messages with payload sent, their bytes, the bytes of the
	 * send ring's pieces (any message), and the bytes direct reads
	 * took (logged too) */
	uint64_t n_data, n_data_bytes, n_ring_bytes, n_taken, n_user_bytes;
	uint8_t locality;    /* enum sdp_peer_at, once established */
	uint8_t app_bulk;    /* the program wrote a whole piece since the pump slept */
	unsigned long ticks; /* work done: a completion, a post, a write out */
	struct timespec gone_at;
	char peer_str[64];   /* the peer's address and port, for the log */

	/* Calling threads (sdp_drive.c). `lock` guards all of the above once
	 * `live`; `dead` (under it) once the pump has freed the QP. A step
	 * asked for while the lock was held (`work` moved) is made by the
	 * holder after it. While the program's threads step (`drives` moves)
	 * the pump is `quiet`: it watches neither the CQ nor the socketpair
	 * and looks again after SDP_QUIET_MS, or at once when a thread is
	 * about to sleep in the kernel on it (`sleepers`) or a step ended the
	 * connection (`end`), through `wake_fd` (an eventfd). */
	pthread_mutex_t lock;
	atomic_int live;
	uint8_t dead;
	int end;	     /* a step's result that ends the connection */
	int wake_fd;
	pid_t pid;	     /* the process whose pump it is */
	atomic_uint work, drives;
	unsigned int drives_seen; /* the pump's */
	atomic_int sleepers, quiet;
	uint8_t step_mode;   /* SDP_STEP_*: whose step this is */
	uint32_t tx_last;    /* the size of the last piece read from the program */
	atomic_int want_read; /* a writer asked for a step that reads its bytes */
	atomic_uint out_seq; /* moves when the program's end may have more to read */
	atomic_int out_wait; /* what came waits for room in the socketpair */
	atomic_int bulk_io;  /* the program's last read or write was bulk: the pump's */
	atomic_int peer_local; /* sdp_qpc_local, for the waits */
	/* A direct bulk read (sdp_drive_take): the reader's iovec that a
	 * step with SDP_STEP_TAKE fills from the receive buffers instead of
	 * the socketpair (`take`, its position, the bytes it took; under
	 * `lock`); when the last one took bytes (`direct_ns`); whether the
	 * receive buffers hold bytes not written to the program (`held`) */
	const struct msghdr *take;
	size_t take_iov, take_off, taken;
	_Atomic uint64_t direct_ns;
	atomic_int held;

	/* The send ring (sdp_ring.c): the program's writes copy their bytes
	 * into its slots (single producer: under `wlock`, not the
	 * connection's lock) and publish them (`prod`); a step posts them in
	 * order (`posted`, under `lock`) and frees them in order at their
	 * completion (`freed`). What goes through the socketpair follows
	 * what went into the ring: the writer uses the ring only while the
	 * socketpair holds none of the program's bytes, and a step reads the
	 * socketpair only with `wlock` held and every published slot posted.
	 * `ring_on` (under wlock) while the pump runs; `ring_wait`: writers
	 * asleep on `freed` (a futex) for a free slot. */
	pthread_mutex_t wlock;
	atomic_int ring_on, ring_wait;
	atomic_uint prod, posted, freed;
	struct sdp_ring_slot ring[SDP_RING_N];
	uint32_t zc_ring;    /* our SrcAvail advertises ring slot zc_ring - 1 */
	/* Sends straight from the program's buffer (sdp_send_user, under
	 * `lock` and `wlock`): the MR of the buffer the writes came from
	 * twice in a row (`umr_seen`: the last one's start; `umr_failed`
	 * when its registration failed), the sends of it not completed yet */
	struct ibv_mr *umr;
	uintptr_t umr_seen;
	uint32_t user_out;
	uint8_t umr_failed;
	struct sdp_qpc *next; /* the process's live connections */
};

struct sdp_qpc *sdp_qpc_new(void);
void sdp_qpc_free(struct sdp_qpc *q);
/* one step of the connection (under its lock): what came to the program,
 * what it wrote to the peer; 1 when it ended as agreed, < 0 on error.
 * MODE: a reader's step reads none of the program's bytes (NO_READ), a
 * writer's stops after a short piece (SHORT), a direct read's fills
 * `take` first (TAKE), a wait's leaves what came for the direct reader
 * (HOLD, as the pump's: sdp_qpc_holds); 0 the pump's. */
enum { SDP_STEP_NO_READ = 1, SDP_STEP_SHORT = 2, SDP_STEP_TAKE = 4, SDP_STEP_HOLD = 8 };
int sdp_qpc_step(struct sdp_qpc *q, int mode);
/* whether its peer is on this host (a spin yields the CPU for it) */
int sdp_qpc_local(struct sdp_qpc *q);
uint64_t sdp_spin_ns(void);
/* a direct bulk read took bytes within SDP_HOLD_NS (sdp_drive.c); and
 * no thread sleeps in the kernel on Q either: the pump's steps (and a
 * wait's, SDP_STEP_HOLD) leave what came in the receive buffers */
int sdp_qpc_direct(struct sdp_qpc *q);
int sdp_qpc_holds(struct sdp_qpc *q);
uint64_t sdp_now_ns(void);

/* sdp_drive.c: the process's live connections, for the program's
 * threads to step in their calls */
void sdp_drive_add(struct sdp_qpc *q);
void sdp_drive_del(struct sdp_qpc *q);
pid_t sdp_pid(void);
extern atomic_int sdp_sleepers_all;
int sdp_qpc_resources(struct sdp_qpc *q);
/* sdp_data.c, under the lock: receive buffer IDX posted; the CQ's
 * completions; what came, to the program's socketpair; what the program
 * wrote, to the peer (with credit updates and DisConn); a message of LEN
 * bytes (BSDH included) from tx slot tx_head. 0 or -errno. */
int sdp_post_recv(struct sdp_qpc *q, uint32_t idx);
int sdp_drain_cq(struct sdp_qpc *q);
int sdp_deliver(struct sdp_qpc *q);
int sdp_transmit(struct sdp_qpc *q);
int sdp_post_msg(struct sdp_qpc *q, uint8_t mid, uint32_t len);
/* whole pieces of M (advanced past them) sent straight from the
 * program's buffer to a peer on this host, their completions waited for:
 * the bytes sent; *ERR a failure that ends the connection (under the
 * lock and wlock, every published ring slot posted) */
size_t sdp_send_user(struct sdp_qpc *q, struct msghdr *m, int *err);
void sdp_conn_param(struct rdma_conn_param *p, const void *pd, size_t len);
/* sdp_ring.c: ring slot I's memory; slot I done (under the lock: a
 * completion, or the RdmaRdCompl of its SrcAvail): the writers may have
 * it back once those before it are done too; the ring closed to writers
 * (the pump's end; no lock held) */
uint8_t *sdp_ring_slot(struct sdp_qpc *q, uint32_t i);
void sdp_ring_done(struct sdp_qpc *q, uint32_t i);
void sdp_ring_close(struct sdp_qpc *q);
/* whether the ring holds bytes not yet sent or acknowledged */
int sdp_ring_busy(struct sdp_qpc *q);
/* sdp_ring.c, a writer's: copy from M (advanced past what it took) into
 * the ring: the bytes taken, 0 when the ring is full, -1 when they must
 * go through the socketpair (its end holds earlier bytes or is shut, or
 * the pump ended) */
ssize_t sdp_ring_put(struct sdp_qpc *q, struct msghdr *m);
/* wait (at most MS) until the ring has a free slot or closed */
void sdp_ring_wait(struct sdp_qpc *q, int ms);
void sdp_qpc_addrs(struct sdp_qpc *q, const struct sockaddr_in6 *local,
		   const struct sockaddr_in6 *peer);
int sdp_pump_start(struct sdp_qpc *q);
/* the pump thread's body; a pump (or a connect that becomes one) counted
 * for the exit's wait, and uncounted when it never ran; a detached thread */
void *sdp_pump(void *arg);
void sdp_pump_count(void);
void sdp_pump_uncount(void);
int sdp_detached(void *(*fn)(void *), void *arg);
void sdp_sib(struct sockaddr_ib *sib, const struct sockaddr_in6 *a);
struct rdma_addrinfo sdp_rai(struct sockaddr_ib *src, struct sockaddr_ib *dst, int passive);
struct sockaddr_in6 sdp_id_src(struct rdma_cm_id *id);

#endif
