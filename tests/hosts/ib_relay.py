#!/usr/bin/env python3
"""A two-port InfiniBand switch with its subnet manager, in the fewest
lines that let two hosts' InfiniBand ports (fabric/README.md's link
protocol) talk by LID before the fabric process exists: the far end of
two links, HELLO on both, as SM a directed-route SubnSet(PortInfo) to each
host's SMA giving it a LID (and the SM LID 1), Armed on both, then Active
on both, then every IB packet from one link sent on the other unchanged
(a switch changes nothing a CRC covers; SMPs, VL15, are not forwarded).
The packets and CRCs are tests/hosts/ib_farend.py's, written apart from
the C code; every SMP response is checked as a port would.

    ib_relay.py --a BIND PEER LID --b BIND PEER LID [--secs S] [--hold H]
                [--go FILE]

Prints "relay armed" once both ports are Armed (then it waits H seconds,
forwarding, before it makes them Active; with --go, only until FILE
exists, if that comes first), "relay up a=LID b=LID" once both
are Active, "relay forwarded N" at the end; "relay failed: WHY" and exit 1
otherwise.
"""
import os
import select
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ib_farend as ib  # noqa: E402


class Link:
    def __init__(self, bind, peer, lid):
        self.peer = ib.addr(peer)
        self.lid = lid
        self.s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # room for a window's burst, as the fabric's socket has: a Python
        # switch is slow, and what overflows its socket is lost
        for opt in (33, 32):  # SO_RCVBUFFORCE, SO_SNDBUFFORCE (root)
            try:
                self.s.setsockopt(socket.SOL_SOCKET, opt, 8 << 20)
            except OSError:
                pass
        self.s.bind(ib.addr(bind))
        self.s.setblocking(False)
        self.up = False
        self.tid = 0x2000 + lid * 0x100

    def hello(self):
        self.s.sendto(ib.sofl(1, "SW"), self.peer)


def main(argv):
    links, secs, hold, go, i = {}, 60.0, 0.0, None, 0
    while i < len(argv):
        if argv[i] in ("--a", "--b"):
            links[argv[i][2:]] = Link(argv[i + 1], argv[i + 2], int(argv[i + 3]))
            i += 4
        elif argv[i] == "--secs":
            secs = float(argv[i + 1])
            i += 2
        elif argv[i] == "--hold":
            hold = float(argv[i + 1])
            i += 2
        elif argv[i] == "--go":
            go = argv[i + 1]
            i += 2
        else:
            print("relay failed: argument " + argv[i], flush=True)
            return 1
    a, b = links["a"], links["b"]
    end = time.time() + secs
    last_hello = 0.0
    pending = []  # packets of the other link read while waiting for an SMP response

    def tick():
        nonlocal last_hello
        if time.time() - last_hello >= 0.5:
            last_hello = time.time()
            a.hello()
            b.hello()

    def read(link, want_smp):
        """one datagram of link: a SOFL updates its state; an SMP is
        returned when want_smp; other packets are kept to forward"""
        try:
            d, src = link.s.recvfrom(8192)
        except BlockingIOError:
            return None
        if src != link.peer:
            return None
        if d[:4] == b"SOFL":
            link.up = len(d) == 88 and d[5] == 1 and d[6] in (2, 5)
            return None
        if want_smp and d[0] >> 4 == 15:
            return d
        pending.append((link, d))
        return None

    def ask(link, pkt):
        link.s.sendto(pkt, link.peer)
        stop = time.time() + 3
        while time.time() < stop:
            tick()
            r, _, _ = select.select([a.s, b.s], [], [], 0.1)
            for sock in r:
                other = a if sock is a.s else b
                d = read(other, other is link)
                if d is not None:
                    return ib.check_smp(d)
        return None

    def set_port(link, state):
        link.tid += 1
        mad = ask(link, ib.smp(1, 0x15, mod=1, tid=link.tid))
        if mad is None:
            return "no PortInfo from the port of LID %d" % link.lid
        d = bytearray(mad[64:128])
        d[16:20] = struct.pack(">HH", link.lid, 1)
        d[32] = (d[32] & 0xF0) | state
        d[33] &= 0x0F
        link.tid += 1
        mad = ask(link, ib.smp(2, 0x15, mod=1, data=bytes(d), tid=link.tid))
        if mad is None or mad[64 + 32] & 15 != state or struct.unpack(">H", mad[80:82])[0] != link.lid:
            return "SubnSet(PortInfo) to LID %d state %d refused" % (link.lid, state)
        return None

    def forward(until, go=None):
        return forward_loop(a, b, pending, tick, until, go)

    # the links come up
    while not (a.up and b.up):
        if time.time() > end:
            print("relay failed: links not up (a %s, b %s)" % (a.up, b.up), flush=True)
            return 1
        tick()
        r, _, _ = select.select([a.s, b.s], [], [], 0.1)
        for sock in r:
            read(a if sock is a.s else b, False)
    # the SM: LIDs and Armed on both, then Active on both
    for state in (3, 4):
        for link in (a, b):
            why = set_port(link, state)
            if why:
                print("relay failed: " + why, flush=True)
                return 1
        if state == 3:
            print("relay armed", flush=True)
            fwd = forward(time.time() + hold, go)
    print("relay up a=%d b=%d" % (a.lid, b.lid), flush=True)
    fwd += forward(end)
    print("relay forwarded %d" % fwd, flush=True)
    return 0


def forward_loop(a, b, pending, tick, until, go=None):
    """forward every IB packet but SMPs between the links until then (or
    until the file go exists)"""
    fwd = 0
    while time.time() < until and not (go and os.path.exists(go)):
        tick()
        for link, d in pending:
            if d[0] >> 4 != 15:
                (b if link is a else a).s.sendto(d, (b if link is a else a).peer)
                fwd += 1
        pending.clear()
        r, _, _ = select.select([a.s, b.s], [], [], 0.1)
        for sock in r:
            link = a if sock is a.s else b
            for _ in range(64):
                try:
                    d, src = link.s.recvfrom(8192)
                except BlockingIOError:
                    break
                if src != link.peer or d[:4] == b"SOFL" or d[0] >> 4 == 15:
                    continue
                other = b if link is a else a
                other.s.sendto(d, other.peer)
                fwd += 1
    return fwd


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
