/*
 * Helpers shared by the daemon, the libraries and the tools: random numbers
 * from the kernel's CSPRNG, sealed memfds, records with descriptors over a
 * Unix socket, and the daemon's socket address.
 */
#ifndef SOF_UTIL_H
#define SOF_UTIL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/un.h>

#define SOF_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define sof_container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

/* Fill buf with cryptographically random bytes. 0 or -errno. */
int sof_random(void *buf, size_t len);
uint32_t sof_random32(void);

/* Create a memfd of size bytes, sealed against shrinking and growing.
 * Returns the fd or -errno. */
int sof_memfd_create(const char *name, size_t size);
/* Check that fd is a memfd of at least size bytes that cannot shrink.
 * 0 or -errno. */
int sof_memfd_check(int fd, size_t size);
/* Reopen fd read-only (a new open file description). fd or -errno. */
int sof_fd_reopen_ro(int fd);

/* The daemon's abstract socket address; returns the address length. */
socklen_t sof_sock_addr(struct sockaddr_un *sun);

/* Send one record with up to nfds descriptors. 0 or -errno. */
int sof_send_rec(int sock, const void *buf, size_t len, const int *fds, int nfds);
/* Receive one record. *nfds in: room, out: received (extra ones closed).
 * Returns the record length, 0 on orderly close, or -errno. A truncated
 * record is an error (-EMSGSIZE) and its descriptors are closed. */
ssize_t sof_recv_rec(int sock, void *buf, size_t len, int *fds, int *nfds);

void sof_close_fds(int *fds, int nfds);

uint64_t sof_now_ns(void);

/* futex(2) on a 32-bit word: wake up to n waiters; wait while *addr is val,
 * at most t (NULL: no bound). shared: the word is in memory other processes
 * map (FUTEX_WAKE / FUTEX_WAIT), else the process's own (the _PRIVATE
 * operations). Errors are the waiter's to see again in *addr. */
void sof_futex_wake(_Atomic uint32_t *addr, int n, bool shared);
void sof_futex_wait(_Atomic uint32_t *addr, uint32_t val, const struct timespec *t, bool shared);

/* A UDP socket of the stack itself (type: SOCK_DGRAM with SOCK_CLOEXEC /
 * SOCK_NONBLOCK), made by the system call directly: a preload library that
 * takes over socket(3) (librspreload sends every AF_INET socket to
 * rsocket()) must not take the transport's own sockets. fd or -errno. */
int sof_udp_socket(int family, int type);
/* Socket buffers of bytes each way: SO_*BUFFORCE (past rmem_max, as root),
 * else the plain options, which the kernel caps. Bursts of datagrams must
 * not overflow the default buffers, where the kernel drops them uncounted. */
void sof_sock_bufs(int fd, int bytes);

/* UDP GSO and GRO (linux/udp.h), for C libraries whose headers lack them. */
#ifndef SOL_UDP
#define SOL_UDP 17
#endif
#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103 /* Linux 4.18 */
#endif
#ifndef UDP_GRO
#define UDP_GRO 104 /* Linux 5.0 */
#endif
/* Room for the one control message of a UDP GSO send. */
union sof_udp_seg_ctl {
	char b[CMSG_SPACE(sizeof(uint16_t))];
	struct cmsghdr align;
};
/* Make h a GSO send of segments of seg bytes (UDP_SEGMENT) with ctl as
 * its control message: the kernel cuts its data into datagrams of seg
 * bytes, the last one possibly shorter. */
void sof_udp_gso_set(struct msghdr *h, union sof_udp_seg_ctl *ctl, uint16_t seg);
/* The segment size of a datagram read with UDP_GRO on (its UDP_GRO control
 * message), or 0 when the kernel did not join several into it. */
size_t sof_udp_gro_size(struct msghdr *mh);

/* Whether a GID is IPv4-mapped (::ffff:a.b.c.d), i.e. a RoCEv2 IPv4 address. */
bool sof_gid_is_v4(const uint8_t gid[16]);
/* Whether a GID is a multicast GID: ff00::/8, or on RoCEv2 an IPv4 group
 * as ::ffff:224.0.0.0/4 (grh.c). */
bool sof_gid_is_mcast(const uint8_t gid[16]);

/* Annex A17.4.5.1: the GRH area of a UD receive, for a datagram of paylen
 * bytes from sgid to dgid: the IPv6 header, or 20 bytes of zero followed by
 * the IPv4 header when both GIDs are IPv4-mapped (grh.c). */
void sof_make_grh(uint8_t grh[40], const uint8_t *sgid, const uint8_t *dgid, uint8_t tclass,
		  uint8_t hop_limit, uint32_t flow_label, uint32_t paylen);

/* The sl of a UD receive completion for a RoCEv2 datagram from sgid to
 * dgid, as mlx5 reports it: the packet type (grh.c). */
uint8_t sof_roce_wc_sl(const uint8_t *sgid, const uint8_t *dgid);

/* The minimum RNR NAK timer of code (0..31), in microseconds. */
uint32_t sof_rnr_timer_us(uint32_t code);

/* The smallest power of two >= v (v <= 2^31). */
static inline uint32_t sof_roundup_pow2(uint32_t v)
{
	uint32_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

#endif
