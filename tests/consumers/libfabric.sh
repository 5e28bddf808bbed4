#!/bin/bash
# The libraries on verbs (issue 17), libfabric: the unmodified fi_pingpong
# (Debian's libfabric-bin) on libfabric's verbs provider over our
# libraries, server and client as two processes on one host through
# `softofed run`:
#   -p 'verbs;ofi_rxm' -e rdm    (RxM over verbs RC: what most libfabric
#                                 users run), message and tagged (-m tagged)
#   -p verbs -e msg              (verbs RC endpoints directly)
# each over every size fi_pingpong tries (-S all: 1 B .. 1 MiB) with its
# data check (-c: every received buffer compared with the pattern the
# sender wrote). A run passes when both exit with 0, the client printed the
# result line of the largest size (1m) and no error text.
#
# The provider reaches the device through the network interface that holds
# its address, and skips loopback (as with hardware), so the namespace gets
# a veth (sof_local_if). A missing program is a failure.
# Usage: tests/consumers/libfabric.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_ns_enter "$@"
sof_init

PORT=47600

# lf NAME ARGS...: one fi_pingpong pair
lf() {
	local name="libfabric/fi_pingpong $*"
	PORT=$((PORT + 1))
	if ! SOF_LINEBUF=1 sof_tcp_pair "$name" 60 "" "" "$PORT" \
		fi_pingpong -B "$PORT" "$@" -- fi_pingpong -P "$PORT" "$@" "$SOF_LOCAL_IP"; then
		not_ok "$name" "$SOF_PAIR_WHY"
		sof_pair_dump
		return
	fi
	sof_fi_verdict "$name" 1m
}

if ! command -v fi_pingpong >/dev/null 2>&1; then
	not_ok "libfabric" "fi_pingpong is not installed (tests/install-deps.sh installs libfabric-bin)"
	sof_exit
fi
sof_local_if || sof_exit

lf -p 'verbs;ofi_rxm' -e rdm -c -S all -I 50
lf -p 'verbs;ofi_rxm' -e rdm -m tagged -c -S all -I 50
lf -p verbs -e msg -c -S all -I 50
sof_exit
