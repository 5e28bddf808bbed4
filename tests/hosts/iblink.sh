#!/bin/bash
# The InfiniBand port's link layer (issue 19, item 1), with no switch and no
# subnet manager: hosts a and b (network namespaces on a veth pair), each
# daemon with an InfiniBand port (device sofib0) whose link (fabric/
# README.md: IB packets and SOFL messages in UDP) goes straight to the
# other's, port 7100 to port 7100.
#
#   up        both ports come up to Initialize (the physical link from the
#             HELLOs): ibv_devinfo -d sofib0 says PORT_INIT and InfiniBand,
#             ibv_devices lists sof0 and sofib0, ibv_query_gid index 0 is
#             fe80:: and the port GUID, `softofed status` names the peer
#   down      b's daemon stops (BYE): a's port is Down, phys Polling, at
#             once (LinkDownedCounter 1); sof0 stays ACTIVE
# Then tests/hosts/ib_farend.py, a far end written apart from the C code
# (its own LRH/BTH/DETH, ICRC and VCRC in Python), takes b's end of the link:
#   hello     a's port comes up again (Initialize) and answers HELLO
#   good      SMPs (VL15, QP0, permissive LIDs): received, no receive error
#   bad       VCRC, ICRC, PktLen, LVer, LNH raw, GRH IPVer, a short one:
#             each counted as a receive error under its reason
#   rules     data (VL0) while the port is not Active: state_drops; VL15 to
#             a QP other than QP0: VL15Dropped; a datagram from another UDP
#             port and a SOFL of version 2: link_bad; nothing else moved
#   sm        the far end acts as the subnet manager next door, through a's
#             SMA on QP0 (daemon/ib_sma.c, mad/sma.c), with directed-route
#             SMPs whose responses it checks as a port would (VL15, LRH,
#             VCRC, ICRC, QP0): SubnGet(NodeInfo) gives a CA with one port
#             and the GUIDs `softofed status` shows; SubnSet(PortInfo) sets
#             LID 5, SM LID 1 and Armed; a data packet to LID 5 then makes
#             the port Active (IBA 7.2.3), and ibv_devinfo shows
#             PORT_ACTIVE, port_lid 5, sm_lid 1; data to LID 9 is not ours
#             (dlid_drops) and a P_Key the table lacks is a violation
#   timeout   the far end falls silent: a's port goes Down after 3 s
# The daemon of a answers `softofed status` throughout and its RoCEv2
# device is untouched.
#
# Needs root (ip netns). Usage: tests/hosts/iblink.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_init

FAR=$(dirname "$0")/ib_farend.py
PORT=7100
SOF_HOST_UP_ARGS[a]="--ib-fabric $(sof_host_ip b):$PORT --ib-port $PORT --ib-node HA"
SOF_HOST_UP_ARGS[b]="--ib-fabric $(sof_host_ip a):$PORT --ib-port $PORT --ib-node HB"
sof_hosts_up 2 || sof_exit

# ibc H NAME: counter NAME of the "ib_counters:" line of H's status
ibc() {
	sof_host_run "$1" "$SOFTOFED" status 2>/dev/null </dev/null |
		awk -v k="$2" '$1 == "ib_counters:" { for (i = 2; i + 1 <= NF; i += 2) if ($i == k) { print $(i + 1); f = 1 } }
			END { exit !f }'
}

# ibline H: the "device sofib0" line of H's status
ibline() {
	sof_host_run "$1" "$SOFTOFED" status 2>/dev/null </dev/null | grep '^device sofib0'
}

# port_state H: the state ibv_devinfo shows for sofib0 of host H
port_state() {
	sof_host_run "$1" "$SOFTOFED" run -- ibv_devinfo -d sofib0 2>/dev/null </dev/null |
		sed -n 's/^[[:space:]]*state:[[:space:]]*\([A-Z_]*\).*/\1/p' | head -n 1
}

# wait_state H STATE SECS: until sofib0 of H is in STATE
wait_state() {
	local end=$(($(now_ms) + $3 * 1000))
	while [ "$(now_ms)" -lt "$end" ]; do
		[ "$(port_state "$1")" = "$2" ] && return 0
		sleep 0.1
	done
	return 1
}

# --- up: both ends Initialize ------------------------------------------------
if wait_state a PORT_INIT 5 && wait_state b PORT_INIT 5; then
	ok "iblink: up (both ports PORT_INIT from the HELLOs)"
else
	not_ok "iblink: up" "a: $(port_state a), b: $(port_state b)"
	sof_dump "$(_sof_host_log a)" "$(_sof_host_log b)"
fi
info=$(sof_host_run a "$SOFTOFED" run -- ibv_devinfo -v -d sofib0 2>&1 </dev/null)
devs=$(sof_host_run a "$SOFTOFED" run -- ibv_devices 2>&1 </dev/null)
guid=$(ibline a | sed -n 's/.*port_guid \([0-9a-f]*\).*/\1/p')
want_gid="fe80:0000:0000:0000:${guid:0:4}:${guid:4:4}:${guid:8:4}:${guid:12:4}"
if echo "$info" | grep -q 'link_layer:[[:space:]]*InfiniBand' &&
	echo "$info" | grep -q 'phys_state:[[:space:]]*LINK_UP' &&
	echo "$info" | grep -q "GID\[ *0\]:[[:space:]]*$want_gid" &&
	echo "$devs" | grep -q '^ *sof0 ' && echo "$devs" | grep -q '^ *sofib0 ' &&
	ibline a | grep -q 'peer HB'; then
	ok "iblink: sofib0 presented (InfiniBand, LinkUp, GID fe80::port GUID, peer HB)"
else
	not_ok "iblink: sofib0 presented" "want GID $want_gid"
	echo "$info" "$devs" "$(ibline a)" | sed 's/^/#   /' | head -n 60
fi

# --- down: BYE takes a's port down at once ---------------------------------------
sof_host_run b "$SOFTOFED" down >/dev/null 2>&1 </dev/null
if wait_state a PORT_DOWN 1 && ibline a | grep -q 'phys Polling' &&
	[ "$(ibc a link_downed)" = 1 ] &&
	sof_host_run a "$SOFTOFED" status 2>/dev/null </dev/null | grep -q '^device sof0 .* ACTIVE'; then
	ok "iblink: down (BYE: PORT_DOWN, Polling, link_downed 1; sof0 ACTIVE)"
else
	not_ok "iblink: down" "a: $(port_state a) / $(ibline a) / link_downed $(ibc a link_downed)"
fi

# --- the far end in b: hello, good and bad packets --------------------------------
declare -A before
for k in rcv_pkts rcv_errors drop_short drop_lver drop_pktlen drop_vcrc drop_lnh drop_grh \
	drop_icrc state_drops vl15_dropped link_bad dlid_drops pkey_violations; do
	before[$k]=$(ibc a "$k")
done
far=$(sof_out iblink.far)
sof_host_run b python3 "$FAR" --bind "$(sof_host_ip b):$PORT" --peer "$(sof_host_ip a):$PORT" \
	--name FAR hello smp:5 vcrc:2 icrc:3 pktlen lver lnh grh short data:4 vl15:2 foreign \
	badsofl hold:1 >"$far" 2>&1 </dev/null
if grep -q '^step hello peer phys=5 name=HA' "$far" && [ "$(port_state a)" = PORT_INIT ]; then
	ok "iblink: the far end's HELLO brings a's port up again (a answers LinkUp)"
else
	not_ok "iblink: far end hello" "a: $(port_state a)"
	sof_dump "$far"
fi
declare -A want=([rcv_pkts]=21 [rcv_errors]=10 [drop_short]=1 [drop_lver]=1 [drop_pktlen]=1
	[drop_vcrc]=2 [drop_lnh]=1 [drop_grh]=1 [drop_icrc]=3 [state_drops]=4 [vl15_dropped]=2
	[link_bad]=2 [dlid_drops]=0 [pkey_violations]=0)
bad=""
for k in "${!want[@]}"; do
	now=$(ibc a "$k")
	[ -n "$now" ] && [ -n "${before[$k]}" ] && [ $((now - before[$k])) -eq "${want[$k]}" ] ||
		bad+=" $k:+$((${now:-0} - ${before[$k]:-0}))(want +${want[$k]})"
done
if [ -z "$bad" ]; then
	ok "iblink: good SMPs received, each bad packet counted under its reason"
else
	not_ok "iblink: counted" "$bad"
	sof_dump "$far"
	sof_host_run a "$SOFTOFED" status | grep ib_counters | sed 's/^/#   /'
fi

# --- timeout: silence takes the link down after 3 s ---------------------------------
if wait_state a PORT_DOWN 5 && [ "$(ibc a link_downed)" = 2 ]; then
	ok "iblink: timeout (no HELLO for 3 s: PORT_DOWN, link_downed 2)"
else
	not_ok "iblink: timeout" "a: $(port_state a), link_downed $(ibc a link_downed)"
fi
# --- sm: the far end sets LID, SM LID and the state through a's SMA ---------------
node_guid=$(ibline a | sed -n 's/.*node_guid \([0-9a-f]*\).*/\1/p')
port_guid=$(ibline a | sed -n 's/.*port_guid \([0-9a-f]*\).*/\1/p')
d0=$(ibc a dlid_drops)
p0=$(ibc a pkey_violations)
s0=$(ibc a smp_tx)
sm=$(sof_out iblink.sm)
sof_host_run b python3 "$FAR" --bind "$(sof_host_ip b):$PORT" --peer "$(sof_host_ip a):$PORT" \
	--name SM hello nodeinfo portinfo set:5:1:3 data5 portinfo dlid9 pkey hold:1 \
	>"$sm" 2>&1 </dev/null
if grep -q "^step nodeinfo type=1 ports=1 node_guid=$node_guid port_guid=$port_guid local_port=1 status=0000" "$sm" &&
	grep -q '^step portinfo lid=0 smlid=0 lmc=0 state=2 phys=5 status=0000' "$sm"; then
	ok "iblink: sm: NodeInfo and PortInfo through the SMA (CA, 1 port, the GUIDs; Init, LinkUp)"
else
	not_ok "iblink: sm: NodeInfo/PortInfo" "node_guid $node_guid port_guid $port_guid"
	sof_dump "$sm"
fi
info=$(sof_host_run a "$SOFTOFED" run -- ibv_devinfo -d sofib0 2>&1 </dev/null)
if grep -q '^step set lid=5 smlid=1 lmc=0 state=3 phys=5 status=0000' "$sm" &&
	grep -q '^step portinfo lid=5 smlid=1 lmc=0 state=4 phys=5 status=0000' "$sm" &&
	echo "$info" | grep -q 'state:[[:space:]]*PORT_ACTIVE' &&
	echo "$info" | grep -q 'port_lid:[[:space:]]*5$' &&
	echo "$info" | grep -q 'sm_lid:[[:space:]]*1$' &&
	[ $(($(ibc a smp_tx) - s0)) -eq 5 ]; then
	ok "iblink: sm: SubnSet(PortInfo) LID 5, SM LID 1, Armed; data made it Active; ibv_devinfo agrees"
else
	not_ok "iblink: sm: set" "$(ibline a)"
	sof_dump "$sm"
	echo "$info" | sed 's/^/#   /'
fi
if [ $(($(ibc a dlid_drops) - d0)) -eq 1 ] && [ $(($(ibc a pkey_violations) - p0)) -eq 1 ]; then
	ok "iblink: sm: data to another LID and from another partition dropped and counted"
else
	not_ok "iblink: sm: drops" "dlid_drops +$(($(ibc a dlid_drops) - d0)), pkey_violations +$(($(ibc a pkey_violations) - p0))"
fi

if wait_state a PORT_DOWN 5 && [ "$(ibc a link_downed)" = 3 ]; then
	ok "iblink: sm: silence again takes the Active port down (link_downed 3)"
else
	not_ok "iblink: sm: down" "a: $(port_state a), link_downed $(ibc a link_downed)"
fi
if sof_host_run a "$SOFTOFED" status >/dev/null 2>&1 </dev/null; then
	ok "iblink: a's daemon answers after all of it"
else
	not_ok "iblink: daemon" "a's daemon does not answer"
fi
sof_exit
