/*
 * Scatter/gather lists of the same-host executor: the pieces of memory a
 * message is read from or written into, already resolved to addresses of
 * this process (its own registered memory, or another process's mapped by
 * remote_cache.c) or, for a region registered in place, to addresses of
 * its owner, and the copy between two such lists.
 *
 * Everything here runs per message and per piece, so it is inline: the
 * usual case (one piece on each side) is a single memcpy with no call.
 */
#ifndef SOFV_SGL_H
#define SOFV_SGL_H

#include "sofv.h"

#include <stdint.h>
#include <string.h>

struct sofv_rmr;

/* A piece: p in this process, or, with rm set, the address p in the
 * address space of rm's owner (a region registered in place), reached by
 * sofv_rmr_xfer. */
struct sg {
	uint8_t *p;
	uint64_t len;
	struct sofv_rmr *rm;
};

/* Copy n bytes between local and the owner of m's address remote, under
 * m's fence and only while m is valid (remote_cache.c). */
void sofv_rmr_xfer(struct sofv_rmr *m, uint8_t *remote, uint8_t *local, uint64_t n, bool to_remote);

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
	l->e[0].rm = NULL;
	l->nrefs = 0;
}

static inline void sgl_add(struct sglist *l, uint8_t *p, uint64_t len)
{
	if (!len)
		return;
	l->e[l->n].p = p;
	l->e[l->n].len = len;
	l->e[l->n].rm = NULL;
	l->n++;
	l->total += len;
}

/* memcpy with no call for a small message (the latency tests' 2 bytes):
 * two overlapping loads and stores of the largest width that fits. */
static inline __attribute__((always_inline)) void sgl_memcpy(void *d, const void *s, uint64_t n)
{
	uint8_t *dp = d;
	const uint8_t *sp = s;

	if (n > 16) {
		memcpy(d, s, n);
	} else if (n >= 8) {
		uint64_t a, b;

		__builtin_memcpy(&a, sp, 8);
		__builtin_memcpy(&b, sp + n - 8, 8);
		__builtin_memcpy(dp, &a, 8);
		__builtin_memcpy(dp + n - 8, &b, 8);
	} else if (n >= 4) {
		uint32_t a, b;

		__builtin_memcpy(&a, sp, 4);
		__builtin_memcpy(&b, sp + n - 4, 4);
		__builtin_memcpy(dp, &a, 4);
		__builtin_memcpy(dp + n - 4, &b, 4);
	} else if (n >= 2) {
		uint16_t a, b;

		__builtin_memcpy(&a, sp, 2);
		__builtin_memcpy(&b, sp + n - 2, 2);
		__builtin_memcpy(dp, &a, 2);
		__builtin_memcpy(dp + n - 2, &b, 2);
	} else if (n) {
		*dp = *sp;
	}
}

/* n bytes from piece s at soff to piece d at doff; one of them may be
 * another process's (never both: the executor copies from or into its own
 * memory). */
static inline void sg_piece(const struct sg *d, uint64_t doff, const struct sg *s, uint64_t soff,
			    uint64_t n)
{
	if (d->rm)
		sofv_rmr_xfer(d->rm, d->p + doff, s->p + soff, n, true);
	else if (s->rm)
		sofv_rmr_xfer(s->rm, s->p + soff, d->p + doff, n, false);
	else
		memcpy(d->p + doff, s->p + soff, n);
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
		sg_piece(&dst->e[di], doff, &src->e[si], soff, n);
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
	if (dst->n == 1 && src->n == 1 && skip <= dst->e[0].len && !dst->e[0].rm &&
	    !src->e[0].rm) { /* the usual case */
		uint64_t n = dst->e[0].len - skip;

		sgl_memcpy(dst->e[0].p + skip, src->e[0].p, n < src->e[0].len ? n : src->e[0].len);
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
