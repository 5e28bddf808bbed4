#!/bin/bash
# Drop-in: rdma-core consumers that no issue names, on one host, unmodified
# through `softofed run` (helpers in tests/dropin.sh):
#   qperf (Debian's): rc_lat, rc_bw, rc_rdma_write_lat, rc_rdma_read_bw,
#     rc_compare_swap_mr, and ver_rc_compare_swap / ver_rc_fetch_add, which
#     check the result of every atomic; over the RDMA CM (-cm1), 1 s each;
#     qperf's uc_* and ud_* tests have no CM mode and no GID, so on RoCE
#     they fail (EINVAL) on rxe as here and are not run;
#   python3-pyverbs: tests/pyverbs_check.py local (device, port and GID
#     queries by every pyverbs call, RC SEND, WRITE, WRITE with immediate,
#     READ between two QPs of one process, every byte checked);
#   rcopy (rsockets): a 20 MiB random file, compared byte for byte;
#   udpong (datagram rsockets): -T b and -T e (the server echoes);
#   fio's rdma engine: 64 MiB by RDMA WRITE and by RDMA READ; 32 MiB by
#     SEND (verb=send) into a receiver of iodepth 512, which has a receive
#     posted for every SEND before the first. fio's connection has
#     rnr_retry 0 (its rdma_conn_param is zeroed) and its receiver reposts a
#     receive only after it has reaped the completion, so a sender that
#     gets ahead of the reposting by the receiver's iodepth meets an empty
#     receive queue, and the RNR NAK ends it in RNR_RETRY_EXC_ERR (IBA
#     9.7.5.2.8), on rxe and hardware as here. There the receiver usually
#     keeps ahead (its completion comes before the sender's ACK, and the
#     sender must be woken too); on one host it falls behind at once (the
#     sender's library executes each SEND and completes it in
#     ibv_post_send: receiver iodepth 1, 8, 16, 32 against the sender's 1
#     all failed), so only receives posted up front (fio's client gives
#     the receiver 500 ms for them) keep scheduling out of it; fio's engines/rdma.c itself says to make
#     the receiver's iodepth the deeper one. (After the error fio's client
#     waits for ever for a completion: its getevents loops on no events.)
#   ibstat, ibstatus, ibv_devinfo -v -d sof0 -i 1: each other's values (node
#     GUID, port GUID = GID[0]'s interface ID, state, rate, default GID);
#   ibv_srq_pingpong -q 4; ibv_rc_pingpong -o (ODP), -O -P (implicit ODP,
#     prefetch), -t (completion timestamps), -j (device memory), -N (the
#     ibv_wr_* API);
#   completion events (-e) at 1, 4096 and 65536 bytes: ibv_rc_pingpong -e
#     and -t -e (which takes an event with an empty CQ behind it for an
#     error: its own send completions, made at once on one host, fire the
#     arm with a CQE that its poll batch then takes, and the library drops
#     that stale event of a CQ read through ibv_start_poll, verbs/cq.c),
#     ibv_uc_pingpong -e, ibv_srq_pingpong -e.
# Runs in a private network namespace with its own daemon. A missing
# program is a failure, never a skip.
#
# Usage: tests/consumers/dropin.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/dropin.sh
. "$(dirname "$0")/../dropin.sh"
sof_ns_enter "$@"
sof_init

QPORT=19765
if sof_dropin_qperf_up "" "$QPORT"; then
	for t in rc_lat rc_bw rc_rdma_write_lat rc_rdma_read_bw rc_compare_swap_mr \
		ver_rc_compare_swap ver_rc_fetch_add; do
		sof_dropin_qperf "dropin/qperf $t" "" 127.0.0.1 "$QPORT" "$t"
	done
	sof_kill "qperf."
fi

sof_dropin_pyverbs "dropin/pyverbs local (two RC QPs of one process)" "" ""
sof_dropin_rcopy "dropin/rcopy 20 MiB" "" "" 127.0.0.1 20
sof_dropin_udpong "dropin/udpong -T b" "" "" 127.0.0.1 b
sof_dropin_udpong "dropin/udpong -T e" "" "" 127.0.0.1 e
sof_dropin_fio "dropin/fio rdma write" "" "" 127.0.0.1 write
sof_dropin_fio "dropin/fio rdma read" "" "" 127.0.0.1 read
sof_dropin_fio "dropin/fio rdma send" "" "" 127.0.0.1 send

# --- ibstat, ibstatus and ibv_devinfo agree -----------------------------------
# tool NAME CMD...: CMD's output in sof_out NAME; 0 when it exited with 0
tool() {
	local name=$1 rc
	shift
	if ! command -v "$1" >/dev/null 2>&1; then
		not_ok "$name" "$1 is not installed (tests/install-deps.sh installs it)"
		return 1
	fi
	timeout 30 "$SOFTOFED" run -- "$@" >"$(sof_out "$name")" 2>&1 </dev/null
	rc=$?
	[ $rc -eq 0 ] && return 0
	not_ok "$name" "exit status $rc"
	sof_dump "$(sof_out "$name")"
	return 1
}
# field FILE REGEX: the first capture of REGEX (sed -E) in FILE
field() {
	sed -n -E "s/$2/\1/p" "$1" | head -n 1
}
if tool ibstat ibstat sof0 1 && tool ibstatus ibstatus sof0:1 && tool ibstat-ca ibstat sof0 &&
	tool devinfo ibv_devinfo -v -d sof0 -i 1; then
	st=$(sof_out ibstat) ss=$(sof_out ibstatus) ca=$(sof_out ibstat-ca) dv=$(sof_out devinfo)
	gid0=$(field "$dv" '^[[:space:]]+GID\[ *0\]:[[:space:]]+([0-9a-f:.]+).*')
	# ibv_devinfo prints ::ffff:a.b.c.d GIDs as IPv4-mapped addresses
	gid0x=$(python3 -c 'import ipaddress,sys; print(ipaddress.IPv6Address(sys.argv[1]).exploded)' "$gid0" 2>/dev/null)
	sgid=$(field "$ss" '^[[:space:]]+default gid:[[:space:]]+([0-9a-f:]+)$')
	pguid=$(field "$st" '^Port GUID: 0x([0-9a-f]+)$')
	nguid=$(field "$ca" '^[[:space:]]+Node GUID: 0x([0-9a-f]+)$')
	dguid=$(field "$dv" '^[[:space:]]+node_guid:[[:space:]]+([0-9a-f:]+)$')
	why=""
	grep -q '^State: Active$' "$st" || why="ibstat: not State: Active"
	grep -q 'state:[[:space:]]*4: ACTIVE' "$ss" || why="$why; ibstatus: not 4: ACTIVE"
	grep -q '^Link layer: Ethernet$' "$st" || why="$why; ibstat: not Ethernet"
	grep -q 'link_layer:[[:space:]]*Ethernet' "$ss" || why="$why; ibstatus: not Ethernet"
	grep -q 'state:[[:space:]]*PORT_ACTIVE' "$dv" || why="$why; ibv_devinfo: not PORT_ACTIVE"
	[ "$(grep -c -E '^[[:space:]]+port:[[:space:]]+[0-9]+' "$dv")" = 1 ] || why="$why; ibv_devinfo -i 1: not exactly port 1"
	[ -n "$gid0x" ] && [ "$sgid" = "$gid0x" ] || why="$why; ibstatus default gid '$sgid' is not GID[0] '$gid0x'"
	[ -n "$pguid" ] && [ "$(echo "${gid0x//:/}" | cut -c17-32)" = "$pguid" ] ||
		why="$why; ibstat Port GUID '$pguid' is not GID[0]'s interface ID"
	[ -n "$nguid" ] && [ "$nguid" = "${dguid//:/}" ] || why="$why; ibstat Node GUID '$nguid' is not ibv_devinfo node_guid '$dguid'"
	prate=$(field "$st" '^Rate: ([0-9]+)$')
	[ -n "$prate" ] && grep -q "rate:[[:space:]]*$prate Gb/sec" "$ss" || why="$why; ibstat Rate $prate is not ibstatus' rate"
	if [ -z "$why" ]; then
		ok "dropin/ibstat, ibstatus, ibv_devinfo -v -d sof0 -i 1 agree: Active, Ethernet, rate $prate, GID[0] $gid0x, node GUID $nguid"
	else
		not_ok "dropin/ibstat, ibstatus, ibv_devinfo -v -d sof0 -i 1 agree" "${why#; }"
		sof_dump "$st"
		sof_dump "$ss"
	fi
fi

PORT=19790
name="dropin/ibv_srq_pingpong -q 4"
sof_pair "$name" "$PORT" 60 ibv_srq_pingpong -g 0 -q 4 --chk -s 4096 -n 100
sof_pingpong_verdict "$name" $?
# ibv_rc_pingpong's other paths: ODP, implicit ODP with prefetch, completion
# timestamps (extended CQ), device memory, the ibv_wr_* send API
for opts in "-o" "-O -P" "-t" "-j" "-N"; do
	PORT=$((PORT + 1))
	name="dropin/ibv_rc_pingpong $opts"
	# shellcheck disable=SC2086 # words
	sof_pair "$name" "$PORT" 60 ibv_rc_pingpong -g 0 --chk -s 4096 -n 100 $opts
	sof_pingpong_verdict "$name" $?
done
# completion events: each side sleeps on its channel between messages
for size in 1 4096 65536; do
	for run in "ibv_rc_pingpong -e" "ibv_rc_pingpong -t -e" "ibv_uc_pingpong -e" \
		"ibv_srq_pingpong -e"; do
		PORT=$((PORT + 1))
		name="dropin/$run -s $size"
		# shellcheck disable=SC2086 # words
		sof_pair "$name" "$PORT" 60 $run -g 0 --chk -s "$size" -n 1000
		sof_pingpong_verdict "$name" $?
	done
done

sof_exit
