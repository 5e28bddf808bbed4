#!/bin/sh
# Memory registration of each kind of memory (issue 17, item 2): a server
# registers a region of one kind (tests/progs/mr_kinds.c) and a client,
# another process on the same host, RDMA READs it, RDMA WRITEs it and
# SENDs into it; both check every byte. Kinds: private anonymous touched
# and never touched, the stack, one range registered twice, a region
# registered without a request to the daemon (posted: after a first region
# of the context; its PD busy before anyone used it, the key of one
# deregistered unused never handed out again), two processes
# each registering at once; fork() after registration (ibv_fork_init, and
# RDMAV_FORK_SAFE=1): the child's writes stay in the child; after each
# ibv_dereg_mr the peer's WRITE with the old key fails and changes nothing;
# a client of another user (nobody), which reaches the region through the
# memfds its owner moves it onto when the daemon asks; the shared kinds, registered in
# place (MAP_SHARED anonymous, a file, POSIX and SysV shared memory) and
# 2 MiB huge pages (the test reserves some in /proc/sys/vm/nr_hugepages
# and gives them back); on-demand paging, explicit (over a range unmapped
# and mapped again after registration) and implicit (the whole address
# space, the region mapped after registration), with the ODP caps and
# ibv_advise_mr prefetch. Then the bad input: unmapped,
# PROT_NONE and partly unmapped ranges fail with EFAULT and leave nothing
# behind (no mapping in the process, the daemon's count of memory regions
# as before).
#
# Runs in a private network namespace with its own daemon (re-executes
# itself under `unshare -n`). Prints "ok - mr_kinds: ..." / "not ok - ..."
# lines; exits non-zero when any check failed.
#
# Usage: tests/integration/mr_kinds.sh [BUILD_DIR]   (default: build)
set -u

BUILD=${1:-${BUILD:-build}}
BUILD=$(cd "$BUILD" && pwd) || exit 1

if [ -z "${SOF_MK_NETNS:-}" ]; then
	export SOF_MK_NETNS=1
	exec unshare -n sh "$0" "$BUILD"
fi

SOFTOFED=$BUILD/bin/softofed
PROG=$BUILD/tests/mr_kinds
export SOFTOFED_DAEMON=$BUILD/bin/softofedd
TMP=$(mktemp -d /tmp/mr_kinds.XXXXXX)
FAILED=0
PIDS=""

cleanup() {
	for p in $PIDS; do
		kill -KILL "$p" 2>/dev/null
	done
	timeout 10 "$SOFTOFED" down >/dev/null 2>&1
	[ -n "${HP0:-}" ] && echo "$HP0" >"$HP" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

ok() { echo "ok - mr_kinds: $*"; }
notok() {
	echo "not ok - mr_kinds: $*"
	FAILED=1
}

ip link set lo up 2>/dev/null
timeout 10 "$SOFTOFED" up >/dev/null 2>&1 || {
	notok "softofed up failed"
	exit 1
}

# pair KIND PORT: one server of KIND and its client; 0 when both said ok
pair() {
	_k=$1 _p=$2
	timeout 60 env ${SOF_MK_ENV:-} "$SOFTOFED" run -- "$PROG" -k "$_k" -p "$_p" >"$TMP/s.$_k.$_p" 2>&1 &
	_s=$!
	PIDS="$PIDS $_s"
	_i=0
	while ! grep -q "listening" "$TMP/s.$_k.$_p" 2>/dev/null && [ $_i -lt 200 ]; do
		sleep 0.05
		_i=$((_i + 1))
	done
	timeout 60 ${SOF_MK_CLI:-} "$SOFTOFED" run -- "$PROG" -k "$_k" -p "$_p" 127.0.0.1 >"$TMP/c.$_k.$_p" 2>&1
	_c=$?
	wait "$_s"
	_sv=$?
	if [ $_c -eq 0 ] && [ $_sv -eq 0 ] && tail -n 1 "$TMP/s.$_k.$_p" | grep -qx ok &&
		tail -n 1 "$TMP/c.$_k.$_p" | grep -qx ok; then
		return 0
	fi
	sed 's/^/#   server: /' "$TMP/s.$_k.$_p"
	sed 's/^/#   client: /' "$TMP/c.$_k.$_p"
	return 1
}

port=18640
# 2 MiB huge pages for the hugetlb kind: reserved here, given back at exit
HP=/proc/sys/vm/nr_hugepages
HP0=$(cat "$HP" 2>/dev/null || echo "")
if [ -n "$HP0" ]; then
	echo $((HP0 + 4)) >"$HP" 2>/dev/null
fi

for kind in anon untouched stack twice shared file posix sysv huge odp odp_implicit posted; do
	port=$((port + 1))
	if pair "$kind" "$port"; then
		ok "$kind memory: READ, WRITE and SEND from another process, every byte checked; a WRITE after ibv_dereg_mr fails (IBV_WC_REM_ACCESS_ERR) and changes nothing"
	else
		notok "$kind memory"
	fi
done

# fork() after registration (ibv_fork_init first; and with RDMAV_FORK_SAFE)
for env in "" RDMAV_FORK_SAFE=1; do
	port=$((port + 1))
	if SOF_MK_ENV=$env pair fork "$port"; then
		ok "fork${env:+ ($env)}: the child's writes stay in its memory, the parent's region keeps the peer's data and takes the next SEND"
	else
		notok "fork${env:+ ($env)}"
	fi
done

# a client of another user (nobody): the region is in place, which only
# processes of the owner's user may reach; the daemon asks the owner to
# move it onto memfds and the client maps those
NB="setpriv --reuid=nobody --regid=nogroup --clear-groups"
port=$((port + 1))
if ! $NB true 2>/dev/null; then
	notok "a client of another user: cannot run as nobody (setpriv)"
elif SOF_MK_CLI="$NB" pair anon "$port"; then
	ok "a client of another user (nobody): READ, WRITE and SEND through the memfds the owner moved the region onto"
else
	notok "a client of another user (nobody)"
fi

# two processes registering at the same time, each with its own client
port=$((port + 1))
pair anon "$port" >"$TMP/two.a" 2>&1 &
a=$!
pair untouched "$((port + 1))" >"$TMP/two.b" 2>&1
b=$?
wait "$a"
if [ $? -eq 0 ] && [ $b -eq 0 ]; then
	ok "two processes registering at once, each checked by another"
else
	cat "$TMP/two.a" "$TMP/two.b"
	notok "two processes registering at once"
fi

mrs() {
	timeout 5 "$SOFTOFED" status 2>/dev/null </dev/null |
		awk '$1 == "resources:" { for (i = 2; i < NF; i += 2) if ($i == "mrs") print $(i + 1) }'
}
before=$(mrs)
if timeout 30 "$SOFTOFED" run -- "$PROG" -e >"$TMP/e" 2>&1 && tail -n 1 "$TMP/e" | grep -qx ok; then
	ok "EFAULT for unmapped, PROT_NONE and partly unmapped ranges and for write access to read-only pages; nothing left in the process"
else
	sed 's/^/#   /' "$TMP/e"
	notok "bad input"
fi
after=$(mrs)
if [ -n "$before" ] && [ "$before" = "$after" ]; then
	ok "the daemon holds as many memory regions as before the bad input ($after)"
else
	notok "memory regions in the daemon: before '$before', after '$after'"
fi
exit $FAILED
