/*
 * Events to a channel: each is one struct sof_cm_event on the channel's
 * own socket (SOCK_SEQPACKET). When the socket is full the events wait
 * in order on the channel, up to a bound, and go out as it drains
 * (EPOLLOUT); a lingering id (no channel) has nobody to tell.
 */
#include "cma.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct queued_event {
	struct sof_link link;
	struct sof_cm_event ev;
};

void cma_channel_flush(struct cm_channel *ch)
{
	bool want_out = false;

	while (!sof_list_empty(&ch->queue)) {
		struct queued_event *q =
		    sof_container_of(ch->queue.next, struct queued_event, link);
		int err = cm_host->ops->conn_send(ch->c, &q->ev, sizeof(q->ev));

		if (err == -EAGAIN) {
			want_out = true;
			break;
		}
		/* sent, or the channel is going: either way it is done */
		sof_list_del(&q->link);
		ch->queued--;
		free(q);
	}
	cm_host->ops->conn_poll(ch->c, want_out);
}

void cma_channel_send(struct cm_channel *ch, const struct sof_cm_event *ev)
{
	struct queued_event *q;

	if (sof_list_empty(&ch->queue) &&
	    cm_host->ops->conn_send(ch->c, ev, sizeof(*ev)) != -EAGAIN)
		return;
	if (ch->queued >= CMA_MAX_QUEUED) {
		cm_log("cm: channel %u not reading its events: one dropped", ch->handle);
		return;
	}
	q = malloc(sizeof(*q));
	if (!q)
		return;
	q->ev = *ev;
	sof_list_add(ch->queue.prev, &q->link); /* at the tail */
	ch->queued++;
	cma_channel_flush(ch);
}

void cma_channel_drop_queue(struct cm_channel *ch)
{
	while (!sof_list_empty(&ch->queue)) {
		struct queued_event *q =
		    sof_container_of(ch->queue.next, struct queued_event, link);

		sof_list_del(&q->link);
		free(q);
	}
}

void cma_event_init(struct sof_cm_event *ev, const struct cm_id *id, uint32_t event, int status,
		    const struct sof_cm_param *p)
{
	memset(ev, 0, sizeof(*ev));
	ev->id = id->handle;
	ev->event = event;
	ev->status = status;
	if (p)
		ev->param = *p;
}

void cma_event(struct cm_id *id, uint32_t event, int status, const struct sof_cm_param *p)
{
	struct sof_cm_event ev;

	if (!id->ch)
		return;
	cma_event_init(&ev, id, event, status, p);
	cma_channel_send(id->ch, &ev);
}

void cma_event_set_ah(struct sof_cm_event *ev, const struct cm_id *id)
{
	memcpy(ev->ah_dgid, id->dgid, 16);
	ev->ah_sgid_index = (uint8_t)id->sgid_index;
	ev->ah_hop_limit = CMA_HOP_LIMIT;
	ev->ah_traffic_class = id->tos;
	if (id->ib) {
		/* the InfiniBand port: the peer by LID, as its path says */
		ev->ah_no_grh = 1;
		ev->ah_dlid = id->dlid;
		ev->ah_sl = id->sl;
	}
}

void cma_event_ud(struct cm_id *id, uint32_t event, int status, const struct sof_cm_param *p,
		  uint32_t qpn, uint32_t qkey)
{
	struct sof_cm_event ev;

	if (!id->ch)
		return;
	cma_event_init(&ev, id, event, status, p);
	ev.param.qp_num = qpn;
	ev.param.qkey = qkey;
	cma_event_set_ah(&ev, id);
	cma_channel_send(id->ch, &ev);
}

void cma_event_conn_req(struct cm_id *child, const struct sof_cm_param *p)
{
	struct sof_cm_event ev;

	cma_event_init(&ev, child, RDMA_CM_EVENT_CONNECT_REQUEST, 0, p);
	ev.listen_id = child->listener->handle;
	cma_event_set_ah(&ev, child);
	cma_fill_query(child, &ev.q);
	cma_channel_send(child->ch, &ev);
}
