#!/usr/bin/env python3
"""Datagrams on the fabric's direct paths (transport/ibdirect.c) that a
host must drop: sent in a raw socket with another host's link address as
their source (IPv4, UDP checksum 0), to a host's link socket.

    ib_direct_forge.py --src ADDR:PORT --dst ADDR:PORT DLID:PKEY...

One RC SEND Only packet (LRH, BTH, a zero ICRC and VCRC: a packet that
passes the direct checks is then dropped by the port's own) for each
DLID:PKEY (numbers, 0x for hex), in order; prints "sent N".
"""
import argparse
import socket
import struct


def addr(s):
    host, port = s.rsplit(":", 1)
    return host, int(port)


def packet(dlid, pkey):
    # LRH (IBA 7.7): VL 0, LVer 0; SL 0, LNH 2 (BTH follows); DLID;
    # PktLen in 4-byte words LRH..ICRC; SLID 0 (never checked by a switch)
    words = (8 + 12 + 4) // 4
    lrh = struct.pack(">BBHHH", 0x00, 0x02, dlid, words, 0)
    # BTH (IBA 9.2): OpCode RC SEND Only (0x04), P_Key, DestQP, PSN
    bth = struct.pack(">BBHII", 0x04, 0x00, pkey, 0x123456, 0)
    return lrh + bth + b"\0" * 4 + b"\0" * 2


def udp_ip(src, dst, payload):
    udp = struct.pack(">HHHH", src[1], dst[1], 8 + len(payload), 0) + payload
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0,
                     socket.inet_aton(src[0]), socket.inet_aton(dst[0]))
    return ip + udp


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--src", required=True, type=addr)
    ap.add_argument("--dst", required=True, type=addr)
    ap.add_argument("pkts", nargs="+")
    a = ap.parse_args()
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    n = 0
    for p in a.pkts:
        dlid, pkey = (int(x, 0) for x in p.split(":"))
        s.sendto(udp_ip(a.src, a.dst, packet(dlid, pkey)), (a.dst[0], 0))
        n += 1
    print("sent", n)


if __name__ == "__main__":
    main()
