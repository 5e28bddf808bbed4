/*
 * cm_rsdgram MODE ADDR PORT N: datagram rsockets (issue 22) through our
 * librdmacm's rsocket API, every byte checked.
 *   server  an rsocket bound to ADDR:PORT echoes each datagram to the
 *           address rrecvfrom reports, until it gets a 1-byte datagram
 *   client  an rsocket sends N numbered datagrams (sizes 1 .. the largest
 *           one, every byte a function of number and place) to ADDR:PORT
 *           with rsendto, one at a time, waits for each echo with rpoll
 *           and checks number, length, bytes and that it came from
 *           ADDR:PORT; then the same through rconnect + rsend/rrecv and
 *           rsendmsg/rrecvmsg with two iovecs; then the checks of the
 *           edges (EMSGSIZE above the largest, EAGAIN on an empty
 *           non-blocking socket, MSG_PEEK then the read)
 *   both    a server thread and the client in one process
 * A lost datagram is waited for 5 s, then the client fails. Prints
 * "ok N datagrams" and exits 0, or the first wrong one and exits 1.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <rdma/rsocket.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_DGRAM 1000 /* fits a UD message at path MTU 1024, header included */

static struct sockaddr_in srv;
static unsigned int nmsg;

static uint8_t pat(uint32_t seq, size_t i) { return (uint8_t)(seq * 7 + i * 13 + (i >> 8)); }

static void fill(uint8_t *b, uint32_t seq, size_t len)
{
	memcpy(b, &seq, len < 4 ? len : 4);
	for (size_t i = 4; i < len; i++)
		b[i] = pat(seq, i);
}

static int check(const uint8_t *b, size_t got, uint32_t seq, size_t len)
{
	uint32_t s = 0;

	if (got != len) {
		fprintf(stderr, "datagram %u: %zu bytes, want %zu\n", seq, got, len);
		return -1;
	}
	memcpy(&s, b, len < 4 ? len : 4);
	if (len >= 4 && s != seq) {
		fprintf(stderr, "datagram %u: number %u\n", seq, s);
		return -1;
	}
	for (size_t i = 4; i < len; i++)
		if (b[i] != pat(seq, i)) {
			fprintf(stderr, "datagram %u: byte %zu is %02x, want %02x\n", seq, i, b[i],
				pat(seq, i));
			return -1;
		}
	return 0;
}

static int server(void)
{
	uint8_t buf[4096];
	int s = rsocket(AF_INET, SOCK_DGRAM, 0);

	if (s < 0 || rbind(s, (struct sockaddr *)&srv, sizeof(srv))) {
		perror("server rsocket/rbind");
		return 1;
	}
	for (;;) {
		struct sockaddr_in from;
		socklen_t fl = sizeof(from);
		ssize_t n = rrecvfrom(s, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl);

		if (n < 0) {
			perror("server rrecvfrom");
			return 1;
		}
		if (fl != sizeof(from) || from.sin_family != AF_INET) {
			fprintf(stderr, "server: a sender address of %u bytes\n", fl);
			return 1;
		}
		if (rsendto(s, buf, (size_t)n, 0, (struct sockaddr *)&from, fl) != n) {
			perror("server rsendto");
			return 1;
		}
		if (n == 1)
			break;
	}
	/* the last echo leaves before the socket goes */
	usleep(200000);
	rclose(s);
	return 0;
}

static void *server_thread(void *arg)
{
	(void)arg;
	return (void *)(intptr_t)server();
}

static int wait_in(int s)
{
	struct pollfd p = { .fd = s, .events = POLLIN };
	int r = rpoll(&p, 1, 5000);

	if (r <= 0 || !(p.revents & POLLIN)) {
		fprintf(stderr, "rpoll: %d revents %x (%s)\n", r, p.revents, strerror(errno));
		return -1;
	}
	return 0;
}

static size_t len_of(uint32_t seq) { return 2 + (seq * 37) % (MAX_DGRAM - 1); }

/* rsendto / rrecvfrom, sender checked */
static int round_to(int s, uint32_t seq)
{
	uint8_t out[MAX_DGRAM], in[4096];
	struct sockaddr_in from;
	socklen_t fl = sizeof(from);
	size_t len = len_of(seq);
	ssize_t n;

	fill(out, seq, len);
	if (rsendto(s, out, len, 0, (struct sockaddr *)&srv, sizeof(srv)) != (ssize_t)len) {
		fprintf(stderr, "rsendto %u: %s\n", seq, strerror(errno));
		return -1;
	}
	if (wait_in(s))
		return -1;
	n = rrecvfrom(s, in, sizeof(in), 0, (struct sockaddr *)&from, &fl);
	if (n < 0) {
		perror("rrecvfrom");
		return -1;
	}
	if (fl != sizeof(from) || from.sin_port != srv.sin_port ||
	    from.sin_addr.s_addr != srv.sin_addr.s_addr) {
		fprintf(stderr, "datagram %u from %s:%u\n", seq, inet_ntoa(from.sin_addr),
			ntohs(from.sin_port));
		return -1;
	}
	return check(in, (size_t)n, seq, len);
}

/* connected: rsend / rrecv, or rsendmsg / rrecvmsg in two pieces */
static int round_conn(int s, uint32_t seq, bool msg)
{
	uint8_t out[MAX_DGRAM], in[4096];
	size_t len = len_of(seq);
	ssize_t n;

	fill(out, seq, len);
	if (msg) {
		struct iovec iov[2] = { { out, len / 3 }, { out + len / 3, len - len / 3 } };
		struct iovec rio[2] = { { in, 7 }, { in + 7, sizeof(in) - 7 } };
		struct msghdr m = { .msg_iov = iov, .msg_iovlen = 2 };

		if (rsendmsg(s, &m, 0) != (ssize_t)len)
			return fprintf(stderr, "rsendmsg %u: %s\n", seq, strerror(errno)), -1;
		if (wait_in(s))
			return -1;
		m.msg_iov = rio;
		n = rrecvmsg(s, &m, 0);
	} else {
		if (rsend(s, out, len, 0) != (ssize_t)len)
			return fprintf(stderr, "rsend %u: %s\n", seq, strerror(errno)), -1;
		if (wait_in(s))
			return -1;
		n = rrecv(s, in, sizeof(in), 0);
	}
	if (n < 0)
		return perror("rrecv"), -1;
	return check(in, (size_t)n, seq, len);
}

static int edges(int s)
{
	uint8_t big[4096] = { 0 }, in[64];
	uint32_t seq = 0xabcd;
	ssize_t n;

	if (rsend(s, big, sizeof(big), 0) != -1 || errno != EMSGSIZE)
		return fprintf(stderr, "a 4096-byte datagram: not EMSGSIZE\n"), -1;
	if (rrecv(s, in, sizeof(in), MSG_DONTWAIT) != -1 || (errno != EAGAIN && errno != EWOULDBLOCK))
		return fprintf(stderr, "an empty non-blocking rrecv: not EAGAIN\n"), -1;
	fill(big, seq, 40);
	if (rsend(s, big, 40, 0) != 40 || wait_in(s))
		return -1;
	n = rrecv(s, in, 8, MSG_PEEK);
	if (n != 8 || check(in, 4, seq, 4))
		return fprintf(stderr, "MSG_PEEK: %zd\n", n), -1;
	n = rrecv(s, in, sizeof(in), 0);
	return check(in, (size_t)n, seq, 40);
}

static int client(void)
{
	int s = rsocket(AF_INET, SOCK_DGRAM, 0), c;
	uint32_t seq;

	if (s < 0)
		return perror("client rsocket"), 1;
	for (seq = 1; seq <= nmsg; seq++)
		if (round_to(s, seq))
			return 1;
	rclose(s);
	c = rsocket(AF_INET, SOCK_DGRAM, 0);
	if (c < 0 || rconnect(c, (struct sockaddr *)&srv, sizeof(srv)))
		return perror("client rconnect"), 1;
	for (; seq <= 2 * nmsg; seq++)
		if (round_conn(c, seq, seq & 1))
			return 1;
	if (edges(c))
		return 1;
	/* the end: a 1-byte datagram, echoed */
	if (rsend(c, "x", 1, 0) != 1 || wait_in(c))
		return 1;
	rclose(c);
	printf("ok %u datagrams\n", 2 * nmsg + 2);
	return 0;
}

int main(int argc, char **argv)
{
	pthread_t t;
	void *r;
	int ret;

	if (argc != 5) {
		fprintf(stderr, "usage: cm_rsdgram server|client|both ADDR PORT N\n");
		return 2;
	}
	srv.sin_family = AF_INET;
	srv.sin_port = htons((uint16_t)atoi(argv[3]));
	if (inet_pton(AF_INET, argv[2], &srv.sin_addr) != 1)
		return 2;
	nmsg = (unsigned int)atoi(argv[4]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(argv[1], "server"))
		return server();
	if (!strcmp(argv[1], "client"))
		return client();
	pthread_create(&t, NULL, server_thread, NULL);
	usleep(200000);
	ret = client();
	pthread_join(t, &r);
	return ret || r;
}
