/*
 * Links: whether each is up, the real hosts at the ends of some (the link
 * protocol of fabric/README.md: HELLO, BYE, ASSIGN over the fabric's UDP
 * socket), cutting and restoring a link by command, and the traps of
 * simulated nodes (IBA 14.2.5.1: to their SM's LID): a switch's 128 when
 * a port changed state, 256 from a switch or CA when an SMP failed its
 * M_Key check.
 *
 * A link is up when neither end is disabled (PortPhysicalState 3), it is
 * not cut, and a real end has sent a HELLO (not Disabled) within the last
 * HOST_TIMEOUT and no BYE since. Each end's model then follows IBA 7.2.
 * A host that says Polling after LinkUp lost the link at its end: the
 * switch port retrains too (host_retrain).
 */
#include "fabric.h"

#include "sof_util.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <sys/socket.h>

#include <stdio.h>
#include <string.h>

#define HOST_TIMEOUT (3ull * 1000000000ull)

static bool end_ok(const struct fab_node *n, unsigned port)
{
	if (n->real)
		return n->host.attached && n->host.phys != SOF_PHYS_DISABLED;
	return n->m->port[port].phys != SOF_PHYS_DISABLED;
}

bool fab_link_up(const struct fab_node *n, unsigned port)
{
	const struct fab_port *fp;

	if (port < 1 || port > n->m->nports)
		return false;
	fp = &n->port[port];
	if (!fp->peer || fp->cut)
		return false;
	return end_ok(n, port) && end_ok(fp->peer, fp->peer_port);
}

/* the phys state a real host is told its peer port has */
static uint8_t told_phys(const struct fab_node *sw, unsigned port)
{
	uint8_t ph = sw->m->port[port].phys;

	return ph == SOF_PHYS_LINKUP && !fab_link_up(sw, port) ? SOF_PHYS_POLLING : ph;
}

static void hello_to(struct fabric *f, struct fab_node *host, uint8_t type)
{
	struct fab_port *fp = &host->port[1];
	struct ib_sofl m = {.type = type};
	uint8_t buf[IB_SOFL_LEN];

	if (!host->host.attached || !fp->peer || (type == IB_SOFL_DIRECT && !fab_direct_path(f)))
		return;
	fab_tx_flush(f); /* after the packets before it */
	if (type == IB_SOFL_DIRECT) {
		m.phys_state = SOF_PHYS_LINKUP;
		snprintf(m.name, sizeof(m.name), "%s", fab_direct_path(f));
	} else if (type == IB_SOFL_ASSIGN) {
		m.phys_state = SOF_PHYS_LINKUP;
		m.port = 1;
		m.node_guid = host->m->node_guid;
		m.port_guid = host->m->port[1].guid;
		snprintf(m.name, sizeof(m.name), "%s", host->name);
	} else {
		m.phys_state = fp->cut ? SOF_PHYS_DISABLED : told_phys(fp->peer, fp->peer_port);
		m.port = fp->peer_port;
		m.node_guid = fp->peer->m->node_guid;
		m.port_guid = sof_node_mgmt_port(fp->peer->m, fp->peer_port)->guid;
		snprintf(m.name, sizeof(m.name), "%s", fp->peer->name);
	}
	ib_sofl_write(buf, &m);
	sendto(f->udp, buf, sizeof(buf), 0, (const struct sockaddr *)&host->host.addr,
	       host->host.addrlen);
}

static void end_update(struct fabric *f, struct fab_node *n, unsigned port, bool up)
{
	bool changed;

	if (n->real) {
		hello_to(f, n, IB_SOFL_HELLO);
		return;
	}
	changed = up ? sof_port_link_up(n->m, port) : sof_port_link_down(n->m, port);
	if (changed && n->m->type == SOF_NODE_SWITCH)
		fab_trap(f, n, SOF_TRAP_LINK_STATE);
}

void fab_link_update(struct fabric *f, struct fab_node *n, unsigned port)
{
	struct fab_port *fp;
	bool up;

	if (port < 1 || port > n->m->nports || !n->port[port].peer)
		return;
	fab_direct_dirty(f);
	fp = &n->port[port];
	up = fab_link_up(n, port);
	/* the model's end first: a real end's HELLO tells the other end's
	 * state as it now is (told Polling, a host that had come up would
	 * retrain) */
	if (n->real) {
		end_update(f, fp->peer, fp->peer_port, up);
		end_update(f, n, port, up);
	} else {
		end_update(f, n, port, up);
		end_update(f, fp->peer, fp->peer_port, up);
	}
}

void fab_link_cut(struct fabric *f, struct fab_node *n, unsigned port, bool cut)
{
	struct fab_port *fp = &n->port[port];

	fp->cut = cut;
	if (fp->peer)
		fp->peer->port[fp->peer_port].cut = cut;
	fab_link_update(f, n, port);
}

/* Send n's pending trap towards its SM LID: a switch by its own LFT (the
 * route of the moment: a resend follows the SM's new tables), a
 * simulated CA out of its port 1. */
static void trap_send(struct fabric *f, struct fab_node *n)
{
	bool sw = n->m->type == SOF_NODE_SWITCH;
	struct sof_port *m = &n->m->port[sw ? 0 : 1];
	uint8_t pkt[FAB_MAD_PKT_LEN];
	unsigned out = 1;

	if (!m->sm_lid || !m->lid)
		return;
	if (sw) {
		if (n->m->sw.lft_cap <= m->sm_lid)
			return;
		out = n->m->sw.lft[m->sm_lid];
		if (out < 1 || out > n->m->nports)
			return;
	}
	fab_mad_pkt(pkt, m->sm_lid, m->lid, m->sm_sl, 0xffff, 0, 0, 0, n->trap_mad);
	fab_xmit(f, n, out, pkt, sizeof(pkt), false);
}

void fab_trap(struct fabric *f, struct fab_node *n, uint16_t num)
{
	bool sw = n->m->type == SOF_NODE_SWITCH;
	struct sof_port *m = &n->m->port[sw ? 0 : 1];

	/* a real host's traps are its daemon's (daemon/ib_sma.c) */
	if (n->real || !m->sm_lid || !m->lid)
		return;
	sof_sma_trap(n->m, sw ? 0 : 1, num, (uint64_t)n->index << 32 | ++n->trap_tid, n->trap_mad);
	n->trap_pending = true;
	n->trap_resends = 0;
	trap_send(f, n);
	f->st.traps++;
}

bool fab_trap_repressed(struct fabric *f, struct fab_node *sw, uint64_t tid)
{
	/* IBA 13.4.8.3: the TrapRepress carries the trap's TID. Only its
	 * low 32 bits are compared (they count the node's traps): an SM
	 * through Debian's libumad2sim has the high 32 bits of every MAD it
	 * sends without the response bit replaced by its agent's, the
	 * TrapRepress's too (the kernel's ib_umad keeps a TrapRepress's TID,
	 * counting it as a response), so a full match failed and every trap
	 * such an SM repressed was sent again each tick, 30 times */
	if (!sw->trap_pending || (uint32_t)sof_get64(sw->trap_mad + 8) != (uint32_t)tid)
		return false;
	sw->trap_pending = false;
	f->st.trap_repressed++;
	return true;
}

/* A host that said LinkUp says Polling: its end lost the link (it heard
 * no HELLO of ours for its timeout: it stalled, or they were lost) while
 * we still heard it. A link is up at both ends or at neither: the switch
 * port's link goes down too and, the host being heard, trains again at
 * once, Down then Initialize (IBA 7.2), which sets SwitchInfo:
 * PortStateChange (14.2.5.4) and sends trap 128 (14.2.5.1), so that the
 * SM sweeps and takes both ends to Active again; our HELLO (LinkUp) brings
 * the host's end up. Without it the switch port stayed Active, the SM's
 * light sweeps saw no change and the host's port stayed Initialize. */
static void host_retrain(struct fabric *f, struct fab_node *n)
{
	struct fab_port *fp = &n->port[1];

	if (!fp->peer || !fab_link_up(n, 1)) {
		fab_link_update(f, n, 1);
		return;
	}
	fab_direct_dirty(f);
	end_update(f, fp->peer, fp->peer_port, false);
	end_update(f, fp->peer, fp->peer_port, true);
	hello_to(f, n, IB_SOFL_HELLO);
}

static bool same_addr(const struct sockaddr_storage *a, socklen_t alen,
		      const struct sockaddr_storage *b, socklen_t blen)
{
	return alen == blen && !memcmp(a, b, alen);
}

static struct fab_node *host_by_addr(struct fabric *f, const struct sockaddr_storage *from,
				     socklen_t fromlen)
{
	for (unsigned i = 0; i < f->nnodes; i++) {
		struct fab_node *n = f->nodes[i];

		if (n->real && n->host.attached &&
		    same_addr(&n->host.addr, n->host.addrlen, from, fromlen))
			return n;
	}
	return NULL;
}

static void sofl_input(struct fabric *f, const struct ib_sofl *m,
		       const struct sockaddr_storage *from, socklen_t fromlen)
{
	struct fab_node *n = host_by_addr(f, from, fromlen);

	if (m->type == IB_SOFL_ASSIGN) {
		f->st.sofl_bad++;
		return;
	}
	if (!n) {
		if (m->type != IB_SOFL_HELLO)
			return;
		n = fab_find(f, m->name);
		/* a name the topology does not hold as a real HCA, or one
		 * another live address holds: no answer */
		if (!n || !n->real || n->host.attached) {
			f->st.unknown_host++;
			return;
		}
		memcpy(&n->host.addr, from, fromlen);
		n->host.addrlen = fromlen;
		n->host.attached = true;
		n->host.direct = false;
		n->host.phys = m->phys_state;
		n->host.last_hello = fab_now();
		hello_to(f, n, IB_SOFL_ASSIGN);
		hello_to(f, n, IB_SOFL_DIRECT);
		fab_link_update(f, n, 1);
		return;
	}
	if (m->type == IB_SOFL_DIRECT) {
		fab_direct_mapped(f, n, m->name);
		return;
	}
	if (m->type == IB_SOFL_COUNT) {
		fab_direct_count(f, n, (const uint8_t *)m->name);
		return;
	}
	if (m->type == IB_SOFL_BYE) {
		n->host.attached = false;
		fab_link_update(f, n, 1);
		n->host.addrlen = 0;
		return;
	}
	n->host.last_hello = fab_now();
	if (n->host.phys != m->phys_state) {
		bool lost = n->host.phys == SOF_PHYS_LINKUP && m->phys_state == SOF_PHYS_POLLING;

		n->host.phys = m->phys_state;
		if (lost)
			host_retrain(f, n);
		else
			fab_link_update(f, n, 1);
	}
}

void fab_udp_input(struct fabric *f, const uint8_t *p, size_t len,
		   const struct sockaddr_storage *from, socklen_t fromlen)
{
	struct fab_node *n;

	if (ib_is_sofl(p, len)) {
		struct ib_sofl m;

		if (ib_sofl_parse(p, len, &m))
			f->st.sofl_bad++;
		else
			sofl_input(f, &m, from, fromlen);
		return;
	}
	n = host_by_addr(f, from, fromlen);
	if (!n) {
		f->st.unknown_host++;
		return;
	}
	f->st.from_hosts++;
	if (!fab_link_up(n, 1)) {
		f->st.port_down++;
		return;
	}
	fab_enqueue(f, n->port[1].peer, n->port[1].peer_port, p, len, true, true);
}

unsigned fab_udp_datagram(struct fabric *f, const uint8_t *p, size_t len, size_t seg,
			  const struct sockaddr_storage *from, socklen_t fromlen)
{
	unsigned n = 0;

	if (!seg || seg >= len)
		seg = len ? len : 1;
	/* a UDP GRO datagram: the packets the kernel joined (a host's GSO
	 * run), each of seg bytes but the last, each checked on its own */
	for (size_t off = 0; off < len || !n; off += seg, n++) {
		size_t l = len - off < seg ? len - off : seg;

		/* a link message acts after the packets before it */
		if (ib_is_sofl(p + off, l))
			fab_run(f);
		fab_udp_input(f, p + off, l, from, fromlen);
	}
	return n;
}

/* The DestQP a host's steering (daemon/steer.c) reads, with the LNH that
 * says where it is: what one GSO run to a host must share, since the
 * kernel steers the whole run by its first packet. */
static uint32_t steer_key(const uint8_t *p, size_t len)
{
	size_t at = (p[1] & 3) == 3 ? 48 + 4 : 8 + 4;

	return len >= at + 4 ? (uint32_t)(p[1] & 3) << 24 | (sof_get32(p + at) & 0xffffff)
			     : 0xffffffffu;
}

/* Packets to real hosts wait here and leave together (sendmmsg) when the
 * batch is full or the queue ran dry (fab_run), in their order. A run of
 * packets to one host and DestQP of one size (the last may be shorter)
 * leaves as one UDP GSO send (UDP_SEGMENT): the kernel cuts it into the
 * same datagrams, and routes it, and crosses the bridge and veth, once
 * rather than per packet. A socket or path that refuses it (EINVAL: a segment over the
 * path MTU) turns it off and the packets leave one by one. */
#define TX_BATCH 64
#define GSO_MAX_BYTES 65000 /* the datagrams of one send: under IP's 64 KiB */
#define GSO_MAX_SEGS 64	    /* the kernel's UDP_MAX_SEGMENTS */
static struct {
	unsigned n;
	bool no_gso;
	struct mmsghdr m[TX_BATCH];
	unsigned first[TX_BATCH], count[TX_BATCH]; /* each message's packets */
	socklen_t alen[TX_BATCH];		   /* each packet's address */
	uint32_t key[TX_BATCH];			   /* each packet's steer_key */
	union sof_udp_seg_ctl ctl[TX_BATCH];
	struct iovec iov[TX_BATCH];
	struct sockaddr_storage to[TX_BATCH];
	uint8_t buf[TX_BATCH][FAB_MAX_PKT];
} tx;

/* the messages for packets from..tx.n: runs joined unless GSO is off */
static unsigned tx_group(unsigned from)
{
	unsigned nm = 0, i = from;

	while (i < tx.n) {
		struct msghdr *h = &tx.m[nm].msg_hdr;
		size_t seg = tx.iov[i].iov_len, bytes = seg;
		unsigned k = 1;

		while (!tx.no_gso && i + k < tx.n && k < GSO_MAX_SEGS &&
		       tx.iov[i + k - 1].iov_len == seg && tx.iov[i + k].iov_len <= seg &&
		       bytes + tx.iov[i + k].iov_len <= GSO_MAX_BYTES &&
		       tx.key[i + k] == tx.key[i] && tx.alen[i + k] == tx.alen[i] &&
		       !memcmp(&tx.to[i + k], &tx.to[i], tx.alen[i]))
			bytes += tx.iov[i + k++].iov_len;
		*h = (struct msghdr){.msg_name = &tx.to[i],
				     .msg_namelen = tx.alen[i],
				     .msg_iov = &tx.iov[i],
				     .msg_iovlen = k};
		if (k > 1)
			sof_udp_gso_set(h, &tx.ctl[nm], (uint16_t)seg);
		tx.first[nm] = i;
		tx.count[nm++] = k;
		i += k;
	}
	return nm;
}

void fab_tx_flush(struct fabric *f)
{
	unsigned done = 0, nm;
	bool waited = false;

	if (!tx.n)
		return;
	nm = tx_group(0);
	while (done < nm) {
		int r = sendmmsg(f->udp, tx.m + done, nm - done, 0);

		if (r > 0) {
			done += (unsigned)r;
			waited = false;
			continue;
		}
		if (r < 0 && errno == EINVAL && tx.count[done] > 1 && !tx.no_gso) {
			/* no GSO here: the rest one by one */
			tx.no_gso = true;
			nm = tx_group(tx.first[done]);
			done = 0;
			continue;
		}
		/* the socket is full: room for a moment, else this one is
		 * lost (as on a congested wire) and the rest go on */
		if (r < 0 && errno == EAGAIN && !waited) {
			(void)poll(&(struct pollfd){.fd = f->udp, .events = POLLOUT}, 1, 1);
			waited = true;
			continue;
		}
		f->st.tx_lost += tx.count[done];
		done++;
		waited = false;
	}
	tx.n = 0;
}

void fab_host_send(struct fabric *f, struct fab_node *n, const uint8_t *p, size_t len,
		   bool sealed)
{
	unsigned i;

	if (!n->host.attached || len > FAB_MAX_PKT)
		return;
	if (tx.n == TX_BATCH)
		fab_tx_flush(f);
	i = tx.n++;
	memcpy(tx.buf[i], p, len);
	if (!sealed)
		fab_pkt_seal(tx.buf[i], len);
	memcpy(&tx.to[i], &n->host.addr, n->host.addrlen);
	tx.alen[i] = n->host.addrlen;
	tx.key[i] = steer_key(tx.buf[i], len);
	tx.iov[i] = (struct iovec){.iov_base = tx.buf[i], .iov_len = len};
	f->st.to_hosts++;
}

void fab_tick(struct fabric *f, uint64_t now)
{
	for (unsigned i = 0; i < f->nnodes; i++) {
		struct fab_node *n = f->nodes[i];

		if (n->trap_pending) {
			/* unrepressed: again, up to a bound (an SM that is gone
			 * represses nothing) */
			if (n->trap_resends++ < FAB_TRAP_RESENDS) {
				trap_send(f, n);
				f->st.trap_resends++;
			} else {
				n->trap_pending = false;
			}
		}
		if (!n->real || !n->host.attached)
			continue;
		if (now - n->host.last_hello > HOST_TIMEOUT) {
			n->host.attached = false;
			fab_link_update(f, n, 1);
			continue;
		}
		hello_to(f, n, IB_SOFL_HELLO);
		hello_to(f, n, IB_SOFL_DIRECT);
	}
}
