/*
 * Per-port M_Keys (IBA 14.2.4; OpenSM's m_key_per_port and guid2mkey):
 * each management port (a CA port, a switch's port 0) gets its own key,
 * from the --guid2mkey file when it names the port GUID, else with
 * --m_key_per_port a keyed hash of the GUID (SipHash-2-4 keyed by the
 * -y base key, so one port's key tells nothing of another's or of the
 * base), else the base key. Every key given out is written back to the
 * guid2mkey file (`0xGUID 0xMKEY` a line, as OpenSM's), so a restarted SM
 * still holds the keys of the ports it protected.
 *
 * An SMP carries the key of the port it is for (sm_mkey_for, at send
 * time). A NodeInfo to a port not known yet goes with the base key; at
 * protection level 2 or 3 such a port drops it, so when the file held
 * keys the NodeInfo is also tried once with each distinct key
 * (sm_mkey_try_all; up to SM_MKEY_TRIES): the one that answers names the
 * port GUID, and from then on its own key is used. At a restart every
 * NodeInfo of the walk is such a one: the tries go out at once, beside
 * the base key's, and the wrong ones count as M_Key violations (traps
 * 256) at the port.
 *
 * --m_key_release: before the SM gives the subnet up (a HANDOVER it sends,
 * SIGTERM or SIGINT), every management port is set back to M_Key 0,
 * protection 0 (IBA 14.2.4.1: a port whose M_Key is 0 takes any SMP), so
 * that an SM without its keys (OpenSM without the guid2mkey file) manages
 * the subnet at once. Without it such an SM waits for each port's M_Key
 * lease (14.2.4.2) to run out after its first refused SMP, hop by hop at
 * protection level 2 or 3; with no lease period, never.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sm.h"
#include "smp.h"

#define SM_MKEY_TRIES 256

static inline uint64_t rotl(uint64_t x, unsigned b) { return x << b | x >> (64 - b); }

#define SIPROUND                                                                                   \
	do {                                                                                       \
		v0 += v1;                                                                          \
		v1 = rotl(v1, 13);                                                                 \
		v1 ^= v0;                                                                          \
		v0 = rotl(v0, 32);                                                                 \
		v2 += v3;                                                                          \
		v3 = rotl(v3, 16);                                                                 \
		v3 ^= v2;                                                                          \
		v0 += v3;                                                                          \
		v3 = rotl(v3, 21);                                                                 \
		v3 ^= v0;                                                                          \
		v2 += v1;                                                                          \
		v1 = rotl(v1, 17);                                                                 \
		v1 ^= v2;                                                                          \
		v2 = rotl(v2, 32);                                                                 \
	} while (0)

/* SipHash-2-4 of one 8-byte message m under the key (k0, k1) */
static uint64_t siphash8(uint64_t k0, uint64_t k1, uint64_t m)
{
	uint64_t v0 = k0 ^ 0x736f6d6570736575ull, v1 = k1 ^ 0x646f72616e646f6dull;
	uint64_t v2 = k0 ^ 0x6c7967656e657261ull, v3 = k1 ^ 0x7465646279746573ull;
	uint64_t b = 8ull << 56;

	v3 ^= m;
	SIPROUND;
	SIPROUND;
	v0 ^= m;
	v3 ^= b;
	SIPROUND;
	SIPROUND;
	v0 ^= b;
	v2 ^= 0xff;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}

/* the key table: open addressing by GUID, a power of two in size */
static struct sm_mkey_ent *slot_of(struct sm *sm, uint64_t guid)
{
	size_t mask = sm->mkeys.cap - 1, i = (size_t)(guid * 0x9e3779b97f4a7c15ull >> 20) & mask;

	while (sm->mkeys.e[i].guid && sm->mkeys.e[i].guid != guid)
		i = (i + 1) & mask;
	return &sm->mkeys.e[i];
}

static int put(struct sm *sm, uint64_t guid, uint64_t key)
{
	struct sm_mkey_ent *e;

	if ((sm->mkeys.n + 1) * 2 > sm->mkeys.cap) {
		struct sm_mkey_ent *old = sm->mkeys.e;
		size_t ocap = sm->mkeys.cap;

		sm->mkeys.cap = ocap ? ocap * 2 : 256;
		sm->mkeys.e = calloc(sm->mkeys.cap, sizeof(*sm->mkeys.e));
		if (!sm->mkeys.e) {
			sm->mkeys.e = old;
			sm->mkeys.cap = ocap;
			return -ENOMEM;
		}
		sm->mkeys.n = 0;
		for (size_t i = 0; i < ocap; i++) {
			if (!old[i].guid)
				continue;
			*slot_of(sm, old[i].guid) = old[i];
			sm->mkeys.n++;
		}
		free(old);
	}
	e = slot_of(sm, guid);
	if (!e->guid)
		sm->mkeys.n++;
	if (e->guid != guid || e->key != key)
		sm->mkeys.dirty = true;
	e->guid = guid;
	e->key = key;
	return 0;
}

bool sm_mkey_per_port(const struct sm *sm) { return sm->m_key_per_port || sm->guid2mkey; }

int sm_mkey_load(struct sm *sm)
{
	unsigned long long g, k;
	char line[256];
	unsigned n = 0;
	FILE *f;

	if (!sm->guid2mkey)
		return 0;
	f = fopen(sm->guid2mkey, "r");
	if (!f)
		return errno == ENOENT ? 0 : -errno; /* made at the first sweep */
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %llx", &g, &k) == 2 && g && !put(sm, g, k))
			n++;
	fclose(f);
	sm->mkeys.dirty = false;
	sm_log(sm, 1, "guid2mkey: %u keys from %s", n, sm->guid2mkey);
	return 0;
}

uint64_t sm_mkey_of_guid(struct sm *sm, uint64_t guid)
{
	uint64_t key;

	if (!sm_mkey_per_port(sm) || !guid)
		return sm->sn.m_key;
	if (sm->mkeys.cap && slot_of(sm, guid)->guid)
		return slot_of(sm, guid)->key;
	key = sm->m_key_per_port ? siphash8(sm->sn.m_key, ~sm->sn.m_key, guid) : sm->sn.m_key;
	if (put(sm, guid, key))
		sm_log(sm, 0, "no memory for the M_Key of %#" PRIx64, guid);
	return key;
}

void sm_mkey_save(struct sm *sm)
{
	char tmp[4096];
	FILE *f;

	if (!sm->guid2mkey || !sm->mkeys.dirty)
		return;
	snprintf(tmp, sizeof(tmp), "%s.tmp", sm->guid2mkey);
	f = fopen(tmp, "w");
	if (!f) {
		sm_log(sm, 0, "cannot write %s", tmp);
		return;
	}
	for (size_t i = 0; i < sm->mkeys.cap; i++)
		if (sm->mkeys.e[i].guid)
			fprintf(f, "0x%016" PRIx64 " 0x%016" PRIx64 "\n", sm->mkeys.e[i].guid,
				sm->mkeys.e[i].key);
	if (fclose(f) || rename(tmp, sm->guid2mkey))
		sm_log(sm, 0, "cannot write %s", sm->guid2mkey);
	else
		sm->mkeys.dirty = false;
}

/* The port an SMP is checked by: the node's management port (a switch's
 * port 0, the CA port the path enters by); for a discovery NodeInfo, the
 * far end of rq->node's port rq->port as the last sweep knew it. */
static const struct sm_port *target_of(const struct sm *sm, const struct sm_req *rq)
{
	const struct sm_node *n = rq->node;

	if (sof_get16(rq->mad + SOF_SMP_OFF_ATTR_ID) == SOF_ATTR_NODE_INFO && rq->dr) {
		const struct sm_port *peer;

		if (!n)
			return sm->sn.self;
		if (!rq->port)
			return NULL;
		peer = n->port[rq->port].peer;
		if (!peer)
			return NULL;
		return peer->node->sw ? &peer->node->port[0] : peer;
	}
	if (!n)
		return NULL;
	if (n->sw)
		return &n->port[0];
	if (rq->port && rq->port <= n->nports)
		return &n->port[rq->port];
	return n->in_port <= n->nports ? &n->port[n->in_port] : NULL;
}

uint64_t sm_mkey_for(const struct sm *sm, const struct sm_req *rq)
{
	return rq->m_key_set ? rq->m_key : sm_mkey_of_port(sm, target_of(sm, rq));
}

uint64_t sm_mkey_of_port(const struct sm *sm, const struct sm_port *p)
{
	/* a key not ours that the port showed with its protection bits
	 * at 0 (another SM's, its lease run out, IBA 14.2.4.2): with it
	 * our Sets pass and write ours */
	if (p && p->m_key_held)
		return p->m_key_held;
	if (!sm_mkey_per_port(sm))
		return sm->sn.m_key;
	return p && p->m_key ? p->m_key : sm->sn.m_key;
}

void sm_mkey_try_all(struct sm *sm, struct sm_req *rq, sm_done_fn *done)
{
	const struct sm_port *p = target_of(sm, rq);
	uint64_t tried[SM_MKEY_TRIES];
	unsigned nt = 0;

	if (rq->m_key_set || !sm->mkeys.n || sm->sn.m_key_protect < 2 || (p && p->m_key))
		return;
	/* the base key's try too is one of several: its failure alone
	 * says nothing of the link */
	rq->m_key = sm_mkey_for(sm, rq);
	rq->m_key_set = true;
	tried[nt++] = rq->m_key;
	for (size_t i = 0; i < sm->mkeys.cap && nt < SM_MKEY_TRIES; i++) {
		const struct sm_mkey_ent *e = &sm->mkeys.e[i];
		struct sm_req *t;
		unsigned k;

		if (!e->guid)
			continue;
		for (k = 0; k < nt && tried[k] != e->key; k++)
			;
		if (k < nt)
			continue;
		tried[nt++] = e->key;
		t = sm_smp_dr(sm, rq->mad + SOF_SMP_OFF_INIT_PATH, rq->mad[SOF_SMP_OFF_HOP_CNT],
			      SOF_METHOD_GET, SOF_ATTR_NODE_INFO, 0, NULL, done);
		if (!t)
			continue;
		t->node = rq->node;
		t->port = rq->port;
		t->m_key = e->key;
		t->m_key_set = true;
		t->tries = sm->retries; /* one try each */
		sm->mkey_tries++;
	}
}

unsigned sm_mkey_release(struct sm *sm)
{
	unsigned n;

	if (!sm->m_key_release || (!sm->sn.m_key && !sm->mkeys.n))
		return 0;
	sm->mkey_clear = true;
	n = sm_program_mgmt(sm);
	sm->mkey_clear = false;
	return n;
}
