/*
 * SDP message flow (IBTA Annex A4), pure: sequence numbers, credits, the
 * Hello/HelloAck exchange and the checks on every received message. A
 * peer that breaks a rule (a length that is not the message's, a
 * sequence number out of order, an acknowledgement of something we never
 * sent, more buffers than it could have, more SrcAvails or SinkAvails
 * than our MaxAdverts, a RdmaRdCompl or RdmaWrCompl for nothing, a message
 * of a mode we do not speak) gets -EPROTO: the connection is ended,
 * nothing is delivered.
 * The connection code (sdp_conn.c) and tests/fuzz/fuzz_sdp.c call it.
 */
#include "sdp_wire.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <string.h>

void sdp_flow_init(struct sdp_flow *f, uint32_t nbufs)
{
	memset(f, 0, sizeof(*f));
	f->nbufs = nbufs;
	f->rx_posted = nbufs;
	f->adv_bufs = nbufs;
}

/* A4.5.2: the buffers the peer has for our next messages */
int sdp_credits(const struct sdp_flow *f)
{
	return (int)f->peer_bufs - (int)(f->tx_mseq - f->peer_ack);
}

/* the credits the peer believes it has: what we last advertised minus
 * what it sent since */
int sdp_peer_view(const struct sdp_flow *f)
{
	return (int)f->adv_bufs - (int)(f->rx_mseq - f->adv_ack);
}

/* A credit update is due when the peer runs short while we have buffers
 * for it, or when half our buffers came free since we last said so. */
int sdp_want_update(const struct sdp_flow *f)
{
	int view = sdp_peer_view(f);

	if ((int)f->rx_posted - view >= (int)f->nbufs / 2)
		return 1;
	return view <= 2 && (int)f->rx_posted > view;
}

void sdp_hdr_fill(struct sdp_flow *f, struct sdp_bsdh *h, uint8_t mid, uint32_t len)
{
	f->tx_mseq++;
	f->adv_bufs = f->rx_posted;
	f->adv_ack = f->rx_mseq;
	h->mid = mid;
	h->flags = 0;
	h->bufs = htons((uint16_t)f->rx_posted);
	h->len = htonl(len);
	h->mseq = htonl(f->tx_mseq);
	h->mseq_ack = htonl(f->rx_mseq);
}

/* The BSDH fields every message carries: sequence, acknowledgement and
 * the peer's buffers, A4.3.1 and A4.5. */
static int rx_bsdh(struct sdp_flow *f, const struct sdp_bsdh *h, size_t byte_len)
{
	uint32_t len = ntohl(h->len), mseq = ntohl(h->mseq), ack = ntohl(h->mseq_ack);
	uint32_t bufs = ntohs(h->bufs);

	if (len != byte_len || len < SDP_BSDH_LEN)
		return -EPROTO;
	if (mseq != f->rx_mseq + 1)
		return -EPROTO;
	/* an acknowledgement goes forward and never past what we sent */
	/* A4.5.2: no message beyond the buffers we advertised; what we
	 * advertised last (our last message's MSeqAck + Bufs) never shrinks */
	if (mseq - f->adv_ack > f->adv_bufs)
		return -EPROTO;
	if ((int32_t)(ack - f->peer_ack) < 0 || (int32_t)(f->tx_mseq - ack) < 0)
		return -EPROTO;
	/* the peer's buffers must hold what we have in flight to it */
	if (bufs > SDP_MAX_BUFS || bufs < f->tx_mseq - ack)
		return -EPROTO;
	f->rx_mseq = mseq;
	f->peer_ack = ack;
	f->peer_bufs = bufs;
	return 0;
}

int sdp_rx_msg(struct sdp_flow *f, const void *msg, size_t byte_len, struct sdp_rx *out)
{
	struct sdp_bsdh h;

	if (byte_len < SDP_BSDH_LEN)
		return -EPROTO;
	memcpy(&h, msg, sizeof(h));
	if (rx_bsdh(f, &h, byte_len))
		return -EPROTO;
	out->off = SDP_BSDH_LEN;
	out->len = (uint32_t)byte_len - SDP_BSDH_LEN;
	switch (h.mid) {
	case SDP_MID_DATA:
		/* A4.6.4: no data after DisConn; no urgent data offered */
		if (f->got_disconn && out->len)
			return -EPROTO;
		out->kind = SDP_RX_DATA;
		return 0;
	case SDP_MID_DISCONN:
		if (out->len || f->got_disconn)
			return -EPROTO;
		f->got_disconn = 1;
		out->kind = SDP_RX_DISCONN;
		return 0;
	case SDP_MID_ABORT:
		out->kind = SDP_RX_ABORT;
		out->len = 0;
		return 0;
	case SDP_MID_SRC_AVAIL: {
		struct sdp_srcah a;

		/* A4.6.5: within our MaxAdverts, before DisConn, a length we
		 * read in one go; payload may follow the header */
		if (byte_len < SDP_BSDH_LEN + sizeof(a) || f->got_disconn ||
		    f->sink_out >= SDP_MAX_ADVERTS)
			return -EPROTO;
		memcpy(&a, (const uint8_t *)msg + SDP_BSDH_LEN, sizeof(a));
		out->zlen = ntohl(a.len);
		out->zrkey = ntohl(a.rkey);
		out->zva = be64toh(a.vaddr);
		if (!out->zlen || out->zlen > SDP_MAX_ZCOPY)
			return -EPROTO;
		f->sink_out++;
		out->kind = SDP_RX_SRCAVAIL;
		out->off = SDP_BSDH_LEN + (uint32_t)sizeof(a);
		out->len = (uint32_t)byte_len - out->off;
		return 0;
	}
	case SDP_MID_RDMA_RD_COMPL: {
		struct sdp_rrch r;

		if (byte_len != SDP_BSDH_LEN + sizeof(r) || !f->src_out)
			return -EPROTO;
		memcpy(&r, (const uint8_t *)msg + SDP_BSDH_LEN, sizeof(r));
		f->src_out--;
		out->kind = SDP_RX_RDCOMPL;
		out->zlen = ntohl(r.len);
		out->len = 0;
		return 0;
	}
	case SDP_MID_SINK_AVAIL: {
		struct sdp_sinkah a;

		/* A4.6.5 write mode: within our MaxAdverts, no payload; a data
		 * sink may advertise after its own DisConn (it still receives) */
		if (byte_len != SDP_BSDH_LEN + sizeof(a) || f->wsink_in >= SDP_MAX_ADVERTS)
			return -EPROTO;
		memcpy(&a, (const uint8_t *)msg + SDP_BSDH_LEN, sizeof(a));
		out->zlen = ntohl(a.len);
		out->zrkey = ntohl(a.rkey);
		out->zva = be64toh(a.vaddr);
		if (!out->zlen)
			return -EPROTO;
		f->wsink_in++;
		out->kind = SDP_RX_SINKAVAIL;
		out->len = 0;
		return 0;
	}
	case SDP_MID_RDMA_WR_COMPL: {
		struct sdp_rwch r;

		/* only for our SinkAvail, before the peer's DisConn (it is
		 * data); the length is checked against ours by the caller */
		if (byte_len != SDP_BSDH_LEN + sizeof(r) || !f->wsink_out || f->got_disconn)
			return -EPROTO;
		memcpy(&r, (const uint8_t *)msg + SDP_BSDH_LEN, sizeof(r));
		f->wsink_out--;
		out->kind = SDP_RX_WRCOMPL;
		out->zlen = ntohl(r.len);
		out->len = 0;
		return !out->zlen ? -EPROTO : 0;
	}
	case SDP_MID_SRC_CANCEL:
		/* only while a SrcAvail of the peer's is outstanding here;
		 * its READ is already posted: RdmaRdCompl answers as usual */
		if (out->len || !f->sink_out)
			return -EPROTO;
		out->kind = SDP_RX_SRCCANCEL;
		return 0;
	default:
		/* Hello again, a mode or buffer-size change, SendSm, sink
		 * cancels (we never withdraw a SinkAvail), urgent data */
		return -EPROTO;
	}
}

/* IPs in network order; an IPv4 address goes in the last 4 bytes */
void sdp_hello_fill(struct sdp_flow *f, struct sdp_hh *hh, uint32_t rcvsz, const uint8_t src[16],
		    uint16_t src_port, const uint8_t dst[16])
{
	int v4 = sdp_ip_is_v4(src) && sdp_ip_is_v4(dst);

	memset(hh, 0, sizeof(*hh));
	hh->bsdh.mid = SDP_MID_HELLO;
	hh->bsdh.bufs = htons((uint16_t)f->rx_posted);
	hh->bsdh.len = htonl(sizeof(*hh));
	f->adv_bufs = f->rx_posted;
	hh->majv_minv = SDP_VERSION;
	hh->ipv_cap = v4 ? SDP_IPV4 : SDP_IPV6;
	hh->max_adverts = SDP_MAX_ADVERTS;
	hh->desremrcvsz = htonl(rcvsz);
	hh->localrcvsz = htonl(rcvsz);
	hh->port = htons(src_port);
	/* A4.3.3: an IPv4 address in the last 4 bytes, the rest zero */
	memcpy(hh->src_addr + (v4 ? 12 : 0), src + (v4 ? 12 : 0), v4 ? 4 : 16);
	memcpy(hh->dst_addr + (v4 ? 12 : 0), dst + (v4 ? 12 : 0), v4 ? 4 : 16);
}

/* The Hello from a REQ (the passive side). Its sequence number is 0. The
 * addresses as libsdp keeps them: an IPv4 one (IP version 4) IPv4-mapped;
 * *ipv the IP version for the HelloAck. */
int sdp_hello_parse(struct sdp_flow *f, const void *pd, size_t len, uint8_t src[16],
		    uint16_t *src_port, uint8_t dst[16], uint8_t *ipv)
{
	static const uint8_t v4pfx[12] = {[10] = 0xff, [11] = 0xff};
	struct sdp_hh hh;
	uint32_t rcvsz, bufs;
	uint8_t v = 0;

	if (len < sizeof(hh))
		return -EPROTO;
	memcpy(&hh, pd, sizeof(hh));
	rcvsz = ntohl(hh.localrcvsz);
	bufs = ntohs(hh.bsdh.bufs);
	v = hh.ipv_cap & 0xf0;
	if (hh.bsdh.mid != SDP_MID_HELLO || SDP_MAJV(hh.majv_minv) != SDP_MAJV(SDP_VERSION) ||
	    ntohl(hh.bsdh.mseq) != 0 || rcvsz < SDP_MIN_RCVSZ || rcvsz > SDP_MAX_RCVSZ ||
	    !bufs || bufs > SDP_MAX_BUFS || (v != SDP_IPV4 && v != SDP_IPV6))
		return -EPROTO;
	f->peer_rcvsz = rcvsz;
	f->peer_bufs = bufs;
	f->peer_adverts = hh.max_adverts;
	memcpy(src, hh.src_addr, 16);
	memcpy(dst, hh.dst_addr, 16);
	if (v == SDP_IPV4) {
		memcpy(src, v4pfx, 12);
		memcpy(dst, v4pfx, 12);
	}
	*src_port = ntohs(hh.port);
	*ipv = v;
	return 0;
}

void sdp_hello_ack_fill(struct sdp_flow *f, struct sdp_hah *hah, uint32_t rcvsz, uint8_t ipv)
{
	memset(hah, 0, sizeof(*hah));
	hah->bsdh.mid = SDP_MID_HELLO_ACK;
	hah->bsdh.bufs = htons((uint16_t)f->rx_posted);
	hah->bsdh.len = htonl(sizeof(*hah));
	f->adv_bufs = f->rx_posted;
	hah->majv_minv = SDP_VERSION;
	hah->ipv_rsvd = ipv; /* the Hello's */
	hah->max_adverts = SDP_MAX_ADVERTS;
	hah->actrcvsz = htonl(rcvsz);
}

int sdp_hello_ack_parse(struct sdp_flow *f, const void *pd, size_t len)
{
	struct sdp_hah hah;
	uint32_t rcvsz, bufs;

	if (len < sizeof(hah))
		return -EPROTO;
	memcpy(&hah, pd, sizeof(hah));
	rcvsz = ntohl(hah.actrcvsz);
	bufs = ntohs(hah.bsdh.bufs);
	if (hah.bsdh.mid != SDP_MID_HELLO_ACK ||
	    SDP_MAJV(hah.majv_minv) != SDP_MAJV(SDP_VERSION) || ntohl(hah.bsdh.mseq) != 0 ||
	    rcvsz < SDP_MIN_RCVSZ || rcvsz > SDP_MAX_RCVSZ || !bufs || bufs > SDP_MAX_BUFS)
		return -EPROTO;
	f->peer_rcvsz = rcvsz;
	f->peer_bufs = bufs;
	f->peer_adverts = hah.max_adverts;
	return 0;
}

/* A SrcAvail of LEN bytes at VA (RKEY) in MSG (BSDH + header, 32 bytes) */
void sdp_srcavail_fill(struct sdp_flow *f, void *msg, uint32_t len, uint32_t rkey, uint64_t va)
{
	struct sdp_srcah a = { .len = htonl(len), .rkey = htonl(rkey), .vaddr = htobe64(va) };

	sdp_hdr_fill(f, msg, SDP_MID_SRC_AVAIL, SDP_BSDH_LEN + (uint32_t)sizeof(a));
	memcpy((uint8_t *)msg + SDP_BSDH_LEN, &a, sizeof(a));
	f->src_out++;
}

/* The RdmaRdCompl of the peer's SrcAvail we read LEN bytes of (20 bytes) */
void sdp_rdcompl_fill(struct sdp_flow *f, void *msg, uint32_t len)
{
	struct sdp_rrch r = { .len = htonl(len) };

	sdp_hdr_fill(f, msg, SDP_MID_RDMA_RD_COMPL, SDP_BSDH_LEN + (uint32_t)sizeof(r));
	memcpy((uint8_t *)msg + SDP_BSDH_LEN, &r, sizeof(r));
	f->sink_out--;
}

/* A SinkAvail of LEN bytes at VA (RKEY) in MSG (BSDH + header, 32 bytes) */
void sdp_sinkavail_fill(struct sdp_flow *f, void *msg, uint32_t len, uint32_t rkey, uint64_t va)
{
	struct sdp_sinkah a = { .len = htonl(len), .rkey = htonl(rkey), .vaddr = htobe64(va) };

	sdp_hdr_fill(f, msg, SDP_MID_SINK_AVAIL, SDP_BSDH_LEN + (uint32_t)sizeof(a));
	memcpy((uint8_t *)msg + SDP_BSDH_LEN, &a, sizeof(a));
	f->wsink_out++;
}

/* The RdmaWrCompl after LEN bytes written into the peer's SinkAvail (20
 * bytes); posted after the WRITE, which RC completes first */
void sdp_wrcompl_fill(struct sdp_flow *f, void *msg, uint32_t len)
{
	struct sdp_rwch r = { .len = htonl(len) };

	sdp_hdr_fill(f, msg, SDP_MID_RDMA_WR_COMPL, SDP_BSDH_LEN + (uint32_t)sizeof(r));
	memcpy((uint8_t *)msg + SDP_BSDH_LEN, &r, sizeof(r));
	f->wsink_in--;
}

const char *sdp_mid_str(uint8_t mid)
{
	switch (mid) {
	case SDP_MID_HELLO: return "Hello";
	case SDP_MID_HELLO_ACK: return "HelloAck";
	case SDP_MID_DISCONN: return "DisConn";
	case SDP_MID_ABORT: return "AbortConn";
	case SDP_MID_DATA: return "Data";
	case SDP_MID_SRC_AVAIL: return "SrcAvail";
	case SDP_MID_SINK_AVAIL: return "SinkAvail";
	case SDP_MID_RDMA_WR_COMPL: return "RdmaWrCompl";
	case SDP_MID_SRC_CANCEL: return "SrcAvailCancel";
	default: return "other";
	}
}
