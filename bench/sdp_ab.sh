#!/bin/bash
# bench/sdp_ab.sh — issue 22's SDP veth rows as an A/B of two libsdp
# builds: iperf3 (one TCP stream) and sockperf TCP ping-pong 14 B over SDP
# (LD_PRELOAD of libsdp.so, every socket `use sdp`) with the base build's
# libsdp.so and with this tree's, beside kernel TCP in every round, between
# two network-namespace hosts on a veth (sof_hosts_up 2; root). The method
# is bench/sockets_ab.sh's: the two builds alternate inside each round,
# their order reversed every other round; server pinned to CPU BENCH_CPU_A
# (0), client to BENCH_CPU_B (1). Both use this tree's librdmacm,
# libibverbs and daemons.
#
# Prints one line per figure (round, what, variant, value, 1-minute load)
# and a summary: the median of each figure and the median of the
# per-round ratios (SDP / TCP for each variant, new / base).
#
# Usage: bench/sdp_ab.sh BASE_LIBSDP [ROUNDS] [SECS]
#   BASE_LIBSDP  the base build's libsdp.so
#   ROUNDS       rounds (default 5); SECS: seconds a run (default 2)
#   SOF_BUILD    this tree's build (default build)
#   SDP_AB_WHERE loopback: both programs on one host (127.0.0.1, a private
#                network namespace with its own daemon) instead of veth hosts
#   NEW_LIBSDP   the new variant's libsdp.so (default this tree's); with
#                the same file as BASE_LIBSDP, an identical-build control
#   BASE_ENV, NEW_ENV  VAR=VALUE words added to each variant's environment
#                (e.g. NEW_ENV=LIBSDP_ZCOPY=0: one build, two settings)
#   IPERF_LEN    iperf3 -l (its writes and reads; default iperf3's 128 KiB)
#   AB_WHAT      the figures: "pp bw" (default), "bw" or "pp"
set -u
BASE=${1:?usage: bench/sdp_ab.sh BASE_LIBSDP [ROUNDS] [SECS]}
ROUNDS=${2:-5}
SECS=${3:-2}
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../tests/lib.sh"
cd "$SOF_ROOT" || exit 1
[ "${SDP_AB_WHERE:-veth}" = loopback ] && sof_ns_enter "$@"
sof_init
CPU_A=${BENCH_CPU_A:-0}
CPU_B=${BENCH_CPU_B:-1}
if [ ! -e "$BASE" ]; then
	echo "no $BASE" >&2
	exit 2
fi
if [ "${SDP_AB_WHERE:-veth}" = loopback ]; then
	A=127.0.0.1
	NSA=()
	NSB=()
else
	if ! sof_hosts_up 2; then
		echo "the hosts did not come up" >&2
		exit 1
	fi
	A=$(sof_host_ip a)
	NSA=(ip netns exec "$(sof_host_ns a)")
	NSB=(ip netns exec "$(sof_host_ns b)")
fi
printf 'use sdp server * *:*\nuse sdp client * *:*\n' >"$SOF_TMP/libsdp.conf"
OUT=$SOF_TMP/ab.tsv
PORT=20500

# pair SERVER... :: CLIENT...: server in host a, client in host b; the
# client's output in $SOF_TMP/cli.out
pair() {
	local s=() c=() side=s sp rc
	for w in "$@"; do
		if [ "$w" = :: ]; then
			side=c
		elif [ $side = s ]; then
			s+=("$w")
		else
			c+=("$w")
		fi
	done
	timeout -k 3 $((SECS + 20)) "${NSA[@]}" taskset -c "$CPU_A" "${s[@]}" \
		>"$SOF_TMP/srv.out" 2>&1 &
	sp=$!
	sleep 1 # rsockets and SDP servers listen on no kernel port
	timeout -k 3 $((SECS + 15)) "${NSB[@]}" taskset -c "$CPU_B" "${c[@]}" \
		>"$SOF_TMP/cli.out" 2>&1
	rc=$?
	sleep 0.3
	kill "$sp" 2>/dev/null
	wait "$sp" 2>/dev/null
	return $rc
}

# one WHAT PRELOAD: one figure (MiB/s for *bw, one-way us for *pp)
one() {
	local what=$1 pre=$2 pfx=() venv=()
	case $what in
	sdp*) read -ra venv <<<"$VENV"
		pfx=("$SOFTOFED" run -- env LD_PRELOAD="$pre"
		LIBSDP_CONFIG_FILE="$SOF_TMP/libsdp.conf" "${venv[@]}") ;;
	esac
	case $what in
	*pp) pair "${pfx[@]}" sockperf sr -i "$A" -p "$PORT" --tcp :: \
		"${pfx[@]}" sockperf pp -i "$A" -p "$PORT" --tcp -m 14 -t "$SECS" --mps 1500000 ;;
	*bw) pair "${pfx[@]}" iperf3 -s -1 -p "$PORT" -B "$A" :: \
		"${pfx[@]}" iperf3 -c "$A" -p "$PORT" -t "$SECS" ${IPERF_LEN:+-l $IPERF_LEN} -J ;;
	esac
	case $what in
	*pp) awk '/percentile 50.000/ { v = $NF } END { print v }' "$SOF_TMP/cli.out" ;;
	*bw) python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
print("%.1f" % (j["end"]["sum_received"]["bits_per_second"] / 8 / 1048576))' \
		"$SOF_TMP/cli.out" 2>/dev/null ;;
	esac
}

rec() {
	local v
	PORT=$((PORT + 1)) # here: one runs in a subshell
	v=$(one "$2" "$4")
	[ -n "$v" ] || echo "# $1 $2 $3 failed: $(tail -n 3 "$SOF_TMP/cli.out" "$SOF_TMP/srv.out" | tr '\n' ' ')" >&2
	printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "${v:-}" "$(cut -d' ' -f1 /proc/loadavg)" |
		tee -a "$OUT"
}

: >"$OUT"
for r in $(seq "$ROUNDS"); do
	order=(base new)
	[ $((r % 2)) = 0 ] && order=(new base)
	for what in ${AB_WHAT:-pp bw}; do
		VENV=
		rec "$r" "tcp$what" kernel ""
		for v in "${order[@]}"; do
			if [ "$v" = base ]; then
				VENV=${BASE_ENV:-}
				rec "$r" "sdp$what" base "$BASE"
			else
				VENV=${NEW_ENV:-}
				rec "$r" "sdp$what" new "${NEW_LIBSDP:-$SOF_BUILD_DIR/lib/libsdp.so}"
			fi
		done
	done
done

python3 - "$OUT" <<'EOF'
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
fig = {}
for r, what, var, v, _ in rows:
    if v:
        fig.setdefault((what, var), {})[r] = float(v)
def med(x):
    return statistics.median(x) if x else float("nan")
print("\nmedians (min .. max, runs)")
for k in sorted(fig):
    v = list(fig[k].values())
    print("  %-6s %-6s %9.1f  (%.1f .. %.1f, %d)" % (k[0], k[1], med(v), min(v), max(v), len(v)))
def ratio(a, b):
    x = [fig[a][r] / fig[b][r] for r in fig.get(a, {}) if r in fig.get(b, {}) and fig[b][r]]
    return "%.2f (%.2f .. %.2f, %d rounds)" % (med(x), min(x), max(x), len(x)) if x else "-"
print("\nmedian of per-round ratios")
for t in ("bw", "pp"):
    for v in ("base", "new"):
        print("  SDP %s / kernel TCP, %s: %s" % (t, v, ratio(("sdp" + t, v), ("tcp" + t, "kernel"))))
    print("  SDP %s new / base: %s" % (t, ratio(("sdp" + t, "new"), ("sdp" + t, "base"))))
EOF
