/*
 * libFuzzer target: IPoIB's receive path (ipoib/proto.c ipoib_input) on
 * arbitrary UD receive buffers (40 bytes of GRH area, the 4-byte IPoIB
 * header, the packet), as the HCA hands them to softofed-ipoib.
 *
 * The input's first byte picks the source (our own QPN or another), the
 * rest is the buffer. Checked after each input:
 *   - no read outside the buffer (ASan) and no undefined behaviour;
 *   - every input has exactly one outcome: delivered to the kernel, or
 *     consumed as resolution (ARP, ND), or dropped under one counter;
 *   - a packet delivered is a whole IPv4 or IPv6 packet of its header's
 *     length inside the buffer, never longer than the MTU;
 *   - a frame sent in answer is an ARP reply or a neighbour advertisement
 *     of the right length, to a valid hardware address.
 * With the first byte's bit 2 the rest is connected mode's instead
 * (ipoib/cm_proto.c): as the private data of a REQ or REP, taken only
 * when RFC 4755 allows it (eight bytes or more, a UD QPN, a receive size
 * that holds an IP packet); and as a frame over a datagram peer's MTU,
 * whose ICMP "too big" handed to the kernel is a whole IP packet of at
 * most the minimum MTU.
 *
 * With bit 3 the rest is a packet from the TUN interface (ipoib/gso.c):
 * a virtio_net_hdr (10 bytes) and the packet, cut for a 2044-byte MTU
 * (bit 4: taken whole up to 65520): every packet out is inside its
 * buffer with the header's room before it, a segment at most the MTU
 * with a TCP checksum that verifies. With bit 5 the rest is a run of
 * received packets (each after a 2-byte length) through the receive
 * side's joining: what is written is an input unchanged (no GSO header)
 * or a joined TCP packet whose GSO header's offsets lie inside it.
 *
 * tests/fuzz/run.sh builds it from the files on these lines:
 * FUZZ_SOURCES: tests/fuzz/fuzz_ipoib.c ipoib/proto.c ipoib/cm_proto.c ipoib/gso.c
 * FUZZ_INCLUDES: ipoib common
 * FUZZ_SECS: 4
 */
#include "ipoib.h"

#include <endian.h>
#include <linux/virtio_net.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FAIL(...)                                                                                  \
	do {                                                                                       \
		fprintf(stderr, "fuzz_ipoib: " __VA_ARGS__);                                       \
		fputc('\n', stderr);                                                               \
		abort();                                                                           \
	} while (0)

struct ipoib ipoib;
static unsigned delivered, sent, learnt;
static const uint8_t *buf_lo, *buf_hi;
static bool icmp_out; /* ipoib_too_big's packet: its own buffer */

static void deliver(const uint8_t *pkt, size_t len)
{
	if (!icmp_out && (pkt < buf_lo || pkt + len > buf_hi))
		FAIL("delivered outside the buffer");
	if (icmp_out && len > 1280)
		FAIL("ICMP of %zu bytes", len);
	if (len > ipoib.mtu)
		FAIL("delivered %zu bytes, MTU %u", len, ipoib.mtu);
	if ((pkt[0] >> 4) == 4 && (len < 20 || (size_t)(pkt[2] << 8 | pkt[3]) != len))
		FAIL("IPv4 of %zu bytes", len);
	if ((pkt[0] >> 4) == 6 && (len < 40 || (size_t)(pkt[4] << 8 | pkt[5]) + 40 != len))
		FAIL("IPv6 of %zu bytes", len);
	if ((pkt[0] >> 4) != 4 && (pkt[0] >> 4) != 6)
		FAIL("delivered version %u", pkt[0] >> 4);
	delivered++;
}

static void send_hw(const struct ipoib_hw *to, const uint8_t *f, size_t len)
{
	uint16_t type = (uint16_t)(f[0] << 8 | f[1]);

	if (to->qpn <= 1 || to->qpn >= 0xffffff)
		FAIL("answer to QPN 0x%x", to->qpn);
	if (!(type == ETH_P_ARPV && len == 4 + 56 && f[4 + 7] == 2) &&
	    !(type == ETH_P_IPV6V && len == 4 + 40 + 48 && f[4 + 40] == 136))
		FAIL("answer of type 0x%04x, %zu bytes", type, len);
	sent++;
}

static void learn(const uint8_t ip[16], const struct ipoib_hw *hw)
{
	(void)ip;
	if (hw->qpn <= 1 || hw->qpn >= 0xffffff)
		FAIL("learnt QPN 0x%x", hw->qpn);
	learnt++;
}

static bool local_addr(const uint8_t ip[16])
{
	/* 192.168.77.1 and fd77:1b::1 are ours */
	static const uint8_t v4[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 168, 77, 1};
	static const uint8_t v6[16] = {0xfd, 0x77, 0, 0x1b, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};

	return !memcmp(ip, v4, 16) || !memcmp(ip, v6, 16);
}

static const struct ipoib_ops ops = {
    .deliver = deliver, .send_hw = send_hw, .learn = learn, .local_addr = local_addr};

/* ---- gso.c: the TUN interface's offloads ---- */

static size_t tx_limit, tx_len;
static unsigned tx_outs;

static void tx_out(uint8_t *pkt, size_t len)
{
	size_t l4off = (pkt[0] >> 4) == 4 ? (size_t)(pkt[0] & 15) * 4 : 40;
	uint64_t sum;

	/* the header's room, written as ipoib_output does */
	memset(pkt - IPOIB_HDR_LEN, 0, IPOIB_HDR_LEN);
	if (len < tx_len) { /* a segment */
		if (len > tx_limit || len <= l4off + 20)
			FAIL("segment of %zu bytes, MTU %zu", len, tx_limit);
		if ((pkt[0] >> 4) == 4)
			sum = ipoib_csum_add(0, pkt + 12, 8);
		else
			sum = ipoib_csum_add(0, pkt + 8, 32) + ((len - l4off) >> 16);
		sum +=
		    6 + ((len - l4off) & 0xffff) + ((pkt[0] >> 4) == 4 ? (len - l4off) >> 16 : 0);
		if (ipoib_csum_fold(ipoib_csum_add(sum, pkt + l4off, len - l4off)) != 0xffff)
			FAIL("segment's TCP checksum");
	} else if (len != tx_len) {
		FAIL("%zu bytes out of %zu", len, tx_len);
	}
	tx_outs++;
}

static void fuzz_tx(const uint8_t *in, size_t n, size_t limit)
{
	struct virtio_net_hdr vh;
	uint8_t *b;

	if (n < sizeof(vh))
		return;
	memcpy(&vh, in, sizeof(vh));
	tx_len = n - sizeof(vh);
	b = malloc(IPOIB_HDR_LEN + tx_len + 1);
	memcpy(b + IPOIB_HDR_LEN, in + sizeof(vh), tx_len);
	tx_limit = limit;
	tx_outs = 0;
	if (ipoib_tx_offload(b + IPOIB_HDR_LEN, tx_len, &vh, limit, tx_out) && tx_outs)
		FAIL("refused, but %u packets out", tx_outs);
	free(b);
}

static const uint8_t *rx_in[64];
static size_t rx_len[64];
static unsigned rx_n, rx_next;

static void rx_write(const struct virtio_net_hdr *vh, const uint8_t *pkt, size_t len)
{
	if (vh->gso_type == VIRTIO_NET_HDR_GSO_NONE) {
		/* an input unchanged, in order */
		while (rx_next < rx_n &&
		       (rx_len[rx_next] != len || memcmp(rx_in[rx_next], pkt, len)))
			rx_next++;
		if (rx_next++ >= rx_n)
			FAIL("wrote %zu bytes that are no input", len);
		return;
	}
	if (!(vh->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) || !vh->gso_size || len > 65535 ||
	    le16toh(vh->csum_start) + (size_t)le16toh(vh->csum_offset) + 2 > len ||
	    le16toh(vh->hdr_len) >= len)
		FAIL("joined packet of %zu bytes: bad GSO header", len);
}

static void fuzz_rx(const uint8_t *in, size_t n)
{
	ipoib_gro_init(rx_write);
	rx_n = rx_next = 0;
	while (n >= 2 && rx_n < 64) {
		size_t len = (size_t)(in[0] << 8 | in[1]);

		if (len > n - 2)
			len = n - 2;
		rx_in[rx_n] = in + 2;
		rx_len[rx_n++] = len;
		in += 2 + len;
		n -= 2 + len;
	}
	for (unsigned i = 0; i < rx_n; i++)
		ipoib_gro_input(rx_in[i], rx_len[i]);
	ipoib_gro_flush();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t before = 0, after = 0;
	uint8_t *buf;

	if (size < 1)
		return 0;
	memset(&ipoib, 0, sizeof(ipoib));
	ipoib.ops = &ops;
	ipoib.hw.qpn = 0x123456;
	ipoib.hw.gid[0] = 0xfe;
	ipoib.hw.gid[1] = 0x80;
	ipoib.hw.gid[15] = 1;
	ipoib.lid = 1;
	ipoib.mtu = 2044;
	ipoib.qkey = IPOIB_QKEY;
	/* a heap block of the exact size: ASan sees any overread */
	buf = malloc(size - 1 ? size - 1 : 1);
	memcpy(buf, data + 1, size - 1);
	buf_lo = buf;
	buf_hi = buf + size - 1;
	delivered = sent = learnt = 0;
	icmp_out = false;
	if (data[0] & 8) {
		fuzz_tx(buf, size - 1, data[0] & 16 ? 65520 : 2044);
		free(buf);
		return 0;
	}
	if (data[0] & 32) {
		fuzz_rx(buf, size - 1);
		free(buf);
		return 0;
	}
	if (data[0] & 4) {
		struct ipoib_cm_data d;
		size_t n = size - 1;
		int r = ipoib_cm_data_get(&d, buf, n);

		/* RFC 4755 section 6: the QPN (the top byte reserved) and size */
		uint32_t q = n >= 8 ? (uint32_t)buf[0] << 24 | (uint32_t)buf[1] << 16 |
					  (uint32_t)buf[2] << 8 | buf[3]
				    : 0;
		uint32_t rs = n >= 8 ? (uint32_t)buf[4] << 24 | (uint32_t)buf[5] << 16 |
					   (uint32_t)buf[6] << 8 | buf[7]
				     : 0;
		bool good = n >= IPOIB_CM_PDATA && q >= 2 && q < 0xffffff && rs >= 72;

		if ((r == 0) != good)
			FAIL("private data of %zu bytes (QPN 0x%x, size %u) %s", n, q, rs,
			     good ? "refused" : "taken");
		icmp_out = true;
		if (ipoib_too_big(&ipoib, buf, n, 2044) != (delivered == 1) || delivered > 1)
			FAIL("too big: %u delivered", delivered);
		free(buf);
		return 0;
	}
	for (int i = IC_drop_short; i <= IC_drop_own; i++)
		before += ipoib.cnt[i];
	ipoib_input(&ipoib, buf, size - 1, data[0] & 1 ? ipoib.hw.qpn : 0x42, data[0] & 2 ? 1 : 7);
	for (int i = IC_drop_short; i <= IC_drop_own; i++)
		after += ipoib.cnt[i];
	/* one outcome: delivered, resolution (ARP/ND received), or one drop */
	if (delivered + (ipoib.cnt[IC_arp_rx] + ipoib.cnt[IC_nd_rx]) + (after - before) != 1)
		FAIL("outcomes: delivered %u, resolution %llu, drops %llu", delivered,
		     (unsigned long long)(ipoib.cnt[IC_arp_rx] + ipoib.cnt[IC_nd_rx]),
		     (unsigned long long)(after - before));
	if (delivered && ipoib.cnt[IC_rx_packets] != 1)
		FAIL("delivered but not counted");
	if (sent > 1 || learnt > 1)
		FAIL("%u answers, %u learnt for one frame", sent, learnt);
	free(buf);
	return 0;
}
