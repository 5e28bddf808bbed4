/*
 * A small open-addressing hash map from 64-bit keys to pointers, used for
 * object look-ups by handle, key or QP number. Not thread-safe: callers
 * hold the lock that protects the map. Key 0 is reserved (empty slot).
 */
#ifndef SOF_HMAP_H
#define SOF_HMAP_H

#include <stddef.h>
#include <stdint.h>

struct sof_hmap_ent {
	uint64_t key;   /* 0 = empty, SOF_HMAP_TOMB = deleted */
	void *val;
};

struct sof_hmap {
	struct sof_hmap_ent *ents;
	uint32_t cap;   /* power of two, or 0 */
	uint32_t count;
	uint32_t used;  /* count + tombstones */
};

#define SOF_HMAP_TOMB UINT64_MAX

/* Insert or replace. 0 or -ENOMEM / -EINVAL (reserved key). */
int sof_hmap_put(struct sof_hmap *m, uint64_t key, void *val);
void *sof_hmap_get(const struct sof_hmap *m, uint64_t key);
/* Remove; returns the value that was there or NULL. */
void *sof_hmap_del(struct sof_hmap *m, uint64_t key);
void sof_hmap_free(struct sof_hmap *m);
/* Iterate: *pos starts at 0; returns the next value or NULL at the end. */
void *sof_hmap_next(const struct sof_hmap *m, uint32_t *pos, uint64_t *key);

#endif
