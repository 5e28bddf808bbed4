#!/bin/bash
# Memory windows (ibv_alloc_mw, ibv_bind_mw, bind / local-invalidate /
# send-with-invalidate work requests and their ibv_wr_* builders), with
# tests/progs/mw_check checking every byte and every status (see its
# comment for the phases: type 1 and 2 binds, WRITE/READ/atomics inside a
# window, IBV_WC_REM_ACCESS_ERR outside it or without the access, after
# LOCAL_INV, after SEND_WITH_INV with IBV_WC_WITH_INV and the rkey at the
# receiver, IBV_WC_MW_BIND_ERR and the QP in ERROR for invalid binds,
# dealloc of a bound window; ibv_wr_atomic_write inside a window and
# refused through a read-only one):
#   - on one host (both processes in host a: the same-host executor);
#   - between hosts a <- b, each side's transport in its process;
#   - between hosts with SOFTOFED_ENGINE=daemon (the daemons' engines);
#   - a process holding bound windows is SIGKILLed: its daemon releases
#     them (the log's "released ... mws 2");
#   - ibv_devinfo -v names the capabilities (MEM_WINDOW, MEM_WINDOW_TYPE_2B,
#     max_mw).
# Needs root (ip netns).
# Usage: tests/hosts/mw.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_init

PORT=19950
PHASES="t1 t1-ro t1-noat aw-ro t2-inv t2-sinv t2-qp badbind t2-zb dealloc"

# check NAME: both outputs of the last pair name every phase and "ok"
check() {
	local name=$1 p miss=""
	for p in $PHASES; do
		grep -q "^phase $p ok$" "$SOF_PAIR_SRV_OUT" || miss="$miss server:$p"
		grep -q "^phase $p ok$" "$SOF_PAIR_CLI_OUT" || miss="$miss client:$p"
	done
	grep -q "^phase t2-qpgone ok$" "$SOF_PAIR_SRV_OUT" || miss="$miss server:t2-qpgone"
	if [ -z "$miss" ] && grep -q '^ok$' "$SOF_PAIR_SRV_OUT" && grep -q '^ok$' "$SOF_PAIR_CLI_OUT"; then
		ok "hosts/mw: $name: every phase ($(grep -c '^badbind' "$SOF_PAIR_SRV_OUT") invalid binds, $(grep '^invalidated_rkey' "$SOF_PAIR_SRV_OUT"))"
	else
		not_ok "hosts/mw: $name" "phases missing:$miss"
		sof_dump "$SOF_PAIR_SRV_OUT" "$SOF_PAIR_CLI_OUT"
	fi
}

# pair NAME SRV CLI: mw_check between hosts SRV and CLI (the same host:
# both in SRV, the client to SRV's address)
pair() {
	local name="hosts/mw: $1"
	PORT=$((PORT + 1))
	if [ "$2" = "$3" ]; then
		SOF_PAIR_TARGET=$(sof_host_ip "$2") sof_host_pair "$name" "$2" "$2" "$PORT" 60 \
			"$SOF_PROGS/mw_check" -g @GID@
	else
		sof_host_pair "$name" "$2" "$3" "$PORT" 60 "$SOF_PROGS/mw_check" -g @GID@
	fi
	local rc=$?
	SOF_PAIR_SRV_OUT=$(sof_out "$name.srv")
	SOF_PAIR_CLI_OUT=$(sof_out "$name.cli")
	if [ $rc -ne 0 ]; then
		not_ok "$name" "${SOF_PAIR_WHY:-failed}"
		sof_dump "$SOF_PAIR_SRV_OUT" "$SOF_PAIR_CLI_OUT"
		return 1
	fi
	check "$1"
}

if ! sof_hosts_up 2; then
	sof_exit
fi

pair "one host" a a
# the wire as Wireshark sees it (sof_capture_check), with SEND with
# invalidate (0x17) and ATOMIC WRITE (0x1d) and their answers on it
cap=$SOF_TMP/mw.pcap
capturing=no
sof_capture_start hosts/mw.cap "$cap" veth0 a && capturing=yes
pair "a <- b, engines in the programs" a b
if [ $capturing = yes ]; then
	sof_capture_stop hosts/mw.cap
	sof_capture_check "hosts/mw capture" "$cap"
	miss=""
	for op in 0x17 0x1d 0x10 0x12; do
		case " $SOF_CAP_OPCODES " in *" $op "*) ;; *) miss="$miss $op" ;; esac
	done
	if [ -z "$miss" ]; then
		ok "hosts/mw capture: SEND_ONLY_WITH_INVALIDATE, ATOMIC_WRITE, their answers on the wire"
	else
		not_ok "hosts/mw capture: opcodes" "missing:$miss (seen: $SOF_CAP_OPCODES)"
	fi
else
	not_ok "hosts/mw capture" "the capture did not start"
fi
SOFTOFED_ENGINE=daemon pair "a <- b, SOFTOFED_ENGINE=daemon" a b

# ---- a dead owner's windows: released by the daemon
name="hosts/mw: SIGKILL of a process holding bound windows"
sof_host_bg mw.hold a 30 "$SOFTOFED" run -- "$SOF_PROGS/mw_check" -K
out=$(sof_out mw.hold)
for _ in $(seq 100); do
	grep -q '^held ' "$out" 2>/dev/null && break
	sof_alive mw.hold || break
	sleep 0.1
done
pid=$(sed -n 's/^held pid \([0-9]*\) .*/\1/p' "$out")
if [ -z "$pid" ]; then
	not_ok "$name" "the holder did not bind its windows"
	sof_dump "$out"
else
	log=$(_sof_host_log a)
	kill -KILL "$pid"
	sof_wait mw.hold 10
	line=""
	for _ in $(seq 50); do
		line=$(grep "closed .*pid $pid .*released" "$log" | grep ' mws 2$' | head -n 1)
		[ -n "$line" ] && break
		sleep 0.1
	done
	if [ -n "$line" ]; then
		ok "$name: ${line#*: }"
	else
		not_ok "$name" "no release of its 2 windows in the daemon's log"
		grep "pid $pid" "$log" | sed 's/^/#   /'
	fi
fi

# ---- the capabilities, as ibv_devinfo -v prints them
name="hosts/mw: ibv_devinfo -v"
dv=$(sof_host_run a "$SOFTOFED" run -- ibv_devinfo -v 2>&1)
maxmw=$(echo "$dv" | sed -n 's/^[[:space:]]*max_mw:[[:space:]]*\([0-9]*\).*/\1/p')
if echo "$dv" | grep -q 'MEM_WINDOW$' && echo "$dv" | grep -q 'MEM_WINDOW_TYPE_2B' &&
	[ "${maxmw:-0}" -gt 0 ]; then
	ok "$name: MEM_WINDOW, MEM_WINDOW_TYPE_2B, max_mw $maxmw"
else
	not_ok "$name" "capabilities missing (max_mw ${maxmw:-none})"
	echo "$dv" | grep -i -E 'cap|mw' | sed 's/^/#   /'
fi

sof_exit
