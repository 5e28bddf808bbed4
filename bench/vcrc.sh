#!/bin/bash
# bench/vcrc.sh — the VCRC micro-benchmark (bench/vcrc.c) as an A/B: built
# against transport/ib_wire.c of BASE (a commit, default HEAD~1) and of
# this tree, run in alternating rounds (base, new, base, new ...); the
# medians of the per-round figures (ns per call at 4 KiB, 256 B, 64 B)
# and the load average at the start. SOFTOFED_NO_AVX512 / _NO_PCLMUL in
# the environment pick the narrower ways of the new build.
#
# Usage: bench/vcrc.sh [BASE] [ROUNDS]   (BENCH_OUT=FILE also appends)
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BASE=${1:-HEAD~1}
ROUNDS=${2:-5}
T=$(mktemp -d /tmp/vcrc_ab.XXXXXX)
trap 'rm -rf "$T"' EXIT
git -C "$ROOT" show "$BASE:transport/ib_wire.c" >"$T/ib_wire_base.c" || exit 1
cp "$ROOT/transport/ib_wire.c" "$T/ib_wire_new.c"
for side in base new; do
	cc -O2 -g -I"$ROOT/transport" -I"$ROOT/common" -I"$ROOT/include" -o "$T/vcrc_$side" \
		"$ROOT/bench/vcrc.c" "$T/ib_wire_$side.c" "$ROOT/transport/icrc.c" -lpthread || exit 1
done
load=$(cut -d' ' -f1 /proc/loadavg)
for _ in $(seq 1 "$ROUNDS"); do
	for side in base new; do
		"$T/vcrc_$side" | sed "s/^/$side /" >>"$T/all"
	done
done
median() { sort -n | awk '{a[NR]=$1} END {print (NR ? a[int((NR + 1) / 2)] : "-")}'; }
{
	echo "### VCRC ns per call, base $(git -C "$ROOT" rev-parse --short "$BASE") vs this tree, median of $ROUNDS alternating rounds (load $load at start, $(cut -d' ' -f1 /proc/loadavg) at end)"
	echo
	echo "| length | base | new | base / new |"
	echo "|---|---|---|---|"
	for len in 4096 256 64; do
		a=$(awk -v l="$len" '$1 == "base" && $3 == l {print $4}' "$T/all" | median)
		b=$(awk -v l="$len" '$1 == "new" && $3 == l {print $4}' "$T/all" | median)
		echo "| $len B | $a | $b | $(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.1f", a / b}') |"
	done
} | tee -a "${BENCH_OUT:-/dev/null}"
