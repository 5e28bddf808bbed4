/*
 * The waits of a program on its SDP connections: poll, ppoll, select,
 * pselect, epoll_wait and epoll_pwait (with epoll_ctl). Readiness is the
 * kernel's on the socketpairs (sdp.h); what these add is the step of the
 * connections in the calling thread (sdp_drive.c): a wait that would
 * block steps them and looks again with a zero timeout for
 * LIBSDP_SPIN_US, then waits in the kernel with their pumps awake. A poll
 * or select steps the SDP connections among its descriptors; an epoll set
 * is stepped for (every live connection) only once an SDP connection was
 * added to it, so the verbs engine's own epoll thread, and every wait on
 * descriptors that are not SDP's, is the kernel's call alone.
 */
#include "sdp_qpc.h"

#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>

#define SDP_EXPORT __attribute__((visibility("default")))
#define SDP_EPOLL_MAX 65536
#define SDP_WAIT_MAX 16 /* connections a poll or select steps */

static _Atomic(unsigned char) epoll_marked[SDP_EPOLL_MAX];

/* What a wait steps: its SDP connections (references taken), or, for a
 * marked epoll set, every live one (`all`). */
struct waitset {
	struct sdp_qpc *q[SDP_WAIT_MAX];
	int fd[SDP_WAIT_MAX];
	int n, all;
	int bulky; /* one of them is bulky */
};

static void ws_add(struct waitset *w, int fd)
{
	struct sdp_conn *c;
	struct sdp_qpc *q;

	if (w->n == SDP_WAIT_MAX || !(c = sdp_fd_conn(fd)))
		return;
	q = sdp_drive_get(c);
	sdp_conn_put(c);
	if (q) {
		w->fd[w->n] = fd;
		w->q[w->n++] = q;
	}
}

static void ws_done(struct waitset *w)
{
	while (w->n)
		sdp_drive_put(w->q[--w->n]);
}

/* a step of each but those the program moves bulk on (their pumps move
 * the bytes, the wait sleeps in the kernel as before): -1 none, -2 only
 * bulky ones, else whether a peer is on this host */
static int ws_drive(struct waitset *w)
{
	int i, local = -1;

	if (w->all)
		return sdp_drive_all(&w->bulky);
	for (i = 0; i < w->n; i++) {
		/* a direct reader's (sdp_drive_take): what came stays in the
		 * receive buffers for its read, the wait reports it */
		if (sdp_drive_bulky(w->q[i]) && sdp_qpc_direct(w->q[i])) {
			local = sdp_drive(w->q[i], SDP_STEP_NO_READ | SDP_STEP_HOLD) || local > 0;
			continue;
		}
		if (sdp_drive_bulky(w->q[i])) {
			local = local < 0 ? -2 : local;
			w->bulky = 1;
			continue;
		}
		local = sdp_drive(w->q[i], SDP_STEP_SHORT) || local > 0;
	}
	return local;
}

/* MARK, what a wait's result says of a descriptor readable: FD too, the
 * count N moved when it was not there yet */
typedef void (*wait_mark)(void *arg, int fd, int *n);

/* W's connections that hold bytes a direct read takes are readable too
 * (the program's end the kernel looks at has none of them) */
static int held_mark(struct waitset *w, wait_mark mark, void *arg, int n)
{
	int i;

	if (n < 0 || !mark)
		return n;
	for (i = 0; i < w->n; i++)
		if (sdp_drive_held(w->q[i]))
			mark(arg, w->fd[i], &n);
	return n;
}

/* The wait CALL (ZERO: with a zero timeout) around the steps of W;
 * MARK: how its result names a readable descriptor (NULL: no list of
 * them, an epoll set's). */
static int wait_drive(struct waitset *w, int zero_timeout, int (*call)(void *, int), void *arg,
		      wait_mark mark)
{
	uint64_t until;
	int n, err, local = ws_drive(w);

	if (local == -1 || zero_timeout) {
		n = held_mark(w, mark, arg, call(arg, 0));
		goto out;
	}
	until = sdp_now_ns() + sdp_spin_ns();
	for (;;) {
		n = held_mark(w, mark, arg, call(arg, 1));
		/* a bulk connection among them: its pump moves the bytes,
		 * a spin beside it only takes its CPU (iperf3's select over
		 * its data and control connections) */
		if (n != 0 || w->bulky || sdp_now_ns() >= until)
			break;
		if (local > 0)
			sched_yield();
		local = ws_drive(w);
	}
	if (n == 0) {
		sdp_block_begin(NULL);
		n = call(arg, 0);
		err = errno;
		sdp_block_end(NULL);
		errno = err;
	}
out:
	err = errno;
	ws_done(w);
	errno = err;
	return n;
}

void sdp_epoll_forget(int fd)
{
	if (fd >= 0 && fd < SDP_EPOLL_MAX)
		atomic_store(&epoll_marked[fd], 0);
}

static int (*real_epoll_ctl)(int, int, int, struct epoll_event *);
static int (*real_epoll_pwait)(int, struct epoll_event *, int, int, const sigset_t *);
static int (*real_epoll_wait)(int, struct epoll_event *, int, int);
static int (*real_ppoll)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);
static int (*real_pselect)(int, fd_set *, fd_set *, fd_set *, const struct timespec *,
			   const sigset_t *);
static int (*real_select)(int, fd_set *, fd_set *, fd_set *, struct timeval *);

static pthread_once_t wait_once = PTHREAD_ONCE_INIT;

static void wait_init(void)
{
	real_epoll_ctl = (__typeof__(real_epoll_ctl))dlsym(RTLD_NEXT, "epoll_ctl");
	real_epoll_pwait = (__typeof__(real_epoll_pwait))dlsym(RTLD_NEXT, "epoll_pwait");
	real_epoll_wait = (__typeof__(real_epoll_wait))dlsym(RTLD_NEXT, "epoll_wait");
	real_ppoll = (__typeof__(real_ppoll))dlsym(RTLD_NEXT, "ppoll");
	real_pselect = (__typeof__(real_pselect))dlsym(RTLD_NEXT, "pselect");
	real_select = (__typeof__(real_select))dlsym(RTLD_NEXT, "select");
}

#define REAL_LAZY(p, name) (pthread_once(&wait_once, wait_init), (p))

SDP_EXPORT int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	struct sdp_conn *c;
	int ret = REAL_LAZY(real_epoll_ctl, "epoll_ctl")(epfd, op, fd, ev);

	if (ret == 0 && op == EPOLL_CTL_ADD && epfd >= 0 && epfd < SDP_EPOLL_MAX &&
	    (c = sdp_fd_conn(fd))) {
		atomic_store(&epoll_marked[epfd], 1);
		sdp_conn_put(c);
	}
	return ret;
}

struct ep_args {
	int epfd, max, timeout;
	struct epoll_event *ev;
	const sigset_t *mask;
};

static int ep_call(void *arg, int zero)
{
	struct ep_args *a = arg;

	return REAL_LAZY(real_epoll_pwait, "epoll_pwait")(a->epfd, a->ev, a->max,
							   zero ? 0 : a->timeout, a->mask);
}

SDP_EXPORT int epoll_pwait(int epfd, struct epoll_event *ev, int max, int timeout,
			   const sigset_t *mask)
{
	struct ep_args a = { epfd, max, timeout, ev, mask };
	struct waitset w = { .all = 1 };

	if (epfd < 0 || epfd >= SDP_EPOLL_MAX || !atomic_load(&epoll_marked[epfd]))
		return ep_call(&a, 0);
	return wait_drive(&w, timeout == 0, ep_call, &a, NULL);
}

/* (a set with no SDP connection: the program's own call, as a seccomp
 * filter may allow epoll_wait and not epoll_pwait) */
SDP_EXPORT int epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout)
{
	if (epfd < 0 || epfd >= SDP_EPOLL_MAX || !atomic_load(&epoll_marked[epfd]))
		return REAL_LAZY(real_epoll_wait, "epoll_wait")(epfd, ev, max, timeout);
	return epoll_pwait(epfd, ev, max, timeout, NULL);
}

struct poll_args {
	struct pollfd *p;
	nfds_t n;
	const struct timespec *ts;
	const sigset_t *mask;
};

static void poll_mark(void *arg, int fd, int *n)
{
	struct poll_args *a = arg;

	for (nfds_t i = 0; i < a->n; i++)
		if (a->p[i].fd == fd && (a->p[i].events & (POLLIN | POLLRDNORM))) {
			if (!a->p[i].revents)
				(*n)++;
			a->p[i].revents |= a->p[i].events & (POLLIN | POLLRDNORM);
		}
}

static int poll_call(void *arg, int zero)
{
	static const struct timespec z;
	struct poll_args *a = arg;

	return REAL_LAZY(real_ppoll, "ppoll")(a->p, a->n, zero ? &z : a->ts, a->mask);
}

/* w gets the descriptors of p that a poll watches: how many. */
static int poll_waitset(struct waitset *w, const struct pollfd *p, nfds_t n)
{
	for (nfds_t i = 0; i < n; i++)
		if (p[i].fd >= 0)
			ws_add(w, p[i].fd);
	return w->n;
}

SDP_EXPORT int ppoll(struct pollfd *p, nfds_t n, const struct timespec *ts, const sigset_t *mask)
{
	struct poll_args a = { p, n, ts, mask };
	struct waitset w = { .n = 0 };

	sdp_real_init();
	if (!poll_waitset(&w, p, n))
		return poll_call(&a, 0);
	return wait_drive(&w, ts && !ts->tv_sec && !ts->tv_nsec, poll_call, &a, poll_mark);
}

SDP_EXPORT int poll(struct pollfd *p, nfds_t n, int timeout)
{
	struct timespec ts = { timeout / 1000, (long)(timeout % 1000) * 1000000 };
	struct poll_args a = { p, n, timeout < 0 ? NULL : &ts, NULL };
	struct waitset w = { .n = 0 };

	sdp_real_init();
	if (!poll_waitset(&w, p, n))
		return sdp_real.poll(p, n, timeout);
	return wait_drive(&w, timeout == 0, poll_call, &a, poll_mark);
}

/* select's sets are results too: each look starts from the program's */
struct sel_args {
	int n;
	fd_set *set[3], save[3];
	const struct timespec *ts;
	const sigset_t *mask;
};

static int sel_call(void *arg, int zero)
{
	static const struct timespec z;
	struct sel_args *a = arg;
	int i;

	for (i = 0; i < 3; i++)
		if (a->set[i])
			*a->set[i] = a->save[i];
	return REAL_LAZY(real_pselect, "pselect")(a->n, a->set[0], a->set[1], a->set[2],
						   zero ? &z : a->ts, a->mask);
}

static void sel_mark(void *arg, int fd, int *n)
{
	struct sel_args *a = arg;

	if (!a->set[0] || fd >= FD_SETSIZE || !FD_ISSET(fd, &a->save[0]) || FD_ISSET(fd, a->set[0]))
		return;
	FD_SET(fd, a->set[0]);
	(*n)++;
}

/* SEL: select's (TV: its timeout, for the time left Linux writes back) */
static int sel_wait(int n, fd_set *r, fd_set *wr, fd_set *e, const struct timespec *ts,
		    const sigset_t *mask, int sel, struct timeval *tv)
{
	uint64_t t0, left;
	int ret, err;

	struct sel_args a = { .n = n, .set = { r, wr, e }, .ts = ts, .mask = mask };
	struct waitset w = { .n = 0 };
	int i, fd;

	sdp_real_init();
	for (i = 0; i < 3; i++)
		if (a.set[i])
			a.save[i] = *a.set[i];
	for (fd = 0; fd < n && fd < FD_SETSIZE; fd++)
		if ((r && FD_ISSET(fd, r)) || (wr && FD_ISSET(fd, wr)) || (e && FD_ISSET(fd, e)))
			ws_add(&w, fd);
	if (!w.n)
		return sel ? REAL_LAZY(real_select, "select")(n, r, wr, e, tv) : sel_call(&a, 0);
	t0 = sdp_now_ns();
	ret = wait_drive(&w, ts && !ts->tv_sec && !ts->tv_nsec, sel_call, &a, sel_mark);
	err = errno;
	if (tv) {
		left = (uint64_t)ts->tv_sec * 1000000000u + (uint64_t)ts->tv_nsec;
		left -= sdp_now_ns() - t0 < left ? sdp_now_ns() - t0 : left;
		tv->tv_sec = (time_t)(left / 1000000000u);
		tv->tv_usec = (suseconds_t)(left % 1000000000u / 1000);
	}
	errno = err;
	return ret;
}

SDP_EXPORT int pselect(int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *ts,
		       const sigset_t *mask)
{
	return sel_wait(n, r, w, e, ts, mask, 0, NULL);
}

/* (Linux's select writes back the time left; the caller gets its own) */
SDP_EXPORT int select(int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *tv)
{
	struct timespec ts;

	if (tv) {
		ts.tv_sec = tv->tv_sec;
		ts.tv_nsec = tv->tv_usec * 1000;
	}
	return sel_wait(n, r, w, e, tv ? &ts : NULL, NULL, 1, tv);
}
