#!/bin/bash
# Issue 20: per-port M_Keys (OpenSM's m_key_per_port and guid2mkey) on
# `softofed fabric up --ibsim` line3, infiniband-diags from H3 through
# Debian's libumad2sim:
#   1. our SM with `-y BASE --m_key_per_port --guid2mkey FILE` at
#      protection level 2: SUBNET UP; the file holds a key for each of the
#      6 management ports, all distinct and none the base key; each port's
#      PortInfo read with its own key (`smpquery -y KEY -K`) shows that key,
#      and a Get with the base key at S2 and H2 gets no answer;
#   2. the SM killed and started again with the same file: the ports
#      drop its base-keyed NodeInfos (level 2), it tries the file's keys,
#      reaches SUBNET UP, keeps every key, and no port's key changed;
#   3. a new fabric and a hand-written file naming H2's port GUID only,
#      with `-y BASE --guid2mkey FILE` (no hash): H2 holds the file's key,
#      S2 the base key.
# Runs in a private network namespace.
#
# Usage: tests/integration/fabric_sm_mkeys.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_ns_enter "$@"
sof_init

# shellcheck source=tests/ib_fabric.sh
. "$SOF_ROOT/tests/ib_fabric.sh"
sof_sim_init sm/mkeys softofed-sm smpquery
mkdir -p "$SOF_TMP/mk" && cd "$SOF_TMP/mk" || exit 1

BASE=0x5eed0000cafe0001
SOF_SIM_HOST=H3
# field FILE NAME: the value of smpquery's NAME:....value line
field() { sed -n "s/^$2:\.*\(.*\)$/\1/p" "$1" | head -n 1; }
# lid_of GUID: the LID guid2lid gives the port GUID (decimal)
lid_of() {
	local l
	l=$(awk -v g="$1" '$1 == g {print $2}' g2l)
	[ -n "$l" ] && echo $((l))
}
# port_of GUID: 0 for a switch (ibsim's switch GUIDs 0x20....), else 1
port_of() { case $1 in 0x00000000002*) echo 0 ;; *) echo 1 ;; esac; }
# keys_ok: every port of guid2mkey answers PortInfo with its own key and
# shows it; prints what it read
keys_ok() {
	local g k l p ok=0
	while read -r g k; do
		l=$(lid_of "$g")
		p=$(port_of "$g")
		sof_sim smpquery -y "$k" -K portinfo "$l" "$p" >"$SOF_TMP/pi" || ok=1
		[ "$(field "$SOF_TMP/pi" Mkey)" = "$k" ] && [ "$(field "$SOF_TMP/pi" ProtectBits)" = 2 ] || {
			ok=1
			echo "$g lid $l: $(field "$SOF_TMP/pi" Mkey) bits $(field "$SOF_TMP/pi" ProtectBits), want $k"
		}
	done <g2m
	return $ok
}

sof_sim_fabric up "$SIM_TOPO/line3.net" --ibsim >"$OUT" 2>&1
SM=(env LD_PRELOAD="$UMAD2SIM" SIM_HOST=H1 "$SIM_SM" -v --sweep 1 -y $BASE --m_key_per_port
	--guid2mkey "$SOF_TMP/mk/g2m" --guid2lid "$SOF_TMP/mk/g2l" --m_key_protection_level 2)

# 1. keys per port
sof_bg smA 120 "${SM[@]}"
if ! sof_wait_log "$(sof_out smA)" 'SUBNET UP' 30; then
	not_ok "sm/mkeys: SUBNET UP" "no SUBNET UP"
	sof_dump "$(sof_out smA)"
	sof_kill smA
	sof_sim_fabric down >"$OUT" 2>&1
	sof_exit
fi
sleep 1
cp g2m g2m.first
h2g=$(awk '$1 ~ /^0x00000000001/ {print $1}' g2l | sort | sed -n 2p)
s2g=$(awk '$1 ~ /^0x00000000002/ {print $1}' g2l | sort | sed -n 2p)
nkeys=$(awk '{print $2}' g2m | sort -u | wc -l)
if [ "$(wc -l <g2m)" = 6 ] && [ "$nkeys" = 6 ] && ! grep -q " $BASE$" g2m &&
	keys_ok >"$SOF_TMP/keys" &&
	! sof_sim smpquery -t 200 -y $BASE portinfo "$(lid_of "$h2g")" 1 >/dev/null &&
	! sof_sim smpquery -t 200 -y $BASE nodeinfo "$(lid_of "$s2g")" >/dev/null; then
	ok "sm/mkeys: --m_key_per_port: 6 ports, 6 distinct keys in the guid2mkey file, none the base; each port's PortInfo read with its key shows it (level 2); the base key gets no answer at H2 or S2"
else
	not_ok "sm/mkeys: per port" "$(cat g2m "$SOF_TMP/keys")"
	sof_dump "$(sof_out smA)"
fi
sof_kill smA

# 2. restarted with the same file
: >"$(sof_out smA)"
sof_bg smA 120 "${SM[@]}"
if sof_wait_log "$(sof_out smA)" 'SUBNET UP' 60 && sleep 1 &&
	grep -q 'NodeInfos tried with the guid2mkey' "$(sof_out smA)" &&
	diff <(sort g2m.first) <(sort g2m) >"$SOF_TMP/diff" && keys_ok >"$SOF_TMP/keys"; then
	ok "sm/mkeys: restarted with the guid2mkey file: $(grep -o 'SUBNET UP in [0-9]* ms' "$(sof_out smA)" | head -n 1), the file's keys tried where the base key got no answer ($(grep -o '[0-9]* NodeInfos tried' "$(sof_out smA)" | tail -n 1)), every port kept its key"
else
	not_ok "sm/mkeys: restart" "$(cat "$SOF_TMP/diff" "$SOF_TMP/keys")"
	sof_dump "$(sof_out smA)"
fi
sof_kill smA
sof_sim_fabric down >"$OUT" 2>&1

# 3. a hand-written file, no hash: H2's key from it, the others the base
sof_sim_fabric up "$SIM_TOPO/line3.net" --ibsim >"$OUT" 2>&1
HKEY=0x0123456789abcdef
echo "$h2g $HKEY" >g2m.hand
sof_bg smB 120 env LD_PRELOAD="$UMAD2SIM" SIM_HOST=H1 "$SIM_SM" -v -y $BASE \
	--guid2mkey "$SOF_TMP/mk/g2m.hand" --guid2lid "$SOF_TMP/mk/g2l" --m_key_protection_level 2
if sof_wait_log "$(sof_out smB)" 'SUBNET UP' 30 && sleep 1 &&
	sof_sim smpquery -y $HKEY -K portinfo "$(lid_of "$h2g")" 1 >"$SOF_TMP/h2" &&
	sof_sim smpquery -y $BASE -K portinfo "$(lid_of "$s2g")" 0 >"$SOF_TMP/s2" &&
	[ "$(field "$SOF_TMP/h2" Mkey)" = $HKEY ] && [ "$(field "$SOF_TMP/s2" Mkey)" = $BASE ]; then
	ok "sm/mkeys: --guid2mkey with H2's port GUID: H2 holds $HKEY, S2 the base key"
else
	not_ok "sm/mkeys: hand-written file" "$(cat g2m.hand "$SOF_TMP/h2" "$SOF_TMP/s2")"
	sof_dump "$(sof_out smB)"
fi
sof_kill smB
sof_sim_fabric down >"$OUT" 2>&1
sof_exit
