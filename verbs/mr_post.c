/*
 * Registration without a round trip to the daemon. A request to the daemon
 * costs a round trip between two processes (a wake-up of each), more than
 * the whole of ibv_reg_mr on hardware; so, once a context's first region
 * brought the daemon this process's memory (mem_reg.c), ibv_reg_mr checks
 * everything itself (access flags, the range mapped) and posts the region
 * in the context's region table, under a key the daemon reserved for the
 * context in advance (SOF_OP_MR_KEYS, SOF_MR_KEYS_MAX at a time): the
 * daemon takes the record at the key's first use by anyone, and checks it
 * as it checks REG_MR (common/sof_shm.h, struct sof_mr_rec;
 * daemon/ops_mr.c). The program's own engine and same-host executor find
 * the region in the context's table of MRs, as any other. A region
 * deregistered before the daemon took it is undone here alone; its key
 * goes back with the next MR_KEYS and is never used again.
 *
 * Not posted: on-demand paging (the daemon checks what it may span), an
 * imported context (the daemon refuses: the memory is another process's),
 * and when the table is full or the daemon gives no keys: then ibv_reg_mr
 * asks the daemon as before.
 *
 * Lock contract: struct sofv_mr_post's lock over its fields (the table's
 * records are the owner's while FREE or BAD, the daemon's once TAKEN);
 * taken inside no other lock of the library but the context's rpc_lock
 * (through sofv_rpc).
 */
#include "sofv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define TAB_LEN (SOF_MR_RECS * sizeof(struct sof_mr_rec))

struct sofv_mr_post {
	pthread_mutex_t lock;
	struct sof_mr_rec *tab;
	int tab_fd;			/* until the daemon has the table, else -1 */
	uint32_t keys[SOF_MR_KEYS_MAX]; /* reserved, unused */
	uint32_t nkeys;
	uint32_t drop[SOF_MR_KEYS_MAX]; /* to give back */
	uint32_t ndrop;
	uint32_t free_recs[SOF_MR_RECS]; /* a stack of free records */
	uint32_t nfree;
};

static struct sofv_mr_post *post_new(void)
{
	struct sofv_mr_post *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->tab_fd = memfd_create("softofed-mrtab", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (p->tab_fd < 0)
		goto err_free;
	if (ftruncate(p->tab_fd, (off_t)TAB_LEN) ||
	    fcntl(p->tab_fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL))
		goto err_close;
	p->tab = mmap(NULL, TAB_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, p->tab_fd, 0);
	if (p->tab == MAP_FAILED)
		goto err_close;
	for (uint32_t i = 0; i < SOF_MR_RECS; i++)
		p->free_recs[i] = SOF_MR_RECS - 1 - i;
	p->nfree = SOF_MR_RECS;
	pthread_mutex_init(&p->lock, NULL);
	return p;

err_close:
	close(p->tab_fd);
err_free:
	free(p);
	return NULL;
}

/* The context's table, made on first use. NULL: none (not for this
 * context, or it could not be made). */
static struct sofv_mr_post *post_get(struct sofv_context *s)
{
	struct sofv_mr_post *p = atomic_load(&s->mr_post);

	if (p || atomic_load(&s->mr_post_off))
		return p;
	pthread_mutex_lock(&s->mem_lock);
	p = atomic_load(&s->mr_post);
	if (!p && !atomic_load(&s->mr_post_off)) {
		p = post_new();
		if (p)
			atomic_store(&s->mr_post, p);
		else
			atomic_store(&s->mr_post_off, true);
	}
	pthread_mutex_unlock(&s->mem_lock);
	return p;
}

/* MR_KEYS: give back the dropped keys, take up to want new ones (the
 * table goes with the first call). Under p->lock. 0 or -errno. */
static int keys_sync(struct sofv_context *s, struct sofv_mr_post *p, uint32_t want)
{
	struct sof_mr_keys_req req = {.want = want, .ndrop = p->ndrop};
	struct sof_mr_keys_rep rep;
	int err;

	memcpy(req.drop, p->drop, p->ndrop * sizeof(req.drop[0]));
	err = sofv_rpc(s, SOF_OP_MR_KEYS, &req, sizeof(req), &p->tab_fd, p->tab_fd >= 0 ? 1 : 0,
		       &rep, sizeof(rep), NULL, NULL);
	if (err) {
		/* an older daemon, or an imported context: ask it each time */
		if (err != -ENOMEM)
			atomic_store(&s->mr_post_off, true);
		return err;
	}
	if (p->tab_fd >= 0) {
		close(p->tab_fd);
		p->tab_fd = -1;
	}
	p->ndrop = 0;
	for (uint32_t i = 0; i < rep.n && i < SOF_MR_KEYS_MAX && p->nkeys < SOF_MR_KEYS_MAX; i++)
		p->keys[p->nkeys++] = rep.keys[i];
	return 0;
}

int sofv_mr_post(struct sofv_context *s, struct sofv_mr *m)
{
	struct sofv_mr_post *p;
	struct sof_mr_rec *r;
	uint32_t i;

	m->rec = 0;
	if ((m->access & IBV_ACCESS_ON_DEMAND) || s->import_fd >= 0 ||
	    !atomic_load(&s->mem_attached))
		return -EAGAIN;
	p = post_get(s);
	if (!p)
		return -EAGAIN;
	pthread_mutex_lock(&p->lock);
	if (!p->nfree || (!p->nkeys && (atomic_load(&s->mr_post_off) ||
					keys_sync(s, p, SOF_MR_KEYS_MAX) || !p->nkeys))) {
		pthread_mutex_unlock(&p->lock);
		return -EAGAIN;
	}
	i = p->free_recs[--p->nfree];
	r = &p->tab[i];
	r->key = p->keys[--p->nkeys];
	r->pd = m->pd->handle;
	r->access = m->access;
	r->iova = m->iova;
	r->addr = (uintptr_t)m->ibmr.addr;
	r->length = m->ibmr.length;
	atomic_store_explicit(&r->state, SOF_MR_REC_POSTED, memory_order_release);
	pthread_mutex_unlock(&p->lock);
	m->rec = i + 1;
	m->ibmr.handle = r->key;
	m->ibmr.lkey = r->key;
	m->ibmr.rkey = r->key;
	return 0;
}

bool sofv_mr_unpost(struct sofv_context *s, struct sofv_mr *m)
{
	struct sofv_mr_post *p = atomic_load(&s->mr_post);
	uint32_t st = SOF_MR_REC_POSTED;
	struct sof_mr_rec *r;

	if (!p || !m->rec)
		return false;
	r = &p->tab[m->rec - 1];
	if (!atomic_compare_exchange_strong(&r->state, &st, SOF_MR_REC_FREE)) {
		if (st != SOF_MR_REC_BAD)
			return false; /* TAKEN: the daemon's */
		/* refused by the daemon: its key names nothing there */
		atomic_store(&r->state, SOF_MR_REC_FREE);
	}
	pthread_mutex_lock(&p->lock);
	p->drop[p->ndrop++] = r->key;
	p->free_recs[p->nfree++] = m->rec - 1;
	/* the drop list is full: give it back now (one request for
	 * SOF_MR_KEYS_MAX deregistrations) */
	if (p->ndrop == SOF_MR_KEYS_MAX && keys_sync(s, p, 0))
		p->ndrop = 0; /* the daemon forgets them when the context closes */
	pthread_mutex_unlock(&p->lock);
	m->rec = 0;
	return true;
}

void sofv_mr_rec_free(struct sofv_context *s, struct sofv_mr *m)
{
	struct sofv_mr_post *p = atomic_load(&s->mr_post);

	if (!p || !m->rec)
		return;
	atomic_store(&p->tab[m->rec - 1].state, SOF_MR_REC_FREE);
	pthread_mutex_lock(&p->lock);
	p->free_recs[p->nfree++] = m->rec - 1;
	pthread_mutex_unlock(&p->lock);
	m->rec = 0;
}

void sofv_mr_post_free(struct sofv_context *s)
{
	struct sofv_mr_post *p = atomic_load(&s->mr_post);

	if (!p)
		return;
	if (p->tab_fd >= 0)
		close(p->tab_fd);
	munmap(p->tab, TAB_LEN);
	pthread_mutex_destroy(&p->lock);
	free(p);
	atomic_store(&s->mr_post, NULL);
}
