/*
 * Memory windows end to end (ibv_alloc_mw(3), ibv_bind_mw(3), the bind,
 * local-invalidate and send-with-invalidate work requests, IBA 10.6.7),
 * between a server that owns the memory and a client that reaches it only
 * through window rkeys; every byte is checked.
 *
 *   mw_check [options]          server: owns the region and the windows
 *   mw_check [options] HOST     client: RDMA through the windows' rkeys
 *
 * Phases (each on a fresh QP pair, since every refused access ends its QP):
 *   t1       type 1 window bound by ibv_bind_mw over 8 KiB inside a 64 KiB
 *            region: WRITE, READ and fetch-and-add inside succeed, a WRITE
 *            that crosses the window's end is IBV_WC_REM_ACCESS_ERR and
 *            writes nothing
 *   t1-ro    the same window rebound read-only: READ ok, WRITE refused
 *            (ibv_wr_atomic_write through it stores its 8 bytes)
 *   t1-noat  the same (type 1: any QP of the PD), fetch-and-add refused
 *   aw-ro    the same, ibv_wr_atomic_write refused (it needs remote write)
 *   t2-inv   type 2 window bound with ibv_wr_bind_mw (rkey by
 *            ibv_inc_rkey), WRITE/READ/compare-and-swap ok, then
 *            ibv_wr_local_inv: the next WRITE is refused
 *   t2-sinv  the window bound again by ibv_post_send(IBV_WR_BIND_MW); the
 *            client's ibv_wr_send_inv invalidates it: the receive has
 *            IBV_WC_WITH_INV and the rkey, the next WRITE is refused
 *   t2-qp    a type 2 window serves only the QP that bound it: a WRITE
 *            through another QP of the same PD is refused, through its own
 *            it lands; then IBV_WR_LOCAL_INV by ibv_post_send
 *   badbind  binds that must fail with IBV_WC_MW_BIND_ERR and leave the QP
 *            in ERROR (the next WQE flushed): a region without
 *            IBV_ACCESS_MW_BIND (on a QP connected to the client's), a
 *            window beyond the region, a region of another PD (on a QP
 *            connected to itself)
 *   t2-zb    a zero-based type 2 window (IBV_ACCESS_ZERO_BASED): remote
 *            address 0 is the window's first byte; WRITE and READ inside,
 *            a WRITE across its end refused
 *   t2-qpgone (server alone) a type 2 window whose QP was destroyed is
 *            invalid: it binds again
 *   dealloc  ibv_dereg_mr of a region with a bound window fails; after
 *            ibv_dealloc_mw of the bound window a WRITE is refused
 *
 * Output: one "phase NAME ok" line per phase, then "ok", or "fail: WHY"
 * (exit 1).
 *
 *   mw_check -K    binds a type 1 and a type 2 window on a QP connected to
 *                  itself, prints "held ...", and waits to be killed (the
 *                  daemon's clean-up of a dead owner's windows)
 */
#include "hostpair.h"

#include <stdbool.h>

#define REG_LEN 65536u
#define WIN_OFF 4096u
#define WIN_LEN 8192u

struct res {
	struct hp_opts hp;
	const char *host;
	struct ibv_context *ctx;
	struct ibv_pd *pd, *pd2;
	struct ibv_cq *cq;
	struct ibv_mr *mr, *mr_nobind, *mr_pd2;
	uint8_t *buf, *buf2;
	int gid_index;
	union ibv_gid gid;
	int sock;
	int64_t end;
};

static uint8_t init_byte(size_t i) { return (uint8_t)(i * 7 + 3); }
static uint8_t pat_byte(size_t i, unsigned k) { return (uint8_t)(i * 13 + k * 31 + 1); }

static void server_fill(struct res *r)
{
	for (size_t i = 0; i < REG_LEN; i++)
		r->buf[i] = init_byte(i);
}

static struct ibv_qp *make_qp(struct res *r)
{
	struct ibv_qp_init_attr_ex ia;
	struct ibv_qp *qp;

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = r->cq;
	ia.recv_cq = r->cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = 8;
	ia.cap.max_recv_wr = 4;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.pd = r->pd;
	ia.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	ia.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE |
			    IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |
			    IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_BIND_MW |
			    IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_SEND_WITH_INV |
			    IBV_QP_EX_WITH_ATOMIC_WRITE;
	qp = ibv_create_qp_ex(r->ctx, &ia);
	if (!qp)
		hp_fail("ibv_create_qp_ex: %s", strerror(errno));
	return qp;
}

static void connect_qp(struct res *r, struct ibv_qp *qp, uint32_t dqpn, const uint8_t *dgid,
		       uint32_t psn)
{
	struct hp_path p;
	int err;

	memset(&p, 0, sizeof(p));
	p.port = 1;
	p.sgid_index = r->gid_index;
	memcpy(p.dgid.raw, dgid, 16);
	p.mtu = IBV_MTU_1024;
	p.dqpn = dqpn;
	p.rq_psn = psn;
	p.sq_psn = psn;
	p.timeout = 14;
	p.retry_cnt = 7;
	p.rnr_retry = 7;
	p.min_rnr_timer = 12;
	p.max_rd_atomic = 4;
	p.max_dest_rd_atomic = 4;
	p.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	err = hp_qp_modify(qp, &p, IBV_QPS_RTS);
	if (err)
		hp_fail("ibv_modify_qp to RTS: %s", strerror(err));
}

/* A fresh connected QP pair; peer gets the other side's info. */
static struct ibv_qp *pair_up(struct res *r, struct hp_info *peer)
{
	struct ibv_qp *qp = make_qp(r);
	struct hp_info me;

	memset(&me, 0, sizeof(me));
	me.qpn = qp->qp_num;
	me.psn = 0x1000;
	me.addr = (uintptr_t)r->buf;
	memcpy(me.gid, r->gid.raw, 16);
	hp_exchange(r->sock, &me, peer, r->hp.secs);
	connect_qp(r, qp, peer->qpn, peer->gid, 0x1000);
	hp_sync(r->sock, r->hp.secs);
	return qp;
}

/* The server tells the window (rkey, addr, len); the client learns it. */
static void tell_window(struct res *r, uint32_t rkey, uint64_t addr, uint64_t len,
			struct hp_info *win)
{
	struct hp_info me;

	memset(&me, 0, sizeof(me));
	me.rkey = rkey;
	me.addr = addr;
	me.len = len;
	hp_exchange(r->sock, &me, win, r->hp.secs);
}

static void wait_wc(struct res *r, struct ibv_wc *wc)
{
	if (!hp_poll_until(r->cq, wc, r->end, 50))
		hp_fail("no completion before the deadline");
}

static void expect_wc(struct res *r, const char *what, enum ibv_wc_status st, int opcode)
{
	struct ibv_wc wc;

	wait_wc(r, &wc);
	if (wc.status != st)
		hp_fail("%s: %s, expected %s", what, hp_wc_status_name(wc.status),
			hp_wc_status_name(st));
	if (st == IBV_WC_SUCCESS && opcode >= 0 && (int)wc.opcode != opcode)
		hp_fail("%s: completion opcode %d, expected %d", what, wc.opcode, opcode);
}

/* Client: one signaled RDMA WQE on the local region at loff. */
static enum ibv_wc_status rdma(struct res *r, struct ibv_qp *qp, enum ibv_wr_opcode op,
			       uint32_t rkey, uint64_t raddr, size_t loff, uint32_t len,
			       uint64_t cmp_add, uint64_t swap)
{
	struct ibv_sge sge = {.addr = (uintptr_t)r->buf + loff, .length = len, .lkey = r->mr->lkey};
	struct ibv_send_wr wr, *bad;
	struct ibv_wc wc;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 7;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_CMP_AND_SWP) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = cmp_add;
		wr.wr.atomic.swap = swap;
	} else {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	if (ibv_post_send(qp, &wr, &bad))
		hp_fail("ibv_post_send: %s", strerror(errno));
	wait_wc(r, &wc);
	return wc.status;
}

/* Client: ibv_wr_atomic_write of the 8 bytes at v. */
static enum ibv_wc_status atomic_write(struct res *r, struct ibv_qp *qp, uint32_t rkey,
				       uint64_t raddr, const uint8_t *v)
{
	struct ibv_qp_ex *qx = ibv_qp_to_qp_ex(qp);
	struct ibv_wc wc;

	ibv_wr_start(qx);
	qx->wr_id = 8;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_write(qx, rkey, raddr, v);
	if (ibv_wr_complete(qx))
		hp_fail("ibv_wr_complete (atomic_write): %s", strerror(errno));
	wait_wc(r, &wc);
	if (wc.status == IBV_WC_SUCCESS && wc.opcode != IBV_WC_ATOMIC_WRITE)
		hp_fail("atomic write: completion opcode %d", wc.opcode);
	return wc.status;
}

static const uint8_t aw_bytes[8] = {0xa1, 0xb2, 0xc3, 0xd4, 0xe5, 0xf6, 0x07, 0x18};

static void must(const char *what, enum ibv_wc_status got, enum ibv_wc_status want)
{
	if (got != want)
		hp_fail("%s: %s, expected %s", what, hp_wc_status_name(got),
			hp_wc_status_name(want));
}

/* Server: the region equals the initial fill except [off, off+len) = src */
static void check_region(struct res *r, const char *phase, size_t off, const uint8_t *src,
			 size_t len)
{
	for (size_t i = 0; i < REG_LEN; i++) {
		uint8_t want = (i >= off && i < off + len) ? src[i - off] : init_byte(i);

		if (r->buf[i] != want)
			hp_fail("%s: server byte %zu is 0x%02x, expected 0x%02x", phase, i,
				r->buf[i], want);
	}
}

static void qp_must_be_err(struct ibv_qp *qp, const char *what)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		hp_fail("ibv_query_qp");
	if (a.qp_state != IBV_QPS_ERR)
		hp_fail("%s: QP state %d, expected IBV_QPS_ERR", what, a.qp_state);
}

static void phase_ok(const char *name) { printf("phase %s ok\n", name); }

/* ---- the phases ---------------------------------------------------------- */

static void bind_type1(struct res *r, struct ibv_qp *qp, struct ibv_mw *mw, unsigned int access)
{
	struct ibv_mw_bind b;
	uint32_t old = mw->rkey;

	memset(&b, 0, sizeof(b));
	b.wr_id = 11;
	b.send_flags = IBV_SEND_SIGNALED;
	b.bind_info.mr = r->mr;
	b.bind_info.addr = (uintptr_t)r->buf + WIN_OFF;
	b.bind_info.length = WIN_LEN;
	b.bind_info.mw_access_flags = access;
	if (ibv_bind_mw(qp, mw, &b))
		hp_fail("ibv_bind_mw: %s", strerror(errno));
	if (mw->rkey != ibv_inc_rkey(old))
		hp_fail("ibv_bind_mw: rkey 0x%x, expected 0x%x", mw->rkey, ibv_inc_rkey(old));
	expect_wc(r, "type 1 bind", IBV_WC_SUCCESS, IBV_WC_BIND_MW);
}

static void client_t1(struct res *r, struct ibv_qp *qp, const struct hp_info *w)
{
	uint64_t old;

	for (size_t i = 0; i < 4096; i++)
		r->buf[i] = pat_byte(i, 1);
	must("WRITE inside", rdma(r, qp, IBV_WR_RDMA_WRITE, w->rkey, w->addr, 0, 4096, 0, 0),
	     IBV_WC_SUCCESS);
	memset(r->buf + 16384, 0, WIN_LEN);
	must("READ window", rdma(r, qp, IBV_WR_RDMA_READ, w->rkey, w->addr, 16384, WIN_LEN, 0, 0),
	     IBV_WC_SUCCESS);
	for (size_t i = 0; i < WIN_LEN; i++) {
		uint8_t want = i < 4096 ? pat_byte(i, 1) : init_byte(WIN_OFF + i);

		if (r->buf[16384 + i] != want)
			hp_fail("READ through the window: byte %zu is 0x%02x, expected 0x%02x", i,
				r->buf[16384 + i], want);
	}
	must("FETCH_ADD inside",
	     rdma(r, qp, IBV_WR_ATOMIC_FETCH_AND_ADD, w->rkey, w->addr + 4096, 32768, 8, 5, 0),
	     IBV_WC_SUCCESS);
	memcpy(&old, r->buf + 32768, 8);
	{
		uint64_t want;
		uint8_t b[8];

		for (int i = 0; i < 8; i++)
			b[i] = init_byte(WIN_OFF + 4096 + (size_t)i);
		memcpy(&want, b, 8);
		if (old != want)
			hp_fail("FETCH_ADD returned 0x%llx, expected 0x%llx",
				(unsigned long long)old, (unsigned long long)want);
	}
	must("ATOMIC_WRITE inside", atomic_write(r, qp, w->rkey, w->addr + 4104, aw_bytes),
	     IBV_WC_SUCCESS);
	must("WRITE across the window's end",
	     rdma(r, qp, IBV_WR_RDMA_WRITE, w->rkey, w->addr + WIN_LEN - 8, 0, 16, 0, 0),
	     IBV_WC_REM_ACCESS_ERR);
	qp_must_be_err(qp, "after a refused WRITE");
}

static void server_t1_check(struct res *r)
{
	uint8_t exp[4096 + 16];
	uint64_t v;

	for (size_t i = 0; i < 4096; i++)
		exp[i] = pat_byte(i, 1);
	for (int i = 0; i < 8; i++)
		exp[4096 + i] = init_byte(WIN_OFF + 4096 + (size_t)i);
	memcpy(&v, exp + 4096, 8);
	v += 5;
	memcpy(exp + 4096, &v, 8);
	memcpy(exp + 4104, aw_bytes, 8);
	check_region(r, "t1", WIN_OFF, exp, sizeof(exp));
}

static void server_bind_t2(struct ibv_qp *qp, struct ibv_mw *mw, bool builder,
			   struct ibv_mr *mr, uint64_t addr, uint64_t len)
{
	struct ibv_mw_bind_info bi = {.mr = mr,
				      .addr = addr,
				      .length = len,
				      .mw_access_flags = IBV_ACCESS_REMOTE_WRITE |
							 IBV_ACCESS_REMOTE_READ |
							 IBV_ACCESS_REMOTE_ATOMIC};
	uint32_t rkey = ibv_inc_rkey(mw->rkey);
	struct ibv_qp_ex *qx = ibv_qp_to_qp_ex(qp);

	if (builder) {
		ibv_wr_start(qx);
		qx->wr_id = 21;
		qx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_bind_mw(qx, mw, rkey, &bi);
		if (ibv_wr_complete(qx))
			hp_fail("ibv_wr_complete (bind): %s", strerror(errno));
	} else {
		struct ibv_send_wr wr, *bad;

		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 22;
		wr.opcode = IBV_WR_BIND_MW;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.bind_mw.mw = mw;
		wr.bind_mw.rkey = rkey;
		wr.bind_mw.bind_info = bi;
		if (ibv_post_send(qp, &wr, &bad))
			hp_fail("ibv_post_send (bind): %s", strerror(errno));
	}
	/* the type 2 rkey is the consumer's to keep */
	mw->rkey = rkey;
}

static void client_t2(struct res *r, struct ibv_qp *qp, const struct hp_info *w)
{
	uint64_t old, want;
	uint8_t b[8];

	for (size_t i = 0; i < 2048; i++)
		r->buf[i] = pat_byte(i, 2);
	must("t2 WRITE", rdma(r, qp, IBV_WR_RDMA_WRITE, w->rkey, w->addr + 100, 0, 2048, 0, 0),
	     IBV_WC_SUCCESS);
	memset(r->buf + 16384, 0, 2048);
	must("t2 READ", rdma(r, qp, IBV_WR_RDMA_READ, w->rkey, w->addr + 100, 16384, 2048, 0, 0),
	     IBV_WC_SUCCESS);
	if (memcmp(r->buf + 16384, r->buf, 2048))
		hp_fail("t2 READ does not return what was written");
	for (int i = 0; i < 8; i++)
		b[i] = init_byte(WIN_OFF + 4096 + (size_t)i);
	memcpy(&want, b, 8);
	must("t2 CMP_SWP",
	     rdma(r, qp, IBV_WR_ATOMIC_CMP_AND_SWP, w->rkey, w->addr + 4096, 32768, 8, want,
		  0x0123456789abcdefull),
	     IBV_WC_SUCCESS);
	memcpy(&old, r->buf + 32768, 8);
	if (old != want)
		hp_fail("t2 CMP_SWP returned 0x%llx, expected 0x%llx", (unsigned long long)old,
			(unsigned long long)want);
}

static void server_t2_check(struct res *r, const char *phase)
{
	uint8_t exp[4096 - 100 + 8];
	uint64_t v = 0x0123456789abcdefull;

	for (size_t i = 0; i < sizeof(exp); i++)
		exp[i] = init_byte(WIN_OFF + 100 + i);
	for (size_t i = 0; i < 2048; i++)
		exp[i] = pat_byte(i, 2);
	memcpy(exp + 4096 - 100, &v, 8);
	check_region(r, phase, WIN_OFF + 100, exp, sizeof(exp));
}

static void run_server(struct res *r)
{
	struct ibv_mw *mw1, *mw2, *mw3;
	struct hp_info peer, dummy;
	struct ibv_qp *qp;
	struct ibv_wc wc;
	uint64_t waddr = (uintptr_t)r->buf + WIN_OFF;

	mw1 = ibv_alloc_mw(r->pd, IBV_MW_TYPE_1);
	mw2 = ibv_alloc_mw(r->pd, IBV_MW_TYPE_2);
	mw3 = ibv_alloc_mw(r->pd, IBV_MW_TYPE_1);
	if (!mw1 || !mw2 || !mw3)
		hp_fail("ibv_alloc_mw: %s", strerror(errno));
	if (mw1->type != IBV_MW_TYPE_1 || mw2->type != IBV_MW_TYPE_2 || mw2->pd != r->pd)
		hp_fail("ibv_alloc_mw: wrong type or PD");

	/* t1 */
	server_fill(r);
	qp = pair_up(r, &peer);
	bind_type1(r, qp, mw1,
		   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	tell_window(r, mw1->rkey, waddr, WIN_LEN, &dummy);
	hp_sync(r->sock, r->hp.secs); /* the client is done */
	server_t1_check(r);
	phase_ok("t1");
	ibv_destroy_qp(qp);

	/* t1-ro, t1-noat */
	server_fill(r);
	qp = pair_up(r, &peer);
	bind_type1(r, qp, mw1, IBV_ACCESS_REMOTE_READ);
	tell_window(r, mw1->rkey, waddr, WIN_LEN, &dummy);
	hp_sync(r->sock, r->hp.secs);
	check_region(r, "t1-ro", 0, NULL, 0);
	phase_ok("t1-ro");
	ibv_destroy_qp(qp);
	qp = pair_up(r, &peer); /* the same type 1 window through another QP */
	hp_sync(r->sock, r->hp.secs);
	check_region(r, "t1-noat", 0, NULL, 0);
	phase_ok("t1-noat");
	ibv_destroy_qp(qp);
	qp = pair_up(r, &peer);
	hp_sync(r->sock, r->hp.secs);
	check_region(r, "aw-ro", 0, NULL, 0);
	phase_ok("aw-ro");
	ibv_destroy_qp(qp);

	/* t2-inv: bind with ibv_wr_bind_mw, invalidate with ibv_wr_local_inv */
	server_fill(r);
	qp = pair_up(r, &peer);
	server_bind_t2(qp, mw2, true, r->mr, waddr, WIN_LEN);
	expect_wc(r, "type 2 bind (ibv_wr_bind_mw)", IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	tell_window(r, mw2->rkey, waddr, WIN_LEN, &dummy);
	hp_sync(r->sock, r->hp.secs); /* client: write, read, cas done */
	server_t2_check(r, "t2-inv");
	{
		struct ibv_qp_ex *qx = ibv_qp_to_qp_ex(qp);

		ibv_wr_start(qx);
		qx->wr_id = 31;
		qx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_local_inv(qx, mw2->rkey);
		if (ibv_wr_complete(qx))
			hp_fail("ibv_wr_complete (local_inv): %s", strerror(errno));
		expect_wc(r, "LOCAL_INV", IBV_WC_SUCCESS, IBV_WC_LOCAL_INV);
	}
	hp_sync(r->sock, r->hp.secs); /* invalidated */
	hp_sync(r->sock, r->hp.secs); /* client: refused */
	server_t2_check(r, "t2-inv after the refused WRITE");
	phase_ok("t2-inv");
	ibv_destroy_qp(qp);

	/* t2-sinv: bind by ibv_post_send, the client's SEND_WITH_INV */
	server_fill(r);
	qp = pair_up(r, &peer);
	{
		struct ibv_sge sge = {.addr = (uintptr_t)r->buf2, .length = 64,
				      .lkey = r->mr_nobind->lkey};
		struct ibv_recv_wr rw = {.wr_id = 41, .sg_list = &sge, .num_sge = 1}, *bad;

		if (ibv_post_recv(qp, &rw, &bad))
			hp_fail("ibv_post_recv");
	}
	server_bind_t2(qp, mw2, false, r->mr, waddr, WIN_LEN);
	expect_wc(r, "type 2 bind (IBV_WR_BIND_MW)", IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	tell_window(r, mw2->rkey, waddr, WIN_LEN, &dummy);
	wait_wc(r, &wc);
	if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV || wc.wr_id != 41)
		hp_fail("SEND_WITH_INV receive: %s opcode %d", hp_wc_status_name(wc.status),
			wc.opcode);
	if (!(wc.wc_flags & IBV_WC_WITH_INV) || (wc.wc_flags & IBV_WC_WITH_IMM))
		hp_fail("SEND_WITH_INV receive: wc_flags 0x%x without IBV_WC_WITH_INV",
			wc.wc_flags);
	if (wc.invalidated_rkey != mw2->rkey)
		hp_fail("invalidated_rkey 0x%x, expected 0x%x", wc.invalidated_rkey, mw2->rkey);
	if (wc.byte_len != 64)
		hp_fail("SEND_WITH_INV byte_len %u", wc.byte_len);
	for (size_t i = 0; i < 64; i++)
		if (r->buf2[i] != pat_byte(i, 5))
			hp_fail("SEND_WITH_INV payload byte %zu", i);
	hp_sync(r->sock, r->hp.secs); /* received */
	hp_sync(r->sock, r->hp.secs); /* client: the next WRITE refused */
	printf("invalidated_rkey=0x%x\n", wc.invalidated_rkey);
	phase_ok("t2-sinv");
	ibv_destroy_qp(qp);

	/* t2-qp: bound on qp, refused through qp2 */
	server_fill(r);
	qp = pair_up(r, &peer);
	{
		struct ibv_qp *qp2 = pair_up(r, &peer);
		struct ibv_send_wr wr, *bad;
		uint8_t exp[64];

		server_bind_t2(qp, mw2, false, r->mr, waddr, WIN_LEN);
		expect_wc(r, "type 2 bind (t2-qp)", IBV_WC_SUCCESS, IBV_WC_BIND_MW);
		tell_window(r, mw2->rkey, waddr, WIN_LEN, &dummy);
		hp_sync(r->sock, r->hp.secs); /* the client is done */
		for (size_t i = 0; i < 64; i++)
			exp[i] = pat_byte(i, 7);
		check_region(r, "t2-qp", WIN_OFF, exp, 64);
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 61;
		wr.opcode = IBV_WR_LOCAL_INV;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.invalidate_rkey = mw2->rkey;
		if (ibv_post_send(qp, &wr, &bad))
			hp_fail("ibv_post_send (LOCAL_INV): %s", strerror(errno));
		expect_wc(r, "LOCAL_INV (ibv_post_send)", IBV_WC_SUCCESS, IBV_WC_LOCAL_INV);
		ibv_destroy_qp(qp2);
	}
	phase_ok("t2-qp");
	ibv_destroy_qp(qp);

	/* badbind: on a QP connected to itself */
	{
		struct {
			const char *name;
			struct ibv_mr *mr;
			uint64_t addr, len;
		} bad[] = {
		    {"region without IBV_ACCESS_MW_BIND", r->mr_nobind, (uintptr_t)r->buf2, 4096},
		    {"window beyond the region", r->mr, (uintptr_t)r->buf + REG_LEN - 100, 4096},
		    {"region of another PD", r->mr_pd2, (uintptr_t)r->buf2 + 8192, 4096},
		};

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			struct ibv_send_wr wr, *b;
			uint32_t before;

			if (i == 0) {
				qp = pair_up(r, &peer);
			} else {
				qp = make_qp(r);
				connect_qp(r, qp, qp->qp_num, r->gid.raw, 0x2000);
			}
			before = mw2->rkey;
			server_bind_t2(qp, mw2, i == 1, bad[i].mr, bad[i].addr, bad[i].len);
			memset(&wr, 0, sizeof(wr));
			wr.wr_id = 99;
			wr.opcode = IBV_WR_SEND;
			wr.send_flags = IBV_SEND_SIGNALED;
			if (ibv_post_send(qp, &wr, &b))
				hp_fail("ibv_post_send after the bind: %s", strerror(errno));
			expect_wc(r, bad[i].name, IBV_WC_MW_BIND_ERR, -1);
			expect_wc(r, "the WQE after a failed bind", IBV_WC_WR_FLUSH_ERR, -1);
			qp_must_be_err(qp, bad[i].name);
			mw2->rkey = before;
			printf("badbind %s: IBV_WC_MW_BIND_ERR, QP in ERROR\n", bad[i].name);
			if (i == 0)
				hp_sync(r->sock, r->hp.secs);
			ibv_destroy_qp(qp);
		}
		phase_ok("badbind");
	}

	/* t2-zb */
	server_fill(r);
	qp = pair_up(r, &peer);
	{
		struct ibv_send_wr wr, *bad;
		uint8_t exp[128];

		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 71;
		wr.opcode = IBV_WR_BIND_MW;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.bind_mw.mw = mw2;
		wr.bind_mw.rkey = ibv_inc_rkey(mw2->rkey);
		wr.bind_mw.bind_info.mr = r->mr;
		wr.bind_mw.bind_info.addr = waddr;
		wr.bind_mw.bind_info.length = WIN_LEN;
		wr.bind_mw.bind_info.mw_access_flags =
		    IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_ZERO_BASED;
		if (ibv_post_send(qp, &wr, &bad))
			hp_fail("ibv_post_send (zero-based bind): %s", strerror(errno));
		mw2->rkey = wr.bind_mw.rkey;
		expect_wc(r, "zero-based type 2 bind", IBV_WC_SUCCESS, IBV_WC_BIND_MW);
		tell_window(r, mw2->rkey, 0, WIN_LEN, &dummy);
		hp_sync(r->sock, r->hp.secs); /* the client is done */
		for (size_t i = 0; i < 128; i++)
			exp[i] = pat_byte(i, 8);
		check_region(r, "t2-zb", WIN_OFF + 256, exp, 128);
	}
	phase_ok("t2-zb");
	ibv_destroy_qp(qp);

	/* dealloc of a bound window */
	server_fill(r);
	qp = pair_up(r, &peer);
	bind_type1(r, qp, mw3, IBV_ACCESS_REMOTE_WRITE);
	tell_window(r, mw3->rkey, waddr, WIN_LEN, &dummy);
	hp_sync(r->sock, r->hp.secs); /* the client wrote */
	if (!ibv_dereg_mr(r->mr))
		hp_fail("ibv_dereg_mr of a region with a bound window succeeded");
	if (ibv_dealloc_mw(mw3))
		hp_fail("ibv_dealloc_mw of a bound window: %s", strerror(errno));
	hp_sync(r->sock, r->hp.secs); /* freed */
	hp_sync(r->sock, r->hp.secs); /* client: refused */
	{
		uint8_t exp[256];

		for (size_t i = 0; i < 256; i++)
			exp[i] = pat_byte(i, 6);
		check_region(r, "dealloc", WIN_OFF, exp, 256);
	}
	phase_ok("dealloc");
	ibv_destroy_qp(qp);

	/* t2-qpgone: the window t2-zb left bound went with its QP, so it
	 * binds again (a bound type 2 window would refuse) */
	qp = make_qp(r);
	connect_qp(r, qp, qp->qp_num, r->gid.raw, 0x4000);
	server_bind_t2(qp, mw2, true, r->mr, waddr, 4096);
	expect_wc(r, "type 2 bind once its QP was destroyed", IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	phase_ok("t2-qpgone");
	ibv_destroy_qp(qp);
	if (ibv_dealloc_mw(mw1) || ibv_dealloc_mw(mw2))
		hp_fail("ibv_dealloc_mw");
}

static void run_client(struct res *r)
{
	struct hp_info peer, w;
	struct ibv_qp *qp;

	/* t1 */
	qp = pair_up(r, &peer);
	tell_window(r, 0, 0, 0, &w);
	client_t1(r, qp, &w);
	hp_sync(r->sock, r->hp.secs);
	phase_ok("t1");
	ibv_destroy_qp(qp);

	/* t1-ro */
	qp = pair_up(r, &peer);
	tell_window(r, 0, 0, 0, &w);
	memset(r->buf + 16384, 0, WIN_LEN);
	must("t1-ro READ", rdma(r, qp, IBV_WR_RDMA_READ, w.rkey, w.addr, 16384, WIN_LEN, 0, 0),
	     IBV_WC_SUCCESS);
	for (size_t i = 0; i < WIN_LEN; i++)
		if (r->buf[16384 + i] != init_byte(WIN_OFF + i))
			hp_fail("t1-ro READ byte %zu", i);
	must("t1-ro WRITE", rdma(r, qp, IBV_WR_RDMA_WRITE, w.rkey, w.addr, 0, 64, 0, 0),
	     IBV_WC_REM_ACCESS_ERR);
	hp_sync(r->sock, r->hp.secs);
	phase_ok("t1-ro");
	ibv_destroy_qp(qp);
	/* t1-noat: same window, another QP */
	qp = pair_up(r, &peer);
	must("t1-noat FETCH_ADD",
	     rdma(r, qp, IBV_WR_ATOMIC_FETCH_AND_ADD, w.rkey, w.addr, 32768, 8, 1, 0),
	     IBV_WC_REM_ACCESS_ERR);
	hp_sync(r->sock, r->hp.secs);
	phase_ok("t1-noat");
	ibv_destroy_qp(qp);
	qp = pair_up(r, &peer);
	must("aw-ro ATOMIC_WRITE", atomic_write(r, qp, w.rkey, w.addr + 8, aw_bytes),
	     IBV_WC_REM_ACCESS_ERR);
	hp_sync(r->sock, r->hp.secs);
	phase_ok("aw-ro");
	ibv_destroy_qp(qp);

	/* t2-inv */
	qp = pair_up(r, &peer);
	tell_window(r, 0, 0, 0, &w);
	client_t2(r, qp, &w);
	hp_sync(r->sock, r->hp.secs);
	hp_sync(r->sock, r->hp.secs); /* the server invalidated */
	for (size_t i = 0; i < 64; i++)
		r->buf[i] = 0xee;
	must("WRITE after LOCAL_INV", rdma(r, qp, IBV_WR_RDMA_WRITE, w.rkey, w.addr, 0, 64, 0, 0),
	     IBV_WC_REM_ACCESS_ERR);
	hp_sync(r->sock, r->hp.secs);
	phase_ok("t2-inv");
	ibv_destroy_qp(qp);

	/* t2-sinv */
	qp = pair_up(r, &peer);
	tell_window(r, 0, 0, 0, &w);
	{
		struct ibv_qp_ex *qx = ibv_qp_to_qp_ex(qp);

		for (size_t i = 0; i < 64; i++)
			r->buf[i] = pat_byte(i, 5);
		must("WRITE before SEND_WITH_INV",
		     rdma(r, qp, IBV_WR_RDMA_WRITE, w.rkey, w.addr, 0, 64, 0, 0), IBV_WC_SUCCESS);
		ibv_wr_start(qx);
		qx->wr_id = 51;
		qx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_send_inv(qx, w.rkey);
		ibv_wr_set_sge(qx, r->mr->lkey, (uintptr_t)r->buf, 64);
		if (ibv_wr_complete(qx))
			hp_fail("ibv_wr_complete (send_inv): %s", strerror(errno));
		expect_wc(r, "SEND_WITH_INV", IBV_WC_SUCCESS, IBV_WC_SEND);
	}
	hp_sync(r->sock, r->hp.secs);
	must("WRITE after SEND_WITH_INV",
	     rdma(r, qp, IBV_WR_RDMA_WRITE, w.rkey, w.addr, 0, 64, 0, 0), IBV_WC_REM_ACCESS_ERR);
	hp_sync(r->sock, r->hp.secs);
	phase_ok("t2-sinv");
	ibv_destroy_qp(qp);

	/* t2-qp */
	qp = pair_up(r, &peer);
	{
		struct ibv_qp *qp2 = pair_up(r, &peer);

		tell_window(r, 0, 0, 0, &w);
		for (size_t i = 0; i < 64; i++)
			r->buf[i] = 0xee;
		must("WRITE through another QP",
		     rdma(r, qp2, IBV_WR_RDMA_WRITE, w.rkey, w.addr, 0, 64, 0, 0),
		     IBV_WC_REM_ACCESS_ERR);
		for (size_t i = 0; i < 64; i++)
			r->buf[i] = pat_byte(i, 7);
		must("WRITE through the bound QP",
		     rdma(r, qp, IBV_WR_RDMA_WRITE, w.rkey, w.addr, 0, 64, 0, 0), IBV_WC_SUCCESS);
		hp_sync(r->sock, r->hp.secs);
		ibv_destroy_qp(qp2);
	}
	phase_ok("t2-qp");
	ibv_destroy_qp(qp);

	/* badbind: the server's first bad bind is on a QP connected to ours */
	qp = pair_up(r, &peer);
	hp_sync(r->sock, r->hp.secs);
	phase_ok("badbind");
	ibv_destroy_qp(qp);

	/* t2-zb: remote address 0 is the window's first byte */
	qp = pair_up(r, &peer);
	tell_window(r, 0, 0, 0, &w);
	if (w.addr != 0)
		hp_fail("t2-zb: the server told address 0x%llx", (unsigned long long)w.addr);
	for (size_t i = 0; i < 128; i++)
		r->buf[i] = pat_byte(i, 8);
	must("t2-zb WRITE", rdma(r, qp, IBV_WR_RDMA_WRITE, w.rkey, 256, 0, 128, 0, 0),
	     IBV_WC_SUCCESS);
	memset(r->buf + 16384, 0, 512);
	must("t2-zb READ", rdma(r, qp, IBV_WR_RDMA_READ, w.rkey, 0, 16384, 512, 0, 0),
	     IBV_WC_SUCCESS);
	for (size_t i = 0; i < 512; i++) {
		uint8_t want = i >= 256 && i < 384 ? pat_byte(i - 256, 8) : init_byte(WIN_OFF + i);

		if (r->buf[16384 + i] != want)
			hp_fail("t2-zb READ byte %zu is 0x%02x, expected 0x%02x", i,
				r->buf[16384 + i], want);
	}
	must("t2-zb WRITE across the end",
	     rdma(r, qp, IBV_WR_RDMA_WRITE, w.rkey, WIN_LEN - 8, 0, 16, 0, 0),
	     IBV_WC_REM_ACCESS_ERR);
	hp_sync(r->sock, r->hp.secs);
	phase_ok("t2-zb");
	ibv_destroy_qp(qp);

	/* dealloc */
	qp = pair_up(r, &peer);
	tell_window(r, 0, 0, 0, &w);
	for (size_t i = 0; i < 256; i++)
		r->buf[i] = pat_byte(i, 6);
	must("WRITE before dealloc", rdma(r, qp, IBV_WR_RDMA_WRITE, w.rkey, w.addr, 0, 256, 0, 0),
	     IBV_WC_SUCCESS);
	hp_sync(r->sock, r->hp.secs);
	hp_sync(r->sock, r->hp.secs);
	must("WRITE after ibv_dealloc_mw",
	     rdma(r, qp, IBV_WR_RDMA_WRITE, w.rkey, w.addr, 0, 256, 0, 0), IBV_WC_REM_ACCESS_ERR);
	hp_sync(r->sock, r->hp.secs);
	phase_ok("dealloc");
	ibv_destroy_qp(qp);
}

static void hold(struct res *r)
{
	struct ibv_mw *m1 = ibv_alloc_mw(r->pd, IBV_MW_TYPE_1);
	struct ibv_mw *m2 = ibv_alloc_mw(r->pd, IBV_MW_TYPE_2);
	struct ibv_qp *qp = make_qp(r);

	if (!m1 || !m2)
		hp_fail("ibv_alloc_mw: %s", strerror(errno));
	connect_qp(r, qp, qp->qp_num, r->gid.raw, 0x3000);
	bind_type1(r, qp, m1, IBV_ACCESS_REMOTE_WRITE);
	server_bind_t2(qp, m2, false, r->mr, (uintptr_t)r->buf, 4096);
	expect_wc(r, "type 2 bind", IBV_WC_SUCCESS, IBV_WC_BIND_MW);
	printf("held pid %d rkeys 0x%x 0x%x\n", (int)getpid(), m1->rkey, m2->rkey);
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	struct ibv_device_attr da;
	struct res r;
	int c, lsock = -1;
	bool keep = false;

	setvbuf(stdout, NULL, _IOLBF, 0);
	memset(&r, 0, sizeof(r));
	hp_opts_init(&r.hp, "18700", 60);
	while ((c = getopt(argc, argv, "p:d:g:T:K")) != -1)
		if (c == 'K')
			keep = true;
		else if (!hp_opt(&r.hp, c, optarg))
			hp_fail("usage: mw_check [-p PORT] [-d DEV] [-g GIDX] [-T SECS] [HOST]");
	if (optind < argc)
		r.host = argv[optind];
	r.end = hp_now_us() + (int64_t)r.hp.secs * 1000000;
	r.ctx = hp_open(r.hp.dev);
	if (ibv_query_device(r.ctx, &da))
		hp_fail("ibv_query_device");
	if (da.max_mw <= 0 || !(da.device_cap_flags & IBV_DEVICE_MEM_WINDOW) ||
	    !(da.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B))
		hp_fail("the device does not advertise memory windows (max_mw %d, flags 0x%x)",
			da.max_mw, da.device_cap_flags);
	r.sock = keep ? -1 : hp_rendezvous(r.host, r.hp.port, r.hp.secs, &lsock);
	r.gid_index = hp_local_gid(r.ctx, r.hp.gid_index, r.sock, &r.gid);
	r.pd = ibv_alloc_pd(r.ctx);
	r.pd2 = ibv_alloc_pd(r.ctx);
	r.cq = ibv_create_cq(r.ctx, 32, NULL, NULL, 0);
	r.buf = aligned_alloc(4096, REG_LEN);
	r.buf2 = aligned_alloc(4096, 16384);
	if (!r.pd || !r.pd2 || !r.cq || !r.buf || !r.buf2)
		hp_fail("set-up: %s", strerror(errno));
	memset(r.buf2, 0, 16384);
	r.mr = ibv_reg_mr(r.pd, r.buf, REG_LEN,
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			      IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND);
	r.mr_nobind = ibv_reg_mr(r.pd, r.buf2, 8192, IBV_ACCESS_LOCAL_WRITE);
	r.mr_pd2 = ibv_reg_mr(r.pd2, r.buf2 + 8192, 8192,
			      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	if (!r.mr || !r.mr_nobind || !r.mr_pd2)
		hp_fail("ibv_reg_mr: %s", strerror(errno));
	if (keep)
		hold(&r);
	if (r.host)
		run_client(&r);
	else
		run_server(&r);
	hp_sync(r.sock, r.hp.secs);
	if (ibv_dereg_mr(r.mr) || ibv_dereg_mr(r.mr_nobind) || ibv_dereg_mr(r.mr_pd2) ||
	    ibv_destroy_cq(r.cq) || ibv_dealloc_pd(r.pd) || ibv_dealloc_pd(r.pd2) ||
	    ibv_close_device(r.ctx))
		hp_fail("tear-down: %s", strerror(errno));
	free(r.buf);
	free(r.buf2);
	close(r.sock);
	if (lsock >= 0)
		close(lsock);
	printf("ok\n");
	return 0;
}
