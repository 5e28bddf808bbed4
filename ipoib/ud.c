/*
 * The verbs side of IPoIB datagram mode: the device (sofib0 by default),
 * a UD QP with the broadcast group's Q_Key in the partition's P_Key
 * index, one registered region holding every receive and send slot, a
 * completion channel the loop polls, and address handles (unicast by LID
 * from a path record; multicast by MLID with a GRH naming the MGID, IBA
 * 10.5.2.1). Only the standard libibverbs API.
 */
#include "ipoib.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <stdlib.h>
#include <string.h>

#define RQ_DEPTH 2048
#define SQ_DEPTH 256
#define SLOT (IPOIB_GRH_LEN + IPOIB_BUF)
/* One send in SIGNAL_EVERY asks for a completion (IBV_SEND_SIGNALED);
 * its completion frees the slots of the unsignaled sends before it too,
 * since a send queue completes its WRs in the order posted (IBA 10.8):
 * a UD send's completion says no more than that it left. A send completion per
 * packet cost each echo of a ping a completion event: a pass of the
 * loop, the CQ armed again and the verbs progress thread woken for it. */
#define SIGNAL_EVERY 64u

struct ipoib_ah {
	struct ibv_ah *ah;
};

static struct {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *mem; /* RQ_DEPTH receive slots, then SQ_DEPTH send slots */
	int port;
	uint16_t pkey_index;
	/* send slots are taken in order: position p (wr_id) is slot
	 * p % SQ_DEPTH; head is the next to take, tail the oldest not
	 * known complete */
	uint64_t sq_head, sq_tail;
	/* sends gathered for one ibv_post_send (ud_flush) */
	struct ibv_send_wr wr[SQ_DEPTH];
	struct ibv_sge sge[SQ_DEPTH];
	unsigned npend;
} ud;

static uint8_t *rslot(uint32_t i) { return ud.mem + (size_t)i * SLOT; }
static uint8_t *sslot(uint32_t i) { return ud.mem + (size_t)(RQ_DEPTH + i) * SLOT; }

int ud_query(struct ipoib_ud_info *info)
{
	struct ibv_port_attr pa;
	union ibv_gid gid;

	if (ibv_query_port(ud.ctx, (uint8_t)ud.port, &pa) ||
	    ibv_query_gid(ud.ctx, (uint8_t)ud.port, 0, &gid))
		return -EIO;
	info->lid = pa.lid;
	info->sm_lid = pa.sm_lid;
	info->sm_sl = pa.sm_sl;
	info->port_state = (uint8_t)pa.state;
	info->ib_mtu = 128 << pa.active_mtu;
	memcpy(info->gid, gid.raw, 16);
	info->pkey_index = ud.pkey_index;
	return 0;
}

int ud_open(const char *dev, int port, uint16_t pkey, struct ipoib_ud_info *info)
{
	struct ibv_device **list;
	int n, i, err = -ENODEV;

	list = ibv_get_device_list(&n);
	if (!list)
		return -ENODEV;
	for (i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), dev))
			break;
	if (i < n)
		ud.ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!ud.ctx)
		return err;
	ud.port = port;
	/* the port's events (main.c) are read without waiting */
	fcntl(ud.ctx->async_fd, F_SETFL, fcntl(ud.ctx->async_fd, F_GETFL) | O_NONBLOCK);
	ud.pd = ibv_alloc_pd(ud.ctx);
	if (!ud.pd)
		return -ENOMEM;
	/* the partition's index: low 15 bits equal (IBA 10.9.2) */
	for (i = 0; i < 128; i++) {
		uint16_t v;

		if (ibv_query_pkey(ud.ctx, (uint8_t)port, i, &v))
			break;
		v = be16toh(v);
		if ((v & 0x7fff) && (v & 0x7fff) == (pkey & 0x7fff)) {
			ud.pkey_index = (uint16_t)i;
			return ud_query(info);
		}
	}
	return -ENOENT;
}

static int post_recv(uint32_t i)
{
	struct ibv_sge sge = {(uintptr_t)rslot(i), SLOT, ud.mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = i, .sg_list = &sge, .num_sge = 1}, *bad;

	return ibv_post_recv(ud.qp, &wr, &bad);
}

int ud_start(uint32_t qkey, uint32_t *qpn)
{
	struct ibv_qp_init_attr ia = {
	    .qp_type = IBV_QPT_UD,
	    .cap = {.max_send_wr = SQ_DEPTH,
		    .max_recv_wr = RQ_DEPTH,
		    .max_send_sge = 1,
		    .max_recv_sge = 1},
	};
	struct ibv_qp_attr a;

	ud.ch = ud.pd ? ibv_create_comp_channel(ud.ctx) : NULL;
	if (ud.ch)
		fcntl(ud.ch->fd, F_SETFL, fcntl(ud.ch->fd, F_GETFL) | O_NONBLOCK);
	ud.cq = ud.ch ? ibv_create_cq(ud.ctx, RQ_DEPTH + SQ_DEPTH, NULL, ud.ch, 0) : NULL;
	if (!ud.cq)
		return -ENOMEM;
	ud.mem = aligned_alloc(4096, (size_t)(RQ_DEPTH + SQ_DEPTH) * SLOT);
	if (!ud.mem)
		return -ENOMEM;
	ud.mr =
	    ibv_reg_mr(ud.pd, ud.mem, (size_t)(RQ_DEPTH + SQ_DEPTH) * SLOT, IBV_ACCESS_LOCAL_WRITE);
	if (!ud.mr)
		return -errno;
	ia.send_cq = ia.recv_cq = ud.cq;
	ud.qp = ibv_create_qp(ud.pd, &ia);
	if (!ud.qp)
		return -errno;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = ud.pkey_index;
	a.port_num = (uint8_t)ud.port;
	a.qkey = qkey;
	if (ibv_modify_qp(ud.qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		return -errno;
	for (uint32_t i = 0; i < RQ_DEPTH; i++)
		if (post_recv(i))
			return -errno;
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(ud.qp, &a, IBV_QP_STATE))
		return -errno;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	if (ibv_modify_qp(ud.qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		return -errno;
	ud.sq_head = ud.sq_tail = 0;
	*qpn = ud.qp->qp_num;
	return ibv_req_notify_cq(ud.cq, 0) ? -EIO : 0;
}

int ud_fd(void) { return ud.ch ? ud.ch->fd : -1; }
struct ibv_context *ud_ctx(void) { return ud.ctx; }
struct ibv_pd *ud_pd(void) { return ud.pd; }
int ud_port(void) { return ud.port; }

/* Reap completions: receives to the receive path and back to the RQ
 * (each batch's buffers posted again as one list), sends' slots back to
 * the free list. */
static int reap(void)
{
	struct ibv_wc wc[64];
	struct ibv_recv_wr rwr[64], *bad;
	struct ibv_sge rsge[64];
	int n, total = 0;

	while ((n = ibv_poll_cq(ud.cq, 64, wc)) > 0) {
		unsigned nr = 0;

		total += n;
		for (int i = 0; i < n; i++) {
			if (wc[i].opcode & IBV_WC_RECV) {
				uint32_t s = (uint32_t)wc[i].wr_id;

				if (wc[i].status == IBV_WC_SUCCESS) {
					/* no GRH: the area is not written, zero it */
					if (!(wc[i].wc_flags & IBV_WC_GRH))
						memset(rslot(s), 0, IPOIB_GRH_LEN);
					ipoib_input(&ipoib, rslot(s), wc[i].byte_len, wc[i].src_qp,
						    wc[i].slid);
				}
				if (wc[i].status == IBV_WC_WR_FLUSH_ERR)
					continue;
				rsge[nr] = (struct ibv_sge){(uintptr_t)rslot(s), SLOT, ud.mr->lkey};
				rwr[nr] = (struct ibv_recv_wr){
				    .wr_id = s, .sg_list = &rsge[nr], .num_sge = 1};
				if (nr)
					rwr[nr - 1].next = &rwr[nr];
				nr++;
			} else if (wc[i].wr_id >= ud.sq_tail && wc[i].wr_id < ud.sq_head) {
				ud.sq_tail = wc[i].wr_id + 1;
			}
		}
		if (nr)
			ibv_post_recv(ud.qp, rwr, &bad);
	}
	return total;
}

void ud_poll(void)
{
	struct ibv_cq *cq;
	void *cctx;
	bool ev = false;

	while (!ibv_get_cq_event(ud.ch, &cq, &cctx)) {
		ibv_ack_cq_events(cq, 1);
		ibv_req_notify_cq(cq, 0);
		ev = true;
	}
	/* The CQ is armed, so without an event it has nothing. A poll then
	 * (every wake-up of the loop, e.g. for a packet from the kernel)
	 * would take the engine's sockets from the verbs progress thread:
	 * a wake-up of it, and its engine lock in the way of our post. */
	if (ev)
		reap();
}

static unsigned sq_nfree(void) { return SQ_DEPTH - (unsigned)(ud.sq_head - ud.sq_tail); }

unsigned ud_sq_free(void)
{
	if (!sq_nfree())
		reap();
	return sq_nfree();
}

struct ipoib_ah *ud_ah(const struct ipoib_path *path)
{
	struct ibv_ah_attr a = {.dlid = path->dlid, .sl = path->sl, .port_num = (uint8_t)ud.port};
	struct ipoib_ah *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	if (path->global) {
		a.is_global = 1;
		memcpy(a.grh.dgid.raw, path->dgid, 16);
		a.grh.sgid_index = 0;
		a.grh.hop_limit = path->hop_limit;
		a.grh.traffic_class = path->tclass;
		a.grh.flow_label = path->flow_label;
	}
	h->ah = ibv_create_ah(ud.pd, &a);
	if (!h->ah) {
		free(h);
		return NULL;
	}
	return h;
}

void ud_ah_put(struct ipoib_ah *ah)
{
	if (!ah)
		return;
	ibv_destroy_ah(ah->ah);
	free(ah);
}

/* A TSO packet cut into segments (gso.c) makes up to 32 sends at once:
 * they go to the QP as one list, so the queue and its doorbell are
 * touched once for the lot. */
void ud_flush(void)
{
	struct ibv_send_wr *bad = NULL;

	if (!ud.npend)
		return;
	ud.wr[ud.npend - 1].next = NULL;
	if (ibv_post_send(ud.qp, ud.wr, &bad) && bad) {
		/* what the queue refused is lost: its slots back (the last
		 * ones taken) */
		for (struct ibv_send_wr *w = bad; w; w = w->next) {
			ud.sq_head--;
			ipoib.cnt[IC_tx_drop_post]++;
		}
	}
	ud.npend = 0;
}

int ud_send(struct ipoib_ah *ah, uint32_t qpn, uint32_t qkey, const uint8_t *frame, size_t len)
{
	struct ibv_send_wr *wr;
	uint64_t p;
	uint32_t s;

	if (len > IPOIB_BUF)
		return -EMSGSIZE;
	/* a full send queue: what completed, else the frame is lost (the
	 * loop reads no packet from the kernel while the queue is full) */
	if (!sq_nfree()) {
		ud_flush();
		reap();
	}
	if (!sq_nfree())
		return -ENOBUFS;
	p = ud.sq_head++;
	s = (uint32_t)(p % SQ_DEPTH);
	memcpy(sslot(s), frame, len);
	ud.sge[ud.npend] = (struct ibv_sge){(uintptr_t)sslot(s), (uint32_t)len, ud.mr->lkey};
	wr = &ud.wr[ud.npend];
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = p;
	wr->sg_list = &ud.sge[ud.npend];
	wr->num_sge = 1;
	wr->opcode = IBV_WR_SEND;
	wr->send_flags = p % SIGNAL_EVERY == SIGNAL_EVERY - 1 ? IBV_SEND_SIGNALED : 0;
	wr->wr.ud.ah = ah->ah;
	wr->wr.ud.remote_qpn = qpn;
	wr->wr.ud.remote_qkey = qkey;
	if (ud.npend)
		ud.wr[ud.npend - 1].next = wr;
	ud.npend++;
	return 0;
}

int ud_attach(const uint8_t mgid[16], uint16_t mlid)
{
	union ibv_gid g;

	memcpy(g.raw, mgid, 16);
	return -ibv_attach_mcast(ud.qp, &g, mlid);
}

int ud_detach(const uint8_t mgid[16], uint16_t mlid)
{
	union ibv_gid g;

	memcpy(g.raw, mgid, 16);
	return -ibv_detach_mcast(ud.qp, &g, mlid);
}

void ud_close(void)
{
	ud_flush();
	if (ud.qp)
		ibv_destroy_qp(ud.qp);
	if (ud.mr)
		ibv_dereg_mr(ud.mr);
	if (ud.cq)
		ibv_destroy_cq(ud.cq);
	if (ud.ch)
		ibv_destroy_comp_channel(ud.ch);
	if (ud.pd)
		ibv_dealloc_pd(ud.pd);
	if (ud.ctx)
		ibv_close_device(ud.ctx);
	free(ud.mem);
	memset(&ud, 0, sizeof(ud));
}
