/*
 * Completion queues and completion channels on the control path: creating,
 * resizing and destroying CQs (ibv_create_cq, ibv_create_cq_ex,
 * ibv_resize_cq, ibv_destroy_cq), channels whose descriptor works with
 * poll/epoll (ibv_create_comp_channel), and completion events
 * (ibv_get_cq_event, ibv_ack_cq_events).
 *
 * A CQ is a memfd segment of SOF_CQ_SEG_SIZE bytes (sof_shm.h) created here
 * and handed to the daemon, which gives it to executors in other processes.
 * A CQ that asked for completion timestamps sets the segment's stamp flag:
 * producers then stamp each entry with the device clock (domain.c).
 * A channel is an EFD_SEMAPHORE eventfd: every consumed arm adds one token,
 * and the CQ that fired counts it in event_pending, so ibv_get_cq_event
 * takes exactly one token and one pending event.
 *
 * A stale event of a CQ polled through ibv_start_poll is dropped: one whose
 * CQ is empty when the program reads it (every entry that fired the arm
 * already polled, nothing added since). On one host a send completes inside
 * ibv_post_send, so a program that posts from its poll batch with the CQ
 * armed fires the arm with an entry that the same batch then takes, and
 * ibv_rc_pingpong -t -e takes ENOENT from ibv_start_poll right after an
 * event for an error. Such an event is the same as its entries having come
 * before the arm: it is not handed out (nor counted for ibv_ack_cq_events)
 * and the arm is given back, so the next entry fires it again. Only for
 * those CQs: a dropped event leaves a blocking ibv_get_cq_event waiting for
 * the next completion, which hangs a program that sleeps in poll(2) on the
 * blocking fd among others (rsockets' rpoll, so libsdp's sshd and redis),
 * and ibv_poll_cq programs take an empty CQ after an event in their stride.
 */
#include "sofv.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---- completion channels ------------------------------------------------- */

SOFV_EXPORT struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	struct sofv_channel *c;

	if (!context) {
		errno = EINVAL;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	c->ch.fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
	if (c->ch.fd < 0) {
		int err = errno;

		free(c);
		errno = err;
		return NULL;
	}
	c->ch.context = context;
	c->ch.refcnt = 0;
	pthread_mutex_init(&c->lock, NULL);
	return &c->ch;
}

static struct sofv_channel *to_schan(struct ibv_comp_channel *ch)
{
	return sof_container_of(ch, struct sofv_channel, ch);
}

SOFV_EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	struct sofv_channel *c;

	if (!channel)
		return EINVAL;
	c = to_schan(channel);
	pthread_mutex_lock(&c->lock);
	if (c->cqs) {
		pthread_mutex_unlock(&c->lock);
		return EBUSY;
	}
	pthread_mutex_unlock(&c->lock);
	close(c->ch.fd);
	pthread_mutex_destroy(&c->lock);
	free(c);
	return 0;
}

/* Take one pending event from a CQ of channel c. Caller holds c->lock. */
static struct sofv_cq *take_pending(struct sofv_channel *c)
{
	for (struct sofv_cq *cq = c->cqs; cq; cq = cq->ch_next) {
		uint32_t p = atomic_load(&cq->shm->event_pending);

		while (p && !atomic_compare_exchange_weak(&cq->shm->event_pending, &p, p - 1))
			;
		if (p)
			return cq;
	}
	return NULL;
}

/* Whether nothing in cq is left to poll or to look after; *tail: the tail
 * read. A slot reserved but not yet published counts as an entry. */
static bool cq_quiet(struct sofv_cq *cq, uint32_t *tail)
{
	uint32_t t = atomic_load_explicit(&cq->shm->tail, memory_order_acquire);

	*tail = t;
	return !(t & SOF_CQ_TAIL_LOCK) &&
	       atomic_load_explicit(&cq->shm->head, memory_order_acquire) == t &&
	       !atomic_load_explicit(&cq->shm->attention, memory_order_acquire) &&
	       !atomic_load_explicit(&cq->shm->overflow, memory_order_acquire) &&
	       !atomic_load_explicit(&cq->deferred, memory_order_acquire);
}

/* Wait, bounded, until the entry at cq's head is published when a
 * producer has reserved it: the program polls right after the event it
 * is handed and must find the entry there. */
static void cq_wait_head(struct sofv_cq *cq)
{
	uint64_t until = 0;

	for (;;) {
		uint32_t t = atomic_load_explicit(&cq->shm->tail, memory_order_acquire);
		uint32_t h = atomic_load_explicit(&cq->shm->head, memory_order_acquire);
		uint32_t size = __atomic_load_n(&cq->size, __ATOMIC_RELAXED);

		if ((t & SOF_CQ_TAIL_LOCK) || t == h ||
		    atomic_load_explicit(&cq->ring[h & (size - 1)].seq, memory_order_acquire) ==
			h + 1)
			return;
		if (!until)
			until = sof_now_ns() + 100000000ull;
		else if (sof_now_ns() > until)
			return; /* a producer died mid-publish */
		sched_yield();
	}
}

/* Whether the event just taken for cq is stale (this file's comment); if
 * so the arm it consumed is back, or the program armed again meanwhile.
 * Giving the arm back races with producers: we store the arm, then look
 * at tail; they publish, then look at the arm (a full fence on each side,
 * as in sof_cq_push), so an entry pushed meanwhile either fired the
 * restored arm (a new event is pending: this one may go) or is seen here
 * (the arm is taken back and this event stands for it). */
static bool event_stale(struct sofv_cq *cq)
{
	uint32_t type = atomic_load_explicit(&cq->arm_last, memory_order_relaxed);
	uint32_t a = SOF_CQ_ARM_NONE, t, t2;

	if (!__atomic_load_n(&cq->ex_polled, __ATOMIC_RELAXED))
		return false;
	if (type == SOF_CQ_ARM_NONE || !cq_quiet(cq, &t)) {
		cq_wait_head(cq);
		return false;
	}
	if (!atomic_compare_exchange_strong(&cq->shm->armed, &a, type))
		return true; /* armed again by the program: its arm stands */
	atomic_thread_fence(memory_order_seq_cst);
	if (cq_quiet(cq, &t2) && t2 == t)
		return true;
	a = type;
	if (!atomic_compare_exchange_strong(&cq->shm->armed, &a, SOF_CQ_ARM_NONE))
		return true;
	cq_wait_head(cq);
	return false;
}

/* Whether a CQ of channel c has an event pending; *engine: whether one
 * has QPs whose transport runs in this process (tp_host.c). */
static bool any_pending(struct sofv_channel *c, bool *engine)
{
	bool found = false;

	*engine = false;
	pthread_mutex_lock(&c->lock);
	for (struct sofv_cq *cq = c->cqs; cq && !found; cq = cq->ch_next) {
		found = atomic_load_explicit(&cq->shm->event_pending, memory_order_acquire) != 0;
		*engine |= atomic_load_explicit(&cq->eng_qps, memory_order_relaxed) != 0;
	}
	pthread_mutex_unlock(&c->lock);
	return found;
}

/* One event of channel c: 1 and its CQ in *out, 0 when it was stale and
 * dropped, -1 with errno set when none could be read. */
static int wait_event(struct sofv_channel *c, struct sofv_cq **out)
{
	struct sofv_cq *scq;
	bool stale = false;
	uint64_t v;
	ssize_t n;

	if (!(fcntl(c->ch.fd, F_GETFL) & O_NONBLOCK)) {
		uint64_t until = sof_now_ns() + 50000;
		bool engine, found = any_pending(c, &engine);

		/* there at once: poll(2) on the fd woke the program */
		if (engine)
			sofv_engine_sleeps_outside(found);
		while (!found && sof_now_ns() < until) {
			if (engine)
				sofv_engine_poll();
			sched_yield();
			found = any_pending(c, &engine);
		}
		if (!found && engine)
			sofv_engine_idle();
	} else {
		sofv_engine_sleeps_outside(true); /* it waits in poll(2) or spins */
	}
	n = read(c->ch.fd, &v, sizeof(v));
	if (n != (ssize_t)sizeof(v))
		return -1;
	pthread_mutex_lock(&c->lock);
	scq = take_pending(c);
	if (scq)
		stale = event_stale(scq);
	else
		scq = c->cqs; /* the token outlived its event: report any CQ */
	if (scq && !stale)
		atomic_fetch_add_explicit(&scq->events_got, 1, memory_order_relaxed);
	pthread_mutex_unlock(&c->lock);
	if (stale)
		return 0;
	if (!scq) {
		errno = EAGAIN;
		return -1;
	}
	*out = scq;
	return 1;
}

/* Blocks unless the application made the channel non-blocking. Before it
 * sleeps it spins briefly: on a virtual machine a cross-core wake-up
 * costs more than a short completion takes to arrive.
 * While it spins it reads the sockets of the QPs whose transport runs in
 * this process (as a poll does); before it sleeps it hands them to the
 * engine's progress thread at once (sofv_engine_idle). A stale event is
 * dropped and the wait goes on (EAGAIN at once on a non-blocking fd). */
SOFV_EXPORT int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq,
				 void **cq_context)
{
	struct sofv_cq *scq = NULL;
	int got;

	if (!channel || !cq || !cq_context) {
		errno = EINVAL;
		return -1;
	}
	do
		got = wait_event(to_schan(channel), &scq);
	while (!got);
	if (got < 0)
		return -1;
	*cq = ibv_cq_ex_to_cq(&scq->ibcq);
	*cq_context = scq->ibcq.cq_context;
	return 0;
}

SOFV_EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	if (!cq)
		return;
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += nevents;
	pthread_cond_broadcast(&cq->cond);
	pthread_mutex_unlock(&cq->mutex);
}

/* ---- CQ <-> QP ------------------------------------------------------------ */

int sofv_cq_attach_qp(struct sofv_cq *cq, struct sofv_qp *qp)
{
	int err = 0;

	pthread_mutex_lock(&cq->qps_lock);
	if (cq->nqps == cq->qps_cap) {
		int ncap = cq->qps_cap ? cq->qps_cap * 2 : 4;
		struct sofv_qp **n = realloc(cq->qps, sizeof(*n) * (size_t)ncap);

		if (!n) {
			err = -ENOMEM;
			goto out;
		}
		cq->qps = n;
		cq->qps_cap = ncap;
	}
	cq->qps[cq->nqps++] = qp;
out:
	pthread_mutex_unlock(&cq->qps_lock);
	return err;
}

void sofv_cq_detach_qp(struct sofv_cq *cq, struct sofv_qp *qp)
{
	pthread_mutex_lock(&cq->qps_lock);
	for (int i = 0; i < cq->nqps; i++) {
		if (cq->qps[i] == qp) {
			cq->qps[i] = cq->qps[--cq->nqps];
			break;
		}
	}
	pthread_mutex_unlock(&cq->qps_lock);
}

/* Take qpn's completions out of the CQ, keeping the others in order: a QP
 * moved to RESET leaves none behind (ibv_modify_qp(3); mlx5 and rxe clean
 * the QP's entries from its CQs then, flush errors included). Only the
 * owner moves head, under cq->lock, and producers write a slot only once
 * head has passed it, so the published entries are the owner's to move:
 * the kept ones slide toward tail, each into a slot already published at
 * its index (its seq stays right), and head moves past the freed slots,
 * which become the producers' again. A slot reserved but not yet
 * published ends the walk, after a bounded wait. */
void sofv_cq_clean(struct sofv_cq *cq, uint32_t qpn)
{
	uint32_t head, tail, end, dst, mask;
	uint64_t until;

	pthread_spin_lock(&cq->lock);
	/* the QP's receive head hint goes with its entries (poll.c) */
	if ((uint32_t)(atomic_load_explicit(&cq->rq_hint, memory_order_relaxed) >> 32) == qpn + 1)
		atomic_store_explicit(&cq->rq_hint, 0, memory_order_relaxed);
	/* and a receive WQE carried for it (poll.c; this is the writer) */
	if (__atomic_load_n(&cq->carry_qpn1, __ATOMIC_RELAXED) == qpn + 1) {
		uint32_t s = atomic_load_explicit(&cq->carry_seq, memory_order_relaxed);

		atomic_store_explicit(&cq->carry_seq, s + 1, memory_order_relaxed);
		atomic_thread_fence(memory_order_release);
		__atomic_store_n(&cq->carry_qpn1, 0, __ATOMIC_RELAXED);
		atomic_store_explicit(&cq->carry_seq, s + 2, memory_order_release);
	}
	mask = cq->size - 1;
	head = atomic_load_explicit(&cq->shm->head, memory_order_relaxed);
	tail = atomic_load_explicit(&cq->shm->tail, memory_order_acquire) & ~SOF_CQ_TAIL_LOCK;
	until = sof_now_ns() + 10000000ull;
	for (end = head; end != tail && end - head < cq->size;) {
		if (atomic_load_explicit(&cq->ring[end & mask].seq, memory_order_acquire) ==
		    end + 1)
			end++;
		else if (sof_now_ns() < until)
			sched_yield();
		else
			break; /* a producer died mid-publish: poll stops there too */
	}
	dst = end;
	for (uint32_t i = end; i != head;) {
		struct sof_cqe *c = &cq->ring[--i & mask];

		if (c->qp_num == qpn)
			continue;
		if (--dst != i)
			sof_cqe_copy_body(&cq->ring[dst & mask], c);
	}
	atomic_store_explicit(&cq->shm->head, dst, memory_order_release);
	pthread_spin_unlock(&cq->lock);
}

/* ---- create / destroy ----------------------------------------------------------- */

#define SUPPORTED_WC_FLAGS                                                                         \
	(IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM |                    \
	 IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |                         \
	 IBV_WC_EX_WITH_DLID_PATH_BITS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |                     \
	 IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)

static int cq_check_attr(struct ibv_context *ctx, const struct ibv_cq_init_attr_ex *a)
{
	if (a->cqe < 1 || a->cqe > (uint32_t)SOFV_MAX_CQE)
		return EINVAL;
	if (a->comp_vector >= (uint32_t)ctx->num_comp_vectors)
		return EINVAL;
	if (a->channel && a->channel->context != ctx)
		return EINVAL;
	if (a->comp_mask & ~(uint32_t)(IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD))
		return EINVAL;
	if ((a->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	    (a->flags & ~(uint32_t)IBV_CREATE_CQ_ATTR_SINGLE_THREADED))
		return EOPNOTSUPP;
	/* as mlx5: the PD of a CQ must be a parent domain */
	if ((a->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) &&
	    (!a->parent_domain || a->parent_domain->context != ctx ||
	     !to_spd(a->parent_domain)->parent))
		return EINVAL;
	if (a->wc_flags & ~(uint64_t)SUPPORTED_WC_FLAGS)
		return EOPNOTSUPP;
	return 0;
}

struct ibv_cq_ex *sofv_create_cq_ex(struct ibv_context *ctx, struct ibv_cq_init_attr_ex *attr)
{
	struct sofv_context *s = to_sctx(ctx);
	struct sof_create_cq_req req;
	struct sof_cq_rep rep;
	struct ibv_pd *pdom = NULL;
	struct sofv_cq *cq;
	int fds[2], err;
	bool custom;
	void *p;

	err = cq_check_attr(ctx, attr);
	if (err)
		goto err_out;
	if (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD)
		pdom = attr->parent_domain;
	cq = sofv_pd_alloc(pdom, sizeof(*cq), SOFV_RES_TYPE_CQ, &custom);
	if (!cq) {
		err = ENOMEM;
		goto err_out;
	}
	cq->pdom = pdom;
	cq->custom_alloc = custom;
	cq->size = sof_roundup_pow2(attr->cqe);
	cq->memfd = sof_memfd_create("softofed-cq", SOF_CQ_SEG_SIZE);
	if (cq->memfd < 0) {
		err = -cq->memfd;
		goto err_free;
	}
	p = mmap(NULL, SOF_CQ_SEG_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, cq->memfd, 0);
	if (p == MAP_FAILED) {
		err = errno;
		goto err_close;
	}
	cq->shm = p;
	cq->ring = (struct sof_cqe *)((uint8_t *)p + SOF_CQ_RING_OFF);
	atomic_store(&cq->shm->size, cq->size);
	if (attr->wc_flags & (IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
			      IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK))
		atomic_store(&cq->shm->stamp, 1);

	memset(&req, 0, sizeof(req));
	req.cqe = cq->size;
	req.has_channel = attr->channel ? 1 : 0;
	fds[0] = cq->memfd;
	fds[1] = attr->channel ? attr->channel->fd : -1;
	err = -sofv_rpc(s, SOF_OP_CREATE_CQ, &req, sizeof(req), fds, 1 + (int)req.has_channel, &rep,
			sizeof(rep), NULL, NULL);
	if (err)
		goto err_unmap;
	cq->handle = rep.cq;
	/* mapped for good; the daemon hands the descriptor to producers */
	close(cq->memfd);
	cq->memfd = -1;
	pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	pthread_mutex_init(&cq->qps_lock, NULL);
	cq->wc_flags_ex = (uint32_t)attr->wc_flags;

	cq->ibcq.context = ctx;
	cq->ibcq.channel = attr->channel;
	cq->ibcq.cq_context = attr->cq_context;
	cq->ibcq.handle = cq->handle;
	cq->ibcq.cqe = (int)cq->size;
	pthread_mutex_init(&cq->ibcq.mutex, NULL);
	pthread_cond_init(&cq->ibcq.cond, NULL);
	sofv_cq_ex_init(cq);

	if (attr->channel) {
		struct sofv_channel *c = to_schan(attr->channel);

		cq->channel = c;
		pthread_mutex_lock(&c->lock);
		cq->ch_next = c->cqs;
		c->cqs = cq;
		c->ch.refcnt++;
		pthread_mutex_unlock(&c->lock);
	}
	pthread_rwlock_wrlock(&s->obj_lock);
	err = -sof_hmap_put(&s->cqs, cq->handle, cq);
	pthread_rwlock_unlock(&s->obj_lock);
	if (err) {
		/* leave the CQ to the daemon's cleanup rather than half-undo it */
		errno = err;
		return NULL;
	}
	return &cq->ibcq;

err_unmap:
	munmap(p, SOF_CQ_SEG_SIZE);
err_close:
	close(cq->memfd);
err_free:
	sofv_pd_free(pdom, cq, SOFV_RES_TYPE_CQ, custom);
err_out:
	errno = err;
	return NULL;
}

SOFV_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
					 struct ibv_comp_channel *channel, int comp_vector)
{
	struct ibv_cq_init_attr_ex a;
	struct ibv_cq_ex *cq;

	if (!context || cqe < 1 || comp_vector < 0) {
		errno = EINVAL;
		return NULL;
	}
	memset(&a, 0, sizeof(a));
	a.cqe = (uint32_t)cqe;
	a.cq_context = cq_context;
	a.channel = channel;
	a.comp_vector = (uint32_t)comp_vector;
	a.wc_flags = IBV_WC_STANDARD_FLAGS;
	cq = sofv_create_cq_ex(context, &a);
	return cq ? ibv_cq_ex_to_cq(cq) : NULL;
}

/* Re-lay the pending entries for a new ring size. The owner holds
 * SOF_CQ_TAIL_LOCK in tail, so no producer reserves a slot meanwhile. */
static int cq_relayout(struct sofv_cq *cq, uint32_t head, uint32_t tail, uint32_t nsize)
{
	uint32_t n = tail - head;
	struct sof_cqe *tmp = NULL;

	if (n) {
		tmp = malloc(sizeof(*tmp) * n);
		if (!tmp)
			return ENOMEM;
		for (uint32_t i = 0; i < n; i++)
			memcpy(&tmp[i], &cq->ring[(head + i) & (cq->size - 1)], sizeof(*tmp));
	}
	for (uint32_t i = 0; i < n; i++) {
		struct sof_cqe *slot = &cq->ring[(head + i) & (nsize - 1)];

		sof_cqe_copy_body(slot, &tmp[i]);
		atomic_store_explicit(&slot->seq, head + i + 1, memory_order_release);
	}
	free(tmp);
	return 0;
}

SOFV_EXPORT int ibv_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct sofv_cq *cq;
	struct sof_cq_req req;
	uint32_t t, head, nsize;
	int err;

	if (!ibcq || cqe < 1 || cqe > SOFV_MAX_CQE)
		return EINVAL;
	cq = to_scq(ibcq);
	nsize = sof_roundup_pow2((uint32_t)cqe);
	pthread_spin_lock(&cq->lock);
	/* Stop producers: set the lock bit in tail. */
	for (;;) {
		t = atomic_load(&cq->shm->tail);
		if (t & SOF_CQ_TAIL_LOCK) {
			err = EINVAL; /* only the owner sets it: corrupted */
			goto out;
		}
		if (atomic_compare_exchange_weak(&cq->shm->tail, &t, t | SOF_CQ_TAIL_LOCK))
			break;
	}
	head = atomic_load(&cq->shm->head);
	if (t - head > nsize) {
		err = EINVAL; /* the entries in the CQ would not fit */
		goto unlock;
	}
	/* Wait for producers that reserved a slot to publish it. */
	for (uint32_t i = head; i != t; i++) {
		uint64_t until = sof_now_ns() + 100000000ull;

		while (atomic_load_explicit(&cq->ring[i & (cq->size - 1)].seq,
					    memory_order_acquire) != i + 1) {
			if (sof_now_ns() > until) {
				err = EIO; /* a producer died mid-publish */
				goto unlock;
			}
			sched_yield();
		}
	}
	memset(&req, 0, sizeof(req));
	req.cq = cq->handle;
	req.cqe = nsize;
	err = -sofv_rpc(to_sctx(ibcq->context), SOF_OP_RESIZE_CQ, &req, sizeof(req), NULL, 0, NULL,
			0, NULL, NULL);
	if (err)
		goto unlock;
	err = cq_relayout(cq, head, t, nsize);
	if (err)
		goto unlock;
	__atomic_store_n(&cq->size, nsize, __ATOMIC_RELAXED);
	atomic_store(&cq->shm->size, nsize);
	cq->ibcq.cqe = (int)nsize;
unlock:
	atomic_store(&cq->shm->tail, t);
out:
	pthread_spin_unlock(&cq->lock);
	return err;
}

SOFV_EXPORT int ibv_destroy_cq(struct ibv_cq *ibcq)
{
	struct sofv_context *s;
	struct sofv_cq *cq;
	struct sof_cq_req req;
	int err;

	if (!ibcq)
		return EINVAL;
	cq = to_scq(ibcq);
	s = to_sctx(ibcq->context);
	pthread_mutex_lock(&cq->qps_lock);
	err = cq->nqps ? EBUSY : 0;
	pthread_mutex_unlock(&cq->qps_lock);
	if (err)
		return err;
	memset(&req, 0, sizeof(req));
	req.cq = cq->handle;
	err = -sofv_rpc(s, SOF_OP_DESTROY_CQ, &req, sizeof(req), NULL, 0, NULL, 0, NULL, NULL);
	if (err && err != ENOTCONN && err != EPIPE && err != ECONNRESET)
		return err;
	pthread_rwlock_wrlock(&s->obj_lock);
	sof_hmap_del(&s->cqs, cq->handle);
	pthread_rwlock_unlock(&s->obj_lock);

	if (cq->channel) {
		struct sofv_channel *c = cq->channel;

		pthread_mutex_lock(&c->lock);
		for (struct sofv_cq **pp = &c->cqs; *pp; pp = &(*pp)->ch_next) {
			if (*pp == cq) {
				*pp = cq->ch_next;
				break;
			}
		}
		c->ch.refcnt--;
		pthread_mutex_unlock(&c->lock);
	}
	/* As with the kernel: wait until every event handed out was acked. */
	pthread_mutex_lock(&ibcq->mutex);
	while (ibcq->comp_events_completed != atomic_load(&cq->events_got) ||
	       ibcq->async_events_completed != cq->async_got)
		pthread_cond_wait(&ibcq->cond, &ibcq->mutex);
	pthread_mutex_unlock(&ibcq->mutex);

	munmap(cq->shm, SOF_CQ_SEG_SIZE);
	free(cq->qps);
	pthread_spin_destroy(&cq->lock);
	pthread_mutex_destroy(&cq->qps_lock);
	pthread_mutex_destroy(&ibcq->mutex);
	pthread_cond_destroy(&ibcq->cond);
	sofv_pd_free(cq->pdom, cq, SOFV_RES_TYPE_CQ, cq->custom_alloc);
	return 0;
}
