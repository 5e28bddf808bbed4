#!/bin/bash
# bench/sm.sh — issue 20: time from start to SUBNET UP (every port with a
# link Active), softofed-sm (sm/) against Debian's OpenSM, each started
# fresh on the same fabric: softofed's (`softofed-fabric FILE --ibsim`) and
# ibsim's (`ibsim -s FILE`), both through Debian's libumad2sim; ft128,
# ft648, ft1152 (tests/topologies; BENCH_SM_TOPOS names others, by name
# there or by path, e.g. a 3-level tree of shared/topologies/gen_fattree3.py
# — ibsim runs with the issue's limits for those), BENCH_SM_UP_REPS
# rounds each (default BENCH_REPS, else 5: issue 19's ratio is within a
# few per cent), the median, and ours / OpenSM's (target <= 0.5);
# beside it issue 19's row: OpenSM on our fabric / the same OpenSM on ibsim
# (same file, same options; target <= 1, "met" or "not met").
#
# Issue 19's row is measured in runs of its own when the script runs as
# root (BENCH_SM_I19=pinned, the default then; BENCH_SM_I19=cfs takes it
# from the medians of the table above, as without root): OpenSM and the
# simulator, both simulators alike, SCHED_FIFO 20 and on one CPU
# (BENCH_SM_I19_CPU, default the last), in BENCH_SM_UP_REPS rounds whose
# order flips each round. A start is hand-offs between OpenSM's threads
# and the simulator; under CFS on a loaded machine each waits for a CPU
# behind whatever else runs, and the ratio is noise (bench/sm_ab.sh, 9
# alternating rounds at load 10: per-round ratios of our fabric to ibsim
# ft128 0.28-2.59, ft648 0.46-2.13, ft1152 0.44-2.06; the same build's
# starts on ft128 104-566 ms), where pinned and SCHED_FIFO the other
# programs wait and a start repeats to the wake-up (the same load: 0.74-0.97,
# 0.59-0.99, 0.69-0.92; ft128 starts 79-118 ms). Our fabric lowers its own policy
# at its start (its short CFS slice) and is put back to SCHED_FIFO once
# ready; ibsim keeps what it inherits. The 3-level trees' rows
# (BENCH_SM_BIG_IBSIM=1) stay the medians of their own table.
# Then the 3-level fat trees of the issue (BENCH_SM_BIG, default "24 36":
# the k of tests/topologies/gen_fattree3.py (the issue's generator from
# shared/topologies), written into a temporary
# directory; 3,456 hosts and 720 switches, 11,664 and 1,620): ours and
# OpenSM on our fabric (targets: ours under 2 s and under 10 s), median of
# BENCH_SM_BIG_REPS (default 1); on ibsim too with BENCH_SM_BIG_IBSIM=1
# (OpenSM there: 12.5 s and 72 s on this machine by the issue's count).
#
# Then the route balance of each (ours min-hop, OpenSM ftree) on our
# fabric: bench/route_balance.py over the LFTs ibroute reads back; and the
# reroute time of each after a cut link (trap 128 to tables written); the
# SA's PathRecord rate with one client and with 8 at once.
#
# Each SM's own clock: OpenSM's log from its first line to "SUBNET UP" (as
# bench/fabric.sh reads it), ours its "SUBNET UP in N ms" line (from the
# start of main(), before the umad port is opened). Both get a fresh
# fabric (no LIDs, no tables) and an empty cache (no guid2lid), and start
# once the simulator has loaded its topology (its socket is bound).
#
# Usage: bench/sm.sh  (BENCH_BUILD=DIR the build, default build/;
#        BENCH_OUT=FILE also appends the table there; BENCH_SM_ARGS more
#        options for softofed-sm; BENCH_SM_FABRIC_ARGS for our fabric,
#        e.g. "--sim-spin 200": spin after MADs; BENCH_SM_CPU=N the start
#        times with every process on CPU N). Runs in a network
#        namespace of its own.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BENCH_BUILD:-${SOF_BUILD:-$ROOT/build}}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
REPS=${BENCH_REPS:-3}
UP_REPS=${BENCH_SM_UP_REPS:-${BENCH_REPS:-5}}
TOPO=${SOF_TOPOLOGIES:-$ROOT/tests/topologies}
TOPOS=${BENCH_SM_TOPOS:-ft128 ft648 ft1152}
UMAD2SIM=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so

I19=${BENCH_SM_I19:-}
[ -z "$I19" ] && { [ "$(id -u)" = 0 ] && command -v chrt >/dev/null && I19=pinned || I19=cfs; }
I19_CPU=${BENCH_SM_I19_CPU:-$(($(nproc) - 1))}
if [ "${1:-}" != --inner ]; then
	# SCHED_FIFO needs the initial user namespace
	[ "$I19" = pinned ] && exec unshare -n "$0" --inner
	exec unshare -rn "$0" --inner
fi
ip link set lo up
TMP=$(mktemp -d /tmp/bench-sm.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

# sim_ready: wait (at most 60 s) until the simulator started last (ibsim
# or softofed-fabric --ibsim) has bound its client socket, i.e. has read
# its topology: a 3-level tree takes seconds to load on a loaded machine,
# which must not count as either SM's time to SUBNET UP
sim_ready() {
	for _ in $(seq 1 1200); do
		grep -q '@sim:ctl' /proc/net/unix 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR ? a[int((NR + 1) / 2)] : "-")}'; }

osm_ms() { python3 "$ROOT/bench/osm_start_ms.py" "$1"; }

# BENCH_SM_CPU=N: the start times' simulator and SM on CPU N only (both
# simulators alike): the hand-offs between the SM's threads and the
# simulator then never cross CPUs, which is most of OpenSM's start on two
# (bench/sm_ab.sh), and the times spread less
PIN=()
[ -n "${BENCH_SM_CPU:-}" ] && PIN=(taskset -c "$BENCH_SM_CPU")

# run FABRIC SM FILE [WAIT]: FABRIC ours|ibsim, SM ours|opensm; prints ms
# or nothing; WAIT the most seconds to SUBNET UP (default 90); every
# process run under PIN (and, with RT set, our fabric put back to
# SCHED_FIFO 20 once ready)
run() {
	local fab=$1 sm=$2 file=$3 wait=${4:-90} srv pid sim
	rm -rf "$TMP/w" && mkdir -p "$TMP/w" && cd "$TMP/w" || return
	if [ "$fab" = ours ]; then
		# shellcheck disable=SC2086 # options
		timeout $((wait + 210)) "${PIN[@]}" "$BUILD/bin/softofed-fabric" "$file" --ibsim ${BENCH_SM_FABRIC_ARGS:-} >/dev/null 2>&1 &
	else
		rm -f in && mkfifo in
		exec 7<>in
		# the limits the issue gives for the 3-level trees (harmless below)
		timeout $((wait + 210)) "${PIN[@]}" ibsim -N 20000 -S 2000 -P 100000 -L 49152 -s "$file" <in >/dev/null 2>&1 &
	fi
	srv=$!
	sim_ready
	sleep 0.1
	if [ -n "${RT:-}" ]; then
		sim=$(awk '{print $1}' "/proc/$srv/task/$srv/children" 2>/dev/null)
		[ -n "$sim" ] && chrt -f -p 20 "$sim"
	fi
	if [ "$sm" = opensm ]; then
		OSM_CACHE_DIR=$TMP/w OSM_TMP_DIR=$TMP/w LD_PRELOAD=$UMAD2SIM \
			timeout -s KILL $((wait + 20)) "${PIN[@]}" opensm -d 2 -f "$TMP/w/log" >/dev/null 2>&1 &
	else
		# shellcheck disable=SC2086 # options
		LD_PRELOAD=$UMAD2SIM timeout -s KILL $((wait + 20)) "${PIN[@]}" "$BUILD/bin/softofed-sm" ${BENCH_SM_ARGS:-} \
			>"$TMP/w/log" 2>&1 &
	fi
	pid=$!
	for _ in $(seq 1 $((wait * 20))); do
		grep -q 'SUBNET UP' "$TMP/w/log" 2>/dev/null && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	if [ "$sm" = opensm ]; then
		osm_ms "$TMP/w/log"
	else
		sed -n 's/.*SUBNET UP in \([0-9]*\) ms.*/\1/p' "$TMP/w/log" | head -n 1
	fi
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	[ "$fab" = ours ] || exec 7>&-
	kill "$srv" 2>/dev/null
	wait "$srv" 2>/dev/null
	cd "$ROOT" || return
}

# topo_file T: file, the topology file of T (a name in $TOPO or a path),
# and t, its name
topo_file() {
	case $1 in
	*/*) file=$1 t=$(basename "$1" .net) ;;
	*) file=$TOPO/$1.net t=$1 ;;
	esac
}

# medians FN ARGS...: `FN ours ARGS` and `FN opensm ARGS`, BENCH_REPS
# rounds of the two, their medians as "OURS OPENSM"
medians() {
	local fn=$1
	shift
	: >"$TMP/m_ours"
	: >"$TMP/m_osm"
	for _ in $(seq 1 "$REPS"); do
		"$fn" ours "$@" >>"$TMP/m_ours"
		"$fn" opensm "$@" >>"$TMP/m_osm"
	done
	echo "$(median <"$TMP/m_ours") $(median <"$TMP/m_osm")"
}

ratio() {
	[ "$1" != - ] && [ "$2" != - ] && [ "$2" -gt 0 ] && awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}' || echo -
}
# met A B: issue 19's verdict on OpenSM on our fabric (A ms) against OpenSM
# on ibsim (B ms): "met" when A / B <= 1
met() {
	if [ "$1" = - ] || [ "$2" = - ] || [ "$2" -le 0 ]; then
		echo -
	elif [ "$1" -le "$2" ]; then
		echo met
	else
		echo "not met"
	fi
}

rows=() i19rows=()
[ "${BENCH_SM_UP:-1}" = 0 ] && UPTOPOS="" || UPTOPOS=$TOPOS
for t in $UPTOPOS; do
	topo_file "$t"
	[ -f "$file" ] || { echo "# $file missing" >&2; continue; }
	for k in ours_ours ours_opensm ibsim_ours ibsim_opensm; do : >"$TMP/$k"; done
	for _ in $(seq 1 "$UP_REPS"); do
		for k in ours_ours ours_opensm ibsim_ours ibsim_opensm; do
			run "${k%_*}" "${k#*_}" "$file" >>"$TMP/$k"
		done
	done
	a=$(median <"$TMP/ours_ours") b=$(median <"$TMP/ours_opensm")
	c=$(median <"$TMP/ibsim_ours") d=$(median <"$TMP/ibsim_opensm")
	rows+=("| $t | $a | $b | $(ratio "$a" "$b") | $c | $d | $(ratio "$c" "$d") |")
	if [ "$I19" = pinned ]; then
		# issue 19's own rounds (the comment atop), the order flipping
		: >"$TMP/p_ours"
		: >"$TMP/p_ibsim"
		pin0=("${PIN[@]}")
		PIN=(chrt -f 20 taskset -c "$I19_CPU")
		for r in $(seq 1 "$UP_REPS"); do
			order="ours ibsim"
			[ $((r % 2)) = 0 ] && order="ibsim ours"
			for fab in $order; do
				RT=1 run "$fab" opensm "$file" >>"$TMP/p_$fab"
			done
		done
		PIN=("${pin0[@]}")
		b=$(median <"$TMP/p_ours") d=$(median <"$TMP/p_ibsim")
	fi
	i19rows+=("| $t | $b | $d | $(ratio "$b" "$d") | $(met "$b" "$d") |")
done

# the 3-level trees: 300 s to SUBNET UP each (OpenSM on ibsim: 72 s for
# k=36 on a quiet machine)
big_rows=()
[ "${BENCH_SM_UP:-1}" = 0 ] && BIG="" || BIG=${BENCH_SM_BIG-24 36}
for k in $BIG; do
	file=$TMP/k$k.net
	python3 "$ROOT/tests/topologies/gen_fattree3.py" "$k" "$file" >/dev/null ||
		{ echo "# gen_fattree3.py $k failed" >&2; continue; }
	kinds="ours_ours ours_opensm"
	[ "${BENCH_SM_BIG_IBSIM:-0}" = 1 ] && kinds="$kinds ibsim_ours ibsim_opensm"
	for kd in ours_ours ours_opensm ibsim_ours ibsim_opensm; do : >"$TMP/$kd"; done
	for _ in $(seq 1 "${BENCH_SM_BIG_REPS:-1}"); do
		for kd in $kinds; do
			run "${kd%_*}" "${kd#*_}" "$file" 300 >>"$TMP/$kd"
		done
	done
	a=$(median <"$TMP/ours_ours") b=$(median <"$TMP/ours_opensm")
	c=$(median <"$TMP/ibsim_ours") d=$(median <"$TMP/ibsim_opensm")
	hosts=$((k * k * k / 4)) sws=$((k * k * 5 / 4))
	case $k in 24) target='< 2000' ;; 36) target='< 10000' ;; *) target=- ;; esac
	big_rows+=("| k=$k ($hosts hosts, $sws switches) | $a | $b | $(ratio "$a" "$b") | $c | $d | $(ratio "$c" "$d") | $target |")
	[ "$d" = - ] || i19rows+=("| k=$k | $b | $d | $(ratio "$b" "$d") | $(met "$b" "$d") |")
done

# sm_up DIR SM FILE [ARGS...]: in the new directory DIR, a fresh
# softofed-fabric of FILE (--ibsim) and SM (ours | opensm, with ARGS)
# through libumad2sim, waited for until its log DIR/log says
# SUBNET UP (at most 90 s); FAB and SMPID their PIDs (sm_down stops them)
sm_up() {
	local dir=$1 sm=$2 file=$3
	shift 3
	rm -rf "$dir" && mkdir -p "$dir" && cd "$dir" || return 1
	timeout 300 "$BUILD/bin/softofed-fabric" "$file" --ibsim >/dev/null 2>&1 &
	FAB=$!
	sim_ready
	sleep 0.1
	if [ "$sm" = opensm ]; then
		OSM_CACHE_DIR=$dir OSM_TMP_DIR=$dir LD_PRELOAD=$UMAD2SIM \
			timeout -s KILL 200 opensm "$@" -d 2 -f "$dir/log" >/dev/null 2>&1 &
	else
		LD_PRELOAD=$UMAD2SIM timeout -s KILL 200 "$BUILD/bin/softofed-sm" "$@" >"$dir/log" 2>&1 &
	fi
	SMPID=$!
	for _ in $(seq 1 1800); do
		grep -q 'SUBNET UP' "$dir/log" 2>/dev/null && break
		sleep 0.05
	done
}
# (the SM first, the simulator once it is gone: libumad2sim's exit waits
# for the simulator's answer to its disconnect with no time-out, so an SM
# whose simulator died first hangs until its `timeout` kills it)
sm_down() {
	kill "$SMPID" 2>/dev/null
	wait "$SMPID" 2>/dev/null
	kill "$FAB" 2>/dev/null
	wait "$FAB" 2>/dev/null
	cd "$ROOT" || return
}
# Route balance (issue 20; target: ours, fat-tree engine, <= OpenSM's
# ftree; ours min-hop beside): the most paths
# of an all-to-all on one switch-to-switch link, from the LFTs each SM
# wrote on our fabric (ibnetdiscover + ibroute of every switch,
# bench/route_balance.py); BENCH_SM_BALANCE=0 skips it
balance() { # SM FILE: prints "max mean"; SM opensm (ftree), ours (min-hop), ours_ftree
	local sm=$1 file=$2 l
	case $sm in
	opensm) sm_up "$TMP/b" opensm "$file" -R ftree || return ;;
	ours_ftree) sm_up "$TMP/b" ours "$file" --routing ftree || return ;;
	*) sm_up "$TMP/b" ours "$file" || return ;;
	esac
	LD_PRELOAD=$UMAD2SIM timeout 60 ibnetdiscover >ibnd 2>/dev/null
	for l in $(sed -n 's/^Switch.*base port 0 lid \([0-9]*\) .*/\1/p' ibnd); do
		LD_PRELOAD=$UMAD2SIM timeout 20 ibroute "$l" 2>/dev/null
	done >lft
	python3 "$ROOT/bench/route_balance.py" ibnd lft | sed -n 's/.* max \([0-9]*\) mean \([0-9.]*\) .*/\1 \2/p'
	sm_down
}
brows=()
if [ "${BENCH_SM_BALANCE:-1}" != 0 ]; then
	for t in $TOPOS; do
		topo_file "$t"
		[ -f "$file" ] || continue
		read -r tm tmean <<<"$(balance ours_ftree "$file")"
		read -r om omean <<<"$(balance ours "$file")"
		read -r fm fmean <<<"$(balance opensm "$file")"
		brows+=("| $t | ${tm:--} | ${tmean:--} | ${om:--} | ${omean:--} | ${fm:--} | ${fmean:--} |")
	done
fi

# Reroute time (issue 20): on our fabric, after SUBNET UP, the first link
# of Leaf0 to a spine is cut (`softofed fabric link`); the time from the
# trap 128 reaching the SM to its new tables written: ours its "rerouted:
# trap to tables written in N ms" line (the trap's arrival to the last
# LFT/PortInfo Set of the heavy sweep answered), OpenSM's log (-D 0x87)
# from "Received Generic Notice type:1 num:128" to the "SUBNET UP" of the
# sweep it started. BENCH_SM_REROUTE=0 skips it.
osm_reroute_ms() {
	python3 - "$1" <<'PY'
import re, sys
t0 = None
for line in open(sys.argv[1]):
    m = re.match(r'^\w+ +\d+ (\d+):(\d+):(\d+) (\d+) ', line)
    if not m:
        continue
    t = ((int(m.group(1)) * 60 + int(m.group(2))) * 60 + int(m.group(3))) * 1000 + int(m.group(4)) / 1000
    if t0 is None and 'Received Generic Notice type:1 num:128' in line:
        t0 = t
    elif t0 is not None and ' -> SUBNET UP' in line:
        print('%.1f' % (t - t0))
        break
PY
}
reroute() { # SM FILE: prints ms or nothing
	local sm=$1 file=$2 port
	port=$(awk '/^Switch.*"Leaf0"/ {f = 1; next} f && /^$/ {exit} f && /"Spine/ {gsub(/[][]/, "", $1); print $1; exit}' "$file")
	[ -n "$port" ] || return
	if [ "$sm" = opensm ]; then
		sm_up "$TMP/r" opensm "$file" -D 0x87 || return
	else
		sm_up "$TMP/r" ours "$file" || return
	fi
	sleep 1
	timeout 20 "$BUILD/bin/softofed" fabric link Leaf0 "$port" down >/dev/null 2>&1
	for _ in $(seq 1 200); do
		if [ "$sm" = opensm ]; then
			[ "$(grep -c ' -> SUBNET UP' "$TMP/r/log")" -ge 2 ] && break
		else
			grep -q 'rerouted:' "$TMP/r/log" && break
		fi
		sleep 0.05
	done
	if [ "$sm" = opensm ]; then
		osm_reroute_ms "$TMP/r/log"
	else
		sed -n 's/.*rerouted: trap to tables written in \([0-9.]*\) ms.*/\1/p' "$TMP/r/log" | head -n 1
	fi
	sm_down
}
rrows=()
if [ "${BENCH_SM_REROUTE:-1}" != 0 ]; then
	for t in $TOPOS; do
		topo_file "$t"
		[ -f "$file" ] || continue
		read -r a b <<<"$(medians reroute "$file")"
		rrows+=("| $t | $a | $b |")
	done
fi

# SA PathRecord rate (issue 20; target ours >= OpenSM's): on our fabric
# (BENCH_SM_SA_TOPO, default ft128, whose hosts are named H<leaf>_<n>),
# tests/progs/umad_sa -p N -l SMLID (PathRecord Gets by LIDs, one at a
# time, each answer checked) through rdma-core's libibumad and
# libumad2sim: one client (H1_1), then 8 at once (H0_1 .. H7_1), each
# BENCH_SM_SA_N Gets (default 2000); 8 clients' rate = all their Gets over
# the longest client's time. BENCH_SM_SA=0 skips it.
UMAD_SA=$BUILD/tests/umad_sa
SYS_UMAD=/usr/lib/x86_64-linux-gnu/libibumad.so.3
sa_rate() { # SM NCLIENTS FILE: prints paths/s or nothing
	local sm=$1 ncl=$2 file=$3 i n=${BENCH_SM_SA_N:-2000} pids=() ms max=0 bad=0
	sm_up "$TMP/s" "$sm" "$file" || return
	sleep 1
	for i in $(seq 0 $((ncl - 1))); do
		[ "$ncl" = 1 ] && i=1
		# umad_sa links our libibumad by its RUNPATH: rdma-core's first
		SIM_HOST=H${i}_1 LD_PRELOAD="$SYS_UMAD $UMAD2SIM" timeout 60 "$UMAD_SA" -C ibsim0 -p "$n" \
			-l "$(SIM_HOST=H${i}_1 LD_PRELOAD=$UMAD2SIM timeout 10 sminfo 2>/dev/null | sed -n 's/^sminfo: sm lid \([0-9]*\) .*/\1/p')" \
			>"$TMP/s/c$i" 2>&1 &
		pids+=($!)
	done
	wait "${pids[@]}"
	for i in $(seq 0 $((ncl - 1))); do
		[ "$ncl" = 1 ] && i=1
		ms=$(sed -n 's/^umad_sa ok: [0-9]* paths in \([0-9]*\) ms.*/\1/p' "$TMP/s/c$i")
		if [ -z "$ms" ]; then
			bad=1
		elif [ "$ms" -gt "$max" ]; then
			max=$ms
		fi
	done
	[ "$bad" = 0 ] && [ "$max" -gt 0 ] && echo $((ncl * n * 1000 / max))
	sm_down
}
srows=()
if [ "${BENCH_SM_SA:-1}" != 0 ] && [ -x "$UMAD_SA" ]; then
	t=${BENCH_SM_SA_TOPO:-ft128}
	file=$TOPO/$t.net
	for k in 1 8; do
		read -r a b <<<"$(medians sa_rate "$k" "$file")"
		srows+=("| $t | $k | $a | $b | $(ratio "$a" "$b") |")
	done
fi

{
	if [ ${#rows[@]} -gt 0 ]; then
		echo "### Start to SUBNET UP: softofed-sm against OpenSM (issue 20; target ours / OpenSM <= 0.5), median of $UP_REPS${BENCH_SM_CPU:+, every process on CPU $BENCH_SM_CPU}, ms"
		echo
		echo "| topology | ours on our fabric | OpenSM on our fabric | ratio | ours on ibsim | OpenSM on ibsim | ratio |"
		echo "|---|---|---|---|---|---|---|"
		printf '%s\n' "${rows[@]}"
	fi
	if [ ${#big_rows[@]} -gt 0 ]; then
		echo
		echo "### Start to SUBNET UP, 3-level fat trees (gen_fattree3.py; issue 20: ours under 2 s and 10 s, OpenSM's time beside), median of ${BENCH_SM_BIG_REPS:-1}, ms"
		echo
		echo "| topology | ours on our fabric | OpenSM on our fabric | ratio | ours on ibsim | OpenSM on ibsim | ratio | target, ours |"
		echo "|---|---|---|---|---|---|---|---|"
		printf '%s\n' "${big_rows[@]}"
	fi
	if [ ${#i19rows[@]} -gt 0 ]; then
		echo
		if [ "$I19" = pinned ]; then
			how="median of $UP_REPS, every process SCHED_FIFO on CPU $I19_CPU"
		else
			how="the medians above${BENCH_SM_CPU:+ (every process on CPU $BENCH_SM_CPU)}"
		fi
		echo "### OpenSM's start on our fabric against the same OpenSM on ibsim (issue 19; target our fabric / ibsim <= 1), $how, ms"
		echo
		echo "| topology | OpenSM on our fabric | OpenSM on ibsim | our fabric / ibsim | issue 19 |"
		echo "|---|---|---|---|---|"
		printf '%s\n' "${i19rows[@]}"
	fi
	if [ ${#brows[@]} -gt 0 ]; then
		echo
		echo "### Route balance, all-to-all: most paths on one switch-to-switch link (issue 20; target ours, fat-tree engine, <= OpenSM ftree)"
		echo
		echo "| topology | ours (fat-tree) max | mean | ours (min-hop) max | mean | OpenSM ftree max | mean |"
		echo "|---|---|---|---|---|---|---|"
		printf '%s\n' "${brows[@]}"
	fi
	if [ ${#srows[@]} -gt 0 ]; then
		echo
		echo "### SA PathRecord Gets per second on our fabric, one at a time per client (issue 20; target ours >= OpenSM), median of $REPS"
		echo
		echo "| topology | clients | ours | OpenSM | ratio |"
		echo "|---|---|---|---|---|"
		printf '%s\n' "${srows[@]}"
	fi
	if [ ${#rrows[@]} -gt 0 ]; then
		echo
		echo "### Reroute after a cut Leaf0-spine link on our fabric: trap 128 to tables written (issue 20), median of $REPS, ms"
		echo
		echo "| topology | ours | OpenSM |"
		echo "|---|---|---|"
		printf '%s\n' "${rrows[@]}"
	fi
} | tee -a "${BENCH_OUT:-/dev/null}"
