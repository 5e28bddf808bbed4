#!/bin/bash
# The helper programs of the host tests, on ONE host (works today, before
# the RoCEv2 engine): two processes in one private network namespace with
# its own daemon, through `softofed run`.
#   atomic_count     5000 fetch-and-adds, 8 outstanding: all results
#                    distinct and in range, the counter exactly base + 5000
#   rc_timeout       the server destroys its QP after the sync: the client's
#                    SEND ends in IBV_WC_RETRY_EXC_ERR after 0.5x..3x of
#                    (retry_cnt + 1) x 4.096 us x 2^timeout, the next WQE is
#                    flushed, the QP is in ERR (timeout 12 / retry 3 and
#                    timeout 14 / retry 2)
#   qp_hold          an RC (RTS, INIT), UC (RTR) and UD (RTS) QP comes up,
#                    prints its line, exits on SIGTERM with nothing changed
#   roce_inject      -N: its ICRCs equal those of icrc_check.py --vector
#                    (zlib) for IPv4 and IPv6 packets of several modes; sent
#                    for real to 127.0.0.1 / ::1 and captured with tshark on
#                    lo: the valid ones decode as InfiniBand, no malformed
#                    packet, icrc_check.py finds every ICRC right; a second
#                    capture of a wrong-ICRC packet and a short one: the
#                    checker finds exactly those 2; the daemon still answers
#
# Usage: tests/hosts/progs_local.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_ns_enter "$@"
sof_init

PORT=18800

# pair NAME PROG SRVARGS -- CLIARGS: server and client of a tests/progs
# program on 127.0.0.1; 0 when both exited with 0
pair() {
	local name=$1 prog=$2 sargs=() cargs=()
	shift 2
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		sargs+=("$1")
		shift
	done
	shift
	cargs=("$@")
	PORT=$((PORT + 1))
	sof_bg "$name.srv" 90 "$SOFTOFED" run -- "$SOF_PROGS/$prog" -p "$PORT" "${sargs[@]}"
	sof_bg "$name.cli" 60 "$SOFTOFED" run -- "$SOF_PROGS/$prog" -p "$PORT" "${cargs[@]}" 127.0.0.1
	sof_wait "$name.cli" 70
	CLI_RC=$?
	sof_wait "$name.srv" 30
	SRV_RC=$?
	SRV_OUT=$(sof_out "$name.srv")
	CLI_OUT=$(sof_out "$name.cli")
	[ "$CLI_RC" -eq 0 ] && [ "$SRV_RC" -eq 0 ]
}

# ---- atomic_count
n=5000
if pair progs/atomic_count atomic_count -- -n $n -q 8 &&
	grep -q "^client count=$n depth=[0-9]* distinct=$n " "$CLI_OUT" &&
	grep -q '^server counter=\([0-9]*\) expected=\1 ' "$SRV_OUT"; then
	ok "progs/atomic_count: $(grep '^client count' "$CLI_OUT")"
else
	not_ok "progs/atomic_count" "exit status server $SRV_RC, client $CLI_RC"
	sof_dump "$SRV_OUT" "$CLI_OUT"
fi

# ---- rc_timeout: the peer's QP is gone, the SEND waits out the timer
for tr in "12 3" "14 2"; do
	read -r t r <<<"$tr"
	name="progs/rc_timeout -t $t -r $r"
	pair "$name" rc_timeout -- -t "$t" -r "$r"
	line=$(grep '^status=' "$CLI_OUT")
	el=$(echo "$line" | sed -n 's/.*elapsed_ms=\([0-9]*\).*/\1/p')
	ex=$(echo "$line" | sed -n 's/.*expected_ms=\([0-9]*\).*/\1/p')
	if [ "$CLI_RC" -ne 0 ] || [ -z "$el" ] || [ -z "$ex" ]; then
		not_ok "$name" "client exit $CLI_RC: ${line:-no status line}"
		sof_dump "$SRV_OUT" "$CLI_OUT"
	elif [ $((el * 2)) -lt "$ex" ] || [ "$el" -gt $((ex * 3)) ]; then
		not_ok "$name" "IBV_WC_RETRY_EXC_ERR after $el ms, outside 0.5x..3x of $ex ms"
	elif ! grep -q '^qp_state=ERR' "$CLI_OUT"; then
		not_ok "$name" "the QP is not in ERR after the error"
	else
		ok "$name: $line"
	fi
done

# ---- qp_hold
for spec in "rc rts" "rc init" "uc rtr" "ud rts"; do
	read -r ty st <<<"$spec"
	name="progs/qp_hold $ty $st"
	sof_bg "$name" 30 "$SOFTOFED" run -- "$SOF_PROGS/qp_hold" -t "$ty" -s "$st" -a 127.0.0.1 -T 20
	out=$(sof_out "$name")
	for _ in $(seq 100); do
		grep -q '^qpn=' "$out" 2>/dev/null && break
		sof_alive "$name" || break
		sleep 0.05
	done
	line=$(grep '^qpn=' "$out")
	sof_kill "$name"
	if [ -n "$line" ] && grep -q '^exit completions=0 target_changed=0' "$out"; then
		ok "$name: $line"
	else
		not_ok "$name" "no ready line or no clean exit"
		sof_dump "$out"
	fi
done

# ---- roce_inject: its ICRC against an independent one
vec_ok=0 vec_bad=0
for spec in "10.77.0.2 10.77.0.1 good" "10.77.0.2 10.77.0.1 write -k 0x1234 -a 0x7f0000001000 -l 100" \
	"10.77.0.2 10.77.0.1 ud -l 3" "10.77.0.2 10.77.0.1 version" "fd77::2 fd77::1 good -l 1" \
	"fd77::2 fd77::1 write -l 4096" "fd77::2 fd77::1 uc -l 7"; do
	read -r src dst mode args <<<"$spec"
	# shellcheck disable=SC2086 # args are words
	out=$(timeout 10 "$SOF_PROGS/roce_inject" -N -s "$src" -P 50001 $mode $args "$dst")
	mine=$(echo "$out" | head -n 1 | sed 's/.*icrc=//')
	hex=$(echo "$out" | tail -n +2 | tr -d ' \n')
	py=$(timeout 10 python3 "$SOF_ROOT/tests/hosts/icrc_check.py" --vector "$src" 50001 "$dst" "${hex:0:${#hex}-8}")
	if [ -n "$mine" ] && [ "$mine" = "$py" ]; then
		vec_ok=$((vec_ok + 1))
	else
		vec_bad=$((vec_bad + 1))
		echo "# $spec: roce_inject $mine, icrc_check.py ${py:-?}"
	fi
done
if [ $vec_bad -eq 0 ]; then
	ok "progs/roce_inject -N: ICRC of $vec_ok packets (IPv4, IPv6) equals icrc_check.py's"
else
	not_ok "progs/roce_inject -N" "$vec_bad of $((vec_ok + vec_bad)) ICRCs differ from icrc_check.py's"
fi

# ---- roce_inject for real, captured on lo
inject() {
	timeout 10 "$SOF_PROGS/roce_inject" "$@" >>"$SOF_TMP/inject.log" 2>&1 ||
		echo "# roce_inject $* failed"
}
cap=$SOF_TMP/good.pcap
if sof_capture_start progs/capture.good "$cap" lo; then
	inject good 127.0.0.1
	inject write -k 0x1234 -a 0x1000 -l 100 127.0.0.1
	inject ud -l 3 127.0.0.1
	inject uc 127.0.0.1
	inject payload 127.0.0.1
	inject good -l 5000 ::1
	inject write -l 1 ::1
	sof_capture_stop progs/capture.good
	sof_capture_check progs/roce_inject "$cap"
	if [ "$SOF_CAP_N" -ne 7 ]; then
		not_ok "progs/roce_inject: capture" "$SOF_CAP_N RoCEv2 packets captured, 7 sent"
	fi
else
	not_ok "progs/roce_inject: capture" "tshark did not start capturing on lo"
fi
cap=$SOF_TMP/bad.pcap
if sof_capture_start progs/capture.bad "$cap" lo; then
	inject icrc 127.0.0.1
	inject short 127.0.0.1
	sof_capture_stop progs/capture.bad
	res=$(timeout 60 python3 "$SOF_ROOT/tests/hosts/icrc_check.py" "$cap" | tail -n 1)
	if [ "$res" = "icrc: 2 RoCEv2 packets, 2 with a wrong ICRC" ]; then
		ok "progs/icrc_check.py: finds the wrong ICRC and the short packet ($res)"
	else
		not_ok "progs/icrc_check.py" "on a wrong ICRC and a short packet: $res"
	fi
else
	not_ok "progs/icrc_check.py" "tshark did not start capturing on lo"
fi
if timeout 10 "$SOFTOFED" status >/dev/null 2>&1; then
	ok "progs/roce_inject: the daemon still answers after the packets"
else
	not_ok "progs/roce_inject" "the daemon does not answer after the packets"
fi

sof_exit
