/*
 * libFuzzer target: libibumad's requests to the daemon (daemon/ops_umad.c)
 * and the MADs its agents receive (mad/mad.c, mad/rmpp.c), through the
 * daemon's own handlers.
 *
 * Each input starts from the same fresh state: port A (a connection of
 * the daemon's user) with agent 0 (vendor class 0x31, OUI 00:14:05, RMPP,
 * Gets and Sets), agent 1 (class 0x32, no RMPP) and agent 2 (SubnDR on
 * QP0: an SMI is attached), and port B (user nobody), whose QP0 agent is
 * refused. This host's GID is 10.0.0.1, so MADs sent to it
 * come back through the loopback queue. The input is a list of commands:
 *
 *   0 SEL OP LEN[2] BYTES  a request on port A (SEL bit 0: B) of op
 *                          UMAD_CA + OP % 5 with LEN bytes; SEL bit 1: a
 *                          SEND whose header is made valid (agent SEL
 *                          bit 2, the local GID, len = what follows)
 *   1 SEL MAD[256]         a MAD from a peer (SEL bit 0: from this host's
 *                          own GID); SEL bit 1: the TID of the last MAD
 *                          port A received
 *   2                      the MAD layer's time-outs that are due
 *   3                      the loopback MADs are delivered
 *   4 SEL                  port A (SEL bit 0: B) closes and opens again
 *   5 SEL MAD[256]         an SMP from the SMI of an InfiniBand port (a
 *                          stand-in that sends nowhere is attached), as 1
 *
 * Then both ports close (the program died): no port, agent or waiting
 * send may remain.
 *
 * FUZZ_SOURCES: tests/fuzz/fuzz_umad.c cm/cma_id.c cm/cma_addr.c cm/cma_event.c cm/cma_resolve.c cm/cma_listen.c cm/cma_conn.c cm/cma_mcast.c cm/cma_upcall.c cm/cma_ops.c cm/cma_ib.c mad/sa_rec.c cm/cm_base.c daemon/cm_host.c cm/ibcm_conn.c cm/ibcm_send.c cm/ibcm_recv.c cm/ibcm_timer.c cm/cm_wire.c mad/mad.c transport/tp.c transport/udp.c transport/recv.c transport/timer.c transport/qp.c transport/mr.c transport/requester.c transport/completer.c transport/responder.c transport/rwqe.c transport/takeover.c transport/resp_shared.c transport/mcast.c transport/wire.c transport/icrc.c daemon/ops.c daemon/ops_mr.c daemon/ops_exec.c daemon/ops_import.c daemon/registry.c daemon/conn.c daemon/device.c daemon/tp_host.c daemon/steer.c common/util.c common/hmap.c common/cqring.c common/grh.c common/gid.c common/wr.c daemon/ops_xrc.c daemon/ops_mw.c daemon/raw.c daemon/ops_srq.c transport/sack.c transport/iblink.c transport/ib_wire.c daemon/ib.c daemon/ib_sma.c mad/sma.c mad/sma_port.c mad/pma.c mad/cc.c mad/rmpp.c daemon/ops_umad.c transport/ibpkt.c transport/ibdirect.c
 * FUZZ_INCLUDES: cm mad transport daemon common
 */
#include "mad.h"
#include "sofd.h"
#include "sof_gid.h"
#include "sof_umad_proto.h"

#include <arpa/inet.h>
#include <infiniband/umad.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define FUZZ_NAME "fuzz_umad"
#include "fuzz_daemon.h"

static const uint8_t local4[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1};
static const uint8_t peer4[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2};

struct port {
	struct sofd_conn *c;
	int user_fd; /* the program's end of the MAD socket */
	uid_t uid;
};

static struct port ports[2];
static uint8_t last_tid[8];

static struct sofd_conn *new_conn(uid_t uid)
{
	struct sofd_conn *c = calloc(1, sizeof(*c));

	if (!c)
		FAIL("calloc");
	c->p.kind = SOFD_POLL_CONN;
	c->p.fd = -1;
	c->async_fd = c->db_fd = -1;
	c->pmem_fd = c->fence_fd = -1;
	c->pid = getpid();
	c->uid = uid;
	sof_list_init(&c->pds);
	sof_list_init(&c->mrs);
	sof_list_init(&c->cqs);
	sof_list_init(&c->srqs);
	sof_list_init(&c->qps);
	sof_list_init(&c->mws);
	return c;
}

/* One request as conn.c would hand it over; the descriptors of its
 * answer: the MAD socket of OPEN kept in *fd, the others closed. */
static int request(struct port *p, uint32_t op, const void *data, size_t len, void *rep,
		   size_t replen)
{
	struct sofd_req rq = {.c = p->c, .via = p->c, .op = op, .data = data, .len = len};
	struct sofd_rep rp = {.nfds = 0};
	int err = sofd_dispatch(&rq, &rp);

	for (int i = 0; i < rp.nfds; i++) {
		if (op == SOF_OP_UMAD_OPEN && !err && p->user_fd < 0)
			p->user_fd = rp.fds[i];
		else if (rp.close_fds[i])
			close(rp.fds[i]);
	}
	if (!err && rep)
		memcpy(rep, rp.data, replen < rp.len ? replen : rp.len);
	return err;
}

/* What the program would read: the TID of the last MAD port A got. */
static void drain(struct port *p)
{
	static uint8_t buf[sizeof(struct ib_user_mad) + SOF_MAD_MSG_MAX];
	ssize_t n;

	if (p->user_fd < 0)
		return;
	while ((n = recv(p->user_fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
		const struct ib_user_mad *h = (const void *)buf;

		if ((size_t)n < sizeof(*h) || h->length != (uint32_t)n || h->agent_id >= 32)
			FAIL("a malformed record on the MAD socket (%zd bytes)", n);
		if ((size_t)n >= sizeof(*h) + 16 && p == &ports[0])
			memcpy(last_tid, buf + sizeof(*h) + 8, 8);
	}
}

static void port_open(struct port *p)
{
	struct sof_umad_open_req o = {.portnum = 1};

	p->c = new_conn(p->uid);
	p->user_fd = -1;
	if (request(p, SOF_OP_UMAD_OPEN, &o, sizeof(o), NULL, 0) || p->user_fd < 0)
		FAIL("UMAD_OPEN");
}

static void port_close(struct port *p)
{
	sofd_umad_conn_closed(p->c);
	free(p->c);
	p->c = NULL;
	drain(p);
	close(p->user_fd);
	p->user_fd = -1;
}

static void reg(struct port *p, uint8_t cls, uint8_t rmpp, uint64_t methods)
{
	struct sof_umad_reg_req r = {.qpn = 1,
				     .mgmt_class = cls,
				     .class_version = 1,
				     .rmpp_version = rmpp,
				     .oui = 0x001405,
				     .method_mask = {methods, 0}};
	struct sof_umad_agent a;

	if (request(p, SOF_OP_UMAD_REGISTER, &r, sizeof(r), &a, sizeof(a)))
		FAIL("UMAD_REGISTER 0x%x", cls);
}

static void setup(void)
{
	struct sof_umad_reg_req r = {.qpn = 0, .mgmt_class = 0x81, .class_version = 1};

	ports[0].uid = getuid();
	ports[1].uid = 65534;
	port_open(&ports[0]);
	port_open(&ports[1]);
	reg(&ports[0], 0x31, 1, 1u << 1 | 1u << 2);
	reg(&ports[0], 0x32, 0, 0);
	r.method_mask[0] = 1u << 1 | 1u << 2;
	if (request(&ports[1], SOF_OP_UMAD_REGISTER, &r, sizeof(r), NULL, 0) != -EACCES)
		FAIL("another user's SMP agent was not refused");
	r.qpn = 0;
	if (request(&ports[0], SOF_OP_UMAD_REGISTER, &r, sizeof(r), NULL, 0))
		FAIL("the SMP agent was refused");
	memset(last_tid, 0, sizeof(last_tid));
}

static int smi_send(const struct sofd_mad_addr *to, const uint8_t *smp)
{
	(void)to;
	if (smp[1] != 0x01 && smp[1] != 0x81)
		FAIL("a MAD of class 0x%x left through QP0", smp[1]);
	return 0;
}

static const struct sofd_mad_smi_ops smi_ops = {.send = smi_send};

static void cmd_request(const uint8_t **d, size_t *n)
{
	uint8_t sel, op, buf[4096 + sizeof(struct sof_umad_send_req)];
	size_t len;
	struct port *p;

	if (*n < 4)
		return;
	sel = (*d)[0];
	op = (*d)[1];
	len = (size_t)((*d)[2] | (*d)[3] << 8) % sizeof(buf);
	*d += 4;
	*n -= 4;
	if (len > *n)
		len = *n;
	memset(buf, 0, sizeof(buf));
	memcpy(buf, *d, len);
	*d += len;
	*n -= len;
	p = &ports[sel & 1];
	if (sel & 2) {
		struct sof_umad_send_req *s = (void *)buf;
		ib_mad_addr_t a = {0};

		op = SOF_OP_UMAD_SEND - SOF_OP_UMAD_CA;
		if (len < sizeof(*s))
			len = sizeof(*s);
		s->agent_id = sel >> 2 & 3;
		s->len = (uint32_t)(len - sizeof(*s));
		s->timeout_ms %= 50;
		s->retries %= 3;
		a.grh_present = 1;
		a.qpn = htonl(1);
		memcpy(a.gid, local4, 16);
		memcpy(s->addr, &a, sizeof(a));
	}
	(void)request(p, SOF_OP_UMAD_CA + op % 5u, buf, len, NULL, 0);
}

static void cmd_mad(const uint8_t **d, size_t *n, bool smp)
{
	struct sofd_mad_addr from = {.remote_qpn = 1, .remote_qkey = SOF_GSI_QKEY, .pkey = 0xffff};
	uint8_t mad[SOF_MAD_LEN], sel;

	if (*n < 1 + SOF_MAD_LEN)
		return;
	sel = (*d)[0];
	memcpy(mad, *d + 1, SOF_MAD_LEN);
	*d += 1 + SOF_MAD_LEN;
	*n -= 1 + SOF_MAD_LEN;
	if (sel & 2)
		memcpy(mad + 8, last_tid, 8);
	memcpy(from.sgid, local4, 16);
	memcpy(from.dgid, sel & 1 ? local4 : peer4, 16);
	if (smp)
		sofd_mad_smi_input(mad, SOF_MAD_LEN, &from);
	else
		sofd_mad_input(mad, SOF_MAD_LEN, &from);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	setup();
	while (size) {
		uint8_t c = data[0] % 6;

		data++;
		size--;
		switch (c) {
		case 0:
			cmd_request(&data, &size);
			break;
		case 1:
		case 5:
			cmd_mad(&data, &size, c == 5);
			break;
		case 2:
			sofd_mad_timers_run();
			break;
		case 3:
			sofd_mad_loopback_run();
			break;
		case 4:
			if (size) {
				struct port *p = &ports[data[0] & 1];

				data++;
				size--;
				port_close(p);
				port_open(p);
			}
			break;
		}
		drain(&ports[0]);
		drain(&ports[1]);
	}
	port_close(&ports[0]);
	port_close(&ports[1]);
	while (sofd_mad_loopback_run())
		;
	if (sofd_umad_ports() || sofd_umad_agents() || sofd_mad_pending())
		FAIL("left behind: %u ports, %u agents, %u waiting sends", sofd_umad_ports(),
		     sofd_umad_agents(), sofd_mad_pending());
	return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_daemon_start(IBV_MTU_1024, &local4, 1);
	sofd_mad_smi_attach(&smi_ops);
	return 0;
}
