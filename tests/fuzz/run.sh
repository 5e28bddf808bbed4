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
# repository's warning flags (-Werror). Its seed corpus is
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
# Environment:
#   SOF_FUZZ_SECS    seconds to fuzz each target (default 10)
#   SOF_FUZZ_BUILD   build directory (default build-fuzz in the repository)
#   SOF_FUZZ_ONLY    run only the targets whose NAME matches this regex
#   CC_FUZZ          the compiler (default clang)
#
# Usage: tests/fuzz/run.sh
set -u

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SECS=${SOF_FUZZ_SECS:-10}
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

for t in "${targets[@]}"; do
	name=${t##*/fuzz_}
	name=${name%.c}
	if [ -n "${SOF_FUZZ_ONLY:-}" ] && ! [[ $name =~ $SOF_FUZZ_ONLY ]]; then
		continue
	fi
	srcs=() incs=()
	for s in $(field "$t" FUZZ_SOURCES); do srcs+=("$ROOT/$s"); done
	for i in $(field "$t" FUZZ_INCLUDES); do incs+=(-I "$ROOT/$i"); done
	if [ ${#srcs[@]} -eq 0 ]; then
		not_ok "$name" "no FUZZ_SOURCES line in ${t#"$ROOT"/}"
		continue
	fi
	bin=$BUILD/fuzz_$name
	log=$BUILD/fuzz_$name.log
	echo "# fuzz/$name: building from ${srcs[*]#"$ROOT"/}"
	if ! timeout 300 "$CC_FUZZ" "${CFLAGS[@]}" "${incs[@]}" -o "$bin" "${srcs[@]}" \
		>"$log" 2>&1; then
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

	work=$BUILD/corpus_$name
	art=$BUILD/artifacts_$name
	mkdir -p "$work" "$art"
	dirs=("$work")
	[ -d "$ROOT/tests/fuzz/corpus_$name" ] && dirs+=("$ROOT/tests/fuzz/corpus_$name")
	echo "# fuzz/$name: ${SECS} s, seeds from ${dirs[*]#"$ROOT"/}"
	ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0} \
		UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
		timeout -k 10 $((SECS + 120)) "$bin" -max_total_time="$SECS" -timeout=10 \
		-max_len=4200 -print_final_stats=1 -artifact_prefix="$art/" "${dirs[@]}" \
		>"$log" 2>&1
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units:[[:space:]]*//p' "$log" | tail -n 1)
	if [ $rc -eq 0 ] && [ -n "$runs" ]; then
		echo "ok - fuzz/$name ($runs runs)"
		continue
	fi
	crash=$(sed -n 's/^.*Test unit written to //p' "$log" | tail -n 1)
	if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		not_ok "$name" "timed out (exit $rc)"
	elif [ -n "$crash" ]; then
		not_ok "$name" "failed on input $crash (exit $rc)"
	else
		not_ok "$name" "exit status $rc"
	fi
	grep -E -m 1 -A 25 'ERROR: |runtime error:|fuzz_[a-z_]+: ' "$log" | sed 's/^/#   /'
done
exit $FAILED
