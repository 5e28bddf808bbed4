/*
 * Device memory: ibv_alloc_dm, ibv_free_dm, ibv_memcpy_to_dm and
 * ibv_memcpy_from_dm (the ops of struct ibv_dm), ibv_reg_dm_mr.
 *
 * The "device" of a software HCA is the host, so its on-device memory is a
 * page-aligned private mapping of the process, at most SOFV_MAX_DM_SIZE
 * bytes per allocation. What makes it device memory is how it is reached:
 * through the copy verbs, and as a zero-based memory region
 * (IBV_ACCESS_ZERO_BASED, which the kernel requires of a DM MR), whose
 * addresses in local SGEs and remote accesses are offsets into the region
 * (iova 0 at dm_offset). Registration is that of any memory (pd_mr.c), so
 * a DM MR serves same-host and remote peers like any MR. Errors follow
 * mlx5: EFAULT for a copy outside the allocation, EINVAL for a copy
 * whose offset or length is not a multiple of 4 (mlx5's device memory is
 * reached by 4-byte words; rdma-core's tests expect the refusal) or for bad
 * attributes, EBUSY for freeing memory an MR still covers.
 */
#include "sofv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct sofv_dm {
	struct ibv_dm ibdm;
	uint8_t *base;
	size_t length; /* as asked */
	size_t maplen; /* rounded up to pages */
};

static struct sofv_dm *to_sdm(struct ibv_dm *dm)
{
	return sof_container_of(dm, struct sofv_dm, ibdm);
}

static int dm_to(struct ibv_dm *ibdm, uint64_t off, const void *host, size_t len)
{
	struct sofv_dm *dm = to_sdm(ibdm);

	if (off > dm->length || len > dm->length - off)
		return EFAULT;
	if ((off | len) & 3)
		return EINVAL;
	memcpy(dm->base + off, host, len);
	return 0;
}

static int dm_from(void *host, struct ibv_dm *ibdm, uint64_t off, size_t len)
{
	struct sofv_dm *dm = to_sdm(ibdm);

	if (off > dm->length || len > dm->length - off)
		return EFAULT;
	if ((off | len) & 3)
		return EINVAL;
	memcpy(host, dm->base + off, len);
	return 0;
}

static struct ibv_dm *alloc_dm(struct ibv_context *ctx, struct ibv_alloc_dm_attr *attr)
{
	long page = sysconf(_SC_PAGESIZE);
	struct sofv_dm *dm;
	void *p;

	if (page <= 0)
		page = 4096;
	if (!attr || attr->comp_mask || !attr->length || attr->length > SOFV_MAX_DM_SIZE ||
	    attr->log_align_req > 12) {
		errno = EINVAL;
		return NULL;
	}
	dm = calloc(1, sizeof(*dm));
	if (!dm) {
		errno = ENOMEM;
		return NULL;
	}
	dm->length = attr->length;
	dm->maplen = (attr->length + (size_t)page - 1) & ~((size_t)page - 1);
	p = mmap(NULL, dm->maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		free(dm);
		errno = ENOMEM;
		return NULL;
	}
	dm->base = p;
	dm->ibdm.context = ctx;
	dm->ibdm.memcpy_to_dm = dm_to;
	dm->ibdm.memcpy_from_dm = dm_from;
	dm->ibdm.handle = (uint32_t)sof_random32();
	return &dm->ibdm;
}

/* Whether an MR of the context covers part of dm. Takes obj_lock. */
static bool dm_in_use(struct sofv_context *s, const struct sofv_dm *dm)
{
	uint32_t pos = 0;
	uint64_t key;
	bool used = false;
	struct sofv_mr *m;

	pthread_rwlock_rdlock(&s->obj_lock);
	while (!used && (m = sof_hmap_next(&s->mrs, &pos, &key))) {
		uintptr_t a = (uintptr_t)m->ibmr.addr;

		used = a < (uintptr_t)dm->base + dm->maplen &&
		       a + m->ibmr.length > (uintptr_t)dm->base;
	}
	pthread_rwlock_unlock(&s->obj_lock);
	return used;
}

static int free_dm(struct ibv_dm *ibdm)
{
	struct sofv_dm *dm = to_sdm(ibdm);

	if (dm_in_use(to_sctx(ibdm->context), dm))
		return EBUSY;
	munmap(dm->base, dm->maplen);
	free(dm);
	return 0;
}

static struct ibv_mr *reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *ibdm, uint64_t off, size_t length,
				unsigned int access)
{
	struct sofv_dm *dm = to_sdm(ibdm);
	struct ibv_mr *mr;

	if (!(access & IBV_ACCESS_ZERO_BASED) || ibdm->context != pd->context || !length ||
	    off > dm->length || length > dm->length - off) {
		errno = EINVAL;
		return NULL;
	}
	access &= ~(unsigned int)IBV_ACCESS_ZERO_BASED;
	mr = ibv_reg_mr_iova2(pd, dm->base + off, length, 0, access);
	return mr;
}

void sofv_dm_set_ops(struct sofv_context *s)
{
	s->vctx.alloc_dm = alloc_dm;
	s->vctx.free_dm = free_dm;
	s->vctx.reg_dm_mr = reg_dm_mr;
}
