/*
 * The libraries' side of the control protocol (sof_proto.h), shared by
 * libibverbs and librdmacm: finding the device daemon of this network
 * namespace, starting it when none runs, and one request/reply exchange on
 * a socket.
 *
 * A request is one record, struct sof_msg followed by the op's struct, with
 * descriptors as SCM_RIGHTS; the daemon answers every request with exactly
 * one record, in order. A reply is accepted only when it names the op that
 * was asked, its length field matches what arrived, and a successful reply
 * carries exactly the struct the op defines: anything else is -EPROTO, and
 * descriptors that came with a rejected reply are closed.
 */
#include "sof_client.h"
#include "sof_proto.h"
#include "sof_util.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* How long to wait for a daemon we started to answer. */
#define CONNECT_WAIT_NS (5ull * 1000000000ull)

/* Records up to this size are built on the stack; larger ones (none today)
 * are allocated. */
#define RPC_STACK_BYTES 2048

static int try_connect(void)
{
	struct sockaddr_un sun;
	socklen_t len = sof_sock_addr(&sun);
	int fd, err;

	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	while (connect(fd, (struct sockaddr *)&sun, len)) {
		if (errno == EINTR)
			continue;
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

/* The daemon binary: $SOFTOFED_DAEMON, else <dir of this library>/../bin/
 * softofedd. Returns false when neither names an executable file; the
 * caller then looks softofedd up in PATH. */
static bool daemon_path(char *buf, size_t len)
{
	const char *env = getenv("SOFTOFED_DAEMON");
	char lib[PATH_MAX];
	Dl_info info;
	char *slash;
	int n;

	if (env && *env) {
		n = snprintf(buf, len, "%s", env);
		return n > 0 && (size_t)n < len;
	}
	if (!dladdr((void *)sof_client_connect, &info) || !info.dli_fname)
		return false;
	if (!realpath(info.dli_fname, lib))
		return false;
	slash = strrchr(lib, '/');
	if (!slash)
		return false;
	*slash = '\0';
	n = snprintf(buf, len, "%s/../bin/softofedd", lib);
	return n > 0 && (size_t)n < len && access(buf, X_OK) == 0;
}

/* Start the daemon and wait for its first process, which exits 0 once the
 * daemonized child listens (or at once when another daemon already does).
 * The daemon must not inherit the application's blocked or ignored
 * signals. Returns false when it certainly did not start (no binary, or
 * its first process reported failure): waiting for it would be pointless. */
static bool start_daemon(void)
{
	static const int sigs[] = {SIGHUP,  SIGINT,  SIGQUIT, SIGPIPE,
				   SIGTERM, SIGCHLD, SIGUSR1, SIGUSR2};
	char path[PATH_MAX];
	char *argv[] = {(char *)"softofedd", NULL};
	posix_spawnattr_t attr;
	sigset_t none, def;
	pid_t pid, r;
	int err, st = 0;

	if (posix_spawnattr_init(&attr))
		return true; /* cannot tell: let the retries decide */
	sigemptyset(&none);
	sigemptyset(&def);
	for (size_t i = 0; i < SOF_ARRAY_SIZE(sigs); i++)
		sigaddset(&def, sigs[i]);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &def);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	if (daemon_path(path, sizeof(path)))
		err = posix_spawn(&pid, path, NULL, &attr, argv, environ);
	else
		err = posix_spawnp(&pid, "softofedd", NULL, &attr, argv, environ);
	posix_spawnattr_destroy(&attr);
	if (err)
		return false;
	do
		r = waitpid(pid, &st, 0);
	while (r < 0 && errno == EINTR);
	/* r < 0 (ECHILD): the application ignores SIGCHLD or reaped the
	 * process itself, so the outcome is unknown. */
	return r < 0 || (WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int sof_client_connect(void)
{
	uint64_t deadline;
	long wait_ns = 2000000; /* 2 ms, doubling up to 100 ms */
	int fd;

	fd = try_connect();
	if (fd >= 0 || (fd != -ECONNREFUSED && fd != -ENOENT))
		return fd;
	if (!start_daemon())
		return try_connect();
	deadline = sof_now_ns() + CONNECT_WAIT_NS;
	for (;;) {
		struct timespec ts;

		fd = try_connect();
		if (fd >= 0 || (fd != -ECONNREFUSED && fd != -ENOENT))
			return fd;
		if (sof_now_ns() >= deadline)
			return fd;
		ts.tv_sec = 0;
		ts.tv_nsec = wait_ns;
		nanosleep(&ts, NULL);
		if (wait_ns < 100000000)
			wait_ns *= 2;
	}
}

int sof_client_rpc(int sock, uint32_t op, const void *req, size_t reqlen, const int *fds, int nfds,
		  void *rep, size_t replen, int *rfds, int *nrfds)
{
	union {
		struct sof_msg msg;
		uint8_t bytes[RPC_STACK_BYTES];
	} stack;
	size_t tlen = sizeof(struct sof_msg) + reqlen;
	size_t rlen = sizeof(struct sof_msg) + replen;
	size_t blen = tlen > rlen ? tlen : rlen;
	int room = nrfds ? *nrfds : 0, got = room;
	struct sof_msg *m;
	uint8_t *buf;
	ssize_t n;
	int err;

	if (nrfds)
		*nrfds = 0;
	if (blen > SOF_MSG_MAX || (reqlen && !req) || (replen && !rep))
		return -EINVAL;
	buf = blen <= sizeof(stack) ? stack.bytes : malloc(blen);
	if (!buf)
		return -ENOMEM;
	m = (struct sof_msg *)buf;
	m->op = op;
	m->len = (uint32_t)tlen;
	m->status = 0;
	m->rsvd = 0;
	if (reqlen)
		memcpy(buf + sizeof(*m), req, reqlen);
	err = sof_send_rec(sock, buf, tlen, fds, nfds);
	if (err) {
		if (err == -EPIPE || err == -ECONNRESET || err == -ENOTCONN)
			err = -EIO; /* the daemon is gone */
		goto out;
	}

	n = sof_recv_rec(sock, buf, rlen, rfds, &got);
	if (n <= 0) {
		err = n == 0 ? -EIO : (int)n;
		if (err == -ECONNRESET)
			err = -EIO;
		goto out;
	}
	if ((size_t)n < sizeof(*m) || m->len != (uint64_t)n || m->op != op) {
		err = -EPROTO;
		goto err_fds;
	}
	if (m->status) {
		err = m->status < 0 && m->status > -4096 ? m->status : -EPROTO;
		goto err_fds;
	}
	if ((size_t)n != rlen) {
		err = -EPROTO;
		goto err_fds;
	}
	if (replen)
		memcpy(rep, buf + sizeof(*m), replen);
	if (nrfds)
		*nrfds = got;
	err = 0;
	goto out;

err_fds:
	if (got > 0 && rfds)
		sof_close_fds(rfds, got);
out:
	if (buf != stack.bytes)
		free(buf);
	return err;
}

