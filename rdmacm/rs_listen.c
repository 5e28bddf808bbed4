/*
 * rsockets: listening. rlisten hands the listener to the process's accept
 * thread, which answers each connection request as it comes (the REP with
 * our rs_conn_data, then the RTU), as the kernel completes a TCP handshake
 * into the backlog and as rdma-core's listen service does: a client's
 * rconnect does not wait for the server's raccept. The accepted rsockets
 * wait in the listener's accept queue (a socket pair carrying pointers),
 * which raccept reads and rpoll watches. An accepted rsocket is blocking
 * whatever the listener is, as accept(2) gives it (rdma-core passes the
 * listener's O_NONBLOCK on), and its number is a new fd taken in raccept
 * (see rs_accept).
 *
 * Locks: svc_lock guards the thread's list of listeners and is held while
 * the thread answers a request of one of them, so that rclose of a
 * listener (sofrs_listen_stop) waits until the thread let go of it.
 */
#include "rsock.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t svc_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sofrs **svc_ls; /* the listeners */
static int svc_n, svc_cap;
static int svc_wake[2] = { -1, -1 }; /* a change of the list */
static bool svc_running;
static pid_t svc_pid; /* the process whose thread it is: a forked child
			* has no thread and starts its own */

/* Answer one request of listener ls: the new rsocket, connected, or NULL
 * (a request that is not an rsocket's is refused). Needs svc_lock. */
static struct sofrs *rs_accept_one(struct sofrs *ls)
{
	struct rs_conn_data creq, cresp;
	struct rdma_conn_param param;
	struct rdma_cm_id *id;
	struct sofrs *nrs;

	if (rdma_get_request(ls->cm_id, &id))
		return NULL;
	if (id->event->param.conn.private_data_len < sizeof(creq))
		goto err_reject;
	memcpy(&creq, id->event->param.conn.private_data, sizeof(creq));
	if (creq.version != RS_CONN_VERSION)
		goto err_reject;
	nrs = sofrs_alloc(ls);
	if (!nrs)
		goto err_reject;
	nrs->cm_id = id;
	id->context = nrs;
	if (sofrs_create_ep(nrs)) {
		rdma_reject(id, NULL, 0);
		sofrs_free(nrs);
		return NULL;
	}
	sofrs_save_conn_data(nrs, &creq);
	sofrs_format_conn_data(nrs, &cresp);
	param = id->event->param.conn;
	param.private_data = &cresp;
	param.private_data_len = sizeof(cresp);
	if (rdma_accept(id, &param)) {
		sofrs_free(nrs);
		return NULL;
	}
	sofrs_connected_now(nrs);
	return nrs;

err_reject:
	rdma_reject(id, NULL, 0);
	sofrs_drop_id(id);
	return NULL;
}

static void *rs_accept_thread(void *arg)
{
	struct pollfd *pfd = NULL;
	struct sofrs **who = NULL;
	int cap = 0;

	(void)arg;
	sofrs_internal = 1; /* its QPs' sockets are the transport's */
	for (;;) {
		int n, i, j;

		pthread_mutex_lock(&svc_lock);
		n = svc_n;
		if (n + 1 > cap) {
			cap = n + 16;
			free(pfd);
			free(who);
			pfd = calloc((size_t)cap, sizeof(*pfd));
			who = calloc((size_t)cap, sizeof(*who));
			if (!pfd || !who)
				abort();
		}
		for (i = 0; i < n; i++) {
			who[i] = svc_ls[i];
			pfd[i].fd = svc_ls[i]->cm_id->channel->fd;
			pfd[i].events = POLLIN;
		}
		pfd[n].fd = svc_wake[0];
		pfd[n].events = POLLIN;
		pthread_mutex_unlock(&svc_lock);

		if (poll(pfd, (nfds_t)n + 1, 500) <= 0)
			continue;
		if (pfd[n].revents) {
			char buf[64];

			if (read(svc_wake[0], buf, sizeof(buf)) < 0) {
				/* another change took it */
			}
		}
		pthread_mutex_lock(&svc_lock);
		for (i = 0; i < n; i++) {
			struct sofrs *nrs;

			if (!pfd[i].revents)
				continue;
			for (j = 0; j < svc_n && svc_ls[j] != who[i]; j++)
				;
			if (j == svc_n)
				continue; /* closed meanwhile */
			nrs = rs_accept_one(who[i]);
			if (nrs && write(who[i]->accept_queue[1], &nrs, sizeof(nrs)) != sizeof(nrs))
				sofrs_free(nrs); /* the queue is full: dropped */
		}
		pthread_mutex_unlock(&svc_lock);
	}
	return NULL;
}

static void rs_svc_wake(void)
{
	if (write(svc_wake[1], "", 1) < 0) {
		/* the pipe is full: the thread wakes anyway */
	}
}

SOFCM_EXPORT int rlisten(int socket, int backlog)
{
	struct sofrs *rs = sofrs_lookup(socket);
	pthread_t t;
	int ret = 0;

	if (!rs)
		return sofcm_err(EBADF);
	if (rs->type != SOCK_STREAM)
		return sofcm_err(EOPNOTSUPP);
	if (rs->state == rs_listening)
		return 0;
	if (rs->state & ~rs_bound)
		return sofcm_err(EINVAL);
	if (rdma_listen(rs->cm_id, backlog))
		return -1;
	/* the thread's reads of the channel must not block */
	if (fcntl(rs->cm_id->channel->fd, F_SETFL,
		  fcntl(rs->cm_id->channel->fd, F_GETFL) | O_NONBLOCK) ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, rs->accept_queue))
		return -1;
	fcntl(rs->accept_queue[1], F_SETFL, O_NONBLOCK);
	pthread_mutex_lock(&svc_lock);
	if (svc_running && svc_pid != getpid()) {
		close(svc_wake[0]);
		close(svc_wake[1]);
		svc_running = false;
		svc_n = 0;
	}
	if (!svc_running) {
		if (pipe2(svc_wake, O_CLOEXEC | O_NONBLOCK) ||
		    pthread_create(&t, NULL, rs_accept_thread, NULL)) {
			ret = sofcm_err(errno ? errno : EAGAIN);
			goto out;
		}
		pthread_detach(t);
		svc_running = true;
		svc_pid = getpid();
	}
	if (svc_n == svc_cap) {
		struct sofrs **ls = realloc(svc_ls, sizeof(*ls) * (size_t)(svc_cap + 16));

		if (!ls) {
			ret = sofcm_err(ENOMEM);
			goto out;
		}
		svc_ls = ls;
		svc_cap += 16;
	}
	svc_ls[svc_n++] = rs;
	rs->state = rs_listening;
	rs_svc_wake();
out:
	pthread_mutex_unlock(&svc_lock);
	return ret;
}

void sofrs_listen_stop(struct sofrs *rs)
{
	struct sofrs *nrs;

	pthread_mutex_lock(&svc_lock);
	for (int i = 0; i < svc_n; i++) {
		if (svc_ls[i] == rs) {
			svc_ls[i] = svc_ls[--svc_n];
			break;
		}
	}
	rs_svc_wake();
	pthread_mutex_unlock(&svc_lock);
	fcntl(rs->accept_queue[0], F_SETFL, O_NONBLOCK);
	while (read(rs->accept_queue[0], &nrs, sizeof(nrs)) == sizeof(nrs))
		sofrs_free(nrs);
	close(rs->accept_queue[0]);
	close(rs->accept_queue[1]);
	rs->accept_queue[0] = rs->accept_queue[1] = -1;
}

/* The next accepted rsocket (in steps, so that an rclose of another
 * thread is seen). */
static int rs_accept(struct sofrs *rs, struct sockaddr *addr, socklen_t *addrlen)
{
	struct pollfd pfd;
	struct sofrs *nrs;

	if (rs->state != rs_listening)
		return sofcm_err(EINVAL);
	pfd.fd = rs->accept_queue[0];
	pfd.events = POLLIN;
	for (;;) {
		if (atomic_load(&rs->closing))
			return sofcm_err(EBADF);
		if (poll(&pfd, 1, rs->fs_flags & O_NONBLOCK ? 0 : 500) > 0 &&
		    recv(rs->accept_queue[0], &nrs, sizeof(nrs), MSG_DONTWAIT) == sizeof(nrs))
			break;
		if (rs->fs_flags & O_NONBLOCK)
			return sofcm_err(EAGAIN);
	}
	/* Its number: a new fd, above the one the program's accept (or
	 * librspreload's, which took its descriptor just before) has: the
	 * channel's fd was opened by the accept thread earlier, below it, and
	 * librspreload's select maps numbers back in increasing order. */
	nrs->index_fd = fcntl(nrs->cm_id->channel->fd, F_DUPFD_CLOEXEC, 0);
	if (nrs->index_fd < 0 || sofrs_insert(nrs, nrs->index_fd)) {
		sofrs_free(nrs);
		return -1;
	}
	if (addr && addrlen)
		sofrs_copy_addr(addr, rdma_get_peer_addr(nrs->cm_id), addrlen);
	return nrs->index;
}

SOFCM_EXPORT int raccept(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	struct sofrs *rs = sofrs_get(socket);
	int ret;

	if (!rs)
		return sofcm_err(EBADF);
	ret = rs->type == SOCK_STREAM ? rs_accept(rs, addr, addrlen) : sofcm_err(EOPNOTSUPP);
	sofrs_put(rs);
	return ret;
}
