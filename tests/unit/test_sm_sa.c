/*
 * The SM's SA (sm/sm_sa.h) on a hand-built subnet (tests/unit/sa_fabric.h:
 * three hosts with LMC 1, two switches, their forwarding tables), no
 * fabric: every record type by Get and GetTable with the counts and the
 * fields the model gives, the status codes (no records, too many,
 * insufficient components, invalid GID, a malformed request echoed with
 * its TID, RMPP control packets dropped), PathRecords walked through the
 * LFTs (LMC paths in order, NumbPath, MTU selectors, a broken table and a
 * loop give no path), MultiPathRecord, ServiceRecord leases, multicast
 * join/leave with the SM told, InformInfo subscriptions and the Reports
 * of traps 64/65/66/67, a GetTable larger than one MAD, and one beyond
 * the SA's bound on an answer (ERR_NO_RESOURCES).
 */
#include "harness.h"

#include "sa_fabric.h"
#include "sm_sa.h"

#include <errno.h>
#include <stdlib.h>

static struct saf F;
static struct sm_sa *SA;
static uint8_t *R; /* the last response */
static long RLEN;
static uint64_t NOW = 1000000;

/* what the SA sent and told */
static struct {
	unsigned sends, mcast_changes;
	struct sm_sa_addr to;
	uint8_t mad[256];
	uint16_t last_mlid;
} T;

static int t_send(void *ctx, const struct sm_sa_addr *to, const uint8_t *mad, size_t len,
		  unsigned timeout_ms, unsigned retries)
{
	(void)ctx;
	if (len != 256 || !timeout_ms || !retries)
		return -EINVAL;
	T.sends++;
	T.to = *to;
	memcpy(T.mad, mad, 256);
	return 0;
}

static void t_mcast(void *ctx, uint16_t mlid)
{
	(void)ctx;
	T.mcast_changes++;
	T.last_mlid = mlid;
}

static const struct sm_sa_ops ops = {.send = t_send, .mcast_changed = t_mcast};

static void setup(void)
{
	CHECK_EQ(saf_build(&F), 0);
	SA = sm_sa_new(&F.sn, &ops, NULL);
	CHECK(SA);
	memset(&T, 0, sizeof(T));
}

static void teardown(void)
{
	free(R);
	R = NULL;
	sm_sa_free(SA);
	SA = NULL;
	saf_free(&F);
}

/* send a request from LID `from`; returns the response status */
static uint16_t ask_from(uint16_t from, uint8_t *mad, size_t len)
{
	struct sm_sa_addr a = {.lid = from, .qpn = 1, .qkey = 0x80010000u};

	free(R);
	R = NULL;
	RLEN = sm_sa_process(SA, &a, mad, len, NOW, &R);
	CHECK(RLEN >= 256 || (RLEN >= SOF_SA_HDR_LEN && R && (R[3] & 0x7f) != SOF_SA_GET));
	CHECK_EQ(sof_get64(R + 8), sof_get64(mad + 8));
	return sof_get16(R + 4);
}

static uint16_t ask(uint8_t *mad) { return ask_from(6, mad, 256); }

/* records in the last table response */
static unsigned nrec(void)
{
	unsigned stride = sof_get16(R + SOF_SA_OFF_ATTR_OFFSET) * 8u;

	CHECK(stride);
	CHECK_EQ((RLEN - SOF_SA_HDR_LEN) % stride, 0);
	return (unsigned)((RLEN - SOF_SA_HDR_LEN) / stride);
}

static const uint8_t *rec_at(unsigned i)
{
	return R + SOF_SA_OFF_DATA + i * sof_get16(R + SOF_SA_OFF_ATTR_OFFSET) * 8u;
}

static void req(uint8_t *mad, uint8_t method, uint16_t attr, uint64_t mask)
{
	static uint64_t tid = 100;

	sof_sa_req_init(mad, method, attr, 0, tid++, mask);
}

static void gid_of(uint64_t guid, uint8_t gid[16])
{
	sof_put64(gid, SAF_PREFIX);
	sof_put64(gid + 8, guid);
}

TEST(class_port_info_and_bad_requests)
{
	uint8_t mad[512];

	setup();
	req(mad, SOF_SA_GET, SOF_SA_ATTR_CLASS_PORT_INFO, 0);
	CHECK_EQ(ask(mad), 0);
	CHECK_EQ(R[3], 0x81);
	CHECK_EQ(R[SOF_SA_OFF_DATA + 1], 2);
	CHECK(sof_get16(R + SOF_SA_OFF_DATA + 2) & SOF_SA_CAP_MULTIPATH);
	/* CapabilityMask2 bit 12 (send-only full members, as OpenSM) above
	 * RespTimeValue's 5 bits; the joiners read it with the codec */
	CHECK_EQ(sof_get32(R + SOF_SA_OFF_DATA + 4), 1u << 17 | 16);
	CHECK_EQ(sof_sa_cpi_cap_mask2(R + SOF_SA_OFF_DATA), SOF_SA_CAP2_SENDONLY_FULL);
	sm_sa_set_cap_mask2(SA, 0);
	CHECK_EQ(ask(mad), 0);
	CHECK_EQ(sof_get32(R + SOF_SA_OFF_DATA + 4), 16);
	sm_sa_set_cap_mask2(SA, SOF_SA_CAP2_SENDONLY_FULL);
	/* a mask naming a component NodeRecord lacks: answered, TID kept */
	req(mad, SOF_SA_GET_TABLE, SOF_SA_ATTR_NODE_REC, 1ull << 40);
	CHECK_EQ(ask(mad), SOF_SA_ST_REQ_INVALID);
	req(mad, SOF_SA_GET, 0x0099, 0);
	CHECK_EQ(ask(mad), SOF_SA_ST_BAD_ATTR);
	req(mad, 0x33, SOF_SA_ATTR_NODE_REC, 0);
	CHECK_EQ(ask(mad), SOF_SA_ST_BAD_METHOD);
	/* malformed RMPP: a lone middle segment is refused, an ACK dropped */
	req(mad, SOF_SA_GET_TABLE, SOF_SA_ATTR_NODE_REC, 0);
	mad[SOF_SA_OFF_RMPP] = 1;
	mad[SOF_SA_OFF_RMPP_TYPE] = SOF_SA_RMPP_TYPE_DATA;
	mad[SOF_SA_OFF_RMPP_FLAGS] = SOF_SA_RMPP_ACTIVE;
	CHECK_EQ(ask(mad), SOF_SA_ST_REQ_INVALID);
	mad[SOF_SA_OFF_RMPP_TYPE] = SOF_SA_RMPP_TYPE_ACK;
	free(R);
	R = NULL;
	CHECK_EQ(sm_sa_process(SA, NULL, mad, 256, NOW, &R), 0);
	CHECK(R == NULL);
	CHECK_EQ(sm_sa_process(SA, NULL, mad, 100, NOW, &R), 0);
	CHECK(sm_sa_stats(SA)->dropped == 2);
	teardown();
}

TEST(node_records)
{
	const struct sof_sa_rec_desc *d = &sof_sa_recs[SOF_SA_REC_NODE];
	uint8_t mad[256];

	setup();
	req(mad, SOF_SA_GET_TABLE, SOF_SA_ATTR_NODE_REC, 0);
	CHECK_EQ(ask(mad), 0);
	CHECK_EQ(R[3], 0x92);
	CHECK_EQ(R[SOF_SA_OFF_RMPP_FLAGS] & 7, 7);
	CHECK_EQ(sof_get16(R + SOF_SA_OFF_ATTR_OFFSET), 14);
	CHECK_EQ(nrec(), 5);
	/* by LID: H2's */
	req(mad, SOF_SA_GET, SOF_SA_ATTR_NODE_REC, 1ull << SOF_NR_LID);
	sof_put16(mad + SOF_SA_OFF_DATA, 6);
	CHECK_EQ(ask(mad), 0);
	CHECK_EQ(R[3], 0x81);
	CHECK_EQ(sof_sa_get(d, R + SOF_SA_OFF_DATA, SOF_NR_NODE_GUID), SAF_H2);
	CHECK_EQ(sof_sa_get(d, R + SOF_SA_OFF_DATA, SOF_NR_PORT_GUID), SAF_H2 + 1);
	CHECK_EQ(sof_sa_get(d, R + SOF_SA_OFF_DATA, SOF_NR_NODE_TYPE), SOF_NODE_CA);
	CHECK(!memcmp(R + SOF_SA_OFF_DATA + SOF_SA_NR_DESC_OFF, "H2 HCA-1", 9));
	/* by node type: two switches, a Get cannot pick */
	req(mad, SOF_SA_GET, SOF_SA_ATTR_NODE_REC, 1ull << SOF_NR_NODE_TYPE);
	sof_sa_set(d, mad + SOF_SA_OFF_DATA, SOF_NR_NODE_TYPE, SOF_NODE_SWITCH);
	CHECK_EQ(ask(mad), SOF_SA_ST_TOO_MANY_RECORDS);
	mad[3] = SOF_SA_GET_TABLE;
	CHECK_EQ(ask(mad), 0);
	CHECK_EQ(nrec(), 2);
	/* no such LID */
	req(mad, SOF_SA_GET, SOF_SA_ATTR_NODE_REC, 1ull << SOF_NR_LID);
	sof_put16(mad + SOF_SA_OFF_DATA, 100);
	CHECK_EQ(ask(mad), SOF_SA_ST_NO_RECORDS);
	mad[3] = SOF_SA_GET_TABLE; /* a table of none is no error */
	CHECK_EQ(ask(mad), 0);
	CHECK_EQ(RLEN, SOF_SA_HDR_LEN);
	teardown();
}

TEST(portinfo_link_switch_records)
{
	const struct sof_sa_rec_desc *pir = &sof_sa_recs[SOF_SA_REC_PORTINFO];
	uint8_t mad[256];

	setup();
	req(mad, SOF_SA_GET_TABLE, SOF_SA_ATTR_PORTINFO_REC, 1ull << SOF_PIR_LID);
	sof_put16(mad + SOF_SA_OFF_DATA, 1); /* S1: ports 0..4 */
	CHECK_EQ(ask(mad), 0);
	CHECK_EQ(nrec(), 5);
	CHECK_EQ(rec_at(4)[2], 4);
	CHECK_EQ(sof_sa_get(pir, rec_at(4), SOF_PIR_STATE), SOF_PORT_DOWN);
	CHECK_EQ(sof_sa_get(pir, rec_at(1), SOF_PIR_STATE), SOF_PORT_ACTIVE);
	CHECK_EQ(sof_sa_get(pir, rec_at(1), SOF_PIR_MKEY), 0); /* untrusted */
	/* H1 by its second LID, with the SM_Key: the M_Key shows */
	req(mad, SOF_SA_GET, SOF_SA_ATTR_PORTINFO_REC, 1ull << SOF_PIR_LID);
	sof_put16(mad + SOF_SA_OFF_DATA, 5);
	sof_put64(mad + SOF_SA_OFF_SM_KEY, F.sn.sm_key);
	CHECK_EQ(ask(mad), 0);
	CHECK_EQ(sof_sa_get(pir, R + SOF_SA_OFF_DATA, SOF_PIR_BASE_LID), 4);
	CHECK_EQ(sof_sa_get(pir, R + SOF_SA_OFF_DATA, SOF_PIR_LMC), 1);
	CHECK_EQ(sof_sa_get(pir, R + SOF_SA_OFF_DATA, SOF_PIR_MKEY), 0x1100000000000000ull);
	/* active ports: 3 CAs, S1 0-3, S2 0-3 (its port 2 has no cable in
	 * the model but says Active) */
	req(mad, SOF_SA_GET_TABLE, SOF_SA_ATTR_PORTINFO_REC, 1ull << SOF_PIR_STATE);
	sof_sa_set(pir, mad + SOF_SA_OFF_DATA, SOF_PIR_STATE, SOF_PORT_ACTIVE);
	CHECK_EQ(ask(mad), 0);
	CHECK_EQ(nrec(), 3 + 4 + 4);

	/* links: 4 cables, both ways */
	req(mad, SOF_SA_GET_TABLE, SOF_SA_ATTR_LINK_REC, 0);
	CHECK_EQ(ask(mad), 0);
	CHECK_EQ(nrec(), 8);
	req(mad, SOF_SA_GET, SOF_SA_ATTR_LINK_REC,
	    1ull << SOF_LR_FROM_LID | 1ull << SOF_LR_FROM_PORT);
	sof_put16(mad + SOF_SA_OFF_DATA, 2);
	mad[SOF_SA_OFF_DATA + 2] = 3;
	CHECK_EQ(ask(mad), 0);
	CHECK_EQ(R[SOF_SA_OFF_DATA + 3], 3);
	CHECK_EQ(sof_get16(R + SOF_SA_OFF_DATA + 4), 1);

	/* SwitchInfo, LFT blocks, GUIDInfo, P_Keys, SMInfo */
	req(mad, SOF_SA_GET_TABLE, SOF_SA_ATTR_SWITCHINFO_REC, 0);
	CHECK_EQ(ask(mad), 0);
	CHECK_EQ(nrec(), 2);
	CHECK_EQ(sof_get16(rec_at(0) + 4), 0xc000);
	req(mad, SOF_SA_GET, SOF_SA_ATTR_LFT_REC, 1ull << SOF_LFTR_LID | 1ull << SOF_LFTR_BLOCK);
	sof_put16(mad + SOF_SA_OFF_DATA, 2);
	CHECK_EQ(ask(mad), 0);
	CHECK_EQ(R[SOF_SA_OFF_DATA + 8 + 1], 3);
	CHECK_EQ(R[SOF_SA_OFF_DATA + 8 + 2], 0);
	CHECK_EQ(R[SOF_SA_OFF_DATA + 8 + 8], 1);
	CHECK_EQ(R[SOF_SA_OFF_DATA + 8 + 10], 0xff);
	req(mad, SOF_SA_GET_TABLE, SOF_SA_ATTR_GUIDINFO_REC, 0);
	CHECK_EQ(ask(mad), 0);
	CHECK_EQ(nrec(), 5);
	req(mad, SOF_SA_GET_TABLE, SOF_SA_ATTR_PKEY_TABLE_REC, 1ull << SOF_PKTR_LID);
	sof_put16(mad + SOF_SA_OFF_DATA, 8);
	CHECK_EQ(ask(mad), 0);
	CHECK_EQ(nrec(), 1);
	CHECK_EQ(sof_get16(rec_at(0) + 8), 0xffff);
	req(mad, SOF_SA_GET, SOF_SA_ATTR_SMINFO_REC, 0);
	CHECK_EQ(ask(mad), 0);
	CHECK_EQ(sof_get16(R + SOF_SA_OFF_DATA), 4);
	CHECK_EQ(sof_get64(R + SOF_SA_OFF_DATA + 4), SAF_H1 + 1);
	CHECK_EQ(sof_get64(R + SOF_SA_OFF_DATA + 12), 0);
	CHECK_EQ(R[SOF_SA_OFF_DATA + 24], 0xf3);
	teardown();
}

static void path_query(uint8_t *mad, uint8_t method, uint64_t sguid, uint64_t dguid,
		       uint64_t more_mask)
{
	req(mad, method, SOF_SA_ATTR_PATH_REC,
	    1ull << SOF_PR_SGID | 1ull << SOF_PR_DGID | more_mask);
	gid_of(sguid, mad + SOF_SA_OFF_DATA + 24);
	gid_of(dguid, mad + SOF_SA_OFF_DATA + 8);
}

TEST(path_records)
{
	struct sof_sa_path p;
	uint8_t mad[256];

	setup();
	/* H1 -> H3 by GIDs: LMC 1 on both ends, the equal offsets first */
	path_query(mad, SOF_SA_GET_TABLE, SAF_H1 + 1, SAF_H3 + 1, 0);
	CHECK_EQ(ask(mad), 0);
	CHECK_EQ(nrec(), 4);
	sof_sa_path_unpack(rec_at(0), &p);
	CHECK_EQ(p.slid, 4);
	CHECK_EQ(p.dlid, 8);
	CHECK_EQ(p.mtu, 4);  /* H3's link is 2048 */
	CHECK_EQ(p.rate, 7); /* 4x QDR: 40 Gb/s */
	CHECK_EQ(p.pkey, 0xffff);
	CHECK(p.reversible);
	CHECK_EQ(p.preference, 0);
	CHECK_EQ(sof_get64(p.sgid + 8), SAF_H1 + 1);
	sof_sa_path_unpack(rec_at(1), &p);
	CHECK_EQ(p.slid, 5);
	CHECK_EQ(p.dlid, 9);
	CHECK_EQ(p.preference, 1);
	/* NumbPath 1 */
	path_query(mad, SOF_SA_GET_TABLE, SAF_H1 + 1, SAF_H3 + 1, 1ull << SOF_PR_NUMB_PATH);
	sof_sa_set(&sof_sa_recs[SOF_SA_REC_PATH], mad + SOF_SA_OFF_DATA, SOF_PR_NUMB_PATH, 1);
	CHECK_EQ(ask(mad), 0);
	CHECK_EQ(nrec(), 1);
	/* a Get takes the preferred path; by LIDs too */
	req(mad, SOF_SA_GET, SOF_SA_ATTR_PATH_REC, 1ull << SOF_PR_SLID | 1ull << SOF_PR_DLID);
	sof_put16(mad + SOF_SA_OFF_DATA + 42, 7);
	sof_put16(mad + SOF_SA_OFF_DATA + 40, 5);
	CHECK_EQ(ask(mad), 0);
	sof_sa_path_unpack(R + SOF_SA_OFF_DATA, &p);
	CHECK_EQ(p.slid, 7);
	CHECK_EQ(p.dlid, 5);
	CHECK_EQ(p.mtu, 5);
	CHECK_EQ(sof_get64(p.dgid + 8), SAF_H1 + 1);
	/* no source named: the requester's port (LID 6, H2) */
	req(mad, SOF_SA_GET, SOF_SA_ATTR_PATH_REC, 1ull << SOF_PR_DLID);
	sof_put16(mad + SOF_SA_OFF_DATA + 40, 8);
	CHECK_EQ(ask(mad), 0);
	CHECK_EQ(sof_get16(R + SOF_SA_OFF_DATA + 42), 6);
	/* a Get with no destination, an unknown GID */
	req(mad, SOF_SA_GET, SOF_SA_ATTR_PATH_REC, 1ull << SOF_PR_SLID);
	sof_put16(mad + SOF_SA_OFF_DATA + 42, 4);
	CHECK_EQ(ask(mad), SOF_SA_ST_INSUFFICIENT_COMPONENTS);
	mad[3] = SOF_SA_GET_TABLE; /* to every end port: 3 CAs x 2 LIDs... */
	CHECK_EQ(ask(mad), 0);
	CHECK_EQ(nrec(), 2 + 2 + 2 + 1 + 1); /* H1 itself, H2, H3 with LMC; S1, S2 */
	path_query(mad, SOF_SA_GET, SAF_H1 + 1, 0x1234, 0);
	CHECK_EQ(ask(mad), SOF_SA_ST_INVALID_GID);
	/* MTU selectors: exactly 4096 to H3 is not there; less than 4096 is */
	path_query(mad, SOF_SA_GET_TABLE, SAF_H1 + 1, SAF_H3 + 1,
		   1ull << SOF_PR_MTU_SEL | 1ull << SOF_PR_MTU);
	mad[SOF_SA_OFF_DATA + 54] = 2 << 6 | 5;
	CHECK_EQ(ask(mad), 0);
	CHECK_EQ(nrec(), 0);
	mad[SOF_SA_OFF_DATA + 54] = 1 << 6 | 4; /* less than 2048: 1024 */
	CHECK_EQ(ask(mad), 0);
	CHECK_EQ(nrec(), 4);
	CHECK_EQ(rec_at(0)[54] & 0x3f, 3);
	mad[SOF_SA_OFF_DATA + 54] = 3 << 6; /* the largest */
	CHECK_EQ(ask(mad), 0);
	CHECK_EQ(rec_at(0)[54] & 0x3f, 4);
	/* P_Key other than the default: none */
	path_query(mad, SOF_SA_GET, SAF_H1 + 1, SAF_H3 + 1, 1ull << SOF_PR_PKEY);
	sof_put16(mad + SOF_SA_OFF_DATA + 50, 0x8001);
	CHECK_EQ(ask(mad), SOF_SA_ST_NO_RECORDS);

	/* QoS: the SA's PacketLifeTime (18, OpenSM's default) and the SL of
	 * the path's partition; SL asked for must be that one */
	path_query(mad, SOF_SA_GET, SAF_H1 + 1, SAF_H3 + 1, 0);
	CHECK_EQ(ask(mad), 0);
	sof_sa_path_unpack(R + SOF_SA_OFF_DATA, &p);
	CHECK_EQ(p.life, 18);
	CHECK_EQ(p.sl, 0);
	CHECK_EQ(sm_sa_set_part_sl(SA, 0xffff, 5), 0);
	sm_sa_set_pkt_life(SA, 12);
	CHECK_EQ(ask(mad), 0);
	sof_sa_path_unpack(R + SOF_SA_OFF_DATA, &p);
	CHECK_EQ(p.life, 12);
	CHECK_EQ(p.sl, 5);
	CHECK_EQ(R[SOF_SA_OFF_DATA + 53] & 0xf, 5); /* the wire: SL's nibble */
	path_query(mad, SOF_SA_GET, SAF_H1 + 1, SAF_H3 + 1, 1ull << SOF_PR_SL);
	sof_sa_set(&sof_sa_recs[SOF_SA_REC_PATH], mad + SOF_SA_OFF_DATA, SOF_PR_SL, 2);
	CHECK_EQ(ask(mad), SOF_SA_ST_NO_RECORDS);
	sof_sa_set(&sof_sa_recs[SOF_SA_REC_PATH], mad + SOF_SA_OFF_DATA, SOF_PR_SL, 5);
	CHECK_EQ(ask(mad), 0);
	/* a loopback path's PacketLifeTime is 0 (IBA table 205) */
	path_query(mad, SOF_SA_GET, SAF_H1 + 1, SAF_H1 + 1, 0);
	CHECK_EQ(ask(mad), 0);
	sof_sa_path_unpack(R + SOF_SA_OFF_DATA, &p);
	CHECK_EQ(p.life, 0);
	CHECK_EQ(p.dlid, p.slid);
	sm_sa_set_pkt_life(SA, 18);
	CHECK_EQ(sm_sa_set_part_sl(SA, 0x7fff, 0), 0);

	/* a table with a hole, then a loop: no path, no hang */
	F.s2->sw->lft_hw[9] = 0xff;
	path_query(mad, SOF_SA_GET_TABLE, SAF_H1 + 1, SAF_H3 + 1, 0);
	CHECK_EQ(ask(mad), 0);
	CHECK_EQ(nrec(), 2); /* only DLID 8 */
	F.s2->sw->lft_hw[8] = 3;
	F.s2->sw->lft_hw[9] = 3;
	CHECK_EQ(ask(mad), 0);
	CHECK_EQ(nrec(), 0);
	teardown();
}

TEST(multipath_records)
{
	uint8_t mad[512];
	struct sof_sa_multipath m;

	setup();
	memset(&m, 0, sizeof(m));
	m.sgid_count = 1;
	m.dgid_count = 2;
	m.numb_path = 5; /* H1-H2: 4 with LMC 1 at both ends, then H1-H3 */
	gid_of(SAF_H1 + 1, m.gids[0]);
	gid_of(SAF_H2 + 1, m.gids[1]);
	gid_of(SAF_H3 + 1, m.gids[2]);
	req(mad, SOF_SA_GET_MULTI, SOF_SA_ATTR_MULTIPATH_REC,
	    1ull << SOF_MPR_SGID_COUNT | 1ull << SOF_MPR_DGID_COUNT | 1ull << SOF_MPR_NUMB_PATH);
	sof_sa_multipath_pack(mad + SOF_SA_OFF_DATA, &m);
	mad[SOF_SA_OFF_RMPP] = 1;
	mad[SOF_SA_OFF_RMPP_TYPE] = 1;
	mad[SOF_SA_OFF_RMPP_FLAGS] = 7;
	CHECK_EQ(ask(mad), 0);
	CHECK_EQ(R[3], 0x94);
	CHECK_EQ(sof_get16(R + 16), SOF_SA_ATTR_MULTIPATH_REC);
	CHECK_EQ(nrec(), 5);
	CHECK_EQ(sof_get16(rec_at(0) + 40), 6);
	CHECK_EQ(sof_get16(rec_at(1) + 40), 7);
	CHECK_EQ(sof_get16(rec_at(4) + 40), 8);
	CHECK_EQ(sof_get16(rec_at(4) + 42), 4);
	/* GID counts that overrun the record */
	mad[SOF_SA_OFF_DATA + 15] = 12;
	CHECK_EQ(ask(mad), SOF_SA_ST_REQ_INVALID);
	mad[SOF_SA_OFF_DATA + 15] = 0;
	CHECK_EQ(ask(mad), SOF_SA_ST_INSUFFICIENT_COMPONENTS);
	teardown();
}

TEST(service_records)
{
	const uint64_t id_mask = 1ull << SOF_SR_ID | 1ull << SOF_SR_GID;
	struct sof_sa_service s;
	uint8_t mad[256];

	setup();
	memset(&s, 0, sizeof(s));
	s.id = 0x1000000000000001ull;
	gid_of(SAF_H2 + 1, s.gid);
	s.lease = 2;
	snprintf(s.name, sizeof(s.name), "svc-a");
	req(mad, SOF_SA_SET, SOF_SA_ATTR_SERVICE_REC,
	    id_mask | 1ull << SOF_SR_LEASE | 1ull << SOF_SR_NAME);
	sof_sa_service_pack(mad + SOF_SA_OFF_DATA, &s);
	CHECK_EQ(ask(mad), 0);
	CHECK_EQ(R[3], 0x81);
	s.id++;
	s.lease = SOF_SA_SR_LEASE_INFINITE;
	snprintf(s.name, sizeof(s.name), "svc-b");
	sof_sa_service_pack(mad + SOF_SA_OFF_DATA, &s);
	CHECK_EQ(ask(mad), 0);
	req(mad, SOF_SA_GET_TABLE, SOF_SA_ATTR_SERVICE_REC, 0);
	CHECK_EQ(ask(mad), 0);
	CHECK_EQ(nrec(), 2);
	req(mad, SOF_SA_GET, SOF_SA_ATTR_SERVICE_REC, 1ull << SOF_SR_NAME);
	memcpy(mad + SOF_SA_OFF_DATA + 48, "svc-a", 5);
	CHECK_EQ(ask(mad), 0);
	CHECK_EQ(sof_get32(R + SOF_SA_OFF_DATA + 28), 2); /* lease left */
	/* the lease runs out */
	NOW += 3000000;
	sm_sa_tick(SA, NOW);
	CHECK_EQ(ask(mad), SOF_SA_ST_NO_RECORDS);
	/* not enough named; a GID that is no port's */
	req(mad, SOF_SA_SET, SOF_SA_ATTR_SERVICE_REC, 1ull << SOF_SR_ID);
	CHECK_EQ(ask(mad), SOF_SA_ST_INSUFFICIENT_COMPONENTS);
	req(mad, SOF_SA_SET, SOF_SA_ATTR_SERVICE_REC, id_mask);
	gid_of(0x77, mad + SOF_SA_OFF_DATA + 8);
	CHECK_EQ(ask(mad), SOF_SA_ST_INVALID_GID);
	/* delete svc-b, then again */
	req(mad, SOF_SA_DELETE, SOF_SA_ATTR_SERVICE_REC, 1ull << SOF_SR_ID);
	sof_put64(mad + SOF_SA_OFF_DATA, s.id);
	CHECK_EQ(ask(mad), 0);
	CHECK_EQ(R[3], 0x95);
	CHECK(!memcmp(R + SOF_SA_OFF_DATA + 48, "svc-b", 5));
	CHECK_EQ(ask(mad), SOF_SA_ST_NO_RECORDS);
	teardown();
}

static void mc_query(uint8_t *mad, uint8_t method, const uint8_t *mgid, uint64_t port_guid,
		     uint8_t join, uint64_t mask)
{
	struct sof_sa_mcmember m;

	memset(&m, 0, sizeof(m));
	if (mgid)
		memcpy(m.mgid, mgid, 16);
	gid_of(port_guid, m.port_gid);
	m.qkey = 0x11111111u;
	m.pkey = 0xffff;
	m.sl = 0;
	m.join_state = join;
	req(mad, method, SOF_SA_ATTR_MCMEMBER_REC,
	    mask | 1ull << SOF_MCMR_MGID | 1ull << SOF_MCMR_PORT_GID | 1ull << SOF_MCMR_JOIN_STATE);
	sof_sa_mcmember_pack(mad + SOF_SA_OFF_DATA, &m);
}

TEST(multicast_join_leave)
{
	const uint64_t create = 1ull << SOF_MCMR_QKEY | 1ull << SOF_MCMR_PKEY |
				1ull << SOF_MCMR_SL | 1ull << SOF_MCMR_FLOW_LABEL |
				1ull << SOF_MCMR_TCLASS;
	struct sm_port *ports[4];
	uint8_t mad[256], mgid[16], bcast[16];
	uint16_t mlid;

	setup();
	/* the SM's IPoIB broadcast group, with no member yet */
	sm_sa_ipoib_mgid(bcast, 0xffff);
	CHECK_EQ(bcast[4], 0xff);
	CHECK_EQ(sm_sa_mcast_create(SA, bcast, 0xffff, 0xb1b, 4, 3), 0);
	CHECK_EQ(sm_sa_mcast_create(SA, bcast, 0xffff, 0xb1b, 4, 3), -EEXIST);
	CHECK_EQ(T.mcast_changes, 1);
	CHECK_EQ(T.last_mlid, 0xc000);
	/* a non-member cannot create; too few components cannot either */
	mc_query(mad, SOF_SA_SET, NULL, SAF_H1 + 1, SOF_MC_JOIN_NON, create);
	CHECK_EQ(ask(mad), SOF_SA_ST_REQ_INVALID);
	mc_query(mad, SOF_SA_SET, NULL, SAF_H1 + 1, SOF_MC_JOIN_FULL, 0);
	CHECK_EQ(ask(mad), SOF_SA_ST_INSUFFICIENT_COMPONENTS);
	/* H1 creates with MGID 0: one is assigned, an MLID given */
	mc_query(mad, SOF_SA_SET, NULL, SAF_H1 + 1, SOF_MC_JOIN_FULL, create);
	CHECK_EQ(ask(mad), 0);
	memcpy(mgid, R + SOF_SA_OFF_DATA, 16);
	CHECK_EQ(mgid[0], 0xff);
	CHECK_EQ(mgid[2], 0xa0);
	mlid = sof_get16(R + SOF_SA_OFF_DATA + 36);
	CHECK_EQ(mlid, 0xc001);
	CHECK_EQ(T.mcast_changes, 2);
	/* H3 joins send-only; H2 with another Q_Key is refused */
	mc_query(mad, SOF_SA_SET, mgid, SAF_H3 + 1, SOF_MC_JOIN_SEND_ONLY, 1ull << SOF_MCMR_QKEY);
	CHECK_EQ(ask(mad), 0);
	CHECK_EQ(R[SOF_SA_OFF_DATA + 48] & 0x0f, SOF_MC_JOIN_SEND_ONLY);
	mc_query(mad, SOF_SA_SET, mgid, SAF_H2 + 1, SOF_MC_JOIN_FULL, 1ull << SOF_MCMR_QKEY);
	sof_put32(mad + SOF_SA_OFF_DATA + 32, 0x22222222u);
	CHECK_EQ(ask(mad), SOF_SA_ST_REQ_INVALID);
	CHECK_EQ(sm_sa_mcast_ports(SA, mlid, ports, 4), 2);
	CHECK(ports[0] == &F.h1->port[1] && ports[1] == &F.h3->port[1]);
	/* the members, by MGID; all records (the broadcast group shows too) */
	mc_query(mad, SOF_SA_GET_TABLE, mgid, 0, 0, 0);
	sof_put64(mad + SOF_SA_OFF_COMP_MASK, 1ull << SOF_MCMR_MGID);
	CHECK_EQ(ask(mad), 0);
	CHECK_EQ(nrec(), 2);
	req(mad, SOF_SA_GET_TABLE, SOF_SA_ATTR_MCMEMBER_REC, 0);
	CHECK_EQ(ask(mad), 0);
	CHECK_EQ(nrec(), 3);
	/* leave: H3, then H1; the group goes, the SM is told */
	mc_query(mad, SOF_SA_DELETE, mgid, SAF_H3 + 1, SOF_MC_JOIN_SEND_ONLY, 0);
	CHECK_EQ(ask(mad), 0);
	CHECK_EQ(ask(mad), SOF_SA_ST_REQ_INVALID); /* not a member any more */
	mc_query(mad, SOF_SA_DELETE, mgid, SAF_H1 + 1, SOF_MC_JOIN_FULL, 0);
	CHECK_EQ(ask(mad), 0);
	CHECK_EQ(sm_sa_mcast_ports(SA, mlid, ports, 4), -ENOENT);
	CHECK_EQ(T.last_mlid, mlid);
	/* the broadcast group stays, empty */
	CHECK_EQ(sm_sa_mcast_ports(SA, 0xc000, ports, 4), 0);
	/* an unknown port GID */
	mc_query(mad, SOF_SA_SET, bcast, 0x99, SOF_MC_JOIN_FULL, 0);
	CHECK_EQ(ask(mad), SOF_SA_ST_INVALID_GID);
	teardown();
}

/* The membership checks of a join (IBA 15.2.5.17): only ports of the
 * group's partition join (a limited member too), a join naming another
 * P_Key or Q_Key is refused, a Delete takes away only the JoinState bits
 * it names (SendOnlyFullMember beside FullMember). */
TEST(multicast_partitions)
{
	const uint64_t create = 1ull << SOF_MCMR_QKEY | 1ull << SOF_MCMR_PKEY |
				1ull << SOF_MCMR_SL | 1ull << SOF_MCMR_FLOW_LABEL |
				1ull << SOF_MCMR_TCLASS;
	const unsigned pk = SOF_SA_OFF_DATA + 40; /* the record's P_Key */
	struct sm_port *ports[4];
	uint8_t mad[256], mgid[16];
	uint16_t mlid;

	setup();
	/* H1 full and H2 limited in 0x8001; H3 only in the default one */
	/* the tables as sm/partition.c allocates them (freed with the subnet) */
	F.h1->port[1].pkeys = calloc(SM_PKEY_MAX, sizeof(uint16_t));
	F.h2->port[1].pkeys = calloc(SM_PKEY_MAX, sizeof(uint16_t));
	F.h3->port[1].pkeys = calloc(SM_PKEY_MAX, sizeof(uint16_t));
	CHECK(F.h1->port[1].pkeys && F.h2->port[1].pkeys && F.h3->port[1].pkeys);
	F.h1->port[1].pkeys_set = F.h2->port[1].pkeys_set = F.h3->port[1].pkeys_set = 1;
	F.h1->port[1].pkeys[0] = F.h2->port[1].pkeys[0] = F.h3->port[1].pkeys[0] = 0xffff;
	F.h1->port[1].pkeys[1] = 0x8001;
	F.h2->port[1].pkeys[1] = 0x0001;
	/* H3 may not create a group of 0x8001 */
	mc_query(mad, SOF_SA_SET, NULL, SAF_H3 + 1, SOF_MC_JOIN_FULL, create);
	sof_put16(mad + pk, 0x8001);
	CHECK_EQ(ask(mad), SOF_SA_ST_REQ_INVALID);
	/* H1 creates it, with FullMember and SendOnlyFullMember */
	mc_query(mad, SOF_SA_SET, NULL, SAF_H1 + 1, SOF_MC_JOIN_FULL | SOF_MC_JOIN_SEND_ONLY_FULL,
		 create);
	sof_put16(mad + pk, 0x8001);
	CHECK_EQ(ask(mad), 0);
	memcpy(mgid, R + SOF_SA_OFF_DATA, 16);
	mlid = sof_get16(R + SOF_SA_OFF_DATA + 36);
	CHECK_EQ(sof_get16(R + pk), 0x8001);
	CHECK_EQ(R[SOF_SA_OFF_DATA + 48] & 0x0f, SOF_MC_JOIN_FULL | SOF_MC_JOIN_SEND_ONLY_FULL);
	/* H3, no member of 0x8001, cannot join it, nor send-only */
	mc_query(mad, SOF_SA_SET, mgid, SAF_H3 + 1, SOF_MC_JOIN_FULL, 0);
	CHECK_EQ(ask(mad), SOF_SA_ST_REQ_INVALID);
	mc_query(mad, SOF_SA_SET, mgid, SAF_H3 + 1, SOF_MC_JOIN_SEND_ONLY_FULL, 0);
	CHECK_EQ(ask(mad), SOF_SA_ST_REQ_INVALID);
	/* H2, a limited member, joins; naming another P_Key or Q_Key fails */
	mc_query(mad, SOF_SA_SET, mgid, SAF_H2 + 1, SOF_MC_JOIN_FULL, 1ull << SOF_MCMR_PKEY);
	sof_put16(mad + pk, 0x8002);
	CHECK_EQ(ask(mad), SOF_SA_ST_REQ_INVALID);
	mc_query(mad, SOF_SA_SET, mgid, SAF_H2 + 1, SOF_MC_JOIN_FULL, 1ull << SOF_MCMR_QKEY);
	sof_put32(mad + SOF_SA_OFF_DATA + 32, 0x22222222u);
	CHECK_EQ(ask(mad), SOF_SA_ST_REQ_INVALID);
	mc_query(mad, SOF_SA_SET, mgid, SAF_H2 + 1, SOF_MC_JOIN_FULL, 1ull << SOF_MCMR_PKEY);
	sof_put16(mad + pk, 0x0001); /* its own entry: the low 15 bits match */
	CHECK_EQ(ask(mad), 0);
	CHECK_EQ(sm_sa_mcast_ports(SA, mlid, ports, 4), 2);
	/* H1 leaves send-only: still a full member */
	mc_query(mad, SOF_SA_DELETE, mgid, SAF_H1 + 1, SOF_MC_JOIN_SEND_ONLY_FULL, 0);
	CHECK_EQ(ask(mad), 0);
	mc_query(mad, SOF_SA_GET_TABLE, mgid, SAF_H1 + 1, 0, 0);
	sof_put64(mad + SOF_SA_OFF_COMP_MASK, 1ull << SOF_MCMR_MGID | 1ull << SOF_MCMR_PORT_GID);
	CHECK_EQ(ask(mad), 0);
	CHECK_EQ(nrec(), 1);
	CHECK_EQ(rec_at(0)[48] & 0x0f, SOF_MC_JOIN_FULL);
	CHECK_EQ(sm_sa_mcast_ports(SA, mlid, ports, 4), 2);
	/* a Delete of a bit it does not hold is refused; then the full one */
	mc_query(mad, SOF_SA_DELETE, mgid, SAF_H1 + 1, SOF_MC_JOIN_SEND_ONLY_FULL, 0);
	CHECK_EQ(ask(mad), SOF_SA_ST_REQ_INVALID);
	mc_query(mad, SOF_SA_DELETE, mgid, SAF_H1 + 1, SOF_MC_JOIN_FULL, 0);
	CHECK_EQ(ask(mad), 0);
	CHECK_EQ(sm_sa_mcast_ports(SA, mlid, ports, 4), 1);
	CHECK(ports[0] == &F.h2->port[1]);
	teardown();
}

TEST(inform_and_reports)
{
	struct sof_sa_inform ii;
	struct sof_sa_notice n;
	uint8_t mad[256], gid[16];

	setup();
	sm_sa_subnet_changed(SA); /* the first look: no traps */
	CHECK_EQ(T.sends, 0);
	/* H2 subscribes to every generic trap */
	memset(&ii, 0, sizeof(ii));
	ii.lid_begin = SOF_II_LID_ALL;
	ii.is_generic = true;
	ii.subscribe = true;
	ii.type = SOF_II_TYPE_ALL;
	ii.trap_num = SOF_II_TRAP_ALL;
	ii.qpn = 1;
	ii.producer = 0xffffff;
	req(mad, SOF_SA_SET, SOF_SA_ATTR_INFORM_INFO, 0);
	sof_sa_inform_pack(mad + SOF_SA_OFF_DATA, &ii);
	CHECK_EQ(ask(mad), 0);
	req(mad, SOF_SA_GET_TABLE, SOF_SA_ATTR_INFORM_INFO_REC, 0);
	CHECK_EQ(ask(mad), 0);
	CHECK_EQ(nrec(), 1);
	CHECK_EQ(sof_get64(rec_at(0) + 8), SAF_H2 + 1);
	/* H3 goes away: trap 65 to H2 (LID 6, QP 1) */
	F.h3->present = false;
	sm_sa_subnet_changed(SA);
	CHECK_EQ(T.sends, 1);
	CHECK_EQ(T.to.lid, 6);
	CHECK_EQ(T.to.qpn, 1);
	CHECK_EQ(T.mad[3], SOF_SA_REPORT);
	CHECK_EQ(sof_get16(T.mad + 16), SOF_SA_ATTR_NOTICE);
	sof_sa_notice_unpack(T.mad + SOF_SA_OFF_DATA, &n);
	CHECK_EQ(n.trap_num, 65);
	gid_of(SAF_H3 + 1, gid);
	CHECK(!memcmp(n.details + 6, gid, 16));
	/* the subscriber's ReportResp is taken quietly */
	memcpy(mad, T.mad, 256);
	mad[3] = SOF_SA_REPORT_RESP;
	free(R);
	R = NULL;
	CHECK_EQ(sm_sa_process(SA, NULL, mad, 256, NOW, &R), 0);
	/* back: trap 64 */
	F.h3->present = true;
	sm_sa_subnet_changed(SA);
	CHECK_EQ(T.sends, 2);
	CHECK_EQ(sof_get16(T.mad + SOF_SA_OFF_DATA + 4), 64);
	/* a Notice the SM forwards; a subscriber for trap 128 only */
	memset(&n, 0, sizeof(n));
	n.is_generic = true;
	n.type = 1;
	n.producer = 2;
	n.trap_num = 128;
	n.issuer_lid = 2;
	CHECK_EQ(sm_sa_report(SA, &n), 1);
	/* unsubscribe; an unknown unsubscription is refused */
	ii.subscribe = false;
	req(mad, SOF_SA_SET, SOF_SA_ATTR_INFORM_INFO, 0);
	sof_sa_inform_pack(mad + SOF_SA_OFF_DATA, &ii);
	CHECK_EQ(ask(mad), 0);
	CHECK_EQ(ask(mad), SOF_SA_ST_REQ_INVALID);
	CHECK_EQ(sm_sa_report(SA, &n), 0);
	teardown();
}

TEST(big_table)
{
	uint8_t mad[256];
	unsigned i;

	setup();
	/* 300 more hosts behind S2 port 2 (a model needs no real cables) */
	for (i = 0; i < 300; i++) {
		struct sm_node *h = saf_node(&F, SOF_NODE_CA, 1, 0x0002c90300100000ull + i * 16,
					     "many", (uint16_t)(20 + 2 * i), 1, 5);

		CHECK(h);
		h->port[1].peer = &F.s2->port[2];
	}
	req(mad, SOF_SA_GET_TABLE, SOF_SA_ATTR_PORTINFO_REC, 0);
	CHECK_EQ(ask(mad), 0);
	CHECK_EQ(nrec(), 3 + 300 + 10);
	CHECK(RLEN > 256 * 50); /* many RMPP segments */
	req(mad, SOF_SA_GET_TABLE, SOF_SA_ATTR_NODE_REC, 0);
	CHECK_EQ(ask(mad), 0);
	CHECK_EQ(nrec(), 305);
	/* a bound on the answer: beyond it ERR_NO_RESOURCES, in one MAD; a
	 * Get and a table within the bound still answered */
	sm_sa_set_max_table(SA, 100 * 112);
	CHECK_EQ(ask(mad), SOF_SA_ST_NO_RESOURCES);
	CHECK_EQ(RLEN, 256);
	req(mad, SOF_SA_GET_TABLE, SOF_SA_ATTR_NODE_REC, 1ull << SOF_NR_NODE_TYPE);
	mad[SOF_SA_OFF_DATA + 6] = SOF_NODE_SWITCH;
	CHECK_EQ(ask(mad), 0);
	CHECK_EQ(nrec(), 2);
	req(mad, SOF_SA_GET, SOF_SA_ATTR_NODE_REC, 1ull << SOF_NR_LID);
	sof_put16(mad + SOF_SA_OFF_DATA, 20);
	CHECK_EQ(ask(mad), 0);
	teardown();
}

int main(void)
{
	RUN(class_port_info_and_bad_requests);
	RUN(node_records);
	RUN(portinfo_link_switch_records);
	RUN(path_records);
	RUN(multipath_records);
	RUN(service_records);
	RUN(multicast_join_leave);
	RUN(multicast_partitions);
	RUN(inform_and_reports);
	RUN(big_table);
	return test_summary();
}
