/*
 * Address handles. sof0's port is Ethernet (RoCEv2), so every address
 * carries a GRH: the destination GID names the peer, the source GID index
 * one of our GIDs. sofib0's is InfiniBand: a DLID, and a GRH only when
 * global. An AH lives only in the library (the executor reads its
 * attributes when it runs a UD send), so its PD keeps a count of them and
 * refuses deallocation while any exist.
 *
 * A UD receive on RoCEv2 holds, in its first 40 bytes, the IP header the
 * packet came with (Annex A17.4.5.1): an IPv6 header, or 20 zero bytes and
 * then an IPv4 header. ibv_init_ah_from_wc turns it back into the address
 * to answer to.
 */
#include "sofv.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

static _Atomic uint32_t next_ah_handle = 1;

static bool sgid_valid(const struct sofv_context *s, uint8_t index)
{
	return sofv_gid_read(s, index, NULL) == 0;
}

SOFV_EXPORT struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct sofv_context *s;
	struct sofv_ah *ah;

	if (!pd || !attr) {
		errno = EINVAL;
		return NULL;
	}
	s = to_sctx(pd->context);
	if (s->ib) {
		/* sofib0: by LID, a GRH only when global, from its one GID; a
		 * multicast LID with the group's MGID in the GRH (IBA 10.5.2.1) */
		bool mc = attr->dlid >= 0xc000 && attr->dlid != 0xffff && attr->is_global &&
			  attr->grh.dgid.raw[0] == 0xff;

		if (attr->port_num != 1 || !attr->dlid || (attr->dlid >= 0xc000 && !mc) ||
		    attr->sl > 15 ||
		    (attr->is_global && attr->grh.sgid_index != 0)) {
			errno = EINVAL;
			return NULL;
		}
	} else if (attr->port_num != 1 || !attr->is_global ||
		   !sgid_valid(s, attr->grh.sgid_index)) {
		/* Ethernet link layer: no LID routing, a GRH is mandatory. */
		errno = EINVAL;
		return NULL;
	}
	if (atomic_fetch_add(&to_spd(pd)->nah, 1) >= SOFV_MAX_AH) {
		atomic_fetch_sub(&to_spd(pd)->nah, 1);
		errno = ENOMEM;
		return NULL;
	}
	ah = calloc(1, sizeof(*ah));
	if (!ah) {
		atomic_fetch_sub(&to_spd(pd)->nah, 1);
		errno = ENOMEM;
		return NULL;
	}
	ah->attr = *attr;
	ah->ibah.context = pd->context;
	ah->ibah.pd = pd;
	ah->ibah.handle = atomic_fetch_add(&next_ah_handle, 1);
	return &ah->ibah;
}

SOFV_EXPORT int ibv_destroy_ah(struct ibv_ah *ibah)
{
	struct sofv_ah *ah;

	if (!ibah)
		return EINVAL;
	ah = to_sah(ibah);
	atomic_fetch_sub(&to_spd(ibah->pd)->nah, 1);
	free(ah);
	return 0;
}

static void v4_gid(uint8_t gid[16], const uint8_t *addr)
{
	memset(gid, 0, 10);
	gid[10] = 0xff;
	gid[11] = 0xff;
	memcpy(gid + 12, addr, 4);
}

/* Read the received IP header. Fills the peer's GID (the packet's source),
 * ours (its destination), traffic class and flow label. false when the 40
 * bytes hold neither header form. */
static bool parse_grh(const uint8_t *raw, uint8_t *peer, uint8_t *local, uint8_t *tclass,
		      uint32_t *flow)
{
	static const uint8_t zero[20];

	if (raw[0] >> 4 == 6) {
		uint32_t w = (uint32_t)raw[0] << 24 | (uint32_t)raw[1] << 16 |
			     (uint32_t)raw[2] << 8 | raw[3];

		*tclass = (uint8_t)(w >> 20);
		*flow = w & 0xfffff;
		memcpy(peer, raw + 8, 16);
		memcpy(local, raw + 24, 16);
		return true;
	}
	if (!memcmp(raw, zero, sizeof(zero)) && raw[20] >> 4 == 4 && (raw[20] & 0xf) == 5) {
		const uint8_t *ip = raw + 20;

		*tclass = ip[1];
		*flow = 0;
		v4_gid(peer, ip + 12);
		v4_gid(local, ip + 16);
		return true;
	}
	return false;
}

SOFV_EXPORT int ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num,
				    struct ibv_wc *wc, struct ibv_grh *grh,
				    struct ibv_ah_attr *ah_attr)
{
	uint8_t raw[40], peer[16], local[16], tclass;
	struct sofv_context *s;
	uint32_t flow;
	int sidx;

	if (!context || !wc || !ah_attr || port_num != 1) {
		errno = EINVAL;
		return -1;
	}
	/* sofib0: the answer goes to the SLID the datagram came from (its
	 * GRH, when it had one, is the IB one: the peer's GID first) */
	if (to_sctx(context)->ib) {
		memset(ah_attr, 0, sizeof(*ah_attr));
		ah_attr->dlid = wc->slid;
		ah_attr->sl = wc->sl;
		ah_attr->src_path_bits = wc->dlid_path_bits;
		ah_attr->port_num = port_num;
		if ((wc->wc_flags & IBV_WC_GRH) && grh) {
			ah_attr->is_global = 1;
			memcpy(ah_attr->grh.dgid.raw, grh->sgid.raw, 16);
			ah_attr->grh.hop_limit = 0xff;
		}
		return 0;
	}
	/* RoCE: the reply needs the GRH the request came with. */
	if (!(wc->wc_flags & IBV_WC_GRH) || !grh) {
		errno = EINVAL;
		return -1;
	}
	s = to_sctx(context);
	memcpy(raw, grh, sizeof(raw));
	/* as rdma-core: a datagram to a group names no GID of ours to
	 * answer from */
	if (!parse_grh(raw, peer, local, &tclass, &flow) || sof_gid_is_mcast(local)) {
		errno = EINVAL;
		return -1;
	}
	sidx = sofv_gid_find(s, local);
	if (sidx < 0) {
		errno = ENOENT;
		return -1;
	}
	memset(ah_attr, 0, sizeof(*ah_attr));
	ah_attr->dlid = wc->slid;
	ah_attr->sl = wc->sl;
	ah_attr->src_path_bits = wc->dlid_path_bits;
	ah_attr->port_num = port_num;
	ah_attr->is_global = 1;
	memcpy(ah_attr->grh.dgid.raw, peer, 16);
	ah_attr->grh.sgid_index = (uint8_t)sidx;
	ah_attr->grh.flow_label = flow;
	ah_attr->grh.hop_limit = 0xff;
	ah_attr->grh.traffic_class = tclass;
	return 0;
}

SOFV_EXPORT struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc,
						 struct ibv_grh *grh, uint8_t port_num)
{
	struct ibv_ah_attr attr;

	if (!pd) {
		errno = EINVAL;
		return NULL;
	}
	if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr))
		return NULL;
	return ibv_create_ah(pd, &attr);
}
