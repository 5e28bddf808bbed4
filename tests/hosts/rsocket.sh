#!/bin/bash
# rsockets between two hosts (issue 22): network namespaces a and b on a
# veth, each with its daemon (sof_hosts_up 2); server in a, client in b,
# unmodified Debian programs through `softofed run` on our librdmacm.so.1:
#   rstream and riostream -T v (each side checks every byte), blocking,
#     non-blocking and through rpoll;
#   iperf3 over Debian's librspreload.so, one stream and four, with no
#     kernel TCP segment in either namespace (the RoCEv2 traffic is UDP);
#   sockperf ping-pong and throughput (TCP) under librspreload;
#   datagram rsockets: progs/cm_rsdgram server in a, client in b (every
#     byte checked), iperf3 -u, sockperf UDP pp/tp, nc -u under librspreload;
#   a peer gone (cm_rsconn vanish-cli in b: two connections, one closed,
#     then _exit as if killed): the server in a, whose rpoll always finds
#     the closed one readable and never sleeps, sees the other's end (the
#     DREQ of b's daemon);
#   no transient socket of ours while data flows (cm_rsconn fds-cli in b:
#     every blocking UDP socket(2) of the process trapped by seccomp while
#     100 bytes are echoed; the engine's route check opened and closed one
#     each 100 ms);
#   keepalive: progs/cm_rsconn's client in b with SO_KEEPALIVE waits in
#     rrecv; a's link goes down (no DREQ can come): its rrecv fails;
#   a 100 MiB file served by nc and fetched by curl under librspreload,
#     SHA-256 checked.
# Usage: tests/hosts/rsocket.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_init

PORT=19850

run() {
	PORT=$((PORT + 1))
	sof_gated "$1" && return 1
	sof_rs_stream "$1" a b "$A" "$PORT" "${@:2}"
}

if sof_hosts_up 2; then
	A=$(sof_host_ip a)
	run "hosts/rsocket rstream -S 100000 -C 100 -T v" rstream -S 100000 -C 100 -T v
	run "hosts/rsocket rstream -S 64 -I 500 -T v" rstream -S 64 -C 1 -I 500 -T v
	run "hosts/rsocket rstream -S 131072 -C 100 -T v -T n" rstream -S 131072 -C 100 -T v -T n
	run "hosts/rsocket rstream -S 4096 -C 500 -T v -T a" rstream -S 4096 -C 500 -T v -T a
	run "hosts/rsocket riostream -S 100000 -C 100 -T v" riostream -S 100000 -C 100 -T v
	run "hosts/rsocket riostream -S 4096 -C 100 -T v -T a" riostream -S 4096 -C 100 -T v -T a
	PORT=$((PORT + 1))
	sof_rs_iperf "hosts/rsocket iperf3 librspreload" a b "$A" "$PORT"
	PORT=$((PORT + 1))
	sof_rs_iperf "hosts/rsocket iperf3 librspreload -P 4" a b "$A" "$PORT" -P 4
	PORT=$((PORT + 1))
	sof_rs_sockperf "hosts/rsocket sockperf pp --tcp librspreload" a b "$A" "$PORT" pp
	PORT=$((PORT + 1))
	sof_rs_sockperf "hosts/rsocket sockperf tp --tcp librspreload" a b "$A" "$PORT" tp
	PORT=$((PORT + 1))
	name="hosts/rsocket datagrams echoed, 2 x 400 numbered and checked (cm_rsdgram)"
	if SOF_LINEBUF=1 sof_host_bg dgram.srv a 60 "$SOFTOFED" run -- \
		"$SOF_BUILD_DIR/tests/cm_rsdgram" server "$A" "$PORT" 400 &&
		_sof_rs_udp_wait a "$PORT" dgram.srv; then
		sof_host_bg dgram.cli b 60 "$SOFTOFED" run -- "$SOF_BUILD_DIR/tests/cm_rsdgram" client "$A" "$PORT" 400
		sof_wait dgram.cli 70
		rc=$?
		sof_wait dgram.srv 10
		if [ "$rc" -eq 0 ] && grep -q '^ok 802 datagrams$' "$(sof_out dgram.cli)"; then
			ok "$name"
		else
			not_ok "$name" "client exit $rc: $(tail -n 1 "$(sof_out dgram.cli)")"
			sof_dump "$(sof_out dgram.srv)"
		fi
	else
		not_ok "$name" "the server did not bind its port"
	fi
	sof_kill dgram.srv
	PORT=$((PORT + 1))
	sof_rs_udp_iperf "hosts/rsocket iperf3 -u librspreload" a b "$A" "$PORT" -b 10M
	PORT=$((PORT + 1))
	sof_rs_udp_sockperf "hosts/rsocket sockperf pp (UDP) librspreload" a b "$A" "$PORT" pp
	PORT=$((PORT + 1))
	sof_rs_udp_sockperf "hosts/rsocket sockperf tp (UDP) librspreload" a b "$A" "$PORT" tp
	PORT=$((PORT + 1))
	sof_rs_udp_nc "hosts/rsocket nc -u librspreload" a b "$A" "$PORT"
	PORT=$((PORT + 1))
	sof_rs_http "hosts/rsocket curl nc librspreload 100 MiB" a b "$A" "$PORT" 100
	PORT=$((PORT + 1))
	# rsconn MODE: cm_rsconn MODE-srv in a, MODE-cli in b on $PORT (names
	# MODE.srv, MODE.cli); rc and crc: their exit statuses
	rsconn() {
		SOF_LINEBUF=1 sof_host_bg "$1.srv" a 30 "$SOFTOFED" run -- \
			"$SOF_BUILD_DIR/tests/cm_rsconn" "$1-srv" "$A" "$PORT"
		sof_host_bg "$1.cli" b 30 "$SOFTOFED" run -- "$SOF_BUILD_DIR/tests/cm_rsconn" "$1-cli" "$A" "$PORT"
		sof_wait "$1.cli" 40
		crc=$?
		sof_wait "$1.srv" 20
		rc=$?
	}
	name="hosts/rsocket a killed peer's end seen by an rpoll that never sleeps (cm_rsconn vanish)"
	rsconn vanish
	if [ "$rc" -eq 0 ] && [ "$crc" -eq 0 ] && grep -q "^ok y's end seen" "$(sof_out vanish.srv)"; then
		ok "$name ($(sed -n "s/^ok y's end seen //p" "$(sof_out vanish.srv)"))"
	else
		not_ok "$name" "exit server $rc, client $crc: $(tail -n 1 "$(sof_out vanish.srv)")"
		sof_dump "$(sof_out vanish.cli)"
	fi
	PORT=$((PORT + 1))
	name="hosts/rsocket no route look-up socket of the engine opened while data flows (cm_rsconn fds, seccomp)"
	rsconn fds
	if [ "$rc" -eq 0 ] && [ "$crc" -eq 0 ] && grep -q "^ok " "$(sof_out fds.cli)"; then
		ok "$name"
	else
		not_ok "$name" "exit server $rc, client $crc: $(tail -n 1 "$(sof_out fds.cli)")"
		sof_dump "$(sof_out fds.srv)"
	fi
	# last: it takes host a's link down
	PORT=$((PORT + 1))
	sof_rs_keepalive "hosts/rsocket keepalive finds a vanished peer (link down, cm_rsconn)" a b "$A" "$PORT"
else
	not_ok "hosts/rsocket" "the hosts did not come up"
fi
sof_exit
