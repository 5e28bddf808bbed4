#!/bin/bash
# SRQ resize under traffic on one host (issue 17, item 3): srq_resize's
# client, another process, streams SENDs (lengths 1..4096) to an RC QP on
# the server's SRQ through the same-host executor, which has the SRQ
# mapped, while the server grows and shrinks the SRQ every 50 messages
# (16 to 1024 and back, ibv_modify_srq IBV_SRQ_MAX_WR). Every message must
# complete the WQE of its number (in order, none lost, none twice) with
# its byte_len and every byte checked; each resize at least the WQEs
# outstanding succeeds and ibv_query_srq reports the size rounded up.
# In a private network namespace with its own daemon.
# Usage: tests/integration/srq_resize.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_ns_enter "$@"
sof_init

PORT=18950
# The second run resizes every 7 messages with both processes on one CPU:
# the resize's move of the WQEs is preempted by the sender's executor far
# more often (a move taken WQE by WQE let the executor, still on the old
# ring, take one behind those already moved: a message out of order).
for run in "50 all CPUs" "7 one CPU"; do
	every=${run%% *}
	where=${run#* }
	pin=()
	[ "$where" = "one CPU" ] && pin=(taskset -c "$(taskset -pc $$ | sed 's/.*: //; s/[-,].*//')")
	n=3000
	PORT=$((PORT + 1))
	name="srq_resize/one host: $n messages while the SRQ is resized every $every, $where"
	sof_bg "$name.srv" 90 "${pin[@]}" "$SOFTOFED" run -- "$SOF_PROGS/srq_resize" -p "$PORT" -n "$n" -e "$every" -T 80
	sof_wait_listen "$PORT" 10 2>/dev/null || sleep 0.5
	sof_bg "$name.cli" 90 "${pin[@]}" "$SOFTOFED" run -- "$SOF_PROGS/srq_resize" -p "$PORT" -n "$n" -T 80 \
		127.0.0.1
	sof_wait "$name.cli" 90
	crc=$?
	sof_wait "$name.srv" 30
	src=$?
	so=$(sof_out "$name.srv")
	co=$(sof_out "$name.cli")
	if [ $crc -eq 0 ] && [ $src -eq 0 ] &&
		grep -q "^server received $n messages in order, every byte checked, [1-9][0-9]* resizes ([1-9][0-9]* grows, [1-9][0-9]* shrinks" "$so" &&
		grep -q "^client sent $n messages" "$co"; then
		ok "$name: $(grep '^server received' "$so" | sed 's/.*checked, //')"
	else
		not_ok "$name" "exit status server $src, client $crc"
		sof_dump "$so" "$co"
	fi
done
