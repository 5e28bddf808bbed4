#!/bin/bash
# Issue 20 (acceptance: "OpenSM as standby takes over when ours is killed,
# and ours takes over from OpenSM, without a data stream over the fabric
# breaking"): line3 (H1 (a) - S1 - S2 - S3 - H3 (c), H2 (b) on S2), three
# real hosts on the fabric (tests/ib_fabric.sh), the SMs under
# `softofed run` on the hosts' sofib0:
#
#   to OpenSM   ours in a (priority 10) master, OpenSM in b (priority 1,
#               polling the master every 500 ms, 2 tries) STANDBY; a
#               byte-exact RC stream a -> c (progs/data_stream, RDMA WRITE
#               and SEND, round after round until the take-over was
#               seen, so a fast machine's stream cannot end before it);
#               mid-stream ours is killed (SIGKILL): OpenSM
#               enters MASTER and SUBNET UP while the stream runs, c keeps
#               its LID, and the stream ends with every byte checked;
#   from OpenSM ours started again in a (priority 0) goes STANDBY behind
#               OpenSM; a second stream; mid-stream OpenSM is killed
#               (SIGKILL): ours takes over (SUBNET UP) while the stream
#               runs, c keeps its LID, every byte checked.
# Only an SM's MASTER / SUBNET UP lines after the kill count as the
# take-over (up_after).
#
# Needs root (ip netns). Usage: tests/hosts/sm_handover_data.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/ib_fabric.sh
. "$(dirname "$0")/../ib_fabric.sh"
sof_init

T=sm_handover_data
sof_ibf_attach "$T" line3 H1,H2,H3 3 || sof_exit
mkdir -p "$SOF_TMP/hd" && printf 'sminfo_polling_timeout 500\npolling_retry_number 2\n' >"$SOF_TMP/hd/osm.conf"
OSMLOG=$SOF_TMP/hd/osm.log

# ours H PRIO: our SM in host H
ours() { sof_host_bg "sm.$1$2" "$1" 120 "$SOFTOFED" sm -v -p "$2"; }
# osm H PRIO: OpenSM in host H on its sofib0
osm() {
	local guid
	guid=$(sof_host_run "$1" "$SOFTOFED" run -- ibstat -p sofib0 2>/dev/null </dev/null | head -n 1)
	sof_host_bg osm "$1" 120 env OSM_CACHE_DIR="$SOF_TMP/hd" OSM_TMP_DIR="$SOF_TMP/hd" \
		"$SOFTOFED" run -- opensm -g "$guid" -F "$SOF_TMP/hd/osm.conf" -p "$2" -s 1 -d 2 -f "$OSMLOG"
}
# stream_start N: the RC stream a -> c number N (its server in c): rounds
# of NMSG messages of 1 MiB of each opcode until stream_ok N
NMSG=300
stream_start() {
	rm -f "$SOF_TMP/stop.$1"
	x0=$(sof_ibf_xmit a)
	sof_host_bg "st$1.srv" c 90 "$SOFTOFED" run -- "$SOF_PROGS/data_stream" -d sofib0 -p $((18710 + $1)) -m 4096 -T 80 -t 17
	sof_host_wait_listen c $((18710 + $1)) 10 "st$1.srv" >/dev/null 2>&1
	sof_host_bg "st$1.cli" a 90 "$SOFTOFED" run -- "$SOF_PROGS/data_stream" -d sofib0 -p $((18710 + $1)) -m 4096 -T 80 \
		-o write,send -s "1048576x$NMSG" -t 17 -E "$SOF_TMP/stop.$1" "$(sof_host_ip c)"
	sof_ibf_flowing a "$x0" 4194304 30
}
# stream_ok N: stream N told to end (after the round going on), ended
# with every byte of its rounds checked
stream_ok() {
	touch "$SOF_TMP/stop.$1"
	sof_wait "st$1.cli" 85
	local rc=$? n
	sof_wait "st$1.srv" 10
	n=$(sed -n 's/.* rounds=\([0-9]*\) .*/\1/p' "$(sof_out "st$1.cli")")
	n=$((${n:-0} * NMSG))
	[ "$rc" -eq 0 ] && [ "$n" -gt 0 ] && grep -q '^ok' "$(sof_out "st$1.cli")" && grep -q '^ok' "$(sof_out "st$1.srv")" &&
		grep -q "^checked write messages=$n bytes=$((n * 1048576))$" "$(sof_out "st$1.srv")" &&
		grep -q "^checked send messages=$n bytes=$((n * 1048576))$" "$(sof_out "st$1.srv")"
}
# kill9 NAME: SIGKILL (an SM that dies, no release, no handover)
kill9() { kill -KILL -- "-${SOF_PID[$1]}" 2>/dev/null; }
# up_after LOG START N: LOG has more than N lines matching START (awk's
# regex) and a SUBNET UP after the last of them. An SM's lines from
# before a kill do not count: OpenSM may have been MASTER for a moment
# at its start (its first sweep read a's port before IsSM was set there)
# and handed back to ours (IBA 14.4.1.1); ours that found OpenSM STANDBY
# was SUBNET UP before it handed over
# shellcheck disable=SC2317 # called through sof_wait_for
up_after() {
	awk -v s="$2" -v n="$3" '$0 ~ s { c++; up = 0 } /SUBNET UP/ { up = 1 } END { exit !(c > n && up) }' "$1" 2>/dev/null
}

# 1. ours master, OpenSM standby; ours killed mid-stream
ours a 10
if ! sof_wait_for 60 sof_ibf_subnet_up "$(sof_out sm.a10)"; then
	not_ok "$T: to OpenSM" "ours: no SUBNET UP"
	sof_dump "$(sof_out sm.a10)"
	sof_exit
fi
lc=$(sof_ibf_lid c)
osm b 1
if ! sof_wait_log "$OSMLOG" 'Entering STANDBY state' 30; then
	not_ok "$T: to OpenSM" "OpenSM did not go STANDBY"
	sof_dump "$OSMLOG"
	sof_exit
fi
stream_start 1
run=no
m0=$(grep -c 'Entering MASTER state' "$OSMLOG")
kill9 sm.a10
if sof_wait_for 40 up_after "$OSMLOG" 'Entering MASTER state' "$m0"; then
	sof_alive st1.cli && run=yes
fi
if stream_ok 1 && [ "$run" = yes ] && [ "$(sof_ibf_lid c)" = "$lc" ] && sof_ibf_all_in ACTIVE; then
	ok "$T: to OpenSM: ours (a, master) killed mid-stream, OpenSM (b, standby) entered MASTER and SUBNET UP while the stream a -> c ran; c kept LID $lc; $(grep -h '^checked' "$(sof_out st1.srv)" | tr '\n' ' ')every byte checked"
else
	not_ok "$T: to OpenSM" "stream running at the take-over: $run; c's LID $lc -> $(sof_ibf_lid c); $(grep -c 'Entering MASTER' "$OSMLOG") MASTER lines"
	sof_dump "$(sof_out st1.cli)" "$(sof_out st1.srv)" "$OSMLOG"
fi

# 2. OpenSM master, ours standby; OpenSM killed mid-stream. Ours finds the
# master gone after 3 lost polls a second apart, 3-6 s
ours a 0
# STANDBY behind OpenSM either way: ours found OpenSM MASTER, or found it
# STANDBY with the higher priority, swept as master and handed over to it
# (IBA 14.4.1). The second was seen when part 1 took OpenSM's MASTER and
# SUBNET UP lines from its start for the take-over: OpenSM was still
# STANDBY, polling the killed SM, when ours started again
if sof_wait_log "$(sof_out sm.a0)" 'STANDBY: \(the master SM is\|handed over to\)' 30; then
	stream_start 2
	run=no
	g0=$(grep -c 'is gone: taking over' "$(sof_out sm.a0)")
	kill9 osm
	if sof_wait_for 40 up_after "$(sof_out sm.a0)" 'is gone: taking over' "$g0"; then
		sof_alive st2.cli && run=yes
	fi
	if stream_ok 2 && [ "$run" = yes ] && [ "$(sof_ibf_lid c)" = "$lc" ] && sof_ibf_all_in ACTIVE; then
		ok "$T: from OpenSM: OpenSM (b, master) killed mid-stream, ours (a, standby) took over and was SUBNET UP while the stream a -> c ran; c kept LID $lc; $(grep -h '^checked' "$(sof_out st2.srv)" | tr '\n' ' ')every byte checked"
	else
		not_ok "$T: from OpenSM" "stream running at the take-over: $run; c's LID $lc -> $(sof_ibf_lid c)"
		sof_dump "$(sof_out st2.cli)" "$(sof_out st2.srv)" "$(sof_out sm.a0)"
	fi
else
	not_ok "$T: from OpenSM" "ours did not go STANDBY behind OpenSM"
	sof_dump "$(sof_out sm.a0)" "$OSMLOG"
fi

sof_kill sm.a0
sof_kill osm
sof_kill ibf.fabric
sof_exit
