#!/bin/bash
# tests/fuzz/run.sh — builds and runs every libFuzzer target for a bounded
# time. Prints one `ok - fuzz/NAME (N runs)` or `not ok - fuzz/NAME: WHY`
# line per target (tests/run.sh counts them); exits 1 when any failed.
#
# A target is tests/fuzz/fuzz_NAME.c. It lists what it is built from in two
# comment lines, paths relative to the repository:
#     FUZZ_SOURCES: tests/fuzz/fuzz_NAME.c transport/wire.c ...
#     FUZZ_INCLUDES: transport ...
# and is compiled with clang -fsanitize=fuzzer,address,undefined and the
# repository's warning flags (-Werror), one object per source file: the
# objects live in build-fuzz/obj/KEY/ (KEY: the compiler, flags and
# include list). Every object is compiled with the include directories of
# all the targets' FUZZ_INCLUDES lines together (no two of those
# directories have a header of the same name, so each #include finds the
# file it finds with the target's own list), so targets built from the
# same sources share their objects, and an object is compiled again only when its
# source or a header it read (clang -MMD) is newer; SOF_FUZZ_JOBS (default
# 2) compile at once. Its seed corpus is
# tests/fuzz/corpus_NAME/ when that exists (read only); what the fuzzer
# finds goes to a working corpus in the build directory, kept between runs.
# A crashing input is saved there as crash-* and named in the result.
#
# A target that writes its own seeds says so on a third line,
#     FUZZ_SEEDS_ENV: VAR
# and is first run once with VAR=DIR: it writes every seed to DIR, checking
# that each does what it was made for, and exits 0. Each seed must then be
# in tests/fuzz/corpus_NAME/ as written (other files may be there too).
#
# A target fuzzes for 10 s, or for the seconds of its own line
#     FUZZ_SECS: N
# (the small parsers whose coverage stops growing within a second or two
# take fewer; the transport, CM, MAD and SM targets keep the 10 s).
#
# Every target is built (and its seeds checked) first, in order; then the
# fuzzers run, SOF_FUZZ_RUN_JOBS at once (default: the number of CPUs, at
# most 4): a fuzzer is one process on one CPU, so on a machine with two
# the targets' seconds are spent two at a time instead of one after the
# other, each target still fuzzing its whole FUZZ_SECS. The result lines
# come in the targets' order once all have run.
#
# Environment:
#   SOF_FUZZ_SECS    seconds to fuzz every target (default: each target's
#                    FUZZ_SECS, else 10)
#   SOF_FUZZ_JOBS    compilers run at once (default 2)
#   SOF_FUZZ_RUN_JOBS fuzzers run at once (default nproc, at most 4)
#   SOF_FUZZ_BUILD   build directory (default build-fuzz in the repository)
#   SOF_FUZZ_ONLY    run only the targets whose NAME matches this regex
#   CC_FUZZ          the compiler (default clang)
#
# Usage: tests/fuzz/run.sh
set -u

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
JOBS=${SOF_FUZZ_JOBS:-2}
RUN_JOBS=${SOF_FUZZ_RUN_JOBS:-$(nproc 2>/dev/null || echo 1)}
[ "$RUN_JOBS" -ge 1 ] 2>/dev/null || RUN_JOBS=1
[ -n "${SOF_FUZZ_RUN_JOBS:-}" ] || [ "$RUN_JOBS" -le 4 ] || RUN_JOBS=4
BUILD=${SOF_FUZZ_BUILD:-$ROOT/build-fuzz}
CC_FUZZ=${CC_FUZZ:-clang}
# shellcheck disable=SC2054 # (commas inside compiler flags)
CFLAGS=(-std=c11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
	-Wall -Wextra -Wmissing-prototypes -Wshadow -Wstrict-prototypes -Wformat=2
	-Wwrite-strings -fno-strict-aliasing -Werror)
FAILED=0

not_ok() {
	echo "not ok - fuzz/$1: $2"
	FAILED=1
}

# field FILE KEY: the words after "KEY:" in FILE
field() {
	sed -n "s/^.*$2:[[:space:]]*//p" "$1" | head -n 1
}

# obj_stale OBJ: true when OBJ, or its dependency list OBJ.d (written by
# clang -MMD), is missing, or a file listed there is newer or gone
obj_stale() {
	local f
	[ -f "$1" ] && [ -f "${1%.o}.d" ] || return 0
	# shellcheck disable=SC2013 # the words of a make rule
	for f in $(sed -e '1s/^[^:]*://' -e 's/\\$//' "${1%.o}.d"); do
		[ -e "$f" ] && [ ! "$f" -nt "$1" ] || return 0
	done
	return 1
}

# build_target BIN LOG: compile the stale objects of srcs[] (with incs[],
# the include directories of every target)
# and link BIN; the compilers' output goes to LOG
build_target() {
	local bin=$1 log=$2 key objdir s o todo=() objs=()
	key=$(printf '%s\n' "$CC_FUZZ" "${CFLAGS[@]}" "${incs[@]}" | md5sum | cut -c1-12)
	objdir=$BUILD/obj/$key
	: >"$log"
	for s in "${srcs[@]}"; do
		o=$objdir/${s#"$ROOT"/}
		o=${o%.c}.o
		objs+=("$o")
		if obj_stale "$o"; then
			mkdir -p "${o%/*}" || return 1
			todo+=("$s" "$o")
		fi
	done
	if [ ${#todo[@]} -gt 0 ]; then
		# shellcheck disable=SC2016 # expanded by the inner bash
		printf '%s\0' "${todo[@]}" | xargs -0 -n 2 -P "$JOBS" bash -c '
			cc=$1; shift; n=$(($1)); shift; fl=("${@:1:n}"); shift "$n"
			timeout 300 "$cc" "${fl[@]}" -MMD -MF "${2%.o}.d" -c -o "$2" "$1" 2>"$2.log" ||
				{ rm -f "$2"; cat "$2.log"; exit 255; }' sof-fuzz-cc \
			"$CC_FUZZ" $((${#CFLAGS[@]} + ${#incs[@]})) "${CFLAGS[@]}" "${incs[@]}" >>"$log" 2>&1 ||
			return 1
	fi
	timeout 300 "$CC_FUZZ" "${CFLAGS[@]}" -o "$bin" "${objs[@]}" >>"$log" 2>&1
}

targets=("$ROOT"/tests/fuzz/fuzz_*.c)
if [ ! -f "${targets[0]}" ]; then
	not_ok targets "no tests/fuzz/fuzz_*.c"
	exit 1
fi
if ! command -v "$CC_FUZZ" >/dev/null 2>&1; then
	for t in "${targets[@]}"; do
		n=${t##*/fuzz_}
		not_ok "${n%.c}" "$CC_FUZZ is not installed (tests/install-deps.sh installs clang)"
	done
	exit 1
fi
mkdir -p "$BUILD" || exit 1

# the include directories of every target, each once
incs=()
for i in $(for t in "${targets[@]}"; do field "$t" FUZZ_INCLUDES; done | tr ' ' '\n' | awk 'NF && !seen[$0]++'); do
	incs+=(-I "$ROOT/$i")
done

runs_todo=() # NAME:SECS of every target built, to fuzz below
for t in "${targets[@]}"; do
	name=${t##*/fuzz_}
	name=${name%.c}
	if [ -n "${SOF_FUZZ_ONLY:-}" ] && ! [[ $name =~ $SOF_FUZZ_ONLY ]]; then
		continue
	fi
	srcs=()
	for s in $(field "$t" FUZZ_SOURCES); do srcs+=("$ROOT/$s"); done
	if [ ${#srcs[@]} -eq 0 ]; then
		not_ok "$name" "no FUZZ_SOURCES line in ${t#"$ROOT"/}"
		continue
	fi
	bin=$BUILD/fuzz_$name
	log=$BUILD/fuzz_$name.log
	echo "# fuzz/$name: building from ${srcs[*]#"$ROOT"/}"
	if ! build_target "$bin" "$log"; then
		not_ok "$name" "build failed"
		sed 's/^/#   /' "$log" | head -n 40
		continue
	fi

	seeds_env=$(field "$t" FUZZ_SEEDS_ENV)
	if [ -n "$seeds_env" ]; then
		fresh=$BUILD/seeds_$name
		rm -rf "$fresh" && mkdir -p "$fresh" || exit 1
		if ! env "$seeds_env=$fresh" timeout 120 "$bin" >"$log" 2>&1; then
			not_ok "$name" "its seeds do not do what they were made for"
			grep -E -m 5 "fuzz_$name: |ERROR: |runtime error:" "$log" | sed 's/^/#   /'
			continue
		fi
		stale=""
		for f in "$fresh"/*; do
			cmp -s "$f" "$ROOT/tests/fuzz/corpus_$name/${f##*/}" || stale="$stale ${f##*/}"
		done
		if [ -n "$stale" ]; then
			not_ok "$name" "tests/fuzz/corpus_$name/ is stale:$stale (write it with $seeds_env=DIR)"
			continue
		fi
	fi

	secs=${SOF_FUZZ_SECS:-$(field "$t" FUZZ_SECS)}
	runs_todo+=("$name:${secs:-10}")
done

# fuzz NAME SECS: fuzz the built target NAME for SECS seconds; its lines
# (the ok / not ok line last) go to stdout
fuzz() {
	local name=$1 secs=$2 bin=$BUILD/fuzz_$1 log=$BUILD/fuzz_$1.log work art dirs rc runs crash
	work=$BUILD/corpus_$name
	art=$BUILD/artifacts_$name
	mkdir -p "$work" "$art"
	dirs=("$work")
	[ -d "$ROOT/tests/fuzz/corpus_$name" ] && dirs+=("$ROOT/tests/fuzz/corpus_$name")
	echo "# fuzz/$name: ${secs} s, seeds from ${dirs[*]#"$ROOT"/}"
	ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0} \
		UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
		timeout -k 10 $((secs + 120)) "$bin" -max_total_time="$secs" -timeout=10 \
		-max_len=4200 -print_final_stats=1 -artifact_prefix="$art/" "${dirs[@]}" \
		>"$log" 2>&1
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units:[[:space:]]*//p' "$log" | tail -n 1)
	if [ $rc -eq 0 ] && [ -n "$runs" ]; then
		echo "ok - fuzz/$name ($runs runs)"
		return
	fi
	grep -E -m 1 -A 25 'ERROR: |runtime error:|fuzz_[a-z_]+: ' "$log" | sed 's/^/#   /'
	crash=$(sed -n 's/^.*Test unit written to //p' "$log" | tail -n 1)
	if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		echo "not ok - fuzz/$name: timed out (exit $rc)"
	elif [ -n "$crash" ]; then
		echo "not ok - fuzz/$name: failed on input $crash (exit $rc)"
	else
		echo "not ok - fuzz/$name: exit status $rc"
	fi
}

# the fuzzers, RUN_JOBS at once, each one's lines to its .result file;
# then the results in the targets' order
running=0
for r in "${runs_todo[@]}"; do
	if [ "$running" -ge "$RUN_JOBS" ]; then
		wait -n
		running=$((running - 1))
	fi
	fuzz "${r%%:*}" "${r##*:}" >"$BUILD/fuzz_${r%%:*}.result" 2>&1 &
	running=$((running + 1))
done
wait
for r in "${runs_todo[@]}"; do
	res=$BUILD/fuzz_${r%%:*}.result
	if ! grep -q '^\(not \)\{0,1\}ok - fuzz/' "$res" 2>/dev/null; then
		not_ok "${r%%:*}" "the fuzzer's run printed no result"
		continue
	fi
	cat "$res"
	grep -q '^not ok - ' "$res" && FAILED=1
done
exit $FAILED
