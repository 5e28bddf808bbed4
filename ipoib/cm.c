/*
 * Connected mode (RFC 4755): an RC connection per peer, made through the
 * IB CM with librdmacm's AF_IB ids in the IB port space. We listen on
 * IPOIB_CM_SID | our UD QPN; a peer whose hardware address carries the
 * 'C' flag is connected to at its UD QPN's service ID, the REQ and REP
 * carrying RFC 4755 section 6's private data (the UD QPN, the largest
 * frame received). As Linux's ipoib, a connection carries one direction:
 * the side that sent the REQ sends on it (section 3.3 lets both sides
 * connect at once), the other receives. Every QP receives from one SRQ of
 * 64 KiB buffers; sends copy into a pool of slots shared by all
 * connections. The QPs are ours (the PD of ud.c), moved through their
 * states with rdma_init_qp_attr, so librdmacm's ids carry no QP.
 *
 * A REQ whose private data RFC 4755 does not allow is rejected. Our REQ
 * rejected or unanswered: the peer gets datagrams (held FAIL_HOLD_MS,
 * then tried again), queued frames go that way. A send error or the
 * peer's DREQ resets the connection; the next frame makes a new one. A
 * connection unused for IDLE_MS ($SOFTOFED_IPOIB_CM_IDLE_SECS) is
 * disconnected, a receiving one after twice that.
 *
 * Lock contract: the one thread of main.c.
 */
#include "ipoib.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/ib.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SRQ_DEPTH 256
#define SEND_SLOTS 256
#define QP_SQ 128    /* send WRs per connection */
#define CM_BUF 65536 /* a receive buffer, a send slot */
#define RSLOT (IPOIB_GRH_LEN + CM_BUF)
#define RSIZE (IPOIB_HDR_LEN + IPOIB_CM_MTU) /* what we advertise */
#define CONN_MAX 128
#define TX_QUEUE 256 /* frames waiting per connection */
#define IDLE_MS 60000
#define FAIL_HOLD_MS 30000
#define SETUP_MS 30000 /* resolution and CM exchange, at most */
#define RESOLVE_MS 2000
#define CM_TX_LOW 8 /* main.c's tx_room reads the kernel's packets above this */

enum conn_state { C_FREE, C_RESOLVING, C_CONNECTING, C_UP, C_FAILED, C_RX };
static const char *const conn_state_names[] = {
    [C_FREE] = "free", [C_RESOLVING] = "resolving", [C_CONNECTING] = "connecting",
    [C_UP] = "up",     [C_FAILED] = "failed",	    [C_RX] = "up",
};

struct cm_frame {
	uint8_t *data;
	size_t len;
};

struct conn {
	enum conn_state state;
	struct ipoib_hw hw; /* the peer's UD address (rx: from its REQ) */
	struct rdma_cm_id *id;
	struct ibv_qp *qp;
	uint32_t rsize; /* the largest frame the peer takes */
	uint64_t since, used;
	unsigned inflight;
	struct cm_frame q[TX_QUEUE];
	unsigned qhead, nq;
};

static struct {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen;
	struct ibv_comp_channel *cch;
	struct ibv_cq *cq;  /* the SRQ's receives, always armed */
	struct ibv_cq *scq; /* the sends': armed only while a frame or the TUN waits for a slot */
	bool scq_armed;
	bool reaping; /* in reap_sends */
	struct ibv_srq *srq;
	struct ibv_mr *mr;
	uint8_t *mem; /* SRQ_DEPTH receive slots, then SEND_SLOTS send slots */
	uint32_t free[SEND_SLOTS];
	unsigned nfree;
	struct conn *owner[SEND_SLOTS];
	uint32_t gen[SEND_SLOTS];
	struct conn conns[CONN_MAX];
	uint64_t idle_ms;
} cm;

static uint8_t *rslot(uint32_t i) { return cm.mem + (size_t)i * RSLOT; }
static uint8_t *sslot(uint32_t i)
{
	return cm.mem + (size_t)SRQ_DEPTH * RSLOT + (size_t)i * CM_BUF;
}

static void conn_log(const struct conn *c, const char *what)
{
	char gid[64];

	ipoib_gid_str(c->hw.gid, gid, sizeof(gid));
	ipoib_log("cm %s qpn 0x%06x: %s", gid, c->hw.qpn, what);
}

static int post_srq(uint32_t i)
{
	struct ibv_sge sge = {(uintptr_t)(rslot(i) + IPOIB_GRH_LEN), CM_BUF, cm.mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = i, .sg_list = &sge, .num_sge = 1}, *bad;

	return ibv_post_srq_recv(cm.srq, &wr, &bad);
}

static void ib_addr(struct sockaddr_ib *a, const uint8_t gid[16], uint64_t sid)
{
	memset(a, 0, sizeof(*a));
	a->sib_family = AF_IB;
	a->sib_pkey = htobe16(ipoib.pkey);
	memcpy(&a->sib_addr, gid, 16);
	a->sib_sid = htobe64(sid);
	a->sib_sid_mask = htobe64(~0ull);
}

int cm_start(const char *dev)
{
	struct ibv_srq_init_attr sa = {.attr = {.max_wr = SRQ_DEPTH, .max_sge = 1}};
	size_t len = (size_t)SRQ_DEPTH * RSLOT + (size_t)SEND_SLOTS * CM_BUF;
	struct sockaddr_ib me;
	const char *e = getenv("SOFTOFED_IPOIB_CM_IDLE_SECS");

	(void)dev;
	cm.idle_ms = e && atoi(e) > 0 ? (uint64_t)atoi(e) * 1000 : IDLE_MS;
	cm.cch = ibv_create_comp_channel(ud_ctx());
	if (!cm.cch)
		return -errno;
	fcntl(cm.cch->fd, F_SETFL, fcntl(cm.cch->fd, F_GETFL) | O_NONBLOCK);
	cm.cq = ibv_create_cq(ud_ctx(), SRQ_DEPTH + 64, NULL, cm.cch, 0);
	/* every slot's send, and the late flushes of a QP closed since */
	cm.scq = cm.cq ? ibv_create_cq(ud_ctx(), SEND_SLOTS + QP_SQ + 64, NULL, cm.cch, 0) : NULL;
	cm.srq = cm.scq ? ibv_create_srq(ud_pd(), &sa) : NULL;
	if (!cm.srq)
		return -ENOMEM;
	cm.mem = aligned_alloc(4096, len);
	if (!cm.mem)
		return -ENOMEM;
	cm.mr = ibv_reg_mr(ud_pd(), cm.mem, len, IBV_ACCESS_LOCAL_WRITE);
	if (!cm.mr)
		return -errno;
	for (uint32_t i = 0; i < SRQ_DEPTH; i++)
		if (post_srq(i))
			return -EIO;
	for (uint32_t i = 0; i < SEND_SLOTS; i++)
		cm.free[i] = SEND_SLOTS - 1 - i;
	cm.nfree = SEND_SLOTS;
	if (ibv_req_notify_cq(cm.cq, 0))
		return -EIO;
	/* the service ID of our UD QPN (RFC 4755 3.5), on our port's GID */
	cm.ch = rdma_create_event_channel();
	if (!cm.ch)
		return -errno;
	fcntl(cm.ch->fd, F_SETFL, fcntl(cm.ch->fd, F_GETFL) | O_NONBLOCK);
	if (rdma_create_id(cm.ch, &cm.listen, NULL, RDMA_PS_IB))
		return -errno;
	ib_addr(&me, ipoib.hw.gid, IPOIB_CM_SID | ipoib.hw.qpn);
	if (rdma_bind_addr(cm.listen, (struct sockaddr *)&me) || rdma_listen(cm.listen, 64))
		return -errno;
	ipoib_log("connected mode: listening on service ID 0x%016llx",
		  (unsigned long long)(IPOIB_CM_SID | ipoib.hw.qpn));
	return 0;
}

static void reap_sends(void);

/* Send completions are read when slots are wanted, not as they come: an
 * RC send completes when the peer's ACK arrives, and an event for each
 * woke this loop once more for every frame sent (a ping's echo: the
 * request's ACK, then the reply). Wanted: fewer than CM_TX_LOW slots
 * free (main.c's tx_room reads no packet from the kernel then), or
 * frames of a connection that is up waiting; then the CQ is armed, and
 * read again after the arm for what completed before it. Errors are seen
 * at the latest at the next tick. */
static bool slots_wanted(void)
{
	if (cm.nfree <= CM_TX_LOW)
		return true;
	for (unsigned i = 0; i < CONN_MAX; i++)
		if (cm.conns[i].nq && cm.conns[i].state == C_UP)
			return true;
	return false;
}

void cm_fds(struct pollfd *p)
{
	p[0] = (struct pollfd){.fd = cm.ch ? cm.ch->fd : -1, .events = POLLIN};
	p[1] = (struct pollfd){.fd = cm.cch ? cm.cch->fd : -1, .events = POLLIN};
	if (!cm.scq || !slots_wanted())
		return;
	reap_sends();
	if (!cm.scq_armed && slots_wanted() && !ibv_req_notify_cq(cm.scq, 0)) {
		cm.scq_armed = true;
		reap_sends();
	}
}

unsigned cm_sq_free(void)
{
	if (cm.scq && cm.nfree <= CM_TX_LOW)
		reap_sends();
	return cm.cq ? cm.nfree : SEND_SLOTS;
}

/* ---- connections ------------------------------------------------------------------ */

static struct conn *conn_find(const struct ipoib_hw *hw)
{
	for (unsigned i = 0; i < CONN_MAX; i++) {
		struct conn *c = &cm.conns[i];

		if (c->state != C_FREE && c->state != C_RX && c->hw.qpn == hw->qpn &&
		    !memcmp(c->hw.gid, hw->gid, 16))
			return c;
	}
	return NULL;
}

static struct conn *conn_by_qp(uint32_t qpn)
{
	for (unsigned i = 0; i < CONN_MAX; i++)
		if (cm.conns[i].qp && cm.conns[i].qp->qp_num == qpn)
			return &cm.conns[i];
	return NULL;
}

static struct conn *conn_new(void)
{
	for (unsigned i = 0; i < CONN_MAX; i++)
		if (cm.conns[i].state == C_FREE) {
			cm.conns[i].since = cm.conns[i].used = ipoib_now_ms();
			return &cm.conns[i];
		}
	return NULL;
}

static void q_drop(struct conn *c)
{
	for (; c->nq; c->nq--, c->qhead = (c->qhead + 1) % TX_QUEUE) {
		free(c->q[c->qhead].data);
		ipoib.cnt[IC_cm_drop_queue]++;
	}
}

/* The QP and id go (a connection established is disconnected first: a
 * DREQ); the send slots it held come back. The sends' CQ is read first
 * (not from within that read: its loop reads on): the completions it
 * holds, of this QP too, would otherwise stay there while their slots
 * went to new sends, beyond the CQ's size. */
static void conn_close(struct conn *c, bool disconnect)
{
	q_drop(c);
	if (c->id && disconnect)
		rdma_disconnect(c->id);
	if (c->qp)
		ibv_destroy_qp(c->qp);
	if (c->id)
		rdma_destroy_id(c->id);
	c->id = NULL;
	c->qp = NULL;
	c->inflight = 0;
	c->state = C_FREE;
	if (cm.scq && !cm.reaping)
		reap_sends();
	for (uint32_t s = 0; s < SEND_SLOTS; s++)
		if (cm.owner[s] == c) {
			cm.owner[s] = NULL;
			cm.gen[s]++;
			cm.free[cm.nfree++] = s;
		}
}

/* Our connection will not be: the peer takes datagrams for a while; what
 * waited goes that way (neigh.c's path, which now finds us failed). */
static void conn_fail(struct conn *c, const char *why)
{
	struct cm_frame q[TX_QUEUE];
	unsigned n = 0;

	ipoib.cnt[IC_cm_fails]++;
	conn_log(c, why);
	while (c->nq) {
		q[n++] = c->q[c->qhead];
		c->qhead = (c->qhead + 1) % TX_QUEUE;
		c->nq--;
	}
	conn_close(c, false);
	c->state = C_FAILED;
	c->since = ipoib_now_ms();
	for (unsigned i = 0; i < n; i++) {
		neigh_send_hw(&c->hw, q[i].data, q[i].len);
		free(q[i].data);
	}
}

static struct ibv_qp *qp_new(void)
{
	struct ibv_qp_init_attr ia = {
	    .send_cq = cm.scq,
	    .recv_cq = cm.cq,
	    .srq = cm.srq,
	    .qp_type = IBV_QPT_RC,
	    .cap = {.max_send_wr = QP_SQ, .max_send_sge = 1},
	};

	return ibv_create_qp(ud_pd(), &ia);
}

static int qp_to(struct conn *c, enum ibv_qp_state state)
{
	struct ibv_qp_attr a;
	int mask;

	memset(&a, 0, sizeof(a));
	a.qp_state = state;
	if (rdma_init_qp_attr(c->id, &a, &mask))
		return -errno;
	return -ibv_modify_qp(c->qp, &a, mask);
}

static void conn_param(struct rdma_conn_param *p, uint8_t pdata[IPOIB_CM_PDATA], uint32_t qp_num)
{
	struct ipoib_cm_data d = {.qpn = ipoib.hw.qpn, .rsize = RSIZE};

	ipoib_cm_data_put(pdata, &d);
	memset(p, 0, sizeof(*p));
	p->private_data = pdata;
	p->private_data_len = IPOIB_CM_PDATA;
	p->retry_count = 5;
	p->rnr_retry_count = 7;
	p->srq = 1;
	p->qp_num = qp_num;
}

/* ---- sending ----------------------------------------------------------------------- */

static int post(struct conn *c, const uint8_t *frame, size_t len)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad;
	uint32_t s = cm.free[--cm.nfree];

	memcpy(sslot(s), frame, len);
	sge = (struct ibv_sge){(uintptr_t)sslot(s), (uint32_t)len, cm.mr->lkey};
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = (uint64_t)cm.gen[s] << 32 | s;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (ibv_post_send(c->qp, &wr, &bad)) {
		cm.free[cm.nfree++] = s;
		return -EIO;
	}
	cm.owner[s] = c;
	c->inflight++;
	ipoib.cnt[IC_cm_tx_packets]++;
	return 0;
}

static bool can_post(const struct conn *c)
{
	return c->state == C_UP && cm.nfree && c->inflight < QP_SQ;
}

static void q_flush(struct conn *c)
{
	while (c->nq && can_post(c)) {
		struct cm_frame *f = &c->q[c->qhead];

		post(c, f->data, f->len);
		free(f->data);
		c->qhead = (c->qhead + 1) % TX_QUEUE;
		c->nq--;
	}
}

static int q_add(struct conn *c, const uint8_t *frame, size_t len)
{
	uint8_t *d;

	if (c->nq == TX_QUEUE || !(d = malloc(len))) {
		ipoib.cnt[IC_cm_drop_queue]++;
		return -ENOBUFS;
	}
	memcpy(d, frame, len);
	c->q[(c->qhead + c->nq++) % TX_QUEUE] = (struct cm_frame){d, len};
	return 0;
}

static int connect_start(struct conn *c)
{
	struct sockaddr_ib src, dst;

	if (rdma_create_id(cm.ch, &c->id, c, RDMA_PS_IB))
		return -errno;
	ib_addr(&src, ipoib.hw.gid, 0);
	ib_addr(&dst, c->hw.gid, IPOIB_CM_SID | c->hw.qpn);
	if (rdma_resolve_addr(c->id, (struct sockaddr *)&src, (struct sockaddr *)&dst, RESOLVE_MS))
		return -errno;
	c->state = C_RESOLVING;
	return 0;
}

size_t cm_tx_mtu(const struct ipoib_hw *hw)
{
	const struct conn *c = cm.ch ? conn_find(hw) : NULL;

	if (!cm.ch)
		return 0;
	if (!c)
		return ipoib.mtu;
	if (c->state == C_FAILED)
		return 0;
	if (c->state == C_UP)
		return c->rsize > IPOIB_HDR_LEN ? c->rsize - IPOIB_HDR_LEN : 0;
	return ipoib.mtu;
}

int cm_xmit(const struct ipoib_hw *hw, const uint8_t *frame, size_t len)
{
	struct conn *c = conn_find(hw);

	if (!cm.ch)
		return -ENOTCONN;
	if (!c) {
		c = conn_new();
		if (!c)
			return -ENOTCONN; /* as many as we hold: datagrams */
		c->hw = *hw;
		if (connect_start(c)) {
			conn_fail(c, "no CM id");
			return -ENOTCONN;
		}
	}
	switch (c->state) {
	case C_FAILED:
		return -ENOTCONN;
	case C_UP:
		c->used = ipoib_now_ms();
		if (len > c->rsize) {
			if (ipoib_too_big(&ipoib, frame, len, c->rsize - IPOIB_HDR_LEN))
				ipoib.cnt[IC_tx_too_big]++;
			return -EMSGSIZE;
		}
		if (!c->nq && can_post(c))
			return post(c, frame, len);
		return q_add(c, frame, len);
	default:
		c->used = ipoib_now_ms();
		return q_add(c, frame, len);
	}
}

/* ---- completions --------------------------------------------------------------------- */

static void reset(struct conn *c, const char *why)
{
	ipoib.cnt[IC_cm_resets]++;
	conn_log(c, why);
	conn_close(c, false);
}

/* The receives: to the receive path, each buffer back to the SRQ. */
static void reap(void)
{
	struct ibv_wc wc[32];
	int n;

	while ((n = ibv_poll_cq(cm.cq, 32, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			struct conn *c = conn_by_qp(wc[i].qp_num);
			uint32_t s = (uint32_t)wc[i].wr_id;

			if (wc[i].status == IBV_WC_SUCCESS && c) {
				c->used = ipoib_now_ms();
				ipoib.cnt[IC_cm_rx_packets]++;
				memset(rslot(s), 0, IPOIB_GRH_LEN);
				ipoib_input(&ipoib, rslot(s), IPOIB_GRH_LEN + wc[i].byte_len, 0, 0);
			}
			/* the SRQ outlives its QPs: every buffer goes back */
			post_srq(s);
		}
	}
}

/* The sends: slots back (a failed one resets its connection), then what
 * waited goes (slots_wanted). */
static void reap_sends(void)
{
	struct ibv_wc wc[32];
	int n;

	cm.reaping = true;
	while ((n = ibv_poll_cq(cm.scq, 32, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			struct conn *c = conn_by_qp(wc[i].qp_num);
			uint32_t s = (uint32_t)wc[i].wr_id, gen = (uint32_t)(wc[i].wr_id >> 32);

			if (s >= SEND_SLOTS || gen != cm.gen[s] || !cm.owner[s])
				continue; /* its connection is gone */
			cm.owner[s] = NULL;
			cm.free[cm.nfree++] = s;
			if (c && c->inflight)
				c->inflight--;
			if (wc[i].status != IBV_WC_SUCCESS && c && c->state == C_UP) {
				char why[96];

				snprintf(why, sizeof(why), "send failed (%s): reset",
					 ibv_wc_status_str(wc[i].status));
				reset(c, why);
			}
		}
	}
	cm.reaping = false;
	for (unsigned i = 0; i < CONN_MAX && cm.nfree; i++)
		if (cm.conns[i].nq)
			q_flush(&cm.conns[i]);
}

/* ---- the CM's events ------------------------------------------------------------------- */

static void on_request(struct rdma_cm_id *id, const uint8_t *pdata, size_t plen)
{
	struct ipoib_cm_data d;
	struct rdma_conn_param p;
	uint8_t mine[IPOIB_CM_PDATA];
	struct conn *c;

	if (ipoib_cm_data_get(&d, pdata, plen)) {
		ipoib.cnt[IC_cm_refused]++;
		ipoib_log("cm: a REQ with malformed private data (%zu bytes): rejected", plen);
		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
		return;
	}
	c = conn_new();
	if (!c) {
		ipoib.cnt[IC_cm_refused]++;
		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
		return;
	}
	c->id = id;
	id->context = c;
	c->hw.qpn = d.qpn;
	c->rsize = d.rsize;
	{
		const struct sockaddr_ib *peer = (const void *)rdma_get_peer_addr(id);

		if (peer && peer->sib_family == AF_IB)
			memcpy(c->hw.gid, &peer->sib_addr, 16);
	}
	c->qp = qp_new();
	if (!c->qp || qp_to(c, IBV_QPS_INIT) || qp_to(c, IBV_QPS_RTR) || qp_to(c, IBV_QPS_RTS)) {
		conn_log(c, "no QP for its REQ: rejected");
		rdma_reject(id, NULL, 0);
		conn_close(c, false);
		return;
	}
	conn_param(&p, mine, c->qp->qp_num);
	if (rdma_accept(id, &p)) {
		conn_log(c, "accept failed");
		conn_close(c, false);
		return;
	}
	c->state = C_RX;
	ipoib.cnt[IC_cm_accepts]++;
	conn_log(c, "accepted (receiving)");
}

static void on_response(struct conn *c, const uint8_t *pdata, size_t plen)
{
	struct ipoib_cm_data d;

	if (ipoib_cm_data_get(&d, pdata, plen) || d.qpn != c->hw.qpn) {
		conn_fail(c, "REP with malformed private data");
		return;
	}
	c->rsize = d.rsize < RSIZE ? d.rsize : RSIZE;
	if (qp_to(c, IBV_QPS_RTR) || qp_to(c, IBV_QPS_RTS) || rdma_establish(c->id)) {
		conn_fail(c, "QP to RTS failed");
		return;
	}
	c->state = C_UP;
	c->used = ipoib_now_ms();
	ipoib.cnt[IC_cm_connects]++;
	conn_log(c, "connected (sending)");
	q_flush(c);
}

static void on_event(enum rdma_cm_event_type type, struct rdma_cm_id *id, int status,
		     const uint8_t *pdata, size_t plen)
{
	struct conn *c = id->context;
	struct rdma_conn_param p;
	uint8_t mine[IPOIB_CM_PDATA];
	char why[96];

	if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
		on_request(id, pdata, plen);
		return;
	}
	if (!c || c->id != id)
		return;
	switch (type) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rdma_resolve_route(id, RESOLVE_MS))
			conn_fail(c, "resolve route failed");
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		c->qp = qp_new();
		if (!c->qp || qp_to(c, IBV_QPS_INIT)) {
			conn_fail(c, "no QP");
			break;
		}
		conn_param(&p, mine, c->qp->qp_num);
		if (rdma_connect(id, &p)) {
			conn_fail(c, "connect failed");
			break;
		}
		c->state = C_CONNECTING;
		break;
	case RDMA_CM_EVENT_CONNECT_RESPONSE:
		on_response(c, pdata, plen);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
		snprintf(why, sizeof(why), "%s (%d): datagrams to it", rdma_event_str(type),
			 status);
		if (c->state == C_RX)
			reset(c, why);
		else
			conn_fail(c, why);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		if (c->state == C_UP || c->state == C_RX)
			reset(c, "disconnected by the peer");
		break;
	default:
		break;
	}
}

void cm_poll(void)
{
	struct rdma_cm_event *ev;
	struct ibv_cq *cq;
	void *cctx;
	bool cq_ev = false, scq_ev = false;

	if (!cm.ch)
		return;
	while (!ibv_get_cq_event(cm.cch, &cq, &cctx)) {
		ibv_ack_cq_events(cq, 1);
		if (cq == cm.scq) {
			cm.scq_armed = false; /* armed again by cm_fds if still wanted */
			scq_ev = true;
			continue;
		}
		ibv_req_notify_cq(cq, 0);
		cq_ev = true;
	}
	/* as ud_poll: an armed CQ without an event has nothing */
	if (cq_ev)
		reap();
	if (scq_ev)
		reap_sends();
	while (!rdma_get_cm_event(cm.ch, &ev)) {
		enum rdma_cm_event_type type = ev->event;
		struct rdma_cm_id *id = ev->id;
		int status = ev->status;
		uint8_t pdata[256];
		size_t plen = ev->param.conn.private_data_len;

		/* copied: an id is destroyed only once its events are acked */
		if (plen > sizeof(pdata))
			plen = sizeof(pdata);
		if (ev->param.conn.private_data && plen)
			memcpy(pdata, ev->param.conn.private_data, plen);
		else
			plen = 0;
		rdma_ack_cm_event(ev);
		on_event(type, id, status, plen ? pdata : NULL, plen);
	}
}

void cm_tick(uint64_t now)
{
	/* the sends' errors and slots, when nothing wanted them since */
	if (cm.scq)
		reap_sends();
	for (unsigned i = 0; i < CONN_MAX; i++) {
		struct conn *c = &cm.conns[i];

		switch (c->state) {
		case C_UP:
		case C_RX:
			/* the receiving side waits longer: the sender closes */
			if (now - c->used < cm.idle_ms * (c->state == C_RX ? 2 : 1))
				break;
			ipoib.cnt[IC_cm_idle]++;
			conn_log(c, "idle: disconnected");
			conn_close(c, true);
			break;
		case C_RESOLVING:
		case C_CONNECTING:
			if (now - c->since >= SETUP_MS)
				conn_fail(c, "no answer");
			break;
		case C_FAILED:
			if (now - c->since >= FAIL_HOLD_MS)
				c->state = C_FREE;
			break;
		default:
			break;
		}
	}
}

void cm_dump(char *buf, size_t len)
{
	uint64_t now = ipoib_now_ms();
	size_t off = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < CONN_MAX && off + 256 < len; i++) {
		const struct conn *c = &cm.conns[i];
		char gid[64];
		int w;

		if (c->state == C_FREE)
			continue;
		ipoib_gid_str(c->hw.gid, gid, sizeof(gid));
		w = snprintf(
		    buf + off, len - off,
		    "cm %s peer %s qpn 0x%06x rc_qpn 0x%06x state %s mtu %u queued %u idle "
		    "%llu\n",
		    c->state == C_RX ? "rx" : "tx", gid, c->hw.qpn, c->qp ? c->qp->qp_num : 0,
		    conn_state_names[c->state],
		    c->rsize > IPOIB_HDR_LEN ? c->rsize - IPOIB_HDR_LEN : 0, c->nq,
		    (unsigned long long)((now - c->used) / 1000));
		if (w > 0)
			off += (size_t)w;
	}
}

void cm_stop(void)
{
	for (unsigned i = 0; i < CONN_MAX; i++)
		if (cm.conns[i].state != C_FREE)
			conn_close(&cm.conns[i],
				   cm.conns[i].state == C_UP || cm.conns[i].state == C_RX);
	if (cm.listen)
		rdma_destroy_id(cm.listen);
	if (cm.ch)
		rdma_destroy_event_channel(cm.ch);
	if (cm.srq)
		ibv_destroy_srq(cm.srq);
	if (cm.mr)
		ibv_dereg_mr(cm.mr);
	if (cm.cq)
		ibv_destroy_cq(cm.cq);
	if (cm.scq)
		ibv_destroy_cq(cm.scq);
	if (cm.cch)
		ibv_destroy_comp_channel(cm.cch);
	free(cm.mem);
	memset(&cm, 0, sizeof(cm));
}
