/*
 * Address and route resolution: the steps of an id that end with an
 * event (ADDR_RESOLVED, ROUTE_RESOLVED), which a synchronous id waits for
 * (sofcm_complete, event.c). Above event.c, since the events they wait for
 * may make and move ids (id.c).
 */
#include "sof_proto.h"
#include "sofcm.h"

#include <string.h>

SOFCM_EXPORT int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr,
				   struct sockaddr *dst_addr, int timeout_ms)
{
	socklen_t dlen = sofcm_addrlen(dst_addr), slen = sofcm_addrlen(src_addr);
	struct sof_cm_query_rep q;
	struct sof_cm_addr_req req;
	int ret;

	if (!id || !dlen || (src_addr && !slen))
		return sofcm_err(EINVAL);
	memset(&req, 0, sizeof(req));
	req.id = sofcm_id(id)->handle;
	req.timeout_ms = timeout_ms > 0 ? (uint32_t)timeout_ms : 0;
	if (slen)
		memcpy(&req.src, src_addr, slen);
	memcpy(&req.dst, dst_addr, dlen);
	ret = sofcm_rpc(SOF_OP_CM_RESOLVE_ADDR, &req, sizeof(req), &q, sizeof(q));
	if (!ret)
		ret = sofcm_apply_query(sofcm_id(id), &q);
	if (ret)
		return sofcm_err(-ret);
	memset(&id->route.addr.dst_storage, 0, sizeof(id->route.addr.dst_storage));
	memcpy(&id->route.addr.dst_storage, dst_addr, dlen);
	return sofcm_complete(sofcm_id(id));
}

SOFCM_EXPORT int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	int ret;

	if (!id)
		return sofcm_err(EINVAL);
	ret = sofcm_rpc_id(SOF_OP_CM_RESOLVE_ROUTE, sofcm_id(id)->handle,
			   timeout_ms > 0 ? (uint32_t)timeout_ms : 0, NULL, 0);
	if (ret)
		return sofcm_err(-ret);
	return sofcm_complete(sofcm_id(id));
}
