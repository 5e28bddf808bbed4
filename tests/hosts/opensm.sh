#!/bin/bash
# A subnet manager on the software fabric with real hosts: Debian's
# unmodified OpenSM (issue 19, acceptance line 1) or, with SOF_SM=softofed
# (tests/hosts/sm.sh), our softofed-sm (issue 20). Hosts as network
# namespaces, each daemon with an InfiniBand port (sofib0) attached to the
# fabric process (softofed-fabric), which runs in host a's namespace from a
# topology of tests/topologies and listens on a's veth address. The SM runs
# in a under `softofed run` on sofib0 (its SMPs leave through QP0 of
# sofib0; libibumad is ours) and must bring the subnet up; infiniband-diags
# in b then check it against the file. The ok lines say opensm/ or sm/.
#
#   SOF_OPENSM_TOPO=pair (default): H1 (a) and H2 (b) on switch S1;
#   SOF_OPENSM_TOPO=line3: H1 (a) - S1 - S2 - S3 - H3 (c), H2 (b) on S2.
#
#   attach      every real host's sofib0 comes up to Initialize
#   sm          the SM's log says SUBNET UP within 60 s
#   lids        every sofib0 port Active, LIDs nonzero and distinct, SM LID
#               a's LID (softofed status of each host)
#   ibstat      Debian's ibstat sofib0 in b: Active, its LID and SM LID
#   ibnetdiscover  in b: the same nodes, GUIDs and links as the fabric
#               process built from the file (`softofed fabric status -v`)
#   smpquery    nodeinfo and portinfo of a's port by LID from b; GUIDInfo
#               of a's port, SwitchInfo of b's switch by directed route
#   ibroute     the LFT the SM programmed in b's switch: a's and b's LIDs
#               out of the ports the file gives
#   sminfo      from b: the master SM is a's port (LID, GUID)
#   saquery     from b: the SM's SA returns a NodeRecord per node
#   perfquery   from b: the PMA of a port of b's switch the ping-pong
#               crossed counts its data both ways
#   rc_pingpong ibv_rc_pingpong -d sofib0 by LID (no GID), --chk, a <-> b
#               (pair: one switch) or a <-> c (line3: three switches)
#   stall       b's daemon stopped 3.5 s, its link socket read away and
#               HELLOs sent from it (tests/hosts/ib_deaf.py): b's link
#               times out while the fabric still hears it; b's Polling
#               retrains the switch port (trap 128), the SM brings both
#               ends back to Active within 10 s, ibv_rc_pingpong a <-> b
#
# Needs root (ip netns). Usage: [SOF_SM=softofed] [SOF_OPENSM_TOPO=line3]
# tests/hosts/opensm.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_init

T=${SOF_OPENSM_TOPO:-pair}
TOPO=${SOF_TOPOLOGIES:-$SOF_ROOT/tests/topologies}/$T.net
FABRIC=$(dirname "$SOFTOFED")/softofed-fabric
# run.sh's ASan mix has the daemon and the tool only: the plain build's fabric
[ -x "$FABRIC" ] || FABRIC=$SOF_ROOT/build/bin/softofed-fabric
# N names the ok lines, the background processes and the files
case ${SOF_SM:-opensm} in
opensm) N=opensm PORT=7471 ;;
softofed) N=sm PORT=7473 ;; # `softofed sm` runs the softofed-sm beside it
*)
	not_ok "opensm: SOF_SM" "opensm or softofed, not '$SOF_SM'"
	exit 1
	;;
esac
# per topology: hosts, real HCAs, b's switch and the ports of its LFT that
# lead to b and to a; the ping-pong's peer of a (across every switch) and
# the port of b's switch its traffic crosses
case $T in
pair) NH=2 REAL=H1,H2 BSW=S1 BPORT=2 APORT=1 PEER=b PPORT=2 ;;
line3) NH=3 REAL=H1,H2,H3 BSW=S2 BPORT=1 APORT=2 PEER=c PPORT=3 ;;
*)
	not_ok "$N: topology" "unknown SOF_OPENSM_TOPO $T"
	exit 1
	;;
esac
SOF_HOST_UP_ARGS[a]="--ib-fabric $(sof_host_ip a):$PORT --ib-node H1"
SOF_HOST_UP_ARGS[b]="--ib-fabric $(sof_host_ip a):$PORT --ib-node H2"
SOF_HOST_UP_ARGS[c]="--ib-fabric $(sof_host_ip a):$PORT --ib-node H3"
sof_hosts_up "$NH" || sof_exit
HOSTS="a b"
[ "$NH" = 3 ] && HOSTS="a b c"

# the sofib0 helpers of tests/ib_fabric.sh (sof_ibf_line, _lid, _all_in, _diag)
IBF_HOSTS=$HOSTS
# shellcheck source=tests/ib_fabric.sh
. "$SOF_ROOT/tests/ib_fabric.sh"

sof_host_bg $N.fabric a 280 "$FABRIC" "$TOPO" --listen "$(sof_host_ip a):$PORT" --real "$REAL"
if sof_wait_for 10 sof_ibf_all_in INIT; then
	ok "$N/$T: every sofib0 port attached to the fabric (Initialize)"
else
	not_ok "$N/$T: attach" "$(sof_ibf_line a) / $(sof_ibf_line b)"
	sof_dump "$(sof_out $N.fabric)"
	sof_exit
fi

guid=$(sof_host_run a "$SOFTOFED" run -- ibstat -p sofib0 2>/dev/null </dev/null | head -n 1)
if [ "$N" = opensm ]; then
	smlog=$SOF_TMP/$N.log
	sof_host_bg $N.sm a 260 "$SOFTOFED" run -- opensm -g "$guid" -f "$smlog" -d 0 -s 2 -D 0x87
else
	smlog=$(sof_out $N.sm)
	sof_host_bg $N.sm a 260 "$SOFTOFED" sm -v
fi
for _ in $(seq 600); do
	grep -q 'SUBNET UP' "$smlog" 2>/dev/null && break
	sleep 0.1
done
if grep -q 'SUBNET UP' "$smlog" 2>/dev/null; then
	ok "$N/$T: SUBNET UP (${SOF_SM:-opensm} on a's sofib0 under softofed run, port GUID $guid)"
else
	not_ok "$N/$T: SUBNET UP" "no SUBNET UP in 60 s; $(grep -c ERR "$smlog" 2>/dev/null) errors"
	tail -n 60 "$smlog" | cut -c1-200 | sed "s/^/#   sm: /"
	sof_host_run a "$SOFTOFED" status 2>&1 </dev/null | sed 's/^/#   a: /'
	sof_host_run a "$SOFTOFED" fabric status -v 2>&1 </dev/null | sed 's/^/#   fabric: /'
	sof_exit
fi

la=$(sof_ibf_lid a)
lb=$(sof_ibf_lid b)
lids=""
for h in $HOSTS; do lids="$lids $(sof_ibf_lid "$h")"; done
# shellcheck disable=SC2086 # a list
if sof_ibf_all_in ACTIVE && ! echo $lids | tr ' ' '\n' | grep -q -v '^[1-9][0-9]*$' &&
	[ "$(echo $lids | tr ' ' '\n' | sort -u | wc -l)" = "$NH" ] &&
	sof_ibf_line b | grep -q " sm_lid $la " && sof_ibf_line a | grep -q " sm_lid $la "; then
	ok "$N/$T: lids (hosts $HOSTS:$lids, all Active, distinct, SM LID $la)"
else
	not_ok "$N/$T: lids" "$(sof_ibf_line a) / $(sof_ibf_line b)"
fi

out=$SOF_TMP/$N.ibstat
sof_ibf_diag b "$out" ibstat sofib0
if grep -q 'State: Active' "$out" && grep -q "Base lid: $lb\$" "$out" && grep -q "SM lid: $la\$" "$out" &&
	grep -q 'Link layer: InfiniBand' "$out"; then
	ok "$N/$T: ibstat in b (Active, Base lid $lb, SM lid $la, InfiniBand)"
else
	not_ok "$N/$T: ibstat" "$(tr '\n' ' ' <"$out")"
fi

# ibnetdiscover's nodes, GUIDs and links against the fabric's own
fab=$SOF_TMP/$N.fabric.v
sof_host_run a "$SOFTOFED" fabric status -v >"$fab" 2>&1 </dev/null
out=$SOF_TMP/$N.ibnd
sof_ibf_diag b "$out" ibnetdiscover -C sofib0
cmp=$(python3 - "$fab" "$out" <<'PY'
import re, sys
fab, ibnd = open(sys.argv[1]).read(), open(sys.argv[2]).read()
def links(text, node_re, link_re, name_of):
    nodes, ls, cur = {}, set(), None
    for line in text.splitlines():
        m = re.match(node_re, line)
        if m:
            cur = name_of(m)
            nodes[cur[0]] = cur[1]
            continue
        m = re.match(link_re, line)
        if m and cur:
            ls.add((cur[0], int(m.group(1)), m.group(2), int(m.group(3))))
    return nodes, ls
# fabric: 'Switch "S1" 8 guid 0x...' then '[1] "H1"[1] ...'
fn, fl = links(fab, r'^(Switch|Hca) "([^"]+)" \d+ guid (0x[0-9a-f]+)', r'^\[(\d+)\] "([^"]+)"\[(\d+)\]',
               lambda m: (m.group(2), (m.group(1)[0], int(m.group(3), 16))))
g = {n: v[1] for n, v in fn.items()}
fl = {(g[a], p, g[b], q) for a, p, b, q in fl}
# ibnetdiscover: 'Switch<TAB>8 "S-0000000000200000"' then '[1]<TAB>"H-...."[1]'
inn, il = links(ibnd, r'^(Switch|Ca)\s+\d+\s+"([SH])-([0-9a-f]+)"', r'^\[(\d+)\](?:\([0-9a-f]+\))?\s+"[SH]-([0-9a-f]+)"\[(\d+)\]',
                lambda m: (int(m.group(3), 16), (m.group(1)[0], int(m.group(3), 16))))
il = {(a, p, int(b, 16), q) for a, p, b, q in il}
fg = sorted((v[0].replace('H', 'C'), v[1]) for v in fn.values())
ig = sorted(inn.values())
if fg == ig and fl == il and fl:
    print("same %d nodes, %d link ends" % (len(fg), len(fl)))
else:
    print("DIFF nodes fabric %s ibnetdiscover %s links only-fabric %s only-ibnd %s" %
          (fg, ig, sorted(fl - il), sorted(il - fl)))
PY
)
if [ "${cmp#same}" != "$cmp" ]; then
	ok "$N/$T: ibnetdiscover in b: $cmp, GUIDs as the fabric's"
else
	not_ok "$N/$T: ibnetdiscover" "$cmp; $(head -c 400 "$out" | tr '\n' ' ')"
fi

# a's node GUID and port GUID as the fabric gave them
aguid=$(sed -n 's/^Hca "H1" 1 guid \(0x[0-9a-f]*\).*/\1/p' "$fab")
out=$SOF_TMP/$N.smpq
sof_ibf_diag b "$out" smpquery -C sofib0 nodeinfo "$la"
out2=$SOF_TMP/$N.smpq2
sof_ibf_diag b "$out2" smpquery -C sofib0 portinfo "$la"
if [ -n "$aguid" ] && grep -q "^Guid:\.*$aguid\$" "$out" && grep -q '^NodeType:\.*Channel Adapter' "$out" &&
	grep -q "^Lid:\.*$la\$" "$out2" && grep -q "^SMLid:\.*$la\$" "$out2" && grep -q '^LinkState:\.*Active' "$out2"; then
	ok "$N/$T: smpquery nodeinfo/portinfo of LID $la from b (NodeGuid $aguid, Lid, SMLid, Active)"
else
	not_ok "$N/$T: smpquery" "$(tr '\n' ' ' <"$out" | cut -c1-300) / $(tr '\n' ' ' <"$out2" | cut -c1-900)"
fi

# GUIDInfo of a's port by LID (entry 0: its port GUID, as the fabric gave
# it) and SwitchInfo of b's switch one hop from b by directed route (the
# LFT's capacity, its top at or above every host's LID, partition
# enforcement)
apguid=$(awk '/^Hca "H1" /{getline; if (match($0, /port_guid 0x[0-9a-f]+/)) print substr($0, RSTART + 10, RLENGTH - 10); exit}' "$fab")
out=$SOF_TMP/$N.guids
sof_ibf_diag b "$out" smpquery -C sofib0 GUIDInfo "$la"
out2=$SOF_TMP/$N.si
sof_ibf_diag b "$out2" smpquery -C sofib0 -D SwitchInfo 0,1
top=$(sed -n 's/^LinearFdbTop:\.*\([0-9]*\)$/\1/p' "$out2")
maxlid=$(echo $lids | tr ' ' '\n' | sort -n | tail -n 1)
if [ -n "$apguid" ] && grep -q "^ *0: $apguid " "$out" && grep -q '^8 guids capacity' "$out" &&
	grep -q '^LinearFdbCap:\.*49152$' "$out2" && [ -n "$top" ] && [ -n "$maxlid" ] &&
	[ "$top" -ge "$maxlid" ] && grep -q '^PartEnforceCap:\.*[1-9]' "$out2"; then
	ok "$N/$T: smpquery GUIDInfo of LID $la (GUID 0 $apguid) and SwitchInfo of b's switch by directed route (LinearFdbTop $top >= LID $maxlid)"
else
	not_ok "$N/$T: smpquery GUIDInfo / SwitchInfo" "$(tr '\n' ' ' <"$out" | cut -c1-200) / $(tr '\n' ' ' <"$out2" | cut -c1-400)"
fi

# the LFT the SM programmed into b's switch
swguid=$(sed -n "s/^Switch \"$BSW\" 8 guid \\(0x[0-9a-f]*\\).*/\\1/p" "$fab")
out=$SOF_TMP/$N.ibroute
sof_ibf_diag b "$out" ibroute -C sofib0 -G "$swguid"
hex() { printf '0x%04x' "$1"; }
if [ -n "$swguid" ] && grep -q "^$(hex "$lb") 00*$BPORT " "$out" && grep -q "^$(hex "$la") 00*$APORT " "$out"; then
	ok "$N/$T: ibroute of $BSW ($swguid): LID $lb out port $BPORT, LID $la out port $APORT"
else
	not_ok "$N/$T: ibroute" "$(tr '\n' ' ' <"$out" | cut -c1-500)"
fi

out=$SOF_TMP/$N.sminfo
sof_ibf_diag b "$out" sminfo -C sofib0
apg=$(printf '0x%x' "0x$(sof_ibf_line a | sed -n 's/.* port_guid \([0-9a-f]*\) .*/\1/p')")
if grep -q "sm lid $la sm guid $apg, .* SMINFO_MASTER" "$out"; then
	ok "$N/$T: sminfo from b: $(tr '\n' ' ' <"$out" | cut -c1-120)"
else
	not_ok "$N/$T: sminfo" "$(tr '\n' ' ' <"$out" | cut -c1-300)"
fi

out=$SOF_TMP/$N.saquery
sof_ibf_diag b "$out" saquery -C sofib0 NR
nnodes=$(grep -c '^Switch\|^Hca' "$fab")
if [ "$(grep -c 'NodeRecord dump' "$out")" = "$nnodes" ] && grep -q "$aguid" "$out"; then
	ok "$N/$T: saquery NodeRecords from the SM's SA: $nnodes, a's GUID among them"
else
	not_ok "$N/$T: saquery" "$(grep -c 'NodeRecord dump' "$out") of $nnodes records: $(head -c 300 "$out" | tr '\n' ' ')"
fi

# ibv_rc_pingpong by LID, server in the peer, client in a
lp=$(sof_ibf_lid "$PEER")
ppsrv=$(sof_out $N.pp.srv)
ppcli=$SOF_TMP/$N.pp.cli
sof_host_bg $N.pp.srv "$PEER" 60 "$SOFTOFED" run -- ibv_rc_pingpong -d sofib0 -p 18515 -n 200 -s 4096 --chk
sof_host_wait_listen "$PEER" 18515 10 $N.pp.srv >/dev/null 2>&1
sof_host_run a "$SOFTOFED" run -- timeout 40 ibv_rc_pingpong -d sofib0 -p 18515 -n 200 -s 4096 --chk \
	"$(sof_host_ip "$PEER")" >"$ppcli" 2>&1 </dev/null
rc=$?
sof_wait $N.pp.srv 20
if [ "$rc" -eq 0 ] && grep -q '1638400 bytes in ' "$ppcli" && grep -q '1638400 bytes in ' "$ppsrv" &&
	grep -q "remote address: LID $(hex "$lp")" "$ppcli" && grep -q "remote address: LID $(hex "$la")" "$ppsrv" &&
	! grep -q -i 'invalid data\|failed\|couldn' "$ppcli" "$ppsrv"; then
	ok "$N/$T: ibv_rc_pingpong -d sofib0 by LID a <-> $PEER through the fabric (200 x 4 KiB, --chk, LIDs $la <-> $lp)"
else
	not_ok "$N/$T: rc_pingpong" "client rc $rc"
	sof_dump "$ppcli" "$ppsrv"
fi

out=$SOF_TMP/$N.perf
sof_ibf_diag b "$out" perfquery -C sofib0 -G "$swguid" "$PPORT"
xd=$(sed -n 's/^PortXmitData:\.*\([0-9]*\)$/\1/p' "$out")
rd=$(sed -n 's/^PortRcvData:\.*\([0-9]*\)$/\1/p' "$out")
# 200 messages of 4 KiB each way are 204800 four-byte words each way
if [ -n "$xd" ] && [ -n "$rd" ] && [ "$xd" -ge 204800 ] && [ "$rd" -ge 204800 ]; then
	ok "$N/$T: perfquery of $BSW port $PPORT: PortXmitData $xd, PortRcvData $rd words (the ping-pong went through)"
else
	not_ok "$N/$T: perfquery" "$(tr '\n' ' ' <"$out" | cut -c1-900)"
fi

# b's daemon stalls past its link's 3 s while the fabric still hears it
# (ib_deaf.py: b stopped, its link socket read away, HELLOs sent from it):
# b's port times out alone; its Polling must retrain the switch port (trap
# 128) so that the SM brings both ends back to Active, and data flows again
ibc() {
	sof_host_run "$1" "$SOFTOFED" status 2>/dev/null </dev/null |
		awk -v k="$2" '$1 == "ib_counters:" { for (i = 2; i + 1 <= NF; i += 2) if ($i == k) print $(i + 1) }'
}
fab_traps() {
	sof_host_run a "$SOFTOFED" fabric status 2>/dev/null </dev/null | sed -n 's/.* traps \([0-9]*\) .*/\1/p'
}
bpid=${SOF_HOST_DPID[b]}
bport=$(sof_host_run a "$SOFTOFED" fabric status 2>/dev/null </dev/null |
	sed -n 's/^real H2 attached [0-9.]*:\([0-9]*\) .*/\1/p')
# its link socket: the first (member 0) of the daemon's sockets on that port
ino=$(awk -v p=":$(printf '%04X' "${bport:-0}")\$" '$2 ~ p {print $10}' "/proc/$bpid/net/udp" | sort -n | head -n 1)
bfd=
for f in /proc/"$bpid"/fd/*; do
	[ "$(readlink "$f")" = "socket:[$ino]" ] && bfd=${f##*/} && break
done
deaf=
down0=$(ibc b link_downed)
traps0=$(fab_traps)
# again (at most 3 tries) if a HELLO of the fabric reached b between the
# helper's last read and b's first tick after it: no time-out then
for _ in 1 2 3; do
	if [ -z "$bport" ] || [ -z "$bfd" ] || ! kill -STOP "$bpid"; then
		break
	fi
	deaf=$(python3 "$SOF_ROOT/tests/hosts/ib_deaf.py" "$bpid" "$bfd" "$(sof_host_ip a):$PORT" 3.5 H2 2>&1)
	kill -CONT "$bpid" 2>/dev/null
	sleep 0.5
	[ "$(ibc b link_downed)" != "$down0" ] && break
done
t0=$(now_ms)
back=
for _ in $(seq 100); do
	if sof_ibf_line b | grep -q 'port 1 ACTIVE' && [ "$(ibc b link_downed)" != "$down0" ] &&
		sof_host_run a "$SOFTOFED" fabric port "$BSW" "$BPORT" 2>/dev/null </dev/null | grep -q '^port .* state ACTIVE '; then
		back=$(($(now_ms) - t0))
		break
	fi
	sleep 0.1
done
traps1=$(fab_traps)
sof_host_bg $N.pp2.srv b 30 "$SOFTOFED" run -- ibv_rc_pingpong -d sofib0 -p 18516 -n 50 -s 4096 --chk
sof_host_wait_listen b 18516 10 $N.pp2.srv >/dev/null 2>&1
sof_host_run a "$SOFTOFED" run -- timeout 20 ibv_rc_pingpong -d sofib0 -p 18516 -n 50 -s 4096 --chk \
	"$(sof_host_ip b)" >"$SOF_TMP/$N.pp2.cli" 2>&1 </dev/null
rc=$?
sof_wait $N.pp2.srv 10
if [ -n "$back" ] && [ "${traps1:-0}" -gt "${traps0:-0}" ] && [ "$rc" -eq 0 ] &&
	grep -q '409600 bytes in ' "$SOF_TMP/$N.pp2.cli"; then
	ok "$N/$T: b's daemon stalled 3.5 s, deaf to the fabric (${deaf#deaf } datagrams read away): its link timed out, the switch port retrained (traps $traps0 -> $traps1), both ends Active again in $back ms, ibv_rc_pingpong a <-> b after it"
else
	not_ok "$N/$T: stall" "b fd ${bfd:-?} port ${bport:-?} ($deaf); back ${back:-never} (link_downed $down0 -> $(ibc b link_downed), $BSW port $BPORT: $(sof_host_run a "$SOFTOFED" fabric port "$BSW" "$BPORT" 2>/dev/null </dev/null | head -n 1)), traps $traps0 -> $traps1, pingpong rc $rc; $(sof_ibf_line b | cut -c1-100)"
	sof_dump "$SOF_TMP/$N.pp2.cli"
fi

sof_kill $N.sm
sof_kill $N.fabric
sof_exit
