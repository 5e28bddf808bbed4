/*
 * Thread domains, parent domains, the device clock and the QP rate limit:
 * ibv_alloc_td / ibv_dealloc_td, ibv_alloc_parent_domain (freed by
 * ibv_dealloc_pd), ibv_query_rt_values_ex and ibv_modify_qp_rate_limit.
 *
 * A thread domain is a promise of the application that one thread at a
 * time uses the objects bound to it; the library's locks are cheap enough
 * uncontended that it only counts the parent domains that name it.
 *
 * A parent domain is a struct sofv_pd with the handle of the PD it was made
 * on, so a QP, CQ, SRQ, MR or AH created on it is, for the daemon and for
 * every check of the data path, one of that PD. It holds the PD (which
 * fails ibv_dealloc_pd with EBUSY meanwhile, as in mlx5) and its thread
 * domain. Its memory stays on the context's list until the context closes:
 * objects created on it keep a pointer to it (ibv_qp.pd), and the
 * application may free the parent domain before them.
 *
 * Custom allocators (IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) are asked for
 * the library's own per-object memory where it has any of its own: a CQ's
 * object (cq.c, SOFV_RES_TYPE_CQ). The queues themselves are shared memfds
 * that the daemon hands to other processes, which memory from the
 * application's allocator cannot be.
 *
 * The device clock runs at 1 GHz: a raw timestamp is CLOCK_MONOTONIC in
 * nanoseconds, the clock every process of the host shares, so a producer in
 * another process stamps a completion in the owner's time base (cqring.c).
 */
#include "sofv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct sofv_td {
	struct ibv_td ibtd;
	_Atomic uint32_t refs; /* parent domains naming it */
};

static struct ibv_td *alloc_td(struct ibv_context *ctx, struct ibv_td_init_attr *attr)
{
	struct sofv_td *td;

	if (!attr || attr->comp_mask) {
		errno = EINVAL;
		return NULL;
	}
	td = calloc(1, sizeof(*td));
	if (!td) {
		errno = ENOMEM;
		return NULL;
	}
	td->ibtd.context = ctx;
	return &td->ibtd;
}

static int dealloc_td(struct ibv_td *ibtd)
{
	struct sofv_td *td = sof_container_of(ibtd, struct sofv_td, ibtd);

	if (atomic_load(&td->refs))
		return EBUSY;
	free(td);
	return 0;
}

static struct ibv_pd *alloc_parent_domain(struct ibv_context *ctx,
					  struct ibv_parent_domain_init_attr *attr)
{
	struct sofv_context *s = to_sctx(ctx);
	struct sofv_pd *pd;

	if (!attr || !attr->pd || attr->pd->context != ctx ||
	    (attr->td && attr->td->context != ctx) ||
	    (attr->comp_mask & ~(uint32_t)(IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
					   IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)) ||
	    ((attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) &&
	     (!attr->alloc || !attr->free)) ||
	    to_spd(attr->pd)->parent) {
		errno = EINVAL; /* a parent domain is made on a PD, not on another one */
		return NULL;
	}
	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	pd->handle = to_spd(attr->pd)->handle;
	pd->ibpd.context = ctx;
	pd->ibpd.handle = pd->handle;
	pd->parent = to_spd(attr->pd);
	pd->td = attr->td;
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) {
		pd->alloc = attr->alloc;
		pd->free = attr->free;
	}
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)
		pd->pd_context = attr->pd_context;
	atomic_fetch_add(&pd->parent->nah, 1);
	if (attr->td)
		atomic_fetch_add(&sof_container_of(attr->td, struct sofv_td, ibtd)->refs, 1);
	pthread_mutex_lock(&s->domain_lock);
	pd->pdom_next = s->pdoms;
	s->pdoms = pd;
	pthread_mutex_unlock(&s->domain_lock);
	return &pd->ibpd;
}

int sofv_dealloc_parent_domain(struct sofv_pd *pd)
{
	if (atomic_exchange(&pd->dead, true))
		return EINVAL;
	atomic_fetch_sub(&pd->parent->nah, 1);
	if (pd->td)
		atomic_fetch_sub(&sof_container_of(pd->td, struct sofv_td, ibtd)->refs, 1);
	return 0;
}

void *sofv_pd_alloc(struct ibv_pd *ibpd, size_t size, uint64_t type, bool *custom)
{
	struct sofv_pd *pd = ibpd ? to_spd(ibpd) : NULL;
	void *p;

	*custom = false;
	if (pd && pd->parent && pd->alloc) {
		p = pd->alloc(ibpd, pd->pd_context, size, SOF_CACHELINE, type);
		if (p != IBV_ALLOCATOR_USE_DEFAULT) {
			if (p) {
				memset(p, 0, size);
				*custom = true;
			}
			return p;
		}
	}
	return calloc(1, size);
}

void sofv_pd_free(struct ibv_pd *ibpd, void *p, uint64_t type, bool custom)
{
	struct sofv_pd *pd;

	if (!custom) {
		free(p);
		return;
	}
	pd = to_spd(ibpd);
	pd->free(ibpd, pd->pd_context, p, type);
}

void sofv_domains_free(struct sofv_context *s)
{
	while (s->pdoms) {
		struct sofv_pd *pd = s->pdoms;

		s->pdoms = pd->pdom_next;
		free(pd);
	}
	pthread_mutex_destroy(&s->domain_lock);
}

/* ---- the clock ------------------------------------------------------------ */

uint64_t sofv_wallclock_offset_ns(void)
{
	struct timespec m, r;

	clock_gettime(CLOCK_MONOTONIC, &m);
	clock_gettime(CLOCK_REALTIME, &r);
	return ((uint64_t)r.tv_sec - (uint64_t)m.tv_sec) * 1000000000ull + (uint64_t)r.tv_nsec -
	       (uint64_t)m.tv_nsec;
}

/* As mlx5: the raw clock in cycles, all of it in tv_nsec. */
static int query_rt_values(struct ibv_context *ctx, struct ibv_values_ex *v)
{
	uint32_t mask = 0;

	(void)ctx;
	if (!v)
		return EINVAL;
	if (v->comp_mask & IBV_VALUES_MASK_RAW_CLOCK) {
		v->raw_clock.tv_sec = 0;
		v->raw_clock.tv_nsec = (long)sof_now_ns();
		mask |= IBV_VALUES_MASK_RAW_CLOCK;
	}
	v->comp_mask = mask;
	return 0;
}

/* ---- QP rate limit ----------------------------------------------------------- */

bool sofv_rate_limit_ok(enum ibv_qp_type t, uint32_t kbps)
{
	if (t != IBV_QPT_RC && t != IBV_QPT_UC && t != IBV_QPT_UD)
		return false;
	return !kbps || (kbps >= SOFV_RATE_LIMIT_MIN && kbps <= SOFV_RATE_LIMIT_MAX);
}

/* RTS to RTS with IBV_QP_RATE_LIMIT (the kernel's rule for this verb):
 * the transport paces the QP's packets to other hosts (requester.c);
 * same-host work is a memory copy and is not paced. */
static int modify_qp_rate_limit(struct ibv_qp *ibqp, struct ibv_qp_rate_limit_attr *attr)
{
	struct sofv_qp *qp = to_sqp(ibqp);
	struct ibv_qp_attr a;
	int err;

	if (!attr || attr->comp_mask || !sofv_rate_limit_ok(ibqp->qp_type, attr->rate_limit))
		return EINVAL;
	if (ibqp->state != IBV_QPS_RTS)
		return EINVAL;
	memset(&a, 0, sizeof(a));
	a.rate_limit = attr->rate_limit;
	err = ibv_modify_qp(ibqp, &a, IBV_QP_RATE_LIMIT);
	if (err)
		return err;
	pthread_spin_lock(&qp->sq_lock);
	qp->rl_max_burst = attr->max_burst_sz;
	qp->rl_typical_pkt = attr->typical_pkt_sz;
	pthread_spin_unlock(&qp->sq_lock);
	return 0;
}

void sofv_domain_set_ops(struct sofv_context *s)
{
	struct verbs_context *v = &s->vctx;

	pthread_mutex_init(&s->domain_lock, NULL);
	v->alloc_td = alloc_td;
	v->dealloc_td = dealloc_td;
	v->alloc_parent_domain = alloc_parent_domain;
	v->query_rt_values = query_rt_values;
	v->modify_qp_rate_limit = modify_qp_rate_limit;
	sofv_dm_set_ops(s);
}
