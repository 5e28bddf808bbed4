/*
 * fabric_walk: a host on a link of the software fabric (fabric/README.md)
 * that plays a subnet manager by hand, to test the fabric from outside.
 *
 *   fabric_walk ADDR:PORT NAME walk    attach as HCA NAME, discover the
 *       fabric by directed-route NodeInfo/NodeDescription/PortInfo SMPs
 *       and print it: "node GUID TYPE NPORTS DESC" and "link GUID PORT
 *       GUID PORT" lines, sorted (tests/fabric compares them to the file)
 *   fabric_walk ADDR:PORT NAME route [--wait-trap SECS]
 *       walk, then assign LIDs (this host 1), program every switch's LFT
 *       (shortest paths), take every port Armed then Active, and check
 *       LID-routed forwarding: a LID-routed NodeInfo to every node
 *       answers with that node's GUID, a PerfMgt PortCounters to the
 *       farthest HCA by LID (QP1) answers, a packet to a LID no LFT holds
 *       is dropped; with --wait-trap, print "ready" and wait for trap 128
 *       and, with --data-to NAME COUNT, send COUNT UD datagrams (QP 0x11,
 *       1024 bytes of a pattern) to that node's LID; with --loop, make two
 *       neighbouring switches send a LID to each other, send a packet to
 *       it, and check the fabric still answers; with --pkey, make the
 *       switch port we are linked to enforce partitions inbound and check
 *       that a P_Key outside its table is dropped, one inside passes
 *   fabric_walk ADDR:PORT NAME host [COUNT]   attach as HCA NAME and be a
 *       host: answer SMPs with the SMA of mad/sma.c (directed-route and
 *       LID-routed, as the daemon's port does) and PerfMgt with its PMA,
 *       until COUNT data datagrams came, each checked byte by byte
 *       ("data COUNT packets ok"), or 60 s passed
 *   fabric_walk ADDR:PORT NAME bad     attach, then send malformed
 *       packets (short, LVer, PktLen, VCRC, DR hop pointer / hop count /
 *       bad path, a short MAD), each once; prints what it sent
 *
 * The packet CRCs are computed here bit by bit, apart from the fabric's
 * table-driven ones (transport/ib_wire.c, which the fabric uses), so a
 * wrong CRC on either side shows.
 * Every line of result goes to stdout; failures to stderr with exit 1.
 */
#include "smp.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_NODES 2048
#define MAX_PORTS 64
#define PKT_LEN (8 + 12 + 8 + 256 + 4 + 2)

static int sock;
static const char *my_name;
static uint64_t my_guid, my_port_guid;
static uint64_t tid_seq = 1;
static uint64_t last_hello;
static unsigned smps_sent;

struct node {
	uint64_t guid;
	uint8_t type, nports;
	char desc[65];
	uint8_t path[64]; /* directed route from us: path[1..hops] */
	unsigned hops;
	uint16_t lid;
	int peer[MAX_PORTS + 1]; /* node index per port, -1 none */
	uint8_t peer_port[MAX_PORTS + 1];
};

static struct node nodes[MAX_NODES];
static unsigned nnodes;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "fabric_walk: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- CRCs, bit by bit (IBA 7.8.1, 7.8.2) ---- */

static uint32_t crc32_bits(uint32_t c, const uint8_t *p, size_t len)
{
	while (len--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0xedb88320u : c >> 1;
	}
	return c;
}

static uint16_t vcrc_bits(const uint8_t *p, size_t len)
{
	uint16_t c = 0xffff;

	while (len--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (uint16_t)((c >> 1) ^ 0xd008u) : (uint16_t)(c >> 1);
	}
	return (uint16_t)~c;
}

/* a local (LNH 2) packet's ICRC: VL and BTH byte 4 as ones */
static uint32_t icrc_local(const uint8_t *p, size_t len)
{
	uint8_t head[20];

	memcpy(head, p, 20);
	head[0] |= 0xf0;
	head[12] = 0xff;
	return ~crc32_bits(crc32_bits(0xffffffffu, head, 20), p + 20, len - 20);
}

static void seal(uint8_t *p, size_t len)
{
	size_t end = len - 6;
	uint32_t ic = icrc_local(p, end);
	uint16_t vc;

	p[end] = (uint8_t)ic;
	p[end + 1] = (uint8_t)(ic >> 8);
	p[end + 2] = (uint8_t)(ic >> 16);
	p[end + 3] = (uint8_t)(ic >> 24);
	vc = vcrc_bits(p, len - 2);
	p[len - 2] = (uint8_t)vc;
	p[len - 1] = (uint8_t)(vc >> 8);
}

/* ---- the link ---- */

static void sofl_send(uint8_t type)
{
	uint8_t b[88] = "SOFL";

	b[4] = 1;
	b[5] = type;
	b[6] = 5; /* LinkUp */
	b[7] = 1;
	sof_put64(b + 8, my_guid);
	sof_put64(b + 16, my_port_guid);
	memcpy(b + 24, my_name, strnlen(my_name, 64));
	send(sock, b, sizeof(b), 0);
	last_hello = now_ms();
}

static void link_open(const char *spec)
{
	struct addrinfo hints = {.ai_socktype = SOCK_DGRAM}, *ai;
	char host[96];
	const char *colon = strrchr(spec, ':');
	uint8_t b[512];
	uint64_t deadline;

	if (!colon || (size_t)(colon - spec) >= sizeof(host))
		die("bad address %s", spec);
	memcpy(host, spec, (size_t)(colon - spec));
	host[colon - spec] = '\0';
	if (getaddrinfo(host, colon + 1, &hints, &ai))
		die("bad address %s", spec);
	sock = socket(ai->ai_family, SOCK_DGRAM, 0);
	if (sock < 0 || connect(sock, ai->ai_addr, ai->ai_addrlen))
		die("socket: %m");
	freeaddrinfo(ai);
	deadline = now_ms() + 5000;
	sofl_send(1);
	while (now_ms() < deadline) {
		struct pollfd pfd = {.fd = sock, .events = POLLIN};
		ssize_t n;

		if (poll(&pfd, 1, 200) != 1) {
			sofl_send(1);
			continue;
		}
		n = recv(sock, b, sizeof(b), 0);
		if (n == 88 && !memcmp(b, "SOFL", 4) && b[5] == 3) {
			my_guid = sof_get64(b + 8);
			my_port_guid = sof_get64(b + 16);
			sofl_send(1);
			return;
		}
	}
	die("no ASSIGN from the fabric at %s for %s", spec, my_name);
}

static void send_pkt(uint16_t dlid, uint16_t slid, uint8_t vl, uint16_t pkey, uint32_t dqp,
		     uint32_t sqp, uint32_t qkey, const uint8_t *mad)
{
	uint8_t p[PKT_LEN] = {0};

	p[0] = (uint8_t)(vl << 4);
	p[1] = 2;
	sof_put16(p + 2, dlid);
	sof_put16(p + 4, (PKT_LEN - 2) / 4);
	sof_put16(p + 6, slid);
	p[8] = 0x64;
	sof_put16(p + 10, pkey);
	sof_put32(p + 12, dqp);
	sof_put32(p + 20, qkey);
	sof_put32(p + 24, sqp);
	memcpy(p + 28, mad, 256);
	seal(p, sizeof(p));
	if (send(sock, p, sizeof(p), 0) != (ssize_t)sizeof(p))
		die("send: %m");
}

/* Wait for a MAD with this TID (or, tid 0, a Trap). Checks the packet's
 * LRH, PktLen, VCRC and ICRC; a bad one fails the run. 0 or -1 (time). */
static int recv_mad(uint64_t tid, uint8_t *mad, int ms, uint16_t *slid)
{
	uint64_t deadline = now_ms() + (uint64_t)ms;
	uint8_t p[4400];

	while (now_ms() < deadline) {
		struct pollfd pfd = {.fd = sock, .events = POLLIN};
		ssize_t n;

		if (now_ms() - last_hello >= 1000)
			sofl_send(1);
		if (poll(&pfd, 1, 100) != 1)
			continue;
		n = recv(sock, p, sizeof(p), 0);
		if (n >= 4 && !memcmp(p, "SOFL", 4))
			continue;
		if (n != PKT_LEN)
			die("a packet of %zd bytes (a MAD's is %d)", n, PKT_LEN);
		if (sof_get16(p + 4) * 4 != PKT_LEN - 2 || (p[0] & 0xf))
			die("LRH PktLen/LVer wrong");
		if (vcrc_bits(p, PKT_LEN - 2) != (uint16_t)(p[PKT_LEN - 2] | p[PKT_LEN - 1] << 8))
			die("VCRC wrong on a packet from the fabric");
		{
			uint32_t ic = icrc_local(p, PKT_LEN - 6);
			const uint8_t *q = p + PKT_LEN - 6;

			if (ic != ((uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 |
				   (uint32_t)q[3] << 24))
				die("ICRC wrong on a packet from the fabric");
		}
		if (tid && sof_get64(p + 28 + 8) != tid)
			continue;
		if (!tid && p[28 + 3] != SOF_METHOD_TRAP)
			continue;
		memcpy(mad, p + 28, 256);
		if (slid)
			*slid = sof_get16(p + 6);
		return 0;
	}
	return -1;
}

/* one directed-route SMP to the node at path[1..hops]; the response's data
 * in out (64 bytes); returns its status or -1 when none came */
static int dr_smp(const uint8_t *path, unsigned hops, uint8_t method, uint16_t attr, uint32_t mod,
		  const uint8_t *data, uint8_t *out)
{
	uint8_t mad[256];

	for (int attempt = 0; attempt < 3; attempt++) {
		uint64_t tid = tid_seq++;

		sof_smp_init(mad, true, method, attr, mod, tid, 0);
		mad[SOF_SMP_OFF_HOP_CNT] = (uint8_t)hops;
		mad[SOF_SMP_OFF_HOP_PTR] = 1; /* IBA 14.2.2.2: the originator's step */
		memcpy(mad + SOF_SMP_OFF_INIT_PATH, path, hops + 1);
		if (data)
			memcpy(mad + SOF_SMP_OFF_DATA, data, 64);
		send_pkt(0xffff, 0xffff, 15, 0xffff, 0, 0, 0, mad);
		smps_sent++;
		if (recv_mad(tid, mad, 1000, NULL) == 0) {
			uint16_t st = sof_get16(mad + SOF_SMP_OFF_STATUS);

			if (mad[3] != SOF_METHOD_GET_RESP || !(st & SOF_SMP_DIRECTION))
				die("DR response: method 0x%x status 0x%x", mad[3], st);
			if (mad[SOF_SMP_OFF_HOP_PTR] != 1 || mad[SOF_SMP_OFF_HOP_CNT] != hops)
				die("DR response back with hop pointer %u count %u",
				    mad[SOF_SMP_OFF_HOP_PTR], mad[SOF_SMP_OFF_HOP_CNT]);
			memcpy(out, mad + SOF_SMP_OFF_DATA, 64);
			return st & 0x7fff;
		}
	}
	return -1;
}

static int lid_smp(uint16_t dlid, uint8_t method, uint16_t attr, uint32_t mod, uint8_t *out)
{
	uint8_t mad[256];
	uint64_t tid = tid_seq++;
	uint16_t slid;

	sof_smp_init(mad, false, method, attr, mod, tid, 0);
	send_pkt(dlid, 1, 15, 0xffff, 0, 0, 0, mad);
	if (recv_mad(tid, mad, 1000, &slid))
		return -1;
	if (slid != dlid)
		die("LID-routed response from LID %u, asked %u", slid, dlid);
	memcpy(out, mad + SOF_SMP_OFF_DATA, 64);
	return sof_get16(mad + SOF_SMP_OFF_STATUS);
}

static int find(uint64_t guid)
{
	for (unsigned i = 0; i < nnodes; i++)
		if (nodes[i].guid == guid)
			return (int)i;
	return -1;
}

/* NodeInfo + NodeDescription of the node at path; its index (new or
 * known) and the port we came in by, or -1 */
static int probe(const uint8_t *path, unsigned hops, unsigned *in_port)
{
	uint8_t d[64];
	struct node *n;
	int i;

	if (dr_smp(path, hops, SOF_METHOD_GET, SOF_ATTR_NODE_INFO, 0, NULL, d) != 0)
		return -1;
	*in_port = d[36];
	i = find(sof_get64(d + 12));
	if (i >= 0)
		return i;
	if (nnodes == MAX_NODES)
		die("too many nodes");
	n = &nodes[nnodes];
	memset(n, 0, sizeof(*n));
	n->guid = sof_get64(d + 12);
	n->type = d[2];
	n->nports = d[3];
	if (n->nports > MAX_PORTS)
		die("%u ports", n->nports);
	memcpy(n->path, path, hops + 1);
	n->hops = hops;
	for (unsigned p = 0; p <= MAX_PORTS; p++)
		n->peer[p] = -1;
	if (dr_smp(path, hops, SOF_METHOD_GET, SOF_ATTR_NODE_DESC, 0, NULL, d) != 0)
		die("no NodeDescription");
	memcpy(n->desc, d, 64);
	return (int)nnodes++;
}

static void walk(void)
{
	uint8_t path[64] = {0}, d[64];
	unsigned in;
	int first;

	/* ourselves: node 0, known from ASSIGN */
	memset(&nodes[0], 0, sizeof(nodes[0]));
	nodes[0].guid = my_guid;
	nodes[0].type = SOF_NODE_CA;
	nodes[0].nports = 1;
	snprintf(nodes[0].desc, sizeof(nodes[0].desc), "%s", my_name);
	for (unsigned p = 0; p <= MAX_PORTS; p++)
		nodes[0].peer[p] = -1;
	nnodes = 1;
	path[1] = 1;
	first = probe(path, 1, &in);
	if (first < 0)
		die("nothing answers beyond our port");
	nodes[0].peer[1] = first;
	nodes[0].peer_port[1] = (uint8_t)in;
	nodes[first].peer[in] = 0;
	nodes[first].peer_port[in] = 1;
	/* breadth first: nodes are appended as found */
	for (unsigned i = 1; i < nnodes; i++) {
		struct node *n = &nodes[i];

		if (n->type != SOF_NODE_SWITCH)
			continue;
		for (unsigned p = 1; p <= n->nports; p++) {
			int k;

			if (n->peer[p] >= 0)
				continue;
			if (dr_smp(n->path, n->hops, SOF_METHOD_GET, SOF_ATTR_PORT_INFO, p, NULL,
				   d) != 0)
				die("no PortInfo of port %u", p);
			if ((d[32] & 0xf) == SOF_PORT_DOWN)
				continue;
			memcpy(path, n->path, 64);
			path[n->hops + 1] = (uint8_t)p;
			k = probe(path, n->hops + 1, &in);
			if (k < 0)
				die("port %u of %s is up, nothing answers behind it", p, n->desc);
			n = &nodes[i];
			n->peer[p] = k;
			n->peer_port[p] = (uint8_t)in;
			nodes[k].peer[in] = (int)i;
			nodes[k].peer_port[in] = (uint8_t)p;
		}
	}
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void print_walk(void)
{
	char **lines = calloc(nnodes * (MAX_PORTS + 2), sizeof(*lines));
	unsigned nl = 0;

	for (unsigned i = 0; i < nnodes; i++) {
		const struct node *n = &nodes[i];

		if (asprintf(&lines[nl++], "node 0x%016llx %s %u %s", (unsigned long long)n->guid,
			     n->type == SOF_NODE_SWITCH ? "Switch" : "Hca", n->nports, n->desc) < 0)
			die("no memory");
		for (unsigned p = 1; p <= n->nports; p++) {
			const struct node *m;

			if (n->peer[p] < 0)
				continue;
			m = &nodes[n->peer[p]];
			if (n->guid > m->guid || (n->guid == m->guid && p > n->peer_port[p]))
				continue;
			if (asprintf(&lines[nl++], "link 0x%016llx %u 0x%016llx %u",
				     (unsigned long long)n->guid, p, (unsigned long long)m->guid,
				     n->peer_port[p]) < 0)
				die("no memory");
		}
	}
	qsort(lines, nl, sizeof(*lines), cmp_str);
	for (unsigned i = 0; i < nl; i++) {
		puts(lines[i]);
		free(lines[i]);
	}
	free(lines);
}

/* ---- routing ---- */

static void set_port(const struct node *n, unsigned port, unsigned state, uint16_t lid)
{
	uint8_t d[64], r[64];
	int st;

	if (dr_smp(n->path, n->hops, SOF_METHOD_GET, SOF_ATTR_PORT_INFO, port, NULL, d) != 0)
		die("PortInfo of %s port %u", n->desc, port);
	/* a port already Active (an earlier run) is not taken back to Armed */
	if (state == SOF_PORT_ARMED && (d[32] & 0xf) == SOF_PORT_ACTIVE)
		state = SOF_PORT_NOP;
	if (n->type != SOF_NODE_SWITCH || port == 0) {
		sof_put16(d + 16, lid);
		sof_put16(d + 18, 1); /* SM LID: us */
	}
	d[32] = (uint8_t)((d[32] & 0xf0) | state);
	d[33] = 0;
	st = dr_smp(n->path, n->hops, SOF_METHOD_SET, SOF_ATTR_PORT_INFO, port, d, r);
	if (st != 0)
		die("PortInfo Set of %s port %u state %u: status 0x%x", n->desc, port, state, st);
	if (state && (r[32] & 0xf) != state)
		die("%s port %u in state %u, not %u", n->desc, port, r[32] & 0xf, state);
}

static void route(void)
{
	int dist[MAX_NODES], queue[MAX_NODES];
	uint8_t first_port[MAX_NODES];
	uint16_t maxlid = 0;
	unsigned i, s, qh, qt;

	for (i = 0; i < nnodes; i++)
		nodes[i].lid = (uint16_t)(i + 1);
	maxlid = (uint16_t)nnodes;
	for (i = 1; i < nnodes; i++)
		set_port(&nodes[i], nodes[i].type == SOF_NODE_SWITCH ? 0 : 1, 0, nodes[i].lid);
	/* each switch: BFS from it; the LFT entry of a LID is the port of the
	 * first hop towards it */
	for (s = 1; s < nnodes; s++) {
		uint8_t lft[64 * 64];
		const struct node *sw = &nodes[s];

		if (sw->type != SOF_NODE_SWITCH)
			continue;
		memset(lft, 0xff, sizeof(lft));
		for (i = 0; i < nnodes; i++)
			dist[i] = -1;
		dist[s] = 0;
		qh = qt = 0;
		queue[qt++] = (int)s;
		lft[sw->lid] = 0;
		while (qh < qt) {
			const struct node *n = &nodes[queue[qh++]];

			if (n->type != SOF_NODE_SWITCH && n != sw)
				continue;
			for (unsigned p = 1; p <= n->nports; p++) {
				int k = n->peer[p];

				if (k < 0 || dist[k] >= 0)
					continue;
				dist[k] = dist[n - nodes] + 1;
				first_port[k] = n == sw ? (uint8_t)p : first_port[n - nodes];
				lft[nodes[k].lid] = first_port[k];
				queue[qt++] = k;
			}
		}
		for (unsigned b = 0; b <= maxlid / 64u; b++) {
			uint8_t r[64];

			if (dr_smp(sw->path, sw->hops, SOF_METHOD_SET, SOF_ATTR_LFT, b,
				   lft + 64 * b, r) != 0 ||
			    memcmp(r, lft + 64 * b, 64))
				die("LFT block %u of %s", b, sw->desc);
		}
		{
			uint8_t d[64] = {0}, r[64];

			dr_smp(sw->path, sw->hops, SOF_METHOD_GET, SOF_ATTR_SWITCH_INFO, 0, NULL,
			       d);
			sof_put16(d + 6, maxlid);
			if (dr_smp(sw->path, sw->hops, SOF_METHOD_SET, SOF_ATTR_SWITCH_INFO, 0, d,
				   r))
				die("SwitchInfo of %s", sw->desc);
		}
	}
	/* every linked port Armed, then Active (switch ports and HCAs) */
	for (unsigned state = SOF_PORT_ARMED; state <= SOF_PORT_ACTIVE; state++)
		for (i = 1; i < nnodes; i++)
			for (unsigned p = 1; p <= nodes[i].nports; p++)
				if (nodes[i].peer[p] >= 0)
					set_port(&nodes[i], p, state, nodes[i].lid);
	printf("routed %u nodes, LIDs 1..%u\n", nnodes, maxlid);
}

static void check_lid_routed(void)
{
	unsigned far = 0, i;

	for (i = 1; i < nnodes; i++) {
		uint8_t d[64];

		if (lid_smp(nodes[i].lid, SOF_METHOD_GET, SOF_ATTR_NODE_INFO, 0, d) != 0)
			die("no LID-routed NodeInfo from %s (LID %u)", nodes[i].desc, nodes[i].lid);
		if (sof_get64(d + 12) != nodes[i].guid)
			die("LID %u answered as 0x%llx, not %s", nodes[i].lid,
			    (unsigned long long)sof_get64(d + 12), nodes[i].desc);
		if (nodes[i].type == SOF_NODE_CA && nodes[i].hops >= nodes[far].hops)
			far = i;
	}
	printf("lid-routed NodeInfo: %u nodes answered with their GUIDs\n", nnodes - 1);
	if (far) {
		uint8_t mad[256];
		uint64_t tid = tid_seq++;
		uint16_t slid;

		memset(mad, 0, sizeof(mad));
		mad[0] = 1;
		mad[1] = SOF_MCLASS_PERF;
		mad[2] = 1;
		mad[3] = SOF_METHOD_GET;
		sof_put64(mad + 8, tid);
		sof_put16(mad + 16, SOF_ATTR_PORT_COUNTERS);
		mad[64 + 1] = 1;
		send_pkt(nodes[far].lid, 1, 0, 0xffff, 1, 1, 0x80010000u, mad);
		if (recv_mad(tid, mad, 1000, &slid) || sof_get16(mad + 4) != 0)
			die("no PortCounters from %s by LID %u", nodes[far].desc, nodes[far].lid);
		printf("pma %s lid %u: rcv_pkts %u xmit_pkts %u\n", nodes[far].desc, nodes[far].lid,
		       sof_get32(mad + 64 + 36), sof_get32(mad + 64 + 32));
		if (sof_get32(mad + 64 + 36) == 0)
			die("PortCounters of %s count no packet", nodes[far].desc);
	}
	{
		uint8_t d[64];

		/* a LID beyond every LFT: nothing comes back */
		if (lid_smp((uint16_t)(nnodes + 5), SOF_METHOD_GET, SOF_ATTR_NODE_INFO, 0, d) != -1)
			die("an answer from an unrouted LID");
		printf("unrouted LID %u: no answer\n", nnodes + 5);
	}
}

#define DATA_QP 0x11
#define DATA_LEN 1024

static uint8_t data_byte(unsigned seq, unsigned k) { return (uint8_t)(seq * 7 + k); }

static void send_data(const char *to, unsigned count)
{
	const struct node *n = NULL;
	uint8_t p[8 + 12 + 8 + DATA_LEN + 4 + 2];

	for (unsigned i = 0; i < nnodes; i++)
		if (!strcmp(nodes[i].desc, to))
			n = &nodes[i];
	if (!n)
		die("no node %s to send data to", to);
	for (unsigned seq = 0; seq < count; seq++) {
		memset(p, 0, sizeof(p));
		p[1] = 2;
		sof_put16(p + 2, n->lid);
		sof_put16(p + 4, (uint16_t)((sizeof(p) - 2) / 4));
		sof_put16(p + 6, 1);
		p[8] = 0x64;
		sof_put16(p + 10, 0xffff);
		sof_put32(p + 12, DATA_QP);
		sof_put32(p + 16, seq);
		sof_put32(p + 20, 0x1234);
		sof_put32(p + 24, 7);
		for (unsigned k = 0; k < DATA_LEN; k++)
			p[28 + k] = data_byte(seq, k);
		seal(p, sizeof(p));
		if (send(sock, p, sizeof(p), 0) != (ssize_t)sizeof(p))
			die("send: %m");
	}
	printf("sent %u datagrams to %s (LID %u)\n", count, to, n->lid);
}

/* ---- a host: the SMA and PMA of mad/ on our end of the link ---- */

static void host_send(struct sof_node *me, uint16_t dlid, uint16_t slid, uint32_t dqp, uint32_t sqp,
		      uint32_t qkey, const uint8_t *mad)
{
	send_pkt(dlid, slid, dqp == 0 ? 15 : 0, 0xffff, dqp, sqp, qkey, mad);
	sof_port_count_xmit(&me->port[1], PKT_LEN - 2, false);
}

static void host(unsigned want)
{
	struct sof_node *me = sof_node_new(SOF_NODE_CA, 1, my_guid);
	uint64_t deadline = now_ms() + 60000;
	unsigned got = 0;
	uint8_t p[4400];

	if (!me)
		die("no memory");
	me->port[1].guid = me->port[1].guids[0] = my_port_guid;
	snprintf(me->desc, sizeof(me->desc), "%s", my_name);
	sof_port_link_up(me, 1);
	printf("host %s up\n", my_name);
	fflush(stdout);
	while (now_ms() < deadline && (!want || got < want)) {
		struct pollfd pfd = {.fd = sock, .events = POLLIN};
		uint16_t dlid, slid;
		uint8_t mad[256];
		ssize_t n;

		if (now_ms() - last_hello >= 1000)
			sofl_send(1);
		if (poll(&pfd, 1, 100) != 1)
			continue;
		n = recv(sock, p, sizeof(p), 0);
		if (n >= 4 && !memcmp(p, "SOFL", 4))
			continue;
		if (n < 34 || sof_get16(p + 4) * 4 != n - 2 ||
		    vcrc_bits(p, (size_t)n - 2) != (uint16_t)(p[n - 2] | p[n - 1] << 8))
			die("a bad packet of %zd bytes from the fabric", n);
		{
			uint32_t ic = icrc_local(p, (size_t)n - 6);
			const uint8_t *q = p + n - 6;

			if (ic != ((uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 |
				   (uint32_t)q[3] << 24))
				die("ICRC wrong on a packet from the fabric");
		}
		sof_port_count_rcv(&me->port[1], (uint32_t)n - 2, false);
		dlid = sof_get16(p + 2);
		slid = sof_get16(p + 6);
		if (sof_get32(p + 12) == DATA_QP) {
			unsigned seq = sof_get32(p + 16);

			if (n != 8 + 12 + 8 + DATA_LEN + 4 + 2)
				die("data datagram of %zd bytes", n);
			for (unsigned k = 0; k < DATA_LEN; k++)
				if (p[28 + k] != data_byte(seq, k))
					die("data %u byte %u: 0x%02x, not 0x%02x", seq, k,
					    p[28 + k], data_byte(seq, k));
			got++;
			continue;
		}
		if (n != PKT_LEN)
			continue;
		memcpy(mad, p + 28, 256);
		if (p[0] >> 4 == 15 && mad[1] == SOF_MCLASS_SMP_DR) {
			bool lid_routed = dlid != 0xffff;
			struct sof_dr_next nx;

			if (sof_smp_dr_step(me, mad, 1, lid_routed, slid, &nx) != SOF_DR_LOCAL ||
			    sof_sma_process(me, 1, mad, 256, NULL) != SOF_SMA_REPLY)
				continue;
			sof_smp_dr_step(me, mad, 0, lid_routed, slid, &nx);
			if (nx.action == SOF_DR_OUT_PORT)
				host_send(me, 0xffff, 0xffff, 0, 0, 0, mad);
			else if (nx.action == SOF_DR_OUT_LID)
				host_send(me, nx.lid, me->port[1].lid, 0, 0, 0, mad);
		} else if (p[0] >> 4 == 15 && mad[1] == SOF_MCLASS_SMP_LID) {
			if (sof_sma_process(me, 1, mad, 256, NULL) == SOF_SMA_REPLY)
				host_send(me, slid, me->port[1].lid, 0, 0, 0, mad);
		} else if (sof_get32(p + 12) == 1 && mad[1] == SOF_MCLASS_PERF) {
			if (sof_pma_process(me, 1, mad, 256) == SOF_SMA_REPLY)
				host_send(me, slid, me->port[1].lid, sof_get32(p + 24), 1,
					  0x80010000u, mad);
		}
	}
	if (want && got < want)
		die("%u of %u data datagrams came", got, want);
	printf("data %u packets ok; lid %u state %s\n", got, me->port[1].lid,
	       sof_port_state_names[me->port[1].state]);
	sof_node_free(me);
}

/* a PerfMgt Get to lid with this P_Key: 0 when it answered */
static int pma_get(uint16_t lid, uint16_t pkey)
{
	uint8_t mad[256];
	uint64_t tid = tid_seq++;
	uint16_t slid;

	memset(mad, 0, sizeof(mad));
	mad[0] = 1;
	mad[1] = SOF_MCLASS_PERF;
	mad[2] = 1;
	mad[3] = SOF_METHOD_GET;
	sof_put64(mad + 8, tid);
	sof_put16(mad + 16, SOF_ATTR_PORT_COUNTERS);
	mad[64 + 1] = 1;
	send_pkt(lid, 1, 0, pkey, 1, 1, 0x80010000u, mad);
	return recv_mad(tid, mad, 500, &slid);
}

/* IBA 10.9.3 at the switch port we are linked to: its P_Key table holds
 * 0xFFFF and 0x8001 and it enforces inbound; a GMP with P_Key 0x8002 to
 * the farthest HCA is dropped there, one with 0x7FFF is not */
static void pkey_enforcement(void)
{
	const struct node *sw = &nodes[nodes[0].peer[1]];
	unsigned p = nodes[0].peer_port[1], far = 0;
	uint8_t d[64] = {0}, r[64];

	for (unsigned i = 1; i < nnodes; i++)
		if (nodes[i].type == SOF_NODE_CA && nodes[i].hops >= nodes[far].hops)
			far = i;
	sof_put16(d, 0xffff);
	sof_put16(d + 2, 0x8001);
	if (dr_smp(sw->path, sw->hops, SOF_METHOD_SET, SOF_ATTR_PKEY_TABLE, p << 16, d, r) != 0 ||
	    sof_get16(r + 2) != 0x8001)
		die("P_KeyTable Set of %s port %u", sw->desc, p);
	if (dr_smp(sw->path, sw->hops, SOF_METHOD_GET, SOF_ATTR_PORT_INFO, p, NULL, d) != 0)
		die("PortInfo of %s port %u", sw->desc, p);
	d[32] &= 0xf0;
	d[33] = 0;
	d[43] |= 0x08; /* PartitionEnforcementInbound */
	if (dr_smp(sw->path, sw->hops, SOF_METHOD_SET, SOF_ATTR_PORT_INFO, p, d, r) != 0 ||
	    !(r[43] & 0x08))
		die("PortInfo Set (enforcement) of %s port %u", sw->desc, p);
	if (pma_get(nodes[far].lid, 0x8002) == 0)
		die("a GMP with P_Key 0x8002 passed %s port %u", sw->desc, p);
	/* 0x7FFF: a limited member of the default partition, matching the
	 * full 0xFFFF here and at the HCA */
	if (pma_get(nodes[far].lid, 0x7fff) != 0)
		die("a GMP with P_Key 0x7FFF did not pass %s port %u", sw->desc, p);
	printf("pkey %s[%u] inbound: 0x8002 dropped, 0x7fff passed to %s\n", sw->desc, p,
	       nodes[far].desc);
}

/* two neighbouring switches send LID lid to each other: a forwarding loop
 * the fabric must cut (its hop limit) and survive */
static void make_loop(uint16_t lid)
{
	for (unsigned a = 1; a < nnodes; a++) {
		if (nodes[a].type != SOF_NODE_SWITCH)
			continue;
		for (unsigned pa = 1; pa <= nodes[a].nports; pa++) {
			int b = nodes[a].peer[pa];
			unsigned pb = nodes[a].peer_port[pa];
			uint8_t d[64], r[64], mad[256];
			const struct node *x[2] = {&nodes[a], &nodes[b]};
			unsigned px[2] = {pa, pb};

			if (b < 0 || nodes[b].type != SOF_NODE_SWITCH)
				continue;
			for (int i = 0; i < 2; i++) {
				if (dr_smp(x[i]->path, x[i]->hops, SOF_METHOD_GET, SOF_ATTR_LFT,
					   lid / 64, NULL, d) != 0)
					die("LFT of %s", x[i]->desc);
				d[lid % 64] = (uint8_t)px[i];
				if (dr_smp(x[i]->path, x[i]->hops, SOF_METHOD_SET, SOF_ATTR_LFT,
					   lid / 64, d, r) != 0)
					die("LFT Set of %s", x[i]->desc);
			}
			memset(mad, 0, sizeof(mad));
			send_pkt(lid, 1, 0, 0xffff, 0x22, 0x22, 0, mad);
			if (lid_smp(nodes[a].lid, SOF_METHOD_GET, SOF_ATTR_NODE_INFO, 0, d) != 0)
				die("no answer from %s after the loop", nodes[a].desc);
			printf("loop %s[%u] <-> %s[%u] for LID %u: cut, fabric answers\n",
			       nodes[a].desc, pa, nodes[b].desc, pb, lid);
			return;
		}
	}
	die("no two neighbouring switches");
}

static const char *desc_of(uint16_t lid)
{
	for (unsigned k = 0; k < nnodes; k++)
		if (nodes[k].lid == lid)
			return nodes[k].desc;
	return "?";
}

static void print_trap(const uint8_t *mad, uint16_t slid)
{
	const char *who = desc_of(slid);

	printf("trap %u from lid %u lidaddr %u (%s) tid 0x%llx\n", sof_get16(mad + 64 + 4), slid,
	       sof_get16(mad + 64 + 10), who, (unsigned long long)sof_get64(mad + 8));
	fflush(stdout);
}

static void wait_trap(int secs)
{
	uint8_t mad[256], seen[16][256];
	uint16_t slid, from[16];
	unsigned nseen = 1, ncross = 0, i;
	bool again = false, rep[16] = {false};
	uint64_t deadline;

	printf("ready\n");
	fflush(stdout);
	if (recv_mad(0, mad, secs * 1000, &slid))
		die("no trap within %d s", secs);
	print_trap(mad, slid);
	/* unrepressed, a switch sends its trap again with its TID (IBA
	 * 13.4.8.3); so do the others whose earlier traps (the route's port
	 * changes, the earlier runs') we never repressed. Any of them may
	 * come first, and an old one may be at the last of the fabric's
	 * resends: each that comes again is printed (the cut's, sent again
	 * each second, must be among them). */
	memcpy(seen[0], mad, 256);
	from[0] = slid;
	deadline = now_ms() + 3000;
	while (now_ms() < deadline && !recv_mad(0, mad, (int)(deadline - now_ms()), &slid)) {
		for (i = 0; i < nseen; i++)
			if (sof_get64(seen[i] + 8) == sof_get64(mad + 8))
				break;
		if (i < nseen && !rep[i]) {
			rep[i] = again = true;
			printf("trap repeated tid 0x%llx (%s)\n",
			       (unsigned long long)sof_get64(mad + 8), desc_of(from[i]));
		}
		if (i == nseen && nseen < 16) {
			memcpy(seen[nseen], mad, 256);
			from[nseen++] = slid;
			print_trap(mad, slid);
		}
	}
	if (!again)
		die("no trap sent again within 3 s (%u seen)", nseen);
	/* TrapRepress: each Notice back to its sender with method 0x07 */
	for (i = 0; i < nseen; i++) {
		seen[i][3] = SOF_METHOD_TRAP_REPRESS;
		send_pkt(from[i], 1, 15, 0xffff, 0, 0, 0, seen[i]);
	}
	/* resends may have crossed them: one per node at the fabric's tick,
	 * more when a loaded machine held us (or the fabric) back; all that
	 * come within 1.2 s are taken as crossings. After that, a trap not
	 * repressed would come again within 1 s: 2.5 s of silence. */
	deadline = now_ms() + 1200;
	while (now_ms() < deadline && !recv_mad(0, mad, (int)(deadline - now_ms()), NULL))
		ncross++;
	if (!recv_mad(0, mad, 2500, NULL))
		die("trap 0x%llx still sent after TrapRepress (%u crossed it)",
		    (unsigned long long)sof_get64(mad + 8), ncross);
	printf("repressed %u traps: no trap in 2.5 s (%u crossed the TrapRepress)\n", nseen,
	       ncross);
}

/* ---- malformed packets ---- */

static void bad(void)
{
	uint8_t mad[256], p[PKT_LEN];

	/* a good DR NodeInfo to S, then broken copies */
	sof_smp_init(mad, true, SOF_METHOD_GET, SOF_ATTR_NODE_INFO, 0, tid_seq++, 0);
	mad[SOF_SMP_OFF_HOP_CNT] = 1;
	mad[SOF_SMP_OFF_HOP_PTR] = 1;
	mad[SOF_SMP_OFF_INIT_PATH + 1] = 1;
	memset(p, 0, sizeof(p));
	p[0] = 0xf0;
	p[1] = 2;
	sof_put16(p + 2, 0xffff);
	sof_put16(p + 4, (PKT_LEN - 2) / 4);
	sof_put16(p + 6, 0xffff);
	p[8] = 0x64;
	sof_put16(p + 10, 0xffff);
	memcpy(p + 28, mad, 256);
	seal(p, sizeof(p));

	send(sock, p, 20, 0); /* short */
	printf("sent short\n");
	{
		uint8_t q[PKT_LEN];

		memcpy(q, p, sizeof(q));
		q[0] |= 1; /* LVer 1 */
		seal(q, sizeof(q));
		send(sock, q, sizeof(q), 0);
		printf("sent lver\n");
		memcpy(q, p, sizeof(q));
		send(sock, q, sizeof(q) - 4, 0); /* PktLen disagrees */
		printf("sent pktlen\n");
		q[PKT_LEN - 1] ^= 0x5a; /* VCRC */
		send(sock, q, sizeof(q), 0);
		printf("sent vcrc\n");
		memcpy(q, p, sizeof(q));
		q[28 + SOF_SMP_OFF_HOP_PTR] = 9; /* beyond hop count + 1 */
		seal(q, sizeof(q));
		send(sock, q, sizeof(q), 0);
		printf("sent hop_pointer\n");
		memcpy(q, p, sizeof(q));
		q[28 + SOF_SMP_OFF_HOP_CNT] = 64;
		seal(q, sizeof(q));
		send(sock, q, sizeof(q), 0);
		printf("sent hop_count\n");
		memcpy(q, p, sizeof(q));
		q[28 + SOF_SMP_OFF_HOP_CNT] = 2;
		q[28 + SOF_SMP_OFF_INIT_PATH + 2] = 200; /* no such port */
		seal(q, sizeof(q));
		send(sock, q, sizeof(q), 0);
		printf("sent path\n");
	}
	{
		/* a MAD 4 bytes short, LRH and CRCs right */
		uint8_t q[PKT_LEN - 4];

		memcpy(q, p, sizeof(q));
		sof_put16(q + 4, (uint16_t)((sizeof(q) - 2) / 4));
		seal(q, sizeof(q));
		send(sock, q, sizeof(q), 0);
		printf("sent short_mad\n");
	}
	/* and the good one still answers */
	{
		uint8_t d[64], path[64] = {0, 1};

		if (dr_smp(path, 1, SOF_METHOD_GET, SOF_ATTR_NODE_INFO, 0, NULL, d) != 0)
			die("no answer to a good SMP after the bad ones");
		printf("good answered\n");
	}
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: fabric_walk ADDR:PORT NAME walk | route [--wait-trap S | "
				"--data-to NAME COUNT | --loop | --pkey] | host [COUNT] | bad\n");
		return 2;
	}
	my_name = argv[2];
	link_open(argv[1]);
	if (!strcmp(argv[3], "walk")) {
		uint64_t t0 = now_ms();

		walk();
		print_walk();
		fprintf(stderr, "fabric_walk: %u nodes, %u SMPs, %llu ms\n", nnodes, smps_sent,
			(unsigned long long)(now_ms() - t0));
	} else if (!strcmp(argv[3], "route")) {
		walk();
		route();
		check_lid_routed();
		if (argc >= 6 && !strcmp(argv[4], "--wait-trap"))
			wait_trap(atoi(argv[5]));
		if (argc >= 7 && !strcmp(argv[4], "--data-to"))
			send_data(argv[5], (unsigned)atoi(argv[6]));
		if (argc >= 5 && !strcmp(argv[4], "--pkey"))
			pkey_enforcement();
		if (argc >= 5 && !strcmp(argv[4], "--loop"))
			make_loop((uint16_t)(nnodes + 20));
	} else if (!strcmp(argv[3], "host")) {
		host(argc >= 5 ? (unsigned)atoi(argv[4]) : 0);
	} else if (!strcmp(argv[3], "bad")) {
		bad();
	} else {
		die("unknown mode %s", argv[3]);
	}
	sofl_send(2); /* BYE */
	return 0;
}
