#!/bin/bash
# Consumer ladder, step 1 (issue 2): the unmodified ibverbs-utils device
# tools see our HCA through `softofed run`.
#   ibv_devices       lists sof0
#   ibv_devinfo -v    shows sof0 with its port PORT_ACTIVE, link layer
#                     Ethernet and the GID table (GID[0]); issue 17's device
#                     clock (hca_core_clock, timestamp mask) and QP rate
#                     limit (packet_pacing_caps); SRQ resize (SRQ_RESIZE
#                     among the device_cap_flags)
# Runs in a private network namespace with its own daemon. A missing program
# is a failure, never a skip.
#
# Usage: tests/consumers/devinfo.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_ns_enter "$@"
sof_init

# check NAME FILE REGEX: the output has a line matching REGEX
check() {
	if grep -q -E "$3" "$2"; then
		ok "$1"
	else
		not_ok "$1" "no line matching /$3/"
		sof_dump "$2"
	fi
}

# tool NAME CMD...: run CMD through softofed run; 0 when it exited with 0
tool() {
	local name=$1 out rc
	shift
	out=$(sof_out "$name")
	if ! command -v "$1" >/dev/null 2>&1; then
		not_ok "$name" "$1 is not installed (tests/install-deps.sh installs ibverbs-utils)"
		return 1
	fi
	timeout 30 "$SOFTOFED" run -- "$@" >"$out" 2>&1 </dev/null
	rc=$?
	if [ $rc -ne 0 ]; then
		not_ok "$name" "exit status $rc"
		sof_dump "$out"
		return 1
	fi
	ok "$name: exit status 0"
}

if tool devinfo/ibv_devices ibv_devices; then
	check "devinfo/ibv_devices: lists sof0" "$(sof_out devinfo/ibv_devices)" '^[[:space:]]+sof0[[:space:]]'
fi

if tool devinfo/ibv_devinfo ibv_devinfo -v; then
	out=$(sof_out devinfo/ibv_devinfo)
	check "devinfo/ibv_devinfo -v: hca_id sof0" "$out" '^hca_id:[[:space:]]+sof0$'
	check "devinfo/ibv_devinfo -v: vendor_id as rxe" "$out" 'vendor_id:[[:space:]]+0xffffff$'
	check "devinfo/ibv_devinfo -v: port PORT_ACTIVE" "$out" 'state:[[:space:]]+PORT_ACTIVE'
	check "devinfo/ibv_devinfo -v: link_layer Ethernet" "$out" 'link_layer:[[:space:]]+Ethernet'
	check "devinfo/ibv_devinfo -v: active_mtu 4096" "$out" 'active_mtu:[[:space:]]+4096'
	check "devinfo/ibv_devinfo -v: GID table" "$out" 'GID\[ *0\]:'
	check "devinfo/ibv_devinfo -v: IPv4-mapped loopback GID" "$out" 'GID\[ *[0-9]+\]:.*(::ffff:127\.0\.0\.1|0000:0000:0000:0000:0000:ffff:7f00:0001)'
	# issue 17: the device clock of completion timestamps, the QP rate limit
	check "devinfo/ibv_devinfo -v: hca_core_clock 1 GHz" "$out" 'hca_core_clock:[[:space:]]+1000000kHZ'
	check "devinfo/ibv_devinfo -v: completion timestamp_mask" "$out" 'completion timestamp_mask:[[:space:]]+0xffffffffffffffff'
	check "devinfo/ibv_devinfo -v: packet_pacing_caps" "$out" 'qp_rate_limit_min:[[:space:]]+1000kbps'
	check "devinfo/ibv_devinfo -v: SRQ_RESIZE capability" "$out" '^[[:space:]]+SRQ_RESIZE$'
fi

if tool devinfo/ibv_devinfo-d ibv_devinfo -d sof0 -i 1; then
	check "devinfo/ibv_devinfo -d sof0 -i 1: port 1" "$(sof_out devinfo/ibv_devinfo-d)" '^[[:space:]]+port:[[:space:]]+1$'
fi

sof_exit
