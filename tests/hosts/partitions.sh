#!/bin/bash
# Partitions (issue 19 item 1, issue 20 item 5, issue 21 child interfaces):
# three real hosts a, b, c on one switch (H1, H2, H3 on S1), the SM in a
# with one partitions.conf — Debian's OpenSM (-P FILE), or with
# SOF_SM=softofed our softofed-sm (--partitions FILE; partitions_sm.sh):
#
#   Default=0x7fff, ipoib : ALL=full ;
#   p8001=0x8001, ipoib, sl=3 : A=full, B=full ;    c is not a member
#   p8002=0x8002, ipoib : A=limited, B=limited, C=full ;
#
#   tables      smpquery pkeys of each host: its partitions, full bit as set;
#               saquery PKeyTableRecord of each host's LID the same table;
#               ibv_query_pkey / ibv_devinfo -v: ours report what the SM set
#   rc 8001     ib_send_lat --pkey_index (index of 0x8001 in each table) by
#               LID a <-> b: works
#   c -> a      c (default P_Key) to a's QP in 0x8001: the client fails
#               (retry exceeded), a counts P_Key violations (its port's
#               counter, `softofed status`; smpquery portinfo PkeyViolations)
#   limited     a and b, both limited members of 0x8002: fails; a (limited)
#               with c (full): works
#   switch      c sending with a P_Key its switch port does not carry (an
#               empty table index): dropped by S1 (inbound enforcement,
#               PortRcvConstraintErrors of S1's port to c grows)
#   ipoib       `softofed ipoib up --pkey 0x8001` makes ib0.8001 in a and b
#               (its QP on 0x8001's index); ping a <-> b over it, `softofed
#               status` lists it with its packets; in c, not a
#               member, ib0.8001 does not come up, and c's ib0 (default
#               partition) cannot reach a's ib0.8001 address
#   rdma cm     over ib0.8001 by its addresses, under a capture of the
#               fabric: rping -V, ib_send_bw -R, udaddy, mckey with a
#               send-only sender (-o); every a<->b RC and UD packet and CM
#               MAD in P_Key 0x8001, the REQs and the SA PathRecords name
#               it, the sender's MCMemberRecord Set and Delete JoinState 8
#               (b's 1), both in 0x8001, after a Get of each port's
#               record in 0x8001's broadcast group: the Sets ask its SL 3,
#               the group has it, mckey's datagrams carry it; ucmatose; a REQ by AF_IB
#               (progs/cm_ipoibreq) for rping's listener on a's ib0.8001
#               address: in P_Key 0xffff (from c) rejected, in 0x8001 (from
#               b) accepted; c (ib0, default partition) cannot reach a's
#               ib0.8001 address (ADDR_ERROR)
#   qos         the SA's PathRecord in 0x8001 has the partition's SL 3 and
#               PacketLifeTime 18 (OpenSM's default, ours): the REQs carry
#               SL 3 and local ACK timeout 19, the RC packets SL 3 in their
#               LRH, rdma_init_qp_attr gives ah_attr.sl 3 and timeout 19
#   ipv6        ib0.8001 with fd81::2/3: ping -6; an AF_IB REQ with an IPv6
#               A11 header for rping's listener on fd81::2: from c in
#               0xffff rejected, from b in 0x8001 accepted; rping over IPv6
#   ipoib cm    ib0.8001 in connected mode: a 30000-byte ping goes over RC,
#               the REQ for RFC 4755's service and every RC packet in 0x8001;
#               progs/cm_ipoibreq to a's service: from c in 0xffff
#               rejected, from b in 0x8001 accepted
#   limited     ib0.8002 in a and b (limited members) and c (full): all come
#               up; limited <-> full pings, limited <-> limited does not
#   send-only   the SA's ClassPortInfo has CapabilityMask2 bit 12 (saquery
#               -c); IPoIB datagrams to a group ib0.8001 did not join join
#               it send-only (JoinState 8); with our SM only, restarted as
#               an SA without the bit ($SOFTOFED_SM_SA_CAP_MASK2=0): IPoIB
#               joins such a group as a full member (1), and mckey -o fails
#               (EOPNOTSUPP, as the kernel's rdma_cm refuses it)
#
# Needs root (ip netns). Usage: [SOF_SM=softofed] tests/hosts/partitions.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_init

case ${SOF_SM:-opensm} in
opensm) N=partitions/opensm PORT=7475 ;;
softofed) N=partitions/sm PORT=7477 ;;
*)
	not_ok "partitions: SOF_SM" "opensm or softofed, not '$SOF_SM'"
	exit 1
	;;
esac
REQ=$SOF_BUILD_DIR/tests/cm_ipoibreq
[ -x "$REQ" ] || REQ=$SOF_ROOT/build/tests/cm_ipoibreq
FABRIC=$(dirname "$SOFTOFED")/softofed-fabric
[ -x "$FABRIC" ] || FABRIC=$SOF_ROOT/build/bin/softofed-fabric
[ -x "$(dirname "$SOFTOFED")/softofed-ipoib" ] || export SOFTOFED_IPOIB=$SOF_ROOT/build/bin/softofed-ipoib
TOPO=$SOF_TMP/star3.net
cat >"$TOPO" <<'EOF'
Switch	8 "S1"
[1]	"H1"[1]
[2]	"H2"[1]
[3]	"H3"[1]

Hca	1 "H1"
[1]	"S1"[1]

Hca	1 "H2"
[1]	"S1"[2]

Hca	1 "H3"
[1]	"S1"[3]
EOF
SOF_HOST_UP_ARGS[a]="--ib-fabric $(sof_host_ip a):$PORT --ib-node H1"
SOF_HOST_UP_ARGS[b]="--ib-fabric $(sof_host_ip a):$PORT --ib-node H2"
SOF_HOST_UP_ARGS[c]="--ib-fabric $(sof_host_ip a):$PORT --ib-node H3"
sof_hosts_up 3 || sof_exit
IBF_HOSTS="a b c"
# shellcheck source=tests/ib_fabric.sh
. "$SOF_ROOT/tests/ib_fabric.sh"

sof_host_bg pk.fabric a 280 "$FABRIC" "$TOPO" --listen "$(sof_host_ip a):$PORT" --real H1,H2,H3
if ! sof_wait_for 10 sof_ibf_all_in INIT; then
	not_ok "$N: attach" "$(sof_ibf_line a) / $(sof_ibf_line b) / $(sof_ibf_line c)"
	sof_dump "$(sof_out pk.fabric)"
	sof_exit
fi

pguid() { sof_host_run "$1" "$SOFTOFED" run -- ibstat -p sofib0 2>/dev/null </dev/null | head -n 1; }
ga=$(pguid a)
gb=$(pguid b)
gc=$(pguid c)
CONF=$SOF_TMP/partitions.conf
cat >"$CONF" <<EOF
# issue 19/20/21 partitions: c is not in 0x8001; a and b are limited in 0x8002
Default=0x7fff, ipoib : ALL=full ;
p8001=0x8001, ipoib, sl=3 :
	$ga=full,
	$gb=full ;
p8002=0x8002, ipoib : $ga=limited, $gb=limited, $gc=full ;
EOF

if [ "$N" = partitions/opensm ]; then
	smlog=$SOF_TMP/pk.opensm.log
	# -Q: OpenSM gives a partition's sl= to its PathRecords only with QoS on
	sof_host_bg pk.sm a 260 "$SOFTOFED" run -- opensm -g "$ga" -f "$smlog" -d 0 -s 2 -D 0x87 -Q -P "$CONF"
else
	smlog=$(sof_out pk.sm)
	# as `softofed sm`; run.sh's ASan mix has the daemon and the tool only
	SMBIN=$(dirname "$SOFTOFED")/softofed-sm
	[ -x "$SMBIN" ] || SMBIN=$SOF_ROOT/build/bin/softofed-sm
	sof_host_bg pk.sm a 260 "$SOFTOFED" run -- "$SMBIN" -C sofib0 -v --partitions "$CONF"
fi
if sof_wait_for 60 sof_ibf_subnet_up "$smlog"; then
	ok "$N: SUBNET UP with $CONF, every sofib0 Active"
else
	not_ok "$N: SUBNET UP" "$(grep -c ERR "$smlog" 2>/dev/null) errors"
	tail -n 40 "$smlog" | cut -c1-200 | sed "s/^/#   sm: /"
	sof_exit
fi
IBF_FAB=$SOF_TMP/pk.fabric.v
sof_host_run a "$SOFTOFED" fabric status -v >"$IBF_FAB" 2>&1 </dev/null
la=$(sof_ibf_lid a)
lb=$(sof_ibf_lid b)
lc=$(sof_ibf_lid c)

# ---- the tables ---------------------------------------------------------------
# the P_Keys of host H's table as smpquery shows them (non-zero, in order)
pkeys_of() {
	local out=$SOF_TMP/pk.smp.$1
	sof_ibf_diag a "$out" smpquery -C sofib0 pkeys "$2"
	sed -n 's/^ *[0-9]*: *//p' "$out" | tr -s ' \t' '\n' | grep '^0x' | grep -v '^0x0000$' | tr '\n' ' '
}
# the index of P_Key K (with its membership bit) in a table "T"
index_of() {
	local i=0 k
	for k in $2; do
		[ "$k" = "$1" ] && {
			echo "$i"
			return 0
		}
		i=$((i + 1))
	done
	return 1
}
# the tables may take a sweep after SUBNET UP
for _ in $(seq 50); do
	ta=$(pkeys_of a "$la")
	tc=$(pkeys_of c "$lc")
	index_of 0x8001 "$ta" >/dev/null && index_of 0x8002 "$tc" >/dev/null && break
	sleep 0.2
done
tb=$(pkeys_of b "$lb")
sorted() { tr ' ' '\n' <<<"$1" | grep . | sort | tr '\n' ' '; }
if [ "$(sorted "$ta")" = "0x0002 0x8001 0xffff " ] && [ "$(sorted "$tb")" = "0x0002 0x8001 0xffff " ] &&
	[ "$(sorted "$tc")" = "0x8002 0xffff " ]; then
	ok "$N: smpquery pkeys: a [$ta] b [$tb] c [$tc]"
else
	not_ok "$N: smpquery pkeys" "a [$ta] b [$tb] c [$tc]"
fi
ia=$(index_of 0x8001 "$ta")
ib=$(index_of 0x8001 "$tb")
ia2=$(index_of 0x0002 "$ta")
ib2=$(index_of 0x0002 "$tb")
ic2=$(index_of 0x8002 "$tc")

# every PKeyTableRecord from the SA (OpenSM answers them only with the
# SM_Key, 1 by default, as ours): a LID's record's P_Keys
pktr=$SOF_TMP/pk.pktr
sof_ibf_diag b "$pktr" saquery -C sofib0 --smkey 1 PKTR
pktr_of() {
	awk -v want="$1" '
		function hex(v,  n, i) {
			n = 0
			for (i = 3; i <= length(v); i++) n = n * 16 + index("0123456789abcdef", tolower(substr(v, i, 1))) - 1
			return n
		}
		/PKeyTableRecord dump/ { if (lid == want) print keys; lid = ""; keys = ""; intab = 0; next }
		/LID\./ { v = $0; sub(/.*\.+/, "", v); lid = (v ~ /^0x/) ? hex(v) : v + 0; next }
		/PKey Table/ { intab = 1; next }
		intab { for (i = 1; i <= NF; i++) if ($i ~ /^0x/ && tolower($i) != "0x0000") keys = keys tolower($i) " " }
		END { if (lid == want) print keys }' "$pktr" | head -n 1
}
ra=$(pktr_of "$la")
rc=$(pktr_of "$lc")
if [ "$(sorted "$ra")" = "$(sorted "$ta")" ] && [ "$(sorted "$rc")" = "$(sorted "$tc")" ] && [ -n "$ra" ]; then
	ok "$N: saquery PKTR: a's record [$ra], c's [$rc], as smpquery read them"
else
	not_ok "$N: saquery PKTR" "a [$ra] c [$rc]"
	head -n 40 "$pktr" | sed 's/^/#   /'
fi
# the SA's ClassPortInfo: CapabilityMask2 bit 12, send-only full members
# taken (OpenSM sets it; so does ours), which the joiners ask for
out=$SOF_TMP/pk.cpi
sof_ibf_diag b "$out" saquery -C sofib0 -c
cm2=$(sed -n 's/^[[:space:]]*Capability mask 2\.*\(0x[0-9A-Fa-f]*\)$/\1/p' "$out")
if [ -n "$cm2" ] && (((cm2 >> 12) & 1)); then
	ok "$N: saquery -c: the SA's CapabilityMask2 $cm2 has bit 12 (IsSendOnlyFullMemberSupported)"
else
	not_ok "$N: SA ClassPortInfo" "CapMask2 '$cm2': $(tr '\n' ' ' <"$out" | cut -c1-300)"
fi
out=$SOF_TMP/pk.devinfo
sof_host_run a "$SOFTOFED" run -- timeout 20 ibv_devinfo -v -d sofib0 >"$out" 2>&1 </dev/null
if grep -q 'max_pkeys:[[:space:]]*64' "$out" && grep -q -i 'pkey_tbl_len' "$out"; then
	ok "$N: ibv_devinfo -v -d sofib0 in a: max_pkeys 64"
else
	not_ok "$N: ibv_devinfo" "$(grep -i pkey "$out" | tr '\n' ' ')"
fi

# ---- RC traffic by P_Key index -------------------------------------------------
LPORT=18800
# lat NAME SRV SIDX CLI CIDX: ib_send_lat by LID, server in SRV on index
# SIDX, client in CLI on CIDX; the client's status
lat() {
	local name=$1 srv=$2 sidx=$3 cli=$4 cidx=$5 rc
	LPORT=$((LPORT + 1))
	sof_host_bg "pk.$name.srv" "$srv" 30 "$SOFTOFED" run -- ib_send_lat -d sofib0 -n 200 -s 2 \
		-p $LPORT --pkey_index="$sidx"
	sof_host_wait_listen "$srv" $LPORT 10 "pk.$name.srv" >/dev/null 2>&1
	sof_host_run "$cli" "$SOFTOFED" run -- timeout 25 ib_send_lat -d sofib0 -n 200 -s 2 -p $LPORT \
		--pkey_index="$cidx" "$(sof_host_ip "$srv")" >"$SOF_TMP/pk.$name.cli" 2>&1 </dev/null
	rc=$?
	sof_kill "pk.$name.srv"
	return $rc
}
viol() { sof_ibf_line "$1" >/dev/null && sof_host_run "$1" "$SOFTOFED" status 2>/dev/null </dev/null |
	sed -n 's/.* pkey_violations \([0-9]*\).*/\1/p' | head -n 1; }

if lat ab8001 a "$ia" b "$ib" && grep -q -E '^ *2 +200 ' "$SOF_TMP/pk.ab8001.cli"; then
	ok "$N: ib_send_lat a <-> b in 0x8001 (pkey_index a $ia, b $ib) by LID: 200 iterations"
else
	not_ok "$N: ib_send_lat a <-> b in 0x8001" "$(tail -n 5 "$SOF_TMP/pk.ab8001.cli" | tr '\n' ' ')"
fi

v0=$(viol a)
if ! lat ca a "$ia" c 0 && grep -q -i 'retry\|error\|failed\|Couldn' "$SOF_TMP/pk.ca.cli"; then
	v1=$(viol a)
	if [ -n "$v0" ] && [ -n "$v1" ] && [ "$v1" -gt "$v0" ]; then
		ok "$N: c (not in 0x8001) -> a's QP in 0x8001 fails ($(grep -i -m1 'retry\|error\|failed' "$SOF_TMP/pk.ca.cli" | cut -c1-80)); a's P_Key violations $v0 -> $v1"
	else
		not_ok "$N: c -> a P_Key violations" "a's counter $v0 -> $v1"
	fi
else
	not_ok "$N: c -> a in 0x8001" "it worked: $(tail -n 3 "$SOF_TMP/pk.ca.cli" | tr '\n' ' ')"
fi
out=$SOF_TMP/pk.portinfo
sof_ibf_diag b "$out" smpquery -C sofib0 portinfo "$la" 1
pv=$(sed -n 's/^PkeyViolations:\.*\([0-9]*\)$/\1/p' "$out")
if [ -n "$pv" ] && [ "$pv" -gt 0 ]; then
	ok "$N: smpquery portinfo of a: PkeyViolations $pv"
else
	not_ok "$N: smpquery portinfo PkeyViolations" "'$pv'"
fi

if ! lat ab8002 a "$ia2" b "$ib2"; then
	ok "$N: a and b, limited members of 0x8002, cannot talk ($(grep -i -m1 'retry\|error\|failed' "$SOF_TMP/pk.ab8002.cli" | cut -c1-60))"
else
	not_ok "$N: limited members" "ib_send_lat a <-> b in 0x8002 worked"
fi
if lat ac8002 c "$ic2" a "$ia2" && grep -q -E '^ *2 +200 ' "$SOF_TMP/pk.ac8002.cli"; then
	ok "$N: a (limited) <-> c (full) in 0x8002 (pkey_index a $ia2, c $ic2): 200 iterations"
else
	not_ok "$N: a limited <-> c full" "$(tail -n 5 "$SOF_TMP/pk.ac8002.cli" | tr '\n' ' ')"
fi

# c on an empty index: P_Key 0, which S1's port 3 (to c) does not carry
sguid=$(sof_ibf_guid S1)
pq() { sed -n "s/^$2:\\.*\\([0-9]*\\)\$/\\1/p" "$1"; }
sof_ibf_diag b "$SOF_TMP/pk.sw0" perfquery -C sofib0 -G "$sguid" 3
lat cempty a 0 c 9 >/dev/null 2>&1
sof_ibf_diag b "$SOF_TMP/pk.sw1" perfquery -C sofib0 -G "$sguid" 3
e0=$(pq "$SOF_TMP/pk.sw0" PortRcvConstraintErrors)
e1=$(pq "$SOF_TMP/pk.sw1" PortRcvConstraintErrors)
if [ -n "$e0" ] && [ -n "$e1" ] && [ "$e1" -gt "$e0" ]; then
	ok "$N: S1 port 3 enforces c's partitions inbound: PortRcvConstraintErrors $e0 -> $e1"
else
	not_ok "$N: switch enforcement" "S1 port 3 PortRcvConstraintErrors '$e0' -> '$e1'"
fi

# ---- IPoIB child interfaces -----------------------------------------------------
declare -A PKIP=([a]=192.168.81.2 [b]=192.168.81.3)
for h in a b; do
	out=$SOF_TMP/pk.ipoib.$h
	if sof_host_run "$h" "$SOFTOFED" ipoib up --pkey 0x8001 >"$out" 2>&1 </dev/null &&
		sof_host_run "$h" ip link show ib0.8001 >/dev/null 2>&1; then
		sof_host_run "$h" ip addr add "${PKIP[$h]}/24" dev ib0.8001
		st=$(sof_host_run "$h" "$SOFTOFED" ipoib status ib0.8001 2>&1 </dev/null | head -n 1)
		if grep -q 'pkey 0x8001' <<<"$st"; then
			ok "$N: softofed ipoib up --pkey 0x8001 in $h: ib0.8001 ($st)"
		else
			not_ok "$N: ib0.8001 in $h" "status: $st"
		fi
	else
		not_ok "$N: ipoib up --pkey 0x8001 in $h" "$(tr '\n' ' ' <"$out")"
		for f in /tmp/softofed-ipoib-*-ib0.8001-*.log; do [ -f "$f" ] && tail -n 5 "$f" | sed 's/^/#   /'; done
	fi
done
if sof_host_run a timeout 20 ping -c 3 -W 5 192.168.81.3 >"$SOF_TMP/pk.ping" 2>&1 </dev/null &&
	sof_host_run b timeout 20 ping -c 3 -W 5 192.168.81.2 >>"$SOF_TMP/pk.ping" 2>&1 </dev/null; then
	ok "$N: ping a <-> b over ib0.8001"
else
	not_ok "$N: ping over ib0.8001" "$(tail -n 3 "$SOF_TMP/pk.ping" | tr '\n' ' ')"
fi
st=$(sof_host_run a "$SOFTOFED" status 2>&1 </dev/null | grep '^ipoib ib0.8001 ')
if grep -q 'pkey 0x8001' <<<"$st" && grep -q -E 'rx_packets [1-9]' <<<"$st"; then
	ok "$N: softofed status in a lists the child: $(cut -c1-100 <<<"$st")"
else
	not_ok "$N: softofed status" "no ib0.8001 line with packets: '$st'"
fi
out=$SOF_TMP/pk.ipoib.c
if ! sof_host_run c "$SOFTOFED" ipoib up --pkey 0x8001 >"$out" 2>&1 </dev/null &&
	! sof_host_run c ip link show ib0.8001 >/dev/null 2>&1; then
	ok "$N: c, not in 0x8001: no ib0.8001 ($(head -n 1 "$out" | cut -c1-80))"
else
	not_ok "$N: ib0.8001 in c" "it came up"
	sof_host_run c "$SOFTOFED" ipoib down ib0.8001 >/dev/null 2>&1 </dev/null
fi
# c's ib0 in the default partition, given an address in 0x8001's subnet
if sof_host_run c "$SOFTOFED" ipoib up >"$SOF_TMP/pk.ipoib.c0" 2>&1 </dev/null; then
	sof_host_run c ip addr add 192.168.81.4/24 dev ib0
	if ! sof_host_run c timeout 10 ping -c 2 -W 2 192.168.81.2 >"$SOF_TMP/pk.ping.c" 2>&1 </dev/null; then
		ok "$N: c's ib0 (default partition) cannot reach a's ib0.8001"
	else
		not_ok "$N: c -> a over IPoIB" "ping answered: $(tail -n 2 "$SOF_TMP/pk.ping.c" | tr '\n' ' ')"
	fi
	sof_host_run c "$SOFTOFED" ipoib down >/dev/null 2>&1 </dev/null
else
	not_ok "$N: c's ib0" "$(tr '\n' ' ' <"$SOF_TMP/pk.ipoib.c0")"
fi

# ---- the RDMA CM over ib0.8001 (issue 21) -----------------------------------------
# a capture of the fabric (its process runs in a) while rping and
# ib_send_bw -R go b -> a's ib0.8001 address: the SA's PathRecord asked for
# P_Key 0x8001, the CM's REQ names it, every CM MAD and RC packet of a and
# b carries it in its BTH
CAP=$SOF_TMP/pk.cm.pcap
fabst() { sof_host_run a "$SOFTOFED" fabric status 2>&1 </dev/null; }
sof_host_bg pk.cap a 200 "$SOFTOFED" capture -w "$CAP" -c 1000000 -t 180
for _ in $(seq 50); do
	fabst | grep -q '^capture: on' && break
	sleep 0.1
done
CMP=18850
sof_rping_pair "$N: rping -C 10 -V b -> a by ib0.8001 address" a b 192.168.81.2 $((CMP + 1)) 1024 10
if sof_perftest_cm_pair "$N: ib_send_bw -R over ib0.8001" 120 a b \
	ib_send_bw -R -d sofib0 -F -n 200 -p $((CMP + 2)) -- \
	ib_send_bw -R -d sofib0 -F -n 200 -p $((CMP + 2)) 192.168.81.2; then
	sof_cm_perftest_verdict "$N: ib_send_bw -R over ib0.8001"
else
	not_ok "$N: ib_send_bw -R over ib0.8001" "$SOF_PAIR_WHY"
	sof_pair_dump
fi
# udaddy: UD ids, SIDR_REQ/REP in the partition, the UD QPs on its index
if sof_cm_pair "$N: udaddy -c 4 over ib0.8001" 60 a b \
	udaddy -b 192.168.81.2 -c 4 -C 50 -S 1000 -- \
	udaddy -s 192.168.81.2 -c 4 -C 50 -S 1000; then
	sof_cm_verdict "$N: udaddy -c 4 over ib0.8001" 'data transfers complete' 'return status 0'
else
	not_ok "$N: udaddy over ib0.8001" "$SOF_PAIR_WHY"
	sof_pair_dump
fi
# mckey over ib0.8001: b receives, a sends as a send-only full member
# (mckey -o, RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER)
MG=239.1.2.4 MGID=ff12:4001:8001::f01:204
mrx=$(sof_out pk.mckey.rx)
mtx=$(sof_out pk.mckey.tx)
SOF_LINEBUF=1 sof_cm_bg pk.mckey.rx b 60 mckey -m $MG -b 192.168.81.3 -C 10 -S 200
for _ in $(seq 150); do
	grep -q 'joined dgid' "$mrx" 2>/dev/null && break
	sleep 0.1
done
SOF_LINEBUF=1 sof_cm_bg pk.mckey.tx a 60 mckey -s -o -m $MG -b 192.168.81.2 -C 10 -S 200
sof_wait pk.mckey.tx 60
trc=$?
sof_wait pk.mckey.rx 30
rrc=$?
mgid=$(sed -n 's/.*joined dgid: \([0-9a-f:]*\) .*/\1/p' "$mrx" | head -n 1)
if [ "$rrc" = 0 ] && [ "$trc" = 0 ] && grep -q 'data transfers complete' "$mrx" && [ "$mgid" = $MGID ]; then
	ok "$N: mckey -m $MG over ib0.8001 (group $mgid), the sender send-only (-o): b received all 10 messages"
else
	not_ok "$N: mckey over ib0.8001" "receiver rc $rrc, sender rc $trc, group '$mgid'"
	sof_dump "$mrx" "$mtx"
fi
sof_kill pk.cap
for _ in $(seq 30); do
	fabst | grep -q '^capture: off' && break
	sleep 0.1
done
ERF=$SOF_TMP/pk.cm.erf
"$SOFTOFED" capture erf "$CAP" "$ERF" >/dev/null 2>&1
tsh() { timeout 60 tshark -n -r "$ERF" "$@" 2>/dev/null; }
ab="(infiniband.lrh.slid == $la && infiniband.lrh.dlid == $lb) || (infiniband.lrh.slid == $lb && infiniband.lrh.dlid == $la)"
# RC opcodes are 0x00-0x1f; CM MADs class 0x07 on QP1
rc_in=$(tsh -Y "($ab) && infiniband.bth.opcode < 0x20 && infiniband.bth.p_key == 0x8001" | wc -l)
rc_out=$(tsh -Y "($ab) && infiniband.bth.opcode < 0x20 && infiniband.bth.p_key != 0x8001" | wc -l)
cm_in=$(tsh -Y "($ab) && infiniband.mad.mgmtclass == 0x07 && infiniband.bth.p_key == 0x8001" | wc -l)
cm_out=$(tsh -Y "($ab) && infiniband.mad.mgmtclass == 0x07 && infiniband.bth.p_key != 0x8001" | wc -l)
# UD sends a <-> b other than MADs (QP0/QP1): udaddy's, IPoIB's, mckey's
ud_in=$(tsh -Y "($ab) && infiniband.deth && infiniband.bth.destqp > 1 && infiniband.bth.p_key == 0x8001 && frame.len > 1000" | wc -l)
ud_out=$(tsh -Y "($ab) && infiniband.deth && infiniband.bth.destqp > 1 && infiniband.bth.p_key != 0x8001" | wc -l)
req=$(tsh -Y "infiniband.cm.req.pkey == 0x8001" | wc -l)
req_bad=$(tsh -Y "infiniband.cm.req && infiniband.cm.req.pkey != 0x8001" | wc -l)
pr=$(tsh -Y "infiniband.pathrecord.p_key == 0x8001" | wc -l)
# QoS from the SA: 0x8001's SL 3 and PacketLifeTime 18 -> ACK timeout 19
req_qos=$(tsh -Y "infiniband.cm.req.pkey == 0x8001 && infiniband.cm.req.prim_sl == 3 && infiniband.cm.req.prim_localacktout == 19" | wc -l)
req_qos_bad=$(tsh -Y "infiniband.cm.req.pkey == 0x8001" -T fields -e infiniband.cm.req.prim_sl -e infiniband.cm.req.prim_localacktout | sort | uniq -c | tr -s ' \t\n' ' ')
rc_sl=$(tsh -Y "($ab) && infiniband.bth.opcode < 0x20 && infiniband.lrh.sl == 3" | wc -l)
if [ "$rc_in" -ge 200 ] && [ "$rc_out" = 0 ] && [ "$cm_in" -ge 6 ] && [ "$cm_out" = 0 ] &&
	[ "$req" -ge 2 ] && [ "$req_bad" = 0 ] && [ "$pr" -ge 2 ] && [ "$ud_in" -ge 200 ] && [ "$ud_out" = 0 ]; then
	ok "$N: capture: a<->b RC packets $rc_in, UD sends of udaddy's size $ud_in and CM MADs $cm_in all in P_Key 0x8001, $req REQs name 0x8001, $pr PathRecords with 0x8001"
else
	not_ok "$N: P_Key 0x8001 on the wire" "RC in 0x8001 $rc_in, other $rc_out; UD in 0x8001 $ud_in, other $ud_out; CM MADs in 0x8001 $cm_in, other $cm_out; REQs 0x8001 $req, other $req_bad; PathRecords $pr"
fi
if [ "$req" -ge 2 ] && [ "$req_qos" = "$req" ] && [ "$rc_sl" = "$rc_in" ] && [ "$rc_sl" -ge 200 ]; then
	ok "$N: capture: the $req REQs in 0x8001 carry its SL 3 and local ACK timeout 19 (PacketLifeTime 18 + 1), its $rc_sl RC packets SL 3"
else
	not_ok "$N: SL and ACK timeout from the SA" "REQs $req, with SL 3 and timeout 19 $req_qos (SL timeout: $req_qos_bad); RC packets $rc_in, SL 3 $rc_sl"
fi
# IPoIB's own send-only use: datagrams from a to a group ib0.8001 holds no
# membership of are sent after a SendOnlyFullMember join (the SA takes it)
mc_send() {
	sof_host_run "$1" python3 -c 'import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(sys.argv[1]))
for _ in range(3):
    s.sendto(b"x", (sys.argv[2], 9999))' "$2" "$3" </dev/null
}
# mc_joined HOST MGID STATE: HOST's ib0.8001 has MGID joined with JoinState STATE
mc_joined() {
	sof_host_run "$1" "$SOFTOFED" ipoib status ib0.8001 2>/dev/null </dev/null |
		grep -q "^mcast $2 mlid 0xc[0-9a-f]* state joined.* join $3\$"
}
mc_send a 192.168.81.2 239.1.2.6
if sof_wait_for 10 mc_joined a ff12:401b:8001::f01:206 0x8; then
	ok "$N: IPoIB send-only use of 239.1.2.6 on ib0.8001: joined as a SendOnlyFullMember (JoinState 8)"
else
	not_ok "$N: IPoIB send-only join" "$(sof_host_run a "$SOFTOFED" ipoib status ib0.8001 2>&1 </dev/null | grep '^mcast' | tr '\n' ' ')"
fi
# the SA joins of the mckey group (method Set 0x02, Delete 0x15): a's
# SendOnlyFullMember (8), b's FullMember (1), both in 0x8001
joins() {
	tsh -Y "infiniband.mcmemberrecord.mgid == $MGID && infiniband.lrh.slid == $1 && infiniband.mad.method == $2" \
		-T fields -e infiniband.mcmemberrecord.joinstate -e infiniband.mcmemberrecord.p_key |
		sort -u | tr '\t\n' ', '
}
ja=$(joins "$la" 0x02) jd=$(joins "$la" 0x15) jb=$(joins "$lb" 0x02)
hx() { printf '%d' "$1" 2>/dev/null; }
if [ "$(hx "${ja%%,*}")" = 8 ] && [ "$(hx "${jd%%,*}")" = 8 ] && [ "$(hx "${jb%%,*}")" = 1 ] &&
	grep -q -i '0x8001' <<<"$ja$jb"; then
	ok "$N: capture: a's join and leave of $MGID with JoinState 8 (send-only full member) [$ja] [$jd], b's with 1 [$jb]"
else
	not_ok "$N: send-only join on the wire" "a's Set [$ja] Delete [$jd], b's Set [$jb]"
fi
# the RDMA CM's joins take the partition's broadcast group's SL (the
# kernel's cma_join_ib_multicast): a Get of each port's record in
# ff12:401b:8001::ffff:ffff first, the Sets of $MGID with its SL, the SA's
# answer that SL, and every mckey datagram to the group's MLID that SL in
# its LRH; OpenSM gives the broadcast group the partition's sl=3
bget=$(tsh -Y "infiniband.mcmemberrecord.mgid == ff12:401b:8001::ffff:ffff && infiniband.mad.method == 0x01 && (infiniband.lrh.slid == $la || infiniband.lrh.slid == $lb)" | wc -l)
bsl=$(hx "$(tsh -Y "infiniband.mcmemberrecord.mgid == ff12:401b:8001::ffff:ffff && infiniband.mad.method == 0x81 && (infiniband.lrh.dlid == $la || infiniband.lrh.dlid == $lb)" -T fields -e infiniband.mcmemberrecord.sl | sort -u | head -n 1)")
set_sl=$(tsh -Y "infiniband.mcmemberrecord.mgid == $MGID && infiniband.mad.method == 0x02" -T fields -e infiniband.mcmemberrecord.sl | sort -u | tr '\n' ' ')
resp=$(tsh -Y "infiniband.mcmemberrecord.mgid == $MGID && infiniband.mad.method == 0x81" -T fields -e infiniband.mcmemberrecord.sl -e infiniband.mcmemberrecord.mlid | sort -u)
mlid=$(cut -f2 <<<"$resp" | head -n 1)
dg_sl=0 dg_other=0
if [ -n "$mlid" ] && [ -n "$bsl" ]; then
	dg_sl=$(tsh -Y "infiniband.lrh.dlid == $mlid && infiniband.deth && infiniband.lrh.sl == $bsl" | wc -l)
	dg_other=$(tsh -Y "infiniband.lrh.dlid == $mlid && infiniband.deth && infiniband.lrh.sl != $bsl" | wc -l)
fi
if [ "$bget" -ge 2 ] && [ -n "$bsl" ] && [ "$(hx "${set_sl% }")" = "$bsl" ] &&
	[ "$(hx "$(cut -f1 <<<"$resp" | sort -u)")" = "$bsl" ] && [ "$dg_sl" -ge 10 ] && [ "$dg_other" = 0 ]; then
	ok "$N: capture: mckey's joins ask the broadcast group's record ($bget Gets, SL $bsl), join $MGID with its SL, the group (MLID $mlid) has SL $bsl, its $dg_sl datagrams SL $bsl"
else
	not_ok "$N: mckey's group SL from the broadcast group" "Gets $bget (SL '$bsl'), Set SLs [$set_sl], answers [$(tr '\t\n' ', ' <<<"$resp")], datagrams to '$mlid' SL '$bsl' $dg_sl, other $dg_other"
fi
if [ "$bsl" = 3 ]; then
	ok "$N: 0x8001's broadcast group has the partition's SL 3, so mckey's group and datagrams too"
else
	not_ok "$N: 0x8001's broadcast group SL" "'$bsl', not 3"
fi
# ucmatose's connections the same way (data checked by ucmatose)
if sof_cm_pair "$N: ucmatose -c 4 over ib0.8001" 60 a b \
	ucmatose -b 192.168.81.2 -p $((CMP + 3)) -c 4 -- \
	ucmatose -s 192.168.81.2 -p $((CMP + 3)) -c 4; then
	sof_cm_verdict "$N: ucmatose -c 4 over ib0.8001" 'data transfers complete' 'return status 0'
else
	not_ok "$N: ucmatose over ib0.8001" "$SOF_PAIR_WHY"
	sof_pair_dump
fi
# a REQ for a's rping listener on 192.168.81.2 (ib0.8001) by AF_IB, with
# the A11 header of an IPv4 connection: in P_Key 0xffff (from c) rejected,
# as the kernel's rdma_cm finds no net device of that P_Key with the
# address; in 0x8001 (from b) accepted
agid=$(sof_host_run a "$SOFTOFED" ipoib status ib0.8001 2>&1 </dev/null | sed -n 's/^qpn .* gid \([0-9a-f:]*\) .*/\1/p')
sid=$(printf '0x000000000106%04x' $((CMP + 5))) # RDMA_PS_TCP, A11.2.1
# A11's header: version 0, IPv4, source port, b's and a's ib0.8001 addresses
a11=$(printf '00401234%024dc0a85103%024dc0a85102' 0 0)
l0=$(sof_cm_count cm_listeners a)
sof_cm_bg pk.cm.rping a 40 rping -s -a 192.168.81.2 -p $((CMP + 5)) -C 1
for _ in $(seq 100); do
	[ "$(sof_cm_count cm_listeners a)" -gt "${l0:-0}" ] && break
	sleep 0.1
done
sof_host_run c "$SOFTOFED" run -- timeout 30 "$REQ" "$agid" "$sid" "$a11" \
	>"$SOF_TMP/pk.ipreq.ffff" 2>&1 </dev/null
sof_host_run b "$SOFTOFED" run -- timeout 30 "$REQ" "$agid" "$sid" "$a11" 0x8001 \
	>"$SOF_TMP/pk.ipreq.8001" 2>&1 </dev/null
sof_kill pk.cm.rping
if grep -q '^event RDMA_CM_EVENT_REJECTED' "$SOF_TMP/pk.ipreq.ffff" &&
	grep -q '^event RDMA_CM_EVENT_ESTABLISHED' "$SOF_TMP/pk.ipreq.8001"; then
	ok "$N: a REQ for rping's listener on a's ib0.8001 address (service $sid): in P_Key 0xffff rejected, in 0x8001 accepted"
else
	not_ok "$N: REQ partition of an IP listener" "0xffff: $(tr '\n' ' ' <"$SOF_TMP/pk.ipreq.ffff"); 0x8001: $(tr '\n' ' ' <"$SOF_TMP/pk.ipreq.8001")"
fi
# the route b's id got (the SA's PathRecord in 0x8001) and what
# rdma_init_qp_attr made of it
if grep -q '^route sl 3 life 18$' "$SOF_TMP/pk.ipreq.8001" &&
	grep -q '^qp_attr sl 3 timeout 19$' "$SOF_TMP/pk.ipreq.8001"; then
	ok "$N: rdma_resolve_route in 0x8001: PathRecord SL 3, PacketLifeTime 18; rdma_init_qp_attr: ah_attr.sl 3, timeout 19"
else
	not_ok "$N: QoS of the route" "$(grep -E '^(route|qp_attr)' "$SOF_TMP/pk.ipreq.8001" | tr '\n' ' ')"
fi

# ---- the same over IPv6 (AF_INET6 over ib0.8001) --------------------------------------
declare -A PK6=([a]=fd81::2 [b]=fd81::3)
for h in a b; do sof_host_run "$h" ip -6 addr add "${PK6[$h]}/64" dev ib0.8001 nodad; done
# a joins fd81::2's solicited-node group within a second of the address
# (softofed-ipoib's scan): an NS before that goes unanswered
ping6_one() { sof_host_run b timeout 5 ping -6 -c 1 -W 2 fd81::2 >/dev/null 2>&1 </dev/null; }
sof_wait_for 15 ping6_one
if sof_host_run b timeout 20 ping -6 -c 3 -W 5 fd81::2 >"$SOF_TMP/pk.ping6" 2>&1 </dev/null; then
	ok "$N: ping -6 b -> a over ib0.8001 (fd81::3 -> fd81::2)"
else
	not_ok "$N: ping -6 over ib0.8001" "$(tail -n 3 "$SOF_TMP/pk.ping6" | tr '\n' ' ')"
fi
sid6=$(printf '0x000000000106%04x' $((CMP + 6)))
# A11's header of an IPv6 connection (IP version 6): b's and a's addresses
a11v6=00601234fd810000000000000000000000000003fd810000000000000000000000000002
l0=$(sof_cm_count cm_listeners a)
sof_cm_bg pk.cm.rping6 a 40 rping -s -a fd81::2 -p $((CMP + 6)) -C 1
for _ in $(seq 100); do
	[ "$(sof_cm_count cm_listeners a)" -gt "${l0:-0}" ] && break
	sleep 0.1
done
sof_host_run c "$SOFTOFED" run -- timeout 30 "$REQ" "$agid" "$sid6" "$a11v6" \
	>"$SOF_TMP/pk.ipreq6.ffff" 2>&1 </dev/null
sof_host_run b "$SOFTOFED" run -- timeout 30 "$REQ" "$agid" "$sid6" "$a11v6" 0x8001 \
	>"$SOF_TMP/pk.ipreq6.8001" 2>&1 </dev/null
if grep -q '^event RDMA_CM_EVENT_REJECTED' "$SOF_TMP/pk.ipreq6.ffff" &&
	grep -q '^event RDMA_CM_EVENT_ESTABLISHED' "$SOF_TMP/pk.ipreq6.8001"; then
	ok "$N: an IPv6 REQ (A11 IP version 6) for rping's listener on fd81::2 (ib0.8001): in P_Key 0xffff rejected, in 0x8001 accepted"
else
	not_ok "$N: REQ partition of an IPv6 listener" "0xffff: $(tr '\n' ' ' <"$SOF_TMP/pk.ipreq6.ffff"); 0x8001: $(tr '\n' ' ' <"$SOF_TMP/pk.ipreq6.8001")"
fi
sof_kill pk.cm.rping6
# and rping itself over IPv6, data verified (-V)
sof_rping_pair "$N: rping -C 10 -V b -> a by ib0.8001's IPv6 address" a b fd81::2 $((CMP + 7)) 1024 10
# c, outside 0x8001, from its ib0 with an address in that subnet: the RDMA
# CM cannot reach a's ib0.8001 address
if sof_host_run c "$SOFTOFED" ipoib up >"$SOF_TMP/pk.ipoib.c1" 2>&1 </dev/null; then
	sof_host_run c ip addr add 192.168.81.4/24 dev ib0
	sof_cm_bg pk.cm.srv a 40 rping -s -a 192.168.81.2 -p $((CMP + 4)) -C 1
	sof_cm_fails_fast "$N: rping from c (not in 0x8001) to a's ib0.8001 address" 30 15000 c \
		"$SOF_CM_FAILED" rping -c -a 192.168.81.2 -p $((CMP + 4)) -C 1
	sof_kill pk.cm.srv
	sof_host_run c "$SOFTOFED" ipoib down >/dev/null 2>&1 </dev/null
else
	not_ok "$N: c's ib0 for the RDMA CM" "$(tr '\n' ' ' <"$SOF_TMP/pk.ipoib.c1")"
fi

# ---- IPoIB connected mode on ib0.8001 --------------------------------------------
# its RC connection set up through the CM in the child's partition: the
# REQ (RFC 4755's service ID) names 0x8001, every RC packet carries it
cmok=1
for h in a b; do
	sof_host_run "$h" "$SOFTOFED" ipoib down ib0.8001 >/dev/null 2>&1 </dev/null
	if sof_host_run "$h" "$SOFTOFED" ipoib up --pkey 0x8001 --mode connected >"$SOF_TMP/pk.cmup.$h" 2>&1 </dev/null; then
		sof_host_run "$h" ip addr add "${PKIP[$h]}/24" dev ib0.8001
	else
		cmok=0
		not_ok "$N: ipoib up --pkey 0x8001 --mode connected in $h" "$(tr '\n' ' ' <"$SOF_TMP/pk.cmup.$h")"
	fi
done
if [ $cmok = 1 ]; then
	CAP2=$SOF_TMP/pk.cm2.pcap
	sof_host_bg pk.cap2 a 100 "$SOFTOFED" capture -w "$CAP2" -c 1000000 -t 90
	for _ in $(seq 50); do
		fabst | grep -q '^capture: on' && break
		sleep 0.1
	done
	sof_host_run a timeout 30 ping -c 3 -s 30000 -W 5 192.168.81.3 >"$SOF_TMP/pk.cmping" 2>&1 </dev/null
	prc=$?
	st=$(sof_host_run a "$SOFTOFED" ipoib status ib0.8001 2>&1 </dev/null)
	# a REQ to a's connected-mode service from the default partition is
	# refused (its listener is in 0x8001); the same REQ in 0x8001 is taken
	aqpn=$(sed -n 's/^qpn \(0x[0-9a-f]*\) .*/\1/p' <<<"$st")
	agid=$(sed -n 's/^qpn .* gid \([0-9a-f:]*\) .*/\1/p' <<<"$st")
	sof_host_run c "$SOFTOFED" run -- timeout 30 "$REQ" "$agid" "$aqpn" 001234560000fff4 \
		>"$SOF_TMP/pk.req.ffff" 2>&1 </dev/null
	sof_host_run b "$SOFTOFED" run -- timeout 30 "$REQ" "$agid" "$aqpn" 001234560000fff4 0x8001 \
		>"$SOF_TMP/pk.req.8001" 2>&1 </dev/null
	sof_kill pk.cap2
	for _ in $(seq 30); do
		fabst | grep -q '^capture: off' && break
		sleep 0.1
	done
	"$SOFTOFED" capture erf "$CAP2" "$ERF" >/dev/null 2>&1
	rc_in=$(tsh -Y "($ab) && infiniband.bth.opcode < 0x20 && infiniband.bth.p_key == 0x8001" | wc -l)
	rc_out=$(tsh -Y "($ab) && infiniband.bth.opcode < 0x20 && infiniband.bth.p_key != 0x8001" | wc -l)
	req=$(tsh -Y "infiniband.cm.req.pkey == 0x8001 && infiniband.cm.req.serviceid >= 0x1000000000000000" | wc -l)
	if [ $prc = 0 ] && grep -q '^cm tx peer .* state up mtu 65520' <<<"$st" &&
		[ "$rc_in" -ge 60 ] && [ "$rc_out" = 0 ] && [ "$req" -ge 1 ]; then
		ok "$N: connected mode on ib0.8001: ping -s 30000 a -> b over RC, $req REQs for RFC 4755's service in 0x8001, $rc_in RC packets all in 0x8001"
	else
		not_ok "$N: connected mode on ib0.8001" "ping rc $prc; cm line '$(grep '^cm ' <<<"$st" | head -n 1)'; RC in 0x8001 $rc_in, other $rc_out; REQs $req"
	fi
	if grep -q '^event RDMA_CM_EVENT_REJECTED' "$SOF_TMP/pk.req.ffff" &&
		grep -q "^event RDMA_CM_EVENT_ESTABLISHED rep qpn $aqpn " "$SOF_TMP/pk.req.8001"; then
		ok "$N: a REQ to a's connected-mode service (QPN $aqpn) in P_Key 0xffff from c is rejected; in 0x8001 from b it is accepted"
	else
		not_ok "$N: REQ partitions" "0xffff: $(tr '\n' ' ' <"$SOF_TMP/pk.req.ffff"); 0x8001: $(tr '\n' ' ' <"$SOF_TMP/pk.req.8001")"
	fi
fi
for h in a b; do sof_host_run "$h" "$SOFTOFED" ipoib down ib0.8001 >/dev/null 2>&1 </dev/null; done

# ---- IPoIB as a limited member (0x8002: a and b limited, c full) -------------------
declare -A LMIP=([a]=192.168.82.2 [b]=192.168.82.3 [c]=192.168.82.4)
lmok=1
for h in a b c; do
	out=$SOF_TMP/pk.lm.$h
	if sof_host_run "$h" "$SOFTOFED" ipoib up --pkey 0x8002 >"$out" 2>&1 </dev/null &&
		sof_host_run "$h" ip link show ib0.8002 >/dev/null 2>&1; then
		sof_host_run "$h" ip addr add "${LMIP[$h]}/24" dev ib0.8002
	else
		lmok=0
		not_ok "$N: ipoib up --pkey 0x8002 in $h" "$(tr '\n' ' ' <"$out")"
	fi
done
if [ $lmok = 1 ]; then
	ok "$N: ib0.8002 up in a and b (limited members: their broadcast joins accepted) and c (full)"
	if sof_host_run a timeout 20 ping -c 3 -W 5 "${LMIP[c]}" >"$SOF_TMP/pk.lm.ping" 2>&1 </dev/null &&
		sof_host_run c timeout 20 ping -c 3 -W 5 "${LMIP[b]}" >>"$SOF_TMP/pk.lm.ping" 2>&1 </dev/null; then
		ok "$N: ping over ib0.8002: a (limited) -> c (full) and c -> b (limited)"
	else
		not_ok "$N: limited <-> full over ib0.8002" "$(tail -n 3 "$SOF_TMP/pk.lm.ping" | tr '\n' ' ')"
	fi
	v0=$(viol b)
	if ! sof_host_run a timeout 10 ping -c 2 -W 2 "${LMIP[b]}" >"$SOF_TMP/pk.lm.ping2" 2>&1 </dev/null; then
		v1=$(viol b)
		ok "$N: a and b, limited members, cannot ping over ib0.8002 (IBA 10.9.3; b's P_Key violations $v0 -> $v1)"
	else
		not_ok "$N: limited <-> limited over ib0.8002" "ping answered: $(tail -n 2 "$SOF_TMP/pk.lm.ping2" | tr '\n' ' ')"
	fi
fi
for h in a b c; do sof_host_run "$h" "$SOFTOFED" ipoib down ib0.8002 >/dev/null 2>&1 </dev/null; done

# ---- the SM restarted on the same LID, ib0.8001 up meanwhile ----------------------
# a port event tells ipoib (IBA 14.4.11: the new SM sets ClientReregister in
# PortInfo; the daemon raises IBV_EVENT_CLIENT_REREGISTER): it asks the
# SA's ClassPortInfo again and joins every group again. OpenSM is started
# again as it was; ours without send-only full members
# ($SOFTOFED_SM_SA_CAP_MASK2=0): a's send-only group follows to JoinState 1.
ipc() {
	sof_host_run "$1" "$SOFTOFED" ipoib status ib0.8001 2>/dev/null </dev/null | grep '^counters:' |
		tr ' ' '\n' | grep -A1 -x "$2" | tail -n 1
}
smlid() { sof_host_run a "$SOFTOFED" run -- ibstat sofib0 2>/dev/null </dev/null | sed -n 's/^[[:space:]]*SM lid: *//p' | head -n 1; }
rsok=1
for h in a b; do
	if sof_host_run "$h" "$SOFTOFED" ipoib up --pkey 0x8001 >"$SOF_TMP/pk.rs.$h" 2>&1 </dev/null; then
		sof_host_run "$h" ip addr add "192.168.81.$([ $h = a ] && echo 2 || echo 3)/24" dev ib0.8001
	else
		rsok=0
		not_ok "$N: ib0.8001 in $h before the SM restart" "$(tr '\n' ' ' <"$SOF_TMP/pk.rs.$h")"
	fi
done
if [ $rsok = 1 ]; then
	mc_send a 192.168.81.2 239.1.2.9
	sof_wait_for 10 mc_joined a ff12:401b:8001::f01:209 0x8 || rsok=0
	sm0=$(smlid) ev0=$(ipc a port_events) j0=$(ipc a mcast_joins)
fi
sof_kill pk.sm
smlog2=$(sof_out pk.sm2)
if [ "$N" = partitions/opensm ]; then
	smlog2=$SOF_TMP/pk.opensm2.log
	sof_host_bg pk.sm2 a 200 "$SOFTOFED" run -- opensm -g "$ga" -f "$smlog2" -d 0 -s 2 -D 0x87 -Q -P "$CONF"
	want=0x8
else
	sof_host_bg pk.sm2 a 200 env SOFTOFED_SM_SA_CAP_MASK2=0 "$SOFTOFED" run -- "$SMBIN" -C sofib0 -v --partitions "$CONF"
	want=0x1
fi
sm2up=0
sof_wait_for 60 sof_ibf_subnet_up "$smlog2" && sm2up=1
if [ $rsok = 1 ] && [ $sm2up = 1 ]; then
	# a's events and joins once the new SA answered; the group's JoinState
	rejoined() {
		[ "$(ipc a port_events)" -gt "${ev0:-0}" ] && [ "$(ipc a mcast_joins)" -ge $((${j0:-0} + 2)) ] &&
			mc_joined a ff12:401b:8001::f01:209 $want && mc_joined a ff12:401b:8001::ffff:ffff 0x1
	}
	sof_wait_for 20 rejoined
	sm1=$(smlid) ev1=$(ipc a port_events) j1=$(ipc a mcast_joins)
	why="SM LID $sm0 -> $sm1, a's port events $ev0 -> $ev1, joins $j0 -> $j1, $(sof_host_run a "$SOFTOFED" ipoib status ib0.8001 2>&1 </dev/null | grep '^mcast' | tr '\n' ' ')"
	if [ "$sm0" = "$sm1" ] && rejoined; then
		ok "$N: the SM restarted on the same LID $sm1: a's ib0.8001 got a port event, joined its groups again ($j0 -> $j1 joins), the send-only group now JoinState $want"
	else
		not_ok "$N: ib0.8001 across the SM restart" "$why"
	fi
	# the broadcast group carries ARP again: b's new address answers
	sof_host_run b ip addr add 192.168.81.13/24 dev ib0.8001
	if sof_host_run a timeout 20 ping -c 2 -W 5 192.168.81.13 >"$SOF_TMP/pk.rs.ping" 2>&1 </dev/null; then
		ok "$N: after the SM restart, a resolves b's new address 192.168.81.13 over ib0.8001 (ARP on the broadcast group) and pings it"
	else
		not_ok "$N: ping after the SM restart" "$(tail -n 2 "$SOF_TMP/pk.rs.ping" | tr '\n' ' ')"
	fi
	# ours sets ClientReregister once per port: in its first sweep as
	# master (every CA port, 3 hosts here), in no later Set
	if [ "$N" = partitions/sm ]; then
		rr=$(grep 'ClientReregister to' "$smlog2")
		rn=$(sed -n 's/.*ClientReregister to \([0-9]*\) ports (first sweep as master).*/\1/p' <<<"$rr" | head -n 1)
		if [ "$(grep -c . <<<"$rr")" = 1 ] && [ "${rn:-0}" -ge 3 ]; then
			ok "$N: the restarted SM's first sweep set ClientReregister on $rn ports, no later sweep again"
		else
			not_ok "$N: ClientReregister once per port" "$(tr '\n' ' ' <<<"$rr")"
		fi
	fi
elif [ $sm2up = 0 ]; then
	not_ok "$N: the SM restarted" "no SUBNET UP"
else
	not_ok "$N: ib0.8001 before the SM restart" "$(sof_host_run a "$SOFTOFED" ipoib status ib0.8001 2>&1 </dev/null | grep '^mcast' | tr '\n' ' ')"
fi
for h in a b; do sof_host_run "$h" "$SOFTOFED" ipoib down ib0.8001 >/dev/null 2>&1 </dev/null; done

# ---- an SA without send-only full members (ours, told so) --------------------------
if [ "$N" = partitions/sm ]; then
	smlog=$smlog2
	if [ $sm2up = 1 ]; then
		out=$SOF_TMP/pk.cpi2
		sof_ibf_diag b "$out" saquery -C sofib0 -c
		cm2=$(sed -n 's/^[[:space:]]*Capability mask 2\.*\(0x[0-9A-Fa-f]*\)$/\1/p' "$out")
		if [ -n "$cm2" ] && ! (((cm2 >> 12) & 1)); then
			ok "$N: the SM restarted with SOFTOFED_SM_SA_CAP_MASK2=0: saquery -c CapMask2 $cm2"
		else
			not_ok "$N: SA without send-only" "CapMask2 '$cm2'"
		fi
		if sof_host_run a "$SOFTOFED" ipoib up --pkey 0x8001 >"$SOF_TMP/pk.so.up" 2>&1 </dev/null; then
			sof_host_run a ip addr add 192.168.81.2/24 dev ib0.8001
			mc_send a 192.168.81.2 239.1.2.7
			if sof_wait_for 10 mc_joined a ff12:401b:8001::f01:207 0x1; then
				ok "$N: IPoIB send-only use of 239.1.2.7 with an SA without the bit: joined as a full member (JoinState 1), as Linux's ipoib falls back"
			else
				not_ok "$N: IPoIB full-member fallback" "$(sof_host_run a "$SOFTOFED" ipoib status ib0.8001 2>&1 </dev/null | grep '^mcast' | tr '\n' ' ')"
			fi
			# the join fails with EOPNOTSUPP (-95; mckey itself returns 0)
			out=$(sof_out pk.so.mckey)
			SOF_LINEBUF=1 sof_cm_bg pk.so.mckey a 30 mckey -s -o -m 239.1.2.8 -b 192.168.81.2 -C 1 -S 100
			sof_wait pk.so.mckey 35
			if grep -q 'RDMA_CM_EVENT_MULTICAST_ERROR, error: -95' "$out" &&
				! grep -q 'data transfers complete' "$out"; then
				ok "$N: mckey -o (send-only) with an SA without the bit: MULTICAST_ERROR, EOPNOTSUPP, as the kernel's rdma_cm refuses it"
			else
				not_ok "$N: mckey -o with an SA without the bit" "$(tr '\n' ' ' <"$out")"
			fi
			sof_host_run a "$SOFTOFED" ipoib down ib0.8001 >/dev/null 2>&1 </dev/null
		else
			not_ok "$N: ib0.8001 under the second SM" "$(tr '\n' ' ' <"$SOF_TMP/pk.so.up")"
		fi
	else
		not_ok "$N: the SM restarted without send-only" "no SUBNET UP"
	fi
fi

sof_kill pk.sm2
sof_kill pk.fabric
sof_exit
