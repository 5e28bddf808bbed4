/*
 * Event channels. Each channel is its own connection to the daemon, which
 * said SOF_OP_CM_CHANNEL once and from then on only receives: every record
 * is one struct sof_cm_event. The channel's fd is that socket, so the
 * application may poll or epoll it, or make it non-blocking
 * (rdma_get_cm_event then fails with EAGAIN), as with rdma-core's
 * /dev/infiniband/rdma_cm file. Whoever calls rdma_get_cm_event (event.c)
 * reads the next record here (sofcm_channel_next) and event.c turns it
 * into a struct rdma_cm_event.
 *
 * An id that migrated takes the events the daemon queued on its old
 * channel before the move: rdma_migrate_id has the daemon write them to
 * the new channel again (id.c). One that another thread read from the old
 * channel meanwhile is handed over to the new channel's backlog (queue.c),
 * which is read first (the backlog does not make the new channel's fd
 * readable).
 */
#include "sof_client.h"
#include "sof_proto.h"
#include "sof_util.h"
#include "sofcm.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct sofcm_channel *sofcm_channel_create(void)
{
	struct sof_cm_channel_rep rep;
	struct sofcm_channel *chan;
	int sock, ret;

	chan = calloc(1, sizeof(*chan));
	if (!chan)
		return NULL;
	sock = sof_client_connect();
	if (sock < 0) {
		ret = sock;
		goto err_free;
	}
	ret = sof_client_rpc(sock, SOF_OP_CM_CHANNEL, NULL, 0, NULL, 0, &rep, sizeof(rep), NULL,
			     NULL);
	if (ret)
		goto err_close;
	chan->ch.fd = sock;
	chan->handle = rep.channel;
	pthread_mutex_init(&chan->lock, NULL);
	return chan;

err_close:
	close(sock);
err_free:
	free(chan);
	errno = ret == -EIO ? ENODEV : -ret;
	return NULL;
}

void sofcm_channel_destroy(struct sofcm_channel *chan)
{
	struct sofcm_pending *p, *next;

	if (!chan)
		return;
	for (p = chan->backlog; p; p = next) {
		next = p->next;
		free(p);
	}
	/* A thread still waits in rdma_get_cm_event: as on rdma-core's
	 * file, which stays open while a read holds it, that thread never
	 * returns; it keeps the channel, whose connection is shut down so
	 * that the daemon lets go of it (and the thread wakes to see it). */
	atomic_store(&chan->destroyed, true);
	if (atomic_load(&chan->readers)) {
		shutdown(chan->ch.fd, SHUT_RDWR);
		return;
	}
	/* The daemon destroys whatever ids are left on it. */
	close(chan->ch.fd);
	pthread_mutex_destroy(&chan->lock);
	free(chan);
}

/* The next record of the channel. 0 or -errno (-EAGAIN: non-blocking and
 * nothing there; -ENODEV: the daemon is gone). */
static int read_event(struct sofcm_channel *chan, struct sof_cm_event *ev)
{
	ssize_t n;

	if (sofcm_channel_pop(chan, ev))
		return 0;
	for (;;) {
		n = sof_recv_rec(chan->ch.fd, ev, sizeof(*ev), NULL, NULL);
		if (n == (ssize_t)sizeof(*ev))
			return 0;
		if (n == 0 || n == -ECONNRESET)
			return -ENODEV;
		if (n < 0 && n != -EMSGSIZE)
			return (int)n;
		/* a record of another size is not an event: skip it */
	}
}

/* The channel was destroyed while this thread read it (an event for an id
 * already gone woke it, or the destroy's shutdown did). rdma-core's reader
 * would still be in its read of the file, which no event reaches any
 * more: a blocking reader waits for ever, a non-blocking one finds
 * nothing (EAGAIN, the channel's fd stays open). */
static void destroyed_wait(struct sofcm_channel *chan)
{
	int fl = fcntl(chan->ch.fd, F_GETFL);

	if (fl >= 0 && (fl & O_NONBLOCK))
		return;
	for (;;)
		pause();
}

int sofcm_channel_next(struct sofcm_channel *chan, struct sof_cm_event *ev)
{
	int ret = read_event(chan, ev);

	if (ret && atomic_load(&chan->destroyed)) {
		destroyed_wait(chan);
		ret = -EAGAIN;
	}
	return ret;
}

SOFCM_EXPORT struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct sofcm_channel *chan = sofcm_channel_create();

	return chan ? &chan->ch : NULL;
}

SOFCM_EXPORT void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	if (channel)
		sofcm_channel_destroy(sofcm_chan(channel));
}

SOFCM_EXPORT const char *rdma_event_str(enum rdma_cm_event_type event)
{
	static const char *const names[] = {
	    [RDMA_CM_EVENT_ADDR_RESOLVED] = "RDMA_CM_EVENT_ADDR_RESOLVED",
	    [RDMA_CM_EVENT_ADDR_ERROR] = "RDMA_CM_EVENT_ADDR_ERROR",
	    [RDMA_CM_EVENT_ROUTE_RESOLVED] = "RDMA_CM_EVENT_ROUTE_RESOLVED",
	    [RDMA_CM_EVENT_ROUTE_ERROR] = "RDMA_CM_EVENT_ROUTE_ERROR",
	    [RDMA_CM_EVENT_CONNECT_REQUEST] = "RDMA_CM_EVENT_CONNECT_REQUEST",
	    [RDMA_CM_EVENT_CONNECT_RESPONSE] = "RDMA_CM_EVENT_CONNECT_RESPONSE",
	    [RDMA_CM_EVENT_CONNECT_ERROR] = "RDMA_CM_EVENT_CONNECT_ERROR",
	    [RDMA_CM_EVENT_UNREACHABLE] = "RDMA_CM_EVENT_UNREACHABLE",
	    [RDMA_CM_EVENT_REJECTED] = "RDMA_CM_EVENT_REJECTED",
	    [RDMA_CM_EVENT_ESTABLISHED] = "RDMA_CM_EVENT_ESTABLISHED",
	    [RDMA_CM_EVENT_DISCONNECTED] = "RDMA_CM_EVENT_DISCONNECTED",
	    [RDMA_CM_EVENT_DEVICE_REMOVAL] = "RDMA_CM_EVENT_DEVICE_REMOVAL",
	    [RDMA_CM_EVENT_MULTICAST_JOIN] = "RDMA_CM_EVENT_MULTICAST_JOIN",
	    [RDMA_CM_EVENT_MULTICAST_ERROR] = "RDMA_CM_EVENT_MULTICAST_ERROR",
	    [RDMA_CM_EVENT_ADDR_CHANGE] = "RDMA_CM_EVENT_ADDR_CHANGE",
	    [RDMA_CM_EVENT_TIMEWAIT_EXIT] = "RDMA_CM_EVENT_TIMEWAIT_EXIT",
	};

	if ((unsigned int)event < SOF_ARRAY_SIZE(names) && names[event])
		return names[event];
	return "UNKNOWN EVENT";
}
