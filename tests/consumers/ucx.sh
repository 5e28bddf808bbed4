#!/bin/bash
# The libraries on verbs (issue 17), UCX: Debian's unmodified UCX tools on
# our libraries through `softofed run`, on one host, UCX_NET_DEVICES=sof0:1:
#   ucx_info -d       lists the rc_verbs and ud_verbs transports on sof0:1
#                     and the rdmacm connection manager;
#   ucx_perftest UCT  -x rc_verbs: am_lat, put_lat (8 B, short), get
#                     (64 KiB zcopy), am_bw (4 KiB bcopy), put_bw (1 MiB
#                     zcopy); -x ud_verbs: am_lat, am_bw (1000 B bcopy);
#   ucx_perftest UCP  tag_lat, tag_bw (1 MiB), ucp_put_bw (1 MiB) with
#                     UCX_TLS=rc_verbs,ud_verbs,self (no shared memory or
#                     TCP transport may carry them);
#   io_demo -q        UCP client/server connected through the rdmacm CM (the
#                     server is ready when the daemon counts its listening
#                     cm_id, which proves the CM is ours)
#                     (UCX_SOCKADDR_TLS_PRIORITY=rdmacm) over the verbs
#                     transports, reads and writes of 1 B .. 1 MiB with
#                     UCX's own data-integrity check (-q).
# ucx_perftest checks no data; io_demo and tests/consumers/mpi.sh do.
# A perftest run passes when both sides exit with 0, the client printed
# its "Final:" line and no ERROR. A missing program is a failure.
# Usage: tests/consumers/ucx.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_ns_enter "$@"
sof_init

PORT=13400
export UCX_NET_DEVICES=sof0:1

# up NAME SRV_HOST CLI_HOST TARGET ARGS...: one ucx_perftest pair
up() {
	local name=$1 shost=$2 chost=$3 target=$4 final
	shift 4
	PORT=$((PORT + 1))
	if ! SOF_LINEBUF=1 sof_tcp_pair "$name" 40 "$shost" "$chost" "$PORT" \
		ucx_perftest -p "$PORT" -- ucx_perftest "$target" -p "$PORT" "$@"; then
		not_ok "$name" "$SOF_PAIR_WHY"
		sof_pair_dump
		return
	fi
	final=$(grep -E '^Final:' "$SOF_CLI_OUT" | tail -n 1)
	if [ -z "$final" ]; then
		not_ok "$name" "the client printed no Final: line"
		sof_pair_dump
	elif grep -q -E 'UCX +ERROR|[Ss]egmentation|[Aa]bort' "$SOF_SRV_OUT" "$SOF_CLI_OUT"; then
		not_ok "$name" "error text in the output"
		sof_pair_dump
	else
		ok "$name ($(echo "$final" | tr -s ' \t' ' '))"
	fi
}

# ucx_perf_all SRV_HOST CLI_HOST TARGET PREFIX: the UCT and UCP runs
ucx_perf_all() {
	local s=$1 c=$2 t=$3 p=$4
	up "$p rc_verbs am_lat" "$s" "$c" "$t" -x rc_verbs -d sof0:1 -t am_lat -s 8 -n 10000
	up "$p rc_verbs put_lat" "$s" "$c" "$t" -x rc_verbs -d sof0:1 -t put_lat -s 8 -n 10000
	up "$p rc_verbs get zcopy 64k" "$s" "$c" "$t" -x rc_verbs -d sof0:1 -t get -D zcopy -s 65536 -n 2000
	up "$p rc_verbs am_bw bcopy 4k" "$s" "$c" "$t" -x rc_verbs -d sof0:1 -t am_bw -D bcopy -s 4096 -n 10000
	up "$p rc_verbs put_bw zcopy 1m" "$s" "$c" "$t" -x rc_verbs -d sof0:1 -t put_bw -D zcopy -s 1048576 -n 500
	up "$p ud_verbs am_lat" "$s" "$c" "$t" -x ud_verbs -d sof0:1 -t am_lat -s 8 -n 10000
	up "$p ud_verbs am_bw bcopy 1000" "$s" "$c" "$t" -x ud_verbs -d sof0:1 -t am_bw -D bcopy -s 1000 -n 10000
	UCX_TLS=rc_verbs,ud_verbs,self up "$p UCP tag_lat" "$s" "$c" "$t" -t tag_lat -s 8 -n 10000
	UCX_TLS=rc_verbs,ud_verbs,self up "$p UCP tag_bw 1m" "$s" "$c" "$t" -t tag_bw -s 1048576 -n 500
	UCX_TLS=rc_verbs,ud_verbs,self up "$p UCP ucp_put_bw 1m" "$s" "$c" "$t" -t ucp_put_bw -s 1048576 -n 500
}

# io_demo_pair SRV_HOST CLI_HOST TARGET PREFIX: io_demo -q over the rdmacm
# CM (the server listens through the RDMA CM, not on a TCP port: its
# readiness is the daemon's count of listening cm_ids; it serves until it
# is stopped, so only the client's status counts)
io_demo_pair() {
	local s=$1 c=$2 t=$3 name="$4 io_demo -q rdmacm rc_verbs read,write 1B..1MiB" line
	PORT=$((PORT + 1))
	if ! UCX_TLS=rc_verbs,ud_verbs UCX_SOCKADDR_TLS_PRIORITY=rdmacm SOF_LINEBUF=1 \
		SOF_CM_SRV_STOP=1 sof_cm_pair "$name" 60 "$s" "$c" \
		io_demo -p "$PORT" -q -d 1:1048576 \
		-- io_demo -p "$PORT" -q -d 1:1048576 -o read,write -i 400 -t 30 -c 3 "$t"; then
		not_ok "$name" "$SOF_PAIR_WHY"
		sof_pair_dump
		return
	fi
	line=$(grep -E 'total min:' "$SOF_CLI_OUT" | tail -n 1)
	if ! grep -q "Client exit with status 'OK'" "$SOF_CLI_OUT" || [ -z "$line" ]; then
		not_ok "$name" "the client did not end with status OK"
		sof_pair_dump
	elif grep -q -i -E 'UCX +ERROR|data.*(corrupt|mismatch)|[Aa]ssertion|[Ss]egmentation' \
		"$SOF_SRV_OUT" "$SOF_CLI_OUT"; then
		not_ok "$name" "error text in the output"
		sof_pair_dump
	else
		ok "$name (${line##*| read})"
	fi
}

for p in ucx_info ucx_perftest io_demo; do
	if ! command -v "$p" >/dev/null 2>&1; then
		not_ok "ucx/$p" "$p is not installed (tests/install-deps.sh installs ucx-utils)"
		SOF_GATE=missing
	fi
done
[ -z "$SOF_GATE" ] || sof_exit
sof_local_if || sof_exit

out=$SOF_TMP/ucx_info.out
if ! timeout 30 "$SOFTOFED" run -- ucx_info -d >"$out" 2>&1; then
	not_ok "ucx/ucx_info -d" "exit status $?"
	sof_dump "$out"
else
	for tl in rc_verbs ud_verbs; do
		if awk -v tl="$tl" '/Transport:/ { t = $NF } /Device:/ && t == tl && $NF == "sof0:1" { f = 1 } END { exit !f }' "$out"; then
			ok "ucx/ucx_info -d: $tl on sof0:1"
		else
			not_ok "ucx/ucx_info -d: $tl on sof0:1" "not listed"
			sof_dump "$out"
		fi
	done
	if grep -q -E 'Connection manager: rdmacm' "$out"; then
		ok "ucx/ucx_info -d: rdmacm connection manager"
	else
		not_ok "ucx/ucx_info -d: rdmacm connection manager" "not listed"
	fi
fi

ucx_perf_all "" "" "$SOF_LOCAL_IP" ucx
io_demo_pair "" "" "$SOF_LOCAL_IP" ucx
sof_exit
