#!/bin/bash
# Loss recovery between hosts (issue 18, item 2), by itself: hosts a and b
# joined through tests/progs/netwire (sof_hosts_up 2 wire) with
# segmentation and GRO off on every veth (sof_hosts_per_packet: the cable
# drops packets, not GSO frames of up to 64), at 0, 1 and 5 % of the frames
# host b (the client, which sends the data) sends dropped:
#   - ib_write_bw and ib_send_bw 1 MiB, path MTU 4096, softofed with the
#     selective acknowledgements (default) and without them
#     (SOFTOFED_SACK=0 in both programs: go-back-N, as with a standard
#     peer);
#   - one kernel TCP stream (iperf3 -t SECS) through the same cable.
# Every round runs every loss level (so a ratio to the loss-free figure
# compares runs minutes apart at most); rounds alternate the order of
# levels and of kinds (A/B/C, then C/B/A, ...), as the machine is shared. Beside each softofed figure: the frames the cable
# dropped and host b's resends (retransmits), SACK resends, probes and
# local ACK timeouts over that run (softofed status; the engines in the
# programs count into their daemon's counters), and the UDP datagrams each
# host's kernel dropped for a full socket buffer (rcvbuf_a, rcvbuf_b: loss
# the cable does not count). Each line is
#   loss=P what=W round=R MiB/s=V dropped=D retransmits=.. sack_resends=..
#   probes=.. timeouts=.. nak_rcvd=.. tx_packets=.. rcvbuf_a=.. rcvbuf_b=..
#   wire_lost=.. drops_psn=.. (host b's packets dropped for their PSN: a
#   READ's responses it had, or could not take yet) a_dup_req=..
#   a_tx_packets=.. (host a's duplicate requests and packets sent)
# and a summary per loss and kind (median of the rounds, ratio to the
# loss-free median of the same kind). Needs root (ip netns).
# Usage: bench/loss.sh [ROUNDS (default 3)] [SECS (iperf3, default 3)]
#   SOF_LOSS_ITERS (default 400): iterations of each perftest run;
#   SOF_LOSS_KINDS, SOF_LOSS_LEVELS: a subset (e.g. "write-sack tcp", "1");
#     read-sack and read-gbn run ib_read_bw (b, the client, READs: its
#     responses come from a);
#   SOF_LOSS_HOST (default b): the host whose sent frames are dropped (a:
#     ib_read_bw's READ responses);
#   SOF_LOSS_ENV: more environment for both programs (SOFTOFED_TRACE=1);
#   SOF_LOSS_KEEP=DIR: each client's output (and trace) kept there;
#   SOF_LOSS_AB=DIR: A/B against another build (DIR holds its bin/ and
#     lib/, e.g. a copy of the base commit's build): every softofed run
#     goes twice, with each build's programs (library and the engine in
#     it; the daemons stay this build's), the order reversed every other
#     round; the kind is then named KIND@new or KIND@base in each line
#     and in the summary.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=tests/lib.sh
. "$ROOT/tests/lib.sh"
sof_init

ROUNDS=${1:-3}
SECS=${2:-3}
N=${SOF_LOSS_ITERS:-400}
LOSSY=${SOF_LOSS_HOST:-b}
PORT=20500
OUT=$SOF_TMP/loss.lines

# The UDP datagrams host $1's kernel dropped for a full receive buffer
# (IPv4 and IPv6): a loss the cable does not count (a process that did not
# read its socket in time).
rcvbuf_errs() {
	timeout 10 ip netns exec "$(sof_host_ns "$1")" awk '
		$1 == "Udp:" && $2 ~ /^[0-9]+$/ { for (i = 2; i <= NF; i++) if (h[i] == "RcvbufErrors") n += $i }
		$1 == "Udp:" && $2 !~ /^[0-9]+$/ { for (i = 2; i <= NF; i++) h[i] = $i }
		$1 == "Udp6RcvbufErrors" { n += $2 }
		END { print n + 0 }' /proc/net/snmp /proc/net/snmp6 2>/dev/null || echo 0
}

# one KIND at LOSS: a line into OUT
one() {
	local loss=$1 kind=$2 round=$3 prog env="" v line d ra rb
	PORT=$((PORT + 1))
	case $kind in
	tcp)
		sof_host_bg loss.srv a $((SECS + 30)) iperf3 -s -1 -p "$PORT" -B "$(sof_host_ip a)"
		sleep 0.5
		sof_snap "$SOF_TMP/s0" >/dev/null
		sof_host_run b iperf3 -c "$(sof_host_ip a)" -p "$PORT" -t "$SECS" -J >"$SOF_TMP/cli" 2>&1
		sof_snap "$SOF_TMP/s1" >/dev/null
		sof_wait loss.srv 10
		v=$(python3 -c '
import json, sys
e = json.load(open(sys.argv[1]))["end"]
s = e.get("sum_received") or e.get("sum")
r = e.get("sum_sent", {}).get("retransmits", "?")
print("%.1f %s" % (s["bits_per_second"] / 8 / 1048576, r))' "$SOF_TMP/cli" 2>/dev/null)
		d=$(sof_snap_delta "$SOF_TMP/s0" "$SOF_TMP/s1" | awk -v k="wire.w$LOSSY.dropped" '$1 == k { print $2 }')
		echo "loss=$loss what=tcp round=$round MiB/s=${v% *} dropped=${d:-?} tcp_retransmits=${v#* }" |
			tee -a "$OUT"
		return
		;;
	*-sack*) env="" ;;
	*-gbn*) env="SOFTOFED_SACK=0" ;;
	esac
	env="$env ${SOF_LOSS_ENV:-}"
	prog=${kind%@*}
	prog=ib_${prog%-*}_bw
	SOF_SRV_ENV=$env SOF_CLI_ENV=$env
	export SOF_SRV_ENV SOF_CLI_ENV
	SOF_PAIR_SARGS=(-d sof0 -F -x "$(sof_host_gid a)" -s 1048576 --mtu 4096 -n "$N")
	SOF_PAIR_CARGS=(-d sof0 -F -x "$(sof_host_gid b)" -s 1048576 --mtu 4096 -n "$N")
	SOF_CLI_OUT=$(sof_out "loss.${kind/@/.}.cli")
	ra=$(rcvbuf_errs a) rb=$(rcvbuf_errs b)
	sof_snap "$SOF_TMP/s0" >/dev/null
	if ! _sof_pair_run "loss.${kind/@/.}" a b "$PORT" 180 "$(sof_host_ip a)" "$prog"; then
		[ -z "${SOF_LOSS_KEEP:-}" ] || cp "$SOF_CLI_OUT" "$SOF_LOSS_KEEP/$loss.$kind.$round.failed.cli"
		echo "loss=$loss what=$kind round=$round failed: $SOF_PAIR_WHY $(tail -n 2 "$SOF_CLI_OUT" | tr '\n' ' ')" |
			tee -a "$OUT"
		return
	fi
	sof_snap "$SOF_TMP/s1" >/dev/null
	[ -z "${SOF_LOSS_KEEP:-}" ] || cp "$SOF_CLI_OUT" "$SOF_LOSS_KEEP/$loss.$kind.$round.cli"
	ra=$(($(rcvbuf_errs a) - ra)) rb=$(($(rcvbuf_errs b) - rb))
	line=$(grep -E '^ *1048576 +[0-9]+ ' "$SOF_CLI_OUT" | tail -n 1)
	v=$(echo "$line" | awk '{ print $4 }')
	sof_snap_delta "$SOF_TMP/s0" "$SOF_TMP/s1" | awk -v pre="loss=$loss what=$kind round=$round MiB/s=${v:-?}" \
		-v rb="rcvbuf_a=$ra rcvbuf_b=$rb" -v dk="wire.w$LOSSY.dropped" '
		{ c[$1] = $2 }
		END {
			printf "%s dropped=%d retransmits=%d sack_resends=%d probes=%d timeouts=%d nak_rcvd=%d tx_packets=%d %s wire_lost=%d drops_psn=%d a_dup_req=%d a_tx_packets=%d\n",
				pre, c[dk], c["b.counters.retransmits"],
				c["b.counters.sack_resends"], c["b.counters.probes"],
				c["b.counters.timeouts"], c["b.counters.nak_rcvd"], c["b.counters.tx_packets"], rb,
				c["wire.wa.lost"] + c["wire.wb.lost"], c["b.drops.psn"], c["a.counters.dup_req"],
				c["a.counters.tx_packets"]
		}' | tee -a "$OUT"
}

if ! sof_hosts_up 2 wire || ! sof_hosts_per_packet; then
	echo "bench/loss: cannot bring the hosts up with segmentation off" >&2
	exit 1
fi
NEW_SOFTOFED=$SOFTOFED
if [ -n "${SOF_LOSS_AB:-}" ] && [ ! -x "$SOF_LOSS_AB/bin/softofed" ]; then
	echo "bench/loss: no $SOF_LOSS_AB/bin/softofed" >&2
	exit 1
fi
read -r -a KINDS <<<"${SOF_LOSS_KINDS:-write-sack write-gbn send-sack send-gbn tcp}"
read -r -a LEVELS <<<"${SOF_LOSS_LEVELS:-0 1 5}"
# reversed A B C -> C B A
reversed() {
	local i
	for ((i = $# ; i > 0; i--)); do echo "${!i}"; done
}
# every round takes every level, so that a lossy figure and the loss-free
# one it is divided by come from the same minutes of a shared machine;
# the order of levels and of kinds is reversed every other round
for r in $(seq "$ROUNDS"); do
	levels=("${LEVELS[@]}") order=("${KINDS[@]}")
	if [ $((r % 2)) = 0 ]; then
		mapfile -t levels < <(reversed "${LEVELS[@]}")
		mapfile -t order < <(reversed "${KINDS[@]}")
	fi
	for loss in "${levels[@]}"; do
		sof_netem_clear "$LOSSY"
		[ "$loss" = 0 ] || sof_netem "$LOSSY" loss "$loss%" || exit 1
		for k in "${order[@]}"; do
			if [ -z "${SOF_LOSS_AB:-}" ] || [ "$k" = tcp ]; then
				one "$loss" "$k" "$r"
				continue
			fi
			builds=(new base)
			[ $((r % 2)) = 0 ] && builds=(base new)
			for b in "${builds[@]}"; do
				SOFTOFED=$NEW_SOFTOFED
				[ "$b" = base ] && SOFTOFED=$SOF_LOSS_AB/bin/softofed
				one "$loss" "$k@$b" "$r"
			done
			SOFTOFED=$NEW_SOFTOFED
		done
	done
done
sof_netem_clear "$LOSSY"
echo "# summary: median MiB/s of the rounds (ratio to the same kind's loss-free median;"
echo "# [median of the per-round ratios, each to that round's loss-free figure])"
python3 - "$OUT" <<'PY'
import re, statistics, sys
v = {}
byround = {}
for l in open(sys.argv[1]):
    m = dict(re.findall(r'(\S+?)=(\S+)', l))
    try:
        v.setdefault((m['what'], m['loss']), []).append(float(m['MiB/s']))
        byround[(m['what'], m['loss'], m['round'])] = float(m['MiB/s'])
    except (KeyError, ValueError):
        pass
kinds = ('write-sack', 'write-gbn', 'send-sack', 'send-gbn', 'read-sack', 'read-gbn', 'tcp')
for what in sorted({w for w, _ in v}, key=lambda w: (kinds.index(w.split('@')[0])
                                                    if w.split('@')[0] in kinds else 9, w)):
    base = statistics.median(v.get((what, '0')) or [0])
    row = []
    for loss in ('0', '1', '5'):
        x = v.get((what, loss))
        if not x:
            row.append('%s%%: -' % loss)
            continue
        med = statistics.median(x)
        pr = [byround[k] / byround[(what, '0', k[2])] for k in byround
              if k[0] == what and k[1] == loss and byround.get((what, '0', k[2]))]
        row.append('%s%%: %.0f (%s) [%s]' % (loss, med, '%.2f' % (med / base) if base else '-',
                                              '%.2f' % statistics.median(pr) if pr else '-'))
    print('%-15s %s' % (what, '  '.join(row)))
PY
[ -n "$SOF_WIRE" ] && sof_kill hosts.wire
sof_exit
