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

# sdp_zcopy NAME MODE MIB: a MIB MiB nc -> curl (sof_rs_http, SHA-256)
# with LIBSDP_ZCOPY=MODE ("": as unset) on both sides and the connection
# ends' zero-copy counts in the log (level 1): unset, no advert either way
# (zero copy is for a peer on another host) and nc's bytes went from its
# send ring (sdp/sdp_ring.c: its writes copied into the ring, not into the
# socketpair; 9 in 10 at least: a write that finds the ring full on a
# non-blocking socket takes the socketpair); 1, the data sink (curl)
# offers SinkAvails once nc's first SrcAvail came and nc RDMA WRITEs into
# them (RdmaWrCompl sent and received); `read`: no SinkAvail, every large
# piece READ for a SrcAvail
sdp_zcopy() {
	local name=$1 mode=$2 mib=$3 log=$SOF_TMP/zc.$2.log srv cli ring
	: >"$log"
	PORT=$((PORT + 1))
	LIBSDP_ZCOPY=$mode LIBSDP_LOG=$log LIBSDP_LOG_LEVEL=1 \
		sof_rs_http "$name" "" "" "$ADDR" "$PORT" "$mib" || return
	srv=$(grep -m1 ' nc.traditional: .*zero copy' "$log" | sed 's/.*zero copy: //')
	cli=$(grep -m1 ' curl: .*zero copy' "$log" | sed 's/.*zero copy: //')
	read -r s_src _ _ s_wrc _ _ _ _ _ _ _ _ _ _ _ <<<"$srv"
	read -r c_src _ _ _ _ _ c_sink _ _ c_read _ _ c_wrc _ _ <<<"$cli"
	# "N Data messages of B bytes, R bytes from the send ring": B R
	ring=$(sed -n 's/.* Data messages of \([0-9]*\) bytes, \([0-9]*\) bytes from the send ring.*/\1 \2/p' <<<"$srv")
	if [ -z "$srv" ] || [ -z "$cli" ]; then
		not_ok "$name: counts" "no zero-copy count in the log of nc or curl"
	elif [ -z "$mode" ] && [ "$s_src$s_wrc$c_src$c_sink$c_read$c_wrc" != 000000 ]; then
		not_ok "$name: no advert" "nc: $srv; curl: $cli"
	elif [ -z "$mode" ] && { [ -z "$ring" ] || [ "${ring% *}" -lt $((mib << 20)) ] ||
		[ $((${ring#* } * 10)) -lt $((${ring% *} * 9)) ]; }; then
		not_ok "$name: send ring" "nc's Data bytes, ring bytes: ${ring:-none} (want $((mib << 20))+, 9 in 10 from the ring): $srv"
	elif [ "$mode" = 1 ] && { [ "$s_wrc" -lt 1 ] || [ "$c_wrc" != "$s_wrc" ] || [ "$c_sink" -lt "$c_wrc" ]; }; then
		not_ok "$name: write mode" "nc: $srv; curl: $cli"
	elif [ "$mode" = read ] && { [ "$c_sink" != 0 ] || [ "$s_wrc" != 0 ] || [ "$c_read" != "$s_src" ] || [ "$s_src" -lt 1 ]; }; then
		not_ok "$name: read mode" "nc: $srv; curl: $cli"
	else
		ok "$name: counts (nc: $srv)"
	fi
}
sdp_zcopy "sdp/zero copy unset: none to a peer on this host 16 MiB" "" 16
sdp_zcopy "sdp/zero copy, write mode (LIBSDP_ZCOPY=1: SinkAvail, RDMA WRITE, RdmaWrCompl) 64 MiB" 1 64
sdp_zcopy "sdp/zero copy, read mode only (LIBSDP_ZCOPY=read) 64 MiB" read 64

# sdp_rule_http NAME PORT SRVCONF CLICONF WANT MIB: Python's http.server
# with SRVCONF, curl with CLICONF (the lines of a libsdp.conf each), a MIB
# MiB file fetched and SHA-256 checked; WANT says how the bytes must go:
# `sdp` (no kernel TCP segment) or `tcp` (at least 100 segments), and the
# log lines each side must have written (grep -E patterns in SRVLOG,
# CLILOG). SDP_BIND / SDP_URL_HOST: the server's --bind and curl's host
# ($ADDR), SDP_LISTEN_AS the address its listen is logged with.
sdp_rule_http() {
	local name=$1 port=$2 sconf=$3 cconf=$4 want=$5 mib=$6 slog=$7 clog=$8 t0 segs
	local dir=$SOF_TMP/www.$port got want_sum
	mkdir -p "$dir"
	head -c $((mib << 20)) /dev/urandom >"$dir/f.bin"
	want_sum=$(sha256sum <"$dir/f.bin" | cut -d' ' -f1)
	printf '%b' "$sconf" >"$SOF_TMP/srv.$port.conf"
	printf '%b' "$cconf" >"$SOF_TMP/cli.$port.conf"
	: >"$SOF_TMP/srv.$port.log"
	: >"$SOF_TMP/cli.$port.log"
	t0=$(_sof_rs_tcp_out "")
	sof_bg "$name.srv" 60 "$SOFTOFED" run -- env LD_PRELOAD="$SOF_RS_PRELOAD" \
		LIBSDP_CONFIG_FILE="$SOF_TMP/srv.$port.conf" LIBSDP_LOG="$SOF_TMP/srv.$port.log" \
		python3 -m http.server --bind "${SDP_BIND:-$ADDR}" --directory "$dir" "$port"
	local end=$(($(now_ms) + 15000))
	while ! grep -qE "listen (${SDP_LISTEN_AS:-$ADDR}:$port|: tcp)" "$SOF_TMP/srv.$port.log" && [ "$(now_ms)" -lt "$end" ]; do
		sleep 0.1
	done
	sleep 0.3
	sof_bg "$name.cli" 60 "$SOFTOFED" run -- env LD_PRELOAD="$SOF_RS_PRELOAD" \
		LIBSDP_CONFIG_FILE="$SOF_TMP/cli.$port.conf" LIBSDP_LOG="$SOF_TMP/cli.$port.log" \
		curl -sS -o "$dir/got" "http://${SDP_URL_HOST:-$ADDR}:$port/f.bin"
	sof_wait "$name.cli" 70
	SOF_CLI_RC=$?
	sof_kill "$name.srv"
	segs=$(($(_sof_rs_tcp_out "") - t0))
	got=$(sha256sum <"$dir/got" 2>/dev/null | cut -d' ' -f1)
	if [ "$SOF_CLI_RC" -ne 0 ] || [ "$got" != "$want_sum" ]; then
		not_ok "$name" "curl exit $SOF_CLI_RC, SHA-256 $got (want $want_sum)"
	elif [ "$want" = sdp ] && [ "$segs" -ne 0 ]; then
		not_ok "$name" "$segs kernel TCP segments: not over SDP"
	elif [ "$want" = tcp ] && [ "$segs" -lt 100 ]; then
		not_ok "$name" "$segs kernel TCP segments: not over TCP"
	elif ! grep -qE "$slog" "$SOF_TMP/srv.$port.log"; then
		not_ok "$name" "the server's log has no line /$slog/"
	elif ! grep -qE "$clog" "$SOF_TMP/cli.$port.log"; then
		not_ok "$name" "the client's log has no line /$clog/"
	else
		ok "$name ($mib MiB, SHA-256 matches, $segs kernel TCP segments, as the rules say)"
		return 0
	fi
	sed 's/^/#   srv log: /' "$SOF_TMP/srv.$port.log"
	sed 's/^/#   cli log: /' "$SOF_TMP/cli.$port.log"
	sed 's/^/#   srv: /' "$(sof_out "$name.srv")" | tail -n 5
	sed 's/^/#   cli: /' "$(sof_out "$name.cli")" | tail -n 5
	return 1
}

# socket semantics (tests/progs/sock_sem): epoll, accept4 flags, select,
# poll, options, names, dup2, fork, sendfile, shutdown, non-blocking connect
# (EINPROGRESS, POLLOUT, SO_ERROR, EISCONN)
PORT=$((PORT + 1))
T0=$(_sof_rs_tcp_out "")
if ! sof_cm_pair "sdp/socket semantics" 60 "" "" \
	env LD_PRELOAD="$SOF_RS_PRELOAD" "$SOF_BUILD_DIR/tests/sock_sem" server "$ADDR" "$PORT" -- \
	env LD_PRELOAD="$SOF_RS_PRELOAD" "$SOF_BUILD_DIR/tests/sock_sem" client "$ADDR" "$PORT"; then
	not_ok "sdp/socket semantics" "$SOF_PAIR_WHY"
	sof_pair_dump
elif ! grep -q '^server: all ok' "$SOF_SRV_OUT" || ! grep -q '^client: all ok' "$SOF_CLI_OUT"; then
	not_ok "sdp/socket semantics" "a step failed"
	sof_pair_dump
elif [ "$(_sof_rs_tcp_out "")" -ne "$T0" ]; then
	not_ok "sdp/socket semantics" "kernel TCP segments were sent: not over SDP"
else
	ok "sdp/socket semantics ($(grep -c ' ok$' "$SOF_SRV_OUT") server steps, $(grep -c ' ok$' "$SOF_CLI_OUT") client steps, over SDP)"
fi

# a non-blocking connect to a port without an SDP listener: EINPROGRESS,
# poll wakes, SO_ERROR ECONNREFUSED once, a read fails
PORT=$((PORT + 1))
out=$(sof_out refused)
if timeout 30 "$SOFTOFED" run -- env LD_PRELOAD="$SOF_RS_PRELOAD" "$SOF_BUILD_DIR/tests/sock_sem" \
	refused "$ADDR" "$PORT" >"$out" 2>&1 && grep -q '^refused: all ok' "$out"; then
	ok "sdp/non-blocking connect refused: EINPROGRESS, POLLOUT, SO_ERROR ECONNREFUSED"
else
	not_ok "sdp/non-blocking connect refused" "$(tail -n 1 "$out")"
fi

# a prefork server: the child forked after listen accepts, over SDP (the
# listener thread is its parent's) and, with `use both`, over TCP (the
# descriptor passed to it); SOCK_SEM_FAMILY and SDP_SERVER_RULE change the
# socket family and the server's rule; a 4th argument the client's mode
prefork() {
	local name=$1 cconf=$2 want=$3 t0 segs
	PORT=$((PORT + 1))
	printf '%b%b' "${SDP_SERVER_RULE:-use both server * *:*\n}" "$cconf" >"$SOF_TMP/prefork.$PORT.conf"
	t0=$(_sof_rs_tcp_out "")
	if ! LIBSDP_CONFIG_FILE="$SOF_TMP/prefork.$PORT.conf" sof_cm_pair "$name" 30 "" "" \
		env LD_PRELOAD="$SOF_RS_PRELOAD" "$SOF_BUILD_DIR/tests/sock_sem" prefork "$ADDR" "$PORT" -- \
		env LD_PRELOAD="$SOF_RS_PRELOAD" "$SOF_BUILD_DIR/tests/sock_sem" "${4:-hello}" "$ADDR" "$PORT"; then
		not_ok "$name" "$SOF_PAIR_WHY"
		sof_pair_dump
		return
	fi
	segs=$(($(_sof_rs_tcp_out "") - t0))
	if [ "$want" = sdp ] && [ "$segs" -ne 0 ]; then
		not_ok "$name" "$segs kernel TCP segments: not over SDP"
	elif [ "$want" = tcp ] && [ "$segs" -eq 0 ]; then
		not_ok "$name" "no kernel TCP segment: not over TCP"
	else
		ok "$name ($segs kernel TCP segments)"
	fi
}
prefork "sdp/prefork server: a child accepts over SDP" 'use sdp client * *:*\n' sdp
prefork "sdp/prefork server: a child accepts over TCP (use both)" 'use tcp client * *:*\n' tcp
# a non-blocking connect under `use both` (sock_sem nbhello: EINPROGRESS,
# EPOLLOUT, SO_ERROR 0, EISCONN, then hello/world): over SDP when the
# server has an SDP listener, else over the kernel's TCP (the connect's
# thread relays the program's end to it)
prefork "sdp/use both, non-blocking connect, epoll: over SDP" 'use both client * *:*\n' sdp nbhello
SDP_SERVER_RULE='use tcp server * *:*\n' \
	prefork "sdp/use both, non-blocking connect, epoll: no SDP listener, over TCP" \
	'use both client * *:*\n' tcp nbhello
# ... and nobody listening: SO_ERROR is TCP's ECONNREFUSED, once
PORT=$((PORT + 1))
out=$(sof_out refused.both)
printf 'use both client * *:*\n' >"$SOF_TMP/refused.both.conf"
if LIBSDP_CONFIG_FILE=$SOF_TMP/refused.both.conf LIBSDP_LOG=$SOF_TMP/refused.both.log \
	timeout 30 "$SOFTOFED" run -- env LD_PRELOAD="$SOF_RS_PRELOAD" \
	"$SOF_BUILD_DIR/tests/sock_sem" refused "$ADDR" "$PORT" >"$out" 2>&1 &&
	grep -q '^refused: all ok' "$out" && grep -q "no TCP (Connection refused)" "$SOF_TMP/refused.both.log"; then
	ok "sdp/use both, non-blocking connect refused: EINPROGRESS, SDP then TCP tried, SO_ERROR ECONNREFUSED"
else
	not_ok "sdp/use both, non-blocking connect refused" "$(tail -n 1 "$out"; tail -n 2 "$SOF_TMP/refused.both.log")"
fi
# AF_INET_SDP (27) sockets are SDP whatever the rules say (here: tcp)
SOCK_SEM_FAMILY=27 SDP_SERVER_RULE='use tcp server * *:*\n' \
	prefork "sdp/AF_INET_SDP sockets go over SDP under use tcp" 'use tcp client * *:*\n' sdp

# 50 connections in a row to one server (Python's http.server, curl, 100 kB
# each, compared): each connection's QP, CQ, regions and cm_id are given
# back when it ends, while the server still runs (the daemon's counts: one
# cm_id and channel, its listener's)
many() {
	local name="sdp/50 connections in a row: resources given back" i bad=0 r k
	local dir=$SOF_TMP/www.many
	PORT=$((PORT + 1))
	mkdir -p "$dir"
	head -c 100000 /dev/urandom >"$dir/f.bin"
	sof_bg many.srv 120 "$SOFTOFED" run -- env LD_PRELOAD="$SOF_RS_PRELOAD" \
		python3 -m http.server --bind "$ADDR" --directory "$dir" "$PORT"
	sdp_wait_listener 15
	for i in $(seq 50); do
		rm -f "$dir/got"
		timeout 20 "$SOFTOFED" run -- env LD_PRELOAD="$SOF_RS_PRELOAD" \
			curl -sS -o "$dir/got" "http://$ADDR:$PORT/f.bin" 2>/dev/null
		cmp -s "$dir/got" "$dir/f.bin" || bad=$((bad + 1))
	done
	sleep 0.5
	r=""
	for k in qps cqs mrs cm_ids cm_channels; do
		r="$r $k $(sof_cm_count "$k" || echo '?')"
	done
	sof_kill many.srv
	if [ "$bad" -ne 0 ]; then
		not_ok "$name" "$bad of 50 transfers failed or differed"
	elif [ "$r" != " qps 0 cqs 0 mrs 0 cm_ids 1 cm_channels 1" ]; then
		not_ok "$name" "after 50 connections, with the server listening:$r"
	else
		ok "$name (50 transfers compared;$r with the server listening)"
	fi
}

# sdp_wait_listener SECS: until the daemon counts a listening cm_id
sdp_wait_listener() {
	local end=$(($(now_ms) + $1 * 1000))
	while [ "$(sof_cm_count cm_listeners || echo 0)" -lt 1 ] && [ "$(now_ms)" -lt "$end" ]; do
		sleep 0.1
	done
}
many

# an IPv6-only listener (IPV6_V6ONLY) on [::] under `use sdp`: an IPv4
# client is refused (its Hello says IP version 4), an IPv6 one served,
# both over SDP (no kernel TCP segment)
sdp_v6only() {
	local name="sdp/IPV6_V6ONLY listener: IPv4 refused, IPv6 served" t0 out
	PORT=$((PORT + 1))
	out=$(sof_out v6only.cli)
	t0=$(_sof_rs_tcp_out "")
	sof_bg v6only.srv 40 "$SOFTOFED" run -- env LD_PRELOAD="$SOF_RS_PRELOAD" python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
s.bind(("::", int(sys.argv[1])))
s.listen(4)
c, peer = s.accept()
c.sendall(b"v6only ok " + peer[0].encode())
c.close()
' "$PORT"
	sdp_wait_listener 15
	timeout 30 "$SOFTOFED" run -- env LD_PRELOAD="$SOF_RS_PRELOAD" python3 -c '
import socket, sys
port = int(sys.argv[1])
try:
    socket.create_connection(("127.0.0.1", port), timeout=10)
    print("IPv4 connected")
except ConnectionRefusedError:
    print("IPv4 refused")
s = socket.create_connection(("::1", port), timeout=10)
print(s.recv(100).decode())
' "$PORT" >"$out" 2>&1
	sof_kill v6only.srv
	if ! grep -q '^IPv4 refused' "$out" || ! grep -q '^v6only ok ::1' "$out"; then
		not_ok "$name" "$(tr '\n' ' ' <"$out")"
	elif [ "$(_sof_rs_tcp_out "")" -ne "$t0" ]; then
		not_ok "$name" "kernel TCP segments were sent: not over SDP"
	else
		ok "$name (over SDP)"
	fi
}
sdp_v6only

# a program that exits right after writing (nc -q 0): what it wrote still
# arrives, as the kernel sends a TCP socket's data after the process; the
# reader is bash's /dev/tcp, read by a cat it forks and execs (the socket
# crosses fork and exec)
PORT=$((PORT + 1))
head -c $((20 << 20)) /dev/urandom >"$SOF_TMP/exit.bin"
if ! sof_cm_pair "sdp/exit after writing: nc -q 0" 60 "" "" \
	env LD_PRELOAD="$SOF_RS_PRELOAD" sh -c "nc.traditional -l -p $PORT -s $ADDR -q 0 <'$SOF_TMP/exit.bin'" -- \
	env LD_PRELOAD="$SOF_RS_PRELOAD" bash -c "exec 3<>/dev/tcp/$ADDR/$PORT; cat <&3 >'$SOF_TMP/exit.got'"; then
	not_ok "sdp/exit after writing: nc -q 0" "$SOF_PAIR_WHY"
	sof_pair_dump
elif ! cmp -s "$SOF_TMP/exit.bin" "$SOF_TMP/exit.got"; then
	not_ok "sdp/exit after writing: nc -q 0" "got $(stat -c %s "$SOF_TMP/exit.got") bytes of 20 MiB, or others"
else
	ok "sdp/exit after writing: nc -q 0 (20 MiB arrived whole)"
fi

# the rules decide as written
PORT=$((PORT + 1))
sdp_rule_http "sdp/rules use sdp (program, address, port range)" "$PORT" \
	"use tcp server curl *:*\nuse sdp server python3* 127.0.0.0/8:$((PORT - 1))-$((PORT + 1))\nuse tcp server * *:*\n" \
	"use tcp client python3 *:*\nuse sdp client curl 127.0.0.1:$PORT\n" sdp 20 \
	"matches .*:2 \\(use sdp\\)" "connect $ADDR:$PORT: sdp"
PORT=$((PORT + 1))
sdp_rule_http "sdp/rules use tcp" "$PORT" \
	"use tcp server python3* *:$PORT\nuse sdp server * *:*\n" \
	"use sdp client * 10.0.0.0/8:*\nuse tcp client cu?l *:*\nuse sdp client * *:*\n" tcp 20 \
	"listen $ADDR:$PORT: tcp" "connect $ADDR:$PORT: tcp"
PORT=$((PORT + 1))
sdp_rule_http "sdp/rules client use both falls back to TCP" "$PORT" \
	"use tcp server * *:*\n" "use both client * *:*\n" tcp 20 \
	"listen $ADDR:$PORT: tcp" "connect $ADDR:$PORT: no SDP .*: tcp"
PORT=$((PORT + 1))
sdp_rule_http "sdp/rules server use both, client over TCP" "$PORT" \
	"use both server * *:*\n" "use tcp client * *:*\n" tcp 20 \
	"listen $ADDR:$PORT: sdp and tcp" "connect $ADDR:$PORT: tcp"
PORT=$((PORT + 1))
sdp_rule_http "sdp/rules server use both, client over SDP" "$PORT" \
	"use both server * *:*\n" "use both client * *:*\n" sdp 20 \
	"listen $ADDR:$PORT: sdp and tcp" "connect $ADDR:$PORT: sdp"
PORT=$((PORT + 1))
sdp_rule_http "sdp/rules no rule matches: TCP" "$PORT" \
	"use sdp server * *:1-2\n" "use sdp client nothing *:*\n" tcp 20 \
	"listen $ADDR:$PORT: tcp" "connect $ADDR:$PORT: tcp"
# AF_INET6 sockets: a dual-stack server on [::] and curl to the
# IPv4-mapped address go over SDP, by rules of that IPv4 address (:: is
# also 0.0.0.0 to a rule); ::1 goes over SDP too (A4's Hello of IP version
# 6, the AF_IB address the GID ::1), by IPv6 rules with and without a
# prefix, and stays on TCP by an IPv6 rule that says so
PORT=$((PORT + 1))
SDP_BIND=:: SDP_LISTEN_AS='\[::\]' SDP_URL_HOST='[::ffff:127.0.0.1]' \
	sdp_rule_http "sdp/AF_INET6 sockets, IPv4-mapped: over SDP" "$PORT" \
	"use sdp server * 0.0.0.0:$PORT\n" "use sdp client curl $ADDR:$PORT\n" sdp 20 \
	"listen \[::\]:$PORT: sdp" "connect $ADDR:$PORT: sdp"
# sdp_rule_http6 ARGS...: sdp_rule_http with the server on ::1, curl to [::1]
sdp_rule_http6() {
	SDP_BIND=::1 SDP_LISTEN_AS='\[::1\]' SDP_URL_HOST='[::1]' sdp_rule_http "$@"
}
PORT=$((PORT + 1))
sdp_rule_http6 "sdp/IPv6 ::1 over SDP (rules [::1]:PORT, ::/0)" "$PORT" \
	"use tcp server * 127.0.0.1:*\nuse sdp server * [::1]:$PORT\n" \
	"use tcp client * 0.0.0.0/0:*\nuse sdp client curl ::/0\n" sdp 20 \
	"listen \[::1\]:$PORT: sdp" "connect \[::1\]:$PORT: sdp"
PORT=$((PORT + 1))
sdp_rule_http6 "sdp/IPv6 ::1 by a use tcp rule: kernel TCP" "$PORT" \
	"use tcp server * [::1]/128:$PORT\nuse sdp server * *:*\n" \
	"use tcp client * [::]/64:*\nuse sdp client * *:*\n" tcp 20 \
	"listen \[::1\]:$PORT: tcp" "connect \[::1\]:$PORT: tcp"
PORT=$((PORT + 1))
sof_rs_iperf "sdp/iperf3 libsdp over ::1" "" "" ::1 "$PORT"

# direct reads (sdp/sdp_drive.c sdp_drive_take): a Python reader of 200
# MiB whose reads of 128 KiB (recv_into), two buffers (recvmsg_into, 70000
# + 70000 B) and 100 B take it straight from the receive buffers, from a
# writer whose 4 MiB sends go straight from its buffer (sdp/sdp_data.c
# sdp_send_user); the SHA-256 of both sides and the bytes moved so (the
# log's end-of-connection lines, level 1) checked
sdp_direct() {
	local name="sdp/direct reads and sends: 200 MiB, SHA-256 matches" got sent n u
	PORT=$((PORT + 1))
	head -c $((4 << 20)) /dev/urandom >"$SOF_TMP/direct.bin"
	if ! sof_cm_pair "$name" 60 "" "" \
		env LD_PRELOAD="$SOF_RS_PRELOAD" LIBSDP_LOG_LEVEL=1 LIBSDP_LOG="$SOF_TMP/direct.log" python3 -c '
import hashlib, socket, sys
s = socket.socket()
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(1)
c, _ = s.accept()
h, buf, a, b = hashlib.sha256(), bytearray(131072), bytearray(70000), bytearray(70000)
i = 0
while True:
    if i % 3 == 0:
        n = c.recv_into(buf)
        h.update(memoryview(buf)[:n])
    elif i % 3 == 1:
        n = c.recvmsg_into([a, b])[0]
        h.update(memoryview(a)[:min(n, 70000)])
        h.update(memoryview(b)[:max(n - 70000, 0)])
    else:
        d = c.recv(100)
        n = len(d)
        h.update(d)
    if not n:
        break
    i += 1
print("got", h.hexdigest())
' "$PORT" -- \
		env LD_PRELOAD="$SOF_RS_PRELOAD" LIBSDP_LOG_LEVEL=1 LIBSDP_LOG="$SOF_TMP/direct.log" python3 -c '
import hashlib, socket, sys
block = open(sys.argv[2], "rb").read()
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=30)
h = hashlib.sha256()
for _ in range(50):
    s.sendall(block)
    h.update(block)
s.close()
print("sent", h.hexdigest())
' "$PORT" "$SOF_TMP/direct.bin"; then
		not_ok "$name" "$SOF_PAIR_WHY"
		sof_pair_dump
		return 1
	fi
	got=$(awk '/^got/ { print $2 }' "$SOF_SRV_OUT")
	sent=$(awk '/^sent/ { print $2 }' "$SOF_CLI_OUT")
	n=$(grep -oE '[0-9]+ bytes read straight' "$SOF_TMP/direct.log" |
		awk '$1 > m { m = $1 } END { print m + 0 }')
	u=$(grep -oE '[0-9]+ sent from the program' "$SOF_TMP/direct.log" |
		awk '$1 > m { m = $1 } END { print m + 0 }')
	if [ -z "$got" ] || [ "$got" != "$sent" ]; then
		not_ok "$name" "sent ${sent:-nothing}, got ${got:-nothing}"
	elif [ "$n" -eq 0 ]; then
		not_ok "$name" "no byte was read straight from the receive buffers"
	elif [ "$u" -eq 0 ]; then
		not_ok "$name" "no byte was sent straight from the writer's buffer"
	else
		ok "$name ($n bytes read straight from the receive buffers, $u sent from the writer's)"
	fi
}
sdp_direct
PORT=$((PORT + 1))
SOF_RS_PEER=::1 sof_rs_http6 "sdp/Python AF_INET6 server, curl, ::1" "" "" ::1 "$PORT" 20
sof_exit
