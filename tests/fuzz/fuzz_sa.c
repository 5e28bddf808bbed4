/*
 * libFuzzer target: SA requests from the wire (mad/sa.h): the request
 * parser, then for what it accepts the record machinery a server runs on
 * it: ComponentMask matching of the query against itself and against
 * records, every field read and written back, and the struct records
 * (PathRecord, MultiPathRecord, MCMemberRecord, ServiceRecord, InformInfo,
 * Notice) unpacked and packed again.
 *
 * Input: the MAD, of whatever length (a reassembled RMPP message may be
 * longer than 256 bytes). Checks, for every input:
 *   - the parser answers 0, -EINVAL or one of the SA status codes, and on
 *     0 names a record that goes with the attribute, a mask within the
 *     record's components, and data inside the input;
 *   - a query matches itself under any mask, and a record differing from
 *     it in one field fails exactly the masks that select that field;
 *   - writing a field's value back leaves the record as it was;
 *   - pack(unpack(x)) is a fixed point: unpacking it again gives the same
 *     struct;
 *   - a response header built for the request parses as no request.
 * Then the SM's SA (sm/sm_sa.h) answers it on the hand-built subnet of
 * tests/unit/sa_fabric.h (a fresh SA per input; an input longer than 512
 * bytes is a sequence of 256-byte MADs, so joins, leaves, registrations
 * and subscriptions meet later queries): every answer carries the
 * request's TID and attribute, the response method, a known status, and
 * a table response holds whole records; the SA's tables stay within
 * their bounds.
 *
 * Seeds: SOF_FUZZ_SA_SEEDS=DIR writes one valid request per record type
 * and method (each checked to be answered with status 0) to DIR.
 *
 * tests/fuzz/run.sh builds it from the files on the lines below.
 */
/* clang-format off */
/*
 * FUZZ_SOURCES: tests/fuzz/fuzz_sa.c mad/sa_rec.c sm/sa.c sm/sa_tables.c sm/sa_path.c sm/sa_mcast.c sm/sa_inform.c sm/subnet.c
 * FUZZ_INCLUDES: mad sm tests/unit common
 * FUZZ_SEEDS_ENV: SOF_FUZZ_SA_SEEDS
 */
/* clang-format on */
#include "sa.h"
#include "sa_fabric.h"
#include "sa_int.h"
#include "smp.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FAIL(...)                                                                                  \
	do {                                                                                       \
		fprintf(stderr, "fuzz_sa: " __VA_ARGS__);                                          \
		fputc('\n', stderr);                                                               \
		abort();                                                                           \
	} while (0)

static bool known_status(int rc)
{
	switch (rc) {
	case 0:
	case -EINVAL:
	case SOF_SA_ST_BAD_VERSION:
	case SOF_SA_ST_BAD_METHOD:
	case SOF_SA_ST_BAD_ATTR:
	case SOF_SA_ST_REQ_INVALID:
		return true;
	}
	return false;
}

static void check_fields(const struct sof_sa_rec_desc *d, const uint8_t *q, uint64_t mask)
{
	uint8_t a[SOF_SA_DATA_LEN], b[SOF_SA_DATA_LEN];
	unsigned i;

	memcpy(a, q, d->len);
	if (!sof_sa_match(d, a, q, mask) || !sof_sa_match(d, a, q, ~0ull))
		FAIL("%s: a query does not match itself", d->name);
	for (i = 0; i < d->nfields; i++) {
		const struct sof_sa_field *f = &d->fields[i];
		uint64_t sel = 1ull << f->comp;

		memcpy(b, a, d->len);
		if (f->bits <= 64) {
			if (sof_sa_set(d, b, i, sof_sa_get(d, a, i)) || memcmp(a, b, d->len))
				FAIL("%s: field %u does not read back", d->name, i);
			sof_sa_set(d, b, i, ~sof_sa_get(d, a, i));
		} else {
			b[f->bit / 8] ^= 0x01;
		}
		if (sof_sa_match(d, a, b, sel) || !sof_sa_match(d, a, b, ~sel))
			FAIL("%s: field %u changed, matched wrongly", d->name, i);
		if (sof_sa_match(d, a, b, mask) != !(mask & sel))
			FAIL("%s: field %u changed, mask %llx matched wrongly", d->name, i,
			     (unsigned long long)mask);
	}
}

static void check_structs(const struct sof_sa_rec_desc *d, const uint8_t *q)
{
	uint8_t a[SOF_SA_DATA_LEN];
	union {
		struct sof_sa_path p;
		struct sof_sa_multipath m;
		struct sof_sa_mcmember c;
		struct sof_sa_service s;
		struct sof_sa_inform i;
	} x, y;

	memset(&x, 0, sizeof(x));
	memset(&y, 0, sizeof(y));
	switch (d->attr_id) {
	case SOF_SA_ATTR_PATH_REC:
		sof_sa_path_unpack(q, &x.p);
		sof_sa_path_pack(a, &x.p);
		sof_sa_path_unpack(a, &y.p);
		break;
	case SOF_SA_ATTR_MULTIPATH_REC:
		if (sof_sa_multipath_unpack(q, &x.m))
			return;
		sof_sa_multipath_pack(a, &x.m);
		if (sof_sa_multipath_unpack(a, &y.m))
			FAIL("MultiPathRecord packed unreadable");
		break;
	case SOF_SA_ATTR_MCMEMBER_REC:
		sof_sa_mcmember_unpack(q, &x.c);
		sof_sa_mcmember_pack(a, &x.c);
		sof_sa_mcmember_unpack(a, &y.c);
		break;
	case SOF_SA_ATTR_SERVICE_REC:
		sof_sa_service_unpack(q, &x.s);
		sof_sa_service_pack(a, &x.s);
		sof_sa_service_unpack(a, &y.s);
		break;
	case SOF_SA_ATTR_INFORM_INFO:
		sof_sa_inform_unpack(q, &x.i);
		sof_sa_inform_pack(a, &x.i);
		sof_sa_inform_unpack(a, &y.i);
		break;
	default:
		return;
	}
	if (memcmp(&x, &y, sizeof(x)))
		FAIL("%s: pack/unpack is not a fixed point", d->name);
}

static struct saf fabric;

/* one MAD through the SA; the answer checked */
static void serve(struct sm_sa *sa, const uint8_t *mad, size_t len)
{
	struct sm_sa_addr from = {.lid = 6, .qpn = 1, .qkey = 0x80010000u};
	uint8_t *resp = NULL;
	long n = sm_sa_process(sa, &from, mad, len, 5000000, &resp);

	if (n < 0)
		FAIL("process returned %ld", n);
	if (n == 0) {
		if (resp)
			FAIL("no answer, but a buffer");
		return;
	}
	if (!resp || n < SOF_SA_HDR_LEN || len < SOF_SA_MAD_LEN)
		FAIL("answer of %ld bytes to %zu", n, len);
	if (sof_get64(resp + 8) != sof_get64(mad + 8) || sof_get16(resp + 16) != sof_get16(mad + 16) ||
	    !(resp[3] & SOF_SA_RESP) || resp[1] != SOF_MCLASS_SA)
		FAIL("answer header: method %02x TID/attribute changed", resp[3]);
	if (n > SOF_SA_MAD_LEN || (resp[SOF_SA_OFF_RMPP_FLAGS] & SOF_SA_RMPP_ACTIVE)) {
		unsigned stride = sof_get16(resp + SOF_SA_OFF_ATTR_OFFSET) * 8u;

		if (!sof_get16(resp + 4) && (!stride || (size_t)(n - SOF_SA_HDR_LEN) % stride))
			FAIL("table of %ld bytes, records of %u", n, stride);
	} else if (n != SOF_SA_MAD_LEN) {
		FAIL("single answer of %ld bytes", n);
	}
	switch (sof_get16(resp + 4)) {
	case SOF_SA_ST_OK:
	case SOF_SA_ST_BAD_VERSION:
	case SOF_SA_ST_BAD_METHOD:
	case SOF_SA_ST_BAD_ATTR:
	case SOF_SA_ST_NO_RESOURCES:
	case SOF_SA_ST_REQ_INVALID:
	case SOF_SA_ST_NO_RECORDS:
	case SOF_SA_ST_TOO_MANY_RECORDS:
	case SOF_SA_ST_INVALID_GID:
	case SOF_SA_ST_INSUFFICIENT_COMPONENTS:
		break;
	default:
		FAIL("status 0x%04x", sof_get16(resp + 4));
	}
	if (sa->nsvc > SA_MAX_SERVICES || sa->ngrp > SA_MAX_GROUPS || sa->nsub > SA_MAX_SUBS)
		FAIL("tables beyond their bounds");
	free(resp);
}

static void run_sa(const uint8_t *data, size_t size)
{
	struct sm_sa *sa = sm_sa_new(&fabric.sn, NULL, NULL);
	size_t off;

	if (!sa)
		FAIL("no SA");
	if (size <= 2 * SOF_SA_MAD_LEN) {
		uint8_t *mad = malloc(size ? size : 1);

		memcpy(mad, data, size);
		serve(sa, mad, size);
		free(mad);
	} else {
		for (off = 0; off + SOF_SA_MAD_LEN <= size; off += SOF_SA_MAD_LEN) {
			uint8_t mad[SOF_SA_MAD_LEN];

			memcpy(mad, data + off, sizeof(mad));
			serve(sa, mad, sizeof(mad));
		}
		sm_sa_subnet_changed(sa);
		sm_sa_tick(sa, 100000000);
	}
	sm_sa_free(sa);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sof_sa_req r;
	uint8_t *mad = malloc(size ? size : 1);
	uint8_t resp[SOF_SA_MAD_LEN];
	int rc;

	if (!mad)
		return 0;
	memcpy(mad, data, size);
	rc = sof_sa_parse(mad, size, &r);
	if (!known_status(rc))
		FAIL("parse returned %d", rc);
	if (rc == 0) {
		if (r.data != mad + SOF_SA_OFF_DATA || r.data_len != size - SOF_SA_HDR_LEN)
			FAIL("data outside the MAD");
		if (r.rec) {
			if (r.rec->attr_id != r.attr_id || !sof_sa_mask_valid(r.rec, r.comp_mask))
				FAIL("record %s for attribute 0x%x, mask %llx", r.rec->name,
				     r.attr_id, (unsigned long long)r.comp_mask);
			if (r.data_len < r.rec->len)
				FAIL("record beyond the data");
			check_fields(r.rec, r.data, r.comp_mask);
			check_structs(r.rec, r.data);
		}
		if (r.method == SOF_SA_REPORT_RESP)
			goto out;
		sof_sa_resp_init(resp, &r, SOF_SA_ST_OK, 0, true);
		memcpy(resp + SOF_SA_HDR_LEN, mad + SOF_SA_HDR_LEN,
		       SOF_SA_MAD_LEN - SOF_SA_HDR_LEN);
		if (sof_sa_parse(resp, sizeof(resp), &r) != -EINVAL)
			FAIL("a response parsed as a request");
	}
out:
	free(mad);
	run_sa(data, size);
	return 0;
}

/* ---- seeds: one valid request per record type and method ---- */

static void seed(const char *dir, const char *name, const uint8_t *mad, size_t len)
{
	struct sm_sa *sa = sm_sa_new(&fabric.sn, NULL, NULL);
	struct sm_sa_addr from = {.lid = 6, .qpn = 1};
	uint8_t *resp = NULL;
	char path[512];
	FILE *f;

	for (size_t off = 0; off < len; off += SOF_SA_MAD_LEN) {
		long n = sm_sa_process(sa, &from, mad + off, SOF_SA_MAD_LEN, 5000000, &resp);

		if (n <= 0 || sof_get16(resp + 4))
			FAIL("seed %s: MAD %zu answered %ld bytes, status 0x%04x", name,
			     off / SOF_SA_MAD_LEN, n, n > 0 ? sof_get16(resp + 4) : 0);
		free(resp);
		resp = NULL;
	}
	sm_sa_free(sa);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(mad, 1, len, f) != len || fclose(f))
		FAIL("%s: cannot write", path);
}

static void write_seeds(const char *dir)
{
	static const struct {
		const char *name;
		uint16_t attr;
	} tables[] = {
	    {"table_node", SOF_SA_ATTR_NODE_REC},
	    {"table_portinfo", SOF_SA_ATTR_PORTINFO_REC},
	    {"table_link", SOF_SA_ATTR_LINK_REC},
	    {"table_switch", SOF_SA_ATTR_SWITCHINFO_REC},
	    {"table_lft", SOF_SA_ATTR_LFT_REC},
	    {"table_mft", SOF_SA_ATTR_MFT_REC},
	    {"table_guid", SOF_SA_ATTR_GUIDINFO_REC},
	    {"table_pkey", SOF_SA_ATTR_PKEY_TABLE_REC},
	    {"table_sminfo", SOF_SA_ATTR_SMINFO_REC},
	    {"table_service", SOF_SA_ATTR_SERVICE_REC},
	    {"table_mcmember", SOF_SA_ATTR_MCMEMBER_REC},
	    {"table_inform", SOF_SA_ATTR_INFORM_INFO_REC},
	    {"table_path", SOF_SA_ATTR_PATH_REC},
	};
	uint8_t mad[3 * SOF_SA_MAD_LEN], *d = mad + SOF_SA_OFF_DATA;
	struct sof_sa_mcmember mc;
	struct sof_sa_service sr;
	struct sof_sa_inform ii;

	for (unsigned i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
		sof_sa_req_init(mad, SOF_SA_GET_TABLE, tables[i].attr, 0, 1, 0);
		seed(dir, tables[i].name, mad, SOF_SA_MAD_LEN);
	}
	sof_sa_req_init(mad, SOF_SA_GET, SOF_SA_ATTR_CLASS_PORT_INFO, 0, 2, 0);
	seed(dir, "get_cpi", mad, SOF_SA_MAD_LEN);
	sof_sa_req_init(mad, SOF_SA_GET, SOF_SA_ATTR_PATH_REC, 0, 3,
			1ull << SOF_PR_SGID | 1ull << SOF_PR_DGID);
	sof_put64(d + 8, SAF_PREFIX);
	sof_put64(d + 16, SAF_H3 + 1);
	sof_put64(d + 24, SAF_PREFIX);
	sof_put64(d + 32, SAF_H1 + 1);
	seed(dir, "get_path_gids", mad, SOF_SA_MAD_LEN);
	sof_sa_req_init(mad, SOF_SA_GET, SOF_SA_ATTR_NODE_REC, 0, 4, 1ull << SOF_NR_LID);
	sof_put16(d, 8);
	seed(dir, "get_node_lid", mad, SOF_SA_MAD_LEN);

	/* join (create), join again, leave: three MADs */
	memset(mad, 0, sizeof(mad));
	memset(&mc, 0, sizeof(mc));
	mc.mgid[0] = 0xff;
	mc.mgid[1] = 0x12;
	mc.mgid[15] = 1;
	sof_put64(mc.port_gid, SAF_PREFIX);
	sof_put64(mc.port_gid + 8, SAF_H2 + 1);
	mc.qkey = 0x1234;
	mc.pkey = 0xffff;
	mc.join_state = SOF_MC_JOIN_FULL;
	for (unsigned i = 0; i < 3; i++) {
		uint8_t *m = mad + i * SOF_SA_MAD_LEN;

		sof_sa_req_init(m, i == 2 ? SOF_SA_DELETE : SOF_SA_SET, SOF_SA_ATTR_MCMEMBER_REC, 0,
				10 + i, 0x1ffff);
		sof_sa_mcmember_pack(m + SOF_SA_OFF_DATA, &mc);
	}
	seed(dir, "mc_join_leave", mad, 3 * SOF_SA_MAD_LEN);

	/* a service registered with a lease, then found by name */
	memset(&sr, 0, sizeof(sr));
	sr.id = 0x1000000000000001ull;
	sof_put64(sr.gid, SAF_PREFIX);
	sof_put64(sr.gid + 8, SAF_H2 + 1);
	sr.lease = 60;
	snprintf(sr.name, sizeof(sr.name), "fuzz");
	sof_sa_req_init(mad, SOF_SA_SET, SOF_SA_ATTR_SERVICE_REC, 0, 20, 0x53);
	sof_sa_service_pack(mad + SOF_SA_OFF_DATA, &sr);
	sof_sa_req_init(mad + SOF_SA_MAD_LEN, SOF_SA_GET, SOF_SA_ATTR_SERVICE_REC, 0, 21,
			1ull << SOF_SR_NAME);
	sof_sa_service_pack(mad + SOF_SA_MAD_LEN + SOF_SA_OFF_DATA, &sr);
	sof_sa_req_init(mad + 2 * SOF_SA_MAD_LEN, SOF_SA_DELETE, SOF_SA_ATTR_SERVICE_REC, 0, 22,
			1ull << SOF_SR_ID);
	sof_sa_service_pack(mad + 2 * SOF_SA_MAD_LEN + SOF_SA_OFF_DATA, &sr);
	seed(dir, "service_set_get_delete", mad, 3 * SOF_SA_MAD_LEN);

	/* subscribe to every trap, list it, unsubscribe */
	memset(&ii, 0, sizeof(ii));
	ii.lid_begin = SOF_II_LID_ALL;
	ii.is_generic = true;
	ii.subscribe = true;
	ii.type = SOF_II_TYPE_ALL;
	ii.trap_num = SOF_II_TRAP_ALL;
	ii.qpn = 1;
	ii.producer = 0xffffff;
	sof_sa_req_init(mad, SOF_SA_SET, SOF_SA_ATTR_INFORM_INFO, 0, 30, 0);
	sof_sa_inform_pack(mad + SOF_SA_OFF_DATA, &ii);
	sof_sa_req_init(mad + SOF_SA_MAD_LEN, SOF_SA_GET_TABLE, SOF_SA_ATTR_INFORM_INFO_REC, 0, 31,
			0);
	ii.subscribe = false;
	sof_sa_req_init(mad + 2 * SOF_SA_MAD_LEN, SOF_SA_SET, SOF_SA_ATTR_INFORM_INFO, 0, 32, 0);
	sof_sa_inform_pack(mad + 2 * SOF_SA_MAD_LEN + SOF_SA_OFF_DATA, &ii);
	seed(dir, "inform_sub_unsub", mad, 3 * SOF_SA_MAD_LEN);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *seeds = getenv("SOF_FUZZ_SA_SEEDS");

	(void)argc;
	(void)argv;
	if (saf_build(&fabric))
		FAIL("no fabric");
	if (seeds) {
		write_seeds(seeds);
		exit(0);
	}
	return 0;
}
