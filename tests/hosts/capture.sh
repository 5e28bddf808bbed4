#!/bin/bash
# RoCEv2 between hosts (issue 3), step 4: the wire as Wireshark sees it.
# Hosts a and b joined by a veth pair; tshark captures on host a's veth0
# (-F pcap) while
#   capture 1: ibv_rc_pingpong (65536 bytes at path MTU 1024: SEND FIRST/
#     MIDDLE/LAST; and over IPv6 GIDs), ibv_uc_pingpong, ibv_ud_pingpong;
#   capture 2: ib_send_lat, ib_write_bw (65536 bytes at MTU 1024: WRITE
#     FIRST/MIDDLE/LAST), ib_read_lat (8192 bytes: READ request and
#     responses), ib_atomic_lat FETCH_AND_ADD and CMP_AND_SWAP
#   capture 3: rping (librdmacm: the IB CM's MADs on QP1) with 10 pings;
# run between the hosts (server in a, client in b). Each capture is judged
# by sof_capture_check (tests/lib.sh):
#   decoded    every UDP/4791 packet decodes as InfiniBand with a BTH of a
#              defined opcode (tshark -Y 'udp.dstport == 4791 && !icmp'
#              -T fields -e infiniband.bth.opcode);
#   malformed  `tshark -Y _ws.malformed` and `-Y '_ws.expert.severity ==
#              "Error"'` print nothing (with tshark's heuristic dissectors of
#              InfiniBand payloads disabled: its RPC-over-RDMA guess calls
#              any SEND of under 16 bytes malformed);
#   icrc       tests/hosts/icrc_check.py computes every ICRC from the
#              headers as captured: all right (tshark 4.0 shows
#              infiniband.invariant.crc but has no preference or field that
#              checks it);
# and further: the opcodes that these programs must produce are all there;
# capture 3 holds CM MADs (management class 7) that Wireshark decodes as
# REQ, REP, RTU, DREQ and DREP, the REQ naming rping's port in its service
# ID and host a's address in its IP CM header (IBA Annex A11); the REP
# (IBA 12.6.8) answers that REQ (its Remote Communication ID is the REQ's
# Local one) and its Local QPN and Starting PSN are those host b's first
# data request goes to and host a's first one carries, as the REQ's are
# for the other way; the RTU names both Communication IDs;
# the capture has IPv6 RoCEv2 packets; the UDP source ports vary between
# QPs (RoCEv2 flow entropy), more than one distinct port.
# When the first run fails, the other runs are reported failed at once
# (SOF_HOSTS_KEEP_GOING=1 runs them all anyway).
#
# Needs root (ip netns) and tshark.
# Usage: tests/hosts/capture.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_init

PORT=20100

# run NAME PROG ARGS...: one server (a) / client (b) run; a line on failure
run() {
	local name=$1
	shift
	PORT=$((PORT + 1))
	sof_gated "$name" && return 1
	if ! SOF_LINEBUF=1 sof_host_pair "$name" a b "$PORT" 30 "$@"; then
		not_ok "$name" "$SOF_PAIR_WHY"
		sof_pair_dump
		# the first run between the hosts failed: the rest would too
		[ "$PORT" -eq 20101 ] && SOF_GATE="the first run between hosts failed"
		return 1
	fi
	return 0
}

# need NAME WHAT SEEN ITEM...: every ITEM (e.g. an opcode, 0x04) is a word
# of SEEN (what the capture showed)
need() {
	local name=$1 what=$2 seen=$3 i miss=""
	shift 3
	for i in "$@"; do
		[[ " $seen " == *" $i "* ]] || miss="$miss $i"
	done
	if [ -z "$miss" ]; then
		ok "$name: $what $* all present"
	else
		not_ok "$name" "$what missing on the wire:$miss (seen: $seen)"
	fi
}

sports() {
	timeout 60 tshark -n -r "$1" -Y "$SOF_ROCE_FILTER" -T fields -e udp.srcport 2>/dev/null | sort -u
}

# first FILE FILTER FIELD...: the fields of the first packet FILTER selects,
# as numbers (tshark prints some in hex), space-separated; "-" for a field
# that is missing or no number
first() {
	local f=$1 filter=$2 v out=""
	shift 2
	local args=()
	for v in "$@"; do args+=(-e "$v"); done
	for v in $(timeout 60 tshark -n -r "$f" -Y "$filter" -T fields -E separator=' ' -E occurrence=f \
		"${args[@]}" 2>/dev/null | head -n 1 | awk -v n=$# '{ for (i = 1; i <= n; i++) printf "%s ", ($i == "" ? "-" : $i) }'); do
		if [[ $v =~ ^(0x[0-9a-fA-F]+|[0-9]+)$ ]]; then out="$out $((v))"; else out="$out -"; fi
	done
	echo "${out# }"
}

# rep_check FILE: the CM's REP (IBA 12.6.8) answers the REQ and names host
# a's side of the connection that the data then uses: its Remote
# Communication ID is the REQ's Local one; host b's first request packet
# (opcode <= 0x0c, not to QP1) goes to the REP's Local QPN with the REQ's
# Starting PSN, host a's first one to the REQ's Local QPN with the REP's
# Starting PSN; the RTU carries both Communication IDs
rep_check() {
	local f=$1 a4 b4 REQ REP RTU B A
	a4=$(sof_host_ip a)
	b4=$(sof_host_ip b)
	REQ=$(first "$f" infiniband.cm.req infiniband.cm.req infiniband.cm.req.localqpn infiniband.cm.req.startpsn)
	REP=$(first "$f" infiniband.cm.rep infiniband.cm.rep infiniband.cm.rep.remotecommid \
		infiniband.cm.rep.localqpn infiniband.cm.rep.startpsn)
	RTU=$(first "$f" infiniband.cm.rtu.localcommid infiniband.cm.rtu.localcommid infiniband.cm.rtu.remotecommid)
	B=$(first "$f" "$SOF_ROCE_FILTER && ip.src == $b4 && infiniband.bth.destqp != 1 && infiniband.bth.opcode <= 12" \
		infiniband.bth.destqp infiniband.bth.psn)
	A=$(first "$f" "$SOF_ROCE_FILTER && ip.src == $a4 && infiniband.bth.destqp != 1 && infiniband.bth.opcode <= 12" \
		infiniband.bth.destqp infiniband.bth.psn)
	local q_cid q_qpn q_psn p_cid p_rcid p_qpn p_psn t_cid t_rcid b_qp b_psn a_qp a_psn
	read -r q_cid q_qpn q_psn <<<"$REQ"
	read -r p_cid p_rcid p_qpn p_psn <<<"$REP"
	read -r t_cid t_rcid <<<"$RTU"
	read -r b_qp b_psn <<<"$B"
	read -r a_qp a_psn <<<"$A"
	local why=""
	[[ "$REQ/$REP/$RTU/$B/$A" =~ ^[0-9]+(\ [0-9]+){2}/[0-9]+(\ [0-9]+){3}/[0-9]+\ [0-9]+/[0-9]+\ [0-9]+/[0-9]+\ [0-9]+$ ]] ||
		why="a field is missing: REQ '$REQ' REP '$REP' RTU '$RTU' b's first request '$B' a's '$A'"
	if [ -z "$why" ]; then
		[ "$p_rcid" = "$q_cid" ] || why="$why; REP remote comm ID $p_rcid, REQ's local one $q_cid"
		[ "$t_cid" = "$q_cid" ] && [ "$t_rcid" = "$p_cid" ] ||
			why="$why; RTU comm IDs $t_cid/$t_rcid, want $q_cid/$p_cid"
		[ "$b_qp" = "$p_qpn" ] || why="$why; b's requests go to QP $b_qp, the REP names QP $p_qpn"
		[ "$b_psn" = "$q_psn" ] || why="$why; b's first PSN $b_psn, the REQ's starting PSN $q_psn"
		[ "$a_qp" = "$q_qpn" ] || why="$why; a's requests go to QP $a_qp, the REQ names QP $q_qpn"
		[ "$a_psn" = "$p_psn" ] || why="$why; a's first PSN $a_psn, the REP's starting PSN $p_psn"
	fi
	if [ -z "$why" ]; then
		ok "hosts/capture cm: the REP answers the REQ (comm ID $q_cid), names QP $(printf 0x%06x "$p_qpn") and PSN $p_psn that host a's side then uses (the REQ's QP $(printf 0x%06x "$q_qpn") and PSN $q_psn host b's); the RTU names both comm IDs"
	else
		not_ok "hosts/capture cm: REP" "${why#; }"
	fi
}

if ! command -v tshark >/dev/null 2>&1; then
	not_ok "hosts/capture" "tshark is not installed (tests/install-deps.sh installs it)"
	sof_exit
fi

if sof_hosts_up 2; then
	cap=$SOF_TMP/pingpong.pcap
	if sof_capture_start hosts/capture.pp "$cap" veth0 a; then
		run "hosts/capture: ibv_rc_pingpong" ibv_rc_pingpong -g @GID@ --chk -m 1024 -s 65536 -n 20
		run "hosts/capture: ibv_rc_pingpong IPv6" ibv_rc_pingpong -g @GID6@ --chk -m 1024 -s 4096 -n 20
		run "hosts/capture: ibv_uc_pingpong" ibv_uc_pingpong -g @GID@ --chk -m 1024 -s 4096 -n 20
		run "hosts/capture: ibv_ud_pingpong" ibv_ud_pingpong -g @GID@ --chk -s 2048 -n 20
		sof_capture_stop hosts/capture.pp
		sof_capture_check "hosts/capture pingpong" "$cap"
		need "hosts/capture pingpong" opcodes "$SOF_CAP_OPCODES" 0x00 0x01 0x02 0x11 0x64
		if [[ " $SOF_CAP_OPCODES " =~ \ 0x2[0-4]\  ]]; then
			ok "hosts/capture pingpong: UC SEND opcodes present"
		else
			not_ok "hosts/capture pingpong" "no UC SEND opcode (0x20-0x24) on the wire"
		fi
		n6=$(timeout 60 tshark -n -r "$cap" -Y "ipv6 && $SOF_ROCE_FILTER" 2>/dev/null | wc -l)
		if [ "$n6" -gt 0 ]; then
			ok "hosts/capture pingpong: $n6 RoCEv2 packets over IPv6"
		else
			not_ok "hosts/capture pingpong" "no RoCEv2 packet over IPv6"
		fi
		np=$(sports "$cap" | wc -l)
		if [ "$np" -gt 1 ]; then
			ok "hosts/capture pingpong: $np distinct UDP source ports (flow entropy)"
		else
			not_ok "hosts/capture pingpong" "$np distinct UDP source port(s) over 8 QPs: $(sports "$cap" | tr '\n' ' ')"
		fi
	else
		not_ok "hosts/capture pingpong" "tshark did not start capturing on host a's veth0"
	fi

	cap=$SOF_TMP/perftest.pcap
	if sof_capture_start hosts/capture.pt "$cap" veth0 a; then
		run "hosts/capture: ib_send_lat" ib_send_lat -d sof0 -F -x @GID@ -n 50
		run "hosts/capture: ib_write_bw" ib_write_bw -d sof0 -F -x @GID@ -s 65536 --mtu 1024 -n 50
		run "hosts/capture: ib_read_lat" ib_read_lat -d sof0 -F -x @GID@ -s 8192 --mtu 1024 -n 50
		run "hosts/capture: ib_atomic_lat FETCH_AND_ADD" ib_atomic_lat -d sof0 -F -x @GID@ -A FETCH_AND_ADD -n 50
		run "hosts/capture: ib_atomic_lat CMP_AND_SWAP" ib_atomic_lat -d sof0 -F -x @GID@ -A CMP_AND_SWAP -n 50
		sof_capture_stop hosts/capture.pt
		sof_capture_check "hosts/capture perftest" "$cap"
		need "hosts/capture perftest" opcodes "$SOF_CAP_OPCODES" 0x04 0x06 0x07 0x08 0x0c 0x0d 0x0f 0x11 0x12 0x13 0x14
	else
		not_ok "hosts/capture perftest" "tshark did not start capturing on host a's veth0"
	fi

	# capture 3: the connection manager's MADs (issue 4)
	cap=$SOF_TMP/cm.pcap
	if sof_capture_start hosts/capture.cm "$cap" veth0 a; then
		if SOF_LINEBUF=1 sof_cm_pair "hosts/capture: rping" 60 a b \
			rping -s -v -a 10.77.0.1 -p 20199 -C 10 -- \
			rping -c -v -a 10.77.0.1 -p 20199 -C 10; then
			ok "hosts/capture: rping"
		else
			not_ok "hosts/capture: rping" "$SOF_PAIR_WHY"
			sof_pair_dump
		fi
		sleep 1 # the DREP
		sof_capture_stop hosts/capture.cm
		sof_capture_check "hosts/capture cm" "$cap"
		attrs=$(timeout 60 tshark -n -r "$cap" -Y 'infiniband.mad.mgmtclass == 0x07' -T fields \
			-e infiniband.mad.attributeid 2>/dev/null | sort -u | tr '\n' ' ')
		need "hosts/capture cm" "CM attributes (REQ, REP, RTU, DREQ, DREP)" "$attrs" \
			0x0010 0x0013 0x0014 0x0015 0x0016
		req=$(timeout 60 tshark -n -r "$cap" -Y 'infiniband.cm.req' -T fields -E separator=' ' \
			-e infiniband.cm.req.serviceid.dport -e infiniband.cm.req.ip_cm.ipv \
			-e infiniband.cm.req.ip_cm.dip4 2>/dev/null | head -n 1)
		# tshark prints the port and version in hex (0x4ee7 0x04)
		read -r rport rver rdst <<<"$req"
		[[ ${rport:-x} =~ ^(0x)?[0-9a-fA-F]+$ ]] && rport=$((rport)) || rport=bad
		[[ ${rver:-x} =~ ^(0x)?[0-9a-fA-F]+$ ]] && rver=$((rver)) || rver=bad
		if [ "$rport $rver ${rdst:-}" = "20199 4 10.77.0.1" ]; then
			ok "hosts/capture cm: the REQ's service ID and IP CM header name 10.77.0.1 port 20199"
		else
			not_ok "hosts/capture cm" "REQ service port, IP version, destination: '$req', expected '20199 4 10.77.0.1'"
		fi
		rep_check "$cap"
	else
		not_ok "hosts/capture cm" "tshark did not start capturing on host a's veth0"
	fi
fi

sof_exit
