/*
 * The daemon's InfiniBand port: the device sofib0 beside the RoCEv2 device
 * sof0 (daemon/README.md says why a second device and not a second port).
 * Started by the options --ib-fabric ADDR:PORT (the far end of the link:
 * the fabric's listening address, or another host's port cabled directly),
 * --ib-node NAME (the HCA's name in the topology) and --ib-port PORT (the
 * local UDP port, 0: any). The link and the port's state machine are the
 * transport's (transport/iblink.c, tp_ib.h); here: the options, the
 * socket and a half-second timer in the epoll loop, the port's attributes
 * published in the GID page (struct sof_ib_port, read by the library's
 * ibv_query_port and sysfs presentation, and by the programs that run
 * their QPs on the port: transport/iblink.c's tp_ib_attach) whenever they
 * change, and IB_STATUS for `softofed status` (with what the programs
 * counted in their slots' pages, daemon/steer.c). Its SMA on QP0 is ib_sma.c.
 */
#include "sofd.h"

#include "tp_ib.h"

#include "sof_gid.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#define TICK_NS 500000000ull

_Static_assert(SOF_IBCNT_drop_icrc - SOF_IBCNT_drop_short == IB_DROP_ICRC - IB_DROP_SHORT,
	       "IB_STATUS names every drop reason of ib_parse");

static struct {
	bool want;
	struct tp_ib_config cfg;
	char node[IB_SOFL_NAME_LEN + 1];
	struct sofd_pollable sock, timer;
	struct sof_ib_status_rep rep;
} sib = {.sock = {.kind = SOFD_POLL_IB, .fd = -1}, .timer = {.kind = SOFD_POLL_IB_TIMER, .fd = -1}};

/* ADDR:PORT, [ADDR6]:PORT or a host name and port. */
static int parse_peer(const char *arg)
{
	char host[256];
	const char *colon, *h = arg;
	size_t hl;
	struct addrinfo hints = {.ai_socktype = SOCK_DGRAM, .ai_flags = AI_NUMERICSERV}, *ai;
	int err;

	colon = strrchr(arg, ':');
	if (!colon || !colon[1])
		return -EINVAL;
	hl = (size_t)(colon - arg);
	if (arg[0] == '[' && hl >= 2 && arg[hl - 1] == ']') {
		h++;
		hl -= 2;
	}
	if (!hl || hl >= sizeof(host))
		return -EINVAL;
	memcpy(host, h, hl);
	host[hl] = '\0';
	err = getaddrinfo(host, colon + 1, &hints, &ai);
	if (err)
		return -EINVAL;
	memcpy(&sib.cfg.peer, ai->ai_addr, ai->ai_addrlen);
	sib.cfg.peer_len = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}

int sofd_ib_option(const char *opt, const char *val)
{
	if (!strcmp(opt, "ib-fabric")) {
		if (parse_peer(val)) {
			fprintf(stderr, "softofedd: --ib-fabric %s: not ADDR:PORT\n", val);
			return -EINVAL;
		}
		sib.want = true;
	} else if (!strcmp(opt, "ib-node")) {
		if (!val[0] || strlen(val) > IB_SOFL_NAME_LEN) {
			fprintf(stderr, "softofedd: --ib-node: 1 to %d characters\n",
				IB_SOFL_NAME_LEN);
			return -EINVAL;
		}
		snprintf(sib.node, sizeof(sib.node), "%s", val);
	} else if (!strcmp(opt, "ib-port")) {
		char *end;
		unsigned long p = strtoul(val, &end, 10);

		if (*end || p > 65535) {
			fprintf(stderr, "softofedd: --ib-port %s: not a UDP port\n", val);
			return -EINVAL;
		}
		sib.cfg.local_port = (uint16_t)p;
	} else {
		return -EINVAL;
	}
	return 0;
}

bool sofd_ib_present(void) { return tp_ib_on(); }

static void fill_port(struct sof_ib_port *p)
{
	const struct tp_ib_attr *a = tp_ib_attr();

	memset(p, 0, sizeof(*p));
	p->present = tp_ib_on();
	if (!p->present)
		return;
	p->state = a->state;
	p->phys_state = a->phys_state;
	p->port_num = a->port_num;
	p->lmc = a->lmc;
	p->lid = a->lid;
	p->sm_lid = a->sm_lid;
	p->sm_sl = a->sm_sl;
	p->active_mtu = a->active_mtu;
	p->vl_cap = a->vl_cap;
	p->node_guid = a->node_guid;
	p->port_guid = a->port_guid;
	p->subnet_prefix = a->subnet_prefix;
	for (unsigned i = 0; i < SOF_IB_PKEYS && i < TP_IB_PKEYS; i++)
		p->pkeys[i] = a->pkeys[i];
	memcpy(p->sl2vl, a->sl2vl, sizeof(p->sl2vl));
	if (sib.cfg.peer_len <= sizeof(p->peer)) {
		memcpy(p->peer, &sib.cfg.peer, sib.cfg.peer_len);
		p->peer_len = sib.cfg.peer_len;
	}
	snprintf(p->node_name, sizeof(p->node_name), "%s", sib.node);
	snprintf(p->peer_name, sizeof(p->peer_name), "%s", a->peer);
	snprintf(p->direct, sizeof(p->direct), "%s", a->direct);
}

/* One port event of sofib0 to every context (the library shows it to
 * those of sofib0 only, SOF_ASYNC_PORT_IB). */
void sofd_ib_port_event(uint32_t type)
{
	for (struct sof_link *l = sofd.conns.next; l != &sofd.conns; l = l->next) {
		struct sofd_conn *c = sof_container_of(l, struct sofd_conn, link);

		if (c->ctx_id)
			sofd_async_send(c, type, 1 | SOF_ASYNC_PORT_IB);
	}
}

/* The events an HCA raises when the SM or the link changes its port (the
 * kernel's ib_event from the driver's port change): Active or not, a new
 * LID, a new SM LID, a changed P_Key table. */
static void port_events(void)
{
	static struct {
		bool known;
		uint8_t state;
		uint16_t lid, sm_lid;
		uint16_t pkeys[TP_IB_PKEYS];
	} was;
	const struct tp_ib_attr *a = tp_ib_attr();

	if (was.known) {
		if (a->state == IBV_PORT_ACTIVE && was.state != IBV_PORT_ACTIVE)
			sofd_ib_port_event(IBV_EVENT_PORT_ACTIVE);
		if (a->state != IBV_PORT_ACTIVE && was.state == IBV_PORT_ACTIVE)
			sofd_ib_port_event(IBV_EVENT_PORT_ERR);
		if (a->lid != was.lid)
			sofd_ib_port_event(IBV_EVENT_LID_CHANGE);
		if (a->sm_lid != was.sm_lid)
			sofd_ib_port_event(IBV_EVENT_SM_CHANGE);
		if (memcmp(a->pkeys, was.pkeys, sizeof(was.pkeys)))
			sofd_ib_port_event(IBV_EVENT_PKEY_CHANGE);
	}
	was.known = true;
	was.state = a->state;
	was.lid = a->lid;
	was.sm_lid = a->sm_lid;
	memcpy(was.pkeys, a->pkeys, sizeof(was.pkeys));
}

/* The port's attributes changed: publish them. */
static void publish(void)
{
	struct sof_ib_port p;

	sofd_ib_sma_sync();
	port_events();
	if (!sofd.objtab)
		return;
	fill_port(&p);
	sof_ib_publish((struct sof_gid_shm *)((char *)sofd.objtab + SOF_OBJTAB_GID_OFF), &p);
}

/* The programs' QPs on the port count into their slots' pages. */
static void add_counters(struct tp_ib_counters *sum)
{
	uint64_t rcv, xmit;

	sof_tp_slot_ib_counters(sum, &rcv, &xmit);
}

int sofd_ib_init(int epfd)
{
	struct itimerspec its = {.it_interval = {0, (long)TICK_NS}, .it_value = {0, (long)TICK_NS}};
	struct epoll_event ev = {.events = EPOLLIN};
	uint64_t guid;
	int err;

	if (!sib.want)
		return 0;
	if (!sib.node[0]) {
		sofd_log("--ib-fabric needs --ib-node NAME");
		return -EINVAL;
	}
	/* until ASSIGN gives the topology's: of sof0's node GUID, another
	 * node (the second HCA of this host), port GUID the next */
	guid = be64toh(sofd.dev.node_guid) ^ 0x0000000000800000ull;
	sib.cfg.node_guid = guid;
	sib.cfg.port_guid = guid + 1;
	sib.cfg.name = sib.node;
	sib.cfg.changed = publish;
	sib.cfg.add_counters = add_counters;
	err = tp_ib_start(&sib.cfg);
	if (!err)
		err = sofd_steer_ib(tp_ib_fd());
	if (!err)
		err = sofd_ib_sma_init(sib.node);
	if (err)
		return err;
	sib.sock.fd = tp_ib_fd();
	sib.timer.fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (sib.timer.fd < 0 || timerfd_settime(sib.timer.fd, 0, &its, NULL))
		return -errno;
	ev.data.ptr = &sib.sock;
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, sib.sock.fd, &ev))
		return -errno;
	ev.data.ptr = &sib.timer;
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, sib.timer.fd, &ev))
		return -errno;
	publish();
	sofd_log("ib: device %s node %s, link to %s", SOF_IB_DEV_NAME, sib.node,
		 sib.cfg.peer.ss_family == AF_INET6 ? "an IPv6 peer" : "an IPv4 peer");
	return 0;
}

void sofd_ib_event(struct sofd_pollable *p)
{
	if (p->kind == SOFD_POLL_IB_TIMER) {
		uint64_t n;

		if (read(p->fd, &n, sizeof(n)) < 0) {
			/* nothing to do: the tick runs anyway */
		}
		tp_ib_tick();
		sofd_ib_sma_tick();
		return;
	}
	/* the link socket, or a slot's member while no program holds it */
	(void)tp_ib_rx_fd(p->fd);
}

/* What waits in the link socket, read now (a QP moved to ERROR takes
 * what already reached the host first: sof_tp_modify_qp). */
void sofd_ib_rx_now(void)
{
	/* until a read finds it empty (tp_rx_fd reads by batches), bounded */
	for (int i = 0; sib.sock.fd >= 0 && i < 64; i++)
		if (tp_ib_rx_fd(sib.sock.fd) <= 0)
			break;
}

void sofd_ib_fini(void)
{
	tp_ib_stop();
	sofd_ib_sma_fini();
	if (sib.timer.fd >= 0)
		close(sib.timer.fd);
	sib.timer.fd = -1;
}

int sofd_ib_status(struct sofd_req *rq, struct sofd_rep *rp)
{
	const struct tp_ib_counters *c = tp_ib_counters();
	struct tp_ib_counters progs = {0};
	uint64_t *v = sib.rep.counters;

	(void)rq;
	memset(&sib.rep, 0, sizeof(sib.rep));
	fill_port(&sib.rep.port);
	if (sib.rep.port.present) {
		v[SOF_IBCNT_rcv_pkts] = c->rcv_pkts;
		v[SOF_IBCNT_xmit_pkts] = c->xmit_pkts;
		v[SOF_IBCNT_rcv_data] = c->rcv_data;
		v[SOF_IBCNT_xmit_data] = c->xmit_data;
		v[SOF_IBCNT_rcv_errors] = c->rcv_errors;
		v[SOF_IBCNT_xmit_discards] = c->xmit_discards;
		v[SOF_IBCNT_vl15_dropped] = c->vl15_dropped;
		v[SOF_IBCNT_link_downed] = c->link_downed;
		v[SOF_IBCNT_pkey_violations] = c->pkey_violations;
		v[SOF_IBCNT_dlid_drops] = c->dlid_drops;
		v[SOF_IBCNT_state_drops] = c->state_drops;
		v[SOF_IBCNT_link_msgs] = c->link_msgs;
		v[SOF_IBCNT_link_bad] = c->link_bad;
		v[SOF_IBCNT_xmit_sends] = c->xmit_sends;
		v[SOF_IBCNT_direct_bad] = c->direct_bad;
		for (unsigned d = IB_DROP_SHORT; d < IB_DROP_NR; d++)
			v[SOF_IBCNT_drop_short + d - IB_DROP_SHORT] = c->drops[d];
		sofd_ib_sma_counts(&v[SOF_IBCNT_smp_rx], &v[SOF_IBCNT_smp_tx]);
		sofd_ib_sma_traps(&v[SOF_IBCNT_traps], &v[SOF_IBCNT_traps_repressed],
				  &v[SOF_IBCNT_pma_rx]);
		/* of them, the programs' own (the rest went through the daemon) */
		sof_tp_slot_ib_counters(&progs, &v[SOF_IBCNT_eng_rcv_pkts],
					&v[SOF_IBCNT_eng_xmit_pkts]);
	}
	rp->data = &sib.rep;
	rp->len = sizeof(sib.rep);
	return 0;
}
