#!/bin/bash
# Issue 20: softofed's own subnet manager (sm/, softofed-sm) on
# softofed's fabric (`softofed fabric up --ibsim`) and on Debian's ibsim,
# through Debian's libumad2sim over rdma-core's libibumad (as ibsim-run
# runs programs), the binary unmodified:
#   - pair, line3, ft128, ft648, ft1152 on our fabric: SUBNET UP; iblinkinfo shows every
#     port with a link Active (none in Initialize/Armed); ibnetdiscover
#     finds exactly the file's nodes, GUIDs and links (tests/fabric_topo.py);
#     ibtracert between hosts reaches them (LFTs right);
#   - line3: SL2VL (SL s -> VL s mod 8) and VLArb tables in smpquery of a
#     CA and a switch port (sm/qos.c);
#   - line3: sminfo names our SM master at LID 1; ibtracert H1 -> S1 -> S2
#     -> S3 -> H3; ibroute of S1 routes every LID; a link cut and restored
#     (`softofed fabric link`) is Active again through trap 128 and a heavy
#     sweep; with a guid2lid file giving H3 LID 37, a restarted SM gives
#     H3 LID 37 and keeps the others;
#   - ft128: a Leaf-Spine link cut is routed around (trap 128, heavy
#     sweep) writing fewer LFT blocks than the first sweep, and Active
#     again once restored; with LMC 2 every CA port's base LID a multiple
#     of 4, ibtracert to base+3 reaches the host; that SM sends 256 SMPs
#     at once and none times out (the simulator's answers wait for room in
#     libumad2sim's socket);
#   - handover on line3 both ways with OpenSM: ours STANDBY behind
#     OpenSM's master takes over when it is killed; OpenSM STANDBY behind
#     ours takes over when ours is killed; sminfo names the new master and
#     H3 keeps its LID;
#   - --routing ftree: ft128 routed as a fat tree, line3 detected as none
#     and routed min-hop;
#   - pair, line3, ft128, ft648 and ft1152 on ibsim (ibsim -s FILE): SUBNET
#     UP, every port with a link Active, ibnetdiscover counts the file's
#     nodes.
# Runs in a private network namespace.
#
# Usage: tests/integration/fabric_sm.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_ns_enter "$@"
sof_init

# shellcheck source=tests/ib_fabric.sh
. "$SOF_ROOT/tests/ib_fabric.sh"
sof_sim_init sm/fabric softofed-sm ibsim
TOPO=$SIM_TOPO SM=$SIM_SM
FT=$SOF_ROOT/tests/fabric_topo.py

fabric() { sof_sim_fabric "$@"; }
# a diagnostic through libumad2sim, at node $DIAG_HOST when set
DIAG_HOST=""
sim() { SOF_SIM_HOST=$DIAG_HOST sof_sim "$@"; }

# sm_up NAME ARGS...: our SM in the background; SUBNET UP within 30 s
sm_up() {
	local name=$1
	shift
	# emptied here: sof_bg's child truncates it only once it runs, and the
	# last SM's "SUBNET UP" must not be read as this one's
	: >"$(sof_out sm)"
	sof_bg sm 300 env LD_PRELOAD="$UMAD2SIM" "$SM" -v "$@"
	for _ in $(seq 1 300); do
		grep -q 'SUBNET UP' "$(sof_out sm)" 2>/dev/null && return 0
		sof_alive sm || break
		sleep 0.1
	done
	not_ok "sm/$name" "no SUBNET UP within 30 s"
	sof_dump "$(sof_out sm)"
	return 1
}

up_ms() {
	sed -n 's/.*SUBNET UP in \([0-9]*\) ms.*/\1/p' "$(sof_out sm)" | head -n 1
}

# all_active NAME: iblinkinfo's ports with a link all Active
all_active() {
	sim iblinkinfo >"$SOF_TMP/links"
	local links act
	links=$(grep -c 'LinkUp)==>' "$SOF_TMP/links")
	act=$(grep -c 'Active/  LinkUp)==>' "$SOF_TMP/links")
	if [ "$links" -gt 0 ] && [ "$links" = "$act" ]; then
		echo "$act"
		return 0
	fi
	echo "$act of $links"
	return 1
}

# same_topo FILE: ibnetdiscover against the file
same_topo() {
	"$FT" expected "$1" >"$SOF_TMP/expected"
	sim ibnetdiscover >"$SOF_TMP/ibnd"
	"$FT" ibnetdiscover "$SOF_TMP/ibnd" >"$SOF_TMP/found"
	diff -u "$SOF_TMP/expected" "$SOF_TMP/found" >"$SOF_TMP/diff"
}

# trace_ok SLID DLID NAME: ibtracert reaches the CA NAME
trace_ok() {
	sim ibtracert "$1" "$2" | grep -q "To ca .*\"$3\""
}

# lid_of NAME: the base LID of CA NAME's port in the last same_topo's
# ibnetdiscover output ("[1](guid) "peer"[p] # lid N lmc M ...")
lid_of() {
	sof_sim_lid "$SOF_TMP/ibnd" "$1"
}

for name in pair line3 ft128 ft648 ft1152; do
	file=$TOPO/$name.net
	mkdir -p "$SOF_TMP/$name" && cd "$SOF_TMP/$name" || exit 1
	if ! fabric up "$file" --ibsim >"$OUT" 2>&1; then
		not_ok "sm/fabric $name" "softofed fabric up --ibsim failed"
		sof_dump "$OUT"
		continue
	fi
	g2l=$SOF_TMP/$name/guid2lid
	if sm_up "fabric $name" --guid2lid "$g2l"; then
		if act=$(all_active) && same_topo "$file"; then
			ok "sm/fabric $name: SUBNET UP in $(up_ms) ms; $act ports Active in iblinkinfo; ibnetdiscover finds the file's $(grep -c '^node' "$SOF_TMP/found") nodes and $(grep -c '^link' "$SOF_TMP/found") links"
		else
			not_ok "sm/fabric $name" "Active: $act; topology diff $(wc -l <"$SOF_TMP/diff") lines"
			sof_dump "$SOF_TMP/diff" "$(sof_out sm)"
		fi
	fi
	case $name in
	pair)
		if trace_ok 1 3 H2 && trace_ok 3 1 H1; then
			ok "sm/fabric pair: ibtracert H1 <-> H2 both ways"
		else
			not_ok "sm/fabric pair: ibtracert" "$(sim ibtracert 1 3 | tr '\n' ' ' | cut -c1-300)"
		fi
		;;
	line3)
		checks=()
		sim sminfo >"$SOF_TMP/sminfo"
		grep -q 'sm lid 1 sm guid 0x100001, .*SMINFO_MASTER' "$SOF_TMP/sminfo" || checks+=("sminfo: $(cat "$SOF_TMP/sminfo")")
		# LIDs in discovery order: H1 1, S1 2, S2 3, H2 4, S3 5, H3 6
		[ "$(sim ibroute 2 | grep -c '^0x000[1-6] 00[0-2] :')" = 6 ] || checks+=("ibroute")
		sim ibtracert 1 6 >"$SOF_TMP/trace"
		grep -q '"S1"' "$SOF_TMP/trace" && grep -q '"S2"' "$SOF_TMP/trace" &&
			grep -q '"S3"' "$SOF_TMP/trace" && grep -q 'To ca .* lid 6-6 "H3"' "$SOF_TMP/trace" ||
			checks+=("ibtracert 1 6")
		trace_ok 6 4 H2 || checks+=("ibtracert 6 4")
		if [ ${#checks[@]} -eq 0 ]; then
			ok "sm/fabric line3: sminfo (our SM master, LID 1), ibroute of S1 (6 LIDs), ibtracert H1-S1-S2-S3-H3 and H3 -> H2"
		else
			not_ok "sm/fabric line3" "failed: ${checks[*]}"
		fi
		# SL2VL and VLArb (sm/qos.c) once SUBNET UP: SL s -> VL s mod 8
		# (OperationalVLs VL0-7), VL15 never; low table every data VL
		# weight 64, high VL0 weight 4: on H1 (CA, LID 1) and S2 (LID 3)
		# output port 2, every input port
		qos=()
		for _ in $(seq 1 50); do
			grep -q 'SL2VL and VLArbitration set' "$(sof_out sm)" && break
			sleep 0.1
		done
		ident='| 0| 1| 2| 3| 4| 5| 6| 7| 0| 1| 2| 3| 4| 5| 6| 7|'
		sim smpquery sl2vl 1 >"$SOF_TMP/sl2vl1"
		sim smpquery sl2vl 3 2 >"$SOF_TMP/sl2vl3"
		sim smpquery vlarb 3 2 >"$SOF_TMP/vlarb3"
		grep -qF "in  0, out  0: $ident" "$SOF_TMP/sl2vl1" || qos+=("sl2vl H1")
		[ "$(grep -cF "out  2: $ident" "$SOF_TMP/sl2vl3")" = "$(grep -c '^ports: in' "$SOF_TMP/sl2vl3")" ] &&
			[ "$(grep -c '^ports: in' "$SOF_TMP/sl2vl3")" -ge 4 ] || qos+=("sl2vl S2")
		[ "$(grep -c '^WEIGHT: |0x40|0x40|0x40|0x40|0x40|0x40|0x40|0x40|' "$SOF_TMP/vlarb3")" = 1 ] &&
			grep -q '^WEIGHT: |0x4 |0x0 |0x0 |0x0 |0x0 |0x0 |0x0 |0x0 |' "$SOF_TMP/vlarb3" &&
			grep -q '^VL    : |0x0 |0x1 |0x2 |0x3 |0x4 |0x5 |0x6 |0x7 |' "$SOF_TMP/vlarb3" || qos+=("vlarb S2")
		if [ ${#qos[@]} -eq 0 ]; then
			ok "sm/fabric line3 QoS: smpquery sl2vl shows SL s -> VL s mod 8 on H1 and on S2 port 2 from all $(grep -c '^ports: in' "$SOF_TMP/sl2vl3") input ports, vlarb low every VL0-7 weight 64, high VL0 weight 4 ($(sed -n 's/.*\(SL2VL and VLArbitration set on .*\)/\1/p' "$(sof_out sm)" | head -n 1))"
		else
			not_ok "sm/fabric line3 QoS" "failed: ${qos[*]}"
			sof_dump "$SOF_TMP/sl2vl1" "$SOF_TMP/sl2vl3" "$SOF_TMP/vlarb3"
		fi
		# a cut link: trap 128, heavy sweep, Active again
		fabric link S2 3 down >"$OUT" 2>&1
		sleep 1
		down=$(sim iblinkinfo | grep -c 'Down/ *Polling)==>.*"S3"\|Down/ *Polling')
		fabric link S2 3 up >"$OUT" 2>&1
		back=no
		for _ in $(seq 1 100); do
			sim smpquery portinfo 3 3 | grep -q 'LinkState:.*Active' && back=yes && break
			sleep 0.1
		done
		if [ "$down" -gt 0 ] && [ $back = yes ] && trace_ok 1 6 H3 && grep -q 'trap 128' "$(sof_out sm)"; then
			ok "sm/fabric line3 cut: S2[3] Down while cut; restored, trap 128 and our sweep made it Active and H1 -> H3 routes again"
		else
			not_ok "sm/fabric line3 cut" "down lines $down, back $back, traps $(grep -c 'trap' "$(sof_out sm)")"
			sof_dump "$(sof_out sm)"
		fi
		# restart with LIDs from the file: H3 (port GUID 0x100005) to 37
		sof_kill sm
		h2=$(grep -i '^0x0000000000100003 ' "$g2l" | cut -d' ' -f2)
		sed -i 's/^0x0000000000100005 .*/0x0000000000100005 0x0025 0x0025/' "$g2l"
		fabric down >"$OUT" 2>&1
		fabric up "$file" --ibsim >"$OUT" 2>&1
		if sm_up "fabric line3 restart" --guid2lid "$g2l"; then
			sim smpquery portinfo 37 1 >"$SOF_TMP/pi37"
			sim smpquery nodedesc 37 >"$SOF_TMP/nd37"
			sim smpquery nodedesc "$((h2))" >"$SOF_TMP/nd4"
			if grep -q 'LinkState:.*Active' "$SOF_TMP/pi37" && grep -q 'H3' "$SOF_TMP/nd37" &&
				grep -q 'H2' "$SOF_TMP/nd4" && trace_ok 1 37 H3; then
				ok "sm/fabric line3 guid2lid: after a restart H3 has LID 37 as the file says, H2 keeps LID $((h2)), H1 -> H3 routed"
			else
				not_ok "sm/fabric line3 guid2lid" "$(tr '\n' ' ' <"$SOF_TMP/nd37") / $(tr '\n' ' ' <"$SOF_TMP/nd4") / $(tr '\n' ' ' <"$g2l")"
			fi
		fi
		;;
	ft128)
		checks=()
		for p in "H0_0 H7_15" "H7_15 H0_0" "H3_4 H5_9" "H5_9 H3_4"; do
			# shellcheck disable=SC2086 # two names
			set -- $p
			a=$(lid_of "$1") b=$(lid_of "$2")
			trace_ok "$a" "$b" "$2" || checks+=("ibtracert $1 ($a) -> $2 ($b)")
		done
		if [ ${#checks[@]} -eq 0 ]; then
			ok "sm/fabric ft128: ibtracert across the tree (H0_0 <-> H7_15, H3_4 <-> H5_9)"
		else
			not_ok "sm/fabric ft128" "failed: ${checks[*]}"
		fi
		# a cut spine link: trap 128, a heavy sweep, routes around it,
		# only the LFT blocks that changed written; back up: Active again
		a=$(lid_of H0_0) b=$(lid_of H7_15)
		fabric link Leaf0 17 down >"$OUT" 2>&1
		# 30 s: a cut during the first sweep's QoS Sets leaves those
		# on the cut path to time out before the second sweep runs
		for _ in $(seq 1 300); do
			grep -q 'sweep 2 programming' "$(sof_out sm)" && break
			sleep 0.1
		done
		first=$(sed -n 's/.*sweep 1 programming: .*, \([0-9]*\) LFT blocks/\1/p' "$(sof_out sm)")
		again=$(sed -n 's/.*sweep 2 programming: .*, \([0-9]*\) LFT blocks/\1/p' "$(sof_out sm)")
		sleep 0.5
		routed=no
		trace_ok "$a" "$b" H7_15 && trace_ok "$b" "$a" H0_0 && routed=yes
		fabric link Leaf0 17 up >"$OUT" 2>&1
		back=no
		for _ in $(seq 1 100); do
			grep -q 'sweep 3 programming' "$(sof_out sm)" && all_active >/dev/null && back=yes && break
			sleep 0.1
		done
		if [ -n "$again" ] && [ -n "$first" ] && [ "$again" -gt 0 ] && [ "$again" -lt "$first" ] &&
			[ $routed = yes ] && [ $back = yes ]; then
			ok "sm/fabric ft128 cut: Leaf0[17] cut, trap 128 and a sweep rerouted H0_0 <-> H7_15 writing $again of the first sweep's $first LFT blocks; restored, all ports Active again"
		else
			not_ok "sm/fabric ft128 cut" "LFT blocks $first then $again, routed $routed, active $(all_active)"
			sof_dump "$(sof_out sm)"
		fi
		# LMC 2: base LIDs multiples of 4, the last LID of a range routed
		sof_kill sm
		fabric down >"$OUT" 2>&1
		fabric up "$file" --ibsim >"$OUT" 2>&1
		# ... with a window of 256 SMPs: the fabric's answers wait for
		# room in the SM's socket (10 datagrams) rather than being lost
		if sm_up "fabric ft128 lmc" --lmc 2 --window 256; then
			to=$(sed -n 's/.*SUBNET UP in .* SMPs (\([0-9]*\) timed out).*/\1/p' "$(sof_out sm)" | head -n 1)
			if [ "$to" = 0 ]; then
				ok "sm/fabric ft128 window 256: no SMP timed out (the simulator waits for room in the client's socket)"
			else
				not_ok "sm/fabric ft128 window 256" "'${to:-?}' SMPs timed out (answers lost at the client's socket)"
			fi
			same_topo "$file"
			n=$(grep -c '^\[1\](.*# lid [0-9]* lmc 2 ' "$SOF_TMP/ibnd")
			bad=$(sed -n 's/^\[1\](.*# lid \([0-9]*\) lmc 2 .*/\1/p' "$SOF_TMP/ibnd" | awk '$1 % 4' | wc -l)
			a=$(lid_of H0_0) b=$(lid_of H7_15)
			if [ "$n" = 128 ] && [ "$bad" = 0 ] && all_active >/dev/null && [ -n "$b" ] &&
				trace_ok "$a" "$((b + 3))" H7_15 && trace_ok "$((b + 1))" "$((a + 2))" H0_0; then
				ok "sm/fabric ft128 LMC 2: SUBNET UP in $(up_ms) ms, 128 CA ports with LMC 2 and base LIDs multiples of 4, all Active, H0_0 -> H7_15's LID $((b + 3)) and back routed"
			else
				not_ok "sm/fabric ft128 LMC 2" "$n ports with lmc 2, $bad unaligned, lids $a $b"
			fi
		fi
		;;
	esac
	sof_kill sm
	fabric down >"$OUT" 2>&1
done

# Handover on line3 (IBA 14.4.1), both ways with OpenSM (its standby
# polls the master every 500 ms, 2 tries, by a config file of its own):
#   A: OpenSM master in H1, ours started in H2 goes STANDBY; OpenSM killed,
#      ours takes over: SUBNET UP, sminfo names it, H3 keeps its LID;
#   B: ours master in H1, OpenSM in H2 goes STANDBY; ours killed, OpenSM
#      takes over: MASTER, sminfo names it, H3 keeps its LID.
file=$TOPO/line3.net
mkdir -p "$SOF_TMP/ho" && cd "$SOF_TMP/ho" || exit 1
export OSM_CACHE_DIR=$SOF_TMP/ho OSM_TMP_DIR=$SOF_TMP/ho
printf 'sminfo_polling_timeout 500\npolling_retry_number 2\n' >osm.conf
DIAG_HOST=H3
# h3_lid: H3's LID (port GUID 0x100005) from smpquery by node description
h3_lid() {
	sim ibnetdiscover >"$SOF_TMP/ibnd"
	lid_of H3
}
fabric up "$file" --ibsim >"$OUT" 2>&1
sof_bg osm 120 env LD_PRELOAD="$UMAD2SIM" SIM_HOST=H1 opensm -F "$SOF_TMP/ho/osm.conf" -d 2 -f "$SOF_TMP/ho/osm.log"
if sof_wait_log "$SOF_TMP/ho/osm.log" 'SUBNET UP' 30; then
	before=$(h3_lid)
	sof_bg sm 120 env LD_PRELOAD="$UMAD2SIM" SIM_HOST=H2 "$SM" -v -p 1
	if sof_wait_log "$(sof_out sm)" 'STANDBY: the master SM is 0x100001' 15; then
		sof_kill osm
		if sof_wait_log "$(sof_out sm)" 'SUBNET UP' 20 && sim sminfo | grep -q 'sm guid 0x100003, .*SMINFO_MASTER' &&
			[ "$(h3_lid)" = "$before" ] && trace_ok 1 "$before" H3; then
			ok "sm/handover from OpenSM: ours STANDBY behind OpenSM's master, took over when it was killed (SUBNET UP $(sed -n 's/.*SUBNET UP in \([0-9]*\) ms.*/\1/p' "$(sof_out sm)") ms after its start), sminfo names ours, H3 kept LID $before and is routed"
		else
			not_ok "sm/handover from OpenSM" "no take-over: H3 LID $before -> $(h3_lid); $(sim sminfo)"
			sof_dump "$(sof_out sm)"
		fi
	else
		not_ok "sm/handover from OpenSM" "ours did not go STANDBY"
		sof_dump "$(sof_out sm)"
	fi
else
	not_ok "sm/handover from OpenSM" "OpenSM: no SUBNET UP"
fi
sof_kill sm
sof_kill osm
fabric down >"$OUT" 2>&1
rm -f guid2lid "$SOF_TMP/ho/osm.log"
fabric up "$file" --ibsim >"$OUT" 2>&1
if sm_up "handover to OpenSM" -v; then
	before=$(h3_lid)
	sof_bg osm 120 env LD_PRELOAD="$UMAD2SIM" SIM_HOST=H2 opensm -F "$SOF_TMP/ho/osm.conf" -p 0 -d 2 -f "$SOF_TMP/ho/osm.log"
	if sof_wait_log "$SOF_TMP/ho/osm.log" 'Entering STANDBY state' 20; then
		sof_kill sm
		if sof_wait_log "$SOF_TMP/ho/osm.log" 'Entering MASTER state' 20 && sof_wait_log "$SOF_TMP/ho/osm.log" 'SUBNET UP' 10 &&
			sim sminfo | grep -q 'sm guid 0x100003, .*SMINFO_MASTER' && [ "$(h3_lid)" = "$before" ] &&
			trace_ok 1 "$before" H3; then
			ok "sm/handover to OpenSM: OpenSM STANDBY behind ours, took over when ours was killed, sminfo names it, H3 kept LID $before and is routed"
		else
			not_ok "sm/handover to OpenSM" "no take-over: H3 LID $before -> $(h3_lid); $(sim sminfo)"
			sof_dump "$SOF_TMP/ho/osm.log"
		fi
	else
		not_ok "sm/handover to OpenSM" "OpenSM did not go STANDBY"
		sof_dump "$SOF_TMP/ho/osm.log"
	fi
fi
sof_kill sm
sof_kill osm
fabric down >"$OUT" 2>&1
DIAG_HOST=""

# --routing ftree: ft128 is a fat tree (up/down routes, all Active, hosts
# reach each other); line3 is not (the SM says so and routes min-hop)
for name in ft128 line3; do
	mkdir -p "$SOF_TMP/ft.$name" && cd "$SOF_TMP/ft.$name" || exit 1
	fabric up "$TOPO/$name.net" --ibsim >"$OUT" 2>&1
	if sm_up "ftree $name" --routing ftree; then
		same_topo "$TOPO/$name.net"
		case $name in
		ft128) a=$(lid_of H0_0) b=$(lid_of H7_15) want=H7_15 expect=no ;;
		line3) a=$(lid_of H1) b=$(lid_of H3) want=H3 expect=yes ;;
		esac
		fell=no
		grep -q 'not a fat tree: routing min-hop' "$(sof_out sm)" && fell=yes
		if all_active >/dev/null && trace_ok "$a" "$b" "$want" && [ "$fell" = "$expect" ]; then
			ok "sm/fabric ftree $name: all Active, $want routed; fell back to min-hop: $fell"
		else
			not_ok "sm/fabric ftree $name" "fell back: $fell, active $(all_active)"
			sof_dump "$(sof_out sm)"
		fi
	fi
	sof_kill sm
	fabric down >"$OUT" 2>&1
done

# ibsim itself: its console reads a FIFO we hold open
for name in pair line3 ft128 ft648 ft1152; do
	file=$TOPO/$name.net
	mkdir -p "$SOF_TMP/sim.$name" && cd "$SOF_TMP/sim.$name" || exit 1
	rm -f in && mkfifo in
	exec 7<>in # held open (read-write: no wait for a reader), so ibsim's console never ends
	timeout -k 5 120 ibsim -s "$file" <in >"$(sof_out ibsim)" 2>&1 &
	SOF_PID[ibsim]=$!
	# its client socket bound: the topology read
	for _ in $(seq 1 200); do
		grep -q '@sim:ctl' /proc/net/unix 2>/dev/null && break
		sleep 0.05
	done
	sleep 0.2
	if sm_up "ibsim $name"; then
		nodes=$(sim ibnetdiscover | grep -c '^\(Switch\|Ca\)')
		want=$(grep -c '^\(Switch\|Hca\)' "$file")
		if act=$(all_active) && [ "$nodes" = "$want" ]; then
			ok "sm/ibsim $name: SUBNET UP in $(up_ms) ms on ibsim; $act ports Active in iblinkinfo; ibnetdiscover finds $nodes nodes"
		else
			not_ok "sm/ibsim $name" "Active: $act; $nodes nodes of $want"
			sof_dump "$(sof_out sm)"
		fi
	fi
	sof_kill sm
	exec 7>&-
	sof_kill ibsim
done
sof_exit
