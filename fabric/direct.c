/*
 * The direct paths (PROTOTYPE, transport/ib_direct.h): the segment at
 * --direct PATH, the routes computed from the fabric's state whenever it
 * changed (fab_direct_dirty), and the packets the hosts sent straight
 * taken into the crossed ports' counters (fab_direct_drain) before the
 * routes change, each tick and before a STATUS.
 */
#include "fabric.h"
#include "ib_direct.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct fab_hop {
	uint16_t node;
	uint8_t in, out;
};

struct fab_direct {
	struct ib_direct_shm *shm;
	char path[256];
	unsigned nhosts;
	struct fab_node *host[IB_DIRECT_HOSTS];
	/* the crossed ports of each published route: [src][dlid][hop] */
	uint8_t nhops[IB_DIRECT_HOSTS][IB_DIRECT_LIDS];
	struct fab_hop (*hops)[IB_DIRECT_LIDS][IB_DIRECT_HOPS];
	bool dirty;
};

int fab_direct_open(struct fabric *f, const char *path)
{
	struct fab_direct *d;
	int fd;

	/* the hosts take a path under /dev/shm/ that fits a SOFL name */
	if (strncmp(path, "/dev/shm/", 9) || strchr(path + 9, '/') ||
	    strlen(path) >= IB_SOFL_NAME_LEN)
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->hops = calloc(IB_DIRECT_HOSTS, sizeof(*d->hops));
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (!d->hops || fd < 0 || ftruncate(fd, sizeof(*d->shm))) {
		if (fd >= 0)
			close(fd);
		free(d->hops);
		free(d);
		return -errno;
	}
	d->shm = mmap(NULL, sizeof(*d->shm), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (d->shm == MAP_FAILED) {
		free(d->hops);
		free(d);
		return -errno;
	}
	snprintf(d->path, sizeof(d->path), "%s", path);
	for (unsigned i = 0; i < f->nnodes && d->nhosts < IB_DIRECT_HOSTS; i++)
		if (f->nodes[i]->real)
			d->host[d->nhosts++] = f->nodes[i];
	d->shm->magic = IB_DIRECT_MAGIC;
	d->shm->version = IB_DIRECT_VERSION;
	d->shm->pid = (uint32_t)getpid();
	d->shm->nhosts = d->nhosts;
	d->dirty = true;
	f->direct = d;
	return 0;
}

void fab_direct_close(struct fabric *f)
{
	struct fab_direct *d = f->direct;

	if (!d)
		return;
	unlink(d->path);
	munmap(d->shm, sizeof(*d->shm));
	free(d->hops);
	free(d);
	f->direct = NULL;
}

const char *fab_direct_path(const struct fabric *f) { return f->direct ? f->direct->path : NULL; }

void fab_direct_dirty(struct fabric *f)
{
	if (f->direct)
		f->direct->dirty = true;
}

/* The hops of a packet from host src to dlid, as switch_input and fab_xmit
 * would take it, when every one is a plain LFT forward; the host it
 * reaches (index + 1) or 0. */
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

static unsigned walk(const struct fab_direct *d, unsigned src, uint16_t dlid, struct fab_hop *hop,
		     uint8_t *nhop, uint16_t *pk, uint8_t *npk)
{
	const struct fab_node *h = d->host[src];
	struct fab_node *n = h->port[1].peer;
	unsigned in = h->port[1].peer_port, k = 0;

	*nhop = 0;
	*npk = IB_DIRECT_ANY_PKEY;
	if (!h->host.attached || !fab_link_up(h, 1))
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
		if (n->real) {
			for (unsigned t = 0; t < d->nhosts; t++)
				if (d->host[t] == n && n->host.attached) {
					*nhop = (uint8_t)k;
					return t + 1;
				}
			return 0;
		}
	}
	return 0;
}

void fab_direct_drain(struct fabric *f)
{
	struct fab_direct *d = f->direct;

	if (!d)
		return;
	for (unsigned s = 0; s < d->nhosts; s++)
		for (unsigned l = 1; l < IB_DIRECT_LIDS; l++) {
			struct ib_direct_cnt *c = &d->shm->cnt[s][l];
			uint64_t pkts, words;

			if (!atomic_load_explicit(&c->pkts, memory_order_relaxed))
				continue;
			pkts = atomic_exchange(&c->pkts, 0);
			words = atomic_exchange(&c->words, 0);
			/* counted on a route since withdrawn: its last hops */
			for (unsigned k = 0; k < d->nhops[s][l]; k++) {
				const struct fab_hop *hp = &d->hops[s][l][k];
				struct sof_node *m = f->nodes[hp->node]->m;

				m->port[hp->in].cnt.rcv_data += words;
				m->port[hp->in].cnt.rcv_pkts += pkts;
				m->port[hp->in].cnt.uni_rcv_pkts += pkts;
				m->port[hp->out].cnt.xmit_data += words;
				m->port[hp->out].cnt.xmit_pkts += pkts;
				m->port[hp->out].cnt.uni_xmit_pkts += pkts;
				f->st.pkts += pkts;
				f->st.delivered += pkts;
				f->st.forwarded += pkts;
			}
			f->st.from_hosts += pkts;
			f->st.to_hosts += pkts;
		}
}

/* Routes again when something changed; the capture flag each call. */
void fab_direct_publish(struct fabric *f)
{
	struct fab_direct *d = f->direct;
	struct ib_direct_shm *s;

	if (!d)
		return;
	s = d->shm;
	atomic_store_explicit(&s->off, f->cap ? 1u : 0u, memory_order_release);
	if (!d->dirty)
		return;
	d->dirty = false;
	atomic_fetch_add_explicit(&s->seq, 1, memory_order_acq_rel); /* odd: writing */
	atomic_thread_fence(memory_order_seq_cst);
	/* what was sent on the old routes first: their hops are still these */
	fab_direct_drain(f);
	for (unsigned t = 0; t < d->nhosts; t++) {
		const struct fab_node *h = d->host[t];

		s->host[t].port_guid = h->m->port[1].guid;
		s->host[t].attached = h->host.attached;
		s->host[t].addrlen = h->host.addrlen;
		memcpy(&s->host[t].addr, &h->host.addr, sizeof(s->host[t].addr));
	}
	for (unsigned src = 0; src < d->nhosts; src++)
		for (unsigned l = 1; l < IB_DIRECT_LIDS; l++)
			s->route[src][l] =
			    (uint8_t)walk(d, src, (uint16_t)l, d->hops[src][l], &d->nhops[src][l],
					  s->pkeys[src][l], &s->npkeys[src][l]);
	atomic_thread_fence(memory_order_seq_cst);
	atomic_fetch_add_explicit(&s->seq, 1, memory_order_acq_rel);
	/* a host that counted on an old route between the drain and the
	 * odd seq: the next drain takes it on the new route's hops */
}
