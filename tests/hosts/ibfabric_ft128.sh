#!/bin/bash
# The 128-host fat tree (tests/topologies/ft128.net: 8 leaves of 16 HCAs,
# 4 spines, 5 links from each leaf to each spine) with three real hosts,
# H0_0 (a, under Leaf0), H1_0 (b, Leaf1) and H7_15 (c, Leaf7), the other
# 125 HCAs simulated by the fabric (issue 19). Debian's OpenSM runs in a
# through our libibumad on a's sofib0 (not libumad2sim), and:
#
#   ibnetdiscover  from b: the same nodes, GUIDs and links as the file
#   ibtracert      a -> c: H0_0, Leaf0, a spine, Leaf7, H7_15
#   rc_pingpong    ibv_rc_pingpong a <-> c by LID across the tree, --chk
#   reroute        a byte-exact RC stream (progs/data_stream, RDMA WRITE and
#                  SEND of 1 MiB) from a to c; mid-stream the link Leaf0
#                  uses towards c is cut (`softofed fabric link Leaf0 P
#                  down`): the fabric sends trap 128, OpenSM logs it,
#                  represses it (the fabric's trap_repressed) and sweeps, ibtracert then leaves Leaf0 by another port, and
#                  the stream ends with every byte checked
#   no_path        a stream from a to b, whose only link (Leaf1 port 1) is
#                  cut mid-stream: the sender's completion is
#                  IBV_WC_RETRY_EXC_ERR, as on hardware
#
# Needs root (ip netns). Usage: tests/hosts/ibfabric_ft128.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/ib_fabric.sh
. "$(dirname "$0")/../ib_fabric.sh"
sof_init

T=ft128
FILE=$SOF_ROOT/tests/topologies/ft128.net
sof_ibf_up ft128 H0_0,H1_0,H7_15 3 || sof_exit
la=$(sof_ibf_lid a)
lc=$(sof_ibf_lid c)

out=$SOF_TMP/ibnd
sof_ibf_diag b "$out" ibnetdiscover -C sofib0
FT=$SOF_ROOT/tests/fabric_topo.py
if python3 "$FT" expected "$FILE" >"$SOF_TMP/want" && python3 "$FT" ibnetdiscover "$out" >"$SOF_TMP/got" &&
	cmp -s "$SOF_TMP/want" "$SOF_TMP/got"; then
	ok "ibfabric/$T: ibnetdiscover from b (through our libibumad): $(grep -c '^node' "$SOF_TMP/got") nodes, $(grep -c '^link' "$SOF_TMP/got") links, GUIDs as the file"
else
	not_ok "ibfabric/$T: ibnetdiscover" "$(diff "$SOF_TMP/want" "$SOF_TMP/got" | head -n 6 | tr '\n' ' ')"
fi

path=$(sof_ibf_tracert b "$la" "$lc" "$SOF_TMP/tr0")
# shellcheck disable=SC2086 # words
set -- $path
if [ "$#" = 4 ] && [[ $1 == '1>Leaf0[1]' && $2 == *'>Spine'* && $3 == *'>Leaf7['* && $4 == '16>H7_15[1]' ]]; then
	ok "ibfabric/$T: ibtracert LID $la -> $lc: H0_0 $path"
else
	not_ok "ibfabric/$T: ibtracert" "[$path] $(tr '\n' ' ' <"$SOF_TMP/tr0" | cut -c1-400)"
fi
leafport=${2%%>*}

ppsrv=$(sof_out ibf.pp.srv)
ppcli=$SOF_TMP/pp.cli
sof_host_bg ibf.pp.srv c 60 "$SOFTOFED" run -- ibv_rc_pingpong -d sofib0 -p 18515 -n 200 -s 4096 --chk
sof_host_wait_listen c 18515 10 ibf.pp.srv >/dev/null 2>&1
sof_host_run a "$SOFTOFED" run -- timeout 40 ibv_rc_pingpong -d sofib0 -p 18515 -n 200 -s 4096 --chk \
	"$(sof_host_ip c)" >"$ppcli" 2>&1 </dev/null
rc=$?
sof_wait ibf.pp.srv 20
if [ "$rc" -eq 0 ] && grep -q '1638400 bytes in ' "$ppcli" && grep -q '1638400 bytes in ' "$ppsrv" &&
	grep -q "remote address: LID $(printf 0x%04x "$lc")" "$ppcli" && ! grep -q -i 'failed\|couldn' "$ppcli" "$ppsrv"; then
	ok "ibfabric/$T: ibv_rc_pingpong a <-> c by LID across the tree (200 x 4 KiB, --chk, LIDs $la <-> $lc)"
else
	not_ok "ibfabric/$T: rc_pingpong" "client rc $rc"
	sof_dump "$ppcli" "$ppsrv"
fi

# stream SRVHOST NAME SIZES ARGS...: data_stream from a to SRVHOST in the
# background (server first); the client's output in $SOF_TMP/NAME.cli
stream() {
	local srv=$1 name=$2 sizes=$3
	shift 3
	sof_host_bg "$name.srv" "$srv" 60 "$SOFTOFED" run -- "$SOF_PROGS/data_stream" -d sofib0 -p 18701 \
		-m 4096 -T 50 "$@"
	sof_host_wait_listen "$srv" 18701 10 "$name.srv" >/dev/null 2>&1
	sof_host_bg "$name.cli" a 60 "$SOFTOFED" run -- "$SOF_PROGS/data_stream" -d sofib0 -p 18701 \
		-m 4096 -T 50 -o write,send -s "$sizes" "$@" "$(sof_host_ip "$srv")"
}
# reroute: cut the link Leaf0 takes to c while the stream runs
traps0=$(grep -c 'Received Generic Notice type:1 num:128' "$IBF_SMLOG")
x0=$(sof_ibf_xmit a)
stream c ibf.rr 1048576x150 -t 17
# cut once 16 MiB left a: the stream is surely running, whatever the speed
sof_ibf_flowing a "$x0" 4194304 20
mid=no
sof_alive ibf.rr.cli && sof_alive ibf.rr.srv && mid=yes
sof_host_run a "$SOFTOFED" fabric link Leaf0 "$leafport" down >"$SOF_TMP/cut" 2>&1 </dev/null
sof_wait ibf.rr.cli 55
rc=$?
sof_wait ibf.rr.srv 10
cli=$(sof_out ibf.rr.cli)
srv=$(sof_out ibf.rr.srv)
path2=$(sof_ibf_tracert b "$la" "$lc" "$SOF_TMP/tr1")
traps=$(($(grep -c 'Received Generic Notice type:1 num:128' "$IBF_SMLOG") - traps0))
# OpenSM answered the switches' traps with TrapRepress (IBA 13.4.8.3)
repressed=$(sof_host_run a "$SOFTOFED" fabric status 2>/dev/null </dev/null | sed -n 's/.* trap_repressed \([0-9]*\).*/\1/p')
if [ "$mid" = yes ] && [ "$rc" -eq 0 ] && grep -q '^ok' "$cli" && grep -q '^ok' "$srv" &&
	grep -q '^checked write messages=150 bytes=157286400' "$srv" &&
	grep -q '^checked send messages=150 bytes=157286400' "$srv" && [ "$traps" -ge 1 ] && [ "${repressed:-0}" -ge 1 ] &&
	[[ $path2 == '1>Leaf0[1] '* && $path2 != '1>Leaf0[1] '"$leafport>"* && $path2 == *' 16>H7_15[1] ' ]]; then
	ok "ibfabric/$T: reroute: Leaf0 port $leafport cut mid-stream, trap 128 to OpenSM ($traps, repressed by it: $repressed), new route H0_0 $path2, the stream a -> c went on: $(grep -h '^checked' "$srv" | tr '\n' ' ')every byte checked"
else
	not_ok "ibfabric/$T: reroute" "running at the cut: $mid, client rc $rc, traps $traps repressed ${repressed:-none}, route after [$path2] (before [$path]); $(cat "$SOF_TMP/cut")"
	sof_dump "$cli" "$srv"
fi

# no second path: b's only link
x0=$(sof_ibf_xmit a)
stream b ibf.np 1048576x400
sof_ibf_flowing a "$x0" 4194304 20
mid=no
sof_alive ibf.np.cli && mid=yes
sof_host_run a "$SOFTOFED" fabric link Leaf1 1 down >"$SOF_TMP/cut2" 2>&1 </dev/null
sof_wait ibf.np.cli 30
rc=$?
sof_kill ibf.np.srv
cli=$(sof_out ibf.np.cli)
if [ "$mid" = yes ] && [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && grep -q 'IBV_WC_RETRY_EXC_ERR' "$cli" &&
	! grep -q '^checked write messages=400' "$(sof_out ibf.np.srv)"; then
	ok "ibfabric/$T: no second path: Leaf1 port 1 (b's only link) cut mid-stream, the sender a got IBV_WC_RETRY_EXC_ERR ($(grep -m1 'IBV_WC_RETRY_EXC_ERR' "$cli" | cut -c1-120))"
else
	not_ok "ibfabric/$T: no second path" "running at the cut: $mid, client rc $rc; $(cat "$SOF_TMP/cut2")"
	sof_dump "$cli"
fi

sof_kill ibf.sm
sof_kill ibf.fabric
sof_exit
