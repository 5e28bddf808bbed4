/*
 * cm_rsbad: a peer that breaks rdma-core's rsocket protocol, and the
 * rsocket that must survive it (issue 22).
 *
 *   cm_rsbad victim ADDR PORT [HOLD_MS]
 *       an rsocket server (our librdmacm's rsocket API): accepts one
 *       connection, polls it without reading for HOLD_MS (so the queue
 *       the peer fills is not drained), then reads until end of stream or
 *       error; prints
 *       "victim: error ERRNO-NAME after N bytes" or "victim: end of
 *       stream after N bytes" and exits 0 (a verdict is the test's).
 *   cm_rsbad liar MODE ADDR PORT
 *       connects with a valid rs_conn_data (so the victim accepts), then:
 *         big      RS_OP_DATA claiming 256 MiB, more than the victim's buffer
 *         op       an immediate with a reserved op (5)
 *         send     a SEND without immediate data
 *         credits  one-byte RS_OP_DATA messages, 8 more than the credits
 *                  the victim's private data gave, never waiting for more
 *         gone     8 valid bytes, then the process ends without a word
 *       and then waits (up to 30 s) for the victim to drop the connection.
 *
 * The liar uses the RDMA CM and verbs directly; its byte layouts are those
 * of rsocket.h's rs_conn_data and the immediate-data format.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <rdma/rsocket.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct bad_sge {
	uint64_t addr;
	uint32_t key;
	uint32_t length;
};

struct bad_conn {
	uint8_t version, flags;
	uint16_t credits;
	uint8_t reserved[3];
	uint8_t iomap_size;
	struct bad_sge target_sgl, data_buf;
};

#define MSG(op, data) (((uint32_t)(op) << 29) | (uint32_t)(data))

static int victim(const char *addr, const char *port, int hold_ms)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *res;
	char buf[4096];
	long total = 0;
	int ls, s, one = 1;
	ssize_t n;

	if (getaddrinfo(addr, port, &hints, &res))
		return 2;
	ls = rsocket(AF_INET, SOCK_STREAM, 0);
	if (ls < 0 || rsetsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    rbind(ls, res->ai_addr, res->ai_addrlen) || rlisten(ls, 1)) {
		perror("victim: listen");
		return 2;
	}
	s = raccept(ls, NULL, NULL);
	if (s < 0) {
		perror("victim: raccept");
		return 2;
	}
	for (int t = 0; t < hold_ms; t += 100) {
		struct pollfd pfd = { .fd = s, .events = POLLIN };

		if (rpoll(&pfd, 1, 100) < 0)
			break;
		if (pfd.revents & (POLLERR | POLLHUP))
			break;
		usleep(100000);
	}
	for (;;) {
		n = rrecv(s, buf, sizeof(buf), 0);
		if (n > 0) {
			total += n;
			continue;
		}
		if (n == 0)
			printf("victim: end of stream after %ld bytes\n", total);
		else
			printf("victim: error %s after %ld bytes\n",
			       errno == EPROTO ? "EPROTO" : strerror(errno), total);
		break;
	}
	fflush(stdout);
	rclose(s);
	rclose(ls);
	freeaddrinfo(res);
	return 0;
}

static int post(struct rdma_cm_id *id, enum ibv_wr_opcode op, uint32_t imm, struct ibv_sge *sge,
		uint64_t raddr, uint32_t rkey)
{
	struct ibv_send_wr wr = {
		.sg_list = sge,
		.num_sge = sge ? 1 : 0,
		.opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
		.imm_data = htobe32(imm),
		.wr.rdma = { .remote_addr = raddr, .rkey = rkey },
	}, *bad;

	return ibv_post_send(id->qp, &wr, &bad);
}

/* Wait for one send completion (any status), up to 30 s. */
static int reap(struct rdma_cm_id *id)
{
	struct ibv_wc wc;
	time_t end = time(NULL) + 30;
	int n;

	while ((n = ibv_poll_cq(id->send_cq, 1, &wc)) == 0 && time(NULL) < end)
		usleep(100);
	return n == 1 ? (int)wc.status : -1;
}

static int liar(const char *mode, const char *addr, const char *port)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *res;
	struct ibv_qp_init_attr attr = {
		.cap = { .max_send_wr = 1024, .max_recv_wr = 64, .max_send_sge = 1,
			 .max_recv_sge = 1, .max_inline_data = 64 },
		.sq_sig_all = 1,
		.qp_type = IBV_QPT_RC,
	};
	struct rdma_conn_param param = { .flow_control = 1, .retry_count = 7, .rnr_retry_count = 7 };
	static uint8_t tbuf[4096] __attribute__((aligned(4096)));
	static uint8_t rbuf[65536] __attribute__((aligned(4096)));
	struct ibv_mr *tmr, *rmr;
	struct bad_conn c, peer;
	struct rdma_cm_id *id;
	struct ibv_sge sge;
	uint32_t half, credits, i;
	int ret = 0;

	if (rdma_getaddrinfo(addr, port, &hints, &res)) {
		perror("liar: rdma_getaddrinfo");
		return 2;
	}
	if (rdma_create_ep(&id, res, NULL, &attr)) {
		perror("liar: rdma_create_ep");
		return 2;
	}
	rdma_freeaddrinfo(res); /* (LeakSanitizer: with SOF_BUILD=build-asan) */
	tmr = rdma_reg_write(id, tbuf, sizeof(tbuf));
	rmr = rdma_reg_write(id, rbuf, sizeof(rbuf));
	if (!tmr || !rmr) {
		perror("liar: reg");
		return 2;
	}
	for (i = 0; i < 64; i++) {
		struct ibv_recv_wr wr = { .wr_id = i }, *bad;

		ibv_post_recv(id->qp, &wr, &bad);
	}
	memset(&c, 0, sizeof(c));
	c.version = 1;
	c.flags = 2; /* iomap; little-endian */
	c.credits = htobe16(64);
	c.target_sgl.addr = htobe64((uintptr_t)tbuf);
	c.target_sgl.length = htobe32(2);
	c.target_sgl.key = htobe32(tmr->rkey);
	c.data_buf.addr = htobe64((uintptr_t)rbuf);
	c.data_buf.length = htobe32(sizeof(rbuf) / 2);
	c.data_buf.key = htobe32(rmr->rkey);
	param.private_data = &c;
	param.private_data_len = sizeof(c);
	if (rdma_connect(id, &param)) {
		perror("liar: rdma_connect");
		return 2;
	}
	if (!id->event || id->event->param.conn.private_data_len < sizeof(peer)) {
		fprintf(stderr, "liar: no rsocket private data in the REP\n");
		return 2;
	}
	memcpy(&peer, id->event->param.conn.private_data, sizeof(peer));
	half = be32toh(peer.data_buf.length);
	credits = be16toh(peer.credits);
	printf("liar: connected, victim grants %u bytes and %u credits\n", half, credits);
	fflush(stdout);

	sge.addr = (uintptr_t)rbuf;
	sge.lkey = rmr->lkey;
	sge.length = 8;
	if (!strcmp(mode, "big")) {
		ret = post(id, IBV_WR_RDMA_WRITE_WITH_IMM, MSG(0, 1u << 28), NULL,
			   be64toh(peer.data_buf.addr), be32toh(peer.data_buf.key));
	} else if (!strcmp(mode, "op")) {
		ret = post(id, IBV_WR_RDMA_WRITE_WITH_IMM, MSG(5, 0), NULL,
			   be64toh(peer.data_buf.addr), be32toh(peer.data_buf.key));
	} else if (!strcmp(mode, "send")) {
		ret = post(id, IBV_WR_SEND, 0, &sge, 0, 0);
	} else if (!strcmp(mode, "credits")) {
		sge.length = 1;
		for (i = 0; i < credits + 8 && !ret; i++)
			ret = post(id, IBV_WR_RDMA_WRITE_WITH_IMM, MSG(0, 1), &sge,
				   be64toh(peer.data_buf.addr) + i, be32toh(peer.data_buf.key));
	} else if (!strcmp(mode, "gone")) {
		memset(rbuf, 'x', 8);
		ret = post(id, IBV_WR_RDMA_WRITE_WITH_IMM, MSG(0, 8), &sge,
			   be64toh(peer.data_buf.addr), be32toh(peer.data_buf.key));
		if (!ret)
			printf("liar: sent 8 bytes, completion status %d; leaving\n", reap(id));
		fflush(stdout);
		_exit(0);
	} else {
		fprintf(stderr, "liar: unknown mode %s\n", mode);
		return 2;
	}
	if (ret) {
		fprintf(stderr, "liar: post failed: %s\n", strerror(ret));
		return 2;
	}
	/* the victim should drop us: a completion with an error, or a
	 * disconnect (the id's own event channel, read without waiting);
	 * either way we are done within 30 s */
	if (id->channel)
		fcntl(id->channel->fd, F_SETFL, fcntl(id->channel->fd, F_GETFL) | O_NONBLOCK);
	for (i = 0; i < 30 * 10; i++) {
		struct rdma_cm_event *ev;
		struct ibv_wc wc;

		if (ibv_poll_cq(id->send_cq, 1, &wc) == 1 && wc.status != IBV_WC_SUCCESS) {
			printf("liar: completion status %d\n", wc.status);
			break;
		}
		if (id->channel && !rdma_get_cm_event(id->channel, &ev)) {
			enum rdma_cm_event_type type = ev->event;

			rdma_ack_cm_event(ev);
			if (type == RDMA_CM_EVENT_DISCONNECTED) {
				printf("liar: disconnected by the victim\n");
				break;
			}
		}
		usleep(100000);
	}
	fflush(stdout);
	rdma_disconnect(id);
	return 0;
}

int main(int argc, char **argv)
{
	if ((argc == 4 || argc == 5) && !strcmp(argv[1], "victim"))
		return victim(argv[2], argv[3], argc == 5 ? atoi(argv[4]) : 0);
	if (argc == 5 && !strcmp(argv[1], "liar"))
		return liar(argv[2], argv[3], argv[4]);
	fprintf(stderr, "usage: cm_rsbad victim ADDR PORT [HOLD_MS] | liar MODE ADDR PORT\n");
	return 2;
}
