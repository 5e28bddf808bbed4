/*
 * The steering of packets to programs
 * that run the transport of their own QPs (transport/README.md, "The
 * engine in the program").
 *
 * The daemon's receive socket of each family is bound to port 4791 as the
 * first member of an SO_REUSEPORT group. A classic BPF program on the group
 * chooses the member of every datagram from its BTH destination QP (bytes
 * 5..7 of the UDP payload, IBA 9.2): a steered QP's packets go to the
 * member of its owner's steering slot, everything else (other QPs, QP1,
 * the multicast QPN, anything too short to hold a BTH) to member 0, the
 * daemon. The program is a binary search over the steered QPNs, made anew
 * whenever one comes or goes; it holds at most STEER_MAX of them (the
 * program's size is bounded), beyond which the daemon runs the QP's
 * transport itself. QP numbers stay the daemon's random ones.
 *
 * A process that asks for it (NET_ENGINE) gets a slot: the daemon makes
 * the slot's sockets (members are numbered in the order they join, so
 * slot k's socket is made k-th) and a page of counters, and hands them
 * over; then each of its QPs that connects to another host is steered
 * (MODIFY_QP with engine set) until it is reset or destroyed.
 *
 * The daemon keeps its own descriptor of every slot's sockets and never
 * closes one: a member that leaves the group moves the last one into its
 * place, which would renumber a slot. While no process holds a slot the
 * daemon reads its sockets itself (what arrives there is for QPs that are
 * gone, and is dropped and counted as for any unknown QPN).
 *
 * The InfiniBand port's link socket (transport/iblink.c) is likewise
 * member 0 of a group on the link's UDP port, whose program reads DestQP
 * after the LRH (IBA 7.7: byte 12 of a local packet, 52 behind a GRH, by
 * LNH); link control (SOFL), QP0, QP1, multicast and unknown QPNs go to
 * the daemon. A slot made while the port is there has a member of that
 * group too, from which the program sends to the same far end from the
 * same address and port (the fabric checks the source of what a link
 * brings), and it counts the port's counters into the slot's page.
 *
 * A UD QP of that port is steered too (its unicast, by its own QPN); what
 * comes to a multicast group it is attached to still comes here (DestQP
 * 0xFFFFFF), and the daemon delivers it into the QP's receive queue and
 * CQ (both taken and filled with atomics, so the program's engine and the
 * daemon's share them) through a receive-only view of the QP: its own
 * engine state, modified as the QP is (state, Q_Key, P_Key index), with
 * an empty send queue of its own and no send CQ, so that it never takes
 * a WQE the program's engine sends.
 *
 * Only a process of the daemon's own user (or root) gets a slot (ops.c):
 * any member of the group can replace the group's BPF program.
 */
#include "sofd.h"
#include "tp.h"
#include "tp_ib.h"

#include "sof_gid.h"

#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <linux/filter.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

#define SLOTS 256u
/* peers whose flows a slot may take (NET_FLOW); more are refused */
#define SLOT_FLOW_PEERS 8u

struct slot {
	struct sofd_pollable p4, p6; /* fd -1: the family has no socket */
	struct sofd_pollable pib;    /* the InfiniBand link's member, -1: none */
	struct sofd_conn *owner;     /* NULL: the daemon reads the sockets */
	int cnt_fd;		     /* memfd of *cnt, what its processes counted */
	struct sof_tp_counters *cnt;
	/* written when the daemon takes the slot's flows back, and when it
	 * kept packets for the engine (which may sleep on its sockets since
	 * it read the page's ring, when it ran again meanwhile) */
	int evfd;
	uint8_t flow_peers[SLOT_FLOW_PEERS][16];
	uint32_t nflow_peers;
	/* the takeover of a stalled engine (the end of this file) */
	uint64_t beat_seen; /* cnt->beat at the last tick */
	bool queued;	    /* its sockets held datagrams at the last tick */
	uint64_t queued_ns; /* since then (the beat unmoved): the first such tick */
	bool stalled;	    /* the daemon reads its sockets (on the fast tick) */
	bool logged;	    /* said so in the log since the engine last ran */
	uint32_t idle;	    /* ticks since its sockets last held datagrams */
	/* quiet: its sockets wait in the watch set, no tick for it */
	bool watching;
};

static struct slot slots[SLOTS];
static uint32_t nslots = 1;	     /* slot 0 is the daemon's own sockets */
static bool slots_broken;	     /* a group could not grow in step: no new slots */
static int rx_fd4 = -1, rx_fd6 = -1; /* slot 0's: the daemon's receive sockets */
static int rx_fdib = -1;	     /* slot 0's on the InfiniBand link (sofd_steer_ib) */
static uint32_t ib_from = SLOTS;     /* the first slot with an InfiniBand member */

_Static_assert(sizeof(struct tp_ib_counters) <= sizeof(((struct sof_tp_counters *)0)->ib) &&
		   sizeof(struct tp_ib_counters) % sizeof(uint64_t) == 0,
	       "a slot's page holds the InfiniBand port's counters");

static int epoll_in(int epfd, struct sofd_pollable *p)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = p};

	if (p->fd < 0)
		return 0;
	return epoll_ctl(epfd, EPOLL_CTL_ADD, p->fd, &ev) ? -errno : 0;
}

/* The steered QPs, by QPN, and their slots. */
#define STEER_MAX 1024u
#define STEER_LEAF 8u /* QPNs a leaf of the search compares one by one */
static struct steer {
	uint32_t qpn, slot;
} steer[STEER_MAX];
static uint32_t nsteer;

/* The search over steer[lo, hi) into prog from *n on (BPF_MAXINSNS is
 * plenty: a leaf of k QPNs is 2k + 1 instructions, an inner node 2). */
static void prog_tree(struct sock_filter *prog, uint32_t *n, uint32_t lo, uint32_t hi)
{
	uint32_t mid, ja;

	if (hi - lo <= STEER_LEAF) {
		for (uint32_t i = lo; i < hi; i++) {
			prog[(*n)++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
								    steer[i].qpn, 0, 1);
			prog[(*n)++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, steer[i].slot);
		}
		prog[(*n)++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, 0);
		return;
	}
	mid = lo + (hi - lo) / 2;
	/* QPN >= steer[mid]: the jump over the left half; else the left half */
	prog[(*n)++] =
	    (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, steer[mid].qpn, 0, 1);
	ja = (*n)++;
	prog_tree(prog, n, lo, mid);
	prog[ja] = (struct sock_filter)BPF_STMT(BPF_JMP | BPF_JA, *n - ja - 1);
	prog_tree(prog, n, mid, hi);
}

/* The groups' programs (the top of this file) onto the groups. */
static int steer_attach(void)
{
	static struct sock_filter prog[BPF_MAXINSNS];
	struct sock_fprog fp = {.filter = prog};
	uint32_t n = 0;
	int err = 0;

	/* BTH bytes 4..7: resv8 and DestQP; a datagram too short for them
	 * ends the program with 0 (the daemon) */
	prog[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 4);
	prog[n++] = (struct sock_filter)BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0xffffff);
	prog_tree(prog, &n, 0, nsteer);
	fp.len = (unsigned short)n;
	if (rx_fd4 >= 0 &&
	    setsockopt(rx_fd4, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &fp, sizeof(fp)))
		err = -errno;
	if (!err && rx_fd6 >= 0 &&
	    setsockopt(rx_fd6, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &fp, sizeof(fp)))
		err = -errno;
	if (err || rx_fdib < 0)
		return err;

	/* the link's: SOFL ("SOFL" first) to the daemon; LRH byte 1's LNH
	 * (IBA 7.7.1): 2 local, BTH at 8; 3 global, BTH at 48; else 0 */
	n = 0;
	prog[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 0);
	prog[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x534f464c, 4, 0);
	prog[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 1);
	prog[n++] = (struct sock_filter)BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 3);
	prog[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IB_LNH_LOCAL, 2, 0);
	prog[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IB_LNH_GLOBAL, 3, 0);
	prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, 0);
	prog[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, IB_LRH_LEN + 4);
	prog[n++] = (struct sock_filter)BPF_STMT(BPF_JMP | BPF_JA, 1);
	prog[n++] =
	    (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, IB_LRH_LEN + IB_GRH_LEN + 4);
	prog[n++] = (struct sock_filter)BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0xffffff);
	prog_tree(prog, &n, 0, nsteer);
	fp.len = (unsigned short)n;
	if (setsockopt(rx_fdib, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &fp, sizeof(fp)))
		err = -errno;
	return err;
}

int sof_tp_steer_add(uint32_t qpn, uint32_t slot)
{
	uint32_t i = 0;
	int err;

	if (slots_broken || nsteer == STEER_MAX)
		return -ENOSPC;
	while (i < nsteer && steer[i].qpn < qpn)
		i++;
	memmove(&steer[i + 1], &steer[i], (nsteer - i) * sizeof(steer[0]));
	steer[i] = (struct steer){qpn, slot};
	nsteer++;
	err = steer_attach();
	if (err) {
		sofd_log("steering QP 0x%06x: %s", qpn, strerror(-err));
		sof_tp_steer_del(qpn);
		return err;
	}
	sofd_log("QP 0x%06x steered to slot %u", qpn, slot);
	return 0;
}

void sof_tp_steer_del(uint32_t qpn)
{
	for (uint32_t i = 0; i < nsteer; i++) {
		if (steer[i].qpn != qpn)
			continue;
		memmove(&steer[i], &steer[i + 1], (nsteer - i - 1) * sizeof(steer[0]));
		nsteer--;
		if (steer_attach())
			sofd_log("steering program: %s", strerror(errno));
		return;
	}
}

int sofd_steer_init(int fd4, int fd6)
{
	rx_fd4 = fd4;
	rx_fd6 = fd6;
	if (steer_attach()) {
		/* without steering the daemon runs every QP's transport */
		sofd_log("no steering to programs: %s", strerror(errno));
		slots_broken = true;
	}
	return 0;
}

int sofd_steer_ib(int fd)
{
	int err;

	rx_fdib = fd;
	ib_from = nslots; /* slots made before have no member of its group */
	err = steer_attach();
	if (err) {
		sofd_log("no steering on the InfiniBand link: %s", strerror(-err));
		rx_fdib = -1;
		/* the RoCE groups keep their program */
		(void)steer_attach();
	}
	return 0;
}

/* The send queue of every receive-only view: never posted to, so never
 * taken (transport/requester.c reads its tail, the view has no send CQ). */
static struct sof_nsq_shm view_nsq;

void sof_tp_steer_ud_view(struct sofd_qp *qp, bool on)
{
	uint32_t nmcast = qp->tq.nmcast; /* the groups hold &qp->tq */

	sof_tp_qp_release(qp); /* the engine state of the other kind */
	sof_tp_qp_init(qp);
	qp->tq.nmcast = nmcast;
	if (!on)
		return;
	qp->tq.nsq = &view_nsq;
	qp->tq.sq_size = 1;
	qp->tq.send_cq = NULL;
}

/* Slot nslots's sockets, the next member of each group, and its counter
 * page. */
static int slot_make(struct slot *s)
{
	int one = 1, err;
	void *p;

	s->cnt_fd = sof_memfd_create("softofed-tpcnt", sizeof(*s->cnt));
	if (s->cnt_fd < 0)
		return s->cnt_fd;
	p = mmap(NULL, sizeof(*s->cnt), PROT_READ | PROT_WRITE, MAP_SHARED, s->cnt_fd, 0);
	if (p == MAP_FAILED) {
		close(s->cnt_fd);
		return -ENOMEM;
	}
	s->cnt = p;
	s->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->evfd < 0) {
		err = -errno;
		goto err;
	}

	s->p4 = (struct sofd_pollable){SOFD_POLL_NET, -1};
	s->p6 = (struct sofd_pollable){SOFD_POLL_NET6, -1};
	if (rx_fd4 >= 0) {
		s->p4.fd = tp_udp_socket(false, ROCE_UDP_PORT, true);
		if (s->p4.fd < 0) {
			err = s->p4.fd;
			goto err;
		}
	}
	if (rx_fd6 >= 0) {
		s->p6.fd = tp_udp_socket(true, ROCE_UDP_PORT, true);
		if (s->p6.fd < 0) {
			err = s->p6.fd;

			/* the last member leaves: no other moves */
			if (s->p4.fd >= 0)
				close(s->p4.fd);
			goto err;
		}
	}
	s->pib = (struct sofd_pollable){SOFD_POLL_IB, -1};
	if (rx_fdib >= 0) {
		s->pib.fd = tp_ib_member_socket();
		if (s->pib.fd < 0) {
			err = s->pib.fd;
			if (s->p4.fd >= 0)
				close(s->p4.fd);
			if (s->p6.fd >= 0)
				close(s->p6.fd);
			goto err;
		}
	}
	if (tp_gro()) {
		if (s->p4.fd >= 0)
			(void)setsockopt(s->p4.fd, SOL_UDP, UDP_GRO, &one, sizeof(one));
		if (s->p6.fd >= 0)
			(void)setsockopt(s->p6.fd, SOL_UDP, UDP_GRO, &one, sizeof(one));
	}
	return 0;
err:
	if (s->evfd >= 0)
		close(s->evfd);
	munmap(s->cnt, sizeof(*s->cnt));
	close(s->cnt_fd);
	return err;
}

static void tick_arm(void);
static void slot_unwatch(struct slot *s);

int sof_tp_slot_take(struct sofd_conn *c, int *fd4, int *fd6, int *fdib, int *cfd, int *efd)
{
	struct slot *s = NULL;
	uint32_t k;

	if (!c->net_slot) {
		for (k = 1; k < nslots && !s; k++)
			if (!slots[k].owner)
				s = &slots[k];
		if (!s) {
			int err;

			if (slots_broken || nslots == SLOTS || (rx_fd4 < 0 && rx_fd6 < 0))
				return -EBUSY;
			s = &slots[nslots];
			err = slot_make(s);
			if (err) {
				sofd_log("steering slot %u: %s", nslots, strerror(-err));
				slots_broken = true;
				return err;
			}
			nslots++;
		} else {
			/* the daemon was reading them */
			if (s->p4.fd >= 0)
				epoll_ctl(sofd.epfd, EPOLL_CTL_DEL, s->p4.fd, NULL);
			if (s->p6.fd >= 0)
				epoll_ctl(sofd.epfd, EPOLL_CTL_DEL, s->p6.fd, NULL);
			if (s->pib.fd >= 0)
				epoll_ctl(sofd.epfd, EPOLL_CTL_DEL, s->pib.fd, NULL);
		}
		s->owner = c;
		s->beat_seen = __atomic_load_n(&s->cnt->beat, __ATOMIC_ACQUIRE);
		/* what was kept for the last owner is not for this one */
		__atomic_store_n(&s->cnt->kept_head,
				 __atomic_load_n(&s->cnt->kept_tail, __ATOMIC_RELAXED),
				 __ATOMIC_RELEASE);
		s->queued = s->stalled = s->logged = false;
		tick_arm();
		c->net_slot = (uint32_t)(s - slots);
		sofd_log("conn %u (pid %d): steering slot %u", c->id, (int)c->pid, c->net_slot);
	}
	s = &slots[c->net_slot];
	*fd4 = s->p4.fd;
	*fd6 = s->p6.fd;
	*fdib = s->pib.fd;
	*cfd = s->cnt_fd;
	*efd = s->evfd;
	return (int)c->net_slot;
}

void sof_tp_slot_release(struct sofd_conn *c)
{
	struct slot *s;

	if (!c->net_slot)
		return;
	s = &slots[c->net_slot];
	slot_unwatch(s);
	s->owner = NULL;
	s->nflow_peers = 0;
	s->queued = s->stalled = s->logged = false;
	c->net_slot = 0;
	if (epoll_in(sofd.epfd, &s->p4) || epoll_in(sofd.epfd, &s->p6) ||
	    epoll_in(sofd.epfd, &s->pib))
		sofd_log("steering slot %u: %s", (unsigned)(s - slots), strerror(errno));
}

/* Is a QP connected (RTR and on) to peer, other than the steered QPs of
 * slot? */
static bool peer_taken(const uint8_t peer[16], uint32_t slot)
{
	struct sofd_qp *qp;
	uint32_t pos = 0;

	while ((qp = sof_hmap_next(&sofd.qps, &pos, NULL))) {
		if (qp->type == IBV_QPT_UD || qp->state < IBV_QPS_RTR || qp->state > IBV_QPS_SQE ||
		    memcmp(qp->dgid, peer, 16))
			continue;
		if (!qp->steered || !qp->owner || qp->owner->net_slot != slot)
			return true;
	}
	return false;
}

int sof_tp_flow_claim(struct sofd_conn *c, const uint8_t peer[16])
{
	struct slot *s;

	if (!c->net_slot)
		return -EPERM;
	s = &slots[c->net_slot];
	for (uint32_t i = 0; i < s->nflow_peers; i++)
		if (!memcmp(s->flow_peers[i], peer, 16))
			return peer_taken(peer, c->net_slot) ? -EBUSY : 0;
	if (s->nflow_peers == SLOT_FLOW_PEERS || peer_taken(peer, c->net_slot))
		return -EBUSY;
	memcpy(s->flow_peers[s->nflow_peers++], peer, 16);
	return 0;
}

void sof_tp_flow_connected(const struct sofd_qp *qp, uint32_t slot)
{
	uint64_t one = 1;

	for (uint32_t k = 1; k < nslots; k++) {
		struct slot *s = &slots[k];
		bool had = false;

		if (k == slot || !s->owner)
			continue;
		for (uint32_t i = 0; i < s->nflow_peers; i++)
			had |= !memcmp(s->flow_peers[i], qp->dgid, 16);
		if (!had)
			continue;
		/* all of them: the process closes every flow socket */
		s->nflow_peers = 0;
		__atomic_fetch_add(&s->cnt->flows_revoked, 1, __ATOMIC_SEQ_CST);
		if (write(s->evfd, &one, sizeof(one)) < 0) {
			/* the counter is full: the process has it to read */
		}
		sofd_log("steering slot %u: flows from peer taken back (QP 0x%06x connects to it)",
			 k, qp->qpn);
	}
}

void sof_tp_slot_counters(uint64_t *counters, uint64_t *drops)
{
	for (uint32_t k = 1; k < nslots; k++) {
		for (uint32_t i = 0; i < SOF_CNT_NR; i++)
			counters[i] += slots[k].cnt->counters[i];
		for (uint32_t i = 0; i < SOF_DROP_NR; i++)
			drops[i] += slots[k].cnt->drops[i];
	}
}

void sof_tp_slot_ib_counters(struct tp_ib_counters *sum, uint64_t *rcv, uint64_t *xmit)
{
	uint64_t *v = (uint64_t *)sum;

	*rcv = *xmit = 0;
	for (uint32_t k = ib_from; k < nslots; k++) {
		const struct tp_ib_counters *c = (const void *)slots[k].cnt->ib;
		const uint64_t *w = slots[k].cnt->ib;

		for (size_t i = 0; i < sizeof(*sum) / sizeof(uint64_t); i++)
			v[i] += w[i];
		*rcv += c->rcv_pkts;
		*xmit += c->xmit_pkts;
	}
}

void sof_tp_linger(uint32_t qpn, const struct sof_linger *l)
{
	/* the ACKs leave by the daemon's own send sockets */
	struct tp_path path = {.sport = tp_flow_port(!sof_gid_is_v4(l->dgid), qpn, l->dqpn),
			       .tclass = l->tclass,
			       .hop_limit = l->hop_limit,
			       .flow_label = l->flow_label};

	/* from the program: ACKs leave only from an address of this host */
	if (!sofd_gid_local(l->sgid))
		return;
	memcpy(path.sgid, l->sgid, 16);
	memcpy(path.dgid, l->dgid, 16);
	tp_linger_add(qpn, l->dqpn & 0xffffff, l->epsn & ROCE_PSN_MASK, l->msn & 0xffffff, &path);
}

/* ---- the takeover of a stalled engine (transport/takeover.c) ------------------------ */

/* A process that holds a slot runs the transport of its RC QPs; while it
 * is stopped (SIGSTOP, a tracer), the RDMA WRITEs that come for them
 * would wait for it. So every TICK_NS the daemon looks at each held slot
 * that saw datagrams lately: when the engine has not read its sockets
 * (the page's beat did not move) over a whole tick in which they held
 * datagrams, and the process is stopped (/proc/PID/stat), or it has
 * not read them for LATE_NS (a process the scheduler keeps off its CPU,
 * a frozen one), the daemon reads them, the slot's and the flow sockets
 * it takes from the process (pidfd_getfd: the same user,
 * transport/README.md), and the
 * engine executes the in-order RDMA WRITEs, READs and atomics on the
 * QPs' shared responder state (host op takeover) and drops the rest for
 * the requesters' retries; the ACKs and responses for the process's own
 * requests it keeps in the slot's page (sof_tp_steer_keep), which the
 * engine takes in first when it runs again, so its requester does not
 * pay a timeout for each. When the beat moves again, the process has its
 * sockets back.
 * A process that merely runs late keeps its packets for LATE_NS; a
 * responder left unanswered past its peer's retry budget ends the peer's QP
 * (IBA 9.7.6.1.3, RETRY_EXC_ERR), where an HCA answers whether or not its
 * process runs: issue 18's ib_send_lat pairs, whose server, pinned to a
 * busy CPU, was off it for 0.6 to 0.9 s while its client's budget (local
 * ACK timeout 14, 7 retries) was 0.54 s. A running process's engine reads
 * its sockets within POLL_HOLD_MAX_NS (verbs/tp_host.c, 1.6 ms) of a
 * datagram, so LATE_NS of datagrams waiting unread is a process that
 * does not run, not one that is busy.
 * A slot whose sockets stayed empty is looked at less often (flows every
 * IDLE_FLOWS-th tick): each look at flows costs the daemon a few system
 * calls.
 *
 * A slot whose sockets stayed empty QUIET_TICKS ticks is not ticked for
 * at all: its sockets wait in a watch set (an epoll instance of its own,
 * one shot each, in the daemon's epoll as a pollable of the tick's kind),
 * and the first datagram to one brings the slot back to the tick. So an
 * idle host with long-lived programs costs the daemon no wake-up. The
 * flow sockets cannot wait there: a descriptor the daemon held would keep
 * a socket the process closes connected to its flow, and that flow's
 * datagrams would go to it instead of the slot's. So a quiet slot that
 * has flow sockets is looked at every SLOW_NS (its flows polled as on a
 * tick) instead. */
#define TICK_NS 5000000L
#define TICK_STALLED_NS 1000000L /* while the daemon runs a stalled engine's */
#define IDLE_FLOWS 8u
#define STALLED_IDLE 100u /* ticks with empty sockets that end a stall */
#define QUIET_TICKS 20u	  /* ticks with empty sockets before the watch */
#define SLOW_NS 100000000L /* the look at a quiet slot with flow sockets */
#define LATE_NS 100000000ull /* a running process's sockets unread: taken */

static struct sofd_pollable tick = {SOFD_POLL_TIMER, -1};
static struct sofd_pollable watch = {SOFD_POLL_TIMER, -1}; /* the watch set */
static long tick_ns;	/* its period, 0: disarmed */
static uint32_t taking; /* the slot whose sockets the daemon reads now, 0: none */

static void tick_set(long ns)
{
	struct itimerspec its = {.it_interval = {0, ns}, .it_value = {0, ns}};

	if (tick.fd >= 0 && ns != tick_ns && !timerfd_settime(tick.fd, 0, &its, NULL))
		tick_ns = ns;
}

static void tick_arm(void)
{
	if (tick.fd < 0) {
		tick.fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
		if (tick.fd < 0)
			return;
		if (epoll_in(sofd.epfd, &tick)) {
			close(tick.fd);
			tick.fd = -1;
			return;
		}
	}
	if (watch.fd < 0) {
		/* without one, the slots are ticked for all the time */
		watch.fd = epoll_create1(EPOLL_CLOEXEC);
		if (watch.fd >= 0 && epoll_in(sofd.epfd, &watch)) {
			close(watch.fd);
			watch.fd = -1;
		}
	}
	if (!tick_ns)
		tick_set(TICK_NS);
}

bool sof_tp_steer_is_tick(const struct sofd_pollable *p) { return p == &tick || p == &watch; }

bool sof_tp_steer_taking(const struct sofd_qp *qp)
{
	return taking && qp->steered && qp->owner && qp->owner->net_slot == taking;
}

bool sof_tp_steer_keep(const struct tp_qp *tq, const uint8_t *pkt, size_t len,
		       const struct roce_addr *a)
{
	const struct sofd_qp *qp = sof_container_of(tq, struct sofd_qp, tq);
	struct sof_tp_counters *c;
	struct sof_tp_kept *k;
	uint32_t tail;

	if (!sof_tp_steer_taking(qp) || len > SOF_TP_KEPT_MAX)
		return false;
	c = slots[taking].cnt;
	/* the engine's head is the program's to write: a wrong one only
	 * keeps less (or overwrites what that engine has not taken) */
	tail = c->kept_tail;
	if (tail - __atomic_load_n(&c->kept_head, __ATOMIC_ACQUIRE) >= SOF_TP_KEPT)
		return false;
	k = &c->kept[tail % SOF_TP_KEPT];
	k->len = (uint32_t)len;
	k->sport = a->sport;
	k->dport = a->dport;
	memcpy(k->src, a->src, 16);
	memcpy(k->dst, a->dst, 16);
	memcpy(k->data, pkt, len);
	__atomic_store_n(&c->kept_tail, tail + 1, __ATOMIC_RELEASE);
	return true;
}

/* A flow socket of the process that holds s, taken from it; its flow in
 * *a (the peer the source). -1: none that is one. */
static int flow_take(int pidfd, int fd, struct roce_addr *a, bool *v6)
{
	struct sockaddr_in6 peer, self;
	socklen_t pl = sizeof(peer), sl = sizeof(self);
	int dup, type = 0;
	socklen_t tl = sizeof(type);

	dup = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
	if (dup < 0)
		return -1;
	/* the descriptor may have been reused: only a UDP socket of port
	 * 4791 connected to a peer is a flow socket */
	if (getsockopt(dup, SOL_SOCKET, SO_TYPE, &type, &tl) || type != SOCK_DGRAM ||
	    getsockname(dup, (struct sockaddr *)&self, &sl) ||
	    getpeername(dup, (struct sockaddr *)&peer, &pl) ||
	    self.sin6_family != peer.sin6_family) {
		close(dup);
		return -1;
	}
	memset(a, 0, sizeof(*a));
	if (self.sin6_family == AF_INET6) {
		memcpy(a->src, &peer.sin6_addr, 16);
		memcpy(a->dst, &self.sin6_addr, 16);
		*v6 = true;
	} else if (self.sin6_family == AF_INET) {
		const struct sockaddr_in *p4 = (const void *)&peer, *s4 = (const void *)&self;

		sof_gid_from_v4(a->src, &p4->sin_addr);
		sof_gid_from_v4(a->dst, &s4->sin_addr);
		*v6 = false;
	} else {
		close(dup);
		return -1;
	}
	a->sport = ntohs(peer.sin6_port);
	a->dport = ntohs(self.sin6_port);
	if (a->dport != ROCE_UDP_PORT) {
		close(dup);
		return -1;
	}
	return dup;
}

/* Whether process pid is stopped (SIGSTOP, or by a tracer): the state in
 * /proc/PID/stat, after the command's closing parenthesis. */
static bool proc_stopped(pid_t pid)
{
	char path[32], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && (p[2] == 'T' || p[2] == 't');
}

/* Slot s's sockets out of the watch set: the slot is ticked for again. */
static void slot_unwatch(struct slot *s)
{
	if (!s->watching)
		return;
	if (s->p4.fd >= 0)
		epoll_ctl(watch.fd, EPOLL_CTL_DEL, s->p4.fd, NULL);
	if (s->p6.fd >= 0)
		epoll_ctl(watch.fd, EPOLL_CTL_DEL, s->p6.fd, NULL);
	s->watching = false;
	s->idle = 0;
}

/* Slot k's sockets into the watch set, each for one datagram; false
 * (and still ticked for) when they cannot be. */
static bool slot_watch_arm(uint32_t k)
{
	struct epoll_event ev = {.events = EPOLLIN | EPOLLONESHOT, .data.u64 = k};
	struct slot *s = &slots[k];

	if (watch.fd < 0)
		return false;
	s->watching = true;
	if ((s->p4.fd >= 0 && epoll_ctl(watch.fd, EPOLL_CTL_ADD, s->p4.fd, &ev)) ||
	    (s->p6.fd >= 0 && epoll_ctl(watch.fd, EPOLL_CTL_ADD, s->p6.fd, &ev))) {
		slot_unwatch(s);
		return false;
	}
	return true;
}

/* Whether the process of slot s names flow sockets (steer.c's top). */
static bool slot_flows(const struct slot *s)
{
	for (unsigned i = 0; i < SOF_TP_FLOW_FDS; i++)
		if (__atomic_load_n(&s->cnt->flow_fd[i], __ATOMIC_ACQUIRE))
			return true;
	return false;
}

/* Look at slot k; read its sockets when its engine stalled. */
static void slot_watch(uint32_t k)
{
	struct slot *s = &slots[k];
	uint64_t beat = __atomic_load_n(&s->cnt->beat, __ATOMIC_ACQUIRE);
	struct pollfd pfd[2 + SOF_TP_FLOW_FDS];
	struct roce_addr fa[SOF_TP_FLOW_FDS];
	bool fv6[SOF_TP_FLOW_FDS], queued = false;
	uint64_t now = sof_now_ns();
	int pidfd = -1;
	unsigned n = 0;

	if (beat != s->beat_seen) {
		/* the engine reads its sockets: nothing waits for the daemon */
		s->beat_seen = beat;
		s->queued = false;
		s->idle++;
		if (s->logged)
			sofd_log("steering slot %u: the engine of pid %d runs again", k,
				 (int)s->owner->pid);
		s->stalled = s->logged = false;
		return;
	}
	pfd[n++] = (struct pollfd){.fd = s->p4.fd, .events = POLLIN};
	pfd[n++] = (struct pollfd){.fd = s->p6.fd, .events = POLLIN};
	if (s->stalled || s->queued || s->watching || s->idle % IDLE_FLOWS == 0) {
		for (unsigned i = 0; i < SOF_TP_FLOW_FDS; i++) {
			int fd = __atomic_load_n(&s->cnt->flow_fd[i], __ATOMIC_ACQUIRE) - 1;

			if (fd < 0)
				continue;
			if (pidfd < 0)
				pidfd = (int)syscall(SYS_pidfd_open, s->owner->pid, 0);
			if (pidfd < 0)
				break;
			pfd[n].fd = flow_take(pidfd, fd, &fa[n - 2], &fv6[n - 2]);
			pfd[n].events = POLLIN;
			n += pfd[n].fd >= 0;
		}
	}
	if (pidfd >= 0)
		close(pidfd);
	if (poll(pfd, n, 0) > 0)
		for (unsigned i = 0; i < n; i++)
			queued |= !!(pfd[i].revents & POLLIN);
	s->idle = queued ? 0 : s->idle + 1;
	if (queued && !s->queued)
		s->queued_ns = now;
	/* a stalled engine's sockets stayed empty for a while: the slow tick */
	if (s->idle > STALLED_IDLE)
		s->stalled = false;
	/* datagrams waited a whole tick and the engine read none (or it
	 * stalled already), and the process is stopped, or they waited
	 * LATE_NS: a process that runs, only late, keeps its packets that
	 * long, of which the daemon would drop what it does not execute */
	if (queued && (s->queued || s->stalled) &&
	    (s->stalled || now - s->queued_ns >= LATE_NS || proc_stopped(s->owner->pid))) {
		uint32_t kept = __atomic_load_n(&s->cnt->kept_tail, __ATOMIC_RELAXED);
		uint64_t one = 1;

		if (!s->logged)
			sofd_log("steering slot %u: the engine of pid %d stalled: the daemon "
				 "runs its responders",
				 k, (int)s->owner->pid);
		s->stalled = s->logged = true;
		taking = k;
		if (s->p4.fd >= 0)
			tp_rx(s->p4.fd, false, NULL);
		if (s->p6.fd >= 0)
			tp_rx(s->p6.fd, true, NULL);
		for (unsigned i = 2; i < n; i++)
			tp_rx(pfd[i].fd, fv6[i - 2], &fa[i - 2]);
		taking = 0;
		if (__atomic_load_n(&s->cnt->kept_tail, __ATOMIC_RELAXED) != kept &&
		    write(s->evfd, &one, sizeof(one)) < 0) {
			/* the counter is full: the engine has a wake-up due */
		}
	}
	s->queued = queued;
	for (unsigned i = 2; i < n; i++)
		close(pfd[i].fd);
}

void sof_tp_steer_tick(void)
{
	struct epoll_event ev[16];
	uint64_t expirations;
	bool ticked = false, stalled = false, slow = false;
	int n;

	if (read(tick.fd, &expirations, sizeof(expirations)) < 0) {
		/* EAGAIN: nothing to read, the look below is harmless */
	}
	/* watched slots whose sockets got a datagram: ticked for again */
	do {
		n = watch.fd >= 0 ? epoll_wait(watch.fd, ev, SOF_ARRAY_SIZE(ev), 0) : 0;
		for (int i = 0; i < n; i++)
			if (ev[i].data.u64 < nslots)
				slot_unwatch(&slots[ev[i].data.u64]);
	} while (n == (int)SOF_ARRAY_SIZE(ev));
	for (uint32_t k = 1; k < nslots; k++) {
		struct slot *s = &slots[k];

		if (!s->owner || (s->watching && !slot_flows(s)))
			continue;
		/* a quiet slot with flow sockets: its flows looked at */
		slot_watch(k);
		stalled |= s->stalled;
		if (s->watching && (s->stalled || s->queued || s->idle < QUIET_TICKS))
			slot_unwatch(s);
		if (!s->watching &&
		    (s->stalled || s->queued || s->idle < QUIET_TICKS || !slot_watch_arm(k)))
			ticked = true;
		slow |= s->watching;
	}
	tick_set(ticked ? (stalled ? TICK_STALLED_NS : TICK_NS) : slow ? SLOW_NS : 0);
}
