#!/bin/bash
# Consumer ladder, step 3 (issue 2): the unmodified perftest programs,
# server and client as two processes on one host through `softofed run`, on
# device sof0:
#   ib_send_lat ib_send_bw ib_write_lat ib_write_bw ib_read_lat ib_read_bw
#     each with -a (every size from 2 bytes to 8 MiB; -n 20 for latency,
#     -n 50 for bandwidth), the latency tests with -x 0 (GID index 0 given),
#     the bandwidth tests with the GID perftest picks itself;
#   ib_atomic_lat ib_atomic_bw: perftest itself refuses -a for atomics ("Message
#     size cannot be changed for Atomic tests": their size is fixed at 8), so
#     they run once per atomic type (-A FETCH_AND_ADD with -x 0, -A
#     CMP_AND_SWAP without);
#   ib_send_lat -e -s 2 (completion events instead of busy polling, on
#     the small SEND's short way of the same-host executor);
#   every bw test also with --run_infinitely -D 1 bounded by `timeout 9`: it
#     passes when the client printed at least 2 result lines and was still
#     running then (it is stopped at its second line, SIGTERM as `timeout`
#     sends it; ending by itself, or its 9 s bound reached first, fails) and
#     printed no error;
#   UC and XRC (-c), 8 QPs with post lists, events with an SRQ, ODP, a
#     bidirectional READ test with 8 outstanding.
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

# pt_inf PROG ARGS...: --run_infinitely -D 1, client bounded by 9 s (its
# set-up alone can take seconds on a loaded machine), stopped (SIGTERM) once
# it printed its second result line while still running
pt_inf() {
	local name n args
	name="perftest/$* --run_infinitely -D 1"
	PORT=$((PORT + 1))
	args=("$@" -p "$PORT" -d sof0 -F --run_infinitely -D 1)
	if ! _sof_pair_init "$name" "$1"; then
		not_ok "$name" "$SOF_PAIR_WHY"
		return
	fi
	sof_bg "$name.srv" 39 "$SOFTOFED" run -- stdbuf -oL -eL "${args[@]}"
	if ! sof_wait_listen "$PORT" 20 "$name.srv"; then
		sof_kill "$name.srv"
		not_ok "$name" "server did not listen on port $PORT"
		sof_pair_dump
		return
	fi
	sof_bg "$name.cli" 9 "$SOFTOFED" run -- stdbuf -oL -eL "${args[@]}" localhost
	while sof_alive "$name.cli" &&
		[ "$(grep -c -E "$SOF_PERFTEST_RESULT" "$SOF_CLI_OUT")" -lt 2 ]; do
		sleep 0.1
	done
	n=$(grep -c -E "$SOF_PERFTEST_RESULT" "$SOF_CLI_OUT")
	if sof_alive "$name.cli"; then
		sof_kill "$name.cli"
		SOF_CLI_RC=stopped
	else
		sof_wait "$name.cli" 1
		SOF_CLI_RC=$?
	fi
	# the server fails by design once its client is gone (its socket
	# closes, its QP sees the dead peer): only stopped here
	sof_wait "$name.srv" 1
	SOF_SRV_RC=$?
	if [ "$SOF_CLI_RC" = 124 ]; then
		not_ok "$name" "$n result lines in 9 s (want >= 2)"
		sof_pair_dump
	elif [ "$SOF_CLI_RC" != stopped ]; then
		not_ok "$name" "client ended with status $SOF_CLI_RC before its second result line"
		sof_pair_dump
	elif grep -q -i -E "$SOF_PERFTEST_ERRORS" "$SOF_CLI_OUT"; then
		# Only the client's output is judged (see above).
		not_ok "$name" "error text in the client's output"
		sof_pair_dump
	else
		ok "$name: ran ($n result lines, then stopped while still running; no data compared)"
	fi
}

PORT=$((PORT + 1))
sof_stream_pair "perftest/data_stream -m 4096" "" "" "$PORT" 60 -g 0 -m 4096 \
	-s "$(sof_stream_sizes 4096)"

# With -a, one iteration of every size moves some 16 MiB: a few show that
# the programs run; more only spent the time copying.
for t in send write read; do
	pt 120 "ib_${t}_lat" -a -n 20 -x 0
	pt 120 "ib_${t}_bw" -a -n 50
	pt_inf "ib_${t}_bw"
done

pt 60 ib_send_lat -e -s 2 -n 2000 -x 0

pt 60 ib_atomic_lat -A FETCH_AND_ADD -n 1000 -x 0
pt 60 ib_atomic_bw -A FETCH_AND_ADD -n 5000 -x 0
pt 60 ib_atomic_lat -A CMP_AND_SWAP -n 1000
pt 60 ib_atomic_bw -A CMP_AND_SWAP -n 5000
pt_inf ib_atomic_bw

# the other transports and posting modes perftest offers: UC, XRC (whose
# QPs get the other half's attributes in their masks, ignored as the
# kernel's uverbs does), several QPs, post lists, events, SRQ, ODP,
# bidirectional
pt 60 ib_send_bw -c UC -n 200
pt 60 ib_write_lat -c UC -n 200
pt 60 ib_send_bw -c XRC -n 200
pt 60 ib_write_bw -c XRC -n 200
pt 60 ib_send_lat -c XRC -n 200
pt 60 ib_atomic_bw -c XRC -n 200
pt 60 ib_read_bw -c XRC -n 200
pt 60 ib_write_bw -q 8 -l 8 -n 400
pt 60 ib_send_bw -e --use-srq -n 200
pt 60 ib_send_bw --odp -n 200
pt 60 ib_read_bw -b -o 8 -n 200

sof_exit
