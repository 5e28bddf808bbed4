#!/usr/bin/env python3
"""Make a host's InfiniBand port deaf while its far end still hears it.

    ib_deaf.py PID FD FABRIC SECS NAME

PID is a softofedd stopped by SIGSTOP; FD its link socket (its number in
PID); FABRIC the far end's ADDR:PORT; NAME the HCA's name in the topology.
For SECS seconds this takes (pidfd_getfd, as root) the daemon's socket,
reads away everything the far end sends (the daemon hears nothing, as when
its far end's HELLOs are lost) and sends HELLO (LinkUp) from that socket's
address every 0.25 s (the far end still hears the host). Then it sends
SIGCONT to PID: the daemon runs again with a link it has not heard for
SECS seconds, and no datagram waiting. Prints "deaf N" (datagrams read).
"""
import ctypes
import os
import select
import signal
import socket
import sys
import time

SYS_PIDFD_GETFD = 438


def main():
    pid, fd, fab, secs, name = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], float(sys.argv[4]), sys.argv[5]
    host, port = fab.rsplit(":", 1)
    libc = ctypes.CDLL(None, use_errno=True)
    pidfd = os.pidfd_open(pid)
    try:
        mine = libc.syscall(SYS_PIDFD_GETFD, pidfd, fd, 0)
        if mine < 0:
            raise OSError(ctypes.get_errno(), "pidfd_getfd")
        s = socket.socket(fileno=mine)
        s.setblocking(False)
        n = len(name.encode())
        hello = b"SOFL" + bytes([1, 1, 5, 1]) + bytes(16) + name.encode() + bytes(64 - n)
        end = time.monotonic() + secs
        got = 0
        next_hello = 0.0
        while True:
            now = time.monotonic()
            if now >= next_hello:
                s.sendto(hello, (host, int(port)))
                next_hello = now + 0.25
            while True:
                try:
                    s.recv(65536)
                    got += 1
                except BlockingIOError:
                    break
            if now >= end:
                break
            select.select([s], [], [], 0.01)
        s.detach()
        os.close(mine)
    finally:
        os.kill(pid, signal.SIGCONT)
        os.close(pidfd)
    print("deaf %d" % got, flush=True)


if __name__ == "__main__":
    main()
