#!/bin/bash
# Hosts as network namespaces (issue 3): the helpers of tests/lib.sh.
# For each topology: 2 hosts over a veth pair, 2 hosts through netwire (the
# software cable), 3 hosts on a bridge:
#   - the namespaces exist (and carry this run's prefix);
#   - every host pings every other, IPv4 and IPv6;
#   - one daemon runs in each host, in that host's namespace;
#   - `softofed status` in each host lists its GIDs ::ffff:10.77.0.N and
#     fd77::N, and sof_host_gid finds the same indices in ibv_devinfo -v;
#   - sof_netem cuts the link (loss 100%) and sof_netem_clear restores it
#     (tc netem when the kernel has it, else netwire; the veth topology
#     says so when neither is there);
#   - 2 hosts: tshark on a's veth0 captures packets roce_inject sends from
#     b, and sof_capture_check finds them decoded, not malformed, ICRC right;
#   - teardown leaves none of our namespaces and none of our daemons.
# Also the parser of the counter lines of `softofed status` on a sample.
# Needs root (ip netns add). Works today: no traffic through the engine.
#
# Usage: tests/hosts/topology.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_init

# pings H ADDR: H reaches ADDR
pings() {
	timeout 10 ip netns exec "$(sof_host_ns "$1")" ping -n -q -c 1 -W 2 "$2" >/dev/null 2>&1
}

# topology NAME N [wire]
topology() {
	local t=$1 n=$2 how=${3:-} h o st pid ns gi gi6 nsin nsout pids=() names=() cut
	if ! sof_hosts_up "$n" "$how"; then
		sof_hosts_down
		return
	fi
	ok "$t: up (prefix $SOF_HOSTS_PREFIX)"
	names=("${SOF_HOSTS_NS[@]}")
	for ns in "${names[@]}"; do
		if ! ip netns list | grep -q "^$ns\\b"; then
			not_ok "$t: namespaces" "$ns is not in ip netns list"
		fi
	done
	for h in "${SOF_HOSTS[@]}"; do
		for o in "${SOF_HOSTS[@]}"; do
			[ "$h" = "$o" ] && continue
			if pings "$h" "$(sof_host_ip "$o")" && pings "$h" "$(sof_host_ip6 "$o")"; then
				ok "$t: host $h pings host $o (IPv4, IPv6)"
			else
				not_ok "$t: host $h pings host $o" "no answer from $(sof_host_ip "$o") or $(sof_host_ip6 "$o")"
			fi
		done
	done
	for h in "${SOF_HOSTS[@]}"; do
		pid=${SOF_HOST_DPID[$h]:-}
		pids+=("$pid")
		nsin=$(readlink "/proc/$pid/ns/net" 2>/dev/null)
		nsout=$(timeout 10 ip netns exec "$(sof_host_ns "$h")" readlink /proc/self/ns/net)
		if [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = softofedd ] &&
			[ "$nsin" = "$nsout" ]; then
			ok "$t: host $h: daemon pid $pid runs in its namespace ($nsin)"
		else
			not_ok "$t: host $h: daemon" "pid '$pid' is not a softofedd in $nsout ($nsin)"
		fi
		st=$(sof_host_run "$h" "$SOFTOFED" status 2>&1)
		if echo "$st" | grep -q -E "^GID\\[[0-9]+\\] ::ffff:$(sof_host_ip "$h") " &&
			echo "$st" | grep -q -E "^GID\\[[0-9]+\\] $(sof_host_ip6 "$h") "; then
			ok "$t: host $h: softofed status lists ::ffff:$(sof_host_ip "$h") and $(sof_host_ip6 "$h")"
		else
			not_ok "$t: host $h: GIDs" "softofed status lacks ::ffff:$(sof_host_ip "$h") or $(sof_host_ip6 "$h")"
			printf '%s\n' "$st" | sed 's/^/#   /' # SC2001: a prefix per line
		fi
		gi=$(sof_host_gid "$h")
		gi6=$(sof_host_gid "$h" "$(sof_host_ip6 "$h")")
		if [ -n "$gi" ] && [ -n "$gi6" ] &&
			echo "$st" | grep -q "^GID\\[$gi\\] ::ffff:$(sof_host_ip "$h") " &&
			echo "$st" | grep -q "^GID\\[$gi6\\] $(sof_host_ip6 "$h") "; then
			ok "$t: host $h: ibv_devinfo -v: IPv4 GID index $gi, IPv6 $gi6, as softofed status"
		else
			not_ok "$t: host $h: sof_host_gid" "indices '$gi' / '$gi6' do not match softofed status"
		fi
	done
	if sof_netem b loss 100%; then
		cut=$SOF_NETEM_HOW
		if pings a "$(sof_host_ip b)"; then
			not_ok "$t: netem ($cut)" "host a still reaches host b under loss 100%"
		elif ! sof_netem_clear b || ! pings a "$(sof_host_ip b)"; then
			not_ok "$t: netem ($cut)" "host a does not reach host b after sof_netem_clear"
		else
			ok "$t: netem ($cut): loss 100% cuts a -> b, sof_netem_clear restores it"
		fi
	elif [ "$how" = wire ]; then
		not_ok "$t: netem" "sof_netem failed on the wire"
	else
		echo "# $t: no tc netem in this kernel (no sch_netem); the wire topology stands in"
	fi
	# the capture pipeline of capture.sh, with packets of roce_inject:
	# tshark on a's veth0, packets from b
	local cap=$SOF_TMP/topology.pcap
	if [ "$n" -eq 2 ] && sof_capture_start "$t.capture" "$cap" veth0 a; then
		sof_host_run b "$SOF_PROGS/roce_inject" good "$(sof_host_ip a)" >/dev/null
		sof_host_run b "$SOF_PROGS/roce_inject" write -l 3000 "$(sof_host_ip a)" >/dev/null
		sof_host_run b "$SOF_PROGS/roce_inject" ud -l 100 "$(sof_host_ip6 a)" >/dev/null
		sof_capture_stop "$t.capture"
		sof_capture_check "$t: capture of roce_inject b -> a" "$cap"
	fi
	sof_hosts_down
	local left=""
	for ns in "${names[@]}"; do
		ip netns list | grep -q "^$ns\\b" && left="$left $ns"
	done
	for pid in "${pids[@]}"; do
		sof_daemon_running "$pid" && left="$left daemon:$pid"
	done
	if [ -z "$left" ]; then
		ok "$t: teardown: no namespace, no daemon left"
	else
		not_ok "$t: teardown" "left behind:$left"
	fi
}

topology "hosts/veth" 2
topology "hosts/wire" 2 wire
topology "hosts/bridge" 3

sample='softofed daemon pid 1, up 1 s
counters: rx_packets 11 rx_bytes 22 tx_packets 33 tx_bytes 44 retransmits 5 nak_sent 6 nak_rcvd 7 rnr_nak_sent 8 rnr_nak_rcvd 9 seq_err 10 timeouts 12 key_violations 13
drops: short 1 version 2 opcode 3 payload 4 icrc 5 qpn 6 qp_state 7 qp_type 8 pkey 9 qkey 10 src_addr 11 psn 12'
parsed=$(echo "$sample" | sof_counters_parse | tr '\n' ' ')
if [[ $parsed == *"counters.rx_packets 11 "* && $parsed == *"counters.key_violations 13 "* &&
	$parsed == *"drops.short 1 "* && $parsed == *"drops.psn 12 "* ]] &&
	[ "$(echo "$parsed" | wc -w)" -eq 48 ] &&
	! echo "softofed daemon pid 1" | sof_counters_parse >/dev/null; then
	ok "hosts/counters: the parser reads both lines (24 counters), fails without them"
else
	not_ok "hosts/counters" "parsed: $parsed"
fi

sof_exit
