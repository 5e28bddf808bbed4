#!/bin/bash
# SRQ resize under traffic between two hosts (issue 17, item 3):
# srq_resize's server (an RC QP on an SRQ) in host a, its client streaming
# SENDs (lengths 1..4096) from host b, over RoCEv2, while the server grows
# and shrinks the SRQ every 50 messages (ibv_modify_srq IBV_SRQ_MAX_WR).
# Every message must complete the WQE of its number (in order, none lost,
# none twice) with its byte_len and every byte checked:
#   - the engine in the program: the server's own engine takes from the
#     SRQ (verbs/tp_host.c, re-pointed by the resize);
#   - SOFTOFED_ENGINE=daemon: host a's daemon's engine takes from it
#     (daemon/ops_srq.c re-points its tp_srq).
# Needs root (ip netns).
# Usage: tests/hosts/srq_resize.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_init

PORT=19980
if ! sof_hosts_up 2; then
	not_ok "hosts/srq_resize: set-up" "two hosts did not come up"
	exit 0
fi
A=$(sof_host_ip a)
n=2000
# tests/run.sh runs it again with SOFTOFED_ENGINE=daemon (the ASan daemon)
engines="program daemon"
[ "${SOFTOFED_ENGINE:-}" = daemon ] && engines=daemon

for engine in $engines; do
	PORT=$((PORT + 1))
	E=()
	[ "$engine" = daemon ] && E=(env SOFTOFED_ENGINE=daemon)
	name="hosts/srq_resize: engine in the $engine, $n messages while the SRQ is resized"
	sof_host_bg "$name.srv" a 90 "$SOFTOFED" run -- "${E[@]}" "$SOF_PROGS/srq_resize" -p "$PORT" \
		-n "$n" -T 80
	SOF_LISTEN_HOST=a sof_wait_listen "$PORT" 10 2>/dev/null || sleep 0.5
	sof_host_bg "$name.cli" b 90 "$SOFTOFED" run -- "${E[@]}" "$SOF_PROGS/srq_resize" -p "$PORT" \
		-n "$n" -T 80 "$A"
	sof_wait "$name.cli" 90
	crc=$?
	sof_wait "$name.srv" 30
	src=$?
	so=$(sof_out "$name.srv")
	co=$(sof_out "$name.cli")
	if [ $crc -eq 0 ] && [ $src -eq 0 ] &&
		grep -q "^server received $n messages in order, every byte checked, [1-9][0-9]* resizes ([1-9][0-9]* grows, [1-9][0-9]* shrinks" "$so" &&
		grep -q "^client sent $n messages" "$co"; then
		ok "$name: $(grep '^server received' "$so" | sed 's/.*checked, //')"
	else
		not_ok "$name" "exit status server $src, client $crc"
		sof_dump "$so" "$co"
	fi
done
