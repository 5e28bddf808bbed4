/*
 * libsdp.so: the socket calls of a program, preloaded (LD_PRELOAD), as
 * OFED's libsdp: AF_INET, AF_INET6 and AF_INET_SDP stream sockets are
 * steered by the rules (sdp_rules.c) when they listen or connect. An SDP socket's
 * descriptor becomes one end of an AF_UNIX socketpair (a connection) or
 * an AF_UNIX listening socket (a listener), put at the same number with
 * the same O_NONBLOCK and FD_CLOEXEC (sdp.h says why); the calls that
 * name addresses or TCP options are answered from the table here, the
 * rest (fcntl flags, sendfile, fork, exec) are the kernel's on that
 * descriptor, and so are read, write, poll, select and epoll, which
 * sdp_io.c wraps to step the connections in the calling thread.
 *
 * The table (fds[], under sdp_fd_lock) has an entry per descriptor
 * number: INET (a kernel TCP socket not yet decided), CONN or LISTEN;
 * dup/dup2/dup3/F_DUPFD copy it and close drops it.
 */
#include "sdp.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

#define SDP_EXPORT __attribute__((visibility("default")))
#define SDP_MAX_FD 65536

enum sdp_fd_kind {
	SDP_FD_INET,
	SDP_FD_CONN,
	SDP_FD_LISTEN,
};

struct sdp_fd {
	enum sdp_fd_kind kind;
	int force_sdp; /* made as AF_INET_SDP */
	int v6;	       /* an AF_INET6 socket: names given as AF_INET6 */
	struct sdp_conn *conn;
	struct sdp_listener *listener;
	struct sockaddr_in6 bound;
};

struct sdp_real sdp_real;
pthread_mutex_t sdp_fd_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sdp_fd *fds[SDP_MAX_FD];
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static unsigned long listen_seq;

#define REAL(name) (sdp_real.name = (__typeof__(sdp_real.name))dlsym(RTLD_NEXT, #name))

static void real_init(void)
{
	REAL(socket), REAL(bind), REAL(listen), REAL(accept4), REAL(connect), REAL(close);
	REAL(write), REAL(dup), REAL(dup2), REAL(dup3), REAL(fcntl), REAL(getsockname);
	REAL(getpeername), REAL(getsockopt), REAL(setsockopt), REAL(shutdown), REAL(read);
	REAL(recv), REAL(recvfrom), REAL(recvmsg), REAL(sendto), REAL(sendmsg), REAL(poll);
	sdp_rules_load();
}

void sdp_real_init(void) { pthread_once(&init_once, real_init); }

__attribute__((constructor)) static void sdp_init(void) { sdp_real_init(); }

/* exit closes the program's SDP sockets as the kernel closes TCP ones, and
 * waits (up to 5 s) until the pumps have sent what was written to them and
 * the DisConn after it: the kernel would send it after the process. */
__attribute__((destructor)) static void sdp_fini(void)
{
	int fd;

	for (fd = 0; fd < SDP_MAX_FD; fd++)
		if (fds[fd] && fds[fd]->kind == SDP_FD_CONN)
			close(fd);
	sdp_conn_flush(5000);
}

static int valid_fd(int fd) { return fd >= 0 && fd < SDP_MAX_FD; }

static void fd_free(struct sdp_fd *e)
{
	if (!e)
		return;
	if (e->conn)
		sdp_conn_put(e->conn);
	if (e->listener)
		sdp_listener_put(e->listener);
	free(e);
}

/* Put E at FD (NULL: none); the old entry is freed. */
static void fd_store(int fd, struct sdp_fd *e)
{
	struct sdp_fd *old;

	if (!valid_fd(fd)) {
		fd_free(e);
		return;
	}
	pthread_mutex_lock(&sdp_fd_lock);
	old = fds[fd];
	fds[fd] = e;
	pthread_mutex_unlock(&sdp_fd_lock);
	fd_free(old);
}

/* A copy of FD's entry (its references taken), or NULL. */
static struct sdp_fd *fd_copy(int fd)
{
	struct sdp_fd *e = NULL;

	if (!valid_fd(fd))
		return NULL;
	pthread_mutex_lock(&sdp_fd_lock);
	if (fds[fd] && (e = malloc(sizeof(*e)))) {
		*e = *fds[fd];
		if (e->conn)
			atomic_fetch_add(&e->conn->ref, 1);
		if (e->listener)
			sdp_listener_get(e->listener);
	}
	pthread_mutex_unlock(&sdp_fd_lock);
	return e;
}

static struct sdp_fd *fd_new(enum sdp_fd_kind kind)
{
	struct sdp_fd *e = calloc(1, sizeof(*e));

	if (e)
		e->kind = kind;
	return e;
}

static int fail(int err)
{
	errno = err;
	return -1;
}

/* Put NEWFD (ours) at FD with FD's O_NONBLOCK and FD_CLOEXEC. */
static int take_place(int newfd, int fd)
{
	int fl = sdp_real.fcntl(fd, F_GETFL), fdfl = sdp_real.fcntl(fd, F_GETFD);

	if (fl < 0 || fdfl < 0 ||
	    sdp_real.dup3(newfd, fd, (fdfl & FD_CLOEXEC) ? O_CLOEXEC : 0) < 0) {
		sdp_real.close(newfd);
		return -1;
	}
	sdp_real.close(newfd);
	if (fl & O_NONBLOCK)
		sdp_real.fcntl(fd, F_SETFL, sdp_real.fcntl(fd, F_GETFL) | O_NONBLOCK);
	return 0;
}

SDP_EXPORT int socket(int domain, int type, int protocol)
{
	int fd, sdp = domain == AF_INET_SDP;
	struct sdp_fd *e;

	sdp_real_init();
	fd = sdp_real.socket(sdp ? AF_INET : domain, type, protocol);
	if (fd < 0 || (domain != AF_INET && domain != AF_INET6 && !sdp) ||
	    (type & 0xf) != SOCK_STREAM)
		return fd;
	e = fd_new(SDP_FD_INET);
	if (e) {
		e->force_sdp = sdp;
		e->v6 = domain == AF_INET6;
	}
	fd_store(fd, e);
	return fd;
}

/* An AF_INET_SDP address as the kernel's AF_INET one (into SIN). */
static const struct sockaddr *inet_of(const struct sockaddr *addr, socklen_t *len,
				      struct sockaddr_in *sin)
{
	if (!addr || addr->sa_family != AF_INET_SDP || *len < sizeof(*sin))
		return addr;
	memcpy(sin, addr, sizeof(*sin));
	sin->sin_family = AF_INET;
	*len = sizeof(*sin);
	return (const struct sockaddr *)sin;
}

SDP_EXPORT int bind(int fd, const struct sockaddr *addr, socklen_t len)
{
	struct sockaddr_in sin;

	sdp_real_init();
	addr = inet_of(addr, &len, &sin);
	return sdp_real.bind(fd, addr, len);
}

/* The kernel socket's own address (bound first to any address and an
 * ephemeral port when it has no port yet: the Hello's LocalPort and
 * getsockname's). */
static int local_of(int fd, int v6, struct sockaddr_in6 *a)
{
	struct sockaddr_storage ss;
	struct sockaddr_in6 any6 = { .sin6_family = AF_INET6 };
	struct sockaddr_in any = { .sin_family = AF_INET };
	socklen_t len = sizeof(ss);

	if (sdp_real.getsockname(fd, (struct sockaddr *)&ss, &len))
		return -1;
	if (sdp_addr_in((struct sockaddr *)&ss, len, a))
		return -1;
	if (a->sin6_port)
		return 0;
	if (v6)
		sdp_real.bind(fd, (struct sockaddr *)&any6, sizeof(any6));
	else
		sdp_real.bind(fd, (struct sockaddr *)&any, sizeof(any));
	len = sizeof(ss);
	if (sdp_real.getsockname(fd, (struct sockaddr *)&ss, &len))
		return -1;
	return sdp_addr_in((struct sockaddr *)&ss, len, a);
}

/* An AF_INET6 socket with IPV6_V6ONLY set: no IPv4 (mapped) peers */
static int v6only(int fd, const struct sdp_fd *e)
{
	int only = 0;

	return e->v6 && !sdp_real.getsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &only,
					     &(socklen_t){ sizeof(only) }) && only;
}

static enum sdp_use decide(struct sdp_fd *e, enum sdp_role role, const struct sockaddr_in6 *sin)
{
	return e->force_sdp ? SDP_USE_SDP : sdp_rules_match(role, sin);
}

SDP_EXPORT int listen(int fd, int backlog)
{
	struct sockaddr_in6 sin;
	struct sdp_fd *e = fd_copy(fd);
	struct sdp_listener *l;
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	enum sdp_use use;
	char name[80], a[64];
	int ufd = -1, tcp_fd = -1, ret, n;

	sdp_real_init();
	if (!e || e->kind != SDP_FD_INET || local_of(fd, e->v6, &sin)) {
		if (e && e->kind == SDP_FD_INET)
			sdp_log(SDP_LOG_SUMMARY, "listen: tcp (no address)");
		fd_free(e);
		return sdp_real.listen(fd, backlog);
	}
	sdp_addr_str(&sin, a, sizeof(a));
	use = decide(e, SDP_ROLE_SERVER, &sin);
	if (use == SDP_USE_TCP) {
		sdp_log(SDP_LOG_SUMMARY, "listen %s: tcp", a);
		fd_free(e);
		return sdp_real.listen(fd, backlog);
	}
	if (use == SDP_USE_BOTH) {
		if (sdp_real.listen(fd, backlog))
			goto err_errno;
		/* (blocking: its file is the program's until take_place) */
		tcp_fd = sdp_real.fcntl(fd, F_DUPFD_CLOEXEC, 0);
		if (tcp_fd < 0)
			goto err_errno;
	}
	n = snprintf(name, sizeof(name), "sdpl.%d.%lu", getpid(),
		     __atomic_add_fetch(&listen_seq, 1, __ATOMIC_RELAXED));
	memcpy(un.sun_path + 1, name, (size_t)n);
	ufd = sdp_real.socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (ufd < 0 ||
	    sdp_real.bind(ufd, (struct sockaddr *)&un,
			  (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)) ||
	    sdp_real.listen(ufd, backlog > 0 ? backlog : 128))
		goto err_errno;
	ret = sdp_listen(&sin, backlog, tcp_fd, v6only(fd, e), name, &l);
	if (ret) {
		sdp_log(SDP_LOG_SUMMARY, "listen %s: no SDP listener (%s): %s", a, strerror(-ret),
			use == SDP_USE_BOTH ? "tcp only" : "failed");
		sdp_real.close(ufd);
		if (tcp_fd >= 0)
			sdp_real.close(tcp_fd);
		fd_free(e);
		return use == SDP_USE_BOTH ? 0 : fail(-ret);
	}
	if (take_place(ufd, fd)) {
		sdp_listener_put(l);
		fd_free(e);
		return -1;
	}
	e->kind = SDP_FD_LISTEN;
	e->listener = l;
	e->bound = sin;
	fd_store(fd, e);
	sdp_log(SDP_LOG_SUMMARY, "listen %s: %s", a, use == SDP_USE_BOTH ? "sdp and tcp" : "sdp");
	return 0;

err_errno:
	ret = errno;
	if (ufd >= 0)
		sdp_real.close(ufd);
	if (tcp_fd >= 0)
		sdp_real.close(tcp_fd);
	fd_free(e);
	return fail(ret);
}

/* What the listener's thread connected to the accepted NFD, from the
 * connecting socket's name (struct sdp_connector). */
struct sdp_tag {
	int pid;
	void *l;
	unsigned long id;
	char kind;
	struct sockaddr_in6 peer, local;
};

static int tag_of(int nfd, struct sdp_tag *t)
{
	struct sockaddr_un un;
	socklen_t len = sizeof(un);
	struct sdp_connector c;

	memset(&un, 0, sizeof(un));
	memset(t, 0, sizeof(*t));
	if (sdp_real.getpeername(nfd, (struct sockaddr *)&un, &len) ||
	    len != offsetof(struct sockaddr_un, sun_path) + 1 + sizeof(c) || un.sun_path[0])
		return -1;
	memcpy(&c, un.sun_path + 1, sizeof(c));
	if (memcmp(c.magic, SDP_CONNECTOR_MAGIC, sizeof(c.magic)))
		return -1;
	t->pid = c.pid;
	t->l = (void *)(uintptr_t)c.l;
	t->id = (unsigned long)c.id;
	t->kind = c.kind;
	t->peer = sdp_addr_of(c.peer, c.peer_port);
	t->local = sdp_addr_of(c.local, c.local_port);
	return 0;
}

/* `both`'s kernel TCP connection: its descriptor comes in the stream. */
static int take_tcp(int nfd, int flags)
{
	char c, cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = &c, .iov_len = 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	int tfd = -1, ret;

	if (sdp_real.recvmsg(nfd, &m, MSG_CMSG_CLOEXEC) == 1 && (cm = CMSG_FIRSTHDR(&m)) &&
	    cm->cmsg_type == SCM_RIGHTS)
		memcpy(&tfd, CMSG_DATA(cm), sizeof(int));
	if (tfd < 0)
		return -1;
	ret = sdp_real.dup3(tfd, nfd, (flags & SOCK_CLOEXEC) ? O_CLOEXEC : 0);
	sdp_real.close(tfd);
	if (ret < 0)
		return -1;
	if (flags & SOCK_NONBLOCK)
		sdp_real.fcntl(nfd, F_SETFL, sdp_real.fcntl(nfd, F_GETFL) | O_NONBLOCK);
	return 0;
}

/* The connection of an accepted SDP descriptor: the listener's record in
 * the process whose thread made it; in a child forked after listen (a
 * prefork server), a view of its names only (its reads end without the
 * connection's error). */
static struct sdp_conn *take_sdp(struct sdp_listener *l, const struct sdp_tag *t)
{
	struct sdp_pending *p = NULL;
	struct sdp_conn *c;

	if (t->pid == getpid() && t->l == (void *)l)
		p = sdp_listener_take(l, t->id);
	if (p) {
		c = p->conn;
		p->conn = NULL;
		sdp_pending_free(p);
		return c;
	}
	c = calloc(1, sizeof(*c));
	if (c) {
		atomic_init(&c->ref, 1);
		c->local = t->local;
		c->peer = t->peer;
		c->payload_max = 65536 - SDP_BSDH_LEN;
	}
	return c;
}

/* FD's entry; for a descriptor we have none of, an SDP connection this
 * image inherited through exec (sshd re-executes itself with the accepted
 * socket): an AF_UNIX socket whose peer is a listener's connector gets a
 * view of its names, as a forked child's accept makes. Only the calls
 * that answer from the entry (names, options) look; the others act on the
 * descriptor as it is. */
static struct sdp_fd *fd_copy_inherited(int fd)
{
	struct sdp_fd *e = fd_copy(fd);
	struct sdp_tag t;

	if (e || !valid_fd(fd) || tag_of(fd, &t) || t.kind == 't')
		return e;
	e = fd_new(SDP_FD_CONN);
	if (e)
		e->conn = take_sdp(NULL, &t);
	if (!e || !e->conn) {
		fd_free(e);
		return NULL;
	}
	pthread_mutex_lock(&sdp_fd_lock);
	if (!fds[fd]) {
		fds[fd] = e;
		e = NULL;
	}
	pthread_mutex_unlock(&sdp_fd_lock);
	fd_free(e);
	return fd_copy(fd);
}

SDP_EXPORT int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
	struct sdp_fd *e = fd_copy(fd), *ne;
	struct sdp_tag t;
	int nfd;

	sdp_real_init();
	if (!e || e->kind != SDP_FD_LISTEN) {
		fd_free(e);
		return sdp_real.accept4(fd, addr, len, flags);
	}
	nfd = sdp_real.accept4(fd, NULL, NULL, flags);
	if (nfd < 0) {
		fd_free(e);
		return nfd;
	}
	if (tag_of(nfd, &t) || (t.kind == 't' && take_tcp(nfd, flags))) {
		fd_free(e);
		sdp_real.close(nfd);
		return fail(ECONNABORTED);
	}
	if (t.kind == 't') {
		fd_store(nfd, NULL);
	} else {
		ne = fd_new(SDP_FD_CONN);
		if (ne) {
			ne->conn = take_sdp(e->listener, &t);
			ne->v6 = e->v6;
		}
		if (!ne || !ne->conn) {
			fd_free(ne);
			fd_free(e);
			sdp_real.close(nfd);
			return fail(ENOMEM);
		}
		fd_store(nfd, ne);
	}
	if (addr && len)
		sdp_addr_out(&t.peer, e->v6, addr, len);
	fd_free(e);
	return nfd;
}

SDP_EXPORT int accept(int fd, struct sockaddr *addr, socklen_t *len)
{
	return accept4(fd, addr, len, 0);
}

SDP_EXPORT int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	struct sockaddr_in6 dst, src;
	struct sockaddr_in sin;
	struct sdp_fd *e;
	struct sdp_conn *c;
	enum sdp_use use;
	char a[64];
	int ufd, ret, nb, tcp_fd = -1;

	sdp_real_init();
	addr = inet_of(addr, &len, &sin);
	if (sdp_addr_in(addr, len, &dst))
		return sdp_real.connect(fd, addr, len);
	e = fd_copy(fd);
	if (e && e->kind == SDP_FD_CONN) {
		/* again, as on a TCP socket: under way, failed, or made */
		c = e->conn;
		ret = atomic_load(&c->connecting) ? EALREADY : atomic_exchange(&c->so_error, 0);
		fd_free(e);
		return fail(ret ? ret : EISCONN);
	}
	/* the kernel's answer: an IPv6 address on an AF_INET socket, or an
	 * IPv4 one on an IPv6-only socket */
	if (!e || e->kind != SDP_FD_INET || (!e->v6 && addr->sa_family == AF_INET6) ||
	    (sdp_addr_v4(&dst) && v6only(fd, e))) {
		fd_free(e);
		return sdp_real.connect(fd, addr, len);
	}
	sdp_addr_str(&dst, a, sizeof(a));
	use = decide(e, SDP_ROLE_CLIENT, &dst);
	if (use == SDP_USE_TCP) {
		fd_free(e);
		sdp_log(SDP_LOG_SUMMARY, "connect %s: tcp", a);
		return sdp_real.connect(fd, addr, len);
	}
	/* the kernel socket gives the port (its own ephemeral one unless the
	 * program bound it): the Hello's LocalPort and getsockname's */
	if (local_of(fd, e->v6, &src)) {
		fd_free(e);
		sdp_log(SDP_LOG_SUMMARY, "connect %s: tcp (no local address)", a);
		return sdp_real.connect(fd, addr, len);
	}
	/* non-blocking: EINPROGRESS, a thread connects; under `both` it keeps
	 * the kernel socket (tcp_fd) to connect by TCP when SDP fails */
	nb = !!(sdp_real.fcntl(fd, F_GETFL) & O_NONBLOCK);
	if (nb && use == SDP_USE_BOTH && (tcp_fd = sdp_real.fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0)
		nb = 0;
	ret = nb ? sdp_connect_start(&src, &dst, tcp_fd, &c, &ufd)
		 : sdp_connect(&src, &dst, &c, &ufd);
	if (ret && tcp_fd >= 0)
		sdp_real.close(tcp_fd);
	if (ret) {
		fd_free(e);
		sdp_log(SDP_LOG_SUMMARY, "connect %s: no SDP (%s): %s", a, strerror(-ret),
			use == SDP_USE_BOTH ? "tcp" : "failed");
		if (use == SDP_USE_BOTH)
			return sdp_real.connect(fd, addr, len);
		return fail(-ret == ECONNREFUSED || -ret == ETIMEDOUT ? -ret : ECONNREFUSED);
	}
	if (take_place(ufd, fd)) {
		ret = errno;
		sdp_conn_put(c);
		fd_free(e);
		return fail(ret);
	}
	e->kind = SDP_FD_CONN;
	e->conn = c;
	fd_store(fd, e);
	sdp_log(SDP_LOG_SUMMARY, "connect %s: sdp%s", a,
		!nb ? "" : tcp_fd >= 0 ? " or tcp (in progress)" : " (in progress)");
	return nb ? fail(EINPROGRESS) : 0;
}

/* The entry goes first (so a number the kernel hands out again is not
 * ours), then the descriptor, then what the entry held: a listener's
 * thread may be connecting to the program's AF_UNIX listener, and only
 * its close ends that wait. */
SDP_EXPORT int close(int fd)
{
	struct sdp_fd *old = NULL;
	int ret;

	sdp_real_init();
	if (valid_fd(fd)) {
		pthread_mutex_lock(&sdp_fd_lock);
		old = fds[fd];
		fds[fd] = NULL;
		pthread_mutex_unlock(&sdp_fd_lock);
	}
	ret = sdp_real.close(fd);
	sdp_epoll_forget(fd);
	if (old && old->conn)
		sdp_conn_kick(old->conn); /* a quiet pump sees the end now */
	fd_free(old);
	return ret;
}

static int dup_entry(int fd, int nfd)
{
	if (nfd >= 0 && nfd != fd)
		fd_store(nfd, fd_copy(fd));
	return nfd;
}

SDP_EXPORT int dup(int fd)
{
	sdp_real_init();
	return dup_entry(fd, sdp_real.dup(fd));
}

SDP_EXPORT int dup2(int fd, int fd2)
{
	sdp_real_init();
	return dup_entry(fd, sdp_real.dup2(fd, fd2));
}

SDP_EXPORT int dup3(int fd, int fd2, int flags)
{
	sdp_real_init();
	return dup_entry(fd, sdp_real.dup3(fd, fd2, flags));
}

SDP_EXPORT int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	long arg;
	int ret;

	sdp_real_init();
	va_start(ap, cmd);
	arg = va_arg(ap, long);
	va_end(ap);
	ret = sdp_real.fcntl(fd, cmd, arg);
	if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC)
		dup_entry(fd, ret);
	return ret;
}

SDP_EXPORT int fcntl64(int fd, int cmd, ...) __attribute__((alias("fcntl")));

SDP_EXPORT int getsockname(int fd, struct sockaddr *addr, socklen_t *len)
{
	struct sdp_fd *e = fd_copy_inherited(fd);
	int ret;

	sdp_real_init();
	if (!e || e->kind == SDP_FD_INET)
		ret = sdp_real.getsockname(fd, addr, len);
	else
		ret = sdp_addr_out(e->kind == SDP_FD_CONN ? &e->conn->local : &e->bound, e->v6,
				   addr, len);
	fd_free(e);
	return ret;
}

SDP_EXPORT int getpeername(int fd, struct sockaddr *addr, socklen_t *len)
{
	struct sdp_fd *e = fd_copy_inherited(fd);
	int ret;

	sdp_real_init();
	if (!e || e->kind == SDP_FD_INET)
		ret = sdp_real.getpeername(fd, addr, len);
	else if (e->kind == SDP_FD_LISTEN)
		ret = fail(ENOTCONN);
	else
		ret = sdp_addr_out(&e->conn->peer, e->v6, addr, len);
	fd_free(e);
	return ret;
}

static int opt_int(void *val, socklen_t *len, int v)
{
	if (!val || !len || *len < sizeof(int))
		return fail(EINVAL);
	memcpy(val, &v, sizeof(v));
	*len = sizeof(v);
	return 0;
}

/* An SDP socket's options as a TCP socket's: the socket type and family
 * of TCP, TCP options answered from the connection. */
static int sdp_getsockopt(struct sdp_fd *e, int fd, int level, int name, void *val, socklen_t *len)
{
	/* a message's payload, but no more than loopback's MSS: iperf3 calls
	 * an MSS above its largest UDP datagram (65507) nonsense */
	uint32_t mss = e->conn && e->conn->payload_max < 65483 ? e->conn->payload_max : 65483;

	if (level == SOL_SOCKET) {
		switch (name) {
		case SO_TYPE: return opt_int(val, len, SOCK_STREAM);
		case SO_DOMAIN: return opt_int(val, len, e->v6 ? AF_INET6 : AF_INET);
		case SO_PROTOCOL: return opt_int(val, len, IPPROTO_TCP);
		case SO_ACCEPTCONN: return opt_int(val, len, e->kind == SDP_FD_LISTEN);
		case SO_ERROR: /* a non-blocking connect's failure, once */
			return opt_int(val, len, e->conn ? atomic_exchange(&e->conn->so_error, 0) : 0);
		default: return sdp_real.getsockopt(fd, level, name, val, len);
		}
	}
	if (level == IPPROTO_IP && name == IP_OPTIONS && len) {
		*len = 0; /* none: sshd refuses a connection that has some */
		return 0;
	}
	if (level != IPPROTO_TCP)
		return opt_int(val, len, 0);
	switch (name) {
	case TCP_NODELAY: return opt_int(val, len, 1);
	case TCP_MAXSEG: return opt_int(val, len, (int)mss);
	case TCP_INFO: {
		struct tcp_info ti;

		if (!val || !len)
			return fail(EFAULT);
		memset(&ti, 0, sizeof(ti));
		ti.tcpi_state = e->kind == SDP_FD_LISTEN ? 10 /* LISTEN */ : 1 /* ESTABLISHED */;
		ti.tcpi_snd_mss = mss;
		ti.tcpi_rcv_mss = mss;
		ti.tcpi_snd_cwnd = 16;
		memcpy(val, &ti, *len < sizeof(ti) ? *len : sizeof(ti));
		*len = *len < sizeof(ti) ? *len : sizeof(ti);
		return 0;
	}
	case TCP_CONGESTION:
		if (!val || !len)
			return fail(EFAULT);
		strncpy(val, "sdp", *len);
		return 0;
	default:
		return opt_int(val, len, 0);
	}
}

SDP_EXPORT int getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
	struct sdp_fd *e = fd_copy_inherited(fd);
	int ret;

	sdp_real_init();
	if (!e || e->kind == SDP_FD_INET)
		ret = sdp_real.getsockopt(fd, level, name, val, len);
	else
		ret = sdp_getsockopt(e, fd, level, name, val, len);
	fd_free(e);
	return ret;
}

SDP_EXPORT int setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	struct sdp_fd *e = fd_copy_inherited(fd);
	int ret = 0;

	sdp_real_init();
	if (!e || e->kind == SDP_FD_INET) {
		ret = sdp_real.setsockopt(fd, level, name, val, len);
	} else if (level == SOL_SOCKET) {
		/* buffers, linger, keepalive: what AF_UNIX has it keeps;
		 * the rest is a TCP matter SDP answers itself */
		ret = sdp_real.setsockopt(fd, level, name, val, len);
		if (ret && (errno == ENOPROTOOPT || errno == EOPNOTSUPP))
			ret = 0;
	}
	fd_free(e);
	return ret;
}

struct sdp_conn *sdp_fd_conn(int fd)
{
	struct sdp_conn *c = NULL;

	if (!valid_fd(fd))
		return NULL;
	pthread_mutex_lock(&sdp_fd_lock);
	if (fds[fd] && fds[fd]->kind == SDP_FD_CONN && (c = fds[fd]->conn))
		atomic_fetch_add(&c->ref, 1);
	pthread_mutex_unlock(&sdp_fd_lock);
	return c;
}
