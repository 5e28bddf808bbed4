#!/bin/bash
# bench/install-deps.sh — installs the Debian packages that only the
# benchmark needs (the peers it measures softofed against), through
# tests/install-deps.sh, which installs only what is missing; the build and
# perftest come from the test suite's list (`make bench` runs both).
# Debian 12 has no netperf; ucx-utils and libfabric-bin give ucx_perftest
# and fi_pingpong, libfabric-dev the headers bench/fi_stream.c is built
# with; linux-perf gives perf ("where time goes").
#
# Usage: bench/install-deps.sh
set -euo pipefail

exec "$(dirname "$0")/../tests/install-deps.sh" sockperf iperf3 ucx-utils libfabric-bin libfabric-dev linux-perf python3
