/*
 * What the IB CM protocol reports to the id layer, through the one
 * callback it was given at start-up (cma_ibcm_ops): events for an id's
 * user, which also move the id's RDMA CM state; connection requests,
 * which find a listener and make a child; a child the protocol could not
 * take up; and ids the protocol is done with (freed when their user is
 * gone, so a lingering id ends here).
 */
#include "cma.h"

#include <errno.h>

/* The RDMA CM state an event from the protocol leaves the id in;
 * CMA_NR: unchanged. */
static enum cma_state state_after(uint32_t event)
{
	switch (event) {
	case RDMA_CM_EVENT_ESTABLISHED:
		return CMA_ESTABLISHED;
	case RDMA_CM_EVENT_DISCONNECTED:
		return CMA_DISCONNECT;
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_UNREACHABLE:
		return CMA_ROUTE_RESOLVED; /* the user may connect again */
	default:
		return CMA_NR;
	}
}

static void user_event(struct cm_id *id, const struct ibcm_event *ev)
{
	enum cma_state s = state_after(ev->event);

	if (s != CMA_NR)
		cma_set_state(id, s);
	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
		cma_event_conn_req(id, ev->param);
	else if (ev->ud)
		cma_event_ud(id, ev->event, ev->status, ev->param, ev->qpn, ev->qkey);
	else
		cma_event(id, ev->event, ev->status, ev->param);
}

static int ibcm_event(struct cm_id *id, struct ibcm_event *ev)
{
	switch (ev->type) {
	case IBCM_EV_USER:
		user_event(id, ev);
		return 0;
	case IBCM_EV_REQ:
		return cma_req_arrived(ev);
	case IBCM_EV_DISCARD:
		cma_child_answered(id);
		cma_free(id);
		return 0;
	case IBCM_EV_DONE:
		if (!id->ch)
			cma_free(id);
		return 0;
	}
	return -EINVAL;
}

const struct ibcm_ops cma_ibcm_ops = {
    .event = ibcm_event,
};
