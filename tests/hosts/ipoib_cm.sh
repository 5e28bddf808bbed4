#!/bin/bash
# shellcheck disable=SC2016,SC2317 # sh -c scripts in single quotes; functions called through sof_wait_for
# IPoIB connected mode (RFC 4755, ipoib/cm.c) between two network-namespace
# hosts on one switch (tests/topologies/pair.net) with Debian's OpenSM
# (tests/ib_fabric.sh's sof_ibf_up): `softofed ipoib up --mode connected`
# in a and b, 192.168.77.N/24 and fd77:1b::N/64 on ib0. Connections idle
# for 4 s are closed (SOFTOFED_IPOIB_CM_IDLE_SECS=4).
#
#   up        ib0 with MTU 65520 in both, status "mode connected", the
#             'C' flag (0x80) in the first byte of the hardware address
#   ping      ping and ping -6 a -> b with 60000-byte payloads: a's status
#             has an RC connection to b (cm tx, up), b's one from a (cm
#             rx), frames counted on them; the neighbour learnt the flag
#   iperf3    TCP a -> b over the RC connections, bytes received > 0
#   http      a 64 MiB file from python3's http.server in b, fetched by
#             curl in a, SHA-256 equal
#   idle      no traffic for the idle time: the connections are closed
#             (cm_idle counted, no cm lines), and ping makes new ones
#   req       progs/cm_ipoibreq from a connects to b's service ID
#             0x1000000000000000 | QPN: with RFC 4755's eight bytes of
#             private data, ESTABLISHED and the REP's private data names
#             b's UD QPN and 65524; with 3 bytes, or a QPN of 0, REJECTED
#             and b's cm_refused counts them
#   fallback  b comes up again in datagram mode (MTU 2044, no flag): a
#             makes no connection to it; ping works; a ping of 3000
#             bytes earns a's kernel an ICMP "fragmentation needed" (MTU
#             2044, tx_too_big) and the rest are answered; a 16 MiB HTTP
#             transfer b -> a and a -> b with SHA-256 equal (TCP across
#             the MTU)
#   reset     b in connected mode again; its ipoib is SIGKILLed: a's sends
#             on the connection fail, the connection is reset (cm_resets),
#             a's next REQ to b is rejected (no listener: cm_fails, datagrams
#             to b from then on), a's ping and curl
#             end within their bounds, `softofed ipoib status` and `down`
#             in a answer at once
#
# Needs root (ip netns). Usage: tests/hosts/ipoib_cm.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/ib_fabric.sh
. "$(dirname "$0")/../ib_fabric.sh"
sof_init

[ -x "$(dirname "$SOFTOFED")/softofed-ipoib" ] || export SOFTOFED_IPOIB=$SOF_ROOT/build/bin/softofed-ipoib
REQ=$SOF_BUILD_DIR/tests/cm_ipoibreq
[ -x "$REQ" ] || REQ=$SOF_ROOT/build/tests/cm_ipoibreq
T=ipoib_cm

sof_ibf_up pair H1,H2 2 || sof_exit

# ipup H MODE: ib0 in H with its addresses; the process's PID in IPPID[H]
declare -A IPPID
ipup() {
	local out=$SOF_TMP/ipcm.up.$1
	if ! sof_host_run "$1" env SOFTOFED_IPOIB_NEIGH_SECS=5 SOFTOFED_IPOIB_CM_IDLE_SECS=4 \
		"$SOFTOFED" ipoib up --mode "$2" >"$out" 2>&1 </dev/null; then
		sof_dump "$out"
		sof_host_run "$1" sh -c 'tail -n 20 /tmp/softofed-ipoib-*-ib0-$(stat -L -c %i /proc/self/ns/net).log' 2>/dev/null | sed "s/^/#   $1 log: /"
		return 1
	fi
	IPPID[$1]=$(sed -n 's/.* up, pid \([0-9]*\),.*/\1/p' "$out")
	sof_host_run "$1" ip addr add "$(sof_ipoib_ip "$1")/24" dev ib0
	sof_host_run "$1" ip addr add "$(sof_ipoib_ip6 "$1")/64" dev ib0 nodad
}
# pingto H ADDR N SIZE [-6]: N echoes of SIZE bytes answered
pingto() {
	local out=$SOF_TMP/ipcm.ping.$1.$2.$4
	# shellcheck disable=SC2086 # -6 or nothing
	sof_host_run "$1" timeout 30 ping ${5:-} -n -c "$3" -i 0.2 -W 3 -s "$4" "$2" >"$out" 2>&1 </dev/null
	grep -q " $3 received" "$out"
}

# ---- up --------------------------------------------------------------------------------
if ipup a connected && ipup b connected; then
	st=$SOF_TMP/ipcm.st.a
	sof_ipoib_st a >"$st"
	mtu=$(sof_host_run b cat /sys/class/net/ib0/mtu 2>/dev/null)
	if [ "$(sof_host_run a cat /sys/class/net/ib0/mtu)" = 65520 ] && [ "$mtu" = 65520 ] &&
		grep -q '^ipoib ib0 device sofib0 port 1 pkey 0xffff mode connected mtu 65520 state up' "$st" &&
		grep -q '^hwaddr 80:' "$st"; then
		ok "$T: up --mode connected in a and b: ib0 MTU 65520, status mode connected, hardware address $(sed -n 's/^hwaddr //p' "$st" | cut -c1-14)... (the C flag)"
	else
		not_ok "$T: up" "b mtu '$mtu'; $(head -n 2 "$st" | tr '\n' ' ')"
	fi
else
	not_ok "$T: up" "softofed ipoib up --mode connected failed"
	sof_exit
fi
aqpn=$(sof_ipoib_st a | sed -n 's/^qpn \(0x[0-9a-f]*\) .*/\1/p')
bqpn=$(sof_ipoib_st b | sed -n 's/^qpn \(0x[0-9a-f]*\) .*/\1/p')
bgid=$(sof_ipoib_st b | sed -n 's/^qpn .* gid \([0-9a-f:]*\) .*/\1/p')

# ---- ping, ping -6 of 60000 bytes --------------------------------------------------------
if pingto a "$(sof_ipoib_ip b)" 5 60000; then
	ok "$T: ping -s 60000 a -> b over ib0 ($(grep -o 'rtt.*' "$SOF_TMP/ipcm.ping.a.$(sof_ipoib_ip b).60000"))"
else
	not_ok "$T: ping -s 60000" "$(tail -n 2 "$SOF_TMP/ipcm.ping.a.$(sof_ipoib_ip b).60000" | tr '\n' ' ')"
	sof_ipoib_logs 25 a b
fi
if pingto a "$(sof_ipoib_ip6 b)" 5 60000 -6; then
	ok "$T: ping -6 -s 60000 a -> b over ib0"
else
	not_ok "$T: ping -6 -s 60000" "$(tail -n 2 "$SOF_TMP/ipcm.ping.a.$(sof_ipoib_ip6 b).60000" | tr '\n' ' ')"
	sof_ipoib_logs 25 a b
fi
# resolved and connected: the latency of small and 60000-byte echoes
r1=$SOF_TMP/ipcm.rtt.small r2=$SOF_TMP/ipcm.rtt.big
sof_host_run a timeout 30 ping -n -q -c 20 -i 0.05 -W 2 "$(sof_ipoib_ip b)" >"$r1" 2>&1 </dev/null
sof_host_run a timeout 30 ping -n -q -c 20 -i 0.05 -W 2 -s 60000 "$(sof_ipoib_ip b)" >"$r2" 2>&1 </dev/null
if grep -q ' 20 received' "$r1" && grep -q ' 20 received' "$r2"; then
	ok "$T: 20 echoes each, connected: 56 bytes $(grep -o 'rtt.*' "$r1" | cut -d' ' -f4) ms, 60000 bytes $(grep -o 'rtt.*' "$r2" | cut -d' ' -f4) ms (min/avg/max/mdev)"
else
	not_ok "$T: rtt" "$(tail -n 2 "$r1" | tr '\n' ' '); $(tail -n 2 "$r2" | tr '\n' ' ')"
fi
sa=$SOF_TMP/ipcm.st.a2 sb=$SOF_TMP/ipcm.st.b2
sof_ipoib_st a >"$sa"
sof_ipoib_st b >"$sb"
if grep -q "^cm tx peer $bgid qpn $bqpn rc_qpn 0x[0-9a-f]* state up mtu 65520" "$sa" &&
	grep -q "^cm rx peer .* qpn $aqpn rc_qpn 0x[0-9a-f]* state up" "$sb" &&
	[ "$(sof_ipoib_cnt a cm_tx_packets)" -ge 10 ] && [ "$(sof_ipoib_cnt b cm_rx_packets)" -ge 10 ] &&
	[ "$(sof_ipoib_cnt b cm_accepts)" -ge 1 ]; then
	ok "$T: a holds an RC connection to b (service ID 0x1000000000000000 | $bqpn, through the IB CM), b accepted it; cm_tx_packets a $(sof_ipoib_cnt a cm_tx_packets), cm_rx_packets b $(sof_ipoib_cnt b cm_rx_packets)"
else
	not_ok "$T: RC connection" "a: $(grep '^cm' "$sa" | tr '\n' ' '); b: $(grep '^cm' "$sb" | tr '\n' ' ')"
fi

# ---- iperf3 TCP ----------------------------------------------------------------------------
sof_host_bg ipcm.iperf b 60 iperf3 -s -p 5201 -B "$(sof_ipoib_ip b)"
sof_host_wait_listen b 5201 10 ipcm.iperf >/dev/null 2>&1
out=$SOF_TMP/ipcm.iperf.tcp
c0=$(sof_ipoib_cnt a cm_tx_packets)
# the connections are RC: on the fabric's direct paths (its default) they
# go host to host, counted in the fabric's "direct: pkts"
dpk() { sof_host_run a "$SOFTOFED" fabric status 2>/dev/null </dev/null | sed -n 's/^direct: pkts \([0-9]*\).*/\1/p'; }
dp0=$(dpk)
sof_host_run a timeout 30 iperf3 -c "$(sof_ipoib_ip b)" -p 5201 -t 3 -J >"$out" 2>&1 </dev/null
bps=$(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(int(j["end"]["sum_received"]["bits_per_second"]))' "$out" 2>/dev/null)
sleep 0.3 # the hosts report what they sent straight every 20 ms
dp1=$(dpk)
if [ -n "$bps" ] && [ "$bps" -gt 0 ] && [ "$(sof_ipoib_cnt a cm_tx_packets)" -gt $((c0 + 100)) ] &&
	{ [ "${SOF_IBF_DIRECT:-1}" = 0 ] || [ "${dp1:-0}" -gt $((${dp0:-0} + 100)) ]; }; then
	ok "$T: iperf3 TCP a -> b over ib0 in connected mode: $((bps / 1000000)) Mbit/s received; $((${dp1:-0} - ${dp0:-0})) packets straight host to host (fabric's direct pkts)"
else
	not_ok "$T: iperf3 TCP" "direct pkts '$dp0' -> '$dp1': $(head -c 400 "$out" | tr '\n' ' ')"
	sof_ipoib_logs 25 a b
fi
sof_kill ipcm.iperf

# ---- HTTP: 64 MiB, SHA-256 -------------------------------------------------------------------
www=$SOF_TMP/www
mkdir -p "$www"
head -c $((64 << 20)) /dev/urandom >"$www/big.bin"
head -c $((16 << 20)) /dev/urandom >"$www/mid.bin"
want=$(sha256sum <"$www/big.bin" | cut -d' ' -f1)
want16=$(sha256sum <"$www/mid.bin" | cut -d' ' -f1)
sof_host_bg ipcm.http b 100 python3 -m http.server 8080 --bind "$(sof_ipoib_ip b)" --directory "$www"
sof_host_wait_listen b 8080 10 ipcm.http >/dev/null 2>&1
t0=$(now_ms)
got=$(sof_host_run a timeout 80 curl -sf --max-time 70 "http://$(sof_ipoib_ip b):8080/big.bin" </dev/null | sha256sum | cut -d' ' -f1)
ms=$(($(now_ms) - t0))
if [ "$got" = "$want" ]; then
	ok "$T: curl of a 64 MiB file from python3 http.server in b over ib0 (connected), SHA-256 equal, $ms ms"
else
	not_ok "$T: http" "SHA-256 $got, want $want"
	sof_ipoib_logs 25 a b
fi
sof_kill ipcm.http

# ---- idle connections close -----------------------------------------------------------------
nocm() { ! sof_ipoib_st a | grep -q '^cm tx' && ! sof_ipoib_st b | grep -q '^cm rx'; }
i0=$(sof_ipoib_cnt a cm_idle)
if sof_wait_for 20 nocm && [ "$(sof_ipoib_cnt a cm_idle)" -gt "$i0" ]; then
	ok "$T: idle 4 s: a closed its connection to b (cm_idle $(sof_ipoib_cnt a cm_idle)), b's side went with it"
else
	not_ok "$T: idle" "a: $(sof_ipoib_st a | grep '^cm' | tr '\n' ' '); b: $(sof_ipoib_st b | grep '^cm' | tr '\n' ' ')"
fi
c0=$(sof_ipoib_cnt a cm_connects)
if pingto a "$(sof_ipoib_ip b)" 3 20000 && [ "$(sof_ipoib_cnt a cm_connects)" -gt "$c0" ]; then
	ok "$T: after idle teardown a ping of 20000 bytes makes a new connection (cm_connects $(sof_ipoib_cnt a cm_connects))"
else
	not_ok "$T: reconnect" "$(sof_ipoib_st a | grep '^cm' | tr '\n' ' ')"
fi

# ---- REQs from outside: RFC 4755's private data, malformed ones refused -----------------------
r0=$(sof_ipoib_cnt b cm_refused)
good=$SOF_TMP/ipcm.req.good bad=$SOF_TMP/ipcm.req.bad bad0=$SOF_TMP/ipcm.req.bad0
sof_host_run a "$SOFTOFED" run -- timeout 30 "$REQ" "$bgid" "$bqpn" 001234560000fff4 >"$good" 2>&1 </dev/null
sof_host_run a "$SOFTOFED" run -- timeout 30 "$REQ" "$bgid" "$bqpn" 001234 >"$bad" 2>&1 </dev/null
sof_host_run a "$SOFTOFED" run -- timeout 30 "$REQ" "$bgid" "$bqpn" 000000000000fff4 >"$bad0" 2>&1 </dev/null
if grep -q "^event RDMA_CM_EVENT_ESTABLISHED rep qpn $bqpn rsize 65524" "$good" &&
	grep -q '^event RDMA_CM_EVENT_REJECTED' "$bad" && grep -q '^event RDMA_CM_EVENT_REJECTED' "$bad0" &&
	[ "$(sof_ipoib_cnt b cm_refused)" = $((r0 + 2)) ] && pingto a "$(sof_ipoib_ip b)" 3 20000; then
	ok "$T: a REQ to b's service ID with RFC 4755's private data is accepted (REP: UD QPN $bqpn, receive size 65524); 3 bytes or QPN 0 rejected (cm_refused $(sof_ipoib_cnt b cm_refused)); ib0 carries on"
else
	not_ok "$T: REQ private data" "good: $(tr '\n' ' ' <"$good"); bad: $(tr '\n' ' ' <"$bad"); qpn 0: $(tr '\n' ' ' <"$bad0"); refused $(sof_ipoib_cnt b cm_refused) (was $r0)"
fi

# ---- fallback: b in datagram mode ---------------------------------------------------------------
sof_host_run b "$SOFTOFED" ipoib down >/dev/null 2>&1 </dev/null
# a forgets b's old hardware address (unanswered after 5 s)
sleep 1
if ipup b datagram; then
	sbd=$SOF_TMP/ipcm.st.bd
	sof_ipoib_st b >"$sbd"
	if grep -q '^ipoib ib0 .* mode datagram mtu 2044 ' "$sbd" && grep -q '^hwaddr 00:' "$sbd"; then
		ok "$T: b up again in datagram mode: MTU 2044, no C flag"
	else
		not_ok "$T: b datagram" "$(head -n 2 "$sbd" | tr '\n' ' ')"
	fi
else
	not_ok "$T: b datagram" "up failed"
fi
bqpn=$(sof_ipoib_st b | sed -n 's/^qpn \(0x[0-9a-f]*\) .*/\1/p')
f0=$(sof_ipoib_cnt a cm_connects)
sof_wait_for 20 pingto a "$(sof_ipoib_ip b)" 1 56 >/dev/null
if pingto a "$(sof_ipoib_ip b)" 5 56 && sof_ipoib_st a | grep -q "^neigh $(sof_ipoib_ip b) qpn $bqpn .* state ready" &&
	! sof_ipoib_st a | grep -q "^cm tx peer $bgid qpn $bqpn " && [ "$(sof_ipoib_cnt a cm_connects)" = "$f0" ]; then
	ok "$T: a (connected) pings b (datagram) over UD: no connection tried"
else
	not_ok "$T: fallback ping" "$(sof_ipoib_st a | grep '^neigh\|^cm' | tr '\n' ' ')"
	sof_ipoib_logs 25 a b
fi
tb0=$(sof_ipoib_cnt a tx_too_big)
out=$SOF_TMP/ipcm.ping.big
sof_host_run a timeout 30 ping -n -c 6 -i 0.3 -W 2 -s 3000 "$(sof_ipoib_ip b)" >"$out" 2>&1 </dev/null
rcv=$(sed -n 's/.* \([0-9]*\) received.*/\1/p' "$out")
if [ "${rcv:-0}" -ge 4 ] && [ "$(sof_ipoib_cnt a tx_too_big)" -gt "$tb0" ]; then
	ok "$T: ping -s 3000 a -> b (datagram): ICMP fragmentation needed (MTU 2044) to a's kernel (tx_too_big $(sof_ipoib_cnt a tx_too_big)), then $rcv of 6 answered in fragments"
else
	not_ok "$T: path MTU to a datagram peer" "received '$rcv', tx_too_big $(sof_ipoib_cnt a tx_too_big); $(tail -n 2 "$out" | tr '\n' ' ')"
fi
sof_host_bg ipcm.http2 b 60 python3 -m http.server 8080 --bind "$(sof_ipoib_ip b)" --directory "$www"
sof_host_bg ipcm.http3 a 60 python3 -m http.server 8081 --bind "$(sof_ipoib_ip a)" --directory "$www"
sof_host_wait_listen b 8080 10 ipcm.http2 >/dev/null 2>&1
sof_host_wait_listen a 8081 10 ipcm.http3 >/dev/null 2>&1
g1=$(sof_host_run a timeout 50 curl -sf --max-time 45 "http://$(sof_ipoib_ip b):8080/mid.bin" </dev/null | sha256sum | cut -d' ' -f1)
g2=$(sof_host_run b timeout 50 curl -sf --max-time 45 "http://$(sof_ipoib_ip a):8081/mid.bin" </dev/null | sha256sum | cut -d' ' -f1)
if [ "$g1" = "$want16" ] && [ "$g2" = "$want16" ]; then
	ok "$T: TCP between connected a and datagram b: 16 MiB over HTTP each way, SHA-256 equal"
else
	not_ok "$T: TCP fallback" "b -> a $g1, a -> b $g2, want $want16"
	sof_ipoib_logs 25 a b
fi
sof_kill ipcm.http2
sof_kill ipcm.http3
rm -rf "$www"

# ---- the peer goes away: the connection resets, nothing hangs -------------------------------
sof_host_run b "$SOFTOFED" ipoib down >/dev/null 2>&1 </dev/null
sleep 1
ipup b connected || not_ok "$T: b connected again" "up failed"
sof_wait_for 20 pingto a "$(sof_ipoib_ip b)" 1 20000 >/dev/null
if pingto a "$(sof_ipoib_ip b)" 3 20000 && sof_ipoib_st a | grep -q '^cm tx .* state up'; then
	ok "$T: b in connected mode again: a connects to it"
else
	not_ok "$T: reconnect to b" "$(sof_ipoib_st a | grep '^cm\|^neigh' | tr '\n' ' ')"
fi
x0=$(sof_ipoib_cnt a cm_resets) y0=$(sof_ipoib_cnt a cm_fails)
sof_host_run b kill -KILL "${IPPID[b]}"
t0=$(now_ms)
sof_host_run a timeout 40 ping -n -c 10 -i 0.5 -W 1 -s 20000 "$(sof_ipoib_ip b)" >/dev/null 2>&1 </dev/null
sof_host_run a timeout 30 curl -s --max-time 3 "http://$(sof_ipoib_ip b):8080/" >/dev/null 2>&1 </dev/null
rst() { [ "$(sof_ipoib_cnt a cm_resets)" -gt "$x0" ] && [ "$(sof_ipoib_cnt a cm_fails)" -gt "$y0" ]; }
sof_wait_for 20 rst
ms=$(($(now_ms) - t0))
t1=$(now_ms)
sof_ipoib_st a >"$SOF_TMP/ipcm.st.after"
st_ms=$(($(now_ms) - t1))
if rst && [ "$st_ms" -lt 2000 ] && ! grep -q '^cm tx .* state up' "$SOF_TMP/ipcm.st.after"; then
	ok "$T: b's ipoib SIGKILLed: a's connection reset (cm_resets $(sof_ipoib_cnt a cm_resets)), its new REQ refused (cm_fails $(sof_ipoib_cnt a cm_fails)) within $ms ms; ping and curl ended; status answers in $st_ms ms"
else
	not_ok "$T: peer gone" "resets $(sof_ipoib_cnt a cm_resets) (was $x0), fails $(sof_ipoib_cnt a cm_fails) (was $y0), status $st_ms ms; $(grep '^cm' "$SOF_TMP/ipcm.st.after" | tr '\n' ' ')"
	sof_ipoib_logs 25 a b
fi
t0=$(now_ms)
if sof_host_run a timeout 15 "$SOFTOFED" ipoib down 2>&1 </dev/null | grep -q 'ib0 down' &&
	! sof_host_run a ip link show ib0 >/dev/null 2>&1; then
	ok "$T: softofed ipoib down in a: ib0 gone in $(($(now_ms) - t0)) ms"
else
	not_ok "$T: down" "ib0 still there after $(($(now_ms) - t0)) ms"
fi
sof_kill ibf.sm
sof_kill ibf.fabric
sof_exit
