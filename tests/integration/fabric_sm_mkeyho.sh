#!/bin/bash
# Issue 20 item 7 with M_Keys (IBA 14.2.4): an SM that does not know our
# keys (OpenSM without the guid2mkey file) taking the subnet from ours, on
# `softofed fabric up --ibsim` line3, diagnostics from H3 through Debian's
# libumad2sim:
#   1. ours (H1) with per-port keys at protection level 2, lease 2 s and
#      --m_key_release: SUBNET UP; H2's PortInfo gets no answer without
#      its key; ours stopped (SIGTERM) sets every management port back to
#      M_Key 0 ("M_Keys released on 6 ports"): H2 answers a Get without a
#      key and shows M_Key 0, protection 0; OpenSM (H1, no key) started:
#      SUBNET UP, sminfo names it;
#   2. a HANDOVER: ours (H2, priority 1, per-port keys at level 1,
#      --m_key_release) master; OpenSM (H1, priority 15) started: its Gets
#      pass at level 1, it finds ours master and goes STANDBY; ours clears
#      the keys (answered), then hands over; OpenSM master and SUBNET UP,
#      H3's port M_Key 0 (OpenSM's Trap 144 to ours is repressed with the
#      key of OpenSM's port, or its SMA would drop the TrapRepress).
#   3. a HANDOVER without a release (level 1, lease 2 s) to another of
#      ours with other keys: the leases free the ports (ours as STANDBY
#      sends no SMP with a key), the new master's next heavy sweep takes
#      them with the key they show at protection 0: every port's SM LID
#      is then the new master's, and the traps stop (none new in the
#      fabric, no trap 256 more at the new master: its TrapRepress
#      reaches the port's trap through libumad2sim);
#   4./5. a master at protection level 2 / 3 (lease 3 s) gone without a
#      release (SIGTERM, no --m_key_release), its standby (ours with
#      other keys, which handed over to it) takes over: its own port and
#      every other drop its SMPs until their leases run out (the new
#      master's first sweep pings every node of its last one by its old
#      path, so all leases start at once); then every port's SM LID is
#      the standby's.
# Without a release (ours killed) only the ports' M_Key leases free them
# (IBA 14.2.4.2); OpenSM through libumad2sim then waits for good on the
# first SMP a port drops (libumad2sim reports no time-outs), so that case
# is described in sm/README.md, not run here.
# Runs in a private network namespace.
#
# Usage: tests/integration/fabric_sm_mkeyho.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_ns_enter "$@"
sof_init

# shellcheck source=tests/ib_fabric.sh
. "$SOF_ROOT/tests/ib_fabric.sh"
sof_sim_init sm/mkeyho softofed-sm opensm smpquery sminfo
mkdir -p "$SOF_TMP/mh" && cd "$SOF_TMP/mh" || exit 1

BASE=0x5eed0000cafe0001
H1=0x100001
SOF_SIM_HOST=H3
# field FILE NAME: the value of smpquery's NAME:....value line
field() { sed -n "s/^$2:\.*\(.*\)$/\1/p" "$1" | head -n 1; }
# ours NAME HOST ARGS...: our SM with per-port keys
ours() {
	local name=$1 host=$2
	shift 2
	: >"$(sof_out "$name")"
	sof_bg "$name" 150 env LD_PRELOAD="$UMAD2SIM" SIM_HOST="$host" "$SIM_SM" -v --sweep 1 \
		-y $BASE --m_key_per_port --guid2mkey "$SOF_TMP/mh/g2m.$name" "$@"
}
# osm NAME PRIORITY: OpenSM on H1, no M_Key, sweeps 1 s apart
osm() {
	sof_bg "$1" 150 env LD_PRELOAD="$UMAD2SIM" SIM_HOST=H1 OSM_CACHE_DIR="$SOF_TMP/mh" \
		OSM_TMP_DIR="$SOF_TMP/mh" opensm -F "$SOF_TMP/mh/osm.conf" -p "$2" -d 2 \
		-f "$SOF_TMP/mh/$1.log"
}
# every sweep heavy: the ports it first found with an unknown M_Key read again
printf 'sminfo_polling_timeout 500\npolling_retry_number 2\nforce_heavy_sweep TRUE\nsweep_interval 1\n' >osm.conf
# h_lid NAME: the LID ibnetdiscover (no key) reads for CA NAME
h_lid() {
	sof_sim ibnetdiscover >"$SOF_TMP/ibnd"
	sof_sim_lid "$SOF_TMP/ibnd" "$1"
}
# master_is GUID: sminfo from H3 names GUID master (within 10 s)
_master_is() {
	sof_sim sminfo >"$SOF_TMP/sminfo"
	grep -q "sm guid $1, .*SMINFO_MASTER" "$SOF_TMP/sminfo"
}
master_is() { sof_wait_for 10 _master_is "$1"; }
# sm_lids: the SM LID of every port of line3 (LIDs 1-6, from H3 without a
# key; 3 s each at most: through libumad2sim a dropped SMP is never
# answered)
sm_lids() {
	local l out=
	for l in 1 2 3 4 5 6; do
		SIM_HOST=H3 LD_PRELOAD=$UMAD2SIM timeout -s KILL 3 smpquery portinfo "$l" 0 \
			>"$SOF_TMP/pil" 2>/dev/null
		out="$out $(field "$SOF_TMP/pil" SMLid)"
	done
	echo "$out"
}
# all_of LID [SECS]: every port's SM LID is LID (within SECS, 15)
_all_of() { lids=$(sm_lids) && [ "$lids" = "$(printf ' %s' "$1" "$1" "$1" "$1" "$1" "$1")" ]; }
all_of() { sof_wait_for "${2:-15}" _all_of "$1"; }
traps() { sof_sim_fabric status | sed -n 's/.* traps \([0-9]*\) .*/\1/p'; }

# 1. released on SIGTERM, at level 2
sof_sim_fabric up "$SIM_TOPO/line3.net" --ibsim >"$OUT" 2>&1
ours smA H1 --m_key_protection_level 2 --m_key_lease_period 2 --m_key_release --guid2lid g2l
if sof_wait_log "$(sof_out smA)" 'SUBNET UP' 30; then
	h2=$(awk '$1 == "0x0000000000100003" {print $2}' g2l)
	h2=$((h2))
	sof_sim smpquery portinfo "$h2" 1 >"$SOF_TMP/pi0"
	locked=$?
	sof_kill smA
	sof_sim smpquery -K portinfo "$h2" 1 >"$SOF_TMP/pi1"
	osm osmA 1
	if [ "$locked" != 0 ] && grep -q 'M_Keys released on 6 ports$' "$(sof_out smA)" &&
		[ "$(field "$SOF_TMP/pi1" Mkey)" = 0x0000000000000000 ] &&
		[ "$(field "$SOF_TMP/pi1" ProtectBits)" = 0 ] &&
		sof_wait_log "$SOF_TMP/mh/osmA.log" 'SUBNET UP' 20 && master_is $H1; then
		ok "sm/mkeyho release: ours at level 2 (H2 unanswered without its key), on SIGTERM released the keys of 6 ports (H2: M_Key $(field "$SOF_TMP/pi1" Mkey), protection 0); OpenSM without keys then SUBNET UP, sminfo names it"
	else
		not_ok "sm/mkeyho release" "locked $locked; $(grep 'released' "$(sof_out smA)"); H2 after: Mkey '$(field "$SOF_TMP/pi1" Mkey)' bits '$(field "$SOF_TMP/pi1" ProtectBits)'; OpenSM: $(grep -o 'SUBNET UP\|Entering [A-Z]* state' "$SOF_TMP/mh/osmA.log" | tr '\n' ' ')"
		sof_dump "$(sof_out smA)" "$SOF_TMP/mh/osmA.log"
	fi
else
	not_ok "sm/mkeyho release" "ours: no SUBNET UP"
	sof_dump "$(sof_out smA)"
fi
sof_kill smA
sof_kill osmA
sof_sim_fabric down >"$OUT" 2>&1

# 2. released before a HANDOVER to OpenSM, at level 1
sof_sim_fabric up "$SIM_TOPO/line3.net" --ibsim >"$OUT" 2>&1
ours smB H2 -p 1 --m_key_protection_level 1 --m_key_lease_period 2 --m_key_release
if sof_wait_log "$(sof_out smB)" 'SUBNET UP' 30; then
	osm osmB 15
	h3=$(h_lid H3)
	if sof_wait_log "$SOF_TMP/mh/osmB.log" 'Entering STANDBY state' 30 &&
		sof_wait_log "$(sof_out smB)" 'M_Keys released before the HANDOVER' 20 &&
		sof_wait_log "$(sof_out smB)" 'STANDBY: handed over to 0x100001' 10 &&
		sof_wait_log "$SOF_TMP/mh/osmB.log" 'SUBNET UP' 30 && master_is $H1 &&
		sof_sim smpquery -K portinfo "$h3" 1 >"$SOF_TMP/pi3" &&
		[ "$(field "$SOF_TMP/pi3" Mkey)" = 0x0000000000000000 ]; then
		ok "sm/mkeyho handover: ours master at level 1, OpenSM (priority 15, no keys) STANDBY behind it; ours released the keys and handed over; OpenSM master and SUBNET UP, sminfo names it, H3's M_Key 0"
	else
		not_ok "sm/mkeyho handover" "ours: $(grep 'HANDOVER\|STANDBY\|released' "$(sof_out smB)" | tr '\n' ' '); OpenSM: $(grep -o 'SUBNET UP\|Entering [A-Z]* state' "$SOF_TMP/mh/osmB.log" | tr '\n' ' ')"
		sof_dump "$(sof_out smB)" "$SOF_TMP/mh/osmB.log"
	fi
else
	not_ok "sm/mkeyho handover" "ours: no SUBNET UP"
	sof_dump "$(sof_out smB)"
fi
sof_kill smB
sof_kill osmB
sof_sim_fabric down >"$OUT" 2>&1

# 3. a HANDOVER without a release, at level 1 with a 2 s lease, to another
# of ours (H1, priority 15) that has other keys: its Sets are dropped until
# the leases run out (ours as STANDBY represses no trap and polls without
# a key: an SMP with the key would stop the lease, IBA 14.2.4.2); its
# next sweep is heavy, reads each port's old key at protection 0 and
# writes its own with it: H1's SM LID is then its own LID
sof_sim_fabric up "$SIM_TOPO/line3.net" --ibsim >"$OUT" 2>&1
ours smC H2 -p 1 --m_key_protection_level 1 --m_key_lease_period 2
if sof_wait_log "$(sof_out smC)" 'SUBNET UP' 30; then
	ours smD H1 -p 15 -y 0x7777000000000001
	h1=$(h_lid H1)
	got=
	if sof_wait_log "$(sof_out smC)" 'STANDBY: handed over to 0x100001' 30; then
		for _ in $(seq 1 150); do
			sof_sim smpquery portinfo "$h1" 1 >"$SOF_TMP/pi1c" 2>/dev/null
			got=$(field "$SOF_TMP/pi1c" SMLid)
			[ "$got" = "$h1" ] && break
			sleep 0.2
		done
	fi
	lids=
	t1=x t2=y
	if [ "$got" = "$h1" ] && all_of "$h1"; then
		# the traps the new master's refused Sets caused: repressed
		sleep 1
		t1="$(traps) $(grep -c 'trap 256:' "$(sof_out smD)")"
		sleep 2
		t2="$(traps) $(grep -c 'trap 256:' "$(sof_out smD)")"
	fi
	if [ "$got" = "$h1" ] && [ "$t1" = "$t2" ]; then
		ok "sm/mkeyho handover without release: ours (level 1, lease 2 s) handed over to ours with other keys; the leases ran out and the new master took the ports: every port's SM LID is its own, $h1; then no new trap in 2 s (fabric traps, traps 256 at the new master: $t1)"
	else
		not_ok "sm/mkeyho handover without release" "H1 (LID $h1) SM LID '$got'; SM LIDs of LIDs 1-6:$lids; traps (fabric, 256 at the new master) '$t1' then '$t2'; $(grep 'HANDOVER\|STANDBY' "$(sof_out smC)" | tr '\n' ' ')"
		sof_dump "$(sof_out smC)" "$(sof_out smD)"
	fi
else
	not_ok "sm/mkeyho handover without release" "ours: no SUBNET UP"
	sof_dump "$(sof_out smC)"
fi
sof_kill smD
sof_kill smC
sof_sim_fabric down >"$OUT" 2>&1

# 4., 5. a master at level 2 / 3 gone without a release: ours (H1,
# priority 1, keys of its own at level 0) master first, hands over to
# ours (H2, priority 15, per-port keys at LEVEL, lease 3 s), which
# protects every port; that one stopped (SIGTERM, no --m_key_release),
# the standby takes over once the leases ran out
for level in 2 3; do
	sof_sim_fabric up "$SIM_TOPO/line3.net" --ibsim >"$OUT" 2>&1
	ours smE$level H1 -p 1 -y 0x7777000000000001
	lids= he= took=
	# (its QoS Sets done: none of its SMPs is in flight when the new
	# master's keys come, a violation that would start a lease early)
	if sof_wait_log "$(sof_out smE$level)" 'SL2VL and VLArbitration set' 30; then
		he=$(h_lid H1)
		ours smF$level H2 -p 15 --m_key_protection_level $level --m_key_lease_period 3
		if sof_wait_log "$(sof_out smE$level)" 'STANDBY: handed over to 0x100003' 30 &&
			sof_wait_log "$(sof_out smF$level)" 'SUBNET UP' 30; then
			sof_kill smF$level
			sof_wait_log "$(sof_out smE$level)" 'is gone: taking over' 15 &&
				t0=$(now_ms) && all_of "$he" 20 && took=$(($(now_ms) - t0))
		fi
	fi
	if [ -n "$he" ] && [ "$lids" = "$(printf ' %s' "$he" "$he" "$he" "$he" "$he" "$he")" ]; then
		ok "sm/mkeyho level $level master gone: ours at protection level $level (lease 3 s) stopped at its SUBNET UP without a release; its standby (other keys) took over when the leases ran out: every port's SM LID is its own, $he, ${took} ms after it found the master gone"
	else
		not_ok "sm/mkeyho level $level master gone" "SM LIDs of LIDs 1-6: '$lids'; $(grep 'HANDOVER\|STANDBY\|taking over\|SUBNET UP\|not answer' "$(sof_out smE$level)" | tr '\n' ' ')"
		sof_dump "$(sof_out smE$level)" "$(sof_out smF$level)"
	fi
	sof_kill smE$level
	sof_kill smF$level
	sof_sim_fabric down >"$OUT" 2>&1
done

sof_exit
