/*
 * Work-request facts shared by the library's executor and the daemon's
 * transport (sof_wr.h).
 */
#include "sof_wr.h"

#include <infiniband/verbs.h>

bool sof_wr_opcode_allowed(uint32_t qp_type, uint32_t wr_opcode)
{
	switch (wr_opcode) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		return qp_type == IBV_QPT_RC || qp_type == IBV_QPT_UC || qp_type == IBV_QPT_UD ||
		       qp_type == IBV_QPT_XRC_SEND ||
		       (qp_type == IBV_QPT_RAW_PACKET && wr_opcode == IBV_WR_SEND);
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return qp_type == IBV_QPT_RC || qp_type == IBV_QPT_UC || qp_type == IBV_QPT_XRC_SEND;
	case IBV_WR_RDMA_READ:
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		/* an XRC INI QP sends what an RC QP sends (XRC annex) */
		return qp_type == IBV_QPT_RC || qp_type == IBV_QPT_XRC_SEND;
	case IBV_WR_ATOMIC_WRITE:
		return qp_type == IBV_QPT_RC;
	/* IBA 10.7.3.1: binds and local invalidation on connected QPs;
	 * SEND with invalidate exists only in RC's opcodes (9.2, table 38) */
	case IBV_WR_BIND_MW:
	case IBV_WR_LOCAL_INV:
		return qp_type == IBV_QPT_RC || qp_type == IBV_QPT_UC;
	case IBV_WR_SEND_WITH_INV:
		return qp_type == IBV_QPT_RC;
	default:
		return false;
	}
}

bool sof_wr_is_rd_atomic(uint32_t wr_opcode)
{
	return wr_opcode == IBV_WR_RDMA_READ || wr_opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
	       wr_opcode == IBV_WR_ATOMIC_FETCH_AND_ADD || wr_opcode == IBV_WR_ATOMIC_WRITE;
}

uint32_t sof_wc_opcode(uint32_t wr_opcode)
{
	switch (wr_opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return IBV_WC_COMP_SWAP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return IBV_WC_FETCH_ADD;
	case IBV_WR_ATOMIC_WRITE:
		return IBV_WC_ATOMIC_WRITE;
	case IBV_WR_BIND_MW:
		return IBV_WC_BIND_MW;
	case IBV_WR_LOCAL_INV:
		return IBV_WC_LOCAL_INV;
	default:
		return IBV_WC_SEND;
	}
}

uint64_t sof_ack_timeout_ns(uint8_t timeout)
{
	if (!timeout)
		return 0;
	return 4096ull << (timeout > 31 ? 31 : timeout);
}

bool sof_qp_state_receives(uint32_t state)
{
	return state == IBV_QPS_RTR || state == IBV_QPS_RTS || state == IBV_QPS_SQD ||
	       state == IBV_QPS_SQE;
}
