/*
 * The mappings of this process over a range (mem_maps.h): by PROCMAP_QUERY
 * (Linux 6.11, an ioctl on /proc/self/maps: one call per mapping, nothing
 * to format or parse), else from the text of /proc/self/maps.
 */
#include "mem_maps.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

static int ml_add(struct map_list *ml, const struct map_ent *m)
{
	if (ml->n == ml->cap) {
		int ncap = ml->cap ? ml->cap * 2 : 8;
		struct map_ent *ne = realloc(ml->e, sizeof(*ne) * (size_t)ncap);

		if (!ne)
			return -ENOMEM;
		ml->e = ne;
		ml->cap = ncap;
	}
	ml->e[ml->n++] = *m;
	return 0;
}

static bool name_special(const char *path)
{
	return !strncmp(path, "[vvar", 5) || !strncmp(path, "[vdso", 5) ||
	       !strncmp(path, "[vsyscall", 9);
}

/*
 * PROCMAP_QUERY (Linux 6.11, ioctl on /proc/self/maps): the mapping at or
 * after an address, one call per mapping, without formatting and parsing
 * the whole text of the file. The layout is the kernel's uapi
 * (linux/fs.h), which Debian 12's headers predate.
 */
struct pm_query {
	uint64_t size, query_flags, query_addr;
	uint64_t vma_start, vma_end, vma_flags, vma_page_size, vma_offset, inode;
	uint32_t dev_major, dev_minor, vma_name_size, build_id_size;
	uint64_t vma_name_addr, build_id_addr;
};
#define PM_QUERY _IOWR('f', 17, struct pm_query)
#define PM_COVERING_OR_NEXT 0x10
#define PM_VMA_READABLE 0x1
#define PM_VMA_WRITABLE 0x2
#define PM_VMA_EXECUTABLE 0x4
#define PM_VMA_SHARED 0x8

static int maps_fd = -1; /* /proc/self/maps, kept open; under maps_lock */
static pthread_mutex_t maps_lock = PTHREAD_MUTEX_INITIALIZER;

/* maps_read by PROCMAP_QUERY. -ENOTTY when the kernel lacks it. */
static int maps_query(uintptr_t lo, uintptr_t hi, struct map_list *ml)
{
	uintptr_t cur = lo;
	char name[4096];

	if (maps_fd < 0) {
		maps_fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
		if (maps_fd < 0)
			return -errno;
	}
	while (cur < hi) {
		struct pm_query q = {.size = sizeof(q),
				     .query_flags = PM_COVERING_OR_NEXT,
				     .query_addr = cur,
				     .vma_name_size = sizeof(name),
				     .vma_name_addr = (uintptr_t)name};
		struct map_ent m;
		int err;

		name[0] = 0;
		if (ioctl(maps_fd, PM_QUERY, &q)) {
			if (errno == ENOENT)
				break;
			return -errno;
		}
		if (q.vma_start >= hi)
			break;
		m.start = q.vma_start;
		m.end = q.vma_end;
		m.prot = (q.vma_flags & PM_VMA_READABLE ? PROT_READ : 0) |
			 (q.vma_flags & PM_VMA_WRITABLE ? PROT_WRITE : 0) |
			 (q.vma_flags & PM_VMA_EXECUTABLE ? PROT_EXEC : 0);
		m.shared = q.vma_flags & PM_VMA_SHARED;
		m.ino = (ino_t)q.inode;
		m.off = q.vma_offset;
		m.anon = !q.inode && !q.dev_major && !q.dev_minor;
		m.special = q.vma_name_size && name_special(name);
		m.stack = q.vma_name_size && !strncmp(name, "[stack", 6);
		m.huge = q.vma_page_size > 4096;
		err = ml_add(ml, &m);
		if (err)
			return err;
		cur = q.vma_end;
	}
	return 0;
}

/* maps_read from the text of /proc/self/maps (kernels before 6.11). */
static int maps_parse(uintptr_t lo, uintptr_t hi, struct map_list *ml)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "re");

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
		m.off = off;
		m.anon = !ino && !maj && !min;
		m.special = name_special(path);
		m.stack = !strncmp(path, "[stack", 6);
		m.huge = strstr(path, "hugepage") != NULL;
		if (ml_add(ml, &m)) {
			fclose(f);
			return -ENOMEM;
		}
	}
	fclose(f);
	return 0;
}

int sofv_maps_read(uintptr_t lo, uintptr_t hi, struct map_list *ml)
{
	int err;

	ml->e = NULL;
	ml->n = ml->cap = 0;
	pthread_mutex_lock(&maps_lock);
	err = maps_query(lo, hi, ml);
	pthread_mutex_unlock(&maps_lock);
	if (err == -ENOTTY || err == -EINVAL) {
		ml->n = 0;
		err = maps_parse(lo, hi, ml);
	}
	if (err) {
		free(ml->e);
		ml->e = NULL;
	}
	return err;
}

/* The child after fork() has one thread: no lock is held. */
void sofv_maps_forget(void)
{
	if (maps_fd >= 0)
		close(maps_fd);
	maps_fd = -1;
}
