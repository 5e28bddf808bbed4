/*
 * A small SA client over libibumad (IBA 15.2.5): MCMemberRecord Set
 * (join) and Delete (leave), PathRecord Get, sent to the SM's LID on QP1
 * with the GSI Q_Key, answered asynchronously: the loop polls the umad
 * descriptor and each response (or the time-out libibumad reports for a
 * request that got none) finds its request by TID and calls it back.
 * Records are read and written at the byte offsets of IBA tables 195
 * (MCMemberRecord) and 188 (PathRecord).
 */
#include "ipoib.h"
#include "sof_bytes.h"

#include <endian.h>
#include <errno.h>
#include <infiniband/umad.h>
#include <infiniband/umad_sa.h>
#include <infiniband/umad_types.h>
#include <stdlib.h>
#include <string.h>

#define SA_TIMEOUT_MS 1000
#define SA_RETRIES 3
#define SA_PENDING 256
#define SA_DATA 56 /* the record's offset in the MAD */
#define METHOD_DELETE 0x15

/* MCMemberRecord component mask bits (IBA table 195) */
#define MCM_MGID (1ull << 0)
#define MCM_PORT_GID (1ull << 1)
#define MCM_QKEY (1ull << 2)
#define MCM_MTU_SEL (1ull << 4)
#define MCM_MTU (1ull << 5)
#define MCM_TCLASS (1ull << 6)
#define MCM_PKEY (1ull << 7)
#define MCM_RATE_SEL (1ull << 8)
#define MCM_RATE (1ull << 9)
#define MCM_SL (1ull << 12)
#define MCM_FLOW (1ull << 13)
#define MCM_HOP (1ull << 14)
#define MCM_JOIN_STATE (1ull << 16)
/* PathRecord component mask bits (IBA table 188) */
#define PR_DGID (1ull << 2)
#define PR_SGID (1ull << 3)
#define PR_NUMB_PATH (1ull << 12)
#define PR_PKEY (1ull << 13)

#define JOIN_FULL 1
#define SEL_EQ 2 /* "exactly" (IBA 15.2.5.16) */

struct sa_req {
	uint32_t tid; /* 0: free */
	bool path;
	sa_mcm_cb mcm_cb;
	sa_path_cb path_cb;
	void *arg;
};

static struct {
	int portid, fd, agent;
	uint16_t sm_lid, pkey;
	uint8_t sm_sl;
	uint8_t gid[16];
	uint32_t next_tid;
	struct sa_req req[SA_PENDING];
	void *umad;
} sa = {.portid = -1, .fd = -1, .agent = -1};

int sa_open(const char *dev, int port, const uint8_t port_gid[16], uint16_t pkey)
{
	if (umad_init() < 0)
		return -EIO;
	sa.portid = umad_open_port(dev, port);
	if (sa.portid < 0)
		return sa.portid;
	sa.fd = umad_get_fd(sa.portid);
	sa.agent = umad_register(sa.portid, UMAD_CLASS_SUBN_ADM, UMAD_SA_CLASS_VERSION, 0, NULL);
	if (sa.agent < 0)
		return -EIO;
	sa.umad = umad_alloc(1, umad_size() + 256);
	if (!sa.umad)
		return -ENOMEM;
	memcpy(sa.gid, port_gid, 16);
	sa.pkey = pkey;
	sa.next_tid = (uint32_t)rand() | 1;
	return 0;
}

int sa_fd(void) { return sa.fd; }

void sa_set_sm(uint16_t sm_lid, uint8_t sm_sl)
{
	sa.sm_lid = sm_lid;
	sa.sm_sl = sm_sl;
}

static struct sa_req *req_new(void)
{
	for (unsigned i = 0; i < SA_PENDING; i++)
		if (!sa.req[i].tid) {
			if (!++sa.next_tid)
				sa.next_tid++;
			memset(&sa.req[i], 0, sizeof(sa.req[i]));
			sa.req[i].tid = sa.next_tid;
			return &sa.req[i];
		}
	return NULL;
}

/* A request MAD of method and attribute, its mask and record; sent. */
static int sa_send(uint32_t tid, uint8_t method, uint16_t attr, uint64_t mask, const uint8_t *rec,
		   size_t rlen)
{
	uint8_t *m = umad_get_mad(sa.umad);
	struct umad_sa_packet *p = (struct umad_sa_packet *)m;
	int len = 256;

	if (!sa.sm_lid)
		return -ENETDOWN;
	memset(m, 0, 256);
	p->mad_hdr.base_version = 1;
	p->mad_hdr.mgmt_class = UMAD_CLASS_SUBN_ADM;
	p->mad_hdr.class_version = UMAD_SA_CLASS_VERSION;
	p->mad_hdr.method = method;
	p->mad_hdr.tid = htobe64(tid);
	p->mad_hdr.attr_id = htobe16(attr);
	p->comp_mask = htobe64(mask);
	memcpy(m + SA_DATA, rec, rlen);
	umad_set_addr(sa.umad, sa.sm_lid, 1, sa.sm_sl, (int)UMAD_QKEY);
	if (umad_send(sa.portid, sa.agent, sa.umad, len, SA_TIMEOUT_MS, SA_RETRIES) < 0)
		return -EIO;
	return 0;
}



static void mcm_rec(uint8_t r[56], const uint8_t mgid[16], const struct sa_mcm *t, uint64_t *mask)
{
	memset(r, 0, 56);
	memcpy(r, mgid, 16);
	memcpy(r + 16, sa.gid, 16);
	r[48] = (uint8_t)(2 << 4 | JOIN_FULL); /* scope link-local, FullMember */
	*mask = MCM_MGID | MCM_PORT_GID | MCM_JOIN_STATE;
	if (!t)
		return;
	/* what creates the group if the SA has none (as the broadcast
	 * group's, RFC 4391 section 5) */
	sof_put32(r + 32, t->qkey);
	r[38] = (uint8_t)(SEL_EQ << 6 | t->mtu);
	r[39] = t->tclass;
	r[40] = (uint8_t)(t->pkey >> 8);
	r[41] = (uint8_t)t->pkey;
	r[42] = (uint8_t)(SEL_EQ << 6 | t->rate);
	sof_put32(r + 44, (uint32_t)t->sl << 28 | (t->flow_label & 0xfffff) << 8 | t->hop_limit);
	*mask |= MCM_QKEY | MCM_MTU_SEL | MCM_MTU | MCM_TCLASS | MCM_PKEY | MCM_SL | MCM_FLOW |
		 MCM_HOP;
	if (t->rate)
		*mask |= MCM_RATE_SEL | MCM_RATE;
}

int sa_join(const uint8_t mgid[16], const struct sa_mcm *tmpl, sa_mcm_cb cb, void *arg)
{
	struct sa_req *q = req_new();
	uint8_t r[56];
	uint64_t mask;
	int err;

	if (!q)
		return -EBUSY;
	q->mcm_cb = cb;
	q->arg = arg;
	mcm_rec(r, mgid, tmpl, &mask);
	err = sa_send(q->tid, UMAD_METHOD_SET, UMAD_SA_ATTR_MCMEMBER_REC, mask, r, sizeof(r));
	if (err)
		q->tid = 0;
	return err;
}

/* No answer is waited for: a leave the SA misses ages out with the port. */
int sa_leave(const uint8_t mgid[16])
{
	struct sa_req *q = req_new();
	uint8_t r[56];
	uint64_t mask;
	int err;

	if (!q)
		return -EBUSY;
	mcm_rec(r, mgid, NULL, &mask);
	err = sa_send(q->tid, METHOD_DELETE, UMAD_SA_ATTR_MCMEMBER_REC, mask, r, sizeof(r));
	if (err)
		q->tid = 0;
	return err;
}

int sa_path(const uint8_t dgid[16], sa_path_cb cb, void *arg)
{
	struct sa_req *q = req_new();
	uint8_t r[64];
	int err;

	if (!q)
		return -EBUSY;
	q->path = true;
	q->path_cb = cb;
	q->arg = arg;
	memset(r, 0, sizeof(r));
	memcpy(r + 8, dgid, 16);
	memcpy(r + 24, sa.gid, 16);
	r[49] = 0x80 | 1; /* reversible, one path */
	r[50] = (uint8_t)(sa.pkey >> 8);
	r[51] = (uint8_t)sa.pkey;
	err = sa_send(q->tid, UMAD_METHOD_GET, UMAD_SA_ATTR_PATH_REC,
		      PR_DGID | PR_SGID | PR_NUMB_PATH | PR_PKEY, r, sizeof(r));
	if (err)
		q->tid = 0;
	return err;
}

void sa_cancel(void *arg)
{
	for (unsigned i = 0; i < SA_PENDING; i++)
		if (sa.req[i].tid && sa.req[i].arg == arg) {
			sa.req[i].mcm_cb = NULL;
			sa.req[i].path_cb = NULL;
		}
}

static void complete(struct sa_req *q, int status, const uint8_t *rec)
{
	struct sa_req c = *q;

	q->tid = 0;
	if (c.path && c.path_cb) {
		struct ipoib_path p;

		memset(&p, 0, sizeof(p));
		if (!status) {
			p.dlid = (uint16_t)(rec[40] << 8 | rec[41]);
			p.sl = rec[53] & 0xf;
			memcpy(p.dgid, rec + 8, 16);
			p.tclass = rec[48];
			p.hop_limit = rec[47];
			p.flow_label = (sof_get32(rec + 44) >> 8) & 0xfffff;
			if (!p.dlid)
				status = -EHOSTUNREACH;
		}
		c.path_cb(c.arg, status, &p);
	} else if (!c.path && c.mcm_cb) {
		struct sa_mcm m;

		memset(&m, 0, sizeof(m));
		if (!status) {
			memcpy(m.mgid, rec, 16);
			m.qkey = sof_get32(rec + 32);
			m.mlid = (uint16_t)(rec[36] << 8 | rec[37]);
			m.mtu = rec[38] & 0x3f;
			m.tclass = rec[39];
			m.pkey = (uint16_t)(rec[40] << 8 | rec[41]);
			m.rate = rec[42] & 0x3f;
			m.sl = (uint8_t)(sof_get32(rec + 44) >> 28);
			m.flow_label = (sof_get32(rec + 44) >> 8) & 0xfffff;
			m.hop_limit = rec[47];
		}
		c.mcm_cb(c.arg, status, &m);
	}
}

void sa_poll(void)
{
	for (int n = 0; n < 64; n++) {
		int len = 256;
		int r = umad_recv(sa.portid, sa.umad, &len, 0);
		const uint8_t *m = umad_get_mad(sa.umad);
		const struct umad_hdr *h = (const void *)m;
		uint32_t tid;
		int st;

		if (r < 0)
			return;
		tid = (uint32_t)be64toh(h->tid);
		st = umad_status(sa.umad);
		for (unsigned i = 0; i < SA_PENDING; i++) {
			struct sa_req *q = &sa.req[i];

			if (!q->tid || q->tid != tid)
				continue;
			if (st)
				complete(q, -st, NULL);
			else if (!(h->method & UMAD_METHOD_RESP_MASK))
				continue;
			else if (len < SA_DATA + 64 || h->status)
				complete(q, h->status ? be16toh(h->status) : -EPROTO, NULL);
			else
				complete(q, 0, m + SA_DATA);
			break;
		}
	}
}

void sa_close(void)
{
	if (sa.portid >= 0) {
		if (sa.agent >= 0)
			umad_unregister(sa.portid, sa.agent);
		umad_close_port(sa.portid);
	}
	if (sa.umad)
		umad_free(sa.umad);
	sa.portid = sa.fd = sa.agent = -1;
	sa.umad = NULL;
}
