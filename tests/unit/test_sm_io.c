/*
 * softofed-sm's SMP engine (sm/smp_io.c) on a stand-in umad port (the
 * umad_send of this file records what leaves) and a clock the test sets:
 * background requests (the QoS pass's Sets) go in queue order while no
 * service took a MAD; after one (sm_io_hold_bg, the SA busy) they leave
 * one at a time and one per SM_BG_GAP_US while the requests queued behind
 * them pass, and all of them again once SM_SVC_HOLD_US has gone by.
 */
#include "harness.h"

#include "sm.h"
#include "smp.h"

#include <infiniband/umad.h>
#include <stdlib.h>

static uint64_t NOW = 1000000;
static uint32_t SENT[64]; /* the AttributeModifier of each SMP sent */
static uint64_t SENT_TID[64];
static unsigned NSENT;

uint64_t sm_now_us(void) { return NOW; }
void sm_log(struct sm *sm, int level, const char *fmt, ...)
{
	(void)sm;
	(void)level;
	(void)fmt;
}
uint64_t sm_mkey_for(const struct sm *sm, const struct sm_req *rq)
{
	(void)sm;
	(void)rq;
	return 0;
}

void *umad_get_mad(void *umad) { return ((struct ib_user_mad *)umad)->data; }
int umad_status(void *umad) { return ((struct ib_user_mad *)umad)->status; }
int umad_set_addr(void *umad, int dlid, int dqp, int sl, int qkey)
{
	(void)umad;
	(void)dlid;
	(void)dqp;
	(void)sl;
	(void)qkey;
	return 0;
}
int umad_send(int portid, int agentid, void *umad, int length, int timeout_ms, int retries)
{
	const uint8_t *mad = umad_get_mad(umad);

	(void)portid;
	(void)agentid;
	(void)length;
	(void)timeout_ms;
	(void)retries;
	if (NSENT == 64)
		abort();
	SENT[NSENT] = sof_get32(mad + SOF_SMP_OFF_ATTR_MOD);
	SENT_TID[NSENT++] = sof_get64(mad + SOF_SMP_OFF_TID);
	return 0;
}

static unsigned DONE;
static void on_done(struct sm *sm, struct sm_req *rq, int err, const uint8_t *mad)
{
	(void)sm;
	(void)rq;
	(void)err;
	(void)mad;
	DONE++;
}

static struct sm SM;

/* a SwitchInfo Get with AttributeModifier mod: background (bg) or not */
static void queue(uint32_t mod, bool bg)
{
	static const uint8_t path[2] = {0, 1};
	struct sm_req *rq =
	    sm_smp_dr(&SM, path, 1, SOF_METHOD_GET, SOF_ATTR_SWITCH_INFO, mod, NULL, on_done);

	CHECK(rq != NULL);
	rq->bg = bg;
}

/* the GetResp of the i-th SMP sent */
static void answer(unsigned i)
{
	uint8_t buf[sizeof(struct ib_user_mad) + 256];
	uint8_t *mad = umad_get_mad(buf);

	memset(buf, 0, sizeof(buf));
	sof_smp_init(mad, true, SOF_METHOD_GET_RESP, SOF_ATTR_SWITCH_INFO, SENT[i], 0, 0);
	sof_put64(mad + SOF_SMP_OFF_TID, SENT_TID[i]);
	sm_io_input(&SM, 0, buf, 256);
}

static void reset(void)
{
	sm_io_drop_all(&SM);
	memset(&SM, 0, sizeof(SM));
	SM.window = 8;
	SM.timeout_ms = 200;
	SM.retries = 3;
	NSENT = DONE = 0;
}

TEST(fifo_unheld)
{
	reset();
	queue(1, true);
	queue(2, true);
	queue(3, false);
	sm_io_pump(&SM);
	CHECK_EQ(NSENT, 3);
	CHECK_EQ(SENT[0], 1);
	CHECK_EQ(SENT[1], 2);
	CHECK_EQ(SENT[2], 3);
	CHECK_EQ(SM.inflight_bg, 2);
	for (unsigned i = 0; i < 3; i++)
		answer(i);
	CHECK_EQ(DONE, 3);
	CHECK_EQ(SM.inflight_bg, 0);
	CHECK(sm_io_idle(&SM));
}

TEST(held_gives_way)
{
	reset();
	sm_io_hold_bg(&SM, NOW);
	CHECK(sm_io_bg_held(&SM));
	queue(1, true);
	queue(2, true);
	queue(3, true);
	queue(4, false);
	queue(5, false);
	sm_io_pump(&SM);
	/* one background SMP, then the others pass the ones held */
	CHECK_EQ(NSENT, 3);
	CHECK_EQ(SENT[0], 1);
	CHECK_EQ(SENT[1], 4);
	CHECK_EQ(SENT[2], 5);
	CHECK_EQ(SM.inflight_bg, 1);
	/* the tail is right after a request left from behind the held ones */
	queue(6, false);
	sm_io_pump(&SM);
	CHECK_EQ(NSENT, 4);
	CHECK_EQ(SENT[3], 6);
	/* its answer in: the next only SM_BG_GAP_US after the first left */
	answer(0);
	CHECK_EQ(SM.inflight_bg, 0);
	sm_io_pump(&SM);
	CHECK_EQ(NSENT, 4);
	NOW += SM_BG_GAP_US;
	sm_io_pump(&SM);
	CHECK_EQ(NSENT, 5);
	CHECK_EQ(SENT[4], 2);
	/* one in flight: none more, however long it takes */
	NOW += 10 * SM_BG_GAP_US;
	sm_io_pump(&SM);
	CHECK_EQ(NSENT, 5);
	/* the SA quiet for SM_SVC_HOLD_US: the rest at once */
	NOW += SM_SVC_HOLD_US;
	CHECK(!sm_io_bg_held(&SM));
	queue(7, true);
	sm_io_pump(&SM);
	CHECK_EQ(NSENT, 7);
	CHECK_EQ(SENT[5], 3);
	CHECK_EQ(SENT[6], 7);
	CHECK_EQ(SM.inflight_bg, 3);
	CHECK(SM.qhead == NULL && SM.qtail == NULL);
}

/* dropped or timed out, a background request leaves the count right */
TEST(held_drop_timeout)
{
	reset();
	sm_io_hold_bg(&SM, NOW);
	queue(1, true);
	queue(2, true);
	sm_io_pump(&SM);
	CHECK_EQ(NSENT, 1);
	/* no answer: tried again after the time-out, still one at a time */
	NOW += (uint64_t)SM.timeout_ms * 1500 + 1;
	sm_io_hold_bg(&SM, NOW);
	sm_io_pump(&SM);
	CHECK_EQ(SM.inflight_bg, 1);
	CHECK_EQ(NSENT, 2);
	CHECK_EQ(SENT[1], 1);
	sm_io_drop_all(&SM);
	CHECK_EQ(SM.inflight_bg, 0);
	CHECK_EQ(SM.inflight, 0);
}

int main(void)
{
	RUN(fifo_unheld);
	RUN(held_gives_way);
	RUN(held_drop_timeout);
	sm_io_drop_all(&SM);
	return test_summary();
}
