#!/bin/bash
# The QP rate limit between hosts (issue 17): tests/progs/rate_stream WRITEs
# 4 MiB from host b into host a's memory, every byte checked by the server:
#   - without a limit, as the baseline;
#   - at 40,000 kbit/s (ibv_modify_qp_rate_limit in RTS, reported back by
#     ibv_query_qp): the stream takes at least 0.8 of what 4 MiB plus
#     headers take at that rate, at most 3 times it, and at most 1.1 times
#     the rate, and far longer than the baseline.
# The pacing is the transport's (transport/requester.c): the client's own
# engine runs it, and with SOFTOFED_ENGINE=daemon the daemon's. Needs root (ip netns). A missing program is a failure.
# Usage: tests/hosts/ratelimit.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_init

PORT=18760
LEN=$((4 << 20))
KBPS=40000
# 1024-byte payloads, each charged 96 bytes of headers
EXPECT_MS=$((LEN / 1024 * 1120 * 8 / KBPS))

# stream NAME [ARGS...]: rate_stream a <- b; the client's elapsed_ms in MS
stream() {
	local name=$1
	shift
	PORT=$((PORT + 1))
	MS=""
	if sof_host_pair "$name" a b "$PORT" 60 "$SOF_PROGS/rate_stream" -g @GID@ -l $LEN -T 50 "$@" &&
		grep -q "^server bytes=$LEN bad=0$" "$SOF_SRV_OUT"; then
		MS=$(sed -n 's/^client .*elapsed_ms=\([0-9]*\).*/\1/p' "$SOF_CLI_OUT")
	fi
	[ -n "$MS" ] && return 0
	not_ok "$name" "${SOF_PAIR_WHY:-no intact stream}"
	sof_pair_dump
	return 1
}

# limited LABEL: the limited stream against the baseline $base
limited() {
	local name="hosts/ratelimit $KBPS kbit/s$1" line
	stream "$name" -r $KBPS || return
	line=$(grep '^client' "$SOF_CLI_OUT")
	if [ "$MS" -ge $((EXPECT_MS * 8 / 10)) ] && [ "$MS" -le $((EXPECT_MS * 3)) ] &&
		[ "$MS" -ge $((base * 4)) ]; then
		ok "$name: $line (expected ~$EXPECT_MS ms, unlimited $base ms)"
	else
		not_ok "$name" "$line: expected ~$EXPECT_MS ms (0.8x..3x) and 4x the unlimited $base ms"
		sof_pair_dump
	fi
}

if sof_hosts_up 2 && stream "hosts/ratelimit unlimited"; then
	base=$MS
	ok "hosts/ratelimit unlimited: $(grep '^client' "$SOF_CLI_OUT")"
	limited ""
	export SOFTOFED_ENGINE=daemon
	limited " (the daemon's engine)"
	unset SOFTOFED_ENGINE
fi
sof_exit
