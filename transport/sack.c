/*
 * Selective acknowledgements between two softofed engines
 * (transport/README.md, "Selective acknowledgements"): an extension that
 * a standard IBA peer never sees. A requester that speaks it sets the BTH
 * ext bit (a Resv7 bit, IBA 9.2: zero on send, ignored on receive) on its
 * RC requests; a responder that speaks it and sees the bit answers with
 * the bit on its ACKs, and an ACK it sends while it keeps packets ahead
 * of a gap carries a SACK (which PSNs of the next ROCE_SACK_MAX_BITS
 * arrived) instead of a sequence-error NAK. The requester uses SACKs only
 * after it saw the bit on an ACK, and then resends only the holes: a hole
 * is lost when a packet sent after it (by time, as RACK, RFC 8985) has
 * arrived, so a resend lost again goes again a round trip later; it
 * probes a lost tail with one packet, and takes random loss for what it
 * is (no halving per loss).
 */
#include "tport.h"

#include "sof_wr.h"

#include <stdlib.h>

bool tp_sack_on;

void tp_sack_start(void)
{
	const char *e = getenv("SOFTOFED_SACK");

	/* on unless SOFTOFED_SACK=0: it is used only with a peer that
	 * answers the offer, so a standard peer sees IBA behaviour anyway;
	 * 0 makes this engine the stand-in for one (tests) */
	tp_sack_on = !e || strcmp(e, "0") != 0;
}

/* ---- responder ----------------------------------------------------------------- */

uint32_t tp_sack_build(const struct sof_tqp *t, uint8_t *buf)
{
	uint8_t map[ROCE_SACK_MAX_BITS / 8];
	int32_t top = roce_psn_diff(t->ooo_top, t->epsn);
	uint32_t hi = 0;

	memset(map, 0, sizeof(map));
	if (top <= 0 || top >= (int32_t)TP_OOO_SLOTS)
		top = TP_OOO_SLOTS - 1;
	for (uint32_t i = 1; t->ooo && i <= (uint32_t)top; i++) {
		uint32_t psn = (t->epsn + i) & ROCE_PSN_MASK;
		const struct tp_ooo *o = &t->ooo[psn % TP_OOO_SLOTS];

		if (!o->used || o->h.psn != psn)
			continue;
		/* a READ kept: the PSNs of its responses are its too */
		for (uint32_t n = (o->h.opcode & ~ROCE_SVC_MASK) == ROCE_READ_REQ
				      ? tp_npkts(t, o->h.dmalen)
				      : 1;
		     n && i < ROCE_SACK_MAX_BITS; n--, i++) {
			map[i >> 3] |= (uint8_t)(0x80u >> (i & 7));
			hi = i;
		}
		i--;
	}
	/* the shortest map that holds every bit set */
	return roce_sack_write(buf, t->epsn, map, (hi / ROCE_SACK_BITS + 1) * ROCE_SACK_BITS);
}

/* ---- requester ----------------------------------------------------------------- */

/* A packet sent less than this much before one that arrived may merely
 * be overtaken (RACK's reordering window, RFC 8985 6.2: a quarter of the
 * least round trip), at least SACK_REO_MIN_NS; and one sent before it
 * with SACK_DUPTHRESH packets after it in PSN order arrived is lost at
 * once (TCP's duplicate-ACK threshold), unless it was a resend. */
#define SACK_REO_MIN_NS 20000u
#define SACK_DUPTHRESH 3u
/* A round trip whose SACKs show more holes than this share of the window
 * is congestion (a queue that overflows drops runs of packets); random
 * loss of a few packets leaves the window as it is. */
#define SACK_CONGESTED_SHARE 8u

bool tp_sack_begin(struct sof_tqp *t)
{
	if (!t->sack_tx)
		t->sack_tx = calloc(TP_OOO_SLOTS, sizeof(*t->sack_tx));
	t->sack_ok = t->sack_tx != NULL;
	return t->sack_ok;
}

void tp_sack_sent(const struct sof_tqp *t, uint32_t psn)
{
	struct tp_sack_tx *x;

	if (!t->sack_tx)
		return;
	x = &t->sack_tx[psn % TP_OOO_SLOTS];
	x->ns = tp_now();
	x->resent = roce_psn_diff(psn, t->max_psn) < 0;
	x->sacked = false;
}

/* prtt_ns, the largest recent wait for an answer, falls back by
 * 1/PRTT_FALL of its excess over each smaller sample: after one stall of
 * the peer it covers the next few hundred round trips (tp_sack_probe_ns).
 * A wait is bounded by the whole transport timeout, not half of it: the
 * lone probe waits for it up to the timer. */
#define PRTT_FALL 128u

/* A round trip longer than half the transport timeout is a stall of a
 * process more likely than of the path: a process a loaded machine did
 * not schedule for a while reads ACKs that waited in its socket, and
 * each of them then measures the stall (seconds, at times). Taken as it
 * is, such a sample inflates the smoothed round trip that the tail-loss
 * probe, the reordering window and the delay check's pace wait for, for
 * dozens of samples after; so the smoothed round trip takes at most
 * that much of it. What waits for it stays below the timeout anyway
 * (tp_sack_probe_ns, the reordering window), so the bound costs nothing
 * on a path that is truly that slow. */
uint64_t tp_rtt_sample(struct sof_tqp *t, uint64_t rtt, uint64_t wait)
{
	uint64_t cap = sof_ack_timeout_ns(t->timeout) / 2;

	if (wait > rtt)
		wait = rtt;
	if (cap && wait > 2 * cap)
		wait = 2 * cap;
	if (cap && rtt > cap) {
		tp_trace("qp %06x rtt %llu: a stall, taken as %llu", t->qp->qpn,
			 (unsigned long long)rtt, (unsigned long long)cap);
		rtt = cap;
	}
	if (t->srtt_ns) {
		uint64_t dev = rtt > t->srtt_ns ? rtt - t->srtt_ns : t->srtt_ns - rtt;

		t->rttvar_ns = t->rttvar_ns - t->rttvar_ns / 4 + dev / 4;
		t->srtt_ns = t->srtt_ns - t->srtt_ns / 8 + rtt / 8;
	} else {
		t->srtt_ns = rtt;
		t->rttvar_ns = rtt / 2;
	}
	if (wait >= t->prtt_ns)
		t->prtt_ns = wait;
	else
		t->prtt_ns -= (t->prtt_ns - wait) / PRTT_FALL;
	return rtt;
}

/* The newest send of a PSN that arrived; true when it is newer than any
 * before. PSNs the requester did not send (a READ's responses) hold an
 * older time, which changes nothing. A first send's round trip is a
 * sample (a resend's is not: Karn's rule). */
static bool rack_note(struct sof_tqp *t, uint32_t psn, uint64_t now)
{
	const struct tp_sack_tx *x = &t->sack_tx[psn % TP_OOO_SLOTS];
	uint64_t rtt;

	if (!x->resent && x->ns > t->sack_first_ns)
		t->sack_first_ns = x->ns;
	if (x->ns <= t->sack_rack_ns)
		return false;
	t->sack_rack_ns = x->ns;
	t->sack_rtt_ns = 0;
	if (x->resent || now <= x->ns)
		return true;
	rtt = now - x->ns;
	tp_rtt_sample(t, rtt, rtt);
	t->sack_rtt_ns = rtt;
	if (!t->sack_base_ns || rtt < t->sack_base_ns)
		t->sack_base_ns = rtt;
	return true;
}

/* A queue builds when the window is larger than the path holds: the
 * round trip of the newest arrival exceeds twice the least plus
 * SACK_QUEUE_NS. The window is then cut in proportion to the excess (at
 * most half, at most once per smoothed round trip, as Swift), and grows
 * again by one packet per window acknowledged (tp_req_acked). Without
 * this the window fills the socket buffers of the path (megabytes), a
 * resend waits behind all of it, and a resend lost again costs two such
 * round trips: local ACK timeouts on a link that is merely slow. */
#define SACK_QUEUE_NS 3000000u
#define SACK_MIN_CWND 128u

static void delay_check(struct sof_tqp *t, uint64_t now)
{
	uint64_t rtt = t->sack_rtt_ns, target = 2 * t->sack_base_ns + SACK_QUEUE_NS, cut;

	/* (a window below the floor, a fresh QP's, grows on: slow start) */
	if (!rtt || rtt <= target || now - t->sack_cut_ns < t->srtt_ns || t->cwnd <= SACK_MIN_CWND)
		return;
	cut = t->cwnd * (rtt - target) / (2 * rtt);
	t->cwnd = t->cwnd - (uint32_t)cut > SACK_MIN_CWND ? t->cwnd - (uint32_t)cut : SACK_MIN_CWND;
	t->ssthresh = t->cwnd;
	t->cwnd_acc = 0;
	t->sack_cut_ns = now;
	tp_trace("qp %06x sack delay: rtt %llu base %llu cwnd %u", t->qp->qpn,
		 (unsigned long long)rtt, (unsigned long long)t->sack_base_ns, t->cwnd);
}

void tp_sack_input(struct sof_tqp *t, uint32_t a, const uint8_t *payload, uint32_t paylen)
{
	uint32_t base, bits, una = t->una_psn, sent, hi = 0, cnt = 0, lim = 0, holes = 0;
	const uint8_t *map;
	uint64_t now, reo, first0, to;
	bool newer, fresh = false;

	t->sack_cnt = 0;
	if (!t->sack_tx)
		return;
	now = tp_now();
	if (!paylen) {
		if (((a + 1) & ROCE_PSN_MASK) == una && rack_note(t, a, now))
			delay_check(t, now);
		return;
	}
	if (!roce_sack_parse(payload, paylen, &base, &map, &bits) ||
	    base != ((a + 1) & ROCE_PSN_MASK)) {
		tp_count(SOF_CNT_sack_lies, 1);
		return;
	}
	if (base != una)
		return; /* an ACK older than one already taken */
	tp_count(SOF_CNT_sacks, 1);
	/* base itself is what the responder waits for, and nothing past
	 * what was sent can have arrived: a SACK that says so lies */
	sent = (uint32_t)roce_psn_diff(t->max_psn, una);
	if (roce_sack_bit(map, 0)) {
		tp_count(SOF_CNT_sack_lies, 1);
		return;
	}
	for (uint32_t i = 1; i < bits; i++) {
		if (!roce_sack_bit(map, i))
			continue;
		if (i >= sent) {
			tp_count(SOF_CNT_sack_lies, 1);
			return;
		}
		hi = i;
		cnt++;
	}
	t->sack_cnt = cnt;
	first0 = t->sack_first_ns;
	newer = rack_note(t, a, now);
	for (uint32_t i = hi, n = 0; i > 0; i--) {
		uint32_t psn = (una + i) & ROCE_PSN_MASK;
		struct tp_sack_tx *x = &t->sack_tx[psn % TP_OOO_SLOTS];

		if (!roce_sack_bit(map, i))
			continue;
		/* SACKed first now, sent once, before a packet sent once
		 * that had arrived already: the network reorders (a resend
		 * that overtook packets still queued here says nothing) */
		if (!x->sacked && !x->resent && x->ns && x->ns < first0)
			t->sack_reordered = true;
		/* a packet sent once arrived: data new to the peer */
		fresh |= !x->sacked && !x->resent && x->ns != 0;
		x->sacked = true;
		newer |= rack_note(t, psn, now);
		if (++n == SACK_DUPTHRESH && !lim)
			lim = i;
	}
	/* once the network was seen to reorder, a packet overtaken is not
	 * lost: no duplicate threshold, and a reordering window of a
	 * smoothed round trip (RFC 8985 6.2) */
	if (t->sack_reordered)
		lim = 0;
	if (newer)
		delay_check(t, now);
	/* a packet sent once arrived (SACKed for the first time): the peer
	 * and the path work and deliver new data, and the holes go by RACK
	 * below; the transport timer waits from here (IBA 9.7.6.1.3 times
	 * the ACKs; a SACK is one), so a path slower than the timeout while
	 * a hole is resent is no timeout. Only data sent once counts, each
	 * PSN once: a resend (a tail-loss probe above all) that arrives
	 * says nothing new, and counted it would put the timer off after
	 * every probe for ever while its hole is never found (a peer that
	 * keeps dropping it, or a record RACK cannot judge). So the timer
	 * is put off at most once per PSN the window holds (TP_OOO_SLOTS):
	 * a peer that SACKs without ever acknowledging closes the window,
	 * and then the timer runs out. */
	if (fresh && t->timer_ns) {
		t->timer_ns = now + sof_ack_timeout_ns(t->timeout);
		t->sack_tlps = 0;
		t->sack_deferred = false;
		/* and the tail-loss probe (RFC 8985 7.2): with SACKs coming,
		 * RACK finds what is lost */
		t->probe_ns = tp_sack_probe_ns(t, now, sof_ack_timeout_ns(t->timeout));
	}
	if (!hi)
		return;
	reo = t->sack_base_ns / 4 > SACK_REO_MIN_NS ? t->sack_base_ns / 4 : SACK_REO_MIN_NS;
	if (t->sack_reordered && t->srtt_ns > reo)
		reo = t->srtt_ns;
	/* a hole is found lost well before the transport timer is due */
	to = sof_ack_timeout_ns(t->timeout);
	if (to && reo > to / 8)
		reo = to / 8 > SACK_REO_MIN_NS ? to / 8 : SACK_REO_MIN_NS;
	/* RACK: a hole sent (or resent) well before a packet that arrived
	 * is lost, whatever its PSN; a resend lost again thus goes again
	 * once a packet sent after it arrived, a round trip later. A
	 * tail-loss probe is the newest packet, so the SACK it draws marks
	 * every hole below it (RFC 8985 7.3). */
	for (uint32_t i = 0; i < hi; i++) {
		uint32_t psn = (una + i) & ROCE_PSN_MASK;
		const struct tp_sack_tx *x = &t->sack_tx[psn % TP_OOO_SLOTS];

		if (roce_sack_bit(map, i))
			continue;
		/* one the requester is sending again anyway (a go-back) */
		if (roce_psn_diff(psn, t->psn) >= 0)
			break;
		if (x->ns + reo >= t->sack_rack_ns && (i >= lim || x->resent))
			continue;
		/* (false: inside a READ's responses, which come by themselves) */
		if (tp_req_resend(t, psn, false))
			holes++;
	}
	tp_trace("qp %06x sack: una %06x hi %u cnt %u psn %06x resent %u rack -%llu reo %llu "
		 "srtt %llu probe %d",
		 t->qp->qpn, una, hi, cnt, t->psn, holes,
		 (unsigned long long)(now - t->sack_rack_ns), (unsigned long long)reo,
		 (unsigned long long)t->srtt_ns,
		 t->probe_ns ? (int)((int64_t)(t->probe_ns - now) / 1000) : -1);
	/* the holes' resends may be lost too: the tail-loss probe draws
	 * another SACK, the transport timer left where it is */
	if (!t->probe_ns && t->timer_ns) {
		t->probe_ns = tp_sack_probe_ns(t, now, sof_ack_timeout_ns(t->timeout));
		tp_timer_watch(t);
	}
	if (!holes)
		return;
	tp_count(SOF_CNT_sack_resends, holes);
	tp_count(SOF_CNT_retransmits, holes);
	t->rtt_ns = 0; /* the ACK of the timed packet waits for the holes */
	t->loss_ns = now;
	/* congestion: at most once per round trip, when its holes are many
	 * (and tp_req_loss once per recovery episode) */
	t->sack_lost += holes;
	if (roce_psn_diff(una, t->sack_epoch) >= 0) {
		/* (not below the delay check's floor: a window that small,
		 * a fresh QP's in slow start, sees a hole or two of random
		 * loss as that share, and would shrink on every round trip) */
		if (t->sack_lost * SACK_CONGESTED_SHARE > t->cwnd && t->cwnd > SACK_MIN_CWND)
			tp_req_loss(t, false);
		t->sack_lost = 0;
		t->sack_epoch = t->psn;
	}
}

bool tp_sack_window_open(const struct sof_tqp *t, uint32_t npsn)
{
	uint32_t flight = (t->psn - t->una_psn) & ROCE_PSN_MASK;

	if (!t->sack_ok && (!tp_sack_on || t->sack_seen))
		return flight < t->cwnd;
	/* the responder keeps at most TP_OOO_SLOTS ahead of a gap (IBA
	 * 9.7.1's half of the PSN space is far beyond); until the first ACK
	 * tells whether it speaks the extension, TP_OOO_STD. And every PSN
	 * in flight, a READ's responses too, keeps its own record in sack_tx
	 * (by PSN modulo TP_OOO_SLOTS): a READ that would take the PSNs in
	 * flight past that waits until it goes alone. Else its responses'
	 * records would overwrite those of requests still unacknowledged: a
	 * lost one would then look sent with the READ (or with each probe
	 * that resends the READ), never late enough for RACK to resend it. */
	if (flight + (flight ? npsn : 1) >= (t->sack_ok ? TP_OOO_SLOTS : TP_OOO_STD))
		return false;
	return flight - (t->sack_cnt < flight ? t->sack_cnt : flight) < t->cwnd;
}

/* The tail-loss probe: two smoothed round trips (at least TLP_MIN_NS)
 * after the last progress; again after each probe that drew no progress,
 * twice as late each time. On a fresh QP (no ACK yet, so neither a round
 * trip nor whether the peer speaks the extension is known) the first
 * comes TLP_FRESH_NS after the first packet: the first loss of a QP draws
 * a probe, not a local ACK timeout. A round trip inflated by a loaded
 * machine (or a probe backed off far) is capped at a quarter of the
 * transport timeout, so probes still come before it. A probe resends one
 * packet, so a late ACK costs little.
 * When what is in flight is all the requester has to send (a lone message,
 * the end of a burst), the responder may hold its ACK for its owner's next
 * post (IBA 9.7.5.1.1 lets it coalesce ACKs; verbs/tp_wake.c bounds the
 * hold, but a progress thread woken on a busy CPU ends it later): the
 * probe then waits that much more, as TCP's adds the delayed-ACK time
 * when one segment is in flight (RFC 8985 7.2: PTO = 2 SRTT + WCDelAckT).
 * A packet with more behind it needs no such wait: the ACKs of what
 * follows come without a hold. That wait is four mean deviations of the
 * round trip when longer (RFC 6298's RTO margin): a lone message's ACK
 * comes with its peer's answer, and on a loaded machine the peer's
 * process is off its CPU for milliseconds at times; the deviation grows
 * with such stalls and shrinks back once they stop. And a lone flight's
 * probe waits at least a quarter more than the longest recent wait for
 * an answer (prtt_ns; after a probe only the time since the probe counts,
 * so a loss the probe repaired does not push it up): the mean deviation
 * forgets a stall within a few round trips, while on a machine with 20
 * runnable threads on 2 CPUs a peer is off its CPU for 30-60 ms in 2-4 %
 * of lone round trips (traced, bench/results/2026-11-27-loss4.md). Such
 * a probe may come as late as the transport timer (which then waits a
 * quarter timeout more for the probe's answer, tp_req_timer), as TCP's
 * lone-segment probe waits up to its RTO: on a quiet machine prtt_ns is a
 * round trip and the probe comes within TLP_ACK_DELAY_NS of it. Only the
 * first probe waits that long: the next ones come at half of what is left
 * of the timer's wait each (a probe lost too is found before the timer),
 * and a late ACK answers them all. */
#define TLP_MIN_NS 200000u
#define TLP_FRESH_NS 1000000u
#define TLP_ACK_DELAY_NS 1000000u
#define TLP_AFTER_LOSS_NS 1000000000u

uint64_t tp_sack_probe_ns(const struct sof_tqp *t, uint64_t now, uint64_t to)
{
	uint64_t p = 2 * t->srtt_ns, peak;
	bool lone = t->wq_send == t->wq_tail;

	if (!t->sack_ok) {
		if (!tp_sack_on || t->sack_seen)
			return 0;
		p = TLP_FRESH_NS;
	}
	if (p < TLP_MIN_NS)
		p = TLP_MIN_NS;
	if (lone)
		p += 4 * t->rttvar_ns > TLP_ACK_DELAY_NS ? 4 * t->rttvar_ns : TLP_ACK_DELAY_NS;
	/* (not within a second of a loss seen otherwise: there the probes
	 * find losses, and a late one leaves the timer too little) */
	peak = lone && (!t->loss_ns || now - t->loss_ns > TLP_AFTER_LOSS_NS)
		   ? t->prtt_ns + t->prtt_ns / 4
		   : 0;
	if (lone && !t->sack_tlps) {
		if (p < peak)
			p = peak;
		if (peak > to / 4) /* (then up to the timer) */
			return now + (to && p > to ? to : p);
	}
	p <<= t->sack_tlps < 6 ? t->sack_tlps : 6;
	if (to && p > to / 4)
		p = to / 4;
	/* after such a first probe, the next ones split what is left of the
	 * timer's wait: a stall that outlasted the first draws one or two
	 * more, a probe lost too is resent before the timer */
	if (peak > to / 4 && t->timer_ns > now && p < (t->timer_ns - now) / 2)
		p = (t->timer_ns - now) / 2;
	return p ? now + p : 0;
}

/* The PSNs the requester compares with una (mod 2^24, roce_psn_diff)
 * follow it, so one left behind by a long loss-free run never reads as
 * 2^23 ahead. */
void tp_sack_acked(struct sof_tqp *t, uint32_t old, uint32_t una)
{
	if (roce_psn_diff(t->sack_epoch, una) < 0)
		t->sack_epoch = una;
	/* a packet sent once and never SACKed that arrives after one sent
	 * later did: the network reorders (never on a FIFO link; records
	 * from before tp_sack_begin, time 0, say nothing) */
	if (roce_psn_diff(una, old) > (int32_t)TP_OOO_SLOTS)
		old = (una - TP_OOO_SLOTS) & ROCE_PSN_MASK;
	for (uint32_t p = old; t->sack_tx && !t->sack_reordered && p != una;
	     p = (p + 1) & ROCE_PSN_MASK) {
		const struct tp_sack_tx *x = &t->sack_tx[p % TP_OOO_SLOTS];

		if (x->ns && !x->resent && !x->sacked && x->ns < t->sack_first_ns)
			t->sack_reordered = true;
	}
}

/* The probe resends the newest packet that can go alone: a READ's
 * response PSNs cannot (a request is what is resent), so a READ at the
 * tail probes with a request for its last response alone (requester.c):
 * a READ merely answered late is then served again one packet, not
 * whole. Any packet the responder keeps or has draws a SACK that names
 * the holes. */
bool tp_sack_probe(struct sof_tqp *t)
{
	uint32_t n = (uint32_t)roce_psn_diff(t->psn, t->una_psn);

	for (uint32_t i = 1; i <= n; i++)
		if (tp_req_resend(t, (t->psn - i) & ROCE_PSN_MASK, true))
			return true;
	return false;
}
