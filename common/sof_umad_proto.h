/*
 * libibumad's part of the control protocol (sof_proto.h): the daemon
 * plays the kernel's ib_umad and ib_mad for a port's MAD services.
 *
 * Sockets. umad_open_port() opens a connection of its own (one that never
 * says HELLO) and sends SOF_OP_UMAD_OPEN on it; the daemon answers with a
 * socket (SOCK_SEQPACKET) on which it then delivers, one record each,
 * the MADs for the port's agents and the sends that timed out: struct
 * ib_user_mad of <infiniband/umad.h> (ABI 5, with pkey_index) followed
 * by the MAD (a reassembled RMPP message: the first segment, then each
 * further segment's data), length = both together, as the kernel's
 * read() gives them. That socket is the descriptor the program polls
 * (umad_get_fd). The connection carries REGISTER, UNREGISTER and SEND,
 * answered in order; when either closes (the program ends or is killed)
 * the daemon unregisters every agent of the port and drops what they had
 * waiting. UMAD_CA, on any connection, describes the device (the sysfs
 * files that rdma-core's libibumad reads).
 *
 * Agent numbers are the port's own (0 .. SOF_UMAD_MAX_AGENTS-1), as the
 * kernel's. Registering for QP0 (SMPs) asks for the daemon's user or
 * root, as the kernel's umad device files do (-EACCES otherwise).
 */
#ifndef SOF_UMAD_PROTO_H
#define SOF_UMAD_PROTO_H

#include <stdint.h>

#define SOF_UMAD_MAX_AGENTS 32 /* the kernel's IB_UMAD_MAX_AGENTS */
#define SOF_UMAD_MAX_PORTS 2
#define SOF_UMAD_MAX_PKEYS 64
#define SOF_UMAD_NAME_LEN 20   /* UMAD_CA_NAME_LEN */

/* sofib0's issm device: a FIFO the daemon of pid P makes at
 * SOF_UMAD_ISSM_FMT (the first directory it may write), which `softofed
 * run` binds as /dev/infiniband/issmN; IsSM is set while it is held open
 * for reading (daemon/ib_sma.c). */
#define SOF_UMAD_ISSM_DIRS "/run", "/tmp"
#define SOF_UMAD_ISSM_FMT "%s/softofed-issm.%ld"

/* One port as sysfs shows it (ports/N/...). */
struct sof_umad_port_info {
	uint32_t portnum;
	uint32_t base_lid, lmc, sm_lid, sm_sl;
	uint32_t state;	     /* 4: ACTIVE */
	uint32_t phys_state; /* 5: LinkUp */
	uint32_t rate;	     /* Gb/s */
	uint32_t capmask;    /* host order */
	uint32_t npkeys;
	uint64_t gid_prefix, port_guid; /* network order (gids/0) */
	char link_layer[SOF_UMAD_NAME_LEN];
	uint16_t pkeys[SOF_UMAD_MAX_PKEYS];
	uint32_t rsvd;
};

/* UMAD_CA reply. */
struct sof_umad_ca_rep {
	char name[SOF_UMAD_NAME_LEN];
	uint32_t node_type; /* 1: CA */
	uint32_t nports;    /* entries of ports[] used, port numbers 1.. */
	char fw_ver[20];
	char ca_type[40];
	char hw_ver[20];
	uint64_t node_guid, sys_guid; /* network order */
	struct sof_umad_port_info ports[SOF_UMAD_MAX_PORTS];
};

/* UMAD_CA request (optional; none: CA 0): which CA. The daemon's CAs are
 * sof0 (index 0, RoCEv2) and, when it has an InfiniBand port, sofib0
 * (index 1); a CA it does not have is -ENODEV. */
#define SOF_UMAD_CA_ROCE 0
#define SOF_UMAD_CA_IB 1
#define SOF_UMAD_MAX_CAS 2
struct sof_umad_ca_req {
	uint32_t index;
	uint32_t rsvd;
};

/* UMAD_OPEN: reply fds [0] the MAD socket. */
struct sof_umad_open_req {
	uint32_t portnum;
	uint32_t ca; /* the CA's index (sof_umad_ca_req) */
};

/* UMAD_REGISTER (ib_user_mad_reg_req2's fields) -> sof_umad_agent. */
struct sof_umad_reg_req {
	uint32_t qpn; /* 0: SMI, 1: GSI */
	uint8_t mgmt_class;
	uint8_t class_version;
	uint8_t rmpp_version;
	uint8_t rsvd;
	uint32_t flags; /* UMAD_USER_RMPP */
	uint32_t oui;
	uint64_t method_mask[2];
};

/* UMAD_REGISTER reply, UMAD_UNREGISTER request. */
struct sof_umad_agent {
	uint32_t agent_id;
	uint32_t rsvd;
};

/* UMAD_SEND: this, then len bytes of MAD (an RMPP message in one piece);
 * or, for a message longer than a record carries, this alone and fds [0]
 * a file of len bytes (a memfd). addr is struct ib_mad_addr (umad.h) as
 * the program filled it. */
#define SOF_UMAD_ADDR_LEN 44
struct sof_umad_send_req {
	uint32_t agent_id;
	uint32_t timeout_ms;
	uint32_t retries;
	uint32_t len;
	uint8_t addr[SOF_UMAD_ADDR_LEN];
	uint32_t rsvd;
};

#endif
