#!/bin/bash
# SDP against a peer that breaks the protocol (issue 22 item 2): a plain
# socket server (tests/progs/cm_sdpbad victim) under libsdp.so with `use
# sdp` must end with an error within 40 s, never hang or read outside its
# buffers (with SOF_BUILD=build-asan and ASAN_OPTIONS=verify_asan_link_order=0
# it runs on the ASan/UBSan libraries; a sanitizer report fails). The peer
# (cm_sdpbad liar, on the RDMA CM and verbs directly) connects with a
# valid Hello, then:
#   len      a BSDH Len that is not the message's: EPROTO
#   seq      MSeq out of order after 8 good bytes: EPROTO after 8 bytes
#   ack      MSeqAck of a message never sent: EPROTO
#   bufs     Bufs 60000: EPROTO
#   credits  Bufs 0, then 8 messages beyond the 16 credits granted:
#            EPROTO after the 16 bytes within them
#   big      a message larger than the victim's buffers: an error
#   mid      ChRcvBuf (a buffer-size change, which we do not speak): EPROTO
#   wrcompl  a RdmaWrCompl for no SinkAvail of ours: EPROTO
#   wcopy    write mode: after the liar's SrcAvail the victim offers a
#            SinkAvail, the liar RDMA WRITEs 8 bytes into it and sends
#            RdmaWrCompl, then DisConn: end of stream after 16 bytes
#   zcancel  SrcAvail then SrcAvailCancel: answered by RdmaRdCompl as
#            usual (the READ was posted), end of stream after 8 bytes
#   cancel   a SrcAvailCancel for no SrcAvail: EPROTO
#   wbig     a RdmaWrCompl longer than the SinkAvail: EPROTO after the 8
#            bytes of the SrcAvail
#   disconn  data after DisConn: EPROTO after 8 bytes (read 0.5 s later)
#   abort    AbortConn after 8 bytes: ECONNRESET after 8 bytes
#   gone     8 bytes, then the process ends: ECONNRESET after 8 bytes
#   hello    a Hello of SDP major version 1: the REQ is rejected
# Runs in a private network namespace with its own daemon.
# Usage: tests/integration/sdp_bad.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_ns_enter "$@"
sof_init

PROG=$SOF_BUILD_DIR/tests/cm_sdpbad
PRELOAD=$SOF_BUILD_DIR/lib/libsdp.so
PORT=19960
export LIBSDP_CONFIG_FILE=$SOF_TMP/libsdp.conf
# the victim offers zero copy (SinkAvail) to the liar although it is on
# this host, as it does to a peer on another host (wcopy, wbig)
export LIBSDP_ZCOPY=1
printf 'use sdp server * *:*\nuse sdp client * *:*\n' >"$LIBSDP_CONFIG_FILE"

# bad MODE EXPECT [WHO [HOLD_MS]]: one liar against one victim, which
# waits HOLD_MS before it reads; WHO=liar judges the liar's last line
bad() {
	local mode=$1 expect=$2 who=${3:-victim} hold=${4:-0} name="sdp/bad peer: $1" got out
	PORT=$((PORT + 1))
	[ "$who" = liar ] && export SOF_CM_SRV_STOP=1
	if ! SOF_LINEBUF=1 sof_cm_pair "$name" 40 "" "" \
		env LD_PRELOAD="$PRELOAD" "$PROG" victim 127.0.0.1 "$PORT" "$hold" -- \
		"$PROG" liar "$mode" 127.0.0.1 "$PORT"; then
		unset SOF_CM_SRV_STOP
		not_ok "$name" "$SOF_PAIR_WHY"
		sof_pair_dump
		return
	fi
	unset SOF_CM_SRV_STOP
	out=$SOF_SRV_OUT
	[ "$who" = liar ] && out=$SOF_CLI_OUT
	got=$(grep "^$who:" "$out" | tail -n 1)
	if grep -q -E 'Sanitizer|runtime error' "$SOF_SRV_OUT" "$SOF_CLI_OUT"; then
		not_ok "$name" "a sanitizer report"
		sof_pair_dump
	elif [[ "$got" =~ $expect ]]; then
		ok "$name (${got#"$who": })"
	else
		not_ok "$name" "$who said '${got:-nothing}', expected /$expect/"
		sof_pair_dump
	fi
}

bad len '^victim: error EPROTO after 0 bytes$'
bad seq '^victim: error EPROTO after 8 bytes$'
bad ack '^victim: error EPROTO after 0 bytes$'
bad bufs '^victim: error EPROTO after 0 bytes$'
bad credits '^victim: error EPROTO after 16 bytes$'
bad big '^victim: error E[A-Z]+ after 0 bytes$'
bad mid '^victim: error EPROTO after 0 bytes$'
# (the DisConn is an end of stream the victim may read before the data
# after it arrives: it reads after 0.5 s, when the breach has been seen)
bad disconn '^victim: error EPROTO after 8 bytes$' victim 500
bad abort '^victim: error ECONNRESET after 8 bytes$'
bad gone '^victim: error ECONNRESET after 8 bytes$'
bad hello '^liar: rejected' liar
bad zcopy '^victim: end of stream after 8 bytes$'
bad zbig '^victim: error EPROTO after 0 bytes$'
bad ztwice '^victim: error EPROTO after (0|8) bytes$'
bad rdcompl '^victim: error EPROTO after 0 bytes$'
bad wrcompl '^victim: error EPROTO after 0 bytes$'
bad wcopy '^victim: end of stream after 16 bytes$'
bad wbig '^victim: error EPROTO after 8 bytes$'
bad zcancel '^victim: end of stream after 8 bytes$'
bad cancel '^victim: error EPROTO after 0 bytes$'
sof_exit
