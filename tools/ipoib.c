/*
 * `softofed ipoib`: start, inspect and stop the IPoIB interface of an
 * InfiniBand port of this network namespace's daemon (ipoib/, the
 * softofed-ipoib process). It talks to the process over the abstract Unix
 * socket "softofed/ipoib/IFNAME": one line (STATUS or DOWN), text back.
 *
 *   softofed ipoib up [PORT] [--pkey P] [--dev DEV] [--mode datagram|connected]
 *                     interface ib<PORT-1>, or its child ib<PORT-1>.PPPP for
 *                     a P_Key other than the default (named as the kernel's:
 *                     PPPP with the full-member bit, "ib0.8001")
 *   softofed ipoib status [IFNAME]
 *   softofed ipoib down [IFNAME]
 *
 * The process logs to /tmp/softofed-ipoib-<uid>-<IFNAME>-<netns inode>.log.
 * Its binary is $SOFTOFED_IPOIB, else softofed-ipoib next to this program.
 */
#include "softofed.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

/* One request; the answer to out (NULL: dropped). 0 or -errno. */
static int ipoib_rpc(const char *ifname, const char *req, FILE *out)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	int n = snprintf(sun.sun_path + 1, sizeof(sun.sun_path) - 1, "softofed/ipoib/%s", ifname);
	struct timeval tv = {.tv_sec = 10};
	char buf[4096], line[64];
	ssize_t r;
	int fd, rc = 0;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sun,
		    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n)) ||
	    send(fd, line, (size_t)snprintf(line, sizeof(line), "%s\n", req), MSG_NOSIGNAL) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	while ((r = read(fd, buf, sizeof(buf))) > 0)
		if (out)
			fwrite(buf, 1, (size_t)r, out);
	if (r < 0)
		rc = -errno;
	close(fd);
	return rc;
}

static void log_path(char *buf, size_t len, const char *ifname)
{
	struct stat st;

	if (stat("/proc/self/ns/net", &st))
		st.st_ino = 0;
	snprintf(buf, len, "/tmp/softofed-ipoib-%u-%s-%lu.log", (unsigned)getuid(), ifname,
		 (unsigned long)st.st_ino);
}

static int ipoib_up(int argc, char **argv)
{
	char ifname[16] = "ib0", logf[PATH_MAX], bin[PATH_MAX], port[16] = "1";
	const char *env = getenv("SOFTOFED_IPOIB");
	char *args[16];
	int na = 0, status;
	unsigned long pkey = 0xffff;
	uint64_t deadline;
	pid_t pid;

	snprintf(bin, sizeof(bin), "%s/softofed-ipoib", soft_exe_dir);
	args[na++] = (char *)"softofed-ipoib";
	for (int i = 0; i < argc; i++) {
		if (argv[i][0] != '-' && atoi(argv[i]) >= 1 && atoi(argv[i]) <= 8) {
			snprintf(port, sizeof(port), "%d", atoi(argv[i]));
			snprintf(ifname, sizeof(ifname), "ib%d", atoi(argv[i]) - 1);
		} else if ((!strcmp(argv[i], "--pkey") || !strcmp(argv[i], "--dev") ||
			    !strcmp(argv[i], "--mode")) &&
			   i + 1 < argc && na < 12) {
			if (!strcmp(argv[i], "--pkey")) {
				char *end;

				pkey = strtoul(argv[i + 1], &end, 0);
				if (*end || !(pkey & 0x7fff) || pkey > 0xffff) {
					fprintf(stderr, "softofed ipoib up: bad P_Key %s\n",
						argv[i + 1]);
					return 2;
				}
			}
			args[na++] = argv[i];
			args[na++] = argv[++i];
		} else {
			fprintf(stderr, "softofed ipoib up: unknown argument %s\n", argv[i]);
			return 2;
		}
	}
	/* a partition's child interface (Linux ipoib_vlan: parent.PPPP) */
	if ((pkey & 0x7fff) != 0x7fff)
		snprintf(ifname, sizeof(ifname), "ib%u.%04x", (unsigned)(atoi(port) - 1) % 8u,
			 (unsigned)(pkey | 0x8000) & 0xffffu);
	args[na++] = (char *)"--port";
	args[na++] = port;
	args[na++] = (char *)"--ifname";
	args[na++] = ifname;
	args[na] = NULL;
	if (ipoib_rpc(ifname, "STATUS", NULL) == 0) {
		fprintf(stderr, "softofed ipoib: %s is up already\n", ifname);
		return 1;
	}
	log_path(logf, sizeof(logf), ifname);
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		int fd = open(logf, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);

		setsid();
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execv(env && *env ? env : bin, args);
		fprintf(stderr, "softofed ipoib: %s: %s\n", env && *env ? env : bin,
			strerror(errno));
		_exit(127);
	}
	/* the port may wait for its SM and the broadcast join (up to 45 s) */
	deadline = soft_now_ms() + 60000;
	while (soft_now_ms() < deadline) {
		if (waitpid(pid, &status, WNOHANG) == pid) {
			fprintf(stderr, "softofed ipoib: %s did not come up (see %s)\n", ifname,
				logf);
			return 1;
		}
		if (ipoib_rpc(ifname, "STATUS", NULL) == 0) {
			printf("softofed ipoib %s up, pid %d, log %s\n", ifname, (int)pid, logf);
			return 0;
		}
		soft_sleep_ms(50);
	}
	fprintf(stderr, "softofed ipoib: no answer from %s (pid %d) within 60 s\n", ifname,
		(int)pid);
	kill(pid, SIGTERM);
	return 1;
}

/* The IPoIB interfaces of this namespace: ib0 .. ib7 and the child
 * interfaces (ib0.8001) whose control sockets /proc/net/unix lists. */
static unsigned ipoib_names(char names[][16], unsigned max)
{
	static const char tag[] = "@softofed/ipoib/";
	FILE *f = fopen("/proc/net/unix", "r");
	char line[512];
	unsigned n = 0;

	for (int i = 0; i < 8 && n < max; i++)
		snprintf(names[n++], 16, "ib%d", i);
	while (f && fgets(line, sizeof(line), f) && n < max) {
		char *at = strstr(line, tag), *end;
		bool dup = false;

		if (!at || !strchr(at, '.'))
			continue;
		at += sizeof(tag) - 1;
		end = at + strcspn(at, " \n");
		if (end - at >= 16)
			continue;
		*end = 0;
		for (unsigned k = 0; k < n; k++)
			dup |= !strcmp(names[k], at);
		if (!dup)
			snprintf(names[n++], 16, "%s", at);
	}
	if (f)
		fclose(f);
	return n;
}

/* For `softofed status`: one line per IPoIB interface that answers (ib0 ..
 * ib7 and children): its first status line, then how many neighbours and groups, and
 * its packet counters. */
void soft_ipoib_summary(void)
{
	char names[16][16];
	unsigned nn = ipoib_names(names, 16);

	for (unsigned i = 0; i < nn; i++) {
		char *ifname = names[i], *buf = NULL, *l, *save = NULL, first[256] = "";
		size_t len = 0;
		unsigned long long rx = 0, tx = 0;
		unsigned neigh = 0, groups = 0;
		FILE *f;
		int err;

		f = open_memstream(&buf, &len);
		if (!f)
			return;
		err = ipoib_rpc(ifname, "STATUS", f);
		fclose(f);
		for (l = err ? NULL : strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
			const char *c;

			if (!first[0] && !strncmp(l, "ipoib ", 6))
				snprintf(first, sizeof(first), "%s", l);
			neigh += !strncmp(l, "neigh ", 6);
			groups += !strncmp(l, "mcast ", 6);
			if (!strncmp(l, "counters:", 9)) {
				if ((c = strstr(l, " rx_packets ")))
					rx = strtoull(c + 12, NULL, 10);
				if ((c = strstr(l, " tx_packets ")))
					tx = strtoull(c + 12, NULL, 10);
			}
		}
		if (first[0])
			printf("%s neighbours %u groups %u rx_packets %llu tx_packets %llu\n", first,
			       neigh, groups, rx, tx);
		free(buf);
	}
}

int soft_cmd_ipoib(int argc, char **argv)
{
	const char *ifname = argc > 1 ? argv[1] : "ib0";

	if (argc >= 1 && !strcmp(argv[0], "up"))
		return ipoib_up(argc - 1, argv + 1);
	if (argc >= 1 && argc <= 2 && !strcmp(argv[0], "status")) {
		if (ipoib_rpc(ifname, "STATUS", stdout)) {
			fprintf(stderr, "softofed ipoib: %s is not up\n", ifname);
			return 1;
		}
		return 0;
	}
	if (argc >= 1 && argc <= 2 && !strcmp(argv[0], "down")) {
		uint64_t deadline = soft_now_ms() + 10000;

		if (ipoib_rpc(ifname, "DOWN", NULL)) {
			fprintf(stderr, "softofed ipoib: %s is not up\n", ifname);
			return 1;
		}
		/* gone once its socket is */
		while (soft_now_ms() < deadline && ipoib_rpc(ifname, "STATUS", NULL) == 0)
			soft_sleep_ms(50);
		printf("softofed ipoib %s down\n", ifname);
		return 0;
	}
	fprintf(stderr, "usage: softofed ipoib up [PORT] [--pkey P] [--mode datagram|connected] | "
			"down [IFNAME] | "
			"status [IFNAME]\n");
	return 2;
}
