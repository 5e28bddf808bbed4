/*
 * Partitions (IBA 10.9): the --partitions file, in OpenSM's
 * partitions.conf syntax, and the P_Key tables the SM writes from it.
 *
 *   # comment
 *   Default=0x7fff, ipoib : ALL=full ;
 *   storage=0x8001, ipoib, mtu=4 : 0x0002c90300001234=full, SELF, 0x...=limited ;
 *
 * A statement ends at ';' and may span lines: a name with its P_Key
 * (Default may leave it out: 0x7fff), flags (ipoib, mtu=, rate=, sl=,
 * scope=, Q_Key=, TClass=, defmember=full|limited|both), then after ':'
 * the members, each ALL, ALL_CAS, ALL_SWITCHES, SELF or a port GUID, with
 * =full, =limited or =both (else the defmember, limited unless set, as
 * OpenSM). Anything else is refused with its line number.
 *
 * Tables (IBA 10.9.1.1; blocks of 32 entries, as many as NodeInfo:
 * PartitionCap allows, up to SM_PKEY_MAX): a CA port and a switch's
 * port 0 get an entry per partition they are in, the default partition
 * first, bit 15 set for full members. At first contact with a port the
 * SM Gets its blocks (a previous SM's, or the SMA's own) and places the
 * file's table over them: a P_Key the port holds keeps its index, the
 * default goes to index 0, a new one to the lowest free index, and an
 * entry of a partition the file does not have is cleared (OpenSM's
 * default too); only the blocks that then differ are Set. The SM's own port is
 * always a full member of the default partition (it must reach every
 * SMA and SA client). A switch external port whose far end is a CA gets
 * that CA port's table and, when SwitchInfo:PartitionEnforcementCap is
 * not 0, enforcement inbound and outbound (PortInfo, set in program.c).
 * Without --partitions the SM writes no table: every port keeps the
 * default partition its SMA starts with.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sm.h"
#include "smp.h"

#define PKEY_DEFAULT 0x7fffu
#define PKEY_FULL 0x8000u

const char *const sm_part_who_names[5] = {
    [SM_PART_GUID] = "GUID",
    [SM_PART_ALL] = "ALL",
    [SM_PART_ALL_CAS] = "ALL_CAS",
    [SM_PART_ALL_SWITCHES] = "ALL_SWITCHES",
    [SM_PART_SELF] = "SELF",
};

/* ---- the parser ------------------------------------------------------------ */

struct parse {
	const char *text;
	char *err;
	size_t errlen;
};

static unsigned line_at(const struct parse *ps, const char *at)
{
	unsigned n = 1;

	for (const char *c = ps->text; c < at; c++)
		n += *c == '\n';
	return n;
}

static int fail(const struct parse *ps, const char *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(const struct parse *ps, const char *at, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(ps->err, ps->errlen, "line %u: ", line_at(ps, at));

	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < ps->errlen)
		vsnprintf(ps->err + n, ps->errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* A token of [b, e): blanks trimmed. */
static void trim(const char **b, const char **e)
{
	while (*b < *e && isspace((unsigned char)**b))
		(*b)++;
	while (*e > *b && isspace((unsigned char)(*e)[-1]))
		(*e)--;
}

static bool tok_is(const char *b, const char *e, const char *word)
{
	size_t n = strlen(word);

	return (size_t)(e - b) == n && !strncasecmp(b, word, n);
}

/* A number of [b, e) (C syntax, 0x for hex) no more than max. */
static bool tok_num(const char *b, const char *e, unsigned long long max,
		    unsigned long long *v)
{
	char buf[32], *end;

	if (e <= b || (size_t)(e - b) >= sizeof(buf))
		return false;
	memcpy(buf, b, (size_t)(e - b));
	buf[e - b] = 0;
	errno = 0;
	*v = strtoull(buf, &end, 0);
	return !errno && !*end && *v <= max && buf[0] != '-';
}

static int memb_of(const struct parse *ps, const char *b, const char *e, uint8_t *memb)
{
	trim(&b, &e);
	if (tok_is(b, e, "full"))
		*memb = SM_MEMB_FULL;
	else if (tok_is(b, e, "limited"))
		*memb = SM_MEMB_LIMITED;
	else if (tok_is(b, e, "both"))
		*memb = SM_MEMB_BOTH;
	else
		return fail(ps, b, "membership '%.*s' is not full, limited or both", (int)(e - b), b);
	return 0;
}

/* key[=value] of a partition's header, after its name */
static int header_flag(const struct parse *ps, struct sm_partition *p, uint8_t *defmember,
		       const char *b, const char *e)
{
	const char *eq = memchr(b, '=', (size_t)(e - b)), *ke = eq ? eq : e, *vb = eq ? eq + 1 : e;
	const char *ve = e;
	unsigned long long v = 0;

	trim(&b, &ke);
	trim(&vb, &ve);
	if (tok_is(b, ke, "ipoib") && !eq) {
		p->ipoib = true;
		return 0;
	}
	if (!eq)
		return fail(ps, b, "unknown flag '%.*s'", (int)(ke - b), b);
	if (tok_is(b, ke, "defmember"))
		return memb_of(ps, vb, ve, defmember);
	if (tok_is(b, ke, "mtu") && tok_num(vb, ve, 5, &v) && v)
		p->mtu = (uint8_t)v;
	else if (tok_is(b, ke, "rate") && tok_num(vb, ve, 63, &v) && v >= 2)
		p->rate = (uint8_t)v;
	else if (tok_is(b, ke, "sl") && tok_num(vb, ve, 15, &v))
		p->sl = (uint8_t)v;
	else if (tok_is(b, ke, "Q_Key") && tok_num(vb, ve, 0xffffffffull, &v))
		p->qkey = (uint32_t)v;
	else if ((tok_is(b, ke, "scope") && tok_num(vb, ve, 15, &v)) ||
		 (tok_is(b, ke, "TClass") && tok_num(vb, ve, 255, &v)))
		; /* taken, not used: groups are made link-local with TClass 0 */
	else
		return fail(ps, b, "bad flag '%.*s'", (int)(ve - b), b);
	return 0;
}

static int header(const struct parse *ps, struct sm_partition *p, uint8_t *defmember,
		  const char *b, const char *e)
{
	const char *c = memchr(b, ',', (size_t)(e - b)), *ne = c ? c : e;
	const char *eq = memchr(b, '=', (size_t)(ne - b)), *nb = b, *nme = eq ? eq : ne;
	unsigned long long v;

	trim(&nb, &nme);
	if (nb == nme)
		return fail(ps, b, "partition name missing");
	if ((size_t)(nme - nb) >= sizeof(p->name))
		return fail(ps, nb, "partition name longer than %zu", sizeof(p->name) - 1);
	for (const char *q = nb; q < nme; q++)
		if (!isalnum((unsigned char)*q) && *q != '_' && *q != '.' && *q != '-')
			return fail(ps, q, "bad character '%c' in partition name", *q);
	memcpy(p->name, nb, (size_t)(nme - nb));
	p->name[nme - nb] = 0;
	if (eq) {
		const char *vb = eq + 1, *ve = ne;

		trim(&vb, &ve);
		if (!tok_num(vb, ve, 0xffff, &v) || !(v & 0x7fff))
			return fail(ps, vb, "bad P_Key '%.*s'", (int)(ve - vb), vb);
		p->pkey = (uint16_t)(v & 0x7fff);
	} else if (!strcasecmp(p->name, "Default")) {
		p->pkey = PKEY_DEFAULT;
	} else {
		return fail(ps, nme, "partition '%s' has no P_Key (name=0xNNNN)", p->name);
	}
	while (c) {
		const char *fb = c + 1;

		c = memchr(fb, ',', (size_t)(e - fb));
		if (header_flag(ps, p, defmember, fb, c ? c : e))
			return -EINVAL;
	}
	return 0;
}

static int member(const struct parse *ps, struct sm_partition *p, uint8_t defmember,
		  const char *b, const char *e)
{
	const char *eq = memchr(b, '=', (size_t)(e - b)), *we = eq ? eq : e;
	struct sm_part_member m = {.memb = defmember};
	unsigned long long v;
	void *grow;

	trim(&b, &we);
	if (b == we && !eq)
		return fail(ps, b, "empty member (two commas?)");
	if (tok_is(b, we, "ALL"))
		m.who = SM_PART_ALL;
	else if (tok_is(b, we, "ALL_CAS"))
		m.who = SM_PART_ALL_CAS;
	else if (tok_is(b, we, "ALL_SWITCHES"))
		m.who = SM_PART_ALL_SWITCHES;
	else if (tok_is(b, we, "SELF"))
		m.who = SM_PART_SELF;
	else if (tok_num(b, we, UINT64_MAX, &v) && v)
		m.guid = v;
	else
		return fail(ps, b, "member '%.*s' is not a port GUID, ALL, ALL_CAS, ALL_SWITCHES or SELF",
			    (int)(we - b), b);
	if (eq && memb_of(ps, eq + 1, e, &m.memb))
		return -EINVAL;
	grow = realloc(p->m, (p->nm + 1) * sizeof(*p->m));
	if (!grow)
		return -ENOMEM;
	p->m = grow;
	p->m[p->nm++] = m;
	return 0;
}

static int statement(const struct parse *ps, struct sm_parts *out, const char *b, const char *e)
{
	const char *colon = memchr(b, ':', (size_t)(e - b));
	struct sm_partition p;
	uint8_t defmember = SM_MEMB_LIMITED;
	void *grow;

	memset(&p, 0, sizeof(p));
	if (!colon)
		return fail(ps, b, "no ':' between the partition and its members");
	if (memchr(colon + 1, ':', (size_t)(e - colon - 1)))
		return fail(ps, colon, "a second ':' in one partition");
	if (header(ps, &p, &defmember, b, colon))
		return -EINVAL;
	for (unsigned i = 0; i < out->n; i++) {
		if (out->p[i].pkey == p.pkey)
			return fail(ps, b, "P_Key 0x%04x of '%s' is also '%s''s", p.pkey, p.name,
				    out->p[i].name);
		if (!strcasecmp(out->p[i].name, p.name))
			return fail(ps, b, "partition '%s' defined twice", p.name);
	}
	for (const char *mb = colon + 1, *c; mb <= e; mb = c + 1) {
		const char *me = e, *tb = mb, *te;
		int err;

		c = memchr(mb, ',', (size_t)(e - mb));
		if (c)
			me = c;
		te = me;
		trim(&tb, &te);
		if (tb == te && !c && mb != colon + 1) {
			free(p.m);
			return fail(ps, mb, "a ',' with no member after it");
		}
		if (tb != te || c) {
			err = member(ps, &p, defmember, mb, me);
			if (err) {
				free(p.m);
				return err;
			}
		}
		if (!c)
			break;
	}
	grow = realloc(out->p, (out->n + 1) * sizeof(*out->p));
	if (!grow) {
		free(p.m);
		return -ENOMEM;
	}
	out->p = grow;
	out->p[out->n++] = p;
	return 0;
}

int sm_part_parse(const char *text, struct sm_parts *out, char *err, size_t errlen)
{
	struct parse ps = {.text = text, .err = err, .errlen = errlen};
	size_t len = strlen(text);
	char *t = malloc(len + 1);
	const char *b, *semi;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (!t)
		return -ENOMEM;
	/* comments become blanks, the line breaks stay (line numbers) */
	memcpy(t, text, len + 1);
	for (char *c = t; *c; c++)
		if (*c == '#')
			while (*c && *c != '\n')
				*c++ = ' ';
	ps.text = t;
	for (b = t; !rc; b = semi + 1) {
		const char *e;

		semi = strchr(b, ';');
		e = semi ? semi : t + len;
		trim(&b, &e);
		if (!semi) {
			if (b != e)
				rc = fail(&ps, b, "statement without its closing ';'");
			break;
		}
		if (b == e)
			continue; /* an empty statement */
		rc = statement(&ps, out, b, e);
	}
	free(t);
	if (rc)
		sm_part_free(out);
	return rc;
}

void sm_part_free(struct sm_parts *ps)
{
	for (unsigned i = 0; i < ps->n; i++)
		free(ps->p[i].m);
	free(ps->p);
	ps->p = NULL;
	ps->n = 0;
}

/* ---- loading ---------------------------------------------------------------- */

static const struct sm_parts *loaded; /* for the SA's broadcast groups */

const struct sm_parts *sm_parts_loaded(void) { return loaded; }

int sm_part_load(struct sm *sm)
{
	FILE *f = fopen(sm->partitions, "r");
	char *text = NULL, err[256];
	size_t cap = 0;
	ssize_t n;
	int rc;

	if (!f) {
		fprintf(stderr, "softofed-sm: %s: %s\n", sm->partitions, strerror(errno));
		return -errno;
	}
	n = getdelim(&text, &cap, 0, f);
	fclose(f);
	if (n < 0) {
		free(text);
		text = strdup("");
		if (!text)
			return -ENOMEM;
	}
	rc = sm_part_parse(text, &sm->parts, err, sizeof(err));
	free(text);
	if (rc) {
		fprintf(stderr, "softofed-sm: %s: %s\n", sm->partitions,
			rc == -EINVAL ? err : strerror(-rc));
		return rc;
	}
	/* OpenSM's rule: without a Default partition, one holding the SM */
	for (unsigned i = 0; i < sm->parts.n; i++)
		if (sm->parts.p[i].pkey == PKEY_DEFAULT)
			goto have_default;
	{
		struct sm_parts d;
		void *grow;

		if (sm_part_parse("Default=0x7fff : SELF=full ;", &d, err, sizeof(err)))
			return -ENOMEM;
		grow = realloc(sm->parts.p, (sm->parts.n + 1) * sizeof(*sm->parts.p));
		if (!grow) {
			sm_part_free(&d);
			return -ENOMEM;
		}
		sm->parts.p = grow;
		memmove(sm->parts.p + 1, sm->parts.p, sm->parts.n * sizeof(*sm->parts.p));
		sm->parts.p[0] = d.p[0];
		sm->parts.n++;
		free(d.p);
	}
have_default:
	loaded = &sm->parts;
	sm_log(sm, 1, "%u partitions from %s", sm->parts.n, sm->partitions);
	for (unsigned i = 0; i < sm->parts.n; i++) {
		const struct sm_partition *pt = &sm->parts.p[i];

		sm_log(sm, 2, "partition %s 0x%04x%s: %u members", pt->name, pt->pkey,
		       pt->ipoib ? " ipoib" : "", pt->nm);
		for (unsigned k = 0; k < pt->nm; k++)
			sm_log(sm, 2, "  %s 0x%016llx %s", sm_part_who_names[pt->m[k].who],
			       (unsigned long long)pt->m[k].guid,
			       pt->m[k].memb == SM_MEMB_FULL	  ? "full"
			       : pt->m[k].memb == SM_MEMB_LIMITED ? "limited"
								  : "both");
	}
	return 0;
}

/* ---- the tables ------------------------------------------------------------- */

/* The membership of port p in partition pt (0: none). */
static uint8_t membership(const struct sm *sm, const struct sm_partition *pt,
			  const struct sm_port *p)
{
	bool ca = p->node->type == SOF_NODE_CA, sw0 = p->node->sw && p->num == 0;
	uint8_t memb = 0;

	if (pt->pkey == PKEY_DEFAULT && p == sm->sn.self)
		return SM_MEMB_FULL;
	for (unsigned i = 0; i < pt->nm; i++) {
		const struct sm_part_member *m = &pt->m[i];
		bool in = false;

		switch (m->who) {
		case SM_PART_GUID: in = (ca || sw0) && m->guid == p->guid; break;
		case SM_PART_ALL: in = ca || sw0; break;
		case SM_PART_ALL_CAS: in = ca; break;
		case SM_PART_ALL_SWITCHES: in = sw0; break;
		case SM_PART_SELF: in = p == sm->sn.self; break;
		}
		if (in)
			memb |= m->memb;
	}
	return memb;
}

/* The table p should hold, at most cap entries: the default partition
 * first, then the others in the file's order. */
static void table_of(const struct sm *sm, const struct sm_port *p, unsigned cap, uint16_t *t)
{
	unsigned n = 0;

	memset(t, 0, SM_PKEY_MAX * sizeof(*t));
	for (int pass = 0; pass < 2; pass++)
		for (unsigned i = 0; i < sm->parts.n && n < cap; i++) {
			const struct sm_partition *pt = &sm->parts.p[i];
			uint8_t memb;

			if ((pt->pkey == PKEY_DEFAULT) != (pass == 0))
				continue;
			memb = membership(sm, pt, p);
			if (memb)
				t[n++] = (uint16_t)(pt->pkey | (memb & SM_MEMB_FULL ? PKEY_FULL : 0));
		}
}

/* NodeInfo:PartitionCap of p's node (at least 1, at most SM_PKEY_MAX) */
static unsigned pkey_cap(const struct sm_port *p)
{
	unsigned cap = p->node->partition_cap ? p->node->partition_cap : 1;

	return cap < SM_PKEY_MAX ? cap : SM_PKEY_MAX;
}

bool sm_part_enforce(const struct sm *sm, const struct sm_port *p)
{
	return sm->partitions && p->node->sw && p->num && p->node->sw->partition_enf_cap &&
	       p->peer && p->peer->node->type == SOF_NODE_CA;
}

static void on_pkey_set(struct sm *sm, struct sm_req *rq, int err, const uint8_t *mad)
{
	struct sm_port *p = &rq->node->port[rq->port];
	unsigned b = rq->arg;

	if (err) {
		sm->errors++;
		p->pkeys_set &= (uint8_t)~(1u << b); /* unknown now: written again */
		sm_log(sm, 1, "P_KeyTable block %u Set on %s port %u: %s", b, rq->node->desc,
		       rq->port, err == -ETIMEDOUT ? "no answer" : "refused");
		return;
	}
	for (unsigned i = 0; i < 32; i++)
		p->pkeys[b * 32 + i] = sof_get16(sm_smp_data(mad) + 2 * i);
	p->pkeys_set |= (uint8_t)(1u << b);
}

/* The table t (cap entries, in the file's order) placed over what the
 * port holds: a P_Key it holds stays at its index (a QP's or an IPoIB
 * child's pkey_index goes on naming it), with the membership the file
 * gives; the default partition at index 0; the others at the lowest free
 * index; an entry whose partition the file no longer has is cleared, as
 * OpenSM does unless told to keep them. */
static void table_merge(const struct sm_port *p, uint16_t *t, unsigned cap)
{
	uint16_t want[SM_PKEY_MAX], had[SM_PKEY_MAX];
	bool placed[SM_PKEY_MAX] = {false};
	unsigned nw = 0, i, k;

	for (i = 0; i < cap; i++)
		had[i] = p->pkeys_set & (1u << (i / 32)) ? p->pkeys[i] & 0x7fff : 0;
	while (nw < cap && t[nw])
		nw++;
	memcpy(want, t, nw * sizeof(*want));
	memset(t, 0, cap * sizeof(*t));
	if (nw && (want[0] & 0x7fff) == PKEY_DEFAULT) {
		t[0] = want[0];
		placed[0] = true;
	}
	for (k = 0; k < nw; k++)
		for (i = 0; i < cap && !placed[k]; i++)
			if (!t[i] && had[i] == (want[k] & 0x7fff)) {
				t[i] = want[k];
				placed[k] = true;
			}
	for (k = 0, i = 0; k < nw; k++) {
		if (placed[k])
			continue;
		while (i < cap && t[i])
			i++;
		if (i == cap)
			break;
		t[i] = want[k];
	}
}

/* Queue the Sets of the blocks of p's table t (cap entries) the port
 * does not hold (IBA 14.2.5.7: 32 entries a block; a switch's port in the
 * modifier's upper half, the block in the lower); a block not known (its
 * Get failed) is written whole. */
static void table_write(struct sm *sm, struct sm_port *p, const uint16_t *t, unsigned cap)
{
	struct sm_node *n = p->node;
	const uint8_t *path = n->sw ? n->path : p->path;
	unsigned hops = n->sw ? n->hops : p->hops;

	for (unsigned b = 0; b * 32 < cap; b++) {
		const uint16_t *want = t + b * 32, *had = p->pkeys + b * 32;
		struct sm_req *rq;
		uint8_t d[64];

		if (p->pkeys_set & (1u << b) && !memcmp(want, had, 32 * sizeof(*want)))
			continue;
		for (unsigned k = 0; k < 32; k++)
			sof_put16(d + 2 * k, want[k]);
		rq = sm_smp_dr(sm, path, hops, SOF_METHOD_SET, SOF_ATTR_PKEY_TABLE,
			       n->sw ? (uint32_t)p->num << 16 | b : b, d, on_pkey_set);
		if (rq) {
			rq->node = n;
			rq->port = p->num;
			rq->arg = b;
			sm->pkey_blocks++;
		}
	}
}

/* The table the file gives p (false: the SM writes none there) and
 * the entries it may hold */
static bool table_want(const struct sm *sm, const struct sm_port *p, uint16_t *t, unsigned *cap)
{
	const struct sm_node *n = p->node;

	if (n->sw && p->num) {
		/* the CA's table, as far as the switch port holds it
		 * (PartitionEnforcementCap) */
		if (!sm_part_enforce(sm, p))
			return false;
		*cap = pkey_cap(p->peer);
		if (*cap > n->sw->partition_enf_cap)
			*cap = n->sw->partition_enf_cap;
		table_of(sm, p->peer, *cap, t);
	} else {
		*cap = pkey_cap(p);
		table_of(sm, p, *cap, t);
	}
	return true;
}

static void port_program(struct sm *sm, struct sm_port *p)
{
	uint16_t t[SM_PKEY_MAX];
	unsigned cap;

	if (!table_want(sm, p, t, &cap))
		return;
	table_merge(p, t, cap);
	table_write(sm, p, t, cap);
}

static void on_pkey_get(struct sm *sm, struct sm_req *rq, int err, const uint8_t *mad)
{
	struct sm_port *p = &rq->node->port[rq->port];
	unsigned b = rq->arg;

	if (!err) {
		for (unsigned i = 0; i < 32; i++)
			p->pkeys[b * 32 + i] = sof_get16(sm_smp_data(mad) + 2 * i);
		p->pkeys_set |= (uint8_t)(1u << b);
		sm->pkey_read++;
	} else {
		sm_log(sm, 1, "P_KeyTable block %u Get on %s port %u: %s", b, rq->node->desc,
		       rq->port, err == -ETIMEDOUT ? "no answer" : "refused");
	}
	/* every block answered or not: what the port lacks is written */
	if (--p->pkeys_reading == 0 && p->present)
		port_program(sm, p);
}

/* First contact (IBA 14.2.5.7): Get every block the port may hold before
 * deciding what to Set; port_program runs when the last one answers. */
static void table_read(struct sm *sm, struct sm_port *p, unsigned cap)
{
	struct sm_node *n = p->node;
	const uint8_t *path = n->sw ? n->path : p->path;
	unsigned hops = n->sw ? n->hops : p->hops;

	p->pkeys_read = true;
	p->pkeys_set = 0;
	for (unsigned b = 0; b * 32 < cap; b++) {
		struct sm_req *rq = sm_smp_dr(sm, path, hops, SOF_METHOD_GET, SOF_ATTR_PKEY_TABLE,
					      n->sw ? (uint32_t)p->num << 16 | b : b, NULL,
					      on_pkey_get);

		if (!rq)
			continue;
		rq->node = n;
		rq->port = p->num;
		rq->arg = b;
		p->pkeys_reading++;
	}
	if (!p->pkeys_reading)
		port_program(sm, p);
}

void sm_part_program(struct sm *sm)
{
	struct sm_subnet *sn = &sm->sn;
	uint16_t t[SM_PKEY_MAX];

	sm->pkey_blocks = 0;
	sm->pkey_read = 0;
	if (!sm->partitions)
		return;
	for (unsigned i = 0; i < sn->nnodes; i++) {
		struct sm_node *n = sn->nodes[i];

		if (!n->present)
			continue;
		for (unsigned j = n->sw ? 0 : 1; j <= n->nports; j++) {
			struct sm_port *p = &n->port[j];
			unsigned cap;

			if (!p->present || p->pkeys_reading || !table_want(sm, p, t, &cap))
				continue;
			if (!p->pkeys) {
				p->pkeys = calloc(SM_PKEY_MAX, sizeof(*p->pkeys));
				if (!p->pkeys) {
					sm_log(sm, 0, "no memory for a P_Key table");
					continue;
				}
			}
			if (!p->pkeys_read)
				table_read(sm, p, cap);
			else
				port_program(sm, p);
		}
	}
}
