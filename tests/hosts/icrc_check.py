#!/usr/bin/env python3
"""Check the ICRC of every RoCEv2 packet of a capture (tests/hosts/capture.sh).

    icrc_check.py FILE.pcap
        every IPv4/IPv6 UDP packet to port 4791 in the classic-pcap FILE
        (tshark -F pcap; link types Ethernet, Linux cooked v1/v2, raw IP)
        must end in the ICRC of IBA Annex A17.3.3 computed over the headers
        exactly as they were on the wire. Prints
            icrc: N RoCEv2 packets, M with a wrong ICRC
        and one line per bad packet (the first 20); exit 0 when N > 0 and
        M == 0, else 1.

    icrc_check.py --vector SRC SPORT DST HEX
        prints the ICRC (as 0x%08x, the value whose little-endian bytes go on
        the wire) of the UDP payload HEX (without ICRC) sent from SRC:SPORT to
        DST:4791, assuming the IPv4 header a kernel UDP socket with DF sends
        (ID 0): for comparing implementations.

Wireshark (4.0) shows the field infiniband.invariant.crc but does not verify
it, hence this independent check (zlib's CRC-32 is the ICRC's CRC: IEEE
802.3, reflected, all ones in, complemented out).
"""
import ipaddress
import struct
import sys
import zlib

ROCE_PORT = 4791


def icrc(ip_hdr, udp_hdr, payload):
    """ICRC of payload (the UDP payload without its last 4 bytes)."""
    ip = bytearray(ip_hdr)
    if ip[0] >> 4 == 4:
        ip[1] = 0xFF  # TOS
        ip[8] = 0xFF  # TTL
        ip[10:12] = b"\xff\xff"  # header checksum
    else:
        ip[0:4] = b"\x6f\xff\xff\xff"  # traffic class, flow label
        ip[7] = 0xFF  # hop limit
    udp = bytearray(udp_hdr)
    udp[6:8] = b"\xff\xff"  # UDP checksum
    bth = bytearray(payload[:12])
    bth[4] = 0xFF  # FECN, BECN, reserved
    data = b"\xff" * 8 + bytes(ip) + bytes(udp) + bytes(bth) + bytes(payload[12:])
    return zlib.crc32(data) & 0xFFFFFFFF


def pcap_packets(path):
    """Yield (frame number, link type, bytes) of a classic pcap file."""
    with open(path, "rb") as f:
        hdr = f.read(24)
        if len(hdr) < 24:
            raise ValueError("not a pcap file (too short)")
        magic = hdr[:4]
        if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
            end = "<"
        elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
            end = ">"
        else:
            raise ValueError("not a classic pcap file (write it with -F pcap)")
        linktype = struct.unpack(end + "I", hdr[20:24])[0] & 0xFFFF
        n = 0
        while True:
            rec = f.read(16)
            if len(rec) < 16:
                return
            _, _, incl, orig = struct.unpack(end + "IIII", rec)
            data = f.read(incl)
            n += 1
            yield n, linktype, data, orig


def ip_of(linktype, frame):
    """The IP packet inside a frame, or None."""
    if linktype == 1:  # Ethernet
        off, etype = 14, struct.unpack(">H", frame[12:14])[0]
        while etype in (0x8100, 0x88A8):
            etype = struct.unpack(">H", frame[off + 2 : off + 4])[0]
            off += 4
    elif linktype == 113:  # Linux cooked v1
        off, etype = 16, struct.unpack(">H", frame[14:16])[0]
    elif linktype == 276:  # Linux cooked v2
        off, etype = 20, struct.unpack(">H", frame[0:2])[0]
    elif linktype in (101, 228, 229):  # raw IP
        off = 0
        etype = 0x0800 if frame and frame[0] >> 4 == 4 else 0x86DD
    else:
        raise ValueError("link type %d not handled" % linktype)
    if etype not in (0x0800, 0x86DD):
        return None
    return frame[off:]


def split_udp(ip):
    """(ip header, udp header, udp payload, error) of a RoCEv2 packet, or None."""
    if len(ip) < 20:
        return None
    if ip[0] >> 4 == 4:
        ihl = (ip[0] & 0xF) * 4
        if ip[9] != 17 or len(ip) < ihl + 8:
            return None
        if struct.unpack(">H", ip[6:8])[0] & 0x3FFF:
            return ip[:ihl], ip[ihl : ihl + 8], b"", "IP fragment"
        total = struct.unpack(">H", ip[2:4])[0]
        ip_hdr, rest = ip[:ihl], ip[ihl:total]
    elif ip[0] >> 4 == 6:
        if len(ip) < 48 or ip[6] != 17:
            return None  # extension headers: not what RoCEv2 sends
        plen = struct.unpack(">H", ip[4:6])[0]
        ip_hdr, rest = ip[:40], ip[40 : 40 + plen]
    else:
        return None
    if len(rest) < 8 or struct.unpack(">H", rest[2:4])[0] != ROCE_PORT:
        return None
    ulen = struct.unpack(">H", rest[4:6])[0]
    if ulen != len(rest):
        return ip_hdr, rest[:8], rest[8:], "UDP length %d, %d bytes there" % (ulen, len(rest))
    return ip_hdr, rest[:8], rest[8:], None


def addr_str(ip_hdr):
    if ip_hdr[0] >> 4 == 4:
        return "%s -> %s" % (
            ipaddress.ip_address(bytes(ip_hdr[12:16])),
            ipaddress.ip_address(bytes(ip_hdr[16:20])),
        )
    return "%s -> %s" % (
        ipaddress.ip_address(bytes(ip_hdr[8:24])),
        ipaddress.ip_address(bytes(ip_hdr[24:40])),
    )


def check(path):
    total = bad = 0
    for num, linktype, frame, orig in pcap_packets(path):
        ip = ip_of(linktype, frame)
        if ip is None:
            continue
        parts = split_udp(ip)
        if parts is None:
            continue
        ip_hdr, udp_hdr, payload, err = parts
        total += 1
        if err is None and len(frame) < orig:
            err = "truncated capture (%d of %d bytes)" % (len(frame), orig)
        if err is None and len(payload) < 16:
            err = "UDP payload of %d bytes: shorter than BTH + ICRC" % len(payload)
        if err is None:
            wire = struct.unpack("<I", payload[-4:])[0]
            want = icrc(ip_hdr, udp_hdr, payload[:-4])
            if wire != want:
                err = "opcode 0x%02x psn %d: ICRC on the wire 0x%08x, computed 0x%08x" % (
                    payload[0],
                    struct.unpack(">I", b"\0" + payload[9:12])[0],
                    wire,
                    want,
                )
        if err is not None:
            bad += 1
            if bad <= 20:
                print("# bad frame %d (%s): %s" % (num, addr_str(ip_hdr), err))
    print("icrc: %d RoCEv2 packets, %d with a wrong ICRC" % (total, bad))
    return 0 if total > 0 and bad == 0 else 1


def vector(src, sport, dst, hexstr):
    s, d = ipaddress.ip_address(src), ipaddress.ip_address(dst)
    payload = bytes.fromhex(hexstr)
    ulen = 8 + len(payload) + 4
    udp = struct.pack(">HHHH", int(sport), ROCE_PORT, ulen, 0)
    if s.version == 4:
        ip = struct.pack(">BBHHHBBH", 0x45, 0, 20 + ulen, 0, 0x4000, 64, 17, 0)
        ip += s.packed + d.packed
    else:
        ip = struct.pack(">IHBB", 0x60000000, ulen, 17, 64) + s.packed + d.packed
    print("0x%08x" % icrc(ip, udp, payload))
    return 0


def main(argv):
    if len(argv) == 2 and not argv[1].startswith("-"):
        try:
            return check(argv[1])
        except (OSError, ValueError) as e:
            print("icrc: cannot read %s: %s" % (argv[1], e))
            return 1
    if len(argv) == 6 and argv[1] == "--vector":
        return vector(argv[2], argv[3], argv[4], argv[5])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
