/*
 * The MAD layer: QP1 (the GSI) on the transport's port — a receive hook
 * the transport calls for each datagram to QP1, and UD sends through
 * tp_ud_send —, agents by management class, the loopback queue for MADs
 * between agents of this host, transaction IDs. See mad.h.
 */
#include "mad.h"
#include "mad_int.h"

#include "tp.h"
#include "tp_ib.h"

#include "sof_util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* MADs for this host waiting for the main loop; beyond it a MAD is lost,
 * as on a congested wire (the senders retransmit). */
#define LOOPBACK_MAX 4096

struct loop_mad {
	struct loop_mad *next;
	uint8_t qpn; /* QP1, or QP0: an SMP this node's SMI answered itself */
	struct sofd_mad_addr from;
	uint8_t mad[SOF_MAD_LEN];
};

static struct agent *agent_list;
static const struct sofd_mad_smi_ops *smi; /* QP0 of an InfiniBand port, or NULL */
static uint32_t nagents, next_agent_id, npending;
static struct msend *send_list;
static uint32_t tid_seq;
static struct loop_mad *loop_head, **loop_tail = &loop_head;
static uint32_t loop_len;


/* IBA 13.4.3, figure 146 */
void sof_mad_hdr_get(const uint8_t *mad, struct sof_mad_hdr *h)
{
	h->base_version = mad[0];
	h->mgmt_class = mad[1];
	h->class_version = mad[2];
	h->method = mad[3];
	h->status = sof_get16(mad + 4);
	h->class_specific = sof_get16(mad + 6);
	h->tid = (uint64_t)sof_get32(mad + 8) << 32 | sof_get32(mad + 12);
	h->attr_id = sof_get16(mad + 16);
	h->attr_mod = sof_get32(mad + 20);
}

void sof_mad_hdr_put(uint8_t *mad, const struct sof_mad_hdr *h)
{
	mad[0] = h->base_version;
	mad[1] = h->mgmt_class;
	mad[2] = h->class_version;
	mad[3] = h->method;
	sof_put16(mad + 4, h->status);
	sof_put16(mad + 6, h->class_specific);
	sof_put32(mad + 8, (uint32_t)(h->tid >> 32));
	sof_put32(mad + 12, (uint32_t)h->tid);
	sof_put16(mad + 16, h->attr_id);
	sof_put16(mad + 18, 0);
	sof_put32(mad + 20, h->attr_mod);
}

/* ---- QP1, the GSI (IBA 13.5): the daemon's own UD QP ------------------------------ */

static uint32_t gsi_psn;

static int gsi_send(const struct sofd_mad_addr *to, const uint8_t *mad)
{
	struct tp_path path;

	memset(&path, 0, sizeof(path));
	memcpy(path.sgid, to->sgid, 16);
	memcpy(path.dgid, to->dgid, 16);
	if (to->ib) {
		/* the InfiniBand port: by LID, a GRH only when one was asked */
		path.link = TP_LINK_IB;
		path.dlid = to->lid;
		path.sl = to->sl;
		path.path_bits = to->path_bits;
		path.global = !to->no_grh;
	}
	path.tclass = to->traffic_class;
	path.hop_limit = to->hop_limit ? to->hop_limit : 64;
	path.flow_label = to->flow_label;
	path.sport = tp_flow_port(!sof_gid_is_v4(to->dgid), SOF_GSI_QPN, to->remote_qpn);
	return tp_ud_send(&path, SOF_GSI_QPN, to->remote_qpn, to->remote_qkey,
			  to->pkey ? to->pkey : 0xffff, &gsi_psn, mad, SOF_MAD_LEN);
}

/* The transport's hook for QP1: a UD SEND with the GSI's Q_Key (IBA
 * 13.5.1). QP1 is in every partition of its port (IBA 10.9.2): by the
 * InfiniBand port any P_Key of the port's table (iblink.c checked it),
 * by RoCE the default; the answer goes with the request's P_Key. */
static void gsi_input(const struct roce_hdr *h, const uint8_t *payload, uint32_t paylen,
		      const struct roce_addr *a, bool from_net)
{
	struct sofd_mad_addr from;
	uint16_t dlid;

	(void)from_net;
	if (h->opcode != ROCE_UD_SEND_ONLY) {
		tp_drop_add(SOF_DROP_qp_type);
		return;
	}
	if (!tp_ib_rx_lrh(&from.lid, &dlid, &from.sl) && (h->pkey & 0x7fff) != 0x7fff) {
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
	if (tp_ib_rx_lrh(&from.lid, &dlid, &from.sl)) {
		/* by the InfiniBand port: answered by LID, without GRH */
		from.ib = true;
		from.no_grh = true;
		memset(from.dgid, 0, 16);
	}
	sofd_mad_input(payload, paylen, &from);
}

/* ---- agents ------------------------------------------------------------------------ */

/* IBA 13.4.4: the classes whose messages may travel in RMPP (SA, device
 * management, BIS, vendor range 2), and where their data begins. */
static bool class_rmpp(uint8_t c)
{
	return c == 0x03 || c == 0x06 || c == 0x10 || c == 0x12 || (c >= 0x30 && c <= 0x4f);
}

static bool class_vendor2(uint8_t c) { return c >= 0x30 && c <= 0x4f; }

static bool class_smp(uint8_t c) { return c == 0x01 || c == 0x81; }

/* IBA 13.4.5: a response (the R bit), or a TrapRepress (which answers a
 * Trap) */
static bool is_response(const struct sof_mad_hdr *h)
{
	return (h->method & SOF_MAD_METHOD_RESP) || h->method == SOF_MAD_METHOD_TRAP_REPRESS;
}

/* The OUI of a vendor MAD of range 2 (IBA 13.4.9: after the RMPP header
 * and a reserved byte). */
static uint32_t mad_oui(const uint8_t *mad) { return (uint32_t)mad[37] << 16 | sof_get16(mad + 38); }

static bool method_in(const uint64_t mask[2], uint8_t method)
{
	return method < 128 && (mask[method / 64] >> (method % 64) & 1);
}

static struct agent *agent_by_id(uint32_t id)
{
	for (struct agent *a = agent_list; a; a = a->next)
		if (a->id == id)
			return a;
	return NULL;
}

/* The agent that takes requests of method m of this class, version (and
 * OUI); ignore: an agent not to count (the one being registered). */
static struct agent *agent_for(uint8_t qpn, uint8_t mgmt_class, uint8_t version, uint32_t oui,
			       uint8_t method)
{
	for (struct agent *a = agent_list; a; a = a->next) {
		if (a->reg.qpn != qpn || a->reg.mgmt_class != mgmt_class ||
		    a->reg.class_version != version || !mgmt_class)
			continue;
		if (class_vendor2(mgmt_class) && a->reg.oui != oui)
			continue;
		if (a->fn || method_in(a->reg.method_mask, method))
			return a;
	}
	return NULL;
}

static uint32_t new_agent_id(void)
{
	do
		next_agent_id = next_agent_id == UINT32_MAX ? 1 : next_agent_id + 1;
	while (agent_by_id(next_agent_id));
	return next_agent_id;
}

static int agent_add(const struct sofd_mad_reg *reg, sofd_mad_recv_fn fn,
		     const struct sofd_mad_agent_ops *ops, void *ctx, uint32_t *id)
{
	struct agent *a;

	/* QP1's datagrams come here from the first agent on */
	tp_recv_hook(TP_HOOK_QP1, gsi_input);
	if (nagents >= SOF_MAD_MAX_AGENTS)
		return -ENOSPC;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->reg = *reg;
	a->fn = fn;
	a->ops = ops;
	a->ctx = ctx;
	a->id = new_agent_id();
	a->next = agent_list;
	agent_list = a;
	nagents++;
	*id = a->id;
	return 0;
}

int sofd_mad_register(uint8_t mgmt_class, uint8_t class_version, sofd_mad_recv_fn fn)
{
	struct sofd_mad_reg reg = {.qpn = SOF_MAD_QP1,
				   .mgmt_class = mgmt_class,
				   .class_version = class_version,
				   .method_mask = {UINT64_MAX, UINT64_MAX}};
	uint32_t id;
	int err;

	for (struct agent *a = agent_list; a; a = a->next)
		if (a->reg.mgmt_class == mgmt_class && a->reg.class_version == class_version)
			return -EBUSY;
	err = agent_add(&reg, fn, NULL, NULL, &id);
	return err ? err : (int)id;
}

/* The checks of the kernel's ib_register_mad_agent. */
int sofd_mad_agent_register(const struct sofd_mad_reg *reg, const struct sofd_mad_agent_ops *ops,
			    void *ctx, uint32_t *id)
{
	uint8_t c = reg->mgmt_class;

	if (reg->qpn > SOF_MAD_QP1 || reg->rmpp_version > 1)
		return -EINVAL;
	if (c) {
		if (reg->class_version >= 8 || (c >= 0x50 && c != 0x81))
			return -EINVAL;
		if (class_vendor2(c) && (!reg->oui || reg->oui > 0xffffff))
			return -EINVAL;
		if (reg->rmpp_version && !class_rmpp(c))
			return -EINVAL;
		if (class_smp(c) != (reg->qpn == SOF_MAD_QP0))
			return -EINVAL;
	}
	/* QP0, the SMI (IBA 14.2), is an InfiniBand port's only: a RoCE port
	 * has none, and the kernel refuses its agents with this error. */
	if (reg->qpn == SOF_MAD_QP0 && !smi)
		return -EPROTONOSUPPORT;
	for (unsigned m = 0; c && m < 128; m++)
		if (method_in(reg->method_mask, (uint8_t)m) &&
		    agent_for(reg->qpn, c, reg->class_version, reg->oui, (uint8_t)m))
			return -EINVAL; /* a method has one agent (the kernel's answer) */
	return agent_add(reg, NULL, ops, ctx, id);
}

/* bytes of the messages on send_list (SOF_MAD_BYTES_MAX) */
static size_t send_bytes;

static void send_free(struct msend *s)
{
	send_bytes -= s->len;
	free(s->msg);
	free(s);
}

int sofd_mad_agent_unregister(void *ctx, uint32_t id)
{
	struct agent **pa, *a;

	for (pa = &agent_list; (a = *pa); pa = &a->next)
		if (a->id == id && !a->fn && a->ctx == ctx)
			break;
	if (!a)
		return -EINVAL;
	*pa = a->next;
	nagents--;
	/* what it had waiting goes unreported, as the kernel's cancelled sends */
	for (struct msend **ps = &send_list, *s; (s = *ps);) {
		if (s->a == a) {
			*ps = s->next;
			npending--;
			send_free(s);
		} else {
			ps = &s->next;
		}
	}
	sofd_mad_rmpp_agent_gone(a);
	free(a);
	return 0;
}

bool sofd_mad_agent_valid(void *ctx, uint32_t id)
{
	struct agent *a = agent_by_id(id);

	return a && !a->fn && a->ctx == ctx;
}

uint64_t sofd_mad_new_tid(int agent)
{
	if (!tid_seq)
		tid_seq = sof_random32();
	return (uint64_t)(uint32_t)agent << 32 | ++tid_seq;
}

/* ---- sends that wait for their response ----------------------------------------------- */

/* One MAD out of an agent's QP. */
static int qp_send(const struct agent *a, const struct sofd_mad_addr *to, const uint8_t *mad)
{
	if (a->reg.qpn == SOF_MAD_QP0) {
		tp_count_add(SOF_CNT_mad_tx, 1);
		return smi ? smi->send(to, mad) : -ENETDOWN;
	}
	return sofd_mad_send(to, mad);
}

void sofd_mad_smi_attach(const struct sofd_mad_smi_ops *ops) { smi = ops; }

static struct msend *send_find(const struct agent *a, uint64_t tid, uint8_t mgmt_class)
{
	for (struct msend *s = send_list; s; s = s->next)
		if (s->a == a && s->tid == tid && s->mgmt_class == mgmt_class)
			return s;
	return NULL;
}

struct msend *sofd_mad_send_by_tid(struct agent *a, uint64_t tid, uint8_t mgmt_class)
{
	return send_find(a, tid, mgmt_class);
}

uint32_t sofd_mad_data_offset(uint8_t c)
{
	if (c == 0x03)
		return 56; /* SA: MAD, RMPP and SA headers (IBA 15.2.1.1) */
	if (c == 0x06 || c == 0x10 || c == 0x12)
		return 64;
	if (class_vendor2(c))
		return 40; /* MAD and RMPP headers, reserved byte, OUI */
	return SOF_MAD_HDR_LEN;
}

static void send_unlink(struct msend *s)
{
	for (struct msend **ps = &send_list; *ps; ps = &(*ps)->next) {
		if (*ps == s) {
			*ps = s->next;
			npending--;
			return;
		}
	}
}

/* A waiting send ends well (its response came, or it needed none). */
void sofd_mad_send_done(struct msend *s)
{
	send_unlink(s);
	send_free(s);
}

/* A waiting send ends without its response: reported to its agent. */
void sofd_mad_send_fail(struct msend *s, int status)
{
	struct agent *a = s->a;
	uint8_t hdr[SOF_MAD_HDR_LEN];

	send_unlink(s);
	memcpy(hdr, s->msg, sizeof(hdr));
	if (a->ops && a->ops->send_failed)
		a->ops->send_failed(a->ctx, a->id, s->cookie, status, hdr, &s->to);
	send_free(s);
}

int sofd_mad_agent_send(void *ctx, uint32_t id, const uint8_t *msg, uint32_t len,
			const struct sofd_mad_addr *to, uint32_t timeout_ms, uint32_t retries,
			uint64_t cookie)
{
	struct agent *a = agent_by_id(id);
	struct sof_mad_hdr h;
	struct msend *s;
	uint8_t *copy;
	bool rmpp;
	int err;

	if (!a || a->fn || a->ctx != ctx)
		return -EINVAL;
	/* the MAD and RMPP headers at least, as the kernel's ib_umad */
	if (len < SOF_MAD_HDR_LEN + SOF_RMPP_HDR_LEN || len > SOF_MAD_MSG_MAX)
		return -EINVAL;
	sof_mad_hdr_get(msg, &h);
	/* an agent's QP carries its classes only: SMPs on QP0, the rest on QP1 */
	if (h.base_version != SOF_MAD_BASE_VERSION ||
	    class_smp(h.mgmt_class) != (a->reg.qpn == SOF_MAD_QP0))
		return -EINVAL;
	if (a->reg.qpn == SOF_MAD_QP0 && (!smi || len > SOF_MAD_LEN))
		return -EINVAL;
	rmpp = a->reg.rmpp_version && !a->reg.user_rmpp && class_rmpp(h.mgmt_class) &&
	       (msg[SOF_RMPP_FLAGS_OFF] & SOF_RMPP_FLAG_ACTIVE);
	if (len > SOF_MAD_LEN && !rmpp)
		return -EINVAL;
	if (rmpp && len < sofd_mad_data_offset(h.mgmt_class))
		return -EINVAL;
	if (len > SOF_MAD_LEN && send_bytes + len > SOF_MAD_BYTES_MAX)
		return -ENOBUFS; /* too much in flight already */
	copy = calloc(1, len < SOF_MAD_LEN ? SOF_MAD_LEN : len);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, msg, len);
	/* a short MAD is padded with zeros; an RMPP message keeps its length,
	 * from which its PayloadLength is counted (IBA 13.6.2.3: the padding
	 * of the last segment is no data, else a short SA table answer would
	 * end in records of zeros) */
	if (len < SOF_MAD_LEN && !rmpp)
		len = SOF_MAD_LEN;
	/* IBA 13.4.6.4: the requester's part of a TID routes the response
	 * back; the upper half is the agent's (the kernel's hi_tid) */
	if (!is_response(&h)) {
		h.tid = (uint64_t)a->id << 32 | (uint32_t)h.tid;
		sof_put32(copy + 8, a->id);
		if (timeout_ms && send_find(a, h.tid, h.mgmt_class)) {
			free(copy);
			return -EINVAL;
		}
	}
	if (!rmpp && (!timeout_ms || is_response(&h))) {
		err = qp_send(a, to, copy);
		free(copy);
		return err;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		free(copy);
		return -ENOMEM;
	}
	s->a = a;
	s->tid = h.tid;
	s->mgmt_class = h.mgmt_class;
	s->to = *to;
	s->msg = copy;
	s->len = len;
	send_bytes += len;
	s->timeout_ms = timeout_ms;
	s->retries = retries;
	s->cookie = cookie;
	s->wait_resp = timeout_ms && !is_response(&h);
	if (rmpp) {
		err = sofd_mad_rmpp_send_start(s);
		if (err) {
			send_free(s);
			return err;
		}
	} else {
		err = qp_send(a, to, copy);
		if (err) {
			send_free(s);
			return err;
		}
		s->deadline = sof_now_ns() + (uint64_t)timeout_ms * 1000000u;
	}
	s->next = send_list;
	send_list = s;
	npending++;
	return 0;
}

int sofd_mad_timeout_ms(void)
{
	uint64_t now = sof_now_ns(), first = UINT64_MAX;
	int64_t ms;

	for (struct msend *s = send_list; s; s = s->next)
		if (s->deadline < first)
			first = s->deadline;
	if (sofd_mad_rmpp_deadline() < first)
		first = sofd_mad_rmpp_deadline();
	if (first == UINT64_MAX)
		return -1;
	if (first <= now)
		return 0;
	ms = (int64_t)((first - now + 999999) / 1000000);
	return ms > 60000 ? 60000 : (int)ms;
}

void sofd_mad_timers_run(void)
{
	uint64_t now = sof_now_ns();
	struct msend *s, *next;

	for (s = send_list; s; s = next) {
		next = s->next;
		if (s->deadline > now)
			continue;
		if (s->rmpp && !s->rmpp_done) {
			sofd_mad_rmpp_send_timeout(s, now);
		} else if (s->rmpp && s->retries) {
			/* no response to the whole message: all of it again */
			s->retries--;
			(void)sofd_mad_rmpp_send_start(s);
		} else if (s->rmpp) {
			sofd_mad_send_fail(s, ETIMEDOUT);
		} else if (s->retries) {
			/* the kernel's retries: the same MAD, the same TID */
			s->retries--;
			(void)qp_send(s->a, &s->to, s->msg);
			s->deadline = now + (uint64_t)s->timeout_ms * 1000000u;
		} else {
			sofd_mad_send_fail(s, ETIMEDOUT);
		}
	}
	sofd_mad_rmpp_timers_run(now);
}

uint32_t sofd_mad_pending(void) { return npending; }

/* The answer of IBA 13.4.7 to a Get or Set no agent takes: a GetResp
 * with "method/attribute not supported", as the kernel's ib_mad gives. */
static void reply_unsupported(const uint8_t *mad, const struct sofd_mad_addr *from)
{
	struct sofd_mad_addr to = *from;
	uint8_t r[SOF_MAD_LEN];

	memcpy(r, mad, SOF_MAD_LEN);
	r[3] = SOF_MAD_METHOD_GET_RESP;
	sof_put16(r + 4, SOF_MAD_STATUS_UNSUPPORTED);
	(void)sofd_mad_send(&to, r);
}

/* A message for agent a from from (a reassembled one from rmpp.c too). */
void sofd_mad_deliver(struct agent *a, const uint8_t *msg, uint32_t len,
		      const struct sofd_mad_addr *from)
{
	tp_count_add(SOF_CNT_mad_rx, 1);
	if (a->fn)
		a->fn(msg, from);
	else
		a->ops->recv(a->ctx, a->id, msg, len, from);
}

/* The response hdr names the send it answers, of agent a, from its
 * destination (the kernel's ib_find_send_mad): that send, or NULL. */
struct msend *sofd_mad_resp_match(struct agent *a, const struct sof_mad_hdr *h,
				  const struct sofd_mad_addr *from)
{
	struct msend *s = send_find(a, h->tid, h->mgmt_class);

	if (!s || !s->wait_resp || memcmp(s->to.dgid, from->dgid, 16))
		return NULL;
	return s;
}

/* A MAD that reached QP qpn (0: SMI, 1: GSI). */
static void dispatch(uint8_t qpn, const uint8_t *mad, const struct sofd_mad_addr *from)
{
	struct sof_mad_hdr h;
	struct agent *a;
	struct msend *s;

	sof_mad_hdr_get(mad, &h);
	/* IBA 13.4.3: a base version we do not speak is not ours to parse;
	 * 13.5.1: QP1 carries no SMPs, QP0 nothing else */
	if (h.base_version != SOF_MAD_BASE_VERSION ||
	    class_smp(h.mgmt_class) != (qpn == SOF_MAD_QP0) || !h.mgmt_class) {
		tp_drop_add(SOF_DROP_mad);
		return;
	}
	if (is_response(&h)) {
		a = agent_by_id((uint32_t)(h.tid >> 32));
		if (a && a->fn) {
			sofd_mad_deliver(a, mad, SOF_MAD_LEN, from);
			return;
		}
		if (!a || a->reg.qpn != qpn) {
			tp_drop_add(SOF_DROP_mad);
			return;
		}
		if (sofd_mad_rmpp_recv(a, mad, from))
			return;
		s = sofd_mad_resp_match(a, &h, from);
		if (!s) {
			tp_drop_add(SOF_DROP_mad); /* nobody waits for it */
			return;
		}
		send_unlink(s);
		send_free(s);
		sofd_mad_deliver(a, mad, SOF_MAD_LEN, from);
		return;
	}
	/* the HCA's own agents first (its PMA, congestion control), as the
	 * kernel's process_mad */
	if (qpn == SOF_MAD_QP1 && from->ib && smi && smi->gsi_local) {
		uint8_t r[SOF_MAD_LEN];
		int rc;

		memcpy(r, mad, SOF_MAD_LEN);
		rc = smi->gsi_local(r, from);
		if (rc < 0) {
			tp_drop_add(SOF_DROP_mad);
			return;
		}
		if (rc > 0) {
			tp_count_add(SOF_CNT_mad_rx, 1);
			(void)sofd_mad_send(from, r);
			return;
		}
	}
	a = agent_for(qpn, h.mgmt_class, h.class_version,
		      class_vendor2(h.mgmt_class) ? mad_oui(mad) : 0, h.method);
	if (!a) {
		/* No agent: IBA 13.5.3.1 lets the GSI drop what it cannot
		 * serve; a Get or Set is answered */
		tp_drop_add(SOF_DROP_mad);
		if (qpn == SOF_MAD_QP1 &&
		    (h.method == SOF_MAD_METHOD_GET || h.method == SOF_MAD_METHOD_SET))
			reply_unsupported(mad, from);
		return;
	}
	if (sofd_mad_rmpp_recv(a, mad, from))
		return;
	sofd_mad_deliver(a, mad, SOF_MAD_LEN, from);
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
	dispatch(SOF_MAD_QP1, mad, from);
}

void sofd_mad_smi_input(const uint8_t *smp, uint32_t len, const struct sofd_mad_addr *from)
{
	uint8_t mad[SOF_MAD_LEN];

	if (len != SOF_MAD_LEN || !smi) {
		tp_drop_add(SOF_DROP_mad);
		return;
	}
	memcpy(mad, smp, SOF_MAD_LEN);
	dispatch(SOF_MAD_QP0, mad, from);
}

int sofd_mad_send(const struct sofd_mad_addr *to, const uint8_t *mad)
{
	struct loop_mad *m;

	tp_count_add(SOF_CNT_mad_tx, 1);
	/* the loopback queue is for this host's QP1; a MAD for another QP
	 * of this host (a class redirected to it) leaves as any datagram */
	if (!tp_gid_local(to->dgid) || to->remote_qpn != SOF_GSI_QPN)
		return gsi_send(to, mad);
	if (loop_len >= LOOPBACK_MAX)
		return -ENOBUFS;
	m = malloc(sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->next = NULL;
	m->qpn = SOF_MAD_QP1;
	memset(&m->from, 0, sizeof(m->from));
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

int sofd_mad_smi_loop(const uint8_t *smp, const struct sofd_mad_addr *from)
{
	struct loop_mad *m;

	if (loop_len >= LOOPBACK_MAX)
		return -ENOBUFS;
	m = malloc(sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->next = NULL;
	m->qpn = SOF_MAD_QP0;
	m->from = *from;
	memcpy(m->mad, smp, SOF_MAD_LEN);
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
		dispatch(m->qpn, m->mad, &m->from);
		free(m);
		any = true;
	}
	return any;
}
