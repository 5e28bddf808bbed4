/*
 * The fabric's nodes and its packet queue: building the nodes and their
 * models from the topology, the queue packets move through (but for a
 * directed-route SMP's walk between simulated nodes, node.c), and
 * sending out of a port with the checks a port makes on the way out
 * (link up, port Active for all but VL15, outbound partition enforcement
 * at a switch, IBA 10.9.3) and the counters it keeps.
 */
#include "fabric.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FAB_QUEUE_FREE 512 /* entries kept for reuse (each FAB_MAX_PKT) */

struct fab_qpkt {
	struct fab_qpkt *next;
	struct fab_node *node;
	unsigned port, hops;
	bool from_host, sealed;
	size_t len;
	uint8_t data[];
};

uint64_t fab_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static bool is_real(const char *name, char **real, unsigned nreal)
{
	for (unsigned i = 0; i < nreal; i++)
		if (!strcmp(real[i], name))
			return true;
	return false;
}

int fab_build(struct fabric *f, const struct topo *t, char **real, unsigned nreal)
{
	unsigned i, p;

	memset(f, 0, sizeof(*f));
	f->udp = -1;
	f->sim_ctl = -1;
	for (i = 0; i < FAB_SIM_CLIENTS; i++)
		f->sim[i].fd = -1;
	f->qtail = &f->qhead;
	for (i = 0; i < nreal; i++) {
		int k = topo_find(t, real[i]);

		if (k < 0 || t->nodes[k].type != SOF_NODE_CA) {
			fprintf(stderr, "softofed-fabric: --real %s: no Hca of that name\n",
				real[i]);
			return -EINVAL;
		}
	}
	f->nodes = calloc(t->nnodes, sizeof(*f->nodes));
	if (!f->nodes)
		return -ENOMEM;
	f->nnodes = t->nnodes;
	for (i = 0; i < t->nnodes; i++) {
		const struct topo_node *tn = &t->nodes[i];
		struct fab_node *n = calloc(1, sizeof(*n) + (tn->nports + 1) * sizeof(n->port[0]));

		if (!n)
			return -ENOMEM;
		f->nodes[i] = n;
		n->index = i;
		snprintf(n->name, sizeof(n->name), "%s", tn->name);
		n->real = is_real(tn->name, real, nreal);
		n->m = sof_node_new(tn->type, tn->nports, tn->guid);
		if (!n->m)
			return -ENOMEM;
		/* ibsim's node descriptions are the names of the file */
		snprintf(n->m->desc, sizeof(n->m->desc), "%s", tn->name);
		for (p = 1; p <= tn->nports && tn->type == SOF_NODE_CA; p++) {
			n->m->port[p].guid = tn->port_guid + p - 1;
			n->m->port[p].guids[0] = n->m->port[p].guid;
		}
	}
	for (i = 0; i < t->nnodes; i++) {
		const struct topo_node *tn = &t->nodes[i];

		for (p = 1; p <= tn->nports; p++) {
			if (tn->ports[p].peer < 0)
				continue;
			f->nodes[i]->port[p].peer = f->nodes[tn->ports[p].peer];
			f->nodes[i]->port[p].peer_port = tn->ports[p].peer_port;
		}
	}
	/* links between simulated nodes train at once; a real host's when
	 * its HELLO comes */
	for (i = 0; i < f->nnodes; i++)
		for (p = 1; p <= f->nodes[i]->m->nports; p++)
			if (fab_link_up(f->nodes[i], p))
				sof_port_link_up(f->nodes[i]->m, p);
	return 0;
}

void fab_free(struct fabric *f)
{
	struct fab_qpkt *q;

	fab_cap_free(f);
	while ((q = f->qhead)) {
		f->qhead = q->next;
		free(q);
	}
	while ((q = f->qfree)) {
		f->qfree = q->next;
		free(q);
	}
	for (unsigned i = 0; i < f->nnodes; i++) {
		if (!f->nodes[i])
			continue;
		sof_node_free(f->nodes[i]->m);
		free(f->nodes[i]);
	}
	free(f->nodes);
	memset(f, 0, sizeof(*f));
	f->udp = -1;
}

struct fab_node *fab_find(struct fabric *f, const char *name)
{
	for (unsigned i = 0; i < f->nnodes; i++)
		if (!strcmp(f->nodes[i]->name, name))
			return f->nodes[i];
	return NULL;
}

void fab_enqueue(struct fabric *f, struct fab_node *n, unsigned port, const uint8_t *p,
		 size_t len, bool from_host, bool sealed)
{
	struct fab_qpkt *q;

	unsigned hops = from_host ? 0 : f->cur_hops + 1;

	if (hops > FAB_MAX_HOPS) {
		f->st.loop++;
		return;
	}
	if (f->qlen >= FAB_QUEUE_MAX) {
		f->st.queue_full++;
		return;
	}
	if (len > FAB_MAX_PKT)
		len = FAB_MAX_PKT + 1; /* checked (and refused) at the port */
	/* every entry has room for the longest packet, and a used one is
	 * taken again: a packet crosses several switches, each a hop through
	 * the queue, and malloc/free of them per hop grew and trimmed the
	 * heap all the time; a unicast forward moves the packet's own entry
	 * on, with no copy */
	if (f->move && f->cur_q && !f->cur_moved && p == f->cur_q->data) {
		q = f->cur_q;
		f->cur_moved = true;
	} else if ((q = f->qfree)) {
		f->qfree = q->next;
		f->nfree--;
	} else {
		q = malloc(sizeof(*q) + FAB_MAX_PKT + 1);
		if (!q)
			return;
	}
	q->next = NULL;
	q->node = n;
	q->port = port;
	q->from_host = from_host;
	q->sealed = sealed;
	q->hops = hops;
	if (q->data != p)
		memcpy(q->data, p, len);
	q->len = len;
	*f->qtail = q;
	f->qtail = &q->next;
	f->qlen++;
}

void fab_run(struct fabric *f)
{
	struct fab_qpkt *q, *outer = f->cur_q;
	bool outer_moved = f->cur_moved;

	while ((q = f->qhead)) {
		struct sof_port *mp;
		enum fab_bad bad;
		struct ib_lrh l;

		f->qhead = q->next;
		if (!f->qhead)
			f->qtail = &f->qhead;
		f->qlen--;
		f->st.pkts++;
		mp = &q->node->m->port[q->port];
		if (f->cap && q->from_host) /* as it left the host */
			fab_cap_pkt(f, q->node->port[q->port].peer,
				    q->node->port[q->port].peer_port, q->data, q->len, true);
		if (q->len > FAB_MAX_PKT)
			bad = FAB_BAD_SHORT;
		else if (q->from_host)
			bad = fab_pkt_check(q->data, q->len, &l);
		else {
			bad = FAB_OK;
			ib_lrh_read(q->data, &l);
		}
		if (bad != FAB_OK) {
			/* IBA 7.7.8, 7.8.2: a malformed packet or a link
			 * integrity error; PortRcvErrors */
			f->st.bad[bad]++;
			mp->cnt.rcv_errors++;
			if (bad == FAB_BAD_VCRC)
				mp->cnt.local_phys_errors++;
			else
				mp->cnt.malformed_pkt_errors++;
		} else {
			sof_port_count_rcv(mp, (uint32_t)(q->len - FAB_VCRC_LEN),
					   l.dlid >= SOF_LID_MCAST_BASE && l.dlid != 0xffff);
			f->cur_hops = q->hops;
			f->cur_sealed = q->sealed;
			f->cur_q = q;
			f->cur_moved = false;
			fab_node_input(f, q->node, q->port, q->data, q->len);
			f->cur_hops = 0;
			f->cur_q = NULL;
			if (f->cur_moved)
				continue; /* queued again for its next hop */
		}
		if (f->nfree < FAB_QUEUE_FREE) {
			q->next = f->qfree;
			f->qfree = q;
			f->nfree++;
		} else {
			free(q);
		}
	}
	f->cur_q = outer;
	f->cur_moved = outer_moved;
	fab_tx_flush(f);
}

/* IBA 10.9.3: at an HCA a P_Key matches a table entry when the low 15
 * bits agree and at least one of the two is a full member. A switch port
 * (10.9.4) checks the partition only: its entries copy its CA's
 * membership, and whether two limited members may talk is the end
 * nodes' check (a limited member's packets to a full one pass). */
bool fab_pkey_ok(const struct sof_port *p, uint16_t pkey, bool sw)
{
	if (!(pkey & 0x7fff))
		return false;
	for (unsigned i = 0; i < p->npkeys; i++) {
		uint16_t e = p->pkeys[i];

		if ((e & 0x7fff) == (pkey & 0x7fff) && (sw || ((e | pkey) & 0x8000)))
			return true;
	}
	return false;
}

/* the P_Key of an IBA transport packet, or -1 */
int fab_pkt_pkey(const uint8_t *p, size_t len)
{
	size_t off = FAB_LRH_LEN + ((p[1] & 3) == 3 ? FAB_GRH_LEN : 0);

	if ((p[1] & 3) < 2 || len < off + FAB_BTH_LEN)
		return -1;
	return sof_get16(p + off + 2);
}

void fab_xmit(struct fabric *f, struct fab_node *n, unsigned port, uint8_t *p, size_t len,
	      bool sealed)
{
	struct sof_port *mp;
	struct fab_port *fp;
	bool vl15 = (p[0] >> 4) == 15;

	if (port < 1 || port > n->m->nports) {
		f->st.no_route++;
		return;
	}
	mp = &n->m->port[port];
	fp = &n->port[port];
	if (!fab_link_up(n, port) || (!vl15 && mp->state != SOF_PORT_ACTIVE)) {
		f->st.port_down++;
		mp->cnt.xmit_discards++;
		mp->cnt.inactive_discards++;
		return;
	}
	if (!vl15 && n->m->type == SOF_NODE_SWITCH && mp->pe_outbound) {
		int pkey = fab_pkt_pkey(p, len);

		if (pkey >= 0 && !fab_pkey_ok(mp, (uint16_t)pkey, true)) {
			f->st.pkey++;
			mp->cnt.xmit_constraint_errors++;
			return;
		}
	}
	sof_port_count_xmit(mp, (uint32_t)(len - FAB_VCRC_LEN),
			    sof_get16(p + 2) >= SOF_LID_MCAST_BASE && sof_get16(p + 2) != 0xffff);
	if (f->cap)
		fab_cap_pkt(f, n, port, p, len, sealed);
	if (fp->peer->real)
		fab_host_send(f, fp->peer, p, len, sealed);
	else
		fab_enqueue(f, fp->peer, fp->peer_port, p, len, false, sealed);
}
