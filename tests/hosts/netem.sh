#!/bin/bash
# RoCEv2 between hosts (issue 3), step 3: the reliable transport under an
# impaired link. Hosts a and b joined through a cable that impairs frames
# like tc netem: `tc qdisc ... netem` on the host's veth0 where the kernel
# has sch_netem, else tests/progs/netwire (our machines' kernels lack
# sch_netem); each line says which.
#
# Segmentation and GRO are off on every veth (sof_hosts_per_packet), so the
# daemons' UDP GSO sends are cut into packets before the cable, and the
# cable impairs packets, not joined datagrams of up to 64 of them (checked:
# netwire counts no GSO frame during each byte-exact run).
#
# Impairments of what host b sends (and, "both", of what a sends too):
#   loss 1%, loss 10%, delay 5ms reorder 25% (reordering), duplicate 10%,
#   delay 10ms, and both ways loss 5% duplicate 10% delay 2ms reorder 20%.
# Under each:
#   - tests/progs/data_stream, server in a, client in b, at path MTU 1024
#     and 4096: SEND, WRITE, WRITE with immediate and READ messages of 1 B,
#     MTU - 1, MTU, MTU + 1, 64 KiB and 1 MiB (267 per opcode, 3.7 MiB,
#     some 3,800 packets at MTU 1024; under an impairment one 1 MiB message,
#     not three: 265, 1.7 MiB), every byte of every message checked
#     on arrival (sof_stream_pair); then, from the cable's and the daemons'
#     counters over that run (sof_snap, sof_delta_check), that the
#     impairment happened and was recovered from: frames dropped, the
#     responder's sequence errors and NAKs, the requester's NAKs received
#     and retransmissions (loss; with the selective acknowledgements,
#     on by default: SACKs, holes resent, no sequence-error NAK; without
#     them, SOF_NETEM_SACK=off: NAKs); frames reordered and sequence errors
#     (reordering); frames duplicated and repeated requests answered
#     (dup_req; duplication); frames delayed (delay); all of them (both);
#     and no GSO frame on the cable, no packet with a bad ICRC (the
#     kernel's segmentation keeps the IP IDs the ICRCs were made for);
#     frames the cable's sockets had no room for are shown (lost). A
#     counter line that is missing fails;
#   - ibv_rc_pingpong --chk, path MTU 1024, sizes 1, 65536 and 1 MiB
#     (50, 20 and 3 iterations): the
#     unmodified program runs (exit 0, its "bytes in" lines); its --chk
#     compares no data, so its ok says so (sof_pingpong_verdict);
#   - rping -v -V -C 30 (librdmacm; under 10 % loss and under everything
#     both ways): the IB CM's MADs are lost, duplicated and reordered too, so
#     REQ/REP/DREQ are retransmitted and repeats answered; the pings' data is
#     checked on both sides (tests/consumers/rping_check.py);
#   - tests/progs/atomic_count (not under plain delay): 2000 fetch-and-adds
#     (500 under everything both ways), 8 outstanding: every original value
#     returned once, the counter exactly base + N (no fetch-and-add applied
#     twice, none lost).
# Before the impairments, without one: a byte-exact run at each MTU (and
# no frame dropped or duplicated by the cable), and one short run per
# opcode with one byte corrupted at the sender (data_stream -x): each must
# fail with the message, the offset, expected and got, so the check is
# shown to catch a wrong byte.
# Link cut: tests/progs/rc_timeout connects, then loss 100% both ways, then
# one SEND: it completes with IBV_WC_RETRY_EXC_ERR within 0.5x..3x of
# (retry_cnt + 1) x 4.096 us x 2^timeout (timeout 14 / retry 3: 268 ms;
# timeout 16 / retry 2: 805 ms), the next WQE is flushed, the QP is in ERR;
# both daemons still answer, and after the link is restored a new
# ibv_rc_pingpong runs.
# A first run without impairment checks that traffic flows at all; when it
# fails, the other runs are reported failed at once (SOF_HOSTS_KEEP_GOING=1
# runs them all anyway).
#
# rping has no goodbye of its own: when the ACK of the server's last SEND
# is lost, only the client's DREQ (retried by the CM) tells the server the
# client is gone before its QP gives up (IBV_WC_RETRY_EXC_ERR, exit 255).
# The RDMA CM's default local ACK timeout (2^17, 537 ms, as Linux gives
# RoCE) leaves the DREQ about six tries for it.
# Needs root (ip netns); tests/run.sh runs it, and again with the ASan
# daemon and the daemon's engine.
# Usage: [SOF_NETEM_SACK=off] [SOF_NETEM_ONLY=REGEX] tests/hosts/netem.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_init

# The selective acknowledgements (transport/sack.c) are on by default, so
# the impairments recover by SACK; SOF_NETEM_SACK=off
# (tests/hosts/netem_std.sh) runs the same with SOFTOFED_SACK=0 in every
# daemon and program of both hosts: the standard IBA recovery (go-back-N).
NT="hosts/netem"
if [ "${SOF_NETEM_SACK:-on}" = off ]; then
	export SOFTOFED_SACK=0
	NT="hosts/netem_std"
fi

PORT=19900

# pp LABEL ARGS...: ibv_rc_pingpong a <- b
pp() {
	local label=$1 name rc
	shift
	name="$NT $label: ibv_rc_pingpong $*"
	sof_gated "$name" && return
	PORT=$((PORT + 1))
	sof_host_pair "$name" a b "$PORT" 90 ibv_rc_pingpong -g @GID@ --chk "$@"
	rc=$?
	sof_pingpong_verdict "$name" "$rc"
}

# stream LABEL MTU EXPECT...: data_stream a <- b at path MTU MTU, every
# byte checked, then the counters over the run judged by EXPECT
# (sof_delta_check expressions)
stream() {
	local label=$1 mtu=$2 name sizes
	shift 2
	name="$NT $label: data_stream -m $mtu"
	sof_gated "$name" && return
	PORT=$((PORT + 1))
	if ! sof_snap "$SOF_TMP/snap0"; then
		not_ok "$name: counters" "cannot read the counters before the run"
		return
	fi
	sizes=$(sof_stream_sizes "$mtu")
	# under an impairment one 1 MiB message per opcode, not three: every
	# size is still sent and checked, and go-back-N (SOF_NETEM_SACK=off)
	# resends whole windows of the big ones
	[ "$label" = "no impairment" ] || sizes=${sizes/%1048576x3/1048576x1}
	sof_stream_pair "$name" a b "$PORT" 90 -g @GID@ -m "$mtu" -s "$sizes"
	if ! sof_snap "$SOF_TMP/snap1"; then
		not_ok "$name: counters" "cannot read the counters after the run"
		return
	fi
	sof_snap_delta "$SOF_TMP/snap0" "$SOF_TMP/snap1" >"$SOF_TMP/delta"
	sof_delta_check "$name: counters of the cable and the daemons" "$SOF_TMP/delta" \
		wire.wa.gso=0 wire.wb.gso=0 a.drops.icrc=0 b.drops.icrc=0 "$@" \
		"wire.wa.lost>=0" "wire.wb.lost>=0"
}

# corrupt OP: data_stream -o OP -x 3 must fail on the corrupted byte
corrupt() {
	local name="$NT no impairment: data_stream -o $1 -x 3 (one byte corrupted at the sender)"
	local line
	sof_gated "$name" && return
	PORT=$((PORT + 1))
	sof_host_pair "$name" a b "$PORT" 30 "$SOF_PROGS/data_stream" -g @GID@ -m 1024 -o "$1" \
		-s 4097x8 -x 3 -T 20
	line=$(grep -h "^fail: $1 message 3 (4097 bytes" "$SOF_SRV_OUT" "$SOF_CLI_OUT" | head -n 1)
	if { [ "$SOF_SRV_RC" = 3 ] || [ "$SOF_CLI_RC" = 3 ]; } && [ -n "$line" ] &&
		[[ $line == *"byte 2048: expected 0x"*" got 0x"* ]]; then
		ok "$name: caught ($line)"
	else
		not_ok "$name" "not caught as a wrong byte of message 3 (exit server ${SOF_SRV_RC:-?}, client ${SOF_CLI_RC:-?})"
		sof_pair_dump
	fi
}

# atomics LABEL N: atomic_count a <- b, N fetch-and-adds
atomics() {
	local name="$NT $1: atomic_count -n $2 -q 8"
	sof_gated "$name" && return
	PORT=$((PORT + 1))
	if sof_host_pair "$name" a b "$PORT" 120 "$SOF_PROGS/atomic_count" -g @GID@ -n "$2" -q 8 -T 110 &&
		grep -q "^client count=$2 depth=[0-9]* distinct=$2 " "$SOF_CLI_OUT" &&
		grep -q '^server counter=\([0-9]*\) expected=\1 ' "$SOF_SRV_OUT"; then
		ok "$name: $(grep '^client count' "$SOF_CLI_OUT")"
	else
		not_ok "$name" "${SOF_PAIR_WHY:-wrong result}"
		sof_pair_dump
	fi
}

# cm LABEL: rping a <- b through the connection manager
cm() {
	local name="$NT $1: rping -C 30" check=$SOF_ROOT/tests/consumers/rping_check.py
	sof_gated "$name" && return
	PORT=$((PORT + 1))
	if ! SOF_LINEBUF=1 sof_cm_pair "$name" 120 a b \
		rping -s -v -a 10.77.0.1 -p "$PORT" -S 64 -C 30 -- \
		rping -c -v -V -a 10.77.0.1 -p "$PORT" -S 64 -C 30; then
		not_ok "$name" "$SOF_PAIR_WHY"
		sof_pair_dump
	elif ! python3 "$check" "$SOF_CLI_OUT" "ping data: " 30 64 >"$SOF_TMP/chk" 2>&1 ||
		! python3 "$check" "$SOF_SRV_OUT" "server ping data: " 30 64 >>"$SOF_TMP/chk" 2>&1; then
		not_ok "$name" "data: $(tail -n 1 "$SOF_TMP/chk")"
		sof_pair_dump
	else
		ok "$name (30 pings verified both sides)"
	fi
}

# impair LABEL WHO ARGS...: netem ARGS on b (WHO=b) or on a and b (both)
impair() {
	local label=$1 who=$2
	shift 2
	sof_netem_clear a
	sof_netem_clear b
	if ! sof_netem b "$@" || { [ "$who" = both ] && ! sof_netem a "$@"; }; then
		not_ok "$NT $label" "cannot impair the link (no tc netem, no netwire)"
		return 1
	fi
	echo "# $NT $label: $* on $([ "$who" = both ] && echo "a and b" || echo b) ($SOF_NETEM_HOW)"
	return 0
}

# cut T R: rc_timeout a <- b, the link cut after the connection
cut() {
	local t=$1 r=$2 name go line el ex
	name="$NT link cut: rc_timeout -t $t -r $r"
	sof_gated "$name" && return
	sof_netem_clear a
	sof_netem_clear b
	PORT=$((PORT + 1))
	go=$SOF_TMP/go.$PORT
	rm -f "$go"
	sof_host_bg "$name.srv" a 120 "$SOFTOFED" run -- "$SOF_PROGS/rc_timeout" -p "$PORT" -H 90
	if ! sof_host_wait_listen a "$PORT" 20 "$name.srv"; then
		not_ok "$name" "the server did not listen"
		sof_dump "$(sof_out "$name.srv")"
		sof_kill "$name.srv"
		return
	fi
	sof_host_bg "$name.cli" b 120 "$SOFTOFED" run -- "$SOF_PROGS/rc_timeout" -p "$PORT" \
		-t "$t" -r "$r" -w "$go" "$(sof_host_ip a)"
	for _ in $(seq 400); do
		grep -q '^ready' "$(sof_out "$name.cli")" 2>/dev/null && break
		sof_alive "$name.cli" || break
		sleep 0.05
	done
	if ! grep -q '^ready' "$(sof_out "$name.cli")" 2>/dev/null; then
		not_ok "$name" "the client did not connect"
		sof_dump "$(sof_out "$name.srv")" "$(sof_out "$name.cli")"
		sof_kill "$name.cli"
		sof_kill "$name.srv"
		return
	fi
	if ! sof_netem a loss 100% || ! sof_netem b loss 100%; then
		not_ok "$name" "cannot cut the link"
		sof_kill "$name.cli"
		sof_kill "$name.srv"
		return
	fi
	touch "$go"
	sof_wait "$name.cli" 100
	local rc=$?
	line=$(grep '^status=' "$(sof_out "$name.cli")")
	el=$(echo "$line" | sed -n 's/.*elapsed_ms=\([0-9]*\).*/\1/p')
	ex=$(echo "$line" | sed -n 's/.*expected_ms=\([0-9]*\).*/\1/p')
	if [ "$rc" -ne 0 ] || [ -z "$el" ] || [ -z "$ex" ]; then
		not_ok "$name" "client exit $rc: ${line:-no status line} ($SOF_NETEM_HOW)"
		sof_dump "$(sof_out "$name.cli")"
	elif [ $((el * 2)) -lt "$ex" ] || [ "$el" -gt $((ex * 3)) ]; then
		not_ok "$name" "IBV_WC_RETRY_EXC_ERR after $el ms, outside 0.5x..3x of $ex ms"
	elif ! grep -q '^qp_state=ERR' "$(sof_out "$name.cli")"; then
		not_ok "$name" "the QP is not in ERR after the error"
	else
		ok "$name: $line ($SOF_NETEM_HOW)"
	fi
	sof_netem_clear a
	sof_netem_clear b
	sof_kill "$name.srv"
	for h in a b; do
		if sof_host_run "$h" "$SOFTOFED" status >/dev/null 2>&1; then
			ok "$name: the daemon of host $h still answers"
		else
			not_ok "$name" "the daemon of host $h does not answer"
		fi
	done
}

# what each impairment must show in the counters of a byte-exact run
# (loss: NAKs and go-back-N without the extension; SACKs, holes resent and
# no sequence-error NAK with it)
if [ -n "${SOFTOFED_SACK:-}" ] && [ "$SOFTOFED_SACK" = 0 ]; then
	LOSS="wire.wb.dropped>0 a.counters.seq_err>0 a.counters.nak_sent>0 b.counters.nak_rcvd>0 b.counters.retransmits>0 b.counters.sacks=0"
else
	LOSS="wire.wb.dropped>0 a.counters.seq_err>0 a.counters.nak_sent=0 b.counters.sacks>0 b.counters.sack_resends>0 b.counters.retransmits>0"
fi
REORDER="wire.wb.reordered>0 a.counters.seq_err>0"
DUP="wire.wb.duplicated>0 a.counters.dup_req>0"
BOTH="$LOSS wire.wb.reordered>0 $DUP wire.wa.dropped>0 wire.wa.duplicated>0 wire.wa.reordered>0 b.drops.psn>0"

if sof_hosts_up 2 wire; then
	if sof_hosts_per_packet; then
		ok "$NT: segmentation and GRO off on every veth (the cable impairs packets)"
	else
		not_ok "$NT: per packet" "cannot turn segmentation off"
		sof_gate "segmentation could not be turned off"
	fi
	pp "no impairment" -m 1024 -s 4096 -n 10
	[ "$SOF_FAILED" -eq 0 ] || sof_gate "the first run between hosts (no impairment) failed"
	for mtu in 1024 4096; do
		stream "no impairment" "$mtu" wire.wa.dropped=0 wire.wb.dropped=0 \
			wire.wa.duplicated=0 wire.wb.duplicated=0
	done
	for op in send write write_imm read; do
		corrupt "$op"
	done
	while IFS='|' read -r label who args expect; do
		# SOF_NETEM_ONLY=REGEX: only the impairments whose label matches
		# (run.sh's ASan-daemon pass)
		[[ $label =~ ${SOF_NETEM_ONLY:-.} ]] || continue
		# shellcheck disable=SC2086 # args are netem words
		impair "$label" "$who" $args || continue
		for mtu in 1024 4096; do
			# shellcheck disable=SC2086 # expect: expressions
			stream "$label" "$mtu" $expect
		done
		pp "$label" -m 1024 -s 1 -n 50
		pp "$label" -m 1024 -s 65536 -n 20
		pp "$label" -m 1024 -s 1048576 -n 3
		# both ways, many of the atomics' losses are recovered only by
		# the ACK timeout: 500 there
		case $label in
		"delay 10ms") ;;
		*both*) atomics "$label" 500 ;;
		*) atomics "$label" 2000 ;;
		esac
		case $label in "loss 10%" | *both*) cm "$label" ;; esac
	done <<EOF
loss 1%|b|loss 1%|$LOSS
loss 10%|b|loss 10%|$LOSS
reordering|b|delay 5ms reorder 25%|$REORDER
duplication|b|duplicate 10%|$DUP
delay 10ms|b|delay 10ms|wire.wb.delayed>0
loss+duplication+reordering both ways|both|loss 5% duplicate 10% delay 2ms reorder 20%|$BOTH
EOF
	cut 14 3
	cut 16 2
	pp "after the link cut" -m 1024 -s 65536 -n 20
	if [ -n "$SOF_WIRE" ]; then
		sof_kill hosts.wire
		echo "# netwire: $(grep '^exit' "$(sof_out hosts.wire)")"
	fi
fi

sof_exit
