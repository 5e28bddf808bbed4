#!/bin/bash
# Tail-loss probes for lone messages (issue 18, transport/sack.c): with no
# loss at all, a message that is all its requester has in flight must not
# draw a probe while the peer holds its ACK for its owner's next post
# (verbs/tp_wake.c bounds the hold; the probe deadline of such a flight
# covers it, as TCP's covers the delayed ACK: RFC 8985 7.2).
# Hosts a and b on a plain veth, no impairment; the counters of both
# hosts before and after each run (sof_snap):
#   ibv_rc_pingpong -s 64 -n 1000: 1000 lone SENDs each way; the probes
#     of both hosts are at most LONE_MAX_PROBES;
#   ib_write_lat -s 2 -n 1000: the one-sided ping-pong (the target's
#     progress thread holds its ACKs); the same bound;
#   iperf3 over rsockets (librspreload) for 3 s: the receiver's credit
#     messages go alone, one per 512 KiB read, and the sender's bursts end
#     waiting for them; at most LONE_MAX_PROBES_RS.
#   ibv_rc_pingpong -s 64 -n 300 through the software cable losing 3 %
#     of each host's frames: the lost lone messages draw probes (at least
#     LOSSY_MIN_PROBES) and at most LOSSY_MAX_TIMEOUTS local ACK timeouts
#     (without probes each loss is one: ~18 per run).
# The bounds leave room for a loaded machine (the test suite runs beside
# builds on two CPUs), which keeps a peer's process off its CPU for
# milliseconds at times: its ACK then comes past any deadline short
# enough to find a lost tail, and draws a probe. With a deadline that
# does not cover the ACK hold, probes come by the dozen per 1000
# ibv_rc_pingpong round trips and by the hundred per iperf3 run
# (bench/results/2026-11-26-tlphold.md).
# Needs root (ip netns); tests/run.sh runs it with the hosts tests.
# Usage: tests/hosts/sack_lone.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_init

PORT=19780
LONE_MAX_PROBES=${LONE_MAX_PROBES:-20}
LONE_MAX_PROBES_RS=${LONE_MAX_PROBES_RS:-60}

# probes_check NAME MAX: the probes of both hosts between snap0 and snap1
# are at most MAX
probes_check() {
	local name=$1 max=$2 d=$SOF_TMP/delta.$PORT pa pb
	if ! sof_snap "$SOF_TMP/snap1"; then
		not_ok "$name: probes" "cannot read the counters after the run"
		return 1
	fi
	sof_snap_delta "$SOF_TMP/snap0" "$SOF_TMP/snap1" >"$d"
	pa=$(awk '$1 == "a.counters.probes" { print $2 }' "$d")
	pb=$(awk '$1 == "b.counters.probes" { print $2 }' "$d")
	if [ -z "$pa" ] || [ -z "$pb" ]; then
		not_ok "$name: probes" "no probe counters"
	elif [ $((pa + pb)) -le "$max" ]; then
		ok "$name: $((pa + pb)) tail-loss probes without loss (a $pa, b $pb; at most $max)"
	else
		not_ok "$name: probes" "$((pa + pb)) tail-loss probes without loss (a $pa, b $pb; at most $max): lone messages draw probes"
	fi
}

# lossy_check NAME: under loss, the lost lone messages drew probes (both
# hosts' probes at least LOSSY_MIN_PROBES) and at most LOSSY_MAX_TIMEOUTS
# local ACK timeouts (a probe's own answer can be lost, or late on a
# loaded machine)
LOSSY_MIN_PROBES=${LOSSY_MIN_PROBES:-4}
LOSSY_MAX_TIMEOUTS=${LOSSY_MAX_TIMEOUTS:-8}
lossy_check() {
	local name=$1 d=$SOF_TMP/delta.$PORT p t
	if ! sof_snap "$SOF_TMP/snap1"; then
		not_ok "$name: probes" "cannot read the counters after the run"
		return 1
	fi
	sof_snap_delta "$SOF_TMP/snap0" "$SOF_TMP/snap1" >"$d"
	p=$(awk '$1 ~ /^[ab]\.counters\.probes$/ { n += $2 } END { print n + 0 }' "$d")
	t=$(awk '$1 ~ /^[ab]\.counters\.timeouts$/ { n += $2 } END { print n + 0 }' "$d")
	if [ "$p" -ge "$LOSSY_MIN_PROBES" ] && [ "$t" -le "$LOSSY_MAX_TIMEOUTS" ]; then
		ok "$name: $p tail-loss probes, $t local ACK timeouts (at least $LOSSY_MIN_PROBES, at most $LOSSY_MAX_TIMEOUTS)"
	else
		not_ok "$name: probes" "$p tail-loss probes, $t local ACK timeouts (at least $LOSSY_MIN_PROBES, at most $LOSSY_MAX_TIMEOUTS): lost lone messages wait for the timeout"
	fi
}

snap0() {
	PORT=$((PORT + 1))
	sof_gated "$1" && return 1
	if ! sof_snap "$SOF_TMP/snap0"; then
		not_ok "$1: probes" "cannot read the counters before the run"
		return 1
	fi
}

if sof_hosts_up 2; then
	sof_netem_clear a
	sof_netem_clear b
	name="hosts/sack_lone ibv_rc_pingpong -s 64 -n 1000"
	if snap0 "$name"; then
		sof_host_pair "$name" a b "$PORT" 60 ibv_rc_pingpong -g @GID@ -s 64 -n 1000
		sof_pingpong_verdict "$name" $?
		probes_check "$name" "$LONE_MAX_PROBES"
	fi
	name="hosts/sack_lone ib_write_lat -s 2 -n 1000"
	if snap0 "$name"; then
		SOF_LINEBUF=1 sof_host_pair "$name" a b "$PORT" 60 ib_write_lat -x @GID@ -s 2 -n 1000 -d sof0 -F
		sof_perftest_verdict "$name" $?
		probes_check "$name" "$LONE_MAX_PROBES"
	fi
	name="hosts/sack_lone iperf3 over rsockets"
	if snap0 "$name"; then
		sof_rs_iperf "$name" a b "$(sof_host_ip a)" "$PORT"
		probes_check "$name" "$LONE_MAX_PROBES_RS"
	fi
fi

# a real tail loss: every lost lone message (or its ACK) is found by a
# probe, not by the local ACK timeout (through the software cable, which
# impairs without netem in the kernel)
sof_hosts_down
if sof_hosts_up 2 wire; then
	name="hosts/sack_lone ibv_rc_pingpong -s 64 -n 300 under loss 3%"
	if snap0 "$name" && sof_netem a loss 3% && sof_netem b loss 3%; then
		sof_host_pair "$name" a b "$PORT" 60 ibv_rc_pingpong -g @GID@ -s 64 -n 300
		sof_pingpong_verdict "$name" $?
		lossy_check "$name"
	fi
fi

sof_exit
