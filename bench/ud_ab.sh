#!/bin/bash
# bench/ud_ab.sh — sofib0's UD QPs in the program's engine (issues 19 and
# 21): a base build against this one, in alternating rounds (base, new,
# base, new ...) on the same machine, each round on fresh hosts.
#
# A round: tests/topologies/pair.net (a and b under one switch), OpenSM in
# a (tests/ib_fabric.sh sof_ibf_up); ib_send_lat -c UD -s 2 -n 2000 a -> b
# by LID (t_typical, µs); `softofed ipoib up` (datagram mode, ib0 MTU
# 2044) in both, then ping a -> b over ib0 (200 echoes 10 ms apart after
# one that resolves b; the average RTT and the median echo's, ms) and
# iperf3 one TCP stream a -> b for BENCH_SECS (default 5) seconds (the
# receiver's Mbit/s), then
# iperf3 UDP a -> b at 20 Mbit/s, 1400-byte datagrams, as long (the
# server's lost %, and how many datagrams b's kernel dropped for a full
# socket buffer: Udp RcvbufErrors of /proc/net/snmp in b). The load
# average is taken at the start of each round.
#
# Usage: BENCH_BASE=DIR bench/ud_ab.sh (root: ip netns; BENCH_BUILD=DIR
#        the new build, default build/; BENCH_REPS rounds of each, default
#        3; BENCH_OUT=FILE also appends the table there).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)

if [ -z "${UD_AB_ROUND:-}" ]; then
	# shellcheck source=bench/ab_lib.sh
	. "$ROOT/bench/ab_lib.sh"
	ab_rounds ud_ab UD_AB_ROUND
	{
		echo "### sofib0 UD and IPoIB datagram mode: base ($A) vs new ($B), median of $REPS alternating rounds"
		echo
		ab_head
		ab_rows "udlat:ib_send_lat -c UD 2 B, one switch (t_typical µs)" \
			"ping:IPoIB datagram ping a -> b, 200 echoes (avg ms)" \
			"pingmed:IPoIB datagram ping a -> b, 200 echoes (median echo, ms)" \
			"tcp:IPoIB datagram iperf3 TCP 1 stream (Mbit/s)" \
			"udp:IPoIB datagram iperf3 UDP 20 Mbit/s (lost %)" \
			"rcvbuf:b's UDP RcvbufErrors during the UDP step" "load:load average (1 min) at round start"
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
SECS=${BENCH_SECS:-5}
echo "load $(cut -d' ' -f1 /proc/loadavg)"
sof_ibf_up pair H1,H2 2 >/dev/null 2>&1 || {
	echo "# fabric failed" >&2
	sof_exit >/dev/null 2>&1
	exit 1
}
sof_host_pair bench.udlat b a 18950 60 ib_send_lat -c UD -d sofib0 -s 2 -n 2000 >/dev/null 2>&1
echo "udlat $(grep -E "$SOF_PERFTEST_RESULT" "$SOF_CLI_OUT" 2>/dev/null | tail -n 1 | awk '{print $5}' | grep . || echo -)"

[ -x "$(dirname "$SOFTOFED")/softofed-ipoib" ] || export SOFTOFED_IPOIB=$SOF_BIN/softofed-ipoib
for h in a b; do
	sof_host_run "$h" "$SOFTOFED" ipoib up >/dev/null 2>&1 </dev/null
	sof_host_run "$h" ip addr add "$(sof_ipoib_ip "$h")/24" dev ib0 2>/dev/null
done
ip_b=$(sof_ipoib_ip b)
sof_host_run a ping -n -c 1 -W 5 "$ip_b" >/dev/null 2>&1 </dev/null
out=$(mktemp /tmp/ud_ab.ping.XXXXXX)
sof_host_run a ping -n -c 200 -i 0.01 -W 2 "$ip_b" >"$out" 2>/dev/null </dev/null
p=$(sed -n 's|^rtt [^=]*= [0-9.]*/\([0-9.]*\)/.*|\1|p' "$out")
# the median echo: one stall of the machine moves the average, not it
pm=$(sed -n 's|.* time=\([0-9.]*\) ms.*|\1|p' "$out" | sort -n |
	awk '{a[NR]=$1} END {print (NR ? a[int((NR + 1) / 2)] : "-")}')
rm -f "$out"
echo "ping ${p:--}"
echo "pingmed ${pm:--}"
sof_host_bg bench.iperf b $((SECS + 40)) iperf3 -s -p 5201
sof_host_wait_listen b 5201 10 bench.iperf >/dev/null 2>&1
t=$(sof_host_run a timeout $((SECS + 20)) iperf3 -c "$ip_b" -p 5201 -t "$SECS" -J 2>/dev/null </dev/null |
	python3 -c 'import json,sys; print(int(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 1e6))' 2>/dev/null)
echo "tcp ${t:--}"
rcvbuf() { sof_host_run b awk '/^Udp:/ && $2 ~ /^[0-9]/ {print $6}' /proc/net/snmp 2>/dev/null; }
r0=$(rcvbuf)
out=$(mktemp /tmp/ud_ab.udp.XXXXXX)
sof_host_run a timeout $((SECS + 20)) iperf3 -c "$ip_b" -p 5201 -u -b 20M -l 1400 -t "$SECS" -J \
	--get-server-output >"$out" 2>/dev/null </dev/null
u=$(python3 -c '
import json, re, sys
t = json.load(open(sys.argv[1]))["server_output_text"]
m = re.findall(r"(\d+)/(\d+) \(([0-9.e+-]+)%\)\s+receiver", t)
print(m[-1][2])' "$out" 2>/dev/null)
rm -f "$out"
r1=$(rcvbuf)
echo "udp ${u:--}"
echo "rcvbuf $([ -n "$r0" ] && [ -n "$r1" ] && echo $((r1 - r0)) || echo -)"
sof_kill bench.iperf
for h in a b; do sof_host_run "$h" timeout 10 "$SOFTOFED" ipoib down >/dev/null 2>&1 </dev/null; done
sof_kill ibf.sm
sof_kill ibf.fabric
sof_exit >/dev/null 2>&1
exit 0
