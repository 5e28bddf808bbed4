/*
 * rsockets: the datagram service thread (rdma-core's udp_svc), the
 * process's one: it polls the kernel UDP socket of every datagram rsocket
 * (rs_dgram.c) and answers what comes there (rsock.h: the protocol). An
 * RS_OP_DATA datagram comes from a peer that has no address handle for
 * us: it gets an RS_OP_CTRL header with our QPN back, and the datagram is
 * forwarded to our own QP, where the program reads it; from either op the
 * sender's QPN is learnt and its address resolved by the RDMA CM into an
 * address handle, so the next datagrams go by UD.
 *
 * It works on one rsocket at a time under svc_lock, which rclose takes to
 * take the socket out (sofrs_svc_remove): after that the thread does not
 * touch it. Lock order: svc_lock, then the rsocket's locks.
 */
#include "rsock.h"

#include <endian.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void svc_process(struct sofrs *rs);

/* ---- the service thread ---------------------------------------------------------- */

static pthread_mutex_t svc_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sofrs **svc_rs;
static int svc_cnt, svc_cap;
static int svc_wake[2] = { -1, -1 };
static bool svc_running;

static void *svc_run(void *arg)
{
	struct pollfd *pfd = NULL;
	struct sofrs **seen = NULL;
	int cap = 0;
	char c[64];

	(void)arg;
	sofrs_internal = 1; /* its QPs' sockets are the transport's */
	for (;;) {
		int n;

		pthread_mutex_lock(&svc_lock);
		if (svc_cnt + 1 > cap) {
			cap = svc_cap + 1;
			pfd = realloc(pfd, sizeof(*pfd) * (size_t)cap);
			seen = realloc(seen, sizeof(*seen) * (size_t)cap);
			if (!pfd || !seen)
				abort();
		}
		n = svc_cnt + 1;
		pfd[0].fd = svc_wake[0];
		pfd[0].events = POLLIN;
		for (int i = 1; i < n; i++) {
			seen[i] = svc_rs[i - 1];
			pfd[i].fd = seen[i]->udp_sock;
			pfd[i].events = POLLIN;
		}
		pthread_mutex_unlock(&svc_lock);
		if (poll(pfd, (nfds_t)n, -1) <= 0)
			continue;
		if (pfd[0].revents)
			while (read(svc_wake[0], c, sizeof(c)) == (ssize_t)sizeof(c))
				;
		pthread_mutex_lock(&svc_lock);
		for (int i = 1; i < n; i++) {
			if (!(pfd[i].revents & POLLIN))
				continue;
			/* still served: rclose takes it out under svc_lock */
			for (int j = 0; j < svc_cnt; j++)
				if (svc_rs[j] == seen[i] && seen[i]->udp_sock == pfd[i].fd) {
					svc_process(seen[i]);
					break;
				}
		}
		pthread_mutex_unlock(&svc_lock);
	}
	return NULL;
}

static void svc_atfork_child(void)
{
	/* the thread is the parent's: a child starts its own when needed */
	pthread_mutex_init(&svc_lock, NULL);
	svc_running = false;
	svc_cnt = 0;
}

static void svc_kick(void)
{
	if (svc_wake[1] >= 0 && write(svc_wake[1], "", 1) < 0) {
		/* full: the thread has a wake-up to read already */
	}
}

int sofrs_svc_add(struct sofrs *rs)
{
	int ret = 0;

	pthread_mutex_lock(&svc_lock);
	if (!svc_running) {
		pthread_attr_t attr;
		pthread_t t;

		if (svc_wake[0] < 0) {
			if (pipe2(svc_wake, O_CLOEXEC | O_NONBLOCK)) {
				ret = -1;
				goto out;
			}
			pthread_atfork(NULL, NULL, svc_atfork_child);
		}
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		ret = pthread_create(&t, &attr, svc_run, NULL);
		pthread_attr_destroy(&attr);
		if (ret) {
			ret = sofcm_err(ret);
			goto out;
		}
		svc_running = true;
	}
	if (svc_cnt == svc_cap) {
		int cap = svc_cap ? svc_cap * 2 : 16;
		struct sofrs **a = realloc(svc_rs, sizeof(*a) * (size_t)cap);

		if (!a) {
			ret = sofcm_err(ENOMEM);
			goto out;
		}
		svc_rs = a;
		svc_cap = cap;
	}
	svc_rs[svc_cnt++] = rs;
	rs->in_svc = true;
	svc_kick();
out:
	pthread_mutex_unlock(&svc_lock);
	return ret;
}

void sofrs_svc_remove(struct sofrs *rs)
{
	pthread_mutex_lock(&svc_lock);
	for (int i = 0; i < svc_cnt; i++)
		if (svc_rs[i] == rs) {
			svc_rs[i] = svc_rs[--svc_cnt];
			break;
		}
	rs->in_svc = false;
	svc_kick();
	pthread_mutex_unlock(&svc_lock);
}

/* ---- the service thread's work on one rsocket --------------------------------------- */

/* The peer's address handle: its address resolved by the RDMA CM from
 * the local address of dest's QP (what rdma-core's udp_svc_create_ah
 * does), its QPN from the header. */
static void svc_create_ah(struct sofrs *rs, struct sofrs_dsdest *dest, uint32_t qpn)
{
	struct rdma_cm_id *qid = dest->qp->cm_id, *id;
	const struct ibv_sa_path_rec *p;
	union sofrs_addr src;
	struct ibv_ah *ah;

	if (rdma_create_id(NULL, &id, NULL, RDMA_PS_UDP))
		return;
	sofrs_ds_set_addr(&src, rdma_get_local_addr(qid));
	src.sin.sin_port = 0;
	if (rdma_resolve_addr(id, &src.sa, &dest->addr.sa, RS_DS_RESOLVE_MS) ||
	    rdma_resolve_route(id, RS_DS_RESOLVE_MS) || !id->route.num_paths)
		goto out;
	p = id->route.path_rec;
	ah = sofrs_ds_make_ah(dest->qp, &p->sgid, &p->dgid, be16toh(p->dlid), p->hop_limit,
			p->traffic_class, be32toh(p->flow_label));
	if (!ah)
		goto out;
	pthread_mutex_lock(&rs->slock);
	if (dest->ah)
		ibv_destroy_ah(dest->ah);
	dest->ah = ah;
	dest->qpn = qpn;
	pthread_mutex_unlock(&rs->slock);
out:
	rdma_destroy_id(id);
}

static bool svc_valid_hdr(const struct rs_ds_udp_header *h, const union sofrs_addr *from)
{
	return be32toh(h->tag) == RS_DS_UDP_TAG &&
	       ((h->version == 4 && from->sa.sa_family == AF_INET &&
		 h->length == RS_DS_UDP_IPV4_HDR_LEN) ||
		(h->version == 6 && from->sa.sa_family == AF_INET6 &&
		 h->length == RS_DS_UDP_IPV6_HDR_LEN)) &&
	       (h->op == RS_OP_DATA || h->op == RS_OP_CTRL);
}

/* What waits on the UDP socket (up to 64 datagrams), in order: the
 * sender's address handle made first when it is new (resolving takes a
 * while), then a DATA datagram forwarded to our own QP, and only then our
 * QPN sent back: the sender goes on by UD once it has that, and what it
 * sends so comes after what it sent by UDP (rdma-core answers first and
 * forwards after resolving: nc -u between hosts saw lines reordered),
 * and our program's answers to it go by UD from the first. */
static void svc_process(struct sofrs *rs)
{
	static uint8_t buf[RS_SNDLOWAT + RS_DS_UDP_IPV6_HDR_LEN];
	const struct rs_ds_udp_header *h = (const void *)buf;

	for (int k = 0; k < 64; k++) {
		struct sofrs_dsdest *dest;
		struct rs_ds_header hdr;
		union sofrs_addr from;
		socklen_t alen = sizeof(from);
		struct iovec iov;
		uint32_t qpn;
		ssize_t n;

		n = recvfrom(rs->udp_sock, buf, sizeof(buf), MSG_DONTWAIT, &from.sa, &alen);
		if (n < 0)
			break;
		if (n < RS_DS_UDP_IPV4_HDR_LEN || !svc_valid_hdr(h, &from) || n < h->length)
			continue;
		qpn = be32toh(h->qpn) & 0xFFFFFF;
		if (sofrs_ds_get_dest(rs, &from.sa, &dest))
			continue;
		if (!dest->ah || dest->qpn != qpn)
			svc_create_ah(rs, dest, qpn);
		if (h->op != RS_OP_DATA)
			continue;
		pthread_mutex_lock(&rs->slock);
		if ((size_t)(n - h->length) <= dest->qp->max_data && (rs->state & rs_writable)) {
			sofrs_ds_format_hdr(&hdr, &from);
			iov.iov_base = buf + h->length;
			iov.iov_len = (size_t)(n - h->length);
			sofrs_ds_post_slot(rs, &dest->qp->dest, &hdr, &iov, 1, iov.iov_len, true);
		}
		sofrs_ds_send_udp(rs, dest, NULL, 0, MSG_DONTWAIT, RS_OP_CTRL);
		pthread_mutex_unlock(&rs->slock);
	}
}
