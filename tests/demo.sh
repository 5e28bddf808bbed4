#!/bin/bash
# tests/demo.sh — the demo behind `make demo`: starts softofed in this
# network namespace (as a user would, no private namespace), then runs
# unmodified Debian programs on it through `softofed run`:
#   ibv_devinfo; an ibv_rc_pingpong server and client (data checked with
#   --chk); an ib_write_bw server and client; rping through librdmacm
#   (connection management: the IB CM's MADs on QP1); then `softofed status` and
#   `softofed down`. Exits non-zero on any failure.
# A daemon that already ran before the demo is used and left running.
#
# Usage: tests/demo.sh   (after `make build`; `make demo` does both)
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/lib.sh"
sof_init

STARTED=0
demo_cleanup() {
	if [ $STARTED -eq 1 ]; then
		timeout 20 "$SOFTOFED" down >/dev/null 2>&1
	fi
	sof_cleanup 2>/dev/null
}
trap demo_cleanup EXIT

say() {
	printf '\n==> %s\n' "$*"
}

fail() {
	printf '\ndemo: FAILED: %s\n' "$*" >&2
	exit 1
}

# show NAME: the outputs of the last server/client pair, labelled
show() {
	sed "s/^/  $1 server | /" "$SOF_SRV_OUT"
	sed "s/^/  $1 client | /" "$SOF_CLI_OUT"
}

# free_port FROM: the first TCP port from FROM on that nothing listens on
free_port() {
	local p=$1
	while [ -n "$(ss -Hltn "sport = :$p" 2>/dev/null)" ]; do
		p=$((p + 1))
	done
	echo "$p"
}

[ -x "$SOFTOFED" ] || fail "$SOFTOFED is not built (run make build, or make demo)"
for p in ibv_devinfo ibv_rc_pingpong ib_write_bw rping ss; do
	command -v "$p" >/dev/null 2>&1 || fail "$p is not installed (run make deps)"
done

echo "softofed demo: a software RDMA device (HCA) in user space, and unmodified"
echo "Debian RDMA programs running on it through 'softofed run'."

if "$SOFTOFED" status >/dev/null 2>&1; then
	say "softofed status: a daemon already runs in this network namespace; using it"
else
	say "softofed up   (start the device daemon, the software HCA)"
	timeout 20 "$SOFTOFED" up || fail "softofed up"
	STARTED=1
fi

say "softofed run -- ibv_devinfo   (rdma-core's device query tool, unmodified)"
timeout 30 "$SOFTOFED" run -- ibv_devinfo || fail "ibv_devinfo"

PORT=$(free_port 18600)
say "ibv_rc_pingpong: server and client processes, RC QP, 1000 x 4096 bytes, --chk"
echo "    server: softofed run -- ibv_rc_pingpong -p $PORT -g 0 --chk"
echo "    client: softofed run -- ibv_rc_pingpong -p $PORT -g 0 --chk localhost"
sof_pair rc_pingpong "$PORT" 60 ibv_rc_pingpong -g 0 --chk -s 4096 -n 1000
rc=$?
show rc_pingpong
[ $rc -eq 0 ] || fail "ibv_rc_pingpong: $SOF_PAIR_WHY"
grep -q ' bytes in ' "$SOF_CLI_OUT" || fail "ibv_rc_pingpong: the client printed no result"
grep -q -i 'invalid data' "$SOF_SRV_OUT" "$SOF_CLI_OUT" && fail "ibv_rc_pingpong: data check failed"

PORT=$(free_port $((PORT + 1)))
say "ib_write_bw (perftest): RDMA WRITE bandwidth between two processes, 5000 x 64 KiB"
echo "    server: softofed run -- ib_write_bw -p $PORT -d sof0 -x 0"
echo "    client: softofed run -- ib_write_bw -p $PORT -d sof0 -x 0 localhost"
sof_pair write_bw "$PORT" 60 ib_write_bw -d sof0 -x 0 -F
rc=$?
show write_bw
[ $rc -eq 0 ] || fail "ib_write_bw: $SOF_PAIR_WHY"
grep -q -E '^[[:space:]]*65536[[:space:]]+[0-9]+' "$SOF_CLI_OUT" || fail "ib_write_bw: the client printed no result"

PORT=$(free_port $((PORT + 1)))
say "rping (librdmacm): connection set up by the RDMA CM, 10 pings, data verified"
echo "    server: softofed run -- rping -s -a 127.0.0.1 -p $PORT -v -C 10"
echo "    client: softofed run -- rping -c -a 127.0.0.1 -p $PORT -v -V -C 10"
SOF_LINEBUF=1 sof_cm_pair rping 60 "" "" rping -s -a 127.0.0.1 -p "$PORT" -v -C 10 -- \
	rping -c -a 127.0.0.1 -p "$PORT" -v -V -C 10
rc=$?
show rping
[ $rc -eq 0 ] || fail "rping: $SOF_PAIR_WHY"
[ "$(grep -c '^ping data: ' "$SOF_CLI_OUT")" -eq 10 ] || fail "rping: the client did not print 10 pings"

say "softofed status"
timeout 10 "$SOFTOFED" status || fail "softofed status"

if [ $STARTED -eq 1 ]; then
	say "softofed down"
	timeout 20 "$SOFTOFED" down || fail "softofed down"
	STARTED=0
fi

printf '\ndemo: all steps succeeded\n'
