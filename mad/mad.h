/*
 * The MAD layer of the device daemon: the General Services Interface, QP1
 * (IBA 13.5), over RoCEv2.
 *
 * Every port has a GSI QP, QP number 1, whose datagrams carry one 256-byte
 * MAD each with Q_Key 0x80010000 (IBA 13.5.1, 13.4.2). The transport hands
 * received datagrams for QP1 to the hook this layer registers with it
 * (tp_recv_hook, at the first agent), which checks the datagram (opcode,
 * P_Key, Q_Key) and passes it to sofd_mad_input(); the layer checks the
 * common MAD header (IBA 13.4.3) and gives the MAD to the agent registered
 * for its management class and class version. Agents send with
 * sofd_mad_send(); a MAD for one of this host's own GIDs never touches the
 * network: it is queued and delivered from the main loop
 * (sofd_mad_loopback_run), so that an agent is never re-entered from
 * inside its own send.
 *
 * Transaction IDs (IBA 13.4.6.4): sofd_mad_new_tid() gives each agent's
 * requests an ID whose upper 32 bits name the agent, so responses find
 * their way back. Today's agent is the connection manager (cm/); the
 * management agents (SMA, PMA, SA client) register the same way.
 *
 * Names: sofd_mad_ (the daemon calls), sof_mad_ (format helpers).
 */
#ifndef SOFD_MAD_H
#define SOFD_MAD_H

#include <stdbool.h>
#include <stdint.h>

#define SOF_MAD_LEN 256
#define SOF_MAD_HDR_LEN 24
#define SOF_GSI_QPN 1u
#define SOF_GSI_QKEY 0x80010000u /* IBA 13.5.1 */
#define SOF_MAD_BASE_VERSION 1

/* Management classes (IBA 13.4.4) and methods (13.4.5). */
#define SOF_MGMT_CLASS_CM 0x07
#define SOF_MAD_METHOD_GET 0x01
#define SOF_MAD_METHOD_SET 0x02
#define SOF_MAD_METHOD_SEND 0x03
#define SOF_MAD_METHOD_RESP 0x80 /* bit set in every response */

/* The common MAD header (IBA 13.4.3), host order. */
struct sof_mad_hdr {
	uint8_t base_version;
	uint8_t mgmt_class;
	uint8_t class_version;
	uint8_t method;
	uint16_t status;
	uint16_t class_specific;
	uint64_t tid;
	uint16_t attr_id;
	uint32_t attr_mod;
};

void sof_mad_hdr_get(const uint8_t *mad, struct sof_mad_hdr *h);
void sof_mad_hdr_put(uint8_t *mad, const struct sof_mad_hdr *h);

/* The other end of a MAD: this host's GID the MAD arrived on / leaves
 * from, the peer's GID and QP, and the GRH fields; on an InfiniBand port
 * also the peer's LID, our LID's path bits, the SL and whether a GRH is
 * there (RoCE: always; the LID fields unused). */
struct sofd_mad_addr {
	uint8_t sgid[16]; /* ours */
	uint8_t dgid[16]; /* the peer's */
	uint32_t remote_qpn;
	uint32_t remote_qkey;
	uint16_t pkey;
	uint8_t traffic_class;
	uint8_t hop_limit;
	uint32_t flow_label;
	uint16_t lid; /* the peer's (IB) */
	uint8_t path_bits;
	uint8_t sl;
	bool no_grh; /* IB only: a LID-routed MAD without GRH */
	bool ib;     /* on the InfiniBand port (sofib0), not RoCEv2 */
};

/* An agent: called with each MAD of its class and version, whole
 * (SOF_MAD_LEN bytes, already copied out of the packet). */
typedef void (*sofd_mad_recv_fn)(const uint8_t *mad, const struct sofd_mad_addr *from);

/* Register fn for a management class and class version, every method;
 * returns the agent number (1..: the upper 32 bits of its TIDs) or
 * -EBUSY / -ENOSPC. The daemon's own agents (the CM) use this. */
int sofd_mad_register(uint8_t mgmt_class, uint8_t class_version, sofd_mad_recv_fn fn);
/* A fresh transaction ID for agent. */
uint64_t sofd_mad_new_tid(int agent);
/* Send one MAD (SOF_MAD_LEN bytes) from QP1 to to. 0 or -errno; a MAD
 * lost on the wire is the sender's retransmission to recover. */
int sofd_mad_send(const struct sofd_mad_addr *to, const uint8_t *mad);
/* A datagram for QP1 from the transport: the payload after the DETH, its
 * source (remote_qpn, remote_qkey as the DETH says). Validated here. */
void sofd_mad_input(const uint8_t *payload, uint32_t len, const struct sofd_mad_addr *from);
/* Deliver the MADs queued for this host; true when any was. */
bool sofd_mad_loopback_run(void);
/* Whether MADs wait in the loopback queue (the main loop must not sleep). */
bool sofd_mad_loopback_pending(void);

/* ---- agents of the MAD services (libibumad's, through the daemon) --------
 *
 * As the kernel's ib_mad: an agent names a QP (0: SMI, 1: GSI), a class
 * and class version, the methods whose requests it takes (method_mask,
 * bit m for method m), for vendor classes 0x30-0x4f an OUI, and an RMPP
 * version (1: this layer segments, reassembles and acknowledges RMPP
 * transfers of the classes that have RMPP, IBA 13.6; 0, or user_rmpp: the
 * segments pass as they are). Requests go to the agent whose method they
 * name; responses (IBA 13.4.5: the R bit, or TrapRepress) to the agent
 * whose TID they carry (upper 32 bits, set on every request it sends),
 * and only when they answer a request still waiting (timeout_ms > 0).
 */
#define SOF_MAD_QP0 0u
#define SOF_MAD_QP1 1u
#define SOF_MAD_MAX_AGENTS 4096u
#define SOF_MAD_METHOD_TRAP_REPRESS 0x07
#define SOF_MAD_METHOD_GET_RESP 0x81
/* MAD status (IBA 13.4.7): the method/attribute combination is not
 * supported (the answer to a Get or Set no agent takes) */
#define SOF_MAD_STATUS_UNSUPPORTED 0x000c
/* The largest message an agent sends or receives in one piece (RMPP): an
 * SA table of 8 MiB of records (the SA's own cap) and its headers. Memory
 * stays bounded: the bytes of all messages being sent, and apart those of
 * all reassemblies, stay within SOF_MAD_BYTES_MAX (beyond: -ENOBUFS for a
 * send, a reassembly dropped). */
#define SOF_MAD_MSG_MAX (8u * 1024u * 1024u + 4096u)
#define SOF_MAD_BYTES_MAX (64u * 1024u * 1024u)

struct sofd_mad_reg {
	uint8_t qpn;
	uint8_t mgmt_class;
	uint8_t class_version;
	uint8_t rmpp_version;
	bool user_rmpp;
	uint32_t oui;		 /* vendor range 2 only, 24 bits */
	uint64_t method_mask[2]; /* bit m of [m / 64]: method m */
};

struct sofd_mad_agent;

struct sofd_mad_agent_ops {
	/* A message for the agent: len bytes (SOF_MAD_LEN, or a reassembled
	 * RMPP message: the first segment whole, then each further
	 * segment's data). */
	void (*recv)(void *ctx, uint32_t agent_id, const uint8_t *msg, uint32_t len,
		     const struct sofd_mad_addr *from);
	/* A send that waited for its response (or an RMPP transfer) ended
	 * without one: status ETIMEDOUT (or another positive errno); hdr is
	 * the MAD header (SOF_MAD_HDR_LEN bytes) of what was sent. */
	void (*send_failed)(void *ctx, uint32_t agent_id, uint64_t cookie, int status,
			    const uint8_t *hdr, const struct sofd_mad_addr *to);
};

/* Register an agent. *id: its number (>= 1, also its TIDs' upper half).
 * 0 or -errno: -EINVAL for a registration the kernel would refuse,
 * -EPROTONOSUPPORT for QP0 on a port without an SMI (RoCE), -EBUSY when
 * another agent takes one of the methods, -ENOSPC beyond the limit. */
int sofd_mad_agent_register(const struct sofd_mad_reg *reg, const struct sofd_mad_agent_ops *ops,
			    void *ctx, uint32_t *id);
/* The agent goes with everything it had waiting. -EINVAL: no such agent
 * of ctx. */
int sofd_mad_agent_unregister(void *ctx, uint32_t id);
/* Whether id is an agent of ctx. */
bool sofd_mad_agent_valid(void *ctx, uint32_t id);
/* Send msg (len bytes) from agent id of ctx to to. A request gets the
 * agent's TID half; timeout_ms > 0: it waits that long for its response,
 * is sent again up to retries times, then reported (send_failed). With
 * RMPP active in an RMPP agent's message, len may exceed SOF_MAD_LEN: it
 * is sent in segments. 0 or -errno (-EINVAL for a malformed message, one
 * of a class the agent's QP does not carry, or a TID already waiting). */
int sofd_mad_agent_send(void *ctx, uint32_t id, const uint8_t *msg, uint32_t len,
			const struct sofd_mad_addr *to, uint32_t timeout_ms, uint32_t retries,
			uint64_t cookie);
/* QP0, the SMI (IBA 14.2), is an InfiniBand port's: the port attaches it
 * with what sends an SMP out (its VL15 and directed-route handling) and
 * hands the SMPs that reach this node to sofd_mad_smi_input, after the
 * SMI's own checks (IBA 14.2.2: hop pointer and count, the paths); until
 * then QP0 agents are refused with -EPROTONOSUPPORT, as on RoCE. */
struct sofd_mad_smi_ops {
	int (*send)(const struct sofd_mad_addr *to, const uint8_t *smp);
	/* A GSI request that reached QP1 of the InfiniBand port, offered to
	 * the port's own agents before libibumad's (the kernel's process_mad:
	 * the HCA's PMA and congestion control agent): > 0 when mad now holds
	 * the response to send back, < 0 when the agent dropped it (a CC_Key
	 * violation: no response, IBA A10.4.1.1), 0 when it is not theirs. */
	int (*gsi_local)(uint8_t *mad, const struct sofd_mad_addr *from);
};
void sofd_mad_smi_attach(const struct sofd_mad_smi_ops *ops);
void sofd_mad_smi_input(const uint8_t *smp, uint32_t len, const struct sofd_mad_addr *from);
/* An SMP the SMI answered on this node (its SM's request to its own SMA,
 * as the kernel's smi does without the wire): delivered to QP0's agents
 * from the main loop, never within the send. 0 or -errno. */
int sofd_mad_smi_loop(const uint8_t *smp, const struct sofd_mad_addr *from);

/* Milliseconds until the next send or RMPP time-out (-1: none). */
int sofd_mad_timeout_ms(void);
/* Run the time-outs that are due. */
void sofd_mad_timers_run(void);
/* Sends waiting for a response or an acknowledgement (STATUS). */
uint32_t sofd_mad_pending(void);

#endif
