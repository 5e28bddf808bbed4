/*
 * softofed: control and inspect the device daemon of this network
 * namespace, and run unmodified programs on softofed's libraries.
 *
 *   softofed up [-i IFACE[,IFACE...]]
 *                             start the daemon (if needed) serving these
 *                             interfaces (default: every one with an
 *                             address), wait until it answers
 *   softofed down             ask it to exit (SHUTDOWN), wait until it is gone
 *   softofed status           pid, uptime, device, GIDs, resource counts,
 *                             interfaces served
 *   softofed run -- CMD ARGS  run CMD with our libraries first in the
 *                             library path, the daemon up
 *   softofed fabric ...       the InfiniBand fabric (tools/fabric.c)
 *   softofed ipoib ...        IPoIB interfaces (tools/ipoib.c)
 *
 * The daemon binary is $SOFTOFED_DAEMON, else softofedd next to this
 * program; the libraries are in ../lib relative to this program.
 */
#include "softofed.h"

#include "sof_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: softofed COMMAND\n"
	    "  up [-i IFACE[,IFACE...]]... [--ib-fabric ADDR:PORT --ib-node NAME [--ib-port P]]\n"
	    "                     start the device daemon of this network namespace, serving\n"
	    "                     these interfaces (default: every interface with an address);\n"
	    "                     with --ib-fabric also an InfiniBand port (device sofib0) on\n"
	    "                     the link to ADDR:PORT as the topology's HCA NAME\n"
	    "  down               stop it\n"
	    "  status             show the daemon, the device and its resources\n"
	    "  run [--] CMD ARGS  run CMD on softofed's libraries (starts the daemon)\n"
	    "  fabric up FILE [--listen ADDR:PORT] [--real NAME,...] | status [-v] | down |\n"
	    "         link NAME PORT up|down | port NAME PORT\n"
	    "                     the InfiniBand fabric of this network namespace\n"
	    "  capture -w FILE [-c COUNT] [-t SECS] [--erf] [NAME PORT] | check FILE [-v] |\n"
	    "          erf IN OUT\n"
	    "                     a pcap of the fabric's links (LINKTYPE_INFINIBAND; --erf:\n"
	    "                     ERF type 21, which Wireshark 4.0 reads), or of one link\n"
	    "  sm [ARGS]          softofed-sm, our subnet manager, on the daemon's InfiniBand\n"
	    "                     port (sofib0 unless -C names another; softofed-sm --help)\n"
	    "  ipoib up [PORT] [--pkey P] | down [IFNAME] | status [IFNAME]\n"
	    "                     IPoIB interface ib<PORT-1> over sofib0 (datagram mode)\n"
	    "  --help             this help\n"
	    "Environment: SOFTOFED_DAEMON overrides the daemon binary (default: %s/softofedd).\n",
	    soft_exe_dir[0] ? soft_exe_dir : "<dir of softofed>");
}

/* ---- commands --------------------------------------------------------------------- */

/* Interfaces named with -i. */
struct iface_sel {
	uint32_t n;
	char names[SOF_MAX_NETDEVS][IF_NAMESIZE];
};

static bool sel_has(const struct iface_sel *sel, const char *name)
{
	for (uint32_t i = 0; i < sel->n; i++)
		if (!strcmp(sel->names[i], name))
			return true;
	return false;
}

/* Add the comma-separated interfaces of arg. 0, or 1 after saying what is
 * wrong. */
static int sel_add(struct iface_sel *sel, const char *arg)
{
	const char *p = arg;

	for (;;) {
		size_t len = strcspn(p, ",");
		char name[IF_NAMESIZE];

		if (len == 0 || len >= IF_NAMESIZE) {
			fprintf(stderr, "softofed: bad interface name '%.*s'\n", (int)len, p);
			return 1;
		}
		memcpy(name, p, len);
		name[len] = '\0';
		if (!if_nametoindex(name)) {
			fprintf(stderr, "softofed: no such interface: %s\n", name);
			return 1;
		}
		if (!sel_has(sel, name)) {
			if (sel->n == SOF_MAX_NETDEVS) {
				fprintf(stderr, "softofed: at most %d interfaces\n",
					SOF_MAX_NETDEVS);
				return 1;
			}
			memcpy(sel->names[sel->n++], name, len + 1);
		}
		if (!p[len])
			return 0;
		p += len + 1;
	}
}

/* Whether the daemon serves exactly the interfaces of sel. */
static bool serves(const struct sof_netdevs_rep *nd, const struct iface_sel *sel)
{
	if (nd->all || nd->n != sel->n)
		return false;
	for (uint32_t i = 0; i < nd->n; i++)
		if (!sel_has(sel, nd->dev[i].name))
			return false;
	return true;
}

static void print_ifaces(FILE *f, const struct sof_netdevs_rep *nd)
{
	for (uint32_t i = 0; i < nd->n; i++)
		fprintf(f, " %s", nd->dev[i].name);
}

static int cmd_up(int argc, char **argv)
{
	char list[SOF_MAX_NETDEVS * IF_NAMESIZE] = "";
	struct sof_netdevs_rep nd;
	struct sof_status_rep st;
	struct iface_sel sel = {0};
	char *ib[8] = {NULL};
	int nib = 0;
	bool started;
	int err;

	for (int i = 0; i < argc; i++) {
		const char *arg = argv[i];

		if ((!strcmp(arg, "--ib-fabric") || !strcmp(arg, "--ib-node") ||
		     !strcmp(arg, "--ib-port")) &&
		    i + 1 < argc && nib + 2 < (int)SOF_ARRAY_SIZE(ib)) {
			ib[nib++] = argv[i];
			ib[nib++] = argv[++i];
			continue;
		}
		if (!strcmp(arg, "-i") && i + 1 < argc) {
			arg = argv[++i];
		} else if (!strncmp(arg, "-i", 2) && arg[2]) {
			arg += 2;
		} else {
			fprintf(stderr, "softofed: up: unknown argument: %s\n", arg);
			usage(stderr);
			return 2;
		}
		if (sel_add(&sel, arg))
			return 1;
	}
	for (uint32_t i = 0; i < sel.n; i++) {
		if (i)
			strcat(list, ",");
		strcat(list, sel.names[i]);
	}
	err = soft_ensure_daemon(&st, sel.n ? list : NULL, ib, &started);
	if (err) {
		fprintf(stderr, "softofed: the daemon did not come up: %s\n", strerror(-err));
		return 1;
	}
	/* A running daemon keeps its interfaces: say so rather than pretend. */
	if (!started && sel.n && !soft_get_netdevs(&nd) && !serves(&nd, &sel)) {
		fprintf(stderr,
			"softofed: a daemon (pid %u) already runs in this network namespace, "
			"serving",
			st.pid);
		if (nd.all)
			fprintf(stderr, " every interface with an address");
		else
			print_ifaces(stderr, &nd);
		fprintf(stderr, "; to serve %s, `softofed down` first\n", list);
		return 1;
	}
	printf("softofed daemon running, pid %u\n", st.pid);
	return 0;
}

static bool pid_gone(uint32_t pid)
{
	char path[64], buf[256];
	FILE *f;
	char *p;
	bool gone = true;

	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return true;
	if (fgets(buf, sizeof(buf), f)) {
		p = strrchr(buf, ')');
		gone = p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
	}
	fclose(f);
	return gone;
}

static int cmd_down(void)
{
	struct sof_status_rep st;
	uint64_t end;
	int fd, err;

	fd = soft_connect();
	if (fd < 0) {
		printf("softofed: no daemon running in this network namespace\n");
		return 0;
	}
	err = soft_rpc(fd, SOF_OP_STATUS, &st, sizeof(st));
	if (!err)
		err = soft_rpc(fd, SOF_OP_SHUTDOWN, NULL, 0);
	close(fd);
	if (err) {
		fprintf(stderr, "softofed: shutdown refused: %s\n", strerror(-err));
		return 1;
	}
	end = soft_now_ms() + SOFT_WAIT_MS;
	for (;;) {
		fd = soft_connect();
		if (fd >= 0)
			close(fd);
		if (fd < 0 && pid_gone(st.pid))
			break;
		if (soft_now_ms() >= end) {
			fprintf(stderr, "softofed: daemon pid %u did not exit\n", st.pid);
			return 1;
		}
		soft_sleep_ms(10);
	}
	printf("softofed daemon pid %u stopped\n", st.pid);
	return 0;
}

static const char *port_state_name(uint32_t s)
{
	static const char *const names[] = {"NOP",   "DOWN",   "INIT",
					    "ARMED", "ACTIVE", "ACTIVE_DEFER"};

	return s < SOF_ARRAY_SIZE(names) ? names[s] : "UNKNOWN";
}

static unsigned mtu_bytes(uint32_t m) { return m >= 1 && m <= 5 ? 128u << m : 0; }

/* The network transport's port counters, one line each for counters and
 * drop reasons, as name/value pairs in the order of sof_proto.h. */
static void print_counters(const struct sof_status_rep *st)
{
#define SOF_NAME(n) #n,
	static const char *const cnames[SOF_CNT_NR] = {SOF_COUNTERS(SOF_NAME)};
	static const char *const dnames[SOF_DROP_NR] = {SOF_DROPS(SOF_NAME)};
#undef SOF_NAME

	printf("counters:");
	for (int i = 0; i < SOF_CNT_NR; i++)
		printf(" %s %llu", cnames[i], (unsigned long long)st->counters[i]);
	printf("\ndrops:");
	for (int i = 0; i < SOF_DROP_NR; i++)
		printf(" %s %llu", dnames[i], (unsigned long long)st->drops[i]);
	printf("\n");
}

/* The InfiniBand port (device sofib0), when the daemon has one: a line
 * of its state and one of its counters, "ib_counters: NAME VALUE ...". */
static void print_ib(void)
{
#define SOF_NAME(n) #n,
	static const char *const names[SOF_IBCNT_NR] = {SOF_IB_COUNTERS(SOF_NAME)};
#undef SOF_NAME
	static const char *const phys[] = {"?",	       "Sleep",	   "Polling", "Disabled",
					   "Training", "LinkUp", "LinkErrorRecovery"};
	struct sof_ib_status_rep r;
	const struct sof_ib_port *p = &r.port;
	int fd = soft_connect(), err;

	if (fd < 0)
		return;
	err = soft_rpc(fd, SOF_OP_IB_STATUS, &r, sizeof(r));
	close(fd);
	if (err || p->present != 1)
		return;
	r.port.node_name[sizeof(r.port.node_name) - 1] = '\0';
	r.port.peer_name[sizeof(r.port.peer_name) - 1] = '\0';
	printf("device %s  node_guid %016llx  port %u %s  phys %s  lid %u lmc %u sm_lid %u  "
	       "port_guid %016llx  mtu %u  link_layer InfiniBand  node %s  peer %s\n",
	       SOF_IB_DEV_NAME, (unsigned long long)p->node_guid, p->port_num,
	       port_state_name(p->state), p->phys_state < SOF_ARRAY_SIZE(phys) ? phys[p->phys_state] : "?",
	       p->lid, p->lmc, p->sm_lid, (unsigned long long)p->port_guid,
	       mtu_bytes(p->active_mtu), p->node_name, p->peer_name[0] ? p->peer_name : "-");
	printf("ib_counters:");
	for (int i = 0; i < SOF_IBCNT_NR; i++)
		printf(" %s %llu", names[i], (unsigned long long)r.counters[i]);
	printf("\n");
}

static int cmd_status(void)
{
	struct sof_netdevs_rep nd;
	struct sof_status_rep st;
	const struct sof_devinfo *d = &st.dev;
	const uint8_t *g;
	int err = soft_get_status(&st);

	if (err == -ECONNREFUSED || err == -ENOENT) {
		fprintf(stderr, "softofed: no daemon running in this network namespace\n");
		return 1;
	}
	if (err) {
		fprintf(stderr, "softofed: status failed: %s\n", strerror(-err));
		return 1;
	}
	g = (const uint8_t *)&d->node_guid;
	printf("softofed daemon pid %u, up %llu s\n", st.pid,
	       (unsigned long long)(st.uptime_ms / 1000));
	printf("device %.*s  node_guid %02x%02x:%02x%02x:%02x%02x:%02x%02x  port 1 %s  "
	       "mtu %u  link_layer Ethernet\n",
	       (int)sizeof(d->name), d->name, g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7],
	       port_state_name(d->port_state), mtu_bytes(d->active_mtu));
	for (uint32_t i = 0; i < d->num_gids && i < SOF_MAX_GIDS; i++) {
		static const uint8_t empty[16];
		char s[INET6_ADDRSTRLEN];

		if (!memcmp(d->gids[i].gid, empty, sizeof(empty)))
			continue; /* a removed address's entry, kept free */
		if (!inet_ntop(AF_INET6, d->gids[i].gid, s, sizeof(s)))
			snprintf(s, sizeof(s), "?");
		printf("GID[%u] %s (%s)\n", i, s, d->gids[i].type == 1 ? "RoCEv2" : "RoCEv1");
	}
	printf("resources: contexts %u pds %u mrs %u cqs %u srqs %u qps %u mcast_groups %u "
	       "cm_channels %u cm_ids %u cm_listeners %u cm_timewait %u mads %u umad_ports %u "
	       "umad_agents %u\n",
	       st.contexts, st.pds, st.mrs, st.cqs, st.srqs, st.qps, st.mcast_groups, st.cm_channels,
	       st.cm_ids, st.cm_listeners, st.cm_timewait, st.mads, st.umad_ports, st.umad_agents);
	print_counters(&st);
	print_ib();
	err = soft_get_netdevs(&nd);
	if (err) {
		fprintf(stderr, "softofed: status: interfaces: %s\n", strerror(-err));
		return 1;
	}
	printf("interfaces:");
	print_ifaces(stdout, &nd);
	printf("\n");
	soft_ipoib_summary();
	return 0;
}

static int cmd_run(int argc, char **argv)
{
	struct sof_status_rep st;
	bool started;
	char libdir[PATH_MAX + 8], real[PATH_MAX];
	const char *old;
	char *val;
	int err;

	if (argc > 0 && !strcmp(argv[0], "--")) {
		argc--;
		argv++;
	}
	if (argc < 1) {
		fprintf(stderr, "softofed: run: no command given\n");
		usage(stderr);
		return 2;
	}
	snprintf(libdir, sizeof(libdir), "%s/../lib", soft_exe_dir);
	if (realpath(libdir, real))
		snprintf(libdir, sizeof(libdir), "%s", real);
	old = getenv("LD_LIBRARY_PATH");
	if (old && *old) {
		size_t n = strlen(libdir) + strlen(old) + 2;

		val = malloc(n);
		if (!val)
			return 1;
		snprintf(val, n, "%s:%s", libdir, old);
	} else {
		val = strdup(libdir);
		if (!val)
			return 1;
	}
	if (setenv("LD_LIBRARY_PATH", val, 1) || setenv("SOFTOFED_DAEMON", soft_daemon_path(), 0)) {
		perror("softofed: setenv");
		return 1;
	}
	free(val);
	err = soft_ensure_daemon(&st, NULL, NULL, &started);
	if (err) {
		fprintf(stderr, "softofed: the daemon did not come up: %s\n", strerror(-err));
		return 1;
	}
	if (soft_present(&st))
		return 1;
	fflush(NULL);
	execvp(argv[0], argv);
	err = errno;
	fprintf(stderr, "softofed: %s: %s\n", argv[0], strerror(err));
	return err == ENOENT ? 127 : 126;
}

/* softofed-sm (sm/) beside this program, run on our libibumad: `run --
 * softofed-sm -C sofib0 ARGS` (the SM needs the daemon's SMI port) */
static int cmd_sm(int argc, char **argv)
{
	char path[PATH_MAX + 16];
	char **args = calloc((size_t)argc + 4, sizeof(*args));
	bool has_ca = false;
	int i, n = 0;

	if (!args)
		return 1;
	snprintf(path, sizeof(path), "%s/softofed-sm", soft_exe_dir);
	for (i = 0; i < argc; i++)
		has_ca |= !strcmp(argv[i], "-C") || !strncmp(argv[i], "--ca", 4);
	args[n++] = path;
	if (!has_ca) {
		args[n++] = (char *)"-C";
		args[n++] = (char *)"sofib0";
	}
	for (i = 0; i < argc; i++)
		args[n++] = argv[i];
	return cmd_run(n, args);
}

int main(int argc, char **argv)
{
	const char *cmd;

	soft_find_exe_dir();
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	cmd = argv[1];
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(cmd, "up"))
		return cmd_up(argc - 2, argv + 2);
	if (!strcmp(cmd, "down") && argc == 2)
		return cmd_down();
	if (!strcmp(cmd, "status") && argc == 2)
		return cmd_status();
	if (!strcmp(cmd, "run"))
		return cmd_run(argc - 2, argv + 2);
	if (!strcmp(cmd, "fabric"))
		return soft_cmd_fabric(argc - 2, argv + 2);
	if (!strcmp(cmd, "sm"))
		return cmd_sm(argc - 2, argv + 2);
	if (!strcmp(cmd, "ipoib"))
		return soft_cmd_ipoib(argc - 2, argv + 2);
	if (!strcmp(cmd, "capture"))
		return soft_cmd_capture(argc - 2, argv + 2);
	fprintf(stderr, "softofed: unknown command or arguments: %s\n", cmd);
	usage(stderr);
	return 2;
}
