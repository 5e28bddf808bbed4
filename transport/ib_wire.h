/*
 * InfiniBand link-layer wire format (IBA vol. 1 chapter 7): the Local
 * Route Header, the Global Route Header, the invariant CRC over an IB
 * packet (7.8.1) and the variant CRC that ends it (7.8.2), and the link
 * control messages (SOFL) that stand in for the physical layer's training
 * on a link carried in UDP (fabric/README.md, "Link protocol").
 *
 * An IB packet here is what one datagram of such a link carries:
 *
 *   LRH | GRH (LNH 3) | BTH and extended headers | payload | pad | ICRC | VCRC
 *
 * The transport part (BTH .. ICRC) is the same as a RoCEv2 packet's UDP
 * payload, so roce_parse reads it unchanged; only the ICRC's pseudo-header
 * differs (the LRH and GRH instead of IP/UDP).
 *
 * Byte order, bit positions and masks of these headers live only here and
 * in ib_wire.c. Names: ib_ for everything here.
 */
#ifndef IB_WIRE_H
#define IB_WIRE_H

#include "roce_wire.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define IB_LRH_LEN 8
#define IB_GRH_LEN 40
#define IB_VCRC_LEN 2
/* The longest IB packet of a 4096-byte MTU: LRH, GRH, transport headers,
 * payload, pad, ICRC, VCRC. */
#define IB_MAX_PKT (IB_LRH_LEN + IB_GRH_LEN + ROCE_MAX_HDR + 4096 + 3 + ROCE_ICRC_LEN + IB_VCRC_LEN)

/* LRH Link Next Header (IBA 7.7.3) */
enum ib_lnh {
	IB_LNH_RAW = 0,	   /* raw: no IBA transport */
	IB_LNH_IPV6 = 1,   /* raw IPv6 */
	IB_LNH_LOCAL = 2,  /* IBA local: BTH follows */
	IB_LNH_GLOBAL = 3, /* IBA global: GRH follows */
};
#define IB_GRH_NXTHDR 0x1b /* GRH NxtHdr of an IBA transport (IBA 8.3.1) */
#define IB_VL15 15u	   /* the management lane: SMPs only (IBA 7.6.5) */
#define IB_LID_PERMISSIVE 0xffffu
#define IB_LID_MCAST_MIN 0xc000u
#define IB_LID_UCAST_MAX 0xbfffu

/* Local Route Header, IBA 7.7, fields in host order */
struct ib_lrh {
	uint8_t vl;   /* virtual lane, 4 bits */
	uint8_t lver; /* link version, 0 */
	uint8_t sl;   /* service level, 4 bits */
	uint8_t lnh;  /* enum ib_lnh */
	uint16_t dlid;
	uint16_t pktlen; /* 11 bits: 4-byte words from the LRH through the ICRC */
	uint16_t slid;
};

/* Global Route Header, IBA 8.3, fields in host order */
struct ib_grh {
	uint8_t ipver; /* 6 */
	uint8_t tclass;
	uint32_t flow_label; /* 20 bits */
	uint16_t paylen;     /* bytes after the GRH through the ICRC */
	uint8_t nxthdr;	     /* IB_GRH_NXTHDR */
	uint8_t hop_limit;
	uint8_t sgid[16];
	uint8_t dgid[16];
};

void ib_lrh_write(uint8_t *buf, const struct ib_lrh *l);
void ib_lrh_read(const uint8_t *buf, struct ib_lrh *l);
void ib_grh_write(uint8_t *buf, const struct ib_grh *g);
void ib_grh_read(const uint8_t *buf, struct ib_grh *g);

/* The variant CRC, IBA 7.8.2: CRC-16 of polynomial 0x100B (x^16 + x^12 +
 * x^3 + x + 1), all ones in, processed least significant bit first as the
 * ICRC is, inverted out, over every byte from the LRH through the ICRC;
 * on the wire least significant byte first, as the ICRC. */
uint16_t ib_vcrc_iov(const struct iovec *iov, unsigned niov);
uint16_t ib_vcrc(const uint8_t *pkt, size_t len);

/* The invariant CRC of an IB packet, IBA 7.8.1: the CRC-32 of the ICRC of
 * RoCEv2 (roce_crc32_update) over the LRH with its VL masked to ones, the
 * GRH (when LNH is 3) with TClass, Flow Label and HopLmt masked to ones,
 * the BTH with its variant byte (FECN, BECN, Resv6a) masked to ones, and
 * the rest up to the ICRC. The pieces hold the packet from the LRH on,
 * without ICRC and VCRC. Host order; little-endian on the wire. */
uint32_t ib_icrc_iov(const struct iovec *iov, unsigned niov);
uint32_t ib_icrc(const uint8_t *pkt, size_t len);

/* Why ib_parse refused a datagram. */
enum ib_drop {
	IB_DROP_NONE = 0,
	IB_DROP_SHORT,	/* shorter than LRH + BTH + ICRC + VCRC, or a GRH cut */
	IB_DROP_LVER,	/* LRH LVer not 0 */
	IB_DROP_PKTLEN, /* LRH PktLen is not the datagram's length (IBA 7.7.8) */
	IB_DROP_VCRC,	/* variant CRC mismatch: a link integrity error */
	IB_DROP_LNH,	/* not an IBA transport packet (raw, raw IPv6) */
	IB_DROP_GRH,	/* IPVer, NxtHdr or PayLen of the GRH wrong */
	IB_DROP_ICRC,	/* invariant CRC mismatch */
	IB_DROP_NR
};
extern const char *const ib_drop_names[IB_DROP_NR];

/* Check one datagram of a link as an IB packet: lengths, LVer, PktLen,
 * VCRC, LNH, the GRH when there is one, ICRC. On success fills l (and g
 * when LNH is 3) and points *tpkt at the transport part (BTH .. ICRC, the
 * input of roce_parse) of *tlen bytes. Never reads outside buf. */
enum ib_drop ib_parse(const uint8_t *buf, size_t len, struct ib_lrh *l, struct ib_grh *g,
		      const uint8_t **tpkt, size_t *tlen);

/* ---- link control (fabric/README.md) ------------------------------------- */

#define IB_SOFL_LEN 88
#define IB_SOFL_VERSION 1
#define IB_SOFL_NAME_LEN 64
enum ib_sofl_type {
	IB_SOFL_HELLO = 1,
	IB_SOFL_BYE = 2,
	IB_SOFL_ASSIGN = 3,
	/* the fabric's direct paths (fabric/direct.c, transport/ib_direct.h):
	 * DIRECT (fabric to host) names its segment, /proc/PID/fd/N, in
	 * name; COUNT (host to fabric) carries what the host sent straight */
	IB_SOFL_DIRECT = 4,
	IB_SOFL_COUNT = 5,
};

/* PortPhysicalState, IBA 14.2.5.6 table 146 */
enum ib_phys_state {
	IB_PHYS_SLEEP = 1,
	IB_PHYS_POLLING = 2,
	IB_PHYS_DISABLED = 3,
	IB_PHYS_TRAINING = 4,
	IB_PHYS_LINKUP = 5,
	IB_PHYS_ERROR_RECOVERY = 6,
	IB_PHYS_NR
};
extern const char *const ib_phys_names[IB_PHYS_NR];

/* A link control message, fields in host order; name NUL-terminated. */
struct ib_sofl {
	uint8_t type;	    /* enum ib_sofl_type */
	uint8_t phys_state; /* enum ib_phys_state of the sender's port */
	uint8_t port;	    /* the sender's port number */
	uint64_t node_guid; /* 0: not yet known */
	uint64_t port_guid;
	char name[IB_SOFL_NAME_LEN + 1];
};

/* Whether a datagram is a link control message (starts with "SOFL": no IB
 * packet does, its LVer nibble would be 3). */
bool ib_is_sofl(const uint8_t *buf, size_t len);
/* Write m as IB_SOFL_LEN bytes. */
void ib_sofl_write(uint8_t *buf, const struct ib_sofl *m);
/* Read a link control message: 0, or -EINVAL when it is not a well-formed
 * one of version 1 (length, magic, version, type, phys_state). */
int ib_sofl_parse(const uint8_t *buf, size_t len, struct ib_sofl *m);

#endif
