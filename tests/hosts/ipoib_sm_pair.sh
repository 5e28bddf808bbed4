#!/bin/bash
# Issue 20 item 3: tests/hosts/ipoib.sh on pair (two hosts on one switch)
# with softofed's own SM instead of OpenSM: ib0 over its SA's broadcast
# group and MFTs, every pair step (ping, ping -6, iperf3, http, malformed
# frames, the SM restarted, down).
# Needs root (ip netns). Usage: tests/hosts/ipoib_sm_pair.sh
SOF_SM=softofed exec "$(dirname "$0")/ipoib.sh"
