#!/bin/bash
# bench/fabric_bw_ab.sh — ib_write_bw -s 1 MiB by LID through three
# switches (bench/fabric_data.sh's line3 figure) as an A/B of two builds:
# a base build (BENCH_BASE) against this one (BENCH_BUILD) in alternating
# rounds (base, new, base, new ...), each round on fresh line3.net hosts
# with OpenSM (tests/ib_fabric.sh sof_ibf_up), c -> a with the program's
# engine; the load average at the start of each round; the medians.
#
# Usage: BENCH_BASE=DIR bench/fabric_bw_ab.sh (root: ip netns;
#        BENCH_BUILD=DIR the new build, default build/; BENCH_REPS rounds
#        of each, default 3; BENCH_OUT=FILE also appends the table there).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)

if [ -z "${BW_AB_ROUND:-}" ]; then
	# shellcheck source=bench/ab_lib.sh
	. "$ROOT/bench/ab_lib.sh"
	ab_rounds bw_ab BW_AB_ROUND
	{
		echo "### ib_write_bw 1 MiB through three switches: base ($A) vs new ($B), median of $REPS alternating rounds"
		echo
		ab_head
		ab_rows "bw:ib_write_bw -s 1048576 -n 200 c -> a by LID (BW average MB/s)" \
			"load:load average (1 min) at round start"
	} | ab_end
	exit 0
fi

# ---- one round, with build $BENCH_BUILD ------------------------------------------
export SOF_BUILD=$BENCH_BUILD
# shellcheck source=tests/lib.sh
. "$ROOT/tests/lib.sh"
# shellcheck source=tests/ib_fabric.sh
. "$ROOT/tests/ib_fabric.sh"
sof_init
echo "load $(cut -d' ' -f1 /proc/loadavg)"
sof_ibf_up line3 H1,H2,H3 3 >/dev/null 2>&1 || {
	echo "# fabric failed" >&2
	sof_exit >/dev/null 2>&1
	exit 1
}
sof_host_pair bench.bw c a 18960 60 ib_write_bw -d sofib0 -s 1048576 -n 200 >/dev/null 2>&1
echo "bw $(grep -E "$SOF_PERFTEST_RESULT" "$SOF_CLI_OUT" 2>/dev/null | tail -n 1 | awk '{print $4}' | grep . || echo -)"
sof_kill ibf.sm
sof_kill ibf.fabric
sof_exit >/dev/null 2>&1
