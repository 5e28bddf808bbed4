/*
 * Library connections: accept, read requests, answer, and release.
 *
 * Each connection is a non-blocking SOCK_SEQPACKET socket; one record is one
 * request and gets exactly one reply record, in order, even when it is
 * malformed (then the reply carries only a status), but for IMPORT_BIND
 * (ops_import.c), which has none. Clients are never
 * waited for: a client whose socket cannot take its reply is not reading
 * and is disconnected. A connection ends on EOF, error or hang-up, and
 * everything it owned is released at once (registry.c).
 */
#include "sofd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

/* Requests handled per readiness event, so that one busy client cannot
 * starve the others (epoll is level-triggered and comes back). */
#define SOFD_BATCH 32

static union {
	struct sof_msg msg;
	uint8_t bytes[SOF_MSG_MAX];
} rx;

static union {
	struct sof_msg msg;
	uint8_t bytes[SOF_MSG_MAX];
} tx;

/* Accepting at the descriptor limit would leave the connection pending and
 * the listening socket readable forever: use the spare descriptor to accept
 * it and close it at once. */
static void shed_connection(void)
{
	static uint64_t last_log;
	uint64_t now;
	int fd;

	if (sofd.spare_fd < 0)
		return;
	close(sofd.spare_fd);
	fd = accept4(sofd.listen.fd, NULL, NULL, SOCK_CLOEXEC);
	if (fd >= 0)
		close(fd);
	sofd.spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	now = sof_now_ns();
	if (now - last_log >= 1000000000ull) {
		sofd_log("out of file descriptors: refusing connections");
		last_log = now;
	}
}

void sofd_accept(void)
{
	for (int i = 0; i < SOFD_BATCH; i++) {
		struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP};
		struct ucred cr = {.pid = 0, .uid = (uid_t)-1, .gid = (gid_t)-1};
		socklen_t crlen = sizeof(cr);
		struct sofd_conn *c;
		int fd;

		fd = accept4(sofd.listen.fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE) {
				shed_connection();
				continue;
			}
			if (errno != EAGAIN)
				sofd_log("accept: %s", strerror(errno));
			return;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen)) {
			sofd_log("SO_PEERCRED: %s", strerror(errno));
			close(fd);
			continue;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		c->p.kind = SOFD_POLL_CONN;
		c->p.fd = fd;
		c->id = ++sofd.next_conn_id;
		c->async_fd = -1;
		c->db_fd = -1;
		c->pmem_fd = c->fence_fd = -1;
		c->pid = cr.pid;
		c->uid = cr.uid;
		c->gid = cr.gid;
		sof_list_init(&c->pds);
		sof_list_init(&c->mrs);
		sof_list_init(&c->cqs);
		sof_list_init(&c->srqs);
		sof_list_init(&c->qps);
		sof_list_init(&c->mws);
		ev.data.ptr = &c->p;
		if (epoll_ctl(sofd.epfd, EPOLL_CTL_ADD, fd, &ev)) {
			sofd_log("epoll_ctl: %s", strerror(errno));
			close(fd);
			free(c);
			continue;
		}
		sof_list_add(&sofd.conns, &c->link);
		sofd_log("conn %u open: pid %d uid %u", c->id, (int)c->pid, (unsigned)c->uid);
	}
}

void sofd_conn_close(struct sofd_conn *c, const char *why)
{
	struct sofd_counts before = sofd.n;

	c->dead = true;
	sofd_import_conn_closed(c);
	sofd_cm_conn_closed(c);
	sofd_umad_conn_closed(c);
	sofd_release_all(c);
	sofd_mr_keys_release(c);
	sof_tp_slot_release(c);
	epoll_ctl(sofd.epfd, EPOLL_CTL_DEL, c->p.fd, NULL);
	close(c->p.fd);
	if (c->async_fd >= 0)
		close(c->async_fd);
	if (c->fence)
		munmap(c->fence, sizeof(*c->fence));
	if (c->pmem_fd >= 0)
		close(c->pmem_fd);
	if (c->fence_fd >= 0)
		close(c->fence_fd);
	if (c->db_fd >= 0) {
		epoll_ctl(sofd.epfd, EPOLL_CTL_DEL, c->db_fd, NULL);
		close(c->db_fd);
	}
	if (c->db) {
		c->db->c = NULL;
		c->db->p.fd = -1;
		c->db->next_dead = sofd.dead_dbs;
		sofd.dead_dbs = c->db;
	}
	if (c->ctx_id)
		sofd.n.contexts--;
	sof_list_del(&c->link);
	sofd_log("conn %u closed (%s): pid %d uid %u; released pds %u mrs %u cqs %u "
		 "srqs %u qps %u mws %u",
		 c->id, why, (int)c->pid, (unsigned)c->uid, before.pds - sofd.n.pds,
		 before.mrs - sofd.n.mrs, before.cqs - sofd.n.cqs, before.srqs - sofd.n.srqs,
		 before.qps - sofd.n.qps, before.mws - sofd.n.mws);
	free(c);
}

void sofd_reap(void)
{
	while (sofd.dead_dbs) {
		struct sofd_doorbell *db = sofd.dead_dbs;

		sofd.dead_dbs = db->next_dead;
		free(db);
	}
}

/* Send the reply to one request. 0, or -errno when the connection must go. */
static int reply(struct sofd_conn *c, uint32_t op, int status, struct sofd_rep *rp)
{
	size_t len = sizeof(struct sof_msg);
	int err;

	if (status == 0 && rp->len) {
		memcpy(tx.bytes + len, rp->data, rp->len);
		len += rp->len;
	}
	tx.msg.op = op;
	tx.msg.len = (uint32_t)len;
	tx.msg.status = status;
	tx.msg.rsvd = 0;
	err = sof_send_rec(c->p.fd, tx.bytes, len, rp->fds, status ? 0 : rp->nfds);
	for (int i = 0; i < rp->nfds; i++)
		if (rp->close_fds[i])
			close(rp->fds[i]);
	rp->nfds = 0;
	return err;
}

/* Read and answer one request. 1 when one was handled, 0 when none is
 * pending, -errno (or -ECONNRESET at EOF) when the connection must go. */
static int handle_one(struct sofd_conn *c)
{
	int fds[SOF_MAX_FDS], nfds = SOF_MAX_FDS, status;
	struct sofd_rep rp = {.nfds = 0};
	struct sofd_req rq = {.c = c->alias ? c->alias : c, .via = c};
	uint32_t op = 0;
	ssize_t n;

	n = sof_recv_rec(c->p.fd, rx.bytes, sizeof(rx.bytes), fds, &nfds);
	if (n == -EAGAIN)
		return 0;
	if (n == 0)
		return -ECONNRESET;
	if (n < 0 && n != -EMSGSIZE)
		return (int)n;
	if (n < 0) {
		/* Too long, or its descriptors did not fit: answer it. */
		status = -EMSGSIZE;
		nfds = 0;
	} else if ((size_t)n < sizeof(struct sof_msg) || rx.msg.len != (uint64_t)n) {
		status = -EINVAL;
	} else if (rx.msg.op == SOF_OP_IMPORT_BIND) {
		/* the one record without a reply (ops_import.c) */
		sofd_import_bind(c, rx.bytes + sizeof(struct sof_msg),
				 (size_t)n - sizeof(struct sof_msg));
		sof_close_fds(fds, nfds);
		return 1;
	} else if (c->orphan) {
		status = -EIO; /* the context it imported is gone */
	} else {
		op = rx.msg.op;
		rq.op = op;
		rq.data = rx.bytes + sizeof(struct sof_msg);
		rq.len = (size_t)n - sizeof(struct sof_msg);
		rq.fds = fds;
		rq.nfds = nfds;
		status = sofd_dispatch(&rq, &rp);
	}
	if (n >= (ssize_t)sizeof(struct sof_msg) || n == -EMSGSIZE)
		op = rx.msg.op;
	sof_close_fds(fds, nfds); /* those a handler did not keep */
	n = reply(c, op, status, &rp);
	if (n == -EAGAIN)
		return -ENOBUFS; /* not reading its replies */
	return n < 0 ? (int)n : 1;
}

void sofd_conn_event(struct sofd_conn *c, uint32_t events)
{
	if ((events & EPOLLOUT) && !(events & (EPOLLHUP | EPOLLERR)))
		sofd_cm_conn_writable(c);
	for (int i = 0; i < SOFD_BATCH && !c->dead && !sofd.stop; i++) {
		int r = handle_one(c);

		if (r == 0)
			return;
		if (r < 0) {
			sofd_conn_close(c, r == -ECONNRESET ? "closed by peer" : strerror(-r));
			return;
		}
	}
}
