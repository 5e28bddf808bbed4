/*
 * Connected mode's wire (RFC 4755): the private data of the CM's REQ and
 * REP (section 6: the sender's UD QPN and the largest frame it receives,
 * eight bytes, big-endian), checked before a connection is accepted; and
 * the ICMP message a packet larger than a datagram-only peer's MTU earns
 * (section 7.2: the interface MTU is per destination, so the kernel must
 * learn the smaller one through path MTU discovery, as Linux's ipoib
 * tells it with icmp_send / icmpv6_send).
 */
#include "ipoib.h"
#include "sof_bytes.h"

#include <errno.h>
#include <string.h>

#define ICMP6 58
#define IPV6_MIN_MTU 1280

void ipoib_cm_data_put(uint8_t out[IPOIB_CM_PDATA], const struct ipoib_cm_data *d)
{
	sof_put32(out, d->qpn & 0xffffff);
	sof_put32(out + 4, d->rsize);
}

int ipoib_cm_data_get(struct ipoib_cm_data *d, const uint8_t *in, size_t len)
{
	if (!in || len < IPOIB_CM_PDATA)
		return -EINVAL;
	d->qpn = sof_get32(in);
	d->rsize = sof_get32(in + 4);
	/* a UD QPN (not 0, 1, the multicast QPN, nor over 24 bits); a receive
	 * size that holds the header and a minimal IPv4 packet (RFC 791: 68) */
	if (d->qpn < 2 || d->qpn >= 0xffffff || d->rsize < IPOIB_HDR_LEN + 68)
		return -EINVAL;
	return 0;
}

static uint32_t sum16(uint32_t sum, const uint8_t *d, size_t len)
{
	for (; len > 1; d += 2, len -= 2)
		sum += (uint32_t)(d[0] << 8 | d[1]);
	if (len)
		sum += (uint32_t)(d[0] << 8);
	return sum;
}

static uint16_t fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* RFC 1191: type 3 code 4 with the next hop's MTU, back to the sender, as
 * from the destination (a source of ours would be a martian to the
 * kernel's input); only for DF packets, which are the ones it sends
 * whole. */
static bool too_big4(struct ipoib *p, const uint8_t *ip, size_t len, uint32_t mtu)
{
	uint8_t out[20 + 8 + 60 + 8];
	size_t ihl = (size_t)(ip[0] & 15) * 4, quote;

	if (len < 20 || ihl < 20 || len < ihl || !(sof_get16(ip + 6) & 0x4000))
		return false;
	/* RFC 1122 3.2.2: none about an ICMP error (a query, as an echo, is
	 * not one) */
	if (ip[9] == 1 && len > ihl && ip[ihl] != 0 && ip[ihl] != 8 && ip[ihl] != 13 &&
	    ip[ihl] != 14)
		return false;
	quote = ihl + 8 < len ? ihl + 8 : len;
	memset(out, 0, sizeof(out));
	out[0] = 0x45;
	sof_put16(out + 2, (uint16_t)(28 + quote));
	out[8] = 64;
	out[9] = 1;
	memcpy(out + 12, ip + 16, 4);
	memcpy(out + 16, ip + 12, 4);
	sof_put16(out + 10, fold(sum16(0, out, 20)));
	out[20] = 3;
	out[21] = 4;
	sof_put16(out + 26, (uint16_t)mtu);
	memcpy(out + 28, ip, quote);
	sof_put16(out + 22, fold(sum16(0, out + 20, 8 + quote)));
	p->ops->deliver(out, 28 + quote);
	return true;
}

/* RFC 4443 3.1: type 2 with the MTU, as much of the packet as fits in
 * the minimum MTU, as from the destination. */
static bool too_big6(struct ipoib *p, const uint8_t *ip, size_t len, uint32_t mtu)
{
	static uint8_t out[IPV6_MIN_MTU];
	size_t quote = len < IPV6_MIN_MTU - 48 ? len : IPV6_MIN_MTU - 48;
	uint8_t ph[8] = {0};
	uint32_t sum;

	/* RFC 4443 2.4 (e): none about an ICMPv6 error (types below 128) */
	if (len < 40 || (ip[6] == ICMP6 && (len < 41 || ip[40] < 128)))
		return false;
	memset(out, 0, 48);
	out[0] = 0x60;
	sof_put16(out + 4, (uint16_t)(8 + quote));
	out[6] = ICMP6;
	out[7] = 64;
	memcpy(out + 8, ip + 24, 16);
	memcpy(out + 24, ip + 8, 16);
	out[40] = 2;
	sof_put32(out + 44, mtu);
	memcpy(out + 48, ip, quote);
	sof_put32(ph, (uint32_t)(8 + quote));
	ph[7] = ICMP6;
	sum = sum16(0, out + 8, 32);
	sum = sum16(sum, ph, 8);
	sum = sum16(sum, out + 40, 8 + quote);
	sof_put16(out + 42, fold(sum));
	p->ops->deliver(out, 48 + quote);
	return true;
}

bool ipoib_too_big(struct ipoib *p, const uint8_t *frame, size_t len, uint32_t mtu)
{
	const uint8_t *ip = frame + IPOIB_HDR_LEN;

	if (len <= IPOIB_HDR_LEN)
		return false;
	len -= IPOIB_HDR_LEN;
	if (sof_get16(frame) == ETH_P_IPV4 && (ip[0] >> 4) == 4)
		return too_big4(p, ip, len, mtu);
	if (sof_get16(frame) == ETH_P_IPV6V && (ip[0] >> 4) == 6)
		return too_big6(p, ip, len, mtu);
	return false;
}
