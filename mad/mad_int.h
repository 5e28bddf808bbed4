/*
 * What mad.c and rmpp.c share inside the MAD layer: agents, the sends
 * that wait (for a response, or for RMPP acknowledgements), the RMPP
 * header (IBA 13.6.2.1) and byte-order helpers. Nothing outside mad/
 * includes it.
 */
#ifndef SOFD_MAD_INT_H
#define SOFD_MAD_INT_H

#include "mad.h"
#include "sof_bytes.h"

#include <stdbool.h>
#include <stdint.h>

/* The RMPP header, right after the common MAD header (IBA 13.6.2.1). */
#define SOF_RMPP_HDR_LEN 12u
#define SOF_RMPP_VERSION_OFF 24
#define SOF_RMPP_TYPE_OFF 25
#define SOF_RMPP_FLAGS_OFF 26 /* RRespTime << 3 | RMPPFlags */
#define SOF_RMPP_STATUS_OFF 27
#define SOF_RMPP_SEG_OFF 28	/* Data1: SegmentNumber */
#define SOF_RMPP_PAYLEN_OFF 32 /* Data2: PayloadLength / NewWindowLast */
#define SOF_RMPP_FLAG_ACTIVE 0x01
#define SOF_RMPP_FLAG_FIRST 0x02
#define SOF_RMPP_FLAG_LAST 0x04
#define SOF_RMPP_TYPE_DATA 1
#define SOF_RMPP_TYPE_ACK 2
#define SOF_RMPP_TYPE_STOP 3
#define SOF_RMPP_TYPE_ABORT 4
/* the bytes of a segment after the RMPP header (PayloadLength's unit) */
#define SOF_RMPP_SEG_PAYLOAD (SOF_MAD_LEN - SOF_MAD_HDR_LEN - SOF_RMPP_HDR_LEN)

struct agent {
	struct agent *next;
	uint32_t id; /* the upper half of its requests' TIDs */
	struct sofd_mad_reg reg;
	sofd_mad_recv_fn fn; /* the daemon's own agents (every method) */
	const struct sofd_mad_agent_ops *ops;
	void *ctx;
};

/* A send that waits: for its response (wait_resp), and for an RMPP
 * transfer (rmpp) the acknowledgements of its segments first. */
struct msend {
	struct msend *next;
	struct agent *a;
	uint64_t tid;
	uint8_t mgmt_class;
	bool wait_resp;
	struct sofd_mad_addr to;
	uint8_t *msg;
	uint32_t len;
	uint32_t timeout_ms, retries;
	uint64_t deadline; /* ns, sof_now_ns; UINT64_MAX: its response arrives */
	uint64_t cookie;
	/* RMPP sender (IBA 13.6.5): segments 1..nseg, acknowledged up to
	 * last_ack, the receiver's window up to win_last, sent up to sent */
	bool rmpp, rmpp_done;
	uint32_t nseg, last_ack, win_last, sent, pad, hdr_len;
	uint32_t fast_from; /* the segment last sent again at a repeated ACK */
};


/* mad.c */
void sofd_mad_deliver(struct agent *a, const uint8_t *msg, uint32_t len,
		      const struct sofd_mad_addr *from);
struct msend *sofd_mad_resp_match(struct agent *a, const struct sof_mad_hdr *h,
				  const struct sofd_mad_addr *from);
struct msend *sofd_mad_send_by_tid(struct agent *a, uint64_t tid, uint8_t mgmt_class);
void sofd_mad_send_done(struct msend *s);
void sofd_mad_send_fail(struct msend *s, int status);
/* Where the data of a class's MADs begins (the kernel's
 * ib_get_mad_data_offset): after the class's own header. */
uint32_t sofd_mad_data_offset(uint8_t mgmt_class);

/* rmpp.c */
/* An RMPP MAD for agent a: true when RMPP took it (a segment, an ACK, a
 * STOP or ABORT of an agent that leaves RMPP to this layer). */
bool sofd_mad_rmpp_recv(struct agent *a, const uint8_t *mad, const struct sofd_mad_addr *from);
/* s is an RMPP message: send its first window. 0 or -errno. */
int sofd_mad_rmpp_send_start(struct msend *s);
/* s's window was not acknowledged in time. */
void sofd_mad_rmpp_send_timeout(struct msend *s, uint64_t now);
/* Reassemblies: the earliest time-out, and those that are due. */
uint64_t sofd_mad_rmpp_deadline(void);
void sofd_mad_rmpp_timers_run(uint64_t now);
/* a goes: its reassemblies too. */
void sofd_mad_rmpp_agent_gone(const struct agent *a);

#endif
