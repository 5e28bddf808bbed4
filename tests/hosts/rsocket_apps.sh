#!/bin/bash
# redis and ssh over sockets on RDMA between two hosts (issue 22
# acceptance): network namespaces a and b on a veth, each with its daemon
# (sof_hosts_up 2); server in a, client in b, unmodified Debian programs
# through `softofed run`, under Debian's librspreload.so (rsockets) and
# under our libsdp.so (SDP, `use sdp` everywhere): redis-server with
# redis-benchmark -t set,get and a redis-cli SET/GET checked, sshd with
# scp of a 100 MiB file and `ssh host sha256sum` of the copy; no kernel
# TCP segment in either namespace (tests/rs_apps.sh). The librspreload
# runs report `# TODO` when they fail as that preload makes them
# (sof_rs_known; see tests/consumers/rsocket_apps.sh).
# Usage: tests/hosts/rsocket_apps.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/rs_apps.sh
. "$(dirname "$0")/../rs_apps.sh"
sof_init

PORT=19890

if sof_hosts_up 2; then
	A=$(sof_host_ip a)
	PORT=$((PORT + 1))
	sof_rs_known "Unrecoverable error creating TCP socket accept handler" "$SOF_RS_NO_EPOLL" \
		sof_rs_redis "hosts/rsocket redis-server redis-benchmark librspreload" a b "$A" "$PORT"
	PORT=$((PORT + 1))
	sof_rs_known "getsockname failed: Socket operation on non-socket" "$SOF_RS_NO_REEXEC" \
		sof_rs_ssh "hosts/rsocket sshd scp ssh librspreload" a b "$A" "$PORT" 100

	SOF_RS_PRELOAD=$SOF_BUILD_DIR/lib/libsdp.so
	export LIBSDP_CONFIG_FILE=$SOF_TMP/libsdp.conf
	printf 'use sdp server * *:*\nuse sdp client * *:*\n' >"$LIBSDP_CONFIG_FILE"
	PORT=$((PORT + 1))
	sof_rs_redis "hosts/sdp redis-server redis-benchmark libsdp" a b "$A" "$PORT"
	PORT=$((PORT + 1))
	sof_rs_ssh "hosts/sdp sshd scp ssh libsdp" a b "$A" "$PORT" 100
else
	not_ok "hosts/rsocket_apps" "the hosts did not come up"
fi
sof_exit
