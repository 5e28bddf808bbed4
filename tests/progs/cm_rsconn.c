/*
 * cm_rsconn MODE ADDR PORT: a stream rsocket's connection as a TCP
 * socket's (issue 22), through our librdmacm's rsocket API.
 *   nb      a non-blocking rconnect: -1/EINPROGRESS at once, rsend EAGAIN
 *           while it goes on, rpoll POLLOUT, SO_ERROR 0, then 64 KiB each
 *           way through a listener thread's echo, checked byte by byte;
 *           then one to PORT + 1, where nothing listens: EINPROGRESS,
 *           rpoll POLLERR, SO_ERROR non-zero once and 0 after; the options
 *           set and read back as rdma-core takes them (SO_KEEPALIVE,
 *           TCP_KEEPIDLE, TCP_NODELAY, SO_LINGER, SO_RCVBUF, SO_SNDBUF)
 *   ka-srv  accept one connection, echo one message, print "ready", then
 *           wait in rrecv (the test takes its link down: the peer vanishes)
 *   ka-cli  connect with SO_KEEPALIVE and TCP_KEEPIDLE 1 s, one message
 *           echoed, print "connected", wait in rrecv: the keepalive finds
 *           the silent peer and rrecv fails; prints "detected ERRNO after
 *           N s" and exits 0, or exits 1 when rrecv returned otherwise or
 *           nothing came in 60 s
 *   vanish-cli  connect twice (x, y), one byte on y, close x, then
 *           _exit (as a killed process: y never closed; its daemon
 *           disconnects it)
 *   vanish-srv  accept x and y, read y's byte, then rpoll both until
 *           y reports its end; x, at its end of stream, is readable all
 *           along, so rpoll never sleeps: the peer's DREQ must be seen
 *           all the same, within 10 s; prints "ok y's end seen N ms
 *           after its byte, x readable"
 *   fds-srv accept one connection, echo single bytes until its end
 *   fds-cli connect, 5 bytes echoed (the QP, its flow and the engine's
 *           sockets made), then every blocking UDP socket(2) (AF_INET or
 *           AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC: one made to look a route
 *           up, then closed) of any thread of the process is trapped
 *           (seccomp, counted, fails EMFILE) while 100 more are echoed
 *           10 ms apart: the engine that moves this process's QP opens
 *           none (one it opened and closed by itself took the program's
 *           lowest free number for a moment: issue 22). Its kept sockets
 *           are non-blocking and not trapped: a flow socket the daemon
 *           took back is opened again. Prints "ok 100 bytes echoed, no
 *           route look-up socket opened meanwhile"
 * Exits 0 when all holds, 1 with the first thing that did not.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <rdma/rsocket.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#define LEN 65536

static struct sockaddr_in sa;
static int lfd = -1;

#define FAIL(...)                                                                                  \
	do {                                                                                       \
		fprintf(stderr, __VA_ARGS__);                                                      \
		fputc('\n', stderr);                                                               \
		exit(1);                                                                           \
	} while (0)

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void listen_on(struct sockaddr_in *a)
{
	lfd = rsocket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0 || rbind(lfd, (struct sockaddr *)a, sizeof(*a)) || rlisten(lfd, 4))
		FAIL("listen: %s", strerror(errno));
}

static void xfer(int fd, void *buf, size_t len, bool out)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = out ? rsend(fd, (char *)buf + done, len - done, 0)
				: rrecv(fd, (char *)buf + done, len - done, 0);

		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			struct pollfd p = { .fd = fd, .events = out ? POLLOUT : POLLIN };

			if (rpoll(&p, 1, 5000) <= 0)
				FAIL("%s: rpoll: nothing in 5 s", out ? "send" : "recv");
			continue;
		}
		if (n <= 0)
			FAIL("%s: %zd %s", out ? "rsend" : "rrecv", n, strerror(errno));
		done += (size_t)n;
	}
}

/* an rsocket connected to sa, retried for 10 s while the server does
 * not listen yet; -1 (errno set) when it never did */
static int connect_retry(void)
{
	double end = now() + 10;
	int fd = -1;

	while (fd < 0 && now() < end) {
		fd = rsocket(AF_INET, SOCK_STREAM, 0);
		if (fd >= 0 && rconnect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
			rclose(fd);
			fd = -1;
			usleep(50000);
		}
	}
	return fd;
}

/* accept one, echo LEN bytes */
static void *echo(void *arg)
{
	static uint8_t buf[LEN];
	int c = raccept(lfd, NULL, NULL);

	(void)arg;
	if (c < 0)
		FAIL("raccept: %s", strerror(errno));
	xfer(c, buf, LEN, false);
	xfer(c, buf, LEN, true);
	rclose(c);
	return NULL;
}

static int getint(int fd, int level, int name)
{
	int v = -1;
	socklen_t l = sizeof(v);

	if (rgetsockopt(fd, level, name, &v, &l))
		FAIL("rgetsockopt %d/%d: %s", level, name, strerror(errno));
	return v;
}

static void setint(int fd, int level, int name, int v)
{
	if (rsetsockopt(fd, level, name, &v, sizeof(v)))
		FAIL("rsetsockopt %d/%d = %d: %s", level, name, v, strerror(errno));
}

static void options(int fd)
{
	struct linger lg = { 1, 5 }, got;
	socklen_t l = sizeof(got);

	setint(fd, SOL_SOCKET, SO_KEEPALIVE, 1);
	setint(fd, IPPROTO_TCP, TCP_KEEPIDLE, 30);
	setint(fd, IPPROTO_TCP, TCP_NODELAY, 1);
	setint(fd, SOL_SOCKET, SO_RCVBUF, 65536);
	setint(fd, SOL_SOCKET, SO_SNDBUF, 32768);
	if (rsetsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)) ||
	    rgetsockopt(fd, SOL_SOCKET, SO_LINGER, &got, &l) || !got.l_onoff || got.l_linger != 5)
		FAIL("SO_LINGER not kept");
	if (getint(fd, SOL_SOCKET, SO_KEEPALIVE) != 1 || getint(fd, IPPROTO_TCP, TCP_KEEPIDLE) != 30 ||
	    getint(fd, IPPROTO_TCP, TCP_NODELAY) != 1)
		FAIL("keepalive/keepidle/nodelay not kept");
	/* rdma-core: the buffer sizes doubled, as Linux reports them */
	if (getint(fd, SOL_SOCKET, SO_RCVBUF) != 131072 || getint(fd, SOL_SOCKET, SO_SNDBUF) != 65536)
		FAIL("buffer sizes %d %d", getint(fd, SOL_SOCKET, SO_RCVBUF),
		     getint(fd, SOL_SOCKET, SO_SNDBUF));
	setint(fd, SOL_SOCKET, SO_KEEPALIVE, 0);
	if (getint(fd, SOL_SOCKET, SO_KEEPALIVE) != 0)
		FAIL("SO_KEEPALIVE off not kept");
	{
		int bad = 0;

		if (!rsetsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &bad, sizeof(bad)) || errno != EINVAL)
			FAIL("TCP_KEEPIDLE 0: not EINVAL");
	}
}

static int nb_connect(struct sockaddr_in *to, bool want_ok)
{
	int fd = rsocket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), err;
	struct pollfd p;
	char c;

	if (fd < 0)
		FAIL("rsocket: %s", strerror(errno));
	if (!rconnect(fd, (struct sockaddr *)to, sizeof(*to)) || errno != EINPROGRESS)
		FAIL("non-blocking rconnect: not EINPROGRESS (%s)", strerror(errno));
	if (rconnect(fd, (struct sockaddr *)to, sizeof(*to)) != -1 ||
	    (errno != EALREADY && errno != EISCONN && errno != ECONNABORTED))
		FAIL("second rconnect: %s", strerror(errno));
	if (rsend(fd, "x", 1, 0) != -1 && want_ok)
		; /* connected already: allowed */
	else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != ENOTCONN && errno != EPIPE)
		FAIL("rsend while connecting: %s", strerror(errno));
	p.fd = fd;
	p.events = POLLOUT;
	p.revents = 0;
	if (rpoll(&p, 1, 10000) != 1)
		FAIL("rpoll: the connect did not end in 10 s");
	err = getint(fd, SOL_SOCKET, SO_ERROR);
	if (want_ok) {
		if (!(p.revents & POLLOUT) || (p.revents & POLLERR) || err)
			FAIL("connect: revents %x SO_ERROR %s", p.revents, strerror(err));
		return fd;
	}
	if (!(p.revents & POLLERR) || !err)
		FAIL("refused connect: revents %x SO_ERROR %d", p.revents, err);
	if (getint(fd, SOL_SOCKET, SO_ERROR))
		FAIL("SO_ERROR not cleared by its read");
	printf("refused: revents %x, SO_ERROR %s\n", p.revents, strerror(err));
	(void)c;
	rclose(fd);
	return -1;
}

static int nb(void)
{
	static uint8_t out[LEN], in[LEN];
	struct sockaddr_in none = sa;
	pthread_t t;
	int fd, o;

	listen_on(&sa);
	pthread_create(&t, NULL, echo, NULL);
	fd = nb_connect(&sa, true);
	for (int i = 0; i < LEN; i++)
		out[i] = (uint8_t)(i * 31 + (i >> 9));
	xfer(fd, out, LEN, true);
	xfer(fd, in, LEN, false);
	if (memcmp(in, out, LEN))
		FAIL("the echo differs");
	pthread_join(t, NULL);
	rclose(fd);
	none.sin_port = htons((uint16_t)(ntohs(sa.sin_port) + 1));
	nb_connect(&none, false);
	o = rsocket(AF_INET, SOCK_STREAM, 0);
	options(o);
	rclose(o);
	rclose(lfd);
	printf("ok non-blocking connect, %d bytes each way, refused, options\n", LEN);
	return 0;
}

static int ka_srv(void)
{
	char buf[64];
	int c;

	listen_on(&sa);
	c = raccept(lfd, NULL, NULL);
	if (c < 0)
		FAIL("raccept: %s", strerror(errno));
	xfer(c, buf, 5, false);
	xfer(c, buf, 5, true);
	printf("ready\n");
	fflush(stdout);
	rrecv(c, buf, sizeof(buf), 0);
	return 0;
}

static int ka_cli(void)
{
	int fd = rsocket(AF_INET, SOCK_STREAM, 0);
	char buf[64];
	double t0;
	ssize_t n;

	if (fd < 0)
		FAIL("rsocket: %s", strerror(errno));
	setint(fd, SOL_SOCKET, SO_KEEPALIVE, 1);
	setint(fd, IPPROTO_TCP, TCP_KEEPIDLE, 1);
	if (rconnect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		FAIL("rconnect: %s", strerror(errno));
	memcpy(buf, "hello", 5);
	xfer(fd, buf, 5, true);
	xfer(fd, buf, 5, false);
	if (memcmp(buf, "hello", 5))
		FAIL("echo differs");
	printf("connected\n");
	fflush(stdout);
	t0 = now();
	n = rrecv(fd, buf, sizeof(buf), 0);
	if (n >= 0)
		FAIL("rrecv returned %zd, not an error, after %.1f s", n, now() - t0);
	printf("detected %s after %.1f s\n", strerror(errno), now() - t0);
	rclose(fd);
	return 0;
}

/* vanish-cli: x and y connected (retried until the server listens), one
 * byte on y, x closed, then gone with y open */
static int vanish_cli(void)
{
	char c = 'y';
	int x = connect_retry(), y;

	y = rsocket(AF_INET, SOCK_STREAM, 0);
	if (x < 0 || y < 0 || rconnect(y, (struct sockaddr *)&sa, sizeof(sa)))
		FAIL("connect: %s", strerror(errno));
	xfer(y, &c, 1, true);
	rclose(x);
	_exit(0); /* as a killed process: y never closed, no exit handler */
}

/* vanish-srv: accept x and y, then rpoll both until y's end shows */
static int vanish_srv(void)
{
	struct pollfd p[2];
	double t0, end;
	char c;
	int x, y;

	listen_on(&sa);
	x = raccept(lfd, NULL, NULL);
	y = raccept(lfd, NULL, NULL);
	if (x < 0 || y < 0)
		FAIL("raccept: %s", strerror(errno));
	xfer(y, &c, 1, false);
	t0 = now();
	end = t0 + 10;
	for (;;) {
		p[0] = (struct pollfd){ .fd = x, .events = POLLIN };
		p[1] = (struct pollfd){ .fd = y, .events = POLLIN };
		if (rpoll(p, 2, 1000) < 0)
			FAIL("rpoll: %s", strerror(errno));
		if (p[1].revents)
			break;
		if (now() > end)
			FAIL("y's end not seen in 10 s (x revents %#x)", p[0].revents);
	}
	if (rrecv(y, &c, 1, 0) > 0)
		FAIL("y: data after its peer vanished");
	printf("ok y's end seen %.0f ms after its byte, x %s\n", (now() - t0) * 1000,
	       p[0].revents & POLLIN ? "readable" : "not readable");
	rclose(x);
	rclose(y);
	rclose(lfd);
	return 0;
}

/* fds-srv: echo single bytes until the peer's end */
static int fds_srv(void)
{
	char c;
	int fd;

	listen_on(&sa);
	fd = raccept(lfd, NULL, NULL);
	if (fd < 0)
		FAIL("raccept: %s", strerror(errno));
	while (rrecv(fd, &c, 1, 0) == 1)
		xfer(fd, &c, 1, true);
	rclose(fd);
	rclose(lfd);
	return 0;
}

#if defined(__x86_64__)
#define FDS_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define FDS_ARCH AUDIT_ARCH_AARCH64
#endif

#ifdef FDS_ARCH
static atomic_int fds_trapped;

/* SIGSYS of the filter below: counted, and the call fails EMFILE */
static void fds_trap(int sig, siginfo_t *si, void *uc)
{
	ucontext_t *u = uc;

	(void)sig;
	(void)si;
	atomic_fetch_add(&fds_trapped, 1);
#if defined(__x86_64__)
	u->uc_mcontext.gregs[REG_RAX] = -EMFILE;
#else
	u->uc_mcontext.regs[0] = (unsigned long long)-EMFILE;
#endif
}

/* From now on every thread's socket(AF_INET or AF_INET6,
 * SOCK_DGRAM | SOCK_CLOEXEC, ...) traps. */
static void fds_trap_on(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, FDS_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_socket, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_INET, 1, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_INET6, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[1])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SOCK_DGRAM | SOCK_CLOEXEC, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };
	struct sigaction act = { .sa_sigaction = fds_trap, .sa_flags = SA_SIGINFO };

	if (sigaction(SIGSYS, &act, NULL) || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog))
		FAIL("seccomp: %s", strerror(errno));
}

/* fds-cli: no socket of the library's while bytes go to and fro */
static int fds_cli(void)
{
	int fd = connect_retry(), i, n;
	char c = 'f';

	if (fd < 0)
		FAIL("connect: %s", strerror(errno));
	for (i = 0; i < 105; i++) {
		if (i == 5)
			fds_trap_on();
		xfer(fd, &c, 1, true);
		xfer(fd, &c, 1, false);
		if (i >= 5)
			usleep(10000);
	}
	n = atomic_load(&fds_trapped);
	if (n)
		FAIL("%d route look-up sockets opened while 100 bytes were echoed", n);
	rclose(fd);
	printf("ok 100 bytes echoed, no route look-up socket opened meanwhile\n");
	return 0;
}
#else
static int fds_cli(void)
{
	FAIL("fds-cli: no seccomp filter for this architecture (x86_64 and aarch64 only)");
}
#endif

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: cm_rsconn nb|ka-srv|ka-cli|vanish-srv|vanish-cli|fds-srv|"
				"fds-cli ADDR PORT\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)atoi(argv[3]));
	if (inet_pton(AF_INET, argv[2], &sa.sin_addr) != 1)
		return 2;
	if (!strcmp(argv[1], "nb"))
		return nb();
	if (!strcmp(argv[1], "ka-srv"))
		return ka_srv();
	if (!strcmp(argv[1], "ka-cli"))
		return ka_cli();
	if (!strcmp(argv[1], "vanish-srv"))
		return vanish_srv();
	if (!strcmp(argv[1], "vanish-cli"))
		return vanish_cli();
	if (!strcmp(argv[1], "fds-srv"))
		return fds_srv();
	if (!strcmp(argv[1], "fds-cli"))
		return fds_cli();
	return 2;
}
