/*
 * The invariant CRC of RoCEv2 packets (IBA Annex A17.3.3, after vol. 1
 * 7.8.1): the CRC-32 of IEEE 802.3 (reflected polynomial 0xEDB88320, all
 * ones in, inverted out) over
 *
 *   64 bits of ones (in place of the LRH of an InfiniBand packet)
 *   the IP header, variant fields masked to ones:
 *     IPv4: Type of Service, TTL, header checksum
 *     IPv6: Traffic Class, Flow Label, Hop Limit
 *   the UDP header, checksum masked to ones
 *   the BTH, its variant byte (FECN, BECN, Resv6a) masked to ones
 *   everything after the BTH up to the ICRC: headers, payload, pad
 *
 * The CRC goes on the wire least significant byte first, as the Ethernet
 * FCS does; this is what Linux rxe and RoCE NICs send.
 *
 * We do not see the IP header the kernel builds for our UDP socket, so we
 * rebuild it from what it must be: version and header length 0x45 with no
 * options, ID 0 and DF set (the kernel sends ID 0 for an unconnected socket
 * with DF, i.e. IP_PMTUDISC_DO, and so does rxe), protocol 17, total length
 * 20 + 8 + UDP payload; for IPv6 payload length 8 + UDP payload and next
 * header 17, no extension headers.
 *
 * The CRC itself is slice-by-8: eight tables of 256 entries, eight bytes a
 * step, built once on first use.
 */
#include "roce_wire.h"

#include <endian.h>
#include <pthread.h>
#include <string.h>

#define CRC32_POLY 0xedb88320u /* IEEE 802.3, reflected */

static uint32_t crc_tab[8][256];
/* The CRC state after the 64 bits of ones that stand for the LRH. */
static uint32_t crc_after_lrh;
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static uint32_t crc_update(uint32_t crc, const uint8_t *p, size_t len)
{
	while (len && ((uintptr_t)p & 7)) {
		crc = crc_tab[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
		len--;
	}
	while (len >= 8) {
		uint32_t lo, hi;

		memcpy(&lo, p, 4);
		memcpy(&hi, p + 4, 4);
		lo = le32toh(lo) ^ crc;
		hi = le32toh(hi);
		crc = crc_tab[7][lo & 0xff] ^ crc_tab[6][(lo >> 8) & 0xff] ^
		      crc_tab[5][(lo >> 16) & 0xff] ^ crc_tab[4][lo >> 24] ^ crc_tab[3][hi & 0xff] ^
		      crc_tab[2][(hi >> 8) & 0xff] ^ crc_tab[1][(hi >> 16) & 0xff] ^
		      crc_tab[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = crc_tab[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

static void crc_init(void)
{
	static const uint8_t ones[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	uint32_t i, k;

	for (i = 0; i < 256; i++) {
		uint32_t c = i;

		for (k = 0; k < 8; k++)
			c = (c >> 1) ^ (c & 1 ? CRC32_POLY : 0);
		crc_tab[0][i] = c;
	}
	/* table k: the effect of a byte followed by k zero bytes */
	for (i = 0; i < 256; i++)
		for (k = 1; k < 8; k++)
			crc_tab[k][i] =
			    (crc_tab[k - 1][i] >> 8) ^ crc_tab[0][crc_tab[k - 1][i] & 0xff];
	crc_after_lrh = crc_update(0xffffffffu, ones, sizeof(ones));
}

static bool is_v4mapped(const uint8_t a[16])
{
	static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	return memcmp(a, prefix, sizeof(prefix)) == 0;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* IPv6 + UDP + BTH: the longest pseudo-header */
#define PSEUDO_MAX (40 + 8 + ROCE_BTH_LEN)

uint32_t roce_icrc(const struct roce_addr *a, const uint8_t *pkt, size_t len)
{
	uint8_t ph[PSEUDO_MAX];
	size_t n, bth = len < ROCE_BTH_LEN ? len : ROCE_BTH_LEN;
	/* UDP length: header, packet, ICRC (16 bits, as on the wire) */
	uint16_t udplen = (uint16_t)(8 + len + ROCE_ICRC_LEN);

	pthread_once(&crc_once, crc_init);

	if (is_v4mapped(a->src) && is_v4mapped(a->dst)) {
		ph[0] = 0x45; /* version 4, IHL 5 */
		ph[1] = 0xff; /* TOS: variant */
		put16(ph + 2, (uint16_t)(20 + udplen));
		put16(ph + 4, 0);	/* ID */
		put16(ph + 6, 0x4000);	/* DF, fragment offset 0 */
		ph[8] = 0xff;		/* TTL: variant */
		ph[9] = 17;		/* UDP */
		put16(ph + 10, 0xffff); /* header checksum: variant */
		memcpy(ph + 12, a->src + 12, 4);
		memcpy(ph + 16, a->dst + 12, 4);
		n = 20;
	} else {
		ph[0] = 0x6f; /* version 6, traffic class: variant */
		ph[1] = 0xff; /* traffic class, flow label: variant */
		ph[2] = 0xff;
		ph[3] = 0xff;
		put16(ph + 4, udplen); /* payload length */
		ph[6] = 17;	       /* next header: UDP */
		ph[7] = 0xff;	       /* hop limit: variant */
		memcpy(ph + 8, a->src, 16);
		memcpy(ph + 24, a->dst, 16);
		n = 40;
	}
	put16(ph + n, a->sport);
	put16(ph + n + 2, a->dport);
	put16(ph + n + 4, udplen);
	put16(ph + n + 6, 0xffff); /* UDP checksum: variant */
	n += 8;
	memcpy(ph + n, pkt, bth);
	if (len > 4)
		ph[n + 4] = 0xff; /* BTH FECN, BECN, Resv6a: variant */
	n += bth;

	return ~crc_update(crc_update(crc_after_lrh, ph, n), pkt + bth, len - bth);
}

void roce_icrc_append(const struct roce_addr *a, uint8_t *pkt, size_t len)
{
	uint32_t crc = roce_icrc(a, pkt, len);

	pkt[len] = (uint8_t)crc;
	pkt[len + 1] = (uint8_t)(crc >> 8);
	pkt[len + 2] = (uint8_t)(crc >> 16);
	pkt[len + 3] = (uint8_t)(crc >> 24);
}

bool roce_icrc_check(const struct roce_addr *a, const uint8_t *pkt, size_t len)
{
	const uint8_t *w;
	uint32_t crc;

	if (len < ROCE_ICRC_LEN)
		return false;
	len -= ROCE_ICRC_LEN;
	w = pkt + len;
	crc = (uint32_t)w[0] | (uint32_t)w[1] << 8 | (uint32_t)w[2] << 16 | (uint32_t)w[3] << 24;
	return roce_icrc(a, pkt, len) == crc;
}
