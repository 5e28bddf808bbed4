/*
 * The completion ring of a CQ segment (sof_shm.h), producer side: shared by
 * the library's executor and the daemon's transport, since any process that
 * completes work for a CQ pushes into the same multi-producer ring.
 */
#include "sof_shm.h"
#include "sof_util.h"

#include <errno.h>
#include <infiniband/verbs.h>
#include <sched.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

/* Reserve the next slot of the ring: its index in *idx. spins bounds the
 * wait for a resize (in sched_yield calls) and, times 64, the producers'
 * race for a slot. Inlined into each caller: the library pushes twice per
 * same-host message, so a call frame per push shows on the small-message
 * path. */
static inline __attribute__((always_inline)) int
cq_reserve(struct sof_cq_shm *shm, uint32_t spins_max, _Atomic uint32_t *head_cache, uint32_t *idx)
{
	uint32_t t, h, size, spins = 0, races = 0;

	for (;; races++) {
		if (races > spins_max * 64)
			return -EBUSY; /* the ring's indexes keep moving under us */
		t = atomic_load_explicit(&shm->tail, memory_order_acquire);
		if (t & SOF_CQ_TAIL_LOCK) { /* the owner is resizing */
			/* bounded: an owner that died mid-resize must not
			 * hold a producer (the daemon) for ever */
			if (++spins > spins_max)
				return -EBUSY;
			sched_yield();
			continue;
		}
		size = atomic_load_explicit(&shm->size, memory_order_relaxed);
		if (!size || size > SOF_CQ_MAX_CQE || (size & (size - 1)))
			return -EINVAL;
		/* The owner's head moves on every poll: reading it on every push
		 * costs a cache line from the owner's CPU. A head read earlier is
		 * never ahead of the real one, so while it shows room there is. */
		h = head_cache ? atomic_load_explicit(head_cache, memory_order_relaxed) : t - size;
		if (t - h >= size) {
			h = atomic_load_explicit(&shm->head, memory_order_acquire);
			if (head_cache)
				atomic_store_explicit(head_cache, h, memory_order_relaxed);
		}
		if (t - h >= size) {
			/* Full only if tail did not move while we read head:
			 * else other producers pushed and the owner polled in
			 * between, head passed our t, and t - h wrapped. */
			if (atomic_load_explicit(&shm->tail, memory_order_acquire) != t)
				continue;
			atomic_store(&shm->overflow, 1);
			return -ENOSPC;
		}
		if (atomic_compare_exchange_weak_explicit(
			&shm->tail, &t, t + 1, memory_order_acq_rel, memory_order_relaxed))
			break;
	}
	*idx = t;
	return 0;
}

/* The slot of index t, reserved by cq_reserve; NULL when the size field
 * is corrupt. Read the size again: no resize can complete before we
 * publish (the owner waits for every reserved slot to be published). */
static inline __attribute__((always_inline)) struct sof_cqe *cq_slot(struct sof_cq_shm *shm,
								     uint32_t t)
{
	struct sof_cqe *ring = (struct sof_cqe *)((uint8_t *)shm + SOF_CQ_RING_OFF);
	uint32_t size = atomic_load_explicit(&shm->size, memory_order_relaxed);

	if (!size || size > SOF_CQ_MAX_CQE || (size & (size - 1)))
		return NULL;
	return &ring[t & (size - 1)];
}

/* Publish slot t, filled (all but seq), then look at the arm. */
static inline __attribute__((always_inline)) int
cq_commit(struct sof_cq_shm *shm, uint32_t t, struct sof_cqe *slot, int cq_evfd, bool armable)
{
	/* read before the entry is the consumer's (and then, after its
	 * poll, another producer's) */
	bool wakes = slot->solicited || slot->status != IBV_WC_SUCCESS;
	uint32_t a;

	/* The device clock (IBV_WC_EX_WITH_COMPLETION_TIMESTAMP): read only
	 * for a CQ that asked, on the header line read above anyway. The
	 * stamp takes the place of a carried WQE. */
	if (atomic_load_explicit(&shm->stamp, memory_order_relaxed)) {
		if (slot->xflags & SOF_CQE_CARRY) {
			slot->xflags &= (uint8_t)~SOF_CQE_CARRY;
			memset(&slot->carry, 0, sizeof(slot->carry));
			slot->imm_data = 0;
		}
		slot->timestamp = sof_now_ns();
	}
	atomic_store_explicit(&slot->seq, t + 1, memory_order_release);
	/* A CQ without a completion channel is never armed
	 * (ibv_req_notify_cq fails): no fence, no look at the arm. */
	if (!armable)
		return 0;

	/* The owner arms, then polls; we publish, then look at the arm. Each
	 * side stores, then loads what the other stored, so both need a full
	 * fence in between (the owner's is in sofv_req_notify_cq): without
	 * it the CPU may read the arm before our entry is visible (the x86
	 * store buffer allows it), the owner arms and polls in between, and
	 * the completion is neither polled nor signalled. */
	atomic_thread_fence(memory_order_seq_cst);
	a = atomic_load_explicit(&shm->armed, memory_order_acquire);
	if (a != SOF_CQ_ARM_NONE && (a == SOF_CQ_ARM_NEXT || wakes) &&
	    atomic_compare_exchange_strong(&shm->armed, &a, SOF_CQ_ARM_NONE)) {
		atomic_fetch_add_explicit(&shm->event_pending, 1, memory_order_release);
		if (cq_evfd >= 0) {
			uint64_t one = 1;

			if (write(cq_evfd, &one, sizeof(one)) < 0) {
				/* the counter cannot overflow with one event per arm */
			}
		}
		return 1;
	}
	return 0;
}

/* Fill the slot of index t, reserved by cq_reserve, with cqe and publish
 * it; then look at the arm. */
static inline __attribute__((always_inline)) int
cq_publish(struct sof_cq_shm *shm, uint32_t t, const struct sof_cqe *cqe, int cq_evfd, bool armable)
{
	struct sof_cqe *slot = cq_slot(shm, t);

	if (!slot)
		return -EINVAL;
	sof_cqe_copy_body(slot, cqe);
	return cq_commit(shm, t, slot, cq_evfd, armable);
}

static inline __attribute__((always_inline)) int cq_push(struct sof_cq_shm *shm,
							 const struct sof_cqe *cqe, int cq_evfd,
							 bool armable, uint32_t spins_max,
							 _Atomic uint32_t *head_cache)
{
	uint32_t t;
	int err = cq_reserve(shm, spins_max, head_cache, &t);

	if (err)
		return err;
	return cq_publish(shm, t, cqe, cq_evfd, armable);
}

int sof_cq_reserve(struct sof_cq_shm *shm, _Atomic uint32_t *head_cache, uint32_t *idx)
{
	return cq_reserve(shm, 100000, head_cache, idx);
}

int sof_cq_publish(struct sof_cq_shm *shm, uint32_t idx, const struct sof_cqe *cqe, int cq_evfd)
{
	return cq_publish(shm, idx, cqe, cq_evfd, cq_evfd >= 0);
}

struct sof_cqe *sof_cq_slot(struct sof_cq_shm *shm, uint32_t idx) { return cq_slot(shm, idx); }

int sof_cq_commit(struct sof_cq_shm *shm, uint32_t idx, struct sof_cqe *slot, int cq_evfd)
{
	return cq_commit(shm, idx, slot, cq_evfd, cq_evfd >= 0);
}

int sof_cq_push(struct sof_cq_shm *shm, const struct sof_cqe *cqe, int cq_evfd,
		_Atomic uint32_t *head_cache)
{
	return cq_push(shm, cqe, cq_evfd, cq_evfd >= 0, 100000, head_cache);
}

int sof_cq_push_daemon(struct sof_cq_shm *shm, const struct sof_cqe *cqe)
{
	return cq_push(shm, cqe, -1, true, 1000, NULL);
}

bool sof_cq_attention(struct sof_cq_shm *shm)
{
	uint32_t armed;

	atomic_store_explicit(&shm->attention, 1, memory_order_release);
	/* The owner arms, then looks at attention when it polls; we set
	 * attention, then look at the arm: a full fence in between, as in
	 * sof_cq_push, or each may miss the other's store. */
	atomic_thread_fence(memory_order_seq_cst);
	armed = atomic_load_explicit(&shm->armed, memory_order_acquire);
	while (armed != SOF_CQ_ARM_NONE &&
	       !atomic_compare_exchange_weak(&shm->armed, &armed, SOF_CQ_ARM_NONE))
		;
	if (armed == SOF_CQ_ARM_NONE)
		return false;
	atomic_fetch_add_explicit(&shm->event_pending, 1, memory_order_release);
	return true;
}
