#!/bin/bash
# RoCEv2 between hosts (issue 3), step 5: crafted bad packets. Hosts a and
# b joined by a veth pair; in host a tests/progs/qp_hold holds the targets:
#   an RC QP in RTS "connected" to host b (10.77.0.2, its IPv4 GID), with a
#   known expected PSN, rkey and address; an RC QP in INIT; a UD QP with
#   Q_Key 0x11111111.
# From host b, tests/progs/roce_inject sends hand-made packets (own headers
# and ICRC, bound to b's address) to a's UDP port 4791, one kind at a time.
# First a valid RC SEND ONLY (the control: it must complete at the QP, so
# the injector's packets are right but for the one defect of each case),
# then:
#   short            8 bytes                          drops.short
#   version          BTH TVer 1                       drops.version
#   unknown QPN      a QPN nobody has                 drops.qpn
#   reserved opcode  RC opcode 0x1f                   drops.opcode
#   QP type          UD SEND ONLY to the RC QP        drops.qp_type or .opcode
#   bad ICRC         the control packet, ICRC wrong   drops.icrc
#   bad P_Key        P_Key 0x1234                     drops.pkey
#   source address   from 10.77.0.12 (b's 2nd)        drops.src_addr
#   bad Q_Key        UD SEND ONLY, Q_Key 0x22222222   drops.qkey
#   QP state         SEND ONLY to the QP in INIT      drops.qp_state
#   PSN far outside  expected PSN + 2^22              drops.psn or
#                                                     counters.seq_err
#   bad rkey         RDMA WRITE ONLY, wrong rkey      counters.key_violations
# After each, host a's daemon still answers `softofed status` and the
# counter named (the drop counters of its "drops:" line, see
# sof_counters in tests/lib.sh) went up. At the end the target memory is
# unchanged and the control SEND is the only successful completion.
#
# Needs root (ip netns; roce_inject -w uses a raw socket). Fails until the
# RoCEv2 engine receives packets and shows its counters; not in
# tests/run.sh yet.
# Usage: tests/hosts/badpackets.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_init

INJ=$SOF_PROGS/roce_inject

# hold NAME ARGS...: qp_hold in host a; sets HOLD_LINE (its ready line)
hold() {
	local name=$1 out
	shift
	HOLD_LINE=""
	sof_host_bg "$name" a 300 "$SOFTOFED" run -- "$SOF_PROGS/qp_hold" -l "$(sof_host_ip a)" -T 280 "$@"
	out=$(sof_out "$name")
	for _ in $(seq 200); do
		HOLD_LINE=$(grep '^qpn=' "$out" 2>/dev/null)
		[ -n "$HOLD_LINE" ] && return 0
		sof_alive "$name" || break
		sleep 0.05
	done
	sof_dump "$out"
	return 1
}

# field LINE NAME: the value of NAME=VALUE in LINE
field() {
	echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"
}

# delta BEFORE AFTER NAME: how much counter NAME grew; status 1 when either
# reading lacks it (a counter that is not there never "went up")
delta() {
	local b a
	b=$(awk -v k="$3" '$1 == k { print $2 }' "$1")
	a=$(awk -v k="$3" '$1 == k { print $2 }' "$2")
	[[ $a =~ ^[0-9]+$ && $b =~ ^[0-9]+$ ]] || return 1
	echo $((a - b))
}

# case NAME COUNTERS INJECT-ARGS...: send one packet from b, then check that
# a's daemon answers and one of COUNTERS ("a|b") went up
case_() {
	local name="hosts/badpackets: $1" want=$2 c d got="" before after
	shift 2
	before=$SOF_TMP/before after=$SOF_TMP/after
	if ! sof_counters a >"$before"; then
		not_ok "$name" "no counters from host a's softofed status (want the counters:/drops: lines)"
		return
	fi
	if ! sof_host_run b "$INJ" "$@" >"$SOF_TMP/inject.out" 2>&1; then
		not_ok "$name" "roce_inject $* failed: $(tail -n 1 "$SOF_TMP/inject.out")"
		return
	fi
	sleep 0.3
	if ! sof_host_run a "$SOFTOFED" status >/dev/null 2>&1; then
		not_ok "$name" "host a's daemon does not answer after the packet"
		return
	fi
	sof_counters a >"$after"
	for c in ${want//|/ }; do
		if ! d=$(delta "$before" "$after" "$c"); then
			not_ok "$name" "no counter $c in host a's softofed status"
			return
		fi
		if [ "$d" -gt 0 ]; then
			got="$c +$d"
			break
		fi
	done
	if [ -n "$got" ]; then
		ok "$name: $got, daemon alive"
	else
		not_ok "$name" "none of $want went up; changed: $(join "$before" "$after" |
			awk '$2 != $3 { printf "%s %d->%d ", $1, $2, $3 }')"
	fi
}

if sof_hosts_up 2; then
	# b's second address, for the source address check
	timeout 10 ip -n "$(sof_host_ns b)" addr add 10.77.0.12/24 dev veth0
	psn=$((RANDOM * 256 % 16777216))
	if ! hold hold.rc -t rc -s rts -a "$(sof_host_ip b)" -q 0xabc -r "$psn"; then
		not_ok "hosts/badpackets" "qp_hold (RC, RTS) did not start in host a"
		sof_exit
	fi
	rc_line=$HOLD_LINE
	qpn=$(field "$rc_line" qpn)
	rkey=$(field "$rc_line" rkey)
	addr=$(field "$rc_line" addr)
	hold hold.init -t rc -s init || not_ok "hosts/badpackets" "qp_hold (RC, INIT) did not start"
	init_qpn=$(field "$HOLD_LINE" qpn)
	hold hold.ud -t ud -s rts -k 0x11111111 || not_ok "hosts/badpackets" "qp_hold (UD) did not start"
	ud_qpn=$(field "$HOLD_LINE" qpn)
	echo "# targets in host a: $rc_line; INIT QP $init_qpn; UD QP $ud_qpn"
	unknown=$(printf '0x%06x' $(((qpn ^ 0x5a5a5a) & 0xffffff)))
	A=$(sof_host_ip a)

	# the control: a valid SEND ONLY completes at the QP
	before=$SOF_TMP/c0
	sof_counters a >"$before"
	sof_host_run b "$INJ" -w 500 good -q "$qpn" -n "$psn" "$A" >"$SOF_TMP/control.out" 2>&1
	for _ in $(seq 40); do
		grep -q '^wc status=IBV_WC_SUCCESS' "$(sof_out hold.rc)" && break
		sleep 0.05
	done
	if grep -q '^wc status=IBV_WC_SUCCESS' "$(sof_out hold.rc)"; then
		ok "hosts/badpackets: control: a valid SEND ONLY from roce_inject completes at the QP ($(grep '^reply' "$SOF_TMP/control.out"))"
		psn=$(((psn + 1) % 16777216))
	else
		not_ok "hosts/badpackets: control" "a valid SEND ONLY did not complete at the QP (the drops below may be for other reasons)"
		sof_dump "$SOF_TMP/control.out" "$(sof_out hold.rc)"
	fi

	case_ "short packet" "drops.short" short -q "$qpn" "$A"
	case_ "BTH version 1" "drops.version" version -q "$qpn" -n "$psn" "$A"
	case_ "unknown QPN $unknown" "drops.qpn" good -q "$unknown" -n "$psn" "$A"
	case_ "reserved opcode 0x1f" "drops.opcode" opcode -q "$qpn" -n "$psn" "$A"
	case_ "UD SEND ONLY to an RC QP" "drops.qp_type|drops.opcode" qp-type -q "$qpn" -n "$psn" "$A"
	case_ "bad ICRC" "drops.icrc" icrc -q "$qpn" -n "$psn" "$A"
	case_ "bad P_Key 0x1234" "drops.pkey" good -K 0x1234 -q "$qpn" -n "$psn" "$A"
	case_ "wrong source address 10.77.0.12" "drops.src_addr" good -s 10.77.0.12 -q "$qpn" -n "$psn" "$A"
	case_ "bad Q_Key to a UD QP" "drops.qkey" ud -Q 0x22222222 -q "$ud_qpn" "$A"
	case_ "SEND ONLY to a QP in INIT" "drops.qp_state" good -q "$init_qpn" -n 1000 "$A"
	case_ "PSN far outside the window" "drops.psn|counters.seq_err" good -q "$qpn" -n $(((psn + 4194304) % 16777216)) "$A"
	# last: a remote access error may move the QP to ERROR (IBA 9.9.2)
	case_ "RDMA WRITE with a bad rkey" "counters.key_violations" write -q "$qpn" -n "$psn" \
		-k $((rkey ^ 0x5a5a5a5a)) -a "$addr" -l 64 "$A"

	sof_kill hold.rc
	out=$(sof_out hold.rc)
	nsucc=$(grep -c '^wc status=IBV_WC_SUCCESS' "$out")
	if grep -q '^exit .*target_changed=0' "$out" && [ "$nsucc" -le 1 ]; then
		ok "hosts/badpackets: target memory unchanged, $nsucc successful completion (the control)"
	else
		not_ok "hosts/badpackets: the target QP" "memory changed or $nsucc successful completions"
		sof_dump "$out"
	fi
	for h in a b; do
		if sof_host_run "$h" "$SOFTOFED" status >/dev/null 2>&1; then
			ok "hosts/badpackets: the daemon of host $h still answers"
		else
			not_ok "hosts/badpackets" "the daemon of host $h does not answer"
		fi
	done
fi

sof_exit
