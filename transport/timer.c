/*
 * The transport timers: one timerfd serves every QP's retransmission,
 * early go-back, RNR and rate-limit deadlines (requester.c sets them). QPs with a
 * deadline are on tp.timers; the timer is armed for the earliest.
 */
#include "tport.h"

#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

int tp_timer_fd(void) { return tp.timer_fd; }

uint64_t tp_timer_deadline(void) { return tp.timer_armed_ns; }

void tp_timer_watch(struct sof_tqp *t)
{
	if (sof_list_empty(&t->timer_link))
		sof_list_add(&tp.timers, &t->timer_link);
}

/* Program the timerfd for at (CLOCK_MONOTONIC ns). */
static void timer_fd_set(uint64_t at)
{
	struct itimerspec its = {0};

	its.it_value.tv_sec = (time_t)(at / 1000000000u);
	its.it_value.tv_nsec = (long)(at % 1000000000u);
	/* sof_now_ns() is CLOCK_MONOTONIC */
	timerfd_settime(tp.timer_fd, TFD_TIMER_ABSTIME, &its, NULL);
	tp.timer_fd_ns = at;
}

void tp_timer_fd_live(bool live)
{
	tp.timer_fd_idle = !live;
	/* what was armed meanwhile (one armed earlier fires for nothing) */
	if (live && tp.timer_armed_ns && tp.timer_armed_ns != tp.timer_fd_ns)
		timer_fd_set(tp.timer_armed_ns);
}

void tp_timer_update(void)
{
	uint64_t next = UINT64_MAX;
	struct sof_link *l, *lnext;

	for (l = tp.timers.next; l != &tp.timers; l = lnext) {
		struct sof_tqp *t = sof_container_of(l, struct sof_tqp, timer_link);

		lnext = l->next;
		if (!t->timer_ns && !t->rnr_ns && !t->probe_ns && !t->pace_wait_ns) {
			sof_list_del(&t->timer_link);
			continue;
		}
		if (t->timer_ns && t->timer_ns < next)
			next = t->timer_ns;
		if (t->probe_ns && t->probe_ns < next)
			next = t->probe_ns;
		if (t->rnr_ns && t->rnr_ns < next)
			next = t->rnr_ns;
		if (t->pace_wait_ns && t->pace_wait_ns < next)
			next = t->pace_wait_ns;
	}
	/* Lazily: a timer armed for an earlier time stays (it fires early,
	 * finds nothing due and is armed again), and one no longer needed is
	 * left to fire once for nothing. Every packet sent (re)starts a
	 * deadline and every ACK ends one, and reprogramming the timer each
	 * time costs a system call (a VM exit on a virtual machine) per
	 * packet; the transport timeouts are milliseconds long. */
	if (next == UINT64_MAX || (tp.timer_armed_ns && tp.timer_armed_ns <= next))
		return;
	tp.timer_armed_ns = next;
	/* a host that runs the deadline itself reads timer_armed_ns: the
	 * timerfd waits for tp_timer_fd_live */
	if (!tp.timer_fd_idle)
		timer_fd_set(next);
}

void tp_timer_fired(void)
{
	uint64_t now = sof_now_ns(), exp;
	struct sof_link *l, *next;

	/* only a timerfd that expired is readable: the others need no read */
	if (tp.timer_fd_ns && now >= tp.timer_fd_ns) {
		tp.timer_fd_ns = 0;
		if (read(tp.timer_fd, &exp, sizeof(exp)) < 0) {
			/* spurious: nothing expired yet */
		}
	}
	tp.timer_armed_ns = 0;
	for (l = tp.timers.next; l != &tp.timers; l = next) {
		next = l->next;
		tp_req_timer(sof_container_of(l, struct sof_tqp, timer_link), now);
	}
}
