#!/bin/bash
# rsockets on one host (issue 22), unmodified Debian programs through
# `softofed run` on our librdmacm.so.1:
#   rstream and riostream (rdmacm-utils) with -T v (each side checks every
#     byte), blocking, non-blocking (-T n) and through rpoll (-T a), sizes
#     64 B .. 1 MB; riostream's riowrite into the peer's riomap'ed buffer;
#   iperf3 over Debian's librspreload.so, one stream and four (-P 4), with
#     no kernel TCP segment in the namespace;
#   a 100 MiB file of random bytes served by nc as an HTTP answer and
#     fetched by curl, both under librspreload.so, SHA-256 checked.
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
sof_rs_http "rsocket/curl nc librspreload 100 MiB" "" "" "$ADDR" "$PORT" 100
sof_exit
