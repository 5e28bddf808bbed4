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

/* The other end of a MAD, as RoCEv2 sees it: this host's GID the MAD
 * arrived on / leaves from, the peer's GID and QP, and the GRH fields. */
struct sofd_mad_addr {
	uint8_t sgid[16]; /* ours */
	uint8_t dgid[16]; /* the peer's */
	uint32_t remote_qpn;
	uint32_t remote_qkey;
	uint16_t pkey;
	uint8_t traffic_class;
	uint8_t hop_limit;
	uint32_t flow_label;
};

/* An agent: called with each MAD of its class and version, whole
 * (SOF_MAD_LEN bytes, already copied out of the packet). */
typedef void (*sofd_mad_recv_fn)(const uint8_t *mad, const struct sofd_mad_addr *from);

/* Register fn for a management class and class version; returns the agent
 * number (1..) or -EBUSY / -ENOSPC. */
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

#endif
