/*
 * Implementation of the shared helpers declared in sof_util.h.
 */
#include "sof_util.h"
#include "sof_proto.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int sof_random(void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = getrandom(p, len, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

uint32_t sof_random32(void)
{
	uint32_t v = 0;

	if (sof_random(&v, sizeof(v)))
		v = (uint32_t)sof_now_ns() * 2654435761u; /* not reached on Linux >= 3.17 */
	return v;
}

int sof_memfd_create(const char *name, size_t size)
{
	int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

int sof_memfd_check(int fd, size_t size)
{
	struct stat st;
	int seals;

	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		return -EINVAL;
	if ((uint64_t)st.st_size < size)
		return -EINVAL;
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || !(seals & F_SEAL_SHRINK))
		return -EINVAL;
	return 0;
}

int sof_fd_reopen_ro(int fd)
{
	char path[64];
	int nfd;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	nfd = open(path, O_RDONLY | O_CLOEXEC);
	return nfd < 0 ? -errno : nfd;
}

socklen_t sof_sock_addr(struct sockaddr_un *sun)
{
	size_t n = strlen(SOF_SOCK_NAME);

	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	memcpy(sun->sun_path + 1, SOF_SOCK_NAME, n);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

int sof_send_rec(int sock, const void *buf, size_t len, const int *fds, int nfds)
{
	char cbuf[CMSG_SPACE(sizeof(int) * SOF_MAX_FDS)];
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (nfds < 0 || nfds > SOF_MAX_FDS)
		return -EINVAL;
	if (nfds) {
		struct cmsghdr *cm;

		memset(cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
	}
	for (;;) {
		ssize_t n = sendmsg(sock, &mh, MSG_NOSIGNAL);

		if (n >= 0)
			return (size_t)n == len ? 0 : -EMSGSIZE;
		if (errno != EINTR)
			return -errno;
	}
}

void sof_close_fds(int *fds, int nfds)
{
	for (int i = 0; i < nfds; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
		fds[i] = -1;
	}
}

ssize_t sof_recv_rec(int sock, void *buf, size_t len, int *fds, int *nfds)
{
	char cbuf[CMSG_SPACE(sizeof(int) * SOF_MAX_FDS)];
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr mh = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = cbuf,
		.msg_controllen = sizeof(cbuf),
	};
	int room = nfds ? *nfds : 0, got = 0;
	ssize_t n;

	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		int *p, cnt;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		p = (int *)CMSG_DATA(cm);
		cnt = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (int i = 0; i < cnt; i++) {
			int fd;

			memcpy(&fd, p + i, sizeof(int));
			if (got < room)
				fds[got++] = fd;
			else
				close(fd);
		}
	}
	if (nfds)
		*nfds = got;
	if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
		sof_close_fds(fds, got);
		if (nfds)
			*nfds = 0;
		return -EMSGSIZE;
	}
	return n;
}

int sof_udp_socket(int family, int type)
{
	long fd = syscall(SYS_socket, family, type, 0);

	return fd < 0 ? -errno : (int)fd;
}

void sof_sock_bufs(int fd, int bytes)
{
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof(bytes)))
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &bytes, sizeof(bytes)))
		(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
}

void sof_udp_gso_set(struct msghdr *h, union sof_udp_seg_ctl *ctl, uint16_t seg)
{
	struct cmsghdr *c = &ctl->align;

	c->cmsg_level = SOL_UDP;
	c->cmsg_type = UDP_SEGMENT;
	c->cmsg_len = CMSG_LEN(sizeof(seg));
	memcpy(CMSG_DATA(c), &seg, sizeof(seg));
	h->msg_control = c;
	h->msg_controllen = CMSG_SPACE(sizeof(seg));
}

size_t sof_udp_gro_size(struct msghdr *mh)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c))
		if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO &&
		    c->cmsg_len >= CMSG_LEN(sizeof(int))) {
			int g;

			memcpy(&g, CMSG_DATA(c), sizeof(g));
			return g > 0 ? (size_t)g : 0;
		}
	return 0;
}

uint64_t sof_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void sof_futex_wake(_Atomic uint32_t *addr, int n, bool shared)
{
	syscall(SYS_futex, addr, shared ? FUTEX_WAKE : FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

void sof_futex_wait(_Atomic uint32_t *addr, uint32_t val, const struct timespec *t, bool shared)
{
	syscall(SYS_futex, addr, shared ? FUTEX_WAIT : FUTEX_WAIT_PRIVATE, val, t, NULL, 0);
}

/* IBA 9.7.5.2.8, table 45: the RNR NAK timer field, in microseconds. */
uint32_t sof_rnr_timer_us(uint32_t code)
{
	static const uint32_t us[32] = {
		655360, 10,    20,    30,    40,    60,    80,     120,    160,    240,   320,
		480,	640,   960,   1280,  1920,  2560,  3840,   5120,   7680,   10240, 15360,
		20480,	30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
	};

	return us[code & 31];
}
