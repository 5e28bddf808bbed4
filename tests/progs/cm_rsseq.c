/*
 * cm_rsseq ADDR PORT N: a framed, numbered stream over a stream rsocket
 * both ways, checked byte by byte (issue 22: sockperf's ping-pong once got
 * a message it never sent). One process, through our librdmacm's rsocket
 * API: a client thread connects and sends its first messages before the
 * main thread's raccept (the listener's backlog answers, the data waits in
 * the accepted socket). Each message is a header (length, sequence number)
 * and a body whose every byte is a function of both; lengths vary from 8
 * bytes to 5 KiB so that messages wrap the halves of the receive buffer.
 * The server reads each message in a different way by its number: header
 * then body, MSG_PEEK of (what came of) the header first, MSG_WAITALL, or in small pieces,
 * and echoes it; the client sends from one thread while another reads the
 * echoes (both halves of the socket busy at once, as the server's are),
 * and checks each echo is the next number with the right bytes. Prints
 * "ok N messages" and exits 0, or the first wrong message and exits 1.
 */
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <rdma/rsocket.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_MSG 5120

struct hdr {
	uint32_t len; /* whole message, header included */
	uint32_t seq;
};

static struct addrinfo *res;
static unsigned int nmsg;
static int cfd = -1;
static volatile bool failed;

static uint32_t msg_len(uint32_t seq)
{
	static const uint32_t sizes[] = { 8, 14, 9, 100, 1500, 13, 4096, 37, 5120, 200, 8, 2047 };

	return sizes[(seq * 7 + seq / 13) % (sizeof(sizes) / sizeof(sizes[0]))];
}

static uint8_t body_byte(uint32_t seq, uint32_t i)
{
	return (uint8_t)(seq * 131 + i * 7 + (i >> 8));
}

static void fill(uint8_t *buf, uint32_t seq)
{
	struct hdr h = { .len = msg_len(seq), .seq = seq };

	memcpy(buf, &h, sizeof(h));
	for (uint32_t i = sizeof(h); i < h.len; i++)
		buf[i] = body_byte(seq, i);
}

/* The message at buf is message seq, whole. */
static bool check(const char *who, const uint8_t *buf, uint32_t seq)
{
	struct hdr h;

	memcpy(&h, buf, sizeof(h));
	if (h.seq != seq || h.len != msg_len(seq)) {
		fprintf(stderr, "cm_rsseq: %s: expected message %u (%u bytes), got %u (%u bytes)\n",
			who, seq, msg_len(seq), h.seq, h.len);
		return false;
	}
	for (uint32_t i = sizeof(h); i < h.len; i++) {
		if (buf[i] != body_byte(seq, i)) {
			fprintf(stderr, "cm_rsseq: %s: message %u byte %u: expected 0x%02x, got 0x%02x\n",
				who, seq, i, body_byte(seq, i), buf[i]);
			return false;
		}
	}
	return true;
}

static bool send_all(int fd, const uint8_t *buf, size_t len)
{
	while (len) {
		ssize_t n = rsend(fd, buf, len, 0);

		if (n <= 0) {
			perror("cm_rsseq: rsend");
			return false;
		}
		buf += n;
		len -= (size_t)n;
	}
	return true;
}

/* Read exactly len bytes in pieces of at most piece bytes. */
static bool recv_all(int fd, uint8_t *buf, size_t len, size_t piece, int flags)
{
	while (len) {
		ssize_t n = rrecv(fd, buf, len < piece ? len : piece, flags);

		if (n <= 0) {
			fprintf(stderr, "cm_rsseq: rrecv: %s\n", n ? strerror(errno) : "end of stream");
			return false;
		}
		buf += n;
		len -= (size_t)n;
	}
	return true;
}

/* The server's read of message seq, in one of four ways. */
static bool server_read(int fd, uint8_t *buf, uint32_t seq)
{
	struct hdr h;
	ssize_t n;

	switch (seq % 4) {
	case 0: /* header, then body */
		if (!recv_all(fd, buf, sizeof(h), sizeof(h), 0))
			return false;
		break;
	case 1: /* peek at the header (what has come of it), then read it:
		 * waiting for a whole header with MSG_PEEK could wait for
		 * ever, as the rest may need the room the peeked bytes hold */
		n = rrecv(fd, &h, sizeof(h), MSG_PEEK);
		if (n <= 0) {
			perror("cm_rsseq: rrecv MSG_PEEK");
			return false;
		}
		if (!recv_all(fd, buf, sizeof(h), sizeof(h), 0))
			return false;
		if (memcmp(&h, buf, (size_t)n)) {
			fprintf(stderr, "cm_rsseq: server: MSG_PEEK of message %u differs from the read\n",
				seq);
			return false;
		}
		break;
	case 2: /* MSG_WAITALL */
		n = rrecv(fd, buf, sizeof(h), MSG_WAITALL);
		if (n != sizeof(h)) {
			perror("cm_rsseq: rrecv MSG_WAITALL");
			return false;
		}
		break;
	default: /* in small pieces */
		if (!recv_all(fd, buf, sizeof(h), 3, 0))
			return false;
		break;
	}
	memcpy(&h, buf, sizeof(h));
	if (h.len < sizeof(h) || h.len > MAX_MSG) {
		fprintf(stderr, "cm_rsseq: server: message %u: bad length %u (seq %u)\n", seq, h.len,
			h.seq);
		return false;
	}
	if (seq % 4 == 2) {
		n = rrecv(fd, buf + sizeof(h), h.len - sizeof(h), MSG_WAITALL);
		return n == (ssize_t)(h.len - sizeof(h)) || h.len == sizeof(h);
	}
	return recv_all(fd, buf + sizeof(h), h.len - sizeof(h), seq % 4 == 3 ? 61 : MAX_MSG, 0);
}

static void *client_sender(void *arg)
{
	uint8_t *buf = malloc(MAX_MSG);

	(void)arg;
	for (uint32_t seq = 0; buf && seq < nmsg && !failed; seq++) {
		fill(buf, seq);
		if (!send_all(cfd, buf, msg_len(seq))) {
			failed = true;
			break;
		}
	}
	free(buf);
	return NULL;
}

/* Connect, then send (one thread) and read the echoes (this one). */
static void *client(void *arg)
{
	uint8_t *buf = malloc(MAX_MSG);
	pthread_t t;

	(void)arg;
	cfd = rsocket(AF_INET, SOCK_STREAM, 0);
	if (!buf || cfd < 0 || rconnect(cfd, res->ai_addr, res->ai_addrlen)) {
		perror("cm_rsseq: rconnect");
		failed = true;
		return NULL;
	}
	if (pthread_create(&t, NULL, client_sender, NULL)) {
		failed = true;
		return NULL;
	}
	for (uint32_t seq = 0; seq < nmsg && !failed; seq++) {
		if (!recv_all(cfd, buf, sizeof(struct hdr), sizeof(struct hdr), 0) ||
		    !recv_all(cfd, buf + sizeof(struct hdr),
			      msg_len(seq) - sizeof(struct hdr), MAX_MSG, 0) ||
		    !check("client", buf, seq))
			failed = true;
	}
	pthread_join(t, NULL);
	free(buf);
	return NULL;
}

int main(int argc, char **argv)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	uint8_t *buf = malloc(MAX_MSG);
	pthread_t ct;
	int lfd, sfd;

	if (argc != 4 || !buf) {
		fprintf(stderr, "usage: cm_rsseq ADDR PORT N\n");
		return 2;
	}
	nmsg = (unsigned int)strtoul(argv[3], NULL, 0);
	if (getaddrinfo(argv[1], argv[2], &hints, &res))
		return 2;
	lfd = rsocket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0 || rbind(lfd, res->ai_addr, res->ai_addrlen) || rlisten(lfd, 4)) {
		perror("cm_rsseq: listen");
		return 1;
	}
	if (pthread_create(&ct, NULL, client, NULL))
		return 1;
	usleep(200000); /* the client's first messages come before raccept */
	sfd = raccept(lfd, NULL, NULL);
	if (sfd < 0) {
		perror("cm_rsseq: raccept");
		failed = true;
	}
	for (uint32_t seq = 0; sfd >= 0 && seq < nmsg && !failed; seq++) {
		if (!server_read(sfd, buf, seq) || !check("server", buf, seq) ||
		    !send_all(sfd, buf, msg_len(seq)))
			failed = true;
	}
	pthread_join(ct, NULL);
	if (!failed)
		printf("ok %u messages\n", nmsg);
	if (sfd >= 0)
		rclose(sfd);
	if (cfd >= 0)
		rclose(cfd);
	rclose(lfd);
	freeaddrinfo(res);
	free(buf);
	return failed ? 1 : 0;
}
