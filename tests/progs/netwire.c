/*
 * A software cable with impairments, for kernels without sch_netem
 * (CONFIG_NET_SCH_NETEM is not set on the project's machines, so
 * `tc qdisc ... netem` fails with "Specified qdisc kind is unknown").
 *
 *   netwire [-c CONFIG] [-s SEED] [-T SECS] IF1 IF2
 *
 * Runs in a namespace of its own between two hosts (tests/lib.sh,
 * `sof_hosts_up 2 wire`): every Ethernet frame received on IF1 is sent out
 * of IF2 and the other way round, through AF_PACKET sockets with
 * PACKET_VNET_HDR (so GSO frames and partial checksums of veth offloads
 * pass through intact). Frames received on an interface are impaired as the
 * CONFIG file's line for that interface says, in tc-netem words:
 *
 *   IF [loss P%] [duplicate P%] [delay Tms] [reorder P%]
 *
 * loss: dropped with probability P; duplicate: sent twice with probability
 * P; delay: held T ms (all frames, FIFO); reorder (with delay): with
 * probability P a frame skips the delay queue, so it overtakes the held
 * ones, as in netem. "loss 100%" cuts the direction. Bare numbers are
 * percent and milliseconds too. An interface without a line is not impaired.
 *
 * The file is re-read whenever it changes (checked every 20 ms; write it
 * elsewhere and rename it into place). After each read netwire prints
 * "config GEN" and one "IF loss=.. duplicate=.. delay_ms=.. reorder=.."
 * line per interface, GEN counting from 1, so a test knows when its new
 * setting is in force, then what it has counted so far, one line per
 * interface, of the frames received there:
 *
 *   counters GEN IF rx=N tx=N dropped=N duplicated=N delayed=N reordered=N
 *     gso=N overflow=N send_errors=N lost=N
 *
 * (tx: frames sent out of IF; delayed: held by the delay; reordered: sent
 * at once while earlier frames were held, so they overtook them; gso: GSO
 * frames, joined datagrams of up to 64 KiB that the impairments would
 * treat as one: a test that means to impair packets turns segmentation
 * off and expects 0; overflow: held frames dropped for want of room;
 * send_errors: frames that could not be sent out of IF; lost: frames
 * the kernel dropped for want of room in netwire's socket), so a test
 * rewrites the file unchanged to read them. At the end (SIGTERM,
 * SIGINT or -T SECS): "exit IF1 rx=N tx=N dropped=N duplicated=N ... IF2
 * ...". Exit 0, 1 on errors.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <linux/virtio_net.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define FRAME_MAX (65536 + sizeof(struct virtio_net_hdr))
#define QUEUE_MAX 4096 /* held frames per direction; more are dropped */

struct impair {
	double loss, dup, reorder; /* probabilities 0..1 */
	int delay_ms;
};

struct held {
	int64_t due_us;
	size_t len;
	uint8_t *data;
};

struct port {
	const char *name;
	int fd, ifindex;
	struct impair imp; /* frames received here */
	struct held q[QUEUE_MAX];
	unsigned int head, count;
	unsigned long rx, tx, dropped, duplicated, delayed, reordered, gso, overflow, send_errors;
	unsigned long lost; /* the kernel's drops at the socket (PACKET_STATISTICS) */
};

static volatile sig_atomic_t stop;
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* xorshift64*: reproducible with -s SEED */
static double rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (double)((rng_state * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

static int open_port(struct port *p)
{
	struct sockaddr_ll sll;
	struct packet_mreq mr;
	int one = 1, bufsz = 32 << 20;

	p->ifindex = (int)if_nametoindex(p->name);
	if (!p->ifindex) {
		fprintf(stderr, "netwire: no interface %s\n", p->name);
		return -1;
	}
	p->fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
	if (p->fd < 0) {
		perror("netwire: AF_PACKET socket (needs root)");
		return -1;
	}
	if (setsockopt(p->fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one)) ||
	    setsockopt(p->fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one))) {
		perror("netwire: PACKET_VNET_HDR / PACKET_IGNORE_OUTGOING");
		return -1;
	}
	/* room for bursts of single packets (a READ response of 1 MiB is 256
	 * of them, and many may be on their way): frames the socket has no
	 * room for are lost before netwire sees them (counted as "lost") */
	if (setsockopt(p->fd, SOL_SOCKET, SO_RCVBUFFORCE, &bufsz, sizeof(bufsz)))
		(void)setsockopt(p->fd, SOL_SOCKET, SO_RCVBUF, &bufsz, sizeof(bufsz));
	if (setsockopt(p->fd, SOL_SOCKET, SO_SNDBUFFORCE, &bufsz, sizeof(bufsz)))
		(void)setsockopt(p->fd, SOL_SOCKET, SO_SNDBUF, &bufsz, sizeof(bufsz));
	memset(&sll, 0, sizeof(sll));
	sll.sll_family = AF_PACKET;
	sll.sll_protocol = htons(ETH_P_ALL);
	sll.sll_ifindex = p->ifindex;
	if (bind(p->fd, (struct sockaddr *)&sll, sizeof(sll))) {
		perror("netwire: bind");
		return -1;
	}
	memset(&mr, 0, sizeof(mr));
	mr.mr_ifindex = p->ifindex;
	mr.mr_type = PACKET_MR_PROMISC;
	if (setsockopt(p->fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof(mr))) {
		perror("netwire: promiscuous mode");
		return -1;
	}
	return 0;
}

/* to_ms: a netem time ("10ms", "1s", "500us", bare: ms) in milliseconds */
static int to_ms(const char *v, double x)
{
	size_t n = strlen(v);

	if (n > 2 && !strcmp(v + n - 2, "us"))
		return (int)(x / 1000);
	if (n > 2 && !strcmp(v + n - 2, "ms"))
		return (int)x;
	if (n > 1 && v[n - 1] == 's')
		return (int)(x * 1000);
	return (int)x;
}

/* config_changed: whether PATH differs from what LAST recorded (a missing
 * file counts as all zeros); records the new state */
static int config_changed(const char *path, struct stat *last)
{
	struct stat st;

	if (stat(path, &st))
		memset(&st, 0, sizeof(st));
	if (st.st_ino == last->st_ino && st.st_size == last->st_size &&
	    st.st_mtim.tv_sec == last->st_mtim.tv_sec &&
	    st.st_mtim.tv_nsec == last->st_mtim.tv_nsec)
		return 0;
	*last = st;
	return 1;
}

/* parse_line: "IF words..." into IMP when IF is NAME; 1 when it matched */
static int parse_line(char *line, const char *name, struct impair *imp)
{
	char *save, *w = strtok_r(line, " \t\n", &save);

	if (!w || strcmp(w, name))
		return 0;
	memset(imp, 0, sizeof(*imp));
	while ((w = strtok_r(NULL, " \t\n", &save))) {
		char *v = strtok_r(NULL, " \t\n", &save);
		double x;

		if (!v)
			break;
		x = strtod(v, NULL);
		if (!strcmp(w, "loss"))
			imp->loss = x / 100;
		else if (!strcmp(w, "duplicate"))
			imp->dup = x / 100;
		else if (!strcmp(w, "reorder"))
			imp->reorder = x / 100;
		else if (!strcmp(w, "delay"))
			imp->delay_ms = to_ms(v, x);
		else
			fprintf(stderr, "netwire: ignoring '%s %s'\n", w, v);
	}
	return 1;
}

/* print_counters: each port's counters (the header's names) after PREFIX,
 * on one line or one line per port */
static void print_counters(const char *prefix, struct port *ports, int one_line)
{
	int i;

	for (i = 0; i < 2; i++) {
		struct port *p = &ports[i];
		struct tpacket_stats st;
		socklen_t sl = sizeof(st);

		/* (reading them resets the kernel's; they add up here) */
		if (!getsockopt(p->fd, SOL_PACKET, PACKET_STATISTICS, &st, &sl))
			p->lost += st.tp_drops;

		if (!one_line || !i)
			printf("%s", prefix);
		printf("%s%s rx=%lu tx=%lu dropped=%lu duplicated=%lu delayed=%lu reordered=%lu "
		       "gso=%lu overflow=%lu send_errors=%lu lost=%lu",
		       one_line && i ? " " : "", p->name, p->rx, p->tx, p->dropped, p->duplicated,
		       p->delayed, p->reordered, p->gso, p->overflow, p->send_errors, p->lost);
		if (!one_line)
			printf("\n");
	}
	if (one_line)
		printf("\n");
}

static void read_config(const char *path, struct port *ports, unsigned int *gen)
{
	char line[512];
	FILE *f = fopen(path, "r");
	int i;

	for (i = 0; i < 2; i++)
		memset(&ports[i].imp, 0, sizeof(ports[i].imp));
	if (f) {
		while (fgets(line, sizeof(line), f))
			for (i = 0; i < 2; i++) {
				char copy[512];

				memcpy(copy, line, sizeof(copy));
				parse_line(copy, ports[i].name, &ports[i].imp);
			}
		fclose(f);
	}
	printf("config %u\n", ++*gen);
	for (i = 0; i < 2; i++)
		printf("%s loss=%g%% duplicate=%g%% delay_ms=%d reorder=%g%%\n", ports[i].name,
		       ports[i].imp.loss * 100, ports[i].imp.dup * 100, ports[i].imp.delay_ms,
		       ports[i].imp.reorder * 100);
	{
		char prefix[32];

		snprintf(prefix, sizeof(prefix), "counters %u ", *gen);
		print_counters(prefix, ports, 0);
	}
}

static void send_frame(struct port *out, const uint8_t *data, size_t len)
{
	/* the virtio_net_hdr travels in front, as received */
	if (send(out->fd, data, len, 0) < 0) {
		if (errno != ENOBUFS && errno != EAGAIN && errno != ENETDOWN)
			fprintf(stderr, "netwire: send on %s: %s\n", out->name, strerror(errno));
		out->send_errors++;
		return;
	}
	out->tx++;
}

/* hold: queue a copy of the frame for later, FIFO (one delay per port) */
static void hold(struct port *in, const uint8_t *data, size_t len, int64_t due)
{
	struct held *h;

	if (in->count == QUEUE_MAX) {
		in->overflow++;
		return;
	}
	h = &in->q[(in->head + in->count) % QUEUE_MAX];
	h->data = malloc(len);
	if (!h->data) {
		in->overflow++;
		return;
	}
	memcpy(h->data, data, len);
	h->len = len;
	h->due_us = due;
	in->count++;
}

/* release: send the held frames of IN (towards OUT) that are due */
static void release(struct port *in, struct port *out, int64_t now)
{
	while (in->count && in->q[in->head].due_us <= now) {
		struct held *h = &in->q[in->head];

		send_frame(out, h->data, h->len);
		free(h->data);
		in->head = (in->head + 1) % QUEUE_MAX;
		in->count--;
	}
}

static void forward(struct port *in, struct port *out, const uint8_t *data, size_t len)
{
	const struct impair *m = &in->imp;
	int copies = 1, i;

	in->rx++;
	if (len >= sizeof(struct virtio_net_hdr) &&
	    ((const struct virtio_net_hdr *)data)->gso_type != VIRTIO_NET_HDR_GSO_NONE)
		in->gso++;
	if (m->loss > 0 && rnd() < m->loss) {
		in->dropped++;
		return;
	}
	if (m->dup > 0 && rnd() < m->dup) {
		copies = 2;
		in->duplicated++;
	}
	for (i = 0; i < copies; i++) {
		if (m->delay_ms > 0 && !(m->reorder > 0 && rnd() < m->reorder)) {
			in->delayed++;
			hold(in, data, len, now_us() + (int64_t)m->delay_ms * 1000);
		} else {
			/* ahead of the frames still held: reordered */
			if (in->count)
				in->reordered++;
			send_frame(out, data, len);
		}
	}
}

int main(int argc, char **argv)
{
	struct port *ports;
	const char *config = NULL;
	struct sigaction sa;
	struct stat last;
	unsigned int gen = 0;
	int c, secs = 3600, i;
	int64_t end, next_check = 0;
	uint8_t *buf;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((c = getopt(argc, argv, "c:s:T:h")) != -1) {
		switch (c) {
		case 'c':
			config = optarg;
			break;
		case 's':
			rng_state = strtoull(optarg, NULL, 0) | 1;
			break;
		case 'T':
			secs = atoi(optarg);
			break;
		default:
			goto usage;
		}
	}
	if (argc - optind != 2 || secs <= 0)
		goto usage;
	ports = calloc(2, sizeof(*ports));
	buf = malloc(FRAME_MAX);
	if (!ports || !buf)
		return 1;
	ports[0].name = argv[optind];
	ports[1].name = argv[optind + 1];
	for (i = 0; i < 2; i++)
		if (open_port(&ports[i]))
			return 1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	memset(&last, 0, sizeof(last));
	if (config)
		config_changed(config, &last);
	read_config(config ? config : "/dev/null", ports, &gen);
	printf("netwire pid %d: %s <-> %s\n", (int)getpid(), ports[0].name, ports[1].name);

	end = now_us() + (int64_t)secs * 1000000;
	while (!stop) {
		struct pollfd pf[2] = {{.fd = ports[0].fd, .events = POLLIN},
				       {.fd = ports[1].fd, .events = POLLIN}};
		int64_t now = now_us(), wait_us = 20000;

		if (now > end)
			break;
		if (config && now >= next_check) {
			next_check = now + 20000;
			if (config_changed(config, &last))
				read_config(config, ports, &gen);
		}
		for (i = 0; i < 2; i++) {
			release(&ports[i], &ports[1 - i], now);
			if (ports[i].count && ports[i].q[ports[i].head].due_us - now < wait_us)
				wait_us = ports[i].q[ports[i].head].due_us - now;
		}
		if (poll(pf, 2, wait_us > 0 ? (int)((wait_us + 999) / 1000) : 0) < 0) {
			if (errno == EINTR)
				continue;
			perror("netwire: poll");
			return 1;
		}
		for (i = 0; i < 2; i++) {
			int burst;

			if (!(pf[i].revents & POLLIN))
				continue;
			/* a bounded burst per side, so neither starves */
			for (burst = 0; burst < 64; burst++) {
				ssize_t n = recv(ports[i].fd, buf, FRAME_MAX, MSG_DONTWAIT);

				if (n <= 0)
					break;
				forward(&ports[i], &ports[1 - i], buf, (size_t)n);
			}
		}
	}
	print_counters("exit ", ports, 1);
	return 0;

usage:
	fprintf(stderr, "usage: netwire [-c CONFIG] [-s SEED] [-T SECS] IF1 IF2\n"
			"  forwards Ethernet frames between IF1 and IF2 (AF_PACKET, root),\n"
			"  impaired as CONFIG says, one line per receiving interface:\n"
			"    IF [loss P%%] [duplicate P%%] [delay Tms] [reorder P%%]\n"
			"  CONFIG is re-read when it changes; -T SECS ends after SECS (3600)\n");
	return 2;
}
