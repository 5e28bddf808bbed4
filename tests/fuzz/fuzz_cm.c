/*
 * libFuzzer target: the connection manager's receive path (cm/ibcm_recv.c
 * via mad/mad.c) with live connections in every interesting state.
 *
 * Each input starts from the same fresh state, made through the daemon's
 * own request handlers: an event channel; an RC listener on port 7471 and
 * a UD one on 7472 of 10.0.0.1; an active id A whose REQ is out; an id B
 * established (its REP crafted here); an id U whose SIDR_REQ is out. The
 * input is a list of commands:
 *
 *   0 SEL MAD[256]  a MAD from a peer; SEL patches in what the fuzzer
 *                   cannot guess (bits 0-1: which id, A/B/U/the newest
 *                   passive one; 0x04: its local comm ID at the remote
 *                   comm ID's place, 0x08: its remote comm ID at the local
 *                   one's, 0x10: its SIDR request ID; 0x20: sent from that
 *                   id's peer GID, else a stranger's)
 *   1               every CM timer expires
 *   2 OP            a user request: accept / reject the newest passive id,
 *                   disconnect B, destroy A, establish, notify COMM_EST
 *   3               the loopback MADs are delivered
 *
 * Then the channel closes (the process died) and every id must be gone
 * once its lingering ends: no id, comm ID or SIDR request may remain.
 *
 * Each seed is checked for exactly what it was made to cause: the count
 * of every event its user saw, and the MADs the CM sent, sent again and
 * dropped (so a seed whose answer goes missing fails).
 *
 * FUZZ_SOURCES: tests/fuzz/fuzz_cm.c cm/cma_id.c cm/cma_addr.c cm/cma_event.c cm/cma_resolve.c cm/cma_listen.c cm/cma_conn.c cm/cma_mcast.c cm/cma_upcall.c cm/cma_ops.c cm/cma_ib.c mad/sa_rec.c cm/cm_base.c daemon/cm_host.c cm/ibcm_conn.c cm/ibcm_send.c cm/ibcm_recv.c cm/ibcm_timer.c cm/cm_wire.c mad/mad.c transport/tp.c transport/udp.c transport/recv.c transport/timer.c transport/qp.c transport/mr.c transport/requester.c transport/completer.c transport/responder.c transport/rwqe.c transport/takeover.c transport/resp_shared.c transport/mcast.c transport/wire.c transport/icrc.c daemon/ops.c daemon/ops_mr.c daemon/ops_exec.c daemon/ops_import.c daemon/registry.c daemon/conn.c daemon/device.c daemon/tp_host.c daemon/steer.c common/util.c common/hmap.c common/cqring.c common/grh.c common/gid.c common/wr.c daemon/ops_xrc.c daemon/ops_mw.c daemon/raw.c daemon/ops_srq.c transport/sack.c transport/iblink.c transport/ib_wire.c daemon/ib.c daemon/ib_sma.c mad/sma.c mad/sma_port.c mad/pma.c mad/cc.c mad/rmpp.c daemon/ops_umad.c transport/ibpkt.c transport/ibdirect.c
 * FUZZ_INCLUDES: cm mad transport daemon common
 * FUZZ_SEEDS_ENV: SOF_FUZZ_CM_SEEDS
 */
#include "cma.h"
#include "ibcm_int.h"
#include "sofd.h"

#include "sof_gid.h"

#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define FUZZ_NAME "fuzz_cm"
#include "fuzz_daemon.h"

static const uint8_t local4[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1};
static const uint8_t peer4[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2};
static const uint8_t stranger4[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 9};

static struct sofd_conn *chan_conn, *cmd_conn;
static int user_fd = -1; /* the channel's other end: events arrive here */
static uint32_t chan, id_a, id_b, id_u;

static struct sofd_conn *new_conn(int fd)
{
	struct sofd_conn *c = calloc(1, sizeof(*c));

	if (!c)
		FAIL("calloc");
	c->p.kind = SOFD_POLL_CONN;
	c->p.fd = fd;
	c->async_fd = c->db_fd = -1;
	c->pmem_fd = c->fence_fd = -1;
	c->pid = getpid();
	c->uid = getuid();
	sof_list_init(&c->pds);
	sof_list_init(&c->mrs);
	sof_list_init(&c->cqs);
	sof_list_init(&c->srqs);
	sof_list_init(&c->qps);
	sof_list_init(&c->mws);
	return c;
}

static int op(struct sofd_conn *c, uint32_t o, const void *req, size_t len, void *rep,
	      size_t replen)
{
	uint8_t buf[sizeof(struct sof_cm_addr_req) + 64];
	struct sofd_req rq = {.c = c, .op = o, .data = buf, .len = len};
	struct sofd_rep rp = {0};
	int err;

	memset(buf, 0, sizeof(buf));
	if (len)
		memcpy(buf, req, len);
	err = sofd_cm_op(&rq, &rp);
	if (!err && rep)
		memcpy(rep, rp.data, replen < rp.len ? replen : rp.len);
	return err;
}

static uint32_t create(uint32_t ps, uint32_t qpt)
{
	struct sof_cm_create_req r = {.channel = chan, .ps = ps, .qp_type = qpt};
	struct sof_cm_id_rep rep = {0};

	if (op(cmd_conn, SOF_OP_CM_CREATE_ID, &r, sizeof(r), &rep, sizeof(rep)))
		FAIL("CREATE_ID");
	return rep.id;
}

static void v4(struct sockaddr_storage *ss, const uint8_t gid[16], uint16_t port)
{
	struct sockaddr_in *s = (struct sockaddr_in *)ss;

	memset(ss, 0, sizeof(*ss));
	s->sin_family = AF_INET;
	s->sin_port = htons(port);
	memcpy(&s->sin_addr, gid + 12, 4);
}

static int id_op(uint32_t o, uint32_t id, uint32_t arg)
{
	struct sof_cm_id_req r = {.id = id, .arg = arg};

	return op(cmd_conn, o, &r, sizeof(r), NULL, 0);
}

static void listener(uint32_t ps, uint32_t qpt, uint16_t port)
{
	struct sof_cm_addr_req a = {.id = create(ps, qpt)};

	v4(&a.src, local4, port);
	if (op(cmd_conn, SOF_OP_CM_BIND_ADDR, &a, sizeof(a), NULL, 0) ||
	    id_op(SOF_OP_CM_LISTEN, a.id, 4))
		FAIL("listener");
}

static uint32_t connect_to(uint32_t ps, uint32_t qpt, uint16_t port)
{
	struct sof_cm_addr_req a = {.id = create(ps, qpt)};
	struct sof_cm_conn_req c;

	v4(&a.src, local4, 0);
	v4(&a.dst, peer4, port);
	if (op(cmd_conn, SOF_OP_CM_RESOLVE_ADDR, &a, sizeof(a), NULL, 0) ||
	    id_op(SOF_OP_CM_RESOLVE_ROUTE, a.id, 1000))
		FAIL("resolve");
	memset(&c, 0, sizeof(c));
	c.id = a.id;
	c.param.qp_num = 0x111;
	c.param.responder_resources = c.param.initiator_depth = 4;
	c.param.retry_count = c.param.rnr_retry_count = 7;
	if (op(cmd_conn, SOF_OP_CM_CONNECT, &c, sizeof(c), NULL, 0))
		FAIL("connect");
	return a.id;
}

static struct cm_id *get(uint32_t h) { return h ? sof_hmap_get(&cma.ids, h) : NULL; }

/* The newest passive id waiting for its user, if any. */
static struct cm_id *newest_passive(void)
{
	struct cm_id *id, *best = NULL;
	uint32_t pos = 0;
	uint64_t key;

	while ((id = sof_hmap_next(&cma.ids, &pos, &key)))
		if ((id->state == CM_REQ_RCVD || id->state == CM_MRA_REQ_SENT ||
		     id->state == CM_SIDR_REQ_RCVD || id->state == CM_REP_SENT) &&
		    (!best || id->handle > best->handle))
			best = id;
	return best;
}

static void mad_from(const uint8_t *gid_peer, const uint8_t *mad)
{
	struct sofd_mad_addr from;

	memset(&from, 0, sizeof(from));
	memcpy(from.sgid, local4, 16);
	memcpy(from.dgid, gid_peer, 16);
	from.remote_qpn = SOF_GSI_QPN;
	from.remote_qkey = SOF_GSI_QKEY;
	from.pkey = 0xffff;
	sofd_mad_input(mad, SOF_MAD_LEN, &from);
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void cm_hdr(uint8_t *mad, uint16_t attr)
{
	struct sof_mad_hdr h = {.base_version = 1,
				.mgmt_class = SOF_MGMT_CLASS_CM,
				.class_version = CMW_CLASS_VERSION,
				.method = SOF_MAD_METHOD_SEND,
				.tid = 1,
				.attr_id = attr};

	memset(mad, 0, SOF_MAD_LEN);
	sof_mad_hdr_put(mad, &h);
}

static void drain_events(uint32_t *seen)
{
	struct sof_cm_event ev;

	while (read(user_fd, &ev, sizeof(ev)) == (ssize_t)sizeof(ev))
		if (seen && ev.event < 32)
			seen[ev.event]++;
}

static void setup(void)
{
	int sv[2];
	struct sof_cm_channel_rep ch;
	uint8_t mad[SOF_MAD_LEN];
	struct cmw_rep rep;
	struct cm_id *b;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv))
		FAIL("socketpair: %m");
	chan_conn = new_conn(sv[0]);
	user_fd = sv[1];
	if (op(chan_conn, SOF_OP_CM_CHANNEL, NULL, 0, &ch, sizeof(ch)))
		FAIL("CHANNEL");
	chan = ch.channel;
	listener(RDMA_PS_TCP, IBV_QPT_RC, 7471);
	listener(RDMA_PS_UDP, IBV_QPT_UD, 7472);
	id_a = connect_to(RDMA_PS_TCP, IBV_QPT_RC, 7000);
	id_b = connect_to(RDMA_PS_TCP, IBV_QPT_RC, 7001);
	id_u = connect_to(RDMA_PS_UDP, IBV_QPT_UD, 7002);
	/* B: the peer's REP, then our RTU */
	b = get(id_b);
	memset(&rep, 0, sizeof(rep));
	rep.local_comm_id = 0x5eed;
	rep.remote_comm_id = b->local_comm_id;
	rep.local_qpn = 0x222;
	rep.responder_resources = rep.initiator_depth = 2;
	cm_hdr(mad, CMW_REP);
	cmw_rep_put(mad + SOF_MAD_HDR_LEN, &rep);
	mad_from(peer4, mad);
	if (b->state != CM_REP_RCVD || id_op(SOF_OP_CM_ESTABLISH, id_b, 0))
		FAIL("B not established (%s)", cm_state_name(b->state));
}

static void teardown(void)
{
	drain_events(NULL);
	sofd_cm_conn_closed(chan_conn);
	/* lingering ids end with their timers */
	for (int round = 0; round < 64 && !sof_list_empty(&ibcm.timers); round++)
		ibcm_timers_fire(UINT64_MAX);
	while (!sof_list_empty(&cma.lingering))
		cma_free(sof_container_of(cma.lingering.next, struct cm_id, link));
	if (cm_counts.ids || ibcm.comm.count || ibcm.sidr.count || cm_counts.timewait ||
	    cm_counts.channels || !sof_list_empty(&ibcm.sidr_rcvd))
		FAIL("left behind: ids %u comm %u sidr %u timewait %u channels %u", cm_counts.ids,
		     ibcm.comm.count, ibcm.sidr.count, cm_counts.timewait, cm_counts.channels);
	while (sofd_mad_loopback_run()) {
	}
	close(user_fd);
	close(chan_conn->p.fd);
	free(chan_conn);
}

static void cmd_mad(const uint8_t **p, size_t *n)
{
	uint8_t sel, mad[SOF_MAD_LEN];
	size_t take;
	struct cm_id *id;
	uint32_t which[3] = {id_a, id_b, id_u};

	if (!*n)
		return;
	sel = **p;
	(*p)++, (*n)--;
	take = *n < SOF_MAD_LEN ? *n : SOF_MAD_LEN;
	memset(mad, 0, sizeof(mad));
	memcpy(mad, *p, take);
	*p += take;
	*n -= take;
	id = (sel & 3) < 3 ? get(which[sel & 3]) : newest_passive();
	if (id) {
		if (sel & 0x04)
			put32(mad + SOF_MAD_HDR_LEN + 4, id->local_comm_id);
		if (sel & 0x08)
			put32(mad + SOF_MAD_HDR_LEN, id->remote_comm_id);
		if (sel & 0x10)
			put32(mad + SOF_MAD_HDR_LEN, id->sidr_request_id);
	}
	mad_from(sel & 0x20 && id ? id->dgid : (sel & 0x40 ? peer4 : stranger4), mad);
}

static void cmd_timers(void) { ibcm_timers_fire(UINT64_MAX); }

static void cmd_user(uint8_t o)
{
	struct cm_id *p = newest_passive();
	struct sof_cm_conn_req c;

	memset(&c, 0, sizeof(c));
	c.param.qp_num = 0x333;
	c.param.private_data_len = o >> 3;
	switch (o & 7) {
	case 0:
		if (p) {
			c.id = p->handle;
			op(cmd_conn, SOF_OP_CM_ACCEPT, &c, sizeof(c), NULL, 0);
		}
		break;
	case 1:
		if (p) {
			c.id = p->handle;
			op(cmd_conn, SOF_OP_CM_REJECT, &c, sizeof(c), NULL, 0);
		}
		break;
	case 2:
		id_op(SOF_OP_CM_DISCONNECT, id_b, 0);
		break;
	case 3:
		if (!id_op(SOF_OP_CM_DESTROY_ID, id_a, 0))
			id_a = 0;
		break;
	case 4:
		id_op(SOF_OP_CM_ESTABLISH, id_a, 0);
		break;
	case 5:
		if (p)
			id_op(SOF_OP_CM_NOTIFY, p->handle, IBV_EVENT_COMM_EST);
		break;
	case 6:
		if (p) {
			uint32_t h = p->handle;

			if (!id_op(SOF_OP_CM_DESTROY_ID, h, 0) && h == id_a)
				id_a = 0;
		}
		break;
	default:
		id_op(SOF_OP_CM_DISCONNECT, id_a, 0);
		break;
	}
}

/* What one input did, from the end of setup to before teardown. */
struct tally {
	uint32_t seen[32]; /* events by type */
	uint64_t mad_tx, retransmits, mad_drops;
};

static void run(const uint8_t *data, size_t size, struct tally *t)
{
	uint32_t *seen = t ? t->seen : NULL;
	uint64_t tx, retx, drops;

	setup();
	drain_events(NULL);
	tx = sofd.counters[SOF_CNT_mad_tx];
	retx = sofd.counters[SOF_CNT_retransmits];
	drops = sofd.drops[SOF_DROP_mad];
	while (size) {
		uint8_t c = *data++;

		size--;
		switch (c & 3) {
		case 0:
			cmd_mad(&data, &size);
			break;
		case 1:
			cmd_timers();
			break;
		case 2:
			if (size) {
				cmd_user(*data++);
				size--;
			}
			break;
		default:
			sofd_mad_loopback_run();
			break;
		}
		drain_events(seen);
	}
	if (t) {
		t->mad_tx = sofd.counters[SOF_CNT_mad_tx] - tx;
		t->retransmits = sofd.counters[SOF_CNT_retransmits] - retx;
		t->mad_drops = sofd.drops[SOF_DROP_mad] - drops;
	}
	teardown();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	run(data, size, NULL);
	return 0;
}

/* ---- seeds: each checked for the event it was made to cause ------------------------- */

struct seed {
	uint8_t b[1024];
	size_t n;
};

static void add(struct seed *s, const void *p, size_t n)
{
	if (s->n + n > sizeof(s->b))
		FAIL("seed too long");
	memcpy(s->b + s->n, p, n);
	s->n += n;
}

static void seed_mad(struct seed *s, uint8_t sel, const uint8_t *mad)
{
	uint8_t c = 0;

	add(s, &c, 1);
	add(s, &sel, 1);
	add(s, mad, SOF_MAD_LEN);
}

/* What a seed must do, exactly: each event it names as often as it says
 * (and no other), and the MADs sent (retransmissions included), sent
 * again and dropped. */
struct expect {
	struct {
		uint32_t event, n;
	} ev[4];
	uint64_t mad_tx, retransmits, mad_drops;
};

static void seed_check(const char *dir, const char *name, struct seed *s, const struct expect *e)
{
	struct tally t;
	uint32_t want[32] = {0};
	char path[512];
	FILE *f;

	memset(&t, 0, sizeof(t));
	run(s->b, s->n, &t);
	for (size_t i = 0; i < sizeof(e->ev) / sizeof(e->ev[0]); i++)
		want[e->ev[i].event] += e->ev[i].n;
	for (uint32_t ev = 1; ev < 32; ev++)
		if (t.seen[ev] != want[ev])
			FAIL("seed %s: event %u seen %u times, expected %u", name, ev, t.seen[ev],
			     want[ev]);
	if (t.mad_tx != e->mad_tx || t.retransmits != e->retransmits || t.mad_drops != e->mad_drops)
		FAIL("seed %s: MADs sent %llu, again %llu, dropped %llu; expected %llu, %llu, %llu",
		     name, (unsigned long long)t.mad_tx, (unsigned long long)t.retransmits,
		     (unsigned long long)t.mad_drops, (unsigned long long)e->mad_tx,
		     (unsigned long long)e->retransmits, (unsigned long long)e->mad_drops);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(s->b, 1, s->n, f) != s->n || fclose(f))
		FAIL("%s: %m", path);
}

static void write_seeds(const char *dir)
{
	uint8_t mad[SOF_MAD_LEN];
	struct cmw_ip_hdr ip;
	struct cmw_req req;
	struct cmw_rep rep;
	struct cmw_rej rej;
	struct cmw_rtu rtu;
	struct cmw_dreq dreq;
	struct cmw_sidr_req sreq;
	struct cmw_sidr_rep srep;
	struct seed s;
	uint8_t c;

	/* a REQ for the RC listener, accepted, then its RTU */
	memset(&req, 0, sizeof(req));
	req.local_comm_id = 0xc0ffee;
	req.service_id = cmw_ip_service_id(RDMA_PS_TCP & 0xff, 7471);
	req.local_ca_guid = 42;
	req.local_qpn = 0x444;
	req.responder_resources = req.initiator_depth = 2;
	req.remote_cm_response_timeout = req.local_cm_response_timeout = 17;
	req.retry_count = req.rnr_retry_count = 7;
	req.max_cm_retries = 3;
	req.pkey = 0xffff;
	req.mtu = IBV_MTU_1024;
	memcpy(req.local_gid, peer4, 16);
	memcpy(req.remote_gid, local4, 16);
	memset(&ip, 0, sizeof(ip));
	ip.ip_version = 4;
	ip.src_port = 5555;
	memcpy(ip.src, peer4, 16);
	memcpy(ip.dst, local4, 16);
	cmw_ip_hdr_put(req.private_data, &ip);
	memset(&s, 0, sizeof(s));
	cm_hdr(mad, CMW_REQ);
	cmw_req_put(mad + SOF_MAD_HDR_LEN, &req);
	seed_mad(&s, 0x40, mad);
	/* the REQ reaches its user; nothing is answered yet */
	seed_check(dir, "req_listener", &s,
		   &(struct expect){.ev = {{RDMA_CM_EVENT_CONNECT_REQUEST, 1}}});
	seed_mad(&s, 0x40, mad); /* repeated: an MRA */
	c = 2;
	add(&s, &c, 1);
	c = 0; /* accept */
	add(&s, &c, 1);
	memset(&rtu, 0, sizeof(rtu));
	rtu.local_comm_id = 0xc0ffee;
	cm_hdr(mad, CMW_RTU);
	cmw_rtu_put(mad + SOF_MAD_HDR_LEN, &rtu);
	seed_mad(&s, 0x04 | 3 | 0x40, mad);
	/* the repeated REQ gets an MRA, the accept a REP; the RTU establishes */
	seed_check(dir, "req_accept_rtu", &s,
		   &(struct expect){
		       .ev = {{RDMA_CM_EVENT_CONNECT_REQUEST, 1}, {RDMA_CM_EVENT_ESTABLISHED, 1}},
		       .mad_tx = 2});

	/* a REQ for a port nobody listens on: answered with a REJ only */
	memset(&s, 0, sizeof(s));
	req.service_id = cmw_ip_service_id(RDMA_PS_TCP & 0xff, 9999);
	cm_hdr(mad, CMW_REQ);
	cmw_req_put(mad + SOF_MAD_HDR_LEN, &req);
	seed_mad(&s, 0x40, mad);
	seed_check(dir, "req_no_listener", &s, &(struct expect){.mad_tx = 1});

	/* A's REQ rejected */
	memset(&s, 0, sizeof(s));
	memset(&rej, 0, sizeof(rej));
	rej.reason = CMW_REJ_CONSUMER;
	cm_hdr(mad, CMW_REJ);
	cmw_rej_put(mad + SOF_MAD_HDR_LEN, &rej);
	seed_mad(&s, 0x04 | 0 | 0x20, mad);
	seed_check(dir, "rej_active", &s, &(struct expect){.ev = {{RDMA_CM_EVENT_REJECTED, 1}}});

	/* A's REQ answered */
	memset(&s, 0, sizeof(s));
	memset(&rep, 0, sizeof(rep));
	rep.local_comm_id = 0xbeef;
	rep.local_qpn = 0x555;
	cm_hdr(mad, CMW_REP);
	cmw_rep_put(mad + SOF_MAD_HDR_LEN, &rep);
	seed_mad(&s, 0x04 | 0 | 0x20, mad);
	seed_check(dir, "rep_active", &s,
		   &(struct expect){.ev = {{RDMA_CM_EVENT_CONNECT_RESPONSE, 1}}});

	/* B disconnected by its peer */
	memset(&s, 0, sizeof(s));
	memset(&dreq, 0, sizeof(dreq));
	cm_hdr(mad, CMW_DREQ);
	cmw_dreq_put(mad + SOF_MAD_HDR_LEN, &dreq);
	seed_mad(&s, 0x04 | 0x08 | 1 | 0x20, mad);
	/* answered with a DREP */
	seed_check(dir, "dreq_established", &s,
		   &(struct expect){.ev = {{RDMA_CM_EVENT_DISCONNECTED, 1}}, .mad_tx = 1});

	/* B disconnects, the DREQ times out */
	memset(&s, 0, sizeof(s));
	c = 2;
	add(&s, &c, 1);
	add(&s, &c, 1); /* user op 2: disconnect B */
	for (int i = 0; i <= CM_MAX_RETRIES; i++) {
		c = 1;
		add(&s, &c, 1);
	}
	/* B's DREQ, A's REQ and U's SIDR_REQ are each sent CM_MAX_RETRIES
	 * times more; then B is disconnected, A's attempt ends with a REJ
	 * "timeout", and A and U are unreachable */
	seed_check(dir, "dreq_timeout", &s,
		   &(struct expect){
		       .ev = {{RDMA_CM_EVENT_DISCONNECTED, 1}, {RDMA_CM_EVENT_UNREACHABLE, 2}},
		       .mad_tx = 1 + 3 * CM_MAX_RETRIES + 1,
		       .retransmits = 3 * CM_MAX_RETRIES});

	/* U's SIDR answered, and a SIDR_REQ for the UD listener */
	memset(&s, 0, sizeof(s));
	memset(&srep, 0, sizeof(srep));
	srep.qpn = 0x666;
	srep.qkey = RDMA_UDP_QKEY;
	cm_hdr(mad, CMW_SIDR_REP);
	cmw_sidr_rep_put(mad + SOF_MAD_HDR_LEN, &srep);
	seed_mad(&s, 0x10 | 2 | 0x20, mad);
	seed_check(dir, "sidr_rep", &s, &(struct expect){.ev = {{RDMA_CM_EVENT_ESTABLISHED, 1}}});
	memset(&s, 0, sizeof(s));
	memset(&sreq, 0, sizeof(sreq));
	sreq.request_id = 77;
	sreq.service_id = cmw_ip_service_id(RDMA_PS_UDP & 0xff, 7472);
	cmw_ip_hdr_put(sreq.private_data, &ip);
	cm_hdr(mad, CMW_SIDR_REQ);
	cmw_sidr_req_put(mad + SOF_MAD_HDR_LEN, &sreq);
	seed_mad(&s, 0x40, mad);
	seed_check(dir, "sidr_req_listener", &s,
		   &(struct expect){.ev = {{RDMA_CM_EVENT_CONNECT_REQUEST, 1}}});

	/* A's REQ times out: UNREACHABLE */
	memset(&s, 0, sizeof(s));
	for (int i = 0; i <= CM_MAX_RETRIES; i++) {
		c = 1;
		add(&s, &c, 1);
	}
	/* A's REQ and U's SIDR_REQ sent CM_MAX_RETRIES times more, then A's
	 * REJ "timeout"; both unreachable */
	seed_check(dir, "req_timeout", &s,
		   &(struct expect){.ev = {{RDMA_CM_EVENT_UNREACHABLE, 2}},
				    .mad_tx = 2 * CM_MAX_RETRIES + 1,
				    .retransmits = 2 * CM_MAX_RETRIES});
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *seeds = getenv("SOF_FUZZ_CM_SEEDS");

	(void)argc;
	(void)argv;
	fuzz_daemon_start(IBV_MTU_1024, &local4, 1);
	cmd_conn = new_conn(-1);
	if (seeds) {
		write_seeds(seeds);
		exit(0);
	}
	return 0;
}
