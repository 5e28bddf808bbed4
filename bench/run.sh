#!/bin/bash
# bench/run.sh — issue 5's side-by-side benchmark: it measures, it never
# fails on a slow machine; it writes a Markdown report with SVG plots.
#
# In one run, under the same pinning (server / one side on CPU BENCH_CPU_A,
# client / other side on BENCH_CPU_B; defaults 0 and 1):
#   physical limits   bench/memcpy_bw (single-thread memcpy, 4 KiB..64 MiB),
#                     bench/cacheline_pingpong (one-way cache-line transfer,
#                     one line and one line per direction);
#   same host         in a network namespace of its own with its own daemon
#                     (tests/lib.sh sof_ns_run):
#                     idle: the fresh daemon's resident memory and CPU over
#                     BENCH_IDLE_SECS (10), then ibv_rc_pingpong servers
#                     waiting for a client (busy-polling and -e) and one
#                     with -e connected to a client that never sends, their
#                     CPU and the daemon's over the same time;
#                     perftest ib_send_lat, ib_write_lat, ib_read_lat at
#                     LAT_SIZES (2 B .. 64 KiB), ib_atomic_lat (8 B),
#                     ib_send_lat -e; ib_write_bw, ib_read_bw, ib_send_bw at
#                     BW_SIZES (2 B .. 8 MiB), ib_write_bw -q 1 64 B;
#                     the kernel on that namespace's loopback: sockperf
#                     ping-pong UDP and TCP, blocking and busy-polled
#                     (--nonblocked), iperf3 TCP and UDP, and iperf3 TCP
#                     (1 and 4 streams) and sockperf TCP ping-pong over
#                     rsockets (librspreload); UCX
#                     ucx_perftest
#                     tag_lat (LAT_SIZES), tag_bw and ucp_put_bw (BW_SIZES)
#                     over posix, posix+cma and tcp; libfabric fi_pingpong
#                     at BW_SIZES over shm, tcp (rdm endpoints), udp
#                     (dgram, up to 512 B) and udp;ofi_rxd (rdm over udp:
#                     libfabric's reliability layer) — latency and
#                     bandwidth of the same runs;
#                     registration: bench/reg_mr, ibv_reg_mr/ibv_dereg_mr
#                     of 4 KiB, 1 MiB, 1 GiB touched and untouched beside
#                     memcpy and fault-in of the same memory;
#                     scale: bench/qp_scale, 10,000 connected RC QPs in one
#                     process (memory, set-up time, the daemon's memory);
#   two hosts         network namespaces joined by a veth pair
#                     (sof_hosts_up 2, needs root): ib_send_lat,
#                     ib_write_lat, ib_read_lat at VETH_SIZES up to 64 KiB,
#                     ib_atomic_lat (8 B), ib_send_lat -e; ib_write_bw,
#                     ib_read_bw, ib_send_bw at VETH_SIZES and 8 MiB
#                     (--mtu 4096); sockperf UDP/TCP and iperf3
#                     TCP/UDP (and TCP over rsockets), UCX tcp (tag_lat, tag_bw, ucp_put_bw) and
#                     fi_pingpong tcp, udp, udp;ofi_rxd over the same veth;
#                     ib_send_lat 2 B and ib_write_bw 1 MiB also through
#                     the daemons' engine (SOFTOFED_ENGINE=daemon);
#                     then joined through tests/progs/netwire
#                     (sof_hosts_up 2 wire; this kernel has no sch_netem):
#                     ib_write_bw 1 MiB loss-free and with 1 % of the frames
#                     host b sends (the data) lost;
#   where time goes   perf (cpu-clock samples, call graphs; perf stat for
#                     system calls and context switches) of the client and
#                     the daemons on three paths: same-host ib_send_lat,
#                     veth ib_send_lat, veth ib_write_bw 1 MiB.
# The figures of the ratios are taken in BENCH_REPS rounds (default 5):
# each once per round, both sides of every ratio in the same round, the
# order reversed every other round (`rounds`); the other points of the
# sweeps run BENCH_SWEEP_REPS times (default 3). The report gives the
# median, min and max of every figure, the ratios issue 5 names as medians
# of the per-round ratios, the command of each figure, and plots latency
# and bandwidth versus size (SVG).
#
# Every process runs under `timeout` and is stopped by its PID; namespaces
# created here are deleted here (tests/lib.sh sof_hosts_down).
#
# Environment:
#   BENCH_QUICK=1       about five minutes (a full run: about 13): fewer sizes,
#                       3 runs of the ratio figures, 1 of the other sweep
#                       points, a fifth of the iterations
#   BENCH_REPS=N        runs per ratio figure
#   BENCH_SWEEP_REPS=N  runs per other point of a sweep
#   BENCH_ONLY=REGEX    only the measurements whose label matches (grep -E)
#   BENCH_OUT=FILE      the report (default bench/results/DATE-HOST.md, or
#                       DATE-HHMM-HOST.md when that exists; the raw figures
#                       beside it as .tsv, the plots as -*.svg)
#   BENCH_BUILD=DIR     the build to measure (default build; e.g. a private
#                       /tmp/build-bench, so others' rebuilds of build/ do
#                       not race with the run); SOF_BUILD is the same
#   BENCH_IDLE_SECS=N   the idle window (default 10)
#   BENCH_QPS=N         QPs of the scale test (default 10000)
#   BENCH_PROFILE=0     leave out "where time goes"
#   BENCH_CPU_A, BENCH_CPU_B   the two cores
#
#   libraries         issue 17's ratios (bench/libs.sh): Open MPI over UCX
#                     on softofed against Open MPI over TCP, UCX rc_verbs
#                     against tcp, libfabric verbs;ofi_rxm against
#                     tcp;ofi_rxm between two hosts; UCX rc_verbs against
#                     posix and cma on one host.
#   issue 19: fabric  bench/fabric_data.sh: ib_send_lat 2 B by LID through
#                     one and three switches of the software fabric,
#                     ib_write_bw 1 MiB through three, beside RoCEv2 on the
#                     same veths; the ratios sofib0 / sof0 (root: netns).
#   issue 20: sm      bench/sm.sh: start to SUBNET UP of softofed-sm against
#                     OpenSM on our fabric and ibsim (ft128/648/1152; the
#                     k=24 and k=36 3-level trees on our fabric), route
#                     balance, SA PathRecord rate, reroute time; the
#                     ratios ours / OpenSM (BENCH_SM_REPS rounds, default
#                     3, the start times 5; about 6 minutes); issue 19's
#                     OpenSM on our fabric / on ibsim (target <= 1).
#   issue 21: ipoib   bench/ipoib.sh: iperf3 TCP and ping over ib0 in
#                     datagram and connected mode (IB MTU 2048 and 4096)
#                     beside the same over the plain veth; the ratios
#                     (BENCH_IPOIB_REPS rounds, default 3; about 5 minutes).
# Usage: bench/run.sh            (make bench: installs, builds, runs this)
#        bench/run.sh --section libs   only issue 17's ratios (bench/libs.sh)
#        bench/run.sh --section fabric only issue 19's (bench/fabric_data.sh)
#        bench/run.sh --section sm     only issue 20's (bench/sm.sh)
#        bench/run.sh --section ipoib  only issue 21's (bench/ipoib.sh)
set -u
BENCH_DIR=$(cd "$(dirname "$0")" && pwd)
[ -n "${BENCH_BUILD:-}" ] && export SOF_BUILD=$BENCH_BUILD
# shellcheck source=tests/lib.sh
. "$BENCH_DIR/../tests/lib.sh"
# shellcheck source=bench/libs.sh
. "$BENCH_DIR/libs.sh"

QUICK=${BENCH_QUICK:-}
if [ -n "$QUICK" ]; then
	REPS=${BENCH_REPS:-3}
	SWEEP_REPS=${BENCH_SWEEP_REPS:-1}
	SCALE=5 # iteration counts divided by this
	SECS=1  # sockperf / iperf3 seconds per run
	IDLE_SECS=${BENCH_IDLE_SECS:-5}
	BW_SIZES="2 64 4096 65536 1048576 8388608"
	LAT_SIZES="2 64 4096 65536"
	VETH_SIZES="2 4096 1048576"
else
	REPS=${BENCH_REPS:-5}
	SWEEP_REPS=${BENCH_SWEEP_REPS:-3}
	SCALE=1
	SECS=2
	IDLE_SECS=${BENCH_IDLE_SECS:-10}
	BW_SIZES="2 8 64 512 4096 32768 262144 1048576 8388608"
	LAT_SIZES="2 8 64 512 4096 32768 65536"
	VETH_SIZES="2 64 4096 65536 1048576"
fi
QPS=${BENCH_QPS:-10000}
PROFILE=${BENCH_PROFILE:-1}
CPU_A=${BENCH_CPU_A:-0}
CPU_B=${BENCH_CPU_B:-1}
ONLY=${BENCH_ONLY:-}
BIN=$SOF_BUILD_DIR/bench
RES_DIR=$BENCH_DIR/results
PORT=${BENCH_PORT:-19900}
PENV=""
MIB=1048576

# the perftest result lines: latency (9 columns, t_typical 5th), bandwidth
# (5 columns: bytes iterations peak average[MB/sec] Mpps)
LAT_RE='^[[:space:]]*[0-9]+[[:space:]]+[0-9]+([[:space:]]+[0-9.]+){7}'
BW_RE='^[[:space:]]*[0-9]+[[:space:]]+[0-9]+([[:space:]]+[0-9.]+){3}[[:space:]]*$'

# What rec writes besides label, unit, value and command, when set: the
# plot a figure belongs to (lat-same, bw-same, lat-veth, bw-veth), its
# series in that plot and its message size in bytes. Callers set them for
# one call: PLOT=bw-same SERIES='softofed ib_write_bw' BYTES=64 ptest ...
PLOT="" SERIES="" BYTES=""
# runs of the next measurement (1 in a ratio round, REPS by default; sweeps SWEEP_REPS)
NREPS=""
# the round a figure was taken in (rounds), the 8th column of the results
ROUND=""

log() {
	echo "bench: [${SECONDS}s] $*" >&2
}

# wanted LABEL: true unless BENCH_ONLY excludes it
wanted() {
	[ -z "$ONLY" ] || echo "$1" | grep -q -E -- "$ONLY"
}

# rec LABEL UNIT VALUE COMMAND: one run's figure, into the results file
rec() {
	[ -n "$3" ] || return 0
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$PLOT" "$SERIES" "$BYTES" \
		"$ROUND" >>"$BENCH_TSV"
}

# fail LABEL WHY: a measurement that did not run (reported, not fatal)
fail() {
	printf '%s\t%s\n' "$1" "$2" >>"$BENCH_TSV.fail"
	log "$1: $2"
}

# note KEY TEXT: a fact for the report (limits, what a figure means)
note() {
	printf '%s\t%s\n' "$1" "$2" >>"$BENCH_TSV.note"
}

# next_port: a fresh TCP/UDP port per server, so no run waits on TIME_WAIT
next_port() {
	PORT=$((PORT + 1))
}

# reps: the runs of the measurement at hand
reps() {
	seq "${NREPS:-$REPS}"
}

# clamp V LO HI
clamp() {
	local v=$1
	[ "$v" -lt "$2" ] && v=$2
	[ "$v" -gt "$3" ] && v=$3
	echo "$v"
}

# iters BUDGET SIZE LO HI: BUDGET bytes worth of SIZE messages, within LO..HI,
# divided by SCALE (never below LO / SCALE, at least 5)
iters() {
	local n
	n=$(clamp $(($1 / $2)) "$3" "$4")
	n=$((n / SCALE))
	[ "$n" -lt 5 ] && n=5
	echo "$n"
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
# CLI_WRAP (an array name's words, e.g. a profiler) goes before the client.
# Sets CLI_OUT and SRV_OUT; returns the client's status.
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
	SRV_OUT=$(sof_out "$name.srv")
	# NO_PORT=1: the server listens on no kernel port (an rsocket): give
	# it a second
	if [ -n "${NO_PORT:-}" ]; then
		sleep 1
		sof_alive "$name.srv" || return 1
	elif ! wait_port "$PORT" 20 "$name.srv" "$sns"; then
		sof_kill "$name.srv"
		CLI_OUT=$SRV_OUT
		return 1
	fi
	# shellcheck disable=SC2086 # CLI_WRAP is words
	sof_bg "$name.cli" "$secs" "${cpre[@]}" ${CLI_WRAP:-} taskset -c "$CPU_B" "${cli[@]}"
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
		case $a in *[\;\ \&\|]*) a="'$a'" ;; esac # a shell word again
		if [ $side = s ]; then s="$s $a"; else c="$c $a"; fi
	done
	echo "taskset -c $CPU_A${s} & taskset -c $CPU_B${c}"
}

# hsize BYTES: 64 B, 4 KiB, 1 MiB
hsize() {
	local n=$1
	if [ "$n" -ge $MIB ] && [ $((n % MIB)) -eq 0 ]; then
		echo "$((n / MIB)) MiB"
	elif [ "$n" -ge 1024 ] && [ $((n % 1024)) -eq 0 ]; then
		echo "$((n / 1024)) KiB"
	else
		echo "$n B"
	fi
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
	# fi_stream links Debian's libfabric (libfabric-dev); without it the
	# libfabric streams are reported not measured
	if [ ! -x "$BIN/fi_stream" ] || [ "$BENCH_DIR/fi_stream.c" -nt "$BIN/fi_stream" ]; then
		cc -O2 -g -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
			-o "$BIN/fi_stream" "$BENCH_DIR/fi_stream.c" -lfabric ||
			rm -f "$BIN/fi_stream"
	fi
	# reg_mr and qp_scale link softofed's libibverbs (and run through softofed run)
	if [ ! -x "$BIN/reg_mr" ] || [ "$BENCH_DIR/reg_mr.c" -nt "$BIN/reg_mr" ] ||
		[ "$SOF_BUILD_DIR/lib/libibverbs.so" -nt "$BIN/reg_mr" ]; then
		cc -O2 -g -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
			-o "$BIN/reg_mr" "$BENCH_DIR/reg_mr.c" -L"$SOF_BUILD_DIR/lib" -libverbs || return 1
	fi
	if [ ! -x "$BIN/qp_scale" ] || [ "$BENCH_DIR/qp_scale.c" -nt "$BIN/qp_scale" ] ||
		[ "$SOF_BUILD_DIR/lib/libibverbs.so" -nt "$BIN/qp_scale" ]; then
		cc -O2 -g -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
			-o "$BIN/qp_scale" "$BENCH_DIR/qp_scale.c" \
			-L"$SOF_BUILD_DIR/lib" -libverbs || return 1
	fi
}

physical() {
	local i out size v ms=200 rounds=2000000
	[ -n "$QUICK" ] && ms=50 rounds=500000
	if wanted "physical: memcpy"; then
		out=$SOF_TMP/memcpy.out
		for i in $(reps); do
			log "memcpy run $i"
			if ! timeout 120 taskset -c "$CPU_B" "$BIN/memcpy_bw" "$ms" >"$out" 2>&1; then
				fail "physical: memcpy" "memcpy_bw failed: $(tail -n 1 "$out")"
				break
			fi
			while read -r size v; do
				PLOT=bw-same SERIES="memcpy (one thread)" BYTES=$size \
					rec "physical: memcpy $(hsize "$size")" MiB/s "$v" \
					"taskset -c $CPU_B $(rel "$BIN")/memcpy_bw $ms"
			done <"$out"
		done
	fi
	if wanted "physical: cache-line ping-pong"; then
		for i in $(reps); do
			log "cache-line ping-pong run $i"
			v=$(timeout 120 "$BIN/cacheline_pingpong" "$CPU_A" "$CPU_B" "$rounds" | awk '$1 == "oneway_ns" { print $2 / 1000 }')
			[ -n "$v" ] || {
				fail "physical: cache-line ping-pong" "cacheline_pingpong failed"
				break
			}
			rec "physical: cache-line ping-pong one-way" us "$v" \
				"$(rel "$BIN")/cacheline_pingpong $CPU_A $CPU_B $rounds"
		done
	fi
	# each side writes a line of its own, as each side of a queue pair
	# writes into its peer's receive queue (bench/cacheline_pingpong.c)
	if wanted "physical: two-line ping-pong"; then
		for i in $(reps); do
			log "two-line ping-pong run $i"
			v=$(timeout 120 "$BIN/cacheline_pingpong" "$CPU_A" "$CPU_B" "$rounds" 2 |
				awk '$1 == "oneway_ns" { print $2 / 1000 }')
			[ -n "$v" ] || {
				fail "physical: two-line ping-pong" "cacheline_pingpong failed"
				break
			}
			rec "physical: two-line ping-pong one-way" us "$v" \
				"$(rel "$BIN")/cacheline_pingpong $CPU_A $CPU_B $rounds 2"
		done
	fi
}

# rel PATH: PATH relative to the source tree when inside it
rel() {
	echo "${1#"$SOF_ROOT"/}"
}

# ---------------------------------------------------------------------------
# perftest through softofed

# ptest WHERE LABEL SECS SRV_NS CLI_NS SARGS CARGS TARGET PROG ARGS...: the
# runs of one perftest measurement (NREPS); WHERE is "same host" or "veth";
# SARGS / CARGS are extra words of server / client (e.g. "-x 1"); latency
# tests record t_typical, bandwidth tests MiB/s and Mpps.
# PENV: words before both commands (env VAR=...), empty by default
ptest() {
	local where=$1 label=$2 secs=$3 sns=$4 cns=$5 sargs=$6 cargs=$7 target=$8 prog=$9 i v mpps line
	shift 9
	wanted "softofed $where: $label" || return 0
	for i in $(reps); do
		next_port
		log "softofed $where: $label run $i"
		# shellcheck disable=SC2206 # SARGS / CARGS are words
		local s=($PENV "$SOFTOFED" run -- "$prog" -d sof0 -F -p "$PORT" $sargs "$@")
		# shellcheck disable=SC2206
		local c=($PENV "$SOFTOFED" run -- "$prog" -d sof0 -F -p "$PORT" $cargs "$@" "$target")
		local cmd
		if ! pair perf "$secs" "$sns" "$cns" "${s[@]}" :: "${c[@]}"; then
			fail "softofed $where: $label" "run $i failed: $(tail -n 3 "$CLI_OUT" | tr '\n' ' ')"
			return 1
		fi
		cmd="$(cmdline "${s[@]}" :: "${c[@]}")"
		[ "$where" = veth ] && cmd="$cmd (server in host a, client in host b)"
		case $prog in
		*_lat)
			line=$(grep -E "$LAT_RE" "$CLI_OUT" | tail -n 1)
			v=$(echo "$line" | awk '{ print $5 }')
			# READ and atomics: perftest reports the round trip
			case $prog in
			ib_read_lat | ib_atomic_lat) rec "softofed $where: $label" "us (typical, round trip)" "$v" "$cmd" ;;
			*) rec "softofed $where: $label" "us (typical, one-way)" "$v" "$cmd" ;;
			esac
			# the average beside it: a tail of milliseconds shows there
			PLOT="" rec "softofed $where: $label (t_avg)" "us (average)" \
				"$(echo "$line" | awk '{ print $6 }')" "$cmd"
			;;
		*_bw)
			line=$(grep -E "$BW_RE" "$CLI_OUT" | tail -n 1)
			v=$(echo "$line" | awk '{ print $4 }')
			mpps=$(echo "$line" | awk '{ print $5 }')
			rec "softofed $where: $label" "MiB/s" "$v" "$cmd"
			PLOT="" rec "softofed $where: $label (message rate)" "Mpps" "$mpps" "$cmd"
			;;
		esac
		[ -n "$v" ] || fail "softofed $where: $label" "run $i printed no result line"
	done
}

# perftest_sweeps WHERE SNS CNS SARGS CARGS TARGET LAT_SIZES BW_SIZES BW_ARGS TAKEN:
# ib_{send,write,read}_lat at LAT_SIZES and ib_{write,read,send}_bw at
# BW_SIZES (with BW_ARGS), SWEEP_REPS runs a point, into the plots lat-P
# and bw-P (P: same or veth); TAKEN lists the points the rounds took
# already ("send_lat:2 write_bw:1048576 ...")
perftest_sweeps() {
	local where=$1 sns=$2 cns=$3 sargs=$4 cargs=$5 target=$6 lsizes=$7 bsizes=$8 bargs=$9 taken=${10}
	local p=same op size n
	[ "$where" = veth ] && p=veth
	for op in send write read; do
		for size in $lsizes; do
			case " $taken " in *" ${op}_lat:$size "*) continue ;; esac
			n=$(iters $((256 * MIB)) "$size" 2000 20000)
			[ "$where" = veth ] && n=$(iters $((16 * MIB)) "$size" 1000 10000)
			NREPS=$SWEEP_REPS PLOT=lat-$p SERIES="softofed ib_${op}_lat" BYTES=$size \
				ptest "$where" "ib_${op}_lat $(hsize "$size")" 60 "$sns" "$cns" "$sargs" "$cargs" \
				"$target" "ib_${op}_lat" -s "$size" -n "$n"
		done
	done
	for op in write read send; do
		for size in $bsizes; do
			case " $taken " in *" ${op}_bw:$size "*) continue ;; esac
			n=$(iters $((2048 * MIB)) "$size" 200 200000)
			[ "$where" = veth ] && n=$(iters $((256 * MIB)) "$size" 100 20000)
			# shellcheck disable=SC2086 # BW_ARGS are words
			NREPS=$SWEEP_REPS PLOT=bw-$p SERIES="softofed ib_${op}_bw" BYTES=$size \
				ptest "$where" "ib_${op}_bw $(hsize "$size")" 120 "$sns" "$cns" "$sargs" "$cargs" \
				"$target" "ib_${op}_bw" -s "$size" $bargs -n "$n"
		done
	done
}

same_host_perftest() {
	perftest_sweeps "same host" "" "" "" "" localhost "$LAT_SIZES" "$BW_SIZES" "" \
		"send_lat:2 write_lat:2 read_lat:2 write_bw:$MIB read_bw:$MIB send_bw:$MIB"
}

# ---------------------------------------------------------------------------
# kernel peers: sockperf (latency), iperf3 (bandwidth)

# ---------------------------------------------------------------------------
# Ratio rounds. Every figure that enters one of issue 5's ratios is taken
# once per round, REPS rounds, with the two sides of each ratio minutes
# apart at most; the order of the measurements is reversed every other
# round (A B .. B A), so that a drift of the machine falls on both sides.
# The two vCPUs of a virtual machine move between the two threads of one
# core and two cores within seconds, which moves a small latency threefold:
# a ratio of two medians taken ten minutes apart compares two machines.
# report.py takes the median of the per-round ratios.

# rounds NAME...: REPS rounds of the measurement functions NAME
rounds() {
	local r i fns=("$@")
	for r in $(seq "$REPS"); do
		log "ratio round $r of $REPS"
		if [ $((r % 2)) = 1 ]; then
			for ((i = 0; i < ${#fns[@]}; i++)); do NREPS=1 ROUND=$r "${fns[i]}"; done
		else
			for ((i = ${#fns[@]} - 1; i >= 0; i--)); do NREPS=1 ROUND=$r "${fns[i]}"; done
		fi
	done
}

# the same-host figures of the ratios
r_lat() {
	local op=$1 size=$2
	local n
	n=$(iters $((256 * MIB)) "$size" 2000 20000)
	PLOT=lat-same SERIES="softofed ib_${op}_lat" BYTES=$size \
		ptest "same host" "ib_${op}_lat $(hsize "$size")" 60 "" "" "" "" localhost \
		"ib_${op}_lat" -s "$size" -n "$n"
}
r_bw() {
	local op=$1
	PLOT=bw-same SERIES="softofed ib_${op}_bw" BYTES=$MIB \
		ptest "same host" "ib_${op}_bw 1 MiB" 60 "" "" "" "" localhost \
		"ib_${op}_bw" -s $MIB -n "$(iters $((8192 * MIB / SCALE)) $MIB 200 200000)"
}
r_same_send_lat() { r_lat send 2; }
r_same_write_lat() { r_lat write 2; }
r_same_read_lat() { r_lat read 2; }
r_same_atomic_lat() { ptest "same host" "ib_atomic_lat 8 B" 60 "" "" "" "" localhost ib_atomic_lat -n $((20000 / SCALE)); }
r_same_event_lat() { ptest "same host" "ib_send_lat -e 2 B" 60 "" "" "" "" localhost ib_send_lat -e -s 2 -n $((5000 / SCALE)); }
r_same_write_bw() { r_bw write; }
r_same_read_bw() { r_bw read; }
r_same_send_bw() { r_bw send; }
r_same_rate() {
	# 2,000,000 messages: a fifth of a second at 10 million a second
	ptest "same host" "ib_write_bw -q 1 64 B" 60 "" "" "" "" localhost ib_write_bw -q 1 -s 64 \
		-n $((2000000 / SCALE))
}
r_same_fi_shm() {
	fi_run "same host" shm rdm "" "" 127.0.0.1 "" "2 $MIB" $((256 * MIB)) 20000 lat-same bw-same
	fi_stream_run "same host" shm "" "" 127.0.0.1 "" "$MIB" $((1024 * MIB)) bw-same
}
r_same_ucx() { ucx_same_host ratio; }
r_same_kernel() {
	sockperf_pp "loopback" "" "" 127.0.0.1
	iperf "loopback" "" "" 127.0.0.1 bw-same
	rs_iperf "loopback" "" "" 127.0.0.1 bw-same
	rs_iperf "loopback" "" "" 127.0.0.1 "" 4
	rs_sockperf "loopback" "" "" 127.0.0.1
	rs_sockperf "loopback" "" "" 127.0.0.1 udp
	sdp_iperf "loopback" "" "" 127.0.0.1
	sdp_iperf "loopback" "" "" 127.0.0.1 4
	sdp_sockperf "loopback" "" "" 127.0.0.1
}

same_host_rounds() {
	rounds physical r_same_send_lat r_same_fi_shm r_same_write_lat r_same_read_lat \
		r_same_atomic_lat r_same_event_lat r_same_kernel r_same_ucx r_same_write_bw \
		r_same_read_bw r_same_send_bw r_same_rate
}

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
			for i in $(reps); do
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

# iperf WHERE SRV_NS CLI_NS ADDR PLOT: one TCP stream; UDP unpaced (-b 0);
# the TCP stream goes into PLOT at iperf3's write size (128 KiB)
iperf() {
	local where=$1 sns=$2 cns=$3 addr=$4 plot=$5 protos=${6:-tcp udp} proto i v label s c
	for proto in $protos; do
		label="kernel $where: $proto stream (iperf3)"
		[ "$proto" = udp ] && label="kernel $where: udp stream 8 KiB datagrams (iperf3 -u -b 0)"
		wanted "$label" || continue
		for i in $(reps); do
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
			if [ "$proto" = tcp ]; then
				PLOT=$plot SERIES="kernel TCP stream (iperf3, 128 KiB writes)" BYTES=131072 \
					rec "$label" "MiB/s" "$v" "$(cmdline "${s[@]}" :: "${c[@]}")"
			else
				rec "$label" "MiB/s" "$v" "$(cmdline "${s[@]}" :: "${c[@]}")"
			fi
		done
	done
}

# rs_sockperf WHERE SRV_NS CLI_NS ADDR [udp]: sockperf TCP (or UDP: datagram
# rsockets) ping-pong 14 B over rsockets (librspreload on our librdmacm,
# issue 22); --mps bounds the rate under sockperf's table of send times
# (600,000 round trips a second by default: "_seqN > m_maxSequenceNo")
rs_sockperf() {
	local where=$1 sns=$2 cns=$3 addr=$4 proto=${5:-tcp} i v label s c opt=(--tcp)
	local pre=("$SOFTOFED" run -- env LD_PRELOAD=/usr/lib/x86_64-linux-gnu/rsocket/librspreload.so)
	[ "$proto" = udp ] && opt=()
	label="rsockets $where: $proto ping-pong 14 B (sockperf over librspreload)"
	wanted "$label" || return 0
	for i in $(reps); do
		next_port
		log "$label run $i"
		s=("${pre[@]}" sockperf sr -i "$addr" -p "$PORT" "${opt[@]}")
		c=("${pre[@]}" sockperf pp -i "$addr" -p "$PORT" "${opt[@]}" -m 14 -t "$SECS" --mps 1500000)
		if ! NO_PORT=1 STOP_SRV=1 pair sockperf $((SECS + 30)) "$sns" "$cns" "${s[@]}" :: "${c[@]}"; then
			fail "$label" "run $i failed: $(tail -n 3 "$CLI_OUT" | tr '\n' ' ')"
			break
		fi
		v=$(awk '/percentile 50.000/ { print $NF }' "$CLI_OUT" | tail -n 1)
		rec "$label" "us (median, one-way)" "$v" "$(cmdline "${s[@]}" :: "${c[@]}")"
	done
}

# rs_iperf WHERE SRV_NS CLI_NS ADDR PLOT [STREAMS]: iperf3 TCP over rsockets
# (Debian's librspreload.so on our librdmacm, issue 22), beside the kernel's
rs_iperf() {
	local where=$1 sns=$2 cns=$3 addr=$4 plot=$5 np=${6:-1} i v label s c
	local pre=("$SOFTOFED" run -- env LD_PRELOAD=/usr/lib/x86_64-linux-gnu/rsocket/librspreload.so)
	label="rsockets $where: tcp stream (iperf3 -P $np over librspreload)"
	wanted "$label" || return 0
	for i in $(reps); do
		next_port
		log "$label run $i"
		s=("${pre[@]}" iperf3 -s -1 -p "$PORT" -B "$addr")
		c=("${pre[@]}" iperf3 -c "$addr" -p "$PORT" -t "$SECS" -P "$np" -J)
		if ! NO_PORT=1 pair iperf3 $((SECS + 30)) "$sns" "$cns" "${s[@]}" :: "${c[@]}"; then
			fail "$label" "run $i failed: $(tail -n 3 "$CLI_OUT" | tr '\n' ' ')"
			break
		fi
		v=$(python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
print("%.1f" % (j["end"]["sum_received"]["bits_per_second"] / 8 / 1048576))' "$CLI_OUT" 2>/dev/null)
		if [ "$np" = 1 ]; then
			PLOT=$plot SERIES="rsockets TCP stream (iperf3 over librspreload)" BYTES=131072 \
				rec "$label" "MiB/s" "$v" "$(cmdline "${s[@]}" :: "${c[@]}")"
		else
			rec "$label" "MiB/s" "$v" "$(cmdline "${s[@]}" :: "${c[@]}")"
		fi
	done
}

# sdp_pre: the words that run a program over SDP (our libsdp.so, issue 22
# item 2) with every server and client ruled `use sdp`
sdp_pre() {
	printf 'use sdp server * *:*\nuse sdp client * *:*\n' >"$SOF_TMP/libsdp.conf"
	SDP_PRE=("$SOFTOFED" run -- env LD_PRELOAD="$SOF_BUILD_DIR/lib/libsdp.so"
		LIBSDP_CONFIG_FILE="$SOF_TMP/libsdp.conf")
}

# sdp_sockperf WHERE SRV_NS CLI_NS ADDR: sockperf TCP ping-pong 14 B over SDP
sdp_sockperf() {
	local where=$1 sns=$2 cns=$3 addr=$4 i v label s c
	label="SDP $where: tcp ping-pong 14 B (sockperf over libsdp)"
	wanted "$label" || return 0
	sdp_pre
	for i in $(reps); do
		next_port
		log "$label run $i"
		s=("${SDP_PRE[@]}" sockperf sr -i "$addr" -p "$PORT" --tcp)
		c=("${SDP_PRE[@]}" sockperf pp -i "$addr" -p "$PORT" --tcp -m 14 -t "$SECS")
		if ! NO_PORT=1 STOP_SRV=1 pair sockperf $((SECS + 30)) "$sns" "$cns" "${s[@]}" :: "${c[@]}"; then
			fail "$label" "run $i failed: $(tail -n 3 "$CLI_OUT" | tr '\n' ' ')"
			break
		fi
		v=$(awk '/percentile 50.000/ { print $NF }' "$CLI_OUT" | tail -n 1)
		rec "$label" "us (median, one-way)" "$v" "$(cmdline "${s[@]}" :: "${c[@]}")"
	done
}

# sdp_iperf WHERE SRV_NS CLI_NS ADDR [STREAMS]: iperf3 TCP over SDP
sdp_iperf() {
	local where=$1 sns=$2 cns=$3 addr=$4 np=${5:-1} i v label s c
	label="SDP $where: tcp stream (iperf3 -P $np over libsdp)"
	wanted "$label" || return 0
	sdp_pre
	for i in $(reps); do
		next_port
		log "$label run $i"
		s=("${SDP_PRE[@]}" iperf3 -s -1 -p "$PORT" -B "$addr")
		c=("${SDP_PRE[@]}" iperf3 -c "$addr" -p "$PORT" -t "$SECS" -P "$np" -J)
		if ! NO_PORT=1 pair iperf3 $((SECS + 30)) "$sns" "$cns" "${s[@]}" :: "${c[@]}"; then
			fail "$label" "run $i failed: $(tail -n 3 "$CLI_OUT" | tr '\n' ' ')"
			break
		fi
		v=$(python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
print("%.1f" % (j["end"]["sum_received"]["bits_per_second"] / 8 / 1048576))' "$CLI_OUT" 2>/dev/null)
		rec "$label" "MiB/s" "$v" "$(cmdline "${s[@]}" :: "${c[@]}")"
	done
}

# ---------------------------------------------------------------------------
# UCX: one ucx_perftest connection runs a batch file of tests (-b); each
# line "NAME -t TEST -s SIZE -n N -w W", NAME = TEST-SIZE

# ucx_batch FILE BUDGET LAT_SIZES BW_SIZES: the batch; BUDGET bytes per
# bandwidth test (latency tests: a quarter of it)
ucx_batch() {
	local f=$1 budget=$2 lsz=$3 bsz=$4 s n t
	: >"$f"
	for s in $lsz; do
		n=$(iters $((budget / 4)) "$s" 1000 20000)
		echo "tag_lat-$s -t tag_lat -s $s -n $n -w $(clamp $((n / 10)) 10 1000)" >>"$f"
	done
	for t in tag_bw ucp_put_bw; do
		for s in $bsz; do
			n=$(iters "$budget" "$s" 50 200000)
			echo "$t-$s -t $t -s $s -n $n -w $(clamp $((n / 10)) 5 1000)" >>"$f"
		done
	done
}

# ucx_run WHERE TL TLNAME SRV_NS CLI_NS ADDR BUDGET LAT_SIZES BW_SIZES
# LAT_PLOT BW_PLOT: the batch over UCX_TLS=TL,self, NREPS times; labels
# "UCX WHERE: ucx_perftest TEST SIZE (TLNAME)"
ucx_run() {
	local where=$1 tl=$2 tn=$3 sns=$4 cns=$5 addr=$6 budget=$7 lsz=$8 bsz=$9 lplot=${10} bplot=${11}
	local i f s c name typ bw t size label line
	command -v ucx_perftest >/dev/null 2>&1 || {
		fail "UCX" "ucx_perftest is not installed (Debian: ucx-utils)"
		return 0
	}
	f=$SOF_TMP/ucx-$where-$tn-${NREPS:-$REPS}.batch
	f=${f// /_}
	ucx_batch "$f" "$budget" "$lsz" "$bsz"
	# only when BENCH_ONLY leaves one of its labels
	local any=""
	while read -r name _; do
		wanted "UCX $where: ucx_perftest ${name%-*} $(hsize "${name##*-}") ($tn)" && any=1
	done <"$f"
	[ -n "$any" ] || return 0
	for i in $(reps); do
		next_port
		log "UCX $where ($tn) batch run $i"
		local env=(env "UCX_TLS=$tl,self")
		if [ -n "${UCX_DEV:-}" ]; then
			env+=("UCX_NET_DEVICES=$UCX_DEV")
		elif [ -n "$sns" ]; then
			env+=(UCX_NET_DEVICES=veth0)
		fi
		# shellcheck disable=SC2206 # RUN_WRAP is words (softofed run --)
		s=(${RUN_WRAP:-} "${env[@]}" ucx_perftest -p "$PORT" -b "$f")
		# shellcheck disable=SC2206
		c=(${RUN_WRAP:-} "${env[@]}" ucx_perftest -p "$PORT" "$addr" -b "$f" -f)
		if ! pair ucx 240 "$sns" "$cns" "${s[@]}" :: "${c[@]}"; then
			fail "UCX $where: ucx_perftest ($tn)" "run $i failed: $(tail -n 3 "$CLI_OUT" | tr '\n' ' ')"
		fi
		# result rows: NAME iters typical avg overall bw_avg bw_overall mr mr
		while read -r name _ typ _ _ _ bw _; do
			t=${name%-*}
			size=${name##*-}
			label="UCX $where: ucx_perftest $t $(hsize "$size") ($tn)"
			wanted "$label" || continue
			line="$(cmdline "${s[@]}" :: "${c[@]}") with $(rel "$f") holding: $(grep "^$name " "$f")"
			case $t in
			tag_lat)
				PLOT=$lplot SERIES="UCX tag_lat $tn" BYTES=$size \
					rec "$label" "us (typical, one-way)" "$typ" "$line"
				;;
			*)
				PLOT=$bplot SERIES="UCX $t $tn" BYTES=$size rec "$label" "MiB/s" "$bw" "$line"
				;;
			esac
		done < <(awk '$1 ~ /^(tag_lat|tag_bw|ucp_put_bw)-[0-9]+$/ && NF >= 9' "$CLI_OUT")
	done
}

# ucx_same_host ratio|sweep: UCX over posix, posix+cma and tcp; ratio: the
# 2 B latency and 1 MiB bandwidth (in the rounds; posix moves as many bytes
# at 1 MiB as ib_write_bw's, r_bw), sweep: the other sizes
ucx_same_host() {
	local tls tl budget
	for tls in posix cma tcp; do
		tl=$tls budget=$((1024 * MIB))
		[ "$tls" = cma ] && tl=posix,cma
		[ "$1" = ratio ] && budget=$((8192 * MIB / SCALE))
		[ "$tls" = tcp ] && budget=$((64 * MIB))
		if [ "$1" = ratio ]; then
			ucx_run "same host" "$tl" "$tl" "" "" 127.0.0.1 "$budget" "2" "$MIB" lat-same bw-same
		else
			NREPS=$SWEEP_REPS ucx_run "same host" "$tl" "$tl" "" "" 127.0.0.1 "$budget" \
				"$(echo "$LAT_SIZES" | sed 's/^2 //')" "$(echo "$BW_SIZES" | sed 's/ 1048576//')" lat-same bw-same
		fi
	done
}

# ---------------------------------------------------------------------------
# libfabric: fi_pingpong, one size a run; it reports usec/xfer (one way)
# and MB/sec = size / usec per xfer (10^6 bytes/s, one message in flight)

# fi_run WHERE PROV EP SRV_NS CLI_NS ADDR DOM SIZES BUDGET MAXI LAT_PLOT BW_PLOT
fi_run() {
	local where=$1 prov=$2 ep=$3 sns=$4 cns=$5 addr=$6 dom=$7 sizes=$8 budget=$9 maxi=${10}
	local lplot=${11} bplot=${12} tag size i n s c v mb label blabel line
	command -v fi_pingpong >/dev/null 2>&1 || {
		fail "libfabric" "fi_pingpong is not installed (Debian: libfabric-bin)"
		return 0
	}
	tag=$prov
	[ "$prov" = udp ] && [ "$ep" = rdm ] && tag="udp;ofi_rxd"
	for size in $sizes; do
		label="libfabric $where: fi_pingpong $(hsize "$size") ($tag)"
		blabel="libfabric $where: fi_pingpong bw $(hsize "$size") ($tag)"
		wanted "$label" || wanted "$blabel" || continue
		n=$(iters "$budget" "$size" 10 "$maxi")
		local d=()
		[ -n "$dom" ] && d=(-d "$dom")
		for i in $(reps); do
			next_port
			log "$label run $i"
			# shellcheck disable=SC2206 # RUN_WRAP is words (softofed run --)
			s=(${RUN_WRAP:-} fi_pingpong -p "$prov" -e "$ep" "${d[@]}" -B "$PORT" -S "$size" -I "$n")
			# shellcheck disable=SC2206
			c=(${RUN_WRAP:-} fi_pingpong -p "$prov" -e "$ep" "${d[@]}" -P "$PORT" -S "$size" -I "$n" "$addr")
			if ! pair fabric 120 "$sns" "$cns" "${s[@]}" :: "${c[@]}"; then
				fail "$label" "run $i failed: $(tail -n 3 "$CLI_OUT" | tr '\n' ' ')"
				break
			fi
			# "bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec"
			line=$(awk '$2 ~ /^[0-9.]+[kmg]?$/ && NF == 8 && $6 ~ /^[0-9.]+$/ { l = $0 } END { print l }' "$CLI_OUT")
			v=$(echo "$line" | awk '{ print $7 }')
			# (from usec/xfer: MB/sec has two decimals only)
			mb=$(echo "$line" | awk -v s="$size" '$7 > 0 { printf "%.4g", s / ($7 / 1000000) / 1048576 }')
			[ -n "$v" ] || {
				fail "$label" "no result line: $(tail -n 2 "$CLI_OUT" | tr '\n' ' ')"
				break
			}
			PLOT=$lplot SERIES="libfabric fi_pingpong $tag" BYTES=$size \
				rec "$label" "us (average, one-way)" "$v" "$(cmdline "${s[@]}" :: "${c[@]}")"
			PLOT=$bplot SERIES="libfabric fi_pingpong $tag" BYTES=$size \
				rec "$blabel" "MiB/s (ping-pong)" "$mb" "$(cmdline "${s[@]}" :: "${c[@]}")"
		done
	done
}

# fi_stream_run WHERE PROV SRV_NS CLI_NS ADDR DOM SIZE BUDGET PLOT: a stream
# of SIZE messages, 16 in flight (bench/fi_stream.c: libfabric-bin has no
# streaming program); MiB/s timed by the client to the server's last word
fi_stream_run() {
	local where=$1 prov=$2 sns=$3 cns=$4 addr=$5 dom=$6 size=$7 budget=$8 plot=$9
	local tag=$prov label n i s c v d=()
	[ "$prov" = udp ] && tag="udp;ofi_rxd"
	label="libfabric $where: fi_stream $(hsize "$size") ($tag)"
	wanted "$label" || return 0
	[ -x "$BIN/fi_stream" ] || {
		fail "$label" "bench/fi_stream was not built (Debian: libfabric-dev)"
		return 0
	}
	[ -n "$dom" ] && d=(-d "$dom")
	n=$(iters "$budget" "$size" 20 20000)
	for i in $(reps); do
		next_port
		log "$label run $i"
		# shellcheck disable=SC2206 # RUN_WRAP is words (softofed run --)
		s=(${RUN_WRAP:-} "$BIN/fi_stream" -p "$tag" "${d[@]}" -B "$PORT" -S "$size" -I "$n")
		# shellcheck disable=SC2206
		c=(${RUN_WRAP:-} "$BIN/fi_stream" -p "$tag" "${d[@]}" -P "$PORT" -S "$size" -I "$n" "$addr")
		if ! pair fabric 120 "$sns" "$cns" "${s[@]}" :: "${c[@]}"; then
			fail "$label" "run $i failed: $(tail -n 3 "$CLI_OUT" "$SRV_OUT" | tr '\n' ' ')"
			break
		fi
		v=$(awk '$1 == "fi_stream:" && $10 == "MiB/s" { print $11 }' "$CLI_OUT")
		[ -n "$v" ] || {
			fail "$label" "no result line: $(tail -n 2 "$CLI_OUT" | tr '\n' ' ')"
			break
		}
		PLOT=$plot SERIES="libfabric fi_stream $tag" BYTES=$size \
			rec "$label" "MiB/s" "$v" "$(cmdline "${s[@]}" :: "${c[@]}")"
	done
}

fabric_same_host() {
	local small="" s
	for s in $BW_SIZES; do
		[ "$s" -le 512 ] && small="$small $s"
	done
	# shm's 2 B and 1 MiB were taken in the rounds
	NREPS=$SWEEP_REPS fi_run "same host" shm rdm "" "" 127.0.0.1 "" "$(echo "$BW_SIZES" | sed 's/^2 //; s/ 1048576//')" \
		$((256 * MIB)) 20000 lat-same bw-same
	NREPS=$SWEEP_REPS fi_run "same host" tcp rdm "" "" 127.0.0.1 "" "$BW_SIZES" $((32 * MIB)) 5000 lat-same bw-same
	NREPS=$SWEEP_REPS fi_run "same host" udp rdm "" "" 127.0.0.1 "" "$BW_SIZES" $((16 * MIB)) 3000 lat-same bw-same
	# the udp provider alone: datagrams of at most its MTU
	NREPS=$SWEEP_REPS fi_run "same host" udp dgram "" "" 127.0.0.1 "" "$small" $((16 * MIB)) 5000 lat-same ""
}

# ---------------------------------------------------------------------------
# idle: CPU and resident memory with no traffic

# cpu_ticks PID: utime + stime of PID (clock ticks)
cpu_ticks() {
	awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null
}

# rss_kib PID
rss_kib() {
	awk '$1 == "VmRSS:" { print $2 }' "/proc/$1/status" 2>/dev/null
}

daemon_pid() {
	timeout 10 "$SOFTOFED" status 2>/dev/null </dev/null |
		sed -n 's/^softofed daemon pid \([0-9]*\).*/\1/p' | head -n 1
}

# fake_pp_client PORT GID: connects to an ibv_rc_pingpong server as a
# client that never sends: gives it a destination (QP number 1 at GID, in
# the 32 hex digits of pingpong's wire format: nothing answers), reads the
# server's, says "done"; then holds the socket
fake_pp_client() {
	exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
	printf '0000:000001:000000:%s\0' "$2" >&3
	head -c 52 <&3 >/dev/null
	printf 'done\0' >&3
	sleep 3600
}

# gid0_hex: GID 0 of sof0 here, as 32 hex digits
gid0_hex() {
	timeout 20 "$SOFTOFED" run -- ibv_devinfo -v 2>/dev/null </dev/null |
		awk '/GID\[ *0\]:/ { g = $0; sub(/.*\]:[[:space:]]*/, "", g); sub(/,.*/, "", g); print g; exit }' |
		python3 -c 'import ipaddress, sys; print(ipaddress.IPv6Address(sys.stdin.read().strip()).packed.hex())' 2>/dev/null
}

idle() {
	local dpid hz t0 t1 r label p name
	wanted "idle:" || return 0
	hz=$(getconf CLK_TCK)
	dpid=$(daemon_pid)
	if [ -z "$dpid" ]; then
		fail "idle:" "no daemon pid from softofed status"
		return 0
	fi
	# 1. the fresh daemon, no client
	r=$(rss_kib "$dpid")
	rec "idle: daemon resident memory (fresh, no client)" KiB "$r" "grep VmRSS /proc/\$(softofed status | daemon pid)/status"
	log "idle: daemon alone, $IDLE_SECS s"
	t0=$(cpu_ticks "$dpid")
	sleep "$IDLE_SECS"
	t1=$(cpu_ticks "$dpid")
	rec "idle: daemon CPU, no client" "% of a CPU" "$(awk -v d=$((t1 - t0)) -v hz="$hz" -v s="$IDLE_SECS" 'BEGIN { printf "%.2f", d * 100 / hz / s }')" \
		"utime+stime of the daemon (/proc/PID/stat) over $IDLE_SECS s"
	# 2. three programs waiting: two servers for a client, one connected
	# server (-e) waiting for a completion that never comes
	next_port
	local p1=$PORT
	next_port
	local p2=$PORT
	next_port
	local p3=$PORT
	sof_bg idle.pp $((IDLE_SECS + 30)) taskset -c "$CPU_A" "$SOFTOFED" run -- ibv_rc_pingpong -p "$p1"
	sof_bg idle.ppe $((IDLE_SECS + 30)) taskset -c "$CPU_A" "$SOFTOFED" run -- ibv_rc_pingpong -e -p "$p2"
	sof_bg idle.ppc $((IDLE_SECS + 30)) taskset -c "$CPU_A" "$SOFTOFED" run -- ibv_rc_pingpong -e -g 0 -p "$p3"
	for p in "$p1:idle.pp" "$p2:idle.ppe" "$p3:idle.ppc"; do
		if ! wait_port "${p%%:*}" 20 "${p#*:}"; then
			fail "idle: ${p#*:}" "ibv_rc_pingpong did not listen: $(tail -n 2 "$(sof_out "${p#*:}")" | tr '\n' ' ')"
		fi
	done
	sof_bg idle.fake $((IDLE_SECS + 20)) bash -c "$(declare -f fake_pp_client); fake_pp_client $p3 $(gid0_hex)"
	sleep 1
	local pids=() names=("ibv_rc_pingpong server waiting for a client" \
		"ibv_rc_pingpong -e server waiting for a client" \
		"ibv_rc_pingpong -e server connected, waiting for a completion")
	for name in idle.pp idle.ppe idle.ppc; do
		pids+=("$(sof_child_pid "$name")")
	done
	local before=() after=() i
	for i in 0 1 2; do
		before+=("$(cpu_ticks "${pids[$i]:-0}")")
	done
	t0=$(cpu_ticks "$dpid")
	log "idle: daemon with three waiting programs, $IDLE_SECS s"
	sleep "$IDLE_SECS"
	t1=$(cpu_ticks "$dpid")
	for i in 0 1 2; do
		after+=("$(cpu_ticks "${pids[$i]:-0}")")
	done
	if grep -q -i 'fail\|couldn' "$(sof_out idle.ppc)" || ! sof_alive idle.ppc; then
		fail "idle: ${names[2]}" "the fake client did not connect it: $(tail -n 2 "$(sof_out idle.ppc)" | tr '\n' ' ')"
	fi
	for i in 0 1 2; do
		[ -n "${before[$i]}" ] && [ -n "${after[$i]}" ] || continue
		[ $i -eq 2 ] && ! sof_alive idle.ppc && continue
		label="idle: ${names[$i]} CPU"
		local how="softofed run -- ibv_rc_pingpong -p PORT"
		[ $i -ge 1 ] && how="softofed run -- ibv_rc_pingpong -e -p PORT"
		[ $i -eq 2 ] && how="softofed run -- ibv_rc_pingpong -e -g 0 -p PORT, then a client that sends its address and 'done' and nothing else (fake_pp_client in bench/run.sh)"
		rec "$label" "% of a CPU" "$(awk -v d=$((after[i] - before[i])) -v hz="$hz" -v s="$IDLE_SECS" 'BEGIN { printf "%.2f", d * 100 / hz / s }')" \
			"$how; utime+stime over $IDLE_SECS s"
	done
	rec "idle: daemon CPU, three programs waiting" "% of a CPU" \
		"$(awk -v d=$((t1 - t0)) -v hz="$hz" -v s="$IDLE_SECS" 'BEGIN { printf "%.2f", d * 100 / hz / s }')" \
		"utime+stime of the daemon over the same $IDLE_SECS s"
	rec "idle: daemon resident memory, three programs attached" KiB "$(rss_kib "$dpid")" "VmRSS of the daemon"
	for name in idle.fake idle.pp idle.ppe idle.ppc; do
		sof_kill "$name"
	done
}

# ---------------------------------------------------------------------------
# scale: bench/qp_scale

scale() {
	local dpid out k v u
	wanted "scale:" || return 0
	dpid=$(daemon_pid)
	out=$(sof_out scale)
	log "scale: $QPS RC QPs"
	timeout 600 "$SOFTOFED" run -- taskset -c "$CPU_B" "$BIN/qp_scale" -n "$QPS" -D "${dpid:-0}" >"$out" 2>&1
	local cmd
	cmd="softofed run -- $(rel "$BIN")/qp_scale -n $QPS -D DAEMON_PID"
	if ! grep -q '^qps ' "$out"; then
		fail "scale:" "qp_scale printed no figures: $(tail -n 3 "$out" | tr '\n' ' ')"
		return 0
	fi
	while read -r k v; do
		case $k in
		requested | qps | connected | cqs | qps_per_cq | queue_depth | nofile_limit) u=count ;;
		*_s) u=s ;;
		*_us_per_qp) u=us ;;
		*_kib) u=KiB ;;
		*) continue ;;
		esac
		rec "scale: $k" "$u" "$v" "$cmd"
	done <"$out"
	grep -E '^(failed_at|data_check|device)' "$out" | while read -r line; do
		note "scale" "$line"
	done
	[ -n "$dpid" ] && rec "scale: daemon_rss_after_exit_kib" KiB "$(sleep 0.5; rss_kib "$dpid")" \
		"VmRSS of the daemon once qp_scale has exited"
}

# ---------------------------------------------------------------------------
# where time goes: perf

# prof_top PATH PROC FILE CMD: the profile's DSO and symbol shares, as
# "prof" lines (path, process, kind, percent, name, command)
prof_top() {
	local path=$1 proc=$2 file=$3 cmd=$4
	[ -s "$file" ] || return 1
	timeout 120 perf report -i "$file" --stdio --no-children --sort dso -g none 2>/dev/null |
		awk '/^# Samples: / { v = $3; if (v ~ /K$/) v = v * 1000; print v; exit }' |
		while read -r v; do
			printf '%s\t%s\tstat\t%s\t%s\t%s\n' "$path" "$proc" "$v" "samples" "$cmd" >>"$BENCH_TSV.prof"
		done
	timeout 120 perf report -i "$file" --stdio --no-children --sort dso -g none --percent-limit 1 2>/dev/null |
		awk -F'  +' '/^ +[0-9.]+%/ { gsub(/^ +/, ""); print $1 "\t" $2 }' | head -n 8 |
		while IFS=$'\t' read -r pct name; do
			printf '%s\t%s\tdso\t%s\t%s\t%s\n' "$path" "$proc" "${pct%\%}" "$name" "$cmd" >>"$BENCH_TSV.prof"
		done
	timeout 120 perf report -i "$file" --stdio --no-children --sort dso,sym -g none --percent-limit 1 2>/dev/null |
		awk '/^ +[0-9.]+%/ { pct = $1; dso = $2; $1 = ""; $2 = ""; $3 = ""; sub(/^ +/, ""); print pct "\t" $0 " (" dso ")" }' | head -n 10 |
		while IFS=$'\t' read -r pct name; do
			printf '%s\t%s\tsym\t%s\t%s\t%s\n' "$path" "$proc" "${pct%\%}" "$name" "$cmd" >>"$BENCH_TSV.prof"
		done
}

# prof_stat PATH PROC FILE ITERS: perf stat's counts (system calls,
# context switches, task-clock) per iteration, as "prof" lines of kind stat
prof_stat() {
	local path=$1 proc=$2 file=$3 n=$4 cmd=$5
	[ -s "$file" ] || return 1
	awk -v n="$n" -F, '
		$3 == "raw_syscalls:sys_enter" { printf "syscalls per iteration\t%.3f\n", $1 / n }
		$3 == "context-switches" { printf "context switches per iteration\t%.3f\n", $1 / n }
		$3 == "task-clock" { printf "CPU ms\t%.1f\n", $1 }' "$file" |
		while IFS=$'\t' read -r name v; do
			printf '%s\t%s\tstat\t%s\t%s\t%s\n' "$path" "$proc" "$v" "$name" "$cmd" >>"$BENCH_TSV.prof"
		done
}

# profile_pair PATH SRV_NS CLI_NS SARGS CARGS TARGET N DAEMONS PROG ARGS...:
# one run with the client under perf record, one under perf stat; perf
# record -p follows DAEMONS (host:pid words) for the run's length. The
# callers' runs last a second or more: perftest spends about a quarter of
# a second of its start-up spinning on gettimeofday to measure the CPU's
# clock, which in a short run is most of the client's samples
profile_pair() {
	local path=$1 sns=$2 cns=$3 sargs=$4 cargs=$5 target=$6 n=$7 daemons=$8 prog=$9 d host pid
	shift 9
	wanted "profile: $path" || return 0
	local dir=$SOF_TMP/prof
	mkdir -p "$dir"
	local tag=${path//[^a-z0-9]/_}
	# shellcheck disable=SC2206
	local s=("$SOFTOFED" run -- "$prog" -d sof0 -F $sargs "$@")
	# shellcheck disable=SC2206
	local c=("$SOFTOFED" run -- "$prog" -d sof0 -F $cargs "$@" "$target")
	# 1. perf stat of the client: system calls and context switches
	next_port
	log "profile $path: perf stat"
	CLI_WRAP="perf stat -x, -o $dir/$tag.stat -e raw_syscalls:sys_enter,context-switches,task-clock --" \
		pair prof 120 "$sns" "$cns" "${s[@]}" -p "$PORT" :: "${c[@]}" -p "$PORT" ||
		fail "profile: $path" "perf stat run failed: $(tail -n 2 "$CLI_OUT" | tr '\n' ' ')"
	prof_stat "$path" client "$dir/$tag.stat" "$n" \
		"perf stat -x, -e raw_syscalls:sys_enter,context-switches,task-clock -- $prog ... (client)"
	# 2. perf record of the client and the daemons
	next_port
	log "profile $path: perf record"
	local dp=() dn=()
	for d in $daemons; do
		host=${d%%:*} pid=${d#*:}
		sof_bg "prof.d.$host" 200 perf record -q -e cpu-clock -g -p "$pid" -o "$dir/$tag.daemon-$host.data" -- sleep 60
		dp+=("prof.d.$host")
		dn+=("$host")
	done
	[ ${#dp[@]} -gt 0 ] && sleep 0.5
	CLI_WRAP="perf record -q -e cpu-clock -g -o $dir/$tag.client.data --" \
		pair prof 120 "$sns" "$cns" "${s[@]}" -p "$PORT" :: "${c[@]}" -p "$PORT" ||
		fail "profile: $path" "perf record run failed: $(tail -n 2 "$CLI_OUT" | tr '\n' ' ')"
	local i
	for i in "${!dp[@]}"; do
		# perf record -p stops with its workload (sleep): SIGINT ends it early
		kill -INT "$(sof_child_pid "${dp[$i]}")" 2>/dev/null
		sof_wait "${dp[$i]}" 30
		prof_top "$path" "daemon of host ${dn[$i]}" "$dir/$tag.daemon-${dn[$i]}.data" \
			"perf record -e cpu-clock -g -p DAEMON_PID (host ${dn[$i]}) during the run"
	done
	prof_top "$path" client "$dir/$tag.client.data" \
		"perf record -e cpu-clock -g -- $(cmdline "${s[@]}" -p PORT :: "${c[@]}" -p PORT | sed 's/.*& //')"
}

# ---------------------------------------------------------------------------
# the phases

# runs inside the namespace of its own (sof_ns_run): softofed and the kernel
# and library peers on one host
# registration: bench/reg_mr (issue 17)
registration() {
	local out what size v name cmd
	wanted "registration:" || return 0
	out=$(sof_out reg_mr)
	log "registration: reg/dereg 4 KiB, 1 MiB, 1 GiB"
	cmd="softofed run -- taskset -c $CPU_B $(rel "$BIN")/reg_mr 5"
	if ! timeout 600 "$SOFTOFED" run -- taskset -c "$CPU_B" "$BIN/reg_mr" 5 >"$out" 2>&1 ||
		! grep -q '^reg_touched ' "$out"; then
		fail "registration:" "reg_mr failed: $(tail -n 2 "$out" | tr '\n' ' ')"
		return 0
	fi
	while read -r what size v; do
		case $size in
		4096) name="4 KiB" ;;
		1048576) name="1 MiB" ;;
		1073741824) name="1 GiB" ;;
		*) continue ;;
		esac
		rec "registration: $what $name" us "$v" "$cmd"
	done <"$out"
	note "registration" "each figure is reg_mr's median of 5 runs (3 for 1 GiB) in one process; the table's rates divide the size by the time"
}

phase_same_host() {
	sof_init
	BENCH_TSV=$1
	registration
	idle
	same_host_rounds
	same_host_perftest
	if [ "$PROFILE" = 1 ] && command -v perf >/dev/null 2>&1; then
		profile_pair "same-host ib_send_lat 2 B" "" "" "" "" localhost $((5000000 / SCALE)) \
			"local:$(daemon_pid)" ib_send_lat -s 2 -n $((5000000 / SCALE))
	fi
	ucx_same_host sweep
	fabric_same_host
	scale
}

# hosts_wanted: true when BENCH_ONLY leaves something of the two-host phases
hosts_wanted() {
	[ -z "$ONLY" ] && return 0
	echo "$ONLY" | grep -q -E 'veth|wire' && return 0
	local l
	for l in "softofed veth: ib_send_lat 2 B" "softofed veth: ib_write_bw 1 MiB" \
		"softofed veth: ib_write_lat 2 B" "softofed veth: ib_send_lat 2 B (busy target host)" \
		"softofed wire: ib_write_bw 1 MiB (loss 1%)" "kernel veth: udp ping-pong 14 B (busy-polled)" \
		"kernel veth: tcp stream (iperf3)" "UCX veth: ucx_perftest tag_lat 2 B (tcp)" \
		"libfabric veth: fi_pingpong 2 B (tcp)" "libfabric veth: fi_pingpong bw 1 MiB (udp;ofi_rxd)" \
		"libfabric veth: fi_stream 1 MiB (udp;ofi_rxd)" \
		"rsockets veth: tcp stream (iperf3 -P 1 over librspreload)" \
		"rsockets veth: tcp ping-pong 14 B (sockperf over librspreload)" \
		"rsockets veth: udp ping-pong 14 B (sockperf over librspreload)" \
		"SDP veth: tcp stream (iperf3 -P 1 over libsdp)" \
		"SDP veth: tcp ping-pong 14 B (sockperf over libsdp)" \
		"profile: veth ib_send_lat 2 B"; do
		wanted "$l" && return 0
	done
	return 1
}

# hosts_up HOW: hosts a and b (sof_hosts_up 2 HOW: "" a veth pair, wire
# through netwire); the server runs in host a with its GID index, the
# client in host b with its own: V_A, V_B (namespaces), V_IP (host a's
# address), V_GA, V_GB (GID indexes). 1, with the reason in HOSTS_ERR,
# when they did not come up.
hosts_up() {
	local out=$SOF_TMP/hosts-${1:-veth}.out
	if ! sof_hosts_up 2 ${1:+"$1"} >"$out" 2>&1; then
		HOSTS_ERR=$(grep -v '^ok' "$out" | tail -n 2 | tr '\n' ' ')
		sof_hosts_down
		return 1
	fi
	V_A=$(sof_host_ns a) V_B=$(sof_host_ns b) V_IP=$(sof_host_ip a)
	V_GA=$(sof_host_gid a) V_GB=$(sof_host_gid b)
}

# the two-host figures of the ratios (hosts in V_A, V_B: phase_hosts)
r_veth_send_lat() {
	PLOT=lat-veth SERIES="softofed ib_send_lat" BYTES=2 \
		ptest veth "ib_send_lat 2 B" 60 "$V_A" "$V_B" "-x $V_GA" "-x $V_GB" "$V_IP" \
		ib_send_lat -s 2 -n "$(iters $((16 * MIB)) 2 1000 10000)"
}
r_veth_write_bw() {
	PLOT=bw-veth SERIES="softofed ib_write_bw" BYTES=$MIB \
		ptest veth "ib_write_bw 1 MiB" 120 "$V_A" "$V_B" "-x $V_GA" "-x $V_GB" "$V_IP" \
		ib_write_bw -s $MIB --mtu 4096 -n "$(iters $((256 * MIB)) $MIB 100 20000)"
}
# issue 18: one-sided operations between hosts, side by side with
# ib_send_lat 2 B (r_veth_send_lat); and all four again with a third,
# CPU-busy process pinned beside the server (the target of the WRITEs,
# READs and atomics) in host a
r_veth_onesided() {
	local op n
	n=$(iters $((16 * MIB)) 2 1000 10000)
	for op in write read; do
		PLOT=lat-veth SERIES="softofed ib_${op}_lat" BYTES=2 \
			ptest veth "ib_${op}_lat 2 B" 60 "$V_A" "$V_B" "-x $V_GA" "-x $V_GB" "$V_IP" \
			"ib_${op}_lat" -s 2 -n "$n"
	done
	ptest veth "ib_atomic_lat 8 B" 60 "$V_A" "$V_B" "-x $V_GA" "-x $V_GB" "$V_IP" \
		ib_atomic_lat -n "$n"
}
r_veth_busy() {
	local op busy n
	n=$(iters $((16 * MIB)) 2 1000 10000)
	ip netns exec "$V_A" taskset -c "$CPU_A" sh -c 'while :; do :; done' &
	busy=$!
	for op in send write read; do
		PLOT="" ptest veth "ib_${op}_lat 2 B (busy target host)" 60 "$V_A" "$V_B" "-x $V_GA" \
			"-x $V_GB" "$V_IP" "ib_${op}_lat" -s 2 -n "$n"
	done
	PLOT="" ptest veth "ib_atomic_lat 8 B (busy target host)" 60 "$V_A" "$V_B" "-x $V_GA" \
		"-x $V_GB" "$V_IP" ib_atomic_lat -n "$n"
	kill "$busy"
	wait "$busy" 2>/dev/null
}
r_veth_kernel() {
	sockperf_pp "veth" "$V_A" "$V_B" "$V_IP"
	iperf "veth" "$V_A" "$V_B" "$V_IP" bw-veth
	rs_iperf "veth" "$V_A" "$V_B" "$V_IP" bw-veth
	rs_iperf "veth" "$V_A" "$V_B" "$V_IP" "" 4
	rs_sockperf "veth" "$V_A" "$V_B" "$V_IP"
	rs_sockperf "veth" "$V_A" "$V_B" "$V_IP" udp
	sdp_iperf "veth" "$V_A" "$V_B" "$V_IP"
	sdp_iperf "veth" "$V_A" "$V_B" "$V_IP" 4
	sdp_sockperf "veth" "$V_A" "$V_B" "$V_IP"
}
r_veth_ucx() { ucx_run veth tcp tcp "$V_A" "$V_B" "$V_IP" $((64 * MIB)) "2" "$MIB" lat-veth bw-veth; }
r_veth_fi_rxd() {
	fi_run veth udp rdm "$V_A" "$V_B" "$V_IP" veth0 "$MIB" $((16 * MIB)) 3000 lat-veth bw-veth
	fi_stream_run veth udp "$V_A" "$V_B" "$V_IP" veth0 "$MIB" $((64 * MIB)) bw-veth
}

phase_hosts() {
	local a b ip ga gb size n
	if [ "$(id -u)" -ne 0 ]; then
		fail "two hosts over veth" "needs root (ip netns add); not measured"
		return 0
	fi
	hosts_wanted || return 0
	if ! hosts_up ""; then
		fail "two hosts over veth" "sof_hosts_up 2 failed: $HOSTS_ERR"
		return 0
	fi
	a=$V_A b=$V_B ip=$V_IP ga=$V_GA gb=$V_GB
	# ib_send_lat between its two peers of the targets: this VM flips
	# between two latency states over seconds (the report of 8e1498f)
	rounds r_veth_kernel r_veth_send_lat r_veth_onesided r_veth_busy r_veth_ucx r_veth_fi_rxd \
		r_veth_write_bw
	# the same through the daemons' engine (SOFTOFED_ENGINE=daemon: what a
	# process of another user gets, and what every process got before the
	# engine ran in the program)
	NREPS=$SWEEP_REPS PLOT="" PENV="env SOFTOFED_ENGINE=daemon" \
		ptest veth "ib_send_lat 2 B, the daemons' engine" 60 "$a" "$b" "-x $ga" "-x $gb" "$ip" \
		ib_send_lat -s 2 -n "$(iters $((16 * MIB)) 2 1000 10000)"
	NREPS=$SWEEP_REPS PLOT="" PENV="env SOFTOFED_ENGINE=daemon" \
		ptest veth "ib_write_bw 1 MiB, the daemons' engine" 120 "$a" "$b" "-x $ga" "-x $gb" "$ip" \
		ib_write_bw -s $MIB --mtu 4096 -n "$(iters $((256 * MIB)) $MIB 100 20000)"
	# every perftest program between the hosts, as on one host
	local lsizes="" s
	for s in $VETH_SIZES; do
		[ "$s" -le 65536 ] && lsizes="$lsizes $s"
	done
	perftest_sweeps veth "$a" "$b" "-x $ga" "-x $gb" "$ip" "$lsizes" "$VETH_SIZES 8388608" \
		"--mtu 4096" "send_lat:2 write_lat:2 read_lat:2 write_bw:$MIB"
	NREPS=$SWEEP_REPS ptest veth "ib_send_lat -e 2 B" 60 "$a" "$b" "-x $ga" "-x $gb" "$ip" \
		ib_send_lat -e -s 2 -n $((5000 / SCALE))
	NREPS=$SWEEP_REPS ucx_run veth tcp tcp "$a" "$b" "$ip" $((64 * MIB)) \
		"$(echo "$VETH_SIZES" | sed 's/^2 //; s/ 1048576//')" "$(echo "$VETH_SIZES" | sed 's/ 1048576//')" lat-veth bw-veth
	local small=""
	for s in $VETH_SIZES; do
		[ "$s" -le 512 ] && small="$small $s"
	done
	NREPS=$SWEEP_REPS fi_run veth tcp rdm "$a" "$b" "$ip" veth0 "$VETH_SIZES" $((32 * MIB)) 5000 lat-veth bw-veth
	NREPS=$SWEEP_REPS fi_run veth udp rdm "$a" "$b" "$ip" veth0 "$(echo "$VETH_SIZES" | sed 's/ 1048576//')" \
		$((16 * MIB)) 3000 lat-veth bw-veth
	NREPS=$SWEEP_REPS fi_run veth udp dgram "$a" "$b" "$ip" veth0 "$small" $((16 * MIB)) 5000 lat-veth ""
	if [ "$PROFILE" = 1 ] && command -v perf >/dev/null 2>&1; then
		profile_pair "veth ib_send_lat 2 B" "$a" "$b" "-x $ga" "-x $gb" "$ip" $((200000 / SCALE)) \
			"a:${SOF_HOST_DPID[a]} b:${SOF_HOST_DPID[b]}" ib_send_lat -s 2 -n $((200000 / SCALE))
		profile_pair "veth ib_write_bw 1 MiB" "$a" "$b" "-x $ga" "-x $gb" "$ip" $((5000 / SCALE)) \
			"a:${SOF_HOST_DPID[a]} b:${SOF_HOST_DPID[b]}" ib_write_bw -s 1048576 --mtu 4096 -n $((5000 / SCALE))
	fi
	sof_hosts_down
	phase_wire
}

# phase_wire: ib_write_bw 1 MiB through netwire, loss-free and at 1 % loss
# of what host b (the client: it sends the data) sends
phase_wire() {
	local a b ip ga gb n loss i before sum="" lossy=0
	wanted "softofed wire: " || return 0
	if ! hosts_up wire; then
		fail "softofed wire: ib_write_bw 1 MiB" "sof_hosts_up 2 wire failed: $HOSTS_ERR"
		return 0
	fi
	a=$V_A b=$V_B ip=$V_IP ga=$V_GA gb=$V_GB
	n=$(iters $((1024 * MIB)) $MIB 100 1000)
	# in rounds, as the ratios: loss-free, then 1 % loss, then back
	for i in $(seq "$REPS"); do
		for loss in 0 1; do
			[ $((i % 2)) = 0 ] && loss=$((1 - loss))
			if [ "$loss" = 1 ] && ! sof_netem b loss 1% >/dev/null 2>&1; then
				fail "softofed wire: ib_write_bw 1 MiB (loss 1%)" "sof_netem b loss 1% failed"
				break 2
			fi
			if [ "$loss" = 0 ] && ! sof_netem_clear b >/dev/null 2>&1; then
				fail "softofed wire: ib_write_bw 1 MiB (no loss)" "sof_netem_clear b failed"
				break 2
			fi
			local what="no loss"
			[ "$loss" = 1 ] && what="loss 1%" && lossy=$((lossy + 1)) && before=$(sof_counters b)
			NREPS=1 ptest wire "ib_write_bw 1 MiB ($what)" 180 "$a" "$b" "-x $ga" "-x $gb" "$ip" \
				ib_write_bw -s $MIB --mtu 4096 -n "$n"
			[ "$loss" = 1 ] && sum=$(printf '%s\n%s\n' "$sum" "$(sof_counters b |
				awk 'NR == FNR { b[$1] = $2; next } { print $1, $2 - b[$1] }' <(echo "$before") -)")
		done
	done
	note "wire" "hosts a and b joined through tests/progs/netwire (sof_hosts_up 2 wire); loss: sof_netem b loss 1% (${SOF_NETEM_HOW:-?}): 1 % of the frames host b sends are dropped"
	# beside the target, one run each: softofed and one kernel TCP stream
	# through the same cable at other losses of b's frames, and both ways
	local m pct label ok
	m=$(iters $((256 * MIB)) $MIB 20 256)
	for pct in 0 0.1 1 5 both; do
		sof_netem_clear a >/dev/null 2>&1
		sof_netem_clear b >/dev/null 2>&1
		case $pct in
		0) label="no loss" ok=0 ;;
		both)
			label="loss 1% both ways"
			sof_netem a loss 1% >/dev/null 2>&1 && sof_netem b loss 1% >/dev/null 2>&1
			ok=$?
			;;
		*)
			label="loss $pct%"
			sof_netem b loss "$pct%" >/dev/null 2>&1
			ok=$?
			;;
		esac
		if [ "$ok" -ne 0 ]; then
			fail "softofed wire: ib_write_bw 1 MiB (sweep, $label)" "sof_netem failed"
			continue
		fi
		NREPS=1 ptest wire "ib_write_bw 1 MiB (sweep, $label)" 120 "$a" "$b" "-x $ga" "-x $gb" "$ip" \
			ib_write_bw -s $MIB --mtu 4096 -n "$m"
		NREPS=1 iperf "wire ($label)" "$a" "$b" "$ip" "" tcp
	done
	sof_netem_clear a >/dev/null 2>&1
	# what host b's requesters did about the loss (its engines count into
	# the daemon's counters: softofed status)
	[ "$lossy" -gt 0 ] && note "wire" "$(echo "$sum" | awk -v r="$lossy" -v n="$n" '
		{ t[$1] += $2 }
		END {
			printf "host b'"'"'s counters over the %d runs at 1 %% loss (%d x 1 MiB each; softofed status): ", r, n
			printf "%d packets sent (about %.1f %% of them resends), %d go-backs; ", \
				t["counters.tx_packets"], t["counters.tx_packets"] ? \
				100 * (t["counters.tx_packets"] - r * n * 256) / t["counters.tx_packets"] : 0, \
				t["counters.retransmits"]
			printf "%d NAKs received, %d early go-backs, %d local ACK timeouts", \
				t["counters.nak_rcvd"], t["counters.probes"], t["counters.timeouts"]
		}')"
	sof_hosts_down
}

main() {
	local host date t0
	t0=$(now_ms)
	sof_init
	if [ ! -x "$SOFTOFED" ]; then
		echo "bench: $SOFTOFED is missing: build first (make build, or cmake into BENCH_BUILD)" >&2
		exit 1
	fi
	build_helpers || {
		echo "bench: cannot build the C helpers" >&2
		exit 1
	}
	host=$(hostname -s 2>/dev/null || hostname)
	date=$(date -u +%Y-%m-%d)
	mkdir -p "$RES_DIR"
	# a second report of the day does not replace the first
	if [ -z "${BENCH_OUT:-}" ]; then
		BENCH_OUT=$RES_DIR/$date-$host.md
		[ -e "$BENCH_OUT" ] && BENCH_OUT=$RES_DIR/$date-$(date -u +%H%M)-$host.md
	fi
	BENCH_TSV=$SOF_TMP/results.tsv
	export BENCH_TSV
	: >"$BENCH_TSV"
	: >"$BENCH_TSV.fail"
	: >"$BENCH_TSV.note"
	: >"$BENCH_TSV.prof"
	chmod 0666 "$BENCH_TSV"* 2>/dev/null
	note "build" "$(rel "$SOF_BUILD_DIR") ($(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$SOF_BUILD_DIR/CMakeCache.txt" 2>/dev/null))"
	# the commit of the build's source as it is now, right after the build:
	# edits made while the benchmark runs are not in what it measures
	note "source" "$(python3 "$BENCH_DIR/report.py" --source-of "$SOF_BUILD_DIR")"
	# the same-host phase (the physical limits are taken in its rounds) in a namespace of its own with its own daemon
	SOF_NS_NAME=bench SOF_NS_TIMEOUT=1800 sof_ns_run bash "$BENCH_DIR/run.sh" --phase-same-host "$BENCH_TSV" ||
		fail "same host" "the namespace phase ended with an error"
	phase_hosts
	phase_libs
	cp "$BENCH_TSV" "${BENCH_OUT%.md}.tsv"
	python3 "$BENCH_DIR/report.py" --tsv "$BENCH_TSV" --out "$BENCH_OUT" \
		--seconds "$((($(now_ms) - t0 + 500) / 1000))" --reps "$REPS" --sweep-reps "$SWEEP_REPS" \
		${QUICK:+--quick} --cpus "$CPU_A,$CPU_B" || {
		echo "bench: report.py failed" >&2
		exit 1
	}
	printf '\n## Issue 17: the libraries (bench/libs.sh)\n\n' >>"$BENCH_OUT"
	libs_ratios "$BENCH_TSV" >>"$BENCH_OUT"
	phase_fabric "$BENCH_OUT" >"$SOF_TMP/fabric.md"
	phase_sm "$BENCH_OUT" >"$SOF_TMP/sm.md"
	phase_ipoib "$BENCH_OUT" >"$SOF_TMP/ipoib.md"
	echo "bench: report in $(rel "$BENCH_OUT") (raw figures: $(rel "${BENCH_OUT%.md}.tsv"), plots: $(rel "${BENCH_OUT%.md}")-*.svg)"
	sed -n '/^## Ratios/,/^## Medians/p' "$BENCH_OUT" | sed '$d'
	libs_ratios "$BENCH_TSV"
	cat "$SOF_TMP/fabric.md"
	cat "$SOF_TMP/sm.md"
	cat "$SOF_TMP/ipoib.md"
}

# phase_sm OUT: issue 20's rows (bench/sm.sh: softofed-sm beside OpenSM on
# the same fabrics), appended to OUT under its own heading with the load
# average at the start and the end; the tables on stdout too
phase_sm() {
	wanted "issue 20: sm" || return 0
	printf '\n## Issue 20: softofed-sm beside OpenSM (bench/sm.sh)\n\nLoad average at the start: %s.\n\n' \
		"$(cut -d' ' -f1-3 /proc/loadavg)" >>"$1"
	# BENCH_QUICK: one round, the k=24 tree only
	[ -n "$QUICK" ] && [ -z "${BENCH_SM_BIG+set}" ] && export BENCH_SM_BIG=24
	BENCH_REPS=${BENCH_SM_REPS:-${QUICK:+1}} BENCH_BUILD=$SOF_BUILD_DIR BENCH_OUT=$1 timeout 2400 bash "$BENCH_DIR/sm.sh" 2>"$SOF_TMP/sm.err" ||
		echo "issue 20: sm.sh failed: $(tail -n 3 "$SOF_TMP/sm.err" | tr '\n' ' ')" | tee -a "$1"
	printf '\nLoad average at the end: %s.\n' "$(cut -d' ' -f1-3 /proc/loadavg)" >>"$1"
}


# phase_fabric OUT: issue 19's ratios (bench/fabric_data.sh: sofib0 through
# the software fabric beside RoCEv2 on the same veths, one run), appended
# to OUT under its own heading; the table on stdout too
phase_fabric() {
	wanted "issue 19: fabric" || return 0
	printf '\n## Issue 19: InfiniBand through the fabric beside RoCEv2 (bench/fabric_data.sh)\n\n' >>"$1"
	BENCH_REPS=$REPS BENCH_BUILD=$SOF_BUILD_DIR BENCH_OUT=$1 timeout 1800 bash "$BENCH_DIR/fabric_data.sh" 2>"$SOF_TMP/fabric.err" ||
		echo "issue 19: fabric_data.sh failed: $(tail -n 3 "$SOF_TMP/fabric.err" | tr '\n' ' ')" | tee -a "$1"
}


# section_alone NAME WHAT PHASE: PHASE's rows alone (issue WHAT's), in
# BENCH_OUT (default bench/results/DATE-HHMM-HOST-NAME.md)
section_alone() {
	local host
	sof_init
	[ -x "$SOFTOFED" ] || {
		echo "bench: $SOFTOFED is missing: build first" >&2
		exit 1
	}
	host=$(hostname -s 2>/dev/null || hostname)
	mkdir -p "$RES_DIR" || exit 1
	BENCH_OUT=${BENCH_OUT:-$RES_DIR/$(date -u +%Y-%m-%d-%H%M)-$host-$1.md}
	{
		echo "# bench/run.sh --section $1: $2"
		echo
		echo "Build: $(rel "$SOF_BUILD_DIR"), source $(python3 "$BENCH_DIR/report.py" --source-of "$SOF_BUILD_DIR"), load average $(cut -d' ' -f1-3 /proc/loadavg)."
	} >"$BENCH_OUT"
	"$3" "$BENCH_OUT"
	echo "bench: $1 section in $(rel "$BENCH_OUT")"
}

# phase_ipoib OUT: issue 21's rows (bench/ipoib.sh: iperf3 and ping over
# ib0, datagram and connected mode, beside the plain veth), appended to OUT
# under its own heading; the table on stdout too
phase_ipoib() {
	wanted "issue 21: ipoib" || return 0
	printf '\n## Issue 21: IPoIB beside a plain veth (bench/ipoib.sh)\n\n' >>"$1"
	BENCH_REPS=${BENCH_IPOIB_REPS:-${QUICK:+1}} BENCH_BUILD=$SOF_BUILD_DIR BENCH_OUT=$1 timeout 1800 bash "$BENCH_DIR/ipoib.sh" 2>"$SOF_TMP/ipoib.err" ||
		echo "issue 21: ipoib.sh failed: $(tail -n 3 "$SOF_TMP/ipoib.err" | tr '\n' ' ')" | tee -a "$1"
}

# section_libs: issue 17's section alone (bench/libs.sh); its ratios, the
# figures and their commands in BENCH_OUT (default
# bench/results/DATE-HHMM-HOST-libs.md)
section_libs() {
	local host
	sof_init
	[ -x "$SOFTOFED" ] || {
		echo "bench: $SOFTOFED is missing: build first" >&2
		exit 1
	}
	mkdir -p "$BIN" "$RES_DIR" || exit 1
	build_helpers || exit 1
	host=$(hostname -s 2>/dev/null || hostname)
	BENCH_OUT=${BENCH_OUT:-$RES_DIR/$(date -u +%Y-%m-%d-%H%M)-$host-libs.md}
	BENCH_TSV=$SOF_TMP/results.tsv
	export BENCH_TSV
	: >"$BENCH_TSV"
	: >"$BENCH_TSV.fail"
	: >"$BENCH_TSV.note"
	phase_libs
	{
		echo "# bench/run.sh --section libs: issue 17's ratios"
		echo
		echo "Build: $(rel "$SOF_BUILD_DIR"), source $(python3 "$BENCH_DIR/report.py" --source-of "$SOF_BUILD_DIR"), $REPS rounds, CPUs $CPU_A,$CPU_B, $((SECONDS / 60)) min."
		echo
		libs_ratios "$BENCH_TSV"
		echo
		echo "## Figures (label, unit, value, command)"
		echo
		awk -F'\t' '{ printf "- %s: %s %s — `%s`\n", $1, $3, $2, $4 }' "$BENCH_TSV"
		if [ -s "$BENCH_TSV.fail" ]; then
			echo
			echo "## Not measured"
			echo
			awk -F'\t' '{ printf "- %s: %s\n", $1, $2 }' "$BENCH_TSV.fail"
		fi
		awk -F'\t' '{ printf "\nNote (%s): %s\n", $1, $2 }' "$BENCH_TSV.note"
	} >"$BENCH_OUT"
	libs_ratios "$BENCH_TSV"
	echo "bench: libs section in $(rel "$BENCH_OUT")"
}

if [ "${1:-}" = --phase-same-host ]; then
	phase_same_host "$2"
	exit 0
fi
if [ "${1:-}" = --section ]; then
	case ${2:-} in
	libs) section_libs ;;
	fabric) section_alone fabric "issue 19's ratios" phase_fabric ;;
	sm) section_alone sm "issue 20's rows" phase_sm ;;
	ipoib) section_alone ipoib "issue 21's rows" phase_ipoib ;;
	*)
		echo "bench: sections: libs (issue 17's ratios), fabric (issue 19's), sm (issue 20's), ipoib (issue 21's)" >&2
		exit 2
		;;
	esac
	exit 0
fi
main
