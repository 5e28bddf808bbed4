#!/bin/bash
# Captures of the software InfiniBand fabric (issue 19 item 6, issue 21's
# "decodes in tshark as IPoIB"): pair.net (H1 (a) - S1 - H2 (b)), both
# hosts real, Debian's OpenSM in a.
#
#   capture    `softofed capture` in a, started before OpenSM, takes every
#              link's packets through the bring-up, an ibv_rc_pingpong by
#              LID (no GID), perfquery, saquery and an IPoIB ping with a
#              known pattern; SIGTERM ends it with whole records
#   file       LINKTYPE_INFINIBAND (247); `softofed capture check`: every
#              record's LVer, PktLen, VCRC and ICRC right; SMPs, SA,
#              PerfMgt, RC and UD packets among them; one bit flipped in a
#              copy: check fails, naming the VCRC
#   tshark     the same packets as ERF type 21 (`softofed capture erf`,
#              what tshark 4.0 reads: it knows no LINKTYPE 247): no
#              malformed packet; SMPs (class 0x01, 0x81), SA (SubnAdm,
#              0x03), PerfMgt (0x04), RC SEND Only packets carrying the
#              pingpong's bytes, IPoIB datagrams (EtherType-encapsulated
#              UD payloads to tshark 4.0) with ARP and with ICMP whose
#              payload is the ping's pattern, each record's VCRC field what
#              check saw
#   link       a capture of one link (S1 port 2, to b), --erf at once: only
#              packets from or to b's LID
#   bounds     -c 5 ends by itself after 5 packets; -t 2 after 2 s with
#              nothing to take; another user (uid 65534) is refused
#
# Needs root (ip netns). Usage: tests/hosts/ibcapture.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/ib_fabric.sh
. "$(dirname "$0")/../ib_fabric.sh"
sof_init

T=pair
CAP=$SOF_TMP/ib.pcap
ERF=$SOF_TMP/ib.erf.pcap
fabst() { sof_host_run a "$SOFTOFED" fabric status 2>&1 </dev/null; }
# capture from before OpenSM: its sweep, the SA and everything after
ibf_before_sm() {
	sof_host_bg ibf.cap a 200 "$SOFTOFED" capture -w "$CAP" -c 1000000 -t 180
	for _ in $(seq 50); do
		fabst | grep -q '^capture: on' && break
		sleep 0.1
	done
}
sof_ibf_up pair H1,H2 2 || sof_exit
la=$(sof_ibf_lid a)
lb=$(sof_ibf_lid b)
if fabst | grep -q '^capture: on'; then
	ok "ibcapture/$T: a capture of every link runs from before OpenSM"
else
	not_ok "ibcapture/$T: capture start" "$(sof_dump "$(sof_out ibf.cap)")"
fi

# ---- another user may not capture -------------------------------------------------
out=$SOF_TMP/cap.nobody
if ! sof_host_run a setpriv --reuid 65534 --regid 65534 --clear-groups \
	"$SOFTOFED" capture -w /dev/null -c 1 -t 1 >"$out" 2>&1 </dev/null &&
	grep -q 'only root or the fabric' "$out"; then
	ok "ibcapture/$T: uid 65534 may not capture ($(head -n 1 "$out"))"
else
	not_ok "ibcapture/$T: unprivileged capture" "$(tr '\n' ' ' <"$out")"
fi

# ---- traffic: RC by LID, perfquery, saquery, IPoIB ping ---------------------------
sof_host_bg cap.pp.srv b 60 "$SOFTOFED" run -- ibv_rc_pingpong -d sofib0 -p 18516 -n 5 -s 64
sof_host_wait_listen b 18516 20 cap.pp.srv
pp=$SOF_TMP/cap.pp
sof_host_run a "$SOFTOFED" run -- timeout 40 ibv_rc_pingpong -d sofib0 -p 18516 -n 5 -s 64 \
	"$(sof_host_ip b)" >"$pp" 2>&1 </dev/null
pprc=$?
sof_wait cap.pp.srv 20
if [ $pprc = 0 ] && grep -q "remote address: *LID 0x$(printf %04x "$lb")" "$pp"; then
	ok "ibcapture/$T: ibv_rc_pingpong a -> b by LID (5 x 64 B)"
else
	not_ok "ibcapture/$T: rc_pingpong" "rc $pprc; $(tr '\n' ' ' <"$pp" | cut -c1-400)"
fi
pq=$SOF_TMP/cap.pq
sof_ibf_diag a "$pq" perfquery -C sofib0 "$lb" 1 || not_ok "ibcapture/$T: perfquery" "$(tr '\n' ' ' <"$pq")"
sa=$SOF_TMP/cap.sa
sof_ibf_diag b "$sa" saquery -C sofib0 NR || not_ok "ibcapture/$T: saquery" "$(tr '\n' ' ' <"$sa")"
ipok=1
for h in a b; do
	if ! sof_host_run "$h" "$SOFTOFED" ipoib up >"$SOF_TMP/cap.ipoib.$h" 2>&1 </dev/null; then
		ipok=0
		sof_dump "$SOF_TMP/cap.ipoib.$h"
	fi
	sof_host_run "$h" ip addr add "192.168.78.$(_sof_host_num "$h")/24" dev ib0
done
PATTERN=534f46544f464544 # "SOFTOFED"
ping=$SOF_TMP/cap.ping
if [ $ipok = 1 ] && sof_host_run a ping -n -c 3 -i 0.2 -W 3 -p $PATTERN "192.168.78.$(_sof_host_num b)" \
	>"$ping" 2>&1 </dev/null; then
	ok "ibcapture/$T: IPoIB ping a -> b with pattern 'SOFTOFED'"
else
	not_ok "ibcapture/$T: IPoIB ping" "$(tail -n 3 "$ping" 2>/dev/null | tr '\n' ' ')"
fi
for h in a b; do sof_host_run "$h" "$SOFTOFED" ipoib down >/dev/null 2>&1 </dev/null; done

# ---- end the capture, check every record ------------------------------------------
sof_kill ibf.cap
for _ in $(seq 30); do
	fabst | grep -q '^capture: off' && break
	sleep 0.1
done
st=$(fabst | grep '^capture:')
chk=$SOF_TMP/cap.check
"$SOFTOFED" capture check "$CAP" -v >"$chk" 2>&1
ckrc=$?
sum=$(tail -n 2 "$chk" | tr '\n' ' ')
lt=$(od -An -tu4 -j20 -N4 "$CAP" | tr -d ' ')
n=$(sed -n 's/^packets \([0-9]*\) .*/\1/p' "$chk")
kind() { tail -n 1 "$chk" | tr ' ' '\n' | grep -A1 -x "$1" | tail -n 1; }
if [ $ckrc = 0 ] && [ "$lt" = 247 ] && [ "${n:-0}" -gt 50 ] && grep -q "^packets $n ok $n " "$chk" &&
	[ "$(kind smp)" -gt 0 ] && [ "$(kind sa)" -gt 0 ] && [ "$(kind perf)" -gt 0 ] &&
	[ "$(kind rc)" -ge 20 ] && [ "$(kind ud)" -gt 0 ] && echo "$st" | grep -q 'capture: off'; then
	ok "ibcapture/$T: LINKTYPE 247, every VCRC and ICRC right: $sum; fabric: $st"
else
	not_ok "ibcapture/$T: capture file" "check rc $ckrc linktype $lt: $sum; fabric: $st"
	head -n 20 "$chk" | sed 's/^/#   /'
fi

# a bit flipped in the first packet: check finds it (VCRC) and fails
python3 -c '
import sys
d = bytearray(open(sys.argv[1], "rb").read())
d[24 + 16 + 40] ^= 1
open(sys.argv[2], "wb").write(d)' "$CAP" "$SOF_TMP/bad.pcap"
"$SOFTOFED" capture check "$SOF_TMP/bad.pcap" >"$chk.bad" 2>&1
bdrc=$?
if [ $bdrc = 1 ] && grep -q "^packets $n ok $((n - 1)) .* vcrc 1 " "$chk.bad"; then
	ok "ibcapture/$T: check finds a bit flipped in one packet (exit 1, vcrc 1)"
else
	not_ok "ibcapture/$T: check of a corrupted file" "rc $bdrc: $(head -n 1 "$chk.bad")"
fi

# SOF_CAP_KEEP=FILE: keep a copy of the capture
[ -n "${SOF_CAP_KEEP:-}" ] && cp "$CAP" "$SOF_CAP_KEEP"

# ---- tshark ------------------------------------------------------------------------
"$SOFTOFED" capture erf "$CAP" "$ERF" || not_ok "ibcapture/$T: erf" "conversion failed"
tsh() { timeout 60 tshark -n -r "$ERF" "$@" 2>/dev/null; }
tn=$(tsh | wc -l)
mal=$(tsh -Y '_ws.malformed || _ws.expert.severity >= error' | wc -l)
smp=$(tsh -Y 'infiniband.mad.mgmtclass == 0x01 || infiniband.mad.mgmtclass == 0x81' | wc -l)
sadm=$(tsh -Y 'infiniband.mad.mgmtclass == 0x03' | grep -c 'SubnAdm')
perf=$(tsh -Y 'infiniband.mad.mgmtclass == 0x04' | wc -l)
rcs=$(tsh -Y "infiniband.bth.opcode == 4 && infiniband.lrh.slid == $la && infiniband.lrh.dlid == $lb" | wc -l)
# the pingpong's SEND payload: 64 bytes, all 0x7b (rdma-core's pingpong buffer)
pay=$(tsh -Y "infiniband.bth.opcode == 4 && infiniband.lrh.slid == $la" -T fields -e data.data | sort | uniq -c | sort -rn | head -n 1)
want=$(printf '7b%.0s' $(seq 64))
# IPoIB: tshark 4.0 hands a UD payload that starts with an EtherType (the
# IPoIB header, RFC 4391) to the EtherType table: ARP, IPv4
icmp=$(tsh -Y "infiniband.deth && icmp.type == 8 && data.data contains 53:4f:46:54:4f:46:45:44" | wc -l)
arp=$(tsh -Y "infiniband.deth && arp.opcode == 1 && arp.dst.proto_ipv4 == 192.168.78.$(_sof_host_num b)" | wc -l)
# tshark's VCRC field against what check computed (the one check verified)
vc_t=$(tsh -T fields -e infiniband.variant.crc | head -n 20 | tr '\n' ' ')
vc_c=$(python3 - "$CAP" <<'E' 2>/dev/null
import struct, sys
d = open(sys.argv[1], 'rb').read()
o, out = 24, []
while o + 16 <= len(d) and len(out) < 20:
    n = struct.unpack_from('<I', d, o + 8)[0]
    out.append('0x%04x' % struct.unpack_from('>H', d, o + 16 + n - 2)[0])
    o += 16 + n
print(' '.join(out) + ' ')
E
)
if [ "$tn" = "$n" ] && [ "$mal" = 0 ] && [ "$smp" -gt 0 ] && [ "$sadm" -gt 0 ] && [ "$perf" -gt 0 ] &&
	[ "$rcs" -ge 5 ] && [ "${pay##* }" = "$want" ] && [ "$icmp" -ge 3 ] && [ "$arp" -ge 1 ] && [ "$vc_t" = "$vc_c" ]; then
	ok "ibcapture/$T: tshark $(tshark --version 2>/dev/null | head -n 1 | awk '{print $3}'): $tn packets, none malformed; SMP $smp, SubnAdm $sadm, PerfMgt $perf, RC SEND a->b $rcs with the 64 x 0x7b payload, IPoIB ARP who-has $arp, ICMP echo with 'SOFTOFED' $icmp; VCRC fields as on the wire"
else
	not_ok "ibcapture/$T: tshark" "packets $tn/$n malformed $mal smp $smp sa $sadm perf $perf rc $rcs payload '${pay:0:40}' icmp $icmp arp $arp vcrc '$vc_t' vs '$vc_c'"
	tsh -Y '_ws.malformed || _ws.expert.severity >= error' | head -n 5 | sed 's/^/#   /'
fi

# ---- one link, ERF at once ----------------------------------------------------------
LC=$SOF_TMP/link.pcap
sof_host_bg cap.link a 30 "$SOFTOFED" capture -w "$LC" -c 12 -t 20 --erf S1 2
sleep 0.5
for _ in 1 2 3; do sof_ibf_diag a "$pq" perfquery -C sofib0 "$lb" 1; done
sof_wait cap.link 25
lrc=$?
"$SOFTOFED" capture check "$LC" -v >"$chk" 2>&1
ckrc=$?
ln=$(sed -n 's/^packets \([0-9]*\) .*/\1/p' "$chk")
# directed-route SMPs (permissive LID 65535: OpenSM's light sweep) cross the
# link too
others=$(grep -E '^[0-9]+ vl' "$chk" | awk -v b="$lb" '$7 != b && $9 != b && !($7 == 65535 && $9 == 65535)' | wc -l)
lmal=$(timeout 60 tshark -n -r "$LC" -Y _ws.malformed 2>/dev/null | wc -l)
if [ $lrc = 0 ] && [ $ckrc = 0 ] && [ "$ln" = 12 ] && [ "$others" = 0 ] && [ "$lmal" = 0 ] &&
	[ "$(od -An -tu4 -j20 -N4 "$LC" | tr -d ' ')" = 197 ]; then
	ok "ibcapture/$T: S1 port 2 only (--erf, -c 12): 12 packets, each from or to b's LID $lb, CRCs right, tshark clean"
else
	not_ok "ibcapture/$T: one link" "rc $lrc check $ckrc packets $ln others $others malformed $lmal"
	head -n 14 "$chk" | sed 's/^/#   /'
fi

# ---- bounds: a count, a duration ------------------------------------------------------
sof_host_bg cap.c5 a 30 "$SOFTOFED" capture -w "$SOF_TMP/c5.pcap" -c 5 -t 25
sleep 0.5
sof_ibf_diag a "$pq" perfquery -C sofib0 "$lb" 1
sof_ibf_diag a "$pq" perfquery -C sofib0 "$lb" 1
sof_wait cap.c5 25
c5rc=$?
c5=$("$SOFTOFED" capture check "$SOF_TMP/c5.pcap" | head -n 1)
t0=$(now_ms)
sof_host_bg cap.t2 a 30 "$SOFTOFED" capture -w "$SOF_TMP/t2.pcap" -c 1000000 -t 2
sof_wait cap.t2 25
t2rc=$?
dt=$(($(now_ms) - t0))
if [ $c5rc = 0 ] && echo "$c5" | grep -q '^packets 5 ok 5 ' && [ $t2rc = 0 ] && [ $dt -ge 1900 ] &&
	[ $dt -lt 6000 ] && fabst | grep -q '^capture: off'; then
	ok "ibcapture/$T: -c 5 ended by itself with 5 packets; -t 2 ended after $dt ms"
else
	not_ok "ibcapture/$T: bounds" "c5 rc $c5rc '$c5'; t2 rc $t2rc after $dt ms; $(fabst | grep '^capture')"
fi
sof_exit
