#!/bin/bash
# bench/install-deps.sh — installs the Debian packages that only the
# benchmark needs (the peers it measures softofed against), and only those
# that are missing; the build and perftest come from tests/install-deps.sh
# (`make bench` runs both). Idempotent. Runs apt-get as root, through sudo
# when not root. Debian 12 has no netperf; ucx-utils and libfabric-bin give
# ucx_perftest and fi_pingpong.
#
# Usage: bench/install-deps.sh
set -euo pipefail

BENCH_PKGS=(sockperf iperf3 ucx-utils libfabric-bin python3)

missing=()
for p in "${BENCH_PKGS[@]}"; do
	status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	case $status in
	*" installed") ;;
	*) missing+=("$p") ;;
	esac
done

if [ ${#missing[@]} -eq 0 ]; then
	echo "bench/install-deps: all ${#BENCH_PKGS[@]} packages present"
	exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
	SUDO=()
elif command -v sudo >/dev/null 2>&1; then
	SUDO=(sudo)
else
	echo "bench/install-deps: missing ${missing[*]} and not root (no sudo either)" >&2
	exit 1
fi

echo "bench/install-deps: installing ${missing[*]}"
# iperf3 asks whether to start a daemon at boot: no
if command -v debconf-set-selections >/dev/null 2>&1; then
	echo "iperf3 iperf3/start_daemon boolean false" | "${SUDO[@]}" debconf-set-selections
fi
if ! "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update; then
	echo "bench/install-deps: apt-get update failed" >&2
	exit 1
fi
if ! "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
	apt-get install -y --no-install-recommends "${missing[@]}"; then
	echo "bench/install-deps: apt-get install ${missing[*]} failed" >&2
	exit 1
fi
echo "bench/install-deps: done"
