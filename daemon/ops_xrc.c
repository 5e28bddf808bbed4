/*
 * XRC, the extended reliable connected transport (IBA 9.2.x XRC, the XRC
 * annex of the IBTA): domains, XRC SRQs and XRC TGT QPs on the daemon's
 * side (the protocol is in common/sof_proto.h).
 *
 * An XRC domain (XRCD) is what an XRC SRQ and an XRC TGT QP belong to. A
 * domain opened through a file is shared by every process that opens the
 * same file, as the kernel's uverbs does: the key is the file's device and
 * inode, and the daemon keeps a descriptor of the file while the domain
 * lives so that the inode cannot be reused meanwhile. Each ibv_open_xrcd
 * is a handle of its own (struct sofd_xrcd_h); closing a handle is -EBUSY
 * while SRQs or TGT QPs made or opened through it exist.
 *
 * An XRC SRQ has a 24-bit number, random and unique, that requesters name
 * in the XRCETH; a request reaches it only through a TGT QP of the same
 * domain, else the responder answers with an invalid-request NAK. An XRC
 * TGT QP has no PD and no CQ: what a request through it may touch is
 * checked against the PD of the SRQ it names, and its receives complete
 * on that SRQ's CQ. A TGT QP lives while its creator or a process that
 * opened it (ibv_open_qp) holds a handle; when the creator goes first, an
 * opener becomes the owner.
 */
#include "sofd.h"

#include "sof_wr.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <infiniband/verbs.h>

static struct sof_hmap xrcd_handles; /* handle -> struct sofd_xrcd_h */
static struct sof_hmap xrc_srqs;     /* SRQ number -> struct sofd_srq */
static struct sofd_xrcd *shared;     /* domains opened through a file */

static union {
	struct sof_xrcd_rep xrcd;
	struct sof_create_qp_rep qp;
} xbuf;

static void domain_put(struct sofd_xrcd *d)
{
	struct sofd_xrcd **pp;

	if (--d->refs)
		return;
	for (pp = &shared; *pp; pp = &(*pp)->next) {
		if (*pp == d) {
			*pp = d->next;
			break;
		}
	}
	if (d->fd >= 0)
		close(d->fd);
	free(d);
}

struct sofd_xrcd_h *sofd_xrc_handle(struct sofd_conn *c, uint32_t xrcd)
{
	struct sofd_xrcd_h *h = xrcd ? sof_hmap_get(&xrcd_handles, xrcd) : NULL;

	return h && h->owner == c ? h : NULL;
}

int sofd_open_xrcd(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct sof_open_xrcd_req *req = rq->data;
	struct sofd_xrcd *d = NULL;
	struct sofd_xrcd_h *h;
	struct stat st;

	if (req->has_file > 1 || rq->nfds != (int)req->has_file)
		return -EINVAL;
	if (rq->c->n.xrcds >= SOFD_CONN_MAX_XRCD)
		return -ENOMEM;
	if (req->has_file) {
		if (fstat(rq->fds[0], &st))
			return -EBADF;
		for (d = shared; d; d = d->next)
			if (d->dev == (uint64_t)st.st_dev && d->ino == (uint64_t)st.st_ino)
				break;
		/* as uverbs' open_xrcd: both are EINVAL */
		if (d && (req->oflags & O_EXCL))
			return -EINVAL;
		if (!d && !(req->oflags & O_CREAT))
			return -EINVAL;
	}
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	if (!d) {
		d = calloc(1, sizeof(*d));
		if (!d) {
			free(h);
			return -ENOMEM;
		}
		d->fd = -1;
		if (req->has_file) {
			d->fd = rq->fds[0];
			rq->fds[0] = -1;
			d->dev = (uint64_t)st.st_dev;
			d->ino = (uint64_t)st.st_ino;
			d->next = shared;
			shared = d;
		}
	}
	h->handle = sofd_new_handle(&xrcd_handles);
	if (sof_hmap_put(&xrcd_handles, h->handle, h)) {
		d->refs++;
		domain_put(d);
		free(h);
		return -ENOMEM;
	}
	d->refs++;
	h->d = d;
	h->owner = rq->c;
	rq->c->n.xrcds++;
	xbuf.xrcd.xrcd = h->handle;
	xbuf.xrcd.rsvd = 0;
	rp->data = &xbuf;
	rp->len = sizeof(xbuf.xrcd);
	return 0;
}

static void handle_release(struct sofd_xrcd_h *h)
{
	h->owner->n.xrcds--;
	sof_hmap_del(&xrcd_handles, h->handle);
	domain_put(h->d);
	free(h);
}

int sofd_close_xrcd(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct sof_xrcd_req *req = rq->data;
	struct sofd_xrcd_h *h = sofd_xrc_handle(rq->c, req->xrcd);

	(void)rp;
	if (!h)
		return -ENOENT;
	if (h->users)
		return -EBUSY;
	handle_release(h);
	return 0;
}

/* ---- XRC SRQs ---------------------------------------------------------------------- */

int sofd_xrc_srq_init(struct sofd_conn *c, struct sofd_srq *srq, uint32_t xrcd, uint32_t cqh)
{
	struct sofd_xrcd_h *h = sofd_xrc_handle(c, xrcd);
	struct sofd_cq *cq = cqh ? sof_hmap_get(&sofd.cqs, cqh) : NULL;
	uint32_t n;

	if (!h || !cq || cq->owner != c)
		return -ENOENT;
	do
		n = sof_random32() & 0xffffff;
	while (!n || sof_hmap_get(&xrc_srqs, n));
	if (sof_hmap_put(&xrc_srqs, n, srq))
		return -ENOMEM;
	srq->srqn = n;
	srq->xh = h;
	srq->cq = cq;
	h->users++;
	h->d->refs++;
	cq->users++;
	return 0;
}

void sofd_xrc_srq_release(struct sofd_srq *srq)
{
	uint32_t pos = 0;
	struct sofd_qp *qp;

	if (!srq->xh)
		return;
	/* the transport forgets it (the next request naming it is invalid) */
	while ((qp = sof_hmap_next(&sofd.qps, &pos, NULL))) {
		if (qp->xrc_cur == srq) {
			qp->xrc_cur = NULL;
			qp->tq.srq = NULL;
			qp->tq.recv_cq = NULL;
		}
	}
	sof_hmap_del(&xrc_srqs, srq->srqn);
	srq->cq->users--;
	srq->xh->users--;
	domain_put(srq->xh->d);
	srq->xh = NULL;
}

/* ---- XRC TGT QPs ---------------------------------------------------------------------- */

struct sofd_qp *sofd_xrc_qp_of(struct sofd_conn *c, uint32_t qpn)
{
	struct sofd_qp *qp = sof_hmap_get(&sofd.qps, qpn);

	if (!qp)
		return NULL;
	if (qp->owner == c)
		return qp;
	for (uint32_t i = 0; qp->type == IBV_QPT_XRC_RECV && i < qp->nxopens; i++)
		if (qp->xopens[i].c == c)
			return qp;
	return NULL;
}

int sofd_open_xrc_qp(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct sof_open_xrc_qp_req *req = rq->data;
	struct sofd_xrcd_h *h = sofd_xrc_handle(rq->c, req->xrcd);
	struct sofd_qp *qp = sof_hmap_get(&sofd.qps, req->qpn);

	if (!h)
		return -ENOENT;
	/* as ib_open_qp: no such QP, not a TGT QP, another domain */
	if (!qp || qp->type != IBV_QPT_XRC_RECV || qp->xh->d != h->d)
		return -EINVAL;
	if (qp->nxopens == qp->xopens_cap) {
		uint32_t ncap = qp->xopens_cap ? qp->xopens_cap * 2 : 4;
		struct sofd_xopen *n = realloc(qp->xopens, sizeof(*n) * ncap);

		if (!n)
			return -ENOMEM;
		qp->xopens = n;
		qp->xopens_cap = ncap;
	}
	qp->xopens[qp->nxopens++] = (struct sofd_xopen){.c = rq->c, .xh = h};
	h->users++;
	xbuf.qp.qpn = qp->qpn;
	xbuf.qp.slot = qp->slot;
	xbuf.qp.gen = qp->gen;
	rp->data = &xbuf;
	rp->len = sizeof(xbuf.qp);
	sofd_rep_fd(rp, qp->memfd, false);
	return 0;
}

static void xopen_drop(struct sofd_qp *qp, uint32_t i)
{
	qp->xopens[i].xh->users--;
	qp->xopens[i] = qp->xopens[--qp->nxopens];
}

int sofd_xrc_qp_close(struct sofd_conn *c, uint32_t qpn)
{
	struct sofd_qp *qp = sof_hmap_get(&sofd.qps, qpn);

	for (uint32_t i = 0; qp && qp->type == IBV_QPT_XRC_RECV && i < qp->nxopens; i++) {
		if (qp->xopens[i].c == c) {
			xopen_drop(qp, i);
			return 0;
		}
	}
	return -ENOENT;
}

bool sofd_xrc_qp_handover(struct sofd_qp *qp)
{
	struct sofd_xopen o;

	if (qp->type != IBV_QPT_XRC_RECV || !qp->nxopens)
		return false;
	o = qp->xopens[--qp->nxopens];
	/* the opener's handle counts the QP from now on (it did already) */
	qp->xh->users--;
	qp->xh = o.xh;
	sof_list_del(&qp->link);
	qp->owner->n.qps--;
	qp->owner = o.c;
	sof_list_add(&o.c->qps, &qp->link);
	o.c->n.qps++;
	return true;
}

int sofd_xrc_open_tgt(struct sofd_conn *c, struct sofd_qp *qp, const struct sof_open_qp_req *req,
		      struct sofd_rep *rp, struct sof_open_qp_rep *r)
{
	struct sofd_srq *srq = sofd_xrc_srq_find(qp, req->xrc_srqn);
	struct sofd_qp *src = sof_hmap_get(&sofd.qps, req->src_qpn);

	/* the XRCETH names no XRC SRQ of the TGT QP's domain: the
	 * responder's invalid request (IBA 9.7.5.2.4, XRC annex), which
	 * moves a receiving TGT QP to ERROR when its peer asks */
	if (!srq) {
		if (src && src->owner == c && src->type == IBV_QPT_XRC_SEND &&
		    qp->dest_qpn == src->qpn && qp->shm &&
		    sof_qp_state_receives(atomic_load(&qp->shm->state))) {
			atomic_store(&qp->shm->state, IBV_QPS_ERR);
			qp->state = IBV_QPS_ERR;
			sofd_async_send(qp->owner, IBV_EVENT_QP_REQ_ERR, qp->qpn);
		}
		return -EINVAL;
	}
	memset(r, 0, sizeof(*r));
	r->qpn = qp->qpn;
	r->qp_type = qp->type;
	r->pd = srq->pd->handle;
	r->owner_ctx = srq->owner->ctx_id;
	r->recv_cq = srq->cq->handle;
	r->slot = qp->slot;
	r->gen = qp->gen;
	r->has_srq = 1;
	r->srq = srq->handle;
	r->srq_size = srq->size;
	r->srq_max_sge = srq->max_sge;
	r->srq_slot = srq->slot;
	r->srq_gen = srq->gen;
	sofd_rep_fd(rp, qp->memfd, false);
	sofd_rep_fd(rp, srq->cq->memfd, false);
	sofd_rep_fd(rp, srq->memfd, false);
	if (srq->cq->evfd >= 0) {
		r->cq_has_channel = 1;
		sofd_rep_fd(rp, srq->cq->evfd, false);
	}
	rp->len = sizeof(*r);
	return 0;
}

struct sofd_srq *sofd_xrc_srq_find(const struct sofd_qp *qp, uint32_t srqn)
{
	struct sofd_srq *srq = srqn ? sof_hmap_get(&xrc_srqs, srqn) : NULL;

	if (!srq || qp->type != IBV_QPT_XRC_RECV || !qp->xh || srq->xh->d != qp->xh->d)
		return NULL;
	return srq;
}

int sofd_xrc_mr_check(const struct sofd_mr *mr, const struct sofd_pd *pd, uint32_t srqn,
		      uint32_t use)
{
	struct sofd_srq *srq = srqn ? sof_hmap_get(&xrc_srqs, srqn) : NULL;

	if (!srq || pd != srq->pd)
		return -EACCES;
	if (use == SOF_MR_XRC_LOCAL && mr->owner != srq->owner)
		return -EACCES;
	return 0;
}

int sofd_xrc_modify_merge(struct sofd_qp *qp, const struct sof_modify_qp_req *req,
			  struct sof_modify_qp_req *out)
{
	struct sof_modify_qp_req *a = qp->xattr;
	uint32_t m = req->attr_mask;

	if (!a) {
		a = qp->xattr = calloc(1, sizeof(*a));
		if (!a)
			return -ENOMEM;
	}
	if (req->state == IBV_QPS_RESET) {
		*a = *req; /* IBA 10.3.1: RESET returns the attributes to their start */
	} else {
		if (m & IBV_QP_AV) {
			memcpy(a->dgid, req->dgid, 16);
			a->flow_label = req->flow_label;
			a->sgid_index = req->sgid_index;
			a->hop_limit = req->hop_limit;
			a->traffic_class = req->traffic_class;
		}
		if (m & IBV_QP_PATH_MTU)
			a->path_mtu = req->path_mtu;
		if (m & IBV_QP_DEST_QPN)
			a->dest_qpn = req->dest_qpn;
		if (m & IBV_QP_QKEY)
			a->qkey = req->qkey;
		if (m & IBV_QP_ACCESS_FLAGS)
			a->access = req->access;
		if (m & IBV_QP_RQ_PSN)
			a->rq_psn = req->rq_psn;
		if (m & IBV_QP_SQ_PSN)
			a->sq_psn = req->sq_psn;
		if (m & IBV_QP_TIMEOUT)
			a->timeout = req->timeout;
		if (m & IBV_QP_RETRY_CNT)
			a->retry_cnt = req->retry_cnt;
		if (m & IBV_QP_RNR_RETRY)
			a->rnr_retry = req->rnr_retry;
		if (m & IBV_QP_MIN_RNR_TIMER)
			a->min_rnr_timer = req->min_rnr_timer;
		if (m & IBV_QP_MAX_QP_RD_ATOMIC)
			a->max_rd_atomic = req->max_rd_atomic;
		if (m & IBV_QP_MAX_DEST_RD_ATOMIC)
			a->max_dest_rd_atomic = req->max_dest_rd_atomic;
		if (m & IBV_QP_PKEY_INDEX)
			a->pkey_index = req->pkey_index;
		a->state = req->state;
	}
	*out = *a;
	out->qpn = req->qpn;
	out->attr_mask = m;
	out->engine = 0;
	return 0;
}

void sofd_xrc_qp_release(struct sofd_qp *qp)
{
	free(qp->xattr);
	qp->xattr = NULL;
	while (qp->nxopens)
		xopen_drop(qp, qp->nxopens - 1);
	free(qp->xopens);
	qp->xopens = NULL;
	if (qp->xh) {
		qp->xh->users--;
		domain_put(qp->xh->d);
		qp->xh = NULL;
	}
}

/* ---- a connection closes ------------------------------------------------------------- */

void sofd_xrc_conn_release_opens(struct sofd_conn *c)
{
	uint32_t pos = 0;
	struct sofd_qp *qp;

	while ((qp = sof_hmap_next(&sofd.qps, &pos, NULL))) {
		if (qp->type != IBV_QPT_XRC_RECV)
			continue;
		for (uint32_t i = qp->nxopens; i-- > 0;)
			if (qp->xopens[i].c == c)
				xopen_drop(qp, i);
	}
}

void sofd_xrc_conn_release(struct sofd_conn *c)
{
	uint32_t pos = 0;
	struct sofd_xrcd_h *h;

	/* its SRQs and QPs went before: no handle of c has users left */
	while ((h = sof_hmap_next(&xrcd_handles, &pos, NULL))) {
		if (h->owner == c) {
			handle_release(h);
			pos = 0; /* the map changed under the iteration */
		}
	}
}
