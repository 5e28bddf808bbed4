/*
 * Flow steering: ibv_create_flow and ibv_destroy_flow (the verbs_context
 * ops behind rdma-core's inline wrappers). The specs of struct
 * ibv_flow_attr (ETH, IPV4, IPV4_EXT, IPV6, TCP, UDP) become one rule
 * (struct sof_flow_rule) the daemon matches against every frame of the
 * served interfaces (daemon/raw.c); matching frames go whole into the
 * receive queue of the RAW_PACKET QP. A spec type or flag we cannot honour
 * fails with EOPNOTSUPP, a malformed attribute with EINVAL, as rdma-core's
 * kernel command does.
 */
#include "sofv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The spec at p (at most room bytes: no spec is larger than the union
 * struct ibv_flow_spec) into r; its size in *size. 0 or an errno. Specs
 * follow each other at any 4-byte offset: each is copied out before it is
 * read. */
static int flow_spec(struct sof_flow_rule *r, const uint8_t *p, size_t room, size_t *size)
{
	struct ibv_flow_spec spec, *s = &spec;

	if (room < sizeof(s->hdr))
		return EINVAL;
	memcpy(&s->hdr, p, sizeof(s->hdr));
	if (s->hdr.size < sizeof(s->hdr) || s->hdr.size > room)
		return EINVAL;
	*size = s->hdr.size;
	memset(&spec, 0, sizeof(spec));
	memcpy(&spec, p, *size < sizeof(spec) ? *size : sizeof(spec));
	switch (s->hdr.type) {
	case IBV_FLOW_SPEC_ETH:
		if (s->hdr.size < sizeof(s->eth))
			return EINVAL;
		r->layers |= SOF_FLOW_ETH;
		memcpy(r->dmac, s->eth.val.dst_mac, 6);
		memcpy(r->dmac_m, s->eth.mask.dst_mac, 6);
		memcpy(r->smac, s->eth.val.src_mac, 6);
		memcpy(r->smac_m, s->eth.mask.src_mac, 6);
		r->ether_type = s->eth.val.ether_type;
		r->ether_type_m = s->eth.mask.ether_type;
		r->vlan = s->eth.val.vlan_tag;
		r->vlan_m = s->eth.mask.vlan_tag;
		return 0;
	case IBV_FLOW_SPEC_IPV4:
		if (s->hdr.size < sizeof(s->ipv4))
			return EINVAL;
		r->layers |= SOF_FLOW_IPV4;
		r->src4 = s->ipv4.val.src_ip;
		r->src4_m = s->ipv4.mask.src_ip;
		r->dst4 = s->ipv4.val.dst_ip;
		r->dst4_m = s->ipv4.mask.dst_ip;
		return 0;
	case IBV_FLOW_SPEC_IPV4_EXT:
		if (s->hdr.size < sizeof(s->ipv4_ext))
			return EINVAL;
		if (s->ipv4_ext.mask.ttl || s->ipv4_ext.mask.flags)
			return EOPNOTSUPP;
		r->layers |= SOF_FLOW_IPV4;
		r->src4 = s->ipv4_ext.val.src_ip;
		r->src4_m = s->ipv4_ext.mask.src_ip;
		r->dst4 = s->ipv4_ext.val.dst_ip;
		r->dst4_m = s->ipv4_ext.mask.dst_ip;
		r->proto4 = s->ipv4_ext.val.proto;
		r->proto4_m = s->ipv4_ext.mask.proto;
		r->tos4 = s->ipv4_ext.val.tos;
		r->tos4_m = s->ipv4_ext.mask.tos;
		return 0;
	case IBV_FLOW_SPEC_IPV6:
		if (s->hdr.size < sizeof(s->ipv6))
			return EINVAL;
		if (s->ipv6.mask.flow_label || s->ipv6.mask.next_hdr ||
		    s->ipv6.mask.traffic_class || s->ipv6.mask.hop_limit)
			return EOPNOTSUPP;
		r->layers |= SOF_FLOW_IPV6;
		memcpy(r->src6, s->ipv6.val.src_ip, 16);
		memcpy(r->src6_m, s->ipv6.mask.src_ip, 16);
		memcpy(r->dst6, s->ipv6.val.dst_ip, 16);
		memcpy(r->dst6_m, s->ipv6.mask.dst_ip, 16);
		return 0;
	case IBV_FLOW_SPEC_TCP:
	case IBV_FLOW_SPEC_UDP:
		if (s->hdr.size < sizeof(s->tcp_udp))
			return EINVAL;
		if (r->layers & (SOF_FLOW_TCP | SOF_FLOW_UDP))
			return EINVAL;
		r->layers |= s->hdr.type == IBV_FLOW_SPEC_TCP ? SOF_FLOW_TCP : SOF_FLOW_UDP;
		r->sport = s->tcp_udp.val.src_port;
		r->sport_m = s->tcp_udp.mask.src_port;
		r->dport = s->tcp_udp.val.dst_port;
		r->dport_m = s->tcp_udp.mask.dst_port;
		return 0;
	default:
		return EOPNOTSUPP;
	}
}

static struct ibv_flow *sofv_create_flow(struct ibv_qp *qp, struct ibv_flow_attr *attr)
{
	struct sofv_context *s;
	struct sof_flow_req req;
	struct sof_flow_rep rep;
	struct ibv_flow *f;
	const uint8_t *p;
	size_t room;
	int err;

	if (!qp || !attr || attr->comp_mask || attr->port != 1) {
		errno = EINVAL;
		return NULL;
	}
	if (qp->qp_type != IBV_QPT_RAW_PACKET) {
		errno = EINVAL;
		return NULL;
	}
	/* IBV_FLOW_ATTR_FLAGS_DONT_TRAP and EGRESS: not offered */
	if (attr->flags || attr->type > IBV_FLOW_ATTR_SNIFFER) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	memset(&req, 0, sizeof(req));
	req.qpn = qp->qp_num;
	req.rule.type = attr->type;
	req.rule.priority = attr->priority;
	/* the specs are walked by their own sizes, attr->size not read:
	 * libibverbs does so (pyverbs passes the size of the bare struct) */
	p = (const uint8_t *)(attr + 1);
	room = (size_t)attr->num_of_specs * sizeof(struct ibv_flow_spec);
	for (uint8_t i = 0; i < attr->num_of_specs; i++) {
		size_t size = 0;

		err = flow_spec(&req.rule, p, room, &size);
		if (err) {
			errno = err;
			return NULL;
		}
		room -= size;
		p += size;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		errno = ENOMEM;
		return NULL;
	}
	s = to_sctx(qp->context);
	err = -sofv_rpc(s, SOF_OP_CREATE_FLOW, &req, sizeof(req), NULL, 0, &rep, sizeof(rep), NULL,
			NULL);
	if (err) {
		free(f);
		errno = err;
		return NULL;
	}
	f->context = qp->context;
	f->handle = rep.handle;
	return f;
}

static int sofv_destroy_flow(struct ibv_flow *f)
{
	struct sof_flow_rep req = {0};
	int err;

	if (!f)
		return EINVAL;
	req.handle = f->handle;
	err = -sofv_rpc(to_sctx(f->context), SOF_OP_DESTROY_FLOW, &req, sizeof(req), NULL, 0, NULL,
			0, NULL, NULL);
	if (err)
		return err;
	free(f);
	return 0;
}

void sofv_flow_set_ops(struct verbs_context *v)
{
	v->ibv_create_flow = sofv_create_flow;
	v->ibv_destroy_flow = sofv_destroy_flow;
}
