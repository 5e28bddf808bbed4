#!/bin/bash
# RoCEv2 between hosts (issue 3), step 2: the unmodified perftest programs
# with the server in host a and the client in host b (network namespaces
# joined by a veth pair, a daemon in each), device sof0, each side on the
# GID of its own IPv4 address (-x, from `softofed run -- ibv_devinfo -v`),
# the client connecting to 10.77.0.1:
#   ib_send_lat ib_send_bw ib_write_lat ib_write_bw ib_read_lat ib_read_bw:
#     default size (-n 1000 for latency, 500 for bandwidth); -s 65536 with
#     --mtu 1024 (-n 200); bandwidth also -s 1048576 (-n 50) with --mtu 4096;
#   ib_atomic_lat ib_atomic_bw: FETCH_AND_ADD and CMP_AND_SWAP (-n 1000);
#   over IPv6 GIDs (--ipv6): ib_write_bw, ib_send_lat.
# Judged as tests/consumers/perftest.sh judges (sof_perftest_verdict):
# both exit with 0, the client prints a result line, no error text; that
# proves the programs run, and perftest compares no data, so beside them
# tests/progs/data_stream moves SEND, WRITE, WRITE with immediate and READ
# messages of 1 B .. 1 MiB under the same conditions (path MTU 1024 and
# 4096, IPv4 and IPv6 GIDs) and checks every byte (sof_stream_pair). A
# first short run checks that traffic flows at all; when it fails, the
# other runs are reported failed at once instead of each waiting for its
# timeout (SOF_HOSTS_KEEP_GOING=1 runs them all anyway).
#
# Needs root (ip netns).
# Usage: tests/hosts/perftest.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_init

PORT=19700

# pt PROG ARGS...: one server (host a) / client (host b) run
pt() {
	local name="hosts/perftest a<-b: $*" rc
	PORT=$((PORT + 1))
	sof_gated "$name" && return
	SOF_LINEBUF=1 sof_host_pair "$name" a b "$PORT" "${PT_SECS:-60}" "$@" -d sof0 -F
	rc=$?
	sof_perftest_verdict "$name" "$rc"
}

# stream MTU GID: data_stream a <- b, every byte checked
stream() {
	local fam=IPv4 name
	[ "$2" = @GID6@ ] && fam=IPv6
	name="hosts/perftest a<-b: data_stream -m $1 ($fam GIDs)"
	PORT=$((PORT + 1))
	sof_gated "$name" && return
	sof_stream_pair "$name" a b "$PORT" 60 -g "$2" -m "$1" -s "$(sof_stream_sizes "$1")"
}

if sof_hosts_up 2; then
	PT_SECS=20 pt ib_write_lat -x @GID@ -n 100
	[ "$SOF_FAILED" -eq 0 ] || sof_gate "the first run between hosts failed"
	stream 1024 @GID@
	stream 4096 @GID@
	stream 4096 @GID6@
	for t in send write read; do
		pt "ib_${t}_lat" -x @GID@ -n 1000
		pt "ib_${t}_lat" -x @GID@ -s 65536 --mtu 1024 -n 200
		pt "ib_${t}_bw" -x @GID@ -n 500
		pt "ib_${t}_bw" -x @GID@ -s 65536 --mtu 1024 -n 200
		pt "ib_${t}_bw" -x @GID@ -s 1048576 --mtu 4096 -n 50
	done
	for type in FETCH_AND_ADD CMP_AND_SWAP; do
		pt ib_atomic_lat -x @GID@ -A "$type" -n 1000
		pt ib_atomic_bw -x @GID@ -A "$type" -n 1000
	done
	pt ib_write_bw -x @GID6@ --ipv6 -n 500
	pt ib_send_lat -x @GID6@ --ipv6 -n 1000
fi

sof_exit
