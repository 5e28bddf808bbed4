/*
 * What the IB CM protocol does when a connection's deadline passes: the
 * request it keeps (REQ, REP, DREQ, SIDR_REQ) is sent again, up to the
 * retry count (12.9.6); after the last try the attempt ends (REJ
 * "timeout" for a REQ or REP, DISCONNECTED and TIMEWAIT for a DREQ,
 * UNREACHABLE for a SIDR_REQ); and the end of TIMEWAIT frees the
 * communication ID (12.9.7). The daemon's timerfd event comes here.
 */
#include "ibcm_int.h"

#include <errno.h>
#include <unistd.h>

void ibcm_timeout(struct cm_id *id)
{
	switch (id->state) {
	case CM_REQ_SENT:
	case CM_MRA_REQ_RCVD:
	case CM_REP_SENT:
	case CM_DREQ_SENT:
	case CM_SIDR_REQ_SENT:
		if (id->msg_valid && id->retries_left) {
			id->retries_left--;
			cm_host->counters[SOF_CNT_retransmits]++;
			cm_trace("cm id %u comm %08x: %s sent again, %u tries left", id->handle,
				 id->local_comm_id, cm_state_name(id->state), id->retries_left);
			ibcm_timer_set(id, id->timeout_ns);
			(void)sofd_mad_send(&id->peer, id->msg);
			return;
		}
		break;
	case CM_TIMEWAIT:
		/* 12.9.7: the IDs may be used again */
		ibcm_set_state(id, CM_IDLE);
		if (sof_hmap_get(&ibcm.comm, id->local_comm_id) == id)
			sof_hmap_del(&ibcm.comm, id->local_comm_id);
		id->local_comm_id = 0;
		ibcm_done(id);
		return;
	default:
		return;
	}
	/* out of retries */
	id->msg_valid = false;
	switch (id->state) {
	case CM_DREQ_SENT:
		ibcm_report(id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL);
		ibcm_enter_timewait(id);
		return;
	case CM_SIDR_REQ_SENT:
		ibcm_set_state(id, CM_IDLE);
		ibcm_report(id, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, NULL);
		break;
	default:
		/* REQ or REP unanswered: 12.9.6 says REJ "timeout" */
		cm_send_rej(id, CMW_REJ_TIMEOUT, NULL, 0);
		ibcm_report(id, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, NULL);
		break;
	}
	ibcm_done(id);
}

void ibcm_timers_fire(uint64_t now)
{
	struct sof_link due;

	sof_list_init(&due);
	ibcm_timer_take_due(now, &due);
	while (!sof_list_empty(&due)) {
		struct cm_id *id = sof_container_of(due.next, struct cm_id, timer_link);

		sof_list_del(&id->timer_link);
		id->timer_ns = 0;
		ibcm_timeout(id); /* may free id */
	}
	ibcm_timer_arm();
}

void cm_timer_event(void)
{
	uint64_t buf, now = sof_now_ns();

	if (read(ibcm.timer_fd, &buf, sizeof(buf)) < 0) {
		/* spurious: re-armed below */
	}
	ibcm.timer_armed_ns = 0;
	ibcm_timers_fire(now);
}
