/*
 * Where a send WQE runs, and the executor's state of a context and a QP.
 *
 * ibv_post_send hands each checked WQE to sofv_exec_post, which picks the
 * path: an RC/UC QP connected to another host posts every WQE to its
 * network send queue (net_sq.c); otherwise the same-host executor runs it
 * in place (same_host.c; a UD send to another host or a group still goes
 * to the network queue from there), and a WQE that must wait is copied
 * into the QP's deferred ring for the progress thread (progress.c).
 */
#include "progress.h"
#include "remote_cache.h"
#include "same_host.h"

#include <errno.h>
#include <string.h>

int sofv_exec_post(struct sofv_qp *qp, struct sofv_swqe *wqe)
{
	struct sofv_swqe *w;

	/* RC/UC to another host: every WQE is the engine's, but binds and
	 * local invalidations, which run here in order (sofv_exec_one). */
	if (qp->net && qp->sq_head == qp->sq_tail && !sofv_wr_is_local(wqe->opcode) &&
	    atomic_load_explicit(&qp->shm->state, memory_order_relaxed) != IBV_QPS_ERR)
		return sofv_net_post(qp, wqe);
	/* (a QP that a local operation moved to ERROR flushes here) */

	wqe->wait = SOFV_WAIT_NONE;
	if (qp->sq_head == qp->sq_tail) {
		/* run in place; copied into the ring only if it must wait */
		if (sofv_exec_one(qp, wqe) == EXEC_DONE) {
			if (atomic_load_explicit(&qp->shm->state, memory_order_relaxed) ==
			    IBV_QPS_ERR)
				sofv_qp_set_error(qp);
			return 0;
		}
	}
	if (qp->sq_tail - qp->sq_head >= qp->sq_size)
		return ENOMEM;
	w = &qp->sq[qp->sq_tail & (qp->sq_size - 1)];
	sofv_swqe_copy(w, wqe); /* with its wait state */
	/* Inline data must outlive the caller's buffer. */
	if (w->send_flags & IBV_SEND_INLINE) {
		uint8_t *dst =
		    qp->inline_area + (size_t)(qp->sq_tail & (qp->sq_size - 1)) * qp->inline_stride;

		memcpy(dst, w->inline_buf, w->inline_len);
		w->inline_buf = dst;
	}
	qp->sq_tail++;
	sofv_exec_progress(qp);
	if (qp->sq_head != qp->sq_tail)
		sofv_progress_add(qp);
	return 0;
}

/* ---- life cycle ---------------------------------------------------------------- */

void sofv_exec_qp_release(struct sofv_qp *qp)
{
	sofv_progress_forget(qp);
	sofv_remote_cache_qp_release(qp);
	qp->lmr.gen = 0;
}

void sofv_exec_ctx_init(struct sofv_context *ctx)
{
	atomic_init(&ctx->mr_gen, 1);
	pthread_mutex_init(&ctx->cache_lock, NULL);
	sofv_progress_init(ctx);
}

void sofv_exec_ctx_cleanup(struct sofv_context *ctx)
{
	sofv_progress_stop(ctx);
	sofv_remote_cache_clear(ctx);
}
