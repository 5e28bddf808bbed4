#!/bin/sh
# Kill one side of an RC RDMA WRITE stream with SIGKILL and check that the
# HCA behaves like hardware with a driver under it: the surviving process
# gets an error completion within a second, the daemon releases everything
# the dead process held (resource counts back to where they were within two
# seconds), and a new pair of processes then streams normally. Done once
# killing the writer and once killing the target.
#
# Runs in a private network namespace with its own daemon (re-executes
# itself under `unshare -n`). Prints "ok - kill_write: ..." / "not ok - ..."
# lines; exits non-zero when any check failed.
#
# Usage: tests/integration/kill_write.sh [BUILD_DIR]   (default: build)
set -u

BUILD=${1:-${BUILD:-build}}
BUILD=$(cd "$BUILD" && pwd) || exit 1

if [ -z "${SOF_KW_NETNS:-}" ]; then
	export SOF_KW_NETNS=1
	exec unshare -n sh "$0" "$BUILD"
fi

SOFTOFED=$BUILD/bin/softofed
PROG=$BUILD/tests/write_stream
export SOFTOFED_DAEMON=$BUILD/bin/softofedd
TMP=$(mktemp -d /tmp/kill_write.XXXXXX)
FAILED=0
PIDS=""

cleanup() {
	for p in $PIDS; do
		kill -KILL "$p" 2>/dev/null
	done
	timeout 10 "$SOFTOFED" down >/dev/null 2>&1
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

ok() { echo "ok - kill_write: $*"; }
notok() { echo "not ok - kill_write: $*"; FAILED=1; }

now_ns() { date +%s%N; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# The resource counts of `softofed status` (its one "resources:" line), one
# "name=value" a line; status 1 unless that line is there with numbers only
# (a comparison must not pass on two empty readings).
counts() {
	timeout 5 "$SOFTOFED" status 2>/dev/null </dev/null | awk '
		$1 == "resources:" {
			n++
			if (NF < 3 || NF % 2 == 0) bad = 1
			for (i = 2; i + 1 <= NF; i += 2) {
				if ($(i + 1) !~ /^[0-9]+$/) bad = 1
				print $i "=" $(i + 1)
			}
		}
		END { exit (n != 1 || bad) }'
}

# wait_for FILE PATTERN SECONDS: wait until FILE has a line matching PATTERN
wait_for() {
	_end=$(($(now_ms) + $3 * 1000))
	while [ "$(now_ms)" -lt "$_end" ]; do
		grep -q -E "$2" "$1" 2>/dev/null && return 0
		sleep 0.02
	done
	return 1
}

# pid_of FILE: the pid a write_stream printed in its ready line
pid_of() { sed -n 's/^ready pid=\([0-9]*\).*/\1/p' "$1" | head -n 1; }

# start_pair COUNT TAG: server and client in the background; sets SPID, CPID
# (the pids of the timeout wrappers) and the output files $TMP/TAG.{srv,cli}
start_pair() {
	: >"$TMP/$2.srv"
	: >"$TMP/$2.cli"
	timeout 60 "$PROG" server "$1" >"$TMP/$2.srv" 2>&1 &
	SPID=$!
	PIDS="$PIDS $SPID"
	if ! wait_for "$TMP/$2.srv" '^port [0-9]+' 10; then
		CPID=""
		return 1
	fi
	port=$(sed -n 's/^port \([0-9]*\)/\1/p' "$TMP/$2.srv" | head -n 1)
	timeout 60 "$PROG" client "$port" "$1" >"$TMP/$2.cli" 2>&1 &
	CPID=$!
	PIDS="$PIDS $CPID"
	wait_for "$TMP/$2.srv" '^ready' 10 && wait_for "$TMP/$2.cli" '^ready' 10
}

# counts_back BEFORE_FILE: wait up to 2 s for the counts to equal the file's
counts_back() {
	_end=$(($(now_ms) + 2000))
	while :; do
		counts >"$TMP/now" && cmp -s "$1" "$TMP/now" && return 0
		[ "$(now_ms)" -ge "$_end" ] && return 1
		sleep 0.05
	done
}

# scenario VICTIM(server|client)
scenario() {
	victim=$1
	if [ "$victim" = client ]; then what="writer"; else what="target"; fi
	if ! counts >"$TMP/before"; then
		notok "kill $what: no resource counts from softofed status"
		return
	fi
	if ! start_pair 0 "$victim"; then
		notok "kill $what: pair did not start"
		sed 's/^/#   /' "$TMP/$victim.srv" "$TMP/$victim.cli"
		return
	fi
	if [ "$victim" = client ]; then
		vfile=$TMP/$victim.cli sfile=$TMP/$victim.srv swrap=$SPID
	else
		vfile=$TMP/$victim.srv sfile=$TMP/$victim.cli swrap=$CPID
	fi
	vpid=$(pid_of "$vfile")
	# mid-stream: let it run for a while first
	sleep 0.5
	if grep -q -E '^(error|fail|done)' "$sfile" "$vfile"; then
		notok "kill $what: stream stopped before the kill"
		sed 's/^/#   /' "$sfile" "$vfile"
		return
	fi
	t_kill=$(now_ns)
	kill -KILL "$vpid"
	if ! wait_for "$sfile" '^(error|fail|done)' 5; then
		notok "kill $what: survivor reported nothing within 5 s"
		sed 's/^/#   /' "$sfile"
		return
	fi
	wait "$swrap" 2>/dev/null
	line=$(grep -E '^(error|fail|done)' "$sfile" | head -n 1)
	case $line in
	error*) ;;
	*)
		notok "kill $what: survivor said: $line"
		return
		;;
	esac
	at=$(echo "$line" | sed -n 's/.*at_ns=\([0-9]*\).*/\1/p')
	okn=$(echo "$line" | sed -n 's/.* ok=\([0-9]*\).*/\1/p')
	ms=$(((at - t_kill) / 1000000))
	if [ "$ms" -le 1000 ]; then
		ok "kill $what: survivor got an error completion after $ms ms ($(echo "$line" | sed 's/ at_ns=.*//'), $okn messages before)"
	else
		notok "kill $what: error completion after $ms ms (> 1000)"
	fi
	if [ "${okn:-0}" -lt 10 ]; then
		notok "kill $what: only ${okn:-0} messages went through before the kill"
	fi
	if counts_back "$TMP/before"; then
		ok "kill $what: resource counts back to where they were"
	else
		notok "kill $what: resource counts not restored within 2 s"
		echo "#   before:"; sed 's/^/#     /' "$TMP/before"
		echo "#   after:"; sed 's/^/#     /' "$TMP/now"
	fi
	# a new pair then runs normally
	if start_pair 2000 "$victim-again"; then
		sw=$SPID cw=$CPID
		wait "$sw"; rs=$?
		wait "$cw"; rc=$?
		if [ $rs -eq 0 ] && [ $rc -eq 0 ] &&
			grep -q '^done n=2000' "$TMP/$victim-again.srv" &&
			grep -q '^done n=2000' "$TMP/$victim-again.cli"; then
			ok "kill $what: a new pair streams 2000 messages, data checked"
		else
			notok "kill $what: new pair failed (exit $rs/$rc)"
			sed 's/^/#   /' "$TMP/$victim-again.srv" "$TMP/$victim-again.cli"
		fi
	else
		notok "kill $what: new pair did not start"
		sed 's/^/#   /' "$TMP/$victim-again.srv" "$TMP/$victim-again.cli"
	fi
	if counts_back "$TMP/before"; then
		ok "kill $what: resource counts back after the new pair"
	else
		notok "kill $what: resource counts differ after the new pair"
	fi
}

ip link set lo up || exit 1
if ! timeout 10 "$SOFTOFED" up >/dev/null; then
	echo "not ok - kill_write: softofed up failed"
	exit 1
fi
scenario client
scenario server
if timeout 5 "$SOFTOFED" status >/dev/null 2>&1; then
	ok "daemon still serving"
else
	notok "daemon not answering at the end"
fi
exit $FAILED
