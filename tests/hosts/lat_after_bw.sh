#!/bin/bash
# ib_send_lat right after ib_send_bw between the same two hosts, on the
# daemons' engines (SOFTOFED_ENGINE=daemon in both programs): rounds of
# ib_send_bw (-n 500) then ib_send_lat (-n 1000), each judged as
# hosts/perftest.sh judges (sof_perftest_verdict: both exit with 0, the
# client prints a result line). A hang of ib_send_lat there (1 run in 6 on
# sof0 with the daemon's engine, and on sofib0, was reported; no counter
# showed a lost packet) fails the round at its 40 s bound, and the
# daemons' `softofed status` (resources and counters) taken 10, 20 and
# 30 s into the run is printed with it, with whether their packet counts
# still grew between the last two (slow) or not (hung).
# SOF_LAB_ROUNDS rounds (default 3) on sof0, then as many on sofib0 (by
# LID, its QPs always on the daemon's engine) through hosts/ib_relay.py,
# the two-port switch and SM of hosts/ibdata.sh.
#
# Needs root (ip netns).
# Usage: tests/hosts/lat_after_bw.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_init

PORT=19850
export SOFTOFED_ENGINE=daemon
DEV=sof0
GIDARG=(-x @GID@)
SOF_HOST_UP_ARGS[a]="--ib-fabric $(sof_host_ip b):7150 --ib-port 7150 --ib-node HA"
SOF_HOST_UP_ARGS[b]="--ib-fabric 127.0.0.1:7251 --ib-port 7151 --ib-node HB"

# _moving FILE: from the samples in FILE ("t=Ns" lines, then each host's
# status lines), whether the daemons' rx_packets + tx_packets grew between
# the last two samples: a slow run, not a hang
_moving() {
	awk '/^t=/ { n++ } /^counters:/ {
			for (i = 2; i < NF; i += 2)
				if ($i == "rx_packets" || $i == "tx_packets") sum[n] += $(i + 1)
		}
		END {
			if (n < 2) { print "fewer than two samples"; exit }
			d = sum[n] - sum[n - 1]
			printf "%s: %d packets in the daemons between the last two samples\n",
				(d > 0 ? "moving (slow, not hung)" : "no progress (hung)"), d
		}' "$1"
}

# round I: ib_send_bw, then ib_send_lat with the daemons' status sampled
# at 10, 20 and 30 s (a progress print: a hang tells from slowness)
round() {
	local name snap rc
	name="hosts/lat_after_bw $DEV $1: ib_send_bw -n 500"
	PORT=$((PORT + 1))
	SOF_LINEBUF=1 sof_host_pair "$name" a b "$PORT" 40 ib_send_bw "${GIDARG[@]}" -n 500 -d "$DEV" -F
	sof_perftest_verdict "$name" $?
	name="hosts/lat_after_bw $DEV $1: ib_send_lat -n 1000 after it"
	PORT=$((PORT + 1))
	snap=$(sof_out "lab.status.$1")
	sof_bg "lab.snap.$1" 40 sh -c "for t in 10 20 30; do sleep 10; echo \"t=\${t}s\"
		for h in $(sof_host_ns a) $(sof_host_ns b); do
		echo \"host \$h:\"; timeout 5 ip netns exec \$h '$SOFTOFED' status |
		grep -E '^(resources|counters|drops|ib_counters):'; done; done >'$snap' 2>&1"
	SOF_LINEBUF=1 sof_host_pair "$name" a b "$PORT" 40 ib_send_lat "${GIDARG[@]}" -n 1000 -d "$DEV" -F
	rc=$?
	sof_perftest_verdict "$name" "$rc" || {
		[ -s "$snap" ] && echo "#   the daemons every 10 s into the run ($(_moving "$snap")):" &&
			sed 's/^/#     /' "$snap"
	}
	sof_kill "lab.snap.$1"
}

if sof_hosts_up 2; then
	for i in $(seq 1 "${SOF_LAB_ROUNDS:-3}"); do
		round "$i"
	done
	# the relay outlives every round's two 40 s bounds (a fixed 290 s
	# took the ports down under load after ~15 of 20 rounds)
	relay_secs=$((60 + 90 * ${SOF_LAB_ROUNDS:-3}))
	sof_host_bg lab.relay b $((relay_secs + 10)) python3 "$(dirname "$0")/ib_relay.py" \
		--a "$(sof_host_ip b):7150" "$(sof_host_ip a):7150" 1 \
		--b 127.0.0.1:7251 127.0.0.1:7151 2 --secs "$relay_secs"
	relay=$(sof_out lab.relay)
	for _ in $(seq 200); do
		grep -q '^relay up\|^relay failed' "$relay" 2>/dev/null && break
		sleep 0.1
	done
	if grep -q '^relay up a=1 b=2' "$relay"; then
		DEV=sofib0 GIDARG=()
		for i in $(seq 1 "${SOF_LAB_ROUNDS:-3}"); do
			round "$i"
		done
	else
		not_ok "hosts/lat_after_bw sofib0" "the relay did not bring both ports up"
		sof_dump "$relay"
	fi
	sof_kill lab.relay
fi

sof_exit
