#!/bin/bash
# The connection manager between hosts (issue 4): unmodified rdmacm-utils
# and perftest through `softofed run`, the server in host a (10.77.0.1),
# the client in host b, the IB CM's MADs on QP1 over RoCEv2 between the two
# daemons:
#   rping -v -V -C 1000, sizes 64 and 65535 (rping's largest), data checked
#     on both sides (tests/consumers/rping_check.py); over IPv6 (fd77::1);
#   ucmatose -c 100; udaddy -c 4;
#   perftest -R: ib_send_lat, ib_send_bw, ib_write_bw, ib_read_lat, and
#     ib_write_bw -R -s 1 MiB;
#   failures: a connect to a port of host a with no listener is rejected
#     within 5 s; an address of the subnet where no host answers
#     (10.77.0.99) fails within 30 s; with host a's daemon stopped (SIGSTOP)
#     the connect times out (an error event, non-zero exit) within 120 s;
#     SIGKILL of the rping client in host b: the server in host a sees
#     DISCONNECTED and exits within 30 s;
#   mckey on three hosts joined by a bridge: receivers in b and c, the
#     sender in a, 10 messages each.
# Needs root (ip netns). A first short rping checks that connections work at
# all; when it fails, the other runs are reported failed at once
# (SOF_HOSTS_KEEP_GOING=1 runs them all anyway).
# Usage: tests/hosts/rdmacm.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_init

PORT=19800
GATE=""
CHECK=$SOF_ROOT/tests/consumers/rping_check.py
# how rping reports a failed resolution or connection
CM_FAILED='RDMA_CM_EVENT_[A-Z_]*(ERROR|UNREACHABLE|REJECTED)|rdma_resolve_(addr|route)|rdma_connect'
ERRORS='error|fail|couldn.t|unable|invalid|not supported|segmentation|abort|mismatch'
RESULT='^[[:space:]]*[0-9]+[[:space:]]+[0-9]+[[:space:]]+[0-9.]+[[:space:]]+[0-9.]+'

gated() {
	if [ -n "$GATE" ] && [ -z "${SOF_HOSTS_KEEP_GOING:-}" ]; then
		not_ok "$1" "not run: $GATE"
		return 0
	fi
	return 1
}

# rping_hosts SIZE COUNT SRV_ADDR: server in a, client in b
rping_hosts() {
	local size=$1 count=$2 addr=$3 name
	name="hosts/rdmacm rping a<-b $addr -S $size -C $count"
	PORT=$((PORT + 1))
	gated "$name" && return 1
	if ! SOF_LINEBUF=1 sof_cm_pair "$name" 120 a b \
		rping -s -v -a "$addr" -p "$PORT" -S "$size" -C "$count" -- \
		rping -c -v -V -a "$addr" -p "$PORT" -S "$size" -C "$count"; then
		not_ok "$name" "$SOF_PAIR_WHY"
		sof_pair_dump
		return 1
	elif ! python3 "$CHECK" "$SOF_CLI_OUT" "ping data: " "$count" "$size" >"$SOF_TMP/chk" 2>&1; then
		not_ok "$name" "client data: $(tail -n 1 "$SOF_TMP/chk")"
		sof_pair_dump
		return 1
	elif ! python3 "$CHECK" "$SOF_SRV_OUT" "server ping data: " "$count" "$size" >"$SOF_TMP/chk" 2>&1; then
		not_ok "$name" "server data: $(tail -n 1 "$SOF_TMP/chk")"
		sof_pair_dump
		return 1
	fi
	ok "$name ($count pings verified both sides)"
}

# pair NAME SECS SERVER... -- CLIENT...: server in a, client in b
# (PAIR=sof_perftest_cm_pair for perftest -R)
pair() {
	local name=$1 secs=$2
	shift 2
	gated "$name" && return 1
	if ! "${PAIR:-sof_cm_pair}" "$name" "$secs" a b "$@"; then
		not_ok "$name" "$SOF_PAIR_WHY"
		sof_pair_dump
		return 1
	fi
	if grep -v -E 'return status 0' "$SOF_CLI_OUT" "$SOF_SRV_OUT" | grep -q -i -E "$ERRORS"; then
		not_ok "$name" "error text in the output"
		sof_pair_dump
		return 1
	fi
	return 0
}

# fails_fast NAME SECS MAX_MS HOST CMD...: CMD must fail (non-zero, not by
# the timeout) within MAX_MS
fails_fast() {
	local name=$1 secs=$2 max=$3 host=$4 t0 rc dt
	shift 4
	gated "$name" && return
	t0=$(now_ms)
	sof_cm_bg ff "$host" "$secs" "$@"
	sof_wait ff $((secs + 5))
	rc=$?
	dt=$(($(now_ms) - t0))
	if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] || [ "$dt" -gt "$max" ]; then
		not_ok "$name" "exit $rc after $dt ms (want a failure within $max ms)"
		sof_dump "$(sof_out ff)"
	elif ! grep -q -E "$CM_FAILED" "$(sof_out ff)"; then
		not_ok "$name" "failed, but not in address resolution or connection"
		sof_dump "$(sof_out ff)"
	else
		ok "$name: exit $rc after $dt ms ($(grep -o -E 'RDMA_CM_EVENT_[A-Z_]+' "$(sof_out ff)" | head -n 1))"
	fi
}

if sof_hosts_up 2; then
	A=$(sof_host_ip a)
	A6=$(sof_host_ip6 a)
	rping_hosts 64 10 "$A" || GATE="the first rping between hosts failed"
	rping_hosts 64 1000 "$A"
	rping_hosts 65535 1000 "$A"
	rping_hosts 4096 1000 "$A6"

	PORT=$((PORT + 1))
	pair "hosts/rdmacm ucmatose -c 100" 120 ucmatose -b "$A" -p "$PORT" -c 100 -- \
		ucmatose -s "$A" -p "$PORT" -c 100 &&
		ok "hosts/rdmacm ucmatose -c 100"
	pair "hosts/rdmacm udaddy -c 4" 60 udaddy -b "$A" -c 4 -- udaddy -s "$A" -c 4 &&
		ok "hosts/rdmacm udaddy -c 4"

	for t in "ib_send_lat -n 1000" "ib_send_bw" "ib_write_bw" "ib_read_lat -n 1000" \
		"ib_write_bw -s 1048576 -n 100"; do
		PORT=$((PORT + 1))
		name="hosts/rdmacm perftest $t -R"
		# shellcheck disable=SC2086 # $t is the program and its options
		PAIR=sof_perftest_cm_pair pair "$name" 120 $t -R -d sof0 -F -p "$PORT" -- \
			$t -R -d sof0 -F -p "$PORT" "$A" || continue
		if grep -q -E "$RESULT" "$SOF_CLI_OUT"; then
			ok "$name ($(grep -E "$RESULT" "$SOF_CLI_OUT" | tail -n 1 | tr -s ' \t' ' ' | sed 's/^ //'))${SOF_PAIR_RETRY:+; $SOF_PAIR_RETRY}"
		else
			not_ok "$name" "the client printed no result line"
			sof_pair_dump
		fi
	done

	PORT=$((PORT + 1))
	fails_fast "hosts/rdmacm connect to a port with no listener" 20 5000 b \
		rping -c -a "$A" -p "$PORT" -C 1
	fails_fast "hosts/rdmacm address where no host answers" 40 30000 b \
		rping -c -a 10.77.0.99 -p "$PORT" -C 1
	# host a's daemon frozen: its CM answers nothing
	if ! gated "hosts/rdmacm connect to a frozen daemon times out"; then
		dpid=${SOF_HOST_DPID[a]:-}
		if [ -n "$dpid" ] && kill -STOP "$dpid"; then
			PORT=$((PORT + 1))
			fails_fast "hosts/rdmacm connect to a frozen daemon times out" 130 120000 b \
				rping -c -a "$A" -p "$PORT" -C 1
			kill -CONT "$dpid"
		else
			not_ok "hosts/rdmacm connect to a frozen daemon times out" "cannot stop host a's daemon"
		fi
	fi

	# SIGKILL of the client in b during rping: the server in a sees it
	name="hosts/rdmacm rping: SIGKILL of the client in host b"
	if ! gated "$name"; then
		PORT=$((PORT + 1))
		SOF_LINEBUF=1 sof_cm_bg kp.srv a 90 rping -s -v -a "$A" -p "$PORT"
		sleep 1
		SOF_LINEBUF=1 sof_cm_bg kp.cli b 90 rping -c -v -a "$A" -p "$PORT"
		end=$(($(now_ms) + 20000))
		while [ "$(now_ms)" -lt "$end" ] &&
			[ "$(grep -c '^ping data' "$(sof_out kp.cli)")" -lt 50 ]; do
			sof_alive kp.cli || break
			sleep 0.1
		done
		if [ "$(grep -c '^ping data' "$(sof_out kp.cli)")" -lt 50 ]; then
			not_ok "$name" "rping did not run (fewer than 50 pings)"
			sof_dump "$(sof_out kp.srv)" "$(sof_out kp.cli)"
			sof_kill kp.cli
			sof_kill kp.srv
		else
			kill -KILL "$(sof_child_pid kp.cli)" 2>/dev/null
			sof_wait kp.cli 10
			sof_wait kp.srv 30
			rc=$?
			if [ "$rc" -eq 124 ] || [ "$rc" -eq 143 ]; then
				not_ok "$name" "the server did not exit within 30 s"
				sof_dump "$(sof_out kp.srv)"
			elif ! grep -q 'DISCONNECT EVENT' "$(sof_out kp.srv)"; then
				not_ok "$name" "the server exited ($rc) without a DISCONNECT EVENT"
				sof_dump "$(sof_out kp.srv)"
			else
				ok "$name: the server saw DISCONNECTED and exited ($rc)"
			fi
		fi
	fi
	sof_hosts_down
fi

# mckey: receivers in b and c, the sender in a
if sof_hosts_up 3; then
	name="hosts/rdmacm mckey a -> b, c"
	for h in b c; do
		sof_cm_bg "mckey.$h" "$h" 60 mckey -m 239.7.7.7 -b "$(sof_host_ip "$h")" -C 10
	done
	end=$(($(now_ms) + 15000))
	while [ "$(now_ms)" -lt "$end" ]; do
		grep -q 'joined dgid' "$(sof_out mckey.b)" && grep -q 'joined dgid' "$(sof_out mckey.c)" && break
		sleep 0.1
	done
	sof_cm_bg mckey.a a 60 mckey -m 239.7.7.7 -b "$(sof_host_ip a)" -C 10 -s
	sof_wait mckey.a 60
	src=$?
	good=1
	for h in b c; do
		sof_wait "mckey.$h" 30
		rc=$?
		if [ "$rc" -ne 0 ] || ! grep -q 'data transfers complete' "$(sof_out "mckey.$h")"; then
			good=0
			not_ok "$name" "receiver in $h: exit $rc, no 'data transfers complete'"
			sof_dump "$(sof_out "mckey.$h")"
		fi
	done
	if [ "$src" -ne 0 ]; then
		good=0
		not_ok "$name" "sender in a: exit $src"
		sof_dump "$(sof_out mckey.a)"
	fi
	[ "$good" -eq 1 ] && ok "$name (10 messages to each receiver)"
fi

sof_exit
