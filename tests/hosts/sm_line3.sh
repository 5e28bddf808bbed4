#!/bin/bash
# tests/hosts/sm.sh on tests/topologies/line3.net: three hosts across
# three switches in a line (H1 - S1 - S2 - S3 - H3, H2 on S2), softofed-sm
# in H1, the ping-pong H1 <-> H3 through all three switches.
# Needs root (ip netns). Usage: tests/hosts/sm_line3.sh
SOF_SM_TOPO=line3 exec "$(dirname "$0")/sm.sh"
