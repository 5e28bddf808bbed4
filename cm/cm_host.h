/*
 * The connection manager's interface to its host (the daemon fills it in
 * daemon/cm_host.c), as transport/tp.h is the engine's: cm/ names no
 * daemon type or global. The host hands over, at cm_init, a table of
 * operations and what cm reads or counts into (the device identity, the
 * transport's counters and drops); cm owns its counts (STATUS reads
 * them), its timerfd (the host polls it and calls cm_timer_event) and the
 * request and reply of its SOF_OP_CM_* ops.
 *
 * A connection of the host (a library socket) is a struct cm_conn the
 * host embeds in its own and passes to cm; cm writes a channel's events
 * to it through the host and keeps there the channel it is, if any.
 * Single-threaded, like the daemon: no locks.
 */
#ifndef CM_HOST_H
#define CM_HOST_H

#include "sof_proto.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cm_channel;

/* cm's part of a host connection. */
struct cm_conn {
	struct cm_channel *chan; /* the rdma_cm event channel it is, or NULL */
};

struct cm_host_ops {
	void (*log)(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));
	/* Whether two connections belong to the same process and user (an
	 * id or channel is touched only by its owner's requests). */
	bool (*conn_same_owner)(const struct cm_conn *a, const struct cm_conn *b);
	/* Whether c is a device context (said HELLO): no channel then. */
	bool (*conn_is_context)(const struct cm_conn *c);
	/* One event record to c's socket: 0, -EAGAIN when it is full, or
	 * -errno (the connection is going). */
	int (*conn_send)(struct cm_conn *c, const void *buf, size_t len);
	/* Poll c for reading, and for writing when want_out (queued events). */
	void (*conn_poll)(struct cm_conn *c, bool want_out);
	/* Poll fd (cm's timerfd) and call cm_timer_event when readable. 0 or
	 * -errno. */
	int (*timer_poll)(int fd);
	/* The InfiniBand port (sofib0) as it is now: 0 and *p filled when the
	 * host has one, -ENODEV when not. */
	int (*ib_port)(struct sof_ib_port *p);
};

struct cm_host {
	const struct cm_host_ops *ops;
	/* the device: GID table, node GUID, active MTU (kept current by the
	 * host) */
	const struct sof_devinfo *dev;
	/* where cm counts retransmissions (SOF_CNT_*) and dropped MADs
	 * (SOF_DROP_*), next to the transport's */
	uint64_t *counters;
	uint64_t *drops;
};

/* What cm holds, daemon-wide (STATUS). */
struct cm_counts {
	uint32_t channels, ids, listeners, timewait;
};

extern struct cm_counts cm_counts;

/* A SOF_OP_CM_* request: its payload (copied and zero-padded to the
 * largest request by the host) and the connection it came on. */
struct cm_request {
	struct cm_conn *c;
	uint32_t op;
	const void *data;
	size_t len;
	int nfds; /* descriptors that came with it: none is taken */
};

/* The answer: rp->len bytes at rp->data (cm's buffer), no descriptors. */
struct cm_reply {
	void *data;
	size_t len;
};

/* Start the CM: the id layer, the protocol's MAD agent on QP1 and its
 * timerfd (given to host->ops->timer_poll). host must outlive cm. 0 or
 * -errno. */
int cm_init(const struct cm_host *host);
/* cm's timerfd is readable. */
void cm_timer_event(void);
/* One SOF_OP_CM_* request (sof_cm_proto.h). 0 or -errno. */
int cm_op(const struct cm_request *rq, struct cm_reply *rp);
/* c closes: if it is an event channel, its ids go (DREQ, REJ to peers). */
void cm_conn_closed(struct cm_conn *c);
/* c's socket can take more: send the events that waited. */
void cm_conn_writable(struct cm_conn *c);

#endif
