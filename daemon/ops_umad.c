/*
 * libibumad's MAD ports (common/sof_umad_proto.h): the daemon's side of
 * what the kernel's ib_umad does for /dev/infiniband/umadN.
 *
 * A connection that sends UMAD_OPEN becomes a MAD port: it gets a
 * socket the daemon writes the port's MADs into (one record each,
 * struct ib_user_mad then the MAD), and carries REGISTER, UNREGISTER and
 * SEND. Agents are the MAD layer's (mad/mad.h), numbered 0..31 per port
 * as the kernel numbers them; the port's struct is their context, so no
 * other port can use, send through or unregister them. QP0 agents ask
 * for root or the daemon's user (as the mode of the kernel's umad and
 * issm device files) and then for a port with an SMI: only sofib0's has
 * one (a RoCE port: -EPROTONOSUPPORT, the kernel's answer). The daemon's
 * CAs are sof0 and, with an InfiniBand port, sofib0 (UMAD_CA's index). A MAD that does not fit
 * the port's socket is dropped and counted (the program does not read).
 * When the connection closes, every agent goes with what it had waiting.
 *
 * Every request is checked: its length, the agent, the address (the
 * source GID index must name a GID of the port, a RoCE MAD needs its
 * GRH), the MAD (mad.c).
 */
#include "sofd.h"

#include "mad.h"
#include "sof_umad_proto.h"
#include "tp_ib.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/umad.h>
#include <infiniband/verbs.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

_Static_assert(sizeof(ib_mad_addr_t) == SOF_UMAD_ADDR_LEN, "ib_mad_addr layout");
_Static_assert(sizeof(struct ib_user_mad) == 64, "ib_user_mad layout (ABI 5)");

/* the send buffer of a port's socket: MADs wait there for the program;
 * one record must hold the largest RMPP message (SOF_MAD_MSG_MAX). Set by
 * SO_SNDBUFFORCE when the daemon may, else SO_SNDBUF (wmem_max caps it) */
#define UMAD_SNDBUF (SOF_MAD_MSG_MAX + (64 << 10))

struct sofd_umad {
	struct sofd_conn *c;
	uint32_t ca; /* SOF_UMAD_CA_ROCE or SOF_UMAD_CA_IB */
	uint32_t portnum;
	int fd; /* our end of the MAD socket */
	uint32_t ids[SOF_UMAD_MAX_AGENTS]; /* the MAD layer's agent, 0: free */
	uint32_t nagents;
	uint32_t qp0; /* the slots holding QP0 agents */
};

static uint32_t nports, nagents_all;

uint32_t sofd_umad_ports(void) { return nports; }
uint32_t sofd_umad_agents(void) { return nagents_all; }

/* ---- the device as sysfs shows it ------------------------------------------------- */

/* sofib0 as tools/present.c shows it: one port, InfiniBand, its LID,
 * SM LID and state as the subnet manager set them (tp_ib.h). IsSM is set
 * while a process holds the port's issm open (ib_sma.c). */
static void fill_ib(struct sof_umad_ca_rep *r)
{
	const struct tp_ib_attr *a = tp_ib_attr();
	struct sof_umad_port_info *p = &r->ports[0];
	uint32_t n = 0;

	snprintf(r->name, sizeof(r->name), "sofib0");
	r->node_guid = htobe64(a->node_guid);
	r->sys_guid = htobe64(a->node_guid);
	p->portnum = 1;
	p->base_lid = a->lid;
	p->lmc = a->lmc;
	p->sm_lid = a->sm_lid;
	p->sm_sl = a->sm_sl;
	p->state = a->state;
	p->phys_state = a->phys_state;
	p->rate = 100;
	/* IsSM (bit 1) while an SM runs here; IsTrapSupported (5),
	 * IsSMDisabled no; IsCommunicationManagementSupported (16) */
	p->capmask = 0x00010020u | (sofd_ib_is_sm() ? 0x2u : 0);
	p->gid_prefix = htobe64(a->subnet_prefix);
	p->port_guid = htobe64(a->port_guid);
	snprintf(p->link_layer, sizeof(p->link_layer), "InfiniBand");
	/* the table as the SM set it, by index (a MAD's pkey_index names
	 * an entry), up to its last non-empty entry */
	for (uint32_t i = 0; i < TP_IB_PKEYS && i < SOF_UMAD_MAX_PKEYS; i++) {
		p->pkeys[i] = a->pkeys[i];
		if (a->pkeys[i])
			n = i + 1;
	}
	p->npkeys = n;
}

static int fill_ca(struct sof_umad_ca_rep *r, uint32_t index)
{
	const struct sof_devinfo *d = &sofd.dev;
	struct sof_umad_port_info *p = &r->ports[0];

	if (index >= SOF_UMAD_MAX_CAS || (index == SOF_UMAD_CA_IB && !sofd_ib_present()))
		return -ENODEV;
	memset(r, 0, sizeof(*r));
	r->node_type = 1; /* CA */
	snprintf(r->fw_ver, sizeof(r->fw_ver), "%.19s", d->fw_ver);
	snprintf(r->ca_type, sizeof(r->ca_type), "softofed");
	snprintf(r->hw_ver, sizeof(r->hw_ver), "0x%x", d->hw_ver);
	r->nports = 1;
	if (index == SOF_UMAD_CA_IB) {
		fill_ib(r);
		return 0;
	}
	snprintf(r->name, sizeof(r->name), "%.19s", d->name);
	r->node_guid = d->node_guid;
	r->sys_guid = d->sys_image_guid;
	/* port 1, RoCEv2: no LID, no SM; what tools/present.c writes */
	p->portnum = 1;
	p->state = d->port_state;
	p->phys_state = d->port_state == IBV_PORT_ACTIVE ? 5 : 3; /* LinkUp / Disabled */
	p->rate = 100;
	p->capmask = 0x04010000u; /* IsCommunicationManagementSupported, IsIPBasedGIDs */
	memcpy(&p->gid_prefix, d->gids[0].gid, 8);
	memcpy(&p->port_guid, d->gids[0].gid + 8, 8);
	snprintf(p->link_layer, sizeof(p->link_layer), "Ethernet");
	p->npkeys = 1;
	p->pkeys[0] = 0xffff;
	return 0;
}

/* ---- delivery to the program --------------------------------------------------------- */

static int gid_index(const uint8_t gid[16])
{
	for (uint32_t i = 0; i < sofd.dev.num_gids && i < SOF_MAX_GIDS; i++)
		if (!memcmp(sofd.dev.gids[i].gid, gid, 16))
			return (int)i;
	return 0;
}

/* A MAD layer address as umad.h's, seen from this port. */
static void to_umad_addr(const struct sofd_mad_addr *a, ib_mad_addr_t *u)
{
	memset(u, 0, sizeof(*u));
	u->qpn = htobe32(a->remote_qpn);
	u->qkey = htobe32(a->remote_qkey);
	u->lid = htobe16(a->lid);
	u->sl = a->sl;
	u->path_bits = a->path_bits;
	u->grh_present = !a->no_grh; /* RoCE: every MAD has its GRH */
	u->gid_index = (uint8_t)gid_index(a->sgid);
	u->hop_limit = a->hop_limit;
	u->traffic_class = a->traffic_class;
	memcpy(u->gid, a->dgid, 16);
	u->flow_label = htobe32(a->flow_label);
	u->pkey_index = 0;
	if (a->ib) /* the index of the MAD's P_Key in the port's table */
		for (unsigned i = 0; i < TP_IB_PKEYS; i++)
			if (tp_ib_attr()->pkeys[i] && tp_ib_attr()->pkeys[i] == a->pkey) {
				u->pkey_index = (uint16_t)i;
				break;
			}
}

static int slot_of(const struct sofd_umad *u, uint32_t id)
{
	for (int i = 0; i < SOF_UMAD_MAX_AGENTS; i++)
		if (u->ids[i] == id)
			return i;
	return -1;
}

static void deliver(struct sofd_umad *u, int slot, uint32_t status, const uint8_t *msg,
		    uint32_t len, const struct sofd_mad_addr *addr)
{
	struct ib_user_mad h;
	struct iovec iov[2];
	struct msghdr mh = {.msg_iov = iov, .msg_iovlen = 2};

	memset(&h, 0, sizeof(h));
	h.agent_id = (uint32_t)slot;
	h.status = status;
	h.length = (uint32_t)sizeof(h) + len;
	to_umad_addr(addr, &h.addr);
	iov[0].iov_base = &h;
	iov[0].iov_len = sizeof(h);
	iov[1].iov_base = (void *)msg;
	iov[1].iov_len = len;
	if (sendmsg(u->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		tp_drop_add(SOF_DROP_mad); /* the program does not read its port */
}

static void agent_recv(void *ctx, uint32_t id, const uint8_t *msg, uint32_t len,
		       const struct sofd_mad_addr *from)
{
	struct sofd_umad *u = ctx;
	int slot = slot_of(u, id);

	if (slot >= 0)
		deliver(u, slot, 0, msg, len, from);
}

/* ib_umad returns a send that timed out with its MAD header alone */
static void agent_send_failed(void *ctx, uint32_t id, uint64_t cookie, int status,
			      const uint8_t *hdr, const struct sofd_mad_addr *to)
{
	struct sofd_umad *u = ctx;
	int slot = slot_of(u, id);

	(void)cookie;
	if (slot >= 0 && status == ETIMEDOUT)
		deliver(u, slot, (uint32_t)status, hdr, SOF_MAD_HDR_LEN, to);
}

static const struct sofd_mad_agent_ops agent_ops = {
    .recv = agent_recv,
    .send_failed = agent_send_failed,
};

/* ---- ops ------------------------------------------------------------------------------ */

static union {
	struct sof_umad_ca_rep ca;
	struct sof_umad_agent agent;
} rbuf;

static int op_ca(const struct sof_umad_ca_req *req, struct sofd_rep *rp)
{
	int err = fill_ca(&rbuf.ca, req->index);

	if (err)
		return err;
	rp->data = &rbuf.ca;
	rp->len = sizeof(rbuf.ca);
	return 0;
}

static int op_open(struct sofd_req *rq, struct sofd_rep *rp, const struct sof_umad_open_req *req)
{
	struct sofd_conn *c = rq->c;
	struct sofd_umad *u;
	int sv[2], size = UMAD_SNDBUF;

	if (c->ctx_id || c->alias || c->umad)
		return -EINVAL;
	/* a port the device has (fill_ca: what UMAD_CA describes) */
	if (fill_ca(&rbuf.ca, req->ca) || req->portnum < 1 || req->portnum > rbuf.ca.nports)
		return -ENODEV;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return -errno;
	if (fcntl(sv[0], F_SETFL, O_NONBLOCK) || shutdown(sv[0], SHUT_RD)) {
		int err = -errno;

		close(sv[0]);
		close(sv[1]);
		return err;
	}
	if (setsockopt(sv[0], SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size)))
		(void)setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
	u = calloc(1, sizeof(*u));
	if (!u) {
		close(sv[0]);
		close(sv[1]);
		return -ENOMEM;
	}
	u->c = c;
	u->ca = req->ca;
	u->portnum = req->portnum;
	u->fd = sv[0];
	c->umad = u;
	nports++;
	sofd_rep_fd(rp, sv[1], true);
	return 0;
}

/* root or the daemon's own user: the kernel's umad files are theirs */
static bool smi_permitted(const struct sofd_conn *c) { return c->uid == 0 || c->uid == sofd.uid; }

static int op_register(struct sofd_umad *u, const struct sof_umad_reg_req *req,
		       struct sofd_rep *rp)
{
	struct sofd_mad_reg reg = {
	    .qpn = (uint8_t)req->qpn,
	    .mgmt_class = req->mgmt_class,
	    .class_version = req->class_version,
	    .rmpp_version = req->rmpp_version,
	    .user_rmpp = req->flags & UMAD_USER_RMPP,
	    .oui = req->oui,
	    .method_mask = {req->method_mask[0], req->method_mask[1]},
	};
	uint32_t id;
	int slot, err;

	if (req->qpn > 1 || (req->flags & ~(uint32_t)UMAD_USER_RMPP))
		return -EINVAL;
	if (req->qpn == 0 && !smi_permitted(u->c))
		return -EACCES;
	/* QP0 is the InfiniBand port's: its SMI is not sof0's (without an
	 * InfiniBand port there is no SMI at all, mad.c refuses) */
	if (req->qpn == 0 && u->ca != SOF_UMAD_CA_IB && sofd_ib_present())
		return -EPROTONOSUPPORT;
	slot = slot_of(u, 0);
	if (slot < 0)
		return -ENOMEM;
	err = sofd_mad_agent_register(&reg, &agent_ops, u, &id);
	if (err)
		return err;
	u->ids[slot] = id;
	u->nagents++;
	nagents_all++;
	if (req->qpn == 0)
		u->qp0 |= 1u << slot;
	rbuf.agent.agent_id = (uint32_t)slot;
	rbuf.agent.rsvd = 0;
	rp->data = &rbuf.agent;
	rp->len = sizeof(rbuf.agent);
	return 0;
}

static int unregister_slot(struct sofd_umad *u, uint32_t slot)
{
	int err;

	if (slot >= SOF_UMAD_MAX_AGENTS || !u->ids[slot])
		return -EINVAL;
	err = sofd_mad_agent_unregister(u, u->ids[slot]);
	u->ids[slot] = 0;
	u->nagents--;
	u->qp0 &= ~(1u << slot);
	nagents_all--;
	return err;
}

/* The address a program gave, as the MAD layer's. A RoCE port's MADs
 * travel by GID alone: a GRH and a source GID of the port are needed. The
 * InfiniBand port's go by LID (an SMP's DLID, or the permissive LID of a
 * directed-route one), with a GRH only when the program set one. */
static int from_umad_addr(const struct sofd_umad *u, const uint8_t raw[SOF_UMAD_ADDR_LEN],
			  struct sofd_mad_addr *a)
{
	ib_mad_addr_t m;
	static const uint8_t zero[16];
	bool ib = u->ca == SOF_UMAD_CA_IB;

	memcpy(&m, raw, sizeof(m));
	/* IBA 13.5.1: a GSI MAD goes with the P_Key at its pkey_index;
	 * the RoCE port has the default alone */
	if (m.pkey_index >= (ib ? TP_IB_PKEYS : 1))
		return -EINVAL;
	memset(a, 0, sizeof(*a));
	a->pkey = ib ? tp_ib_attr()->pkeys[m.pkey_index] : 0xffff;
	if (!a->pkey)
		return -EINVAL;
	if (ib) {
		const struct tp_ib_attr *at = tp_ib_attr();
		uint64_t pre = htobe64(at->subnet_prefix), guid = htobe64(at->port_guid);

		memcpy(a->sgid, &pre, 8);
		memcpy(a->sgid + 8, &guid, 8);
		a->no_grh = !m.grh_present;
		a->ib = true;
	} else {
		if (!m.grh_present || m.gid_index >= sofd.dev.num_gids ||
		    m.gid_index >= SOF_MAX_GIDS ||
		    !memcmp(sofd.dev.gids[m.gid_index].gid, zero, 16))
			return -EINVAL;
		memcpy(a->sgid, sofd.dev.gids[m.gid_index].gid, 16);
	}
	if (m.grh_present)
		memcpy(a->dgid, m.gid, 16);
	a->remote_qpn = be32toh(m.qpn) & 0xffffff;
	a->remote_qkey = be32toh(m.qkey);
	a->hop_limit = m.hop_limit;
	a->traffic_class = m.traffic_class;
	a->flow_label = be32toh(m.flow_label) & 0xfffff;
	a->lid = be16toh(m.lid);
	a->sl = m.sl & 0xf;
	a->path_bits = m.path_bits & 0x7f;
	return 0;
}

/* A long message's bytes, from the file the program passed: exactly len. */
static uint8_t *read_msg(int fd, uint32_t len)
{
	uint8_t *b;
	ssize_t n;

	if (len > SOF_MAD_MSG_MAX)
		return NULL;
	b = malloc(len ? len : 1);
	if (!b)
		return NULL;
	n = pread(fd, b, len, 0);
	if (n != (ssize_t)len) {
		free(b);
		return NULL;
	}
	return b;
}

static int op_send(struct sofd_umad *u, const struct sof_umad_send_req *req, const uint8_t *msg,
		   size_t avail, int fd)
{
	struct sofd_mad_addr to;
	uint8_t *big = NULL;
	int err;

	if (req->agent_id >= SOF_UMAD_MAX_AGENTS || !u->ids[req->agent_id])
		return -EINVAL;
	if (fd >= 0) {
		if (avail)
			return -EINVAL;
		big = read_msg(fd, req->len);
		if (!big)
			return -EINVAL;
		msg = big;
	} else if (req->len != avail) {
		return -EINVAL;
	}
	err = from_umad_addr(u, req->addr, &to);
	if (!err)
		err = sofd_mad_agent_send(u, u->ids[req->agent_id], msg, req->len, &to,
					  req->timeout_ms, req->retries, 0);
	free(big);
	return err;
}

/* requests are copied here before use, aligned */
static union {
	struct sof_umad_ca_req ca;
	struct sof_umad_open_req open;
	struct sof_umad_reg_req reg;
	struct sof_umad_agent agent;
	struct sof_umad_send_req send;
	uint8_t bytes[SOF_MSG_MAX];
} qbuf;

int sofd_umad_op(struct sofd_req *rq, struct sofd_rep *rp)
{
	static const size_t need[] = {
	    [SOF_OP_UMAD_CA - SOF_OP_UMAD_CA] = 0, /* or a sof_umad_ca_req */
	    [SOF_OP_UMAD_OPEN - SOF_OP_UMAD_CA] = sizeof(struct sof_umad_open_req),
	    [SOF_OP_UMAD_REGISTER - SOF_OP_UMAD_CA] = sizeof(struct sof_umad_reg_req),
	    [SOF_OP_UMAD_UNREGISTER - SOF_OP_UMAD_CA] = sizeof(struct sof_umad_agent),
	    [SOF_OP_UMAD_SEND - SOF_OP_UMAD_CA] = sizeof(struct sof_umad_send_req),
	};
	struct sofd_umad *u = rq->c->umad;
	size_t want;

	if (rq->op < SOF_OP_UMAD_CA || rq->op > SOF_OP_UMAD_SEND)
		return -EOPNOTSUPP;
	want = need[rq->op - SOF_OP_UMAD_CA];
	if (rq->c->cm.chan || rq->nfds > (rq->op == SOF_OP_UMAD_SEND) || rq->len < want ||
	    rq->len > sizeof(qbuf) ||
	    (rq->op != SOF_OP_UMAD_SEND && rq->len != want &&
	     !(rq->op == SOF_OP_UMAD_CA && rq->len == sizeof(struct sof_umad_ca_req))))
		return -EINVAL;
	memset(&qbuf, 0, sizeof(struct sof_umad_ca_req));
	memcpy(&qbuf, rq->data, rq->len);
	switch (rq->op) {
	case SOF_OP_UMAD_CA:
		return op_ca(&qbuf.ca, rp);
	case SOF_OP_UMAD_OPEN:
		return op_open(rq, rp, &qbuf.open);
	default:
		break;
	}
	if (!u)
		return -EBADF; /* no port opened on this connection */
	switch (rq->op) {
	case SOF_OP_UMAD_REGISTER:
		return op_register(u, &qbuf.reg, rp);
	case SOF_OP_UMAD_UNREGISTER:
		return unregister_slot(u, qbuf.agent.agent_id);
	default:
		return op_send(u, &qbuf.send, qbuf.bytes + sizeof(qbuf.send), rq->len - sizeof(qbuf.send),
			       rq->nfds ? rq->fds[0] : -1);
	}
}

void sofd_umad_conn_closed(struct sofd_conn *c)
{
	struct sofd_umad *u = c->umad;

	if (!u)
		return;
	for (uint32_t i = 0; i < SOF_UMAD_MAX_AGENTS; i++)
		if (u->ids[i])
			(void)unregister_slot(u, i);
	close(u->fd);
	free(u);
	c->umad = NULL;
	nports--;
}
