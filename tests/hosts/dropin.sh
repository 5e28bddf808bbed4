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
#   udpong (datagram rsockets) -T e: 500 messages, each echoed;
#   fio's rdma engine: 64 MiB by RDMA WRITE and READ, 32 MiB by SEND (a
#     receiver of iodepth 512: tests/consumers/dropin.sh says why);
#   uDAPL (Debian's dapl2 and dapl2-utils; providers named in a dat.conf of
#     the test's, DAT_OVERRIDE): dtest over the socket CM provider
#     (libdaploscm) and over the RDMA CM one (libdaplofa), 64 KiB buffers;
#     dtestx (immediate data, compare-and-swap and fetch-and-add, each
#     result checked), dtestsrq, dtestcm -c 50 (50 RC connections), and
#     dapltest's transaction test (-V: SEND both ways, RDMA READ and WRITE
#     by 2 threads, every buffer validated). dtestx -u (UD) is not run: its
#     socket CM exchange carries no GID, and a RoCE address handle without
#     a GRH is EINVAL in the kernel (rxe, hardware) as here;
#   iSER: Debian's tgt as the target, libiscsi's iscsi-inq,
#     iscsi-readcapacity16, iscsi-perf and iscsi-test-cu (Read10, Verify10)
#     as the initiator (iser:// URLs);
#   librpma (Debian's): tests/progs/rpma_check.c, 1 MiB by rpma_write,
#     rpma_flush and rpma_read, checked on both sides.
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
	sof_dropin_fio "hosts/dropin a<-b: fio rdma send" a b "$A" send
	sof_dropin_dapl_conf "$SOF_TMP/dapl" veth0
	sof_dropin_dtest "hosts/dropin a<-b: uDAPL dtest (socket CM)" a b "$A" dtest sof-scm -b 65536 -B 20
	sof_dropin_dtest "hosts/dropin a<-b: uDAPL dtest (RDMA CM)" a b "$A" dtest sof-cma -b 65536 -B 20
	sof_dropin_dtest "hosts/dropin a<-b: uDAPL dtestx (immediate data, atomics)" a b "$A" dtestx sof-cma
	sof_dropin_dtest "hosts/dropin a<-b: uDAPL dtestsrq" a b "$A" dtestsrq sof-cma
	sof_dropin_dtest "hosts/dropin a<-b: uDAPL dtestcm 50 connections" a b "$A" dtestcm sof-cma -c 50
	sof_dropin_dapltest "hosts/dropin a<-b: uDAPL dapltest transactions" a b "$A" sof-cma \
		client SR 4096 2 server SR 4096 2 client RR 4096 client RW 8192 2
	sof_dropin_iser "hosts/dropin a<-b: iSER, tgt target and libiscsi initiator" a b "$A"
	sof_dropin_rpma "hosts/dropin a<-b: librpma write, flush, read" a b "$A"
fi

sof_exit
