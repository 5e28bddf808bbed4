/*
 * InfiniBand packets as the fabric sees them: the LRH (IBA 7.7), the
 * invariant CRC (7.8.1: CRC-32 of IEEE 802.3 over the packet with the
 * LRH's VL, the GRH's TClass/FlowLabel/HopLmt and the BTH's byte 4 set to
 * ones; on the wire least significant byte first), the variant CRC
 * (7.8.2: CRC-16 of polynomial 0x100B, ones in, reflected, inverted out,
 * over LRH..ICRC, least significant byte first), UD packets carrying a
 * MAD (BTH, DETH: IBA 9.2, 9.3), and the SOFL link control messages of
 * fabric/README.md. The byte orders are those of transport/ib_wire.h, the
 * daemon's side of the same links.
 */
#include "fabric.h"

#include <string.h>

const char *const fab_bad_names[FAB_BAD_MAX] = {
    [FAB_OK] = "ok",	     [FAB_BAD_SHORT] = "short",
    [FAB_BAD_LVER] = "lver", [FAB_BAD_PKTLEN] = "pktlen",
    [FAB_BAD_VCRC] = "vcrc",
};

static uint32_t crc32_tab[256];
static uint16_t crc16_tab[256];

static void crc_init(void)
{
	uint32_t i, c;
	int k;

	if (crc32_tab[1])
		return;
	for (i = 0; i < 256; i++) {
		c = i;
		for (k = 0; k < 8; k++)
			c = (c >> 1) ^ (c & 1 ? 0xedb88320u : 0);
		crc32_tab[i] = c;
		c = i;
		for (k = 0; k < 8; k++)
			c = (c >> 1) ^ (c & 1 ? 0xd008u : 0); /* 0x100B reflected */
		crc16_tab[i] = (uint16_t)c;
	}
}

static uint32_t crc32_run(uint32_t c, const uint8_t *p, size_t len)
{
	while (len--)
		c = crc32_tab[(c ^ *p++) & 0xff] ^ (c >> 8);
	return c;
}

uint16_t fab_vcrc(const uint8_t *p, size_t len)
{
	uint16_t c = 0xffff;

	crc_init();
	while (len--)
		c = (uint16_t)(crc16_tab[(c ^ *p++) & 0xff] ^ (c >> 8));
	return (uint16_t)~c;
}

uint32_t fab_icrc(const uint8_t *p, size_t len)
{
	uint8_t head[FAB_LRH_LEN + FAB_GRH_LEN + FAB_BTH_LEN];
	size_t bth = FAB_LRH_LEN, hl;
	uint32_t c = 0xffffffffu;

	crc_init();
	if (len >= 2 && (p[1] & 3) == 3)
		bth += FAB_GRH_LEN;
	hl = bth + FAB_BTH_LEN < len ? bth + FAB_BTH_LEN : len;
	memcpy(head, p, hl);
	if (hl > 0)
		head[0] |= 0xf0;
	if (bth > FAB_LRH_LEN && hl >= FAB_LRH_LEN + 8) {
		head[FAB_LRH_LEN] |= 0x0f;
		memset(head + FAB_LRH_LEN + 1, 0xff, 3);
		head[FAB_LRH_LEN + 7] = 0xff;
	}
	if (hl > bth + 4)
		head[bth + 4] = 0xff;
	c = crc32_run(c, head, hl);
	c = crc32_run(c, p + hl, len - hl);
	return ~c;
}

void fab_pkt_vseal(uint8_t *p, size_t len)
{
	uint16_t v = fab_vcrc(p, len - FAB_VCRC_LEN);

	p[len - 2] = (uint8_t)v;
	p[len - 1] = (uint8_t)(v >> 8);
}

void fab_pkt_seal(uint8_t *p, size_t len)
{
	size_t end = len - FAB_VCRC_LEN - FAB_ICRC_LEN;
	uint32_t c = fab_icrc(p, end);

	p[end] = (uint8_t)c;
	p[end + 1] = (uint8_t)(c >> 8);
	p[end + 2] = (uint8_t)(c >> 16);
	p[end + 3] = (uint8_t)(c >> 24);
	fab_pkt_vseal(p, len);
}

void fab_lrh_read(const uint8_t *p, struct lrh *l)
{
	l->vl = p[0] >> 4;
	l->sl = p[1] >> 4;
	l->lnh = p[1] & 3;
	l->dlid = sof_be16(p + 2);
	l->pktlen = sof_be16(p + 4) & 0x7ff;
	l->slid = sof_be16(p + 6);
}

enum fab_bad fab_pkt_check(const uint8_t *p, size_t len, struct lrh *l)
{
	size_t end;

	if (len < FAB_LRH_LEN + FAB_BTH_LEN + FAB_ICRC_LEN + FAB_VCRC_LEN)
		return FAB_BAD_SHORT;
	if (p[0] & 0x0f)
		return FAB_BAD_LVER;
	fab_lrh_read(p, l);
	end = len - FAB_VCRC_LEN;
	if ((size_t)l->pktlen * 4 != end)
		return FAB_BAD_PKTLEN;
	if (fab_vcrc(p, end) != (uint16_t)(p[end] | p[end + 1] << 8))
		return FAB_BAD_VCRC;
	return FAB_OK;
}

void fab_mad_pkt(uint8_t *p, uint16_t dlid, uint16_t slid, uint8_t sl, uint16_t pkey, uint32_t dqp,
		 uint32_t sqp, uint32_t qkey, const uint8_t *mad)
{
	uint8_t *b = p + FAB_LRH_LEN, *d = b + FAB_BTH_LEN;

	memset(p, 0, FAB_MAD_PKT_LEN);
	p[0] = (uint8_t)((dqp == 0 ? 15 : 0) << 4); /* VL15 for QP0, LVer 0 */
	p[1] = (uint8_t)((sl & 0xf) << 4 | 2);	    /* LNH: IBA local */
	sof_put16(p + 2, dlid);
	sof_put16(p + 4, (FAB_MAD_PKT_LEN - FAB_VCRC_LEN) / 4);
	sof_put16(p + 6, slid);
	b[0] = FAB_OP_UD_SEND;
	sof_put16(b + 2, pkey);
	sof_put32(b + 4, dqp & 0xffffff);
	sof_put32(d, qkey);
	sof_put32(d + 4, sqp & 0xffffff);
	memcpy(d + FAB_DETH_LEN, mad, 256);
}

int fab_ud_parse(const uint8_t *p, size_t len, const struct lrh *l, struct ud_info *u)
{
	size_t off = FAB_LRH_LEN, end = len - FAB_VCRC_LEN - FAB_ICRC_LEN;
	const uint8_t *b;

	if (l->lnh != 2 && l->lnh != 3)
		return -1;
	u->global = l->lnh == 3;
	if (u->global)
		off += FAB_GRH_LEN;
	if (end < off + FAB_BTH_LEN + FAB_DETH_LEN)
		return -1;
	b = p + off;
	if (b[0] != FAB_OP_UD_SEND)
		return -1;
	u->pkey = sof_be16(b + 2);
	u->dqp = sof_be32(b + 4) & 0xffffff;
	u->qkey = sof_be32(b + FAB_BTH_LEN);
	u->sqp = sof_be32(b + FAB_BTH_LEN + 4) & 0xffffff;
	u->mad = b + FAB_BTH_LEN + FAB_DETH_LEN;
	/* the pad count (BTH byte 1, bits 5:4) is not part of the MAD */
	u->madlen = end - off - FAB_BTH_LEN - FAB_DETH_LEN;
	if (u->madlen < ((b[1] >> 4) & 3u))
		return -1;
	u->madlen -= (b[1] >> 4) & 3u;
	return 0;
}

/* ---- SOFL ---- */

bool fab_is_sofl(const uint8_t *p, size_t len) { return len >= 4 && !memcmp(p, "SOFL", 4); }

int fab_sofl_parse(const uint8_t *p, size_t len, struct sofl *m)
{
	if (len != FAB_SOFL_LEN || !fab_is_sofl(p, len) || p[4] != 1 || p[5] < FAB_SOFL_HELLO ||
	    p[5] > FAB_SOFL_ASSIGN || p[6] < 1 || p[6] > 6)
		return -1;
	m->type = p[5];
	m->phys = p[6];
	m->port = p[7];
	m->node_guid = sof_be64(p + 8);
	m->port_guid = sof_be64(p + 16);
	memcpy(m->name, p + 24, FAB_NAME_LEN);
	m->name[FAB_NAME_LEN] = '\0';
	return 0;
}

void fab_sofl_write(uint8_t *p, const struct sofl *m)
{
	memset(p, 0, FAB_SOFL_LEN);
	memcpy(p, "SOFL", 4);
	p[4] = 1;
	p[5] = m->type;
	p[6] = m->phys;
	p[7] = m->port;
	sof_put64(p + 8, m->node_guid);
	sof_put64(p + 16, m->port_guid);
	memcpy(p + 24, m->name, strnlen(m->name, FAB_NAME_LEN));
}
