#!/bin/bash
# RoCEv2 between hosts (issue 3), step 3: the reliable transport under an
# impaired link. Hosts a and b joined through a cable that impairs frames
# like tc netem: `tc qdisc ... netem` on the host's veth0 where the kernel
# has sch_netem, else tests/progs/netwire (our machines' kernels lack
# sch_netem); each line says which.
#
# Impairments of what host b sends (and, "both", of what a sends too):
#   loss 1%, loss 10%, delay 5ms reorder 25% (reordering), duplicate 10%,
#   delay 10ms, and both ways loss 5% duplicate 10% delay 2ms reorder 20%.
# Under each:
#   - ibv_rc_pingpong --chk, server in a, client in b, path MTU 1024, sizes
#     1, 65536 and 1 MiB: both finish with correct data (exit 0);
#   - rping -v -V -C 30 (librdmacm; under 10 % loss and under everything
#     both ways): the IB CM's MADs are lost, duplicated and reordered too, so
#     REQ/REP/DREQ are retransmitted and repeats answered; the pings' data is
#     checked on both sides (tests/consumers/rping_check.py);
#   - tests/progs/atomic_count (not under plain delay): 2000 fetch-and-adds,
#     8 outstanding: every original value returned once, the counter exactly
#     base + 2000 (no fetch-and-add applied twice, none lost).
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
# Usage: tests/hosts/netem.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_init

PORT=19900
GATE=""

gated() {
	if [ -n "$GATE" ] && [ -z "${SOF_HOSTS_KEEP_GOING:-}" ]; then
		not_ok "$1" "not run: $GATE"
		return 0
	fi
	return 1
}

# pp LABEL ARGS...: ibv_rc_pingpong a <- b
pp() {
	local label=$1 name
	shift
	name="hosts/netem $label: ibv_rc_pingpong $*"
	gated "$name" && return
	PORT=$((PORT + 1))
	if ! sof_host_pair "$name" a b "$PORT" 90 ibv_rc_pingpong -g @GID@ --chk "$@"; then
		not_ok "$name" "$SOF_PAIR_WHY"
		sof_pair_dump
	elif ! grep -q ' bytes in ' "$SOF_CLI_OUT" || ! grep -q ' bytes in ' "$SOF_SRV_OUT" ||
		grep -q -i 'invalid data\|failed\|couldn' "$SOF_SRV_OUT" "$SOF_CLI_OUT"; then
		not_ok "$name" "no 'bytes in' line or error text"
		sof_pair_dump
	else
		ok "$name ($(grep ' bytes in ' "$SOF_CLI_OUT" | head -n 1 | sed 's/.* in //'))"
	fi
}

# atomics LABEL: atomic_count a <- b
atomics() {
	local name="hosts/netem $1: atomic_count -n 2000 -q 8"
	gated "$name" && return
	PORT=$((PORT + 1))
	if sof_host_pair "$name" a b "$PORT" 120 "$SOF_PROGS/atomic_count" -g @GID@ -n 2000 -q 8 -T 110 &&
		grep -q '^client count=2000 depth=[0-9]* distinct=2000 ' "$SOF_CLI_OUT" &&
		grep -q '^server counter=\([0-9]*\) expected=\1 ' "$SOF_SRV_OUT"; then
		ok "$name: $(grep '^client count' "$SOF_CLI_OUT")"
	else
		not_ok "$name" "${SOF_PAIR_WHY:-wrong result}"
		sof_pair_dump
	fi
}

# cm LABEL: rping a <- b through the connection manager
cm() {
	local name="hosts/netem $1: rping -C 30" check=$SOF_ROOT/tests/consumers/rping_check.py
	gated "$name" && return
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
		not_ok "hosts/netem $label" "cannot impair the link (no tc netem, no netwire)"
		return 1
	fi
	echo "# hosts/netem $label: $* on $([ "$who" = both ] && echo "a and b" || echo b) ($SOF_NETEM_HOW)"
	return 0
}

# cut T R: rc_timeout a <- b, the link cut after the connection
cut() {
	local t=$1 r=$2 name go line el ex
	name="hosts/netem link cut: rc_timeout -t $t -r $r"
	gated "$name" && return
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

if sof_hosts_up 2 wire; then
	pp "no impairment" -m 1024 -s 4096 -n 10
	[ "$SOF_FAILED" -eq 0 ] || GATE="the first run between hosts (no impairment) failed"
	while IFS='|' read -r label who args; do
		# shellcheck disable=SC2086 # args are netem words
		impair "$label" "$who" $args || continue
		pp "$label" -m 1024 -s 1 -n 50
		pp "$label" -m 1024 -s 65536 -n 50
		pp "$label" -m 1024 -s 1048576 -n 5
		[ "$label" = "delay 10ms" ] || atomics "$label"
		case $label in "loss 10%" | *both*) cm "$label" ;; esac
	done <<'EOF'
loss 1%|b|loss 1%
loss 10%|b|loss 10%
reordering|b|delay 5ms reorder 25%
duplication|b|duplicate 10%
delay 10ms|b|delay 10ms
loss+duplication+reordering both ways|both|loss 5% duplicate 10% delay 2ms reorder 20%
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
