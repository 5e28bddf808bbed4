/*
 * Multicast groups (IBA 15.2.5.17): MCMemberRecord Set joins a port to a
 * group, creating it when it does not exist (an MGID of zero gets one
 * assigned, IBA 15.2.5.17.1; an MLID is taken from 0xc000 up), Delete
 * takes the JoinState bits it names away and drops the member when none
 * are left, and a group whose last member left is deleted (unless the SA
 * made it itself: the IPoIB broadcast groups). JoinState bits: FullMember,
 * NonMember, SendOnlyNonMember, SendOnlyFullMember; only a full member
 * (or a send-only full member) creates a group. A join that names
 * parameters different from the group's (Q_Key, P_Key, SL, MTU and rate
 * through their selectors, ...) is refused with ERR_REQ_INVALID, and so
 * is a port that is no member of the group's partition. The groups the SA
 * makes itself carry their partition's SL (sm_sa_set_part_sl), and a new
 * IPoIB group must agree with its partition's broadcast group.
 *
 * The SM builds each group's spanning tree and MFTs: ops->mcast_changed
 * tells it a group's members changed, sm_sa_mcast_ports lists them.
 */
#include "sa_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define BIT(c) (1ull << (c))
#define JOIN_REQUIRED (BIT(SOF_MCMR_MGID) | BIT(SOF_MCMR_PORT_GID) | BIT(SOF_MCMR_JOIN_STATE))
/* IBA 15.2.5.17.2 (o15-0.2.3): what a request creating a group must name */
#define CREATE_REQUIRED                                                                            \
	(JOIN_REQUIRED | BIT(SOF_MCMR_QKEY) | BIT(SOF_MCMR_PKEY) | BIT(SOF_MCMR_SL) |              \
	 BIT(SOF_MCMR_FLOW_LABEL) | BIT(SOF_MCMR_TCLASS))
#define JOIN_SEND_ONLY_FULL 0x8
#define MLID_LAST (SM_MCAST_LID_BASE + SA_MAX_GROUPS - 1)

static const uint8_t zero_gid[16];

static struct sa_group *group_by_mgid(struct sm_sa *sa, const uint8_t mgid[16])
{
	for (unsigned i = 0; i < sa->ngrp; i++)
		if (!memcmp(sa->grp[i].p.mgid, mgid, 16))
			return &sa->grp[i];
	return NULL;
}

static struct sa_group *group_by_mlid(const struct sm_sa *sa, uint16_t mlid)
{
	for (unsigned i = 0; i < sa->ngrp; i++)
		if (sa->grp[i].p.mlid == mlid)
			return &sa->grp[i];
	return NULL;
}

static uint16_t free_mlid(const struct sm_sa *sa)
{
	for (uint16_t l = SM_MCAST_LID_BASE; l <= MLID_LAST; l++)
		if (!group_by_mlid(sa, l))
			return l;
	return 0;
}

static void changed(struct sm_sa *sa, uint16_t mlid)
{
	if (sa->ops && sa->ops->mcast_changed)
		sa->ops->mcast_changed(sa->ctx, mlid);
}

static struct sa_group *group_add(struct sm_sa *sa, const struct sof_sa_mcmember *p)
{
	struct sa_group *g;

	if (sa->ngrp == SA_MAX_GROUPS)
		return NULL;
	if (sa->ngrp == sa->grp_cap) {
		unsigned cap = sa->grp_cap ? sa->grp_cap * 2 : 16;
		struct sa_group *n = realloc(sa->grp, cap * sizeof(*n));

		if (!n)
			return NULL;
		sa->grp = n;
		sa->grp_cap = cap;
	}
	g = &sa->grp[sa->ngrp++];
	memset(g, 0, sizeof(*g));
	g->p = *p;
	memset(g->p.port_gid, 0, 16);
	g->p.join_state = 0;
	g->p.proxy_join = false;
	return g;
}

static void group_del(struct sm_sa *sa, struct sa_group *g)
{
	uint16_t mlid = g->p.mlid;
	uint8_t mgid[16];

	memcpy(mgid, g->p.mgid, 16);
	free(g->m);
	*g = sa->grp[--sa->ngrp];
	changed(sa, mlid);
	sa_report_mcast(sa, 67, mgid);
}

static struct sa_member *member_find(struct sa_group *g, const uint8_t gid[16])
{
	for (unsigned i = 0; i < g->nm; i++)
		if (!memcmp(g->m[i].gid, gid, 16))
			return &g->m[i];
	return NULL;
}

static struct sa_member *member_add(struct sa_group *g, const uint8_t gid[16])
{
	struct sa_member *m;

	if (g->nm == SA_MAX_MEMBERS)
		return NULL;
	if (g->nm == g->cap) {
		unsigned cap = g->cap ? g->cap * 2 : 8;
		struct sa_member *n = realloc(g->m, cap * sizeof(*n));

		if (!n)
			return NULL;
		g->m = n;
		g->cap = cap;
	}
	m = &g->m[g->nm++];
	memset(m, 0, sizeof(*m));
	memcpy(m->gid, gid, 16);
	return m;
}

/* the record of member m of g (m NULL: the group alone) */
static void group_rec(const struct sa_group *g, const struct sa_member *m, uint8_t *rec)
{
	struct sof_sa_mcmember r = g->p;

	if (m) {
		memcpy(r.port_gid, m->gid, 16);
		r.join_state = m->join_state;
		r.proxy_join = m->proxy;
	}
	sof_sa_mcmember_pack(rec, &r);
}

void sa_gen_mcmember(struct sm_sa *sa, const struct sa_q *q, struct sa_out *o)
{
	uint8_t rec[56];

	(void)q;
	for (unsigned i = 0; i < sa->ngrp; i++) {
		const struct sa_group *g = &sa->grp[i];

		if (!g->nm) {
			group_rec(g, NULL, rec);
			if (!sa_emit(o, rec))
				return;
		}
		for (unsigned j = 0; j < g->nm; j++) {
			group_rec(g, &g->m[j], rec);
			if (!sa_emit(o, rec))
				return;
		}
	}
}

/* Whether a value the group has satisfies a selector (IBA 15.2.5.17:
 * 0 greater than, 1 less than, 2 exactly, 3 largest) */
static bool sel_ok(uint8_t sel, unsigned want, unsigned have)
{
	switch (sel) {
	case 0:
		return have > want;
	case 1:
		return have < want;
	case 2:
		return have == want;
	default:
		return true;
	}
}

/* A join's parameters against an existing group */
static bool compatible(const struct sa_group *g, const struct sof_sa_mcmember *m, uint64_t mask)
{
	const struct sof_sa_mcmember *p = &g->p;

	if ((mask & BIT(SOF_MCMR_QKEY) && m->qkey != p->qkey) ||
	    (mask & BIT(SOF_MCMR_MLID) && m->mlid && m->mlid != p->mlid) ||
	    (mask & BIT(SOF_MCMR_PKEY) && (m->pkey & 0x7fff) != (p->pkey & 0x7fff)) ||
	    (mask & BIT(SOF_MCMR_SL) && m->sl != p->sl) ||
	    (mask & BIT(SOF_MCMR_FLOW_LABEL) && m->flow_label != p->flow_label) ||
	    (mask & BIT(SOF_MCMR_TCLASS) && m->tclass != p->tclass))
		return false;
	if (mask & BIT(SOF_MCMR_MTU) &&
	    !sel_ok(mask & BIT(SOF_MCMR_MTU_SEL) ? m->mtu_sel : 2, m->mtu, p->mtu))
		return false;
	/* rate codes are not ordered by speed; only "exactly" is checked */
	if (mask & BIT(SOF_MCMR_RATE) && (!(mask & BIT(SOF_MCMR_RATE_SEL)) || m->rate_sel == 2) &&
	    m->rate != p->rate)
		return false;
	return true;
}

/* A new IPoIB group (RFC 4391 signature 0x401B or 0x601B) other than the
 * broadcast group itself: what it names must agree with its partition's
 * broadcast group (same scope and P_Key), as OpenSM checks by default, so
 * its Q_Key and the partition's SL hold for every IPoIB group. No
 * broadcast group: nothing to agree with. */
static bool ipoib_ok(struct sm_sa *sa, const struct sof_sa_mcmember *m, uint64_t mask)
{
	uint16_t sig = sof_get16(m->mgid + 2);
	const struct sa_group *b;
	uint8_t bmgid[16];

	if (sig != 0x401b && sig != 0x601b)
		return true;
	sm_sa_ipoib_mgid(bmgid, sof_get16(m->mgid + 4));
	bmgid[1] = m->mgid[1];
	if (!memcmp(bmgid, m->mgid, 16) || !(b = group_by_mgid(sa, bmgid)))
		return true;
	return compatible(b, m,
			  mask & ~(BIT(SOF_MCMR_MLID) | BIT(SOF_MCMR_MTU) | BIT(SOF_MCMR_RATE)));
}

/* The parameters of a new group: what the request names, the port's
 * MTU and rate where it leaves them to the SA */
static void new_params(struct sm_sa *sa, const struct sm_port *port, struct sof_sa_mcmember *m,
		       uint64_t mask)
{
	uint8_t cap = port->mtu_cap ? port->mtu_cap : 4;

	if (!(mask & BIT(SOF_MCMR_MTU)))
		m->mtu = cap;
	else if (mask & BIT(SOF_MCMR_MTU_SEL))
		switch (m->mtu_sel) {
		case 0:
			m->mtu = m->mtu < cap ? cap : (uint8_t)(m->mtu + 1);
			break;
		case 1:
			m->mtu = (uint8_t)(m->mtu > 1 ? m->mtu - 1 : 1);
			break;
		case 3:
			m->mtu = cap;
			break;
		default:
			break;
		}
	m->mtu_sel = 2;
	if (!(mask & BIT(SOF_MCMR_RATE)) || (mask & BIT(SOF_MCMR_RATE_SEL) && m->rate_sel != 2))
		m->rate = 3; /* 10 Gb/s: 4x SDR, what every link here carries */
	m->rate_sel = 2;
	if (!(mask & BIT(SOF_MCMR_LIFE)) || (mask & BIT(SOF_MCMR_LIFE_SEL) && m->life_sel != 2))
		m->life = SA_PKT_LIFE;
	m->life_sel = 2;
	if (!m->mgid[0] && !memcmp(m->mgid, zero_gid, 16)) {
		/* SA-assigned MGID (IBA 15.2.5.17.1.1): FF1x:A01B:P_Key:... */
		uint8_t scope = m->scope ? m->scope : 2;

		m->mgid[0] = 0xff;
		m->mgid[1] = (uint8_t)(0x10 | scope);
		m->mgid[2] = 0xa0;
		m->mgid[3] = 0x1b;
		sof_put16(m->mgid + 4, m->pkey);
		sof_put64(m->mgid + 8, ++sa->mgid_seq);
	}
	m->scope = m->mgid[1] & 0x0f;
}

uint16_t sa_mcmember_join(struct sm_sa *sa, const struct sa_q *q, uint8_t *rec)
{
	uint64_t mask = q->r->comp_mask;
	struct sof_sa_mcmember m;
	struct sm_port *port;
	struct sa_group *g;
	struct sa_member *mb;
	bool created = false;
	uint8_t before;

	sof_sa_mcmember_unpack(rec, &m);
	if ((mask & JOIN_REQUIRED) != JOIN_REQUIRED)
		return SOF_SA_ST_INSUFFICIENT_COMPONENTS;
	if (!m.join_state)
		return SOF_SA_ST_REQ_INVALID;
	port = sa_port_by_gid(sa->sn, m.port_gid);
	if (!port)
		return SOF_SA_ST_INVALID_GID;
	g = memcmp(m.mgid, zero_gid, 16) ? group_by_mgid(sa, m.mgid) : NULL;
	if (!g && (mask & CREATE_REQUIRED) != CREATE_REQUIRED)
		return SOF_SA_ST_INSUFFICIENT_COMPONENTS;
	/* IBA 15.2.5.17: the port must be in the group's partition (for a
	 * new group the P_Key the request names); a limited member may
	 * join, its packets then reach full members only (IBA 10.9.3) */
	if (!sa_pkey_memb(port, g ? g->p.pkey : m.pkey))
		return SOF_SA_ST_REQ_INVALID;
	if (!g) {
		if (!(m.join_state & (SOF_MC_JOIN_FULL | JOIN_SEND_ONLY_FULL)))
			return SOF_SA_ST_REQ_INVALID;
		if (memcmp(m.mgid, zero_gid, 16) && m.mgid[0] != 0xff)
			return SOF_SA_ST_REQ_INVALID;
		if (!ipoib_ok(sa, &m, mask))
			return SOF_SA_ST_REQ_INVALID;
		if (mask & BIT(SOF_MCMR_MLID) && m.mlid) {
			if (m.mlid < SM_MCAST_LID_BASE || m.mlid > MLID_LAST ||
			    group_by_mlid(sa, m.mlid))
				return SOF_SA_ST_REQ_INVALID;
		} else {
			m.mlid = free_mlid(sa);
			if (!m.mlid)
				return SOF_SA_ST_NO_RESOURCES;
		}
		new_params(sa, port, &m, mask);
		g = group_add(sa, &m);
		if (!g)
			return SOF_SA_ST_NO_RESOURCES;
		created = true;
	} else if (!compatible(g, &m, mask)) {
		return SOF_SA_ST_REQ_INVALID;
	}
	mb = member_find(g, m.port_gid);
	if (!mb && !(mb = member_add(g, m.port_gid))) {
		if (created)
			group_del(sa, g);
		return SOF_SA_ST_NO_RESOURCES;
	}
	before = mb->join_state;
	mb->join_state |= m.join_state & 0x0f;
	mb->proxy = m.proxy_join;
	group_rec(g, mb, rec);
	if (created)
		sa_report_mcast(sa, 66, g->p.mgid);
	if (created || before != mb->join_state)
		changed(sa, g->p.mlid);
	return 0;
}

uint16_t sa_mcmember_leave(struct sm_sa *sa, const struct sa_q *q, uint8_t *rec)
{
	uint64_t mask = q->r->comp_mask;
	struct sof_sa_mcmember m;
	struct sa_group *g;
	struct sa_member *mb;
	uint16_t mlid;

	sof_sa_mcmember_unpack(rec, &m);
	if ((mask & JOIN_REQUIRED) != JOIN_REQUIRED)
		return SOF_SA_ST_INSUFFICIENT_COMPONENTS;
	g = group_by_mgid(sa, m.mgid);
	if (!g || !(mb = member_find(g, m.port_gid)) || !(mb->join_state & m.join_state))
		return SOF_SA_ST_REQ_INVALID;
	if (!compatible(g, &m,
			mask & (BIT(SOF_MCMR_QKEY) | BIT(SOF_MCMR_PKEY) | BIT(SOF_MCMR_MLID))))
		return SOF_SA_ST_REQ_INVALID;
	group_rec(g, mb, rec);
	mb->join_state &= (uint8_t)~m.join_state;
	mlid = g->p.mlid;
	if (!mb->join_state)
		*mb = g->m[--g->nm];
	if (!g->nm && !g->sa_owned)
		group_del(sa, g); /* tells the SM */
	else
		changed(sa, mlid);
	return 0;
}

void sa_mcast_drop_gone(struct sm_sa *sa)
{
	for (unsigned i = 0; i < sa->ngrp;) {
		struct sa_group *g = &sa->grp[i];
		bool dropped = false;

		for (unsigned j = 0; j < g->nm;) {
			if (sa_port_by_gid(sa->sn, g->m[j].gid)) {
				j++;
				continue;
			}
			g->m[j] = g->m[--g->nm];
			dropped = true;
		}
		if (dropped && !g->nm && !g->sa_owned) {
			group_del(sa, g); /* the last group moved to i */
			continue;
		}
		if (dropped)
			changed(sa, g->p.mlid);
		i++;
	}
}

void sa_mcast_free(struct sm_sa *sa)
{
	for (unsigned i = 0; i < sa->ngrp; i++)
		free(sa->grp[i].m);
	free(sa->grp);
	sa->grp = NULL;
	sa->ngrp = sa->grp_cap = 0;
}

void sm_sa_ipoib_mgid(uint8_t mgid[16], uint16_t pkey)
{
	memset(mgid, 0, 16);
	mgid[0] = 0xff;
	mgid[1] = 0x12; /* link-local scope */
	mgid[2] = 0x40;
	mgid[3] = 0x1b;
	sof_put16(mgid + 4, pkey | 0x8000);
	memset(mgid + 12, 0xff, 4);
}

int sm_sa_mcast_create(struct sm_sa *sa, const uint8_t mgid[16], uint16_t pkey, uint32_t qkey,
		       uint8_t mtu, uint8_t rate)
{
	struct sof_sa_mcmember m;
	struct sa_group *g;

	if (group_by_mgid(sa, mgid))
		return -EEXIST;
	memset(&m, 0, sizeof(m));
	memcpy(m.mgid, mgid, 16);
	m.mlid = free_mlid(sa);
	if (!m.mlid)
		return -ENOSPC;
	m.pkey = pkey;
	m.qkey = qkey;
	m.mtu_sel = m.rate_sel = m.life_sel = 2;
	m.mtu = mtu;
	m.rate = rate;
	m.life = SA_PKT_LIFE;
	m.sl = sa_part_sl(sa, pkey); /* the partition's sl=, as OpenSM */
	m.scope = mgid[1] & 0x0f;
	g = group_add(sa, &m);
	if (!g)
		return -ENOMEM;
	g->sa_owned = true;
	changed(sa, m.mlid);
	return 0;
}

int sm_sa_mcast_ports(const struct sm_sa *sa, uint16_t mlid, struct sm_port **ports, unsigned max)
{
	const struct sa_group *g = group_by_mlid(sa, mlid);
	unsigned n = 0;

	if (!g)
		return -ENOENT;
	for (unsigned j = 0; j < g->nm; j++) {
		struct sm_port *p = sa_port_by_gid(sa->sn, g->m[j].gid);

		if (!p)
			continue;
		if (n < max)
			ports[n] = p;
		n++;
	}
	return (int)n;
}

unsigned sm_sa_mcast_mlids(const struct sm_sa *sa, uint16_t *mlids, unsigned max)
{
	for (unsigned i = 0; i < sa->ngrp && i < max; i++)
		mlids[i] = sa->grp[i].p.mlid;
	return sa->ngrp;
}
