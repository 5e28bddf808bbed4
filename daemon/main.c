/*
 * softofedd: the device daemon, i.e. the software HCA of one network
 * namespace.
 *
 *   softofedd       daemonize: the parent returns once the child listens
 *                   (pipe handshake), or at once when a daemon already
 *                   owns the socket of this namespace
 *   softofedd -f    stay in the foreground, log to stderr
 *   softofedd -i IFACE[,IFACE...]   serve these interfaces (repeatable;
 *                   default: every interface with an address)
 *
 * Start-up order: device identity and object table first, then bind the
 * abstract socket (which is also the "one daemon per namespace" lock), then
 * report readiness. The loop is a single-threaded epoll over the listening
 * socket, a signalfd (SIGTERM, SIGINT: clean exit) and the connections; it
 * sleeps when nobody talks to it.
 */
#include "sofd.h"

#include "mad.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct sofd sofd;

/* Handshake bytes from the daemonized child to the waiting parent. */
#define READY_OK 'R'
#define READY_RUNNING 'A' /* another daemon owns the socket */
#define READY_FAILED 'F'

void sofd_log(const char *fmt, ...)
{
	char buf[1024];
	struct timespec ts;
	struct tm tm;
	va_list ap;
	int n, m;

	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	n = snprintf(buf, sizeof(buf),
		     "%04d-%02d-%02d %02d:%02d:%02d.%03ld softofedd[%d]: ", tm.tm_year + 1900,
		     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		     ts.tv_nsec / 1000000, (int)getpid());
	if (n < 0 || (size_t)n >= sizeof(buf))
		return;
	va_start(ap, fmt);
	m = vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (m < 0)
		return;
	n += m;
	if ((size_t)n > sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	if (write(STDERR_FILENO, buf, (size_t)n) < 0) {
		/* nothing more to do */
	}
}

static void usage(FILE *f)
{
	fprintf(f, "usage: softofedd [-f] [-i IFACE[,IFACE...]]... [--ib-fabric ADDR:PORT "
		   "--ib-node NAME [--ib-port PORT]]\n"
		   "  The softofed device daemon (software HCA) of this network namespace.\n"
		   "  -f   stay in the foreground and log to stderr\n"
		   "  -i   serve these interfaces (default: every one with an address)\n"
		   "  --ib-fabric ADDR:PORT  an InfiniBand port (device sofib0) on the link to\n"
		   "       ADDR:PORT (a fabric, or another host's --ib-port)\n"
		   "  --ib-node NAME  the HCA's name in the fabric's topology\n"
		   "  --ib-port PORT  the link's local UDP port (default: any)\n"
		   "  -h   this help\n"
		   "Without -f it daemonizes and logs to /tmp/softofed-<uid>-<netns>.log.\n");
}

/* Many objects keep descriptors (every MR run is one): allow all we may. */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return;
	if (rl.rlim_cur == rl.rlim_max)
		return;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl)) {
		rl.rlim_cur = 1048576;
		if (rl.rlim_cur < rl.rlim_max)
			(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static void close_inherited_fds(void)
{
	struct rlimit rl;
	long max = 1024;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY)
		max = (long)rl.rlim_cur;
#ifdef SYS_close_range
	if (!syscall(SYS_close_range, 3u, ~0u, 0u))
		return;
#endif
	if (max > 65536)
		max = 65536;
	for (int fd = 3; fd < max; fd++)
		close(fd);
}

static void open_log(void)
{
	char path[128];
	struct stat st;
	int fd, null;

	if (stat("/proc/self/ns/net", &st))
		st.st_ino = 0;
	snprintf(path, sizeof(path), "/tmp/softofed-%u-%lu.log", (unsigned)getuid(),
		 (unsigned long)st.st_ino);
	null = open("/dev/null", O_RDWR | O_NOCTTY);
	if (null >= 0) {
		dup2(null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
	}
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0600);
	if (fd >= 0 && (fstat(fd, &st) || st.st_uid != getuid() || !S_ISREG(st.st_mode))) {
		close(fd);
		fd = -1;
	}
	if (fd >= 0) {
		dup2(fd, STDERR_FILENO);
		close(fd);
	} else if (null >= 0) {
		dup2(null, STDERR_FILENO);
	}
	if (null > STDERR_FILENO)
		close(null);
}

/* Fork; the parent waits for the child's readiness byte and exits with
 * the outcome. Returns in the child with the write end of the pipe. */
static int daemonize(void)
{
	int pfd[2];
	pid_t pid;
	char b;

	if (pipe2(pfd, O_CLOEXEC)) {
		perror("softofedd: pipe");
		exit(1);
	}
	pid = fork();
	if (pid < 0) {
		perror("softofedd: fork");
		exit(1);
	}
	if (pid > 0) {
		ssize_t n;

		close(pfd[1]);
		do
			n = read(pfd[0], &b, 1);
		while (n < 0 && errno == EINTR);
		if (n == 1 && (b == READY_OK || b == READY_RUNNING))
			exit(0);
		fprintf(stderr, "softofedd: the daemon failed to start (see its log)\n");
		exit(1);
	}
	close(pfd[0]);
	setsid();
	if (chdir("/"))
		(void)0;
	open_log();
	return pfd[1];
}

static void tell_parent(int *fd, char b)
{
	if (*fd < 0)
		return;
	if (write(*fd, &b, 1) < 0) {
		/* nothing more to do */
	}
	close(*fd);
	*fd = -1;
}

static int setup_signals(void)
{
	struct sigaction sa = {.sa_handler = SIG_IGN};
	sigset_t set;

	sigaction(SIGPIPE, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	if (sigprocmask(SIG_BLOCK, &set, NULL))
		return -errno;
	sofd.sig.kind = SOFD_POLL_SIGNAL;
	sofd.sig.fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	return sofd.sig.fd < 0 ? -errno : 0;
}

static int setup_listen(void)
{
	struct sockaddr_un sun;
	socklen_t len = sof_sock_addr(&sun);
	int fd;

	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sun, len) || listen(fd, SOMAXCONN)) {
		int err = -errno;

		close(fd);
		return err;
	}
	sofd.listen.kind = SOFD_POLL_LISTEN;
	sofd.listen.fd = fd;
	return 0;
}

static int epoll_add(struct sofd_pollable *p)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = p};

	return epoll_ctl(sofd.epfd, EPOLL_CTL_ADD, p->fd, &ev) ? -errno : 0;
}

static void run_loop(void)
{
	struct epoll_event evs[64];

	while (!sofd.stop) {
		int n;

		/* MADs between agents of this host (mad/): never sleep on them */
		sofd_mad_loopback_run();
		/* MAD sends waiting for responses, RMPP windows (mad/) */
		sofd_mad_timers_run();
		sof_tp_flush();
		n = epoll_wait(sofd.epfd, evs, (int)SOF_ARRAY_SIZE(evs),
			       sofd_mad_loopback_pending() ? 0 : sofd_mad_timeout_ms());

		if (n < 0) {
			if (errno == EINTR)
				continue;
			sofd_log("epoll_wait: %s", strerror(errno));
			break;
		}
		for (int i = 0; i < n && !sofd.stop; i++) {
			struct sofd_pollable *p = evs[i].data.ptr;

			switch (p->kind) {
			case SOFD_POLL_LISTEN:
				sofd_accept();
				break;
			case SOFD_POLL_SIGNAL: {
				struct signalfd_siginfo si;

				if (read(p->fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
					sofd_log("signal %u: exiting", si.ssi_signo);
					sofd.stop = true;
				}
				break;
			}
			case SOFD_POLL_CONN:
				sofd_conn_event(sof_container_of(p, struct sofd_conn, p),
						evs[i].events);
				break;
			case SOFD_POLL_NETLINK:
				sofd_device_netlink_event();
				break;
			case SOFD_POLL_DOORBELL:
			case SOFD_POLL_NET:
			case SOFD_POLL_NET6:
			case SOFD_POLL_TIMER:
				sof_tp_event(p);
				break;
			case SOFD_POLL_CM_TIMER:
				sofd_cm_timer_event();
				break;
			case SOFD_POLL_RAW:
				sofd_raw_event();
				break;
			case SOFD_POLL_IB:
			case SOFD_POLL_IB_TIMER:
				sofd_ib_event(p);
				break;
			}
		}
		sofd_reap();
	}
}

static void noop_handler(int sig) { (void)sig; }

int main(int argc, char **argv)
{
	struct sigaction sa = {.sa_handler = noop_handler};
	int ready_fd = -1, err, opt;

	static const struct option lopts[] = {
	    {"ib-fabric", required_argument, NULL, 1},
	    {"ib-node", required_argument, NULL, 1},
	    {"ib-port", required_argument, NULL, 1},
	    {"help", no_argument, NULL, 'h'},
	    {0, 0, 0, 0},
	};
	int li;

	while ((opt = getopt_long(argc, argv, "fhi:", lopts, &li)) != -1) {
		switch (opt) {
		case 1:
			if (sofd_ib_option(lopts[li].name, optarg))
				return 2;
			break;
		case 'f':
			sofd.foreground = true;
			break;
		case 'i':
			if (sofd_device_select(optarg))
				return 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	sofd.uid = getuid();
	sofd.start_ns = sof_now_ns();
	sofd.listen.fd = sofd.sig.fd = sofd.epfd = sofd.spare_fd = -1;
	sof_list_init(&sofd.conns);
	if (!sofd.foreground) {
		close_inherited_fds();
		ready_fd = daemonize();
	}
	raise_nofile();
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL); /* no SA_RESTART: see evfd_kick() */
	err = setup_signals();
	if (err)
		goto fail;
	err = sofd_device_init();
	if (err)
		goto fail;
	err = sofd_registry_init();
	if (err)
		goto fail;
	err = setup_listen();
	if (err == -EADDRINUSE) {
		if (sofd.foreground)
			fprintf(stderr,
				"softofedd: a daemon already runs in this network namespace\n");
		tell_parent(&ready_fd, READY_RUNNING);
		return 0;
	}
	if (err)
		goto fail;
	sofd.spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	sofd.epfd = epoll_create1(EPOLL_CLOEXEC);
	if (sofd.epfd < 0) {
		err = -errno;
		goto fail;
	}
	err = epoll_add(&sofd.listen);
	if (!err)
		err = epoll_add(&sofd.sig);
	if (!err && sofd.netlink.fd >= 0)
		err = epoll_add(&sofd.netlink);
	if (err)
		goto fail;
	sofd.doorbell.kind = SOFD_POLL_DOORBELL;
	sofd.doorbell.fd = -1;
	err = sof_tp_init(sofd.epfd);
	if (!err)
		err = sofd_cm_init(sofd.epfd);
	if (!err)
		err = sofd_ib_init(sofd.epfd);
	if (err)
		goto fail;
	{
		const uint8_t *g = (const uint8_t *)&sofd.dev.node_guid;

		sofd_log("started: device %s node_guid %02x%02x:%02x%02x:%02x%02x:%02x%02x, "
			 "%u GIDs, socket @%s",
			 sofd.dev.name, g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7],
			 sofd.dev.num_gids, SOF_SOCK_NAME);
	}
	tell_parent(&ready_fd, READY_OK);
	run_loop();

	while (!sof_list_empty(&sofd.conns))
		sofd_conn_close(sof_container_of(sofd.conns.next, struct sofd_conn, link),
				"daemon exiting");
	sofd_reap();
	sofd_ib_fini();
	close(sofd.listen.fd);
	sofd_log("exited");
	return 0;

fail:
	sofd_log("start-up failed: %s", strerror(-err));
	tell_parent(&ready_fd, READY_FAILED);
	return 1;
}
