/*
 * The daemon's connection manager through its protocol (sof_cm_proto.h),
 * without librdmacm: channels, ids, address and route resolution on
 * 127.0.0.1, the REQ/REP/RTU exchange with private data in both
 * directions, the QP attributes each side gets (each side's PSN and QP
 * number reach the other), DREQ/DREP, a REJ with private data, a connect
 * to a port nobody listens on, the backlog, SIDR for UD (and its
 * refusals: no service, a listener of another transport, a full
 * backlog), an id that connects again after a REJ, a channel that
 * closes (its process died) while connected, and an RTU later than the
 * passive side's REP tries (an MRA keeps it waiting). Runs with the private
 * daemon of its network namespace (tests/run.sh).
 */
#include "harness.h"

#include "sof_client.h"
#include "sof_cm_proto.h"
#include "sof_proto.h"
#include "sof_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int cmd; /* the command connection */

struct chan {
	int fd;
	uint32_t handle;
};

static struct chan chan_open(void)
{
	struct chan c = {sof_client_connect(), 0};
	struct sof_cm_channel_rep rep;

	CHECK(c.fd >= 0);
	CHECK_EQ(sof_client_rpc(c.fd, SOF_OP_CM_CHANNEL, NULL, 0, NULL, 0, &rep, sizeof(rep), NULL,
				NULL),
		 0);
	c.handle = rep.channel;
	return c;
}

/* The next event on c within ms, or event == 0. */
static struct sof_cm_event next_event(struct chan c, int ms)
{
	struct sof_cm_event ev;
	struct pollfd p = {.fd = c.fd, .events = POLLIN};

	memset(&ev, 0, sizeof(ev));
	if (poll(&p, 1, ms) != 1 || read(c.fd, &ev, sizeof(ev)) != (ssize_t)sizeof(ev))
		memset(&ev, 0, sizeof(ev));
	return ev;
}

static struct sof_cm_event expect(struct chan c, uint32_t event, int ms)
{
	struct sof_cm_event ev = next_event(c, ms);

	if (ev.event != event)
		fprintf(stderr, "# expected event %u, got %u (status %d)\n", event, ev.event,
			ev.status);
	CHECK_EQ(ev.event, event);
	return ev;
}

static int rpc(uint32_t op, const void *req, size_t len, void *rep, size_t replen)
{
	return sof_client_rpc(cmd, op, req, len, NULL, 0, rep, replen, NULL, NULL);
}

static uint32_t create(struct chan c, uint32_t ps, uint32_t qpt)
{
	struct sof_cm_create_req r = {.channel = c.handle, .ps = ps, .qp_type = qpt};
	struct sof_cm_id_rep rep = {0};

	CHECK_EQ(rpc(SOF_OP_CM_CREATE_ID, &r, sizeof(r), &rep, sizeof(rep)), 0);
	return rep.id;
}

static int id_op(uint32_t op, uint32_t id, uint32_t arg)
{
	struct sof_cm_id_req r = {.id = id, .arg = arg};

	return rpc(op, &r, sizeof(r), NULL, 0);
}

static void v4addr(struct sockaddr_storage *ss, const char *ip, uint16_t port)
{
	struct sockaddr_in *s = (struct sockaddr_in *)ss;

	memset(ss, 0, sizeof(*ss));
	s->sin_family = AF_INET;
	s->sin_port = htons(port);
	inet_pton(AF_INET, ip, &s->sin_addr);
}

static uint32_t listener(struct chan c, uint32_t ps, uint32_t qpt, uint16_t port, uint32_t backlog)
{
	struct sof_cm_addr_req a = {.id = create(c, ps, qpt)};
	struct sof_cm_query_rep q;

	v4addr(&a.src, "127.0.0.1", port);
	CHECK_EQ(rpc(SOF_OP_CM_BIND_ADDR, &a, sizeof(a), &q, sizeof(q)), 0);
	CHECK_EQ(q.port_num, 0); /* a loopback bind takes no device (cma_any_addr) */
	CHECK_EQ(id_op(SOF_OP_CM_LISTEN, a.id, backlog), 0);
	return a.id;
}

/* An active id with its route to 127.0.0.1:port resolved. */
static uint32_t active(struct chan c, uint32_t ps, uint32_t qpt, uint16_t port)
{
	struct sof_cm_addr_req a = {.id = create(c, ps, qpt), .timeout_ms = 2000};
	struct sof_cm_query_rep q;

	v4addr(&a.dst, "127.0.0.1", port);
	CHECK_EQ(rpc(SOF_OP_CM_RESOLVE_ADDR, &a, sizeof(a), &q, sizeof(q)), 0);
	expect(c, RDMA_CM_EVENT_ADDR_RESOLVED, 2000);
	CHECK_EQ(id_op(SOF_OP_CM_RESOLVE_ROUTE, a.id, 2000), 0);
	expect(c, RDMA_CM_EVENT_ROUTE_RESOLVED, 2000);
	CHECK_EQ(rpc(SOF_OP_CM_QUERY, &(struct sof_cm_id_req){.id = a.id}, 8, &q, sizeof(q)), 0);
	CHECK_EQ(q.num_paths, 1);
	CHECK_NE(((struct sockaddr_in *)&q.src)->sin_port, 0);
	return a.id;
}

static int conn_op(uint32_t op, uint32_t id, uint32_t qpn, const char *pdata, uint32_t reason)
{
	struct sof_cm_conn_req r;

	memset(&r, 0, sizeof(r));
	r.id = id;
	r.reason = reason;
	r.param.qp_num = qpn;
	r.param.responder_resources = 4;
	r.param.initiator_depth = 2;
	r.param.retry_count = 7;
	r.param.rnr_retry_count = 7;
	r.param.qkey = 0x1234;
	if (pdata) {
		r.param.private_data_len = (uint8_t)strlen(pdata);
		memcpy(r.param.private_data, pdata, strlen(pdata));
	}
	return rpc(op, &r, sizeof(r), NULL, 0);
}

static struct sof_cm_qp_attr qp_attr(uint32_t id, uint32_t state)
{
	struct sof_cm_id_req r = {.id = id, .arg = state};
	struct sof_cm_qp_attr a;

	memset(&a, 0, sizeof(a));
	CHECK_EQ(rpc(SOF_OP_CM_INIT_QP_ATTR, &r, sizeof(r), &a, sizeof(a)), 0);
	return a;
}

static struct sof_status_rep status(void)
{
	struct sof_status_rep st;

	memset(&st, 0, sizeof(st));
	CHECK_EQ(rpc(SOF_OP_STATUS, NULL, 0, &st, sizeof(st)), 0);
	return st;
}

TEST(connect_accept_disconnect)
{
	struct chan s = chan_open(), c = chan_open();
	uint32_t l = listener(s, RDMA_PS_TCP, IBV_QPT_RC, 7471, 0);
	uint32_t a = active(c, RDMA_PS_TCP, IBV_QPT_RC, 7471);
	struct sof_cm_event ev;
	struct sof_cm_qp_attr aa, pa;
	uint32_t p;

	CHECK_EQ(conn_op(SOF_OP_CM_CONNECT, a, 0x111, "hello from the client", 0), 0);
	ev = expect(s, RDMA_CM_EVENT_CONNECT_REQUEST, 3000);
	CHECK_EQ(ev.listen_id, l);
	p = ev.id;
	CHECK_EQ(ev.param.qp_num, 0x111);
	CHECK_EQ(ev.param.private_data_len, 56); /* REQ's 92 less the A11 header */
	CHECK_MEM(ev.param.private_data, "hello from the client", 21);
	/* the passive side serves what the active one will issue */
	CHECK_EQ(ev.param.responder_resources, 2);
	CHECK_EQ(ev.param.initiator_depth, 4);
	CHECK_EQ(((struct sockaddr_in *)&ev.q.src)->sin_port, htons(7471));

	CHECK_EQ(qp_attr(p, IBV_QPS_INIT).port_num, 1);
	CHECK_EQ(conn_op(SOF_OP_CM_ACCEPT, p, 0x222, "welcome", 0), 0);
	ev = expect(c, RDMA_CM_EVENT_CONNECT_RESPONSE, 3000);
	CHECK_EQ(ev.param.qp_num, 0x222);
	CHECK_MEM(ev.param.private_data, "welcome", 7);
	CHECK_EQ(id_op(SOF_OP_CM_ESTABLISH, a, 0), 0);
	expect(s, RDMA_CM_EVENT_ESTABLISHED, 3000);

	aa = qp_attr(a, IBV_QPS_RTR);
	pa = qp_attr(p, IBV_QPS_RTR);
	CHECK_EQ(aa.dest_qp_num, 0x222);
	CHECK_EQ(pa.dest_qp_num, 0x111);
	CHECK_EQ(aa.rq_psn, qp_attr(p, IBV_QPS_RTS).sq_psn);
	CHECK_EQ(pa.rq_psn, qp_attr(a, IBV_QPS_RTS).sq_psn);
	CHECK_EQ(aa.max_dest_rd_atomic, 4);
	CHECK_EQ(qp_attr(a, IBV_QPS_RTS).max_rd_atomic, 2);
	CHECK_EQ(status().cm_ids, 3);
	CHECK_EQ(status().cm_listeners, 1); /* l alone: its child is no listener */

	CHECK_EQ(id_op(SOF_OP_CM_DISCONNECT, a, 0), 0);
	expect(s, RDMA_CM_EVENT_DISCONNECTED, 3000);
	expect(c, RDMA_CM_EVENT_DISCONNECTED, 3000);
	CHECK_EQ(id_op(SOF_OP_CM_DISCONNECT, p, 0), 0); /* already: fine */
	CHECK_EQ(id_op(SOF_OP_CM_DESTROY_ID, a, 0), 0);
	CHECK_EQ(id_op(SOF_OP_CM_DESTROY_ID, p, 0), 0);
	CHECK_EQ(id_op(SOF_OP_CM_DESTROY_ID, l, 0), 0);
	CHECK_EQ(id_op(SOF_OP_CM_DESTROY_ID, l, 0), -ENOENT);
	CHECK_EQ(status().cm_listeners, 0);
	close(s.fd);
	close(c.fd);
	usleep(1200000); /* TIMEWAIT */
	CHECK_EQ(status().cm_ids, 0);
	CHECK_EQ(status().cm_timewait, 0);
	CHECK_EQ(status().cm_channels, 0);
}

TEST(no_listener_rejected)
{
	struct chan c = chan_open();
	uint32_t a = active(c, RDMA_PS_TCP, IBV_QPT_RC, 7472);
	uint64_t t0 = sof_now_ns();
	struct sof_cm_event ev;

	CHECK_EQ(conn_op(SOF_OP_CM_CONNECT, a, 0x111, NULL, 0), 0);
	ev = expect(c, RDMA_CM_EVENT_REJECTED, 3000);
	CHECK_EQ(ev.status, 8); /* IBA 12.6.7.2: invalid service ID */
	CHECK(sof_now_ns() - t0 < 500000000ull);
	close(c.fd);
}

TEST(reject_with_private_data)
{
	struct chan s = chan_open(), c = chan_open();
	uint32_t a;
	struct sof_cm_event ev;

	listener(s, RDMA_PS_TCP, IBV_QPT_RC, 7473, 0);
	a = active(c, RDMA_PS_TCP, IBV_QPT_RC, 7473);
	CHECK_EQ(conn_op(SOF_OP_CM_CONNECT, a, 0x111, NULL, 0), 0);
	ev = expect(s, RDMA_CM_EVENT_CONNECT_REQUEST, 3000);
	CHECK_EQ(conn_op(SOF_OP_CM_REJECT, ev.id, 0, "go away", 0), 0);
	ev = expect(c, RDMA_CM_EVENT_REJECTED, 3000);
	CHECK_EQ(ev.status, 28); /* consumer defined */
	CHECK_MEM(ev.param.private_data, "go away", 7);
	close(s.fd);
	close(c.fd);
}

TEST(backlog)
{
	struct chan s = chan_open(), c = chan_open();
	uint32_t a1, a2;
	struct sof_cm_event ev;

	listener(s, RDMA_PS_TCP, IBV_QPT_RC, 7474, 1);
	a1 = active(c, RDMA_PS_TCP, IBV_QPT_RC, 7474);
	a2 = active(c, RDMA_PS_TCP, IBV_QPT_RC, 7474);
	CHECK_EQ(conn_op(SOF_OP_CM_CONNECT, a1, 0x111, NULL, 0), 0);
	expect(s, RDMA_CM_EVENT_CONNECT_REQUEST, 3000);
	CHECK_EQ(conn_op(SOF_OP_CM_CONNECT, a2, 0x112, NULL, 0), 0);
	ev = expect(c, RDMA_CM_EVENT_REJECTED, 3000);
	CHECK_EQ(ev.id, a2);
	CHECK_EQ(ev.status, 3); /* no resources */
	close(s.fd);
	/* the listener's channel went: a1's request is rejected */
	ev = expect(c, RDMA_CM_EVENT_REJECTED, 3000);
	CHECK_EQ(ev.id, a1);
	close(c.fd);
}

TEST(peer_dies_established)
{
	struct chan s = chan_open(), c = chan_open();
	uint32_t a;
	struct sof_cm_event ev;

	listener(s, RDMA_PS_TCP, IBV_QPT_RC, 7475, 0);
	a = active(c, RDMA_PS_TCP, IBV_QPT_RC, 7475);
	CHECK_EQ(conn_op(SOF_OP_CM_CONNECT, a, 0x111, NULL, 0), 0);
	ev = expect(s, RDMA_CM_EVENT_CONNECT_REQUEST, 3000);
	CHECK_EQ(conn_op(SOF_OP_CM_ACCEPT, ev.id, 0x222, NULL, 0), 0);
	expect(c, RDMA_CM_EVENT_CONNECT_RESPONSE, 3000);
	CHECK_EQ(id_op(SOF_OP_CM_ESTABLISH, a, 0), 0);
	expect(s, RDMA_CM_EVENT_ESTABLISHED, 3000);
	close(s.fd); /* as a process killed with SIGKILL */
	expect(c, RDMA_CM_EVENT_DISCONNECTED, 3000);
	close(c.fd);
}

TEST(sidr_ud)
{
	struct chan s = chan_open(), c = chan_open();
	uint32_t a;
	struct sof_cm_event ev;

	listener(s, RDMA_PS_UDP, IBV_QPT_UD, 7476, 0);
	a = active(c, RDMA_PS_UDP, IBV_QPT_UD, 7476);
	CHECK_EQ(qp_attr(a, IBV_QPS_INIT).qkey, RDMA_UDP_QKEY);
	CHECK_EQ(conn_op(SOF_OP_CM_CONNECT, a, 0, "ud hello", 0), 0);
	ev = expect(s, RDMA_CM_EVENT_CONNECT_REQUEST, 3000);
	CHECK_MEM(ev.param.private_data, "ud hello", 8);
	CHECK_EQ(conn_op(SOF_OP_CM_ACCEPT, ev.id, 0x333, NULL, 0), 0);
	ev = expect(c, RDMA_CM_EVENT_ESTABLISHED, 3000);
	CHECK_EQ(ev.param.qp_num, 0x333);
	CHECK_EQ(ev.param.qkey, 0x1234);
	CHECK_EQ(ev.ah_dgid[15], 1); /* 127.0.0.1 */
	close(s.fd);
	close(c.fd);
}

/* A SIDR_REQ nobody serves, one for an RC listener, and one beyond a UD
 * listener's backlog: UNREACHABLE with the SIDR_REP's status (IBA 12.11,
 * table 119: 1 no service, 2 rejected). */
TEST(sidr_refused)
{
	struct chan s = chan_open(), c = chan_open();
	uint32_t a;
	struct sof_cm_event ev;

	a = active(c, RDMA_PS_UDP, IBV_QPT_UD, 7477);
	CHECK_EQ(conn_op(SOF_OP_CM_CONNECT, a, 0, NULL, 0), 0);
	ev = expect(c, RDMA_CM_EVENT_UNREACHABLE, 3000);
	CHECK_EQ(ev.id, a);
	CHECK_EQ(ev.status, 1);

	listener(s, RDMA_PS_UDP, IBV_QPT_RC, 7478, 0);
	a = active(c, RDMA_PS_UDP, IBV_QPT_UD, 7478);
	CHECK_EQ(conn_op(SOF_OP_CM_CONNECT, a, 0, NULL, 0), 0);
	ev = expect(c, RDMA_CM_EVENT_UNREACHABLE, 3000);
	CHECK_EQ(ev.status, 1);

	listener(s, RDMA_PS_UDP, IBV_QPT_UD, 7479, 1);
	a = active(c, RDMA_PS_UDP, IBV_QPT_UD, 7479);
	CHECK_EQ(conn_op(SOF_OP_CM_CONNECT, a, 0, NULL, 0), 0);
	expect(s, RDMA_CM_EVENT_CONNECT_REQUEST, 3000); /* left unanswered */
	a = active(c, RDMA_PS_UDP, IBV_QPT_UD, 7479);
	CHECK_EQ(conn_op(SOF_OP_CM_CONNECT, a, 0, NULL, 0), 0);
	ev = expect(c, RDMA_CM_EVENT_UNREACHABLE, 3000);
	CHECK_EQ(ev.id, a);
	CHECK_EQ(ev.status, 2);
	close(s.fd);
	close(c.fd);
}

/* A REJ leaves the active id with its route (ROUTE_RESOLVED), so it may
 * connect again; the second attempt is accepted. */
TEST(connect_again_after_reject)
{
	struct chan s = chan_open(), c = chan_open();
	uint32_t a;
	struct sof_cm_event ev;

	listener(s, RDMA_PS_TCP, IBV_QPT_RC, 7480, 0);
	a = active(c, RDMA_PS_TCP, IBV_QPT_RC, 7480);
	CHECK_EQ(conn_op(SOF_OP_CM_CONNECT, a, 0x111, NULL, 0), 0);
	CHECK_EQ(conn_op(SOF_OP_CM_CONNECT, a, 0x111, NULL, 0), -EINVAL); /* in progress */
	ev = expect(s, RDMA_CM_EVENT_CONNECT_REQUEST, 3000);
	CHECK_EQ(conn_op(SOF_OP_CM_REJECT, ev.id, 0, NULL, 0), 0);
	expect(c, RDMA_CM_EVENT_REJECTED, 3000);
	CHECK_EQ(conn_op(SOF_OP_CM_CONNECT, a, 0x113, NULL, 0), 0);
	ev = expect(s, RDMA_CM_EVENT_CONNECT_REQUEST, 3000);
	CHECK_EQ(ev.param.qp_num, 0x113);
	CHECK_EQ(conn_op(SOF_OP_CM_ACCEPT, ev.id, 0x222, NULL, 0), 0);
	ev = expect(c, RDMA_CM_EVENT_CONNECT_RESPONSE, 3000);
	CHECK_EQ(ev.id, a);
	close(s.fd);
	close(c.fd);
}

TEST(bad_requests)
{
	struct chan c = chan_open();
	struct sof_cm_create_req r = {.channel = c.handle + 1000, .ps = RDMA_PS_TCP};
	struct sof_cm_id_rep rep;
	struct sof_cm_addr_req a;
	uint32_t id = create(c, RDMA_PS_TCP, IBV_QPT_RC);

	CHECK_EQ(rpc(SOF_OP_CM_CREATE_ID, &r, sizeof(r), &rep, sizeof(rep)), -ENOENT);
	r.channel = c.handle;
	r.ps = 0x77;
	CHECK_EQ(rpc(SOF_OP_CM_CREATE_ID, &r, sizeof(r), &rep, sizeof(rep)), -EINVAL); /* as the kernel */
	CHECK_EQ(id_op(SOF_OP_CM_LISTEN, id + 99, 0), -ENOENT);
	CHECK_EQ(conn_op(SOF_OP_CM_CONNECT, id, 1, NULL, 0), -EINVAL); /* no route */
	CHECK_EQ(id_op(SOF_OP_CM_INIT_QP_ATTR, id, IBV_QPS_RTR), -EINVAL);
	memset(&a, 0, sizeof(a));
	a.id = id;
	v4addr(&a.src, "192.0.2.1", 0); /* not ours */
	CHECK_EQ(rpc(SOF_OP_CM_BIND_ADDR, &a, sizeof(a), NULL, 0), -EADDRNOTAVAIL);
	/* a channel takes no requests */
	CHECK_EQ(sof_client_rpc(c.fd, SOF_OP_CM_CHANNEL, NULL, 0, NULL, 0, NULL, 0, NULL, NULL),
		 -EINVAL);
	close(c.fd);
}

/* An active side slow to establish (its process not running: the RTU
 * waits for its QP) past the passive side's REP tries, about 4 s: the
 * REP repeated gets an MRA, so the passive side waits on and takes the
 * late RTU (issue 22: it gave up and rejected, and the active side's
 * connection, established after, ended at once). */
TEST(late_rtu)
{
	struct chan s = chan_open(), c = chan_open();
	struct sof_cm_event ev;
	uint32_t a, p;

	listener(s, RDMA_PS_TCP, IBV_QPT_RC, 7486, 0);
	a = active(c, RDMA_PS_TCP, IBV_QPT_RC, 7486);
	CHECK_EQ(conn_op(SOF_OP_CM_CONNECT, a, 0x111, NULL, 0), 0);
	ev = expect(s, RDMA_CM_EVENT_CONNECT_REQUEST, 3000);
	p = ev.id;
	CHECK_EQ(conn_op(SOF_OP_CM_ACCEPT, p, 0x222, NULL, 0), 0);
	expect(c, RDMA_CM_EVENT_CONNECT_RESPONSE, 3000);
	/* past the last REP's timeout: nothing comes to either side */
	ev = next_event(s, 5000);
	CHECK_EQ(ev.event, 0);
	ev = next_event(c, 0);
	CHECK_EQ(ev.event, 0);
	CHECK_EQ(id_op(SOF_OP_CM_ESTABLISH, a, 0), 0);
	ev = expect(s, RDMA_CM_EVENT_ESTABLISHED, 3000);
	CHECK_EQ(ev.id, p);
	CHECK_EQ(id_op(SOF_OP_CM_DISCONNECT, a, 0), 0);
	expect(s, RDMA_CM_EVENT_DISCONNECTED, 3000);
	expect(c, RDMA_CM_EVENT_DISCONNECTED, 3000);
	close(s.fd);
	close(c.fd);
}

int main(void)
{
	cmd = sof_client_connect();
	if (cmd < 0) {
		fprintf(stderr, "no daemon: %s\n", strerror(-cmd));
		return 1;
	}
	RUN(connect_accept_disconnect);
	RUN(no_listener_rejected);
	RUN(reject_with_private_data);
	RUN(backlog);
	RUN(peer_dies_established);
	RUN(late_rtu);
	RUN(sidr_ud);
	RUN(sidr_refused);
	RUN(connect_again_after_reject);
	RUN(bad_requests);
	return test_summary();
}
