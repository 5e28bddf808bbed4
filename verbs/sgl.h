/*
 * Scatter/gather lists of the same-host executor: the pieces of memory a
 * message is read from or written into, already resolved to addresses of
 * this process (its own registered memory, or another process's mapped by
 * remote_cache.c), and the copy between two such lists.
 *
 * Everything here runs per message and per piece, so it is inline: the
 * usual case (one piece on each side) is a single memcpy with no call.
 */
#ifndef SOFV_SGL_H
#define SOFV_SGL_H

#include "sofv.h"

#include <stdint.h>
#include <string.h>

struct sg {
	uint8_t *p;
	uint64_t len;
};

#define SG_MAX (SOFV_MAX_SGE + 2)

struct sglist {
	int n;
	uint64_t total;
	struct sg e[SG_MAX];
	struct sofv_rmr *refs[SG_MAX]; /* references to drop */
	int nrefs;
};

/* l holds the one piece [p, p+len). Not an initializer: that would zero the
 * whole list (SG_MAX pieces) on every message. */
static inline void sgl_one(struct sglist *l, uint8_t *p, uint64_t len)
{
	l->n = 1;
	l->total = len;
	l->e[0].p = p;
	l->e[0].len = len;
	l->nrefs = 0;
}

static inline void sgl_add(struct sglist *l, uint8_t *p, uint64_t len)
{
	if (!len)
		return;
	l->e[l->n].p = p;
	l->e[l->n].len = len;
	l->n++;
	l->total += len;
}

/* sg_copy of lists in pieces. */
static inline void sg_copy_pieces(const struct sglist *dst, uint64_t skip, const struct sglist *src)
{
	int di = 0, si = 0;
	uint64_t doff = 0, soff = 0;

	while (di < dst->n && skip >= dst->e[di].len) {
		skip -= dst->e[di].len;
		di++;
	}
	doff = skip;
	while (di < dst->n && si < src->n) {
		uint64_t n = dst->e[di].len - doff;

		if (src->e[si].len - soff < n)
			n = src->e[si].len - soff;
		memcpy(dst->e[di].p + doff, src->e[si].p + soff, n);
		doff += n;
		soff += n;
		if (doff == dst->e[di].len) {
			di++;
			doff = 0;
		}
		if (soff == src->e[si].len) {
			si++;
			soff = 0;
		}
	}
}

/* Copy min(dst total, src total) bytes from src to dst, skipping skip bytes
 * of dst first. */
static inline void sg_copy(const struct sglist *dst, uint64_t skip, const struct sglist *src)
{
	if (dst->n == 1 && src->n == 1 && skip <= dst->e[0].len) { /* the usual case */
		uint64_t n = dst->e[0].len - skip;

		memcpy(dst->e[0].p + skip, src->e[0].p, n < src->e[0].len ? n : src->e[0].len);
		return;
	}
	sg_copy_pieces(dst, skip, src);
}

static inline void sg_write(const struct sglist *dst, uint64_t off, const void *buf, uint64_t len)
{
	struct sglist s;

	sgl_one(&s, (uint8_t *)buf, len);
	sg_copy(dst, off, &s);
}

#endif
