/*
 * The steering slot of the engine in the program (tp_host.c,
 * transport/README.md "The engine in the program"), and its flow sockets.
 *
 * A slot is lent by the daemon to one context of the process
 * (NET_ENGINE): receive sockets in the daemon's SO_REUSEPORT group on
 * port 4791, a counter page and an eventfd. It goes back when that
 * context closes: the daemon reads the sockets again once the context's
 * connection is gone, and a context opened later may take a slot anew
 * (eng_slot_drop, tp_host.c start), as programs that open and close a
 * device per phase do (ucx_perftest's batches, libfabric's probes).
 * The slot's sockets are files the daemon holds too: closing our
 * descriptor leaves them in our epoll set, so they are taken out first.
 * When the daemon has an InfiniBand port, the slot has a member of its
 * link socket's group as well: a context of sofib0 runs the port's packet
 * half on it (transport/iblink.c, tp_ib_attach), for the RC/UC QPs of
 * sofib0; the daemon steers their packets there by DestQP.
 *
 * Flow sockets (tp_flow_socket): a packet that an RC or UC QP of ours
 * took by way of the slot's socket names its flow, the peer's address and
 * UDP source port; a socket connected to that flow then receives the
 * flow's datagrams, and the kernel finds it before any route look-up
 * (early demux: shorter on every one-way message). A flow is
 * one of the peer's send sockets, which may send to QPs of other
 * processes of this host too: their packets would come to this socket.
 * So the daemon must agree first (NET_FLOW): only while no QP of another
 * process, nor one the daemon runs, is connected to that peer; when one
 * connects later, the daemon takes the flows back before it answers that
 * QP's MODIFY_QP (the slot's flows_revoked and eventfd), and this process
 * closes its flow sockets and asks again after FLOWS_RETRY_NS. Should a
 * packet for a QP not ours come all the same (a peer's QP1 or UD traffic
 * from the same port), it is dropped as lost on a wire, the socket closed
 * and the flow not taken again. At most FLOWS_MAX sockets (a poll reads
 * each) from FLOWS_PEERS peers, and the slot's socket is read every
 * FLOWS_SLOT_TURN-th poll while there are some.
 *
 * The slot's page says to the daemon that the engine runs (beat, one per
 * read of the sockets) and which descriptors are flow sockets: while the
 * process does not run, the daemon reads them and runs its RC QPs'
 * responders for the in-order RDMA WRITEs (transport/takeover.c).
 *
 * Everything here runs under eng.lock.
 */
#include "tp_eng.h"

_Static_assert(FLOWS_MAX <= SOF_TP_FLOW_FDS, "the slot's page names every flow socket");

#include "roce_wire.h"
#include "sof_gid.h"
#include "tp_ib.h"

#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---- the slot ----------------------------------------------------------------- */

/* The TP_HOOK_MCAST hook of a RoCEv2 context's engine. A UD QP of ours
 * sent a datagram to a group (transport/requester.c send_mcast): it left
 * for the network, whose multicast does not come back to this host (the
 * send sockets do not loop it), so the daemon delivers it to this host's
 * QPs attached to the group (MCAST_LOOP), ours included, as when its own
 * engine sends one; it checks the QP and the headers. One request per
 * datagram to a group. A datagram from the network (none is steered here:
 * DestQP 0xFFFFFF goes to the daemon) is dropped. Under the lock. */
static void ud_mcast_loop(const struct roce_hdr *h, const uint8_t *payload, uint32_t paylen,
			  const struct roce_addr *a, bool from_net)
{
	static struct sof_mcast_loop_req req;
	int err;

	if (from_net) {
		tp_drop_add(SOF_DROP_qpn); /* as with no hook: no such QP here */
		return;
	}
	if (!eng.ctx || paylen > sizeof(req.data))
		return;
	memset(&req, 0, SOF_MCAST_LOOP_HDR);
	req.qpn = h->sqpn;
	req.qkey = h->qkey;
	if (roce_opinfo(h->opcode)->flags & ROCE_F_IMMDT) {
		req.flags |= SOF_MCAST_LOOP_IMM;
		req.imm_be = h->imm_be;
	}
	if (h->se)
		req.flags |= SOF_MCAST_LOOP_SE;
	req.len = (uint16_t)paylen;
	memcpy(req.sgid, a->src, 16);
	memcpy(req.mgid, a->dst, 16);
	memcpy(req.data, payload, paylen);
	err = sofv_rpc(eng.ctx, SOF_OP_MCAST_LOOP, &req, SOF_MCAST_LOOP_HDR + paylen, NULL, 0, NULL,
		       0, NULL, NULL);
	/* (lost for this host's QPs, as on a wire) */
	if (err)
		tp_log("QP %u: a datagram to a group not delivered on this host: %s", h->sqpn,
		       strerror(-err));
}

/* Take a slot for ctx (NET_ENGINE): its receive sockets, counter page and
 * revocation eventfd into eng. 0 or -errno; nothing kept on failure. */
int eng_slot_take(struct sofv_context *ctx)
{
	struct sof_net_engine_rep rep;
	int fds[5] = {-1, -1, -1, -1, -1}, nfds = 5, err, fdib;
	struct sof_tp_counters *cnt;

	err = sofv_rpc(ctx, SOF_OP_NET_ENGINE, NULL, 0, NULL, 0, &rep, sizeof(rep), fds, &nfds);
	if (err)
		return err;
	if (nfds != (int)(rep.has4 + rep.has6 + !!rep.has_ib) + 2) {
		for (int i = 0; i < nfds; i++)
			close(fds[i]);
		return -EPROTO;
	}
	cnt = mmap(NULL, sizeof(*cnt), PROT_READ | PROT_WRITE, MAP_SHARED, fds[nfds - 2], 0);
	err = cnt == MAP_FAILED ? -errno : 0;
	close(fds[nfds - 2]);
	if (err) {
		for (int i = 0; i < nfds; i++)
			if (i != nfds - 2)
				close(fds[i]);
		return err;
	}
	eng.fd4 = rep.has4 ? fds[0] : -1;
	eng.fd6 = rep.has6 ? fds[rep.has4 ? 1 : 0] : -1;
	fdib = rep.has_ib ? fds[nfds - 3] : -1;
	eng.revokefd = fds[nfds - 1];
	eng.revoked_seen = __atomic_load_n(&cnt->flows_revoked, __ATOMIC_ACQUIRE);
	eng.cnt = cnt;
	/* sofib0's context: its QPs run on the port's packet half here */
	eng.fdib = -1;
	if (fdib >= 0 && ctx->ib &&
	    !tp_ib_attach(fdib, ctx->gidtab, (struct tp_ib_counters *)(void *)cnt->ib)) {
		eng.fdib = fdib;
		/* its UD QPs' multicast reaches this host's QPs by the daemon */
		tp_recv_hook(TP_HOOK_MCAST, tp_ib_ud_mcast_loop);
	} else if (fdib >= 0)
		close(fdib);
	/* a RoCEv2 context's UD QPs' too, by the daemon's MCAST_LOOP */
	if (!ctx->ib)
		tp_recv_hook(TP_HOOK_MCAST, ud_mcast_loop);
	return 0;
}

_Static_assert(sizeof(struct tp_ib_counters) <= sizeof(((struct sof_tp_counters *)0)->ib),
	       "a slot's page holds the InfiniBand port's counters");

static void slot_fd_close(int *fd)
{
	if (*fd < 0)
		return;
	if (eng.epfd >= 0)
		(void)epoll_ctl(eng.epfd, EPOLL_CTL_DEL, *fd, NULL);
	close(*fd);
	*fd = -1;
}

/* Give the slot back (its context closes): the flow sockets, the slot's
 * descriptors and counter page go; what the peers' flows sent since is
 * the daemon's to drop, as for a QP that is gone. */
void eng_slot_drop(void)
{
	while (eng.nflows)
		eng_flow_close(0, false);
	eng.nbanned = 0;
	eng.npeers = 0;
	eng.slot_drain = 0;
	tp_recv_hook(TP_HOOK_MCAST, NULL);
	if (eng.fdib >= 0)
		tp_ib_detach();
	slot_fd_close(&eng.fd4);
	slot_fd_close(&eng.fd6);
	slot_fd_close(&eng.fdib);
	slot_fd_close(&eng.revokefd);
	if (eng.cnt)
		munmap(eng.cnt, sizeof(*eng.cnt));
	eng.cnt = NULL;
}

/* ---- flow sockets ------------------------------------------------------------- */

/* The flow sockets' descriptors in the slot's page, for the daemon,
 * which reads them while this process does not run (daemon/steer.c). */
static void flows_publish(void)
{
	if (!eng.cnt)
		return;
	for (unsigned i = 0; i < SOF_TP_FLOW_FDS; i++)
		__atomic_store_n(&eng.cnt->flow_fd[i], i < eng.nflows ? eng.flows[i].fd + 1 : 0,
				 __ATOMIC_RELEASE);
}

static bool flow_is(const struct eng_flow *f, const struct roce_addr *a)
{
	return f->a.sport == a->sport && !memcmp(f->a.src, a->src, 16) &&
	       !memcmp(f->a.dst, a->dst, 16);
}

/* May this process take flows from peer? Asks the daemon (NET_FLOW) the
 * first time, and after FLOWS_RETRY_NS when it refused. */
static bool peer_ok(const uint8_t peer[16])
{
	struct sof_net_flow_req req;
	struct eng_peer *p = NULL;

	for (unsigned i = 0; i < eng.npeers && !p; i++)
		if (!memcmp(eng.peers[i].addr, peer, 16))
			p = &eng.peers[i];
	if (p && (p->ok || sof_now_ns() < p->retry_ns))
		return p->ok;
	if (!p) {
		if (eng.npeers == FLOWS_PEERS)
			return false;
		p = &eng.peers[eng.npeers++];
		memcpy(p->addr, peer, 16);
	}
	memcpy(req.peer, peer, 16);
	p->ok =
	    !sofv_rpc(eng.ctx, SOF_OP_NET_FLOW, &req, sizeof(req), NULL, 0, NULL, 0, NULL, NULL);
	p->retry_ns = sof_now_ns() + FLOWS_RETRY_NS;
	return p->ok;
}

/* tp_host_ops.flow_seen (tp_host.c): a flow socket for a's flow, unless it has one, was
 * banned, or FLOWS_MAX are open. A link-local IPv6 address needs its
 * interface to be bound: such flows stay with the slot's socket. Under
 * the lock. */
void eng_flow_seen(const struct roce_addr *a)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &eng.fd4};
	struct eng_flow *f;
	int fd;

	uint16_t slid, dlid;
	uint8_t sl;

	/* an InfiniBand packet: no UDP flow */
	if (tp_ib_rx_lrh(&slid, &dlid, &sl))
		return;
	if (!eng.ctx || eng.nflows == FLOWS_MAX ||
	    (a->dst[0] == 0xfe && (a->dst[1] & 0xc0) == 0x80))
		return;
	for (unsigned i = 0; i < eng.nflows; i++)
		if (flow_is(&eng.flows[i], a))
			return;
	for (unsigned i = 0; i < eng.nbanned && i < FLOWS_BANNED; i++)
		if (flow_is(&eng.banned[i], a))
			return;
	if (!peer_ok(a->src))
		return;
	fd = tp_flow_socket(a);
	if (fd < 0)
		return;
	/* into the progress thread's set only while it watches the sockets
	 * (tp_host.c sockets_arm) */
	if (eng.armed && epoll_ctl(eng.epfd, EPOLL_CTL_ADD, fd, &ev)) {
		close(fd);
		return;
	}
	f = &eng.flows[eng.nflows++];
	eng.slot_drain = 16;
	f->fd = fd;
	f->v6 = !sof_gid_is_v4(a->dst);
	f->a = *a;
	f->a.dport = ROCE_UDP_PORT;
	flows_publish();
}

/* Close flow socket i; ban: its flow is not taken again. */
void eng_flow_close(unsigned i, bool ban)
{
	/* out of the daemon's sight before the number can be reused */
	if (eng.cnt)
		for (unsigned k = 0; k < SOF_TP_FLOW_FDS; k++)
			__atomic_store_n(&eng.cnt->flow_fd[k], 0, __ATOMIC_RELEASE);
	close(eng.flows[i].fd);
	if (ban)
		eng.banned[eng.nbanned++ % FLOWS_BANNED] = eng.flows[i];
	eng.flows[i] = eng.flows[--eng.nflows];
	flows_publish();
}

/* The daemon took the flows back (NET_FLOW): read what the flow sockets
 * hold, close them, and ask again after FLOWS_RETRY_NS. */
void eng_flows_revoked(void)
{
	uint64_t v = __atomic_load_n(&eng.cnt->flows_revoked, __ATOMIC_ACQUIRE);

	if (v == eng.revoked_seen)
		return;
	eng.revoked_seen = v;
	while (eng.nflows) {
		tp_rx(eng.flows[0].fd, eng.flows[0].v6, &eng.flows[0].a);
		eng_flow_close(0, false);
	}
	for (unsigned i = 0; i < eng.npeers; i++) {
		eng.peers[i].ok = false;
		eng.peers[i].retry_ns = sof_now_ns() + FLOWS_RETRY_NS;
	}
}

/* Read the slot's sockets: the number of datagrams. With sofib0's link
 * socket and no RoCE QP talking to another host, the RoCE sockets are
 * read only every FLOWS_SLOT_TURN-th time (what comes there all the same,
 * a lingering QP's repeated request, waits a few polls): a spinning
 * poller's system call per socket is what a ping-pong's answer waits
 * behind. */
static int rx_slot(void)
{
	bool roce = eng.fdib < 0 || eng.roce || !(eng.roce_turn++ % FLOWS_SLOT_TURN);
	int n = 0;

	if (eng.fd4 >= 0 && roce)
		n += tp_rx(eng.fd4, false, NULL);
	if (eng.fd6 >= 0 && eng.v6 && roce)
		n += tp_rx(eng.fd6, true, NULL);
	if (eng.fdib >= 0)
		n += tp_ib_rx_fd(eng.fdib);
	return n;
}

/* Take in what the daemon kept in the slot's page while it ran our
 * responders (daemon/steer.c, transport/takeover.c): the ACKs and
 * responses for our own requests that came while this process did not
 * run, before anything from the sockets (and before the transport
 * timer, which the callers run after the sockets). Each packet is
 * copied out of the page, then checked as one from a socket (its
 * headers and ICRC, tp_input). */
static void kept_take(void)
{
	static uint8_t pkt[SOF_TP_KEPT_MAX];
	struct sof_tp_counters *c = eng.cnt;
	uint32_t head = __atomic_load_n(&c->kept_head, __ATOMIC_RELAXED);
	uint32_t tail = __atomic_load_n(&c->kept_tail, __ATOMIC_ACQUIRE);

	if (head == tail)
		return;
	/* the daemon keeps at most SOF_TP_KEPT: anything else is not so */
	if (tail - head > SOF_TP_KEPT)
		head = tail - SOF_TP_KEPT;
	for (; head != tail; head++) {
		const struct sof_tp_kept *k = &c->kept[head % SOF_TP_KEPT];
		uint32_t len = __atomic_load_n(&k->len, __ATOMIC_RELAXED);
		struct roce_addr a;

		if (len > sizeof(pkt))
			continue;
		memcpy(pkt, k->data, len);
		memcpy(a.src, k->src, 16);
		memcpy(a.dst, k->dst, 16);
		a.sport = k->sport;
		a.dport = k->dport;
		tp_input(pkt, len, &a);
	}
	__atomic_store_n(&c->kept_head, tail, __ATOMIC_RELEASE);
	tp_input_end();
}

/* Read the flow sockets, then the slot's (every FLOWS_SLOT_TURN-th time
 * a poller comes while there are flow sockets). A new flow socket waits
 * until the slot's sockets were found empty once (or 16 reads of them):
 * the flow's packets that came before it are there, and go first (a UC
 * message is lost when its packets come out of order). */
void eng_rx_sockets(bool poller)
{
	/* the daemon's sign that this engine runs (daemon/steer.c) */
	if (eng.cnt) {
		__atomic_store_n(&eng.cnt->beat, eng.cnt->beat + 1, __ATOMIC_RELAXED);
		kept_take();
	}
	if (eng.npeers)
		eng_flows_revoked();
	if (eng.slot_drain) {
		eng.slot_drain = rx_slot() ? eng.slot_drain - 1 : 0;
		return;
	}
	for (unsigned i = 0; i < eng.nflows;) {
		tp_rx(eng.flows[i].fd, eng.flows[i].v6, &eng.flows[i].a);
		if (tp_rx_foreign())
			eng_flow_close(i, true);
		else
			i++;
	}
	if (poller && eng.nflows && eng.slot_turn++ % FLOWS_SLOT_TURN)
		return;
	rx_slot();
}
