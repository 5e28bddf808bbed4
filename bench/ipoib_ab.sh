#!/bin/bash
# bench/ipoib_ab.sh — issue 21: two softofed-ipoib binaries (A, B) against
# each other and against kernel TCP over a plain veth, in alternating rounds
# on one set of hosts, so the shared machine's load falls on all alike.
#
# Hosts a and b as bench/ipoib.sh makes them (a veth pair, MTU 9000; the
# fabric of tests/topologies/pair.net; Debian's OpenSM in a with the
# default partition, IB MTU 2048; BENCH_IBMTU=4096: partitions.conf mtu=5,
# ib0's datagram MTU 4092). Each of BENCH_REPS rounds (default 5)
# measures veth0, then A and B in ib0 (`softofed ipoib up --mode M`, M
# BENCH_MODE, default connected; up, resolved, measured, down), A first in
# odd rounds and B first in even ones:
#   - iperf3, one TCP stream a -> b for BENCH_SECS (default 5) seconds,
#     the receiver's rate;
#   - ping a -> b, 200 echoes 10 ms apart, the average RTT.
# Prints every round, then the medians, the ratios to veth0 and the load
# average at the start and the end.
#
# Usage: BENCH_A=BIN BENCH_B=BIN bench/ipoib_ab.sh (root: ip netns;
#        BENCH_BUILD=DIR the rest of the build, default build/; BENCH_OUT=FILE
#        also appends the table there).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export SOF_BUILD=${BENCH_BUILD:-${SOF_BUILD:-build}}
# shellcheck source=tests/lib.sh
. "$ROOT/tests/lib.sh"
sof_init
REPS=${BENCH_REPS:-5}
SECS=${BENCH_SECS:-5}
MODE=${BENCH_MODE:-connected}
A=${BENCH_A:?BENCH_A=the first softofed-ipoib binary}
B=${BENCH_B:?BENCH_B=the second softofed-ipoib binary}
A=$(realpath "$A") B=$(realpath "$B")
FABRIC=$SOF_BIN/softofed-fabric
PORT=7473

median() { sort -g | awk '{a[NR]=$1} END {print (NR ? a[int((NR + 1) / 2)] : "-")}'; }
ibline() { sof_host_run "$1" "$SOFTOFED" status 2>/dev/null </dev/null | grep '^device sofib0'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a + 0 > 0 && b + 0 > 0) printf "%.3f", a / b; else print "-"}'; }
tcp() {
	sof_host_run a timeout $((SECS + 20)) iperf3 -c "$1" -p 5201 -t "$SECS" -J 2>/dev/null </dev/null |
		python3 -c 'import json,sys; print(int(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 1e6))' 2>/dev/null
}
rtt() {
	sof_host_run a ping -n -q -c 200 -i 0.01 -W 2 "$1" 2>/dev/null </dev/null |
		sed -n 's|^rtt [^=]*= [0-9.]*/\([0-9.]*\)/.*|\1|p'
}
load() { cut -d' ' -f1-3 /proc/loadavg; }
# CPU time (clock ticks, user + system) of the processes running binary $1
# (an absolute path: argv[0] is not the file's name)
# (both hosts' softofed-ipoib: the system time includes the TUN's kernel
# side, which runs in their reads and writes)
cpu_ticks() {
	local p e t=0
	for p in /proc/[0-9]*; do
		e=$(readlink "$p/exe" 2>/dev/null) || continue
		[ "$e" = "$1" ] || continue
		t=$((t + $(awk '{print $14 + $15}' "$p/stat" 2>/dev/null || echo 0)))
	done
	echo $t
}

SOF_HOST_UP_ARGS[a]="--ib-fabric $(sof_host_ip a):$PORT --ib-node H1"
SOF_HOST_UP_ARGS[b]="--ib-fabric $(sof_host_ip a):$PORT --ib-node H2"
sof_hosts_up 2 || exit 1
sof_host_bg ab.fabric a 1800 "$FABRIC" "$ROOT/tests/topologies/pair.net" \
	--listen "$(sof_host_ip a):$PORT" --real H1,H2
for _ in $(seq 100); do
	ibline a | grep -q 'port 1 INIT' && ibline b | grep -q 'port 1 INIT' && break
	sleep 0.1
done
guid=$(sof_host_run a "$SOFTOFED" run -- ibstat -p sofib0 2>/dev/null </dev/null | head -n 1)
smlog=$SOF_TMP/ab.opensm.log
# BENCH_IBMTU=4096: the broadcast group's IB MTU 4096 (partitions.conf
# mtu=5, ib0's datagram MTU 4092); default OpenSM's 2048
parts=()
if [ "${BENCH_IBMTU:-2048}" = 4096 ]; then
	echo 'Default=0x7fff, ipoib, mtu=5 : ALL=full;' >"$SOF_TMP/partitions.conf"
	parts=(-P "$SOF_TMP/partitions.conf")
fi
sof_host_bg ab.sm a 1800 "$SOFTOFED" run -- opensm -g "$guid" -f "$smlog" -d 0 -s 2 -D 0x87 "${parts[@]}"
for _ in $(seq 600); do
	grep -q 'SUBNET UP' "$smlog" 2>/dev/null && ibline a | grep -q ACTIVE && ibline b | grep -q ACTIVE && break
	sleep 0.1
done
sof_host_bg ab.iperf b 1800 iperf3 -s -p 5201
sof_host_wait_listen b 5201 10 ab.iperf >/dev/null 2>&1

# one measurement of ib0 with binary $2, named $1
ib_round() {
	local h
	for h in a b; do
		SOFTOFED_IPOIB=$2 sof_host_run $h "$SOFTOFED" ipoib up --mode "$MODE" >/dev/null 2>&1 </dev/null ||
			{ echo "# ipoib up ($1) failed in $h" >&2; return 1; }
		sof_host_run $h ip addr add "192.168.77.$(_sof_host_num $h)/24" dev ib0
	done
	sof_host_run a ping -n -q -c 3 -W 3 192.168.77.2 >/dev/null 2>&1 </dev/null
	ibmtu=$(sof_host_run a cat /sys/class/net/ib0/mtu 2>/dev/null)
	local c0 c1 mbit
	c0=$(cpu_ticks "$2")
	mbit=$(tcp 192.168.77.2)
	c1=$(cpu_ticks "$2")
	echo "$mbit" >>"$SOF_TMP/t_$1"
	# milliseconds of ipoib CPU per MB carried: less bound to the load
	awk -v t=$((c1 - c0)) -v hz="$(getconf CLK_TCK)" -v m="${mbit:-0}" -v s="$SECS" \
		'BEGIN {if (m > 0) printf "%.2f\n", t * 1000 / hz / (m * s / 8)}' >>"$SOF_TMP/u_$1"
	rtt 192.168.77.2 >>"$SOF_TMP/r_$1"
	# the offloads' counters (binaries that have them): TSO packets cut in
	# a, segments joined in b
	for h in a b; do
		sof_host_run $h "$SOFTOFED" ipoib status 2>/dev/null </dev/null |
			awk -v h=$h '/^counters:/ {for (i = 2; i < NF; i += 2) if ($i ~ /^(tx_packets|rx_packets|tx_gso|tx_gso_segs|rx_gro|cm_tx_packets)$/) printf " %s.%s %s", h, $i, $(i + 1)}'
	done >>"$SOF_TMP/c_$1"
	echo >>"$SOF_TMP/c_$1"
	for h in a b; do sof_host_run $h "$SOFTOFED" ipoib down >/dev/null 2>&1 </dev/null; done
}

load0=$(load)
ibmtu=-
for x in veth A B; do : >"$SOF_TMP/t_$x" && : >"$SOF_TMP/r_$x" && : >"$SOF_TMP/c_$x" && : >"$SOF_TMP/u_$x"; done
for r in $(seq 1 "$REPS"); do
	tcp "$(sof_host_ip b)" >>"$SOF_TMP/t_veth"
	rtt "$(sof_host_ip b)" >>"$SOF_TMP/r_veth"
	if [ $((r % 2)) = 1 ]; then
		ib_round A "$A" && ib_round B "$B"
	else
		ib_round B "$B" && ib_round A "$A"
	fi
	echo "# round $r: veth $(tail -n 1 "$SOF_TMP/t_veth") Mbit/s $(tail -n 1 "$SOF_TMP/r_veth") ms," \
		"A $(tail -n 1 "$SOF_TMP/t_A") Mbit/s $(tail -n 1 "$SOF_TMP/r_A") ms," \
		"B $(tail -n 1 "$SOF_TMP/t_B") Mbit/s $(tail -n 1 "$SOF_TMP/r_B") ms, load $(load);" \
		"ipoib CPU per MB: A $(tail -n 1 "$SOF_TMP/u_A") ms, B $(tail -n 1 "$SOF_TMP/u_B") ms"
	echo "#   counters A:$(tail -n 1 "$SOF_TMP/c_A")"
	echo "#   counters B:$(tail -n 1 "$SOF_TMP/c_B")"
done
load1=$(load)
sof_kill ab.iperf
sof_kill ab.sm
sof_kill ab.fabric
tv=$(median <"$SOF_TMP/t_veth") rv=$(median <"$SOF_TMP/r_veth")
ta=$(median <"$SOF_TMP/t_A") ra=$(median <"$SOF_TMP/r_A")
tb=$(median <"$SOF_TMP/t_B") rb=$(median <"$SOF_TMP/r_B")
ua=$(median <"$SOF_TMP/u_A") ub=$(median <"$SOF_TMP/u_B")
{
	echo "### softofed-ipoib A ($A) and B ($B), ib0 $MODE (IB MTU ${BENCH_IBMTU:-2048}, ib0 MTU $ibmtu), against veth0; median of $REPS alternating rounds, load $load0 -> $load1"
	echo
	echo "| measure | veth0 | A | B | A / veth | B / veth | B / A |"
	echo "|---|---|---|---|---|---|---|"
	echo "| iperf3 TCP, 1 stream, ${SECS} s (Mbit/s) | $tv | $ta | $tb | $(ratio "$ta" "$tv") | $(ratio "$tb" "$tv") | $(ratio "$tb" "$ta") |"
	echo "| ping RTT, 200 echoes (ms, average) | $rv | $ra | $rb | $(ratio "$ra" "$rv") | $(ratio "$rb" "$rv") | $(ratio "$rb" "$ra") |"
	echo "| ipoib CPU per MB of iperf3, both hosts (ms) | - | $ua | $ub | - | - | $(ratio "$ub" "$ua") |"
} | tee -a "${BENCH_OUT:-/dev/null}"
