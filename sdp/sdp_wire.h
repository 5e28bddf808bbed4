/*
 * The Sockets Direct Protocol on the wire (IBTA Annex A4): the Base
 * Sockets Direct Header every message starts with, the Hello and HelloAck
 * headers that ride in the CM REQ and REP private data, the message IDs,
 * and a connection's flow state (message sequence numbers and credits).
 *
 * All multi-byte fields are big-endian. The connection is an RC QP set up
 * by the RDMA CM on AF_IB addresses with A4's service IDs in sib_sid,
 * 0x000000000001PPPP for TCP port PPPP (RDMA_PS_IB: the CM adds no header
 * of its own; sdp/README.md says what our CM puts on the wire), and the
 * REQ's private data is the Hello (BSDH + Hello header, 64 bytes: the
 * version, IP version and capabilities, MaxAdverts, DesRemRcvSz,
 * LocalRcvSz, LocalPort, the source and destination IP addresses: IP
 * version 4 with an IPv4 one in the last 4 of its 16 bytes, 6 with IPv6
 * ones), the REP's the HelloAck (the Hello's IP version).
 *
 * sdp_proto.c is pure (no verbs): the receive path the fuzz target drives.
 */
#ifndef SDP_WIRE_H
#define SDP_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* A4.3.2: message IDs (the BSDH's MID). */
enum sdp_mid {
	SDP_MID_HELLO = 0x00,
	SDP_MID_HELLO_ACK = 0x01,
	SDP_MID_DISCONN = 0x02,
	SDP_MID_ABORT = 0x03,
	SDP_MID_SENDSM = 0x04,
	SDP_MID_RDMA_WR_COMPL = 0x05,
	SDP_MID_RDMA_RD_COMPL = 0x06,
	SDP_MID_MODE_CHANGE = 0x07,
	SDP_MID_SRC_CANCEL = 0x08,
	SDP_MID_SINK_CANCEL = 0x09,
	SDP_MID_SINK_CANCEL_ACK = 0x0a,
	SDP_MID_CH_RCVBUF = 0x0b,
	SDP_MID_CH_RCVBUF_ACK = 0x0c,
	SDP_MID_SUSP_COMM = 0x0d,
	SDP_MID_SUSP_COMM_ACK = 0x0e,
	SDP_MID_SINK_AVAIL = 0xfd,
	SDP_MID_SRC_AVAIL = 0xfe,
	SDP_MID_DATA = 0xff,
};

/* A4.3.1: BSDH flags. */
#define SDP_FLAG_OOB_PRES 0x01
#define SDP_FLAG_OOB_PEND 0x02

/* A4.3.1: the Base Sockets Direct Header (16 bytes) */
struct sdp_bsdh {
	uint8_t mid;
	uint8_t flags;
	uint16_t bufs;	   /* receive buffers the sender has posted */
	uint32_t len;	   /* the whole message, this header included */
	uint32_t mseq;	   /* this message's sequence number */
	uint32_t mseq_ack; /* the last sequence number the sender received */
} __attribute__((packed));

/* A4.3.3: the Hello header after the BSDH */
struct sdp_hh {
	struct sdp_bsdh bsdh;
	uint8_t majv_minv;  /* 0x22: SDP 2.2 */
	uint8_t ipv_cap;    /* IP version in the high nibble */
	uint8_t rsvd1;
	uint8_t max_adverts;
	uint32_t desremrcvsz; /* the receive size wanted of the peer */
	uint32_t localrcvsz;  /* the size of each of our receive buffers */
	uint16_t port;	      /* the active side's port */
	uint16_t rsvd2;
	uint8_t src_addr[16]; /* the active side's address */
	uint8_t dst_addr[16]; /* the address it connects to */
} __attribute__((packed));

/* A4.3.5: the SrcAvail header: a buffer of the sender's that the
 * receiver may RDMA READ (zero copy, read mode) */
struct sdp_srcah {
	uint32_t len;
	uint32_t rkey;
	uint64_t vaddr;
} __attribute__((packed));

/* A4.3.7: the RdmaRdCompl header: the bytes read from the advertised
 * buffer, which the sender may then reuse */
struct sdp_rrch {
	uint32_t len;
} __attribute__((packed));

/* A4.3.6: the SinkAvail header: a buffer of the data sink's that the data
 * source may RDMA WRITE the next bytes of the stream into (zero copy,
 * write mode) */
struct sdp_sinkah {
	uint32_t len;
	uint32_t rkey;
	uint64_t vaddr;
} __attribute__((packed));

/* A4.3.8: the RdmaWrCompl header: the bytes written into the advertised
 * sink buffer; they take this message's place in the stream */
struct sdp_rwch {
	uint32_t len;
} __attribute__((packed));

/* SrcAvail or SinkAvail buffers either side may have outstanding (our
 * Hello's and HelloAck's MaxAdverts), and the largest we read or offer */
#define SDP_MAX_ADVERTS 1
#define SDP_MAX_ZCOPY (64u * 1024)

/* A4.2: the service ID of TCP port p */
#define SDP_SERVICE_ID(p) (0x0000000000010000ull | (uint16_t)(p))

/* A4.3.4: the HelloAck header */
struct sdp_hah {
	struct sdp_bsdh bsdh;
	uint8_t majv_minv;
	uint8_t ipv_rsvd;
	uint8_t rsvd1;
	uint8_t max_adverts;
	uint32_t actrcvsz; /* the size of each of the responder's buffers */
} __attribute__((packed));

#define SDP_VERSION 0x22
#define SDP_MAJV(v) ((v) >> 4)
#define SDP_IPV4 0x40
#define SDP_IPV6 0x60
/* an address of 16 bytes is IPv4's: IPv4-mapped (::ffff:a.b.c.d) */
static inline int sdp_ip_is_v4(const uint8_t a[16])
{
	static const uint8_t pfx[12] = {[10] = 0xff, [11] = 0xff};

	return !memcmp(a, pfx, sizeof(pfx));
}
#define SDP_BSDH_LEN ((uint32_t)sizeof(struct sdp_bsdh))
/* smallest receive buffer a peer may announce (A4: at least 1 KiB of payload) */
#define SDP_MIN_RCVSZ (1024 + SDP_BSDH_LEN)
#define SDP_MAX_RCVSZ (1u << 20)
/* most receive buffers a peer may claim; more is a lie we do not believe */
#define SDP_MAX_BUFS 4096

/* One connection's message flow, A4.5: sequence numbers and credits.
 * A message may be sent when the peer has a buffer for it: credits =
 * the peer's Bufs minus our messages it had not received when it sent
 * them. Data keeps the last credit for a message that only updates
 * credits (a Data message without payload). */
struct sdp_flow {
	uint32_t tx_mseq;     /* the sequence number of our last message */
	uint32_t rx_mseq;     /* the last sequence number we received */
	uint32_t peer_ack;    /* the peer's last MSeqAck */
	uint32_t peer_bufs;   /* the peer's last Bufs */
	uint32_t peer_rcvsz;  /* the size of each of the peer's buffers */
	uint32_t rx_posted;   /* our receive buffers posted now */
	uint32_t adv_bufs;    /* Bufs and MSeqAck of our last message */
	uint32_t adv_ack;
	uint32_t nbufs;	      /* our receive buffers */
	uint8_t got_disconn;  /* the peer sent DisConn */
	uint8_t peer_adverts; /* the peer's MaxAdverts */
	uint8_t src_out;      /* our SrcAvails without RdmaRdCompl */
	uint8_t sink_out;     /* the peer's SrcAvails we have not completed */
	uint8_t wsink_out;    /* our SinkAvails without RdmaWrCompl */
	uint8_t wsink_in;     /* the peer's SinkAvails we have not written */
};

/* What one received message asks of us. */
enum sdp_rx_kind {
	SDP_RX_DATA,	/* payload (maybe none: a credit update) */
	SDP_RX_DISCONN, /* the peer sends no more */
	SDP_RX_ABORT,	/* the peer aborted */
	SDP_RX_SRCAVAIL, /* a buffer to read (zlen, zrkey, zva), then payload */
	SDP_RX_RDCOMPL, /* the peer read zlen bytes of our advertised buffer */
	SDP_RX_SINKAVAIL, /* a buffer of the peer's to write (zlen, zrkey, zva) */
	SDP_RX_WRCOMPL, /* the peer wrote zlen bytes into our sink buffer */
	SDP_RX_SRCCANCEL, /* the peer withdraws its SrcAvail */
};

struct sdp_rx {
	enum sdp_rx_kind kind;
	uint32_t off; /* payload offset in the message */
	uint32_t len; /* payload length */
	uint32_t zlen, zrkey;
	uint64_t zva;
};

void sdp_flow_init(struct sdp_flow *f, uint32_t nbufs);
int sdp_credits(const struct sdp_flow *f);
int sdp_peer_view(const struct sdp_flow *f);
int sdp_want_update(const struct sdp_flow *f);
void sdp_hdr_fill(struct sdp_flow *f, struct sdp_bsdh *h, uint8_t mid, uint32_t len);
int sdp_rx_msg(struct sdp_flow *f, const void *msg, size_t byte_len, struct sdp_rx *out);
void sdp_hello_fill(struct sdp_flow *f, struct sdp_hh *hh, uint32_t rcvsz, const uint8_t src[16],
		    uint16_t src_port, const uint8_t dst[16]);
int sdp_hello_parse(struct sdp_flow *f, const void *pd, size_t len, uint8_t src[16],
		    uint16_t *src_port, uint8_t dst[16], uint8_t *ipv);
void sdp_hello_ack_fill(struct sdp_flow *f, struct sdp_hah *hah, uint32_t rcvsz, uint8_t ipv);
int sdp_hello_ack_parse(struct sdp_flow *f, const void *pd, size_t len);
void sdp_srcavail_fill(struct sdp_flow *f, void *msg, uint32_t len, uint32_t rkey, uint64_t va);
void sdp_rdcompl_fill(struct sdp_flow *f, void *msg, uint32_t len);
void sdp_sinkavail_fill(struct sdp_flow *f, void *msg, uint32_t len, uint32_t rkey, uint64_t va);
void sdp_wrcompl_fill(struct sdp_flow *f, void *msg, uint32_t len);
const char *sdp_mid_str(uint8_t mid);

#endif
