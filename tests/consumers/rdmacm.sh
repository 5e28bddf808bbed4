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

# rping_run SIZE COUNT [EXTRA...]: one server/client run, data checked
rping_run() {
	local size=$1 count=$2
	shift 2
	PORT=$((PORT + 1))
	sof_rping_pair "rdmacm/rping -S $size -C $count $*" "" "" "$ADDR" "$PORT" "$size" "$count" "$@"
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
	sof_cm_verdict "rdmacm/ucmatose -c 100" 'data transfers complete' 'return status 0'
PORT=$((PORT + 1))
pair "rdmacm/ucmatose -c 10 -C 100 -S 4096 -m" 120 \
	ucmatose -b "$ADDR" -p "$PORT" -c 10 -C 100 -S 4096 -m -- \
	ucmatose -s "$ADDR" -p "$PORT" -c 10 -C 100 -S 4096 -m &&
	sof_cm_verdict "rdmacm/ucmatose -c 10 -C 100 -S 4096 -m" 'migrating to new event channel' \
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
		sof_cm_verdict "rdmacm/ucmatose -c 10 $opts ($where)" 'data transfers complete' 'return status 0'
done
# udaddy has no port option: 7174
pair "rdmacm/udaddy -c 4" 60 udaddy -b "$ADDR" -c 4 -- udaddy -s "$ADDR" -c 4 &&
	sof_cm_verdict "rdmacm/udaddy -c 4" 'data transfers complete' 'return status 0'

# ---- the end-point API ------------------------------------------------------------
PORT=$((PORT + 1))
pair "rdmacm/rdma_server + rdma_client" 60 rdma_server -s "$ADDR" -p "$PORT" -- \
	rdma_client -s "$ADDR" -p "$PORT" &&
	sof_cm_verdict "rdmacm/rdma_server + rdma_client" 'rdma_server: end 0' 'rdma_client: end 0'
PORT=$((PORT + 1))
pair "rdmacm/rdma_xserver + rdma_xclient" 60 rdma_xserver -p "$PORT" -- \
	rdma_xclient -s "$ADDR" -p "$PORT" &&
	sof_cm_verdict "rdmacm/rdma_xserver + rdma_xclient" 'rdma_xserver: end 0' 'rdma_xclient: end 0'

# ---- cmtime --------------------------------------------------------------------------
PORT=$((PORT + 1))
SOF_CM_SRV_STOP=1 pair "rdmacm/cmtime -c 1000" 180 cmtime -b "$ADDR" -p "$PORT" -- \
	cmtime -s "$ADDR" -p "$PORT" -c 1000 &&
	sof_cm_verdict "rdmacm/cmtime -c 1000" '^ *connect ' '^ *disconnect '

# ---- perftest -R ------------------------------------------------------------------------
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
	sof_cm_perftest_verdict "$name"
done

# ---- mckey: two receivers, one sender, on this host ---------------------------------------
sof_mckey "rdmacm/mckey 2 receivers + sender" "" "$ADDR" "r1::$ADDR" "r2::$ADDR"

# ---- failures ------------------------------------------------------------------------------
# no listener: rejected promptly; no route to the address
PORT=$((PORT + 1))
sof_cm_fails_fast "rdmacm/connect to a port with no listener" 20 5000 "" \
	'RDMA_CM_EVENT_(REJECTED|UNREACHABLE)' rping -c -a "$ADDR" -p "$PORT" -C 1
sof_cm_fails_fast "rdmacm/unreachable address" 30 10000 "" "$SOF_CM_FAILED" \
	rping -c -a 192.0.2.1 -p 7174 -C 1

# SIGKILL of the client, then of the server, during an endless rping
for victim in cli srv; do
	PORT=$((PORT + 1))
	sof_rping_kill "rdmacm/rping: SIGKILL of the $victim" "" "" "$ADDR" "$PORT" "$victim"
done

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
