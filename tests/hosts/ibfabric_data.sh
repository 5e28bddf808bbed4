#!/bin/bash
# Data by LID through the software fabric (issue 19, acceptance line 3):
# line3.net with OpenSM, every host real; a (H1, under S1) and c (H3,
# under S3) talk through all three switches, no GID anywhere:
#
#   ud, srq      ibv_ud_pingpong and ibv_srq_pingpong -d sofib0 --chk: both
#                ends move the bytes and name each other's LID
#   perftest     ib_send_bw, ib_write_bw, ib_read_bw (64 KiB) and ib_read_lat,
#                ib_send_lat, ib_write_lat
#                between a and c without -R (their TCP exchange, then by
#                LID): a result line, the peers' LIDs, no error text
#   stream       progs/data_stream a -> c by LID: SEND, WRITE, WRITE with
#                immediate and READ up to 1 MiB, every byte checked
#   counters     the fabric's switch S3 port 1 (to c) counted the data
#                (perfquery through the switch's PMA)
#   direct       (the fabric runs with its direct paths, those of
#                fabric/direct.c, unless SOF_IBF_DIRECT=0) the hosts sent RC
#                packets straight (the fabric's "direct: pkts" grew, and
#                the switch counters above count them); datagrams with b's
#                link address as source, to c: DLID a's LID (the route
#                from b ends at a) and DLID c's with P_Key 0x1234 (not a
#                partition of the route) are dropped by c and counted
#                direct_bad, one with DLID c's LID and the default P_Key
#                passes those checks (not counted), one from another UDP
#                port is no host's (link_bad)
#   fallback     c's daemon again in a pid namespace of its own (it cannot
#                open the fabric's /proc/PID/fd/N): it logs why, the fabric
#                shows it no-direct, a checked data_stream a -> c passes
#                through the fabric (nothing straight, nothing dropped at c)
#   idle         with OpenSM stopped and no traffic the fabric, which spins
#                a bounded time after packets (softofed-fabric --spin),
#                sleeps: at most 3 clock ticks of CPU in 3 s
#
# Needs root (ip netns). Usage: tests/hosts/ibfabric_data.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/ib_fabric.sh
. "$(dirname "$0")/../ib_fabric.sh"
sof_init
export SOF_IBF_DIRECT=${SOF_IBF_DIRECT-1}

T=line3
sof_ibf_up line3 H1,H2,H3 3 || sof_exit
la=$(sof_ibf_lid a)
lc=$(sof_ibf_lid c)
hex4() { printf '0x%04x' "$1"; }
hex2() { printf '0x%02x' "$1"; }

s3=$(sof_ibf_guid S3)
p0=$SOF_TMP/perf0
sof_ibf_diag b "$p0" perfquery -x -C sofib0 -G "$s3" 1

# pp NAME PORT EXPECT ARGS...: server in c, client in a
pp() {
	local name=$1 port=$2 expect=$3 srv cli rc
	shift 3
	srv=$(sof_out "ibf.$name.srv")
	cli=$SOF_TMP/$name.cli
	sof_host_bg "ibf.$name.srv" c 60 "$SOFTOFED" run -- "$@" -p "$port"
	sof_host_wait_listen c "$port" 10 "ibf.$name.srv" >/dev/null 2>&1
	sof_host_run a "$SOFTOFED" run -- timeout 40 "$@" -p "$port" "$(sof_host_ip c)" >"$cli" 2>&1 </dev/null
	rc=$?
	sof_wait "ibf.$name.srv" 20
	if [ "$rc" -eq 0 ] && grep -q "^$expect bytes in " "$cli" && grep -q "^$expect bytes in " "$srv" &&
		grep -q "remote address: *LID $(hex4 "$lc")" "$cli" && grep -q "remote address: *LID $(hex4 "$la")" "$srv" &&
		! grep -q -i 'invalid data\|failed\|couldn' "$cli" "$srv"; then
		ok "ibfabric/$T: $1 -d sofib0 by LID a <-> c through three switches ($expect bytes, --chk, LIDs $la <-> $lc)"
	else
		not_ok "ibfabric/$T: $name" "client rc $rc"
		sof_dump "$cli" "$srv"
	fi
}
pp ud 18517 819200 ibv_ud_pingpong -d sofib0 -n 200 -s 2048 --chk
pp srq 18518 819200 ibv_srq_pingpong -d sofib0 -n 100 -s 4096 -q 2 --chk

# perftest between a (client) and c (server), by LID
pt() {
	local name=$1
	shift
	sof_host_pair "ibf.$name" c a 18600 40 "$@" -d sofib0
	if sof_perftest_verdict "ibfabric/$T: $name by LID a -> c" $? >/dev/null 2>&1 &&
		grep -q "remote address: LID $(hex2 "$lc") " "$SOF_CLI_OUT" &&
		grep -q "local address: LID $(hex2 "$la") " "$SOF_CLI_OUT" &&
		grep -q "remote address: LID $(hex2 "$la") " "$SOF_SRV_OUT"; then
		ok "ibfabric/$T: $name by LID a -> c through three switches ($(sof_perftest_last))"
	else
		not_ok "ibfabric/$T: $name" "$SOF_PAIR_WHY"
		sof_pair_dump
	fi
}
pt ib_send_bw ib_send_bw -n 200 -s 65536
pt ib_write_bw ib_write_bw -n 200 -s 65536
pt ib_read_lat ib_read_lat -n 500 -s 64
pt ib_send_lat ib_send_lat -n 500 -s 2
pt ib_write_lat ib_write_lat -n 500 -s 2
pt ib_read_bw ib_read_bw -n 200 -s 65536

srv=$(sof_out ibf.ds.srv)
cli=$SOF_TMP/ds.cli
sof_host_bg ibf.ds.srv c 60 "$SOFTOFED" run -- "$SOF_PROGS/data_stream" -d sofib0 -p 18701 -m 4096 -T 50
sof_host_wait_listen c 18701 10 ibf.ds.srv >/dev/null 2>&1
sof_host_run a "$SOFTOFED" run -- "$SOF_PROGS/data_stream" -d sofib0 -p 18701 -m 4096 -T 50 \
	-s 1x64,1023x32,4096x16,65536x8,1048576x2 "$(sof_host_ip c)" >"$cli" 2>&1 </dev/null
rc=$?
sof_wait ibf.ds.srv 20
if [ "$rc" -eq 0 ] && grep -q '^ok' "$cli" && grep -q '^ok' "$srv" &&
	grep -q '^checked send messages=' "$srv" && grep -q '^checked write messages=' "$srv" &&
	grep -q '^checked write_imm messages=' "$srv" && grep -q '^checked read messages=' "$cli"; then
	ok "ibfabric/$T: data_stream a -> c by LID (SEND, WRITE, WRITE_IMM, READ up to 1 MiB, every byte checked)"
else
	not_ok "ibfabric/$T: data_stream" "client rc $rc"
	sof_dump "$cli" "$srv"
fi

# S3's port 1 leads to c: all of the above went through it (the perftest
# bandwidth runs alone are 2 x 200 x 64 KiB = 6.5 Mi words to c)
p1=$SOF_TMP/perf1
sof_ibf_diag b "$p1" perfquery -x -C sofib0 -G "$s3" 1
pq() { sed -n "s/^$2:\\.*\\([0-9]*\\)\$/\\1/p" "$1"; }
d=$(($(pq "$p1" PortXmitData) - $(pq "$p0" PortXmitData)))
if [ "$d" -ge $((2 * 200 * 65536 / 4)) ]; then
	ok "ibfabric/$T: S3 port 1 (to c) counted $d words of data sent to c"
else
	not_ok "ibfabric/$T: switch counters" "S3 port 1 PortXmitData grew by $d"
fi

# ib_counter HOST NAME: one of HOST's sofib0 counters
ib_counter() {
	sof_host_run "$1" "$SOFTOFED" status 2>/dev/null </dev/null | grep '^ib_counters:' |
		tr ' ' '\n' | grep -A1 -x "$2" | tail -n 1
}
if [ "$SOF_IBF_DIRECT" = 1 ]; then
	fs=$SOF_TMP/fstat
	sof_host_run a "$SOFTOFED" fabric status -v >"$fs" 2>&1 </dev/null
	dp=$(sed -n 's/^direct: pkts \([0-9]*\).*/\1/p' "$fs")
	if [ "${dp:-0}" -gt 1000 ]; then
		ok "ibfabric/$T: direct paths: the hosts sent $dp packets straight"
	else
		not_ok "ibfabric/$T: direct paths" "fabric's direct pkts '$dp': $(tr '\n' ' ' <"$fs" | cut -c1-400)"
	fi
	bl=$(sed -n 's/^real H2 attached \([0-9.]*:[0-9]*\) .*/\1/p' "$fs")
	cl=$(sed -n 's/^real H3 attached \([0-9.]*:[0-9]*\) .*/\1/p' "$fs")
	d0=$(ib_counter c direct_bad) k0=$(ib_counter c link_bad)
	sof_host_run b python3 "$SOF_ROOT/tests/hosts/ib_direct_forge.py" --src "$bl" --dst "$cl" \
		"$la:0xffff" "$lc:0x1234" "$lc:0xffff" >"$SOF_TMP/forge" 2>&1 </dev/null
	sof_host_run b python3 "$SOF_ROOT/tests/hosts/ib_direct_forge.py" --src "${bl%:*}:$((${bl##*:} + 1))" \
		--dst "$cl" "$lc:0xffff" >>"$SOF_TMP/forge" 2>&1 </dev/null
	sleep 0.5
	d1=$(ib_counter c direct_bad) k1=$(ib_counter c link_bad)
	if [ -n "$bl" ] && [ -n "$d0" ] && [ -n "$d1" ] && [ $((d1 - d0)) = 2 ] && [ $((k1 - k0)) = 1 ]; then
		ok "ibfabric/$T: forged direct datagrams from b's address dropped by c (direct_bad +2, link_bad +1)"
	else
		not_ok "ibfabric/$T: forged direct datagrams" "b $bl c $cl: direct_bad '$d0' -> '$d1', link_bad '$k0' -> '$k1': $(tr '\n' ' ' <"$SOF_TMP/forge")"
	fi
fi

# fallback: c's daemon again, in a pid namespace of its own (its /proc
# has no fabric process, so it cannot map /proc/PID/fd/N): it logs that,
# the fabric marks it no-direct, and a checked stream a -> c (c's end in
# the daemon's engine, the one that could not map) goes through the
# fabric whole: nothing straight to c, nothing dropped at c
if [ "$SOF_IBF_DIRECT" = 1 ]; then
	sof_host_run c "$SOFTOFED" down >/dev/null 2>&1 </dev/null
	sof_host_bg ibf.c.pidns c 120 unshare --pid --fork --mount-proc \
		"$(dirname "$SOFTOFED")/softofedd" -f --ib-fabric "$(sof_host_ip a):$IBF_PORT" --ib-node H3
	sof_wait_for 20 sof_ibf_all_in ACTIVE
	fs=$SOF_TMP/fstat2
	sof_host_run a "$SOFTOFED" fabric status -v >"$fs" 2>&1 </dev/null
	dp0=$(sed -n 's/^direct: pkts \([0-9]*\).*/\1/p' "$fs")
	d0=$(ib_counter c direct_bad) k0=$(ib_counter c link_bad)
	srv=$(sof_out ibf.fb.srv)
	cli=$SOF_TMP/fb.cli
	sof_host_bg ibf.fb.srv c 60 env SOFTOFED_ENGINE=daemon "$SOFTOFED" run -- \
		"$SOF_PROGS/data_stream" -d sofib0 -p 18702 -m 4096 -T 30
	sof_host_wait_listen c 18702 10 ibf.fb.srv >/dev/null 2>&1
	sof_host_run a "$SOFTOFED" run -- "$SOF_PROGS/data_stream" -d sofib0 -p 18702 -m 4096 -T 30 \
		-s 1x64,1023x32,65536x8,1048576x2 "$(sof_host_ip c)" >"$cli" 2>&1 </dev/null
	rc=$?
	sof_wait ibf.fb.srv 20
	sof_host_run a "$SOFTOFED" fabric status -v >>"$fs" 2>&1 </dev/null
	dp1=$(sed -n 's/^direct: pkts \([0-9]*\).*/\1/p' "$fs" | tail -n 1)
	d1=$(ib_counter c direct_bad) k1=$(ib_counter c link_bad)
	if [ "$rc" -eq 0 ] && grep -q '^ok' "$cli" && grep -q '^ok' "$srv" &&
		grep -q '^checked send messages=' "$srv" && grep -q '^checked read messages=' "$cli" &&
		grep -q '^real H3 attached .* no-direct$' "$fs" && grep -q '^direct: pkts [0-9]* hosts 2 of 3$' "$fs" &&
		grep -q 'ib: direct paths: /proc/[0-9]*/fd/[0-9]*: .*: through the fabric' "$(sof_out ibf.c.pidns)" &&
		[ -n "$d0" ] && [ "$d0" = "$d1" ] && [ "$k0" = "$k1" ] && [ "$dp0" = "$dp1" ]; then
		ok "ibfabric/$T: c's daemon in another pid namespace: no-direct, data_stream a -> c through the fabric, every byte checked (direct pkts $dp0 -> $dp1, c direct_bad $d0 -> $d1, link_bad $k0 -> $k1)"
	else
		not_ok "ibfabric/$T: fallback (c in another pid namespace)" "client rc $rc, direct pkts '$dp0' -> '$dp1', c direct_bad '$d0' -> '$d1', link_bad '$k0' -> '$k1': $(grep -E '^(real|direct)' "$fs" | tr '\n' ' ')"
		sof_dump "$cli" "$srv" "$(sof_out ibf.c.pidns)"
	fi
	sof_kill ibf.c.pidns
fi

sof_kill ibf.sm
fpid=$(sof_host_run a "$SOFTOFED" fabric status 2>/dev/null </dev/null | sed -n 's/.* pid \([0-9]*\),.*/\1/p')
ticks() { awk '{print $14 + $15}' "/proc/$fpid/stat" 2>/dev/null; }
sleep 1
t0=$(ticks)
sleep 3
t1=$(ticks)
if [ -n "$fpid" ] && [ -n "$t0" ] && [ -n "$t1" ] && [ $((t1 - t0)) -le 3 ]; then
	ok "ibfabric/$T: idle fabric (pid $fpid) used $((t1 - t0)) clock ticks of CPU in 3 s"
else
	not_ok "ibfabric/$T: idle fabric" "pid '$fpid' used '$t0' -> '$t1' clock ticks in 3 s"
fi
sof_kill ibf.fabric
sof_exit
