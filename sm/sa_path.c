/*
 * PathRecord and MultiPathRecord (IBA 15.2.5.16, 15.2.5.20): paths found
 * by walking the forwarding tables the SM wrote (the model's lft_hw, else
 * lft) from the source port to the destination LID, link by link, so a
 * path exists only where the fabric would carry it; its MTU and rate are
 * the smallest of the links it crosses. With LMC > 0 a port pair has
 * several paths (one per source/destination LID pair): the pairs with
 * equal LID offsets come first (the distinct routes), then the rest;
 * the first is preferred (Preference 0).
 *
 * The query's MTU, rate and packet lifetime go through their selectors
 * (greater than, less than, exactly, largest); NumbPath caps the paths per
 * port pair; SGID/DGID/SLID/DLID pick the ports; every other selected
 * component must equal what the path carries (P_Key 0xffff, the SL of
 * the path's partition (sm_sa_set_part_sl, else 0), reversible, hop limit 0
 * inside the subnet). Every path has the SA's PacketLifeTime (--packet_life_time),
 * but a loopback path (a port to itself) 0 (IBA table 205, as OpenSM).
 */
#include "sa_int.h"

#include <string.h>

#define PR_DESC (&sof_sa_recs[SOF_SA_REC_PATH])
#define BIT(c) (1ull << (c))
/* components handled here rather than compared as they are */
#define PR_SPECIAL                                                                                 \
	(BIT(SOF_PR_SGID) | BIT(SOF_PR_DGID) | BIT(SOF_PR_SLID) | BIT(SOF_PR_DLID) |               \
	 BIT(SOF_PR_NUMB_PATH) | BIT(SOF_PR_MTU_SEL) | BIT(SOF_PR_MTU) | BIT(SOF_PR_RATE_SEL) |    \
	 BIT(SOF_PR_RATE) | BIT(SOF_PR_LIFE_SEL) | BIT(SOF_PR_LIFE) | BIT(SOF_PR_PREFERENCE))
#define MAX_PATH_HOPS 64

/* IBA rate codes (table 226, PathRecord:Rate) and their speeds in
 * 100 Mb/s units */
static const struct {
	uint8_t code;
	uint16_t r;
} rates[] = {
    {2, 25}, {5, 50}, {3, 100}, {6, 200}, {4, 300}, {7, 400}, {8, 600}, {9, 800}, {10, 1200},
};

static unsigned rate_of_code(uint8_t code)
{
	for (unsigned i = 0; i < sizeof(rates) / sizeof(rates[0]); i++)
		if (rates[i].code == code)
			return rates[i].r;
	return 0;
}

static uint8_t code_of_rate(unsigned r)
{
	uint8_t code = 2;

	for (unsigned i = 0; i < sizeof(rates) / sizeof(rates[0]); i++)
		if (rates[i].r <= r)
			code = rates[i].code;
	return code;
}

/* a link's rate from PortInfo's active width and speed (IBA 14.2.5.6) */
static unsigned link_rate(const struct sm_port *p)
{
	unsigned lanes, lane;

	switch (p->width_active) {
	case 1:
		lanes = 1;
		break;
	case 4:
		lanes = 8;
		break;
	case 8:
		lanes = 12;
		break;
	case 16:
		lanes = 2;
		break;
	default:
		lanes = 4;
		break;
	}
	switch (p->speed_active) {
	case 2:
		lane = 50;
		break;
	case 4:
		lane = 100;
		break;
	default:
		lane = 25;
		break;
	}
	return lanes * lane;
}

static uint8_t link_mtu(const struct sm_port *p)
{
	uint8_t m = p->mtu_cap ? p->mtu_cap : 5;

	if (p->neighbor_mtu && p->neighbor_mtu < m)
		m = p->neighbor_mtu;
	if (p->peer && p->peer->mtu_cap && p->peer->mtu_cap < m)
		m = p->peer->mtu_cap;
	return m;
}

static bool owns_lid(const struct sm_port *p, uint16_t lid)
{
	return p->lid && lid >= p->lid && lid < p->lid + (1u << p->lmc);
}

/* Walk from port sp to dlid through the switches' tables: the hops, the
 * path's MTU and rate. false when the tables lead nowhere (no entry, a
 * port without a link, a loop). */
static bool walk(const struct sm_port *sp, uint16_t dlid, unsigned *hops, uint8_t *mtu,
		 unsigned *rate)
{
	const struct sm_node *n = sp->node;
	unsigned h;

	*hops = 0;
	*mtu = sp->mtu_cap ? sp->mtu_cap : 5;
	*rate = link_rate(sp);
	if (owns_lid(sp, dlid))
		return true;
	if (n->type != SOF_NODE_SWITCH) {
		if (!sp->peer)
			return false;
		*mtu = link_mtu(sp);
		*rate = link_rate(sp);
		n = sp->peer->node;
		*hops = 1;
	} else {
		*rate = ~0u;
	}
	for (h = 0; h < MAX_PATH_HOPS; h++) {
		const struct sm_port *out, *in;
		uint8_t port;

		if (!n->present)
			return false;
		if (n->type != SOF_NODE_SWITCH) /* a CA: the end, if it is the right one */
			break;
		if (owns_lid(&n->port[0], dlid))
			return true;
		port = sa_lft(n->sw, dlid);
		if (!port || port > n->nports)
			return false;
		out = &n->port[port];
		in = out->peer;
		if (!out->present || !in)
			return false;
		if (link_mtu(out) < *mtu)
			*mtu = link_mtu(out);
		if (link_rate(out) < *rate)
			*rate = link_rate(out);
		(*hops)++;
		n = in->node;
		if (n->type != SOF_NODE_SWITCH)
			return n->present && owns_lid(in, dlid);
	}
	return false;
}

/* Apply a selector (IBA 15.2.5.16: 0 greater than, 1 less than, 2
 * exactly, 3 largest available) to what the path offers (`have`, in an
 * ordered unit); *out: what the record carries. false: no such path. */
static bool select_val(bool given, uint8_t sel, unsigned want, unsigned have, unsigned *out)
{
	*out = have;
	if (!given)
		return true;
	switch (sel) {
	case 0:
		return have > want;
	case 1:
		return have < want;
	case 2:
		*out = want;
		return have >= want;
	default:
		return true;
	}
}

/* The query of one PathRecord request (the parts handled here) */
struct pr_query {
	struct sof_sa_path q;
	uint64_t mask;
	unsigned numb_path; /* 0: every path */
};

static bool has(const struct pr_query *pq, unsigned c) { return pq->mask & BIT(c); }

/* one port pair being answered */
struct pair {
	const struct pr_query *pq;
	const struct sm_sa *sa;
	const struct sm_subnet *sn;
	const struct sm_port *sp, *dp;
	unsigned max, emitted;
	struct sa_out *o;
};

unsigned sa_pkey_memb(const struct sm_port *p, uint16_t pkey)
{
	unsigned m = 0;

	if (!p->pkeys_set)
		return (pkey & 0x7fff) == 0x7fff ? 2 : 0;
	for (unsigned i = 0; i < SM_PKEY_MAX; i++)
		if (p->pkeys[i] & 0x7fff && (p->pkeys[i] & 0x7fff) == (pkey & 0x7fff))
			m |= p->pkeys[i] & 0x8000 ? 2 : 1;
	return m & 2 ? 2 : m;
}

/* Emit the path from LID offset si of sp to offset di of dp, if the
 * tables carry it and the selectors allow it. false: stop. */
static bool one_path(struct pair *c, unsigned si, unsigned di)
{
	const struct pr_query *pq = c->pq;
	uint16_t slid = has(pq, SOF_PR_SLID) ? pq->q.slid : (uint16_t)(sa_port_lid(c->sp) + si);
	uint16_t dlid = has(pq, SOF_PR_DLID) ? pq->q.dlid : (uint16_t)(sa_port_lid(c->dp) + di);
	unsigned hops, rate, v, before = c->o->n;
	struct sof_sa_path p;
	uint8_t rec[64], mtu;

	if (!walk(c->sp, dlid, &hops, &mtu, &rate))
		return true;
	memset(&p, 0, sizeof(p));
	p.service_id = pq->q.service_id;
	sa_port_gid(c->sn, c->dp, p.dgid);
	sa_port_gid(c->sn, c->sp, p.sgid);
	p.dlid = dlid;
	p.slid = slid;
	p.reversible = true;
	p.pkey = SOF_PKEY_DEFAULT;
	/* a P_Key asked for: a path only within a partition both ends are
	 * in, one of them a full member (IBA 10.9.3) */
	if (has(pq, SOF_PR_PKEY)) {
		unsigned ms = sa_pkey_memb(c->sp, pq->q.pkey);
		unsigned md = sa_pkey_memb(c->dp, pq->q.pkey);

		if (!ms || !md || (ms == 1 && md == 1))
			return true;
		p.pkey = pq->q.pkey;
	}
	p.sl = sa_part_sl(c->sa, p.pkey);
	p.mtu_sel = p.rate_sel = p.life_sel = 2;
	/* a smaller MTU than the path's is always usable: "less than"
	 * lowers it (a rate is not lowered: the links run at theirs) */
	if (has(pq, SOF_PR_MTU) && has(pq, SOF_PR_MTU_SEL) && pq->q.mtu_sel == 1) {
		v = pq->q.mtu > mtu ? mtu : pq->q.mtu - 1u;
		if (!pq->q.mtu || !v)
			return true;
	} else if (!select_val(has(pq, SOF_PR_MTU), has(pq, SOF_PR_MTU_SEL) ? pq->q.mtu_sel : 2,
			       pq->q.mtu, mtu, &v) ||
		   !v) {
		return true;
	}
	p.mtu = (uint8_t)v;
	if (!select_val(has(pq, SOF_PR_RATE), has(pq, SOF_PR_RATE_SEL) ? pq->q.rate_sel : 2,
			rate_of_code(pq->q.rate), rate, &v))
		return true;
	p.rate = code_of_rate(v);
	if (!select_val(has(pq, SOF_PR_LIFE), has(pq, SOF_PR_LIFE_SEL) ? pq->q.life_sel : 2,
			pq->q.life, c->sp == c->dp ? 0 : c->sa->pkt_life, &v) ||
	    v > 63)
		return true;
	p.life = (uint8_t)v;
	p.preference = c->emitted ? 1 : 0;
	sof_sa_path_pack(rec, &p);
	if (!sa_emit(c->o, rec))
		return false;
	c->emitted += c->o->n > before;
	return !(c->max && c->emitted >= c->max) && !(pq->numb_path && c->emitted >= pq->numb_path);
}

/* Emit the paths from sp to dp, at most max (0: all): first the LID pairs
 * with equal offsets (distinct routes when the engine spreads LMC LIDs),
 * then the others. false: stop generating. */
static bool port_pair(const struct pr_query *pq, const struct sm_sa *sa, const struct sm_port *sp,
		      const struct sm_port *dp, unsigned max, struct sa_out *o)
{
	struct pair c = {.pq = pq, .sa = sa, .sn = sa->sn, .sp = sp, .dp = dp, .max = max, .o = o};
	unsigned ns = has(pq, SOF_PR_SLID) ? 1 : 1u << sp->lmc;
	unsigned nd = has(pq, SOF_PR_DLID) ? 1 : 1u << dp->lmc;
	unsigned k, si, di, diag = ns > nd ? ns : nd;

	if (!sa_port_lid(sp) || !sa_port_lid(dp))
		return true;
	for (k = 0; k < diag; k++)
		if (!one_path(&c, k % ns, k % nd))
			goto out;
	for (si = 0; si < ns; si++)
		for (di = 0; di < nd; di++) {
			/* skip the pairs the first loop took (ns, nd: powers of 2) */
			if (ns >= nd ? si % nd == di : di % ns == si)
				continue;
			if (!one_path(&c, si, di))
				goto out;
		}
	return true;
out:
	/* stopped by NumbPath or max: other port pairs may follow; by a
	 * full collector or an error: stop everything */
	return !o->err && o->n < o->limit;
}

/* The ports a query names by GID and/or LID (*port; NULL: not named).
 * Returns 0 or the status to answer with. */
static uint16_t named_port(const struct sm_subnet *sn, bool by_gid, const uint8_t *gid, bool by_lid,
			   uint16_t lid, struct sm_port **port)
{
	struct sm_port *g = NULL, *l = NULL;

	*port = NULL;
	if (by_gid) {
		g = sa_port_by_gid(sn, gid);
		if (!g)
			return SOF_SA_ST_INVALID_GID;
	}
	if (by_lid) {
		l = sm_port_by_lid(sn, lid);
		if (l && l->node->type == SOF_NODE_SWITCH)
			l = &l->node->port[0];
		if (!l || !l->node->present)
			return SOF_SA_ST_NO_RECORDS;
	}
	if (g && l && g != l)
		return SOF_SA_ST_NO_RECORDS;
	*port = g ? g : l;
	return 0;
}

static bool is_endport(const struct sm_port *p)
{
	return p->present && p->lid && (p->node->type != SOF_NODE_SWITCH || p->num == 0);
}

void sa_gen_path(struct sm_sa *sa, const struct sa_q *q, struct sa_out *o)
{
	const struct sm_subnet *sn = sa->sn;
	struct pr_query pq;
	struct sm_port *sp, *dp;
	uint16_t st;

	sof_sa_path_unpack(o->query, &pq.q);
	pq.mask = o->mask;
	pq.numb_path = has(&pq, SOF_PR_NUMB_PATH) ? pq.q.numb_path : 0;
	o->mask &= ~PR_SPECIAL;
	st =
	    named_port(sn, has(&pq, SOF_PR_SGID), pq.q.sgid, has(&pq, SOF_PR_SLID), pq.q.slid, &sp);
	if (!st && !sp && q->from)
		sp = sm_port_by_lid(sn, q->from->lid);
	if (!st && !sp)
		st = SOF_SA_ST_INSUFFICIENT_COMPONENTS;
	if (!st)
		st = named_port(sn, has(&pq, SOF_PR_DGID), pq.q.dgid, has(&pq, SOF_PR_DLID),
				pq.q.dlid, &dp);
	if (st) {
		o->status = st;
		return;
	}
	if (sp->node->type == SOF_NODE_SWITCH)
		sp = &sp->node->port[0];
	if (dp) {
		port_pair(&pq, sa, sp, dp, 0, o);
		return;
	}
	if (q->r->method == SOF_SA_GET) {
		o->status = SOF_SA_ST_INSUFFICIENT_COMPONENTS;
		return;
	}
	/* GetTable with no destination: every end port */
	for (unsigned i = 0; i < sn->nnodes; i++) {
		struct sm_node *n = sn->nodes[i];

		if (!n->present)
			continue;
		for (unsigned j = 0; j <= n->nports; j++)
			if (is_endport(&n->port[j]) && !port_pair(&pq, sa, sp, &n->port[j], 0, o))
				return;
	}
}

/* GetMulti(MultiPathRecord): the PathRecords between every SGID and
 * DGID it lists, NumbPath of them in all (IBA 15.2.5.20). */
uint16_t sa_multipath(struct sm_sa *sa, const struct sa_q *q, struct sa_out *o)
{
	static const uint8_t map[][2] = {
	    {SOF_MPR_RAW, SOF_PR_RAW},
	    {SOF_MPR_FLOW_LABEL, SOF_PR_FLOW_LABEL},
	    {SOF_MPR_HOP_LIMIT, SOF_PR_HOP_LIMIT},
	    {SOF_MPR_TCLASS, SOF_PR_TCLASS},
	    {SOF_MPR_REVERSIBLE, SOF_PR_REVERSIBLE},
	    {SOF_MPR_PKEY, SOF_PR_PKEY},
	    {SOF_MPR_QOS_CLASS, SOF_PR_QOS_CLASS},
	    {SOF_MPR_SL, SOF_PR_SL},
	    {SOF_MPR_MTU_SEL, SOF_PR_MTU_SEL},
	    {SOF_MPR_MTU, SOF_PR_MTU},
	    {SOF_MPR_RATE_SEL, SOF_PR_RATE_SEL},
	    {SOF_MPR_RATE, SOF_PR_RATE},
	    {SOF_MPR_LIFE_SEL, SOF_PR_LIFE_SEL},
	    {SOF_MPR_LIFE, SOF_PR_LIFE},
	};
	const struct sof_sa_req *r = q->r;
	struct sof_sa_multipath m;
	struct pr_query pq;
	uint8_t query[64];
	unsigned s, d, total = 0;

	if (r->data_len < SOF_SA_MPR_GIDS_OFF || sof_sa_multipath_unpack(r->data, &m))
		return SOF_SA_ST_REQ_INVALID;
	if (SOF_SA_MPR_GIDS_OFF + 16u * (m.sgid_count + m.dgid_count) > r->data_len)
		return SOF_SA_ST_REQ_INVALID;
	if (!(r->comp_mask & BIT(SOF_MPR_SGID_COUNT)) ||
	    !(r->comp_mask & BIT(SOF_MPR_DGID_COUNT)) || !m.sgid_count || !m.dgid_count)
		return SOF_SA_ST_INSUFFICIENT_COMPONENTS;
	memset(&pq, 0, sizeof(pq));
	for (unsigned i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (r->comp_mask & BIT(map[i][0]))
			pq.mask |= BIT(map[i][1]);
	pq.q.flow_label = m.flow_label;
	pq.q.hop_limit = m.hop_limit;
	pq.q.tclass = m.tclass;
	pq.q.raw = m.raw;
	pq.q.reversible = m.reversible;
	pq.q.pkey = m.pkey;
	pq.q.qos_class = m.qos_class;
	pq.q.sl = m.sl;
	pq.q.mtu_sel = m.mtu_sel;
	pq.q.mtu = m.mtu;
	pq.q.rate_sel = m.rate_sel;
	pq.q.rate = m.rate;
	pq.q.life_sel = m.life_sel;
	pq.q.life = m.life;
	pq.numb_path = (r->comp_mask & BIT(SOF_MPR_NUMB_PATH)) ? m.numb_path : 0;
	sof_sa_path_pack(query, &pq.q);
	o->query = query;
	o->mask = pq.mask & ~PR_SPECIAL;
	for (s = 0; s < m.sgid_count; s++) {
		struct sm_port *sp = sa_port_by_gid(sa->sn, m.gids[s]);

		if (!sp)
			return SOF_SA_ST_INVALID_GID;
		for (d = 0; d < m.dgid_count; d++) {
			struct sm_port *dp = sa_port_by_gid(sa->sn, m.gids[m.sgid_count + d]);
			unsigned before = o->n, left = pq.numb_path ? pq.numb_path - total : 0;

			if (!dp)
				return SOF_SA_ST_INVALID_GID;
			if (!port_pair(&pq, sa, sp, dp, left, o))
				return 0;
			total += o->n - before;
			if (pq.numb_path && total >= pq.numb_path)
				return 0;
		}
	}
	return 0;
}
