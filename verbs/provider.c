/*
 * rdma-core's provider interface (symbol version IBVERBS_PRIVATE_34),
 * exported so that the direct-verbs libraries programs link against
 * (libmlx5, libmlx4, libefa, libmana: perftest links libmlx5 and libefa)
 * load with this library in place of rdma-core's. Those libraries drive
 * kernel devices and never see ours: their constructors register a driver,
 * which is ignored, and every command entry fails with EOPNOTSUPP.
 *
 * The entries are declared without their rdma-core argument lists: they are
 * never called with our objects, and only their names and versions matter
 * to the dynamic linker.
 */
#include "sofv.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

/* clang-format off */
#define SOFV_CMD_STUB(name) \
	SOFV_EXPORT int name(void); \
	SOFV_EXPORT int name(void) { return EOPNOTSUPP; }
/* clang-format on */

SOFV_CMD_STUB(execute_ioctl)
SOFV_CMD_STUB(ibv_cmd_advise_mr)
SOFV_CMD_STUB(ibv_cmd_alloc_dm)
SOFV_CMD_STUB(ibv_cmd_alloc_mw)
SOFV_CMD_STUB(ibv_cmd_alloc_pd)
SOFV_CMD_STUB(ibv_cmd_attach_mcast)
SOFV_CMD_STUB(ibv_cmd_close_xrcd)
SOFV_CMD_STUB(ibv_cmd_create_ah)
SOFV_CMD_STUB(ibv_cmd_create_counters)
SOFV_CMD_STUB(ibv_cmd_create_cq)
SOFV_CMD_STUB(ibv_cmd_create_cq_ex)
SOFV_CMD_STUB(ibv_cmd_create_flow)
SOFV_CMD_STUB(ibv_cmd_create_flow_action_esp)
SOFV_CMD_STUB(ibv_cmd_create_qp)
SOFV_CMD_STUB(ibv_cmd_create_qp_ex)
SOFV_CMD_STUB(ibv_cmd_create_qp_ex2)
SOFV_CMD_STUB(ibv_cmd_create_rwq_ind_table)
SOFV_CMD_STUB(ibv_cmd_create_srq)
SOFV_CMD_STUB(ibv_cmd_create_srq_ex)
SOFV_CMD_STUB(ibv_cmd_create_wq)
SOFV_CMD_STUB(ibv_cmd_dealloc_mw)
SOFV_CMD_STUB(ibv_cmd_dealloc_pd)
SOFV_CMD_STUB(ibv_cmd_dereg_mr)
SOFV_CMD_STUB(ibv_cmd_destroy_ah)
SOFV_CMD_STUB(ibv_cmd_destroy_counters)
SOFV_CMD_STUB(ibv_cmd_destroy_cq)
SOFV_CMD_STUB(ibv_cmd_destroy_flow)
SOFV_CMD_STUB(ibv_cmd_destroy_flow_action)
SOFV_CMD_STUB(ibv_cmd_destroy_qp)
SOFV_CMD_STUB(ibv_cmd_destroy_rwq_ind_table)
SOFV_CMD_STUB(ibv_cmd_destroy_srq)
SOFV_CMD_STUB(ibv_cmd_destroy_wq)
SOFV_CMD_STUB(ibv_cmd_detach_mcast)
SOFV_CMD_STUB(ibv_cmd_free_dm)
SOFV_CMD_STUB(ibv_cmd_get_context)
SOFV_CMD_STUB(ibv_cmd_modify_cq)
SOFV_CMD_STUB(ibv_cmd_modify_flow_action_esp)
SOFV_CMD_STUB(ibv_cmd_modify_qp)
SOFV_CMD_STUB(ibv_cmd_modify_qp_ex)
SOFV_CMD_STUB(ibv_cmd_modify_srq)
SOFV_CMD_STUB(ibv_cmd_modify_wq)
SOFV_CMD_STUB(ibv_cmd_open_qp)
SOFV_CMD_STUB(ibv_cmd_open_xrcd)
SOFV_CMD_STUB(ibv_cmd_query_context)
SOFV_CMD_STUB(ibv_cmd_query_device_any)
SOFV_CMD_STUB(ibv_cmd_query_mr)
SOFV_CMD_STUB(ibv_cmd_query_port)
SOFV_CMD_STUB(ibv_cmd_query_qp)
SOFV_CMD_STUB(ibv_cmd_query_srq)
SOFV_CMD_STUB(ibv_cmd_read_counters)
SOFV_CMD_STUB(ibv_cmd_reg_dm_mr)
SOFV_CMD_STUB(ibv_cmd_reg_dmabuf_mr)
SOFV_CMD_STUB(ibv_cmd_reg_mr)
SOFV_CMD_STUB(ibv_cmd_rereg_mr)
SOFV_CMD_STUB(ibv_cmd_resize_cq)

SOFV_EXPORT void verbs_register_driver_34(const void *ops);
SOFV_EXPORT void verbs_register_driver_34(const void *ops)
{
	(void)ops; /* no rdma-core provider drives a softofed device */
}

SOFV_EXPORT void __verbs_log(const void *ctx, unsigned int level, const char *fmt, ...);
SOFV_EXPORT void __verbs_log(const void *ctx, unsigned int level, const char *fmt, ...)
{
	(void)ctx;
	(void)level;
	(void)fmt;
}

SOFV_EXPORT void *_verbs_init_and_alloc_context(void *device, int cmd_fd, size_t alloc_size,
						void *context_offset, unsigned int driver_id);
SOFV_EXPORT void *_verbs_init_and_alloc_context(void *device, int cmd_fd, size_t alloc_size,
						void *context_offset, unsigned int driver_id)
{
	(void)device;
	(void)cmd_fd;
	(void)alloc_size;
	(void)context_offset;
	(void)driver_id;
	errno = EOPNOTSUPP;
	return NULL;
}

SOFV_EXPORT struct ibv_context *verbs_open_device(struct ibv_device *device, void *private_data);
SOFV_EXPORT struct ibv_context *verbs_open_device(struct ibv_device *device, void *private_data)
{
	(void)private_data;
	/* the ordinary open: our devices have no provider-private data */
	return ibv_open_device(device);
}

SOFV_EXPORT void verbs_set_ops(void *vctx, const void *ops);
SOFV_EXPORT void verbs_set_ops(void *vctx, const void *ops)
{
	(void)vctx;
	(void)ops;
}

SOFV_EXPORT void verbs_uninit_context(void *vctx);
SOFV_EXPORT void verbs_uninit_context(void *vctx) { (void)vctx; }

SOFV_EXPORT int verbs_init_cq(void *cq, void *context, void *channel, void *cq_context);
SOFV_EXPORT int verbs_init_cq(void *cq, void *context, void *channel, void *cq_context)
{
	(void)cq;
	(void)context;
	(void)channel;
	(void)cq_context;
	return EOPNOTSUPP;
}

SOFV_EXPORT bool verbs_allow_disassociate_destroy(void);
SOFV_EXPORT bool verbs_allow_disassociate_destroy(void) { return false; }
