#!/bin/bash
# UDP GSO and GRO on the InfiniBand links (issue 19): a host's IB port
# sends a run of same-size packets as one UDP GSO send and reads what the
# kernel keeps joined (UDP GRO) as one datagram, cut into its packets and
# each checked (transport/ibpkt.c); the fabric does the same on its socket
# and sends a host runs of one DestQP only (fabric/link.c), since the
# host's kernel steers a whole run to one member of the link's
# SO_REUSEPORT group by its first packet (daemon/steer.c). pair.net (a and
# b under one switch), OpenSM in a:
#
#   gso/gro  progs/data_stream a -> b by LID in the programs' engines,
#            every byte checked, no receive error; a's UDP datagrams sent
#            fewer than half its IB packets (GSO runs), b's UDP datagrams
#            received fewer than half its IB packets (GRO runs)
#   steer    two streams into b at once, MTU 1024 (long runs): one between
#            the programs' engines, one with SOFTOFED_ENGINE=daemon (b's
#            daemon's QP): both whole, every byte checked, and no packet
#            of either reached the other's engine (b's drops.qpn flat)
#
# Needs root (ip netns). Usage: tests/hosts/ibgso.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/ib_fabric.sh
. "$(dirname "$0")/../ib_fabric.sh"
sof_init

sof_ibf_up pair H1,H2 2 || sof_exit

# ibc H NAME: counter NAME of the "ib_counters:" line of H's status
ibc() {
	sof_host_run "$1" "$SOFTOFED" status 2>/dev/null </dev/null |
		awk -v k="$2" '$1 == "ib_counters:" { for (i = 2; i + 1 <= NF; i += 2) if ($i == k) { print $(i + 1); f = 1 } }
			END { exit !f }'
}

# udp H NAME: the kernel's UDP counter NAME (InDatagrams, OutDatagrams) in H
udp() {
	sof_host_run "$1" cat /proc/net/snmp 2>/dev/null </dev/null |
		awk -v k="$2" '$1 == "Udp:" && !h { for (i = 2; i <= NF; i++) c[$i] = i; h = 1; next }
			$1 == "Udp:" { print $(c[k]); f = 1 } END { exit !f }'
}

# ds_ok: the last pair's data_stream ended well on both sides, every byte
# checked
ds_ok() {
	grep -q '^ok' "$1" && grep -q '^ok' "$2" && grep -q '^checked write_imm messages=' "$2" &&
		grep -q '^checked read messages=' "$1"
}

# --- GSO and GRO ---------------------------------------------------------------------
ao=$(udp a OutDatagrams) bi=$(udp b InDatagrams)
ax=$(ibc a xmit_pkts) br=$(ibc b rcv_pkts) be=$(ibc b rcv_errors)
sof_host_pair ibgso.ds b a 18801 100 "$SOF_PROGS/data_stream" -d sofib0 -m 4096 -T 90 \
	-s 65536x16,1048576x8
rc=$?
dao=$(($(udp a OutDatagrams) - ao)) dbi=$(($(udp b InDatagrams) - bi))
dax=$(($(ibc a xmit_pkts) - ax)) dbr=$(($(ibc b rcv_pkts) - br)) dbe=$(($(ibc b rcv_errors) - be))
D="a: $dax IB packets in $dao UDP datagrams; b: $dbr in $dbi; b rcv_errors +$dbe"
if [ "$rc" -eq 0 ] && ds_ok "$SOF_CLI_OUT" "$SOF_SRV_OUT" && [ "$dax" -ge 2000 ] && [ "$dbe" -eq 0 ] &&
	[ $((dao * 2)) -lt "$dax" ] && [ $((dbi * 2)) -lt "$dbr" ]; then
	ok "ibgso: data_stream by LID, every byte checked, in GSO and GRO runs ($D)"
else
	not_ok "ibgso: gso/gro" "${SOF_PAIR_WHY:-};$D"
	sof_pair_dump
fi

# --- runs of one DestQP: a program's QP and the daemon's on b at once ----------------
q0=$(sof_counter b drops.qpn)
be=$(ibc b rcv_errors)
SPEC=65536x32,1048576x12
sof_host_bg ibgso.d.srv b 130 env SOFTOFED_ENGINE=daemon "$SOFTOFED" run -- \
	"$SOF_PROGS/data_stream" -d sofib0 -m 1024 -T 110 -s "$SPEC" -p 18811
if ! SOF_LISTEN_HOST=b sof_wait_listen 18811 20 ibgso.d.srv; then
	not_ok "ibgso: steer" "the daemon-engine server did not listen"
else
	sof_host_bg ibgso.d.cli a 120 env SOFTOFED_ENGINE=daemon "$SOFTOFED" run -- \
		"$SOF_PROGS/data_stream" -d sofib0 -m 1024 -T 110 -s "$SPEC" -p 18811 "$(sof_host_ip b)"
	sof_host_pair ibgso.p b a 18812 120 "$SOF_PROGS/data_stream" -d sofib0 -m 1024 -T 110 -s "$SPEC"
	prc=$?
	sof_wait ibgso.d.cli 130
	drc=$?
	sof_wait ibgso.d.srv 30
	src=$?
	dq=$(sof_counter_since b drops.qpn "$q0") || dq=unknown
	dbe=$(($(ibc b rcv_errors) - be))
	D="program pair rc $prc, daemon pair rc $drc/$src; b drops.qpn +$dq, rcv_errors +$dbe"
	if [ "$prc" -eq 0 ] && ds_ok "$SOF_CLI_OUT" "$SOF_SRV_OUT" && [ "$drc" -eq 0 ] && [ "$src" -eq 0 ] &&
		ds_ok "$(sof_out ibgso.d.cli)" "$(sof_out ibgso.d.srv)" && [ "$dq" = 0 ] && [ "$dbe" -eq 0 ]; then
		ok "ibgso: a program's QP and the daemon's on b at once, every byte checked, no packet to the wrong engine ($D)"
	else
		not_ok "ibgso: steer" "$D"
		sof_pair_dump
		sof_dump "$(sof_out ibgso.d.cli)"
		sof_dump "$(sof_out ibgso.d.srv)"
	fi
fi

sof_exit
