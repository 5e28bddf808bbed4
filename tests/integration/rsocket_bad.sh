#!/bin/bash
# rsockets against a peer that breaks the protocol (issue 22): our
# rsocket server (tests/progs/cm_rsbad victim) must end with an error, or
# an end of stream when the peer vanished, within 40 s, never hang or read
# outside its buffer (with SOF_BUILD=build-asan and
# ASAN_OPTIONS=verify_asan_link_order=0 the victim runs on the ASan/UBSan
# libraries; a sanitizer report fails). The
# peer (cm_rsbad liar) connects with a valid rs_conn_data, then:
#   big      RS_OP_DATA claiming 256 MiB: EPROTO
#   op       a reserved op in the immediate: EPROTO
#   send     a SEND without immediate (the receive has no buffer): an error
#   credits  8 one-byte messages beyond the credits granted, while the
#            victim polls without reading: EPROTO after the 384 bytes that
#            were within its credits
#   gone     8 bytes, then the process ends: end of stream after 8 bytes
# tests/progs/cm_rsconn: a non-blocking rconnect (EINPROGRESS, EAGAIN
# meanwhile, rpoll POLLOUT, SO_ERROR 0, 64 KiB each way checked; refused:
# POLLERR and SO_ERROR once; the options as rdma-core keeps them)
# (keepalive needs a peer that vanishes: tests/hosts/rsocket.sh);
# tests/progs/cm_rsclose: an rsocket closed by one thread while another
# waits in rrecv, then in raccept: both calls return within 5 s; and
# tests/progs/cm_rsseq, ten times: a numbered stream of messages both ways,
# a sender and a reader thread on one socket, each message in order and
# byte-exact.
# Runs in a private network namespace with its own daemon.
# Usage: tests/integration/rsocket_bad.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_ns_enter "$@"
sof_init

PROG=$SOF_BUILD_DIR/tests/cm_rsbad
PORT=19900

# bad MODE HOLD_MS EXPECT: one liar against one victim
bad() {
	local mode=$1 hold=$2 expect=$3 name="rsocket/bad peer: $1" got
	PORT=$((PORT + 1))
	if ! SOF_LINEBUF=1 sof_cm_pair "$name" 40 "" "" "$PROG" victim 127.0.0.1 "$PORT" "$hold" -- \
		"$PROG" liar "$mode" 127.0.0.1 "$PORT"; then
		not_ok "$name" "$SOF_PAIR_WHY"
		sof_pair_dump
		return
	fi
	got=$(grep '^victim:' "$SOF_SRV_OUT" | tail -n 1)
	if grep -q -E 'Sanitizer|runtime error' "$SOF_SRV_OUT" "$SOF_CLI_OUT"; then
		not_ok "$name" "a sanitizer report"
		sof_pair_dump
	elif [[ "$got" =~ $expect ]]; then
		ok "$name (${got#victim: })"
	else
		not_ok "$name" "victim said '${got:-nothing}', expected /$expect/"
		sof_pair_dump
	fi
}

bad big 0 '^victim: error EPROTO after 0 bytes$'
bad op 0 '^victim: error EPROTO after 0 bytes$'
bad send 0 '^victim: error '
bad credits 2000 '^victim: error EPROTO after 384 bytes$'
bad gone 0 '^victim: (end of stream|error .*) after 8 bytes$'

# a non-blocking rconnect, as a TCP socket's; the options
name="rsocket/non-blocking rconnect: EINPROGRESS, rpoll POLLOUT, SO_ERROR; refused; options (cm_rsconn)"
PORT=$((PORT + 2))
out=$(sof_out nbconn)
if timeout 60 "$SOFTOFED" run -- "$SOF_BUILD_DIR/tests/cm_rsconn" nb 127.0.0.1 "$PORT" >"$out" 2>&1 &&
	grep -q '^ok non-blocking connect' "$out"; then
	ok "$name ($(grep '^refused' "$out"))"
else
	not_ok "$name" "$(tail -n 1 "$out")"
	sof_dump "$out"
fi

# rclose in one thread while another waits in the socket (rrecv, raccept)
name="rsocket/rclose while another thread waits in rrecv and raccept"
PORT=$((PORT + 1))
out=$(sof_out close)
timeout 30 "$SOFTOFED" run -- "$SOF_BUILD_DIR/tests/cm_rsclose" 127.0.0.1 "$PORT" >"$out" 2>&1
rc=$?
if [ "$rc" -eq 0 ] && grep -q '^rrecv: returned' "$out" && grep -q '^raccept: returned' "$out"; then
	ok "$name ($(tr '\n' ';' <"$out"))"
else
	not_ok "$name" "exit $rc"
	sof_dump "$out"
fi
# a framed, numbered stream both ways, two threads on the client's socket
# (sender and reader), data before raccept; ten runs, as the race it
# guards against (counters shared by the reader's copy-out and a
# sender's CQ poll) showed up about once in fifteen
name="rsocket/numbered stream both ways, 10 x 40000 messages (cm_rsseq)"
bad_runs=""
for i in 1 2 3 4 5 6 7 8 9 10; do
	PORT=$((PORT + 1))
	out=$(sof_out "seq$i")
	if ! timeout 60 "$SOFTOFED" run -- "$SOF_BUILD_DIR/tests/cm_rsseq" 127.0.0.1 "$PORT" 40000 \
		>"$out" 2>&1 || ! grep -q '^ok 40000 messages$' "$out"; then
		bad_runs="$bad_runs $i"
		sof_dump "$out"
	fi
done
if [ -z "$bad_runs" ]; then
	ok "$name"
else
	not_ok "$name" "runs$bad_runs failed"
fi
sof_exit
