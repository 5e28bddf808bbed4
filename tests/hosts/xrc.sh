#!/bin/bash
# XRC between two hosts (issue 17, item 3): xrc_check's server (the
# target side: two processes sharing one XRC domain through a file, a TGT
# QP, SRQs of both, ibv_open_qp) in host a, its client (one XRC INI QP) in
# host b, over RoCEv2 through the daemons' transport:
#   data        N messages to SRQs of two processes through one TGT QP,
#               every byte, byte_len and wc.qp_num checked; ibv_post_send
#               and ibv_wr_* with ibv_wr_set_xrc_srqn; each side grows its
#               XRC SRQ (ibv_modify_srq) half-way
#   write       an RDMA WRITE through the INI QP, every byte checked; READ
#               back (checked), FETCH_ADD and CMP_SWAP (results, final value)
#   wrong SRQ   an SRQ of another domain: the TGT QP's responder NAKs
#               invalid request, the INI QP's completion is
#               IBV_WC_REM_INV_REQ_ERR and it is in ERR, the next WQE flushed;
#               the TGT QP in ERR
#   wire        captured on host a's veth0: every packet decodes as
#               InfiniBand, XRC opcodes (0xa0...) for the requests, no
#               malformed packet, every ICRC right
#   xsrq        ibv_xsrq_pingpong, server in a, client in b
# Needs root (ip netns).
# Usage: tests/hosts/xrc.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_init

PORT=19950
if ! sof_hosts_up 2; then
	not_ok "hosts/xrc: set-up" "two hosts did not come up"
	exit 0
fi
A=$(sof_host_ip a)

cap=$SOF_TMP/xrc.pcap
capok=0
sof_capture_start xrc.cap "$cap" veth0 a && capok=1

for n in 64 200; do
	PORT=$((PORT + 1))
	name="hosts/xrc: data+write+wrong-srq n=$n"
	sof_host_bg "$name.srv" a 90 "$SOFTOFED" run -- "$SOF_PROGS/xrc_check" -p "$PORT" -n "$n" \
		-f "$SOF_TMP/xrcd.$n"
	SOF_LISTEN_HOST=a sof_wait_listen "$PORT" 10 2>/dev/null || sleep 0.5
	sof_host_bg "$name.cli" b 60 "$SOFTOFED" run -- "$SOF_PROGS/xrc_check" -p "$PORT" -n "$n" "$A"
	sof_wait "$name.cli" 70
	crc=$?
	sof_wait "$name.srv" 30
	src=$?
	so=$(sof_out "$name.srv")
	co=$(sof_out "$name.cli")
	if [ $crc -eq 0 ] && [ $src -eq 0 ] &&
		grep -q "^server received $((n / 2)) messages, every byte checked" "$so" &&
		grep -q "^child received $((n / 2)) messages, every byte checked" "$so" &&
		grep -q '^server RDMA WRITE .* every byte checked' "$so" &&
		grep -q '^client RDMA READ of [0-9]* bytes checked, FETCH_ADD and CMP_SWAP' "$co" &&
		grep -q '^server atomics through the XRC INI QP: the word is 9' "$so" &&
		grep -q '^client wrong SRQ number: IBV_WC_REM_INV_REQ_ERR, QP in ERR' "$co" &&
		grep -q '^server TGT QP in ERR after the invalid request' "$so" &&
		grep -q '^child moved the opened TGT QP to RTS' "$so" &&
		grep -q '^server resized its XRC SRQ to 1024 with messages to come' "$so" &&
		grep -q '^child resized its XRC SRQ to 1024 with messages to come' "$so" &&
		grep -q '^server done' "$so"; then
		ok "$name: $(grep '^client sent' "$co")"
	else
		not_ok "$name" "exit status server $src, client $crc"
		sof_dump "$so" "$co"
	fi
done

if [ $capok -eq 1 ]; then
	sof_capture_stop xrc.cap
	sof_capture_check "hosts/xrc: capture" "$cap"
	if echo " $SOF_CAP_OPCODES" | grep -q ' 0xa4' && echo " $SOF_CAP_OPCODES" | grep -q ' 0xb1'; then
		ok "hosts/xrc: capture: XRC SEND_ONLY (0xa4) requests and XRC ACKs (0xb1) on the wire"
	else
		not_ok "hosts/xrc: capture" "no XRC opcodes among $SOF_CAP_OPCODES"
	fi
else
	not_ok "hosts/xrc: capture" "tshark did not start"
fi

# ibv_xsrq_pingpong across the hosts: exit status and "success"; each
# side's GID index is the one of its veth0's IPv4 address
ga=$(sof_host_gid a "$A")
gb=$(sof_host_gid b "$(sof_host_ip b)")
for args in "" "-n 50 -s 65536"; do
	PORT=$((PORT + 1))
	name="hosts/xrc: ibv_xsrq_pingpong $args"
	# shellcheck disable=SC2086 # args are words
	sof_host_bg "$name.srv" a 60 "$SOFTOFED" run -- ibv_xsrq_pingpong -p "$PORT" -g "$ga" $args
	SOF_LISTEN_HOST=a sof_wait_listen "$PORT" 10 2>/dev/null || sleep 0.5
	# shellcheck disable=SC2086
	sof_host_bg "$name.cli" b 50 "$SOFTOFED" run -- ibv_xsrq_pingpong -p "$PORT" -g "$gb" $args "$A"
	sof_wait "$name.cli" 55
	crc=$?
	sof_wait "$name.srv" 20
	src=$?
	if [ $crc -eq 0 ] && [ $src -eq 0 ] && grep -q '^success' "$(sof_out "$name.srv")" &&
		grep -q '^success' "$(sof_out "$name.cli")"; then
		ok "$name"
	else
		not_ok "$name" "exit status server $src, client $crc"
		sof_dump "$(sof_out "$name.srv")" "$(sof_out "$name.cli")"
	fi
done
