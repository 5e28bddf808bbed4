/*
 * Captures: the IB packets that cross the fabric's links, as a pcap
 * stream (LINKTYPE_INFINIBAND, 247; nanosecond timestamps) on a control
 * connection (`CAPTURE COUNT SECS [NAME PORT]`, fabric/README.md). Each
 * record is one packet from the first byte of the LRH through the VCRC,
 * as the link carries it (IBA 7.7): the fabric's own packets are sealed
 * (ICRC, VCRC) in the copy, since inside the fabric they travel unsealed.
 *
 * A packet is taken once, where it leaves a port onto a link: out of a
 * fabric node (fab_xmit) or out of a real host (fab_run, before the
 * receiving port checks it, so a bad packet is seen as the wire had it).
 * With NAME PORT only that link is taken, both ways.
 *
 * The fabric never waits for the reader: records are appended to a
 * buffer (at most CAP_BUF bytes; a record that does not fit is dropped
 * and counted) that the main loop writes out without blocking. A capture
 * ends after COUNT records or SECS seconds, or when the reader goes; only
 * root or the fabric's own user may start one (SO_PEERCRED), one at a
 * time. With none running the cost is the test of f->cap.
 */
#include "fabric.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CAP_BUF (4u << 20)
#define CAP_PCAP_MAGIC_NS 0xa1b23c4du
#define CAP_LINKTYPE_INFINIBAND 247u
#define CAP_SNAPLEN 65535u
#define CAP_MAX_COUNT 10000000ull
#define CAP_MAX_SECS 3600u

struct fab_cap {
	int fd;
	struct fab_node *node, *peer; /* NULL: every link */
	unsigned port, peer_port;
	uint64_t left, deadline;
	uint8_t *buf;
	size_t len, off; /* bytes buffered, bytes of them written */
	bool ending;	 /* no more records; close once written out */
};

static void put32le(uint8_t *b, uint32_t v)
{
	b[0] = (uint8_t)v;
	b[1] = (uint8_t)(v >> 8);
	b[2] = (uint8_t)(v >> 16);
	b[3] = (uint8_t)(v >> 24);
}

static bool cap_room(struct fab_cap *c, size_t n)
{
	if (c->off && c->len + n > CAP_BUF) { /* move what is left to the front */
		memmove(c->buf, c->buf + c->off, c->len - c->off);
		c->len -= c->off;
		c->off = 0;
	}
	return c->len + n <= CAP_BUF;
}

int fab_cap_start(struct fabric *f, int fd, const char *args, char *err, size_t errlen)
{
	unsigned long long count;
	unsigned secs, port = 0;
	char name[FAB_NAME_LEN + 1] = "";
	struct ucred cr;
	socklen_t crl = sizeof(cr);
	struct fab_node *n = NULL;
	struct fab_cap *c;
	int k;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crl) ||
	    (cr.uid != 0 && cr.uid != geteuid())) {
		snprintf(err, errlen,
			 "capture: only root or the fabric's user (uid %u) may capture",
			 (unsigned)geteuid());
		return -EPERM;
	}
	if (f->cap) {
		snprintf(err, errlen, "capture: one already runs");
		return -EBUSY;
	}
	k = sscanf(args, "%llu %u %64s %u", &count, &secs, name, &port);
	if ((k != 2 && k != 4) || !count || !secs || count > CAP_MAX_COUNT || secs > CAP_MAX_SECS) {
		snprintf(err, errlen, "capture: CAPTURE COUNT(1..%llu) SECS(1..%u) [NAME PORT]",
			 CAP_MAX_COUNT, CAP_MAX_SECS);
		return -EINVAL;
	}
	if (k == 4) {
		n = fab_find(f, name);
		if (!n || port < 1 || port > n->m->nports || !n->port[port].peer) {
			snprintf(err, errlen, "capture: no link at port %u of a node %s", port,
				 name);
			return -ENOENT;
		}
	}
	c = calloc(1, sizeof(*c));
	if (!c || !(c->buf = malloc(CAP_BUF))) {
		free(c);
		snprintf(err, errlen, "capture: no memory");
		return -ENOMEM;
	}
	c->fd = fd;
	c->left = count;
	c->deadline = fab_now() + (uint64_t)secs * 1000000000ull;
	if (n) {
		c->node = n;
		c->port = port;
		c->peer = n->port[port].peer;
		c->peer_port = n->port[port].peer_port;
	}
	/* the pcap file header */
	memcpy(c->buf, "ok capture\n", 11);
	c->len = 11;
	put32le(c->buf + c->len, CAP_PCAP_MAGIC_NS);
	c->buf[c->len + 4] = 2; /* version 2.4 */
	c->buf[c->len + 5] = 0;
	c->buf[c->len + 6] = 4;
	c->buf[c->len + 7] = 0;
	put32le(c->buf + c->len + 8, 0);  /* thiszone */
	put32le(c->buf + c->len + 12, 0); /* sigfigs */
	put32le(c->buf + c->len + 16, CAP_SNAPLEN);
	put32le(c->buf + c->len + 20, CAP_LINKTYPE_INFINIBAND);
	c->len += 24;
	f->cap = c;
	f->st.captures++;
	return 0;
}

void fab_cap_pkt(struct fabric *f, const struct fab_node *n, unsigned port, const uint8_t *p,
		 size_t len, bool sealed)
{
	struct fab_cap *c = f->cap;
	struct timespec ts;
	uint8_t *r;

	if (c->ending)
		return;
	if (c->node &&
	    !((n == c->node && port == c->port) || (n == c->peer && port == c->peer_port)))
		return;
	if (len > FAB_MAX_PKT || !cap_room(c, 16 + len)) {
		f->st.cap_dropped++;
		return;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	r = c->buf + c->len;
	put32le(r, (uint32_t)ts.tv_sec);
	put32le(r + 4, (uint32_t)ts.tv_nsec);
	put32le(r + 8, (uint32_t)len);
	put32le(r + 12, (uint32_t)len);
	memcpy(r + 16, p, len);
	/* as the link carries it (fab_host_send seals the same way) */
	if (!sealed && len >= FAB_LRH_LEN + FAB_ICRC_LEN + FAB_VCRC_LEN)
		fab_pkt_seal(r + 16, len);
	c->len += 16 + len;
	f->st.captured++;
	if (!--c->left)
		c->ending = true;
}

static void cap_end(struct fabric *f)
{
	close(f->cap->fd);
	free(f->cap->buf);
	free(f->cap);
	f->cap = NULL;
}

int fab_cap_fd(const struct fabric *f, short *events)
{
	if (!f->cap)
		return -1;
	*events = f->cap->off < f->cap->len ? POLLOUT : 0;
	return f->cap->fd;
}

void fab_cap_io(struct fabric *f, short revents, uint64_t now)
{
	struct fab_cap *c = f->cap;

	if (!c)
		return;
	if (revents & (POLLHUP | POLLERR)) { /* the reader went */
		cap_end(f);
		return;
	}
	if (now >= c->deadline)
		c->ending = true;
	while (c->off < c->len) {
		ssize_t n =
		    send(c->fd, c->buf + c->off, c->len - c->off, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			break;
		if (n <= 0) {
			cap_end(f);
			return;
		}
		c->off += (size_t)n;
	}
	if (c->off == c->len)
		c->off = c->len = 0;
	/* the last records leave within a second of the end, else the
	 * reader is too slow and the capture ends as it is */
	if (c->ending && (!c->len || now >= c->deadline + 1000000000ull))
		cap_end(f);
}

void fab_cap_free(struct fabric *f)
{
	if (f->cap)
		cap_end(f);
}
