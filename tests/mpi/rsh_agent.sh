#!/bin/bash
# mpirun's remote launcher between network-namespace hosts (tests/hosts/
# mpi.sh): Open MPI's rsh launcher (--mca plm_rsh_agent) calls it as ssh:
# `rsh_agent.sh [ssh options] HOST COMMAND...`. HOST is one of the
# hosts' addresses 10.77.0.N (lib.sh: sof_host_ip); the command runs in
# that host's namespace (SOF_HOSTS_PREFIX-a, -b, -c for N = 1, 2, 3)
# through `softofed run`, under a shell as sshd would run it. Bounded by
# SOF_MPI_AGENT_SECS (default 120).
set -u
while [ $# -gt 0 ]; do
	case $1 in
	-x | -T | -q | -n) shift ;;
	-o | -l | -p) shift 2 ;;
	*) break ;;
	esac
done
host=$1
shift
case $host in
10.77.0.1) h=a ;;
10.77.0.2) h=b ;;
10.77.0.3) h=c ;;
*)
	echo "rsh_agent.sh: unknown host $host" >&2
	exit 255
	;;
esac
exec timeout -k 5 "${SOF_MPI_AGENT_SECS:-120}" ip netns exec "$SOF_HOSTS_PREFIX-$h" \
	"$SOFTOFED" run -- /bin/sh -c "$*"
