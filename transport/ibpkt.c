/*
 * The InfiniBand port, its packet half (the link half is iblink.c, the
 * state both share ibport.h): what the daemon's port and a program's
 * member socket (tp_ib_attach) do alike.
 *
 * Receiving, in the order a switch port and an HCA check (IBA 7.7, 7.8,
 * 7.9, 10.9.3): LRH (LVer, PktLen) and VCRC, LNH, GRH, ICRC (ib_parse:
 * PortRcvErrors); the port's state; VL15 only to QP0 and QP0 only on
 * VL15 (VL15Dropped); DLID ours under the LMC (the permissive LID only
 * for SMPs); the transport headers (roce_parse); the P_Key against the
 * port's table (not for QP0, whose SMPs carry none to check). Then the
 * classifier (tp_recv), with the LRH's SLID and SL in tp.rx_ib.
 *
 * Sending: LRH (VL from the SL's SL2VL entry, VL15 for QP0's SMPs), GRH
 * when the path is global, the engine's transport headers and payload,
 * pad, ICRC and VCRC (an RC payload by reference, not copied: the
 * kernel's copy into the datagram is its only one), queued and handed to
 * the socket in one sendmmsg at the engine's flush (the end of each event
 * of the host's loop) or when TP_IB_TX_BATCH wait; a run of packets of one size (the last may be
 * shorter) goes as one UDP GSO send (UDP_SEGMENT): the kernel cuts it into
 * the same datagrams, and crosses veth and bridge once for all of them.
 * The socket is read TP_IB_RX_BATCH datagrams a call (recvmmsg), with UDP
 * GRO: a datagram may be a run the kernel kept joined (the fabric sends
 * its runs to a host as GSO sends of one DestQP, so the steering of the
 * first packet holds for all); it is cut here, and every packet checked
 * on its own as above. Data leaves only while
 * Active; what may not leave is discarded and counted (PortXmitDiscards)
 * as a port does, and the transport recovers or fails as over a cut cable.
 *
 * A program's UD datagram to a group goes to the daemon too, over loopback
 * (the fabric does not send it back to this port), for this host's QPs
 * attached to the group (tp_ib_ud_mcast_loop, tp_ib_ud_loop_input).
 */
#include "ibport.h"
#include "sys_msg.h"

#include "sof_bytes.h"
#include "sof_util.h"
#include "sof_wr.h"

#include <arpa/inet.h>
#include <endian.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <unistd.h>

#define RX_BUDGET 64

void tp_ib_lid_gid(uint16_t lid, uint8_t gid[16])
{
	memset(gid, 0, 16);
	gid[0] = 0xfe;
	gid[1] = 0x80;
	gid[14] = (uint8_t)(lid >> 8);
	gid[15] = (uint8_t)lid;
}

bool tp_ib_rx_lrh(uint16_t *slid, uint16_t *dlid, uint8_t *sl)
{
	if (!tp.rx_ib.on)
		return false;
	*slid = tp.rx_ib.slid;
	*dlid = tp.rx_ib.dlid;
	*sl = tp.rx_ib.sl;
	return true;
}
/* ---- receiving ------------------------------------------------------------------- */

/* IBA 10.9.3: the P_Key matches an entry of the table when the low 15
 * bits are equal and at least one of the two is a full member. */
bool tp_ib_pkey_ok(uint16_t pkey)
{
	for (unsigned i = 0; i < TP_IB_PKEYS; i++)
		if (tp_pkey_match(tp_ibp.attr.pkeys[i], pkey))
			return true;
	return false;
}

void tp_ib_pkey_violation(void) { tp_ibp.cnt->pkey_violations++; }

static bool dlid_ours(uint16_t dlid)
{
	uint16_t mask = (uint16_t) ~((1u << tp_ibp.attr.lmc) - 1);

	return tp_ibp.attr.lid && dlid <= IB_LID_UCAST_MAX &&
	       (dlid & mask) == (tp_ibp.attr.lid & mask);
}

/* IBA 8.3.1, 10.5.2.1: a multicast DLID (0xC000..0xFFFE) carries a GRH
 * whose DGID is the group's MGID; the port takes it for the QPs attached
 * to that MGID (transport/mcast.c), which the fabric's MFTs sent here. */
bool tp_ib_mcast_addr(uint16_t dlid, bool global, const uint8_t dgid[16])
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

	tp_ibp.cnt->rcv_pkts++;
	tp_ibp.cnt->rcv_data += len / 4;
	tp_count(SOF_CNT_rx_packets, 1);
	tp_count(SOF_CNT_rx_bytes, len);
	d = ib_parse(buf, len, &l, &g, &tpkt, &tlen);
	if (d != IB_DROP_NONE) {
		tp_ibp.cnt->drops[d]++;
		tp_ibp.cnt->rcv_errors++;
		if (d == IB_DROP_ICRC)
			tp_drop(SOF_DROP_icrc);
		return;
	}
	rd = roce_parse(tpkt, tlen, &h, &payload, &paylen);
	if (rd != ROCE_DROP_NONE) {
		tp_ibp.cnt->rcv_errors++;
		tp_drop((enum sof_dropctr)(rd - 1));
		return;
	}
	/* IBA 7.6.5: VL15 carries SMPs only, to QP0; QP0 takes nothing else */
	smp = h.dqpn == 0;
	if ((l.vl == IB_VL15) != smp || (smp && h.opcode != ROCE_UD_SEND_ONLY)) {
		tp_ibp.cnt->vl15_dropped += l.vl == IB_VL15;
		tp_drop(SOF_DROP_qpn);
		return;
	}
	if (tp_ibp.attr.phys_state != IB_PHYS_LINKUP || tp_ibp.attr.state == IBV_PORT_DOWN ||
	    (!smp && tp_ibp.attr.state == IBV_PORT_INIT)) {
		tp_ibp.cnt->state_drops++;
		return;
	}
	if (!(smp && l.dlid == IB_LID_PERMISSIVE) && !dlid_ours(l.dlid) &&
	    !(!smp && tp_ib_mcast_addr(l.dlid, l.lnh == IB_LNH_GLOBAL, g.dgid))) {
		tp_ibp.cnt->dlid_drops++;
		return;
	}
	if (!smp && !tp_ib_pkey_ok(h.pkey)) {
		tp_ibp.cnt->pkey_violations++;
		tp_drop(SOF_DROP_pkey);
		return;
	}
	/* IBA 7.2.3: a data packet received in Armed makes the port Active */
	if (!smp && tp_ibp.attr.state == IBV_PORT_ARMED && !tp_ibp.member) {
		tp_ibp.attr.state = IBV_PORT_ACTIVE;
		tp_log("ib: port Active (data received while Armed)");
		tp_ib_changed();
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
	const struct sockaddr_storage *p = &tp_ibp.cfg.peer;

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

/* One datagram's packet or SOFL message (link control is the daemon's:
 * member 0 of the group). */
static void link_input(const uint8_t *p, size_t len)
{
	if (ib_is_sofl(p, len) && tp_ibp.member)
		tp_ibp.cnt->link_bad++;
	else if (ib_is_sofl(p, len))
		tp_ib_link_input(p, len);
	else
		packet_input(p, len);
}

unsigned tp_ib_datagram(const uint8_t *p, size_t len, size_t seg)
{
	unsigned n = 0;

	if (!seg || seg >= len) {
		link_input(p, len);
		return 1;
	}
	/* the packets the kernel joined (a GSO run of the far end): each of
	 * seg bytes, the last what is left, each checked on its own */
	for (size_t off = 0; off < len && tp_ibp.on; off += seg, n++)
		link_input(p + off, len - off < seg ? len - off : seg);
	return n;
}

int tp_ib_rx_fd(int fd)
{
	int n = 0, reads = 0;

	tp_ib_member_sync();
	if (!tp_ibp.rx.ready) {
		for (int i = 0; i < TP_IB_RX_BATCH; i++) {
			tp_ibp.rx.iov[i] =
			    (struct iovec){tp_ibp.rx.buf[i], sizeof(tp_ibp.rx.buf[i])};
			tp_ibp.rx.m[i].msg_hdr = (struct msghdr){.msg_name = &tp_ibp.rx.from[i],
								 .msg_iov = &tp_ibp.rx.iov[i],
								 .msg_iovlen = 1,
								 .msg_control = &tp_ibp.rx.ctl[i]};
		}
		tp_ibp.rx.want = 1;
		tp_ibp.rx.ready = true;
	}
	while (tp_ibp.on && reads < RX_BUDGET) {
		unsigned want = tp_ibp.rx.want;
		int got;

		/* only the lengths the kernel wrote back need setting again */
		for (unsigned i = 0; i < want; i++) {
			tp_ibp.rx.m[i].msg_hdr.msg_namelen = sizeof(tp_ibp.rx.from[i]);
			tp_ibp.rx.m[i].msg_hdr.msg_controllen = sizeof(tp_ibp.rx.ctl[i]);
			tp_ibp.rx.m[i].msg_hdr.msg_flags = 0;
		}
		got = tp_sys_recvmmsg(fd, tp_ibp.rx.m, want, MSG_DONTWAIT | MSG_TRUNC);
		/* as udp.c's tp_rx: ask next for what this read found, twice
		 * as many when it found all it asked for, one after an empty
		 * read (a ping-pong's poll is one recvmsg and does not pay
		 * for a try on the emptied socket; a stream soon reads the
		 * whole batch) */
		if (got > 0 && (unsigned)got == want)
			tp_ibp.rx.want = want * 2 < TP_IB_RX_BATCH ? want * 2 : TP_IB_RX_BATCH;
		else
			tp_ibp.rx.want = got > 1 ? (unsigned)got : 1;
		if (got <= 0)
			break;
		for (int i = 0; i < got && tp_ibp.on; i++) {
			struct msghdr *mh = &tp_ibp.rx.m[i].msg_hdr;
			size_t r = tp_ibp.rx.m[i].msg_len;
			bool peer = from_peer(&tp_ibp.rx.from[i], mh->msg_namelen);
			int direct = 0;

			/* a link has two ends: anything else is not on it, but
			 * a datagram a host sent on one of the fabric's direct
			 * paths that ends here (ibdirect.c), or a program's
			 * multicast to this host's QPs (one packet a datagram,
			 * never a joined run) */
			if (!peer && r <= sizeof(tp_ibp.rx.buf[i]))
				direct =
				    tp_ib_direct_from(&tp_ibp.rx.from[i], mh->msg_namelen,
						      tp_ibp.rx.buf[i], r, sof_udp_gro_size(mh));
			if (!peer && direct < 0) {
				tp_ibp.cnt->direct_bad++; /* from a host, on no route here */
				continue;
			}
			if (!peer && !direct) {
				if (tp_ibp.member || r > sizeof(tp_ibp.rx.buf[i]) ||
				    sof_udp_gro_size(mh) != 0 ||
				    !tp_ib_ud_loop_input(&tp_ibp.rx.from[i], mh->msg_namelen,
							 tp_ibp.rx.buf[i], r))
					tp_ibp.cnt->link_bad++;
				continue;
			}
			if (r > sizeof(tp_ibp.rx.buf[i]) ||
			    (mh->msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
				tp_ibp.cnt->rcv_errors++;
				tp_ibp.cnt->drops[IB_DROP_PKTLEN]++;
				continue;
			}
			n += (int)tp_ib_datagram(tp_ibp.rx.buf[i], r, sof_udp_gro_size(mh));
		}
		reads += got;
		if (got < TP_IB_RX_BATCH)
			break;
	}
	tp_input_end();
	return n;
}

void tp_ib_rx(void) { (void)tp_ib_rx_fd(tp_ibp.fd); }

/* ---- sending --------------------------------------------------------------------- */

/* Append the ICRC (IBA 7.8.1) and the VCRC (7.8.2) to the packet in the
 * n pieces at v, whose last piece has room after it for them; that piece
 * grows by them. The packet's new length. */
static size_t seal_iov(struct iovec *v, unsigned n)
{
	uint8_t *t = (uint8_t *)v[n - 1].iov_base + v[n - 1].iov_len;
	uint32_t icrc = ib_icrc_iov(v, n);
	uint16_t vcrc;
	size_t len = 0;

	t[0] = (uint8_t)icrc;
	t[1] = (uint8_t)(icrc >> 8);
	t[2] = (uint8_t)(icrc >> 16);
	t[3] = (uint8_t)(icrc >> 24);
	v[n - 1].iov_len += ROCE_ICRC_LEN;
	vcrc = ib_vcrc_iov(v, n);
	t[4] = (uint8_t)vcrc;
	t[5] = (uint8_t)(vcrc >> 8);
	v[n - 1].iov_len += IB_VCRC_LEN;
	for (unsigned i = 0; i < n; i++)
		len += v[i].iov_len;
	return len;
}

/* the same for the packet of len bytes at p */
static size_t seal(uint8_t *p, size_t len)
{
	struct iovec v = {p, len};

	return seal_iov(&v, 1);
}

static int ib_send(const struct tp_path *path, struct roce_hdr *h, uint32_t paylen,
		   tp_gather_fn gather, void *arg, const struct iovec *ref, uint32_t nref)
{
	bool smp = (h->opcode & ROCE_SVC_MASK) == ROCE_SVC_UD && h->sqpn == 0;
	struct ib_lrh l = {.sl = path->sl & 0xf, .dlid = path->dlid};
	unsigned n, k;
	struct iovec *v;
	uint8_t *p;
	size_t hl = IB_LRH_LEN, bl, len;
	int err;

	if (paylen > 4096 || (ref && nref > TP_TX_REFS))
		return -EMSGSIZE;
	tp_ib_member_sync();
	if (tp_ibp.tx.n == TP_IB_TX_BATCH)
		tp_ib_flush();
	n = tp_ibp.tx.n;
	v = &tp_ibp.tx.iov[tp_ibp.tx.at[n]];
	p = tp_ibp.tx.buf[n];
	if (path->global)
		hl += IB_GRH_LEN;
	h->pad = (uint8_t)((4 - (paylen & 3)) & 3);
	bl = roce_hdr_write(p + hl, h);
	if (!bl)
		return -EINVAL;
	len = hl + bl;
	/* RC's payload by reference, as RoCE sends it (udp.c): the kernel's
	 * copy into the datagram is its only one; pad, ICRC and VCRC then
	 * follow the headers in buf, as a piece of their own */
	if (ref && paylen) {
		v[0] = (struct iovec){p, len};
		for (uint32_t i = 0; i < nref; i++)
			v[1 + i] = ref[i];
		k = 2 + nref;
		v[k - 1] = (struct iovec){p + len, h->pad};
	} else {
		if (paylen) {
			err = gather(arg, p + len, paylen);
			if (err)
				return err;
		}
		len += paylen;
		k = 1;
		v[0] = (struct iovec){p, len + h->pad};
	}
	memset(p + len, 0, h->pad);
	len = hl + bl + paylen + h->pad;
	/* Initialize and Armed send SMPs only (IBA 7.2) */
	if (!tp_ibp.on || tp_ibp.attr.phys_state != IB_PHYS_LINKUP ||
	    tp_ibp.attr.state == IBV_PORT_DOWN || (!smp && tp_ibp.attr.state != IBV_PORT_ACTIVE)) {
		tp_ibp.cnt->xmit_discards++;
		return 0;
	}
	l.vl = smp ? IB_VL15 : tp_ibp.attr.sl2vl[l.sl];
	l.lnh = path->global ? IB_LNH_GLOBAL : IB_LNH_LOCAL;
	l.pktlen = (uint16_t)((len + ROCE_ICRC_LEN) / 4);
	/* an SMP to the permissive LID goes from it too (directed route) */
	l.slid =
	    smp && path->dlid == IB_LID_PERMISSIVE
		? IB_LID_PERMISSIVE
		: (uint16_t)(tp_ibp.attr.lid | (path->path_bits & ((1u << tp_ibp.attr.lmc) - 1)));
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
	len = seal_iov(v, k);
	tp_ibp.tx.dst[n] = (uint8_t)tp_ib_direct_dest(p, len);
	tp_ibp.tx.len[n] = len;
	tp_ibp.tx.at[n + 1] = tp_ibp.tx.at[n] + k;
	tp_ibp.tx.n = n + 1;
	return 0;
}

/* The messages for packets from..tx.n: every packet goes to the far end,
 * so a run of one size (the last may be shorter) is one UDP GSO send
 * unless GSO is off. */
/* the DestQP a receiving host's kernel steers by (daemon/steer.c), with
 * the LNH that says where it is: a direct run must share it */
static uint32_t steer_key(unsigned i)
{
	const uint8_t *p = tp_ibp.tx.buf[i];
	size_t at = (p[1] & 3) == 3 ? IB_LRH_LEN + IB_GRH_LEN + 4 : IB_LRH_LEN + 4;

	/* the headers are whole in buf (ib_send) */
	return tp_ibp.tx.iov[tp_ibp.tx.at[i]].iov_len >= at + 4
		   ? (uint32_t)(p[1] & 3) << 24 | (sof_get32(p + at) & 0xffffff)
		   : 0xffffffffu;
}

static unsigned tx_group(unsigned from)
{
	unsigned nm = 0, i = from;

	while (i < tp_ibp.tx.n) {
		struct msghdr *h = &tp_ibp.tx.m[nm].msg_hdr;
		size_t seg = tp_ibp.tx.len[i], bytes = seg;
		unsigned k = 1, dst = tp_ibp.tx.dst[i];
		const struct sockaddr_storage *to = &tp_ibp.cfg.peer;
		socklen_t tolen = tp_ibp.cfg.peer_len;

		if (dst)
			to = tp_ib_direct_addr(dst, &tolen);
		while (tp_ibp.gso && i + k < tp_ibp.tx.n && k < TP_IB_GSO_SEGS &&
		       tp_ibp.tx.len[i + k - 1] == seg && tp_ibp.tx.len[i + k] <= seg &&
		       bytes + tp_ibp.tx.len[i + k] <= TP_IB_GSO_BYTES &&
		       tp_ibp.tx.dst[i + k] == dst && (!dst || steer_key(i + k) == steer_key(i)))
			bytes += tp_ibp.tx.len[i + k++];
		/* the pieces of packets i..i + k - 1 are one range of iov */
		*h = (struct msghdr){.msg_name = (void *)to,
				     .msg_namelen = tolen,
				     .msg_iov = &tp_ibp.tx.iov[tp_ibp.tx.at[i]],
				     .msg_iovlen = tp_ibp.tx.at[i + k] - tp_ibp.tx.at[i]};
		if (k > 1)
			sof_udp_gso_set(h, &tp_ibp.tx.ctl[nm], (uint16_t)seg);
		tp_ibp.tx.first[nm] = i;
		tp_ibp.tx.count[nm++] = k;
		i += k;
	}
	return nm;
}

/* What ib_send queued, in order, in as few system calls as the socket
 * takes; what it refuses is lost, as on a wire. A GSO send refused as
 * such (a kernel or path without UDP GSO) turns GSO off and the rest
 * leave packet by packet. */
void tp_ib_flush(void)
{
	unsigned done = 0, nm;

	if (!tp_ibp.tx.n)
		return;
	nm = tx_group(0);
	while (done < nm) {
		int r = tp_ibp.on ? tp_sys_sendmmsg(tp_ibp.fd, tp_ibp.tx.m + done, nm - done,
						    MSG_DONTWAIT)
				  : -1;

		if (r < 0 && tp_ibp.on && errno == EINTR)
			continue;
		if (r < 0 && tp_ibp.on && tp_ibp.tx.count[done] > 1 &&
		    (errno == EINVAL || errno == EIO || errno == ENOPROTOOPT)) {
			tp_log("ib: UDP GSO refused (%s): sending packet by packet",
			       strerror(errno));
			tp_ibp.gso = false;
			nm = tx_group(tp_ibp.tx.first[done]);
			done = 0;
			continue;
		}
		if (r <= 0) {
			tp_ibp.cnt->xmit_discards += tp_ibp.tx.count[done];
			done++;
			continue;
		}
		tp_ibp.cnt->xmit_sends += (unsigned)r;
		for (unsigned k = done; k < done + (unsigned)r; k++)
			for (unsigned i = tp_ibp.tx.first[k];
			     i < tp_ibp.tx.first[k] + tp_ibp.tx.count[k]; i++) {
				size_t len = tp_ibp.tx.len[i];

				tp_ibp.cnt->xmit_pkts++;
				tp_ibp.cnt->xmit_data += len / 4;
				tp_count(SOF_CNT_tx_packets, 1);
				tp_count(SOF_CNT_tx_bytes, len);
			}
		done += (unsigned)r;
	}
	tp_ibp.tx.n = 0;
	tp_ib_direct_report(false);
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
    .flush = tp_ib_flush,
    .flow_port = ib_flow_port,
};

/* ---- a program's UD multicast to this host's QPs ----------------------------------- */

/* The loopback address of the link socket's port (the member's family). */
static socklen_t loop_addr(int fd, struct sockaddr_storage *to)
{
	struct sockaddr_storage me;
	socklen_t len = sizeof(me);

	if (getsockname(fd, (struct sockaddr *)&me, &len))
		return 0;
	memset(to, 0, sizeof(*to));
	if (me.ss_family == AF_INET) {
		struct sockaddr_in *x = (void *)to;

		x->sin_family = AF_INET;
		x->sin_port = ((const struct sockaddr_in *)(const void *)&me)->sin_port;
		x->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		return sizeof(*x);
	}
	if (me.ss_family == AF_INET6) {
		struct sockaddr_in6 *x = (void *)to;

		x->sin6_family = AF_INET6;
		x->sin6_port = ((const struct sockaddr_in6 *)(const void *)&me)->sin6_port;
		x->sin6_addr = in6addr_loopback;
		return sizeof(*x);
	}
	return 0;
}

void tp_ib_ud_mcast_loop(const struct roce_hdr *h, const uint8_t *payload, uint32_t paylen,
			 const struct roce_addr *a, bool from_net)
{
	static uint8_t p[IB_LRH_LEN + IB_GRH_LEN + ROCE_BTH_LEN + ROCE_DETH_LEN + 4 + 4096 +
			 ROCE_ICRC_LEN + 2];
	struct sockaddr_storage to;
	struct roce_hdr hh = *h;
	struct ib_lrh l = {.lnh = IB_LNH_GLOBAL, .dlid = IB_LID_MCAST_MIN};
	struct ib_grh g = {.ipver = 6, .nxthdr = IB_GRH_NXTHDR, .hop_limit = 1};
	size_t len = IB_LRH_LEN + IB_GRH_LEN, bl;
	socklen_t tolen;

	if (from_net || !tp_ibp.on || !tp_ibp.member) {
		tp_drop(SOF_DROP_qpn); /* as with no hook: no such QP here */
		return;
	}
	if (paylen > 4096)
		return;
	hh.pad = (uint8_t)((4 - (paylen & 3)) & 3);
	bl = roce_hdr_write(p + len, &hh);
	if (!bl)
		return;
	len += bl;
	memcpy(p + len, payload, paylen);
	len += paylen;
	memset(p + len, 0, hh.pad);
	len += hh.pad;
	l.slid = tp_ibp.attr.lid;
	l.pktlen = (uint16_t)((len + ROCE_ICRC_LEN) / 4);
	ib_lrh_write(p, &l);
	g.paylen = (uint16_t)(len - IB_LRH_LEN - IB_GRH_LEN + ROCE_ICRC_LEN);
	memcpy(g.sgid, a->src, 16);
	memcpy(g.dgid, a->dst, 16);
	ib_grh_write(p + IB_LRH_LEN, &g);
	len = seal(p, len);
	tolen = loop_addr(tp_ibp.fd, &to);
	/* lost (no loopback): this host's other QPs miss it, as on a wire */
	if (!tolen || sendto(tp_ibp.fd, p, len, MSG_DONTWAIT, (struct sockaddr *)&to, tolen) < 0)
		tp_ibp.cnt->xmit_discards++;
}

bool tp_ib_ud_loop_input(const struct sockaddr_storage *src, socklen_t srclen, const uint8_t *p,
			 size_t r)
{
	const uint8_t *tpkt, *payload;
	struct ib_lrh l;
	struct ib_grh g;
	struct roce_hdr h;
	struct roce_addr a;
	uint32_t paylen;
	size_t tlen;

	if (src->ss_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)src;

		if (srclen < sizeof(*x) || x->sin_addr.s_addr != htonl(INADDR_LOOPBACK) ||
		    ntohs(x->sin_port) != tp_ibp.bound_port)
			return false;
	} else if (src->ss_family == AF_INET6) {
		const struct sockaddr_in6 *x = (const void *)src;

		if (srclen < sizeof(*x) || memcmp(&x->sin6_addr, &in6addr_loopback, 16) ||
		    ntohs(x->sin6_port) != tp_ibp.bound_port)
			return false;
	} else {
		return false;
	}
	/* only a UD datagram to a group, as send_mcast makes one */
	if (ib_parse(p, r, &l, &g, &tpkt, &tlen) != IB_DROP_NONE || l.lnh != IB_LNH_GLOBAL ||
	    roce_parse(tpkt, tlen, &h, &payload, &paylen) != ROCE_DROP_NONE ||
	    (h.opcode & ROCE_SVC_MASK) != ROCE_SVC_UD || h.dqpn != SOF_MCAST_QPN ||
	    !tp_ib_mcast_addr(l.dlid, true, g.dgid) || !tp.hooks[TP_HOOK_MCAST]) {
		tp_drop(SOF_DROP_qpn);
		return true;
	}
	memset(&a, 0, sizeof(a));
	memcpy(a.src, g.sgid, 16);
	memcpy(a.dst, g.dgid, 16);
	a.dport = ROCE_UDP_PORT;
	/* as send_mcast delivers the daemon's own (not from the net) */
	tp.hooks[TP_HOOK_MCAST](&h, payload, paylen, &a, false);
	return true;
}

/* ---- what the roles ask (tport.h) ------------------------------------------------- */

static void port_gid(uint8_t gid[16])
{
	uint64_t v = htobe64(tp_ibp.attr.subnet_prefix);

	memcpy(gid, &v, 8);
	v = htobe64(tp_ibp.attr.port_guid);
	memcpy(gid + 8, &v, 8);
}

bool tp_ib_ud_path(struct tp_path *p, const uint8_t dgid[16], uint16_t dlid, uint8_t sl,
		   uint8_t path_bits, bool global, uint8_t tclass, uint8_t hop_limit,
		   uint32_t flow_label)
{
	if (!tp_ibp.on || !dlid || sl > 15 ||
	    (dlid > IB_LID_UCAST_MAX && !tp_ib_mcast_addr(dlid, global, dgid)))
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
		tp_ib_lid_gid(
		    (uint16_t)(tp_ibp.attr.lid | (path_bits & ((1u << tp_ibp.attr.lmc) - 1))),
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
	*path_bits = (uint8_t)(tp.rx_ib.dlid & ((1u << tp_ibp.attr.lmc) - 1));
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
