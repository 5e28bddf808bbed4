/*
 * Memory registration in place: ibv_reg_mr checks the range (every page
 * mapped and readable: one PROCMAP_QUERY per mapping, mem_maps.c; not for
 * on-demand paging, whose pages are looked up at each access) and records
 * it; no page moves, so registering costs the same for 4 KiB and
 * for 1 GiB, touched or not, and any memory registers: private, shared
 * (MAP_SHARED, files, SysV and POSIX shared memory), hugetlb, the stack.
 *
 * Other processes reach a region in place through this process's
 * /proc/self/mem (bound to this address space, not to the pid: a reused pid
 * is never reached), which the daemon gets with the first registration of
 * each context and hands, after its checks of key, PD and access, only to
 * processes of this process's user (who could ptrace it anyway). They
 * copy with pread/pwrite (remote_cache.c), counted in this process's fence
 * page (struct sof_mem_fence): ibv_dereg_mr waits until the copies in
 * flight are over (sofv_mem_fence), so no access happens after it returns.
 *
 * A peer that reaches a region asks for its pages to be moved onto memfds
 * it can map (then it copies with memcpy: the same-host fast path), for
 * regions of up to SOF_MOVE_MAX (a move freezes the pages while it copies
 * them; the daemon asks for any size for a process of another user). A
 * thread of this process (started at the first registration) does it
 * (mem_share.c moves private pages; shared and hugetlb mappings stay in
 * place) and hands the memfds to the daemon (SHARE_MR); peers see the
 * fence's move count change and open the region again. During a move the
 * fence's moving flag holds new copies back. A region moved keeps its
 * segments until deregistration, which moves the pages back.
 */
#include "mem_maps.h"
#include "sofv.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* A peer killed in the middle of a copy leaves its count behind: a wait
 * gives up after this and clears it. */
#define FENCE_WAIT_NS 2000000000ull

static pthread_mutex_t ip_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sofv_mr *ip_head;		/* regions tracked; under ip_lock */
static int pmem_fd = -1, fence_fd = -1; /* under ip_lock */
static struct sof_mem_fence *fence;
static bool thread_up; /* under ip_lock */
static pthread_mutex_t fence_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Start a new epoch and wait until the old one's copies are over. With
 * moving, new copies wait too until fence_end. */
static void fence_drain(bool moving)
{
	struct timespec ts = {0, 20000};
	uint64_t t0 = now_ns();
	uint32_t old;

	pthread_mutex_lock(&fence_lock);
	if (moving)
		atomic_store(&fence->moving, 1);
	old = atomic_fetch_add(&fence->epoch, 1) & 1;
	while (atomic_load(&fence->cnt[old])) {
		if (now_ns() - t0 > FENCE_WAIT_NS) {
			atomic_store(&fence->cnt[old], 0);
			break;
		}
		nanosleep(&ts, NULL);
	}
	if (!moving)
		pthread_mutex_unlock(&fence_lock);
}

static void fence_end(void)
{
	atomic_store(&fence->moving, 0);
	pthread_mutex_unlock(&fence_lock);
}

void sofv_mem_fence(void)
{
	if (fence)
		fence_drain(false);
}

/* ---- the share thread ------------------------------------------------------------ */

/* Move m's pages onto memfds and give them to the daemon. Caller holds
 * ip_lock. */
static void share_one(struct sofv_mr *m)
{
	struct sofv_context *s = to_sctx(m->ibmr.context);
	int fds[SOF_MAX_MR_RUNS], nruns = 0, nsegs = 0, err;
	struct sofv_seg **segs = NULL;
	struct sof_reg_mr_req *req;

	m->ip_tried = true;
	req = calloc(1, sizeof(*req));
	if (!req)
		return;
	fence_drain(true);
	err = sofv_mem_share(m->ibmr.addr, m->ibmr.length, req->runs, fds, &nruns, &segs, &nsegs);
	fence_end();
	if (err) { /* shared or hugetlb: stays in place, the daemon is told */
		memset(req, 0, sizeof(*req));
		nruns = 0;
	}
	req->key = m->ibmr.lkey;
	req->pd = m->pd->handle;
	req->access = m->access;
	req->iova = m->iova;
	req->addr = (uintptr_t)m->ibmr.addr;
	req->length = m->ibmr.length;
	req->nruns = (uint32_t)nruns;
	err = sofv_rpc(s, SOF_OP_SHARE_MR, req,
		       offsetof(struct sof_reg_mr_req, runs) + sizeof(req->runs[0]) * (size_t)nruns,
		       fds, nruns, NULL, 0, NULL, NULL);
	sof_close_fds(fds, nruns);
	free(req);
	if (err || !nruns) {
		sofv_mem_unshare(segs, nsegs);
		return;
	}
	m->segs = segs;
	m->nsegs = nsegs;
	atomic_fetch_add(&fence->moves, 1);
}

static void serve(uint32_t key, bool any_size)
{
	pthread_mutex_lock(&ip_lock);
	for (struct sofv_mr *m = ip_head; m; m = m->ip_next) {
		if (m->ibmr.lkey != key || m->ip_tried)
			continue;
		/* a peer of this user copies a large region rather than
		 * have it frozen for the time a move takes */
		if (any_size || m->ibmr.length <= SOF_MOVE_MAX)
			share_one(m);
		break;
	}
	pthread_mutex_unlock(&ip_lock);
}

static void serve_requests(void)
{
	for (int i = 0; i < SOF_FENCE_REQS; i++) {
		uint32_t key = atomic_exchange(&fence->req_any[i], 0);

		if (key)
			serve(key, true);
		key = atomic_exchange(&fence->req[i], 0);
		if (key)
			serve(key, false);
	}
}

static void *share_thread(void *arg)
{
	struct sof_mem_fence *f = arg;

	for (;;) {
		uint32_t seq = atomic_load(&f->req_seq);

		serve_requests();
		sof_futex_wait(&f->req_seq, seq, NULL, true);
	}
	return NULL;
}

/* ---- fork -------------------------------------------------------------------------- */

static void atfork_prepare(void) { pthread_mutex_lock(&ip_lock); }

static void atfork_parent(void) { pthread_mutex_unlock(&ip_lock); }

/* The child's address space is its own: no thread, and a region it
 * registers gets its own /proc/self/mem and fence; the parent's regions
 * are not the child's. */
static void atfork_child(void)
{
	if (pmem_fd >= 0)
		close(pmem_fd);
	if (fence_fd >= 0)
		close(fence_fd);
	pmem_fd = fence_fd = -1;
	fence = NULL;
	thread_up = false;
	ip_head = NULL;
	pthread_mutex_unlock(&ip_lock);
}

static void atfork_register(void) { pthread_atfork(atfork_prepare, atfork_parent, atfork_child); }

/* ---- registration ------------------------------------------------------------------- */

/* Open /proc/self/mem, make the fence page, start the thread, once.
 * Caller holds ip_lock. */
static int inplace_open(void)
{
	sigset_t all, old;
	pthread_attr_t at;
	pthread_t th;
	void *p;
	int fd, err;

	pthread_once(&atfork_once, atfork_register);
	if (pmem_fd < 0) {
		pmem_fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
		if (pmem_fd < 0)
			return -errno;
	}
	if (fence_fd < 0) {
		fd = sof_memfd_create("softofed-fence", sizeof(struct sof_mem_fence));
		if (fd < 0)
			return fd;
		p = mmap(NULL, sizeof(struct sof_mem_fence), PROT_READ | PROT_WRITE, MAP_SHARED, fd,
			 0);
		if (p == MAP_FAILED) {
			close(fd);
			return -ENOMEM;
		}
		fence = p;
		fence_fd = fd;
	}
	if (thread_up)
		return 0;
	/* the thread takes no signal of the program's */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	err = pthread_create(&th, &at, share_thread, fence);
	pthread_attr_destroy(&at);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err)
		return -err;
	thread_up = true;
	return 0;
}

/* Every page of [addr, addr+length) mapped and readable, and writable
 * when the region grants a write (as ib_umem_get pins for write). 0 or
 * -errno. */
static int range_check(void *addr, size_t length, bool write)
{
	const size_t pg = 4096;
	uintptr_t start, end, cur;
	struct map_list ml;
	int err;

	if (!length || (uintptr_t)addr + length < (uintptr_t)addr)
		return -EINVAL;
	start = (uintptr_t)addr & ~(pg - 1);
	end = ((uintptr_t)addr + length + pg - 1) & ~(pg - 1);
	err = sofv_maps_read(start, end, &ml);
	cur = start;
	for (int i = 0; !err && i < ml.n; i++) {
		if (ml.e[i].start > cur || !(ml.e[i].prot & PROT_READ) ||
		    (write && !(ml.e[i].prot & PROT_WRITE)))
			err = -EFAULT; /* a hole, or pages no access reaches */
		else if (ml.e[i].special)
			err = -EOPNOTSUPP; /* [vdso], [vvar] */
		cur = ml.e[i].end;
	}
	if (!err && cur < end)
		err = -EFAULT;
	free(ml.e);
	return err;
}

int sofv_mem_inplace(void *addr, size_t length, bool odp, bool write, bool attach, int fds[2])
{
	int err = odp ? 0 : range_check(addr, length, write);

	if (err)
		return err;
	pthread_mutex_lock(&ip_lock);
	err = inplace_open();
	if (!err && attach) {
		fds[0] = fcntl(pmem_fd, F_DUPFD_CLOEXEC, 3);
		fds[1] = fcntl(fence_fd, F_DUPFD_CLOEXEC, 3);
		if (fds[0] < 0 || fds[1] < 0) {
			err = -EMFILE;
			sof_close_fds(fds, 2);
		}
	}
	pthread_mutex_unlock(&ip_lock);
	return err;
}

void sofv_mem_track(struct sofv_mr *m)
{
	pthread_mutex_lock(&ip_lock);
	m->ip_next = ip_head;
	ip_head = m;
	pthread_mutex_unlock(&ip_lock);
}

void sofv_mem_untrack(struct sofv_mr *m)
{
	pthread_mutex_lock(&ip_lock);
	for (struct sofv_mr **pp = &ip_head; *pp; pp = &(*pp)->ip_next) {
		if (*pp == m) {
			*pp = m->ip_next;
			break;
		}
	}
	m->ip_next = NULL;
	pthread_mutex_unlock(&ip_lock);
}

void sofv_mem_ctx_close(struct sofv_context *s)
{
	pthread_mutex_lock(&ip_lock);
	for (struct sofv_mr **pp = &ip_head; *pp;) {
		if (to_sctx((*pp)->ibmr.context) == s)
			*pp = (*pp)->ip_next;
		else
			pp = &(*pp)->ip_next;
	}
	pthread_mutex_unlock(&ip_lock);
}
