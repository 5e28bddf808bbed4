#!/bin/bash
# Issue 20: M_Key and P_Key blocks beyond 0 at real hosts' sofib0 (the
# daemon's SMA, daemon/ib_sma.c): three hosts a, b, c on one switch (H1,
# H2, H3 on S1), our SM in a with `-y KEY --m_key_protection_level 2` and
# a partitions file of 40 partitions besides the default (all CAs full):
#   - `smpquery -y KEY -K portinfo` of c from b: the key, protection bits
#     2; without the key no answer, c's M_KeyViolations grow and c's trap
#     256 reaches the SM, which prints the bad key and c's LID;
#   - `smpquery -y KEY pkeys` of c: 41 entries, the last nine in block 1;
#   - ib_send_lat b <-> c on P_Key index 40 (0x8128, block 1: the QPs'
#     P_Key from the table the SM set, ibv_modify_qp's pkey_index taken up
#     to 63): 200 iterations.
# Needs root (ip netns). Usage: tests/hosts/sm_mkey.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_init

N=sm/mkey_hosts
KEY=0x00c0ffee00000042
SMBIN=$(dirname "$SOFTOFED")/softofed-sm
[ -x "$SMBIN" ] || SMBIN=$SOF_ROOT/build/bin/softofed-sm
# shellcheck source=tests/ib_fabric.sh
. "$SOF_ROOT/tests/ib_fabric.sh"
IBF_PORT=7479 IBF_SECS=200
sof_ibf_attach "$N" "$SOF_ROOT/tests/topologies/star3.net" H1,H2,H3 3 || sof_exit

CONF=$SOF_TMP/parts40.conf
{
	echo "Default=0x7fff : ALL=full ;"
	for i in $(seq 1 40); do printf 'p%u=0x%04x : ALL_CAS=full ;\n' "$i" $((0x100 + i)); done
} >"$CONF"
smlog=$(sof_out mk.sm)
sof_host_bg mk.sm a 180 "$SOFTOFED" run -- "$SMBIN" -C sofib0 -v -y $KEY \
	--m_key_protection_level 2 --partitions "$CONF"
up=no
for _ in $(seq 600); do
	grep -q 'SUBNET UP' "$smlog" 2>/dev/null && sof_ibf_all_in ACTIVE && up=yes && break
	sleep 0.1
done
if [ $up = yes ]; then
	ok "$N: SUBNET UP with -y $KEY level 2 and 41 partitions, every sofib0 Active"
else
	not_ok "$N: SUBNET UP" "$(sof_ibf_line a) / $(sof_ibf_line b) / $(sof_ibf_line c)"
	sof_dump "$smlog"
	sof_exit
fi
IBF_FAB=$SOF_TMP/mk.fabric.v
sof_host_run a "$SOFTOFED" fabric status -v >"$IBF_FAB" 2>&1 </dev/null
lc=$(sof_ibf_lid c)
field() { sed -n "s/^$2:\.*\(.*\)$/\1/p" "$1" | head -n 1; }

# ---- M_Key at the daemon's SMA -------------------------------------------------
sof_ibf_diag b "$SOF_TMP/mk.pi" smpquery -C sofib0 -y $KEY -K portinfo "$lc"
if [ "$(field "$SOF_TMP/mk.pi" Mkey)" = "$KEY" ] && [ "$(field "$SOF_TMP/mk.pi" ProtectBits)" = 2 ] &&
	[ "$(field "$SOF_TMP/mk.pi" Lid)" = "$lc" ]; then
	ok "$N: smpquery -y -K portinfo of c (LID $lc) from b: M_Key $KEY, protection bits 2"
else
	not_ok "$N: c's M_Key" "$(head -n 20 "$SOF_TMP/mk.pi")"
fi
v0=$(field "$SOF_TMP/mk.pi" MkeyViolations)
if ! sof_ibf_diag b "$SOF_TMP/mk.nokey" smpquery -C sofib0 -t 300 portinfo "$lc" &&
	sof_ibf_diag b "$SOF_TMP/mk.pi2" smpquery -C sofib0 -y $KEY portinfo "$lc" &&
	[ "$(field "$SOF_TMP/mk.pi2" MkeyViolations)" -gt "${v0:-0}" ]; then
	ok "$N: without the key c does not answer; its M_KeyViolations $v0 -> $(field "$SOF_TMP/mk.pi2" MkeyViolations)"
else
	not_ok "$N: without the key" "$(head -n 5 "$SOF_TMP/mk.nokey" | tr '\n' ' ') / $(field "$SOF_TMP/mk.pi2" MkeyViolations)"
fi
for _ in $(seq 50); do
	grep -q "trap 256: bad M_Key 0x0000000000000000 at LID $lc (method 0x01, attribute 0x0015" "$smlog" && break
	sleep 0.1
done
if grep -q "trap 256: bad M_Key 0x0000000000000000 at LID $lc (method 0x01, attribute 0x0015" "$smlog"; then
	ok "$N: c's trap 256 reached the SM: $(grep -m1 'trap 256: ' "$smlog" | sed 's/.*trap 256: //')"
else
	not_ok "$N: trap 256" "$(grep 'trap' "$smlog" | tail -n 3 | tr '\n' ' ')"
fi

# ---- P_Key block 1 ---------------------------------------------------------------
sof_ibf_diag b "$SOF_TMP/mk.pk" smpquery -C sofib0 -y $KEY pkeys "$lc"
got=$(sed -n 's/^ *[0-9]*: *//p' "$SOF_TMP/mk.pk" | tr -s ' \t' '\n' | grep '^0x' | grep -v '^0x0000$' | tr '\n' ' ')
want="0xffff $(for i in $(seq 1 40); do printf '0x%04x ' $((0x8100 + i)); done)"
if [ "$got" = "$want" ] && grep -q '^64 pkeys capacity' "$SOF_TMP/mk.pk"; then
	ok "$N: smpquery pkeys of c: 41 entries of 64, 0x8121 .. 0x8128 in block 1"
else
	not_ok "$N: c's table" "$got"
fi
LPORT=18900
sof_host_bg mk.srv b 30 "$SOFTOFED" run -- ib_send_lat -d sofib0 -n 200 -s 2 -p $LPORT --pkey_index=40
sof_host_wait_listen b $LPORT 10 mk.srv >/dev/null 2>&1
sof_host_run c "$SOFTOFED" run -- timeout 25 ib_send_lat -d sofib0 -n 200 -s 2 -p $LPORT \
	--pkey_index=40 "$(sof_host_ip b)" >"$SOF_TMP/mk.lat" 2>&1 </dev/null
rc=$?
sof_kill mk.srv
if [ $rc -eq 0 ] && grep -q -E '^ *2 +200 ' "$SOF_TMP/mk.lat"; then
	ok "$N: ib_send_lat b <-> c on P_Key index 40 (0x8128, block 1): 200 iterations"
else
	not_ok "$N: ib_send_lat on index 40" "rc $rc: $(tail -n 5 "$SOF_TMP/mk.lat" | tr '\n' ' ')"
	sof_dump "$SOF_TMP/mk.lat" "$(sof_out mk.srv)"
fi

sof_kill mk.sm
sof_kill ibf.fabric
sof_exit
