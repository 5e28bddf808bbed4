/*
 * Hand-made RoCEv2 packets for the bad-packet corpus (tests/hosts/
 * badpackets.sh): builds the UDP payload of IBA Annex A17 itself
 *
 *   BTH | DETH or RETH (by opcode) | payload | pad | ICRC
 *
 * and sends it from an ordinary UDP socket to ADDR:4791. Nothing of the
 * engine is used: headers, masks and the ICRC are written out here from the
 * spec, so this program is a second, independent implementation to test
 * the engine's against.
 *
 * ICRC (IBA Annex A17.3.3, vol. 1 7.8.1): CRC-32 (the Ethernet polynomial,
 * reflected, initial value all ones, final complement) over
 *   8 bytes of 0xff (the masked LRH),
 *   the IP header with its variant fields masked to ones: IPv4 TOS, TTL and
 *   header checksum; IPv6 traffic class, flow label and hop limit,
 *   the UDP header with its checksum masked to ones,
 *   the BTH with its reserved byte (FECN/BECN/resv, byte 4) masked to ones,
 *   the rest of the packet up to the ICRC,
 * stored on the wire least significant byte first.
 * The IPv4 header the kernel puts in front of our datagram is predictable:
 * an unconnected socket with IP_PMTUDISC_DO sends with DF set and ID 0
 * (Linux ip_select_ident), which is also what the engine assumes. The
 * source address and port are bound explicitly, so they are known too.
 *
 * Usage: see usage() below. Exit 0 when every packet was sent, 1 on
 * errors, 2 on bad usage.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define ROCE_PORT 4791
#define BTH_LEN 12
#define RETH_LEN 16
#define DETH_LEN 8
#define ICRC_LEN 4
#define MAX_PKT 9000

/* opcodes, IBA 9.2 table 35 */
#define OP_RC_SEND_ONLY 0x04
#define OP_RC_WRITE_ONLY 0x0a
#define OP_UC_SEND_ONLY 0x24
#define OP_UD_SEND_ONLY 0x64
#define OP_RC_RESERVED 0x1f

struct opts {
	const char *mode, *dst, *src;
	int sport, count, wait_ms, dry, hex, bad_icrc, tver, plen, opcode;
	uint32_t qpn, psn, rkey, dmalen, qkey, srcqp;
	uint16_t pkey;
	uint64_t vaddr;
	int have_dmalen;
};

static void usage(void)
{
	fprintf(stderr,
		"usage: roce_inject [options] MODE DST\n"
		"  sends one hand-made RoCEv2 packet (UDP payload: BTH, headers, payload,\n"
		"  ICRC) to DST (IPv4 or IPv6 literal), UDP port 4791.\n"
		"MODE:\n"
		"  good      RC SEND ONLY, -l bytes of payload, correct ICRC\n"
		"  write     RC RDMA WRITE ONLY to -a/-k (RETH), correct ICRC\n"
		"  ud        UD SEND ONLY (DETH with -Q and -S), correct ICRC\n"
		"  short     8 bytes: shorter than BTH + ICRC\n"
		"  version   good, but BTH TVer 1 (only 0 exists)\n"
		"  opcode    RC opcode 0x1f, reserved (or -o OPCODE)\n"
		"  qp-type   UD SEND ONLY (with DETH): for sending to an RC QP\n"
		"  uc        UC SEND ONLY: for sending to an RC QP\n"
		"  icrc      good, but with a wrong ICRC\n"
		"  payload   RC RDMA WRITE ONLY whose RETH DMA length is 16 bytes more\n"
		"            than its payload\n"
		"options:\n"
		"  -s SRC    source address to bind (default: the route's)\n"
		"  -P SPORT  UDP source port (default 49152 + pid %% 16384)\n"
		"  -q QPN    destination QP (default 0xabcdef)\n"
		"  -n PSN    PSN (default 0)\n"
		"  -K PKEY   P_Key (default 0xffff)\n"
		"  -k RKEY   RETH rkey (default 0)\n"
		"  -a VADDR  RETH virtual address (default 0)\n"
		"  -L LEN    RETH DMA length (default: the payload length)\n"
		"  -Q QKEY   DETH Q_Key (default 0x11111111)\n"
		"  -S SRCQP  DETH source QP (default 0x000abc)\n"
		"  -l LEN    payload bytes (default 64)\n"
		"  -o OP     opcode override (any mode but short)\n"
		"  -V TVER   BTH transport header version (default 0; mode version: 1)\n"
		"  -I        wrong ICRC (any mode)\n"
		"  -c N      send the packet N times (default 1)\n"
		"  -w MS     then wait up to MS ms for a RoCEv2 packet from DST to this host\n"
		"            (raw socket, root) and print it: \"reply opcode=0x.. psn=N\n"
		"            syndrome=0x..\" or \"reply none\"\n"
		"  -x        print the packet (UDP payload) as hex\n"
		"  -N        do not send: print the packet and its ICRC (needs -s; the\n"
		"            pseudo-header uses -P, default 49152)\n");
	exit(2);
}

/* CRC-32, IEEE 802.3 polynomial, reflected (the ICRC's, IBA 7.8.1) */
static uint32_t crc_table[256];

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
		crc_table[i] = c;
	}
}

static uint32_t crc_update(uint32_t crc, const uint8_t *p, size_t len)
{
	while (len--)
		crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

static void put16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put24(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 16);
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v);
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)(v >> 32));
	put32(p + 4, (uint32_t)v);
}

/*
 * icrc: the ICRC of PKT (LEN bytes, the UDP payload without its ICRC) as
 * sent from SRC:SPORT to DST:4791, FAMILY AF_INET or AF_INET6.
 */
static uint32_t icrc(int family, const void *src, const void *dst, uint16_t sport,
		     const uint8_t *pkt, size_t len)
{
	uint8_t ph[40 + 8], bth[BTH_LEN];
	size_t ulen = 8 + len + ICRC_LEN, n;
	uint32_t crc = 0xffffffffu;
	static const uint8_t ones[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

	crc = crc_update(crc, ones, 8);
	if (family == AF_INET) {
		ph[0] = 0x45;
		ph[1] = 0xff; /* TOS (DSCP, ECN) masked */
		put16(ph + 2, (uint32_t)(20 + ulen));
		put16(ph + 4, 0);      /* identification: 0 with DF */
		put16(ph + 6, 0x4000); /* DF, offset 0 */
		ph[8] = 0xff;	       /* TTL masked */
		ph[9] = IPPROTO_UDP;
		put16(ph + 10, 0xffff); /* header checksum masked */
		memcpy(ph + 12, src, 4);
		memcpy(ph + 16, dst, 4);
		n = 20;
	} else {
		put32(ph, 0x6fffffffu); /* version 6, traffic class and flow label masked */
		put16(ph + 4, (uint32_t)ulen);
		ph[6] = IPPROTO_UDP;
		ph[7] = 0xff; /* hop limit masked */
		memcpy(ph + 8, src, 16);
		memcpy(ph + 24, dst, 16);
		n = 40;
	}
	put16(ph + n, sport);
	put16(ph + n + 2, ROCE_PORT);
	put16(ph + n + 4, (uint32_t)ulen);
	put16(ph + n + 6, 0xffff); /* UDP checksum masked */
	crc = crc_update(crc, ph, n + 8);
	memcpy(bth, pkt, BTH_LEN);
	bth[4] = 0xff; /* FECN, BECN, reserved: masked */
	crc = crc_update(crc, bth, BTH_LEN);
	crc = crc_update(crc, pkt + BTH_LEN, len - BTH_LEN);
	return ~crc;
}

/* build: the packet of O's mode into PKT without its ICRC; returns its
 * length, or -1 for an unknown mode */
static int build(const struct opts *o, uint8_t *pkt)
{
	int op, len, pad, plen = o->plen, i;
	uint32_t dmalen;

	if (!strcmp(o->mode, "short")) {
		memset(pkt, 0, 4);
		pkt[0] = OP_RC_SEND_ONLY;
		return 4; /* + ICRC = 8 bytes */
	}
	if (!strcmp(o->mode, "good") || !strcmp(o->mode, "version") || !strcmp(o->mode, "icrc"))
		op = OP_RC_SEND_ONLY;
	else if (!strcmp(o->mode, "write") || !strcmp(o->mode, "payload"))
		op = OP_RC_WRITE_ONLY;
	else if (!strcmp(o->mode, "ud") || !strcmp(o->mode, "qp-type"))
		op = OP_UD_SEND_ONLY;
	else if (!strcmp(o->mode, "uc"))
		op = OP_UC_SEND_ONLY;
	else if (!strcmp(o->mode, "opcode"))
		op = OP_RC_RESERVED;
	else
		return -1;
	if (o->opcode >= 0)
		op = o->opcode;
	pad = (4 - (plen & 3)) & 3;
	/* BTH, IBA 9.2: opcode | SE M PadCnt(2) TVer(4) | P_Key | resv8 |
	 * DestQP(24) | A resv7 | PSN(24) */
	pkt[0] = (uint8_t)op;
	pkt[1] = (uint8_t)(pad << 4 | (o->tver & 0xf));
	put16(pkt + 2, o->pkey);
	pkt[4] = 0;
	put24(pkt + 5, o->qpn);
	pkt[8] = 0;
	put24(pkt + 9, o->psn);
	len = BTH_LEN;
	if (op == OP_UD_SEND_ONLY) {
		/* DETH, IBA 9.5.3: Q_Key | resv8 | SrcQP(24) */
		put32(pkt + len, o->qkey);
		pkt[len + 4] = 0;
		put24(pkt + len + 5, o->srcqp);
		len += DETH_LEN;
	} else if (op == OP_RC_WRITE_ONLY) {
		/* RETH, IBA 9.3.2: VA(64) | R_Key | DMA length */
		dmalen = o->have_dmalen ? o->dmalen : (uint32_t)plen;
		if (!strcmp(o->mode, "payload"))
			dmalen = (uint32_t)plen + 16;
		put64(pkt + len, o->vaddr);
		put32(pkt + len + 8, o->rkey);
		put32(pkt + len + 12, dmalen);
		len += RETH_LEN;
	}
	for (i = 0; i < plen; i++)
		pkt[len + i] = (uint8_t)(0xa0 + i);
	len += plen;
	memset(pkt + len, 0, (size_t)pad);
	return len + pad;
}

/* put_icrc: append the ICRC of PKT (LEN bytes) least significant byte
 * first (wrong on purpose with -I); a packet shorter than a BTH gets four
 * zero bytes. Returns the value written. */
static uint32_t put_icrc(const struct opts *o, int family, const void *src, const void *dst,
			 uint16_t sport, uint8_t *pkt, size_t len)
{
	uint32_t crc = 0;

	if (len >= BTH_LEN) {
		crc = icrc(family, src, dst, sport, pkt, len);
		if (o->bad_icrc)
			crc = ~crc;
	}
	pkt[len] = (uint8_t)crc;
	pkt[len + 1] = (uint8_t)(crc >> 8);
	pkt[len + 2] = (uint8_t)(crc >> 16);
	pkt[len + 3] = (uint8_t)(crc >> 24);
	return crc;
}

static void hexdump(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		printf("%02x%s", p[i], (i + 1) % 16 == 0 || i + 1 == n ? "\n" : " ");
}

/* wait_reply: print the first RoCEv2 packet from DST within MS ms */
static void wait_reply(int rfd, int family, const void *dst, int ms)
{
	struct timespec t0, t;
	uint8_t b[MAX_PKT + 64];

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd pf = {.fd = rfd, .events = POLLIN};
		struct sockaddr_storage from;
		socklen_t fl = sizeof(from);
		const uint8_t *u;
		ssize_t n;
		long left;

		clock_gettime(CLOCK_MONOTONIC, &t);
		left = ms - ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
		if (left <= 0 || poll(&pf, 1, (int)left) <= 0)
			break;
		n = recvfrom(rfd, b, sizeof(b), 0, (struct sockaddr *)&from, &fl);
		if (n <= 0)
			continue;
		if (family == AF_INET) {
			/* raw IPv4 sockets deliver the IP header */
			size_t ihl = (size_t)(b[0] & 0xf) * 4;

			if ((size_t)n < ihl + 8 || memcmp(b + 12, dst, 4))
				continue;
			u = b + ihl;
			n -= (ssize_t)ihl;
		} else {
			if (memcmp(&((struct sockaddr_in6 *)&from)->sin6_addr, dst, 16))
				continue;
			u = b;
		}
		if (n < 8 + BTH_LEN + ICRC_LEN || (u[2] << 8 | u[3]) != ROCE_PORT)
			continue;
		u += 8;
		printf("reply opcode=0x%02x qpn=0x%06x psn=%u", u[0], u[5] << 16 | u[6] << 8 | u[7],
		       (unsigned)(u[9] << 16 | u[10] << 8 | u[11]));
		/* ACK/ATOMIC ACK and the READ responses that carry an AETH */
		if ((u[0] & 0x1f) >= 0x0d && (u[0] & 0x1f) <= 0x12 && (u[0] & 0x1f) != 0x0e &&
		    n >= 8 + BTH_LEN + 4 + ICRC_LEN)
			printf(" syndrome=0x%02x msn=%u", u[BTH_LEN],
			       (unsigned)(u[BTH_LEN + 1] << 16 | u[BTH_LEN + 2] << 8 |
					  u[BTH_LEN + 3]));
		printf("\n");
		return;
	}
	printf("reply none\n");
}

int main(int argc, char **argv)
{
	struct opts o;
	struct sockaddr_storage sd, ss;
	socklen_t slen;
	uint8_t pkt[MAX_PKT];
	uint32_t crc;
	int c, fd, rfd = -1, family, len, one = 1, pmtu;
	const void *srcaddr, *dstaddr;

	setvbuf(stdout, NULL, _IOLBF, 0);
	memset(&o, 0, sizeof(o));
	o.sport = -1;
	o.count = 1;
	o.plen = 64;
	o.opcode = -1;
	o.qpn = 0xabcdef;
	o.qkey = 0x11111111;
	o.srcqp = 0xabc;
	o.pkey = 0xffff;
	while ((c = getopt(argc, argv, "s:P:q:n:K:k:a:L:Q:S:l:o:V:Ic:w:xNh")) != -1) {
		switch (c) {
		case 's':
			o.src = optarg;
			break;
		case 'P':
			o.sport = atoi(optarg);
			break;
		case 'q':
			o.qpn = (uint32_t)strtoul(optarg, NULL, 0) & 0xffffff;
			break;
		case 'n':
			o.psn = (uint32_t)strtoul(optarg, NULL, 0) & 0xffffff;
			break;
		case 'K':
			o.pkey = (uint16_t)strtoul(optarg, NULL, 0);
			break;
		case 'k':
			o.rkey = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'a':
			o.vaddr = strtoull(optarg, NULL, 0);
			break;
		case 'L':
			o.dmalen = (uint32_t)strtoul(optarg, NULL, 0);
			o.have_dmalen = 1;
			break;
		case 'Q':
			o.qkey = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'S':
			o.srcqp = (uint32_t)strtoul(optarg, NULL, 0) & 0xffffff;
			break;
		case 'l':
			o.plen = atoi(optarg);
			break;
		case 'o':
			o.opcode = (int)strtol(optarg, NULL, 0) & 0xff;
			break;
		case 'V':
			o.tver = atoi(optarg);
			break;
		case 'I':
			o.bad_icrc = 1;
			break;
		case 'c':
			o.count = atoi(optarg);
			break;
		case 'w':
			o.wait_ms = atoi(optarg);
			break;
		case 'x':
			o.hex = 1;
			break;
		case 'N':
			o.dry = 1;
			break;
		default:
			usage();
		}
	}
	if (argc - optind != 2 || o.count < 1 || o.count > 100000 || o.plen < 0 || o.plen > 8192 ||
	    o.sport > 65535 || o.wait_ms < 0 || (o.dry && !o.src))
		usage();
	o.mode = argv[optind];
	o.dst = argv[optind + 1];
	if (!strcmp(o.mode, "version") && !o.tver)
		o.tver = 1;
	if (!strcmp(o.mode, "icrc"))
		o.bad_icrc = 1;
	crc_init();

	memset(&sd, 0, sizeof(sd));
	if (inet_pton(AF_INET, o.dst, &((struct sockaddr_in *)&sd)->sin_addr) == 1) {
		family = AF_INET;
		((struct sockaddr_in *)&sd)->sin_port = htons(ROCE_PORT);
		slen = sizeof(struct sockaddr_in);
		dstaddr = &((struct sockaddr_in *)&sd)->sin_addr;
	} else if (inet_pton(AF_INET6, o.dst, &((struct sockaddr_in6 *)&sd)->sin6_addr) == 1) {
		family = AF_INET6;
		((struct sockaddr_in6 *)&sd)->sin6_port = htons(ROCE_PORT);
		slen = sizeof(struct sockaddr_in6);
		dstaddr = &((struct sockaddr_in6 *)&sd)->sin6_addr;
	} else {
		fprintf(stderr, "roce_inject: %s is not an IPv4 or IPv6 address\n", o.dst);
		return 2;
	}
	sd.ss_family = (sa_family_t)family;

	/* the source address: given, or the one the route picks (a
	 * connected probe socket tells) */
	memset(&ss, 0, sizeof(ss));
	ss.ss_family = (sa_family_t)family;
	if (o.src) {
		void *a = family == AF_INET ? (void *)&((struct sockaddr_in *)&ss)->sin_addr
					    : (void *)&((struct sockaddr_in6 *)&ss)->sin6_addr;

		if (inet_pton(family, o.src, a) != 1) {
			fprintf(stderr, "roce_inject: -s %s is not an address of DST's family\n",
				o.src);
			return 2;
		}
	} else {
		socklen_t l = sizeof(ss);
		int p = socket(family, SOCK_DGRAM, 0);

		if (p < 0 || connect(p, (struct sockaddr *)&sd, slen) ||
		    getsockname(p, (struct sockaddr *)&ss, &l)) {
			fprintf(stderr, "roce_inject: no route to %s: %s\n", o.dst,
				strerror(errno));
			return 1;
		}
		close(p);
	}
	srcaddr = family == AF_INET ? (const void *)&((struct sockaddr_in *)&ss)->sin_addr
				    : (const void *)&((struct sockaddr_in6 *)&ss)->sin6_addr;

	len = build(&o, pkt);
	if (len < 0) {
		fprintf(stderr, "roce_inject: unknown mode %s\n", o.mode);
		usage();
	}

	if (o.dry) {
		uint16_t sport = (uint16_t)(o.sport >= 0 ? o.sport : 49152);

		crc = put_icrc(&o, family, srcaddr, dstaddr, sport, pkt, (size_t)len);
		printf("%s %s:%u -> %s:%d len=%d icrc=0x%08x\n", o.mode, o.src, sport, o.dst,
		       ROCE_PORT, len + ICRC_LEN, crc);
		hexdump(pkt, (size_t)len + ICRC_LEN);
		return 0;
	}

	fd = socket(family, SOCK_DGRAM, 0);
	if (fd < 0) {
		perror("roce_inject: socket");
		return 1;
	}
	/* DF set, so the kernel sends IP ID 0 (ICRC pseudo-header) */
	pmtu = IP_PMTUDISC_DO;
	if (family == AF_INET)
		setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu));
	else
		setsockopt(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, &pmtu, sizeof(pmtu));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	for (int try = 0;; try++) {
		uint16_t port =
		    (uint16_t)(o.sport >= 0 ? o.sport : 49152 + (getpid() + try) % 16384);

		if (family == AF_INET)
			((struct sockaddr_in *)&ss)->sin_port = htons(port);
		else
			((struct sockaddr_in6 *)&ss)->sin6_port = htons(port);
		if (!bind(fd, (struct sockaddr *)&ss, slen))
			break;
		if (o.sport >= 0 || try > 100) {
			fprintf(stderr, "roce_inject: bind %s port %u: %s\n", o.src ? o.src : "",
				port, strerror(errno));
			return 1;
		}
	}
	slen = sizeof(ss);
	getsockname(fd, (struct sockaddr *)&ss, &slen);
	{
		uint16_t sport = ntohs(family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
							 : ((struct sockaddr_in6 *)&ss)->sin6_port);
		char sbuf[INET6_ADDRSTRLEN];

		crc = put_icrc(&o, family, srcaddr, dstaddr, sport, pkt, (size_t)len);
		len += ICRC_LEN;
		inet_ntop(family, srcaddr, sbuf, sizeof(sbuf));
		printf("%s %s:%u -> %s:%d len=%d opcode=0x%02x qpn=0x%06x psn=%u icrc=0x%08x%s\n",
		       o.mode, sbuf, sport, o.dst, ROCE_PORT, len, pkt[0], o.qpn, o.psn, crc,
		       o.bad_icrc ? " (wrong)" : "");
	}
	if (o.hex)
		hexdump(pkt, (size_t)len);
	if (o.wait_ms) {
		rfd = socket(family, SOCK_RAW, IPPROTO_UDP);
		if (rfd < 0) {
			perror("roce_inject: raw socket for -w (needs root)");
			return 1;
		}
	}
	for (int i = 0; i < o.count; i++) {
		if (sendto(fd, pkt, (size_t)len, 0, (struct sockaddr *)&sd,
			   family == AF_INET ? sizeof(struct sockaddr_in)
					     : sizeof(struct sockaddr_in6)) != len) {
			perror("roce_inject: sendto");
			return 1;
		}
	}
	if (rfd >= 0)
		wait_reply(rfd, family, dstaddr, o.wait_ms);
	close(fd);
	return 0;
}
