#!/bin/bash
# SDP between two hosts (issue 22 item 2): network namespaces a and b on a
# veth, each with its daemon (sof_hosts_up 2); server in a, client in b,
# unmodified Debian programs through `softofed run` with our libsdp.so
# (`use sdp` for every server and client): iperf3 one stream and four,
# sockperf ping-pong and throughput, a 100 MiB file served by nc and
# fetched by curl (SHA-256 checked); no kernel TCP segment in either
# namespace (the RoCEv2 traffic is UDP).
# Usage: tests/hosts/sdp.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_init

PORT=19950
SOF_RS_PRELOAD=$SOF_BUILD_DIR/lib/libsdp.so
export LIBSDP_CONFIG_FILE=$SOF_TMP/libsdp.conf
printf 'use sdp server * *:*\nuse sdp client * *:*\n' >"$LIBSDP_CONFIG_FILE"

if sof_hosts_up 2; then
	A=$(sof_host_ip a)
	PORT=$((PORT + 1))
	sof_rs_iperf "hosts/sdp iperf3 libsdp" a b "$A" "$PORT"
	PORT=$((PORT + 1))
	sof_rs_iperf "hosts/sdp iperf3 libsdp -P 4" a b "$A" "$PORT" -P 4
	PORT=$((PORT + 1))
	sof_rs_sockperf "hosts/sdp sockperf pp --tcp libsdp" a b "$A" "$PORT" pp
	PORT=$((PORT + 1))
	sof_rs_sockperf "hosts/sdp sockperf tp --tcp libsdp" a b "$A" "$PORT" tp
	PORT=$((PORT + 1))
	sof_rs_http "hosts/sdp curl nc libsdp 100 MiB" a b "$A" "$PORT" 100
else
	not_ok "hosts/sdp" "the hosts did not come up"
fi
sof_exit
