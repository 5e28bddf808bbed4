#!/bin/bash
# Device memory reached by RDMA (issue 17): tests/progs/dm_remote, a
# server's zero-based DM MR (ibv_alloc_dm, ibv_memcpy_to_dm, ibv_reg_dm_mr
# with IBV_ACCESS_ZERO_BASED) read and written by a client's RDMA READ and
# WRITE, the data checked on both sides (the server reads what was written
# with ibv_memcpy_from_dm):
#   - from another process of the same host (host a, the same-host
#     executor);
#   - from another host (b -> a, RoCEv2 through each daemon's engine), at
#     the largest DM (max_dm_size, 256 KiB) and at 2 bytes.
# Needs root (ip netns). A missing program is a failure.
# Usage: tests/hosts/dm.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_init

PORT=18720

# dm NAME SRV CLI LEN: dm_remote server in SRV, client in CLI, LEN bytes
dm() {
	local name="hosts/dm $1" srv=$2 cli=$3 len=$4
	PORT=$((PORT + 1))
	if sof_host_pair "$name" "$srv" "$cli" "$PORT" 60 "$SOF_PROGS/dm_remote" -g @GID@ -l "$len" -T 50 &&
		grep -q "^client read=$((len / 2)) wrote=$((len / 2)) bad=0$" "$SOF_CLI_OUT" &&
		grep -q "^server checked=$((len / 2)) bad=0 client_verdict=0$" "$SOF_SRV_OUT"; then
		ok "$name: $(grep '^server checked' "$SOF_SRV_OUT")"
	else
		not_ok "$name" "${SOF_PAIR_WHY:-wrong result}"
		sof_pair_dump
	fi
}

if sof_hosts_up 2; then
	dm "same host (a <- a), 64 KiB" a a 65536
	dm "between hosts (a <- b), 256 KiB" a b 262144
	dm "between hosts (a <- b), 2 B" a b 2
fi
sof_exit
