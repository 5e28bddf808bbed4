/*
 * The direct paths (on unless --no-direct; transport/ib_direct.h): the sealed
 * segment of routes, computed anew from the fabric's state whenever it
 * changed (fab_direct_dirty: an SMP, a link), and what the hosts report
 * they sent straight (SOFL COUNT) taken into the counters of the ports
 * their routes cross, as if this process had forwarded those packets.
 */
#include "fabric.h"
#include "ib_direct.h"

#include "sof_bytes.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define DIRECT_SETTLE_MS 5
#define DIRECT_SETTLE_NS (DIRECT_SETTLE_MS * 1000000ull)

struct fab_hop {
	uint16_t node;
	uint8_t in, out;
};

struct fab_direct {
	struct ib_direct_shm *shm; /* our writable mapping, the only one */
	int fd;			   /* the memfd, open for the hosts' /proc/PID/fd/N */
	char path[IB_SOFL_NAME_LEN];
	unsigned nhosts;
	struct fab_node *host[IB_DIRECT_HOSTS];
	/* the crossed ports of the last route published from [src] to
	 * [dlid] (kept when it is withdrawn: counts reported after a change
	 * were sent on it) */
	uint8_t nhops[IB_DIRECT_HOSTS][IB_DIRECT_LIDS];
	struct fab_hop (*hops)[IB_DIRECT_LIDS][IB_DIRECT_HOPS];
	/* a change since the last publish (seq odd since), and its time;
	 * touched: a change since the loop last looked (fab_direct_publish
	 * takes the time then, not at every SMP of a burst) */
	bool dirty, touched;
	uint64_t changed_ns;
};

int fab_direct_open(struct fabric *f)
{
	struct fab_direct *d = calloc(1, sizeof(*d));
	int fd, err;

	if (!d)
		return -ENOMEM;
	d->hops = calloc(IB_DIRECT_HOSTS, sizeof(*d->hops));
	fd = memfd_create("softofed-direct", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (!d->hops || fd < 0 || ftruncate(fd, sizeof(*d->shm)))
		goto fail;
	d->shm = mmap(NULL, sizeof(*d->shm), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (d->shm == MAP_FAILED)
		goto fail;
	/* from now on no one maps it writable or writes it, nor can the
	 * seals be taken off: only the mapping above changes it */
	if (fcntl(fd, F_ADD_SEALS, IB_DIRECT_SEALS)) {
		munmap(d->shm, sizeof(*d->shm));
		goto fail;
	}
	d->fd = fd;
	snprintf(d->path, sizeof(d->path), "/proc/%d/fd/%d", (int)getpid(), fd);
	for (unsigned i = 0; i < f->nnodes && d->nhosts < IB_DIRECT_HOSTS; i++)
		if (f->nodes[i]->real)
			d->host[d->nhosts++] = f->nodes[i];
	d->shm->magic = IB_DIRECT_MAGIC;
	d->shm->version = IB_DIRECT_VERSION;
	d->shm->pid = (uint32_t)getpid();
	d->shm->nhosts = d->nhosts;
	d->shm->seq = 1; /* no route until the first publish */
	d->dirty = true;
	f->direct = d;
	return 0;
fail:
	err = errno ? -errno : -ENOMEM;
	if (fd >= 0)
		close(fd);
	free(d->hops);
	free(d);
	return err;
}

void fab_direct_close(struct fabric *f)
{
	struct fab_direct *d = f->direct;

	if (!d)
		return;
	munmap(d->shm, sizeof(*d->shm));
	close(d->fd);
	free(d->hops);
	free(d);
	f->direct = NULL;
}

const char *fab_direct_path(const struct fabric *f) { return f->direct ? f->direct->path : NULL; }

/* Something the routes read is about to change: the hosts stop sending
 * straight at once (seq odd: they send through this process, and drop
 * what comes straight), and the routes are made anew once the changes
 * stopped for DIRECT_SETTLE_NS (an SM's sweep sends Sets in bursts). */
void fab_direct_dirty(struct fabric *f)
{
	struct fab_direct *d = f->direct;

	if (!d)
		return;
	if (!d->dirty) {
		d->dirty = true;
		atomic_fetch_add_explicit(&d->shm->seq, 1, memory_order_acq_rel);
		atomic_thread_fence(memory_order_seq_cst);
	}
	d->touched = true;
}

int fab_direct_timeout(const struct fabric *f, int ms)
{
	return f->direct && f->direct->dirty && ms > DIRECT_SETTLE_MS + 1 ? DIRECT_SETTLE_MS + 1
									  : ms;
}

/* the partitions of pk[0..*n) (IB_DIRECT_ANY_PKEY: all) that port p
 * takes as a switch port (fab_pkey_ok); false: more than fit */
static bool pkeys_and(const struct sof_port *p, uint16_t *pk, uint8_t *n)
{
	uint8_t m = 0;

	if (*n == IB_DIRECT_ANY_PKEY) {
		for (unsigned i = 0; i < p->npkeys; i++) {
			uint16_t e = p->pkeys[i] & 0x7fff;
			bool dup = false;

			for (unsigned j = 0; j < m; j++)
				dup |= pk[j] == e;
			if (!e || dup)
				continue;
			if (m == IB_DIRECT_PKEYS)
				return false;
			pk[m++] = e;
		}
	} else {
		for (unsigned j = 0; j < *n; j++)
			if (fab_pkey_ok(p, pk[j], true))
				pk[m++] = pk[j];
	}
	*n = m;
	return true;
}

/* The hops of a packet from host src to dlid, as switch_input and
 * fab_xmit would take it, when every one is a plain LFT forward; the host
 * it reaches (index + 1) or 0. */
static unsigned walk(const struct fab_direct *d, unsigned src, uint16_t dlid, struct fab_hop *hop,
		     uint8_t *nhop, uint16_t *pk, uint8_t *npk)
{
	const struct fab_node *h = d->host[src];
	struct fab_node *n = h->port[1].peer;
	unsigned in = h->port[1].peer_port, k = 0;

	*nhop = 0;
	*npk = IB_DIRECT_ANY_PKEY;
	if (!h->host.attached || !h->host.direct || !fab_link_up(h, 1))
		return 0;
	while (n && n->m->type == SOF_NODE_SWITCH && k < IB_DIRECT_HOPS) {
		const struct sof_node *m = n->m;
		const struct sof_port *ip = &m->port[in], *op;
		unsigned out;

		if (ip->state != SOF_PORT_ACTIVE || sof_port_has_lid(&m->port[0], dlid) ||
		    dlid >= m->sw.lft_cap || (ip->pe_inbound && !pkeys_and(ip, pk, npk)))
			return 0;
		out = m->sw.lft[dlid];
		if (out < 1 || out > m->nports)
			return 0;
		op = &m->port[out];
		if (!fab_link_up(n, out) || op->state != SOF_PORT_ACTIVE ||
		    (op->pe_outbound && !pkeys_and(op, pk, npk)))
			return 0;
		hop[k++] = (struct fab_hop){(uint16_t)n->index, (uint8_t)in, (uint8_t)out};
		in = n->port[out].peer_port;
		n = n->port[out].peer;
		if (n && n->real) {
			for (unsigned t = 0; t < d->nhosts; t++)
				if (d->host[t] == n && n->host.attached && n->host.direct &&
				    fab_link_up(n, 1)) {
					*nhop = (uint8_t)k;
					return t + 1;
				}
			return 0;
		}
	}
	return 0;
}

/* A SOFL COUNT from host h (known by its link address, so a host reports
 * only for itself): its packets go into the counters of the ports its
 * route to each DLID crossed. */
void fab_direct_count(struct fabric *f, const struct fab_node *h, const uint8_t *rec)
{
	struct fab_direct *d = f->direct;
	unsigned s = 0;

	if (!d) {
		f->st.sofl_bad++;
		return;
	}
	while (s < d->nhosts && d->host[s] != h)
		s++;
	if (s == d->nhosts) {
		f->st.sofl_bad++;
		return;
	}
	for (unsigned r = 0; r < IB_DIRECT_COUNT_RECS; r++, rec += 16) {
		uint16_t dlid = sof_get16(rec);
		uint64_t pkts = sof_get32(rec + 4), words = sof_get64(rec + 8);

		if (!dlid)
			break;
		/* bounded: at most IB_MAX_PKT bytes a packet */
		if (dlid >= IB_DIRECT_LIDS || sof_get16(rec + 2) ||
		    words > pkts * (IB_MAX_PKT / 4)) {
			f->st.sofl_bad++;
			return;
		}
		for (unsigned k = 0; k < d->nhops[s][dlid] && k < IB_DIRECT_HOPS; k++) {
			const struct fab_hop *hp = &d->hops[s][dlid][k];
			struct sof_node *m = f->nodes[hp->node]->m;

			m->port[hp->in].cnt.rcv_data += words;
			m->port[hp->in].cnt.rcv_pkts += pkts;
			m->port[hp->in].cnt.uni_rcv_pkts += pkts;
			m->port[hp->out].cnt.xmit_data += words;
			m->port[hp->out].cnt.xmit_pkts += pkts;
			m->port[hp->out].cnt.uni_xmit_pkts += pkts;
			f->st.forwarded += pkts;
		}
		f->st.direct += pkts;
	}
}

/* A SOFL DIRECT from host h: it mapped the segment of that name. Until
 * it says so, nothing goes straight from or to it: a host that cannot
 * open /proc/PID/fd/N (another pid namespace or user, no /proc) could
 * not check, and so would drop, what other hosts sent it straight. */
void fab_direct_mapped(struct fabric *f, struct fab_node *h, const char *path)
{
	const char *ours = fab_direct_path(f);

	if (!ours || strcmp(path, ours)) {
		f->st.sofl_bad++;
		return;
	}
	if (!h->host.direct) {
		fab_direct_dirty(f);
		h->host.direct = true;
	}
}

/* Routes again when something changed and DIRECT_SETTLE_NS passed since
 * the loop last saw a change (the loop calls this after its work each
 * time round); the capture flag each call. */
void fab_direct_publish(struct fabric *f)
{
	struct fab_direct *d = f->direct;
	struct ib_direct_shm *s;

	if (!d)
		return;
	s = d->shm;
	atomic_store_explicit(&s->off, f->cap ? 1u : 0u, memory_order_release);
	if (d->touched) {
		d->touched = false;
		d->changed_ns = fab_now();
		return;
	}
	if (!d->dirty || fab_now() - d->changed_ns < DIRECT_SETTLE_NS)
		return;
	d->dirty = false; /* seq is odd since fab_direct_dirty */
	for (unsigned t = 0; t < d->nhosts; t++) {
		const struct fab_node *h = d->host[t];

		s->host[t].port_guid = h->m->port[1].guid;
		s->host[t].attached = h->host.attached;
		s->host[t].addrlen = h->host.addrlen;
		memcpy(&s->host[t].addr, &h->host.addr, sizeof(s->host[t].addr));
	}
	for (unsigned src = 0; src < d->nhosts; src++)
		for (unsigned l = 1; l < IB_DIRECT_LIDS; l++) {
			struct fab_hop hop[IB_DIRECT_HOPS];
			uint8_t nhop;
			unsigned t = walk(d, src, (uint16_t)l, hop, &nhop, s->pkeys[src][l],
					  &s->npkeys[src][l]);

			s->route[src][l] = (uint8_t)t;
			if (t) {
				memcpy(d->hops[src][l], hop, nhop * sizeof(hop[0]));
				d->nhops[src][l] = nhop;
			}
		}
	atomic_thread_fence(memory_order_seq_cst);
	atomic_fetch_add_explicit(&s->seq, 1, memory_order_acq_rel);
}
