/*
 * Where a connected QP's peer is, for the two socket layers over verbs
 * (rsockets in rdmacm/rsocket.c, SDP in sdp/sdp_conn.c): a peer on another
 * host has its QP's transport run in this process (verbs/tp_host.c), so
 * polling the CQ moves it and a spin keeps the CPU; one on this host, or
 * every QP under SOFTOFED_ENGINE=daemon, runs in the daemon, which must
 * get the CPU. Header-only, on the public verbs calls alone, so that
 * libsdp.so (linked only against the public librdmacm and libibverbs)
 * shares it without linking any of our internals.
 */
#ifndef SOF_PEER_H
#define SOF_PEER_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Whether QP's peer is on another host: its address is none of the
 * port's GIDs (or LIDs, on InfiniBand without a GRH). */
static inline bool sof_peer_remote(struct ibv_qp *qp, struct ibv_context *ctx, uint8_t port_num)
{
	const char *engine = getenv("SOFTOFED_ENGINE");
	struct ibv_qp_init_attr init;
	struct ibv_port_attr port;
	struct ibv_qp_attr attr;
	union ibv_gid gid;

	if ((engine && !strcmp(engine, "daemon")) || !qp ||
	    ibv_query_qp(qp, &attr, IBV_QP_AV, &init) || ibv_query_port(ctx, port_num, &port))
		return false;
	if (!attr.ah_attr.is_global)
		return attr.ah_attr.dlid < port.lid ||
		       attr.ah_attr.dlid >= port.lid + (1u << port.lmc);
	for (int i = 0; i < port.gid_tbl_len; i++)
		if (!ibv_query_gid(ctx, port_num, i, &gid) &&
		    !memcmp(&gid, &attr.ah_attr.grh.dgid, sizeof(gid)))
			return false;
	return true;
}

#endif
