#!/bin/bash
# tests/hosts/ipoib.sh on tests/topologies/line3.net: three hosts across
# three switches (H1 - S1 - S2 - S3 - H3, H2 on S2), OpenSM in H1: ping
# and ping -6 over ib0 across every switch, IP multicast from a to b and c
# through OpenSM's MFTs, the leave when the receivers go.
# Needs root (ip netns). Usage: tests/hosts/ipoib_line3.sh
SOF_IPOIB_TOPO=line3 exec "$(dirname "$0")/ipoib.sh"
