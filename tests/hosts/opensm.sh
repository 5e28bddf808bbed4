#!/bin/bash
# Debian's unmodified OpenSM on the software fabric (issue 19, acceptance
# line 1): hosts a and b (network namespaces on a veth pair), each daemon
# with an InfiniBand port (sofib0) attached to the fabric process, which
# runs in host a's namespace from ../shared/topologies/pair.net (H1 and H2
# on switch S1) and listens on a's veth address. OpenSM runs in a under
# `softofed run` on sofib0 (its SMPs leave through QP0 of sofib0, libibumad
# being ours) and must reach SUBNET UP.
#
#   opensm      OpenSM's log says SUBNET UP within 60 s
#   lids        both sofib0 ports Active with LIDs nonzero and distinct, SM
#               LID a's LID (softofed status of each host)
#   ibstat      Debian's ibstat -C sofib0 in b: Active, its LID and SM LID
#   ibnetdiscover  in b: the file's nodes and GUIDs (ibsim's numbering)
#
# Needs root (ip netns). Usage: tests/hosts/opensm.sh [TOPOLOGY]
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_init

TOPO=${1:-$SOF_ROOT/../shared/topologies/pair.net}
[ -r "$TOPO" ] || TOPO=/work/shared/topologies/pair.net
FABRIC=$(dirname "$SOFTOFED")/softofed-fabric
PORT=7471
SOF_HOST_UP_ARGS[a]="--ib-fabric $(sof_host_ip a):$PORT --ib-node H1"
SOF_HOST_UP_ARGS[b]="--ib-fabric $(sof_host_ip a):$PORT --ib-node H2"
sof_hosts_up 2 || sof_exit

# ibline H: the "device sofib0" line of H's status
ibline() {
	sof_host_run "$1" "$SOFTOFED" status 2>/dev/null </dev/null | grep '^device sofib0'
}
# iblid H: the LID of H's sofib0
iblid() {
	ibline "$1" | sed -n 's/.* lid \([0-9]*\) .*/\1/p'
}

sof_host_bg opensm.fabric a 200 "$FABRIC" "$TOPO" --listen "$(sof_host_ip a):$PORT" --real H1,H2
for _ in $(seq 100); do
	ibline a | grep -q 'port 1 INIT' && ibline b | grep -q 'port 1 INIT' && break
	sleep 0.1
done
if ibline a | grep -q 'port 1 INIT' && ibline b | grep -q 'port 1 INIT'; then
	ok "opensm: both sofib0 ports attached to the fabric (Initialize)"
else
	not_ok "opensm: attach" "$(ibline a) / $(ibline b)"
	sof_dump "$(sof_out opensm.fabric)"
	sof_exit
fi

guid=$(sof_host_run a "$SOFTOFED" run -- ibstat -p sofib0 2>/dev/null </dev/null | head -n 1)
smlog=$SOF_TMP/opensm.log
sof_host_bg opensm.sm a 180 "$SOFTOFED" run -- opensm -g "$guid" -f "$smlog" -d 0 -s 2 -D 0x87
for _ in $(seq 600); do
	grep -q 'SUBNET UP' "$smlog" 2>/dev/null && break
	sleep 0.1
done
if grep -q 'SUBNET UP' "$smlog" 2>/dev/null; then
	ok "opensm: SUBNET UP (OpenSM on a's sofib0, port GUID $guid)"
else
	not_ok "opensm: SUBNET UP" "no SUBNET UP in 60 s; $(grep -c ERR "$smlog" 2>/dev/null) errors"
	tail -n 60 "$smlog" | cut -c1-200 | sed "s/^/#   sm: /"
	sof_host_run a "$SOFTOFED" status 2>&1 </dev/null | sed 's/^/#   a: /'
	sof_host_run a "$SOFTOFED" fabric status -v 2>&1 </dev/null | sed 's/^/#   fabric: /'
	sof_exit
fi

la=$(iblid a)
lb=$(iblid b)
if ibline a | grep -q 'port 1 ACTIVE' && ibline b | grep -q 'port 1 ACTIVE' &&
	[ -n "$la" ] && [ -n "$lb" ] && [ "$la" -gt 0 ] && [ "$lb" -gt 0 ] && [ "$la" != "$lb" ] &&
	ibline b | grep -q " sm_lid $la "; then
	ok "opensm: lids (a $la, b $lb, both Active, SM LID $la)"
else
	not_ok "opensm: lids" "$(ibline a) / $(ibline b)"
fi

out=$SOF_TMP/opensm.ibstat
sof_host_run b "$SOFTOFED" run -- ibstat sofib0 >"$out" 2>&1 </dev/null
if grep -q 'State: Active' "$out" && grep -q "Base lid: $lb\$" "$out" && grep -q "SM lid: $la\$" "$out" &&
	grep -q 'Link layer: InfiniBand' "$out"; then
	ok "opensm: ibstat in b (Active, Base lid $lb, SM lid $la, InfiniBand)"
else
	not_ok "opensm: ibstat" "$(tr '\n' ' ' <"$out")"
fi

out=$SOF_TMP/opensm.ibnd
sof_host_run b "$SOFTOFED" run -- ibnetdiscover -C sofib0 >"$out" 2>&1 </dev/null
# the file's nodes with ibsim's GUIDs: S1 0x200000, H1 0x100000, H2 0x100002
if grep -q '^Switch[[:space:]]*8 "S-0000000000200000"' "$out" &&
	grep -q '^Ca[[:space:]]*1 "H-0000000000100000"' "$out" &&
	grep -q '^Ca[[:space:]]*1 "H-0000000000100002"' "$out"; then
	ok "ibnetdiscover: S1, H1, H2 with the file's GUIDs"
else
	not_ok "ibnetdiscover" "$(tr '\n' ' ' <"$out" | cut -c1-600)"
	sof_host_run b "$SOFTOFED" status 2>&1 </dev/null | sed 's/^/#   b: /'
	sof_host_run b bash -c 'tail -n 20 /tmp/softofed-$(id -u)-$(stat -L -c %i /proc/self/ns/net).log' 2>&1 | sed 's/^/#   blog: /'
	sof_host_run a "$SOFTOFED" fabric status -v 2>&1 </dev/null | sed 's/^/#   fabric: /'
fi

sof_kill opensm.sm
sof_kill opensm.fabric
sof_exit
