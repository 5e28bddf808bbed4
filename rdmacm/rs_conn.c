/*
 * rsockets: connecting a stream rsocket (rconnect) and the keepalive
 * service, as rdma-core's.
 *
 * A blocking rconnect resolves, creates the QP and connects before it
 * returns. A non-blocking one (O_NONBLOCK) returns EINPROGRESS at once and
 * connects on a thread of its own, as a non-blocking TCP connect goes on
 * in the kernel: meanwhile the socket is rs_opening (sends and receives
 * EAGAIN, rpoll waits on an eventfd the thread signals), then connected
 * (rpoll: POLLOUT) or rs_connect_error (POLLOUT | POLLERR, SO_ERROR the
 * reason, read once). rclose waits for the thread (it holds the socket
 * from sofrs_get to sofrs_put).
 *
 * Keepalive (SO_KEEPALIVE, TCP_KEEPIDLE seconds, by default the kernel's
 * tcp_keepalive_time): the process's keepalive thread (rdma-core's
 * tcp_svc) posts a zero-length RDMA WRITE WITH IMMEDIATE of
 * RS_CTRL_KEEPALIVE on each such connected socket when its time comes; the
 * peer ignores it. A peer that vanished does not acknowledge it: the RC
 * QP's retries run out and the socket goes to error (ETIMEDOUT), which
 * ends whatever waits in it.
 */
#include "rsock.h"

#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

static int rs_do_connect(struct sofrs *rs)
{
	struct rdma_cm_id *id = rs->cm_id;
	struct rdma_conn_param param;
	struct rs_conn_data creq, cresp;

	if (rdma_resolve_addr(id, NULL, &id->route.addr.dst_addr, 2000))
		return -1;
	if (rs->route) {
		if (rdma_set_option(id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, rs->route,
				    (socklen_t)rs->route_len) ||
		    sofcm_complete(sofcm_id(id)))
			return -1;
	} else if (rdma_resolve_route(id, 2000)) {
		return -1;
	}
	if (sofrs_create_ep(rs))
		return -1;
	sofrs_format_conn_data(rs, &creq);
	memset(&param, 0, sizeof(param));
	param.private_data = &creq;
	param.private_data_len = sizeof(creq);
	param.flow_control = 1;
	param.retry_count = 7;
	param.rnr_retry_count = 7;
	if (rdma_connect(id, &param))
		return -1;
	if (!id->event || id->event->param.conn.private_data_len < sizeof(cresp))
		return sofcm_err(EPROTO);
	memcpy(&cresp, id->event->param.conn.private_data, sizeof(cresp));
	if (cresp.version != RS_CONN_VERSION)
		return sofcm_err(ENOTSUP);
	sofrs_save_conn_data(rs, &cresp);
	sofrs_connected_now(rs);
	return 0;
}

/* The connect of a non-blocking rconnect, on its own thread. */
static void *rs_connect_thread(void *arg)
{
	struct sofrs *rs = arg;
	uint64_t one = 1;
	int ret;

	sofrs_internal = 1; /* the QP's sockets are the transport's */
	pthread_mutex_lock(&rs->slock);
	ret = rs_do_connect(rs);
	pthread_mutex_lock(&rs->cq_lock);
	if (ret) {
		rs->err = errno;
		rs->state = rs_connect_error;
	}
	pthread_mutex_unlock(&rs->cq_lock);
	pthread_mutex_unlock(&rs->slock);
	if (write(rs->conn_efd, &one, sizeof(one)) < 0) {
		/* an eventfd's counter does not fill */
	}
	atomic_fetch_sub(&rs->users, 1);
	return NULL;
}

static int rs_connect(struct sofrs *rs, const struct sockaddr *addr, socklen_t addrlen)
{
	pthread_attr_t attr;
	pthread_t t;
	int ret;

	if (!addr || addrlen < sizeof(struct sockaddr_in) ||
	    addrlen > sizeof(rs->cm_id->route.addr.dst_storage))
		return sofcm_err(EINVAL);
	if (rs->state & rs_connected)
		return sofcm_err(EISCONN);
	if (rs->state == rs_listening)
		return sofcm_err(EINVAL);
	if (rs->state & (rs_opening | rs_connect_error | rs_disconnected | rs_error))
		return sofcm_err(rs->state & rs_opening ? EALREADY : ECONNABORTED);
	memcpy(&rs->cm_id->route.addr.dst_addr, addr, addrlen);
	if (rs->fs_flags & O_NONBLOCK) {
		if (rs->conn_efd < 0)
			rs->conn_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (rs->conn_efd < 0)
			return -1;
		rs->state = rs_opening;
		/* the thread's hold on the socket: rclose waits for it */
		atomic_fetch_add(&rs->users, 1);
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		ret = pthread_create(&t, &attr, rs_connect_thread, rs);
		pthread_attr_destroy(&attr);
		if (ret) {
			atomic_fetch_sub(&rs->users, 1);
			rs->state = rs_init;
			return sofcm_err(ret);
		}
		return sofcm_err(EINPROGRESS);
	}
	pthread_mutex_lock(&rs->slock);
	rs->state = rs_opening;
	ret = rs_do_connect(rs);
	if (ret) {
		rs->state = rs_connect_error;
		rs->err = errno;
	}
	pthread_mutex_unlock(&rs->slock);
	return ret;
}

SOFCM_EXPORT int rconnect(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	struct sofrs *rs = sofrs_get(socket);
	int ret;

	if (!rs)
		return sofcm_err(EBADF);
	if (rs->type == SOCK_DGRAM)
		ret = sofrs_ds_connect(rs, addr, addrlen);
	else
		ret = rs_connect(rs, addr, addrlen);
	sofrs_put(rs);
	return ret;
}

/* ---- keepalive ---------------------------------------------------------------- */

static pthread_mutex_t ka_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ka_cond = PTHREAD_COND_INITIALIZER;
static struct sofrs **ka_rs;
static int ka_cnt, ka_cap;
static bool ka_running;

static uint64_t ka_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec;
}

/* The kernel's default idle time (rdma-core reads it too). */
unsigned int sofrs_keepalive_default(void)
{
	unsigned int v = 7200;
	FILE *f = fopen("/proc/sys/net/ipv4/tcp_keepalive_time", "r");

	if (f) {
		if (fscanf(f, "%u", &v) != 1 || !v)
			v = 7200;
		fclose(f);
	}
	return v;
}

/* A zero-length RDMA WRITE WITH IMMEDIATE: nothing for the peer to read,
 * but an RC request it must acknowledge. */
static void ka_send(struct sofrs *rs)
{
	pthread_mutex_lock(&rs->cq_lock);
	if ((rs->state & rs_connected) && sofrs_ctrl_avail(rs)) {
		rs->ctrl_seqno++;
		if (sofrs_post_msg(rs, rs_msg_set(RS_OP_CTRL, RS_CTRL_KEEPALIVE)))
			rs->ctrl_seqno--;
	}
	pthread_mutex_unlock(&rs->cq_lock);
}

static void *ka_run(void *arg)
{
	(void)arg;
	sofrs_internal = 1;
	pthread_mutex_lock(&ka_lock);
	for (;;) {
		uint64_t now = ka_now(), next = now + 3600;
		struct timespec ts;

		for (int i = 0; i < ka_cnt; i++) {
			struct sofrs *rs = ka_rs[i];

			if (rs->ka_next <= now) {
				ka_send(rs);
				rs->ka_next = now + rs->keepalive_time;
			}
			if (rs->ka_next < next)
				next = rs->ka_next;
		}
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += (time_t)(next - now);
		pthread_cond_timedwait(&ka_cond, &ka_lock, &ts);
	}
	return NULL;
}

static void ka_atfork_child(void)
{
	pthread_mutex_init(&ka_lock, NULL);
	pthread_cond_init(&ka_cond, NULL);
	ka_running = false;
	ka_cnt = 0;
}

/* rs enters the service (its first keepalive after keepalive_time), or
 * leaves it; after it left, the thread does not touch it. */
int sofrs_keepalive(struct sofrs *rs, bool on)
{
	int ret = 0;

	pthread_mutex_lock(&ka_lock);
	for (int i = 0; i < ka_cnt; i++)
		if (ka_rs[i] == rs) {
			ka_rs[i] = ka_rs[--ka_cnt];
			break;
		}
	if (on) {
		if (!ka_running) {
			pthread_attr_t attr;
			pthread_t t;

			pthread_condattr_t ca;

			pthread_condattr_init(&ca);
			pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
			pthread_cond_init(&ka_cond, &ca);
			pthread_condattr_destroy(&ca);
			pthread_attr_init(&attr);
			pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
			ret = pthread_create(&t, &attr, ka_run, NULL);
			pthread_attr_destroy(&attr);
			if (ret) {
				ret = sofcm_err(ret);
				goto out;
			}
			pthread_atfork(NULL, NULL, ka_atfork_child);
			ka_running = true;
		}
		if (ka_cnt == ka_cap) {
			int cap = ka_cap ? ka_cap * 2 : 16;
			struct sofrs **a = realloc(ka_rs, sizeof(*a) * (size_t)cap);

			if (!a) {
				ret = sofcm_err(ENOMEM);
				goto out;
			}
			ka_rs = a;
			ka_cap = cap;
		}
		rs->ka_next = ka_now() + rs->keepalive_time;
		ka_rs[ka_cnt++] = rs;
	}
	rs->ka_on = on;
	pthread_cond_signal(&ka_cond);
out:
	pthread_mutex_unlock(&ka_lock);
	return ret;
}
