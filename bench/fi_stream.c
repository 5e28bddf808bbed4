/*
 * bench/fi_stream.c — a libfabric message stream, the peer of ib_write_bw
 * and ib_send_bw in bandwidth: Debian's libfabric-bin has only fi_pingpong
 * (one message in flight), not fabtests' streaming programs (fi_rdm_bw).
 *
 * The client keeps WINDOW sends of SIZE bytes in flight on an RDM endpoint
 * until ITERS were sent; the server keeps WINDOW receives posted, checks
 * each message's length and its first and last 8 bytes (the message's
 * number, and the number again inverted), and when it has ITERS it says so
 * on the TCP connection both use to exchange endpoint names (as fi_pingpong
 * does). The client prints
 *
 *   fi_stream: size SIZE iters ITERS window WINDOW seconds S MiB/s BW
 *
 * timed from the completion of message 0, sent alone first (RDM providers
 * such as RxM connect on the first send: not bandwidth), to the server's
 * word that all arrived, over the ITERS - 1 messages after it; both
 * exit 0 then, 1 on any error (with a message).
 *
 * Usage: fi_stream -p PROV [-d DOMAIN] -B PORT -S SIZE -I ITERS [-W WINDOW]
 *        fi_stream -p PROV [-d DOMAIN] -P PORT -S SIZE -I ITERS [-W WINDOW] ADDR
 * (PROV as FI_PROVIDER names it, "udp;ofi_rxd" for RDM over UDP; WINDOW 16.)
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_WINDOW 256

static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_av *av;
static struct fid_cq *cq;
static struct fid_ep *ep;
static struct fid_mr *mr;
static void *desc;
static fi_addr_t peer;
static struct fi_context2 ctx[MAX_WINDOW];
static uint8_t *buf; /* WINDOW slots of SIZE bytes */
static size_t size;
static unsigned window = 16;

static void die(const char *what, int err)
{
	fprintf(stderr, "fi_stream: %s: %s\n", what, err < 0 ? fi_strerror(-err) : strerror(err));
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void full_io(int fd, void *p, size_t n, int out)
{
	uint8_t *b = p;

	while (n) {
		ssize_t r = out ? write(fd, b, n) : read(fd, b, n);

		if (r <= 0)
			die(out ? "oob write" : "oob read (the peer left)", r < 0 ? errno : EPIPE);
		b += r;
		n -= (size_t)r;
	}
}

/* the TCP connection the two sides exchange names and the last word on */
static int oob_connect(const char *addr, const char *port)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = addr ? 0 : AI_PASSIVE};
	struct addrinfo *ai;
	int fd, one = 1, e;

	e = getaddrinfo(addr, port, &hints, &ai);
	if (e) {
		fprintf(stderr, "fi_stream: %s:%s: %s\n", addr ? addr : "*", port, gai_strerror(e));
		exit(1);
	}
	fd = socket(ai->ai_family, SOCK_STREAM, 0);
	if (fd < 0)
		die("socket", errno);
	if (addr) {
		for (int tries = 0; connect(fd, ai->ai_addr, ai->ai_addrlen); tries++) {
			if (tries == 100)
				die("connect", errno);
			usleep(50000);
		}
	} else {
		int l;

		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 1))
			die("bind/listen", errno);
		l = fd;
		fd = accept(l, NULL, NULL);
		if (fd < 0)
			die("accept", errno);
		close(l);
	}
	freeaddrinfo(ai);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static void open_endpoint(const char *prov, const char *dom)
{
	struct fi_info *hints = fi_allocinfo(), *info;
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_MSG, .size = 4 * MAX_WINDOW};
	struct fi_av_attr av_attr = {.type = FI_AV_UNSPEC};
	int r;

	if (!hints)
		die("fi_allocinfo", ENOMEM);
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG;
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->domain_attr->mr_mode =
	    FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
	hints->fabric_attr->prov_name = strdup(prov);
	if (dom)
		hints->domain_attr->name = strdup(dom);
	r = fi_getinfo(FI_VERSION(1, 9), NULL, NULL, 0, hints, &info);
	if (r)
		die("fi_getinfo", r);
	if (size > info->ep_attr->max_msg_size) {
		fprintf(stderr, "fi_stream: %zu B is above %s's largest message (%zu B)\n", size,
			prov, info->ep_attr->max_msg_size);
		exit(1);
	}
	if ((r = fi_fabric(info->fabric_attr, &fabric, NULL)) ||
	    (r = fi_domain(fabric, info, &domain, NULL)) ||
	    (r = fi_cq_open(domain, &cq_attr, &cq, NULL)) ||
	    (r = fi_av_open(domain, &av_attr, &av, NULL)) ||
	    (r = fi_endpoint(domain, info, &ep, NULL)) ||
	    (r = fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV)) ||
	    (r = fi_ep_bind(ep, &av->fid, 0)))
		die("opening the endpoint", r);
	if (info->domain_attr->mr_mode & FI_MR_LOCAL) {
		r = fi_mr_reg(domain, buf, size * window, FI_SEND | FI_RECV, 0, 0, 0, &mr, NULL);
		if (r)
			die("fi_mr_reg", r);
		if (info->domain_attr->mr_mode & FI_MR_ENDPOINT) {
			if ((r = fi_mr_bind(mr, &ep->fid, 0)) || (r = fi_mr_enable(mr)))
				die("binding the memory region", r);
		}
		desc = fi_mr_desc(mr);
	}
	r = fi_enable(ep);
	if (r)
		die("fi_enable", r);
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

/* exchange names over the TCP connection, the peer's into the AV */
static void exchange(int fd)
{
	uint8_t name[256], theirs[256];
	size_t len = sizeof(name);
	uint32_t n, tn;
	int r = fi_getname(&ep->fid, name, &len);

	if (r)
		die("fi_getname", r);
	n = htonl((uint32_t)len);
	full_io(fd, &n, 4, 1);
	full_io(fd, name, len, 1);
	full_io(fd, &tn, 4, 0);
	tn = ntohl(tn);
	if (tn > sizeof(theirs))
		die("the peer's name", EINVAL);
	full_io(fd, theirs, tn, 0);
	if (fi_av_insert(av, theirs, 1, &peer, 0, NULL) != 1)
		die("fi_av_insert", EINVAL);
}

/* One completion into e, or none: the slot it was for, -1 for none. */
static int reap(struct fi_cq_msg_entry *e)
{
	ssize_t r = fi_cq_read(cq, e, 1);
	int slot;

	if (r == -FI_EAGAIN)
		return -1;
	if (r == -FI_EAVAIL) {
		struct fi_cq_err_entry err = {0};

		fi_cq_readerr(cq, &err, 0);
		fprintf(stderr, "fi_stream: completion error: %s (%s)\n", fi_strerror(err.err),
			fi_cq_strerror(cq, err.prov_errno, err.err_data, NULL, 0));
		exit(1);
	}
	if (r != 1)
		die("fi_cq_read", (int)r);
	slot = (int)((struct fi_context2 *)e->op_context - ctx);
	if (slot < 0 || (unsigned)slot >= window)
		die("a completion of nothing posted", EINVAL);
	return slot;
}

/* Post the receives of the slots in pend (n of them) while the provider
 * takes them; returns how many are left. */
static unsigned post_recvs(const unsigned *pend, unsigned n)
{
	while (n) {
		ssize_t r = fi_recv(ep, buf + pend[n - 1] * size, size, desc, FI_ADDR_UNSPEC,
				    &ctx[pend[n - 1]]);

		if (r == -FI_EAGAIN)
			break;
		if (r)
			die("fi_recv", (int)r);
		n--;
	}
	return n;
}

static void server(int fd, uint64_t iters)
{
	unsigned pend[MAX_WINDOW], npend = window;
	struct fi_cq_msg_entry e;
	uint64_t got = 0;
	uint8_t ok = 1;

	for (unsigned i = 0; i < window; i++)
		pend[i] = i;
	while ((npend = post_recvs(pend, npend)))
		if (reap(&e) >= 0) /* nothing is sent before the word below */
			die("a completion before any message", EINVAL);
	full_io(fd, &ok, 1, 1); /* receives are posted: go */
	while (got < iters) {
		int slot;
		uint64_t head, tail;

		npend = post_recvs(pend, npend);
		slot = reap(&e);
		if (slot < 0)
			continue;
		if (!(e.flags & FI_RECV))
			die("a completion for no receive", EINVAL);
		memcpy(&head, buf + slot * size, 8);
		memcpy(&tail, buf + slot * size + size - 8, 8);
		if (e.len != size || tail != ~head || head >= iters) {
			fprintf(stderr,
				"fi_stream: message %" PRIu64 ": %zu B, marks %" PRIx64 "/%" PRIx64
				"\n",
				got, e.len, head, tail);
			exit(1);
		}
		got++;
		if (got + window <= iters)
			pend[npend++] = (unsigned)slot;
	}
	full_io(fd, &ok, 1, 1); /* all arrived */
}

static void client(int fd, uint64_t iters)
{
	uint64_t sent = 0, done = 0, t0;
	unsigned free_slots[MAX_WINDOW], nfree = window;
	struct pollfd p = {.fd = fd, .events = POLLIN};
	struct fi_cq_msg_entry e;
	uint8_t ok;
	bool warm;
	double s;

	for (unsigned i = 0; i < window; i++)
		free_slots[i] = i;
	full_io(fd, &ok, 1, 0); /* the server's receives are posted */
	/* message 0 alone first: RDM providers (RxM) connect on the first
	 * send, and the time to connect is not bandwidth */
	warm = iters > 1;
	if (warm) {
		uint64_t head = 0, tail = ~head;
		ssize_t r;

		memcpy(buf, &head, 8);
		memcpy(buf + size - 8, &tail, 8);
		while ((r = fi_send(ep, buf, size, desc, peer, &ctx[0])) == -FI_EAGAIN)
			(void)reap(&e);
		if (r)
			die("fi_send", (int)r);
		while (reap(&e) < 0)
			;
		if (!(e.flags & FI_SEND))
			die("a completion for no send", EINVAL);
		sent = done = 1;
	}
	t0 = now_ns();
	while (done < iters) {
		int slot;

		while (nfree && sent < iters) {
			unsigned sl = free_slots[nfree - 1];
			uint64_t head = sent, tail = ~sent;
			ssize_t r;

			memcpy(buf + sl * size, &head, 8);
			memcpy(buf + sl * size + size - 8, &tail, 8);
			r = fi_send(ep, buf + sl * size, size, desc, peer, &ctx[sl]);
			if (r == -FI_EAGAIN)
				break;
			if (r)
				die("fi_send", (int)r);
			nfree--;
			sent++;
		}
		slot = reap(&e);
		if (slot >= 0) {
			if (!(e.flags & FI_SEND))
				die("a completion for no send", EINVAL);
			free_slots[nfree++] = (unsigned)slot;
			done++;
		}
	}
	/* keep the provider's progress going (acknowledgements) until the
	 * server has everything */
	while (poll(&p, 1, 0) == 0)
		if (reap(&e) >= 0)
			die("a completion after the last", EINVAL);
	full_io(fd, &ok, 1, 0);
	s = (double)(now_ns() - t0) / 1e9;
	printf("fi_stream: size %zu iters %" PRIu64 " window %u seconds %.6f MiB/s %.2f\n", size,
	       iters, window, s, (double)size * (double)(iters - warm) / s / 1048576.0);
}

int main(int argc, char **argv)
{
	const char *prov = NULL, *dom = NULL, *port = NULL;
	uint64_t iters = 0;
	int c, fd, srv = 0;

	while ((c = getopt(argc, argv, "p:d:B:P:S:I:W:")) != -1) {
		switch (c) {
		case 'p':
			prov = optarg;
			break;
		case 'd':
			dom = optarg;
			break;
		case 'B':
			srv = 1;
			port = optarg;
			break;
		case 'P':
			port = optarg;
			break;
		case 'S':
			size = strtoull(optarg, NULL, 0);
			break;
		case 'I':
			iters = strtoull(optarg, NULL, 0);
			break;
		case 'W':
			window = (unsigned)strtoul(optarg, NULL, 0);
			break;
		default:
			return 2;
		}
	}
	if (!prov || !port || size < 16 || !iters || !window || window > MAX_WINDOW ||
	    srv == (optind < argc)) {
		fprintf(stderr,
			"usage: fi_stream -p PROV [-d DOMAIN] -B PORT | -P PORT ADDR -S SIZE "
			"(>= 16) -I ITERS [-W WINDOW (1-%d)]\n",
			MAX_WINDOW);
		return 2;
	}
	buf = aligned_alloc(4096, (size * window + 4095) / 4096 * 4096);
	if (!buf)
		die("the buffers", ENOMEM);
	memset(buf, 0x5a, size * window);
	open_endpoint(prov, dom);
	fd = oob_connect(srv ? NULL : argv[optind], port);
	exchange(fd);
	if (srv)
		server(fd, iters);
	else
		client(fd, iters);
	close(fd);
	fi_close(&ep->fid);
	if (mr)
		fi_close(&mr->fid);
	fi_close(&av->fid);
	fi_close(&cq->fid);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	free(buf);
	return 0;
}
