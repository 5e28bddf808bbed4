/*
 * InfiniBand packets as the fabric builds and checks them: sealing a
 * packet with its invariant CRC (IBA 7.8.1) and variant CRC (7.8.2), the
 * link checks of a datagram from a real host (LVer, PktLen, VCRC), and UD
 * packets carrying a MAD (BTH, DETH: IBA 9.2, 9.3). The LRH, both CRCs
 * and the SOFL link control messages of fabric/README.md come from
 * transport/ib_wire.c, the daemon's side of the same links, so both ends
 * share one byte order and one CRC.
 */
#include "fabric.h"

#include <string.h>

const char *const fab_bad_names[FAB_BAD_MAX] = {
    [FAB_OK] = "ok",	     [FAB_BAD_SHORT] = "short",
    [FAB_BAD_LVER] = "lver", [FAB_BAD_PKTLEN] = "pktlen",
    [FAB_BAD_VCRC] = "vcrc",
};

void fab_pkt_vseal(uint8_t *p, size_t len)
{
	uint16_t v = ib_vcrc(p, len - FAB_VCRC_LEN);

	p[len - 2] = (uint8_t)v;
	p[len - 1] = (uint8_t)(v >> 8);
}

void fab_pkt_seal(uint8_t *p, size_t len)
{
	size_t end = len - FAB_VCRC_LEN - FAB_ICRC_LEN;
	uint32_t c = ib_icrc(p, end);

	p[end] = (uint8_t)c;
	p[end + 1] = (uint8_t)(c >> 8);
	p[end + 2] = (uint8_t)(c >> 16);
	p[end + 3] = (uint8_t)(c >> 24);
	fab_pkt_vseal(p, len);
}

enum fab_bad fab_pkt_check(const uint8_t *p, size_t len, struct ib_lrh *l)
{
	size_t end;

	if (len < FAB_LRH_LEN + FAB_BTH_LEN + FAB_ICRC_LEN + FAB_VCRC_LEN)
		return FAB_BAD_SHORT;
	if (p[0] & 0x0f)
		return FAB_BAD_LVER;
	ib_lrh_read(p, l);
	end = len - FAB_VCRC_LEN;
	if ((size_t)l->pktlen * 4 != end)
		return FAB_BAD_PKTLEN;
	if (ib_vcrc(p, end) != (uint16_t)(p[end] | p[end + 1] << 8))
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

int fab_ud_parse(const uint8_t *p, size_t len, const struct ib_lrh *l, struct ud_info *u)
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
	u->pkey = sof_get16(b + 2);
	u->dqp = sof_get32(b + 4) & 0xffffff;
	u->qkey = sof_get32(b + FAB_BTH_LEN);
	u->sqp = sof_get32(b + FAB_BTH_LEN + 4) & 0xffffff;
	u->mad = b + FAB_BTH_LEN + FAB_DETH_LEN;
	/* the pad count (BTH byte 1, bits 5:4) is not part of the MAD */
	u->madlen = end - off - FAB_BTH_LEN - FAB_DETH_LEN;
	if (u->madlen < ((b[1] >> 4) & 3u))
		return -1;
	u->madlen -= (b[1] >> 4) & 3u;
	return 0;
}
