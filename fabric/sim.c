/*
 * ibsim's client protocol on the fabric (`--ibsim`): unmodified programs
 * run with Debian's libumad2sim.so preloaded (OpenSM, infiniband-diags)
 * attach to a simulated HCA of the fabric as they attach to one of ibsim,
 * and their MADs enter and leave the fabric at that HCA's port 1. This is
 * the way to drive the fabric with a real subnet manager before a host's
 * own InfiniBand port and libibumad take it; the wire format below is
 * ibsim's (its ibsim.h, read for the facts): Unix datagram sockets in the
 * abstract namespace "BASE:ctl" (control: CONNECT, GET_* of the node's
 * NodeInfo/PortInfo/P_Keys, SET_ISSM, DISCONNECT) and "BASE:outN" for
 * client N, whose own sockets are "BASE:ctlPID" and "BASE:inPID"; a MAD
 * travels as struct sim_request (LIDs and QPs in network order).
 *
 * A client's request (and trap) gets its client number in TID bits 48..63,
 * as ibsim does, so that the response (or TrapRepress) finds it;
 * unsolicited MADs (requests, traps) for the node go to its SM client, as
 * ibsim's do.
 */
#include "fabric.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#define SIM_MAGIC 0xdeadbeef
#define SIM_CTL_DATA 64

enum {
	CTL_ERROR,
	CTL_CONNECT,
	CTL_DISCONNECT,
	CTL_GET_PORT,
	CTL_GET_VENDOR,
	CTL_GET_GID,
	CTL_GET_GUID,
	CTL_GET_NODEINFO,
	CTL_GET_PORTINFO,
	CTL_SET_ISSM,
	CTL_GET_PKEYS
};

struct sim_ctl {
	uint32_t magic, clientid, type, len;
	uint8_t data[SIM_CTL_DATA];
};

struct sim_request {
	uint32_t dlid, slid, dqp, sqp, status;
	uint64_t length;
	uint8_t mad[256];
};
_Static_assert(sizeof(struct sim_request) == FAB_SIM_REQ_LEN, "ibsim's struct sim_request");

struct sim_client_info {
	uint32_t id, qp, issm;
	char nodeid[32];
};

/* the abstract name "BASE:WHAT" or "BASE:WHATN" (n >= 0) */
static socklen_t sim_name(struct sockaddr_un *sun, const char *what, const char *base, int n)
{
	int len;

	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	if (n >= 0)
		len = snprintf(sun->sun_path + 1, sizeof(sun->sun_path) - 1, "%s:%s%d", base, what,
			       n);
	else
		len = snprintf(sun->sun_path + 1, sizeof(sun->sun_path) - 1, "%s:%s", base, what);
	/* libumad2sim's names count their terminating NUL */
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)len + 1);
}

int fab_sim_open(struct fabric *f, const char *base)
{
	struct sockaddr_un sun;
	socklen_t len;

	snprintf(f->sim_base, sizeof(f->sim_base), "%s", base);
	f->sim_ctl = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	len = sim_name(&sun, "ctl", base, -1);
	if (f->sim_ctl < 0 || bind(f->sim_ctl, (struct sockaddr *)&sun, len))
		return -errno;
	for (int i = 0; i < FAB_SIM_CLIENTS; i++) {
		struct fab_sim_client *c = &f->sim[i];

		c->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		len = sim_name(&sun, "out", base, i);
		if (c->fd < 0 || bind(c->fd, (struct sockaddr *)&sun, len))
			return -errno;
	}
	return 0;
}

static struct fab_node *default_node(struct fabric *f)
{
	for (unsigned i = 0; i < f->nnodes; i++)
		if (f->nodes[i]->m->type == SOF_NODE_CA && !f->nodes[i]->real)
			return f->nodes[i];
	return NULL;
}

/* one attribute of the node's own SMA, as if asked on port 1. It is a
 * host reading its own port (a driver's sysfs, not an SMP on the wire),
 * so the M_Key the question carries to pass must not stop the port's
 * M_Key lease timer (IBA 14.2.4.2): every libumad2sim program started
 * on the node asks, and diagnostics run there every second held a port
 * whose lease should free it from a gone SM's key for good. */
static void own_attr(struct fab_node *n, uint16_t attr, uint32_t mod, uint8_t *out)
{
	struct sof_port *m = &n->m->port[1];
	uint64_t lease_end = m->mkey_lease_end;
	uint8_t mad[256];

	sof_smp_init(mad, false, SOF_METHOD_GET, attr, mod, 0, m->mkey);
	if (sof_sma_process(n->m, 1, mad, sizeof(mad), NULL) == SOF_SMA_REPLY)
		memcpy(out, mad + SOF_SMP_OFF_DATA, SIM_CTL_DATA);
	else
		memset(out, 0, SIM_CTL_DATA);
	m->mkey_lease_end = lease_end;
}

static void set_issm(struct fab_sim_client *c, bool issm)
{
	c->issm = issm;
	if (issm)
		c->node->m->port[1].cap_mask |= SOF_CAP_IS_SM;
	else
		c->node->m->port[1].cap_mask &= ~SOF_CAP_IS_SM;
}

static void sim_drop(struct fab_sim_client *c)
{
	struct sockaddr_un none = {.sun_family = AF_UNSPEC};

	set_issm(c, false);
	c->nout = 0;
	if (!--c->node->sim_clients)
		c->node->m->sm_agent = false;
	c->pid = 0;
	c->node = NULL;
	connect(c->fd, (struct sockaddr *)&none, sizeof(none.sun_family)); /* dissolve */
}

static void ctl_connect(struct fabric *f, struct sim_ctl *ctl)
{
	struct sim_client_info info;
	struct fab_node *n = NULL;
	struct sockaddr_un sun;
	int i;

	memcpy(&info, ctl->data, sizeof(info));
	info.nodeid[sizeof(info.nodeid) - 1] = '\0';
	/* a program that died without DISCONNECT leaves its slot: free the
	 * slots of processes that are gone */
	for (i = 0; i < FAB_SIM_CLIENTS; i++)
		if (f->sim[i].pid && kill((pid_t)f->sim[i].pid, 0) && errno == ESRCH)
			sim_drop(&f->sim[i]);
	for (i = 0; i < FAB_SIM_CLIENTS && f->sim[i].pid; i++)
		;
	if (info.nodeid[0])
		n = fab_find(f, info.nodeid);
	if (!n)
		n = default_node(f);
	if (i == FAB_SIM_CLIENTS || !n || n->real || n->m->type != SOF_NODE_CA ||
	    connect(f->sim[i].fd, (struct sockaddr *)&sun,
		    sim_name(&sun, "in", f->sim_base, (int)info.id))) {
		ctl->type = CTL_ERROR;
		return;
	}
	f->sim[i].pid = info.id;
	f->sim[i].node = n;
	f->sim[i].qp = info.qp;
	set_issm(&f->sim[i], info.issm);
	n->sim_clients++;
	n->m->sm_agent = true; /* responses and SMInfo go to the clients */
	info.id = (uint32_t)i;
	memset(info.nodeid, 0, sizeof(info.nodeid));
	memcpy(info.nodeid, n->name, strnlen(n->name, sizeof(info.nodeid) - 1));
	memcpy(ctl->data, &info, sizeof(info));
}

void fab_sim_ctl(struct fabric *f)
{
	struct sockaddr_un from;
	socklen_t fl = sizeof(from);
	struct sim_ctl ctl;
	struct fab_sim_client *c;

	if (recvfrom(f->sim_ctl, &ctl, sizeof(ctl), 0, (struct sockaddr *)&from, &fl) !=
		(ssize_t)sizeof(ctl) ||
	    ctl.magic != SIM_MAGIC)
		return;
	c = ctl.clientid < FAB_SIM_CLIENTS ? &f->sim[ctl.clientid] : NULL;
	if (ctl.type != CTL_CONNECT && (!c || !c->pid)) {
		ctl.type = CTL_ERROR;
	} else if (ctl.type == CTL_CONNECT) {
		ctl_connect(f, &ctl);
	} else if (ctl.type == CTL_DISCONNECT) {
		sim_drop(c);
	} else if (ctl.type == CTL_GET_PORT) {
		uint16_t lid = c->node->m->port[1].lid;

		memset(ctl.data, 0, sizeof(ctl.data));
		memcpy(ctl.data, &lid, 2);
		ctl.data[2] = c->node->m->port[1].state;
	} else if (ctl.type == CTL_GET_VENDOR) {
		struct {
			uint32_t vendor, part, hw;
			uint64_t fw;
		} v = {c->node->m->vendor_id, c->node->m->device_id, c->node->m->revision, 1};

		memset(ctl.data, 0, sizeof(ctl.data));
		memcpy(ctl.data, &v, sizeof(v));
	} else if (ctl.type == CTL_GET_GID || ctl.type == CTL_GET_GUID) {
		memset(ctl.data, 0, sizeof(ctl.data));
		if (ctl.type == CTL_GET_GID) {
			sof_put64(ctl.data, c->node->m->port[1].gid_prefix);
			sof_put64(ctl.data + 8, c->node->m->port[1].guid);
		} else {
			sof_put64(ctl.data, c->node->m->node_guid);
		}
	} else if (ctl.type == CTL_GET_NODEINFO) {
		own_attr(c->node, SOF_ATTR_NODE_INFO, 0, ctl.data);
	} else if (ctl.type == CTL_GET_PORTINFO) {
		own_attr(c->node, SOF_ATTR_PORT_INFO, 1, ctl.data);
	} else if (ctl.type == CTL_GET_PKEYS) {
		own_attr(c->node, SOF_ATTR_PKEY_TABLE, 0, ctl.data);
	} else if (ctl.type == CTL_SET_ISSM) {
		uint32_t issm;

		memcpy(&issm, ctl.data, sizeof(issm));
		set_issm(c, issm != 0);
	} else {
		ctl.type = CTL_ERROR;
	}
	sendto(f->sim_ctl, &ctl, sizeof(ctl), 0, (struct sockaddr *)&from, fl);
}

/* The MADs waiting for client c, in one sendmmsg: its reader thread
 * (libumad2sim's) wakes once for all the answers of a turn instead of
 * once for each, and finds them all queued. The socket holds few
 * datagrams (net.unix.max_dgram_qlen, 10 by default) and the reader may
 * be off its CPU: when it is full the fabric waits for room, as ibsim's
 * blocking send does, up to SEND_WAIT_MS for the whole batch (then what
 * is left is lost, counted), instead of losing MADs at once, which cost an
 * SM with a window of requests its answers. */
#define SEND_WAIT_MS 1000

static void sim_flush(struct fabric *f, struct fab_sim_client *c)
{
	struct mmsghdr m[FAB_SIM_OUTQ];
	struct iovec v[FAB_SIM_OUTQ];
	unsigned sent = 0;

	for (unsigned i = 0; i < c->nout; i++) {
		v[i] = (struct iovec){.iov_base = c->out[i], .iov_len = FAB_SIM_REQ_LEN};
		m[i] = (struct mmsghdr){.msg_hdr = {.msg_iov = &v[i], .msg_iovlen = 1}};
	}
	for (int waited = 0; sent < c->nout;) {
		struct pollfd pfd = {.fd = c->fd, .events = POLLOUT};
		int n = sendmmsg(c->fd, m + sent, c->nout - sent, 0);

		if (n > 0) {
			sent += (unsigned)n;
			continue;
		}
		if (errno == ECONNREFUSED || errno == ENOTCONN) {
			sim_drop(c); /* the program is gone */
			return;
		}
		if (errno != EAGAIN || waited >= SEND_WAIT_MS) {
			f->st.sim_lost += c->nout - sent;
			break;
		}
		poll(&pfd, 1, 5);
		waited += 5;
	}
	f->st.sim_to_clients += sent;
	c->nout = 0;
}

void fab_sim_flush(struct fabric *f)
{
	for (int i = 0; i < FAB_SIM_CLIENTS; i++)
		if (f->sim[i].nout)
			sim_flush(f, &f->sim[i]);
}

bool fab_sim_deliver(struct fabric *f, struct fab_node *n, uint16_t slid, uint32_t dqp,
		     uint32_t sqp, const uint8_t *mad)
{
	/* a TrapRepress answers a client's trap as a response its request */
	bool response = (mad[3] & SOF_METHOD_RESP_BIT) || mad[3] == SOF_METHOD_TRAP_REPRESS;
	struct fab_sim_client *c = NULL;
	struct sim_request req;
	unsigned id = (unsigned)(sof_get64(mad + 8) >> 48);

	if (!n->sim_clients)
		return false;
	if (response && id < FAB_SIM_CLIENTS && f->sim[id].pid && f->sim[id].node == n)
		c = &f->sim[id];
	for (int i = 0; !c && i < FAB_SIM_CLIENTS; i++) {
		struct fab_sim_client *k = &f->sim[i];

		if (!k->pid || k->node != n)
			continue;
		if (dqp > 1 ? k->qp == dqp : (!response && k->issm))
			c = k;
	}
	if (!c) {
		f->st.sim_unclaimed++;
		return true; /* for a client that is gone: dropped */
	}
	if (c->nout == FAB_SIM_OUTQ)
		sim_flush(f, c);
	if (!c->pid)
		return true; /* gone */
	memset(&req, 0, sizeof(req));
	req.dlid = htons(n->m->port[1].lid);
	req.slid = htons(slid);
	req.dqp = htonl(dqp);
	req.sqp = htonl(sqp);
	req.length = htobe64(256);
	memcpy(req.mad, mad, 256);
	memcpy(c->out[c->nout++], &req, sizeof(req));
	if (!f->sim_batch)
		sim_flush(f, c);
	return true;
}

/* a MAD from client c: its node sends it from port 1 */
bool fab_sim_input(struct fabric *f, struct fab_sim_client *c)
{
	struct sim_request req;
	struct fab_node *n = c->node;
	uint16_t dlid, slid, own;
	uint32_t dqp, sqp;
	uint8_t pkt[FAB_MAD_PKT_LEN];

	ssize_t got = recv(c->fd, &req, sizeof(req), 0);

	if (got < 0 || !c->pid)
		return false;
	if (got != (ssize_t)sizeof(req))
		return true; /* not a request: dropped */
	f->st.sim_from_clients++;
	dlid = ntohs((uint16_t)req.dlid);
	slid = ntohs((uint16_t)req.slid);
	dqp = ntohl(req.dqp) & 0xffffff;
	sqp = ntohl(req.sqp) & 0xffffff;
	own = n->m->port[1].lid;
	/* a request's TID gets the client's number; a response and a
	 * TrapRepress keep the TID of what they answer (IBA 13.4.8.3) */
	if (!(req.mad[3] & SOF_METHOD_RESP_BIT) && req.mad[3] != SOF_METHOD_TRAP_REPRESS) {
		uint64_t tid = sof_get64(req.mad + 8);

		sof_put64(req.mad + 8, (tid & 0x0000ffffffffffffull) | (uint64_t)(c - f->sim)
									   << 48);
	}
	if (!slid)
		slid = dlid == 0xffff ? 0xffff : own;
	if (dqp == 0 && req.mad[1] == SOF_MCLASS_SMP_DR) {
		struct sof_dr_next nx;

		switch (sof_smp_dr_step(n->m, req.mad, 0, dlid != 0xffff, 0, &nx)) {
		case SOF_DR_LOCAL:
			fab_node_local_smp(f, n, req.mad, dlid != 0xffff, slid);
			return true;
		case SOF_DR_OUT_PORT:
			dlid = slid = 0xffff;
			break;
		case SOF_DR_OUT_LID:
			dlid = nx.lid;
			slid = own;
			break;
		case SOF_DR_DISCARD:
			f->st.smp_drop++;
			return true;
		}
	} else if (dlid == own || dlid == 0xffff) {
		/* for this node itself: its SMA, PMA, congestion control
		 * agent, or another client */
		if (dqp == 0) {
			fab_node_local_smp(f, n, req.mad, true, own);
			return true;
		}
		n->m->now_ms = fab_now() / 1000000u;
		switch (sof_gsi_agent_process(n->m, 1, req.mad, 256)) {
		case SOF_SMA_PASS:
			fab_sim_deliver(f, n, own, dqp, sqp, req.mad);
			break;
		case SOF_SMA_REPLY:
			fab_sim_deliver(f, n, own, sqp, 1, req.mad);
			break;
		default:
			break;
		}
		return true;
	}
	fab_mad_pkt(pkt, dlid, slid, 0, 0xffff, dqp, sqp, dqp ? FAB_GSI_QKEY : 0, req.mad);
	fab_xmit(f, n, 1, pkt, sizeof(pkt), false);
	fab_run(f);
	return true;
}
