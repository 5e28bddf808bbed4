/*
 * rsockets: rpoll and rselect over rsockets and ordinary descriptors
 * together. An rsocket is ready by its state (data queued, room to send,
 * the peer gone); to sleep, rpoll arms each rsocket's CQ and polls the
 * fds that will wake it (a connected rsocket's CQ channel and CM channel,
 * a listener's CM channel, a datagram rsocket's epoll set of CQ
 * channels) with the program's own descriptors, then reads
 * what woke it and checks the states again. The sleep is cut every
 * 500 ms (rdma-core's wake_up_interval) so that a state another thread
 * changed without an event is seen. Unlike rdma-core, an ordinary
 * descriptor's POLLHUP comes with POLLIN when that was asked (below).
 */
#include "rsock.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int sofrs_wait_fds(struct sofrs *rs, struct pollfd *pfd)
{
	if (rs->type == SOCK_DGRAM) {
		/* the epoll set of its QPs' CQ channels */
		pfd[0].fd = rs->epfd;
		pfd[0].events = POLLIN;
		pfd[0].revents = 0;
		pfd[1].fd = -1;
		pfd[1].events = 0;
		pfd[1].revents = 0;
		return 2;
	}
	pfd[0].fd = -1;
	if ((rs->state & (rs_connected | rs_disconnected | rs_error)) &&
	    rs->cm_id->recv_cq_channel)
		pfd[0].fd = rs->cm_id->recv_cq_channel->fd;
	pfd[0].events = POLLIN;
	pfd[0].revents = 0;
	/* a listener's channel is the accept thread's: its queue instead;
	 * a non-blocking rconnect's thread signals its end on conn_efd */
	pfd[1].fd = rs->state == rs_listening ? rs->accept_queue[0]
		    : rs->state == rs_opening ? rs->conn_efd
					      : rs->cm_id->channel->fd;
	pfd[1].events = POLLIN;
	pfd[1].revents = 0;
	return 2;
}

/* What an rsocket reports now; arm its CQ first when about to sleep. */
static short rs_poll_rs(struct sofrs *rs, short events, bool arm)
{
	struct pollfd pfd;
	short revents = 0;

	if (rs->type == SOCK_DGRAM)
		return sofrs_ds_poll(rs, events, arm);
	if (rs->state & (rs_connected | rs_disconnected | rs_error)) {
		if (arm && rs->cm_id->recv_cq) {
			pthread_mutex_lock(&rs->cq_lock);
			if (!rs->cq_armed) {
				ibv_req_notify_cq(rs->cm_id->recv_cq, 0);
				rs->cq_armed = true;
			}
			pthread_mutex_unlock(&rs->cq_lock);
		}
		if (rs->cm_id->recv_cq)
			sofrs_process_cq(rs, true, sofrs_any);
		if (rs->state & rs_connected)
			sofrs_cm_check(rs); /* the peer's DREQ, if rpoll never sleeps */
		if ((events & POLLIN) && sofrs_conn_have_rdata(rs))
			revents |= POLLIN;
		if ((events & POLLOUT) && (rs->state & rs_writable) && sofrs_can_send(rs))
			revents |= POLLOUT;
		/* the peer's end: a hang-up once what it sent is read (a
		 * reader that polls still gets the data before it) */
		if (rs->state & rs_error)
			revents |= POLLERR;
		else if (!(rs->state & rs_connected) && !sofrs_have_rdata(rs))
			revents |= POLLHUP;
		return revents;
	}
	if (rs->state == rs_listening) {
		pfd.fd = rs->accept_queue[0];
		pfd.events = POLLIN;
		if (poll(&pfd, 1, 0) > 0)
			revents = events & POLLIN;
		return revents;
	}
	if (rs->state == rs_connect_error)
		return (short)((events & (POLLIN | POLLOUT)) | POLLERR);
	return 0;
}

static uint64_t rs_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint64_t rs_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static int rs_poll_check(struct pollfd *fds, nfds_t nfds, bool arm)
{
	int cnt = 0;

	for (nfds_t i = 0; i < nfds; i++) {
		struct sofrs *rs = sofrs_get(fds[i].fd);

		if (rs) {
			fds[i].revents = rs_poll_rs(rs, fds[i].events, arm);
			sofrs_put(rs);
		} else if (fds[i].fd >= 0) {
			fds[i].revents = 0;
			if (poll(&fds[i], 1, 0) < 0)
				return -1;
			/* a hang-up reads as the end (0): readable, as
			 * select(2) says; librspreload's select maps only
			 * POLLIN to readable (nc's stdin at EOF, a pipe) */
			if ((fds[i].revents & POLLHUP) && (fds[i].events & POLLIN))
				fds[i].revents |= POLLIN;
		} else {
			fds[i].revents = 0;
		}
		if (fds[i].revents)
			cnt++;
	}
	return cnt;
}

/* Whether rpoll's spin yields the CPU: unless every rsocket polled is a
 * stream with its peer on another host (rs_data.c). */
static int rs_poll_yield(const struct pollfd *fds, nfds_t nfds)
{
	for (nfds_t i = 0; i < nfds; i++) {
		struct sofrs *rs = sofrs_get(fds[i].fd);
		bool local = rs && (rs->type != SOCK_STREAM || !rs->peer_remote);

		if (rs)
			sofrs_put(rs);
		if (local)
			return 1;
	}
	return 0;
}

SOFCM_EXPORT int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	uint64_t start = rs_now_ms(), start_us = rs_now_us();
	struct pollfd *rfds;
	int ret, yield = -1;

	/* poll for a while before sleeping, as a blocking call does (and,
	 * as it does, yielding the CPU only for a peer on this host:
	 * rs_data.c) */
	for (;;) {
		ret = rs_poll_check(fds, nfds, false);
		if (ret || !timeout)
			return ret;
		if (rs_now_us() - start_us > sofrs_poll_us)
			break;
		if (yield < 0)
			yield = rs_poll_yield(fds, nfds);
		if (yield)
			sched_yield();
	}
	/* two slots per entry: an rsocket's CQ channel and CM channel */
	rfds = malloc(sizeof(*rfds) * (nfds * 2 + 1));
	if (!rfds)
		return sofcm_err(ENOMEM);
	sofrs_internal++; /* the transport moved on below is ours */
	for (;;) {
		int left = -1, sleep;

		ret = rs_poll_check(fds, nfds, true);
		if (ret)
			break;
		for (nfds_t i = 0; i < nfds; i++) {
			struct sofrs *rs = sofrs_get(fds[i].fd);

			if (rs) {
				sofrs_wait_fds(rs, &rfds[2 * i]);
				sofrs_put(rs);
			} else {
				rfds[2 * i] = fds[i];
				rfds[2 * i].revents = 0;
				rfds[2 * i + 1].fd = -1;
				rfds[2 * i + 1].events = 0;
				rfds[2 * i + 1].revents = 0;
			}
		}
		if (timeout >= 0) {
			left = timeout - (int)(rs_now_ms() - start);
			if (left <= 0) {
				ret = 0;
				break;
			}
		}
		sleep = left < 0 || left > 500 ? 500 : left;
		sofv_engine_idle(); /* a QP whose transport runs here moves on */
		ret = poll(rfds, nfds * 2, sleep);
		if (ret < 0)
			break;
		for (nfds_t i = 0; i < nfds && ret > 0; i++) {
			struct sofrs *rs = sofrs_get(fds[i].fd);

			if (rs && (rfds[2 * i].revents || rfds[2 * i + 1].revents))
				sofrs_wait_done(rs, &rfds[2 * i], 2);
			if (rs)
				sofrs_put(rs);
		}
		ret = rs_poll_check(fds, nfds, false);
		if (ret)
			break;
	}
	sofrs_internal--;
	free(rfds);
	return ret;
}

SOFCM_EXPORT int rselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
			 struct timeval *timeout)
{
	struct pollfd *fds;
	int n = 0, ret, to;

	if (nfds < 0 || nfds > FD_SETSIZE)
		return sofcm_err(EINVAL);
	fds = calloc((size_t)nfds + 1, sizeof(*fds));
	if (!fds)
		return sofcm_err(ENOMEM);
	for (int fd = 0; fd < nfds; fd++) {
		short ev = 0;

		if (readfds && FD_ISSET(fd, readfds))
			ev |= POLLIN;
		if (writefds && FD_ISSET(fd, writefds))
			ev |= POLLOUT;
		if (exceptfds && FD_ISSET(fd, exceptfds))
			ev |= POLLPRI;
		if (!ev)
			continue;
		fds[n].fd = fd;
		fds[n++].events = ev;
	}
	to = timeout ? (int)(timeout->tv_sec * 1000 + timeout->tv_usec / 1000) : -1;
	ret = rpoll(fds, (nfds_t)n, to);
	if (ret < 0)
		goto out;
	if (readfds)
		FD_ZERO(readfds);
	if (writefds)
		FD_ZERO(writefds);
	if (exceptfds)
		FD_ZERO(exceptfds);
	ret = 0;
	for (int i = 0; i < n; i++) {
		short re = fds[i].revents;

		if (readfds && (fds[i].events & POLLIN) && (re & (POLLIN | POLLHUP | POLLERR))) {
			FD_SET(fds[i].fd, readfds);
			ret++;
		}
		if (writefds && (fds[i].events & POLLOUT) && (re & (POLLOUT | POLLERR))) {
			FD_SET(fds[i].fd, writefds);
			ret++;
		}
		if (exceptfds && (fds[i].events & POLLPRI) && (re & POLLPRI)) {
			FD_SET(fds[i].fd, exceptfds);
			ret++;
		}
	}
out:
	free(fds);
	return ret;
}
