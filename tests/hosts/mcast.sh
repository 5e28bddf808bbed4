#!/bin/bash
# UD multicast (issue 4): QPs attached to a group with ibv_attach_mcast, on
# one host and between three hosts on a bridge (network namespaces, a
# daemon in each; lib.sh's bridge has multicast snooping off). Every
# message is checked by tests/progs/mcast_ud (numbered, every byte, the
# IP header in the GRH area naming the group and the sender's address,
# nothing twice, nothing missing):
#   (a) one host: one sender and two receiver processes in host a, group
#       239.77.0.1; both receive every message (the daemon delivers to this
#       host's QPs itself), `softofed status` counts one group meanwhile.
#       The sender's UD QP runs in its process (SOFTOFED_ENGINE_UD=program,
#       the default: the daemon's log names it steered), one receiver's
#       through the daemon (SOFTOFED_ENGINE_UD=daemon); the sender's own QP
#       and a second QP of its process are attached too (mcast_ud -L) and
#       also get every message exactly once: the program hands each
#       datagram to the daemon (MCAST_LOOP), as the network does not bring
#       it back;
#   (b) sender in host a, receivers in hosts b and c, IPv4 group: both
#       receive every message; host b's veth0 is a member of the IP group
#       while its QP is attached; a tshark capture in host c decodes every
#       datagram as InfiniBand with the right ICRC; a receiver whose Q_Key
#       differs gets nothing, and its host counts the drops (drops.qkey);
#   (c) detach stops delivery: the receiver in host b detaches after 20 of
#       40 messages and gets none of the other 20, which host c receives;
#       host b then counts no group and its veth0 has left the IP group; a
#       receiver killed with SIGKILL leaves mcast_groups at 0 and the IP
#       group left on its host;
#   (d) IPv6 group ff0e::77:1 between the hosts' IPv6 GIDs (fd77::N): the
#       receivers in hosts b and c and one in host a (the sender's own
#       host) receive every message.
#
# Needs root (ip netns).
# Usage: tests/hosts/mcast.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_init

MC=$SOF_PROGS/mcast_ud
G4=239.77.0.1
G6=ff0e::77:1
N=40

# mc_recv NAME HOST ARGS...: a receiver in HOST, in the background
mc_recv() {
	local name=$1 h=$2
	shift 2
	sof_host_bg "$name" "$h" 90 "$SOFTOFED" run -- "$MC" -r -T 60 "$@"
}

# mc_wait_line NAME REGEX [SECS]: until NAME's output has a line matching
# REGEX (default 15 s); 1 when NAME ended or the time ran out first
mc_wait_line() {
	local name=$1 re=$2 secs=${3:-15} out end
	out=$(sof_out "$name")
	end=$(($(now_ms) + secs * 1000))
	while [ "$(now_ms)" -lt "$end" ]; do
		grep -q -E "$re" "$out" 2>/dev/null && return 0
		sof_alive "$name" || { grep -q -E "$re" "$out" 2>/dev/null; return; }
		sleep 0.05
	done
	return 1
}

# mc_ready NAME...: every receiver said it is ready; else a reason in WHY
mc_ready() {
	local n
	for n in "$@"; do
		if ! mc_wait_line "$n" '^ready '; then
			WHY="receiver $n not ready: $(tail -n 1 "$(sof_out "$n")")"
			return 1
		fi
	done
	return 0
}

# mc_send NAME HOST ARGS...: the sender in HOST, in the background
mc_send() {
	local name=$1 h=$2
	shift 2
	sof_host_bg "$name" "$h" 90 "$SOFTOFED" run -- "$MC" -T 60 "$@"
}

# mc_env NAME HOST VAR=VALUE ARGS...: mcast_ud (receiver with -r) with
# VAR=VALUE in its environment and SOFTOFED_ENGINE unset (tests/run.sh's
# sanitized-daemon run sets it to daemon; the program-engine sender is
# what the daemon's MCAST_LOOP serves), in the background
mc_env() {
	local name=$1 h=$2 e=$3
	shift 3
	sof_host_bg "$name" "$h" 90 env -u SOFTOFED_ENGINE "$e" "$SOFTOFED" run -- "$MC" -T 60 "$@"
}

# mc_passed NAME...: each process ended with 0 and "ok"; else WHY
mc_passed() {
	local n rc
	for n in "$@"; do
		sof_wait "$n" 100
		rc=$?
		if [ $rc -ne 0 ] || ! grep -q '^ok$' "$(sof_out "$n")"; then
			WHY="$n: exit $rc: $(grep -m 1 '^fail' "$(sof_out "$n")" || tail -n 1 "$(sof_out "$n")")"
			return 1
		fi
	done
	return 0
}

mc_dump() {
	local n
	for n in "$@"; do sof_dump "$(sof_out "$n")"; done
}

# groups H: the mcast_groups count of host H's daemon ("none" when its
# status has no such count)
groups() {
	sof_cm_count mcast_groups "$1" || echo none
}

# member H GROUP: host H's veth0 is a member of the IP group
member() {
	sof_host_run "$1" ip maddr show dev veth0 2>/dev/null | grep -q -w -F "$2"
}

# wait_groups H N: until host H counts N groups (5 s)
wait_groups() {
	for _ in $(seq 100); do
		[ "$(groups "$1")" = "$2" ] && return 0
		sleep 0.05
	done
	return 1
}

if ! sof_hosts_up 3; then
	sof_exit
fi
A4=$(sof_host_ip a)
A6=$(sof_host_ip6 a)

# ---- (a) one host: a sender and two receivers in host a
WHY=""
mc_recv a1 a -n $N -s 1000 -S "$A4" "$G4"
mc_env a2 a SOFTOFED_ENGINE_UD=daemon -r -n $N -s 1000 -S "$A4" "$G4"
if ! mc_ready a1 a2; then
	not_ok "hosts/mcast (a) one host" "$WHY"
	mc_dump a1 a2
else
	ng=$(groups a)
	mc_env as a SOFTOFED_ENGINE_UD=program -L -n $N -s 1000 -a "$A4" "$G4"
	if ! mc_passed as a1 a2; then
		not_ok "hosts/mcast (a) one host, two receivers" "$WHY"
		mc_dump as a1 a2
	elif [ "$ng" != 1 ]; then
		not_ok "hosts/mcast (a) one host" "softofed status counted '$ng' groups, want 1"
	else
		ok "hosts/mcast (a) one host: two receiver processes got all $N messages ($(grep '^recv' "$(sof_out a1)"))"
		q=$(sed -n 's/^sent .* qpn=\(0x[0-9a-f]*\).*/\1/p' "$(sof_out as)")
		if [ -n "$q" ] && grep -q "QP $q steered to slot" "$(_sof_host_log a)"; then
			ok "hosts/mcast (a) the sender's QP ran in its process; its own and a second QP of it got all $N once ($(grep '^loop' "$(sof_out as)"))"
		else
			not_ok "hosts/mcast (a) program-engine sender" "QP '$q' not steered to the sender's process"
		fi
	fi
fi
wait_groups a 0 || not_ok "hosts/mcast (a) one host" "mcast_groups $(groups a) after the receivers ended"

# ---- (b) sender in host a, receivers in hosts b and c, IPv4
WHY=""
cap=$SOF_TMP/mcast4.pcap
capok=""
sof_capture_start cap4 "$cap" veth0 c && capok=1
mc_recv b1 b -n $N -s 2048 -S "$A4" "$G4"
mc_recv c1 c -n $N -s 2048 -S "$A4" "$G4"
if ! mc_ready b1 c1; then
	not_ok "hosts/mcast (b) a -> b, c" "$WHY"
	mc_dump b1 c1
else
	if member b "$G4" && [ "$(groups b)" = 1 ]; then
		ok "hosts/mcast (b) host b: one group, veth0 a member of $G4"
	else
		not_ok "hosts/mcast (b) host b membership" "groups $(groups b); ip maddr: $(sof_host_run b ip maddr show dev veth0 | tr '\n' ' ')"
	fi
	mc_send bs a -n $N -s 2048 -a "$A4" "$G4"
	if mc_passed bs b1 c1; then
		ok "hosts/mcast (b) a -> b, c over IPv4: both got all $N messages"
	else
		not_ok "hosts/mcast (b) a -> b, c over IPv4" "$WHY"
		mc_dump bs b1 c1
	fi
fi
if [ -n "$capok" ]; then
	sof_capture_stop cap4
	sof_capture_check "hosts/mcast (b) capture in host c" "$cap"
	if [ "${SOF_CAP_N:-0}" -lt $N ]; then
		not_ok "hosts/mcast (b) capture in host c" "$SOF_CAP_N RoCEv2 packets, want at least $N"
	fi
else
	not_ok "hosts/mcast (b) capture in host c" "tshark did not start"
fi

# a member whose Q_Key differs takes nothing; its host counts the drops
WHY=""
q0=$(sof_counter c drops.qkey)
mc_recv cq c -n 1 -T 4 -q 0x999 "$G4"
if ! mc_ready cq; then
	not_ok "hosts/mcast (b) Q_Key" "$WHY"
else
	mc_send qs a -n 10 -s 100 -a "$A4" "$G4"
	mc_passed qs || not_ok "hosts/mcast (b) Q_Key" "$WHY"
	sof_wait cq 30
	dq=$(sof_counter_since c drops.qkey "$q0") || dq="unknown (no drops line)"
	if ! grep -q 'received 0 of 1' "$(sof_out cq)"; then
		not_ok "hosts/mcast (b) Q_Key" "a receiver with another Q_Key: $(tail -n 1 "$(sof_out cq)")"
	elif [ "$dq" != 10 ]; then
		not_ok "hosts/mcast (b) Q_Key" "host c counted $dq Q_Key drops, want 10"
	else
		ok "hosts/mcast (b) a member with another Q_Key gets nothing, 10 drops.qkey counted"
	fi
fi
wait_groups c 0 || not_ok "hosts/mcast (b) Q_Key" "host c: mcast_groups $(groups c) after the receiver ended"

# ---- (c) detach stops delivery; SIGKILL detaches
WHY=""
flag=$SOF_TMP/detached
rm -f "$flag"
mc_recv b2 b -n $N -x 20 -w 2 -s 500 -S "$A4" "$G4"
mc_recv c2 c -n $N -s 500 -S "$A4" "$G4"
if ! mc_ready b2 c2; then
	not_ok "hosts/mcast (c) detach" "$WHY"
	mc_dump b2 c2
else
	mc_send cs a -n $N -s 500 -k 20 -W "$flag" -a "$A4" "$G4"
	if ! mc_wait_line b2 '^detached' 30; then
		not_ok "hosts/mcast (c) detach" "receiver b2 did not detach"
		mc_dump b2 cs
	else
		if [ "$(groups b)" = 0 ] && ! member b "$G4"; then
			ok "hosts/mcast (c) after the detach host b counts no group and left $G4"
		else
			not_ok "hosts/mcast (c) after the detach" "host b: groups $(groups b), member $(member b "$G4" && echo yes || echo no)"
		fi
	fi
	touch "$flag"
	if mc_passed cs b2 c2 && grep -q '^after_detach=0$' "$(sof_out b2)"; then
		ok "hosts/mcast (c) detach after 20: nothing more for b, all $N for c"
	else
		not_ok "hosts/mcast (c) detach" "${WHY:-b2 received after its detach}"
		mc_dump cs b2 c2
	fi
fi

WHY=""
mc_recv b3 b -n 1000 -T 60 "$G4"
if ! mc_ready b3; then
	not_ok "hosts/mcast (c) SIGKILL" "$WHY"
else
	pid=$(sed -n 's/^ready pid=\([0-9]*\).*/\1/p' "$(sof_out b3)")
	g_before=$(groups b)
	m_before=no
	member b "$G4" && m_before=yes
	# (bash would report the killed job on stderr)
	{
		kill -KILL "$pid"
		sof_wait b3 10
	} 2>/dev/null
	if [ "$g_before" != 1 ] || [ "$m_before" != yes ]; then
		not_ok "hosts/mcast (c) SIGKILL" "before the kill: groups $g_before, member $m_before"
	elif ! wait_groups b 0; then
		not_ok "hosts/mcast (c) SIGKILL" "mcast_groups $(groups b) after the receiver was killed"
	elif member b "$G4"; then
		not_ok "hosts/mcast (c) SIGKILL" "host b still a member of $G4"
	else
		ok "hosts/mcast (c) receiver killed with SIGKILL: mcast_groups 1 -> 0, $G4 left"
	fi
fi

# ---- (d) IPv6 group: receivers in b, c and the sender's own host a
WHY=""
mc_recv a6 a -n $N -s 1500 -S "$A6" "$G6"
mc_recv b6 b -n $N -s 1500 -S "$A6" "$G6"
mc_recv c6 c -n $N -s 1500 -S "$A6" "$G6"
if ! mc_ready a6 b6 c6; then
	not_ok "hosts/mcast (d) IPv6" "$WHY"
	mc_dump a6 b6 c6
else
	if ! member c "$G6"; then
		not_ok "hosts/mcast (d) IPv6 membership" "host c's veth0 is not a member of $G6"
	fi
	mc_send s6 a -n $N -s 1500 -a "$A6" "$G6"
	if mc_passed s6 a6 b6 c6; then
		ok "hosts/mcast (d) IPv6 group $G6: receivers in a, b and c got all $N messages"
	else
		not_ok "hosts/mcast (d) IPv6 group $G6" "$WHY"
		mc_dump s6 a6 b6 c6
	fi
fi
for h in a b c; do
	wait_groups "$h" 0 || not_ok "hosts/mcast (d) IPv6" "host $h: mcast_groups $(groups "$h") at the end"
done

sof_exit
