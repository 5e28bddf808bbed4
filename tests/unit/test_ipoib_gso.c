/*
 * IPoIB's TUN offloads (ipoib/gso.c) without a fabric: a TSO packet as the
 * kernel hands it (virtio_net_hdr with NEEDS_CSUM and gso_size, the TCP
 * checksum field holding the pseudo-header's sum), IPv4 and IPv6, cut for
 * a datagram MTU into segments that are each a whole TCP/IP packet (IP
 * length, IPv4 ID and header checksum, sequence numbers, PSH on the last,
 * checksums that verify, the payload in order), or sent whole when the
 * destination takes it (connected mode); and the receive side's joining
 * of those segments back into one GSO packet, which a bad checksum, a gap
 * in the sequence or another flow interrupts.
 */
#include "harness.h"

#include "ipoib.h"

#include <endian.h>
#include <errno.h>
#include <linux/virtio_net.h>
#include <stdlib.h>

struct ipoib ipoib; /* gso.c counts in it */

#define PAYLOAD 20000
#define MSS 1448

static uint8_t data[PAYLOAD];

/* what came out: packets (tx segments, or GRO writes with their headers) */
static struct out {
	uint8_t pkt[65536];
	size_t len;
	struct virtio_net_hdr vh;
} outs[64];
static unsigned nout;

static uint16_t g16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static uint32_t g32(const uint8_t *p) { return (uint32_t)g16(p) << 16 | g16(p + 2); }
static void p16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void tx_out(uint8_t *pkt, size_t len)
{
	if (nout < 64) {
		memcpy(outs[nout].pkt, pkt, len);
		outs[nout].len = len;
		memset(&outs[nout].vh, 0, sizeof(outs[nout].vh));
	}
	nout++;
}

static void rx_write(const struct virtio_net_hdr *vh, const uint8_t *pkt, size_t len)
{
	if (nout < 64) {
		memcpy(outs[nout].pkt, pkt, len);
		outs[nout].len = len;
		outs[nout].vh = *vh;
	}
	nout++;
}

static uint64_t pseudo(const uint8_t *ip, size_t l4len)
{
	if ((ip[0] >> 4) == 4)
		return ipoib_csum_add(0, ip + 12, 8) + 6 + l4len;
	return ipoib_csum_add(0, ip + 8, 32) + 6 + l4len;
}

/* the whole TCP checksum verifies */
static bool tcp_ok(const uint8_t *ip, size_t len, size_t l4off)
{
	return ipoib_csum_fold(ipoib_csum_add(pseudo(ip, len - l4off), ip + l4off, len - l4off)) ==
	       0xffff;
}

/* A TSO packet of PAYLOAD bytes: IPv4 (ID 0x1234) or IPv6, TCP with a
 * 12-byte timestamp option, ACK|PSH, seq 1000; its checksum left to us. */
static size_t tso_packet(uint8_t *p, bool v6, struct virtio_net_hdr *vh)
{
	size_t l4off = v6 ? 40 : 20, hdrs = l4off + 32, len = hdrs + PAYLOAD;
	uint8_t *th = p + l4off;

	memset(p, 0, hdrs);
	if (v6) {
		p[0] = 0x60;
		p16(p + 4, (uint16_t)(len - 40));
		p[6] = 6;
		p[7] = 64;
		p[8] = 0xfd;
		p[23] = 1;
		p[24] = 0xfd;
		p[39] = 2;
	} else {
		p[0] = 0x45;
		p16(p + 2, (uint16_t)len);
		p16(p + 4, 0x1234);
		p[6] = 0x40; /* DF */
		p[8] = 64;
		p[9] = 6;
		p[12] = 192, p[13] = 168, p[14] = 77, p[15] = 1;
		p[16] = 192, p[17] = 168, p[18] = 77, p[19] = 2;
		p16(p + 10, (uint16_t)~ipoib_csum_fold(ipoib_csum_add(0, p, 20)));
	}
	p16(th, 40000);
	p16(th + 2, 5201);
	p16(th + 4, 0);
	p16(th + 6, 1000);
	p16(th + 10, 77);
	th[12] = 8 << 4;
	th[13] = 0x18; /* ACK|PSH */
	p16(th + 14, 512);
	th[20] = 1, th[21] = 1, th[22] = 8, th[23] = 10; /* NOP NOP timestamps */
	th[27] = 9, th[31] = 3;
	memcpy(p + hdrs, data, PAYLOAD);
	p16(th + 16, ipoib_csum_fold(pseudo(p, len - l4off)));
	memset(vh, 0, sizeof(*vh));
	vh->flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	vh->gso_type = v6 ? VIRTIO_NET_HDR_GSO_TCPV6 : VIRTIO_NET_HDR_GSO_TCPV4;
	vh->gso_size = htole16(MSS);
	vh->hdr_len = htole16((uint16_t)hdrs);
	vh->csum_start = htole16((uint16_t)l4off);
	vh->csum_offset = htole16(16);
	return len;
}

static uint8_t pkt[65536];

/* RFC 1071 3's example, an IPv4 header whose checksum (0xb861) is known,
 * and a plain 16-bit big-endian sum over every length and alignment */
TEST(csum_known)
{
	static const uint8_t rfc[8] = {0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7};
	static const uint8_t ip[20] = {0x45, 0,	   0,	 0x73, 0, 0, 0x40, 0,	 0x40, 0x11,
				       0xb8, 0x61, 0xc0, 0xa8, 0, 1, 0xc0, 0xa8, 0,    0xc7};

	CHECK_EQ(ipoib_csum_fold(ipoib_csum_add(0, rfc, 8)), 0xddf2);
	CHECK_EQ(ipoib_csum_fold(ipoib_csum_add(0, ip, 20)), 0xffff);
	for (size_t off = 0; off < 8; off++)
		for (size_t len = 0; len < 300; len++) {
			uint64_t ref = 0;

			for (size_t i = 0; i < len; i++)
				ref += i & 1 ? data[off + i] : (uint64_t)data[off + i] << 8;
			CHECK_EQ(ipoib_csum_fold(ipoib_csum_add(5, data + off, len)),
				 ipoib_csum_fold(ref + 5));
		}
}

static void check_segments(bool v6)
{
	struct virtio_net_hdr vh;
	size_t len = tso_packet(pkt, v6, &vh), l4off = v6 ? 40 : 20, hdrs = l4off + 32, got = 0;
	unsigned want = (PAYLOAD + MSS - 1) / MSS;

	nout = 0;
	CHECK_EQ(ipoib_tx_offload(pkt, len, &vh, 2044, tx_out), 0);
	CHECK_EQ(nout, want);
	for (unsigned i = 0; i < nout; i++) {
		const uint8_t *s = outs[i].pkt, *th = s + l4off;
		size_t n = outs[i].len - hdrs;

		CHECK(outs[i].len <= 2044);
		CHECK_EQ(n, i + 1 < want ? MSS : PAYLOAD - (want - 1) * MSS);
		if (v6) {
			CHECK_EQ(g16(s + 4), outs[i].len - 40);
		} else {
			CHECK_EQ(g16(s + 2), outs[i].len);
			CHECK_EQ(g16(s + 4), 0x1234 + i);
			CHECK_EQ(ipoib_csum_fold(ipoib_csum_add(0, s, 20)), 0xffff);
		}
		CHECK_EQ(g32(th + 4), 1000 + got);
		CHECK_EQ(th[13], i + 1 < want ? 0x10 : 0x18);
		CHECK(tcp_ok(s, outs[i].len, l4off));
		CHECK_MEM(s + hdrs, data + got, n);
		got += n;
	}
	CHECK_EQ(got, PAYLOAD);
}

TEST(tso4_segments) { check_segments(false); }
TEST(tso6_segments) { check_segments(true); }

/* a destination that takes it (connected mode): whole, checksum done */
TEST(tso_whole)
{
	struct virtio_net_hdr vh;
	size_t len = tso_packet(pkt, false, &vh);

	nout = 0;
	CHECK_EQ(ipoib_tx_offload(pkt, len, &vh, 65520, tx_out), 0);
	CHECK_EQ(nout, 1);
	CHECK_EQ(outs[0].len, len);
	CHECK(tcp_ok(outs[0].pkt, len, 20));
	CHECK_MEM(outs[0].pkt + 52, data, PAYLOAD);
}

/* offsets outside the packet, a TSO header on a packet that is not TCP */
TEST(tso_refused)
{
	struct virtio_net_hdr vh;
	size_t len = tso_packet(pkt, false, &vh);

	nout = 0;
	vh.csum_start = htole16(60000);
	vh.gso_type = VIRTIO_NET_HDR_GSO_NONE;
	CHECK_EQ(ipoib_tx_offload(pkt, len, &vh, 2044, tx_out), -EINVAL);
	tso_packet(pkt, false, &vh);
	pkt[9] = 17;
	CHECK_EQ(ipoib_tx_offload(pkt, len, &vh, 2044, tx_out), -EINVAL);
	tso_packet(pkt, false, &vh);
	vh.gso_size = 0;
	CHECK_EQ(ipoib_tx_offload(pkt, len, &vh, 2044, tx_out), -EINVAL);
	CHECK_EQ(nout, 0);
}

static struct out segs[64];
static unsigned nsegs;

static void make_segments(bool v6)
{
	struct virtio_net_hdr vh;
	size_t len = tso_packet(pkt, v6, &vh);

	nout = 0;
	CHECK_EQ(ipoib_tx_offload(pkt, len, &vh, 2044, tx_out), 0);
	nsegs = nout;
	memcpy(segs, outs, sizeof(segs[0]) * nsegs);
	nout = 0;
}

/* The joined packet: a GSO header, the headers of the first segment with
 * the whole length, the payload in order; completing its checksum from
 * csum_start (the kernel's CHECKSUM_PARTIAL) gives one that verifies. */
static void check_joined(const struct out *o, size_t from, size_t n, bool v6)
{
	size_t l4off = v6 ? 40 : 20, hdrs = l4off + 32;
	uint8_t *p = malloc(o->len);

	CHECK_EQ(o->len, hdrs + n);
	CHECK_EQ(o->vh.flags, VIRTIO_NET_HDR_F_NEEDS_CSUM);
	CHECK_EQ(o->vh.gso_type, v6 ? VIRTIO_NET_HDR_GSO_TCPV6 : VIRTIO_NET_HDR_GSO_TCPV4);
	CHECK_EQ(le16toh(o->vh.gso_size), MSS);
	CHECK_EQ(le16toh(o->vh.csum_start), l4off);
	CHECK_EQ(le16toh(o->vh.csum_offset), 16);
	CHECK_EQ(g32(o->pkt + l4off + 4), 1000 + from);
	CHECK_MEM(o->pkt + hdrs, data + from, n);
	if (v6) {
		CHECK_EQ(g16(o->pkt + 4), o->len - 40);
	} else {
		CHECK_EQ(g16(o->pkt + 2), o->len);
		CHECK_EQ(ipoib_csum_fold(ipoib_csum_add(0, o->pkt, 20)), 0xffff);
	}
	memcpy(p, o->pkt, o->len);
	p16(p + l4off + 16,
	    (uint16_t)~ipoib_csum_fold(ipoib_csum_add(0, p + l4off, o->len - l4off)));
	CHECK(tcp_ok(p, o->len, l4off));
	free(p);
}

static void check_gro(bool v6)
{
	make_segments(v6);
	ipoib_gro_init(rx_write);
	for (unsigned i = 0; i < nsegs; i++)
		ipoib_gro_input(segs[i].pkt, segs[i].len);
	ipoib_gro_flush();
	CHECK_EQ(nout, 1);
	check_joined(&outs[0], 0, PAYLOAD, v6);
	CHECK_EQ(outs[0].pkt[(v6 ? 40 : 20) + 13], 0x18); /* the last one's PSH */
}

TEST(gro4_joins) { check_gro(false); }
TEST(gro6_joins) { check_gro(true); }

/* a segment whose checksum fails goes alone (the kernel drops it) and
 * ends the joining; the next ones join anew */
TEST(gro_bad_checksum)
{
	make_segments(false);
	ipoib_gro_init(rx_write);
	segs[2].pkt[100] ^= 0x40;
	for (unsigned i = 0; i < nsegs; i++)
		ipoib_gro_input(segs[i].pkt, segs[i].len);
	ipoib_gro_flush();
	CHECK_EQ(nout, 3);
	check_joined(&outs[0], 0, 2 * MSS, false);
	CHECK_EQ(outs[1].vh.gso_type, VIRTIO_NET_HDR_GSO_NONE);
	CHECK_MEM(outs[1].pkt, segs[2].pkt, segs[2].len);
	check_joined(&outs[2], 3 * MSS, PAYLOAD - 3 * MSS, false);
}

/* out of order, another flow in between: no joining across them */
TEST(gro_order_and_flows)
{
	make_segments(false);
	ipoib_gro_init(rx_write);
	ipoib_gro_input(segs[1].pkt, segs[1].len);
	ipoib_gro_input(segs[0].pkt, segs[0].len);
	ipoib_gro_flush();
	CHECK_EQ(nout, 2);
	CHECK_EQ(outs[0].vh.gso_type, VIRTIO_NET_HDR_GSO_NONE);
	CHECK_MEM(outs[0].pkt, segs[1].pkt, segs[1].len);
	nout = 0;
	ipoib_gro_input(segs[0].pkt, segs[0].len);
	/* the next segment, from another port (its checksum made again) */
	segs[1].pkt[21] ^= 1;
	p16(segs[1].pkt + 36, 0);
	p16(segs[1].pkt + 36,
	    (uint16_t)~ipoib_csum_fold(ipoib_csum_add(pseudo(segs[1].pkt, segs[1].len - 20),
						      segs[1].pkt + 20, segs[1].len - 20)));
	CHECK(tcp_ok(segs[1].pkt, segs[1].len, 20));
	ipoib_gro_input(segs[1].pkt, segs[1].len);
	ipoib_gro_flush();
	CHECK_EQ(nout, 2);
	CHECK_EQ(outs[1].vh.gso_type, VIRTIO_NET_HDR_GSO_NONE);
}

/* what is not TCP passes unchanged, and flushes what was held */
TEST(gro_other)
{
	static const uint8_t udp[28] = {0x45, 0, 0, 28, 0, 1, 0, 0, 64, 17};

	make_segments(false);
	ipoib_gro_init(rx_write);
	ipoib_gro_input(segs[0].pkt, segs[0].len);
	ipoib_gro_input(segs[1].pkt, segs[1].len);
	ipoib_gro_input(udp, sizeof(udp));
	ipoib_gro_flush();
	CHECK_EQ(nout, 2);
	check_joined(&outs[0], 0, 2 * MSS, false);
	CHECK_EQ(outs[1].len, sizeof(udp));
	CHECK_MEM(outs[1].pkt, udp, sizeof(udp));
}

int main(void)
{
	for (size_t i = 0; i < PAYLOAD; i++)
		data[i] = (uint8_t)(i * 7 + (i >> 8));
	RUN(csum_known);
	RUN(tso4_segments);
	RUN(tso6_segments);
	RUN(tso_whole);
	RUN(tso_refused);
	RUN(gro4_joins);
	RUN(gro6_joins);
	RUN(gro_bad_checksum);
	RUN(gro_order_and_flows);
	RUN(gro_other);
	return test_summary();
}
