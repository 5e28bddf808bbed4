/*
 * A program's thread steps its SDP connections itself (issue 22: the pump
 * thread out of the data path). The calls of sdp_io.c that move bytes or
 * wait for them — read/write/send/recv and their kin, poll, select,
 * epoll_wait — make the connection's step (sdp_qpc_step: poll the CQ,
 * write what came into the socketpair, send what the program wrote) in
 * the calling thread, and spin so before they would sleep in the kernel;
 * a message then costs no switch to the pump and back. The pump keeps
 * what is asynchronous: a connection no thread steps (its data waits
 * for no call), the CM's events, the end of a connection, a forked child's
 * I/O (the child does not step: the QP is the parent's). While threads
 * step it, the pump is quiet (sdp_conn.c); a thread that is about to
 * sleep in the kernel counts itself a sleeper and wakes a quiet pump.
 *
 * Locks: live_lock guards the list of the process's live connections;
 * taken before a connection's lock (which is only tried here), never
 * after it.
 */
#include "sdp_qpc.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sdp_qpc *live;
static pid_t live_pid, my_pid;
atomic_int sdp_sleepers_all;

/* the list's lock is held across fork, so that a child finds it free */
static void fork_prepare(void) { pthread_mutex_lock(&live_lock); }
static void fork_parent(void) { pthread_mutex_unlock(&live_lock); }

static void fork_child(void)
{
	my_pid = getpid();
	pthread_mutex_unlock(&live_lock);
}

__attribute__((constructor)) static void drive_init(void)
{
	my_pid = getpid();
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

pid_t sdp_pid(void) { return my_pid; }

void sdp_drive_add(struct sdp_qpc *q)
{
	pthread_mutex_lock(&live_lock);
	if (live_pid != my_pid) {
		live = NULL; /* a forked child's copy of the parent's list */
		live_pid = my_pid;
	}
	q->next = live;
	live = q;
	pthread_mutex_unlock(&live_lock);
}

void sdp_drive_del(struct sdp_qpc *q)
{
	struct sdp_qpc **p;

	pthread_mutex_lock(&live_lock);
	for (p = &live; *p; p = &(*p)->next)
		if (*p == q) {
			*p = q->next;
			break;
		}
	pthread_mutex_unlock(&live_lock);
}

struct sdp_qpc *sdp_drive_get(struct sdp_conn *c)
{
	struct sdp_qpc *q = c ? c->priv : NULL;

	if (!q || !atomic_load(&q->live) || q->pid != my_pid)
		return NULL;
	atomic_fetch_add(&q->pub.ref, 1);
	return q;
}

void sdp_drive_put(struct sdp_qpc *q) { sdp_conn_put(&q->pub); }

static void wake(struct sdp_qpc *q)
{
	uint64_t one = 1;

	if (sdp_real.write(q->wake_fd, &one, sizeof(one)) < 0)
		return; /* the counter is full: it is awake anyway */
}

int sdp_drive(struct sdp_qpc *q, int mode)
{
	unsigned int w;
	int ret = 0, local = 0;

	atomic_fetch_add(&q->drives, 1);
	if (!(mode & SDP_STEP_NO_READ))
		atomic_store(&q->want_read, 1);
	atomic_fetch_add(&q->work, 1);
	do {
		/* held: its holder steps again for our `work` */
		if (pthread_mutex_trylock(&q->lock))
			return local;
		w = atomic_load(&q->work);
		if (!q->dead && !q->end) {
			ret = sdp_qpc_step(q, mode);
			q->end = ret;
			local = sdp_qpc_local(q);
			atomic_store_explicit(&q->peer_local, local, memory_order_relaxed);
		}
		pthread_mutex_unlock(&q->lock);
		if (ret) {
			atomic_fetch_add(&q->out_seq, 1);
			wake(q); /* the pump ends it */
			return local;
		}
	} while (atomic_load(&q->work) != w);
	return local;
}

/* A direct read: the receive buffers' bytes straight into the reader's
 * iovec (one copy, where the socketpair makes two and wakes the reader
 * for each buffer), with the step's credit update; only while the
 * program's end holds nothing (what is there came first) and only with
 * the peer on this host (its sends fill the buffers as fast as this
 * copies). Then the pump leaves what comes for the next such read
 * (sdp_qpc_holds): SDP_HOLD_NS, or until a thread sleeps in the kernel
 * on the connection, which wakes it. The lock is waited for: the pump
 * holds it for one step. A buffer the kernel's read would refuse with
 * EFAULT faults here instead, as in rsockets' rrecv. */
ssize_t sdp_drive_take(struct sdp_qpc *q, int fd, const struct msghdr *m)
{
	unsigned int w;
	struct pollfd p = { .fd = fd, .events = POLLIN | POLLRDHUP };
	ssize_t n = -1;
	int ret = 0;

	if (!atomic_load_explicit(&q->peer_local, memory_order_relaxed))
		return -1;
	atomic_fetch_add(&q->drives, 1);
	atomic_fetch_add(&q->work, 1);
	pthread_mutex_lock(&q->lock);
	w = atomic_load(&q->work);
	/* the program's end holds bytes, or its end of stream (it shut
	 * it for reading, or the peer's DisConn came): the kernel's read */
	if (!q->dead && !q->end && !q->app_gone && sdp_real.poll(&p, 1, 0) == 0) {
		q->take = m;
		q->take_iov = 0;
		q->take_off = 0;
		q->taken = 0;
		ret = sdp_qpc_step(q, SDP_STEP_NO_READ | SDP_STEP_TAKE);
		q->end = ret;
		n = (ssize_t)q->taken;
		q->n_taken += q->taken;
		q->take = NULL;
		/* what the step ended is the socketpair's to say (EOF, error) */
		if (ret && !n)
			n = -1;
	}
	pthread_mutex_unlock(&q->lock);
	if (n > 0)
		atomic_store(&q->direct_ns, sdp_now_ns());
	if (ret) {
		atomic_fetch_add(&q->out_seq, 1);
		wake(q); /* the pump ends it */
	} else if (atomic_load(&q->work) != w) {
		sdp_drive(q, SDP_STEP_NO_READ); /* asked for meanwhile */
	}
	return n;
}

int sdp_qpc_direct(struct sdp_qpc *q)
{
	uint64_t d = atomic_load_explicit(&q->direct_ns, memory_order_relaxed);

	return d && sdp_now_ns() - d < SDP_HOLD_NS;
}

int sdp_qpc_holds(struct sdp_qpc *q)
{
	return !atomic_load(&q->sleepers) && !atomic_load(&sdp_sleepers_all) && sdp_qpc_direct(q);
}

int sdp_drive_held(struct sdp_qpc *q) { return atomic_load(&q->held); }

unsigned int sdp_drive_seq(struct sdp_qpc *q) { return atomic_load(&q->out_seq); }

int sdp_drive_waiting(struct sdp_qpc *q) { return atomic_load(&q->out_wait); }

void sdp_drive_bulk(struct sdp_qpc *q, int on)
{
	if (atomic_load_explicit(&q->bulk_io, memory_order_relaxed) != on)
		atomic_store(&q->bulk_io, on);
}

/* only with the peer on this host: the daemon moves the QP and the
 * pump's spin yields to it, a waiter's spin beside it only takes turns;
 * with a peer on another host the waiter's polls move the QP (and help) */
int sdp_drive_bulky(struct sdp_qpc *q)
{
	return atomic_load(&q->bulk_io) &&
	       atomic_load_explicit(&q->peer_local, memory_order_relaxed);
}

int sdp_drive_all(int *bulky)
{
	struct sdp_qpc *q;
	int any = -1;

	if (!live)
		return -1;
	pthread_mutex_lock(&live_lock);
	if (live_pid == my_pid)
		for (q = live; q; q = q->next) {
			if (sdp_drive_bulky(q)) {
				any = any < 0 ? -2 : any;
				*bulky = 1;
				continue;
			}
			any = sdp_drive(q, SDP_STEP_SHORT) || any > 0;
		}
	pthread_mutex_unlock(&live_lock);
	return any;
}

/* a quiet pump, or one that left bytes for a direct reader (it may
 * sleep on its CQ meanwhile): the thread that sleeps now needs it */
static void wake_quiet(struct sdp_qpc *q)
{
	if (atomic_load(&q->quiet) || atomic_load(&q->held))
		wake(q);
}

void sdp_block_begin(struct sdp_qpc *q)
{
	if (q) {
		atomic_fetch_add(&q->sleepers, 1);
		wake_quiet(q);
		return;
	}
	atomic_fetch_add(&sdp_sleepers_all, 1);
	pthread_mutex_lock(&live_lock);
	if (live_pid == my_pid)
		for (q = live; q; q = q->next)
			wake_quiet(q);
	pthread_mutex_unlock(&live_lock);
}

void sdp_block_end(struct sdp_qpc *q)
{
	atomic_fetch_sub(q ? &q->sleepers : &sdp_sleepers_all, 1);
}

void sdp_conn_kick(struct sdp_conn *c)
{
	struct sdp_qpc *q = sdp_drive_get(c);

	if (q) {
		wake(q);
		sdp_drive_put(q);
	}
}
