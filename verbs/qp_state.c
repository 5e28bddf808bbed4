/*
 * The QP state machine of IBA 10.3.1 (RC, UC, UD): for each transition the
 * attributes ibv_modify_qp(3) requires and the ones it may also carry. A
 * transition absent from the table is invalid (EINVAL at the caller). Any
 * state may go to RESET or ERROR with IBV_QP_STATE alone.
 */
#include "qp_state.h"

#include <string.h>

enum { T_UD, T_UC, T_RC, T_NTYPES };

struct qp_trans {
	bool valid;
	int req[T_NTYPES];
	int opt[T_NTYPES];
};

#define NSTATES (IBV_QPS_ERR + 1)

/* clang-format off */
static const struct qp_trans trans[NSTATES][NSTATES] = {
	[IBV_QPS_RESET] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_INIT] = {
			.valid = true,
			.req = {
				[T_UD] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY,
				[T_UC] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
				[T_RC] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
			},
		},
	},
	[IBV_QPS_INIT] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_INIT] = {
			.valid = true,
			.opt = {
				[T_UD] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY,
				[T_UC] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
				[T_RC] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
			},
		},
		[IBV_QPS_RTR] = {
			.valid = true,
			.req = {
				[T_UC] = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN,
				[T_RC] = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					 IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
			},
			.opt = {
				[T_UD] = IBV_QP_PKEY_INDEX | IBV_QP_QKEY,
				[T_UC] = IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX,
				[T_RC] = IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX,
			},
		},
	},
	[IBV_QPS_RTR] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_RTS] = {
			.valid = true,
			.req = {
				[T_UD] = IBV_QP_SQ_PSN,
				[T_UC] = IBV_QP_SQ_PSN,
				[T_RC] = IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					 IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC,
			},
			.opt = {
				[T_UD] = IBV_QP_CUR_STATE | IBV_QP_QKEY,
				[T_UC] = IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
					 IBV_QP_PATH_MIG_STATE,
				[T_RC] = IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
					 IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE,
			},
		},
	},
	[IBV_QPS_RTS] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_RTS] = {
			.valid = true,
			.opt = {
				[T_UD] = IBV_QP_CUR_STATE | IBV_QP_QKEY,
				[T_UC] = IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH |
					 IBV_QP_PATH_MIG_STATE,
				[T_RC] = IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH |
					 IBV_QP_PATH_MIG_STATE | IBV_QP_MIN_RNR_TIMER,
			},
		},
		[IBV_QPS_SQD] = {
			.valid = true,
			.opt = {
				[T_UD] = IBV_QP_EN_SQD_ASYNC_NOTIFY,
				[T_UC] = IBV_QP_EN_SQD_ASYNC_NOTIFY,
				[T_RC] = IBV_QP_EN_SQD_ASYNC_NOTIFY,
			},
		},
	},
	[IBV_QPS_SQD] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_RTS] = {
			.valid = true,
			.opt = {
				[T_UD] = IBV_QP_CUR_STATE | IBV_QP_QKEY,
				[T_UC] = IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
					 IBV_QP_PATH_MIG_STATE,
				[T_RC] = IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
					 IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE,
			},
		},
		[IBV_QPS_SQD] = {
			.valid = true,
			.opt = {
				[T_UD] = IBV_QP_PKEY_INDEX | IBV_QP_QKEY,
				[T_UC] = IBV_QP_AV | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
					 IBV_QP_PKEY_INDEX | IBV_QP_PATH_MIG_STATE,
				[T_RC] = IBV_QP_PORT | IBV_QP_AV | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					 IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC |
					 IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_ALT_PATH |
					 IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX |
					 IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE,
			},
		},
	},
	[IBV_QPS_SQE] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_RTS] = {
			.valid = true,
			.opt = {
				[T_UD] = IBV_QP_CUR_STATE | IBV_QP_QKEY,
				[T_UC] = IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS,
			},
		},
	},
	[IBV_QPS_ERR] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
	},
};
/* clang-format on */

bool sofv_qp_transition_ok(enum ibv_qp_type t, enum ibv_qp_state cur, enum ibv_qp_state next,
			   int attr_mask)
{
	const struct qp_trans *tr;
	int ti, req, opt;

	/* A raw packet QP (the kernel's table): the port on the way to INIT,
	 * nothing else. */
	if (t == IBV_QPT_RAW_PACKET) {
		int need = cur == IBV_QPS_RESET && next == IBV_QPS_INIT ? IBV_QP_PORT : 0;

		if ((unsigned)cur >= NSTATES || (unsigned)next >= NSTATES ||
		    !trans[cur][next].valid || cur == IBV_QPS_SQE || next == IBV_QPS_SQE)
			return false;
		if ((attr_mask & need) != need)
			return false;
		return !(attr_mask & ~(IBV_QP_STATE | IBV_QP_CUR_STATE | IBV_QP_PORT));
	}
	switch (t) {
	case IBV_QPT_UD:
		ti = T_UD;
		break;
	case IBV_QPT_UC:
		ti = T_UC;
		break;
	case IBV_QPT_RC:
	case IBV_QPT_XRC_SEND:
	case IBV_QPT_XRC_RECV:
		ti = T_RC;
		break;
	default:
		return false;
	}
	if ((unsigned)cur >= NSTATES || (unsigned)next >= NSTATES)
		return false;
	/* SQE exists for UC and UD only (IBA 10.3.1.6). */
	if (ti == T_RC && (cur == IBV_QPS_SQE || next == IBV_QPS_SQE))
		return false;
	/* IBV_QP_RATE_LIMIT: optional into RTS from RTR or RTS, as the
	 * kernel's table has it for the QPs it paces (here UD, UC, RC). */
	if ((attr_mask & IBV_QP_RATE_LIMIT) && next == IBV_QPS_RTS &&
	    (cur == IBV_QPS_RTR || cur == IBV_QPS_RTS))
		attr_mask &= ~IBV_QP_RATE_LIMIT;
	tr = &trans[cur][next];
	if (!tr->valid)
		return false;
	req = tr->req[ti];
	opt = tr->opt[ti];
	/* XRC as the kernel's qp_state_table: an INI QP has no responder
	 * attributes, a TGT QP no requester ones (it sends only ACKs) */
	if (t == IBV_QPT_XRC_SEND) {
		req &= ~(IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
		opt &= ~(IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	} else if (t == IBV_QPT_XRC_RECV) {
		const int sq_only = IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;

		opt |= req & sq_only;
		req &= ~sq_only;
	}
	if ((attr_mask & req) != req)
		return false;
	return !(attr_mask & ~(req | opt | IBV_QP_STATE));
}

const char *sofv_qp_state_str(enum ibv_qp_state s)
{
	static const char *const names[] = {
	    [IBV_QPS_RESET] = "RESET", [IBV_QPS_INIT] = "INIT", [IBV_QPS_RTR] = "RTR",
	    [IBV_QPS_RTS] = "RTS",     [IBV_QPS_SQD] = "SQD",	[IBV_QPS_SQE] = "SQE",
	    [IBV_QPS_ERR] = "ERR",
	};

	if ((unsigned)s < sizeof(names) / sizeof(names[0]) && names[s])
		return names[s];
	return "UNKNOWN";
}
