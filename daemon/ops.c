/*
 * One handler per protocol op (common/sof_proto.h).
 *
 * Every request is untrusted: its length, its number of descriptors, every
 * enum value and every handle is checked before use, and objects may only
 * be used or destroyed by the connection that created them. The executor
 * look-ups (OPEN_QP, OPEN_MR) are the only ops that reach other
 * connections' objects; OPEN_MR answers -EACCES for every refusal, so that
 * keys cannot be probed by error code, and hands out read-only descriptors
 * when the region grants no write access for the use asked for.
 */
#include "sofd.h"

#include "mad.h"

#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static bool is_pow2(uint32_t v) { return v && !(v & (v - 1)); }

/* Reply payload, large enough for every op's reply struct. */
static union {
	struct sof_hello_rep hello;
	struct sof_pd_rep pd;
	struct sof_reg_mr_rep reg_mr;
	struct sof_mr_keys_rep mr_keys;
	struct sof_cq_rep cq;
	struct sof_srq_rep srq;
	struct sof_create_qp_rep qp;
	struct sof_modify_qp_rep modify_qp;
	struct sof_status_rep status;
	struct sof_netdevs_rep netdevs;
	struct sof_net_engine_rep net_engine;
} rbuf;

/* Map the header of a client's segment. NULL when it cannot be mapped
 * writable (wrong kind of file, sealed against writing). */
static void *map_header(int fd, size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* Whether fd is an eventfd: executors are handed it as the CQ's channel
 * and write to it, so it must be nothing else. */
static bool is_eventfd(int fd)
{
	static const char want[] = "anon_inode:[eventfd]";
	char path[64], link[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link));
	return n == (ssize_t)sizeof(want) - 1 && !memcmp(link, want, (size_t)n);
}

/* ---- HELLO ---------------------------------------------------------------------- */

int sofd_hello_answer(struct sofd_rep *rp, struct sof_hello_rep *h, int *ours)
{
	int sv[2], ro;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return -errno;
	ro = sof_fd_reopen_ro(sofd.objtab_ro_fd);
	if (ro < 0) {
		close(sv[0]);
		close(sv[1]);
		return ro;
	}
	/* Our end never blocks and is never read. */
	if (fcntl(sv[0], F_SETFL, O_NONBLOCK) || shutdown(sv[0], SHUT_RD)) {
		int err = -errno;

		close(sv[0]);
		close(sv[1]);
		close(ro);
		return err;
	}
	*ours = sv[0];
	sofd_device_refresh_gids();
	memset(h, 0, sizeof(*h));
	h->version = SOF_PROTO_VERSION;
	h->dev = sofd.dev;
	rp->data = h;
	rp->len = sizeof(*h);
	sofd_rep_fd(rp, sv[1], true);
	sofd_rep_fd(rp, ro, true);
	return 0;
}

static int op_hello(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct sof_hello_req *req = rq->data;
	struct sofd_conn *c = rq->c;
	int err;

	if (req->version != SOF_PROTO_VERSION)
		return -EPROTONOSUPPORT;
	if (c->ctx_id)
		return -EALREADY;
	err = sofd_hello_answer(rp, &rbuf.hello, &c->async_fd);
	if (err)
		return err;
	if (++sofd.next_ctx_id == 0)
		sofd.next_ctx_id = 1;
	c->ctx_id = sofd.next_ctx_id;
	sofd.n.contexts++;
	rbuf.hello.ctx_id = c->ctx_id;
	return 0;
}

/* ---- PD --------------------------------------------------------------------------- */

static struct sofd_pd *own_pd(struct sofd_conn *c, uint32_t h)
{
	struct sofd_pd *pd = sof_hmap_get(&sofd.pds, h);

	return pd && pd->owner == c ? pd : NULL;
}

static int op_alloc_pd(struct sofd_req *rq, struct sofd_rep *rp)
{
	struct sofd_pd *pd;

	if (rq->c->n.pds >= SOFD_CONN_MAX_PD)
		return -ENOMEM;
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return -ENOMEM;
	pd->owner = rq->c;
	pd->handle = sofd_new_handle(&sofd.pds);
	if (sof_hmap_put(&sofd.pds, pd->handle, pd)) {
		free(pd);
		return -ENOMEM;
	}
	sof_list_add(&rq->c->pds, &pd->link);
	sofd.n.pds++;
	rq->c->n.pds++;
	rbuf.pd.pd = pd->handle;
	rbuf.pd.rsvd = 0;
	rp->len = sizeof(rbuf.pd);
	return 0;
}

static int op_dealloc_pd(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct sof_pd_req *req = rq->data;
	struct sofd_pd *pd = own_pd(rq->c, req->pd);

	(void)rp;
	if (!pd)
		return -ENOENT;
	sofd_mr_take_pd(rq->c, pd->handle); /* regions posted in it count */
	if (pd->users)
		return -EBUSY;
	sofd_pd_release(pd);
	return 0;
}

/* ---- MR --------------------------------------------------------------------------- */

static int op_reg_mr(struct sofd_req *rq, struct sofd_rep *rp)
{
	int err = sofd_reg_mr(rq, &rbuf.reg_mr);

	if (!err)
		rp->len = sizeof(rbuf.reg_mr);
	return err;
}

static int op_rereg_mr(struct sofd_req *rq, struct sofd_rep *rp)
{
	int err = sofd_rereg_mr(rq, &rbuf.reg_mr);

	if (!err)
		rp->len = sizeof(rbuf.reg_mr);
	return err;
}

static int op_mr_keys(struct sofd_req *rq, struct sofd_rep *rp)
{
	int err = sofd_mr_keys(rq, &rbuf.mr_keys);

	if (!err)
		rp->len = sizeof(rbuf.mr_keys);
	return err;
}

static int op_share_mr(struct sofd_req *rq, struct sofd_rep *rp)
{
	(void)rp;
	return sofd_share_mr(rq);
}

static int op_dereg_mr(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct sof_dereg_mr_req *req = rq->data;
	struct sofd_mr *mr = sofd_mr_get(req->lkey);

	(void)rp;
	if (!mr || mr->owner != rq->c)
		return -ENOENT;
	/* as rxe: not while a window is bound to it (IBA 10.6.7.1) */
	if (sofd_mr_has_mws(mr))
		return -EINVAL;
	sofd_mr_release(mr);
	return 0;
}

/* ---- CQ --------------------------------------------------------------------------- */

static struct sofd_cq *own_cq(struct sofd_conn *c, uint32_t h)
{
	struct sofd_cq *cq = sof_hmap_get(&sofd.cqs, h);

	return cq && cq->owner == c ? cq : NULL;
}

static int op_create_cq(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct sof_create_cq_req *req = rq->data;
	struct sofd_cq *cq;
	int err;

	if (req->has_channel > 1 || rq->nfds != 1 + (int)req->has_channel)
		return -EINVAL;
	if (!is_pow2(req->cqe) || req->cqe > SOF_CQ_MAX_CQE)
		return -EINVAL;
	if (rq->c->n.cqs >= SOFD_CONN_MAX_CQ)
		return -ENOMEM;
	err = sof_memfd_check(rq->fds[0], SOF_CQ_SEG_SIZE);
	if (err)
		return err;
	if (req->has_channel && !is_eventfd(rq->fds[1]))
		return -EINVAL;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -ENOMEM;
	/* the whole ring: the transport pushes completions */
	cq->shm = map_header(rq->fds[0], SOF_CQ_SEG_SIZE);
	if (!cq->shm) {
		err = -EINVAL;
		goto err_free;
	}
	cq->handle = sofd_new_handle(&sofd.cqs);
	if (sof_hmap_put(&sofd.cqs, cq->handle, cq)) {
		err = -ENOMEM;
		goto err_unmap;
	}
	cq->owner = rq->c;
	cq->cqe = req->cqe;
	cq->memfd = rq->fds[0];
	rq->fds[0] = -1;
	cq->evfd = -1;
	if (req->has_channel) {
		cq->evfd = rq->fds[1];
		rq->fds[1] = -1;
	}
	cq->tcq = (struct tp_cq){.shm = cq->shm, .evfd = cq->evfd};
	sof_list_add(&rq->c->cqs, &cq->link);
	sofd.n.cqs++;
	rq->c->n.cqs++;
	rbuf.cq.cq = cq->handle;
	rbuf.cq.rsvd = 0;
	rp->len = sizeof(rbuf.cq);
	return 0;

err_unmap:
	munmap(cq->shm, SOF_CQ_SEG_SIZE);
err_free:
	free(cq);
	return err;
}

static int op_resize_cq(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct sof_cq_req *req = rq->data;
	struct sofd_cq *cq = own_cq(rq->c, req->cq);

	(void)rp;
	if (!cq)
		return -ENOENT;
	if (!is_pow2(req->cqe) || req->cqe > SOF_CQ_MAX_CQE)
		return -EINVAL;
	cq->cqe = req->cqe;
	return 0;
}

static int op_destroy_cq(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct sof_cq_req *req = rq->data;
	struct sofd_cq *cq = own_cq(rq->c, req->cq);

	(void)rp;
	if (!cq)
		return -ENOENT;
	if (cq->users)
		return -EBUSY;
	sofd_cq_release(cq);
	return 0;
}

/* ---- SRQ -------------------------------------------------------------------------- */

static struct sofd_srq *own_srq(struct sofd_conn *c, uint32_t h)
{
	struct sofd_srq *srq = sof_hmap_get(&sofd.srqs, h);

	return srq && srq->owner == c ? srq : NULL;
}

static int op_create_srq(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct sof_create_srq_req *req = rq->data;
	struct sofd_srq *srq;
	struct sofd_pd *pd;
	int err;

	if (rq->nfds != 1)
		return -EINVAL;
	pd = own_pd(rq->c, req->pd);
	if (!pd)
		return -ENOENT;
	if (!is_pow2(req->size) || req->size > SOFD_MAX_RQ || req->max_sge > SOFD_MAX_SGE)
		return -EINVAL;
	if (rq->c->n.srqs >= SOFD_CONN_MAX_SRQ)
		return -ENOMEM;
	err = sof_memfd_check(rq->fds[0],
			      SOF_SRQ_RQ_OFF + (size_t)req->size * SOF_RWQE_STRIDE(req->max_sge));
	if (err)
		return err;
	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return -ENOMEM;
	/* the transport takes receive WQEs from it */
	srq->shm_len = SOF_SRQ_RQ_OFF + (size_t)req->size * SOF_RWQE_STRIDE(req->max_sge);
	srq->shm = map_header(rq->fds[0], srq->shm_len);
	if (!srq->shm) {
		err = -EINVAL;
		goto err_free;
	}
	err = sofd_slot_alloc(&srq->slot, &srq->gen);
	if (err)
		goto err_unmap;
	srq->handle = sofd_new_handle(&sofd.srqs);
	if (sof_hmap_put(&sofd.srqs, srq->handle, srq)) {
		err = -ENOMEM;
		goto err_slot;
	}
	if (req->xrcd) {
		err = sofd_xrc_srq_init(rq->c, srq, req->xrcd, req->cq);
		if (err) {
			sof_hmap_del(&sofd.srqs, srq->handle);
			goto err_slot;
		}
	}
	srq->owner = rq->c;
	srq->pd = pd;
	srq->size = req->size;
	srq->max_sge = req->max_sge;
	srq->tsrq = (struct tp_srq){.shm = srq->shm, .size = srq->size, .max_sge = srq->max_sge};
	srq->memfd = rq->fds[0];
	rq->fds[0] = -1;
	pd->users++;
	sof_list_add(&rq->c->srqs, &srq->link);
	sofd.n.srqs++;
	rq->c->n.srqs++;
	rbuf.srq.srq = srq->handle;
	rbuf.srq.srqn = srq->srqn;
	rp->len = sizeof(rbuf.srq);
	return 0;

err_slot:
	sofd_slot_free(srq->slot);
err_unmap:
	munmap(srq->shm, srq->shm_len);
err_free:
	free(srq);
	return err;
}

static int op_destroy_srq(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct sof_srq_req *req = rq->data;
	struct sofd_srq *srq = own_srq(rq->c, req->srq);

	(void)rp;
	if (!srq)
		return -ENOENT;
	if (srq->users)
		return -EBUSY;
	sofd_srq_release(srq);
	return 0;
}

/* ---- QP --------------------------------------------------------------------------- */

static struct sofd_qp *own_qp(struct sofd_conn *c, uint32_t qpn)
{
	struct sofd_qp *qp = sof_hmap_get(&sofd.qps, qpn);

	return qp && qp->owner == c ? qp : NULL;
}

/* The connection's doorbell: an eventfd the owner writes after posting to
 * a network send queue, made with the first QP. 0 or -errno. */
static int conn_doorbell(struct sofd_conn *c)
{
	/* Edge-triggered, never read: every write is one wake-up (the
	 * counter cannot reach its limit at one per post). Its pollable
	 * outlives the connection until the end of the batch (sofd_reap), so
	 * an event of a connection closed earlier in the same batch finds it
	 * with no connection. */
	struct epoll_event ev = {.events = EPOLLIN | EPOLLET};
	struct sofd_doorbell *db;
	int fd;

	if (c->db_fd >= 0)
		return 0;
	db = calloc(1, sizeof(*db));
	if (!db)
		return -ENOMEM;
	fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (fd < 0) {
		free(db);
		return -errno;
	}
	db->p.kind = SOFD_POLL_DOORBELL;
	db->p.fd = fd;
	db->c = c;
	ev.data.ptr = &db->p;
	if (epoll_ctl(sofd.epfd, EPOLL_CTL_ADD, fd, &ev)) {
		int err = -errno;

		close(fd);
		free(db);
		return err;
	}
	c->db_fd = fd;
	c->db = db;
	return 0;
}

static int op_create_qp(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct sof_create_qp_req *req = rq->data;
	struct sofd_cq *scq, *rcq;
	struct sofd_srq *srq = NULL;
	struct sofd_xrcd_h *xh = NULL;
	size_t shm_len, nsq_len;
	struct sofd_pd *pd;
	struct sofd_qp *qp;
	uint32_t sq_stride;
	int err;

	if (rq->nfds != 2)
		return -EINVAL;
	if (req->qp_type != IBV_QPT_RC && req->qp_type != IBV_QPT_UC &&
	    req->qp_type != IBV_QPT_UD && req->qp_type != IBV_QPT_XRC_SEND &&
	    req->qp_type != IBV_QPT_XRC_RECV && req->qp_type != IBV_QPT_RAW_PACKET)
		return -EINVAL;
	/* as the kernel's create_qp: raw packet QPs need CAP_NET_RAW */
	if (req->qp_type == IBV_QPT_RAW_PACKET && !sofd_raw_permitted(rq->c))
		return -EPERM;
	if (!is_pow2(req->sq_size) || req->sq_size > SOFD_MAX_SQ ||
	    req->sq_max_sge > SOFD_MAX_SGE || req->sq_max_inline > SOFD_MAX_INLINE)
		return -EINVAL;
	if (req->qp_type == IBV_QPT_XRC_RECV) {
		/* an XRC TGT QP: a domain, no PD, no CQ, no receive queue */
		xh = sofd_xrc_handle(rq->c, req->xrcd);
		if (!xh)
			return -ENOENT;
		if (req->srq || req->rq_size)
			return -EINVAL;
		pd = NULL;
		scq = rcq = NULL;
	} else {
		pd = own_pd(rq->c, req->pd);
		scq = own_cq(rq->c, req->send_cq);
		rcq = own_cq(rq->c, req->recv_cq);
		if (!pd || !scq || !rcq)
			return -ENOENT;
	}
	if (req->qp_type == IBV_QPT_XRC_SEND && (req->srq || req->rq_size))
		return -EINVAL; /* an INI QP receives nothing */
	if (req->srq) {
		srq = own_srq(rq->c, req->srq);
		if (!srq)
			return -ENOENT;
		if (req->rq_size)
			return -EINVAL;
	} else if ((req->rq_size && !is_pow2(req->rq_size)) || req->rq_size > SOFD_MAX_RQ) {
		return -EINVAL;
	}
	if (req->rq_max_sge > SOFD_MAX_SGE || req->sq_sig_all > 1)
		return -EINVAL;
	if (rq->c->n.qps >= SOFD_CONN_MAX_QP)
		return -ENOMEM;
	shm_len = SOF_QP_RQ_OFF + (size_t)req->rq_size * SOF_RWQE_STRIDE(req->rq_max_sge);
	sq_stride = SOF_NWQE_STRIDE(req->sq_max_sge, req->sq_max_inline);
	nsq_len = SOF_NSQ_SEG_LEN(req->sq_size, sq_stride);
	err = sof_memfd_check(rq->fds[0], shm_len);
	if (!err)
		err = sof_memfd_check(rq->fds[1], nsq_len);
	if (err)
		return err;
	err = conn_doorbell(rq->c);
	if (err)
		return err;
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return -ENOMEM;
	/* the whole segments: the transport takes receive WQEs from the
	 * first and send WQEs from the second */
	qp->shm_len = shm_len;
	qp->shm = map_header(rq->fds[0], shm_len);
	if (!qp->shm) {
		err = -EINVAL;
		goto err_free;
	}
	qp->nsq_len = nsq_len;
	qp->nsq = map_header(rq->fds[1], nsq_len);
	if (!qp->nsq) {
		err = -EINVAL;
		goto err_unmap;
	}
	err = sofd_slot_alloc(&qp->slot, &qp->gen);
	if (err)
		goto err_unmap;
	qp->qpn = sofd_new_qpn();
	if (sof_hmap_put(&sofd.qps, qp->qpn, qp)) {
		err = -ENOMEM;
		goto err_slot;
	}
	qp->owner = rq->c;
	qp->pd = pd;
	qp->send_cq = scq;
	qp->recv_cq = rcq;
	qp->srq = srq;
	qp->type = req->qp_type;
	qp->rq_size = req->rq_size;
	qp->rq_max_sge = req->rq_max_sge;
	qp->sq_sig_all = req->sq_sig_all;
	qp->state = IBV_QPS_RESET;
	qp->memfd = rq->fds[0];
	rq->fds[0] = -1;
	/* the network send queue stays mapped; its descriptor goes back
	 * (closed by the caller): nobody else is ever handed it */
	qp->sq_size = req->sq_size;
	qp->sq_max_sge = req->sq_max_sge;
	qp->sq_max_inline = req->sq_max_inline;
	qp->sq_stride = sq_stride;
	sof_tp_qp_init(qp);
	if (xh) {
		qp->xh = xh;
		xh->users++;
		xh->d->refs++;
	} else {
		pd->users++;
		scq->users++;
		rcq->users++;
	}
	if (srq)
		srq->users++;
	sof_list_add(&rq->c->qps, &qp->link);
	sofd.n.qps++;
	rq->c->n.qps++;
	rbuf.qp.qpn = qp->qpn;
	rbuf.qp.slot = qp->slot;
	rbuf.qp.gen = qp->gen;
	rp->len = sizeof(rbuf.qp);
	sofd_rep_fd(rp, rq->c->db_fd, false);
	return 0;

err_slot:
	sofd_slot_free(qp->slot);
err_unmap:
	if (qp->nsq)
		munmap(qp->nsq, qp->nsq_len);
	munmap(qp->shm, qp->shm_len);
err_free:
	free(qp);
	return err;
}

static int op_modify_qp(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct sof_modify_qp_req *req = rq->data;
	struct sofd_qp *qp = sofd_xrc_qp_of(rq->c, req->qpn); /* its own, or an opened TGT */
	struct sof_modify_qp_req merged;
	bool xrc, net = false;
	int err;

	if (!qp)
		return -ENOENT;
	xrc = qp->type == IBV_QPT_XRC_SEND || qp->type == IBV_QPT_XRC_RECV;
	/* a TGT QP's handles each know only what they set: the attributes
	 * are the QP's, with what this modify sets */
	if (qp->type == IBV_QPT_XRC_RECV) {
		err = sofd_xrc_modify_merge(qp, req, &merged);
		if (err)
			return err;
		req = &merged;
	}
	if (req->state > IBV_QPS_ERR || req->dest_qpn > 0xffffff)
		return -EINVAL;
	/* The transport of a steered QP runs in its owner (NET_ENGINE): it
	 * asks (engine) when the peer is on another host; RESET ends it. */
	if (qp->steered && req->state == IBV_QPS_RESET) {
		sof_tp_steer_del(qp->qpn);
		qp->steered = false;
		if (qp->type == IBV_QPT_UD)
			sof_tp_steer_ud_view(qp, false);
	} else if (!qp->steered && req->engine && rq->c->net_slot &&
		   /* UD when the program asks (verbs/qp.c: unless
		    * SOFTOFED_ENGINE_UD=daemon); its datagrams to this host's
		    * QPs stay the executor's there, and to a group come back
		    * here (MCAST_LOOP) */
		   !xrc && qp->type != IBV_QPT_RAW_PACKET &&
		   !sof_tp_steer_add(qp->qpn, rq->c->net_slot)) {
		sof_tp_qp_release(qp); /* what the daemon held of it before */
		qp->steered = true;
		qp->net = true; /* its peer is not one of this host's QPs */
		if (qp->type == IBV_QPT_UD) {
			sof_tp_steer_ud_view(qp, true);
			/* the view starts here: the P_Key index came at INIT */
			merged = *req;
			merged.attr_mask |= IBV_QP_PKEY_INDEX;
			req = &merged;
		}
	}
	/* a steered UD QP's multicast is still the daemon's (its view) */
	err = qp->steered && qp->type != IBV_QPT_UD ? 0 : sof_tp_modify_qp(qp, req, &net);
	if (err)
		return err;
	qp->state = req->state;
	qp->dest_qpn = req->dest_qpn;
	qp->qkey = req->qkey;
	/* a QP connected to a peer: no other slot keeps flows from it
	 * (NET_FLOW), before the QP's peer learns that it is there */
	if (qp->type != IBV_QPT_UD && (req->attr_mask & IBV_QP_AV))
		memcpy(qp->dgid, req->dgid, 16);
	if (qp->type != IBV_QPT_UD && qp->state >= IBV_QPS_RTR && qp->state <= IBV_QPS_SQE)
		sof_tp_flow_connected(qp, qp->steered ? rq->c->net_slot : 0);
	/* a raw packet QP's sends are the daemon's (raw.c) */
	rbuf.modify_qp.net = net || qp->type == IBV_QPT_RAW_PACKET;
	rbuf.modify_qp.steered = qp->steered;
	rp->len = sizeof(rbuf.modify_qp);
	return 0;
}

static int op_destroy_qp(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct sof_destroy_qp_req *req = rq->data;
	struct sofd_qp *qp = own_qp(rq->c, req->qpn);

	(void)rp;
	if (!qp)
		return sofd_xrc_qp_close(rq->c, req->qpn); /* a TGT QP it opened */
	/* as the kernel's uverbs: an attached QP is detached first, and its
	 * flows are destroyed first */
	if (qp->tq.nmcast || qp->nflows)
		return -EBUSY;
	if (req->linger && qp->steered && qp->type == IBV_QPT_RC)
		sof_tp_linger(qp->qpn, &req->l);
	if (!sofd_xrc_qp_handover(qp))
		sofd_qp_release(qp);
	return 0;
}

/* ---- multicast ----------------------------------------------------------------------- */

static int op_mcast(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct sof_mcast_req *req = rq->data;
	struct sofd_qp *qp = own_qp(rq->c, req->qpn);

	(void)rp;
	if (!qp)
		return -ENOENT;
	/* only UD QPs join groups, and only multicast GIDs name one */
	if (qp->type != IBV_QPT_UD || !sof_gid_is_mcast(req->gid))
		return -EINVAL;
	if (rq->op == SOF_OP_ATTACH_MCAST)
		return sof_tp_mcast_attach(qp, req->gid);
	return sof_tp_mcast_detach(qp, req->gid);
}

/* A steered UD QP's datagram to a group, for this host's QPs attached to
 * it (sof_proto.h MCAST_LOOP). The caller is untrusted: the QP must be
 * its own and run in it (a QP the daemon runs got its datagram here when
 * it was sent), and sending (RTS, or SQD finishing what it took); the
 * engine checks the addresses and the length (tp_mcast_loop). */
static int op_mcast_loop(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct sof_mcast_loop_req *req = rq->data;
	struct sofd_qp *qp = own_qp(rq->c, req->qpn);

	(void)rp;
	if (!qp)
		return -ENOENT;
	if (qp->type != IBV_QPT_UD || !qp->steered ||
	    (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_SQD) ||
	    req->len > SOF_MCAST_LOOP_MAX || rq->len != SOF_MCAST_LOOP_HDR + req->len ||
	    (req->flags & ~(SOF_MCAST_LOOP_IMM | SOF_MCAST_LOOP_SE)))
		return -EINVAL;
	/* IBA 10.2.5: the library put the QP's own Q_Key for one with the
	 * high bit set; any other such Q_Key is not the consumer's to send */
	if ((req->qkey & 0x80000000u) && req->qkey != qp->qkey)
		return -EPERM;
	return sof_tp_mcast_loop(qp, req);
}

/* ---- management ---------------------------------------------------------------------- */

static int op_status(struct sofd_req *rq, struct sofd_rep *rp)
{
	struct sof_status_rep *r = &rbuf.status;

	(void)rq;
	memset(r, 0, sizeof(*r));
	sofd_device_refresh_gids();
	r->pid = (uint32_t)getpid();
	r->contexts = sofd.n.contexts;
	r->pds = sofd.n.pds;
	r->mrs = sofd.n.mrs;
	r->cqs = sofd.n.cqs;
	r->srqs = sofd.n.srqs;
	r->qps = sofd.n.qps;
	r->mcast_groups = tp_mcast_groups();
	r->cm_channels = cm_counts.channels;
	r->cm_ids = cm_counts.ids;
	r->cm_listeners = cm_counts.listeners;
	r->cm_timewait = cm_counts.timewait;
	r->mads = sofd.n.mads + sofd_mad_pending();
	r->umad_ports = sofd_umad_ports();
	r->umad_agents = sofd_umad_agents();
	r->uptime_ms = (sof_now_ns() - sofd.start_ns) / 1000000u;
	r->dev = sofd.dev;
	memcpy(r->counters, sofd.counters, sizeof(r->counters));
	memcpy(r->drops, sofd.drops, sizeof(r->drops));
	sof_tp_slot_counters(r->counters, r->drops);
	rp->len = sizeof(*r);
	return 0;
}

static int op_shutdown(struct sofd_req *rq, struct sofd_rep *rp)
{
	(void)rp;
	if (rq->c->uid != 0 && rq->c->uid != sofd.uid)
		return -EPERM;
	sofd_log("shutdown requested by pid %d uid %u", (int)rq->c->pid, (unsigned)rq->c->uid);
	sofd.stop = true;
	return 0;
}

static int op_netdevs(struct sofd_req *rq, struct sofd_rep *rp)
{
	(void)rq;
	sofd_device_netdevs(&rbuf.netdevs);
	rp->len = sizeof(rbuf.netdevs);
	return 0;
}

/* NET_ENGINE: a process of the daemon's user (or root) runs the transport
 * of its RC/UC QPs itself. Another user's may not: a socket of the steering
 * group could change the group's program and take every user's packets. */
static int op_net_engine(struct sofd_req *rq, struct sofd_rep *rp)
{
	int fd4 = -1, fd6 = -1, fdib = -1, cfd = -1, efd = -1, slot;

	if (rq->c->uid != 0 && rq->c->uid != sofd.uid)
		return -EPERM;
	if (rq->via != rq->c)
		return -EPERM; /* an imported context: the owner's process runs it */
	slot = sof_tp_slot_take(rq->c, &fd4, &fd6, &fdib, &cfd, &efd);
	if (slot < 0)
		return slot;
	rbuf.net_engine = (struct sof_net_engine_rep){
	    .slot = (uint32_t)slot, .has4 = fd4 >= 0, .has6 = fd6 >= 0, .has_ib = fdib >= 0};
	rp->len = sizeof(rbuf.net_engine);
	if (fd4 >= 0)
		sofd_rep_fd(rp, fd4, false);
	if (fd6 >= 0)
		sofd_rep_fd(rp, fd6, false);
	if (fdib >= 0)
		sofd_rep_fd(rp, fdib, false);
	sofd_rep_fd(rp, cfd, false);
	sofd_rep_fd(rp, efd, false);
	return 0;
}

static int op_net_flow(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct sof_net_flow_req *req = rq->data;

	(void)rp;
	return sof_tp_flow_claim(rq->c, req->peer);
}

/* ---- dispatch ------------------------------------------------------------------------ */

struct op_desc {
	int (*fn)(struct sofd_req *rq, struct sofd_rep *rp);
	const char *name;
	size_t req_len; /* minimum payload */
	int nfds;	/* descriptors expected, -1: the handler checks */
	bool need_ctx;	/* only after HELLO */
};

static const struct op_desc ops[SOF_OP_MAX] = {
    [SOF_OP_HELLO] = {op_hello, "HELLO", sizeof(struct sof_hello_req), 0, false},
    [SOF_OP_ALLOC_PD] = {op_alloc_pd, "ALLOC_PD", 0, 0, true},
    [SOF_OP_DEALLOC_PD] = {op_dealloc_pd, "DEALLOC_PD", sizeof(struct sof_pd_req), 0, true},
    [SOF_OP_REG_MR] = {op_reg_mr, "REG_MR", SOF_REG_MR_MIN, -1, true},
    [SOF_OP_DEREG_MR] = {op_dereg_mr, "DEREG_MR", sizeof(struct sof_dereg_mr_req), 0, true},
    [SOF_OP_REREG_MR] = {op_rereg_mr, "REREG_MR", SOF_REG_MR_MIN, -1, true},
    [SOF_OP_SHARE_MR] = {op_share_mr, "SHARE_MR", SOF_REG_MR_MIN, -1, true},
    [SOF_OP_MR_KEYS] = {op_mr_keys, "MR_KEYS", sizeof(struct sof_mr_keys_req), -1, true},
    [SOF_OP_CREATE_CQ] = {op_create_cq, "CREATE_CQ", sizeof(struct sof_create_cq_req), -1, true},
    [SOF_OP_RESIZE_CQ] = {op_resize_cq, "RESIZE_CQ", sizeof(struct sof_cq_req), 0, true},
    [SOF_OP_DESTROY_CQ] = {op_destroy_cq, "DESTROY_CQ", sizeof(struct sof_cq_req), 0, true},
    [SOF_OP_CREATE_SRQ] = {op_create_srq, "CREATE_SRQ", sizeof(struct sof_create_srq_req), 1, true},
    [SOF_OP_DESTROY_SRQ] = {op_destroy_srq, "DESTROY_SRQ", sizeof(struct sof_srq_req), 0, true},
    [SOF_OP_RESIZE_SRQ] = {sofd_op_resize_srq, "RESIZE_SRQ", sizeof(struct sof_resize_srq_req), 1,
			   true},
    [SOF_OP_CREATE_QP] = {op_create_qp, "CREATE_QP", sizeof(struct sof_create_qp_req), 2, true},
    [SOF_OP_MODIFY_QP] = {op_modify_qp, "MODIFY_QP", sizeof(struct sof_modify_qp_req), 0, true},
    [SOF_OP_DESTROY_QP] = {op_destroy_qp, "DESTROY_QP", sizeof(struct sof_qp_req), 0, true},
    [SOF_OP_OPEN_QP] = {sofd_op_open_qp, "OPEN_QP", sizeof(struct sof_qp_req), 0, true},
    [SOF_OP_OPEN_MR] = {sofd_op_open_mr, "OPEN_MR", sizeof(struct sof_open_mr_req), 0, true},
    [SOF_OP_ASYNC_NOTIFY] = {sofd_op_async_notify, "ASYNC_NOTIFY", sizeof(struct sof_notify_req), 0,
			     true},
    [SOF_OP_STATUS] = {op_status, "STATUS", 0, 0, false},
    [SOF_OP_SHUTDOWN] = {op_shutdown, "SHUTDOWN", 0, 0, false},
    [SOF_OP_NETDEVS] = {op_netdevs, "NETDEVS", 0, 0, false},
    [SOF_OP_NET_ENGINE] = {op_net_engine, "NET_ENGINE", 0, 0, true},
    [SOF_OP_NET_FLOW] = {op_net_flow, "NET_FLOW", sizeof(struct sof_net_flow_req), 0, true},
    [SOF_OP_ALLOC_MW] = {sofd_op_alloc_mw, "ALLOC_MW", sizeof(struct sof_alloc_mw_req), 0, true},
    [SOF_OP_DEALLOC_MW] = {sofd_op_dealloc_mw, "DEALLOC_MW", sizeof(struct sof_mw_req), 0, true},
    [SOF_OP_BIND_MW] = {sofd_op_bind_mw, "BIND_MW", sizeof(struct sof_bind_mw_req), 0, true},
    [SOF_OP_INVAL_MW] = {sofd_op_inval_mw, "INVAL_MW", sizeof(struct sof_inval_mw_req), 0, true},
    [SOF_OP_ATTACH_MCAST] = {op_mcast, "ATTACH_MCAST", sizeof(struct sof_mcast_req), 0, true},
    [SOF_OP_DETACH_MCAST] = {op_mcast, "DETACH_MCAST", sizeof(struct sof_mcast_req), 0, true},
    [SOF_OP_MCAST_LOOP] = {op_mcast_loop, "MCAST_LOOP", SOF_MCAST_LOOP_HDR, 0, true},
    [SOF_OP_IMPORT] = {sofd_import, "IMPORT", sizeof(struct sof_import_req), 0, false},
    [SOF_OP_QUERY_PD] = {sofd_query_pd, "QUERY_PD", sizeof(struct sof_pd_req), 0, true},
    [SOF_OP_QUERY_MR] = {sofd_query_mr, "QUERY_MR", sizeof(struct sof_query_mr_req), 0, true},
    [SOF_OP_OPEN_XRCD] = {sofd_open_xrcd, "OPEN_XRCD", sizeof(struct sof_open_xrcd_req), -1, true},
    [SOF_OP_CLOSE_XRCD] = {sofd_close_xrcd, "CLOSE_XRCD", sizeof(struct sof_xrcd_req), 0, true},
    [SOF_OP_OPEN_XRC_QP] = {sofd_open_xrc_qp, "OPEN_XRC_QP", sizeof(struct sof_open_xrc_qp_req), 0,
			    true},
    [SOF_OP_CREATE_FLOW] = {sofd_raw_create_flow, "CREATE_FLOW", sizeof(struct sof_flow_req), 0,
			    true},
    [SOF_OP_DESTROY_FLOW] = {sofd_raw_destroy_flow, "DESTROY_FLOW", sizeof(struct sof_flow_rep), 0,
			     true},
    [SOF_OP_IB_STATUS] = {sofd_ib_status, "IB_STATUS", 0, 0, false},
};

/* The request payload, copied to an aligned buffer of the largest request
 * and zero-padded, so handlers may read their whole struct. */
static union {
	struct sof_hello_req hello;
	struct sof_reg_mr_req reg_mr;
	struct sof_create_qp_req create_qp;
	struct sof_modify_qp_req modify_qp;
	struct sof_destroy_qp_req destroy_qp;
	struct sof_open_qp_req open_qp;
	struct sof_mr_keys_req mr_keys;
	struct sof_mcast_loop_req mcast_loop;
	uint8_t bytes[sizeof(struct sof_reg_mr_req)];
} qbuf;

int sofd_dispatch(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct op_desc *d;

	rp->data = &rbuf;
	rp->len = 0;
	rp->nfds = 0;
	if (!rq->via)
		rq->via = rq->c;
	if (rq->op >= SOF_OP_UMAD_CA && rq->op <= SOF_OP_UMAD_SEND)
		return sofd_umad_op(rq, rp);
	if (rq->op >= SOF_OP_CM_CHANNEL && rq->op <= SOF_OP_CM_REQUEUE) {
		if (rq->c->umad)
			return -EINVAL;
		if (rq->len > sizeof(qbuf))
			return -EINVAL;
		memset(&qbuf, 0, sizeof(qbuf));
		memcpy(&qbuf, rq->data, rq->len);
		rq->data = &qbuf;
		return sofd_cm_op(rq, rp);
	}
	if (rq->op == 0 || rq->op >= SOF_OP_MAX || !ops[rq->op].fn)
		return -EOPNOTSUPP;
	if (rq->c->cm.chan || rq->c->umad)
		return -EINVAL; /* an event channel or a MAD port takes no other requests */
	d = &ops[rq->op];
	if (rq->len < d->req_len || rq->len > sizeof(qbuf))
		return -EINVAL;
	if (d->nfds >= 0 && rq->nfds != d->nfds)
		return -EINVAL;
	if (d->need_ctx && !rq->c->ctx_id)
		return -EPROTO;
	memset(&qbuf, 0, sizeof(qbuf));
	memcpy(&qbuf, rq->data, rq->len);
	rq->data = &qbuf;
	return d->fn(rq, rp);
}
