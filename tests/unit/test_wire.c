/*
 * The RoCEv2 wire format (transport/roce_wire.h): the opcode table against
 * IBA 9.2 table 35, header write/parse round trips of every opcode with
 * field values at their limits, every reason roce_parse drops a packet, the
 * ICRC against known answers, and PSN arithmetic. Needs no daemon.
 *
 * The known answers (wire_kat.h) come from tests/unit/wire_vectors.py,
 * which builds the packets from their field values with Python's struct
 * and computes the ICRC with zlib.crc32 over a real IP/UDP header with the
 * variant fields masked, independently of the C code. The same script
 * writes them to a pcap that tshark decodes field by field as this test
 * expects (tests/unit/wire_vectors.py --pcap F; tshark -r F -V).
 *
 * Every packet given to roce_parse lies in a heap block of exactly its
 * length, so that the ASan build catches any read past its end.
 */
#include "harness.h"

#include "roce_wire.h"

#include <arpa/inet.h>
#include <endian.h>
#include <stdlib.h>

#include "wire_kat.h"

#define NKATS (sizeof(kats) / sizeof(kats[0]))

/* the opcodes of IBA 9.2 table 35 that this device implements */
static bool implemented(unsigned op)
{
	return op <= 0x14 || op == 0x16 || op == 0x17 || op == 0x1d || (op >= 0x20 && op <= 0x2b) ||
	       op == 0x64 || op == 0x65 || (op >= 0xa0 && op <= 0xb4) || op == 0xb6 || op == 0xb7;
}

static size_t ext_len(uint32_t f)
{
	return (f & ROCE_F_RETH ? ROCE_RETH_LEN : 0) + (f & ROCE_F_AETH ? ROCE_AETH_LEN : 0) +
	       (f & ROCE_F_ATMETH ? ROCE_ATMETH_LEN : 0) +
	       (f & ROCE_F_ATMACK ? ROCE_ATMACK_LEN : 0) + (f & ROCE_F_IMMDT ? ROCE_IMMDT_LEN : 0) +
	       (f & ROCE_F_IETH ? ROCE_IETH_LEN : 0) + (f & ROCE_F_DETH ? ROCE_DETH_LEN : 0) +
	       (f & ROCE_F_XRCETH ? ROCE_XRCETH_LEN : 0);
}

static int popcount(uint32_t v) { return __builtin_popcount(v); }

/* parse a copy of pkt in a heap block of exactly len bytes */
static enum roce_drop parse_exact(const uint8_t *pkt, size_t len, struct roce_hdr *h,
				  uint32_t *paylen, size_t *payoff)
{
	uint8_t *copy = malloc(len ? len : 1);
	const uint8_t *payload;
	enum roce_drop r;

	CHECK(copy != NULL);
	if (len)
		memcpy(copy, pkt, len);
	r = roce_parse(copy, len, h, &payload, paylen);
	if (payoff)
		*payoff = payload ? (size_t)(payload - copy) : 0;
	if (r != ROCE_DROP_NONE) {
		CHECK(payload == NULL);
		CHECK_EQ(*paylen, 0);
	} else {
		CHECK(payload >= copy && payload + *paylen <= copy + len);
	}
	free(copy);
	return r;
}

static void addr_of(struct roce_addr *a, const char *src, const char *dst, uint16_t sport)
{
	static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	memset(a, 0, sizeof(*a));
	if (strchr(src, ':')) {
		CHECK_EQ(inet_pton(AF_INET6, src, a->src), 1);
		CHECK_EQ(inet_pton(AF_INET6, dst, a->dst), 1);
	} else {
		memcpy(a->src, mapped, 12);
		memcpy(a->dst, mapped, 12);
		CHECK_EQ(inet_pton(AF_INET, src, a->src + 12), 1);
		CHECK_EQ(inet_pton(AF_INET, dst, a->dst + 12), 1);
	}
	a->sport = sport;
	a->dport = ROCE_UDP_PORT;
}

/* Compare the fields that opcode carries; the others must be zero in b
 * (roce_parse clears them). */
static void check_fields(const struct roce_hdr *a, const struct roce_hdr *b)
{
	const struct roce_opinfo *oi = roce_opinfo(a->opcode);
	uint32_t f = oi->flags;

	CHECK_EQ(a->opcode, b->opcode);
	CHECK_EQ(a->se, b->se);
	CHECK_EQ(a->migreq, b->migreq);
	CHECK_EQ(a->pad & 3, b->pad);
	CHECK_EQ(a->tver & 0xf, b->tver);
	CHECK_EQ(a->pkey, b->pkey);
	CHECK_EQ(a->fecn, b->fecn);
	CHECK_EQ(a->becn, b->becn);
	CHECK_EQ(a->dqpn & ROCE_QPN_MASK, b->dqpn);
	CHECK_EQ(a->ackreq, b->ackreq);
	CHECK_EQ(a->psn & ROCE_PSN_MASK, b->psn);
	CHECK_EQ((f & (ROCE_F_RETH | ROCE_F_ATMETH)) ? a->va : 0, b->va);
	CHECK_EQ((f & (ROCE_F_RETH | ROCE_F_ATMETH)) ? a->rkey : 0, b->rkey);
	CHECK_EQ((f & ROCE_F_RETH) ? a->dmalen : 0, b->dmalen);
	CHECK_EQ((f & ROCE_F_ATMETH) ? a->swap_add : 0, b->swap_add);
	CHECK_EQ((f & ROCE_F_ATMETH) ? a->compare : 0, b->compare);
	CHECK_EQ((f & ROCE_F_AETH) ? a->syndrome : 0, b->syndrome);
	CHECK_EQ((f & ROCE_F_AETH) ? a->msn & 0xffffff : 0, b->msn);
	CHECK_EQ((f & ROCE_F_ATMACK) ? a->orig : 0, b->orig);
	CHECK_EQ((f & ROCE_F_IMMDT) ? a->imm_be : 0, b->imm_be);
	CHECK_EQ((f & ROCE_F_IETH) ? a->inv_rkey : 0, b->inv_rkey);
	CHECK_EQ((f & ROCE_F_DETH) ? a->qkey : 0, b->qkey);
	CHECK_EQ((f & ROCE_F_DETH) ? a->sqpn & ROCE_QPN_MASK : 0, b->sqpn);
	CHECK_EQ((f & ROCE_F_XRCETH) ? a->xrcsrq & ROCE_QPN_MASK : 0, b->xrcsrq);
}

TEST(opcode_table)
{
	unsigned op;
	size_t max = 0;
	int n = 0;

	for (op = 0; op < 256; op++) {
		const struct roce_opinfo *oi = roce_opinfo((uint8_t)op);
		uint32_t f, kind;
		bool aw;

		if (!implemented(op)) {
			CHECK(oi == NULL);
			continue;
		}
		CHECK(oi != NULL);
		n++;
		f = oi->flags;
		CHECK_EQ(oi->hdr_len, ROCE_BTH_LEN + ext_len(f));
		if (oi->hdr_len > max)
			max = oi->hdr_len;
		/* the name says the service */
		switch (op & ROCE_SVC_MASK) {
		case ROCE_SVC_RC:
			CHECK(strncmp(oi->name, "RC ", 3) == 0);
			break;
		case ROCE_SVC_UC:
			CHECK(strncmp(oi->name, "UC ", 3) == 0);
			/* same operation, same flags as RC */
			CHECK_EQ(f, roce_opinfo(op & ~ROCE_SVC_MASK)->flags);
			CHECK(strcmp(oi->name + 3, roce_opinfo(op & ~ROCE_SVC_MASK)->name + 3) ==
			      0);
			break;
		case ROCE_SVC_UD:
			CHECK(strncmp(oi->name, "UD ", 3) == 0);
			/* a UD packet always carries the DETH */
			CHECK(f & ROCE_F_DETH);
			CHECK_EQ(f & ~ROCE_F_DETH, roce_opinfo(op & ~ROCE_SVC_MASK)->flags);
			break;
		case ROCE_SVC_XRC:
			CHECK(strncmp(oi->name, "XRC ", 4) == 0);
			/* RC's operation; its requests carry the XRCETH */
			CHECK_EQ(f & ~ROCE_F_XRCETH, roce_opinfo(op & ~ROCE_SVC_MASK)->flags);
			CHECK_EQ(!!(f & ROCE_F_XRCETH), !!(f & ROCE_F_REQ));
			CHECK(strcmp(oi->name + 4, roce_opinfo(op & ~ROCE_SVC_MASK)->name + 3) ==
			      0);
			break;
		default:
			CHECK(0);
		}
		CHECK_EQ(popcount(f & (ROCE_F_REQ | ROCE_F_RESP)), 1);
		kind = f & (ROCE_F_SEND | ROCE_F_WRITE | ROCE_F_READ | ROCE_F_ATOMIC);
		CHECK_EQ(popcount(kind), (op & ~ROCE_SVC_MASK) == ROCE_ACK ? 0 : 1);
		/* FIRST, MIDDLE, LAST, or FIRST|LAST (an ONLY) */
		CHECK(f & (ROCE_F_FIRST | ROCE_F_MIDDLE | ROCE_F_LAST));
		if (f & ROCE_F_MIDDLE)
			CHECK(!(f & (ROCE_F_FIRST | ROCE_F_LAST)));
		if (strstr(oi->name, "ONLY") || strstr(oi->name, "ACK") ||
		    strstr(oi->name, "READ_REQ") || strstr(oi->name, "CMP_SWAP") ||
		    strstr(oi->name, "FETCH_ADD") || strstr(oi->name, "ATOMIC_WRITE"))
			CHECK_EQ(f & (ROCE_F_FIRST | ROCE_F_LAST), ROCE_F_FIRST | ROCE_F_LAST);
		/* which headers go with which operation */
		CHECK_EQ(!!(f & ROCE_F_IMMDT), strstr(oi->name, "_IMM") != NULL);
		CHECK_EQ(!!(f & ROCE_F_IETH), strstr(oi->name, "_INV") != NULL);
		/* ATOMIC WRITE (IBA 1.5): an atomic request with a RETH and
		 * 8 bytes of payload instead of the AtomicETH */
		aw = strstr(oi->name, "ATOMIC_WRITE") != NULL;
		CHECK_EQ(!!(f & ROCE_F_RETH), (f & ROCE_F_WRITE && f & ROCE_F_FIRST) ||
						  (f & ROCE_F_READ && f & ROCE_F_REQ) || aw);
		CHECK_EQ(!!(f & ROCE_F_ATMETH), f & ROCE_F_ATOMIC && f & ROCE_F_REQ && !aw);
		CHECK_EQ(!!(f & ROCE_F_ATMACK), f & ROCE_F_ATOMIC && f & ROCE_F_RESP);
		CHECK_EQ(!!(f & ROCE_F_AETH),
			 f & ROCE_F_RESP && !(f & ROCE_F_MIDDLE)); /* IBA: no AETH in the middle */
		CHECK_EQ(!!(f & ROCE_F_PAYLOAD), (f & (ROCE_F_SEND | ROCE_F_WRITE)) ||
						     (f & ROCE_F_READ && f & ROCE_F_RESP) || aw);
		CHECK_EQ(!!(f & ROCE_F_COMP),
			 f & ROCE_F_SEND || (f & ROCE_F_WRITE && f & ROCE_F_IMMDT));
	}
	CHECK_EQ(n, 24 + 12 + 2 + 23);
	CHECK_EQ(max, ROCE_MAX_HDR);
	CHECK(strcmp(roce_opinfo(ROCE_UD_SEND_ONLY)->name, "UD SEND_ONLY") == 0);
	CHECK_EQ(roce_opinfo(ROCE_UD_SEND_ONLY)->hdr_len, 20);
	CHECK(strcmp(roce_opinfo(ROCE_CMP_SWAP)->name, "RC CMP_SWAP") == 0);
	CHECK_EQ(roce_opinfo(ROCE_CMP_SWAP)->hdr_len, 40);
	CHECK(strcmp(roce_opinfo(0x2b)->name, "UC WRITE_ONLY_IMM") == 0);
	CHECK_EQ(roce_opinfo(0x2b)->hdr_len, 32);
	CHECK(strcmp(roce_opinfo(0xb3)->name, "XRC CMP_SWAP") == 0);
	CHECK_EQ(roce_opinfo(0xb3)->hdr_len, 44);
	CHECK_EQ(roce_opinfo(0xa4)->hdr_len, 16); /* XRC SEND_ONLY: BTH + XRCETH */
	CHECK_EQ(roce_opinfo(0xb1)->hdr_len, 16); /* XRC ACK: BTH + AETH */
	/* RD, CNP, reserved: not implemented */
	CHECK(roce_opinfo(0x15) == NULL);
	CHECK(roce_opinfo(0x2c) == NULL);
	CHECK(roce_opinfo(0x44) == NULL);
	CHECK(roce_opinfo(0x60) == NULL);
	CHECK(roce_opinfo(0x81) == NULL);
	CHECK(roce_opinfo(0xb5) == NULL);
}

TEST(drop_names)
{
	int i, j;

	for (i = 0; i < ROCE_DROP_NR; i++) {
		CHECK(roce_drop_names[i] != NULL && roce_drop_names[i][0]);
		for (j = 0; j < i; j++)
			CHECK(strcmp(roce_drop_names[i], roce_drop_names[j]) != 0);
	}
	CHECK(strcmp(roce_drop_names[ROCE_DROP_ICRC], "icrc") == 0);
	CHECK(strcmp(roce_drop_names[ROCE_DROP_SHORT], "short") == 0);
}

/* field values of pattern k: 0 = all bits of every field set (and more:
 * the 24-bit fields get 32 bits, which must be cut to 24), 1 = zero,
 * 2 = distinct values with the top and bottom bits set */
static void pattern(struct roce_hdr *h, uint8_t op, int k)
{
	memset(h, 0, sizeof(*h));
	h->opcode = op;
	if (k == 1)
		return;
	if (k == 0) {
		h->se = h->migreq = h->fecn = h->becn = h->ackreq = true;
		h->pad = 3;
		h->pkey = 0xffff;
		h->dqpn = h->psn = h->msn = h->sqpn = h->xrcsrq = 0xffffffff;
		h->va = h->swap_add = h->compare = h->orig = UINT64_MAX;
		h->rkey = h->dmalen = h->imm_be = h->inv_rkey = h->qkey = 0xffffffff;
		h->syndrome = 0xff;
		return;
	}
	h->se = true;
	h->becn = true;
	h->pad = 2;
	h->pkey = 0x8001;
	h->dqpn = 0x800001;
	h->psn = 0xc00003;
	h->va = 0x8000000000000001ull;
	h->rkey = 0x80000002;
	h->dmalen = 0x80000003;
	h->swap_add = 0x8000000000000004ull;
	h->compare = 0x8000000000000005ull;
	h->syndrome = 0x81;
	h->msn = 0x800006;
	h->orig = 0x8000000000000007ull;
	h->imm_be = htobe32(0x80000008);
	h->inv_rkey = 0x80000009;
	h->qkey = 0x8000000a;
	h->sqpn = 0x80000b;
	h->xrcsrq = 0x80000c;
}

TEST(roundtrip_every_opcode)
{
	unsigned op;
	int k;

	for (op = 0; op < 256; op++) {
		const struct roce_opinfo *oi = roce_opinfo((uint8_t)op);

		if (!oi)
			continue;
		for (k = 0; k < 3; k++) {
			uint8_t buf[ROCE_MAX_HDR + 64 + ROCE_ICRC_LEN];
			struct roce_hdr h, p;
			struct roce_addr a;
			uint32_t paylen, plen = 0;
			size_t n, payoff;

			pattern(&h, (uint8_t)op, k);
			if (!(oi->flags & ROCE_F_PAYLOAD))
				h.pad = 0;
			memset(buf, 0xee, sizeof(buf));
			n = roce_hdr_write(buf, &h);
			CHECK_EQ(n, oi->hdr_len);
			CHECK_EQ(buf[n], 0xee); /* nothing written past the headers */
			/* reserved BTH bits are zero */
			CHECK_EQ(buf[4] & 0x3f, 0);
			CHECK_EQ(buf[8] & 0x7f, 0);
			if (oi->flags & ROCE_F_DETH)
				CHECK_EQ(buf[ROCE_BTH_LEN + 4], 0);
			if (oi->flags & ROCE_F_PAYLOAD) {
				size_t i;

				plen = 64 - h.pad; /* payload + pad: a multiple of 4 */
				for (i = 0; i < plen; i++)
					buf[n + i] = (uint8_t)(i * 37 + op);
				memset(buf + n + plen, 0, h.pad);
			}
			addr_of(&a, k ? "10.0.0.1" : "fe80::1", k ? "10.0.0.2" : "fe80::2", 0xc0de);
			roce_icrc_append(&a, buf, n + plen + h.pad);
			CHECK_EQ(parse_exact(buf, n + plen + h.pad + ROCE_ICRC_LEN, &p, &paylen,
					     &payoff),
				 ROCE_DROP_NONE);
			check_fields(&h, &p);
			CHECK_EQ(paylen, plen);
			CHECK_EQ(payoff, n);
			CHECK(roce_icrc_check(&a, buf, n + plen + h.pad + ROCE_ICRC_LEN));
			/* rewriting what was parsed gives the same bytes */
			{
				uint8_t again[ROCE_MAX_HDR];

				CHECK_EQ(roce_hdr_write(again, &p), n);
				CHECK_MEM(again, buf, n);
			}
		}
	}
}

/* byte positions of the BTH fields, IBA 9.2, checked byte by byte */
TEST(bth_bit_positions)
{
	static const uint8_t want[12] = {
	    0x64, 0x80 | 0x40 | 0x30, 0x12, 0x34, 0x80 | 0x40, 0xab, 0xcd, 0xef, 0x80, 0x01, 0x02,
	    0x03};
	struct roce_hdr h = {
	    .opcode = ROCE_UD_SEND_ONLY,
	    .se = true,
	    .migreq = true,
	    .pad = 3,
	    .pkey = 0x1234,
	    .fecn = true,
	    .becn = true,
	    .dqpn = 0xabcdef,
	    .ackreq = true,
	    .psn = 0x010203,
	    .qkey = 0x11223344,
	    .sqpn = 0x556677,
	};
	static const uint8_t deth[8] = {0x11, 0x22, 0x33, 0x44, 0x00, 0x55, 0x66, 0x77};
	uint8_t buf[ROCE_MAX_HDR];

	CHECK_EQ(roce_hdr_write(buf, &h), 20);
	CHECK_MEM(buf, want, 12);
	CHECK_MEM(buf + 12, deth, 8);
	/* tver goes in the low nibble of byte 1 */
	h.tver = 0xf;
	h.se = h.migreq = false;
	h.pad = 0;
	roce_hdr_write(buf, &h);
	CHECK_EQ(buf[1], 0x0f);
}

TEST(write_unknown_opcode)
{
	unsigned op;

	for (op = 0; op < 256; op++) {
		struct roce_hdr h = {.opcode = (uint8_t)op};
		uint8_t buf[ROCE_MAX_HDR];

		if (roce_opinfo((uint8_t)op))
			continue;
		memset(buf, 0xee, sizeof(buf));
		CHECK_EQ(roce_hdr_write(buf, &h), 0);
		CHECK_EQ(buf[0], 0xee);
	}
}

/* a valid packet of op with payload bytes of payload (and pad 0) */
static size_t make_pkt(uint8_t *buf, uint8_t op, uint8_t pad, size_t payload)
{
	struct roce_hdr h;
	size_t n;

	pattern(&h, op, 2);
	h.pad = pad;
	n = roce_hdr_write(buf, &h);
	memset(buf + n, 0x5a, payload);
	memset(buf + n + payload, 0xc3, ROCE_ICRC_LEN);
	return n + payload + ROCE_ICRC_LEN;
}

TEST(reject_short)
{
	unsigned op;

	for (op = 0; op < 256; op++) {
		const struct roce_opinfo *oi = roce_opinfo((uint8_t)op);
		uint8_t buf[ROCE_MAX_HDR + 8];
		struct roce_hdr h;
		uint32_t paylen;
		size_t len, full;

		if (!oi)
			continue;
		full = make_pkt(buf, (uint8_t)op, 0, 0);
		CHECK_EQ(full, oi->hdr_len + ROCE_ICRC_LEN);
		CHECK_EQ(parse_exact(buf, full, &h, &paylen, NULL), ROCE_DROP_NONE);
		CHECK_EQ(paylen, 0);
		for (len = 0; len < full; len++)
			CHECK_EQ(parse_exact(buf, len, &h, &paylen, NULL), ROCE_DROP_SHORT);
	}
}

TEST(reject_version)
{
	uint8_t buf[64];
	struct roce_hdr h;
	uint32_t paylen;
	size_t len;
	int v;

	len = make_pkt(buf, ROCE_SEND_ONLY, 0, 8);
	for (v = 1; v < 16; v++) {
		buf[1] = (uint8_t)((buf[1] & 0xf0) | v);
		CHECK_EQ(parse_exact(buf, len, &h, &paylen, NULL), ROCE_DROP_VERSION);
		CHECK_EQ(h.tver, v);
	}
	buf[1] &= 0xf0;
	CHECK_EQ(parse_exact(buf, len, &h, &paylen, NULL), ROCE_DROP_NONE);
}

TEST(reject_opcode)
{
	uint8_t buf[64];
	struct roce_hdr h;
	uint32_t paylen;
	size_t len;
	unsigned op;

	len = make_pkt(buf, ROCE_SEND_ONLY, 0, 8);
	for (op = 0; op < 256; op++) {
		buf[0] = (uint8_t)op;
		if (roce_opinfo((uint8_t)op)) {
			/* 8 bytes after the BTH: only the payload-less with a
			 * short header may complain, and only of length or payload */
			enum roce_drop r = parse_exact(buf, len, &h, &paylen, NULL);

			CHECK(r == ROCE_DROP_NONE || r == ROCE_DROP_SHORT ||
			      r == ROCE_DROP_PAYLOAD);
			continue;
		}
		CHECK_EQ(parse_exact(buf, len, &h, &paylen, NULL), ROCE_DROP_OPCODE);
		CHECK_EQ(h.opcode, op);
	}
}

TEST(reject_pad)
{
	uint8_t buf[64];
	struct roce_hdr h;
	uint32_t paylen;
	size_t len, pl;
	uint8_t pad;

	/* pad up to what lies between headers and ICRC: fine */
	for (pl = 0; pl <= 4; pl++) {
		for (pad = 0; pad < 4; pad++) {
			len = make_pkt(buf, ROCE_SEND_ONLY, pad, pl);
			CHECK_EQ(parse_exact(buf, len, &h, &paylen, NULL),
				 pad <= pl ? ROCE_DROP_NONE : ROCE_DROP_SHORT);
			if (pad <= pl)
				CHECK_EQ(paylen, pl - pad);
		}
	}
	/* the same on UD, behind the DETH */
	len = make_pkt(buf, ROCE_UD_SEND_ONLY, 3, 2);
	CHECK_EQ(parse_exact(buf, len, &h, &paylen, NULL), ROCE_DROP_SHORT);
	len = make_pkt(buf, ROCE_UD_SEND_ONLY, 3, 3);
	CHECK_EQ(parse_exact(buf, len, &h, &paylen, NULL), ROCE_DROP_NONE);
	CHECK_EQ(paylen, 0);
}

TEST(reject_payload)
{
	unsigned op;

	for (op = 0; op < 256; op++) {
		const struct roce_opinfo *oi = roce_opinfo((uint8_t)op);
		uint8_t buf[ROCE_MAX_HDR + 16];
		struct roce_hdr h;
		uint32_t paylen;
		size_t extra;

		if (!oi)
			continue;
		for (extra = 1; extra <= 8; extra++) {
			size_t len = make_pkt(buf, (uint8_t)op, 0, extra);
			CHECK_EQ(parse_exact(buf, len, &h, &paylen, NULL),
				 oi->flags & ROCE_F_PAYLOAD ? ROCE_DROP_NONE : ROCE_DROP_PAYLOAD);
		}
	}
}

/* UD SEND is 0x64 and carries the DETH: a UD packet without one is short */
TEST(ud_needs_deth)
{
	uint8_t buf[64];
	struct roce_hdr h = {.opcode = ROCE_SEND_ONLY, .dqpn = 7};
	uint32_t paylen;
	size_t n;

	n = roce_hdr_write(buf, &h);
	buf[0] = ROCE_UD_SEND_ONLY; /* a BTH only, then the ICRC */
	memset(buf + n, 0, ROCE_ICRC_LEN);
	CHECK_EQ(parse_exact(buf, n + ROCE_ICRC_LEN, &h, &paylen, NULL), ROCE_DROP_SHORT);
	/* with 8 bytes more it parses, and those are the DETH */
	memcpy(buf + n, "\x00\x00\x00\x2a\x00\x00\x00\x09", 8);
	memset(buf + n + 8, 0, ROCE_ICRC_LEN);
	CHECK_EQ(parse_exact(buf, n + 8 + ROCE_ICRC_LEN, &h, &paylen, NULL), ROCE_DROP_NONE);
	CHECK_EQ(h.qkey, 42);
	CHECK_EQ(h.sqpn, 9);
	CHECK_EQ(paylen, 0);
}

/* Known answers: our header writer and ICRC must produce the exact bytes
 * that wire_vectors.py built from the spec; parsing gives back the fields. */
TEST(icrc_known_answers)
{
	size_t i;

	for (i = 0; i < NKATS; i++) {
		const struct kat *k = &kats[i];
		struct roce_hdr h = k->h, p;
		uint8_t buf[2048];
		struct roce_addr a;
		uint32_t paylen;
		size_t n, payoff;

		h.imm_be = htobe32(k->imm);
		addr_of(&a, k->src, k->dst, k->sport);
		n = roce_hdr_write(buf, &h);
		CHECK_EQ(n, roce_opinfo(h.opcode)->hdr_len);
		memcpy(buf + n, k->pkt + n, k->paylen);
		memset(buf + n + k->paylen, 0, h.pad);
		CHECK_EQ(n + k->paylen + h.pad + ROCE_ICRC_LEN, k->len);
		CHECK_EQ(roce_icrc(&a, buf, k->len - ROCE_ICRC_LEN), k->icrc);
		roce_icrc_append(&a, buf, k->len - ROCE_ICRC_LEN);
		CHECK_MEM(buf, k->pkt, k->len);
		CHECK(roce_icrc_check(&a, k->pkt, k->len));

		CHECK_EQ(parse_exact(k->pkt, k->len, &p, &paylen, &payoff), ROCE_DROP_NONE);
		check_fields(&h, &p);
		CHECK_EQ(paylen, k->paylen);
		CHECK_EQ(payoff, n);
	}
}

/* Every bit of the packet is covered by the ICRC except the variant BTH
 * byte (FECN, BECN, Resv6a), which a switch may change; so are the
 * addresses and ports. */
TEST(icrc_coverage)
{
	size_t i, bit;

	for (i = 0; i < NKATS; i++) {
		const struct kat *k = &kats[i];
		uint8_t buf[2048];
		struct roce_addr a, b;

		addr_of(&a, k->src, k->dst, k->sport);
		memcpy(buf, k->pkt, k->len);
		for (bit = 0; bit < k->len * 8; bit++) {
			buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
			CHECK_EQ(roce_icrc_check(&a, buf, k->len), bit / 8 == 4);
			buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		}
		CHECK(roce_icrc_check(&a, buf, k->len));
		b = a;
		b.src[15] ^= 1;
		CHECK(!roce_icrc_check(&b, buf, k->len));
		b = a;
		b.dst[15] ^= 0x80;
		CHECK(!roce_icrc_check(&b, buf, k->len));
		b = a;
		b.sport ^= 0x100;
		CHECK(!roce_icrc_check(&b, buf, k->len));
		b = a;
		b.dport ^= 1;
		CHECK(!roce_icrc_check(&b, buf, k->len));
		/* the IPv4 and the IPv6 pseudo-headers differ */
		b = a;
		b.src[10] ^= 0xff;
		CHECK(!roce_icrc_check(&b, buf, k->len));
	}
	{
		struct roce_addr z = {0};
		uint8_t tiny[4] = {0};

		CHECK(!roce_icrc_check(&z, tiny, 3));
		CHECK(!roce_icrc_check(&z, tiny, 0));
	}
}

/* The CRC of Ethernet, bit by bit, as a reference for the table-driven
 * one: every length and alignment gives the same answer. */
static uint32_t crc_bitwise(uint32_t crc, const uint8_t *p, size_t len)
{
	int k;

	while (len--) {
		crc ^= *p++;
		for (k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (crc & 1 ? 0xedb88320u : 0);
	}
	return crc;
}

/* The ICRC computed byte by byte from the pseudo-header; IPv4 with IP ID
 * ipid (the engine sends 0, or a GSO segment's place). */
static uint32_t icrc_reference_id(const struct roce_addr *a, const uint8_t *pkt, size_t len,
				  uint16_t ipid)
{
	uint8_t ph[8 + 40 + 8 + 12];
	size_t n = 0, b = len < 12 ? len : 12;
	unsigned ulen = (unsigned)(8 + len + 4);
	static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	bool v4 = !memcmp(a->src, mapped, 12) && !memcmp(a->dst, mapped, 12);
	uint32_t crc;

	memset(ph, 0xff, 8);
	n = 8;
	if (v4) {
		const uint8_t ip[12] = {0x45,
					0xff,
					(uint8_t)((20 + ulen) >> 8),
					(uint8_t)(20 + ulen),
					(uint8_t)(ipid >> 8),
					(uint8_t)ipid,
					0x40,
					0,
					0xff,
					17,
					0xff,
					0xff};

		memcpy(ph + n, ip, 12);
		memcpy(ph + n + 12, a->src + 12, 4);
		memcpy(ph + n + 16, a->dst + 12, 4);
		n += 20;
	} else {
		const uint8_t ip[8] = {0x6f,	      0xff, 0xff, 0xff, (uint8_t)(ulen >> 8),
				       (uint8_t)ulen, 17,   0xff};

		memcpy(ph + n, ip, 8);
		memcpy(ph + n + 8, a->src, 16);
		memcpy(ph + n + 24, a->dst, 16);
		n += 40;
	}
	ph[n++] = (uint8_t)(a->sport >> 8);
	ph[n++] = (uint8_t)a->sport;
	ph[n++] = (uint8_t)(a->dport >> 8);
	ph[n++] = (uint8_t)a->dport;
	ph[n++] = (uint8_t)(ulen >> 8);
	ph[n++] = (uint8_t)ulen;
	ph[n++] = 0xff;
	ph[n++] = 0xff;
	memcpy(ph + n, pkt, b);
	if (len > 4)
		ph[n + 4] = 0xff;
	n += b;
	crc = crc_bitwise(0xffffffffu, ph, n);
	return ~crc_bitwise(crc, pkt + b, len - b);
}

static uint32_t icrc_reference(const struct roce_addr *a, const uint8_t *pkt, size_t len)
{
	return icrc_reference_id(a, pkt, len, 0);
}

TEST(icrc_every_length_and_alignment)
{
	static uint8_t data[4200 + 8];
	struct roce_addr a4, a6;
	size_t len, off, i;

	for (i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 131 + (i >> 3));
	addr_of(&a4, "172.16.0.1", "172.16.0.2", 0xabcd);
	addr_of(&a6, "fd00::1:2:3:4", "fd00::5:6:7:8", 0x1234);
	/* up to a full 4096-byte MTU with headers: the folding code (64
	 * bytes a step, then 16, then the tables) at every remainder */
	for (len = 0; len <= 4200; len += len < 300 ? 1 : 61) {
		for (off = 0; off < 8; off++) {
			CHECK_EQ(roce_icrc(&a4, data + off, len),
				 icrc_reference(&a4, data + off, len));
			CHECK_EQ(roce_icrc(&a6, data + off, len),
				 icrc_reference(&a6, data + off, len));
		}
	}
	/* the reference is the CRC-32 of Ethernet: its check value */
	CHECK_EQ(~crc_bitwise(0xffffffffu, (const uint8_t *)"123456789", 9), 0xcbf43926u);
}

/* The CRC's 512-bit folding (a 4 KiB run, where the CPU has VPCLMULQDQ)
 * hands its last 128 bits to SSE code and returns to more: it must leave
 * the upper halves of the vector registers clean (VZEROUPPER), or each
 * of those SSE instructions waits on them (a 4 KiB ICRC took 4x as long). */
TEST(icrc_vector_state_clean)
{
	static uint8_t data[4096];

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7);
	for (size_t len = 4096; len >= 4000; len -= 37) {
		uint32_t crc = roce_crc32_update(0xffffffffu, data, len);
		uint64_t dirty = test_vector_upper_dirty();

		CHECK_EQ(dirty, 0);
		CHECK_EQ(~crc, ~crc_bitwise(0xffffffffu, data, len));
	}
}

/* A packet in pieces (the engine sends payload from registered memory by
 * reference) has the ICRC of the packet in one piece, however it is cut,
 * the BTH itself cut included. */
TEST(icrc_in_pieces)
{
	static uint8_t data[4200];
	struct roce_addr a4, a6;
	uint32_t seed = 12345;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 29 + (i >> 4));
	addr_of(&a4, "10.77.0.2", "10.77.0.1", 0xc123);
	addr_of(&a6, "fd77::2", "fd77::1", 0xc123);
	for (int round = 0; round < 2000; round++) {
		struct iovec v[6];
		size_t len, off = 0;
		unsigned n = 0;

		seed = seed * 1103515245u + 12345u;
		len = (seed >> 8) % sizeof(data);
		while (off < len && n < 5) {
			size_t k;

			seed = seed * 1103515245u + 12345u;
			k = round & 1 ? (seed >> 8) % 20 : (seed >> 8) % (len - off + 1);
			if (k > len - off)
				k = len - off;
			v[n].iov_base = data + off;
			v[n++].iov_len = k;
			off += k;
		}
		v[n].iov_base = data + off;
		v[n++].iov_len = len - off;
		CHECK_EQ(roce_icrc_iov(&a4, v, n), roce_icrc(&a4, data, len));
		CHECK_EQ(roce_icrc_iov(&a6, v, n), roce_icrc(&a6, data, len));
	}
}

/* IPv4: the ICRC of another IP ID is the one of ID 0 XOR a difference
 * (roce_icrc_ipid_delta); a receiver accepts IDs 0 .. ROCE_ICRC_MAX_IPID - 1
 * (the places of UDP GSO segments), no other. */
TEST(icrc_ipv4_id)
{
	static uint8_t data[4200];
	static const size_t lens[] = {0, 1, 12, 40, 1040, 1056, 4108, 4124, 4200};
	static const uint16_t ids[] = {0, 1, 2, 7, 14, 63, 64, 255, 256, 0x1234, 0xffff};
	struct roce_addr a4, a6;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + (i >> 5));
	addr_of(&a4, "10.77.0.2", "10.77.0.1", 0xc123);
	addr_of(&a6, "fd77::2", "fd77::1", 0xc123);
	for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
		size_t len = lens[l];

		for (size_t j = 0; j < sizeof(ids) / sizeof(ids[0]); j++) {
			uint16_t id = ids[j];
			uint32_t crc = icrc_reference_id(&a4, data, len, id);
			uint8_t pkt[4200 + ROCE_ICRC_LEN];

			CHECK_EQ(roce_icrc(&a4, data, len) ^ roce_icrc_ipid_delta(len, id), crc);
			memcpy(pkt, data, len);
			pkt[len] = (uint8_t)crc;
			pkt[len + 1] = (uint8_t)(crc >> 8);
			pkt[len + 2] = (uint8_t)(crc >> 16);
			pkt[len + 3] = (uint8_t)(crc >> 24);
			CHECK_EQ(roce_icrc_check(&a4, pkt, len + ROCE_ICRC_LEN),
				 id < ROCE_ICRC_MAX_IPID);
			/* IPv6 has no ID: only the exact ICRC */
			crc = roce_icrc(&a6, data, len) ^ roce_icrc_ipid_delta(len, id);
			pkt[len] = (uint8_t)crc;
			pkt[len + 1] = (uint8_t)(crc >> 8);
			pkt[len + 2] = (uint8_t)(crc >> 16);
			pkt[len + 3] = (uint8_t)(crc >> 24);
			CHECK_EQ(roce_icrc_check(&a6, pkt, len + ROCE_ICRC_LEN), id == 0);
		}
	}
	CHECK_EQ(roce_icrc_ipid_delta(100, 0), 0);
}

/* The _c forms with one cache for several flows, lengths and IDs, more
 * than it keeps (ROCE_ICRC_HEADS): always the ICRC of the forms without
 * one, whatever the cache held before. */
TEST(icrc_cache)
{
	static uint8_t data[4200];
	static const char *const src[] = {"10.77.0.2", "10.77.0.3", "fd77::2", "fd77::3"};
	struct roce_icrc_cache c = {0};
	struct roce_addr a[8];
	uint32_t seed = 777;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 13 + (i >> 3));
	for (unsigned k = 0; k < 8; k++)
		addr_of(&a[k], src[k % 4], k % 4 < 2 ? "10.77.0.1" : "fd77::1",
			(uint16_t)(0xc000 + k / 4));
	for (int round = 0; round < 3000; round++) {
		const struct roce_addr *f;
		unsigned k;
		uint8_t pkt[4200 + ROCE_ICRC_LEN];
		struct iovec v[2];
		uint32_t crc;
		uint16_t id;
		size_t len;

		seed = seed * 1103515245u + 12345u;
		k = (seed >> 8) % (round < 1500 ? 3u : 8u);
		f = &a[k];
		len = (size_t)((seed >> 12) % 6) * 8 + (round & 1 ? 16 : 1000);
		id = (uint16_t)((seed >> 20) % 80);
		v[0] = (struct iovec){data, len / 3};
		v[1] = (struct iovec){data + len / 3, len - len / 3};
		crc = roce_icrc_iov(f, v, 2);
		CHECK_EQ(roce_icrc_iov_c(&c, f, v, 2), crc);
		if (k % 4 < 2) {
			CHECK_EQ(roce_icrc_ipid_delta_c(&c, len, id),
				 roce_icrc_ipid_delta(len, id));
			crc ^= roce_icrc_ipid_delta(len, id);
		} else {
			id = 0;
		}
		memcpy(pkt, data, len);
		pkt[len] = (uint8_t)crc;
		pkt[len + 1] = (uint8_t)(crc >> 8);
		pkt[len + 2] = (uint8_t)(crc >> 16);
		pkt[len + 3] = (uint8_t)(crc >> 24);
		CHECK_EQ(roce_icrc_check_c(&c, f, pkt, len + ROCE_ICRC_LEN),
			 id < ROCE_ICRC_MAX_IPID);
		pkt[len / 2] ^= 0x10; /* a bit flipped: no ID makes it right */
		CHECK(!roce_icrc_check_c(&c, f, pkt, len + ROCE_ICRC_LEN));
	}
}

TEST(psn_diff)
{
	CHECK_EQ(roce_psn_diff(5, 3), 2);
	CHECK_EQ(roce_psn_diff(3, 5), -2);
	CHECK_EQ(roce_psn_diff(0, 0), 0);
	/* wrap-around: 0 comes right after 0xffffff */
	CHECK_EQ(roce_psn_diff(0, 0xffffff), 1);
	CHECK_EQ(roce_psn_diff(0xffffff, 0), -1);
	CHECK_EQ(roce_psn_diff(2, 0xfffffe), 4);
	CHECK_EQ(roce_psn_diff(0xfffffe, 2), -4);
	/* the half-way limits: [-2^23, 2^23) */
	CHECK_EQ(roce_psn_diff(0x7fffff, 0), 0x7fffff);
	CHECK_EQ(roce_psn_diff(0x800000, 0), -0x800000);
	CHECK_EQ(roce_psn_diff(0, 0x800000), -0x800000);
	CHECK_EQ(roce_psn_diff(0x800000, 1), 0x7fffff);
	/* bits above the 24 do not count */
	CHECK_EQ(roce_psn_diff(0xff000005, 3), 2);
	CHECK_EQ(roce_psn_diff(5, 0x12000003), 2);
}

/* XRC (IBTA XRC annex): the XRCETH follows the BTH (before the RETH),
 * Resv8 then the 24-bit XRC SRQ number; responses carry none */
TEST(xrceth_positions)
{
	static const uint8_t want[32] = {
	    0xa6, 0x00, 0xff, 0xff, 0x00, 0x12, 0x34, 0x56, 0x00, 0x00, 0x00, 0x07,
	    0x00, 0xab, 0xcd, 0xef,					/* XRCETH */
	    0x00, 0x00, 0x7f, 0x00, 0x00, 0x00, 0x10, 0x00,		/* RETH VA */
	    0x11, 0x22, 0x33, 0x44, 0x00, 0x00, 0x20, 0x00};		/* R_Key, length */
	struct roce_hdr h = {.opcode = ROCE_SVC_XRC | ROCE_WRITE_FIRST,
			     .pkey = 0xffff,
			     .dqpn = 0x123456,
			     .psn = 7,
			     .xrcsrq = 0xabcdef,
			     .va = 0x7f0000001000ull,
			     .rkey = 0x11223344,
			     .dmalen = 0x2000};
	uint8_t buf[ROCE_MAX_HDR];

	CHECK_EQ(roce_hdr_write(buf, &h), sizeof(want));
	CHECK_MEM(buf, want, sizeof(want));
	h.opcode = ROCE_SVC_XRC | ROCE_ACK;
	CHECK_EQ(roce_hdr_write(buf, &h), ROCE_BTH_LEN + ROCE_AETH_LEN);
}

int main(void)
{
	RUN(opcode_table);
	RUN(drop_names);
	RUN(roundtrip_every_opcode);
	RUN(bth_bit_positions);
	RUN(xrceth_positions);
	RUN(write_unknown_opcode);
	RUN(reject_short);
	RUN(reject_version);
	RUN(reject_opcode);
	RUN(reject_pad);
	RUN(reject_payload);
	RUN(ud_needs_deth);
	RUN(icrc_known_answers);
	RUN(icrc_coverage);
	RUN(icrc_every_length_and_alignment);
	RUN(icrc_ipv4_id);
	RUN(icrc_in_pieces);
	RUN(icrc_vector_state_clean);
	RUN(icrc_cache);
	RUN(psn_diff);
	return test_summary();
}
