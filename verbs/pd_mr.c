/*
 * Protection domains and memory regions: ibv_alloc_pd, ibv_dealloc_pd, the
 * ibv_reg_mr family, ibv_rereg_mr and ibv_dereg_mr.
 *
 * Registering moves the region's pages onto shareable memfds (mem_share.c) and
 * hands them to the daemon, which issues the key (lkey == rkey, random) and
 * later gives the pages to executors that present the key with the right
 * PD and access (IBA 10.6.3, o10-35). The library keeps each MR by lkey for
 * the local checks of the data path.
 */
#include "sofv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
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
	/* AHs live only in the library; the daemon counts everything else. */
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
	if (access & (IBV_ACCESS_ZERO_BASED | IBV_ACCESS_ON_DEMAND |
		      IBV_ACCESS_HUGETLB))
		return -EOPNOTSUPP;
	if (access & ~(unsigned int)MR_ACCESS)
		return -EINVAL;
	/* IBA 10.6.3.1 o10-35: remote write or atomic needs local write */
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	return (int)access;
}

/* Register [addr, addr+length) into m (its ibmr filled). 0 or -errno. */
static int mr_register(struct sofv_pd *pd, void *addr, size_t length, uint64_t iova,
		       unsigned int access, struct sofv_mr *m)
{
	struct sofv_context *s = to_sctx(pd->ibpd.context);
	struct sof_reg_mr_req *req;
	struct sof_reg_mr_rep rep;
	int fds[SOF_MAX_MR_RUNS], nruns = 0, acc, err;

	acc = mr_access(access);
	if (acc < 0)
		return acc;
	if (!length || length > SOFV_MAX_MR_SIZE)
		return -EINVAL;
	if (!addr)
		return -EFAULT;
	req = calloc(1, sizeof(*req));
	if (!req)
		return -ENOMEM;
	err = sofv_mem_share(addr, length, req->runs, fds, &nruns, &m->segs, &m->nsegs);
	if (err)
		goto out;
	req->pd = pd->handle;
	req->access = (uint32_t)acc;
	req->iova = iova;
	req->addr = (uintptr_t)addr;
	req->length = length;
	req->nruns = (uint32_t)nruns;
	err = sofv_rpc(s, SOF_OP_REG_MR, req,
		       offsetof(struct sof_reg_mr_req, runs) + sizeof(req->runs[0]) * (size_t)nruns,
		       fds, nruns, &rep, sizeof(rep), NULL, NULL);
	sof_close_fds(fds, nruns);
	if (err) {
		sofv_mem_unshare(m->segs, m->nsegs);
		m->segs = NULL;
		m->nsegs = 0;
		goto out;
	}
	m->access = (uint32_t)acc;
	m->iova = iova;
	m->pd = pd;
	m->ibmr.context = pd->ibpd.context;
	m->ibmr.pd = &pd->ibpd;
	m->ibmr.addr = addr;
	m->ibmr.length = length;
	m->ibmr.handle = rep.lkey;
	m->ibmr.lkey = rep.lkey;
	m->ibmr.rkey = rep.rkey;
out:
	free(req);
	return err;
}

/* Undo mr_register. 0 or -errno (then nothing changed). */
static int mr_unregister(struct sofv_mr *m)
{
	struct sofv_context *s = to_sctx(m->ibmr.context);
	struct sof_dereg_mr_req req;
	int err;

	memset(&req, 0, sizeof(req));
	req.lkey = m->ibmr.lkey;
	err = sofv_rpc(s, SOF_OP_DEREG_MR, &req, sizeof(req), NULL, 0, NULL, 0, NULL, NULL);
	if (err && err != -ENOTCONN && err != -EPIPE && err != -ECONNRESET)
		return err;
	sofv_mem_unshare(m->segs, m->nsegs);
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
	int fds[SOF_MAX_MR_RUNS], nruns = 0, nsegs = 0, old_nsegs, acc, err;
	struct sofv_seg **segs = NULL, **old_segs;
	bool xlat = flags & IBV_REREG_MR_CHANGE_TRANSLATION;
	struct sof_reg_mr_req *req;
	struct sof_reg_mr_rep rep;
	struct sofv_context *s;
	struct sofv_pd *npd;
	struct sofv_mr *m;

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
	req = calloc(1, sizeof(*req));
	if (!req)
		return rereg_fail(IBV_REREG_MR_ERR_CMD, ENOMEM);
	if (xlat) {
		err = sofv_mem_share(addr, length, req->runs, fds, &nruns, &segs, &nsegs);
		if (err) {
			free(req);
			return rereg_fail(rereg_code(err), -err);
		}
	}
	req->key = mr->lkey;
	req->pd = npd->handle;
	req->access = (uint32_t)acc;
	req->iova = xlat ? (uintptr_t)addr : m->iova;
	req->addr = xlat ? (uintptr_t)addr : (uintptr_t)mr->addr;
	req->length = xlat ? length : mr->length;
	req->nruns = (uint32_t)nruns;
	err = sofv_rpc(s, SOF_OP_REREG_MR, req,
		       offsetof(struct sof_reg_mr_req, runs) + sizeof(req->runs[0]) * (size_t)nruns,
		       fds, nruns, &rep, sizeof(rep), NULL, NULL);
	sof_close_fds(fds, nruns);
	free(req);
	if (!err && (rep.lkey != mr->lkey || rep.rkey != mr->rkey))
		err = -EPROTO; /* cannot happen: the daemon keeps the key */
	if (err) {
		sofv_mem_unshare(segs, nsegs);
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
		m->segs = segs;
		m->nsegs = nsegs;
	}
	/* QPs drop what they cached of it (same_host.c, local_sgl) */
	atomic_fetch_add_explicit(&s->mr_gen, 1, memory_order_release);
	pthread_rwlock_unlock(&s->obj_lock);
	sofv_engine_unlock(s);
	if (xlat)
		sofv_mem_unshare(old_segs, old_nsegs);
	return 0;
}
