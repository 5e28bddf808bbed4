/*
 * The memory-region ops that make a region: REG_MR and REREG_MR
 * (ibv_reg_mr(3), ibv_rereg_mr(3)); ops.c dispatches to them. And
 * registration without a round trip (sof_shm.h, struct sof_mr_rec): keys
 * reserved for a connection (MR_KEYS), and the record its library posted
 * in its region table under such a key taken at the key's first use
 * (sofd_mr_get), checked as REG_MR checks a request.
 *
 * A region is a record holding the memfd runs of its pages (none while it
 * is registered in place: SHARE_MR adds them), its PD, access
 * and a slot of the object table; executors find it by key and keep their
 * mapping only while the slot's generation stays (registry.c). Re-registering
 * makes a new record under the same key, so every executor sees the new PD
 * and access at its next access and none keeps the old mapping.
 */
#include "sofd.h"

#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Access flags a region may be registered with (the library strips the
 * optional ones it does not implement). */
#define MR_ACCESS                                                                                  \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |               \
	 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED |                   \
	 IBV_ACCESS_ON_DEMAND | IBV_ACCESS_HUGETLB | IBV_ACCESS_OPTIONAL_RANGE)

static struct sofd_pd *own_pd(struct sofd_conn *c, uint32_t h)
{
	struct sofd_pd *pd = sof_hmap_get(&sofd.pds, h);

	return pd && pd->owner == c ? pd : NULL;
}

/* Check a request's access and, when it brings pages, its runs and their
 * descriptors. 0 or -errno. */
static int mr_check(const struct sofd_req *rq, const struct sof_reg_mr_req *req)
{
	uint64_t page_off, need, total = 0;
	int err;

	if (req->access & ~(uint32_t)(MR_ACCESS | SOF_MR_INPLACE))
		return -EINVAL;
	/* IBA 10.6.3.1 (o10-35): remote write or atomic needs local write. */
	if ((req->access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(req->access & IBV_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	if (req->access & SOF_MR_INPLACE) {
		struct stat st;

		/* on demand, a region may span the address space (implicit) */
		if (req->nruns ||
		    (req->length > SOFD_MAX_MR_LEN && !(req->access & IBV_ACCESS_ON_DEMAND)))
			return -EINVAL;
		/* the process's memory and fence come once per connection */
		if (rq->nfds != (rq->via->pmem_fd < 0 ? 2 : 0))
			return -EINVAL;
		if (rq->nfds && (fstat(rq->fds[0], &st) || !S_ISREG(st.st_mode)))
			return -EINVAL;
		return rq->nfds ? sof_memfd_check(rq->fds[1], sizeof(struct sof_mem_fence)) : 0;
	}
	if (req->nruns > SOF_MAX_MR_RUNS || (int)req->nruns != rq->nfds)
		return -EINVAL;
	if (!req->nruns)
		return 0; /* REREG_MR keeping its pages: sofd_rereg_mr checks them */
	if (rq->len < SOF_REG_MR_MIN + req->nruns * sizeof(struct sof_mr_run))
		return -EINVAL;
	if (req->length > SOFD_MAX_MR_LEN)
		return -EINVAL;
	page_off = req->addr & (SOFD_PAGE - 1);
	need = page_off + req->length;
	for (uint32_t i = 0; i < req->nruns; i++) {
		const struct sof_mr_run *r = &req->runs[i];

		if (!r->length || r->length % SOFD_PAGE || r->offset % SOFD_PAGE ||
		    r->length > SOFD_MAX_MR_LEN + SOFD_PAGE || r->offset > SOFD_MAX_MR_LEN)
			return -EINVAL;
		err = sof_memfd_check(rq->fds[i], r->offset + r->length);
		if (err)
			return err;
		/* Executors map writable regions through this description. */
		if ((req->access & IBV_ACCESS_LOCAL_WRITE) &&
		    (fcntl(rq->fds[i], F_GETFL) & O_ACCMODE) != O_RDWR)
			return -EINVAL;
		total += r->length;
	}
	return total < need ? -EINVAL : 0;
}

/* The first region in place of a connection brings its process's
 * /proc/self/mem and fence page (mr_check checked them): kept with the
 * connection. 0 or -errno. */
static int take_mem(struct sofd_req *rq)
{
	void *f;

	struct sofd_conn *m = rq->via; /* whose memory: an importer's own */

	if (m->pmem_fd >= 0 || rq->nfds != 2)
		return 0;
	f = mmap(NULL, sizeof(struct sof_mem_fence), PROT_READ | PROT_WRITE, MAP_SHARED, rq->fds[1],
		 0);
	if (f == MAP_FAILED)
		return -ENOMEM;
	m->fence = f;
	m->pmem_fd = rq->fds[0];
	m->fence_fd = rq->fds[1];
	rq->fds[0] = rq->fds[1] = -1;
	return 0;
}

/* A new record of pd with the request's access, on the request's pages
 * (its descriptors are taken) or, when it brings none, on those of keep
 * (descriptors duplicated). It has a slot but no key and is on no list.
 * NULL on failure, nothing taken. */
static struct sofd_mr *mr_new(struct sofd_req *rq, const struct sof_reg_mr_req *req,
			      struct sofd_pd *pd, const struct sofd_mr *keep)
{
	struct sofd_mr *mr = calloc(1, sizeof(*mr));
	uint32_t i;

	if (!mr)
		return NULL;
	if (sofd_slot_alloc(&mr->slot, &mr->gen))
		goto err_free;
	mr->pd = pd;
	mr->owner = rq->c;
	mr->mem = keep ? keep->mem : rq->via;
	mr->access = req->access;
	if (keep) {
		mr->iova = keep->iova;
		mr->addr = keep->addr;
		mr->length = keep->length;
		mr->page_off = keep->page_off;
		for (i = 0; i < keep->nruns; i++) {
			mr->runs[i] = keep->runs[i];
			mr->fds[i] = fcntl(keep->fds[i], F_DUPFD_CLOEXEC, 3);
			if (mr->fds[i] < 0)
				goto err_fds;
		}
		mr->nruns = keep->nruns;
		mr->inplace = keep->inplace;
		return mr;
	}
	mr->iova = req->iova;
	mr->addr = req->addr;
	mr->length = req->length;
	mr->page_off = req->addr & (SOFD_PAGE - 1);
	mr->nruns = req->nruns;
	mr->inplace = req->access & SOF_MR_INPLACE;
	mr->access &= ~(uint32_t)SOF_MR_INPLACE;
	for (i = 0; i < req->nruns; i++) {
		mr->runs[i] = req->runs[i];
		mr->fds[i] = rq->fds[i];
		rq->fds[i] = -1;
		/* A read-only reopen of this memfd must not be reopenable
		 * writable through /proc by another user: drop the write
		 * bits (possible when we own the file or are root). */
		if (fchmod(mr->fds[i], 0444)) {
			/* best effort */
		}
	}
	return mr;

err_fds:
	sof_close_fds(mr->fds, (int)i);
	sofd_slot_free(mr->slot);
err_free:
	free(mr);
	return NULL;
}

/* Undo mr_new for a record never published. */
static void mr_free(struct sofd_mr *mr)
{
	sof_close_fds(mr->fds, (int)mr->nruns);
	sofd_slot_free(mr->slot);
	free(mr);
}

/* Put a keyed record on its lists and count it. */
static void mr_link(struct sofd_mr *mr, struct sof_reg_mr_rep *rep)
{
	mr->pd->users++;
	sof_list_add(&mr->owner->mrs, &mr->link);
	sofd.n.mrs++;
	mr->owner->n.mrs++;
	rep->lkey = mr->key;
	rep->rkey = mr->key;
}

int sofd_reg_mr(struct sofd_req *rq, struct sof_reg_mr_rep *rep)
{
	const struct sof_reg_mr_req *req = rq->data;
	struct sofd_mr *mr;
	struct sofd_pd *pd;
	int err;

	pd = own_pd(rq->c, req->pd);
	if (!pd)
		return -ENOENT;
	if (rq->c->n.mrs >= SOFD_CONN_MAX_MR)
		return -ENOMEM;
	if (req->nruns < 1 && !(req->access & SOF_MR_INPLACE))
		return -EINVAL;
	err = mr_check(rq, req);
	if (err)
		return err;
	err = take_mem(rq);
	if (err)
		return err;
	mr = mr_new(rq, req, pd, NULL);
	if (!mr)
		return -ENOMEM;
	mr->key = sofd_new_key();
	if (sof_hmap_put(&sofd.mrs, mr->key, mr)) {
		mr_free(mr);
		return -ENOMEM;
	}
	mr_link(mr, rep);
	return 0;
}

/* The region keeps its key, as rxe and mlx5 keep lkey and rkey, but it is
 * a new record with a new slot: releasing the old record changes the old
 * slot's generation, so every executor's mapping of it is revoked at once.
 * All that can fail comes before the old record goes, so a refused request
 * leaves the region as it was (ibv_rereg_mr(3), IBV_REREG_MR_ERR_INPUT). */
int sofd_rereg_mr(struct sofd_req *rq, struct sof_reg_mr_rep *rep)
{
	const struct sof_reg_mr_req *req = rq->data;
	struct sofd_mr *old = sofd_mr_get(req->key), *mr;
	struct sofd_pd *pd;
	int err;

	if (!old || old->owner != rq->c)
		return -ENOENT;
	pd = own_pd(rq->c, req->pd);
	if (!pd)
		return -ENOENT;
	err = mr_check(rq, req);
	if (err)
		return err;
	err = take_mem(rq);
	if (err)
		return err;
	for (uint32_t i = 0; !req->nruns && !(req->access & SOF_MR_INPLACE) && i < old->nruns; i++)
		if ((req->access & IBV_ACCESS_LOCAL_WRITE) &&
		    (fcntl(old->fds[i], F_GETFL) & O_ACCMODE) != O_RDWR)
			return -EINVAL;
	mr = mr_new(rq, req, pd, req->nruns || (req->access & SOF_MR_INPLACE) ? NULL : old);
	if (!mr)
		return -ENOMEM;
	mr->key = old->key;
	if (sof_hmap_put(&sofd.mrs, mr->key, mr)) {
		mr_free(mr);
		return -ENOMEM;
	}
	sofd_mr_release(old); /* the key stays with mr */
	mr_link(mr, rep);
	return 0;
}

/* SHARE_MR: the owner moved the pages of a region in place onto memfds
 * (because a peer asked, sof_mem_fence.req): the record gets the runs, and
 * keeps key, slot and generation, so no executor's view is revoked; peers
 * open it again when the fence's move count changes, and map it. Without
 * runs: the owner will not move it (shared, hugetlb). */
int sofd_share_mr(struct sofd_req *rq)
{
	const struct sof_reg_mr_req *req = rq->data;
	struct sofd_mr *mr = sofd_mr_get(req->key);
	int err;

	if (!mr || mr->owner != rq->c)
		return -ENOENT;
	if (!mr->inplace || mr->nruns || (req->access & SOF_MR_INPLACE) || req->addr != mr->addr ||
	    req->length != mr->length || req->access != mr->access)
		return -EINVAL;
	if (!req->nruns) { /* the owner will not move it */
		if (rq->nfds)
			return -EINVAL;
		mr->stays = true;
		return 0;
	}
	err = mr_check(rq, req);
	if (err)
		return err;
	for (uint32_t i = 0; i < req->nruns; i++) {
		mr->runs[i] = req->runs[i];
		mr->fds[i] = rq->fds[i];
		rq->fds[i] = -1;
		if (fchmod(mr->fds[i], 0444)) {
			/* best effort, as in mr_new */
		}
	}
	mr->nruns = req->nruns;
	return 0;
}

/* The request a peer of the owner's user makes (verbs/remote_cache.c), in
 * the daemon's ring of the fence (common/sof_shm.h, sof_fence_ask_move). */
void sofd_mem_ask_move(const struct sofd_mr *mr)
{
	struct sof_mem_fence *f = mr->mem->fence;

	if (f)
		sof_fence_ask_move(f, f->req_any, mr->key);
}

/* ---- registration without a round trip ------------------------------------------- */

static int rsv_add(struct sofd_conn *c, uint32_t key)
{
	if (c->nrsv == c->rsv_cap) {
		uint32_t cap = c->rsv_cap ? 2 * c->rsv_cap : SOF_MR_KEYS_MAX;
		uint32_t *r = realloc(c->rsv, cap * sizeof(*r));

		if (!r)
			return -ENOMEM;
		c->rsv = r;
		c->rsv_cap = cap;
	}
	if (sof_hmap_put(&sofd.mr_rsv, key, c))
		return -ENOMEM;
	c->rsv[c->nrsv++] = key;
	return 0;
}

/* Forget the keys of c that were taken or dropped. */
static void rsv_prune(struct sofd_conn *c)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < c->nrsv; i++)
		if (sof_hmap_get(&sofd.mr_rsv, c->rsv[i]) == c)
			c->rsv[n++] = c->rsv[i];
	c->nrsv = n;
}

void sofd_mr_keys_release(struct sofd_conn *c)
{
	for (uint32_t i = 0; i < c->nrsv; i++)
		if (sof_hmap_get(&sofd.mr_rsv, c->rsv[i]) == c)
			sof_hmap_del(&sofd.mr_rsv, c->rsv[i]);
	free(c->rsv);
	c->rsv = NULL;
	c->nrsv = c->rsv_cap = 0;
	if (c->mr_tab)
		munmap(c->mr_tab, SOF_MR_RECS * sizeof(*c->mr_tab));
	c->mr_tab = NULL;
}

/* Not for an importer's alias (whose memory is another process's), and
 * only once the connection's process memory is here (its first region in
 * place went through REG_MR): a record is always in place. */
int sofd_mr_keys(struct sofd_req *rq, struct sof_mr_keys_rep *rep)
{
	const struct sof_mr_keys_req *req = rq->data;
	struct sofd_conn *c = rq->c;
	size_t tab_len = SOF_MR_RECS * sizeof(struct sof_mr_rec);
	int err;

	if (c != rq->via)
		return -EOPNOTSUPP;
	if (req->want > SOF_MR_KEYS_MAX || req->ndrop > SOF_MR_KEYS_MAX || c->pmem_fd < 0 ||
	    rq->nfds != (c->mr_tab ? 0 : 1))
		return -EINVAL;
	if (rq->nfds) {
		void *t;

		err = sof_memfd_check(rq->fds[0], tab_len);
		if (err)
			return err;
		t = mmap(NULL, tab_len, PROT_READ | PROT_WRITE, MAP_SHARED, rq->fds[0], 0);
		if (t == MAP_FAILED)
			return -ENOMEM;
		c->mr_tab = t;
	}
	for (uint32_t i = 0; i < req->ndrop; i++)
		if (sof_hmap_get(&sofd.mr_rsv, req->drop[i]) == c)
			sof_hmap_del(&sofd.mr_rsv, req->drop[i]);
	rsv_prune(c);
	memset(rep, 0, sizeof(*rep));
	/* no more keys waiting than the table has records */
	while (rep->n < req->want && c->nrsv < SOF_MR_RECS) {
		uint32_t key = sofd_new_key();

		if (rsv_add(c, key))
			break;
		rep->keys[rep->n++] = key;
	}
	return 0;
}

/* A region of c from its posted record r (a copy): as REG_MR of a region
 * in place. NULL when refused. */
static struct sofd_mr *rec_register(struct sofd_conn *c, const struct sof_mr_rec *r)
{
	struct sof_reg_mr_req req = {.pd = r->pd,
				     .access = r->access | SOF_MR_INPLACE,
				     .iova = r->iova,
				     .addr = r->addr,
				     .length = r->length};
	struct sofd_req rq = {.c = c, .via = c, .op = SOF_OP_REG_MR, .data = &req};
	struct sof_reg_mr_rep rep;
	struct sofd_pd *pd = own_pd(c, r->pd);
	struct sofd_mr *mr;

	if (!pd || c->n.mrs >= SOFD_CONN_MAX_MR || (r->access & SOF_MR_INPLACE) ||
	    mr_check(&rq, &req))
		return NULL;
	mr = mr_new(&rq, &req, pd, NULL);
	if (!mr)
		return NULL;
	mr->key = r->key;
	if (sof_hmap_put(&sofd.mrs, mr->key, mr)) {
		mr_free(mr);
		return NULL;
	}
	mr_link(mr, &rep);
	return mr;
}

/* Take record i of c's table if it is posted under key. */
static struct sofd_mr *rec_take_at(struct sofd_conn *c, uint32_t i, uint32_t key)
{
	struct sof_mr_rec *t = &c->mr_tab[i];
	uint32_t st = SOF_MR_REC_POSTED;
	struct sof_mr_rec r;
	struct sofd_mr *mr;

	if (t->key != key ||
	    atomic_load_explicit(&t->state, memory_order_acquire) != SOF_MR_REC_POSTED ||
	    !atomic_compare_exchange_strong(&t->state, &st, SOF_MR_REC_TAKEN))
		return NULL;
	/* the library writes a record only while it is FREE or BAD: ours
	 * from here, copied once */
	r.key = t->key;
	r.pd = t->pd;
	r.access = t->access;
	r.iova = t->iova;
	r.addr = t->addr;
	r.length = t->length;
	mr = r.key == key ? rec_register(c, &r) : NULL;
	if (!mr) {
		atomic_store_explicit(&t->state, SOF_MR_REC_BAD, memory_order_release);
		return NULL;
	}
	sof_hmap_del(&sofd.mr_rsv, key);
	return mr;
}

/* Take c's posted record of key. */
static struct sofd_mr *rec_take(struct sofd_conn *c, uint32_t key)
{
	for (uint32_t i = 0; c->mr_tab && i < SOF_MR_RECS; i++) {
		struct sofd_mr *mr = rec_take_at(c, i, key);

		if (mr)
			return mr;
	}
	return NULL;
}

void sofd_mr_take_pd(struct sofd_conn *c, uint32_t pd)
{
	for (uint32_t i = 0; c->mr_tab && i < SOF_MR_RECS; i++)
		if (c->mr_tab[i].pd == pd &&
		    atomic_load_explicit(&c->mr_tab[i].state, memory_order_acquire) ==
			SOF_MR_REC_POSTED &&
		    sof_hmap_get(&sofd.mr_rsv, c->mr_tab[i].key) == c)
			(void)rec_take_at(c, i, c->mr_tab[i].key);
}

struct sofd_mr *sofd_mr_get(uint32_t key)
{
	struct sofd_mr *mr = sof_hmap_get(&sofd.mrs, key);
	struct sofd_conn *c;

	if (mr)
		return mr;
	c = sof_hmap_get(&sofd.mr_rsv, key);
	return c && !c->dead ? rec_take(c, key) : NULL;
}
