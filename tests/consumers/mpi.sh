#!/bin/bash
# The libraries on verbs (issue 17), Open MPI: Debian's unmodified mpirun
# with the UCX PML (--mca pml ucx) on our libraries through `softofed run`,
# ranks on one host, UCX limited to the verbs transports
# (UCX_TLS=rc_verbs,ud_verbs,self: `self` only carries a rank's messages
# to itself; no shared-memory or TCP transport of UCX may carry data) and
# Open MPI's own BTLs excluded (--mca btl self: no vader/tcp/uct), running
# tests/mpi/mpi_check.c, built here with mpicc: a ping-pong from rank 0
# to every other rank from 1 B to 4 MiB with every byte checked, and
# MPI_Allreduce, MPI_Alltoall, MPI_Bcast with checked results; 2 and 4
# ranks. A run passes when mpirun exits with 0, mpi_check printed
# "mpi_check: ok ranks N" and every rank said that the ucx PML was
# selected (pml_base_verbose). A missing program is a failure.
# Usage: tests/consumers/mpi.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_ns_enter "$@"
sof_init

# the mpirun options of every run (hosts/mpi.sh uses the same)
# shellcheck disable=SC2054 # the commas are UCX_TLS's
MPI_ARGS=(--allow-run-as-root --oversubscribe --mca pml ucx --mca btl self
	--mca osc ^ucx --mca pml_base_verbose 10
	-x UCX_TLS=rc_verbs,ud_verbs,self -x UCX_NET_DEVICES=sof0:1)

# mpi NP: one mpirun of mpi_check with NP ranks
mpi() {
	local np=$1 name="mpi/mpirun -np $1 --mca pml ucx mpi_check" out rc
	out=$(sof_out "mpi.$np")
	timeout -k 5 120 "$SOFTOFED" run -- mpirun "${MPI_ARGS[@]}" -np "$np" "$PROG" 2 \
		>"$out" 2>&1 </dev/null
	rc=$?
	sof_mpi_verdict "$name" "$np" "$rc" "$out"
}

sof_mpi_build mpi || sof_exit
PROG=$SOF_MPI_PROG
sof_local_if || sof_exit

mpi 2
mpi 4
sof_exit
