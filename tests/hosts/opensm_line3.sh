#!/bin/bash
# tests/hosts/opensm.sh on tests/topologies/line3.net: three hosts
# across three switches in a line (H1 - S1 - S2 - S3 - H3, H2 on S2),
# OpenSM in H1, the ping-pong H1 <-> H3 through all three switches.
# Needs root (ip netns). Usage: tests/hosts/opensm_line3.sh
SOF_OPENSM_TOPO=line3 exec "$(dirname "$0")/opensm.sh"
