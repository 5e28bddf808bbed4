/*
 * InfiniBand link-layer wire format (ib_wire.h): LRH and GRH fields, the
 * invariant CRC of an IB packet (IBA 7.8.1) and its variant CRC (7.8.2),
 * the parse of one link datagram, and the SOFL link control messages of
 * fabric/README.md. Every read is bounded by the datagram's length: these
 * bytes come from another process on the link.
 */
#include "ib_wire.h"
#include "sof_bytes.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HAVE_VCRC_FOLD 1
#endif

const char *const ib_drop_names[IB_DROP_NR] = {
    [IB_DROP_NONE] = "none",	 [IB_DROP_SHORT] = "short", [IB_DROP_LVER] = "lver",
    [IB_DROP_PKTLEN] = "pktlen", [IB_DROP_VCRC] = "vcrc",   [IB_DROP_LNH] = "lnh",
    [IB_DROP_GRH] = "grh",	 [IB_DROP_ICRC] = "icrc",
};

const char *const ib_phys_names[IB_PHYS_NR] = {
    [0] = "NoStateChange",
    [IB_PHYS_SLEEP] = "Sleep",
    [IB_PHYS_POLLING] = "Polling",
    [IB_PHYS_DISABLED] = "Disabled",
    [IB_PHYS_TRAINING] = "PortConfigurationTraining",
    [IB_PHYS_LINKUP] = "LinkUp",
    [IB_PHYS_ERROR_RECOVERY] = "LinkErrorRecovery",
};





/* ---- headers ------------------------------------------------------------------ */

/* LRH, IBA 7.7: VL(4) LVer(4) | SL(4) Rsv2(2) LNH(2) | DLID(16) |
 * Rsv5(5) PktLen(11) | SLID(16); reserved bits sent as zero */
void ib_lrh_write(uint8_t *buf, const struct ib_lrh *l)
{
	buf[0] = (uint8_t)((l->vl & 0xf) << 4 | (l->lver & 0xf));
	buf[1] = (uint8_t)((l->sl & 0xf) << 4 | (l->lnh & 0x3));
	sof_put16(buf + 2, l->dlid);
	sof_put16(buf + 4, l->pktlen & 0x7ff);
	sof_put16(buf + 6, l->slid);
}

void ib_lrh_read(const uint8_t *buf, struct ib_lrh *l)
{
	l->vl = buf[0] >> 4;
	l->lver = buf[0] & 0xf;
	l->sl = buf[1] >> 4;
	l->lnh = buf[1] & 0x3;
	l->dlid = sof_get16(buf + 2);
	l->pktlen = sof_get16(buf + 4) & 0x7ff;
	l->slid = sof_get16(buf + 6);
}

/* GRH, IBA 8.3: IPVer(4) TClass(8) FlowLabel(20) | PayLen(16) NxtHdr(8)
 * HopLmt(8) | SGID(128) | DGID(128) */
void ib_grh_write(uint8_t *buf, const struct ib_grh *g)
{
	uint32_t w = (uint32_t)(g->ipver & 0xf) << 28 | (uint32_t)g->tclass << 20 |
		     (g->flow_label & 0xfffff);

	buf[0] = (uint8_t)(w >> 24);
	buf[1] = (uint8_t)(w >> 16);
	buf[2] = (uint8_t)(w >> 8);
	buf[3] = (uint8_t)w;
	sof_put16(buf + 4, g->paylen);
	buf[6] = g->nxthdr;
	buf[7] = g->hop_limit;
	memcpy(buf + 8, g->sgid, 16);
	memcpy(buf + 24, g->dgid, 16);
}

void ib_grh_read(const uint8_t *buf, struct ib_grh *g)
{
	uint32_t w =
	    (uint32_t)buf[0] << 24 | (uint32_t)buf[1] << 16 | (uint32_t)buf[2] << 8 | buf[3];

	g->ipver = (uint8_t)(w >> 28);
	g->tclass = (uint8_t)(w >> 20);
	g->flow_label = w & 0xfffff;
	g->paylen = sof_get16(buf + 4);
	g->nxthdr = buf[6];
	g->hop_limit = buf[7];
	memcpy(g->sgid, buf + 8, 16);
	memcpy(g->dgid, buf + 24, 16);
}

/* ---- CRCs ------------------------------------------------------------------------- */

#define VCRC_POLY 0x100bu	    /* x^16 + x^12 + x^3 + x + 1, x^16 implied */
#define VCRC_POLY_REFLECTED 0xd008u /* 0x100B with its bits reversed */

/* Two ways to the same register. Portable, eight bytes a step (slicing-by-8):
 * vcrc_tab[k][b] is the register after byte b and k zero bytes behind
 * it, so the eight lookups of a step are independent. On x86-64 with
 * PCLMULQDQ, from 64 bytes on: carry-less multiplication folds 128-bit
 * blocks forward onto later ones (Gopal et al., "Fast CRC Computation for
 * Generic Polynomials Using PCLMULQDQ Instruction", Intel, 2009), four
 * accumulators 64 bytes apart, then into one; the last 16 bytes that
 * stand for everything folded, and the tail, go through the tables. Every
 * packet's VCRC is made at the sender and checked at each fabric port and
 * at the receiver, so this is the link's hottest loop. */
static uint16_t vcrc_tab[8][256];
static pthread_once_t vcrc_once = PTHREAD_ONCE_INIT;

static uint16_t vcrc_tables(uint16_t crc, const uint8_t *p, size_t n)
{
	for (; n >= 8; n -= 8, p += 8)
		crc = (uint16_t)(vcrc_tab[7][(crc ^ p[0]) & 0xff] ^ vcrc_tab[6][((crc >> 8) ^ p[1]) & 0xff] ^
				 vcrc_tab[5][p[2]] ^ vcrc_tab[4][p[3]] ^ vcrc_tab[3][p[4]] ^
				 vcrc_tab[2][p[5]] ^ vcrc_tab[1][p[6]] ^ vcrc_tab[0][p[7]]);
	for (; n; n--)
		crc = (uint16_t)(vcrc_tab[0][(crc ^ *p++) & 0xff] ^ (crc >> 8));
	return crc;
}

#ifdef HAVE_VCRC_FOLD
static bool vcrc_have_fold;
/* fold constants (vcrc_init): {x^(128+63), x^(128-1)} mod P for 16 bytes,
 * {x^(512+63), x^(512-1)} mod P for 64 */
static uint64_t vcrc_k16[2], vcrc_k64[2];

/* a * k.lo ^ a.hi * k.hi ^ b: a moved forward onto b. In the reflected
 * domain a 128-bit register's bit i is x^(127-i), its low quadword the
 * earlier (higher) half, and a carry-less product of two quadwords is
 * x times the product of their polynomials: hence the -1 above. A
 * product's degree is below 80, so it stays inside b's 128 bits. */
__attribute__((target("pclmul"))) static inline __m128i vfold(__m128i a, __m128i k, __m128i b)
{
	return _mm_xor_si128(
	    _mm_xor_si128(_mm_clmulepi64_si128(a, k, 0x00), _mm_clmulepi64_si128(a, k, 0x11)), b);
}

/* The register after n >= 64 bytes at p, from register crc (a reflected
 * register goes onto the first bytes of the message). */
__attribute__((target("pclmul"))) static uint16_t vcrc_fold(uint16_t crc, const uint8_t *p,
							     size_t n)
{
	const __m128i k16 = _mm_set_epi64x((long long)vcrc_k16[1], (long long)vcrc_k16[0]);
	const __m128i k64 = _mm_set_epi64x((long long)vcrc_k64[1], (long long)vcrc_k64[0]);
	__m128i a, b, c, d;
	uint8_t last[16];

	a = _mm_xor_si128(_mm_loadu_si128((const __m128i *)p), _mm_cvtsi32_si128(crc));
	b = _mm_loadu_si128((const __m128i *)(p + 16));
	c = _mm_loadu_si128((const __m128i *)(p + 32));
	d = _mm_loadu_si128((const __m128i *)(p + 48));
	for (p += 64, n -= 64; n >= 64; p += 64, n -= 64) {
		a = vfold(a, k64, _mm_loadu_si128((const __m128i *)p));
		b = vfold(b, k64, _mm_loadu_si128((const __m128i *)(p + 16)));
		c = vfold(c, k64, _mm_loadu_si128((const __m128i *)(p + 32)));
		d = vfold(d, k64, _mm_loadu_si128((const __m128i *)(p + 48)));
	}
	a = vfold(a, k16, b);
	a = vfold(a, k16, c);
	a = vfold(a, k16, d);
	for (; n >= 16; p += 16, n -= 16)
		a = vfold(a, k16, _mm_loadu_si128((const __m128i *)p));
	/* a is congruent to all before it, at its place: its CRC from zero
	 * is the register there */
	_mm_storeu_si128((__m128i *)last, a);
	return vcrc_tables(vcrc_tables(0, last, 16), p, n);
}

#define VFOLD512 "avx512f,avx512vl,avx512bw,vpclmulqdq,pclmul"
static bool vcrc_have_fold512;
static uint64_t vcrc_k256[2]; /* {x^(2048+63), x^(2048-1)} mod P */

/* vfold on 512-bit registers: each 128-bit lane as vfold */
__attribute__((target(VFOLD512))) static inline __m512i vfold512(__m512i a, __m512i k, __m512i b)
{
	return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(a, k, 0x00),
					 _mm512_clmulepi64_epi128(a, k, 0x11), b, 0x96);
}

/* The same with VPCLMULQDQ (n >= 256): four registers of four lanes, 256
 * bytes a step, then into one register (64 bytes apart), whose lanes fold
 * into one (16 bytes apart). */
__attribute__((target(VFOLD512))) static uint16_t vcrc_fold512(uint16_t crc, const uint8_t *p,
							       size_t n)
{
	const __m128i k16 = _mm_set_epi64x((long long)vcrc_k16[1], (long long)vcrc_k16[0]);
	const __m512i k64 =
	    _mm512_broadcast_i32x4(_mm_set_epi64x((long long)vcrc_k64[1], (long long)vcrc_k64[0]));
	const __m512i k256 =
	    _mm512_broadcast_i32x4(_mm_set_epi64x((long long)vcrc_k256[1], (long long)vcrc_k256[0]));
	__m512i a, b, c, d;
	__m128i x;
	uint8_t last[16];

	a = _mm512_xor_si512(_mm512_loadu_si512((const void *)p),
			     _mm512_inserti32x4(_mm512_setzero_si512(), _mm_cvtsi32_si128(crc), 0));
	b = _mm512_loadu_si512((const void *)(p + 64));
	c = _mm512_loadu_si512((const void *)(p + 128));
	d = _mm512_loadu_si512((const void *)(p + 192));
	for (p += 256, n -= 256; n >= 256; p += 256, n -= 256) {
		a = vfold512(a, k256, _mm512_loadu_si512((const void *)p));
		b = vfold512(b, k256, _mm512_loadu_si512((const void *)(p + 64)));
		c = vfold512(c, k256, _mm512_loadu_si512((const void *)(p + 128)));
		d = vfold512(d, k256, _mm512_loadu_si512((const void *)(p + 192)));
	}
	a = vfold512(a, k64, b);
	a = vfold512(a, k64, c);
	a = vfold512(a, k64, d);
	for (; n >= 64; p += 64, n -= 64)
		a = vfold512(a, k64, _mm512_loadu_si512((const void *)p));
	x = vfold(_mm512_extracti32x4_epi32(a, 0), k16, _mm512_extracti32x4_epi32(a, 1));
	x = vfold(x, k16, _mm512_extracti32x4_epi32(a, 2));
	x = vfold(x, k16, _mm512_extracti32x4_epi32(a, 3));
	for (; n >= 16; p += 16, n -= 16)
		x = vfold(x, k16, _mm_loadu_si128((const __m128i *)p));
	_mm_storeu_si128((__m128i *)last, x);
	/* the upper halves of the vector registers clean (VZEROUPPER): left
	 * dirty, the caller's SSE code (the ICRC's folds) waits on them */
	_mm256_zeroupper();
	return vcrc_tables(vcrc_tables(0, last, 16), p, n);
}

/* x^n mod P as a fold constant: the term x^d at bit 63 - d */
static uint64_t vcrc_fold_const(unsigned n)
{
	uint32_t r = 1;
	uint64_t k = 0;

	while (n--) {
		r <<= 1;
		if (r & 0x10000)
			r ^= 0x10000 | VCRC_POLY;
	}
	for (unsigned d = 0; d < 16; d++)
		if (r & 1u << d)
			k |= 1ull << (63 - d);
	return k;
}
#endif

static void vcrc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (c & 1 ? VCRC_POLY_REFLECTED : 0);
		vcrc_tab[0][i] = (uint16_t)c;
	}
	for (int k = 1; k < 8; k++)
		for (uint32_t i = 0; i < 256; i++) {
			uint16_t c = vcrc_tab[k - 1][i];

			vcrc_tab[k][i] = (uint16_t)((c >> 8) ^ vcrc_tab[0][c & 0xff]);
		}
#ifdef HAVE_VCRC_FOLD
	vcrc_k16[0] = vcrc_fold_const(128 + 63);
	vcrc_k16[1] = vcrc_fold_const(128 - 1);
	vcrc_k64[0] = vcrc_fold_const(512 + 63);
	vcrc_k64[1] = vcrc_fold_const(512 - 1);
	vcrc_k256[0] = vcrc_fold_const(2048 + 63);
	vcrc_k256[1] = vcrc_fold_const(2048 - 1);
	__builtin_cpu_init();
	vcrc_have_fold = __builtin_cpu_supports("pclmul") && !getenv("SOFTOFED_NO_PCLMUL");
	vcrc_have_fold512 = vcrc_have_fold && __builtin_cpu_supports("avx512f") &&
			    __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
			    __builtin_cpu_supports("vpclmulqdq") && !getenv("SOFTOFED_NO_AVX512");
#endif
}

static uint16_t vcrc_update(uint16_t crc, const uint8_t *p, size_t n)
{
#ifdef HAVE_VCRC_FOLD
	if (vcrc_have_fold512 && n >= 256)
		return vcrc_fold512(crc, p, n);
	if (vcrc_have_fold && n >= 64)
		return vcrc_fold(crc, p, n);
#endif
	return vcrc_tables(crc, p, n);
}

uint16_t ib_vcrc_iov(const struct iovec *iov, unsigned niov)
{
	uint16_t crc = 0xffff;

	pthread_once(&vcrc_once, vcrc_init);
	for (unsigned i = 0; i < niov; i++)
		crc = vcrc_update(crc, iov[i].iov_base, iov[i].iov_len);
	return (uint16_t)~crc;
}

uint16_t ib_vcrc(const uint8_t *pkt, size_t len)
{
	struct iovec v = {(void *)(uintptr_t)pkt, len};

	return ib_vcrc_iov(&v, 1);
}

uint32_t ib_icrc_iov(const struct iovec *iov, unsigned niov)
{
	uint8_t head[IB_LRH_LEN + IB_GRH_LEN + ROCE_BTH_LEN] = {0};
	size_t got = 0, hl, bth, len = 0;
	uint32_t crc = 0xffffffffu;
	bool global;
	unsigned i;

	for (i = 0; i < niov; i++)
		len += iov[i].iov_len;
	/* the headers with variant fields, gathered from the pieces */
	for (i = 0; i < niov && got < sizeof(head) && got < len; i++) {
		size_t k = iov[i].iov_len;

		if (k > sizeof(head) - got)
			k = sizeof(head) - got;
		memcpy(head + got, iov[i].iov_base, k);
		got += k;
	}
	global = got >= 2 && (head[1] & 0x3) == IB_LNH_GLOBAL;
	bth = IB_LRH_LEN + (global ? IB_GRH_LEN : 0);
	hl = bth + ROCE_BTH_LEN < got ? bth + ROCE_BTH_LEN : got;
	if (hl > 0)
		head[0] |= 0xf0; /* LRH VL */
	if (global && hl >= IB_LRH_LEN + 8) {
		head[IB_LRH_LEN] |= 0x0f; /* GRH TClass and Flow Label */
		memset(head + IB_LRH_LEN + 1, 0xff, 3);
		head[IB_LRH_LEN + 7] = 0xff; /* HopLmt */
	}
	if (hl > bth + 4)
		head[bth + 4] = 0xff; /* BTH FECN, BECN, Resv6a */
	crc = roce_crc32_update(crc, head, hl);
	/* the rest after those headers */
	for (i = 0, got = 0; i < niov; i++) {
		const uint8_t *p = iov[i].iov_base;
		size_t k = iov[i].iov_len, skip = got < hl ? hl - got : 0;

		if (skip > k)
			skip = k;
		got += k;
		crc = roce_crc32_update(crc, p + skip, k - skip);
	}
	return ~crc;
}

uint32_t ib_icrc(const uint8_t *pkt, size_t len)
{
	struct iovec v = {(void *)(uintptr_t)pkt, len};

	return ib_icrc_iov(&v, 1);
}

static inline uint32_t get32le(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

enum ib_drop ib_parse(const uint8_t *buf, size_t len, struct ib_lrh *l, struct ib_grh *g,
		      const uint8_t **tpkt, size_t *tlen)
{
	size_t hl = IB_LRH_LEN, end;
	uint16_t vcrc;

	if (len < IB_LRH_LEN + ROCE_BTH_LEN + ROCE_ICRC_LEN + IB_VCRC_LEN)
		return IB_DROP_SHORT;
	ib_lrh_read(buf, l);
	if (l->lver != 0)
		return IB_DROP_LVER;
	/* IBA 7.7.8: PktLen counts 4-byte words from the LRH through the
	 * ICRC; the VCRC is not counted */
	end = len - IB_VCRC_LEN;
	if ((size_t)l->pktlen * 4 != end)
		return IB_DROP_PKTLEN;
	vcrc = (uint16_t)(buf[end] | buf[end + 1] << 8);
	if (ib_vcrc(buf, end) != vcrc)
		return IB_DROP_VCRC;
	if (l->lnh != IB_LNH_LOCAL && l->lnh != IB_LNH_GLOBAL)
		return IB_DROP_LNH;
	if (l->lnh == IB_LNH_GLOBAL) {
		if (end < IB_LRH_LEN + IB_GRH_LEN + ROCE_BTH_LEN + ROCE_ICRC_LEN)
			return IB_DROP_SHORT;
		ib_grh_read(buf + IB_LRH_LEN, g);
		hl += IB_GRH_LEN;
		if (g->ipver != 6 || g->nxthdr != IB_GRH_NXTHDR || g->paylen != end - hl)
			return IB_DROP_GRH;
	}
	if (ib_icrc(buf, end - ROCE_ICRC_LEN) != get32le(buf + end - ROCE_ICRC_LEN))
		return IB_DROP_ICRC;
	*tpkt = buf + hl;
	*tlen = end - hl;
	return IB_DROP_NONE;
}

/* ---- link control ------------------------------------------------------------- */

static const uint8_t sofl_magic[4] = {0x53, 0x4f, 0x46, 0x4c}; /* "SOFL" */

bool ib_is_sofl(const uint8_t *buf, size_t len)
{
	return len >= sizeof(sofl_magic) && !memcmp(buf, sofl_magic, sizeof(sofl_magic));
}

void ib_sofl_write(uint8_t *buf, const struct ib_sofl *m)
{
	memset(buf, 0, IB_SOFL_LEN);
	memcpy(buf, sofl_magic, 4);
	buf[4] = IB_SOFL_VERSION;
	buf[5] = m->type;
	buf[6] = m->phys_state;
	buf[7] = m->port;
	sof_put64(buf + 8, m->node_guid);
	sof_put64(buf + 16, m->port_guid);
	memcpy(buf + 24, m->name, strnlen(m->name, IB_SOFL_NAME_LEN));
}

int ib_sofl_parse(const uint8_t *buf, size_t len, struct ib_sofl *m)
{
	if (len != IB_SOFL_LEN || !ib_is_sofl(buf, len) || buf[4] != IB_SOFL_VERSION)
		return -EINVAL;
	if (buf[5] < IB_SOFL_HELLO || buf[5] > IB_SOFL_COUNT || !buf[6] || buf[6] >= IB_PHYS_NR)
		return -EINVAL;
	m->type = buf[5];
	m->phys_state = buf[6];
	m->port = buf[7];
	m->node_guid = sof_get64(buf + 8);
	m->port_guid = sof_get64(buf + 16);
	memcpy(m->name, buf + 24, IB_SOFL_NAME_LEN);
	m->name[IB_SOFL_NAME_LEN] = '\0';
	return 0;
}
