/*
 * libFuzzer target: the SDP receive path of libsdp.so (sdp/sdp_proto.c,
 * IBTA Annex A4) against a peer that sends anything (issue 22 item 2).
 *
 * One connection's flow state (16 receive buffers) after a Hello exchange.
 * The input is a list of records, each a kind byte and its bytes:
 *   kind & 3 == 0  a message from the peer: with kind bit 2 clear, a
 *                  length byte N then N raw bytes; with bit 2 set, a BSDH
 *                  made valid but for what the next bytes say (MID, Bufs,
 *                  payload length, a wrong MSeq or MSeqAck by bit 3/4 of
 *                  kind) — so the checks past the sequence are reached;
 *                  only while one of our buffers is posted (else it could
 *                  not have arrived);
 *   kind & 3 == 1  we send a message when the peer has a credit for it
 *                  (bit 2: a SrcAvail, bit 3: a RdmaRdCompl when due,
 *                  bit 4: a SinkAvail, bit 5: a RdmaWrCompl when due);
 *   kind & 3 == 2  we repost a receive buffer;
 *   kind & 3 == 3  a Hello and a HelloAck from the next 24 bytes each.
 * After an error the connection is over (as in sdp_conn.c). Checked: no
 * read outside a message (ASan: each is its own allocation of its size),
 * the payload inside the message, and after every accepted message the
 * invariants the sender relies on: credits and the peer's view of ours
 * never negative, at most SDP_MAX_BUFS, sequence numbers in step, adverts
 * within MaxAdverts each way, a SrcAvail's length within our sink.
 *
 * tests/fuzz/run.sh builds it from the files on these lines:
 * FUZZ_SOURCES: tests/fuzz/fuzz_sdp.c sdp/sdp_proto.c
 * FUZZ_INCLUDES: sdp
 * FUZZ_SECS: 4
 */
#include "sdp_wire.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FAIL(...)                                                                                  \
	do {                                                                                       \
		fprintf(stderr, "fuzz_sdp: " __VA_ARGS__);                                         \
		fputc('\n', stderr);                                                               \
		abort();                                                                           \
	} while (0)

static void check(const struct sdp_flow *f)
{
	if (sdp_credits(f) < 0)
		FAIL("credits %d", sdp_credits(f));
	if (sdp_peer_view(f) < 0)
		FAIL("the peer's view of our buffers %d", sdp_peer_view(f));
	if (f->peer_bufs > SDP_MAX_BUFS)
		FAIL("peer bufs %u", f->peer_bufs);
	if (f->rx_posted > f->nbufs)
		FAIL("posted %u of %u", f->rx_posted, f->nbufs);
	if ((int32_t)(f->tx_mseq - f->peer_ack) < 0)
		FAIL("ack %u beyond sent %u", f->peer_ack, f->tx_mseq);
	if (f->src_out > 1 || f->sink_out > SDP_MAX_ADVERTS)
		FAIL("adverts outstanding: ours %u, the peer's %u", f->src_out, f->sink_out);
	if (f->wsink_out > 1 || f->wsink_in > SDP_MAX_ADVERTS)
		FAIL("SinkAvails outstanding: ours %u, the peer's %u", f->wsink_out, f->wsink_in);
}

/* one message from the peer, in an allocation of exactly its size */
static int rx(struct sdp_flow *f, const uint8_t *bytes, size_t len)
{
	uint8_t *msg = malloc(len ? len : 1);
	uint32_t mseq = f->rx_mseq;
	struct sdp_rx out;
	int ret;

	if (!msg)
		return -ENOMEM;
	memcpy(msg, bytes, len);
	f->rx_posted--;
	ret = sdp_rx_msg(f, msg, len, &out);
	free(msg);
	if (ret) {
		if (ret != -EPROTO)
			FAIL("error %d", ret);
		return ret;
	}
	if (f->rx_mseq != mseq + 1)
		FAIL("accepted MSeq %u after %u", f->rx_mseq, mseq);
	if ((size_t)out.off + out.len > len ||
	    ((out.kind == SDP_RX_DATA || out.kind == SDP_RX_SRCAVAIL) &&
	     (size_t)out.off + out.len != len))
		FAIL("payload %u+%u of a %zu-byte message", out.off, out.len, len);
	if (out.kind != SDP_RX_DATA && out.kind != SDP_RX_SRCAVAIL && out.len)
		FAIL("payload in a kind %d message", out.kind);
	if (out.kind == SDP_RX_SRCAVAIL && (!out.zlen || out.zlen > SDP_MAX_ZCOPY))
		FAIL("SrcAvail of %u bytes accepted", out.zlen);
	check(f);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sdp_flow f, g;
	struct sdp_hh hh;
	struct sdp_hah hah;
	static const uint8_t lo4[16] = {[10] = 0xff, [11] = 0xff, [12] = 127, [15] = 1};
	uint8_t sip[16], dip[16], ipv;
	uint16_t sport;
	size_t i = 0;

	sdp_flow_init(&f, 16);
	sdp_hello_fill(&f, &hh, 65536, lo4, 1, lo4);
	f.peer_bufs = 16;
	f.peer_rcvsz = 65536;
	check(&f);
	while (i < size) {
		uint8_t kind = data[i++];

		switch (kind & 3) {
		case 0: {
			uint8_t buf[300];
			size_t n;

			if (!f.rx_posted)
				break;
			if (!(kind & 4)) {
				if (i >= size)
					return 0;
				n = data[i++];
				if (n > size - i)
					n = size - i;
				if (rx(&f, data + i, n))
					return 0;
				i += n;
				break;
			}
			if (size - i < 4)
				return 0;
			struct sdp_bsdh h = {
				.mid = data[i],
				.flags = data[i + 1] & 3,
				.bufs = htons(data[i + 2]),
				.mseq = htonl(f.rx_mseq + 1 + ((kind >> 3) & 1)),
				.mseq_ack = htonl(f.tx_mseq - ((kind & 0x10) ? 0 : data[i + 3] %
						  (f.tx_mseq - f.peer_ack + 1))),
			};
			n = SDP_BSDH_LEN + (data[i + 3] & 0x3f);
			h.len = htonl((uint32_t)n);
			if (kind & 0x20)
				h.len = htonl((uint32_t)n + 1);
			memset(buf, 0xa5, n);
			memcpy(buf, &h, sizeof(h));
			i += 4;
			if (rx(&f, buf, n))
				return 0;
			break;
		}
		case 1: {
			struct sdp_bsdh h;
			uint32_t before = f.tx_mseq;

			uint8_t zmsg[32];

			if (sdp_credits(&f) < 1)
				break;
			/* kind bit 2: our SrcAvail (one at a time); bit 3: the
			 * RdmaRdCompl of the peer's; bit 4: our SinkAvail (one
			 * at a time); bit 5: the RdmaWrCompl of the peer's */
			if ((kind & 0x10) && !f.wsink_out) {
				sdp_sinkavail_fill(&f, zmsg, 4096, 1, 0x1000);
				check(&f);
				break;
			}
			if ((kind & 0x20) && f.wsink_in) {
				sdp_wrcompl_fill(&f, zmsg, 4096);
				check(&f);
				break;
			}
			if ((kind & 4) && !f.src_out) {
				sdp_srcavail_fill(&f, zmsg, 4096, 1, 0x1000);
				check(&f);
				break;
			}
			if ((kind & 8) && f.sink_out) {
				sdp_rdcompl_fill(&f, zmsg, 4096);
				check(&f);
				break;
			}
			sdp_hdr_fill(&f, &h, SDP_MID_DATA, SDP_BSDH_LEN);
			if (f.tx_mseq != before + 1 || ntohl(h.mseq) != f.tx_mseq ||
			    ntohl(h.mseq_ack) != f.rx_mseq || ntohs(h.bufs) != f.rx_posted)
				FAIL("our BSDH: mseq %u ack %u bufs %u", ntohl(h.mseq),
				     ntohl(h.mseq_ack), ntohs(h.bufs));
			check(&f);
			break;
		}
		case 2:
			if (f.rx_posted < f.nbufs)
				f.rx_posted++;
			(void)sdp_want_update(&f);
			check(&f);
			break;
		case 3:
			if (size - i < sizeof(hh) + sizeof(hah))
				return 0;
			sdp_flow_init(&g, 16);
			memcpy(&hh, data + i, sizeof(hh));
			if (!sdp_hello_parse(&g, &hh, sizeof(hh), sip, &sport, dip, &ipv) &&
			    (g.peer_rcvsz < SDP_MIN_RCVSZ || g.peer_rcvsz > SDP_MAX_RCVSZ ||
			     !g.peer_bufs || g.peer_bufs > SDP_MAX_BUFS ||
			     (ipv != SDP_IPV4 && ipv != SDP_IPV6) ||
			     (ipv == SDP_IPV4 && (!sdp_ip_is_v4(sip) || !sdp_ip_is_v4(dip)))))
				FAIL("Hello accepted: rcvsz %u bufs %u IP version 0x%x", g.peer_rcvsz,
				     g.peer_bufs, ipv);
			i += sizeof(hh);
			memcpy(&hah, data + i, sizeof(hah));
			if (!sdp_hello_ack_parse(&g, &hah, sizeof(hah)) &&
			    (g.peer_rcvsz < SDP_MIN_RCVSZ || g.peer_rcvsz > SDP_MAX_RCVSZ))
				FAIL("HelloAck accepted: rcvsz %u", g.peer_rcvsz);
			i += sizeof(hah);
			break;
		}
	}
	return 0;
}
