/*
 * rsockets: internal objects and rdma-core's rsocket wire protocol.
 *
 * A stream rsocket is one RC QP of a synchronous rdma_cm_id. Data moves
 * by RDMA WRITE WITH IMMEDIATE into the peer's receive buffer; the 32-bit
 * immediate says what was written (rs_msg_*). The receive buffer is split
 * in two halves; a half is granted to the peer by writing its address,
 * key and length (struct rs_sge) into the peer's target SGL, an array the
 * peer registered for remote write and named in the connection's private
 * data (struct rs_conn_data). Credits are receive WQEs: the peer may have
 * as many messages outstanding as the last RS_OP_SGL immediate allows.
 * These layouts are rdma-core's (librdmacm/rsocket.c), so that our
 * rsockets talk to rdma-core's.
 *
 * Locks: slock serialises senders, rlock receivers, cq_lock polling the
 * CQ and the counters it updates (a sender's and a receiver's changes of
 * them too: sofrs_take_send, the receive copy-out, as the CQ may be polled
 * by the other side's thread), map_lock the iomap lists. Order:
 * slock or rlock, then map_lock, then cq_lock. Waiting is done with
 * poll(2) on the non-blocking CQ channel and CM channel fds, never while
 * holding cq_lock.
 *
 * Names: sofrs_ for what the rs_*.c files share.
 */
#ifndef RSOCK_H
#define RSOCK_H

#include "sofcm.h"

#include <fcntl.h>
#include <poll.h>
#include <rdma/rsocket.h>
#include <stdint.h>

#define RS_OLAP_START_SIZE 2048
#define RS_MAX_TRANSFER 65536
#define RS_SEND_XFER (256 * 1024) /* the largest data message rsend makes */
#define RS_SNDLOWAT 2048
#define RS_QP_MIN_SIZE 16
#define RS_QP_MAX_SIZE 0xFFFE
#define RS_QP_CTRL_SIZE 4 /* control messages in flight; a power of 2 */
#define RS_SGL_SIZE 2	  /* entries of the target SGL */

/* Immediate data: bits 31..29 the op, bits 28..0 its data (a length,
 * credits, an iomap index or a control code). */
enum rs_op {
	RS_OP_DATA,
	RS_OP_RSVD_DATA_MORE,
	RS_OP_WRITE, /* local only: a direct write, nothing on the wire */
	RS_OP_RSVD_DRA_MORE,
	RS_OP_SGL,
	RS_OP_RSVD,
	RS_OP_IOMAP_SGL,
	RS_OP_CTRL,
};
#define rs_msg_set(op, data) (((uint32_t)(op) << 29) | (uint32_t)(data))
#define rs_msg_op(imm) ((uint32_t)(imm) >> 29)
#define rs_msg_data(imm) ((uint32_t)(imm) & 0x1FFFFFFF)

enum rs_ctrl {
	RS_CTRL_DISCONNECT,
	RS_CTRL_KEEPALIVE,
	RS_CTRL_SHUTDOWN,
};

#define RS_WR_ID_FLAG_RECV (1ULL << 63)

/* An entry of the target SGL and of an iomap; written by the peer in its
 * own byte order (RS_OPT_SWAP_SGL when that is not ours). */
struct rs_sge {
	uint64_t addr;
	uint32_t key;
	uint32_t length;
};

struct rs_iomap {
	uint64_t offset;
	struct rs_sge sge;
};

#define RS_CONN_FLAG_NET (1 << 0) /* the sender is big-endian */
#define RS_CONN_FLAG_IOMAP (1 << 1)
#define RS_CONN_VERSION 1

/* The private data of the REQ and of the REP (big-endian fields). */
struct rs_conn_data {
	uint8_t version;
	uint8_t flags;
	uint16_t credits;
	uint8_t reserved[3];
	uint8_t target_iomap_size; /* scaled (rs_value_to_scale, 8 bits) */
	struct rs_sge target_sgl;
	struct rs_sge data_buf;
};

/* States, ordered passive, connecting, connected, disconnected (the
 * values are rdma-core's, so the masks read the same). */
enum rs_state {
	rs_init,
	rs_bound = 0x0001,
	rs_listening = 0x0002,
	rs_opening = 0x0004,
	rs_connected = 0x0100,
	rs_writable = 0x0200,
	rs_readable = 0x0400,
	rs_connect_rdwr = rs_connected | rs_readable | rs_writable,
	rs_connect_error = 0x0800,
	rs_disconnected = 0x1000,
	rs_error = 0x2000,
};

#define RS_OPT_SWAP_SGL (1 << 0)

struct rs_msg {
	uint32_t op;
	uint32_t data;
};

/* A local buffer mapped with riomap. */
struct rs_iomap_mr {
	struct rs_iomap_mr *next;
	uint64_t offset;
	struct ibv_mr *mr;
	int index; /* slot in the peer's iomap table; -1 local only */
	bool queued; /* not yet told to the peer */
};

/* Datagram rsockets (rs_dgram.c), rdma-core's protocol: one UD QP per
 * local source address, each UD message a struct rs_ds_header (the
 * sender's address and port, what rrecvfrom reports) and the datagram,
 * in a RS_SNDLOWAT slot. A destination's QPN is learnt through the
 * rsocket's kernel UDP socket: a datagram for a peer without an address
 * handle goes there behind a struct rs_ds_udp_header (tag, op, the
 * sender's QPN and address); the receiving process's service thread
 * answers RS_OP_DATA with an RS_OP_CTRL header of its own QPN, resolves
 * the sender's address to an address handle, and forwards the datagram
 * to its own QP. Fields big-endian. */
struct rs_ds_header {
	uint8_t version; /* 4 or 6 */
	uint8_t length; /* RS_DS_IPV4_HDR_LEN or RS_DS_IPV6_HDR_LEN */
	uint16_t port;
	union {
		uint32_t ipv4;
		struct {
			uint32_t flowinfo;
			uint8_t addr[16];
		} ipv6;
	} addr;
};
#define RS_DS_IPV4_HDR_LEN 8
#define RS_DS_IPV6_HDR_LEN 24

#define RS_DS_UDP_TAG 0x55555555
struct rs_ds_udp_header {
	uint32_t tag;
	uint8_t version;
	uint8_t op; /* RS_OP_DATA or RS_OP_CTRL */
	uint8_t length; /* RS_DS_UDP_IPV4_HDR_LEN or RS_DS_UDP_IPV6_HDR_LEN */
	uint8_t reserved;
	uint32_t qpn; /* low 24 bits */
	union {
		uint32_t ipv4;
		uint8_t ipv6[16];
	} addr;
};
#define RS_DS_UDP_IPV4_HDR_LEN 16
#define RS_DS_UDP_IPV6_HDR_LEN 28

union sofrs_addr {
	struct sockaddr sa;
	struct sockaddr_in sin;
	struct sockaddr_in6 sin6;
};

struct sofrs_dsqp;

/* A peer address: the QP of the local address that reaches it, and once
 * learnt, its address handle and QPN. */
struct sofrs_dsdest {
	union sofrs_addr addr;
	struct sofrs_dsdest *next;
	struct sofrs_dsqp *qp;
	struct ibv_ah *ah;
	uint32_t qpn;
};

/* The UD QP of one local address: its CQ (channel in the rsocket's epoll
 * set), its receive slots, and itself as a destination (the service
 * thread forwards there). */
struct sofrs_dsqp {
	struct sofrs_dsqp *next;
	struct sofrs *rs;
	struct rdma_cm_id *cm_id;
	struct rs_ds_header hdr;
	struct sofrs_dsdest dest;
	struct ibv_mr *smr, *rmr;
	uint8_t *rbuf; /* rq_size slots of RS_SNDLOWAT, then a GRH */
	uint32_t max_data; /* largest datagram: slot and path MTU, less hdr */
	bool cq_armed;
	unsigned int unack_cqe;
};

/* A received datagram: its slot of its QP, its length and its header's
 * (as checked when it came: the slot is not read for them again). */
struct sofrs_dsmsg {
	struct sofrs_dsqp *qp;
	uint32_t offset, length, hlen;
};

struct sofrs {
	int type; /* SOCK_STREAM or SOCK_DGRAM */
	int index;
	int accept_queue[2]; /* listener: accepted rsockets, by pointer */
	int index_fd; /* accepted: a copy of the channel's fd, its number */
	/* calls inside (sofrs_get .. sofrs_put); rclose waits for them */
	_Atomic int users;
	_Atomic bool closing;
	struct rdma_cm_id *cm_id;
	pthread_mutex_t slock, rlock, cq_lock, map_lock;

	int state;
	int err;
	int opts;
	int fs_flags; /* O_NONBLOCK */
	int fd_flags; /* FD_CLOEXEC */
	uint64_t so_opts, tcp_opts, ipv6_opts;
	int ipv4_tos;
	struct linger linger;
	void *route;
	size_t route_len;

	uint32_t sbuf_size, rbuf_size;
	uint16_t sq_size, rq_size;
	uint32_t sq_inline;
	uint16_t target_iomap_size;

	/* control messages: posted, and allowed before the next completion */
	unsigned int ctrl_seqno, ctrl_max_seqno;
	uint16_t sseq_no, sseq_comp; /* messages sent, allowed by the peer */
	uint16_t rseq_no, rseq_comp; /* messages consumed, next credit point */
	uint16_t rseq_recv, rseq_credit; /* messages come, allowed (checked) */

	int remote_sge;
	struct rs_sge remote_sgl, remote_iomap;

	struct ibv_mr *target_mr;
	int target_sge;
	void *target_buffer_list;
	volatile struct rs_sge *target_sgl;
	struct rs_iomap *target_iomap;

	int rbuf_bytes_avail, rbuf_free_offset, rbuf_offset;
	uint32_t rbuf_granted; /* bytes the peer may still write (checked) */
	struct ibv_mr *rmr;
	uint8_t *rbuf;

	int sbuf_bytes_avail;
	struct ibv_mr *smr;
	uint8_t *sbuf;
	struct ibv_sge ssgl[2];

	int sqe_avail;
	int rmsg_head, rmsg_tail;
	struct rs_msg *rmsg;

	bool cq_armed;
	unsigned int unack_cqe;
	/* the peer is on another host: its QP's transport runs in this
	 * process (polling moves it), not in the daemon (rs_data.c) */
	bool peer_remote;

	struct rs_iomap_mr *iomaps; /* local mappings */
	bool iomap_pending;

	int conn_efd; /* a non-blocking rconnect's end is signalled here */
	_Atomic uint64_t cm_checked; /* sofrs_cm_check's last look (ns) */
	bool ka_on; /* in the keepalive service (rs_conn.c) */
	unsigned int keepalive_time; /* seconds */
	uint64_t ka_next;

	/* datagram (rs_dgram.c): the kernel UDP socket (its fd the
	 * rsocket's number), an epoll set of the QPs' CQ channels; the
	 * lists under map_lock (qp_list also under cq_lock: polled), the
	 * free send slots and dmsg ring under cq_lock */
	int udp_sock, epfd;
	struct sofrs_dsqp *qp_list;
	struct sofrs_dsdest *dest_list, *conn_dest;
	void *smsg_free;
	struct sofrs_dsmsg *dmsg;
	int rqe_avail;
	bool in_svc;
};

/* Calls of this library's rsocket code on this thread, and its own
 * threads: librspreload sends every socket(2) to rsocket(), also those
 * the verbs transport in the program opens for RoCEv2 (on a QP's
 * transition, on a poll); rsocket() refuses them (ENOTSUP: librspreload
 * then makes a kernel socket) while this is above 0. sofrs_get and
 * sofrs_put count. */
extern _Thread_local int sofrs_internal;

/* Microseconds a blocking call polls before it sleeps (rsocket.c;
 * rdma-core's polling_time). */
extern uint32_t sofrs_poll_us;

/* rsocket.c: the table of rsockets, by index (the CM channel's fd).
 * sofrs_lookup for calls that do not wait; a call that may wait holds the
 * socket from sofrs_get to sofrs_put, so rclose in another thread waits
 * for it to leave (woken by the shutdown) before it frees the socket. */
struct sofrs *sofrs_lookup(int index);
struct sofrs *sofrs_get(int index);
void sofrs_put(struct sofrs *rs);
/* rsocket.c: objects. 0 or -1/errno where they return int. */
int sofrs_insert(struct sofrs *rs, int index);
void sofrs_remove(struct sofrs *rs);
struct sofrs *sofrs_alloc(const struct sofrs *parent);
void sofrs_free(struct sofrs *rs);
int sofrs_create_ep(struct sofrs *rs);
void sofrs_connected_now(struct sofrs *rs);
void sofrs_copy_addr(struct sockaddr *dst, const struct sockaddr *src, socklen_t *len);
void sofrs_drop_id(struct rdma_cm_id *id);
/* rs_conn.c: keepalive (TCP_KEEPIDLE's default; rs in or out of the
 * service, -1/errno) */
unsigned int sofrs_keepalive_default(void);
int sofrs_keepalive(struct sofrs *rs, bool on);
/* rs_listen.c: a listener leaves the accept thread; what it queued and
 * no program accepted is freed. */
void sofrs_listen_stop(struct sofrs *rs);
/* rs_data.c */
void *sofrs_page_alloc(size_t len); /* zeroed whole pages */
int sofrs_init_bufs(struct sofrs *rs);
int sofrs_post_recv(struct sofrs *rs);
void sofrs_format_conn_data(struct sofrs *rs, struct rs_conn_data *conn);
void sofrs_save_conn_data(struct sofrs *rs, const struct rs_conn_data *conn);
int sofrs_post_msg(struct sofrs *rs, uint32_t msg);
/* Poll the CQ until test(rs) holds; wait unless nonblock (-1/EWOULDBLOCK). */
int sofrs_process_cq(struct sofrs *rs, bool nonblock, bool (*test)(struct sofrs *rs));
bool sofrs_any(struct sofrs *rs);
bool sofrs_can_send(struct sofrs *rs);
bool sofrs_conn_have_rdata(struct sofrs *rs);
bool sofrs_have_rdata(struct sofrs *rs);
bool sofrs_all_sends_done(struct sofrs *rs);
bool sofrs_ctrl_avail(struct sofrs *rs);
bool sofrs_conn_can_send_ctrl(struct sofrs *rs);
/* A CM event pending on the id's channel (disconnect): handle it. */
void sofrs_cm_events(struct sofrs *rs);
/* The same, from a readiness check: at most once in RS_CM_CHECK_NS. */
void sofrs_cm_check(struct sofrs *rs);
/* posting (rs_data.c): a WRITE, WITH IMMEDIATE when imm (the message as
 * wr_id); the send buffer's room up to its end; waiting until a message
 * may go (-1/errno when the socket cannot send). Need slock. */
int sofrs_post_write(struct sofrs *rs, struct ibv_sge *sgl, int nsge, uint32_t msg, bool imm,
		     int flags, uint64_t addr, uint32_t rkey);
uint32_t sofrs_sbuf_left(struct sofrs *rs);
void sofrs_take_send(struct sofrs *rs, uint32_t bytes);
int sofrs_wait_send(struct sofrs *rs, int flags);
/* rs_iomap.c: the mappings riomap queued, told to the peer. Needs slock. */
int sofrs_send_iomaps(struct sofrs *rs, int flags);
void sofrs_free_iomaps(struct sofrs *rs);
/* rs_dgram.c: datagram rsockets; each -1/errno where it returns int. */
int sofrs_ds_init(struct sofrs *rs, int domain);
void sofrs_ds_free(struct sofrs *rs);
int sofrs_ds_bind(struct sofrs *rs, const struct sockaddr *addr, socklen_t addrlen);
int sofrs_ds_connect(struct sofrs *rs, const struct sockaddr *addr, socklen_t addrlen);
void sofrs_ds_shutdown(struct sofrs *rs);
ssize_t sofrs_ds_sendv(struct sofrs *rs, const struct iovec *iov, int iovcnt, int flags,
		       const struct sockaddr *to, socklen_t tolen);
ssize_t sofrs_ds_recvv(struct sofrs *rs, const struct iovec *iov, int iovcnt, int flags,
		       struct sockaddr *from, socklen_t *fromlen);
short sofrs_ds_poll(struct sofrs *rs, short events, bool arm);
void sofrs_ds_wait_done(struct sofrs *rs);
/* rs_dgram.c for rs_dsvc.c: destinations (map_lock inside), the two ways
 * to send (need slock), address handles, headers */
#define RS_DS_RESOLVE_MS 2000
int sofrs_ds_get_dest(struct sofrs *rs, const struct sockaddr *addr, struct sofrs_dsdest **out);
ssize_t sofrs_ds_send_udp(struct sofrs *rs, struct sofrs_dsdest *dest, const struct iovec *iov,
			  int iovcnt, int flags, uint8_t op);
int sofrs_ds_post_slot(struct sofrs *rs, struct sofrs_dsdest *dest, const struct rs_ds_header *hdr,
		       const struct iovec *iov, int iovcnt, size_t len, bool nonblock);
struct ibv_ah *sofrs_ds_make_ah(struct sofrs_dsqp *qp, const union ibv_gid *sgid,
				const union ibv_gid *dgid, uint16_t dlid, uint8_t hop_limit,
				uint8_t tclass, uint32_t flow_label);
void sofrs_ds_format_hdr(struct rs_ds_header *hdr, const union sofrs_addr *addr);
void sofrs_ds_set_addr(union sofrs_addr *dst, const struct sockaddr *src);
/* rs_dsvc.c: the service thread serves rs (its UDP socket) from add to
 * remove; after remove it does not touch rs. */
int sofrs_svc_add(struct sofrs *rs);
void sofrs_svc_remove(struct sofrs *rs);
/* rs_poll.c: the fds to wait on for rs (CQ channel, CM channel). */
int sofrs_wait_fds(struct sofrs *rs, struct pollfd *pfd);
/* After poll reported pfd: read the CQ event, the CM events. */
void sofrs_wait_done(struct sofrs *rs, const struct pollfd *pfd, int n);

static inline bool sofrs_nonblocking(struct sofrs *rs, int flags)
{
	return (rs->fs_flags & O_NONBLOCK) || (flags & MSG_DONTWAIT);
}

#endif
