/*
 * The 40 bytes a UD receive buffer starts with (IBA 11.4.1.2: the GRH),
 * which for RoCEv2 hold the IP header the datagram came with (Annex
 * A17.4.5.1). Shared by the library's same-host executor and the daemon's
 * transport, which both deliver UD datagrams.
 */
#include "sof_util.h"

#include <netinet/in.h>
#include <stdbool.h>
#include <string.h>

bool sof_gid_is_v4(const uint8_t gid[16])
{
	static const uint8_t pfx[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	return !memcmp(gid, pfx, sizeof(pfx));
}

bool sof_gid_is_mcast(const uint8_t gid[16])
{
	/* an IPv6 multicast address (ff00::/8), or an IPv4 group
	 * (224.0.0.0/4) IPv4-mapped as rdma_cm makes its MGIDs */
	return gid[0] == 0xff || (sof_gid_is_v4(gid) && (gid[12] & 0xf0) == 0xe0);
}

static uint16_t ip_csum(const uint8_t *h, int len)
{
	uint32_t sum = 0;

	for (int i = 0; i < len; i += 2)
		sum += (uint32_t)(h[i] << 8 | h[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* Annex A17.4.5.1: for RoCEv2 the first 40 bytes of a UD receive hold the
 * IPv6 header, or 20 bytes of zero followed by the IPv4 header. */
void sof_make_grh(uint8_t grh[40], const uint8_t *sgid, const uint8_t *dgid, uint8_t tclass,
		  uint8_t hop_limit, uint32_t flow_label, uint32_t paylen)
{
	/* UDP + BTH + DETH + payload + ICRC */
	uint32_t l4 = 8 + 12 + 8 + paylen + 4;

	memset(grh, 0, 40);
	if (sof_gid_is_v4(sgid) && sof_gid_is_v4(dgid)) {
		uint8_t *ip = grh + 20;
		uint16_t tot = (uint16_t)(20 + l4), c;

		ip[0] = 0x45;
		ip[1] = tclass;
		ip[2] = (uint8_t)(tot >> 8);
		ip[3] = (uint8_t)tot;
		ip[6] = 0x40; /* don't fragment */
		ip[8] = hop_limit ? hop_limit : 64;
		ip[9] = IPPROTO_UDP;
		memcpy(ip + 12, sgid + 12, 4);
		memcpy(ip + 16, dgid + 12, 4);
		c = ip_csum(ip, 20);
		ip[10] = (uint8_t)(c >> 8);
		ip[11] = (uint8_t)c;
	} else {
		uint32_t w = 6u << 28 | (uint32_t)tclass << 20 | (flow_label & 0xfffff);

		grh[0] = (uint8_t)(w >> 24);
		grh[1] = (uint8_t)(w >> 16);
		grh[2] = (uint8_t)(w >> 8);
		grh[3] = (uint8_t)w;
		grh[4] = (uint8_t)(l4 >> 8);
		grh[5] = (uint8_t)l4;
		grh[6] = IPPROTO_UDP;
		grh[7] = hop_limit ? hop_limit : 64;
		memcpy(grh + 8, sgid, 16);
		memcpy(grh + 24, dgid, 16);
	}
}

/* RoCE carries no SL. For a UD receive over RoCE, mlx5 puts the packet's
 * type in the completion's sl (its CQE's roce_pkt_type): bit 3 set for a
 * UDP-encapsulated (v2) frame, bits 2:0 the L3 header, 1 IPv6, 2 IPv4.
 * Programs written against mlx5 read the GRH's layout from it (UCX's
 * ud_verbs before 1.19 does, to find the destination address), so the
 * datagrams sof_make_grh describes are reported the same way. */
uint8_t sof_roce_wc_sl(const uint8_t *sgid, const uint8_t *dgid)
{
	return sof_gid_is_v4(sgid) && sof_gid_is_v4(dgid) ? 0x8 | 0x2 : 0x8 | 0x1;
}
