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
	sm->slot[slot] = rq;
	sm->inflight++;
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
	sm->slot[slot] = NULL;
	sm->inflight--;
	return rq;
}

void sm_io_pump(struct sm *sm)
{
	uint64_t now = sm_now_us();
	unsigned i;

	for (i = 0; i < sm->window && sm->inflight; i++) {
		struct sm_req *rq = sm->slot[i];

		if (rq && rq->deadline < now) {
			sm->slot[i] = NULL;
			sm->inflight--;
			retry(sm, rq);
		}
	}
	while (sm->qhead && sm->inflight < sm->window) {
		struct sm_req *rq = sm->qhead;

		sm->qhead = rq->next;
		if (!sm->qhead)
			sm->qtail = NULL;
		rq->next = NULL;
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
		sm->slot[rq->tid & 0x3ff] = rq;
		sm->inflight++;
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
		sm->slot[i] = NULL;
		sm->inflight--;
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
	sm->inflight = 0;
	while (sm->qhead) {
		struct sm_req *rq = sm->qhead;

		sm->qhead = rq->next;
		free(rq);
	}
	sm->qtail = NULL;
}
