#!/bin/bash
# tests/run.sh — runs the whole test suite and ends with one line
# "N passed, N failed, N skipped" (the `ok - ` / `not ok - ` lines of every
# test; "not ok - ... # TODO" lines, known gaps such as a consumer that
# imports a stub, are counted as skipped and listed at the end).
#
#   1. unit tests: every build/tests/test_* and build-asan/tests/test_*
#      binary, each in a fresh network namespace with its own daemon of the
#      same build (sof_ns_run), bounded by 120 s; each unit test (an `ok`
#      line of a binary) counts once: passed when it passed in every build
#      that ran, failed once otherwise (a line "# unit tests: ..." says
#      which builds ran);
#   1b. tests/fuzz/run.sh: every libFuzzer target, a few seconds each;
#   2. tests/symbols.sh: the ABI check against every installed consumer;
#   3. tests/integration/*.sh, then tests/consumers/*.sh, each bounded by
#      SOF_TEST_TIMEOUT seconds (default 600);
#   4. tests/hosts/*.sh: hosts as network namespaces with RoCEv2 between
#      them (topology, helper programs, pingpong, perftest, capture, bad
#      packets, impairments, multicast, memory windows), each bounded the
#      same way; then bad packets, impairments, multicast and memory windows
#      again with the ASan/UBSan build's daemon.
#
# A test that exits non-zero without printing a `not ok` line, prints no
# result at all, or times out counts as one failure. Exit status 0 only when
# nothing failed (and something ran).
#
# Usage: [SOF_BUILD=DIR] tests/run.sh [-k REGEX]
#   -k REGEX   run only the tests whose name (e.g. build-asan/tests/test_verbs_data,
#              tests/consumers/pingpong.sh) matches the extended regex
#   SOF_BUILD  test that one build (a directory relative to the tree, or
#              absolute) instead of build and build-asan; a sanitizer build
#              (name containing "asan") runs the unit tests only, since
#              unmodified programs cannot load a sanitized library
set -u

ONE_BUILD=${SOF_BUILD:-}
# shellcheck source=tests/lib.sh disable=SC2016
. "$(dirname "$0")/lib.sh"
cd "$SOF_ROOT" || exit 1

PATTERN=""
while getopts k:h opt; do
	case $opt in
	k) PATTERN=$OPTARG ;;
	*)
		sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'
		exit 2
		;;
	esac
done

UNIT_TIMEOUT=${SOF_UNIT_TIMEOUT:-120}
TEST_TIMEOUT=${SOF_TEST_TIMEOUT:-600}
T_PASS=0
T_FAIL=0
T_TODO=0 # "not ok - ... # TODO": known gaps (a consumer that imports stubs), neither passed nor failed
TODO_LIST=$(mktemp /tmp/sof-todo.XXXXXX) || exit 1
FAIL_LIST=$(mktemp /tmp/sof-fail.XXXXXX) || exit 1 # repeated at the end, where CI's excerpt shows it
OUT=$(mktemp /tmp/sof-run.XXXXXX) || exit 1
trap 'rm -f "$OUT" "$TODO_LIST" "$FAIL_LIST"' EXIT
T0=$(now_ms)

selected() {
	[ -z "$PATTERN" ] || [[ $1 =~ $PATTERN ]]
}

# result NAME REASON: a failure the runner itself finds
result_fail() {
	echo "not ok - $1: $2" | tee -a "$FAIL_LIST"
	T_FAIL=$((T_FAIL + 1))
}

# run_test NAME SECS CMD...: run one test (output shown as it comes, with
# any "N passed, N failed" line of the test itself reworded so that only
# ours closes the run), then count its result lines. RT_SAVE=FILE: its
# result lines (also the runner's own) go to FILE and are not counted here
# (the unit tests, counted once over both builds).
run_test() {
	local name=$1 secs=$2 rc np nf nt t
	shift 2
	echo "# ---- $name"
	t=$(now_ms)
	timeout -k 10 "$secs" "$@" </dev/null 2>&1 | tee "$OUT" |
		sed -u -E 's/([0-9]+) passed, ([0-9]+) failed[[:space:]]*$/\1 ok, \2 not ok/'
	rc=${PIPESTATUS[0]}
	np=$(grep -c '^ok - ' "$OUT")
	nf=$(grep '^not ok - ' "$OUT" | grep -vc ' # TODO')
	nt=$(grep '^not ok - ' "$OUT" | grep -c ' # TODO')
	grep '^not ok - .* # TODO' "$OUT" >>"$TODO_LIST"
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		if ! grep -q '^not ok - .*timed out' "$OUT"; then
			echo "not ok - $name: timed out after $secs s" | tee -a "$OUT"
			nf=$((nf + 1))
		fi
	elif [ "$rc" -ne 0 ] && [ "$nf" -eq 0 ]; then
		echo "not ok - $name: exit status $rc" | tee -a "$OUT"
		nf=$((nf + 1))
	elif [ "$rc" -eq 0 ] && [ $((np + nf)) -eq 0 ]; then
		echo "not ok - $name: printed no result line" | tee -a "$OUT"
		nf=$((nf + 1))
	fi
	echo "# $name: $np ok, $nf not ok, $nt todo, exit $rc, $((($(now_ms) - t) / 1000)) s"
	if [ -n "${RT_SAVE:-}" ]; then
		grep -E '^(not )?ok - ' "$OUT" >"$RT_SAVE"
		return
	fi
	grep '^not ok - ' "$OUT" | grep -v ' # TODO' | cut -c1-300 >>"$FAIL_LIST"
	T_PASS=$((T_PASS + np))
	T_FAIL=$((T_FAIL + nf))
	T_TODO=$((T_TODO + nt))
}

# unit_merge NAME FILE...: the result lines one unit test binary printed in
# each build (FILE per build, "BUILD" on its first line), counted once:
# a test passes when every build printed its `ok` line; otherwise it is
# one failure, shown with the builds it failed or was missing in
unit_merge() {
	local name=$1 np nf res
	shift
	res=$(awk -v nb=$# '
		FNR == 1 { b = $0; builds[++n] = b; next }
		{
			st = /^ok - / ? "ok" : "fail"
			t = $0; sub(/^(not )?ok - /, "", t)
			# the runner names a binary by its build: one key for both
			gsub(/[^ ]*\/tests\/test_/, "tests/test_", t)
			if (!(t in seen)) { seen[t] = 1; order[++k] = t }
			if (st == "ok") okin[t] = okin[t] " " b
			else failin[t] = failin[t] " " b
		}
		END {
			for (i = 1; i <= k; i++) {
				t = order[i]
				if (!(t in failin) && split(okin[t], x, " ") == nb) { np++; continue }
				nf++
				miss = ""
				for (j = 1; j <= n; j++)
					if (index(okin[t] " ", " " builds[j] " ") == 0 &&
					    index(failin[t] " ", " " builds[j] " ") == 0)
						miss = miss " " builds[j]
				printf "not ok - %s [failed in:%s%s%s]\n", t, failin[t] == "" ? " none" : failin[t],
					miss == "" ? "" : "; no result in:", miss
			}
			printf "%d %d\n", np, nf
		}' "$@")
	echo "$res" | sed '$d' | tee -a "$FAIL_LIST"
	read -r np nf <<<"$(echo "$res" | tail -n 1)"
	echo "# unit $name: $np ok in every build, $nf not ok (each counted once)"
	T_PASS=$((T_PASS + np))
	T_FAIL=$((T_FAIL + nf))
}

# script_cmd FILE: sets CMD to run a test script, through its #! line when
# it is executable, else through bash
script_cmd() {
	if [ -x "$1" ]; then
		CMD=("$SOF_ROOT/$1")
	else
		CMD=(bash "$SOF_ROOT/$1")
	fi
}

# ---- 1. unit tests, in each build, each with a private daemon; each
# unit test counted once over the builds (unit_merge)
BUILDS=(build build-asan)
[ -n "$ONE_BUILD" ] && BUILDS=("$ONE_BUILD")
UNIT_DIR=$(mktemp -d /tmp/sof-unit.XXXXXX) || exit 1
trap 'rm -f "$OUT"; rm -rf "$UNIT_DIR"' EXIT
declare -A UNIT_NAMES=()
UNIT_RAN=()
for build in "${BUILDS[@]}"; do
	n=0
	for b in "$build"/tests/test_*; do
		[ -f "$b" ] && [ -x "$b" ] && UNIT_NAMES[${b##*/}]=1 && n=$((n + 1))
	done
	if [ "$n" -eq 0 ] && selected "$build/tests/test_"; then
		result_fail "$build/tests" "no unit test binaries (make build / make build-asan first)"
	fi
done
mapfile -t UNITS < <(printf '%s\n' "${!UNIT_NAMES[@]}" | sort)
for u in "${UNITS[@]}"; do
	files=() pids=() ran=() rbuild=()
	for build in "${BUILDS[@]}"; do
		b=$build/tests/$u
		selected "$b" || continue
		f=$UNIT_DIR/$u.${build//\//_}
		files+=("$f")
		[[ " ${UNIT_RAN[*]} " == *" $build "* ]] || UNIT_RAN+=("$build")
		if [ ! -x "$b" ]; then
			printf '%s\nnot ok - %s: missing in this build\n' "$build" "$b" >"$f"
			continue
		fi
		envs=(SOF_BUILD="$build" SOF_NS_TIMEOUT="$UNIT_TIMEOUT" SOF_NS_NAME="$b")
		if [[ $build == *asan* ]]; then
			envs+=(ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}"
				UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}")
		fi
		# the builds of one binary at once, each in its own namespace
		# with its own daemon; its output is shown once all have ended
		# shellcheck disable=SC2016
		(
			OUT=$f.out
			RT_SAVE=$f.lines run_test "$b" $((UNIT_TIMEOUT + 90)) env "${envs[@]}" \
				bash -c '. "$1" || exit 1; sof_ns_run "$2"' sof-unit \
				"$SOF_ROOT/tests/lib.sh" "$(realpath "$b")"
		) >"$f.log" 2>&1 &
		pids+=("$!")
		ran+=("$f")
		rbuild+=("$build")
	done
	[ ${#pids[@]} -gt 0 ] && wait "${pids[@]}"
	for i in "${!ran[@]}"; do
		f=${ran[$i]}
		cat "$f.log"
		{
			echo "${rbuild[$i]}"
			cat "$f.lines"
		} >"$f"
	done
	[ ${#files[@]} -gt 0 ] && unit_merge "$u" "${files[@]}"
done
[ ${#UNIT_RAN[@]} -gt 0 ] &&
	echo "# unit tests: ran in ${#UNIT_RAN[@]} build(s): ${UNIT_RAN[*]}; each test counted once (ok only when ok in each of them)"

if [[ $ONE_BUILD == *asan* ]]; then
	echo "# $ONE_BUILD is a sanitizer build: unit tests only"
	echo "# total time $((($(now_ms) - T0) / 1000)) s"
	echo "$T_PASS passed, $T_FAIL failed"
	[ "$T_FAIL" -eq 0 ] && [ $((T_PASS + T_FAIL)) -gt 0 ]
	exit
fi

# ---- 1b. fuzz targets (libFuzzer, clang), each for its FUZZ_SECS (default 10 s)
if selected tests/fuzz/run.sh; then
	script_cmd tests/fuzz/run.sh
	run_test tests/fuzz/run.sh "$TEST_TIMEOUT" "${CMD[@]}"
fi

# ---- 2. the ABI check
if selected tests/symbols.sh; then
	if [ -f tests/symbols.sh ]; then
		script_cmd tests/symbols.sh
		run_test tests/symbols.sh 300 "${CMD[@]}" "$SOF_BUILD_DIR"
	else
		result_fail tests/symbols.sh "missing"
	fi
fi

# ---- 3. integration tests and the consumer ladder
for f in tests/integration/*.sh tests/consumers/*.sh; do
	[ -f "$f" ] || continue
	selected "$f" || continue
	script_cmd "$f"
	run_test "$f" "$TEST_TIMEOUT" env SOF_BUILD="${ONE_BUILD:-build}" "${CMD[@]}" "$SOF_BUILD_DIR"
done

# ---- 4. hosts as network namespaces (issue 3: RoCEv2 between hosts)
for f in tests/hosts/topology.sh tests/hosts/progs_local.sh tests/hosts/pingpong.sh \
	tests/hosts/perftest.sh tests/hosts/capture.sh tests/hosts/badpackets.sh \
	tests/hosts/netem.sh tests/hosts/netem_std.sh tests/hosts/mcast.sh tests/hosts/rdmacm.sh \
	tests/hosts/engine.sh tests/hosts/lat_after_bw.sh \
	tests/hosts/flows.sh tests/hosts/mw.sh tests/hosts/libfabric.sh tests/hosts/ucx.sh \
	tests/hosts/mpi.sh tests/hosts/dm.sh tests/hosts/ratelimit.sh tests/hosts/mr_kinds.sh \
	tests/hosts/xrc.sh tests/hosts/raw.sh tests/hosts/srq_resize.sh tests/hosts/sack.sh tests/hosts/sack_lone.sh \
	tests/hosts/chan_poll.sh tests/hosts/iblink.sh tests/hosts/ibdata.sh tests/hosts/umad.sh tests/hosts/umad_loss.sh \
	tests/hosts/onesided.sh tests/hosts/rsocket.sh tests/hosts/sdp.sh tests/hosts/rsocket_apps.sh tests/hosts/opensm.sh tests/hosts/opensm_line3.sh \
	tests/hosts/ibfabric_diags.sh tests/hosts/ibfabric_ft128.sh tests/hosts/ibfabric_data.sh tests/hosts/ibengine.sh tests/hosts/ibgso.sh \
	tests/hosts/sm.sh tests/hosts/sm_line3.sh tests/hosts/sa.sh tests/hosts/sm_reroute.sh tests/hosts/sm_bigtable.sh tests/hosts/sm_handover_data.sh \
	tests/hosts/ipoib.sh tests/hosts/ipoib_line3.sh tests/hosts/ipoib_sm.sh tests/hosts/ipoib_sm_pair.sh tests/hosts/ipoib_cm.sh tests/hosts/ipoib_ssh.sh tests/hosts/ibcm.sh \
	tests/hosts/ibcapture.sh tests/hosts/partitions.sh tests/hosts/partitions_sm.sh tests/hosts/sm_mkey.sh tests/hosts/dropin.sh; do
	selected "$f" || continue
	if [ ! -f "$f" ]; then
		result_fail "$f" "missing"
		continue
	fi
	script_cmd "$f"
	run_test "$f" "$TEST_TIMEOUT" env SOF_BUILD="${ONE_BUILD:-build}" "${CMD[@]}"
done

# ---- 4b. the transport engine under ASan/UBSan with real traffic: the
# sanitizer build's daemon with the plain build's library and programs
# (unmodified programs cannot load a sanitized library), the programs'
# RC/UC QPs on the daemon's engine (SOFTOFED_ENGINE=daemon); the hosts'
# teardown fails a test on any sanitizer report in a daemon's log.
# IPoIB: ipoib_cm.sh only; its RC connections, datagram fallback (ARP, ND,
# bulk UD), SA joins, CM REQ/REJ and a SIGKILLed ipoib cover the daemon
# paths ipoib.sh takes too. netem.sh: the runs without impairment, the
# corrupted bytes and the link cuts, then two of its six impairments:
# loss 10% (loss recovered by SACK and retransmission, the CM's MADs lost)
# and loss + duplication + reordering + delay both ways (every recovery
# path at once: holes resent, repeated requests answered, sequence errors,
# both directions); the other four (loss 1%, reordering, duplication,
# delay 10ms alone) take no daemon path those two do not, and run with
# the plain daemon above.
MIX=""
if [ -z "$ONE_BUILD" ] && [ -x build-asan/bin/softofedd ] && [ -x build/bin/softofed ]; then
	MIX=$(mktemp -d /tmp/sof-mix.XXXXXX)
	mkdir -p "$MIX/bin"
	cp build/bin/softofed "$MIX/bin/" && cp build-asan/bin/softofedd "$MIX/bin/"
	ln -s "$SOF_ROOT/build/lib" "$MIX/lib"
	ln -s "$SOF_ROOT/build/tests" "$MIX/tests"
fi
for f in tests/hosts/badpackets.sh tests/hosts/netem.sh tests/hosts/mcast.sh tests/hosts/mr_kinds.sh \
	tests/hosts/mw.sh tests/hosts/srq_resize.sh tests/hosts/iblink.sh tests/hosts/ibdata.sh \
	tests/hosts/umad.sh tests/hosts/opensm.sh tests/hosts/ibfabric_diags.sh tests/hosts/ipoib_cm.sh \
	tests/hosts/ibcm.sh tests/hosts/partitions_sm.sh tests/hosts/sm_mkey.sh; do
	selected "$f (asan daemon)" || continue
	[ -n "$MIX" ] || continue
	script_cmd "$f"
	only=()
	[ "$f" = tests/hosts/netem.sh ] && only=(SOF_NETEM_ONLY='^loss 10%$|both ways')
	run_test "$f (asan daemon)" "$TEST_TIMEOUT" env SOF_BUILD="$MIX" SOFTOFED_ENGINE=daemon "${only[@]}" \
		ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}" \
		UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}" "${CMD[@]}"
done
# the daemon's takeover of a stopped program's responder (issue 18): the
# RC QPs' transport in the programs, the sanitized daemon running it
for f in tests/hosts/onesided.sh; do
	selected "$f (asan daemon)" || continue
	[ -n "$MIX" ] || continue
	script_cmd "$f"
	# the parts the daemon's takeover runs (not the idle wake-ups, the
	# writer's retries into a killed target, the progress thread's atomics)
	run_test "$f (asan daemon)" "$TEST_TIMEOUT" env SOF_BUILD="$MIX" \
		SOF_ONESIDED_ONLY='^(stopped|uc|recv|fatal|killrecv)$' \
		ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}" \
		UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}" "${CMD[@]}"
done
[ -n "$MIX" ] && rm -rf "$MIX"

if [ "$T_TODO" -gt 0 ]; then
	echo "# known gaps (TODO, counted as skipped): $T_TODO"
	sed 's/^/#   /' "$TODO_LIST"
fi
if [ -s "$FAIL_LIST" ]; then
	echo "# failed:"
	sed 's/^/#   /' "$FAIL_LIST"
fi
echo "# total time $((($(now_ms) - T0) / 1000)) s"
echo "$T_PASS passed, $T_FAIL failed, $T_TODO skipped"
[ "$T_FAIL" -eq 0 ] && [ $((T_PASS + T_FAIL)) -gt 0 ]
