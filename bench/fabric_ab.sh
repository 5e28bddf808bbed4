#!/bin/bash
# bench/fabric_ab.sh — issue 19's data figures as an A/B of two builds: a
# base build (BENCH_BASE) against this one (BENCH_BUILD) in alternating
# rounds (the order of the two flips each round), each side on fresh
# hosts a, b, c of tests/topologies/hops13.net (a and b under S1, c three
# switches from a) with OpenSM, the programs' engines (the default):
#
#   lat1   ib_send_lat -s 2 a -> b by LID, one switch (typical µs)
#   lat3   ib_send_lat -s 2 a -> c by LID, three switches (typical µs)
#   bw3    ib_write_bw -s 1 MiB a -> c by LID, three switches (MB/s)
#   roce1  ib_send_lat -s 2 a -> b over RoCEv2 (sof0), same veths
#   rbw    ib_write_bw -s 1 MiB a -> c over RoCEv2
#   csw    the fabric's context switches (voluntary: its wake-ups) per
#          packet it took from the hosts during lat1
#   wait   the fabric's time runnable but not running (schedstat's
#          run_delay: from a wake-up until it has a CPU) per wake-up
#          during lat1, µs
#   idle   the fabric's CPU (utime + stime, % of a CPU) over 5 s with no
#          traffic: OpenSM stopped, only the links' HELLOs
#   load   the load average (1 min) at the side's start
#
# and the ratios sofib0 / sof0 (issue 19's targets: lat1 <= 1.2x roce1,
# bw3 >= 0.8x rbw), the added latency per switch hop ((lat3 - lat1) / 2).
#
# Usage: BENCH_BASE=DIR bench/fabric_ab.sh (root: ip netns; BENCH_BUILD=DIR
#        the new build, default build/; BENCH_REPS rounds, default 5;
#        BENCH_OUT=FILE also appends the table there).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)

if [ -z "${FAB_AB_ROUND:-}" ]; then
	A=${BENCH_BASE:?BENCH_BASE=DIR: the base build}
	B=${BENCH_BUILD:-build}
	REPS=${BENCH_REPS:-5}
	T=$(mktemp -d /tmp/fab_ab.XXXXXX)
	for r in $(seq 1 "$REPS"); do
		order="A B"
		[ $((r % 2)) = 0 ] && order="B A"
		for side in $order; do
			dir=$A
			[ "$side" = B ] && dir=$B
			FAB_AB_ROUND=1 BENCH_BUILD=$dir "$0" >"$T/$side.$r" 2>"$T/$side.$r.err"
			echo "# round $r $side ($dir): $(tr '\n' ' ' <"$T/$side.$r")" >&2
		done
	done
	median() { sort -n | awk '{a[NR]=$1} END {print (NR ? a[int((NR + 1) / 2)] : "-")}'; }
	col() { cat "$T/$1".[0-9]* 2>/dev/null | awk -v k="$2" '$1 == k && $2 != "-" {print $2}' | median; }
	ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b == 0) print "-"; else printf "%.2f", a / b }'; }
	# rr SIDE K1 K2: the median of the rounds' K1 / K2; hops SIDE: of (lat3 - lat1) / 2
	rr() {
		for f in "$T/$1".[0-9]*; do
			awk -v x="$2" -v y="$3" '$1 == x {a = $2} $1 == y {b = $2}
				END { if (a != "" && b != "" && a != "-" && b != "-" && b > 0) printf "%.3f\n", a / b }' "$f"
		done | median
	}
	hops() {
		for f in "$T/$1".[0-9]*; do
			awk '$1 == "lat1" {a = $2} $1 == "lat3" {b = $2}
				END { if (a != "" && b != "" && a != "-" && b != "-") printf "%.2f\n", (b - a) / 2 }' "$f"
		done | median
	}
	{
		echo "### issue 19's data figures: base ($A) vs new ($B), median of $REPS alternating rounds"
		echo
		echo "| measure | base | new | new / base |"
		echo "|---|---|---|---|"
		for m in "lat1:ib_send_lat 2 B by LID, one switch (µs)" \
			"lat3:ib_send_lat 2 B by LID, three switches (µs)" \
			"bw3:ib_write_bw 1 MiB by LID, three switches (MB/s)" \
			"roce1:ib_send_lat 2 B over RoCEv2, same veths (µs)" \
			"rbw:ib_write_bw 1 MiB over RoCEv2, a -> c (MB/s)" \
			"csw:fabric wake-ups per packet from the hosts (during lat1)" \
			"wait:fabric wait for a CPU per wake-up (during lat1, µs)" \
			"idle:fabric CPU with no traffic, 5 s (% of a CPU)" \
			"load:load average (1 min) at the side's start"; do
			k=${m%%:*}
			va=$(col A "$k") vb=$(col B "$k")
			echo "| ${m#*:} | $va | $vb | $(ratio "$vb" "$va") |"
		done
		echo
		echo "| build | latency sofib0 / sof0 (target <= 1.2) | bandwidth sofib0 / sof0 (target >= 0.8) | per added switch hop (µs) |"
		echo "|---|---|---|---|"
		for s in A B; do
			echo "| $s | $(rr "$s" lat1 roce1) | $(rr "$s" bw3 rbw) | $(hops "$s") |"
		done
		echo
		echo "(A: base, B: new; each ratio the median of the rounds' own ratios, so that a round's RoCEv2 figure goes with that round's fabric figure.)"
	} | tee -a "${BENCH_OUT:-/dev/null}"
	rm -rf "$T"
	exit 0
fi

# ---- one side of a round, with build $BENCH_BUILD ----------------------------------
export SOF_BUILD=$BENCH_BUILD
# shellcheck source=tests/lib.sh
. "$ROOT/tests/lib.sh"
# shellcheck source=tests/ib_fabric.sh
. "$ROOT/tests/ib_fabric.sh"
sof_init
PORT=18980
echo "load $(cut -d' ' -f1 /proc/loadavg)"
sof_ibf_up hops13 H1,H2,H3 3 >/dev/null 2>&1 || {
	echo "# fabric failed" >&2
	sof_exit >/dev/null 2>&1
	exit 1
}
fpid=$(sof_host_run a "$SOFTOFED" fabric status 2>/dev/null </dev/null | sed -n 's/.* pid \([0-9]*\),.*/\1/p')
# fig KEY SRV CLI PROG ARGS...: the client's result column as "KEY value"
fig() {
	local key=$1 server=$2 client=$3 prog=$4 col=5
	shift 4
	[ "$prog" = ib_write_bw ] && col=4
	PORT=$((PORT + 1))
	sof_host_pair "bench.$key" "$server" "$client" "$PORT" 60 "$prog" "$@" >/dev/null 2>&1
	echo "$key $(grep -E "$SOF_PERFTEST_RESULT" "$SOF_CLI_OUT" 2>/dev/null | tail -n 1 |
		awk -v c="$col" '{print $c}' | grep . || echo -)"
}
# the fabric's voluntary context switches and its from_hosts counter
vcs() { awk '/^voluntary_ctxt_switches/ {print $2}' "/proc/$fpid/status" 2>/dev/null || echo 0; }
fromh() { sof_host_run a "$SOFTOFED" fabric status 2>/dev/null </dev/null | sed -n 's/.* from_hosts \([0-9]*\) .*/\1/p'; }
delay() { awk '{print $2}' "/proc/$fpid/schedstat" 2>/dev/null || echo 0; }
c0=$(vcs) p0=$(fromh) w0=$(delay)
fig lat1 b a ib_send_lat -d sofib0 -s 2 -n 2000
c1=$(vcs) p1=$(fromh) w1=$(delay)
echo "csw $(awk -v c=$((c1 - c0)) -v p=$((${p1:-0} - ${p0:-0})) 'BEGIN { if (p > 0) printf "%.3f", c / p; else print "-" }')"
echo "wait $(awk -v w=$((w1 - w0)) -v c=$((c1 - c0)) 'BEGIN { if (c > 0) printf "%.2f", w / c / 1000; else print "-" }')"
fig lat3 c a ib_send_lat -d sofib0 -s 2 -n 2000
fig bw3 c a ib_write_bw -d sofib0 -s 1048576 -n 200
fig roce1 b a ib_send_lat -d sof0 -x @GID@ -s 2 -n 2000
fig rbw c a ib_write_bw -d sof0 -x @GID@ -s 1048576 -n 200
sof_kill ibf.sm
sleep 2
ticks() { awk '{print $14 + $15}' "/proc/$fpid/stat" 2>/dev/null || echo 0; }
t0=$(ticks)
sleep 5
t1=$(ticks)
echo "idle $(awk -v d=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f", d * 100 / hz / 5 }')"
sof_kill ibf.fabric
sof_exit >/dev/null 2>&1
