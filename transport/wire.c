/*
 * RoCEv2 wire format: the opcode table, and writing and parsing the base
 * and extended transport headers (IBA vol. 1, 9.2 - 9.5). The contract is
 * roce_wire.h; the ICRC is in icrc.c.
 *
 * Every byte offset, bit position and mask of a header is in this file.
 * Headers follow the BTH in the order IBA 9.2 gives them (RDETH, not
 * implemented here, would come first):
 *
 *   DETH | XRCETH | RETH or AtomicETH | AETH | AtomicAckETH | ImmDt or IETH
 *
 * so one walk in that order, driven by the opcode's flags, writes or parses
 * the headers of every opcode.
 */
#include "roce_wire.h"
#include "sof_bytes.h"

#include <string.h>

/* The headers are big-endian on the wire (sof_bytes.h). */







/* BTH, IBA 9.2:
 *   0: OpCode
 *   1: SE (7) | M (6) | PadCnt (5:4) | TVer (3:0)
 *   2: P_Key (16)
 *   4: FECN (7) | BECN (6) | Resv6a (5:0)   (all of it variant for the ICRC)
 *   5: DestQP (24)
 *   8: AckReq (7) | Resv7 (6:0)
 *   9: PSN (24)
 */
#define BTH_SE 0x80
#define BTH_MIG 0x40
#define BTH_PAD_SHIFT 4
#define BTH_PAD_MASK 0x3
#define BTH_TVER_MASK 0xf
#define BTH_FECN 0x80
#define BTH_BECN 0x40
#define BTH_ACKREQ 0x80
/* Resv7's top bit: softofed's extension (transport/README.md); IBA 9.2
 * has the sender zero Resv7 and the receiver ignore it */
#define BTH_SOFEXT 0x40

/* Flags shared by the opcodes of one kind; every opcode spells out the
 * rest (its position in the message and its extended headers). */
#define SEND_F (ROCE_F_PAYLOAD | ROCE_F_REQ | ROCE_F_SEND | ROCE_F_COMP)
#define WRITE_F (ROCE_F_PAYLOAD | ROCE_F_REQ | ROCE_F_WRITE)
#define RRESP_F (ROCE_F_PAYLOAD | ROCE_F_RESP | ROCE_F_READ)
#define ONLY_F (ROCE_F_FIRST | ROCE_F_LAST)

#define BTH ROCE_BTH_LEN
#define RETH ROCE_RETH_LEN
#define AETH ROCE_AETH_LEN
#define ATMETH ROCE_ATMETH_LEN
#define ATMACK ROCE_ATMACK_LEN
#define IMMDT ROCE_IMMDT_LEN
#define IETH ROCE_IETH_LEN
#define DETH ROCE_DETH_LEN
#define XRCETH ROCE_XRCETH_LEN

#define OP(code, nm, fl, len) [code] = {.name = (nm), .flags = (fl), .hdr_len = (len)}
/* The RC opcodes are enum roce_opcode itself; UC and UD add their service. */
#define RC(op, fl, len) OP(ROCE_##op, "RC " #op, fl, len)
#define UC(op, fl, len) OP(ROCE_SVC_UC | ROCE_##op, "UC " #op, fl, len)
#define UD(op, fl, len) OP(ROCE_UD_##op, "UD " #op, fl, len)
/* XRC has every RC operation; its requests carry the XRCETH, its
 * responses are RC's (IBA XRC annex, table of XRC opcodes) */
#define XQ(op, fl, len)                                                                            \
	OP(ROCE_SVC_XRC | ROCE_##op, "XRC " #op, (fl) | ROCE_F_XRCETH, (len) + XRCETH)
#define XR(op, fl, len) OP(ROCE_SVC_XRC | ROCE_##op, "XRC " #op, fl, len)

/*
 * IBA 9.2 table 35, indexed by the opcode on the wire. The RC and UC
 * operations share their low five bits; UC has sends and writes only, UD
 * only SEND Only with or without immediate; SEND with invalidate, READ,
 * the atomics and the acknowledgements are RC's and XRC's. RD and CNP are
 * not implemented, nor is FLUSH (0x1c; rdma-core 44 has no verb for it):
 * their entries stay empty. ATOMIC WRITE (IBA 1.5) is an atomic request
 * with a RETH and exactly 8 bytes of payload.
 * A SEND consumes a receive WQE from its first packet on, so every SEND
 * opcode carries ROCE_F_COMP; of the writes, only those with immediate do.
 */
static const struct roce_opinfo roce_ops[256] = {
    /* Reliable Connection */
    RC(SEND_FIRST, SEND_F | ROCE_F_FIRST, BTH),
    RC(SEND_MIDDLE, SEND_F | ROCE_F_MIDDLE, BTH),
    RC(SEND_LAST, SEND_F | ROCE_F_LAST, BTH),
    RC(SEND_LAST_IMM, SEND_F | ROCE_F_LAST | ROCE_F_IMMDT, BTH + IMMDT),
    RC(SEND_ONLY, SEND_F | ONLY_F, BTH),
    RC(SEND_ONLY_IMM, SEND_F | ONLY_F | ROCE_F_IMMDT, BTH + IMMDT),
    RC(WRITE_FIRST, WRITE_F | ROCE_F_FIRST | ROCE_F_RETH, BTH + RETH),
    RC(WRITE_MIDDLE, WRITE_F | ROCE_F_MIDDLE, BTH),
    RC(WRITE_LAST, WRITE_F | ROCE_F_LAST, BTH),
    RC(WRITE_LAST_IMM, WRITE_F | ROCE_F_LAST | ROCE_F_IMMDT | ROCE_F_COMP, BTH + IMMDT),
    RC(WRITE_ONLY, WRITE_F | ONLY_F | ROCE_F_RETH, BTH + RETH),
    RC(WRITE_ONLY_IMM, WRITE_F | ONLY_F | ROCE_F_RETH | ROCE_F_IMMDT | ROCE_F_COMP,
       BTH + RETH + IMMDT),
    RC(READ_REQ, ROCE_F_REQ | ROCE_F_READ | ONLY_F | ROCE_F_RETH, BTH + RETH),
    RC(READ_RESP_FIRST, RRESP_F | ROCE_F_FIRST | ROCE_F_AETH, BTH + AETH),
    /* a middle read response carries no AETH */
    RC(READ_RESP_MIDDLE, RRESP_F | ROCE_F_MIDDLE, BTH),
    RC(READ_RESP_LAST, RRESP_F | ROCE_F_LAST | ROCE_F_AETH, BTH + AETH),
    RC(READ_RESP_ONLY, RRESP_F | ONLY_F | ROCE_F_AETH, BTH + AETH),
    RC(ACK, ROCE_F_RESP | ONLY_F | ROCE_F_AETH, BTH + AETH),
    RC(ATOMIC_ACK, ROCE_F_RESP | ROCE_F_ATOMIC | ONLY_F | ROCE_F_AETH | ROCE_F_ATMACK,
       BTH + AETH + ATMACK),
    RC(CMP_SWAP, ROCE_F_REQ | ROCE_F_ATOMIC | ONLY_F | ROCE_F_ATMETH, BTH + ATMETH),
    RC(FETCH_ADD, ROCE_F_REQ | ROCE_F_ATOMIC | ONLY_F | ROCE_F_ATMETH, BTH + ATMETH),
    RC(SEND_LAST_INV, SEND_F | ROCE_F_LAST | ROCE_F_IETH, BTH + IETH),
    RC(SEND_ONLY_INV, SEND_F | ONLY_F | ROCE_F_IETH, BTH + IETH),
    RC(ATOMIC_WRITE, ROCE_F_REQ | ROCE_F_ATOMIC | ONLY_F | ROCE_F_RETH | ROCE_F_PAYLOAD,
       BTH + RETH),

    /* Unreliable Connection */
    UC(SEND_FIRST, SEND_F | ROCE_F_FIRST, BTH),
    UC(SEND_MIDDLE, SEND_F | ROCE_F_MIDDLE, BTH),
    UC(SEND_LAST, SEND_F | ROCE_F_LAST, BTH),
    UC(SEND_LAST_IMM, SEND_F | ROCE_F_LAST | ROCE_F_IMMDT, BTH + IMMDT),
    UC(SEND_ONLY, SEND_F | ONLY_F, BTH),
    UC(SEND_ONLY_IMM, SEND_F | ONLY_F | ROCE_F_IMMDT, BTH + IMMDT),
    UC(WRITE_FIRST, WRITE_F | ROCE_F_FIRST | ROCE_F_RETH, BTH + RETH),
    UC(WRITE_MIDDLE, WRITE_F | ROCE_F_MIDDLE, BTH),
    UC(WRITE_LAST, WRITE_F | ROCE_F_LAST, BTH),
    UC(WRITE_LAST_IMM, WRITE_F | ROCE_F_LAST | ROCE_F_IMMDT | ROCE_F_COMP, BTH + IMMDT),
    UC(WRITE_ONLY, WRITE_F | ONLY_F | ROCE_F_RETH, BTH + RETH),
    UC(WRITE_ONLY_IMM, WRITE_F | ONLY_F | ROCE_F_RETH | ROCE_F_IMMDT | ROCE_F_COMP,
       BTH + RETH + IMMDT),

    /* Extended Reliable Connection */
    XQ(SEND_FIRST, SEND_F | ROCE_F_FIRST, BTH),
    XQ(SEND_MIDDLE, SEND_F | ROCE_F_MIDDLE, BTH),
    XQ(SEND_LAST, SEND_F | ROCE_F_LAST, BTH),
    XQ(SEND_LAST_IMM, SEND_F | ROCE_F_LAST | ROCE_F_IMMDT, BTH + IMMDT),
    XQ(SEND_ONLY, SEND_F | ONLY_F, BTH),
    XQ(SEND_ONLY_IMM, SEND_F | ONLY_F | ROCE_F_IMMDT, BTH + IMMDT),
    XQ(WRITE_FIRST, WRITE_F | ROCE_F_FIRST | ROCE_F_RETH, BTH + RETH),
    XQ(WRITE_MIDDLE, WRITE_F | ROCE_F_MIDDLE, BTH),
    XQ(WRITE_LAST, WRITE_F | ROCE_F_LAST, BTH),
    XQ(WRITE_LAST_IMM, WRITE_F | ROCE_F_LAST | ROCE_F_IMMDT | ROCE_F_COMP, BTH + IMMDT),
    XQ(WRITE_ONLY, WRITE_F | ONLY_F | ROCE_F_RETH, BTH + RETH),
    XQ(WRITE_ONLY_IMM, WRITE_F | ONLY_F | ROCE_F_RETH | ROCE_F_IMMDT | ROCE_F_COMP,
       BTH + RETH + IMMDT),
    XQ(READ_REQ, ROCE_F_REQ | ROCE_F_READ | ONLY_F | ROCE_F_RETH, BTH + RETH),
    XR(READ_RESP_FIRST, RRESP_F | ROCE_F_FIRST | ROCE_F_AETH, BTH + AETH),
    XR(READ_RESP_MIDDLE, RRESP_F | ROCE_F_MIDDLE, BTH),
    XR(READ_RESP_LAST, RRESP_F | ROCE_F_LAST | ROCE_F_AETH, BTH + AETH),
    XR(READ_RESP_ONLY, RRESP_F | ONLY_F | ROCE_F_AETH, BTH + AETH),
    XR(ACK, ROCE_F_RESP | ONLY_F | ROCE_F_AETH, BTH + AETH),
    XR(ATOMIC_ACK, ROCE_F_RESP | ROCE_F_ATOMIC | ONLY_F | ROCE_F_AETH | ROCE_F_ATMACK,
       BTH + AETH + ATMACK),
    XQ(CMP_SWAP, ROCE_F_REQ | ROCE_F_ATOMIC | ONLY_F | ROCE_F_ATMETH, BTH + ATMETH),
    XQ(FETCH_ADD, ROCE_F_REQ | ROCE_F_ATOMIC | ONLY_F | ROCE_F_ATMETH, BTH + ATMETH),
    XQ(SEND_LAST_INV, SEND_F | ROCE_F_LAST | ROCE_F_IETH, BTH + IETH),
    XQ(SEND_ONLY_INV, SEND_F | ONLY_F | ROCE_F_IETH, BTH + IETH),

    /* Unreliable Datagram: the DETH carries the Q_Key and source QP */
    UD(SEND_ONLY, SEND_F | ONLY_F | ROCE_F_DETH, BTH + DETH),
    UD(SEND_ONLY_IMM, SEND_F | ONLY_F | ROCE_F_DETH | ROCE_F_IMMDT, BTH + DETH + IMMDT),
};

#undef OP
#undef RC
#undef UC
#undef UD
#undef XQ
#undef XR
#undef XRCETH
#undef BTH
#undef RETH
#undef AETH
#undef ATMETH
#undef ATMACK
#undef IMMDT
#undef IETH
#undef DETH

const struct roce_opinfo *roce_opinfo(uint8_t opcode)
{
	const struct roce_opinfo *oi = &roce_ops[opcode];

	return oi->name ? oi : NULL;
}

const char *const roce_drop_names[ROCE_DROP_NR] = {
    [ROCE_DROP_NONE] = "none",	   [ROCE_DROP_SHORT] = "short",	    [ROCE_DROP_VERSION] = "version",
    [ROCE_DROP_OPCODE] = "opcode", [ROCE_DROP_PAYLOAD] = "payload", [ROCE_DROP_ICRC] = "icrc",
};

size_t roce_hdr_write(uint8_t *buf, const struct roce_hdr *h)
{
	const struct roce_opinfo *oi = roce_opinfo(h->opcode);
	uint8_t *p = buf;

	if (!oi)
		return 0;

	p[0] = h->opcode;
	p[1] = (uint8_t)((h->se ? BTH_SE : 0) | (h->migreq ? BTH_MIG : 0) |
			 (h->pad & BTH_PAD_MASK) << BTH_PAD_SHIFT | (h->tver & BTH_TVER_MASK));
	sof_put16(p + 2, h->pkey);
	p[4] = (uint8_t)((h->fecn ? BTH_FECN : 0) | (h->becn ? BTH_BECN : 0));
	sof_put24(p + 5, h->dqpn & ROCE_QPN_MASK);
	p[8] = (uint8_t)((h->ackreq ? BTH_ACKREQ : 0) | (h->ext ? BTH_SOFEXT : 0));
	sof_put24(p + 9, h->psn & ROCE_PSN_MASK);
	p += ROCE_BTH_LEN;

	/* DETH, IBA 9.3.2: Q_Key, Resv8, SrcQP */
	if (oi->flags & ROCE_F_DETH) {
		sof_put32(p, h->qkey);
		p[4] = 0;
		sof_put24(p + 5, h->sqpn & ROCE_QPN_MASK);
		p += ROCE_DETH_LEN;
	}
	/* XRCETH (XRC annex): Resv8, XRCSRQ */
	if (oi->flags & ROCE_F_XRCETH) {
		p[0] = 0;
		sof_put24(p + 1, h->xrcsrq & ROCE_QPN_MASK);
		p += ROCE_XRCETH_LEN;
	}
	/* RETH, IBA 9.3.3: VA, R_Key, DMA length */
	if (oi->flags & ROCE_F_RETH) {
		sof_put64(p, h->va);
		sof_put32(p + 8, h->rkey);
		sof_put32(p + 12, h->dmalen);
		p += ROCE_RETH_LEN;
	}
	/* AtomicETH, IBA 9.3.4: VA, R_Key, Swap (or Add) data, Compare data */
	if (oi->flags & ROCE_F_ATMETH) {
		sof_put64(p, h->va);
		sof_put32(p + 8, h->rkey);
		sof_put64(p + 12, h->swap_add);
		sof_put64(p + 20, h->compare);
		p += ROCE_ATMETH_LEN;
	}
	/* AETH, IBA 9.3.5: Syndrome, MSN */
	if (oi->flags & ROCE_F_AETH) {
		p[0] = h->syndrome;
		sof_put24(p + 1, h->msn & ROCE_PSN_MASK);
		p += ROCE_AETH_LEN;
	}
	/* AtomicAckETH, IBA 9.5.3: original remote data */
	if (oi->flags & ROCE_F_ATMACK) {
		sof_put64(p, h->orig);
		p += ROCE_ATMACK_LEN;
	}
	/* ImmDt, IBA 9.3.6: already in network order */
	if (oi->flags & ROCE_F_IMMDT) {
		memcpy(p, &h->imm_be, ROCE_IMMDT_LEN);
		p += ROCE_IMMDT_LEN;
	}
	/* IETH, IBA 9.3.7: the R_Key to invalidate */
	if (oi->flags & ROCE_F_IETH) {
		sof_put32(p, h->inv_rkey);
		p += ROCE_IETH_LEN;
	}
	return (size_t)(p - buf);
}

/* Fill h from the extended headers at p; the caller has checked that the
 * packet holds oi->hdr_len bytes. */
static void parse_ext(const uint8_t *p, const struct roce_opinfo *oi, struct roce_hdr *h)
{
	if (oi->flags & ROCE_F_DETH) {
		h->qkey = sof_get32(p);
		h->sqpn = sof_get24(p + 5);
		p += ROCE_DETH_LEN;
	}
	if (oi->flags & ROCE_F_XRCETH) {
		h->xrcsrq = sof_get24(p + 1);
		p += ROCE_XRCETH_LEN;
	}
	if (oi->flags & ROCE_F_RETH) {
		h->va = sof_get64(p);
		h->rkey = sof_get32(p + 8);
		h->dmalen = sof_get32(p + 12);
		p += ROCE_RETH_LEN;
	}
	if (oi->flags & ROCE_F_ATMETH) {
		h->va = sof_get64(p);
		h->rkey = sof_get32(p + 8);
		h->swap_add = sof_get64(p + 12);
		h->compare = sof_get64(p + 20);
		p += ROCE_ATMETH_LEN;
	}
	if (oi->flags & ROCE_F_AETH) {
		h->syndrome = p[0];
		h->msn = sof_get24(p + 1);
		p += ROCE_AETH_LEN;
	}
	if (oi->flags & ROCE_F_ATMACK) {
		h->orig = sof_get64(p);
		p += ROCE_ATMACK_LEN;
	}
	if (oi->flags & ROCE_F_IMMDT) {
		memcpy(&h->imm_be, p, ROCE_IMMDT_LEN);
		p += ROCE_IMMDT_LEN;
	}
	if (oi->flags & ROCE_F_IETH)
		h->inv_rkey = sof_get32(p);
}

enum roce_drop roce_parse(const uint8_t *buf, size_t len, struct roce_hdr *h,
			  const uint8_t **payload, uint32_t *paylen)
{
	const struct roce_opinfo *oi;
	size_t avail;

	memset(h, 0, sizeof(*h));
	*payload = NULL;
	*paylen = 0;

	if (len < ROCE_BTH_LEN + ROCE_ICRC_LEN)
		return ROCE_DROP_SHORT;

	h->opcode = buf[0];
	h->se = buf[1] & BTH_SE;
	h->migreq = buf[1] & BTH_MIG;
	h->pad = (buf[1] >> BTH_PAD_SHIFT) & BTH_PAD_MASK;
	h->tver = buf[1] & BTH_TVER_MASK;
	h->pkey = sof_get16(buf + 2);
	h->fecn = buf[4] & BTH_FECN;
	h->becn = buf[4] & BTH_BECN;
	h->dqpn = sof_get24(buf + 5);
	h->ackreq = buf[8] & BTH_ACKREQ;
	h->ext = buf[8] & BTH_SOFEXT;
	h->psn = sof_get24(buf + 9);

	/* IBA 9.2: TVer 0 is the only transport header version there is */
	if (h->tver != 0)
		return ROCE_DROP_VERSION;
	oi = roce_opinfo(h->opcode);
	if (!oi)
		return ROCE_DROP_OPCODE;
	if (len < (size_t)oi->hdr_len + ROCE_ICRC_LEN)
		return ROCE_DROP_SHORT;

	/* what lies between the headers and the ICRC: payload and pad */
	avail = len - oi->hdr_len - ROCE_ICRC_LEN;
	/* an ACK carries a SACK only with the extension's bit */
	if (avail && !(oi->flags & ROCE_F_PAYLOAD) &&
	    !(h->ext && (h->opcode & ~ROCE_SVC_MASK) == ROCE_ACK && roce_sack_len_ok(avail) &&
	      !h->pad))
		return ROCE_DROP_PAYLOAD;
	if (h->pad > avail)
		return ROCE_DROP_SHORT;

	parse_ext(buf + ROCE_BTH_LEN, oi, h);
	*payload = buf + oi->hdr_len;
	*paylen = (uint32_t)(avail - h->pad);
	return ROCE_DROP_NONE;
}

uint32_t roce_sack_write(uint8_t *buf, uint32_t base, const uint8_t *map, uint32_t bits)
{
	buf[0] = ROCE_SACK_KIND;
	sof_put24(buf + 1, base & ROCE_PSN_MASK);
	memcpy(buf + 4, map, bits / 8);
	return 4 + bits / 8;
}

bool roce_sack_parse(const uint8_t *buf, uint32_t len, uint32_t *base, const uint8_t **map,
		     uint32_t *bits)
{
	if (!roce_sack_len_ok(len) || buf[0] != ROCE_SACK_KIND)
		return false;
	*base = sof_get24(buf + 1);
	*map = buf + 4;
	*bits = (len - 4) * 8;
	return true;
}
