# shellcheck shell=bash disable=SC2016
# tests/lib.sh — shell helpers shared by the test scripts (bash; source it).
#
# What it gives:
#   SOF_ROOT, SOF_BUILD (build directory, default "build"; SOF_BUILD=build-asan
#   for the sanitizer build), SOF_BUILD_DIR, SOF_BIN, SOFTOFED (the CLI);
#   sof_run CMD...        runs CMD on our libraries: `softofed run -- CMD...`
#   sof_ns_run CMD...     runs CMD in a fresh network namespace with a private
#                         daemon (`softofed up` before, `softofed down` after),
#                         returns CMD's status; SOF_NS_TIMEOUT=SECS bounds CMD
#   sof_ns_enter "$@"     at the top of a test script: re-executes the script
#                         under sof_ns_run unless it already runs there
#   sof_bg NAME SECS CMD...   start CMD in the background under `timeout SECS`,
#                         output in "$(sof_out NAME)"; sof_wait NAME [SECS],
#                         sof_kill NAME act on that PID only (and the process
#                         group `timeout` made for it), never on a name
#   sof_wait_listen PORT SECS [NAME]  wait until a TCP port listens
#   sof_pair NAME PORT SECS PROG ARGS...  server/client pair of one of the
#                         classic RDMA examples (see below)
#   ok NAME / not_ok NAME REASON     the result lines the runner counts
#
# Processes are stopped by the PIDs we started, never with pkill/killall.
# Every background process runs under `timeout`, so none outlives its test by
# more than its bound even when this script is killed with SIGKILL.

SOF_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# sof_use_build DIR: select the build whose daemon, CLI and library are used
sof_use_build() {
	SOF_BUILD=$1
	case $SOF_BUILD in
	/*) SOF_BUILD_DIR=$SOF_BUILD ;;
	*) SOF_BUILD_DIR=$SOF_ROOT/$SOF_BUILD ;;
	esac
	SOF_BIN=$SOF_BUILD_DIR/bin
	SOFTOFED=$SOF_BIN/softofed
	SOFTOFED_DAEMON=$SOF_BIN/softofedd
	export SOF_BUILD SOFTOFED_DAEMON
}
sof_use_build "${SOF_BUILD:-build}"

SOF_FAILED=0
SOF_PASSED=0

ok() {
	SOF_PASSED=$((SOF_PASSED + 1))
	echo "ok - $1"
}

not_ok() {
	SOF_FAILED=$((SOF_FAILED + 1))
	echo "not ok - $1: ${2:-failed}"
}

# sof_exit: leave a test script with 1 when any not_ok was printed
sof_exit() {
	[ "$SOF_FAILED" -eq 0 ]
	exit $?
}

sof_run() {
	"$SOFTOFED" run -- "$@"
}

now_ms() {
	echo $(($(date +%s%N) / 1000000))
}

# sof_dump FILE...: show the tail of output files as diagnostic lines
sof_dump() {
	local f
	for f in "$@"; do
		[ -e "$f" ] || continue
		echo "#   --- ${f##*/} (last 25 lines)"
		tail -n 25 "$f" | sed 's/^/#   /'
	done
}

# ---------------------------------------------------------------------------
# Private network namespace with a private daemon

# The log file the daemonized softofedd of this network namespace writes.
sof_daemon_log() {
	echo "/tmp/softofed-$(id -u)-$(stat -L -c %i /proc/self/ns/net).log"
}

# _sof_ns_inner CMD...: runs inside the new namespace (see sof_ns_run).
_sof_ns_inner() {
	local name=${SOF_NS_NAME:-${1##*/}} log dlog rc pid
	if ! ip link set lo up; then
		echo "not ok - $name: cannot bring lo up in the new network namespace"
		return 1
	fi
	log=$(mktemp /tmp/sof-ns.XXXXXX) || return 1
	dlog=$(sof_daemon_log)
	rm -f "$dlog"
	if ! timeout 20 "$SOFTOFED" up >"$log" 2>&1 </dev/null; then
		echo "not ok - $name: softofed up failed"
		sof_dump "$log" "$dlog"
		rm -f "$log"
		return 1
	fi
	pid=$(timeout 10 "$SOFTOFED" status 2>/dev/null </dev/null |
		sed -n 's/^softofed daemon pid \([0-9]*\).*/\1/p' | head -n 1)
	[ -n "${SOF_NS_PIDFILE:-}" ] && [ -n "$pid" ] && echo "$pid" >"$SOF_NS_PIDFILE"
	if [ -n "${SOF_NS_TIMEOUT:-}" ]; then
		timeout -k 5 "$SOF_NS_TIMEOUT" "$@"
		rc=$?
		[ $rc -eq 124 ] && echo "not ok - $name: timed out after ${SOF_NS_TIMEOUT} s"
	else
		"$@"
		rc=$?
	fi
	if ! timeout 20 "$SOFTOFED" down >"$log" 2>&1 </dev/null; then
		echo "not ok - $name: softofed down failed"
		sof_dump "$log"
		[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
		[ $rc -eq 0 ] && rc=1
	fi
	# Sanitizer reports of the daemon land in its log, not in our output.
	if [ -f "$dlog" ] && grep -q -E 'ERROR: (Address|Leak|Thread|Memory)Sanitizer|runtime error:' "$dlog"; then
		echo "not ok - $name: sanitizer report in the daemon log"
		grep -E -A 30 'ERROR: |runtime error:' "$dlog" | head -n 60 | sed 's/^/#   /'
		[ $rc -eq 0 ] && rc=1
	fi
	rm -f "$log" "$dlog"
	return $rc
}

# sof_ns_run CMD...: CMD in a fresh network namespace (unshare -n, lo up) with
# its own daemon; returns CMD's status (1 when the daemon could not start).
# The daemon is stopped by `softofed down`, or killed by its PID when this
# function is interrupted.
sof_ns_run() {
	local pidfile rc old_term old_int outer=()
	pidfile=$(mktemp /tmp/sof-ns-pid.XXXXXX) || return 1
	if [ "$(id -u)" -eq 0 ]; then
		outer=(unshare -n)
	else
		outer=(unshare -r -n)
	fi
	if [ -n "${SOF_NS_TIMEOUT:-}" ]; then
		outer=(timeout -k 5 $((SOF_NS_TIMEOUT + 60)) "${outer[@]}")
	fi
	# an interrupted run must not leave its daemon behind
	old_term=$(trap -p TERM)
	old_int=$(trap -p INT)
	trap '_sof_ns_reap "'"$pidfile"'"; exit 143' TERM
	trap '_sof_ns_reap "'"$pidfile"'"; exit 130' INT
	SOF_NS_PIDFILE=$pidfile "${outer[@]}" bash -c \
		'. "$1" || exit 1; shift; _sof_ns_inner "$@"' \
		sof-ns "$SOF_ROOT/tests/lib.sh" "$@"
	rc=$?
	trap - TERM INT
	eval "$old_term"
	eval "$old_int"
	_sof_ns_reap "$pidfile"
	return $rc
}

# _sof_ns_reap PIDFILE: kill the namespace's daemon if it is still alive
# (only when it really is the softofedd we started).
_sof_ns_reap() {
	local pid
	pid=$(cat "$1" 2>/dev/null)
	rm -f "$1"
	[ -n "$pid" ] || return 0
	if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = softofedd ]; then
		kill -TERM "$pid" 2>/dev/null
		sleep 0.5
		kill -KILL "$pid" 2>/dev/null
	fi
	return 0
}

# sof_ns_enter "$@": first line of a test script that needs its own
# namespace and daemon.
sof_ns_enter() {
	if [ -z "${SOF_NS_INSIDE:-}" ]; then
		SOF_NS_INSIDE=1 SOF_NS_NAME=${SOF_NS_NAME:-${0##*/}} sof_ns_run bash "$0" "$@"
		exit $?
	fi
}

# ---------------------------------------------------------------------------
# Background processes, by PID

declare -A SOF_PID=()
SOF_TMP=""
SOF_KILL_RC=0

# sof_init: the scratch directory and the cleanup of whatever we started
sof_init() {
	SOF_TMP=$(mktemp -d /tmp/sof-test.XXXXXX) || exit 1
	trap 'sof_cleanup 2>/dev/null' EXIT
	trap 'exit 143' TERM
	trap 'exit 130' INT
}

sof_cleanup() {
	local n
	# (stderr: bash 5.2 may complain about reaped command substitutions here)
	for n in "${!SOF_PID[@]}"; do
		sof_kill "$n" 2>/dev/null
	done
	[ -n "$SOF_TMP" ] && rm -rf "$SOF_TMP"
}

sof_out() {
	echo "$SOF_TMP/${1//[^A-Za-z0-9._-]/_}.out"
}

# sof_bg NAME SECS CMD...: CMD in the background, bounded by `timeout SECS`
# (which puts it in a process group of its own), stdout+stderr to sof_out.
sof_bg() {
	local name=$1 secs=$2
	shift 2
	local out
	out=$(sof_out "$name")
	timeout -k 5 "$secs" "$@" >"$out" 2>&1 </dev/null &
	SOF_PID[$name]=$!
}

# sof_alive NAME: true while the process still runs
sof_alive() {
	local pid=${SOF_PID[$1]:-}
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

# sof_wait NAME [SECS]: wait for it to end (at most SECS, default 600; then
# it is killed); returns its exit status (124 when `timeout` stopped it).
sof_wait() {
	local name=$1 secs=${2:-600} pid end
	pid=${SOF_PID[$name]:-}
	[ -n "$pid" ] || return 127
	end=$(($(now_ms) + secs * 1000))
	while kill -0 "$pid" 2>/dev/null && [ "$(now_ms)" -lt "$end" ]; do
		sleep 0.05
	done
	if kill -0 "$pid" 2>/dev/null; then
		sof_kill "$name"
		return "$SOF_KILL_RC"
	fi
	wait "$pid" 2>/dev/null
	local rc=$?
	unset "SOF_PID[$name]"
	return $rc
}

# sof_kill NAME: SIGTERM to that `timeout` (it passes it on to its command),
# then SIGKILL to the process group it leads if anything is left. Its exit
# status is left in SOF_KILL_RC.
sof_kill() {
	local name=$1 pid
	pid=${SOF_PID[$name]:-}
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.2
	done
	if kill -0 "$pid" 2>/dev/null; then
		kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null
	fi
	wait "$pid" 2>/dev/null
	SOF_KILL_RC=$?
	unset "SOF_PID[$name]"
	return 0
}

# sof_wait_listen PORT SECS [NAME]: wait until something listens on TCP PORT;
# fails early when process NAME ended before that.
sof_wait_listen() {
	local port=$1 secs=$2 name=${3:-} end
	end=$(($(now_ms) + secs * 1000))
	while [ "$(now_ms)" -lt "$end" ]; do
		if [ -n "$(ss -Hltn "sport = :$port" 2>/dev/null)" ]; then
			return 0
		fi
		if [ -n "$name" ] && ! sof_alive "$name"; then
			return 1
		fi
		sleep 0.05
	done
	return 1
}

# ---------------------------------------------------------------------------
# Server/client pairs of the classic examples (ibv_*_pingpong, perftest):
# the server is `PROG -p PORT ARGS`, the client the same plus the server's
# host name. Both run through `softofed run`.
#
# sof_pair NAME PORT SECS PROG ARGS...
#   starts the server (bounded by SECS + 30 s), waits up to 20 s until it
#   listens on PORT, runs the client bounded by SECS, then waits for the
#   server at most SOF_SERVER_GRACE seconds (default 30) before stopping it.
#   SOF_LINEBUF=1 runs both under `stdbuf -oL` (output of a process that is
#   stopped by its timeout is not lost in a stdio buffer).
#   Sets SOF_SRV_RC, SOF_CLI_RC, SOF_SRV_OUT, SOF_CLI_OUT and SOF_PAIR_WHY
#   (a reason on failure); returns 0 when both exited with 0.
sof_pair() {
	local name=$1 port=$2 secs=$3 prog=$4
	shift 4
	SOF_SRV_OUT=$(sof_out "$name.srv")
	SOF_CLI_OUT=$(sof_out "$name.cli")
	SOF_SRV_RC="" SOF_CLI_RC="" SOF_PAIR_WHY=""
	: >"$SOF_SRV_OUT"
	: >"$SOF_CLI_OUT"
	if ! command -v "$prog" >/dev/null 2>&1; then
		SOF_PAIR_WHY="$prog is not installed (tests/install-deps.sh installs it)"
		return 1
	fi
	local wrap=()
	[ -n "${SOF_LINEBUF:-}" ] && wrap=(stdbuf -oL -eL)
	sof_bg "$name.srv" $((secs + 30)) "$SOFTOFED" run -- "${wrap[@]}" "$prog" -p "$port" "$@"
	if ! sof_wait_listen "$port" 20 "$name.srv"; then
		sof_kill "$name.srv"
		SOF_PAIR_WHY="server did not listen on port $port"
		sof_wait "$name.srv" 5
		return 1
	fi
	sof_bg "$name.cli" "$secs" "$SOFTOFED" run -- "${wrap[@]}" "$prog" -p "$port" "$@" localhost
	sof_wait "$name.cli" $((secs + 10))
	SOF_CLI_RC=$?
	sof_wait "$name.srv" "${SOF_SERVER_GRACE:-30}"
	SOF_SRV_RC=$?
	if [ "$SOF_SRV_RC" -ne 0 ] || [ "$SOF_CLI_RC" -ne 0 ]; then
		SOF_PAIR_WHY="exit status server $SOF_SRV_RC, client $SOF_CLI_RC"
		[ "$SOF_CLI_RC" -eq 124 ] && SOF_PAIR_WHY="$SOF_PAIR_WHY (client timed out after $secs s)"
		return 1
	fi
	return 0
}

# sof_pair_dump: the tails of the last pair's outputs
sof_pair_dump() {
	echo "#   server (exit ${SOF_SRV_RC:-?}):"
	tail -n 20 "$SOF_SRV_OUT" | sed 's/^/#     /'
	echo "#   client (exit ${SOF_CLI_RC:-?}):"
	tail -n 20 "$SOF_CLI_OUT" | sed 's/^/#     /'
}
