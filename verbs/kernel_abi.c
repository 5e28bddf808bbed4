/*
 * What libibverbs exports around a kernel device this device does not
 * have: the sysfs helpers (nothing to read), the kernel-ABI marshalling
 * helpers librdmacm links against, ECE (accepted and reported), and the
 * verbs this device lacks (importing device memory, dma-buf memory, L2
 * resolution), which fail the way rdma-core fails when a
 * provider lacks them.
 */
#include "sofv.h"

#include <errno.h>
#include <infiniband/sa.h>
#include <rdma/ib_user_sa.h>
#include <rdma/ib_user_verbs.h>
#include <string.h>

/* Declared by rdma-core in headers Debian does not install (driver.h,
 * marshall.h). */
const char *ibv_get_sysfs_path(void);
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size);
void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst, struct ib_uverbs_qp_attr *src);
void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst, struct ib_uverbs_ah_attr *src);
void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst, struct ib_user_path_rec *src);
void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst, struct ibv_sa_path_rec *src);
int ibv_resolve_eth_l2_from_gid(struct ibv_context *context, struct ibv_ah_attr *attr,
				uint8_t eth_mac[6], uint16_t *vid);

/* ---- sysfs: there is no kernel device ---------------------------------- */

SOFV_EXPORT const char *ibv_get_sysfs_path(void) { return NULL; }

SOFV_EXPORT int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size)
{
	(void)dir;
	(void)file;
	if (buf && size)
		buf[0] = '\0';
	errno = ENOENT;
	return -1;
}

/* ---- kernel ABI marshalling (used by librdmacm) ---------------------------- */

SOFV_EXPORT void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst, struct ib_uverbs_ah_attr *src)
{
	memcpy(dst->grh.dgid.raw, src->grh.dgid, sizeof(dst->grh.dgid));
	dst->grh.flow_label = src->grh.flow_label;
	dst->grh.sgid_index = src->grh.sgid_index;
	dst->grh.hop_limit = src->grh.hop_limit;
	dst->grh.traffic_class = src->grh.traffic_class;
	dst->dlid = src->dlid;
	dst->sl = src->sl;
	dst->src_path_bits = src->src_path_bits;
	dst->static_rate = src->static_rate;
	dst->is_global = src->is_global;
	dst->port_num = src->port_num;
}

SOFV_EXPORT void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst, struct ib_uverbs_qp_attr *src)
{
	dst->qp_state = (enum ibv_qp_state)src->qp_state;
	dst->cur_qp_state = (enum ibv_qp_state)src->cur_qp_state;
	dst->path_mtu = (enum ibv_mtu)src->path_mtu;
	dst->path_mig_state = (enum ibv_mig_state)src->path_mig_state;
	dst->qkey = src->qkey;
	dst->rq_psn = src->rq_psn;
	dst->sq_psn = src->sq_psn;
	dst->dest_qp_num = src->dest_qp_num;
	dst->qp_access_flags = src->qp_access_flags;
	dst->cap.max_send_wr = src->max_send_wr;
	dst->cap.max_recv_wr = src->max_recv_wr;
	dst->cap.max_send_sge = src->max_send_sge;
	dst->cap.max_recv_sge = src->max_recv_sge;
	dst->cap.max_inline_data = src->max_inline_data;
	ibv_copy_ah_attr_from_kern(&dst->ah_attr, &src->ah_attr);
	ibv_copy_ah_attr_from_kern(&dst->alt_ah_attr, &src->alt_ah_attr);
	dst->pkey_index = src->pkey_index;
	dst->alt_pkey_index = src->alt_pkey_index;
	dst->en_sqd_async_notify = src->en_sqd_async_notify;
	dst->sq_draining = src->sq_draining;
	dst->max_rd_atomic = src->max_rd_atomic;
	dst->max_dest_rd_atomic = src->max_dest_rd_atomic;
	dst->min_rnr_timer = src->min_rnr_timer;
	dst->port_num = src->port_num;
	dst->timeout = src->timeout;
	dst->retry_cnt = src->retry_cnt;
	dst->rnr_retry = src->rnr_retry;
	dst->alt_port_num = src->alt_port_num;
	dst->alt_timeout = src->alt_timeout;
}

SOFV_EXPORT void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst,
					     struct ib_user_path_rec *src)
{
	memcpy(dst->dgid.raw, src->dgid, sizeof(dst->dgid));
	memcpy(dst->sgid.raw, src->sgid, sizeof(dst->sgid));
	dst->dlid = src->dlid;
	dst->slid = src->slid;
	dst->raw_traffic = (int)src->raw_traffic;
	dst->flow_label = src->flow_label;
	dst->hop_limit = src->hop_limit;
	dst->traffic_class = src->traffic_class;
	dst->reversible = (int)src->reversible;
	dst->numb_path = src->numb_path;
	dst->pkey = src->pkey;
	dst->sl = src->sl;
	dst->mtu_selector = src->mtu_selector;
	dst->mtu = (uint8_t)src->mtu;
	dst->rate_selector = src->rate_selector;
	dst->rate = src->rate;
	dst->packet_life_time_selector = src->packet_life_time_selector;
	dst->packet_life_time = src->packet_life_time;
	dst->preference = src->preference;
}

SOFV_EXPORT void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst,
					   struct ibv_sa_path_rec *src)
{
	memset(dst, 0, sizeof(*dst));
	memcpy(dst->dgid, src->dgid.raw, sizeof(dst->dgid));
	memcpy(dst->sgid, src->sgid.raw, sizeof(dst->sgid));
	dst->dlid = src->dlid;
	dst->slid = src->slid;
	dst->raw_traffic = src->raw_traffic ? 1 : 0;
	dst->flow_label = src->flow_label;
	dst->hop_limit = src->hop_limit;
	dst->traffic_class = src->traffic_class;
	dst->reversible = src->reversible ? 1 : 0;
	dst->numb_path = src->numb_path;
	dst->pkey = src->pkey;
	dst->sl = src->sl;
	dst->mtu_selector = src->mtu_selector;
	dst->mtu = src->mtu;
	dst->rate_selector = src->rate_selector;
	dst->rate = src->rate;
	dst->packet_life_time_selector = src->packet_life_time_selector;
	dst->packet_life_time = src->packet_life_time;
	dst->preference = src->preference;
}

/* ---- what this device does not have -------------------------------------- */

/* Providers of Ethernet devices resolve a GID to a MAC for their hardware;
 * the executor needs none. */
SOFV_EXPORT int ibv_resolve_eth_l2_from_gid(struct ibv_context *context, struct ibv_ah_attr *attr,
					    uint8_t eth_mac[6], uint16_t *vid)
{
	(void)context;
	(void)attr;
	(void)eth_mac;
	(void)vid;
	return EOPNOTSUPP;
}

/* Enhanced connection establishment, as mlx5 does it: the options are
 * for this device's vendor and are accepted whole (there is nothing to
 * negotiate away), so ibv_query_ece reports what was set. The CM does not
 * carry them to the peer. */
SOFV_EXPORT int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	struct sofv_qp *sqp;

	if (!qp || !ece || ece->comp_mask ||
	    ece->vendor_id != to_sctx(qp->context)->dev.vendor_id)
		return EINVAL;
	sqp = to_sqp(qp);
	pthread_spin_lock(&sqp->sq_lock);
	sqp->ece_options = ece->options;
	pthread_spin_unlock(&sqp->sq_lock);
	return 0;
}

SOFV_EXPORT int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	struct sofv_qp *sqp;

	if (!qp || !ece)
		return EINVAL;
	sqp = to_sqp(qp);
	ece->vendor_id = to_sctx(qp->context)->dev.vendor_id;
	pthread_spin_lock(&sqp->sq_lock);
	ece->options = sqp->ece_options;
	pthread_spin_unlock(&sqp->sq_lock);
	ece->comp_mask = 0;
	return 0;
}

/* Device memory is a mapping of its process (dm.c): nothing to import. */
SOFV_EXPORT struct ibv_dm *ibv_import_dm(struct ibv_context *context, uint32_t dm_handle)
{
	(void)context;
	(void)dm_handle;
	errno = EOPNOTSUPP;
	return NULL;
}

SOFV_EXPORT void ibv_unimport_dm(struct ibv_dm *dm) { (void)dm; }

/* No device memory and no dma-buf exporter to read from. */
SOFV_EXPORT struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
					     uint64_t iova, int fd, int access)
{
	(void)pd;
	(void)offset;
	(void)length;
	(void)iova;
	(void)fd;
	(void)access;
	errno = EOPNOTSUPP;
	return NULL;
}

/* The executor copies a message with memcpy, whose store order is not
 * defined: promise no ordering (0), as providers without the query do. */
SOFV_EXPORT int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t flags)
{
	(void)qp;
	(void)op;
	(void)flags;
	return 0;
}
