#!/bin/bash
# Consumer ladder, connection manager (issue 4): the unmodified rdmacm-utils
# and perftest programs on one host through `softofed run` (our
# libibverbs.so.1 and librdmacm.so.1), server and client as two processes,
# the server on 127.0.0.1:
#   rping -s / rping -c -v -V -C 1000: every "ping data" line of the client
#     and of the server checked against rping's pattern (tests/consumers/
#     rping_check.py), sizes 23 (rping's least) .. 65535 (rping's largest:
#     it refuses -S above 64 KiB - 1), and with -q (the QP outside the CM:
#     rdma_init_qp_attr, rdma_establish);
#   ucmatose: 100 connections (-c 100), 10 messages each, and with -m
#     (rdma_migrate_id); 10 connections with AF_IB addresses (-f gid), with
#     RDMA_PS_IB, over IPv6 (::1), with rdma_set_option (-t TOS, -a ACK
#     timeout); udaddy (UD, SIDR): 4 connections;
#   rdma_server / rdma_client, rdma_xserver / rdma_xclient (the synchronous
#     end-point API: rdma_getaddrinfo, rdma_create_ep, rdma_get_request);
#   cmtime -c 1000 (its server runs until stopped);
#   perftest -R (the connection through the RDMA CM): ib_send_lat,
#     ib_send_bw, ib_write_bw, ib_read_lat, and ib_write_bw -R -s 1 MiB;
#   mckey: two receivers and a sender on this host;
#   failures: a connect to a port with no listener is rejected within 5 s
#     (rping prints the error event, exits non-zero); an unreachable address
#     (192.0.2.1, no route) fails within 10 s; SIGKILL of the client, then of
#     the server, during an endless rping: the other side prints its
#     DISCONNECT EVENT and exits within 30 s;
#   cycles: tests/progs/cm_cycles, 100 connect / SEND / disconnect cycles in
#     one process (and 10 with 1 MiB messages) with no growth in the
#     daemon's resource counts; 20 rping -C 1 processes, after which the
#     daemon's counts are back where they started (cm_ids, cm_channels,
#     qps, cqs, mrs, pds);
#   tests/progs/cm_chan_destroy: a channel destroyed while a thread waits
#     in rdma_get_cm_event on it; the thread stays there (as in rdma-core,
#     whose read holds the file) and the program ends with its main thread.
# A missing program is a failure. Runs in a private network namespace with
# its own daemon.
# Usage: tests/consumers/rdmacm.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_ns_enter "$@"
sof_init

ADDR=127.0.0.1
PORT=19700
ERRORS='error|fail|couldn.t|unable|invalid|not supported|segmentation|abort|mismatch'
CHECK=$SOF_ROOT/tests/consumers/rping_check.py
# how rping reports a failed resolution or connection
CM_FAILED='RDMA_CM_EVENT_[A-Z_]*(ERROR|UNREACHABLE|REJECTED)|rdma_resolve_(addr|route)|rdma_connect'

# rping_run SIZE COUNT [EXTRA...]: one server/client run, data checked
rping_run() {
	local size=$1 count=$2 name
	shift 2
	name="rdmacm/rping -S $size -C $count $*"
	PORT=$((PORT + 1))
	if ! SOF_LINEBUF=1 sof_cm_pair "$name" 120 "" "" \
		rping -s -v -a "$ADDR" -p "$PORT" -S "$size" -C "$count" "$@" -- \
		rping -c -v -V -a "$ADDR" -p "$PORT" -S "$size" -C "$count" "$@"; then
		not_ok "$name" "$SOF_PAIR_WHY"
		sof_pair_dump
	elif ! python3 "$CHECK" "$SOF_CLI_OUT" "ping data: " "$count" "$size" >"$SOF_TMP/chk" 2>&1; then
		not_ok "$name" "client data: $(tail -n 1 "$SOF_TMP/chk")"
		sof_pair_dump
	elif ! python3 "$CHECK" "$SOF_SRV_OUT" "server ping data: " "$count" "$size" >"$SOF_TMP/chk" 2>&1; then
		not_ok "$name" "server data: $(tail -n 1 "$SOF_TMP/chk")"
		sof_pair_dump
	else
		ok "$name ($count pings verified both sides)"
	fi
}

# judge NAME [WANT-REGEX...]: the last pair passed, printed each regex, and
# no error text
judge() {
	local name=$1 re
	shift
	for re in "$@"; do
		if ! grep -q -E -- "$re" "$SOF_CLI_OUT" "$SOF_SRV_OUT"; then
			not_ok "$name" "no '$re' in the output"
			sof_pair_dump
			return 1
		fi
	done
	if grep -v -E 'return status 0|rdma_(x)?server: end 0|rdma_(x)?client: end 0' \
		"$SOF_CLI_OUT" "$SOF_SRV_OUT" | grep -q -i -E "$ERRORS"; then
		not_ok "$name" "error text in the output"
		sof_pair_dump
		return 1
	fi
	ok "$name"
}

# pair NAME SECS SERVER... -- CLIENT...: sof_cm_pair with the verdict
pair() {
	local name=$1 secs=$2
	shift 2
	if ! sof_cm_pair "$name" "$secs" "" "" "$@"; then
		not_ok "$name" "$SOF_PAIR_WHY"
		sof_pair_dump
		return 1
	fi
	return 0
}

# ---- rping ------------------------------------------------------------------
rping_run 64 1000
for size in 23 4096 65535; do
	rping_run "$size" 1000
done
rping_run 4096 100 -q

# ---- ucmatose, udaddy ---------------------------------------------------------
PORT=$((PORT + 1))
pair "rdmacm/ucmatose -c 100" 120 ucmatose -b "$ADDR" -p "$PORT" -c 100 -- \
	ucmatose -s "$ADDR" -p "$PORT" -c 100 &&
	judge "rdmacm/ucmatose -c 100" 'data transfers complete' 'return status 0'
PORT=$((PORT + 1))
pair "rdmacm/ucmatose -c 10 -C 100 -S 4096 -m" 120 \
	ucmatose -b "$ADDR" -p "$PORT" -c 10 -C 100 -S 4096 -m -- \
	ucmatose -s "$ADDR" -p "$PORT" -c 10 -C 100 -S 4096 -m &&
	judge "rdmacm/ucmatose -c 10 -C 100 -S 4096 -m" 'migrating to new event channel' \
		'return status 0'
# AF_IB addresses (the GID of 127.0.0.1), RDMA_PS_IB, IPv6, options
# (rdma_set_option: type of service, ACK timeout)
for args in "-f gid @::ffff:127.0.0.1" "-P ib @$ADDR" "-f ipv6 @::1" "-t 32 -a 14 @$ADDR"; do
	PORT=$((PORT + 1))
	opts=${args% @*}
	where=${args##*@}
	# shellcheck disable=SC2086 # $opts are options
	pair "rdmacm/ucmatose -c 10 $opts ($where)" 60 ucmatose $opts -b "$where" -p "$PORT" -c 10 -- \
		ucmatose $opts -s "$where" -p "$PORT" -c 10 &&
		judge "rdmacm/ucmatose -c 10 $opts ($where)" 'data transfers complete' 'return status 0'
done
# udaddy has no port option: 7174
pair "rdmacm/udaddy -c 4" 60 udaddy -b "$ADDR" -c 4 -- udaddy -s "$ADDR" -c 4 &&
	judge "rdmacm/udaddy -c 4" 'data transfers complete' 'return status 0'

# ---- the end-point API ------------------------------------------------------------
PORT=$((PORT + 1))
pair "rdmacm/rdma_server + rdma_client" 60 rdma_server -s "$ADDR" -p "$PORT" -- \
	rdma_client -s "$ADDR" -p "$PORT" &&
	judge "rdmacm/rdma_server + rdma_client" 'rdma_server: end 0' 'rdma_client: end 0'
PORT=$((PORT + 1))
pair "rdmacm/rdma_xserver + rdma_xclient" 60 rdma_xserver -p "$PORT" -- \
	rdma_xclient -s "$ADDR" -p "$PORT" &&
	judge "rdmacm/rdma_xserver + rdma_xclient" 'rdma_xserver: end 0' 'rdma_xclient: end 0'

# ---- cmtime --------------------------------------------------------------------------
PORT=$((PORT + 1))
SOF_CM_SRV_STOP=1 pair "rdmacm/cmtime -c 1000" 180 cmtime -b "$ADDR" -p "$PORT" -- \
	cmtime -s "$ADDR" -p "$PORT" -c 1000 &&
	judge "rdmacm/cmtime -c 1000" '^ *connect ' '^ *disconnect '

# ---- perftest -R ------------------------------------------------------------------------
RESULT='^[[:space:]]*[0-9]+[[:space:]]+[0-9]+[[:space:]]+[0-9.]+[[:space:]]+[0-9.]+'
for t in "ib_send_lat -n 1000" "ib_send_bw" "ib_write_bw" "ib_read_lat -n 1000" \
	"ib_write_bw -s 1048576 -n 200"; do
	PORT=$((PORT + 1))
	name="rdmacm/perftest $t -R"
	# shellcheck disable=SC2086 # $t is the program and its options
	if ! sof_perftest_cm_pair "$name" 120 "" "" $t -R -d sof0 -F -p "$PORT" -- \
		$t -R -d sof0 -F -p "$PORT" "$ADDR"; then
		not_ok "$name" "$SOF_PAIR_WHY"
		sof_pair_dump
		continue
	fi
	if ! grep -q -E "$RESULT" "$SOF_CLI_OUT"; then
		not_ok "$name" "the client printed no result line"
		sof_pair_dump
	elif grep -q -i -E "$ERRORS" "$SOF_CLI_OUT" "$SOF_SRV_OUT"; then
		not_ok "$name" "error text in the output"
		sof_pair_dump
	else
		ok "$name ($(grep -E "$RESULT" "$SOF_CLI_OUT" | tail -n 1 | tr -s ' \t' ' ' | sed 's/^ //'))${SOF_PAIR_RETRY:+; $SOF_PAIR_RETRY}"
	fi
done

# ---- mckey: two receivers, one sender, on this host ---------------------------------------
mckey_local() {
	local name="rdmacm/mckey 2 receivers + sender" r ok_all=1 end
	for r in 1 2; do
		sof_cm_bg "mckey.r$r" "" 60 mckey -m 239.7.7.7 -b "$ADDR" -C 10
	done
	end=$(($(now_ms) + 15000))
	while [ "$(now_ms)" -lt "$end" ]; do
		grep -q 'joined dgid' "$(sof_out mckey.r1)" && grep -q 'joined dgid' "$(sof_out mckey.r2)" && break
		sleep 0.1
	done
	sof_cm_bg mckey.s "" 60 mckey -m 239.7.7.7 -b "$ADDR" -C 10 -s
	sof_wait mckey.s 60
	local src=$?
	for r in 1 2; do
		sof_wait "mckey.r$r" 30
		local rc=$?
		if [ "$rc" -ne 0 ] || ! grep -q 'data transfers complete' "$(sof_out "mckey.r$r")"; then
			ok_all=0
			not_ok "$name" "receiver $r: exit $rc, no 'data transfers complete'"
			sof_dump "$(sof_out "mckey.r$r")"
		fi
	done
	if [ "$src" -ne 0 ]; then
		ok_all=0
		not_ok "$name" "sender: exit $src"
		sof_dump "$(sof_out mckey.s)"
	fi
	[ "$ok_all" -eq 1 ] && ok "$name (10 messages to each receiver)"
}
mckey_local

# ---- failures ------------------------------------------------------------------------------
# no listener: rejected promptly
PORT=$((PORT + 1))
t0=$(now_ms)
sof_cm_bg rej "" 20 rping -c -a "$ADDR" -p "$PORT" -C 1
sof_wait rej 25
rc=$?
dt=$(($(now_ms) - t0))
if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ]; then
	not_ok "rdmacm/connect to a port with no listener" "rping exited with $rc after $dt ms"
	sof_dump "$(sof_out rej)"
elif [ "$dt" -gt 5000 ]; then
	not_ok "rdmacm/connect to a port with no listener" "rejected only after $dt ms"
elif ! grep -q -E 'RDMA_CM_EVENT_(REJECTED|UNREACHABLE)' "$(sof_out rej)"; then
	not_ok "rdmacm/connect to a port with no listener" "no REJECTED/UNREACHABLE event printed"
	sof_dump "$(sof_out rej)"
else
	ok "rdmacm/connect to a port with no listener: $(grep -o -E 'RDMA_CM_EVENT_[A-Z_]+' "$(sof_out rej)" | head -n 1) after $dt ms, exit $rc"
fi

# no route to the address
t0=$(now_ms)
sof_cm_bg unreach "" 30 rping -c -a 192.0.2.1 -p 7174 -C 1
sof_wait unreach 35
rc=$?
dt=$(($(now_ms) - t0))
if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] || [ "$dt" -gt 10000 ]; then
	not_ok "rdmacm/unreachable address" "rping exited with $rc after $dt ms"
	sof_dump "$(sof_out unreach)"
elif ! grep -q -E "$CM_FAILED" "$(sof_out unreach)"; then
	not_ok "rdmacm/unreachable address" "rping failed, but not in address resolution or connection"
	sof_dump "$(sof_out unreach)"
else
	ok "rdmacm/unreachable address: rping failed after $dt ms ($(grep -v '^$' "$(sof_out unreach)" | head -n 1))"
fi

# kill_peer VICTIM: an endless rping, SIGKILL to VICTIM (srv/cli), the
# other side must see the disconnection and exit
kill_peer() {
	local victim=$1 other name pid end rc
	name="rdmacm/rping: SIGKILL of the $victim"
	[ "$victim" = srv ] && other=cli || other=srv
	PORT=$((PORT + 1))
	SOF_LINEBUF=1 sof_cm_bg kp.srv "" 90 rping -s -v -a "$ADDR" -p "$PORT"
	sleep 1
	SOF_LINEBUF=1 sof_cm_bg kp.cli "" 90 rping -c -v -a "$ADDR" -p "$PORT"
	end=$(($(now_ms) + 20000))
	while [ "$(now_ms)" -lt "$end" ]; do
		[ "$(grep -c '^ping data' "$(sof_out kp.cli)")" -ge 50 ] && break
		if ! sof_alive kp.cli || ! sof_alive kp.srv; then break; fi
		sleep 0.1
	done
	if [ "$(grep -c '^ping data' "$(sof_out kp.cli)")" -lt 50 ]; then
		not_ok "$name" "rping did not run (fewer than 50 pings)"
		sof_dump "$(sof_out kp.srv)" "$(sof_out kp.cli)"
		sof_kill kp.cli
		sof_kill kp.srv
		return
	fi
	pid=$(sof_child_pid "kp.$victim")
	kill -KILL "$pid" 2>/dev/null
	sof_wait "kp.$victim" 10
	sof_wait "kp.$other" 30
	rc=$?
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 143 ]; then
		not_ok "$name" "the other side did not exit within 30 s"
		sof_dump "$(sof_out "kp.$other")"
	elif ! grep -q 'DISCONNECT EVENT' "$(sof_out "kp.$other")"; then
		not_ok "$name" "the other side exited ($rc) without a DISCONNECT EVENT"
		sof_dump "$(sof_out "kp.$other")"
	else
		ok "$name: the other side saw DISCONNECTED and exited ($rc)"
	fi
}
kill_peer cli
kill_peer srv

# ---- cycles ------------------------------------------------------------------------------
cycles() {
	local name="rdmacm/cm_cycles $*" out
	PORT=$((PORT + 1))
	out=$(sof_out "cycles.$PORT")
	if [ ! -x "$SOF_PROGS/cm_cycles" ]; then
		not_ok "$name" "$SOF_PROGS/cm_cycles is missing (build first)"
		return
	fi
	if timeout -k 5 300 "$SOFTOFED" run -- "$SOF_PROGS/cm_cycles" -a "$ADDR" -p "$PORT" "$@" \
		>"$out" 2>&1 </dev/null && [ "$(tail -n 1 "$out")" = ok ]; then
		ok "$name ($(grep '^counts last' "$out" | sed 's/^counts last: //'))"
	else
		not_ok "$name" "$(grep '^fail' "$out" | head -n 1)"
		sof_dump "$out"
	fi
}
cycles -n 100
cycles -n 10 -s 1048576

# a channel destroyed under a thread that waits on it (rping's server)
PORT=$((PORT + 1))
out=$(sof_out "chan_destroy")
if [ ! -x "$SOF_PROGS/cm_chan_destroy" ]; then
	not_ok "rdmacm/cm_chan_destroy" "$SOF_PROGS/cm_chan_destroy is missing (build first)"
elif timeout -k 5 30 "$SOFTOFED" run -- "$SOF_PROGS/cm_chan_destroy" -a "$ADDR" -p "$PORT" \
	>"$out" 2>&1 </dev/null && [ "$(tail -n 1 "$out")" = ok ]; then
	ok "rdmacm/cm_chan_destroy: a thread waiting in rdma_get_cm_event stays there when the channel is destroyed"
else
	not_ok "rdmacm/cm_chan_destroy" "$(tail -n 1 "$out")"
	sof_dump "$out"
fi

# rping processes one after another: the daemon's counts come back
# counts: those of the resources the rpings use, one line; status 1 (and
# "no resources line") when `softofed status` has no such line
counts() {
	local r
	if ! r=$(sof_resources); then
		echo "(no resources line in softofed status)"
		return 1
	fi
	echo "$r" | awk '$1 ~ /^(pds|mrs|cqs|qps|cm_channels|cm_ids)$/ { printf "%s %s ", $1, $2; n++ }
		END { exit n != 6 }'
}
bad=0
if ! before=$(counts); then
	not_ok "rdmacm/20 x rping -C 1" "no counts before: $before"
	bad=1
fi
for i in $(seq 20); do
	[ "$bad" -eq 0 ] || break
	PORT=$((PORT + 1))
	if ! sof_cm_pair "rping-loop.$i" 30 "" "" rping -s -a "$ADDR" -p "$PORT" -C 1 -- \
		rping -c -a "$ADDR" -p "$PORT" -C 1 -V; then
		not_ok "rdmacm/20 x rping -C 1" "run $i: $SOF_PAIR_WHY"
		sof_pair_dump
		bad=1
		break
	fi
done
if [ "$bad" -eq 0 ]; then
	end=$(($(now_ms) + 10000))
	after=$(counts) || after="$after (unreadable)"
	while [ "$after" != "$before" ] && [ "$(now_ms)" -lt "$end" ]; do
		sleep 0.2
		after=$(counts) || after="$after (unreadable)"
	done
	if [ "$after" != "$before" ]; then
		not_ok "rdmacm/20 x rping -C 1" "daemon counts before: $before; after: $after"
	else
		ok "rdmacm/20 x rping -C 1: daemon counts back to $before"
	fi
fi

sof_exit
