/*
 * Neighbours and the transmit path. The interface is L3, so resolution
 * happens here, as Linux's ipoib does beside its neighbour table: an IP
 * destination maps to a 20-byte hardware address (learnt from ARP or ND,
 * solicited on the broadcast or solicited-node group), the hardware
 * address's GID to a path (a PathRecord from the SA: LID and SL), the
 * path to an address handle. Packets wait in a short queue while that
 * happens. An entry the peer has not confirmed for NEIGH_REFRESH_MS is
 * solicited again, and removed if that goes unanswered: a peer that went
 * away is forgotten and traffic to it is dropped, nothing waits.
 */
#include "ipoib.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NEIGH_MAX 256
#define NEIGH_QUEUE 16
#define SOLICIT_MS 250	       /* first retry; doubled after each */
#define SOLICIT_TRIES 4
#define FAILED_HOLD_MS 3000    /* a failed entry drops traffic this long */
#define NEIGH_REFRESH_MS 60000 /* unconfirmed this long: solicit again */

/* NEIGH_REFRESH_MS, or $SOFTOFED_IPOIB_NEIGH_SECS (tests shorten it) */
static uint64_t refresh_ms(void)
{
	static uint64_t ms;

	if (!ms) {
		const char *e = getenv("SOFTOFED_IPOIB_NEIGH_SECS");

		ms = e && atoi(e) > 0 ? (uint64_t)atoi(e) * 1000 : NEIGH_REFRESH_MS;
	}
	return ms;
}

enum neigh_state { N_FREE, N_INCOMPLETE, N_PATH, N_READY, N_FAILED };
static const char *const neigh_state_names[] = {
    [N_FREE] = "free",
    [N_INCOMPLETE] = "incomplete",
    [N_PATH] = "path",
    [N_READY] = "ready",
    [N_FAILED] = "failed",
};

struct qframe {
	size_t len;
	uint8_t *data;
	bool resolution; /* an ARP reply or NA: a datagram in any mode */
};

struct neigh {
	enum neigh_state state;
	uint8_t ip[16];
	uint8_t src[16]; /* our address to solicit from */
	struct ipoib_hw hw;
	struct ipoib_path path;
	struct ipoib_ah *ah;
	uint64_t since, confirmed, solicited;
	int tries;
	bool refreshing;
	struct qframe q[NEIGH_QUEUE];
	unsigned nq;
};

static struct neigh neighs[NEIGH_MAX];

static const uint8_t pfx4[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

static bool is_v4(const uint8_t ip[16]) { return !memcmp(ip, pfx4, 12); }

static void q_drop(struct neigh *n)
{
	for (unsigned i = 0; i < n->nq; i++) {
		free(n->q[i].data);
		ipoib.cnt[IC_tx_drop_neigh]++;
	}
	n->nq = 0;
}

static void neigh_free(struct neigh *n)
{
	sa_cancel(n);
	q_drop(n);
	ud_ah_put(n->ah);
	memset(n, 0, sizeof(*n));
}

/* The last one found is looked at first: a TSO packet's segments, and
 * a stream's packets, all go to one neighbour. */
static struct neigh *find_ip(const uint8_t ip[16])
{
	static unsigned last;

	if (neighs[last].state != N_FREE && !memcmp(neighs[last].ip, ip, 16))
		return &neighs[last];
	for (unsigned i = 0; i < NEIGH_MAX; i++)
		if (neighs[i].state != N_FREE && !memcmp(neighs[i].ip, ip, 16)) {
			last = i;
			return &neighs[i];
		}
	return NULL;
}

static struct neigh *find_hw(const struct ipoib_hw *hw)
{
	struct neigh *best = NULL;

	for (unsigned i = 0; i < NEIGH_MAX; i++) {
		struct neigh *n = &neighs[i];

		if ((n->state == N_READY || n->state == N_PATH) && n->hw.qpn == hw->qpn &&
		    !memcmp(n->hw.gid, hw->gid, 16) && (!best || n->state == N_READY))
			best = n;
	}
	return best;
}

static struct neigh *neigh_new(const uint8_t ip[16])
{
	struct neigh *victim = NULL;

	for (unsigned i = 0; i < NEIGH_MAX; i++) {
		struct neigh *n = &neighs[i];

		if (n->state == N_FREE) {
			victim = n;
			break;
		}
		if (!victim || n->confirmed < victim->confirmed)
			victim = n;
	}
	neigh_free(victim);
	memcpy(victim->ip, ip, 16);
	victim->since = victim->confirmed = ipoib_now_ms();
	return victim;
}

/* Connected mode: a peer with the 'C' flag over its RC connection (rc),
 * unless it takes datagrams only (it refused); a frame over the datagram
 * MTU goes no other way (RFC 4755 7.2: the kernel is told the smaller
 * MTU). Resolution's answers (ARP replies, NAs: neigh_send_hw) go as
 * datagrams, so they keep no idle connection alive. */
static int xmit_on(struct neigh *n, const uint8_t *frame, size_t len, bool rc)
{
	int err;

	if (rc && ipoib.connected && (n->hw.flags & IPOIB_HW_C)) {
		err = cm_xmit(&n->hw, frame, len);
		if (err != -ENOTCONN)
			return err;
	}
	if (len > IPOIB_HDR_LEN + ipoib.ud_mtu) {
		if (ipoib_too_big(&ipoib, frame, len, ipoib.ud_mtu))
			ipoib.cnt[IC_tx_too_big]++;
		else
			ipoib.cnt[IC_tx_drop_oversize]++;
		return -EMSGSIZE;
	}
	err = ud_send(n->ah, n->hw.qpn, ipoib.qkey, frame, len);
	if (err) {
		ipoib.cnt[IC_tx_drop_post]++;
		return err;
	}
	return 0;
}

static void q_flush(struct neigh *n)
{
	for (unsigned i = 0; i < n->nq; i++) {
		xmit_on(n, n->q[i].data, n->q[i].len, !n->q[i].resolution);
		free(n->q[i].data);
	}
	n->nq = 0;
}

static void q_add(struct neigh *n, const uint8_t *frame, size_t len, bool resolution)
{
	uint8_t *d;

	if (n->nq == NEIGH_QUEUE || !(d = malloc(len))) {
		ipoib.cnt[IC_tx_drop_queue]++;
		return;
	}
	memcpy(d, frame, len);
	n->q[n->nq++] = (struct qframe){len, d, resolution};
}

/* ---- resolution ------------------------------------------------------------------- */

static void solicit(struct neigh *n)
{
	uint8_t f[IPOIB_HDR_LEN + 128], mip[16], mgid[16];
	size_t len;

	n->solicited = ipoib_now_ms();
	n->tries++;
	if (is_v4(n->ip)) {
		len = ipoib_arp_request(&ipoib, f, n->src + 12, n->ip + 12);
		ipoib.cnt[IC_arp_tx]++;
		mcast_send(NULL, f, len);
		return;
	}
	len = ipoib_nd_solicit(&ipoib, f, n->src, n->ip, mip);
	ipoib.cnt[IC_nd_tx]++;
	ipoib_mgid(mgid, ipoib.pkey, mip);
	mcast_send(mgid, f, len);
}

static void fail(struct neigh *n)
{
	q_drop(n);
	n->state = N_FAILED;
	n->since = ipoib_now_ms();
}

static void path_done(void *arg, int status, const struct ipoib_path *p)
{
	struct neigh *n = arg;
	char ip[64];

	if (n->state != N_PATH)
		return;
	ipoib_ip_str(n->ip, ip, sizeof(ip));
	if (status) {
		ipoib.cnt[IC_path_fails]++;
		ipoib_log("path to %s: failed (%d)", ip, status);
		fail(n);
		return;
	}
	n->path = *p;
	n->path.global = false; /* one subnet: by LID */
	ud_ah_put(n->ah);
	n->ah = ud_ah(&n->path);
	if (!n->ah) {
		ipoib_log("path to %s: no address handle", ip);
		fail(n);
		return;
	}
	ipoib_log("neighbour %s: qpn 0x%06x lid %u sl %u", ip, n->hw.qpn, p->dlid, p->sl);
	n->state = N_READY;
	n->since = ipoib_now_ms();
	q_flush(n);
}

static void path_start(struct neigh *n)
{
	n->state = N_PATH;
	n->since = ipoib_now_ms();
	sa_cancel(n);
	ipoib.cnt[IC_path_queries]++;
	{
		char ip[64];

		ipoib_ip_str(n->ip, ip, sizeof(ip));
		ipoib_log("neighbour %s: qpn 0x%06x, asking the SA for its path", ip, n->hw.qpn);
	}
	if (sa_path(n->hw.gid, path_done, n)) {
		ipoib.cnt[IC_path_fails]++;
		fail(n);
	}
}

void neigh_learn(const uint8_t ip[16], const struct ipoib_hw *hw)
{
	struct neigh *n = find_ip(ip);
	bool same_gid;

	if (!n)
		n = neigh_new(ip);
	same_gid = !memcmp(n->hw.gid, hw->gid, 16);
	n->hw.flags = hw->flags;
	n->hw.qpn = hw->qpn;
	memcpy(n->hw.gid, hw->gid, 16);
	n->confirmed = ipoib_now_ms();
	n->refreshing = false;
	n->tries = 0;
	if (n->state == N_READY && same_gid)
		return;
	if (n->state == N_PATH && same_gid)
		return;
	path_start(n);
}

int neigh_query(const uint8_t ip[16], const uint8_t src[16], struct ipoib_hw *hw)
{
	struct neigh *n = find_ip(ip);

	if (n && (n->state == N_READY || n->state == N_PATH)) {
		*hw = n->hw;
		return 1;
	}
	if (n && n->state == N_FAILED)
		return -EHOSTUNREACH;
	if (n)
		return 0;
	/* unknown: solicit it, as a packet to it would (ipoib_output) */
	n = neigh_new(ip);
	n->state = N_INCOMPLETE;
	memcpy(n->src, src, 16);
	solicit(n);
	return 0;
}

/* ---- transmit ------------------------------------------------------------------- */

void neigh_send_hw(const struct ipoib_hw *to, const uint8_t *frame, size_t len)
{
	struct neigh *n = find_hw(to);

	if (!n) {
		ipoib.cnt[IC_tx_drop_neigh]++;
		return;
	}
	if (n->state == N_READY)
		xmit_on(n, frame, len, false);
	else
		q_add(n, frame, len, true);
}

/* IPv4: a group, the limited broadcast, or an interface's subnet broadcast */
static bool mcast_dst(const uint8_t ip[16], uint8_t mgid[16])
{
	if (is_v4(ip)) {
		if ((ip[12] & 0xf0) == 0xe0) {
			ipoib_mgid(mgid, ipoib.pkey, ip);
			return true;
		}
		if (!memcmp(ip + 12, "\xff\xff\xff\xff", 4) || ipoib_local_bcast4(ip + 12)) {
			ipoib_mgid(mgid, ipoib.pkey, NULL);
			return true;
		}
		return false;
	}
	if (ip[0] == 0xff) {
		ipoib_mgid(mgid, ipoib.pkey, ip);
		return true;
	}
	return false;
}

size_t neigh_tx_mtu(const uint8_t *pkt, size_t len)
{
	uint8_t dst[16], mgid[16];
	struct neigh *n;
	size_t mtu;

	if (!ipoib.connected)
		return ipoib.mtu;
	if ((pkt[0] >> 4) == 4 && len >= 20) {
		memcpy(dst, pfx4, 12);
		memcpy(dst + 12, pkt + 16, 4);
	} else if ((pkt[0] >> 4) == 6 && len >= 40) {
		memcpy(dst, pkt + 24, 16);
	} else {
		return ipoib.ud_mtu;
	}
	if (mcast_dst(dst, mgid))
		return ipoib.ud_mtu;
	n = find_ip(dst);
	/* not resolved yet: it waits whole, and xmit_on sorts it out */
	if (!n || n->state != N_READY)
		return ipoib.mtu;
	if (!(n->hw.flags & IPOIB_HW_C))
		return ipoib.ud_mtu;
	mtu = cm_tx_mtu(&n->hw);
	return mtu ? mtu : ipoib.ud_mtu;
}

void ipoib_output(uint8_t *pkt, size_t len)
{
	/* the header goes in the headroom: the packet is not copied */
	uint8_t *f = pkt - IPOIB_HDR_LEN;
	uint8_t dst[16], src[16], mgid[16];
	struct neigh *n;

	if (len < 20 || ipoib_out_filtered(pkt, len))
		return;
	if (len > ipoib.mtu) {
		ipoib.cnt[IC_tx_drop_oversize]++;
		return;
	}
	if ((pkt[0] >> 4) == 4) {
		memcpy(dst, pfx4, 12);
		memcpy(dst + 12, pkt + 16, 4);
		memcpy(src, pfx4, 12);
		memcpy(src + 12, pkt + 12, 4);
		f[0] = ETH_P_IPV4 >> 8;
		f[1] = ETH_P_IPV4 & 0xff;
	} else if ((pkt[0] >> 4) == 6 && len >= 40) {
		memcpy(dst, pkt + 24, 16);
		memcpy(src, pkt + 8, 16);
		f[0] = ETH_P_IPV6V >> 8;
		f[1] = ETH_P_IPV6V & 0xff;
	} else {
		return;
	}
	f[2] = f[3] = 0;
	ipoib.cnt[IC_tx_packets]++;
	ipoib.cnt[IC_tx_bytes] += len;
	if (mcast_dst(dst, mgid)) {
		/* groups are the datagram MTU's, in either mode */
		if (len > ipoib.ud_mtu) {
			ipoib.cnt[IC_tx_drop_oversize]++;
			return;
		}
		ipoib.cnt[IC_tx_mcast]++;
		mcast_send(mgid, f, IPOIB_HDR_LEN + len);
		return;
	}
	n = find_ip(dst);
	if (n)
		memcpy(n->src, src, 16);
	if (n && n->state == N_READY) {
		xmit_on(n, f, IPOIB_HDR_LEN + len, true);
		return;
	}
	if (n && n->state == N_FAILED) {
		ipoib.cnt[IC_tx_drop_neigh]++;
		return;
	}
	if (!n) {
		n = neigh_new(dst);
		n->state = N_INCOMPLETE;
		memcpy(n->src, src, 16);
		q_add(n, f, IPOIB_HDR_LEN + len, false);
		solicit(n);
		return;
	}
	q_add(n, f, IPOIB_HDR_LEN + len, false);
}

void neigh_tick(uint64_t now)
{
	for (unsigned i = 0; i < NEIGH_MAX; i++) {
		struct neigh *n = &neighs[i];

		switch (n->state) {
		case N_INCOMPLETE:
			/* a group the SM has just joined us to may not reach
			 * the peer yet (its MFTs): retry soon, then back off */
			if (now - n->solicited < (uint64_t)SOLICIT_MS << (n->tries - 1))
				break;
			if (n->tries >= SOLICIT_TRIES)
				fail(n);
			else
				solicit(n);
			break;
		case N_FAILED:
			if (now - n->since >= FAILED_HOLD_MS)
				neigh_free(n);
			break;
		case N_READY:
			/* unconfirmed: ask again, by the groups as at first
			 * (the peer's answer confirms it), then forget it */
			if (now - n->confirmed < refresh_ms())
				break;
			if (!n->refreshing) {
				n->refreshing = true;
				n->tries = 0;
			}
			if (!memcmp(n->src, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 16)) {
				neigh_free(n); /* learnt, never used: nothing to ask from */
				break;
			}
			if (now - n->solicited < SOLICIT_MS * 4)
				break;
			if (n->tries >= SOLICIT_TRIES) {
				char ip[64];

				ipoib_ip_str(n->ip, ip, sizeof(ip));
				ipoib_log("neighbour %s: no answer, forgotten", ip);
				neigh_free(n);
			}
			else
				solicit(n);
			break;
		default:
			break;
		}
	}
}

void neigh_flush(void)
{
	for (unsigned i = 0; i < NEIGH_MAX; i++)
		if (neighs[i].state != N_FREE)
			neigh_free(&neighs[i]);
}

void neigh_dump(char *buf, size_t len)
{
	uint64_t now = ipoib_now_ms();
	size_t off = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < NEIGH_MAX && off + 256 < len; i++) {
		const struct neigh *n = &neighs[i];
		char ip[64], gid[64];
		int w;

		if (n->state == N_FREE)
			continue;
		ipoib_ip_str(n->ip, ip, sizeof(ip));
		ipoib_gid_str(n->hw.gid, gid, sizeof(gid));
		w = snprintf(buf + off, len - off,
			     "neigh %s qpn 0x%06x gid %s lid %u sl %u state %s age %llu\n", ip,
			     n->hw.qpn, gid, n->path.dlid, n->path.sl, neigh_state_names[n->state],
			     (unsigned long long)((now - n->confirmed) / 1000));
		if (w > 0)
			off += (size_t)w;
	}
}
