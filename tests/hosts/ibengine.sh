#!/bin/bash
# The RC, UC and UD QPs of sofib0 in the program's own engine (issues 19 and 21): the
# daemon steers the IB packets of a program's QPs to the program's member
# of the link socket's SO_REUSEPORT group (daemon/steer.c), and the
# program runs the port's packet half on it (transport/iblink.c,
# tp_ib_attach). pair.net (a and b under one switch), OpenSM in a:
#
#   rc_pingpong  ibv_rc_pingpong -d sofib0 by LID, 4 KiB, --chk: the
#                payload checked, and on both hosts the programs' share of
#                the port's counters (eng_xmit_pkts, eng_rcv_pkts) grew by
#                the traffic while the daemon's own share stayed flat
#   perftest     ib_send_bw, ib_write_bw, ib_read_bw by LID (64 KiB) and
#                ib_send_lat, ib_write_lat, ib_read_lat (2 B) through one
#                switch: results, and again moved by the programs alone
#   stream       progs/data_stream a -> b by LID: SEND, WRITE, WRITE with
#                immediate, READ up to 1 MiB, every byte checked, by the
#                programs alone
#   ud           UD QPs too: ibv_ud_pingpong --chk by LID and ib_send_lat
#                -c UD (2 B) in the programs (their share grew by the
#                traffic, the daemon's stayed flat)
#   ipoib        IPoIB datagram mode (`softofed ipoib up`, its UD QP
#                attached to the broadcast group): ARP over the group (the
#                daemon's, multicast), then 200 echoes a -> b by unicast in
#                the programs: every echo answered once (no DUP!), both
#                ib0 processes' share of the port counters grew by them;
#                mckey over ib0 with the sender in a (in its program) and
#                receivers in a and b: both get every message (a's from
#                a's daemon, which the program hands its multicast)
#   daemon       what stays with the daemon goes to it: UD with
#                SOFTOFED_ENGINE_UD=daemon (ibv_ud_pingpong --chk: the
#                daemon's share grows, the programs' does not);
#                QP0 and QP1 (perfquery of b's port from a: SMPs and a PMA
#                GMP, answered); an unknown QPN (the server of an
#                ib_write_bw killed mid-run: what the client still sends
#                comes to b's daemon and is dropped there as drops.qpn);
#                SOFTOFED_ENGINE=daemon runs ibv_rc_pingpong there, --chk
#   drop-in      qperf ud_lat, ud_bw, uc_bi_bw, uc_rdma_write_bw by LID
#                (-i sofib0:1: qperf's own exchange has no GID, so on
#                RoCE they cannot run), ibacm with ib_acme's path query
#                checked against the SA (tests/dropin.sh)
#
# Needs root (ip netns). Usage: tests/hosts/ibengine.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/ib_fabric.sh
. "$(dirname "$0")/../ib_fabric.sh"
# shellcheck source=tests/dropin.sh
. "$(dirname "$0")/../dropin.sh"
sof_init

sof_ibf_up pair H1,H2 2 || sof_exit
la=$(sof_ibf_lid a)
lb=$(sof_ibf_lid b)

# ibc H NAME: counter NAME of the "ib_counters:" line of H's status
ibc() {
	sof_host_run "$1" "$SOFTOFED" status 2>/dev/null </dev/null |
		awk -v k="$2" '$1 == "ib_counters:" { for (i = 2; i + 1 <= NF; i += 2) if ($i == k) { print $(i + 1); f = 1 } }
			END { exit !f }'
}

# snap: the programs' and the daemon's shares of both ports' packets
declare -A S0
snap() {
	local h x e
	for h in a b; do
		x=$(($(ibc $h xmit_pkts) + $(ibc $h rcv_pkts)))
		e=$(($(ibc $h eng_xmit_pkts) + $(ibc $h eng_rcv_pkts)))
		S0[$h.eng]=$e
		S0[$h.own]=$((x - e))
	done
}
# delta H: H's packets since snap: de the programs' share, dd the daemon's
delta() {
	local x e
	x=$(($(ibc "$1" xmit_pkts) + $(ibc "$1" rcv_pkts)))
	e=$(($(ibc "$1" eng_xmit_pkts) + $(ibc "$1" eng_rcv_pkts)))
	de=$((e - S0[$1.eng]))
	dd=$((x - e - S0[$1.own]))
}
# moved WHAT MIN: the programs moved >= MIN packets on each host, and the
# daemon of its own at most a tenth of that (the SM's sweeps and SA
# answers, OpenSM being in a: nothing of the data); D set to the figures
moved() {
	local h de dd okay=0
	D=""
	for h in a b; do
		delta $h
		D="$D $h: programs +$de, daemon +$dd;"
		[ "$de" -ge "$2" ] && [ $((dd * 10)) -le "$de" ] || okay=1
	done
	return $okay
}

# --- ibv_rc_pingpong by LID, payload checked ---------------------------------------
snap
sof_host_pair ibe.pp b a 18515 40 ibv_rc_pingpong -d sofib0 -n 500 -s 4096 --chk
rc=$?
if [ "$rc" -eq 0 ] && grep -q '^4096000 bytes in ' "$SOF_CLI_OUT" && grep -q '^4096000 bytes in ' "$SOF_SRV_OUT" &&
	grep -q "remote address: *LID $(printf 0x%04x "$lb")" "$SOF_CLI_OUT" &&
	! grep -q -i 'invalid data\|failed\|couldn' "$SOF_CLI_OUT" "$SOF_SRV_OUT" && moved rc 1000; then
	ok "ibengine: ibv_rc_pingpong -d sofib0 by LID $la <-> $lb (500 x 4 KiB, --chk) in the programs ($D)"
else
	not_ok "ibengine: rc_pingpong" "${SOF_PAIR_WHY:-};$D"
	sof_pair_dump
fi

# --- perftest by LID -------------------------------------------------------------------
pt() {
	local name=$1
	shift
	snap
	sof_host_pair "ibe.$name" b a 18600 40 "$@" -d sofib0
	if sof_perftest_verdict "ibengine: $name" $? >/dev/null 2>&1 &&
		grep -q "remote address: LID $(printf 0x%02x "$lb") " "$SOF_CLI_OUT" && moved "$name" 400; then
		ok "ibengine: $name by LID a -> b in the programs ($(sof_perftest_last);$D)"
	else
		not_ok "ibengine: $name" "${SOF_PAIR_WHY:-};$D"
		sof_pair_dump
	fi
}
pt ib_send_bw ib_send_bw -n 200 -s 65536
pt ib_write_bw ib_write_bw -n 200 -s 65536
pt ib_read_bw ib_read_bw -n 200 -s 65536
pt ib_send_lat ib_send_lat -n 500 -s 2
pt ib_write_lat ib_write_lat -n 500 -s 2
pt ib_read_lat ib_read_lat -n 500 -s 2

# --- data_stream by LID, every byte checked ----------------------------------------------
# (the server takes the client's -s, sent with the spec)
snap
sof_host_pair ibe.ds b a 18701 100 "$SOF_PROGS/data_stream" -d sofib0 -m 4096 -T 90 \
	-s 1x64,1023x32,4096x16,65536x8,1048576x2
rc=$?
if [ "$rc" -eq 0 ] && grep -q '^ok' "$SOF_CLI_OUT" && grep -q '^ok' "$SOF_SRV_OUT" &&
	grep -q '^checked write_imm messages=' "$SOF_SRV_OUT" && grep -q '^checked read messages=' "$SOF_CLI_OUT" &&
	moved ds 400; then
	ok "ibengine: data_stream by LID (SEND, WRITE, WRITE_IMM, READ up to 1 MiB, every byte checked) in the programs ($D)"
else
	not_ok "ibengine: data_stream" "${SOF_PAIR_WHY:-};$D"
	sof_pair_dump
fi

# --- UD by LID in the programs ------------------------------------------------------------
snap
sof_host_pair ibe.udp b a 18516 40 ibv_ud_pingpong -d sofib0 -n 500 -s 2048 --chk
rc=$?
if [ "$rc" -eq 0 ] && grep -q '^2048000 bytes in ' "$SOF_CLI_OUT" && grep -q '^2048000 bytes in ' "$SOF_SRV_OUT" &&
	! grep -q -i 'invalid data\|failed\|couldn' "$SOF_CLI_OUT" "$SOF_SRV_OUT" && moved udp 1000; then
	ok "ibengine: ibv_ud_pingpong -d sofib0 by LID (500 x 2 KiB, --chk) in the programs ($D)"
else
	not_ok "ibengine: ud_pingpong" "${SOF_PAIR_WHY:-};$D"
	sof_pair_dump
fi
snap
sof_host_pair ibe.udlat b a 18610 40 ib_send_lat -c UD -n 1000 -s 2 -d sofib0
if sof_perftest_verdict "ibengine: ib_send_lat -c UD" $? >/dev/null 2>&1 &&
	grep -q "remote address: LID $(printf 0x%02x "$lb") " "$SOF_CLI_OUT" && moved udlat 1500; then
	ok "ibengine: ib_send_lat -c UD 2 B by LID in the programs ($(sof_perftest_last);$D)"
else
	not_ok "ibengine: ib_send_lat -c UD" "${SOF_PAIR_WHY:-};$D"
	sof_pair_dump
fi

# --- IPoIB datagram mode: multicast by the daemon, unicast in the programs ----------------
[ -x "$(dirname "$SOFTOFED")/softofed-ipoib" ] || export SOFTOFED_IPOIB=$SOF_ROOT/build/bin/softofed-ipoib
upok=1
for h in a b; do
	if ! sof_host_run "$h" "$SOFTOFED" ipoib up >"$SOF_TMP/ibe.ipoib.$h" 2>&1 </dev/null; then
		upok=0
		sof_dump "$SOF_TMP/ibe.ipoib.$h"
	fi
	sof_host_run "$h" ip addr add "$(sof_ipoib_ip "$h")/24" dev ib0
done
out=$SOF_TMP/ibe.ping
# the first echo resolves b (ARP request to the broadcast group)
sof_host_run a ping -n -c 1 -W 5 "$(sof_ipoib_ip b)" >/dev/null 2>&1 </dev/null
snap
sof_host_run a ping -n -c 200 -i 0.01 -W 2 "$(sof_ipoib_ip b)" >"$out" 2>&1 </dev/null
if [ "$upok" = 1 ] && grep -q " 200 received" "$out" && ! grep -q 'DUP' "$out" && moved ipoib 300; then
	ok "ibengine: IPoIB datagram mode: 200 echoes a -> b by unicast in the programs, none lost or twice ($(grep -o 'rtt.*' "$out");$D)"
else
	not_ok "ibengine: ipoib datagram" "$(tail -n 2 "$out" | tr '\n' ' ');$D"
	sof_ipoib_logs 20 a b
fi
# mckey by ib0 address: receivers in b and in a, the sender in a (its UD
# QP in the program): the fabric does not send a's datagrams back to a's
# port, so a's receiver gets them only from a's daemon (tp_ib_ud_mcast_loop)
MG=239.1.2.4
mra=$(sof_out ibe.mck.ra)
mrb=$(sof_out ibe.mck.rb)
SOF_LINEBUF=1 sof_cm_bg ibe.mck.rb b 60 mckey -m $MG -b "$(sof_ipoib_ip b)" -C 10 -S 200
SOF_LINEBUF=1 sof_cm_bg ibe.mck.ra a 60 mckey -m $MG -b "$(sof_ipoib_ip a)" -C 10 -S 200
# shellcheck disable=SC2317 # called through sof_wait_for
joined() { grep -q 'joined dgid' "$mra" 2>/dev/null && grep -q 'joined dgid' "$mrb" 2>/dev/null; }
sof_wait_for 20 joined
snap
SOF_LINEBUF=1 sof_cm_bg ibe.mck.tx a 60 mckey -s -m $MG -b "$(sof_ipoib_ip a)" -C 10 -S 200
sof_wait ibe.mck.tx 60
trc=$?
sof_wait ibe.mck.ra 30
arc=$?
sof_wait ibe.mck.rb 30
brc=$?
delta a
if [ "$trc" -eq 0 ] && [ "$arc" -eq 0 ] && [ "$brc" -eq 0 ] && grep -q 'data transfers complete' "$mra" &&
	grep -q 'data transfers complete' "$mrb" && [ "$de" -ge 10 ]; then
	ok "ibengine: mckey -m $MG over ib0 sent from a's program: the receivers in b (fabric) and in a (a's daemon) got all 10 (a: programs +$de, daemon +$dd)"
else
	not_ok "ibengine: mckey from the program" "sender rc $trc, receivers a $arc b $brc; a: programs +$de, daemon +$dd"
	sof_dump "$mra" "$mrb" "$(sof_out ibe.mck.tx)"
fi
for h in a b; do sof_host_run "$h" timeout 10 "$SOFTOFED" ipoib down >/dev/null 2>&1 </dev/null; done

# --- what stays with the daemon ------------------------------------------------------------
# by_daemon H BYTES WHAT NAME PAIR...: snap, sof_host_pair PAIR...; ok
# "ibengine: WHAT" when both sides printed "BYTES bytes in" and H's
# packets went through its daemon alone (the programs' share flat, the
# daemon's at least 400 packets), else not_ok "ibengine: NAME"
by_daemon() {
	local h=$1 bytes=$2 what=$3 name=$4 rc de dd
	shift 4
	snap
	sof_host_pair "$@"
	rc=$?
	delta "$h"
	if [ "$rc" -eq 0 ] && grep -q "^$bytes bytes in " "$SOF_CLI_OUT" && grep -q "^$bytes bytes in " "$SOF_SRV_OUT" &&
		[ "$de" -eq 0 ] && [ "$dd" -ge 400 ]; then
		ok "ibengine: $what ($h: daemon +$dd, programs +$de)"
	else
		not_ok "ibengine: $name" "${SOF_PAIR_WHY:-}; $h: daemon +$dd, programs +$de"
		sof_pair_dump
	fi
}
# UD with SOFTOFED_ENGINE_UD=daemon: the daemon's
SOF_SRV_ENV=SOFTOFED_ENGINE_UD=daemon SOF_CLI_ENV=SOFTOFED_ENGINE_UD=daemon \
	by_daemon b 819200 "SOFTOFED_ENGINE_UD=daemon ibv_ud_pingpong by LID (--chk) through the daemons" ud \
	ibe.ud b a 18517 40 ibv_ud_pingpong -d sofib0 -n 200 -s 2048 --chk

# QP0 and QP1: perfquery of b's port from a (SMPs to resolve it, a PMA GMP)
pq=$SOF_TMP/pq
sof_ibf_diag a "$pq" perfquery -C sofib0 -x "$lb" 1
if grep -q 'PortXmitData' "$pq" && grep -q 'PortRcvPkts' "$pq"; then
	ok "ibengine: perfquery of b's port (LID $lb) from a: QP1 GMPs answered by b's daemon"
else
	not_ok "ibengine: perfquery" "$(head -c 300 "$pq" 2>/dev/null | tr '\n' ' ')"
fi
sm=$SOF_TMP/smp
sof_ibf_diag a "$sm" smpquery -C sofib0 portinfo "$lb" 1
if grep -q "^Lid:\.*$lb$" "$sm"; then
	ok "ibengine: smpquery portinfo of b (LID $lb) from a: QP0 SMPs answered by b's daemon"
else
	not_ok "ibengine: smpquery" "$(head -c 300 "$sm" 2>/dev/null | tr '\n' ' ')"
fi

# an unknown QPN: the server dies mid-run (once the stream runs), the
# client's packets go on
sof_host_bg ibe.kill.srv b 60 "$SOFTOFED" run -- stdbuf -oL -eL ib_write_bw -d sofib0 -p 18640 -s 65536 -D 30
sof_host_wait_listen b 18640 10 ibe.kill.srv >/dev/null 2>&1
sof_host_bg ibe.kill.cli a 60 "$SOFTOFED" run -- stdbuf -oL -eL ib_write_bw -d sofib0 -p 18640 -s 65536 -D 30 \
	"$(sof_host_ip b)"
# shellcheck disable=SC2317 # called through sof_wait_for
streaming() { grep -q 'remote address' "$1" && grep -q '#bytes' "$1"; }
sof_wait_for 20 streaming "$(sof_out ibe.kill.cli)"
sleep 0.5
q0=$(sof_counter b drops.qpn)
sof_kill ibe.kill.srv
sof_wait ibe.kill.cli 50
dq=$(sof_counter_since b drops.qpn "$q0") || dq=unknown
if [[ $dq =~ ^[0-9]+$ ]] && [ "$dq" -gt 0 ]; then
	ok "ibengine: a killed server's QPN: the client's packets come to b's daemon (drops.qpn +$dq)"
else
	not_ok "ibengine: unknown QPN" "b's drops.qpn +$dq"
	sof_dump "$(sof_out ibe.kill.cli)"
fi

# SOFTOFED_ENGINE=daemon: the daemons run it, the programs nothing
SOF_SRV_ENV=SOFTOFED_ENGINE=daemon SOF_CLI_ENV=SOFTOFED_ENGINE=daemon \
	by_daemon a 1638400 "SOFTOFED_ENGINE=daemon ibv_rc_pingpong --chk by LID through the daemons" engine=daemon \
	ibe.dpp b a 18519 40 ibv_rc_pingpong -d sofib0 -n 200 -s 4096 --chk

# --- drop-in on sofib0 (tests/dropin.sh): qperf's UD and UC tests by LID
# (qperf's own exchange, no GID: on a RoCE port they cannot run, on rxe
# as here), ibacm's path resolution checked against the SA
if sof_dropin_qperf_up a 19768; then
	for t in ud_lat ud_bw uc_bi_bw uc_rdma_write_bw; do
		SOF_QPERF_HOW="-i sofib0:1" sof_dropin_qperf "ibengine: qperf $t by LID" b \
			"$(sof_host_ip a)" 19768 "$t"
	done
	sof_kill qperf.a
fi
sof_dropin_ibacm "ibengine: ibacm and ib_acme" a "$la" "$lb"
sof_exit
