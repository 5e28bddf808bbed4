/*
 * The private mount namespace in which `softofed run` shows the device
 * (present.c), and the one mount technique it needs: covering a
 * directory with a tmpfs that still shows what the directory held.
 *
 * Root unshares a mount namespace; anyone else (and root without
 * CAP_SYS_ADMIN, as in some containers) a user namespace with it, in
 * which the caller's uid and gid map to themselves, so the program runs
 * as who it is and gains no privilege outside. Propagation is made
 * private before the first mount, so nothing we mount reaches the host's
 * namespace; the host's /dev and /sys are never written: a directory we
 * need that does not exist there (/dev/infiniband) is made in a tmpfs
 * over its parent, where every entry of the parent is bound back
 * (symbolic links copied), submounts included.
 */
#include "softofed.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_COVERED 8

/* The tmpfs mounts we made, sealed read-only at the end. */
static char covered[MAX_COVERED][PATH_MAX];
static int ncovered;
static bool in_userns;

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	size_t len = strlen(text);
	int err = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, text, len) != (ssize_t)len)
		err = -errno;
	close(fd);
	return err;
}

/* Map the caller's ids to themselves in the new user namespace; setgroups
 * must be denied before an unprivileged process may write gid_map. */
static int map_ids(uid_t uid, gid_t gid, const char **what)
{
	char line[64];
	int err;

	*what = "setgroups";
	err = write_file("/proc/self/setgroups", "deny");
	if (err && err != -ENOENT)
		return err;
	*what = "uid_map";
	snprintf(line, sizeof(line), "%u %u 1", (unsigned)uid, (unsigned)uid);
	err = write_file("/proc/self/uid_map", line);
	if (err)
		return err;
	*what = "gid_map";
	snprintf(line, sizeof(line), "%u %u 1", (unsigned)gid, (unsigned)gid);
	return write_file("/proc/self/gid_map", line);
}

int soft_ns_enter(const char **what)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();
	int err;

	*what = "unshare(CLONE_NEWNS)";
	if (uid != 0 || unshare(CLONE_NEWNS)) {
		*what = "unshare(CLONE_NEWUSER|CLONE_NEWNS)";
		if (unshare(CLONE_NEWUSER | CLONE_NEWNS))
			return -errno;
		in_userns = true;
		err = map_ids(uid, gid, what);
		if (err)
			return -EUCLEAN; /* we are nobody in there: see softofed.h */
	}
	*what = "making / private";
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return -errno;
	return 0;
}

bool soft_ns_can_mknod(void) { return !in_userns && geteuid() == 0; }

static bool is_covered(const char *dir)
{
	for (int i = 0; i < ncovered; i++)
		if (!strcmp(covered[i], dir))
			return true;
	return false;
}

/* Put entry name of the covered directory (open as dfd) back into dir,
 * now a tmpfs: a symbolic link as a copy, anything else bound, with the
 * mounts below it (MS_REC; a user namespace may not bind without them). */
static int restore_entry(int dfd, const char *dir, const char *name)
{
	char dst[PATH_MAX], src[64], link[PATH_MAX];
	struct stat st;
	ssize_t n;
	int fd;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW))
		return errno == ENOENT ? 0 : -errno; /* gone meanwhile */
	if ((size_t)snprintf(dst, sizeof(dst), "%s/%s", dir, name) >= sizeof(dst))
		return -ENAMETOOLONG;
	if (S_ISLNK(st.st_mode)) {
		n = readlinkat(dfd, name, link, sizeof(link) - 1);
		if (n < 0)
			return -errno;
		link[n] = '\0';
		return symlink(link, dst) ? -errno : 0;
	}
	if (S_ISDIR(st.st_mode)) {
		if (mkdir(dst, st.st_mode & 07777))
			return -errno;
	} else {
		fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0)
			return -errno;
		close(fd);
	}
	/* The directory's fd still names the covered original. */
	snprintf(src, sizeof(src), "/proc/self/fd/%d/", dfd);
	if ((size_t)snprintf(link, sizeof(link), "%s%s", src, name) >= sizeof(link))
		return -ENAMETOOLONG;
	if (!mount(link, dst, NULL, MS_BIND | MS_REC, NULL))
		return 0;
	if (errno != ENOENT)
		return -errno;
	/* gone between readdir and now (a /dev node removed): drop it too */
	if (S_ISDIR(st.st_mode) ? rmdir(dst) : unlink(dst))
		return -errno;
	return 0;
}

static int cover_existing(const char *dir)
{
	struct dirent *e;
	struct stat st;
	char opts[64];
	int dfd, err = 0;
	DIR *d;

	if (ncovered == MAX_COVERED)
		return -ENOSPC;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	if (fstat(dfd, &st)) {
		err = -errno;
		goto out;
	}
	snprintf(opts, sizeof(opts), "mode=%o,size=4m", (unsigned)(st.st_mode & 07777));
	if (mount("softofed", dir, "tmpfs", MS_NOSUID, opts)) {
		err = -errno;
		goto out;
	}
	snprintf(covered[ncovered++], PATH_MAX, "%s", dir);
	d = fdopendir(dup(dfd));
	if (!d) {
		err = -errno;
		goto out;
	}
	while (!err && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			err = restore_entry(dfd, dir, e->d_name);
	closedir(d);
out:
	close(dfd);
	return err;
}

int soft_ns_cover(const char *dir)
{
	char parent[PATH_MAX];
	struct stat st;
	char *slash;
	int err;

	if (is_covered(dir))
		return 0;
	if (!stat(dir, &st))
		return S_ISDIR(st.st_mode) ? cover_existing(dir) : -ENOTDIR;
	if (errno != ENOENT)
		return -errno;
	snprintf(parent, sizeof(parent), "%s", dir);
	slash = strrchr(parent, '/');
	if (!slash || slash == parent)
		return -ENOENT; /* never cover / */
	*slash = '\0';
	err = soft_ns_cover(parent);
	if (err)
		return err;
	if (mkdir(dir, 0755))
		return -errno;
	if (ncovered == MAX_COVERED)
		return -ENOSPC;
	/* It lives in the parent's tmpfs: writable already, nothing to seal. */
	snprintf(covered[ncovered++], PATH_MAX, "%s", dir);
	return 0;
}

void soft_ns_seal(void)
{
	for (int i = 0; i < ncovered; i++)
		mount(NULL, covered[i], NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID, NULL);
}
