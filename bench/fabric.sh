#!/bin/bash
# bench/fabric.sh — issue 19: how fast the software InfiniBand fabric
# (fabric/, softofed-fabric) answers a whole-fabric discovery, beside ibsim
# (Debian's ibsim-utils) on the same topology file.
#
# For ft128, ft648 and ft1152 (tests/topologies), BENCH_REPS rounds
# each (default 3), the median:
#   - ours: `softofed fabric up FILE` (parse and build), then a
#     directed-route walk of every node and port from the first HCA by
#     tests/progs/fabric_walk (NodeInfo, NodeDescription, PortInfo of every
#     switch port; one SMP outstanding at a time) — time, SMPs, µs per SMP;
#   - ibsim: `ibsim -s FILE` until an `ibnetdiscover` through libumad2sim
#     gets through (less one discovery's time: "ready"), then
#     `ibnetdiscover` timed alone (its own discovery: NodeInfo,
#     NodeDescription, PortInfo, SwitchInfo; the same topology, another
#     client).
#   - OpenSM (Debian's, through libumad2sim) from start to SUBNET UP by its
#     own log clock, on our fabric (`--ibsim`) and on ibsim, the issue's
#     ratio (target: ours <= 1x ibsim's).
#
# Usage: bench/fabric.sh  (BENCH_BUILD=DIR the build, default build/;
#        BENCH_OUT=FILE also appends the table there). Runs in a network
#        namespace of its own (unshare -n).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BENCH_BUILD:-${SOF_BUILD:-$ROOT/build}}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
REPS=${BENCH_REPS:-3}
TOPO=${SOF_TOPOLOGIES:-$ROOT/tests/topologies}
UMAD2SIM=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so

if [ "${1:-}" != --inner ]; then
	exec unshare -rn "$0" --inner
fi
ip link set lo up
ADDR=127.0.0.1:17481
TMP=$(mktemp -d /tmp/bench-fabric.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

ms() { echo $(($(date +%s%N) / 1000000)); }
median() { sort -n | awk '{a[NR]=$1} END {print (NR ? a[int((NR + 1) / 2)] : "-")}'; }

rows=()
for t in ft128 ft648 ft1152; do
	file=$TOPO/$t.net
	[ -f "$file" ] || { echo "# $file missing" >&2; continue; }
	: >"$TMP/up" && : >"$TMP/walk" && : >"$TMP/smps" && : >"$TMP/sim_up" && : >"$TMP/sim_disc"
	nodes=- simnodes=-
	for _ in $(seq 1 "$REPS"); do
		t0=$(ms)
		timeout 60 "$BUILD/bin/softofed" fabric up "$file" --listen "$ADDR" --real H0_0 \
			>/dev/null 2>&1 || { echo "# fabric up $t failed" >&2; break; }
		t1=$(ms)
		if timeout 120 "$BUILD/tests/fabric_walk" "$ADDR" H0_0 walk >"$TMP/out" 2>"$TMP/err"; then
			t2=$(ms)
			echo $((t1 - t0)) >>"$TMP/up"
			echo $((t2 - t1)) >>"$TMP/walk"
			sed -n 's/.* \([0-9]*\) SMPs.*/\1/p' "$TMP/err" >>"$TMP/smps"
			nodes=$(grep -c '^node' "$TMP/out")
		fi
		timeout 30 "$BUILD/bin/softofed" fabric down >/dev/null 2>&1
		# ibsim: its console reads a FIFO we hold open; ready when
		# ibnetdiscover first gets through, then timed on its own
		rm -f "$TMP/in" && mkfifo "$TMP/in"
		t0=$(ms)
		timeout 300 ibsim -s "$file" <"$TMP/in" >"$TMP/sim" 2>&1 &
		sim=$!
		exec 7>"$TMP/in"
		for _ in $(seq 1 600); do
			LD_PRELOAD=$UMAD2SIM timeout 60 ibnetdiscover >/dev/null 2>&1 && break
			sleep 0.05
		done
		t1=$(ms)
		if LD_PRELOAD=$UMAD2SIM timeout 120 ibnetdiscover >"$TMP/disc" 2>/dev/null; then
			t2=$(ms)
			echo $((t1 - t0 - (t2 - t1))) >>"$TMP/sim_up"
			echo $((t2 - t1)) >>"$TMP/sim_disc"
			simnodes=$(grep -c '^\(Switch\|Ca\)' "$TMP/disc")
		fi
		exec 7>&-
		kill "$sim" 2>/dev/null
		wait "$sim" 2>/dev/null
	done
	up=$(median <"$TMP/up") walk=$(median <"$TMP/walk") smps=$(median <"$TMP/smps")
	per=-
	[ "$smps" != - ] && [ "$smps" -gt 0 ] && per=$((walk * 1000 / smps))
	rows+=("| $t | $nodes | $up | $walk | $smps | $per | $simnodes | $(median <"$TMP/sim_up") | $(median <"$TMP/sim_disc") |")
done

# OpenSM (Debian's, through libumad2sim) from start to SUBNET UP, on our
# fabric (--ibsim) and on ibsim, same topology and options; ms from its
# first log line to SUBNET UP by its own clock
osm_ms() { python3 "$ROOT/bench/osm_start_ms.py" "$1"; }
osm_run() { # KIND FILE: prints ms or nothing
	local kind=$1 file=$2 srv osm
	rm -rf "$TMP/osm" && mkdir -p "$TMP/osm" && cd "$TMP/osm" || return
	if [ "$kind" = ours ]; then
		timeout 300 "$BUILD/bin/softofed-fabric" "$file" --ibsim --listen "$ADDR" &
	else
		rm -f "$TMP/in" && mkfifo "$TMP/in"
		timeout 300 ibsim -s "$file" <"$TMP/in" >/dev/null 2>&1 &
		exec 7>"$TMP/in"
	fi
	srv=$!
	sleep 0.5
	OSM_CACHE_DIR=$TMP/osm OSM_TMP_DIR=$TMP/osm LD_PRELOAD=$UMAD2SIM \
		timeout -s KILL 200 opensm -d 2 -f "$TMP/osm/log" >/dev/null 2>&1 &
	osm=$!
	for _ in $(seq 1 1800); do
		grep -q 'SUBNET UP' "$TMP/osm/log" 2>/dev/null && break
		sleep 0.1
	done
	osm_ms "$TMP/osm/log"
	kill "$osm" 2>/dev/null
	wait "$osm" 2>/dev/null
	[ "$kind" = ours ] || exec 7>&-
	kill "$srv" 2>/dev/null
	wait "$srv" 2>/dev/null
	cd "$ROOT" || return
}
osm_rows=()
for t in ft128 ft648 ft1152; do
	file=$TOPO/$t.net
	[ -f "$file" ] || continue
	: >"$TMP/o_ours" && : >"$TMP/o_sim"
	for _ in $(seq 1 "$REPS"); do
		osm_run ours "$file" >>"$TMP/o_ours"
		osm_run ibsim "$file" >>"$TMP/o_sim"
	done
	o=$(median <"$TMP/o_ours") i=$(median <"$TMP/o_sim")
	r=-
	[ "$o" != - ] && [ "$i" != - ] && [ "$i" -gt 0 ] && r=$(awk -v a="$o" -v b="$i" 'BEGIN {printf "%.2f", a / b}')
	osm_rows+=("| $t | $o | $i | $r |")
done

{
	echo "### OpenSM start to SUBNET UP (issue 19; ratio target <= 1), median of $REPS"
	echo
	echo "| topology | ours ms (--ibsim) | ibsim ms | ours / ibsim |"
	echo "|---|---|---|---|"
	printf '%s\n' "${osm_rows[@]}"
	echo
	echo "### Fabric discovery (issue 19), median of $REPS"
	echo
	echo "| topology | nodes (ours) | fabric up ms | DR walk ms | SMPs | µs/SMP | nodes (ibsim) | ibsim ready ms | ibnetdiscover on ibsim ms |"
	echo "|---|---|---|---|---|---|---|---|---|"
	printf '%s\n' "${rows[@]}"
} | tee -a "${BENCH_OUT:-/dev/null}"
