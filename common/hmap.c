/*
 * Open-addressing hash map with linear probing (see sof_hmap.h).
 */
#include "sof_hmap.h"

#include <errno.h>
#include <stdlib.h>

static uint32_t hash64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	return (uint32_t)k;
}

static int grow(struct sof_hmap *m)
{
	uint32_t ncap = m->cap ? m->cap * 2 : 16;
	struct sof_hmap_ent *old = m->ents, *ne;
	uint32_t ocap = m->cap;

	if (m->count * 2 < m->cap)
		ncap = m->cap; /* only tombstones: rehash in place size */
	ne = calloc(ncap, sizeof(*ne));
	if (!ne)
		return -ENOMEM;
	m->ents = ne;
	m->cap = ncap;
	m->used = m->count;
	for (uint32_t i = 0; i < ocap; i++) {
		uint64_t k = old[i].key;

		if (k == 0 || k == SOF_HMAP_TOMB)
			continue;
		for (uint32_t j = hash64(k) & (ncap - 1);; j = (j + 1) & (ncap - 1)) {
			if (!ne[j].key) {
				ne[j] = old[i];
				break;
			}
		}
	}
	free(old);
	return 0;
}

int sof_hmap_put(struct sof_hmap *m, uint64_t key, void *val)
{
	uint32_t tomb = UINT32_MAX;

	if (key == 0 || key == SOF_HMAP_TOMB)
		return -EINVAL;
	if ((m->used + 1) * 4 > m->cap * 3) {
		int err = grow(m);

		if (err)
			return err;
	}
	for (uint32_t j = hash64(key) & (m->cap - 1);; j = (j + 1) & (m->cap - 1)) {
		struct sof_hmap_ent *e = &m->ents[j];

		if (e->key == key) {
			e->val = val;
			return 0;
		}
		if (e->key == SOF_HMAP_TOMB && tomb == UINT32_MAX)
			tomb = j;
		if (e->key == 0) {
			if (tomb != UINT32_MAX) {
				e = &m->ents[tomb];
			} else {
				m->used++;
			}
			e->key = key;
			e->val = val;
			m->count++;
			return 0;
		}
	}
}

static struct sof_hmap_ent *find(const struct sof_hmap *m, uint64_t key)
{
	if (!m->cap || key == 0 || key == SOF_HMAP_TOMB)
		return NULL;
	for (uint32_t j = hash64(key) & (m->cap - 1);; j = (j + 1) & (m->cap - 1)) {
		struct sof_hmap_ent *e = &m->ents[j];

		if (e->key == key)
			return e;
		if (e->key == 0)
			return NULL;
	}
}

void *sof_hmap_get(const struct sof_hmap *m, uint64_t key)
{
	struct sof_hmap_ent *e = find(m, key);

	return e ? e->val : NULL;
}

void *sof_hmap_del(struct sof_hmap *m, uint64_t key)
{
	struct sof_hmap_ent *e = find(m, key);
	void *v;

	if (!e)
		return NULL;
	v = e->val;
	e->key = SOF_HMAP_TOMB;
	e->val = NULL;
	m->count--;
	return v;
}

void sof_hmap_free(struct sof_hmap *m)
{
	free(m->ents);
	m->ents = NULL;
	m->cap = m->count = m->used = 0;
}

void *sof_hmap_next(const struct sof_hmap *m, uint32_t *pos, uint64_t *key)
{
	for (; *pos < m->cap; (*pos)++) {
		struct sof_hmap_ent *e = &m->ents[*pos];

		if (e->key && e->key != SOF_HMAP_TOMB) {
			(*pos)++;
			if (key)
				*key = e->key;
			return e->val;
		}
	}
	return NULL;
}
