#!/bin/bash
# ib_send_lat right after ib_send_bw between the same two hosts, on the
# daemons' engines (SOFTOFED_ENGINE=daemon in both programs): rounds of
# ib_send_bw (-n 500) then ib_send_lat (-n 1000), each judged as
# hosts/perftest.sh judges (sof_perftest_verdict: both exit with 0, the
# client prints a result line). A hang of ib_send_lat there (1 run in 6 on
# sof0 with the daemon's engine, and on sofib0, was reported; no counter
# showed a lost packet) fails the round at its 40 s bound, and the
# daemons' `softofed status` (resources and counters) taken 30 s into the
# run, while it hangs, is printed with it: what the next look needs.
# SOF_LAB_ROUNDS rounds (default 3).
#
# Needs root (ip netns).
# Usage: tests/hosts/lat_after_bw.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_init

PORT=19850
export SOFTOFED_ENGINE=daemon

# round I: ib_send_bw, then ib_send_lat with a status snapshot at 30 s
round() {
	local name snap rc
	name="hosts/lat_after_bw $1: ib_send_bw -n 500"
	PORT=$((PORT + 1))
	SOF_LINEBUF=1 sof_host_pair "$name" a b "$PORT" 40 ib_send_bw -x @GID@ -n 500 -d sof0 -F
	sof_perftest_verdict "$name" $?
	name="hosts/lat_after_bw $1: ib_send_lat -n 1000 after it"
	PORT=$((PORT + 1))
	snap=$(sof_out "lab.status.$1")
	sof_bg "lab.snap.$1" 40 sh -c "sleep 30; for h in $(sof_host_ns a) $(sof_host_ns b); do
		echo \"host \$h:\"; timeout 10 ip netns exec \$h '$SOFTOFED' status |
		grep -E '^(resources|counters|drops):'; done >'$snap' 2>&1"
	SOF_LINEBUF=1 sof_host_pair "$name" a b "$PORT" 40 ib_send_lat -x @GID@ -n 1000 -d sof0 -F
	rc=$?
	sof_perftest_verdict "$name" "$rc" || {
		[ -s "$snap" ] && echo "#   the daemons 30 s into the run:" &&
			sed 's/^/#     /' "$snap"
	}
	sof_kill "lab.snap.$1"
}

if sof_hosts_up 2; then
	for i in $(seq 1 "${SOF_LAB_ROUNDS:-3}"); do
		round "$i"
	done
fi

sof_exit
