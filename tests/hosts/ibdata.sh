#!/bin/bash
# Data by LID on the InfiniBand port (issue 19, item 1), before the fabric
# process exists: hosts a and b (network namespaces on a veth pair), each
# daemon with an InfiniBand port (device sofib0); between them
# tests/hosts/ib_relay.py, a two-port switch with its subnet manager in
# Python (its own LRH, ICRC and VCRC), in host b: it is the far end of a's
# link (b:7100 <-> a:7100) and of b's (127.0.0.1:7201 <-> :7101), gives a
# LID 1 and b LID 2 through their SMAs (directed-route SubnSet(PortInfo)),
# takes both to Armed and then Active, and forwards every other packet
# from one link to the other unchanged.
#
#   sm          both ports Armed with LIDs 1 and 2, SM LID 1 (the relay
#               holds them there until the armed check is done, --go, at
#               most 10 s)
#   armed       meanwhile ibv_rc_pingpong by LID gets nowhere: a's port
#               discards what its QP sends (PortXmitDiscards), b stays Armed
#   active      both ports PORT_ACTIVE
#   presented   sofib0's sysfs under `softofed run` (link_layer, lid, sm_lid,
#               state, phys_state, GID, node_desc) and Debian's ibstat on it
#   rc_pingpong ibv_rc_pingpong -d sofib0 by LID (no GID), 4 KiB, --chk
#   ud, srq     ibv_ud_pingpong (2 KiB datagrams: address handles by LID,
#               completions with the SLID) and ibv_srq_pingpong likewise
#   stream      tests/progs/data_stream between a and b on sofib0 by LID:
#               SEND, WRITE, WRITE WITH IMMEDIATE, READ, every byte checked
#   counters    the traffic went by the IB ports (PortXmitPkts, PortRcvPkts
#               grew on both; no receive error) and the relay forwarded it
#
# Needs root (ip netns). Usage: tests/hosts/ibdata.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_init

RELAY=$(dirname "$0")/ib_relay.py
SOF_HOST_UP_ARGS[a]="--ib-fabric $(sof_host_ip b):7100 --ib-port 7100 --ib-node HA"
SOF_HOST_UP_ARGS[b]="--ib-fabric 127.0.0.1:7201 --ib-port 7101 --ib-node HB"
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

# --- the relay and its SM: Armed (at most 10 s), then Active ------------------------
sof_host_bg ibdata.relay b 180 python3 "$RELAY" --a "$(sof_host_ip b):7100" "$(sof_host_ip a):7100" 1 \
	--b 127.0.0.1:7201 127.0.0.1:7101 2 --hold 10 --go "$SOF_TMP/ibdata.go" --secs 170
relay=$(sof_out ibdata.relay)
for _ in $(seq 100); do
	grep -q '^relay armed\|^relay failed' "$relay" 2>/dev/null && break
	sleep 0.1
done
if grep -q '^relay armed' "$relay" && ibline a | grep -q 'port 1 ARMED .* lid 1 lmc 0 sm_lid 1 ' &&
	ibline b | grep -q 'port 1 ARMED .* lid 2 lmc 0 sm_lid 1 '; then
	ok "ibdata: sm (a LID 1, b LID 2, both Armed through their SMAs)"
else
	not_ok "ibdata: sm armed" "$(ibline a) / $(ibline b)"
	sof_dump "$relay"
	sof_exit
fi

# --- before Active: a's port discards what it would send -----------------------------
d0=$(ibc a xmit_discards)
out=$(sof_out ibdata.before)
sof_host_bg ibdata.before.srv b 20 "$SOFTOFED" run -- ibv_rc_pingpong -d sofib0 -p 18516 -n 2 -s 64
sof_host_wait_listen b 18516 5 ibdata.before.srv >/dev/null 2>&1
sof_host_run a "$SOFTOFED" run -- timeout 4 ibv_rc_pingpong -d sofib0 -p 18516 -n 2 -s 64 \
	"$(sof_host_ip b)" >"$out" 2>&1 </dev/null
rc=$?
sof_kill ibdata.before.srv
# the relay's SM makes both ports Active now (at the latest 10 s after Armed)
b_armed=$(ibline b)
touch "$SOF_TMP/ibdata.go"
if [ "$rc" -ne 0 ] && ! grep -q ' bytes in ' "$out" && [ "$(ibc a xmit_discards)" -gt "$d0" ] &&
	grep -q 'port 1 ARMED' <<<"$b_armed"; then
	ok "ibdata: no data while Armed (the client got nowhere, a's xmit_discards grew, b still Armed)"
else
	not_ok "ibdata: armed" "rc $rc, xmit_discards $d0 -> $(ibc a xmit_discards), $b_armed"
	sof_dump "$out"
fi

for _ in $(seq 150); do
	grep -q '^relay up\|^relay failed' "$relay" 2>/dev/null && break
	sleep 0.1
done
if grep -q '^relay up a=1 b=2' "$relay" && ibline a | grep -q 'port 1 ACTIVE .* lid 1 lmc 0 sm_lid 1 ' &&
	ibline b | grep -q 'port 1 ACTIVE .* lid 2 lmc 0 sm_lid 1 '; then
	ok "ibdata: sm (both Active)"
else
	not_ok "ibdata: sm active" "$(ibline a) / $(ibline b)"
	sof_dump "$relay"
	sof_exit
fi
# --- presented: sysfs of sofib0 under `softofed run`, and ibstat (Debian's
# infiniband-diags on its libibumad, which reads that sysfs) -------------------------
pres=$(sof_host_run a "$SOFTOFED" run -- sh -c 'd=/sys/class/infiniband/sofib0; for f in link_layer lid sm_lid lid_mask_count state phys_state gids/0; do printf "%s=" $f; cat $d/ports/1/$f; done; printf "node_desc="; cat $d/node_desc' 2>&1 </dev/null)
guid=$(ibline a | sed -n 's/.*port_guid \([0-9a-f]*\).*/\1/p')
want_gid="fe80:0000:0000:0000:${guid:0:4}:${guid:4:4}:${guid:8:4}:${guid:12:4}"
stat=$(sof_host_run a "$SOFTOFED" run -- ibstat sofib0 2>&1 </dev/null)
if echo "$pres" | grep -qx 'link_layer=InfiniBand' && echo "$pres" | grep -qx 'lid=0x1' &&
	echo "$pres" | grep -qx 'sm_lid=0x1' && echo "$pres" | grep -qx 'state=4: ACTIVE' &&
	echo "$pres" | grep -qx 'phys_state=5: LinkUp' && echo "$pres" | grep -qx "gids/0=$want_gid" &&
	echo "$pres" | grep -qx 'node_desc=HA' &&
	echo "$stat" | grep -q "Port GUID: 0x$guid" && echo "$stat" | grep -q 'Base lid: 1$' &&
	echo "$stat" | grep -q 'SM lid: 1$' && echo "$stat" | grep -q 'Link layer: InfiniBand' &&
	echo "$stat" | grep -q 'State: Active'; then
	ok "ibdata: sofib0 in sysfs (InfiniBand, lid 0x1, sm_lid 0x1, ACTIVE, LinkUp, GID fe80::GUID) and ibstat agrees"
else
	not_ok "ibdata: presented" "want GID $want_gid"
	echo "$pres" "$stat" | sed 's/^/#   /'
fi

a0=$(ibc a xmit_pkts)
b0=$(ibc b rcv_pkts)
e0=$(($(ibc a rcv_errors) + $(ibc b rcv_errors)))

# --- ibv_rc_pingpong by LID ------------------------------------------------------
srv=$(sof_out ibdata.pp.srv)
cli=$(sof_out ibdata.pp.cli)
sof_host_bg ibdata.pp.srv b 60 "$SOFTOFED" run -- ibv_rc_pingpong -d sofib0 -p 18515 -n 200 -s 4096 --chk
sof_host_wait_listen b 18515 10 ibdata.pp.srv >/dev/null 2>&1
sof_host_run a "$SOFTOFED" run -- ibv_rc_pingpong -d sofib0 -p 18515 -n 200 -s 4096 --chk \
	"$(sof_host_ip b)" >"$cli" 2>&1 </dev/null
rc=$?
sof_wait ibdata.pp.srv 20
if [ "$rc" -eq 0 ] && grep -q '1638400 bytes in ' "$cli" && grep -q '1638400 bytes in ' "$srv" &&
	grep -q 'remote address: LID 0x0002' "$cli" && grep -q 'remote address: LID 0x0001' "$srv" &&
	! grep -q -i 'invalid data\|failed\|couldn' "$cli" "$srv"; then
	ok "ibdata: ibv_rc_pingpong -d sofib0 by LID (200 x 4 KiB, --chk, LIDs 1 <-> 2)"
else
	not_ok "ibdata: rc_pingpong" "client rc $rc"
	sof_dump "$cli" "$srv"
fi

# --- ibv_ud_pingpong and ibv_srq_pingpong by LID ------------------------------------------
# pp NAME PORT EXPECT ARGS...: server in b, client in a, both must print
# EXPECT bytes and name each other's LID
pp() {
	local name=$1 port=$2 expect=$3 srv cli rc
	shift 3
	srv=$(sof_out "ibdata.$name.srv")
	cli=$(sof_out "ibdata.$name.cli")
	sof_host_bg "ibdata.$name.srv" b 60 "$SOFTOFED" run -- "$@" -p "$port"
	sof_host_wait_listen b "$port" 10 "ibdata.$name.srv" >/dev/null 2>&1
	sof_host_run a "$SOFTOFED" run -- "$@" -p "$port" "$(sof_host_ip b)" >"$cli" 2>&1 </dev/null
	rc=$?
	sof_wait "ibdata.$name.srv" 20
	if [ "$rc" -eq 0 ] && grep -q "^$expect bytes in " "$cli" && grep -q "^$expect bytes in " "$srv" &&
		grep -q 'remote address: *LID 0x0002' "$cli" && grep -q 'remote address: *LID 0x0001' "$srv" &&
		! grep -q -i 'invalid data\|failed\|couldn' "$cli" "$srv"; then
		ok "ibdata: $1 -d sofib0 by LID ($expect bytes, --chk, LIDs 1 <-> 2)"
	else
		not_ok "ibdata: $name" "client rc $rc"
		sof_dump "$cli" "$srv"
	fi
}
pp ud 18517 819200 ibv_ud_pingpong -d sofib0 -n 200 -s 2048 --chk
pp srq 18518 819200 ibv_srq_pingpong -d sofib0 -n 100 -s 4096 -q 2 --chk

# --- data_stream by LID, every byte checked ---------------------------------------------
srv=$(sof_out ibdata.ds.srv)
cli=$(sof_out ibdata.ds.cli)
sizes=1x64,1023x32,4096x16,65536x8,1048576x2
sof_host_bg ibdata.ds.srv b 100 "$SOFTOFED" run -- "$SOF_PROGS/data_stream" -d sofib0 -p 18701 -m 4096 -T 90
sof_host_wait_listen b 18701 10 ibdata.ds.srv >/dev/null 2>&1
sof_host_run a "$SOFTOFED" run -- "$SOF_PROGS/data_stream" -d sofib0 -p 18701 -m 4096 -T 90 -s "$sizes" \
	"$(sof_host_ip b)" >"$cli" 2>&1 </dev/null
rc=$?
sof_wait ibdata.ds.srv 30
if [ "$rc" -eq 0 ] && grep -q '^ok' "$cli" && grep -q '^ok' "$srv" &&
	grep -q '^checked send messages=' "$srv" && grep -q '^checked write messages=' "$srv" &&
	grep -q '^checked write_imm messages=' "$srv" && grep -q '^checked read messages=' "$cli"; then
	ok "ibdata: data_stream by LID (SEND, WRITE, WRITE_IMM, READ up to 1 MiB, MTU 4096, every byte checked)"
else
	not_ok "ibdata: data_stream" "client rc $rc"
	sof_dump "$cli" "$srv"
fi

# --- counters: it went by the IB ports and the relay ------------------------------------
da=$(($(ibc a xmit_pkts) - a0))
db=$(($(ibc b rcv_pkts) - b0))
de=$(($(ibc a rcv_errors) + $(ibc b rcv_errors) - e0))
if [ "$da" -gt 400 ] && [ "$db" -gt 400 ] && [ "$de" -eq 0 ]; then
	ok "ibdata: counters (a sent $da, b received $db IB packets, no receive error)"
else
	not_ok "ibdata: counters" "a xmit +$da, b rcv +$db, rcv_errors +$de"
fi
sof_kill ibdata.relay
sof_exit
