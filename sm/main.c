/*
 * softofed-sm: a subnet manager that speaks only through libibumad, so it
 * runs on softofed's sofib0 port (`softofed run`, our libibumad), on
 * ibsim or the fabric process through libumad2sim (rdma-core's libibumad),
 * or on a real HCA. This file: options, the umad port and agents, the
 * loop (the SMP engine, received MADs, phases of a sweep, light sweeps),
 * the SMInfo the SM answers (IBA 14.4.1.1) and the traps it repressed
 * (IBA 14.2.5.1: trap 128 starts a heavy sweep).
 *
 * A sweep: discover (sm/discover.c) -> LIDs (sm/lid.c) and routes
 * (sm/route.c) -> program, Armed (sm/program.c) -> Active -> SUBNET UP.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/umad.h>

#include "sm.h"
#include "sm_sa.h"
#include "smp.h"

#define MAX_SERVICES 4

const char *const sm_phase_names[SM_PHASE_MAX] = {
    [SM_PHASE_IDLE] = "idle",
    [SM_PHASE_DISCOVER] = "discover",
    [SM_PHASE_PROGRAM] = "program",
    [SM_PHASE_ACTIVATE] = "activate",
    [SM_PHASE_LIGHT] = "light sweep",
    [SM_PHASE_PROBE] = "probe",
};

static struct {
	const struct sm_service *ops;
	void *ctx;
} services[MAX_SERVICES];
static unsigned nservices;
static volatile sig_atomic_t stop;

int sm_service_add(const struct sm_service *ops, void *ctx)
{
	if (nservices == MAX_SERVICES)
		return -ENOSPC;
	services[nservices].ops = ops;
	services[nservices++].ctx = ctx;
	return 0;
}

uint64_t sm_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static uint64_t t0;

/* the CPU time the SM has used: the log's phases, apart from the load */
static uint64_t cpu_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

void sm_log(struct sm *sm, int level, const char *fmt, ...)
{
	va_list ap;

	if (level > sm->verbose)
		return;
	fprintf(stderr, "softofed-sm %8.3f: ", (double)(sm_now_us() - t0) / 1e6);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* Answer a request that came to the SM (LID-routed or directed) with
 * `mad` turned into its GetResp (IBA 13.4.6.3; a DR one with D set) */
static void reply(struct sm *sm, int agent, void *umad, uint8_t method)
{
	uint8_t *mad = umad_get_mad(umad);
	ib_mad_addr_t *a = umad_get_mad_addr(umad);
	uint16_t dlid = be16toh(a->lid);

	mad[3] = method;
	/* a TrapRepress passes the trap sender's M_Key check (IBA 14.2.4.1:
	 * at every protection level): the key we gave that port */
	if (method == SOF_METHOD_TRAP_REPRESS) {
		const struct sm_port *p = sm_port_by_lid(&sm->sn, dlid);

		sof_put64(mad + SOF_SMP_OFF_MKEY, p && p->m_key ? p->m_key : sm->sn.m_key);
	}
	if (mad[1] == SOF_MCLASS_SMP_DR) {
		sof_put16(mad + SOF_SMP_OFF_STATUS,
			  sof_get16(mad + SOF_SMP_OFF_STATUS) | SOF_SMP_DIRECTION);
		dlid = SOF_LID_PERMISSIVE;
	}
	umad_set_addr(umad, dlid ? dlid : SOF_LID_PERMISSIVE, 0, a->sl, 0);
	if (umad_send(sm->fd, agent, umad, 256, 0, 0) < 0)
		sm_log(sm, 1, "umad_send of a response failed");
}

static void request_in(struct sm *sm, int agent, void *umad)
{
	uint8_t *mad = umad_get_mad(umad);
	uint16_t attr = sof_get16(mad + SOF_SMP_OFF_ATTR_ID);
	uint8_t method = mad[3];

	if (attr == SOF_ATTR_SM_INFO && (method == SOF_METHOD_GET || method == SOF_METHOD_SET)) {
		/* IBA 14.4.1.1: Get answers our SMInfo; a Set from another
		 * SM (HANDOVER, ACKNOWLEDGE: sm/sminfo.c; DISABLE ... change
		 * nothing) is answered with our state after it */
		if (method == SOF_METHOD_SET)
			sm_sminfo_set(sm, sof_get32(mad + SOF_SMP_OFF_ATTR_MOD),
				      mad + SOF_SMP_OFF_DATA);
		sm_sminfo_fill(sm, mad + SOF_SMP_OFF_DATA);
		reply(sm, agent, umad, SOF_METHOD_GET_RESP);
		return;
	}
	if (method == SOF_METHOD_TRAP) {
		uint16_t trap = sof_get16(mad + SOF_SMP_OFF_DATA + 4);

		const uint8_t *d = mad + SOF_SMP_OFF_DATA;

		sm_log(sm, 1, "trap %u from LID %u", trap, be16toh(umad_get_mad_addr(umad)->lid));
		/* a STANDBY (having handed over, the ports' SM LID still
		 * ours until the new master writes it) leaves traps to the
		 * master: a TrapRepress carries the port's M_Key, and an SMP
		 * with the key stops the port's lease timer (IBA 14.2.4.2),
		 * so repressing the traps 256 a master without our keys
		 * causes would hold the ports from it for good; without the
		 * key the TrapRepress would itself be a violation */
		if (sm->sn.sm_state == SM_STATE_STANDBY) {
			const struct sm_port *from =
			    sm_port_by_lid(&sm->sn, be16toh(umad_get_mad_addr(umad)->lid));

			/* but the master's own trap 144 (OpenSM's "I am here",
			 * sent when it found us master a moment before we
			 * handed over to it) waits for its repress (IBA
			 * 13.4.8.3): OpenSM through libumad2sim, which times
			 * no send out, held its first sweep as master for it
			 * for good. No key of ours goes with that repress. */
			if (trap == 144 && from && sm->master && from->node == sm->master->node &&
			    !(from->m_key ? from->m_key : sm->sn.m_key))
				reply(sm, agent, umad, SOF_METHOD_TRAP_REPRESS);
			return;
		}
		/* IBA 14.2.5.1: the SMP that failed a port's M_Key check */
		if (trap == SOF_TRAP_BAD_MKEY)
			sm_log(sm, 0,
			       "trap 256: bad M_Key 0x%016llx at LID %u (method 0x%02x, attribute "
			       "0x%04x, modifier 0x%x)",
			       (unsigned long long)sof_get64(d + 24), sof_get16(d + 12), d[16],
			       sof_get16(d + 18), sof_get32(d + 20));
		sm_sa_trap_in(mad + SOF_SMP_OFF_DATA); /* to the SA's subscribers */
		reply(sm, agent, umad, SOF_METHOD_TRAP_REPRESS);
		if (trap == SOF_TRAP_LINK_STATE || trap == 129 || trap == 130 || trap == 131) {
			sm->resweep = true;
			if (!sm->t_trap)
				sm->t_trap = sm_now_us();
		}
		/* 144: a CapabilityMask changed, IsSM perhaps: a new SM,
		 * asked for its SMInfo (no sweep) */
		if (trap == 144 && sm_now_us() >= sm->next_trap144) {
			sm->next_trap144 = sm_now_us() + SM_TRAP144_US;
			sm_sminfo_check(sm, be16toh(umad_get_mad_addr(umad)->lid));
		}
		return;
	}
	if (method == SOF_METHOD_GET || method == SOF_METHOD_SET) {
		sof_put16(mad + SOF_SMP_OFF_STATUS, SOF_STATUS_BAD_ATTR);
		reply(sm, agent, umad, SOF_METHOD_GET_RESP);
	}
}

static void mad_in(struct sm *sm, int agent, void *umad, int len)
{
	uint8_t *mad = umad_get_mad(umad);
	unsigned i;

	if (agent == sm->agent_dr || agent == sm->agent_lid) {
		if (len >= 24 && (mad[3] & SOF_METHOD_RESP_BIT || umad_status(umad)))
			sm_io_input(sm, agent, umad, len);
		else if (len >= 256)
			request_in(sm, agent, umad);
		return;
	}
	for (i = 0; i < nservices; i++)
		if (services[i].ops->recv &&
		    services[i].ops->recv(services[i].ctx, agent, umad, len)) {
			/* the SA's clients first: background SMPs wait */
			sm_io_hold_bg(sm, sm_now_us());
			return;
		}
}

static unsigned count_ports(struct sm *sm, unsigned *active)
{
	unsigned i, j, all = 0;

	*active = 0;
	for (i = 0; i < sm->sn.nnodes; i++) {
		struct sm_node *n = sm->sn.nodes[i];

		if (!n->present)
			continue;
		for (j = 1; j <= n->nports; j++) {
			struct sm_port *p = &n->port[j];

			if (!p->present || !p->peer || p->state < SOF_PORT_INIT)
				continue;
			all++;
			*active += p->state == SOF_PORT_ACTIVE;
		}
	}
	return all;
}

static void notify_changed(void)
{
	unsigned i;

	for (i = 0; i < nservices; i++)
		if (services[i].ops->changed)
			services[i].ops->changed(services[i].ctx);
}

/* LIDs and routes from a finished discovery, then the fabric programmed */
static void configure(struct sm *sm)
{
	struct sm_subnet *sn = &sm->sn;
	uint64_t t = sm_now_us(), cpu = cpu_us();

	sn->sm_state = SM_STATE_MASTER;
	pthread_rwlock_wrlock(&sn->lock);
	if (!sm_lid_assign(sm)) {
		sn->sm_lid = sn->self->lid;
		sm_route(sm);
	}
	sn->generation++;
	pthread_rwlock_unlock(&sn->lock);
	sm_lid_save(sm);
	sm_log(sm, 1, "LIDs (up to %u) and %s routes in %.1f ms (%.1f ms CPU)", sn->max_lid,
	       sn->routing, (double)(sm_now_us() - t) / 1e3, (double)(cpu_us() - cpu) / 1e3);
	sm_program_start(sm);
	sm_log(sm, 1, "sweep %u programming: %u SMPs queued, %u LFT blocks", sn->sweep,
	       sm_io_queued(sm), sm->lft_blocks);
}

void sm_phase_done(struct sm *sm)
{
	struct sm_subnet *sn = &sm->sn;
	unsigned all, active, nodes = 0, i;

	switch (sm->phase) {
	case SM_PHASE_DISCOVER:
		for (i = 0; i < sn->nnodes; i++)
			nodes += sn->nodes[i]->present;
		sm_log(sm, 1, "sweep %u: %u nodes found in %.1f ms (%" PRIu64 " SMPs so far)",
		       sn->sweep, nodes, (double)(sm_now_us() - sm->t_phase) / 1e3, sm->smps_sent);
		if (sm->mkey_tries)
			sm_log(sm, 1, "%" PRIu64 " NodeInfos tried with the guid2mkey file's keys so far",
			       sm->mkey_tries);
		sm_discover_missed(sm);
		/* (self is the port an earlier sweep found) */
		if (!sn->self || sn->self->node->seen_sweep != sn->sweep) {
			sm_log(sm, 0, "the SM's own port did not answer");
			sm->phase = SM_PHASE_IDLE;
			sm->resweep = true;
			return;
		}
		/* a discovering SM first asks the others (IBA 14.4.1) */
		if (sn->sm_state != SM_STATE_MASTER && sm_sminfo_probe(sm))
			return;
		configure(sm);
		return;
	case SM_PHASE_PROBE:
		if (sn->sm_state == SM_STATE_MASTER) {
			sm->phase = SM_PHASE_IDLE;
			sm_sminfo_check_handover(sm);
			return;
		}
		if (sm->master) {
			sn->sm_state = SM_STATE_STANDBY;
			fprintf(stderr, "softofed-sm: STANDBY: the master SM is %#llx (%s)\n",
				(unsigned long long)sm->master_guid, sm->master->node->desc);
			sm->phase = SM_PHASE_IDLE;
			sm->next_poll = 0;
			sm_sminfo_announce(sm);
			return;
		}
		configure(sm);
		return;
	case SM_PHASE_PROGRAM:
		sm_log(sm, 1, "programmed in %.1f ms", (double)(sm_now_us() - sm->t_phase) / 1e3);
		sm_mkey_save(sm);
		if (sm->partitions)
			sm_log(sm, 1, "P_KeyTable blocks: %u read, %u written", sm->pkey_read,
			       sm->pkey_blocks);
		if (sm->t_trap && sn->up) {
			/* the reroute time: the first trap to the tables written */
			fprintf(stderr, "softofed-sm: rerouted: trap to tables written in %.1f ms, %u LFT blocks\n",
				(double)(sm_now_us() - sm->t_trap) / 1e3, sm->lft_blocks);
			sm->t_trap = 0;
		}
		sm_activate_start(sm);
		return;
	case SM_PHASE_ACTIVATE:
		all = count_ports(sm, &active);
		sn->act_count++;
		/* up once every node the last heavy sweep knew is reached */
		if (active == all && !sn->up && !sm->missed) {
			sn->up = true;
			fprintf(stderr, "softofed-sm: SUBNET UP in %.0f ms: %u nodes, %u ports Active, %" PRIu64
				" SMPs (%" PRIu64 " timed out), routing %s, %.0f ms CPU\n",
				(double)(sm_now_us() - t0) / 1e3, sn->nnodes, active,
				sm->smps_sent, sm->smps_timeout, sn->routing, (double)cpu_us() / 1e3);
			if (sm->once)
				stop = 1;
		} else if (active != all) {
			sm_log(sm, 1, "%u of %u ports Active; sweeping again", active, all);
			sm->resweep = true;
		}
		/* Sets refused or unanswered (a port another SM protects
		 * with its M_Key until the lease runs out, IBA 14.2.4.2): the
		 * next periodic sweep is a heavy one that writes them again */
		sm->sweep_errors = sm->errors + sm->missed;
		if (sm->errors)
			sm_log(sm, 1, "%u Sets refused or unanswered: the next sweep is heavy",
			       sm->errors);
		sn->generation++;
		notify_changed();
		sm_mcast_all(sm); /* trees over the links as they are now */
		sm->qos_pending = true;
		sm->phase = SM_PHASE_IDLE;
		sm->next_light = sm_now_us() + (uint64_t)sm->sweep_s * 1000000u;
		/* the master asks the other SMs: one may deserve it */
		if (!sm_sminfo_probe(sm))
			sm->phase = SM_PHASE_IDLE;
		return;
	case SM_PHASE_LIGHT:
	case SM_PHASE_IDLE:
	case SM_PHASE_MAX:
		sm->phase = SM_PHASE_IDLE;
		sm->next_light = sm_now_us() + (uint64_t)sm->sweep_s * 1000000u;
		return;
	}
}

static void usage(void)
{
	fprintf(stderr,
		"usage: softofed-sm [-C ca] [-P port] [--lmc N] [--priority N]\n"
		"       [--routing minhop|updown|ftree] [--guid2lid FILE] [--window N]\n"
		"       [--timeout MS] [--retries N] [--sweep S] [--sm-key KEY] [--once] [-v]...\n"
		"       [-y|--m_key KEY [--m_key_protection_level 0-3] [--m_key_lease_period S]]\n"
		"       [--m_key_per_port] [--guid2mkey FILE] [--m_key_release]\n"
		"       [--packet_life_time 0-63]\n"
		"       [--partitions FILE | --Pconfig FILE | -P FILE] (OpenSM's partitions.conf;\n"
		"       -P with a number is the port)\n");
}

/* Wait up to timeout_ms for MADs, then take in (up to 256) what came */
static void receive(struct sm *sm, void **buf, int timeout_ms)
{
	struct pollfd pfd = {.fd = umad_get_fd(sm->fd), .events = POLLIN};
	unsigned n;

	if (poll(&pfd, 1, timeout_ms) <= 0)
		return;
	for (n = 0; n < 256; n++) {
		int len = 256, agent;

		/* one MAD asked for (libumad2sim copies as much as asked); a
		 * longer (RMPP) message says its length with -ENOSPC and is
		 * read again into a larger buffer */
		agent = umad_recv(sm->fd, *buf, &len, 0);
		if (agent == -ENOSPC && len > 256) {
			void *big = realloc(*buf, umad_size() + (size_t)len + 4096);

			if (!big)
				break;
			*buf = big;
			agent = umad_recv(sm->fd, *buf, &len, 0);
		}
		if (agent < 0)
			break;
		mad_in(sm, agent, *buf, len);
	}
}

/* Leaving (SIGTERM, SIGINT) as master with --m_key_release: the ports'
 * M_Keys cleared (sm/mkey.c), waited for at most RELEASE_US */
#define RELEASE_US 3000000u
static void release(struct sm *sm, void **buf)
{
	uint64_t end = sm_now_us() + RELEASE_US;
	unsigned n;

	if (sm->sn.sm_state != SM_STATE_MASTER || !sm->m_key_release)
		return;
	sm_io_drop_all(sm); /* the sweep's SMPs: nothing waits on them now */
	n = sm_mkey_release(sm);
	if (!n)
		return;
	sm->phase = SM_PHASE_IDLE; /* a sweep's answers change nothing now */
	sm->errors = 0;
	while (!sm_io_idle(sm) && sm_now_us() < end) {
		sm_io_pump(sm);
		receive(sm, buf, 5);
	}
	fprintf(stderr, "softofed-sm: M_Keys released on %u ports%s\n", n - sm->errors,
		sm_io_idle(sm) ? "" : " (time out)");
}

static int open_port(struct sm *sm, const char *ca, int port)
{
	long mask[16 / sizeof(long)];
	char path[256];
	umad_port_t up;

	if (umad_init() < 0)
		return -ENODEV;
	sm_log(sm, 2, "umad_init done");
	sm->fd = umad_open_port(ca, port);
	if (sm->fd < 0)
		return sm->fd;
	sm_log(sm, 2, "umad_open_port done");
	memset(mask, 0, sizeof(mask));
	/* requests we take: Get/Set (SMInfo), Trap, TrapRepress */
	mask[0] = 1L << SOF_METHOD_GET | 1L << SOF_METHOD_SET | 1L << SOF_METHOD_TRAP |
		  1L << SOF_METHOD_TRAP_REPRESS;
	sm->agent_dr = umad_register(sm->fd, SOF_MCLASS_SMP_DR, 1, 0, mask);
	sm->agent_lid = umad_register(sm->fd, SOF_MCLASS_SMP_LID, 1, 0, mask);
	if (sm->agent_dr < 0 || sm->agent_lid < 0)
		return sm->agent_dr < 0 ? sm->agent_dr : sm->agent_lid;
	/* the issm file marks the port IsSM (kernel ib_umad; libumad2sim
	 * tells the simulator); softofed's daemon does it when a QP0 agent
	 * registers, and has no such file */
	if (!umad_get_issm_path(ca, port, path, sizeof(path)))
		sm->issm_fd = open(path, O_RDWR);
	sm_log(sm, 2, "agents registered, issm open");
	if (!umad_get_port(ca, port, &up)) {
		snprintf(sm->sn.ca_name, sizeof(sm->sn.ca_name), "%s", up.ca_name);
		sm->sn.ca_port = up.portnum;
		umad_release_port(&up);
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"ca", required_argument, NULL, 'C'},	{"port", required_argument, NULL, 'P'},
	    {"lmc", required_argument, NULL, 'l'},	{"priority", required_argument, NULL, 'p'},
	    {"routing", required_argument, NULL, 'r'},	{"guid2lid", required_argument, NULL, 'g'},
	    {"window", required_argument, NULL, 'w'},	{"timeout", required_argument, NULL, 't'},
	    {"retries", required_argument, NULL, 'R'},	{"sweep", required_argument, NULL, 's'},
	    {"once", no_argument, NULL, 'o'},		{"verbose", no_argument, NULL, 'v'},
	    {"sm-key", required_argument, NULL, 'k'},	{"help", no_argument, NULL, 'h'},
	    {"partitions", required_argument, NULL, 'T'}, {"Pconfig", required_argument, NULL, 'T'},
	    {"m_key", required_argument, NULL, 'y'},	{"m-key", required_argument, NULL, 'y'},
	    {"m_key_protection_level", required_argument, NULL, 'Y'},
	    {"m_key_lease_period", required_argument, NULL, 'L'},
	    {"m_key_per_port", no_argument, NULL, 'M'},
	    {"guid2mkey", required_argument, NULL, 'G'},
	    {"packet_life_time", required_argument, NULL, 'K'},
	    {"m_key_release", no_argument, NULL, 'X'},
	    {0},
	};
	static struct sm sm;
	const char *ca = NULL;
	int port = 0, c, err, pkt_life = -1, wait_ms;
	char *end;
	/* room beyond one MAD: libumad2sim's read() copies past the length
	 * umad_recv asks for */
	size_t bufsz = umad_size() + 4096;
	void *buf;
	unsigned i;

	t0 = sm_now_us();
	if (sm_subnet_init(&sm.sn))
		return 1;
	sm.issm_fd = -1;
	sm.window = 32;
	sm.timeout_ms = 200;
	sm.retries = 3;
	sm.sweep_s = 10;
	sm.sn.sm_priority = 15;
	/* OpenSM's default SM_Key: SMs ignore others whose key differs */
	sm.sn.sm_key = 1;
	snprintf(sm.sn.routing, sizeof(sm.sn.routing), "minhop");
	while ((c = getopt_long(argc, argv, "C:P:p:r:g:y:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'C': ca = optarg; break;
		case 'P': /* the umad port; OpenSM's -P names the partitions file */
			if (optarg[0] && strspn(optarg, "0123456789") == strlen(optarg))
				port = atoi(optarg);
			else
				sm.partitions = optarg;
			break;
		case 'T': sm.partitions = optarg; break;
		case 'l': sm.sn.lmc = (uint8_t)(atoi(optarg) & 7); break;
		case 'p': sm.sn.sm_priority = (uint8_t)(atoi(optarg) & 15); break;
		case 'r':
			if (!strcmp(optarg, "minhop"))
				sm.routing = SM_ROUTE_MINHOP;
			else if (!strcmp(optarg, "updown"))
				sm.routing = SM_ROUTE_UPDOWN;
			else if (!strcmp(optarg, "ftree"))
				sm.routing = SM_ROUTE_FTREE;
			else {
				usage();
				return 2;
			}
			snprintf(sm.sn.routing, sizeof(sm.sn.routing), "%s", optarg);
			break;
		case 'g': sm.guid2lid = optarg; break;
		case 'w': sm.window = (unsigned)atoi(optarg); break;
		case 't': sm.timeout_ms = (unsigned)atoi(optarg); break;
		case 'R': sm.retries = (unsigned)atoi(optarg); break;
		case 's': sm.sweep_s = (unsigned)atoi(optarg); break;
		case 'o': sm.once = true; break;
		case 'k': sm.sn.sm_key = strtoull(optarg, NULL, 0); break;
		case 'y': sm.sn.m_key = strtoull(optarg, NULL, 0); break;
		case 'Y': sm.sn.m_key_protect = (uint8_t)(atoi(optarg) & 3); break;
		case 'L': sm.sn.m_key_lease = (uint16_t)atoi(optarg); break;
		case 'M': sm.m_key_per_port = true; break;
		case 'G': sm.guid2mkey = optarg; break;
		case 'X': sm.m_key_release = true; break;
		case 'K': /* PathRecord:PacketLifeTime, 6 bits (IBA 15.2.5.16) */
			pkt_life = (int)strtol(optarg, &end, 0);
			if (!optarg[0] || *end || pkt_life < 0 || pkt_life > 0x3f) {
				fprintf(stderr, "softofed-sm: --packet_life_time %s: 0 to 63\n",
					optarg);
				return 2;
			}
			break;
		case 'v': sm.verbose++; break;
		default: usage(); return c == 'h' ? 0 : 2;
		}
	}
	if (sm.window < 1 || sm.window > SM_WINDOW_MAX)
		sm.window = 32;
	if (!sm.timeout_ms)
		sm.timeout_ms = 200;
	if (sm_mkey_load(&sm)) {
		fprintf(stderr, "softofed-sm: cannot read %s\n", sm.guid2mkey);
		return 1;
	}
	if (sm.partitions && sm_part_load(&sm))
		return 2;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	sm_sa_service_init(); /* the SA (sm/sa_umad.c) */
	sm_mcast_init(&sm);   /* its groups' trees (sm/mcast.c) */
	err = open_port(&sm, ca, port);
	if (err) {
		fprintf(stderr, "softofed-sm: cannot open the umad port %s/%d: %s\n", ca ? ca : "(first)",
			port, strerror(-err));
		return 1;
	}
	for (i = 0; i < nservices; i++)
		if (services[i].ops->start && services[i].ops->start(services[i].ctx, &sm.sn, sm.fd))
			sm_log(&sm, 0, "service %s did not start", services[i].ops->name);
	if (pkt_life >= 0 && sm_sa_get())
		sm_sa_set_pkt_life(sm_sa_get(), (uint8_t)pkt_life);
	buf = calloc(1, bufsz);
	if (!buf)
		return 1;
	sm_lid_load(&sm);
	sm.sn.sm_state = SM_STATE_DISCOVERING;
	sm.rereg_all = true; /* our first sweep as master: ClientReregister */
	sm.t_start = sm_now_us();
	sm_discover_start(&sm);
	while (!stop) {
		sm_io_pump(&sm);
		sm_sminfo_tick(&sm);
		if (sm.phase != SM_PHASE_IDLE && sm_io_idle(&sm))
			sm_phase_done(&sm);
		if (sm.phase == SM_PHASE_IDLE && sm.sn.sm_state == SM_STATE_STANDBY) {
			sm_sminfo_poll(&sm);
		} else if (sm.phase == SM_PHASE_IDLE) {
			if (sm.resweep) {
				sm_qos_cancel(&sm);
				sm_discover_start(&sm);
			} else if (sm.sweep_s && sm_now_us() >= sm.next_light && sm.sweep_errors)
				sm_discover_start(&sm);
			else if (sm.sweep_s && sm_now_us() >= sm.next_light)
				sm_light_start(&sm);
			else if (sm.sn.up && sm.sn.sm_state == SM_STATE_MASTER) {
				sm_mcast_run(&sm); /* SMPs in flight as the loop goes on */
				/* while the SA is busy, a port at a time: a batch
				 * held back would hold a light sweep's end */
				if (sm_io_idle(&sm))
					sm_qos_run(&sm, sm_io_bg_held(&sm) ? 1 : SM_QOS_BATCH);
			}
			if (sm.phase != SM_PHASE_IDLE)
				continue;
		}
		wait_ms = sm.phase == SM_PHASE_IDLE ? 100 : 5;
		if (sm_io_bg_held(&sm) && !sm_io_idle(&sm))
			wait_ms = 1; /* held-back SMPs leave one per SM_BG_GAP_US */
		receive(&sm, &buf, wait_ms);
		for (i = 0; i < nservices; i++)
			if (services[i].ops->tick)
				services[i].ops->tick(services[i].ctx, sm_now_us());
	}
	release(&sm, &buf);
	for (i = 0; i < nservices; i++)
		if (services[i].ops->stop)
			services[i].ops->stop(services[i].ctx);
	sm_io_drop_all(&sm);
	sm_lid_save(&sm);
	sm_log(&sm, 1, "%" PRIu64 " SMPs sent, %" PRIu64 " timed out, %" PRIu64 " refused, %" PRIu64
		       " unmatched", sm.smps_sent, sm.smps_timeout, sm.smps_error, sm.smps_dropped);
	umad_close_port(sm.fd);
	if (sm.issm_fd >= 0)
		close(sm.issm_fd);
	free(buf);
	free(sm.g2l);
	free(sm.mkeys.e);
	sm_subnet_free(&sm.sn);
	return 0;
}
