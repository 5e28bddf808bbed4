#!/bin/bash
# bench/sendlat_load_ab.sh — issue 18's ib_send_lat RETRY_EXC at load: a
# base build against this one, in alternating rounds (base, new, base,
# new ...), each round on fresh hosts.
#
# A round: two network-namespace hosts on a veth pair (sof_hosts_up 2);
# SENDLAT_TRIALS trials (default 3), each SENDLAT_PAIRS ib_send_lat pairs at
# once (default 3; 8 B, -n SENDLAT_ITERS, default 20000), every server
# pinned to CPU 0 in host a, every client to CPU 1 in host b, each bounded
# (60 s server, 45 s client). A pair failed when either side did not exit 0
# (perftest's 17: a completion with an error, "Failed status 12" =
# IBV_WC_RETRY_EXC_ERR on both sides, stderr, at the top of its output).
# A round prints "failed N" (pairs), "pairs N", "tmax_ms M" (the median of
# the passing pairs' t_max), "timeouts N" (local ACK timeouts counted by
# both hosts, programs included) and "load L" (at the round's start); with
# SENDLAT_KEEP=DIR a failed pair's outputs and host logs are copied there,
# and at the round's end each host's counters and drops (softofed status)
# and its kernel's UDP counters (nstat). SENDLAT_ENV="VAR=VALUE ..." is the
# environment of both programs of every pair (SOFTOFED_TRACE=1: each local
# ACK timeout's trace line says how late its engine ran it).
#
# One build alone: SENDLAT_AB_ROUND=1 BENCH_BUILD=DIR bench/sendlat_load_ab.sh
# (one round).
#
# Usage: BENCH_BASE=DIR bench/sendlat_load_ab.sh (root: ip netns;
#        BENCH_BUILD=DIR the new build, default build/; BENCH_REPS rounds
#        of each, default 3; BENCH_OUT=FILE also appends the table there).
#        About 25 s per trial at load 15, so 2 x 3 x 3 trials take ~8 min.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)

if [ -z "${SENDLAT_AB_ROUND:-}" ]; then
	# shellcheck source=bench/ab_lib.sh
	. "$ROOT/bench/ab_lib.sh"
	ab_rounds sendlat_load_ab SENDLAT_AB_ROUND
	sum() { cat "$T/$1".[0-9]* 2>/dev/null | awk -v k="$2" '$1 == k {s += $2} END {print s + 0}'; }
	{
		echo "### ib_send_lat pairs at load: base ($A) vs new ($B), $REPS alternating rounds"
		echo
		echo "| figure | base | new |"
		echo "|---|---|---|"
		echo "| pairs failed / run (sum) | $(sum A failed) / $(sum A pairs) | $(sum B failed) / $(sum B pairs) |"
		echo "| local ACK timeouts (sum) | $(sum A timeouts) | $(sum B timeouts) |"
		echo "| t_max of passing pairs, ms (median of round medians) | $(col A tmax_ms) | $(col B tmax_ms) |"
		echo "| load average at round start (median) | $(col A load) | $(col B load) |"
	} | ab_end
	exit 0
fi

# one round, with the build in BENCH_BUILD
export SOF_BUILD=${BENCH_BUILD:-build}
# shellcheck source=tests/lib.sh
. "$ROOT/tests/lib.sh"
sof_init
TRIALS=${SENDLAT_TRIALS:-3} PAIRS=${SENDLAT_PAIRS:-3} ITERS=${SENDLAT_ITERS:-20000}
echo "load $(cut -d' ' -f1 /proc/loadavg)"
sof_hosts_up 2 >/dev/null || {
	echo "# hosts did not come up" >&2
	exit 1
}
to0=$(sof_counter a counters.timeouts)
to1=$(sof_counter b counters.timeouts)
port=21000 failed=0 total=0 tmax=()
read -r -a SENV <<<"${SENDLAT_ENV:-}"
for t in $(seq "$TRIALS"); do
	for p in $(seq "$PAIRS"); do
		sof_host_bg "s$p" a 60 env "${SENV[@]}" taskset -c 0 "$SOFTOFED" run -- ib_send_lat -d sof0 -x 0 -s 8 \
			-n "$ITERS" -p $((port + p))
	done
	for p in $(seq "$PAIRS"); do
		sof_host_wait_listen a $((port + p)) 10 >/dev/null 2>&1
	done
	for p in $(seq "$PAIRS"); do
		sof_host_bg "c$p" b 45 env "${SENV[@]}" taskset -c 1 "$SOFTOFED" run -- ib_send_lat -d sof0 -x 0 -s 8 \
			-n "$ITERS" -p $((port + p)) "$(sof_host_ip a)"
	done
	for p in $(seq "$PAIRS"); do
		sof_wait "c$p" 50
		rc=$?
		sof_wait "s$p" 15
		src=$?
		total=$((total + 1))
		line=$(grep -E '^ 8 ' "$(sof_out "c$p")" | tr -s ' ')
		if [ "$rc" != 0 ] || [ "$src" != 0 ] || [ -z "$line" ]; then
			failed=$((failed + 1))
			echo "# trial $t pair $p: client $rc server $src: $(head -n 2 "$(sof_out "c$p")" | tr -s ' \n' ' ')" >&2
			if [ -n "${SENDLAT_KEEP:-}" ]; then
				k="$SENDLAT_KEEP/$(date -u +%H%M%S).$t.$p"
				mkdir -p "$SENDLAT_KEEP"
				cp "$(sof_out "c$p")" "$k.cli"
				cp "$(sof_out "s$p")" "$k.srv"
				for h in a b; do cp "$(_sof_host_log "$h")" "$k.log$h" 2>/dev/null; done
			fi
		else
			# " 8 ITERS t_min t_max ...": t_max in µs
			tmax+=("$(echo "$line" | awk '{printf "%.1f", $4 / 1000}')")
		fi
	done
	port=$((port + PAIRS))
done
echo "failed $failed"
echo "pairs $total"
echo "tmax_ms $(printf '%s\n' "${tmax[@]:-}" | grep . | sort -g | awk '{a[NR]=$1} END {print (NR ? a[int((NR + 1) / 2)] : "-")}')"
t0=$(sof_counter_since a counters.timeouts "$to0") t1=$(sof_counter_since b counters.timeouts "$to1")
echo "timeouts $((${t0:-0} + ${t1:-0}))"
if [ -n "${SENDLAT_KEEP:-}" ]; then
	mkdir -p "$SENDLAT_KEEP"
	for h in a b; do
		{
			sof_counters "$h"
			sof_host_run "$h" nstat -az 'Udp*'
		} >"$SENDLAT_KEEP/$(date -u +%H%M%S).counters.$h" 2>&1
	done
fi
sof_cleanup 2>/dev/null
sof_hosts_down
