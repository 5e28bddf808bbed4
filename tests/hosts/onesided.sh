#!/bin/bash
# One-sided operations into a target process that does not run (issue 18,
# item 1), two hosts over veth, tests/progs/write_stop writing from host b
# into a target in host a, one RDMA WRITE per 8-byte word, every word
# checked by the target at the end:
#   - the target SIGSTOPped for 2 s while the WRITEs go on, then SIGCONT,
#     and the same with READs of its words (each checked by the reader)
#     and with fetch-and-adds on its word 0 (each returning the count of
#     those before it, the word ending at their number: exactly once):
#     they complete during the stop (the target's RC QP runs its
#     transport in the target process, the engine in the program; host
#     a's daemon sees that engine stall with datagrams waiting and runs
#     its responder for the in-order requests, transport/takeover.c, and
#     says so in its log), and after SIGCONT every word is in place once
#     the target continues from the shared responder state (what it
#     could not execute, the writer's retries bring: local ACK timeout
#     2^18 x 4.096 us, 7 retries);
#   - UC WRITEs (-u) into a target SIGSTOPped for 2 s: every word placed,
#     by host a's daemon during the stop (its counter takeover);
#   - SENDs (half with immediate data) and RDMA WRITEs with immediate data,
#     one to four packets each, into a target SIGSTOPped for 2 s that
#     keeps 512 receive WQEs posted: host a's daemon takes the WQEs from
#     its receive queue, places the data and writes the completions into
#     its CQ while it is stopped (then RNR NAKs until it runs), and after
#     SIGCONT the target polls every completion, in order, once, each
#     with its wr_id, opcode, imm_data, byte_len and bytes right (write_stop
#     -o send / -o wimm); the same with UC SENDs (none lost: the RQ holds
#     them all);
#   - SENDs into a target frozen for 2 s (cgroup v2 freezer: not stopped,
#     as a process the scheduler keeps off its CPU looks to the daemon),
#     the writer's local ACK timeout 2^15 x 4.096 us (1.07 s with its 7
#     retries; perftest's 14 gives 0.54 s): host a's daemon runs the target's
#     responder once its sockets waited 100 ms unread (issue 18:
#     ib_send_lat's RETRY_EXC_ERR at load, a server pinned to a busy CPU),
#     and after the thaw every completion is there, in order; the
#     target's own WRITEs into the writer, ACKed while it is frozen,
#     complete after the thaw without a resend (host a's daemon kept
#     those ACKs for it);
#   - a SIGSTOPped target receiving SENDs, SIGKILLed: the writer gets an
#     error completion, host a's daemon lives on and releases its objects;
#   - the target SIGKILLed while the WRITEs go on: the writer gets an
#     error completion (retries exhausted, IBA 9.7.6.1.3) within its retry
#     budget instead of hanging, and host a's daemon releases what the
#     target held (its log's "closed ... released" line for that pid);
#   - a connected target left idle (the writer SIGSTOPped for 5 s): host
#     a's daemon wakes at most IDLE_MAX times a second
#     (voluntary_ctxt_switches in /proc/PID/status; it watches the slot's
#     sockets for readiness instead of ticking every 5 ms while a slot is
#     held, and looks at its flow sockets every 100 ms), and after SIGCONT
#     every word is in place;
#   - the atomic exactly-once test of tests/hosts/netem.sh runs beside
#     these (atomic_count, with the target's progress thread executing
#     the atomics).
# Every writer stops at its GATE-th request until they all completed
# (write_stop -G): the script stops (or kills) the target there, waits
# until every thread of it is stopped, and lets the writer go on (SIGUSR2),
# so every request after the GATE-th goes to a target in that state
# however late the script runs on a loaded machine.
# Needs root (ip netns).
# Usage: [SOF_ONESIDED_ONLY=REGEX] tests/hosts/onesided.sh (REGEX: the parts
# to run of idle, stopped, uc, recv, frozen, fatal, killrecv, kill, atomic; default all)
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_init

PORT=19880
IDLE_MAX=${SOF_ONESIDED_IDLE_MAX:-20}
PROG=$SOF_PROGS/write_stop
GATE=100

# progress NAME: the writer's last "progress n=N" count (0: none yet)
progress() {
	local n
	n=$(sed -n 's/^progress n=\([0-9]*\)$/\1/p' "$(sof_out "$1")" | tail -n 1)
	echo "${n:-0}"
}

# start TAG COUNT [ARGS...]: target in host a, writer in host b, both
# with ARGS (the target with TGT_ARGS after them, when set), the writer waiting
# at its gate (GATE requests completed); TPID: the target's pid, WPID: the
# writer's
start() {
	local tag=$1 count=$2 end
	shift 2
	PORT=$((PORT + 1))
	# shellcheck disable=SC2086 # TGT_ARGS: words
	sof_host_bg "$tag.tgt" a 90 "$SOFTOFED" run -- "$PROG" -p "$PORT" -n "$count" -t 18 -T 80 \
		"$@" ${TGT_ARGS:-}
	sof_host_wait_listen a "$PORT" 20 "$tag.tgt" || return 1
	sof_host_bg "$tag.wr" b 90 "$SOFTOFED" run -- "$PROG" -p "$PORT" -n "$count" -t 18 -T 80 \
		-w 200 -G "$GATE" "$@" "$(sof_host_ip a)"
	end=$(($(now_ms) + 20000))
	TPID=
	WPID=
	while [ "$(now_ms)" -lt "$end" ]; do
		TPID=$(sed -n 's/^target ready pid=\([0-9]*\)$/\1/p' "$(sof_out "$tag.tgt")")
		WPID=$(sed -n 's/^writer ready pid=\([0-9]*\)$/\1/p' "$(sof_out "$tag.wr")")
		[ -n "$TPID" ] && [ -n "$WPID" ] && grep -q "^gate n=$GATE\$" "$(sof_out "$tag.wr")" &&
			return 0
		sleep 0.05
	done
	return 1
}

# go: the writer goes on past its gate
go() {
	kill -USR2 "$WPID"
}

# halt PID: SIGSTOP to PID, then wait (at most 10 s) until every thread
# of it is stopped (state T in /proc/PID/task/*/stat)
halt() {
	local pid=$1 end f st all
	kill -STOP "$pid" || return 1
	end=$(($(now_ms) + 10000))
	while [ "$(now_ms)" -lt "$end" ]; do
		all=1
		for f in /proc/"$pid"/task/*/stat; do
			st=$(sed 's/^.*) \(.\).*$/\1/' "$f" 2>/dev/null)
			[ "$st" = T ] || all=
		done
		[ -n "$all" ] && return 0
		sleep 0.01
	done
	return 1
}

# wakes PID: the voluntary context switches of PID so far
wakes() {
	sed -n 's/^voluntary_ctxt_switches:[[:space:]]*//p' "/proc/$1/status" 2>/dev/null
}

# stopped OP WHAT: OP (write_stop -o) into a target SIGSTOPped for 2 s:
# they complete during the stop, and every word is right after SIGCONT
stopped() {
	local op=$1 what=$2 name="hosts/onesided: $2 into a SIGSTOPped target" n0 n1 wrc trc out log
	if ! start "stop$op" 30000 -o "$op"; then
		not_ok "$name" "the pair did not start: $(tail -n 2 "$(sof_out "stop$op.wr")" | tr '\n' ' ') / $(tail -n 2 "$(sof_out "stop$op.tgt")" | tr '\n' ' ')"
		sof_kill "stop$op.wr"
		sof_kill "stop$op.tgt"
		return
	fi
	halt "$TPID"
	n0=$(progress "stop$op.wr")
	go
	sleep 2
	n1=$(progress "stop$op.wr")
	kill -CONT "$TPID"
	sof_wait "stop$op.wr" 80
	wrc=$?
	sof_wait "stop$op.tgt" 20
	trc=$?
	out=$(sof_out "stop$op.wr")
	if [ "$wrc" -eq 0 ] && [ "$trc" -eq 0 ] && grep -q '^target words=30000 bad=0$' "$out" &&
		{ [ "$op" = write ] || grep -q '^returned wrong=0$' "$out"; }; then
		ok "$name: every word placed and checked after SIGCONT ($(grep '^target' "$out"))"
	else
		not_ok "$name" "writer exit $wrc, target exit $trc: $(tail -n 2 "$out" | tr '\n' ' ') / $(tail -n 2 "$(sof_out "stop$op.tgt")" | tr '\n' ' ')"
	fi
	# n0: the gate's (all before it completed, none after it posted);
	# without the takeover not one more completes in these 2 s (the
	# writer's retries wait); with it tens to thousands (a loaded
	# machine delays the daemon's ticks)
	log=$(_sof_host_log a)
	if [ "$n1" -gt $((n0 + 10)) ] &&
		grep -q "the engine of pid $TPID stalled: the daemon runs its responders" "$log"; then
		ok "$name: they completed while it was stopped ($n0 -> $n1, executed by host a's daemon)"
	else
		not_ok "$name" "they completed while it was stopped: $n0 -> $n1; host a's log: $(grep -c "pid $TPID stalled" "$log") takeover lines"
	fi
}

# stopped_recv OP WHAT COUNT [ARGS...]: messages (write_stop -o OP) into
# a target SIGSTOPped for 2 s: every completion right after SIGCONT, and
# host a's daemon delivered some during the stop
stopped_recv() {
	local op=$1 what=$2 count=$3 name="hosts/onesided: $2 into a SIGSTOPped target" tag
	local n0 n1 t0 t1 wrc trc out
	shift 3
	tag="recv$op$#"
	if ! start "$tag" "$count" -o "$op" "$@"; then
		not_ok "$name" "the pair did not start: $(tail -n 2 "$(sof_out "$tag.wr")" | tr '\n' ' ') / $(tail -n 2 "$(sof_out "$tag.tgt")" | tr '\n' ' ')"
		sof_kill "$tag.wr"
		sof_kill "$tag.tgt"
		return
	fi
	halt "$TPID"
	n0=$(progress "$tag.wr")
	t0=$(sof_counter a counters.takeover)
	go
	sleep 2
	n1=$(progress "$tag.wr")
	t1=$(sof_counter a counters.takeover)
	kill -CONT "$TPID"
	sof_wait "$tag.wr" 80
	wrc=$?
	sof_wait "$tag.tgt" 20
	trc=$?
	out=$(sof_out "$tag.wr")
	if [ "$wrc" -eq 0 ] && [ "$trc" -eq 0 ] && grep -q "^target words=$count bad=0\$" "$out"; then
		ok "$name: after SIGCONT the target polled all $count completions in order, each with its imm_data, byte_len and data"
	else
		not_ok "$name" "writer exit $wrc, target exit $trc: $(tail -n 2 "$out" | tr '\n' ' ') / $(grep -m 3 '^#' "$(sof_out "$tag.tgt")" | tr '\n' ' ') $(tail -n 2 "$(sof_out "$tag.tgt")" | tr '\n' ' ')"
	fi
	# RC: completed at the writer during the stop; UC completes as sent,
	# so host a's counter tells
	if [ -n "$t0" ] && [ -n "$t1" ] && [ "$t1" -gt $((t0 + 50)) ] &&
		{ [ $# -gt 0 ] || [ "$n1" -gt $((n0 + 10)) ]; }; then
		ok "$name: host a's daemon delivered them during the stop ($n0 -> $n1 completed, counters.takeover $t0 -> $t1)"
	else
		not_ok "$name" "during the stop: $n0 -> $n1 completed, host a's counters.takeover ${t0:-?} -> ${t1:-?}"
	fi
}

# freezer [SUFFIX]: a new cgroup (v2) for this run, its path; none: fails
freezer() {
	local root
	root=$(awk '$3 == "cgroup2" {print $2; exit}' /proc/mounts)
	[ -n "$root" ] && [ -w "$root/cgroup.procs" ] || return 1
	mkdir "$root/sof-onesided-$$-$PORT${1:-}" 2>/dev/null || return 1
	echo "$root/sof-onesided-$$-$PORT${1:-}"
}

# frozen_wait CG: until cgroup CG is frozen (at most 10 s)
frozen_wait() {
	local end=$(($(now_ms) + 10000))
	while ! grep -q '^frozen 1$' "$1/cgroup.events" && [ "$(now_ms)" -lt "$end" ]; do
		sleep 0.01
	done
}

# frozen OP WHAT COUNT: messages (write_stop -o OP) into a target frozen
# for 2 s (cgroup freezer: its threads asleep, state S, not stopped: to the
# daemon, a process the scheduler keeps off its CPU), the writer's local
# ACK timeout 2^15 x 4.096 us (7 retries: 1.07 s, less than the freeze;
# the rest is room for a loaded daemon's ticks): host a's daemon answers
# for it once its sockets waited LATE_NS (daemon/steer.c),
# so the writer goes on and does not end with RETRY_EXC_ERR, and after the
# thaw the target polls every completion in order. The target also
# writes into the writer (write_stop -Z) and freezes itself right after:
# the writer, frozen meanwhile (its daemon answers for it only after
# LATE_NS), ACKs those WRITEs once the target is frozen, and host a's
# daemon keeps the ACKs for the target (transport/takeover.c), so after
# the thaw the target's WRITEs complete with no resend on host a (its
# counters.retransmits: the target is its only requester); before, the
# daemon dropped them, and the target's requester resent after its
# timeout
frozen() {
	local op=$1 what=$2 count=$3 name="hosts/onesided: $2 into a frozen target" tag="frz$1"
	local cg cgw n0 n1 wrc trc out log r0 r1 k0 k1 tout
	if ! cg=$(freezer) || ! cgw=$(freezer w); then
		[ -n "${cg:-}" ] && rmdir "$cg"
		ok "$name # SKIP no cgroup2 freezer here"
		return
	fi
	# the target's cgroup.freeze on its descriptor 9 (ip netns exec
	# mounts a /sys of its own, without the cgroups); its own WRITEs with
	# local ACK timeout 18 (1.07 s: no resend while it is descheduled
	# between their post and its freeze, however loaded the machine)
	if ! TGT_ARGS="-Z /proc/self/fd/9 -t 18" start "$tag" "$count" -o "$op" -t 15 9>>"$cg/cgroup.freeze"; then
		not_ok "$name" "the pair did not start: $(tail -n 2 "$(sof_out "$tag.wr")" | tr '\n' ' ') / $(tail -n 2 "$(sof_out "$tag.tgt")" | tr '\n' ' ')"
		sof_kill "$tag.wr"
		sof_kill "$tag.tgt"
		rmdir "$cg" "$cgw"
		return
	fi
	echo "$TPID" >"$cg/cgroup.procs"
	echo "$WPID" >"$cgw/cgroup.procs" && echo 1 >"$cgw/cgroup.freeze"
	frozen_wait "$cgw"
	r0=$(sof_counter a counters.retransmits)
	k0=$(sof_counter a counters.takeover_kept)
	# the target's own WRITEs, then it freezes itself; the writer's ACKs
	# of them once it thaws
	kill -USR1 "$TPID"
	frozen_wait "$cg"
	echo 0 >"$cgw/cgroup.freeze"
	n0=$(progress "$tag.wr")
	go
	sleep 2
	n1=$(progress "$tag.wr")
	echo 0 >"$cg/cgroup.freeze"
	sof_wait "$tag.wr" 80
	wrc=$?
	sof_wait "$tag.tgt" 20
	trc=$?
	rmdir "$cg" "$cgw" 2>/dev/null
	out=$(sof_out "$tag.wr")
	tout=$(sof_out "$tag.tgt")
	log=$(_sof_host_log a)
	if [ "$wrc" -eq 0 ] && [ "$trc" -eq 0 ] && grep -q "^target words=$count bad=0\$" "$out"; then
		ok "$name: no retry exceeded, and after the thaw the target polled all $count completions in order"
	else
		not_ok "$name" "writer exit $wrc, target exit $trc: $(tail -n 2 "$out" | tr '\n' ' ') / $(tail -n 2 "$tout" | tr '\n' ' ')"
	fi
	if [ "$n1" -gt $((n0 + 10)) ] &&
		grep -q "the engine of pid $TPID stalled: the daemon runs its responders" "$log"; then
		ok "$name: they completed while it was frozen ($n0 -> $n1, executed by host a's daemon)"
	else
		not_ok "$name" "they completed while it was frozen: $n0 -> $n1; host a's log: $(grep -c "pid $TPID stalled" "$log") takeover lines"
	fi
	r1=$(sof_counter_since a counters.retransmits "$r0")
	k1=$(sof_counter_since a counters.takeover_kept "$k0")
	if grep -q '^own writes=8 ok=8$' "$tout" && [ "${r1:-x}" = 0 ]; then
		ok "$name: its own WRITEs, ACKed while it was frozen, completed after the thaw without a resend (host a kept ${k1:-?} packets for it)"
	else
		not_ok "$name" "its own WRITEs: $(grep '^own' "$tout" | tr '\n' ' '); host a's counters.retransmits grew by ${r1:-?} (kept ${k1:-?})"
	fi
}

# fatal OP WHAT WANT TGT: with the target SIGSTOPped, the writer's next
# request is one the target's responder must end the QP for (write_stop
# -F: a SEND longer than the receive buffer, a WRITE with a wrong rkey):
# host a's daemon answers it as the target would (IBA 9.7.5.2.4), so the
# writer's QP ends with WANT within its retries (local ACK timeout 2^16 x
# 4.096 us, 7 retries: RETRY_EXC_ERR after ~2 s when the NAK is left to
# the stopped target), and after SIGCONT the target finds TGT in its
# output (its receive completion in error) and its QP in ERROR
fatal() {
	local op=$1 what=$2 want=$3 tgt=$4 tag="fatal$1" wrc out tout
	local name="hosts/onesided: $2 into a SIGSTOPped target"
	if ! start "$tag" 20000 -o "$op" -t 16 -w 2000 -F; then
		not_ok "$name" "the pair did not start: $(tail -n 2 "$(sof_out "$tag.wr")" | tr '\n' ' ') / $(tail -n 2 "$(sof_out "$tag.tgt")" | tr '\n' ' ')"
		sof_kill "$tag.wr"
		sof_kill "$tag.tgt"
		return
	fi
	halt "$TPID"
	go
	sleep 0.3
	kill -USR1 "$WPID"
	sof_wait "$tag.wr" 30
	wrc=$?
	kill -CONT "$TPID"
	sof_wait "$tag.tgt" 20
	out=$(sof_out "$tag.wr")
	tout=$(sof_out "$tag.tgt")
	# IBV_QPS_ERR is 6
	if [ "$wrc" -eq 4 ] && grep -q "^error status=$want " "$out" &&
		{ [ -z "$tgt" ] || grep -q "$tgt" "$tout"; } && grep -q '^target qp state=6$' "$tout"; then
		ok "$name: the writer's QP ends with the target's NAK ($(grep '^error' "$out")), the target's QP in ERROR after SIGCONT${tgt:+ (and its completion $tgt)}"
	else
		not_ok "$name" "writer exit $wrc (want 4, $want): $(tail -n 2 "$out" | tr '\n' ' ') / target: $(grep -E '^# message|^target' "$tout" | head -n 3 | tr '\n' ' ')"
	fi
}

# part NAME: the part NAME is run (SOF_ONESIDED_ONLY=REGEX: only the parts
# whose name matches; run.sh's pass with the ASan daemon runs those that
# run the daemon's takeover)
part() {
	[[ $1 =~ ${SOF_ONESIDED_ONLY:-.} ]]
}

if sof_hosts_up 2; then
	# ---- an idle connected target: the daemon's wake-ups
	name="hosts/onesided: an idle connected target"
	if ! part idle; then
		:
	elif start idle 30000; then
		# stopped at its gate, it goes on after SIGCONT
		halt "$WPID"
		go
		sleep 0.5
		dpid=${SOF_HOST_DPID[a]}
		w0=$(wakes "$dpid")
		sleep 5
		w1=$(wakes "$dpid")
		kill -CONT "$WPID"
		rate=$(((${w1:-0} - ${w0:-0}) / 5))
		if [ -n "$w0" ] && [ -n "$w1" ] && [ "$rate" -le "$IDLE_MAX" ]; then
			ok "$name: host a's daemon woke $rate times a second (at most $IDLE_MAX)"
		else
			not_ok "$name" "host a's daemon (pid $dpid) woke $rate times a second (${w0:-?} -> ${w1:-?} in 5 s), more than $IDLE_MAX"
		fi
		sof_wait idle.wr 80
		wrc=$?
		sof_wait idle.tgt 20
		if [ "$wrc" -eq 0 ] && grep -q '^target words=30000 bad=0$' "$(sof_out idle.wr)"; then
			ok "$name: every word placed after the pause"
		else
			not_ok "$name" "writer exit $wrc: $(tail -n 2 "$(sof_out idle.wr)" | tr '\n' ' ')"
		fi
	else
		not_ok "$name" "the pair did not start: $(tail -n 2 "$(sof_out idle.wr)" | tr '\n' ' ')"
		sof_kill idle.wr
		sof_kill idle.tgt
	fi

	# ---- stopped target: WRITEs, READs, fetch-and-adds
	if part stopped; then
		stopped write WRITEs
		stopped read READs
		stopped fadd fetch-and-adds
	fi

	# ---- UC WRITEs into a stopped target: completed as sent, so the
	# target's words and host a's takeover counter tell what arrived
	# (without the takeover the stop overflows the target's sockets)
	name="hosts/onesided: UC WRITEs into a SIGSTOPped target"
	if ! part uc; then
		:
	elif start stopuc 8000 -u -w 1000; then
		halt "$TPID"
		t0=$(sof_counter a counters.takeover)
		go
		sleep 2
		t1=$(sof_counter a counters.takeover)
		kill -CONT "$TPID"
		sof_wait stopuc.wr 80
		wrc=$?
		sof_wait stopuc.tgt 20
		trc=$?
		out=$(sof_out stopuc.wr)
		if [ "$wrc" -eq 0 ] && [ "$trc" -eq 0 ] && grep -q '^target words=8000 bad=0$' "$out"; then
			ok "$name: every word placed ($(grep '^target' "$out"))"
		else
			not_ok "$name" "writer exit $wrc, target exit $trc: $(tail -n 2 "$out" | tr '\n' ' ') / $(tail -n 3 "$(sof_out stopuc.tgt)" | tr '\n' ' ')"
		fi
		if [ -n "$t0" ] && [ -n "$t1" ] && [ "$t1" -gt $((t0 + 100)) ]; then
			ok "$name: host a's daemon placed them during the stop (counters.takeover $t0 -> $t1)"
		else
			not_ok "$name" "host a's counters.takeover ${t0:-?} -> ${t1:-?} during the stop"
		fi
	else
		not_ok "$name" "the pair did not start: $(tail -n 2 "$(sof_out stopuc.wr)" | tr '\n' ' ')"
		sof_kill stopuc.wr
		sof_kill stopuc.tgt
	fi

	# ---- SENDs and WRITEs with immediate data into a stopped target
	if part recv; then
		stopped_recv send SENDs 3000
		stopped_recv wimm "WRITEs with immediate data" 3000
		stopped_recv send "UC SENDs" 400 -u -w 2000
	fi

	# ---- SENDs into a target that does not run but is not stopped
	if part frozen; then
		frozen send SENDs 3000
	fi

	# ---- what a stopped target must NAK: NAKed by host a's daemon
	if part fatal; then
		fatal send "a SEND longer than the receive buffer" IBV_WC_REM_INV_REQ_ERR 'status IBV_WC_LOC_LEN_ERR'
		fatal write "a WRITE with a wrong rkey" IBV_WC_REM_ACCESS_ERR ''
	fi

	# ---- a stopped target receiving SENDs, killed
	name="hosts/onesided: SENDs into a SIGSTOPped target, SIGKILLed"
	if ! part killrecv; then
		:
	elif start killrecv 200000 -o send; then
		halt "$TPID"
		t0=$(sof_counter a counters.takeover)
		go
		sleep 1
		t1=$(sof_counter a counters.takeover)
		kill -KILL "$TPID"
		sof_wait killrecv.wr 60
		wrc=$?
		sof_wait killrecv.tgt 10
		out=$(sof_out killrecv.wr)
		log=$(_sof_host_log a)
		# killed while host a's daemon delivered its SENDs
		if [ "$wrc" -eq 4 ] && grep -q '^error status=' "$out" &&
			[ -n "$t0" ] && [ -n "$t1" ] && [ "$t1" -gt "$t0" ] &&
			kill -0 "${SOF_HOST_DPID[a]}" 2>/dev/null &&
			grep -q "closed .*pid $TPID .*released pds 1 mrs 1 cqs 1" "$log"; then
			ok "$name: the writer's QP fails ($(grep '^error' "$out")), host a's daemon lives on and released its objects (counters.takeover $t0 -> $t1 during the stop)"
		else
			not_ok "$name" "writer exit $wrc (want 4): $(tail -n 2 "$out" | tr '\n' ' '); counters.takeover ${t0:-?} -> ${t1:-?} during the stop; host a's daemon $(kill -0 "${SOF_HOST_DPID[a]}" 2>/dev/null && echo alive || echo gone); $(grep -c "pid $TPID .*released" "$log") released lines"
		fi
	else
		not_ok "$name" "the pair did not start: $(tail -n 2 "$(sof_out killrecv.wr)" | tr '\n' ' ')"
		sof_kill killrecv.wr
		sof_kill killrecv.tgt
	fi

	# ---- killed target
	name="hosts/onesided: WRITEs into a SIGKILLed target"
	if ! part kill; then
		:
	elif start kill 200000; then
		go
		kill -KILL "$TPID"
		t0=$(now_ms)
		sof_wait kill.wr 60
		wrc=$?
		secs=$((($(now_ms) - t0) / 1000))
		sof_wait kill.tgt 10
		out=$(sof_out kill.wr)
		if [ "$wrc" -eq 4 ] && grep -q '^error status=IBV_WC_RETRY_EXC_ERR' "$out"; then
			ok "$name: the writer's QP fails in ${secs}s ($(grep '^error' "$out"))"
		else
			not_ok "$name" "writer exit $wrc (want 4, retry exceeded): $(tail -n 2 "$out" | tr '\n' ' ')"
		fi
		log=$(_sof_host_log a)
		if grep -q "closed .*pid $TPID .*released pds 1 mrs 1 cqs 1" "$log"; then
			ok "$name: host a's daemon released its objects ($(grep -o "released pds 1 mrs 1 cqs 1[^;]*" "$log" | tail -n 1))"
		else
			not_ok "$name" "no 'released' line for pid $TPID in host a's log: $(grep "pid $TPID" "$log" | tail -n 2 | tr '\n' ' ')"
		fi
	else
		not_ok "$name" "the pair did not start: $(tail -n 2 "$(sof_out kill.wr)" | tr '\n' ' ')"
		sof_kill kill.wr
		sof_kill kill.tgt
	fi

	# ---- atomics executed by the target's progress thread, exactly once
	name="hosts/onesided: atomic_count -n 5000 -q 8"
	PORT=$((PORT + 1))
	if ! part atomic; then
		:
	elif sof_host_pair "$name" a b "$PORT" 60 "$SOF_PROGS/atomic_count" -g @GID@ -n 5000 -q 8 -T 50 &&
		grep -q '^client count=5000 depth=[0-9]* distinct=5000 ' "$SOF_CLI_OUT" &&
		grep -q '^server counter=\([0-9]*\) expected=\1 ' "$SOF_SRV_OUT"; then
		ok "$name: $(grep '^client count' "$SOF_CLI_OUT")"
	else
		not_ok "$name" "${SOF_PAIR_WHY:-wrong result}"
		sof_pair_dump
	fi
fi

sof_exit
