#!/bin/bash
# Issue 20 item 5, more than one P_KeyTable block (IBA 14.2.5.7: 32
# entries a block): our SM with a partitions file of 40 partitions besides
# the default, on `softofed fabric up --ibsim` line3 (simulated HCAs and
# switches with PartitionCap 64, PartitionEnforcementCap 64), diagnostics
# from H3 through Debian's libumad2sim:
#   - `smpquery pkeys` of H2 lists all 41 entries, the last ones from
#     block 1 with their membership bits;
#   - S2's port 1 (to H2) enforces: its table is H2's, both blocks;
#   - `saquery --smkey 1 PKTR` has H2's block 1 record with them;
#   - a link cut (trap 128, heavy sweep): no P_KeyTable read again of a
#     port the sweep before met; restored: S3's and H3's read again;
#   - the partitions cut to 10 and the SM restarted: block 1 emptied;
#   - restarted with p3 left out and p11 added: the SM reads the tables
#     before it writes, p4..p10 keep their indexes, p11 takes index 3;
#     restarted with the same file: every block read, none written;
#   - OpenSM with the same 40 partitions: `saquery PKTR` of H2 the same
#     records (LIDs aside), block 1 numbered as OpenSM numbers it.
# Runs in a private network namespace.
#
# Usage: tests/integration/fabric_sm_pkeys.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_ns_enter "$@"
sof_init

# shellcheck source=tests/ib_fabric.sh
. "$SOF_ROOT/tests/ib_fabric.sh"
sof_sim_init sm/pkeys softofed-sm smpquery saquery
mkdir -p "$SOF_TMP/pk" && cd "$SOF_TMP/pk" || exit 1

# diagnostics from H3
SOF_SIM_HOST=H3
lid_of() { # NAME: the LID of CA or switch NAME
	sof_sim ibnetdiscover >"$SOF_TMP/ibnd"
	sof_sim_lid "$SOF_TMP/ibnd" "$1"
}
# parts N: a partitions.conf with the default and p1..pN (odd ones full)
parts() {
	echo "Default=0x7fff : ALL=full ;"
	for i in $(seq 1 "$1"); do
		printf 'p%u=0x%04x : ALL_CAS=%s ;\n' "$i" $((0x100 + i)) "$([ $((i % 2)) = 1 ] && echo full || echo limited)"
	done
}
# the P_Keys smpquery pkeys printed (each 0x....), one a line
pkeys_of() { grep -o '0x[0-9a-f]\{4\}' "$1" | grep -v '^0x0000$'; }

sof_sim_fabric up "$SIM_TOPO/line3.net" --ibsim >"$OUT" 2>&1
parts 40 >parts40.conf
sof_bg smA 120 env LD_PRELOAD="$UMAD2SIM" SIM_HOST=H1 "$SIM_SM" -v --partitions "$SOF_TMP/pk/parts40.conf"
if ! sof_wait_log "$(sof_out smA)" 'SUBNET UP' 30; then
	not_ok "sm/pkeys: SUBNET UP" "no SUBNET UP"
	sof_dump "$(sof_out smA)"
	sof_kill smA
	sof_sim_fabric down >"$OUT" 2>&1
	sof_exit
fi
sleep 1
h2=$(lid_of H2)
s2=$(lid_of S2)
sof_sim smpquery pkeys "$h2" >"$SOF_TMP/h2"
pkeys_of "$SOF_TMP/h2" >"$SOF_TMP/h2.list"
want=$(
	echo 0xffff
	for i in $(seq 1 40); do printf '0x%04x\n' $(((i % 2 ? 0x8000 : 0) + 0x100 + i)); done
)
if [ "$(cat "$SOF_TMP/h2.list")" = "$want" ] && grep -q '^64 pkeys capacity' "$SOF_TMP/h2"; then
	ok "sm/pkeys: smpquery pkeys of H2 (LID $h2): all 41 entries, block 1's 0x8120 .. 0x0128 with their membership"
else
	not_ok "sm/pkeys: smpquery pkeys of H2" "$(cat "$SOF_TMP/h2")"
	sof_dump "$(sof_out smA)"
fi
sof_sim smpquery pkeys "$s2" 1 >"$SOF_TMP/s2"
if [ "$(pkeys_of "$SOF_TMP/s2")" = "$want" ]; then
	ok "sm/pkeys: S2's port 1 (to H2) holds H2's 41 entries in two blocks"
else
	not_ok "sm/pkeys: S2 port 1" "$(cat "$SOF_TMP/s2")"
fi
sof_sim saquery --smkey 1 PKTR "$h2" >"$SOF_TMP/pktr"
if grep -q 'Block\.*1$' "$SOF_TMP/pktr" && grep -q '0x8121' "$SOF_TMP/pktr" && grep -q '0x0128' "$SOF_TMP/pktr"; then
	ok "sm/pkeys: saquery PKTR of H2 has block 1 with 0x8121 .. 0x0128"
else
	not_ok "sm/pkeys: saquery PKTR" "$(head -n 40 "$SOF_TMP/pktr")"
fi
# a heavy sweep (S2-S3 cut: trap 128) reads no P_KeyTable of a port met in
# the sweep before (H1, H2, S1, S2); once restored, those of S3 and H3 again
pkt_lines() { grep -c 'P_KeyTable blocks' "$(sof_out smA)"; }
pkt_wait() { # N: until N programming rounds logged (at most 20 s)
	for _ in $(seq 1 200); do
		[ "$(pkt_lines)" -ge "$1" ] && return 0
		sleep 0.1
	done
	return 1
}
n0=$(pkt_lines)
sof_sim_fabric link S2 3 down >"$OUT" 2>&1
pkt_wait $((n0 + 1))
cut=$(grep -o 'P_KeyTable blocks: .*' "$(sof_out smA)" | sed -n "$((n0 + 1))p")
n1=$(pkt_lines)
sof_sim_fabric link S2 3 up >"$OUT" 2>&1
pkt_wait $((n1 + 1))
back=$(grep -o 'P_KeyTable blocks: .*' "$(sof_out smA)" | sed -n "$((n1 + 1))p")
if [ "${cut%% read*}" = "P_KeyTable blocks: 0" ] && [ "${back#P_KeyTable blocks: 0 }" = "$back" ] &&
	[ -n "$back" ]; then
	ok "sm/pkeys: S2-S3 cut, the heavy sweep reads no P_KeyTable of the ports it knew ($cut); restored, S3's and H3's again ($back)"
else
	not_ok "sm/pkeys: no P_KeyTable read again" "cut: '$cut', restored: '$back'"
	sof_dump "$(sof_out smA)"
fi
sof_kill smA

# ten partitions: the restarted SM writes both blocks again, block 1 empty
parts 10 >parts10.conf
: >"$(sof_out smA)"
sof_bg smA 120 env LD_PRELOAD="$UMAD2SIM" SIM_HOST=H1 "$SIM_SM" -v --partitions "$SOF_TMP/pk/parts10.conf"
if sof_wait_log "$(sof_out smA)" 'SUBNET UP' 30; then
	sleep 1
	sof_sim smpquery pkeys "$h2" >"$SOF_TMP/h2b"
	n=$(pkeys_of "$SOF_TMP/h2b" | wc -l)
	if [ "$n" = 11 ] && ! grep -q '0x0128\|0x8121' "$SOF_TMP/h2b"; then
		ok "sm/pkeys: with 10 partitions H2 holds 11 entries, block 1 emptied"
	else
		not_ok "sm/pkeys: 10 partitions" "$(cat "$SOF_TMP/h2b")"
	fi
else
	not_ok "sm/pkeys: 10 partitions" "no SUBNET UP"
fi
sof_kill smA

# p3 left out, p11 added: the restarted SM reads the tables first, so p4..
# p10 keep their indexes (4..10) and p11 takes p3's freed index 3 (written
# blindly it would be p4 at 3 ... p11 at 10)
{
	parts 11 | grep -v '^p3='
} >parts_no3.conf
: >"$(sof_out smA)"
sof_bg smA 120 env LD_PRELOAD="$UMAD2SIM" SIM_HOST=H1 "$SIM_SM" -v --partitions "$SOF_TMP/pk/parts_no3.conf"
if sof_wait_log "$(sof_out smA)" 'SUBNET UP' 30; then
	sleep 1
	sof_sim smpquery pkeys "$h2" >"$SOF_TMP/h2c"
	# every entry with its index, zeros included
	grep -o '0x[0-9a-f]\{4\}' "$SOF_TMP/h2c" | head -n 64 | awk '{printf "%d %s\n", NR - 1, $1}' >"$SOF_TMP/h2c.idx"
	if grep -qx '3 0x810b' "$SOF_TMP/h2c.idx" && grep -qx '4 0x0104' "$SOF_TMP/h2c.idx" &&
		grep -qx '10 0x010a' "$SOF_TMP/h2c.idx" && grep -qx '0 0xffff' "$SOF_TMP/h2c.idx" &&
		! grep -q '0x0103\|0x8103' "$SOF_TMP/h2c.idx" &&
		grep -q 'P_KeyTable blocks: [1-9][0-9]* read' "$(sof_out smA)"; then
		ok "sm/pkeys: tables read before written: p3 dropped, p4..p10 kept at indexes 4..10, the new p11 at p3's index 3 ($(grep -o 'P_KeyTable blocks: .*' "$(sof_out smA)" | head -n 1))"
	else
		not_ok "sm/pkeys: indexes kept" "$(head -n 12 "$SOF_TMP/h2c.idx" | paste -sd' ')"
		sof_dump "$SOF_TMP/h2c"
	fi
else
	not_ok "sm/pkeys: indexes kept" "no SUBNET UP"
fi
sof_kill smA

# the same file again: every table read, none written
: >"$(sof_out smA)"
sof_bg smA 120 env LD_PRELOAD="$UMAD2SIM" SIM_HOST=H1 "$SIM_SM" -v --partitions "$SOF_TMP/pk/parts_no3.conf"
if sof_wait_log "$(sof_out smA)" 'SUBNET UP' 30 &&
	grep -q 'P_KeyTable blocks: [1-9][0-9]* read, 0 written' "$(sof_out smA)" &&
	sof_sim smpquery pkeys "$h2" >"$SOF_TMP/h2d" && diff -q "$SOF_TMP/h2c" "$SOF_TMP/h2d" >/dev/null; then
	ok "sm/pkeys: restarted with the same file, no P_KeyTable Set ($(grep -o 'P_KeyTable blocks: .*' "$(sof_out smA)" | head -n 1)), H2's table unchanged"
else
	not_ok "sm/pkeys: nothing rewritten" "$(grep 'P_KeyTable' "$(sof_out smA)" | head -n 3)"
fi
sof_kill smA
sof_sim_fabric down >"$OUT" 2>&1

# OpenSM with the same 40 partitions: saquery PKTR of H2 as with ours
if command -v opensm >/dev/null; then
	sof_sim_fabric up "$SIM_TOPO/line3.net" --ibsim >"$OUT" 2>&1
	sof_bg osm 120 env LD_PRELOAD="$UMAD2SIM" SIM_HOST=H1 OSM_CACHE_DIR="$SOF_TMP/pk" \
		OSM_TMP_DIR="$SOF_TMP/pk" opensm -P "$SOF_TMP/pk/parts40.conf" -d 2 -f "$SOF_TMP/pk/osm.log"
	if sof_wait_log "$SOF_TMP/pk/osm.log" 'SUBNET UP' 30; then
		sleep 1
		sof_sim saquery --smkey 1 PKTR "$(lid_of H2)" >"$SOF_TMP/pktr_osm"
		# the LIDs are each SM's own
		if diff <(grep -v 'LID\.\.' "$SOF_TMP/pktr_osm") <(grep -v 'LID\.\.' "$SOF_TMP/pktr") \
			>"$SOF_TMP/pktr_diff" && grep -q 'Block\.*1$' "$SOF_TMP/pktr_osm"; then
			ok "sm/pkeys: saquery PKTR of H2 under OpenSM with the same file is the same, both blocks"
		else
			not_ok "sm/pkeys: PKTR as OpenSM's" "$(head -n 40 "$SOF_TMP/pktr_diff")"
		fi
	else
		not_ok "sm/pkeys: OpenSM" "no SUBNET UP"
		sof_dump "$SOF_TMP/pk/osm.log"
	fi
	sof_kill osm
	sof_sim_fabric down >"$OUT" 2>&1
else
	not_ok "sm/pkeys: OpenSM" "opensm missing"
fi
sof_exit
