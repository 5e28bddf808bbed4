/*
 * The SA on libibumad, as a service of the SM's loop (struct sm_service,
 * sm/subnet.h): an agent of the SA class (0x03, version 2) registered
 * with RMPP version 1, so that a GetTable response of any length leaves
 * in RMPP segments and a GetMulti request arrives reassembled (IBA 13.6;
 * the kernel's, libumad2sim's or softofed's MAD layer does the protocol).
 * Requests go to sm_sa_process and the answer back to the address the
 * request came from; Reports leave with a time-out and retries, and the
 * subscriber's ReportResp ends them. At start the SA makes the IPoIB
 * broadcast group of the default partition (RFC 4391), as OpenSM does.
 * $SOFTOFED_SM_SA_CAP_MASK2 (a number) replaces the ClassPortInfo
 * CapabilityMask2 the SA advertises: the tests play an SA without
 * send-only full members with it.
 */
#include "sm.h"
#include "sm_sa.h"
#include "smp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/umad.h>
#include <stdlib.h>
#include <string.h>

#define IPOIB_QKEY 0x00000b1bu
#define IPOIB_MTU 4  /* 2048 */
#define IPOIB_RATE 3 /* 10 Gb/s */

struct sa_umad {
	struct sm_sa *sa;
	int fd, agent;
	uint64_t now_us;
};

static struct sa_umad sa_umad = {.agent = -1};

static int report_send(void *ctx, const struct sm_sa_addr *to, const uint8_t *mad, size_t len,
		       unsigned timeout_ms, unsigned retries)
{
	struct sa_umad *u = ctx;
	void *m = umad_alloc(1, umad_size() + len);
	int rc;

	if (!m)
		return -ENOMEM;
	memcpy(umad_get_mad(m), mad, len);
	umad_set_addr(m, to->lid, (int)to->qpn, to->sl, (int)to->qkey);
	umad_set_pkey(m, to->pkey_index);
	rc = umad_send(u->fd, u->agent, m, (int)len, (int)timeout_ms, (int)retries);
	umad_free(m);
	return rc < 0 ? rc : 0;
}

/* the SM's multicast routing, told of each group that changed */
static void (*mcast_fn)(void *ctx, uint16_t mlid);
static void *mcast_ctx;

static void mcast_changed(void *ctx, uint16_t mlid)
{
	(void)ctx;
	if (mcast_fn)
		mcast_fn(mcast_ctx, mlid);
}

static const struct sm_sa_ops umad_ops = {
    .send = report_send,
    .mcast_changed = mcast_changed,
};

void sm_sa_mcast_hook(void (*fn)(void *ctx, uint16_t mlid), void *ctx)
{
	mcast_fn = fn;
	mcast_ctx = ctx;
}

struct sm_sa *sm_sa_get(void) { return sa_umad.sa; }

static int sa_start(void *ctx, struct sm_subnet *sn, int fd)
{
	struct sa_umad *u = ctx;
	long mask[16 / sizeof(long)];
	static const uint8_t methods[] = {
	    SOF_SA_GET,	  SOF_SA_SET, SOF_SA_GET_TABLE, SOF_SA_GET_MULTI, SOF_SA_GET_TRACE_TABLE,
	    SOF_SA_DELETE};
	uint8_t mgid[16];

	memset(mask, 0, sizeof(mask));
	for (unsigned i = 0; i < sizeof(methods); i++)
		mask[methods[i] / (8 * sizeof(long))] |= 1L << (methods[i] % (8 * sizeof(long)));
	u->fd = fd;
	u->agent = umad_register(fd, SOF_MCLASS_SA, SOF_SA_CLASS_VERSION, 1, mask);
	if (u->agent < 0)
		return u->agent;
	u->sa = sm_sa_new(sn, &umad_ops, u);
	if (!u->sa) {
		umad_unregister(fd, u->agent);
		u->agent = -1;
		return -ENOMEM;
	}
	if (getenv("SOFTOFED_SM_SA_CAP_MASK2"))
		sm_sa_set_cap_mask2(u->sa,
				    (uint32_t)strtoul(getenv("SOFTOFED_SM_SA_CAP_MASK2"), NULL, 0));
	/* each partition's SL for its paths and its groups (OpenSM's
	 * partition sl= does the same) */
	for (unsigned i = 0; sm_parts_loaded() && i < sm_parts_loaded()->n; i++) {
		const struct sm_partition *pt = &sm_parts_loaded()->p[i];

		if (pt->sl && sm_sa_set_part_sl(u->sa, pt->pkey, pt->sl))
			return -ENOSPC;
	}
	/* the default partition's group always, with the Default line's
	 * mtu=, rate= and Q_Key= when the file has one (OpenSM's
	 * "Default=0x7fff, ipoib, mtu=5" gives a 4096 IB MTU, RFC 4391's
	 * interface MTU 4092); each other partition with the ipoib flag has
	 * its group (sm/partition.c) */
	const struct sm_partition *dflt = NULL;

	for (unsigned i = 0; sm_parts_loaded() && i < sm_parts_loaded()->n; i++)
		if (sm_parts_loaded()->p[i].pkey == 0x7fff)
			dflt = &sm_parts_loaded()->p[i];
	sm_sa_ipoib_mgid(mgid, SOF_PKEY_DEFAULT);
	sm_sa_mcast_create(u->sa, mgid, SOF_PKEY_DEFAULT,
			   dflt && dflt->qkey ? dflt->qkey : IPOIB_QKEY,
			   dflt && dflt->mtu ? dflt->mtu : IPOIB_MTU,
			   dflt && dflt->rate ? dflt->rate : IPOIB_RATE);
	for (unsigned i = 0; sm_parts_loaded() && i < sm_parts_loaded()->n; i++) {
		const struct sm_partition *pt = &sm_parts_loaded()->p[i];

		if (!pt->ipoib || pt->pkey == 0x7fff)
			continue;
		sm_sa_ipoib_mgid(mgid, pt->pkey);
		sm_sa_mcast_create(u->sa, mgid, pt->pkey | 0x8000, pt->qkey ? pt->qkey : IPOIB_QKEY,
				   pt->mtu ? pt->mtu : IPOIB_MTU, pt->rate ? pt->rate : IPOIB_RATE);
	}
	return 0;
}

static bool sa_recv(void *ctx, int agent, void *umad, int len)
{
	struct sa_umad *u = ctx;
	struct ib_mad_addr *a;
	struct sm_sa_addr from;
	uint8_t *resp = NULL;
	void *m;
	long n;

	if (!u->sa || agent != u->agent)
		return false;
	if (umad_status(umad)) /* a Report nobody answered: dropped */
		return true;
	a = umad_get_mad_addr(umad);
	memset(&from, 0, sizeof(from));
	from.lid = ntohs(a->lid);
	from.sl = a->sl;
	from.qpn = ntohl(a->qpn);
	from.qkey = ntohl(a->qkey);
	from.pkey_index = a->pkey_index;
	from.grh = a->grh_present;
	memcpy(from.gid, a->gid, 16);
	n = sm_sa_process(u->sa, &from, umad_get_mad(umad), (size_t)len, u->now_us, &resp);
	if (n <= 0)
		return true;
	/* the answer goes back the way the request came: its address */
	m = umad_alloc(1, umad_size() + (size_t)(n > SOF_SA_MAD_LEN ? n : SOF_SA_MAD_LEN));
	if (m) {
		memcpy(m, umad, umad_size());
		memcpy(umad_get_mad(m), resp, (size_t)n);
		if (umad_send(u->fd, u->agent, m, (int)n, 0, 0) < 0 && n > SOF_SA_MAD_LEN) {
			/* a table longer than the MAD layer carries (softofed's
			 * takes 256 KiB): ERR_NO_RESOURCES in one MAD rather
			 * than a client left to time out */
			uint8_t *e = umad_get_mad(m);

			memset(e + SOF_SA_OFF_DATA, 0, SOF_SA_DATA_LEN);
			sof_put16(e + 4, SOF_SA_ST_NO_RESOURCES);
			sof_put16(e + SOF_SA_OFF_ATTR_OFFSET, 0);
			umad_send(u->fd, u->agent, m, SOF_SA_MAD_LEN, 0, 0);
		}
		umad_free(m);
	}
	free(resp);
	return true;
}

static void sa_tick(void *ctx, uint64_t now_us)
{
	struct sa_umad *u = ctx;

	u->now_us = now_us;
	if (u->sa)
		sm_sa_tick(u->sa, now_us);
}

static void sa_changed(void *ctx)
{
	struct sa_umad *u = ctx;

	if (u->sa)
		sm_sa_subnet_changed(u->sa);
}

static void sa_stop(void *ctx)
{
	struct sa_umad *u = ctx;

	if (u->agent >= 0)
		umad_unregister(u->fd, u->agent);
	sm_sa_free(u->sa);
	u->sa = NULL;
	u->agent = -1;
}

static const struct sm_service sa_service = {
    .name = "sa",
    .start = sa_start,
    .recv = sa_recv,
    .tick = sa_tick,
    .changed = sa_changed,
    .stop = sa_stop,
};

int sm_sa_service_init(void) { return sm_service_add(&sa_service, &sa_umad); }

void sm_sa_trap_in(const uint8_t *smp_data)
{
	uint8_t rec[SOF_SA_NOTICE_LEN];

	if (!sa_umad.sa)
		return;
	/* an SMP's Notice ends before IssuerGID (IBA 14.2.5.1: 64 bytes of
	 * data); the SA reports it with the GID left zero */
	memset(rec, 0, sizeof(rec));
	memcpy(rec, smp_data, 64);
	{
		struct sof_sa_notice n;

		sof_sa_notice_unpack(rec, &n);
		sm_sa_report(sa_umad.sa, &n);
	}
}
