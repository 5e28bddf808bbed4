/*
 * Deferred send WQEs and the same-host progress thread.
 *
 * A WQE the executor cannot finish at once (RNR: the receiver had no
 * receive WQE, IBA 9.7.5.2.8; no answer yet: the local ACK timer,
 * 9.7.6.1.3) stays in its QP's deferred ring. The QP goes on its context's
 * progress list, and a thread started on first use retries the ring until
 * it is empty, so the timers run out and the RNR retries happen even when
 * the program does not post or poll again. A poller of the send CQ also
 * runs the ring (poll.c), which is faster than waiting for the thread.
 */
#include "progress.h"

#include "same_host.h"

#include <stdlib.h>
#include <time.h>

static void *progress_main(void *arg);

void sofv_progress_add(struct sofv_qp *qp)
{
	struct sofv_context *ctx = to_sctx(qp->qpx.qp_base.context);

	pthread_mutex_lock(&ctx->prog_lock);
	if (!qp->on_prog) {
		if (ctx->prog_n == ctx->prog_cap) {
			int ncap = ctx->prog_cap ? ctx->prog_cap * 2 : 8;
			struct sofv_qp **n = realloc(ctx->prog_qps, sizeof(*n) * (size_t)ncap);

			if (!n)
				goto out;
			ctx->prog_qps = n;
			ctx->prog_cap = ncap;
		}
		ctx->prog_qps[ctx->prog_n++] = qp;
		qp->on_prog = true;
		atomic_fetch_add(&qp->scq->deferred, 1);
	}
	if (!ctx->prog_started) {
		if (pthread_create(&ctx->prog_thread, NULL, progress_main, ctx) == 0)
			ctx->prog_started = true;
	}
	pthread_cond_signal(&ctx->prog_cond);
out:
	pthread_mutex_unlock(&ctx->prog_lock);
}

/* Caller holds ctx->prog_lock. */
static void prog_remove_locked(struct sofv_context *ctx, struct sofv_qp *qp)
{
	for (int i = 0; i < ctx->prog_n; i++) {
		if (ctx->prog_qps[i] == qp) {
			ctx->prog_qps[i] = ctx->prog_qps[--ctx->prog_n];
			qp->on_prog = false;
			atomic_fetch_sub(&qp->scq->deferred, 1);
			return;
		}
	}
}

static void *progress_main(void *arg)
{
	struct sofv_context *ctx = arg;
	struct timespec ts = {0, 0};

	pthread_mutex_lock(&ctx->prog_lock);
	while (!ctx->prog_stop) {
		if (!ctx->prog_n) {
			pthread_cond_wait(&ctx->prog_cond, &ctx->prog_lock);
			continue;
		}
		for (int i = 0; i < ctx->prog_n; i++) {
			struct sofv_qp *qp = ctx->prog_qps[i];

			if (pthread_spin_trylock(&qp->sq_lock))
				continue;
			sofv_exec_progress(qp);
			if (qp->sq_head == qp->sq_tail) {
				prog_remove_locked(ctx, qp);
				i--;
			}
			pthread_spin_unlock(&qp->sq_lock);
		}
		/* RNR and transport timers are at least 10 µs; poll gently. */
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 200000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&ctx->prog_cond, &ctx->prog_lock, &ts);
	}
	pthread_mutex_unlock(&ctx->prog_lock);
	return NULL;
}

void sofv_exec_progress(struct sofv_qp *qp)
{
	while (qp->sq_head != qp->sq_tail) {
		struct sofv_swqe *w = &qp->sq[qp->sq_head & (qp->sq_size - 1)];

		if (sofv_exec_one(qp, w) == EXEC_WAIT)
			return;
		qp->sq_head++;
	}
	if (atomic_load_explicit(&qp->shm->state, memory_order_acquire) == IBV_QPS_ERR)
		sofv_qp_set_error(qp);
}

void sofv_progress_forget(struct sofv_qp *qp)
{
	struct sofv_context *ctx = to_sctx(qp->qpx.qp_base.context);

	pthread_mutex_lock(&ctx->prog_lock);
	if (qp->on_prog)
		prog_remove_locked(ctx, qp);
	pthread_mutex_unlock(&ctx->prog_lock);
}

void sofv_progress_init(struct sofv_context *ctx)
{
	pthread_mutex_init(&ctx->prog_lock, NULL);
	pthread_cond_init(&ctx->prog_cond, NULL);
}

void sofv_progress_stop(struct sofv_context *ctx)
{
	pthread_mutex_lock(&ctx->prog_lock);
	ctx->prog_stop = true;
	pthread_cond_signal(&ctx->prog_cond);
	pthread_mutex_unlock(&ctx->prog_lock);
	if (ctx->prog_started)
		pthread_join(ctx->prog_thread, NULL);
	ctx->prog_started = false;
	free(ctx->prog_qps);
	ctx->prog_qps = NULL;
	ctx->prog_n = ctx->prog_cap = 0;
}
