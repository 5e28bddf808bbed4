/*
 * What every file of the library stands on: the library's lock
 * (sofcm_lock, sofcm.h says what it guards) and a channel's backlog, the
 * queue of events handed over from another channel (an id migrated) or
 * put back for another reader (a listener on another channel), read
 * before the channel's socket. Neutral: it calls no other file of the
 * library, so the channel, id and event files reach the lock and the
 * queue without calling each other.
 */
#include "sofcm.h"

#include <stdlib.h>

pthread_mutex_t sofcm_lock = PTHREAD_MUTEX_INITIALIZER;

void sofcm_channel_push(struct sofcm_channel *chan, const struct sof_cm_event *ev)
{
	struct sofcm_pending *p = malloc(sizeof(*p));

	if (!p)
		return; /* lost, as an event the daemon could not queue */
	p->next = NULL;
	p->ev = *ev;
	pthread_mutex_lock(&chan->lock);
	if (chan->backlog_tail)
		chan->backlog_tail->next = p;
	else
		chan->backlog = p;
	chan->backlog_tail = p;
	pthread_mutex_unlock(&chan->lock);
}

bool sofcm_channel_pop(struct sofcm_channel *chan, struct sof_cm_event *ev)
{
	struct sofcm_pending *p;

	pthread_mutex_lock(&chan->lock);
	p = chan->backlog;
	if (p) {
		chan->backlog = p->next;
		if (!chan->backlog)
			chan->backlog_tail = NULL;
	}
	pthread_mutex_unlock(&chan->lock);
	if (!p)
		return false;
	*ev = p->ev;
	free(p);
	return true;
}
