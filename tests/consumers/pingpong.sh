#!/bin/bash
# Consumer ladder, step 2 (issue 2): the unmodified ibverbs-utils
# ping-pong examples, server and client as two processes on one host, both
# through `softofed run`, data checked (--chk), GID index 0 (-g 0):
#   ibv_rc_pingpong, ibv_uc_pingpong, ibv_srq_pingpong: sizes 1, 4096, 65536
#     and 1 MiB, 1000 iterations, polling and with -e (completion events);
#   ibv_ud_pingpong: sizes 1, 2048 and 4096 (its limit is the port MTU, 4096),
#     polling and with -e.
# Each passes when both processes exit with 0, both print their "bytes in"
# line and neither reports invalid data. A missing program is a failure.
#
# Runs in a private network namespace with its own daemon.
# Usage: tests/consumers/pingpong.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_ns_enter "$@"
sof_init

PORT=19100

# pp SECS PROG ARGS...: one server/client run, its verdict as one line
pp() {
	local secs=$1 name
	shift
	name="pingpong/$*"
	PORT=$((PORT + 1))
	if ! sof_pair "$name" "$PORT" "$secs" "$@"; then
		not_ok "$name" "$SOF_PAIR_WHY"
		sof_pair_dump
	elif ! grep -q ' bytes in ' "$SOF_CLI_OUT"; then
		not_ok "$name" "the client printed no 'bytes in' line"
		sof_pair_dump
	elif ! grep -q ' bytes in ' "$SOF_SRV_OUT"; then
		not_ok "$name" "the server printed no 'bytes in' line"
		sof_pair_dump
	elif grep -q -i 'invalid data\|failed\|couldn' "$SOF_SRV_OUT" "$SOF_CLI_OUT"; then
		not_ok "$name" "error text in the output"
		sof_pair_dump
	else
		ok "$name ($(grep ' bytes in ' "$SOF_CLI_OUT" | head -n 1 |
			sed 's/.* = \([0-9.]* Mbit\/sec\).*/\1/'))"
	fi
}

for prog in ibv_rc_pingpong ibv_uc_pingpong ibv_srq_pingpong; do
	for size in 1 4096 65536 1048576; do
		pp 120 "$prog" -g 0 --chk -s "$size" -n 1000
		pp 120 "$prog" -g 0 --chk -s "$size" -n 1000 -e
	done
done

for size in 1 2048 4096; do
	pp 60 ibv_ud_pingpong -g 0 --chk -s "$size" -n 1000
	pp 60 ibv_ud_pingpong -g 0 --chk -s "$size" -n 1000 -e
done

sof_exit
