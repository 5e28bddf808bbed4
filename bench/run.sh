#!/bin/bash
# bench/run.sh — issue 5's side-by-side benchmark, first version: it measures,
# it never fails on a slow machine; it writes a Markdown report.
#
# In one run, under the same pinning (server / one side on CPU BENCH_CPU_A,
# client / other side on BENCH_CPU_B; defaults 0 and 1):
#   physical limits   bench/memcpy_bw (single-thread memcpy, 4 KiB..64 MiB),
#                     bench/cacheline_pingpong (one-way cache-line transfer);
#   same host         in a network namespace of its own with its own daemon
#                     (tests/lib.sh sof_ns_run): perftest ib_send_lat,
#                     ib_write_lat, ib_read_lat (2 B), ib_atomic_lat (8 B),
#                     ib_send_lat -e; ib_write_bw, ib_read_bw, ib_send_bw at
#                     64 B, 4 KiB, 64 KiB, 1 MiB; the kernel peers on that
#                     namespace's loopback: sockperf ping-pong UDP and TCP,
#                     blocking and busy-polled (--nonblocked), iperf3 TCP
#                     and UDP; UCX ucx_perftest (posix shm, cma, tcp) and
#                     libfabric fi_pingpong (shm, tcp, udp) when installed;
#   two hosts         network namespaces joined by a veth pair
#                     (sof_hosts_up 2, needs root): ib_send_lat 2 B,
#                     ib_write_bw 1 MiB, sockperf UDP/TCP and iperf3 TCP
#                     over the same veth.
# Each measurement runs BENCH_REPS times (default 5); the report gives the
# median, min and max, the ratios issue 5 names and the command of each.
#
# Every process runs under `timeout` and is stopped by its PID.
#
# Environment:
#   BENCH_QUICK=1     about three minutes: 3 runs each, fewer iterations
#   BENCH_REPS=N      runs per measurement
#   BENCH_ONLY=REGEX  only the measurements whose label matches (grep -E)
#   BENCH_OUT=FILE    the report (default bench/results/DATE-HOST.md)
#   BENCH_CPU_A, BENCH_CPU_B   the two cores
#   SOF_BUILD         the build to measure (default build)
#
# Usage: bench/run.sh            (make bench: installs, builds, runs this)
set -u
BENCH_DIR=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib.sh
. "$BENCH_DIR/../tests/lib.sh"

QUICK=${BENCH_QUICK:-}
if [ -n "$QUICK" ]; then
	REPS=${BENCH_REPS:-3}
	SCALE=5 # iteration counts divided by this
	SECS=1  # sockperf / iperf3 seconds per run
else
	REPS=${BENCH_REPS:-5}
	SCALE=1
	SECS=2
fi
CPU_A=${BENCH_CPU_A:-0}
CPU_B=${BENCH_CPU_B:-1}
ONLY=${BENCH_ONLY:-}
BIN=$SOF_BUILD_DIR/bench
RES_DIR=$BENCH_DIR/results
PORT=${BENCH_PORT:-19900}

# the perftest result lines: latency (9 columns, t_typical 5th), bandwidth
# (5 columns: bytes iterations peak average[MB/sec] Mpps)
LAT_RE='^[[:space:]]*[0-9]+[[:space:]]+[0-9]+([[:space:]]+[0-9.]+){7}'
BW_RE='^[[:space:]]*[0-9]+[[:space:]]+[0-9]+([[:space:]]+[0-9.]+){3}[[:space:]]*$'

log() {
	echo "bench: $*" >&2
}

# wanted LABEL: true unless BENCH_ONLY excludes it
wanted() {
	[ -z "$ONLY" ] || echo "$1" | grep -q -E -- "$ONLY"
}

# rec LABEL UNIT VALUE COMMAND: one run's figure, into the results file
rec() {
	[ -n "$3" ] || return 0
	printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$BENCH_TSV"
}

# fail LABEL WHY: a measurement that did not run (reported, not fatal)
fail() {
	printf '%s\t%s\n' "$1" "$2" >>"$BENCH_TSV.fail"
	log "$1: $2"
}

# next_port: a fresh TCP/UDP port per server, so no run waits on TIME_WAIT
next_port() {
	PORT=$((PORT + 1))
}

# wait_port PORT SECS NAME [NS]: until something listens on PORT (TCP or UDP)
wait_port() {
	local port=$1 secs=$2 name=$3 ns=${4:-} end pre=()
	[ -n "$ns" ] && pre=(ip netns exec "$ns")
	end=$(($(now_ms) + secs * 1000))
	while [ "$(now_ms)" -lt "$end" ]; do
		if [ -n "$(timeout 5 "${pre[@]}" ss -Hln "sport = :$port" 2>/dev/null)" ]; then
			return 0
		fi
		sof_alive "$name" || return 1
		sleep 0.05
	done
	return 1
}

# pair NAME SECS SRV_NS CLI_NS SERVER... :: CLIENT...: the server pinned to
# CPU_A (in namespace SRV_NS unless empty), the client pinned to CPU_B;
# waits for the client, then for the server (STOP_SRV=1: stops it by PID).
# Sets CLI_OUT; returns the client's status.
pair() {
	local name=$1 secs=$2 sns=$3 cns=$4 srv=() cli=() spre=() cpre=() rc
	shift 4
	while [ $# -gt 0 ] && [ "$1" != :: ]; do
		srv+=("$1")
		shift
	done
	shift
	cli=("$@")
	[ -n "$sns" ] && spre=(ip netns exec "$sns")
	[ -n "$cns" ] && cpre=(ip netns exec "$cns")
	sof_bg "$name.srv" $((secs + 30)) "${spre[@]}" taskset -c "$CPU_A" "${srv[@]}"
	if ! wait_port "$PORT" 20 "$name.srv" "$sns"; then
		sof_kill "$name.srv"
		CLI_OUT=$(sof_out "$name.srv")
		return 1
	fi
	sof_bg "$name.cli" "$secs" "${cpre[@]}" taskset -c "$CPU_B" "${cli[@]}"
	sof_wait "$name.cli" $((secs + 10))
	rc=$?
	if [ -n "${STOP_SRV:-}" ]; then
		sof_kill "$name.srv"
	else
		sof_wait "$name.srv" 10
	fi
	CLI_OUT=$(sof_out "$name.cli")
	return $rc
}

# cmdline SERVER... :: CLIENT...: the rerun text of a pair
cmdline() {
	local s="" c="" a side=s
	for a in "$@"; do
		if [ "$a" = :: ]; then
			side=c
			continue
		fi
		a=${a//$SOF_ROOT\//}
		if [ $side = s ]; then s="$s $a"; else c="$c $a"; fi
	done
	echo "taskset -c $CPU_A${s} & taskset -c $CPU_B${c}"
}

# ---------------------------------------------------------------------------
# physical limits

build_helpers() {
	local f
	mkdir -p "$BIN" || return 1
	for f in memcpy_bw cacheline_pingpong; do
		if [ ! -x "$BIN/$f" ] || [ "$BENCH_DIR/$f.c" -nt "$BIN/$f" ]; then
			cc -O2 -g -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
				-o "$BIN/$f" "$BENCH_DIR/$f.c" || return 1
		fi
	done
}

physical() {
	local i out size v ms=200 rounds=2000000
	[ -n "$QUICK" ] && ms=50 rounds=500000
	if wanted "physical: memcpy"; then
		out=$SOF_TMP/memcpy.out
		for i in $(seq "$REPS"); do
			log "memcpy run $i"
			if ! timeout 120 taskset -c "$CPU_B" "$BIN/memcpy_bw" "$ms" >"$out" 2>&1; then
				fail "physical: memcpy" "memcpy_bw failed: $(tail -n 1 "$out")"
				break
			fi
			while read -r size v; do
				rec "physical: memcpy $(hsize "$size")" MiB/s "$v" \
					"taskset -c $CPU_B build/bench/memcpy_bw $ms"
			done <"$out"
		done
	fi
	if wanted "physical: cache-line ping-pong"; then
		for i in $(seq "$REPS"); do
			log "cache-line ping-pong run $i"
			v=$(timeout 120 "$BIN/cacheline_pingpong" "$CPU_A" "$CPU_B" "$rounds" | awk '$1 == "oneway_ns" { print $2 / 1000 }')
			[ -n "$v" ] || {
				fail "physical: cache-line ping-pong" "cacheline_pingpong failed"
				break
			}
			rec "physical: cache-line ping-pong one-way" us "$v" \
				"build/bench/cacheline_pingpong $CPU_A $CPU_B $rounds"
		done
	fi
}

# hsize BYTES: 64 B, 4 KiB, 1 MiB
hsize() {
	local n=$1
	if [ "$n" -ge 1048576 ] && [ $((n % 1048576)) -eq 0 ]; then
		echo "$((n / 1048576)) MiB"
	elif [ "$n" -ge 1024 ] && [ $((n % 1024)) -eq 0 ]; then
		echo "$((n / 1024)) KiB"
	else
		echo "$n B"
	fi
}

# ---------------------------------------------------------------------------
# perftest through softofed

# perf WHERE LABEL SECS SRV_NS CLI_NS TARGET PROG ARGS...: REPS runs of one
# perftest measurement; WHERE is "same host" or "veth"
perf() {
	local where=$1 label=$2 secs=$3 sns=$4 cns=$5 target=$6 prog=$7 i v mpps line
	shift 7
	wanted "softofed $where: $label" || return 0
	for i in $(seq "$REPS"); do
		next_port
		log "softofed $where: $label run $i"
		local s=("$SOFTOFED" run -- "$prog" -d sof0 -F -p "$PORT" "$@")
		if ! pair perf "$secs" "$sns" "$cns" "${s[@]}" :: "${s[@]}" "$target"; then
			fail "softofed $where: $label" "run $i failed: $(tail -n 3 "$CLI_OUT" | tr '\n' ' ')"
			return 1
		fi
		case $prog in
		*_lat)
			v=$(grep -E "$LAT_RE" "$CLI_OUT" | tail -n 1 | awk '{ print $5 }')
			rec "softofed $where: $label" "us (typical, one-way)" "$v" \
				"$(cmdline "${s[@]}" :: "${s[@]}" "$target")"
			;;
		*_bw)
			line=$(grep -E "$BW_RE" "$CLI_OUT" | tail -n 1)
			v=$(echo "$line" | awk '{ print $4 }')
			mpps=$(echo "$line" | awk '{ print $5 }')
			rec "softofed $where: $label" "MiB/s" "$v" "$(cmdline "${s[@]}" :: "${s[@]}" "$target")"
			rec "softofed $where: $label (message rate)" "Mpps" "$mpps" \
				"$(cmdline "${s[@]}" :: "${s[@]}" "$target")"
			;;
		esac
		[ -n "$v" ] || fail "softofed $where: $label" "run $i printed no result line"
	done
}

# bw_iters SIZE: iterations for about 0.5-1 s of a bandwidth run
bw_iters() {
	local n
	case $1 in
	64) n=200000 ;;
	4096) n=100000 ;;
	65536) n=20000 ;;
	*) n=2000 ;;
	esac
	echo $((n / SCALE))
}

same_host_perftest() {
	local n=$((20000 / SCALE)) op size
	perf "same host" "ib_send_lat 2 B" 60 "" "" localhost ib_send_lat -s 2 -n "$n"
	perf "same host" "ib_write_lat 2 B" 60 "" "" localhost ib_write_lat -s 2 -n "$n"
	perf "same host" "ib_read_lat 2 B" 60 "" "" localhost ib_read_lat -s 2 -n "$n"
	perf "same host" "ib_atomic_lat 8 B" 60 "" "" localhost ib_atomic_lat -n "$n"
	perf "same host" "ib_send_lat -e 2 B" 60 "" "" localhost ib_send_lat -e -s 2 -n $((n / 4))
	for op in write read send; do
		for size in 64 4096 65536 1048576; do
			perf "same host" "ib_${op}_bw $(hsize $size)" 60 "" "" localhost \
				"ib_${op}_bw" -s "$size" -n "$(bw_iters $size)"
		done
	done
	perf "same host" "ib_write_bw -q 1 64 B" 60 "" "" localhost ib_write_bw -q 1 -s 64 -n "$(bw_iters 64)"
}

# ---------------------------------------------------------------------------
# kernel peers: sockperf (latency), iperf3 (bandwidth)

# sockperf_pp WHERE SRV_NS CLI_NS ADDR: UDP and TCP, blocking and busy-polled
sockperf_pp() {
	local where=$1 sns=$2 cns=$3 addr=$4 proto mode i v label s c
	for proto in udp tcp; do
		for mode in blocking busy-polled; do
			label="kernel $where: $proto ping-pong 14 B ($mode)"
			wanted "$label" || continue
			local opt=()
			[ $proto = tcp ] && opt+=(--tcp)
			[ $mode = busy-polled ] && opt+=(--nonblocked)
			for i in $(seq "$REPS"); do
				next_port
				log "$label run $i"
				s=(sockperf sr -i "$addr" -p "$PORT" "${opt[@]}")
				c=(sockperf pp -i "$addr" -p "$PORT" "${opt[@]}" -m 14 -t "$SECS")
				if ! STOP_SRV=1 pair sockperf $((SECS + 20)) "$sns" "$cns" "${s[@]}" :: "${c[@]}"; then
					fail "$label" "run $i failed: $(tail -n 3 "$CLI_OUT" | tr '\n' ' ')"
					break
				fi
				v=$(awk '/percentile 50.000/ { print $NF }' "$CLI_OUT" | tail -n 1)
				[ -n "$v" ] || fail "$label" "run $i: no median in sockperf's output: $(grep -v '^sockperf: ---' "$CLI_OUT" | tail -n 2 | tr '\n' ' ')"
				rec "$label" "us (median, one-way)" "$v" "$(cmdline "${s[@]}" :: "${c[@]}")"
			done
		done
	done
}

# iperf WHERE SRV_NS CLI_NS ADDR: one TCP stream; UDP unpaced (-b 0)
iperf() {
	local where=$1 sns=$2 cns=$3 addr=$4 proto i v label s c
	for proto in tcp udp; do
		label="kernel $where: $proto stream (iperf3)"
		[ "$proto" = udp ] && label="kernel $where: udp stream 8 KiB datagrams (iperf3 -u -b 0)"
		wanted "$label" || continue
		for i in $(seq "$REPS"); do
			next_port
			log "$label run $i"
			local opt=()
			[ $proto = udp ] && opt=(-u -b 0 -l 8192)
			s=(iperf3 -s -1 -p "$PORT" -B "$addr")
			c=(iperf3 -c "$addr" -p "$PORT" -t "$SECS" -J "${opt[@]}")
			if ! pair iperf3 $((SECS + 20)) "$sns" "$cns" "${s[@]}" :: "${c[@]}"; then
				fail "$label" "run $i failed: $(tail -n 3 "$CLI_OUT" | tr '\n' ' ')"
				break
			fi
			v=$(python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
e = j["end"]
s = e.get("sum_received") or e.get("sum")
print("%.1f" % (s["bits_per_second"] / 8 / 1048576))' "$CLI_OUT" 2>/dev/null)
			rec "$label" "MiB/s" "$v" "$(cmdline "${s[@]}" :: "${c[@]}")"
		done
	done
}

# ---------------------------------------------------------------------------
# UCX and libfabric peers (when their Debian packages are installed)

ucx_peers() {
	local tls tl i v label s c
	command -v ucx_perftest >/dev/null 2>&1 || {
		fail "UCX" "ucx_perftest is not installed (Debian: ucx-utils)"
		return 0
	}
	for tls in posix cma tcp; do
		tl=$tls
		[ "$tls" = cma ] && tl=posix,cma
		label="UCX same host: ucx_perftest tag_lat 2 B ($tl)"
		wanted "$label" || continue
		for i in $(seq "$REPS"); do
			next_port
			log "$label run $i"
			s=(env "UCX_TLS=$tl,self" ucx_perftest -p "$PORT")
			c=(env "UCX_TLS=$tl,self" ucx_perftest -p "$PORT" 127.0.0.1 -t tag_lat -s 2 -n $((100000 / SCALE)))
			if ! pair ucx 60 "" "" "${s[@]}" :: "${c[@]}"; then
				fail "$label" "run $i failed: $(tail -n 3 "$CLI_OUT" | tr '\n' ' ')"
				break
			fi
			# final line: "Final: iters typical avg overall ..." (latency in usec)
			v=$(awk '/^Final:/ { print $3 }' "$CLI_OUT" | tail -n 1)
			[ -n "$v" ] || {
				fail "$label" "no Final: line"
				break
			}
			rec "$label" "us (typical, one-way)" "$v" "$(cmdline "${s[@]}" :: "${c[@]}")"
		done
	done
}

fabric_peers() {
	local prov i v label s c
	command -v fi_pingpong >/dev/null 2>&1 || {
		fail "libfabric" "fi_pingpong is not installed (Debian: libfabric-bin)"
		return 0
	}
	for prov in shm tcp udp; do
		label="libfabric same host: fi_pingpong 2 B ($prov)"
		wanted "$label" || continue
		local ep=(-e rdm) # shm and tcp have no datagram endpoints
		[ "$prov" = udp ] && ep=(-e dgram)
		for i in $(seq "$REPS"); do
			next_port
			log "$label run $i"
			s=(fi_pingpong -p "$prov" "${ep[@]}" -B "$PORT" -S 2 -I $((20000 / SCALE)))
			c=(fi_pingpong -p "$prov" "${ep[@]}" -P "$PORT" -S 2 -I $((20000 / SCALE)) 127.0.0.1)
			if ! pair fabric 60 "" "" "${s[@]}" :: "${c[@]}"; then
				fail "$label" "run $i failed: $(tail -n 3 "$CLI_OUT" | tr '\n' ' ')"
				break
			fi
			# "bytes iters total time MB/sec usec/xfer Mxfers/sec": usec/xfer
			# is per one-way transfer
			v=$(awk '$1 ~ /^[0-9]+$/ && NF >= 7 { v = $(NF - 1) } END { print v }' "$CLI_OUT")
			[ -n "$v" ] || {
				fail "$label" "no result line"
				break
			}
			rec "$label" "us (average, one-way)" "$v" "$(cmdline "${s[@]}" :: "${c[@]}")"
		done
	done
}

# ---------------------------------------------------------------------------
# the phases

# runs inside the namespace of its own (sof_ns_run): softofed and the kernel
# and library peers on one host
phase_same_host() {
	sof_init
	same_host_perftest
	sockperf_pp "loopback" "" "" 127.0.0.1
	iperf "loopback" "" "" 127.0.0.1
	ucx_peers
	fabric_peers
}

phase_hosts() {
	local a b ip
	if [ "$(id -u)" -ne 0 ]; then
		fail "two hosts over veth" "needs root (ip netns add); not measured"
		return 0
	fi
	# set the hosts up only when BENCH_ONLY leaves one of their measurements
	local l any=""
	for l in "softofed veth: ib_send_lat 2 B" "softofed veth: ib_write_bw 1 MiB" \
		"kernel veth: "{udp,tcp}" ping-pong 14 B ("{blocking,busy-polled}")" \
		"kernel veth: tcp stream (iperf3)" "kernel veth: udp stream 8 KiB datagrams (iperf3 -u -b 0)"; do
		wanted "$l" && any=1
	done
	[ -n "$any" ] || return 0
	if ! sof_hosts_up 2 >"$SOF_TMP/hosts.out" 2>&1; then
		fail "two hosts over veth" "sof_hosts_up 2 failed: $(tail -n 2 "$SOF_TMP/hosts.out" | tr '\n' ' ')"
		return 0
	fi
	a=$(sof_host_ns a)
	b=$(sof_host_ns b)
	ip=$(sof_host_ip a)
	local ga gb
	ga=$(sof_host_gid a)
	gb=$(sof_host_gid b)
	# server in host a (its GID index), client in host b (its own)
	perf_hosts "ib_send_lat 2 B" 60 ib_send_lat -s 2 -n $((10000 / SCALE))
	perf_hosts "ib_write_bw 1 MiB" 120 ib_write_bw -s 1048576 --mtu 4096 -n $((1000 / SCALE))
	sockperf_pp "veth" "$a" "$b" "$ip"
	iperf "veth" "$a" "$b" "$ip"
	sof_hosts_down
}

# perf_hosts LABEL SECS PROG ARGS...: perf between host a (server) and b;
# the GID index differs per side, so this is perf with two argument lists
perf_hosts() {
	local label=$1 secs=$2 prog=$3 i v line
	shift 3
	wanted "softofed veth: $label" || return 0
	for i in $(seq "$REPS"); do
		next_port
		log "softofed veth: $label run $i"
		local s=("$SOFTOFED" run -- "$prog" -d sof0 -F -p "$PORT" -x "$ga" "$@")
		local c=("$SOFTOFED" run -- "$prog" -d sof0 -F -p "$PORT" -x "$gb" "$@" "$ip")
		if ! pair perfh "$secs" "$a" "$b" "${s[@]}" :: "${c[@]}"; then
			fail "softofed veth: $label" "run $i failed: $(tail -n 3 "$CLI_OUT" | tr '\n' ' ')"
			return 1
		fi
		case $prog in
		*_lat)
			v=$(grep -E "$LAT_RE" "$CLI_OUT" | tail -n 1 | awk '{ print $5 }')
			rec "softofed veth: $label" "us (typical, one-way)" "$v" "$(cmdline "${s[@]}" :: "${c[@]}") (in hosts a, b)"
			;;
		*)
			line=$(grep -E "$BW_RE" "$CLI_OUT" | tail -n 1)
			v=$(echo "$line" | awk '{ print $4 }')
			rec "softofed veth: $label" "MiB/s" "$v" "$(cmdline "${s[@]}" :: "${c[@]}") (in hosts a, b)"
			;;
		esac
		[ -n "$v" ] || fail "softofed veth: $label" "run $i printed no result line"
	done
}

main() {
	local host date t0
	t0=$(now_ms)
	sof_init
	if [ ! -x "$SOFTOFED" ]; then
		echo "bench: $SOFTOFED is missing: build first (make build)" >&2
		exit 1
	fi
	build_helpers || {
		echo "bench: cannot build the C helpers" >&2
		exit 1
	}
	host=$(hostname -s 2>/dev/null || hostname)
	date=$(date -u +%Y-%m-%d)
	mkdir -p "$RES_DIR"
	BENCH_OUT=${BENCH_OUT:-$RES_DIR/$date-$host.md}
	BENCH_TSV=$SOF_TMP/results.tsv
	export BENCH_TSV
	: >"$BENCH_TSV"
	: >"$BENCH_TSV.fail"
	physical
	# the same-host phase in a namespace of its own with its own daemon
	SOF_NS_NAME=bench SOF_NS_TIMEOUT=1800 sof_ns_run bash "$BENCH_DIR/run.sh" --phase-same-host ||
		fail "same host" "the namespace phase ended with an error"
	phase_hosts
	cp "$BENCH_TSV" "${BENCH_OUT%.md}.tsv"
	python3 "$BENCH_DIR/report.py" "$BENCH_TSV" "$BENCH_TSV.fail" \
		"$(((($(now_ms) - t0) + 500) / 1000))" "$REPS" "${QUICK:+quick}" >"$BENCH_OUT" || {
		echo "bench: report.py failed" >&2
		exit 1
	}
	echo "bench: report in ${BENCH_OUT#"$SOF_ROOT"/} (raw figures: ${BENCH_OUT%.md}.tsv)"
	sed -n '/^## Ratios/,/^## /p' "$BENCH_OUT"
}

if [ "${1:-}" = --phase-same-host ]; then
	phase_same_host
	exit 0
fi
main
