#!/bin/bash
# Issue 20 item 5: tests/hosts/partitions.sh with softofed's own SM
# (softofed-sm --partitions FILE) instead of OpenSM, the same
# partitions.conf and the same checks.
# Needs root (ip netns). Usage: tests/hosts/partitions_sm.sh
SOF_SM=softofed exec "$(dirname "$0")/partitions.sh"
