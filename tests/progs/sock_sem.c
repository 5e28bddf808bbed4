/*
 * sock_sem: socket semantics that programs rely on, for a preload library
 * that moves TCP sockets elsewhere (libsdp.so, issue 22 item 3). Plain
 * socket calls only; run both sides under the preload.
 *
 *   sock_sem server ADDR PORT     sock_sem client ADDR PORT
 *   sock_sem prefork ADDR PORT    sock_sem hello ADDR PORT
 *
 * The server: SO_REUSEADDR/KEEPALIVE/LINGER/RCVBUF and TCP_NODELAY set,
 * the listener in an epoll set beside a pipe, accept4 with SOCK_NONBLOCK |
 * SOCK_CLOEXEC (both flags checked), names and SO_TYPE/SO_DOMAIN of a TCP
 * socket; a request read after select() over the socket and a pipe, the
 * answer written after poll(POLLOUT); dup2 to descriptor 100, the original
 * closed, the exchange through the copy; a forked child that writes on the
 * socket under seccomp's strict mode (write(2) must stay write(2)), then
 * the parent; 1 MiB by sendfile(2); after the client's
 * shutdown(SHUT_WR) it reads to end of stream and still answers.
 * The client: a non-blocking connect (EINPROGRESS) finished by poll and
 * SO_ERROR, connect again says EISCONN; then
 * the other half of each step, every byte checked, and end of stream last.
 * prefork: a server that listens, then forks a child that accepts (as
 * prefork servers do) and answers "world" to "hello"; hello: the client of
 * that, a blocking connect; nbhello: the same by a non-blocking connect
 * waited for with epoll (EINPROGRESS, EPOLLOUT, SO_ERROR 0, EISCONN:
 * under `use both` SDP's or, refused, the kernel's TCP). refused: a
 * non-blocking connect to a port nobody listens on (SO_ERROR ECONNREFUSED
 * once, a read fails). With
 * SOCK_SEM_FAMILY=N in the environment
 * these two make their sockets with family N (27: OFED's AF_INET_SDP).
 * Each side prints "STEP ok" lines and "SIDE: all ok", or "SIDE: STEP:
 * WHY" and exits 1.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/select.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define BIG (1 << 20)

static const char *side;

#define CHECK(cond, step, ...)                                                                     \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			printf("%s: %s: ", side, step);                                            \
			printf(__VA_ARGS__);                                                       \
			printf(" (errno %s)\n", strerrorname_np(errno) ? strerrorname_np(errno) : "0"); \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

static void put(int fd, const void *buf, size_t len, const char *step)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		CHECK(n > 0, step, "write returned %zd", n);
		p += n;
		len -= (size_t)n;
	}
}

static void expect(int fd, const char *want, const char *step)
{
	size_t len = strlen(want), got = 0;
	char buf[64];

	while (got < len) {
		ssize_t n = read(fd, buf + got, len - got);

		CHECK(n > 0, step, "read returned %zd after %zu bytes", n, got);
		got += (size_t)n;
	}
	CHECK(!memcmp(buf, want, len), step, "read '%.*s', want '%s'", (int)len, buf, want);
}

static unsigned char pattern(size_t i) { return (unsigned char)(i * 7 + i / 4096); }

static void names(int fd, int port, const char *step)
{
	struct sockaddr_in a, b;
	socklen_t la = sizeof(a), lb = sizeof(b);
	int v = 0;
	socklen_t lv = sizeof(v);

	CHECK(!getsockname(fd, (struct sockaddr *)&a, &la) && a.sin_family == AF_INET &&
	      la == sizeof(a), step, "getsockname");
	CHECK(!getpeername(fd, (struct sockaddr *)&b, &lb) && b.sin_family == AF_INET,
	      step, "getpeername");
	CHECK(ntohs(port == ntohs(a.sin_port) ? a.sin_port : b.sin_port) == port, step,
	      "neither end has port %d", port);
	CHECK(!getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &lv) && v == SOCK_STREAM, step, "SO_TYPE %d", v);
	CHECK(!getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &v, &lv) && v == AF_INET, step, "SO_DOMAIN %d", v);
	v = 1;
	CHECK(!setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v, sizeof(v)), step, "TCP_NODELAY");
	printf("%s ok\n", step);
}

static int server(struct sockaddr_in *sin)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 5 };
	struct epoll_event ev = { .events = EPOLLIN }, out;
	int ls, s, one = 1, rcv = 1 << 18, pfd[2], st;
	char path[] = "/tmp/sock_sem.XXXXXX", buf[256];
	unsigned char *big;
	fd_set rd;
	off_t off = 0;
	pid_t pid;
	size_t i;
	ssize_t n;

	ls = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(ls >= 0 && !setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) &&
	      !bind(ls, (struct sockaddr *)sin, sizeof(*sin)) && !listen(ls, 8), "listen", "failed");
	int ep = epoll_create1(0);
	CHECK(ep >= 0 && !pipe(pfd), "epoll", "create");
	ev.data.fd = ls;
	CHECK(!epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev), "epoll", "add listener");
	ev.data.fd = pfd[0];
	CHECK(!epoll_ctl(ep, EPOLL_CTL_ADD, pfd[0], &ev), "epoll", "add pipe");
	CHECK(epoll_wait(ep, &out, 1, 20000) == 1 && out.data.fd == ls, "epoll", "no connection");
	s = accept4(ls, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	CHECK(s >= 0, "accept4", "failed");
	CHECK(fcntl(s, F_GETFL) & O_NONBLOCK, "accept4", "no O_NONBLOCK");
	CHECK(fcntl(s, F_GETFD) & FD_CLOEXEC, "accept4", "no FD_CLOEXEC");
	printf("epoll+accept4 ok\n");
	CHECK(!setsockopt(s, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one)) &&
	      !setsockopt(s, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)) &&
	      !setsockopt(s, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv)), "options", "setsockopt");
	names(s, ntohs(sin->sin_port), "names");
	CHECK(!fcntl(s, F_SETFL, fcntl(s, F_GETFL) & ~O_NONBLOCK), "fcntl", "blocking");

	FD_ZERO(&rd);
	FD_SET(s, &rd);
	FD_SET(pfd[0], &rd);
	CHECK(select((s > pfd[0] ? s : pfd[0]) + 1, &rd, NULL, NULL, &(struct timeval){ 20, 0 }) == 1 &&
	      FD_ISSET(s, &rd), "select", "socket not readable");
	expect(s, "hello", "select");
	struct pollfd p = { .fd = s, .events = POLLOUT };
	CHECK(poll(&p, 1, 5000) == 1 && (p.revents & POLLOUT), "poll", "not writable");
	put(s, "world", 5, "poll");
	printf("select+poll ok\n");

	CHECK(dup2(s, 100) == 100 && !close(s), "dup2", "failed");
	expect(100, "dup-data", "dup2");
	put(100, "dup-ok", 6, "dup2");
	s = 100;
	printf("dup2 ok\n");

	pid = fork();
	CHECK(pid >= 0, "fork", "failed");
	if (!pid) {
		/* under seccomp's strict mode (read, write, exit only), as
		 * sshd's privilege-separated child is under its filter: the
		 * preload must make the program's own write(2) */
		CHECK(!prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT), "fork child", "seccomp");
		put(s, "child-data", 10, "fork child");
		syscall(SYS_exit, 0); /* exit_group is not allowed */
	}
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && !WEXITSTATUS(st), "fork", "child failed");
	put(s, "parent-after-fork", 17, "fork");
	printf("fork ok\n");

	int f = mkstemp(path);
	big = malloc(BIG);
	CHECK(f >= 0 && big, "sendfile", "temp file");
	for (i = 0; i < BIG; i++)
		big[i] = pattern(i);
	put(f, big, BIG, "sendfile");
	unlink(path);
	while (off < BIG) {
		n = sendfile(s, f, &off, BIG - (size_t)off);
		CHECK(n > 0, "sendfile", "returned %zd", n);
	}
	close(f);
	free(big);
	printf("sendfile ok\n");

	expect(s, "client-last", "shutdown");
	CHECK(read(s, buf, sizeof(buf)) == 0, "shutdown", "no end of stream after SHUT_WR");
	put(s, "bye", 3, "shutdown");
	printf("shutdown ok\n");
	close(s);
	close(ls);
	printf("server: all ok\n");
	return 0;
}

static int client(struct sockaddr_in *sin)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), err = 0;
	socklen_t el = sizeof(err);
	unsigned char *big = malloc(BIG);
	size_t got = 0, i;
	int r;

	CHECK(s >= 0 && big, "connect", "socket");
	r = connect(s, (struct sockaddr *)sin, sizeof(*sin));
	CHECK(r == -1 && errno == EINPROGRESS, "connect", "not EINPROGRESS (%d, %s)", r,
	      strerror(errno));
	struct pollfd p = { .fd = s, .events = POLLOUT };
	CHECK(poll(&p, 1, 20000) == 1 && !getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &el) && !err,
	      "connect", "not connected (SO_ERROR %d)", err);
	r = connect(s, (struct sockaddr *)sin, sizeof(*sin));
	CHECK(r == -1 && errno == EISCONN, "connect", "again: not EISCONN (%s)", strerror(errno));
	printf("connect ok\n");
	names(s, ntohs(sin->sin_port), "names");
	CHECK(!fcntl(s, F_SETFL, fcntl(s, F_GETFL) & ~O_NONBLOCK), "fcntl", "blocking");
	put(s, "hello", 5, "select");
	expect(s, "world", "select");
	put(s, "dup-data", 8, "dup2");
	expect(s, "dup-ok", "dup2");
	expect(s, "child-data", "fork");
	expect(s, "parent-after-fork", "fork");
	while (got < BIG) {
		ssize_t n = read(s, big + got, BIG - got);

		CHECK(n > 0, "sendfile", "read %zd after %zu", n, got);
		got += (size_t)n;
	}
	for (i = 0; i < BIG; i++)
		CHECK(big[i] == pattern(i), "sendfile", "byte %zu is %u", i, big[i]);
	printf("sendfile ok\n");
	put(s, "client-last", 11, "shutdown");
	CHECK(!shutdown(s, SHUT_WR), "shutdown", "SHUT_WR");
	expect(s, "bye", "shutdown");
	CHECK(read(s, big, 16) == 0, "shutdown", "no end of stream");
	printf("shutdown ok\n");
	close(s);
	free(big);
	printf("client: all ok\n");
	return 0;
}

static int family(void)
{
	const char *f = getenv("SOCK_SEM_FAMILY");

	return f ? atoi(f) : AF_INET;
}

static int prefork(struct sockaddr_in *sin)
{
	struct sockaddr_in peer;
	socklen_t pl = sizeof(peer);
	int ls, s, one = 1, st;
	pid_t pid;

	ls = socket(family(), SOCK_STREAM, 0);
	CHECK(ls >= 0 && !setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) &&
	      !bind(ls, (struct sockaddr *)sin, sizeof(*sin)) && !listen(ls, 8), "listen", "failed");
	pid = fork();
	CHECK(pid >= 0, "fork", "failed");
	if (!pid) {
		s = accept(ls, (struct sockaddr *)&peer, &pl);
		CHECK(s >= 0 && peer.sin_family == AF_INET, "child accept", "failed");
		expect(s, "hello", "child");
		put(s, "world", 5, "child");
		close(s);
		_exit(0);
	}
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && !WEXITSTATUS(st), "prefork", "child failed");
	close(ls);
	printf("prefork: all ok\n");
	return 0;
}

/* a non-blocking connect to a port nobody listens on: EINPROGRESS, then
 * poll wakes and SO_ERROR says ECONNREFUSED (once), a read fails */
static int refused(struct sockaddr_in *sin)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), err = 0, r;
	socklen_t el = sizeof(err);
	char b;

	CHECK(s >= 0, "refused", "socket");
	r = connect(s, (struct sockaddr *)sin, sizeof(*sin));
	CHECK(r == -1 && (errno == EINPROGRESS || errno == ECONNREFUSED), "refused",
	      "connect: %d, %s", r, strerror(errno));
	if (errno == EINPROGRESS) {
		struct pollfd p = { .fd = s, .events = POLLOUT };

		CHECK(poll(&p, 1, 20000) == 1, "refused", "poll did not wake");
		CHECK(!getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &el) && err == ECONNREFUSED,
		      "refused", "SO_ERROR %d", err);
		el = sizeof(err);
		CHECK(!getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &el) && !err, "refused",
		      "SO_ERROR %d a second time", err);
	}
	CHECK(read(s, &b, 1) < 0, "refused", "a read did not fail");
	printf("refused: all ok\n");
	return 0;
}

static int hello(struct sockaddr_in *sin)
{
	int s = socket(family(), SOCK_STREAM, 0);
	char b;

	CHECK(s >= 0 && !connect(s, (struct sockaddr *)sin, sizeof(*sin)), "connect", "failed");
	put(s, "hello", 5, "hello");
	expect(s, "world", "hello");
	CHECK(read(s, &b, 1) == 0, "hello", "no end of stream");
	close(s);
	printf("hello: all ok\n");
	return 0;
}

static int nbhello(struct sockaddr_in *sin)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), ep = epoll_create1(0), r, err = -1;
	struct epoll_event ev = { .events = EPOLLOUT }, got;
	socklen_t el = sizeof(err);
	char b;

	CHECK(s >= 0 && ep >= 0, "nbhello", "socket");
	r = connect(s, (struct sockaddr *)sin, sizeof(*sin));
	CHECK(r == -1 && errno == EINPROGRESS, "nbhello", "connect: %d, %s", r, strerror(errno));
	CHECK(!epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev) && epoll_wait(ep, &got, 1, 20000) == 1,
	      "nbhello", "epoll did not say writable");
	CHECK(!getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &el) && !err, "nbhello", "SO_ERROR %d", err);
	r = connect(s, (struct sockaddr *)sin, sizeof(*sin));
	CHECK(r == -1 && errno == EISCONN, "nbhello", "connect again: %d, %s", r, strerror(errno));
	CHECK(!fcntl(s, F_SETFL, 0), "nbhello", "blocking");
	put(s, "hello", 5, "nbhello");
	expect(s, "world", "nbhello");
	CHECK(read(s, &b, 1) == 0, "nbhello", "no end of stream");
	close(s);
	close(ep);
	printf("nbhello: all ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 4 || inet_pton(AF_INET, argv[2], &sin.sin_addr) != 1) {
		fprintf(stderr, "usage: sock_sem server|client|prefork|hello|nbhello|refused ADDR PORT\n");
		return 2;
	}
	sin.sin_port = htons((uint16_t)atoi(argv[3]));
	side = argv[1];
	if (!strcmp(side, "server"))
		return server(&sin);
	if (!strcmp(side, "client"))
		return client(&sin);
	if (!strcmp(side, "prefork"))
		return prefork(&sin);
	if (!strcmp(side, "hello"))
		return hello(&sin);
	if (!strcmp(side, "refused"))
		return refused(&sin);
	if (!strcmp(side, "nbhello"))
		return nbhello(&sin);
	return 2;
}
