#!/bin/bash
# Issue 20: M_Key (IBA 14.2.4) on `softofed fabric up --ibsim` line3,
# infiniband-diags from H3 through Debian's libumad2sim:
#   1. our SM (H1) with `-y KEY --m_key_protection_level 2
#      --m_key_lease_period 2`: SUBNET UP; `smpquery -y KEY -K portinfo`
#      of H2 and of switch S2 show the M_Key, protection bits 2 and the
#      lease (data read back from the ports the SM set);
#   2. the same Gets without the key get no answer (level 2 checks Gets),
#      the ports' M_KeyViolations grow, H2's and S2's traps 256 reach our
#      SM, which prints the bad key and what was asked (PortInfo, NodeInfo);
#   3. our SM sweeps on with its key (light sweeps 1 s apart, no
#      violation counted at H2 or S2 meanwhile; H3 keeps its LID);
#   4. the SM killed: a violation at S2 starts its 2 s lease; after it,
#      a Get without the key is answered and protection bits read 0;
#   5. OpenSM with its own m_key config (m_key, level 2) on a new fabric:
#      SUBNET UP, its key in the ports, Gets without it unanswered.
# Runs in a private network namespace.
#
# Usage: tests/integration/fabric_sm_mkey.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_ns_enter "$@"
sof_init

# shellcheck source=tests/ib_fabric.sh
. "$SOF_ROOT/tests/ib_fabric.sh"
sof_sim_init sm/mkey softofed-sm opensm smpquery
mkdir -p "$SOF_TMP/mk" && cd "$SOF_TMP/mk" || exit 1

KEY=0x5eed0000cafe0001
OKEY=0x1111222233334444
# diagnostics from H3
SOF_SIM_HOST=H3
# lid_of KEY NAME: the LID of CA or switch NAME (ibnetdiscover with KEY)
lid_of() {
	sof_sim ibnetdiscover -y "$1" >"$SOF_TMP/ibnd"
	sof_sim_lid "$SOF_TMP/ibnd" "$2"
}
# field FILE NAME: the value of smpquery's NAME:....value line
field() { sed -n "s/^$2:\.*\(.*\)$/\1/p" "$1" | head -n 1; }

sof_sim_fabric up "$SIM_TOPO/line3.net" --ibsim >"$OUT" 2>&1

# 1. ours with an M_Key, level 2, lease 2 s
sof_bg smA 120 env LD_PRELOAD="$UMAD2SIM" SIM_HOST=H1 "$SIM_SM" -v --sweep 1 -y $KEY \
	--m_key_protection_level 2 --m_key_lease_period 2
if ! sof_wait_log "$(sof_out smA)" 'SUBNET UP' 30; then
	not_ok "sm/mkey ours: SUBNET UP" "no SUBNET UP"
	sof_dump "$(sof_out smA)"
	sof_kill smA
	sof_sim_fabric down >"$OUT" 2>&1
	sof_exit
fi
h2=$(lid_of $KEY H2)
s2=$(lid_of $KEY S2)
h3=$(lid_of $KEY H3)
sof_sim smpquery -y $KEY -K portinfo "$h2" 1 >"$SOF_TMP/pi_h2"
sof_sim smpquery -y $KEY -K portinfo "$s2" 0 >"$SOF_TMP/pi_s2"
if [ -n "$h2" ] && [ -n "$s2" ] &&
	[ "$(field "$SOF_TMP/pi_h2" Mkey)" = "$KEY" ] && [ "$(field "$SOF_TMP/pi_s2" Mkey)" = "$KEY" ] &&
	[ "$(field "$SOF_TMP/pi_h2" ProtectBits)" = 2 ] && [ "$(field "$SOF_TMP/pi_s2" ProtectBits)" = 2 ] &&
	[ "$(field "$SOF_TMP/pi_h2" MkeyLeasePeriod)" = 2 ] &&
	[ "$(field "$SOF_TMP/pi_h2" Lid)" = "$h2" ]; then
	ok "sm/mkey ours: SUBNET UP with -y $KEY level 2 lease 2; smpquery -y -K portinfo of H2 (LID $h2) and S2 (LID $s2) shows the M_Key, protection bits 2, lease 2"
else
	not_ok "sm/mkey ours: the ports' M_Key" "H2 $h2 S2 $s2: $(cat "$SOF_TMP/pi_h2" "$SOF_TMP/pi_s2")"
fi

# 2. without the key: no answer, violations counted, trap 256 from S2
v_h2=$(field "$SOF_TMP/pi_h2" MkeyViolations)
v_s2=$(field "$SOF_TMP/pi_s2" MkeyViolations)
if ! sof_sim smpquery -t 200 portinfo "$h2" 1 >"$SOF_TMP/nokey_h2" &&
	! sof_sim smpquery -t 200 nodeinfo "$s2" >"$SOF_TMP/nokey_s2" &&
	sof_sim smpquery -y $KEY portinfo "$h2" 1 >"$SOF_TMP/pi_h2b" &&
	sof_sim smpquery -y $KEY portinfo "$s2" 0 >"$SOF_TMP/pi_s2b" &&
	[ "$(field "$SOF_TMP/pi_h2b" MkeyViolations)" -gt "${v_h2:-0}" ] &&
	[ "$(field "$SOF_TMP/pi_s2b" MkeyViolations)" -gt "${v_s2:-0}" ] &&
	sof_wait_log "$(sof_out smA)" "trap 256: bad M_Key 0x0000000000000000 at LID $s2 (method 0x01, attribute 0x0011" 10 &&
	sof_wait_log "$(sof_out smA)" "trap 256: bad M_Key 0x0000000000000000 at LID $h2 (method 0x01, attribute 0x0015, modifier 0x1)" 10; then
	ok "sm/mkey ours: Gets without the M_Key unanswered (level 2), M_KeyViolations $v_h2 -> $(field "$SOF_TMP/pi_h2b" MkeyViolations) at H2 and $v_s2 -> $(field "$SOF_TMP/pi_s2b" MkeyViolations) at S2, their traps 256 name the key and the Gets (PortInfo, NodeInfo)"
else
	not_ok "sm/mkey ours: without the key" "$(cat "$SOF_TMP/nokey_h2" "$SOF_TMP/pi_h2b" "$SOF_TMP/pi_s2b"; grep 'trap' "$(sof_out smA)" | tail -3)"
fi

# 3. our SM goes on sweeping with its key: light sweeps 1 s apart (it
# prints its totals when stopped), and none of its SMPs is a violation
up=$(sed -n 's/.*SUBNET UP in .* \([0-9]*\) SMPs (.*/\1/p' "$(sof_out smA)" | head -n 1)
sof_sim smpquery -y $KEY portinfo "$h2" 1 >"$SOF_TMP/pi_h2c"
sof_sim smpquery -y $KEY portinfo "$s2" 0 >"$SOF_TMP/pi_s2c"
sleep 3
sof_sim smpquery -y $KEY portinfo "$h2" 1 >"$SOF_TMP/pi_h2d"
sof_sim smpquery -y $KEY portinfo "$s2" 0 >"$SOF_TMP/pi_s2d"
lid3=$(lid_of $KEY H3)
alive=no
sof_alive smA && alive=yes
sof_kill smA
sent=$(sed -n 's/.* \([0-9]*\) SMPs sent, .*/\1/p' "$(sof_out smA)")
vc="$(field "$SOF_TMP/pi_h2c" MkeyViolations) $(field "$SOF_TMP/pi_s2c" MkeyViolations)"
vd="$(field "$SOF_TMP/pi_h2d" MkeyViolations) $(field "$SOF_TMP/pi_s2d" MkeyViolations)"
if [ $alive = yes ] && [ "$lid3" = "$h3" ] && [ -n "$up" ] && [ -n "$sent" ] &&
	[ "$sent" -gt $((up + 20)) ] && [ "$vc" = "$vd" ] && [ "$vc" != " " ]; then
	ok "sm/mkey ours: the SM swept on with its key: $sent SMPs sent ($up to SUBNET UP), M_KeyViolations of H2 and S2 unchanged ($vc); H3 kept LID $h3"
else
	not_ok "sm/mkey ours: sweeps with the key" "alive $alive, H3 $lid3/$h3, up $up, sent $sent, violations $vc -> $vd"
	sof_dump "$(sof_out smA)"
fi

# 4. the lease: the SM gone, a violation, 2 s, protection lapses
sof_sim smpquery -t 200 nodeinfo "$s2" >/dev/null
sof_sim smpquery -t 200 portinfo "$s2" 0 >"$SOF_TMP/early"
early=$?
sleep 2.5
if [ $early -ne 0 ] && sof_sim smpquery -t 500 -K portinfo "$s2" 0 >"$SOF_TMP/late" &&
	[ "$(field "$SOF_TMP/late" ProtectBits)" = 0 ]; then
	ok "sm/mkey lease: with the SM gone, a Get without the key at S2 unanswered, 2.5 s after the violation answered, protection bits 0"
else
	not_ok "sm/mkey lease" "early $early; $(cat "$SOF_TMP/late")"
fi
sof_sim_fabric down >"$OUT" 2>&1

# 5. OpenSM with its own m_key
printf 'm_key %s\nm_key_protection_level 2\nm_key_lease_period 0\nsweep_interval 1\n' $OKEY >osm.conf
sof_sim_fabric up "$SIM_TOPO/line3.net" --ibsim >"$OUT" 2>&1
sof_bg osm 120 env LD_PRELOAD="$UMAD2SIM" SIM_HOST=H1 OSM_CACHE_DIR="$SOF_TMP/mk" \
	OSM_TMP_DIR="$SOF_TMP/mk" opensm -F "$SOF_TMP/mk/osm.conf" -d 2 -f "$SOF_TMP/mk/osm.log"
if sof_wait_log "$SOF_TMP/mk/osm.log" 'SUBNET UP' 30; then
	h2=$(lid_of $OKEY H2)
	s2=$(lid_of $OKEY S2)
	sof_sim smpquery -y $OKEY -K portinfo "$h2" 1 >"$SOF_TMP/o_h2"
	sof_sim smpquery -y $OKEY -K portinfo "$s2" 0 >"$SOF_TMP/o_s2"
	if [ -n "$h2" ] && [ "$(field "$SOF_TMP/o_h2" Mkey)" = "$OKEY" ] &&
		[ "$(field "$SOF_TMP/o_s2" Mkey)" = "$OKEY" ] &&
		[ "$(field "$SOF_TMP/o_h2" ProtectBits)" = 2 ] &&
		! sof_sim smpquery -t 200 portinfo "$h2" 1 >/dev/null; then
		ok "sm/mkey OpenSM: m_key $OKEY level 2: SUBNET UP, the key in H2's and S2's PortInfo, a Get without it unanswered"
	else
		not_ok "sm/mkey OpenSM" "H2 $h2: $(cat "$SOF_TMP/o_h2" "$SOF_TMP/o_s2")"
		sof_dump "$SOF_TMP/mk/osm.log"
	fi
else
	not_ok "sm/mkey OpenSM" "no SUBNET UP"
	sof_dump "$SOF_TMP/mk/osm.log"
fi
sof_kill osm
sof_sim_fabric down >"$OUT" 2>&1
sof_exit
