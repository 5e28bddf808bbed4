#!/bin/bash
# tests/hosts/sm.sh on tests/topologies/line3.net: three hosts across
# three switches in a line, softofed-sm in H1, the ping-pong H1 <-> H3.
# Needs root (ip netns). Usage: tests/hosts/sm_line3.sh
SOF_SM=softofed SOF_OPENSM_TOPO=line3 exec "$(dirname "$0")/opensm.sh"
