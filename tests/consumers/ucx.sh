#!/bin/bash
# The libraries on verbs (issue 17), UCX: Debian's unmodified UCX tools on
# our libraries through `softofed run`, on one host, UCX_NET_DEVICES=sof0:1:
#   ucx_info -d       lists the rc_verbs and ud_verbs transports on sof0:1
#                     and the rdmacm connection manager;
#   ucx_perftest UCT  -x rc_verbs: am_lat, put_lat (8 B, short), get
#                     (64 KiB zcopy), am_bw (4 KiB bcopy), put_bw (1 MiB
#                     zcopy); -x ud_verbs: am_lat, am_bw (1000 B bcopy);
#   ucx_perftest UCP  tag_lat, tag_bw (1 MiB), ucp_put_bw (1 MiB) with
#                     UCX_TLS=rc_verbs,ud_verbs,self (no shared memory or
#                     TCP transport may carry them);
#   io_demo -q        UCP client/server connected through the rdmacm CM (the
#                     server is ready when the daemon counts its listening
#                     cm_id, which proves the CM is ours)
#                     (UCX_SOCKADDR_TLS_PRIORITY=rdmacm) over the verbs
#                     transports, reads and writes of 1 B .. 1 MiB with
#                     UCX's own data-integrity check (-q).
# ucx_perftest checks no data; io_demo and tests/consumers/mpi.sh do.
# A perftest run passes when both sides exit with 0, the client printed
# its "Final:" line and no ERROR. A missing program is a failure.
# Usage: tests/consumers/ucx.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_ns_enter "$@"
sof_init

export UCX_NET_DEVICES=sof0:1
SOF_UCX_PORT=13400
sof_ucx_programs || sof_exit
sof_local_if || sof_exit
out=$SOF_TMP/ucx_info.out
if ! timeout 30 "$SOFTOFED" run -- ucx_info -d >"$out" 2>&1; then
	not_ok "ucx/ucx_info -d" "exit status $?"
	sof_dump "$out"
else
	for tl in rc_verbs ud_verbs; do
		if awk -v tl="$tl" '/Transport:/ { t = $NF } /Device:/ && t == tl && $NF == "sof0:1" { f = 1 } END { exit !f }' "$out"; then
			ok "ucx/ucx_info -d: $tl on sof0:1"
		else
			not_ok "ucx/ucx_info -d: $tl on sof0:1" "not listed"
			sof_dump "$out"
		fi
	done
	if grep -q -E 'Connection manager: rdmacm' "$out"; then
		ok "ucx/ucx_info -d: rdmacm connection manager"
	else
		not_ok "ucx/ucx_info -d: rdmacm connection manager" "not listed"
	fi
fi

sof_ucx_perf_all "" "" "$SOF_LOCAL_IP" ucx
sof_ucx_io_demo "" "" "$SOF_LOCAL_IP" ucx
sof_exit
