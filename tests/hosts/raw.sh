#!/bin/bash
# Raw packet QPs with flow steering (issue 17), tests/progs/raw_flow:
#   - host a's RAW_PACKET QP with an ibv_create_flow rule for UDP to a's
#     address, port X, while host b sends ordinary UDP datagrams to port Y,
#     then port X, then port Y again: the QP receives exactly the port-X frames,
#     each whole (Ethernet, IPv4, UDP headers and payload) byte for byte;
#     after ibv_destroy_flow it receives nothing more;
#   - priorities: of two NORMAL flows for the same port only the one of
#     priority 0 takes its frames; an ALL_DEFAULT flow takes port Y's and
#     none of port X's;
#   - a frame built by host a and sent on its raw QP reaches an ordinary
#     UDP socket on host b, the data checked;
#   - an unprivileged process (nobody, no capabilities) gets EPERM creating
#     a raw QP, and a flow on a UD QP is EINVAL; root's raw QP with a flow
#     attached cannot be destroyed (EBUSY) until the flow is;
#   - perftest's raw_ethernet_lat and raw_ethernet_bw run a to b, both
#     sides reporting the frames they moved.
# Needs root (ip netns; the daemons open AF_PACKET sockets). A missing
# program is a failure.
# Usage: tests/hosts/raw.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_init

PROG=$SOF_PROGS/raw_flow
X=18801
Y=18802
N=20

mac() {
	ip -n "$(sof_host_ns "$1")" -o link show veth0 | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p'
}

# wait_line NAME TEXT SECS: TEXT appears in NAME's output
wait_line() {
	local end=$(($(now_ms) + $3 * 1000))
	while [ "$(now_ms)" -lt "$end" ]; do
		grep -q "^$2" "$(sof_out "$1")" && return 0
		sof_alive "$1" || return 1
		sleep 0.05
	done
	return 1
}

steer() {
	local name="hosts/raw flow: UDP port $X to a's raw QP, port $Y not" ma mb
	ma=$(mac a)
	mb=$(mac b)
	if [ ! -x "$PROG" ]; then
		not_ok "$name" "$PROG is missing"
		return
	fi
	sof_host_bg rawrecv a 60 "$SOFTOFED" run -- "$PROG" rawrecv "$ma" "$mb" \
		"$(sof_host_ip a)" "$(sof_host_ip b)" "$X" "$N"
	if ! wait_line rawrecv ready 20; then
		sof_wait rawrecv 5
		not_ok "$name" "the raw QP's flow was not attached"
		sof_dump "$(sof_out rawrecv)"
		return
	fi
	# port Y before and after port X: none of it may reach the QP
	sof_host_run b "$PROG" udpsend "$(sof_host_ip a)" "$Y" "$N" >/dev/null 2>&1
	sof_host_run b "$PROG" udpsend "$(sof_host_ip a)" "$X" "$N" >/dev/null 2>&1
	sof_host_run b "$PROG" udpsend "$(sof_host_ip a)" "$Y" "$N" >/dev/null 2>&1
	if wait_line rawrecv destroyed 30; then
		sof_host_run b "$PROG" udpsend "$(sof_host_ip a)" "$X" "$N" >/dev/null 2>&1
	fi
	sof_wait rawrecv 30
	if grep -q "^rawrecv frames=$N bad=0 extra=0 after_destroy=0$" "$(sof_out rawrecv)"; then
		ok "$name: $N frames byte for byte, none of port $Y, none after ibv_destroy_flow"
	else
		not_ok "$name" "wrong result"
		sof_dump "$(sof_out rawrecv)"
	fi
}

send() {
	local name="hosts/raw send: a frame from a's raw QP to b's UDP socket" ma mb
	ma=$(mac a)
	mb=$(mac b)
	sof_host_bg udprecv b 40 "$PROG" udprecv "$X" "$N"
	if ! wait_line udprecv ready 10; then
		sof_wait udprecv 5
		not_ok "$name" "the UDP receiver did not start"
		return
	fi
	sof_host_run a "$SOFTOFED" run -- "$PROG" rawsend "$ma" "$mb" "$(sof_host_ip a)" \
		"$(sof_host_ip b)" "$X" "$N" >"$SOF_TMP/rawsend.out" 2>&1
	sof_wait udprecv 30
	if grep -q "^rawsend sent=$N$" "$SOF_TMP/rawsend.out" &&
		grep -q "^udprecv got=$N bad=0$" "$(sof_out udprecv)"; then
		ok "$name: $N datagrams, data checked"
	else
		not_ok "$name" "wrong result"
		sof_dump "$SOF_TMP/rawsend.out" "$(sof_out udprecv)"
	fi
}

neg() {
	local name="hosts/raw: unprivileged raw QP is EPERM, a flow on a UD QP EINVAL"
	sof_host_run a setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all \
		"$SOFTOFED" run -- "$PROG" neg >"$SOF_TMP/neg.out" 2>&1
	if grep -q "^neg raw_qp=EPERM flow_on_ud=EINVAL destroy_with_flow=none$" "$SOF_TMP/neg.out"; then
		ok "$name"
	else
		not_ok "$name" "wrong result"
		sof_dump "$SOF_TMP/neg.out"
	fi
	name="hosts/raw: root may create a raw QP; with a flow attached it cannot be destroyed (EBUSY)"
	sof_host_run a "$SOFTOFED" run -- "$PROG" neg >"$SOF_TMP/neg_root.out" 2>&1
	if grep -q "^neg raw_qp=ok flow_on_ud=EINVAL destroy_with_flow=EBUSY$" "$SOF_TMP/neg_root.out"; then
		ok "$name"
	else
		not_ok "$name" "wrong result"
		sof_dump "$SOF_TMP/neg_root.out"
	fi
}

prio() {
	local name="hosts/raw priorities: port $X to the priority 0 flow only, port $Y to ALL_DEFAULT"
	sof_host_bg prio a 60 "$SOFTOFED" run -- "$PROG" prio "$(sof_host_ip a)" "$X" "$Y" "$N"
	if ! wait_line prio ready 20; then
		sof_wait prio 5
		not_ok "$name" "the flows were not attached"
		sof_dump "$(sof_out prio)"
		return
	fi
	sof_host_run b "$PROG" udpsend "$(sof_host_ip a)" "$X" "$N" >/dev/null 2>&1
	sof_host_run b "$PROG" udpsend "$(sof_host_ip a)" "$Y" "$N" >/dev/null 2>&1
	sof_wait prio 40
	if grep -q "^prio q1=$N/0 q2=0/0 q3=0/$N$" "$(sof_out prio)"; then
		ok "$name"
	else
		not_ok "$name" "wrong result"
		sof_dump "$(sof_out prio)"
	fi
}

# perftest's raw Ethernet programs, b the server (its flow rule: b's MAC,
# a's address and port to b's): raw_ethernet_lat's 200 UDP frames of 64 B
# each way (a lost one would hang it), raw_ethernet_bw for 2 s: frames
# sent and received on both sides. perftest's -J/-K are the server's
# address and port, -j/-k the client's, on both sides.
perftest_raw() {
	local name="hosts/raw perftest" ma mb args t tool
	ma=$(mac a)
	mb=$(mac b)
	args=(-d sof0 -J "$(sof_host_ip b)" -j "$(sof_host_ip a)" -K 18803 -k 18804)
	for t in "raw_ethernet_lat -n 200 -s 64" "raw_ethernet_bw -D 2"; do
		tool=${t%% *}
		# shellcheck disable=SC2086 # $t: the program and its options
		sof_host_bg "$tool" b 60 "$SOFTOFED" run -- $t "${args[@]}" --server -B "$mb" -E "$ma"
		sleep 1
		# shellcheck disable=SC2086
		sof_host_run a timeout 40 "$SOFTOFED" run -- $t "${args[@]}" --client \
			-B "$ma" -E "$mb" "$(sof_host_ip b)" >"$SOF_TMP/$tool.cli" 2>&1
		sof_wait "$tool" 20
		# the result line: #bytes #iterations ... (iterations > 0 both sides)
		if grep -q '^ *[0-9]\+ \+[1-9][0-9]* ' "$SOF_TMP/$tool.cli" &&
			grep -q '^ *[0-9]\+ \+[1-9][0-9]* ' "$(sof_out "$tool")"; then
			ok "$name: $tool a -> b: $(grep '^ *[0-9]\+ \+[1-9]' "$SOF_TMP/$tool.cli" | tr -s ' \t' ' ')"
		else
			not_ok "$name: $tool" "no result line on both sides"
			sof_dump "$SOF_TMP/$tool.cli"
			sof_dump "$(sof_out "$tool")"
		fi
	done
}

if sof_hosts_up 2; then
	steer
	prio
	send
	neg
	perftest_raw
fi
sof_exit
