/*
 * An intrusive doubly linked list, circular with a head node: the engine's
 * lists of QPs (every QP, those owing an ACK, those with a timer) and a
 * host's lists of its own objects. Neutral: no owner, no lock (the caller
 * serialises, as it does the objects it links).
 */
#ifndef SOF_LIST_H
#define SOF_LIST_H

#include <stdbool.h>

struct sof_link {
	struct sof_link *prev, *next;
};

static inline void sof_list_init(struct sof_link *h) { h->prev = h->next = h; }

static inline void sof_list_add(struct sof_link *h, struct sof_link *l)
{
	l->next = h->next;
	l->prev = h;
	h->next->prev = l;
	h->next = l;
}

/* Unlink l; it stays a valid empty list, so a second del does nothing. */
static inline void sof_list_del(struct sof_link *l)
{
	l->prev->next = l->next;
	l->next->prev = l->prev;
	l->prev = l->next = l;
}

static inline bool sof_list_empty(const struct sof_link *h) { return h->next == h; }

#endif
