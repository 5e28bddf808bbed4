# shellcheck shell=bash
# bench/ab_lib.sh — the driver half of the A/B scripts (fabric_bw_ab.sh,
# ud_ab.sh, ud_roce_ab.sh, onesided_ab.sh; sm_ab.sh takes its median and
# ratio), sourced by them: each script
# runs itself once per round and build, with ROUNDVAR=1 set, and its round
# prints "KEY VALUE" lines; the driver keeps them and makes the table.
#
#   ab_rounds NAME ROUNDVAR  BENCH_REPS rounds (default 3), each the base
#                    build (BENCH_BASE, required) then the new one
#                    (BENCH_BUILD, default build/); sets A, B, REPS and T
#                    (a temporary directory: T/A.ROUND, T/B.ROUND); each
#                    round's lines and its "#" notes on stderr
#   ab_head          the table's header (measure, base, new, new / base)
#   ab_rows K:LABEL...  one row per KEY: the medians and their ratio
#   ab_end           (the table on stdin) shows it, appends it to BENCH_OUT
#                    when set, removes T (the driver exits after it)
#   val SIDE ROUND KEY  one round's figure; col SIDE KEY  the median over
#                    the rounds; ratio A B  A / B to two places ("-": none)

ab_rounds() {
	local r side dir
	A=${BENCH_BASE:?BENCH_BASE=DIR: the base build}
	B=${BENCH_BUILD:-build}
	REPS=${BENCH_REPS:-3}
	T=$(mktemp -d "/tmp/$1.XXXXXX")
	for r in $(seq 1 "$REPS"); do
		for side in A B; do
			dir=$A
			[ "$side" = B ] && dir=$B
			env "$2=1" BENCH_BUILD="$dir" "$0" >"$T/$side.$r" 2>"$T/$side.$r.err"
			echo "# round $r $side ($dir): $(tr '\n' ' ' <"$T/$side.$r")" >&2
			grep '^#' "$T/$side.$r.err" >&2
		done
	done
}

median() { sort -g | awk '{a[NR]=$1} END {print (NR ? a[int((NR + 1) / 2)] : "-")}'; }
val() { awk -v k="$3" '$1 == k && $2 != "-" {print $2}' "$T/$1.$2" 2>/dev/null; }
col() { cat "$T/$1".[0-9]* 2>/dev/null | awk -v k="$2" '$1 == k && $2 != "-" {print $2}' | median; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b == 0) print "-"; else printf "%.2f", a / b }'; }

ab_head() {
	echo "| measure | base | new | new / base |"
	echo "|---|---|---|---|"
}

ab_rows() {
	local m k a b
	for m in "$@"; do
		k=${m%%:*}
		a=$(col A "$k") b=$(col B "$k")
		echo "| ${m#*:} | $a | $b | $(ratio "$b" "$a") |"
	done
}

ab_end() {
	tee -a "${BENCH_OUT:-/dev/null}"
	rm -rf "$T"
}
