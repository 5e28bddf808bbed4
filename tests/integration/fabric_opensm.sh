#!/bin/bash
# Issue 19: unmodified OpenSM and infiniband-diags on the software fabric,
# attached through ibsim's client protocol (`softofed fabric up --ibsim`,
# fabric/sim.c) with Debian's libumad2sim.so preloaded, so they run before
# a host's own InfiniBand port and libibumad do:
#   - OpenSM brings pair, line3 and ft128 to SUBNET UP;
#   - ibnetdiscover then finds exactly the file's nodes, GUIDs and links
#     (tests/fabric_topo.py reads both);
#   - on line3: ibswitches/ibhosts count the nodes, sminfo names the master,
#     ibroute shows the LFT OpenSM set (every LID routed), ibtracert goes
#     H1 -> S1 -> S2 -> S3 -> H3, saquery NR 6 answers from OpenSM's SA
#     with H3's NodeRecord, smpquery portinfo shows the ports Active,
#     perfquery counts packets and -R resets them, ibqueryerrors finds none;
#   - a link cut by `softofed fabric link` is seen Down by iblinkinfo, and
#     after `link ... up` OpenSM takes it back to Active (trap 128, sweep).
# Runs in a private network namespace.
#
# Usage: tests/integration/fabric_opensm.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_ns_enter "$@"
sof_init

# shellcheck source=tests/ib_fabric.sh
. "$SOF_ROOT/tests/ib_fabric.sh"
sof_sim_init fabric/opensm opensm
TOPO=$SIM_TOPO
FT=$SOF_ROOT/tests/fabric_topo.py
export OSM_CACHE_DIR=$SOF_TMP OSM_TMP_DIR=$SOF_TMP
fabric() { sof_sim_fabric "$@"; }
sim() { sof_sim "$@"; }

# opensm_up NAME: OpenSM in the background; SUBNET UP within 60 s
opensm_up() {
	rm -f "$SOF_TMP/osm.log"
	sof_bg opensm 300 env LD_PRELOAD="$UMAD2SIM" opensm -d 2 -f "$SOF_TMP/osm.log"
	for _ in $(seq 1 600); do
		grep -q 'SUBNET UP' "$SOF_TMP/osm.log" 2>/dev/null && return 0
		sleep 0.1
	done
	not_ok "fabric/opensm $1" "no SUBNET UP within 60 s"
	sof_dump "$SOF_TMP/osm.log" "$(sof_out opensm)"
	return 1
}

# up_ms: OpenSM's time from its first log line to SUBNET UP
up_ms() {
	python3 - "$SOF_TMP/osm.log" <<'EOF'
import re, sys
t = [float(m.group(1)) * 1000 + int(m.group(2)) / 1000
     for line in open(sys.argv[1])
     for m in [re.match(r'^\w+ +\d+ \d+:\d+:(\d+) (\d+) ', line)] if m]
up = [l for l in open(sys.argv[1]) if ' -> SUBNET UP' in l][0]
m = re.match(r'^\w+ +\d+ \d+:\d+:(\d+) (\d+) ', up)
print(int(float(m.group(1)) * 1000 + int(m.group(2)) / 1000 - t[0]) % 60000)
EOF
}

for name in pair line3 ft128; do
	file=$TOPO/$name.net
	# OpenSM's cache (guid2lid) of its own per fabric, so that the LIDs
	# below are those a first sweep gives: line3 H1 1, S1 2, S2 3, S3 4,
	# H2 5, H3 6
	mkdir -p "$SOF_TMP/$name" && cd "$SOF_TMP/$name" || exit 1
	export OSM_CACHE_DIR=$SOF_TMP/$name OSM_TMP_DIR=$SOF_TMP/$name
	if ! fabric up "$file" --ibsim >"$OUT" 2>&1; then
		not_ok "fabric/opensm $name" "softofed fabric up --ibsim failed"
		sof_dump "$OUT"
		continue
	fi
	if opensm_up "$name"; then
		"$FT" expected "$file" >"$SOF_TMP/expected"
		sim ibnetdiscover >"$SOF_TMP/ibnd"
		"$FT" ibnetdiscover "$SOF_TMP/ibnd" >"$SOF_TMP/found"
		if diff -u "$SOF_TMP/expected" "$SOF_TMP/found" >"$SOF_TMP/diff"; then
			ok "fabric/opensm $name: SUBNET UP in $(up_ms) ms; ibnetdiscover finds the file's $(grep -c '^node' "$SOF_TMP/found") nodes and $(grep -c '^link' "$SOF_TMP/found") links, GUIDs as ibsim gives them"
		else
			not_ok "fabric/opensm $name" "ibnetdiscover differs from the file"
			sof_dump "$SOF_TMP/diff"
		fi
	fi
	if [ "$name" = line3 ]; then
		checks=()
		[ "$(sim ibswitches | grep -c '^Switch')" = 3 ] || checks+=("ibswitches")
		[ "$(sim ibhosts | grep -c '^Ca')" = 3 ] || checks+=("ibhosts")
		sim sminfo | grep -q 'sm lid 1 .*SMINFO_MASTER' || checks+=("sminfo")
		[ "$(sim ibroute 2 | grep -c '^0x000[1-6] 00[0-2] :')" = 6 ] || checks+=("ibroute")
		sim ibtracert 1 6 >"$SOF_TMP/trace"
		grep -q '"S1"' "$SOF_TMP/trace" && grep -q '"S2"' "$SOF_TMP/trace" &&
			grep -q '"S3"' "$SOF_TMP/trace" && grep -q 'To ca .* lid 6-6 "H3"' "$SOF_TMP/trace" ||
			checks+=("ibtracert")
		sim smpquery portinfo 3 3 >"$SOF_TMP/pi"
		grep -q 'LinkState:.*Active' "$SOF_TMP/pi" || checks+=("smpquery")
		a=$(sim perfquery -x 6 | sed -n 's/^PortRcvPkts:\.*//p')
		sim perfquery -x 6 >/dev/null
		b=$(sim perfquery -x 6 | sed -n 's/^PortRcvPkts:\.*//p')
		[ -n "$a" ] && [ -n "$b" ] && [ "$b" -gt "$a" ] || checks+=("perfquery grows ($a, $b)")
		sim perfquery -R 6 >/dev/null
		c=$(sim perfquery 6 | sed -n 's/^PortRcvPkts:\.*//p')
		[ -n "$c" ] && [ "$c" -lt "$b" ] || checks+=("perfquery -R ($b, $c)")
		sim ibqueryerrors | grep -q '0 bad nodes found' || checks+=("ibqueryerrors")
		# one record (a reply of several is RMPP, which libumad2sim does
		# not reassemble, on ibsim as here)
		sim saquery NR 6 >"$SOF_TMP/sa"
		grep -q 'NodeDescription.*H3' "$SOF_TMP/sa" || checks+=("saquery")
		if [ ${#checks[@]} -eq 0 ]; then
			ok "fabric/diags line3: ibswitches, ibhosts, sminfo (master LID 1), ibroute (6 LIDs), ibtracert H1-S1-S2-S3-H3, saquery NR 6 (H3's NodeRecord from OpenSM's SA), smpquery Active, perfquery $a -> $b, -R -> $c, ibqueryerrors clean"
		else
			not_ok "fabric/diags line3" "failed: ${checks[*]}"
			sof_dump "$SOF_TMP/sa" "$SOF_TMP/pi"
		fi
		fabric link S2 3 down >"$OUT" 2>&1
		sleep 1
		down=$(sim iblinkinfo | grep -c 'Down/ Polling)==>.*"S2"\|"S3".*Down\|Down/ *Polling')
		fabric link S2 3 up >"$OUT" 2>&1
		back=no
		for _ in $(seq 1 200); do
			sim smpquery portinfo 3 3 | grep -q 'LinkState:.*Active' && back=yes && break
			sleep 0.1
		done
		if [ "$down" -gt 0 ] && [ $back = yes ]; then
			ok "fabric/opensm cut: S2[3] Down in iblinkinfo while cut; restored, OpenSM made it Active again"
		else
			not_ok "fabric/opensm cut" "down lines $down, back $back"
		fi
	fi
	sof_kill opensm
	fabric down >"$OUT" 2>&1
done
sof_exit
