/*
 * rpma_check: librpma (Debian's, unmodified) over softofed, a drop-in check.
 *
 *   rpma_check server ADDR PORT   registers 1 MiB (a WRITE destination, READ
 *                                 source and visibility-flush target), sends
 *                                 its descriptor in the connection's private
 *                                 data, then waits for the client to go and
 *                                 checks the pattern the client wrote
 *   rpma_check client ADDR PORT   connects, writes a pattern into the
 *                                 server's region by rpma_write, makes it
 *                                 visible by rpma_flush, reads it back by
 *                                 rpma_read and compares every byte
 *
 * Each side prints "rpma_check: ok" last when all its checks passed; any
 * librpma error is printed with the call that returned it.
 */
#include <librpma.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REGION (1u << 20)

static int fail(const char *what, int ret)
{
	fprintf(stderr, "rpma_check: %s: %s\n", what, rpma_err_2str(ret));
	return 1;
}

static uint8_t pattern(size_t i) { return (uint8_t)(i * 131u + (i >> 12) + 7u); }

/* The next completion of conn's CQ into *wc: 0 or 1. */
static int wait_wc(struct rpma_conn *conn, struct ibv_wc *wc)
{
	struct rpma_cq *cq;
	int ret, n = 0;

	if ((ret = rpma_conn_get_cq(conn, &cq)))
		return fail("rpma_conn_get_cq", ret);
	while (!n) {
		if ((ret = rpma_cq_wait(cq)))
			return fail("rpma_cq_wait", ret);
		ret = rpma_cq_get_wc(cq, 1, wc, &n);
		if (ret == RPMA_E_NO_COMPLETION)
			n = 0;
		else if (ret)
			return fail("rpma_cq_get_wc", ret);
	}
	return 0;
}

/* The next completion succeeded, of opcode op (-1: any): 0 or 1. */
static int wait_one(struct rpma_conn *conn, int op, const char *what)
{
	struct ibv_wc wc;

	if (wait_wc(conn, &wc))
		return 1;
	if (wc.status != IBV_WC_SUCCESS || (op >= 0 && (int)wc.opcode != op)) {
		fprintf(stderr, "rpma_check: %s: status %s, opcode %d\n", what,
			ibv_wc_status_str(wc.status), wc.opcode);
		return 1;
	}
	return 0;
}

static int next_event(struct rpma_conn *conn, enum rpma_conn_event want)
{
	enum rpma_conn_event ev;
	int ret = rpma_conn_next_event(conn, &ev);

	if (ret)
		return fail("rpma_conn_next_event", ret);
	if (ev != want) {
		fprintf(stderr, "rpma_check: connection event %s, want %s\n",
			rpma_utils_conn_event_2str(ev), rpma_utils_conn_event_2str(want));
		return 1;
	}
	return 0;
}

static int server(struct rpma_peer *peer, const char *addr, const char *port)
{
	struct rpma_conn_private_data pdata;
	struct rpma_conn_req *req = NULL;
	struct rpma_mr_local *mr = NULL;
	struct rpma_conn *conn = NULL;
	struct rpma_ep *ep = NULL;
	uint8_t desc[64];
	size_t dsize, bad = 0;
	uint8_t *buf;
	int ret;

	buf = aligned_alloc(4096, REGION);
	if (!buf)
		return 1;
	memset(buf, 0, REGION);
	if ((ret = rpma_mr_reg(peer, buf, REGION,
			       RPMA_MR_USAGE_WRITE_DST | RPMA_MR_USAGE_READ_SRC |
				   RPMA_MR_USAGE_FLUSH_TYPE_VISIBILITY,
			       &mr)))
		return fail("rpma_mr_reg", ret);
	if ((ret = rpma_mr_get_descriptor_size(mr, &dsize)) || dsize > sizeof(desc))
		return fail("rpma_mr_get_descriptor_size", ret);
	if ((ret = rpma_mr_get_descriptor(mr, desc)))
		return fail("rpma_mr_get_descriptor", ret);
	if ((ret = rpma_ep_listen(peer, addr, port, &ep)))
		return fail("rpma_ep_listen", ret);
	printf("rpma_check: listening\n");
	fflush(stdout);
	if ((ret = rpma_ep_next_conn_req(ep, NULL, &req)))
		return fail("rpma_ep_next_conn_req", ret);
	pdata.ptr = desc;
	pdata.len = (uint8_t)dsize;
	if ((ret = rpma_conn_req_connect(&req, &pdata, &conn)))
		return fail("rpma_conn_req_connect", ret);
	if (next_event(conn, RPMA_CONN_ESTABLISHED))
		return 1;
	/* the client writes, flushes, reads back, then disconnects */
	if (next_event(conn, RPMA_CONN_CLOSED))
		return 1;
	for (size_t i = 0; i < REGION; i++)
		bad += buf[i] != pattern(i);
	if (bad) {
		fprintf(stderr, "rpma_check: %zu of %u bytes differ from the pattern\n", bad,
			REGION);
		return 1;
	}
	if ((ret = rpma_conn_disconnect(conn)) || (ret = rpma_conn_delete(&conn)))
		return fail("rpma_conn_disconnect/delete", ret);
	if ((ret = rpma_ep_shutdown(&ep)) || (ret = rpma_mr_dereg(&mr)))
		return fail("rpma_ep_shutdown/mr_dereg", ret);
	free(buf);
	printf("rpma_check: server: %u bytes written by the client, all as expected\n", REGION);
	return 0;
}

static int client(struct rpma_peer *peer, const char *addr, const char *port)
{
	struct rpma_conn_private_data pdata;
	struct rpma_mr_remote *rmr = NULL;
	struct rpma_mr_local *mr = NULL;
	struct rpma_conn_req *req = NULL;
	struct rpma_conn *conn = NULL;
	size_t rsize, bad = 0;
	uint8_t *src, *back;
	int ret;

	src = aligned_alloc(4096, 2 * REGION);
	if (!src)
		return 1;
	back = src + REGION;
	for (size_t i = 0; i < REGION; i++)
		src[i] = pattern(i);
	memset(back, 0, REGION);
	if ((ret = rpma_mr_reg(peer, src, 2 * REGION,
			       RPMA_MR_USAGE_WRITE_SRC | RPMA_MR_USAGE_READ_DST, &mr)))
		return fail("rpma_mr_reg", ret);
	if ((ret = rpma_conn_req_new(peer, addr, port, NULL, &req)))
		return fail("rpma_conn_req_new", ret);
	if ((ret = rpma_conn_req_connect(&req, NULL, &conn)))
		return fail("rpma_conn_req_connect", ret);
	if (next_event(conn, RPMA_CONN_ESTABLISHED))
		return 1;
	if ((ret = rpma_conn_get_private_data(conn, &pdata)) || !pdata.ptr)
		return fail("rpma_conn_get_private_data", ret ? ret : RPMA_E_INVAL);
	if ((ret = rpma_mr_remote_from_descriptor(pdata.ptr, pdata.len, &rmr)))
		return fail("rpma_mr_remote_from_descriptor", ret);
	if ((ret = rpma_mr_remote_get_size(rmr, &rsize)) || rsize != REGION) {
		fprintf(stderr, "rpma_check: remote region of %zu bytes\n", rsize);
		return 1;
	}
	/* in 64 KiB pieces, each unsignaled but the last of the write */
	for (size_t off = 0; off < REGION; off += 65536) {
		int flags =
		    off + 65536 == REGION ? RPMA_F_COMPLETION_ALWAYS : RPMA_F_COMPLETION_ON_ERROR;

		if ((ret = rpma_write(conn, rmr, off, mr, off, 65536, flags, NULL)))
			return fail("rpma_write", ret);
	}
	if (wait_one(conn, IBV_WC_RDMA_WRITE, "rpma_write"))
		return 1;
	if ((ret = rpma_flush(conn, rmr, 0, REGION, RPMA_FLUSH_TYPE_VISIBILITY,
			      RPMA_F_COMPLETION_ALWAYS, NULL)))
		return fail("rpma_flush", ret);
	/* a visibility flush is an RDMA READ (or a FLUSH where the device
	 * offers one): its completion says the data is visible at the target */
	if (wait_one(conn, -1, "rpma_flush"))
		return 1;
	if ((ret = rpma_read(conn, mr, REGION, rmr, 0, REGION, RPMA_F_COMPLETION_ALWAYS, NULL)))
		return fail("rpma_read", ret);
	if (wait_one(conn, IBV_WC_RDMA_READ, "rpma_read"))
		return 1;
	for (size_t i = 0; i < REGION; i++)
		bad += back[i] != pattern(i);
	if (bad) {
		fprintf(stderr, "rpma_check: %zu of %u bytes read back differ\n", bad, REGION);
		return 1;
	}
	if ((ret = rpma_conn_disconnect(conn)))
		return fail("rpma_conn_disconnect", ret);
	if (next_event(conn, RPMA_CONN_CLOSED))
		return 1;
	if ((ret = rpma_conn_delete(&conn)) || (ret = rpma_mr_remote_delete(&rmr)) ||
	    (ret = rpma_mr_dereg(&mr)))
		return fail("rpma_conn_delete/mr_remote_delete/mr_dereg", ret);
	free(src);
	printf("rpma_check: client: wrote %u bytes, flushed, read them back identical\n", REGION);
	return 0;
}

int main(int argc, char **argv)
{
	struct ibv_context *ctx;
	struct rpma_peer *peer;
	int server_side, ret, rc;

	if (argc != 4 || (strcmp(argv[1], "server") && strcmp(argv[1], "client"))) {
		fprintf(stderr, "usage: rpma_check server|client ADDR PORT\n");
		return 2;
	}
	server_side = !strcmp(argv[1], "server");
	if ((ret = rpma_utils_get_ibv_context(
		 argv[2], server_side ? RPMA_UTIL_IBV_CONTEXT_LOCAL : RPMA_UTIL_IBV_CONTEXT_REMOTE,
		 &ctx)))
		return fail("rpma_utils_get_ibv_context", ret);
	if ((ret = rpma_peer_new(ctx, &peer)))
		return fail("rpma_peer_new", ret);
	rc = server_side ? server(peer, argv[2], argv[3]) : client(peer, argv[2], argv[3]);
	if ((ret = rpma_peer_delete(&peer)))
		return fail("rpma_peer_delete", ret);
	if (!rc)
		printf("rpma_check: ok\n");
	return rc;
}
