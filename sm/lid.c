/*
 * LID assignment (IBA 14.4.3): every CA port and every switch's port 0
 * gets a base LID, aligned to 2^LMC (CA ports take the subnet's LMC,
 * switch port 0 LMC 0). A port keeps its LID: across sweeps (the model
 * keeps it), across SM restarts through the guid2lid file (OpenSM's
 * format: GUID, first LID, last LID) and otherwise through the LID the
 * port already has when it is free and aligned. LIDs the file names for
 * ports not present now are not given to others.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sm.h"
#include "smp.h"

static int g2l_cmp(const void *a, const void *b)
{
	const struct sm_g2l *x = a, *y = b;

	return x->guid < y->guid ? -1 : x->guid > y->guid;
}

void sm_lid_load(struct sm *sm)
{
	unsigned long long guid;
	unsigned lo, hi, cap = 0;
	char line[256];
	FILE *f;

	if (!sm->guid2lid)
		return;
	f = fopen(sm->guid2lid, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %x %x", &guid, &lo, &hi) != 3 || !lo || lo >= SM_UCAST_LIDS)
			continue;
		if (sm->ng2l == cap) {
			struct sm_g2l *v;

			cap = cap ? cap * 2 : 256;
			v = realloc(sm->g2l, cap * sizeof(*v));
			if (!v)
				break;
			sm->g2l = v;
		}
		sm->g2l[sm->ng2l].guid = guid;
		sm->g2l[sm->ng2l++].lid = (uint16_t)lo;
	}
	fclose(f);
	qsort(sm->g2l, sm->ng2l, sizeof(*sm->g2l), g2l_cmp);
	sm_log(sm, 1, "guid2lid: %u entries from %s", sm->ng2l, sm->guid2lid);
}

static uint16_t g2l_find(const struct sm *sm, uint64_t guid)
{
	struct sm_g2l key = {.guid = guid}, *e;

	if (!sm->ng2l)
		return 0;
	e = bsearch(&key, sm->g2l, sm->ng2l, sizeof(*sm->g2l), g2l_cmp);
	return e ? e->lid : 0;
}

static bool range_free(const struct sm_subnet *sn, const uint8_t *reserved, unsigned lid,
		       unsigned lmc, const struct sm_port *p)
{
	unsigned i;

	if (!lid || lid & ((1u << lmc) - 1) || lid + (1u << lmc) > SM_UCAST_LIDS)
		return false;
	for (i = 0; i < (1u << lmc); i++)
		if ((sn->lid_port[lid + i] && sn->lid_port[lid + i] != p) ||
		    (reserved && reserved[lid + i]))
			return false;
	return true;
}

static bool wants_lid(const struct sm_port *p)
{
	const struct sm_node *n = p->node;

	if (!n->present || !p->present)
		return false;
	return n->type == SOF_NODE_SWITCH ? p->num == 0 : p->num != 0;
}

int sm_lid_assign(struct sm *sm)
{
	struct sm_subnet *sn = &sm->sn;
	uint8_t *reserved = calloc(SM_UCAST_LIDS, 1);
	unsigned i, j, next = 1, fresh = 0;
	int pass;

	if (!reserved)
		return -ENOMEM;
	for (i = 0; i < sm->ng2l; i++) {
		struct sm_port *p = sm_port_by_guid(sn, sm->g2l[i].guid);

		if (!p || !p->lid)
			reserved[sm->g2l[i].lid] = 1;
	}
	/* pass 0: the port's own LID, the file's, or the one it has; pass 1:
	 * a fresh one, lowest free first */
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < sn->nnodes; i++) {
			struct sm_node *n = sn->nodes[i];

			for (j = 0; j <= n->nports; j++) {
				struct sm_port *p = &n->port[j];
				uint8_t lmc = n->type == SOF_NODE_SWITCH ? 0 : sn->lmc;
				uint16_t want;

				if (!wants_lid(p) || (p->lid && p->lmc == lmc))
					continue;
				if (pass == 0) {
					want = g2l_find(sm, p->guid);
					if (!want || !range_free(sn, NULL, want, lmc, p))
						want = p->lid_wanted;
					if (!want || !range_free(sn, want == g2l_find(sm, p->guid) ? NULL : reserved,
								 want, lmc, p))
						continue;
				} else {
					unsigned mask = (1u << lmc) - 1, l = (next + mask) & ~mask;

					while (l < SM_UCAST_LIDS && !range_free(sn, reserved, l, lmc, p))
						l += 1u << lmc;
					/* switches (LMC 0) may fill the holes left below */
					if (!lmc)
						next = l;
					if (l >= SM_UCAST_LIDS) {
						sm_log(sm, 0, "out of LIDs");
						free(reserved);
						return -ENOSPC;
					}
					want = (uint16_t)l;
					fresh++;
				}
				sm_lid_table_set(sn, p, want, lmc);
				p->lid_set = false;
			}
		}
		next = 1;
	}
	free(reserved);
	if (fresh)
		sm_log(sm, 2, "%u ports got fresh LIDs", fresh);
	return 0;
}

void sm_lid_save(struct sm *sm)
{
	struct sm_subnet *sn = &sm->sn;
	char tmp[4096];
	unsigned i, j;
	FILE *f;

	if (!sm->guid2lid)
		return;
	snprintf(tmp, sizeof(tmp), "%s.tmp", sm->guid2lid);
	f = fopen(tmp, "w");
	if (!f) {
		sm_log(sm, 0, "cannot write %s", tmp);
		return;
	}
	for (i = 0; i < sn->nnodes; i++) {
		struct sm_node *n = sn->nodes[i];

		for (j = 0; j <= n->nports; j++) {
			struct sm_port *p = &n->port[j];

			if (p->lid && p->guid)
				fprintf(f, "0x%016" PRIx64 " 0x%04x 0x%04x\n", p->guid, p->lid,
					p->lid + (1u << p->lmc) - 1);
		}
	}
	if (fclose(f) || rename(tmp, sm->guid2lid))
		sm_log(sm, 0, "cannot write %s", sm->guid2lid);
}
