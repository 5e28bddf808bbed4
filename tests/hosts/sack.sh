#!/bin/bash
# Selective acknowledgements (issue 18, transport/sack.c): loss recovery
# between two softofed engines, and standard IBA behaviour when one of
# them does not speak the extension (on by default, SOFTOFED_SACK=1 here;
# SOFTOFED_SACK=0 is the stand-in for Linux rxe or a hardware peer).
#
# Hosts a and b joined through the software cable (tests/progs/netwire),
# segmentation off (the cable impairs packets). Host b runs the
# data_stream client (the requester of SEND, WRITE, WRITE with immediate
# and READ; every byte checked), a the server; the cable impairs what b
# sends (loss 1%, loss 5%, reordering, duplication). Each impairment runs
# with the extension on at both ends (on/on), on the requester only
# (on/off: the responder is standard) and on the responder only (off/on).
# From the counters of each run (sof_snap):
#   on/on: SACKs arrived (b sacks>0), the holes were resent one by one
#     (b sack_resends>0 under loss), no sequence-error NAK was sent (a
#     nak_sent=0), no SACK was taken for a lie, and the packets b sent
#     beyond those of a loss-free run of the same stream are at most
#     twice the frames the cable dropped plus 64 (a go-back-N resends a
#     window per loss); at 1% no local ACK timeout (b timeouts=0);
#   on/off and off/on: no SACK at all (b sacks=0), and under loss the
#     standard recovery ran (a nak_sent>0, b nak_rcvd>0).
# Needs root (ip netns); tests/run.sh runs it with the hosts tests.
# Usage: tests/hosts/sack.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_init

PORT=19700
BASE_TX=""

# run LABEL COMBO EXPECT...: one data_stream a <- b; COMBO on/on, on/off,
# off/on (requester/responder); sets DELTA to the counters' file
run() {
	local label=$1 combo=$2 name
	shift 2
	name="hosts/sack $label $combo: data_stream -m 1024"
	sof_gated "$name" && return 1
	PORT=$((PORT + 1))
	SOF_CLI_ENV="SOFTOFED_SACK=1" SOF_SRV_ENV="SOFTOFED_SACK=1"
	case $combo in
	on/off) SOF_SRV_ENV="SOFTOFED_SACK=0" ;;
	off/on) SOF_CLI_ENV="SOFTOFED_SACK=0" ;;
	esac
	export SOF_CLI_ENV SOF_SRV_ENV
	if ! sof_snap "$SOF_TMP/snap0"; then
		not_ok "$name: counters" "cannot read the counters before the run"
		return 1
	fi
	sof_stream_pair "$name" a b "$PORT" 90 -g @GID@ -m 1024 -s "$(sof_stream_sizes 1024)"
	local rc=$?
	SOF_CLI_ENV="" SOF_SRV_ENV=""
	if ! sof_snap "$SOF_TMP/snap1"; then
		not_ok "$name: counters" "cannot read the counters after the run"
		return 1
	fi
	DELTA=$SOF_TMP/delta.$PORT
	sof_snap_delta "$SOF_TMP/snap0" "$SOF_TMP/snap1" >"$DELTA"
	[ "$rc" -eq 0 ] || return 1
	sof_delta_check "$name: counters" "$DELTA" wire.wa.gso=0 wire.wb.gso=0 \
		a.drops.icrc=0 b.drops.icrc=0 b.counters.sack_lies=0 "$@"
	return 0
}

# val KEY: a counter of the last run
val() {
	awk -v k="$1" '$1 == k { print $2 }' "$DELTA"
}

# resends LABEL: the packets b sent beyond a loss-free run's, against the
# frames the cable dropped
resends() {
	local name="hosts/sack $1 on/on: resends close to the losses" tx dropped extra
	tx=$(val b.counters.tx_packets)
	dropped=$(val wire.wb.dropped)
	if [ -z "$tx" ] || [ -z "$dropped" ] || [ -z "$BASE_TX" ]; then
		not_ok "$name" "no counters (tx ${tx:-?}, dropped ${dropped:-?}, base ${BASE_TX:-?})"
		return
	fi
	extra=$((tx - BASE_TX))
	if [ "$extra" -le $((2 * dropped + 64)) ]; then
		ok "$name: $extra packets more than loss-free for $dropped dropped ($(val b.counters.sack_resends) SACK resends, $(val b.counters.probes) probes, $(val b.counters.timeouts) timeouts)"
	elif [ "$1" = "loss 5%" ]; then
		# issue 18, not done: at 5 % recovery still falls into local ACK
		# timeouts at times (their go-back resends a window): a known gap
		echo "not ok - $name: $extra packets more than loss-free for $dropped dropped (sack_resends $(val b.counters.sack_resends), retransmits $(val b.counters.retransmits), timeouts $(val b.counters.timeouts)) # TODO issue 18: timeouts under 5 % loss"
	else
		not_ok "$name" "$extra packets more than loss-free for $dropped dropped (sack_resends $(val b.counters.sack_resends), retransmits $(val b.counters.retransmits))"
	fi
}

if sof_hosts_up 2 wire; then
	if sof_hosts_per_packet; then
		ok "hosts/sack: segmentation and GRO off on every veth (the cable impairs packets)"
	else
		not_ok "hosts/sack: per packet" "cannot turn segmentation off"
		sof_gate "segmentation could not be turned off"
	fi
	sof_netem_clear a
	sof_netem_clear b
	if run "no impairment" on/on b.counters.sacks=0 wire.wb.dropped=0; then
		BASE_TX=$(val b.counters.tx_packets)
	else
		sof_gate "the first run without impairment failed"
	fi
	run "no impairment" on/off b.counters.sacks=0
	while IFS='|' read -r label args onon std; do
		sof_netem_clear b
		# shellcheck disable=SC2086 # netem words
		if ! sof_netem b $args; then
			not_ok "hosts/sack $label" "cannot impair the link"
			continue
		fi
		echo "# hosts/sack $label: $args on b ($SOF_NETEM_HOW)"
		# shellcheck disable=SC2086 # expressions
		run "$label" on/on $onon && case $label in loss*) resends "$label" ;; esac
		# shellcheck disable=SC2086 # expressions
		run "$label" on/off b.counters.sacks=0 $std
		# shellcheck disable=SC2086 # expressions
		run "$label" off/on b.counters.sacks=0 $std
	done <<EOF
loss 1%|loss 1%|wire.wb.dropped>0 b.counters.sacks>0 b.counters.sack_resends>0 a.counters.nak_sent=0 b.counters.timeouts=0|wire.wb.dropped>0 a.counters.nak_sent>0 b.counters.nak_rcvd>0
loss 5%|loss 5%|wire.wb.dropped>0 b.counters.sacks>0 b.counters.sack_resends>0 a.counters.nak_sent=0|wire.wb.dropped>0 a.counters.nak_sent>0 b.counters.nak_rcvd>0
reordering|delay 1ms reorder 25%|wire.wb.reordered>0 a.counters.seq_err>0 a.counters.nak_sent=0|wire.wb.reordered>0
duplication|duplicate 10%|wire.wb.duplicated>0 a.counters.dup_req>0|wire.wb.duplicated>0 a.counters.dup_req>0
EOF
	sof_netem_clear b
	if [ -n "$SOF_WIRE" ]; then
		sof_kill hosts.wire
		echo "# netwire: $(grep '^exit' "$(sof_out hosts.wire)")"
	fi
fi

sof_exit
