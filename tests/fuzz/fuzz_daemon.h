/*
 * What daemon/main.c gives the rest of the daemon (it is not linked into a
 * fuzz target: it has main): the globals and the log. Included by the one
 * file of a fuzz target that stands in for main.c; FUZZ_NAME names the
 * target in its failure messages.
 */
#ifndef FUZZ_DAEMON_H
#define FUZZ_DAEMON_H

#include "sofd.h"

#include <infiniband/verbs.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

struct sofd sofd;

void sofd_log(const char *fmt, ...)
{
	va_list ap;

	if (!getenv("SOF_FUZZ_LOG"))
		return;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* A broken harness or a seed that does not do what it was made for. */
#define FAIL(...)                                                                                  \
	do {                                                                                       \
		fprintf(stderr, FUZZ_NAME ": " __VA_ARGS__);                                       \
		fputc('\n', stderr);                                                               \
		abort();                                                                           \
	} while (0)

/* The daemon as main.c would start it, without its sockets: device sof0
 * with the RoCEv2 GIDs gids[0..ngids) (interface 1) and active MTU mtu,
 * the registry, the CM (QP1's agent) and the transport engine with the
 * daemon as its host but no wire (MADs and packets to other hosts go
 * nowhere). Aborts when a part does not start. */
static inline void fuzz_daemon_start(enum ibv_mtu mtu, const uint8_t (*gids)[16], unsigned ngids)
{
	sofd.uid = getuid();
	sofd.start_ns = sof_now_ns();
	sofd.listen.fd = sofd.sig.fd = sofd.netlink.fd = sofd.spare_fd = -1;
	sofd.doorbell.kind = SOFD_POLL_DOORBELL;
	sofd.doorbell.fd = -1;
	sof_list_init(&sofd.conns);
	sofd.epfd = epoll_create1(EPOLL_CLOEXEC);
	if (sofd.epfd < 0)
		FAIL("epoll_create1: %m");
	snprintf(sofd.dev.name, sizeof(sofd.dev.name), "sof0");
	sofd.dev.active_mtu = mtu;
	sofd.dev.port_state = IBV_PORT_ACTIVE;
	for (unsigned i = 0; i < ngids; i++) {
		memcpy(sofd.dev.gids[i].gid, gids[i], 16);
		sofd.dev.gids[i].type = SOF_GID_TYPE_ROCE_V2;
		sofd.dev.gids[i].ifindex = 1;
	}
	sofd.dev.num_gids = ngids;
	if (sofd_registry_init())
		FAIL("sofd_registry_init");
	if (sofd_cm_init(sofd.epfd))
		FAIL("sofd_cm_init");
	if (sofd_tp_start(-1, -1, false))
		FAIL("sofd_tp_start");
}

#endif
