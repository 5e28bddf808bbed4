/*
 * Work-request facts shared by the library's executor and the daemon's
 * transport: which opcodes a QP type accepts, what completion opcode a
 * send work request gives, and the local ACK timeout.
 */
#ifndef SOF_WR_H
#define SOF_WR_H

#include <stdbool.h>
#include <stdint.h>

/* Whether a QP of qp_type (enum ibv_qp_type) accepts the send opcode
 * wr_opcode (enum ibv_wr_opcode): IBA 9.8.3, 10.7.3.1. */
bool sof_wr_opcode_allowed(uint32_t qp_type, uint32_t wr_opcode);
/* RDMA READ or an atomic (ATOMIC WRITE included): needs responder
 * resources (IBA 9.7.5.1.4). */
bool sof_wr_is_rd_atomic(uint32_t wr_opcode);
/* The enum ibv_wc_opcode of the completion of a send work request. */
uint32_t sof_wc_opcode(uint32_t wr_opcode);
/* Whether a QP in state (enum ibv_qp_state) accepts incoming requests:
 * RTR, RTS, SQD, SQE (IBA 10.3.1). */
bool sof_qp_state_receives(uint32_t state);
/* IBA 9.7.6.1.3: the local ACK timeout, 4.096 us * 2^timeout; 0 when the
 * timeout is 0 (infinite). */
uint64_t sof_ack_timeout_ns(uint8_t timeout);

#endif
