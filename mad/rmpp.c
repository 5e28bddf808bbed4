/*
 * RMPP, the Reliable Multi-Packet Transaction Protocol (IBA 13.6), for
 * the agents that leave it to the MAD layer (registered with RMPP
 * version 1, without user_rmpp): a message longer than one MAD leaves in
 * segments, each with the message's headers, that the receiver
 * acknowledges; the sender keeps within the receiver's window, sends a
 * window again when its acknowledgement does not come in time (the
 * send's time-out, its retries), and the message is done when its last
 * segment is acknowledged. The receiver puts the segments together in
 * order, acknowledges each one (IBA 13.6.5.2 allows an ACK at any
 * segment) with a window of RECV_WINDOW more, acknowledges again a
 * segment it already has (the sender missed the ACK) and, at a segment
 * out of sequence, the last one in order, which the sender takes as the
 * sign to send again from the missing one (once per gap); and hands the
 * whole message to its agent as the kernel's ib_umad does: the first
 * segment whole, then each further segment's data.
 *
 * A response in segments answers a request still waiting (mad.c): the
 * request stops timing out while its response arrives, and ends when the
 * message is whole. A request in segments whose response does not come
 * is sent again from its first segment (its retries); a receiver that
 * finished a message and sees its first segment again takes it anew. A reassembly that stalls for REASM_IDLE_NS is dropped
 * (its request, if any, fails with ETIMEDOUT); a finished one stays
 * DONE_KEEP_NS to acknowledge a repeated last segment.
 */
#include "mad_int.h"

#include "tp.h"

#include "sof_util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define RECV_WINDOW 64u
#define REASM_IDLE_NS (10ull * 1000000000ull)
#define DONE_KEEP_NS (5ull * 1000000000ull)
/* the time a window waits for its acknowledgement when the send has none */
#define SEND_ACK_MS 1000u
#define MAX_REASM 1024u
/* a window is sent again at least this often before the transfer fails
 * (a response, sent with no retries, still survives a lost ACK) */
#define MIN_WINDOW_RETRIES 5u

struct reasm {
	struct reasm *next;
	struct agent *a;
	uint64_t tid;
	uint8_t mgmt_class;
	uint8_t peer[16];
	uint32_t peer_qpn;
	struct sofd_mad_addr from;
	uint8_t *buf;
	uint32_t len, cap, hdr_len;
	uint32_t next_seg; /* the segment it waits for */
	bool done;
	uint64_t deadline;
	struct msend *req; /* the request this response answers, or NULL */
};

static struct reasm *reasm_list;
static uint32_t nreasm;
static size_t reasm_bytes; /* their buffers together, SOF_MAD_BYTES_MAX */

static uint8_t rmpp_type(const uint8_t *m) { return m[SOF_RMPP_TYPE_OFF]; }
static uint8_t rmpp_flags(const uint8_t *m) { return m[SOF_RMPP_FLAGS_OFF] & 0x07; }

/* ---- sender ------------------------------------------------------------------------- */

/* Segment i (1..nseg) of s, built and sent. */
static void send_seg(struct msend *s, uint32_t i)
{
	uint32_t seg_data = SOF_MAD_LEN - s->hdr_len;
	uint32_t off = s->hdr_len + (i - 1) * seg_data;
	uint32_t n = s->len > off ? s->len - off : 0;
	uint8_t seg[SOF_MAD_LEN];
	uint8_t flags = SOF_RMPP_FLAG_ACTIVE;
	uint32_t paylen = 0;

	memset(seg, 0, sizeof(seg));
	memcpy(seg, s->msg, s->hdr_len);
	if (n > seg_data)
		n = seg_data;
	memcpy(seg + s->hdr_len, s->msg + off, n);
	/* IBA 13.6.2.3: the first segment's PayloadLength is the message's
	 * payload after the RMPP headers, the last one's its own */
	if (i == 1) {
		flags |= SOF_RMPP_FLAG_FIRST;
		paylen = s->nseg * SOF_RMPP_SEG_PAYLOAD - s->pad;
	}
	if (i == s->nseg) {
		flags |= SOF_RMPP_FLAG_LAST;
		paylen = SOF_RMPP_SEG_PAYLOAD - s->pad;
	}
	seg[SOF_RMPP_VERSION_OFF] = 1;
	seg[SOF_RMPP_TYPE_OFF] = SOF_RMPP_TYPE_DATA;
	seg[SOF_RMPP_FLAGS_OFF] = (uint8_t)((s->msg[SOF_RMPP_FLAGS_OFF] & 0xf8) | flags);
	seg[SOF_RMPP_STATUS_OFF] = 0;
	sof_put32(seg + SOF_RMPP_SEG_OFF, i);
	sof_put32(seg + SOF_RMPP_PAYLEN_OFF, paylen);
	(void)sofd_mad_send(&s->to, seg);
}

static uint64_t ack_wait_ns(const struct msend *s)
{
	return (uint64_t)(s->timeout_ms ? s->timeout_ms : SEND_ACK_MS) * 1000000u;
}

/* Send what the window allows beyond what went. */
static void send_window(struct msend *s)
{
	while (s->sent < s->win_last && s->sent < s->nseg)
		send_seg(s, ++s->sent);
	s->deadline = sof_now_ns() + ack_wait_ns(s);
}

int sofd_mad_rmpp_send_start(struct msend *s)
{
	uint32_t seg_data, dlen;

	s->hdr_len = sofd_mad_data_offset(s->mgmt_class);
	seg_data = SOF_MAD_LEN - s->hdr_len;
	dlen = s->len - s->hdr_len;
	s->nseg = dlen ? (dlen + seg_data - 1) / seg_data : 1;
	s->pad = s->nseg * seg_data - dlen;
	if (!s->rmpp && s->retries < MIN_WINDOW_RETRIES)
		s->retries = MIN_WINDOW_RETRIES; /* the first start, not a restart */
	s->rmpp = true;
	s->rmpp_done = false;
	s->last_ack = 0;
	s->sent = 0;
	s->fast_from = 0;
	s->win_last = 1; /* IBA 13.6.5.1: one segment until the first ACK */
	send_window(s);
	return 0;
}

void sofd_mad_rmpp_send_timeout(struct msend *s, uint64_t now)
{
	(void)now;
	if (!s->retries) {
		sofd_mad_send_fail(s, ETIMEDOUT);
		return;
	}
	/* the window again, from the first segment not acknowledged */
	s->retries--;
	s->sent = s->last_ack;
	send_window(s);
}

static void ack_recv(struct msend *s, const uint8_t *mad)
{
	uint32_t seg = sof_get32(mad + SOF_RMPP_SEG_OFF), nwl = sof_get32(mad + SOF_RMPP_PAYLEN_OFF);

	/* IBA 13.6.5.1: an ACK beyond what went, or a window that shrinks
	 * below it, is the receiver's error: ignored */
	if (seg > s->sent || seg < s->last_ack || nwl < seg)
		return;
	if (seg == s->last_ack && seg < s->sent) {
		/* the receiver says again how far it is: it misses segment
		 * seg + 1 (it drops what comes out of sequence). Send again
		 * from there, once per gap, rather than wait for the time-out. */
		if (s->fast_from != seg + 1) {
			s->fast_from = seg + 1;
			s->sent = seg;
			send_window(s);
		}
		return;
	}
	s->last_ack = seg;
	if (nwl > s->win_last)
		s->win_last = nwl > s->nseg ? s->nseg : nwl;
	if (s->last_ack == s->nseg) {
		s->rmpp_done = true;
		if (!s->wait_resp) {
			sofd_mad_send_done(s);
			return;
		}
		s->deadline = sof_now_ns() + (uint64_t)s->timeout_ms * 1000000u;
		return;
	}
	send_window(s);
}

/* ---- receiver ----------------------------------------------------------------------- */

static void send_ack(const struct reasm *r, const uint8_t *data, uint32_t seg, uint32_t nwl)
{
	uint8_t ack[SOF_MAD_LEN];

	/* the class's headers too: a vendor ACK finds its agent by its OUI */
	memset(ack, 0, sizeof(ack));
	memcpy(ack, data, r->hdr_len);
	/* the ACK goes the other way: the R bit flips (IBA 13.6.2.2) */
	ack[3] ^= SOF_MAD_METHOD_RESP;
	sof_put16(ack + 4, 0);
	ack[SOF_RMPP_VERSION_OFF] = 1;
	ack[SOF_RMPP_TYPE_OFF] = SOF_RMPP_TYPE_ACK;
	ack[SOF_RMPP_FLAGS_OFF] = SOF_RMPP_FLAG_ACTIVE;
	sof_put32(ack + SOF_RMPP_SEG_OFF, seg);
	sof_put32(ack + SOF_RMPP_PAYLEN_OFF, nwl);
	(void)sofd_mad_send(&r->from, ack);
}

static void reasm_free(struct reasm *r)
{
	for (struct reasm **pr = &reasm_list; *pr; pr = &(*pr)->next) {
		if (*pr == r) {
			*pr = r->next;
			nreasm--;
			break;
		}
	}
	reasm_bytes -= r->cap;
	free(r->buf);
	free(r);
}

static struct reasm *reasm_find(const struct agent *a, uint64_t tid, uint8_t mgmt_class,
				const struct sofd_mad_addr *from)
{
	for (struct reasm *r = reasm_list; r; r = r->next)
		if (r->a == a && r->tid == tid && r->mgmt_class == mgmt_class &&
		    r->peer_qpn == from->remote_qpn && !memcmp(r->peer, from->dgid, 16))
			return r;
	return NULL;
}

static int reasm_append(struct reasm *r, const uint8_t *p, uint32_t n)
{
	if (r->len + n > SOF_MAD_MSG_MAX)
		return -EMSGSIZE;
	if (r->len + n > r->cap) {
		uint32_t cap = r->cap ? r->cap * 2 : 4 * SOF_MAD_LEN;
		uint8_t *b;

		while (cap < r->len + n)
			cap *= 2;
		if (reasm_bytes - r->cap + cap > SOF_MAD_BYTES_MAX)
			return -ENOBUFS;
		b = realloc(r->buf, cap);
		if (!b)
			return -ENOMEM;
		reasm_bytes = reasm_bytes - r->cap + cap;
		r->buf = b;
		r->cap = cap;
	}
	memcpy(r->buf + r->len, p, n);
	r->len += n;
	return 0;
}

static void data_recv(struct agent *a, const uint8_t *mad, const struct sofd_mad_addr *from)
{
	struct sof_mad_hdr h;
	uint32_t seg = sof_get32(mad + SOF_RMPP_SEG_OFF);
	uint8_t flags = rmpp_flags(mad);
	struct reasm *r;
	struct msend *req = NULL;

	sof_mad_hdr_get(mad, &h);
	r = reasm_find(a, h.tid, h.mgmt_class, from);
	if (r && r->done && seg == 1 && (flags & SOF_RMPP_FLAG_FIRST)) {
		/* the sender starts the message again (its response was lost):
		 * a new transfer */
		reasm_free(r);
		r = NULL;
	}
	if (!r) {
		if (seg != 1 || !(flags & SOF_RMPP_FLAG_FIRST) || nreasm >= MAX_REASM) {
			tp_drop_add(SOF_DROP_mad);
			return;
		}
		if (h.method & SOF_MAD_METHOD_RESP) {
			req = sofd_mad_resp_match(a, &h, from);
			if (!req) {
				tp_drop_add(SOF_DROP_mad); /* nobody waits for it */
				return;
			}
		}
		r = calloc(1, sizeof(*r));
		if (!r)
			return;
		r->a = a;
		r->tid = h.tid;
		r->mgmt_class = h.mgmt_class;
		memcpy(r->peer, from->dgid, 16);
		r->peer_qpn = from->remote_qpn;
		r->from = *from;
		r->hdr_len = sofd_mad_data_offset(h.mgmt_class);
		r->next_seg = 1;
		r->req = req;
		if (req)
			req->deadline = UINT64_MAX; /* its response arrives */
		r->next = reasm_list;
		reasm_list = r;
		nreasm++;
	}
	if (r->done || seg < r->next_seg) {
		/* the sender missed our ACK: say again how far we are */
		send_ack(r, mad, r->next_seg - 1, r->next_seg - 1 + (r->done ? 0 : RECV_WINDOW));
		return;
	}
	if (seg > r->next_seg) {
		tp_drop_add(SOF_DROP_mad); /* IBA 13.6.5.2: out of sequence */
		send_ack(r, mad, r->next_seg - 1, r->next_seg - 1 + RECV_WINDOW);
		return;
	}
	if (seg == 1 ? reasm_append(r, mad, SOF_MAD_LEN)
		     : reasm_append(r, mad + r->hdr_len, SOF_MAD_LEN - r->hdr_len)) {
		/* too long a message for us: the transfer ends (IBA 13.6.3.3) */
		if (r->req)
			sofd_mad_send_fail(r->req, EMSGSIZE);
		reasm_free(r);
		return;
	}
	r->next_seg++;
	r->deadline = sof_now_ns() + REASM_IDLE_NS;
	if (!(flags & SOF_RMPP_FLAG_LAST)) {
		send_ack(r, mad, seg, seg + RECV_WINDOW);
		return;
	}
	{
		/* the last segment's PayloadLength says how much of it is data */
		uint32_t paylen = sof_get32(mad + SOF_RMPP_PAYLEN_OFF);
		uint32_t pad = paylen <= SOF_RMPP_SEG_PAYLOAD ? SOF_RMPP_SEG_PAYLOAD - paylen : 0;

		if (pad > SOF_MAD_LEN - r->hdr_len)
			pad = SOF_MAD_LEN - r->hdr_len;
		if (pad < r->len)
			r->len -= pad;
	}
	send_ack(r, mad, seg, seg);
	r->done = true;
	r->deadline = sof_now_ns() + DONE_KEEP_NS;
	if (r->req) {
		sofd_mad_send_done(r->req);
		r->req = NULL;
	}
	sofd_mad_deliver(a, r->buf, r->len, from);
	reasm_bytes -= r->cap;
	free(r->buf);
	r->buf = NULL;
	r->len = r->cap = 0;
}

bool sofd_mad_rmpp_recv(struct agent *a, const uint8_t *mad, const struct sofd_mad_addr *from)
{
	struct sof_mad_hdr h;
	struct msend *s;
	uint8_t type;

	sof_mad_hdr_get(mad, &h);
	if (a->fn || !a->reg.rmpp_version || a->reg.user_rmpp ||
	    !(mad[SOF_RMPP_FLAGS_OFF] & SOF_RMPP_FLAG_ACTIVE) || sofd_mad_data_offset(h.mgmt_class) == SOF_MAD_HDR_LEN)
		return false;
	type = rmpp_type(mad);
	if (mad[SOF_RMPP_VERSION_OFF] != 1 || type < SOF_RMPP_TYPE_DATA ||
	    type > SOF_RMPP_TYPE_ABORT) {
		tp_drop_add(SOF_DROP_mad);
		return true;
	}
	if (type == SOF_RMPP_TYPE_DATA) {
		data_recv(a, mad, from);
		return true;
	}
	/* ACK, STOP, ABORT: about a message this agent sends */
	s = sofd_mad_send_by_tid(a, h.tid, h.mgmt_class);
	if (!s || !s->rmpp || s->rmpp_done || memcmp(s->to.dgid, from->dgid, 16)) {
		tp_drop_add(SOF_DROP_mad);
		return true;
	}
	if (type == SOF_RMPP_TYPE_ACK)
		ack_recv(s, mad);
	else
		sofd_mad_send_fail(s, ECONNABORTED); /* the receiver gave up */
	return true;
}

uint64_t sofd_mad_rmpp_deadline(void)
{
	uint64_t first = UINT64_MAX;

	for (struct reasm *r = reasm_list; r; r = r->next)
		if (r->deadline < first)
			first = r->deadline;
	return first;
}

void sofd_mad_rmpp_timers_run(uint64_t now)
{
	struct reasm *r, *next;

	for (r = reasm_list; r; r = next) {
		next = r->next;
		if (r->deadline > now)
			continue;
		if (r->req)
			sofd_mad_send_fail(r->req, ETIMEDOUT);
		reasm_free(r);
	}
}

void sofd_mad_rmpp_agent_gone(const struct agent *a)
{
	struct reasm *r, *next;

	for (r = reasm_list; r; r = next) {
		next = r->next;
		if (r->a == a)
			reasm_free(r);
	}
}
