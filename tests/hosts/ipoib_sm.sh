#!/bin/bash
# Issue 20 item 3: tests/hosts/ipoib.sh on line3 (H1 - S1 - S2 - S3 - H3,
# H2 on S2) with softofed's own SM (`softofed sm`) instead of OpenSM: its
# SA's IPoIB broadcast group and the spanning trees and MFTs it writes
# (sm/mcast.c) carry ARP and neighbour discovery across three switches
# (ping, ping -6 a -> c, c -> b), and IP multicast from a reaches both b
# and c, every datagram checked; then the leave.
# Needs root (ip netns). Usage: tests/hosts/ipoib_sm.sh
SOF_SM=softofed SOF_IPOIB_TOPO=line3 exec "$(dirname "$0")/ipoib.sh"
