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
#include <string.h>

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

#define VCRC_POLY_REFLECTED 0xd008u /* 0x100B with its bits reversed */

/* Eight bytes a step (slicing-by-8): vcrc_tab[k][b] is the register after
 * byte b and k zero bytes behind it, so the eight lookups of a step are
 * independent. The bytewise loop, at about four cycles a byte, was most
 * of the link's CPU: every packet's VCRC is made at the sender and
 * checked at the fabric's port and at the receiver. */
static uint16_t vcrc_tab[8][256];
static pthread_once_t vcrc_once = PTHREAD_ONCE_INIT;

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
}

static uint16_t vcrc_update(uint16_t crc, const uint8_t *p, size_t n)
{
	for (; n >= 8; n -= 8, p += 8)
		crc = (uint16_t)(vcrc_tab[7][(crc ^ p[0]) & 0xff] ^ vcrc_tab[6][((crc >> 8) ^ p[1]) & 0xff] ^
				 vcrc_tab[5][p[2]] ^ vcrc_tab[4][p[3]] ^ vcrc_tab[3][p[4]] ^
				 vcrc_tab[2][p[5]] ^ vcrc_tab[1][p[6]] ^ vcrc_tab[0][p[7]]);
	for (; n; n--)
		crc = (uint16_t)(vcrc_tab[0][(crc ^ *p++) & 0xff] ^ (crc >> 8));
	return crc;
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
	if (buf[5] < IB_SOFL_HELLO || buf[5] > IB_SOFL_ASSIGN || !buf[6] || buf[6] >= IB_PHYS_NR)
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
