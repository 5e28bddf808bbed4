#!/usr/bin/env bash
# The IB CM over the InfiniBand port (issue 21 item 2, issue 20 item 8):
# two namespace hosts on softofed's fabric (pair) with OpenSM as SM and SA.
#   ibconn  tests/progs/cm_ibconn: an RC connection through the RDMA CM by
#           AF_IB address (the server's sofib0 GID): the route from OpenSM's
#           SA (PathRecord: DLID = the server's LID), REQ/REP/RTU by LID on
#           QP1 of sofib0, 4 KiB each way checked byte for byte, disconnect
#   ipoib   softofed ipoib up in both hosts (ib0 192.168.78.N/24); the RDMA
#           CM by IP address over ib0: the peer's GID from ipoib's neighbour
#           (ARP on the IB side), the route from the SA, the IB CM by LID:
#           rping -C 10 -V and -S 4096 -C 200 (data checked both sides),
#           ucmatose -c 10, udaddy -c 4 -C 50 -S 1000 (UD: SIDR by LID,
#           address vectors by DLID without GRH; b's sofib0 sent the
#           messages), ib_send_bw -R -d sofib0; rping over IPv6; an
#           address where no host answers fails in resolution, no hang
#   mckey   mckey -m 239.1.2.3 by ib0 address: the join is an SA
#           MCMemberRecord Set of the IB group ff12:4001:ffff::f01:203 (the
#           kernel's MGID for RDMA_PS_UDP), its AV by MLID; b receives a's
#           10 messages through the fabric's multicast forwarding (b's
#           receiver ends only after all 10), a's sofib0 sent them; OpenSM
#           lists the group while b is a member and not after both left
#           (rdma_leave_multicast: SA Delete)
set -u
. "$(dirname "$0")/../lib.sh"
sof_init

TOPO=${SOF_TOPOLOGIES:-$SOF_ROOT/tests/topologies}/pair.net
FABRIC=$(dirname "$SOFTOFED")/softofed-fabric
[ -x "$FABRIC" ] || FABRIC=$SOF_ROOT/build/bin/softofed-fabric
CONN=$SOF_BUILD_DIR/tests/cm_ibconn
[ -x "$CONN" ] || CONN=$SOF_ROOT/build/tests/cm_ibconn
[ -x "$(dirname "$SOFTOFED")/softofed-ipoib" ] || export SOFTOFED_IPOIB=$SOF_ROOT/build/bin/softofed-ipoib
PORT=7471
SOF_HOST_UP_ARGS[a]="--ib-fabric $(sof_host_ip a):$PORT --ib-node H1"
SOF_HOST_UP_ARGS[b]="--ib-fabric $(sof_host_ip a):$PORT --ib-node H2"
sof_hosts_up 2 || sof_exit

ibline() { sof_host_run "$1" "$SOFTOFED" status 2>/dev/null </dev/null | grep '^device sofib0'; }
iblid() { ibline "$1" | sed -n 's/.* lid \([0-9]*\) .*/\1/p'; }
all_in() {
	local h
	for h in a b; do ibline "$h" | grep -q "port 1 $1" || return 1; done
}

sof_host_bg ibcm.fabric a 300 "$FABRIC" "$TOPO" --listen "$(sof_host_ip a):$PORT" --real H1,H2
for _ in $(seq 100); do
	all_in INIT && break
	sleep 0.1
done
guid=$(sof_host_run a "$SOFTOFED" run -- ibstat -p sofib0 2>/dev/null </dev/null | head -n 1)
smlog=$SOF_TMP/ibcm.opensm.log
sof_host_bg ibcm.sm a 280 "$SOFTOFED" run -- opensm -g "$guid" -f "$smlog" -d 0 -s 2 -D 0x87
for _ in $(seq 600); do
	grep -q 'SUBNET UP' "$smlog" 2>/dev/null && all_in ACTIVE && break
	sleep 0.1
done
if ! grep -q 'SUBNET UP' "$smlog" 2>/dev/null || ! all_in ACTIVE; then
	not_ok "ibcm: subnet" "OpenSM did not bring the subnet up in 60 s"
	tail -n 30 "$smlog" 2>/dev/null | sed 's/^/#   sm: /'
	sof_exit
fi

# --- an RC connection by AF_IB address, route from the SA -----------------------------
srv=$(sof_out ibcm.conn.srv)
cli=$(sof_out ibcm.conn.cli)
sof_host_bg ibcm.conn.srv b 40 "$SOFTOFED" run -- "$CONN" -s -p 7474 -z 4096
gid=
for _ in $(seq 100); do
	gid=$(sed -n 's/^gid //p' "$srv" 2>/dev/null)
	[ -n "$gid" ] && break
	sleep 0.1
done
sleep 0.5
sof_host_run a "$SOFTOFED" run -- timeout 30 "$CONN" -c "$gid" -p 7474 -z 4096 >"$cli" 2>&1 </dev/null
rc=$?
sof_wait ibcm.conn.srv 20
lb=$(iblid b)
if [ "$rc" -eq 0 ] && grep -qx ok "$cli" && grep -qx ok "$srv" &&
	grep -q "^path dlid $lb slid $(iblid a) " "$cli"; then
	ok "ibcm: RC through the RDMA CM by AF_IB address on sofib0, path from OpenSM's SA (DLID $lb), 4 KiB each way checked"
else
	not_ok "ibcm: ibconn" "client rc $rc, server GID '$gid'"
	sof_dump "$cli" "$srv"
fi

# --- the RDMA CM by IP address over ib0 ------------------------------------------------
ibip() { echo "192.168.78.$(_sof_host_num "$1")"; }
upok=1
for h in a b; do
	out=$SOF_TMP/ibcm.up.$h
	if ! sof_host_run "$h" "$SOFTOFED" ipoib up >"$out" 2>&1 </dev/null; then
		upok=0
		sof_dump "$out"
		continue
	fi
	sof_host_run "$h" ip addr add "$(ibip "$h")/24" dev ib0
	sof_host_run "$h" ip addr add "fd78:1b::$(_sof_host_num "$h")/64" dev ib0 nodad
done
if [ "$upok" != 1 ]; then
	not_ok "ibcm: ipoib up" "softofed ipoib up failed"
	sof_exit
fi
A=$(ibip a)
P=19900
sof_rping_pair "ibcm: rping -C 10 -V by IP over ib0 (IB CM on sofib0)" a b "$A" $((P + 1)) 64 10 ||
	SOF_GATE="the first rping over ib0 failed"
# the data went by the IB CM's QPs on sofib0, not as RoCE through ib0: b's
# sofib0 sent at least the pings' bytes (xmit_data, 4-byte words as
# PortXmitData) while b's ib0 (softofed-ipoib's tx_bytes) carried far less
ibcnt() {
	sof_host_run "$1" "$SOFTOFED" status 2>/dev/null </dev/null | grep '^ib_counters:' |
		tr ' ' '\n' | grep -A1 -x "$2" | tail -n 1
}
ipcnt() {
	sof_host_run "$1" "$SOFTOFED" ipoib status 2>/dev/null </dev/null | tr ' ' '\n' |
		grep -A1 -x "$2" | tail -n 1
}
x0=$(ibcnt b xmit_data) t0=$(ipcnt b tx_bytes)
if ! sof_gated "ibcm: rping -S 4096 -C 200" &&
	sof_rping_pair "ibcm: rping -S 4096 -C 200 by IP over ib0" a b "$A" $((P + 2)) 4096 200; then
	x1=$(ibcnt b xmit_data) t1=$(ipcnt b tx_bytes)
	if [ -n "$x0" ] && [ -n "$x1" ] && [ -n "$t0" ] && [ -n "$t1" ] &&
		[ $((x1 - x0)) -ge $((200 * 4096 / 4)) ] && [ $((t1 - t0)) -lt 100000 ]; then
		ok "ibcm: rping's data crossed sofib0 by the CM's QPs (xmit_data of b +$((x1 - x0)) words, ib0 +$((t1 - t0)) bytes)"
	else
		not_ok "ibcm: rping over sofib0" "xmit_data of b '$x0' -> '$x1', ib0 tx_bytes '$t0' -> '$t1'"
	fi
fi

# pair NAME SECS SERVER... -- CLIENT...: server in a, client in b
# (PAIR=sof_perftest_cm_pair for perftest -R)
pair() {
	local name=$1 secs=$2
	shift 2
	sof_gated "$name" && return 1
	if ! "${PAIR:-sof_cm_pair}" "$name" "$secs" a b "$@"; then
		not_ok "$name" "$SOF_PAIR_WHY"
		sof_pair_dump
		return 1
	fi
	return 0
}
pair "ibcm: ucmatose -c 10 over ib0" 60 ucmatose -b "$A" -p $((P + 3)) -c 10 -- \
	ucmatose -s "$A" -p $((P + 3)) -c 10 &&
	sof_cm_verdict "ibcm: ucmatose -c 10 over ib0" 'data transfers complete' 'return status 0'
# UD ids: SIDR_REQ/REP by LID, the address vectors by DLID and SL without
# GRH (udaddy has no port option: 7174); b's sofib0 sent at least the
# client's 4 x 50 messages of 1000 bytes (an AV by LID cannot go as RoCE)
x0=$(ibcnt b xmit_data)
pair "ibcm: udaddy -c 4 over ib0" 60 udaddy -b "$A" -c 4 -C 50 -S 1000 -- \
	udaddy -s "$A" -c 4 -C 50 -S 1000 &&
	sof_cm_verdict "ibcm: udaddy -c 4 over ib0" 'data transfers complete' 'return status 0' && {
	x1=$(ibcnt b xmit_data)
	if [ -n "$x0" ] && [ -n "$x1" ] && [ $((x1 - x0)) -ge $((4 * 50 * 1000 / 4)) ]; then
		ok "ibcm: udaddy's messages crossed sofib0 by LID (xmit_data of b +$((x1 - x0)) words)"
	else
		not_ok "ibcm: udaddy over sofib0" "xmit_data of b '$x0' -> '$x1'"
	fi
}
PAIR=sof_perftest_cm_pair pair "ibcm: ib_send_bw -R over ib0" 120 ib_send_bw -R -d sofib0 -F -p $((P + 5)) -- \
	ib_send_bw -R -d sofib0 -F -p $((P + 5)) "$A" &&
	sof_cm_perftest_verdict "ibcm: ib_send_bw -R over ib0"
# mckey by ib0 address: receiver in b, sender in a (the sender joins too)
mrx=$(sof_out ibcm.mckey.rx)
mtx=$(sof_out ibcm.mckey.tx)
MG=239.1.2.3
if ! sof_gated "ibcm: mckey over ib0"; then
	x0=$(ibcnt a xmit_data)
	SOF_LINEBUF=1 sof_cm_bg ibcm.mckey.rx b 60 mckey -m $MG -b "$(ibip b)" -C 10 -S 200
	for _ in $(seq 150); do
		grep -q 'joined dgid' "$mrx" 2>/dev/null && break
		sleep 0.1
	done
	# the group at the SA while b is a member, and after both left
	mcg() { sof_host_run a "$SOFTOFED" run -- timeout 20 saquery -C sofib0 -g 2>&1 </dev/null; }
	g_in=$(mcg | grep -c -i 'ff12:4001:ffff::f01:203')
	SOF_LINEBUF=1 sof_cm_bg ibcm.mckey.tx a 60 mckey -s -m $MG -b "$A" -C 10 -S 200
	sof_wait ibcm.mckey.tx 60
	trc=$?
	sof_wait ibcm.mckey.rx 30
	rrc=$?
	x1=$(ibcnt a xmit_data)
	g_out=$(mcg | grep -c -i 'ff12:4001:ffff::f01:203')
	mgid=$(sed -n 's/.*joined dgid: \([0-9a-f:]*\) mlid 0x\([0-9a-f]*\).*/\1 \2/p' "$mrx" | head -n 1)
	if [ "$rrc" -eq 0 ] && [ "$trc" -eq 0 ] && grep -q 'data transfers complete' "$mrx" &&
		[ "${mgid% *}" = ff12:4001:ffff::f01:203 ] && [ $((0x${mgid#* })) -ge $((0xc000)) ] &&
		[ -n "$x0" ] && [ -n "$x1" ] && [ $((x1 - x0)) -ge $((10 * 200 / 4)) ] &&
		[ "$g_in" -ge 1 ] && [ "$g_out" -eq 0 ]; then
		ok "ibcm: mckey -m $MG over ib0: SA join of ${mgid% *} (MLID 0x${mgid#* }), b received all 10 messages, a's sofib0 sent them (+$((x1 - x0)) words); OpenSM listed the group, then not after the leaves"
	else
		not_ok "ibcm: mckey over ib0" "receiver rc $rrc, sender rc $trc, group '$mgid', xmit_data of a '$x0' -> '$x1', group records at the SA joined $g_in left $g_out"
		sof_dump "$mrx" "$mtx"
		mcg | sed 's/^/#   saquery: /' | head -n 30
	fi
fi
# IPv6 over ib0 (the neighbour by ND on the IB side)
sof_rping_pair "ibcm: rping -C 10 -V by IPv6 address over ib0" a b fd78:1b::1 $((P + 6)) 64 10
# an address on ib0's subnet where no host answers: ADDR_ERROR once ipoib's
# solicitations go unanswered, within rdma_resolve_addr's time-out
sof_gated "ibcm: no host at the address" ||
	sof_cm_fails_fast "ibcm: rping to an ib0 address where no host answers" 30 10000 b \
		"$SOF_CM_FAILED" rping -c -a 192.168.78.99 -p $((P + 7)) -C 1

sof_exit
