/*
 * xrc_check: XRC end to end (IBA 9.2.x XRC, ibv_open_xrcd(3),
 * ibv_create_srq_ex(3), ibv_open_qp(3)), with every byte checked.
 *
 * Server (the target side): opens an XRC domain through FILE (O_CREAT),
 * makes XRC SRQ 1 on CQ 1 and a TGT QP; a child process opens the same
 * domain through the same file (without O_CREAT: it must already exist),
 * makes XRC SRQ 2 on CQ 2 of its own context and opens the TGT QP with
 * ibv_open_qp; a third SRQ lives in another domain (fd -1). The client
 * (the initiator) has one XRC INI QP connected to the TGT QP and sends N
 * messages alternately to SRQ 1 and SRQ 2 (ibv_post_send with
 * qp_type.xrc.remote_srqn and, for every other pair, the ibv_wr_* API
 * with ibv_wr_set_xrc_srqn); each side checks every byte, byte_len,
 * wr_id order and that wc.qp_num is the TGT QP. Then an RDMA WRITE
 * through the INI QP (the rkey is checked against SRQ 1's PD) whose
 * bytes the server checks, an RDMA READ of them back that the client
 * checks (again through a second region over them that grants only
 * IBV_ACCESS_REMOTE_READ, as perftest's ib_read_bw registers), FETCH_ADD and CMP_SWAP on a word after them (results and the
 * final value checked), then a SEND naming the SRQ of the other
 * domain: IBV_WC_REM_INV_REQ_ERR, the INI QP in ERR and the next WQE
 * flushed, the TGT QP in ERR. The server then checks the order rules: ibv_destroy_cq of an
 * SRQ's CQ and ibv_close_xrcd while SRQs or the TGT QP use it are EBUSY,
 * O_EXCL on the existing domain and a missing domain without O_CREAT
 * are EINVAL. Each side grows its XRC SRQ half-way through its messages
 * (ibv_modify_srq IBV_SRQ_MAX_WR 1000, granted as 1024) while the client
 * sends: the rest still arrive in order, checked.
 *
 *   xrc_check -f FILE [-p PORT] [-n N]            server
 *   xrc_check [-p PORT] [-n N] HOST               client
 *   xrc_check -H FILE                             hold: a domain, an SRQ and
 *                                                 a TGT QP, "held qpn N", sleep
 *   xrc_check -O FILE -q N                        open the domain and TGT QP N
 *                                                 (ibv_open_qp), "opened", sleep
 *   xrc_check -Q FILE                             "domain present" / "domain absent"
 */
#include "hostpair.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>

#define MAXMSG 8192
#define WRITE_LEN 65536

static int nmsg = 64;
static int secs = 30;

static uint8_t pat(uint32_t seq, uint32_t off) { return (uint8_t)(seq * 131 + off * 7 + 1); }

static uint32_t msg_len(uint32_t seq) { return 1 + (seq * 977) % MAXMSG; }

static struct ibv_xrcd *open_xrcd(struct ibv_context *ctx, int fd, int oflags)
{
	struct ibv_xrcd_init_attr a = {
	    .comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
	    .fd = fd,
	    .oflags = oflags,
	};

	return ibv_open_xrcd(ctx, &a);
}

static struct ibv_srq *xsrq(struct ibv_context *ctx, struct ibv_pd *pd, struct ibv_xrcd *x,
			    struct ibv_cq *cq, uint32_t *num)
{
	struct ibv_srq_init_attr_ex a;
	struct ibv_srq *srq;

	memset(&a, 0, sizeof(a));
	a.attr.max_wr = 256;
	a.attr.max_sge = 1;
	a.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD |
		      IBV_SRQ_INIT_ATTR_CQ;
	a.srq_type = IBV_SRQT_XRC;
	a.pd = pd;
	a.xrcd = x;
	a.cq = cq;
	srq = ibv_create_srq_ex(ctx, &a);
	if (!srq)
		hp_fail("ibv_create_srq_ex(XRC): %s", strerror(errno));
	if (ibv_get_srq_num(srq, num))
		hp_fail("ibv_get_srq_num");
	if (!*num || *num > 0xffffff)
		hp_fail("srq num %u", *num);
	return srq;
}

static struct ibv_qp *tgt_qp(struct ibv_context *ctx, struct ibv_xrcd *x)
{
	struct ibv_qp_init_attr_ex a;
	struct ibv_qp *qp;

	memset(&a, 0, sizeof(a));
	a.qp_type = IBV_QPT_XRC_RECV;
	a.comp_mask = IBV_QP_INIT_ATTR_XRCD;
	a.xrcd = x;
	qp = ibv_create_qp_ex(ctx, &a);
	if (!qp)
		hp_fail("ibv_create_qp_ex(XRC_RECV): %s", strerror(errno));
	return qp;
}

/* Receive n messages of sequence numbers first, first+2, ... on srq/cq
 * into buf; check each. */
static void recv_side(const char *who, struct ibv_pd *pd, struct ibv_srq *srq, struct ibv_cq *cq,
		      uint32_t tgt_qpn, int first, int n)
{
	uint8_t *buf = calloc((size_t)n, MAXMSG);
	struct ibv_mr *mr;
	struct ibv_wc wc;
	int64_t end;

	if (!buf)
		hp_fail("calloc");
	mr = ibv_reg_mr(pd, buf, (size_t)n * MAXMSG, IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		hp_fail("%s: ibv_reg_mr: %s", who, strerror(errno));
	for (int i = 0; i < n; i++) {
		struct ibv_sge s = {.addr = (uintptr_t)(buf + (size_t)i * MAXMSG),
				    .length = MAXMSG,
				    .lkey = mr->lkey};
		struct ibv_recv_wr w = {.wr_id = (uint64_t)i, .sg_list = &s, .num_sge = 1}, *bad;

		if (ibv_post_srq_recv(srq, &w, &bad))
			hp_fail("%s: ibv_post_srq_recv", who);
	}
	printf("%s ready\n", who);
	fflush(stdout);
	end = hp_now_us() + (int64_t)secs * 1000000;
	for (int i = 0; i < n; i++) {
		uint32_t seq = (uint32_t)(first + 2 * i), len = msg_len(seq);
		const uint8_t *p;

		if (!hp_poll_until(cq, &wc, end, 50))
			hp_fail("%s: message %d of %d did not arrive", who, i, n);
		if (wc.status != IBV_WC_SUCCESS)
			hp_fail("%s: status %s", who, hp_wc_status_name(wc.status));
		if (wc.qp_num != tgt_qpn)
			hp_fail("%s: wc.qp_num %u, the TGT QP is %u", who, wc.qp_num, tgt_qpn);
		if (wc.opcode != IBV_WC_RECV || wc.wr_id != (uint64_t)i || wc.byte_len != len)
			hp_fail("%s: message %d: opcode %d wr_id %llu byte_len %u (want %u)", who, i,
				wc.opcode, (unsigned long long)wc.wr_id, wc.byte_len, len);
		p = buf + (size_t)wc.wr_id * MAXMSG;
		for (uint32_t o = 0; o < len; o++)
			if (p[o] != pat(seq, o))
				hp_fail("%s: message seq %u offset %u: got 0x%02x want 0x%02x", who,
					seq, o, p[o], pat(seq, o));
		if (i == n / 2) { /* a resize while the client sends */
			struct ibv_srq_attr sa = {.max_wr = 1000};
			int err = ibv_modify_srq(srq, &sa, IBV_SRQ_MAX_WR);

			if (err || ibv_query_srq(srq, &sa) || sa.max_wr != 1024)
				hp_fail("%s: XRC SRQ resize to 1000: %s, max_wr %u", who, strerror(err),
					sa.max_wr);
			printf("%s resized its XRC SRQ to 1024 with messages to come\n", who);
		}
	}
	printf("%s received %d messages, every byte checked, qp_num %u\n", who, n, tgt_qpn);
	fflush(stdout);
	ibv_dereg_mr(mr);
	free(buf);
}

/* The child of the server: the same domain through the same file. */
static void child(const char *file, uint32_t tgt_qpn, int wfd, int rfd)
{
	struct ibv_context *ctx = hp_open(NULL);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 512, NULL, NULL, 0);
	int fd = open(file, O_RDONLY);
	struct ibv_qp_open_attr oa;
	struct ibv_xrcd *x;
	struct ibv_srq *srq;
	struct ibv_qp *oqp;
	uint32_t num;
	char c;

	if (!pd || !cq || fd < 0)
		hp_fail("child: set-up");
	x = open_xrcd(ctx, fd, 0); /* no O_CREAT: the parent's domain */
	if (!x)
		hp_fail("child: ibv_open_xrcd of the existing domain: %s", strerror(errno));
	srq = xsrq(ctx, pd, x, cq, &num);
	memset(&oa, 0, sizeof(oa));
	oa.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD | IBV_QP_OPEN_ATTR_TYPE;
	oa.qp_num = tgt_qpn;
	oa.xrcd = x;
	oa.qp_type = IBV_QPT_XRC_RECV;
	oqp = ibv_open_qp(ctx, &oa);
	if (!oqp || oqp->qp_num != tgt_qpn)
		hp_fail("child: ibv_open_qp: %s", strerror(errno));
	printf("child opened TGT QP %u\n", tgt_qpn);
	if (write(wfd, &num, sizeof(num)) != sizeof(num))
		hp_fail("child: pipe");
	{
		/* the parent brought the TGT QP to RTR; this handle, which
		 * set nothing of it, takes it to RTS */
		struct ibv_qp_attr a;
		struct ibv_qp_init_attr ia;
		uint32_t psn;

		if (read(rfd, &psn, sizeof(psn)) != sizeof(psn))
			hp_fail("child: pipe");
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTS;
		a.timeout = 14;
		a.sq_psn = psn;
		if (ibv_modify_qp(oqp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_SQ_PSN))
			hp_fail("child: the opened TGT QP to RTS: %s", strerror(errno));
		if (ibv_query_qp(oqp, &a, IBV_QP_STATE, &ia) || a.qp_state != IBV_QPS_RTS)
			hp_fail("child: the opened TGT QP is in state %d", a.qp_state);
		printf("child moved the opened TGT QP to RTS\n");
		fflush(stdout);
		if (write(wfd, &psn, sizeof(psn)) != sizeof(psn))
			hp_fail("child: pipe");
	}
	recv_side("child", pd, srq, cq, tgt_qpn, 1, nmsg / 2);
	if (ibv_destroy_qp(oqp))
		hp_fail("child: ibv_destroy_qp of the opened QP");
	if (ibv_close_xrcd(x) != EBUSY)
		hp_fail("child: ibv_close_xrcd with an SRQ: not EBUSY");
	if (ibv_destroy_srq(srq) || ibv_close_xrcd(x))
		hp_fail("child: destroy SRQ / close XRCD");
	if (read(rfd, &c, 1) != 1)
		hp_fail("child: pipe");
	if (ibv_destroy_cq(cq) || ibv_dealloc_pd(pd) || ibv_close_device(ctx))
		hp_fail("child: tear-down");
	close(fd);
	printf("child done\n");
	fflush(stdout);
	exit(0);
}

static void server(const char *file, const char *port)
{
	struct ibv_context *ctx = hp_open(NULL);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq1 = ibv_create_cq(ctx, 512, NULL, NULL, 0);
	struct ibv_cq *cq3 = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	struct ibv_xrcd *x, *x3;
	struct ibv_srq *srq1, *srq3;
	struct ibv_qp *tgt;
	struct ibv_mr *wmr, *romr;
	struct hp_info me, peer;
	struct hp_path path;
	uint32_t n1, n2, n3;
	int fd, lsock, sock, gidx, p2c[2], c2p[2], st;
	uint8_t *wbuf;
	union ibv_gid gid;
	pid_t pid;

	if (!pd || !cq1 || !cq3)
		hp_fail("server: set-up");
	fd = open(file, O_RDWR | O_CREAT, 0600);
	if (fd < 0)
		hp_fail("open %s: %s", file, strerror(errno));
	errno = 0;
	if (open_xrcd(ctx, fd, 0) || errno != EINVAL)
		hp_fail("ibv_open_xrcd of a missing domain without O_CREAT: not EINVAL (%s)",
			strerror(errno));
	x = open_xrcd(ctx, fd, O_CREAT);
	if (!x)
		hp_fail("ibv_open_xrcd O_CREAT: %s", strerror(errno));
	errno = 0;
	if (open_xrcd(ctx, fd, O_CREAT | O_EXCL) || errno != EINVAL)
		hp_fail("ibv_open_xrcd O_EXCL of an existing domain: not EINVAL");
	x3 = open_xrcd(ctx, -1, 0);
	if (!x3)
		hp_fail("ibv_open_xrcd fd -1: %s", strerror(errno));
	srq1 = xsrq(ctx, pd, x, cq1, &n1);
	srq3 = xsrq(ctx, pd, x3, cq3, &n3);
	tgt = tgt_qp(ctx, x);
	printf("server TGT QP %u, SRQ numbers %u (here) and %u (other domain)\n", tgt->qp_num, n1,
	       n3);

	if (pipe(p2c) || pipe(c2p))
		hp_fail("pipe");
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		hp_fail("fork");
	if (pid == 0) {
		close(p2c[1]);
		close(c2p[0]);
		child(file, tgt->qp_num, c2p[1], p2c[0]);
	}
	close(p2c[0]);
	close(c2p[1]);
	if (read(c2p[0], &n2, sizeof(n2)) != sizeof(n2))
		hp_fail("the child failed before its SRQ");
	printf("child SRQ number %u (same domain, another process)\n", n2);

	/* the WRITE's target, then the atomics' 8-byte word */
	wbuf = calloc(1, WRITE_LEN + 8);
	wmr = wbuf ? ibv_reg_mr(pd, wbuf, WRITE_LEN + 8,
				IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)
		   : NULL;
	/* the same bytes, remote read only: its rkey in rsvd[0..3] */
	romr = wmr ? ibv_reg_mr(pd, wbuf, WRITE_LEN + 8,
				IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ)
		   : NULL;
	if (!romr)
		hp_fail("ibv_reg_mr");
	sock = hp_rendezvous(NULL, port, secs, &lsock);
	gidx = hp_local_gid(ctx, -1, sock, &gid);
	hp_info_self(&me, tgt, &gid);
	me.rkey = wmr->rkey;
	memcpy(me.rsvd, &romr->rkey, 4);
	me.addr = (uintptr_t)wbuf;
	me.arg = n1;
	me.len = (uint64_t)n2 | (uint64_t)n3 << 32;
	hp_exchange(sock, &me, &peer, secs);
	hp_path_peer(&path, gidx, &me, &peer, IBV_MTU_1024);
	path.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	path.min_rnr_timer = 1;
	path.max_dest_rd_atomic = 1;
	{
		/* the TGT QP: INIT, RTR (responder attributes), RTS */
		struct ibv_qp_attr a;

		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_INIT;
		a.port_num = 1;
		a.qp_access_flags = path.access;
		if (ibv_modify_qp(tgt, &a,
				  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
			hp_fail("TGT to INIT");
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTR;
		a.path_mtu = path.mtu;
		a.dest_qp_num = path.dqpn;
		a.rq_psn = path.rq_psn;
		a.max_dest_rd_atomic = 1;
		a.min_rnr_timer = 1;
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = path.dgid;
		a.ah_attr.grh.sgid_index = (uint8_t)gidx;
		a.ah_attr.grh.hop_limit = 64;
		a.ah_attr.port_num = 1;
		if (ibv_modify_qp(tgt, &a,
				  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				      IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				      IBV_QP_MIN_RNR_TIMER))
			hp_fail("TGT to RTR: %s", strerror(errno));
		/* RTS by the child's handle (ibv_open_qp), which knows no
		 * attribute of the QP but those it sets */
		if (write(p2c[1], &path.sq_psn, 4) != 4 || read(c2p[0], &a.sq_psn, 4) != 4)
			hp_fail("the child did not move the TGT QP to RTS");
	}
	recv_side("server", pd, srq1, cq1, tgt->qp_num, 0, nmsg / 2);
	hp_sync(sock, secs); /* the client's WRITE completed */
	for (uint32_t o = 0; o < WRITE_LEN; o++)
		if (wbuf[o] != pat(0xabcd, o))
			hp_fail("RDMA WRITE offset %u: got 0x%02x want 0x%02x", o, wbuf[o],
				pat(0xabcd, o));
	printf("server RDMA WRITE of %d bytes through the XRC INI QP: every byte checked\n",
	       WRITE_LEN);
	{
		uint64_t v;

		memcpy(&v, wbuf + WRITE_LEN, 8);
		if (v != 9)
			hp_fail("after FETCH_ADD 5 and CMP_SWAP 5->9 the word is %llu",
				(unsigned long long)v);
		printf("server atomics through the XRC INI QP: the word is 9\n");
	}
	hp_sync(sock, secs); /* the client saw the wrong-SRQ outcome */
	{
		/* the responder's invalid request moved the TGT QP to ERROR */
		struct ibv_qp_attr qa;
		struct ibv_qp_init_attr qia;

		if (ibv_query_qp(tgt, &qa, IBV_QP_STATE, &qia) || qa.qp_state != IBV_QPS_ERR)
			hp_fail("after the invalid request the TGT QP is in state %d, not ERR",
				qa.qp_state);
		printf("server TGT QP in ERR after the invalid request\n");
	}

	/* the order rules of destruction */
	if (ibv_destroy_cq(cq1) != EBUSY)
		hp_fail("ibv_destroy_cq of an XRC SRQ's CQ: not EBUSY");
	if (ibv_close_xrcd(x) != EBUSY)
		hp_fail("ibv_close_xrcd with an SRQ and a TGT QP: not EBUSY");
	if (ibv_destroy_srq(srq1) || ibv_close_xrcd(x) != EBUSY)
		hp_fail("ibv_close_xrcd with a TGT QP: not EBUSY");
	if (ibv_destroy_qp(tgt) || ibv_close_xrcd(x) || ibv_destroy_cq(cq1))
		hp_fail("destroy TGT QP / close XRCD / destroy CQ");
	if (ibv_destroy_srq(srq3) || ibv_close_xrcd(x3))
		hp_fail("the other domain");
	printf("server order rules: EBUSY for CQ and XRCD in use, EINVAL for O_EXCL and no O_CREAT\n");
	if (write(p2c[1], "x", 1) != 1 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st))
		hp_fail("the child failed");
	if (ibv_dereg_mr(romr) || ibv_dereg_mr(wmr) || ibv_destroy_cq(cq3) || ibv_dealloc_pd(pd) ||
	    ibv_close_device(ctx))
		hp_fail("server: tear-down");
	free(wbuf);
	close(fd);
	close(sock);
	close(lsock);
	printf("server done\n");
}

static void client(const char *host, const char *port)
{
	struct ibv_context *ctx = hp_open(NULL);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 512, NULL, NULL, 0);
	struct ibv_qp_init_attr_ex ia;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	struct ibv_qp *qp;
	struct ibv_qp_ex *qx;
	struct ibv_mr *mr;
	struct hp_info me, peer;
	struct hp_path path;
	struct ibv_wc wc;
	uint32_t srqn[3];
	uint8_t *buf;
	int lsock, sock, gidx;
	union ibv_gid gid;
	int64_t end;

	if (!pd || !cq)
		hp_fail("client: set-up");
	memset(&ia, 0, sizeof(ia));
	ia.qp_type = IBV_QPT_XRC_SEND;
	ia.send_cq = cq;
	ia.cap.max_send_wr = 256;
	ia.cap.max_send_sge = 1;
	ia.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	ia.pd = pd;
	ia.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE;
	ia.sq_sig_all = 1;
	qp = ibv_create_qp_ex(ctx, &ia);
	if (!qp)
		hp_fail("ibv_create_qp_ex(XRC_SEND): %s", strerror(errno));
	qx = ibv_qp_to_qp_ex(qp);
	/* what is sent, where READ lands, the atomics' results */
	buf = calloc(1, 2 * WRITE_LEN + 8);
	mr = buf ? ibv_reg_mr(pd, buf, 2 * WRITE_LEN + 8, IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!mr || !qx)
		hp_fail("client: mr / qp_ex");
	sock = hp_rendezvous(host, port, secs, &lsock);
	gidx = hp_local_gid(ctx, -1, sock, &gid);
	hp_info_self(&me, qp, &gid);
	hp_exchange(sock, &me, &peer, secs);
	srqn[0] = peer.arg;
	srqn[1] = (uint32_t)peer.len;
	srqn[2] = (uint32_t)(peer.len >> 32);
	hp_path_peer(&path, gidx, &me, &peer, IBV_MTU_1024);
	path.timeout = 14;
	path.retry_cnt = 7;
	path.rnr_retry = 7;
	path.max_rd_atomic = 1;
	{
		/* the INI QP: no responder attributes (INIT->RTR) */
		struct ibv_qp_attr a;

		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_INIT;
		a.port_num = 1;
		if (ibv_modify_qp(qp, &a,
				  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
			hp_fail("INI to INIT");
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTR;
		a.path_mtu = path.mtu;
		a.dest_qp_num = path.dqpn;
		a.rq_psn = path.rq_psn;
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = path.dgid;
		a.ah_attr.grh.sgid_index = (uint8_t)gidx;
		a.ah_attr.grh.hop_limit = 64;
		a.ah_attr.port_num = 1;
		/* the responder's attributes in the mask are ignored on an
		 * INI QP, as the kernel's uverbs does (perftest -c XRC sets
		 * them) */
		a.max_dest_rd_atomic = 200;
		if (ibv_modify_qp(qp, &a,
				  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				      IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				      IBV_QP_MIN_RNR_TIMER))
			hp_fail("INI to RTR (responder attributes ignored): %s", strerror(errno));
		if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_MAX_DEST_RD_ATOMIC) != EINVAL)
			hp_fail("INI: RTR to RTR was accepted");
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTS;
		a.timeout = path.timeout;
		a.retry_cnt = path.retry_cnt;
		a.rnr_retry = path.rnr_retry;
		a.sq_psn = path.sq_psn;
		a.max_rd_atomic = 1;
		if (ibv_modify_qp(qp, &a,
				  IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				      IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
			hp_fail("INI to RTS");
	}
	/* messages seq 0, 2, 4 ... to SRQ 1, 1, 3, 5 ... to SRQ 2: RNR
	 * retries cover a receiver that posts late */
	end = hp_now_us() + (int64_t)secs * 1000000;
	for (int i = 0; i < nmsg; i++) {
		uint32_t len = msg_len((uint32_t)i), target = srqn[i & 1];

		for (uint32_t o = 0; o < len; o++)
			buf[o] = pat((uint32_t)i, o);
		if ((i / 2) & 1) {
			ibv_wr_start(qx);
			qx->wr_id = (uint64_t)i;
			qx->wr_flags = IBV_SEND_SIGNALED;
			ibv_wr_send(qx);
			ibv_wr_set_xrc_srqn(qx, target);
			ibv_wr_set_sge(qx, mr->lkey, (uintptr_t)buf, len);
			if (ibv_wr_complete(qx))
				hp_fail("ibv_wr_complete %d", i);
		} else {
			struct ibv_sge s = {.addr = (uintptr_t)buf, .length = len, .lkey = mr->lkey};
			struct ibv_send_wr w, *bad;

			memset(&w, 0, sizeof(w));
			w.wr_id = (uint64_t)i;
			w.sg_list = &s;
			w.num_sge = 1;
			w.opcode = IBV_WR_SEND;
			w.send_flags = IBV_SEND_SIGNALED;
			w.qp_type.xrc.remote_srqn = target;
			if (ibv_post_send(qp, &w, &bad))
				hp_fail("ibv_post_send %d", i);
		}
		if (!hp_poll_until(cq, &wc, end, 20))
			hp_fail("send %d: no completion", i);
		if (wc.status != IBV_WC_SUCCESS || wc.wr_id != (uint64_t)i || wc.opcode != IBV_WC_SEND)
			hp_fail("send %d: %s", i, hp_wc_status_name(wc.status));
	}
	printf("client sent %d messages to SRQ %u and %u through one INI QP\n", nmsg, srqn[0],
	       srqn[1]);

	/* RDMA WRITE through the INI QP (the XRCETH names SRQ 1: its PD
	 * decides the rkey) */
	for (uint32_t o = 0; o < WRITE_LEN; o++)
		buf[o] = pat(0xabcd, o);
	ibv_wr_start(qx);
	qx->wr_id = 1000;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(qx, peer.rkey, peer.addr);
	ibv_wr_set_xrc_srqn(qx, srqn[0]);
	ibv_wr_set_sge(qx, mr->lkey, (uintptr_t)buf, WRITE_LEN);
	if (ibv_wr_complete(qx))
		hp_fail("ibv_wr_complete WRITE");
	if (!hp_poll_until(cq, &wc, end, 20) || wc.status != IBV_WC_SUCCESS ||
	    wc.opcode != IBV_WC_RDMA_WRITE || wc.wr_id != 1000)
		hp_fail("RDMA WRITE: %s", hp_wc_status_name(wc.status));
	printf("client RDMA WRITE of %d bytes completed\n", WRITE_LEN);

	/* READ it back, then FETCH_ADD 5 and CMP_SWAP 5 -> 9 on the word
	 * after it, all through SRQ 1's PD */
	{
		struct ibv_sge s = {.addr = (uintptr_t)(buf + WRITE_LEN),
				    .length = WRITE_LEN,
				    .lkey = mr->lkey};
		struct ibv_send_wr w, *bad;
		uint64_t got;

		memset(&w, 0, sizeof(w));
		w.wr_id = 1001;
		w.sg_list = &s;
		w.num_sge = 1;
		w.opcode = IBV_WR_RDMA_READ;
		w.send_flags = IBV_SEND_SIGNALED;
		w.wr.rdma.remote_addr = peer.addr;
		w.wr.rdma.rkey = peer.rkey;
		w.qp_type.xrc.remote_srqn = srqn[0];
		if (ibv_post_send(qp, &w, &bad))
			hp_fail("ibv_post_send READ");
		if (!hp_poll_until(cq, &wc, end, 20) || wc.status != IBV_WC_SUCCESS ||
		    wc.opcode != IBV_WC_RDMA_READ || wc.wr_id != 1001)
			hp_fail("RDMA READ: %s", hp_wc_status_name(wc.status));
		for (uint32_t o = 0; o < WRITE_LEN; o++)
			if (buf[WRITE_LEN + o] != pat(0xabcd, o))
				hp_fail("RDMA READ offset %u: got 0x%02x want 0x%02x", o,
					buf[WRITE_LEN + o], pat(0xabcd, o));
		/* again through the region with remote read alone (the
		 * daemon hands its memory out read-only) */
		memset(buf + WRITE_LEN, 0, WRITE_LEN);
		memcpy(&w.wr.rdma.rkey, peer.rsvd, 4);
		w.wr_id = 1011;
		if (ibv_post_send(qp, &w, &bad))
			hp_fail("ibv_post_send READ");
		if (!hp_poll_until(cq, &wc, end, 20) || wc.status != IBV_WC_SUCCESS ||
		    wc.opcode != IBV_WC_RDMA_READ || wc.wr_id != 1011)
			hp_fail("RDMA READ of a remote-read-only region: %s",
				hp_wc_status_name(wc.status));
		for (uint32_t o = 0; o < WRITE_LEN; o++)
			if (buf[WRITE_LEN + o] != pat(0xabcd, o))
				hp_fail("RDMA READ (read-only region) offset %u: got 0x%02x", o,
					buf[WRITE_LEN + o]);
		for (int k = 0; k < 2; k++) {
			s.addr = (uintptr_t)(buf + 2 * WRITE_LEN);
			s.length = 8;
			w.wr_id = 1002 + (uint64_t)k;
			w.opcode = k ? IBV_WR_ATOMIC_CMP_AND_SWP : IBV_WR_ATOMIC_FETCH_AND_ADD;
			w.wr.atomic.remote_addr = peer.addr + WRITE_LEN;
			w.wr.atomic.rkey = peer.rkey;
			w.wr.atomic.compare_add = 5;
			w.wr.atomic.swap = 9;
			w.qp_type.xrc.remote_srqn = srqn[0];
			if (ibv_post_send(qp, &w, &bad))
				hp_fail("ibv_post_send atomic");
			if (!hp_poll_until(cq, &wc, end, 20) || wc.status != IBV_WC_SUCCESS ||
			    wc.wr_id != 1002 + (uint64_t)k)
				hp_fail("atomic %d: %s", k, hp_wc_status_name(wc.status));
			memcpy(&got, buf + 2 * WRITE_LEN, 8);
			if (got != (k ? 5u : 0u))
				hp_fail("atomic %d returned %llu", k, (unsigned long long)got);
		}
	}
	printf("client RDMA READ of %d bytes checked, FETCH_ADD and CMP_SWAP returned 0 and 5\n",
	       WRITE_LEN);
	hp_sync(sock, secs);

	/* a SEND naming the SRQ of another domain: invalid request */
	{
		struct ibv_sge s = {.addr = (uintptr_t)buf, .length = 16, .lkey = mr->lkey};
		struct ibv_send_wr w, *bad;

		memset(&w, 0, sizeof(w));
		w.sg_list = &s;
		w.num_sge = 1;
		w.opcode = IBV_WR_SEND;
		w.send_flags = IBV_SEND_SIGNALED;
		w.wr_id = 2000;
		w.qp_type.xrc.remote_srqn = srqn[2];
		if (ibv_post_send(qp, &w, &bad))
			hp_fail("ibv_post_send wrong SRQ");
		if (!hp_poll_until(cq, &wc, end, 20))
			hp_fail("wrong SRQ: no completion");
		if (wc.status != IBV_WC_REM_INV_REQ_ERR || wc.wr_id != 2000)
			hp_fail("wrong SRQ: %s, want IBV_WC_REM_INV_REQ_ERR",
				hp_wc_status_name(wc.status));
		if (ibv_query_qp(qp, &qa, IBV_QP_STATE, &qia) || qa.qp_state != IBV_QPS_ERR)
			hp_fail("wrong SRQ: the INI QP is in state %d, not ERR", qa.qp_state);
		w.wr_id = 2001;
		w.qp_type.xrc.remote_srqn = srqn[0];
		if (ibv_post_send(qp, &w, &bad))
			hp_fail("ibv_post_send after the error");
		if (!hp_poll_until(cq, &wc, end, 20) || wc.status != IBV_WC_WR_FLUSH_ERR ||
		    wc.wr_id != 2001)
			hp_fail("after the error: %s, want IBV_WC_WR_FLUSH_ERR",
				hp_wc_status_name(wc.status));
	}
	printf("client wrong SRQ number: IBV_WC_REM_INV_REQ_ERR, QP in ERR, next WQE flushed\n");
	hp_sync(sock, secs);
	if (ibv_destroy_qp(qp) || ibv_dereg_mr(mr) || ibv_destroy_cq(cq) || ibv_dealloc_pd(pd) ||
	    ibv_close_device(ctx))
		hp_fail("client: tear-down");
	free(buf);
	close(sock);
	printf("client done\n");
}

/* A domain, an SRQ and a TGT QP, held until killed. */
static void hold(const char *file)
{
	struct ibv_context *ctx = hp_open(NULL);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	int fd = open(file, O_RDWR | O_CREAT, 0600);
	struct ibv_xrcd *x;
	uint32_t num;

	if (!pd || !cq || fd < 0)
		hp_fail("hold: set-up");
	x = open_xrcd(ctx, fd, O_CREAT);
	if (!x)
		hp_fail("hold: ibv_open_xrcd: %s", strerror(errno));
	xsrq(ctx, pd, x, cq, &num);
	printf("held qpn %u\n", tgt_qp(ctx, x)->qp_num);
	fflush(stdout);
	for (int i = 0; i < secs * 10; i++)
		hp_sleep_ms(100);
}

/* Another process's handle on TGT QP qpn of the domain of file, held. */
static void open_hold(const char *file, uint32_t qpn)
{
	struct ibv_context *ctx = hp_open(NULL);
	int fd = open(file, O_RDONLY);
	struct ibv_qp_open_attr oa;
	struct ibv_xrcd *x;

	if (fd < 0)
		hp_fail("open %s", file);
	x = open_xrcd(ctx, fd, 0);
	if (!x)
		hp_fail("ibv_open_xrcd: %s", strerror(errno));
	memset(&oa, 0, sizeof(oa));
	oa.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD | IBV_QP_OPEN_ATTR_TYPE;
	oa.qp_num = qpn;
	oa.xrcd = x;
	oa.qp_type = IBV_QPT_XRC_RECV;
	if (!ibv_open_qp(ctx, &oa))
		hp_fail("ibv_open_qp %u: %s", qpn, strerror(errno));
	printf("opened\n");
	fflush(stdout);
	for (int i = 0; i < secs * 10; i++)
		hp_sleep_ms(100);
}

static void query(const char *file)
{
	struct ibv_context *ctx = hp_open(NULL);
	int fd = open(file, O_RDONLY);
	struct ibv_xrcd *x;

	if (fd < 0)
		hp_fail("open %s", file);
	x = open_xrcd(ctx, fd, 0);
	if (x) {
		printf("domain present\n");
		ibv_close_xrcd(x);
	} else if (errno == EINVAL) {
		printf("domain absent\n");
	} else {
		hp_fail("ibv_open_xrcd: %s", strerror(errno));
	}
	ibv_close_device(ctx);
	close(fd);
}

int main(int argc, char **argv)
{
	const char *port = "18515", *file = NULL, *holdf = NULL, *qf = NULL, *of = NULL;
	uint32_t oqpn = 0;
	int c;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((c = getopt(argc, argv, "p:n:f:H:Q:O:q:T:")) != -1) {
		switch (c) {
		case 'p':
			port = optarg;
			break;
		case 'n':
			nmsg = atoi(optarg) & ~1;
			break;
		case 'f':
			file = optarg;
			break;
		case 'H':
			holdf = optarg;
			break;
		case 'Q':
			qf = optarg;
			break;
		case 'O':
			of = optarg;
			break;
		case 'q':
			oqpn = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'T':
			secs = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: see the comment atop xrc_check.c\n");
			return 2;
		}
	}
	if (nmsg < 2 || nmsg > 256)
		hp_fail("-n 2..256");
	if (holdf)
		hold(holdf);
	else if (of)
		open_hold(of, oqpn);
	else if (qf)
		query(qf);
	else if (file)
		server(file, port);
	else if (optind < argc)
		client(argv[optind], port);
	else
		hp_fail("a role: -f FILE, HOST, -H FILE or -Q FILE");
	return 0;
}
