/*
 * umad_vendor: vendor-class MADs (class 0x31, OUI 00:14:05) between two
 * programs on libibumad, over RoCEv2 with a GRH, for tests/hosts/umad.sh.
 *
 *   umad_vendor server [-n REQUESTS] [-T SECS]   (-n 0: until SECS pass)
 *       answers Gets (GetResp: the request's data with every byte
 *       ^ 0x5a; attr_mod L > 0: an RMPP response of L data bytes, byte i
 *       = pattern(tid, i)) and Sets (an RMPP request whose data must be
 *       pattern(tid, i): GetResp with the bytes checked in attr_mod);
 *       prints "server answered N requests" after REQUESTS of them.
 *   umad_vendor client -g GID [-i SGID_INDEX] [-n N] [-r LEN] [-R RETRIES]
 *       N Gets, each response matched by TID and its data checked; one
 *       RMPP response of LEN bytes (read first into a 256-byte buffer:
 *       -ENOSPC with its length, as OpenSM reads) and one RMPP Set of LEN
 *       bytes, checked;
 *       a Send of a class nobody takes, which must time out (status
 *       ETIMEDOUT in its header); a Get of a class nobody takes, which
 *       must come back "unsupported" (0x000c); SMP agents refused
 *       (RoCE: no QP0). Prints "client ok: ..." when all held.
 *   umad_vendor redirect [-T SECS]
 *       QP redirection (IBA 13.5.3.3): answers every Get of class 0x31
 *       on QP1 with status "redirect" and a ClassPortInfo naming a UD QP
 *       of its own (verbs) and its Q_Key; that QP answers the Gets sent
 *       to it (data ^ 0x5a) straight to the requester's QP1. Prints
 *       "redirect server answered N Gets on QP 0x..".
 *   umad_vendor client -g GID -D ...   (-D: follow redirects: the Gets go
 *       to the QP the ClassPortInfo names; RMPP and the rest skipped)
 *   umad_vendor hold -g GID
 *       registers agents, sends a request that waits 60 s, prints
 *       "holding" and sleeps (to be killed).
 * Exit status 0 only when everything checked held.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <infiniband/umad.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CLASS 0x31
#define CLASS_NOBODY 0x32
#define HDR 40 /* MAD, RMPP, reserved byte, OUI: where vendor data starts */
#define QKEY 0x80010000
#define MAXMSG (256 * 1024)

static const uint8_t oui[3] = {0x00, 0x14, 0x05};
static int retries = 1; /* of every request the client sends (-R) */
static int follow; /* -D: the client expects and follows a redirect */
/* a GSI class redirected to a UD QP keeps the GSI Q_Key (IBA 13.5.3.3): the
 * QP holds it, so that its answers to QP1 carry it (IBA 10.2.5) */
#define REDIRECT_QKEY QKEY
#define ST_REDIRECT 0x0002

static uint8_t pattern(uint64_t tid, uint32_t i) { return (uint8_t)(tid * 131 + i * 7 + (i >> 8)); }

static void die(const char *what, int v)
{
	fprintf(stderr, "umad_vendor: %s (%d: %s)\n", what, v, strerror(v < 0 ? -v : v));
	exit(1);
}

static void *alloc_umad(size_t len)
{
	void *u = calloc(1, umad_size() + len);

	if (!u)
		die("calloc", -ENOMEM);
	return u;
}

/* MAD header: base version 1, class, version 1, method, TID, attr */
static void mad_hdr(uint8_t *m, uint8_t cls, uint8_t method, uint64_t tid, uint32_t attr_mod)
{
	uint64_t t = htobe64(tid);
	uint32_t am = htobe32(attr_mod);
	uint16_t attr = htobe16(0xff01);

	m[0] = 1;
	m[1] = cls;
	m[2] = 1;
	m[3] = method;
	memcpy(m + 8, &t, 8);
	memcpy(m + 16, &attr, 2);
	memcpy(m + 20, &am, 4);
	memcpy(m + 37, oui, 3);
}

static uint64_t mad_tid(const uint8_t *m)
{
	uint64_t t;

	memcpy(&t, m + 8, 8);
	return be64toh(t);
}

static uint32_t mad_attr_mod(const uint8_t *m)
{
	uint32_t v;

	memcpy(&v, m + 20, 4);
	return be32toh(v);
}

static int open_port(void)
{
	int fd;

	if (umad_init() < 0)
		die("umad_init", -EIO);
	fd = umad_open_port(NULL, 0);
	if (fd < 0)
		die("umad_open_port", fd);
	return fd;
}

static void set_dest(void *u, const char *gid, int sgid_index)
{
	ib_mad_addr_t a;

	memset(&a, 0, sizeof(a));
	if (inet_pton(AF_INET6, gid, a.gid) != 1)
		die("bad GID", -EINVAL);
	a.hop_limit = 64;
	umad_set_addr(u, 0, 1, 0, QKEY);
	umad_set_grh(u, &a);
	umad_get_mad_addr(u)->gid_index = (uint8_t)sgid_index;
}

/* ---- server ------------------------------------------------------------------------ */

static int server(int n, int secs)
{
	long mask[16 / sizeof(long)] = {0};
	uint8_t *m;
	void *in = alloc_umad(MAXMSG), *out = alloc_umad(MAXMSG);
	int fd = open_port(), agent, answered = 0;
	time_t end = time(NULL) + secs;

	mask[0] = 1L << 0x01 | 1L << 0x02; /* Get, Set */
	agent = umad_register_oui(fd, CLASS, 1, (uint8_t *)oui, mask);
	if (agent < 0)
		die("umad_register_oui", agent);
	printf("server listening\n");
	fflush(stdout);
	while ((!n || answered < n) && time(NULL) < end) {
		int len = MAXMSG, r = umad_recv(fd, in, &len, 1000);
		uint8_t *q = umad_get_mad(in);
		uint64_t tid;
		uint32_t am, rlen = 256;

		if (r == -ETIMEDOUT)
			continue;
		if (r < 0)
			die("umad_recv", r);
		if (r != agent || len < 256 || q[1] != CLASS)
			die("server: a MAD for another agent or class", r);
		tid = mad_tid(q);
		am = mad_attr_mod(q);
		memset(out, 0, umad_size() + MAXMSG);
		m = umad_get_mad(out);
		mad_hdr(m, CLASS, 0x81, tid, am);
		if (q[3] == 0x02) {
			/* an RMPP Set: check its data */
			uint32_t dl = (uint32_t)len - HDR, bad = 0;

			for (uint32_t i = 0; i < dl && i < am; i++)
				bad += q[HDR + i] != pattern(tid, i);
			if (dl < am || bad)
				fprintf(stderr, "server: RMPP Set of %u bytes: %u bad, %u arrived\n", am,
					bad, dl);
			m[HDR] = !bad && dl >= am;
		} else if (am) {
			rlen = HDR + am;
			for (uint32_t i = 0; i < am; i++)
				m[HDR + i] = pattern(tid, i);
			m[24] = 1;    /* RMPP version */
			m[25] = 1;    /* DATA */
			m[26] = 0x01; /* active */
		} else {
			for (int i = HDR; i < 256; i++)
				m[i] = q[i] ^ 0x5a;
		}
		*umad_get_mad_addr(out) = *umad_get_mad_addr(in);
		r = umad_send(fd, agent, out, (int)rlen, 0, 0);
		if (r < 0)
			die("umad_send (response)", -errno);
		answered++;
	}
	printf("server answered %d requests\n", answered);
	umad_close_port(fd);
	return !n || answered == n ? 0 : 1;
}

/* ---- redirect server ----------------------------------------------------------------- */

struct ud {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t buf[2][40 + 256]; /* [0] receive (GRH + MAD), [1] send */
};

static void ud_open(struct ud *u)
{
	struct ibv_device **l = ibv_get_device_list(NULL);
	struct ibv_qp_init_attr ia = {.qp_type = IBV_QPT_UD,
				      .cap = {.max_send_wr = 4, .max_recv_wr = 4,
					      .max_send_sge = 1, .max_recv_sge = 1}};
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = REDIRECT_QKEY};

	if (!l || !l[0] || !(u->ctx = ibv_open_device(l[0])))
		die("ibv_open_device", -ENODEV);
	ibv_free_device_list(l);
	u->pd = ibv_alloc_pd(u->ctx);
	u->cq = u->pd ? ibv_create_cq(u->ctx, 8, NULL, NULL, 0) : NULL;
	ia.send_cq = ia.recv_cq = u->cq;
	u->qp = u->cq ? ibv_create_qp(u->pd, &ia) : NULL;
	u->mr = u->qp ? ibv_reg_mr(u->pd, u->buf, sizeof(u->buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (!u->mr || ibv_modify_qp(u->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					       IBV_QP_QKEY))
		die("UD QP", -errno);
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(u->qp, &a, IBV_QP_STATE))
		die("UD QP to RTR", -errno);
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 1;
	if (ibv_modify_qp(u->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		die("UD QP to RTS", -errno);
}

static void ud_post_recv(struct ud *u)
{
	struct ibv_sge sge = {(uintptr_t)u->buf[0], sizeof(u->buf[0]), u->mr->lkey};
	struct ibv_recv_wr wr = {.sg_list = &sge, .num_sge = 1}, *bad;

	if (ibv_post_recv(u->qp, &wr, &bad))
		die("ibv_post_recv", -errno);
}

/* A Get that came to the UD QP: its GetResp, straight to the requester's
 * QP (from the GRH and the completion), with the GSI Q_Key. */
static void ud_answer(struct ud *u, const struct ibv_wc *wc, int sgid_index)
{
	struct ibv_sge sge = {(uintptr_t)u->buf[1], 256, u->mr->lkey};
	struct ibv_send_wr wr = {.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED}, *bad;
	const uint8_t *q = u->buf[0] + 40;
	struct ibv_wc swc;
	struct ibv_ah *ah;
	uint8_t *m = u->buf[1];

	/* the GRH area holds an IPv4 header for RoCEv2 over IPv4: the
	 * library reads it (ibv_create_ah_from_wc) */
	(void)sgid_index;
	ah = ibv_create_ah_from_wc(u->pd, (struct ibv_wc *)wc, (struct ibv_grh *)u->buf[0], 1);
	if (!ah)
		die("ibv_create_ah_from_wc", -errno);
	memcpy(m, q, 256);
	m[3] = 0x81;
	for (int i = HDR; i < 256; i++)
		m[i] = q[i] ^ 0x5a;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = wc->src_qp;
	wr.wr.ud.remote_qkey = QKEY;
	if (ibv_post_send(u->qp, &wr, &bad))
		die("ibv_post_send", -errno);
	while (ibv_poll_cq(u->cq, 1, &swc) == 0)
		;
	if (swc.status != IBV_WC_SUCCESS)
		die("UD send", (int)swc.status);
	ibv_destroy_ah(ah);
}

static int redirect_server(int secs)
{
	long mask[16 / sizeof(long)] = {1L << 0x01};
	void *in = alloc_umad(MAXMSG);
	struct ud u;
	int fd = open_port(), agent, answered = 0, sgid_index = 0;
	time_t end = time(NULL) + secs;
	union ibv_gid g;

	memset(&u, 0, sizeof(u));
	agent = umad_register_oui(fd, CLASS, 0, (uint8_t *)oui, mask);
	if (agent < 0)
		die("umad_register_oui", agent);
	ud_open(&u);
	ud_post_recv(&u);
	printf("server listening\n");
	fflush(stdout);
	while (time(NULL) < end) {
		int len = MAXMSG, r = umad_recv(fd, in, &len, 10);
		struct ibv_wc wc;

		if (r >= 0) {
			/* redirect: GetResp, status redirect, ClassPortInfo */
			uint8_t *m = umad_get_mad(in);
			uint32_t v;

			sgid_index = umad_get_mad_addr(in)->gid_index;
			if (ibv_query_gid(u.ctx, 1, sgid_index, &g))
				die("ibv_query_gid", -errno);
			m[3] = 0x81;
			m[4] = 0;
			m[5] = ST_REDIRECT;
			memset(m + HDR, 0, 256 - HDR);
			m[HDR] = 1;	/* BaseVersion */
			m[HDR + 1] = 1; /* ClassVersion */
			memcpy(m + HDR + 8, g.raw, 16);
			v = htobe32(0xffff);
			memcpy(m + HDR + 28, &v, 4); /* RedirectLID 0, RedirectP_Key */
			v = htobe32(u.qp->qp_num);
			memcpy(m + HDR + 32, &v, 4);
			v = htobe32(REDIRECT_QKEY);
			memcpy(m + HDR + 36, &v, 4);
			if (umad_send(fd, agent, in, 256, 0, 0) < 0)
				die("umad_send (redirect)", -errno);
		} else if (r != -ETIMEDOUT) {
			die("umad_recv", r);
		}
		if (ibv_poll_cq(u.cq, 1, &wc) == 1) {
			if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV ||
			    wc.byte_len != 40 + 256 || !(wc.wc_flags & IBV_WC_GRH))
				die("UD receive", (int)wc.status);
			ud_answer(&u, &wc, sgid_index);
			answered++;
			ud_post_recv(&u);
		}
	}
	printf("redirect server answered %d Gets on QP 0x%x\n", answered, u.qp->qp_num);
	return 0;
}

/* ---- client ------------------------------------------------------------------------ */

/* A request of len bytes; waits for the message of agent whose TID is
 * tid: its length in *rlen, 0, or the status it came back with. */
static int first_len = MAXMSG; /* the buffer transact's first read offers */

static int transact(int fd, int agent, void *req, int len, void *resp, int *rlen, uint64_t tid,
		    int timeout)
{
	int r = umad_send(fd, agent, req, len, timeout, retries);

	if (r < 0)
		die("umad_send", -errno);
	for (;;) {
		int l = first_len;

		r = umad_recv(fd, resp, &l, 30000);
		if (r == -ENOSPC && first_len < MAXMSG) {
			/* as OpenSM reads: one MAD's room first, then what
			 * the length says; the message waited */
			if (l <= first_len || l > MAXMSG)
				die("client: -ENOSPC with length", l);
			printf("client: a %d-byte buffer: -ENOSPC, length %d\n", first_len, l);
			first_len = MAXMSG;
			r = umad_recv(fd, resp, &l, 0);
		}
		if (r < 0)
			die("umad_recv", r);
		if (r != agent)
			die("client: a MAD for another agent", r);
		/* the TID's lower half is ours; the upper half the daemon's */
		if ((uint32_t)mad_tid(umad_get_mad(resp)) != (uint32_t)tid) {
			fprintf(stderr, "client: a MAD of another transaction %llx\n",
				(unsigned long long)mad_tid(umad_get_mad(resp)));
			exit(1);
		}
		*rlen = l;
		return umad_status(resp);
	}
}

static int client(const char *gid, int sgid_index, int n, uint32_t rmpp_len)
{
	void *req = alloc_umad(MAXMSG), *resp = alloc_umad(MAXMSG);
	struct umad_reg_attr ra;
	uint32_t id;
	uint8_t *m = umad_get_mad(req), *p, rgid[16];
	int fd = open_port(), agent, nobody, rlen, st, r;
	uint64_t tid = (uint64_t)getpid() << 8;
	uint32_t rqp = 0, rqkey = 0;

	agent = umad_register_oui(fd, CLASS, 1, (uint8_t *)oui, NULL);
	if (agent < 0)
		die("umad_register_oui", agent);
	nobody = umad_register_oui(fd, CLASS_NOBODY, 0, (uint8_t *)oui, NULL);
	if (nobody < 0)
		die("umad_register_oui (second class)", nobody);
	/* QP0 on a RoCE port: refused, as rdma-core on the kernel refuses it */
	r = umad_register(fd, 0x81, 1, 0, NULL);
	if (r != -EPERM)
		die("umad_register of SubnDR was not refused with -EPERM", r);
	memset(&ra, 0, sizeof(ra));
	ra.mgmt_class = 0x01;
	ra.mgmt_class_version = 1;
	r = umad_register2(fd, &ra, &id);
	if (r != EPROTONOSUPPORT && r != EACCES)
		die("umad_register2 of SubnLID was not refused", r);
	printf("client: SMP agents refused (%s)\n", strerror(r));

	for (int k = 0; k < n; k++) {
		memset(req, 0, umad_size() + MAXMSG);
		set_dest(req, gid, sgid_index);
		if (rqp) {
			/* the redirected class goes to that QP with its Q_Key */
			umad_set_addr(req, 0, (int)rqp, 0, (int)rqkey);
			umad_get_mad_addr(req)->grh_present = 1;
			memcpy(umad_get_mad_addr(req)->gid, rgid, 16);
		}
		mad_hdr(m, CLASS, 0x01, ++tid, 0);
		for (int i = HDR; i < 256; i++)
			m[i] = (uint8_t)(i + k);
		st = transact(fd, agent, req, 256, resp, &rlen, tid, 1000);
		p = umad_get_mad(resp);
		if (follow && !rqp) {
			/* IBA 13.4.8.1: ClassPortInfo's RedirectGID, QP, Q_Key */
			uint32_t v;

			if (st || p[3] != 0x81 || (p[5] & ST_REDIRECT) != ST_REDIRECT)
				die("client: no redirect", st ? st : p[5]);
			memcpy(rgid, p + HDR + 8, 16);
			memcpy(&v, p + HDR + 32, 4);
			rqp = be32toh(v) & 0xffffff;
			memcpy(&v, p + HDR + 36, 4);
			rqkey = be32toh(v);
			printf("client: redirected to QP 0x%x, Q_Key 0x%x\n", rqp, rqkey);
			k--;
			continue;
		}
		if (st || rlen != 256 || p[3] != 0x81)
			die("client: Get answered wrongly", st ? st : rlen);
		for (int i = HDR; i < 256; i++)
			if (p[i] != (uint8_t)((i + k) ^ 0x5a))
				die("client: response data differs at byte", i);
	}
	printf("client: %d Gets answered, data checked\n", n);
	if (follow) {
		printf("client ok: %d Gets answered by the redirected QP 0x%x\n", n, rqp);
		umad_close_port(fd);
		return 0;
	}

	/* an RMPP response of several segments */
	memset(req, 0, umad_size() + MAXMSG);
	set_dest(req, gid, sgid_index);
	mad_hdr(m, CLASS, 0x01, ++tid, rmpp_len);
	first_len = HDR + rmpp_len > 256 ? 256 : MAXMSG;
	st = transact(fd, agent, req, 256, resp, &rlen, tid, 2000);
	p = umad_get_mad(resp);
	if (first_len != MAXMSG)
		die("client: a long RMPP message fitted 256 bytes", rlen);
	if (st || (uint32_t)rlen != HDR + rmpp_len)
		die("client: RMPP response length", st ? st : rlen);
	for (uint32_t i = 0; i < rmpp_len; i++)
		if (p[HDR + i] != pattern(tid, i))
			die("client: RMPP response data differs at byte", (int)i);
	printf("client: RMPP response of %u bytes (%u segments) checked\n", rmpp_len,
	       (rmpp_len + 215) / 216);

	/* an RMPP request of several segments */
	memset(req, 0, umad_size() + MAXMSG);
	set_dest(req, gid, sgid_index);
	mad_hdr(m, CLASS, 0x02, ++tid, rmpp_len);
	m[24] = 1;
	m[25] = 1;
	m[26] = 0x01;
	for (uint32_t i = 0; i < rmpp_len; i++)
		m[HDR + i] = pattern(tid, i);
	st = transact(fd, agent, req, (int)(HDR + rmpp_len), resp, &rlen, tid, 2000);
	p = umad_get_mad(resp);
	if (st || p[HDR] != 1)
		die("client: RMPP request not received whole", st);
	printf("client: RMPP request of %u bytes arrived whole\n", rmpp_len);

	/* a request nobody answers: its status says it timed out */
	memset(req, 0, umad_size() + MAXMSG);
	set_dest(req, gid, sgid_index);
	mad_hdr(m, CLASS_NOBODY, 0x03, ++tid, 0);
	st = transact(fd, nobody, req, 256, resp, &rlen, tid, 200);
	if (st != ETIMEDOUT)
		die("client: an unanswered request's status", st);
	printf("client: unanswered request timed out (status ETIMEDOUT)\n");

	/* a Get nobody takes: GetResp "unsupported" (IBA 13.4.7) */
	mad_hdr(m, CLASS_NOBODY, 0x01, ++tid, 0);
	st = transact(fd, nobody, req, 256, resp, &rlen, tid, 1000);
	p = umad_get_mad(resp);
	if (st || p[3] != 0x81 || p[5] != 0x0c)
		die("client: a Get of a class nobody serves", st ? st : p[5]);
	printf("client ok: %d Gets, RMPP %u bytes both ways, time-out, unsupported\n", n, rmpp_len);
	if (umad_unregister(fd, agent) || umad_unregister(fd, agent) != -1 || errno != EINVAL)
		die("umad_unregister", -errno);
	umad_close_port(fd);
	return 0;
}

static int hold(const char *gid, int sgid_index)
{
	void *req = alloc_umad(256);
	uint8_t *m = umad_get_mad(req);
	int fd = open_port(), agent;

	agent = umad_register_oui(fd, CLASS, 1, (uint8_t *)oui, NULL);
	if (agent < 0 || umad_register_oui(fd, CLASS_NOBODY, 0, (uint8_t *)oui, NULL) < 0)
		die("umad_register_oui", agent);
	set_dest(req, gid, sgid_index);
	mad_hdr(m, CLASS_NOBODY, 0x03, 77, 0);
	if (umad_send(fd, agent, req, 256, 60000, 0) < 0)
		die("umad_send", -errno);
	printf("holding pid %d\n", (int)getpid());
	fflush(stdout);
	sleep(120);
	return 0;
}

int main(int argc, char **argv)
{
	const char *gid = NULL, *mode = argc > 1 ? argv[1] : "";
	int n = 10, secs = 30, sgid = 0, c;
	uint32_t rmpp_len = 3000;

	optind = 2;
	while ((c = getopt(argc, argv, "Dg:i:n:r:R:T:")) != -1) {
		switch (c) {
		case 'g': gid = optarg; break;
		case 'i': sgid = atoi(optarg); break;
		case 'n': n = atoi(optarg); break;
		case 'r': rmpp_len = (uint32_t)atoi(optarg); break;
		case 'R': retries = atoi(optarg); break;
		case 'D': follow = 1; break;
		case 'T': secs = atoi(optarg); break;
		default: return 2;
		}
	}
	if (!strcmp(mode, "server"))
		return server(n, secs);
	if (!strcmp(mode, "client") && gid)
		return client(gid, sgid, n, rmpp_len);
	if (!strcmp(mode, "redirect"))
		return redirect_server(secs);
	if (!strcmp(mode, "hold") && gid)
		return hold(gid, sgid);
	fprintf(stderr, "usage: umad_vendor server|client -g GID|hold -g GID [-n N] [-r LEN]\n");
	return 2;
}
