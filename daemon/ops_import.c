/*
 * Contexts shared between processes through their command socket
 * (ibv_import_device, ibv_import_pd, ibv_import_mr).
 *
 * With the kernel, a process that was given another's command fd (by
 * SCM_RIGHTS or fork) opens a context on the same file and reaches the
 * same objects. Here one socket cannot carry two processes' requests, as
 * replies would go to whichever reads first; so the importer proves it
 * holds the socket by sending on it a record that gets no reply (IMPORT_BIND
 * with a random nonce), and then asks on a connection of its own (IMPORT
 * with the nonce). That connection becomes an alias of the shared one:
 * every request on it acts on the shared connection's objects, which stay
 * while the shared socket is open in any process. Importer and owner must
 * be the same user. The alias gets an event socket of its own on which
 * nothing is sent (the owner's objects' events go to the owner), and it
 * does not run the transport of QPs in its process (NET_ENGINE is refused,
 * so the daemon's engine serves them).
 */
#include "sofd.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static union {
	struct sof_hello_rep hello;
	struct sof_query_mr_rep mr;
} ibuf;

static struct sofd_conn *root(struct sofd_conn *c) { return c->alias ? c->alias : c; }

/* The IMPORT_BIND record, read on c: remember its nonce. Malformed ones
 * are dropped (the record has no reply to carry an error). */
void sofd_import_bind(struct sofd_conn *c, const void *data, size_t len)
{
	struct sofd_conn *r = root(c);

	if (len != sizeof(struct sof_import_req) || !r->ctx_id || c->orphan)
		return;
	memcpy(r->import_nonce, data, sizeof(r->import_nonce));
	r->import_armed = true;
}

int sofd_import(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct sof_import_req *req = rq->data;
	struct sofd_conn *c = rq->via, *owner = NULL;
	int err;

	if (c->ctx_id || c->alias || c->orphan)
		return -EALREADY;
	for (struct sof_link *l = sofd.conns.next; l != &sofd.conns; l = l->next) {
		struct sofd_conn *x = sof_container_of(l, struct sofd_conn, link);

		if (x != c && !x->dead && x->import_armed &&
		    !memcmp(x->import_nonce, req->nonce, sizeof(req->nonce))) {
			owner = x;
			break;
		}
	}
	if (!owner)
		return -EAGAIN; /* the record on the shared socket is not read yet */
	if (owner->uid != c->uid)
		return -EPERM;
	err = sofd_hello_answer(rp, &ibuf.hello, &c->async_fd);
	if (err)
		return err;
	owner->import_armed = false;
	c->alias = owner;
	ibuf.hello.ctx_id = owner->ctx_id;
	sofd_log("conn %u imports the context of conn %u (pid %d)", c->id, owner->id,
		 (int)owner->pid);
	return 0;
}

int sofd_query_pd(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct sof_pd_req *req = rq->data;
	struct sofd_pd *pd = sof_hmap_get(&sofd.pds, req->pd);

	(void)rp;
	return pd && pd->owner == rq->c ? 0 : -EINVAL;
}

int sofd_query_mr(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct sof_query_mr_req *req = rq->data;
	struct sofd_mr *mr = sofd_mr_get(req->key);

	if (!mr || mr->owner != rq->c || mr->pd->handle != req->pd)
		return -EINVAL;
	ibuf.mr = (struct sof_query_mr_rep){
	    .key = mr->key,
	    .access = mr->access,
	    .addr = mr->addr,
	    .length = mr->length,
	    .iova = mr->iova,
	    /* the importer is the process that holds the memory (a context
	     * imported within one process): its lkey serves it too */
	    .mine = mr->mem && mr->mem->pid == rq->c->pid,
	};
	rp->data = &ibuf;
	rp->len = sizeof(ibuf.mr);
	return 0;
}

/* c is closing: its importers' connections lose their objects; when c is
 * an importer, the regions of its own memory go (no process holds them). */
void sofd_import_conn_closed(struct sofd_conn *c)
{
	if (c->alias) {
		struct sof_link *l = c->alias->mrs.next;

		while (l != &c->alias->mrs) {
			struct sofd_mr *mr = sof_container_of(l, struct sofd_mr, link);

			l = l->next;
			if (mr->mem == c)
				sofd_mr_release(mr);
		}
	}
	for (struct sof_link *l = sofd.conns.next; l != &sofd.conns; l = l->next) {
		struct sofd_conn *x = sof_container_of(l, struct sofd_conn, link);

		if (x->alias == c) {
			x->alias = NULL;
			x->orphan = true;
		}
	}
}
