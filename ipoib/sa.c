/*
 * A small SA client over libibumad (IBA 15.2.5): MCMemberRecord Set
 * (join) and Delete (leave), PathRecord Get, sent to the SM's LID on QP1
 * with the GSI Q_Key, answered asynchronously: the loop polls the umad
 * descriptor and each response (or the time-out libibumad reports for a
 * request that got none) finds its request by TID and calls it back.
 * Each new SM LID, and each port event that says the SM changed or asks
 * its clients to register again (main.c), gets a ClassPortInfo Get:
 * whether its SA takes send-only full members (CapabilityMask2 bit 12),
 * which mcast.c asks; once that SA answers, every group is joined again
 * (mcast_rejoin), as the kernel's ipoib flushes and restarts its joins.
 * The SA header and the records (IBA tables 195, MCMemberRecord, and 188,
 * PathRecord) are mad/sa_rec.c's, the codec the SM's SA uses too.
 */
#include "sa.h"
#include "ipoib.h"

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
#define COMP(c) (1ull << (c)) /* a ComponentMask bit */

#define SEL_EQ 2 /* "exactly" (IBA 15.2.5.16) */

struct sa_req {
	uint32_t tid; /* 0: free */
	bool path;
	bool cpi; /* the ClassPortInfo Get */
	sa_mcm_cb mcm_cb;
	sa_path_cb path_cb;
	void *arg;
};

static struct {
	int portid, fd, agent;
	uint16_t sm_lid, pkey;
	uint8_t sm_sl;
	bool sendonly_full; /* the SA at sm_lid takes JoinState 8 */
	bool rejoin;	    /* another SA than the first: join again on its answer */
	bool had_sm;	    /* an SM was known before (the first is not "again") */
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

static struct sa_req *req_new(void);
static int sa_send(uint32_t tid, uint8_t method, uint16_t attr, uint64_t mask, const uint8_t *rec,
		   size_t rlen);

void sa_set_sm(uint16_t sm_lid, uint8_t sm_sl, bool again)
{
	struct sa_req *q;
	uint8_t none[1] = {0};

	if (sm_lid == sa.sm_lid && sm_sl == sa.sm_sl && !again)
		return;
	/* after an SM that went away (LID 0) too: whichever comes next */
	if (sa.had_sm)
		sa.rejoin = true;
	if (sm_lid)
		sa.had_sm = true;
	sa.sm_lid = sm_lid;
	sa.sm_sl = sm_sl;
	/* a new SA: what it takes is not known until it says */
	sa.sendonly_full = false;
	q = req_new();
	if (q) {
		q->cpi = true;
		if (sa_send(q->tid, SOF_SA_GET, SOF_SA_ATTR_CLASS_PORT_INFO, 0, none, 0))
			q->tid = 0;
	}
}

bool sa_sendonly_full(void) { return sa.sendonly_full; }

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

	if (!sa.sm_lid)
		return -ENETDOWN;
	sof_sa_req_init(m, method, attr, 0, tid, mask);
	memcpy(m + SOF_SA_OFF_DATA, rec, rlen);
	umad_set_addr(sa.umad, sa.sm_lid, 1, sa.sm_sl, (int)UMAD_QKEY);
	if (umad_send(sa.portid, sa.agent, sa.umad, SOF_SA_MAD_LEN, SA_TIMEOUT_MS, SA_RETRIES) < 0)
		return -EIO;
	return 0;
}

/* An MCMemberRecord of ours for mgid (padded to 56 bytes, AttributeOffset
 * 7) and its mask */
static void mcm_rec(uint8_t r[56], const uint8_t mgid[16], uint8_t join_state,
		    const struct sa_mcm *t, uint64_t *mask)
{
	struct sof_sa_mcmember m = {.scope = 2, .join_state = join_state}; /* link-local */

	memcpy(m.mgid, mgid, 16);
	memcpy(m.port_gid, sa.gid, 16);
	*mask = COMP(SOF_MCMR_MGID) | COMP(SOF_MCMR_PORT_GID) | COMP(SOF_MCMR_JOIN_STATE);
	if (t) {
		/* what creates the group if the SA has none (as the broadcast
		 * group's, RFC 4391 section 5) */
		m.qkey = t->qkey;
		m.mtu_sel = SEL_EQ;
		m.mtu = t->mtu;
		m.tclass = t->tclass;
		m.pkey = t->pkey;
		m.rate_sel = SEL_EQ;
		m.rate = t->rate;
		m.sl = t->sl;
		m.flow_label = t->flow_label & 0xfffff;
		m.hop_limit = t->hop_limit;
		*mask |= COMP(SOF_MCMR_QKEY) | COMP(SOF_MCMR_MTU_SEL) | COMP(SOF_MCMR_MTU) |
			 COMP(SOF_MCMR_TCLASS) | COMP(SOF_MCMR_PKEY) | COMP(SOF_MCMR_SL) |
			 COMP(SOF_MCMR_FLOW_LABEL) | COMP(SOF_MCMR_HOP_LIMIT);
		if (t->rate)
			*mask |= COMP(SOF_MCMR_RATE_SEL) | COMP(SOF_MCMR_RATE);
	}
	memset(r, 0, 56);
	sof_sa_mcmember_pack(r, &m);
}

int sa_join(const uint8_t mgid[16], uint8_t join_state, const struct sa_mcm *tmpl, sa_mcm_cb cb,
	    void *arg)
{
	struct sa_req *q = req_new();
	uint8_t r[56];
	uint64_t mask;
	int err;

	if (!q)
		return -EBUSY;
	q->mcm_cb = cb;
	q->arg = arg;
	mcm_rec(r, mgid, join_state, tmpl, &mask);
	err = sa_send(q->tid, SOF_SA_SET, SOF_SA_ATTR_MCMEMBER_REC, mask, r, sizeof(r));
	if (err)
		q->tid = 0;
	return err;
}

/* No answer is waited for: a leave the SA misses ages out with the port. */
int sa_leave(const uint8_t mgid[16], uint8_t join_state)
{
	struct sa_req *q = req_new();
	uint8_t r[56];
	uint64_t mask;
	int err;

	if (!q)
		return -EBUSY;
	mcm_rec(r, mgid, join_state, NULL, &mask);
	err = sa_send(q->tid, SOF_SA_DELETE, SOF_SA_ATTR_MCMEMBER_REC, mask, r, sizeof(r));
	if (err)
		q->tid = 0;
	return err;
}

int sa_path(const uint8_t dgid[16], sa_path_cb cb, void *arg)
{
	struct sa_req *q = req_new();
	struct sof_sa_path p = {.reversible = true, .numb_path = 1, .pkey = sa.pkey};
	uint8_t r[64];
	int err;

	if (!q)
		return -EBUSY;
	q->path = true;
	q->path_cb = cb;
	q->arg = arg;
	memcpy(p.dgid, dgid, 16);
	memcpy(p.sgid, sa.gid, 16);
	sof_sa_path_pack(r, &p);
	err = sa_send(q->tid, SOF_SA_GET, SOF_SA_ATTR_PATH_REC,
		      COMP(SOF_PR_DGID) | COMP(SOF_PR_SGID) | COMP(SOF_PR_NUMB_PATH) |
			  COMP(SOF_PR_PKEY),
		      r, sizeof(r));
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
	if (c.cpi) {
		sa.sendonly_full =
		    !status && (sof_sa_cpi_cap_mask2(rec) & SOF_SA_CAP2_SENDONLY_FULL);
		ipoib_log("SA ClassPortInfo: %s send-only full members", status ? "no answer, no"
									 : sa.sendonly_full
									     ? "takes"
									     : "does not take");
		if (sa.rejoin) {
			sa.rejoin = false;
			mcast_rejoin();
		}
	} else if (c.path && c.path_cb) {
		struct ipoib_path p;
		struct sof_sa_path r;

		memset(&p, 0, sizeof(p));
		if (!status) {
			sof_sa_path_unpack(rec, &r);
			p.dlid = r.dlid;
			p.sl = r.sl;
			memcpy(p.dgid, r.dgid, 16);
			p.tclass = r.tclass;
			p.hop_limit = r.hop_limit;
			p.flow_label = r.flow_label;
			if (!p.dlid)
				status = -EHOSTUNREACH;
		}
		c.path_cb(c.arg, status, &p);
	} else if (!c.path && c.mcm_cb) {
		struct sa_mcm m;
		struct sof_sa_mcmember r;

		memset(&m, 0, sizeof(m));
		if (!status) {
			sof_sa_mcmember_unpack(rec, &r);
			memcpy(m.mgid, r.mgid, 16);
			m.qkey = r.qkey;
			m.mlid = r.mlid;
			m.mtu = r.mtu;
			m.tclass = r.tclass;
			m.pkey = r.pkey;
			m.rate = r.rate;
			m.sl = r.sl;
			m.flow_label = r.flow_label;
			m.hop_limit = r.hop_limit;
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
			else if (len < SOF_SA_OFF_DATA + 64 || h->status)
				complete(q, h->status ? be16toh(h->status) : -EPROTO, NULL);
			else
				complete(q, 0, m + SOF_SA_OFF_DATA);
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
