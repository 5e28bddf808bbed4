#!/bin/bash
# XRC on one host (issue 17, item 3): xrc_check's server (the target side,
# two processes sharing one XRC domain through a file) and client (one
# XRC INI QP), in a private network namespace with its own daemon.
#   data        N messages through one INI QP to one TGT QP, alternately
#               to an SRQ of the server and one of its child (same domain
#               through the same file, another process, ibv_open_qp of the
#               TGT QP): every byte, byte_len, wr_id and wc.qp_num (the
#               TGT QP) checked on each side; ibv_post_send and ibv_wr_*;
#               each side grows its XRC SRQ (ibv_modify_srq) half-way
#   write       an RDMA WRITE through the INI QP, every byte checked; READ
#               back (checked), FETCH_ADD and CMP_SWAP (results, final value)
#   wrong SRQ   a SEND naming an SRQ of another domain: the INI QP's
#               completion IBV_WC_REM_INV_REQ_ERR, the QP in ERR, the next
#               WQE flushed, the TGT QP in ERR
#   order       ibv_destroy_cq of an XRC SRQ's CQ and ibv_close_xrcd in use
#               are EBUSY; O_EXCL on an existing domain and no O_CREAT on a
#               missing one are EINVAL
#   SIGKILL     a process holding a domain, an XRC SRQ and a TGT QP is
#               killed: the daemon's srqs/qps counts return to where they
#               were and the file names no domain any more; when another
#               process opened the TGT QP (ibv_open_qp), the creator's
#               SIGKILL leaves the TGT QP and the domain to it (qps 1,
#               srqs 0, domain present) and its own SIGKILL ends them
#
#   xsrq        ibv_xsrq_pingpong (ibverbs-utils): 1 client; 3 clients with
#               events and 64 KiB messages (exit status and "success")
#
# Usage: tests/integration/xrc.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_ns_enter "$@"
sof_init

PORT=18900
FILE=$SOF_TMP/xrcd.file

for n in 64 200; do
	PORT=$((PORT + 1))
	name="xrc/data+write+wrong-srq+order n=$n"
	sof_bg "$name.srv" 90 "$SOFTOFED" run -- "$SOF_PROGS/xrc_check" -p "$PORT" -n "$n" -f "$FILE.$n"
	sof_wait_listen "$PORT" 10 2>/dev/null || sleep 0.5
	sof_bg "$name.cli" 60 "$SOFTOFED" run -- "$SOF_PROGS/xrc_check" -p "$PORT" -n "$n" 127.0.0.1
	sof_wait "$name.cli" 70
	crc=$?
	sof_wait "$name.srv" 30
	src=$?
	so=$(sof_out "$name.srv")
	co=$(sof_out "$name.cli")
	if [ $crc -eq 0 ] && [ $src -eq 0 ] &&
		grep -q "^server received $((n / 2)) messages, every byte checked" "$so" &&
		grep -q "^child received $((n / 2)) messages, every byte checked" "$so" &&
		grep -q '^child opened TGT QP' "$so" &&
		grep -q '^server RDMA WRITE .* every byte checked' "$so" &&
		grep -q '^client RDMA READ of [0-9]* bytes checked, FETCH_ADD and CMP_SWAP' "$co" &&
		grep -q '^server atomics through the XRC INI QP: the word is 9' "$so" &&
		grep -q '^client wrong SRQ number: IBV_WC_REM_INV_REQ_ERR, QP in ERR' "$co" &&
		grep -q '^server TGT QP in ERR after the invalid request' "$so" &&
		grep -q '^child moved the opened TGT QP to RTS' "$so" &&
		grep -q '^server resized its XRC SRQ to 1024 with messages to come' "$so" &&
		grep -q '^child resized its XRC SRQ to 1024 with messages to come' "$so" &&
		grep -q '^server order rules' "$so" && grep -q '^child done' "$so"; then
		ok "$name: $(grep '^client sent' "$co")"
	else
		not_ok "$name" "exit status server $src, client $crc"
		sof_dump "$so" "$co"
	fi
done

# ---- SIGKILL of the owner
name="xrc/SIGKILL of the owner"
before=$(sof_resources | tr '\n' ' ')
sof_bg xrc.hold 60 "$SOFTOFED" run -- "$SOF_PROGS/xrc_check" -H "$FILE.kill" -T 50
out=$(sof_out xrc.hold)
for _ in $(seq 100); do
	grep -q '^held qpn' "$out" 2>/dev/null && break
	sof_alive xrc.hold || break
	sleep 0.05
done
held=$(sof_resources | tr '\n' ' ')
present=$(timeout 20 "$SOFTOFED" run -- "$SOF_PROGS/xrc_check" -Q "$FILE.kill" 2>&1)
pid=$(sof_child_pid xrc.hold)
[ -n "$pid" ] && kill -KILL "$pid"
sof_wait xrc.hold 10
after=""
for _ in $(seq 50); do
	after=$(sof_resources | tr '\n' ' ')
	[ "$after" = "$before" ] && break
	sleep 0.1
done
absent=$(timeout 20 "$SOFTOFED" run -- "$SOF_PROGS/xrc_check" -Q "$FILE.kill" 2>&1)
if ! grep -q '^held qpn' "$out"; then
	not_ok "$name" "the holder did not come up"
	sof_dump "$out"
elif [ "$present" != "domain present" ]; then
	not_ok "$name" "while held, the file's domain: $present"
elif [ "$held" = "$before" ]; then
	not_ok "$name" "the daemon did not count the holder's objects: $held"
elif [ "$after" != "$before" ]; then
	not_ok "$name" "after SIGKILL: $after; before: $before"
elif [ "$absent" != "domain absent" ]; then
	not_ok "$name" "after SIGKILL the file's domain: $absent"
else
	ok "$name: objects released ($after), the domain gone"
fi

# ---- SIGKILL of the creator while another process holds the TGT QP
name="xrc/SIGKILL of the creator of an opened TGT QP"
before=$(sof_resources | tr '\n' ' ')
sof_bg xrc.hold2 60 "$SOFTOFED" run -- "$SOF_PROGS/xrc_check" -H "$FILE.open" -T 50
out=$(sof_out xrc.hold2)
for _ in $(seq 100); do
	grep -q '^held qpn' "$out" 2>/dev/null && break
	sof_alive xrc.hold2 || break
	sleep 0.05
done
qpn=$(sed -n 's/^held qpn \([0-9]*\)$/\1/p' "$out")
sof_bg xrc.open2 60 "$SOFTOFED" run -- "$SOF_PROGS/xrc_check" -O "$FILE.open" -q "${qpn:-0}" -T 50
out2=$(sof_out xrc.open2)
for _ in $(seq 100); do
	grep -q '^opened' "$out2" 2>/dev/null && break
	sof_alive xrc.open2 || break
	sleep 0.05
done
pid=$(sof_child_pid xrc.hold2)
[ -n "$pid" ] && kill -KILL "$pid"
sof_wait xrc.hold2 10
mid=""
for _ in $(seq 50); do
	mid=$(sof_resources | awk '$1 == "qps" || $1 == "srqs" { printf "%s %s ", $1, $2 }')
	[ "$mid" = "srqs 0 qps 1 " ] && break
	sleep 0.1
done
present=$(timeout 20 "$SOFTOFED" run -- "$SOF_PROGS/xrc_check" -Q "$FILE.open" 2>&1)
pid=$(sof_child_pid xrc.open2)
[ -n "$pid" ] && kill -KILL "$pid"
sof_wait xrc.open2 10
after=""
for _ in $(seq 50); do
	after=$(sof_resources | tr '\n' ' ')
	[ "$after" = "$before" ] && break
	sleep 0.1
done
absent=$(timeout 20 "$SOFTOFED" run -- "$SOF_PROGS/xrc_check" -Q "$FILE.open" 2>&1)
if [ -z "$qpn" ] || ! grep -q '^opened' "$out2"; then
	not_ok "$name" "the holder or the opener did not come up"
	sof_dump "$out" "$out2"
elif [ "$mid" != "srqs 0 qps 1 " ] || [ "$present" != "domain present" ]; then
	not_ok "$name" "after the creator's SIGKILL: ${mid:-no counts}, the file's domain: $present"
elif [ "$after" != "$before" ] || [ "$absent" != "domain absent" ]; then
	not_ok "$name" "after the opener's SIGKILL: $after (before: $before), the domain: $absent"
else
	ok "$name: the opener kept the TGT QP and the domain ($mid), its SIGKILL released them"
fi

# ---- ibv_xsrq_pingpong (ibverbs-utils): one client, then three with
# completion events and 64 KiB messages. It compares no data: its ok
# judges exit status and output ("success" from every process).
for spec in "1|" "3|-n 100 -s 65536 -e"; do
	nc=${spec%%|*}
	args=${spec#*|}
	PORT=$((PORT + 1))
	name="xrc/ibv_xsrq_pingpong -c $nc $args"
	# shellcheck disable=SC2086 # args are words
	sof_bg "$name.srv" 60 "$SOFTOFED" run -- ibv_xsrq_pingpong -p "$PORT" -g 0 -c "$nc" $args
	sof_wait_listen "$PORT" 10 2>/dev/null || sleep 0.5
	for i in $(seq "$nc"); do
		# shellcheck disable=SC2086
		sof_bg "$name.cli$i" 50 "$SOFTOFED" run -- ibv_xsrq_pingpong -p "$PORT" -g 0 $args 127.0.0.1
	done
	bad=""
	for i in $(seq "$nc"); do
		sof_wait "$name.cli$i" 55 || bad="$bad client$i exit $?"
		grep -q '^success' "$(sof_out "$name.cli$i")" || bad="$bad client$i no success"
	done
	sof_wait "$name.srv" 20 || bad="$bad server exit $?"
	grep -q '^success' "$(sof_out "$name.srv")" || bad="$bad server no success"
	if [ -z "$bad" ]; then
		ok "$name"
	else
		not_ok "$name" "$bad"
		sof_dump "$(sof_out "$name.srv")" "$(sof_out "$name.cli1")"
	fi
done
