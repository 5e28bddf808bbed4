/*
 * CM messages to and from their bytes (IBA 12.6, 12.11; Annex A11). The
 * offsets in the comments and code are those of the message tables, from
 * the first byte after the MAD header. See cm_wire.h.
 */
#include "cm_wire.h"
#include "sof_bytes.h"

#include <string.h>


/* ---- REQ, table 106 ----------------------------------------------------------- */

void cmw_req_put(uint8_t *b, const struct cmw_req *m)
{
	memset(b, 0, CMW_BODY_LEN);
	sof_put32(b + 0, m->local_comm_id);
	sof_put24(b + 5, m->vendor_id); /* byte 4 reserved */
	sof_put64(b + 8, m->service_id);
	sof_put64(b + 16, m->local_ca_guid);
	sof_put32(b + 28, m->local_qkey); /* 24..27 reserved */
	sof_put24(b + 32, m->local_qpn);
	b[35] = m->responder_resources;
	/* 36..38 local EECN: RD only, 0 */
	b[39] = m->initiator_depth;
	/* 40..42 remote EECN: 0 */
	b[43] = (uint8_t)((m->remote_cm_response_timeout & 0x1f) << 3 |
			  (m->transport_type & 3) << 1 | (m->flow_control ? 1 : 0));
	sof_put24(b + 44, m->starting_psn);
	b[47] = (uint8_t)((m->local_cm_response_timeout & 0x1f) << 3 | (m->retry_count & 7));
	sof_put16(b + 48, m->pkey);
	/* byte 50: MTU 7:4, RDC exists 3 (0), RNR retry count 2:0 */
	b[50] = (uint8_t)((m->mtu & 0xf) << 4 | (m->rnr_retry_count & 7));
	/* byte 51: max CM retries 7:4, SRQ 3, extended transport type 2:0 (0) */
	b[51] = (uint8_t)((m->max_cm_retries & 0xf) << 4 | (m->srq ? 8 : 0));
	sof_put16(b + 52, m->local_lid);
	sof_put16(b + 54, m->remote_lid);
	memcpy(b + 56, m->local_gid, 16);
	memcpy(b + 72, m->remote_gid, 16);
	/* flow label: the top 20 bits of the word at 88; rate: 91 bits 5:0 */
	sof_put32(b + 88, (m->flow_label & 0xfffff) << 12 | (m->packet_rate & 0x3f));
	b[92] = m->traffic_class;
	b[93] = m->hop_limit;
	b[94] = (uint8_t)((m->sl & 0xf) << 4 | (m->subnet_local ? 8 : 0));
	b[95] = (uint8_t)((m->local_ack_timeout & 0x1f) << 3);
	/* 96..139: the alternate path, unused (no APM) */
	memcpy(b + 140, m->private_data, CMW_REQ_PDATA);
}

void cmw_req_get(const uint8_t *b, struct cmw_req *m)
{
	memset(m, 0, sizeof(*m));
	m->local_comm_id = sof_get32(b + 0);
	m->vendor_id = sof_get24(b + 5);
	m->service_id = sof_get64(b + 8);
	m->local_ca_guid = sof_get64(b + 16);
	m->local_qkey = sof_get32(b + 28);
	m->local_qpn = sof_get24(b + 32);
	m->responder_resources = b[35];
	m->initiator_depth = b[39];
	m->remote_cm_response_timeout = b[43] >> 3;
	m->transport_type = (b[43] >> 1) & 3;
	m->flow_control = b[43] & 1;
	m->starting_psn = sof_get24(b + 44);
	m->local_cm_response_timeout = b[47] >> 3;
	m->retry_count = b[47] & 7;
	m->pkey = sof_get16(b + 48);
	m->mtu = b[50] >> 4;
	m->rnr_retry_count = b[50] & 7;
	m->max_cm_retries = b[51] >> 4;
	m->srq = (b[51] & 8) != 0;
	m->local_lid = sof_get16(b + 52);
	m->remote_lid = sof_get16(b + 54);
	memcpy(m->local_gid, b + 56, 16);
	memcpy(m->remote_gid, b + 72, 16);
	m->flow_label = sof_get32(b + 88) >> 12;
	m->packet_rate = b[91] & 0x3f;
	m->traffic_class = b[92];
	m->hop_limit = b[93];
	m->sl = b[94] >> 4;
	m->subnet_local = (b[94] & 8) != 0;
	m->local_ack_timeout = b[95] >> 3;
	memcpy(m->private_data, b + 140, CMW_REQ_PDATA);
}

/* ---- MRA, table 107 ------------------------------------------------------------ */

void cmw_mra_put(uint8_t *b, const struct cmw_mra *m)
{
	memset(b, 0, CMW_BODY_LEN);
	sof_put32(b + 0, m->local_comm_id);
	sof_put32(b + 4, m->remote_comm_id);
	b[8] = (uint8_t)((m->msg_mraed & 3) << 6);
	b[9] = (uint8_t)((m->service_timeout & 0x1f) << 3);
	memcpy(b + 10, m->private_data, CMW_MRA_PDATA);
}

void cmw_mra_get(const uint8_t *b, struct cmw_mra *m)
{
	memset(m, 0, sizeof(*m));
	m->local_comm_id = sof_get32(b + 0);
	m->remote_comm_id = sof_get32(b + 4);
	m->msg_mraed = b[8] >> 6;
	m->service_timeout = b[9] >> 3;
	memcpy(m->private_data, b + 10, CMW_MRA_PDATA);
}

/* ---- REJ, table 108 ------------------------------------------------------------ */

void cmw_rej_put(uint8_t *b, const struct cmw_rej *m)
{
	memset(b, 0, CMW_BODY_LEN);
	sof_put32(b + 0, m->local_comm_id);
	sof_put32(b + 4, m->remote_comm_id);
	b[8] = (uint8_t)((m->msg_rejected & 3) << 6);
	b[9] = (uint8_t)((m->ari_length > CMW_REJ_ARI ? CMW_REJ_ARI : m->ari_length) << 1);
	sof_put16(b + 10, m->reason);
	memcpy(b + 12, m->ari, CMW_REJ_ARI);
	memcpy(b + 84, m->private_data, CMW_REJ_PDATA);
}

void cmw_rej_get(const uint8_t *b, struct cmw_rej *m)
{
	memset(m, 0, sizeof(*m));
	m->local_comm_id = sof_get32(b + 0);
	m->remote_comm_id = sof_get32(b + 4);
	m->msg_rejected = b[8] >> 6;
	m->ari_length = b[9] >> 1;
	m->reason = sof_get16(b + 10);
	memcpy(m->ari, b + 12, CMW_REJ_ARI);
	memcpy(m->private_data, b + 84, CMW_REJ_PDATA);
}

/* ---- REP, table 110 ------------------------------------------------------------ */

void cmw_rep_put(uint8_t *b, const struct cmw_rep *m)
{
	memset(b, 0, CMW_BODY_LEN);
	sof_put32(b + 0, m->local_comm_id);
	sof_put32(b + 4, m->remote_comm_id);
	sof_put32(b + 8, m->local_qkey);
	sof_put24(b + 12, m->local_qpn);
	b[15] = (uint8_t)(m->vendor_id >> 16); /* vendor ID, high byte */
	/* 16..18 local EECN: 0 */
	b[19] = (uint8_t)(m->vendor_id >> 8);
	sof_put24(b + 20, m->starting_psn);
	b[23] = (uint8_t)m->vendor_id;
	b[24] = m->responder_resources;
	b[25] = m->initiator_depth;
	b[26] = (uint8_t)((m->target_ack_delay & 0x1f) << 3 | (m->failover_accepted & 3) << 1 |
			  (m->flow_control ? 1 : 0));
	b[27] = (uint8_t)((m->rnr_retry_count & 7) << 5 | (m->srq ? 0x10 : 0));
	sof_put64(b + 28, m->local_ca_guid);
	memcpy(b + 36, m->private_data, CMW_REP_PDATA);
}

void cmw_rep_get(const uint8_t *b, struct cmw_rep *m)
{
	memset(m, 0, sizeof(*m));
	m->local_comm_id = sof_get32(b + 0);
	m->remote_comm_id = sof_get32(b + 4);
	m->local_qkey = sof_get32(b + 8);
	m->local_qpn = sof_get24(b + 12);
	m->vendor_id = (uint32_t)b[15] << 16 | (uint32_t)b[19] << 8 | b[23];
	m->starting_psn = sof_get24(b + 20);
	m->responder_resources = b[24];
	m->initiator_depth = b[25];
	m->target_ack_delay = b[26] >> 3;
	m->failover_accepted = (b[26] >> 1) & 3;
	m->flow_control = b[26] & 1;
	m->rnr_retry_count = b[27] >> 5;
	m->srq = (b[27] & 0x10) != 0;
	m->local_ca_guid = sof_get64(b + 28);
	memcpy(m->private_data, b + 36, CMW_REP_PDATA);
}

/* ---- RTU (table 111) and DREP (table 113) ---------------------------------------- */

void cmw_rtu_put(uint8_t *b, const struct cmw_rtu *m)
{
	memset(b, 0, CMW_BODY_LEN);
	sof_put32(b + 0, m->local_comm_id);
	sof_put32(b + 4, m->remote_comm_id);
	memcpy(b + 8, m->private_data, CMW_RTU_PDATA);
}

void cmw_rtu_get(const uint8_t *b, struct cmw_rtu *m)
{
	memset(m, 0, sizeof(*m));
	m->local_comm_id = sof_get32(b + 0);
	m->remote_comm_id = sof_get32(b + 4);
	memcpy(m->private_data, b + 8, CMW_RTU_PDATA);
}

/* ---- DREQ, table 112 ----------------------------------------------------------- */

void cmw_dreq_put(uint8_t *b, const struct cmw_dreq *m)
{
	memset(b, 0, CMW_BODY_LEN);
	sof_put32(b + 0, m->local_comm_id);
	sof_put32(b + 4, m->remote_comm_id);
	sof_put24(b + 8, m->remote_qpn);
	memcpy(b + 12, m->private_data, CMW_DREQ_PDATA);
}

void cmw_dreq_get(const uint8_t *b, struct cmw_dreq *m)
{
	memset(m, 0, sizeof(*m));
	m->local_comm_id = sof_get32(b + 0);
	m->remote_comm_id = sof_get32(b + 4);
	m->remote_qpn = sof_get24(b + 8);
	memcpy(m->private_data, b + 12, CMW_DREQ_PDATA);
}

/* ---- SIDR_REQ (table 119), SIDR_REP (table 120) ---------------------------------- */

void cmw_sidr_req_put(uint8_t *b, const struct cmw_sidr_req *m)
{
	memset(b, 0, CMW_BODY_LEN);
	sof_put32(b + 0, m->request_id);
	sof_put16(b + 4, m->pkey);
	sof_put64(b + 8, m->service_id);
	memcpy(b + 16, m->private_data, CMW_SIDR_REQ_PDATA);
}

void cmw_sidr_req_get(const uint8_t *b, struct cmw_sidr_req *m)
{
	memset(m, 0, sizeof(*m));
	m->request_id = sof_get32(b + 0);
	m->pkey = sof_get16(b + 4);
	m->service_id = sof_get64(b + 8);
	memcpy(m->private_data, b + 16, CMW_SIDR_REQ_PDATA);
}

void cmw_sidr_rep_put(uint8_t *b, const struct cmw_sidr_rep *m)
{
	memset(b, 0, CMW_BODY_LEN);
	sof_put32(b + 0, m->request_id);
	b[4] = m->status;
	b[5] = m->add_info_length;
	sof_put16(b + 6, m->vendor_id >> 8); /* vendor ID: 6..7 high, 11 low */
	sof_put24(b + 8, m->qpn);
	b[11] = (uint8_t)m->vendor_id;
	sof_put64(b + 12, m->service_id);
	sof_put32(b + 20, m->qkey);
	/* 24..95 ClassPortInfo of a redirect: unused */
	memcpy(b + 96, m->private_data, CMW_SIDR_REP_PDATA);
}

void cmw_sidr_rep_get(const uint8_t *b, struct cmw_sidr_rep *m)
{
	memset(m, 0, sizeof(*m));
	m->request_id = sof_get32(b + 0);
	m->status = b[4];
	m->add_info_length = b[5];
	m->vendor_id = (uint32_t)sof_get16(b + 6) << 8 | b[11];
	m->qpn = sof_get24(b + 8);
	m->service_id = sof_get64(b + 12);
	m->qkey = sof_get32(b + 20);
	memcpy(m->private_data, b + 96, CMW_SIDR_REP_PDATA);
}

/* ---- Annex A11.4: the IP addressing header of the private data --------------------- */

void cmw_ip_hdr_put(uint8_t *p, const struct cmw_ip_hdr *h)
{
	memset(p, 0, CMW_IP_HDR_LEN);
	p[0] = CMW_IP_HDR_VERSION;
	p[1] = (uint8_t)(h->ip_version << 4);
	sof_put16(p + 2, h->src_port);
	if (h->ip_version == 4) {
		memcpy(p + 4 + 12, h->src + 12, 4);
		memcpy(p + 20 + 12, h->dst + 12, 4);
	} else {
		memcpy(p + 4, h->src, 16);
		memcpy(p + 20, h->dst, 16);
	}
}

bool cmw_ip_hdr_get(const uint8_t *p, struct cmw_ip_hdr *h)
{
	static const uint8_t v4pfx[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	memset(h, 0, sizeof(*h));
	if (p[0] != CMW_IP_HDR_VERSION)
		return false;
	h->ip_version = p[1] >> 4;
	h->src_port = sof_get16(p + 2);
	if (h->ip_version == 4) {
		/* kept as IPv4-mapped, as a RoCEv2 GID holds it */
		memcpy(h->src, v4pfx, 12);
		memcpy(h->src + 12, p + 16, 4);
		memcpy(h->dst, v4pfx, 12);
		memcpy(h->dst + 12, p + 32, 4);
		return true;
	}
	if (h->ip_version != 6)
		return false;
	memcpy(h->src, p + 4, 16);
	memcpy(h->dst, p + 20, 16);
	return true;
}
