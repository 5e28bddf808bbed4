/*
 * The topology file: the ibnetdiscover / ibsim net format.
 *
 *   Switch 36 "Leaf0"          a node: type (Switch, Hca or Ca), ports, name
 *   [1] "H0_0"[1]              a link from this node's port to a peer's port
 *
 * ibnetdiscover's extras are understood: `switchguid=0x..` / `caguid=0x..`
 * lines give the next node's GUID, a name "S-<hex>" / "H-<hex>" is a GUID,
 * `[1](<hex>)` gives a port GUID, and anything after a `#` outside quotes
 * is a comment. A link may be listed at one end or at both; both ends must
 * then agree. Nodes without a GUID get one as ibsim gives them, so that
 * the same file names the same GUIDs here and there: HCAs from 0x100000
 * (the node GUID, then one per port), switches from 0x200000 (one each),
 * in the order of the file.
 */
#include "fabric.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIM_CA_GUID_BASE 0x100000ull
#define SIM_SW_GUID_BASE 0x200000ull

/* a link as read, resolved once every node is known */
struct raw_link {
	unsigned node, port, line;
	char peer[FAB_NAME_LEN];
	unsigned peer_port;
	uint64_t port_guid;
};

struct parser {
	const char *path;
	unsigned line;
	struct topo *t;
	struct raw_link *links;
	unsigned nlinks, cap_links, cap_nodes;
	uint64_t next_guid; /* from a switchguid= / caguid= line */
};

static int perr(struct parser *ps, const char *what)
{
	fprintf(stderr, "%s:%u: %s\n", ps->path, ps->line, what);
	return -EINVAL;
}

/* strip a comment outside quotes and trailing blanks */
static void strip(char *s)
{
	bool q = false;
	char *p;

	for (p = s; *p; p++) {
		if (*p == '"')
			q = !q;
		else if (*p == '#' && !q) {
			*p = '\0';
			break;
		}
	}
	for (p = s + strlen(s); p > s && isspace((unsigned char)p[-1]); p--)
		p[-1] = '\0';
}

/* "name" at *s: copied into out, *s moved past it. 0 or -1. */
static int quoted(char **s, char *out)
{
	char *p = *s, *e;

	while (isspace((unsigned char)*p))
		p++;
	if (*p != '"')
		return -1;
	e = strchr(p + 1, '"');
	if (!e || e == p + 1 || (size_t)(e - p - 1) >= FAB_NAME_LEN)
		return -1;
	memcpy(out, p + 1, (size_t)(e - p - 1));
	out[e - p - 1] = '\0';
	*s = e + 1;
	return 0;
}

/* [N] or [N](hexguid) at *s */
static int port_ref(char **s, unsigned *port, uint64_t *guid)
{
	char *p = *s, *e;
	unsigned long v;

	while (isspace((unsigned char)*p))
		p++;
	if (*p != '[')
		return -1;
	v = strtoul(p + 1, &e, 10);
	if (e == p + 1 || *e != ']' || v > 255)
		return -1;
	*port = (unsigned)v;
	p = e + 1;
	if (*p == '(') {
		unsigned long long g = strtoull(p + 1, &e, 16);

		if (*e != ')')
			return -1;
		if (guid)
			*guid = g;
		p = e + 1;
	}
	*s = p;
	return 0;
}

static int add_node(struct parser *ps, char *s)
{
	struct topo *t = ps->t;
	struct topo_node *n;
	enum sof_node_type type;
	unsigned long nports;
	char *e;

	if (!strncmp(s, "Switch", 6)) {
		type = SOF_NODE_SWITCH;
		s += 6;
	} else if (!strncmp(s, "Hca", 3)) {
		type = SOF_NODE_CA;
		s += 3;
	} else if (!strncmp(s, "Ca", 2)) {
		type = SOF_NODE_CA;
		s += 2;
	} else {
		return perr(ps, "expected Switch, Hca or Ca");
	}
	nports = strtoul(s, &e, 10);
	if (e == s || nports < 1 || nports > 254)
		return perr(ps, "bad number of ports (1..254)");
	s = e;
	if (t->nnodes == ps->cap_nodes) {
		unsigned cap = ps->cap_nodes ? ps->cap_nodes * 2 : 64;
		struct topo_node *nn = realloc(t->nodes, cap * sizeof(*nn));

		if (!nn)
			return -ENOMEM;
		t->nodes = nn;
		ps->cap_nodes = cap;
	}
	n = &t->nodes[t->nnodes];
	memset(n, 0, sizeof(*n));
	n->type = type;
	n->nports = (unsigned)nports;
	if (quoted(&s, n->name))
		return perr(ps, "expected a \"name\" after the number of ports");
	if (topo_find(t, n->name) >= 0)
		return perr(ps, "a node of this name was defined before");
	n->ports = calloc(nports + 1, sizeof(*n->ports));
	if (!n->ports)
		return -ENOMEM;
	for (unsigned i = 0; i <= nports; i++)
		n->ports[i].peer = -1;
	n->guid = ps->next_guid;
	ps->next_guid = 0;
	if (!n->guid && (n->name[0] == 'S' || n->name[0] == 'H') && n->name[1] == '-' &&
	    isxdigit((unsigned char)n->name[2]))
		n->guid = strtoull(n->name + 2, NULL, 16);
	t->nnodes++;
	return 0;
}

static int add_link(struct parser *ps, char *s)
{
	struct raw_link *l;
	uint64_t pguid = 0;
	unsigned port;

	if (!ps->t->nnodes)
		return perr(ps, "a port line before any node");
	if (ps->nlinks == ps->cap_links) {
		unsigned cap = ps->cap_links ? ps->cap_links * 2 : 256;
		struct raw_link *nl = realloc(ps->links, cap * sizeof(*nl));

		if (!nl)
			return -ENOMEM;
		ps->links = nl;
		ps->cap_links = cap;
	}
	l = &ps->links[ps->nlinks];
	memset(l, 0, sizeof(*l));
	if (port_ref(&s, &port, &pguid))
		return perr(ps, "expected [port]");
	l->node = ps->t->nnodes - 1;
	l->port = port;
	l->port_guid = pguid;
	l->line = ps->line;
	if (quoted(&s, l->peer))
		return perr(ps, "expected \"peer\" after [port]");
	if (port_ref(&s, &l->peer_port, NULL))
		return perr(ps, "expected [port] after the peer's name");
	ps->nlinks++;
	return 0;
}

static int resolve(struct parser *ps)
{
	struct topo *t = ps->t;
	uint64_t ca = SIM_CA_GUID_BASE, sw = SIM_SW_GUID_BASE;
	unsigned i;

	for (i = 0; i < ps->nlinks; i++) {
		struct raw_link *l = &ps->links[i];
		struct topo_node *a = &t->nodes[l->node], *b;
		int peer = topo_find(t, l->peer);

		ps->line = l->line;
		if (peer < 0)
			return perr(ps, "link to a node the file does not define");
		b = &t->nodes[peer];
		if (l->port < 1 || l->port > a->nports || l->peer_port < 1 ||
		    l->peer_port > b->nports)
			return perr(ps, "port number beyond the node's ports");
		if ((unsigned)peer == l->node && l->port == l->peer_port)
			return perr(ps, "a port linked to itself");
		if ((a->ports[l->port].peer >= 0 &&
		     (a->ports[l->port].peer != peer ||
		      a->ports[l->port].peer_port != l->peer_port)) ||
		    (b->ports[l->peer_port].peer >= 0 &&
		     (b->ports[l->peer_port].peer != (int)l->node ||
		      b->ports[l->peer_port].peer_port != l->port)))
			return perr(ps, "the two ends of this link disagree");
		a->ports[l->port].peer = peer;
		a->ports[l->port].peer_port = (uint8_t)l->peer_port;
		b->ports[l->peer_port].peer = (int)l->node;
		b->ports[l->peer_port].peer_port = (uint8_t)l->port;
		if (a->type == SOF_NODE_CA && l->port == 1 && l->port_guid)
			a->port_guid = l->port_guid;
	}
	for (i = 0; i < t->nnodes; i++) {
		struct topo_node *n = &t->nodes[i];

		if (n->type == SOF_NODE_SWITCH) {
			if (!n->guid)
				n->guid = sw++;
			n->port_guid = n->guid;
		} else {
			if (!n->guid) {
				n->guid = ca;
				ca += n->nports + 1;
			}
			if (!n->port_guid)
				n->port_guid = n->guid + 1;
		}
	}
	return 0;
}

int topo_load(struct topo *t, const char *path)
{
	struct parser ps = {.path = path, .t = t};
	char buf[1024];
	FILE *fp;
	int rc = 0;

	memset(t, 0, sizeof(*t));
	fp = fopen(path, "r");
	if (!fp) {
		rc = -errno;
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return rc;
	}
	while (!rc && fgets(buf, sizeof(buf), fp)) {
		char *s = buf;

		ps.line++;
		if (!strchr(buf, '\n') && !feof(fp)) {
			rc = perr(&ps, "line too long");
			break;
		}
		strip(s);
		while (isspace((unsigned char)*s))
			s++;
		if (!*s)
			continue;
		if (!strncmp(s, "switchguid=", 11) || !strncmp(s, "caguid=", 7) ||
		    !strncmp(s, "sysimgguid=", 11)) {
			if (s[0] != 's' || s[1] == 'w')
				ps.next_guid = strtoull(strchr(s, '=') + 1, NULL, 0);
			continue;
		}
		if (!strncmp(s, "vendid=", 7) || !strncmp(s, "devid=", 6))
			continue;
		if (*s == '[')
			rc = add_link(&ps, s);
		else
			rc = add_node(&ps, s);
	}
	fclose(fp);
	if (!rc && !t->nnodes)
		rc = perr(&ps, "no nodes");
	if (!rc)
		rc = resolve(&ps);
	free(ps.links);
	if (rc)
		topo_free(t);
	return rc;
}

void topo_free(struct topo *t)
{
	for (unsigned i = 0; i < t->nnodes; i++)
		free(t->nodes[i].ports);
	free(t->nodes);
	memset(t, 0, sizeof(*t));
}

int topo_find(const struct topo *t, const char *name)
{
	for (unsigned i = 0; i < t->nnodes; i++)
		if (!strcmp(t->nodes[i].name, name))
			return (int)i;
	return -1;
}
