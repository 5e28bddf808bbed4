/*
 * libFuzzer target: a datagram the InfiniBand port reads from its link
 * (transport/ibpkt.c tp_ib_datagram), with UDP GRO: one packet or SOFL
 * message, or a run of packets the kernel joined, cut at the segment size
 * and each packet checked on its own (LRH, VCRC, ICRC, state, VL15, DLID,
 * transport headers, P_Key) before the classifier. The engine behind the
 * port is replaced here by a recorder (tp_recv), so the target is the
 * cutting and the checks, not the QPs (fuzz_engine's).
 *
 * Input: [segment size (2 bytes)] [flags] [datagram]; flags bit 0 "seal":
 * the harness makes each segment a local-route packet to the port's LID
 * on VL0 with its PktLen, ICRC and VCRC right, so that the fuzzer reaches
 * the transport checks. Checks: the datagram is cut into exactly
 * ceil(length / segment) packets (one without a segment size); each is
 * counted once (a packet received or a SOFL message); the classifier gets
 * no more packets than passed ib_parse, each one's payload inside the
 * datagram.
 *
 * tests/fuzz/run.sh builds it from the files on these lines:
 */
/* clang-format off */
/*
 * FUZZ_SOURCES: tests/fuzz/fuzz_ibrx.c transport/ibpkt.c transport/ibdirect.c transport/ib_wire.c transport/icrc.c transport/wire.c common/grh.c common/util.c
 * FUZZ_INCLUDES: transport common
 * FUZZ_SECS: 5
 */
/* clang-format on */
#include "ibport.h"

#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FAIL(...)                                                                                  \
	do {                                                                                       \
		fprintf(stderr, "fuzz_ibrx: " __VA_ARGS__);                                        \
		fputc('\n', stderr);                                                               \
		abort();                                                                           \
	} while (0)

#define OUR_LID 5

/* ---- the engine and the link half, as recorders ---- */

struct tp_state tp;
struct tp_ib_port tp_ibp; /* iblink.c's */
static uint64_t counters[SOF_CNT_NR], drops[SOF_DROP_NR];
static unsigned delivered, sofl;
static uint8_t dg[65536];

void tp_recv(const struct roce_hdr *h, const uint8_t *payload, uint32_t paylen,
	     const struct roce_addr *a)
{
	(void)h;
	(void)a;
	delivered++;
	if (!tp.rx_ib.on || tp.rx_ib.dlid != OUR_LID)
		FAIL("a packet classified without its LRH, or not to our LID");
	if (paylen && (payload < dg || payload + paylen > dg + sizeof(dg)))
		FAIL("a payload outside the datagram");
}

void tp_input_end(void) {}
void tp_log(const char *fmt, ...) { (void)fmt; }
void tp_ib_member_sync(void) {}
void tp_ib_changed(void) {}
void tp_ib_link_input(const uint8_t *buf, size_t len)
{
	(void)buf;
	(void)len;
	sofl++;
}

/* ---- the harness ---- */

static void port_up(void)
{
	memset(&tp_ibp, 0, sizeof(tp_ibp));
	tp_ibp.on = true;
	tp_ibp.fd = -1;
	tp_ibp.cnt = &tp_ibp.own_cnt;
	tp_ibp.attr.state = IBV_PORT_ACTIVE;
	tp_ibp.attr.phys_state = IB_PHYS_LINKUP;
	tp_ibp.attr.lid = OUR_LID;
	tp_ibp.attr.vl_cap = 1;
	tp_ibp.attr.pkeys[0] = 0xffff;
	tp.counters = counters;
	tp.drops = drops;
}

/* Segment p of len bytes as a packet the link checks pass. */
static void seal(uint8_t *p, size_t len)
{
	struct ib_lrh l;
	uint32_t icrc;
	uint16_t vcrc;

	if (len < IB_LRH_LEN + ROCE_BTH_LEN + ROCE_ICRC_LEN + IB_VCRC_LEN || len % 4 != 2)
		return;
	l = (struct ib_lrh){.vl = 0,
			    .sl = (uint8_t)(p[1] >> 4),
			    .lnh = IB_LNH_LOCAL,
			    .dlid = OUR_LID,
			    .slid = (uint16_t)(p[6] << 8 | p[7]),
			    .pktlen = (uint16_t)((len - IB_VCRC_LEN) / 4)};
	ib_lrh_write(p, &l);
	icrc = ib_icrc(p, len - IB_VCRC_LEN - ROCE_ICRC_LEN);
	p[len - 6] = (uint8_t)icrc;
	p[len - 5] = (uint8_t)(icrc >> 8);
	p[len - 4] = (uint8_t)(icrc >> 16);
	p[len - 3] = (uint8_t)(icrc >> 24);
	vcrc = ib_vcrc(p, len - IB_VCRC_LEN);
	p[len - 2] = (uint8_t)vcrc;
	p[len - 1] = (uint8_t)(vcrc >> 8);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t seg, len, want;
	unsigned n, parsed = 0;
	uint64_t before;

	if (size < 3)
		return 0;
	seg = (size_t)(data[0] << 8 | data[1]);
	len = size - 3 < sizeof(dg) ? size - 3 : sizeof(dg);
	memcpy(dg, data + 3, len);
	port_up();
	delivered = sofl = 0;
	want = !seg || seg >= len ? 1 : (len + seg - 1) / seg;
	for (size_t off = 0, k = 0; k < want; off += seg, k++) {
		size_t l = want == 1 ? len : len - off < seg ? len - off : seg;
		const uint8_t *tpkt;
		struct ib_lrh lrh;
		struct ib_grh g;
		size_t tlen;

		if (data[2] & 1)
			seal(dg + off, l);
		if (ib_parse(dg + off, l, &lrh, &g, &tpkt, &tlen) == IB_DROP_NONE)
			parsed++;
	}
	before = tp_ibp.cnt->rcv_pkts;
	n = tp_ib_datagram(dg, len, seg);
	if (n != want)
		FAIL("%zu bytes in segments of %zu: %u packets, not %zu", len, seg, n, want);
	if (tp_ibp.cnt->rcv_pkts - before + sofl != n)
		FAIL("%u packets, %llu counted received and %u link messages", n,
		     (unsigned long long)(tp_ibp.cnt->rcv_pkts - before), sofl);
	if (delivered > parsed)
		FAIL("%u packets classified, only %u passed the link checks", delivered, parsed);
	return 0;
}
