#!/bin/bash
# The engine in the program (transport/README.md): the RC/UC QPs of a
# process that connect to another host run their RoCEv2 transport in that
# process, and the daemon steers their packets to its sockets. Two hosts
# over veth, ibv_rc_pingpong (data checked) from b to a:
#   - by default each daemon steers its side's QP to the process (its log
#     names the QP and the slot) and the program's engine sends its packets
#     (with SOFTOFED_TRACE=1 it traces them, the daemon does not); the
#     daemons' `softofed status` counts the programs' packets (the slot's
#     counter page); "through its daemon" is likewise read from the
#     daemon's trace of the QP's packets, never from a missing line;
#   - SOFTOFED_ENGINE=daemon: no steering, and the same data; a QP moved
#     to ERROR first reads what reached the host (tests/progs/error_acked,
#     the daemons stopped and continued in turn: a SEND whose ACK waited
#     in the client's host completes with success, not flushed);
#   - one side in its process, the other through its daemon, both ways;
#   - a process of another user (nobody) gets no slot: its traffic goes
#     through the daemon;
#   - the server killed while a client streams (ib_write_bw -D): the
#     client's QP fails (retry exceeded) instead of hanging, host a's
#     daemon reads the slot's socket (drops counted as qpn), and the next
#     process takes the same slot (the daemon never makes a second one)
#     and runs;
#   - a process that closes its device and opens it again, three times
#     (tests/progs/ctx_cycle, a 64 KiB WRITE checked each time): every
#     context's QP in its process, not only the first one's;
#   - UC (ibv_uc_pingpong) and an SRQ (ibv_srq_pingpong) in the program;
#   - UD (ibv_ud_pingpong --chk): in the processes by default, through
#     the daemons with SOFTOFED_ENGINE_UD=daemon.
# Needs root (ip netns).
# Usage: tests/hosts/engine.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_init

PORT=19700

# qpn FILE: the local QPN a *_pingpong printed (0x......)
qpn() {
	sed -n 's/.*local address: .* QPN \(0x[0-9a-f]*\).*/\1/p' "$1" | head -n 1
}

# Where a QP's transport ran is read from what was seen, never from what
# was not: the daemons and the programs run with SOFTOFED_TRACE=1, so the
# engine that sends a QP's packets traces them ("qp QPN sent: ...", QPN in
# six hex digits) into its daemon's log or into the program's stderr.
export SOFTOFED_TRACE=1

# runs H QPN OUT: "in its process" when host H's daemon steered QPN to a
# slot (daemon/steer.c logs "QP QPN steered to slot") and the program
# (output OUT) traced its packets, and the daemon did not; "through its
# daemon" when the daemon traced them and neither of the others holds;
# else what was seen
runs() {
	local q=$2 hex log st=no pt=no dt=no
	hex=${q#0x}
	log=$(_sof_host_log "$1")
	grep -q "QP $q steered to slot" "$log" && st=yes
	grep -q -E "(^|[^A-Za-z_])qp ${hex}[ :]" "$3" && pt=yes
	grep -q -E "(^|[^A-Za-z_])qp ${hex}[ :]" "$log" && dt=yes
	case $st$pt$dt in
	yesyesno) echo "in its process" ;;
	nonoyes) echo "through its daemon" ;;
	*) echo "unclear (steered $st, traced by the program $pt, by the daemon $dt)" ;;
	esac
}

# judge NAME WANT-SRV WANT-CLI: the last run's server QP ran as WANT-SRV in
# host a, the client's as WANT-CLI in host b ("in its process" or "through
# its daemon")
judge() {
	local ws wc
	ws=$(runs a "$SRVQ" "$SRVO")
	wc=$(runs b "$CLIQ" "$CLIO")
	if [ "$ws" = "$2" ] && [ "$wc" = "$3" ]; then
		ok "hosts/engine: $1: server QP $SRVQ $ws, client QP $CLIQ $wc"
	else
		not_ok "hosts/engine: $1" "server QP $SRVQ $ws (want $2), client QP $CLIQ $wc (want $3)"
	fi
}

# run NAME SRV-PREFIX CLI-PREFIX PROG ARGS...: one pair a<-b, each side's
# command after its prefix (words, may be empty: `env VAR=...`, `setpriv
# ...`); @GID@ is each host's IPv4 GID index. Sets SRVQ/CLIQ (the QPNs)
# and SRVO/CLIO (their outputs); returns 0 when both ran and checked their
# data.
run() {
	local name="hosts/engine: $1" sp=$2 cp=$3 prog=$4 srv cli sa=() ca=() a
	shift 4
	PORT=$((PORT + 1))
	SRVQ="" CLIQ=""
	for a in "$@"; do
		sa+=("${a//@GID@/$(sof_host_gid a)}")
		ca+=("${a//@GID@/$(sof_host_gid b)}")
	done
	srv=$(sof_out "$name.srv")
	cli=$(sof_out "$name.cli")
	# shellcheck disable=SC2086 # the prefixes are words
	sof_host_bg "$name.srv" a 70 $sp "$SOFTOFED" run -- "$prog" -p "$PORT" "${sa[@]}"
	if ! sof_host_wait_listen a "$PORT" 20 "$name.srv"; then
		sof_kill "$name.srv"
		not_ok "$name" "the server did not listen: $(tail -n 2 "$srv" | tr '\n' ' ')"
		return 1
	fi
	# shellcheck disable=SC2086
	sof_host_bg "$name.cli" b 40 $cp "$SOFTOFED" run -- "$prog" -p "$PORT" "${ca[@]}" "$(sof_host_ip a)"
	sof_wait "$name.cli" 50
	local crc=$?
	sof_wait "$name.srv" 30
	local src=$?
	if [ "$crc" -ne 0 ] || [ "$src" -ne 0 ] || ! grep -q ' bytes in ' "$cli" ||
		grep -q -i 'invalid data\|failed' "$cli" "$srv"; then
		not_ok "$name" "exit status server $src, client $crc, or no 'bytes in' line, or an error"
		sed 's/^/#   srv: /' "$srv" | tail -n 5
		sed 's/^/#   cli: /' "$cli" | tail -n 5
		return 1
	fi
	SRVQ=$(qpn "$srv")
	CLIQ=$(qpn "$cli")
	SRVO=$srv
	CLIO=$cli
	if [ -z "$SRVQ" ] || [ -z "$CLIQ" ]; then
		not_ok "$name" "no QPN in the output"
		return 1
	fi
	return 0
}

# counter H NAME: counter NAME (counters.rx_packets, drops.qpn, ...) of
# host H's daemon
counter() {
	sof_counter "$1" "$2"
}

if ! sof_hosts_up 2; then
	sof_exit
fi
P="in its process"
D="through its daemon"

# ---- the default: both sides in their process
rxa=$(counter a counters.rx_packets)
txa=$(counter a counters.tx_packets)
if run "default" "" "" ibv_rc_pingpong -g @GID@ --chk -s 64 -n 200; then
	judge default "$P" "$P"
	drx=$(($(counter a counters.rx_packets) - rxa))
	dtx=$(($(counter a counters.tx_packets) - txa))
	# 200 SENDs each way, and an ACK for most of them
	if [ "$drx" -ge 200 ] && [ "$dtx" -ge 200 ]; then
		ok "hosts/engine: default: host a's status counts the program's packets (rx +$drx, tx +$dtx)"
	else
		not_ok "hosts/engine: default: counters" "host a's rx_packets +$drx, tx_packets +$dtx (want >= 200 each)"
	fi
fi

# ---- opted out: the daemons' engine
ED="env SOFTOFED_ENGINE=daemon"
if run "SOFTOFED_ENGINE=daemon" "$ED" "$ED" ibv_rc_pingpong -g @GID@ --chk -s 4096 -n 100; then
	judge SOFTOFED_ENGINE=daemon "$D" "$D"
fi

# ---- the daemons' engine: a QP moved to ERROR first takes what reached
# its host (tests/progs/error_acked): the client's SEND leaves while host
# a's daemon is stopped; host b's daemon is stopped, 4 datagrams to b's
# port 4791 then a's daemon continued, so a's ACK waits in b's socket
# behind them (the daemon reads a socket by batches); the client asks for
# ERROR and b's daemon continues: the SEND completes with success, not
# flushed
error_acked() {
	local name="hosts/engine: SOFTOFED_ENGINE=daemon: ERROR after the ACK came" d srv cli rc
	local da=${SOF_HOST_DPID[a]} db=${SOF_HOST_DPID[b]} i
	d=$SOF_TMP/error_acked
	mkdir -p "$d"
	PORT=$((PORT + 1))
	srv=$(sof_out "$name.srv")
	cli=$(sof_out "$name.cli")
	# shellcheck disable=SC2086 # ED is words
	sof_host_bg "$name.srv" a 40 $ED "$SOFTOFED" run -- "$SOF_PROGS/error_acked" -p "$PORT"
	if ! sof_host_wait_listen a "$PORT" 20 "$name.srv"; then
		sof_kill "$name.srv"
		not_ok "$name" "the server did not listen: $(tail -n 2 "$srv" | tr '\n' ' ')"
		return 1
	fi
	# shellcheck disable=SC2086
	sof_host_bg "$name.cli" b 30 $ED "$SOFTOFED" run -- "$SOF_PROGS/error_acked" -p "$PORT" \
		-w "$d/go" -P "$d/posted" -e "$d/error" "$(sof_host_ip a)"
	if sof_wait_for 20 grep -q '^ready' "$cli"; then
		kill -STOP "$da"
		touch "$d/go"
		sof_wait_for 20 test -e "$d/posted"
		kill -STOP "$db"
		for i in 1 2 3 4; do
			timeout 5 ip netns exec "$(sof_host_ns a)" \
				bash -c "echo junk$i >/dev/udp/$(sof_host_ip b)/4791"
		done
		kill -CONT "$da"
		sleep 0.3
		touch "$d/error"
		sleep 0.3
	fi
	kill -CONT "$da" "$db"
	sof_wait "$name.cli" 20
	rc=$?
	sof_wait "$name.srv" 20
	if [ "$rc" -eq 0 ] && grep -q '^status=IBV_WC_SUCCESS ' "$cli"; then
		ok "$name: the SEND completes with success, not flushed"
	else
		not_ok "$name" "client exit $rc, $(grep -h -E '^(status|fail)' "$cli" | head -n 1)"
		sof_dump "$cli" "$srv"
	fi
	rm -rf "$d"
}
error_acked

# ---- UD: in the processes by default (no daemon wake-up per datagram:
# through the daemons a UD ping-pong round trip woke them four times, ms
# each on a loaded host); with SOFTOFED_ENGINE_UD=daemon through them
if run "UD, default" "" "" ibv_ud_pingpong -g @GID@ --chk -s 1024 -n 100; then
	judge "UD, default" "$P" "$P"
fi
EU="env SOFTOFED_ENGINE_UD=daemon"
if run "UD, SOFTOFED_ENGINE_UD=daemon" "$EU" "$EU" ibv_ud_pingpong -g @GID@ --chk -s 1024 -n 100; then
	judge "UD, SOFTOFED_ENGINE_UD=daemon" "$D" "$D"
fi

# ---- one side each way: the wire is the same
if run "server in its process, client through its daemon" "" "$ED" \
	ibv_rc_pingpong -g @GID@ --chk -s 65536 -n 50; then
	judge mixed "$P" "$D"
fi
if run "server through its daemon, client in its process" "$ED" "" \
	ibv_rc_pingpong -g @GID@ --chk -s 65536 -n 50; then
	judge mixed "$D" "$P"
fi

# ---- another user: no slot
nob=$SOF_TMP/nobody.out
NB="setpriv --reuid=nobody --regid=nogroup --clear-groups"
# shellcheck disable=SC2086 # NB is words
if sof_host_run a $NB "$SOFTOFED" run -- ibv_devices >"$nob" 2>&1; then
	if run "a process of user nobody" "$NB" "$NB" ibv_rc_pingpong -g @GID@ --chk -s 4096 -n 100; then
		judge "user nobody (no slot)" "$D" "$D"
	fi
else
	not_ok "hosts/engine: user nobody" "cannot run as nobody: $(tail -n 1 "$nob")"
fi

# ---- a killed server: the client fails, the daemon reads the slot's
# socket, and the next process takes the same slot
PORT=$((PORT + 1))
# (a streaming writer: a ping-pong client whose last send was ACKed waits
# for a receive that never comes, as on any RC hardware)
sof_host_bg kill.srv a 60 env -u SOFTOFED_TRACE "$SOFTOFED" run -- stdbuf -oL -eL ib_write_bw -p "$PORT" -x "$(sof_host_gid a)" -s 65536 -D 40
if sof_host_wait_listen a "$PORT" 20 kill.srv; then
	sof_host_bg kill.cli b 60 env -u SOFTOFED_TRACE "$SOFTOFED" run -- stdbuf -oL -eL ib_write_bw -p "$PORT" -x "$(sof_host_gid b)" -s 65536 -D 40 "$(sof_host_ip a)"
	# kill only once both sides are connected and the stream runs (the
	# client printed the peer's address and its results header): a fixed
	# pause was too short on a loaded machine, and a client killed before it
	# connected proves nothing
	for _ in $(seq 200); do
		grep -q 'remote address' "$(sof_out kill.cli)" && grep -q '#bytes' "$(sof_out kill.cli)" && break
		sleep 0.1
	done
	sleep 0.5
	qa=$(counter a drops.qpn)
	sof_kill kill.srv
	# 143: killed here (SIGTERM); another status: it ended before
	srv_rc=$SOF_KILL_RC
	sof_wait kill.cli 50
	crc=$?
	out=$(sof_out kill.cli)
	if [ "$crc" -ne 0 ] && [ "$crc" -ne 124 ] && grep -q -i 'failed status' "$out"; then
		ok "hosts/engine: killed server: the client's QP fails ($(grep -i -m 1 'failed status' "$out"))"
	else
		not_ok "hosts/engine: killed server" "client exit $crc (server exit $srv_rc, 143 when killed here): $(tail -n 2 "$out" | tr '\n' ' ')"
		sed 's/^/#   srv: /' "$(sof_out kill.srv)" | tail -n 5
		sed 's/^/#   a: /' "$(_sof_host_log a)" | tail -n 8
		sed 's/^/#   b: /' "$(_sof_host_log b)" | tail -n 8
	fi
	# the server's QP had its transport in the process (steered to its
	# slot), so what arrives for it after the kill is read by the daemon
	# from that slot's socket and dropped: qpn drops grow
	kq=$(sed -n 's/.*local address: .* QPN \(0x[0-9a-fA-F]*\).*/\1/p' "$(sof_out kill.srv)" | head -n 1)
	[ -n "$kq" ] && kq=$(printf '0x%06x' "$((kq))")
	dq=$(sof_counter_since a drops.qpn "$qa") || dq="unknown (no drops line)"
	if [ -z "$kq" ] || ! grep -q "QP $kq steered to slot" "$(_sof_host_log a)"; then
		not_ok "hosts/engine: killed server" "the server's QP '${kq}' was not steered to its process (no steering line in host a's log)"
	elif [[ $dq =~ ^[0-9]+$ ]] && [ "$dq" -gt 0 ]; then
		ok "hosts/engine: killed server: its QP $kq was in its process; host a's daemon read the slot's socket (qpn drops +$dq)"
	else
		not_ok "hosts/engine: killed server" "qpn drops on host a after the server died: +$dq (want > 0)"
	fi
	if run "after the killed server" "" "" ibv_rc_pingpong -g @GID@ --chk -s 4096 -n 100; then
		slots=$(sed -n 's/.*: steering slot \([0-9]*\)$/\1/p' "$(_sof_host_log a)" | sort -u | tr '\n' ' ')
		where=$(runs a "$SRVQ" "$SRVO")
		if [ "$where" = "$P" ] && [ "$slots" = "1 " ]; then
			ok "hosts/engine: after the killed server: its slot is taken again (host a's slots: $slots)"
		else
			not_ok "hosts/engine: after the killed server" "server QP $SRVQ $where, host a's slots: '$slots' (want '1 ')"
		fi
	fi
else
	not_ok "hosts/engine: killed server" "the server did not listen"
fi

# ---- a context per phase: a process that closes its device and opens it
# again (ucx_perftest's batches, libfabric's probes) keeps the transport of
# every context's QPs in the process, not only of the first
PORT=$((PORT + 1))
cs=$(sof_out cycle.srv)
cc=$(sof_out cycle.cli)
sof_host_bg cycle.srv a 70 "$SOFTOFED" run -- "$SOF_PROGS/ctx_cycle" -p "$PORT" -r 3
if sof_host_wait_listen a "$PORT" 20 cycle.srv; then
	sof_host_bg cycle.cli b 60 "$SOFTOFED" run -- "$SOF_PROGS/ctx_cycle" -p "$PORT" -r 3 "$(sof_host_ip a)"
	sof_wait cycle.cli 60
	crc=$?
	sof_wait cycle.srv 30
	src=$?
	if [ "$crc" -ne 0 ] || [ "$src" -ne 0 ] || [ "$(grep -c '^round [0-9]* ok$' "$cs")" -ne 3 ]; then
		not_ok "hosts/engine: a context per phase" "exit status server $src, client $crc, or not 3 rounds checked: $(grep -h '^fail' "$cs" "$cc" | head -n 2 | tr '\n' ' ')"
	else
		for r in 1 2 3; do
			sq=$(sed -n "s/^round $r qpn=\(0x[0-9a-f]*\)$/\1/p" "$cs")
			cq=$(sed -n "s/^round $r qpn=\(0x[0-9a-f]*\)$/\1/p" "$cc")
			ws=$(runs a "$sq" "$cs")
			wc=$(runs b "$cq" "$cc")
			if [ "$ws" = "$P" ] && [ "$wc" = "$P" ]; then
				ok "hosts/engine: context $r of a process (64 KiB checked): server QP $sq $ws, client QP $cq $wc"
			else
				not_ok "hosts/engine: context $r of a process" "server QP $sq $ws, client QP $cq $wc (want both $P)"
			fi
		done
	fi
else
	not_ok "hosts/engine: a context per phase" "the server did not listen: $(tail -n 2 "$cs" | tr '\n' ' ')"
fi

# ---- UC and SRQ in the program
for prog in ibv_uc_pingpong ibv_srq_pingpong; do
	if run "$prog" "" "" "$prog" -g @GID@ --chk -s 4096 -n 100; then
		judge "$prog" "$P" "$P"
	fi
done

sof_exit
