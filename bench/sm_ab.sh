#!/bin/bash
# bench/sm_ab.sh — issue 19's OpenSM row as an A/B: OpenSM's start to
# SUBNET UP (its log from the first line to "SUBNET UP", as bench/sm.sh
# reads it) on a base build's fabric (BENCH_BASE), on this build's
# (BENCH_BUILD) and on ibsim, each fresh (`softofed-fabric FILE --ibsim`,
# `ibsim -s FILE`) with Debian's libumad2sim, in alternating rounds (the
# order flips each round), and what each start cost beside its time:
#
#   ms      start to SUBNET UP
#   simcpu  the simulator's CPU over OpenSM's run (schedstat), ms
#   simvol  the simulator's voluntary context switches (its wake-ups)
#   siminv  its involuntary ones (preempted, or its yields)
#   osmvol  OpenSM's voluntary context switches, all its threads
#   osmcpu  OpenSM's CPU from its start, all its threads, ms
#
# The counts move less than the time on a loaded machine, where the time
# of one start spreads 2-3x. Two stand-ins for a quiet machine:
# BENCH_SM_RT=1 runs every process of a start SCHED_FIFO 20 (root; the
# network namespace is then not in a user namespace; our fabric is put back
# to SCHED_FIFO after its start, which leaves it SCHED_OTHER with its short
# slice), so that the other programs on the machine wait for it;
# BENCH_SM_CPU=N keeps every process of a start (simulator, OpenSM) on CPU
# N (taskset), so that the hand-offs between OpenSM's threads and the
# simulator never cross CPUs (on this 2-core VM OpenSM's start on ft648
# took 224 ms on our fabric against 535 without, 240 against 518 on
# ibsim, both SCHED_FIFO: most of a start is such hand-offs).
#
# Usage: BENCH_BASE=DIR bench/sm_ab.sh  (BENCH_BUILD=DIR the new build,
#        default build/; BENCH_REPS rounds, default 5; BENCH_SM_TOPOS,
#        default "ft128 ft648 ft1152" (names in tests/topologies or
#        paths); BENCH_SM_BASE_ARGS / BENCH_SM_FABRIC_ARGS more options
#        of the base's / the new fabric; BENCH_SM_IBSIM=0 leaves ibsim
#        out; BENCH_OUT=FILE also appends the tables there).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
A=${BENCH_BASE:?BENCH_BASE=DIR: the base build}
B=${BENCH_BUILD:-$ROOT/build}
case $A in /*) ;; *) A=$ROOT/$A ;; esac
case $B in /*) ;; *) B=$ROOT/$B ;; esac
REPS=${BENCH_REPS:-5}
TOPO=${SOF_TOPOLOGIES:-$ROOT/tests/topologies}
TOPOS=${BENCH_SM_TOPOS:-ft128 ft648 ft1152}
UMAD2SIM=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so

if [ "${1:-}" != --inner ]; then
	if [ "${BENCH_SM_RT:-0}" = 1 ]; then
		exec unshare -n "$0" --inner
	fi
	exec unshare -rn "$0" --inner
fi
ip link set lo up
TMP=$(mktemp -d /tmp/bench-sm-ab.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
# how every process of a start is run: SCHED_FIFO, one CPU
PRE=()
[ "${BENCH_SM_RT:-0}" = 1 ] && PRE+=(chrt -f 20)
[ -n "${BENCH_SM_CPU:-}" ] && PRE+=(taskset -c "$BENCH_SM_CPU")

# median, ratio
# shellcheck source=bench/ab_lib.sh
. "$ROOT/bench/ab_lib.sh"

osm_ms() { python3 "$ROOT/bench/osm_start_ms.py" "$1"; }

# the process `timeout` runs (PID: timeout's)
child() { awk '{print $1}' "/proc/$1/task/$1/children" 2>/dev/null; }
# a process's CPU (ms) and voluntary / involuntary context switches,
# over all its threads
cpu_ms() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {printf "%d", s / 1e6}'; }
csw() { cat /proc/"$1"/task/*/status 2>/dev/null | awk '/^voluntary_ctxt/ {v += $2} /^nonvoluntary_ctxt/ {n += $2} END {print v + 0, n + 0}'; }

# start SIDE FILE: one OpenSM start on SIDE (A, B: our fabric of that
# build; I: ibsim); appends "ms simcpu simvol siminv osmvol osmcpu" to
# TMP/SIDE.TOPO, or nothing when it did not come up
start() {
	local side=$1 file=$2 t=$3 srv sim osm pid args ms c0 c1 s0 s1 o oc
	rm -rf "$TMP/w" && mkdir -p "$TMP/w" && cd "$TMP/w" || return
	if [ "$side" = I ]; then
		mkfifo in
		exec 7<>in
		timeout 300 "${PRE[@]}" ibsim -N 20000 -S 2000 -P 100000 -L 49152 -s "$file" <in >/dev/null 2>&1 &
	else
		args=${BENCH_SM_FABRIC_ARGS:-}
		[ "$side" = A ] && args=${BENCH_SM_BASE_ARGS:-}
		dir=$B
		[ "$side" = A ] && dir=$A
		# shellcheck disable=SC2086 # options
		timeout 300 "${PRE[@]}" "$dir/bin/softofed-fabric" "$file" --ibsim $args >/dev/null 2>&1 &
	fi
	srv=$!
	for _ in $(seq 1 1200); do
		grep -q '@sim:ctl' /proc/net/unix 2>/dev/null && break
		sleep 0.05
	done
	sleep 0.1
	sim=$(child "$srv")
	[ "${BENCH_SM_RT:-0}" = 1 ] && [ -n "$sim" ] && chrt -f -p 20 "$sim"
	c0=$(cpu_ms "$sim") s0=$(csw "$sim") # idle until OpenSM comes
	OSM_CACHE_DIR=$TMP/w OSM_TMP_DIR=$TMP/w LD_PRELOAD=$UMAD2SIM \
		timeout -s KILL 120 "${PRE[@]}" opensm -d 2 -f "$TMP/w/log" >/dev/null 2>&1 &
	osm=$!
	for _ in $(seq 1 2000); do
		grep -q 'SUBNET UP' "$TMP/w/log" 2>/dev/null && break
		kill -0 "$osm" 2>/dev/null || break
		sleep 0.05
	done
	pid=$(child "$osm")
	c1=$(cpu_ms "$sim") s1=$(csw "$sim") o=$(csw "$pid") oc=$(cpu_ms "$pid")
	ms=$(osm_ms "$TMP/w/log")
	kill "$osm" 2>/dev/null
	wait "$osm" 2>/dev/null
	[ "$side" = I ] && exec 7>&-
	kill "$srv" 2>/dev/null
	wait "$srv" 2>/dev/null
	cd "$ROOT" || return
	[ -n "$ms" ] || {
		echo "# $t $side: no SUBNET UP" >&2
		return
	}
	read -r v0 n0 <<<"$s0"
	read -r v1 n1 <<<"$s1"
	echo "$ms $((c1 - c0)) $((v1 - v0)) $((n1 - n0)) ${o% *} $oc" >>"$TMP/$side.$t"
}

sides="A B"
[ "${BENCH_SM_IBSIM:-1}" = 0 ] || sides="A B I"
for tt in $TOPOS; do
	case $tt in
	*/*) file=$tt t=$(basename "$tt" .net) ;;
	*) file=$TOPO/$tt.net t=$tt ;;
	esac
	[ -f "$file" ] || {
		echo "# $file missing" >&2
		continue
	}
	for r in $(seq 1 "$REPS"); do
		order=$sides
		[ $((r % 2)) = 0 ] && order=$(echo "$sides" | awk '{for (i = NF; i; i--) printf "%s%s", $i, (i > 1 ? " " : "")}')
		for s in $order; do
			start "$s" "$file" "$t"
		done
	done
done

# field FILE K: the median of column K of $TMP/FILE (a line per start)
field() { awk -v k="$2" '{print $k}' "$TMP/$1" 2>/dev/null | median; }
{
	mode="CFS"
	[ "${BENCH_SM_RT:-0}" = 1 ] && mode="SCHED_FIFO"
	[ -n "${BENCH_SM_CPU:-}" ] && mode="$mode, on CPU $BENCH_SM_CPU"
	echo "### OpenSM's start, base ($A) / new ($B) / ibsim: medians of $REPS, $mode, load $(cut -d' ' -f1-3 /proc/loadavg)"
	for tt in $TOPOS; do
		t=$(basename "$tt" .net)
		[ -s "$TMP/B.$t" ] || continue
		echo
		echo "| $t | base | new | ibsim | new / base | new / ibsim |"
		echo "|---|---|---|---|---|---|"
		k=1
		for m in "start to SUBNET UP, ms" "simulator CPU, ms" "simulator wake-ups" \
			"simulator preempted" "OpenSM wake-ups" "OpenSM CPU, ms"; do
			a=$(field "A.$t" $k) b=$(field "B.$t" $k) c=$(field "I.$t" $k)
			echo "| $m | $a | $b | $c | $(ratio "$b" "$a") | $(ratio "$b" "$c") |"
			k=$((k + 1))
		done
	done
} | tee -a "${BENCH_OUT:-/dev/null}"
