#!/bin/bash
# redis and ssh over sockets on RDMA on one host (issue 22 acceptance),
# unmodified Debian programs through `softofed run`: first under Debian's
# librspreload.so (rsockets), then under our libsdp.so (SDP, `use sdp` for
# every server and client): redis-server with redis-benchmark -t set,get
# and a redis-cli SET/GET checked, sshd (its own configuration and keys)
# with scp of a 100 MiB file and `ssh host sha256sum` of the copy; no
# kernel TCP segment (see tests/rs_apps.sh). A missing program is a
# failure. Under Debian 12's librspreload redis and sshd cannot run, for
# reasons in that preload (rdma-core 44), not in our librdmacm: those two
# report `# TODO` when they fail in exactly that way (sof_rs_known). Runs in a private network namespace with its own daemon.
# Usage: tests/consumers/rsocket_apps.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/rs_apps.sh
. "$(dirname "$0")/../rs_apps.sh"
sof_ns_enter "$@"
sof_init

ADDR=127.0.0.1
PORT=19880

PORT=$((PORT + 1))
sof_rs_known "Unrecoverable error creating TCP socket accept handler" "$SOF_RS_NO_EPOLL" \
	sof_rs_redis "rsocket/redis-server redis-benchmark librspreload" "" "" "$ADDR" "$PORT"
PORT=$((PORT + 1))
sof_rs_known "getsockname failed: Socket operation on non-socket" "$SOF_RS_NO_REEXEC" \
	sof_rs_ssh "rsocket/sshd scp ssh librspreload" "" "" "$ADDR" "$PORT" 100

SOF_RS_PRELOAD=$SOF_BUILD_DIR/lib/libsdp.so
export LIBSDP_CONFIG_FILE=$SOF_TMP/libsdp.conf
printf 'use sdp server * *:*\nuse sdp client * *:*\n' >"$LIBSDP_CONFIG_FILE"
PORT=$((PORT + 1))
sof_rs_redis "sdp/redis-server redis-benchmark libsdp" "" "" "$ADDR" "$PORT"
PORT=$((PORT + 1))
sof_rs_ssh "sdp/sshd scp ssh libsdp" "" "" "$ADDR" "$PORT" 100
sof_exit
