#!/usr/bin/env python3
"""Known-answer RoCEv2 packets for tests/unit/test_wire.c, made without our C code.

Each vector is a set of header field values. From them this script builds,
with struct.pack after IBA vol. 1 9.2-9.5 and Annex A17, the whole frame as
it would be on the wire: Ethernet, an IPv4 or IPv6 header with arbitrary
values in the variant fields (TOS/traffic class, flow label, TTL/hop limit,
checksums), UDP to port 4791, the transport headers, payload, pad, ICRC.
The ICRC is zlib.crc32 (the CRC-32 of Ethernet) over 8 bytes of 0xff and
the IP, UDP and transport headers as they are in the frame with the variant
fields masked to ones, and goes on the wire little-endian (Annex A17.3.3,
as Linux rxe computes it). test_wire.c rebuilds the same packets with
roce_hdr_write and roce_icrc_append (which rebuilds the IP header instead
of masking a real one) and must get the same bytes.

    tests/unit/wire_vectors.py > tests/unit/wire_kat.h
                                          the C table for test_wire.c
    tests/unit/wire_vectors.py --pcap F   write the frames to a pcap file F;
                                          tshark -r F -V decodes them
    tests/unit/wire_vectors.py --corpus D write each packet (UDP payload) to a
                                          file in D: the fuzz seed corpus
    tests/unit/wire_vectors.py --check F  recompute the ICRC of every RoCEv2
                                          frame in capture F (pcap or pcapng;
                                          Ethernet or Linux cooked, as
                                          tcpdump/dumpcap -i any write it)
                                          from the IP header as captured;
                                          print one line per frame, exit 1
                                          on any mismatch or when none

tshark (4.0) decodes RoCEv2 on UDP port 4791 by itself and shows the ICRC
(infiniband.invariant.crc, the wire bytes read big-endian) but never checks
it; --check does. Give tshark --disable-heuristic rpcrdma_infiniband: its
RPC-over-RDMA heuristic calls any SEND payload that is not RPC malformed.
"""
import ipaddress
import os
import struct
import sys
import zlib

ROCE_PORT = 4791

# field name -> (header, pack format) in the order of IBA 9.2: DETH, RETH or
# AtomicETH, AETH, AtomicAckETH, ImmDt or IETH.
OPS = {
    # opcode: (name, extended headers)
    0x04: ("RC SEND_ONLY", []),
    0x0B: ("RC WRITE_ONLY_IMM", ["reth", "immdt"]),
    0x0C: ("RC READ_REQ", ["reth"]),
    0x10: ("RC READ_RESP_ONLY", ["aeth"]),
    0x11: ("RC ACK", ["aeth"]),
    0x12: ("RC ATOMIC_ACK", ["aeth", "atmack"]),
    0x13: ("RC CMP_SWAP", ["atmeth"]),
    0x17: ("RC SEND_ONLY_INV", ["ieth"]),
    0x22: ("UC SEND_LAST", []),
    0x65: ("UD SEND_ONLY_IMM", ["deth", "immdt"]),
}


def bth(f):
    b1 = (f["se"] << 7) | (f["migreq"] << 6) | (f["pad"] << 4) | f.get("tver", 0)
    b4 = (f.get("fecn", 0) << 7) | (f.get("becn", 0) << 6)
    return struct.pack(">BBHB", f["opcode"], b1, f["pkey"], b4) + \
        f["dqpn"].to_bytes(3, "big") + bytes([f["ackreq"] << 7]) + \
        f["psn"].to_bytes(3, "big")


def ext(name, f):
    if name == "deth":
        return struct.pack(">IB", f["qkey"], 0) + f["sqpn"].to_bytes(3, "big")
    if name == "reth":
        return struct.pack(">QII", f["va"], f["rkey"], f["dmalen"])
    if name == "atmeth":
        return struct.pack(">QIQQ", f["va"], f["rkey"], f["swap_add"], f["compare"])
    if name == "aeth":
        return bytes([f["syndrome"]]) + f["msn"].to_bytes(3, "big")
    if name == "atmack":
        return struct.pack(">Q", f["orig"])
    if name == "immdt":
        return struct.pack(">I", f["imm"])
    if name == "ieth":
        return struct.pack(">I", f["inv_rkey"])
    raise ValueError(name)


def transport(f):
    """The UDP payload without the ICRC: headers, payload, pad."""
    pkt = bth(f)
    for e in OPS[f["opcode"]][1]:
        pkt += ext(e, f)
    return pkt + f["payload"] + bytes(f["pad"])


def csum16(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(">%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def ip_udp(v, udp_payload):
    """IP + UDP headers with the vector's variant field values."""
    src = ipaddress.ip_address(v["src"])
    dst = ipaddress.ip_address(v["dst"])
    ulen = 8 + len(udp_payload)
    if src.version == 4:
        ip = struct.pack(">BBHHHBBH4s4s", 0x45, v["tos"], 20 + ulen, 0, 0x4000,
                         v["ttl"], 17, 0, src.packed, dst.packed)
        ip = ip[:10] + struct.pack(">H", csum16(ip)) + ip[12:]
        pseudo = src.packed + dst.packed + struct.pack(">BBH", 0, 17, ulen)
    else:
        w0 = (6 << 28) | (v["tos"] << 20) | v["flow"]
        ip = struct.pack(">IHBB16s16s", w0, ulen, 17, v["ttl"], src.packed, dst.packed)
        pseudo = src.packed + dst.packed + struct.pack(">IxxxB", ulen, 17)
    udp = struct.pack(">HHHH", v["sport"], ROCE_PORT, ulen, 0)
    if src.version == 6:  # a UDP checksum is mandatory over IPv6
        c = csum16(pseudo + udp + udp_payload) or 0xFFFF
        udp = udp[:6] + struct.pack(">H", c)
    return ip, udp


def icrc_of(ip, udp, pkt):
    """Annex A17.3.3 over a real IP header: mask the variant fields."""
    ip = bytearray(ip)
    if ip[0] >> 4 == 4:
        ip[1] = 0xFF             # TOS
        ip[8] = 0xFF             # TTL
        ip[10:12] = b"\xff\xff"  # header checksum
    else:
        ip[0] |= 0x0F            # traffic class, high nibble
        ip[1:4] = b"\xff\xff\xff"  # traffic class, flow label
        ip[7] = 0xFF             # hop limit
    udp = bytearray(udp)
    udp[6:8] = b"\xff\xff"       # UDP checksum
    pkt = bytearray(pkt)
    pkt[4] = 0xFF                # BTH FECN, BECN, Resv6a
    return zlib.crc32(b"\xff" * 8 + bytes(ip) + bytes(udp) + bytes(pkt))


def frame(v):
    pkt = transport(v)
    ip, udp = ip_udp(v, pkt + b"\0\0\0\0")
    icrc = icrc_of(ip, udp, pkt)
    pkt += struct.pack("<I", icrc)
    ethertype = 0x0800 if ip[0] >> 4 == 4 else 0x86DD
    eth = bytes.fromhex("020000000002" "020000000001") + struct.pack(">H", ethertype)
    return eth + ip + udp + pkt, pkt, icrc


def vectors():
    base = dict(se=0, migreq=0, pad=0, pkey=0xFFFF, fecn=0, becn=0, ackreq=0,
                payload=b"", sport=0xC000)
    v4 = dict(src="192.168.10.1", dst="192.168.10.2", tos=0x02, ttl=64)
    v6 = dict(src="2001:db8::1", dst="2001:db8::2", tos=0x0A, flow=0x12345, ttl=64)
    out = [
        dict(base, **v4, opcode=0x04, se=1, pad=3, dqpn=0x000011, ackreq=1,
             psn=0x123456, payload=b"hello"),
        dict(base, **v6, opcode=0x0B, dqpn=0xFFFFFF, psn=0xFFFFFF, ackreq=1,
             va=0x0123456789ABCDEF, rkey=0xDEADBEEF, dmalen=64, imm=0x01020304,
             payload=bytes(range(64)), sport=0xFFFF),
        dict(base, **v4, opcode=0x0C, dqpn=0xABCDEF, psn=0x000001, migreq=1,
             va=0xFFFFFFFFFFFFFFFF, rkey=0x11223344, dmalen=0x100000),
        dict(base, **v4, opcode=0x10, dqpn=0x010203, psn=0x800000, pad=2,
             syndrome=0x1F, msn=0xFFFFFF, payload=bytes(range(200, 250))),
        dict(base, **v6, opcode=0x11, dqpn=0x000102, psn=0x7FFFFF, syndrome=0x60,
             msn=0x000042, pkey=0x8001),
        dict(base, **v6, opcode=0x12, dqpn=0x00FEED, psn=0x000000, syndrome=0x05,
             msn=0x000007, orig=0x8877665544332211),
        dict(base, **v4, opcode=0x13, dqpn=0x00BEEF, psn=0x00ABCD, ackreq=1,
             va=0x00007F0000001000, rkey=0xCAFEBABE, swap_add=0xA5A5A5A5A5A5A5A5,
             compare=0x5A5A5A5A5A5A5A5A),
        dict(base, **v4, opcode=0x17, dqpn=0x000003, psn=0x000010, se=1, pad=1,
             inv_rkey=0x01020304, payload=b"invalidate!"),
        dict(base, **v6, opcode=0x22, dqpn=0x000004, psn=0xFFFFFE,
             payload=bytes(i * 7 & 0xFF for i in range(1024))),
        dict(base, **v4, opcode=0x65, dqpn=0x000123, psn=0x000005, se=1, pad=2,
             qkey=0x80010000, sqpn=0xFFFFFF, imm=0xFFFFFFFF, payload=b"UD dgram!!",
             sport=0xD00D),
    ]
    return out


FIELDS = ["se", "migreq", "pad", "pkey", "fecn", "becn", "dqpn", "ackreq", "psn",
          "va", "rkey", "dmalen", "swap_add", "compare", "syndrome", "msn", "orig",
          "qkey", "sqpn", "inv_rkey"]


def c_bytes(b, indent="\t"):
    lines = []
    for i in range(0, len(b), 12):
        lines.append(indent + " ".join("0x%02x," % x for x in b[i:i + 12]))
    return "\n".join(lines)


def print_c():
    print("""/*
 * Known-answer RoCEv2 packets for test_wire.c, generated by
 * tests/unit/wire_vectors.py (see there how they are made); do not edit.
 * pkt is the UDP payload, ICRC included; icrc its value (on the wire
 * little-endian); imm the immediate data in host order.
 */
/* clang-format off */
struct kat {
	struct roce_hdr h;
	const char *src, *dst;
	uint16_t sport;
	uint32_t imm;
	uint32_t paylen;
	uint32_t icrc;
	const uint8_t *pkt;
	size_t len;
};
""")
    for i, v in enumerate(vectors()):
        _, pkt, _ = frame(v)
        print("static const uint8_t kat%d_pkt[] = {\n%s\n};" % (i, c_bytes(pkt)))
    print("static const struct kat kats[] = {")
    for i, v in enumerate(vectors()):
        _, pkt, icrc = frame(v)
        fields = ", ".join(".%s = 0x%x" % (k, v[k]) for k in FIELDS if v.get(k))
        imm = ", .imm = 0x%08x" % v["imm"] if "imm" in v else ""
        ipv = ipaddress.ip_address(v["src"]).version
        print("\t{ /* %s, IPv%d */" % (OPS[v["opcode"]][0], ipv))
        print("\t\t.h = {.opcode = 0x%02x, %s}," % (v["opcode"], fields))
        print("\t\t.src = \"%s\", .dst = \"%s\", .sport = 0x%04x%s," %
              (v["src"], v["dst"], v["sport"], imm))
        print("\t\t.paylen = %d, .icrc = 0x%08x," % (len(v["payload"]), icrc))
        print("\t\t.pkt = kat%d_pkt, .len = sizeof(kat%d_pkt)," % (i, i))
        print("\t},")
    print("};")
    print("/* clang-format on */")


def write_pcap(path, frames):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, fr in enumerate(frames):
            f.write(struct.pack("<IIII", 1700000000 + i, 0, len(fr), len(fr)))
            f.write(fr)


def read_pcapng(data):
    """(linktype, frame) of every packet block of a pcapng file."""
    end, links, off = "<", [], 0
    while off + 12 <= len(data):
        btype = struct.unpack(end + "I", data[off:off + 4])[0]
        if btype == 0x0A0D0D0A:  # section header: its byte order
            end = "<" if data[off + 8:off + 12] == b"\x4d\x3c\x2b\x1a" else ">"
            links = []
        blen = struct.unpack(end + "I", data[off + 4:off + 8])[0]
        if blen < 12:
            break
        body = data[off + 8:off + blen - 4]
        if btype == 1:  # interface description
            links.append(struct.unpack(end + "H", body[:2])[0])
        elif btype == 6:  # enhanced packet
            ifc, _, _, caplen = struct.unpack(end + "IIII", body[:16])
            yield links[ifc], body[20:20 + caplen]
        elif btype == 3:  # simple packet
            caplen = struct.unpack(end + "I", body[:4])[0]
            yield links[0], body[4:4 + caplen]
        off += blen


def read_pcap(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] == b"\x0a\x0d\x0d\x0a":
        yield from read_pcapng(data)
        return
    magic = struct.unpack("<I", data[:4])[0]
    end = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    linktype = struct.unpack(end + "I", data[20:24])[0]
    off = 24
    while off + 16 <= len(data):
        incl = struct.unpack(end + "IIII", data[off:off + 16])[2]
        yield linktype, data[off + 16:off + 16 + incl]
        off += 16 + incl


def check_pcap(path):
    """Verify the ICRC of every RoCEv2 frame (Ethernet or Linux cooked)."""
    bad = n = 0
    for idx, (linktype, fr) in enumerate(read_pcap(path), 1):
        if linktype == 1:      # Ethernet
            et, l3 = struct.unpack(">H", fr[12:14])[0], 14
        elif linktype == 113:  # Linux cooked capture (tcpdump -i any)
            et, l3 = struct.unpack(">H", fr[14:16])[0], 16
        elif linktype == 276:  # Linux cooked v2
            et, l3 = struct.unpack(">H", fr[0:2])[0], 20
        else:
            continue
        if et == 0x0800:
            ihl = (fr[l3] & 0xF) * 4
            if fr[l3 + 9] != 17:
                continue
            ip, l4 = fr[l3:l3 + 20], l3 + ihl
            if ihl != 20:
                print("frame %d: IPv4 options, not checked" % idx)
                continue
        elif et == 0x86DD:
            if fr[l3 + 6] != 17:
                continue
            ip, l4 = fr[l3:l3 + 40], l3 + 40
        else:
            continue
        udp = fr[l4:l4 + 8]
        if struct.unpack(">H", udp[2:4])[0] != ROCE_PORT:
            continue
        ulen = struct.unpack(">H", udp[4:6])[0]
        pkt = fr[l4 + 8:l4 + ulen]
        n += 1
        want = struct.unpack("<I", pkt[-4:])[0]
        got = icrc_of(ip, udp, pkt[:-4])
        ok = want == got
        bad += not ok
        print("frame %d: opcode 0x%02x icrc 0x%08x %s" %
              (idx, pkt[0], want, "good" if ok else "BAD (want 0x%08x)" % got))
    print("%d RoCEv2 frames, %d with a bad ICRC" % (n, bad))
    return 0 if n and not bad else 1


def main(argv):
    if len(argv) == 3 and argv[1] == "--pcap":
        write_pcap(argv[2], [frame(v)[0] for v in vectors()])
        return 0
    if len(argv) == 3 and argv[1] == "--corpus":
        os.makedirs(argv[2], exist_ok=True)
        for v in vectors():
            name = OPS[v["opcode"]][0].replace(" ", "_").lower()
            with open(os.path.join(argv[2], name), "wb") as f:
                f.write(frame(v)[1])
        return 0
    if len(argv) == 3 and argv[1] == "--check":
        return check_pcap(argv[2])
    if len(argv) == 1:
        print_c()
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
