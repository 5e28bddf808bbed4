#!/bin/bash
# Issue 20 (acceptance: "a cut link is rerouted and a running RC stream
# goes on"), with our SM: ft128 (8 leaves of 16 HCAs, 4 spines) with three
# real hosts, H0_0 (a, under Leaf0), H1_0 (b) and H7_15 (c, Leaf7), managed
# by softofed-sm under `softofed run` on a's sofib0 (tests/ib_fabric.sh,
# SOF_IBF_SM=softofed):
#
#   ibtracert   a -> c: H0_0, Leaf0, a spine, Leaf7, H7_15
#   reroute     a byte-exact RC stream (progs/data_stream, RDMA WRITE and
#               SEND of 1 MiB x 150) from a to c; mid-stream the link Leaf0
#               uses towards c is cut (`softofed fabric link Leaf0 P down`):
#               the fabric sends trap 128, our SM represses it (the
#               fabric's trap_repressed), sweeps and writes only the LFT
#               blocks that changed (fewer than its first sweep's); ibtracert
#               then leaves Leaf0 by another port, and the stream ends with
#               every byte checked; the SM's "rerouted" line gives the time
#               from the trap to the tables written
#
# Needs root (ip netns). Usage: tests/hosts/sm_reroute.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/ib_fabric.sh
. "$(dirname "$0")/../ib_fabric.sh"
sof_init

T=sm_reroute
SOF_IBF_SM=softofed
sof_ibf_up ft128 H0_0,H1_0,H7_15 3 || sof_exit
la=$(sof_ibf_lid a)
lc=$(sof_ibf_lid c)

path=$(sof_ibf_tracert b "$la" "$lc" "$SOF_TMP/tr0")
# shellcheck disable=SC2086 # words
set -- $path
if [ "$#" = 4 ] && [[ $1 == '1>Leaf0[1]' && $2 == *'>Spine'* && $3 == *'>Leaf7['* && $4 == '16>H7_15[1]' ]]; then
	ok "$T: ibtracert LID $la -> $lc through our SM's tables: H0_0 $path"
else
	not_ok "$T: ibtracert" "[$path] $(tr '\n' ' ' <"$SOF_TMP/tr0" | cut -c1-400)"
	sof_exit
fi
leafport=${2%%>*}

first=$(sed -n 's/.*sweep 1 programming: .*, \([0-9]*\) LFT blocks/\1/p' "$IBF_SMLOG" | head -n 1)
traps0=$(grep -c 'trap 128 from LID' "$IBF_SMLOG")
x0=$(sof_ibf_xmit a)
sof_host_bg rr.srv c 60 "$SOFTOFED" run -- "$SOF_PROGS/data_stream" -d sofib0 -p 18701 -m 4096 -T 50 -t 17
sof_host_wait_listen c 18701 10 rr.srv >/dev/null 2>&1
sof_host_bg rr.cli a 60 "$SOFTOFED" run -- "$SOF_PROGS/data_stream" -d sofib0 -p 18701 -m 4096 -T 50 \
	-o write,send -s 1048576x150 -t 17 "$(sof_host_ip c)"
# cut once 16 MiB left a: the stream is surely running, whatever the speed
sof_ibf_flowing a "$x0" 4194304 20
mid=no
sof_alive rr.cli && sof_alive rr.srv && mid=yes
sof_host_run a "$SOFTOFED" fabric link Leaf0 "$leafport" down >"$SOF_TMP/cut" 2>&1 </dev/null
sof_wait rr.cli 55
rc=$?
sof_wait rr.srv 10
cli=$(sof_out rr.cli)
srv=$(sof_out rr.srv)
path2=$(sof_ibf_tracert b "$la" "$lc" "$SOF_TMP/tr1")
traps=$(($(grep -c 'trap 128 from LID' "$IBF_SMLOG") - traps0))
rerouted=$(grep -m1 'rerouted: trap to tables written' "$IBF_SMLOG")
ms=$(sed -n 's/.*rerouted: trap to tables written in \([0-9.]*\) ms.*/\1/p' <<<"$rerouted")
blocks=$(sed -n 's/.*ms, \([0-9]*\) LFT blocks.*/\1/p' <<<"$rerouted")
repressed=$(sof_host_run a "$SOFTOFED" fabric status 2>/dev/null </dev/null | sed -n 's/.* trap_repressed \([0-9]*\).*/\1/p')
if [ "$mid" = yes ] && [ "$rc" -eq 0 ] && grep -q '^ok' "$cli" && grep -q '^ok' "$srv" &&
	grep -q '^checked write messages=150 bytes=157286400' "$srv" &&
	grep -q '^checked send messages=150 bytes=157286400' "$srv" && [ "$traps" -ge 1 ] && [ "${repressed:-0}" -ge 1 ] &&
	[ -n "$ms" ] && [ -n "$blocks" ] && [ -n "$first" ] && [ "$blocks" -gt 0 ] && [ "$blocks" -lt "$first" ] &&
	[[ $path2 == '1>Leaf0[1] '* && $path2 != '1>Leaf0[1] '"$leafport>"* && $path2 == *' 16>H7_15[1] ' ]]; then
	ok "$T: Leaf0 port $leafport cut mid-stream, trap 128 to our SM ($traps, repressed: $repressed), rerouted in $ms ms from the trap writing $blocks LFT blocks (first sweep $first), new route H0_0 $path2, the stream a -> c went on: $(grep -h '^checked' "$srv" | tr '\n' ' ')every byte checked"
else
	not_ok "$T: reroute" "running at the cut: $mid, client rc $rc, traps $traps repressed ${repressed:-none}, [$rerouted] first $first, route after [$path2] (before [$path]); $(cat "$SOF_TMP/cut")"
	sof_dump "$cli" "$srv" "$IBF_SMLOG"
fi

sof_kill ibf.sm
sof_kill ibf.fabric
sof_exit
