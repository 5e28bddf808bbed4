#!/bin/bash
# Consumer ladder, step 3 (issue 2): the unmodified perftest programs,
# server and client as two processes on one host through `softofed run`, on
# device sof0:
#   ib_send_lat ib_send_bw ib_write_lat ib_write_bw ib_read_lat ib_read_bw
#     each with -a (every size from 2 bytes to 8 MiB; -n 100 for latency,
#     -n 200 for bandwidth) and with -x 0 (GID index 0, default size and
#     iterations);
#   ib_atomic_lat ib_atomic_bw: perftest itself refuses -a for atomics ("Message
#     size cannot be changed for Atomic tests": their size is fixed at 8), so
#     they run once per atomic type (-A FETCH_AND_ADD / -A CMP_AND_SWAP) and
#     with -x 0;
#   every bw test also with --run_infinitely -D 2 bounded by `timeout 8`: it
#     passes when the client printed at least 2 result lines, was stopped by
#     the timeout (124) and printed no error.
# A run passes when both processes exit with 0, the client printed its
# result table (with -a: up to the 8388608-byte line) and no error text
# (sof_perftest_verdict): that proves the programs run; perftest compares
# no data, so beside them tests/progs/data_stream moves SEND, WRITE, WRITE
# with immediate and READ messages of 1 B .. 1 MiB through the same device
# and checks every byte (sof_stream_pair). A missing program is a failure.
#
# Runs in a private network namespace with its own daemon.
# Usage: tests/consumers/perftest.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_ns_enter "$@"
sof_init

PORT=19300

# pt SECS PROG ARGS...: one server/client run, its verdict as one line
pt() {
	local secs=$1 rc last=""
	shift
	PORT=$((PORT + 1))
	sof_pair "perftest/$*" "$PORT" "$secs" "$@" -d sof0 -F
	rc=$?
	[[ " $* " == *" -a "* ]] && last=8388608
	sof_perftest_verdict "perftest/$*" "$rc" $last
}

# pt_inf PROG ARGS...: --run_infinitely -D 2, client bounded by 8 s
pt_inf() {
	local name n
	name="perftest/$* --run_infinitely -D 2"
	PORT=$((PORT + 1))
	SOF_LINEBUF=1 SOF_SERVER_GRACE=1 sof_pair "$name" "$PORT" 8 "$@" -d sof0 -F --run_infinitely -D 2
	n=$(grep -c -E "$SOF_PERFTEST_RESULT" "$SOF_CLI_OUT")
	if [ -z "$SOF_CLI_RC" ]; then
		not_ok "$name" "$SOF_PAIR_WHY"
		sof_pair_dump
	elif [ "$SOF_CLI_RC" -ne 124 ]; then
		not_ok "$name" "client ended with status $SOF_CLI_RC before the timeout"
		sof_pair_dump
	elif [ "$n" -lt 2 ]; then
		not_ok "$name" "$n result lines in 8 s (want >= 2)"
		sof_pair_dump
	elif grep -q -i -E "$SOF_PERFTEST_ERRORS" "$SOF_CLI_OUT"; then
		# Only the client's output is judged: once the timeout kills
		# it, the server fails by design (its socket closes, its QP
		# sees the dead peer) and says so.
		not_ok "$name" "error text in the client's output"
		sof_pair_dump
	else
		ok "$name: ran ($n result lines, stopped by the timeout; no data compared)"
	fi
}

PORT=$((PORT + 1))
sof_stream_pair "perftest/data_stream -m 4096" "" "" "$PORT" 60 -g 0 -m 4096 \
	-s "$(sof_stream_sizes 4096)"

for t in send write read; do
	pt 120 "ib_${t}_lat" -a -n 100
	pt 60 "ib_${t}_lat" -x 0
	pt 120 "ib_${t}_bw" -a -n 200
	pt 60 "ib_${t}_bw" -x 0
	pt_inf "ib_${t}_bw"
done

for type in FETCH_AND_ADD CMP_AND_SWAP; do
	pt 60 ib_atomic_lat -A "$type" -n 1000
	pt 60 ib_atomic_bw -A "$type" -n 5000
done
pt 60 ib_atomic_lat -x 0
pt 60 ib_atomic_bw -x 0
pt_inf ib_atomic_bw

sof_exit
