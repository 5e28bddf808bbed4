/*
 * The MAD layer: QP1 (the GSI) on the transport's port — a receive hook
 * the transport calls for each datagram to QP1, and UD sends through
 * tp_ud_send —, agents by management class, the loopback queue for MADs
 * between agents of this host, transaction IDs. See mad.h.
 */
#include "mad.h"

#include "tp.h"

#include "sof_util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MAX_AGENTS 16
/* MADs for this host waiting for the main loop; beyond it a MAD is lost,
 * as on a congested wire (the senders retransmit). */
#define LOOPBACK_MAX 4096

struct agent {
	uint8_t mgmt_class, class_version;
	sofd_mad_recv_fn fn;
};

struct loop_mad {
	struct loop_mad *next;
	struct sofd_mad_addr from;
	uint8_t mad[SOF_MAD_LEN];
};

static struct agent agents[MAX_AGENTS];
static int nagents;
static uint32_t tid_seq;
static struct loop_mad *loop_head, **loop_tail = &loop_head;
static uint32_t loop_len;

static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static uint32_t get32(const uint8_t *p) { return (uint32_t)get16(p) << 16 | get16(p + 2); }
static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}
static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

/* IBA 13.4.3, figure 146 */
void sof_mad_hdr_get(const uint8_t *mad, struct sof_mad_hdr *h)
{
	h->base_version = mad[0];
	h->mgmt_class = mad[1];
	h->class_version = mad[2];
	h->method = mad[3];
	h->status = get16(mad + 4);
	h->class_specific = get16(mad + 6);
	h->tid = (uint64_t)get32(mad + 8) << 32 | get32(mad + 12);
	h->attr_id = get16(mad + 16);
	h->attr_mod = get32(mad + 20);
}

void sof_mad_hdr_put(uint8_t *mad, const struct sof_mad_hdr *h)
{
	mad[0] = h->base_version;
	mad[1] = h->mgmt_class;
	mad[2] = h->class_version;
	mad[3] = h->method;
	put16(mad + 4, h->status);
	put16(mad + 6, h->class_specific);
	put32(mad + 8, (uint32_t)(h->tid >> 32));
	put32(mad + 12, (uint32_t)h->tid);
	put16(mad + 16, h->attr_id);
	put16(mad + 18, 0);
	put32(mad + 20, h->attr_mod);
}

/* ---- QP1, the GSI (IBA 13.5): the daemon's own UD QP ------------------------------ */

static uint32_t gsi_psn;

static int gsi_send(const struct sofd_mad_addr *to, const uint8_t *mad)
{
	struct tp_path path;

	memset(&path, 0, sizeof(path));
	memcpy(path.sgid, to->sgid, 16);
	memcpy(path.dgid, to->dgid, 16);
	path.tclass = to->traffic_class;
	path.hop_limit = to->hop_limit ? to->hop_limit : 64;
	path.flow_label = to->flow_label;
	path.sport = tp_flow_port(!sof_gid_is_v4(to->dgid), SOF_GSI_QPN, to->remote_qpn);
	return tp_ud_send(&path, SOF_GSI_QPN, to->remote_qpn, to->remote_qkey,
			  to->pkey ? to->pkey : 0xffff, &gsi_psn, mad, SOF_MAD_LEN);
}

/* The transport's hook for QP1: a UD SEND with the GSI's Q_Key (IBA
 * 13.5.1) from the default partition. */
static void gsi_input(const struct roce_hdr *h, const uint8_t *payload, uint32_t paylen,
		      const struct roce_addr *a, bool from_net)
{
	struct sofd_mad_addr from;

	(void)from_net;
	if (h->opcode != ROCE_UD_SEND_ONLY) {
		tp_drop_add(SOF_DROP_qp_type);
		return;
	}
	if ((h->pkey & 0x7fff) != 0x7fff) {
		tp_drop_add(SOF_DROP_pkey);
		return;
	}
	if (h->qkey != SOF_GSI_QKEY) {
		tp_drop_add(SOF_DROP_qkey);
		return;
	}
	memset(&from, 0, sizeof(from));
	memcpy(from.sgid, a->dst, 16);
	memcpy(from.dgid, a->src, 16);
	from.remote_qpn = h->sqpn;
	from.remote_qkey = h->qkey;
	from.pkey = h->pkey;
	from.hop_limit = 64;
	sofd_mad_input(payload, paylen, &from);
}

/* ---- agents ------------------------------------------------------------------------ */

int sofd_mad_register(uint8_t mgmt_class, uint8_t class_version, sofd_mad_recv_fn fn)
{
	/* QP1's datagrams come here from the first agent on */
	tp_recv_hook(TP_HOOK_QP1, gsi_input);
	for (int i = 0; i < nagents; i++)
		if (agents[i].mgmt_class == mgmt_class && agents[i].class_version == class_version)
			return -EBUSY;
	if (nagents == MAX_AGENTS)
		return -ENOSPC;
	agents[nagents] = (struct agent){mgmt_class, class_version, fn};
	return ++nagents;
}

uint64_t sofd_mad_new_tid(int agent)
{
	if (!tid_seq)
		tid_seq = sof_random32();
	return (uint64_t)(uint32_t)agent << 32 | ++tid_seq;
}

static void dispatch(const uint8_t *mad, const struct sofd_mad_addr *from)
{
	struct sof_mad_hdr h;

	sof_mad_hdr_get(mad, &h);
	/* IBA 13.4.3: a base version we do not speak is not ours to parse */
	if (h.base_version != SOF_MAD_BASE_VERSION) {
		tp_drop_add(SOF_DROP_mad);
		return;
	}
	for (int i = 0; i < nagents; i++) {
		if (agents[i].mgmt_class == h.mgmt_class &&
		    agents[i].class_version == h.class_version) {
			tp_count_add(SOF_CNT_mad_rx, 1);
			agents[i].fn(mad, from);
			return;
		}
	}
	/* No agent: IBA 13.5.3.1 lets the GSI drop what it cannot serve. */
	tp_drop_add(SOF_DROP_mad);
}

void sofd_mad_input(const uint8_t *payload, uint32_t len, const struct sofd_mad_addr *from)
{
	uint8_t mad[SOF_MAD_LEN];

	/* A GSI datagram is exactly one MAD (IBA 13.4.2); copy it first. */
	if (len != SOF_MAD_LEN) {
		tp_drop_add(SOF_DROP_mad);
		return;
	}
	memcpy(mad, payload, SOF_MAD_LEN);
	dispatch(mad, from);
}

int sofd_mad_send(const struct sofd_mad_addr *to, const uint8_t *mad)
{
	struct loop_mad *m;

	tp_count_add(SOF_CNT_mad_tx, 1);
	if (!tp_gid_local(to->dgid))
		return gsi_send(to, mad);
	if (loop_len >= LOOPBACK_MAX)
		return -ENOBUFS;
	m = malloc(sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->next = NULL;
	/* as the receiver will see it: the GIDs swap */
	memcpy(m->from.sgid, to->dgid, 16);
	memcpy(m->from.dgid, to->sgid, 16);
	m->from.remote_qpn = SOF_GSI_QPN;
	m->from.remote_qkey = SOF_GSI_QKEY;
	m->from.pkey = to->pkey;
	m->from.traffic_class = to->traffic_class;
	m->from.hop_limit = to->hop_limit;
	m->from.flow_label = to->flow_label;
	memcpy(m->mad, mad, SOF_MAD_LEN);
	*loop_tail = m;
	loop_tail = &m->next;
	loop_len++;
	return 0;
}

bool sofd_mad_loopback_pending(void) { return loop_head != NULL; }

bool sofd_mad_loopback_run(void)
{
	/* only what is queued now: what these MADs make waits for the next
	 * round, so a ping-pong of agents cannot starve the loop */
	uint32_t n = loop_len;
	bool any = false;

	while (n-- && loop_head) {
		struct loop_mad *m = loop_head;

		loop_head = m->next;
		if (!loop_head)
			loop_tail = &loop_head;
		loop_len--;
		dispatch(m->mad, &m->from);
		free(m);
		any = true;
	}
	return any;
}
