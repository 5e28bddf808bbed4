/*
 * Multicast joins of an id. On RoCE the group is the IP multicast
 * address (its GID) and there is no SA to join: the join is answered at
 * once with the group's address handle, and the device joins the IP
 * group when a QP attaches (ibv_attach_mcast, transport/mcast.c).
 *
 * On the InfiniBand port (an id over IPoIB or AF_IB) the group is an IB
 * multicast group joined through the SA, as the kernel's rdma_cm does: the
 * address becomes an MGID in IPoIB's form (RFC 4391 section 4, with the
 * RDMA CM's signature 0x4001 in place of 0x401b for RDMA_PS_UDP, as the
 * kernel's cma_set_mgid, so the group is not IPoIB's own), and a
 * SubnAdmSet(MCMemberRecord) (IBA 15.2.5.17) makes the port a member
 * (FullMember, or SendOnlyFullMember for RDMA_MC_JOIN_FLAG_SENDONLY_
 * FULLMEMBER: mckey -o) in the id's partition (its interface's P_Key, in
 * the MGID and the record), creating the group with the id's Q_Key when
 * the SA has none. As the kernel's cma_join_ib_multicast, the group's
 * SL, flow label and traffic class (for RDMA_PS_IPOIB also its Q_Key,
 * MTU, rate and hop limit) are those of the partition's IPoIB broadcast
 * group, ff12:401b:PPPP::ffff:ffff (RFC 4391 section 4): a SubnAdmGet
 * of our port's MCMemberRecord in it comes first (the kernel reads the
 * record IPoIB's join left in its cache), so a partition's QoS (its
 * SL) holds for its RDMA CM groups too; a port that is no member of the
 * broadcast group (no IPoIB interface up) fails the join with
 * EADDRNOTAVAIL, as the kernel's. The answer's MLID, SL and Q_Key make the
 * MULTICAST_JOIN event's address vector (DLID = MLID with a GRH to the
 * MGID, as ib_init_ah_from_mcmember), so a sender reaches the attached
 * QPs through the switches' multicast forwarding. A leave (or the id's
 * end) is a SubnAdmDelete of the same JoinState bits, answer not awaited.
 * Joins waiting for the SA are found by their TID.
 *
 * A send-only join needs an SA that takes them (ClassPortInfo:
 * CapabilityMask2 bit 12, asked once per SM, cma_ib.c): without it the
 * join fails with EOPNOTSUPP, as the kernel's cma_join_ib_multicast
 * refuses it (IPoIB, ipoib/mcast.c, joins as a full member instead).
 */
#include "cma.h"
#include "sa.h"

#include "sof_gid.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SA_TIMEOUT_MS 1000
#define MC_TID_BASE 0x80000000u /* above the ids' handles, cma_ib.c's TIDs */
#define COMP(c) (1ull << (c))
#define MC_SCOPE 2 /* link-local, as IPoIB's broadcast group */

static struct sof_link waiting = {&waiting, &waiting}; /* struct cm_mc, wait_link */
/* send-only joins waiting for the SA's ClassPortInfo (cpi_wait) */
static struct sof_link cpi_waiting = {&cpi_waiting, &cpi_waiting};
static uint32_t next_tid;

/* The IB MGID of a group address (the kernel's cma_set_mgid): an MGID or
 * SA-assigned one as it is, an IP group mapped as IPoIB maps it. */
static void ib_mgid(const struct cm_id *id, const struct sockaddr_storage *ss, uint8_t mgid[16])
{
	const uint8_t *a;

	memset(mgid, 0, 16);
	if (ss->ss_family == AF_IB) {
		memcpy(mgid, &((const struct sockaddr_ib *)(const void *)ss)->sib_addr, 16);
		return;
	}
	if (ss->ss_family == AF_INET6) {
		a = ((const struct sockaddr_in6 *)(const void *)ss)->sin6_addr.s6_addr;
		if (a[0] == 0xff && (a[1] & 0xf0) == 0x10 && a[2] == 0xa0 && a[3] == 0x1b) {
			memcpy(mgid, a, 16); /* SA-assigned */
			return;
		}
		mgid[2] = 0x60;
		memcpy(mgid + 6, a + 6, 10);
	} else {
		a = (const uint8_t *)&((const struct sockaddr_in *)(const void *)ss)->sin_addr;
		mgid[2] = 0x40;
		mgid[12] = a[0] & 0x0f; /* the class D prefix dropped */
		memcpy(mgid + 13, a + 1, 3);
	}
	mgid[0] = 0xff;
	mgid[1] = 0x10 | MC_SCOPE;
	mgid[3] = id->ps == (uint8_t)RDMA_PS_UDP ? 0x01 : 0x1b; /* ps: the low byte */
	/* the id's partition, full-member bit set (its interface's broadcast
	 * address: RFC 4391 section 4) */
	mgid[4] = (uint8_t)((id->pkey | 0x8000) >> 8);
	mgid[5] = id->pkey & 0xff;
}

/* The MGID of the partition's IPoIB broadcast group (RFC 4391 section
 * 4): the id's P_Key with its full-member bit, as the interface's
 * broadcast address carries it */
static void bcast_mgid(const struct cm_id *id, uint8_t mgid[16])
{
	static const uint8_t tmpl[16] = {
	    0xff, 0x10 | MC_SCOPE, 0x40, 0x1b, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff};

	memcpy(mgid, tmpl, 16);
	mgid[4] = (uint8_t)((id->pkey | 0x8000) >> 8);
	mgid[5] = id->pkey & 0xff;
}

/* Send one MCMemberRecord request of mc's; an answered one (timeout_ms)
 * is found again by its TID */
static int sa_send(struct cm_mc *mc, uint8_t method, uint64_t mask, const struct sof_sa_mcmember *m,
		   bool answered)
{
	uint8_t mad[SOF_MAD_LEN];
	uint32_t tid = MC_TID_BASE | (++next_tid & ~MC_TID_BASE);

	sof_sa_req_init(mad, method, SOF_SA_ATTR_MCMEMBER_REC, 0, tid, mask);
	sof_sa_mcmember_pack(mad + SOF_SA_OFF_DATA, m);
	if (!answered)
		return cma_ib_sa_send(mc->id->sgid, mad, 0, 0);
	mc->tid = tid;
	sof_list_add(&waiting, &mc->wait_link);
	return cma_ib_sa_send(mc->id->sgid, mad, SA_TIMEOUT_MS, tid);
}

/* A SubnAdmGet of our port's record in the broadcast group (its answer:
 * bcast_answer) */
static int sa_bcast_get(struct cm_mc *mc)
{
	struct sof_sa_mcmember m = {0};

	bcast_mgid(mc->id, m.mgid);
	memcpy(m.port_gid, mc->id->sgid, 16);
	mc->bcast_wait = true;
	cm_trace("cma id %u: SA MCMemberRecord Get of the broadcast group", mc->id->handle);
	return sa_send(mc, SOF_SA_GET, COMP(SOF_MCMR_MGID) | COMP(SOF_MCMR_PORT_GID), &m, true);
}

/* A SubnAdmSet (join) or SubnAdmDelete (leave) of our port in mc's group. */
static int sa_mcmember(struct cm_mc *mc, uint8_t method)
{
	struct sof_sa_mcmember m = {.join_state = mc->join_state, .pkey = mc->id->pkey | 0x8000};
	uint64_t mask = COMP(SOF_MCMR_MGID) | COMP(SOF_MCMR_PORT_GID) | COMP(SOF_MCMR_JOIN_STATE);

	memcpy(m.mgid, mc->mcgid, 16);
	memcpy(m.port_gid, mc->id->sgid, 16);
	if (method == SOF_SA_SET) {
		/* what creates the group if the SA has none: the broadcast
		 * group's parameters, the id's Q_Key (the kernel's
		 * cma_join_ib_multicast; cma_set_qkey takes the broadcast
		 * group's for RDMA_PS_IPOIB) */
		const struct sof_sa_mcmember *b = &mc->bcast;

		m.sl = b->sl;
		m.flow_label = b->flow_label;
		m.tclass = b->tclass;
		m.qkey = mc->id->ps == (uint8_t)RDMA_PS_IPOIB ? b->qkey : mc->id->qkey;
		mask |= COMP(SOF_MCMR_QKEY) | COMP(SOF_MCMR_PKEY) | COMP(SOF_MCMR_SL) |
			COMP(SOF_MCMR_FLOW_LABEL) | COMP(SOF_MCMR_TCLASS);
		if (mc->id->ps == (uint8_t)RDMA_PS_IPOIB) {
			m.mtu_sel = b->mtu_sel;
			m.mtu = b->mtu;
			m.rate_sel = b->rate_sel;
			m.rate = b->rate;
			m.hop_limit = b->hop_limit;
			mask |= COMP(SOF_MCMR_MTU_SEL) | COMP(SOF_MCMR_MTU) |
				COMP(SOF_MCMR_RATE_SEL) | COMP(SOF_MCMR_RATE) |
				COMP(SOF_MCMR_HOP_LIMIT);
		}
	}
	cm_trace("cma id %u: SA MCMemberRecord %s SL %u", mc->id->handle,
		 method == SOF_SA_SET ? "Set" : "Delete", m.sl);
	return sa_send(mc, method, mask, &m, method == SOF_SA_SET);
}

static void unwait(struct cm_mc *mc)
{
	if (mc->tid || mc->cpi_wait) {
		sof_list_del(&mc->wait_link);
		mc->tid = 0;
		mc->cpi_wait = false;
	}
}

static struct cm_mc *waiting_mc(uint32_t tid)
{
	struct sof_link *l;

	for (l = waiting.next; l != &waiting; l = l->next) {
		struct cm_mc *mc = sof_container_of(l, struct cm_mc, wait_link);

		if (mc->tid == tid)
			return mc;
	}
	return NULL;
}

static void join_error(struct cm_mc *mc, int status)
{
	struct sof_cm_event ev;

	if (!mc->id->ch)
		return;
	cma_event_init(&ev, mc->id, RDMA_CM_EVENT_MULTICAST_ERROR, status, NULL);
	ev.mc_uid = mc->uid;
	cma_channel_send(mc->id->ch, &ev);
}

static int sendonly_join(struct cm_mc *mc);

/* The broadcast group's record (the Get's answer): the join goes on */
static void bcast_answer(struct cm_mc *mc, uint16_t status, const struct sof_sa_mcmember *m)
{
	int err;

	mc->bcast_wait = false;
	if (status || !m->mlid) {
		/* not a member: no IPoIB on this port and partition */
		cm_trace("cma id %u: no broadcast group record (status 0x%04x)", mc->id->handle,
			 status);
		join_error(mc, -EADDRNOTAVAIL);
		return;
	}
	mc->bcast = *m;
	if (mc->join_state == SOF_MC_JOIN_SEND_ONLY_FULL)
		err = sendonly_join(mc);
	else
		err = sa_mcmember(mc, SOF_SA_SET);
	if (err && err != -EAGAIN) {
		unwait(mc);
		join_error(mc, err);
	}
}

static void mc_sa_recv(const struct sof_mad_hdr *h, const uint8_t *rec)
{
	struct cm_mc *mc = waiting_mc((uint32_t)h->tid);
	struct sof_sa_mcmember m;
	struct sof_cm_event ev;

	if (!mc || h->method != SOF_MAD_METHOD_GET_RESP) /* a Set is answered by GetResp */
		return;
	unwait(mc);
	sof_sa_mcmember_unpack(rec, &m);
	if (mc->bcast_wait) {
		bcast_answer(mc, h->status, &m);
		return;
	}
	if (h->status || !m.mlid) {
		cm_trace("cma id %u: SA MCMemberRecord status 0x%04x", mc->id->handle, h->status);
		join_error(mc, -EADDRNOTAVAIL);
		return;
	}
	mc->joined = true;
	if (!mc->id->ch)
		return;
	cma_event_init(&ev, mc->id, RDMA_CM_EVENT_MULTICAST_JOIN, 0, NULL);
	ev.mc_uid = mc->uid;
	ev.ah_sgid_index = 0;
	memcpy(ev.ah_dgid, m.mgid, 16);
	ev.ah_dlid = m.mlid;
	ev.ah_sl = m.sl & 0xf;
	ev.ah_hop_limit = m.hop_limit;
	ev.ah_traffic_class = m.tclass;
	ev.ah_flow_label = m.flow_label;
	ev.param.qp_num = 0xffffff;
	ev.param.qkey = m.qkey;
	cm_trace("cma id %u: joined MLID 0x%04x Q_Key 0x%08x", mc->id->handle, m.mlid, m.qkey);
	cma_channel_send(mc->id->ch, &ev);
}

static void mc_sa_failed(uint64_t cookie, int status)
{
	struct cm_mc *mc = waiting_mc((uint32_t)cookie);

	if (!mc)
		return;
	unwait(mc);
	mc->bcast_wait = false;
	join_error(mc, -status);
}

/* A send-only join: sent when the SA takes them (0), refused
 * (-EOPNOTSUPP) when it does not, or waiting for its ClassPortInfo
 * (-EAGAIN: cpi_done goes on). */
static int sendonly_join(struct cm_mc *mc)
{
	uint32_t cap2 = 0;
	int err = cma_ib_sa_cap_mask2(mc->id->sgid, &cap2);

	if (err == -EAGAIN) {
		mc->cpi_wait = true;
		sof_list_add(&cpi_waiting, &mc->wait_link);
		return err;
	}
	if (err)
		return err;
	if (!(cap2 & SOF_SA_CAP2_SENDONLY_FULL)) {
		cm_trace("cma id %u: the SA takes no send-only full members", mc->id->handle);
		return -EOPNOTSUPP;
	}
	return sa_mcmember(mc, SOF_SA_SET);
}

static void mc_cpi_done(void)
{
	while (cpi_waiting.next != &cpi_waiting) {
		struct cm_mc *mc = sof_container_of(cpi_waiting.next, struct cm_mc, wait_link);
		int err;

		unwait(mc);
		err = sendonly_join(mc);
		if (err == -EAGAIN)
			break; /* asked again: the rest wait on */
		if (err) {
			unwait(mc);
			join_error(mc, err);
		}
	}
}

const struct cma_sa_ops cma_mc_sa_ops = {
    .recv = mc_sa_recv,
    .failed = mc_sa_failed,
    .cpi_done = mc_cpi_done,
};

void cma_mc_free(struct cm_mc *mc)
{
	unwait(mc);
	if (mc->joined)
		(void)sa_mcmember(mc, SOF_SA_DELETE);
	sof_list_del(&mc->link);
	free(mc);
}

CMA_OP(join)
{
	const struct sof_cm_mcast_req *r = rq->data;
	struct cm_id *id = cma_get_id(rq, r->id);
	struct sof_cm_event ev;
	struct cm_mc *mc;
	struct sof_link *l;
	uint8_t mgid[16];
	int err;

	(void)rp;
	if (!id)
		return -ENOENT;
	if (!cma_family_ok(r->addr.ss_family))
		return -EAFNOSUPPORT;
	if (!id->have_dev)
		return -EINVAL;
	cma_addr_gid(&r->addr, mgid);
	if (!sof_gid_is_mcast(mgid) && r->addr.ss_family != AF_IB)
		return -EINVAL;
	for (l = id->mcs.next; l != &id->mcs; l = l->next)
		if (!memcmp(sof_container_of(l, struct cm_mc, link)->mgid, mgid, 16))
			return -EADDRINUSE;
	mc = calloc(1, sizeof(*mc));
	if (!mc)
		return -ENOMEM;
	memcpy(mc->mgid, mgid, 16);
	mc->uid = r->uid;
	mc->id = id;
	/* send-only: the port sends to the group and gets none of its
	 * packets (the kernel's BIT(SENDONLY_FULLMEMBER_JOIN)) */
	mc->join_state = r->join_flags == RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER
			     ? SOF_MC_JOIN_SEND_ONLY_FULL
			     : SOF_MC_JOIN_FULL;
	sof_list_add(&id->mcs, &mc->link);
	if (id->ib) {
		ib_mgid(id, &r->addr, mc->mcgid);
		err = sa_bcast_get(mc);
		if (err)
			cma_mc_free(mc);
		return err;
	}
	cma_event_init(&ev, id, RDMA_CM_EVENT_MULTICAST_JOIN, 0, NULL);
	ev.mc_uid = r->uid;
	cma_event_set_ah(&ev, id);
	memcpy(ev.ah_dgid, mgid, 16);
	ev.param.qp_num = 0xffffff;
	ev.param.qkey = id->qkey;
	cma_channel_send(id->ch, &ev);
	return 0;
}

CMA_OP(leave)
{
	const struct sof_cm_mcast_req *r = rq->data;
	struct cm_id *id = cma_get_id(rq, r->id);
	struct sof_link *l;
	uint8_t mgid[16];

	(void)rp;
	if (!id)
		return -ENOENT;
	cma_addr_gid(&r->addr, mgid);
	for (l = id->mcs.next; l != &id->mcs; l = l->next) {
		struct cm_mc *mc = sof_container_of(l, struct cm_mc, link);

		if (!memcmp(mc->mgid, mgid, 16)) {
			cma_mc_free(mc);
			return 0;
		}
	}
	return -EADDRNOTAVAIL;
}
