/*
 * Moving a registered region's pages, in place, onto sealed memfds that the
 * daemon hands to executors in other processes, so that RDMA WRITE and READ
 * between processes are one memcpy. Registration itself moves nothing
 * (mem_reg.c); its thread calls this when a peer asks for a region.
 *
 * The program must not notice: the pages keep their addresses, contents and
 * protections. A run of private pages (heap, stack, anonymous mmap, the
 * data and bss of a binary) becomes a segment: the pages that hold data are
 * copied into a new memfd mapped at a temporary address, which mremap()
 * then moves over the original range in one step. Segments are
 * reference-counted by the MRs that cover them; the last deregistration
 * moves the pages back onto private anonymous memory the same way. After
 * fork() the child's copies are made private again (pthread_atfork), so a
 * child never shares the parent's data.
 *
 * Shared mappings (MAP_SHARED) and hugetlb memory are not moved
 * (EOPNOTSUPP: the region stays in place). While pages move they are
 * read-only for a moment: a thread writing to them waits until the move is
 * over (mv_segv, a SIGSEGV handler that stays installed and passes every
 * other fault on to the program's), but a system call writing into them in
 * that moment fails with EFAULT. When the range holds the caller's own
 * stack, the move runs on a private stack, so that no live frame changes
 * between copy and move.
 */
#include "mem_maps.h"
#include "sofv.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

struct sofv_seg {
	uintptr_t start;
	size_t len;
	int memfd;
	ino_t ino;
	int refs;
	bool dead;	       /* made private after fork: nothing shared */
	struct sofv_seg *next; /* sorted by start */
};

/*
 * The page moves go to the kernel directly, not through libc's wrappers:
 * libraries that hook mmap/mremap/munmap to watch the address space (UCX's
 * memory hooks, for one) may replace them with versions that lose
 * arguments, e.g. an mremap that drops MREMAP_FIXED's new address. Moving
 * our own pages is no event such a hook needs to see.
 */
static void *raw_mmap(size_t len, int prot, int flags, int fd)
{
	long r = syscall(SYS_mmap, NULL, len, prot, flags, fd, 0L);

	return r == -1 ? MAP_FAILED : (void *)r;
}

static int raw_munmap(void *addr, size_t len) { return (int)syscall(SYS_munmap, addr, len); }

static int raw_mprotect(void *addr, size_t len, int prot)
{
	return (int)syscall(SYS_mprotect, addr, len, prot);
}

static void *raw_mremap_fixed(void *old, size_t len, void *new_addr)
{
	long r = syscall(SYS_mremap, old, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, new_addr);

	return r == -1 ? MAP_FAILED : (void *)r;
}

static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sofv_seg *segs_head;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static size_t page_size(void)
{
	static size_t pg;

	if (!pg) {
		long v = sysconf(_SC_PAGESIZE);

		pg = v > 0 ? (size_t)v : 4096;
	}
	return pg;
}

/* ---- moving pages ----------------------------------------------------------------- */

struct move_job {
	uintptr_t start;
	size_t len;
	int memfd;  /* to shared: the segment's memfd; to private: -1 */
	ino_t ino;  /* to private: only pages still on this inode move */
	int src_fd; /* to private: the segment's memfd, whose holes need no copy */
	struct map_list *ml;
	int err;
};

/* Copy whole pages. The pages hold more than the program's objects (heap
 * and global redzones under AddressSanitizer, neighbours' data): this copy
 * is below the program's view, so it is not instrumented, and it is done
 * by hand so that no intercepted memcpy is called. */
__attribute__((no_sanitize_address)) static void page_copy(uint8_t *dst, const uint8_t *src,
							   size_t n)
{
#if defined(__x86_64__)
	__asm__ volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
#else
	volatile const uint64_t *s = (volatile const uint64_t *)src;
	volatile uint64_t *d = (volatile uint64_t *)dst;

	for (size_t i = 0; i < n / sizeof(uint64_t); i++)
		d[i] = s[i];
#endif
}

/*
 * Writes during a move. Between the copy and the mremap() a write by another
 * thread would land on the old pages and be lost — and the first and last
 * pages of a region usually hold other data too (malloc's bookkeeping, the
 * neighbouring objects). So the pages are made read-only for the move, and a
 * SIGSEGV handler holds a thread that writes to them until the move is
 * over; the write then runs again on the new pages. A system call writing
 * into the pages in that moment (read(2) into them) fails with EFAULT
 * instead: the one thing the program can notice.
 *
 * The kernel picks the handler when it delivers the fault, which may be
 * after the move is over; so once installed the handler stays, and a fault
 * in a range moved less than MV_LATE_NS ago is retried. Every other fault
 * goes to the handler the program had (re-read whenever the program has
 * replaced ours). Moves are serialized by mem_lock: one range at a time is
 * frozen.
 */
#define MV_RECENT 8
#define MV_LATE_NS 1000000000ull

struct mv_range {
	_Atomic uintptr_t lo, hi;
	_Atomic uint64_t done_ns; /* 0 while moving */
};

static struct mv_range mv_recent[MV_RECENT];
static atomic_uint mv_next;
static struct sigaction mv_old;

static uint64_t mv_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Is a fault at a due to a move (in progress or lately)? Waits for a
 * move in progress to end. */
static bool mv_fault_is_ours(uintptr_t a)
{
	struct timespec ts = {0, 20000};

	for (int i = 0; i < MV_RECENT; i++) {
		struct mv_range *r = &mv_recent[i];
		uint64_t done;

		if (a < atomic_load(&r->lo) || a >= atomic_load(&r->hi))
			continue;
		while (!(done = atomic_load(&r->done_ns)))
			nanosleep(&ts, NULL);
		if (mv_now() - done < MV_LATE_NS)
			return true;
	}
	return false;
}

static void mv_segv(int sig, siginfo_t *si, void *uc)
{
	if (si->si_code == SEGV_ACCERR && mv_fault_is_ours((uintptr_t)si->si_addr))
		return; /* the access runs again, on the new pages */
	if (mv_old.sa_flags & SA_SIGINFO) {
		mv_old.sa_sigaction(sig, si, uc);
	} else if (mv_old.sa_handler != SIG_DFL && mv_old.sa_handler != SIG_IGN) {
		mv_old.sa_handler(sig);
	} else {
		/* default action: a real fault repeats, a sent one is re-sent;
		 * the next move installs mv_segv again */
		sigaction(SIGSEGV, &mv_old, NULL);
		if (si->si_code <= 0)
			raise(sig);
	}
}

/* Make sure mv_segv handles SIGSEGV, chaining to the program's handler. */
static int mv_install(void)
{
	struct sigaction sa, cur;

	if (sigaction(SIGSEGV, NULL, &cur))
		return -errno;
	if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == mv_segv)
		return 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = mv_segv;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	sigfillset(&sa.sa_mask);
	mv_old = cur;
	return sigaction(SIGSEGV, &sa, NULL) ? -errno : 0;
}

/* Make the writable pages of the range read-only; the mover's asynchronous
 * signals wait (their handlers might write there and would wait for the
 * mover itself). Returns the slot of the range in mv_recent, or -1 if the
 * pages are left as they are; thaw() must follow. From here to thaw() the
 * mover allocates nothing and writes only the new pages: the heap or its
 * own stack may be in the range. */
static int freeze(const struct move_job *j, sigset_t *oldmask)
{
	struct mv_range *r;
	sigset_t async;
	unsigned int slot;

	if (mv_install())
		return -1;
	sigfillset(&async);
	sigdelset(&async, SIGSEGV);
	sigdelset(&async, SIGBUS);
	sigdelset(&async, SIGILL);
	sigdelset(&async, SIGFPE);
	pthread_sigmask(SIG_BLOCK, &async, oldmask);
	slot = atomic_fetch_add(&mv_next, 1) % MV_RECENT;
	r = &mv_recent[slot];
	atomic_store(&r->hi, 0);
	atomic_store(&r->done_ns, 0);
	atomic_store(&r->lo, j->start);
	atomic_store(&r->hi, j->start + j->len);
	for (int i = 0; i < j->ml->n; i++) {
		const struct map_ent *m = &j->ml->e[i];
		uintptr_t s = m->start > j->start ? m->start : j->start;
		uintptr_t e = m->end < j->start + j->len ? m->end : j->start + j->len;

		if (s < e && (m->prot & PROT_WRITE))
			raw_mprotect((void *)s, e - s, m->prot & ~PROT_WRITE);
	}
	return (int)slot;
}

/* End of a move: release the waiting writers. */
static void thaw(int slot, const sigset_t *oldmask)
{
	atomic_store(&mv_recent[slot].done_ns, mv_now());
	pthread_sigmask(SIG_SETMASK, oldmask, NULL);
}

/*
 * Only pages that hold data are copied: a page of private anonymous memory
 * that was never touched reads as zero, and so does a hole of a memfd, so
 * neither costs a copy (nor a page of the destination). Which pages of
 * anonymous memory hold data comes from PAGEMAP_SCAN (Linux 6.7, ioctl on
 * /proc/self/pagemap; present or swapped out), which pages of a memfd from
 * SEEK_DATA. Both run while the pages are frozen, so the answer holds, and
 * into buffers allocated before: the mover allocates nothing then.
 */
struct pm_region {
	uint64_t start, end, categories;
};

struct pm_scan {
	uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
	uint64_t category_inverted, category_mask, category_anyof_mask, return_mask;
};
#define PM_SCAN _IOWR('f', 16, struct pm_scan)
#define PM_PAGE_IS_PRESENT (1u << 3)
#define PM_PAGE_IS_SWAPPED (1u << 4)
#define PM_VEC 256

static int pagemap_fd = -1; /* /proc/self/pagemap; under mem_lock */

static struct pm_region pm_vec[PM_VEC];

/* Copy the pages of [s, e) that hold data to dst (the byte at s). Returns
 * false when the kernel cannot say which (then the caller copies all). */
static bool copy_present(uintptr_t s, uintptr_t e, uint8_t *dst)
{
	uintptr_t cur = s;

	if (pagemap_fd < 0)
		return false;
	while (cur < e) {
		struct pm_scan a = {.size = sizeof(a),
				    .start = cur,
				    .end = e,
				    .vec = (uintptr_t)pm_vec,
				    .vec_len = PM_VEC,
				    .category_anyof_mask = PM_PAGE_IS_PRESENT | PM_PAGE_IS_SWAPPED,
				    .return_mask = PM_PAGE_IS_PRESENT | PM_PAGE_IS_SWAPPED};
		long n = ioctl(pagemap_fd, PM_SCAN, &a);

		if (n < 0 && cur == s)
			return false;
		if (n < 0) { /* the rest, all of it */
			page_copy(dst + (cur - s), (const uint8_t *)cur, e - cur);
			return true;
		}
		for (long i = 0; i < n; i++)
			page_copy(dst + (pm_vec[i].start - s), (const uint8_t *)pm_vec[i].start,
				  pm_vec[i].end - pm_vec[i].start);
		if (a.walk_end <= cur)
			break;
		cur = a.walk_end;
	}
	return true;
}

/* Copy the pages of [s, e), mapped from fd at file offset off, that hold
 * data to dst (the byte at s). */
static void copy_data(int fd, uint64_t off, uintptr_t s, uintptr_t e, uint8_t *dst)
{
	uint64_t end = off + (e - s), d = off;

	while (d < end) {
		off_t ds = lseek(fd, (off_t)d, SEEK_DATA), de;

		if (ds < 0 || (uint64_t)ds >= end)
			return; /* ENXIO: no data beyond */
		de = lseek(fd, ds, SEEK_HOLE);
		if (de < 0 || (uint64_t)de > end)
			de = (off_t)end;
		page_copy(dst + ((uint64_t)ds - off), (const uint8_t *)(s + ((uint64_t)ds - off)),
			  (uint64_t)(de - ds));
		d = (uint64_t)de;
	}
}

/* Copy [start, start+len) into the mapping at dst (see above for what is
 * left out), reading pages the program made unreadable since registration
 * by making them read-only (restore_prot() undoes it). */
static int copy_out(const struct move_job *j, uint8_t *dst)
{
	for (int i = 0; i < j->ml->n; i++) {
		const struct map_ent *m = &j->ml->e[i];
		uintptr_t s = m->start > j->start ? m->start : j->start;
		uintptr_t e = m->end < j->start + j->len ? m->end : j->start + j->len;

		if (s >= e)
			continue;
		if (!(m->prot & PROT_READ) && raw_mprotect((void *)s, e - s, PROT_READ))
			return -errno;
		if (j->src_fd >= 0)
			copy_data(j->src_fd, m->off + (s - m->start), s, e, dst + (s - j->start));
		else if (!m->anon || !copy_present(s, e, dst + (s - j->start)))
			page_copy(dst + (s - j->start), (const uint8_t *)s, e - s);
	}
	return 0;
}

/* Give pages in the range the protections of the listed mappings; with
 * fresh set, the pages are new read-write ones and only others change. */
static void restore_prot(const struct map_list *ml, uintptr_t start, size_t len, bool fresh)
{
	for (int i = 0; i < ml->n; i++) {
		const struct map_ent *m = &ml->e[i];
		uintptr_t s = m->start > start ? m->start : start;
		uintptr_t e = m->end < start + len ? m->end : start + len;

		if (s < e && (!fresh || m->prot != (PROT_READ | PROT_WRITE)))
			raw_mprotect((void *)s, e - s, m->prot);
	}
}

/* The job may live on the stack being moved: it is written only after
 * thaw(). */
static void move_run(struct move_job *j)
{
	sigset_t mask;
	int slot;
	void *tmp;
	int err;

	if (j->memfd >= 0)
		tmp = raw_mmap(j->len, PROT_READ | PROT_WRITE, MAP_SHARED, j->memfd);
	else
		tmp = raw_mmap(j->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1);
	if (tmp == MAP_FAILED) {
		j->err = -errno;
		return;
	}
	if (pagemap_fd < 0)
		pagemap_fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	slot = freeze(j, &mask);
	err = copy_out(j, tmp);
	if (!err && raw_mremap_fixed(tmp, j->len, (void *)j->start) == MAP_FAILED)
		err = -errno;
	if (err) {
		raw_munmap(tmp, j->len);
		restore_prot(j->ml, j->start, j->len, false);
	} else {
		restore_prot(j->ml, j->start, j->len, true);
	}
	if (slot >= 0)
		thaw(slot, &mask);
	j->err = err;
}

/* The move of a range holding the caller's stack runs on a private stack
 * (swapcontext), so that no live frame of the caller changes between the
 * copy and the mremap; the caller's registers are saved outside the range.
 * Under mem_lock (or in the single-threaded child after fork). */
static ucontext_t mv_caller, mv_worker;
static struct move_job *mv_job;

static void mv_entry(void) { move_run(mv_job); }

/* Is the calling thread's stack pointer within 64 KiB of the range? (its
 * callees' frames come within that) */
static bool holds_my_stack(uintptr_t start, size_t len)
{
	volatile char here = 0;
	uintptr_t sp = (uintptr_t)&here;

	return sp + 65536 >= start && sp < start + len + 65536;
}

static void move(struct move_job *j)
{
	const size_t stk_len = 256 * 1024;
	void *stk;

	if (!holds_my_stack(j->start, j->len)) {
		move_run(j);
		return;
	}
	stk = raw_mmap(stk_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1);
	if (stk == MAP_FAILED) {
		j->err = -ENOMEM;
		return;
	}
	mv_job = j;
	if (getcontext(&mv_worker)) {
		j->err = -errno;
		raw_munmap(stk, stk_len);
		return;
	}
	mv_worker.uc_stack.ss_sp = stk;
	mv_worker.uc_stack.ss_size = stk_len;
	mv_worker.uc_link = &mv_caller;
	makecontext(&mv_worker, mv_entry, 0);
	if (swapcontext(&mv_caller, &mv_worker))
		j->err = -errno;
	raw_munmap(stk, stk_len);
}

/* ---- segments ------------------------------------------------------------------------ */

/* Make [start, start+len) (page aligned, no segment in it) a new segment.
 * Caller holds mem_lock. */
static int seg_create(uintptr_t start, size_t len, struct sofv_seg **out)
{
	struct map_list ml;
	struct move_job j;
	struct sofv_seg *sg;
	uintptr_t cur = start;
	struct stat st;
	int err, fd;

	err = sofv_maps_read(start, start + len, &ml);
	if (err)
		return err;
	for (int i = 0; i < ml.n; i++) {
		if (ml.e[i].start > cur) {
			err = -EFAULT; /* a hole: not mapped */
			goto out;
		}
		/* A private mapping, file-backed or not, is the process's own
		 * copy; a shared one is someone else's too (it stays in place,
		 * as does hugetlb memory, and the main thread's stack: the
		 * mover is another thread, and a thread whose stack is frozen
		 * cannot take the SIGSEGV that would hold it) */
		if (ml.e[i].shared || ml.e[i].special || ml.e[i].huge || ml.e[i].stack) {
			err = -EOPNOTSUPP;
			goto out;
		}
		/* pages no access reaches cannot be pinned (ib_umem_get) */
		if (!(ml.e[i].prot & PROT_READ)) {
			err = -EFAULT;
			goto out;
		}
		cur = ml.e[i].end;
	}
	if (cur < start + len) {
		err = -EFAULT;
		goto out;
	}
	fd = sof_memfd_create("softofed-mr", len);
	if (fd < 0) {
		err = fd;
		goto out;
	}
	/* Descriptors handed out read-only must not be reopenable writable
	 * through /proc/<pid>/fd by anyone: drop the file's write bits. */
	if (fchmod(fd, 0444) || fstat(fd, &st)) {
		err = -errno;
		close(fd);
		goto out;
	}
	j = (struct move_job){.start = start, .len = len, .memfd = fd, .src_fd = -1, .ml = &ml};
	move(&j);
	if (j.err) {
		err = j.err;
		close(fd);
		goto out;
	}
	sg = calloc(1, sizeof(*sg));
	if (!sg) {
		/* cannot track it: move it back */
		struct map_list ml2;

		if (!sofv_maps_read(start, start + len, &ml2)) {
			j = (struct move_job){
			    .start = start, .len = len, .memfd = -1, .src_fd = fd, .ml = &ml2};
			move(&j);
			free(ml2.e);
		}
		close(fd);
		err = -ENOMEM;
		goto out;
	}
	sg->start = start;
	sg->len = len;
	sg->memfd = fd;
	sg->ino = st.st_ino;
	*out = sg;
out:
	free(ml.e);
	return err;
}

/* Move a segment's pages that are still on its memfd back to private
 * memory (the program may have unmapped or replaced them meanwhile). */
static void seg_privatize(struct sofv_seg *sg)
{
	struct map_list ml;

	if (sofv_maps_read(sg->start, sg->start + sg->len, &ml))
		return;
	for (int i = 0; i < ml.n; i++) {
		struct map_ent *m = &ml.e[i];
		uintptr_t s = m->start > sg->start ? m->start : sg->start;
		uintptr_t e = m->end < sg->start + sg->len ? m->end : sg->start + sg->len;
		struct map_list one = {.e = m, .n = 1, .cap = 1};
		struct move_job j;

		if (s >= e || !m->shared || m->ino != sg->ino)
			continue;
		j = (struct move_job){
		    .start = s, .len = e - s, .memfd = -1, .src_fd = sg->memfd, .ml = &one};
		move(&j);
	}
	free(ml.e);
}

static void seg_insert(struct sofv_seg *sg)
{
	struct sofv_seg **pp = &segs_head;

	while (*pp && (*pp)->start < sg->start)
		pp = &(*pp)->next;
	sg->next = *pp;
	*pp = sg;
}

static void seg_unlink(struct sofv_seg *sg)
{
	for (struct sofv_seg **pp = &segs_head; *pp; pp = &(*pp)->next) {
		if (*pp == sg) {
			*pp = sg->next;
			return;
		}
	}
}

/* Drop one reference. Caller holds mem_lock. */
static void seg_put(struct sofv_seg *sg)
{
	if (--sg->refs > 0)
		return;
	if (!sg->dead) {
		seg_unlink(sg);
		seg_privatize(sg);
		close(sg->memfd);
	}
	free(sg);
}

/* ---- fork ------------------------------------------------------------------------------ */

static void atfork_prepare(void) { pthread_mutex_lock(&mem_lock); }

static void atfork_parent(void) { pthread_mutex_unlock(&mem_lock); }

/* The child gets private copies of every registered page: the segments
 * stay known (MRs still reference them) but no longer share anything. */
static void atfork_child(void)
{
	struct sofv_seg *sg = segs_head;

	/* both name "self" as the parent was when they were opened */
	sofv_maps_forget();
	if (pagemap_fd >= 0)
		close(pagemap_fd);
	pagemap_fd = -1;
	while (sg) {
		struct sofv_seg *next = sg->next;

		seg_privatize(sg);
		close(sg->memfd);
		sg->memfd = -1;
		sg->dead = true;
		sg->next = NULL;
		sg = next;
	}
	segs_head = NULL;
	pthread_mutex_unlock(&mem_lock);
}

static void atfork_register(void) { pthread_atfork(atfork_prepare, atfork_parent, atfork_child); }

int sofv_mem_fork_init(void) { return pthread_once(&atfork_once, atfork_register) ? -EINVAL : 0; }

/* ---- the interface ---------------------------------------------------------------------- */

int sofv_mem_share(void *addr, size_t length, struct sof_mr_run *runs, int *fds, int *nruns,
		   struct sofv_seg ***segs_out, int *nsegs)
{
	size_t pg = page_size();
	uintptr_t start, end, cur;
	struct sofv_seg **held;
	int n = 0, err = 0;

	if (!length || (uintptr_t)addr + length < (uintptr_t)addr)
		return -EINVAL;
	sofv_mem_fork_init();
	start = (uintptr_t)addr & ~(pg - 1);
	end = ((uintptr_t)addr + length + pg - 1) & ~(pg - 1);
	held = calloc(SOF_MAX_MR_RUNS, sizeof(*held));
	if (!held)
		return -ENOMEM;

	pthread_mutex_lock(&mem_lock);
	cur = start;
	while (cur < end) {
		struct sofv_seg *sg = segs_head, *nextseg = NULL;
		size_t take;

		for (; sg; sg = sg->next) {
			if (sg->start <= cur && cur < sg->start + sg->len)
				break;
			if (sg->start > cur) {
				nextseg = sg;
				sg = NULL;
				break;
			}
		}
		if (n == SOF_MAX_MR_RUNS) {
			err = -ENOMEM; /* too fragmented to describe */
			break;
		}
		if (!sg) {
			uintptr_t gend = nextseg && nextseg->start < end ? nextseg->start : end;

			err = seg_create(cur, gend - cur, &sg);
			if (err)
				break;
			seg_insert(sg);
		}
		take = (sg->start + sg->len < end ? sg->start + sg->len : end) - cur;
		fds[n] = dup(sg->memfd);
		if (fds[n] < 0) {
			err = -errno;
			if (!sg->refs) {
				sg->refs = 1;
				seg_put(sg);
			}
			break;
		}
		runs[n].offset = cur - sg->start;
		runs[n].length = take;
		sg->refs++;
		held[n++] = sg;
		cur += take;
	}
	if (err) {
		for (int i = 0; i < n; i++) {
			close(fds[i]);
			seg_put(held[i]);
		}
		pthread_mutex_unlock(&mem_lock);
		free(held);
		return err;
	}
	pthread_mutex_unlock(&mem_lock);
	*nruns = n;
	*segs_out = held;
	*nsegs = n;
	return 0;
}

void sofv_mem_unshare(struct sofv_seg **segs, int nsegs)
{
	pthread_mutex_lock(&mem_lock);
	for (int i = 0; i < nsegs; i++)
		seg_put(segs[i]);
	pthread_mutex_unlock(&mem_lock);
	free(segs);
}
