/*
 * The InfiniBand link-layer wire format (transport/ib_wire.h): LRH and GRH
 * round trips, the ICRC and VCRC against known answers, what is variant
 * in the ICRC (VL, GRH TClass/FlowLabel/HopLmt, BTH byte 4) and what is
 * not, every reason ib_parse drops a datagram, and the SOFL link control
 * messages of fabric/README.md. Needs no daemon.
 *
 * The known answers were made with Python, independently of the C code:
 * the packet from its field values with struct, the ICRC with zlib.crc32
 * over the packet with its variant fields set to ones, the VCRC bit by bit
 * (reflected 0x100B, ones in, inverted out), both little-endian on the
 * wire. Every datagram ib_parse reads lies in a heap block of exactly its
 * length, so that the ASan build catches a read past its end. The VCRC
 * is also checked against a bit-at-a-time one on random lengths, start
 * alignments and splits, in each of the ways ib_wire.c may compute it
 * (AVX-512 or 128-bit carry-less folding, tables).
 */
#include "harness.h"

#include "ib_wire.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

/* UD SEND Only, LNH 2: VL 0, SL 3, DLID 5, SLID 9, DQPN 1, PSN 7, Q_Key
 * 0x80010000, SQPN 1, payload 01..0a, pad 2 */
static const uint8_t kat_local[] = {
    0x00, 0x32, 0x00, 0x05, 0x00, 0x0b, 0x00, 0x09, 0x64, 0x20, 0xff, 0xff, 0x00, 0x00, 0x00, 0x01,
    0x00, 0x00, 0x00, 0x07, 0x80, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x01, 0x02, 0x03, 0x04,
    0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x00, 0x00, 0x05, 0xbe, 0x89, 0x1a, 0x34, 0x7a};

/* RC SEND Only, LNH 3: VL 2, SL 1, DLID 0x1234, SLID 0x22, GRH TClass
 * 0x12, Flow Label 0x34567, HopLmt 64, P_Key 0x8001, DQPN 0x123456, PSN
 * 0x42 with AckReq, payload "ABCD" */
static const uint8_t kat_global[] = {
    0x20, 0x13, 0x12, 0x34, 0x00, 0x11, 0x00, 0x22, 0x61, 0x23, 0x45, 0x67, 0x00, 0x14,
    0x1b, 0x40, 0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 0x03,
    0x04, 0x05, 0x06, 0x07, 0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x08, 0x09,
    0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x04, 0x00, 0x80, 0x01, 0x00, 0x12, 0x34, 0x56,
    0x80, 0x00, 0x00, 0x42, 0x41, 0x42, 0x43, 0x44, 0x98, 0xcf, 0xd8, 0x59, 0x05, 0xda};

static enum ib_drop parse_copy(const uint8_t *pkt, size_t len, struct ib_lrh *l, struct ib_grh *g,
			       size_t *toff, size_t *tlen)
{
	uint8_t *b = malloc(len ? len : 1);
	const uint8_t *tp = NULL;
	enum ib_drop d;

	memcpy(b, pkt, len);
	d = ib_parse(b, len, l, g, &tp, tlen);
	*toff = tp ? (size_t)(tp - b) : 0;
	free(b);
	return d;
}

/* Recompute ICRC and VCRC after an edit (pkt of len bytes, VCRC included). */
static void reseal(uint8_t *pkt, size_t len, bool icrc)
{
	size_t end = len - IB_VCRC_LEN;
	uint16_t v;

	if (icrc) {
		uint32_t c = ib_icrc(pkt, end - ROCE_ICRC_LEN);

		pkt[end - 4] = (uint8_t)c;
		pkt[end - 3] = (uint8_t)(c >> 8);
		pkt[end - 2] = (uint8_t)(c >> 16);
		pkt[end - 1] = (uint8_t)(c >> 24);
	}
	v = ib_vcrc(pkt, end);
	pkt[end] = (uint8_t)v;
	pkt[end + 1] = (uint8_t)(v >> 8);
}

TEST(lrh_round_trip)
{
	struct ib_lrh l = {.vl = 15,
			   .lver = 0,
			   .sl = 15,
			   .lnh = 3,
			   .dlid = 0xffff,
			   .pktlen = 0x7ff,
			   .slid = 0xbfff},
		      r;
	uint8_t b[IB_LRH_LEN];

	ib_lrh_write(b, &l);
	ib_lrh_read(b, &r);
	CHECK_EQ(r.vl, 15);
	CHECK_EQ(r.sl, 15);
	CHECK_EQ(r.lnh, 3);
	CHECK_EQ(r.dlid, 0xffff);
	CHECK_EQ(r.pktlen, 0x7ff);
	CHECK_EQ(r.slid, 0xbfff);
	CHECK_EQ(b[1] & 0x0c, 0); /* Rsv2 */
	CHECK_EQ(b[4] & 0xf8, 0); /* Rsv5 */
	/* the known answer's LRH */
	ib_lrh_read(kat_global, &r);
	CHECK_EQ(r.vl, 2);
	CHECK_EQ(r.sl, 1);
	CHECK_EQ(r.dlid, 0x1234);
	CHECK_EQ(r.slid, 0x22);
	CHECK_EQ(r.pktlen * 4u, sizeof(kat_global) - 2);
}

TEST(grh_round_trip)
{
	struct ib_grh g, r;
	uint8_t b[IB_GRH_LEN];

	ib_grh_read(kat_global + IB_LRH_LEN, &g);
	CHECK_EQ(g.ipver, 6);
	CHECK_EQ(g.tclass, 0x12);
	CHECK_EQ(g.flow_label, 0x34567);
	CHECK_EQ(g.paylen, 20);
	CHECK_EQ(g.nxthdr, IB_GRH_NXTHDR);
	CHECK_EQ(g.hop_limit, 64);
	CHECK_EQ(g.dgid[15], 0x0f);
	ib_grh_write(b, &g);
	CHECK_MEM(b, kat_global + IB_LRH_LEN, IB_GRH_LEN);
	ib_grh_read(b, &r);
	CHECK_EQ(r.flow_label, g.flow_label);
}

TEST(known_answers)
{
	uint32_t c = ib_icrc(kat_local, sizeof(kat_local) - 6);
	uint16_t v = ib_vcrc(kat_local, sizeof(kat_local) - 2);

	CHECK_EQ(c, 0x1a89be05u);
	CHECK_EQ(v, 0x7a34);
	c = ib_icrc(kat_global, sizeof(kat_global) - 6);
	v = ib_vcrc(kat_global, sizeof(kat_global) - 2);
	CHECK_EQ(c, 0x59d8cf98u);
	CHECK_EQ(v, 0xda05);
}

TEST(parse_good)
{
	struct ib_lrh l;
	struct ib_grh g;
	struct roce_hdr h;
	const uint8_t *pay;
	uint32_t paylen;
	size_t off, tlen;

	CHECK_EQ(parse_copy(kat_local, sizeof(kat_local), &l, &g, &off, &tlen), IB_DROP_NONE);
	CHECK_EQ(off, IB_LRH_LEN);
	CHECK_EQ(tlen, sizeof(kat_local) - IB_LRH_LEN - IB_VCRC_LEN);
	CHECK_EQ(roce_parse(kat_local + off, tlen, &h, &pay, &paylen), ROCE_DROP_NONE);
	CHECK_EQ(h.opcode, ROCE_UD_SEND_ONLY);
	CHECK_EQ(h.qkey, 0x80010000u);
	CHECK_EQ(paylen, 10);
	CHECK_EQ(pay[9], 0x0a);
	CHECK_EQ(parse_copy(kat_global, sizeof(kat_global), &l, &g, &off, &tlen), IB_DROP_NONE);
	CHECK_EQ(off, IB_LRH_LEN + IB_GRH_LEN);
	CHECK_EQ(roce_parse(kat_global + off, tlen, &h, &pay, &paylen), ROCE_DROP_NONE);
	CHECK_EQ(h.dqpn, 0x123456u);
	CHECK(h.ackreq);
	CHECK_EQ(paylen, 4);
}

/* What a switch or a router may change leaves the ICRC as it is (only the
 * VCRC changes); what it may not changes it. */
TEST(icrc_variant_fields)
{
	uint8_t p[sizeof(kat_global)];
	uint32_t c0 = ib_icrc(kat_global, sizeof(kat_global) - 6);
	struct ib_lrh l;
	struct ib_grh g;
	size_t off, tlen;

	memcpy(p, kat_global, sizeof(p));
	p[0] = (uint8_t)(0xf0 | (p[0] & 0x0f)); /* VL 15 */
	p[8] ^= 0x0f;				/* TClass */
	p[10] ^= 0x55;				/* Flow Label */
	p[15] = 1;				/* HopLmt */
	p[48 + 4] = 0xc0;			/* FECN, BECN */
	CHECK_EQ(ib_icrc(p, sizeof(p) - 6), c0);
	reseal(p, sizeof(p), false);
	CHECK_EQ(parse_copy(p, sizeof(p), &l, &g, &off, &tlen), IB_DROP_NONE);
	CHECK_EQ(l.vl, 15);
	/* SL, LIDs, P_Key and the GIDs are invariant */
	memcpy(p, kat_global, sizeof(p));
	p[1] ^= 0x10;
	CHECK_NE(ib_icrc(p, sizeof(p) - 6), c0);
	memcpy(p, kat_global, sizeof(p));
	p[3] ^= 1;
	CHECK_NE(ib_icrc(p, sizeof(p) - 6), c0);
	memcpy(p, kat_global, sizeof(p));
	p[48 + 3] ^= 1;
	CHECK_NE(ib_icrc(p, sizeof(p) - 6), c0);
	memcpy(p, kat_global, sizeof(p));
	p[31] ^= 1;
	CHECK_NE(ib_icrc(p, sizeof(p) - 6), c0);
}

TEST(icrc_pieces)
{
	uint32_t c0 = ib_icrc(kat_global, sizeof(kat_global) - 6);

	for (size_t a = 0; a <= sizeof(kat_global) - 6; a += 3) {
		for (size_t b = a; b <= sizeof(kat_global) - 6; b += 7) {
			struct iovec v[3] = {
			    {(void *)kat_global, a},
			    {(void *)(kat_global + a), b - a},
			    {(void *)(kat_global + b), sizeof(kat_global) - 6 - b}};

			CHECK_EQ(ib_icrc_iov(v, 3), c0);
			CHECK_EQ(ib_vcrc_iov(v, 3), ib_vcrc(kat_global, sizeof(kat_global) - 6));
		}
	}
}

/* the VCRC bit by bit (reflected 0x100B, ones in, inverted out), as the
 * Python that made the known answers: the table-driven one must agree on
 * every length (the eight-byte steps and the tail) and every split */
static uint16_t vcrc_bitwise(const uint8_t *p, size_t n)
{
	uint16_t c = 0xffff;

	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = (uint16_t)((c >> 1) ^ (c & 1 ? 0xd008 : 0));
	}
	return (uint16_t)~c;
}

TEST(vcrc_lengths)
{
	static uint8_t buf[4200];

	srand(19);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)rand();
	for (size_t n = 0; n <= 300; n++)
		for (size_t off = 0; off < 8; off += 3)
			CHECK_EQ(ib_vcrc(buf + off, n), vcrc_bitwise(buf + off, n));
	CHECK_EQ(ib_vcrc(buf, 4158), vcrc_bitwise(buf, 4158));
	/* the 512-bit folding leaves the upper halves of the vector
	 * registers clean (harness.h): the ICRC's SSE code comes next */
	CHECK_EQ(test_vector_upper_dirty(), 0);
	for (size_t a = 0; a < 40; a++) {
		struct iovec v[3] = {{buf, a}, {buf + a, 13 + a}, {buf + 13 + 2 * a, 4000 - 2 * a}};

		CHECK_EQ(ib_vcrc_iov(v, 3), vcrc_bitwise(buf, 4013));
	}
}

/* Random lengths to 9000 (past the 256-byte and 64-byte fold steps and
 * their tails), start addresses at every alignment to 64 and splits into
 * up to four pieces, against the bit-at-a-time VCRC; and the check values
 * of the CRC catalogues' kind, made in Python bit by bit: "123456789",
 * the empty message, 4096 zero bytes and 4096 0xff bytes. */
TEST(vcrc_random)
{
	static uint8_t buf[9100];
	static uint8_t same[4096];

	CHECK_EQ(ib_vcrc((const uint8_t *)"123456789", 9), 0x0a3d);
	CHECK_EQ(ib_vcrc(same, 0), 0x0000);
	memset(same, 0, sizeof(same));
	CHECK_EQ(ib_vcrc(same, sizeof(same)), 0x6017);
	memset(same, 0xff, sizeof(same));
	CHECK_EQ(ib_vcrc(same, sizeof(same)), 0x2205);
	srand(1919);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)rand();
	for (int it = 0; it < 3000; it++) {
		size_t off = (size_t)rand() % 64, n = (size_t)rand() % 9001;
		uint16_t want = vcrc_bitwise(buf + off, n);
		struct iovec v[4];
		size_t at = 0;
		unsigned k;

		CHECK_EQ(ib_vcrc(buf + off, n), want);
		for (k = 0; k < 3; k++) {
			size_t piece = (size_t)rand() % (n - at + 1);

			v[k] = (struct iovec){buf + off + at, piece};
			at += piece;
		}
		v[k] = (struct iovec){buf + off + at, n - at};
		CHECK_EQ(ib_vcrc_iov(v, 4), want);
	}
}

/* vcrc_random once more in a new process of this program for each way
 * to the VCRC the CPU may choose at run time: AVX-512 folding off
 * (SOFTOFED_NO_AVX512: 128-bit folding), then folding off altogether
 * (SOFTOFED_NO_PCLMUL: the portable tables). */
TEST(vcrc_paths)
{
	static const char *const envs[] = {"SOFTOFED_NO_AVX512", "SOFTOFED_NO_PCLMUL"};

	for (unsigned i = 0; i < 2; i++) {
		int st = -1;
		pid_t pid = fork();

		CHECK(pid >= 0);
		if (pid == 0) {
			int fd = open("/dev/null", O_WRONLY);

			setenv(envs[i], "1", 1);
			if (fd >= 0)
				dup2(fd, STDOUT_FILENO);
			execl("/proc/self/exe", "test_ibwire", "--vcrc-only", (char *)NULL);
			_exit(127);
		}
		CHECK_EQ(waitpid(pid, &st, 0), pid);
		CHECK(WIFEXITED(st));
		CHECK_EQ(WEXITSTATUS(st), 0);
	}
}

TEST(parse_drops)
{
	uint8_t p[sizeof(kat_global)];
	struct ib_lrh l;
	struct ib_grh g;
	size_t off, tlen;

	for (size_t n = 0; n < 8 + 12 + 4 + 2; n++)
		CHECK_EQ(parse_copy(kat_local, n, &l, &g, &off, &tlen), IB_DROP_SHORT);
	/* a flipped bit anywhere: the VCRC */
	for (size_t i = 0; i < sizeof(kat_local); i++) {
		uint8_t q[sizeof(kat_local)];
		enum ib_drop d;

		memcpy(q, kat_local, sizeof(q));
		q[i] ^= 0x04;
		d = parse_copy(q, sizeof(q), &l, &g, &off, &tlen);
		CHECK(d == IB_DROP_VCRC || d == IB_DROP_PKTLEN || d == IB_DROP_LVER);
	}
	/* one byte more or less than PktLen says */
	CHECK_EQ(parse_copy(kat_local, sizeof(kat_local) - 1, &l, &g, &off, &tlen), IB_DROP_PKTLEN);
	/* LVer 1 */
	memcpy(p, kat_local, sizeof(kat_local));
	p[0] |= 1;
	reseal(p, sizeof(kat_local), true);
	CHECK_EQ(parse_copy(p, sizeof(kat_local), &l, &g, &off, &tlen), IB_DROP_LVER);
	/* raw packet */
	memcpy(p, kat_local, sizeof(kat_local));
	p[1] &= 0xfc;
	reseal(p, sizeof(kat_local), true);
	CHECK_EQ(parse_copy(p, sizeof(kat_local), &l, &g, &off, &tlen), IB_DROP_LNH);
	/* a payload byte changed with a right VCRC: the ICRC */
	memcpy(p, kat_local, sizeof(kat_local));
	p[30] ^= 0xff;
	reseal(p, sizeof(kat_local), false);
	CHECK_EQ(parse_copy(p, sizeof(kat_local), &l, &g, &off, &tlen), IB_DROP_ICRC);
	/* GRH: IPVer, NxtHdr, PayLen */
	memcpy(p, kat_global, sizeof(p));
	p[8] = 0x41;
	reseal(p, sizeof(p), true);
	CHECK_EQ(parse_copy(p, sizeof(p), &l, &g, &off, &tlen), IB_DROP_GRH);
	memcpy(p, kat_global, sizeof(p));
	p[14] = 0x11;
	reseal(p, sizeof(p), true);
	CHECK_EQ(parse_copy(p, sizeof(p), &l, &g, &off, &tlen), IB_DROP_GRH);
	memcpy(p, kat_global, sizeof(p));
	p[13] += 4;
	reseal(p, sizeof(p), true);
	CHECK_EQ(parse_copy(p, sizeof(p), &l, &g, &off, &tlen), IB_DROP_GRH);
	/* LNH 3 on a packet too short for a GRH */
	memcpy(p, kat_local, sizeof(kat_local));
	p[1] |= 3;
	reseal(p, sizeof(kat_local), true);
	CHECK_EQ(parse_copy(p, sizeof(kat_local), &l, &g, &off, &tlen), IB_DROP_SHORT);
}

TEST(sofl)
{
	struct ib_sofl m = {.type = IB_SOFL_ASSIGN,
			    .phys_state = IB_PHYS_LINKUP,
			    .port = 1,
			    .node_guid = 0x0002c90300a1b2c3ull,
			    .port_guid = 0x0002c90300a1b2c4ull},
		       r;
	uint8_t b[IB_SOFL_LEN + 1];

	snprintf(m.name, sizeof(m.name), "%s", "H1");
	ib_sofl_write(b, &m);
	CHECK_MEM(b, "SOFL\x01\x03\x05\x01", 8);
	CHECK_EQ(b[8], 0x00);
	CHECK_EQ(b[15], 0xc3);
	CHECK_EQ(b[23], 0xc4);
	CHECK_MEM(b + 24, "H1\0", 3);
	CHECK(ib_is_sofl(b, IB_SOFL_LEN));
	CHECK_EQ(ib_sofl_parse(b, IB_SOFL_LEN, &r), 0);
	CHECK_EQ(r.type, IB_SOFL_ASSIGN);
	CHECK_EQ(r.phys_state, IB_PHYS_LINKUP);
	CHECK_EQ(r.port, 1);
	CHECK_EQ(r.node_guid, m.node_guid);
	CHECK_EQ(r.port_guid, m.port_guid);
	CHECK(!strcmp(r.name, "H1"));
	/* a full name of 64 bytes comes out terminated */
	memset(b + 24, 'x', 64);
	CHECK_EQ(ib_sofl_parse(b, IB_SOFL_LEN, &r), 0);
	CHECK_EQ(strlen(r.name), 64);
	/* malformed: length, magic, version, type, phys_state */
	CHECK_EQ(ib_sofl_parse(b, IB_SOFL_LEN - 1, &r), -EINVAL);
	CHECK_EQ(ib_sofl_parse(b, IB_SOFL_LEN + 1, &r), -EINVAL);
	b[4] = 2;
	CHECK_EQ(ib_sofl_parse(b, IB_SOFL_LEN, &r), -EINVAL);
	b[4] = 1;
	b[5] = IB_SOFL_DIRECT; /* the fabric's direct-path segment, in name */
	CHECK_EQ(ib_sofl_parse(b, IB_SOFL_LEN, &r), 0);
	CHECK_EQ(r.type, IB_SOFL_DIRECT);
	/* a host's counts of what it sent straight: records with zero
	 * bytes in them, kept whole in name */
	b[5] = IB_SOFL_COUNT;
	memset(b + 24, 0, IB_SOFL_NAME_LEN);
	b[25] = 7;  /* DLID 7 */
	b[31] = 3;  /* 3 packets */
	b[39] = 99; /* 99 words */
	CHECK_EQ(ib_sofl_parse(b, IB_SOFL_LEN, &r), 0);
	CHECK_EQ(r.type, IB_SOFL_COUNT);
	CHECK_EQ(memcmp(r.name, b + 24, IB_SOFL_NAME_LEN), 0);
	b[5] = 6;
	CHECK_EQ(ib_sofl_parse(b, IB_SOFL_LEN, &r), -EINVAL);
	b[5] = 1;
	b[6] = 0;
	CHECK_EQ(ib_sofl_parse(b, IB_SOFL_LEN, &r), -EINVAL);
	b[6] = 7;
	CHECK_EQ(ib_sofl_parse(b, IB_SOFL_LEN, &r), -EINVAL);
	b[0] = 'X';
	CHECK(!ib_is_sofl(b, IB_SOFL_LEN));
	/* no IB packet looks like one: LVer 3 */
	CHECK(!ib_is_sofl(kat_local, sizeof(kat_local)));
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--vcrc-only")) {
		RUN(vcrc_random);
		return test_summary();
	}
	RUN(lrh_round_trip);
	RUN(grh_round_trip);
	RUN(known_answers);
	RUN(parse_good);
	RUN(icrc_variant_fields);
	RUN(icrc_pieces);
	RUN(vcrc_lengths);
	RUN(vcrc_random);
	RUN(vcrc_paths);
	RUN(parse_drops);
	RUN(sofl);
	return test_summary();
}
