/*
 * The rest of libibverbs' exported surface: names of enums as text, rate
 * conversions, the sysfs helpers (there is no kernel device, so nothing to
 * read), the kernel-ABI marshalling helpers librdmacm links against, and
 * the verbs this device does not have (importing objects from another
 * context, dma-buf memory, ECE), which fail the way rdma-core fails when a
 * provider lacks them.
 *
 * The strings and rate tables are those rdma-core 44 gives, so tools that
 * print or parse them behave the same.
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

/* ---- enums as text ---------------------------------------------------------- */

static const char *str_at(const char *const *tab, size_t n, long i)
{
	return i >= 0 && (size_t)i < n && tab[i] ? tab[i] : "unknown";
}

SOFV_EXPORT const char *ibv_node_type_str(enum ibv_node_type node_type)
{
	static const char *const s[] = {
	    [IBV_NODE_CA] = "InfiniBand channel adapter",
	    [IBV_NODE_SWITCH] = "InfiniBand switch",
	    [IBV_NODE_ROUTER] = "InfiniBand router",
	    [IBV_NODE_RNIC] = "iWARP NIC",
	    [IBV_NODE_USNIC] = "usNIC",
	    [IBV_NODE_USNIC_UDP] = "usNIC UDP",
	    [IBV_NODE_UNSPECIFIED] = "unspecified",
	};

	return str_at(s, SOF_ARRAY_SIZE(s), node_type);
}

SOFV_EXPORT const char *ibv_port_state_str(enum ibv_port_state port_state)
{
	static const char *const s[] = {
	    [IBV_PORT_NOP] = "no state change (NOP)",
	    [IBV_PORT_DOWN] = "down",
	    [IBV_PORT_INIT] = "init",
	    [IBV_PORT_ARMED] = "armed",
	    [IBV_PORT_ACTIVE] = "active",
	    [IBV_PORT_ACTIVE_DEFER] = "active defer",
	};

	return str_at(s, SOF_ARRAY_SIZE(s), port_state);
}

SOFV_EXPORT const char *ibv_event_type_str(enum ibv_event_type event)
{
	static const char *const s[] = {
	    [IBV_EVENT_CQ_ERR] = "CQ error",
	    [IBV_EVENT_QP_FATAL] = "local work queue catastrophic error",
	    [IBV_EVENT_QP_REQ_ERR] = "invalid request local work queue error",
	    [IBV_EVENT_QP_ACCESS_ERR] = "local access violation work queue error",
	    [IBV_EVENT_COMM_EST] = "communication established",
	    [IBV_EVENT_SQ_DRAINED] = "send queue drained",
	    [IBV_EVENT_PATH_MIG] = "path migrated",
	    [IBV_EVENT_PATH_MIG_ERR] = "path migration request error",
	    [IBV_EVENT_DEVICE_FATAL] = "local catastrophic error",
	    [IBV_EVENT_PORT_ACTIVE] = "port active",
	    [IBV_EVENT_PORT_ERR] = "port error",
	    [IBV_EVENT_LID_CHANGE] = "LID change",
	    [IBV_EVENT_PKEY_CHANGE] = "P_Key change",
	    [IBV_EVENT_SM_CHANGE] = "SM change",
	    [IBV_EVENT_SRQ_ERR] = "SRQ catastrophic error",
	    [IBV_EVENT_SRQ_LIMIT_REACHED] = "SRQ limit reached",
	    [IBV_EVENT_QP_LAST_WQE_REACHED] = "last WQE reached",
	    [IBV_EVENT_CLIENT_REREGISTER] = "client reregistration",
	    [IBV_EVENT_GID_CHANGE] = "GID table change",
	    [IBV_EVENT_WQ_FATAL] = "WQ fatal",
	};

	return str_at(s, SOF_ARRAY_SIZE(s), event);
}

SOFV_EXPORT const char *ibv_wc_status_str(enum ibv_wc_status status)
{
	static const char *const s[] = {
	    [IBV_WC_SUCCESS] = "success",
	    [IBV_WC_LOC_LEN_ERR] = "local length error",
	    [IBV_WC_LOC_QP_OP_ERR] = "local QP operation error",
	    [IBV_WC_LOC_EEC_OP_ERR] = "local EE context operation error",
	    [IBV_WC_LOC_PROT_ERR] = "local protection error",
	    [IBV_WC_WR_FLUSH_ERR] = "Work Request Flushed Error",
	    [IBV_WC_MW_BIND_ERR] = "memory management operation error",
	    [IBV_WC_BAD_RESP_ERR] = "bad response error",
	    [IBV_WC_LOC_ACCESS_ERR] = "local access error",
	    [IBV_WC_REM_INV_REQ_ERR] = "remote invalid request error",
	    [IBV_WC_REM_ACCESS_ERR] = "remote access error",
	    [IBV_WC_REM_OP_ERR] = "remote operation error",
	    [IBV_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
	    [IBV_WC_RNR_RETRY_EXC_ERR] = "RNR retry counter exceeded",
	    [IBV_WC_LOC_RDD_VIOL_ERR] = "local RDD violation error",
	    [IBV_WC_REM_INV_RD_REQ_ERR] = "remote invalid RD request",
	    [IBV_WC_REM_ABORT_ERR] = "aborted error",
	    [IBV_WC_INV_EECN_ERR] = "invalid EE context number",
	    [IBV_WC_INV_EEC_STATE_ERR] = "invalid EE context state",
	    [IBV_WC_FATAL_ERR] = "fatal error",
	    [IBV_WC_RESP_TIMEOUT_ERR] = "response timeout error",
	    [IBV_WC_GENERAL_ERR] = "general error",
	    [IBV_WC_TM_ERR] = "TM error",
	    [IBV_WC_TM_RNDV_INCOMPLETE] = "TM software rendezvous",
	};

	return str_at(s, SOF_ARRAY_SIZE(s), status);
}

/* ---- rates ---------------------------------------------------------------- */

/* Each static rate with its multiple of 2.5 Gb/s (0: not a multiple that
 * rdma-core converts) and its data rate in Mb/s after line coding. */
static const struct {
	enum ibv_rate rate;
	int mult;
	int mbps;
} rates[] = {
    {IBV_RATE_2_5_GBPS, 1, 2500},	{IBV_RATE_5_GBPS, 2, 5000},
    {IBV_RATE_10_GBPS, 4, 10000},	{IBV_RATE_20_GBPS, 8, 20000},
    {IBV_RATE_30_GBPS, 12, 30000},	{IBV_RATE_40_GBPS, 16, 40000},
    {IBV_RATE_60_GBPS, 24, 60000},	{IBV_RATE_80_GBPS, 32, 80000},
    {IBV_RATE_120_GBPS, 48, 120000},	{IBV_RATE_14_GBPS, 0, 14062},
    {IBV_RATE_56_GBPS, 0, 56250},	{IBV_RATE_112_GBPS, 0, 112500},
    {IBV_RATE_168_GBPS, 0, 168750},	{IBV_RATE_25_GBPS, 0, 25781},
    {IBV_RATE_100_GBPS, 0, 103125},	{IBV_RATE_200_GBPS, 0, 206250},
    {IBV_RATE_300_GBPS, 0, 309375},	{IBV_RATE_28_GBPS, 11, 28125},
    {IBV_RATE_50_GBPS, 20, 53125},	{IBV_RATE_400_GBPS, 160, 425000},
    {IBV_RATE_600_GBPS, 240, 637500},	{IBV_RATE_800_GBPS, 320, 850000},
    {IBV_RATE_1200_GBPS, 480, 1275000},
};

SOFV_EXPORT __attribute__((const)) int ibv_rate_to_mult(enum ibv_rate rate)
{
	for (size_t i = 0; i < SOF_ARRAY_SIZE(rates); i++)
		if (rates[i].rate == rate)
			return rates[i].mult ? rates[i].mult : -1;
	return -1;
}

SOFV_EXPORT __attribute__((const)) enum ibv_rate mult_to_ibv_rate(int mult)
{
	for (size_t i = 0; i < SOF_ARRAY_SIZE(rates); i++)
		if (rates[i].mult && rates[i].mult == mult)
			return rates[i].rate;
	return IBV_RATE_MAX;
}

SOFV_EXPORT __attribute__((const)) int ibv_rate_to_mbps(enum ibv_rate rate)
{
	for (size_t i = 0; i < SOF_ARRAY_SIZE(rates); i++)
		if (rates[i].rate == rate)
			return rates[i].mbps;
	return -1;
}

SOFV_EXPORT __attribute__((const)) enum ibv_rate mbps_to_ibv_rate(int mbps)
{
	for (size_t i = 0; i < SOF_ARRAY_SIZE(rates); i++)
		if (rates[i].mbps == mbps)
			return rates[i].rate;
	return IBV_RATE_MAX;
}

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

SOFV_EXPORT int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp;
	(void)ece;
	return EOPNOTSUPP;
}

SOFV_EXPORT int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp;
	(void)ece;
	return EOPNOTSUPP;
}

/* Objects cannot be shared between contexts through a command fd. */
SOFV_EXPORT struct ibv_pd *ibv_import_pd(struct ibv_context *context, uint32_t pd_handle)
{
	(void)context;
	(void)pd_handle;
	errno = EOPNOTSUPP;
	return NULL;
}

SOFV_EXPORT void ibv_unimport_pd(struct ibv_pd *pd) { (void)pd; }

SOFV_EXPORT struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	(void)pd;
	(void)mr_handle;
	errno = EOPNOTSUPP;
	return NULL;
}

SOFV_EXPORT void ibv_unimport_mr(struct ibv_mr *mr) { (void)mr; }

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
