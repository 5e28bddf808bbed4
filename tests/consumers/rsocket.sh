#!/bin/bash
# rsockets on one host (issue 22), unmodified Debian programs through
# `softofed run` on our librdmacm.so.1:
#   rstream and riostream (rdmacm-utils) with -T v (each side checks every
#     byte), blocking, non-blocking (-T n) and through rpoll (-T a), sizes
#     64 B .. 1 MB; riostream's riowrite into the peer's riomap'ed buffer;
#   iperf3 over Debian's librspreload.so, one stream and four (-P 4), with
#     no kernel TCP segment in the namespace;
#   sockperf ping-pong and throughput (TCP) under librspreload;
#   a 100 MiB file of random bytes served by nc as an HTTP answer and
#     fetched by curl, both under librspreload.so, SHA-256 checked;
#   datagram rsockets: progs/cm_rsdgram (numbered datagrams echoed, every
#     byte and the sender's address checked; connected, iovecs, EMSGSIZE,
#     EAGAIN, MSG_PEEK), and under librspreload iperf3 -u (under 10% lost),
#     sockperf UDP ping-pong and throughput, nc -u (200 lines, each once),
#     each with fewer than 20 kernel UDP datagrams;
#   fork support as rdma-core documents it: rstream -T f (a server that
#     forks after accept, kernel sockets in the program) under
#     librspreload.so with RDMAV_FORK_SAFE=1 on both sides, -T v: the
#     preload's fork handshake takes a few TCP segments, the 19 MB go over
#     rsockets (fewer than 50 kernel TCP segments in all).
# A missing program is a failure. Runs in a private network namespace with
# its own daemon.
# Usage: tests/consumers/rsocket.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_ns_enter "$@"
sof_init

ADDR=127.0.0.1
PORT=19800

run() {
	PORT=$((PORT + 1))
	sof_rs_stream "$1" "" "" "$ADDR" "$PORT" "${@:2}"
}

run "rsocket/rstream -S 100000 -C 100 -T v" rstream -S 100000 -C 100 -T v
run "rsocket/rstream -S 1000000 -C 50 -T v" rstream -S 1000000 -C 50 -T v
run "rsocket/rstream -S 64 -I 1000 -T v" rstream -S 64 -C 1 -I 1000 -T v
run "rsocket/rstream -S 131072 -C 200 -T v -T n" rstream -S 131072 -C 200 -T v -T n
run "rsocket/rstream -S 4096 -C 1000 -T v -T a" rstream -S 4096 -C 1000 -T v -T a
run "rsocket/riostream -S 100000 -C 100 -T v" riostream -S 100000 -C 100 -T v
run "rsocket/riostream -S 64 -I 100 -T v" riostream -S 64 -C 1 -I 100 -T v
run "rsocket/riostream -S 65536 -C 100 -T v -T n" riostream -S 65536 -C 100 -T v -T n
run "rsocket/riostream -S 4096 -C 100 -T v -T a" riostream -S 4096 -C 100 -T v -T a

PORT=$((PORT + 1))
sof_rs_iperf "rsocket/iperf3 librspreload" "" "" "$ADDR" "$PORT"
PORT=$((PORT + 1))
sof_rs_iperf "rsocket/iperf3 librspreload -P 4" "" "" "$ADDR" "$PORT" -P 4
PORT=$((PORT + 1))
sof_rs_sockperf "rsocket/sockperf pp --tcp librspreload" "" "" "$ADDR" "$PORT" pp
PORT=$((PORT + 1))
sof_rs_sockperf "rsocket/sockperf tp --tcp librspreload" "" "" "$ADDR" "$PORT" tp
PORT=$((PORT + 1))
sof_rs_http "rsocket/curl nc librspreload 100 MiB" "" "" "$ADDR" "$PORT" 100

# datagram rsockets: our own program's every byte, then Debian's programs
# with their UDP sockets under librspreload
PORT=$((PORT + 1))
name="rsocket/datagrams echoed, 2 x 400 numbered and checked (cm_rsdgram)"
out=$(sof_out dgram)
if timeout 60 "$SOFTOFED" run -- "$SOF_BUILD_DIR/tests/cm_rsdgram" both "$ADDR" "$PORT" 400 \
	>"$out" 2>&1 && grep -q '^ok 802 datagrams$' "$out"; then
	ok "$name"
else
	not_ok "$name" "$(tail -n 1 "$out")"
	sof_dump "$out"
fi
PORT=$((PORT + 1))
sof_rs_udp_iperf "rsocket/iperf3 -u librspreload" "" "" "$ADDR" "$PORT" -b 10M
PORT=$((PORT + 1))
sof_rs_udp_sockperf "rsocket/sockperf pp (UDP) librspreload" "" "" "$ADDR" "$PORT" pp
PORT=$((PORT + 1))
sof_rs_udp_sockperf "rsocket/sockperf tp (UDP) librspreload" "" "" "$ADDR" "$PORT" tp
PORT=$((PORT + 1))
sof_rs_udp_nc "rsocket/nc -u librspreload" "" "" "$ADDR" "$PORT"

# fork: the server listens on a kernel socket until the child's first use
fork_run() {
	local name="rsocket/rstream -T f librspreload RDMAV_FORK_SAFE=1" t0 segs
	local args=(-S 100000 -C 100 -T f -T v) pre=(env RDMAV_FORK_SAFE=1 LD_PRELOAD="$SOF_RS_PRELOAD")
	PORT=$((PORT + 1))
	t0=$(_sof_rs_tcp_out "")
	sof_bg fork.srv 60 "$SOFTOFED" run -- "${pre[@]}" stdbuf -oL rstream -b "$ADDR" -p "$PORT" "${args[@]}"
	if ! sof_wait_listen "$PORT" 20 fork.srv; then
		not_ok "$name" "the server did not listen"
		sof_kill fork.srv
		return
	fi
	sof_bg fork.cli 50 "$SOFTOFED" run -- "${pre[@]}" stdbuf -oL rstream -s "$ADDR" -p "$PORT" "${args[@]}"
	sof_wait fork.cli 55
	SOF_CLI_RC=$?
	sof_wait fork.srv 20
	SOF_SRV_RC=$?
	SOF_SRV_OUT=$(sof_out fork.srv) SOF_CLI_OUT=$(sof_out fork.cli)
	segs=$(($(_sof_rs_tcp_out "") - t0))
	if [ "$SOF_CLI_RC" -ne 0 ] || [ "$SOF_SRV_RC" -ne 0 ]; then
		not_ok "$name" "exit status server $SOF_SRV_RC, client $SOF_CLI_RC"
		sof_pair_dump
	elif ! grep -q '^custom ' "$SOF_CLI_OUT" || ! grep -q '^custom ' "$SOF_SRV_OUT"; then
		not_ok "$name" "no result line"
		sof_pair_dump
	elif [ "$segs" -ge 50 ]; then
		not_ok "$name" "$segs kernel TCP segments: the data did not go over rsockets"
	else
		ok "$name (19 MB checked, $segs kernel TCP segments: the fork handshake)"
	fi
}
fork_run
sof_exit
