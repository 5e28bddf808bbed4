/*
 * The IPoIB wire (RFC 4391): the 4-byte encapsulation header, the 20-byte
 * hardware address, ARP and IPv6 neighbour discovery in their InfiniBand
 * forms, the MGIDs of IP groups, and the receive path. ipoib_input takes
 * a UD receive buffer as the HCA wrote it (40 bytes of GRH area, then the
 * frame) and either hands an IP packet to the kernel, answers resolution
 * here, or drops the frame and counts why. It reaches the rest only
 * through struct ipoib_ops, so that the fuzz target (tests/fuzz/fuzz_ipoib.c)
 * runs it alone.
 */
#include "ipoib.h"
#include "sof_bytes.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

const char *const ipoib_cnt_names[IC_NR] = {
    [IC_rx_packets] = "rx_packets",
    [IC_rx_bytes] = "rx_bytes",
    [IC_tx_packets] = "tx_packets",
    [IC_tx_bytes] = "tx_bytes",
    [IC_rx_mcast] = "rx_mcast",
    [IC_tx_mcast] = "tx_mcast",
    [IC_arp_rx] = "arp_rx",
    [IC_arp_tx] = "arp_tx",
    [IC_nd_rx] = "nd_rx",
    [IC_nd_tx] = "nd_tx",
    [IC_drop_short] = "drop_short",
    [IC_drop_header] = "drop_header",
    [IC_drop_type] = "drop_type",
    [IC_drop_ip] = "drop_ip",
    [IC_drop_arp] = "drop_arp",
    [IC_drop_nd] = "drop_nd",
    [IC_drop_oversize] = "drop_oversize",
    [IC_drop_own] = "drop_own",
    [IC_tx_drop_neigh] = "tx_drop_neigh",
    [IC_tx_drop_queue] = "tx_drop_queue",
    [IC_tx_drop_oversize] = "tx_drop_oversize",
    [IC_tx_drop_post] = "tx_drop_post",
    [IC_path_queries] = "path_queries",
    [IC_path_fails] = "path_fails",
    [IC_mcast_joins] = "mcast_joins",
    [IC_mcast_leaves] = "mcast_leaves",
    [IC_port_events] = "port_events",
    [IC_cm_tx_packets] = "cm_tx_packets",
    [IC_cm_rx_packets] = "cm_rx_packets",
    [IC_cm_connects] = "cm_connects",
    [IC_cm_accepts] = "cm_accepts",
    [IC_cm_refused] = "cm_refused",
    [IC_cm_fails] = "cm_fails",
    [IC_cm_resets] = "cm_resets",
    [IC_cm_idle] = "cm_idle",
    [IC_cm_drop_queue] = "cm_drop_queue",
    [IC_tx_too_big] = "tx_too_big",
    [IC_drop_tun] = "drop_tun",
    [IC_tx_gso] = "tx_gso",
    [IC_tx_gso_segs] = "tx_gso_segs",
    [IC_tx_drop_vnet] = "tx_drop_vnet",
    [IC_rx_gro] = "rx_gro",
};

#define ARP_LEN (8 + 2 * (IPOIB_HW_LEN + 4))
#define ND_LEN (8 + 16 + 24) /* NS or NA with one link-layer option */
#define ICMP6 58

static void map4(uint8_t ip[16], const uint8_t v4[4])
{
	memset(ip, 0, 10);
	ip[10] = ip[11] = 0xff;
	memcpy(ip + 12, v4, 4);
}

/* RFC 4391 section 9.1.1: flags (8 bits: RFC 4755 3.1's 'C' in connected
 * mode, else zero), QPN, GID. */
void ipoib_hw_put(uint8_t out[IPOIB_HW_LEN], const struct ipoib_hw *hw)
{
	out[0] = hw->flags & IPOIB_HW_C;
	out[1] = (uint8_t)(hw->qpn >> 16);
	out[2] = (uint8_t)(hw->qpn >> 8);
	out[3] = (uint8_t)hw->qpn;
	memcpy(out + 4, hw->gid, 16);
}

void ipoib_hw_get(struct ipoib_hw *hw, const uint8_t in[IPOIB_HW_LEN])
{
	hw->flags = in[0] & IPOIB_HW_C;
	hw->qpn = (uint32_t)in[1] << 16 | (uint32_t)in[2] << 8 | in[3];
	memcpy(hw->gid, in + 4, 16);
}

static bool hw_valid(const struct ipoib_hw *hw)
{
	static const uint8_t zero[16];

	/* QPN 0, 1 and the multicast QPN are no IPoIB interface's */
	return hw->qpn > 1 && hw->qpn < 0xffffff && memcmp(hw->gid, zero, 16) != 0;
}

/* RFC 4391 section 4: 0xFF, flags 1 (transient), scope 2 (link-local),
 * the IPv4 (0x401B) or IPv6 (0x601B) signature, the P_Key, then the
 * group's low 28 (IPv4) or 80 (IPv6) bits; the broadcast group is the
 * IPv4 form of 255.255.255.255 (all 32 low bits set). */
void ipoib_mgid(uint8_t mgid[16], uint16_t pkey, const uint8_t *ip)
{
	static const uint8_t pfx4[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	memset(mgid, 0, 16);
	mgid[0] = 0xff;
	mgid[1] = 0x12;
	sof_put16(mgid + 4, pkey | 0x8000);
	if (!ip) {
		sof_put16(mgid + 2, 0x401b);
		memset(mgid + 12, 0xff, 4);
	} else if (!memcmp(ip, pfx4, 12)) {
		sof_put16(mgid + 2, 0x401b);
		mgid[12] = ip[12] & 0x0f;
		memcpy(mgid + 13, ip + 13, 3);
	} else {
		sof_put16(mgid + 2, 0x601b);
		memcpy(mgid + 6, ip + 6, 10);
	}
}

void ipoib_ip_str(const uint8_t ip[16], char *buf, size_t len)
{
	static const uint8_t pfx4[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	if (!memcmp(ip, pfx4, 12))
		inet_ntop(AF_INET, ip + 12, buf, (socklen_t)len);
	else
		inet_ntop(AF_INET6, ip, buf, (socklen_t)len);
}

void ipoib_gid_str(const uint8_t gid[16], char *buf, size_t len)
{
	inet_ntop(AF_INET6, gid, buf, (socklen_t)len);
}

/* ---- ARP (RFC 826 with RFC 4391 section 8's sizes) -------------------------------- */

static size_t arp_build(const struct ipoib *p, uint8_t *f, uint16_t op, const uint8_t sip[4],
			const struct ipoib_hw *thw, const uint8_t tip[4])
{
	uint8_t *a = f + IPOIB_HDR_LEN;

	sof_put16(f, ETH_P_ARPV);
	sof_put16(f + 2, 0);
	sof_put16(a, IPOIB_ARPHRD);
	sof_put16(a + 2, ETH_P_IPV4);
	a[4] = IPOIB_HW_LEN;
	a[5] = 4;
	sof_put16(a + 6, op);
	ipoib_hw_put(a + 8, &p->hw);
	memcpy(a + 28, sip, 4);
	if (thw)
		ipoib_hw_put(a + 32, thw);
	else
		memset(a + 32, 0, IPOIB_HW_LEN);
	memcpy(a + 52, tip, 4);
	return IPOIB_HDR_LEN + ARP_LEN;
}

size_t ipoib_arp_request(const struct ipoib *p, uint8_t *frame, const uint8_t src[4],
			 const uint8_t target[4])
{
	return arp_build(p, frame, 1, src, NULL, target);
}

static void arp_input(struct ipoib *p, const uint8_t *a, size_t len)
{
	struct ipoib_hw shw;
	uint8_t sip[16], tip[16], f[IPOIB_HDR_LEN + ARP_LEN];
	uint16_t op;

	if (len < ARP_LEN || sof_get16(a) != IPOIB_ARPHRD || sof_get16(a + 2) != ETH_P_IPV4 ||
	    a[4] != IPOIB_HW_LEN || a[5] != 4) {
		p->cnt[IC_drop_arp]++;
		return;
	}
	op = sof_get16(a + 6);
	ipoib_hw_get(&shw, a + 8);
	if ((op != 1 && op != 2) || !hw_valid(&shw)) {
		p->cnt[IC_drop_arp]++;
		return;
	}
	p->cnt[IC_arp_rx]++;
	map4(sip, a + 28);
	map4(tip, a + 52);
	/* a probe (sender 0.0.0.0) teaches nothing */
	if (sof_get16(a + 28) || sof_get16(a + 30))
		p->ops->learn(sip, &shw);
	if (op == 1 && p->ops->local_addr(tip)) {
		size_t n = arp_build(p, f, 2, a + 52, &shw, a + 28);

		p->cnt[IC_arp_tx]++;
		p->ops->send_hw(&shw, f, n);
	}
}

/* ---- IPv6 neighbour discovery (RFC 4861; RFC 4391 section 9.2's option) -------- */

static uint16_t csum_add(uint32_t sum, const uint8_t *d, size_t len)
{
	while (len > 1) {
		sum += (uint32_t)(d[0] << 8 | d[1]);
		d += 2;
		len -= 2;
	}
	if (len)
		sum += (uint32_t)(d[0] << 8);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/* The ICMPv6 checksum of ip6 (header and payload, plen bytes of payload):
 * 0 when it verifies. */
static uint16_t icmp6_csum(const uint8_t *ip6, uint32_t plen)
{
	uint8_t ph[8] = {0, 0, 0, 0, 0, 0, 0, ICMP6};
	uint32_t sum;

	ph[0] = (uint8_t)(plen >> 24);
	ph[1] = (uint8_t)(plen >> 16);
	ph[2] = (uint8_t)(plen >> 8);
	ph[3] = (uint8_t)plen;
	sum = csum_add(0, ip6 + 8, 32);
	sum = csum_add(sum, ph, 8);
	sum = csum_add(sum, ip6 + 40, plen);
	return (uint16_t)~sum;
}

/* An NS or NA with one link-layer address option carrying hw. */
static size_t nd_build(uint8_t *f, uint8_t type, const uint8_t src[16], const uint8_t dst[16],
		       const uint8_t target[16], const struct ipoib_hw *hw, uint32_t flags)
{
	uint8_t *ip6 = f + IPOIB_HDR_LEN, *icmp = ip6 + 40;
	uint16_t c;

	sof_put16(f, ETH_P_IPV6V);
	sof_put16(f + 2, 0);
	memset(ip6, 0, 40 + ND_LEN);
	ip6[0] = 0x60;
	sof_put16(ip6 + 4, ND_LEN);
	ip6[6] = ICMP6;
	ip6[7] = 255;
	memcpy(ip6 + 8, src, 16);
	memcpy(ip6 + 24, dst, 16);
	icmp[0] = type;
	icmp[4] = (uint8_t)(flags >> 24);
	memcpy(icmp + 8, target, 16);
	/* option: type 1 (source) or 2 (target), length 3 (24 bytes), two
	 * reserved bytes, the 20-byte address */
	icmp[24] = type == 135 ? 1 : 2;
	icmp[25] = 3;
	ipoib_hw_put(icmp + 28, hw);
	c = icmp6_csum(ip6, ND_LEN);
	sof_put16(icmp + 2, c);
	return IPOIB_HDR_LEN + 40 + ND_LEN;
}

size_t ipoib_nd_solicit(const struct ipoib *p, uint8_t *frame, const uint8_t src[16],
			const uint8_t target[16], uint8_t dst[16])
{
	static const uint8_t snm[13] = {0xff, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff};

	memcpy(dst, snm, 13);
	memcpy(dst + 13, target + 13, 3);
	return nd_build(frame, 135, src, dst, target, &p->hw, 0);
}

/* The link-layer option of type want in the options at o (len bytes):
 * 1 found, 0 none, -1 malformed (a zero length, one past the end, an
 * IPoIB address option not 24 bytes long). */
static int nd_option(const uint8_t *o, size_t len, uint8_t want, struct ipoib_hw *hw)
{
	int found = 0;

	while (len) {
		size_t ol;

		if (len < 2 || !o[1] || (size_t)o[1] * 8 > len)
			return -1;
		ol = (size_t)o[1] * 8;
		if (o[0] == 1 || o[0] == 2) {
			if (ol != 24)
				return -1;
			if (o[0] == want) {
				ipoib_hw_get(hw, o + 4);
				found = 1;
			}
		}
		o += ol;
		len -= ol;
	}
	return found;
}

/* ICMPv6 NS and NA are resolution: consumed here. Returns false for any
 * other packet (the kernel's). */
static bool nd_input(struct ipoib *p, const uint8_t *ip6, uint32_t plen)
{
	static const uint8_t zero[16];
	const uint8_t *icmp = ip6 + 40;
	struct ipoib_hw hw;
	uint8_t f[IPOIB_HDR_LEN + 40 + ND_LEN];
	int r;

	if (ip6[6] != ICMP6 || plen < 4 || (icmp[0] != 135 && icmp[0] != 136))
		return false;
	/* RFC 4861 7.1.1, 7.1.2: hop limit 255, code 0, 24 bytes at least,
	 * the checksum */
	if (ip6[7] != 255 || icmp[1] || plen < 24 || icmp6_csum(ip6, plen) || (icmp[8] == 0xff)) {
		p->cnt[IC_drop_nd]++;
		return true;
	}
	r = nd_option(icmp + 24, plen - 24, icmp[0] == 135 ? 1 : 2, &hw);
	if (r < 0 || (r > 0 && !hw_valid(&hw))) {
		p->cnt[IC_drop_nd]++;
		return true;
	}
	p->cnt[IC_nd_rx]++;
	if (icmp[0] == 136) {
		if (r > 0)
			p->ops->learn(icmp + 8, &hw);
		return true;
	}
	/* NS: a duplicate address probe (from ::) teaches nothing and gets
	 * no answer here */
	if (!memcmp(ip6 + 8, zero, 16) || r == 0)
		return true;
	p->ops->learn(ip6 + 8, &hw);
	if (p->ops->local_addr(icmp + 8)) {
		/* solicited, override (RFC 4861 7.2.4) */
		size_t n = nd_build(f, 136, icmp + 8, ip6 + 8, icmp + 8, &p->hw, 0x60000000u);

		p->cnt[IC_nd_tx]++;
		p->ops->send_hw(&hw, f, n);
	}
	return true;
}

/* ---- receive ------------------------------------------------------------------- */

void ipoib_input(struct ipoib *p, const uint8_t *buf, size_t len, uint32_t src_qpn, uint16_t slid)
{
	const uint8_t *f = buf + IPOIB_GRH_LEN, *pkt = f + IPOIB_HDR_LEN;
	size_t plen;

	if (len < IPOIB_GRH_LEN + IPOIB_HDR_LEN) {
		p->cnt[IC_drop_short]++;
		return;
	}
	plen = len - IPOIB_GRH_LEN - IPOIB_HDR_LEN;
	/* RFC 4391 section 6: the reserved field is zero */
	if (sof_get16(f + 2)) {
		p->cnt[IC_drop_header]++;
		return;
	}
	/* our own datagram to a group, delivered back to us (by the port's
	 * loopback: the GRH names our GID as its source) */
	if (src_qpn == p->hw.qpn && (slid == p->lid || !memcmp(buf + 8, p->hw.gid, 16))) {
		p->cnt[IC_drop_own]++;
		return;
	}
	if (plen > p->mtu) {
		p->cnt[IC_drop_oversize]++;
		return;
	}
	switch (sof_get16(f)) {
	case ETH_P_IPV4: {
		size_t tot = plen >= 20 ? sof_get16(pkt + 2) : 0;

		if (plen < 20 || (pkt[0] >> 4) != 4 || (pkt[0] & 15) < 5 ||
		    tot < (size_t)(pkt[0] & 15) * 4 || tot > plen) {
			p->cnt[IC_drop_ip]++;
			return;
		}
		plen = tot;
		break;
	}
	case ETH_P_IPV6V:
		if (plen < 40 || (pkt[0] >> 4) != 6 || 40u + sof_get16(pkt + 4) > plen) {
			p->cnt[IC_drop_ip]++;
			return;
		}
		plen = 40u + sof_get16(pkt + 4);
		if (nd_input(p, pkt, (uint32_t)plen - 40))
			return;
		break;
	case ETH_P_ARPV:
		arp_input(p, pkt, plen);
		return;
	default:
		p->cnt[IC_drop_type]++;
		return;
	}
	p->cnt[IC_rx_packets]++;
	p->cnt[IC_rx_bytes] += plen;
	/* the GRH area's DGID (bytes 24..39) is a group's for a multicast */
	if (buf[24] == 0xff)
		p->cnt[IC_rx_mcast]++;
	p->ops->deliver(pkt, plen);
}

/* ---- transmit filter ------------------------------------------------------------- */

bool ipoib_out_filtered(const uint8_t *pkt, size_t len)
{
	size_t off = 40;
	uint8_t nxt;

	if (len >= 20 && (pkt[0] >> 4) == 4)
		return pkt[9] == 2; /* IGMP: joins are the SA's */
	if (len < 40 || (pkt[0] >> 4) != 6)
		return false;
	nxt = pkt[6];
	/* MLD reports carry a hop-by-hop header (router alert) */
	if (nxt == 0 && len >= off + 8) {
		nxt = pkt[off];
		off += ((size_t)pkt[off + 1] + 1) * 8;
	}
	if (nxt != ICMP6 || len < off + 1)
		return false;
	/* MLD (130..132, 143), router and neighbour discovery, redirect */
	return (pkt[off] >= 130 && pkt[off] <= 137) || pkt[off] == 143;
}
