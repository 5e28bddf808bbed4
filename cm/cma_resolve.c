/*
 * The address and route requests of an id: bind, resolve address (the
 * source from the routing table, among this device's GIDs), resolve
 * route (on RoCEv2 the path is the IP route, the MTU the port's), query,
 * and the options of an id. Resolution is synchronous here, but its
 * result is an event, as in the kernel.
 */
#include "cma.h"

#include <errno.h>
#include <infiniband/ib.h>
#include <string.h>

static int reply_query(struct cm_id *id, struct cm_reply *rp)
{
	cma_fill_query(id, &cma_rbuf.query);
	rp->len = sizeof(cma_rbuf.query);
	return 0;
}

/* The partition of an id on the InfiniBand port: pkey (0: the default
 * 0xffff) and its index in the port's table; -EADDRNOTAVAIL when the
 * port does not carry it (the kernel's cma_resolve_ib_dev and
 * cma_acquire_dev find no port with that P_Key). */
static int ib_pkey(struct cm_id *id, uint16_t pkey)
{
	int i = cm_pkey_index(pkey ? pkey : 0xffff);

	if (i < 0)
		return -EADDRNOTAVAIL;
	id->pkey = pkey ? pkey : 0xffff;
	id->pkey_index = (uint16_t)i;
	return 0;
}

/* The P_Key an AF_IB address names (sib_pkey), 0 for any other. */
static uint16_t sib_pkey(const struct sockaddr_storage *ss)
{
	if (ss->ss_family != AF_IB)
		return 0;
	return ntohs(((const struct sockaddr_ib *)(const void *)ss)->sib_pkey);
}

/* id, bound to an IP address of an IPoIB interface, is on the
 * InfiniBand port: its GID is the port's (ibgid), as the kernel's
 * rdma_cm takes the device of the address's net device, and its
 * partition that interface's (ib_pkey was called). */
static void ipoib_dev(struct cm_id *id, const uint8_t ibgid[16])
{
	memcpy(id->sgid, ibgid, 16);
	id->sgid_index = 0;
	id->have_dev = true;
	id->ib = true;
}

CMA_OP(bind)
{
	const struct sof_cm_addr_req *r = rq->data;
	struct cm_id *id = cma_get_id(rq, r->id);
	uint8_t gid[16];
	int err;

	if (!id)
		return -ENOENT;
	if (id->cstate != CMA_IDLE || id->bound)
		return -EINVAL;
	if (!cma_family_ok(r->src.ss_family))
		return -EAFNOSUPPORT;
	/* a loopback address binds like the wildcard, without a device
	 * (the kernel's rdma_bind_addr skips cma_acquire_dev_by_src_ip for
	 * cma_any_addr) */
	cma_addr_gid(&r->src, gid);
	if (r->ib && (cma_addr_is_wild(&r->src) || cma_ib_own_gid(gid)))
		return -EADDRNOTAVAIL;
	if (!r->ib && !cma_addr_is_wild(&r->src) && cma_gid_index(gid) < 0 &&
	    !(r->src.ss_family == AF_IB && cma_ib_gid(gid, NULL)))
		return -EADDRNOTAVAIL;
	/* the partition: the IPoIB interface's, or the AF_IB address's */
	if (r->ib || (r->src.ss_family == AF_IB && cma_ib_gid(gid, NULL))) {
		err = ib_pkey(id, r->ib ? r->pkey : sib_pkey(&r->src));
		if (err)
			return err;
	}
	err = cma_bind_port(id, &r->src);
	if (err)
		return err;
	if (r->ib)
		ipoib_dev(id, gid);
	cma_set_state(id, CMA_ADDR_BOUND);
	return reply_query(id, rp);
}

/* Whether ss names the source of a resolution: not the wildcard, and a
 * loopback address only where this device serves it (lo's GIDs); else the
 * source is picked as for an unbound id. */
static bool src_given(const struct sockaddr_storage *ss)
{
	uint8_t g[16];

	if (cma_addr_is_any(ss))
		return false;
	cma_addr_gid(ss, g);
	return ss->ss_family == AF_IB || !cma_gid_is_loopback(g) || cma_gid_index(g) >= 0;
}

/* An IP destination the library resolved through IPoIB (r->dgid, the
 * GID of its hardware address): the id goes on the InfiniBand port with
 * its IP addresses, src the IPoIB interface's address (sgid as an IP GID). */
static int resolve_ipoib(struct cm_id *id, const struct sof_cm_addr_req *r, const uint8_t sgid[16],
			 struct cm_reply *rp)
{
	uint8_t ibgid[16], dgid[16];
	int err = -EHOSTUNREACH;

	/* a multicast destination has no neighbour: the join maps it */
	cma_addr_gid(&r->dst, dgid);
	if (!sof_gid_is_mcast(dgid))
		memcpy(dgid, r->dgid, 16);
	if (cma_gid_is_any(dgid))
		goto fail;
	err = cma_ib_own_gid(ibgid);
	if (!err)
		err = ib_pkey(id, r->pkey);
	if (err)
		goto fail;
	if (!id->bound) {
		struct sockaddr_storage s;

		cma_addr_from_gid(&s, r->dst.ss_family, sgid, id->ps, 0);
		if (r->src.ss_family && !cma_addr_is_any(&r->src))
			s = r->src;
		err = cma_bind_port(id, &s);
		if (err)
			goto fail;
	}
	if (cma_addr_is_any(&id->src))
		cma_addr_from_gid(&id->src, id->src.ss_family, sgid, id->ps,
				  cma_addr_port(&id->src));
	ipoib_dev(id, ibgid);
	memcpy(id->dgid, dgid, 16);
	id->dst = r->dst;
	cma_set_state(id, CMA_ADDR_RESOLVED);
	cma_event(id, RDMA_CM_EVENT_ADDR_RESOLVED, 0, NULL);
	return reply_query(id, rp);
fail:
	cma_event(id, RDMA_CM_EVENT_ADDR_ERROR, err, NULL);
	return reply_query(id, rp);
}

CMA_OP(resolve_addr)
{
	const struct sof_cm_addr_req *r = rq->data;
	struct cm_id *id = cma_get_id(rq, r->id);
	uint8_t dgid[16], sgid[16];
	int err = 0, idx;
	bool loop, ib;

	if (!id)
		return -ENOENT;
	if (id->cstate != CMA_IDLE && id->cstate != CMA_ADDR_BOUND &&
	    id->cstate != CMA_ADDR_RESOLVED)
		return -EINVAL;
	if (!cma_family_ok(r->dst.ss_family) ||
	    (r->src.ss_family && !cma_family_ok(r->src.ss_family)))
		return -EAFNOSUPPORT;
	cma_addr_gid(&r->dst, dgid);
	/* A loopback or wildcard destination is this device, as the kernel's
	 * cma_resolve_loopback: the source a GID of ours (cma_bind_loopback),
	 * the destination GID the same. */
	loop = r->dst.ss_family != AF_IB && cma_gid_is_wild(dgid);
	if (r->dst.ss_family == AF_IB && cma_gid_is_any(dgid))
		return -EINVAL;
	/* the source: as bound, as given, or as the routing table says */
	if (id->bound && src_given(&id->src))
		cma_addr_gid(&id->src, sgid);
	else if (r->src.ss_family && src_given(&r->src))
		cma_addr_gid(&r->src, sgid);
	else if (r->dst.ss_family == AF_IB && cma_ib_on_subnet(dgid))
		err = cma_ib_own_gid(sgid); /* a GID of the IB port's subnet */
	else if (loop)
		err = cma_loopback_source(dgid, sgid);
	else
		err = cma_route_source(dgid, sgid);
	if (err)
		goto fail;
	if (r->ib && !loop)
		return resolve_ipoib(id, r, sgid, rp);
	if (loop)
		memcpy(dgid, sgid, 16);
	/* an AF_IB source on the InfiniBand port: GID 0 of sofib0 */
	ib = r->dst.ss_family == AF_IB && cma_ib_gid(sgid, NULL);
	idx = ib ? 0 : cma_gid_index(sgid);
	if (idx < 0 || sof_gid_is_v4(sgid) != sof_gid_is_v4(dgid)) {
		err = -EADDRNOTAVAIL;
		goto fail;
	}
	/* AF_IB: the destination's sib_pkey names the partition, as the
	 * kernel's cma_resolve_ib_dev takes it; else the bound one stays */
	if (ib && (sib_pkey(&r->dst) || !id->ib)) {
		err = ib_pkey(id, sib_pkey(&r->dst) ? sib_pkey(&r->dst) : id->pkey);
		if (err)
			goto fail;
	}
	if (!id->bound) {
		struct sockaddr_storage s;

		cma_addr_from_gid(&s, r->dst.ss_family, sgid, id->ps, 0);
		if (r->src.ss_family && !cma_addr_is_any(&r->src))
			s = r->src;
		err = cma_bind_port(id, &s);
		if (err)
			goto fail;
	}
	memcpy(id->sgid, sgid, 16);
	id->sgid_index = (uint32_t)idx;
	id->have_dev = true;
	id->ib = ib;
	if (cma_addr_is_any(&id->src)) {
		uint16_t port = cma_addr_port(&id->src);

		cma_addr_from_gid(&id->src, id->src.ss_family, sgid, id->ps, port);
	}
	memcpy(id->dgid, dgid, 16);
	id->dst = r->dst;
	cma_set_state(id, CMA_ADDR_RESOLVED);
	cma_event(id, RDMA_CM_EVENT_ADDR_RESOLVED, 0, NULL);
	return reply_query(id, rp);
fail:
	/* asynchronous as in the kernel: the call worked, the event tells */
	cma_event(id, RDMA_CM_EVENT_ADDR_ERROR, err, NULL);
	return reply_query(id, rp);
}

CMA_OP(resolve_route)
{
	const struct sof_cm_id_req *r = rq->data;
	struct cm_id *id = cma_get_id(rq, r->id);

	(void)rp;
	if (!id)
		return -ENOENT;
	if (id->cstate != CMA_ADDR_RESOLVED && id->cstate != CMA_ROUTE_RESOLVED)
		return -EINVAL;
	if (id->ib)
		return cma_ib_resolve_route(id);
	/* RoCEv2: the path is the IP route; the MTU is the port's */
	id->mtu = (uint8_t)cm_host->dev->active_mtu;
	id->have_route = true;
	cma_set_state(id, CMA_ROUTE_RESOLVED);
	cma_event(id, RDMA_CM_EVENT_ROUTE_RESOLVED, 0, NULL);
	return 0;
}

CMA_OP(query)
{
	const struct sof_cm_id_req *r = rq->data;
	struct cm_id *id = cma_get_id(rq, r->id);

	if (!id)
		return -ENOENT;
	return reply_query(id, rp);
}

CMA_OP(set_option)
{
	const struct sof_cm_option_req *r = rq->data;
	struct cm_id *id = cma_get_id(rq, r->id);
	int v = 0;

	(void)rp;
	if (!id)
		return -ENOENT;
	if (r->len > sizeof(r->value))
		return -EINVAL;
	if (r->len == sizeof(int))
		memcpy(&v, r->value, sizeof(v));
	if (r->level == RDMA_OPTION_ID) {
		switch (r->optname) {
		case RDMA_OPTION_ID_TOS:
			if (r->len != 1)
				return -EINVAL;
			id->tos = r->value[0];
			id->tos_set = true;
			return 0;
		case RDMA_OPTION_ID_REUSEADDR:
			if (r->len != sizeof(int))
				return -EINVAL;
			if (id->bound && id->cstate != CMA_IDLE && id->cstate != CMA_ADDR_BOUND)
				return -EINVAL;
			id->reuseaddr = v != 0;
			return 0;
		case RDMA_OPTION_ID_AFONLY:
			if (r->len != sizeof(int) || id->bound)
				return -EINVAL;
			id->afonly = v != 0;
			id->afonly_set = true;
			return 0;
		case RDMA_OPTION_ID_ACK_TIMEOUT:
			if (r->len != 1 || r->value[0] > 31)
				return -EINVAL;
			id->ack_timeout = r->value[0];
			return 0;
		}
	} else if (r->level == RDMA_OPTION_IB && r->optname == RDMA_OPTION_IB_PATH) {
		/* a path the user resolved: the route is what we would make */
		if (r->len < sizeof(struct ibv_path_data) || id->cstate != CMA_ADDR_RESOLVED)
			return -EINVAL;
		if (id->ib)
			return cma_ib_path_set(id, &((const struct ibv_path_data *)r->value)->path);
		id->mtu = (uint8_t)cm_host->dev->active_mtu;
		id->have_route = true;
		cma_set_state(id, CMA_ROUTE_RESOLVED);
		cma_event(id, RDMA_CM_EVENT_ROUTE_RESOLVED, 0, NULL);
		return 0;
	}
	return -ENOSYS;
}
