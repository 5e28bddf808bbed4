#!/usr/bin/env python3
"""The far end of an InfiniBand link (fabric/README.md's link protocol),
written apart from the C code: the LRH, BTH and DETH from their field
values with struct, the ICRC with zlib.crc32 over the packet with its
variant fields set to ones (IBA 7.8.1), the VCRC bit by bit (IBA 7.8.2:
reflected 0x100B, ones in, inverted out), both little-endian on the wire.

    ib_farend.py --bind ADDR:PORT --peer ADDR:PORT [--name NAME] STEP...

Steps, in order:
    hello         send HELLO (LinkUp) and wait up to 3 s for the peer's
    hold:SECS     keep sending HELLO once a second for SECS seconds
    bye           send BYE
    sleep:SECS    send nothing for SECS seconds
    CASE[:N]      send N (default 1) packets of CASE (see CASES)
    foreign       a good packet from another UDP port (not the link's)
    badsofl       a link control message of version 2
    nodeinfo      as the subnet manager at the far end: a directed-route
                  SubnGet(NodeInfo) (hop count 1, out of port 1), printing
                  the GetResp's node type, ports, node and port GUIDs
    portinfo      SubnGet(PortInfo): its LID, SM LID, LMC, state, phys
    set:LID:SMLID:STATE   SubnGet(PortInfo), then SubnSet of it with LID,
                  MasterSMLID and PortState (2 Init .. 4 Active) changed,
                  printing the GetResp as portinfo does
Each step prints one line "step NAME sent N" (hello: the peer's HELLO).
Every response is checked as the port checks what it receives (LRH,
VL15, PktLen, VCRC, ICRC, BTH and DETH of QP0): "bad" when it fails.
"""
import socket
import struct
import sys
import time
import zlib


def vcrc(b):
    c = 0xFFFF
    for x in b:
        c ^= x
        for _ in range(8):
            c = (c >> 1) ^ (0xD008 if c & 1 else 0)
    return c ^ 0xFFFF


def icrc(pkt):
    m = bytearray(pkt)
    m[0] |= 0xF0  # VL
    bth = 8
    if m[1] & 3 == 3:
        m[8] |= 0x0F
        m[9:12] = b"\xff\xff\xff"
        m[15] = 0xFF
        bth += 40
    m[bth + 4] = 0xFF  # FECN, BECN, Resv6a
    return zlib.crc32(bytes(m)) & 0xFFFFFFFF


def packet(vl=15, sl=0, lnh=2, dlid=0xFFFF, slid=0xFFFF, dqpn=0, sqpn=0, qkey=0,
           pkey=0xFFFF, payload=b"\0" * 256, lver=0, grh=None, fix_pktlen=0,
           bad_icrc=False, bad_vcrc=False):
    """A UD SEND Only, its CRCs right unless told otherwise."""
    pad = (4 - len(payload) % 4) % 4
    bth = struct.pack(">BBHII", 0x64, pad << 4, pkey, dqpn & 0xFFFFFF, 1)
    deth = struct.pack(">II", qkey, sqpn & 0xFFFFFF)
    body = bth + deth + payload + b"\0" * pad
    g = b""
    if grh is not None:
        g = grh(len(body) + 4)
    total = 8 + len(g) + len(body) + 4
    lrh = struct.pack(">BBHHH", (vl << 4) | lver, (sl << 4) | lnh, dlid,
                      total // 4 + fix_pktlen, slid)
    pkt = lrh + g + body
    c = icrc(pkt) ^ (1 if bad_icrc else 0)
    pkt += struct.pack("<I", c)
    v = vcrc(pkt) ^ (1 if bad_vcrc else 0)
    return pkt + struct.pack("<H", v)


def bad_grh(paylen):
    # IPVer 4
    return struct.pack(">IHBB", 4 << 28, paylen, 0x1B, 64) + bytes(32)


CASES = {
    # an SMP on VL15 to QP0 from and to the permissive LID: every check of
    # the link passes (the port has no SMA yet: the classifier drops it)
    "smp": lambda: packet(),
    "vcrc": lambda: packet(bad_vcrc=True),
    "icrc": lambda: packet(bad_icrc=True),
    "pktlen": lambda: packet(fix_pktlen=1),
    "lver": lambda: packet(lver=1),
    "lnh": lambda: packet(lnh=0),
    "grh": lambda: packet(lnh=3, grh=bad_grh),
    "short": lambda: packet()[:20],
    # data (VL0, to QP 0x123) while the port is not Active
    "data": lambda: packet(vl=0, dlid=1, slid=2, dqpn=0x123, qkey=0x11111111),
    # VL15 to a QP other than QP0
    "vl15": lambda: packet(dqpn=0x123),
    # data to LID 5 (what the "set" step gives the port), to LID 9, and to
    # LID 5 in a partition the port is not in
    "data5": lambda: packet(vl=0, dlid=5, slid=1, dqpn=0x123, qkey=0x11111111),
    "dlid9": lambda: packet(vl=0, dlid=9, slid=1, dqpn=0x123, qkey=0x11111111),
    "pkey": lambda: packet(vl=0, dlid=5, slid=1, dqpn=0x123, qkey=0x11111111, pkey=0x1234),
}


def smp(method, attr, mod=0, data=b"", tid=1):
    """A directed-route SMP from the SM next door: hop count 1, hop
    pointer 1 (the SM's own step done), out of its port 1."""
    m = bytearray(256)
    m[0:4] = bytes([1, 0x81, 1, method])
    m[6], m[7] = 1, 1
    m[8:16] = struct.pack(">Q", tid)
    m[16:18] = struct.pack(">H", attr)
    m[20:24] = struct.pack(">I", mod)
    m[32:36] = b"\xff\xff\xff\xff"  # DrSLID, DrDLID permissive
    m[64:64 + len(data)] = data
    m[128 + 1] = 1  # initial path: out of port 1
    return packet(payload=bytes(m))


def check_smp(b):
    """The MAD of an SMP the peer sent, or None when any check fails."""
    if len(b) < 8 + 12 + 8 + 256 + 4 + 2:
        return None
    vl, lnh = b[0] >> 4, b[1] & 3
    pktlen = struct.unpack(">H", b[4:6])[0] & 0x7FF
    if vl != 15 or b[0] & 15 or lnh != 2 or pktlen * 4 != len(b) - 2:
        return None
    if struct.unpack("<H", b[-2:])[0] != vcrc(b[:-2]):
        return None
    if struct.unpack("<I", b[-6:-2])[0] != icrc(b[:-6]):
        return None
    op, dqpn = b[8], struct.unpack(">I", b[12:16])[0] & 0xFFFFFF
    sqpn = struct.unpack(">I", b[24:28])[0] & 0xFFFFFF
    if op != 0x64 or dqpn != 0 or sqpn != 0:
        return None
    return b[28:28 + 256]


def portinfo_line(mad):
    d = mad[64:128]
    lid, smlid = struct.unpack(">HH", d[16:20])
    return "lid=%d smlid=%d lmc=%d state=%d phys=%d status=%04x" % (
        lid, smlid, d[34] & 7, d[32] & 15, d[33] >> 4,
        struct.unpack(">H", mad[4:6])[0] & 0x7FFF)


def addr(s):
    host, port = s.rsplit(":", 1)
    return (host.strip("[]"), int(port))


def sofl(kind, name, phys=5, version=1):
    b = b"SOFL" + bytes([version, kind, phys, 1]) + bytes(16)
    return b + name.encode()[:64].ljust(64, b"\0")


def main(argv):
    args, steps = {}, []
    i = 0
    while i < len(argv):
        if argv[i] in ("--bind", "--peer", "--name"):
            args[argv[i][2:]] = argv[i + 1]
            i += 2
        else:
            steps.append(argv[i])
            i += 1
    me, peer = addr(args["bind"]), addr(args["peer"])
    name = args.get("name", "FAR")
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(me)
    s.settimeout(0.2)
    tid = [0x1000]

    def ask(pkt):
        """send an SMP, keep the link up, and wait for its response"""
        tid[0] += 1
        s.sendto(pkt, peer)
        end = time.time() + 3
        while time.time() < end:
            try:
                b, src = s.recvfrom(8192)
            except socket.timeout:
                s.sendto(sofl(1, name), peer)
                continue
            if src != peer or b[:4] == b"SOFL":
                continue
            return check_smp(b)
        return None

    for step in steps:
        what, _, arg = step.partition(":")
        if what == "hello":
            s.sendto(sofl(1, name), peer)
            got = "none"
            end = time.time() + 3
            while time.time() < end:
                try:
                    b, src = s.recvfrom(4096)
                except socket.timeout:
                    s.sendto(sofl(1, name), peer)
                    continue
                if src == peer and b[:4] == b"SOFL" and len(b) == 88 and b[5] == 1:
                    got = "phys=%d name=%s" % (b[6], b[24:88].rstrip(b"\0").decode())
                    break
            print("step hello peer %s" % got, flush=True)
        elif what == "hold":
            end = time.time() + float(arg)
            while time.time() < end:
                s.sendto(sofl(1, name), peer)
                time.sleep(min(1.0, max(0.0, end - time.time())))
            print("step hold sent", flush=True)
        elif what == "bye":
            s.sendto(sofl(2, name, phys=2), peer)
            print("step bye sent 1", flush=True)
        elif what == "sleep":
            time.sleep(float(arg))
            print("step sleep", flush=True)
        elif what == "foreign":
            o = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            o.bind((me[0], 0))
            o.sendto(CASES["smp"](), peer)
            o.close()
            print("step foreign sent 1", flush=True)
        elif what == "badsofl":
            s.sendto(sofl(1, name, version=2), peer)
            print("step badsofl sent 1", flush=True)
        elif what == "nodeinfo":
            mad = ask(smp(1, 0x11, tid=tid[0]))
            if mad is None or mad[3] != 0x81:
                print("step nodeinfo bad", flush=True)
                continue
            d = mad[64:128]
            print("step nodeinfo type=%d ports=%d node_guid=%016x port_guid=%016x "
                  "local_port=%d status=%04x" % (
                      d[2], d[3], struct.unpack(">Q", d[12:20])[0],
                      struct.unpack(">Q", d[20:28])[0], d[36],
                      struct.unpack(">H", mad[4:6])[0] & 0x7FFF), flush=True)
        elif what == "portinfo":
            mad = ask(smp(1, 0x15, mod=1, tid=tid[0]))
            print("step portinfo " + ("bad" if mad is None else portinfo_line(mad)),
                  flush=True)
        elif what == "set":
            lid, smlid, state = (int(x) for x in arg.split(":"))
            mad = ask(smp(1, 0x15, mod=1, tid=tid[0]))
            if mad is None:
                print("step set bad", flush=True)
                continue
            d = bytearray(mad[64:128])
            d[16:20] = struct.pack(">HH", lid, smlid)
            d[32] = (d[32] & 0xF0) | state
            d[33] = d[33] & 0x0F  # PortPhysicalState: no change
            mad = ask(smp(2, 0x15, mod=1, data=bytes(d), tid=tid[0]))
            print("step set " + ("bad" if mad is None else portinfo_line(mad)), flush=True)
        elif what in CASES:
            n = int(arg) if arg else 1
            for _ in range(n):
                s.sendto(CASES[what](), peer)
            print("step %s sent %d" % (what, n), flush=True)
        else:
            print("unknown step " + step, file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
