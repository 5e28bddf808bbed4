#!/bin/sh
# ABI check of the drop-in libibverbs: every installed program or library
# that links libibverbs.so.1 must find each IBVERBS_* symbol it imports, with
# that exact version, in our build/lib/libibverbs.so.1.
#
# Consumers are the ELF files under /usr/bin, /usr/sbin and
# /usr/lib/x86_64-linux-gnu whose NEEDED entries name libibverbs.so.1, except
# libibverbs itself and the provider plugins under .../libibverbs/ (only
# rdma-core's libibverbs loads those). The direct-verbs libraries (libmlx5,
# libefa, ...) are included: programs such as perftest link them, so they
# load against our library and must find their imports in it.
#
# Usage: tests/symbols.sh [build-dir]   (default: <repo>/build)
# Prints "ok - symbols: <consumer>" or
# "not ok - symbols: <consumer>: missing foo@IBVERBS_1.1 ..." per consumer;
# exits 1 on any failure, and when no consumer is found at all.
set -u

here=$(cd "$(dirname "$0")" && pwd)
build=${1:-${BUILD_DIR:-$here/../build}}
lib=$build/lib/libibverbs.so.1
dirs=${SOF_SYMBOLS_DIRS:-"/usr/bin /usr/sbin /usr/lib/x86_64-linux-gnu"}

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

if [ ! -f "$lib" ]; then
	echo "not ok - symbols: $lib not built"
	exit 1
fi

# Our exports as name@version, "@@" (default) and "@" alike.
nm -D --defined-only --with-symbol-versions "$lib" 2>/dev/null |
	awk 'NF >= 3 && $2 != "A" { s = $3; sub(/@@/, "@", s); print s }' |
	sort -u >"$tmp/ours"
if [ ! -s "$tmp/ours" ]; then
	echo "not ok - symbols: $lib exports nothing"
	exit 1
fi

# Candidates by a cheap byte search, then confirmed through the dynamic
# section.
grep -rlsF libibverbs.so.1 $dirs 2>/dev/null | sort -u >"$tmp/cand"

n=0
fail=0
while IFS= read -r f; do
	case $f in
	*/libibverbs/* | */libibverbs.so*) continue ;;
	esac
	[ -f "$f" ] || continue
	readelf -d "$f" 2>/dev/null | grep -q 'NEEDED.*\[libibverbs\.so\.1\]' || continue
	nm -D --undefined-only --with-symbol-versions "$f" 2>/dev/null |
		awk '{ s = $NF } s ~ /@IBVERBS_/ { sub(/@@/, "@", s); print s }' |
		sort -u >"$tmp/want"
	n=$((n + 1))
	missing=$(comm -23 "$tmp/want" "$tmp/ours" | tr '\n' ' ' | sed 's/ $//')
	if [ -n "$missing" ]; then
		echo "not ok - symbols: $f: missing $missing"
		fail=1
	else
		echo "ok - symbols: $f"
	fi
done <"$tmp/cand"

if [ "$n" -eq 0 ]; then
	echo "not ok - symbols: no installed consumer of libibverbs.so.1 found (install ibverbs-utils, perftest, rdmacm-utils)"
	exit 1
fi
exit $fail
