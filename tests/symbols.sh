#!/bin/sh
# ABI check of the drop-in libraries: every installed program or library
# that links libibverbs.so.1 or librdmacm.so.1 must find each symbol it
# imports from that library (IBVERBS_* / RDMACM_*), with that exact version,
# in our build/lib/libibverbs.so.1 / build/lib/librdmacm.so.1.
#
# Consumers are the ELF files under /usr/bin, /usr/sbin and
# /usr/lib/x86_64-linux-gnu (recursively) whose NEEDED entries name the
# library, except the library itself and, for libibverbs, the provider
# plugins under .../libibverbs/ (only rdma-core's libibverbs loads those).
# The direct-verbs libraries (libmlx5, libefa, ...) are included: programs
# such as perftest link them, so they load against our library and must
# find their imports in it. For librdmacm: rdmacm-utils, perftest,
# libfabric, UCX's rdmacm transport, rdma-core's rsocket preload library.
#
# Usage: tests/symbols.sh [build-dir]   (default: <repo>/build)
# Prints, per library and consumer,
#   "ok - symbols: <consumer>"  /  "ok - symbols/rdmacm: <consumer> (N imports)"
# or "not ok - ...: <consumer>: missing foo@IBVERBS_1.1 ...";
# exits 1 on any failure, and when a library has no consumer at all.
set -u

here=$(cd "$(dirname "$0")" && pwd)
build=${1:-${BUILD_DIR:-$here/../build}}
dirs=${SOF_SYMBOLS_DIRS:-"/usr/bin /usr/sbin /usr/lib/x86_64-linux-gnu"}

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

fail=0

# check SONAME VERSION-PREFIX LABEL SKIP-GLOB...: one library's consumers
check() {
	soname=$1 prefix=$2 label=$3
	shift 3
	lib=$build/lib/$soname
	if [ ! -f "$lib" ]; then
		echo "not ok - $label: $lib not built"
		fail=1
		return
	fi

	# Our exports as name@version, "@@" (default) and "@" alike.
	nm -D --defined-only --with-symbol-versions "$lib" 2>/dev/null |
		awk 'NF >= 3 && $2 != "A" { s = $3; sub(/@@/, "@", s); print s }' |
		sort -u >"$tmp/ours"
	if [ ! -s "$tmp/ours" ]; then
		echo "not ok - $label: $lib exports nothing"
		fail=1
		return
	fi

	# Candidates by a cheap byte search, then confirmed through the
	# dynamic section.
	# shellcheck disable=SC2086 # $dirs is a list
	grep -rlsF "$soname" $dirs 2>/dev/null | sort -u >"$tmp/cand"

	n=0
	while IFS= read -r f; do
		skip=0
		for g in "$@"; do
			# shellcheck disable=SC2254
			case $f in $g) skip=1 ;; esac
		done
		[ "$skip" -eq 1 ] && continue
		[ -f "$f" ] || continue
		readelf -d "$f" 2>/dev/null | grep 'NEEDED' | grep -qF "[$soname]" || continue
		nm -D --undefined-only --with-symbol-versions "$f" 2>/dev/null |
			awk -v p="@$prefix" '{ s = $NF } index(s, p) { sub(/@@/, "@", s); print s }' |
			sort -u >"$tmp/want"
		n=$((n + 1))
		missing=$(comm -23 "$tmp/want" "$tmp/ours" | tr '\n' ' ' | sed 's/ $//')
		if [ -n "$missing" ]; then
			echo "not ok - $label: $f: missing $missing"
			fail=1
		elif [ "$label" = symbols ]; then
			echo "ok - $label: $f"
		else
			echo "ok - $label: $f ($(wc -l <"$tmp/want") imports)"
		fi
	done <"$tmp/cand"

	if [ "$n" -eq 0 ]; then
		echo "not ok - $label: no installed consumer of $soname found (install ibverbs-utils, perftest, rdmacm-utils)"
		fail=1
	fi
}

check libibverbs.so.1 IBVERBS_ symbols '*/libibverbs/*' '*/libibverbs.so*'
check librdmacm.so.1 RDMACM_ symbols/rdmacm '*/librdmacm.so*'

exit $fail
