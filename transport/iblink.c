/*
 * The InfiniBand port: the engine's second link layer (struct tp_port_ops,
 * tport.h), on a link of fabric/README.md's protocol — one UDP socket whose
 * datagrams to and from the far end (a switch port of the fabric, or
 * another host's port cabled directly) are IB packets, LRH through VCRC,
 * or SOFL link control messages.
 *
 * The link: HELLO once a second, the far end's HELLO (Polling or LinkUp)
 * within 3 s and no BYE since holds the physical link up (LinkUp); a
 * disabled port says Disabled in its HELLOs. The logical state follows
 * IBA 7.2: Down, Initialize when the physical link comes up, Armed and
 * Active only when the subnet manager sets them through the SMA
 * (tp_ib_set_state), back to Down when the link goes; in Armed the first
 * data packet received makes the port Active (IBA 7.2.3). Initialize and
 * Armed send and take only SMPs (VL15); Armed also takes data.
 *
 * Receiving, in the order a switch port and an HCA check (IBA 7.7, 7.8,
 * 7.9, 10.9.3): LRH (LVer, PktLen) and VCRC, LNH, GRH, ICRC (ib_parse:
 * PortRcvErrors); the port's state; VL15 only to QP0 and QP0 only on
 * VL15 (VL15Dropped); DLID ours under the LMC (the permissive LID only
 * for SMPs); the transport headers (roce_parse); the P_Key against the
 * port's table (not for QP0, whose SMPs carry none to check). Then the
 * classifier (tp_recv), with the LRH's SLID and SL in tp.rx_ib.
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
 * stay the daemon's.
 *
 * Sending: LRH (VL from the SL's SL2VL entry, VL15 for QP0's SMPs), GRH
 * when the path is global, the engine's transport headers and payload,
 * pad, ICRC and VCRC, one datagram each, queued and handed to the socket
 * in one sendmmsg at the engine's flush (the end of each event of the
 * host's loop) or when TX_BATCH wait; the socket is read RX_BATCH
 * datagrams a call (recvmmsg). Data leaves only while
 * Active; what may not leave is discarded and counted (PortXmitDiscards)
 * as a port does, and the transport recovers or fails as over a cut cable.
 */
#include "tp_ib.h"
#include "tport.h"

#include "sof_gid.h"
#include "sof_wr.h"
#include "sof_util.h"

#include <arpa/inet.h>
#include <endian.h>
#include <netinet/in.h>
#include <stdio.h>
#include <unistd.h>

#define HELLO_NS 1000000000ull
#define LINK_TIMEOUT_NS 3000000000ull
#define RX_BUDGET 64
/* datagrams a system call reads (recvmmsg) and sends (sendmmsg) */
#define RX_BATCH 16
#define TX_BATCH 32

static struct {
	bool on;
	bool member; /* a program's: the packet half on a member socket (tp_ib_attach) */
	int fd;
	uint16_t bound_port; /* the link socket's local UDP port */
	const struct sof_gid_shm *shm; /* member: the attributes the daemon publishes */
	uint32_t seq;		       /* member: shm's sequence number last read */
	struct tp_ib_config cfg;
	char name[IB_SOFL_NAME_LEN + 1];
	struct tp_ib_attr attr;
	struct tp_ib_counters *cnt; /* own_cnt, or a member's slot page */
	struct tp_ib_counters own_cnt;
	bool far_up;	   /* the far end's HELLO says Polling or LinkUp, no BYE since */
	uint64_t heard_ns; /* when its last such HELLO came */
	bool disabled;	   /* our port's PortPhysicalState is Disabled */
	bool known;	   /* our GUIDs are known: ASSIGN, or a direct link */
	uint64_t hello_ns;
	/* apart: a packet received may be answered while it is read; what
	 * ib_send built waits in tx until ib_flush (the engine's flush at
	 * the end of each event of the host's loop) or a full batch */
	struct {
		struct mmsghdr m[RX_BATCH];
		struct iovec iov[RX_BATCH];
		struct sockaddr_storage from[RX_BATCH];
		uint8_t buf[RX_BATCH][IB_MAX_PKT];
	} rx;
	struct {
		unsigned n;
		struct mmsghdr m[TX_BATCH];
		struct iovec iov[TX_BATCH];
		uint8_t buf[TX_BATCH][IB_MAX_PKT];
	} tx;
} ib = {.fd = -1, .cnt = &ib.own_cnt};

static void ib_flush(void);

void tp_ib_lid_gid(uint16_t lid, uint8_t gid[16])
{
	memset(gid, 0, 16);
	gid[0] = 0xfe;
	gid[1] = 0x80;
	gid[14] = (uint8_t)(lid >> 8);
	gid[15] = (uint8_t)lid;
}

bool tp_ib_on(void) { return ib.on; }

bool tp_ib_rx_lrh(uint16_t *slid, uint16_t *dlid, uint8_t *sl)
{
	if (!tp.rx_ib.on)
		return false;
	*slid = tp.rx_ib.slid;
	*dlid = tp.rx_ib.dlid;
	*sl = tp.rx_ib.sl;
	return true;
}
int tp_ib_fd(void) { return ib.on ? ib.fd : -1; }

/* A member's attributes are the daemon's, as it last published them: read
 * again whenever the page's sequence number moved. */
static void member_sync(void)
{
	struct sof_ib_port p;

	if (!ib.member || atomic_load_explicit(&ib.shm->seq, memory_order_acquire) == ib.seq)
		return;
	ib.seq = atomic_load_explicit(&ib.shm->seq, memory_order_acquire);
	if (sof_ib_read(ib.shm, &p) || p.present != 1) {
		ib.attr.state = IBV_PORT_DOWN; /* nothing leaves, nothing is taken */
		return;
	}
	ib.attr.state = p.state;
	ib.attr.phys_state = p.phys_state;
	ib.attr.port_num = p.port_num;
	ib.attr.lmc = p.lmc;
	ib.attr.lid = p.lid;
	ib.attr.sm_lid = p.sm_lid;
	ib.attr.sm_sl = p.sm_sl;
	ib.attr.active_mtu = p.active_mtu;
	ib.attr.vl_cap = p.vl_cap;
	ib.attr.node_guid = p.node_guid;
	ib.attr.port_guid = p.port_guid;
	ib.attr.subnet_prefix = p.subnet_prefix;
	for (unsigned i = 0; i < TP_IB_PKEYS; i++)
		ib.attr.pkeys[i] = i < SOF_IB_PKEYS ? p.pkeys[i] : 0;
	memcpy(ib.attr.sl2vl, p.sl2vl, sizeof(ib.attr.sl2vl));
	if (p.peer_len && p.peer_len <= sizeof(p.peer)) {
		memset(&ib.cfg.peer, 0, sizeof(ib.cfg.peer));
		memcpy(&ib.cfg.peer, p.peer, p.peer_len);
		ib.cfg.peer_len = p.peer_len;
	}
}

const struct tp_ib_attr *tp_ib_attr(void)
{
	member_sync();
	return &ib.attr;
}

const struct tp_ib_counters *tp_ib_counters(void)
{
	static struct tp_ib_counters sum;

	sum = *ib.cnt;
	if (!ib.member && ib.cfg.add_counters)
		ib.cfg.add_counters(&sum);
	return &sum;
}

const struct tp_ib_counters *tp_ib_own_counters(void) { return ib.cnt; }

static void changed(void)
{
	if (ib.cfg.changed)
		ib.cfg.changed();
}

/* ---- link control ------------------------------------------------------------ */

static void send_sofl(uint8_t type)
{
	struct ib_sofl m = {.type = type, .port = ib.attr.port_num};
	uint8_t b[IB_SOFL_LEN];

	m.phys_state = ib.disabled			      ? IB_PHYS_DISABLED
		       : ib.attr.phys_state == IB_PHYS_LINKUP ? IB_PHYS_LINKUP
							      : IB_PHYS_POLLING;
	/* fabric/README.md: a host says node_guid 0 until it knows its own */
	if (ib.known) {
		m.node_guid = ib.attr.node_guid;
		m.port_guid = ib.attr.port_guid;
	}
	snprintf(m.name, sizeof(m.name), "%s", ib.name);
	ib_sofl_write(b, &m);
	ib_flush(); /* after the packets before it */
	(void)sendto(ib.fd, b, sizeof(b), MSG_DONTWAIT, (const struct sockaddr *)&ib.cfg.peer,
		     ib.cfg.peer_len);
}

/* The physical link follows the far end's HELLOs and our own Disabled;
 * the logical state follows the physical link (IBA 7.2). */
static void link_update(void)
{
	bool up = ib.far_up && !ib.disabled;
	uint8_t phys = ib.disabled ? IB_PHYS_DISABLED : up ? IB_PHYS_LINKUP : IB_PHYS_POLLING;

	if (phys == ib.attr.phys_state)
		return;
	if (ib.attr.phys_state == IB_PHYS_LINKUP) {
		ib.cnt->link_downed++;
		ib.attr.state = IBV_PORT_DOWN;
		tp_log("ib: link down (%s), port Down", ib_phys_names[phys]);
	}
	ib.attr.phys_state = phys;
	if (phys == IB_PHYS_LINKUP) {
		ib.attr.state = IBV_PORT_INIT;
		tp_log("ib: link up to %s, port Initialize", ib.attr.peer[0] ? ib.attr.peer : "?");
		/* tell the far end at once, so that it need not wait a second */
		send_sofl(IB_SOFL_HELLO);
	}
	changed();
}

static void sofl_input(const uint8_t *buf, size_t len)
{
	struct ib_sofl m;

	if (ib_sofl_parse(buf, len, &m)) {
		ib.cnt->link_bad++;
		return;
	}
	ib.cnt->link_msgs++;
	switch (m.type) {
	case IB_SOFL_HELLO:
		snprintf(ib.attr.peer, sizeof(ib.attr.peer), "%s", m.name);
		/* a host at the far end (a direct link) gives no ASSIGN: our
		 * own GUIDs stand */
		if (m.node_guid)
			ib.known = true;
		ib.far_up = m.phys_state == IB_PHYS_POLLING || m.phys_state == IB_PHYS_LINKUP;
		if (ib.far_up)
			ib.heard_ns = sof_now_ns();
		break;
	case IB_SOFL_BYE:
		ib.far_up = false;
		break;
	case IB_SOFL_ASSIGN:
		if (strcmp(m.name, ib.name) || !m.node_guid || !m.port_guid) {
			ib.cnt->link_bad++;
			return;
		}
		if (!ib.known || m.node_guid != ib.attr.node_guid ||
		    m.port_guid != ib.attr.port_guid || m.port != ib.attr.port_num)
			tp_log("ib: assigned node_guid %016llx port_guid %016llx port %u",
			       (unsigned long long)m.node_guid, (unsigned long long)m.port_guid,
			       m.port);
		ib.attr.node_guid = m.node_guid;
		ib.attr.port_guid = m.port_guid;
		if (m.port)
			ib.attr.port_num = m.port;
		ib.known = true;
		/* ASSIGN answers our HELLO: the fabric's port is there */
		ib.far_up = true;
		ib.heard_ns = sof_now_ns();
		changed();
		break;
	}
	link_update();
}

void tp_ib_tick(void)
{
	uint64_t now = sof_now_ns();

	if (!ib.on)
		return;
	if (ib.far_up && now - ib.heard_ns > LINK_TIMEOUT_NS)
		ib.far_up = false;
	link_update();
	if (now - ib.hello_ns >= HELLO_NS - HELLO_NS / 10) {
		ib.hello_ns = now;
		send_sofl(IB_SOFL_HELLO);
	}
}

/* ---- the port's settings (the SMA's PortInfo Set) ------------------------------ */

int tp_ib_set_state(uint8_t state)
{
	uint8_t cur = ib.attr.state;

	switch (state) {
	case 0: /* NoStateChange */
		return 0;
	case IBV_PORT_DOWN:
		/* the link retrains: Down, then Initialize when it is up */
		if (cur != IBV_PORT_DOWN) {
			ib.attr.state = IBV_PORT_DOWN;
			if (ib.attr.phys_state == IB_PHYS_LINKUP)
				ib.attr.state = IBV_PORT_INIT;
			changed();
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
		ib.attr.state = state;
		tp_log("ib: port %s", state == IBV_PORT_ACTIVE ? "Active" : "Armed");
		changed();
	}
	return 0;
}

int tp_ib_set_lid(uint16_t lid, uint8_t lmc, uint16_t sm_lid, uint8_t sm_sl)
{
	if (lid > IB_LID_UCAST_MAX || sm_lid > IB_LID_UCAST_MAX || lmc > 7 || sm_sl > 15)
		return -EINVAL;
	ib.attr.lid = lid;
	ib.attr.lmc = lmc;
	ib.attr.sm_lid = sm_lid;
	ib.attr.sm_sl = sm_sl;
	changed();
	return 0;
}

int tp_ib_set_mtu(uint8_t mtu)
{
	if (mtu < IBV_MTU_256 || mtu > IBV_MTU_4096)
		return -EINVAL;
	ib.attr.active_mtu = mtu;
	changed();
	return 0;
}

void tp_ib_set_subnet_prefix(uint64_t prefix)
{
	ib.attr.subnet_prefix = prefix;
	changed();
}

int tp_ib_set_pkey(unsigned index, uint16_t pkey)
{
	if (index >= TP_IB_PKEYS)
		return -EINVAL;
	ib.attr.pkeys[index] = pkey;
	changed();
	return 0;
}

int tp_ib_set_sl2vl(unsigned sl, uint8_t vl)
{
	if (sl > 15 || (vl >= ib.attr.vl_cap && vl != IB_VL15))
		return -EINVAL;
	ib.attr.sl2vl[sl] = vl;
	changed();
	return 0;
}

void tp_ib_disable(bool off)
{
	ib.disabled = off;
	if (ib.on) {
		send_sofl(off ? IB_SOFL_BYE : IB_SOFL_HELLO);
		link_update();
	}
}

/* ---- receiving ------------------------------------------------------------------- */

/* IBA 10.9.3: the P_Key matches an entry of the table when the low 15
 * bits are equal and at least one of the two is a full member. */
bool tp_ib_pkey_ok(uint16_t pkey)
{
	for (unsigned i = 0; i < TP_IB_PKEYS; i++)
		if (tp_pkey_match(ib.attr.pkeys[i], pkey))
			return true;
	return false;
}

void tp_ib_pkey_violation(void) { ib.cnt->pkey_violations++; }

static bool dlid_ours(uint16_t dlid)
{
	uint16_t mask = (uint16_t) ~((1u << ib.attr.lmc) - 1);

	return ib.attr.lid && dlid <= IB_LID_UCAST_MAX && (dlid & mask) == (ib.attr.lid & mask);
}

/* IBA 8.3.1, 10.5.2.1: a multicast DLID (0xC000..0xFFFE) carries a GRH
 * whose DGID is the group's MGID; the port takes it for the QPs attached
 * to that MGID (transport/mcast.c), which the fabric's MFTs sent here. */
static bool ib_mcast_addr(uint16_t dlid, bool global, const uint8_t dgid[16])
{
	return dlid > IB_LID_UCAST_MAX && dlid != IB_LID_PERMISSIVE && global && dgid[0] == 0xff;
}

static void packet_input(const uint8_t *buf, size_t len)
{
	const uint8_t *tpkt, *payload;
	struct ib_lrh l;
	struct ib_grh g;
	struct roce_hdr h;
	struct roce_addr a;
	uint32_t paylen;
	size_t tlen;
	enum ib_drop d;
	enum roce_drop rd;
	bool smp;

	ib.cnt->rcv_pkts++;
	ib.cnt->rcv_data += len / 4;
	tp_count(SOF_CNT_rx_packets, 1);
	tp_count(SOF_CNT_rx_bytes, len);
	d = ib_parse(buf, len, &l, &g, &tpkt, &tlen);
	if (d != IB_DROP_NONE) {
		ib.cnt->drops[d]++;
		ib.cnt->rcv_errors++;
		if (d == IB_DROP_ICRC)
			tp_drop(SOF_DROP_icrc);
		return;
	}
	rd = roce_parse(tpkt, tlen, &h, &payload, &paylen);
	if (rd != ROCE_DROP_NONE) {
		ib.cnt->rcv_errors++;
		tp_drop((enum sof_dropctr)(rd - 1));
		return;
	}
	/* IBA 7.6.5: VL15 carries SMPs only, to QP0; QP0 takes nothing else */
	smp = h.dqpn == 0;
	if ((l.vl == IB_VL15) != smp || (smp && h.opcode != ROCE_UD_SEND_ONLY)) {
		ib.cnt->vl15_dropped += l.vl == IB_VL15;
		tp_drop(SOF_DROP_qpn);
		return;
	}
	if (ib.attr.phys_state != IB_PHYS_LINKUP || ib.attr.state == IBV_PORT_DOWN ||
	    (!smp && ib.attr.state == IBV_PORT_INIT)) {
		ib.cnt->state_drops++;
		return;
	}
	if (!(smp && l.dlid == IB_LID_PERMISSIVE) && !dlid_ours(l.dlid) &&
	    !(!smp && ib_mcast_addr(l.dlid, l.lnh == IB_LNH_GLOBAL, g.dgid))) {
		ib.cnt->dlid_drops++;
		return;
	}
	if (!smp && !tp_ib_pkey_ok(h.pkey)) {
		ib.cnt->pkey_violations++;
		tp_drop(SOF_DROP_pkey);
		return;
	}
	/* IBA 7.2.3: a data packet received in Armed makes the port Active */
	if (!smp && ib.attr.state == IBV_PORT_ARMED && !ib.member) {
		ib.attr.state = IBV_PORT_ACTIVE;
		tp_log("ib: port Active (data received while Armed)");
		changed();
	}
	memset(&a, 0, sizeof(a));
	if (l.lnh == IB_LNH_GLOBAL) {
		memcpy(a.src, g.sgid, 16);
		memcpy(a.dst, g.dgid, 16);
	} else {
		tp_ib_lid_gid(l.slid, a.src);
		tp_ib_lid_gid(l.dlid, a.dst);
	}
	tp.rx_ib.on = true;
	tp.rx_ib.slid = l.slid;
	tp.rx_ib.dlid = l.dlid;
	tp.rx_ib.sl = l.sl;
	tp.rx_ib.global = l.lnh == IB_LNH_GLOBAL;
	tp_recv(&h, payload, paylen, &a);
	tp.rx_ib.on = false;
}

static bool from_peer(const struct sockaddr_storage *src, socklen_t len)
{
	const struct sockaddr_storage *p = &ib.cfg.peer;

	if (src->ss_family != p->ss_family)
		return false;
	if (p->ss_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)src, *y = (const void *)p;

		return len >= sizeof(*x) && x->sin_port == y->sin_port &&
		       x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	if (p->ss_family == AF_INET6) {
		const struct sockaddr_in6 *x = (const void *)src, *y = (const void *)p;

		return len >= sizeof(*x) && x->sin6_port == y->sin6_port &&
		       !memcmp(&x->sin6_addr, &y->sin6_addr, 16);
	}
	return false;
}

int tp_ib_rx_fd(int fd)
{
	int n = 0;

	member_sync();
	while (ib.on && n < RX_BUDGET) {
		int got;

		for (int i = 0; i < RX_BATCH; i++) {
			ib.rx.iov[i] = (struct iovec){ib.rx.buf[i], sizeof(ib.rx.buf[i])};
			ib.rx.m[i].msg_hdr = (struct msghdr){.msg_name = &ib.rx.from[i],
							     .msg_namelen = sizeof(ib.rx.from[i]),
							     .msg_iov = &ib.rx.iov[i],
							     .msg_iovlen = 1};
		}
		got = recvmmsg(fd, ib.rx.m, RX_BATCH, MSG_DONTWAIT | MSG_TRUNC, NULL);
		if (got <= 0)
			break;
		for (int i = 0; i < got && ib.on; i++) {
			const uint8_t *p = ib.rx.buf[i];
			size_t r = ib.rx.m[i].msg_len;

			/* a link has two ends: anything else is not on it */
			if (!from_peer(&ib.rx.from[i], ib.rx.m[i].msg_hdr.msg_namelen)) {
				ib.cnt->link_bad++;
				continue;
			}
			if (r > sizeof(ib.rx.buf[i]) || (ib.rx.m[i].msg_hdr.msg_flags & MSG_TRUNC)) {
				ib.cnt->rcv_errors++;
				ib.cnt->drops[IB_DROP_PKTLEN]++;
				continue;
			}
			/* link control is the daemon's (member 0 of the group) */
			if (ib_is_sofl(p, r) && ib.member)
				ib.cnt->link_bad++;
			else if (ib_is_sofl(p, r))
				sofl_input(p, r);
			else
				packet_input(p, r);
		}
		n += got;
		if (got < RX_BATCH)
			break;
	}
	tp_input_end();
	return n;
}

void tp_ib_rx(void) { (void)tp_ib_rx_fd(ib.fd); }

/* ---- sending --------------------------------------------------------------------- */

static int ib_send(const struct tp_path *path, struct roce_hdr *h, uint32_t paylen,
		   tp_gather_fn gather, void *arg, const struct iovec *ref, uint32_t nref)
{
	bool smp = (h->opcode & ROCE_SVC_MASK) == ROCE_SVC_UD && h->sqpn == 0;
	struct ib_lrh l = {.sl = path->sl & 0xf, .dlid = path->dlid};
	uint8_t *p;
	size_t hl = IB_LRH_LEN, bl, len;
	uint32_t icrc;
	uint16_t vcrc;
	int err;

	if (paylen > 4096)
		return -EMSGSIZE;
	member_sync();
	if (ib.tx.n == TX_BATCH)
		ib_flush();
	p = ib.tx.buf[ib.tx.n];
	if (path->global)
		hl += IB_GRH_LEN;
	h->pad = (uint8_t)((4 - (paylen & 3)) & 3);
	bl = roce_hdr_write(p + hl, h);
	if (!bl)
		return -EINVAL;
	if (ref) {
		size_t off = hl + bl;

		for (uint32_t i = 0; i < nref; i++) {
			memcpy(p + off, ref[i].iov_base, ref[i].iov_len);
			off += ref[i].iov_len;
		}
	} else if (paylen) {
		err = gather(arg, p + hl + bl, paylen);
		if (err)
			return err;
	}
	len = hl + bl + paylen;
	memset(p + len, 0, h->pad);
	len += h->pad;
	/* Initialize and Armed send SMPs only (IBA 7.2) */
	if (!ib.on || ib.attr.phys_state != IB_PHYS_LINKUP || ib.attr.state == IBV_PORT_DOWN ||
	    (!smp && ib.attr.state != IBV_PORT_ACTIVE)) {
		ib.cnt->xmit_discards++;
		return 0;
	}
	l.vl = smp ? IB_VL15 : ib.attr.sl2vl[l.sl];
	l.lnh = path->global ? IB_LNH_GLOBAL : IB_LNH_LOCAL;
	l.pktlen = (uint16_t)((len + ROCE_ICRC_LEN) / 4);
	/* an SMP to the permissive LID goes from it too (directed route) */
	l.slid = smp && path->dlid == IB_LID_PERMISSIVE
		     ? IB_LID_PERMISSIVE
		     : (uint16_t)(ib.attr.lid | (path->path_bits & ((1u << ib.attr.lmc) - 1)));
	ib_lrh_write(p, &l);
	if (path->global) {
		struct ib_grh g = {.ipver = 6,
				   .tclass = path->tclass,
				   .flow_label = path->flow_label,
				   .paylen = (uint16_t)(len - hl + ROCE_ICRC_LEN),
				   .nxthdr = IB_GRH_NXTHDR,
				   .hop_limit = path->hop_limit};

		memcpy(g.sgid, path->sgid, 16);
		memcpy(g.dgid, path->dgid, 16);
		ib_grh_write(p + IB_LRH_LEN, &g);
	}
	icrc = ib_icrc(p, len);
	p[len++] = (uint8_t)icrc;
	p[len++] = (uint8_t)(icrc >> 8);
	p[len++] = (uint8_t)(icrc >> 16);
	p[len++] = (uint8_t)(icrc >> 24);
	vcrc = ib_vcrc(p, len);
	p[len++] = (uint8_t)vcrc;
	p[len++] = (uint8_t)(vcrc >> 8);
	ib.tx.iov[ib.tx.n] = (struct iovec){p, len};
	ib.tx.m[ib.tx.n].msg_hdr = (struct msghdr){.msg_name = &ib.cfg.peer,
						   .msg_namelen = ib.cfg.peer_len,
						   .msg_iov = &ib.tx.iov[ib.tx.n],
						   .msg_iovlen = 1};
	ib.tx.n++;
	return 0;
}

/* What ib_send queued, in order, in as few system calls as the socket
 * takes; what it refuses is lost, as on a wire. */
static void ib_flush(void)
{
	unsigned done = 0;

	while (done < ib.tx.n) {
		int r = ib.on ? sendmmsg(ib.fd, ib.tx.m + done, ib.tx.n - done, MSG_DONTWAIT) : -1;

		if (r <= 0) {
			ib.cnt->xmit_discards++;
			done++;
			continue;
		}
		for (unsigned i = done; i < done + (unsigned)r; i++) {
			size_t len = ib.tx.iov[i].iov_len;

			ib.cnt->xmit_pkts++;
			ib.cnt->xmit_data += len / 4;
			tp_count(SOF_CNT_tx_packets, 1);
			tp_count(SOF_CNT_tx_bytes, len);
		}
		done += (unsigned)r;
	}
	ib.tx.n = 0;
}

static uint16_t ib_flow_port(bool v6, uint32_t sqpn, uint32_t dqpn)
{
	(void)v6;
	(void)sqpn;
	(void)dqpn;
	return 0; /* an IB path has no entropy field */
}

const struct tp_port_ops tp_ib_port = {
    .name = "InfiniBand",
    .addr_len = 16,
    .max_payload = 4096,
    .send = ib_send,
    .flush = ib_flush,
    .flow_port = ib_flow_port,
};

/* ---- what the roles ask (tport.h) ------------------------------------------------- */

static void port_gid(uint8_t gid[16])
{
	uint64_t v = htobe64(ib.attr.subnet_prefix);

	memcpy(gid, &v, 8);
	v = htobe64(ib.attr.port_guid);
	memcpy(gid + 8, &v, 8);
}

bool tp_ib_ud_path(struct tp_path *p, const uint8_t dgid[16], uint16_t dlid, uint8_t sl,
		   uint8_t path_bits, bool global, uint8_t tclass, uint8_t hop_limit,
		   uint32_t flow_label)
{
	if (!ib.on || !dlid || sl > 15 ||
	    (dlid > IB_LID_UCAST_MAX && !ib_mcast_addr(dlid, global, dgid)))
		return false;
	memset(p, 0, sizeof(*p));
	p->link = TP_LINK_IB;
	p->dlid = dlid;
	p->sl = sl;
	p->path_bits = path_bits;
	p->global = global;
	if (global) {
		port_gid(p->sgid);
		memcpy(p->dgid, dgid, 16);
		p->tclass = tclass;
		p->hop_limit = hop_limit;
		p->flow_label = flow_label & 0xfffff;
	} else {
		tp_ib_lid_gid((uint16_t)(ib.attr.lid | (path_bits & ((1u << ib.attr.lmc) - 1))),
			      p->sgid);
		tp_ib_lid_gid(dlid, p->dgid);
	}
	return true;
}

void tp_ib_wc_lrh(uint16_t *slid, uint8_t *sl, uint8_t *path_bits)
{
	if (!tp.rx_ib.on)
		return;
	*slid = tp.rx_ib.slid;
	*sl = tp.rx_ib.sl;
	*path_bits = (uint8_t)(tp.rx_ib.dlid & ((1u << ib.attr.lmc) - 1));
}

uint32_t tp_ud_grh(uint8_t grh[40], const struct roce_addr *a, uint32_t paylen)
{
	struct ib_grh g = {.ipver = 6,
			   .paylen =
			       (uint16_t)(ROCE_BTH_LEN + ROCE_DETH_LEN + paylen + ROCE_ICRC_LEN),
			   .nxthdr = IB_GRH_NXTHDR,
			   .hop_limit = 64};

	if (!tp.rx_ib.on) {
		sof_make_grh(grh, a->src, a->dst, 0, 64, 0, paylen);
		return IBV_WC_GRH | (uint32_t)sof_roce_wc_sl(a->src, a->dst) << 8;
	}
	memset(grh, 0, IB_GRH_LEN);
	if (!tp.rx_ib.global)
		return 0;
	memcpy(g.sgid, a->src, 16);
	memcpy(g.dgid, a->dst, 16);
	ib_grh_write(grh, &g);
	return IBV_WC_GRH;
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

	if (ib.on)
		return -EBUSY;
	if ((fam != AF_INET && fam != AF_INET6) || !c->name || !c->name[0] ||
	    strlen(c->name) > IB_SOFL_NAME_LEN)
		return -EINVAL;
	fd = link_socket(fam, c->local_port);
	if (fd < 0)
		return fd;
	if (getsockname(fd, (struct sockaddr *)&sa, &len)) {
		fd = -errno;
		close(-fd);
		return fd;
	}
	memset(&ib, 0, sizeof(ib));
	ib.cnt = &ib.own_cnt;
	ib.fd = fd;
	ib.bound_port = ntohs(fam == AF_INET ? sa.v4.sin_port : sa.v6.sin6_port);
	ib.cfg = *c;
	snprintf(ib.name, sizeof(ib.name), "%s", c->name);
	ib.cfg.name = ib.name;
	ib.attr.state = IBV_PORT_DOWN;
	ib.attr.phys_state = IB_PHYS_POLLING;
	ib.attr.port_num = 1;
	ib.attr.active_mtu = IBV_MTU_4096;
	ib.attr.vl_cap = 1;
	ib.attr.node_guid = c->node_guid;
	ib.attr.port_guid = c->port_guid;
	ib.attr.subnet_prefix = 0xfe80000000000000ull;
	ib.attr.pkeys[0] = 0xffff; /* the default partition, full member */
	ib.on = true;
	tp.ib = &tp_ib_port;
	send_sofl(IB_SOFL_HELLO);
	ib.hello_ns = sof_now_ns();
	return 0;
}

int tp_ib_member_socket(void)
{
	if (!ib.on || ib.member)
		return -ENODEV;
	return link_socket(ib.cfg.peer.ss_family, ib.bound_port);
}

int tp_ib_attach(int fd, const struct sof_gid_shm *shm, struct tp_ib_counters *cnt)
{
	if (ib.on)
		return -EBUSY;
	memset(&ib, 0, sizeof(ib));
	ib.member = true;
	ib.fd = fd;
	ib.shm = shm;
	ib.cnt = cnt;
	ib.seq = atomic_load_explicit(&shm->seq, memory_order_acquire) + 1; /* read it now */
	ib.attr.state = IBV_PORT_DOWN;
	ib.on = true;
	member_sync();
	if (!ib.cfg.peer_len) {
		ib.on = false;
		ib.member = false;
		ib.cnt = &ib.own_cnt;
		return -ENODEV; /* an older daemon, or no port */
	}
	tp.ib = &tp_ib_port;
	return 0;
}

void tp_ib_detach(void)
{
	if (!ib.member)
		return;
	ib_flush();
	ib.on = false;
	ib.member = false;
	ib.cnt = &ib.own_cnt;
	ib.fd = -1;
	tp.ib = NULL;
}

void tp_ib_stop(void)
{
	if (!ib.on || ib.member)
		return;
	send_sofl(IB_SOFL_BYE);
	close(ib.fd);
	ib.on = false;
	tp.ib = NULL;
}
