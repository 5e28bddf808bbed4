/*
 * Watches the GID table through one device context opened at the start,
 * for the GID table test (tests/integration/gid_table.sh).
 *
 *   gid_watch SECS
 *
 * Prints "ready", then the table, then for every IBV_EVENT_GID_CHANGE that
 * arrives within SECS seconds "event GID_CHANGE port N" and the table again.
 * A table is one line per valid entry, "gid INDEX ADDRESS TYPE" (TYPE is
 * what ibv_query_gid_type reports: 1 RoCEv2, 0 RoCEv1), then "end". The
 * entries are read with ibv_query_gid_ex, and the line is "gid-mismatch
 * INDEX" when ibv_query_gid disagrees with it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
		       int *type);

static void print_table(struct ibv_context *ctx)
{
	struct ibv_port_attr pa;

	if (ibv_query_port(ctx, 1, &pa)) {
		printf("query_port failed\n");
		return;
	}
	for (int i = 0; i < pa.gid_tbl_len; i++) {
		struct ibv_gid_entry e;
		union ibv_gid g;
		char a[INET6_ADDRSTRLEN];
		int type = -1;

		if (ibv_query_gid_ex(ctx, 1, (uint32_t)i, &e, 0))
			continue;
		if (ibv_query_gid(ctx, 1, i, &g) || memcmp(&g, &e.gid, sizeof(g))) {
			printf("gid-mismatch %d\n", i);
			continue;
		}
		if (ibv_query_gid_type(ctx, 1, (unsigned)i, &type))
			type = -1;
		inet_ntop(AF_INET6, e.gid.raw, a, sizeof(a));
		printf("gid %d %s %d\n", i, a, type);
	}
	printf("end\n");
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct timespec t0, t;
	long secs;

	if (argc != 2) {
		fprintf(stderr, "usage: %s SECS\n", argv[0]);
		return 2;
	}
	secs = strtol(argv[1], NULL, 0);
	setvbuf(stdout, NULL, _IOLBF, 0);
	list = ibv_get_device_list(NULL);
	if (!list || !list[0]) {
		fprintf(stderr, "no device\n");
		return 1;
	}
	ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	if (!ctx) {
		fprintf(stderr, "cannot open the device: %s\n", strerror(errno));
		return 1;
	}
	printf("ready\n");
	print_table(ctx);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd pfd = {.fd = ctx->async_fd, .events = POLLIN};
		struct ibv_async_event ev;
		long left;

		clock_gettime(CLOCK_MONOTONIC, &t);
		left = secs * 1000 -
		       ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
		if (left <= 0)
			break;
		if (poll(&pfd, 1, (int)left) <= 0)
			continue;
		if (ibv_get_async_event(ctx, &ev))
			continue;
		if (ev.event_type == IBV_EVENT_GID_CHANGE)
			printf("event GID_CHANGE port %d\n", ev.element.port_num);
		else
			printf("event %s\n", ibv_event_type_str(ev.event_type));
		ibv_ack_async_event(&ev);
		if (ev.event_type == IBV_EVENT_GID_CHANGE)
			print_table(ctx);
	}
	ibv_close_device(ctx);
	return 0;
}
