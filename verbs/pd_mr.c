/*
 * Protection domains and memory regions: ibv_alloc_pd, ibv_dealloc_pd, the
 * ibv_reg_mr family, ibv_rereg_mr and ibv_dereg_mr.
 *
 * Registering records the region in place (mem_reg.c) with the daemon,
 * which issues the key (lkey == rkey, random) and later lets executors
 * that present the key with the right PD and access reach the pages (IBA
 * 10.6.3, o10-35); after a context's first region, without a request:
 * the daemon reserved the key and takes the record at its first use
 * (mr_post.c). The library keeps each MR by lkey for the local checks of
 * the data path.
 */
#include "sofv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#undef ibv_reg_mr
#undef ibv_reg_mr_iova

/* ---- protection domains ---------------------------------------------------- */

SOFV_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct sof_pd_rep rep;
	struct sofv_pd *pd;
	int err;

	if (!context) {
		errno = EINVAL;
		return NULL;
	}
	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	err = -sofv_rpc(to_sctx(context), SOF_OP_ALLOC_PD, NULL, 0, NULL, 0, &rep, sizeof(rep),
			NULL, NULL);
	if (err) {
		free(pd);
		errno = err;
		return NULL;
	}
	pd->handle = rep.pd;
	pd->ibpd.context = context;
	pd->ibpd.handle = rep.pd;
	return &pd->ibpd;
}

SOFV_EXPORT int ibv_dealloc_pd(struct ibv_pd *ibpd)
{
	struct sof_pd_req req;
	struct sofv_pd *pd;
	int err;

	if (!ibpd)
		return EINVAL;
	pd = to_spd(ibpd);
	if (pd->parent)
		return sofv_dealloc_parent_domain(pd);
	/* AHs and parent domains live only in the library; the daemon counts
	 * everything else. */
	if (atomic_load(&pd->nah))
		return EBUSY;
	memset(&req, 0, sizeof(req));
	req.pd = pd->handle;
	err = -sofv_rpc(to_sctx(ibpd->context), SOF_OP_DEALLOC_PD, &req, sizeof(req), NULL, 0, NULL,
			0, NULL, NULL);
	if (err && err != ENOTCONN && err != EPIPE && err != ECONNRESET)
		return err;
	free(pd);
	return 0;
}

/* ---- memory regions ---------------------------------------------------------- */

#define MR_ACCESS                                                                                  \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |               \
	 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND)

/* Check access flags (ibv_reg_mr(3)); the optional range may be ignored by
 * a device, so it is dropped. Returns the flags to register or -errno. */
static int mr_access(unsigned int access)
{
	access &= ~(unsigned int)IBV_ACCESS_OPTIONAL_RANGE;
	if (access & (IBV_ACCESS_ZERO_BASED | IBV_ACCESS_HUGETLB))
		return -EOPNOTSUPP;
	if (access & ~(unsigned int)(MR_ACCESS | IBV_ACCESS_ON_DEMAND))
		return -EINVAL;
	/* IBA 10.6.3.1 o10-35: remote write or atomic needs local write */
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	return (int)access;
}

/* Register [addr, addr+length) into m (its ibmr filled), in place
 * (mem_reg.c); the context's first registration hands the daemon this
 * process's /proc/self/mem and fence. 0 or -errno. */
static int mr_register(struct sofv_pd *pd, void *addr, size_t length, uint64_t iova,
		       unsigned int access, struct sofv_mr *m)
{
	struct sofv_context *s = to_sctx(pd->ibpd.context);
	struct sof_reg_mr_req req;
	struct sof_reg_mr_rep rep;
	bool attach = false, odp, implicit, posted;
	int fds[2], acc, err;

	acc = mr_access(access);
	if (acc < 0)
		return acc;
	odp = acc & IBV_ACCESS_ON_DEMAND;
	/* implicit ODP: the whole address space, any address at use time */
	implicit = odp && !addr && length == SIZE_MAX;
	if (!implicit && (!length || length > SOFV_MAX_MR_SIZE))
		return -EINVAL;
	if (!addr && !implicit)
		return -EFAULT;
	if (!atomic_load(&s->mem_attached)) {
		pthread_mutex_lock(&s->mem_lock);
		attach = !atomic_load(&s->mem_attached);
		if (!attach)
			pthread_mutex_unlock(&s->mem_lock);
	}
	/* on demand: pages are looked up at each access, so none need be
	 * mapped now (as ib_umem_odp) */
	err = sofv_mem_inplace(addr, length, odp, acc & MR_ACCESS & ~IBV_ACCESS_REMOTE_READ, attach,
			       fds);
	m->access = (uint32_t)acc;
	m->iova = iova;
	m->pd = pd;
	m->ibmr.addr = addr;
	m->ibmr.length = length;
	/* after the first region, checked here: no request (mr_post.c) */
	posted = !err && !attach && !sofv_mr_post(s, m);
	if (!err && !posted) {
		memset(&req, 0, offsetof(struct sof_reg_mr_req, runs));
		req.pd = pd->handle;
		req.access = (uint32_t)acc | SOF_MR_INPLACE;
		req.iova = iova;
		req.addr = (uintptr_t)addr;
		req.length = length;
		err = sofv_rpc(s, SOF_OP_REG_MR, &req, offsetof(struct sof_reg_mr_req, runs), fds,
			       attach ? 2 : 0, &rep, sizeof(rep), NULL, NULL);
		if (attach)
			sof_close_fds(fds, 2);
		if (!err && attach)
			atomic_store(&s->mem_attached, true);
	}
	if (attach)
		pthread_mutex_unlock(&s->mem_lock);
	if (err)
		return err;
	m->ibmr.context = pd->ibpd.context;
	m->ibmr.pd = &pd->ibpd;
	if (!posted) {
		m->ibmr.handle = rep.lkey;
		m->ibmr.lkey = rep.lkey;
		m->ibmr.rkey = rep.rkey;
	}
	/* never moved onto memfds: a memfd would keep pages the program
	 * unmapped or replaced, and ODP follows the address space */
	m->ip_tried = odp;
	sofv_mem_track(m);
	return 0;
}

/* Pages a region no longer holds: after the daemon retired its record,
 * wait for peers' copies in flight, then move its pages back when a peer
 * had them moved. */
static void mr_release_pages(struct sofv_seg **segs, int nsegs)
{
	sofv_mem_fence();
	sofv_mem_unshare(segs, nsegs);
}

/* Undo mr_register. 0 or -errno (then nothing changed). */
static int mr_unregister(struct sofv_mr *m)
{
	struct sofv_context *s = to_sctx(m->ibmr.context);
	struct sof_dereg_mr_req req;
	int err;

	sofv_mem_untrack(m);
	/* a region the daemon never took is gone with its record */
	if (sofv_mr_unpost(s, m))
		goto out;
	memset(&req, 0, sizeof(req));
	req.lkey = m->ibmr.lkey;
	err = sofv_rpc(s, SOF_OP_DEREG_MR, &req, sizeof(req), NULL, 0, NULL, 0, NULL, NULL);
	if (err && err != -ENOTCONN && err != -EPIPE && err != -ECONNRESET) {
		sofv_mem_track(m);
		return err;
	}
	sofv_mr_rec_free(s, m);
out:
	mr_release_pages(m->segs, m->nsegs);
	m->segs = NULL;
	m->nsegs = 0;
	return 0;
}

static int mr_publish(struct sofv_mr *m)
{
	struct sofv_context *s = to_sctx(m->ibmr.context);
	int err;

	pthread_rwlock_wrlock(&s->obj_lock);
	err = sof_hmap_put(&s->mrs, m->ibmr.lkey, m);
	pthread_rwlock_unlock(&s->obj_lock);
	return err;
}

static void mr_unpublish(struct sofv_mr *m)
{
	struct sofv_context *s = to_sctx(m->ibmr.context);

	sofv_engine_lock(s);
	pthread_rwlock_wrlock(&s->obj_lock);
	sof_hmap_del(&s->mrs, m->ibmr.lkey);
	/* QPs drop what they cached of it (same_host.c, local_sgl) */
	atomic_fetch_add_explicit(&s->mr_gen, 1, memory_order_release);
	pthread_rwlock_unlock(&s->obj_lock);
	sofv_engine_unlock(s);
}

SOFV_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length,
					    uint64_t iova, unsigned int access)
{
	struct sofv_mr *m;
	int err;

	if (!pd) {
		errno = EINVAL;
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		errno = ENOMEM;
		return NULL;
	}
	err = mr_register(to_spd(pd), addr, length, iova, access, m);
	if (!err) {
		err = mr_publish(m);
		if (err)
			mr_unregister(m);
	}
	if (err) {
		free(m);
		errno = -err;
		return NULL;
	}
	return &m->ibmr;
}

SOFV_EXPORT struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, (uintptr_t)addr, (unsigned int)access);
}

SOFV_EXPORT struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length,
					   uint64_t iova, int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, iova, (unsigned int)access);
}

SOFV_EXPORT int ibv_dereg_mr(struct ibv_mr *mr)
{
	struct sofv_mr *m;
	int err;

	if (!mr)
		return EINVAL;
	m = to_smr(mr);
	mr_unpublish(m);
	err = mr_unregister(m);
	if (err) {
		mr_publish(m);
		return -err;
	}
	free(m);
	return 0;
}

/* ibv_rereg_mr's failures return a code and, like rdma-core, set errno. */
static int rereg_fail(int code, int err)
{
	errno = err;
	return code;
}

/* The code ibv_rereg_mr(3) gives a refusal: an input error leaves the old
 * MR valid; so does every refusal here, the daemon changing nothing until
 * it can change everything. */
static int rereg_code(int err)
{
	return err == -EINVAL || err == -EFAULT || err == -EOPNOTSUPP || err == -ENOENT
		   ? IBV_REREG_MR_ERR_INPUT
		   : IBV_REREG_MR_ERR_CMD;
}

/* ibv_rereg_mr(3): the region keeps lkey and rkey, as rxe and mlx5 keep
 * them; the daemon swaps its record under the key (REREG_MR), which
 * revokes every executor's mapping of the old one, and the library swaps
 * the PD, access and translation its own executor checks under the engine
 * lock, as ibv_dereg_mr takes a region out. A refused request changes
 * nothing. */
SOFV_EXPORT int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr,
			     size_t length, int access)
{
	bool xlat = flags & IBV_REREG_MR_CHANGE_TRANSLATION;
	struct sof_reg_mr_req req;
	struct sof_reg_mr_rep rep;
	struct sofv_seg **old_segs;
	struct sofv_context *s;
	struct sofv_pd *npd;
	struct sofv_mr *m;
	int old_nsegs, acc, err;

	if (!mr || !flags || (flags & ~IBV_REREG_MR_FLAGS_SUPPORTED))
		return rereg_fail(IBV_REREG_MR_ERR_INPUT, EINVAL);
	m = to_smr(mr);
	s = to_sctx(mr->context);
	if ((flags & IBV_REREG_MR_CHANGE_PD) && (!pd || pd->context != mr->context))
		return rereg_fail(IBV_REREG_MR_ERR_INPUT, EINVAL);
	if (xlat && (!addr || !length || length > SOFV_MAX_MR_SIZE))
		return rereg_fail(IBV_REREG_MR_ERR_INPUT, EINVAL);
	npd = (flags & IBV_REREG_MR_CHANGE_PD) ? to_spd(pd) : m->pd;
	acc = mr_access((flags & IBV_REREG_MR_CHANGE_ACCESS) ? (unsigned int)access : m->access);
	if (acc < 0)
		return rereg_fail(IBV_REREG_MR_ERR_INPUT, -acc);
	if (xlat) {
		err = sofv_mem_inplace(addr, length, acc & IBV_ACCESS_ON_DEMAND,
				       acc & MR_ACCESS & ~IBV_ACCESS_REMOTE_READ, false, NULL);
		if (err)
			return rereg_fail(rereg_code(err), -err);
	}
	memset(&req, 0, offsetof(struct sof_reg_mr_req, runs));
	req.key = mr->lkey;
	req.pd = npd->handle;
	/* without a new translation the daemon keeps the pages (and any runs
	 * a move gave them) */
	req.access = (uint32_t)acc | (xlat ? SOF_MR_INPLACE : 0);
	req.iova = xlat ? (uintptr_t)addr : m->iova;
	req.addr = xlat ? (uintptr_t)addr : (uintptr_t)mr->addr;
	req.length = xlat ? length : mr->length;
	/* no move of the old pages from here on (mem_reg.c) */
	sofv_mem_untrack(m);
	err = sofv_rpc(s, SOF_OP_REREG_MR, &req, offsetof(struct sof_reg_mr_req, runs), NULL, 0,
		       &rep, sizeof(rep), NULL, NULL);
	if (!err && (rep.lkey != mr->lkey || rep.rkey != mr->rkey))
		err = -EPROTO; /* cannot happen: the daemon keeps the key */
	if (err) {
		sofv_mem_track(m);
		return rereg_fail(rereg_code(err), -err);
	}
	old_segs = m->segs;
	old_nsegs = m->nsegs;
	sofv_engine_lock(s);
	pthread_rwlock_wrlock(&s->obj_lock);
	m->access = (uint32_t)acc;
	m->pd = npd;
	m->ibmr.pd = &npd->ibpd;
	if (xlat) {
		m->iova = (uintptr_t)addr;
		m->ibmr.addr = addr;
		m->ibmr.length = length;
		m->segs = NULL;
		m->nsegs = 0;
	}
	m->ip_tried = acc & IBV_ACCESS_ON_DEMAND;
	/* QPs drop what they cached of it (same_host.c, local_sgl) */
	atomic_fetch_add_explicit(&s->mr_gen, 1, memory_order_release);
	pthread_rwlock_unlock(&s->obj_lock);
	sofv_engine_unlock(s);
	/* the old record is revoked: peers' copies in flight end first */
	if (xlat)
		mr_release_pages(old_segs, old_nsegs);
	else
		sofv_mem_fence();
	sofv_mem_track(m);
	return 0;
}

/* ibv_advise_mr(3) (prefetch of on-demand regions): every SGE must lie in
 * an ODP region of pd (ENOENT otherwise, as mlx5), writable for
 * PREFETCH_WRITE; the pages are then faulted in (MADV_POPULATE_*), which
 * is what a later access would do. PREFETCH_NO_FAULT has nothing to do. */
int sofv_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags,
		   struct ibv_sge *sg_list, uint32_t num_sge)
{
	struct sofv_context *s = to_sctx(pd->context);
	bool wr = advice == IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE;

	if ((advice != IBV_ADVISE_MR_ADVICE_PREFETCH && !wr &&
	     advice != IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT) ||
	    (flags & ~(uint32_t)IBV_ADVISE_MR_FLAG_FLUSH) || !sg_list || !num_sge)
		return EINVAL;
	for (uint32_t i = 0; i < num_sge; i++) {
		const struct ibv_sge *g = &sg_list[i];
		struct sofv_mr *m;
		bool ok;

		pthread_rwlock_rdlock(&s->obj_lock);
		m = sof_hmap_get(&s->mrs, g->lkey);
		ok = m && m->pd == to_spd(pd) && (m->access & IBV_ACCESS_ON_DEMAND) &&
		     (!wr || (m->access & IBV_ACCESS_LOCAL_WRITE)) && g->addr >= m->iova &&
		     g->length <= m->ibmr.length && g->addr - m->iova <= m->ibmr.length - g->length;
		pthread_rwlock_unlock(&s->obj_lock);
		if (!ok)
			return ENOENT;
	}
	if (advice == IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT)
		return 0;
	for (uint32_t i = 0; i < num_sge; i++) {
		uintptr_t a = (uintptr_t)sg_list[i].addr & ~(uintptr_t)4095;
		size_t n =
		    ((uintptr_t)sg_list[i].addr + sg_list[i].length - a + 4095) & ~(size_t)4095;

		if (sg_list[i].length &&
		    madvise((void *)a, n, wr ? MADV_POPULATE_WRITE : MADV_POPULATE_READ))
			return EFAULT;
	}
	return 0;
}
