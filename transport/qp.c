/*
 * The per-QP transport state, as Linux rxe's rxe_qp: made on a QP's first
 * modify, updated on each (path, PSNs, timeouts, retry counts, responder
 * resources), reset on RESET, and on destroy dropped (an RC QP connected
 * to another host lingers, below). Also what a host asks of a QP's
 * transport (doorbell, post, linger).
 */
#include "tp_ib.h"
#include "tport.h"

#include <endian.h>

#include "sof_gid.h"

#include <stdlib.h>
#include <sys/mman.h>

void tp_qp_doorbell(struct tp_qp *qp)
{
	struct sof_tqp *t = qp->t;

	/* new WQEs in the network send queue? */
	if (t && qp->nsq &&
	    atomic_load_explicit(&qp->nsq->idx.tail, memory_order_acquire) != t->wq_tail)
		tp_req_progress(t);
}

void tp_qp_progress(struct tp_qp *qp)
{
	if (qp->t)
		tp_req_progress(qp->t);
}

void tp_doorbell_all(void)
{
	struct sof_link *l, *next;

	for (l = tp.qps.next; l != &tp.qps; l = next) {
		next = l->next;
		tp_qp_doorbell(sof_container_of(l, struct sof_tqp, link)->qp);
	}
}

static uint32_t mtu_bytes(uint32_t m)
{
	return m >= IBV_MTU_256 && m <= IBV_MTU_4096 ? 128u << m : 1024u;
}

static struct sof_tqp *tqp_new(struct tp_qp *qp)
{
	struct sof_tqp *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	/* Anonymous pages, not the heap: only a QP that sends to another
	 * host ever touches them, and they go back to the system with it
	 * (on the heap, many local QPs left the daemon much larger:
	 * bench/README.md) */
	t->wq_len = (size_t)qp->sq_size * sizeof(*t->wq);
	t->wq = mmap(NULL, t->wq_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (t->wq == MAP_FAILED) {
		free(t);
		return NULL;
	}
	t->qp = qp;
	sof_list_add(&tp.qps, &t->link);
	sof_list_init(&t->ack_link);
	sof_list_init(&t->timer_link);
	qp->t = t;
	return t;
}

void tp_qp_destroy(struct tp_qp *qp)
{
	struct sof_tqp *t = qp->t;

	if (!t)
		return;
	/* (XRC QPs do not linger) */
	if (qp->type == IBV_QPT_RC && t->net && t->state >= IBV_QPS_RTR && t->state <= IBV_QPS_SQE)
		tp_resp_linger(t);
	sof_list_del(&t->link);
	sof_list_del(&t->ack_link);
	sof_list_del(&t->timer_link);
	munmap(t->wq, t->wq_len);
	free(t->res);
	tp_resp_ooo_free(t);
	free(t->sack_tx);
	free(t);
	qp->t = NULL;
}

/* The requester and responder start over (RESET, or the first modify). */
static void tqp_reset(struct sof_tqp *t)
{
	t->wq_head = t->wq_send = t->wq_tail =
	    atomic_load_explicit(&t->qp->nsq->idx.tail, memory_order_acquire);
	atomic_store_explicit(&t->qp->nsq->idx.head, t->wq_tail, memory_order_release);
	atomic_store_explicit(&t->qp->nsq->done, t->wq_tail, memory_order_release);
	t->send_off = 0;
	t->rd_out = 0;
	t->timer_ns = t->rnr_ns = t->probe_ns = 0;
	t->pace_ns = t->pace_wait_ns = 0;
	t->nak_sent = t->ack_pending = false;
	t->sack_peer = t->sack_ok = t->sack_seen = false;
	t->sack_cnt = t->sack_lost = 0;
	t->msn = 0;
	tp_resp_ooo_clear(t);
	t->in_msg = 0;
	t->rcv_active = false;
	t->net = false;
}

/* A path by the InfiniBand port (a QP of sofib0): to the DLID, and by a
 * GRH only when global. A LID-routed peer is named by its LID GID, as the
 * port shows the source of what it receives (tp_ib.h); its packets always
 * go by the port (the IB port has no same-host shortcut). */
static int ib_path(struct sof_tqp *t, const struct sof_modify_qp_req *req)
{
	const struct tp_ib_attr *a = tp_ib_attr();

	if (!tp.ib || !req->dlid || req->dlid > IB_LID_UCAST_MAX || req->sl > 15)
		return -EINVAL;
	t->path.link = TP_LINK_IB;
	t->path.dlid = req->dlid;
	t->path.sl = req->sl;
	t->path.path_bits = req->path_bits;
	t->path.global = req->is_global != 0;
	if (t->path.global) {
		uint64_t v = htobe64(a->subnet_prefix);

		memcpy(t->path.sgid, &v, 8);
		v = htobe64(a->port_guid);
		memcpy(t->path.sgid + 8, &v, 8);
	} else {
		tp_ib_lid_gid(req->dlid, t->path.dgid);
		tp_ib_lid_gid((uint16_t)(a->lid | (req->path_bits & ((1u << a->lmc) - 1))),
			      t->path.sgid);
	}
	t->path.sport = 0;
	t->net = true;
	return 0;
}

/* IBA 10.9.2: a QP's packets carry the P_Key at its index in its port's
 * table, as it is when they are sent (the SM may change the table); the
 * RoCE port's table is the default P_Key alone. */
uint16_t tp_qp_pkey(const struct sof_tqp *t)
{
	if (!t->ib)
		return 0xffff;
	return t->pkey_index < TP_IB_PKEYS ? tp_ib_attr()->pkeys[t->pkey_index] : 0;
}

int tp_qp_modify(struct tp_qp *qp, const struct sof_modify_qp_req *req, bool *net)
{
	struct sof_tqp *t = qp->t;
	uint32_t m = req->attr_mask;

	*net = false;
	if (req->state == IBV_QPS_RESET) {
		if (t)
			tqp_reset(t);
		return 0;
	}
	if (!t) {
		t = tqp_new(qp);
		if (!t)
			return -ENOMEM;
		tqp_reset(t);
	}
	if ((m & IBV_QP_AV) && req->sgid_index >= SOF_MAX_GIDS)
		return -EINVAL;
	if ((m & IBV_QP_MAX_DEST_RD_ATOMIC) || !t->res) {
		uint32_t n = req->max_dest_rd_atomic ? req->max_dest_rd_atomic : 1;
		struct tp_res *r = calloc(n, sizeof(*r));

		if (!r)
			return -ENOMEM;
		free(t->res);
		t->res = r;
		t->nres = n;
		t->res_next = 0;
	}
	t->qkey = req->qkey;
	t->access = req->access;
	t->dqpn = req->dest_qpn;
	t->mtu = mtu_bytes(req->path_mtu);
	t->timeout = req->timeout;
	t->retry_cnt = req->retry_cnt;
	t->rnr_retry = req->rnr_retry;
	t->min_rnr_timer = req->min_rnr_timer;
	t->max_rd_atomic = req->max_rd_atomic;
	t->max_dest_rd_atomic = req->max_dest_rd_atomic;
	t->rate_kbps = req->rate_limit;
	t->ib = req->link == TP_LINK_IB;
	if (m & IBV_QP_PKEY_INDEX)
		t->pkey_index = req->pkey_index;
	if (m & IBV_QP_RQ_PSN) {
		t->epsn = req->rq_psn & ROCE_PSN_MASK;
		tp_resp_ooo_clear(t);
	}
	if (m & IBV_QP_SQ_PSN) {
		t->psn = req->sq_psn & ROCE_PSN_MASK;
		t->una_psn = t->max_psn = t->psn;
		/* sack.c compares these with una as PSNs (mod 2^24): they
		 * start at the first PSN, not 0, which half of the random
		 * starting PSNs would take for 2^23 ahead */
		t->sack_epoch = t->psn;
		t->sack_rack_ns = t->sack_rtt_ns = t->sack_base_ns = t->sack_cut_ns = 0;
		t->sack_first_ns = 0;
		t->sack_reordered = false;
		t->sack_tlps = 0;
		t->sack_deferred = false;
		t->cwnd = TP_INIT_CWND; /* slow start */
		t->ssthresh = TP_WINDOW;
		t->cwnd_acc = 0;
		t->in_recovery = false;
		t->rtt_ns = t->srtt_ns = t->rttvar_ns = t->mrtt_ns = t->prtt_ns = t->loss_ns = 0;
		t->tlp_ns = 0;
	}
	if (m & (IBV_QP_RETRY_CNT | IBV_QP_STATE))
		t->retry_left = t->retry_cnt;
	if (m & (IBV_QP_RNR_RETRY | IBV_QP_STATE))
		t->rnr_left = t->rnr_retry;
	/* the path is set with the AV, at the latest on the way to RTR */
	if (qp->type != IBV_QPT_UD && (m & IBV_QP_AV) && req->state != IBV_QPS_INIT &&
	    req->state != IBV_QPS_ERR) {
		uint32_t si = req->sgid_index;

		memcpy(t->path.dgid, req->dgid, 16);
		t->path.tclass = req->traffic_class;
		t->path.hop_limit = req->hop_limit;
		t->path.flow_label = req->flow_label;
		t->path.link = TP_LINK_ROCE;
		t->net = !tp_gid_local(req->dgid);
		if (req->link == TP_LINK_IB) {
			int err = ib_path(t, req);

			if (err)
				return err;
		} else if (t->net) {
			const uint8_t *sgid = tp_sgid(si);

			if (!sgid || sof_gid_is_v4(sgid) != sof_gid_is_v4(req->dgid))
				return -EINVAL;
			memcpy(t->path.sgid, sgid, 16);
			t->path.sport =
			    tp_flow_port(!sof_gid_is_v4(req->dgid), qp->qpn, req->dest_qpn);
		}
	}
	t->state = req->state;
	*net = t->net;
	if (req->state == IBV_QPS_ERR)
		tp_flush(t);
	else if (req->state == IBV_QPS_RTS)
		tp_req_progress(t);
	return 0;
}

bool tp_qp_post_may_wait(const struct tp_qp *qp, uint32_t *post_epsn)
{
	const struct sof_tqp *t = qp->t;
	bool answer;

	if (!t)
		return false;
	/* an answer in a ping-pong: the QP took in a request since the last
	 * post and has at most one WQE in flight */
	answer = t->epsn != *post_epsn && t->wq_send - t->wq_head <= 1;
	*post_epsn = t->epsn;
	return t->state == IBV_QPS_RTS && t->una_psn != t->psn && !answer;
}

bool tp_qp_linger_info(const struct tp_qp *qp, struct sof_linger *l)
{
	const struct sof_tqp *t = qp->t;

	if (qp->type != IBV_QPT_RC || !t || !t->net || t->state < IBV_QPS_RTR ||
	    t->state > IBV_QPS_SQE)
		return false;
	*l = (struct sof_linger){.dqpn = t->dqpn,
				 .epsn = t->epsn,
				 .msn = t->msn,
				 .flow_label = t->path.flow_label,
				 .tclass = t->path.tclass,
				 .hop_limit = t->path.hop_limit};
	memcpy(l->sgid, t->path.sgid, 16);
	memcpy(l->dgid, t->path.dgid, 16);
	return true;
}

/* a RoCEv2 UD QP hears from any host, by either family */
static bool ud_roce(const struct sof_tqp *t) { return t->qp->type == IBV_QPT_UD && !t->ib; }

bool tp_any_net_v6(void)
{
	for (struct sof_link *l = tp.qps.next; l != &tp.qps; l = l->next) {
		const struct sof_tqp *t = sof_container_of(l, struct sof_tqp, link);

		/* sofib0's come on its link socket, never on the IPv6 one */
		if (t->net && !t->ib && !sof_gid_is_v4(t->path.dgid))
			return true;
		if (ud_roce(t))
			return true;
	}
	return false;
}

bool tp_any_net_roce(void)
{
	for (struct sof_link *l = tp.qps.next; l != &tp.qps; l = l->next) {
		const struct sof_tqp *t = sof_container_of(l, struct sof_tqp, link);

		if (t->net && !t->ib)
			return true;
		if (ud_roce(t))
			return true;
	}
	return false;
}

/* ---- destroyed QPs that linger --------------------------------------------------- */

/* When an RC QP is destroyed, its peer may still be waiting for the ACK of
 * the last message, which the network lost: the peer resends, and nobody
 * answers, so its WQE fails with RETRY_EXC_ERR although the data arrived.
 * A destroyed QP therefore lingers for a while (as TCP's TIME_WAIT does):
 * a repeated request that it had received is acknowledged once more.
 * Nothing is executed and no memory is touched. */
#define LINGER_NS (10ull * 1000000000ull)
#define LINGER_MAX 256

static struct tp_linger {
	uint32_t qpn, dqpn, epsn, msn;
	uint16_t pkey;
	uint64_t until;
	struct tp_path path;
} linger[LINGER_MAX];
static uint32_t linger_next;

void tp_linger_add(uint32_t qpn, uint32_t dqpn, uint32_t epsn, uint32_t msn,
		   const struct tp_path *path)
{
	struct tp_linger *l = &linger[linger_next++ % LINGER_MAX];

	l->qpn = qpn;
	l->dqpn = dqpn;
	l->epsn = epsn;
	l->msn = msn;
	l->path = *path;
	l->pkey = 0xffff;
	l->until = sof_now_ns() + LINGER_NS;
}

void tp_resp_linger(const struct sof_tqp *t)
{
	tp_linger_add(t->qp->qpn, t->dqpn, t->epsn, t->msn, &t->path);
	linger[(linger_next - 1) % LINGER_MAX].pkey = tp_qp_pkey(t);
}

bool tp_resp_lingering(uint32_t qpn, const struct roce_hdr *h, const struct roce_addr *a)
{
	uint64_t now = sof_now_ns();

	for (uint32_t i = 0; i < LINGER_MAX; i++) {
		struct tp_linger *l = &linger[i];
		int32_t d;

		if (!l->until || l->qpn != qpn || now > l->until)
			continue;
		if (memcmp(a->src, l->path.dgid, 16) ||
		    (h->opcode & ROCE_SVC_MASK) != ROCE_SVC_RC ||
		    !(roce_opinfo(h->opcode)->flags & (ROCE_F_SEND | ROCE_F_WRITE)))
			return false;
		d = roce_psn_diff(h->psn, l->epsn);
		if (d >= 0 || d < -TP_DUP_WINDOW)
			return false;
		tp_send_ack_to(&l->path, l->dqpn, ROCE_AETH_ACK | ROCE_AETH_CREDIT_INVALID,
			       l->epsn - 1, l->msn, ROCE_SVC_RC, l->pkey);
		return true;
	}
	return false;
}
