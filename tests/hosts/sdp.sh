#!/bin/bash
# SDP between two hosts (issue 22 item 2): network namespaces a and b on a
# veth, each with its daemon (sof_hosts_up 2); server in a, client in b,
# unmodified Debian programs through `softofed run` with our libsdp.so
# (`use sdp` for every server and client): iperf3 one stream and four,
# sockperf ping-pong and throughput, a 100 MiB file served by nc and
# fetched by curl (SHA-256 checked); no kernel TCP segment in either
# namespace (the RoCEv2 traffic is UDP); and a captured transfer (tshark
# on a's veth0): every RoCEv2 packet decoded, none malformed, ICRCs right,
# a CM REQ for the port, its REP's HelloAck decoded by tshark's SDP
# dissector, and every message's BSDH as A4 lays it out, zero copy asked
# for by LIBSDP_ZCOPY=1 (see sdp_capture).
# IPv6 between the hosts (fd77::1 <- fd77::2 on the same veth): iperf3,
# and a Python AF_INET6 server sending 100 MiB to curl (SHA-256 checked,
# getpeername the client's IPv6 address, no kernel TCP segment), captured:
# the CM REQ's Hello with IP version 6 and both addresses (sdp_capture6).
# Usage: tests/hosts/sdp.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_init

PORT=19950
SOF_RS_PRELOAD=$SOF_BUILD_DIR/lib/libsdp.so
export LIBSDP_CONFIG_FILE=$SOF_TMP/libsdp.conf
printf 'use sdp server * *:*\nuse sdp client * *:*\n' >"$LIBSDP_CONFIG_FILE"

# sdp_capture: 4 MiB over SDP while tshark captures a's veth0; judged as
# RoCEv2 (sof_capture_check), then as SDP: the CM REQ's service ID names
# the port, tshark's SDP dissector reads the REP's private data as a
# HelloAck, and every message (the payload of each SEND First/Only) starts
# with a BSDH of A4's layout: MID Data, DisConn, SrcAvail, RdmaRdCompl,
# SinkAvail or RdmaWrCompl,
# Len at least 16, MSeq 1, 2, 3 ... in each direction (a retransmitted one
# may repeat), a DisConn each way at the end, each SrcAvail answered by a
# RdmaRdCompl and read by an RDMA READ; write mode: the client, as data
# sink, offers SinkAvails after the first SrcAvail, each RdmaWrCompl
# follows one, and RDMA WRITEs are on the wire
sdp_capture() {
	local file=$SOF_TMP/sdp.pcap name="hosts/sdp capture" n why
	PORT=$((PORT + 1))
	if ! sof_capture_start sdp.cap "$file" veth0 a; then
		not_ok "$name" "the capture did not start"
		return
	fi
	# 4 MiB: enough rounds that the reader's SinkAvails meet data still to
	# send (with 1 MiB the source had, at times, sent all before one came);
	# zero copy asked for (LIBSDP_ZCOPY=1: unset, libsdp offers none)
	export LIBSDP_ZCOPY=1
	sof_rs_http "hosts/sdp curl nc libsdp 4 MiB (captured, LIBSDP_ZCOPY=1)" a b "$A" "$PORT" 4
	unset LIBSDP_ZCOPY
	sof_capture_stop sdp.cap
	sof_capture_check "$name" "$file"
	n=$(timeout 120 tshark -n -r "$file" -Y "infiniband.cm.req.serviceid.dport == $PORT" 2>/dev/null | wc -l)
	if [ "$n" -lt 1 ]; then
		not_ok "$name: CM" "no CM REQ for port $PORT"
	elif [ "$(timeout 120 tshark -n -r "$file" -Y 'infiniband_sdp.hah' 2>/dev/null | wc -l)" -lt 1 ]; then
		not_ok "$name: CM" "tshark's SDP dissector found no HelloAck"
	else
		ok "$name: CM: a REQ for port $PORT, its REP's HelloAck decoded by tshark as SDP"
	fi
	# SEND First (0) and Only (4): the start of each message
	_sof_tshark_opts
	why=$(timeout 120 tshark -n "${SOF_TSHARK_OPTS[@]}" -r "$file" \
		-Y "$SOF_ROCE_FILTER && (infiniband.bth.opcode == 0 || infiniband.bth.opcode == 4)" \
		-T fields -e ip.src -e data.data 2>/dev/null | python3 -c '
import sys
seq, disc, src, rrc, sink, rwc, n = {}, {}, {}, {}, {}, {}, 0
for line in sys.stdin:
    ip, _, data = line.rstrip("\n").partition("\t")
    b = bytes.fromhex(data.split(",")[0])
    if len(b) < 16:
        sys.exit("%s: a message of %d bytes has no BSDH" % (ip, len(b)))
    mid, ln, mseq = b[0], int.from_bytes(b[4:8], "big"), int.from_bytes(b[8:12], "big")
    want = seq.get(ip, 0) + 1
    if mseq == want - 1 and mseq:
        continue  # the same message sent again (an RC retransmission)
    if mid not in (0xff, 0x02, 0xfe, 0x06, 0xfd, 0x05) or ln < 16 or mseq != want:
        sys.exit("%s: BSDH MID 0x%02x Len %d MSeq %d (want MSeq %d)" % (ip, mid, ln, mseq, want))
    seq[ip] = mseq
    disc[ip] = disc.get(ip, 0) + (mid == 0x02)
    src[ip] = src.get(ip, 0) + (mid == 0xfe)
    rrc[ip] = rrc.get(ip, 0) + (mid == 0x06)
    sink[ip] = sink.get(ip, 0) + (mid == 0xfd)
    rwc[ip] = rwc.get(ip, 0) + (mid == 0x05)
    n += 1
a, b = sorted(seq) if len(seq) == 2 else (None, None)
if a is None or any(disc.get(s) != 1 for s in seq):
    sys.exit("directions %s, DisConns %s" % (sorted(seq), disc))
if src.get(a, 0) != rrc.get(b, 0) or src.get(b, 0) != rrc.get(a, 0) or not sum(src.values()):
    sys.exit("SrcAvails %s, RdmaRdCompls %s: not one for one, or none" % (src, rrc))
# write mode: each RdmaWrCompl uses a SinkAvail the other side sent
# before it; at most one more SinkAvail than RdmaWrCompls (the last unused)
if any(not 0 <= sink.get(b if s == a else a, 0) - rwc.get(s, 0) <= 1 for s in (a, b)) or not sum(rwc.values()):
    sys.exit("SinkAvails %s, RdmaWrCompls %s: not one for one, or none" % (sink, rwc))
print("%d messages, MSeq in order each way, one DisConn each way, %d SrcAvail each answered by a RdmaRdCompl, %d RdmaWrCompl each after a SinkAvail" % (n, sum(src.values()), sum(rwc.values())))
' 2>&1)
	if [ $? -ne 0 ]; then
		not_ok "$name: BSDH" "$why"
	else
		ok "$name: BSDH: $why"
	fi
	# the zero-copy reads: RDMA READ request (0x0c) and responses; the
	# writes into SinkAvails: RDMA WRITE First (0x06) or Only (0x0a)
	case " $SOF_CAP_OPCODES " in
	*" 0x0c "*) ok "$name: RDMA READs of the SrcAvails on the wire (opcodes $SOF_CAP_OPCODES)" ;;
	*) not_ok "$name: RDMA READ" "no RDMA READ request on the wire (opcodes $SOF_CAP_OPCODES)" ;;
	esac
	case " $SOF_CAP_OPCODES " in
	*" 0x06 "* | *" 0x0a "*) ok "$name: RDMA WRITEs into the SinkAvails on the wire (write mode)" ;;
	*) not_ok "$name: RDMA WRITE" "no RDMA WRITE on the wire (opcodes $SOF_CAP_OPCODES)" ;;
	esac
}

# sdp_noadvert: 100 MiB nc -> curl (SHA-256) with LIBSDP_ZCOPY unset: no
# SrcAvail or SinkAvail either way between hosts either (the send ring's
# slot is the copy a SEND goes from: sdp/README.md "Zero copy"), from
# both ends' counts in their log (level 1)
sdp_noadvert() {
	local name="hosts/sdp curl nc libsdp 100 MiB" log=$SOF_TMP/noadvert.log n z
	: >"$log"
	LIBSDP_LOG=$log LIBSDP_LOG_LEVEL=1 sof_rs_http "$name" a b "$A" "$PORT" 100 || return
	n=$(grep -c 'zero copy: ' "$log")
	z=$(grep -c 'zero copy: 0 SrcAvail sent, 0 RdmaWrCompl sent, 0 SinkAvail offered' "$log")
	if [ "$n" -ge 2 ] && [ "$n" = "$z" ]; then
		ok "$name: no advert with LIBSDP_ZCOPY unset ($n connection ends counted)"
	else
		not_ok "$name: no advert" "$z of $n ends without one: $(grep 'zero copy: ' "$log" | sed 's/.*zero copy: //' | tr '\n' ' ')"
	fi
}

# sdp_capture6: a transfer over IPv6 captured on a's veth0: the Hello in
# the CM REQ says IP version 6, source fd77::2, destination fd77::1
sdp_capture6() {
	local file=$SOF_TMP/sdp6.pcap name="hosts/sdp IPv6 capture" hh
	PORT=$((PORT + 1))
	if ! sof_capture_start sdp6.cap "$file" veth0 a; then
		not_ok "$name" "the capture did not start"
		return
	fi
	SOF_RS_PEER=$B6 sof_rs_http6 "hosts/sdp Python AF_INET6 server, curl, IPv6 1 MiB (captured)" \
		a b "$A6" "$PORT" 1
	sof_capture_stop sdp6.cap
	# tshark's SDP dissector knows a Hello by A4's service ID, which our
	# CM does not put on the wire (sdp/README.md), and reads the first 36
	# bytes of the REQ's private data as an IP CM header: the private data
	# is taken from the UDP payload (BTH 12, DETH 8, MAD header 24, REQ
	# private data at byte 140 of the MAD's data) and read as A4.3.3 lays
	# the Hello out
	hh=$(timeout 120 tshark -n -r "$file" -Y "infiniband.cm.req.serviceid.dport == $PORT" \
		-T fields -e udp.payload 2>/dev/null | head -n 1 | python3 -c '
import ipaddress, sys
b = bytes.fromhex(sys.stdin.read().strip())[184:184 + 92]
if len(b) < 64 or b[0] != 0:
    sys.exit("no Hello (MID 0) in the REQ private data (%d bytes)" % len(b))
print(b[17] >> 4, ipaddress.ip_address(b[32:48]), ipaddress.ip_address(b[48:64]),
      int.from_bytes(b[28:30], "big"))
' 2>&1)
	read -r ipv src dst lport <<<"$hh"
	if [ "$ipv" = 6 ] && [ "$src" = "$B6" ] && [ "$dst" = "$A6" ] && [ -n "$lport" ]; then
		ok "$name: the REQ's Hello (A4.3.3): IP version 6, $src port $lport -> $dst"
	else
		not_ok "$name" "the REQ's Hello: '$hh' (want IP version 6, $B6 -> $A6)"
	fi
}

if sof_hosts_up 2; then
	A=$(sof_host_ip a)
	PORT=$((PORT + 1))
	sof_rs_iperf "hosts/sdp iperf3 libsdp" a b "$A" "$PORT"
	PORT=$((PORT + 1))
	sof_rs_iperf "hosts/sdp iperf3 libsdp -P 4" a b "$A" "$PORT" -P 4
	PORT=$((PORT + 1))
	sof_rs_sockperf "hosts/sdp sockperf pp --tcp libsdp" a b "$A" "$PORT" pp
	PORT=$((PORT + 1))
	sof_rs_sockperf "hosts/sdp sockperf tp --tcp libsdp" a b "$A" "$PORT" tp
	PORT=$((PORT + 1))
	sdp_noadvert
	sdp_capture
	A6=$(sof_host_ip6 a) B6=$(sof_host_ip6 b)
	PORT=$((PORT + 1))
	sof_rs_iperf "hosts/sdp iperf3 libsdp over IPv6" a b "$A6" "$PORT"
	PORT=$((PORT + 1))
	SOF_RS_PEER=$B6 sof_rs_http6 "hosts/sdp Python AF_INET6 server, curl, IPv6 100 MiB" \
		a b "$A6" "$PORT" 100
	sdp_capture6
else
	not_ok "hosts/sdp" "the hosts did not come up"
fi
sof_exit
