/*
 * softofed-fabric: the fabric process. Loads the topology, builds the
 * fabric, listens for real hosts on one UDP address and for control
 * requests on the abstract Unix socket "softofed/fabric" (one fabric per
 * network namespace), and moves packets until told to stop.
 *
 *   softofed-fabric FILE [--listen ADDR:PORT] [--real NAME[,NAME...]]
 *                   [--log FILE] [--ibsim] [--nice N] [--spin USEC]
 *                   [--sim-spin USEC] [--no-direct]
 *
 * Direct paths (direct.c, on unless --no-direct): publish the routes whose
 * every hop is a plain LFT forward in a sealed memfd the hosts map
 * read-only, so that they send such packets straight to each other. A
 * host that cannot map it (another pid namespace, another user) says
 * nothing back, and every packet to or from it goes through this process.
 * --direct is accepted and changes nothing.
 *
 * --ibsim: also serve ibsim's client protocol (sim.c), so that programs
 * run with libumad2sim.so preloaded (OpenSM, infiniband-diags) attach to
 * a simulated HCA (SIM_HOST, else the first simulated HCA of the file).
 *
 * Control requests (one line; the answer is text, then the connection
 * closes): STATUS, NODES, PORT NAME N, LINK NAME N up|down, DOWN;
 * CAPTURE COUNT SECS [NAME PORT] answers "ok capture" and a pcap stream
 * (capture.c). The
 * `softofed fabric` command (tools/fabric.c) sends them.
 *
 * --nice N (default -10; 0 leaves it): the process's scheduling priority.
 * Every packet between hosts waits for this process to wake, so on a
 * loaded machine each hop would add a wait for a CPU that a switch, which
 * forwards whatever the hosts' CPUs do, never has; the process only runs
 * when packets arrive, so the priority costs the hosts nothing when idle.
 * Without the privilege (not root) it runs at its inherited priority.
 *
 * The hot path does not sleep while packets come: after a wake-up that
 * brought packets the loop looks again (poll with no wait, sched_yield in
 * between) until --spin USEC (default 50; 0: never) passed with none, as
 * the program's engine spins (verbs/tp_wake.c): in a ping-pong the answer
 * comes back through the fabric sooner than a wake-up on a virtual
 * machine. Bounded, so an idle fabric sleeps; and not for a while once a
 * yield came back late (another task wants this CPU, and a spinner waits
 * for that task's slice where a sleeper would be woken at once). The
 * process also asks for a short scheduler slice (EEVDF's custom slice,
 * Linux 6.12; older kernels refuse it and nothing changes), so that its
 * wake-up preempts a spinning program at once rather than after that
 * program's slice.
 *
 * When the process may run on one CPU only (taskset; read at start and
 * each second), MADs from ibsim clients (--ibsim) are answered in
 * batches: the loop reads every MAD that waits, answers each, then yields
 * and reads what came meanwhile (up to 8 times: until a yield brings none
 * and ran no other task, or, not real-time, brings none), and only then
 * sends the answers, each client's in one sendmmsg (sim.c). A subnet manager hands
 * each SMP between its threads (OpenSM: a sender, a dispatcher,
 * libumad2sim's reader and the umad reader), and every batch of answers
 * costs a wake-up of each: with a window of 4 SMPs answered as they came,
 * OpenSM's window went round in ones and pairs, and its start (every
 * process SCHED_FIFO on one CPU) cost ft128 / ft648 2,236 / 7,785
 * wake-ups of the fabric and 10,015 / 38,256 of OpenSM; with the yields,
 * whose turns let OpenSM's runnable threads send what they have before
 * the answers go, in batches of 4: 1,080 / 4,943 and 5,366 / 24,386
 * (ibsim, one MAD a turn: 1,729 / 7,918 and 8,549 / 38,931). Not
 * real-time, a yield that brought nothing and took over 30 us (another
 * task had the CPU, as under CFS on a loaded machine) stops it for
 * 100 ms. With more CPUs the client's threads run beside the fabric, and
 * an answer held back is one they wait for: every answer leaves at once
 * (SCHED_FIFO on both CPUs, held to the end of the turn, OpenSM's start
 * took 1.05-1.08 times as long as answered at once).
 *
 * With --sim-spin USEC (default 0: never), after MADs from an ibsim
 * client (--ibsim) the loop looks again with no wait, a sched_yield before
 * each look, until USEC passed with none. A subnet manager keeps a few
 * SMPs on the wire (OpenSM 4) and sends the next ones some 40 us after the
 * answers: its start is a chain of round trips, and a fabric asleep
 * between them adds a wake-up to each (OpenSM's start on ft128 with every
 * process SCHED_FIFO: 52 ms instead of 113, ibsim 114; under CFS on a
 * quiet 2-core VM no gain, so off unless asked). The yield is what
 * makes it fit CFS: OpenSM hands each SMP between threads, and one woken
 * on this CPU waited behind a spinner that did not yield (a nice -10
 * process keeps the CPU for most of its slice: such a wake-up took 1.2 ms
 * at its 90th percentile, 32 us with the yield; the start on ft648 at load
 * 3 took 541-704 ms against 424), where a yield hands it the CPU at the
 * next look. Bounded, so an idle fabric sleeps; a look that came back late
 * (the process preempted, or a yield that ran another task) ends the spin,
 * 4 of them in a row with no MAD caught stop it for a while (as above); and
 * no spin starts while more tasks are runnable than the CPUs take
 * (cpus_busy).
 */
#include "fabric.h"
#include "sof_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/udp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#define CTL_NAME "softofed/fabric"
#define DEFAULT_LISTEN "127.0.0.1:7471"
#define DEFAULT_NICE (-10)
#define DEFAULT_SPIN_US 50
#define SLICE_NS 100000ull	   /* the shortest slice Linux takes */
#define SPIN_CONTENDED_NS 30000ull /* a yield this long: the CPU is shared */
#define SPIN_OFF_NS 100000000ull   /* then no spinning for this long */
#define DEFAULT_SIM_SPIN_US 0

static volatile sig_atomic_t stop;
static uint64_t started;
static const char *topo_path;
static char listen_str[128];

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int udp_open(const char *spec)
{
	struct addrinfo hints = {.ai_socktype = SOCK_DGRAM, .ai_flags = AI_NUMERICHOST};
	struct addrinfo *ai;
	char host[96];
	const char *colon = strrchr(spec, ':');
	size_t hl;
	int fd, rc, one = 1;

	if (!colon || colon == spec || (size_t)(colon - spec) >= sizeof(host))
		return -EINVAL;
	hl = (size_t)(colon - spec);
	if (spec[0] == '[' && colon[-1] == ']') {
		memcpy(host, spec + 1, hl - 2);
		host[hl - 2] = '\0';
	} else {
		memcpy(host, spec, hl);
		host[hl] = '\0';
	}
	rc = getaddrinfo(host, colon + 1, &hints, &ai);
	if (rc)
		return -EINVAL;
	fd = socket(ai->ai_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		rc = -errno;
		freeaddrinfo(ai);
		return rc;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, ai->ai_addr, ai->ai_addrlen)) {
		rc = -errno;
		close(fd);
		freeaddrinfo(ai);
		return rc;
	}
	freeaddrinfo(ai);
	/* every host's packets meet here: room for bursts */
	sof_sock_bufs(fd, 8 << 20);
	/* a host's GSO run comes whole (fab_udp_datagram cuts it) */
	(void)setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof(one));
	return fd;
}

#define RX_BATCH 32
#define RX_ROUNDS 8
#define RX_BUF 65536 /* a UDP GRO datagram: a host's GSO run */
static struct {
	struct mmsghdr m[RX_BATCH];
	struct iovec iov[RX_BATCH];
	struct sockaddr_storage from[RX_BATCH];
	union {
		char b[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl[RX_BATCH];
	uint8_t buf[RX_BATCH][RX_BUF];
} rx;

/* What the hosts sent, up to RX_BATCH datagrams (recvmmsg); how many. A
 * datagram longer than a buffer is cut to it and fails the packet checks
 * (longer than FAB_MAX_PKT). */
static int rx_batch(int fd)
{
	int n;

	for (int i = 0; i < RX_BATCH; i++) {
		rx.iov[i] = (struct iovec){.iov_base = rx.buf[i], .iov_len = sizeof(rx.buf[i])};
		rx.m[i].msg_hdr = (struct msghdr){.msg_name = &rx.from[i],
						  .msg_namelen = sizeof(rx.from[i]),
						  .msg_iov = &rx.iov[i],
						  .msg_iovlen = 1,
						  .msg_control = &rx.ctl[i],
						  .msg_controllen = sizeof(rx.ctl[i])};
	}
	n = recvmmsg(fd, rx.m, RX_BATCH, MSG_DONTWAIT, NULL);
	return n < 0 ? 0 : n;
}

/* The short slice: struct sched_attr of linux/sched/types.h
 * (SCHED_ATTR_SIZE_VER0), whose header clashes with glibc's sched.h; the
 * nice value it carries is the one the process has. */
static void short_slice(void)
{
	struct {
		uint32_t size, policy;
		uint64_t flags;
		int32_t nice;
		uint32_t priority;
		uint64_t runtime, deadline, period;
	} a = {.size = sizeof(a),
	       .policy = SCHED_OTHER,
	       .nice = getpriority(PRIO_PROCESS, 0),
	       .runtime = SLICE_NS};

	(void)syscall(SYS_sched_setattr, 0, &a, 0U);
}

/* The spin after packets (the comment atop): spin_until is when it ends,
 * nospin_until when it may start again after a contended yield. */
static uint64_t spin_ns, spin_until, nospin_until;
/* the same after an ibsim client's MADs (the comment atop): no yield; a
 * late look ends the spin, SIM_SPIN_LATE of them with no MAD caught in
 * between stop it for SPIN_OFF_NS (one alone is an interrupt or a
 * kernel thread; a CPU shared all the time makes them come in a row) */
#define SIM_SPIN_LATE 4
static uint64_t sim_spin_ns, sim_spin_until, sim_look_at;
static unsigned sim_late;
static bool sim_look_empty;

/* After MADs from ibsim clients, their answers wait while the loop yields
 * and reads what came meanwhile, at most SIM_HOLD_YIELDS times (the
 * comment atop). A yield that brought nothing ends it; one that took
 * SIM_YIELD_RAN_NS or more ran another task, and the loop yields again
 * when this process is real-time (that task was one of the client's
 * threads, which may hand the next one a MAD to send); otherwise, when it
 * came back late (another task had the CPU), stops it for SPIN_OFF_NS. */
#define SIM_HOLD_YIELDS 8
#define SIM_YIELD_RAN_NS 3000ull
static uint64_t nohold_until;

/* every client's MADs that wait, each answered (to leave at the flush) */
static unsigned sim_read(struct fabric *f)
{
	unsigned got = 0;

	for (int k = 0; k < FAB_SIM_CLIENTS; k++)
		for (int r = 0; r < 256 && f->sim[k].pid && fab_sim_input(f, &f->sim[k]); r++)
			got++;
	return got;
}

/* whether this process may run on one CPU only (read at start and at
 * each tick into f->sim_batch: taskset) */
static bool one_cpu(void)
{
	cpu_set_t set;

	return !sched_getaffinity(0, sizeof(set), &set) && CPU_COUNT(&set) == 1;
}

static void sim_hold(struct fabric *f)
{
	if (!f->sim_batch)
		return;
	for (int y = 0; y < SIM_HOLD_YIELDS; y++) {
		uint64_t t0 = fab_now(), t1;
		unsigned got;

		if (t0 < nohold_until)
			return;
		sched_yield();
		got = sim_read(f);
		t1 = fab_now();
		if (!got) {
			int policy;

			if (t1 - t0 < SIM_YIELD_RAN_NS)
				return; /* nothing else wanted this CPU */
			/* under a real-time policy only tasks of the same
			 * priority ran: the client's own threads, whose next
			 * one may send once it runs */
			policy = sched_getscheduler(0);
			if (policy == SCHED_FIFO || policy == SCHED_RR)
				continue;
			if (t1 - t0 > SPIN_CONTENDED_NS)
				nohold_until = t1 + SPIN_OFF_NS;
			return;
		}
	}
}

/* Whether more tasks are runnable than the CPUs take with this process
 * and one more (the field "R/T" of /proc/loadavg, read at most once a
 * millisecond): then a spin takes the CPU from a program that waits for
 * it, the client itself perhaps (OpenSM's start under CFS at load 6.5:
 * 20 % slower with the spin), and it is not tried. */
static int loadavg_fd = -1;
static long ncpus;

static bool cpus_busy(uint64_t now)
{
	static uint64_t read_at;
	static bool busy;
	char b[128];
	const char *r;
	ssize_t n;

	if (loadavg_fd < 0 || (read_at && now - read_at < 1000000))
		return busy;
	read_at = now;
	n = pread(loadavg_fd, b, sizeof(b) - 1, 0);
	if (n <= 0)
		return busy;
	b[n] = '\0';
	/* "0.50 0.40 0.30 R/T LAST": the fourth field */
	r = b;
	for (int i = 0; i < 3 && r; i++)
		r = strchr(r + 1, ' ');
	busy = r && strtol(r + 1, NULL, 10) > ncpus + 1;
	return busy;
}

static void spin_packets(uint64_t now)
{
	if (spin_ns && now >= nospin_until)
		spin_until = now + spin_ns;
}

/* Whether to look again at once (then after a yield), or to sleep. */
static bool spin_again(void)
{
	uint64_t t0;

	if (!spin_until)
		return false;
	t0 = fab_now();
	if (t0 >= spin_until) {
		spin_until = 0;
		return false;
	}
	sched_yield();
	if (fab_now() - t0 > SPIN_CONTENDED_NS) {
		spin_until = 0;
		nospin_until = fab_now() + SPIN_OFF_NS;
		return false;
	}
	return true;
}

/* Whether to look again with no wait after an ibsim client's MADs, after
 * a yield (a task woken on this CPU, one of the client's threads, runs
 * first). A turn of the loop whose look found nothing is a poll and the
 * yield: when the time since that look began is over SPIN_CONTENDED_NS,
 * another task had this CPU (late). */
static bool sim_spin_look(void)
{
	uint64_t now;

	if (!sim_spin_until)
		return false;
	sched_yield();
	now = fab_now();
	if (sim_look_empty && now - sim_look_at > SPIN_CONTENDED_NS) {
		sim_spin_until = 0;
		if (++sim_late >= SIM_SPIN_LATE) {
			nospin_until = now + SPIN_OFF_NS;
			sim_late = 0;
		}
		return false;
	}
	if (now >= sim_spin_until) {
		sim_spin_until = 0;
		return false;
	}
	sim_look_at = now;
	return true;
}

static int ctl_open(void)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(CTL_NAME));

	if (fd < 0)
		return -errno;
	memcpy(sun.sun_path + 1, CTL_NAME, strlen(CTL_NAME));
	if (bind(fd, (struct sockaddr *)&sun, len) || listen(fd, 16)) {
		int rc = -errno;

		close(fd);
		return rc;
	}
	return fd;
}

/* ---- control answers ---- */

struct out {
	char *buf;
	size_t len, cap;
};

static void outf(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void outf(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(o->buf ? o->buf + o->len : NULL, o->buf ? o->cap - o->len : 0, fmt,
			      ap);
		va_end(ap);
		if (n < 0)
			return;
		if (o->buf && o->len + (size_t)n < o->cap) {
			o->len += (size_t)n;
			return;
		}
		{
			size_t cap = (o->cap + (size_t)n + 1) * 2;
			char *nb = realloc(o->buf, cap);

			if (!nb)
				return;
			o->buf = nb;
			o->cap = cap;
		}
	}
}

static void status(struct fabric *f, struct out *o)
{
	unsigned sw = 0, ca = 0, real = 0;
	const struct fab_stats *s = &f->st;

	for (unsigned i = 0; i < f->nnodes; i++) {
		sw += f->nodes[i]->m->type == SOF_NODE_SWITCH;
		ca += f->nodes[i]->m->type == SOF_NODE_CA;
		real += f->nodes[i]->real;
	}
	outf(o, "softofed fabric pid %d, up %llu s, topology %s\n", (int)getpid(),
	     (unsigned long long)((fab_now() - started) / 1000000000ull), topo_path);
	outf(o, "nodes %u switches %u hcas %u real %u\n", f->nnodes, sw, ca, real);
	outf(o, "listen %s\n", listen_str);
	for (unsigned i = 0; i < f->nnodes; i++) {
		const struct fab_node *n = f->nodes[i];

		if (!n->real)
			continue;
		if (n->host.attached) {
			char a[INET6_ADDRSTRLEN] = "?";
			unsigned port = 0;

			if (n->host.addr.ss_family == AF_INET) {
				const struct sockaddr_in *in = (const void *)&n->host.addr;

				inet_ntop(AF_INET, &in->sin_addr, a, sizeof(a));
				port = ntohs(in->sin_port);
			} else {
				const struct sockaddr_in6 *in6 = (const void *)&n->host.addr;

				inet_ntop(AF_INET6, &in6->sin6_addr, a, sizeof(a));
				port = ntohs(in6->sin6_port);
			}
			/* direct: whether it mapped the direct paths' segment */
			outf(o, "real %s attached %s:%u link %s%s\n", n->name, a, port,
			     fab_link_up(n, 1) ? "up" : "down",
			     !f->direct	      ? ""
			     : n->host.direct ? " direct"
					      : " no-direct");
		} else {
			outf(o, "real %s waiting\n", n->name);
		}
	}
	outf(o,
	     "counters: pkts %llu forwarded %llu delivered %llu from_hosts %llu to_hosts %llu "
	     "traps %llu trap_resends %llu trap_repressed %llu tx_lost %llu\n",
	     (unsigned long long)s->pkts, (unsigned long long)s->forwarded,
	     (unsigned long long)s->delivered, (unsigned long long)s->from_hosts,
	     (unsigned long long)s->to_hosts, (unsigned long long)s->traps,
	     (unsigned long long)s->trap_resends, (unsigned long long)s->trap_repressed,
	     (unsigned long long)s->tx_lost);
	if (f->direct) {
		unsigned att = 0, dir = 0;

		for (unsigned i = 0; i < f->nnodes; i++)
			if (f->nodes[i]->real && f->nodes[i]->host.attached) {
				att++;
				dir += f->nodes[i]->host.direct;
			}
		/* hosts: the attached ones that mapped the segment, of all
		 * attached (the others keep this process's path) */
		outf(o, "direct: pkts %llu hosts %u of %u\n", (unsigned long long)s->direct, dir,
		     att);
	}
	outf(o, "drops:");
	for (int b = 1; b < FAB_BAD_MAX; b++)
		outf(o, " %s %llu", fab_bad_names[b], (unsigned long long)s->bad[b]);
	outf(o,
	     " no_route %llu port_down %llu pkey %llu not_mine %llu unknown_host %llu "
	     "sofl_bad %llu smp %llu mad %llu loop %llu queue_full %llu sim_lost %llu\n",
	     (unsigned long long)s->no_route, (unsigned long long)s->port_down,
	     (unsigned long long)s->pkey, (unsigned long long)s->not_mine,
	     (unsigned long long)s->unknown_host, (unsigned long long)s->sofl_bad,
	     (unsigned long long)s->smp_drop, (unsigned long long)s->mad_drop,
	     (unsigned long long)s->loop, (unsigned long long)s->queue_full,
	     (unsigned long long)s->sim_lost);
	{
		uint64_t d[SOF_SMP_DROP_MAX] = {0};

		for (unsigned i = 0; i < f->nnodes; i++)
			for (int k = 0; k < SOF_SMP_DROP_MAX; k++)
				d[k] += f->nodes[i]->m->drops[k];
		outf(o, "smp_drops:");
		for (int k = 0; k < SOF_SMP_DROP_MAX; k++)
			outf(o, " %s %llu", sof_smp_drop_names[k], (unsigned long long)d[k]);
		outf(o, "\n");
	}
	outf(o, "capture: %s captures %llu packets %llu dropped %llu\n", f->cap ? "on" : "off",
	     (unsigned long long)s->captures, (unsigned long long)s->captured,
	     (unsigned long long)s->cap_dropped);
}

static void nodes(struct fabric *f, struct out *o)
{
	for (unsigned i = 0; i < f->nnodes; i++) {
		const struct fab_node *n = f->nodes[i];
		const struct sof_node *m = n->m;

		outf(o, "%s \"%s\" %u guid 0x%016llx lid %u%s\n",
		     m->type == SOF_NODE_SWITCH ? "Switch" : "Hca", n->name, m->nports,
		     (unsigned long long)m->node_guid,
		     m->port[m->type == SOF_NODE_SWITCH ? 0 : 1].lid, n->real ? " real" : "");
		for (unsigned p = 1; p <= m->nports; p++) {
			const struct fab_port *fp = &n->port[p];

			if (!fp->peer)
				continue;
			outf(o, "[%u] \"%s\"[%u] port_guid 0x%016llx %s/%s%s\n", p, fp->peer->name,
			     fp->peer_port,
			     (unsigned long long)sof_node_mgmt_port((struct sof_node *)m, p)->guid,
			     sof_port_state_names[m->port[p].state],
			     sof_phys_state_names[m->port[p].phys], fp->cut ? " cut" : "");
		}
	}
}

static void port(struct fab_node *n, unsigned p, struct out *o)
{
	const struct sof_port *mp = &n->m->port[p];
	const struct sof_port_counters *c = &mp->cnt;

	outf(o, "port %s %u state %s phys %s lid %u link %s\n", n->name, p,
	     sof_port_state_names[mp->state], sof_phys_state_names[mp->phys],
	     sof_node_mgmt_port(n->m, p)->lid, fab_link_up(n, p) ? "up" : "down");
	outf(o,
	     "counters: xmit_pkts %llu rcv_pkts %llu xmit_data %llu rcv_data %llu rcv_errors %u "
	     "xmit_discards %u relay_errors %u rcv_constraint %u xmit_constraint %u "
	     "link_downed %u\n",
	     (unsigned long long)c->xmit_pkts, (unsigned long long)c->rcv_pkts,
	     (unsigned long long)c->xmit_data, (unsigned long long)c->rcv_data, c->rcv_errors,
	     c->xmit_discards, c->rcv_switch_relay_errors, c->rcv_constraint_errors,
	     c->xmit_constraint_errors, c->link_downed);
}

/* One request on fd; true when the fd was kept (a capture streams on it). */
static bool ctl_request(struct fabric *f, int fd)
{
	char line[256], name[FAB_NAME_LEN + 1], what[16];
	struct out o = {0};
	unsigned p;
	ssize_t n;
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	size_t got = 0;

	while (got < sizeof(line) - 1 && poll(&pfd, 1, 1000) == 1) {
		n = read(fd, line + got, sizeof(line) - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
		if (memchr(line, '\n', got))
			break;
	}
	line[got] = '\0';
	line[strcspn(line, "\n")] = '\0';
	if (!strcmp(line, "STATUS")) {
		status(f, &o);
	} else if (!strcmp(line, "NODES")) {
		nodes(f, &o);
	} else if (!strcmp(line, "DOWN")) {
		outf(&o, "ok\n");
		stop = 1;
	} else if (!strncmp(line, "CAPTURE ", 8)) {
		char err[160];

		if (!fab_cap_start(f, fd, line + 8, err, sizeof(err)))
			return true;
		outf(&o, "error: %s\n", err);
	} else if (sscanf(line, "PORT %64s %u", name, &p) == 2) {
		struct fab_node *nd = fab_find(f, name);

		if (!nd || p > nd->m->nports)
			outf(&o, "error: no port %u on a node %s\n", p, name);
		else
			port(nd, p, &o);
	} else if (sscanf(line, "LINK %64s %u %15s", name, &p, what) == 3) {
		struct fab_node *nd = fab_find(f, name);

		if (!nd || p < 1 || p > nd->m->nports || !nd->port[p].peer)
			outf(&o, "error: no link at port %u of a node %s\n", p, name);
		else if (strcmp(what, "up") && strcmp(what, "down"))
			outf(&o, "error: LINK NAME PORT up|down\n");
		else {
			fab_link_cut(f, nd, p, !strcmp(what, "down"));
			fab_run(f);
			outf(&o, "ok link %s[%u] %s\n", name, p, what);
		}
	} else {
		outf(&o, "error: unknown request '%s'\n", line);
	}
	for (size_t off = 0; o.buf && off < o.len;) {
		n = write(fd, o.buf + off, o.len - off);
		if (n < 0 && errno == EAGAIN &&
		    poll(&(struct pollfd){.fd = fd, .events = POLLOUT}, 1, 1000) == 1)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	free(o.buf);
	return false;
}

static int split_real(char *arg, char ***real, unsigned *nreal)
{
	for (char *tok = strtok(arg, ","); tok; tok = strtok(NULL, ",")) {
		char **nr = realloc(*real, (*nreal + 1) * sizeof(*nr));

		if (!nr)
			return -ENOMEM;
		*real = nr;
		(*real)[(*nreal)++] = tok;
	}
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: softofed-fabric FILE [--listen ADDR:PORT] [--real NAME,...] "
			"[--log FILE] [--ibsim] [--nice N] [--spin USEC]\n"
			"       [--sim-spin USEC] [--no-direct]\n");
}

int main(int argc, char **argv)
{
	const char *listen_spec = DEFAULT_LISTEN, *log = "/dev/null", *ibsim = NULL;
	bool direct = true;
	char **real = NULL;
	unsigned nreal = 0;
	struct fabric f;
	struct topo t;
	int ctl, rc, i, prio = DEFAULT_NICE, spin_us = DEFAULT_SPIN_US;
	int sim_spin_us = DEFAULT_SIM_SPIN_US;
	uint64_t next_tick;
	struct sigaction sa = {.sa_handler = on_signal};

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--listen") && i + 1 < argc)
			listen_spec = argv[++i];
		else if (!strcmp(argv[i], "--real") && i + 1 < argc)
			split_real(argv[++i], &real, &nreal);
		else if (!strcmp(argv[i], "--log") && i + 1 < argc)
			log = argv[++i];
		else if (!strcmp(argv[i], "--nice") && i + 1 < argc)
			prio = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--spin") && i + 1 < argc)
			spin_us = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--sim-spin") && i + 1 < argc)
			sim_spin_us = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--direct") || !strcmp(argv[i], "--no-direct"))
			direct = argv[i][2] == 'd';
		else if (!strcmp(argv[i], "--ibsim"))
			ibsim = getenv("IBSIM_SOCKNAME") ? getenv("IBSIM_SOCKNAME") : "sim";
		else if (argv[i][0] == '-' || topo_path) {
			usage();
			return 2;
		} else
			topo_path = argv[i];
	}
	if (!topo_path) {
		usage();
		return 2;
	}
	snprintf(listen_str, sizeof(listen_str), "%s", listen_spec);
	started = fab_now();
	if (topo_load(&t, topo_path))
		return 1;
	rc = fab_build(&f, &t, real, nreal);
	topo_free(&t);
	if (rc) {
		fab_free(&f);
		return 1;
	}
	f.udp = udp_open(listen_spec);
	if (f.udp < 0) {
		fprintf(stderr, "softofed-fabric: --listen %s: %s\n", listen_spec,
			strerror(-f.udp));
		return 1;
	}
	if (ibsim && (rc = fab_sim_open(&f, ibsim))) {
		fprintf(stderr, "softofed-fabric: --ibsim: sockets %s:*: %s\n", ibsim,
			strerror(-rc));
		return 1;
	}
	if (direct && (rc = fab_direct_open(&f))) {
		fprintf(stderr, "softofed-fabric: --direct: %s\n", strerror(-rc));
		return 1;
	}
	ctl = ctl_open();
	if (ctl < 0) {
		fprintf(stderr, "softofed-fabric: control socket: %s%s\n", strerror(-ctl),
			ctl == -EADDRINUSE ? " (a fabric runs in this network namespace)" : "");
		return 1;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* ready: from now on the caller's terminal is not ours */
	{
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
			close(fd);
		}
		if (nul >= 0) {
			dup2(nul, 0);
			close(nul);
		}
	}
	if (prio && setpriority(PRIO_PROCESS, 0, prio))
		fprintf(stderr, "softofed-fabric: --nice %d: %s (the inherited priority stays)\n",
			prio, strerror(errno));
	short_slice();
	spin_ns = spin_us > 0 ? (uint64_t)spin_us * 1000 : 0;
	sim_spin_ns = sim_spin_us > 0 ? (uint64_t)sim_spin_us * 1000 : 0;
	ncpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (sim_spin_ns && ibsim)
		loadavg_fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
	next_tick = fab_now() + 1000000000ull;
	f.sim_batch = one_cpu();
	while (!stop) {
		struct pollfd pfd[4 + FAB_SIM_CLIENTS] = {{.fd = f.udp, .events = POLLIN},
							  {.fd = ctl, .events = POLLIN},
							  {.fd = f.sim_ctl, .events = POLLIN}};
		uint64_t now;
		unsigned sim_got;
		bool spun;

		pfd[3 + FAB_SIM_CLIENTS].fd = fab_cap_fd(&f, &pfd[3 + FAB_SIM_CLIENTS].events);
		for (int k = 0; k < FAB_SIM_CLIENTS; k++)
			pfd[3 + k] = (struct pollfd){.fd = f.sim[k].pid ? f.sim[k].fd : -1,
						     .events = POLLIN};
		spun = sim_spin_look();
		rc = poll(pfd, 4 + FAB_SIM_CLIENTS,
			  spun || spin_again() ? 0 : fab_direct_timeout(&f, 200));
		sim_look_empty = spun && rc == 0;
		if (rc < 0 && errno != EINTR)
			break;
		if (pfd[2].revents & POLLIN)
			fab_sim_ctl(&f);
		sim_got = 0;
		for (int k = 0; k < FAB_SIM_CLIENTS; k++) {
			int r = 0;

			while (r < 256 && (pfd[3 + k].revents & POLLIN) &&
			       fab_sim_input(&f, &f.sim[k]))
				r++;
			sim_got += (unsigned)r;
			if (r && spun)
				sim_late = 0; /* the spin caught it */
			if (r && sim_spin_ns && (now = fab_now()) >= nospin_until &&
			    !cpus_busy(now))
				sim_spin_until = now + sim_spin_ns;
		}
		if (sim_got)
			sim_hold(&f);
		if (pfd[0].revents & POLLIN) {
			/* up to RX_BATCH datagrams a call, RX_ROUNDS calls, the
			 * queue run after each call */
			for (int k = 0; k < RX_ROUNDS; k++) {
				uint64_t pkts = f.st.from_hosts;
				int n = rx_batch(f.udp);

				for (int j = 0; j < n; j++)
					fab_udp_datagram(&f, rx.buf[j], rx.m[j].msg_len,
							 sof_udp_gro_size(&rx.m[j].msg_hdr),
							 &rx.from[j], rx.m[j].msg_hdr.msg_namelen);
				/* IB packets, not the links' HELLOs */
				if (f.st.from_hosts != pkts)
					spin_packets(fab_now());
				fab_run(&f);
				if (n < RX_BATCH)
					break;
			}
		}
		if (pfd[1].revents & POLLIN) {
			int c = accept4(ctl, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

			if (c >= 0 && !ctl_request(&f, c))
				close(c);
		}
		now = fab_now();
		fab_cap_io(&f, pfd[3 + FAB_SIM_CLIENTS].revents, now);
		if (now >= next_tick) {
			fab_tick(&f, now);
			f.sim_batch = one_cpu();
			fab_run(&f);
			next_tick = now + 1000000000ull;
		}
		fab_tx_flush(&f); /* what a control request sent */
		fab_sim_flush(&f);
		fab_direct_publish(&f);
	}
	/* tell attached hosts their link is gone */
	for (unsigned k = 0; k < f.nnodes; k++) {
		struct fab_node *n = f.nodes[k];

		if (n->real && n->host.attached) {
			struct ib_sofl m = {.type = IB_SOFL_BYE, .phys_state = SOF_PHYS_POLLING};
			uint8_t b[IB_SOFL_LEN];

			snprintf(m.name, sizeof(m.name), "%s", n->port[1].peer->name);
			ib_sofl_write(b, &m);
			sendto(f.udp, b, sizeof(b), 0, (struct sockaddr *)&n->host.addr,
			       n->host.addrlen);
		}
	}
	close(ctl);
	if (loadavg_fd >= 0)
		close(loadavg_fd);
	close(f.udp);
	fab_direct_close(&f);
	fab_free(&f);
	free(real);
	return 0;
}
