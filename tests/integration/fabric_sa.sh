#!/bin/bash
# Issue 20: softofed-sm's SA answering Debian's saquery through
# libumad2sim (rdma-core's libibumad, unmodified, as ibsim-run runs it),
# on `softofed fabric up --ibsim` (line3) and on Debian's ibsim (pair),
# beside OpenSM's answers to the same questions on the same fabric.
# libumad2sim does not reassemble RMPP (it hands over one MAD and what its
# buffer held after it), so only the first record of an answer is
# compared: NodeRecord by LID, PathRecord from LID to LID, SMInfoRecord,
# LinkRecord by LID and port, and ClassPortInfo. Then on ibsim's pair
# `--packet_life_time 0x10`: the PathRecords carry it (a loopback one 0),
# as OpenSM's carry its opensm.conf subnet_timeout; 64 is refused.
# Runs in a private network namespace.
#
# Usage: tests/integration/fabric_sa.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_ns_enter "$@"
sof_init

# shellcheck source=tests/ib_fabric.sh
. "$SOF_ROOT/tests/ib_fabric.sh"
sof_sim_init sa/sim softofed-sm ibsim opensm saquery
TOPO=$SIM_TOPO SM=$SIM_SM
export OSM_CACHE_DIR=$SOF_TMP OSM_TMP_DIR=$SOF_TMP
sim() { sof_sim "$@"; }

# up NAME LOG CMD...: an SM in the background until LOG says SUBNET UP
up() {
	local name=$1 log=$2
	shift 2
	sof_bg "$name" 120 env LD_PRELOAD="$UMAD2SIM" "$@"
	for _ in $(seq 1 300); do
		grep -q 'SUBNET UP' "$log" 2>/dev/null && return 0
		sof_alive "$name" || break
		sleep 0.1
	done
	return 1
}

# first FILE KIND KEYS...: the named fields of the first KIND record
first() {
	local f=$1 kind=$2
	shift 2
	awk -v kind="$kind dump:" -v keys=" $* " '
		$0 == kind { n++; next }
		/ dump:$/ && $0 !~ /^[ \t]/ { if (n) exit }
		n == 1 {
			line = $0; sub(/^[ \t]+/, "", line)
			k = line; sub(/\.\.+.*/, "", k)
			v = line; sub(/^[^.]*\.\.+/, "", v)
			if (index(keys, " " k " ")) printf "%s=%s ", k, v
		}' "$f"
}

# lid_at DRPATH: the LID of the CA port at the end of a directed route
# (asked again for up to 3 s while it reads 0: a sweep may still be on)
lid_at() {
	local l
	for _ in $(seq 30); do
		l=$(sim smpquery -D portinfo "$1" 1 | sed -n 's/^Lid:\.*//p')
		[ -n "$l" ] && [ "$l" != 0 ] && break
		sleep 0.1
	done
	echo "$l"
}

# answers DIR SLID DRPATH: the questions about the CA port at DRPATH (by
# the LID this SM gave it), into DIR
answers() {
	local d=$1 s=$2 t
	t=$(lid_at "$3")
	mkdir -p "$d"
	echo "$t" >"$d/lid"
	sim saquery NR "$t" >"$d/nr"
	sim saquery -p --src-to-dst "$s:$t" >"$d/pr"
	sim saquery SMIR >"$d/smir"
	sim saquery LR "$s/1" >"$d/lr"
	sim saquery -c >"$d/cpi"
	{
		echo "nr $(first "$d/nr" NodeRecord lid node_type node_guid port_guid NodeDescription)"
		echo "pr $(first "$d/pr" PathRecord dgid sgid dlid slid num_path_revers pkey mtu rate pkt_life)"
		echo "smir $(first "$d/smir" SMInfoRecord LID GUID SMState)"
		echo "lr $(first "$d/lr" LinkRecord FromLID FromPort ToPort ToLID)"
		echo "cpi $(grep -c 'Class version\.*2$' "$d/cpi")"
	} >"$d/sum"
	# the SMs may number the far port differently: its LID as T
	sed "s/ lid=$t / lid=T /; s/ dlid=$t / dlid=T /" "$d/sum" >"$d/same"
}

# compare NAME SLID DRPATH: ours then OpenSM's, the same first records
compare() {
	local name=$1 s=$2 path=$3 t bad=""
	if up sm "$(sof_out sm)" "$SM" -v; then
		answers "$SOF_TMP/$name.ours" "$s" "$path"
	else
		not_ok "sa/sim $name" "softofed-sm: no SUBNET UP"
		sof_dump "$(sof_out sm)"
		return
	fi
	sof_kill sm
	if up osm "$SOF_TMP/$name.osm.log" opensm -d 2 -f "$SOF_TMP/$name.osm.log"; then
		answers "$SOF_TMP/$name.osm" "$s" "$path"
	else
		not_ok "sa/sim $name" "OpenSM: no SUBNET UP"
		return
	fi
	sof_kill osm
	t=$(cat "$SOF_TMP/$name.ours/lid")
	grep -q "^nr lid=$t .*node_guid=0x" "$SOF_TMP/$name.ours/sum" || bad="$bad NR"
	grep -q "^pr .*dlid=$t slid=$s " "$SOF_TMP/$name.ours/sum" || bad="$bad PR"
	grep -q "^smir LID=1 .*SMState=3" "$SOF_TMP/$name.ours/sum" || bad="$bad SMIR"
	grep -q "^lr FromLID=$s FromPort=1 " "$SOF_TMP/$name.ours/sum" || bad="$bad LR"
	grep -q "^cpi 1" "$SOF_TMP/$name.ours/sum" || bad="$bad CPI"
	if [ -z "$bad" ] && diff -u "$SOF_TMP/$name.osm/same" "$SOF_TMP/$name.ours/same" >"$SOF_TMP/$name.diff"; then
		ok "sa/sim $name: saquery through libumad2sim: NR $t, -p $s:$t, SMIR, LR $s/1, -c from softofed-sm's SA, the same as OpenSM's (its LIDs: $s, $(cat "$SOF_TMP/$name.osm/lid"))"
	else
		not_ok "sa/sim $name" "wrong:${bad:- none}; against OpenSM: $(tr '\n' ' ' <"$SOF_TMP/$name.diff" | cut -c1-900)"
		sof_dump "$SOF_TMP/$name.ours/sum" "$SOF_TMP/$name.ours/lid" "$SOF_TMP/$name.ours/nr"
	fi
}

# softofed's fabric as an ibsim server: line3, H1 (LID 1) to H3
mkdir -p "$SOF_TMP/line3" && cd "$SOF_TMP/line3" || exit 1
if sof_sim_fabric up "$TOPO/line3.net" --ibsim >"$OUT" 2>&1; then
	compare line3 1 0,1,2,3,1
else
	not_ok "sa/sim line3" "softofed fabric up --ibsim failed"
	sof_dump "$OUT"
fi
sof_sim_fabric down >"$OUT" 2>&1

# Debian's ibsim: pair, H1 (LID 1) to H2
mkdir -p "$SOF_TMP/pair" && cd "$SOF_TMP/pair" || exit 1
rm -f in && mkfifo in
exec 7<>in # held open, so that ibsim's console never ends
timeout -k 5 120 ibsim -s "$TOPO/pair.net" <in >"$(sof_out ibsim)" 2>&1 &
SOF_PID[ibsim]=$!
sleep 0.5
compare pair 1 0,1,2

# pkt_life FILE: the PacketLifeTime of the first PathRecord in FILE, in
# decimal (saquery prints the byte with its selector in bits 7-6)
pkt_life() {
	local v
	v=$(first "$1" PathRecord pkt_life | sed -n 's/^pkt_life=\(0x[0-9a-f]*\) *$/\1/p')
	[ -n "$v" ] && echo $((v & 0x3f))
}

# --packet_life_time: ours carries it in every PathRecord but a loopback
# one (0, IBA table 205); OpenSM's carry its subnet_timeout (opensm.conf)
life() {
	local d=$SOF_TMP/life a b c o t
	mkdir -p "$d"
	if "$SM" --packet_life_time 64 >"$d/bad" 2>&1 || ! grep -q '0 to 63' "$d/bad"; then
		not_ok "sa/sim life" "--packet_life_time 64 taken: $(head -c 300 "$d/bad")"
		return
	fi
	if ! up sm "$(sof_out sm)" "$SM" -v --packet_life_time 0x10; then
		not_ok "sa/sim life" "softofed-sm --packet_life_time 0x10: no SUBNET UP"
		sof_dump "$(sof_out sm)"
		return
	fi
	t=$(lid_at 0,1,2) # H2
	sim saquery -p --src-to-dst "1:$t" >"$d/pr"
	sim saquery -p --src-to-dst "$t:1" >"$d/pr2"
	sim saquery -p --src-to-dst 1:1 >"$d/loop"
	a=$(pkt_life "$d/pr") b=$(pkt_life "$d/pr2") c=$(pkt_life "$d/loop")
	sof_kill sm
	opensm -c "$d/osm.conf" >/dev/null 2>&1
	sed -i 's/^subnet_timeout .*/subnet_timeout 16/' "$d/osm.conf"
	if up osm "$d/osm.log" opensm -F "$d/osm.conf" -d 2 -f "$d/osm.log"; then
		t=$(lid_at 0,1,2)
		sim saquery -p --src-to-dst "1:$t" >"$d/osm.pr"
		o=$(pkt_life "$d/osm.pr")
	fi
	sof_kill osm
	if [ "$a" = 16 ] && [ "$b" = 16 ] && [ "$c" = 0 ] && [ "${o:-}" = 16 ]; then
		ok "sa/sim life: --packet_life_time 0x10 (64 refused): PathRecords H1 to H2 and back carry PacketLifeTime $a, loopback 1:1 $c; OpenSM with subnet_timeout 16 also $o"
	else
		not_ok "sa/sim life" "PacketLifeTime H1-H2 '$a' H2-H1 '$b' 1:1 '$c' (want 16 16 0), OpenSM '${o:-}'"
		sof_dump "$d/pr" "$d/loop"
	fi
}
life
exec 7>&-
sof_kill ibsim
sof_exit
