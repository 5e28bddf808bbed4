/*
 * recvmmsg and sendmmsg as system calls without libc's wrappers, for the
 * engine's sockets (udp.c: RoCEv2; ibpkt.c: the InfiniBand link). libc's
 * wrappers are cancellation points: in a program with more than one
 * thread (the engine's progress thread) each call turns asynchronous
 * cancellation on and off around the system call, two atomic
 * read-modify-writes on every poll of a socket. The engine offers no
 * cancellation point: a thread cancelled in it would leave the engine's
 * lock held. One message goes by recvmsg / sendmsg, the shorter way
 * through the kernel, on every empty poll of a ping-pong.
 */
#ifndef SOF_TP_SYS_MSG_H
#define SOF_TP_SYS_MSG_H

#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

static inline int tp_sys_recvmmsg(int fd, struct mmsghdr *msgs, unsigned n, int flags)
{
	ssize_t r;

	if (n > 1)
		return (int)syscall(SYS_recvmmsg, fd, msgs, n, flags, NULL);
	r = syscall(SYS_recvmsg, fd, &msgs->msg_hdr, flags);
	if (r < 0)
		return -1;
	msgs->msg_len = (unsigned)r;
	return 1;
}

static inline int tp_sys_sendmmsg(int fd, struct mmsghdr *msgs, unsigned n, int flags)
{
	ssize_t r;

	if (n > 1)
		return (int)syscall(SYS_sendmmsg, fd, msgs, n, flags);
	r = syscall(SYS_sendmsg, fd, &msgs->msg_hdr, flags);
	if (r < 0)
		return -1;
	msgs->msg_len = (unsigned)r;
	return 1;
}

#endif
