#!/bin/bash
# Issue 20: an SA answer larger than 256 KiB through softofed's MAD layer.
# ft1152 (64 leaves, 18 spines) with two real hosts, H0_0 (a) and H1_0 (b),
# managed by our softofed-sm under `softofed run` on a's sofib0 (its SA
# sends through a's daemon, RMPP by mad/rmpp.c); from b, Debian's saquery
# (our libibumad, b's daemon reassembling) asks for every PortInfoRecord
# (`saquery PIR`): one GetTable answer of a record per CA port and per
# switch port 0..N, 72 bytes each (IBA 15.2.5.3), about 300 KB, beyond the
# former 256 KiB message cap; the records counted against the file and
# the LIDs of a's and b's ports found in them.
#
# Needs root (ip netns). Usage: tests/hosts/sm_bigtable.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/ib_fabric.sh
. "$(dirname "$0")/../ib_fabric.sh"
sof_init

T=sm_bigtable
FILE=$SOF_ROOT/tests/topologies/ft1152.net
SOF_IBF_SM=softofed
sof_ibf_up ft1152 H0_0,H1_0 2 || sof_exit
la=$(sof_ibf_lid a)
lb=$(sof_ibf_lid b)

# a record per CA port and per switch port 0..N
want=$(awk '/^Hca/ {n += $2} /^Switch/ {n += $2 + 1} END {print n}' "$FILE")
out=$SOF_TMP/pir
sof_ibf_diag b "$out" saquery PIR -C sofib0
got=$(grep -c '^PortInfoRecord dump:' "$out")
bytes=$((got * 72))
if [ "$got" = "$want" ] && [ "$bytes" -gt 262144 ] &&
	grep -q "EndPortLid.*$(printf '0x%X' "$la")\$\|EndPortLid\.*$la\$" "$out" &&
	grep -q "EndPortLid.*$(printf '0x%X' "$lb")\$\|EndPortLid\.*$lb\$" "$out"; then
	ok "$T: saquery PIR from b got all $got PortInfoRecords of ft1152 ($bytes bytes of records in one RMPP answer, over 256 KiB) from our SA, a's LID $la and b's $lb among them"
else
	not_ok "$T: saquery PIR" "$got records of $want ($bytes bytes); $(grep -v '^\s\|dump' "$out" | head -n 3 | tr '\n' ' ')"
	head -n 30 "$out" | sed "s/^/#   /"; sof_dump "$IBF_SMLOG"
fi

sof_kill ibf.sm
sof_kill ibf.fabric
sof_exit
