#!/bin/bash
# Sleeping in poll(2) on a completion channel's fd (issue 17): a program
# that arms its CQ (ibv_req_notify_cq) and sleeps in poll() on
# channel->fd, as rdma-core documents and libfabric's verbs provider,
# rsocket users and MPI progress threads do, must be woken as soon as a
# completion comes, with the engine in the program too (verbs/tp_host.c:
# arming a CQ keeps the progress thread on the sockets). progs/chan_poll
# ping-pongs N messages, every byte checked, between hosts a and b with
# both sides sleeping in poll() on the fd, then the same with both in a
# blocking ibv_get_cq_event; the poll() run's median round trip must stay
# within 3x the event run's plus 100 us, and no message may be lost. The
# 100 us: ibv_get_cq_event polls for 50 us before it sleeps, so its ping-
# pong wakes no thread, while a sleeper in poll(2) costs two wake-ups a
# direction (the progress thread's for the packet, then the program's for
# its event: ~20 us each on an idle VM), four a round trip; the check is
# against the holds that once left such a sleeper waiting (200 us to
# 1.6 ms a message), and against a wake-up more per message.
# Needs root (ip netns).
# Usage: tests/hosts/chan_poll.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_init

PORT=19990
if ! sof_hosts_up 2; then
	not_ok "hosts/chan_poll: set-up" "two hosts did not come up"
	exit 0
fi
A=$(sof_host_ip a)
n=${SOF_CHAN_POLL_N:-2000}
declare -A med

for mode in event poll; do
	PORT=$((PORT + 1))
	name="hosts/chan_poll: $n messages, both sides asleep in $mode"
	sof_host_bg "$name.srv" a 90 "$SOFTOFED" run -- "$SOF_PROGS/chan_poll" -p "$PORT" \
		-m "$mode" -n "$n" -T 80
	SOF_LISTEN_HOST=a sof_wait_listen "$PORT" 10 2>/dev/null || sleep 0.5
	sof_host_bg "$name.cli" b 90 "$SOFTOFED" run -- "$SOF_PROGS/chan_poll" -p "$PORT" \
		-m "$mode" -n "$n" -T 80 "$A"
	sof_wait "$name.cli" 90
	crc=$?
	sof_wait "$name.srv" 30
	src=$?
	so=$(sof_out "$name.srv")
	co=$(sof_out "$name.cli")
	m=$(sed -n "s/^client $n messages checked mode=$mode median_us=\([0-9]*\) .*/\1/p" "$co")
	if [ $crc -eq 0 ] && [ $src -eq 0 ] && [ -n "$m" ] &&
		grep -q "^server $n messages checked mode=$mode" "$so"; then
		med[$mode]=$m
		ok "$name: every byte checked, $(grep '^client' "$co" | sed 's/.*mode=[a-z]* //')"
	else
		not_ok "$name" "exit status server $src, client $crc"
		sof_dump "$so" "$co"
	fi
done

name="hosts/chan_poll: poll() on the fd wakes as promptly as ibv_get_cq_event"
if [ -n "${med[event]:-}" ] && [ -n "${med[poll]:-}" ]; then
	bound=$((3 * med[event] + 100))
	if [ "${med[poll]}" -le "$bound" ]; then
		ok "$name: median ${med[poll]} us, ibv_get_cq_event ${med[event]} us (bound $bound)"
	else
		not_ok "$name" "median ${med[poll]} us, ibv_get_cq_event ${med[event]} us (bound $bound)"
	fi
else
	not_ok "$name" "a run failed"
fi
