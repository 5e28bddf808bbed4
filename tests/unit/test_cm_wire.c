/*
 * The CM message formats (cm/cm_wire.c) against the byte positions of IBA
 * vol. 1 chapter 12 (tables 106-120) and Annex A11, and every message
 * through put and get unchanged; and the name tables of the CM's states
 * (cm/cm_state.h), which tracing prints: every state has its own name.
 * Needs no daemon.
 */
#include "harness.h"

#include "cm_state.h"
#include "cm_wire.h"

#include <string.h>

static void fill(uint8_t *p, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

TEST(req_layout)
{
	struct cmw_req m, back;
	uint8_t b[CMW_BODY_LEN];

	memset(&m, 0, sizeof(m));
	m.local_comm_id = 0x11223344;
	m.vendor_id = 0xabcdef;
	m.service_id = cmw_ip_service_id(0x06, 7471);
	m.local_ca_guid = 0x0102030405060708ull;
	m.local_qpn = 0x123456;
	m.responder_resources = 4;
	m.initiator_depth = 2;
	m.remote_cm_response_timeout = 17;
	m.transport_type = CMW_TS_UC;
	m.flow_control = true;
	m.starting_psn = 0xabcdef;
	m.local_cm_response_timeout = 16;
	m.retry_count = 7;
	m.pkey = 0xffff;
	m.mtu = 3;
	m.rnr_retry_count = 6;
	m.max_cm_retries = 5;
	m.srq = true;
	m.local_lid = m.remote_lid = 0xffff;
	fill(m.local_gid, 16, 1);
	fill(m.remote_gid, 16, 100);
	m.flow_label = 0xfedcb;
	m.packet_rate = 3;
	m.traffic_class = 0x20;
	m.hop_limit = 64;
	m.sl = 5;
	m.subnet_local = true;
	m.local_ack_timeout = 15;
	fill(m.private_data, sizeof(m.private_data), 9);
	cmw_req_put(b, &m);
	/* table 106 */
	CHECK_EQ(b[0], 0x11);
	CHECK_EQ(b[3], 0x44);
	CHECK_EQ(b[4], 0);
	CHECK_EQ(b[5], 0xab);
	CHECK_EQ(b[7], 0xef);
	CHECK_EQ(b[8 + 4], 0x01); /* service ID 0x0000000001061d2f */
	CHECK_EQ(b[8 + 5], 0x06);
	CHECK_EQ(b[8 + 6], 0x1d);
	CHECK_EQ(b[8 + 7], 0x2f);
	CHECK_EQ(b[16], 0x01);
	CHECK_EQ(b[32], 0x12);
	CHECK_EQ(b[34], 0x56);
	CHECK_EQ(b[35], 4);
	CHECK_EQ(b[39], 2);
	CHECK_EQ(b[43], (17 << 3) | (1 << 1) | 1);
	CHECK_EQ(b[44], 0xab);
	CHECK_EQ(b[47], (16 << 3) | 7);
	CHECK_EQ(b[48], 0xff);
	CHECK_EQ(b[50], (3 << 4) | 6);
	CHECK_EQ(b[51], (5 << 4) | 8);
	CHECK_EQ(b[56], 1);
	CHECK_EQ(b[72], 100);
	CHECK_EQ(b[88], 0xfe);
	CHECK_EQ(b[89], 0xdc);
	CHECK_EQ(b[90], 0xb0);
	CHECK_EQ(b[91], 3);
	CHECK_EQ(b[92], 0x20);
	CHECK_EQ(b[93], 64);
	CHECK_EQ(b[94], (5 << 4) | 8);
	CHECK_EQ(b[95], 15 << 3);
	CHECK_EQ(b[140], 9);
	cmw_req_get(b, &back);
	CHECK_MEM(&back, &m, sizeof(m));
}

TEST(rep_layout)
{
	struct cmw_rep m, back;
	uint8_t b[CMW_BODY_LEN];

	memset(&m, 0, sizeof(m));
	m.local_comm_id = 1;
	m.remote_comm_id = 2;
	m.local_qkey = 0x01234567;
	m.local_qpn = 0xabcdef;
	m.vendor_id = 0x112233;
	m.starting_psn = 0x445566;
	m.responder_resources = 16;
	m.initiator_depth = 8;
	m.target_ack_delay = 3;
	m.failover_accepted = 1;
	m.flow_control = true;
	m.rnr_retry_count = 7;
	m.srq = true;
	m.local_ca_guid = 0x8877665544332211ull;
	fill(m.private_data, sizeof(m.private_data), 3);
	cmw_rep_put(b, &m);
	/* table 110: the vendor ID's three bytes sit at 15, 19 and 23 */
	CHECK_EQ(b[12], 0xab);
	CHECK_EQ(b[15], 0x11);
	CHECK_EQ(b[19], 0x22);
	CHECK_EQ(b[20], 0x44);
	CHECK_EQ(b[23], 0x33);
	CHECK_EQ(b[24], 16);
	CHECK_EQ(b[26], (3 << 3) | (1 << 1) | 1);
	CHECK_EQ(b[27], (7 << 5) | 0x10);
	CHECK_EQ(b[28], 0x88);
	CHECK_EQ(b[36], 3);
	cmw_rep_get(b, &back);
	CHECK_MEM(&back, &m, sizeof(m));
}

TEST(small_messages)
{
	uint8_t b[CMW_BODY_LEN];
	/* the structs compare whole: initialisers zero their padding here */
	struct cmw_mra mra = {.local_comm_id = 5, .remote_comm_id = 6, .msg_mraed = 1,
			      .service_timeout = 21},
		       mra2;
	struct cmw_rej rej = {.local_comm_id = 7, .remote_comm_id = 8, .msg_rejected = 2,
			      .ari_length = 4, .reason = 28},
		       rej2;
	struct cmw_rtu rtu = {.local_comm_id = 9, .remote_comm_id = 10}, rtu2;
	struct cmw_dreq dreq = {.local_comm_id = 11, .remote_comm_id = 12, .remote_qpn = 0x1234},
			dreq2;
	struct cmw_sidr_req sreq = {.request_id = 13, .pkey = 0xffff, .service_id = 14}, sreq2;
	struct cmw_sidr_rep srep = {.request_id = 15, .status = 1, .vendor_id = 0xa1b2c3,
				    .qpn = 0x777, .service_id = 16, .qkey = 0x01234567},
			    srep2;

	fill(mra.private_data, sizeof(mra.private_data), 1);
	cmw_mra_put(b, &mra);
	CHECK_EQ(b[8], 1 << 6);
	CHECK_EQ(b[9], 21 << 3);
	CHECK_EQ(b[10], 1);
	cmw_mra_get(b, &mra2);
	CHECK_MEM(&mra2, &mra, sizeof(mra));

	fill(rej.ari, sizeof(rej.ari), 2);
	fill(rej.private_data, sizeof(rej.private_data), 3);
	cmw_rej_put(b, &rej);
	CHECK_EQ(b[8], 2 << 6);
	CHECK_EQ(b[9], 4 << 1);
	CHECK_EQ(b[11], 28);
	CHECK_EQ(b[12], 2);
	CHECK_EQ(b[84], 3);
	cmw_rej_get(b, &rej2);
	CHECK_MEM(&rej2, &rej, sizeof(rej));

	fill(rtu.private_data, sizeof(rtu.private_data), 4);
	cmw_rtu_put(b, &rtu);
	CHECK_EQ(b[3], 9);
	CHECK_EQ(b[7], 10);
	CHECK_EQ(b[8], 4);
	cmw_rtu_get(b, &rtu2);
	CHECK_MEM(&rtu2, &rtu, sizeof(rtu));

	fill(dreq.private_data, sizeof(dreq.private_data), 5);
	cmw_dreq_put(b, &dreq);
	CHECK_EQ(b[9], 0x12);
	CHECK_EQ(b[10], 0x34);
	CHECK_EQ(b[12], 5);
	cmw_dreq_get(b, &dreq2);
	CHECK_MEM(&dreq2, &dreq, sizeof(dreq));

	fill(sreq.private_data, sizeof(sreq.private_data), 6);
	cmw_sidr_req_put(b, &sreq);
	CHECK_EQ(b[4], 0xff);
	CHECK_EQ(b[15], 14);
	CHECK_EQ(b[16], 6);
	cmw_sidr_req_get(b, &sreq2);
	CHECK_MEM(&sreq2, &sreq, sizeof(sreq));

	fill(srep.private_data, sizeof(srep.private_data), 7);
	cmw_sidr_rep_put(b, &srep);
	CHECK_EQ(b[4], 1);
	CHECK_EQ(b[6], 0xa1);
	CHECK_EQ(b[7], 0xb2);
	CHECK_EQ(b[10], 0x77);
	CHECK_EQ(b[11], 0xc3);
	CHECK_EQ(b[19], 16);
	CHECK_EQ(b[20], 0x01);
	CHECK_EQ(b[96], 7);
	cmw_sidr_rep_get(b, &srep2);
	CHECK_MEM(&srep2, &srep, sizeof(srep));
}

TEST(ip_header)
{
	struct cmw_ip_hdr h, back;
	uint8_t p[CMW_IP_HDR_LEN];

	memset(&h, 0, sizeof(h)); /* padding too: compared whole below */
	h.ip_version = 4;
	h.src_port = 0x1234;
	h.src[10] = h.src[11] = 0xff;
	h.src[12] = 10, h.src[15] = 1;
	memcpy(h.dst, h.src, 16);
	h.dst[15] = 2;
	cmw_ip_hdr_put(p, &h);
	/* A11.4: version 0, IP version in the high nibble, source port, then
	 * the addresses; an IPv4 address in the last four of its sixteen */
	CHECK_EQ(p[0], 0);
	CHECK_EQ(p[1], 0x40);
	CHECK_EQ(p[2], 0x12);
	CHECK_EQ(p[14], 0); /* not ::ffff: */
	CHECK_EQ(p[16], 10);
	CHECK_EQ(p[19], 1);
	CHECK_EQ(p[35], 2);
	CHECK(cmw_ip_hdr_get(p, &back));
	CHECK_MEM(&back, &h, sizeof(h));
	p[1] = 0x50;
	CHECK(!cmw_ip_hdr_get(p, &back));
	p[1] = 0x40;
	p[0] = 1;
	CHECK(!cmw_ip_hdr_get(p, &back));
	CHECK(cmw_is_ip_service(cmw_ip_service_id(0x3f, 1)));
	CHECK(!cmw_is_ip_service(0x1000000000001ull));
}

TEST(state_names)
{
	for (int i = 0; i < CMA_NR; i++) {
		const char *n = cma_state_name((enum cma_state)i);

		CHECK(n != NULL && n[0] && strcmp(n, "?"));
		for (int j = 0; j < i; j++)
			CHECK(strcmp(n, cma_state_name((enum cma_state)j)));
	}
	for (int i = 0; i < CM_NR; i++) {
		const char *n = cm_state_name((enum cm_state)i);

		CHECK(n != NULL && n[0] && strcmp(n, "?"));
		for (int j = 0; j < i; j++)
			CHECK(strcmp(n, cm_state_name((enum cm_state)j)));
	}
	CHECK(!strcmp(cma_state_name(CMA_NR), "?"));
	CHECK(!strcmp(cm_state_name(CM_NR), "?"));
	CHECK(!strcmp(cm_state_name(CM_MRA_REQ_RCVD), "MRA_REQ_RCVD"));
	CHECK(!strcmp(cma_state_name(CMA_ROUTE_RESOLVED), "ROUTE_RESOLVED"));
}

int main(void)
{
	RUN(req_layout);
	RUN(rep_layout);
	RUN(small_messages);
	RUN(ip_header);
	RUN(state_names);
	return test_summary();
}
