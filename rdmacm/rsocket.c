/*
 * The rsocket API (rdma/rsocket.h), which Debian's librdmacm exports at
 * RDMACM_1.0. Not implemented yet (a later issue): rpoll and rselect are
 * poll(2) and select(2), which is what they do for descriptors that are not
 * rsockets (rping, cmtime, ucmatose and udaddy poll their event channel's
 * fd with rpoll); every other call fails with ENOSYS.
 */
#include "sofcm.h"

#include <poll.h>
#include <rdma/rsocket.h>
#include <sys/select.h>

SOFCM_EXPORT int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	return poll(fds, nfds, timeout);
}

SOFCM_EXPORT int rselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
			 struct timeval *timeout)
{
	return select(nfds, readfds, writefds, exceptfds, timeout);
}

/* The rest fail with ENOSYS until the rsocket API is implemented. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#define STUB(ret, name, ...)                                                                       \
	SOFCM_EXPORT ret name(__VA_ARGS__) { return (ret)sofcm_err(ENOSYS); }

STUB(int, rsocket, int domain, int type, int protocol)
STUB(int, rbind, int socket, const struct sockaddr *addr, socklen_t addrlen)
STUB(int, rlisten, int socket, int backlog)
STUB(int, raccept, int socket, struct sockaddr *addr, socklen_t *addrlen)
STUB(int, rconnect, int socket, const struct sockaddr *addr, socklen_t addrlen)
STUB(int, rshutdown, int socket, int how)
STUB(int, rclose, int socket)
STUB(ssize_t, rrecv, int socket, void *buf, size_t len, int flags)
STUB(ssize_t, rrecvfrom, int socket, void *buf, size_t len, int flags, struct sockaddr *src_addr,
     socklen_t *addrlen)
STUB(ssize_t, rrecvmsg, int socket, struct msghdr *msg, int flags)
STUB(ssize_t, rsend, int socket, const void *buf, size_t len, int flags)
STUB(ssize_t, rsendto, int socket, const void *buf, size_t len, int flags,
     const struct sockaddr *dest_addr, socklen_t addrlen)
STUB(ssize_t, rsendmsg, int socket, const struct msghdr *msg, int flags)
STUB(ssize_t, rread, int socket, void *buf, size_t count)
STUB(ssize_t, rreadv, int socket, const struct iovec *iov, int iovcnt)
STUB(ssize_t, rwrite, int socket, const void *buf, size_t count)
STUB(ssize_t, rwritev, int socket, const struct iovec *iov, int iovcnt)
STUB(int, rgetpeername, int socket, struct sockaddr *addr, socklen_t *addrlen)
STUB(int, rgetsockname, int socket, struct sockaddr *addr, socklen_t *addrlen)
STUB(int, rsetsockopt, int socket, int level, int optname, const void *optval, socklen_t optlen)
STUB(int, rgetsockopt, int socket, int level, int optname, void *optval, socklen_t *optlen)
STUB(int, rfcntl, int socket, int cmd, ...)
STUB(off_t, riomap, int socket, void *buf, size_t len, int prot, int flags, off_t offset)
STUB(int, riounmap, int socket, void *buf, size_t len)
STUB(size_t, riowrite, int socket, const void *buf, size_t count, off_t offset, int flags)
