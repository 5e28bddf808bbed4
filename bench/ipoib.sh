#!/bin/bash
# bench/ipoib.sh — issue 21: IPoIB (ipoib/, datagram and connected mode) against kernel
# TCP over a plain veth between the same two network-namespace hosts.
#
# Hosts a and b as tests/hosts/ipoib.sh makes them (tests/lib.sh
# sof_hosts_up: a veth pair a:veth0 <-> b:veth0, MTU 9000), each daemon
# with an InfiniBand port on the fabric of tests/topologies/pair.net,
# Debian's OpenSM in a, `softofed ipoib up --mode M` in both, M datagram
# then connected (RFC 4755: RC connections, ib0 MTU 65520). OpenSM's
# broadcast group at IB MTU 2048 (datagram ib0 MTU 2044), then at 4096
# (4092; partitions.conf mtu=5); BENCH_MODES picks the modes (default
# "datagram connected"). BENCH_REPS rounds (default 3), the median of each:
#   - iperf3 one TCP stream a -> b for BENCH_SECS (default 5) seconds over
#     ib0 and over veth0 (receiver's rate);
#   - ping a -> b, 200 echoes 10 ms apart, the average RTT over ib0 and
#     over veth0.
# The table gives both and the ratios ib0 / veth (issue 21's targets:
# throughput >= 1x in connected mode; ping <= 1.5x).
#
# Usage: bench/ipoib.sh (root: ip netns; BENCH_BUILD=DIR the build, default
#        build/; BENCH_OUT=FILE also appends the table there). run.sh runs
#        it at its end (heading "Issue 21", label "issue 21: ipoib" for
#        BENCH_ONLY; `bench/run.sh --section ipoib` alone).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export SOF_BUILD=${BENCH_BUILD:-${SOF_BUILD:-build}}
# shellcheck source=tests/lib.sh
. "$ROOT/tests/lib.sh"
sof_init
REPS=${BENCH_REPS:-3}
SECS=${BENCH_SECS:-5}
FABRIC=$SOF_BIN/softofed-fabric
PORT=7471

median() { sort -n | awk '{a[NR]=$1} END {print (NR ? a[int((NR + 1) / 2)] : "-")}'; }
ibline() { sof_host_run "$1" "$SOFTOFED" status 2>/dev/null </dev/null | grep '^device sofib0'; }

SOF_HOST_UP_ARGS[a]="--ib-fabric $(sof_host_ip a):$PORT --ib-node H1"
SOF_HOST_UP_ARGS[b]="--ib-fabric $(sof_host_ip a):$PORT --ib-node H2"
sof_hosts_up 2 || exit 1
sof_host_bg bench.fabric a 900 "$FABRIC" "$ROOT/tests/topologies/pair.net" \
	--listen "$(sof_host_ip a):$PORT" --real H1,H2
for _ in $(seq 100); do
	ibline a | grep -q 'port 1 INIT' && ibline b | grep -q 'port 1 INIT' && break
	sleep 0.1
done
guid=$(sof_host_run a "$SOFTOFED" run -- ibstat -p sofib0 2>/dev/null </dev/null | head -n 1)
sof_host_bg bench.iperf b 900 iperf3 -s -p 5201
sof_host_wait_listen b 5201 10 bench.iperf >/dev/null 2>&1
tcp() {
	sof_host_run a timeout $((SECS + 20)) iperf3 -c "$1" -p 5201 -t "$SECS" -J 2>/dev/null </dev/null |
		python3 -c 'import json,sys; print(int(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 1e6))' 2>/dev/null
}
rtt() {
	sof_host_run a ping -n -q -c 200 -i 0.01 -W 2 "$1" 2>/dev/null </dev/null |
		sed -n 's|^rtt [^=]*= [0-9.]*/\([0-9.]*\)/.*|\1|p'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a + 0 > 0 && b + 0 > 0) printf "%.3f", a / b; else print "-"}'; }

# the veth between the same namespaces
: >"$SOF_TMP/t_veth" && : >"$SOF_TMP/r_veth"
for _ in $(seq 1 "$REPS"); do
	tcp "$(sof_host_ip b)" >>"$SOF_TMP/t_veth"
	rtt "$(sof_host_ip b)" >>"$SOF_TMP/r_veth"
done
tv=$(median <"$SOF_TMP/t_veth") rv=$(median <"$SOF_TMP/r_veth")

# ib0 with OpenSM's broadcast group at IB MTU 2048 (mtu=4) and 4096 (mtu=5)
rows=()
for code in 4 5; do
	echo "Default=0x7fff, ipoib, mtu=$code : ALL=full;" >"$SOF_TMP/partitions.conf"
	smlog=$SOF_TMP/bench.opensm.$code.log
	sof_host_bg bench.sm a 400 "$SOFTOFED" run -- opensm -g "$guid" -f "$smlog" -d 0 -s 2 -D 0x87 -P "$SOF_TMP/partitions.conf"
	for _ in $(seq 600); do
		grep -q 'SUBNET UP' "$smlog" 2>/dev/null && ibline a | grep -q ACTIVE && ibline b | grep -q ACTIVE && break
		sleep 0.1
	done
	for mode in ${BENCH_MODES:-datagram connected}; do
		for h in a b; do
			n=$(_sof_host_num $h)
			sof_host_run $h "$SOFTOFED" ipoib up --mode "$mode" >/dev/null 2>&1 </dev/null ||
				{ echo "# ipoib up --mode $mode failed in $h" >&2; exit 1; }
			sof_host_run $h ip addr add "192.168.77.$n/24" dev ib0
		done
		mtu=$(sof_host_run a cat /sys/class/net/ib0/mtu)
		# resolved (and connected) before anything is timed
		sof_host_run a ping -n -q -c 3 -W 3 192.168.77.2 >/dev/null 2>&1 </dev/null
		: >"$SOF_TMP/t_ib" && : >"$SOF_TMP/r_ib"
		for _ in $(seq 1 "$REPS"); do
			tcp 192.168.77.2 >>"$SOF_TMP/t_ib"
			rtt 192.168.77.2 >>"$SOF_TMP/r_ib"
		done
		ti=$(median <"$SOF_TMP/t_ib") ri=$(median <"$SOF_TMP/r_ib")
		ibm=$((128 << code))
		tgt="-"
		[ "$mode" = connected ] && tgt=">= 1"
		rows+=("| iperf3 TCP, 1 stream, ${SECS} s (Mbit/s) | ib0 $mode, MTU $mtu, IB MTU $ibm | $ti | $tv | $(ratio "$ti" "$tv") | $tgt |")
		rows+=("| ping RTT, 200 echoes (ms, average) | ib0 $mode, MTU $mtu, IB MTU $ibm | $ri | $rv | $(ratio "$ri" "$rv") | <= 1.5 |")
		for h in a b; do sof_host_run $h "$SOFTOFED" ipoib down >/dev/null 2>&1 </dev/null; done
	done
	sof_kill bench.sm
done
sof_kill bench.iperf
sof_kill bench.fabric
{
	echo "### IPoIB datagram and connected mode over ib0 against kernel TCP over a veth (issue 21), median of $REPS"
	echo
	echo "| measure | interface | ib0 | veth0 (MTU $SOF_HOSTS_MTU) | ib0 / veth | target |"
	echo "|---|---|---|---|---|---|"
	printf '%s\n' "${rows[@]}"
} | tee -a "${BENCH_OUT:-/dev/null}"
