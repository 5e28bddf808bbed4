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
 * with DF, i.e. IP_PMTUDISC_DO; Linux rxe does not: it draws IDs with
 * __ip_select_ident, so its IPv4 packets fail here), protocol 17, total length
 * 20 + 8 + UDP payload; for IPv6 payload length 8 + UDP payload and next
 * header 17, no extension headers.
 *
 * The IPv4 ID is covered, yet a UDP socket neither chooses nor sees it:
 * a datagram sent alone leaves with ID 0, but the segments of one UDP GSO
 * send (UDP_SEGMENT, udp.c) leave with IDs 0, 1, 2, ... as the kernel's
 * segmentation (inet_gso_segment) numbers them. The sender therefore
 * gives segment i the ICRC of ID i (roce_icrc_ipid_delta), and a receiver,
 * which cannot see the ID, accepts a packet whose ICRC is right for an ID
 * below ROCE_ICRC_MAX_IPID. The CRC is linear, so an ICRC for another ID
 * is the one for ID 0 plus a difference that depends only on the ID and
 * the packet's length: no second pass over the packet.
 *
 * The CRC itself: on x86-64 with PCLMULQDQ, folding 64 bytes a step with
 * carry-less multiplication and a Barrett reduction at the end (Gopal et
 * al., "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ
 * Instruction", Intel, 2009; the constants for the reflected polynomial
 * are x^n mod P for the fold distances, see crc_fold), 256 bytes a step
 * on 512-bit registers where the CPU has VPCLMULQDQ and AVX-512 (unless
 * SOFTOFED_NO_AVX512 is set), 16 bytes a step from 16 bytes on, and a
 * last partial block folded in as well (fold_end). The register after
 * the pseudo-header (ones, IP and UDP headers) is kept for the last few
 * flows and lengths (head_crc), and a packet with little after its BTH
 * goes through in one run: an ACK or a short message is then 16 bytes or
 * so of folding, with no table lookup that would miss the cache after the
 * kernel's work between two packets. Elsewhere, and for runs under 16
 * bytes, slice-by-8: eight
 * tables of 256 entries, eight bytes a step. All are set up once on first
 * use.
 */
#include "roce_wire.h"
#include "sof_bytes.h"

#include <endian.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HAVE_CRC_FOLD 1
#endif

#define CRC32_POLY 0xedb88320u /* IEEE 802.3, reflected */

static uint32_t crc_tab[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static uint32_t crc_tables(uint32_t crc, const uint8_t *p, size_t len)
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

#ifdef HAVE_CRC_FOLD
static bool have_fold;

/* a * k.lo ^ a.hi * k.hi ^ b: a folded forward onto b (the distance is
 * what k's constants say) */
__attribute__((target("pclmul,sse4.1"))) static inline __m128i fold(__m128i a, __m128i k, __m128i b)
{
	return _mm_xor_si128(
	    _mm_xor_si128(_mm_clmulepi64_si128(a, k, 0x00), _mm_clmulepi64_si128(a, k, 0x11)), b);
}

/* The constants, reflected and shifted left by one as the reflected
 * domain needs: k3 = x^(128+32), k4 = x^(128-32) mod P (fold by 16
 * bytes), k5 = x^64 (128 bits to 64), mu = x^64 / P and P itself
 * (Barrett). */
#define K34 _mm_set_epi64x(0x0ccaa009e, 0x1751997d0)

/* The end of a fold: accumulator a (16 bytes of the message, everything
 * before them folded in) and the len more bytes at p become the CRC
 * register. Whole 16-byte blocks fold one by one; a last partial block of
 * r bytes (Gopal et al., "final partial block") makes a 16 + r byte
 * message of a and the r bytes: its first r bytes, as a block ending 16
 * bytes before the last, fold onto the last 16, which are a's bytes from
 * r on and the r new ones (read as the message's last 16 bytes: the 16
 * before p are the message's too). */
__attribute__((target("pclmul,sse4.1,ssse3"))) static uint32_t fold_end(__m128i a, const uint8_t *p,
									size_t len)
{
	/* shuffles: from byte 16 - r on, a's bytes moved up by 16 - r (the
	 * rest zero); from byte 16 + r on, moved down by r */
	static const uint8_t shuf[48] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
					 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0,	   1,	 2,    3,
					 4,    5,    6,	   7,	 8,    9,    10,   11,	 12,   13,
					 14,   15,   0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
					 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80};
	const __m128i k5 = _mm_set_epi64x(0, 0x163cd6124);
	const __m128i pmu = _mm_set_epi64x(0x1f7011641, 0x1db710641);
	const __m128i low32 = _mm_set_epi32(0, -1, 0, -1);
	__m128i t;

	for (; len >= 16; p += 16, len -= 16)
		a = fold(a, K34, _mm_loadu_si128((const __m128i *)p));
	if (len) {
		const __m128i up = _mm_loadu_si128((const __m128i *)(shuf + len));
		const __m128i down = _mm_loadu_si128((const __m128i *)(shuf + 16 + len));
		__m128i last = _mm_loadu_si128((const __m128i *)(p + len - 16));

		/* bytes below 16 - r (up's high bit set): a's, moved down */
		last = _mm_blendv_epi8(last, _mm_shuffle_epi8(a, down), up);
		a = fold(_mm_shuffle_epi8(a, up), K34, last);
	}
	/* 128 bits to 64 */
	t = _mm_clmulepi64_si128(a, K34, 0x10);
	a = _mm_xor_si128(_mm_srli_si128(a, 8), t);
	/* 64 bits to 32 */
	t = _mm_srli_si128(a, 4);
	a = _mm_xor_si128(_mm_clmulepi64_si128(_mm_and_si128(a, low32), k5, 0x00), t);
	/* Barrett: a mod P */
	t = _mm_clmulepi64_si128(_mm_and_si128(a, low32), pmu, 0x10);
	t = _mm_clmulepi64_si128(_mm_and_si128(t, low32), pmu, 0x00);
	return (uint32_t)_mm_extract_epi32(_mm_xor_si128(a, t), 1);
}

/* The CRC register after len >= 16 bytes at p, from register crc. */
__attribute__((target("pclmul,sse4.1,ssse3"))) static uint32_t
crc_fold16(uint32_t crc, const uint8_t *p, size_t len)
{
	__m128i a = _mm_xor_si128(_mm_loadu_si128((const __m128i *)p), _mm_cvtsi32_si128((int)crc));

	return fold_end(a, p + 16, len - 16);
}

/* The CRC register after len >= 64 bytes at p, from register crc: four
 * 128-bit accumulators 64 bytes apart, each folded forward by 64 bytes a
 * step (k1 = x^(512+32), k2 = x^(512-32) mod P), then into one. */
__attribute__((target("pclmul,sse4.1,ssse3"))) static uint32_t
crc_fold(uint32_t crc, const uint8_t *p, size_t len)
{
	const __m128i k12 = _mm_set_epi64x(0x1c6e41596, 0x154442bd4);
	__m128i a, b, c, d;

	a = _mm_xor_si128(_mm_loadu_si128((const __m128i *)p), _mm_cvtsi32_si128((int)crc));
	b = _mm_loadu_si128((const __m128i *)(p + 16));
	c = _mm_loadu_si128((const __m128i *)(p + 32));
	d = _mm_loadu_si128((const __m128i *)(p + 48));
	for (p += 64, len -= 64; len >= 64; p += 64, len -= 64) {
		a = fold(a, k12, _mm_loadu_si128((const __m128i *)p));
		b = fold(b, k12, _mm_loadu_si128((const __m128i *)(p + 16)));
		c = fold(c, k12, _mm_loadu_si128((const __m128i *)(p + 32)));
		d = fold(d, k12, _mm_loadu_si128((const __m128i *)(p + 48)));
	}
	a = fold(a, K34, b);
	a = fold(a, K34, c);
	a = fold(a, K34, d);
	return fold_end(a, p, len);
}

#define FOLD512 "avx512f,avx512vl,avx512bw,vpclmulqdq,pclmul,sse4.1,ssse3"
static bool have_fold512;

/* fold for 512-bit registers: each 128-bit lane as fold() */
__attribute__((target(FOLD512))) static inline __m512i fold512(__m512i a, __m512i k, __m512i b)
{
	return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(a, k, 0x00),
					 _mm512_clmulepi64_epi128(a, k, 0x11), b, 0x96);
}

/* The same with VPCLMULQDQ on 512-bit registers (len >= 256): four
 * registers of four lanes, 256 bytes a step (the fold distance 2048 bits:
 * x^(2048+32), x^(2048-32) mod P), then folded into one register (512
 * bits: k1, k2) whose lanes fold into one (k3, k4). */
__attribute__((target(FOLD512))) static uint32_t crc_fold512(uint32_t crc, const uint8_t *p,
							     size_t len)
{
	const __m512i k2048 = _mm512_broadcast_i32x4(_mm_set_epi64x(0x1322d1430, 0x11542778a));
	const __m512i k512 = _mm512_broadcast_i32x4(_mm_set_epi64x(0x1c6e41596, 0x154442bd4));
	__m512i a, b, c, d;
	__m128i x;

	a = _mm512_xor_si512(
	    _mm512_loadu_si512((const void *)p),
	    _mm512_inserti32x4(_mm512_setzero_si512(), _mm_cvtsi32_si128((int)crc), 0));
	b = _mm512_loadu_si512((const void *)(p + 64));
	c = _mm512_loadu_si512((const void *)(p + 128));
	d = _mm512_loadu_si512((const void *)(p + 192));
	for (p += 256, len -= 256; len >= 256; p += 256, len -= 256) {
		a = fold512(a, k2048, _mm512_loadu_si512((const void *)p));
		b = fold512(b, k2048, _mm512_loadu_si512((const void *)(p + 64)));
		c = fold512(c, k2048, _mm512_loadu_si512((const void *)(p + 128)));
		d = fold512(d, k2048, _mm512_loadu_si512((const void *)(p + 192)));
	}
	a = fold512(a, k512, b);
	a = fold512(a, k512, c);
	a = fold512(a, k512, d);
	for (; len >= 64; p += 64, len -= 64)
		a = fold512(a, k512, _mm512_loadu_si512((const void *)p));
	x = fold(_mm512_extracti32x4_epi32(a, 0), K34, _mm512_extracti32x4_epi32(a, 1));
	x = fold(x, K34, _mm512_extracti32x4_epi32(a, 2));
	x = fold(x, K34, _mm512_extracti32x4_epi32(a, 3));
	/* the upper halves of the vector registers clean (VZEROUPPER) before
	 * fold_end's SSE code: dirty, every SSE instruction after them, here
	 * and in the caller, waits on them (a 4 KiB ICRC took 4x as long) */
	_mm256_zeroupper();
	return fold_end(x, p, len);
}
#endif

/* The CRC register after len bytes at p, from register crc: folding from
 * 16 bytes on (no tables, so no cache misses after the kernel's work
 * between two packets), the tables below that. */
static uint32_t crc_update(uint32_t crc, const uint8_t *p, size_t len)
{
#ifdef HAVE_CRC_FOLD
	if (have_fold512 && len >= 256)
		return crc_fold512(crc, p, len);
	if (have_fold && len >= 64)
		return crc_fold(crc, p, len);
	if (have_fold && len >= 16)
		return crc_fold16(crc, p, len);
#endif
	return crc_tables(crc, p, len);
}

/* x^(2^k) mod P for k < 64, reflected (x^0 is bit 31): for moving a CRC
 * register over runs of zero bytes. */
static uint32_t x2k[64];

/* a * b mod P, reflected */
static uint32_t gf2_mul(uint32_t a, uint32_t b)
{
	uint32_t p = 0;

	for (uint32_t m = 1u << 31; m; m >>= 1) {
		if (a & m)
			p ^= b;
		b = (b >> 1) ^ (b & 1 ? CRC32_POLY : 0);
	}
	return p;
}

/* x^(8n) mod P: what n zero bytes do to a CRC register (from zero). */
static uint32_t x8n(uint64_t n)
{
	uint32_t r = 1u << 31;

	n <<= 3;
	for (int k = 0; n && k < 64; k++, n >>= 1)
		if (n & 1)
			r = gf2_mul(r, x2k[k]);
	return r;
}

static void crc_init(void)
{
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
	x2k[0] = 1u << 30; /* x^1 */
	for (k = 1; k < 64; k++)
		x2k[k] = gf2_mul(x2k[k - 1], x2k[k - 1]);
#ifdef HAVE_CRC_FOLD
	__builtin_cpu_init();
	have_fold = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1") &&
		    __builtin_cpu_supports("ssse3");
	have_fold512 = have_fold && __builtin_cpu_supports("avx512f") &&
		       __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
		       __builtin_cpu_supports("vpclmulqdq") && !getenv("SOFTOFED_NO_AVX512");
#endif
}

static bool is_v4mapped(const uint8_t a[16])
{
	static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	return memcmp(a, prefix, sizeof(prefix)) == 0;
}


/* The pseudo-header: the LRH's ones, the IP header and the UDP header
 * (IPv6: the longest, 56 bytes). Its CRC register depends only on the
 * addresses, the ports and the UDP length, so a cache keeps the registers
 * of the last ROCE_ICRC_HEADS pseudo-headers: a ping-pong or a stream
 * sends and receives packets of one or two flows and lengths, and then
 * only the BTH and what follows go through the CRC. */
#define PSEUDO_MAX (8 + 40 + 8)

/* The CRC register after the pseudo-header of a packet of flow a whose
 * UDP length (header, packet, ICRC) is udplen. */
static uint32_t head_crc(struct roce_icrc_cache *c, const struct roce_addr *a, uint16_t udplen)
{
	uint8_t ph[PSEUDO_MAX];
	unsigned k;
	size_t n;

	for (k = 0; k < ROCE_ICRC_HEADS; k++)
		if (c->head[k].udplen == udplen && c->head[k].a.sport == a->sport &&
		    c->head[k].a.dport == a->dport && !memcmp(c->head[k].a.src, a->src, 16) &&
		    !memcmp(c->head[k].a.dst, a->dst, 16))
			return c->head[k].crc;
	memset(ph, 0xff, 8); /* in place of the LRH */
	if (is_v4mapped(a->src) && is_v4mapped(a->dst)) {
		ph[8] = 0x45; /* version 4, IHL 5 */
		ph[9] = 0xff; /* TOS: variant */
		sof_put16(ph + 10, (uint16_t)(20 + udplen));
		sof_put16(ph + 12, 0);	/* ID: see the top of the file */
		sof_put16(ph + 14, 0x4000); /* DF, fragment offset 0 */
		ph[16] = 0xff;		/* TTL: variant */
		ph[17] = 17;		/* UDP */
		sof_put16(ph + 18, 0xffff); /* header checksum: variant */
		memcpy(ph + 20, a->src + 12, 4);
		memcpy(ph + 24, a->dst + 12, 4);
		n = 8 + 20;
	} else {
		ph[8] = 0x6f; /* version 6, traffic class: variant */
		ph[9] = 0xff; /* traffic class, flow label: variant */
		ph[10] = 0xff;
		ph[11] = 0xff;
		sof_put16(ph + 12, udplen); /* payload length */
		ph[14] = 17;		/* next header: UDP */
		ph[15] = 0xff;		/* hop limit: variant */
		memcpy(ph + 16, a->src, 16);
		memcpy(ph + 32, a->dst, 16);
		n = 8 + 40;
	}
	sof_put16(ph + n, a->sport);
	sof_put16(ph + n + 2, a->dport);
	sof_put16(ph + n + 4, udplen);
	sof_put16(ph + n + 6, 0xffff); /* UDP checksum: variant */
	n += 8;
	k = c->next++ % ROCE_ICRC_HEADS;
	c->head[k].a = *a;
	c->head[k].udplen = udplen;
	c->head[k].crc = crc_update(0xffffffffu, ph, n);
	return c->head[k].crc;
}

/* A packet whose rest after the BTH is at most SMALL_REST bytes (ACKs,
 * small messages) goes through the CRC in one run with its BTH: 16 bytes
 * or more fold with no table look-up (that would miss the cache after
 * the kernel's work between two packets). */
#define SMALL_REST 64

uint32_t roce_icrc_iov_c(struct roce_icrc_cache *c, const struct roce_addr *a,
			 const struct iovec *iov, unsigned niov)
{
	uint8_t run[ROCE_BTH_LEN + SMALL_REST];
	size_t len = 0, bth, got = 0;
	uint32_t crc;
	unsigned i;

	for (i = 0; i < niov; i++)
		len += iov[i].iov_len;
	bth = len < ROCE_BTH_LEN ? len : ROCE_BTH_LEN;
	/* UDP length: header, packet, ICRC (16 bits, as on the wire) */
	pthread_once(&crc_once, crc_init);
	crc = head_crc(c, a, (uint16_t)(8 + len + ROCE_ICRC_LEN));

	/* the BTH, from however many pieces hold it, and a small rest */
	if (len - bth <= SMALL_REST) {
		for (i = 0; i < niov; i++) {
			memcpy(run + got, iov[i].iov_base, iov[i].iov_len);
			got += iov[i].iov_len;
		}
		if (len > 4)
			run[4] = 0xff; /* BTH FECN, BECN, Resv6a: variant */
		return ~crc_update(crc, run, len);
	}
	for (i = 0; i < niov && got < bth; i++) {
		size_t k = iov[i].iov_len < bth - got ? iov[i].iov_len : bth - got;

		memcpy(run + got, iov[i].iov_base, k);
		got += k;
	}
	run[4] = 0xff; /* BTH FECN, BECN, Resv6a: variant */
	crc = crc_update(crc, run, bth);
	/* then everything after the BTH */
	for (i = 0, got = 0; i < niov; i++) {
		const uint8_t *p = iov[i].iov_base;
		size_t k = iov[i].iov_len, skip = got < bth ? bth - got : 0;

		if (skip > k)
			skip = k;
		got += k;
		crc = crc_update(crc, p + skip, k - skip);
	}
	return ~crc;
}

uint32_t roce_crc32_update(uint32_t crc, const void *p, size_t len)
{
	pthread_once(&crc_once, crc_init);
	return crc_update(crc, p, len);
}

uint32_t roce_icrc_iov(const struct roce_addr *a, const struct iovec *iov, unsigned niov)
{
	struct roce_icrc_cache c = {0};

	return roce_icrc_iov_c(&c, a, iov, niov);
}

uint32_t roce_icrc(const struct roce_addr *a, const uint8_t *pkt, size_t len)
{
	struct iovec v = {(void *)(uintptr_t)pkt, len};

	return roce_icrc_iov(a, &v, 1);
}

void roce_icrc_append(const struct roce_addr *a, uint8_t *pkt, size_t len)
{
	uint32_t crc = roce_icrc(a, pkt, len);

	pkt[len] = (uint8_t)crc;
	pkt[len + 1] = (uint8_t)(crc >> 8);
	pkt[len + 2] = (uint8_t)(crc >> 16);
	pkt[len + 3] = (uint8_t)(crc >> 24);
}

/* The difference an IP ID makes, one per bit of the ID (bit j of the ID,
 * 0 = the lowest): the ICRC's input is 8 bytes of ones, the IPv4 header
 * (its ID in bytes 4 and 5), the UDP header, the packet; the raw CRC of a
 * message that is zero but for byte b at q is table[b] moved over the
 * bytes after q. The cache keeps them for the last length asked (a run of
 * GSO segments has one length). */
static const uint32_t *ipid_bits(struct roce_icrc_cache *c, size_t len)
{
	if (c->ipid_len != len + 1) {
		uint64_t n = 8 + 20 + 8 + (uint64_t)len;
		uint32_t lo = x8n(n - 14), hi = x8n(n - 13);

		for (int j = 0; j < 8; j++) {
			c->ipid_bit[j] = gf2_mul(lo, crc_tab[0][1u << j]);
			c->ipid_bit[8 + j] = gf2_mul(hi, crc_tab[0][1u << j]);
		}
		c->ipid_len = len + 1;
	}
	return c->ipid_bit;
}

uint32_t roce_icrc_ipid_delta_c(struct roce_icrc_cache *c, size_t len, uint16_t id)
{
	const uint32_t *bit;
	uint32_t d = 0;

	pthread_once(&crc_once, crc_init);
	bit = ipid_bits(c, len);
	for (int j = 0; id; j++, id >>= 1)
		if (id & 1)
			d ^= bit[j];
	return d;
}

uint32_t roce_icrc_ipid_delta(size_t len, uint16_t id)
{
	struct roce_icrc_cache c = {0};

	return roce_icrc_ipid_delta_c(&c, len, id);
}

/* diff = wire ^ ICRC(ID 0): is it the difference of an ID in
 * [1, ROCE_ICRC_MAX_IPID)? */
static bool ipid_diff_ok(struct roce_icrc_cache *c, size_t len, uint32_t diff)
{
	const uint32_t *bit = ipid_bits(c, len);
	uint32_t d = 0;

	/* IDs 1..63 in Gray-code order: one XOR each */
	for (uint32_t i = 1; i < ROCE_ICRC_MAX_IPID; i++) {
		d ^= bit[__builtin_ctz(i)];
		if (d == diff)
			return true;
	}
	return false;
}

bool roce_icrc_check_c(struct roce_icrc_cache *c, const struct roce_addr *a, const uint8_t *pkt,
		       size_t len)
{
	struct iovec v = {(void *)(uintptr_t)pkt, len};
	const uint8_t *w;
	uint32_t crc, mine;

	if (len < ROCE_ICRC_LEN)
		return false;
	len -= ROCE_ICRC_LEN;
	v.iov_len = len;
	w = pkt + len;
	crc = (uint32_t)w[0] | (uint32_t)w[1] << 8 | (uint32_t)w[2] << 16 | (uint32_t)w[3] << 24;
	mine = roce_icrc_iov_c(c, a, &v, 1);
	if (mine == crc)
		return true;
	return is_v4mapped(a->src) && is_v4mapped(a->dst) && ipid_diff_ok(c, len, mine ^ crc);
}

bool roce_icrc_check(const struct roce_addr *a, const uint8_t *pkt, size_t len)
{
	struct roce_icrc_cache c = {0};

	return roce_icrc_check_c(&c, a, pkt, len);
}
