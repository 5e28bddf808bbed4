#!/bin/bash
# Issue 20: softofed's own subnet manager (softofed-sm, sm/) on the
# software fabric with real hosts, checked as tests/hosts/opensm.sh checks
# OpenSM (the same script with SOF_SM=softofed): SUBNET UP, LIDs, ibstat,
# ibnetdiscover, smpquery, ibroute and perfquery by the switch's GUID
# (through our SA's PathRecord), sminfo naming ours master, saquery
# NodeRecords from our SA, ibv_rc_pingpong by LID with --chk.
# Needs root (ip netns). Usage: [SOF_OPENSM_TOPO=line3] tests/hosts/sm.sh
SOF_SM=softofed exec "$(dirname "$0")/opensm.sh"
