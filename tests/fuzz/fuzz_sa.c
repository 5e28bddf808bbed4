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
 *
 * tests/fuzz/run.sh builds it from the files on these lines:
 * FUZZ_SOURCES: tests/fuzz/fuzz_sa.c mad/sa_rec.c
 * FUZZ_INCLUDES: mad
 */
#include "sa.h"
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
	return 0;
}
