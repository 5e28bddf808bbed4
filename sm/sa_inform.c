/*
 * The SA's registrations: ServiceRecords (IBA 15.2.5.14) with their
 * leases, and event subscriptions (InformInfo, IBA 13.4.8.3, 15.2.5.16)
 * with the Reports that forward Notices to them (13.4.8.2): the SA's own
 * traps 64/65 (a port's GID came into / went out of service, found by
 * comparing the model's end ports after each change) and 66/67 (a
 * multicast group was created / deleted), and any Notice the SM hands to
 * sm_sa_report (trap 128 from a switch, for instance).
 */
#include "sa_int.h"

#include <stdlib.h>
#include <string.h>

#define BIT(c) (1ull << (c))
#define PRODUCER_CLASS_MANAGER 4 /* IBA 13.4.8.2 ProducerType */
#define NOTICE_TYPE_INFO 4	 /* informational */

static const uint8_t zero_gid[16];

/* ---- ServiceRecord ---- */

static struct sa_service *service_find(struct sm_sa *sa, const struct sof_sa_service *s)
{
	for (unsigned i = 0; i < sa->nsvc; i++) {
		const struct sof_sa_service *t = &sa->svc[i].rec;

		if (t->id == s->id && !memcmp(t->gid, s->gid, 16) && t->pkey == s->pkey)
			return &sa->svc[i];
	}
	return NULL;
}

/* the record as a query sees it: the lease left, in seconds */
static void service_rec(const struct sm_sa *sa, const struct sa_service *s, uint8_t *rec)
{
	struct sof_sa_service r = s->rec;

	if (s->expires_us)
		r.lease = s->expires_us > sa->now_us
			      ? (uint32_t)((s->expires_us - sa->now_us + 999999) / 1000000)
			      : 0;
	sof_sa_service_pack(rec, &r);
}

void sa_gen_service(struct sm_sa *sa, const struct sa_q *q, struct sa_out *o)
{
	uint8_t rec[176];

	(void)q;
	sa_services_expire(sa, sa->now_us);
	for (unsigned i = 0; i < sa->nsvc; i++) {
		service_rec(sa, &sa->svc[i], rec);
		if (!sa_emit(o, rec))
			return;
	}
}

uint16_t sa_service_set(struct sm_sa *sa, const struct sa_q *q, uint8_t *rec)
{
	uint64_t mask = q->r->comp_mask;
	struct sof_sa_service s;
	struct sa_service *t;

	sof_sa_service_unpack(rec, &s);
	if (!(mask & BIT(SOF_SR_ID)) || !(mask & BIT(SOF_SR_GID)))
		return SOF_SA_ST_INSUFFICIENT_COMPONENTS;
	if (!sa_port_by_gid(sa->sn, s.gid))
		return SOF_SA_ST_INVALID_GID;
	if (!(mask & BIT(SOF_SR_PKEY)))
		s.pkey = SOF_PKEY_DEFAULT;
	if (!(mask & BIT(SOF_SR_LEASE)))
		s.lease = SOF_SA_SR_LEASE_INFINITE;
	t = service_find(sa, &s);
	if (!t) {
		if (sa->nsvc == SA_MAX_SERVICES)
			return SOF_SA_ST_NO_RESOURCES;
		if (sa->nsvc == sa->svc_cap) {
			unsigned cap = sa->svc_cap ? sa->svc_cap * 2 : 16;
			struct sa_service *n = realloc(sa->svc, cap * sizeof(*n));

			if (!n)
				return SOF_SA_ST_NO_RESOURCES;
			sa->svc = n;
			sa->svc_cap = cap;
		}
		t = &sa->svc[sa->nsvc++];
	}
	t->rec = s;
	t->expires_us = s.lease == SOF_SA_SR_LEASE_INFINITE
			    ? 0
			    : sa->now_us + (uint64_t)s.lease * 1000000u + !sa->now_us;
	sof_sa_service_pack(rec, &s);
	return 0;
}

uint16_t sa_service_delete(struct sm_sa *sa, const struct sa_q *q, uint8_t *rec)
{
	const struct sof_sa_rec_desc *d = &sof_sa_recs[SOF_SA_REC_SERVICE];
	uint64_t mask = q->r->comp_mask & ~BIT(SOF_SR_LEASE);
	uint8_t query[176], cand[176];
	bool found = false;

	if (!(mask & BIT(SOF_SR_ID)) && !(mask & BIT(SOF_SR_NAME)))
		return SOF_SA_ST_INSUFFICIENT_COMPONENTS;
	memcpy(query, rec, sizeof(query));
	for (unsigned i = 0; i < sa->nsvc;) {
		service_rec(sa, &sa->svc[i], cand);
		if (!sof_sa_match(d, query, cand, mask)) {
			i++;
			continue;
		}
		if (!found)
			memcpy(rec, cand, sizeof(cand));
		found = true;
		sa->svc[i] = sa->svc[--sa->nsvc];
	}
	return found ? 0 : SOF_SA_ST_NO_RECORDS;
}

void sa_services_expire(struct sm_sa *sa, uint64_t now_us)
{
	for (unsigned i = 0; i < sa->nsvc;) {
		if (sa->svc[i].expires_us && sa->svc[i].expires_us <= now_us)
			sa->svc[i] = sa->svc[--sa->nsvc];
		else
			i++;
	}
}

/* ---- InformInfo and Reports ---- */

static bool same_sub(const struct sa_sub *s, const uint8_t gid[16], const struct sof_sa_inform *ii)
{
	const struct sof_sa_inform *t = &s->ii;

	return !memcmp(s->subscriber_gid, gid, 16) && !memcmp(t->gid, ii->gid, 16) &&
	       t->lid_begin == ii->lid_begin && t->lid_end == ii->lid_end &&
	       t->is_generic == ii->is_generic && t->type == ii->type &&
	       t->trap_num == ii->trap_num && t->qpn == ii->qpn && t->producer == ii->producer;
}

uint16_t sa_inform_set(struct sm_sa *sa, const struct sa_q *q, uint8_t *rec)
{
	struct sof_sa_inform ii;
	struct sm_port *from;
	uint8_t sgid[16];
	unsigned i;

	sof_sa_inform_unpack(rec, &ii);
	if (!q->from)
		return SOF_SA_ST_REQ_INVALID;
	from = sm_port_by_lid(sa->sn, q->from->lid);
	if (q->from->grh)
		memcpy(sgid, q->from->gid, 16);
	else if (from)
		sa_port_gid(sa->sn, from, sgid);
	else
		return SOF_SA_ST_REQ_INVALID;
	if (memcmp(ii.gid, zero_gid, 16) && !sa_port_by_gid(sa->sn, ii.gid))
		return SOF_SA_ST_INVALID_GID;
	if (ii.lid_begin != SOF_II_LID_ALL && ii.lid_end && ii.lid_end < ii.lid_begin)
		return SOF_SA_ST_REQ_INVALID;
	for (i = 0; i < sa->nsub; i++)
		if (same_sub(&sa->sub[i], sgid, &ii))
			break;
	if (!ii.subscribe) {
		if (i == sa->nsub)
			return SOF_SA_ST_REQ_INVALID;
		sa->sub[i] = sa->sub[--sa->nsub];
		return 0;
	}
	if (i == sa->nsub) {
		if (sa->nsub == SA_MAX_SUBS)
			return SOF_SA_ST_NO_RESOURCES;
		if (sa->nsub == sa->sub_cap) {
			unsigned cap = sa->sub_cap ? sa->sub_cap * 2 : 8;
			struct sa_sub *n = realloc(sa->sub, cap * sizeof(*n));

			if (!n)
				return SOF_SA_ST_NO_RESOURCES;
			sa->sub = n;
			sa->sub_cap = cap;
		}
		sa->nsub++;
		sa->sub[i].enm = sa->sub_enum++;
	}
	sa->sub[i].ii = ii;
	memcpy(sa->sub[i].subscriber_gid, sgid, 16);
	sa->sub[i].to = *q->from;
	/* Reports go to the QP the subscriber named, with the GSI Q_Key
	 * (IBA 13.4.8.3: QPN of the subscriber) */
	sa->sub[i].to.qpn = ii.qpn ? ii.qpn : 1;
	sa->sub[i].to.qkey = 0x80010000u;
	return 0;
}

void sa_gen_inform_rec(struct sm_sa *sa, const struct sa_q *q, struct sa_out *o)
{
	uint8_t rec[64];

	(void)q;
	for (unsigned i = 0; i < sa->nsub; i++) {
		memset(rec, 0, sizeof(rec));
		memcpy(rec, sa->sub[i].subscriber_gid, 16);
		sof_put16(rec + 16, sa->sub[i].enm);
		sof_sa_inform_pack(rec + SOF_SA_IIR_INFO_OFF, &sa->sub[i].ii);
		if (!sa_emit(o, rec))
			return;
	}
}

static bool sub_wants(const struct sa_sub *s, const struct sof_sa_notice *n)
{
	const struct sof_sa_inform *ii = &s->ii;

	if (ii->is_generic != n->is_generic)
		return false;
	if (ii->type != SOF_II_TYPE_ALL && ii->type != n->type)
		return false;
	if (ii->trap_num != SOF_II_TRAP_ALL && ii->trap_num != n->trap_num)
		return false;
	if (ii->producer != 0xffffffu && ii->producer != n->producer)
		return false;
	if (ii->lid_begin != SOF_II_LID_ALL &&
	    (n->issuer_lid < ii->lid_begin ||
	     n->issuer_lid > (ii->lid_end ? ii->lid_end : ii->lid_begin)))
		return false;
	/* traps 64-67 name a GID in their details (IBA 14.2.5.1) */
	if (memcmp(ii->gid, zero_gid, 16) && n->trap_num >= 64 && n->trap_num <= 67 &&
	    memcmp(ii->gid, n->details + 6, 16))
		return false;
	return true;
}

unsigned sm_sa_report(struct sm_sa *sa, const struct sof_sa_notice *n)
{
	uint8_t mad[SOF_SA_MAD_LEN];
	unsigned sent = 0;

	if (!sa->ops || !sa->ops->send)
		return 0;
	for (unsigned i = 0; i < sa->nsub; i++) {
		if (!sub_wants(&sa->sub[i], n))
			continue;
		sof_sa_req_init(mad, SOF_SA_REPORT, SOF_SA_ATTR_NOTICE, 0, sa->report_tid++, 0);
		sof_sa_notice_pack(mad + SOF_SA_OFF_DATA, n);
		if (!sa->ops->send(sa->ctx, &sa->sub[i].to, mad, sizeof(mad), SA_REPORT_TIMEOUT_MS,
				   SA_REPORT_RETRIES))
			sent++;
	}
	sa->st.reports_sent += sent;
	return sent;
}

/* a Notice of the SA's own: traps 64-67 with a GID in the details */
static void report_gid(struct sm_sa *sa, uint16_t trap, const uint8_t gid[16])
{
	struct sof_sa_notice n;

	memset(&n, 0, sizeof(n));
	n.is_generic = true;
	n.type = NOTICE_TYPE_INFO;
	n.producer = PRODUCER_CLASS_MANAGER;
	n.trap_num = trap;
	n.issuer_lid = sa->sn->sm_lid;
	memcpy(n.details + 6, gid, 16);
	if (sa->sn->self)
		sa_port_gid(sa->sn, sa->sn->self, n.issuer_gid);
	sm_sa_report(sa, &n);
}

void sa_report_mcast(struct sm_sa *sa, uint16_t trap, const uint8_t mgid[16])
{
	report_gid(sa, trap, mgid);
}

static int guid_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

void sm_sa_subnet_changed(struct sm_sa *sa)
{
	const struct sm_subnet *sn = sa->sn;
	uint64_t *now = NULL;
	unsigned n = 0, cap = 0, i = 0, j = 0;
	uint8_t gid[16];

	for (unsigned k = 0; k < sn->nnodes; k++) {
		const struct sm_node *nd = sn->nodes[k];

		if (!nd->present || nd->type == SOF_NODE_SWITCH)
			continue;
		for (unsigned p = 1; p <= nd->nports; p++) {
			if (!nd->port[p].present || !nd->port[p].lid)
				continue;
			if (n == cap) {
				uint64_t *t = realloc(now, (cap = cap ? cap * 2 : 64) * sizeof(*t));

				if (!t) {
					free(now);
					return;
				}
				now = t;
			}
			now[n++] = nd->port[p].guid;
		}
	}
	if (n)
		qsort(now, n, sizeof(*now), guid_cmp);
	/* traps 64 / 65 for the differences (none the first time) */
	while (sa->known_valid && (i < n || j < sa->nknown)) {
		if (j == sa->nknown || (i < n && now[i] < sa->known[j])) {
			sof_put64(gid, sn->prefix);
			sof_put64(gid + 8, now[i++]);
			report_gid(sa, 64, gid);
		} else if (i == n || sa->known[j] < now[i]) {
			sof_put64(gid, sn->prefix);
			sof_put64(gid + 8, sa->known[j++]);
			report_gid(sa, 65, gid);
		} else {
			i++;
			j++;
		}
	}
	free(sa->known);
	sa->known = now;
	sa->nknown = n;
	sa->known_valid = true;
	sa_mcast_drop_gone(sa);
}

void sa_inform_free(struct sm_sa *sa)
{
	free(sa->sub);
	sa->sub = NULL;
	sa->nsub = sa->sub_cap = 0;
}
