/*
 * Selective acknowledgements between two softofed engines
 * (transport/README.md, "Selective acknowledgements"): an extension that
 * a standard IBA peer never sees. A requester that speaks it sets the BTH
 * ext bit (a Resv7 bit, IBA 9.2: zero on send, ignored on receive) on its
 * RC requests; a responder that speaks it and sees the bit answers with
 * the bit on its ACKs, and an ACK it sends while it keeps packets ahead
 * of a gap carries a SACK (which PSNs of the next ROCE_SACK_BITS arrived)
 * instead of a sequence-error NAK. The requester uses SACKs only after it
 * saw the bit on an ACK, and then resends only the holes, once per round
 * trip, probes a lost tail with one packet, and takes random loss for
 * what it is (no halving per loss).
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

void tp_sack_build(const struct sof_tqp *t, uint8_t *buf)
{
	uint8_t map[ROCE_SACK_BITS / 8];

	memset(map, 0, sizeof(map));
	for (uint32_t i = 1; t->ooo && i < ROCE_SACK_BITS; i++) {
		uint32_t psn = (t->epsn + i) & ROCE_PSN_MASK;
		const struct tp_ooo *o = &t->ooo[psn % TP_OOO_SLOTS];

		if (!o->used || o->h.psn != psn)
			continue;
		/* a READ kept: the PSNs of its responses are its too */
		for (uint32_t n = (o->h.opcode & ~ROCE_SVC_MASK) == ROCE_READ_REQ
				      ? tp_npkts(t, o->h.dmalen)
				      : 1;
		     n && i < ROCE_SACK_BITS; n--, i++)
			map[i >> 3] |= (uint8_t)(0x80u >> (i & 7));
		i--;
	}
	roce_sack_write(buf, t->epsn, map);
}

/* ---- requester ----------------------------------------------------------------- */

/* A hole resent is taken for lost again when a packet sent after it has
 * arrived and it has not (as RACK, RFC 8985), or, when nothing was sent
 * after it, SACK_ROUND_SRTTS smoothed round trips plus SACK_ROUND_MIN_NS
 * (a window's time in the queues) after the last resend went: the SACK
 * that a tail-loss probe draws then shows it missing still. */
#define SACK_ROUND_SRTTS 2u
#define SACK_ROUND_MIN_NS 250000u
/* A round trip whose SACKs show more holes than this share of the window
 * is congestion (a queue that overflows drops runs of packets); random
 * loss of a few packets leaves the window as it is. */
#define SACK_CONGESTED_SHARE 8u
#define SACK_DUPTHRESH 3u

static bool round_over(const struct sof_tqp *t, uint32_t una, uint32_t hi, uint64_t now)
{
	uint64_t since = now - t->sack_round_ns;

	/* a resend overtaken by later packets, once a round trip passed (a
	 * network that reorders by more than that resends once a trip) */
	if (roce_psn_diff((una + hi) & ROCE_PSN_MASK, t->sack_mark) >= 0 && since >= t->srtt_ns)
		return true;
	return since > SACK_ROUND_SRTTS * t->srtt_ns + SACK_ROUND_MIN_NS;
}

void tp_sack_input(struct sof_tqp *t, uint32_t a, const uint8_t *payload, uint32_t paylen)
{
	uint32_t base, una = t->una_psn, sent, hi = 0, cnt = 0, from, holes = 0, lim = 0;
	const uint8_t *map;
	bool probed;
	uint64_t now;

	t->sack_cnt = 0;
	if (!paylen)
		return;
	if (!roce_sack_parse(payload, paylen, &base, &map) || base != ((a + 1) & ROCE_PSN_MASK)) {
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
	for (uint32_t i = 1; i < ROCE_SACK_BITS; i++) {
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
	if (!hi)
		return;
	/* The first SACK after a tail-loss probe: the probe went two
	 * smoothed round trips after the last progress and is the newest
	 * packet, so every hole below what it SACKed is lost, and so is a
	 * resend of one (as RACK with TLP, RFC 8985 7.3: a packet sent
	 * after it arrived, long after it). Without this a burst lost at the
	 * tail of a window (a dropped GSO frame is up to 64 packets) left
	 * one SACKed packet behind its holes, below the duplicate threshold:
	 * the holes went one per probe round, the probes twice as late each
	 * time, into local ACK timeouts. */
	probed = t->sack_probed;
	t->sack_probed = false;
	/* a hole counts as lost once SACK_DUPTHRESH packets after it arrived
	 * (as TCP's duplicate ACK threshold): one merely overtaken waits */
	for (uint32_t i = hi, n = 0; !probed && i > 0; i--) {
		if (roce_sack_bit(map, i) && ++n == SACK_DUPTHRESH) {
			lim = i;
			break;
		}
	}
	if (probed)
		lim = hi;
	now = sof_now_ns();
	/* the holes below sack_next were resent once; when una has not
	 * moved for a round since, its packet was lost again: it alone is
	 * resent (the holes after it get their turn when they are una), so
	 * a network that reorders by more than a round trip costs one
	 * packet per round, not a window */
	if (probed) {
		/* all of them again, below: a new round */
		t->sack_next = una;
		t->sack_round_una = una;
		t->sack_round_ns = now;
	} else if (t->sack_round_una != una || roce_psn_diff(t->sack_next, una) < 0) {
		t->sack_round_una = una;
		t->sack_round_ns = now;
		if (roce_psn_diff(t->sack_next, una) < 0)
			t->sack_next = una;
	} else if (round_over(t, una, hi, now) && roce_psn_diff(una, t->psn) < 0 &&
		   tp_req_resend(t, una)) {
		holes++;
		t->sack_round_ns = now;
		t->sack_mark = t->psn;
	}
	/* a packet sent from now on leaves after the resends below */
	if (roce_psn_diff(t->sack_next, (una + lim) & ROCE_PSN_MASK) < 0)
		t->sack_mark = t->psn;
	from = (uint32_t)roce_psn_diff(t->sack_next, una);
	for (uint32_t i = from; i < lim; i++) {
		uint32_t psn = (una + i) & ROCE_PSN_MASK;

		if (roce_sack_bit(map, i))
			continue;
		/* one the requester is sending again anyway (a go-back) */
		if (roce_psn_diff(psn, t->psn) >= 0)
			break;
		/* (false: inside a READ's responses, which come by themselves) */
		if (tp_req_resend(t, psn))
			holes++;
	}
	if (roce_psn_diff((una + lim) & ROCE_PSN_MASK, t->sack_next) > 0)
		t->sack_next = (una + lim) & ROCE_PSN_MASK;
	tp_trace("qp %06x sack: una %06x hi %u cnt %u next %06x mark %06x psn %06x resent %u "
		 "since %llu srtt %llu probe %d",
		 t->qp->qpn, una, hi, cnt, t->sack_next, t->sack_mark, t->psn, holes,
		 (unsigned long long)(now - t->sack_round_ns), (unsigned long long)t->srtt_ns,
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
	/* congestion: once per round trip, when its holes are many */
	t->sack_lost += holes;
	if (roce_psn_diff(una, t->sack_epoch) >= 0) {
		if (t->sack_lost * SACK_CONGESTED_SHARE > t->cwnd)
			tp_req_loss(t, false);
		t->sack_lost = 0;
		t->sack_epoch = t->psn;
	}
}

bool tp_sack_window_open(const struct sof_tqp *t)
{
	uint32_t flight = (t->psn - t->una_psn) & ROCE_PSN_MASK;

	/* until the first ACK tells, the responder may keep only this many */
	if (!t->sack_ok && (!tp_sack_on || t->sack_seen))
		return flight < t->cwnd;
	/* the responder keeps at most TP_OOO_SLOTS ahead of a gap */
	if (flight + 1 >= TP_OOO_SLOTS)
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
 * packet, so a late ACK costs little. */
#define TLP_MIN_NS 200000u
#define TLP_FRESH_NS 1000000u

uint64_t tp_sack_probe_ns(const struct sof_tqp *t, uint64_t now, uint64_t to)
{
	uint64_t p = 2 * t->srtt_ns;

	if (!t->sack_ok) {
		if (!tp_sack_on || t->sack_seen)
			return 0;
		p = TLP_FRESH_NS;
	}
	if (p < TLP_MIN_NS)
		p = TLP_MIN_NS;
	p <<= t->sack_tlps < 6 ? t->sack_tlps : 6;
	if (to && p > to / 4)
		p = to / 4;
	return p ? now + p : 0;
}

/* The PSNs the requester compares with una (mod 2^24, roce_psn_diff)
 * follow it, so one left behind by a long loss-free run never reads as
 * 2^23 ahead. */
void tp_sack_acked(struct sof_tqp *t, uint32_t una)
{
	if (roce_psn_diff(t->sack_next, una) < 0)
		t->sack_next = una;
	if (roce_psn_diff(t->sack_mark, una) < 0)
		t->sack_mark = una;
	if (roce_psn_diff(t->sack_epoch, una) < 0)
		t->sack_epoch = una;
}

/* The probe resends the newest packet that can go alone: a READ's
 * response PSNs cannot (its request is what is resent), so a READ at the
 * tail probes with its request. Any packet the responder keeps or has
 * draws a SACK that names the holes. */
bool tp_sack_probe(struct sof_tqp *t)
{
	uint32_t n = (uint32_t)roce_psn_diff(t->psn, t->una_psn);

	for (uint32_t i = 1; i <= n; i++)
		if (tp_req_resend(t, (t->psn - i) & ROCE_PSN_MASK))
			return true;
	return false;
}
