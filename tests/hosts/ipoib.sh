#!/bin/bash
# IPoIB datagram mode (issue 21, ipoib/) between network-namespace hosts on
# a softofed InfiniBand fabric brought up by Debian's OpenSM, as
# tests/hosts/opensm.sh builds it: every host runs `softofed ipoib up`,
# which joins the broadcast group through OpenSM's SA and makes the TUN
# interface ib0; the hosts get 192.168.77.N/24 and fd77:1b::N/64 on it.
#
#   SOF_IPOIB_TOPO=pair (default): hosts a and b on one switch
#     up        ib0 exists with MTU 2044 (IB MTU 2048), `softofed ipoib
#               status` shows the broadcast group joined (MGID
#               ff12:401b:ffff::ffff:ffff, its MLID), QPN, LID
#     ping      ping a -> b over ib0 (ARP on the IB side, path record),
#               then b's neighbour table holds a with a's QPN and LID
#     status    `softofed status` has a line for ib0: mode, MTU,
#               neighbours, groups, packets
#     ping6     ping -6 (neighbour discovery on the solicited-node group)
#     rtt       20 more echoes once resolved, straight host to host on
#               the fabric's direct paths (its "direct: pkts" grows by 40)
#     mtu       ping -s 2016 -M do: packets of the 2044-byte MTU both ways
#     iperf3    TCP and UDP a -> b over ib0, bytes received > 0, no loss
#               beyond 10 % for UDP at 20 Mbit/s (the server's own count);
#               a's port sent TCP's IB packets at >= 4 a UDP send (GSO
#               runs: ib_counters xmit_pkts / xmit_sends)
#     http      a 64 MiB file served by python3's http.server in b,
#               fetched by curl in a over ib0, SHA-256 equal
#     bad       progs/ipoib_inject from b sends malformed IPoIB frames to
#               a's QP: each dropped and counted under its reason
#               (reserved bits, unknown type, short IP, ARP with wrong
#               hardware type / length, ND with a bad option, oversize)
#     sm        OpenSM killed and started again: a new address of b is
#               resolved (ARP on the broadcast group) and pinged
#     down      `softofed ipoib down` in b removes ib0; a's pings go
#               unanswered and a forgets b's neighbour entry (solicited
#               again after 5 s unconfirmed: SOFTOFED_IPOIB_NEIGH_SECS=5)
#   SOF_IPOIB_TOPO=line3: hosts a, b, c across three switches, OpenSM's
#   broadcast group with a 4096 IB MTU (partitions.conf mtu=5): ib0's MTU
#   4092, the up, ping, ping6, rtt, mtu, http (16 MiB from c) and down
#   steps above, and
#     ping      a -> c and c -> b over ib0, IPv4 and IPv6
#     mcast     an IP multicast group joined by b and c (socat receivers),
#               a sends to it over ib0: both receive the datagrams; the
#               group's MGID is in their status as attached
#
# SOF_SM=softofed (tests/hosts/ipoib_sm.sh, ipoib_sm_pair.sh): the same
# steps with softofed's own SM (`softofed sm`, sm/) instead of OpenSM: its
# SA's broadcast group and its multicast trees (sm/mcast.c) carry ARP,
# neighbour discovery and the IP multicast; on line3 its --partitions file
# has the same Default line (mtu=5: the group's IB MTU 4096, ib0's 4092),
# on pair its default group (2048, 2044).
#
# Needs root (ip netns). Usage: [SOF_SM=softofed] [SOF_IPOIB_TOPO=line3]
# tests/hosts/ipoib.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_init
# shellcheck source=tests/ib_fabric.sh
. "$SOF_ROOT/tests/ib_fabric.sh"

T=${SOF_IPOIB_TOPO:-pair}
TOPO=${SOF_TOPOLOGIES:-$SOF_ROOT/tests/topologies}/$T.net
FABRIC=$(dirname "$SOFTOFED")/softofed-fabric
[ -x "$FABRIC" ] || FABRIC=$SOF_ROOT/build/bin/softofed-fabric
[ -x "$(dirname "$SOFTOFED")/softofed-ipoib" ] || export SOFTOFED_IPOIB=$SOF_ROOT/build/bin/softofed-ipoib
INJECT=$SOF_BUILD_DIR/tests/ipoib_inject
[ -x "$INJECT" ] || INJECT=$SOF_ROOT/build/tests/ipoib_inject
PORT=7471
case ${SOF_SM:-opensm} in
opensm) SMNAME=OpenSM ;;
softofed) SMNAME=softofed-sm PORT=7476 ;;
*)
	not_ok "ipoib: SOF_SM" "opensm or softofed, not '$SOF_SM'"
	exit 1
	;;
esac
# sm_start NAME SECS: the SM in a as background job NAME; smlog its log
sm_start() {
	if [ "$SMNAME" = OpenSM ]; then
		smlog=$SOF_TMP/ipoib.opensm.log
		: >"$smlog"
		sof_host_bg "$1" a "$2" "$SOFTOFED" run -- opensm -g "$guid" -f "$smlog" -d 0 -s 2 -D 0x87 ${PFILE:+-P "$PFILE"}
	else
		smlog=$(sof_out "$1")
		sof_host_bg "$1" a "$2" "$SOFTOFED" sm -v ${PFILE:+--partitions "$PFILE"}
	fi
}
case $T in
pair) NH=2 REAL=H1,H2 HOSTS="a b" ;;
line3) NH=3 REAL=H1,H2,H3 HOSTS="a b c" ;;
*)
	not_ok "ipoib: topology" "unknown SOF_IPOIB_TOPO $T"
	exit 1
	;;
esac
SOF_HOST_UP_ARGS[a]="--ib-fabric $(sof_host_ip a):$PORT --ib-node H1"
SOF_HOST_UP_ARGS[b]="--ib-fabric $(sof_host_ip a):$PORT --ib-node H2"
SOF_HOST_UP_ARGS[c]="--ib-fabric $(sof_host_ip a):$PORT --ib-node H3"
sof_hosts_up "$NH" || sof_exit

ibline() { sof_host_run "$1" "$SOFTOFED" status 2>/dev/null </dev/null | grep '^device sofib0'; }
# all_in STATE: every host's sofib0 port in STATE
all_in() {
	local h
	for h in $HOSTS; do ibline "$h" | grep -q "port 1 $1" || return 1; done
}

sof_host_bg ipoib.fabric a 580 "$FABRIC" "$TOPO" --listen "$(sof_host_ip a):$PORT" --real "$REAL"
for _ in $(seq 100); do
	all_in INIT && break
	sleep 0.1
done
guid=$(sof_host_run a "$SOFTOFED" run -- ibstat -p sofib0 2>/dev/null </dev/null | head -n 1)
# line3: the default partition's IPoIB broadcast group with a 4096 IB MTU
# (partitions.conf's mtu=5, OpenSM's -P and our SM's --partitions): ib0's
# MTU is 4092; pair: the SA's default group, 2048 and 2044
IBMTU=2044
PFILE=
if [ "$T" = line3 ]; then
	IBMTU=4092
	PFILE=$SOF_TMP/partitions.conf
	echo 'Default=0x7fff, ipoib, mtu=5 : ALL=full;' >"$PFILE"
fi
sm_start ipoib.sm 560
for _ in $(seq 600); do
	grep -q 'SUBNET UP' "$smlog" 2>/dev/null && all_in ACTIVE && break
	sleep 0.1
done
if ! grep -q 'SUBNET UP' "$smlog" 2>/dev/null || ! all_in ACTIVE; then
	not_ok "ipoib/$T: subnet" "$SMNAME did not bring the subnet up in 60 s"
	tail -n 30 "$smlog" 2>/dev/null | sed 's/^/#   sm: /'
	sof_exit
fi

if [ -n "${SOF_IPOIB_DEBUG:-}" ]; then
	for h in a b; do
		t0=$(now_ms)
		sof_host_run $h "$SOFTOFED" run -- timeout 20 saquery -C sofib0 PR >/dev/null 2>&1 </dev/null
		echo "# saquery PR from $h: $(($(now_ms) - t0)) ms"
		t0=$(now_ms)
		sof_host_run $h "$SOFTOFED" run -- timeout 20 saquery -C sofib0 PR >/dev/null 2>&1 </dev/null
		echo "# saquery PR from $h again: $(($(now_ms) - t0)) ms"
	done
fi

# ---- up ---------------------------------------------------------------------------
upok=1
for h in $HOSTS; do
	out=$SOF_TMP/ipoib.up.$h
	# neighbours unconfirmed for 5 s are solicited again (default 60 s)
	if ! sof_host_run "$h" env SOFTOFED_IPOIB_NEIGH_SECS=5 "$SOFTOFED" ipoib up >"$out" 2>&1 </dev/null; then
		upok=0
		sof_dump "$out"
		sof_host_run "$h" sh -c 'cat /tmp/softofed-ipoib-*-ib0-*.log' 2>/dev/null | tail -n 20 | sed "s/^/#   $h log: /"
		continue
	fi
	sof_host_run "$h" ip addr add "$(sof_ipoib_ip "$h")/24" dev ib0
	sof_host_run "$h" ip addr add "$(sof_ipoib_ip6 "$h")/64" dev ib0 nodad
done
st=$SOF_TMP/ipoib.st.a
sof_ipoib_st a >"$st"
mtu=$(sof_host_run a cat /sys/class/net/ib0/mtu 2>/dev/null)
if [ "$upok" = 1 ] && [ "$mtu" = "$IBMTU" ] && grep -q "^ipoib ib0 device sofib0 port 1 pkey 0xffff mode datagram mtu $IBMTU" "$st" &&
	grep -q '^mcast ff12:401b:ffff::ffff:ffff mlid 0xc[0-9a-f]* state joined attached broadcast' "$st" &&
	grep -q '^qpn 0x[0-9a-f]* lid [1-9]' "$st"; then
	ok "ipoib/$T: up: ib0 in every host, MTU $mtu, broadcast group joined through $SMNAME's SA ($(grep broadcast "$st" | cut -d' ' -f2-4))"
else
	not_ok "ipoib/$T: up" "mtu '$mtu'; $(tr '\n' ' ' <"$st" | cut -c1-600)"
	sof_exit
fi

# ---- ping, ping -6 ------------------------------------------------------------------
# pingto H ADDR [-6]: 5 echoes answered
pingto() {
	local out=$SOF_TMP/ipoib.ping.$1.$2
	sof_host_run "$1" ping ${3:-} -n -c 5 -i 0.2 -W 2 "$2" >"$out" 2>&1 </dev/null
	grep -q ' 5 received' "$out"
}
FAR=b
[ "$T" = line3 ] && FAR=c
if pingto a "$(sof_ipoib_ip $FAR)"; then
	ok "ipoib/$T: ping a -> $FAR over ib0 ($(grep -o 'rtt.*' "$SOF_TMP/ipoib.ping.a.$(sof_ipoib_ip $FAR)"))"
else
	not_ok "ipoib/$T: ping" "$(tail -n 3 "$SOF_TMP/ipoib.ping.a.$(sof_ipoib_ip $FAR)" | tr '\n' ' ')"
	sof_ipoib_st a | sed 's/^/#   a: /'
	sof_ipoib_st $FAR | sed "s/^/#   $FAR: /"
fi
aqpn=$(sed -n 's/^qpn \(0x[0-9a-f]*\) lid \([0-9]*\).*/\1/p' "$st")
alid=$(sed -n 's/^qpn \(0x[0-9a-f]*\) lid \([0-9]*\).*/\2/p' "$st")
if sof_ipoib_st $FAR | grep -q "^neigh $(sof_ipoib_ip a) qpn $aqpn gid .* lid $alid sl [0-9]* state ready"; then
	ok "ipoib/$T: $FAR's neighbour a: QPN $aqpn, LID $alid from the path record, ready"
else
	not_ok "ipoib/$T: neighbour" "$(sof_ipoib_st $FAR | grep '^neigh' | tr '\n' ' ')"
fi
sline=$(sof_host_run a "$SOFTOFED" status 2>&1 </dev/null | grep '^ipoib ib0 ')
if echo "$sline" | grep -q "^ipoib ib0 device sofib0 port 1 pkey 0xffff mode datagram mtu $IBMTU state up neighbours [1-9][0-9]* groups [1-9][0-9]* rx_packets [1-9][0-9]* tx_packets [1-9]"; then
	ok "ipoib/$T: softofed status in a shows ib0: $sline"
else
	not_ok "ipoib/$T: softofed status" "'$sline'"
fi
if pingto a "$(sof_ipoib_ip6 $FAR)" -6; then
	ok "ipoib/$T: ping -6 a -> $FAR over ib0 (neighbour discovery on the IB side)"
else
	not_ok "ipoib/$T: ping -6" "$(tail -n 3 "$SOF_TMP/ipoib.ping.a.$(sof_ipoib_ip6 $FAR)" | tr '\n' ' ')"
	sof_ipoib_st a | sed 's/^/#   a: /'
fi

if [ -n "${SOF_IPOIB_DEBUG:-}" ]; then
	for h in $HOSTS; do
		sof_host_run $h sh -c 'cat /tmp/softofed-ipoib-*-ib0-$(stat -L -c %i /proc/self/ns/net).log' | sed "s/^/# $h log: /"
		sof_host_run $h sh -c 'cat /tmp/softofed-$(id -u)-$(stat -L -c %i /proc/self/ns/net).log' | tail -n 30 | sed "s/^/# $h daemon: /"
	done
fi
# the latency once resolved: 20 echoes, a second run; the datagrams are
# unicast UD: on the fabric's direct paths (its default) they go host to
# host, counted in the fabric's "direct: pkts" (40 at least: each echo
# and its reply)
dpk() { sof_host_run a "$SOFTOFED" fabric status 2>/dev/null </dev/null | sed -n 's/^direct: pkts \([0-9]*\).*/\1/p'; }
pingto a "$(sof_ipoib_ip $FAR)"
dp0=$(dpk)
if sof_host_run a ping -n -q -c 20 -i 0.05 -W 2 "$(sof_ipoib_ip $FAR)" >"$SOF_TMP/ipoib.rtt" 2>&1 </dev/null &&
	grep -q ' 20 received' "$SOF_TMP/ipoib.rtt" && sleep 0.3 && dp1=$(dpk) &&
	{ [ "${SOF_IBF_DIRECT:-1}" = 0 ] || [ "${dp1:-0}" -ge $((${dp0:-0} + 40)) ]; }; then
	ok "ipoib/$T: 20 echoes a -> $FAR resolved: $(grep -o 'rtt.*' "$SOF_TMP/ipoib.rtt"); $((${dp1:-0} - ${dp0:-0})) UD packets straight host to host (fabric's direct pkts)"
else
	not_ok "ipoib/$T: ping resolved" "direct pkts '$dp0' -> '${dp1:-}': $(tail -n 2 "$SOF_TMP/ipoib.rtt" | tr '\n' ' ')"
fi

# a packet of the MTU with DF set, both ways
out=$SOF_TMP/ipoib.ping.mtu
if sof_host_run a ping -n -c 3 -i 0.2 -W 2 -s $((IBMTU - 28)) -M do "$(sof_ipoib_ip $FAR)" >"$out" 2>&1 </dev/null &&
	grep -q ' 3 received' "$out" && grep -q "^$((IBMTU - 20)) bytes from" "$out"; then
	ok "ipoib/$T: ping -s $((IBMTU - 28)) -M do: $IBMTU-byte packets (the MTU) both ways"
else
	not_ok "ipoib/$T: MTU-sized ping" "$(tail -n 2 "$out" | tr '\n' ' ')"
fi

# ---- HTTP: a file from FAR to a, SHA-256 compared (64 MiB on pair; 16 MiB
# across line3's three switches, in 4096 IB MTU datagrams with OpenSM and ours)
MIB=64
[ "$T" = line3 ] && MIB=16
www=$SOF_TMP/www
mkdir -p "$www"
head -c $((MIB << 20)) /dev/urandom >"$www/big.bin"
want=$(sha256sum <"$www/big.bin" | cut -d' ' -f1)
sof_host_bg ipoib.http $FAR 120 python3 -m http.server 8080 --bind "$(sof_ipoib_ip $FAR)" --directory "$www"
sof_host_wait_listen $FAR 8080 10 ipoib.http >/dev/null 2>&1
got=$(sof_host_run a timeout 100 curl -sf --max-time 90 "http://$(sof_ipoib_ip $FAR):8080/big.bin" </dev/null | sha256sum | cut -d' ' -f1)
if [ "$got" = "$want" ]; then
	ok "ipoib/$T: curl of a $MIB MiB file from python3 http.server in $FAR over ib0 (MTU $IBMTU), SHA-256 equal"
else
	not_ok "ipoib/$T: http" "SHA-256 $got, want $want"
fi
sof_kill ipoib.http
rm -rf "$www"

if [ "$T" = pair ]; then
	# ---- iperf3 TCP and UDP ---------------------------------------------------------
	sof_host_bg ipoib.iperf.srv b 90 iperf3 -s -p 5201 -B "$(sof_ipoib_ip b)"
	sof_host_wait_listen b 5201 10 ipoib.iperf.srv >/dev/null 2>&1
	out=$SOF_TMP/ipoib.iperf.tcp
	# a's port: IB packets and the UDP datagrams (system calls) they left in
	ibcnt() { sof_host_run a "$SOFTOFED" status 2>/dev/null </dev/null | grep '^ib_counters:' | tr ' ' '\n' | grep -A1 -x "$1" | tail -n 1; }
	p0=$(ibcnt xmit_pkts) s0=$(ibcnt xmit_sends)
	sof_host_run a timeout 30 iperf3 -c "$(sof_ipoib_ip b)" -p 5201 -t 3 -J >"$out" 2>&1 </dev/null
	p1=$(ibcnt xmit_pkts) s1=$(ibcnt xmit_sends)
	bps=$(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(int(j["end"]["sum_received"]["bits_per_second"]))' "$out" 2>/dev/null)
	if [ -n "$bps" ] && [ "$bps" -gt 0 ]; then
		ok "ipoib/$T: iperf3 TCP a -> b over ib0: $((bps / 1000000)) Mbit/s received"
	else
		not_ok "ipoib/$T: iperf3 TCP" "$(head -c 400 "$out" | tr '\n' ' ')"
	fi
	# a TSO packet cut into datagrams is one list of UD sends (ipoib/ud.c):
	# its IB packets leave together, UDP GSO runs, not a system call each
	dp=$((${p1:-0} - ${p0:-0})) ds=$((${s1:-0} - ${s0:-0}))
	if [ "$ds" -gt 0 ] && [ "$dp" -ge $((4 * ds)) ]; then
		ok "ipoib/$T: a's port sent iperf3's $dp IB packets in $ds UDP sends ($((dp / ds)) a send)"
	else
		not_ok "ipoib/$T: IB packets per send" "$dp packets in $ds sends (want >= 4 a send)"
	fi
	out=$SOF_TMP/ipoib.iperf.udp
	# -w 2M: the server's socket holds a burst (a client the load held
	# back catches up at once, and ib0 delivers its datagrams as fast:
	# with 208 KiB a receiver without a CPU for a moment drops them,
	# RcvbufErrors, not ib0's loss)
	sof_host_run a timeout 30 iperf3 -c "$(sof_ipoib_ip b)" -p 5201 -u -b 20M -l 1400 -w 2M -t 3 -J --get-server-output >"$out" 2>&1 </dev/null
	# what the server received (its own report), not the client's view
	udp=$(python3 -c '
import json, re, sys
t = json.load(open(sys.argv[1]))["server_output_text"]
m = re.findall(r"(\d+)/(\d+) \([0-9.e+-]+%\)\s+receiver", t)
print(m[-1][1], m[-1][0])' "$out" 2>/dev/null)
	# shellcheck disable=SC2086 # two numbers
	set -- $udp
	if [ $# = 2 ] && [ "$1" -gt 0 ] && [ $(($2 * 10)) -le "$1" ]; then
		ok "ipoib/$T: iperf3 UDP a -> b over ib0 at 20 Mbit/s: $1 datagrams, $2 lost (at most 10 %)"
	else
		not_ok "ipoib/$T: iperf3 UDP" "'$udp' $(head -c 400 "$out" | tr '\n' ' ')"
		sof_host_run b grep '^Udp:' /proc/net/snmp | sed 's/^/#   b: /'
		sof_ipoib_st a | grep counters | sed 's/^/#   a: /'
		sof_ipoib_st b | grep counters | sed 's/^/#   b: /'
		sof_host_run b "$SOFTOFED" status | grep 'drops\|counters' | sed 's/^/#   b: /'
		sof_host_run a "$SOFTOFED" status | grep 'drops\|counters' | sed 's/^/#   a: /'
		sof_host_run a "$SOFTOFED" fabric status | sed 's/^/#   fabric: /'
		cp "$out" /tmp/i21-udp.json
	fi
	sof_kill ipoib.iperf.srv

	# ---- malformed frames from b to a's QP ------------------------------------------
	sa0=$SOF_TMP/ipoib.bad0
	sof_ipoib_st a >"$sa0"
	out=$SOF_TMP/ipoib.inject
	sof_host_run b "$SOFTOFED" run -- "$INJECT" "$alid" "$aqpn" >"$out" 2>&1 </dev/null
	sleep 0.5
	sa1=$SOF_TMP/ipoib.bad1
	sof_ipoib_st a >"$sa1"
	cnt() { tr ' ' '\n' <"$1" | grep -A1 -x "$2" | tail -n 1; }
	bad=""
	for k in $(grep -o '^drop_[a-z]*' "$out" | sort | uniq -c | awk '{print $2 "=" $1}'); do
		name=${k%=*} n=${k#*=}
		d=$(($(cnt "$sa1" "$name") - $(cnt "$sa0" "$name")))
		[ "$d" = "$n" ] || bad="$bad $name:$d/$n"
	done
	if grep -q '^sent 12$' "$out" && [ -z "$bad" ] && [ "$(cnt "$sa1" rx_packets)" = "$(cnt "$sa0" rx_packets)" ]; then
		ok "ipoib/$T: 12 malformed frames from b to a's QP dropped, each counted under its reason ($(grep -o '^drop_[a-z]*' "$out" | sort -u | tr '\n' ' '))"
	else
		not_ok "ipoib/$T: malformed frames" "counts off:$bad; $(tr '\n' ' ' <"$out" | cut -c1-300)"
	fi
	if pingto a "$(sof_ipoib_ip b)"; then
		ok "ipoib/$T: ib0 still carries ping after the malformed frames"
	else
		not_ok "ipoib/$T: ping after bad frames" "no answer"
	fi
fi

if [ "$T" = line3 ]; then
	# ---- ping between the other hosts -------------------------------------------------
	if pingto c "$(sof_ipoib_ip b)" && pingto c "$(sof_ipoib_ip6 b)" -6; then
		ok "ipoib/$T: ping and ping -6 c -> b over ib0"
	else
		not_ok "ipoib/$T: ping c -> b" "$(tail -n 2 "$SOF_TMP/ipoib.ping.c.$(sof_ipoib_ip b)" | tr '\n' ' ')"
	fi

	# ---- IP multicast: a sends to 239.77.1.1, b and c receive ------------------------
	GROUP=239.77.1.1
	for h in b c; do
		sof_host_bg "ipoib.mrecv.$h" $h 40 python3 -c '
import socket, struct, sys
grp, ifa = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("", 5007))
s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, socket.inet_aton(grp) + socket.inet_aton(ifa))
s.settimeout(15)
got = set()
print("joined", flush=True)
try:
    while len(got) < 100:
        d, src = s.recvfrom(2048)
        n, = struct.unpack("!I", d[:4])
        if d[4:] == bytes([n & 255]) * 996:
            got.add(n)
except socket.timeout:
    pass
print("received %d from %s" % (len(got), src[0] if got else "-"), flush=True)
' "$GROUP" "$(sof_ipoib_ip $h)"
	done
	# the receivers' kernels hold the group; their ipoib joins it (it
	# reads the kernel's groups every second)
	mg=ff12:401b:ffff::f4d:101 # RFC 4391: the group's low 28 bits
	# shellcheck disable=SC2317 # called through sof_wait_for
	joined() { sof_ipoib_st "$1" | grep -q "^mcast $mg mlid 0xc[0-9a-f]* state joined attached"; }
	sof_wait_for 15 joined b && sof_wait_for 15 joined c
	stc=$SOF_TMP/ipoib.st.c
	sof_ipoib_st c >"$stc"
	sof_host_run a timeout 20 python3 -c '
import socket, struct, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(sys.argv[2]))
s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
for n in range(100):
    s.sendto(struct.pack("!I", n) + bytes([n & 255]) * 996, (sys.argv[1], 5007))
    time.sleep(0.02)
' "$GROUP" "$(sof_ipoib_ip a)" </dev/null >/dev/null 2>&1
	rb= rc=
	sof_wait ipoib.mrecv.b 30 && rb=$(sed -n 's/^received \([0-9]*\) .*/\1/p' "$(sof_out ipoib.mrecv.b)")
	sof_wait ipoib.mrecv.c 30 && rc=$(sed -n 's/^received \([0-9]*\) .*/\1/p' "$(sof_out ipoib.mrecv.c)")
	if [ "${rb:-0}" -ge 90 ] && [ "${rc:-0}" -ge 90 ] && grep -q "^mcast $mg mlid 0xc[0-9a-f]* state joined attached" "$stc"; then
		ok "ipoib/$T: IP multicast $GROUP from a to b and c over ib0 (MGID $mg joined and attached): b got $rb, c got $rc of 100, bytes checked"
	else
		not_ok "ipoib/$T: IP multicast" "b got '$rb', c got '$rc'; c: $(grep '^mcast' "$stc" | tr '\n' ' ')"
		sof_ipoib_st a | sed 's/^/#   a: /'
	fi
	# the receivers left: so does c's ipoib, through the SA
	# shellcheck disable=SC2317 # called through sof_wait_for
	left() { ! sof_ipoib_st c | grep -q "^mcast $mg " && [ "$(sof_ipoib_cnt c mcast_leaves)" -ge 1 ]; }
	if sof_wait_for 10 left; then
		ok "ipoib/$T: c's kernel left $GROUP: c's ipoib left $mg (mcast_leaves $(sof_ipoib_cnt c mcast_leaves))"
	else
		not_ok "ipoib/$T: multicast leave" "$(sof_ipoib_st c | grep '^mcast' | tr '\n' ' ')"
	fi
fi

if [ "$T" = pair ]; then
	# ---- the SM restarts: its SA forgets the groups; ib0 joins again -------------
	j0a=$(sof_ipoib_cnt a mcast_joins) j0b=$(sof_ipoib_cnt b mcast_joins)
	sof_kill ipoib.sm
	sm_start ipoib.sm2 300
	for _ in $(seq 600); do
		grep -q 'SUBNET UP' "$smlog" 2>/dev/null && break
		sleep 0.1
	done
	# a new address of b: reaching it takes an ARP request on the broadcast group
	sof_host_run b ip addr add 192.168.77.12/24 dev ib0
	# until a's and b's ipoib joined their groups again (joins sent since
	# the restart, every group joined), at most 12 s
	# shellcheck disable=SC2317 # called through sof_wait_for
	rejoined() {
		[ "$(sof_ipoib_cnt a mcast_joins)" -gt "${j0a:-0}" ] &&
			[ "$(sof_ipoib_cnt b mcast_joins)" -gt "${j0b:-0}" ] &&
			! sof_ipoib_st a | grep '^mcast ' | grep -v -q ' state joined' &&
			! sof_ipoib_st b | grep '^mcast ' | grep -v -q ' state joined'
	}
	sof_wait_for 12 rejoined
	if grep -q 'SUBNET UP' "$smlog" && pingto a 192.168.77.12; then
		ok "ipoib/$T: $SMNAME restarted: ib0 still resolves (ARP on the broadcast group) and carries ping to b's new address"
	else
		not_ok "ipoib/$T: SM restart" "$(tail -n 2 "$SOF_TMP/ipoib.ping.a.192.168.77.12" | tr '\n' ' ')"
		# which echoes were lost, and either side's drops (the watch item
		# of an echo lost once under load)
		echo "#   answered: $(grep -o 'icmp_seq=[0-9]*' "$SOF_TMP/ipoib.ping.a.192.168.77.12" | tr '\n' ' ')"
		sof_ipoib_logs 10 a b
	fi
fi

# ---- down: the peer goes away -------------------------------------------------------
pingto a "$(sof_ipoib_ip $FAR)" >/dev/null
sof_host_run $FAR "$SOFTOFED" ipoib down >"$SOF_TMP/ipoib.down" 2>&1 </dev/null
if ! sof_host_run $FAR ip link show ib0 >/dev/null 2>&1 && grep -q 'ib0 down' "$SOF_TMP/ipoib.down" &&
	! pingto a "$(sof_ipoib_ip $FAR)"; then
	ok "ipoib/$T: softofed ipoib down in $FAR: ib0 gone, a's pings go unanswered"
else
	not_ok "ipoib/$T: down" "$(tr '\n' ' ' <"$SOF_TMP/ipoib.down")"
fi
# a's entry for it: solicited again after 5 s unconfirmed, then forgotten
gone=0
for _ in $(seq 30); do
	sof_ipoib_st a | grep -q "^neigh $(sof_ipoib_ip $FAR) " || { gone=1; break; }
	sleep 0.5
done
if [ "$gone" = 1 ] && sof_ipoib_st a | grep -q '^ipoib ib0 '; then
	ok "ipoib/$T: a forgot $FAR's neighbour entry once unanswered; a's ib0 still up"
else
	not_ok "ipoib/$T: neighbour expiry" "$(sof_ipoib_st a | grep '^neigh' | tr '\n' ' ')"
fi

for h in $HOSTS; do
	sof_host_run "$h" "$SOFTOFED" ipoib down >/dev/null 2>&1 </dev/null
done
sof_kill ipoib.sm
sof_kill ipoib.sm2
sof_kill ipoib.fabric
sof_exit
