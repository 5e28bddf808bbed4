/*
 * libsdp.so internals: the rules (sdp_rules.c), the log, SDP connections
 * and listeners over the RDMA CM (sdp_conn.c) and the socket calls a
 * program makes (sdp_preload.c).
 *
 * A connection's socket in the program is one end of an AF_UNIX stream
 * socketpair put at the program's descriptor number; the connection's
 * step moves bytes between the other end and the RC QP, made by the
 * program's thread in its read/write/poll... call (sdp_drive.c) or by a
 * thread of the library (the pump). So read/write/send/recv,
 * poll/select/epoll, dup, fcntl flags and fork work on the descriptor as
 * the kernel has them; the calls that name addresses or TCP options are
 * answered here. A listener's descriptor is an AF_UNIX
 * listening socket: the listener thread connects one end of each new
 * connection to it, so accept(2) and readiness are the kernel's too.
 *
 * Locks: sdp_fd_lock guards the descriptor table and the listeners'
 * pending lists (sdp_preload.c, sdp_conn.c); a connection's own state is
 * under its own lock (sdp_qpc.h), but for `error`, which others only read.
 */
#ifndef SDP_H
#define SDP_H

#include "sdp_wire.h"

#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>

#ifndef AF_INET_SDP
#define AF_INET_SDP 27 /* OFED's address family for SDP sockets */
#endif

enum sdp_use {
	SDP_USE_TCP,
	SDP_USE_SDP,
	SDP_USE_BOTH,
};

enum sdp_role {
	SDP_ROLE_SERVER,
	SDP_ROLE_CLIENT,
};

/* Addresses (sdp_addr.c) as libsdp keeps them, a struct sockaddr_in6:
 * IPv6, or an IPv4 one IPv4-mapped (::ffff:a.b.c.d, as RoCEv2's GIDs),
 * INADDR_ANY as ::ffff:0.0.0.0; both that and :: are "any". */
int sdp_addr_in(const struct sockaddr *a, socklen_t len, struct sockaddr_in6 *out);
int sdp_addr_out(const struct sockaddr_in6 *a, int v6, struct sockaddr *addr, socklen_t *len);
int sdp_addr_v4(const struct sockaddr_in6 *a);
int sdp_addr_any(const struct sockaddr_in6 *a);
struct sockaddr_in6 sdp_addr_of(const uint8_t ip[16], uint16_t port);
void sdp_addr_str(const struct sockaddr_in6 *a, char *buf, size_t len);

/* rules */
void sdp_rules_load(void);
enum sdp_use sdp_rules_match(enum sdp_role role, const struct sockaddr_in6 *a);
extern const char *const sdp_use_names[];

/* log levels as libsdp.conf's min-level: 9 errors .. 1 debug */
enum {
	SDP_LOG_DEBUG = 1,
	SDP_LOG_NOMATCH = 3,
	SDP_LOG_MATCH = 4,
	SDP_LOG_SUMMARY = 7,
	SDP_LOG_WARN = 8,
	SDP_LOG_ERR = 9,
};
void sdp_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sdp_log_set(const char *dest, int min_level);

/* the real calls, found with dlsym(RTLD_NEXT) (sdp_preload.c) */
struct sdp_real {
	int (*socket)(int, int, int);
	int (*bind)(int, const struct sockaddr *, socklen_t);
	int (*listen)(int, int);
	int (*accept4)(int, struct sockaddr *, socklen_t *, int);
	int (*connect)(int, const struct sockaddr *, socklen_t);
	int (*close)(int);
	ssize_t (*write)(int, const void *, size_t);
	int (*dup)(int);
	int (*dup2)(int, int);
	int (*dup3)(int, int, int);
	int (*fcntl)(int, int, ...);
	int (*getsockname)(int, struct sockaddr *, socklen_t *);
	int (*getpeername)(int, struct sockaddr *, socklen_t *);
	int (*getsockopt)(int, int, int, void *, socklen_t *);
	int (*setsockopt)(int, int, int, const void *, socklen_t);
	int (*shutdown)(int, int);
	ssize_t (*read)(int, void *, size_t);
	ssize_t (*recv)(int, void *, size_t, int);
	ssize_t (*recvfrom)(int, void *, size_t, int, struct sockaddr *, socklen_t *);
	ssize_t (*recvmsg)(int, struct msghdr *, int);
	ssize_t (*sendto)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
	ssize_t (*sendmsg)(int, const struct msghdr *, int);
	int (*poll)(struct pollfd *, nfds_t, int);
};
extern struct sdp_real sdp_real;
void sdp_real_init(void);

/* A connection; its references: the pump thread, and every descriptor
 * (sdp_fd) that names it. */
struct sdp_conn {
	atomic_int ref;
	atomic_int error;	   /* errno the program's reads report at the end */
	atomic_int connecting;	   /* a non-blocking connect under way */
	atomic_int so_error;	   /* its failure, for one SO_ERROR */
	struct sockaddr_in6 local; /* getsockname */
	struct sockaddr_in6 peer;  /* getpeername */
	uint32_t payload_max;	   /* bytes of payload a message carries */
	void *priv;		   /* sdp_conn.c's connection (NULL: a forked child's view) */
};

void sdp_conn_put(struct sdp_conn *c);
/* at exit: wait (at most MS) until what programs wrote has been sent */
void sdp_conn_flush(int ms);
/* connect from SRC (address 0: the route's) to SIN over SDP; on success
 * *ufd is the program's end */
int sdp_connect(const struct sockaddr_in6 *src, const struct sockaddr_in6 *dst,
		struct sdp_conn **out, int *ufd);
/* the same, non-blocking: *ufd at once, not writable until a thread has
 * made the connection (then it pumps), or readable at end of stream with
 * the error in `so_error` and `error` when it failed; TCP_FD (`use both`:
 * the program's kernel socket, else -1; the thread's once this returned
 * 0) connects by the kernel's TCP when SDP fails, and the thread relays */
int sdp_connect_start(const struct sockaddr_in6 *src, const struct sockaddr_in6 *dst,
		      int tcp_fd, struct sdp_conn **out, int *ufd);

/* A listener: an RDMA CM listening id (and for `both` a kernel TCP
 * listening socket) whose new connections are connected to `ufd_name`;
 * V6ONLY (an AF_INET6 socket's IPV6_V6ONLY) refuses Hellos of IPv4. */
struct sdp_listener;
/* The abstract name of the socket a listener connects for each new
 * connection (after the leading 0 of sun_path): binary, so that two IPv6
 * addresses fit in sun_path. */
#define SDP_CONNECTOR_MAGIC "sdpc"
struct sdp_connector {
	char magic[4];
	int32_t pid;	  /* the listening process */
	uint64_t l;	  /* its listener */
	uint64_t id;	  /* the pending record's */
	char kind;	  /* 's' SDP, 't' a kernel TCP connection */
	uint8_t peer[16]; /* addresses as sdp_addr keeps them */
	uint8_t local[16];
	uint16_t peer_port, local_port; /* network order */
} __attribute__((packed));

struct sdp_pending {
	struct sdp_pending *next;
	unsigned long id;	/* the tag in the connecting socket's name */
	struct sdp_conn *conn;	/* an SDP connection ... */
	struct sockaddr_in6 peer;
};
int sdp_listen(const struct sockaddr_in6 *sin, int backlog, int tcp_fd, int v6only,
	       const char *ufd_name, struct sdp_listener **out);
struct sdp_pending *sdp_listener_take(struct sdp_listener *l, unsigned long id);
void sdp_listener_put(struct sdp_listener *l);
void sdp_pending_free(struct sdp_pending *p);
void sdp_listener_get(struct sdp_listener *l);

extern pthread_mutex_t sdp_fd_lock;

/* FD's connection (a reference taken), or NULL (sdp_preload.c) */
struct sdp_conn *sdp_fd_conn(int fd);

/* A program's thread steps the connections its calls touch (sdp_drive.c,
 * the calls in sdp_io.c): C's connection when this process's pump serves
 * it (a reference taken; sdp_drive_put drops it), else NULL. */
struct sdp_qpc;
struct sdp_qpc *sdp_drive_get(struct sdp_conn *c);
void sdp_drive_put(struct sdp_qpc *q);
/* one step of Q now (or by the thread that holds it; MODE: SDP_STEP_*,
 * sdp_qpc.h); whether its peer is on this host (a spin yields) */
int sdp_drive(struct sdp_qpc *q, int mode);
/* moves when a step may have put something into the program's end */
unsigned int sdp_drive_seq(struct sdp_qpc *q);
/* whether what came waits for room in the program's end */
int sdp_drive_waiting(struct sdp_qpc *q);
/* the program's reads and writes on Q are bulk (64 KiB or more: the
 * pump's), or not; whether they are and its peer is on this host (a
 * wait then leaves Q to its pump) */
void sdp_drive_bulk(struct sdp_qpc *q, int on);
int sdp_drive_bulky(struct sdp_qpc *q);
/* a read M (the program's msghdr, not changed) of FD, Q's program end,
 * straight from Q's receive buffers when its peer is on this host and FD
 * holds none of the earlier bytes: the bytes read, 0 when nothing came,
 * -1 when the caller is to read FD as before (bytes there, a peer on
 * another host, the connection ended) */
ssize_t sdp_drive_take(struct sdp_qpc *q, int fd, const struct msghdr *m);
/* whether Q holds bytes that came and are not in the program's end: a
 * wait reports Q readable (its read takes them) */
int sdp_drive_held(struct sdp_qpc *q);
/* a step of every live connection of the process but the bulky ones: -1
 * none, -2 only bulky ones, else whether one's peer is on this host;
 * *BULKY set when there was a bulky one */
int sdp_drive_all(int *bulky);
/* around a call that sleeps in the kernel on Q (NULL: on any): its pump
 * watches the CQ and the socketpair meanwhile */
void sdp_block_begin(struct sdp_qpc *q);
void sdp_block_end(struct sdp_qpc *q);
/* the program closed or shut down C's descriptor: its pump looks now */
void sdp_conn_kick(struct sdp_conn *c);
/* FD, an epoll set the program may have marked as SDP's, is closed
 * (sdp_wait.c) */
void sdp_epoll_forget(int fd);

#endif
