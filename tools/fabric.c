/*
 * `softofed fabric`: start, inspect and stop the InfiniBand fabric of this
 * network namespace (fabric/, the softofed-fabric process), and cut or
 * restore its links. It talks to the fabric over the abstract Unix socket
 * "softofed/fabric": one line of request, text back (fabric/main.c).
 *
 *   softofed fabric up FILE [--listen ADDR:PORT] [--real NAME[,NAME...]]
 *                              [--log FILE] [--ibsim]
 *   softofed fabric status [-v]
 *   softofed fabric down
 *   softofed fabric link NAME PORT up|down
 *   softofed fabric port NAME PORT
 *   softofed fabric capture ...   `softofed capture` (tools/capture.c)
 *
 * The fabric binary is $SOFTOFED_FABRIC, else softofed-fabric next to
 * this program.
 */
#include "softofed.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define FABRIC_CTL "softofed/fabric"

/* Send one request; the answer goes to out (NULL: stdout). 0, or -errno
 * when no fabric answers. */
static int fabric_rpc(const char *req, FILE *out)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	socklen_t len =
	    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(FABRIC_CTL));
	struct timeval tv = {.tv_sec = 10};
	char buf[4096];
	ssize_t n;
	int fd, rc = 0;

	memcpy(sun.sun_path + 1, FABRIC_CTL, strlen(FABRIC_CTL));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sun, len)) {
		rc = -errno;
		close(fd);
		return rc;
	}
	if (write(fd, req, strlen(req)) < 0 || write(fd, "\n", 1) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	shutdown(fd, SHUT_WR);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		if (out)
			fwrite(buf, 1, (size_t)n, out);
	if (n < 0)
		rc = -errno;
	close(fd);
	return rc;
}

static const char *fabric_path(void)
{
	static char path[PATH_MAX];
	const char *env = getenv("SOFTOFED_FABRIC");

	if (env && *env)
		return env;
	snprintf(path, sizeof(path), "%s/softofed-fabric", soft_exe_dir);
	return path;
}

static int fabric_up(int argc, char **argv)
{
	char **args = calloc((size_t)argc + 2, sizeof(*args));
	uint64_t deadline;
	pid_t pid;
	int status;

	if (!args)
		return 1;
	if (fabric_rpc("STATUS", NULL) == 0) {
		fprintf(stderr, "softofed fabric: a fabric runs in this network namespace "
				"(softofed fabric down first)\n");
		free(args);
		return 1;
	}
	args[0] = (char *)"softofed-fabric";
	for (int i = 0; i < argc; i++)
		args[i + 1] = argv[i];
	pid = fork();
	if (pid < 0) {
		perror("softofed fabric: fork");
		free(args);
		return 1;
	}
	if (pid == 0) {
		setsid();
		execv(fabric_path(), args);
		fprintf(stderr, "softofed fabric: %s: %s\n", fabric_path(), strerror(errno));
		_exit(127);
	}
	free(args);
	deadline = soft_now_ms() + 20000;
	while (soft_now_ms() < deadline) {
		if (waitpid(pid, &status, WNOHANG) == pid) {
			fprintf(stderr, "softofed fabric: the fabric exited (%s %d)\n",
				WIFEXITED(status) ? "status" : "signal",
				WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
			return 1;
		}
		if (fabric_rpc("STATUS", NULL) == 0) {
			printf("softofed fabric up, pid %d\n", (int)pid);
			return 0;
		}
		soft_sleep_ms(20);
	}
	fprintf(stderr, "softofed fabric: no answer from the fabric (pid %d) within 20 s\n",
		(int)pid);
	kill(pid, SIGTERM);
	return 1;
}

static int fabric_down(void)
{
	uint64_t deadline = soft_now_ms() + 10000;

	if (fabric_rpc("DOWN", NULL)) {
		fprintf(stderr, "softofed fabric: no fabric runs in this network namespace\n");
		return 1;
	}
	while (soft_now_ms() < deadline) {
		if (fabric_rpc("STATUS", NULL))
			return 0;
		soft_sleep_ms(20);
	}
	fprintf(stderr, "softofed fabric: the fabric still answers after DOWN\n");
	return 1;
}

static int fabric_req(const char *req)
{
	char *tmp = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&tmp, &len);
	int rc;

	if (!m)
		return 1;
	rc = fabric_rpc(req, m);
	fclose(m);
	if (rc) {
		fprintf(stderr, "softofed fabric: no fabric runs in this network namespace\n");
		free(tmp);
		return 1;
	}
	fputs(tmp, stdout);
	rc = !strncmp(tmp, "error:", 6);
	free(tmp);
	return rc;
}

static void fabric_usage(FILE *f)
{
	fprintf(f, "usage: softofed fabric up FILE [--listen ADDR:PORT] [--real NAME,...] "
		   "[--log FILE] [--ibsim] [--no-direct]\n"
		   "       (the options are softofed-fabric's: fabric/README.md)\n"
		   "       softofed fabric status [-v]\n"
		   "       softofed fabric down\n"
		   "       softofed fabric link NAME PORT up|down\n"
		   "       softofed fabric port NAME PORT\n"
		   "       softofed fabric capture ... (softofed capture: tools/capture.c)\n");
}

int soft_cmd_fabric(int argc, char **argv)
{
	char req[256];

	if (argc < 1) {
		fabric_usage(stderr);
		return 2;
	}
	if (!strcmp(argv[0], "up") && argc >= 2)
		return fabric_up(argc - 1, argv + 1);
	if (!strcmp(argv[0], "capture"))
		return soft_cmd_capture(argc - 1, argv + 1);
	if (!strcmp(argv[0], "down") && argc == 1)
		return fabric_down();
	if (!strcmp(argv[0], "status") && argc <= 2) {
		int rc = fabric_req("STATUS");

		if (!rc && argc == 2 && !strcmp(argv[1], "-v"))
			rc = fabric_req("NODES");
		return rc;
	}
	if (!strcmp(argv[0], "link") && argc == 4) {
		snprintf(req, sizeof(req), "LINK %s %s %s", argv[1], argv[2], argv[3]);
		return fabric_req(req);
	}
	if (!strcmp(argv[0], "port") && argc == 3) {
		snprintf(req, sizeof(req), "PORT %s %s", argv[1], argv[2]);
		return fabric_req(req);
	}
	fabric_usage(stderr);
	return 2;
}
