/*
 * libFuzzer target: the RoCEv2 wire format (transport/roce_wire.h) on
 * arbitrary bytes from the network.
 *
 * Every input goes through roce_parse and roce_icrc_check; neither may
 * read outside the input (libFuzzer hands it over in a heap block of its
 * exact size, so ASan sees any overread). For a packet that parses:
 *   - the layout adds up: headers + payload + pad + ICRC = the input;
 *   - writing the parsed header again gives the input's bytes, reserved
 *     bits cleared, and parsing that gives the same fields (round trip);
 *   - with its ICRC recomputed, roce_icrc_check accepts it, and rejects it
 *     again after one flipped bit outside the variant BTH byte.
 *
 * tests/fuzz/run.sh builds it from the files on these lines:
 * FUZZ_SOURCES: tests/fuzz/fuzz_wire.c transport/wire.c transport/icrc.c
 * FUZZ_INCLUDES: transport common
 * FUZZ_SECS: 4
 */
#include "roce_wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FAIL(...)                                                                                  \
	do {                                                                                       \
		fprintf(stderr, "fuzz_wire: " __VA_ARGS__);                                        \
		fputc('\n', stderr);                                                               \
		abort();                                                                           \
	} while (0)

static const struct roce_addr addr4 = {
    .src = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1},
    .dst = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2},
    .sport = 0xc000,
    .dport = ROCE_UDP_PORT,
};

static const struct roce_addr addr6 = {
    .src = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1},
    .dst = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2},
    .sport = 0xc001,
    .dport = ROCE_UDP_PORT,
};

static bool same_fields(const struct roce_hdr *a, const struct roce_hdr *b)
{
	return a->opcode == b->opcode && a->se == b->se && a->migreq == b->migreq &&
	       a->pad == b->pad && a->tver == b->tver && a->pkey == b->pkey && a->fecn == b->fecn &&
	       a->becn == b->becn && a->dqpn == b->dqpn && a->ackreq == b->ackreq &&
	       a->ext == b->ext && a->psn == b->psn && a->va == b->va && a->rkey == b->rkey &&
	       a->dmalen == b->dmalen && a->swap_add == b->swap_add && a->compare == b->compare &&
	       a->syndrome == b->syndrome && a->msn == b->msn && a->orig == b->orig &&
	       a->imm_be == b->imm_be && a->inv_rkey == b->inv_rkey && a->qkey == b->qkey &&
	       a->sqpn == b->sqpn;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct roce_opinfo *oi;
	struct roce_hdr h, h2;
	const uint8_t *payload, *payload2;
	uint32_t paylen, paylen2;
	uint8_t hdr[ROCE_MAX_HDR], want[ROCE_MAX_HDR];
	enum roce_drop r;
	uint8_t *copy;
	size_t n, flip;

	/* any bytes: no crash, no overread, a known verdict */
	(void)roce_icrc_check(&addr4, data, size);
	(void)roce_icrc_check(&addr6, data, size);
	r = roce_parse(data, size, &h, &payload, &paylen);
	if (r >= ROCE_DROP_NR || !roce_drop_names[r])
		FAIL("verdict %d", (int)r);
	if (r != ROCE_DROP_NONE) {
		if (payload || paylen)
			FAIL("payload %p/%u on a dropped packet", (const void *)payload, paylen);
		return 0;
	}

	oi = roce_opinfo(h.opcode);
	if (!oi)
		FAIL("parsed unknown opcode 0x%02x", h.opcode);
	if (h.tver != 0 || h.pad > 3)
		FAIL("tver %u pad %u", h.tver, h.pad);
	if (payload != data + oi->hdr_len ||
	    oi->hdr_len + (size_t)paylen + h.pad + ROCE_ICRC_LEN != size)
		FAIL("%s: layout hdr %u payload %u pad %u in %zu bytes", oi->name, oi->hdr_len,
		     paylen, h.pad, size);
	/* (an ACK with the extension's bit may carry a SACK: roce_wire.h) */
	if (paylen && !(oi->flags & ROCE_F_PAYLOAD) &&
	    !(h.ext && (h.opcode & ~ROCE_SVC_MASK) == ROCE_ACK && roce_sack_len_ok(paylen)))
		FAIL("%s: payload on an opcode without", oi->name);

	/* write it again: the input's bytes with the reserved bits cleared */
	n = roce_hdr_write(hdr, &h);
	if (n != oi->hdr_len)
		FAIL("%s: wrote %zu bytes, not %u", oi->name, n, oi->hdr_len);
	memcpy(want, data, n);
	want[4] &= 0xc0; /* BTH Resv6a */
	want[8] &= 0xc0; /* BTH Resv7 but its top bit (the extension's) */
	if (oi->flags & ROCE_F_DETH)
		want[ROCE_BTH_LEN + 4] = 0; /* DETH Resv8 */
	if (oi->flags & ROCE_F_XRCETH)
		want[ROCE_BTH_LEN] = 0; /* XRCETH Resv8 (no DETH before it in XRC) */
	if (memcmp(hdr, want, n))
		FAIL("%s: rewritten header differs", oi->name);

	/* the rewritten packet parses to the same fields */
	copy = malloc(size);
	if (!copy)
		return 0;
	memcpy(copy, hdr, n);
	memcpy(copy + n, data + n, size - n);
	if (roce_parse(copy, size, &h2, &payload2, &paylen2) != ROCE_DROP_NONE)
		FAIL("%s: rewritten packet dropped", oi->name);
	if (!same_fields(&h, &h2) || paylen2 != paylen || payload2 != copy + n)
		FAIL("%s: round trip changed a field", oi->name);

	/* with a fresh ICRC the packet checks; one flipped bit breaks it */
	roce_icrc_append(&addr6, copy, size - ROCE_ICRC_LEN);
	if (!roce_icrc_check(&addr6, copy, size))
		FAIL("%s: fresh ICRC rejected", oi->name);
	flip = (size_t)h.psn % size;
	if (flip == 4)
		flip = 0;
	copy[flip] ^= 0x01;
	if (roce_icrc_check(&addr6, copy, size))
		FAIL("%s: ICRC accepted with byte %zu flipped", oi->name, flip);
	free(copy);
	return 0;
}
