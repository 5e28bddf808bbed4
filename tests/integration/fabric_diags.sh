#!/bin/bash
# infiniband-diags tools that the other fabric tests do not run, against
# the software fabric (`softofed fabric up --ibsim`) with our SM, each
# through libumad2sim from node H3, and OpenSM's congestion control
# manager:
#   - ibnodes lists the 3 CAs and 3 switches by name, ibrouters none,
#     dump_lfts shows each switch's 6 routed LIDs, dump_mfts answers,
#     ibidsverify finds no duplicate GUID or LID;
#   - perfquery -E / -D (PortRcvErrorDetails, PortXmitDiscardDetails, IBA
#     16.1.4.1-2) answer; after S2's link to H2 is cut, a perfquery to H2
#     counts in a switch's details (an inactive discard at the cut port or
#     a DLID mapping error where the SM's new tables drop H2's LID);
#   - ibccquery / ibccconfig (congestion control, IBA annex A10): each
#     setting read back as written on a switch and a CA, the
#     CongestionControlTable's 64 entries, a CC_Key with its protection
#     bit refusing queries without it (CC_KeyViolations counted), the
#     TimeStamp running;
#   - OpenSM with --congestion_control sets every switch and CA as its
#     configuration says, read back by ibccquery;
#   - ibportstate disable / enable of a switch port (S2 port 1): the
#     link goes down at both ends (H2 Down, Polling) and up again.
# Runs in a private network namespace.
#
# Usage: tests/integration/fabric_diags.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_ns_enter "$@"
sof_init

# shellcheck source=tests/ib_fabric.sh
. "$SOF_ROOT/tests/ib_fabric.sh"
sof_sim_init fabric/diags softofed-sm opensm ibccquery ibccconfig perfquery dump_lfts ibnodes
TOPO=$SIM_TOPO
export OSM_CACHE_DIR=$SOF_TMP OSM_TMP_DIR=$SOF_TMP
fabric() { sof_sim_fabric "$@"; }
sim() { SOF_SIM_HOST=H3 sof_sim "$@"; }

# field FILE NAME: the value of ibccquery's / perfquery's "NAME:....value"
field() {
	sed -n "s/^$2:\.*//p" "$1" | head -n 1
}

# sm_up: our SM on H1; SUBNET UP within 30 s. LIDs in discovery order:
# H1 1, S1 2, S2 3, H2 4, S3 5, H3 6
sm_up() {
	: >"$(sof_out sm)"
	sof_bg sm 300 env LD_PRELOAD="$UMAD2SIM" "$SIM_SM" -v
	sof_wait_log "$(sof_out sm)" 'SUBNET UP' 30 && return 0
	not_ok "fabric/diags" "our SM: no SUBNET UP within 30 s"
	sof_dump "$(sof_out sm)"
	return 1
}

if ! fabric up "$TOPO/line3.net" --ibsim >"$OUT" 2>&1; then
	not_ok "fabric/diags" "softofed fabric up --ibsim failed"
	sof_dump "$OUT"
	sof_exit
fi
if ! sm_up; then
	fabric down >"$OUT" 2>&1
	sof_exit
fi

# --- the plain diagnostics -------------------------------------------------
checks=()
sim ibnodes >"$SOF_TMP/nodes"
[ "$(grep -c '^Ca.*"H[123]"' "$SOF_TMP/nodes")" = 3 ] &&
	[ "$(grep -c '^Switch.*"S[123]"' "$SOF_TMP/nodes")" = 3 ] || checks+=("ibnodes: $(tr '\n' ' ' <"$SOF_TMP/nodes")")
sim ibrouters >"$SOF_TMP/routers"
[ ! -s "$SOF_TMP/routers" ] || checks+=("ibrouters: $(cat "$SOF_TMP/routers")")
sim dump_lfts >"$SOF_TMP/lfts"
[ "$(grep -c '^6 valid lids dumped' "$SOF_TMP/lfts")" = 3 ] || checks+=("dump_lfts: $(grep -c 'valid lids' "$SOF_TMP/lfts") switches")
sim dump_mfts >"$SOF_TMP/mfts"
[ "$(grep -c 'valid mlids dumped' "$SOF_TMP/mfts")" = 3 ] || checks+=("dump_mfts")
sim ibidsverify >"$SOF_TMP/ids" 2>&1 || checks+=("ibidsverify: $(tr '\n' ' ' <"$SOF_TMP/ids")")
if [ ${#checks[@]} -eq 0 ]; then
	ok "fabric/diags: ibnodes (3 CAs, 3 switches), ibrouters (none), dump_lfts (6 LIDs in each of 3 switches), dump_mfts, ibidsverify"
else
	not_ok "fabric/diags: plain tools" "${checks[*]}"
fi

# --- PMA details -----------------------------------------------------------
checks=()
sim perfquery -E 3 1 >"$SOF_TMP/rerr"
[ "$(field "$SOF_TMP/rerr" PortMalformedPktErrors)" = 0 ] || checks+=("perfquery -E: $(tr '\n' ' ' <"$SOF_TMP/rerr")")
sim perfquery -D 3 1 >"$SOF_TMP/xdisc"
[ "$(field "$SOF_TMP/xdisc" PortInactiveDiscards)" = 0 ] || checks+=("perfquery -D: $(tr '\n' ' ' <"$SOF_TMP/xdisc")")
if fabric link S2 1 down >"$OUT" 2>&1; then
	sim perfquery 4 >/dev/null # to H2, behind the cut link: no answer
	# dropped at S2's cut port, or where the SM's new tables no longer
	# route H2's LID: counted in that switch's details
	lost=0
	for lid in 2 3 5; do
		sim perfquery -a -E $lid >"$SOF_TMP/rerr"
		sim perfquery -a -D $lid >"$SOF_TMP/xdisc"
		lost=$((lost + $(field "$SOF_TMP/rerr" PortDLIDMappingErrors) + $(field "$SOF_TMP/xdisc" PortInactiveDiscards)))
	done
	[ "$lost" -ge 1 ] || checks+=("after the cut: no DLID mapping error or inactive discard in any switch")
	fabric link S2 1 up >"$OUT" 2>&1
else
	checks+=("softofed fabric link S2 1 down: $(cat "$OUT")")
fi
if [ ${#checks[@]} -eq 0 ]; then
	ok "fabric/diags: perfquery -E / -D answer (0 on a clean link); a query to H2 behind a cut link counts $lost in the switches' details"
else
	not_ok "fabric/diags: PMA details" "${checks[*]}"
fi

# --- congestion control by hand --------------------------------------------
checks=()
sim ibccquery CongestionInfo 6 >"$SOF_TMP/ci"
[ "$(field "$SOF_TMP/ci" ControlTableCap)" = 1 ] || checks+=("CongestionInfo of H3: $(tr '\n' ' ' <"$SOF_TMP/ci")")
sim ibccconfig SwitchCongestionSetting 2 0x1F 0x1FFFFFFFFF 0x6 0xF 8 0x3 1:5 7 >/dev/null
sim ibccquery SwitchCongestionSetting 2 >"$SOF_TMP/ss"
[ "$(field "$SOF_TMP/ss" Control_Map)" = 0x0000001f ] &&
	[ "$(field "$SOF_TMP/ss" Victim_Mask | sed 's/^0*//')" = 1fffffffff ] &&
	[ "$(field "$SOF_TMP/ss" Credit_Mask | sed 's/^0*//')" = 6 ] &&
	[ "$(field "$SOF_TMP/ss" Threshold)" = 0x0f ] &&
	[ "$(field "$SOF_TMP/ss" Packet_Size)" = 8 ] &&
	[ "$(field "$SOF_TMP/ss" CS_Threshold)" = 0x03 ] &&
	[ "$(field "$SOF_TMP/ss" Marking_Rate)" = 7 ] || checks+=("SwitchCongestionSetting: $(tr '\n' ' ' <"$SOF_TMP/ss")")
sim ibccconfig SwitchPortCongestionSetting 3 3 1 0 5 6 9 >/dev/null
sim ibccquery SwitchPortCongestionSetting 3 3 >"$SOF_TMP/sp"
[ "$(field "$SOF_TMP/sp" Valid)" = 1 ] && [ "$(field "$SOF_TMP/sp" Threshold)" = 0x05 ] &&
	[ "$(field "$SOF_TMP/sp" Packet_Size)" = 6 ] &&
	[ "$(field "$SOF_TMP/sp" Cong_Parm_Marking_Rate)" = 9 ] || checks+=("SwitchPortCongestionSetting: $(tr '\n' ' ' <"$SOF_TMP/sp")")
sim ibccconfig CACongestionSetting 6 1 0x4 200 3 4 5 >/dev/null
sim ibccquery CACongestionSetting 6 >"$SOF_TMP/cs"
[ "$(field "$SOF_TMP/cs" Port_Control)" = 0x0001 ] && [ "$(field "$SOF_TMP/cs" Control_Map)" = 0x0004 ] &&
	grep -A4 '^SL:\.*2$' "$SOF_TMP/cs" | tr '\n' ' ' |
	grep -q 'CCTI_Timer:\.*200 CCTI_Increase:\.*3 Trigger_Threshold:\.*4 CCTI_Min:\.*5' ||
	checks+=("CACongestionSetting: $(tr '\n' ' ' <"$SOF_TMP/cs" | cut -c1-300)")
# shellcheck disable=SC2046 # 64 entries, one word each
sim ibccconfig CongestionControlTable 6 63 0 $(for i in $(seq 0 63); do echo "$((i % 4)):$i"; done) >/dev/null
sim ibccquery CongestionControlTable 6 >"$SOF_TMP/cct"
[ "$(field "$SOF_TMP/cct" CCTI_Limit)" = 63 ] && [ "$(grep -c '^CCT_Multiplier' "$SOF_TMP/cct")" = 64 ] &&
	[ "$(grep '^CCT_Multiplier' "$SOF_TMP/cct" | tail -n 1 | sed 's/.*\.//')" = 63 ] &&
	[ "$(grep '^CCT_Shift' "$SOF_TMP/cct" | tail -n 1 | sed 's/.*\.//')" = 3 ] || checks+=("CongestionControlTable: $(head -c 300 "$SOF_TMP/cct")")
t1=$(sim ibccquery Timestamp 4 | sed -n 's/^Timestamp:\.*//p')
sleep 0.2
t2=$(sim ibccquery Timestamp 4 | sed -n 's/^Timestamp:\.*//p')
[ -n "$t1" ] && [ -n "$t2" ] && [ "$t2" != "$t1" ] || checks+=("Timestamp $t1 then $t2")
# a protected CC_Key: queries without it are dropped and counted
sim ibccconfig CongestionKeyInfo 4 0x1234 1 0 0 >/dev/null
if sim ibccquery CongestionKeyInfo 4 >"$SOF_TMP/ck"; then
	checks+=("CongestionKeyInfo without the key answered")
fi
sim ibccquery -c 0x1234 CongestionKeyInfo 4 >"$SOF_TMP/ck"
[ "$(field "$SOF_TMP/ck" CC_Key)" = 0x0000000000001234 ] && [ "$(field "$SOF_TMP/ck" CC_KeyProtectBit)" = 1 ] &&
	[ "$(field "$SOF_TMP/ck" CC_KeyViolations)" -ge 1 ] || checks+=("CongestionKeyInfo with the key: $(tr '\n' ' ' <"$SOF_TMP/ck")")
sim ibccconfig -c 0x1234 CongestionKeyInfo 4 0 0 0 0 >/dev/null
sim ibccquery CongestionKeyInfo 4 >/dev/null || checks+=("CC_Key 0 again: a query without a key refused")
if [ ${#checks[@]} -eq 0 ]; then
	ok "fabric/diags: ibccconfig / ibccquery round trips (switch, switch port, CA settings, 64-entry CCT), TimeStamp runs ($t1 -> $t2), a protected CC_Key drops queries without it (violations counted)"
else
	not_ok "fabric/diags: congestion control" "${checks[*]}"
fi

# --- a switch port disabled and enabled by SMP ------------------------------
# ibportstate on S2 (LID 3) port 1, H2's link: disabled, the link goes down
# at both ends (H2's port Down, Polling); enabled, it comes up again
# (fabric/node.c looks at the link of the port the PortInfo Set names)
checks=()
sim ibportstate 3 1 disable >"$SOF_TMP/pstate" 2>&1 || checks+=("ibportstate disable: $(tr '\n' ' ' <"$SOF_TMP/pstate" | cut -c1-200)")
fabric port S2 1 >"$SOF_TMP/s2p1"
fabric port H2 1 >"$SOF_TMP/h2p1"
grep -q '^port S2 1 state DOWN phys Disabled .* link down' "$SOF_TMP/s2p1" || checks+=("disabled: $(head -n 1 "$SOF_TMP/s2p1")")
grep -q '^port H2 1 state DOWN phys Polling .* link down' "$SOF_TMP/h2p1" || checks+=("H2 after the disable: $(head -n 1 "$SOF_TMP/h2p1")")
sim ibportstate 3 1 enable >"$SOF_TMP/pstate" 2>&1 || checks+=("ibportstate enable: $(tr '\n' ' ' <"$SOF_TMP/pstate" | cut -c1-200)")
fabric port H2 1 >"$SOF_TMP/h2p1"
grep -q '^port H2 1 state [A-Z]* phys LinkUp .* link up' "$SOF_TMP/h2p1" || checks+=("H2 after the enable: $(head -n 1 "$SOF_TMP/h2p1")")
if [ ${#checks[@]} -eq 0 ]; then
	ok "fabric/diags: ibportstate disable / enable of S2 port 1 takes H2's link down at both ends and up again"
else
	not_ok "fabric/diags: port disable by SMP" "${checks[*]}"
fi
sof_kill sm

# --- OpenSM's congestion control manager ----------------------------------
cat >"$SOF_TMP/osm.conf" <<'EOF'
congestion_control TRUE
cc_sw_cong_setting_control_map 0x1d
cc_sw_cong_setting_victim_mask 0x000000000000000000000000000000000000000000000000000000000000000e
cc_sw_cong_setting_threshold 0x07
cc_sw_cong_setting_packet_size 4
cc_sw_cong_setting_marking_rate 11
cc_ca_cong_setting_port_control 0x0001
cc_ca_cong_setting_control_map 0x0003
cc_ca_cong_setting_ccti_timer 1 120
cc_ca_cong_setting_ccti_increase 1 2
cc_cct 0:0,0:1,1:2,1:3
EOF
rm -f "$SOF_TMP/osm.log"
sof_bg opensm 300 env LD_PRELOAD="$UMAD2SIM" opensm -F "$SOF_TMP/osm.conf" -d 2 -f "$SOF_TMP/osm.log"
checks=()
if sof_wait_log "$SOF_TMP/osm.log" 'SUBNET UP' 60; then
	# the CC manager runs after the sweep: wait for the last switch's
	# settings to show
	for _ in $(seq 1 50); do
		sim ibccquery SwitchCongestionSetting 5 >"$SOF_TMP/ss"
		[ "$(field "$SOF_TMP/ss" Marking_Rate)" = 11 ] && break
		sleep 0.2
	done
	for lid in 2 3 5; do
		sim ibccquery SwitchCongestionSetting $lid >"$SOF_TMP/ss"
		[ "$(field "$SOF_TMP/ss" Control_Map)" = 0x0000001d ] &&
			[ "$(field "$SOF_TMP/ss" Victim_Mask | sed 's/^0*//')" = e ] &&
			[ "$(field "$SOF_TMP/ss" Threshold)" = 0x07 ] &&
			[ "$(field "$SOF_TMP/ss" Packet_Size)" = 4 ] &&
			[ "$(field "$SOF_TMP/ss" Marking_Rate)" = 11 ] || checks+=("switch $lid: $(tr '\n' ' ' <"$SOF_TMP/ss")")
	done
	for lid in 4 6; do
		sim ibccquery CACongestionSetting $lid >"$SOF_TMP/cs"
		[ "$(field "$SOF_TMP/cs" Port_Control)" = 0x0001 ] && [ "$(field "$SOF_TMP/cs" Control_Map)" = 0x0003 ] &&
			grep -A4 '^SL:\.*1$' "$SOF_TMP/cs" | tr '\n' ' ' |
			grep -q 'CCTI_Timer:\.*120 CCTI_Increase:\.*2 ' || checks+=("CA $lid: $(tr '\n' ' ' <"$SOF_TMP/cs" | cut -c1-200)")
		sim ibccquery CongestionControlTable $lid >"$SOF_TMP/cct"
		[ "$(field "$SOF_TMP/cct" CCTI_Limit)" = 3 ] &&
			[ "$(grep '^CCT_Multiplier' "$SOF_TMP/cct" | sed -n 4p | sed 's/.*\.//')" = 3 ] || checks+=("CCT of $lid: $(head -c 200 "$SOF_TMP/cct")")
	done
	grep -i 'cc.*err\|congestion.*fail' "$SOF_TMP/osm.log" >"$SOF_TMP/ccerr"
	[ ! -s "$SOF_TMP/ccerr" ] || checks+=("OpenSM: $(head -n 3 "$SOF_TMP/ccerr")")
else
	checks+=("OpenSM: no SUBNET UP within 60 s")
fi
if [ ${#checks[@]} -eq 0 ]; then
	ok "fabric/diags: OpenSM --congestion_control configured S1-S3 and H2, H3 as its file says (ibccquery reads it back), no CC errors in its log"
else
	not_ok "fabric/diags: OpenSM congestion control" "${checks[*]}"
	sof_dump "$SOF_TMP/osm.log"
fi
sof_kill opensm
fabric down >"$OUT" 2>&1
sof_exit
