#!/bin/bash
# Consumer ladder, step 2 (issue 2): the unmodified ibverbs-utils
# ping-pong examples, server and client as two processes on one host, both
# through `softofed run`, GID index 0 (-g 0):
#   ibv_rc_pingpong, ibv_uc_pingpong, ibv_srq_pingpong: sizes 1, 4096, 65536
#     and 1 MiB, 1000 iterations, polling and with -e (completion events);
#   ibv_ud_pingpong: sizes 1, 2048 and 4096 (its limit is the port MTU, 4096),
#     polling and with -e.
# Each passes when both processes exit with 0, both print their "bytes in"
# line and neither reports an error (sof_pingpong_verdict): that proves the
# unmodified programs run, not that their data arrived intact, since their
# --chk compares one byte per page with a value that is always 0. The data
# is checked beside them by tests/progs/data_stream (sof_stream_pair): SEND,
# WRITE, WRITE with immediate and READ, 1 B .. 1 MiB, every byte of every
# message, at path MTU 1024 and 4096. A missing program is a failure.
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
	local secs=$1 rc
	shift
	PORT=$((PORT + 1))
	sof_pair "pingpong/$*" "$PORT" "$secs" "$@"
	rc=$?
	sof_pingpong_verdict "pingpong/$*" "$rc"
}

for mtu in 1024 4096; do
	PORT=$((PORT + 1))
	sof_stream_pair "pingpong/data_stream -m $mtu" "" "" "$PORT" 60 -g 0 -m "$mtu" \
		-s "$(sof_stream_sizes "$mtu")"
done

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
