#!/bin/bash
# bench/onesided_ab.sh — issue 18's one-sided latencies between two hosts:
# a base build against this one, in alternating rounds (base, new, base,
# new ...) on the same machine, each round on fresh hosts.
#
# A round: two network-namespace hosts on a veth pair (sof_hosts_up 2), the
# server (the target of the WRITEs, READs and atomics) in host a pinned to
# CPU 0, the client in host b pinned to CPU 1, as bench/run.sh runs them;
# ib_send_lat 2 B, ib_read_lat 2 B, ib_atomic_lat 8 B, ib_write_lat 2 B
# (-n BENCH_ITERS, default 10000), then the four again with a busy loop
# pinned to CPU 0 in host a (the "busy target host" rows). Each gives
# t_typical and t_avg (µs; READ and atomic are round trips, SEND and WRITE
# one-way, as perftest reports them). The table has the medians of the
# rounds of each build and the medians of the per-round ratios of issue
# 18: read / (2 x send), atomic / (2 x send), write / send, and t_avg /
# t_typical of each. The load average is taken at the start of each round.
# ib_write_lat runs with -U (every iteration's latency): the share of its
# iterations over 50 µs one-way is a row of its own (a broken chain of ACKs
# riding on requests, tp_wake.c, shows there as runs of iterations at
# 50-100 µs, where t_avg also carries the milliseconds a loaded machine
# keeps a process off its CPU).
# The reference for what a target that must run to answer can reach: the
# kernel's UDP ping-pong (sockperf, 14 B, busy-polled, the server pinned to
# CPU 0), plain and busy. Its receive path runs in the kernel's softirq,
# as a NIC's would, but its server answers only while it has the CPU: the
# position of ib_send_lat's server, whose poll must run to answer (the
# busy loop takes half of CPU 0 at the least).
#
# Usage: BENCH_BASE=DIR bench/onesided_ab.sh (root: ip netns; BENCH_BUILD=DIR
#        the new build, default build/; BENCH_REPS rounds of each, default
#        3; BENCH_OUT=FILE also appends the table there).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)

if [ -z "${ONESIDED_AB_ROUND:-}" ]; then
	# shellcheck source=bench/ab_lib.sh
	. "$ROOT/bench/ab_lib.sh"
	ab_rounds onesided_ab ONESIDED_AB_ROUND
	# rcol SIDE NUM DEN MUL: the median of the per-round NUM / (MUL x DEN)
	rcol() {
		for r in $(seq 1 "$REPS"); do
			awk -v a="$(val "$1" "$r" "$2")" -v b="$(val "$1" "$r" "$3")" -v m="$4" \
				'BEGIN { if (a != "" && b != "" && b > 0) printf "%.3f\n", a / (m * b) }'
		done | median
	}
	{
		echo "### One-sided latency between hosts (veth): base ($A) vs new ($B), median of $REPS alternating rounds"
		echo
		echo "| figure | base | new | new / base |"
		echo "|---|---|---|---|"
		for v in "" _busy; do
			w=""
			[ -n "$v" ] && w=" (busy target host)"
			for t in send read atomic write; do
				u="one-way"
				case $t in read | atomic) u="round trip" ;; esac
				a=$(col A "${t}${v}") b=$(col B "${t}${v}")
				echo "| ib_${t}_lat$w t_typical µs ($u) | $a | $b | $(ratio "$b" "$a") |"
				a=$(col A "${t}${v}_avg") b=$(col B "${t}${v}_avg")
				echo "| ib_${t}_lat$w t_avg µs | $a | $b | $(ratio "$b" "$a") |"
			done
		done
		for v in "" _busy; do
			w=""
			[ -n "$v" ] && w=" (busy target host)"
			a=$(col A "write${v}_slow") b=$(col B "write${v}_slow")
			echo "| ib_write_lat$w iterations over 50 µs (%) | $a | $b | $(ratio "$b" "$a") |"
		done
		for v in "" _busy; do
			w=""
			[ -n "$v" ] && w=" (busy target host)"
			a=$(col A "kudp$v") b=$(col B "kudp$v")
			echo "| kernel UDP ping-pong 14 B busy-polled$w median µs (one-way) | $a | $b | $(ratio "$b" "$a") |"
			a=$(col A "kudp${v}_avg") b=$(col B "kudp${v}_avg")
			echo "| kernel UDP ping-pong 14 B busy-polled$w average µs | $a | $b | $(ratio "$b" "$a") |"
		done
		echo "| load average (1 min) at round start | $(col A load) | $(col B load) | |"
		echo
		echo "Issue 18's ratios (median of the per-round ratios; target ≤ 1.2 for the first three, ≤ 2 for t_avg / t_typical):"
		echo
		echo "| ratio | base | new |"
		echo "|---|---|---|"
		for v in "" _busy; do
			w=""
			[ -n "$v" ] && w=" (busy target host)"
			echo "| read (round trip) / twice send$w | $(rcol A "read$v" "send$v" 2) | $(rcol B "read$v" "send$v" 2) |"
			echo "| atomic (round trip) / twice send$w | $(rcol A "atomic$v" "send$v" 2) | $(rcol B "atomic$v" "send$v" 2) |"
			echo "| write / send$w | $(rcol A "write$v" "send$v" 1) | $(rcol B "write$v" "send$v" 1) |"
			for t in send read atomic write; do
				echo "| $t t_avg / t_typical$w | $(rcol A "${t}${v}_avg" "$t$v" 1) | $(rcol B "${t}${v}_avg" "$t$v" 1) |"
			done
			echo "| reference: kernel UDP ping-pong average / median$w | $(rcol A "kudp${v}_avg" "kudp$v" 1) | $(rcol B "kudp${v}_avg" "kudp$v" 1) |"
		done
	} | ab_end
	exit 0
fi

# ---- one round, with build $BENCH_BUILD ------------------------------------------
export SOF_BUILD=$BENCH_BUILD
# shellcheck source=tests/lib.sh
. "$ROOT/tests/lib.sh"
sof_init
ITERS=${BENCH_ITERS:-10000}
echo "load $(cut -d' ' -f1 /proc/loadavg)"
sof_hosts_up 2 >/dev/null 2>&1 || {
	echo "# hosts failed" >&2
	sof_exit >/dev/null 2>&1
	exit 1
}
NA=$(sof_host_ns a) NB=$(sof_host_ns b) IP=$(sof_host_ip a)
GA=$(sof_host_gid a) GB=$(sof_host_gid b)
PORT=19400

# lat TEST SUFFIX: one server / client run; "TEST[SUFFIX] t_typical" and
# "TEST[SUFFIX]_avg t_avg"
lat() {
	local t=$1 v=$2 args=(-s 2) line
	[ "$t" = atomic ] && args=()
	[ "$t" = write ] && args+=(-U)
	PORT=$((PORT + 1))
	sof_bg "srv.$t$v" 150 ip netns exec "$NA" taskset -c 0 "$SOFTOFED" run -- \
		"ib_${t}_lat" -d sof0 -F -p "$PORT" -x "$GA" "${args[@]}" -n "$ITERS"
	if SOF_LISTEN_HOST=a sof_wait_listen "$PORT" 20 "srv.$t$v" >/dev/null 2>&1; then
		sof_bg "cli.$t$v" 120 ip netns exec "$NB" taskset -c 1 "$SOFTOFED" run -- \
			"ib_${t}_lat" -d sof0 -F -p "$PORT" -x "$GB" "${args[@]}" -n "$ITERS" "$IP"
		sof_wait "cli.$t$v" 130
		line=$(grep -E "$SOF_PERFTEST_RESULT" "$(sof_out "cli.$t$v")" | tail -n 1)
	fi
	sof_wait "srv.$t$v" 10 || sof_kill "srv.$t$v"
	if [ -z "${line:-}" ]; then
		echo "# ib_${t}_lat$v failed: $(tail -n 3 "$(sof_out "cli.$t$v")" "$(sof_out "srv.$t$v")" 2>/dev/null | tr '\n' ' ')" >&2
		line="- - - - - -"
	fi
	echo "$t$v $(echo "$line" | awk '{print $5}')"
	echo "${t}${v}_avg $(echo "$line" | awk '{print $6}')"
	# -U: "N, usec" a line
	if [ "$t" = write ]; then
		line=$(awk -F', ' '/^[0-9]+, [0-9.]+$/ { n++; if ($2 > 50) s++ }
			END { if (n) printf "%.2f", 100 * s / n }' "$(sof_out "cli.$t$v")" 2>/dev/null)
		echo "${t}${v}_slow ${line:--}"
	fi
}

# kudp SUFFIX: the kernel's UDP ping-pong, "kudpSUFFIX median" and
# "kudpSUFFIX_avg average" (µs, one-way)
kudp() {
	local v=$1 out i
	PORT=$((PORT + 1))
	sof_bg "ksrv$v" 30 ip netns exec "$NA" taskset -c 0 sockperf sr -i "$IP" -p "$PORT" --nonblocked
	for i in $(seq 1 100); do
		[ -n "$(ip netns exec "$NA" ss -Hlun "sport = :$PORT" 2>/dev/null)" ] && break
		sleep 0.05
	done
	sof_bg "kcli$v" 20 ip netns exec "$NB" taskset -c 1 sockperf pp -i "$IP" -p "$PORT" \
		--nonblocked -m 14 -t 2
	sof_wait "kcli$v" 25
	sof_kill "ksrv$v"
	out=$(sof_out "kcli$v")
	echo "kudp$v $(awk '/percentile 50.000/ { print $NF }' "$out" | tail -n 1)"
	echo "kudp${v}_avg $(sed -n 's/.*avg-latency=\([0-9.]*\).*/\1/p' "$out" | tail -n 1)"
}

for t in send read atomic write; do lat "$t" ""; done
kudp ""
sof_bg busy 600 ip netns exec "$NA" taskset -c 0 sh -c 'while :; do :; done'
for t in send read atomic write; do lat "$t" _busy; done
kudp _busy
sof_kill busy
sof_exit >/dev/null 2>&1
exit 0
