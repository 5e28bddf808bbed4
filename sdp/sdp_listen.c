/*
 * SDP listeners (IBTA Annex A4): an RDMA CM listening id on the port's
 * service ID, and for `both` the kernel's TCP listener beside it; a thread
 * per listener answers each CONNECT_REQUEST whose Hello is valid with a
 * HelloAck, starts the connection's pump (sdp_conn.c) and hands the
 * connection to the program's AF_UNIX listener (sdp_preload.c's accept
 * takes it by the connecting socket's name, a struct sdp_connector).
 */
#include "sdp_qpc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

struct sdp_listener {
	atomic_int ref;
	struct rdma_cm_id *id;
	struct rdma_event_channel *ch;
	int tcp_fd;		/* `both`: the kernel listener, else -1 */
	int wake[2];		/* closing: the thread's pipe */
	struct sockaddr_in6 bound; /* the address the program listens on */
	struct sockaddr_un name; /* the program's AF_UNIX listener */
	socklen_t name_len;
	struct sdp_pending *pending; /* under sdp_fd_lock */
	unsigned long next_id;
	pthread_t thread;
	pid_t pid;		/* the process whose thread and CM id these are */
	int v6only;		/* IPV6_V6ONLY: no IPv4 peers */
};

void sdp_listener_get(struct sdp_listener *l) { atomic_fetch_add(&l->ref, 1); }

/* Connect a socket to the program's listener, its name telling accept
 * (which may run in a forked child, without our memory) what it is: a
 * struct sdp_connector (sdp.h) with KIND
 * `s` an SDP connection (P, put on the pending list first so accept finds
 * it in this process) or `t` a kernel TCP one (its descriptor follows in
 * the stream, SCM_RIGHTS). */
static int hand_over(struct sdp_listener *l, struct sdp_pending *p, char kind,
		     const struct sockaddr_in6 *peer, const struct sockaddr_in6 *local, int *fd_out)
{
	struct sockaddr_un me = { .sun_family = AF_UNIX };
	struct sdp_connector c = { .magic = SDP_CONNECTOR_MAGIC, .pid = getpid(),
				   .l = (uint64_t)(uintptr_t)l, .kind = kind,
				   .peer_port = peer->sin6_port, .local_port = local->sin6_port };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sdp_pending **pp;
	unsigned long id;

	if (fd < 0)
		return -errno;
	pthread_mutex_lock(&sdp_fd_lock);
	id = ++l->next_id;
	if (p) {
		p->id = id;
		p->next = l->pending;
		l->pending = p;
	}
	pthread_mutex_unlock(&sdp_fd_lock);
	c.id = id;
	memcpy(c.peer, &peer->sin6_addr, 16);
	memcpy(c.local, &local->sin6_addr, 16);
	memcpy(me.sun_path + 1, &c, sizeof(c));
	if (bind(fd, (struct sockaddr *)&me,
		 (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + sizeof(c))) ||
	    sdp_real.connect(fd, (struct sockaddr *)&l->name, l->name_len)) {
		pthread_mutex_lock(&sdp_fd_lock);
		for (pp = &l->pending; p && *pp; pp = &(*pp)->next)
			if (*pp == p) {
				*pp = p->next;
				break;
			}
		pthread_mutex_unlock(&sdp_fd_lock);
		sdp_real.close(fd);
		return -ECONNABORTED;
	}
	*fd_out = fd;
	return 0;
}

struct sdp_pending *sdp_listener_take(struct sdp_listener *l, unsigned long id)
{
	struct sdp_pending **pp, *p = NULL;

	pthread_mutex_lock(&sdp_fd_lock);
	for (pp = &l->pending; *pp; pp = &(*pp)->next)
		if ((*pp)->id == id) {
			p = *pp;
			*pp = p->next;
			break;
		}
	pthread_mutex_unlock(&sdp_fd_lock);
	return p;
}

/* A CONNECT_REQUEST: check the Hello, answer with a HelloAck, start the
 * connection's pump and hand it to the program. */
static void accept_sdp(struct sdp_listener *l, struct rdma_cm_event *ev)
{
	struct rdma_cm_id *id = ev->id;
	struct rdma_conn_param param;
	struct sdp_pending *p;
	struct sdp_hah hah;
	struct sdp_qpc *q = sdp_qpc_new();
	struct sockaddr_in6 peer, local;
	uint8_t sip[16], dip[16], ipv = 0;
	uint16_t sport = 0;
	int ret = -ENOMEM;

	if (q && sdp_hello_parse(&q->flow, ev->param.conn.private_data,
				 ev->param.conn.private_data_len, sip, &sport, dip, &ipv)) {
		sdp_log(SDP_LOG_WARN, "SDP connection request without a valid Hello: rejected");
		ret = -EPROTO;
	} else if (q && l->v6only && ipv == SDP_IPV4) {
		sdp_log(SDP_LOG_SUMMARY, "SDP connection request of IPv4 to an IPv6-only listener: "
					 "rejected");
		ret = -ECONNREFUSED;
	} else if (q) {
		ret = 0;
	}
	rdma_ack_cm_event(ev);
	if (ret) {
		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
		if (q)
			sdp_qpc_free(q);
		return;
	}
	q->id = id;
	q->ch = rdma_create_event_channel();
	p = calloc(1, sizeof(*p));
	if (!p || !q->ch || sdp_real.fcntl(q->ch->fd, F_SETFL, O_NONBLOCK) ||
	    rdma_migrate_id(id, q->ch) || sdp_qpc_resources(q)) {
		rdma_reject(id, NULL, 0);
		goto err;
	}
	sdp_hello_ack_fill(&q->flow, &hah, SDP_BUFSZ, ipv);
	sdp_conn_param(&param, &hah, sizeof(hah));
	if (rdma_accept(id, &param))
		goto err;
	/* the address the peer connected to: the Hello's, else ours */
	local = sdp_addr_of(dip, l->bound.sin6_port);
	if (sdp_addr_any(&local)) {
		local = sdp_addr_any(&l->bound) ? sdp_id_src(id) : l->bound;
		local.sin6_port = l->bound.sin6_port;
	}
	peer = sdp_addr_of(sip, htons(sport));
	sdp_qpc_addrs(q, &local, &peer);
	p->conn = &q->pub;
	p->peer = q->pub.peer;
	atomic_fetch_add(&q->pub.ref, 1); /* the pending record's */
	if (hand_over(l, p, 's', &q->pub.peer, &q->pub.local, &q->ufd)) {
		atomic_fetch_sub(&q->pub.ref, 1);
		goto err;
	}
	if (sdp_pump_start(q) == 0)
		return;
	/* the record stays: accept gets a connection that ends at once */
	atomic_store(&q->pub.error, ECONNABORTED);
	return;
err:
	free(p);
	sdp_qpc_free(q);
}

/* `both`: a kernel TCP connection goes to the program through the
 * connecting socket, as a descriptor (the accepting process may be a
 * child forked after listen); the listener keeps nothing of it. */
static void accept_tcp(struct sdp_listener *l)
{
	struct sockaddr_storage ss;
	struct sockaddr_in6 peer;
	socklen_t len;
	int fd, ufd;

	for (;;) {
		/* the kernel listener is blocking (it shares its file with what
		 * the program had): accept only what poll shows is there */
		struct pollfd pf = { .fd = l->tcp_fd, .events = POLLIN };

		if (sdp_real.poll(&pf, 1, 0) != 1 || !(pf.revents & POLLIN))
			return;
		len = sizeof(ss);
		fd = sdp_real.accept4(l->tcp_fd, (struct sockaddr *)&ss, &len, 0);
		if (fd < 0)
			return;
		if (sdp_addr_in((struct sockaddr *)&ss, len, &peer))
			memset(&peer, 0, sizeof(peer));
		if (!hand_over(l, NULL, 't', &peer, &l->bound, &ufd)) {
			char c = 't', cbuf[CMSG_SPACE(sizeof(int))];
			struct iovec iov = { .iov_base = &c, .iov_len = 1 };
			struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
					    .msg_controllen = sizeof(cbuf) };
			struct cmsghdr *cm = CMSG_FIRSTHDR(&m);

			cm->cmsg_level = SOL_SOCKET;
			cm->cmsg_type = SCM_RIGHTS;
			cm->cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(cm), &fd, sizeof(int));
			if (sdp_real.sendmsg(ufd, &m, MSG_NOSIGNAL) != 1)
				sdp_log(SDP_LOG_WARN, "a TCP connection could not be handed over");
			sdp_real.close(ufd);
		}
		sdp_real.close(fd);
	}
}

static void *listen_thread(void *arg)
{
	struct sdp_listener *l = arg;
	struct rdma_cm_event *ev;
	struct pollfd p[3];

	for (;;) {
		/* every event (non-blocking; see pump()) */
		while (!rdma_get_cm_event(l->ch, &ev)) {
			if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
				accept_sdp(l, ev);
			else
				rdma_ack_cm_event(ev);
		}
		p[0] = (struct pollfd){ .fd = l->ch->fd, .events = POLLIN };
		p[1] = (struct pollfd){ .fd = l->wake[0], .events = POLLIN };
		p[2] = (struct pollfd){ .fd = l->tcp_fd, .events = POLLIN };
		if (sdp_real.poll(p, l->tcp_fd >= 0 ? 3 : 2, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		if (l->tcp_fd >= 0 && (p[2].revents & POLLIN))
			accept_tcp(l);
	}
	return NULL;
}

int sdp_listen(const struct sockaddr_in6 *sin, int backlog, int tcp_fd, int v6only,
	       const char *ufd_name, struct sdp_listener **out)
{
	struct sockaddr_ib src;
	struct sdp_listener *l = calloc(1, sizeof(*l));
	struct rdma_addrinfo rai;
	size_t n = strlen(ufd_name);
	int ret;

	if (!l)
		return -ENOMEM;
	atomic_init(&l->ref, 1);
	l->pid = getpid();
	l->v6only = v6only;
	l->tcp_fd = tcp_fd;
	l->wake[0] = l->wake[1] = -1;
	l->name.sun_family = AF_UNIX;
	memcpy(l->name.sun_path + 1, ufd_name, n);
	l->name_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
	l->bound = *sin;
	sdp_sib(&src, sin);
	rai = sdp_rai(&src, NULL, 1);
	if (rdma_create_ep(&l->id, &rai, NULL, NULL) || rdma_listen(l->id, backlog)) {
		ret = -errno;
		goto err;
	}
	l->ch = rdma_create_event_channel();
	if (!l->ch || sdp_real.fcntl(l->ch->fd, F_SETFL, O_NONBLOCK) ||
	    rdma_migrate_id(l->id, l->ch) || pipe2(l->wake, O_CLOEXEC)) {
		ret = -EIO;
		goto err;
	}
	ret = -pthread_create(&l->thread, NULL, listen_thread, l);
	if (ret)
		goto err;
	*out = l;
	return 0;
err:
	if (l->id)
		rdma_destroy_id(l->id);
	if (l->ch)
		rdma_destroy_event_channel(l->ch);
	if (l->wake[0] >= 0) {
		sdp_real.close(l->wake[0]);
		sdp_real.close(l->wake[1]);
	}
	free(l);
	return ret;
}

void sdp_pending_free(struct sdp_pending *p)
{
	if (p->conn)
		sdp_conn_put(p->conn);
	free(p);
}

/* The last descriptor of the listener closed: stop its thread, end the
 * connections nobody accepted. In a child forked after listen (sshd's
 * connection child closes the listeners it inherited) the thread, the CM
 * id and the pending connections are the parent's: only its copies of the
 * descriptors are closed (a wake written there would stop the parent's
 * thread, a destroyed id its listener). */
void sdp_listener_put(struct sdp_listener *l)
{
	struct sdp_pending *p;

	if (atomic_fetch_sub(&l->ref, 1) != 1)
		return;
	if (l->pid != getpid()) {
		if (l->tcp_fd >= 0)
			sdp_real.close(l->tcp_fd);
		sdp_real.close(l->wake[0]);
		sdp_real.close(l->wake[1]);
		free(l);
		return;
	}
	if (sdp_real.write(l->wake[1], "x", 1) == 1)
		pthread_join(l->thread, NULL);
	rdma_destroy_id(l->id);
	rdma_destroy_event_channel(l->ch);
	if (l->tcp_fd >= 0)
		sdp_real.close(l->tcp_fd);
	sdp_real.close(l->wake[0]);
	sdp_real.close(l->wake[1]);
	while ((p = l->pending)) {
		l->pending = p->next;
		sdp_pending_free(p);
	}
	free(l);
}
