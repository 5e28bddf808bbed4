#!/bin/bash
# RoCEv2 between hosts (issue 3), step 1: the unmodified ibverbs-utils
# ping-pong examples with the server in host a and the client in host b
# (network namespaces joined by a veth pair, a daemon in each), each side
# on the GID of its own IPv4 address (::ffff:10.77.0.N, found in `softofed
# run -- ibv_devinfo -v`), the client connecting to 10.77.0.1:
#   ibv_rc_pingpong, ibv_uc_pingpong, ibv_srq_pingpong: sizes 1, 4096, 65536
#     and 1 MiB with path MTU 1024 and 4096 (-m); ibv_rc_pingpong also with
#     completion events (-e);
#   ibv_ud_pingpong: sizes 1, 2048 and 4096 (its limit is the port MTU);
#   over IPv6 GIDs (fd77::N): ibv_rc_pingpong 4096 and 1 MiB, ibv_ud_pingpong;
#   the client on the GIDs of second addresses of host b (10.77.0.22,
#     fd77::22): ibv_rc_pingpong over IPv4 and IPv6, ibv_ud_pingpong;
#   three hosts on a bridge: rc a <- c, rc c <- b, ud b <- c.
# Iterations: 100 (1 MiB: 10; ibv_srq_pingpong 1 MiB: 5, it runs 16 QPs), so
# the whole script stays within about three minutes on a working engine.
# Each run passes when both processes exit with 0, both print their
# "bytes in" line and neither reports an error (sof_pingpong_verdict): that
# the programs run, not that their data arrived, since their --chk compares
# one byte per page with a value that is always 0. The data is checked
# beside them, under each of those conditions (path MTU 1024 and 4096,
# IPv4 and IPv6 GIDs, second addresses, three hosts on a bridge), by
# tests/progs/data_stream (sof_stream_pair): SEND, WRITE, WRITE with
# immediate and READ messages of 1 B, MTU - 1, MTU, MTU + 1, 64 KiB and
# 1 MiB, every byte of every message.
# A first short run checks that traffic flows at all; when it fails, the
# other runs are reported failed at once instead of each waiting for its
# timeout (SOF_HOSTS_KEEP_GOING=1 runs them all anyway).
#
# Needs root (ip netns).
# Usage: tests/hosts/pingpong.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_init

PORT=19500

# pp SRV CLI PROG ARGS...: one server/client run between two hosts
pp() {
	local shost=$1 chost=$2 name rc
	shift 2
	name="hosts/pingpong $shost<-$chost: $*"
	PORT=$((PORT + 1))
	sof_gated "$name" && return
	sof_host_pair "$name" "$shost" "$chost" "$PORT" 30 "$@"
	rc=$?
	sof_pingpong_verdict "$name" "$rc"
}

# stream SRV CLI MTU GID [WHAT]: data_stream between two hosts, every byte
# checked
stream() {
	local fam=IPv4 name
	[ "$4" = @GID6@ ] && fam=IPv6
	name="hosts/pingpong $1<-$2: data_stream -m $3 ($fam GIDs${5:+, $5})"
	PORT=$((PORT + 1))
	sof_gated "$name" && return
	sof_stream_pair "$name" "$1" "$2" "$PORT" 60 -g "$4" -m "$3" -s "$(sof_stream_sizes "$3")"
}

# iters PROG SIZE: the iteration count for one run
iters() {
	if [ "$2" -lt 1048576 ]; then
		echo 100
	elif [ "$1" = ibv_srq_pingpong ]; then
		echo 5
	else
		echo 10
	fi
}

if sof_hosts_up 2; then
	pp a b ibv_rc_pingpong -g @GID@ --chk -m 1024 -s 4096 -n 10
	[ "$SOF_FAILED" -eq 0 ] || sof_gate "the first run between hosts failed"
	for mtu in 1024 4096; do
		stream a b "$mtu" @GID@
	done
	for prog in ibv_rc_pingpong ibv_uc_pingpong ibv_srq_pingpong; do
		for mtu in 1024 4096; do
			for size in 1 4096 65536 1048576; do
				pp a b "$prog" -g @GID@ --chk -m "$mtu" -s "$size" -n "$(iters "$prog" "$size")"
			done
		done
	done
	pp a b ibv_rc_pingpong -g @GID@ --chk -m 4096 -s 65536 -n 100 -e
	for size in 1 2048 4096; do
		pp a b ibv_ud_pingpong -g @GID@ --chk -s "$size" -n 100
	done
	# IPv6 GIDs (the TCP rendezvous stays on IPv4)
	pp a b ibv_rc_pingpong -g @GID6@ --chk -m 1024 -s 4096 -n 100
	pp a b ibv_rc_pingpong -g @GID6@ --chk -m 4096 -s 1048576 -n 10
	pp a b ibv_ud_pingpong -g @GID6@ --chk -s 2048 -n 100
	stream a b 1024 @GID6@
	stream a b 4096 @GID6@
	# the client on the GID of a second address of its interface: the
	# kernel would send from the first, so its packets must name their
	# source (transport/udp.c src_by_route), or they fail the ICRC
	b2=10.77.0.22 b26=fd77::22
	timeout 10 ip -n "$(sof_host_ns b)" addr add "$b2/24" dev veth0
	# deprecated (preferred_lft 0): the kernel sends from fd77::2 then
	timeout 10 ip -n "$(sof_host_ns b)" addr add "$b26/64" dev veth0 nodad preferred_lft 0
	for _ in $(seq 50); do
		sof_host_gid b "$b2" >/dev/null && sof_host_gid b "$b26" >/dev/null && break
		sleep 0.1
	done
	SOF_GID_ADDR[b]=$b2 SOF_GID6_ADDR[b]=$b26
	pp a b ibv_rc_pingpong -g @GID@ --chk -m 1024 -s 4096 -n 100
	pp a b ibv_rc_pingpong -g @GID6@ --chk -m 4096 -s 65536 -n 100
	pp a b ibv_ud_pingpong -g @GID@ --chk -s 2048 -n 100
	stream a b 1024 @GID@ "b on its second address"
	stream a b 4096 @GID6@ "b on its second address"
	SOF_GID_ADDR=() SOF_GID6_ADDR=()
	sof_hosts_down
fi

if sof_hosts_up 3; then
	pp a c ibv_rc_pingpong -g @GID@ --chk -m 1024 -s 65536 -n 100
	pp c b ibv_rc_pingpong -g @GID@ --chk -m 4096 -s 1048576 -n 10
	pp b c ibv_ud_pingpong -g @GID@ --chk -s 2048 -n 100
	stream a c 1024 @GID@ "three hosts on a bridge"
	stream c b 4096 @GID@ "three hosts on a bridge"
fi

sof_exit
