/*
 * The daemon as the connection manager's host (cm/cm_host.h): the table
 * of host operations, filled here and nowhere else, and the daemon's side
 * of every call into cm (sofd_cm_*, sofd.h). cm sees a library
 * connection as the struct cm_conn embedded in struct sofd_conn, writes
 * a channel's events to its socket through conn_send, and has its
 * timerfd polled here as a pollable of kind SOFD_POLL_CM_TIMER.
 */
#include "sof_gid.h"
#include "sofd.h"

#include <errno.h>
#include <stdio.h>
#include <sys/epoll.h>

static int cm_epfd = -1;
static struct sofd_pollable cm_timer = {SOFD_POLL_CM_TIMER, -1};

static struct sofd_conn *conn_of(const struct cm_conn *c)
{
	return sof_container_of(c, struct sofd_conn, cm);
}

static void host_log(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));
static void host_log(const char *fmt, va_list ap)
{
	char buf[1024];

	vsnprintf(buf, sizeof(buf), fmt, ap);
	sofd_log("%s", buf);
}

static bool host_conn_same_owner(const struct cm_conn *a, const struct cm_conn *b)
{
	const struct sofd_conn *ca = conn_of(a), *cb = conn_of(b);

	return ca->pid == cb->pid && ca->uid == cb->uid;
}

static bool host_conn_is_context(const struct cm_conn *c) { return conn_of(c)->ctx_id != 0; }

static int host_conn_send(struct cm_conn *c, const void *buf, size_t len)
{
	return sof_send_rec(conn_of(c)->p.fd, buf, len, NULL, 0);
}

static void host_conn_poll(struct cm_conn *c, bool want_out)
{
	struct sofd_conn *sc = conn_of(c);
	struct epoll_event eev = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = &sc->p};

	if (want_out)
		eev.events |= EPOLLOUT;
	epoll_ctl(cm_epfd, EPOLL_CTL_MOD, sc->p.fd, &eev);
}

static int host_timer_poll(int fd)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &cm_timer};

	cm_timer.fd = fd;
	return epoll_ctl(cm_epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

static int host_ib_port(struct sof_ib_port *p)
{
	if (!sofd.objtab ||
	    sof_ib_read((const struct sof_gid_shm *)((char *)sofd.objtab + SOF_OBJTAB_GID_OFF),
			p) ||
	    !p->present)
		return -ENODEV;
	return 0;
}

static const struct cm_host_ops host_ops = {
    .log = host_log,
    .conn_same_owner = host_conn_same_owner,
    .conn_is_context = host_conn_is_context,
    .conn_send = host_conn_send,
    .conn_poll = host_conn_poll,
    .timer_poll = host_timer_poll,
    .ib_port = host_ib_port,
};

static const struct cm_host host = {
    .ops = &host_ops,
    .dev = &sofd.dev,
    .counters = sofd.counters,
    .drops = sofd.drops,
};

/* ---- the daemon's calls into cm -------------------------------------------------- */

int sofd_cm_init(int epfd)
{
	cm_epfd = epfd;
	return cm_init(&host);
}

void sofd_cm_timer_event(void) { cm_timer_event(); }

int sofd_cm_op(struct sofd_req *rq, struct sofd_rep *rp)
{
	struct cm_request req = {
	    .c = &rq->c->cm,
	    .op = rq->op,
	    .data = rq->data,
	    .len = rq->len,
	    .nfds = rq->nfds,
	};
	struct cm_reply rep = {.data = rp->data, .len = rp->len};
	int err = cm_op(&req, &rep);

	rp->data = rep.data;
	rp->len = rep.len;
	return err;
}

void sofd_cm_conn_closed(struct sofd_conn *c) { cm_conn_closed(&c->cm); }

void sofd_cm_conn_writable(struct sofd_conn *c) { cm_conn_writable(&c->cm); }
