#!/bin/bash
# softofed-sm's SA (issue 20, item 4) queried by Debian's unmodified
# saquery, compared with OpenSM's SA on the same fabric: hosts a, b, c as
# network namespaces with InfiniBand ports (sofib0) on the fabric process
# (tests/topologies/line3.net: H1 (a) - S1 - S2 - S3 - H3 (c), H2 (b) on
# S2), the SM in a under `softofed run` (libibumad ours, RMPP by the
# daemon's MAD layer), saquery in b. First our SM, then OpenSM (on the
# fabric as ours left it), each answering:
#
#   cpi    saquery -c: ClassPortInfo, class version 2
#   NR     a NodeRecord per node (6), a's GUID among them; NR by c's LID
#   PIR    the PortInfoRecords: each CA port once, every switch port (30);
#          c's Active
#   LR     LinkRecords: the 5 cables both ways (10)
#   SWIR   3 switches; LFTR: the LFT blocks, each host's LID routed
#   GIR    GUIDInfoRecords of the 6 nodes; PKTR of c (with OpenSM's SA key,
#          which it wants for them): P_Key 0xffff
#   SMIR   the master at a's LID; MCMR/-g: the IPoIB broadcast group
#   SR, IIR, MFTR  answered (empty tables are answers)
#   PR     saquery -p --src-to-dst a:c and c:a: SLID, DLID, MTU, rate
#   umad   (ours only) tests/progs/umad_sa from b: GetMulti(MultiPath-
#          Record), ServiceRecord Set/Get/Delete, MCMemberRecord join
#          (MGID assigned), a refused join and leave, InformInfo
#          subscribe/list/unsubscribe, a bad mask, a request of two RMPP
#          segments (the SM reads it without stalling its loop)
#   rate   2000 PathRecord Gets by GIDs from b, one at a time, against each
#          SA (the rates are printed, both must answer them all)
#   report (ours only) umad_sa -w in b subscribes to every trap; S2's
#          link to S3 cut and restored: the SM's SA reports S2's trap 128
#          (and the SA's own traps) to b, which answers each Report
#
# then the same queries against OpenSM, and the answers must be the same
# (NodeRecords, LinkRecords, SwitchInfoRecords, SMInfoRecord, both
# PathRecords field by field, the broadcast group), LIDs compared as the
# node GUIDs they name since the two SMs may number ports differently.
#
# Needs root (ip netns). Usage: tests/hosts/sa.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_init

TOPO=${SOF_TOPOLOGIES:-$SOF_ROOT/tests/topologies}/line3.net
FABRIC=$(dirname "$SOFTOFED")/softofed-fabric
SM=$(dirname "$SOFTOFED")/softofed-sm
# run.sh's ASan mix has the daemon and the tool only: the plain build's
[ -x "$FABRIC" ] || FABRIC=$SOF_ROOT/build/bin/softofed-fabric
[ -x "$SM" ] || SM=$SOF_ROOT/build/bin/softofed-sm
PORT=7473
if [ ! -x "$SM" ] || ! command -v saquery >/dev/null || ! command -v opensm >/dev/null; then
	not_ok "sa: programs" "$SM, saquery (infiniband-diags) or opensm missing"
	sof_exit
fi
SOF_HOST_UP_ARGS[a]="--ib-fabric $(sof_host_ip a):$PORT --ib-node H1"
SOF_HOST_UP_ARGS[b]="--ib-fabric $(sof_host_ip a):$PORT --ib-node H2"
SOF_HOST_UP_ARGS[c]="--ib-fabric $(sof_host_ip a):$PORT --ib-node H3"
sof_hosts_up 3 || sof_exit

ibline() {
	sof_host_run "$1" "$SOFTOFED" status 2>/dev/null </dev/null | grep '^device sofib0'
}
iblid() {
	ibline "$1" | sed -n 's/.* lid \([0-9]*\) .*/\1/p'
}
all_in() {
	local h
	for h in a b c; do
		ibline "$h" | grep -q "port 1 $1" || return 1
	done
}
# sq OUT ARGS...: saquery in b under softofed run
sq() {
	local out=$1
	shift
	sof_host_run b "$SOFTOFED" run -- timeout 20 saquery -C sofib0 "$@" >"$out" 2>&1 </dev/null
}

# saquery's output as records: '<Kind> dump:' blocks of 'key....value'
# lines. A table shorter than a MAD comes back padded with records of
# zeros (from OpenSM's SA alike), so a record counts when its first field
# (a PathRecord's DLID) is not zero. `recs.py count FILE KIND`: how many;
# `recs.py compare OURS THEIRS`: NodeRecords, LinkRecords, SwitchInfoRecords, SMInfoRecord and
# the PathRecords of both runs, LIDs replaced by the node GUIDs the
# NodeRecords give them (the two SMs may number the ports differently).
RECS=$SOF_TMP/recs.py
cat >"$RECS" <<'PY'
import re, sys
ZERO = {'', '0', '0x0', '::', '0x0000000000000000', '0x0000'}
def recs(path, kind=None):
    out, cur = [], None
    for line in open(path, errors='replace').read().splitlines():
        m = re.match(r'^(\S.*) dump:$', line)
        if m:
            cur = None
            if kind is None or m.group(1) == kind:
                cur = {'_kind': m.group(1)}
                out.append(cur)
            continue
        m = re.match(r'^\s+([A-Za-z_][\w /]*?):?\.{2,}:?(.*)$', line)
        if m and cur is not None:
            cur.setdefault(m.group(1).strip(), m.group(2).strip())
    # the field that is never zero in a real record of each kind
    key = {'PathRecord': 'dlid', 'ServiceRecord': 'ServiceGID'}
    return [r for r in out if len(r) > 1 and
            r.get(key.get(r['_kind'], ''), list(r.values())[1]) not in ZERO]
if sys.argv[1] == 'count':
    print(len(recs(sys.argv[2], sys.argv[3])))
    sys.exit(0)
ours, theirs = sys.argv[2], sys.argv[3]
def view(d):
    nr = recs(d + '/nr', 'NodeRecord')
    node = {r['lid']: r['node_guid'] for r in nr}
    lid = lambda l: node.get(l, 'lid' + l)
    v = {}
    v['NodeRecords'] = sorted((r['node_guid'], r['port_guid'], r['node_type'], r['num_ports'],
                               r['NodeDescription']) for r in nr)
    v['LinkRecords'] = sorted((lid(r['FromLID']), r['FromPort'], r['ToPort'], lid(r['ToLID']))
                              for r in recs(d + '/lr', 'LinkRecord'))
    v['SwitchInfoRecords'] = sorted((lid(r['LID']), r['LinearFDBCap'], r['MulticastFDBCap'])
                                    for r in recs(d + '/swir', 'SwitchInfoRecord'))
    v['SMInfoRecord'] = sorted((lid(r['LID']), r['GUID'], r['SMState'])
                               for r in recs(d + '/smir', 'SMInfoRecord'))
    for f in ('pr_ac', 'pr_ca'):
        v[f] = sorted((r['dgid'], r['sgid'], lid(r['dlid']), lid(r['slid']), r['num_path_revers'],
                       r['pkey'], r['mtu'], r['rate'], r['pkt_life'])
                      for r in recs(d + '/' + f, 'PathRecord'))
    v['MCMR'] = sorted(tuple(sorted(r.items())) for r in recs(d + '/mcmr'))
    return v
a, b = view(ours), view(theirs)
diff = ['%s: ours %s opensm %s' % (k, a[k], b[k]) for k in a if a[k] != b[k] or not a[k]]
print('same' if not diff else ' | '.join(diff))
PY
# n FILE KIND: records of that kind in saquery's output
n() {
	python3 "$RECS" count "$1" "$2"
}

sof_host_bg sa.fabric a 400 "$FABRIC" "$TOPO" --listen "$(sof_host_ip a):$PORT" --real H1,H2,H3
for _ in $(seq 100); do
	all_in INIT && break
	sleep 0.1
done
if ! all_in INIT; then
	not_ok "sa: attach" "$(ibline a) / $(ibline b) / $(ibline c)"
	sof_dump "$(sof_out sa.fabric)"
	sof_exit
fi
fab=$SOF_TMP/sa.fabric.v
sof_host_run a "$SOFTOFED" fabric status -v >"$fab" 2>&1 </dev/null
aguid=$(sed -n 's/^Hca "H1" 1 guid \(0x[0-9a-f]*\).*/\1/p' "$fab")

# queries WHO DIR: every query into DIR, checked; "ok" lines name WHO
queries() {
	local who=$1 d=$2 la lb lc bad=()
	mkdir -p "$d"
	la=$(iblid a) lb=$(iblid b) lc=$(iblid c)
	sq "$d/cpi" -c
	grep -q 'Class version\.*2$' "$d/cpi" || bad+=("cpi")
	sq "$d/nr" NR
	[ "$(n "$d/nr" NodeRecord)" = 6 ] && grep -q "$aguid" "$d/nr" || bad+=("NR ($(n "$d/nr" NodeRecord))")
	sq "$d/nr_c" NR "$lc"
	grep -q 'NodeDescription.*H3' "$d/nr_c" || bad+=("NR $lc")
	sq "$d/pir" PIR
	# the CA ports once each, every port of each switch (0..8)
	for l in $la $lb $lc; do
		[ "$(grep -c "EndPortLid\.*$l\$" "$d/pir")" = 1 ] || bad+=("PIR $l")
	done
	[ "$(n "$d/pir" PortInfoRecord)" = $((3 + 3 * 9)) ] || bad+=("PIR ($(n "$d/pir" PortInfoRecord))")
	sq "$d/pir_c" PIR "$lc"
	grep -q 'LinkState:\.*Active' "$d/pir_c" || bad+=("PIR $lc state")
	sq "$d/lr" LR
	[ "$(n "$d/lr" LinkRecord)" = 10 ] || bad+=("LR ($(n "$d/lr" LinkRecord))")
	sq "$d/swir" SWIR
	[ "$(n "$d/swir" SwitchInfoRecord)" = 3 ] || bad+=("SWIR ($(n "$d/swir" SwitchInfoRecord))")
	sq "$d/lftr" LFTR
	[ "$(n "$d/lftr" 'LFT Record')" -ge 3 ] || bad+=("LFTR ($(n "$d/lftr" 'LFT Record'))")
	sq "$d/gir" GIR
	[ "$(n "$d/gir" 'GUIDInfo Record')" = 6 ] || bad+=("GIR ($(n "$d/gir" 'GUIDInfo Record'))")
	# OpenSM answers P_KeyTableRecords to trusted requests (its default SA key 1)
	sq "$d/pktr" --smkey 1 PKTR "$lc"
	grep -q '^[[:space:]]*0xffff ' "$d/pktr" || bad+=("PKTR $lc")
	sq "$d/smir" SMIR
	[ "$(n "$d/smir" SMInfoRecord)" = 1 ] && grep -q "LID\.*$la\$" "$d/smir" || bad+=("SMIR")
	sq "$d/mcmr" -g
	grep -q 'MGID\.*ff12:401b:ffff::ffff:ffff' "$d/mcmr" || bad+=("MCMR")
	for q in SR IIR MFTR; do
		sq "$d/$q" "$q"
		grep -q -i 'error\|failed' "$d/$q" && bad+=("$q")
	done
	sq "$d/pr_ac" -p --src-to-dst "$la:$lc"
	grep -q "slid\.*$la\$" "$d/pr_ac" && grep -q "dlid\.*$lc\$" "$d/pr_ac" || bad+=("PR $la:$lc")
	sq "$d/pr_ca" -p --src-to-dst "$lc:$la"
	grep -q "slid\.*$lc\$" "$d/pr_ca" && grep -q "dlid\.*$la\$" "$d/pr_ca" || bad+=("PR $lc:$la")
	if [ ${#bad[@]} -eq 0 ]; then
		ok "sa/$who: saquery -c, NR (6), NR $lc, PIR (30), PIR $lc Active, LR (10), SWIR (3), LFTR, GIR (6), PKTR $lc, SMIR (LID $la), -g (IPoIB broadcast group), SR, IIR, MFTR, -p $la:$lc and $lc:$la"
	else
		not_ok "sa/$who" "saquery failed: ${bad[*]}"
		for f in "$d"/*; do
			head -c 600 "$f" | sed "s|^|#   ${f##*/}: |"
		done
	fi
}

# rate WHO: PathRecord Gets from b, one at a time (tests/progs/umad_sa -p)
rate() {
	local out=$SOF_TMP/rate.$1
	sof_host_run b "$SOFTOFED" run -- timeout 60 "$SOF_PROGS/umad_sa" -C sofib0 -s "$(iblid a)" -p 2000 \
		>"$out" 2>&1 </dev/null
	sed -n 's/^umad_sa ok: .*, \([0-9]*\)\/s$/\1/p' "$out"
}
ours_rate="" theirs_rate=""

# --- our SM ---------------------------------------------------------------------------
sof_host_bg sa.sm a 300 "$SOFTOFED" run -- "$SM" -C sofib0 -v
for _ in $(seq 300); do
	grep -q 'SUBNET UP' "$(sof_out sa.sm)" 2>/dev/null && all_in ACTIVE && break
	sleep 0.1
done
if grep -q 'SUBNET UP' "$(sof_out sa.sm)" && all_in ACTIVE; then
	ok "sa: softofed-sm SUBNET UP on a's sofib0 ($(sed -n 's/.*\(SUBNET UP in [0-9]* ms\).*/\1/p' "$(sof_out sa.sm)" | head -n 1))"
	queries softofed-sm "$SOF_TMP/ours"
	# what saquery cannot ask: GetMulti, Set/Delete, a two-segment request
	out=$SOF_TMP/umad_sa.out
	sof_host_run b "$SOFTOFED" run -- timeout 60 "$SOF_PROGS/umad_sa" -C sofib0 -s "$(iblid a)" -n 3 \
		>"$out" 2>&1 </dev/null
	if grep -q '^umad_sa ok' "$out" && sof_alive sa.sm; then
		ok "sa/softofed-sm: $(sed -n 's/^umad_sa ok: //p' "$out") (tests/progs/umad_sa from b; the SM still runs)"
	else
		not_ok "sa/softofed-sm: umad_sa" "$(tr '\n' ' ' <"$out" | cut -c1-600)"
	fi
	ours_rate=$(rate ours)
	# a subscriber in b; S2's link to S3 cut and restored: S2's trap 128
	# reaches the SM, whose SA reports it to b
	sof_host_bg sa.sub b 40 "$SOFTOFED" run -- "$SOF_PROGS/umad_sa" -C sofib0 -s "$(iblid a)" -w 30
	sub=$(sof_out sa.sub)
	for _ in $(seq 100); do
		grep -q '^subscribed' "$sub" 2>/dev/null && break
		sleep 0.1
	done
	sof_host_run a "$SOFTOFED" fabric link S2 3 down >/dev/null 2>&1 </dev/null
	sleep 1
	sof_host_run a "$SOFTOFED" fabric link S2 3 up >/dev/null 2>&1 </dev/null
	sof_wait sa.sub 40
	if grep -q '^umad_sa ok' "$sub"; then
		ok "sa/softofed-sm: InformInfo subscriber in b got the SA's Reports ($(grep -c '^report:' "$sub"): $(grep '^report:' "$sub" | cut -d' ' -f2-3 | sort -u | paste -sd, -)) for S2's link cut and restored, and answered them"
	else
		not_ok "sa/softofed-sm: reports" "$(tr '\n' ' ' <"$sub" | cut -c1-600)"
	fi
	for _ in $(seq 300); do
		all_in ACTIVE && break
		sleep 0.1
	done
else
	not_ok "sa: softofed-sm" "no SUBNET UP in 30 s"
	sof_dump "$(sof_out sa.sm)"
fi
sof_kill sa.sm

# --- OpenSM on the same fabric --------------------------------------------------------
guid=$(sof_host_run a "$SOFTOFED" run -- ibstat -p sofib0 2>/dev/null </dev/null | head -n 1)
smlog=$SOF_TMP/opensm.log
sof_host_bg sa.opensm a 200 "$SOFTOFED" run -- opensm -g "$guid" -f "$smlog" -d 0 -s 2 -D 0x87
for _ in $(seq 600); do
	grep -q 'SUBNET UP' "$smlog" 2>/dev/null && break
	sleep 0.1
done
if grep -q 'SUBNET UP' "$smlog" 2>/dev/null; then
	sleep 1
	queries opensm "$SOF_TMP/theirs"
	theirs_rate=$(rate opensm)
else
	not_ok "sa: opensm" "no SUBNET UP in 60 s"
fi
sof_kill sa.opensm

# --- the same answers ------------------------------------------------------------------
cmp=$(python3 "$RECS" compare "$SOF_TMP/ours" "$SOF_TMP/theirs" 2>&1)
if [ "$cmp" = same ]; then
	ok "sa: softofed-sm's and OpenSM's SA answer saquery alike: NodeRecords, LinkRecords, SwitchInfoRecords, SMInfoRecord (GUID, master), PathRecords a->c and c->a (GIDs, ends, P_Key, MTU, rate, lifetime), the broadcast group's MCMemberRecord"
else
	not_ok "sa: compared with OpenSM" "$cmp"
fi

if [ -n "$ours_rate" ] && [ -n "$theirs_rate" ]; then
	ok "sa: 2000 PathRecord Gets from b one at a time, every answer checked: softofed-sm $ours_rate/s, OpenSM $theirs_rate/s"
else
	not_ok "sa: PathRecord rate" "softofed-sm '$ours_rate', OpenSM '$theirs_rate'"
fi

# SOF_SA_KEEP=DIR: keep both sets of answers there
[ -n "${SOF_SA_KEEP:-}" ] && cp -r "$SOF_TMP/ours" "$SOF_TMP/theirs" "$SOF_SA_KEEP/" 2>/dev/null
sof_kill sa.fabric
sof_exit
