/*
 * cm_sdpbad: a peer that breaks the SDP protocol (IBTA Annex A4), and a
 * socket server that must survive it under libsdp.so (issue 22).
 *
 *   cm_sdpbad victim ADDR PORT [HOLD_MS]
 *       a plain socket server (run it with LD_PRELOAD=libsdp.so and a
 *       `use sdp` rule): accepts one connection, waits HOLD_MS, then reads
 *       until end of stream or error; prints "victim: error ERRNO-NAME
 *       after N bytes" or "victim: end of stream after N bytes", exits 0.
 *   cm_sdpbad liar MODE ADDR PORT
 *       an SDP peer on the RDMA CM and verbs directly (A4's service ID
 *       0x1PPPP on an AF_IB address, RDMA_PS_IB, RC, as libsdp): connects with a valid Hello (or not, `hello`), then
 *         len      a Data message whose BSDH Len is not what arrives
 *         seq      a valid Data message of 8 bytes, then one skipping MSeq
 *         ack      MSeqAck of a message the victim never sent
 *         bufs     Bufs 60000, more buffers than anyone posts
 *         credits  Bufs 0 (the victim cannot grant more), then one-byte
 *                  Data messages, 8 beyond the 16 the HelloAck granted
 *         big      a Data message larger than the victim's buffers
 *         mid      a ChRcvBuf (a buffer-size change, which the victim does
 *                  not speak)
 *         disconn  8 bytes, DisConn, then more data
 *         abort    8 bytes, then AbortConn
 *         gone     8 bytes, then the process ends without a word
 *         hello    a Hello of SDP major version 1: the victim rejects it
 *         zcopy    a SrcAvail of 8 bytes of its memory: the victim READs
 *                  them, answers RdmaRdCompl, then gets DisConn
 *         zbig     a SrcAvail of 1 MiB, more than the victim reads at once
 *         ztwice   a second SrcAvail before the first's RdmaRdCompl
 *         rdcompl  a RdmaRdCompl though the victim offered nothing
 *         wrcompl  a RdmaWrCompl though the victim offered no SinkAvail
 *         zcancel  a SrcAvail of 8 bytes, then SrcAvailCancel: the victim
 *                  answers RdmaRdCompl (its READ was posted), then DisConn
 *         cancel   a SrcAvailCancel though no SrcAvail is outstanding
 *         wcopy    write mode (the liar's Hello says MaxAdverts 1): a
 *                  SrcAvail of 8 bytes, then the victim, as data sink,
 *                  offers a SinkAvail; 8 bytes RDMA WRITTEN into it and a
 *                  RdmaWrCompl of 8, then DisConn: 16 bytes in all
 *         wbig     as wcopy, but a RdmaWrCompl of 1 MiB, more than the
 *                  SinkAvail offered
 *       prints "liar: rejected" when the connection was refused, and
 *       waits (up to 30 s) for the victim to drop the connection.
 * The liar's byte layouts are written here from A4, not shared with sdp/.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/ib.h>
#include <netdb.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct bsdh {
	uint8_t mid, flags;
	uint16_t bufs;
	uint32_t len, mseq, mseq_ack;
} __attribute__((packed));

struct hello {
	struct bsdh h;
	uint8_t majv_minv, ipv_cap, rsvd1, max_adverts;
	uint32_t desremrcvsz, localrcvsz;
	uint16_t port, rsvd2;
	uint8_t src_addr[16], dst_addr[16]; /* IPv4 in the last 4 bytes */
} __attribute__((packed));

#define NBUF 16
#define BUFSZ (128 * 1024)

static int victim(const char *addr, const char *port, int hold_ms)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *res;
	char buf[4096];
	long total = 0;
	int ls, s, one = 1;
	ssize_t n;

	if (getaddrinfo(addr, port, &hints, &res))
		return 2;
	ls = socket(AF_INET, SOCK_STREAM, 0);
	if (ls < 0 || setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(ls, res->ai_addr, res->ai_addrlen) || listen(ls, 1)) {
		perror("victim: listen");
		return 2;
	}
	freeaddrinfo(res);
	s = accept(ls, NULL, NULL);
	if (s < 0) {
		perror("victim: accept");
		return 2;
	}
	usleep((useconds_t)hold_ms * 1000);
	while ((n = read(s, buf, sizeof(buf))) > 0)
		total += n;
	if (n < 0)
		printf("victim: error %s after %ld bytes\n", strerrorname_np(errno), total);
	else
		printf("victim: end of stream after %ld bytes\n", total);
	fflush(stdout);
	close(s);
	close(ls);
	return 0;
}

static struct rdma_cm_id *id;
static struct ibv_cq *cq;
static struct ibv_mr *mr;
static uint8_t *mem;
static uint32_t mseq;

static uint8_t seen[256]; /* the MIDs of messages received */
static size_t seen_at[256]; /* where the last of each is in mem */
static int keep_payload;    /* msg() sends the payload already in place */

static void saw(const struct ibv_wc *wc)
{
	size_t at = (size_t)(wc->wr_id / 2 - 1) * BUFSZ;

	if (wc->status == IBV_WC_SUCCESS && wc->opcode == IBV_WC_RECV) {
		seen[mem[at]] = 1;
		seen_at[mem[at]] = at;
	}
}

static int wait_send(void)
{
	struct ibv_wc wc;
	time_t end = time(NULL) + 10;

	while (time(NULL) < end) {
		int n = ibv_poll_cq(cq, 1, &wc);

		if (n < 0)
			return -1;
		if (n && (wc.wr_id & 1))
			return wc.status == IBV_WC_SUCCESS ? 0 : -1;
		if (n)
			saw(&wc);
		else
			usleep(100);
	}
	return -1;
}

/* wait (10 s at most) for a message with MID from the victim */
static int wait_mid(uint8_t mid)
{
	struct ibv_wc wc;
	time_t end = time(NULL) + 10;

	while (!seen[mid] && time(NULL) < end) {
		int n = ibv_poll_cq(cq, 1, &wc);

		if (n < 0)
			return -1;
		if (n)
			saw(&wc);
		else
			usleep(100);
	}
	return seen[mid] ? 0 : -1;
}

/* one message from the send half of mem: a BSDH as given, payload bytes */
static int msg(uint8_t mid, uint16_t bufs, uint32_t len_field, uint32_t seq, uint32_t ack,
	       uint32_t payload)
{
	uint8_t *b = mem + (size_t)NBUF * BUFSZ;
	struct bsdh h = { .mid = mid, .bufs = htons(bufs), .len = htonl(len_field),
			  .mseq = htonl(seq), .mseq_ack = htonl(ack) };
	struct ibv_sge sge = { .addr = (uintptr_t)b, .length = 16 + payload, .lkey = mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;

	memcpy(b, &h, sizeof(h));
	if (!keep_payload && (mid != 0xfe || payload != 16))
		memset(b + 16, 'x', payload);
	if (ibv_post_send(id->qp, &wr, &bad))
		return -1;
	return wait_send();
}

/* a valid Data message of n bytes */
static int data(uint32_t n) { return msg(0xff, NBUF, 16 + n, ++mseq, 0, n); }

/* a SrcAvail of LEN bytes of 'z' at the start of the send half of mem */
static int srcavail(uint32_t len)
{
	uint8_t *src = mem + (size_t)NBUF * BUFSZ + 4096;
	struct { uint32_t len, rkey; uint64_t va; } __attribute__((packed)) a = {
		htonl(len), htonl(mr->rkey), htobe64((uintptr_t)src) };

	memset(src, 'z', 8);
	memcpy(mem + (size_t)NBUF * BUFSZ + 16, &a, sizeof(a));
	return msg(0xfe, NBUF, 32, ++mseq, 0, 16);
}

/* write mode: LEN bytes of 'w' RDMA WRITTEN into the victim's SinkAvail
 * (Len, R_Key, VA after its BSDH), then a RdmaWrCompl saying CLAIM */
static int write_sink(uint32_t len, uint32_t claim)
{
	uint8_t *src = mem + (size_t)NBUF * BUFSZ + 8192;
	struct { uint32_t len, rkey; uint64_t va; } __attribute__((packed)) a;
	uint32_t c = htonl(claim);
	struct ibv_sge sge = { .addr = (uintptr_t)src, .length = len, .lkey = mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED }, *bad;
	int ret;

	memcpy(&a, mem + seen_at[0xfd] + 16, sizeof(a));
	if (ntohl(a.len) < len)
		return -1;
	memset(src, 'w', len);
	wr.wr.rdma.remote_addr = be64toh(a.va);
	wr.wr.rdma.rkey = ntohl(a.rkey);
	if (ibv_post_send(id->qp, &wr, &bad) || wait_send())
		return -1;
	memcpy(mem + (size_t)NBUF * BUFSZ + 16, &c, 4);
	keep_payload = 1;
	ret = msg(0x05, NBUF, 20, ++mseq, 0, 4);
	keep_payload = 0;
	return ret;
}

static int liar(const char *mode, const char *addr, const char *port)
{
	uint16_t p = (uint16_t)atoi(port);
	struct sockaddr_ib dst = { .sib_family = AF_IB, .sib_pkey = htobe16(0xffff),
				   .sib_sid = htobe64(0x10000ull | p), .sib_sid_mask = htobe64(~0ull) };
	struct rdma_addrinfo rai = { .ai_family = AF_IB, .ai_qp_type = IBV_QPT_RC,
				     .ai_port_space = RDMA_PS_IB,
				     .ai_dst_addr = (struct sockaddr *)&dst, .ai_dst_len = sizeof(dst) };
	struct ibv_qp_init_attr attr = { .qp_type = IBV_QPT_RC,
					 .cap = { .max_send_wr = 64, .max_recv_wr = NBUF,
						  .max_send_sge = 1, .max_recv_sge = 1 } };
	struct rdma_conn_param param = { .retry_count = 7, .rnr_retry_count = 7,
					 .responder_resources = 1, .initiator_depth = 1 };
	struct hello hh = { .h = { .mid = 0, .bufs = htons(NBUF), .len = htonl(sizeof(hh)) },
			    .majv_minv = 0x22, .ipv_cap = 0x40,
			    .desremrcvsz = htonl(BUFSZ), .localrcvsz = htonl(BUFSZ) };
	struct rdma_cm_event *ev;
	int i, ret = 0;

	uint32_t ip;

	inet_pton(AF_INET, addr, &ip);
	ib_addr_set(&dst.sib_addr, 0, 0, htobe32(0xffff), ip);
	memcpy(hh.dst_addr + 12, &ip, 4);
	memcpy(hh.src_addr + 12, &ip, 4);
	hh.port = htons(40000);
	if (rdma_create_ep(&id, &rai, NULL, NULL)) {
		perror("liar: rdma_create_ep");
		return 2;
	}
	cq = ibv_create_cq(id->verbs, 128, NULL, NULL, 0);
	mem = calloc(NBUF + 1, BUFSZ);
	struct ibv_pd *pd = ibv_alloc_pd(id->verbs);
	mr = pd && mem ? ibv_reg_mr(pd, mem, (size_t)(NBUF + 1) * BUFSZ,
				   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ) : NULL;
	attr.send_cq = attr.recv_cq = cq;
	if (!cq || !mr || rdma_create_qp(id, pd, &attr)) {
		perror("liar: resources");
		return 2;
	}
	for (i = 0; i < NBUF; i++) {
		struct ibv_sge sge = { .addr = (uintptr_t)(mem + (size_t)i * BUFSZ),
				       .length = BUFSZ, .lkey = mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = 2 + 2 * (uint64_t)i, .sg_list = &sge,
					  .num_sge = 1 }, *bad;

		if (ibv_post_recv(id->qp, &wr, &bad))
			return 2;
	}
	if (!strcmp(mode, "hello"))
		hh.majv_minv = 0x12;
	if (mode[0] == 'w')
		hh.max_adverts = 1; /* write mode: the victim may offer SinkAvails */
	param.private_data = &hh;
	param.private_data_len = sizeof(hh);
	if (rdma_connect(id, &param)) {
		printf("liar: rejected (%s)\n", strerror(errno));
		return 0;
	}
	if (!strcmp(mode, "hello")) {
		printf("liar: accepted a bad Hello\n");
		return 1;
	}
	if (!strcmp(mode, "len"))
		ret = msg(0xff, NBUF, 16 + 100, ++mseq, 0, 8);
	else if (!strcmp(mode, "seq"))
		ret = data(8) || msg(0xff, NBUF, 24, mseq + 2, 0, 8);
	else if (!strcmp(mode, "ack"))
		ret = msg(0xff, NBUF, 24, ++mseq, 77, 8);
	else if (!strcmp(mode, "bufs"))
		ret = msg(0xff, 60000, 24, ++mseq, 0, 8);
	else if (!strcmp(mode, "credits"))
		for (i = 0; i < NBUF + 8 && !ret; i++)
			ret = msg(0xff, 0, 17, ++mseq, 0, 1);
	else if (!strcmp(mode, "big"))
		ret = msg(0xff, NBUF, 16 + 65536 + 100, ++mseq, 0, 65536 + 100);
	else if (!strcmp(mode, "mid"))
		ret = msg(0x0b, NBUF, 16 + 4, ++mseq, 0, 4);
	else if (!strcmp(mode, "wrcompl"))
		ret = msg(0x05, NBUF, 20, ++mseq, 0, 4);
	else if (!strcmp(mode, "cancel"))
		ret = msg(0x08, NBUF, 16, ++mseq, 0, 0);
	else if (!strcmp(mode, "zcancel")) {
		ret = srcavail(8) || msg(0x08, NBUF, 16, ++mseq, 0, 0);
		if (!ret) {
			ret = wait_mid(0x06);
			printf("liar: %s\n", ret ? "no RdmaRdCompl" : "RdmaRdCompl");
			if (!ret)
				ret = msg(0x02, NBUF, 16, ++mseq, 0, 0);
		}
	}
	else if (!strcmp(mode, "wcopy") || !strcmp(mode, "wbig")) {
		ret = srcavail(8) || wait_mid(0xfd);
		printf("liar: %s\n", ret ? "no SinkAvail" : "SinkAvail");
		if (!ret)
			ret = write_sink(8, mode[1] == 'c' ? 8 : 1u << 20);
		if (!ret && mode[1] == 'c')
			ret = wait_mid(0x06) || msg(0x02, NBUF, 16, ++mseq, 0, 0);
	}
	else if (!strcmp(mode, "disconn"))
		ret = data(8) || msg(0x02, NBUF, 16, ++mseq, 0, 0) || data(8);
	else if (!strcmp(mode, "rdcompl"))
		ret = msg(0x06, NBUF, 20, ++mseq, 0, 4);
	else if (!strcmp(mode, "zbig"))
		ret = srcavail(1 << 20);
	else if (!strcmp(mode, "zcopy")) {
		ret = srcavail(8);
		if (!ret) {
			ret = wait_mid(0x06);
			printf("liar: %s\n", ret ? "no RdmaRdCompl" : "RdmaRdCompl");
			if (!ret)
				ret = msg(0x02, NBUF, 16, ++mseq, 0, 0);
		}
	} else if (!strcmp(mode, "ztwice"))
		ret = srcavail(8) || srcavail(8);
	else if (!strcmp(mode, "abort"))
		ret = data(8) || msg(0x03, NBUF, 16, ++mseq, 0, 0);
	else if (!strcmp(mode, "gone")) {
		ret = data(8);
		printf("liar: gone\n");
		fflush(stdout);
		_exit(ret ? 1 : 0);
	} else {
		fprintf(stderr, "liar: unknown mode %s\n", mode);
		return 2;
	}
	printf("liar: %s sent%s\n", mode, ret ? " (a send failed: the victim dropped us)" : "");
	fflush(stdout);
	/* the victim drops the connection: a DREQ, or our QP fails */
	{
		struct rdma_event_channel *ch = rdma_create_event_channel();
		int t;

		/* non-blocking: an event may wait in the library's backlog,
		 * moved from the id's synchronous channel, which poll misses */
		if (!ch || fcntl(ch->fd, F_SETFL, O_NONBLOCK) || rdma_migrate_id(id, ch))
			return 2;
		for (t = 0; t < 3000; t++) {
			if (!rdma_get_cm_event(ch, &ev))
				break;
			usleep(10000);
		}
		if (t < 3000) {
			printf("liar: %s\n", rdma_event_str(ev->event));
			rdma_ack_cm_event(ev);
		} else {
			printf("liar: the victim kept the connection\n");
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 4 && !strcmp(argv[1], "victim"))
		return victim(argv[2], argv[3], argc > 4 ? atoi(argv[4]) : 0);
	if (argc == 5 && !strcmp(argv[1], "liar"))
		return liar(argv[2], argv[3], argv[4]);
	fprintf(stderr, "usage: cm_sdpbad victim ADDR PORT [HOLD_MS] | liar MODE ADDR PORT\n");
	return 2;
}
