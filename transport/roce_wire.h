/*
 * RoCEv2 wire format: the InfiniBand transport headers (IBA vol. 1,
 * chapter 9: BTH and the extended transport headers) carried in UDP to port
 * 4791 (IBA Annex A17), and the invariant CRC that ends every packet.
 *
 * Byte order, bit positions and masks live only here and in wire.c/icrc.c;
 * the rest of the transport works on struct roce_hdr in host order.
 *
 * A packet, as far as this module is concerned, is the UDP payload:
 *
 *   BTH | extended headers of the opcode | payload | pad (0-3) | ICRC
 *
 * Names: roce_ for everything here.
 */
#ifndef ROCE_WIRE_H
#define ROCE_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define ROCE_UDP_PORT 4791

/* Header lengths, IBA 9.2 - 9.5 */
#define ROCE_BTH_LEN 12
#define ROCE_RETH_LEN 16
#define ROCE_AETH_LEN 4
#define ROCE_ATMETH_LEN 28
#define ROCE_ATMACK_LEN 8
#define ROCE_IMMDT_LEN 4
#define ROCE_IETH_LEN 4
#define ROCE_DETH_LEN 8
#define ROCE_XRCETH_LEN 4
#define ROCE_ICRC_LEN 4
/* The longest BTH + extended headers of any opcode (BTH + XRCETH +
 * AtomicETH). */
#define ROCE_MAX_HDR 44

#define ROCE_PSN_MASK 0xffffffu
#define ROCE_QPN_MASK 0xffffffu

/* Transport service of an opcode: its top three bits (IBA 9.2, table 35). */
enum roce_service {
	ROCE_SVC_RC = 0x00,
	ROCE_SVC_UC = 0x20,
	ROCE_SVC_RD = 0x40,
	ROCE_SVC_UD = 0x60,
	ROCE_SVC_CNP = 0x80,
	ROCE_SVC_XRC = 0xa0,
};
#define ROCE_SVC_MASK 0xe0

/* Opcodes, IBA 9.2 table 35. The low five bits are the operation; UC uses
 * the same low bits as RC for the operations it has. */
enum roce_opcode {
	ROCE_SEND_FIRST = 0x00,
	ROCE_SEND_MIDDLE = 0x01,
	ROCE_SEND_LAST = 0x02,
	ROCE_SEND_LAST_IMM = 0x03,
	ROCE_SEND_ONLY = 0x04,
	ROCE_SEND_ONLY_IMM = 0x05,
	ROCE_WRITE_FIRST = 0x06,
	ROCE_WRITE_MIDDLE = 0x07,
	ROCE_WRITE_LAST = 0x08,
	ROCE_WRITE_LAST_IMM = 0x09,
	ROCE_WRITE_ONLY = 0x0a,
	ROCE_WRITE_ONLY_IMM = 0x0b,
	ROCE_READ_REQ = 0x0c,
	ROCE_READ_RESP_FIRST = 0x0d,
	ROCE_READ_RESP_MIDDLE = 0x0e,
	ROCE_READ_RESP_LAST = 0x0f,
	ROCE_READ_RESP_ONLY = 0x10,
	ROCE_ACK = 0x11,
	ROCE_ATOMIC_ACK = 0x12,
	ROCE_CMP_SWAP = 0x13,
	ROCE_FETCH_ADD = 0x14,
	ROCE_SEND_LAST_INV = 0x16,
	ROCE_SEND_ONLY_INV = 0x17,
	/* IBA 1.5 (9.4.7): an 8-byte write applied at once, answered by a
	 * zero-length RDMA READ Response Only, as rxe does */
	ROCE_ATOMIC_WRITE = 0x1d,
	/* full opcodes of the other services */
	ROCE_UD_SEND_ONLY = ROCE_SVC_UD | ROCE_SEND_ONLY,
	ROCE_UD_SEND_ONLY_IMM = ROCE_SVC_UD | ROCE_SEND_ONLY_IMM,
};

/* What an opcode carries and means (struct roce_opinfo.flags). */
enum roce_opflag {
	ROCE_F_RETH = 1u << 0,
	ROCE_F_AETH = 1u << 1,
	ROCE_F_ATMETH = 1u << 2,
	ROCE_F_ATMACK = 1u << 3,
	ROCE_F_IMMDT = 1u << 4,
	ROCE_F_IETH = 1u << 5,
	ROCE_F_DETH = 1u << 6,
	ROCE_F_PAYLOAD = 1u << 7, /* may carry payload (others must not) */
	ROCE_F_REQ = 1u << 8,	  /* requester to responder */
	ROCE_F_RESP = 1u << 9,	  /* responder to requester: ACK, read response, atomic ACK */
	ROCE_F_FIRST = 1u << 10,  /* first packet of a message (ONLY = FIRST | LAST) */
	ROCE_F_MIDDLE = 1u << 11,
	ROCE_F_LAST = 1u << 12,
	ROCE_F_SEND = 1u << 13,
	ROCE_F_WRITE = 1u << 14,
	ROCE_F_READ = 1u << 15,	  /* read request or read response */
	ROCE_F_ATOMIC = 1u << 16, /* atomic request or atomic ACK */
	ROCE_F_COMP = 1u << 17,	  /* consumes a receive WQE at the responder:
				     every SEND packet, WRITE_LAST/ONLY_IMM */
	ROCE_F_XRCETH = 1u << 18, /* XRC request: the XRC SRQ it goes to */
};

struct roce_opinfo {
	const char *name;  /* "RC SEND_FIRST", ... */
	uint32_t flags;	   /* enum roce_opflag */
	uint8_t hdr_len;   /* BTH + extended headers */
};

/* The opcode table entry, or NULL for an opcode this device does not
 * implement (RD, CNP, reserved, UC/UD operations that do not exist). */
const struct roce_opinfo *roce_opinfo(uint8_t opcode);

/* AETH syndrome, IBA 9.3.5 table 43: bits 6:5 say what it is. */
#define ROCE_AETH_ACK 0x00	/* 000xxxxx: ACK, low 5 bits = credit count */
#define ROCE_AETH_RNR_NAK 0x20	/* 001xxxxx: RNR NAK, low 5 bits = timer */
#define ROCE_AETH_NAK 0x60	/* 011xxxxx: NAK, low 5 bits = code below */
#define ROCE_AETH_TYPE_MASK 0x60
#define ROCE_AETH_CREDIT_INVALID 0x1f /* ACK credit field: no credits given */
/* NAK codes, IBA 9.3.5 table 44 */
enum roce_nak_code {
	ROCE_NAK_PSN_SEQ_ERR = 0,
	ROCE_NAK_INV_REQ = 1,
	ROCE_NAK_REM_ACCESS = 2,
	ROCE_NAK_REM_OP_ERR = 3,
	ROCE_NAK_INV_RD_REQ = 4,
};

/* All header fields in host order. Only those of the opcode's extended
 * headers are read by roce_hdr_write and filled by roce_parse. */
struct roce_hdr {
	/* BTH, IBA 9.2 */
	uint8_t opcode;
	bool se;	 /* solicited event */
	bool migreq;
	uint8_t pad;	 /* pad count 0..3 */
	uint8_t tver;	 /* transport header version, 0 */
	uint16_t pkey;
	bool fecn, becn; /* RoCEv2 uses ECN in IP; kept for completeness */
	uint32_t dqpn;	 /* 24 bits */
	bool ackreq;
	bool ext;	 /* BTH Resv7 bit 6: softofed's extension (transport/README.md) */
	uint32_t psn;	 /* 24 bits */
	/* RETH, IBA 9.3.3 (va and rkey also of the AtomicETH) */
	uint64_t va;
	uint32_t rkey;
	uint32_t dmalen;
	/* AtomicETH, IBA 9.3.4 */
	uint64_t swap_add;
	uint64_t compare;
	/* AETH, IBA 9.3.5 */
	uint8_t syndrome;
	uint32_t msn;	 /* 24 bits */
	/* AtomicAckETH, IBA 9.5.3 */
	uint64_t orig;
	/* ImmDt, IBA 9.3.6: kept in network byte order, as struct ibv_wc and
	 * struct ibv_send_wr hold it */
	uint32_t imm_be;
	/* IETH, IBA 9.3.7 */
	uint32_t inv_rkey;
	/* DETH, IBA 9.3.2 */
	uint32_t qkey;
	uint32_t sqpn;	 /* 24 bits */
	/* XRCETH (IBA 9.3.x, XRC annex): the XRC SRQ number, 24 bits */
	uint32_t xrcsrq;
};

/* The selective acknowledgement (transport/README.md, "Selective
 * acknowledgements"): the payload of an ACKNOWLEDGE whose BTH has ext set,
 * only to a peer that set ext on its requests. Byte 0 ROCE_SACK_KIND,
 * bytes 1-3 the base PSN (the AETH's PSN + 1), then a map of 256, 512, 768
 * or 1024 bits (ROCE_SACK_BITS steps up to ROCE_SACK_MAX_BITS: the
 * shortest that holds every bit set), most significant first: bit i set
 * when PSN base + i has arrived. */
#define ROCE_SACK_KIND 0x53
#define ROCE_SACK_BITS 256u
#define ROCE_SACK_MAX_BITS 1024u
#define ROCE_SACK_LEN (4u + ROCE_SACK_BITS / 8u)
#define ROCE_SACK_MAX_LEN (4u + ROCE_SACK_MAX_BITS / 8u)
static inline bool roce_sack_len_ok(size_t len)
{
	return len >= ROCE_SACK_LEN && len <= ROCE_SACK_MAX_LEN &&
	       (len - 4u) % (ROCE_SACK_BITS / 8u) == 0;
}
/* A SACK of the first bits (a multiple of ROCE_SACK_BITS, at most
 * ROCE_SACK_MAX_BITS) of map into buf; returns its length. */
uint32_t roce_sack_write(uint8_t *buf, uint32_t base, const uint8_t *map, uint32_t bits);
/* The base PSN, the bitmap and its length in bits of a SACK of len bytes;
 * false when it is not one. */
bool roce_sack_parse(const uint8_t *buf, uint32_t len, uint32_t *base, const uint8_t **map,
		     uint32_t *bits);
static inline bool roce_sack_bit(const uint8_t *map, uint32_t i)
{
	return map[i >> 3] & (0x80u >> (i & 7));
}

/* Write the BTH and the extended headers that h->opcode carries at buf,
 * which has room for ROCE_MAX_HDR bytes. Reserved fields are written as
 * zero. Returns the number of bytes written, or 0 for an opcode that
 * roce_opinfo does not know. */
size_t roce_hdr_write(uint8_t *buf, const struct roce_hdr *h);

/* Why roce_parse (or a later check) refused a packet; counters are indexed
 * by these. */
enum roce_drop {
	ROCE_DROP_NONE = 0,
	ROCE_DROP_SHORT,	 /* shorter than BTH + headers + pad + ICRC */
	ROCE_DROP_VERSION,	 /* BTH TVer not 0 */
	ROCE_DROP_OPCODE,	 /* opcode unknown or not implemented */
	ROCE_DROP_PAYLOAD,	 /* payload on an opcode that carries none */
	ROCE_DROP_ICRC,		 /* invariant CRC mismatch */
	ROCE_DROP_NR		 /* number of reasons known to this module */
};
/* Short names of enum roce_drop, for counters and logs. */
extern const char *const roce_drop_names[ROCE_DROP_NR];

/* Parse a packet (the whole UDP payload, ICRC included) into h and locate
 * its payload (pad and ICRC excluded). Validates what the packet alone can
 * show: length, TVer, known opcode, pad count within the payload, payload
 * only where the opcode allows it. Does not check the ICRC (roce_icrc_check
 * needs the addresses). Never reads outside [buf, buf + len).
 * Returns ROCE_DROP_NONE (0) or the reason. */
enum roce_drop roce_parse(const uint8_t *buf, size_t len, struct roce_hdr *h,
			  const uint8_t **payload, uint32_t *paylen);

/* The addresses the ICRC covers (Annex A17.3.3): IP source and destination
 * (IPv4 given as IPv4-mapped IPv6, ::ffff:a.b.c.d) and the UDP ports, in
 * host order. */
struct roce_addr {
	uint8_t src[16];
	uint8_t dst[16];
	uint16_t sport;
	uint16_t dport;
};

/* What an ICRC computation keeps for the next (icrc.c): the CRC register
 * after the pseudo-header (the LRH's ones, IP and UDP headers) of the last
 * ROCE_ICRC_HEADS flows and lengths, and the differences IPv4 IDs make
 * for the last length asked. Owned by the caller, one per thread (the
 * transport has one); zeroed is empty. */
#define ROCE_ICRC_HEADS 4
struct roce_icrc_cache {
	struct {
		struct roce_addr a;
		uint16_t udplen; /* 0: unused */
		uint32_t crc;
	} head[ROCE_ICRC_HEADS];
	unsigned next;
	size_t ipid_len; /* ipid_bit holds the differences for this length + 1 */
	uint32_t ipid_bit[16];
};

/* ICRC of a packet, Annex A17.3.3: the CRC-32 of Ethernet over 64 bits of
 * ones, the IP header (IPv4: ID 0, DF set, TOS, TTL and checksum masked to
 * ones; IPv6: traffic class, flow label and hop limit masked to ones), the
 * UDP header (checksum masked to ones), the BTH with its reserved byte
 * (resv8a) masked to ones, and the rest of the packet up to the ICRC.
 * len counts the UDP payload without the ICRC. The value is in host order;
 * it goes on the wire little-endian (as rxe and hardware put it). */
uint32_t roce_icrc(const struct roce_addr *a, const uint8_t *pkt, size_t len);
/* The same over a packet in pieces (their lengths add up to len); the _c
 * forms keep what they can in c. */
uint32_t roce_icrc_iov(const struct roce_addr *a, const struct iovec *iov, unsigned niov);
uint32_t roce_icrc_iov_c(struct roce_icrc_cache *c, const struct roce_addr *a,
			 const struct iovec *iov, unsigned niov);
/* IPv4: what to XOR into the ICRC of ID 0 of a packet of len bytes (no
 * ICRC) for the ICRC of the same packet with IP ID id (icrc.c: a UDP GSO
 * segment leaves with the ID of its place in the send). */
uint32_t roce_icrc_ipid_delta(size_t len, uint16_t id);
uint32_t roce_icrc_ipid_delta_c(struct roce_icrc_cache *c, size_t len, uint16_t id);
/* IPv4 IDs a received packet's ICRC may have been computed for: 0 and the
 * places of UDP GSO segments (a UDP socket cannot see the ID). */
#define ROCE_ICRC_MAX_IPID 64u
/* Append the ICRC at pkt + len (4 bytes). */
void roce_icrc_append(const struct roce_addr *a, uint8_t *pkt, size_t len);
/* Check the last four bytes of a packet of len bytes (ICRC included):
 * IPv4 packets pass with the ICRC of any ID below ROCE_ICRC_MAX_IPID. */
bool roce_icrc_check(const struct roce_addr *a, const uint8_t *pkt, size_t len);
bool roce_icrc_check_c(struct roce_icrc_cache *c, const struct roce_addr *a, const uint8_t *pkt,
		       size_t len);

/* The CRC-32 register of IEEE 802.3 (reflected 0xEDB88320) after len
 * more bytes at p, from register crc (start with 0xffffffff, invert at
 * the end): the InfiniBand ICRC (ib_wire.c) runs on it. */
uint32_t roce_crc32_update(uint32_t crc, const void *p, size_t len);

/* PSN arithmetic on 24 bits (IBA 9.7.1): the signed distance a - b, in
 * [-2^23, 2^23). */
static inline int32_t roce_psn_diff(uint32_t a, uint32_t b)
{
	return (int32_t)((a - b) << 8) >> 8;
}

#endif
