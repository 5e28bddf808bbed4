/*
 * The mappings of this process's address space over a range, as the
 * registration of memory needs them (mem_share.c): bounds, protections,
 * shared or private, file or anonymous, huge pages.
 */
#ifndef SOFV_MEM_MAPS_H
#define SOFV_MEM_MAPS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct map_ent {
	uintptr_t start, end;
	int prot;
	bool shared;
	ino_t ino;
	uint64_t off; /* file offset of start */
	bool anon;    /* no file: pages never touched read as zero */
	bool huge;    /* hugetlb: a memfd of ours would lose its huge pages */
	bool stack;   /* [stack]: the main thread's, which another thread's
		       * move could not freeze under it */
	bool special; /* [vdso], [vvar], [vsyscall]: never movable */
};

struct map_list {
	struct map_ent *e;
	int n, cap;
};

/* Read the mappings that intersect [lo, hi), in address order. 0 or
 * -errno; on success ml->e is the caller's to free. Thread-safe. */
int sofv_maps_read(uintptr_t lo, uintptr_t hi, struct map_list *ml);
/* In the child after fork(): the kept descriptor names the parent. */
void sofv_maps_forget(void);

#endif
