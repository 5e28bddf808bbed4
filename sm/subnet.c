/*
 * The subnet model's storage (sm/subnet.h): nodes made as discovery finds
 * them, the GUID hash tables (open addressing, linear probing, grown at
 * half load) and the LID table. No I/O.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sm.h"

const char *const sm_state_names[4] = {
    [SM_STATE_NOT_ACTIVE] = "NOT_ACTIVE",
    [SM_STATE_DISCOVERING] = "DISCOVERING",
    [SM_STATE_STANDBY] = "STANDBY",
    [SM_STATE_MASTER] = "MASTER",
};

static unsigned guid_hash(uint64_t g, unsigned size)
{
	g ^= g >> 33;
	g *= 0xff51afd7ed558ccdull;
	g ^= g >> 33;
	return (unsigned)g & (size - 1);
}

int sm_subnet_init(struct sm_subnet *sn)
{
	memset(sn, 0, sizeof(*sn));
	if (pthread_rwlock_init(&sn->lock, NULL))
		return -ENOMEM;
	sn->prefix = SM_DEFAULT_PREFIX;
	sn->subnet_timeout = 18;
	sn->node_hash_size = 1024;
	sn->port_hash_size = 1024;
	sn->node_hash = calloc(sn->node_hash_size, sizeof(*sn->node_hash));
	sn->port_hash = calloc(sn->port_hash_size, sizeof(*sn->port_hash));
	sn->lid_port = calloc(SM_UCAST_LIDS, sizeof(*sn->lid_port));
	if (!sn->node_hash || !sn->port_hash || !sn->lid_port) {
		sm_subnet_free(sn);
		return -ENOMEM;
	}
	return 0;
}

static void node_free(struct sm_node *n)
{
	if (n->sw) {
		free(n->sw->lft);
		free(n->sw->lft_hw);
		free(n->sw->mft);
		free(n->sw->mft_want);
		free(n->sw->hops);
		free(n->sw);
	}
	for (unsigned i = 0; n->port && i <= n->nports; i++)
		free(n->port[i].pkeys);
	free(n->port);
	free(n);
}

void sm_subnet_free(struct sm_subnet *sn)
{
	unsigned i;

	for (i = 0; i < sn->nnodes; i++)
		node_free(sn->nodes[i]);
	free(sn->nodes);
	free(sn->node_hash);
	free(sn->port_hash);
	free(sn->lid_port);
	pthread_rwlock_destroy(&sn->lock);
	memset(sn, 0, sizeof(*sn));
}

struct sm_node *sm_node_by_guid(const struct sm_subnet *sn, uint64_t guid)
{
	unsigned i = guid_hash(guid, sn->node_hash_size);

	for (; sn->node_hash[i]; i = (i + 1) & (sn->node_hash_size - 1))
		if (sn->node_hash[i]->node_guid == guid)
			return sn->node_hash[i];
	return NULL;
}

struct sm_port *sm_port_by_guid(const struct sm_subnet *sn, uint64_t guid)
{
	unsigned i = guid_hash(guid, sn->port_hash_size);

	for (; sn->port_hash[i]; i = (i + 1) & (sn->port_hash_size - 1))
		if (sn->port_hash[i]->guid == guid)
			return sn->port_hash[i];
	return NULL;
}

struct sm_port *sm_port_by_lid(const struct sm_subnet *sn, uint16_t lid)
{
	return lid && lid < SM_UCAST_LIDS ? sn->lid_port[lid] : NULL;
}

struct sm_port *sm_node_lid_port(const struct sm_node *n)
{
	unsigned i;

	if (n->type == 2)
		return &n->port[0];
	for (i = 1; i <= n->nports; i++)
		if (n->port[i].present && n->port[i].lid)
			return &n->port[i];
	for (i = 1; i <= n->nports; i++)
		if (n->port[i].present)
			return &n->port[i];
	return NULL;
}

/* Double a hash table of pointers keyed by a GUID at offset-less getters */
static int node_hash_grow(struct sm_subnet *sn)
{
	unsigned size = sn->node_hash_size * 2, i, j;
	struct sm_node **h = calloc(size, sizeof(*h));

	if (!h)
		return -ENOMEM;
	for (i = 0; i < sn->node_hash_size; i++) {
		if (!sn->node_hash[i])
			continue;
		for (j = guid_hash(sn->node_hash[i]->node_guid, size); h[j]; j = (j + 1) & (size - 1))
			;
		h[j] = sn->node_hash[i];
	}
	free(sn->node_hash);
	sn->node_hash = h;
	sn->node_hash_size = size;
	return 0;
}

int sm_port_hash_add(struct sm_subnet *sn, struct sm_port *p)
{
	unsigned i;

	if (!p->guid || sm_port_by_guid(sn, p->guid))
		return 0;
	if ((sn->port_hash_used + 1) * 2 > sn->port_hash_size) {
		unsigned size = sn->port_hash_size * 2, j, k;
		struct sm_port **h = calloc(size, sizeof(*h));

		if (!h)
			return -ENOMEM;
		for (j = 0; j < sn->port_hash_size; j++) {
			if (!sn->port_hash[j])
				continue;
			for (k = guid_hash(sn->port_hash[j]->guid, size); h[k]; k = (k + 1) & (size - 1))
				;
			h[k] = sn->port_hash[j];
		}
		free(sn->port_hash);
		sn->port_hash = h;
		sn->port_hash_size = size;
	}
	for (i = guid_hash(p->guid, sn->port_hash_size); sn->port_hash[i];
	     i = (i + 1) & (sn->port_hash_size - 1))
		;
	sn->port_hash[i] = p;
	sn->port_hash_used++;
	return 0;
}

struct sm_node *sm_node_add(struct sm_subnet *sn, uint8_t type, uint8_t nports, uint64_t guid)
{
	struct sm_node *n;
	unsigned i;

	if ((sn->nnodes + 1) * 2 > sn->node_hash_size && node_hash_grow(sn))
		return NULL;
	if (sn->nnodes == sn->nodes_cap) {
		unsigned cap = sn->nodes_cap ? sn->nodes_cap * 2 : 256;
		struct sm_node **v = realloc(sn->nodes, cap * sizeof(*v));

		if (!v)
			return NULL;
		sn->nodes = v;
		sn->nodes_cap = cap;
	}
	n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	n->port = calloc(nports + 1u, sizeof(*n->port));
	if (!n->port)
		goto err_free;
	if (type == 2) {
		n->sw = calloc(1, sizeof(*n->sw));
		if (!n->sw)
			goto err_free;
		n->sw->lft = malloc(SM_UCAST_LIDS);
		n->sw->lft_hw = malloc(SM_UCAST_LIDS);
		n->sw->hops = malloc(SM_UCAST_LIDS);
		if (!n->sw->lft || !n->sw->lft_hw || !n->sw->hops)
			goto err_free;
		memset(n->sw->lft, 0xff, SM_UCAST_LIDS);
		/* 0xfe: what the switch holds is unknown, so every block is
		 * written the first time */
		memset(n->sw->lft_hw, 0xfe, SM_UCAST_LIDS);
		memset(n->sw->hops, 0xff, SM_UCAST_LIDS);
	}
	n->type = type;
	n->nports = nports;
	n->node_guid = guid;
	n->index = sn->nnodes;
	for (i = 0; i <= nports; i++) {
		n->port[i].node = n;
		n->port[i].num = (uint8_t)i;
	}
	sn->nodes[sn->nnodes++] = n;
	for (i = guid_hash(guid, sn->node_hash_size); sn->node_hash[i];
	     i = (i + 1) & (sn->node_hash_size - 1))
		;
	sn->node_hash[i] = n;
	return n;

err_free:
	node_free(n);
	return NULL;
}

/* Give port p the LIDs lid .. lid + 2^lmc - 1 in the LID table (0: none),
 * taking away those it had. */
void sm_lid_table_set(struct sm_subnet *sn, struct sm_port *p, uint16_t lid, uint8_t lmc)
{
	unsigned i;

	if (p->lid)
		for (i = 0; i < (1u << p->lmc) && p->lid + i < SM_UCAST_LIDS; i++)
			if (sn->lid_port[p->lid + i] == p)
				sn->lid_port[p->lid + i] = NULL;
	p->lid = lid;
	p->lmc = lmc;
	if (!lid)
		return;
	for (i = 0; i < (1u << lmc) && lid + i < SM_UCAST_LIDS; i++) {
		sn->lid_port[lid + i] = p;
		if (lid + i > sn->max_lid)
			sn->max_lid = (uint16_t)(lid + i);
	}
}
