/*
 * The calls that move an SDP connection's bytes or wait for them, as the
 * program makes them: read, readv, recv, recvfrom, recvmsg, write,
 * writev, send, sendto, sendmsg and shutdown; the waits are of sdp_wait.c. On a descriptor that is no SDP
 * connection of this process's pumps they are the kernel's calls (a
 * forked child's and the library's own threads' too), the very call the
 * program made: a child may run under a seccomp filter (sshd's). On one they are
 * the kernel's calls on the program's end of the socketpair with the
 * connection stepped in the calling thread (sdp_drive.c), but for a
 * write's bytes, copied into the connection's send ring (sdp_ring.c) and
 * leaving from here, and a read or a wait that finds nothing steps
 * the connection (what arrived goes into the socketpair) and looks
 * again, for LIBSDP_SPIN_US, before it sleeps in the kernel with the
 * pump awake; with the peer on this host a bulk read that finds the
 * socketpair empty takes straight from the receive buffers
 * (sdp_drive_take). So readiness, blocking, non-blocking, MSG_* flags, EOF and
 * SIGPIPE stay the kernel's on the socketpair.
 */
#include "sdp_qpc.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/uio.h>
#include <unistd.h>

#define SDP_EXPORT __attribute__((visibility("default")))
#define SDP_IOV_MAX 64 /* a write's pieces stepped as they go */
#define SDP_TX_BULK (64u * 1024) /* a write from this size on is the pump's */

static int nonblocking(int fd)
{
	int fl = sdp_real.fcntl(fd, F_GETFL);

	return fl >= 0 && (fl & O_NONBLOCK);
}

static int again_e(ssize_t n, int err) { return n < 0 && (err == EAGAIN || err == EWOULDBLOCK); }

static int again(ssize_t n) { return again_e(n, errno); }

/* End of stream on an SDP connection that ended in error: the error. */
static ssize_t end_of(struct sdp_conn *c, ssize_t ret)
{
	int err;

	if (ret != 0 || !c)
		return ret;
	err = atomic_load(&c->error);
	if (!err)
		return 0;
	errno = err;
	return -1;
}

static size_t iov_total(const struct msghdr *m)
{
	size_t i, t = 0;

	for (i = 0; i < m->msg_iovlen; i++)
		t += m->msg_iov[i].iov_len;
	return t;
}

/* (its errno in *ERR) */
static ssize_t rx_once(int fd, struct msghdr *m, int flags, int *err)
{
	ssize_t n = sdp_real.recvmsg(fd, m, flags);

	*err = errno;
	return n;
}

/* A receive on C's descriptor: what is there; else a step, and again,
 * spinning on a blocking one, then asleep in the kernel. */
static ssize_t rx_drive(int fd, struct sdp_conn *c, struct msghdr *m, int flags)
{
	struct sdp_qpc *q = sdp_drive_get(c);
	uint64_t until = 0;
	unsigned int seq;
	ssize_t n;
	int local, err;

	if (!q)
		return sdp_real.recvmsg(fd, m, flags);
	/* a plain bulk read, or any read while they take so (the short
	 * rest of a bulk reader's buffer, iperf3's), straight from the
	 * receive buffers when the program's end is empty (sdp_drive_take);
	 * as a stream socketpair's recvmsg, it names no sender and has no
	 * control message */
	if (!(flags & ~MSG_DONTWAIT) && iov_total(m) &&
	    (iov_total(m) >= SDP_TX_BULK || sdp_qpc_direct(q))) {
		int nb = (flags & MSG_DONTWAIT) != 0;

		/* a blocking one that finds nothing spins so first */
		while ((n = sdp_drive_take(q, fd, m)) == 0 && !nb) {
			if (!until) {
				if ((nb = nonblocking(fd)))
					break;
				until = sdp_now_ns() + sdp_spin_ns();
			} else if (sdp_now_ns() >= until) {
				break;
			}
			sched_yield();
		}
		if (n > 0) {
			m->msg_namelen = 0;
			m->msg_controllen = 0;
			m->msg_flags = 0;
			err = 0;
			goto out;
		}
		until = 0;
	}
	/* a partial read would not do; a bulk reader's buffer is the
	 * pump's to fill, beside its reads (as a bulk write) */
	sdp_drive_bulk(q, iov_total(m) >= SDP_TX_BULK);
	if ((flags & MSG_WAITALL) || iov_total(m) >= SDP_TX_BULK) {
		sdp_block_begin(q);
		n = rx_once(fd, m, flags, &err);
		sdp_block_end(q);
		goto out;
	}
	/* the socketpair is looked at again only when a step may have put
	 * something there (or at the end of the spin) */
	seq = sdp_drive_seq(q);
	n = rx_once(fd, m, flags | MSG_DONTWAIT, &err);
	while (again_e(n, err)) {
		local = sdp_drive(q, SDP_STEP_NO_READ);
		if (sdp_drive_seq(q) != seq) {
			seq = sdp_drive_seq(q);
			n = rx_once(fd, m, flags | MSG_DONTWAIT, &err);
			if (!again_e(n, err))
				break;
		}
		if ((flags & MSG_DONTWAIT) || (!until && nonblocking(fd)))
			break;
		if (!until) {
			until = sdp_now_ns() + sdp_spin_ns();
		} else if (sdp_now_ns() >= until) {
			sdp_block_begin(q);
			n = rx_once(fd, m, flags, &err);
			sdp_block_end(q);
			goto out;
		}
		if (local > 0)
			sched_yield();
	}
	/* a reader that takes what was there steps too when more waits for
	 * room: the buffers go back to the peer as credits now, not when the
	 * socketpair is dry */
	if (n > 0 && sdp_drive_waiting(q))
		sdp_drive(q, SDP_STEP_NO_READ);
out:
	sdp_drive_put(q);
	errno = err;
	return n;
}

static ssize_t rx(int fd, struct sdp_conn *c, void *buf, size_t len, int flags,
		  struct sockaddr *src, socklen_t *slen)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n = rx_drive(fd, c, &m, flags);

	if (n >= 0 && slen)
		*slen = 0; /* a stream socket names no sender */
	(void)src;
	return n;
}

static void iov_advance(struct msghdr *m, size_t n)
{
	while (n && m->msg_iovlen) {
		if (n < m->msg_iov->iov_len) {
			m->msg_iov->iov_base = (char *)m->msg_iov->iov_base + n;
			m->msg_iov->iov_len -= n;
			return;
		}
		n -= m->msg_iov->iov_len;
		m->msg_iov++;
		m->msg_iovlen--;
	}
}

/* The rest of a send (M, after DONE of TOTAL bytes) through the
 * socketpair: a bulk one is the pump's (it reads beside the program's
 * write); else stepped out at once, piece by piece while the socketpair
 * is full, and a blocking one spins while nothing moves, then sleeps in
 * the kernel for the rest. The bytes sent, or -1 with errno. */
static ssize_t tx_socketpair(int fd, struct sdp_qpc *q, struct msghdr *m, int flags, size_t done,
			     size_t total)
{
	uint64_t until = 0;
	ssize_t n;
	int local, err;

	if (total >= SDP_TX_BULK) {
		sdp_block_begin(q);
		n = sdp_real.sendmsg(fd, m, flags);
		err = errno;
		sdp_block_end(q);
		if (n > 0)
			done += (size_t)n;
		errno = err;
		return done ? (ssize_t)done : n;
	}
	for (;;) {
		n = sdp_real.sendmsg(fd, m, flags | MSG_DONTWAIT);
		if (n > 0) {
			done += (size_t)n;
			iov_advance(m, (size_t)n);
			sdp_drive(q, SDP_STEP_SHORT);
			if (done == total)
				break;
			until = 0; /* it moves */
			continue;
		}
		if (!again(n))
			break;
		local = sdp_drive(q, SDP_STEP_SHORT);
		if ((flags & MSG_DONTWAIT) || (!until && nonblocking(fd))) {
			n = sdp_real.sendmsg(fd, m, flags | MSG_DONTWAIT);
			if (n > 0) {
				done += (size_t)n;
				sdp_drive(q, SDP_STEP_SHORT);
			}
			break;
		}
		if (!until) {
			until = sdp_now_ns() + sdp_spin_ns();
		} else if (sdp_now_ns() >= until) {
			sdp_block_begin(q);
			n = sdp_real.sendmsg(fd, m, flags);
			err = errno;
			sdp_block_end(q);
			errno = err;
			if (n > 0) {
				done += (size_t)n;
				sdp_drive(q, SDP_STEP_SHORT);
			}
			break;
		}
		if (local > 0)
			sched_yield();
	}
	return done ? (ssize_t)done : n;
}

/* A send on C's descriptor: its bytes copied into the connection's send
 * ring (sdp_ring.c) and stepped out at once; one that finds the ring full
 * steps and spins, then a blocking one sleeps until a slot is free. What
 * the ring does not take (its socketpair end holds earlier bytes or is
 * shut, the connection ended, or the ring stayed full for a non-blocking
 * one) goes through the socketpair, whose readiness, EAGAIN and EPIPE
 * stay the kernel's. (A connected socket ignores the address: dropped.) */
static ssize_t tx_drive(int fd, struct sdp_conn *c, const struct msghdr *msg, int flags)
{
	struct sdp_qpc *q = sdp_drive_get(c);
	struct iovec iov[SDP_IOV_MAX];
	struct msghdr m = *msg;
	size_t total = 0, done = 0, i;
	uint64_t until = 0;
	ssize_t n;
	int local, err, nb = -1;

	m.msg_name = NULL;
	m.msg_namelen = 0;
	for (i = 0; i < m.msg_iovlen; i++)
		total += msg->msg_iov[i].iov_len;
	/* a bulk writer's connection is the pump's to wait on (sdp_wait.c) */
	if (q)
		sdp_drive_bulk(q, total >= SDP_TX_BULK);
	if (!q || m.msg_iovlen > SDP_IOV_MAX) {
		if (q)
			sdp_block_begin(q);
		n = sdp_real.sendmsg(fd, &m, flags);
		err = errno;
		if (q) {
			sdp_block_end(q);
			sdp_drive_put(q);
		}
		errno = err;
		return n;
	}
	memcpy(iov, msg->msg_iov, m.msg_iovlen * sizeof(*iov));
	m.msg_iov = iov;
	while (done < total) {
		n = sdp_ring_put(q, &m);
		if (n < 0)
			break;
		if (n > 0) {
			done += (size_t)n;
			sdp_drive(q, SDP_STEP_SHORT);
			until = 0;
			continue;
		}
		/* full: what is posted completes, freeing slots; a
		 * non-blocking writer spins so too, then writes into the
		 * socketpair (writable as the kernel says, its EAGAIN) */
		local = sdp_drive(q, SDP_STEP_SHORT);
		if (!until) {
			until = sdp_now_ns() + sdp_spin_ns();
			/* a bulk writer to a peer on this host leaves the
			 * ring to its pump, as its poll does (sdp_wait.c) */
			if (sdp_drive_bulky(q))
				until = 1;
		} else if (sdp_now_ns() >= until) {
			if (nb < 0)
				nb = (flags & MSG_DONTWAIT) || nonblocking(fd);
			if (nb)
				break;
			sdp_block_begin(q);
			sdp_ring_wait(q, SDP_QUIET_MS);
			sdp_block_end(q);
			continue;
		}
		if (local > 0)
			sched_yield();
	}
	n = (ssize_t)done;
	if (done < total)
		n = tx_socketpair(fd, q, &m, flags, done, total);
	err = errno;
	sdp_drive_put(q);
	errno = err;
	return n;
}

static ssize_t tx(int fd, struct sdp_conn *c, const void *buf, size_t len, int flags)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };

	return tx_drive(fd, c, &m, flags);
}

/* Whether this process's threads step C (its pump runs here). A
 * descriptor this process does not step (a forked child's copy, which
 * may run under a seccomp filter such as sshd's privilege-separated
 * child's) gets the kernel's call the program made, and no other. */
static int driven(struct sdp_conn *c)
{
	struct sdp_qpc *q = sdp_drive_get(c);

	if (q)
		sdp_drive_put(q);
	return q != NULL;
}

/* CALL_CONN on a connection this process steps, CALL_VIEW on one it does
 * not, CALL_PLAIN on any other descriptor; the result after C's reference
 * is dropped. */
#define WITH_CONN(fd, call_conn, call_view, call_plain)                                            \
	do {                                                                                       \
		struct sdp_conn *c;                                                                \
		ssize_t ret_;                                                                      \
		int err_;                                                                          \
		sdp_real_init();                                                                   \
		c = sdp_fd_conn(fd);                                                               \
		if (!c)                                                                            \
			return call_plain;                                                         \
		ret_ = driven(c) ? (call_conn) : (call_view);                                      \
		err_ = errno;                                                                      \
		sdp_conn_put(c);                                                                   \
		errno = err_;                                                                      \
		return ret_;                                                                       \
	} while (0)

SDP_EXPORT ssize_t read(int fd, void *buf, size_t len)
{
	WITH_CONN(fd, end_of(c, rx(fd, c, buf, len, 0, NULL, NULL)),
		  end_of(c, sdp_real.read(fd, buf, len)), sdp_real.read(fd, buf, len));
}

SDP_EXPORT ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	WITH_CONN(fd,
		  len ? end_of(c, rx(fd, c, buf, len, flags, NULL, NULL))
		      : rx(fd, c, buf, len, flags, NULL, NULL),
		  len ? end_of(c, sdp_real.recv(fd, buf, len, flags))
		      : sdp_real.recv(fd, buf, len, flags),
		  sdp_real.recv(fd, buf, len, flags));
}

SDP_EXPORT ssize_t recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *src,
			    socklen_t *slen)
{
	WITH_CONN(fd,
		  len ? end_of(c, rx(fd, c, buf, len, flags, src, slen))
		      : rx(fd, c, buf, len, flags, src, slen),
		  len ? end_of(c, sdp_real.recvfrom(fd, buf, len, flags, src, slen))
		      : sdp_real.recvfrom(fd, buf, len, flags, src, slen),
		  sdp_real.recvfrom(fd, buf, len, flags, src, slen));
}

SDP_EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	WITH_CONN(fd, end_of(c, rx_drive(fd, c, msg, flags)),
		  end_of(c, sdp_real.recvmsg(fd, msg, flags)), sdp_real.recvmsg(fd, msg, flags));
}

static ssize_t (*real_readv)(int, const struct iovec *, int);
static ssize_t (*real_writev)(int, const struct iovec *, int);

static ssize_t readv_conn(int fd, struct sdp_conn *c, const struct iovec *iov, int n)
{
	struct msghdr m = {.msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)n};

	return end_of(c, rx_drive(fd, c, &m, 0));
}

SDP_EXPORT ssize_t readv(int fd, const struct iovec *iov, int n)
{
	if (!real_readv)
		real_readv = (__typeof__(real_readv))dlsym(RTLD_NEXT, "readv");
	WITH_CONN(fd, n < 0 ? real_readv(fd, iov, n) : readv_conn(fd, c, iov, n),
		  end_of(c, real_readv(fd, iov, n)), real_readv(fd, iov, n));
}

SDP_EXPORT ssize_t write(int fd, const void *buf, size_t len)
{
	WITH_CONN(fd, tx(fd, c, buf, len, 0), sdp_real.write(fd, buf, len),
		  sdp_real.write(fd, buf, len));
}

SDP_EXPORT ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	WITH_CONN(fd, tx(fd, c, buf, len, flags), sdp_real.sendto(fd, buf, len, flags, NULL, 0),
		  sdp_real.sendto(fd, buf, len, flags, NULL, 0));
}

/* A connected TCP socket ignores the address of sendto/sendmsg; an
 * AF_UNIX one would say EISCONN: it is dropped. */
SDP_EXPORT ssize_t sendto(int fd, const void *buf, size_t len, int flags,
			  const struct sockaddr *dst, socklen_t dlen)
{
	WITH_CONN(fd, tx(fd, c, buf, len, flags), sdp_real.sendto(fd, buf, len, flags, NULL, 0),
		  sdp_real.sendto(fd, buf, len, flags, dst, dlen));
}

static ssize_t sendmsg_view(int fd, const struct msghdr *msg, int flags)
{
	struct msghdr m = *msg;

	m.msg_name = NULL;
	m.msg_namelen = 0;
	return sdp_real.sendmsg(fd, &m, flags);
}

SDP_EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	WITH_CONN(fd, tx_drive(fd, c, msg, flags), sendmsg_view(fd, msg, flags),
		  sdp_real.sendmsg(fd, msg, flags));
}

static ssize_t writev_conn(int fd, struct sdp_conn *c, const struct iovec *iov, int n)
{
	struct msghdr m = {.msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)n};

	/* write(2)'s SIGPIPE, as sendmsg's without MSG_NOSIGNAL */
	return tx_drive(fd, c, &m, 0);
}

SDP_EXPORT ssize_t writev(int fd, const struct iovec *iov, int n)
{
	if (!real_writev)
		real_writev = (__typeof__(real_writev))dlsym(RTLD_NEXT, "writev");
	WITH_CONN(fd, n < 0 ? real_writev(fd, iov, n) : writev_conn(fd, c, iov, n),
		  real_writev(fd, iov, n), real_writev(fd, iov, n));
}

/* the pump sees the program's end of stream now, not at its next look */
SDP_EXPORT int shutdown(int fd, int how)
{
	struct sdp_conn *c;
	int ret, err;

	sdp_real_init();
	ret = sdp_real.shutdown(fd, how);
	err = errno;
	c = sdp_fd_conn(fd);
	if (c) {
		sdp_conn_kick(c);
		sdp_conn_put(c);
	}
	errno = err;
	return ret;
}
