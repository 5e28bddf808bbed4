/*
 * Multicast routing (IBA 14.2.5.12, 18.2.4.3.2): for each MLID whose group
 * changed (the SA's ops->mcast_changed, through sm_sa_mcast_hook) or, after
 * a heavy sweep, every MLID in use, a spanning tree over the switches that
 * connects the group's member ports, and the MulticastForwardingTable
 * blocks of the switches whose entries changed, by directed-route SMPs.
 *
 * The tree: a breadth-first search over the switch graph from each switch
 * a member hangs off gives its hop distances; the root is the switch whose
 * largest distance to a member switch is smallest (ties: the smallest sum,
 * then the first found). A BFS tree from the root; each member switch's
 * path up to the root is marked in both directions, and each member port's
 * switch port (port 0 for a switch's own port 0). A packet then leaves a
 * switch by every marked port but the one it came in (the fabric's rule),
 * so each member gets one copy.
 *
 * sm_switch.mft is what the switches hold (written blocks, as the SA's
 * MulticastForwardingTableRecord shows it); mft_want what the trees ask
 * for. A block (32 MLIDs x 16 ports, a position) is sent when the two
 * differ (and recorded in mft as written once the switch accepts it); a
 * switch whose MulticastFDBTop is below an MLID it must hold gets a
 * SwitchInfo Set first. Runs on the SM's thread, between sweeps.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sm.h"
#include "sm_sa.h"
#include "smp.h"

#define MC_MAX_MEMBERS 4096

static void mc_changed(void *ctx, uint16_t mlid)
{
	struct sm *sm = ctx;
	unsigned i = (unsigned)mlid - SM_MCAST_LID_BASE;

	if (mlid < SM_MCAST_LID_BASE || i >= SM_MC_LIDS)
		return;
	sm->mc_dirty[i / 64] |= 1ull << (i % 64);
	sm->mc_pending = true;
}

void sm_mcast_init(struct sm *sm) { sm_sa_mcast_hook(mc_changed, sm); }

void sm_mcast_all(struct sm *sm)
{
	struct sm_sa *sa = sm_sa_get();
	uint16_t mlids[256];
	unsigned n, i;

	if (!sa)
		return;
	n = sm_sa_mcast_mlids(sa, mlids, 256);
	for (i = 0; i < n && i < 256; i++)
		mc_changed(sm, mlids[i]);
	/* and every MLID a switch still forwards (a group gone) */
	for (i = 0; i < SM_MC_LIDS / 64; i++)
		sm->mc_dirty[i] |= sm->mc_held[i];
	sm->mc_pending = true;
}

static bool mask_test(const uint64_t *m, unsigned p) { return m[p / 64] >> (p % 64) & 1; }
static void mask_set(uint64_t *m, unsigned p) { m[p / 64] |= 1ull << (p % 64); }

/* BFS over present switches from `from`: dist[node index] (-1 unreached),
 * and for each reached switch the port it was reached by (parent side) */
static void bfs(const struct sm_subnet *sn, struct sm_node *from, int *dist, uint8_t *up_port,
		struct sm_node **queue)
{
	unsigned head = 0, tail = 0, i;

	for (i = 0; i < sn->nnodes; i++)
		dist[i] = -1;
	dist[from->index] = 0;
	up_port[from->index] = 0;
	queue[tail++] = from;
	while (head < tail) {
		struct sm_node *n = queue[head++];

		for (i = 1; i <= n->nports; i++) {
			struct sm_port *pe = n->port[i].peer;

			if (!n->port[i].present || !pe || !pe->node->sw || !pe->node->present ||
			    dist[pe->node->index] >= 0)
				continue;
			dist[pe->node->index] = dist[n->index] + 1;
			up_port[pe->node->index] = pe->num;
			queue[tail++] = pe->node;
		}
	}
}

/* The switch a member port hangs off and the switch port that leads to it */
static struct sm_node *member_switch(const struct sm_port *p, uint8_t *port)
{
	if (p->node->sw) {
		*port = 0;
		return p->node->present ? p->node : NULL;
	}
	if (!p->peer || !p->peer->node->sw || !p->peer->node->present)
		return NULL;
	*port = p->peer->num;
	return p->peer->node;
}

/* Fill `want` (a mask per node index) with the tree of one group */
static int mc_tree(struct sm *sm, uint16_t mlid, uint64_t (*want)[4], int *dist, uint8_t *up_port,
		   struct sm_node **queue, struct sm_node **msw)
{
	struct sm_subnet *sn = &sm->sn;
	struct sm_port **ports;
	struct sm_node *root = NULL;
	int n, i, best_max = -1;
	unsigned nmsw = 0, j, k;
	long best_sum = 0;

	ports = calloc(MC_MAX_MEMBERS, sizeof(*ports));
	if (!ports)
		return -ENOMEM;
	n = sm_sa_mcast_ports(sm_sa_get(), mlid, ports, MC_MAX_MEMBERS);
	if (n > MC_MAX_MEMBERS)
		n = MC_MAX_MEMBERS;
	for (i = 0; i < n; i++) {
		uint8_t port;
		struct sm_node *s = member_switch(ports[i], &port);

		if (!s)
			continue;
		mask_set(want[s->index], port);
		for (j = 0; j < nmsw && msw[j] != s; j++)
			;
		if (j == nmsw)
			msw[nmsw++] = s;
	}
	free(ports);
	if (nmsw < 2)
		return 0;
	/* the root: the least eccentric switch seen from the members */
	{
		int *far = calloc(sn->nnodes, sizeof(*far));
		long *sum = calloc(sn->nnodes, sizeof(*sum));

		if (!far || !sum) {
			free(far);
			free(sum);
			return -ENOMEM;
		}
		for (j = 0; j < nmsw; j++) {
			bfs(sn, msw[j], dist, up_port, queue);
			for (k = 0; k < sn->nnodes; k++) {
				if (dist[k] < 0 || far[k] < 0) {
					far[k] = -1;
					continue;
				}
				if (dist[k] > far[k])
					far[k] = dist[k];
				sum[k] += dist[k];
			}
		}
		for (k = 0; k < sn->nnodes; k++) {
			if (!sn->nodes[k]->sw || !sn->nodes[k]->present || far[k] < 0)
				continue;
			if (!root || far[k] < best_max ||
			    (far[k] == best_max && sum[k] < best_sum)) {
				root = sn->nodes[k];
				best_max = far[k];
				best_sum = sum[k];
			}
		}
		free(far);
		free(sum);
	}
	if (!root)
		return 0;
	/* the tree: each member switch's BFS path up to the root */
	bfs(sn, root, dist, up_port, queue);
	for (j = 0; j < nmsw; j++) {
		struct sm_node *s = msw[j];

		while (s != root && dist[s->index] > 0) {
			struct sm_port *up = &s->port[up_port[s->index]];

			if (!up->peer)
				break;
			if (mask_test(want[s->index], up->num) &&
			    mask_test(want[up->peer->node->index], up->peer->num))
				break; /* joined the tree already */
			mask_set(want[s->index], up->num);
			mask_set(want[up->peer->node->index], up->peer->num);
			s = up->peer->node;
		}
	}
	return 0;
}

static void on_mft_set(struct sm *sm, struct sm_req *rq, int err, const uint8_t *mad)
{
	struct sm_switch *s = rq->node->sw;
	unsigned block = rq->arg & 0x1ff, pos = rq->arg >> 28, i, p;

	if (err) {
		sm->errors++;
		sm_log(sm, 1, "MFT block %u position %u Set on %s: %s", block, pos, rq->node->desc,
		       err == -ETIMEDOUT ? "no answer" : "refused");
		return;
	}
	(void)mad; /* what was written (the answer echoes it, or lies) */
	for (i = 0; i < SM_MFT_BLOCK; i++) {
		uint16_t e = sof_get16(rq->mad + SOF_SMP_OFF_DATA + 2 * i);
		uint64_t *m = s->mft[block * SM_MFT_BLOCK + i];

		for (p = 0; p < 16 && pos * 16 + p <= SM_MAX_PORTS; p++) {
			unsigned bit = pos * 16 + p;

			m[bit / 64] &= ~(1ull << (bit % 64));
			m[bit / 64] |= (uint64_t)(e >> p & 1) << (bit % 64);
		}
	}
}

static void on_top_set(struct sm *sm, struct sm_req *rq, int err, const uint8_t *mad)
{
	struct sm_switch *s = rq->node->sw;

	if (err) {
		sm->errors++;
		sm_log(sm, 1, "SwitchInfo MulticastFDBTop Set on %s: refused", rq->node->desc);
		return;
	}
	s->mft_top = sof_get16(sm_smp_data(mad) + 18);
	memcpy(s->raw_switchinfo + 18, sm_smp_data(mad) + 18, 2);
}

static int switch_tables(struct sm_switch *s)
{
	if (!s->mft) {
		s->mft = calloc(s->mft_cap, sizeof(*s->mft));
		if (!s->mft)
			return -ENOMEM;
	}
	if (!s->mft_want) {
		s->mft_want = calloc(s->mft_cap, sizeof(*s->mft_want));
		if (!s->mft_want)
			return -ENOMEM;
	}
	return 0;
}

/* Send the blocks of node n's table that differ from what it holds */
static void mc_write(struct sm *sm, struct sm_node *n, const uint64_t *blocks)
{
	struct sm_switch *s = n->sw;
	unsigned npos = (n->nports + 1u + 15u) / 16u, b, pos, i, top = 0;
	/* a lying MulticastFDBCap may exceed the MLID space */
	unsigned nblk = (s->mft_cap < SM_MC_LIDS ? s->mft_cap : SM_MC_LIDS) / SM_MFT_BLOCK;
	struct sm_req *rq;

	for (b = 0; b < nblk; b++) {
		if (!(blocks[b / 64] >> (b % 64) & 1))
			continue;
		for (i = 0; i < SM_MFT_BLOCK; i++) {
			const uint64_t *w = s->mft_want[b * SM_MFT_BLOCK + i];

			if (w[0] | w[1] | w[2] | w[3])
				top = SM_MCAST_LID_BASE + b * SM_MFT_BLOCK + i;
		}
	}
	if (top && s->mft_top < top) {
		uint8_t d[64];

		memcpy(d, s->raw_switchinfo, 64);
		sof_put16(d + 6, s->lft_top);
		sof_put16(d + 18, (uint16_t)(SM_MCAST_LID_BASE + nblk * SM_MFT_BLOCK - 1));
		d[11] &= (uint8_t)~0x04;
		rq = sm_smp_dr(sm, n->path, n->hops, SOF_METHOD_SET, SOF_ATTR_SWITCH_INFO, 0, d,
			       on_top_set);
		if (rq)
			rq->node = n;
	}
	for (b = 0; b < nblk; b++) {
		if (!(blocks[b / 64] >> (b % 64) & 1))
			continue;
		for (pos = 0; pos < npos; pos++) {
			uint8_t d[64];
			bool diff = false;

			memset(d, 0, sizeof(d));
			for (i = 0; i < SM_MFT_BLOCK; i++) {
				const uint64_t *w = s->mft_want[b * SM_MFT_BLOCK + i];
				const uint64_t *h = s->mft[b * SM_MFT_BLOCK + i];
				uint16_t e = (uint16_t)(w[pos / 4] >> (pos % 4 * 16));

				diff |= e != (uint16_t)(h[pos / 4] >> (pos % 4 * 16));
				sof_put16(d + 2 * i, e);
			}
			if (!diff)
				continue;
			rq = sm_smp_dr(sm, n->path, n->hops, SOF_METHOD_SET, SOF_ATTR_MFT,
				       (uint32_t)pos << 28 | b, d, on_mft_set);
			if (rq) {
				rq->node = n;
				rq->arg = (uint32_t)pos << 28 | b;
				sm->mft_blocks++;
			}
		}
	}
}

int sm_mcast_run(struct sm *sm)
{
	struct sm_subnet *sn = &sm->sn;
	uint64_t(*want)[4] = NULL;
	uint64_t *blocks = NULL; /* per node: MFT blocks touched, a bitmap */
	int *dist = NULL, err = -ENOMEM;
	uint8_t *up_port = NULL;
	struct sm_node **queue = NULL, **msw = NULL;
	unsigned nb = SM_MC_LIDS / SM_MFT_BLOCK / 64, i, k;

	if (!sm->mc_pending || !sm_sa_get())
		return 0;
	sm->mc_pending = false;
	want = calloc(sn->nnodes, sizeof(*want));
	blocks = calloc((size_t)sn->nnodes * nb, sizeof(*blocks));
	dist = calloc(sn->nnodes, sizeof(*dist));
	up_port = calloc(sn->nnodes, 1);
	queue = calloc(sn->nnodes, sizeof(*queue));
	msw = calloc(sn->nnodes, sizeof(*msw));
	if (!want || !blocks || !dist || !up_port || !queue || !msw)
		goto out;
	sm->mft_blocks = 0;
	for (i = 0; i < SM_MC_LIDS; i++) {
		uint16_t mlid = (uint16_t)(SM_MCAST_LID_BASE + i);

		if (!(sm->mc_dirty[i / 64] >> (i % 64) & 1))
			continue;
		sm->mc_dirty[i / 64] &= ~(1ull << (i % 64));
		memset(want, 0, sn->nnodes * sizeof(*want));
		err = mc_tree(sm, mlid, want, dist, up_port, queue, msw);
		if (err)
			goto out;
		for (k = 0; k < sn->nnodes; k++) {
			struct sm_node *n = sn->nodes[k];
			struct sm_switch *s = n->sw;

			if (!s || !n->present || i >= s->mft_cap)
				continue;
			if (switch_tables(s))
				goto out;
			memcpy(s->mft_want[i], want[k], sizeof(want[k]));
			if (memcmp(s->mft[i], want[k], sizeof(want[k])))
				blocks[k * nb + i / SM_MFT_BLOCK / 64] |=
				    1ull << (i / SM_MFT_BLOCK % 64);
			if (want[k][0] | want[k][1] | want[k][2] | want[k][3])
				sm->mc_held[i / 64] |= 1ull << (i % 64);
		}
	}
	for (k = 0; k < sn->nnodes; k++) {
		uint64_t any = 0;

		for (i = 0; i < nb; i++)
			any |= blocks[k * nb + i];
		if (any)
			mc_write(sm, sn->nodes[k], blocks + k * nb);
	}
	if (sm->mft_blocks)
		sm_log(sm, 1, "multicast: %u MFT blocks queued", sm->mft_blocks);
	err = 0;
out:
	free(want);
	free(blocks);
	free(dist);
	free(up_port);
	free(queue);
	free(msw);
	return err;
}
