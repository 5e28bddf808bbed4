# shellcheck shell=bash
# tests/ib_fabric.sh — helpers of the InfiniBand fabric tests (issue 19),
# sourced after lib.sh by hosts/opensm_*.sh and hosts/ibfabric_*.sh (and,
# for the simulated fabric's sof_sim_* at the end, integration/fabric_*.sh).
#
#   sof_ibf_up TOPO REAL NH   hosts a.. (NH of them, 2 or 3), each daemon's
#                         sofib0 attached to softofed-fabric (in a, from
#                         tests/topologies/TOPO.net, the HCAs named in REAL
#                         real and hosts a, b, c in that order: "H1,H2"), then Debian's OpenSM in a under
#                         `softofed run` on a's sofib0 until SUBNET UP; an ok
#                         line for each step, 1 (after not_ok) when one fails.
#                         Sets IBF_HOSTS ("a b [c]"), IBF_FAB (the fabric's
#                         `status -v`), IBF_SMLOG (OpenSM's log).
#                         SOF_IBF_SM_ARGS: more OpenSM options;
#                         SOF_IBF_SM=softofed: our softofed-sm (`softofed sm
#                         -v`) instead, its stderr as IBF_SMLOG; a function
#                         ibf_before_sm, when the script defines one, runs
#                         once the ports are attached, before OpenSM.
#   sof_ibf_attach NAME TOPO REAL NH  sof_ibf_up's attach step alone (no
#                         ok line; not_ok "NAME: attach" and 1 on failure)
#   sof_ibf_line H        the "device sofib0" line of H's `softofed status`
#   sof_ibf_lid H         the LID of H's sofib0
#   sof_ibf_all_in STATE  every host's sofib0 in STATE (INIT, ACTIVE ...)
#   sof_ibf_subnet_up LOG  the SM's LOG says SUBNET UP, every sofib0 Active
#   sof_ibf_diag H OUT CMD...  CMD (an infiniband-diags program) in host H
#                         under `softofed run`, bounded to 20 s, output in OUT
#   sof_ibf_guid NAME     the node GUID the fabric gave NAME (0x...)
#
# IBF_FABRIC names another softofed-fabric binary; it runs with its direct
# paths (fabric/direct.c) unless SOF_IBF_DIRECT=0 (--no-direct). Processes
# are sof_host_bg's (ibf.fabric, ibf.sm), stopped by PID at exit.

IBF_PORT=7471
IBF_FABRIC=${IBF_FABRIC:-$(dirname "$SOFTOFED")/softofed-fabric}
# run.sh's ASan mix has the daemon and the tool only: the plain build's fabric
[ -x "$IBF_FABRIC" ] || IBF_FABRIC=$SOF_ROOT/build/bin/softofed-fabric

sof_ibf_line() {
	sof_host_run "$1" "$SOFTOFED" status 2>/dev/null </dev/null | grep '^device sofib0'
}

sof_ibf_lid() {
	sof_ibf_line "$1" | sed -n 's/.* lid \([0-9]*\) .*/\1/p'
}

# sof_ibf_subnet_up LOG: the SM's LOG says SUBNET UP and every host's
# sofib0 is Active
sof_ibf_subnet_up() {
	grep -q 'SUBNET UP' "$1" 2>/dev/null && sof_ibf_all_in ACTIVE
}

sof_ibf_all_in() {
	local h
	for h in $IBF_HOSTS; do
		sof_ibf_line "$h" | grep -q "port 1 $1" || return 1
	done
}

# sof_ibf_xmit HOST: HOST's sofib0 xmit_data (4-byte words, IBA PortCounters)
sof_ibf_xmit() {
	sof_host_run "$1" "$SOFTOFED" status 2>/dev/null </dev/null | grep '^ib_counters:' |
		tr ' ' '\n' | grep -A1 -x xmit_data | tail -n 1
}

# sof_ibf_flowing HOST BASE WORDS SECS: waits until HOST's sofib0 sent WORDS
# words more than BASE (a stream is running), at most SECS seconds; 1 if not
sof_ibf_flowing() {
	local h=$1 base=$2 words=$3 end=$((SECONDS + $4)) x
	while [ $SECONDS -lt $end ]; do
		x=$(sof_ibf_xmit "$h")
		[ -n "$x" ] && [ -n "$base" ] && [ $((x - base)) -ge "$words" ] && return 0
		sleep 0.1
	done
	return 1
}

sof_ibf_diag() {
	local h=$1 out=$2
	shift 2
	sof_host_run "$h" "$SOFTOFED" run -- timeout 20 "$@" >"$out" 2>&1 </dev/null
}

# sof_ibf_tracert HOST SLID DLID OUT: ibtracert in HOST from SLID to DLID
# (its output in OUT); prints the hops as "out>NAME[in]" words
sof_ibf_tracert() {
	sof_ibf_diag "$1" "$4" ibtracert -C sofib0 "$2" "$3"
	sed -n 's/^\[\([0-9]*\)\] -> [a-z]* port {0x[0-9a-f]*}\[\([0-9]*\)\] lid [0-9-]* "\([^"]*\)"$/\1>\3[\2]/p' "$4" | tr '\n' ' '
}

sof_ibf_guid() {
	sed -n "s/^[A-Za-z]* \"$1\" [0-9]* guid \\(0x[0-9a-f]*\\).*/\\1/p" "$IBF_FAB"
}

# sof_ibf_attach NAME TOPO REAL NH: sof_ibf_up's first step: hosts up, the
# fabric in a, every sofib0 in Initialize within 10 s; not_ok "NAME: attach"
# and 1 if not (the fabric's lifetime IBF_SECS, default 280 s)
sof_ibf_attach() {
	local name=$1 topo=$2 real=$3 nh=$4
	[ -f "$topo" ] || topo=${SOF_TOPOLOGIES:-$SOF_ROOT/tests/topologies}/$topo.net
	local -a names
	IFS=, read -r -a names <<<"$real"
	SOF_HOST_UP_ARGS[a]="--ib-fabric $(sof_host_ip a):$IBF_PORT --ib-node ${names[0]}"
	SOF_HOST_UP_ARGS[b]="--ib-fabric $(sof_host_ip a):$IBF_PORT --ib-node ${names[1]}"
	SOF_HOST_UP_ARGS[c]="--ib-fabric $(sof_host_ip a):$IBF_PORT --ib-node ${names[2]:-}"
	sof_hosts_up "$nh" || return 1
	IBF_HOSTS="a b"
	[ "$nh" = 3 ] && IBF_HOSTS="a b c"
	local -a direct=()
	# the fabric's direct paths (fabric/direct.c): on unless SOF_IBF_DIRECT=0
	direct=(--direct)
	[ "${SOF_IBF_DIRECT:-1}" = 0 ] && direct=(--no-direct)
	sof_host_bg ibf.fabric a ${IBF_SECS:-280} "$IBF_FABRIC" "$topo" --listen "$(sof_host_ip a):$IBF_PORT" --real "$real" "${direct[@]}"
	sof_wait_for 10 sof_ibf_all_in INIT && return 0
	not_ok "$name: attach" "$(for h in $IBF_HOSTS; do sof_ibf_line "$h"; done | paste -sd/)"
	sof_dump "$(sof_out ibf.fabric)"
	return 1
}

sof_ibf_up() {
	local topo=$1 real=$2 nh=$3 t guid
	t=${topo##*/}
	t=${t%.net}
	sof_ibf_attach "$t" "$topo" "$real" "$nh" || return 1
	ok "$t: every sofib0 port attached to the fabric (Initialize)"
	# a script's own step before the SM starts (e.g. a watcher of events)
	declare -F ibf_before_sm >/dev/null && ibf_before_sm
	guid=$(sof_host_run a "$SOFTOFED" run -- ibstat -p sofib0 2>/dev/null </dev/null | head -n 1)
	if [ "${SOF_IBF_SM:-opensm}" = softofed ]; then
		sof_host_bg ibf.sm a ${IBF_SECS:-260} "$SOFTOFED" sm -v
		IBF_SMLOG=$(sof_out ibf.sm)
	else
		IBF_SMLOG=$SOF_TMP/ibf.opensm.log
		# shellcheck disable=SC2086 # more options
		sof_host_bg ibf.sm a ${IBF_SECS:-260} "$SOFTOFED" run -- opensm -g "$guid" -f "$IBF_SMLOG" -d 0 -s 2 \
			-D 0x87 ${SOF_IBF_SM_ARGS:-}
	fi
	if sof_wait_for 60 sof_ibf_subnet_up "$IBF_SMLOG"; then
		ok "$t: SUBNET UP (${SOF_IBF_SM:-opensm} on a's sofib0, port GUID $guid), every sofib0 Active"
	else
		not_ok "$t: SUBNET UP" "no SUBNET UP in 60 s; $(grep -c ERR "$IBF_SMLOG" 2>/dev/null) errors"
		tail -n 40 "$IBF_SMLOG" 2>/dev/null | cut -c1-200 | sed "s/^/#   sm: /"
		sof_dump "$(sof_out ibf.sm)"
		for h in $IBF_HOSTS; do echo "#   $h: $(sof_ibf_line "$h")"; done
		return 1
	fi
	IBF_FAB=$SOF_TMP/ibf.fabric.v
	sof_host_run a "$SOFTOFED" fabric status -v >"$IBF_FAB" 2>&1 </dev/null
	return 0
}

# ---------------------------------------------------------------------------
# The simulated fabric of integration/fabric_*.sh (`softofed fabric up
# --ibsim`, or Debian's ibsim): unmodified SMs and infiniband-diags through
# Debian's libumad2sim, no hosts, in the test's own network namespace.
#
#   sof_sim_init NAME PROG...  SIM_TOPO (the topology directory), UMAD2SIM,
#                         SIM_SM (our softofed-sm), OUT (a scratch output
#                         file); the cwd $SOF_TMP (libumad2sim makes its
#                         sysfs copy there); a not_ok NAME line and the
#                         script's exit when libumad2sim or a PROG
#                         (softofed-sm, opensm, ibsim, saquery ...) is missing
#   sof_sim CMD...        CMD through libumad2sim, at node $SOF_SIM_HOST
#                         when set (softofed-fabric's sim.c sets a node's
#                         IsSM bit by its client's flag: a tool on an SM's
#                         node would hide that SM), killed after 30 s,
#                         stderr dropped
#   sof_sim_fabric ARGS...  `softofed fabric ARGS`, bounded to 30 s
#   sof_sim_lid FILE NAME  the base LID of CA NAME's port in ibnetdiscover's
#                         output FILE ("[1](guid) "peer"[p] # lid N lmc M"),
#                         or of switch NAME ("Switch ... "NAME" ... lid N")

sof_sim_init() {
	local name=$1 p
	shift
	# shellcheck disable=SC2034 # SIM_TOPO, OUT: for the sourcing script
	SIM_TOPO=${SOF_TOPOLOGIES:-$SOF_ROOT/tests/topologies}
	UMAD2SIM=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so
	SIM_SM=$(dirname "$SOFTOFED")/softofed-sm
	# run.sh's ASan mix has the daemon and the tool only: the plain build's SM
	[ -x "$SIM_SM" ] || SIM_SM=$SOF_ROOT/build/bin/softofed-sm
	# shellcheck disable=SC2034
	OUT=$SOF_TMP/out
	cd "$SOF_TMP" || exit 1
	if [ ! -f "$UMAD2SIM" ]; then
		not_ok "$name" "ibsim-utils' libumad2sim.so missing (tests/install-deps.sh)"
		sof_exit
	fi
	for p in "$@"; do
		if { [ "$p" = softofed-sm ] && [ ! -x "$SIM_SM" ]; } ||
			{ [ "$p" != softofed-sm ] && ! command -v "$p" >/dev/null; }; then
			not_ok "$name" "$p missing (tests/install-deps.sh; make build)"
			sof_exit
		fi
	done
}

sof_sim() {
	if [ -n "${SOF_SIM_HOST:-}" ]; then
		SIM_HOST=$SOF_SIM_HOST LD_PRELOAD=$UMAD2SIM timeout -s KILL 30 "$@" 2>/dev/null
	else
		LD_PRELOAD=$UMAD2SIM timeout -s KILL 30 "$@" 2>/dev/null
	fi
}

sof_sim_fabric() {
	timeout 30 "$SOFTOFED" fabric "$@" </dev/null
}

sof_sim_lid() {
	grep -A 8 "^Ca.*\"$2\"" "$1" | sed -n 's/^\[1\].*# lid \([0-9]*\) lmc.*/\1/p' | head -n 1
	grep "^Switch.*\"$2\"" "$1" | sed -n 's/.* lid \([0-9]*\) lmc.*/\1/p' | head -n 1
}

# ---------------------------------------------------------------------------
# IPoIB (issue 21, hosts/ipoib*.sh): ib0 made by `softofed ipoib up` in
# each host, 192.168.77.N/24 and fd77:1b::N/64 on it (N: the host's number)
#
#   sof_ipoib_ip H, sof_ipoib_ip6 H   host H's ib0 addresses
#   sof_ipoib_st H [ARGS...]   `softofed ipoib status ARGS` in H (10 s bound)
#   sof_ipoib_cnt H NAME       the counter NAME of H's ib0 status
#   sof_ipoib_logs N H...      diagnostics: the last N lines of each host's
#                         ib0 process log and its status but the groups

sof_ipoib_ip() { echo "192.168.77.$(_sof_host_num "$1")"; }
sof_ipoib_ip6() { echo "fd77:1b::$(_sof_host_num "$1")"; }

sof_ipoib_st() {
	local h=$1
	shift
	sof_host_run "$h" timeout 10 "$SOFTOFED" ipoib status "$@" 2>&1 </dev/null
}

sof_ipoib_cnt() {
	sof_ipoib_st "$1" | tr ' ' '\n' | grep -A1 -x "$2" | tail -n 1
}

sof_ipoib_logs() {
	local n=$1 h
	shift
	for h in "$@"; do
		# shellcheck disable=SC2016 # expanded in the host
		sof_host_run "$h" sh -c 'tail -n "$1" /tmp/softofed-ipoib-*-ib0-$(stat -L -c %i /proc/self/ns/net).log' \
			sof-logs "$n" 2>/dev/null | sed "s/^/#   $h log: /"
		sof_ipoib_st "$h" | grep -v '^mcast' | sed "s/^/#   $h: /"
	done
}
