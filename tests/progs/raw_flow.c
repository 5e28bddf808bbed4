/*
 * Raw packet QPs with flow steering (issue 17), the program of
 * tests/hosts/raw.sh. Modes:
 *
 *   raw_flow rawrecv MAC_A MAC_B IP_A IP_B PORT N
 *       a RAW_PACKET QP with a flow for UDP to IP_A:PORT; takes N frames,
 *       each checked byte for byte as the datagram "PORT:k" (k = 0..N-1)
 *       from IP_B:PORT+1000 (MAC_B) to IP_A:PORT (MAC_A), IPv4 and UDP
 *       checksums valid; then 500 ms more (nothing else may come),
 *       destroys the flow, says "destroyed" and counts for 2 s what still
 *       arrives. "rawrecv frames=N bad=B extra=E after_destroy=D".
 *   raw_flow rawsend MAC_A MAC_B IP_A IP_B PORT N
 *       N Ethernet frames built here, UDP "PORT:k" from IP_A to IP_B:PORT,
 *       sent on a RAW_PACKET QP; "rawsend sent=N".
 *   raw_flow udpsend IP PORT N       datagrams "PORT:k" from port PORT+1000
 *   raw_flow udprecv PORT N          N datagrams "PORT:k", checked:
 *       "udprecv got=N bad=B"
 *   raw_flow prio IP_A X Y N
 *       three raw QPs: a flow for UDP to IP_A:X at priority 0, the same at
 *       priority 1, and ALL_DEFAULT; counts each QP's frames to X and to Y
 *       until the first has N of X and the third N of Y:
 *       "prio q1=X/Y q2=X/Y q3=X/Y"
 *   raw_flow neg                     creating a RAW_PACKET QP, and a flow
 *       on a UD QP: "neg raw_qp=ERRNO flow_on_ud=ERRNO" (names or "ok")
 *
 * Exit 0 when it ran (the script judges the lines), 1 on set-up failure.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define FRAME 2048
#define NRECV 64

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int parse_mac(const char *s, uint8_t m[6])
{
	unsigned v[6];

	if (sscanf(s, "%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) != 6)
		return -1;
	for (int i = 0; i < 6; i++)
		m[i] = (uint8_t)v[i];
	return 0;
}

static uint16_t csum_fold(uint32_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

static uint32_t csum_add(uint32_t s, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (n & 1)
		s += (uint32_t)(p[n - 1] << 8);
	return s;
}

/* The frame of datagram payload pl from (smac, sip, sport) to (dmac,
 * dip, dport), with the given IP id; its length. */
static size_t build(uint8_t *f, const uint8_t smac[6], const uint8_t dmac[6], uint32_t sip,
		    uint32_t dip, uint16_t sport, uint16_t dport, const char *pl, uint16_t id)
{
	size_t n = strlen(pl), ulen = 8 + n;
	uint8_t *ip = f + 14, *u = ip + 20;
	uint8_t ph[12];
	uint32_t s;

	memcpy(f, dmac, 6);
	memcpy(f + 6, smac, 6);
	f[12] = 0x08;
	f[13] = 0x00;
	memset(ip, 0, 20);
	ip[0] = 0x45;
	ip[2] = (uint8_t)((20 + ulen) >> 8);
	ip[3] = (uint8_t)(20 + ulen);
	ip[4] = (uint8_t)(id >> 8);
	ip[5] = (uint8_t)id;
	ip[6] = 0x40; /* DF */
	ip[8] = 64;
	ip[9] = IPPROTO_UDP;
	memcpy(ip + 12, &sip, 4);
	memcpy(ip + 16, &dip, 4);
	s = csum_fold(csum_add(0, ip, 20));
	ip[10] = (uint8_t)(s >> 8);
	ip[11] = (uint8_t)s;
	u[0] = (uint8_t)(sport >> 8);
	u[1] = (uint8_t)sport;
	u[2] = (uint8_t)(dport >> 8);
	u[3] = (uint8_t)dport;
	u[4] = (uint8_t)(ulen >> 8);
	u[5] = (uint8_t)ulen;
	u[6] = u[7] = 0;
	memcpy(u + 8, pl, n);
	memcpy(ph, &sip, 4);
	memcpy(ph + 4, &dip, 4);
	ph[8] = 0;
	ph[9] = IPPROTO_UDP;
	ph[10] = (uint8_t)(ulen >> 8);
	ph[11] = (uint8_t)ulen;
	s = csum_fold(csum_add(csum_add(0, ph, 12), u, ulen));
	if (!s)
		s = 0xffff;
	u[6] = (uint8_t)(s >> 8);
	u[7] = (uint8_t)s;
	return 34 + ulen;
}

struct raw {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
};

static int raw_open(struct raw *r, enum ibv_qp_type type)
{
	struct ibv_device **l = ibv_get_device_list(NULL);
	struct ibv_qp_init_attr ia;

	memset(r, 0, sizeof(*r));
	if (!l || !l[0]) {
		fprintf(stderr, "no device\n");
		return -1;
	}
	r->ctx = ibv_open_device(l[0]);
	ibv_free_device_list(l);
	if (!r->ctx)
		return -1;
	r->pd = ibv_alloc_pd(r->ctx);
	r->cq = ibv_create_cq(r->ctx, 2 * NRECV, NULL, NULL, 0);
	r->buf = calloc(NRECV + 1, FRAME);
	if (!r->pd || !r->cq || !r->buf)
		return -1;
	r->mr = ibv_reg_mr(r->pd, r->buf, (size_t)(NRECV + 1) * FRAME, IBV_ACCESS_LOCAL_WRITE);
	if (!r->mr)
		return -1;
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = ia.recv_cq = r->cq;
	ia.qp_type = type;
	ia.cap.max_send_wr = NRECV;
	ia.cap.max_recv_wr = NRECV;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	r->qp = ibv_create_qp(r->pd, &ia);
	return r->qp ? 0 : -1;
}

static void raw_close(struct raw *r)
{
	if (r->qp)
		ibv_destroy_qp(r->qp);
	if (r->mr)
		ibv_dereg_mr(r->mr);
	if (r->cq)
		ibv_destroy_cq(r->cq);
	if (r->pd)
		ibv_dealloc_pd(r->pd);
	if (r->ctx)
		ibv_close_device(r->ctx);
	free(r->buf);
}

static int raw_up(struct raw *r)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	if (ibv_modify_qp(r->qp, &a, IBV_QP_STATE | IBV_QP_PORT))
		return -1;
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(r->qp, &a, IBV_QP_STATE))
		return -1;
	a.qp_state = IBV_QPS_RTS;
	return ibv_modify_qp(r->qp, &a, IBV_QP_STATE) ? -1 : 0;
}

static int post_recv(struct raw *r, uint32_t i)
{
	struct ibv_sge sge = {(uintptr_t)(r->buf + (size_t)i * FRAME), FRAME, r->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = i, .sg_list = &sge, .num_sge = 1}, *bad;

	return ibv_post_recv(r->qp, &wr, &bad);
}

/* A UDP flow to ip:port (network order). */
static struct ibv_flow *udp_flow_at(struct ibv_qp *qp, uint32_t ip, uint16_t port,
				    enum ibv_flow_attr_type type, uint16_t prio)
{
	struct {
		struct ibv_flow_attr attr;
		struct ibv_flow_spec_ipv4 ip;
		struct ibv_flow_spec_tcp_udp udp;
	} fa; /* no padding: every member has a size that is a multiple of 4 */

	memset(&fa, 0, sizeof(fa));
	fa.attr.type = type;
	fa.attr.priority = prio;
	fa.attr.size = type == IBV_FLOW_ATTR_NORMAL ? sizeof(fa) : sizeof(fa.attr);
	fa.attr.num_of_specs = type == IBV_FLOW_ATTR_NORMAL ? 2 : 0;
	fa.attr.port = 1;
	fa.ip.type = IBV_FLOW_SPEC_IPV4;
	fa.ip.size = sizeof(fa.ip);
	fa.ip.val.dst_ip = ip;
	fa.ip.mask.dst_ip = 0xffffffff;
	fa.udp.type = IBV_FLOW_SPEC_UDP;
	fa.udp.size = sizeof(fa.udp);
	fa.udp.val.dst_port = port;
	fa.udp.mask.dst_port = 0xffff;
	return ibv_create_flow(qp, &fa.attr);
}

static struct ibv_flow *udp_flow(struct ibv_qp *qp, uint32_t ip, uint16_t port)
{
	return udp_flow_at(qp, ip, port, IBV_FLOW_ATTR_NORMAL, 0);
}

/* Frames of QP r for ms: those of UDP datagrams to port x and port y. */
static void count_ports(struct raw *r, uint64_t ms, uint16_t x, uint16_t y, uint32_t *nx,
			uint32_t *ny)
{
	uint64_t end = now_ms() + ms;

	while (now_ms() < end) {
		struct ibv_wc wc;
		const uint8_t *f;
		uint16_t dport;

		if (ibv_poll_cq(r->cq, 1, &wc) <= 0) {
			usleep(1000);
			continue;
		}
		f = r->buf + wc.wr_id * FRAME;
		if (wc.status == IBV_WC_SUCCESS && wc.byte_len >= 42 && f[12] == 8 && f[13] == 0 &&
		    f[23] == IPPROTO_UDP) {
			dport = (uint16_t)(f[36] << 8 | f[37]);
			*nx += dport == x;
			*ny += dport == y;
		}
		if (post_recv(r, (uint32_t)wc.wr_id))
			return;
	}
}

/* Priorities: QP 1 a NORMAL flow for port x at priority 0, QP 2 the same
 * at priority 1 (the lower priority: it sees none), QP 3 ALL_DEFAULT (what
 * no NORMAL flow takes: port y's, not port x's). */
static int prio(char **a)
{
	uint32_t ip = inet_addr(a[0]), n = (uint32_t)atoi(a[3]);
	uint16_t x = (uint16_t)atoi(a[1]), y = (uint16_t)atoi(a[2]);
	uint32_t nx[3] = {0}, ny[3] = {0};
	struct ibv_flow *fl[3];
	struct raw r[3];

	for (int i = 0; i < 3; i++) {
		if (raw_open(&r[i], IBV_QPT_RAW_PACKET) || raw_up(&r[i]))
			return 1;
		for (uint32_t j = 0; j < NRECV; j++)
			if (post_recv(&r[i], j))
				return 1;
	}
	fl[0] = udp_flow_at(r[0].qp, ip, htons(x), IBV_FLOW_ATTR_NORMAL, 0);
	fl[1] = udp_flow_at(r[1].qp, ip, htons(x), IBV_FLOW_ATTR_NORMAL, 1);
	fl[2] = udp_flow_at(r[2].qp, 0, 0, IBV_FLOW_ATTR_ALL_DEFAULT, 0);
	if (!fl[0] || !fl[1] || !fl[2]) {
		fprintf(stderr, "ibv_create_flow: %s\n", strerror(errno));
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	for (uint64_t end = now_ms() + 20000; now_ms() < end;) {
		for (int i = 0; i < 3; i++)
			count_ports(&r[i], 20, x, y, &nx[i], &ny[i]);
		if (nx[0] >= n && ny[2] >= n)
			break;
	}
	for (int i = 0; i < 3; i++)
		count_ports(&r[i], 300, x, y, &nx[i], &ny[i]);
	printf("prio q1=%u/%u q2=%u/%u q3=%u/%u\n", nx[0], ny[0], nx[1], ny[1], nx[2], ny[2]);
	for (int i = 0; i < 3; i++) {
		ibv_destroy_flow(fl[i]);
		raw_close(&r[i]);
	}
	return 0;
}

/* Completions for up to ms: each checked against want[] while k < n. */
static void take(struct raw *r, uint64_t ms, uint32_t n, uint32_t *k, uint32_t *bad,
		 uint32_t *extra, const uint8_t *mac_a, const uint8_t *mac_b, uint32_t ip_a,
		 uint32_t ip_b, uint16_t port)
{
	uint64_t end = now_ms() + ms;

	while (now_ms() < end && (*k < n || extra)) {
		struct ibv_wc wc;
		int got = ibv_poll_cq(r->cq, 1, &wc);

		if (got <= 0) {
			usleep(1000);
			continue;
		}
		if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV) {
			fprintf(stderr, "completion status %d opcode %d\n", wc.status, wc.opcode);
			(*bad)++;
		} else if (*k >= n) {
			(*extra)++;
		} else {
			uint8_t want[FRAME];
			const uint8_t *f = r->buf + wc.wr_id * FRAME;
			char pl[32];
			size_t len;

			snprintf(pl, sizeof(pl), "%u:%u", port, *k);
			/* the sender's IP id is its own: take it from the frame */
			len = build(want, mac_b, mac_a, ip_b, ip_a, (uint16_t)(port + 1000), port,
				    pl, (uint16_t)(f[18] << 8 | f[19]));
			if (wc.byte_len != len || memcmp(f, want, len)) {
				size_t d = 0;

				while (d < len && d < wc.byte_len && f[d] == want[d])
					d++;
				fprintf(stderr,
					"frame %u differs (byte_len %u, want %zu) at byte %zu: "
					"%02x, want %02x\n",
					*k, wc.byte_len, len, d, f[d], want[d]);
				(*bad)++;
			}
			(*k)++;
		}
		if (post_recv(r, (uint32_t)wc.wr_id))
			(*bad)++;
		if (*k >= n && !extra)
			break;
	}
}

static int rawrecv(char **a)
{
	uint8_t mac_a[6], mac_b[6];
	uint32_t ip_a = inet_addr(a[2]), ip_b = inet_addr(a[3]);
	uint16_t port = (uint16_t)atoi(a[4]);
	uint32_t n = (uint32_t)atoi(a[5]), k = 0, bad = 0, extra = 0, after = 0, k2 = 0;
	struct ibv_flow *fl;
	struct raw r;

	if (parse_mac(a[0], mac_a) || parse_mac(a[1], mac_b) || raw_open(&r, IBV_QPT_RAW_PACKET) ||
	    raw_up(&r)) {
		fprintf(stderr, "raw QP: %s\n", strerror(errno));
		return 1;
	}
	for (uint32_t i = 0; i < NRECV; i++)
		if (post_recv(&r, i))
			return 1;
	fl = udp_flow(r.qp, ip_a, htons(port));
	if (!fl) {
		fprintf(stderr, "ibv_create_flow: %s\n", strerror(errno));
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	take(&r, 20000, n, &k, &bad, NULL, mac_a, mac_b, ip_a, ip_b, port);
	take(&r, 500, 0, &k2, &bad, &extra, mac_a, mac_b, ip_a, ip_b, port);
	if (ibv_destroy_flow(fl)) {
		fprintf(stderr, "ibv_destroy_flow failed\n");
		bad++;
	}
	printf("destroyed\n");
	fflush(stdout);
	k2 = 0;
	take(&r, 2000, 0, &k2, &bad, &after, mac_a, mac_b, ip_a, ip_b, port);
	printf("rawrecv frames=%u bad=%u extra=%u after_destroy=%u\n", k, bad, extra, after);
	raw_close(&r);
	return 0;
}

static int rawsend(char **a)
{
	uint8_t mac_a[6], mac_b[6];
	uint32_t ip_a = inet_addr(a[2]), ip_b = inet_addr(a[3]);
	uint16_t port = (uint16_t)atoi(a[4]);
	uint32_t n = (uint32_t)atoi(a[5]), sent = 0;
	struct raw r;

	if (parse_mac(a[0], mac_a) || parse_mac(a[1], mac_b) || raw_open(&r, IBV_QPT_RAW_PACKET) ||
	    raw_up(&r)) {
		fprintf(stderr, "raw QP: %s\n", strerror(errno));
		return 1;
	}
	for (uint32_t k = 0; k < n; k++) {
		uint8_t *f = r.buf + (size_t)NRECV * FRAME;
		char pl[32];
		struct ibv_sge sge;
		struct ibv_send_wr wr, *bad;
		struct ibv_wc wc;
		uint64_t end = now_ms() + 5000;
		int got = 0;

		snprintf(pl, sizeof(pl), "%u:%u", port, k);
		sge.addr = (uintptr_t)f;
		sge.length = (uint32_t)build(f, mac_a, mac_b, ip_a, ip_b, (uint16_t)(port + 1000),
					     port, pl, (uint16_t)(k + 1));
		sge.lkey = r.mr->lkey;
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = k;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		if (ibv_post_send(r.qp, &wr, &bad)) {
			fprintf(stderr, "ibv_post_send: %s\n", strerror(errno));
			return 1;
		}
		while (got == 0 && now_ms() < end)
			got = ibv_poll_cq(r.cq, 1, &wc);
		if (got != 1 || wc.status != IBV_WC_SUCCESS) {
			fprintf(stderr, "send completion: %d status %d\n", got,
				got ? (int)wc.status : -1);
			return 1;
		}
		sent++;
		usleep(2000);
	}
	printf("rawsend sent=%u\n", sent);
	raw_close(&r);
	return 0;
}

static int udpsend(char **a)
{
	struct sockaddr_in to = {.sin_family = AF_INET}, me = {.sin_family = AF_INET};
	uint16_t port = (uint16_t)atoi(a[1]);
	uint32_t n = (uint32_t)atoi(a[2]);
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	to.sin_addr.s_addr = inet_addr(a[0]);
	to.sin_port = htons(port);
	me.sin_port = htons((uint16_t)(port + 1000));
	if (fd < 0 || bind(fd, (struct sockaddr *)&me, sizeof(me)))
		return 1;
	for (uint32_t k = 0; k < n; k++) {
		char pl[32];

		snprintf(pl, sizeof(pl), "%u:%u", port, k);
		if (sendto(fd, pl, strlen(pl), 0, (struct sockaddr *)&to, sizeof(to)) < 0)
			return 1;
		usleep(2000);
	}
	close(fd);
	return 0;
}

static int udprecv(char **a)
{
	struct sockaddr_in me = {.sin_family = AF_INET};
	uint16_t port = (uint16_t)atoi(a[0]);
	uint32_t n = (uint32_t)atoi(a[1]), got = 0, bad = 0;
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	uint64_t end = now_ms() + 20000;

	me.sin_port = htons(port);
	if (fd < 0 || bind(fd, (struct sockaddr *)&me, sizeof(me)))
		return 1;
	printf("ready\n");
	fflush(stdout);
	while (got < n && now_ms() < end) {
		struct pollfd p = {fd, POLLIN, 0};
		char buf[64], want[32];
		ssize_t m;

		if (poll(&p, 1, 100) <= 0)
			continue;
		m = recv(fd, buf, sizeof(buf) - 1, 0);
		if (m < 0)
			break;
		snprintf(want, sizeof(want), "%u:%u", port, got);
		if ((size_t)m != strlen(want) || memcmp(buf, want, (size_t)m))
			bad++;
		got++;
	}
	printf("udprecv got=%u bad=%u\n", got, bad);
	close(fd);
	return 0;
}

static const char *err_name(int e)
{
	return e == 0	     ? "ok"
	       : e == EPERM  ? "EPERM"
	       : e == EINVAL ? "EINVAL"
	       : e == EBUSY  ? "EBUSY"
			     : strerror(e);
}

/* A raw QP with a flow cannot be destroyed (EBUSY, as the kernel's flow
 * holds the QP); after ibv_destroy_flow it can. */
static const char *busy(struct raw *r)
{
	struct ibv_flow *fl;
	int e;

	if (raw_up(r))
		return "modify-failed";
	fl = udp_flow(r->qp, htonl(0x0a4d0001), htons(9));
	if (!fl)
		return "flow-failed";
	e = ibv_destroy_qp(r->qp);
	if (!e)
		return "destroyed";
	if (ibv_destroy_flow(fl) || ibv_destroy_qp(r->qp))
		return "cleanup-failed";
	r->qp = NULL;
	return err_name(e);
}

static int neg(void)
{
	struct raw r, u;
	int raw_err, flow_err;

	raw_err = raw_open(&r, IBV_QPT_RAW_PACKET) ? errno : 0;
	if (raw_open(&u, IBV_QPT_UD)) {
		fprintf(stderr, "UD QP: %s\n", strerror(errno));
		return 1;
	}
	flow_err = udp_flow(u.qp, htonl(0x0a4d0001), htons(9)) ? 0 : errno;
	printf("neg raw_qp=%s flow_on_ud=%s destroy_with_flow=%s\n", err_name(raw_err),
	       err_name(flow_err), raw_err ? "none" : busy(&r));
	raw_close(&u);
	raw_close(&r);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 8 && !strcmp(argv[1], "rawrecv"))
		return rawrecv(argv + 2);
	if (argc == 8 && !strcmp(argv[1], "rawsend"))
		return rawsend(argv + 2);
	if (argc == 5 && !strcmp(argv[1], "udpsend"))
		return udpsend(argv + 2);
	if (argc == 4 && !strcmp(argv[1], "udprecv"))
		return udprecv(argv + 2);
	if (argc == 6 && !strcmp(argv[1], "prio"))
		return prio(argv + 2);
	if (argc == 2 && !strcmp(argv[1], "neg"))
		return neg();
	fprintf(stderr, "usage: see the top of raw_flow.c\n");
	return 1;
}
