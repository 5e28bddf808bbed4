/*
 * A hand-built subnet model (sm/subnet.h) for the SA's tests and fuzz
 * target, as softofed-sm would leave it after a sweep, no fabric needed:
 *
 *     H1 (LIDs 4-5) --1-[S1 LID 1]-3----3-[S2 LID 2]-1-- H3 (LIDs 8-9)
 *     H2 (LIDs 6-7) --2-'
 *
 * LMC 1 on the CAs, every port Active at 4x QDR with MTU 4096 (H3: 2048),
 * the switches' forwarding tables written, the SM on H1. Static functions:
 * include it in one file of a program.
 */
#ifndef SOF_TEST_SA_FABRIC_H
#define SOF_TEST_SA_FABRIC_H

#include <stdio.h>
#include <string.h>

#include "sm.h"
#include "smp.h"

#define SAF_PREFIX 0xfe80000000000000ull
#define SAF_S1 0x0002c90300001000ull
#define SAF_S2 0x0002c90300002000ull
#define SAF_H1 0x0002c90300000100ull
#define SAF_H2 0x0002c90300000200ull
#define SAF_H3 0x0002c90300000300ull

struct saf {
	struct sm_subnet sn;
	struct sm_node *s1, *s2, *h1, *h2, *h3;
};

static inline void saf_port_up(struct sm_port *p, uint8_t mtu)
{
	p->present = true;
	p->state = SOF_PORT_ACTIVE;
	p->phys = SOF_PHYS_LINKUP;
	p->width_active = 2;
	p->width_supported = p->width_enabled = 3;
	p->speed_active = 4;
	p->speed_supported = p->speed_enabled = 7;
	p->mtu_cap = mtu;
	p->neighbor_mtu = mtu;
	p->vl_cap = 4;
	p->op_vls = 4;
	p->local_port = p->num;
	p->raw_portinfo[0] = 0x11; /* an M_Key the SA must not show untrusted */
}

static inline void saf_link(struct sm_port *a, struct sm_port *b)
{
	a->peer = b;
	b->peer = a;
	if (a->neighbor_mtu > b->mtu_cap)
		a->neighbor_mtu = b->mtu_cap;
	if (b->neighbor_mtu > a->mtu_cap)
		b->neighbor_mtu = a->mtu_cap;
}

static inline struct sm_node *saf_node(struct saf *f, uint8_t type, uint8_t nports, uint64_t guid,
				       const char *desc, uint16_t lid, uint8_t lmc, uint8_t mtu)
{
	struct sm_node *n = sm_node_add(&f->sn, type, nports, guid);
	unsigned i;

	if (!n)
		return NULL;
	n->present = true;
	n->sys_guid = guid;
	n->vendor_id = 0x02c9;
	n->device_id = type == SOF_NODE_SWITCH ? 0xb924 : 0x1003;
	n->partition_cap = 64;
	snprintf(n->desc, sizeof(n->desc), "%s", desc);
	for (i = type == SOF_NODE_SWITCH ? 0 : 1; i <= nports; i++) {
		struct sm_port *p = &n->port[i];

		p->guid = type == SOF_NODE_SWITCH ? guid : guid + i;
		saf_port_up(p, mtu);
		sm_port_hash_add(&f->sn, p);
	}
	if (type == SOF_NODE_SWITCH) {
		n->port[0].gid_prefix = SAF_PREFIX;
		sm_lid_table_set(&f->sn, &n->port[0], lid, 0);
		n->sw->lft_cap = 0xc000;
		n->sw->mft_cap = 1024;
		n->sw->lids_per_port = 1;
		n->sw->enhanced_port0 = true;
	} else {
		n->port[1].gid_prefix = SAF_PREFIX;
		n->port[1].sm_lid = 4;
		sm_lid_table_set(&f->sn, &n->port[1], lid, lmc);
	}
	return n;
}

/* the forwarding table of a switch: LIDs lo..hi out of port */
static inline void saf_route(struct sm_node *sw, uint16_t lo, uint16_t hi, uint8_t port)
{
	for (unsigned l = lo; l <= hi; l++)
		sw->sw->lft[l] = sw->sw->lft_hw[l] = port;
}

static inline int saf_build(struct saf *f)
{
	memset(f, 0, sizeof(*f));
	if (sm_subnet_init(&f->sn))
		return -1;
	f->sn.prefix = SAF_PREFIX;
	f->sn.lmc = 1;
	f->h1 = saf_node(f, SOF_NODE_CA, 1, SAF_H1, "H1 HCA-1", 4, 1, 5);
	f->s1 = saf_node(f, SOF_NODE_SWITCH, 4, SAF_S1, "S1", 1, 0, 5);
	f->s2 = saf_node(f, SOF_NODE_SWITCH, 4, SAF_S2, "S2", 2, 0, 5);
	f->h2 = saf_node(f, SOF_NODE_CA, 1, SAF_H2, "H2 HCA-1", 6, 1, 5);
	f->h3 = saf_node(f, SOF_NODE_CA, 1, SAF_H3, "H3 HCA-1", 8, 1, 4);
	if (!f->h1 || !f->s1 || !f->s2 || !f->h2 || !f->h3)
		return -1;
	saf_link(&f->h1->port[1], &f->s1->port[1]);
	saf_link(&f->h2->port[1], &f->s1->port[2]);
	saf_link(&f->s1->port[3], &f->s2->port[3]);
	saf_link(&f->h3->port[1], &f->s2->port[1]);
	f->s1->port[4].present = f->s2->port[4].present = true; /* down, no peer */
	f->s1->port[4].state = f->s2->port[4].state = SOF_PORT_DOWN;
	f->s1->port[4].phys = f->s2->port[4].phys = SOF_PHYS_POLLING;
	/* S1: itself 0, S2 3, H1 1, H2 2, H3 3; S2: S1 3, itself 0, H1/H2 3, H3 1 */
	saf_route(f->s1, 1, 1, 0);
	saf_route(f->s1, 2, 2, 3);
	saf_route(f->s1, 4, 5, 1);
	saf_route(f->s1, 6, 7, 2);
	saf_route(f->s1, 8, 9, 3);
	saf_route(f->s2, 1, 1, 3);
	saf_route(f->s2, 2, 2, 0);
	saf_route(f->s2, 4, 7, 3);
	saf_route(f->s2, 8, 9, 1);
	f->s1->sw->lft_top = f->s2->sw->lft_top = 9;
	f->sn.self = &f->h1->port[1];
	f->sn.sm_lid = 4;
	f->sn.sm_guid = SAF_H1 + 1;
	f->sn.sm_key = 0x5a5a5a5a5a5a5a5aull;
	f->sn.sm_priority = 15;
	f->sn.sm_state = SM_STATE_MASTER;
	f->sn.act_count = 77;
	f->sn.up = true;
	return 0;
}

static inline void saf_free(struct saf *f) { sm_subnet_free(&f->sn); }

#endif
