#!/bin/bash
# SDP on one host (issue 22 item 2): unmodified Debian programs through
# `softofed run` with our libsdp.so preloaded (LD_PRELOAD), steered by a
# libsdp.conf (LIBSDP_CONFIG_FILE), each decision in its log (LIBSDP_LOG).
# Runs in a private network namespace with its own daemon.
# Usage: tests/consumers/sdp.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_ns_enter "$@"
sof_init

ADDR=127.0.0.1
PORT=19900
SOF_RS_PRELOAD=$SOF_BUILD_DIR/lib/libsdp.so
export LIBSDP_CONFIG_FILE=$SOF_TMP/libsdp.conf LIBSDP_LOG=$SOF_TMP/libsdp.log
printf 'use sdp server * *:*\nuse sdp client * *:*\n' >"$LIBSDP_CONFIG_FILE"

PORT=$((PORT + 1))
sof_rs_iperf "sdp/iperf3 libsdp" "" "" "$ADDR" "$PORT"
PORT=$((PORT + 1))
sof_rs_iperf "sdp/iperf3 libsdp -P 4" "" "" "$ADDR" "$PORT" -P 4
PORT=$((PORT + 1))
sof_rs_sockperf "sdp/sockperf pp --tcp libsdp" "" "" "$ADDR" "$PORT" pp
PORT=$((PORT + 1))
sof_rs_sockperf "sdp/sockperf tp --tcp libsdp" "" "" "$ADDR" "$PORT" tp
PORT=$((PORT + 1))
sof_rs_http "sdp/curl nc libsdp 100 MiB" "" "" "$ADDR" "$PORT" 100
sof_exit
