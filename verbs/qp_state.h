/*
 * The QP state machine of IBA 10.3.1 / 11.2.5: which transitions
 * ibv_modify_qp accepts for each transport, and which attributes each one
 * requires and allows (the table rdma-core's and the kernel's verbs use).
 */
#ifndef SOFV_QP_STATE_H
#define SOFV_QP_STATE_H

#include <infiniband/verbs.h>
#include <stdbool.h>

/* Check a transition of a QP of type t from cur to next with attr_mask.
 * true when valid: the mask holds every required attribute and nothing
 * that the transition does not allow. */
bool sofv_qp_transition_ok(enum ibv_qp_type t, enum ibv_qp_state cur, enum ibv_qp_state next,
			   int attr_mask);

/* Name of a state, for messages ("RESET", "INIT", ...). */
const char *sofv_qp_state_str(enum ibv_qp_state s);

#endif
