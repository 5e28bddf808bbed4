#!/bin/bash
# The libraries on verbs (issue 17), UCX between hosts: the runs of
# tests/consumers/ucx.sh (ucx_perftest UCT rc_verbs and ud_verbs, UCP
# tag_lat/tag_bw/ucp_put_bw with UCX_TLS=rc_verbs,ud_verbs,self, io_demo
# -q through the rdmacm CM; lib.sh: sof_ucx_*) with the server in host a
# and the client in host b (network namespaces joined by a veth pair, a
# daemon in each, serving lo and veth0), RoCEv2 between them,
# UCX_NET_DEVICES=sof0:1. Judged as
# there. When a run fails the rest are reported as not run
# (SOF_HOSTS_KEEP_GOING=1 runs them). Needs root (ip netns). A missing
# program is a failure.
# Usage: tests/hosts/ucx.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_init
# The daemons serve every interface, lo included, as `softofed up` does by
# default: lo's GIDs come last, so UCX's GID index 0 is veth0's address.
unset SOF_HOSTS_IFACES

export UCX_NET_DEVICES=sof0:1
SOF_UCX_PORT=13500
sof_ucx_programs || sof_exit
if sof_hosts_up 2; then
	sof_ucx_perf_all a b "$(sof_host_ip a)" "hosts/ucx a<-b:"
	sof_ucx_io_demo a b "$(sof_host_ip a)" "hosts/ucx a<-b:"
fi
sof_exit
