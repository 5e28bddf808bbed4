/*
 * umad_sa: an SA client on libibumad (an agent of class 0x03 with RMPP),
 * for tests/hosts/sa.sh: what saquery cannot ask softofed-sm's SA.
 *
 *   umad_sa -C CA -s SA_LID [-n HOSTS]
 *
 *   nr        GetTable(NodeRecord): HOSTS CA records at least (RMPP,
 *             several segments); the CA port GIDs for what follows
 *   long      the same asked by a two-segment RMPP request (a client's
 *             oddity the SM must read without stalling): the same count
 *   multi     GetMulti(MultiPathRecord) from this port to every other
 *             CA port, NumbPath 8: a PathRecord to each, from this LID
 *   mask      Get(PathRecord) with a mask bit no component has: 0x0200
 *   service   Set(ServiceRecord) with a 60 s lease, GetTable by name (one,
 *             lease left <= 60), Delete (DeleteResp), Get: 0x0300
 *   mcast     Set(MCMemberRecord) with MGID 0: a group made, MGID
 *             ff1x:a01b:..., MLID >= 0xc000; a second join with another
 *             Q_Key refused (0x0200); Delete: left
 *   inform    Set(InformInfo) subscribe, GetTable(InformInfoRecord) shows
 *             it, unsubscribe, unsubscribe again: 0x0200
 *   cpi       Get(ClassPortInfo): class version 2
 *
 *   umad_sa -C CA -s SA_LID -w SECS
 *
 *   subscribes to every generic trap (InformInfo), prints "subscribed",
 *   waits up to SECS for the SA's Reports, answers each with a ReportResp
 *   and prints "report: trap N from LID L"; ends at the first trap 128
 *   (a switch's link state changed, forwarded from the SM) and
 *   unsubscribes.
 *
 *   umad_sa -C CA -s SA_LID -p N
 *
 *   N PathRecord Gets (this port to another CA port, by GIDs), one at a
 *   time, each answer checked; prints "umad_sa ok: N paths in T ms, R/s".
 *
 *   umad_sa -C CA [-s SA_LID] -p N -l DLID
 *
 *   the same by LIDs (SLID this port's, DLID given; no NodeRecord table
 *   first, so it runs where RMPP does not, e.g. through libumad2sim);
 *   without -s the SA is at the port's SM LID.
 *
 * Prints "umad_sa ok: ..." when all held; exit status 0 only then.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <infiniband/umad.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sa.h"
#include "smp.h"

#define QKEY 0x80010000u
#define MAX_GIDS 64

static int fd, agent;
static uint16_t sa_lid;
static uint64_t tid = 0x1000;
static int failed;

#define FAIL(...)                                                                                  \
	do {                                                                                       \
		fprintf(stderr, "umad_sa: " __VA_ARGS__);                                          \
		fputc('\n', stderr);                                                               \
		failed = 1;                                                                        \
	} while (0)

/* Send mad (len bytes) to the SA and wait for its answer: the response
 * MAD (malloc'd) and its length, or NULL. */
static uint8_t *ask(uint8_t *mad, size_t len, int *rlen)
{
	void *u = umad_alloc(1, umad_size() + (len > 256 ? len : 256));
	int n = 256, rc, tries = 0;

	if (!u)
		return NULL;
	memcpy(umad_get_mad(u), mad, len);
	umad_set_addr(u, sa_lid, 1, 0, QKEY);
	if (umad_send(fd, agent, u, (int)len, 2000, 2) < 0) {
		umad_free(u);
		return NULL;
	}
	while (tries++ < 16) {
		rc = umad_recv(fd, u, &n, 5000);
		if (rc == -ENOSPC) { /* longer than the buffer: as saquery does */
			void *b = realloc(u, umad_size() + (size_t)n);

			if (!b)
				break;
			u = b;
			continue;
		}
		if (rc < 0 || umad_status(u))
			break;
		/* the upper half of a TID is the agent's (IBA 13.4.6.4) */
		if (sof_get32((uint8_t *)umad_get_mad(u) + 12) != sof_get32(mad + 12)) {
			n = 256; /* an older answer: not ours */
			continue;
		}
		*rlen = n;
		{
			uint8_t *m = malloc((size_t)n);

			if (m)
				memcpy(m, umad_get_mad(u), (size_t)n);
			umad_free(u);
			return m;
		}
	}
	umad_free(u);
	return NULL;
}

static uint16_t status_of(const uint8_t *r) { return sof_get16(r + 4); }

static void req(uint8_t *mad, uint8_t method, uint16_t attr, uint64_t mask);

/* -w: subscribe, wait for Reports, answer them, unsubscribe */
static int wait_reports(int secs)
{
	struct sof_sa_inform ii;
	uint8_t mad[256], *r;
	void *u = umad_alloc(1, umad_size() + 4096);
	time_t end = time(NULL) + secs;
	unsigned reports = 0;
	bool got128 = false;
	int len;

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
	r = ask(mad, 256, &len);
	if (!u || !r || status_of(r)) {
		fprintf(stderr, "umad_sa: subscribe: status 0x%04x\n", r ? status_of(r) : 0xffff);
		return 1;
	}
	free(r);
	printf("subscribed\n");
	fflush(stdout);
	while (!got128 && time(NULL) < end) {
		int n = 4096;
		uint8_t *m;
		struct sof_sa_notice no;

		if (umad_recv(fd, u, &n, 500) < 0 || umad_status(u))
			continue;
		m = umad_get_mad(u);
		if (m[3] != SOF_SA_REPORT || sof_get16(m + 16) != SOF_SA_ATTR_NOTICE)
			continue;
		sof_sa_notice_unpack(m + SOF_SA_OFF_DATA, &no);
		printf("report: trap %u from LID %u\n", no.trap_num, no.issuer_lid);
		fflush(stdout);
		reports++;
		got128 |= no.trap_num == 128;
		/* IBA 13.4.8.2: the subscriber answers a Report */
		m[3] = SOF_SA_REPORT_RESP;
		umad_send(fd, agent, u, 256, 0, 0);
	}
	ii.subscribe = false;
	req(mad, SOF_SA_SET, SOF_SA_ATTR_INFORM_INFO, 0);
	sof_sa_inform_pack(mad + SOF_SA_OFF_DATA, &ii);
	r = ask(mad, 256, &len);
	if (!r || status_of(r))
		fprintf(stderr, "umad_sa: unsubscribe: status 0x%04x\n", r ? status_of(r) : 0xffff);
	free(r);
	umad_free(u);
	if (!got128) {
		fprintf(stderr, "umad_sa: no Report of trap 128 in %d s (%u reports)\n", secs,
			reports);
		return 1;
	}
	printf("umad_sa ok: %u reports, trap 128 among them\n", reports);
	return 0;
}

/* records in a table answer (records all of zeros are padding, not
 * counted: a short table may come padded to a MAD) */
static unsigned nrec(const uint8_t *r, int len)
{
	unsigned stride = sof_get16(r + SOF_SA_OFF_ATTR_OFFSET) * 8u, n = 0;

	if (!stride)
		return 0;
	for (int off = SOF_SA_OFF_DATA; off + (int)stride <= len; off += (int)stride) {
		unsigned k = 0;

		while (k < stride && !r[off + k])
			k++;
		n += k < stride;
	}
	return n;
}

static void req(uint8_t *mad, uint8_t method, uint16_t attr, uint64_t mask)
{
	sof_sa_req_init(mad, method, attr, 0, tid++, mask);
}

/* -p N -l DLID: PathRecord Gets by LIDs, one at a time */
static int path_rate_lid(int n, uint16_t slid, uint16_t dlid)
{
	struct timespec t0, t1;
	uint8_t mad[256], *r;
	double ms;
	int len;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < n; i++) {
		req(mad, SOF_SA_GET, SOF_SA_ATTR_PATH_REC,
		    1ull << SOF_PR_SLID | 1ull << SOF_PR_DLID);
		sof_put16(mad + SOF_SA_OFF_DATA + 40, dlid);
		sof_put16(mad + SOF_SA_OFF_DATA + 42, slid);
		r = ask(mad, 256, &len);
		if (!r || status_of(r) || sof_get16(r + SOF_SA_OFF_DATA + 40) != dlid) {
			fprintf(stderr, "umad_sa: path %d: status 0x%04x\n", i,
				r ? status_of(r) : 0xffff);
			free(r);
			return 1;
		}
		free(r);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	printf("umad_sa ok: %d paths in %.0f ms, %.0f/s\n", n, ms, n / (ms / 1e3));
	return 0;
}

/* -p: PathRecord Gets one at a time to the first other CA port */
static int path_rate(int n, const uint8_t mine[16], uint8_t (*gids)[16], unsigned ngid)
{
	struct timespec t0, t1;
	uint8_t mad[256], *r;
	unsigned d = 0;
	double ms;
	int len;

	while (d < ngid && !memcmp(gids[d], mine, 16))
		d++;
	if (d == ngid) {
		fprintf(stderr, "umad_sa: no other CA port\n");
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < n; i++) {
		req(mad, SOF_SA_GET, SOF_SA_ATTR_PATH_REC,
		    1ull << SOF_PR_SGID | 1ull << SOF_PR_DGID);
		memcpy(mad + SOF_SA_OFF_DATA + 8, gids[d], 16);
		memcpy(mad + SOF_SA_OFF_DATA + 24, mine, 16);
		r = ask(mad, 256, &len);
		if (!r || status_of(r) || memcmp(r + SOF_SA_OFF_DATA + 8, gids[d], 16)) {
			fprintf(stderr, "umad_sa: path %d: status 0x%04x\n", i,
				r ? status_of(r) : 0xffff);
			free(r);
			return 1;
		}
		free(r);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	printf("umad_sa ok: %d paths in %.0f ms, %.0f/s\n", n, ms, n / (ms / 1e3));
	return 0;
}

int main(int argc, char **argv)
{
	const char *ca = NULL;
	unsigned hosts = 2, ngid = 0, i;
	uint8_t mad[1024], gids[MAX_GIDS][16], mine[16], *r;
	umad_port_t port;
	int c, len, wait_secs = 0, npaths = 0, dlid = 0;
	long mask[16 / sizeof(long)];

	while ((c = getopt(argc, argv, "C:s:n:w:p:l:")) != -1) {
		switch (c) {
		case 'l':
			dlid = atoi(optarg);
			break;
		case 'p':
			npaths = atoi(optarg);
			break;
		case 'w':
			wait_secs = atoi(optarg);
			break;
		case 'C':
			ca = optarg;
			break;
		case 's':
			sa_lid = (uint16_t)strtoul(optarg, NULL, 0);
			break;
		case 'n':
			hosts = (unsigned)atoi(optarg);
			break;
		default:
			return 2;
		}
	}
	if (!ca || umad_init() < 0 || umad_get_port(ca, 0, &port) < 0 || (!sa_lid && !dlid)) {
		fprintf(stderr, "usage: umad_sa -C CA -s SA_LID [-n HOSTS] (or no such port)\n");
		return 2;
	}
	if (!sa_lid)
		sa_lid = (uint16_t)port.sm_lid;
	sof_put64(mine, be64toh(port.gid_prefix));
	sof_put64(mine + 8, be64toh(port.port_guid));
	fd = umad_open_port(ca, port.portnum);
	/* the agent takes the SA's Reports too (method 0x06) */
	memset(mask, 0, sizeof(mask));
	mask[0] = 1L << SOF_SA_REPORT;
	agent = fd < 0 ? -1 : umad_register(fd, SOF_MCLASS_SA, SOF_SA_CLASS_VERSION, 1, mask);
	if (agent < 0) {
		fprintf(stderr, "umad_sa: cannot open %s or register an SA agent\n", ca);
		return 1;
	}
	if (wait_secs)
		return wait_reports(wait_secs);
	if (npaths > 0 && dlid)
		return path_rate_lid(npaths, (uint16_t)port.base_lid, (uint16_t)dlid);

	/* nr: every CA port's GID and LID */
	req(mad, SOF_SA_GET_TABLE, SOF_SA_ATTR_NODE_REC, 1ull << SOF_NR_NODE_TYPE);
	mad[SOF_SA_OFF_DATA + 6] = SOF_NODE_CA;
	r = ask(mad, 256, &len);
	if (!r || status_of(r) || r[3] != 0x92) {
		FAIL("nr: no GetTableResp (status 0x%04x)", r ? status_of(r) : 0xffff);
		return 1;
	}
	for (i = 0; i < nrec(r, len) && ngid < MAX_GIDS; i++) {
		const uint8_t *rec =
		    r + SOF_SA_OFF_DATA + i * sof_get16(r + SOF_SA_OFF_ATTR_OFFSET) * 8u;

		sof_put64(gids[ngid], 0xfe80000000000000ull);
		memcpy(gids[ngid++] + 8, rec + 4 + 20, 8); /* NodeInfo:PortGUID */
	}
	free(r);
	if (ngid < hosts)
		FAIL("nr: %u CA records, expected %u", ngid, hosts);
	if (npaths > 0)
		return path_rate(npaths, mine, gids, ngid);

	/* long: the same in a request of two RMPP segments */
	memset(mad, 0, sizeof(mad));
	req(mad, SOF_SA_GET_TABLE, SOF_SA_ATTR_NODE_REC, 1ull << SOF_NR_NODE_TYPE);
	mad[SOF_SA_OFF_DATA + 6] = SOF_NODE_CA;
	mad[SOF_SA_OFF_RMPP] = 1;
	mad[SOF_SA_OFF_RMPP_TYPE] = SOF_SA_RMPP_TYPE_DATA;
	mad[SOF_SA_OFF_RMPP_FLAGS] = SOF_SA_RMPP_ACTIVE;
	r = ask(mad, 456, &len);
	if (!r || status_of(r) || nrec(r, len) != ngid)
		FAIL("long: status 0x%04x, %u records", r ? status_of(r) : 0xffff,
		     r ? nrec(r, len) : 0);
	free(r);

	/* multi: this port to every other CA port */
	{
		struct sof_sa_multipath m;
		unsigned nd = 0, got;

		memset(&m, 0, sizeof(m));
		memcpy(m.gids[0], mine, 16);
		for (i = 0; i < ngid && nd < SOF_SA_MPR_MAX_GIDS - 1; i++)
			if (memcmp(gids[i], mine, 16))
				memcpy(m.gids[1 + nd++], gids[i], 16);
		m.sgid_count = 1;
		m.dgid_count = (uint8_t)nd;
		m.numb_path = 8;
		req(mad, SOF_SA_GET_MULTI, SOF_SA_ATTR_MULTIPATH_REC,
		    1ull << SOF_MPR_SGID_COUNT | 1ull << SOF_MPR_DGID_COUNT |
			1ull << SOF_MPR_NUMB_PATH);
		sof_sa_multipath_pack(mad + SOF_SA_OFF_DATA, &m);
		mad[SOF_SA_OFF_RMPP] = 1;
		mad[SOF_SA_OFF_RMPP_TYPE] = SOF_SA_RMPP_TYPE_DATA;
		mad[SOF_SA_OFF_RMPP_FLAGS] =
		    SOF_SA_RMPP_ACTIVE | SOF_SA_RMPP_FIRST | SOF_SA_RMPP_LAST;
		r = ask(mad, 256, &len);
		got = r ? nrec(r, len) : 0;
		if (!r || status_of(r) || r[3] != 0x94 || got != nd ||
		    sof_get16(r + SOF_SA_OFF_DATA + 42) != port.base_lid)
			FAIL("multi: status 0x%04x method 0x%02x, %u paths for %u GIDs",
			     r ? status_of(r) : 0xffff, r ? r[3] : 0, got, nd);
		free(r);
	}

	/* mask: a component PathRecord does not have */
	req(mad, SOF_SA_GET, SOF_SA_ATTR_PATH_REC, 1ull << 40);
	r = ask(mad, 256, &len);
	if (!r || status_of(r) != SOF_SA_ST_REQ_INVALID)
		FAIL("mask: status 0x%04x", r ? status_of(r) : 0xffff);
	free(r);

	/* service: register, find, delete */
	{
		struct sof_sa_service s;

		memset(&s, 0, sizeof(s));
		s.id = 0x1000000000005a5aull;
		memcpy(s.gid, mine, 16);
		s.pkey = 0xffff;
		s.lease = 60;
		snprintf(s.name, sizeof(s.name), "umad_sa");
		req(mad, SOF_SA_SET, SOF_SA_ATTR_SERVICE_REC,
		    1ull << SOF_SR_ID | 1ull << SOF_SR_GID | 1ull << SOF_SR_PKEY |
			1ull << SOF_SR_LEASE | 1ull << SOF_SR_NAME);
		sof_sa_service_pack(mad + SOF_SA_OFF_DATA, &s);
		r = ask(mad, 256, &len);
		if (!r || status_of(r) || r[3] != 0x81)
			FAIL("service set: status 0x%04x", r ? status_of(r) : 0xffff);
		free(r);
		req(mad, SOF_SA_GET_TABLE, SOF_SA_ATTR_SERVICE_REC, 1ull << SOF_SR_NAME);
		sof_sa_service_pack(mad + SOF_SA_OFF_DATA, &s);
		r = ask(mad, 256, &len);
		if (!r || status_of(r) || nrec(r, len) != 1 ||
		    sof_get32(r + SOF_SA_OFF_DATA + 28) > 60 || !sof_get32(r + SOF_SA_OFF_DATA + 28))
			FAIL("service get: status 0x%04x, %u records", r ? status_of(r) : 0xffff,
			     r ? nrec(r, len) : 0);
		free(r);
		req(mad, SOF_SA_DELETE, SOF_SA_ATTR_SERVICE_REC,
		    1ull << SOF_SR_ID | 1ull << SOF_SR_GID);
		sof_sa_service_pack(mad + SOF_SA_OFF_DATA, &s);
		r = ask(mad, 256, &len);
		if (!r || status_of(r) || r[3] != 0x95)
			FAIL("service delete: status 0x%04x", r ? status_of(r) : 0xffff);
		free(r);
		req(mad, SOF_SA_GET, SOF_SA_ATTR_SERVICE_REC, 1ull << SOF_SR_NAME);
		sof_sa_service_pack(mad + SOF_SA_OFF_DATA, &s);
		r = ask(mad, 256, &len);
		if (!r || status_of(r) != SOF_SA_ST_NO_RECORDS)
			FAIL("service gone: status 0x%04x", r ? status_of(r) : 0xffff);
		free(r);
	}

	/* mcast: create with MGID 0, a mismatched join, leave */
	{
		struct sof_sa_mcmember m;
		uint64_t create = 1ull << SOF_MCMR_MGID | 1ull << SOF_MCMR_PORT_GID |
				  1ull << SOF_MCMR_QKEY | 1ull << SOF_MCMR_PKEY |
				  1ull << SOF_MCMR_SL | 1ull << SOF_MCMR_FLOW_LABEL |
				  1ull << SOF_MCMR_TCLASS | 1ull << SOF_MCMR_JOIN_STATE;
		uint8_t mgid[16];
		uint16_t mlid = 0;

		memset(&m, 0, sizeof(m));
		memcpy(m.port_gid, mine, 16);
		m.qkey = 0x12345;
		m.pkey = 0xffff;
		m.join_state = SOF_MC_JOIN_FULL;
		req(mad, SOF_SA_SET, SOF_SA_ATTR_MCMEMBER_REC, create);
		sof_sa_mcmember_pack(mad + SOF_SA_OFF_DATA, &m);
		r = ask(mad, 256, &len);
		if (r && !status_of(r)) {
			memcpy(mgid, r + SOF_SA_OFF_DATA, 16);
			mlid = sof_get16(r + SOF_SA_OFF_DATA + 36);
		}
		if (!r || status_of(r) || mgid[0] != 0xff || mgid[2] != 0xa0 || mgid[3] != 0x1b ||
		    mlid < 0xc000)
			FAIL("mcast join: status 0x%04x mlid 0x%x", r ? status_of(r) : 0xffff,
			     mlid);
		free(r);
		memcpy(m.mgid, mgid, 16);
		m.qkey = 0x54321;
		req(mad, SOF_SA_SET, SOF_SA_ATTR_MCMEMBER_REC, create);
		sof_sa_mcmember_pack(mad + SOF_SA_OFF_DATA, &m);
		r = ask(mad, 256, &len);
		if (!r || status_of(r) != SOF_SA_ST_REQ_INVALID)
			FAIL("mcast mismatch: status 0x%04x", r ? status_of(r) : 0xffff);
		free(r);
		req(mad, SOF_SA_DELETE, SOF_SA_ATTR_MCMEMBER_REC,
		    1ull << SOF_MCMR_MGID | 1ull << SOF_MCMR_PORT_GID |
			1ull << SOF_MCMR_JOIN_STATE);
		sof_sa_mcmember_pack(mad + SOF_SA_OFF_DATA, &m);
		r = ask(mad, 256, &len);
		if (!r || status_of(r) || r[3] != 0x95)
			FAIL("mcast leave: status 0x%04x", r ? status_of(r) : 0xffff);
		free(r);
	}

	/* inform: subscribe, list, unsubscribe twice */
	{
		struct sof_sa_inform ii;

		memset(&ii, 0, sizeof(ii));
		ii.lid_begin = SOF_II_LID_ALL;
		ii.is_generic = true;
		ii.subscribe = true;
		ii.type = SOF_II_TYPE_ALL;
		ii.trap_num = 64;
		ii.qpn = 1;
		ii.producer = 0xffffff;
		req(mad, SOF_SA_SET, SOF_SA_ATTR_INFORM_INFO, 0);
		sof_sa_inform_pack(mad + SOF_SA_OFF_DATA, &ii);
		r = ask(mad, 256, &len);
		if (!r || status_of(r))
			FAIL("inform subscribe: status 0x%04x", r ? status_of(r) : 0xffff);
		free(r);
		req(mad, SOF_SA_GET_TABLE, SOF_SA_ATTR_INFORM_INFO_REC, 1ull << SOF_IIR_GID);
		memcpy(mad + SOF_SA_OFF_DATA, mine, 16);
		r = ask(mad, 256, &len);
		if (!r || status_of(r) || nrec(r, len) != 1)
			FAIL("inform list: status 0x%04x, %u", r ? status_of(r) : 0xffff,
			     r ? nrec(r, len) : 0);
		free(r);
		ii.subscribe = false;
		for (i = 0; i < 2; i++) {
			req(mad, SOF_SA_SET, SOF_SA_ATTR_INFORM_INFO, 0);
			sof_sa_inform_pack(mad + SOF_SA_OFF_DATA, &ii);
			r = ask(mad, 256, &len);
			if (!r || status_of(r) != (i ? SOF_SA_ST_REQ_INVALID : 0))
				FAIL("inform unsubscribe %u: status 0x%04x", i,
				     r ? status_of(r) : 0xffff);
			free(r);
		}
	}

	req(mad, SOF_SA_GET, SOF_SA_ATTR_CLASS_PORT_INFO, 0);
	r = ask(mad, 256, &len);
	if (!r || status_of(r) || r[SOF_SA_OFF_DATA + 1] != 2)
		FAIL("cpi: status 0x%04x", r ? status_of(r) : 0xffff);
	free(r);

	umad_unregister(fd, agent);
	umad_close_port(fd);
	if (failed)
		return 1;
	printf("umad_sa ok: nr (%u CA ports), long request, multi, mask, service, mcast, inform, "
	       "cpi\n",
	       ngid);
	return 0;
}
