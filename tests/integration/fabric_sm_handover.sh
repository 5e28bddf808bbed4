#!/bin/bash
# Issue 20 item 7: SMInfo handover driven by priority (IBA 14.4.1: a master
# that finds a STANDBY of higher priority, or equal priority and lower
# GUID, sends SMInfo Set HANDOVER; the standby becomes master and answers
# with SMInfo Set ACKNOWLEDGE; the old master goes STANDBY), on
# `softofed fabric up --ibsim` line3 through Debian's libumad2sim, each
# step judged by `sminfo` (run from H3) naming the new master, the old one
# STANDBY in its own SMInfo (`sminfo LID`), H3's LID kept and
# routed:
#   1. ours (H1, priority 1) master; ours (H2, priority 10) started: it goes
#      STANDBY and sends the master a Trap 144, the master asks it for its
#      SMInfo and hands over to it, it ACKNOWLEDGEs: H2 master;
#   2. ours in H1 restarted with priority 15: STANDBY behind H2, H2 hands
#      over: H1 master again (the other direction);
#   3. OpenSM (H1, priority 1) master; ours (H2, priority 10) started:
#      ours goes STANDBY and sends OpenSM a Trap 144 (as OpenSM does);
#      OpenSM hands over to ours (its config also forces heavy sweeps, as
#      OpenSM finds other SMs in those), ours ACKNOWLEDGEs, OpenSM STANDBY;
#   4. OpenSM in H1 restarted with priority 15: STANDBY behind ours, which
#      hands over to it: OpenSM master, ours STANDBY (ours → OpenSM); the
#      Trap 144 OpenSM sent our master when it found it is repressed (the
#      TrapRepress reaches OpenSM through the fabric's ibsim protocol with
#      its TID), so OpenSM's first sweep as master ends in SUBNET UP and
#      sminfo from H3 names it;
#   5. two masters: OpenSM stopped (SIGSTOP) until ours, its standby, finds
#      it gone and takes over, then let go on (SIGCONT): OpenSM finds a
#      second master of lower priority, waits for it to hand over
#      (C14-60.2.1) and tells it with a Trap 144; ours, asking that port
#      for its SMInfo, finds a better master and hands over to it: OpenSM
#      master, ours STANDBY (before, ours stayed master beside it).
# Runs in a private network namespace.
#
# Usage: tests/integration/fabric_sm_handover.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_ns_enter "$@"
sof_init
# shellcheck source=tests/ib_fabric.sh
. "$SOF_ROOT/tests/ib_fabric.sh"
sof_sim_init sm/handover softofed-sm opensm
mkdir -p "$SOF_TMP/ho" && cd "$SOF_TMP/ho" || exit 1

# diagnostics from H3
SOF_SIM_HOST=H3
h3_lid() {
	sof_sim ibnetdiscover >"$SOF_TMP/ibnd"
	sof_sim_lid "$SOF_TMP/ibnd" H3
}
# _sminfo_is STATE GUID [LID]: one sminfo (to LID, else to the SM LID of
# H3's port) names GUID (a regex) in SMINFO_STATE
# shellcheck disable=SC2317 # called through sof_wait_for
_sminfo_is() {
	sof_sim sminfo ${3:+"$3"} >"$SOF_TMP/sminfo"
	grep -q "sm guid $2, .*SMINFO_$1" "$SOF_TMP/sminfo"
}
# sm_is STATE GUID [NAME]: _sminfo_is (to CA NAME's LID when given) within 10 s
sm_is() {
	local lid=""
	if [ -n "${3:-}" ]; then
		sof_sim ibnetdiscover >"$SOF_TMP/ibnd"
		lid=$(sof_sim_lid "$SOF_TMP/ibnd" "$3")
	fi
	sof_wait_for 10 _sminfo_is "$1" "$2" "$lid"
}
# up_after LOG REGEX: a SUBNET UP after the last line matching REGEX (awk's)
# shellcheck disable=SC2317 # called through sof_wait_for
up_after() {
	awk -v s="$2" '$0 ~ s { c++; up = 0 } /SUBNET UP/ { up = 1 } END { exit !(c && up) }' "$1" 2>/dev/null
}
# grew LOG REGEX N: more than N lines of LOG match REGEX
# shellcheck disable=SC2317 # called through sof_wait_for
grew() { [ "$(grep -c -- "$2" "$1" 2>/dev/null)" -gt "$3" ]; }
osm() { # NAME PRIORITY
	sof_bg "$1" 120 env LD_PRELOAD="$UMAD2SIM" SIM_HOST=H1 OSM_CACHE_DIR="$SOF_TMP/ho" \
		OSM_TMP_DIR="$SOF_TMP/ho" opensm -F "$SOF_TMP/ho/osm.conf" -p "$2" -d 2 -f "$SOF_TMP/ho/$1.log"
}
ours() { # NAME HOST PRIORITY
	sof_bg "$1" 120 env LD_PRELOAD="$UMAD2SIM" SIM_HOST="$2" "$SIM_SM" -v -p "$3"
}

H1=0x100001 H2=0x100003
printf 'sminfo_polling_timeout 500\npolling_retry_number 2\nforce_heavy_sweep TRUE\nsweep_interval 1\n' >osm.conf

sof_sim_fabric up "$SIM_TOPO/line3.net" --ibsim >"$OUT" 2>&1

# 1. ours -> ours
ours smA H1 1
if sof_wait_log "$(sof_out smA)" 'SUBNET UP' 30 && sm_is MASTER $H1; then
	before=$(h3_lid)
	ours smB H2 10
	if sof_wait_log "$(sof_out smA)" 'HANDOVER to the standby SM 0x100003' 20 &&
		sof_wait_log "$(sof_out smB)" 'HANDOVER from 0x100001: taking over' 10 &&
		sof_wait_log "$(sof_out smA)" 'STANDBY: handed over to 0x100003' 10 &&
		sof_wait_log "$(sof_out smB)" 'SUBNET UP' 20 && sm_is MASTER $H2 && sm_is STANDBY ".*" H1 &&
		[ "$(h3_lid)" = "$before" ]; then
		ok "sm/handover ours -> ours: H1 (priority 1) master, H2 (priority 10) STANDBY then HANDOVER to it, ACKNOWLEDGE, H1 STANDBY; sminfo names H2 master and H1 STANDBY, H3 kept LID $before"
	else
		not_ok "sm/handover ours -> ours" "$(cat "$SOF_TMP/sminfo")"
		sof_dump "$(sof_out smA)" "$(sof_out smB)"
	fi
	# 2. the other direction: H1 again, now of higher priority
	sof_kill smA
	: >"$(sof_out smA)"
	ours smA H1 15
	if sof_wait_log "$(sof_out smA)" 'STANDBY: the master SM is 0x100003' 20 &&
		sof_wait_log "$(sof_out smB)" 'HANDOVER to the standby SM 0x100001' 20 &&
		sof_wait_log "$(sof_out smB)" 'STANDBY: handed over to 0x100001' 10 &&
		sof_wait_log "$(sof_out smA)" 'SUBNET UP' 20 && sm_is MASTER $H1 && sm_is STANDBY ".*" H2 &&
		[ "$(h3_lid)" = "$before" ]; then
		ok "sm/handover ours -> ours back: H1 restarted with priority 15 went STANDBY, H2 handed over to it and went STANDBY; sminfo names H1 master and H2 STANDBY, H3 kept LID $before"
	else
		not_ok "sm/handover ours -> ours back" "$(cat "$SOF_TMP/sminfo")"
		sof_dump "$(sof_out smA)" "$(sof_out smB)"
	fi
else
	not_ok "sm/handover ours -> ours" "H1's SM: no SUBNET UP as master"
	sof_dump "$(sof_out smA)"
fi
sof_kill smA
sof_kill smB
sof_sim_fabric down >"$OUT" 2>&1

# 3. OpenSM -> ours by priority
sof_sim_fabric up "$SIM_TOPO/line3.net" --ibsim >"$OUT" 2>&1
osm osmA 1
if sof_wait_log "$SOF_TMP/ho/osmA.log" 'SUBNET UP' 30 && sm_is MASTER $H1; then
	before=$(h3_lid)
	ours smB H2 10
	if sof_wait_log "$(sof_out smB)" 'STANDBY: the master SM is 0x100001' 20 &&
		sof_wait_log "$(sof_out smB)" 'HANDOVER from 0x100001: taking over' 30 &&
		sof_wait_log "$(sof_out smB)" 'SUBNET UP' 20 && sm_is MASTER $H2 &&
		sof_wait_log "$SOF_TMP/ho/osmA.log" 'Entering STANDBY state' 10 &&
		[ "$(h3_lid)" = "$before" ]; then
		ok "sm/handover OpenSM -> ours: OpenSM (priority 1) master, ours (priority 10) STANDBY, OpenSM sent HANDOVER, ours took over and sent ACKNOWLEDGE, OpenSM entered STANDBY; sminfo names ours, H3 kept LID $before"
	else
		not_ok "sm/handover OpenSM -> ours" "$(cat "$SOF_TMP/sminfo")"
		sof_dump "$(sof_out smB)" "$SOF_TMP/ho/osmA.log"
	fi
	# 4. ours -> OpenSM by priority
	sof_kill osmA
	osm osmB 15
	if sof_wait_log "$SOF_TMP/ho/osmB.log" 'Entering STANDBY state' 30 &&
		sof_wait_log "$(sof_out smB)" 'HANDOVER to the standby SM 0x100001' 20 &&
		sof_wait_log "$(sof_out smB)" 'STANDBY: handed over to 0x100001' 10 &&
		sof_wait_log "$SOF_TMP/ho/osmB.log" 'Entering MASTER state' 10 && sm_is MASTER $H1 H1 &&
		sm_is STANDBY ".*" H2 && sof_wait_log "$SOF_TMP/ho/osmB.log" 'SUBNET UP' 30 && sm_is MASTER $H1 &&
		[ "$(h3_lid)" = "$before" ]; then
		ok "sm/handover ours -> OpenSM: OpenSM restarted with priority 15 went STANDBY behind ours, ours sent HANDOVER, OpenSM entered MASTER, ours STANDBY; OpenSM's sweep as master ended in SUBNET UP; sminfo from H3 names OpenSM master, to each: OpenSM (H1) MASTER, ours (H2) STANDBY; H3 kept LID $before"
	else
		not_ok "sm/handover ours -> OpenSM" "ours alive: $(sof_alive smB && echo yes || echo no); $(cat "$SOF_TMP/sminfo"); OpenSM: $(grep -o "Entering [A-Z]* state\|SUBNET UP\|ERR.*" "$SOF_TMP/ho/osmB.log" | tr "\n" " "); ours: $(grep "HANDOVER\|STANDBY" "$(sof_out smB)" | tr "\n" " ")"
		sof_dump "$(sof_out smB)" "$SOF_TMP/ho/osmB.log"
	fi
	# 5. two masters: ours takes over from a stopped OpenSM, which then
	# goes on
	s0=$(grep -c 'STANDBY: handed over to 0x100001' "$(sof_out smB)")
	kill -STOP -- "-${SOF_PID[osmB]}" 2>/dev/null
	if sof_wait_log "$(sof_out smB)" 'is gone: taking over' 30 &&
		sof_wait_for 30 up_after "$(sof_out smB)" 'is gone: taking over'; then
		kill -CONT -- "-${SOF_PID[osmB]}" 2>/dev/null
		if sof_wait_log "$(sof_out smB)" 'HANDOVER to the master SM 0x100001' 30 &&
			sof_wait_for 10 grew "$(sof_out smB)" 'STANDBY: handed over to 0x100001' "$s0" &&
			sm_is MASTER $H1 H1 && sm_is STANDBY ".*" H2 && sm_is MASTER $H1; then
			ok "sm/handover two masters: ours took over from a stopped OpenSM; OpenSM let go on found it, a master of lower priority, and sent it a Trap 144; ours handed over to OpenSM and went STANDBY; sminfo names OpenSM master"
		else
			not_ok "sm/handover two masters" "$(cat "$SOF_TMP/sminfo"); ours: $(grep "HANDOVER\|STANDBY\|gone" "$(sof_out smB)" | tr "\n" " ")"
			sof_dump "$(sof_out smB)" "$SOF_TMP/ho/osmB.log"
		fi
	else
		kill -CONT -- "-${SOF_PID[osmB]}" 2>/dev/null
		not_ok "sm/handover two masters" "ours did not take over from the stopped OpenSM"
		sof_dump "$(sof_out smB)"
	fi
else
	not_ok "sm/handover OpenSM -> ours" "OpenSM: no SUBNET UP as master"
	sof_dump "$SOF_TMP/ho/osmA.log"
fi
sof_kill smB
sof_kill osmA
sof_kill osmB
sof_sim_fabric down >"$OUT" 2>&1
sof_exit
