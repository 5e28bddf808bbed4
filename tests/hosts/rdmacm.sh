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

# rping_hosts SIZE COUNT SRV_ADDR: server in a, client in b
rping_hosts() {
	local name="hosts/rdmacm rping a<-b $3 -S $1 -C $2"
	PORT=$((PORT + 1))
	sof_gated "$name" && return 1
	sof_rping_pair "$name" a b "$3" "$PORT" "$1" "$2"
}

# pair NAME SECS SERVER... -- CLIENT...: server in a, client in b
# (PAIR=sof_perftest_cm_pair for perftest -R)
pair() {
	local name=$1 secs=$2
	shift 2
	sof_gated "$name" && return 1
	if ! "${PAIR:-sof_cm_pair}" "$name" "$secs" a b "$@"; then
		not_ok "$name" "$SOF_PAIR_WHY"
		sof_pair_dump
		return 1
	fi
	return 0
}

# fails_fast NAME SECS MAX_MS HOST CMD...: CMD must fail in resolution or
# connection (non-zero, not by the timeout) within MAX_MS
fails_fast() {
	sof_gated "$1" && return
	sof_cm_fails_fast "$1" "$2" "$3" "$4" "$SOF_CM_FAILED" "${@:5}"
}

if sof_hosts_up 2; then
	A=$(sof_host_ip a)
	A6=$(sof_host_ip6 a)
	rping_hosts 64 10 "$A" || SOF_GATE="the first rping between hosts failed"
	rping_hosts 64 1000 "$A"
	rping_hosts 65535 1000 "$A"
	rping_hosts 4096 1000 "$A6"

	PORT=$((PORT + 1))
	pair "hosts/rdmacm ucmatose -c 100" 120 ucmatose -b "$A" -p "$PORT" -c 100 -- \
		ucmatose -s "$A" -p "$PORT" -c 100 &&
		sof_cm_verdict "hosts/rdmacm ucmatose -c 100" 'data transfers complete' 'return status 0'
	pair "hosts/rdmacm udaddy -c 4" 60 udaddy -b "$A" -c 4 -- udaddy -s "$A" -c 4 &&
		sof_cm_verdict "hosts/rdmacm udaddy -c 4" 'data transfers complete' 'return status 0'

	for t in "ib_send_lat -n 1000" "ib_send_bw" "ib_write_bw" "ib_read_lat -n 1000" \
		"ib_write_bw -s 1048576 -n 100"; do
		PORT=$((PORT + 1))
		name="hosts/rdmacm perftest $t -R"
		# shellcheck disable=SC2086 # $t is the program and its options
		PAIR=sof_perftest_cm_pair pair "$name" 120 $t -R -d sof0 -F -p "$PORT" -- \
			$t -R -d sof0 -F -p "$PORT" "$A" || continue
		sof_cm_perftest_verdict "$name"
	done

	PORT=$((PORT + 1))
	fails_fast "hosts/rdmacm connect to a port with no listener" 20 5000 b \
		rping -c -a "$A" -p "$PORT" -C 1
	fails_fast "hosts/rdmacm address where no host answers" 40 30000 b \
		rping -c -a 10.77.0.99 -p "$PORT" -C 1
	# host a's daemon frozen: its CM answers nothing
	if ! sof_gated "hosts/rdmacm connect to a frozen daemon times out"; then
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
	if ! sof_gated "$name"; then
		PORT=$((PORT + 1))
		sof_rping_kill "$name" a b "$A" "$PORT" cli
	fi
	sof_hosts_down
fi

# mckey: receivers in b and c, the sender in a
if sof_hosts_up 3; then
	sof_mckey "hosts/rdmacm mckey a -> b, c" a "$(sof_host_ip a)" "b:b:$(sof_host_ip b)" \
		"c:c:$(sof_host_ip c)"
fi

sof_exit
