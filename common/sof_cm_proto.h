/*
 * The connection manager's part of the control protocol (sof_proto.h):
 * what librdmacm asks the device daemon, and the events the daemon sends
 * back. The daemon plays the kernel's rdma_cm + ib_cm: it owns every
 * rdma_cm_id's state, speaks the IB CM protocol (IBA chapter 12) in MADs on
 * QP1, and picks the PSNs; the library, like rdma-core's librdmacm, moves
 * the QPs through INIT, RTR and RTS with the attributes the daemon gives
 * (SOF_OP_CM_INIT_QP_ATTR).
 *
 * Sockets. A process uses:
 *  - one command connection (any connection that never said HELLO): the
 *    SOF_OP_CM_* requests below, answered in order as every op is;
 *  - one connection per rdma_event_channel, which sends SOF_OP_CM_CHANNEL
 *    once and from then on only receives: every record on it is one
 *    struct sof_cm_event (no struct sof_msg in front). The user polls that
 *    socket as the channel's fd. Its ids live as long as it: when it
 *    closes (the process died), the daemon destroys every id on it,
 *    sending DREQ or REJ to the peers.
 * A request naming a channel or id must come from the process (pid and
 * uid, SO_PEERCRED) that opened the channel; anything else is -ENOENT.
 *
 * Addresses travel as struct sockaddr_storage (AF_INET, AF_INET6, AF_IB).
 */
#ifndef SOF_CM_PROTO_H
#define SOF_CM_PROTO_H

#include <stdint.h>
#include <sys/socket.h>

/* Private data of a connection message, the largest (MRA: IBA 12.6.6). */
#define SOF_CM_PDATA_MAX 224

/* ---- requests ------------------------------------------------------------------- */

/* SOF_OP_CM_CHANNEL, on the channel's own connection: no request payload */
struct sof_cm_channel_rep {
	uint32_t channel;
	uint32_t rsvd;
};

/* SOF_OP_CM_CREATE_ID */
struct sof_cm_create_req {
	uint32_t channel;
	uint32_t ps;         /* enum rdma_port_space */
	uint32_t qp_type;    /* enum ibv_qp_type */
	uint32_t rsvd;
};
struct sof_cm_id_rep {
	uint32_t id;
	uint32_t rsvd;
};

/* The ops that name one id and at most one number:
 *  DESTROY_ID   -
 *  LISTEN       arg = backlog (0: a default)
 *  RESOLVE_ROUTE arg = timeout_ms
 *  DISCONNECT   -
 *  ESTABLISH    - (active side, after RTR/RTS: sends RTU)
 *  INIT_QP_ATTR arg = enum ibv_qp_state wanted; reply sof_cm_qp_attr
 *  MIGRATE_ID   arg = new channel
 *  NOTIFY       arg = enum ibv_event_type (IBV_EVENT_COMM_EST: RTU lost)
 *  QUERY        -; reply sof_cm_query_rep
 *  GET_ECE      -; reply sof_cm_ece (what the peer sent)
 */
struct sof_cm_id_req {
	uint32_t id;
	uint32_t arg;
};

/* BIND_ADDR: addr = src. RESOLVE_ADDR: src (family 0: any), dst, timeout.
 * Reply of both: sof_cm_query_rep (the addresses as bound).
 * ib: the library found the IP address (src of BIND_ADDR, dst of
 * RESOLVE_ADDR) on an IPoIB interface (its softofed-ipoib answered): the
 * id goes on the InfiniBand port; RESOLVE_ADDR's dgid is the GID of dst's
 * IPoIB hardware address (zero: it could not be resolved); pkey is that
 * interface's P_Key (a child's, ib0.8001: 0x8001; 0: the default
 * 0xffff), as the kernel's rdma_cm takes it from the netdev's hardware
 * address. */
struct sof_cm_addr_req {
	uint32_t id;
	uint32_t timeout_ms;
	struct sockaddr_storage src;
	struct sockaddr_storage dst;
	uint8_t ib;
	uint8_t rsvd;
	uint16_t pkey;
	uint8_t dgid[16];
};

/* What the id looks like now. */
struct sof_cm_query_rep {
	struct sockaddr_storage src;
	struct sockaddr_storage dst;
	uint8_t sgid[16];
	uint8_t dgid[16];
	uint32_t sgid_index;
	uint16_t pkey;
	uint8_t port_num;    /* 0: no device bound yet, else 1 */
	uint8_t num_paths;   /* 1 once the route is resolved */
	/* the path, when num_paths is 1 */
	uint8_t mtu;         /* enum ibv_mtu */
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint8_t packet_life_time;
	uint32_t flow_label;
	uint8_t ib;          /* 1: the id is on the InfiniBand device sofib0 */
	uint8_t sl;          /* IB: the path's SL */
	uint16_t dlid, slid; /* IB: the path's LIDs (host order) */
	uint8_t rsvd[2];
	uint64_t service_id; /* network order, as in a path record */
};

/* The parameters of CONNECT and ACCEPT, and of the events that carry
 * them (CONNECT_REQUEST, CONNECT_RESPONSE, ESTABLISHED; REJECTED and
 * DISCONNECTED only the private data). */
struct sof_cm_param {
	uint32_t qp_num;
	uint32_t qkey;        /* UD (SIDR_REP) */
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t flow_control;
	uint8_t retry_count;
	uint8_t rnr_retry_count;
	uint8_t srq;
	uint8_t private_data_len;
	uint8_t rsvd;
	/* ECE: in CONNECT_REQUEST / CONNECT_RESPONSE events what the peer
	 * sent; CONNECT and ACCEPT ignore them (SOF_OP_CM_SET_ECE sets ours) */
	uint32_t ece_vendor_id;
	uint32_t ece_options;
	uint8_t private_data[SOF_CM_PDATA_MAX];
};

/* CONNECT, ACCEPT (param as the user gave it, qp_num from the id's QP),
 * REJECT (param.private_data only; reason: IBA 12.6.7.2 code, 0 = consumer
 * defined 28). */
struct sof_cm_conn_req {
	uint32_t id;
	uint32_t reason;
	struct sof_cm_param param;
};

/* SET_OPTION: level/optname as rdma_set_option; value bytes, len <= 72
 * (RDMA_OPTION_IB_PATH: one struct ibv_path_data, 72 bytes). */
struct sof_cm_option_req {
	uint32_t id;
	uint32_t level;
	uint32_t optname;
	uint32_t len;
	uint8_t value[72];
};

/* SET_ECE: what CONNECT or ACCEPT will send. */
struct sof_cm_ece {
	uint32_t id;
	uint32_t vendor_id;
	uint32_t options;
	uint32_t rsvd;
};

/* JOIN_MCAST: join addr's group (an IP multicast address, or an AF_IB
 * MGID); uid is echoed in the MULTICAST_JOIN / MULTICAST_ERROR event.
 * LEAVE_MCAST: addr only. */
struct sof_cm_mcast_req {
	uint32_t id;
	uint32_t join_flags;  /* enum rdma_cm_join_flags */
	uint64_t uid;
	struct sockaddr_storage addr;
};

/* INIT_QP_ATTR reply: the attributes to pass to ibv_modify_qp with mask. */
struct sof_cm_qp_attr {
	uint32_t mask;        /* enum ibv_qp_attr_mask */
	uint32_t qp_state;
	uint32_t qp_access_flags;
	uint32_t qkey;
	uint32_t path_mtu;
	uint32_t dest_qp_num;
	uint32_t rq_psn;
	uint32_t sq_psn;
	uint16_t pkey_index;
	uint8_t port_num;
	uint8_t max_rd_atomic;
	uint8_t max_dest_rd_atomic;
	uint8_t min_rnr_timer;
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	/* ah_attr: global on RoCE; on the InfiniBand port by LID (no_grh) */
	uint8_t sgid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint32_t flow_label;
	uint8_t dgid[16];
	uint16_t dlid;
	uint8_t sl;
	uint8_t no_grh;
};

/* ---- events --------------------------------------------------------------------- */

/* One record on a channel's socket. */
struct sof_cm_event {
	uint32_t id;          /* the id; CONNECT_REQUEST: the new id, already on
			       * the listener's channel */
	uint32_t listen_id;   /* CONNECT_REQUEST: the listener, else 0 */
	uint32_t event;       /* enum rdma_cm_event_type */
	int32_t status;       /* 0 or -errno; REJECTED: the IBA reject reason */
	uint64_t mc_uid;      /* MULTICAST_*: the join's uid */
	struct sof_cm_param param;
	/* UD: the destination (ESTABLISHED after SIDR_REP, MULTICAST_JOIN,
	 * CONNECT_REQUEST of RDMA_PS_UDP) */
	uint8_t ah_dgid[16];
	uint8_t ah_sgid_index;
	uint8_t ah_hop_limit;
	uint8_t ah_traffic_class;
	uint8_t ah_no_grh;    /* 1: by LID without GRH (the InfiniBand port):
			       * ah_dlid and ah_sl, and no GID; 0 with a
			       * nonzero ah_dlid: a GRH and a LID (a
			       * multicast group's MLID on that port) */
	uint32_t ah_flow_label;
	uint16_t ah_dlid;
	uint8_t ah_sl;
	uint8_t rsvd;
	/* CONNECT_REQUEST: the new id, as QUERY would answer */
	struct sof_cm_query_rep q;
};

/* SOF_OP_CM_REQUEUE: ev written again to the caller's channel (as the
 * daemon writes an event). rdma_migrate_id reads what the old channel
 * holds and sends each event back, to the new channel when it is the
 * migrated id's, else to the old one, so that events queued before the
 * move reach the new channel readably, as the kernel's ucma_migrate_id
 * moves them. The id (and a CONNECT_REQUEST's listener) must be the
 * caller's. */
struct sof_cm_requeue_req {
	uint32_t channel;
	uint32_t rsvd;
	struct sof_cm_event ev;
};

#endif
