/*
 * The same-host executor's interface to the rest of the send path: running
 * one send WQE (same_host.c), and completing one, which the error state
 * (qp_error.c) does too. complete_send runs per message: inline. Also the
 * data path's spin locks, taken inline (post.c, poll.c).
 */
#ifndef SOFV_SAME_HOST_H
#define SOFV_SAME_HOST_H

#include "sofv.h"

#include "sof_wr.h"

#include <pthread.h>
#include <string.h>

/* ---- the data path's spin locks ----------------------------------------------
 * ibv_post_send, ibv_post_recv and ibv_poll_cq each take a pthread spin
 * lock; the C library's is one locked instruction behind a call through
 * the PLT, both ways. These take and release the same pthread_spinlock_t
 * inline, by the C library's own protocol, learned once at load time
 * (same_host.c sofv_spin_probe): the value pthread_spin_init leaves is
 * "free", the one pthread_spin_trylock leaves is "held", and
 * pthread_spin_unlock stores "free" again. Taking is a CAS free -> held,
 * releasing a store of free: a thread that holds the lock by the library's
 * call (qp.c, progress.c, poll.c's trylock) and one that holds it by these
 * exclude each other, since the library's own lock call also succeeds only
 * on a free value and leaves some other one while held (glibc x86-64:
 * 1 free, <= 0 held; glibc's generic code and musl: 0 free). Where the
 * probe sees anything else, the calls are used. */
extern int sofv_spin_free, sofv_spin_held;
extern bool sofv_spin_inline;

static inline __attribute__((always_inline)) void sofv_spin_lock(pthread_spinlock_t *l)
{
	if (!sofv_spin_inline) {
		pthread_spin_lock(l);
		return;
	}
	for (;;) {
		int f = sofv_spin_free;

		if (__atomic_compare_exchange_n(l, &f, sofv_spin_held, false, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return;
		while (__atomic_load_n(l, __ATOMIC_RELAXED) != sofv_spin_free) {
#if defined(__x86_64__) || defined(__i386__)
			__builtin_ia32_pause();
#endif
		}
	}
}

static inline __attribute__((always_inline)) void sofv_spin_unlock(pthread_spinlock_t *l)
{
	if (!sofv_spin_inline) {
		pthread_spin_unlock(l);
		return;
	}
	__atomic_store_n(l, sofv_spin_free, __ATOMIC_RELEASE);
}

enum exec_res {
	EXEC_DONE, /* completed (successfully or not) */
	EXEC_WAIT, /* must be retried later */
};

/* Run send WQE w of qp now: to a QP of this host, or into the network
 * send queue for a UD send to another host. EXEC_WAIT keeps it for later
 * (RNR, no answer yet, full network queue). Caller holds qp->sq_lock. */
enum exec_res sofv_exec_one(struct sofv_qp *qp, struct sofv_swqe *w);

/* ibv_post_send's short way for the one case a latency test repeats: one
 * SEND (one SGE or inline, signaled or not, solicited or not) on an RC/UC
 * QP in RTS with nothing deferred, to a peer of this host whose receive
 * WQE is the one it carried to us (sof_cqe.carry) in mapped memory with
 * room. Everything is checked before anything is done: false leaves the
 * WR to the general way (build_swqe, sofv_exec_post), which then decides
 * every other case and every error. The outcome is the general way's:
 * the same WQE taken, data, completions and their order. Caller holds
 * qp->sq_lock. */
bool sofv_send_fast(struct sofv_qp *qp, const struct ibv_send_wr *wr);

/* The consumers' head of a QP's own receive ring as the last receive
 * completion polled on the QP's CQ told it (sofv_cq.rq_hint, poll.c), when
 * that lies between head, a head known before, and tail: never ahead of
 * the real head. Else head. */
static inline uint32_t sofv_rq_hint_head(_Atomic uint64_t *hint, uint32_t qpn, uint32_t head,
					 uint32_t tail)
{
	uint64_t h = atomic_load_explicit(hint, memory_order_relaxed);

	if ((uint32_t)(h >> 32) == qpn + 1 && (uint32_t)h - head <= tail - head)
		return (uint32_t)h;
	return head;
}

static inline bool wqe_signaled(const struct sofv_qp *qp, const struct sofv_swqe *w)
{
	return qp->sq_sig_all || (w->send_flags & IBV_SEND_SIGNALED);
}

/* Complete send WQE w with status; a failed WQE always completes. */
static inline void complete_send(struct sofv_qp *qp, const struct sofv_swqe *w, int status,
				 uint32_t byte_len)
{
	struct sofv_cq *cq = qp->scq;
	struct sof_cqe c;

	if (status == IBV_WC_SUCCESS && !wqe_signaled(qp, w))
		return;
	memset(&c, 0, sizeof(c));
	c.wr_id = w->wr_id;
	c.status = (uint8_t)status;
	c.opcode = (uint8_t)sof_wc_opcode(w->opcode);
	c.byte_len = byte_len;
	c.qp_num = qp->qpn;
	sof_cq_push(cq->shm, &c, cq->channel ? cq->channel->ch.fd : -1, &cq->push_head_cache);
}

#endif
