#!/bin/bash
# The rest of infiniband-diags on sofib0 (issue 19, acceptance line 2),
# through our libibumad, with Debian's OpenSM as the SM: line3.net
# (H1 (a) - S1 - S2 - S3 - H3 (c), H2 (b) on S2), every host real. Each
# output is judged against the fabric the file gave (`softofed fabric
# status -v`: names, GUIDs, links):
#
#   iblinkinfo   in b: every Active link it shows is a link of the file,
#                every link of the file is shown Active, both ends
#   ibhosts / ibswitches  the file's CAs and switches with their GUIDs and
#                names; the switches' LIDs nonzero and distinct
#   ibtracert    from b, a's LID to c's: H1 -S1 -S2 -S3 -H3, each hop out
#                and in by the ports of the file
#   ibping       c runs the server (`ibping -S`, the vendor class 0x32
#                agent); b pings c's LID and c's port GUID: every pong, 0 %
#                loss, from c's LID
#   ibsysstat    c runs the server (`ibsysstat -S`, vendor class 0x33); b
#                asks c's LID for its host name, CPUs and a ping
#   smpdump      NodeInfo of c by LID and of b by directed route 0: CA,
#                the file's node GUIDs
#   ibportstate  query of c's port by LID: Active, LinkUp, its LID and SM
#                LID; of S2's port 3 (to S3): Active
#   ibaddr       b's own GID (the file's port GUID) and LID; c's by LID
#   perfquery    the PMA of an HCA (c's port, on QP1 of c's sofib0): an RC
#                ping-pong a <-> c of 200 x 4 KiB grows c's PortXmitData
#                and PortRcvData by at least its data, the extended
#                counters too; `perfquery -R` resets them (after: below
#                what one query moves)
#   ibqueryerrors  every node checked, no PMA query failure, no error
#   ibccquery    the congestion control agent of an HCA (c's daemon, QP1):
#                CACongestionSetting set by ibccconfig from b reads back;
#                perfquery -E answers from c's PMA
#   events       ibv_asyncwatch -d sofib0 in b, started before OpenSM:
#                LID_CHANGE, SM_CHANGE, then PORT_ACTIVE (once); one on
#                sof0 sees none; after b's link is cut, PORT_ERR
#   IsSM         a's PortInfo CapabilityMask (smpquery from b, ibstat in a)
#                has IsSM while OpenSM holds a's issm open (the issmN of
#                sofib0, umad_get_issm_path), b's has not; OpenSM stopped,
#                a's has not either; b holding its issm open (O_RDWR,
#                as OpenSM and softofed-sm, which do not wait for the
#                daemon's end) sets b's, which ibstat sees right after the
#                open, and right after the close not, and its SMA's trap
#                144 (at set and at clear) reaches a's OpenSM once each:
#                repressed, not repeated
#
# Needs root (ip netns). Usage: tests/hosts/ibfabric_diags.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/ib_fabric.sh
. "$(dirname "$0")/../ib_fabric.sh"
sof_init

T=line3
# b's events from before the SM: on sofib0, and on sof0 (which sees none)
ibf_before_sm() {
	sof_host_bg ibf.aw b 200 "$SOFTOFED" run -- stdbuf -oL ibv_asyncwatch -d sofib0
	sof_host_bg ibf.aw0 b 200 "$SOFTOFED" run -- stdbuf -oL ibv_asyncwatch -d sof0
	for _ in $(seq 50); do
		grep -q 'async event FD' "$(sof_out ibf.aw)" "$(sof_out ibf.aw0)" 2>/dev/null && break
		sleep 0.1
	done
}
sof_ibf_up line3 H1,H2,H3 3 || sof_exit
la=$(sof_ibf_lid a)
lb=$(sof_ibf_lid b)
lc=$(sof_ibf_lid c)

# the events OpenSM's bring-up raised on b's sofib0, none on sof0
aw=$(sof_out ibf.aw)
aw0=$(sof_out ibf.aw0)
ev() { grep -c "event_type IBV_EVENT_$1 ([0-9]*), port 1\$" "$2"; }
if [ "$(ev LID_CHANGE "$aw")" -ge 1 ] && [ "$(ev SM_CHANGE "$aw")" -ge 1 ] &&
	[ "$(ev PORT_ACTIVE "$aw")" = 1 ] && ! grep -q 'event_type' "$aw0" &&
	[ "$(grep -n PORT_ACTIVE "$aw" | cut -d: -f1)" -gt "$(grep -n LID_CHANGE "$aw" | head -n 1 | cut -d: -f1)" ]; then
	ok "ibfabric/$T: ibv_asyncwatch -d sofib0 in b: $(grep -o 'IBV_EVENT_[A-Z_]*' "$aw" | tr '\n' ' ')as OpenSM set LID, SM LID and Active; sof0's contexts got none"
else
	not_ok "ibfabric/$T: port events" "sofib0: $(tr '\n' ' ' <"$aw") / sof0: $(tr '\n' ' ' <"$aw0")"
fi

# IsSM while OpenSM holds a's issm (sofib0's issmN, by umad_get_issm_path)
capm() { sed -n 's/^CapMask:\.*\(0x[0-9a-f]*\).*/\1/p' "$1"; }
isa=$SOF_TMP/pi.a
sof_ibf_diag b "$isa" smpquery -C sofib0 portinfo "$la"
isb=$SOF_TMP/pi.b
sof_ibf_diag b "$isb" smpquery -C sofib0 portinfo "$lb"
ista=$SOF_TMP/ibstat.a
sof_ibf_diag a "$ista" ibstat sofib0
am=$(capm "$isa")
bm=$(capm "$isb")
sm=$(sed -n 's/.*Capability mask: \(0x[0-9a-f]*\)$/\1/p' "$ista")
if [ -n "$am" ] && [ -n "$bm" ] && [ -n "$sm" ] && [ $((am & 2)) = 2 ] && [ $((bm & 2)) = 0 ] &&
	[ $((sm & 2)) = 2 ]; then
	ok "ibfabric/$T: IsSM while OpenSM runs: a's PortInfo CapMask $am (ibstat $sm), b's $bm without it"
else
	not_ok "ibfabric/$T: IsSM" "a $am (ibstat $sm), b $bm"
fi

# b holds its sofib0's issm open for 3 s, as an SM would (the issmN whose
# sysfs ibdev is sofib0): IsSM in b's port, and its SMA sends trap 144 to
# a's OpenSM at the change and again when it is closed, each repeated
# until OpenSM represses it
ibc() {
	sof_host_run "$1" "$SOFTOFED" status 2>/dev/null </dev/null |
		awk -v k="$2" '$1 == "ib_counters:" { for (i = 2; i + 1 <= NF; i += 2) if ($i == k) print $(i + 1) }'
}
t0=$(ibc b traps)
r0=$(ibc b traps_repressed)
n0=$(grep -c "Received Generic Notice type:4 num:144 .* from LID:$lb " "$IBF_SMLOG")
# shellcheck disable=SC2016 # for the inner shell
sof_host_bg ibf.issm b 30 "$SOFTOFED" run -- sh -c 'for d in /sys/class/infiniband_mad/issm*; do
	[ "$(cat "$d/ibdev")" = sofib0 ] && exec 3<>"/dev/infiniband/${d##*/}" && echo "held ${d##*/}" &&
		ibstat sofib0 | grep "Capability mask" && sleep 3 && exit 0
done; exit 1'
for _ in $(seq 40); do
	bm=$(sof_ibf_diag b "$isb" smpquery -C sofib0 portinfo "$lb" && capm "$isb")
	[ -n "$bm" ] && [ $((bm & 2)) = 2 ] && break
	sleep 0.1
done
sof_wait ibf.issm 10
rc=$?
# the moment it is closed (the holder reaped), no IsSM
sof_ibf_diag b "$SOF_TMP/ibstat.b" ibstat sofib0
hm=$(sed -n 's/.*Capability mask: \(0x[0-9a-f]*\)$/\1/p' "$(sof_out ibf.issm)")
hm2=$(sed -n 's/.*Capability mask: \(0x[0-9a-f]*\)$/\1/p' "$SOF_TMP/ibstat.b")
for _ in $(seq 60); do
	[ "$(ibc b traps_repressed)" = $((r0 + 2)) ] 2>/dev/null && break
	sleep 0.1
done
sleep 1.5 # a trap not repressed would come again each half second
n144=$(($(grep -c "Received Generic Notice type:4 num:144 .* from LID:$lb " "$IBF_SMLOG") - n0))
sof_ibf_diag b "$isb" smpquery -C sofib0 portinfo "$lb"
bm2=$(capm "$isb")
if [ "$rc" = 0 ] && [ -n "$t0" ] && [ -n "$bm" ] && [ $((bm & 2)) = 2 ] && [ -n "$bm2" ] && [ $((bm2 & 2)) = 0 ] &&
	[ -n "$hm" ] && [ $((hm & 2)) = 2 ] && [ -n "$hm2" ] && [ $((hm2 & 2)) = 0 ] &&
	[ "$(ibc b traps)" = $((t0 + 2)) ] && [ "$(ibc b traps_repressed)" = $((r0 + 2)) ] && [ "$n144" = 2 ]; then
	ok "ibfabric/$T: b held its $(sed -n 's/^held //p' "$(sof_out ibf.issm)"): ibstat $hm right after the open, $hm2 right after the close; CapMask $bm (IsSM) then $bm2; its two traps 144 reached a's OpenSM once each and were repressed (b: traps $(ibc b traps), repressed $(ibc b traps_repressed))"
else
	not_ok "ibfabric/$T: issm in b, trap 144" "holder rc $rc ($(cat "$(sof_out ibf.issm)")); ibstat after the open $hm, after the close $hm2; CapMask $bm then $bm2; b traps $t0 -> $(ibc b traps), repressed $r0 -> $(ibc b traps_repressed); OpenSM logged $n144"
fi

out=$SOF_TMP/iblinkinfo
sof_ibf_diag b "$out" iblinkinfo -C sofib0
cmp=$(python3 - "$IBF_FAB" "$out" <<'PY'
import re, sys
fab, il = open(sys.argv[1]).read(), open(sys.argv[2]).read()
links, cur = set(), None
for line in fab.splitlines():
    m = re.match(r'^(Switch|Hca) "([^"]+)"', line)
    if m:
        cur = m.group(2)
        continue
    m = re.match(r'^\[(\d+)\] "([^"]+)"\[(\d+)\]', line)
    if m and cur:
        links.add((cur, int(m.group(1)), m.group(2), int(m.group(3))))
seen, cur, bad = set(), None, []
for line in il.splitlines():
    m = re.match(r'^CA: (\S+):$', line) or re.match(r'^Switch: 0x[0-9a-f]+ (\S+):$', line)
    if m:
        cur = m.group(1)
        continue
    m = re.match(r'^\s+(?:0x[0-9a-f]+\s+)?\d+\s+(\d+)\[\s*\]\s+==\(.*\)==>\s+\d+\s+(\d+)\[\s*\]\s+"([^"]+)"', line)
    if m and cur:
        if 'Active/' not in line or 'LinkUp' not in line:
            bad.append(line.strip())
        seen.add((cur, int(m.group(1)), m.group(3), int(m.group(2))))
if links and seen == links and not bad:
    print("same %d link ends, all Active/LinkUp" % len(links))
else:
    print("DIFF only-file %s only-iblinkinfo %s not-active %s" %
          (sorted(links - seen), sorted(seen - links), bad))
PY
)
if [ "${cmp#same}" != "$cmp" ]; then
	ok "ibfabric/$T: iblinkinfo in b: $cmp, as the file"
else
	not_ok "ibfabric/$T: iblinkinfo" "$cmp"
	sof_dump "$out"
fi

# ibhosts / ibswitches: GUID and name of each, as the file
fabset() { sed -n "s/^$1 \"\\([^\"]*\\)\" [0-9]* guid \\(0x[0-9a-f]*\\).*/\\2 \\1/p" "$IBF_FAB" | sort; }
out=$SOF_TMP/ibhosts
sof_ibf_diag b "$out" ibhosts -C sofib0
got=$(sed -n 's/^Ca\s*: \(0x[0-9a-f]*\) ports 1 "\([^"]*\)"$/\1 \2/p' "$out" | sort)
want=$(fabset Hca)
if [ -n "$want" ] && [ "$got" = "$want" ]; then
	ok "ibfabric/$T: ibhosts: $(echo "$got" | tr '\n' ' ')"
else
	not_ok "ibfabric/$T: ibhosts" "got [$got] want [$want]"
fi
out=$SOF_TMP/ibswitches
sof_ibf_diag b "$out" ibswitches -C sofib0
got=$(sed -n 's/^Switch\s*: \(0x[0-9a-f]*\) ports 8 "\([^"]*\)" base port 0 lid [1-9][0-9]* lmc 0$/\1 \2/p' "$out" | sort)
lids=$(sed -n 's/.* lid \([0-9]*\) lmc.*/\1/p' "$out" | sort -u | wc -l)
want=$(fabset Switch)
if [ -n "$want" ] && [ "$got" = "$want" ] && [ "$lids" = 3 ]; then
	ok "ibfabric/$T: ibswitches: $(echo "$got" | tr '\n' ' ')with 3 distinct LIDs"
else
	not_ok "ibfabric/$T: ibswitches" "got [$got] want [$want], $lids LIDs"
fi

# ibtracert a -> c: the names and ports of every hop
out=$SOF_TMP/ibtracert
sof_ibf_diag b "$out" ibtracert -C sofib0 "$la" "$lc"
path=$(sed -n 's/^\[\([0-9]*\)\] -> [a-z]* port {0x[0-9a-f]*}\[\([0-9]*\)\] lid [0-9-]* "\([^"]*\)"$/\1>\3[\2]/p' "$out" | tr '\n' ' ')
if [ "$path" = '1>S1[1] 2>S2[2] 3>S3[2] 1>H3[1] ' ] && grep -q "^From ca .* lid $la-$la \"H1\"" "$out" &&
	grep -q "^To ca .* lid $lc-$lc \"H3\"" "$out"; then
	ok "ibfabric/$T: ibtracert LID $la -> $lc: H1 $path(the file's ports)"
else
	not_ok "ibfabric/$T: ibtracert" "path [$path]: $(tr '\n' ' ' <"$out" | cut -c1-600)"
fi

# ibping: server in c, client in b, by LID and by port GUID
cpg=$(printf '0x%016x' "$(($(sof_ibf_guid H3) + 1))")
sof_host_bg ibf.pingsrv c 30 "$SOFTOFED" run -- ibping -S -C sofib0
sleep 1
out=$SOF_TMP/ibping
sof_ibf_diag b "$out" ibping -C sofib0 -c 5 "$lc"
out2=$SOF_TMP/ibping.g
sof_ibf_diag b "$out2" ibping -C sofib0 -c 3 -G "$cpg"
sof_kill ibf.pingsrv
if [ "$(grep -c "^Pong from .* (Lid $lc): time" "$out")" = 5 ] &&
	grep -q '^5 packets transmitted, 5 received, 0% packet loss' "$out" &&
	grep -q '^3 packets transmitted, 3 received, 0% packet loss' "$out2"; then
	ok "ibfabric/$T: ibping b -> c (server ibping -S in c): 5/5 by LID $lc, 3/3 by port GUID $cpg"
else
	not_ok "ibfabric/$T: ibping" "$(tr '\n' ' ' <"$out" | cut -c1-400) / $(tr '\n' ' ' <"$out2" | cut -c1-300)"
fi

# ibsysstat: its server in c (vendor class 0x33 agent), b asks by LID for
# c's host name, CPUs and a ping; smpdump from b reads c's NodeInfo (LID
# routed) and its own (directed route 0): NodeType CA, the file's GUIDs
sof_host_bg ibf.statsrv c 30 "$SOFTOFED" run -- ibsysstat -S -C sofib0
sleep 1
checks=()
out=$SOF_TMP/ibsysstat
sof_ibf_diag b "$out" ibsysstat -C sofib0 "$lc" host
# the server answers "nodename.domainname" (uname(2): "(none)" when unset)
grep -qxF "$(cat /proc/sys/kernel/hostname).$(cat /proc/sys/kernel/domainname)" "$out" ||
	checks+=("host: $(tr '\n' ' ' <"$out" | cut -c1-200)")
sof_ibf_diag b "$out" ibsysstat -C sofib0 "$lc" cpu
[ "$(grep -c '^cpu [0-9]*: model .* MHZ' "$out")" = "$(grep -c '^processor' /proc/cpuinfo)" ] ||
	checks+=("cpu: $(tr '\n' ' ' <"$out" | cut -c1-200)")
sof_ibf_diag b "$out" ibsysstat -C sofib0 "$lc" ping
grep -q '^sysstat ping succeeded' "$out" || checks+=("ping: $(tr '\n' ' ' <"$out" | cut -c1-200)")
sof_kill ibf.statsrv
# smpdump's hex words, first 64 bytes: NodeType at byte 2, NodeGUID at 12
nodeinfo() { head -n 4 "$1" | tr -d ' \n'; }
out=$SOF_TMP/smpdump
sof_ibf_diag b "$out" smpdump -C sofib0 "$lc" 0x11
hex=$(nodeinfo "$out")
[ "${hex:4:2}" = 01 ] && [ "0x${hex:24:16}" = "$(sof_ibf_guid H3)" ] ||
	checks+=("smpdump LID $lc NodeInfo: $hex")
sof_ibf_diag b "$out" smpdump -C sofib0 -D 0 0x11
hex=$(nodeinfo "$out")
[ "${hex:4:2}" = 01 ] && [ "0x${hex:24:16}" = "$(sof_ibf_guid H2)" ] ||
	checks+=("smpdump -D 0 NodeInfo: $hex")
if [ ${#checks[@]} -eq 0 ]; then
	ok "ibfabric/$T: ibsysstat b -> c (server ibsysstat -S in c): host, cpu, ping; smpdump NodeInfo of c by LID and of b by directed route: CA, the file's node GUIDs"
else
	not_ok "ibfabric/$T: ibsysstat / smpdump" "${checks[*]}"
fi

# ibportstate query: c's port, S2's port 3
out=$SOF_TMP/ibportstate
sof_ibf_diag b "$out" ibportstate -C sofib0 "$lc" 1 query
s2lid=$(sed -n 's/^Switch "S2" 8 guid .* lid \([0-9]*\)$/\1/p' "$IBF_FAB")
out2=$SOF_TMP/ibportstate.sw
sof_ibf_diag b "$out2" ibportstate -C sofib0 "$s2lid" 3 query
if grep -q '^LinkState:\.*Active$' "$out" && grep -q '^PhysLinkState:\.*LinkUp$' "$out" &&
	grep -q "^Lid:\.*$lc\$" "$out" && grep -q "^SMLid:\.*$la\$" "$out" &&
	grep -q '^LinkState:\.*Active$' "$out2" && grep -q '^PhysLinkState:\.*LinkUp$' "$out2"; then
	ok "ibfabric/$T: ibportstate query: c's port (Active, LinkUp, Lid $lc, SMLid $la), S2 ($s2lid) port 3 Active"
else
	not_ok "ibfabric/$T: ibportstate" "$(tr '\n' ' ' <"$out" | cut -c1-400) / $(tr '\n' ' ' <"$out2" | cut -c1-300)"
fi

# ibaddr: b's own, c's by LID
gid() { printf 'fe80::%x:%x' "$(($1 >> 16))" "$(($1 & 0xffff))"; }
bpg=$(($(sof_ibf_guid H2) + 1))
out=$SOF_TMP/ibaddr
sof_ibf_diag b "$out" ibaddr -C sofib0
out2=$SOF_TMP/ibaddr.c
sof_ibf_diag b "$out2" ibaddr -C sofib0 "$lc"
if grep -q "^GID $(gid "$bpg") LID start $(printf 0x%x "$lb") end $(printf 0x%x "$lb")\$" "$out" &&
	grep -q "^GID $(gid "$cpg") LID start $(printf 0x%x "$lc") end $(printf 0x%x "$lc")\$" "$out2"; then
	ok "ibfabric/$T: ibaddr: b $(cat "$out"), c $(cat "$out2")"
else
	not_ok "ibfabric/$T: ibaddr" "$(cat "$out") / $(cat "$out2") (want $(gid "$bpg"), $(gid "$cpg"))"
fi

# perfquery of c's HCA port (its PMA on QP1) around an RC ping-pong a <-> c
pq() { # pq FILE FIELD
	sed -n "s/^$2:\\.*\\([0-9]*\\)\$/\\1/p" "$1"
}
p0=$SOF_TMP/perf0
sof_ibf_diag b "$p0" perfquery -C sofib0 "$lc" 1
x0=$SOF_TMP/perfx0
sof_ibf_diag b "$x0" perfquery -x -C sofib0 "$lc" 1
ppsrv=$(sof_out ibf.pp.srv)
ppcli=$SOF_TMP/pp.cli
sof_host_bg ibf.pp.srv c 60 "$SOFTOFED" run -- ibv_rc_pingpong -d sofib0 -p 18515 -n 200 -s 4096 --chk
sof_host_wait_listen c 18515 10 ibf.pp.srv >/dev/null 2>&1
sof_host_run a "$SOFTOFED" run -- timeout 40 ibv_rc_pingpong -d sofib0 -p 18515 -n 200 -s 4096 --chk \
	"$(sof_host_ip c)" >"$ppcli" 2>&1 </dev/null
rc=$?
sof_wait ibf.pp.srv 20
p1=$SOF_TMP/perf1
sof_ibf_diag b "$p1" perfquery -C sofib0 "$lc" 1
x1=$SOF_TMP/perfx1
sof_ibf_diag b "$x1" perfquery -x -C sofib0 "$lc" 1
dx=$(($(pq "$p1" PortXmitData) - $(pq "$p0" PortXmitData)))
dr=$(($(pq "$p1" PortRcvData) - $(pq "$p0" PortRcvData)))
dxp=$(($(pq "$p1" PortXmitPkts) - $(pq "$p0" PortXmitPkts)))
ex=$(($(pq "$x1" PortXmitData) - $(pq "$x0" PortXmitData)))
er=$(($(pq "$x1" PortRcvData) - $(pq "$x0" PortRcvData)))
# 200 messages of 4 KiB each way: 204800 four-byte words, 200 packets
if [ "$rc" -eq 0 ] && grep -q '1638400 bytes in ' "$ppcli" && [ "$dx" -ge 204800 ] && [ "$dr" -ge 204800 ] &&
	[ "$dxp" -ge 200 ] && [ "$ex" -ge 204800 ] && [ "$er" -ge 204800 ] && [ "$dx" -lt 300000 ]; then
	ok "ibfabric/$T: perfquery of c's HCA port: the ping-pong a <-> c grew PortXmitData by $dx, PortRcvData by $dr words, PortXmitPkts by $dxp (extended: $ex, $er)"
else
	not_ok "ibfabric/$T: perfquery HCA" "pingpong rc $rc; deltas xmit $dx rcv $dr pkts $dxp ext $ex $er"
	sof_dump "$p0" "$p1" "$ppcli"
fi
out=$SOF_TMP/perfR
sof_ibf_diag b "$out" perfquery -R -C sofib0 "$lc" 1
p2=$SOF_TMP/perf2
sof_ibf_diag b "$p2" perfquery -C sofib0 "$lc" 1
x2=$SOF_TMP/perfx2
sof_ibf_diag b "$x2" perfquery -x -C sofib0 "$lc" 1
if [ -n "$(pq "$p2" PortXmitData)" ] && [ "$(pq "$p2" PortXmitData)" -lt 1000 ] &&
	[ "$(pq "$p2" PortRcvData)" -lt 1000 ] && [ "$(pq "$x2" PortXmitData)" -lt 1000 ] &&
	[ "$(pq "$x2" PortRcvData)" -lt 1000 ] && [ "$(pq "$p1" PortXmitData)" -ge 204800 ]; then
	ok "ibfabric/$T: perfquery -R of c's port: PortXmitData $(pq "$p1" PortXmitData) -> $(pq "$p2" PortXmitData), extended $(pq "$x1" PortXmitData) -> $(pq "$x2" PortXmitData)"
else
	not_ok "ibfabric/$T: perfquery -R" "$(tr '\n' ' ' <"$p2" | cut -c1-900)"
fi

# the HCA's congestion control agent (IBA annex A10) and PMA details
cs=$SOF_TMP/ccs
sof_ibf_diag b "$SOF_TMP/ccset" ibccconfig -C sofib0 CACongestionSetting "$lc" 1 0x2 90 2 3 1
sof_ibf_diag b "$cs" ibccquery -C sofib0 CACongestionSetting "$lc"
sof_ibf_diag b "$SOF_TMP/rerr" perfquery -E -C sofib0 "$lc" 1
if grep -q '^Port_Control:\.*0x0001$' "$cs" && grep -q '^Control_Map:\.*0x0002$' "$cs" &&
	grep -A4 '^SL:\.*1$' "$cs" | tr '\n' ' ' | grep -q 'CCTI_Timer:\.*90 CCTI_Increase:\.*2 ' &&
	grep -q '^PortMalformedPktErrors:\.*0$' "$SOF_TMP/rerr"; then
	ok "ibfabric/$T: ibccconfig / ibccquery CACongestionSetting of c's HCA from b (its daemon's CC agent), perfquery -E of c's port"
else
	not_ok "ibfabric/$T: HCA congestion control" "$(tr '\n' ' ' <"$cs" | cut -c1-300) $(tr '\n' ' ' <"$SOF_TMP/rerr" | cut -c1-300)"
fi

out=$SOF_TMP/ibqe
sof_ibf_diag b "$out" ibqueryerrors -C sofib0
if grep -q '^## Summary: 6 nodes checked, 0 bad nodes found' "$out" &&
	grep -q 'ports checked, 0 ports have errors beyond threshold' "$out" &&
	! grep -q -i 'failed\|PMA query failures' "$out"; then
	ok "ibfabric/$T: ibqueryerrors: $(grep -h '^## Summary\|ports checked' "$out" | tr '\n' ' ' | tr -s ' #')"
else
	not_ok "ibfabric/$T: ibqueryerrors" "$(tr '\n' ' ' <"$out" | cut -c1-900)"
fi

# OpenSM gone: its issm closed, IsSM clear within a tick or two
sof_kill ibf.sm
for _ in $(seq 30); do
	sof_ibf_diag a "$ista" ibstat sofib0
	sm=$(sed -n 's/.*Capability mask: \(0x[0-9a-f]*\)$/\1/p' "$ista")
	[ -n "$sm" ] && [ $((sm & 2)) = 0 ] && break
	sleep 0.2
done
sof_ibf_diag b "$isa" smpquery -C sofib0 portinfo "$la"
am=$(capm "$isa")
if [ -n "$sm" ] && [ $((sm & 2)) = 0 ] && [ -n "$am" ] && [ $((am & 2)) = 0 ]; then
	ok "ibfabric/$T: OpenSM stopped: IsSM clear (a's CapMask $am, ibstat $sm)"
else
	not_ok "ibfabric/$T: IsSM after OpenSM" "a $am (ibstat $sm)"
fi

# b's link cut: its contexts hear IBV_EVENT_PORT_ERR
sof_host_run a "$SOFTOFED" fabric link S2 1 down >"$SOF_TMP/cut" 2>&1 </dev/null
for _ in $(seq 50); do
	[ "$(ev PORT_ERR "$aw")" -ge 1 ] && break
	sleep 0.1
done
if [ "$(ev PORT_ERR "$aw")" -ge 1 ] && ! grep -q 'event_type' "$aw0"; then
	ok "ibfabric/$T: b's link cut (S2 port 1): ibv_asyncwatch -d sofib0 got IBV_EVENT_PORT_ERR"
else
	not_ok "ibfabric/$T: PORT_ERR" "$(cat "$SOF_TMP/cut"); $(tr '\n' ' ' <"$aw")"
fi

sof_kill ibf.aw
sof_kill ibf.aw0
sof_kill ibf.fabric
sof_exit
