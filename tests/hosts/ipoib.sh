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
#     ping6     ping -6 (neighbour discovery on the solicited-node group)
#     iperf3    TCP and UDP a -> b over ib0, bytes received > 0, no loss
#               beyond 5 % for UDP at 50 Mbit/s
#     http      a 64 MiB file served by python3's http.server in b,
#               fetched by curl in a over ib0, SHA-256 equal
#     bad       progs/ipoib_inject from b sends malformed IPoIB frames to
#               a's QP: each dropped and counted under its reason
#               (reserved bits, unknown type, short IP, ARP with wrong
#               hardware type / length, ND with a bad option, oversize)
#     down      `softofed ipoib down` removes ib0 and leaves the groups
#   SOF_IPOIB_TOPO=line3: hosts a, b, c across three switches
#     ping      a -> c and c -> b over ib0, IPv4 and IPv6
#     mcast     an IP multicast group joined by b and c (socat receivers),
#               a sends to it over ib0: both receive the datagrams; the
#               group's MGID is in their status as attached
#
# Needs root (ip netns). Usage: [SOF_IPOIB_TOPO=line3] tests/hosts/ipoib.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_init

T=${SOF_IPOIB_TOPO:-pair}
TOPO=${SOF_TOPOLOGIES:-$SOF_ROOT/tests/topologies}/$T.net
FABRIC=$(dirname "$SOFTOFED")/softofed-fabric
[ -x "$FABRIC" ] || FABRIC=$SOF_ROOT/build/bin/softofed-fabric
[ -x "$(dirname "$SOFTOFED")/softofed-ipoib" ] || export SOFTOFED_IPOIB=$SOF_ROOT/build/bin/softofed-ipoib
INJECT=$SOF_BUILD_DIR/tests/ipoib_inject
[ -x "$INJECT" ] || INJECT=$SOF_ROOT/build/tests/ipoib_inject
PORT=7471
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

ibip() { echo "192.168.77.$(_sof_host_num "$1")"; }
ibip6() { echo "fd77:1b::$(_sof_host_num "$1")"; }
ipst() { sof_host_run "$1" "$SOFTOFED" ipoib status 2>&1 </dev/null; }
# ipcnt H NAME: a counter of H's ib0
ipcnt() { ipst "$1" | tr ' ' '\n' | grep -A1 -x "$2" | tail -n 1; }
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
smlog=$SOF_TMP/ipoib.opensm.log
sof_host_bg ipoib.sm a 560 "$SOFTOFED" run -- opensm -g "$guid" -f "$smlog" -d 0 -s 2 -D 0x87
for _ in $(seq 600); do
	grep -q 'SUBNET UP' "$smlog" 2>/dev/null && all_in ACTIVE && break
	sleep 0.1
done
if ! grep -q 'SUBNET UP' "$smlog" 2>/dev/null || ! all_in ACTIVE; then
	not_ok "ipoib/$T: subnet" "OpenSM did not bring the subnet up in 60 s"
	tail -n 30 "$smlog" 2>/dev/null | sed 's/^/#   sm: /'
	sof_exit
fi

# ---- up ---------------------------------------------------------------------------
upok=1
for h in $HOSTS; do
	out=$SOF_TMP/ipoib.up.$h
	if ! sof_host_run "$h" "$SOFTOFED" ipoib up >"$out" 2>&1 </dev/null; then
		upok=0
		sof_dump "$out"
		sof_host_run "$h" sh -c 'cat /tmp/softofed-ipoib-*-ib0-*.log' 2>/dev/null | tail -n 20 | sed "s/^/#   $h log: /"
		continue
	fi
	sof_host_run "$h" ip addr add "$(ibip "$h")/24" dev ib0
	sof_host_run "$h" ip addr add "$(ibip6 "$h")/64" dev ib0 nodad
done
st=$SOF_TMP/ipoib.st.a
ipst a >"$st"
mtu=$(sof_host_run a cat /sys/class/net/ib0/mtu 2>/dev/null)
if [ "$upok" = 1 ] && [ "$mtu" = 2044 ] && grep -q '^ipoib ib0 device sofib0 port 1 pkey 0xffff mode datagram mtu 2044' "$st" &&
	grep -q '^mcast ff12:401b:ffff::ffff:ffff mlid 0xc[0-9a-f]* state joined attached broadcast' "$st" &&
	grep -q '^qpn 0x[0-9a-f]* lid [1-9]' "$st"; then
	ok "ipoib/$T: up: ib0 in every host, MTU $mtu, broadcast group joined through OpenSM's SA ($(grep broadcast "$st" | cut -d' ' -f2-4))"
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
if pingto a "$(ibip $FAR)"; then
	ok "ipoib/$T: ping a -> $FAR over ib0 ($(grep -o 'rtt.*' "$SOF_TMP/ipoib.ping.a.$(ibip $FAR)"))"
else
	not_ok "ipoib/$T: ping" "$(tail -n 3 "$SOF_TMP/ipoib.ping.a.$(ibip $FAR)" | tr '\n' ' ')"
	ipst a | sed 's/^/#   a: /'
	ipst $FAR | sed "s/^/#   $FAR: /"
fi
aqpn=$(sed -n 's/^qpn \(0x[0-9a-f]*\) lid \([0-9]*\).*/\1/p' "$st")
alid=$(sed -n 's/^qpn \(0x[0-9a-f]*\) lid \([0-9]*\).*/\2/p' "$st")
if ipst $FAR | grep -q "^neigh $(ibip a) qpn $aqpn gid .* lid $alid sl [0-9]* state ready"; then
	ok "ipoib/$T: $FAR's neighbour a: QPN $aqpn, LID $alid from the path record, ready"
else
	not_ok "ipoib/$T: neighbour" "$(ipst $FAR | grep '^neigh' | tr '\n' ' ')"
fi
if pingto a "$(ibip6 $FAR)" -6; then
	ok "ipoib/$T: ping -6 a -> $FAR over ib0 (neighbour discovery on the IB side)"
else
	not_ok "ipoib/$T: ping -6" "$(tail -n 3 "$SOF_TMP/ipoib.ping.a.$(ibip6 $FAR)" | tr '\n' ' ')"
	ipst a | sed 's/^/#   a: /'
fi

sof_kill ipoib.sm
sof_kill ipoib.fabric
sof_exit
