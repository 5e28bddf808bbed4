/*
 * XRC on the control path: ibv_open_xrcd / ibv_close_xrcd, ibv_get_srq_num
 * and ibv_open_qp (XRC SRQs are made by srq.c, XRC INI and TGT QPs by
 * qp.c).
 *
 * A domain opened with a file descriptor is shared with every process
 * that opens the same file: the daemon keys it by the file's device and
 * inode (daemon/ops_xrc.c), so the descriptor itself travels to the
 * daemon. With fd -1 the domain is this context's alone. O_CREAT and
 * O_EXCL in oflags behave as with the kernel's uverbs: a missing domain
 * without O_CREAT and an existing one with O_EXCL are EINVAL.
 */
#include "sofv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct ibv_xrcd *sofv_open_xrcd(struct ibv_context *ctx, struct ibv_xrcd_init_attr *attr)
{
	struct sofv_context *s = to_sctx(ctx);
	struct sof_open_xrcd_req req;
	struct sof_xrcd_rep rep;
	struct sofv_xrcd *x;
	int err;

	if (!attr || (attr->comp_mask & ~(uint32_t)(IBV_XRCD_INIT_ATTR_FD |
						    IBV_XRCD_INIT_ATTR_OFLAGS))) {
		errno = attr ? EOPNOTSUPP : EINVAL;
		return NULL;
	}
	/* both are required (rdma-core's ibv_cmd_open_xrcd) */
	if (!(attr->comp_mask & IBV_XRCD_INIT_ATTR_FD) ||
	    !(attr->comp_mask & IBV_XRCD_INIT_ATTR_OFLAGS) ||
	    (attr->oflags & ~(O_CREAT | O_EXCL))) {
		errno = EINVAL;
		return NULL;
	}
	if (attr->fd < -1 || (attr->fd >= 0 && fcntl(attr->fd, F_GETFD) < 0)) {
		errno = EBADF;
		return NULL;
	}
	x = calloc(1, sizeof(*x));
	if (!x) {
		errno = ENOMEM;
		return NULL;
	}
	memset(&req, 0, sizeof(req));
	req.oflags = (uint32_t)attr->oflags;
	req.has_file = attr->fd >= 0;
	err = -sofv_rpc(s, SOF_OP_OPEN_XRCD, &req, sizeof(req), &attr->fd, attr->fd >= 0 ? 1 : 0,
			&rep, sizeof(rep), NULL, NULL);
	if (err) {
		free(x);
		errno = err;
		return NULL;
	}
	x->handle = rep.xrcd;
	x->ibxrcd.context = ctx;
	return &x->ibxrcd;
}

int sofv_close_xrcd(struct ibv_xrcd *ibxrcd)
{
	struct sofv_xrcd *x = to_sxrcd(ibxrcd);
	struct sof_xrcd_req req = {.xrcd = x->handle};
	int err;

	err = -sofv_rpc(to_sctx(ibxrcd->context), SOF_OP_CLOSE_XRCD, &req, sizeof(req), NULL, 0,
			NULL, 0, NULL, NULL);
	if (err && err != ENOTCONN && err != EPIPE && err != ECONNRESET)
		return err; /* EBUSY while SRQs or TGT QPs use this handle */
	free(x);
	return 0;
}

int sofv_get_srq_num(struct ibv_srq *ibsrq, uint32_t *srq_num)
{
	struct sofv_srq *srq = to_ssrq(ibsrq);

	/* only an XRC SRQ has a number (rdma-core: EOPNOTSUPP) */
	if (!srq->srqn)
		return EOPNOTSUPP;
	*srq_num = srq->srqn;
	return 0;
}

struct ibv_qp *sofv_open_qp(struct ibv_context *ctx, struct ibv_qp_open_attr *attr)
{
	const uint32_t need = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD | IBV_QP_OPEN_ATTR_TYPE;
	struct sof_open_xrc_qp_req req;
	struct sof_create_qp_rep rep;
	int fd = -1, nfd = 1, err;

	if (!attr || (attr->comp_mask & need) != need ||
	    (attr->comp_mask & ~(need | IBV_QP_OPEN_ATTR_CONTEXT))) {
		errno = EINVAL;
		return NULL;
	}
	/* only XRC TGT QPs are shared (ib_open_qp) */
	if (attr->qp_type != IBV_QPT_XRC_RECV || !attr->xrcd || attr->xrcd->context != ctx) {
		errno = EINVAL;
		return NULL;
	}
	memset(&req, 0, sizeof(req));
	req.qpn = attr->qp_num;
	req.xrcd = to_sxrcd(attr->xrcd)->handle;
	err = -sofv_rpc(to_sctx(ctx), SOF_OP_OPEN_XRC_QP, &req, sizeof(req), NULL, 0, &rep,
			sizeof(rep), &fd, &nfd);
	if (!err && (nfd != 1 || rep.qpn != attr->qp_num))
		err = EPROTO;
	if (err) {
		if (nfd == 1 && fd >= 0)
			close(fd);
		errno = err;
		return NULL;
	}
	return sofv_qp_opened(ctx, attr, &rep, fd);
}
