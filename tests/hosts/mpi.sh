#!/bin/bash
# The libraries on verbs (issue 17), Open MPI between hosts: mpirun in
# host a with the UCX PML on our libraries (as tests/consumers/mpi.sh:
# UCX_TLS=rc_verbs,ud_verbs,self on sof0:1, --mca btl self), ranks placed
# on the hosts by a hostfile of their addresses and started there by
# tests/mpi/rsh_agent.sh (--mca plm_rsh_agent: `ip netns exec` into
# the host, `softofed run`), running tests/mpi/mpi_check.c (ping-pong
# 1 B .. 4 MiB with every byte checked, allreduce, alltoall, bcast
# checked):
#   2 hosts (veth pair): 2 ranks, one per host; 4 ranks, two per host
#   (same-host and RoCEv2 peers at once);
#   3 hosts (bridge): 3 ranks, one per host.
# The daemons serve veth0 only (SOF_HOSTS_IFACES), as a RoCE NIC on it
# would: no loopback GID for UCX to pick. A run passes when mpirun exits
# with 0, mpi_check printed "mpi_check: ok ranks N" and every rank
# selected the ucx PML. Needs root (ip netns). A missing program is a
# failure.
# Usage: tests/hosts/mpi.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_init
SOF_HOSTS_IFACES=veth0

AGENT=$SOF_ROOT/tests/mpi/rsh_agent.sh
# shellcheck disable=SC2054 # the commas are UCX_TLS's
MPI_ARGS=(--allow-run-as-root --oversubscribe --mca pml ucx --mca btl self
	--mca osc ^ucx --mca pml_base_verbose 10 --mca plm_rsh_agent "$AGENT"
	--mca oob_tcp_if_include 10.77.0.0/24 --mca plm_rsh_no_tree_spawn 1
	-x UCX_TLS=rc_verbs,ud_verbs,self -x UCX_NET_DEVICES=sof0:1)

# mpi NAME NP HOSTFILE_LINES...: one mpirun of mpi_check in host a
mpi() {
	local name=$1 np=$2 out hf rc attempt
	shift 2
	out=$(sof_out "$name")
	hf=$SOF_TMP/hostfile
	printf '%s\n' "$@" >"$hf"
	export SOF_HOSTS_PREFIX SOFTOFED # for the agent
	# A run takes seconds. Once in a while (1 of about 10 three-host runs
	# in this session) mpirun hangs before any rank prints; not yet
	# understood (see the issue 17 note). A hang is retried once, in the
	# open: the first attempt's output is printed, and a second hang fails.
	for attempt in 1 2; do
		SOF_MPI_AGENT_SECS=60 timeout -k 5 60 ip netns exec "$(sof_host_ns a)" "$SOFTOFED" run -- \
			mpirun "${MPI_ARGS[@]}" --hostfile "$hf" -np "$np" "$PROG" 2 \
			>"$out" 2>&1 </dev/null
		rc=$?
		{ [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; } && [ "$attempt" -eq 1 ] || break
		echo "# $name: attempt 1 hung (timed out after 60 s), retried once; its output:"
		sof_dump "$out"
	done
	sof_mpi_verdict "$name" "$np" "$rc" "$out"
}

sof_mpi_build hosts/mpi || sof_exit
PROG=$SOF_MPI_PROG
chmod 755 "$SOF_TMP" # the ranks run it from every host

if sof_hosts_up 2; then
	mpi "hosts/mpi 2 hosts: 2 ranks" 2 "10.77.0.1 slots=1" "10.77.0.2 slots=1"
	mpi "hosts/mpi 2 hosts: 4 ranks" 4 "10.77.0.1 slots=2" "10.77.0.2 slots=2"
fi
sof_hosts_down
if sof_hosts_up 3; then
	mpi "hosts/mpi 3 hosts: 3 ranks" 3 "10.77.0.1 slots=1" "10.77.0.2 slots=1" "10.77.0.3 slots=1"
fi
sof_exit
