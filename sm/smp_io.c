/*
 * The SMP engine: requests queue here and leave through the umad port at
 * most `window` at a time; each carries a TID whose low bits name its slot
 * (the kernel or our daemon puts the agent's number in the upper 32 bits,
 * IBA 13.4.6.4), so a response finds its request in O(1) and one whose
 * TID names no request in flight (late, duplicated, forged) is dropped.
 * A request is sent with umad's own time-out and no retries, and timed
 * here as well (libumad2sim reports no time-outs): after `retries` more
 * tries it completes with -ETIMEDOUT. Responses are checked before use:
 * length, class, method GetResp, the attribute asked for.
 *
 * Background requests (the QoS pass's Sets) give way to the SA: while it
 * is busy they leave one at a time and one per SM_BG_GAP_US, the others
 * pass them in the queue. A query answered one at a time crosses the
 * fabric process behind whatever SMPs are in flight there, and a window
 * of 32 QoS Sets (each a directed route of several hops) cost the SA a
 * third of its rate in the second after SUBNET UP.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/umad.h>

#include "sm.h"
#include "smp.h"

#define UMAD_BUF (sizeof(struct ib_user_mad) + 256)

static struct sm_req *req_new(struct sm *sm, uint8_t method, uint16_t attr, uint32_t mod,
			      const uint8_t *data, bool dr, sm_done_fn *done)
{
	struct sm_req *rq = calloc(1, sizeof(*rq));

	if (!rq) {
		sm_log(sm, 0, "out of memory for an SMP");
		return NULL;
	}
	/* the subnet's M_Key on every SMP (IBA 14.2.4): a port that has it
	 * takes Sets, and at protection level 2 and 3 Gets, only with it */
	sof_smp_init(rq->mad, dr, method, attr, mod, 0, sm->sn.m_key);
	if (data)
		memcpy(rq->mad + SOF_SMP_OFF_DATA, data, SOF_SMP_DATA_LEN);
	rq->dr = dr;
	rq->done = done;
	if (sm->qtail)
		sm->qtail->next = rq;
	else
		sm->qhead = rq;
	sm->qtail = rq;
	return rq;
}

struct sm_req *sm_smp_dr(struct sm *sm, const uint8_t *path, unsigned hops, uint8_t method,
			 uint16_t attr, uint32_t mod, const uint8_t *data, sm_done_fn *done)
{
	struct sm_req *rq;

	if (hops > SM_MAX_DR_HOPS)
		return NULL;
	rq = req_new(sm, method, attr, mod, data, true, done);
	if (!rq)
		return NULL;
	rq->dlid = SOF_LID_PERMISSIVE;
	rq->mad[SOF_SMP_OFF_HOP_CNT] = (uint8_t)hops;
	/* initial path: entry 0 unused, 1..hops the output ports (IBA 14.2.2) */
	memcpy(rq->mad + SOF_SMP_OFF_INIT_PATH, path, hops + 1u);
	rq->mad[SOF_SMP_OFF_INIT_PATH] = 0;
	return rq;
}

struct sm_req *sm_smp_lid(struct sm *sm, uint16_t dlid, uint8_t method, uint16_t attr,
			  uint32_t mod, const uint8_t *data, sm_done_fn *done)
{
	struct sm_req *rq = req_new(sm, method, attr, mod, data, false, done);

	if (rq)
		rq->dlid = dlid;
	return rq;
}

/* rq in flight in slot / out of it */
static void slot_put(struct sm *sm, unsigned slot, struct sm_req *rq)
{
	sm->slot[slot] = rq;
	sm->inflight++;
	sm->inflight_bg += rq->bg;
}

static struct sm_req *slot_clear(struct sm *sm, unsigned slot)
{
	struct sm_req *rq = sm->slot[slot];

	sm->slot[slot] = NULL;
	sm->inflight--;
	sm->inflight_bg -= rq->bg;
	return rq;
}

static int send_one(struct sm *sm, struct sm_req *rq)
{
	uint8_t buf[UMAD_BUF];
	unsigned slot;
	int agent = rq->dr ? sm->agent_dr : sm->agent_lid;

	/* a free slot: the window is below its size, so one exists */
	for (slot = sm->tid_seq % sm->window; sm->slot[slot]; slot = (slot + 1) % sm->window)
		;
	sm->tid_seq++;
	rq->tid = (sm->tid_seq << 10 & 0x7ffffc00u) | slot;
	sof_put64(rq->mad + SOF_SMP_OFF_TID, rq->tid);
	memset(buf, 0, sizeof(buf));
	/* the key of the port it is for (mkey.c) */
	sof_put64(rq->mad + SOF_SMP_OFF_MKEY, sm_mkey_for(sm, rq));
	memcpy(umad_get_mad(buf), rq->mad, 256);
	umad_set_addr(buf, rq->dlid, 0, 0, 0);
	rq->tries++;
	rq->deadline = sm_now_us() + (uint64_t)sm->timeout_ms * 1500;
	if (umad_send(sm->fd, agent, buf, 256, (int)sm->timeout_ms, 0) < 0) {
		sm_log(sm, 1, "umad_send failed");
		return -EIO;
	}
	slot_put(sm, slot, rq);
	sm->smps_sent++;
	return 0;
}

static void complete(struct sm *sm, struct sm_req *rq, int err, const uint8_t *mad)
{
	rq->done(sm, rq, err, mad);
	free(rq);
}

static void requeue_front(struct sm *sm, struct sm_req *rq)
{
	rq->next = sm->qhead;
	sm->qhead = rq;
	if (!sm->qtail)
		sm->qtail = rq;
}

/* A try of rq (already out of its slot) failed: again, or give up */
static void retry(struct sm *sm, struct sm_req *rq)
{
	sm->smps_timeout++;
	if (rq->tries > sm->retries) {
		complete(sm, rq, -ETIMEDOUT, NULL);
		return;
	}
	requeue_front(sm, rq);
}

static struct sm_req *take_slot(struct sm *sm, uint32_t tid)
{
	unsigned slot = tid & 0x3ff;
	struct sm_req *rq;

	if (slot >= sm->window)
		return NULL;
	rq = sm->slot[slot];
	if (!rq || rq->tid != tid)
		return NULL;
	return slot_clear(sm, slot);
}

void sm_io_hold_bg(struct sm *sm, uint64_t now) { sm->bg_hold_until = now + SM_SVC_HOLD_US; }

bool sm_io_bg_held(const struct sm *sm) { return sm_now_us() < sm->bg_hold_until; }

void sm_io_pump(struct sm *sm)
{
	uint64_t now = sm_now_us();
	bool hold = now < sm->bg_hold_until;
	struct sm_req **pp = &sm->qhead, *prev = NULL;
	unsigned i;

	for (i = 0; i < sm->window && sm->inflight; i++) {
		struct sm_req *rq = sm->slot[i];

		if (rq && rq->deadline < now)
			retry(sm, slot_clear(sm, i));
	}
	while (*pp && sm->inflight < sm->window) {
		struct sm_req *rq = *pp;

		/* held back: the requests behind it go first */
		if (rq->bg && hold && (sm->inflight_bg || now < sm->bg_next)) {
			prev = rq;
			pp = &rq->next;
			continue;
		}
		*pp = rq->next;
		if (sm->qtail == rq)
			sm->qtail = prev;
		rq->next = NULL;
		if (rq->bg && hold)
			sm->bg_next = now + SM_BG_GAP_US;
		if (send_one(sm, rq)) {
			rq->tries = sm->retries + 1;
			retry(sm, rq);
		}
	}
}

bool sm_io_idle(const struct sm *sm)
{
	return !sm->inflight && !sm->qhead;
}

unsigned sm_io_queued(const struct sm *sm)
{
	const struct sm_req *rq;
	unsigned n = 0;

	for (rq = sm->qhead; rq; rq = rq->next)
		n++;
	return n;
}

void sm_io_input(struct sm *sm, int agent, void *umad, int len)
{
	const uint8_t *mad = umad_get_mad(umad);
	int status = umad_status(umad);
	struct sm_req *rq;
	uint16_t st;

	if (len < 24) /* the MAD's length, as umad_recv gives it */
		return;
	rq = take_slot(sm, (uint32_t)sof_get64(mad + SOF_SMP_OFF_TID));
	if (!rq) {
		sm->smps_dropped++;
		return;
	}
	if (status) { /* the send timed out (ETIMEDOUT) or failed */
		retry(sm, rq);
		return;
	}
	if (len < 256 || mad[3] != SOF_METHOD_GET_RESP ||
	    mad[1] != rq->mad[1] ||
	    sof_get16(mad + SOF_SMP_OFF_ATTR_ID) != sof_get16(rq->mad + SOF_SMP_OFF_ATTR_ID)) {
		/* not the answer to this request: wait on for it */
		sm->smps_dropped++;
		slot_put(sm, rq->tid & 0x3ff, rq);
		return;
	}
	(void)agent;
	st = sof_get16(mad + SOF_SMP_OFF_STATUS) & 0x7fff;
	if (st) {
		sm->smps_error++;
		complete(sm, rq, -EPROTO, mad);
		return;
	}
	complete(sm, rq, 0, mad);
}

unsigned sm_io_drop(struct sm *sm, sm_done_fn *done, void (*dropped)(struct sm *, struct sm_req *))
{
	struct sm_req **pp = &sm->qhead, *rq, *last = NULL;
	unsigned n = 0, i;

	/* in flight: the slot freed, a late answer finds none (unmatched) */
	for (i = 0; i < SM_WINDOW_MAX; i++) {
		rq = sm->slot[i];
		if (!rq || rq->done != done)
			continue;
		slot_clear(sm, i);
		dropped(sm, rq);
		free(rq);
		n++;
	}

	while ((rq = *pp)) {
		if (rq->done != done) {
			last = rq;
			pp = &rq->next;
			continue;
		}
		*pp = rq->next;
		dropped(sm, rq);
		free(rq);
		n++;
	}
	sm->qtail = last;
	return n;
}

void sm_io_drop_all(struct sm *sm)
{
	unsigned i;

	for (i = 0; i < SM_WINDOW_MAX; i++) {
		free(sm->slot[i]);
		sm->slot[i] = NULL;
	}
	sm->inflight = sm->inflight_bg = 0;
	while (sm->qhead) {
		struct sm_req *rq = sm->qhead;

		sm->qhead = rq->next;
		free(rq);
	}
	sm->qtail = NULL;
}
