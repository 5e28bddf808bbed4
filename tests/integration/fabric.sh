#!/bin/bash
# The software InfiniBand fabric (issue 19, fabric/) seen from a host on
# one of its links (tests/progs/fabric_walk plays that host, speaking the
# link protocol of fabric/README.md):
#   - `softofed fabric up` of pair, line3 and ft128 (tests/topologies);
#     a directed-route walk from the first HCA finds exactly the nodes,
#     GUIDs (ibsim's, the file has none) and links of the file, as an
#     independent reading of the file here (python) says;
#   - LIDs, LFTs and Active ports set by hand over SMPs make LID-routed
#     NodeInfo answer from every node of line3 and ft128 with its GUID,
#     PerfMgt PortCounters (QP1, by LID) answer from the farthest HCA and
#     count its packets, an unrouted LID gets no answer;
#   - malformed packets (short, LVer, PktLen, VCRC, DR hop pointer, hop
#     count, a path to no port, a short MAD) are dropped and counted, and
#     the switch port counts them as PortRcvErrors; a good SMP still works;
#   - a switch port enforcing partitions inbound drops a GMP whose P_Key
#     its table lacks (PortRcvConstraintErrors) and passes one it holds;
#   - a forwarding loop between two switches' LFTs is cut (the fabric's
#     hop limit) and counted, and the fabric still answers;
#   - a link cut with `softofed fabric link` sends trap 128 from S2 to the
#     SM's LID (among older unrepressed traps of the route's port changes,
#     which may come first or be at their last resend), again each second
#     until the SM answers with TrapRepress (resends that crossed it taken)
#     and hides what is behind it from a new walk; restored, all is back;
#   - two real hosts on line3, H3 answering SMPs and PerfMgt with mad/'s
#     SMA and PMA: the walk finds it as the file says, the route makes its
#     port Active, 10 datagrams of 1 KiB reach it byte for byte;
#   - a name the topology does not hold as a real HCA gets no ASSIGN and is
#     counted; a bad topology file, a second fabric and `down` behave.
# Runs in a private network namespace.
#
# Usage: tests/integration/fabric.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_ns_enter "$@"
sof_init

WALK=$SOF_BUILD_DIR/tests/fabric_walk
# the topologies of issue 19: $SOF_TOPOLOGIES, else the repository's copy
# (tests/topologies: the ibsim-format files of shared/topologies)
TOPO=${SOF_TOPOLOGIES:-$SOF_ROOT/tests/topologies}
ADDR=127.0.0.1:17471
OUT=$SOF_TMP/out
ST=$SOF_TMP/st

fabric() {
	timeout 30 "$SOFTOFED" fabric "$@" </dev/null
}

# expected FILE: the canonical node/link lines of a topology file, GUIDs
# as ibsim assigns them (HCAs from 0x100000, node then ports; switches from
# 0x200000), node descriptions the names
expected() {
	python3 - "$1" <<'EOF'
import re, sys
nodes, links, cur = [], [], None
for line in open(sys.argv[1]):
    line = line.split('#')[0].strip()
    m = re.match(r'^(Switch|Hca|Ca)\s+(\d+)\s+"([^"]+)"', line)
    if m:
        cur = [m.group(1), int(m.group(2)), m.group(3)]
        nodes.append(cur)
        continue
    m = re.match(r'^\[(\d+)\]\s*"([^"]+)"\[(\d+)\]', line)
    if m:
        links.append((cur[2], int(m.group(1)), m.group(2), int(m.group(3))))
ca, sw, guid, out = 0x100000, 0x200000, {}, []
for t, n, name in nodes:
    if t == 'Switch':
        guid[name] = sw; sw += 1
    else:
        guid[name] = ca; ca += n + 1
    out.append('node 0x%016x %s %d %s' % (guid[name], 'Switch' if t == 'Switch' else 'Hca', n, name))
seen = set()
for a, pa, b, pb in links:
    x, y = (guid[a], pa), (guid[b], pb)
    if x > y:
        x, y = y, x
    seen.add('link 0x%016x %d 0x%016x %d' % (x[0], x[1], y[0], y[1]))
out += sorted(seen)
print('\n'.join(sorted(out)))
EOF
}

first_hca() {
	sed -n 's/^\(Hca\|Ca\)[[:space:]]*[0-9]*[[:space:]]*"\([^"]*\)".*/\2/p' "$1" | head -n 1
}

# walk_check NAME FILE: fabric up, walk, compare, fabric down
walk_check() {
	local name=$1 file=$2 real
	real=$(first_hca "$file")
	if ! fabric up "$file" --listen "$ADDR" --real "$real" >"$OUT" 2>&1; then
		not_ok "fabric/walk $name" "softofed fabric up failed"
		sof_dump "$OUT"
		return 1
	fi
	expected "$file" >"$SOF_TMP/expected"
	if ! timeout 60 "$WALK" "$ADDR" "$real" walk >"$SOF_TMP/walked" 2>"$OUT"; then
		not_ok "fabric/walk $name" "fabric_walk failed"
		sof_dump "$OUT"
	elif diff -u "$SOF_TMP/expected" "$SOF_TMP/walked" >"$SOF_TMP/diff"; then
		ok "fabric/walk $name: $(grep -c '^node' "$SOF_TMP/walked") nodes and $(grep -c '^link' "$SOF_TMP/walked") links with their GUIDs as the file has them ($(tail -n 1 "$OUT" | sed 's/^fabric_walk: //'))"
	else
		not_ok "fabric/walk $name" "the walk differs from the file"
		sof_dump "$SOF_TMP/diff"
	fi
	if [ "$name" != pair ]; then
		if timeout 120 "$WALK" "$ADDR" "$real" route >"$SOF_TMP/routed" 2>"$OUT" &&
			grep -q '^lid-routed NodeInfo:' "$SOF_TMP/routed" &&
			grep -q '^pma ' "$SOF_TMP/routed" &&
			grep -q '^unrouted LID' "$SOF_TMP/routed"; then
			ok "fabric/route $name: $(paste -sd';' "$SOF_TMP/routed")"
		else
			not_ok "fabric/route $name" "LID routing by programmed LFTs failed"
			sof_dump "$OUT" "$SOF_TMP/routed"
		fi
	fi
	fabric down >"$OUT" 2>&1 || not_ok "fabric/down $name" "softofed fabric down failed"
}

walk_check pair "$TOPO/pair.net"
walk_check line3 "$TOPO/line3.net"
walk_check ft128 "$TOPO/ft128.net"

# ---- malformed packets, on pair
# num KEY FILE: the number after KEY on a status line
num() {
	grep -o "[ :]$1 [0-9]*" "$2" | head -n 1 | awk '{print $2}'
}
fabric up "$TOPO/pair.net" --listen "$ADDR" --real H1 >"$OUT" 2>&1
fabric status >"$ST.0"
if timeout 30 "$WALK" "$ADDR" H1 bad >"$SOF_TMP/bad" 2>"$OUT" &&
	grep -q '^good answered' "$SOF_TMP/bad"; then
	fabric status >"$ST.1"
	fabric port S1 1 >"$SOF_TMP/port"
	bad_ok=1
	for k in short lver pktlen vcrc; do
		d=$(($(num "$k" "$ST.1") - $(num "$k" "$ST.0")))
		[ "$d" -eq 1 ] || {
			bad_ok=0
			echo "# $k: counted $d, not 1"
		}
	done
	for k in hop_pointer hop_count path length; do
		d=$(($(num "$k" "$ST.1") - $(num "$k" "$ST.0")))
		[ "$d" -eq 1 ] || {
			bad_ok=0
			echo "# smp drop $k: counted $d, not 1"
		}
	done
	re=$(num rcv_errors "$SOF_TMP/port")
	[ "$re" = 4 ] || {
		bad_ok=0
		echo "# S1 port 1 rcv_errors $re, not 4"
	}
	if [ $bad_ok = 1 ]; then
		ok "fabric/bad: short, LVer, PktLen, VCRC counted once each (S1[1] PortRcvErrors 4); hop pointer, hop count, path, short MAD dropped and counted; a good SMP answered after"
	else
		not_ok "fabric/bad" "drops not counted as expected"
		sof_dump "$ST.1" "$SOF_TMP/port"
	fi
else
	not_ok "fabric/bad" "fabric_walk bad failed"
	sof_dump "$OUT" "$SOF_TMP/bad"
fi

# ---- an unknown name gets no ASSIGN
if timeout 20 "$WALK" "$ADDR" NOPE walk >/dev/null 2>"$OUT"; then
	not_ok "fabric/unknown host" "a host named NOPE was attached"
else
	fabric status >"$ST.2"
	if grep -q 'no ASSIGN' "$OUT" && [ "$(num unknown_host "$ST.2")" -gt 0 ]; then
		ok "fabric/unknown host: no ASSIGN for NOPE, unknown_host $(num unknown_host "$ST.2")"
	else
		not_ok "fabric/unknown host" "expected no ASSIGN and a count"
		sof_dump "$OUT" "$ST.2"
	fi
fi
# a second fabric in the same namespace
if fabric up "$TOPO/pair.net" --listen 127.0.0.1:17472 >"$OUT" 2>&1; then
	not_ok "fabric/second" "a second fabric started"
else
	ok "fabric/second: refused ($(head -n 1 "$OUT"))"
fi
fabric down >"$OUT" 2>&1

# ---- link cut and restore on line3, trap 128 to the SM
fabric up "$TOPO/line3.net" --listen "$ADDR" --real H1 >"$OUT" 2>&1
# ---- a forwarding loop (S1 and S2 send one LID to each other) is cut
fabric status >"$ST.0"
if timeout 60 "$WALK" "$ADDR" H1 route --loop >"$SOF_TMP/loop" 2>"$OUT" &&
	grep -q '^loop .*: cut, fabric answers' "$SOF_TMP/loop" && fabric status >"$ST.1" &&
	[ "$(num loop "$ST.1")" -ge 1 ]; then
	ok "fabric/loop: $(grep '^loop' "$SOF_TMP/loop"); dropped after 64 hops: loop $(num loop "$ST.1")"
else
	not_ok "fabric/loop" "a forwarding loop was not cut"
	sof_dump "$OUT" "$SOF_TMP/loop" "$ST.1"
fi

# ---- partition enforcement at S1's port to H1 (IBA 10.9.3)
if timeout 60 "$WALK" "$ADDR" H1 route --pkey >"$SOF_TMP/pkey" 2>"$OUT" &&
	grep -q '^pkey S1\[1\] inbound: 0x8002 dropped, 0x7fff passed' "$SOF_TMP/pkey" &&
	fabric port S1 1 >"$SOF_TMP/port" && [ "$(num rcv_constraint "$SOF_TMP/port")" = 1 ]; then
	ok "fabric/pkey: $(grep '^pkey' "$SOF_TMP/pkey"); S1[1] PortRcvConstraintErrors 1"
else
	not_ok "fabric/pkey" "inbound partition enforcement failed"
	sof_dump "$OUT" "$SOF_TMP/pkey" "$SOF_TMP/port"
fi
sof_bg trap 60 "$WALK" "$ADDR" H1 route --wait-trap 15
TRAPOUT=$(sof_out trap)
for _ in $(seq 1 300); do
	grep -q '^ready' "$TRAPOUT" 2>/dev/null && break
	sleep 0.1
done
if fabric link S2 3 down >"$OUT" 2>&1 && sof_wait trap 30 &&
	grep -q '^trap 128 from lid [0-9]* lidaddr [0-9]* (S2) ' "$TRAPOUT" && grep -q '^trap repeated tid .* (S2)$' "$TRAPOUT" &&
	grep -q '^repressed [0-9]* traps: no trap' "$TRAPOUT" && fabric status >"$ST.t" &&
	[ "$(num trap_resends "$ST.t")" -ge 1 ] && [ "$(num trap_repressed "$ST.t")" -ge 1 ]; then
	ok "fabric/cut: $(grep '^trap' "$TRAPOUT" | tr '\n' ' ')after softofed fabric link S2 3 down; sent again until TrapRepress (trap_resends $(num trap_resends "$ST.t"), trap_repressed $(num trap_repressed "$ST.t")), then no more"
else
	not_ok "fabric/cut" "no trap 128 after the cut, or not sent again until repressed"
	sof_dump "$TRAPOUT" "$OUT"
fi
if timeout 60 "$WALK" "$ADDR" H1 walk >"$SOF_TMP/cut" 2>"$OUT" &&
	[ "$(grep -c '^node' "$SOF_TMP/cut")" = 4 ] && ! grep -q ' S3$\| H3$' "$SOF_TMP/cut"; then
	ok "fabric/cut walk: 4 nodes, S3 and H3 out of reach"
else
	not_ok "fabric/cut walk" "expected 4 nodes without S3 and H3"
	sof_dump "$SOF_TMP/cut" "$OUT"
fi
fabric status -v >"$ST.3"
if grep -q '^\[3\] "S3"\[2\] .* DOWN/Polling cut' "$ST.3" &&
	fabric link S2 3 up >"$OUT" 2>&1 &&
	timeout 60 "$WALK" "$ADDR" H1 walk >"$SOF_TMP/restored" 2>"$OUT" &&
	[ "$(grep -c '^node' "$SOF_TMP/restored")" = 6 ]; then
	ok "fabric/restore: S2[3] was DOWN/Polling while cut; restored, 6 nodes again"
else
	not_ok "fabric/restore" "the restored link does not show"
	sof_dump "$ST.3" "$SOF_TMP/restored" "$OUT"
fi
fabric down >"$OUT" 2>&1
if fabric status >/dev/null 2>&1; then
	not_ok "fabric/down" "still answers"
else
	ok "fabric/down: no fabric answers after softofed fabric down"
fi

# ---- two real hosts on line3: H3 answers with the SMA/PMA of mad/ (as a
# daemon's port does), H1 walks, routes and sends it data through 3 switches
fabric up "$TOPO/line3.net" --listen "$ADDR" --real H1,H3 >"$OUT" 2>&1
sof_bg h3 90 "$WALK" "$ADDR" H3 host 10
for _ in $(seq 1 100); do
	fabric status 2>/dev/null | grep -q '^real H3 attached' && break
	sleep 0.1
done
expected "$TOPO/line3.net" >"$SOF_TMP/expected"
if timeout 60 "$WALK" "$ADDR" H1 walk >"$SOF_TMP/walked" 2>"$OUT" &&
	diff -u "$SOF_TMP/expected" "$SOF_TMP/walked" >"$SOF_TMP/diff" &&
	timeout 60 "$WALK" "$ADDR" H1 route --data-to H3 10 >"$SOF_TMP/routed" 2>>"$OUT" &&
	sof_wait h3 60 && grep -q '^data 10 packets ok; lid 6 state ACTIVE' "$(sof_out h3)"; then
	ok "fabric/hosts: real H3 found by the walk (its SMA), routed, Active, its PMA answered ($(grep '^pma' "$SOF_TMP/routed")); $(grep '^data' "$(sof_out h3)") through S1, S2, S3"
else
	not_ok "fabric/hosts" "two real hosts on line3 failed"
	sof_dump "$SOF_TMP/diff" "$OUT" "$SOF_TMP/routed" "$(sof_out h3)"
fi
fabric down >"$OUT" 2>&1

# ---- a bad topology file
printf 'Switch\t8 "S1"\n[1]\t"H9"[1]\n' >"$SOF_TMP/bad.net"
if fabric up "$SOF_TMP/bad.net" --listen "$ADDR" >"$OUT" 2>&1; then
	not_ok "fabric/bad file" "started"
	fabric down >/dev/null 2>&1
elif grep -q 'bad.net:2: link to a node the file does not define' "$OUT"; then
	ok "fabric/bad file: $(grep 'bad.net' "$OUT")"
else
	not_ok "fabric/bad file" "no file:line message"
	sof_dump "$OUT"
fi
sof_exit
