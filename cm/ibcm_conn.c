/*
 * The IB CM protocol's base: a connection's state (IBA 12.9.6) and every
 * change of it, traced by name; the messages it keeps (the last request,
 * sent again when its timer runs out; the last reply, sent again when the
 * peer repeats itself, 12.9.6); its deadline on the protocol's timerfd;
 * and the one callback through which the protocol reports to the id
 * layer (struct ibcm_ops).
 */
#include "ibcm_int.h"

#include <errno.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

struct ibcm_state ibcm;
bool cm_tracing;

uint64_t ibcm_iba_time_ns(uint8_t t) { return 4096ull << (t > 31 ? 31 : t); }

/* The peer's time to answer plus a round trip of the path, as Linux's
 * ib_cm times a REQ: 2 x PacketLifeTime + the response timeout */
uint64_t ibcm_answer_ns(const struct cm_id *id, uint8_t peer_timeout)
{
	return ibcm_iba_time_ns(peer_timeout) + 2 * ibcm_iba_time_ns(cm_pkt_life(id));
}

uint32_t ibcm_new_comm_id(void)
{
	for (;;) {
		uint32_t c = sof_random32();

		if (c && !sof_hmap_get(&ibcm.comm, c))
			return c;
	}
}

void ibcm_set_state(struct cm_id *id, enum cm_state s)
{
	if (id->state != s)
		cm_trace("cm id %u comm %08x: %s -> %s", id->handle, id->local_comm_id,
			 cm_state_name(id->state), cm_state_name(s));
	if (id->state == CM_TIMEWAIT)
		cm_counts.timewait--;
	if (s == CM_TIMEWAIT)
		cm_counts.timewait++;
	/* a repeated SIDR_REQ is recognised among the ids still answering */
	if (id->state == CM_SIDR_REQ_RCVD)
		sof_list_del(&id->sidr_link);
	if (s == CM_SIDR_REQ_RCVD)
		sof_list_add(&ibcm.sidr_rcvd, &id->sidr_link);
	id->state = s;
}

void ibcm_peer_init(struct cm_id *id)
{
	memset(&id->peer, 0, sizeof(id->peer));
	memcpy(id->peer.sgid, id->sgid, 16);
	memcpy(id->peer.dgid, id->dgid, 16);
	id->peer.remote_qpn = SOF_GSI_QPN;
	id->peer.remote_qkey = SOF_GSI_QKEY;
	id->peer.pkey = id->pkey; /* the CM's MADs go in the id's partition */
	id->peer.traffic_class = id->tos;
	id->peer.hop_limit = 64;
	if (id->ib) {
		/* the InfiniBand port: the peer's CM by its LID, no GRH */
		id->peer.ib = true;
		id->peer.no_grh = true;
		id->peer.lid = id->dlid;
		id->peer.sl = id->sl;
	}
}

void ibcm_mad_hdr(uint8_t *mad, uint16_t attr, uint32_t attr_mod)
{
	struct sof_mad_hdr h = {
	    .base_version = SOF_MAD_BASE_VERSION,
	    .mgmt_class = SOF_MGMT_CLASS_CM,
	    .class_version = CMW_CLASS_VERSION,
	    .method = SOF_MAD_METHOD_SEND,
	    .tid = sofd_mad_new_tid(ibcm.agent),
	    .attr_id = attr,
	    .attr_mod = attr_mod,
	};

	memset(mad, 0, SOF_MAD_LEN);
	sof_mad_hdr_put(mad, &h);
}

int ibcm_send_request(struct cm_id *id, uint64_t timeout_ns, uint32_t retries)
{
	id->msg_valid = true;
	id->timeout_ns = timeout_ns;
	id->retries_left = retries;
	ibcm_timer_set(id, timeout_ns);
	/* a MAD lost on the wire is what the timer is for */
	(void)sofd_mad_send(&id->peer, id->msg);
	return 0;
}

void ibcm_send_reply(struct cm_id *id)
{
	id->reply_valid = true;
	(void)sofd_mad_send(&id->peer, id->reply);
}

void ibcm_send_stateless(const struct sofd_mad_addr *from, const uint8_t *mad)
{
	struct sofd_mad_addr to = *from;

	to.remote_qpn = SOF_GSI_QPN;
	to.remote_qkey = SOF_GSI_QKEY;
	(void)sofd_mad_send(&to, mad);
}

void ibcm_enter_timewait(struct cm_id *id)
{
	id->msg_valid = false;
	ibcm_set_state(id, CM_TIMEWAIT);
	ibcm_timer_set(id, CM_TIMEWAIT_NS);
}

void ibcm_id_init(struct cm_id *id)
{
	sof_list_init(&id->timer_link);
	sof_list_init(&id->sidr_link);
}

void ibcm_release(struct cm_id *id)
{
	ibcm_timer_set(id, 0);
	if (id->local_comm_id && sof_hmap_get(&ibcm.comm, id->local_comm_id) == id)
		sof_hmap_del(&ibcm.comm, id->local_comm_id);
	if (id->sidr_request_id && sof_hmap_get(&ibcm.sidr, id->sidr_request_id) == id)
		sof_hmap_del(&ibcm.sidr, id->sidr_request_id);
	if (id->state == CM_TIMEWAIT)
		cm_counts.timewait--;
	sof_list_del(&id->sidr_link);
}

/* ---- the callback up ------------------------------------------------------------------ */

int ibcm_up(struct cm_id *id, struct ibcm_event *ev) { return ibcm.ops->event(id, ev); }

void ibcm_report(struct cm_id *id, uint32_t event, int status, const struct sof_cm_param *p)
{
	struct ibcm_event ev = {.type = IBCM_EV_USER, .event = event, .status = status, .param = p};

	ibcm_up(id, &ev);
}

void ibcm_done(struct cm_id *id)
{
	struct ibcm_event ev = {.type = IBCM_EV_DONE};

	ibcm_up(id, &ev);
}

/* ---- deadlines ------------------------------------------------------------------------- */

/* The timerfd to the earliest deadline (disarmed when there is none). */
void ibcm_timer_arm(void)
{
	struct itimerspec its = {0};
	uint64_t next = UINT64_MAX, now;
	struct sof_link *l;

	for (l = ibcm.timers.next; l != &ibcm.timers; l = l->next) {
		struct cm_id *id = sof_container_of(l, struct cm_id, timer_link);

		if (id->timer_ns < next)
			next = id->timer_ns;
	}
	if (next == ibcm.timer_armed_ns)
		return;
	ibcm.timer_armed_ns = next;
	if (next != UINT64_MAX) {
		now = sof_now_ns();
		next = next > now ? next - now : 1;
		its.it_value.tv_sec = (time_t)(next / 1000000000u);
		its.it_value.tv_nsec = (long)(next % 1000000000u);
	}
	timerfd_settime(ibcm.timer_fd, 0, &its, NULL);
}

void ibcm_timer_set(struct cm_id *id, uint64_t ns)
{
	if (ns) {
		id->timer_ns = sof_now_ns() + ns;
		if (sof_list_empty(&id->timer_link))
			sof_list_add(&ibcm.timers, &id->timer_link);
	} else {
		id->timer_ns = 0;
		sof_list_del(&id->timer_link);
	}
	ibcm_timer_arm();
}

void ibcm_timer_take_due(uint64_t now, struct sof_link *due)
{
	struct sof_link *l;

	for (l = ibcm.timers.next; l != &ibcm.timers;) {
		struct cm_id *id = sof_container_of(l, struct cm_id, timer_link);

		l = l->next;
		if (id->timer_ns <= now) {
			sof_list_del(&id->timer_link);
			sof_list_add(due, &id->timer_link);
		}
	}
}

int ibcm_timer_init(void)
{
	sof_list_init(&ibcm.timers);
	sof_list_init(&ibcm.sidr_rcvd);
	ibcm.timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (ibcm.timer_fd < 0)
		return -errno;
	return cm_host->ops->timer_poll(ibcm.timer_fd);
}
