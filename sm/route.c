/*
 * Unicast routing (IBA 18.2.4.3: a switch forwards by its LFT): for every
 * LID the SM gave, an output port on every switch.
 *
 * min-hop: the switch graph's hop counts to each destination switch (one
 * breadth-first search per switch), then for every LID and switch the
 * port towards a neighbour one hop nearer, the least loaded of those so
 * far, so the LIDs of a switch's CAs, and the 2^LMC LIDs of one port,
 * spread over the equal paths. A port's load counts the hosts whose
 * traffic it carries: switches are taken farthest from the destination
 * first, each passing its hosts on to the switch it chose. Host LIDs are
 * routed before the switches' own (management traffic only).
 *
 * up/down (--routing updown): the same choice
 * among paths that never go up after going down. A switch's rank is its
 * distance from the roots: leaves (switches with a CA) are found first,
 * and the switches farthest from every leaf are the roots (a fat tree's
 * spines). Shortest legal paths come from a rank-aware search, and a
 * neighbour is a candidate only when the leg to it is legal before its
 * own path. On a fat tree both engines give the same up*down* paths; on
 * other graphs up/down avoids the credit loops min-hop may make.
 *
 * ftree (--routing ftree): up/down on a graph checked to be a fat tree
 * (leaves all at the bottom rank, links only between adjacent ranks);
 * anything else is routed min-hop, with a message.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "sm.h"
#include "smp.h"

/* the turn of the first candidate per switch (dest_prepare) */
static const unsigned rot_mul = 5;
struct rt_adj {
	unsigned sw;	/* the neighbour's index */
	uint8_t port;	/* the port that leads there */
};
struct rt {
	unsigned nsw;
	struct sm_node **sw;	/* switches by index */
	int *swidx;		/* node index -> switch index, -1 */
	uint8_t *dist;		/* [to * nsw + from]: hops, bit 7 set when the
				 * path first goes up (up/down); 255 unreachable */
	uint32_t *load;		/* [sw * 256 + port] */
	int *queue;
	uint32_t *hosts;	/* CA ports on each switch */
	uint32_t *w;		/* per LID: the hosts whose traffic crosses */
	uint32_t *w0;		/* w's start: a switch's hosts, else 1 */
	uint8_t **lft, **lft_hw; /* each switch's tables */
	unsigned bucket[128];
	/* for the destination switch cur_d (dest_prepare): the switches
	 * that reach it, farthest first, and the candidate ports of
	 * order[i] in cand[cand_off[i] .. cand_off[i + 1]) */
	unsigned cur_d, norder;
	unsigned *order;
	unsigned *cand_off;
	struct rt_adj *cand;
	/* links between switches: for switch s, adj[adj_off[s] .. adj_off[s + 1]) */
	unsigned *adj_off;
	struct rt_adj *adj;
};

static bool link_up(const struct sm_port *p)
{
	return p->present && p->state >= SOF_PORT_INIT && p->peer && p->peer->node->present &&
	       p->peer->state >= SOF_PORT_INIT && p->peer->peer == p;
}

static struct sm_node *peer_switch(const struct sm_port *p)
{
	return link_up(p) && p->peer->node->sw ? p->peer->node : NULL;
}

/* Hop counts to switch `to` from every switch, breadth-first backwards
 * from it. Up/down (updown): only over paths that never go up after going
 * down, a packet's leg x -> y being down when y's rank is greater (farther
 * from the roots). phase[x] 0: x's path to `to` goes only down, so a leg
 * down into x may precede it; 1: it goes up first, so only a leg up may. */
static void bfs(struct rt *r, unsigned to, uint8_t *dist, uint8_t *phase, bool updown)
{
	unsigned head = 0, tail = 0, i;

	memset(dist, 255, r->nsw);
	if (updown)
		memset(phase, 0, r->nsw);
	dist[to] = 0;
	r->queue[tail++] = (int)to;
	while (head < tail) {
		unsigned s = (unsigned)r->queue[head++];

		for (i = r->adj_off[s]; i < r->adj_off[s + 1]; i++) {
			unsigned t = r->adj[i].sw;

			if (dist[t] != 255)
				continue;
			if (updown) {
				/* the packet's leg is t -> s */
				bool down = r->sw[s]->rank > r->sw[t]->rank;

				if (down && phase[s])
					continue;
				phase[t] = down ? phase[s] : 1;
			}
			dist[t] = (uint8_t)(dist[s] + 1 < 127 ? dist[s] + 1 : 126);
			r->queue[tail++] = (int)t;
		}
	}
	if (updown)
		for (i = 0; i < r->nsw; i++)
			if (dist[i] != 255 && phase[i])
				dist[i] |= 0x80;
}

static void ranks(struct rt *r)
{
	unsigned i, j, head = 0, tail = 0;

	/* leaves: switches with a CA; rank = hops from the nearest leaf,
	 * then turned so the roots (farthest) have rank 0 */
	for (i = 0; i < r->nsw; i++) {
		struct sm_node *n = r->sw[i];

		n->rank = -1;
		for (j = 1; j <= n->nports; j++)
			if (link_up(&n->port[j]) && !n->port[j].peer->node->sw) {
				n->rank = 0;
				r->queue[tail++] = (int)i;
				break;
			}
	}
	if (!tail && r->nsw) {
		r->sw[0]->rank = 0;
		r->queue[tail++] = 0;
	}
	while (head < tail) {
		struct sm_node *n = r->sw[r->queue[head++]];

		for (j = 1; j <= n->nports; j++) {
			struct sm_node *m = peer_switch(&n->port[j]);

			if (m && r->swidx[m->index] >= 0 && m->rank < 0) {
				m->rank = n->rank + 1;
				r->queue[tail++] = r->swidx[m->index];
			}
		}
	}
	{
		int top = 0;

		for (i = 0; i < r->nsw; i++)
			if (r->sw[i]->rank > top)
				top = r->sw[i]->rank;
		for (i = 0; i < r->nsw; i++)
			r->sw[i]->rank = r->sw[i]->rank < 0 ? top + 1 : top - r->sw[i]->rank;
	}
}

/* A fat tree as the ftree engine takes it: the switches with CAs (leaves)
 * all of the greatest rank, and every link between switches joins ranks
 * one apart (none within a level, none skipping one). */
static bool is_fat_tree(const struct rt *r)
{
	int top = -1;
	unsigned s, i;

	for (s = 0; s < r->nsw; s++)
		if (r->sw[s]->rank > top)
			top = r->sw[s]->rank;
	for (s = 0; s < r->nsw; s++) {
		for (i = r->adj_off[s]; i < r->adj_off[s + 1]; i++) {
			int d = r->sw[s]->rank - r->sw[r->adj[i].sw]->rank;

			if (d != 1 && d != -1)
				return false;
		}
		if (r->hosts[s] && r->sw[s]->rank != top)
			return false;
	}
	return r->nsw > 1;
}

static int build_adj(struct rt *r)
{
	unsigned s, i, n = 0;

	r->adj_off = malloc((r->nsw + 1) * sizeof(*r->adj_off));
	for (s = 0; s < r->nsw; s++)
		n += r->sw[s]->nports;
	r->adj = malloc((n + 1) * sizeof(*r->adj));
	r->cand = malloc((n + 1) * sizeof(*r->cand));
	if (!r->adj_off || !r->adj || !r->cand)
		return -ENOMEM;
	n = 0;
	for (s = 0; s < r->nsw; s++) {
		struct sm_node *nd = r->sw[s];

		r->adj_off[s] = n;
		for (i = 1; i <= nd->nports; i++) {
			struct sm_node *m = peer_switch(&nd->port[i]);

			if (m && r->swidx[m->index] >= 0) {
				r->adj[n].sw = (unsigned)r->swidx[m->index];
				r->adj[n++].port = (uint8_t)i;
			}
		}
	}
	r->adj_off[r->nsw] = n;
	return 0;
}

/* The per-destination arrays for destination switch d: the switches
 * that reach it, farthest first (a bucket sort by hops), and for each the
 * candidate ports, the neighbours one hop nearer, in the order route_lid takes
 * them: from a place that turns with the switch (equal loads then spread
 * one destination over the ports), up/down's legs down taken only onto a
 * path that goes down all the way (min-hop never sets bit 7). They depend
 * on d alone, so the LIDs of one switch share them. */
static void dest_prepare(struct rt *r, unsigned d)
{
	const uint8_t *dist = r->dist + (size_t)d * r->nsw;
	unsigned s, h, i, n = 0, c = 0;

	memset(r->bucket, 0, sizeof(r->bucket));
	for (s = 0; s < r->nsw; s++)
		if (dist[s] != 255 && (dist[s] & 0x7f))
			r->bucket[dist[s] & 0x7f]++;
	for (h = 127; h > 0; h--) {
		unsigned k = r->bucket[h];

		r->bucket[h] = n;
		n += k;
	}
	for (s = 0; s < r->nsw; s++)
		if (dist[s] != 255 && (dist[s] & 0x7f))
			r->order[r->bucket[dist[s] & 0x7f]++] = s;
	for (i = 0; i < n; i++) {
		unsigned lo, na, k, j;
		uint8_t want;
		int rank;

		s = r->order[i];
		want = dist[s] & 0x7f;
		rank = r->sw[s]->rank;
		lo = r->adj_off[s];
		na = r->adj_off[s + 1] - lo;
		r->cand_off[i] = c;
		for (k = 0, j = na ? s * rot_mul % na : 0; k < na; k++, j = j + 1 == na ? 0 : j + 1) {
			const struct rt_adj *a = &r->adj[lo + j];
			uint8_t dt = dist[a->sw];

			if (dt == 255 || (dt & 0x7f) != want - 1)
				continue;
			if ((dt & 0x80) && r->sw[a->sw]->rank > rank)
				continue;
			r->cand[c++] = *a;
		}
	}
	r->cand_off[n] = c;
	r->norder = n;
	r->cur_d = d;
}

/* LID lid of port p: out of its switch towards it, and every other
 * switch's least loaded candidate port (the one it uses now while that is
 * still a candidate: a sweep after a change rewrites only what it must).
 * Farthest switches first, each passing the weight of the hosts whose
 * traffic it carries on to the switch it chose, so a port's load counts
 * the sources it takes to this destination, not only destinations. A
 * switch with no candidate keeps 255 (sm_route fills the tables so). */
static void route_lid(struct rt *r, struct sm_port *p, uint16_t lid)
{
	struct sm_node *dsw;
	unsigned d, i;
	uint8_t last;

	if (p->node->sw) {
		dsw = p->node;
		last = 0;
	} else {
		if (!link_up(p) || !p->peer->node->sw)
			return;
		dsw = p->peer->node;
		last = p->peer->num;
	}
	if (r->swidx[dsw->index] < 0)
		return;
	d = (unsigned)r->swidx[dsw->index];
	if (d != r->cur_d)
		dest_prepare(r, d);
	r->lft[d][lid] = last;
	memcpy(r->w, r->w0, r->nsw * sizeof(*r->w));
	for (i = 0; i < r->norder; i++) {
		unsigned s = r->order[i], k, end = r->cand_off[i + 1];
		uint32_t best_load = UINT32_MAX, *load = r->load + (size_t)s * 256;
		uint8_t prev = r->lft_hw[s][lid];
		const struct rt_adj *best = NULL;

		for (k = r->cand_off[i]; k < end; k++) {
			const struct rt_adj *a = &r->cand[k];

			if (a->port == prev) {
				best = a;
				break;
			}
			if (load[a->port] < best_load) {
				best_load = load[a->port];
				best = a;
			}
		}
		if (!best)
			continue;
		load[best->port] += r->w[s];
		r->lft[s][lid] = best->port;
		r->w[best->sw] += r->w[s];
	}
}

int sm_route(struct sm *sm)
{
	struct sm_subnet *sn = &sm->sn;
	struct rt r = {0};
	unsigned i, s, lid, pass;
	uint8_t *phase = NULL;
	int err = -ENOMEM;
	bool updown = sm->routing != SM_ROUTE_MINHOP;

	r.swidx = malloc(sn->nnodes * sizeof(*r.swidx));
	r.sw = malloc(sn->nnodes * sizeof(*r.sw));
	if (!r.swidx || !r.sw)
		goto out;
	for (i = 0; i < sn->nnodes; i++) {
		struct sm_node *n = sn->nodes[i];

		r.swidx[i] = -1;
		if (n->present && n->sw) {
			r.swidx[i] = (int)r.nsw;
			r.sw[r.nsw++] = n;
		}
	}
	r.dist = malloc((size_t)r.nsw * r.nsw + 1);
	r.load = calloc((size_t)r.nsw * 256 + 1, sizeof(*r.load));
	r.queue = malloc((r.nsw + 1) * sizeof(*r.queue));
	phase = malloc(r.nsw + 1);
	r.hosts = calloc(r.nsw + 1, sizeof(*r.hosts));
	r.w = malloc((r.nsw + 1) * sizeof(*r.w));
	r.w0 = malloc((r.nsw + 1) * sizeof(*r.w0));
	r.order = malloc((r.nsw + 1) * sizeof(*r.order));
	r.cand_off = malloc((r.nsw + 1) * sizeof(*r.cand_off));
	r.lft = malloc((r.nsw + 1) * sizeof(*r.lft));
	r.lft_hw = malloc((r.nsw + 1) * sizeof(*r.lft_hw));
	if (!r.dist || !r.load || !r.queue || !phase || !r.hosts || !r.w || !r.w0 || !r.order ||
	    !r.cand_off || !r.lft || !r.lft_hw || build_adj(&r))
		goto out;
	r.cur_d = UINT_MAX;
	for (s = 0; s < r.nsw; s++) {
		for (i = 1; i <= r.sw[s]->nports; i++)
			if (link_up(&r.sw[s]->port[i]) && !r.sw[s]->port[i].peer->node->sw)
				r.hosts[s]++;
		r.w0[s] = r.hosts[s] ? r.hosts[s] : 1;
		r.lft[s] = r.sw[s]->sw->lft;
		r.lft_hw[s] = r.sw[s]->sw->lft_hw;
	}
	if (updown)
		ranks(&r);
	if (sm->routing == SM_ROUTE_FTREE && !is_fat_tree(&r)) {
		sm_log(sm, 0, "not a fat tree: routing min-hop instead of ftree");
		updown = false;
	}
	/* hop counts to each destination switch: one search per switch */
	for (s = 0; s < r.nsw; s++)
		bfs(&r, s, r.dist + (size_t)s * r.nsw, phase, updown);
	for (s = 0; s < r.nsw; s++)
		memset(r.sw[s]->sw->lft, 0xff, SM_UCAST_LIDS);
	/* CA LIDs first, so the port counts balance the hosts' traffic; the
	 * switches' own LIDs (management only) after them */
	for (pass = 0; pass < 2; pass++)
		for (lid = 1; lid <= sn->max_lid; lid++) {
			struct sm_port *p = sn->lid_port[lid];

			if (p && p->node->present && !p->node->sw == !pass)
				route_lid(&r, p, (uint16_t)lid);
		}
	err = 0;
out:
	free(phase);
	free(r.hosts);
	free(r.w);
	free(r.w0);
	free(r.order);
	free(r.cand_off);
	free(r.lft);
	free(r.lft_hw);
	free(r.cand);
	free(r.adj);
	free(r.adj_off);
	free(r.queue);
	free(r.load);
	free(r.dist);
	free(r.sw);
	free(r.swidx);
	return err;
}
