/*
 * Unicast routing (IBA 18.2.4.3: a switch forwards by its LFT): for every
 * LID the SM gave, an output port on every switch.
 *
 * min-hop: the switch graph's hop counts to each destination switch (one
 * breadth-first search per switch), then for every LID and switch the
 * port towards a neighbour one hop nearer, the least used of those so far
 * (a count of LIDs routed out of each port), so the LIDs of a switch's
 * CAs, and the 2^LMC LIDs of one port, spread over the equal paths.
 *
 * up/down: the same choice restricted to paths that never go up after
 * going down: ranks are the hop distance from the roots (switches with no
 * CA attached that are farthest from the CAs, the spines of a fat tree; by
 * default every switch without CAs of least... the top rank), and a
 * switch's candidates towards a destination are those of the rank-aware
 * search. On a fat tree both give the same shortest up*down* paths; the
 * fat-tree engine (--routing ftree) is up/down with the ranks a tree gives.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sm.h"
#include "smp.h"

struct rt {
	unsigned nsw;
	struct sm_node **sw;	/* switches by index */
	int *swidx;		/* node index -> switch index, -1 */
	uint8_t *dist;		/* [from * nsw + to], 255 unreachable */
	uint32_t *load;		/* [sw * 256 + port] */
	uint8_t *down_ok;	/* up/down: [from * nsw + to] dist in the down-only graph */
	int *queue;
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

/* breadth-first from switch `to` over links; `dir` < 0 for every link,
 * else up/down: dist to `to` along paths that are up* then down* as seen
 * from the sender (built backwards: from `to` first only upward-from-to,
 * i.e. the last legs go down to `to`) */
static void bfs(struct rt *r, unsigned to, uint8_t *dist, bool updown)
{
	unsigned head = 0, tail = 0, i;
	/* state bit: 1 = the path from here on (towards to) has gone down
	 * only so far, so before it we may go up or down? -- kept simple:
	 * phase 0 nodes reached by climbing from `to` (their path to `to`
	 * goes down), phase 1 nodes reached after a descent (their path
	 * goes up first, then down) */
	uint8_t *phase = NULL;

	memset(dist, 255, r->nsw);
	if (updown) {
		phase = malloc(r->nsw);
		if (!phase)
			updown = false;
		else
			memset(phase, 0, r->nsw);
	}
	dist[to] = 0;
	r->queue[tail++] = (int)to;
	while (head < tail) {
		unsigned s = (unsigned)r->queue[head++];
		struct sm_node *n = r->sw[s];

		for (i = 1; i <= n->nports; i++) {
			struct sm_node *m = peer_switch(&n->port[i]);
			unsigned t;

			if (!m || r->swidx[m->index] < 0)
				continue;
			t = (unsigned)r->swidx[m->index];
			if (dist[t] != 255)
				continue;
			if (updown) {
				/* going from s to t backwards means a packet
				 * goes t -> s: it is "down" when s's rank is
				 * greater (farther from the roots) */
				bool pkt_down = r->sw[s]->rank > m->rank;

				/* a packet's path t -> s -> ... -> to is legal
				 * when after a down leg no up leg follows: s's
				 * remaining path has phase 0 (down only) or
				 * this leg is up */
				if (pkt_down && phase[s])
					continue;
				phase[t] = pkt_down ? phase[s] : 1;
			}
			dist[t] = (uint8_t)(dist[s] + 1 < 255 ? dist[s] + 1 : 254);
			r->queue[tail++] = (int)t;
		}
	}
	free(phase);
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

/* the port of switch s towards destination switch d (index), least used */
static uint8_t pick(struct rt *r, unsigned s, unsigned d)
{
	struct sm_node *n = r->sw[s];
	uint8_t want = r->dist[s * r->nsw + d], best = 255;
	uint32_t best_load = UINT32_MAX;
	unsigned i;

	if (want == 255 || want == 0)
		return 255;
	for (i = 1; i <= n->nports; i++) {
		struct sm_node *m = peer_switch(&n->port[i]);
		int t;

		if (!m || (t = r->swidx[m->index]) < 0)
			continue;
		if (r->dist[(unsigned)t * r->nsw + d] != want - 1)
			continue;
		if (r->load[s * 256 + i] < best_load) {
			best_load = r->load[s * 256 + i];
			best = (uint8_t)i;
		}
	}
	if (best != 255)
		r->load[s * 256 + best]++;
	return best;
}

int sm_route(struct sm *sm)
{
	struct sm_subnet *sn = &sm->sn;
	struct rt r = {0};
	unsigned i, s, lid;
	uint8_t *col = NULL;
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
	col = malloc(r.nsw + 1);
	if (!r.dist || !r.load || !r.queue || !col)
		goto out;
	if (updown)
		ranks(&r);
	/* dist[from][to]: one search per destination switch */
	for (s = 0; s < r.nsw; s++) {
		bfs(&r, s, col, updown);
		for (i = 0; i < r.nsw; i++)
			r.dist[i * r.nsw + s] = col[i];
	}
	for (s = 0; s < r.nsw; s++)
		memset(r.sw[s]->sw->lft, 0xff, SM_UCAST_LIDS);
	for (lid = 1; lid <= sn->max_lid; lid++) {
		struct sm_port *p = sn->lid_port[lid];
		struct sm_node *dsw;
		uint8_t last;
		unsigned d;

		if (!p || !p->node->present)
			continue;
		if (p->node->sw) {
			dsw = p->node;
			last = 0;
		} else {
			if (!link_up(p) || !p->peer->node->sw)
				continue;
			dsw = p->peer->node;
			last = p->peer->num;
		}
		if (r.swidx[dsw->index] < 0)
			continue;
		d = (unsigned)r.swidx[dsw->index];
		dsw->sw->lft[lid] = last;
		for (s = 0; s < r.nsw; s++)
			if (s != d)
				r.sw[s]->sw->lft[lid] = pick(&r, s, d);
	}
	err = 0;
out:
	free(col);
	free(r.queue);
	free(r.load);
	free(r.dist);
	free(r.sw);
	free(r.swidx);
	return err;
}
