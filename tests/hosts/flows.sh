#!/bin/bash
# Flow sockets of the engine in the program (verbs/tp_host.c): once an RC
# QP of a process takes a packet of a flow (the peer's address and UDP
# source port), the process receives that flow on a socket connected to
# it, while the daemon agrees that no other process's QP is connected to
# that peer (NET_FLOW). Two hosts over veth; in host a tests/progs/qp_hold
# processes P1, P2 (RC, RTS, peer host b) and P3 (UD), in host b
# tests/progs/roce_inject sends packets from chosen source ports:
#   - a SEND to P1 from port S completes, and P1 holds a socket connected
#     to b:S (`ss` in host a);
#   - P2 connects to b: the daemon takes P1's flows back (P1's socket is
#     gone, the daemon's log says so);
#   - SENDs to P2 and to P1 from S complete with no packet dropped, and
#     nobody holds a socket for b:S (the daemon refuses while both are
#     connected to b);
#   - P2 gone, a SEND to P1 from port T after a second: P1 holds a
#     socket for b:T again;
#   - a UD SEND from T to P3 (a QP the daemon runs) comes to P1's socket
#     all the same: dropped (qpn), P1's socket closed; the next one from T
#     completes at P3 and nobody connects to b:T again.
# Needs root (ip netns).
# Usage: tests/hosts/flows.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_init

INJ=$SOF_PROGS/roce_inject
S=$((50000 + RANDOM % 5000))
T=$((S + 1))

# hold NAME [ARGS]: qp_hold (RC, RTS, peer b) in host a; sets QPN and PSN
hold() {
	local out line
	PSN_START=$((RANDOM * 256 % 16777216))
	sof_host_bg "$1" a 120 "$SOFTOFED" run -- "$SOF_PROGS/qp_hold" -l "$(sof_host_ip a)" \
		-a "$(sof_host_ip b)" -q 0xabc -r "$PSN_START" -t rc -s rts -T 100 "${@:2}"
	out=$(sof_out "$1")
	for _ in $(seq 200); do
		line=$(grep '^qpn=' "$out" 2>/dev/null)
		if [ -n "$line" ]; then
			QPN=$(echo "$line" | tr ' ' '\n' | sed -n 's/^qpn=//p')
			return 0
		fi
		sof_alive "$1" || break
		sleep 0.05
	done
	sof_dump "$out"
	return 1
}

# completions NAME: successful completions qp_hold NAME printed
completions() {
	grep -c '^wc status=IBV_WC_SUCCESS' "$(sof_out "$1")"
}

# send NAME QPN PSN SPORT: one SEND ONLY from b:SPORT to host a's QPN
send() {
	sof_host_run b "$INJ" -P "$4" good -q "$2" -n "$3" "$(sof_host_ip a)" \
		>"$SOF_TMP/inject.out" 2>&1 ||
		echo "# roce_inject failed: $(tail -n 1 "$SOF_TMP/inject.out")"
}

# completed NAME N: qp_hold NAME reaches N completions within 2 s
completed() {
	for _ in $(seq 40); do
		[ "$(completions "$1")" -ge "$2" ] && return 0
		sleep 0.05
	done
	return 1
}

# holder PORT: the PID of the process of host a holding a socket from
# :4791 connected to b:PORT, if any
holder() {
	sof_host_run a ss -Hunap state established "( sport = :4791 and dst $(sof_host_ip b):$1 )" |
		sed -n 's/.*pid=\([0-9]*\),.*/\1/p' | head -n 1
}

# silenced PID PORT: PID's socket connected to b:PORT sits in one of its
# epoll sets with no events asked (fdinfo's mask 18: EPOLLERR|EPOLLHUP,
# which the kernel always adds), in any of 10 looks (the engine's progress
# thread takes its receive sockets out of its set while threads poll:
# verbs/tp_host.c sockets_arm)
silenced() {
	local fd
	fd=$(sof_host_run a ss -Hunap state established "( sport = :4791 and dst $(sof_host_ip b):$2 )" |
		sed -n 's/.*pid='"$1"',fd=\([0-9]*\).*/\1/p' | head -n 1)
	[ -n "$fd" ] || return 1
	for _ in $(seq 10); do
		grep -qE "^tfd: +$fd events: +18 " /proc/"$1"/fdinfo/* 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}

# any_socket PORT: some process of host a holds a socket connected to b:PORT
any_socket() {
	[ -n "$(sof_host_run a ss -Hun state established "( sport = :4791 and dst $(sof_host_ip b):$1 )")" ]
}

if ! sof_hosts_up 2; then
	sof_exit
fi
if ! hold p1; then
	not_ok "hosts/flows" "qp_hold P1 did not start in host a"
	sof_exit
fi
Q1=$QPN P1PSN=$PSN_START
echo "# P1 QP $Q1; flows from b:$S and b:$T"

send p1 "$Q1" "$P1PSN" "$S"
PID1=""
completed p1 1 && PID1=$(holder "$S")
if [ -n "$PID1" ]; then
	ok "hosts/flows: a SEND from b:$S completes at P1, whose process ($PID1) now holds a socket connected to b:$S"
else
	not_ok "hosts/flows: first packet" "P1 completions $(completions p1), sockets: $(sof_host_run a ss -Hunap state established)"
fi

if ! hold p2; then
	not_ok "hosts/flows" "qp_hold P2 did not start in host a"
	sof_exit
fi
Q2=$QPN P2PSN=$PSN_START
gone=""
for _ in $(seq 40); do
	any_socket "$S" || { gone=1; break; }
	sleep 0.05
done
if [ -n "$gone" ] && grep -q 'flows from peer taken back' "$(_sof_host_log a)"; then
	ok "hosts/flows: P2 (QP $Q2) connects to b: the daemon takes P1's flows back, P1's socket is gone"
else
	not_ok "hosts/flows: revoke" "P1's socket: $(sof_host_run a ss -Hunap state established), daemon log: $(grep -c 'taken back' "$(_sof_host_log a)") lines"
fi

drops=$(sof_counter a drops.qpn)
send p2 "$Q2" "$P2PSN" "$S"
send p1 "$Q1" "$((P1PSN + 1))" "$S"
d=$(sof_counter_since a drops.qpn "$drops") || d="unknown (no drops line)"
if completed p2 1 && completed p1 2 && [ "$d" = 0 ] && ! any_socket "$S"; then
	ok "hosts/flows: SENDs from b:$S to P2 and P1 complete, none dropped, no socket while both are connected to b"
else
	not_ok "hosts/flows: shared peer" "P1 completions $(completions p1), P2 $(completions p2), qpn drops +$d, sockets: $(sof_host_run a ss -Hunap state established)"
fi

sof_kill p2
sleep 1.2
send p1 "$Q1" "$((P1PSN + 2))" "$T"
if completed p1 3 && [ "$(holder "$T")" = "$PID1" ]; then
	ok "hosts/flows: P2 gone, a SEND from b:$T gives P1 a socket connected to b:$T again"
else
	not_ok "hosts/flows: after P2" "P1 completions $(completions p1), sockets: $(sof_host_run a ss -Hunap state established)"
fi

if sof_host_bg p3 a 120 "$SOFTOFED" run -- "$SOF_PROGS/qp_hold" -l "$(sof_host_ip a)" -t ud -s rts \
	-k 0x11111111 -T 100; then
	for _ in $(seq 200); do
		grep -q '^qpn=' "$(sof_out p3)" 2>/dev/null && break
		sleep 0.05
	done
fi
Q3=$(grep '^qpn=' "$(sof_out p3)" 2>/dev/null | tr ' ' '\n' | sed -n 's/^qpn=//p')
drops=$(sof_counter a drops.qpn)
sof_host_run b "$INJ" -P "$T" ud -q "$Q3" "$(sof_host_ip a)" >/dev/null 2>&1
sleep 0.3
d=$(sof_counter_since a drops.qpn "$drops") || d="unknown (no drops line)"
sof_host_run b "$INJ" -P "$T" ud -q "$Q3" "$(sof_host_ip a)" >/dev/null 2>&1
if [ -n "$Q3" ] && [ "$d" = 1 ] && completed p3 1 && ! any_socket "$T"; then
	ok "hosts/flows: a UD SEND from b:$T to P3 ($Q3) at P1's socket is dropped (qpn +1) and the socket closed; the next one completes at P3"
else
	not_ok "hosts/flows: foreign packet" "P3 QP '$Q3' completions $(completions p3), qpn drops +$d, sockets: $(sof_host_run a ss -Hunap state established)"
fi

sof_kill p1
sof_kill p3

# P4 polls without a pause: its engine's progress thread leaves the
# sockets to it, out of its epoll set
PID4=""
if hold p4 -B; then
	send p4 "$QPN" "$PSN_START" "$S"
	completed p4 1 && PID4=$(holder "$S")
fi
if [ -z "$PID4" ]; then
	not_ok "hosts/flows: busy poller" "P4 completions $(completions p4), sockets: $(sof_host_run a ss -Hunap state established)"
elif silenced "$PID4" "$S"; then
	not_ok "hosts/flows: busy poller" "P4's socket to b:$S is in an epoll set with no events while P4 polls: $(grep -h '^tfd' /proc/"$PID4"/fdinfo/* 2>/dev/null | tr -s ' ' | tr '\n' ';')"
else
	ok "hosts/flows: while P4 polls without a pause, its socket to b:$S is in no epoll set of its own silenced (each datagram would run the set's callback)"
fi
sof_kill p4
sof_exit
