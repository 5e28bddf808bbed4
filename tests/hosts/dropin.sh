#!/bin/bash
# Drop-in between hosts: rdma-core consumers that no issue names, server in
# host a, client in host b (network namespaces joined by a veth pair, a
# daemon in each), unmodified through `softofed run` (helpers in
# tests/dropin.sh):
#   qperf (Debian's) over the RDMA CM (-cm1), 1 s each: rc_bi_bw,
#     rc_rdma_write_bw, rc_rdma_write_poll_lat, rc_rdma_read_lat,
#     rc_fetch_add_mr, and ver_rc_compare_swap / ver_rc_fetch_add, which
#     check the result of every atomic;
#   python3-pyverbs: tests/pyverbs_check.py server in a, client in b, each
#     on the GID of its host's address (RC SEND, WRITE, WRITE with
#     immediate, READ, every byte checked by the side that receives it);
#   rcopy (rsockets): a 20 MiB random file b -> a, compared byte for byte;
#   udpong (datagram rsockets) -T e: 500 messages, each echoed.
#
# Needs root (ip netns).
# Usage: tests/hosts/dropin.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/dropin.sh
. "$(dirname "$0")/../dropin.sh"
sof_init

QPORT=19766
if sof_hosts_up 2; then
	A=$(sof_host_ip a)
	if sof_dropin_qperf_up a "$QPORT"; then
		for t in rc_bi_bw rc_rdma_write_bw rc_rdma_write_poll_lat rc_rdma_read_lat \
			rc_fetch_add_mr ver_rc_compare_swap ver_rc_fetch_add; do
			sof_dropin_qperf "hosts/dropin a<-b: qperf $t" b "$A" "$QPORT" "$t"
		done
		sof_kill qperf.a
	fi
	sof_dropin_pyverbs "hosts/dropin a<-b: pyverbs server and client" a b
	sof_dropin_rcopy "hosts/dropin a<-b: rcopy 20 MiB" a b "$A" 20
	sof_dropin_udpong "hosts/dropin a<-b: udpong -T e" a b "$A" e
	sof_dropin_fio "hosts/dropin a<-b: fio rdma write" a b "$A" write
	sof_dropin_fio "hosts/dropin a<-b: fio rdma read" a b "$A" read
fi

sof_exit
