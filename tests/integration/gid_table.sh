#!/bin/bash
# The GID table follows the served interfaces' addresses while the daemon
# runs (issue 3, item 1), on a veth pair of a private network namespace:
#   - an IPv4 and IPv6 address added to / removed from veth0 appear in /
#     vanish from `softofed status` and `ibv_devinfo -v` within a second;
#     the other entries keep their index, a removed entry stays empty and a
#     new address takes the first empty entry;
#   - a tentative IPv6 address (duplicate address detection not done: no
#     carrier) is no GID until DAD succeeds; IPv6 link-local ones are GIDs;
#   - the daemon notices a change unasked (rtnetlink): a context opened
#     before the changes gets IBV_EVENT_GID_CHANGE and reads the current
#     table (ibv_query_gid, _ex, ibv_query_gid_type: RoCEv2);
#   - `softofed up -i lo` serves only lo; `-i lo,veth0` and `-i lo -i veth0`
#     serve both, also after veth0 is deleted and created again; started
#     with both, veth0's addresses come first and lo's last (lo alone:
#     index 0 is lo's);
#     `-i nosuch` fails cleanly; a running daemon is not silently kept
#     serving other interfaces than asked.
# Runs in a private network namespace with its own daemon.
#
# Usage: tests/integration/gid_table.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_ns_enter "$@"
sof_init

WATCH=$SOF_BUILD_DIR/tests/gid_watch
ST=$SOF_TMP/status

status() {
	timeout 5 "$SOFTOFED" status >"$ST" 2>&1 </dev/null
}

# gids: the GID lines of the last status, "INDEX ADDRESS" each
gids() {
	sed -n 's/^GID\[\([0-9]*\)\] \([^ ]*\) (RoCEv2)$/\1 \2/p' "$ST"
}

# await NAME SECS CONDITION...: poll status (every 50 ms, at most SECS)
# until the shell CONDITION holds on it; ok/not_ok NAME, with the time taken
await() {
	local name=$1 secs=$2 t0 end
	shift 2
	t0=$(now_ms)
	end=$((t0 + secs * 1000))
	while :; do
		status
		if eval "$*"; then
			ok "$name ($(($(now_ms) - t0)) ms)"
			return 0
		fi
		[ "$(now_ms)" -ge "$end" ] && break
		sleep 0.05
	done
	not_ok "$name" "not within $secs s: $*"
	sof_dump "$ST"
	return 1
}

has() { gids | grep -q -x -F "$1"; }
listed() { gids | grep -q " $1\$"; }
lacks() { ! gids | grep -q -F " $1"; }
ifaces_are() { grep -q -x -F "interfaces: $1" "$ST"; }

# The table must be the one expected, exactly: "INDEX ADDRESS" lines.
table_is() {
	[ "$(gids | tr '\n' ';')" = "$(printf '%s;' "$@")" ]
}

# ---- the daemon sof_ns_run started serves every interface with an address
ip link add veth0 type veth peer name veth1 || {
	not_ok setup "cannot create a veth pair"
	sof_exit
}
# No automatic link-local addresses: the test adds the ones it wants.
ip link set veth0 addrgenmode none
ip link set veth1 addrgenmode none
ip link set veth0 up # veth1 stays down: veth0 has no carrier, DAD waits

sof_bg watch 60 "$SOFTOFED" run -- "$WATCH" 50
WOUT=$(sof_out watch)
for _ in $(seq 100); do
	grep -q '^end$' "$WOUT" && break
	sleep 0.05
done
if grep -q '^end$' "$WOUT"; then ok "a context is open"; else
	not_ok "a context is open" "gid_watch did not start"
	sof_dump "$WOUT"
fi

# events_over N SECS: wait until the context got more than N GID changes,
# without asking the daemon anything (it follows rtnetlink by itself)
events_over() {
	local end=$(($(now_ms) + $2 * 1000))
	while [ "$(now_ms)" -lt "$end" ]; do
		[ "$(grep -c '^event GID_CHANGE port 1$' "$WOUT")" -gt "$1" ] && return 0
		sleep 0.02
	done
	return 1
}
n0=$(grep -c '^event GID_CHANGE port 1$' "$WOUT")
ip addr add 10.77.0.9/24 dev veth0
if events_over "$n0" 1; then ok "address added: noticed unasked"; else
	not_ok "address added: noticed unasked" "no event within 1 s"
	sof_dump "$WOUT" "$(sof_daemon_log)"
fi
ip addr del 10.77.0.9/24 dev veth0
if events_over $((n0 + 1)) 1; then ok "address removed: noticed unasked"; else
	not_ok "address removed: noticed unasked" "no event within 1 s"
	sof_dump "$WOUT" "$(sof_daemon_log)"
fi

await "start: lo's addresses, lo served" 1 \
	'table_is "0 ::ffff:127.0.0.1" "1 ::1" && ifaces_are lo'

ip addr add 10.77.0.1/24 dev veth0
await "IPv4 address added: GID[2]" 1 \
	'table_is "0 ::ffff:127.0.0.1" "1 ::1" "2 ::ffff:10.77.0.1" && ifaces_are "lo veth0"'

ip addr add 2001:db8:77::1/64 dev veth0 # tentative until veth0 has a carrier
ip addr add 2001:db8:77::2/64 dev veth0 nodad
await "IPv6 address added: GID[3]" 1 'has "3 2001:db8:77::2"'
sleep 0.5
status
if lacks 2001:db8:77::1; then ok "tentative IPv6 address is no GID"; else
	not_ok "tentative IPv6 address is no GID" "it is listed"
	sof_dump "$ST"
fi

ip link set veth1 up # carrier: DAD runs (1 to 2 s) and succeeds
await "IPv6 address usable after DAD: GID[4]" 5 'has "4 2001:db8:77::1"'

ip addr add fe80::77/64 dev veth0 nodad
await "IPv6 link-local address: GID[5]" 1 'has "5 fe80::77"'

ip addr del 10.77.0.1/24 dev veth0
await "IPv4 address removed: GID[2] empty, others stay" 1 \
	'table_is "0 ::ffff:127.0.0.1" "1 ::1" "3 2001:db8:77::2" "4 2001:db8:77::1" "5 fe80::77"'

ip addr del 2001:db8:77::2/64 dev veth0
await "IPv6 address removed: GID[3] empty, others stay" 1 \
	'table_is "0 ::ffff:127.0.0.1" "1 ::1" "4 2001:db8:77::1" "5 fe80::77"'

ip addr add 10.77.0.2/24 dev veth0
await "new address takes the first empty entry" 1 \
	'table_is "0 ::ffff:127.0.0.1" "1 ::1" "2 ::ffff:10.77.0.2" "4 2001:db8:77::1" "5 fe80::77"'

# ---- the same through unmodified ibv_devinfo
DI=$(sof_out devinfo)
timeout 30 "$SOFTOFED" run -- ibv_devinfo -v >"$DI" 2>&1 </dev/null
got=$(sed -n 's/^[[:space:]]*GID\[ *\([0-9]*\)\]:[[:space:]]*\([^,]*\), RoCE v2$/\1 \2/p' "$DI" |
	tr '\n' ';')
if [ "$got" = "0 ::ffff:127.0.0.1;1 ::1;2 ::ffff:10.77.0.2;4 2001:db8:77::1;5 fe80::77;" ]; then
	ok "ibv_devinfo -v shows the table"
else
	not_ok "ibv_devinfo -v shows the table" "got '$got'"
	sof_dump "$DI"
fi

# ---- the context opened at the start: events and the live table
sleep 0.2
last=$(awk '/^ready$/ {t = ""; next} /^end$/ {last = t; t = ""; next}
	/^gid / {t = t $2 " " $3 " " $4 ";"} END {print last}' "$WOUT")
want="0 ::ffff:127.0.0.1 1;1 ::1 1;2 ::ffff:10.77.0.2 1;4 2001:db8:77::1 1;5 fe80::77 1;"
nev=$(grep -c '^event GID_CHANGE port 1$' "$WOUT")
if [ "$nev" -ge 8 ]; then ok "IBV_EVENT_GID_CHANGE at each change ($nev)"; else
	not_ok "IBV_EVENT_GID_CHANGE at each change" "$nev events"
	sof_dump "$WOUT"
fi
if [ "$last" = "$want" ]; then
	ok "an open context reads the current table, all RoCEv2"
else
	not_ok "an open context reads the current table, all RoCEv2" "got '$last'"
	sof_dump "$WOUT"
fi
if grep -q mismatch "$WOUT"; then
	not_ok "ibv_query_gid agrees with ibv_query_gid_ex" "mismatch"
else
	ok "ibv_query_gid agrees with ibv_query_gid_ex"
fi
sof_kill watch

# ---- choosing the interfaces
OUT=$SOF_TMP/up
if timeout 10 "$SOFTOFED" up -i lo >"$OUT" 2>&1; then
	not_ok "up -i on a daemon serving other interfaces fails" "exit 0"
	sof_dump "$OUT"
elif grep -q 'softofed down' "$OUT"; then
	ok "up -i on a daemon serving other interfaces fails"
else
	not_ok "up -i on a daemon serving other interfaces fails" "no hint"
	sof_dump "$OUT"
fi

timeout 10 "$SOFTOFED" down >/dev/null 2>&1
if timeout 10 "$SOFTOFED" up -i lo >"$OUT" 2>&1; then ok "up -i lo"; else
	not_ok "up -i lo" "exit status $?"
	sof_dump "$OUT" "$(sof_daemon_log)"
fi
await "-i lo serves only lo's addresses" 1 'table_is "0 ::ffff:127.0.0.1" "1 ::1" && ifaces_are lo'
ip addr add 10.77.0.3/24 dev veth0
sleep 0.3
await "-i lo: an address on veth0 is no GID" 1 'table_is "0 ::ffff:127.0.0.1" "1 ::1"'
if timeout 10 "$SOFTOFED" up -i lo >"$OUT" 2>&1; then ok "up -i lo again is fine"; else
	not_ok "up -i lo again is fine" "exit status $?"
	sof_dump "$OUT"
fi

timeout 10 "$SOFTOFED" down >/dev/null 2>&1
if timeout 10 "$SOFTOFED" up -i nosuch >"$OUT" 2>&1; then
	not_ok "up -i nosuch fails" "exit 0"
else
	rc=$?
	if grep -q -x 'softofed: no such interface: nosuch' "$OUT" &&
		! timeout 5 "$SOFTOFED" status >/dev/null 2>&1; then
		ok "up -i nosuch fails (exit $rc), no daemon started"
	else
		not_ok "up -i nosuch fails" "message or daemon"
		sof_dump "$OUT"
	fi
fi
if timeout 10 "$SOFTOFED_DAEMON" -f -i lo,nosuch >"$OUT" 2>&1; then
	not_ok "softofedd -i lo,nosuch fails" "exit 0"
elif grep -q 'no such interface: nosuch' "$OUT"; then
	ok "softofedd -i lo,nosuch fails"
else
	not_ok "softofedd -i lo,nosuch fails" "no message"
	sof_dump "$OUT"
fi

timeout 10 "$SOFTOFED" up -i lo,veth0 >"$OUT" 2>&1 || sof_dump "$OUT"
await "-i lo,veth0" 1 'ifaces_are "lo veth0" && listed ::ffff:10.77.0.2 && listed ::ffff:10.77.0.3'
timeout 10 "$SOFTOFED" down >/dev/null 2>&1
timeout 10 "$SOFTOFED" up -i lo -i veth0 >"$OUT" 2>&1 || sof_dump "$OUT"
# veth0's first (IPv4, then IPv6), lo's last: a RoCE NIC has no loopback
# GID, and libraries take index 0 as the address peers reach them at
lo_last() {
	local lo_min other_max
	lo_min=$(gids | awk '$2 == "::ffff:127.0.0.1" || $2 == "::1" { print $1 }' | sort -n | head -n 1)
	other_max=$(gids | awk '$2 != "::ffff:127.0.0.1" && $2 != "::1" { print $1 }' | sort -n | tail -n 1)
	[ -n "$lo_min" ] && [ -n "$other_max" ] && [ "$other_max" -lt "$lo_min" ]
}
await "-i lo -i veth0: lo's GIDs last" 1 'ifaces_are "lo veth0" && has "0 ::ffff:10.77.0.2" &&
	listed ::ffff:10.77.0.3 && listed 2001:db8:77::1 && listed fe80::77 &&
	listed ::ffff:127.0.0.1 && listed ::1 && lo_last'
lo4=$(gids | awk '$2 == "::ffff:127.0.0.1" { print $1 }')
lo6=$(gids | awk '$2 == "::1" { print $1 }')
ip link del veth0
await "served interface deleted: its GIDs go, lo's keep their index" 1 \
	'table_is "$lo4 ::ffff:127.0.0.1" "$lo6 ::1"'
ip link add veth0 type veth peer name veth1
ip link set veth0 addrgenmode none
ip link set veth0 up
ip addr add 10.77.0.4/24 dev veth0
await "served interface created again: served again" 1 \
	'table_is "0 ::ffff:10.77.0.4" "$lo4 ::ffff:127.0.0.1" "$lo6 ::1" && ifaces_are "lo veth0"'

sof_exit
