#!/bin/bash
# tests/hosts/netem.sh with the selective acknowledgements off in every
# daemon and program of both hosts (SOFTOFED_SACK=0): the same impairments
# recovered by standard IBA behaviour (sequence-error NAKs, go-back-N), as
# with a peer that does not offer the extension (Linux rxe, a RoCE NIC).
# Needs root (ip netns); tests/run.sh runs it with the hosts tests.
# Usage: tests/hosts/netem_std.sh
SOF_NETEM_SACK=off exec "$(dirname "$0")/netem.sh" "$@"
