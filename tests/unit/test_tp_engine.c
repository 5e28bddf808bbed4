/*
 * The transport engine's roles without a daemon: a test host fills the
 * engine's host operations (transport/tp.h) for one RC QP whose segments
 * (receive ring, network send queue, CQs) and one registered region live
 * in this program, and a test port (struct tp_port_ops) captures every
 * packet the engine sends instead of putting it on a wire. Each case is a
 * table of steps: a packet in (given to the receive classifier, tp_recv),
 * a receive or send WQE posted, the end of a receive batch, a timer
 * expiry; after each step the packets sent, the completions and the QP's
 * state are compared with what the step expects.
 *
 * Responder: a SEND executed and acknowledged once per batch, a duplicate
 * acknowledged and not executed again, a request far ahead NAKed as a PSN
 * sequence error (IBA 9.7.5.2.1), no receive WQE an RNR NAK (9.7.5.2.8),
 * a WRITE to a read-only region a remote access NAK that ends the QP
 * (9.7.5.2.4), a MIDDLE without its FIRST an invalid request NAK.
 * Requester and completer: a WRITE sent and completed by its ACK, a
 * sequence-error NAK that sends it again, an RNR NAK that waits and
 * sends it again, a remote access NAK that fails it and flushes the next.
 * XRC (the XRC annex): a TGT QP delivers a SEND to the SRQ its XRCETH
 * names (the host's xrc_srq) and answers with an XRC ACK; an SRQ the host
 * refuses is an invalid-request NAK that ends the QP; an INI QP's WRITE
 * leaves as an XRC opcode with the WQE's SRQ number in the XRCETH and
 * completes by an XRC ACK.
 *
 * Selective acknowledgements (sack.c): packets of a WRITE and a SEND ahead
 * of a lost FIRST kept, SACKed and placed at their offsets in order; the
 * requester resending only the holes of a SACK and counting lies; a
 * resend lost again resent once a later send arrived (RACK); a packet 300
 * ahead kept and named in a longer map; no extension towards a peer that
 * did not offer it. Against a model of a SACKing responder (rpeer), the
 * requester's timers run in real time: a small READ's request lost twice
 * with a 1 MiB READ posted behind it, and a hole the peer never takes.
 * A READ whose responses the network reorders asks for the rest again
 * once per round trip (completer.c reread_ok).
 *
 * The daemon's takeover of a stalled owner's responder (takeover.c):
 * in-order WRITEs, READs and atomics executed and answered on the shared
 * state, duplicates answered from the shared responder resources (an
 * atomic applied once), everything else dropped without a NAK, and the
 * owner going on from that state; UC WRITEs placed, a message a gap cuts
 * lost, nothing answered.
 *
 * The clock (tport.h tp_now): a request's round trip and its timer start
 * from one reading; within a handling the time holds until a packet of
 * its own asks afresh.
 */
#include "harness.h"

#include "tport.h"

#include "sof_gid.h"
#include "sof_wr.h"

#include <stdarg.h>
#include <stdlib.h>
#include <sys/timerfd.h>
#include <unistd.h>

#define QPN 0x000011u
#define PEER_QPN 0x000022u
#define RQ_SIZE 16u
#define SQ_SIZE 16u
#define MAX_SGE 2u
#define MAX_INLINE 64u
#define CQ_SIZE 64u
#define MEM_LEN (2u << 20) /* a 1 MiB READ's local buffer fits */
#define KEY_RW 0x1234u
#define KEY_RO 0x5678u
#define IOVA 0x100000ull
#define EPSN 1000u /* the responder's first expected PSN */
#define SPSN 5000u /* the requester's first PSN */
#define XRC_SRQN 0x00abcdu /* the XRC SRQ the test host knows */

static const uint8_t local4[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1};
static const uint8_t peer4[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2};

/* A packet the engine sent through the test port. */
struct sent {
	struct roce_hdr h;
	uint32_t paylen;
};

static struct {
	struct tp_qp qp;
	struct tp_cq scq, rcq;
	struct sof_qp_shm *qshm;
	struct sof_nsq_shm *nsq;
	struct sof_cq_shm *scq_shm, *rcq_shm;
	uint8_t *mem;
	uint64_t counters[SOF_CNT_NR], drops[SOF_DROP_NR];
	struct sent sent[256];
	unsigned nsent;
	uint8_t lastpay[ROCE_SACK_MAX_LEN]; /* the payload of the last packet, if that short */
	uint32_t last_event;		/* the asynchronous event of the last qp_error */
	unsigned errors;
	struct sof_srq_shm *srq_shm; /* XRC TGT world: the XRC SRQ */
	struct tp_srq srq;
} w;

/* The QP type of the next world_up (RC unless a test says otherwise) and
 * the XRC SRQ number its packets and WQEs carry. */
static uint32_t world_type = IBV_QPT_RC;
static uint32_t world_xrcsrq;

/* ---- the test host -------------------------------------------------------- */

static void host_log(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));
static void host_log(const char *fmt, va_list ap)
{
	if (getenv("SOF_TEST_TRACE")) {
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
	}
}

static struct tp_qp *host_qp_find(uint32_t qpn) { return qpn == QPN ? &w.qp : NULL; }

static uint8_t *host_mr_ptr(const struct tp_qp *qp, uint32_t key, uint64_t va, uint64_t len,
			    uint32_t need)
{
	uint32_t granted = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

	(void)qp;
	need &= ~TP_MR_PROBE;
	if (key == KEY_RO)
		granted = IBV_ACCESS_REMOTE_READ;
	else if (key != KEY_RW)
		return NULL;
	if ((granted & need) != need || va < IOVA || len > MEM_LEN || va - IOVA > MEM_LEN - len)
		return NULL;
	return w.mem + (va - IOVA);
}

static void host_mr_done(const struct tp_qp *qp, uint8_t *p, uint64_t written)
{
	(void)qp;
	(void)p;
	(void)written;
}

static const struct sof_gid_entry *host_gid(uint32_t index)
{
	static struct sof_gid_entry g = {.ifindex = 1, .type = SOF_GID_TYPE_ROCE_V2};

	memcpy(g.gid, local4, 16);
	return index == 0 ? &g : NULL;
}

static bool host_gid_local(const uint8_t gid[16]) { return !memcmp(gid, local4, 16); }
static uint32_t host_active_mtu(void) { return IBV_MTU_1024; }
static void host_cq_kick(struct tp_cq *cq) { (void)cq; }

static void host_qp_error(struct tp_qp *qp, uint32_t event)
{
	(void)qp;
	w.errors++;
	w.last_event = event;
}

static void host_srq_limit(struct tp_srq *srq) { (void)srq; }

static bool host_xrc_srq(struct tp_qp *qp, uint32_t srqn)
{
	if (srqn != XRC_SRQN || !w.srq_shm)
		return false;
	qp->srq = &w.srq;
	qp->recv_cq = &w.rcq;
	return true;
}

/* The daemon's takeover (takeover.c): while on, a request for the QP
 * whose engine state is taken away (w.qp.t NULL) runs on the shared
 * responder state, as the daemon runs a stalled program's. */
static bool takeover_on;

static struct sof_resp_shm *host_takeover(const struct tp_qp *qp, const uint8_t src[16],
					  uint32_t *dqpn)
{
	if (!takeover_on || qp != &w.qp || memcmp(src, peer4, 16))
		return NULL;
	*dqpn = PEER_QPN;
	return &w.qshm->resp;
}

/* Host op keep: what the host keeps for the stalled owner's requester
 * (takeover.c), while keep_room lasts; the last one in kept_pkt. */
static unsigned keep_room, nkept;
static uint8_t kept_pkt[64];
static size_t kept_len;

static bool host_keep(const struct tp_qp *qp, const uint8_t *pkt, size_t len,
		      const struct roce_addr *a)
{
	if (!keep_room || qp != &w.qp || len > sizeof(kept_pkt) || memcmp(a->src, peer4, 16))
		return false;
	keep_room--;
	nkept++;
	memcpy(kept_pkt, pkt, len);
	kept_len = len;
	return true;
}

static const struct tp_host_ops test_host = {
    .log = host_log,
    .qp_find = host_qp_find,
    .mr_ptr = host_mr_ptr,
    .mr_done = host_mr_done,
    .gid = host_gid,
    .gid_local = host_gid_local,
    .active_mtu = host_active_mtu,
    .cq_kick = host_cq_kick,
    .qp_error = host_qp_error,
    .srq_limit = host_srq_limit,
    .xrc_srq = host_xrc_srq,
    .flow_seen = NULL,
    .raw_xmit = NULL,
    .takeover = host_takeover,
    .keep = host_keep,
};

/* ---- the test port: packets are captured, not sent ------------------------ */

static int port_send(const struct tp_path *path, struct roce_hdr *h, uint32_t paylen,
		     tp_gather_fn gather, void *arg, const struct iovec *ref, uint32_t nref)
{
	uint8_t buf[4096];
	int err;

	(void)path;
	(void)ref;
	(void)nref;
	if (paylen > sizeof(buf))
		return -EMSGSIZE;
	/* the payload is gathered as the real port would: its memory checks */
	if (!ref && paylen) {
		err = gather(arg, buf, paylen);
		if (err)
			return err;
		if (paylen <= sizeof(w.lastpay))
			memcpy(w.lastpay, buf, paylen);
	}
	if (w.nsent < SOF_ARRAY_SIZE(w.sent))
		w.sent[w.nsent++] = (struct sent){*h, paylen};
	return 0;
}

static void port_flush(void) {}

static uint16_t port_flow_port(bool v6, uint32_t sqpn, uint32_t dqpn)
{
	(void)v6;
	(void)sqpn;
	(void)dqpn;
	return 0xc000;
}

static const struct tp_port_ops test_port = {
    .name = "test",
    .addr_len = 16,
    .max_payload = 4096,
    .send = port_send,
    .flush = port_flush,
    .flow_port = port_flow_port,
};

/* ---- the world: one RC QP connected to a peer on another host ------------- */

static void modify(uint32_t state, uint32_t mask)
{
	struct sof_modify_qp_req r = {
	    .qpn = QPN,
	    .state = state,
	    .dest_qpn = PEER_QPN,
	    .attr_mask = mask | IBV_QP_STATE,
	    .access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
	    .hop_limit = 64,
	    .path_mtu = IBV_MTU_1024,
	    .sq_psn = SPSN,
	    .rq_psn = EPSN,
	    .timeout = 14,
	    .retry_cnt = 7,
	    .rnr_retry = 7,
	    .min_rnr_timer = 1,
	    .max_rd_atomic = 4,
	    .max_dest_rd_atomic = 4,
	};
	bool net;

	memcpy(r.dgid, peer4, 16);
	CHECK_EQ(tp_qp_modify(&w.qp, &r, &net), 0);
	atomic_store(&w.qshm->state, state);
}

static void world_up(void)
{
	size_t qlen = SOF_QP_RQ_OFF + (size_t)RQ_SIZE * SOF_RWQE_STRIDE(MAX_SGE);
	uint32_t stride = SOF_NWQE_STRIDE(MAX_SGE, MAX_INLINE);

	memset(&w, 0, sizeof(w));
	w.qshm = aligned_alloc(SOF_CACHELINE, (qlen + 63) & ~(size_t)63);
	w.nsq = aligned_alloc(SOF_CACHELINE, (SOF_NSQ_SEG_LEN(SQ_SIZE, stride) + 63) & ~(size_t)63);
	w.scq_shm =
	    aligned_alloc(SOF_CACHELINE, SOF_CQ_RING_OFF + CQ_SIZE * sizeof(struct sof_cqe));
	w.rcq_shm =
	    aligned_alloc(SOF_CACHELINE, SOF_CQ_RING_OFF + CQ_SIZE * sizeof(struct sof_cqe));
	w.mem = calloc(1, MEM_LEN);
	CHECK(w.qshm && w.nsq && w.scq_shm && w.rcq_shm && w.mem);
	memset(w.qshm, 0, qlen);
	memset(w.nsq, 0, SOF_NSQ_SEG_LEN(SQ_SIZE, stride));
	memset(w.scq_shm, 0, SOF_CQ_RING_OFF + CQ_SIZE * sizeof(struct sof_cqe));
	memset(w.rcq_shm, 0, SOF_CQ_RING_OFF + CQ_SIZE * sizeof(struct sof_cqe));
	atomic_store(&w.scq_shm->size, CQ_SIZE);
	atomic_store(&w.rcq_shm->size, CQ_SIZE);
	w.scq = (struct tp_cq){.shm = w.scq_shm, .evfd = -1};
	w.rcq = (struct tp_cq){.shm = w.rcq_shm, .evfd = -1};
	w.qp = (struct tp_qp){.qpn = QPN,
			      .type = world_type,
			      .shm = w.qshm,
			      .rq_size = RQ_SIZE,
			      .rq_max_sge = MAX_SGE,
			      .nsq = w.nsq,
			      .sq_size = SQ_SIZE,
			      .sq_max_sge = MAX_SGE,
			      .sq_max_inline = MAX_INLINE,
			      .sq_stride = stride,
			      .send_cq = &w.scq,
			      .recv_cq = &w.rcq};
	if (world_type == IBV_QPT_XRC_RECV) {
		/* a TGT QP: no CQ, no receive queue; its SRQ is the host's */
		size_t slen = SOF_SRQ_RQ_OFF + (size_t)RQ_SIZE * SOF_RWQE_STRIDE(MAX_SGE);

		w.srq_shm = aligned_alloc(SOF_CACHELINE, (slen + 63) & ~(size_t)63);
		CHECK(w.srq_shm != NULL);
		memset(w.srq_shm, 0, slen);
		w.srq = (struct tp_srq){.shm = w.srq_shm, .size = RQ_SIZE, .max_sge = MAX_SGE};
		w.qp.send_cq = w.qp.recv_cq = NULL;
		w.qp.rq_size = 0;
	}
	CHECK_EQ(tp_start_unplugged(&test_host, w.counters, w.drops), 0);
	tp.port = &test_port;
	modify(IBV_QPS_INIT, IBV_QP_ACCESS_FLAGS);
	modify(IBV_QPS_RTR, IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	modify(IBV_QPS_RTS, IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				IBV_QP_MAX_QP_RD_ATOMIC);
	CHECK(w.qp.t != NULL);
}

static void world_down(void)
{
	tp_qp_destroy(&w.qp);
	close(tp_timer_fd());
	free(w.qshm);
	free(w.nsq);
	free(w.scq_shm);
	free(w.rcq_shm);
	free(w.mem);
	free(w.srq_shm);
}

/* ---- steps ------------------------------------------------------------------ */

enum step_kind {
	S_END = 0,
	S_IN,	     /* a request or response packet from the peer */
	S_RECV,	     /* a receive WQE of len bytes at offset va into the region */
	S_WRITE,     /* a signaled RDMA WRITE of len bytes, posted and rung */
	S_BATCH,     /* the end of a receive batch: coalesced ACKs leave */
	S_TIMER_RNR, /* the RNR wait is over */
};

/* What a step must leave: packets sent by it, the last one's opcode,
 * syndrome (AETH) and PSN (relative), completions so far and the status
 * of the last one, the QP's state. Each is V(value); 0 (left out): not
 * checked. */
#define V(v) ((int)(v) + 1)
struct expect {
	int nsent, opcode, syndrome, psn;
	int rcqe, scqe, status;
	int state;
};

struct step {
	enum step_kind kind;
	uint8_t opcode;	  /* S_IN */
	int32_t psn;	  /* S_IN: relative to EPSN (requests) or SPSN (responses) */
	uint32_t len;	  /* S_IN payload, S_RECV and S_WRITE length */
	uint32_t rkey;	  /* S_IN RETH, S_WRITE */
	uint8_t syndrome; /* S_IN AETH */
	struct expect e;
};

static uint32_t cq_count(const struct sof_cq_shm *s) { return atomic_load(&s->tail); }

static const struct sof_cqe *cq_last(const struct sof_cq_shm *s)
{
	uint32_t t = atomic_load(&s->tail);

	return (const struct sof_cqe *)((const uint8_t *)s + SOF_CQ_RING_OFF +
					(size_t)((t - 1) & (CQ_SIZE - 1)) * sizeof(struct sof_cqe));
}

static void post_recv(uint32_t len)
{
	/* an XRC TGT world receives through its SRQ */
	struct sof_ring_idx *idx = w.srq_shm ? &w.srq_shm->rq : &w.qshm->rq;
	uint8_t *ring = w.srq_shm ? (uint8_t *)w.srq_shm + SOF_SRQ_RQ_OFF
				  : (uint8_t *)w.qshm + SOF_QP_RQ_OFF;
	uint32_t tail = atomic_load(&idx->tail);
	uint8_t *slot = ring + (size_t)(tail & (RQ_SIZE - 1)) * SOF_RWQE_STRIDE(MAX_SGE);
	struct sof_rwqe r = {.wr_id = 100 + tail, .num_sge = 1};
	struct sof_sge sge = {.addr = IOVA, .length = len, .lkey = KEY_RW};

	memcpy(slot, &r, sizeof(r));
	memcpy(slot + sizeof(r), &sge, sizeof(sge));
	atomic_store(&idx->tail, tail + 1);
}

static void post_write(uint32_t len, uint32_t rkey)
{
	uint32_t tail = atomic_load(&w.nsq->idx.tail);
	uint8_t *slot =
	    (uint8_t *)w.nsq + SOF_NSQ_RING_OFF + (size_t)(tail & (SQ_SIZE - 1)) * w.qp.sq_stride;
	struct sof_nwqe e = {.wr_id = 200 + tail,
			     .opcode = IBV_WR_RDMA_WRITE,
			     .send_flags = IBV_SEND_SIGNALED,
			     .num_sge = 1,
			     .rkey = rkey,
			     .remote_addr = 0x700000,
			     .remote_qpn = world_xrcsrq};
	struct sof_sge sge = {.addr = IOVA, .length = len, .lkey = KEY_RW};

	memcpy(slot, &e, sizeof(e));
	memcpy(slot + sizeof(e), &sge, sizeof(sge));
	atomic_store(&w.nsq->idx.tail, tail + 1);
	tp_qp_doorbell(&w.qp);
}

static uint16_t in_pkey = 0xffff; /* the P_Key of the packets S_IN makes */

static void packet_in(const struct step *s)
{
	static uint8_t payload[4096];
	const struct roce_opinfo *oi = roce_opinfo(s->opcode);
	struct roce_hdr h;
	struct roce_addr a = {.sport = 0xc123, .dport = ROCE_UDP_PORT};

	memset(&h, 0, sizeof(h));
	h.opcode = s->opcode;
	h.pkey = in_pkey;
	h.dqpn = QPN;
	h.ackreq = true;
	h.psn = ((oi->flags & ROCE_F_RESP) ? SPSN : EPSN) + (uint32_t)s->psn;
	h.psn &= ROCE_PSN_MASK;
	h.rkey = s->rkey;
	h.va = IOVA;
	h.dmalen = s->len;
	h.syndrome = s->syndrome;
	h.xrcsrq = world_xrcsrq;
	memcpy(a.src, peer4, 16);
	memcpy(a.dst, local4, 16);
	tp_recv(&h, payload, s->len, &a);
}

static void check_step(const struct step *s, unsigned i, unsigned sent_before)
{
	const struct expect *e = &s->e;
	const struct sent *last = w.nsent ? &w.sent[w.nsent - 1] : NULL;
	const struct roce_opinfo *oi;

	if (e->nsent && (int)(w.nsent - sent_before) != e->nsent - 1)
		test_fail(__FILE__, __LINE__, "step %u: %u packets sent, want %d", i,
			  w.nsent - sent_before, e->nsent - 1);
	if ((e->opcode || e->syndrome || e->psn) && !last)
		test_fail(__FILE__, __LINE__, "step %u: nothing was sent", i);
	if (e->opcode && last->h.opcode != e->opcode - 1)
		test_fail(__FILE__, __LINE__, "step %u: sent opcode 0x%02x, want 0x%02x", i,
			  last->h.opcode, e->opcode - 1);
	if (e->syndrome && last->h.syndrome != e->syndrome - 1)
		test_fail(__FILE__, __LINE__, "step %u: syndrome 0x%02x, want 0x%02x", i,
			  last->h.syndrome, e->syndrome - 1);
	if (e->psn) {
		oi = roce_opinfo(last->h.opcode);
		if (last->h.psn !=
		    (((oi->flags & ROCE_F_RESP) ? EPSN : SPSN) + (uint32_t)e->psn - 1))
			test_fail(__FILE__, __LINE__, "step %u: PSN %u, want base+%d", i,
				  last->h.psn, e->psn - 1);
	}
	if (e->rcqe && cq_count(w.rcq_shm) != (uint32_t)e->rcqe - 1)
		test_fail(__FILE__, __LINE__, "step %u: %u receive completions, want %d", i,
			  cq_count(w.rcq_shm), e->rcqe - 1);
	if (e->scqe && cq_count(w.scq_shm) != (uint32_t)e->scqe - 1)
		test_fail(__FILE__, __LINE__, "step %u: %u send completions, want %d", i,
			  cq_count(w.scq_shm), e->scqe - 1);
	if (e->status) {
		const struct sof_cq_shm *cq = e->scqe ? w.scq_shm : w.rcq_shm;

		if (!cq_count(cq) || cq_last(cq)->status != e->status - 1)
			test_fail(__FILE__, __LINE__, "step %u: status %u, want %d", i,
				  cq_count(cq) ? cq_last(cq)->status : 0u, e->status - 1);
	}
	if (e->state && w.qp.t->state != (uint32_t)e->state - 1)
		test_fail(__FILE__, __LINE__, "step %u: QP state %u, want %d", i, w.qp.t->state,
			  e->state - 1);
}

/* Run the steps against a fresh world; the caller checks more, then
 * calls world_down. */
static void run_steps(const struct step *steps)
{
	world_up();
	for (unsigned i = 0; steps[i].kind != S_END; i++) {
		const struct step *s = &steps[i];
		unsigned before = w.nsent;

		switch (s->kind) {
		case S_IN:
			packet_in(s);
			break;
		case S_RECV:
			post_recv(s->len);
			break;
		case S_WRITE:
			post_write(s->len, s->rkey);
			break;
		case S_BATCH:
			tp_input_end();
			break;
		case S_TIMER_RNR:
			CHECK(w.qp.t->rnr_ns != 0);
			tp_req_timer(w.qp.t, w.qp.t->rnr_ns);
			break;
		case S_END:
			break;
		}
		check_step(s, i, before);
	}
}

#define ACK (ROCE_AETH_ACK | ROCE_AETH_CREDIT_INVALID)
#define NAK(code) (ROCE_AETH_NAK | (code))
#define RNR_NAK(timer) (ROCE_AETH_RNR_NAK | (timer))

/* ---- the responder ------------------------------------------------------ */

TEST(resp_send_ack_duplicate)
{
	const struct step steps[] = {
	    {S_RECV, .len = 256, .e = {0}},
	    {S_RECV, .len = 256, .e = {0}},
	    /* executed: one completion, the ACK waits for the batch's end */
	    {S_IN, ROCE_SEND_ONLY, 0, 100, .e = {.nsent = V(0), .rcqe = V(1)}},
	    {S_IN, ROCE_SEND_ONLY, 1, 100, .e = {.nsent = V(0), .rcqe = V(2)}},
	    /* one ACK for both (coalesced), of the second's PSN */
	    {S_BATCH, .e = {.nsent = V(1), .opcode = V(ROCE_ACK), .syndrome = V(ACK), .psn = V(1)}},
	    /* a repeat of the first: acknowledged again, not executed */
	    {S_IN, ROCE_SEND_ONLY, 0, 100, .e = {.nsent = V(0), .rcqe = V(2)}},
	    {S_BATCH, .e = {.nsent = V(1), .opcode = V(ROCE_ACK), .syndrome = V(ACK), .psn = V(1)}},
	    {S_END, .e = {0}},
	};

	run_steps(steps);
	world_down();
}

/* IBA 10.9.3: the P_Key match (partition equal and not 0, one side a
 * full member) and the classifier's check against the QP's P_Key, on the
 * RoCE port the default 0xffff: another partition is dropped and counted,
 * the default's limited form is taken, and the answers carry 0xffff. */
TEST(pkey_check)
{
	const struct step ok_step[] = {
	    {S_RECV, .len = 256, .e = {0}},
	    {S_IN, ROCE_SEND_ONLY, 0, 100, .e = {.nsent = V(0), .rcqe = V(1)}},
	    {S_BATCH, .e = {.nsent = V(1), .opcode = V(ROCE_ACK), .syndrome = V(ACK), .psn = V(0)}},
	    {S_END, .e = {0}},
	};
	const struct step bad_step[] = {
	    {S_RECV, .len = 256, .e = {0}},
	    {S_IN, ROCE_SEND_ONLY, 0, 100, .e = {.nsent = V(0), .rcqe = V(0)}},
	    {S_BATCH, .e = {.nsent = V(0)}},
	    {S_END, .e = {0}},
	};

	CHECK(tp_pkey_match(0xffff, 0xffff));
	CHECK(tp_pkey_match(0xffff, 0x7fff));
	CHECK(tp_pkey_match(0x7fff, 0xffff));
	CHECK(!tp_pkey_match(0x7fff, 0x7fff)); /* two limited members */
	CHECK(tp_pkey_match(0x8001, 0x0001));
	CHECK(!tp_pkey_match(0x0001, 0x0001));
	CHECK(!tp_pkey_match(0x8001, 0x8002));
	CHECK(!tp_pkey_match(0x8000, 0x8000)); /* partition 0 is invalid */
	CHECK(!tp_pkey_match(0, 0x8001));	/* an empty entry */

	in_pkey = 0x8001;
	run_steps(bad_step);
	CHECK_EQ(w.drops[SOF_DROP_pkey], 1);
	world_down();
	in_pkey = 0x7fff;
	run_steps(ok_step);
	CHECK_EQ(w.drops[SOF_DROP_pkey], 0);
	CHECK(w.nsent >= 1 && w.sent[w.nsent - 1].h.pkey == 0xffff);
	world_down();
	in_pkey = 0xffff;
}

TEST(resp_sequence_error_nak_once)
{
	const struct step steps[] = {
	    {S_RECV, .len = 256, .e = {0}},
	    /* far ahead (beyond what is kept): NAK naming the expected PSN */
	    {S_IN, ROCE_SEND_ONLY, 300, 100,
	     .e = {.nsent = V(1),
		   .opcode = V(ROCE_ACK),
		   .syndrome = V(NAK(ROCE_NAK_PSN_SEQ_ERR)),
		   .psn = V(0),
		   .rcqe = V(0)}},
	    /* again ahead: no second NAK for the same error */
	    {S_IN, ROCE_SEND_ONLY, 301, 100, .e = {.nsent = V(0), .rcqe = V(0)}},
	    /* the expected one: executed, the error is over */
	    {S_IN, ROCE_SEND_ONLY, 0, 100, .e = {.nsent = V(0), .rcqe = V(1)}},
	    {S_BATCH,
	     .e = {.nsent = V(1), .syndrome = V(ACK), .psn = V(0), .state = V(IBV_QPS_RTS)}},
	    {S_END, .e = {0}},
	};

	run_steps(steps);
	CHECK_EQ(w.drops[SOF_DROP_psn], 2);
	world_down();
}

TEST(resp_rnr_nak)
{
	const struct step steps[] = {
	    /* no receive WQE: RNR NAK with the QP's min_rnr_timer */
	    {S_IN, ROCE_SEND_ONLY, 0, 100,
	     .e = {.nsent = V(1),
		   .opcode = V(ROCE_ACK),
		   .syndrome = V(RNR_NAK(1)),
		   .psn = V(0),
		   .rcqe = V(0),
		   .state = V(IBV_QPS_RTS)}},
	    /* posted, and sent again: executed */
	    {S_RECV, .len = 256, .e = {0}},
	    {S_IN, ROCE_SEND_ONLY, 0, 100, .e = {.nsent = V(0), .rcqe = V(1)}},
	    {S_END, .e = {0}},
	};

	run_steps(steps);
	CHECK_EQ(w.counters[SOF_CNT_rnr_nak_sent], 1);
	world_down();
}

TEST(resp_remote_access_nak)
{
	const struct step steps[] = {
	    /* a WRITE to a read-only region: NAK, the QP goes to ERROR */
	    {S_IN, ROCE_WRITE_ONLY, 0, 64, KEY_RO,
	     .e = {.nsent = V(1),
		   .opcode = V(ROCE_ACK),
		   .syndrome = V(NAK(ROCE_NAK_REM_ACCESS)),
		   .psn = V(0),
		   .state = V(IBV_QPS_ERR)}},
	    {S_END, .e = {0}},
	};

	run_steps(steps);
	CHECK_EQ(w.errors, 1);
	CHECK_EQ(w.last_event, IBV_EVENT_QP_ACCESS_ERR);
	world_down();
}

TEST(resp_invalid_request_nak)
{
	const struct step steps[] = {
	    {S_RECV, .len = 4096, .e = {0}},
	    /* a MIDDLE with no FIRST before it (IBA 9.7.5.2.4, class B) */
	    {S_IN, ROCE_SEND_MIDDLE, 0, 1024,
	     .e = {.nsent = V(1),
		   .syndrome = V(NAK(ROCE_NAK_INV_REQ)),
		   .psn = V(0),
		   .state = V(IBV_QPS_ERR)}},
	    {S_END, .e = {0}},
	};

	run_steps(steps);
	CHECK_EQ(w.last_event, IBV_EVENT_QP_REQ_ERR);
	world_down();
}

TEST(resp_write_into_region)
{
	const struct step steps[] = {
	    {S_IN, ROCE_WRITE_ONLY, 0, 64, KEY_RW, .e = {.nsent = V(0), .rcqe = V(0)}},
	    {S_BATCH,
	     .e = {.nsent = V(1), .syndrome = V(ACK), .psn = V(0), .state = V(IBV_QPS_RTS)}},
	    {S_END, .e = {0}},
	};

	run_steps(steps);
	world_down();
}

/* ---- the requester and the completer ------------------------------------ */

TEST(req_write_acked)
{
	const struct step steps[] = {
	    /* 100 bytes: one WRITE ONLY at the first PSN */
	    {S_WRITE, .len = 100, .rkey = 0x99,
	     .e = {.nsent = V(1), .opcode = V(ROCE_WRITE_ONLY), .psn = V(0), .scqe = V(0)}},
	    {S_IN, ROCE_ACK, 0, .syndrome = ACK,
	     .e = {.nsent = V(0), .scqe = V(1), .status = V(IBV_WC_SUCCESS)}},
	    /* 3000 bytes at MTU 1024: FIRST, MIDDLE, LAST */
	    {S_WRITE, .len = 3000, .rkey = 0x99,
	     .e = {.nsent = V(3), .opcode = V(ROCE_WRITE_LAST), .psn = V(3), .scqe = V(1)}},
	    /* an ACK of the MIDDLE completes nothing yet */
	    {S_IN, ROCE_ACK, 2, .syndrome = ACK, .e = {.nsent = V(0), .scqe = V(1)}},
	    {S_IN, ROCE_ACK, 3, .syndrome = ACK,
	     .e = {.nsent = V(0),
		   .scqe = V(2),
		   .status = V(IBV_WC_SUCCESS),
		   .state = V(IBV_QPS_RTS)}},
	    {S_END, .e = {0}},
	};

	run_steps(steps);
	world_down();
}

TEST(req_sequence_nak_resends)
{
	const struct step steps[] = {
	    {S_WRITE, .len = 3000, .rkey = 0x99, .e = {.nsent = V(3)}},
	    /* the responder lost PSN +1: go back and send from there */
	    {S_IN, ROCE_ACK, 1, .syndrome = NAK(ROCE_NAK_PSN_SEQ_ERR),
	     .e = {.nsent = V(2), .opcode = V(ROCE_WRITE_LAST), .psn = V(2), .scqe = V(0)}},
	    {S_IN, ROCE_ACK, 2, .syndrome = ACK,
	     .e = {.nsent = V(0), .scqe = V(1), .status = V(IBV_WC_SUCCESS)}},
	    {S_END, .e = {0}},
	};

	run_steps(steps);
	world_down();
}

TEST(req_rnr_nak_waits)
{
	const struct step steps[] = {
	    {S_WRITE, .len = 100, .rkey = 0x99, .e = {.nsent = V(1)}},
	    /* RNR: nothing is sent until the responder's timer ran out */
	    {S_IN, ROCE_ACK, 0, .syndrome = RNR_NAK(1), .e = {.nsent = V(0), .scqe = V(0)}},
	    {S_TIMER_RNR,
	     .e = {.nsent = V(1), .opcode = V(ROCE_WRITE_ONLY), .psn = V(0), .scqe = V(0)}},
	    {S_IN, ROCE_ACK, 0, .syndrome = ACK,
	     .e = {.nsent = V(0), .scqe = V(1), .status = V(IBV_WC_SUCCESS)}},
	    {S_END, .e = {0}},
	};

	run_steps(steps);
	world_down();
}

TEST(comp_remote_access_flushes)
{
	const struct step steps[] = {
	    {S_WRITE, .len = 100, .rkey = 0x99, .e = {.nsent = V(1)}},
	    {S_WRITE, .len = 100, .rkey = 0x99, .e = {.nsent = V(1), .psn = V(1)}},
	    /* the first fails with its status, the second is flushed */
	    {S_IN, ROCE_ACK, 0, .syndrome = NAK(ROCE_NAK_REM_ACCESS),
	     .e = {.nsent = V(0),
		   .scqe = V(2),
		   .status = V(IBV_WC_WR_FLUSH_ERR),
		   .state = V(IBV_QPS_ERR)}},
	    {S_END, .e = {0}},
	};
	const struct sof_cqe *first;

	run_steps(steps);
	first = (const struct sof_cqe *)((const uint8_t *)w.scq_shm + SOF_CQ_RING_OFF);
	CHECK_EQ(first->status, IBV_WC_REM_ACCESS_ERR);
	CHECK_EQ(first->wr_id, 200);
	world_down();
}

/* ---- XRC ------------------------------------------------------------------ */

#define XRC(op) (ROCE_SVC_XRC | ROCE_##op)

TEST(xrc_tgt_send_to_srq)
{
	const struct step steps[] = {
	    {S_RECV, .len = 256, .e = {0}},
	    {S_IN, XRC(SEND_ONLY), 0, 100, .e = {.nsent = V(0), .rcqe = V(1)}},
	    {S_BATCH,
	     .e = {.nsent = V(1), .opcode = V(XRC(ACK)), .syndrome = V(ACK), .psn = V(0)}},
	    /* an RC request is not for an XRC TGT QP: dropped */
	    {S_IN, ROCE_SEND_ONLY, 1, 100, .e = {.nsent = V(0), .rcqe = V(1)}},
	    {S_END, .e = {0}},
	};
	const struct sof_cqe *c;

	world_type = IBV_QPT_XRC_RECV;
	world_xrcsrq = XRC_SRQN;
	run_steps(steps);
	c = cq_last(w.rcq_shm);
	CHECK_EQ(c->status, IBV_WC_SUCCESS);
	CHECK_EQ(c->qp_num, QPN); /* the TGT QP, on the SRQ's CQ */
	CHECK_EQ(c->byte_len, 100);
	CHECK_EQ(c->wr_id, 100);
	CHECK_EQ(w.drops[SOF_DROP_qp_type], 1);
	world_down();
	world_type = IBV_QPT_RC;
	world_xrcsrq = 0;
}

TEST(xrc_tgt_wrong_srq_nak)
{
	const struct step steps[] = {
	    {S_RECV, .len = 256, .e = {0}},
	    /* an SRQ the host does not give: invalid request, the QP ends */
	    {S_IN, XRC(SEND_ONLY), 0, 100,
	     .e = {.nsent = V(1),
		   .opcode = V(XRC(ACK)),
		   .syndrome = V(NAK(ROCE_NAK_INV_REQ)),
		   .psn = V(0),
		   .rcqe = V(0),
		   .state = V(IBV_QPS_ERR)}},
	    {S_END, .e = {0}},
	};

	world_type = IBV_QPT_XRC_RECV;
	world_xrcsrq = XRC_SRQN + 1;
	run_steps(steps);
	CHECK_EQ(w.last_event, IBV_EVENT_QP_REQ_ERR);
	world_down();
	world_type = IBV_QPT_RC;
	world_xrcsrq = 0;
}

TEST(xrc_ini_write_acked)
{
	const struct step steps[] = {
	    {S_WRITE, .len = 100, .rkey = 0x99,
	     .e = {.nsent = V(1), .opcode = V(XRC(WRITE_ONLY)), .psn = V(0), .scqe = V(0)}},
	    /* an RC ACK is not for an XRC INI QP: dropped */
	    {S_IN, ROCE_ACK, 0, .syndrome = ACK, .e = {.nsent = V(0), .scqe = V(0)}},
	    {S_IN, XRC(ACK), 0, .syndrome = ACK,
	     .e = {.nsent = V(0), .scqe = V(1), .status = V(IBV_WC_SUCCESS)}},
	    {S_END, .e = {0}},
	};

	world_type = IBV_QPT_XRC_SEND;
	world_xrcsrq = XRC_SRQN;
	run_steps(steps);
	CHECK_EQ(w.sent[0].h.xrcsrq, XRC_SRQN);
	CHECK_EQ(w.sent[0].h.rkey, 0x99);
	world_down();
	world_type = IBV_QPT_RC;
	world_xrcsrq = 0;
}

/* ---- selective acknowledgements (transport/sack.c) ------------------------- */

/* A request or ACK from the peer with the BTH ext bit, a payload of len
 * bytes of value fill (or, with sack, those bytes). */
static void ext_in(uint8_t opcode, uint32_t psn, uint32_t len, uint8_t fill, const uint8_t *sack)
{
	static uint8_t payload[4096];
	struct roce_hdr h;
	struct roce_addr a = {.sport = 0xc123, .dport = ROCE_UDP_PORT};

	memset(&h, 0, sizeof(h));
	h.opcode = opcode;
	h.pkey = 0xffff;
	h.dqpn = QPN;
	h.psn = psn & ROCE_PSN_MASK;
	h.ext = true;
	h.rkey = KEY_RW;
	h.va = IOVA;
	h.dmalen = 3072;
	h.syndrome = ACK;
	if (sack)
		memcpy(payload, sack, len);
	else
		memset(payload, fill, len);
	memcpy(a.src, peer4, 16);
	memcpy(a.dst, local4, 16);
	tp_recv(&h, payload, len, &a);
}

static bool mem_is(uint32_t off, uint32_t len, uint8_t v)
{
	for (uint32_t i = 0; i < len; i++)
		if (w.mem[off + i] != v)
			return false;
	return true;
}

/* The responder keeps the MIDDLE and LAST of a WRITE whose FIRST was lost
 * and answers with a SACK of them, not a NAK; the FIRST places all three
 * where the RETH says, in order. */
TEST(sack_resp_write_out_of_order)
{
	const struct sent *last;
	uint32_t base, bits;
	const uint8_t *map;

	world_up();
	tp_sack_on = true; /* SOFTOFED_SACK=1 */
	ext_in(ROCE_WRITE_MIDDLE, EPSN + 1, 1024, 0x22, NULL);
	ext_in(ROCE_WRITE_LAST, EPSN + 2, 1024, 0x33, NULL);
	CHECK_EQ(w.nsent, 0);
	tp_input_end();
	CHECK_EQ(w.nsent, 1);
	last = &w.sent[0];
	CHECK_EQ(last->h.opcode, ROCE_ACK);
	CHECK_EQ(last->h.syndrome, ACK);
	CHECK(last->h.ext);
	CHECK_EQ(last->h.psn, EPSN - 1);
	CHECK_EQ(last->paylen, ROCE_SACK_LEN);
	CHECK(roce_sack_parse(w.lastpay, ROCE_SACK_LEN, &base, &map, &bits));
	CHECK_EQ(bits, ROCE_SACK_BITS);
	CHECK_EQ(base, EPSN);
	CHECK(!roce_sack_bit(map, 0) && roce_sack_bit(map, 1) && roce_sack_bit(map, 2) &&
	      !roce_sack_bit(map, 3));
	CHECK(mem_is(1024, 2048, 0)); /* nothing placed ahead of the RETH */
	ext_in(ROCE_WRITE_FIRST, EPSN, 1024, 0x11, NULL);
	CHECK(mem_is(0, 1024, 0x11) && mem_is(1024, 1024, 0x22) && mem_is(2048, 1024, 0x33));
	tp_input_end();
	CHECK_EQ(w.nsent, 2);
	CHECK_EQ(w.sent[1].h.psn, EPSN + 2);
	CHECK_EQ(w.sent[1].paylen, 0); /* nothing kept: a plain ACK */
	CHECK_EQ(w.counters[SOF_CNT_nak_sent], 0);
	world_down();
}

/* A SEND whose FIRST is lost completes only when it arrives, with every
 * byte in the receive buffer at its offset. */
TEST(sack_resp_send_completes_in_order)
{
	world_up();
	tp_sack_on = true;
	post_recv(4096);
	ext_in(ROCE_SEND_LAST, EPSN + 2, 100, 0x33, NULL);
	ext_in(ROCE_SEND_MIDDLE, EPSN + 1, 1024, 0x22, NULL);
	tp_input_end();
	CHECK_EQ(cq_count(w.rcq_shm), 0);
	ext_in(ROCE_SEND_FIRST, EPSN, 1024, 0x11, NULL);
	CHECK_EQ(cq_count(w.rcq_shm), 1);
	CHECK_EQ(cq_last(w.rcq_shm)->status, IBV_WC_SUCCESS);
	CHECK_EQ(cq_last(w.rcq_shm)->byte_len, 2148);
	CHECK(mem_is(0, 1024, 0x11) && mem_is(1024, 1024, 0x22) && mem_is(2048, 100, 0x33));
	world_down();
}

static void sack_of(uint8_t *buf, uint32_t base, const uint32_t *bits, unsigned n)
{
	uint8_t map[ROCE_SACK_BITS / 8];

	memset(map, 0, sizeof(map));
	for (unsigned i = 0; i < n; i++)
		map[bits[i] >> 3] |= (uint8_t)(0x80u >> (bits[i] & 7));
	roce_sack_write(buf, base, map, ROCE_SACK_BITS);
}

/* The requester resends only the holes a SACK names, and ignores (and
 * counts) SACKs that lie: PSNs it never sent, the expected PSN itself
 * claimed, a base that is not the ACK's PSN + 1, a wrong kind. */
TEST(sack_req_holes_and_lies)
{
	uint8_t sack[ROCE_SACK_LEN];
	const uint32_t got[] = {2, 3, 4}, beyond[] = {3, 9}, self[] = {0, 3};
	unsigned before;

	world_up();
	tp_sack_on = true;
	post_write(6 * 1024, 0x99);
	CHECK_EQ(w.nsent, 6); /* PSNs +0..+5 */
	/* +0 acknowledged; of +1..+5, +3, +4 and +5 arrived: +1 and +2 are
	 * holes (three packets after them arrived) */
	sack_of(sack, SPSN + 1, got, 3);
	ext_in(ROCE_ACK, SPSN, ROCE_SACK_LEN, 0, sack);
	CHECK(w.qp.t->sack_ok);
	CHECK_EQ(w.nsent, 8);
	CHECK_EQ(w.sent[6].h.psn, SPSN + 1);
	CHECK_EQ(w.sent[7].h.psn, SPSN + 2);
	CHECK_EQ(w.sent[7].h.opcode, ROCE_WRITE_MIDDLE);
	CHECK(w.sent[7].h.ext);
	CHECK_EQ(w.counters[SOF_CNT_sack_resends], 2);
	/* the same SACK again: the holes were resent already */
	ext_in(ROCE_ACK, SPSN, ROCE_SACK_LEN, 0, sack);
	CHECK_EQ(w.nsent, 8);
	CHECK_EQ(w.counters[SOF_CNT_sack_lies], 0);
	before = w.nsent;
	/* lies: a PSN never sent (+10), the expected PSN itself, a base that
	 * is not the ACK's + 1, a wrong kind */
	sack_of(sack, SPSN + 1, beyond, 2);
	ext_in(ROCE_ACK, SPSN, ROCE_SACK_LEN, 0, sack);
	sack_of(sack, SPSN + 1, self, 2);
	ext_in(ROCE_ACK, SPSN, ROCE_SACK_LEN, 0, sack);
	sack_of(sack, SPSN + 7, got, 3);
	ext_in(ROCE_ACK, SPSN, ROCE_SACK_LEN, 0, sack);
	sack[0] = 0;
	ext_in(ROCE_ACK, SPSN, ROCE_SACK_LEN, 0, sack);
	CHECK_EQ(w.counters[SOF_CNT_sack_lies], 4);
	CHECK_EQ(w.nsent, before);
	/* a longer map that names the holes' neighbours truly and a PSN
	 * 300 ahead, never sent: a lie, nothing resent */
	{
		uint8_t lsack[4 + 512 / 8], lmap[512 / 8];

		memset(lmap, 0, sizeof(lmap));
		lmap[0] = 0x38; /* +3, +4, +5 (bits 2-4 from base +1) */
		lmap[301 >> 3] |= (uint8_t)(0x80u >> (301 & 7));
		CHECK_EQ(roce_sack_write(lsack, SPSN + 1, lmap, 512), sizeof(lsack));
		ext_in(ROCE_ACK, SPSN, sizeof(lsack), 0, lsack);
		CHECK_EQ(w.counters[SOF_CNT_sack_lies], 5);
		CHECK_EQ(w.nsent, before);
	}
	CHECK_EQ(w.qp.t->state, IBV_QPS_RTS);
	/* everything acknowledged: the WRITE completes once */
	ext_in(ROCE_ACK, SPSN + 5, 0, 0, NULL);
	CHECK_EQ(cq_count(w.scq_shm), 1);
	CHECK_EQ(cq_last(w.scq_shm)->status, IBV_WC_SUCCESS);
	world_down();
}

/* RACK (sack.c): a hole whose resend is lost again goes again once a
 * packet sent after that resend arrived, and not on the word of packets
 * sent before it; a SACK with a 512-bit map is taken as one of 256. */
TEST(sack_req_rack_resend_lost_again)
{
	uint8_t sack[ROCE_SACK_MAX_LEN], map[ROCE_SACK_MAX_BITS / 8];
	const uint32_t got[] = {2, 3, 4}, before[] = {1, 2, 3, 4, 5, 6};

	world_up();
	tp_sack_on = true;
	post_write(8 * 1024, 0x99);
	CHECK_EQ(w.nsent, 8); /* PSNs +0..+7 */
	/* +0 acknowledged, +3..+5 arrived: +1 and +2 resent */
	sack_of(sack, SPSN + 1, got, 3);
	ext_in(ROCE_ACK, SPSN, ROCE_SACK_LEN, 0, sack);
	CHECK_EQ(w.nsent, 10);
	/* +2's resend and +6, +7 (sent before the resends) arrived: +1's
	 * resend may still be on its way */
	sack_of(sack, SPSN + 1, before, 6);
	ext_in(ROCE_ACK, SPSN, ROCE_SACK_LEN, 0, sack);
	CHECK_EQ(w.nsent, 10);
	usleep(2000);
	post_write(1024, 0x99); /* +8, well after +1's resend */
	CHECK_EQ(w.nsent, 11);
	/* +8 arrived and +1 did not: +1's resend was lost, it goes again */
	memset(map, 0, sizeof(map));
	for (uint32_t i = 1; i <= 7; i++)
		map[i >> 3] |= (uint8_t)(0x80u >> (i & 7));
	CHECK_EQ(roce_sack_write(sack, SPSN + 1, map, 2 * ROCE_SACK_BITS), 68);
	ext_in(ROCE_ACK, SPSN, 68, 0, sack);
	CHECK_EQ(w.nsent, 12);
	CHECK_EQ(w.sent[11].h.psn, SPSN + 1);
	CHECK_EQ(w.counters[SOF_CNT_sack_resends], 3);
	CHECK_EQ(w.counters[SOF_CNT_sack_lies], 0);
	ext_in(ROCE_ACK, SPSN + 8, 0, 0, NULL);
	CHECK_EQ(cq_count(w.scq_shm), 2);
	world_down();
}

/* The responder keeps a packet 300 PSNs ahead from a requester that
 * speaks the extension, and names it in a SACK of a 512-bit map (the
 * shortest that holds it); one 1024 ahead is dropped. */
TEST(sack_resp_long_map)
{
	uint32_t base, bits;
	const uint8_t *map;

	world_up();
	tp_sack_on = true;
	ext_in(ROCE_WRITE_MIDDLE, EPSN + 300, 1024, 0x22, NULL);
	ext_in(ROCE_WRITE_MIDDLE, EPSN + ROCE_SACK_MAX_BITS, 1024, 0x22, NULL);
	tp_input_end();
	CHECK_EQ(w.nsent, 1);
	CHECK_EQ(w.sent[0].paylen, 68);
	CHECK(roce_sack_parse(w.lastpay, 68, &base, &map, &bits));
	CHECK_EQ(base, EPSN);
	CHECK_EQ(bits, 512);
	CHECK(roce_sack_bit(map, 300) && !roce_sack_bit(map, 299) && !roce_sack_bit(map, 301));
	CHECK_EQ(w.drops[SOF_DROP_psn], 1);
	world_down();
}

/* A responder that does not speak the extension (no ext on the requests
 * it gets: a standard peer) is answered as IBA has it: no ext bit on its
 * ACKs, a NAK for a sequence error. */
TEST(sack_standard_peer_gets_none)
{
	const struct step steps[] = {
	    {S_RECV, .len = 256, .e = {0}},
	    {S_IN, ROCE_SEND_ONLY, 1, 100, .e = {.nsent = V(0)}},
	    {S_IN, ROCE_SEND_ONLY, 2, 100, .e = {.nsent = V(0)}},
	    {S_IN, ROCE_SEND_ONLY, 3, 100,
	     .e = {.nsent = V(1), .syndrome = V(NAK(ROCE_NAK_PSN_SEQ_ERR)), .psn = V(0)}},
	    {S_END, .e = {0}},
	};

	run_steps(steps);
	CHECK(!w.sent[0].h.ext);
	CHECK_EQ(w.sent[0].paylen, 0);
	CHECK(!w.qp.t->sack_peer);
	world_down();
}

/* A READ of len bytes from the peer's 0x700000 + roff into the region at
 * off, posted and rung. */
static void post_read(uint32_t off, uint32_t len, uint64_t roff)
{
	uint32_t tail = atomic_load(&w.nsq->idx.tail);
	uint8_t *slot =
	    (uint8_t *)w.nsq + SOF_NSQ_RING_OFF + (size_t)(tail & (SQ_SIZE - 1)) * w.qp.sq_stride;
	struct sof_nwqe e = {.wr_id = 200 + tail,
			     .opcode = IBV_WR_RDMA_READ,
			     .send_flags = IBV_SEND_SIGNALED,
			     .num_sge = 1,
			     .rkey = 0x99,
			     .remote_addr = 0x700000 + roff};
	struct sof_sge sge = {.addr = IOVA + off, .length = len, .lkey = KEY_RW};

	memcpy(slot, &e, sizeof(e));
	memcpy(slot + sizeof(e), &sge, sizeof(sge));
	atomic_store(&w.nsq->idx.tail, tail + 1);
	tp_qp_doorbell(&w.qp);
}

/* The byte of the peer's memory at va (one value per KiB). */
static uint8_t peer_byte(uint64_t va) { return (uint8_t)((va >> 10) * 7 + 3); }

/* A softofed responder for the requester under test, as responder.c has
 * it: a request at the expected PSN is executed (a READ served, its
 * responses a PSN each), then the requests kept ahead that follow it, and
 * a WRITE's ACK; one ahead is kept and answered with a SACK of every PSN
 * kept (a READ's responses too); one behind is a duplicate: a READ served
 * again from the PSN it names, a WRITE acknowledged. The packets of PSN
 * drop_psn are dropped drop_left times (UINT32_MAX: always); the READ
 * responses of PSNs rdrop_psn to rdrop_psn + rdrop_n - 1 are lost, the
 * first rdrop_left of them. served counts the READ responses sent. */
struct rpeer {
	uint32_t epsn;
	unsigned nkept;
	struct roce_hdr kept[16];
	uint32_t drop_psn, drop_left;
	unsigned dropped;
	uint32_t rdrop_psn, rdrop_n, rdrop_left;
	unsigned served;
};

static uint32_t rpeer_psns(const struct roce_hdr *h)
{
	return h->opcode == ROCE_READ_REQ && h->dmalen ? (h->dmalen + 1023) / 1024 : 1;
}

static void rpeer_serve(struct rpeer *p, const struct roce_hdr *h)
{
	uint32_t n = rpeer_psns(h);

	for (uint32_t i = 0; i < n; i++) {
		uint32_t d = (h->psn + i - p->rdrop_psn) & ROCE_PSN_MASK;
		uint32_t len = i + 1 < n ? 1024 : h->dmalen - i * 1024;
		uint8_t op = n == 1	  ? ROCE_READ_RESP_ONLY
			     : i == 0	  ? ROCE_READ_RESP_FIRST
			     : i + 1 == n ? ROCE_READ_RESP_LAST
					  : ROCE_READ_RESP_MIDDLE;

		p->served++;
		if (d < p->rdrop_n && p->rdrop_left) {
			p->rdrop_left--;
			continue;
		}
		ext_in(op, h->psn + i, len, peer_byte(h->va + (uint64_t)i * 1024), NULL);
	}
}

/* Execute h, at the expected PSN; true when it owes an ACK (not a READ). */
static bool rpeer_exec(struct rpeer *p, const struct roce_hdr *h)
{
	p->epsn = (p->epsn + rpeer_psns(h)) & ROCE_PSN_MASK;
	if (h->opcode != ROCE_READ_REQ)
		return true;
	rpeer_serve(p, h);
	return false;
}

static void rpeer_sack(const struct rpeer *p)
{
	uint8_t map[ROCE_SACK_MAX_BITS / 8], sack[ROCE_SACK_MAX_LEN];
	uint32_t hi = 0;

	memset(map, 0, sizeof(map));
	for (unsigned i = 0; i < p->nkept; i++) {
		uint32_t at = (uint32_t)roce_psn_diff(p->kept[i].psn, p->epsn);

		for (uint32_t n = rpeer_psns(&p->kept[i]); n && at < ROCE_SACK_MAX_BITS;
		     n--, at++) {
			map[at >> 3] |= (uint8_t)(0x80u >> (at & 7));
			hi = at > hi ? at : hi;
		}
	}
	ext_in(ROCE_ACK, p->epsn - 1,
	       roce_sack_write(sack, p->epsn, map, (hi / ROCE_SACK_BITS + 1) * ROCE_SACK_BITS), 0,
	       sack);
}

static void rpeer_rx(struct rpeer *p, const struct roce_hdr *h)
{
	int32_t d = roce_psn_diff(h->psn, p->epsn);
	bool ack, again = true;

	if (h->psn == p->drop_psn && p->drop_left) {
		if (p->drop_left != UINT32_MAX)
			p->drop_left--;
		p->dropped++;
		return;
	}
	if (d < 0) {
		if (h->opcode == ROCE_READ_REQ)
			rpeer_serve(p, h);
		else
			ext_in(ROCE_ACK, p->epsn - 1, 0, 0, NULL);
		return;
	}
	if (d > 0) {
		unsigned i = 0;

		while (i < p->nkept && p->kept[i].psn != h->psn)
			i++;
		if (i == p->nkept) {
			CHECK(p->nkept < SOF_ARRAY_SIZE(p->kept));
			p->kept[p->nkept++] = *h;
		}
		rpeer_sack(p);
		return;
	}
	ack = rpeer_exec(p, h);
	while (again) {
		again = false;
		for (unsigned i = 0; i < p->nkept; i++) {
			if (p->kept[i].psn != p->epsn)
				continue;
			ack = rpeer_exec(p, &p->kept[i]);
			p->kept[i] = p->kept[--p->nkept];
			again = true;
			break;
		}
	}
	if (ack)
		ext_in(ROCE_ACK, p->epsn - 1, 0, 0, NULL);
}

/* Deliver what the requester sends to p, and run its timers when they
 * come due, until want send completions are in, the QP is in error, or
 * secs seconds passed. */
static void rpeer_run(struct rpeer *p, unsigned want, unsigned secs)
{
	static struct sent q[SOF_ARRAY_SIZE(w.sent)];
	uint64_t t0 = sof_now_ns(), due;

	for (;;) {
		while (w.nsent) {
			unsigned n = w.nsent;

			memcpy(q, w.sent, n * sizeof(q[0]));
			w.nsent = 0;
			for (unsigned i = 0; i < n; i++)
				rpeer_rx(p, &q[i].h);
		}
		if (cq_count(w.scq_shm) >= want || w.qp.t->state != IBV_QPS_RTS ||
		    sof_now_ns() - t0 > secs * 1000000000ull)
			return;
		/* the requester's next deadline: a probe or the timer */
		due = w.qp.t->probe_ns && (!w.qp.t->timer_ns || w.qp.t->probe_ns < w.qp.t->timer_ns)
			  ? w.qp.t->probe_ns
			  : w.qp.t->timer_ns;
		CHECK(due != 0);
		if (!due)
			return;
		while (sof_now_ns() < due)
			usleep(100);
		tp_req_timer(w.qp.t, sof_now_ns());
	}
}

/* A small READ's request lost, and its resend lost again, with a 1 MiB
 * READ (1024 PSNs at MTU 1024) posted behind it: the small READ's request
 * goes again and both complete with the peer's data, without a local ACK
 * timeout or a storm of probes. (The requester's records of its sends are
 * by PSN modulo the 1024 a SACK can name. A READ sent at once behind the
 * small one took the PSNs in flight past that, and its responses' records
 * overwrote the small READ's: the lost request then looked sent with the
 * big READ, and again with each probe that resent it, so RACK never took
 * it for lost; and each probe's SACK put the transport timer off again: a
 * probe every 1.2 ms for ever, as hosts/netem's READ phase saw.) */
TEST(sack_req_read_lost_twice_under_1m_read)
{
	struct rpeer p = {.epsn = SPSN, .drop_psn = SPSN, .drop_left = 2};

	world_up();
	tp_sack_on = true;
	post_read(0, 1024, 0);
	post_read(64 * 1024, 1u << 20, 64 * 1024);
	rpeer_run(&p, 2, 2);
	CHECK_EQ(p.dropped, 2);
	CHECK_EQ(cq_count(w.scq_shm), 2);
	CHECK_EQ(cq_last(w.scq_shm)->status, IBV_WC_SUCCESS);
	CHECK(mem_is(0, 1024, peer_byte(0x700000)));
	for (uint32_t k = 0; k < 1024; k++)
		if (!mem_is(64 * 1024 + k * 1024, 1024, peer_byte(0x700000 + 64 * 1024 + k * 1024)))
			test_fail(__FILE__, __LINE__, "KiB %u of the 1 MiB READ is wrong", k);
	CHECK(w.counters[SOF_CNT_probes] < 20);
	CHECK_EQ(w.counters[SOF_CNT_timeouts], 0);
	CHECK_EQ(w.qp.t->state, IBV_QPS_RTS);
	world_down();
}

/* A peer that SACKs what follows a packet and never takes that packet:
 * the tail-loss probes and the SACKs they draw do not put the transport
 * timer off, so the WRITE fails with IBV_WC_RETRY_EXC_ERR after retry_cnt
 * timeouts (IBA 9.7.6.1.3) and does not hang. */
TEST(sack_req_hole_never_filled_times_out)
{
	struct rpeer p = {.epsn = SPSN, .drop_psn = SPSN + 1, .drop_left = UINT32_MAX};

	world_up();
	tp_sack_on = true;
	post_write(4 * 1024, 0x99);
	rpeer_run(&p, 1, 3);
	CHECK_EQ(cq_count(w.scq_shm), 1);
	CHECK_EQ(cq_last(w.scq_shm)->status, IBV_WC_RETRY_EXC_ERR);
	CHECK_EQ(w.counters[SOF_CNT_timeouts], 8); /* retry_cnt 7 */
	CHECK(w.counters[SOF_CNT_sacks] > 0);
	CHECK(p.dropped > 8);
	CHECK_EQ(w.qp.t->state, IBV_QPS_ERR);
	world_down();
}

/* The tail-loss probe of a lone flight (sack.c, tp_sack_probe_ns): on a
 * quiet path it comes within a few ms; after the peer once took 20 ms to
 * answer, the first probe waits past that (a loaded machine's stall, not
 * a loss: RFC 8985 7.2's delayed-ACK allowance), up to the transport
 * timer at most, and the probes after it come as before. A late ACK of a
 * flight a probe repaired counts only from the probe, so a real loss does
 * not push the wait up. With more to send (not lone) it stays short. */
TEST(sack_req_lone_probe_waits_for_stalls)
{
	struct sof_tqp *t;
	uint64_t to, now = 1000000000ull;

	world_up();
	tp_sack_on = true;
	t = w.qp.t;
	t->sack_ok = t->sack_seen = true;
	to = sof_ack_timeout_ns(t->timeout);
	for (int i = 0; i < 20; i++)
		tp_rtt_sample(t, 50000, 50000);
	CHECK(t->wq_send == t->wq_tail); /* nothing more to send: lone */
	CHECK(tp_sack_probe_ns(t, now, to) - now < 2000000);
	/* a probe repaired a loss: the ACK came 20 ms after the send, 60 us
	 * after the probe */
	tp_rtt_sample(t, 20000000, 60000);
	CHECK(t->prtt_ns < 1000000);
	for (int i = 0; i < 20; i++)
		tp_rtt_sample(t, 50000, 50000);
	CHECK(tp_sack_probe_ns(t, now, to) - now < 4000000);
	/* the peer was off its CPU for 20 ms: the first probe waits 25 */
	tp_rtt_sample(t, 20000000, 20000000);
	CHECK(tp_sack_probe_ns(t, now, to) - now >= 25000000);
	CHECK(tp_sack_probe_ns(t, now, to) - now <= to);
	t->sack_tlps = 1;
	CHECK(tp_sack_probe_ns(t, now, to) - now <= to / 4);
	t->sack_tlps = 0;
	/* a stall longer than the timeout: the probe comes with the timer */
	tp_rtt_sample(t, 4 * to, 4 * to);
	CHECK_EQ(tp_sack_probe_ns(t, now, to) - now, to);
	/* it falls back with quick answers */
	for (int i = 0; i < 2000; i++)
		tp_rtt_sample(t, 50000, 50000);
	CHECK(tp_sack_probe_ns(t, now, to) - now < 2000000);
	world_down();
}

/* The READ requests sent since packet from. */
static unsigned read_reqs_since(unsigned from)
{
	unsigned n = 0;

	for (unsigned i = from; i < w.nsent; i++)
		n += w.sent[i].h.opcode == ROCE_READ_REQ;
	return n;
}

/* Two 64 KiB READs (64 PSNs each at MTU 1024) behind a WRITE whose ACK
 * showed a SACKing peer, both sent at once. */
static void two_reads_up(struct rpeer *p)
{
	world_up();
	tp_sack_on = true;
	post_write(1024, 0x99);
	rpeer_run(p, 1, 2);
	CHECK(w.qp.t->sack_ok);
	w.qp.t->cwnd = TP_WINDOW;
	post_read(0, 64 * 1024, 0);
	post_read(64 * 1024, 64 * 1024, 64 * 1024);
	CHECK_EQ(read_reqs_since(0), 2);
}

static void two_reads_check(void)
{
	CHECK_EQ(cq_count(w.scq_shm), 3);
	CHECK_EQ(cq_last(w.scq_shm)->status, IBV_WC_SUCCESS);
	for (uint32_t k = 0; k < 128; k++)
		if (!mem_is(k * 1024, 1024, peer_byte(0x700000 + k * 1024)))
			test_fail(__FILE__, __LINE__, "KiB %u of the READs is wrong", k);
	CHECK_EQ(w.counters[SOF_CNT_timeouts], 0);
	CHECK_EQ(w.qp.t->state, IBV_QPS_RTS);
}

/* The peer stalls (its process off the CPU) with both READs' requests in:
 * the tail-loss probe asks for the second READ's last response alone
 * (PSN, VA and length of that packet: IBA 9.7.5.1.3's READ from the
 * middle of an earlier one), so the peer, answering everything late,
 * sends one response twice, not the whole READ (64 of them here, 256
 * for fi_stream's 1 MiB READs at MTU 4096). */
TEST(read_probe_asks_for_the_last_response)
{
	struct rpeer p = {.epsn = SPSN};
	struct sent held[4];
	unsigned nheld, n0;

	two_reads_up(&p);
	nheld = w.nsent;
	CHECK(nheld <= SOF_ARRAY_SIZE(held));
	memcpy(held, w.sent, nheld * sizeof(held[0]));
	w.nsent = 0;
	CHECK(w.qp.t->probe_ns != 0);
	while (sof_now_ns() < w.qp.t->probe_ns)
		usleep(100);
	tp_req_timer(w.qp.t, sof_now_ns());
	CHECK_EQ(w.counters[SOF_CNT_probes], 1);
	CHECK_EQ(w.nsent, 1);
	n0 = 0;
	CHECK_EQ(read_reqs_since(n0), 1);
	CHECK_EQ(w.sent[0].h.psn, SPSN + 1 + 127);
	CHECK_EQ(w.sent[0].h.dmalen, 1024);
	CHECK_EQ(w.sent[0].h.va, 0x700000ull + 127 * 1024);
	/* the peer runs again: the requests, then the probe */
	for (unsigned i = 0; i < nheld; i++)
		rpeer_rx(&p, &held[i].h);
	rpeer_run(&p, 3, 2);
	two_reads_check();
	CHECK_EQ(p.served, 129);
	world_down();
}

/* The last 4 responses of the first READ are lost, the second READ's
 * come: the first of those shows the loss (responses come in PSN order),
 * and the first READ's rest (4 responses, from its first missing PSN)
 * is asked for at once, with the second READ again, whose responses the
 * requester could not take yet; no transport timeout (that used to be
 * the only way out: the second READ's responses, and every probe's
 * answer, were dropped while the first READ was incomplete). */
TEST(read_tail_lost_under_later_read)
{
	struct rpeer p = {.epsn = SPSN, .rdrop_psn = SPSN + 61, .rdrop_n = 4, .rdrop_left = 4};
	uint64_t t0;

	two_reads_up(&p);
	t0 = sof_now_ns();
	rpeer_run(&p, 3, 2);
	two_reads_check();
	CHECK_EQ(w.counters[SOF_CNT_probes], 0);
	CHECK_EQ(p.served, 64 + 64 + 4 + 64);
	CHECK(sof_now_ns() - t0 < 50000000);
	world_down();
}

/* A network that reorders a READ's responses: the one that came ahead of
 * its turn asks for the rest again once; the overtaken one arriving next
 * is placed, and a second response ahead of its turn within the same
 * round trip does not ask again (each used to draw a whole new answer of
 * the rest: a flood under hosts/netem's "both ways"). The answer of the
 * one request asked again completes the READ with the peer's data. */
TEST(read_reordered_responses_reread_once_per_rtt)
{
	const uint64_t va = 0x700000;
	unsigned n0;

	world_up();
	post_read(0, 4096, 0);
	CHECK_EQ(read_reqs_since(0), 1);
	w.qp.t->srtt_ns = 50000000; /* a round trip longer than this test */
	n0 = w.nsent;
	ext_in(ROCE_READ_RESP_FIRST, SPSN, 1024, peer_byte(va), NULL);
	ext_in(ROCE_READ_RESP_MIDDLE, SPSN + 2, 1024, peer_byte(va + 2048), NULL);
	CHECK_EQ(read_reqs_since(n0), 1); /* the rest, from +1 */
	CHECK_EQ(w.sent[w.nsent - 1].h.psn, SPSN + 1);
	ext_in(ROCE_READ_RESP_MIDDLE, SPSN + 1, 1024, peer_byte(va + 1024), NULL);
	ext_in(ROCE_READ_RESP_LAST, SPSN + 3, 1024, peer_byte(va + 3072), NULL);
	CHECK_EQ(read_reqs_since(n0), 1); /* not again within the round trip */
	CHECK_EQ(cq_count(w.scq_shm), 0);
	/* the answer of the request asked again, from +1 */
	ext_in(ROCE_READ_RESP_FIRST, SPSN + 1, 1024, peer_byte(va + 1024), NULL);
	ext_in(ROCE_READ_RESP_MIDDLE, SPSN + 2, 1024, peer_byte(va + 2048), NULL);
	ext_in(ROCE_READ_RESP_LAST, SPSN + 3, 1024, peer_byte(va + 3072), NULL);
	CHECK_EQ(cq_count(w.scq_shm), 1);
	CHECK_EQ(cq_last(w.scq_shm)->status, IBV_WC_SUCCESS);
	for (uint32_t k = 0; k < 4; k++)
		CHECK(mem_is(k * 1024, 1024, peer_byte(va + k * 1024)));
	CHECK_EQ(read_reqs_since(n0), 1);
	world_down();
}

/* A late responder's stream of answers to READs asked again: responses
 * that make no progress (copies of a READ already complete, PSNs behind
 * the oldest unacknowledged one) arrive for longer than the local ACK
 * timeout, then the answer of the READ waited for. IBA 9.7.6.1.3: the
 * responder is answering, so the transport timer does not go off while
 * they come (each timeout used to ask for the READ once more and spend
 * a retry: IBV_WC_RETRY_EXC_ERR under load); once they stop, it does,
 * without the retries the stream did not give back. */
TEST(read_stream_without_progress_puts_timer_off)
{
	const uint64_t va = 0x700000, to = sof_ack_timeout_ns(14);
	uint64_t t0;
	unsigned n0;

	world_up();
	post_read(0, 2048, 0);
	post_read(4096, 4096, 4096);
	CHECK_EQ(read_reqs_since(0), 2);
	/* the first READ's answer: it completes */
	ext_in(ROCE_READ_RESP_FIRST, SPSN, 1024, peer_byte(va), NULL);
	ext_in(ROCE_READ_RESP_LAST, SPSN + 1, 1024, peer_byte(va + 1024), NULL);
	CHECK_EQ(cq_count(w.scq_shm), 1);
	n0 = w.nsent;
	/* copies of that answer for two and a half timeouts, one every
	 * fifth of a timeout; the time between them passes by moving the
	 * QP's deadlines back (no sleep: a loaded machine that keeps this
	 * process off its CPU for most of a timeout must not fire the
	 * timer early), the timer looked at as of before each copy */
	for (unsigned i = 0; i < 12; i++) {
		t0 = sof_now_ns();
		ext_in(ROCE_READ_RESP_FIRST, SPSN, 1024, peer_byte(va), NULL);
		ext_in(ROCE_READ_RESP_LAST, SPSN + 1, 1024, peer_byte(va + 1024), NULL);
		w.qp.t->timer_ns -= to / 5;
		w.qp.t->stream_ns -= to / 5;
		tp_req_timer(w.qp.t, t0);
	}
	CHECK_EQ(w.counters[SOF_CNT_timeouts], 0);
	CHECK_EQ(read_reqs_since(n0), 0);
	CHECK_EQ(w.qp.t->retry_left, 7);
	/* the stream stops: the timer goes off, once per timeout */
	tp_req_timer(w.qp.t, w.qp.t->timer_ns);
	CHECK_EQ(w.counters[SOF_CNT_timeouts], 1);
	CHECK_EQ(read_reqs_since(n0), 1);
	CHECK_EQ(w.qp.t->retry_left, 6);
	/* the answer of the second READ completes it */
	for (uint32_t k = 0; k < 4; k++)
		ext_in(k == 0 ? ROCE_READ_RESP_FIRST : k == 3 ? ROCE_READ_RESP_LAST
							     : ROCE_READ_RESP_MIDDLE,
		       SPSN + 2 + k, 1024, peer_byte(va + 4096 + k * 1024), NULL);
	CHECK_EQ(cq_count(w.scq_shm), 2);
	CHECK_EQ(cq_last(w.scq_shm)->status, IBV_WC_SUCCESS);
	for (uint32_t k = 0; k < 4; k++)
		CHECK(mem_is(4096 + k * 1024, 1024, peer_byte(va + 4096 + k * 1024)));
	CHECK_EQ(w.qp.t->retry_left, 7);
	world_down();
}

/* A peer that answers without progress for ever puts the timer off for
 * a bounded time only: the READ still fails with IBV_WC_RETRY_EXC_ERR. */
TEST(read_stream_without_progress_bounded)
{
	const uint64_t va = 0x700000;

	world_up();
	post_read(0, 1024, 0);
	post_read(4096, 1024, 4096);
	ext_in(ROCE_READ_RESP_ONLY, SPSN, 1024, peer_byte(va), NULL);
	CHECK_EQ(cq_count(w.scq_shm), 1);
	/* a copy of the first READ's answer just before every deadline */
	for (unsigned i = 0; i < 40 && w.qp.t->state == IBV_QPS_RTS; i++) {
		uint64_t due = w.qp.t->timer_ns;

		ext_in(ROCE_READ_RESP_ONLY, SPSN, 1024, peer_byte(va), NULL);
		if (w.qp.t->timer_ns > due) /* put off: a timeout's time passes */
			w.qp.t->stream_ns -= sof_ack_timeout_ns(14);
		else
			tp_req_timer(w.qp.t, due);
	}
	CHECK_EQ(w.qp.t->state, IBV_QPS_ERR);
	CHECK_EQ(cq_last(w.scq_shm)->status, IBV_WC_RETRY_EXC_ERR);
	CHECK_EQ(w.counters[SOF_CNT_timeouts], 8);
	world_down();
}

/* ---- the daemon's takeover of a stalled owner's responder (takeover.c) ---- */

/* A request from the peer: opcode at EPSN + rel, RETH va IOVA + off and
 * dmalen, len bytes of fill. */
static void to_in(uint8_t opcode, int32_t rel, uint32_t off, uint32_t dmalen, uint32_t len,
		  uint32_t rkey, uint8_t fill)
{
	static uint8_t payload[4096];
	struct roce_hdr h;
	struct roce_addr a = {.sport = 0xc123, .dport = ROCE_UDP_PORT};

	memset(&h, 0, sizeof(h));
	h.opcode = opcode;
	h.pkey = 0xffff;
	h.dqpn = QPN;
	h.psn = (EPSN + (uint32_t)rel) & ROCE_PSN_MASK;
	h.rkey = rkey;
	h.va = IOVA + off;
	h.dmalen = dmalen;
	memset(payload, fill, len);
	memcpy(a.src, peer4, 16);
	memcpy(a.dst, local4, 16);
	tp_recv(&h, payload, len, &a);
}

/* Whether the last packet sent is an ACK of EPSN + rel with msn. */
static bool acked(unsigned nsent, int32_t rel, uint32_t msn)
{
	const struct sent *l = &w.sent[w.nsent - 1];

	return w.nsent == nsent && l->h.opcode == ROCE_ACK && l->h.syndrome == ACK &&
	       l->h.psn == ((EPSN + (uint32_t)rel) & ROCE_PSN_MASK) && l->h.msn == msn &&
	       l->h.dqpn == PEER_QPN;
}

/* Whether the last packet sent is a sequence-error NAK naming EPSN + rel. */
static bool seq_naked(unsigned nsent, int32_t rel)
{
	const struct sent *l = &w.sent[w.nsent - 1];

	return w.nsent == nsent && l->h.opcode == ROCE_ACK &&
	       l->h.syndrome == (ROCE_AETH_NAK | ROCE_NAK_PSN_SEQ_ERR) &&
	       l->h.psn == ((EPSN + (uint32_t)rel) & ROCE_PSN_MASK) && l->h.dqpn == PEER_QPN;
}

/* The owner executes a WRITE and publishes its state; stalled (its engine
 * state out of reach), the daemon executes the next in-order WRITE and
 * ACKs it, ACKs a duplicate again, answers a SEND and a WRITE with
 * immediate with RNR NAKs (no receive WQE is posted), NAKs one ahead
 * (sequence error) and drops one while the owner holds the lock; it
 * starts a two-packet WRITE. Running again,
 * the owner takes the state back: the WRITE the daemon executed is a
 * duplicate (ACKed, not placed again), the WRITE the daemon started goes
 * on with its LAST, and what follows executes in order. */
TEST(takeover_writes_while_stalled)
{
	struct sof_tqp *t;
	unsigned n;

	world_up();
	w.qp.rshm = &w.qshm->resp;
	atomic_store(&w.qshm->access, IBV_ACCESS_REMOTE_WRITE);
	/* the owner: WRITE 0 */
	to_in(ROCE_WRITE_ONLY, 0, 0, 64, 64, KEY_RW, 0x11);
	tp_input_end();
	CHECK(mem_is(0, 64, 0x11));
	CHECK(w.qshm->resp.valid && w.qshm->resp.epsn == EPSN + 1 && w.qshm->resp.msn == 1);

	/* stalled: the daemon */
	t = w.qp.t;
	w.qp.t = NULL;
	takeover_on = true;
	n = w.nsent;
	to_in(ROCE_WRITE_ONLY, 1, 64, 64, 64, KEY_RW, 0x22);
	CHECK(mem_is(64, 64, 0x22));
	CHECK(acked(n + 1, 1, 2));
	to_in(ROCE_WRITE_ONLY, 0, 0, 64, 64, KEY_RW, 0x99); /* a duplicate */
	CHECK(mem_is(0, 64, 0x11));
	CHECK(acked(n + 2, 1, 2));
	to_in(ROCE_SEND_ONLY, 2, 0, 0, 16, 0, 0x99);
	to_in(ROCE_WRITE_ONLY_IMM, 2, 128, 16, 16, KEY_RW, 0x99);
	to_in(ROCE_WRITE_ONLY, 3, 128, 16, 16, KEY_RW, 0x99);
	atomic_store(&w.qshm->resp.lock, SOF_RESP_OWNER);
	to_in(ROCE_WRITE_ONLY, 2, 128, 16, 16, KEY_RW, 0x99);
	atomic_store(&w.qshm->resp.lock, SOF_RESP_FREE);
	CHECK_EQ(w.nsent, n + 5);
	for (unsigned i = n + 2; i < n + 4; i++)
		CHECK(w.sent[i].h.opcode == ROCE_ACK &&
		      (w.sent[i].h.syndrome & ROCE_AETH_TYPE_MASK) == ROCE_AETH_RNR_NAK &&
		      w.sent[i].h.psn == ((EPSN + 2) & ROCE_PSN_MASK));
	CHECK(seq_naked(n + 5, 2));
	CHECK(mem_is(128, 16, 0));
	CHECK_EQ(w.drops[SOF_DROP_takeover], 1);
	CHECK_EQ(w.counters[SOF_CNT_takeover], 5);
	/* the FIRST of a two-packet WRITE (the path MTU is 1024) */
	to_in(ROCE_WRITE_FIRST, 2, 1024, 2048, 1024, KEY_RW, 0x33);
	CHECK(mem_is(1024, 1024, 0x33));
	CHECK(acked(n + 6, 2, 2));

	/* running again: the owner */
	takeover_on = false;
	w.qp.t = t;
	n = w.nsent;
	to_in(ROCE_WRITE_ONLY, 1, 64, 64, 64, KEY_RW, 0x99); /* the requester's retry */
	tp_input_end();
	CHECK(mem_is(64, 64, 0x22));
	CHECK(acked(n + 1, 2, 2));
	to_in(ROCE_WRITE_LAST, 3, 0, 0, 1024, KEY_RW, 0x44);
	to_in(ROCE_WRITE_ONLY, 4, 128, 16, 16, KEY_RW, 0x55);
	tp_input_end();
	CHECK(mem_is(1024, 1024, 0x33) && mem_is(2048, 1024, 0x44) && mem_is(128, 16, 0x55));
	CHECK(acked(n + 2, 4, 4));
	CHECK_EQ(w.qp.t->state, IBV_QPS_RTS);
	CHECK(w.qshm->resp.epsn == EPSN + 5 && !w.qshm->resp.daemon_ran);
	world_down();
}

/* Stalled, an ACK for the owner's requester that comes from the port
 * (tp_input) is kept by the host as it came, for the owner to take in
 * when it runs; one the host has no room for is dropped, and so is one
 * the port hands over without its bytes (the InfiniBand link's). */
TEST(takeover_keeps_acks_for_the_owner)
{
	struct roce_addr a = {.sport = 0xc123, .dport = ROCE_UDP_PORT};
	uint8_t pkt[ROCE_MAX_HDR + ROCE_ICRC_LEN];
	struct sof_tqp *t;
	struct roce_hdr h;
	size_t len;

	world_up();
	w.qp.rshm = &w.qshm->resp;
	memcpy(a.src, peer4, 16);
	memcpy(a.dst, local4, 16);
	memset(&h, 0, sizeof(h));
	h.opcode = ROCE_SVC_RC | ROCE_ACK;
	h.pkey = 0xffff;
	h.dqpn = QPN;
	h.psn = SPSN;
	h.syndrome = ROCE_AETH_ACK | ROCE_AETH_CREDIT_INVALID;
	h.msn = 1;
	len = roce_hdr_write(pkt, &h);
	CHECK(len > 0);
	roce_icrc_append(&a, pkt, len);
	len += ROCE_ICRC_LEN;

	t = w.qp.t;
	w.qp.t = NULL;
	takeover_on = true;
	keep_room = 1;
	nkept = 0;
	tp_input(pkt, len, &a);
	CHECK_EQ(nkept, 1);
	CHECK(kept_len == len && !memcmp(kept_pkt, pkt, len));
	CHECK_EQ(w.counters[SOF_CNT_takeover_kept], 1);
	CHECK_EQ(w.drops[SOF_DROP_takeover], 0);
	tp_input(pkt, len, &a); /* no room left */
	CHECK_EQ(nkept, 1);
	CHECK_EQ(w.drops[SOF_DROP_takeover], 1);
	keep_room = 1;
	tp_recv(&h, NULL, 0, &a); /* without its bytes */
	CHECK_EQ(nkept, 1);
	CHECK_EQ(w.drops[SOF_DROP_takeover], 2);
	CHECK_EQ(w.counters[SOF_CNT_takeover_kept], 1);
	keep_room = 0;
	takeover_on = false;
	w.qp.t = t;
	world_down();
}

/* An atomic from the peer at EPSN + rel on the word at IOVA + off. */
static void to_atomic(uint8_t op, int32_t rel, uint32_t off, uint64_t add, uint64_t compare)
{
	struct roce_hdr h;
	struct roce_addr a = {.sport = 0xc123, .dport = ROCE_UDP_PORT};

	memset(&h, 0, sizeof(h));
	h.opcode = op;
	h.pkey = 0xffff;
	h.dqpn = QPN;
	h.psn = (EPSN + (uint32_t)rel) & ROCE_PSN_MASK;
	h.rkey = KEY_RW;
	h.va = IOVA + off;
	h.swap_add = add;
	h.compare = compare;
	memcpy(a.src, peer4, 16);
	memcpy(a.dst, local4, 16);
	tp_recv(&h, NULL, 0, &a);
}

/* Whether the last packet sent is an atomic ACK of EPSN + rel with orig. */
static bool atomic_acked(unsigned nsent, int32_t rel, uint64_t orig)
{
	const struct sent *l = &w.sent[w.nsent - 1];

	return w.nsent == nsent && l->h.opcode == ROCE_ATOMIC_ACK &&
	       l->h.psn == ((EPSN + (uint32_t)rel) & ROCE_PSN_MASK) && l->h.orig == orig &&
	       l->h.dqpn == PEER_QPN;
}

static uint64_t word_at(uint32_t off)
{
	uint64_t v;

	memcpy(&v, w.mem + off, 8);
	return v;
}

/* A requester's retry or probe of a READ asks for the middle of an
 * earlier READ (IBA 9.7.5.1.3): a duplicate READ is served from its own
 * VA, length and PSN, inside what the original was granted; one that
 * reaches past the original's range is dropped. The same whether the
 * peer speaks the extension or not (SOFTOFED_SACK=0 stands in for a
 * standard responder). */
TEST(resp_duplicate_read_from_the_middle)
{
	for (int sack = 0; sack < 2; sack++) {
		unsigned n;

		world_up();
		tp_sack_on = sack;
		to_in(ROCE_READ_REQ, 0, 0, 4096, 0, KEY_RW, 0);
		CHECK_EQ(w.nsent, 4);
		CHECK(w.sent[3].h.opcode == ROCE_READ_RESP_LAST && w.sent[3].h.psn == EPSN + 3);
		/* its last response alone (a probe) */
		n = w.nsent;
		to_in(ROCE_READ_REQ, 3, 3072, 1024, 0, KEY_RW, 0);
		CHECK_EQ(w.nsent, n + 1);
		CHECK(w.sent[n].h.opcode == ROCE_READ_RESP_ONLY && w.sent[n].h.psn == EPSN + 3 &&
		      w.sent[n].paylen == 1024);
		/* its rest from the third (a retry) */
		n = w.nsent;
		to_in(ROCE_READ_REQ, 2, 2048, 2048, 0, KEY_RW, 0);
		CHECK_EQ(w.nsent, n + 2);
		CHECK(w.sent[n].h.opcode == ROCE_READ_RESP_FIRST && w.sent[n].h.psn == EPSN + 2 &&
		      w.sent[n + 1].h.opcode == ROCE_READ_RESP_LAST &&
		      w.sent[n + 1].h.psn == EPSN + 3 && w.sent[n + 1].paylen == 1024);
		/* past the original's end: dropped */
		n = w.nsent;
		to_in(ROCE_READ_REQ, 2, 2048, 4096, 0, KEY_RW, 0);
		CHECK_EQ(w.nsent, n);
		CHECK_EQ(w.counters[SOF_CNT_dup_req], 3);
		CHECK_EQ(w.qp.t->epsn, EPSN + 4);
		CHECK_EQ(w.qp.t->state, IBV_QPS_RTS);
		world_down();
	}
}

/* READs and atomics while stalled: the owner executes a fetch-and-add;
 * stalled, the daemon answers its duplicate with the owner's result,
 * executes the next one and a READ (responses with the data, the READ's
 * PSNs consumed), answers a duplicate of its own fetch-and-add with its
 * result without applying it again, and NAKs a READ ahead of the
 * expected PSN (once: the next one ahead is dropped). Running
 * again, the owner answers the duplicate of the daemon's fetch-and-add
 * with the daemon's result (applied once in all) and goes on in order. */
TEST(takeover_reads_atomics_while_stalled)
{
	struct sof_tqp *t;
	unsigned n;

	world_up();
	w.qp.rshm = &w.qshm->resp;
	atomic_store(&w.qshm->access, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
					  IBV_ACCESS_REMOTE_ATOMIC);
	memset(w.mem + 256, 0x5a, 2048);
	/* the owner: fetch-and-add 0 */
	to_atomic(ROCE_FETCH_ADD, 0, 0, 5, 0);
	tp_input_end();
	CHECK(atomic_acked(w.nsent, 0, 0) && word_at(0) == 5);

	/* stalled: the daemon */
	t = w.qp.t;
	w.qp.t = NULL;
	takeover_on = true;
	n = w.nsent;
	to_atomic(ROCE_FETCH_ADD, 0, 0, 5, 0); /* the owner's, again */
	CHECK(atomic_acked(n + 1, 0, 0) && word_at(0) == 5);
	to_atomic(ROCE_FETCH_ADD, 1, 0, 7, 0);
	CHECK(atomic_acked(n + 2, 1, 5) && word_at(0) == 12);
	to_atomic(ROCE_FETCH_ADD, 1, 0, 7, 0); /* its own, again */
	CHECK(atomic_acked(n + 3, 1, 5) && word_at(0) == 12);
	to_atomic(ROCE_CMP_SWAP, 2, 0, 100, 12);
	CHECK(atomic_acked(n + 4, 2, 12) && word_at(0) == 100);
	/* a READ of 1500 bytes: two responses (MTU 1024), PSNs 3 and 4 */
	to_in(ROCE_READ_REQ, 3, 256, 1500, 0, KEY_RW, 0);
	CHECK_EQ(w.nsent, n + 6);
	CHECK(w.sent[n + 4].h.opcode == ROCE_READ_RESP_FIRST && w.sent[n + 4].paylen == 1024 &&
	      w.sent[n + 4].h.psn == EPSN + 3);
	CHECK(w.sent[n + 5].h.opcode == ROCE_READ_RESP_LAST && w.sent[n + 5].paylen == 476 &&
	      w.sent[n + 5].h.psn == EPSN + 4 && w.sent[n + 5].h.msn == 4);
	CHECK(w.qshm->resp.epsn == EPSN + 5);
	/* a READ of 16 bytes: the data itself */
	to_in(ROCE_READ_REQ, 5, 300, 16, 0, KEY_RW, 0);
	CHECK(w.nsent == n + 7 && w.sent[n + 6].h.opcode == ROCE_READ_RESP_ONLY &&
	      w.lastpay[0] == 0x5a && w.lastpay[15] == 0x5a);
	/* ahead of the expected PSN: a sequence-error NAK, once */
	to_in(ROCE_READ_REQ, 7, 256, 16, 0, KEY_RW, 0);
	CHECK(seq_naked(n + 8, 6));
	to_in(ROCE_READ_REQ, 8, 256, 16, 0, KEY_RW, 0);
	CHECK_EQ(w.nsent, n + 8);
	CHECK_EQ(w.counters[SOF_CNT_takeover], 7);
	CHECK_EQ(w.drops[SOF_DROP_takeover], 1);

	/* running again: the owner */
	takeover_on = false;
	w.qp.t = t;
	n = w.nsent;
	to_atomic(ROCE_FETCH_ADD, 1, 0, 7, 0); /* the requester's retry */
	CHECK(atomic_acked(n + 1, 1, 5) && word_at(0) == 100);
	to_atomic(ROCE_FETCH_ADD, 6, 0, 1, 0);
	CHECK(atomic_acked(n + 2, 6, 100) && word_at(0) == 101);
	CHECK_EQ(w.qp.t->state, IBV_QPS_RTS);
	CHECK(w.qshm->resp.epsn == EPSN + 7 && !w.qshm->resp.daemon_ran);
	world_down();
}

/* UC (IBA 9.8.2) while stalled: the daemon places WRITEs, loses the
 * message a gap cuts (its LAST not placed) and a SEND (no receive WQE
 * taken), answers nothing; the owner goes on from its state. */
TEST(takeover_uc_writes_while_stalled)
{
	struct sof_tqp *t;
	unsigned n;

	world_type = IBV_QPT_UC;
	world_up();
	world_type = IBV_QPT_RC;
	w.qp.rshm = &w.qshm->resp;
	atomic_store(&w.qshm->access, IBV_ACCESS_REMOTE_WRITE);
	to_in(ROCE_SVC_UC | ROCE_WRITE_ONLY, 0, 0, 64, 64, KEY_RW, 0x11);
	CHECK(mem_is(0, 64, 0x11) && w.qshm->resp.epsn == EPSN + 1);

	t = w.qp.t;
	w.qp.t = NULL;
	takeover_on = true;
	n = w.nsent;
	to_in(ROCE_SVC_UC | ROCE_WRITE_FIRST, 1, 1024, 2048, 1024, KEY_RW, 0x22);
	to_in(ROCE_SVC_UC | ROCE_WRITE_LAST, 3, 0, 0, 1024, KEY_RW, 0x99); /* after a gap */
	to_in(ROCE_SVC_UC | ROCE_WRITE_ONLY, 4, 64, 64, 64, KEY_RW, 0x33);
	to_in(ROCE_SVC_UC | ROCE_SEND_ONLY, 5, 0, 0, 16, 0, 0x99);
	to_in(ROCE_SVC_UC | ROCE_WRITE_ONLY, 6, 128, 16, 16, KEY_RO, 0x99);
	CHECK(mem_is(1024, 1024, 0x22) && mem_is(2048, 1024, 0) && mem_is(64, 64, 0x33) &&
	      mem_is(128, 16, 0));
	CHECK_EQ(w.nsent, n);
	CHECK_EQ(w.counters[SOF_CNT_takeover], 2);
	CHECK_EQ(w.drops[SOF_DROP_takeover], 3);

	takeover_on = false;
	w.qp.t = t;
	to_in(ROCE_SVC_UC | ROCE_WRITE_ONLY, 7, 256, 16, 16, KEY_RW, 0x44);
	CHECK(mem_is(256, 16, 0x44) && w.qp.t->epsn == EPSN + 8 && w.nsent == n);
	world_down();
}

/* What the owner would end the QP for (IBA 9.7.5.2.4), found by the
 * daemon while the owner is stalled: a WRITE to a read-only region gets
 * the owner's NAK (remote access error) from the daemon, at once, and
 * the QP ends (ERROR in the shared segment, the owner's access error
 * event); nothing after it is taken, and the owner, running again, drops
 * what comes and is in ERROR too. A READ past the region and a
 * misaligned atomic the same, with their NAKs. */


/* A SEND whose FIRST (EPSN + 1) is lost, from a requester that speaks the
 * extension: the owner executes the SEND before it and keeps (and SACKs)
 * the MIDDLE and LAST, then stalls; the daemon executes the resent FIRST
 * and answers a sequence-error NAK naming the MIDDLE (it cannot reach the
 * owner's copies, which the requester will not send again unless it goes
 * back), drops a packet ahead after it without another NAK. In (a) the
 * requester went back and the daemon executed the MIDDLE and LAST: the
 * owner, running again, forgets its copies; in (b) the owner runs before
 * the resends come and executes its own copies first. Either way every
 * SEND completes once, in order, with its bytes. */
TEST(takeover_naks_ahead_and_kept)
{
	for (int back = 0; back < 2; back++) {
		struct sof_tqp *t;
		unsigned n;

		world_up();
		tp_sack_on = true;
		w.qp.rshm = &w.qshm->resp;
		for (int i = 0; i < 3; i++)
			post_recv(4096);
		ext_in(ROCE_SEND_ONLY, EPSN, 100, 0x10, NULL);
		ext_in(ROCE_SEND_MIDDLE, EPSN + 2, 1024, 0x22, NULL);
		ext_in(ROCE_SEND_LAST, EPSN + 3, 100, 0x33, NULL);
		tp_input_end();
		CHECK_EQ(cq_count(w.rcq_shm), 1);
		CHECK(w.qshm->resp.kept == 2 && w.qshm->resp.kept_top == EPSN + 3);

		/* stalled: the daemon */
		t = w.qp.t;
		w.qp.t = NULL;
		takeover_on = true;
		n = w.nsent;
		ext_in(ROCE_SEND_FIRST, EPSN + 1, 1024, 0x11, NULL);
		CHECK(seq_naked(n + 1, 2));
		CHECK_EQ(w.sent[w.nsent - 1].h.msn, 1);
		CHECK(!w.qshm->resp.kept && w.qshm->resp.epsn == EPSN + 2);
		ext_in(ROCE_SEND_ONLY, EPSN + 4, 100, 0x44, NULL);
		CHECK_EQ(w.nsent, n + 1);
		CHECK_EQ(w.drops[SOF_DROP_takeover], 1);
		CHECK_EQ(cq_count(w.rcq_shm), 1);
		if (!back) {
			/* the requester went back: MIDDLE, LAST, then the next */
			ext_in(ROCE_SEND_MIDDLE, EPSN + 2, 1024, 0x22, NULL);
			CHECK(acked(n + 2, 2, 1));
			ext_in(ROCE_SEND_LAST, EPSN + 3, 100, 0x33, NULL);
			CHECK(acked(n + 3, 3, 2));
			CHECK_EQ(cq_count(w.rcq_shm), 2);
		}
		/* running again: the owner, and the next SEND */
		takeover_on = false;
		w.qp.t = t;
		ext_in(ROCE_SEND_ONLY, EPSN + 4, 100, 0x44, NULL);
		tp_input_end();
		CHECK_EQ(w.qp.t->nooo, 0);
		CHECK(!w.qshm->resp.kept && w.qshm->resp.epsn == EPSN + 5);
		CHECK_EQ(cq_count(w.rcq_shm), 3);
		CHECK_EQ(cq_last(w.rcq_shm)->byte_len, 100);
		CHECK(mem_is(0, 100, 0x44) && mem_is(100, 924, 0x11) && mem_is(1024, 100, 0x22));
		/* the requester's resends after that are duplicates */
		n = w.nsent;
		ext_in(ROCE_SEND_MIDDLE, EPSN + 2, 1024, 0x55, NULL);
		tp_input_end();
		CHECK_EQ(cq_count(w.rcq_shm), 3);
		CHECK(mem_is(0, 100, 0x44) && mem_is(1024, 100, 0x22));
		CHECK_EQ(w.counters[SOF_CNT_nak_sent], 1);
		world_down();
	}
}

/* A host whose pollers run the deadline themselves (the program's engine
 * while threads poll: verbs/tp_wake.c) keeps the timerfd unset: the
 * deadline of a send is there for tp_timer_deadline, the timerfd is set
 * for it when the host watches the timer again, and a deadline passed
 * while nobody set the timerfd fires without reading it. */
TEST(timer_fd_left_alone_while_polled)
{
	struct itimerspec its;
	uint64_t due;

	world_up();
	tp_timer_fd_live(false);
	post_write(100, 0x99);
	tp_timer_update();
	due = tp_timer_deadline();
	CHECK(due != 0);
	CHECK_EQ(timerfd_gettime(tp_timer_fd(), &its), 0);
	CHECK(its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0);
	tp_timer_fd_live(true);
	CHECK_EQ(timerfd_gettime(tp_timer_fd(), &its), 0);
	CHECK(its.it_value.tv_sec != 0 || its.it_value.tv_nsec != 0);
	CHECK_EQ(tp_timer_deadline(), due);
	/* unwatched again: the ACK ends the deadline, the poller's next
	 * deadline is kept in memory only */
	tp_timer_fd_live(false);
	w.nsent = 0;
	packet_in(&(const struct step){S_IN, ROCE_ACK, 0, .syndrome = ACK});
	post_write(100, 0x99);
	tp_timer_fired();
	tp_timer_update();
	CHECK(tp_timer_deadline() != 0);
	tp_timer_fd_live(true);
	world_down();
}

/* One clock read per packet handled (tport.h tp_now): a request's round
 * trip starts at the time its timer counts from, one read for both; a
 * handling serves one time until a packet of its own asks afresh, and
 * outside any handling each use reads the clock. */
TEST(clock_once_per_packet)
{
	struct sof_tqp *t;
	uint64_t a, b;

	world_up();
	t = w.qp.t;
	post_write(100, 0x99);
	CHECK(t->rtt_ns != 0);
	CHECK(t->timer_ns != 0);
	CHECK_EQ(t->timer_ns - sof_ack_timeout_ns(t->timeout), t->rtt_ns);
	tp_now_enter();
	a = tp_now();
	CHECK_EQ(tp_now(), a);
	tp_now_enter(); /* nested: the same handling */
	CHECK_EQ(tp_now(), a);
	tp_now_leave();
	tp_now_fresh();
	b = tp_now();
	CHECK(b >= a);
	CHECK_EQ(tp_now(), b);
	tp_now_leave();
	CHECK_EQ(tp.now_scope, 0u);
	world_down();
}

/* A batch of responses alone (the peer's ACK came without its next
 * request: verbs/tp_wake.c hands the sockets to the progress thread in
 * one-sided mode) is told from one with a request by tp_requests, which
 * counts the request packets of any opcode and no response. */
TEST(requests_counted_responses_not)
{
	uint64_t r0, o0;

	world_up();
	r0 = tp_requests();
	o0 = tp_onesided();
	post_write(100, 0x99);
	packet_in(&(const struct step){S_IN, ROCE_ACK, 0, .syndrome = ACK});
	CHECK_EQ(tp_requests(), r0);
	packet_in(&(const struct step){
	    .kind = S_IN, .opcode = ROCE_WRITE_ONLY, .psn = 0, .len = 64, .rkey = KEY_RW});
	CHECK_EQ(tp_requests(), r0 + 1);
	CHECK_EQ(tp_onesided(), o0 + 1);
	post_recv(64);
	packet_in(
	    &(const struct step){.kind = S_IN, .opcode = ROCE_SEND_ONLY, .psn = 1, .len = 64});
	CHECK_EQ(tp_requests(), r0 + 2);
	CHECK_EQ(tp_onesided(), o0 + 1);
	world_down();
}

TEST(takeover_fatal_naks)
{
	static const struct {
		uint8_t op, nak;
		uint32_t off, dmalen, len, rkey, event;
	} bad[] = {
	    {ROCE_WRITE_ONLY, ROCE_NAK_REM_ACCESS, 128, 16, 16, KEY_RO, IBV_EVENT_QP_ACCESS_ERR},
	    {ROCE_READ_REQ, ROCE_NAK_REM_ACCESS, MEM_LEN - 8, 16, 0, KEY_RW,
	     IBV_EVENT_QP_ACCESS_ERR},
	    {ROCE_FETCH_ADD, ROCE_NAK_INV_REQ, 4, 0, 0, KEY_RW, IBV_EVENT_QP_REQ_ERR},
	};

	for (size_t i = 0; i < SOF_ARRAY_SIZE(bad); i++) {
		struct sof_tqp *t;
		unsigned n;

		world_up();
		w.qp.rshm = &w.qshm->resp;
		atomic_store(&w.qshm->access, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
						  IBV_ACCESS_REMOTE_ATOMIC);
		to_in(ROCE_WRITE_ONLY, 0, 0, 64, 64, KEY_RW, 0x11); /* the owner's */
		tp_input_end();
		t = w.qp.t;
		w.qp.t = NULL;
		takeover_on = true;
		n = w.nsent;
		if (bad[i].op == ROCE_FETCH_ADD)
			to_atomic(ROCE_FETCH_ADD, 1, bad[i].off, 1, 0);
		else
			to_in(bad[i].op, 1, bad[i].off, bad[i].dmalen, bad[i].len, bad[i].rkey, 0x99);
		CHECK_EQ(w.nsent, n + 1);
		CHECK(w.sent[n].h.opcode == ROCE_ACK &&
		      w.sent[n].h.syndrome == (ROCE_AETH_NAK | bad[i].nak) &&
		      w.sent[n].h.psn == ((EPSN + 1) & ROCE_PSN_MASK) && w.sent[n].h.dqpn == PEER_QPN);
		CHECK_EQ(atomic_load(&w.qshm->state), IBV_QPS_ERR);
		CHECK_EQ(w.last_event, bad[i].event);
		CHECK(mem_is(128, 16, 0));
		/* nothing after it, by the daemon or by the owner */
		to_in(ROCE_WRITE_ONLY, 1, 128, 16, 16, KEY_RW, 0x99);
		CHECK_EQ(w.nsent, n + 1);
		takeover_on = false;
		w.qp.t = t;
		to_in(ROCE_WRITE_ONLY, 1, 128, 16, 16, KEY_RW, 0x99);
		tp_input_end();
		CHECK(w.nsent == n + 1 && mem_is(128, 16, 0) && w.qp.t->state == IBV_QPS_ERR);
		world_down();
	}
}

int main(void)
{
	RUN(resp_send_ack_duplicate);
	RUN(pkey_check);
	RUN(resp_sequence_error_nak_once);
	RUN(resp_rnr_nak);
	RUN(resp_remote_access_nak);
	RUN(resp_invalid_request_nak);
	RUN(resp_write_into_region);
	RUN(req_write_acked);
	RUN(req_sequence_nak_resends);
	RUN(req_rnr_nak_waits);
	RUN(comp_remote_access_flushes);
	RUN(xrc_tgt_send_to_srq);
	RUN(xrc_tgt_wrong_srq_nak);
	RUN(xrc_ini_write_acked);
	RUN(sack_resp_write_out_of_order);
	RUN(sack_resp_send_completes_in_order);
	RUN(sack_req_holes_and_lies);
	RUN(sack_req_rack_resend_lost_again);
	RUN(sack_resp_long_map);
	RUN(sack_standard_peer_gets_none);
	RUN(sack_req_read_lost_twice_under_1m_read);
	RUN(sack_req_hole_never_filled_times_out);
	RUN(sack_req_lone_probe_waits_for_stalls);
	RUN(read_probe_asks_for_the_last_response);
	RUN(read_tail_lost_under_later_read);
	RUN(read_reordered_responses_reread_once_per_rtt);
	RUN(read_stream_without_progress_puts_timer_off);
	RUN(read_stream_without_progress_bounded);
	RUN(takeover_writes_while_stalled);
	RUN(resp_duplicate_read_from_the_middle);
	RUN(takeover_reads_atomics_while_stalled);
	RUN(takeover_uc_writes_while_stalled);
	RUN(takeover_fatal_naks);
	RUN(takeover_naks_ahead_and_kept);
	RUN(takeover_keeps_acks_for_the_owner);
	RUN(timer_fd_left_alone_while_polled);
	RUN(requests_counted_responses_not);
	RUN(clock_once_per_packet);
	return test_summary();
}
