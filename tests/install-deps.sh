#!/bin/bash
# tests/install-deps.sh — installs the Debian packages that building,
# the demo and the test suite need, and only those that are missing.
# Idempotent: when everything is installed it does nothing (no apt-get
# update either). Runs apt-get as root, through sudo when not root.
# Fails loudly when a package cannot be installed.
#
# Usage: tests/install-deps.sh [PKG...]
#   with package names, installs those instead of the test suite's list
#   (bench/install-deps.sh does so for the benchmark's peers)
set -euo pipefail

PKGS=(
	build-essential cmake pkg-config
	libibverbs-dev librdmacm-dev libibumad-dev
	ibverbs-utils perftest rdmacm-utils infiniband-diags
	iproute2 procps util-linux binutils python3
	clang tshark iputils-ping ethtool
	ucx-utils openmpi-bin libopenmpi-dev libfabric-bin
	opensm ibsim-utils
	iperf3 curl netcat-traditional sockperf
	redis-server redis-tools openssh-server openssh-client
	qperf python3-pyverbs fio dapl2-utils tgt libiscsi-bin librpma-dev ibacm
)
[ $# -gt 0 ] && PKGS=("$@")

missing=()
for p in "${PKGS[@]}"; do
	status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	case $status in
	*" installed") ;;
	*) missing+=("$p") ;;
	esac
done

if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps: all ${#PKGS[@]} packages present"
	exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
	SUDO=()
elif command -v sudo >/dev/null 2>&1; then
	SUDO=(sudo)
else
	echo "install-deps: missing ${missing[*]} and not root (no sudo either)" >&2
	exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# tshark's wireshark-common asks whether non-root users may capture: answer
# no beforehand (the tests capture as root), so nothing ever waits for it
if command -v debconf-set-selections >/dev/null 2>&1; then
	echo "wireshark-common wireshark-common/install-setuid boolean false" |
		"${SUDO[@]}" debconf-set-selections
	# iperf3 (the benchmark's) asks whether to start a daemon at boot: no
	echo "iperf3 iperf3/start_daemon boolean false" | "${SUDO[@]}" debconf-set-selections
fi
if ! "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update; then
	echo "install-deps: apt-get update failed" >&2
	exit 1
fi
if ! "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
	apt-get install -y --no-install-recommends "${missing[@]}"; then
	echo "install-deps: apt-get install ${missing[*]} failed" >&2
	exit 1
fi
# ibacm's package starts its service where systemd runs: its fixed socket
# /run/ibacm-unix.sock is the one the test's own ibacm (in a host
# namespace, on softofed's devices) must own
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
	"${SUDO[@]}" systemctl disable --now ibacm.socket ibacm.service >/dev/null 2>&1 || true
fi
echo "install-deps: done"
