/*
 * An SDP connection's send ring: the program's write copies its bytes
 * straight into registered slots that a step then posts (sdp_data.c
 * sdp_transmit), instead of into the socketpair, out of it into a tx slot
 * and only then to the peer (issue 22: two of the sender's three copies
 * were the socketpair's). One writer at a time (`wlock`, which the
 * connection's lock never waits for) fills and publishes slots without
 * the connection's lock; the last published slot takes more bytes while
 * no step has claimed it, so small writes gather into one message.
 * With the peer on this host and every published slot posted, a write's
 * whole pieces go from the program's buffer itself (sdp_send_user) and
 * only the rest into the ring.
 *
 * Order with the socketpair, which stays the path of every process that
 * does not step the connection (a forked child, sendfile), of a writer
 * that finds the ring full on a non-blocking socket, and of the end of
 * stream: the ring takes a write only while the pump's end of the
 * socketpair holds nothing (a peek under `wlock`), and a step reads the
 * socketpair only under `wlock` with every published slot posted. So
 * bytes written to the socketpair after the ring's are read after them,
 * and the ring's after the socketpair's are published after they were
 * read. The socketpair's readiness (POLLOUT, EAGAIN) stays the kernel's:
 * a non-blocking writer that finds the ring full writes into it.
 */
#include "sdp_qpc.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

uint8_t *sdp_ring_slot(struct sdp_qpc *q, uint32_t i)
{
	return q->tx_buf + (size_t)(SDP_TXN + i % SDP_RING_N) * SDP_BUFSZ;
}

static void futex_wake(atomic_uint *a)
{
	syscall(SYS_futex, a, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* (under the lock) */
void sdp_ring_done(struct sdp_qpc *q, uint32_t i)
{
	uint32_t f = atomic_load_explicit(&q->freed, memory_order_relaxed);
	uint32_t p = atomic_load_explicit(&q->posted, memory_order_relaxed);

	atomic_store_explicit(&q->ring[i % SDP_RING_N].state, SDP_RS_FREE, memory_order_relaxed);
	while (f != p && atomic_load_explicit(&q->ring[f % SDP_RING_N].state,
					      memory_order_relaxed) == SDP_RS_FREE)
		f++;
	/* the engine is done with the slots: the writer may fill them */
	atomic_store_explicit(&q->freed, f, memory_order_release);
	if (atomic_load(&q->ring_wait))
		futex_wake(&q->freed);
}

int sdp_ring_busy(struct sdp_qpc *q) { return atomic_load(&q->prod) != atomic_load(&q->freed); }

void sdp_ring_close(struct sdp_qpc *q)
{
	pthread_mutex_lock(&q->wlock);
	atomic_store(&q->ring_on, 0);
	pthread_mutex_unlock(&q->wlock);
	futex_wake(&q->freed);
}

/* Copy up to ROOM bytes from M into DST, M advanced past them. */
static uint32_t take(struct msghdr *m, uint8_t *dst, uint32_t room)
{
	uint32_t got = 0;

	while (got < room && m->msg_iovlen) {
		size_t n = m->msg_iov->iov_len;

		if (n > room - got)
			n = room - got;
		memcpy(dst + got, m->msg_iov->iov_base, n);
		got += (uint32_t)n;
		if (n < m->msg_iov->iov_len) {
			m->msg_iov->iov_base = (char *)m->msg_iov->iov_base + n;
			m->msg_iov->iov_len -= n;
		} else {
			m->msg_iov++;
			m->msg_iovlen--;
		}
	}
	return got;
}

static size_t left(const struct msghdr *m)
{
	size_t i, t = 0;

	for (i = 0; i < m->msg_iovlen; i++)
		t += m->msg_iov[i].iov_len;
	return t;
}

/* Whether the pump's end holds none of the program's bytes and is open
 * for reading (nor shut: the program's shutdown(SHUT_WR) or close, whose
 * EPIPE is the socketpair's to give). (under wlock, the ring on) */
static int socketpair_empty(struct sdp_qpc *q)
{
	char b;

	return sdp_real.recv(q->ufd, &b, 1, MSG_PEEK | MSG_DONTWAIT) < 0 &&
	       (errno == EAGAIN || errno == EWOULDBLOCK);
}

ssize_t sdp_ring_put(struct sdp_qpc *q, struct msghdr *m)
{
	uint32_t max = q->pub.payload_max, p, n, len;
	ssize_t put = 0;
	int err = errno;

	pthread_mutex_lock(&q->wlock);
	if (!atomic_load(&q->ring_on) || !socketpair_empty(q)) {
		pthread_mutex_unlock(&q->wlock);
		errno = err;
		return -1;
	}
	p = atomic_load_explicit(&q->prod, memory_order_relaxed);
	/* whole pieces to a peer on this host go from the program's buffer
	 * itself while every published slot is posted (sdp_data.c) */
	if (p == atomic_load(&q->posted) && left(m) >= q->pub.payload_max &&
	    atomic_load_explicit(&q->peer_local, memory_order_relaxed)) {
		int e = 0;

		pthread_mutex_lock(&q->lock);
		if (!q->dead && !q->end) {
			put += (ssize_t)sdp_send_user(q, m, &e);
			q->end = e;
		}
		pthread_mutex_unlock(&q->lock);
		if (e) {
			pthread_mutex_unlock(&q->wlock);
			sdp_conn_kick(&q->pub);
			errno = err;
			return put;
		}
	}
	/* the last published slot, while no step claimed it, takes more */
	if (p != atomic_load(&q->posted)) {
		struct sdp_ring_slot *s = &q->ring[(p - 1) % SDP_RING_N];
		unsigned int st = SDP_RS_FILLED;

		if (atomic_compare_exchange_strong(&s->state, &st, SDP_RS_APPEND)) {
			len = atomic_load_explicit(&s->len, memory_order_relaxed);
			n = take(m, sdp_ring_slot(q, p - 1) + SDP_TX_DATA_OFF + len, max - len);
			atomic_store_explicit(&s->len, len + n, memory_order_relaxed);
			atomic_store_explicit(&s->state, SDP_RS_FILLED, memory_order_release);
			put += n;
		}
	}
	while (m->msg_iovlen && left(m) &&
	       p - atomic_load_explicit(&q->freed, memory_order_acquire) < SDP_RING_N) {
		struct sdp_ring_slot *s = &q->ring[p % SDP_RING_N];

		n = take(m, sdp_ring_slot(q, p) + SDP_TX_DATA_OFF, max);
		atomic_store_explicit(&s->len, n, memory_order_relaxed);
		atomic_store_explicit(&s->state, SDP_RS_FILLED, memory_order_relaxed);
		p++;
		/* the slot's bytes before the step that claims it */
		atomic_store_explicit(&q->prod, p, memory_order_release);
		put += n;
	}
	pthread_mutex_unlock(&q->wlock);
	errno = err;
	return put;
}

void sdp_ring_wait(struct sdp_qpc *q, int ms)
{
	struct timespec t = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
	uint32_t f = atomic_load(&q->freed);
	int err = errno;

	atomic_fetch_add(&q->ring_wait, 1);
	/* a slot freed after the look above changes `freed`: no sleep */
	if (atomic_load(&q->ring_on) && atomic_load(&q->prod) - f >= SDP_RING_N)
		syscall(SYS_futex, &q->freed, FUTEX_WAIT_PRIVATE, f, &t, NULL, 0);
	atomic_fetch_sub(&q->ring_wait, 1);
	errno = err;
}
