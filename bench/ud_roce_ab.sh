#!/bin/bash
# bench/ud_roce_ab.sh — sof0's (RoCEv2) UD QPs in the program's engine
# (issues 17/18): a base build against this one, in alternating rounds
# (base, new, base, new ...) on the same machine, each round on fresh
# hosts (two network namespaces over veth, a daemon in each).
#
# A round: ib_send_lat -c UD -s 2 -n 2000 (t_typical and t_avg, µs, one
# way as perftest reports them) and ibv_ud_pingpong -s 8 -n 1000 (µs per
# iteration, a round trip), each between hosts b -> a and on one host (a
# -> a); for reference ib_send_lat (RC, in the programs in both builds)
# 2 B between the hosts; the daemons' context switches (voluntary + involuntary, both
# hosts, from /proc/PID/status) over the between-hosts runs. The load
# average is taken at the start of each round.
#
# Usage: BENCH_BASE=DIR bench/ud_roce_ab.sh (root: ip netns; BENCH_BUILD=DIR
#        the new build, default build/; BENCH_REPS rounds of each, default
#        3; BENCH_OUT=FILE also appends the table there).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)

if [ -z "${UD_AB_ROUND:-}" ]; then
	# shellcheck source=bench/ab_lib.sh
	. "$ROOT/bench/ab_lib.sh"
	ab_rounds ud_roce_ab UD_AB_ROUND
	{
		echo "### sof0 UD: base ($A) vs new ($B), median of $REPS alternating rounds"
		echo
		ab_head
		ab_rows "lat2:ib_send_lat -c UD 2 B, hosts b -> a (t_typical µs)" \
			"lat2avg:ib_send_lat -c UD 2 B, hosts b -> a (t_avg µs)" \
			"pp2:ibv_ud_pingpong 8 B, hosts b -> a (µs/iter)" \
			"csw:daemons' context switches over those two runs" \
			"rc2:reference: ib_send_lat RC 2 B, hosts b -> a (t_typical µs)" \
			"lat1:ib_send_lat -c UD 2 B, one host (t_typical µs)" \
			"lat1avg:ib_send_lat -c UD 2 B, one host (t_avg µs)" \
			"pp1:ibv_ud_pingpong 8 B, one host (µs/iter)" \
			"load:load average (1 min) at round start"
	} | ab_end
	exit 0
fi

# ---- one round, with build $BENCH_BUILD ------------------------------------------
export SOF_BUILD=$BENCH_BUILD
# shellcheck source=tests/lib.sh
. "$ROOT/tests/lib.sh"
sof_init
echo "load $(cut -d' ' -f1 /proc/loadavg)"
if ! sof_hosts_up 2 >/dev/null 2>&1; then
	echo "# hosts failed" >&2
	sof_exit >/dev/null 2>&1
	exit 1
fi

# csw: the context switches of both hosts' daemons so far
csw() {
	local h n=0 v
	for h in a b; do
		v=$(awk '/ctxt_switches/ {s += $2} END {print s + 0}' \
			"/proc/${SOF_HOST_DPID[$h]:-0}/status" 2>/dev/null)
		n=$((n + ${v:-0}))
	done
	echo "$n"
}

# lat KEY SRV CLI [CONN]: ib_send_lat -c CONN (default UD), t_typical and t_avg
lat() {
	sof_host_pair "bench.$1" "$2" "$3" 18960 60 ib_send_lat -c "${4:-UD}" -d sof0 -x @GID@ \
		-s 2 -n 2000 >/dev/null 2>&1
	grep -E "$SOF_PERFTEST_RESULT" "$SOF_CLI_OUT" 2>/dev/null | tail -n 1 |
		awk -v k="$1" '{print k, $5; print k "avg", $6} END {if (!NR) {print k, "-"; print k "avg", "-"}}'
}

# pp KEY SRV CLI: ibv_ud_pingpong, µs per iteration (the client's)
pp() {
	sof_host_pair "bench.$1" "$2" "$3" 18961 60 ibv_ud_pingpong -g @GID@ -s 8 -n 1000 \
		>/dev/null 2>&1
	echo "$1 $(sed -n 's/.* = \([0-9.]*\) usec\/iter.*/\1/p' "$SOF_CLI_OUT" 2>/dev/null |
		tail -n 1 | grep . || echo -)"
}

c0=$(csw)
lat lat2 a b
pp pp2 a b
echo "csw $(($(csw) - c0))"
lat rc2 a b RC | head -n 1
SOF_PAIR_TARGET=$(sof_host_ip a) lat lat1 a a
SOF_PAIR_TARGET=$(sof_host_ip a) pp pp1 a a
sof_exit >/dev/null 2>&1
