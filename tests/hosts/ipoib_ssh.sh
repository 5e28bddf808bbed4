#!/bin/bash
# shellcheck disable=SC2016,SC2317 # sh -c scripts in single quotes; functions called through sof_wait_for
# ssh and scp over IPoIB (issue 21 acceptance: "ssh/scp of a 100 MiB file
# with its checksum compared"), datagram and connected mode: two
# network-namespace hosts on one switch (tests/topologies/pair.net) with
# Debian's OpenSM (tests/ib_fabric.sh's sof_ibf_up); `softofed ipoib up`
# in a and b, 192.168.77.N/24 on ib0; OpenSSH's sshd in a (-D -e, its own
# configuration, host key and root's authorised key in a temporary
# directory: tests/rs_apps.sh's _sof_rs_ssh_setup), the kernel's TCP, no
# preload. For each mode:
#
#   up    ib0 in a and b with the mode's MTU (2044 / 65520) and status
#   scp   a 100 MiB file of random bytes b -> a by scp to a's ib0 address;
#         while it runs, `ss -tn` in a shows the connection from b's ib0
#         address to port 22 (the veth only carries the fabric's UDP, so
#         the TCP connection must be on ib0); the copy's SHA-256 computed
#         in a equals the sent one; b's sofib0 sent at least the file's
#         size in data words (ib_counters xmit_data, 4-byte words)
#   ssh   `ssh a sha256sum COPY` from b prints the same SHA-256
#   cm    (connected mode) b's ib0 holds an RC connection to a and sent
#         the file's packets on it (cm tx, cm_tx_packets)
#
# Needs root (ip netns). Usage: tests/hosts/ipoib_ssh.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=tests/ib_fabric.sh
. "$(dirname "$0")/../ib_fabric.sh"
# shellcheck source=tests/rs_apps.sh
. "$(dirname "$0")/../rs_apps.sh"
sof_init

[ -x "$(dirname "$SOFTOFED")/softofed-ipoib" ] || export SOFTOFED_IPOIB=$SOF_ROOT/build/bin/softofed-ipoib
T=ipoib_ssh
MIB=100
SSHD=/usr/sbin/sshd

_sof_rs_need "$T: programs" "$SSHD" ssh scp ssh-keygen ss sha256sum || sof_exit
IBF_SECS=150 sof_ibf_up pair H1,H2 2 || sof_exit

# ipup H MODE: ib0 in H with its address; the process's PID in IPPID[H]
declare -A IPPID
ipup() {
	local out=$SOF_TMP/ipssh.up.$1
	if ! sof_host_run "$1" timeout 30 "$SOFTOFED" ipoib up --mode "$2" >"$out" 2>&1 </dev/null; then
		sof_dump "$out"
		return 1
	fi
	IPPID[$1]=$(sed -n 's/.* up, pid \([0-9]*\),.*/\1/p' "$out")
	sof_host_run "$1" ip addr add "$(sof_ipoib_ip "$1")/24" dev ib0
}
# ipdown H: ib0 in H gone, its process ended (by its PID if it lingers)
ipdown() {
	local p=${IPPID[$1]:-}
	sof_host_run "$1" timeout 15 "$SOFTOFED" ipoib down >/dev/null 2>&1 </dev/null
	if sof_pid_live "$p"; then
		sleep 1
		kill -KILL "$p" 2>/dev/null
	fi
	IPPID[$1]=
}
pingab() { sof_host_run b timeout 5 ping -n -c 1 -W 1 "$(sof_ipoib_ip a)" >/dev/null 2>&1 </dev/null; }
# tcp_on_ib0: a's established TCP connections to port 22, from b's ib0 address
tcp_on_ib0() {
	sof_host_run a timeout 5 ss -Htn state established '( sport = :22 )' 2>/dev/null </dev/null |
		grep -E "$(sof_ipoib_ip a):22 +$(sof_ipoib_ip b):[0-9]+" | head -n 1 | tr -s ' '
}

# keys and sshd_config once: sshd on a's ib0 address, port 22 of a's namespace
SSHDIR=$SOF_TMP/sshd
if ! _sof_rs_ssh_setup "$SSHDIR" "$(sof_ipoib_ip a)" 22; then
	not_ok "$T: ssh keys" "could not make the keys and configuration"
	sof_exit
fi
SSHOPTS=(-i "$SSHDIR/user_key" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null
	-o BatchMode=yes -o LogLevel=ERROR -o ConnectTimeout=10)
FILE=$SOF_TMP/ipssh.bin
head -c $((MIB << 20)) /dev/urandom >"$FILE"
WANT=$(sha256sum <"$FILE" | cut -d' ' -f1)

# one_mode MODE MTU: the checks of the header for MODE
one_mode() {
	local m=$1 mtu=$2 copy=$SOF_TMP/ipssh.copy.$1.bin st ma mb conn="" x0 x1 c0 t0 ms rc got
	if ipup a "$m" && ipup b "$m"; then
		st=$SOF_TMP/ipssh.st.$m
		sof_ipoib_st b >"$st"
		ma=$(sof_host_run a cat /sys/class/net/ib0/mtu 2>/dev/null)
		mb=$(sof_host_run b cat /sys/class/net/ib0/mtu 2>/dev/null)
		if [ "$ma" = "$mtu" ] && [ "$mb" = "$mtu" ] &&
			grep -q "^ipoib ib0 device sofib0 port 1 pkey 0xffff mode $m mtu $mtu state up" "$st"; then
			ok "$T/$m: ib0 up in a and b, MTU $mtu, status mode $m"
		else
			not_ok "$T/$m: up" "MTU a '$ma' b '$mb'; $(head -n 1 "$st")"
		fi
	else
		not_ok "$T/$m: up" "softofed ipoib up --mode $m failed"
		sof_ipoib_logs 15 a b
		ipdown a
		ipdown b
		return 1
	fi
	# first contact: the path record and the broadcast group's resolution
	sof_wait_for 20 pingab
	sof_host_bg "ipssh.sshd.$m" a 60 "$SSHD" -D -e -f "$SSHDIR/sshd_config"
	if ! sof_host_wait_listen a 22 10 "ipssh.sshd.$m" >/dev/null 2>&1; then
		not_ok "$T/$m: sshd" "sshd does not listen on $(sof_ipoib_ip a):22"
		sof_dump "$(sof_out "ipssh.sshd.$m")"
		sof_kill "ipssh.sshd.$m"
		ipdown a
		ipdown b
		return 1
	fi

	# ---- scp b -> a, the connection seen in a while it runs ----
	x0=$(sof_ibf_xmit b) c0=$(sof_ipoib_cnt b cm_tx_packets)
	t0=$(now_ms)
	sof_host_bg "ipssh.scp.$m" b 40 scp "${SSHOPTS[@]}" -P 22 "$FILE" "root@$(sof_ipoib_ip a):$copy"
	while sof_alive "ipssh.scp.$m"; do
		[ -z "$conn" ] && conn=$(tcp_on_ib0)
		sleep 0.1
	done
	sof_wait "ipssh.scp.$m" 5
	rc=$?
	ms=$(($(now_ms) - t0))
	x1=$(sof_ibf_xmit b)
	got=$(sof_host_run a sha256sum "$copy" 2>/dev/null </dev/null | cut -d' ' -f1)
	if [ "$rc" = 0 ] && [ "$got" = "$WANT" ]; then
		ok "$T/$m: scp of $MIB MiB b -> $(sof_ipoib_ip a) in $ms ms ($((MIB * 1000 / (ms > 0 ? ms : 1))) MiB/s), SHA-256 of the copy in a equal to b's"
	else
		not_ok "$T/$m: scp" "exit $rc after $ms ms, SHA-256 in a '$got', sent $WANT"
		sof_dump "$(sof_out "ipssh.scp.$m")"
		sof_dump "$(sof_out "ipssh.sshd.$m")"
		sof_ipoib_logs 15 a b
	fi
	if [ -n "$conn" ]; then
		ok "$T/$m: during the scp, ss -tn in a: '$conn' (the TCP connection on ib0)"
	else
		not_ok "$T/$m: TCP on ib0" "ss -tn in a never showed $(sof_ipoib_ip a):22 <- $(sof_ipoib_ip b) while scp ran"
	fi
	if [ -n "$x0" ] && [ -n "$x1" ] && [ $((x1 - x0)) -ge $(((MIB << 20) / 4)) ]; then
		ok "$T/$m: b's sofib0 sent $((x1 - x0)) data words during the scp (>= $(((MIB << 20) / 4)), the file's size)"
	else
		not_ok "$T/$m: bytes over sofib0" "xmit_data of b '$x0' -> '$x1', want +$(((MIB << 20) / 4))"
	fi
	if [ "$m" = connected ]; then
		if sof_ipoib_st b | grep -q "^cm tx peer .* state up mtu $mtu" &&
			[ "$(sof_ipoib_cnt b cm_tx_packets)" -ge $((c0 + (MIB << 20) / 65536)) ]; then
			ok "$T/$m: b sent the file on its RC connection to a (cm tx up, cm_tx_packets +$(($(sof_ipoib_cnt b cm_tx_packets) - c0)))"
		else
			not_ok "$T/$m: RC connection" "cm_tx_packets $c0 -> $(sof_ipoib_cnt b cm_tx_packets); $(sof_ipoib_st b | grep '^cm' | tr '\n' ' ')"
		fi
	fi

	# ---- ssh a sha256sum COPY ----
	got=$(sof_host_run b timeout 30 ssh "${SSHOPTS[@]}" -p 22 "root@$(sof_ipoib_ip a)" sha256sum "$copy" 2>"$SOF_TMP/ipssh.ssh.err" </dev/null)
	if [ "${got%% *}" = "$WANT" ]; then
		ok "$T/$m: ssh $(sof_ipoib_ip a) sha256sum of the copy from b: ${WANT:0:16}..., equal"
	else
		not_ok "$T/$m: ssh sha256sum" "'$got', want $WANT; $(head -c 300 "$SOF_TMP/ipssh.ssh.err" | tr '\n' ' ')"
	fi
	rm -f "$copy"
	sof_kill "ipssh.sshd.$m"
	ipdown a
	ipdown b
}

one_mode datagram 2044
# a new ib0 in each host, the old one's process gone
sleep 1
one_mode connected 65520
rm -f "$FILE"
sof_kill ibf.sm
sof_kill ibf.fabric
sof_exit
