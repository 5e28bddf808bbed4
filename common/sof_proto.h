/*
 * The control protocol between the libraries and the device daemon.
 *
 * Transport: a SOCK_SEQPACKET Unix socket in the abstract namespace
 * (SOF_SOCK_NAME), so there is exactly one daemon per network namespace and
 * no file to clean up. Each request is one record: struct sof_msg followed by
 * the op's request struct, file descriptors as SCM_RIGHTS. The reply is one
 * record: struct sof_msg (status 0 or -errno) followed by the op's reply
 * struct and its descriptors. Requests on one connection are answered in
 * order. The daemon identifies the caller by SO_PEERCRED.
 *
 * One connection is one device context: when it closes (the process exited
 * or was killed) the daemon releases everything created through it.
 *
 * Asynchronous events travel on a separate socket handed out by HELLO; each
 * record there is one struct sof_async_msg.
 */
#ifndef SOF_PROTO_H
#define SOF_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define SOF_SOCK_NAME "softofed/dev0" /* abstract: leading NUL added */
#define SOF_PROTO_VERSION 1
#define SOF_MSG_MAX 65536
#define SOF_MAX_FDS 64

#define SOF_MAX_GIDS 16
#define SOF_MAX_MR_RUNS 60

enum sof_op {
	SOF_OP_HELLO = 1,
	SOF_OP_ALLOC_PD,
	SOF_OP_DEALLOC_PD,
	SOF_OP_REG_MR,
	SOF_OP_DEREG_MR,
	SOF_OP_CREATE_CQ,
	SOF_OP_RESIZE_CQ,
	SOF_OP_DESTROY_CQ,
	SOF_OP_CREATE_SRQ,
	SOF_OP_DESTROY_SRQ,
	SOF_OP_CREATE_QP,
	SOF_OP_MODIFY_QP,
	SOF_OP_DESTROY_QP,
	SOF_OP_OPEN_QP,       /* executor: map a destination QP */
	SOF_OP_OPEN_MR,       /* executor: map a memory region by key */
	SOF_OP_ASYNC_NOTIFY,  /* executor: raise an event at an object's owner */
	SOF_OP_STATUS,
	SOF_OP_SHUTDOWN,
	SOF_OP_NETDEVS,       /* the interfaces served (status) */
	SOF_OP_ATTACH_MCAST,  /* sof_mcast_req: a UD QP joins a multicast group */
	SOF_OP_DETACH_MCAST,  /* sof_mcast_req */
	SOF_OP_NET_ENGINE,    /* the caller runs the transport of its RC/UC QPs */
	SOF_OP_NET_FLOW,      /* sof_net_flow_req: may the caller take a peer's flows? */
	SOF_OP_REREG_MR,      /* sof_reg_mr_req with key: change a region, keep its key */
	/* ibv_import_device: on the shared command socket, a record with no
	 * reply naming a nonce; on the importer's own connection, IMPORT with
	 * that nonce (-EAGAIN until the daemon has read the record) */
	SOF_OP_IMPORT_BIND,   /* sof_import_req */
	SOF_OP_IMPORT,        /* sof_import_req -> sof_hello_rep, fds as HELLO */
	SOF_OP_QUERY_PD,      /* sof_pd_req: the PD exists (ibv_import_pd) */
	SOF_OP_QUERY_MR,      /* sof_query_mr_req -> sof_query_mr_rep (ibv_import_mr) */
	SOF_OP_SHARE_MR,      /* sof_reg_mr_req with key and runs: pages of a region in place moved */
	SOF_OP_OPEN_XRCD,     /* sof_open_xrcd_req: an XRC domain, shared by file */
	SOF_OP_CLOSE_XRCD,    /* sof_xrcd_req */
	SOF_OP_OPEN_XRC_QP,   /* sof_open_xrc_qp_req: ibv_open_qp of an XRC TGT QP */
	SOF_OP_ALLOC_MW,      /* sof_alloc_mw_req -> sof_mw_rep */
	SOF_OP_DEALLOC_MW,    /* sof_mw_req */
	SOF_OP_BIND_MW,       /* sof_bind_mw_req -> sof_mw_rep: a bind WQE executed */
	SOF_OP_INVAL_MW,      /* sof_inval_mw_req: LOCAL_INV or SEND_WITH_INV executed */
	SOF_OP_CREATE_FLOW,   /* sof_flow_req -> sof_flow_rep (ibv_create_flow) */
	SOF_OP_DESTROY_FLOW,  /* sof_flow_rep: the flow's handle */
	SOF_OP_RESIZE_SRQ,    /* sof_resize_srq_req, fds [0]: the new segment */
	SOF_OP_IB_STATUS,     /* -> sof_ib_status_rep: the InfiniBand port (daemon/ib.c) */
	SOF_OP_MR_KEYS,       /* sof_mr_keys_req -> sof_mr_keys_rep, fds [0]: the table, once */
	/* the connection manager: sof_cm_proto.h */
	SOF_OP_CM_CHANNEL,
	SOF_OP_CM_CREATE_ID,
	SOF_OP_CM_DESTROY_ID,
	SOF_OP_CM_BIND_ADDR,
	SOF_OP_CM_RESOLVE_ADDR,
	SOF_OP_CM_RESOLVE_ROUTE,
	SOF_OP_CM_QUERY,
	SOF_OP_CM_LISTEN,
	SOF_OP_CM_CONNECT,
	SOF_OP_CM_ACCEPT,
	SOF_OP_CM_REJECT,
	SOF_OP_CM_DISCONNECT,
	SOF_OP_CM_ESTABLISH,
	SOF_OP_CM_INIT_QP_ATTR,
	SOF_OP_CM_MIGRATE_ID,
	SOF_OP_CM_NOTIFY,
	SOF_OP_CM_SET_OPTION,
	SOF_OP_CM_SET_ECE,
	SOF_OP_CM_GET_ECE,
	SOF_OP_CM_JOIN_MCAST,
	SOF_OP_CM_LEAVE_MCAST,
	SOF_OP_CM_REQUEUE, /* the last CM op (cm/cma_ops.c) */
	/* libibumad: sof_umad_proto.h */
	SOF_OP_UMAD_CA,
	SOF_OP_UMAD_OPEN,
	SOF_OP_UMAD_REGISTER,
	SOF_OP_UMAD_UNREGISTER,
	SOF_OP_UMAD_SEND,
	/* after the ranges above, which are numbered in a row */
	SOF_OP_MCAST_LOOP, /* sof_mcast_loop_req: a steered UD QP's datagram to a group */
	SOF_OP_MAX
};

struct sof_msg {
	uint32_t op;      /* enum sof_op */
	uint32_t len;     /* bytes of the whole record */
	int32_t status;   /* reply: 0 or -errno */
	uint32_t rsvd;
};

/* ---- importing a context (ibv_import_device) ---------------------------- */

struct sof_import_req {
	uint8_t nonce[16];
};

struct sof_query_mr_req {
	uint32_t key;   /* ibv_mr.handle: the lkey */
	uint32_t pd;
};

struct sof_query_mr_rep {
	uint32_t key;   /* lkey == rkey */
	uint32_t access;
	uint64_t addr, length, iova;
	uint32_t mine;  /* 1: the region's memory is the asking process's */
	uint32_t pad;
};

/* ---- device identity, returned by HELLO ------------------------------- */

struct sof_gid_entry {
	uint8_t gid[16];
	uint32_t ifindex;
	uint32_t type;    /* enum ibv_gid_type_sysfs style: 1 = RoCEv2 */
};

struct sof_devinfo {
	char name[64];            /* "sof0" */
	uint64_t node_guid;       /* network order */
	uint64_t sys_image_guid;  /* network order */
	uint32_t vendor_id;
	uint32_t vendor_part_id;
	uint32_t hw_ver;
	char fw_ver[64];
	uint32_t active_mtu;      /* enum ibv_mtu */
	uint32_t port_state;      /* enum ibv_port_state */
	uint32_t num_gids;        /* 1 + highest entry in use; those below may
				   * be empty (zero GID): see sof_gid.h */
	uint32_t rsvd;
	struct sof_gid_entry gids[SOF_MAX_GIDS];
};

struct sof_hello_req {
	uint32_t version;
	uint32_t rsvd;
};
/* reply fds: [0] async event socket, [1] object table (read-only memfd of
 * SOF_OBJTAB_MAP_SIZE bytes, the live GID table in its last page) */
struct sof_hello_rep {
	uint32_t version;
	uint32_t ctx_id;
	struct sof_devinfo dev;
};

/* ---- protection domains and memory ------------------------------------ */

struct sof_pd_rep {
	uint32_t pd;
	uint32_t rsvd;
};
struct sof_pd_req {
	uint32_t pd;
	uint32_t rsvd;
};

/* One run of a region: length bytes at offset in the memfd of the same index. */
struct sof_mr_run {
	uint64_t offset;
	uint64_t length;
};

/* fds: one sealed memfd per run. The runs, concatenated, cover the pages of
 * [addr & ~page, addr + length) rounded up to the page. With SOF_MR_INPLACE
 * in access there are no runs (the pages stay where they are) and, the
 * first time a connection registers in place, two fds: the owner's
 * /proc/self/mem and its fence page (struct sof_mem_fence). SHARE_MR
 * gives such a region its runs later (same key, slot and generation). */
#define SOF_MR_INPLACE (1u << 30)
struct sof_reg_mr_req {
	uint32_t pd;
	uint32_t access;          /* enum ibv_access_flags */
	uint64_t iova;
	uint64_t addr;
	uint64_t length;
	uint32_t nruns;           /* REREG_MR: 0 keeps the pages (and addr/length) */
	uint32_t key;             /* REREG_MR: the region to change; REG_MR: 0 */
	struct sof_mr_run runs[SOF_MAX_MR_RUNS];
};
struct sof_reg_mr_rep {
	uint32_t lkey;
	uint32_t rkey;
};
struct sof_dereg_mr_req {
	uint32_t lkey;
	uint32_t rsvd;
};

/* Registration without a round trip (verbs/mr_post.c, daemon/mr_post.c;
 * the table is struct sof_mr_rec in sof_shm.h). MR_KEYS reserves keys for
 * the connection (at most SOF_MR_KEYS_MAX a call) and takes back those the
 * library will not use (drop); its first call brings the connection's
 * region table. */
#define SOF_MR_KEYS_MAX 64u
struct sof_mr_keys_req {
	uint32_t want;          /* keys to reserve, at most SOF_MR_KEYS_MAX */
	uint32_t ndrop;         /* keys of drop[] the library will not use */
	uint32_t drop[SOF_MR_KEYS_MAX];
};
struct sof_mr_keys_rep {
	uint32_t n;
	uint32_t rsvd;
	uint32_t keys[SOF_MR_KEYS_MAX];
};

/* ---- completion queues ------------------------------------------------- */

/* fds: [0] the CQ memfd (SOF_CQ_SEG_SIZE), [1] channel eventfd if has_channel */
struct sof_create_cq_req {
	uint32_t cqe;             /* current size, power of two */
	uint32_t has_channel;
};
struct sof_cq_rep {
	uint32_t cq;
	uint32_t rsvd;
};
struct sof_cq_req {
	uint32_t cq;
	uint32_t cqe;             /* RESIZE_CQ: new size */
};

/* ---- shared receive queues -------------------------------------------- */

/* fds: [0] the SRQ memfd. An XRC SRQ (IBV_SRQT_XRC) names the caller's
 * XRCD handle and CQ (its receive completions go there); a basic SRQ has
 * xrcd 0. */
struct sof_create_srq_req {
	uint32_t pd;
	uint32_t size;            /* ring entries, power of two */
	uint32_t max_sge;
	uint32_t xrcd;            /* 0: a basic SRQ */
	uint32_t cq;              /* XRC only */
	uint32_t rsvd;
};
struct sof_srq_rep {
	uint32_t srq;
	uint32_t srqn;            /* XRC: the SRQ number an XRCETH names (24 bits) */
};
struct sof_srq_req {
	uint32_t srq;
	uint32_t rsvd;
};
/* RESIZE_SRQ (ibv_modify_srq with IBV_SRQ_MAX_WR), fds: [0] the new
 * segment of size entries (max_sge as created). The daemon's engine takes
 * from it from now on and the SRQ's object-table generation changes, so
 * every executor maps it again at its next use; the owner then moves the
 * WQEs still in the old ring over, in order (verbs/srq.c). */
struct sof_resize_srq_req {
	uint32_t srq;
	uint32_t size;            /* ring entries, power of two */
};

/* ---- queue pairs -------------------------------------------------------- */

/* fds: [0] the QP memfd, [1] its network send queue memfd
 * (SOF_NSQ_SEG_LEN(sq_size, SOF_NWQE_STRIDE(sq_max_sge, sq_max_inline)));
 * reply fds: [0] the connection's doorbell eventfd, written by the owner
 * after posting to a network send queue */
struct sof_create_qp_req {
	uint32_t pd;
	uint32_t qp_type;         /* enum ibv_qp_type */
	uint32_t send_cq;
	uint32_t recv_cq;
	uint32_t srq;             /* 0 = none */
	uint32_t rq_size;         /* ring entries, power of two; 0 with SRQ */
	uint32_t rq_max_sge;
	uint32_t sq_sig_all;
	uint32_t sq_size;         /* network send ring entries, power of two */
	uint32_t sq_max_sge;
	uint32_t sq_max_inline;
	uint32_t xrcd;            /* IBV_QPT_XRC_RECV: the XRCD handle (pd, CQs 0) */
};
struct sof_create_qp_rep {
	uint32_t qpn;
	uint32_t slot;
	uint64_t gen;
};
/* The owner has validated the transition; the daemon records what it needs
 * for peer lookup and cleanup, and the network transport what it needs to
 * reach a peer on another host. Every field is the QP's value after the
 * modify; attr_mask says which ones this modify set. */
struct sof_modify_qp_req {
	uint32_t qpn;
	uint32_t state;           /* enum ibv_qp_state after the modify */
	uint32_t dest_qpn;
	uint32_t qkey;
	uint32_t attr_mask;       /* enum ibv_qp_attr_mask */
	uint32_t access;          /* qp_access_flags */
	uint8_t dgid[16];         /* primary path (RC/UC) */
	uint32_t flow_label;
	uint8_t sgid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint8_t path_mtu;         /* enum ibv_mtu */
	uint32_t sq_psn;
	uint32_t rq_psn;
	uint8_t timeout;          /* local ACK timeout: 4.096 us * 2^timeout */
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t min_rnr_timer;
	uint8_t max_rd_atomic;
	uint8_t max_dest_rd_atomic;
	uint16_t pkey_index;
	uint32_t engine;          /* 1: the caller would run its transport (NET_ENGINE) */
	uint32_t rate_limit;      /* kbit/s the requester may send, 0: no limit */
	/* a QP of sofib0: the path leaves by the InfiniBand port (link 1),
	 * to dlid, with the LRH's SL and the SLID's path bits; a GRH only
	 * when is_global (then dgid is the peer's GID, else ignored) */
	uint8_t link;
	uint8_t sl;
	uint8_t path_bits;
	uint8_t is_global;
	uint16_t dlid;
	uint16_t rsvd2;
};
struct sof_modify_qp_rep {
	uint32_t net;             /* 1: sends go to the network send ring */
	uint32_t steered;         /* 1: its transport runs in the caller */
};
/* NET_ENGINE (no request payload): the caller runs the RoCEv2 transport
 * of its RC and UC QPs itself (transport/README.md, "The engine in the
 * program"). Only for a process of the daemon's own user. The daemon
 * answers with the caller's steering slot and, as descriptors, the
 * receive sockets on port 4791 of that slot: IPv4 first when has4, then
 * IPv6 when has6, then when has_ib the slot's member of the InfiniBand
 * link socket's group (daemon/steer.c), then a memfd of struct
 * sof_tp_counters (below) to count into. A MODIFY_QP with engine set then asks the daemon to steer the
 * QP's packets to those sockets and leave its transport to the caller
 * (sof_modify_qp_rep.steered); while it steers, the daemon runs none of
 * it. A second call answers the same slot. A last descriptor, an eventfd,
 * is written when the daemon takes the slot's flows back (NET_FLOW). */
struct sof_net_engine_rep {
	uint32_t slot;
	uint32_t has4, has6;
	uint32_t has_ib; /* a member of the InfiniBand link's group (after fd6) */
};
struct sof_qp_req {
	uint32_t qpn;
	uint32_t rsvd;
};
/* DESTROY_QP. A QP of a steering slot hands over what its engine knew
 * (linger 1), so that the daemon acknowledges a request the QP had
 * received and the peer repeats after the process is gone (the lingering
 * of transport/responder.c). A shorter request (struct sof_qp_req) is one
 * without. */
struct sof_linger {
	uint32_t dqpn, epsn, msn;
	uint32_t flow_label;
	uint8_t sgid[16], dgid[16];
	uint8_t tclass, hop_limit;
	uint16_t rsvd;
};
struct sof_destroy_qp_req {
	uint32_t qpn;
	uint32_t linger;
	struct sof_linger l;
};

/* ---- XRC (IBA 9.2.x XRC, 11.2.x XRC domains) ------------------------------ */

/* OPEN_XRCD (ibv_open_xrcd): fds [0] the file when has_file, none for a
 * domain of the caller alone. A file names one domain, keyed by the
 * file's device and inode: the first open with O_CREAT makes it, later
 * opens join it, O_EXCL with an existing one and a missing one without
 * O_CREAT are -EINVAL (as the kernel's uverbs). Every open is a handle
 * of its own; the domain lives while a handle, SRQ or TGT QP holds it. */
struct sof_open_xrcd_req {
	uint32_t oflags;
	uint32_t has_file;
};
struct sof_xrcd_rep {
	uint32_t xrcd;
	uint32_t rsvd;
};
/* CLOSE_XRCD: -EBUSY while SRQs or TGT QPs made or opened through this
 * handle exist (uverbs' usecnt of the handle). */
struct sof_xrcd_req {
	uint32_t xrcd;
	uint32_t rsvd;
};
/* OPEN_XRC_QP (ibv_open_qp): a handle of this context on the XRC TGT QP
 * qpn of the domain of xrcd. Reply: struct sof_create_qp_rep and fds [0]
 * the QP memfd. The TGT QP lives while its creator or an opener holds it;
 * DESTROY_QP of a handle drops that handle. */
struct sof_open_xrc_qp_req {
	uint32_t qpn;
	uint32_t xrcd;
};

/* ---- executor look-ups ---------------------------------------------------- */

/* OPEN_QP: the QP qpn (a struct sof_qp_req is one with the rest 0). An
 * XRC TGT QP is answered only for the XRC SRQ number of the request's
 * XRCETH, xrc_srqn: that SRQ, its PD and its CQ as the QP's. One that
 * names no XRC SRQ of the QP's domain is -EINVAL, the responder's invalid
 * request: when src_qpn is a QP of the caller's and the TGT QP's peer, the
 * TGT QP goes to ERROR too (IBV_EVENT_QP_REQ_ERR at its owner), as it does
 * when the request comes over the wire. */
struct sof_open_qp_req {
	uint32_t qpn;
	uint32_t xrc_srqn;
	uint32_t src_qpn;
	uint32_t rsvd;
};
/* fds: [0] QP memfd, [1] recv CQ memfd, [2] SRQ memfd if has_srq,
 *      then the recv CQ's channel eventfd if cq_has_channel. */
struct sof_open_qp_rep {
	uint32_t qpn;
	uint32_t qp_type;
	uint32_t pd;
	uint32_t owner_ctx;
	uint32_t rq_size;
	uint32_t rq_max_sge;
	uint32_t has_srq;
	uint32_t srq;
	uint32_t srq_size;
	uint32_t srq_max_sge;
	uint32_t srq_slot;
	uint32_t recv_cq;
	uint32_t cq_has_channel;
	uint32_t slot;
	uint64_t gen;
	uint64_t srq_gen;
};

enum sof_mr_use {
	SOF_MR_REMOTE = 1, /* rkey presented by a peer of QP qpn */
	SOF_MR_LOCAL = 2,  /* lkey in a receive WQE of QP qpn (or its SRQ) */
	/* XRC (qpn is then the XRC SRQ number of the XRCETH): an XRC TGT QP
	 * has no PD, the SRQ's PD is checked (IBA 9.2.x XRC) */
	SOF_MR_XRC_REMOTE = 3, /* rkey presented through the XRC SRQ qpn */
	SOF_MR_XRC_LOCAL = 4,  /* lkey in a receive WQE of the XRC SRQ qpn */
};
struct sof_open_mr_req {
	uint32_t key;
	uint32_t qpn;             /* the QP on whose behalf memory is accessed */
	uint32_t use;             /* enum sof_mr_use */
	uint32_t access;          /* the access needed (IBV_ACCESS_*) */
};
/* fds: one per run; read-only descriptors when the region grants no write.
 * A region in place without runs: nruns 0, runs[0] = {addr, length}, and
 * fds [0] the owner's /proc/<pid>/mem, [1] its fence page. */
struct sof_open_mr_rep {
	uint64_t iova;
	uint64_t length;
	uint64_t page_off;        /* addr - start of its first page */
	uint32_t access;
	uint32_t pd;
	uint32_t slot;
	uint32_t nruns;
	uint64_t gen;
	uint64_t win_off;         /* a window: its first byte's offset in the region */
	struct sof_mr_run runs[SOF_MAX_MR_RUNS];
};

/* ---- memory windows (ibv_alloc_mw(3), ibv_bind_mw(3), IBA 10.6.7) ------ */

struct sof_alloc_mw_req {
	uint32_t pd;
	uint32_t type;            /* IBV_MW_TYPE_1 or IBV_MW_TYPE_2 */
};
struct sof_mw_req {
	uint32_t handle;
	uint32_t rsvd;
};
struct sof_bind_mw_req {
	uint32_t handle;
	uint32_t qpn;             /* the QP whose send queue executes the bind */
	uint32_t rkey;            /* type 2: the new rkey (ibv_inc_rkey) */
	uint32_t lkey;            /* the region; length 0: unbind (type 1) */
	uint64_t addr;
	uint64_t length;
	uint32_t access;          /* mw_access_flags */
	uint32_t rsvd;
};
struct sof_mw_rep {
	uint32_t handle;
	uint32_t rkey;
	uint32_t slot;            /* the window's generation (changes when it */
	uint32_t rsvd;            /* is bound, invalidated or freed) */
	uint64_t gen;
};
struct sof_inval_mw_req {
	uint32_t qpn;             /* the QP that executes it */
	uint32_t rkey;
	uint32_t remote;          /* SEND_WITH_INV: type 2 windows only */
	uint32_t rsvd;
};

enum sof_notify_kind {
	SOF_NOTIFY_SRQ_LIMIT = 1,  /* handle = srq */
	SOF_NOTIFY_CQ_ERR = 2,     /* handle = cq */
	SOF_NOTIFY_QP_FATAL = 3,   /* handle = qpn */
	SOF_NOTIFY_QP_REQ_ERR = 4, /* handle = qpn */
	SOF_NOTIFY_QP_ACCESS_ERR = 5, /* handle = qpn */
	SOF_NOTIFY_QP_LAST_WQE = 6,   /* handle = qpn */
};
struct sof_notify_req {
	uint32_t kind;
	uint32_t handle;
};

/* ---- multicast ------------------------------------------------------------ */

/* ATTACH_MCAST / DETACH_MCAST (ibv_attach_mcast): QP qpn, a UD QP of the
 * caller's context, joins or leaves the group of gid (a multicast GID:
 * sof_gid_is_mcast). lid is ignored, as on every RoCE device. Attaching
 * twice is no error; detaching a group the QP is not attached to is
 * -EINVAL, and DESTROY_QP is -EBUSY while the QP is attached anywhere (as
 * the kernel's uverbs; a closing connection detaches its QPs). Beyond the
 * limits below ATTACH_MCAST fails with -ENOMEM. */
struct sof_mcast_req {
	uint32_t qpn;
	uint16_t lid;
	uint16_t rsvd;
	uint8_t gid[16];
};

/* The destination QPN of every datagram to a multicast group. */
#define SOF_MCAST_QPN 0xffffffu

/* MCAST_LOOP: UD QP qpn of the caller, whose transport runs in the
 * caller (steered, NET_ENGINE), sent a datagram to the group mgid from
 * its GID sgid; it left for the network, which does not bring it back,
 * and the daemon delivers it to this host's QPs attached to the group
 * (every one, the sender's own too when attached), as it does with a
 * datagram its own engine sends (transport/mcast.c). The daemon takes
 * the source QPN, the P_Key and the QP's state from its own record of
 * qpn, and checks the rest: the QP is the caller's, UD, steered and in
 * RTS or SQD; sgid is one of the host's GIDs, of mgid's family; mgid is
 * a multicast GID; len bytes follow the fixed part exactly, at most the
 * port's MTU; a Q_Key with its high bit set is the QP's own (IBA
 * 10.2.5: the library put the QP's there). 0 once the attached QPs were offered it
 * (each takes it or not as any UD receive); -ENOENT, -EINVAL, -EPERM. */
#define SOF_MCAST_LOOP_MAX 4096u
#define SOF_MCAST_LOOP_IMM 1u /* SEND with immediate: imm_be is the data */
#define SOF_MCAST_LOOP_SE 2u  /* the solicited event bit */
struct sof_mcast_loop_req {
	uint32_t qpn;
	uint32_t qkey;
	uint32_t imm_be;
	uint16_t flags; /* SOF_MCAST_LOOP_* */
	uint16_t len;
	uint8_t sgid[16];
	uint8_t mgid[16];
	uint8_t data[SOF_MCAST_LOOP_MAX]; /* len of them are sent */
};
#define SOF_MCAST_LOOP_HDR offsetof(struct sof_mcast_loop_req, data)
/* Groups with a QP attached, QPs per group, attachments in all (the
 * device attributes max_mcast_grp, max_mcast_qp_attach and
 * max_total_mcast_qp_attach). */
#define SOF_MAX_MCAST_GRP 1024u
#define SOF_MAX_MCAST_QP_ATTACH 256u
#define SOF_MAX_TOTAL_MCAST_QP_ATTACH 65536u

/* ---- flow steering (raw packet QPs) ----------------------------------------- */

/* CREATE_FLOW (ibv_create_flow): a rule on the Ethernet port whose matching
 * frames are copied, whole, into the receive queue of qpn, a RAW_PACKET QP
 * of the caller's context (-EINVAL for any other QP). The library turns the
 * verbs specs into one rule: each present layer (SOF_FLOW_*) matches where
 * (frame field & mask) == (value & mask), fields in network byte order.
 * type is enum ibv_flow_attr_type; ALL_DEFAULT and SNIFFER match every
 * frame, MC_DEFAULT every multicast frame. DESTROY_QP is -EBUSY while the
 * QP has flows (a closing connection's go with its QPs). */
enum {
	SOF_FLOW_ETH = 1 << 0,
	SOF_FLOW_IPV4 = 1 << 1,
	SOF_FLOW_IPV6 = 1 << 2,
	SOF_FLOW_TCP = 1 << 3,
	SOF_FLOW_UDP = 1 << 4,
};

struct sof_flow_rule {
	uint32_t type;
	uint32_t layers; /* SOF_FLOW_* */
	uint16_t priority;
	uint16_t rsvd;
	uint8_t dmac[6], dmac_m[6], smac[6], smac_m[6];
	uint16_t ether_type, ether_type_m, vlan, vlan_m;
	uint32_t src4, src4_m, dst4, dst4_m;
	uint8_t proto4, proto4_m, tos4, tos4_m;
	uint8_t src6[16], src6_m[16], dst6[16], dst6_m[16];
	uint16_t sport, sport_m, dport, dport_m;
};

struct sof_flow_req {
	uint32_t qpn;
	uint32_t rsvd;
	struct sof_flow_rule rule;
};

/* The answer to CREATE_FLOW and the request of DESTROY_FLOW. */
struct sof_flow_rep {
	uint32_t handle;
	uint32_t rsvd;
};

/* Flows a connection may hold. */
#define SOF_MAX_FLOWS 256u

/* ---- status --------------------------------------------------------------- */

/* Port counters of the network transport, shown by `softofed status` as
 * "counters: NAME VALUE ..." and "drops: REASON VALUE ..." in this order
 * (scripts parse those lines). The first drop reasons are those of
 * enum roce_drop (transport/roce_wire.h), in the same order. */
#define SOF_COUNTERS(X)                                                                  \
	X(rx_packets) X(rx_bytes) X(tx_packets) X(tx_bytes) X(retransmits) X(nak_sent)  \
	X(nak_rcvd) X(rnr_nak_sent) X(rnr_nak_rcvd) X(seq_err) X(timeouts) X(probes)     \
	X(key_violations) X(mad_rx) X(mad_tx) X(dup_req) X(sacks) X(sack_resends)     \
	X(sack_lies) X(takeover) X(takeover_kept)
#define SOF_DROPS(X)                                                                     \
	X(short) X(version) X(opcode) X(payload) X(icrc) X(qpn) X(qp_state) X(qp_type)   \
	X(pkey) X(qkey) X(src_addr) X(psn) X(mad) X(takeover)

#define SOF_ENUM_CNT(n) SOF_CNT_##n,
#define SOF_ENUM_DROP(n) SOF_DROP_##n,
enum sof_counter { SOF_COUNTERS(SOF_ENUM_CNT) SOF_CNT_NR };
/* SOF_DROP_short == ROCE_DROP_SHORT - 1, and so on for the wire's reasons */
enum sof_dropctr { SOF_DROPS(SOF_ENUM_DROP) SOF_DROP_NR };
#undef SOF_ENUM_CNT
#undef SOF_ENUM_DROP

/* The transport's counters of a steering slot (NET_ENGINE): a page the
 * slot's process counts into and the daemon adds to its own in STATUS. */
#define SOF_TP_IB_WORDS 32
#define SOF_TP_FLOW_FDS 8
/* packets a slot's page keeps for its engine, and the largest: a READ
 * response's BTH, AETH, 4096 bytes of payload and ICRC, rounded up */
#define SOF_TP_KEPT 32u
#define SOF_TP_KEPT_MAX 4160u
struct sof_tp_counters {
	uint64_t counters[SOF_CNT_NR];
	uint64_t drops[SOF_DROP_NR];
	/* the daemon adds one when it takes the slot's flows back (NET_FLOW) */
	uint64_t flows_revoked; /* __atomic_* */
	/* the InfiniBand port's counters (transport/tp_ib.h's struct
	 * tp_ib_counters) of the slot's QPs on it */
	uint64_t ib[SOF_TP_IB_WORDS];
	/* the engine in the program, for the daemon's takeover of its
	 * responder (daemon/steer.c): beat counts its reads of the sockets;
	 * flow_fd its flow sockets' descriptors plus one (0: none) */
	uint64_t beat;				/* __atomic_* */
	int32_t flow_fd[SOF_TP_FLOW_FDS];	/* __atomic_* */
	/* what came for the program's own requests while the daemon ran
	 * its responders (the ACKs and responses, transport/takeover.c):
	 * kept here by the daemon (from kept_tail), taken in by the engine
	 * (from kept_head) before it reads its sockets again (verbs/
	 * tp_slot.c), each packet as it came: the UDP payload, ICRC
	 * included, and its addresses (the ICRC covers them). A full ring
	 * keeps no more (what is not kept is dropped, as on a wire). */
	uint32_t kept_head __attribute__((aligned(64))); /* __atomic_*: the engine */
	uint32_t kept_tail __attribute__((aligned(64))); /* __atomic_*: the daemon */
	struct sof_tp_kept {
		uint32_t len; /* bytes of data, at most SOF_TP_KEPT_MAX */
		uint16_t sport, dport;
		uint8_t src[16], dst[16];
		uint8_t data[SOF_TP_KEPT_MAX];
	} kept[SOF_TP_KEPT];
};

/* NET_FLOW: the caller (a process with a steering slot) would receive
 * the datagrams of some flows from peer (an address and a UDP source port
 * of it) on sockets connected to them (verbs/tp_host.c, "flow sockets").
 * Such a socket takes every datagram of its flow, so the daemon answers 0
 * only while no other process's QP, nor one that the daemon runs, is
 * connected (RTR and on) to peer; it then remembers the claim, and when
 * such a QP comes later it takes the slot's flows back before it answers
 * that QP's MODIFY_QP: flows_revoked above, and the slot's eventfd.
 * -EBUSY otherwise, -EPERM without a slot. */
struct sof_net_flow_req {
	uint8_t peer[16];
};

struct sof_status_rep {
	uint32_t pid;
	uint32_t contexts;
	uint32_t pds;
	uint32_t mrs;
	uint32_t cqs;
	uint32_t srqs;
	uint32_t qps;
	uint32_t mcast_groups;    /* groups with at least one QP attached */
	uint32_t cm_channels;     /* rdma_cm event channels */
	uint32_t cm_ids;          /* rdma_cm ids */
	uint32_t cm_listeners;    /* of them, listening (rdma_listen) */
	uint32_t cm_timewait;     /* connections in TIMEWAIT (IBA 12.9.7) */
	uint32_t mads;            /* MADs waiting for a response or sending */
	uint64_t uptime_ms;
	struct sof_devinfo dev;
	uint64_t counters[SOF_CNT_NR];
	uint64_t drops[SOF_DROP_NR];
	uint32_t umad_ports;      /* libibumad's open ports (umad_open_port) */
	uint32_t umad_agents;     /* their agents (umad_register) */
};

/* ---- the InfiniBand port (daemon/ib.c, transport/tp_ib.h) ----------------- */

/* The second device, sofib0: a daemon started on an InfiniBand link
 * (softofedd --ib-fabric) has it. Its port's attributes as PortInfo and
 * NodeInfo give them (IBA 14.2.5), GUIDs in host order; the daemon
 * publishes them live in the GID page (sof_gid.h) and answers them with
 * the counters in IB_STATUS. */
#define SOF_IB_DEV_NAME "sofib0"
#define SOF_IB_PKEYS 64 /* two P_KeyTable blocks (NodeInfo:PartitionCap) */
struct sof_ib_port {
	uint32_t present;         /* 1: the daemon has an InfiniBand port */
	uint8_t state;            /* enum ibv_port_state */
	uint8_t phys_state;       /* PortPhysicalState: 2 Polling, 3 Disabled, 5 LinkUp */
	uint8_t port_num;         /* its number on its node (1 unless ASSIGN says) */
	uint8_t lmc;
	uint16_t lid, sm_lid;
	uint8_t sm_sl;
	uint8_t active_mtu;       /* enum ibv_mtu */
	uint8_t vl_cap;
	uint8_t rsvd;
	uint64_t node_guid, port_guid, subnet_prefix;
	uint16_t pkeys[SOF_IB_PKEYS];
	char node_name[68];       /* in the topology (--ib-node) */
	char peer_name[68];       /* the far end's, from its HELLO */
	/* for the programs that run their QPs on the port (transport/iblink.c,
	 * tp_ib_attach): SL2VLMappingTable, and the far end's address */
	uint8_t sl2vl[16];
	uint32_t peer_len;        /* of a struct sockaddr_in or sockaddr_in6 */
	uint8_t peer[28];
	char direct[68];          /* the fabric's direct-path segment (transport/ibdirect.c), "": none */
};

/* IB_STATUS counters, shown by `softofed status` as "ib_counters: NAME
 * VALUE ..." in this order: PortCounters (IBA 16.1.3.5), what the port
 * dropped and why (transport/ib_wire.h's reasons from short on), SMPs the
 * SMA took and answered, the port's traps (first sends) and those the SM
 * repressed, PerfMgt MADs its PMA answered (daemon/ib_sma.c), of the
 * packets those the programs' engines moved, the UDP datagrams the
 * port (daemon and programs) handed to the kernel for them (a GSO run of
 * packets is one: xmit_pkts / xmit_sends is the packets a system call),
 * and datagrams from a host on no direct route of the fabric's that ends
 * here. */
#define SOF_IB_COUNTERS(X)                                                                 \
	X(rcv_pkts) X(xmit_pkts) X(rcv_data) X(xmit_data) X(rcv_errors) X(xmit_discards)   \
	X(vl15_dropped) X(link_downed) X(pkey_violations) X(dlid_drops) X(state_drops)     \
	X(link_msgs) X(link_bad) X(drop_short) X(drop_lver) X(drop_pktlen) X(drop_vcrc)    \
	X(drop_lnh) X(drop_grh) X(drop_icrc) X(smp_rx) X(smp_tx) X(traps) X(traps_repressed)  \
	X(pma_rx) X(eng_rcv_pkts) X(eng_xmit_pkts) X(xmit_sends) X(direct_bad)
#define SOF_ENUM_IBCNT(n) SOF_IBCNT_##n,
enum sof_ib_counter { SOF_IB_COUNTERS(SOF_ENUM_IBCNT) SOF_IBCNT_NR };
#undef SOF_ENUM_IBCNT

struct sof_ib_status_rep {
	struct sof_ib_port port;
	uint64_t counters[SOF_IBCNT_NR];
};

/* ---- asynchronous events ------------------------------------------------ */

struct sof_async_msg {
	uint32_t event_type;      /* enum ibv_event_type */
	uint32_t handle;          /* qpn, cq or srq handle; port number */
};
/* in a port event's handle: the port is sofib0's (the InfiniBand device),
 * not sof0's; only contexts of that device report it */
#define SOF_ASYNC_PORT_IB 0x100u

/* ---- network interfaces ------------------------------------------------- */

#define SOF_MAX_NETDEVS 32

/* NETDEVS reply: the interfaces whose addresses make the GID table. All
 * (no -i): those that have one now; else the ones named, existing or not. */
struct sof_netdev {
	uint32_t ifindex;         /* 0: named but absent now */
	uint32_t rsvd;
	char name[16];            /* IFNAMSIZ, NUL-terminated */
};
struct sof_netdevs_rep {
	uint32_t all;             /* 1: every interface with an address */
	uint32_t n;
	struct sof_netdev dev[SOF_MAX_NETDEVS];
};

#endif
