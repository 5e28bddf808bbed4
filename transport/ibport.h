/*
 * The InfiniBand port's state, shared by its two halves (transport/
 * README.md): iblink.c, the link (HELLO/BYE/ASSIGN, the state machine,
 * the SMA's setters, start and stop; the daemon's), and ibpkt.c, the
 * packets (receive checks, sending, the paths; the daemon's and, on a
 * member socket of the link's group, a program's: tp_ib_attach). Inside
 * transport/ only; tp_ib.h is what the hosts see.
 *
 * Same lock contract as tp.h: one thread at a time.
 */
#ifndef TP_IBPORT_H
#define TP_IBPORT_H

#include "tp_ib.h"
#include "tport.h"

#include <sys/socket.h>

/* datagrams a system call reads (recvmmsg) and sends (sendmmsg); a
 * datagram read may be a UDP GRO one of up to TP_IB_RX_BUF bytes (many
 * packets joined by the kernel), one sent a UDP GSO run of up to
 * TP_IB_GSO_SEGS packets and TP_IB_GSO_BYTES bytes (the kernel's
 * UDP_MAX_SEGMENTS, one IP datagram's 64 KiB) */
#define TP_IB_RX_BATCH 16
#define TP_IB_RX_BUF 65536
#define TP_IB_TX_BATCH 64
#define TP_IB_GSO_SEGS 64u
#define TP_IB_GSO_BYTES 65000u

struct tp_ib_port {
	bool on;
	bool member; /* a program's: the packet half on a member socket (tp_ib_attach) */
	int fd;
	uint16_t bound_port;	       /* the link socket's local UDP port */
	const struct sof_gid_shm *shm; /* member: the attributes the daemon publishes */
	uint32_t seq;		       /* member: shm's sequence number last read */
	struct tp_ib_config cfg;
	char name[IB_SOFL_NAME_LEN + 1];
	struct tp_ib_attr attr;
	struct tp_ib_counters *cnt; /* own_cnt, or a member's slot page */
	struct tp_ib_counters own_cnt;
	bool far_up;	   /* the far end's HELLO says Polling or LinkUp, no BYE since */
	uint64_t heard_ns; /* when its last such HELLO came */
	uint8_t far_phys;  /* the phys_state its last HELLO said */
	bool disabled;	   /* our port's PortPhysicalState is Disabled */
	bool known;	   /* our GUIDs are known: ASSIGN, or a direct link */
	uint64_t hello_ns;
	bool gso; /* runs leave as one UDP GSO send (off: SOFTOFED_NO_GSO, refused) */
	/* apart: a packet received may be answered while it is read; what
	 * ibpkt.c built waits in tx until tp_ib_flush (the engine's flush at
	 * the end of each event of the host's loop) or a full batch */
	struct {
		struct mmsghdr m[TP_IB_RX_BATCH];
		struct iovec iov[TP_IB_RX_BATCH];
		struct sockaddr_storage from[TP_IB_RX_BATCH];
		union {
			char b[CMSG_SPACE(sizeof(int))];
			struct cmsghdr align;
		} ctl[TP_IB_RX_BATCH];
		uint8_t buf[TP_IB_RX_BATCH][TP_IB_RX_BUF];
		bool ready;    /* iov, buffers and names pointed once */
		unsigned want; /* datagrams the next read asks for (ibpkt.c) */
	} rx;
	struct {
		unsigned n;
		struct mmsghdr m[TP_IB_TX_BATCH];
		unsigned first[TP_IB_TX_BATCH], count[TP_IB_TX_BATCH]; /* each message's packets */
		/* each packet's: 0 the far end, k + 1 ibdirect.c's host k */
		uint8_t dst[TP_IB_TX_BATCH];
		union sof_udp_seg_ctl ctl[TP_IB_TX_BATCH];
		/* each packet's length and pieces: iov[at[i]] on, up to
		 * at[i + 1] (at[n]: the pieces in use); its headers in buf[i],
		 * a payload sent by reference (RC: tp_send_ref) in pieces of
		 * its own, then pad, ICRC and VCRC in buf[i] after the headers */
		size_t len[TP_IB_TX_BATCH];
		unsigned at[TP_IB_TX_BATCH + 1];
		struct iovec iov[TP_IB_TX_BATCH * (2 + TP_TX_REFS)];
		uint8_t buf[TP_IB_TX_BATCH][IB_MAX_PKT];
	} tx;
};

extern struct tp_ib_port tp_ibp;

/* iblink.c: a member's attributes as the daemon last published them */
void tp_ib_member_sync(void);
/* iblink.c: a SOFL message the link brought */
void tp_ib_link_input(const uint8_t *buf, size_t len);
/* iblink.c: the attributes or the link changed */
void tp_ib_changed(void);
/* ibpkt.c: what waits in tx, out */
void tp_ib_flush(void);
/* ibpkt.c: one datagram read from the link: one packet or SOFL message,
 * or (seg > 0, a UDP GRO datagram) packets of seg bytes, the last one
 * shorter or equal, each checked on its own; how many */
unsigned tp_ib_datagram(const uint8_t *p, size_t len, size_t seg);
/* ibdirect.c: where a sealed packet goes (0: the far end; k + 1:
 * straight to host k, whose address tp_ib_direct_addr gives, counted for
 * the next report); whether a datagram from src that is not the far
 * end's is one a host sent on a direct path that ends here (1), from a
 * host but not (-1: drop it), or from no host (0); the counts to the
 * fabric (now, or when REPORT_NS passed) */
unsigned tp_ib_direct_dest(const uint8_t *p, size_t len);
const struct sockaddr_storage *tp_ib_direct_addr(unsigned dst, socklen_t *len);
int tp_ib_direct_from(const struct sockaddr_storage *src, socklen_t srclen, const uint8_t *p,
		      size_t len, size_t seg);
void tp_ib_direct_report(bool now);
/* whether the segment the fabric named is mapped (mapped now if it was
 * not; a failure is logged once a name) */
bool tp_ib_direct_mapped(void);
/* ibpkt.c: IBA 8.3.1: a multicast DLID with its GRH's MGID */
bool tp_ib_mcast_addr(uint16_t dlid, bool global, const uint8_t dgid[16]);

#endif
