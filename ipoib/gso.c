/*
 * The TUN interface's offloads (IFF_VNET_HDR, TUNSETOFFLOAD with checksum
 * and TSO for IPv4 and IPv6), so that the kernel's TCP runs on large
 * packets while the fabric carries IPoIB's:
 *
 *   - transmit: the kernel hands a packet with a virtio_net_hdr. Its TCP
 *     or UDP checksum may be left to us (NEEDS_CSUM: the field holds the
 *     pseudo-header's sum, the rest is summed from csum_start), and a TCP
 *     packet may be up to 64 KiB with gso_size, the MSS, as a hardware
 *     NIC's TSO takes it. What the destination takes whole (a connected
 *     mode peer, RFC 4755: up to 65520) goes whole; the rest is cut here
 *     into segments of gso_size bytes of payload, each a TCP/IP packet of
 *     its own (sequence number, IPv4 length, ID and header checksum, IPv6
 *     payload length, FIN and PSH only on the last, CWR only on the first,
 *     TCP checksum), as the kernel's tcp_gso_segment would.
 *   - receive: consecutive in-order TCP segments of one flow in one batch
 *     of completions (the datagram MTU's: 2044 or 4092 bytes) are joined
 *     into one packet written with a GSO header, as a NIC's GRO would,
 *     so that the kernel's TCP takes one packet instead of up to 32. Each
 *     segment's checksum is verified here first (a bad one is written on
 *     its own for the kernel to drop and count), and the joined packet
 *     goes as CHECKSUM_PARTIAL (already verified).
 *
 * Untrusted bytes: the receive side's packets come off the fabric (after
 * proto.c's checks that the IP header fits); every offset is checked
 * against the length before it is read. The transmit side's come from
 * the kernel but are checked the same way.
 *
 * Lock contract: one thread (the loop's); the joined packet is static.
 */
#include "ipoib.h"

#include <endian.h>
#include <errno.h>
#include <linux/virtio_net.h>
#include <string.h>

#define TCP_FIN 0x01
#define TCP_PSH 0x08
#define TCP_ACK 0x10
#define TCP_CWR 0x80
#define IPPROTO_TCP_ 6
#define IP_MAX_LEN 65535 /* an IPv4 total length, an IPv6 payload length */

static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}
static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

/* RFC 1071: the one's complement sum of len bytes (big-endian 16-bit
 * words, an odd last byte padded with zero), added to sum. The sum does
 * not depend on the byte order (RFC 1071 2.B): it is taken in the
 * host's order, 32-bit words into 64-bit sums (no carry to follow: 2^32
 * words before one could overflow), four sums at once, and turned to
 * network order once folded. */
uint64_t ipoib_csum_add(uint64_t sum, const uint8_t *p, size_t len)
{
	uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0, v[4];
	size_t i = 0;
	uint32_t w;
	uint16_t h;
	uint8_t last[2] = {0, 0};

	for (; i + 32 <= len; i += 32) {
		memcpy(v, p + i, 32);
		a0 += (v[0] & 0xffffffffu) + (v[0] >> 32);
		a1 += (v[1] & 0xffffffffu) + (v[1] >> 32);
		a2 += (v[2] & 0xffffffffu) + (v[2] >> 32);
		a3 += (v[3] & 0xffffffffu) + (v[3] >> 32);
	}
	for (; i + 4 <= len; i += 4) {
		memcpy(&w, p + i, 4);
		a0 += w;
	}
	if (i + 2 <= len) {
		memcpy(&h, p + i, 2);
		a1 += h;
		i += 2;
	}
	if (i < len) {
		last[0] = p[i];
		memcpy(&h, last, 2);
		a2 += h;
	}
	/* each below 2^47: their sum does not overflow */
	h = ipoib_csum_fold(a0 + a1 + a2 + a3);
	return sum + be16toh(h);
}

uint16_t ipoib_csum_fold(uint64_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/* The pseudo-header's sum (RFC 793 3.1, RFC 8200 8.1) of an IPv4 or IPv6
 * packet for an upper layer of l4len bytes with protocol proto. */
static uint64_t pseudo_sum(const uint8_t *ip, uint32_t l4len, uint8_t proto)
{
	if ((ip[0] >> 4) == 4)
		return ipoib_csum_add(0, ip + 12, 8) + proto + l4len;
	return ipoib_csum_add(0, ip + 8, 32) + proto + (l4len >> 16) + (l4len & 0xffff);
}

static void ip4_hdr_csum(uint8_t *ip, size_t ihl)
{
	put16(ip + 10, 0);
	put16(ip + 10, (uint16_t)~ipoib_csum_fold(ipoib_csum_add(0, ip, ihl)));
}

/* ---- transmit ---------------------------------------------------------------------- */

/* NEEDS_CSUM: the field at csum_start + csum_offset holds the pseudo-
 * header's sum; the checksum covers csum_start to the end. */
static int csum_finish(uint8_t *pkt, size_t len, const struct virtio_net_hdr *vh)
{
	size_t start = le16toh(vh->csum_start), at = start + le16toh(vh->csum_offset);
	uint16_t c;

	if (start >= len || at + 2 > len)
		return -EINVAL;
	c = (uint16_t)~ipoib_csum_fold(ipoib_csum_add(0, pkt + start, len - start));
	/* UDP's zero means "none" (RFC 768): all ones instead */
	put16(pkt + at, c ? c : 0xffff);
	return 0;
}

/* The headers of a TSO packet: the IP header's length (the TCP header's
 * offset) and the headers' total; 0 when it is not one we cut. */
static size_t tso_headers(const uint8_t *pkt, size_t len, size_t *l4off)
{
	size_t off, doff;

	if (len < 20)
		return 0;
	if ((pkt[0] >> 4) == 4) {
		off = (size_t)(pkt[0] & 15) * 4;
		if (off < 20 || pkt[9] != IPPROTO_TCP_ || (get16(pkt + 6) & 0x3fff))
			return 0;
	} else if ((pkt[0] >> 4) == 6) {
		off = 40; /* TCP right after the header: what the kernel's TSO6 hands */
		if (pkt[6] != IPPROTO_TCP_)
			return 0;
	} else {
		return 0;
	}
	if (off + 20 > len)
		return 0;
	doff = (size_t)(pkt[off + 12] >> 4) * 4;
	if (doff < 20 || off + doff > len)
		return 0;
	*l4off = off;
	return off + doff;
}

/* One segment, payload bytes [from, from + n) of pkt, into seg (which has
 * IPOIB_HDR_LEN bytes of headroom) and out. */
static void segment(const uint8_t *pkt, size_t hdrs, size_t l4off, size_t from, size_t n,
		    unsigned i, bool last, uint8_t *seg, void (*out)(uint8_t *, size_t))
{
	uint8_t *ip = seg + IPOIB_HDR_LEN, *th = ip + l4off;
	size_t len = hdrs + n;

	memcpy(ip, pkt, hdrs);
	memcpy(ip + hdrs, pkt + hdrs + from, n);
	if ((ip[0] >> 4) == 4) {
		put16(ip + 2, (uint16_t)len);
		put16(ip + 4, (uint16_t)(get16(pkt + 4) + i));
		ip4_hdr_csum(ip, l4off);
	} else {
		put16(ip + 4, (uint16_t)(len - 40));
	}
	put32(th + 4, get32(pkt + l4off + 4) + (uint32_t)from);
	if (!last)
		th[13] &= (uint8_t) ~(TCP_FIN | TCP_PSH);
	if (i)
		th[13] &= (uint8_t)~TCP_CWR;
	put16(th + 16, 0);
	put16(th + 16,
	      (uint16_t)~ipoib_csum_fold(ipoib_csum_add(
		  pseudo_sum(ip, (uint32_t)(len - l4off), IPPROTO_TCP_), th, len - l4off)));
	out(ip, len);
}

int ipoib_tx_offload(uint8_t *pkt, size_t len, const struct virtio_net_hdr *vh, size_t limit,
		     void (*out)(uint8_t *pkt, size_t len))
{
	static uint8_t seg[IPOIB_HDR_LEN + IP_MAX_LEN];
	uint8_t type = vh->gso_type & (uint8_t)~VIRTIO_NET_HDR_GSO_ECN;
	size_t hdrs, l4off = 0, mss = le16toh(vh->gso_size), total, from;
	unsigned i = 0;

	if (type == VIRTIO_NET_HDR_GSO_NONE || len <= limit) {
		if ((vh->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) && csum_finish(pkt, len, vh))
			return -EINVAL;
		out(pkt, len);
		return 0;
	}
	if (type != VIRTIO_NET_HDR_GSO_TCPV4 && type != VIRTIO_NET_HDR_GSO_TCPV6)
		return -EINVAL;
	hdrs = tso_headers(pkt, len, &l4off);
	if (!hdrs || !mss || hdrs >= len ||
	    ((pkt[0] >> 4) == 4) != (type == VIRTIO_NET_HDR_GSO_TCPV4))
		return -EINVAL;
	/* a segment would not fit either (an MTU the kernel has not learnt
	 * yet): whole, the transmit path answers it with ICMP "too big" */
	if (hdrs + mss > limit) {
		if (csum_finish(pkt, len, vh))
			return -EINVAL;
		out(pkt, len);
		return 0;
	}
	total = len - hdrs;
	ipoib.cnt[IC_tx_gso]++;
	for (from = 0; from < total; from += mss, i++) {
		size_t n = total - from < mss ? total - from : mss;

		segment(pkt, hdrs, l4off, from, n, i, from + n == total, seg, out);
		ipoib.cnt[IC_tx_gso_segs]++;
	}
	return 0;
}

/* ---- receive --------------------------------------------------------------------------- */

static struct {
	uint8_t pkt[IP_MAX_LEN];
	size_t len, hdrs, l4off, mss;
	unsigned segs;
	uint32_t next_seq;
	bool closed; /* a short segment or PSH: nothing joins after it */
	void (*write)(const struct virtio_net_hdr *vh, const uint8_t *pkt, size_t len);
} gro;

void ipoib_gro_init(void (*write)(const struct virtio_net_hdr *vh, const uint8_t *pkt, size_t len))
{
	gro.write = write;
	gro.len = 0;
}

/* A TCP segment with data, ACK and at most PSH, no IP options or
 * fragment, whose checksum verifies: its headers' length, else 0. */
static size_t gro_candidate(const uint8_t *pkt, size_t len, size_t *l4off)
{
	size_t hdrs = tso_headers(pkt, len, l4off);
	uint8_t flags;

	if (!hdrs || hdrs >= len)
		return 0;
	if ((pkt[0] >> 4) == 4 && (*l4off != 20 || get16(pkt + 2) != len ||
				   ipoib_csum_fold(ipoib_csum_add(0, pkt, 20)) != 0xffff))
		return 0;
	if ((pkt[0] >> 4) == 6 && get16(pkt + 4) + 40u != len)
		return 0;
	flags = pkt[*l4off + 13];
	if ((flags & (uint8_t)~TCP_PSH) != TCP_ACK)
		return 0;
	if (ipoib_csum_fold(ipoib_csum_add(pseudo_sum(pkt, (uint32_t)(len - *l4off), IPPROTO_TCP_),
					   pkt + *l4off, len - *l4off)) != 0xffff)
		return 0;
	return hdrs;
}

/* Does pkt continue the joined packet? Same addresses, IP fields, ports,
 * ACK, window, flags but PSH and options (Linux's GRO asks the same),
 * the next sequence number, at most the first segment's size. */
static bool gro_follows(const uint8_t *pkt, size_t len, size_t hdrs)
{
	const uint8_t *p = gro.pkt, *th = pkt + gro.l4off, *pth = p + gro.l4off;

	if (gro.closed || hdrs != gro.hdrs || (pkt[0] >> 4) != (p[0] >> 4))
		return false;
	if (len - hdrs > gro.mss || gro.len + len - hdrs > IP_MAX_LEN)
		return false;
	if ((p[0] >> 4) == 4) {
		/* version, TOS; TTL, protocol; addresses; DF */
		if (p[1] != pkt[1] || memcmp(p + 8, pkt + 8, 2) || memcmp(p + 12, pkt + 12, 8) ||
		    ((p[6] ^ pkt[6]) & 0x40))
			return false;
	} else if (memcmp(p, pkt, 4) || p[7] != pkt[7] || memcmp(p + 8, pkt + 8, 32)) {
		return false;
	}
	if (memcmp(pth, th, 4) || get32(th + 4) != gro.next_seq || memcmp(pth + 8, th + 8, 4) ||
	    pth[12] != th[12] || (pth[13] & (uint8_t)~TCP_PSH) != (th[13] & (uint8_t)~TCP_PSH) ||
	    memcmp(pth + 14, th + 14, 2) || memcmp(pth + 20, th + 20, hdrs - gro.l4off - 20))
		return false;
	return true;
}

void ipoib_gro_flush(void)
{
	struct virtio_net_hdr vh;
	uint8_t *p = gro.pkt, *th = p + gro.l4off;

	if (!gro.len)
		return;
	memset(&vh, 0, sizeof(vh));
	if (gro.segs > 1) {
		bool v4 = (p[0] >> 4) == 4;

		if (v4) {
			put16(p + 2, (uint16_t)gro.len);
			ip4_hdr_csum(p, gro.l4off);
		} else {
			put16(p + 4, (uint16_t)(gro.len - 40));
		}
		/* CHECKSUM_PARTIAL: the field holds the pseudo-header's sum
		 * (every segment's checksum was verified) */
		put16(th + 16, ipoib_csum_fold(
				   pseudo_sum(p, (uint32_t)(gro.len - gro.l4off), IPPROTO_TCP_)));
		vh.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
		vh.gso_type = v4 ? VIRTIO_NET_HDR_GSO_TCPV4 : VIRTIO_NET_HDR_GSO_TCPV6;
		vh.gso_size = htole16((uint16_t)gro.mss);
		vh.hdr_len = htole16((uint16_t)gro.hdrs);
		vh.csum_start = htole16((uint16_t)gro.l4off);
		vh.csum_offset = htole16(16);
	}
	gro.write(&vh, p, gro.len);
	gro.len = 0;
}

void ipoib_gro_input(const uint8_t *pkt, size_t len)
{
	static const struct virtio_net_hdr none;
	/* only datagrams are joined: a connected mode packet (up to 65520)
	 * is as large as a joined one already, and its checksum is the
	 * kernel's to verify as it copies it */
	size_t l4off = 0, hdrs = len <= IPOIB_BUF ? gro_candidate(pkt, len, &l4off) : 0;

	if (hdrs && gro.len && gro_follows(pkt, len, hdrs)) {
		size_t n = len - hdrs;

		memcpy(gro.pkt + gro.len, pkt + hdrs, n);
		gro.len += n;
		gro.segs++;
		ipoib.cnt[IC_rx_gro]++;
		gro.next_seq += (uint32_t)n;
		gro.pkt[gro.l4off + 13] |= pkt[l4off + 13] & TCP_PSH;
		gro.closed = n < gro.mss || (pkt[l4off + 13] & TCP_PSH);
		return;
	}
	ipoib_gro_flush();
	if (!hdrs) {
		gro.write(&none, pkt, len);
		return;
	}
	memcpy(gro.pkt, pkt, len);
	gro.len = len;
	gro.hdrs = hdrs;
	gro.l4off = l4off;
	gro.mss = len - hdrs;
	gro.segs = 1;
	gro.next_seq = get32(pkt + l4off + 4) + (uint32_t)gro.mss;
	gro.closed = (pkt[l4off + 13] & TCP_PSH) != 0;
}
