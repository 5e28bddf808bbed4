/*
 * The InfiniBand port, its link half (the packet half is ibpkt.c, the
 * state both share ibport.h): the engine's second link layer (struct
 * tp_port_ops, tport.h), on a link of fabric/README.md's protocol — one
 * UDP socket whose datagrams to and from the far end (a switch port of
 * the fabric, or another host's port cabled directly) are IB packets, LRH
 * through VCRC, or SOFL link control messages.
 *
 * The link: HELLO once a second, the far end's HELLO (Polling or LinkUp)
 * within 3 s and no BYE since holds the physical link up (LinkUp); a
 * disabled port says Disabled in its HELLOs; a link that timed out says
 * Polling at once, and a far end's Polling after LinkUp retrains the port
 * (both ends of a link are up, or neither). The logical state follows
 * IBA 7.2: Down, Initialize when the physical link comes up, Armed and
 * Active only when the subnet manager sets them through the SMA
 * (tp_ib_set_state), back to Down when the link goes; in Armed the first
 * data packet received makes the port Active (IBA 7.2.3). Initialize and
 * Armed send and take only SMPs (VL15); Armed also takes data.
 *
 * In the daemon the port is whole: its link socket is member 0 of an
 * SO_REUSEPORT group on the link's UDP port (daemon/steer.c steers the IB
 * packets of a program's QPs to that program's member, by BTH DestQP). In
 * a program that runs its own QPs (verbs/tp_host.c) only the packet half
 * runs (tp_ib_attach): receiving and sending as below on its member
 * socket, to the same far end from the same port, against the attributes
 * the daemon publishes (struct sof_ib_port: state, LID/LMC, P_Keys,
 * SL2VL, the far end's address), counting into the program's slot page;
 * the link (HELLO/BYE/ASSIGN), the state machine and the SMA's setters
 * stay the daemon's. Every socket of the group takes UDP GRO (ibpkt.c).
 */
#include "ibport.h"

#include "sof_gid.h"
#include "sof_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define HELLO_NS 1000000000ull
#define LINK_TIMEOUT_NS 3000000000ull

struct tp_ib_port tp_ibp = {.fd = -1, .cnt = &tp_ibp.own_cnt};

bool tp_ib_on(void) { return tp_ibp.on; }

int tp_ib_fd(void) { return tp_ibp.on ? tp_ibp.fd : -1; }

/* A member's attributes are the daemon's, as it last published them: read
 * again whenever the page's sequence number moved. */
void tp_ib_member_sync(void)
{
	struct sof_ib_port p;

	if (!tp_ibp.member ||
	    atomic_load_explicit(&tp_ibp.shm->seq, memory_order_acquire) == tp_ibp.seq)
		return;
	tp_ibp.seq = atomic_load_explicit(&tp_ibp.shm->seq, memory_order_acquire);
	if (sof_ib_read(tp_ibp.shm, &p) || p.present != 1) {
		tp_ibp.attr.state = IBV_PORT_DOWN; /* nothing leaves, nothing is taken */
		return;
	}
	tp_ibp.attr.state = p.state;
	tp_ibp.attr.phys_state = p.phys_state;
	tp_ibp.attr.port_num = p.port_num;
	tp_ibp.attr.lmc = p.lmc;
	tp_ibp.attr.lid = p.lid;
	tp_ibp.attr.sm_lid = p.sm_lid;
	tp_ibp.attr.sm_sl = p.sm_sl;
	tp_ibp.attr.active_mtu = p.active_mtu;
	tp_ibp.attr.vl_cap = p.vl_cap;
	tp_ibp.attr.node_guid = p.node_guid;
	tp_ibp.attr.port_guid = p.port_guid;
	tp_ibp.attr.subnet_prefix = p.subnet_prefix;
	for (unsigned i = 0; i < TP_IB_PKEYS; i++)
		tp_ibp.attr.pkeys[i] = i < SOF_IB_PKEYS ? p.pkeys[i] : 0;
	memcpy(tp_ibp.attr.sl2vl, p.sl2vl, sizeof(tp_ibp.attr.sl2vl));
	/* a name of up to IB_SOFL_NAME_LEN bytes, as the link brought it */
	p.direct[IB_SOFL_NAME_LEN] = '\0';
	memcpy(tp_ibp.attr.direct, p.direct, IB_SOFL_NAME_LEN + 1);
	if (p.peer_len && p.peer_len <= sizeof(p.peer)) {
		memset(&tp_ibp.cfg.peer, 0, sizeof(tp_ibp.cfg.peer));
		memcpy(&tp_ibp.cfg.peer, p.peer, p.peer_len);
		tp_ibp.cfg.peer_len = p.peer_len;
	}
}

const struct tp_ib_attr *tp_ib_attr(void)
{
	tp_ib_member_sync();
	return &tp_ibp.attr;
}

const struct tp_ib_counters *tp_ib_counters(void)
{
	static struct tp_ib_counters sum;

	sum = *tp_ibp.cnt;
	if (!tp_ibp.member && tp_ibp.cfg.add_counters)
		tp_ibp.cfg.add_counters(&sum);
	return &sum;
}

const struct tp_ib_counters *tp_ib_own_counters(void) { return tp_ibp.cnt; }

void tp_ib_changed(void)
{
	if (tp_ibp.cfg.changed)
		tp_ibp.cfg.changed();
}

/* ---- link control ------------------------------------------------------------ */

static void send_sofl(uint8_t type)
{
	struct ib_sofl m = {.type = type, .port = tp_ibp.attr.port_num};
	uint8_t b[IB_SOFL_LEN];

	m.phys_state = tp_ibp.disabled				  ? IB_PHYS_DISABLED
		       : tp_ibp.attr.phys_state == IB_PHYS_LINKUP ? IB_PHYS_LINKUP
								  : IB_PHYS_POLLING;
	/* fabric/README.md: a host says node_guid 0 until it knows its own */
	if (tp_ibp.known) {
		m.node_guid = tp_ibp.attr.node_guid;
		m.port_guid = tp_ibp.attr.port_guid;
	}
	snprintf(m.name, sizeof(m.name), "%s", tp_ibp.name);
	ib_sofl_write(b, &m);
	tp_ib_flush(); /* after the packets before it */
	(void)sendto(tp_ibp.fd, b, sizeof(b), MSG_DONTWAIT,
		     (const struct sockaddr *)&tp_ibp.cfg.peer, tp_ibp.cfg.peer_len);
}

/* SOFL DIRECT back to the fabric: the segment NAME is mapped here */
static void send_direct(const char *name)
{
	struct ib_sofl m = {.type = IB_SOFL_DIRECT, .phys_state = IB_PHYS_LINKUP};
	uint8_t b[IB_SOFL_LEN];

	snprintf(m.name, sizeof(m.name), "%s", name);
	ib_sofl_write(b, &m);
	(void)sendto(tp_ibp.fd, b, sizeof(b), MSG_DONTWAIT,
		     (const struct sockaddr *)&tp_ibp.cfg.peer, tp_ibp.cfg.peer_len);
}

/* The physical link follows the far end's HELLOs and our own Disabled;
 * the logical state follows the physical link (IBA 7.2). */
static void link_update(void)
{
	bool up = tp_ibp.far_up && !tp_ibp.disabled;
	uint8_t phys = tp_ibp.disabled ? IB_PHYS_DISABLED : up ? IB_PHYS_LINKUP : IB_PHYS_POLLING;

	if (phys == tp_ibp.attr.phys_state)
		return;
	if (tp_ibp.attr.phys_state == IB_PHYS_LINKUP) {
		tp_ibp.cnt->link_downed++;
		tp_ibp.attr.state = IBV_PORT_DOWN;
		/* the fabric's direct paths end with the link: a fabric that
		 * comes back names its segment again (ibdirect.c maps it anew) */
		tp_ibp.attr.direct[0] = '\0';
		tp_log("ib: link down (%s), port Down", ib_phys_names[phys]);
	}
	tp_ibp.attr.phys_state = phys;
	if (phys == IB_PHYS_LINKUP) {
		tp_ibp.attr.state = IBV_PORT_INIT;
		tp_log("ib: link up to %s, port Initialize",
		       tp_ibp.attr.peer[0] ? tp_ibp.attr.peer : "?");
		/* tell the far end at once, so that it need not wait a second */
		send_sofl(IB_SOFL_HELLO);
	}
	tp_ib_changed();
}

/* The far end's end of the link went down and trains again while ours
 * stayed up (it said Polling after LinkUp: it lost our HELLOs; or a
 * fabric took us anew with ASSIGN: its end had timed us out). A link is
 * up at both ends or at neither: ours goes down too and, the far end
 * being heard, comes up again at once, Down then Initialize (IBA 7.2), as
 * the far end's does, for the SM to take to Active again. */
static void link_retrain(const char *why)
{
	if (tp_ibp.attr.phys_state != IB_PHYS_LINKUP)
		return;
	tp_log("ib: the far end retrains (%s)", why);
	tp_ibp.far_up = false;
	link_update();
	tp_ibp.far_up = true;
	tp_ibp.heard_ns = sof_now_ns();
}

void tp_ib_link_input(const uint8_t *buf, size_t len)
{
	struct ib_sofl m;

	if (ib_sofl_parse(buf, len, &m)) {
		tp_ibp.cnt->link_bad++;
		return;
	}
	tp_ibp.cnt->link_msgs++;
	switch (m.type) {
	case IB_SOFL_HELLO:
		snprintf(tp_ibp.attr.peer, sizeof(tp_ibp.attr.peer), "%s", m.name);
		/* a host at the far end (a direct link) gives no ASSIGN: our
		 * own GUIDs stand */
		if (m.node_guid)
			tp_ibp.known = true;
		if (tp_ibp.far_phys == IB_PHYS_LINKUP && m.phys_state == IB_PHYS_POLLING)
			link_retrain("it says Polling");
		tp_ibp.far_phys = m.phys_state;
		tp_ibp.far_up = m.phys_state == IB_PHYS_POLLING || m.phys_state == IB_PHYS_LINKUP;
		if (tp_ibp.far_up)
			tp_ibp.heard_ns = sof_now_ns();
		break;
	case IB_SOFL_BYE:
		tp_ibp.far_up = false;
		tp_ibp.far_phys = IB_PHYS_POLLING;
		break;
	case IB_SOFL_DIRECT:
		if (strcmp(m.name, tp_ibp.attr.direct)) {
			snprintf(tp_ibp.attr.direct, sizeof(tp_ibp.attr.direct), "%s", m.name);
			tp_ib_changed();
		}
		/* the answer the fabric waits for before it sends anything
		 * straight here: we mapped it, so we can check what comes */
		if (tp_ib_direct_mapped())
			send_direct(m.name);
		break;
	case IB_SOFL_ASSIGN:
		if (strcmp(m.name, tp_ibp.name) || !m.node_guid || !m.port_guid) {
			tp_ibp.cnt->link_bad++;
			return;
		}
		if (!tp_ibp.known || m.node_guid != tp_ibp.attr.node_guid ||
		    m.port_guid != tp_ibp.attr.port_guid || m.port != tp_ibp.attr.port_num)
			tp_log("ib: assigned node_guid %016llx port_guid %016llx port %u",
			       (unsigned long long)m.node_guid, (unsigned long long)m.port_guid,
			       m.port);
		tp_ibp.attr.node_guid = m.node_guid;
		tp_ibp.attr.port_guid = m.port_guid;
		if (m.port)
			tp_ibp.attr.port_num = m.port;
		tp_ibp.known = true;
		/* Armed or Active (an SM's doing), yet attached anew: the
		 * fabric had timed us out, its end of the link went down (at
		 * start, or after our own timeout, we are not past
		 * Initialize) */
		if (tp_ibp.attr.state == IBV_PORT_ARMED || tp_ibp.attr.state == IBV_PORT_ACTIVE)
			link_retrain("the fabric attached us anew");
		/* ASSIGN answers our HELLO: the fabric's port is there */
		tp_ibp.far_up = true;
		tp_ibp.heard_ns = sof_now_ns();
		tp_ib_changed();
		break;
	}
	link_update();
}

void tp_ib_tick(void)
{
	uint64_t now = sof_now_ns();

	if (!tp_ibp.on)
		return;
	if (tp_ibp.far_up && now - tp_ibp.heard_ns > LINK_TIMEOUT_NS) {
		tp_ibp.far_up = false;
		link_update();
		/* Polling, at once: a far end that still hears us (we were
		 * stalled, or its HELLOs were lost) retrains too (host_retrain
		 * of fabric/link.c, link_retrain here) */
		tp_ibp.hello_ns = now;
		send_sofl(IB_SOFL_HELLO);
	}
	link_update();
	tp_ib_direct_report(true);
	if (now - tp_ibp.hello_ns >= HELLO_NS - HELLO_NS / 10) {
		tp_ibp.hello_ns = now;
		send_sofl(IB_SOFL_HELLO);
	}
}

/* ---- the port's settings (the SMA's PortInfo Set) ------------------------------ */

int tp_ib_set_state(uint8_t state)
{
	uint8_t cur = tp_ibp.attr.state;

	switch (state) {
	case 0: /* NoStateChange */
		return 0;
	case IBV_PORT_DOWN:
		/* the link retrains: Down, then Initialize when it is up */
		if (cur != IBV_PORT_DOWN) {
			tp_ibp.attr.state = IBV_PORT_DOWN;
			if (tp_ibp.attr.phys_state == IB_PHYS_LINKUP)
				tp_ibp.attr.state = IBV_PORT_INIT;
			tp_ib_changed();
		}
		return 0;
	case IBV_PORT_ARMED:
		if (cur != IBV_PORT_INIT && cur != IBV_PORT_ARMED)
			return -EINVAL;
		break;
	case IBV_PORT_ACTIVE:
		if (cur != IBV_PORT_ARMED && cur != IBV_PORT_ACTIVE)
			return -EINVAL;
		break;
	default:
		return -EINVAL;
	}
	if (cur != state) {
		tp_ibp.attr.state = state;
		tp_log("ib: port %s", state == IBV_PORT_ACTIVE ? "Active" : "Armed");
		tp_ib_changed();
	}
	return 0;
}

int tp_ib_set_lid(uint16_t lid, uint8_t lmc, uint16_t sm_lid, uint8_t sm_sl)
{
	if (lid > IB_LID_UCAST_MAX || sm_lid > IB_LID_UCAST_MAX || lmc > 7 || sm_sl > 15)
		return -EINVAL;
	tp_ibp.attr.lid = lid;
	tp_ibp.attr.lmc = lmc;
	tp_ibp.attr.sm_lid = sm_lid;
	tp_ibp.attr.sm_sl = sm_sl;
	tp_ib_changed();
	return 0;
}

int tp_ib_set_mtu(uint8_t mtu)
{
	if (mtu < IBV_MTU_256 || mtu > IBV_MTU_4096)
		return -EINVAL;
	tp_ibp.attr.active_mtu = mtu;
	tp_ib_changed();
	return 0;
}

void tp_ib_set_subnet_prefix(uint64_t prefix)
{
	tp_ibp.attr.subnet_prefix = prefix;
	tp_ib_changed();
}

int tp_ib_set_pkey(unsigned index, uint16_t pkey)
{
	if (index >= TP_IB_PKEYS)
		return -EINVAL;
	tp_ibp.attr.pkeys[index] = pkey;
	tp_ib_changed();
	return 0;
}

int tp_ib_set_sl2vl(unsigned sl, uint8_t vl)
{
	if (sl > 15 || (vl >= tp_ibp.attr.vl_cap && vl != IB_VL15))
		return -EINVAL;
	tp_ibp.attr.sl2vl[sl] = vl;
	tp_ib_changed();
	return 0;
}

void tp_ib_disable(bool off)
{
	tp_ibp.disabled = off;
	if (tp_ibp.on) {
		send_sofl(off ? IB_SOFL_BYE : IB_SOFL_HELLO);
		link_update();
	}
}

/* ---- start and stop ---------------------------------------------------------------- */

/* A socket on the link's local UDP port, a member of its SO_REUSEPORT
 * group (daemon/steer.c chooses the member of each datagram): the first
 * one binds port (0: any), the others the port it got. fd or -errno. */
static int link_socket(int fam, uint16_t port)
{
	int fd = sof_udp_socket(fam, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK), one = 1;
	union {
		struct sockaddr_in v4;
		struct sockaddr_in6 v6;
	} sa = {0};
	socklen_t len = fam == AF_INET ? sizeof(sa.v4) : sizeof(sa.v6);

	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)))
		goto err;
	/* a burst of datagrams (IPoIB's UD traffic) needs room */
	sof_sock_bufs(fd, 8 << 20);
	/* the far end's GSO runs whole (ibpkt.c cuts them); SOFTOFED_NO_GSO
	 * turns GRO off with GSO, as on RoCE */
	if (!getenv("SOFTOFED_NO_GSO"))
		(void)setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof(one));
	if (fam == AF_INET) {
		sa.v4.sin_family = AF_INET;
		sa.v4.sin_port = htons(port);
	} else {
		sa.v6.sin6_family = AF_INET6;
		sa.v6.sin6_port = htons(port);
	}
	if (bind(fd, (struct sockaddr *)&sa, len))
		goto err;
	return fd;
err:
	one = -errno;
	close(fd);
	return one;
}

int tp_ib_start(const struct tp_ib_config *c)
{
	int fam = c->peer.ss_family, fd;
	union {
		struct sockaddr_in v4;
		struct sockaddr_in6 v6;
	} sa = {0};
	socklen_t len = sizeof(sa);

	if (tp_ibp.on)
		return -EBUSY;
	if ((fam != AF_INET && fam != AF_INET6) || !c->name || !c->name[0] ||
	    strlen(c->name) > IB_SOFL_NAME_LEN)
		return -EINVAL;
	fd = link_socket(fam, c->local_port);
	if (fd < 0)
		return fd;
	if (getsockname(fd, (struct sockaddr *)&sa, &len)) {
		int err = -errno;

		close(fd);
		return err;
	}
	memset(&tp_ibp, 0, sizeof(tp_ibp));
	tp_ibp.cnt = &tp_ibp.own_cnt;
	tp_ibp.fd = fd;
	tp_ibp.bound_port = ntohs(fam == AF_INET ? sa.v4.sin_port : sa.v6.sin6_port);
	tp_ibp.cfg = *c;
	snprintf(tp_ibp.name, sizeof(tp_ibp.name), "%s", c->name);
	tp_ibp.cfg.name = tp_ibp.name;
	tp_ibp.attr.state = IBV_PORT_DOWN;
	tp_ibp.attr.phys_state = IB_PHYS_POLLING;
	tp_ibp.attr.port_num = 1;
	tp_ibp.attr.active_mtu = IBV_MTU_4096;
	tp_ibp.attr.vl_cap = 1;
	tp_ibp.attr.node_guid = c->node_guid;
	tp_ibp.attr.port_guid = c->port_guid;
	tp_ibp.attr.subnet_prefix = 0xfe80000000000000ull;
	tp_ibp.attr.pkeys[0] = 0xffff; /* the default partition, full member */
	tp_ibp.gso = getenv("SOFTOFED_NO_GSO") == NULL;
	tp_ibp.on = true;
	tp.ib = &tp_ib_port;
	send_sofl(IB_SOFL_HELLO);
	tp_ibp.hello_ns = sof_now_ns();
	return 0;
}

int tp_ib_member_socket(void)
{
	if (!tp_ibp.on || tp_ibp.member)
		return -ENODEV;
	return link_socket(tp_ibp.cfg.peer.ss_family, tp_ibp.bound_port);
}

int tp_ib_attach(int fd, const struct sof_gid_shm *shm, struct tp_ib_counters *cnt)
{
	if (tp_ibp.on)
		return -EBUSY;
	memset(&tp_ibp, 0, sizeof(tp_ibp));
	tp_ibp.member = true;
	tp_ibp.fd = fd;
	tp_ibp.shm = shm;
	tp_ibp.cnt = cnt;
	tp_ibp.seq = atomic_load_explicit(&shm->seq, memory_order_acquire) + 1; /* read it now */
	tp_ibp.attr.state = IBV_PORT_DOWN;
	tp_ibp.gso = getenv("SOFTOFED_NO_GSO") == NULL;
	tp_ibp.on = true;
	tp_ib_member_sync();
	if (!tp_ibp.cfg.peer_len) {
		tp_ibp.on = false;
		tp_ibp.member = false;
		tp_ibp.cnt = &tp_ibp.own_cnt;
		return -ENODEV; /* an older daemon, or no port */
	}
	tp.ib = &tp_ib_port;
	return 0;
}

void tp_ib_detach(void)
{
	if (!tp_ibp.member)
		return;
	tp_ib_flush();
	tp_ib_direct_report(true);
	tp_ibp.on = false;
	tp_ibp.member = false;
	tp_ibp.cnt = &tp_ibp.own_cnt;
	tp_ibp.fd = -1;
	tp.ib = NULL;
}

void tp_ib_stop(void)
{
	if (!tp_ibp.on || tp_ibp.member)
		return;
	tp_ib_flush();
	tp_ib_direct_report(true);
	send_sofl(IB_SOFL_BYE);
	close(tp_ibp.fd);
	tp_ibp.on = false;
	tp.ib = NULL;
}
