/*
 * The wire format of the Communication Manager (IBA vol. 1, chapter 12):
 * the CM messages carried in MADs of management class 0x07, class version
 * 2 (12.6), and the RDMA IP CM service's private-data header (Annex A11).
 *
 * Offsets, widths and bit positions live only here and in cm_wire.c; the
 * CM works on these structs in host order. Each message's private data is
 * kept whole (its length is fixed by the message).
 *
 * Names: cmw_ for everything here.
 */
#ifndef CM_WIRE_H
#define CM_WIRE_H

#include <stdbool.h>
#include <stdint.h>

#define CMW_CLASS_VERSION 2

/* Attribute IDs, IBA 12.6.1 table 104 */
enum cmw_attr {
	CMW_CLASS_PORT_INFO = 0x0001,
	CMW_REQ = 0x0010,
	CMW_MRA = 0x0011,
	CMW_REJ = 0x0012,
	CMW_REP = 0x0013,
	CMW_RTU = 0x0014,
	CMW_DREQ = 0x0015,
	CMW_DREP = 0x0016,
	CMW_SIDR_REQ = 0x0017,
	CMW_SIDR_REP = 0x0018,
	CMW_LAP = 0x0019,
	CMW_APR = 0x001a,
};

/* Private data of each message, IBA 12.6 */
#define CMW_REQ_PDATA 92
#define CMW_MRA_PDATA 222
#define CMW_REJ_PDATA 148
#define CMW_REP_PDATA 196
#define CMW_RTU_PDATA 224
#define CMW_DREQ_PDATA 220
#define CMW_DREP_PDATA 224
#define CMW_SIDR_REQ_PDATA 216
#define CMW_SIDR_REP_PDATA 136
#define CMW_REJ_ARI 72

/* Transport service types of a REQ (12.6.5) */
#define CMW_TS_RC 0
#define CMW_TS_UC 1

/* REJ reasons (12.6.7.2 table 109), those this CM sends */
enum cmw_rej_reason {
	CMW_REJ_NO_QP = 1,
	CMW_REJ_NO_RESOURCES = 3,
	CMW_REJ_TIMEOUT = 4,
	CMW_REJ_UNSUPPORTED_REQ = 5,
	CMW_REJ_INVALID_COMM_ID = 6,
	CMW_REJ_INVALID_SERVICE_ID = 8,
	CMW_REJ_INVALID_TRANSPORT = 9,
	CMW_REJ_STALE_CONN = 10,
	CMW_REJ_INVALID_GID = 12,
	CMW_REJ_INVALID_MTU = 26,
	CMW_REJ_CONSUMER = 28,
	CMW_REJ_DUP_LOCAL_COMM_ID = 30,
	CMW_REJ_VENDOR_OPTION = 35,
};

/* Which message an MRA or REJ answers (12.6.6, 12.6.7) */
enum cmw_msg_ref { CMW_MSG_REQ = 0, CMW_MSG_REP = 1, CMW_MSG_OTHER = 2 };

/* SIDR_REP status (12.11.2 table 121) */
enum cmw_sidr_status {
	CMW_SIDR_OK = 0,
	CMW_SIDR_NO_SERVICE = 1,
	CMW_SIDR_REJECT = 2,
	CMW_SIDR_NO_QP = 3,
	CMW_SIDR_REDIRECT = 4,
	CMW_SIDR_VERSION = 5,
};

/* REQ, 12.6.5 table 106; only the primary path (no alternate: no APM) */
struct cmw_req {
	uint32_t local_comm_id;
	uint32_t vendor_id; /* 24 bits */
	uint64_t service_id;
	uint64_t local_ca_guid;
	uint32_t local_qkey;
	uint32_t local_qpn;
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t remote_cm_response_timeout; /* 5 bits: 4.096 us * 2^x */
	uint8_t transport_type;		    /* CMW_TS_* */
	bool flow_control;
	uint32_t starting_psn;
	uint8_t local_cm_response_timeout;
	uint8_t retry_count; /* 3 bits */
	uint16_t pkey;
	uint8_t mtu; /* enum ibv_mtu, 4 bits */
	uint8_t rnr_retry_count;
	uint8_t max_cm_retries; /* 4 bits */
	bool srq;
	uint16_t local_lid, remote_lid;
	uint8_t local_gid[16];
	uint8_t remote_gid[16];
	uint32_t flow_label; /* 20 bits */
	uint8_t packet_rate; /* 6 bits */
	uint8_t traffic_class;
	uint8_t hop_limit;
	uint8_t sl;
	bool subnet_local;
	uint8_t local_ack_timeout; /* 5 bits */
	uint8_t private_data[CMW_REQ_PDATA];
};

/* MRA, 12.6.6 table 107 */
struct cmw_mra {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint8_t msg_mraed; /* enum cmw_msg_ref */
	uint8_t service_timeout;
	uint8_t private_data[CMW_MRA_PDATA];
};

/* REJ, 12.6.7 table 108 */
struct cmw_rej {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint8_t msg_rejected; /* enum cmw_msg_ref */
	uint8_t ari_length;
	uint16_t reason;
	uint8_t ari[CMW_REJ_ARI];
	uint8_t private_data[CMW_REJ_PDATA];
};

/* REP, 12.6.8 table 110 */
struct cmw_rep {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint32_t local_qkey;
	uint32_t local_qpn;
	uint32_t vendor_id; /* 24 bits, split over three bytes on the wire */
	uint32_t starting_psn;
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t target_ack_delay;
	uint8_t failover_accepted;
	bool flow_control;
	uint8_t rnr_retry_count;
	bool srq;
	uint64_t local_ca_guid;
	uint8_t private_data[CMW_REP_PDATA];
};

/* RTU (12.6.9), DREP (12.6.11): the two comm IDs and private data */
struct cmw_rtu {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint8_t private_data[CMW_RTU_PDATA];
};

/* DREQ, 12.6.10 table 112 */
struct cmw_dreq {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint32_t remote_qpn;
	uint8_t private_data[CMW_DREQ_PDATA];
};

/* SIDR_REQ, 12.11.1 table 119 */
struct cmw_sidr_req {
	uint32_t request_id;
	uint16_t pkey;
	uint64_t service_id;
	uint8_t private_data[CMW_SIDR_REQ_PDATA];
};

/* SIDR_REP, 12.11.2 table 120 */
struct cmw_sidr_rep {
	uint32_t request_id;
	uint8_t status;
	uint8_t add_info_length;
	uint32_t vendor_id;
	uint32_t qpn;
	uint64_t service_id;
	uint32_t qkey;
	uint8_t private_data[CMW_SIDR_REP_PDATA];
};

/* Every message's body is the 232 bytes after the MAD header. Each pair
 * writes into / reads from those bytes (body = mad + 24); parse functions
 * check nothing beyond the layout: the CM validates the values. */
#define CMW_BODY_LEN 232

void cmw_req_put(uint8_t *body, const struct cmw_req *m);
void cmw_req_get(const uint8_t *body, struct cmw_req *m);
void cmw_mra_put(uint8_t *body, const struct cmw_mra *m);
void cmw_mra_get(const uint8_t *body, struct cmw_mra *m);
void cmw_rej_put(uint8_t *body, const struct cmw_rej *m);
void cmw_rej_get(const uint8_t *body, struct cmw_rej *m);
void cmw_rep_put(uint8_t *body, const struct cmw_rep *m);
void cmw_rep_get(const uint8_t *body, struct cmw_rep *m);
/* RTU and DREP share a layout */
void cmw_rtu_put(uint8_t *body, const struct cmw_rtu *m);
void cmw_rtu_get(const uint8_t *body, struct cmw_rtu *m);
void cmw_dreq_put(uint8_t *body, const struct cmw_dreq *m);
void cmw_dreq_get(const uint8_t *body, struct cmw_dreq *m);
void cmw_sidr_req_put(uint8_t *body, const struct cmw_sidr_req *m);
void cmw_sidr_req_get(const uint8_t *body, struct cmw_sidr_req *m);
void cmw_sidr_rep_put(uint8_t *body, const struct cmw_sidr_rep *m);
void cmw_sidr_rep_get(const uint8_t *body, struct cmw_sidr_rep *m);

/* ---- the RDMA IP CM service (Annex A11) ---------------------------------------- */

/* Service IDs: 0x0000000001 | port space (8 bits) | port (16 bits), A11.2.1 */
#define CMW_IP_SID_PREFIX 0x0000000001000000ull
#define CMW_IP_SID_MASK 0xffffffffff000000ull
static inline uint64_t cmw_ip_service_id(uint8_t ps, uint16_t port)
{
	return CMW_IP_SID_PREFIX | (uint64_t)ps << 16 | port;
}
static inline bool cmw_is_ip_service(uint64_t sid)
{
	return (sid & CMW_IP_SID_MASK) == CMW_IP_SID_PREFIX;
}

/* The private-data header of A11.4 (36 bytes): version, IP version, the
 * source port and both addresses (IPv4: in the last four bytes). */
#define CMW_IP_HDR_LEN 36
#define CMW_IP_HDR_VERSION 0x00
struct cmw_ip_hdr {
	uint8_t ip_version; /* 4 or 6 */
	uint16_t src_port;
	uint8_t src[16];
	uint8_t dst[16];
};
void cmw_ip_hdr_put(uint8_t *p, const struct cmw_ip_hdr *h);
/* false when the header is not one we understand (version, IP version) */
bool cmw_ip_hdr_get(const uint8_t *p, struct cmw_ip_hdr *h);

#endif
