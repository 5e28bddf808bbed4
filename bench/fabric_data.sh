#!/bin/bash
# bench/fabric_data.sh — issue 19's data-path targets: perftest by LID on
# sofib0 through the software fabric beside RoCEv2 (sof0) on the same
# veths, in one run.
#
#   pair   tests/topologies/pair.net (hosts a, b under one switch), OpenSM
#          in a: ib_send_lat -s 2 a -> b by LID, then over RoCEv2 with the
#          program's engine and with SOFTOFED_ENGINE=daemon (typical µs,
#          target sofib0 <= 1.2x RoCE); every sofib0 test runs twice: its
#          QPs in the program's engine (the default), and in the daemon's
#          (SOFTOFED_ENGINE=daemon, as every sofib0 QP ran before);
#   line3  tests/topologies/line3.net (a under S1, c under S3): ib_send_lat
#          -s 2 (per-hop cost against pair) and ib_write_bw -s 1 MiB a -> c
#          by LID beside RoCEv2 a -> c (MB/s, target >= 0.8x RoCE).
# BENCH_REPS rounds (default 3), the median of each. The fabric runs with
# its direct paths (softofed-fabric --direct, fabric/direct.c: RC and UC
# straight between the hosts) unless SOF_IBF_DIRECT=0.
#
# Usage: bench/fabric_data.sh (root: ip netns; BENCH_BUILD=DIR the build,
#        default build/; BENCH_OUT=FILE also appends the table there).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export SOF_BUILD=${BENCH_BUILD:-${SOF_BUILD:-build}}
# shellcheck source=tests/lib.sh
. "$ROOT/tests/lib.sh"
# shellcheck source=tests/ib_fabric.sh
. "$ROOT/tests/ib_fabric.sh"
sof_init
export SOF_IBF_DIRECT=${SOF_IBF_DIRECT-1}
REPS=${BENCH_REPS:-3}
PORT=18900

median() { sort -n | awk '{a[NR]=$1} END {print (NR ? a[int((NR + 1) / 2)] : "-")}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b == 0) print "-"; else printf "%.2f", a / b }'; }

# run SRV CLI OUT ENV PROG ARGS...: the client's result line's column
# (t_typical of a latency test, BW average MB/s of a bandwidth test)
run() {
	local srv=$1 cli=$2 out=$3 env=$4 prog=$5 col
	shift 5
	PORT=$((PORT + 1))
	case $prog in *_lat) col=5 ;; *) col=4 ;; esac
	SOFTOFED_ENGINE=$env sof_host_pair "bench.$prog" "$srv" "$cli" "$PORT" 60 "$prog" "$@" >/dev/null 2>&1
	grep -E "$SOF_PERFTEST_RESULT" "$SOF_CLI_OUT" 2>/dev/null | tail -n 1 |
		awk -v c="$col" '{print $c}' | grep . >>"$out" || echo "# $prog $* failed" >&2
}

rows=()
# pair: one switch
sof_ibf_up pair H1,H2 2 >/dev/null || { echo "# pair fabric failed" >&2; exit 1; }
: >"$SOF_TMP/l_ib" && : >"$SOF_TMP/l_ibd" && : >"$SOF_TMP/l_roce" && : >"$SOF_TMP/l_rocd"
for _ in $(seq 1 "$REPS"); do
	run b a "$SOF_TMP/l_ib" "" ib_send_lat -d sofib0 -s 2 -n 2000
	run b a "$SOF_TMP/l_ibd" daemon ib_send_lat -d sofib0 -s 2 -n 2000
	run b a "$SOF_TMP/l_roce" "" ib_send_lat -d sof0 -x @GID@ -s 2 -n 2000
	run b a "$SOF_TMP/l_rocd" daemon ib_send_lat -d sof0 -x @GID@ -s 2 -n 2000
done
l1=$(median <"$SOF_TMP/l_ib") r1=$(median <"$SOF_TMP/l_roce") d1=$(median <"$SOF_TMP/l_rocd")
i1=$(median <"$SOF_TMP/l_ibd")
rows+=("| ib_send_lat 2 B, one switch (µs) | $l1 | $i1 | $r1 | $d1 | $(ratio "$l1" "$r1") |")
sof_kill ibf.sm
sof_kill ibf.fabric
sof_hosts_down >/dev/null 2>&1

# line3: three switches
sof_ibf_up line3 H1,H2,H3 3 >/dev/null || { echo "# line3 fabric failed" >&2; exit 1; }
: >"$SOF_TMP/l3_ib" && : >"$SOF_TMP/b_ib" && : >"$SOF_TMP/b_roce" && : >"$SOF_TMP/b_rocd"
: >"$SOF_TMP/l3_ibd" && : >"$SOF_TMP/b_ibd"
for _ in $(seq 1 "$REPS"); do
	run c a "$SOF_TMP/l3_ib" "" ib_send_lat -d sofib0 -s 2 -n 2000
	run c a "$SOF_TMP/l3_ibd" daemon ib_send_lat -d sofib0 -s 2 -n 2000
	run c a "$SOF_TMP/b_ib" "" ib_write_bw -d sofib0 -s 1048576 -n 200
	run c a "$SOF_TMP/b_ibd" daemon ib_write_bw -d sofib0 -s 1048576 -n 200
	run c a "$SOF_TMP/b_roce" "" ib_write_bw -d sof0 -x @GID@ -s 1048576 -n 200
	run c a "$SOF_TMP/b_rocd" daemon ib_write_bw -d sof0 -x @GID@ -s 1048576 -n 200
done
l3=$(median <"$SOF_TMP/l3_ib")
hop=-
[ "$l3" != - ] && [ "$l1" != - ] && hop=$(awk -v a="$l3" -v b="$l1" 'BEGIN {printf "%.2f", (a - b) / 2}')
b3=$(median <"$SOF_TMP/b_ib") r3=$(median <"$SOF_TMP/b_roce") d3=$(median <"$SOF_TMP/b_rocd")
i3=$(median <"$SOF_TMP/l3_ibd") j3=$(median <"$SOF_TMP/b_ibd")
rows+=("| ib_send_lat 2 B, three switches (µs; per added hop $hop) | $l3 | $i3 | - | - | - |")
rows+=("| ib_write_bw 1 MiB, three switches (MB/s) | $b3 | $j3 | $r3 | $d3 | $(ratio "$b3" "$r3") |")
sof_kill ibf.sm
sof_kill ibf.fabric

{
	echo "### InfiniBand data by LID through the fabric beside RoCEv2 (issue 19), median of $REPS (direct paths: ${SOF_IBF_DIRECT})"
	echo
	echo "| test | sofib0 (program's engine) | sofib0 (daemon's engine) | sof0 (program's engine) | sof0 (daemon's engine) | sofib0 / sof0 |"
	echo "|---|---|---|---|---|---|"
	printf '%s\n' "${rows[@]}"
} | tee -a "${BENCH_OUT:-/dev/null}"
sof_exit >/dev/null 2>&1
