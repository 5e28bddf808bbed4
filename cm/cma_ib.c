/*
 * The route of an id on the InfiniBand port (sofib0): a path by LID, as
 * the kernel's rdma_cm gets it from the SA (IBA 15.2.5.16, PathRecord).
 * rdma_resolve_route sends a SubnAdmGet(PathRecord) for the id's SGID and
 * DGID to the SM the port knows (its SM LID and SL), through the MAD
 * layer as an SA client; the answer's DLID, SLID, SL and MTU become the
 * id's path (its PacketLifeTime the QP's local ACK timeout, + 1, and
 * the CM's time to wait for answers, cm.h) and ROUTE_RESOLVED, a time-out or an empty answer
 * ROUTE_ERROR. A path the user resolved (RDMA_OPTION_IB_PATH, an
 * ibv_path_record) is taken as it is. An id whose request is pending is
 * found again by the TID's low half, its handle: an id destroyed
 * meanwhile is simply not found. The SA header and the PathRecord are
 * mad/sa_rec.c's. The same SA agent carries the multicast joins'
 * MCMemberRecords (cma_mcast.c) and the ClassPortInfo Get that tells
 * whether the SA takes send-only full members (CapabilityMask2), told
 * apart by attribute.
 */
#include "cma.h"
#include "sa.h"

#include <errno.h>
#include <infiniband/sa.h>
#include <infiniband/verbs.h>
#include <string.h>

#define SA_TIMEOUT_MS 500
#define SA_RETRIES 3
#define COMP(c) (1ull << (c)) /* a ComponentMask bit */
#define CPI_TID 0x7fffff00u   /* the ClassPortInfo Get's (ids' handles are below) */
/* how long an SA's ClassPortInfo is believed: an SM restarted on the
 * same LID may be another (the kernel asks again on its SM_CHANGE and
 * CLIENT_REREGISTER events, which we do not see here) */
#define CPI_KEEP_NS (5 * 1000000000ull)

static struct {
	uint32_t agent; /* 0: not registered yet */
	const struct cma_sa_ops *mc; /* MCMemberRecord answers go there */
	/* ClassPortInfo: CapabilityMask2 of the SA at cpi_lid (0: none
	 * known), cpi_failed when that SA did not answer (used once) */
	uint16_t cpi_lid, cpi_asked; /* cpi_asked: the SM LID asked, 0 none */
	uint32_t cap_mask2;
	bool cpi_failed;
	uint64_t cpi_at; /* when it answered (sof_now_ns) */
} sa;

void cma_ib_sa_mcmember_ops(const struct cma_sa_ops *ops)
{
	sa.mc = ops;
}

static void route_done(struct cm_id *id, uint16_t dlid, uint16_t slid, uint8_t sl, uint8_t mtu,
		       uint8_t life)
{
	id->dlid = dlid;
	id->slid = slid;
	id->sl = sl & 0xf;
	id->mtu = mtu;
	id->pkt_life = life & 0x3f;
	id->have_route = true;
	cma_set_state(id, CMA_ROUTE_RESOLVED);
	cma_event(id, RDMA_CM_EVENT_ROUTE_RESOLVED, 0, NULL);
}

/* The SA's ClassPortInfo (rec), or none (NULL: an error status or no
 * answer); the joins waiting for it go on. */
static void cpi_answer(const uint8_t *rec)
{
	sa.cpi_lid = sa.cpi_asked;
	sa.cpi_asked = 0;
	sa.cap_mask2 = rec ? sof_sa_cpi_cap_mask2(rec) : 0;
	sa.cpi_failed = !rec;
	sa.cpi_at = sof_now_ns();
	cm_trace("SA at LID 0x%04x: ClassPortInfo %s, CapabilityMask2 0x%07x", sa.cpi_lid,
		 rec ? "answered" : "not answered", sa.cap_mask2);
	if (sa.mc)
		sa.mc->cpi_done();
}

/* The id waiting for the answer whose TID is tid, if it still waits. */
static struct cm_id *waiting_id(uint64_t tid)
{
	struct cm_id *id = sof_hmap_get(&cma.ids, (uint32_t)tid);

	if (!id || !id->ib || id->have_route ||
	    (id->cstate != CMA_ADDR_RESOLVED && id->cstate != CMA_ROUTE_RESOLVED))
		return NULL;
	return id;
}

static void sa_recv(void *ctx, uint32_t agent, const uint8_t *msg, uint32_t len,
		    const struct sofd_mad_addr *from)
{
	struct sof_mad_hdr h;
	struct sof_sa_path pr;
	struct cm_id *id;

	(void)ctx;
	(void)agent;
	(void)from;
	if (len < SOF_MAD_LEN)
		return;
	sof_mad_hdr_get(msg, &h);
	if (h.attr_id == SOF_SA_ATTR_MCMEMBER_REC) {
		if (sa.mc)
			sa.mc->recv(&h, msg + SOF_SA_OFF_DATA);
		return;
	}
	if (h.attr_id == SOF_SA_ATTR_CLASS_PORT_INFO) {
		if (sa.cpi_asked && h.method == SOF_MAD_METHOD_GET_RESP)
			cpi_answer(h.status ? NULL : msg + SOF_SA_OFF_DATA);
		return;
	}
	id = waiting_id(h.tid);
	if (!id || h.attr_id != SOF_SA_ATTR_PATH_REC)
		return;
	sof_sa_path_unpack(msg + SOF_SA_OFF_DATA, &pr);
	if (h.status || !pr.dlid) {
		cm_trace("cma id %u: SA PathRecord status 0x%04x", id->handle, h.status);
		cma_event(id, RDMA_CM_EVENT_ROUTE_ERROR, -EHOSTUNREACH, NULL);
		return;
	}
	route_done(id, pr.dlid, pr.slid, pr.sl, pr.mtu, pr.life);
}

static void sa_send_failed(void *ctx, uint32_t agent, uint64_t cookie, int status,
			   const uint8_t *hdr, const struct sofd_mad_addr *to)
{
	struct cm_id *id;
	struct sof_mad_hdr h;

	(void)ctx;
	(void)agent;
	(void)to;
	sof_mad_hdr_get(hdr, &h);
	if (h.attr_id == SOF_SA_ATTR_MCMEMBER_REC) {
		if (sa.mc)
			sa.mc->failed(cookie, status);
		return;
	}
	if (h.attr_id == SOF_SA_ATTR_CLASS_PORT_INFO) {
		if (sa.cpi_asked)
			cpi_answer(NULL);
		return;
	}
	id = waiting_id(cookie);
	if (id)
		cma_event(id, RDMA_CM_EVENT_ROUTE_ERROR, -status, NULL);
}

static const struct sofd_mad_agent_ops sa_ops = {
    .recv = sa_recv,
    .send_failed = sa_send_failed,
};

static int sa_agent(void)
{
	struct sofd_mad_reg reg = {
	    .qpn = SOF_MAD_QP1,
	    .mgmt_class = SOF_MCLASS_SA,
	    .class_version = SOF_SA_CLASS_VERSION,
	    .rmpp_version = SOF_SA_RMPP_VERSION,
	};

	if (sa.agent)
		return 0;
	return sofd_mad_agent_register(&reg, &sa_ops, &sa, &sa.agent);
}

int cma_ib_sa_send(const uint8_t sgid[16], const uint8_t *mad, uint32_t timeout_ms,
		   uint64_t cookie)
{
	struct sof_ib_port port;
	struct sofd_mad_addr to;
	int err;

	if (!cma_ib_gid(sgid, &port) || !port.sm_lid)
		return -ENETUNREACH;
	err = sa_agent();
	if (err)
		return err;
	memset(&to, 0, sizeof(to));
	memcpy(to.sgid, sgid, 16);
	to.remote_qpn = SOF_GSI_QPN;
	to.remote_qkey = SOF_GSI_QKEY;
	to.pkey = 0xffff;
	to.lid = port.sm_lid;
	to.sl = port.sm_sl;
	to.ib = true;
	to.no_grh = true;
	return sofd_mad_agent_send(&sa, sa.agent, mad, SOF_MAD_LEN, &to, timeout_ms,
				   timeout_ms ? SA_RETRIES : 0, cookie);
}

int cma_ib_sa_cap_mask2(const uint8_t sgid[16], uint32_t *cap_mask2)
{
	struct sof_ib_port port;
	uint8_t mad[SOF_MAD_LEN];
	int err;

	if (!cma_ib_gid(sgid, &port) || !port.sm_lid)
		return -ENETUNREACH;
	if (sa.cpi_lid == port.sm_lid && !sa.cpi_asked && sof_now_ns() - sa.cpi_at < CPI_KEEP_NS) {
		*cap_mask2 = sa.cap_mask2;
		if (sa.cpi_failed)
			sa.cpi_lid = 0;
		return 0;
	}
	if (sa.cpi_asked)
		return -EAGAIN;
	sof_sa_req_init(mad, SOF_SA_GET, SOF_SA_ATTR_CLASS_PORT_INFO, 0, CPI_TID, 0);
	err = cma_ib_sa_send(sgid, mad, SA_TIMEOUT_MS, CPI_TID);
	if (err)
		return err;
	sa.cpi_asked = port.sm_lid;
	return -EAGAIN;
}

int cma_ib_resolve_route(struct cm_id *id)
{
	/* the id's partition (a child interface's P_Key): the path must be in it */
	struct sof_sa_path pr = {.numb_path = 1, .pkey = id->pkey};
	uint8_t mad[SOF_MAD_LEN];

	id->have_route = false;
	sof_sa_req_init(mad, SOF_SA_GET, SOF_SA_ATTR_PATH_REC, 0, id->handle,
			COMP(SOF_PR_DGID) | COMP(SOF_PR_SGID) | COMP(SOF_PR_NUMB_PATH) |
			    COMP(SOF_PR_PKEY));
	memcpy(pr.dgid, id->dgid, 16);
	memcpy(pr.sgid, id->sgid, 16);
	sof_sa_path_pack(mad + SOF_SA_OFF_DATA, &pr);
	cm_trace("cma id %u: SA PathRecord Get", id->handle);
	return cma_ib_sa_send(id->sgid, mad, SA_TIMEOUT_MS, id->handle);
}

int cma_ib_path_set(struct cm_id *id, const struct ibv_path_record *p)
{
	if (!p->dlid || (p->mtu & 0x3f) < IBV_MTU_256 || (p->mtu & 0x3f) > IBV_MTU_4096)
		return -EINVAL;
	route_done(id, be16toh(p->dlid), be16toh(p->slid), (uint8_t)(be16toh(p->qosclass_sl) & 0xf),
		   p->mtu & 0x3f, p->packetlifetime & 0x3f);
	return 0;
}
