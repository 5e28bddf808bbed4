/*
 * The SA's request handling (IBA 15.2, 15.4): one request in, its
 * response out. The request is taken apart by mad/sa.h's parser (which
 * answers malformed ones with a status); Get and GetTable run the record
 * type's generator over the subnet model or the SA's own tables and keep
 * what matches the ComponentMask; Set/Delete go to the service, multicast
 * and subscription code; ClassPortInfo is answered here. Get with no
 * match is ERR_NO_RECORDS, with several ERR_REQ_TOO_MANY_RECORDS (but a
 * PathRecord Get gets the first, preferred path, as clients expect);
 * GetTable answers with every record, RMPP-active (IBA 15.4.2), bounded
 * at SA_MAX_TABLE_BYTES or what sm_sa_set_max_table says (ERR_NO_RESOURCES
 * beyond).
 */
#include "sa_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct sm_sa *sm_sa_new(struct sm_subnet *sn, const struct sm_sa_ops *ops, void *ctx)
{
	struct sm_sa *sa = calloc(1, sizeof(*sa));

	if (!sa)
		return NULL;
	sa->sn = sn;
	sa->ops = ops;
	sa->ctx = ctx;
	sa->report_tid = 1;
	sa->max_table = SA_MAX_TABLE_BYTES;
	sa->cap_mask2 = SOF_SA_CAP2_SENDONLY_FULL; /* sa_mcast.c takes JoinState 8 */
	sa->pkt_life = SA_PKT_LIFE;
	return sa;
}

void sm_sa_free(struct sm_sa *sa)
{
	if (!sa)
		return;
	free(sa->svc);
	sa_mcast_free(sa);
	sa_inform_free(sa);
	free(sa->known);
	free(sa);
}

const struct sm_sa_stats *sm_sa_stats(const struct sm_sa *sa) { return &sa->st; }

void sm_sa_set_max_table(struct sm_sa *sa, size_t bytes)
{
	sa->max_table = bytes ? bytes : SA_MAX_TABLE_BYTES;
}

void sm_sa_set_cap_mask2(struct sm_sa *sa, uint32_t mask) { sa->cap_mask2 = mask; }

void sm_sa_set_pkt_life(struct sm_sa *sa, uint8_t life) { sa->pkt_life = life & 0x3f; }

/* The SL of pkey's paths and SA-made groups: its partition's, else 0
 * (IBA 15.2.5.16: the SA picks the SL by its QoS policy) */
uint8_t sa_part_sl(const struct sm_sa *sa, uint16_t pkey)
{
	for (unsigned i = 0; i < sa->npart_sl; i++)
		if (sa->part_sl[i].pkey == (pkey & 0x7fff))
			return sa->part_sl[i].sl;
	return 0;
}

int sm_sa_set_part_sl(struct sm_sa *sa, uint16_t pkey, uint8_t sl)
{
	unsigned i;

	for (i = 0; i < sa->npart_sl; i++)
		if (sa->part_sl[i].pkey == (pkey & 0x7fff))
			break;
	if (i == SA_MAX_PART_SL)
		return -ENOSPC;
	sa->part_sl[i].pkey = pkey & 0x7fff;
	sa->part_sl[i].sl = sl & 0xf;
	if (i == sa->npart_sl)
		sa->npart_sl++;
	return 0;
}

void sm_sa_tick(struct sm_sa *sa, uint64_t now_us)
{
	sa->now_us = now_us;
	sa_services_expire(sa, now_us);
}

void sa_port_gid(const struct sm_subnet *sn, const struct sm_port *p, uint8_t gid[16])
{
	sof_put64(gid, sn->prefix ? sn->prefix : SM_DEFAULT_PREFIX);
	sof_put64(gid + 8, p->guid);
}

struct sm_port *sa_port_by_gid(const struct sm_subnet *sn, const uint8_t gid[16])
{
	uint64_t prefix = sof_get64(gid);
	struct sm_port *p;

	if (prefix != sn->prefix && prefix != SM_DEFAULT_PREFIX)
		return NULL;
	p = sm_port_by_guid(sn, sof_get64(gid + 8));
	if (!p || !p->node->present)
		return NULL;
	/* a switch's GUID names its management port */
	return p->node->type == SOF_NODE_SWITCH ? &p->node->port[0] : p;
}

uint16_t sa_port_lid(const struct sm_port *p)
{
	return p->node->type == SOF_NODE_SWITCH ? p->node->port[0].lid : p->lid;
}

bool sa_emit(struct sa_out *o, const uint8_t *rec)
{
	size_t stride = sof_sa_attr_offset(o->d) * 8u;

	if (o->err || o->n >= o->limit)
		return false;
	if (!sof_sa_match(o->d, o->query, rec, o->mask))
		return true;
	if (o->len + stride > o->max_bytes) {
		o->err = -E2BIG;
		return false;
	}
	if (o->len + stride > o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 16 * stride;
		uint8_t *b = realloc(o->buf, cap);

		if (!b) {
			o->err = -ENOMEM;
			return false;
		}
		o->buf = b;
		o->cap = cap;
	}
	memset(o->buf + o->len, 0, stride);
	memcpy(o->buf + o->len, rec, o->d->len);
	o->len += stride;
	o->n++;
	return o->n < o->limit;
}

typedef void gen_fn(struct sm_sa *sa, const struct sa_q *q, struct sa_out *o);

static gen_fn *const generators[SOF_SA_REC_MAX] = {
    [SOF_SA_REC_PATH] = sa_gen_path,
    [SOF_SA_REC_NODE] = sa_gen_node,
    [SOF_SA_REC_PORTINFO] = sa_gen_portinfo,
    [SOF_SA_REC_LINK] = sa_gen_link,
    [SOF_SA_REC_SWITCHINFO] = sa_gen_switchinfo,
    [SOF_SA_REC_LFT] = sa_gen_lft,
    [SOF_SA_REC_MFT] = sa_gen_mft,
    [SOF_SA_REC_GUIDINFO] = sa_gen_guidinfo,
    [SOF_SA_REC_PKEY_TABLE] = sa_gen_pkey,
    [SOF_SA_REC_SMINFO] = sa_gen_sminfo,
    [SOF_SA_REC_SERVICE] = sa_gen_service,
    [SOF_SA_REC_MCMEMBER] = sa_gen_mcmember,
    [SOF_SA_REC_INFORM_INFO_REC] = sa_gen_inform_rec,
};

/* a response of one MAD: header, status, one record (or none) */
static long resp_single(const struct sof_sa_req *r, uint16_t status, const uint8_t *rec,
			size_t rec_len, uint8_t **resp)
{
	uint8_t *m = calloc(1, SOF_SA_MAD_LEN);

	if (!m)
		return -ENOMEM;
	sof_sa_resp_init(m, r, status, 0, false);
	if (rec && !status)
		memcpy(m + SOF_SA_OFF_DATA, rec, rec_len);
	else if (r->rec && r->data_len >= r->rec->len) /* errors echo the query */
		memcpy(m + SOF_SA_OFF_DATA, r->data, r->rec->len);
	*resp = m;
	return SOF_SA_MAD_LEN;
}

/* a table response (GetTable, GetMulti): RMPP-active, records at the
 * record's AttributeOffset, exactly as long as they are (no padding: a
 * client counts the records by the message's length, and the MAD layer
 * pads the last segment and writes each PayloadLength, IBA 13.6.2.3) */
static long resp_table(const struct sof_sa_req *r, uint16_t status, const struct sa_out *o,
		       uint8_t **resp)
{
	size_t len = status ? SOF_SA_MAD_LEN : SOF_SA_HDR_LEN + o->len;
	uint8_t *m = calloc(1, len < SOF_SA_MAD_LEN ? SOF_SA_MAD_LEN : len);

	if (!m)
		return -ENOMEM;
	sof_sa_resp_init(m, r, status, sof_sa_attr_offset(o->d), true);
	if (!status && o->len)
		memcpy(m + SOF_SA_OFF_DATA, o->buf, o->len);
	*resp = m;
	return (long)len;
}

static long class_port_info(const struct sm_sa *sa, const struct sof_sa_req *r, uint8_t resp_time,
			    uint8_t **resp)
{
	uint8_t cpi[SOF_SA_CPI_LEN];

	sof_sa_cpi_pack(cpi,
			SOF_SA_CAP_NOTICE | SOF_SA_CAP_OPT_RECORDS | SOF_SA_CAP_UD_MCAST |
			    SOF_SA_CAP_MULTIPATH,
			sa->cap_mask2, resp_time);
	return resp_single(r, 0, cpi, sizeof(cpi), resp);
}

static long get_or_table(struct sm_sa *sa, const struct sa_q *q, uint8_t **resp)
{
	const struct sof_sa_req *r = q->r;
	struct sa_out o = {
	    .d = r->rec,
	    .query = r->data,
	    .mask = r->comp_mask,
	    .limit = r->method == SOF_SA_GET ? 2 : ~0u,
	    .max_bytes = sa->max_table,
	};
	uint16_t status = 0;
	long len;

	if (r->method == SOF_SA_GET_MULTI) {
		o.d = &sof_sa_recs[SOF_SA_REC_PATH];
		o.mask = 0;
		status = sa_multipath(sa, q, &o);
	} else {
		gen_fn *fn = generators[r->rec - sof_sa_recs];

		if (!fn)
			return resp_single(r, SOF_SA_ST_BAD_ATTR, NULL, 0, resp);
		/* a PathRecord Get takes the first (preferred) path */
		if (r->method == SOF_SA_GET && r->attr_id == SOF_SA_ATTR_PATH_REC)
			o.limit = 1;
		fn(sa, q, &o);
		status = o.status;
	}
	if (!status && o.err)
		status = SOF_SA_ST_NO_RESOURCES; /* -E2BIG or -ENOMEM */
	if (!status && r->method == SOF_SA_GET)
		status = !o.n ? SOF_SA_ST_NO_RECORDS : o.n > 1 ? SOF_SA_ST_TOO_MANY_RECORDS : 0;
	if (r->method == SOF_SA_GET)
		len = resp_single(r, status, o.buf, r->rec->len, resp);
	else
		len = resp_table(r, status, &o, resp);
	sa->st.records += status ? 0 : o.n;
	free(o.buf);
	return len;
}

long sm_sa_process(struct sm_sa *sa, const struct sm_sa_addr *from, const uint8_t *mad, size_t len,
		   uint64_t now_us, uint8_t **resp)
{
	struct sof_sa_req r;
	struct sa_q q = {.r = &r, .from = from};
	uint8_t rec[SOF_SA_DATA_LEN];
	uint16_t status;
	long out;
	int rc;

	*resp = NULL;
	sa->now_us = now_us;
	sa->st.requests++;
	rc = sof_sa_parse(mad, len, &r);
	if (rc < 0) {
		sa->st.dropped++;
		return 0;
	}
	if (rc > 0) {
		sa->st.errors++;
		return resp_single(&r, (uint16_t)rc, NULL, 0, resp);
	}
	if (r.method == SOF_SA_REPORT_RESP) /* the transport matched its TID */
		return 0;
	q.trusted = sa->sn->sm_key && r.sm_key == sa->sn->sm_key;
	if (r.attr_id == SOF_SA_ATTR_CLASS_PORT_INFO)
		out = class_port_info(sa, &r, SA_RESP_TIME, resp);
	else if (r.method == SOF_SA_GET || r.method == SOF_SA_GET_TABLE ||
		 r.method == SOF_SA_GET_MULTI)
		out = get_or_table(sa, &q, resp);
	else {
		memcpy(rec, r.data, r.rec->len);
		switch (r.attr_id << 8 | r.method) {
		case SOF_SA_ATTR_SERVICE_REC << 8 | SOF_SA_SET:
			status = sa_service_set(sa, &q, rec);
			break;
		case SOF_SA_ATTR_SERVICE_REC << 8 | SOF_SA_DELETE:
			status = sa_service_delete(sa, &q, rec);
			break;
		case SOF_SA_ATTR_MCMEMBER_REC << 8 | SOF_SA_SET:
			status = sa_mcmember_join(sa, &q, rec);
			break;
		case SOF_SA_ATTR_MCMEMBER_REC << 8 | SOF_SA_DELETE:
			status = sa_mcmember_leave(sa, &q, rec);
			break;
		case SOF_SA_ATTR_INFORM_INFO << 8 | SOF_SA_SET:
			status = sa_inform_set(sa, &q, rec);
			break;
		default: /* the parser lets no other pair through */
			status = SOF_SA_ST_BAD_ATTR;
			break;
		}
		out = resp_single(&r, status, rec, r.rec->len, resp);
	}
	if (out > 0) {
		sa->st.answered++;
		if (sof_get16(*resp + 4))
			sa->st.errors++;
	}
	return out;
}
