#!/bin/bash
# libibumad between two hosts over RoCEv2 (issue 19, items 3 and 4): the
# MAD services of each host's daemon through our libibumad.so.3, with
# tests/progs/umad_vendor (vendor class 0x31 with an OUI, GRH addressing
# by umad_set_grh):
#   - server in host a, client in host b: Gets answered and matched by
#     TID, data checked; an RMPP response and an RMPP request of 3000
#     bytes (14 segments), then of 200000 bytes (926), checked byte by
#     byte; a request nobody answers comes back with status ETIMEDOUT; a
#     Get of a class nobody serves comes back "unsupported"; both counted
#     as dropped MADs; SMP agents refused (RoCE: no QP0);
#   - the same within host a (MADs between agents of one daemon);
#   - two clients at once, root and user nobody, through the same
#     daemon: each gets only its own responses (a MAD of another
#     transaction fails it); nobody's SMP agent is refused with EACCES;
#   - a program killed (SIGKILL) while it holds agents and a request
#     waiting: `softofed status` shows its port, agents and MAD before,
#     nothing after;
#   - infiniband-diags' ibstat; the MAD files under softofed run;
#   - QP redirection: Gets of a class redirected (status redirect and a
#     ClassPortInfo) to a UD QP of the server, answered from there.
# Needs root (ip netns).
# Usage: tests/hosts/umad.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_init

if ! sof_hosts_up 2; then
	not_ok "hosts/umad: set-up" "two hosts did not come up"
	exit 0
fi
GA="::ffff:$(sof_host_ip a)"
NB="setpriv --reuid=nobody --regid=nogroup --clear-groups"
UV=$SOF_PROGS/umad_vendor

# resource NAME HOST: one value of the "resources:" line of HOST's daemon
resource() {
	sof_resources "$2" | awk -v k="$1" '$1 == k { print $2 }'
}

# pair NAME SRV_HOST CLI_HOST SGID_INDEX REQUESTS CLIENT-PREFIX...
pair() {
	local name=$1 srv=$2 cli=$3 idx=$4 nreq=$5 src crc
	shift 5
	sof_host_bg "$name.srv" "$srv" 60 "$SOFTOFED" run -- "$UV" server -n "$nreq" -T 50
	for _ in $(seq 100); do
		grep -q 'server listening' "$(sof_out "$name.srv")" 2>/dev/null && break
		sleep 0.05
	done
	sof_host_bg "$name.cli" "$cli" 60 "$@" "$SOFTOFED" run -- "$UV" client -g "$GA" -i "$idx" -n 10 \
		-r "${RLEN:-3000}"
	sof_wait "$name.cli" 60
	crc=$?
	sof_wait "$name.srv" 60
	src=$?
	if [ $crc -eq 0 ] && [ $src -eq 0 ] && grep -q '^client ok' "$(sof_out "$name.cli")" &&
		grep -q "^server answered $nreq requests" "$(sof_out "$name.srv")"; then
		ok "hosts/umad: $name: $(grep '^client ok' "$(sof_out "$name.cli")" | sed 's/^client ok: //')"
	else
		not_ok "hosts/umad: $name" "exit status server $src, client $crc"
		sof_dump "$(sof_out "$name.srv")" "$(sof_out "$name.cli")"
	fi
}

IB=$(sof_host_gid b) || IB=0
IA=$(sof_host_gid a) || IA=0
mad_drops=$(sof_counter a drops.mad)
pair "a to b, vendor MADs, RMPP, time-out" a b "$IB" 12
# the request nobody takes (a Send of class 0x32) and the Get nobody
# serves were dropped and counted at host a (the Get also answered)
if grown=$(sof_counter_since a drops.mad "$mad_drops") && [ "$grown" -ge 2 ]; then
	ok "hosts/umad: MADs no agent takes are dropped and counted (drops.mad +$grown at host a)"
else
	not_ok "hosts/umad: MADs no agent takes" "drops.mad grew by '${grown:-}' at host a"
fi
if grep -q 'SMP agents refused (Protocol not supported)' "$(sof_out "a to b, vendor MADs, RMPP, time-out.cli")"; then
	ok "hosts/umad: an SMP agent on a RoCE port is refused (EPROTONOSUPPORT, umad_register -EPERM)"
else
	not_ok "hosts/umad: an SMP agent on a RoCE port" "not refused as the kernel does"
fi
pair "within host a" a a "$IA" 12
# a long RMPP message both ways: 200000 bytes, 926 segments (the request
# too long for one control record travels in a memfd)
RLEN=200000 pair "a to b, RMPP of 200000 bytes both ways" a b "$IB" 12

# two users at once
name="root and nobody at once"
sof_host_bg "$name.srv" a 60 "$SOFTOFED" run -- "$UV" server -n 24 -T 50
sleep 0.3
# (by its real path: the ASan run's build folder is root's alone)
# shellcheck disable=SC2086 # NB is words
sof_host_bg "$name.nb" b 60 $NB "$SOFTOFED" run -- "$(readlink -f "$UV")" client -g "$GA" \
	-i "$IB" -n 10
sof_host_bg "$name.root" b 60 "$SOFTOFED" run -- "$UV" client -g "$GA" -i "$IB" -n 10
sof_wait "$name.nb" 60
nrc=$?
sof_wait "$name.root" 60
rrc=$?
sof_wait "$name.srv" 60
src=$?
if [ $nrc -eq 0 ] && [ $rrc -eq 0 ] && [ $src -eq 0 ] &&
	grep -q 'SMP agents refused (Permission denied)' "$(sof_out "$name.nb")"; then
	ok "hosts/umad: $name: each got its own responses only; nobody's SMP agent refused (EACCES)"
else
	not_ok "hosts/umad: $name" "exit status nobody $nrc, root $rrc, server $src"
	sof_dump "$(sof_out "$name.nb")" "$(sof_out "$name.root")" "$(sof_out "$name.srv")"
fi

# a program killed while it holds agents
name="killed holder"
sof_host_bg "$name" b 60 "$SOFTOFED" run -- "$UV" hold -g "$GA" -i "$IB"
pid=
for _ in $(seq 100); do
	pid=$(sed -n 's/^holding pid \([0-9]*\)$/\1/p' "$(sof_out "$name")")
	[ -n "$pid" ] && break
	sleep 0.05
done
before="ports $(resource umad_ports b) agents $(resource umad_agents b) mads $(resource mads b)"
[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
sof_wait "$name" 10
after=""
for _ in $(seq 50); do
	after="ports $(resource umad_ports b) agents $(resource umad_agents b) mads $(resource mads b)"
	[ "$after" = "ports 0 agents 0 mads 0" ] && break
	sleep 0.1
done
if [ -n "$pid" ] && [ "$before" = "ports 1 agents 2 mads 1" ] && [ "$after" = "ports 0 agents 0 mads 0" ]; then
	ok "hosts/umad: a program killed while it holds agents leaves nothing ($before before)"
else
	not_ok "hosts/umad: $name" "pid '$pid'; before: $before; after: $after"
	sof_dump "$(sof_out "$name")"
fi

# infiniband-diags' ibstat (libibumad's CA and port queries) on host a
out=$SOF_TMP/ibstat.out
sof_host_run a "$SOFTOFED" run -- ibstat >"$out" 2>&1 </dev/null
rc=$?
guids=$(sof_host_run a "$SOFTOFED" run -- ibstat -p 2>/dev/null </dev/null)
if [ $rc -eq 0 ] && grep -q "^CA 'sof0'" "$out" && grep -q 'State: Active' "$out" &&
	grep -q 'Physical state: LinkUp' "$out" && grep -q 'Link layer: Ethernet' "$out" &&
	grep -q 'Number of ports: 1' "$out" && [ -n "$guids" ] &&
	grep -q "Port GUID: $guids" "$out"; then
	ok "hosts/umad: ibstat (infiniband-diags) shows sof0, port 1 Active, Ethernet, GUID $guids"
else
	not_ok "hosts/umad: ibstat" "exit status $rc"
	sof_dump "$out"
fi

# the port's MAD files under softofed run (rdma-core's tools and OpenSM
# look there): abi_version 5, umad0 and issm0 of sof0 port 1, the nodes
out=$SOF_TMP/mad_files.out
sof_host_run a "$SOFTOFED" run -- sh -c 'cat /sys/class/infiniband_mad/abi_version \
	/sys/class/infiniband_mad/umad0/ibdev /sys/class/infiniband_mad/umad0/port \
	/sys/class/infiniband_mad/issm0/ibdev /sys/class/infiniband_mad/issm0/port &&
	test -c /dev/infiniband/umad0 && test -c /dev/infiniband/issm0 && echo nodes' \
	>"$out" 2>&1 </dev/null
if [ "$(tr '\n' ' ' <"$out")" = "5 sof0 1 sof0 1 nodes " ]; then
	ok "hosts/umad: softofed run shows /sys/class/infiniband_mad (abi_version 5, umad0 and issm0 of sof0 port 1) and /dev/infiniband/umad0, issm0"
else
	not_ok "hosts/umad: /sys/class/infiniband_mad under softofed run" "$(tr '\n' ' ' <"$out")"
fi

# QP redirection (IBA 13.5.3.3): the server answers class 0x31 on QP1
# with "redirect" and a ClassPortInfo naming a UD QP of its own; the
# client sends its Gets there and the QP answers them to the client's QP1
name="redirect to a UD QP"
sof_host_bg "$name.srv" a 60 "$SOFTOFED" run -- "$UV" redirect -T 20
for _ in $(seq 100); do
	grep -q 'server listening' "$(sof_out "$name.srv")" 2>/dev/null && break
	sleep 0.05
done
sof_host_bg "$name.cli" b 60 "$SOFTOFED" run -- "$UV" client -D -g "$GA" -i "$IB" -n 10
sof_wait "$name.cli" 60
crc=$?
sof_wait "$name.srv" 60
if [ $crc -eq 0 ] && grep -q '^client ok' "$(sof_out "$name.cli")" &&
	grep -q '^redirect server answered 10 Gets on QP' "$(sof_out "$name.srv")"; then
	ok "hosts/umad: $name: $(grep '^client: redirected' "$(sof_out "$name.cli")" | sed 's/^client: //'); 10 Gets answered there, data checked"
else
	not_ok "hosts/umad: $name" "client exit status $crc"
	sof_dump "$(sof_out "$name.srv")" "$(sof_out "$name.cli")"
fi
