/*
 * The softofed command's connection to the device daemon of this network
 * namespace: where the daemon binary is, one request/reply exchange
 * through common/client.c, and starting the daemon when none answers.
 */
#include "softofed.h"

#include "sof_client.h"
#include "sof_util.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

char soft_exe_dir[PATH_MAX];

void soft_find_exe_dir(void)
{
	ssize_t n = readlink("/proc/self/exe", soft_exe_dir, PATH_MAX - 1);
	char *slash;

	if (n <= 0) {
		soft_exe_dir[0] = 0;
		return;
	}
	soft_exe_dir[n] = 0;
	slash = strrchr(soft_exe_dir, '/');
	if (slash)
		*slash = 0;
}

const char *soft_daemon_path(void)
{
	static char path[PATH_MAX + 16];
	const char *env = getenv("SOFTOFED_DAEMON");

	if (env && *env)
		return env;
	snprintf(path, sizeof(path), "%s/softofedd", soft_exe_dir);
	return path;
}

uint64_t soft_now_ms(void) { return sof_now_ns() / 1000000u; }

void soft_sleep_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

int soft_connect(void)
{
	struct timeval tv = {.tv_sec = SOFT_WAIT_MS / 1000};
	struct sockaddr_un sun;
	socklen_t len = sof_sock_addr(&sun);
	int fd;

	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sun, len)) {
		int err = -errno;

		close(fd);
		return err;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	return fd;
}

int soft_rpc(int fd, uint32_t op, void *rep, size_t replen)
{
	int fds[SOF_MAX_FDS], nfds = SOF_MAX_FDS;
	int err = sof_client_rpc(fd, op, NULL, 0, NULL, 0, rep, replen, fds, &nfds);

	if (!err && nfds > 0)
		sof_close_fds(fds, nfds);
	return err;
}

int soft_get_status(struct sof_status_rep *st)
{
	int fd = soft_connect(), err;

	if (fd < 0)
		return fd;
	err = soft_rpc(fd, SOF_OP_STATUS, st, sizeof(*st));
	close(fd);
	return err;
}

int soft_get_netdevs(struct sof_netdevs_rep *nd)
{
	int fd = soft_connect(), err;

	if (fd < 0)
		return fd;
	err = soft_rpc(fd, SOF_OP_NETDEVS, nd, sizeof(*nd));
	close(fd);
	if (!err && nd->n > SOF_MAX_NETDEVS)
		err = -EPROTO;
	for (uint32_t i = 0; !err && i < nd->n; i++)
		nd->dev[i].name[sizeof(nd->dev[i].name) - 1] = '\0';
	return err;
}

int soft_ensure_daemon(struct sof_status_rep *st, const char *ifaces, char *const *extra,
		       bool *started)
{
	const char *path = soft_daemon_path();
	uint64_t end;
	int status;
	pid_t pid;

	*started = false;
	if (!soft_get_status(st))
		return 0;
	*started = true;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		char *args[16];
		int n = 0;

		args[n++] = (char *)path;
		if (ifaces) {
			args[n++] = (char *)"-i";
			args[n++] = (char *)ifaces;
		}
		for (int i = 0; extra && extra[i] && n < 15; i++)
			args[n++] = extra[i];
		args[n] = NULL;
		execv(path, args);
		fprintf(stderr, "softofed: cannot run %s: %s\n", path, strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
			return -ENOENT;
		fprintf(stderr, "softofed: %s failed to start\n", path);
		return -EIO;
	}
	end = soft_now_ms() + SOFT_WAIT_MS;
	for (;;) {
		int err = soft_get_status(st);

		if (!err)
			return 0;
		if (soft_now_ms() >= end)
			return err;
		soft_sleep_ms(20);
	}
}
