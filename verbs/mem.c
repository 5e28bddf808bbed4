/*
 * Registered memory made shareable: the pages of a memory region are moved,
 * in place, onto sealed memfds that the daemon hands to executors in other
 * processes, so that RDMA WRITE and READ between processes are one memcpy.
 *
 * The program must not notice: the pages keep their addresses, contents and
 * protections. A run of private pages (heap, stack, anonymous mmap, the
 * data and bss of a binary) becomes a segment: its contents are copied into a new memfd mapped
 * at a temporary address, which mremap() then moves over the original range
 * in one step. Segments are reference-counted by the MRs that cover them;
 * the last deregistration moves the pages back onto private anonymous
 * memory the same way. After fork() the child's copies are made private
 * again (pthread_atfork), so a child never shares the parent's data.
 *
 * Limits: shared mappings (MAP_SHARED) cannot be registered
 * (EOPNOTSUPP); another thread writing to the pages during the copy of a
 * registration or deregistration may lose that write — as with the real
 * stack, the buffer belongs to the HCA from ibv_reg_mr on. When the range
 * holds the caller's own stack, the move runs on a private stack, so that
 * no live frame changes between copy and move.
 */
#include "sofv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
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

/* ---- /proc/self/maps ------------------------------------------------------------ */

struct map_ent {
	uintptr_t start, end;
	int prot;
	bool shared;
	ino_t ino;
	bool special; /* [vdso], [vvar], [vsyscall]: never movable */
};

struct map_list {
	struct map_ent *e;
	int n, cap;
};

/* Read the mappings that intersect [lo, hi). 0 or -errno. */
static int maps_read(uintptr_t lo, uintptr_t hi, struct map_list *ml)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "re");

	ml->e = NULL;
	ml->n = ml->cap = 0;
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long s, e, ino;
		char perms[8], path[256];
		unsigned long long off;
		unsigned int maj, min;
		struct map_ent m;
		int n;

		path[0] = 0;
		n = sscanf(line, "%lx-%lx %7s %llx %x:%x %lu %255s", &s, &e, perms, &off, &maj,
			   &min, &ino, path);
		if (n < 7)
			continue;
		if (e <= lo || s >= hi)
			continue;
		m.start = s;
		m.end = e;
		m.prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
			 (perms[2] == 'x' ? PROT_EXEC : 0);
		m.shared = perms[3] == 's';
		m.ino = (ino_t)ino;
		m.special = !strncmp(path, "[vvar", 5) || !strncmp(path, "[vdso", 5) ||
			    !strncmp(path, "[vsyscall", 9);
		if (ml->n == ml->cap) {
			int ncap = ml->cap ? ml->cap * 2 : 8;
			struct map_ent *ne = realloc(ml->e, sizeof(*ne) * (size_t)ncap);

			if (!ne) {
				fclose(f);
				free(ml->e);
				return -ENOMEM;
			}
			ml->e = ne;
			ml->cap = ncap;
		}
		ml->e[ml->n++] = m;
	}
	fclose(f);
	return 0;
}

/* ---- moving pages ----------------------------------------------------------------- */

struct move_job {
	uintptr_t start;
	size_t len;
	int memfd; /* to shared: the segment's memfd; to private: -1 */
	ino_t ino; /* to private: only pages still on this inode move */
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

/* Copy [start, start+len) into the mapping at dst, reading pages that are
 * not readable through a temporary protection change. */
static int copy_out(const struct map_list *ml, uintptr_t start, size_t len, uint8_t *dst)
{
	for (int i = 0; i < ml->n; i++) {
		const struct map_ent *m = &ml->e[i];
		uintptr_t s = m->start > start ? m->start : start;
		uintptr_t e = m->end < start + len ? m->end : start + len;

		if (s >= e)
			continue;
		if (!(m->prot & PROT_READ) && mprotect((void *)s, e - s, m->prot | PROT_READ))
			return -errno;
		page_copy(dst + (s - start), (const uint8_t *)s, e - s);
		if (!(m->prot & PROT_READ))
			mprotect((void *)s, e - s, m->prot);
	}
	return 0;
}

/* Give the new pages the protections the old ones had. */
static void restore_prot(const struct map_list *ml, uintptr_t start, size_t len)
{
	for (int i = 0; i < ml->n; i++) {
		const struct map_ent *m = &ml->e[i];
		uintptr_t s = m->start > start ? m->start : start;
		uintptr_t e = m->end < start + len ? m->end : start + len;

		if (s < e && m->prot != (PROT_READ | PROT_WRITE))
			mprotect((void *)s, e - s, m->prot);
	}
}

static void move_run(struct move_job *j)
{
	void *tmp;

	if (j->memfd >= 0)
		tmp = mmap(NULL, j->len, PROT_READ | PROT_WRITE, MAP_SHARED, j->memfd, 0);
	else
		tmp =
		    mmap(NULL, j->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (tmp == MAP_FAILED) {
		j->err = -errno;
		return;
	}
	j->err = copy_out(j->ml, j->start, j->len, tmp);
	if (j->err) {
		munmap(tmp, j->len);
		return;
	}
	if (mremap(tmp, j->len, j->len, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)j->start) ==
	    MAP_FAILED) {
		j->err = -errno;
		munmap(tmp, j->len);
		return;
	}
	restore_prot(j->ml, j->start, j->len);
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
	stk = mmap(NULL, stk_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (stk == MAP_FAILED) {
		j->err = -ENOMEM;
		return;
	}
	mv_job = j;
	if (getcontext(&mv_worker)) {
		j->err = -errno;
		munmap(stk, stk_len);
		return;
	}
	mv_worker.uc_stack.ss_sp = stk;
	mv_worker.uc_stack.ss_size = stk_len;
	mv_worker.uc_link = &mv_caller;
	makecontext(&mv_worker, mv_entry, 0);
	if (swapcontext(&mv_caller, &mv_worker))
		j->err = -errno;
	munmap(stk, stk_len);
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

	err = maps_read(start, start + len, &ml);
	if (err)
		return err;
	for (int i = 0; i < ml.n; i++) {
		if (ml.e[i].start > cur) {
			err = -EFAULT; /* a hole: not mapped */
			goto out;
		}
		/* A private mapping, file-backed or not, is the process's own
		 * copy; a shared one is someone else's too. */
		if (ml.e[i].shared || ml.e[i].special) {
			err = -EOPNOTSUPP;
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
	j = (struct move_job){.start = start, .len = len, .memfd = fd, .ml = &ml};
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

		if (!maps_read(start, start + len, &ml2)) {
			j = (struct move_job){.start = start, .len = len, .memfd = -1, .ml = &ml2};
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

	if (maps_read(sg->start, sg->start + sg->len, &ml))
		return;
	for (int i = 0; i < ml.n; i++) {
		struct map_ent *m = &ml.e[i];
		uintptr_t s = m->start > sg->start ? m->start : sg->start;
		uintptr_t e = m->end < sg->start + sg->len ? m->end : sg->start + sg->len;
		struct map_list one = {.e = m, .n = 1, .cap = 1};
		struct move_job j;

		if (s >= e || !m->shared || m->ino != sg->ino)
			continue;
		j = (struct move_job){.start = s, .len = e - s, .memfd = -1, .ml = &one};
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
