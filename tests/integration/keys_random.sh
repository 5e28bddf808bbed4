#!/bin/sh
# Randomness of memory keys and QP numbers (issue 2): gathers 100,000 MR
# keys and 20,000 QP numbers from several processes across two daemon
# restarts, then checks
#   - keys are never 0, lkey == rkey, all keys alive together differ, and
#     repeats overall stay within birthday statistics for 32-bit values
#     (expected n^2 / 2^33 = 1.16 for 100,000: at most 8 allowed);
#   - QP numbers are 24-bit, never 0 or 1, all alive together in a process
#     differ, and repeats overall stay within birthday bounds;
#   - no predictable step: the most frequent difference between
#     consecutive values occurs at most 5 times;
#   - bit balance: each bit is set in 50% +- 2% of the values.
#
# Runs in a private network namespace with its own daemon (re-executes
# itself under `unshare -n`). Prints ok / not ok lines.
#
# Usage: tests/integration/keys_random.sh [BUILD_DIR]   (default: build)
set -u

BUILD=${1:-${BUILD:-build}}
BUILD=$(cd "$BUILD" && pwd) || exit 1

if [ -z "${SOF_KR_NETNS:-}" ]; then
	export SOF_KR_NETNS=1
	exec unshare -n sh "$0" "$BUILD"
fi

SOFTOFED=$BUILD/bin/softofed
PROG=$BUILD/tests/keys_dump
export SOFTOFED_DAEMON=$BUILD/bin/softofedd
TMP=$(mktemp -d /tmp/keys_random.XXXXXX)
trap 'timeout 10 "$SOFTOFED" down >/dev/null 2>&1; rm -rf "$TMP"' EXIT
trap 'exit 1' INT TERM

ROUNDS=3        # daemon lifetimes: start + two restarts
PROCS=4         # processes per round, two at a time
KEYS=8334       # per process: 3 * 4 * 8334 = 100,008 keys
QPS=1667        # per process: 3 * 4 * 1667 = 20,004 QP numbers

ip link set lo up || exit 1
fail=0
r=0
while [ $r -lt $ROUNDS ]; do
	if ! timeout 10 "$SOFTOFED" up >/dev/null; then
		echo "not ok - keys_random: softofed up failed (round $r)"
		exit 1
	fi
	p=0
	while [ $p -lt $PROCS ]; do
		timeout 120 "$PROG" $KEYS $QPS >"$TMP/r$r.p$p" 2>"$TMP/r$r.p$p.err" &
		a=$!
		timeout 120 "$PROG" $KEYS $QPS >"$TMP/r$r.p$((p + 1))" 2>"$TMP/r$r.p$((p + 1)).err" &
		b=$!
		wait $a || { echo "# keys_dump failed:"; cat "$TMP/r$r.p$p.err"; fail=1; }
		wait $b || { echo "# keys_dump failed:"; cat "$TMP/r$r.p$((p + 1)).err"; fail=1; }
		p=$((p + 2))
	done
	if ! timeout 10 "$SOFTOFED" down >/dev/null; then
		echo "not ok - keys_random: softofed down failed (round $r)"
		exit 1
	fi
	r=$((r + 1))
done
if [ $fail -ne 0 ]; then
	echo "not ok - keys_random: gathering failed"
	exit 1
fi

python3 - "$TMP" $ROUNDS $PROCS <<'EOF'
import collections, glob, math, os, sys

tmp, rounds, procs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
failed = 0

def report(ok, msg):
    global failed
    print(("ok - " if ok else "not ok - ") + "keys_random: " + msg)
    if not ok:
        failed = 1

keys, qpns = [], []          # in gathering order
key_seqs, qpn_seqs = [], []  # per process
live_key_dups = live_qpn_dups = 0
lkey_ne_rkey = 0
for r in range(rounds):
    for p in range(procs):
        ks, batches, qs = [], collections.defaultdict(list), []
        with open(os.path.join(tmp, "r%d.p%d" % (r, p))) as f:
            for line in f:
                w = line.split()
                if w[0] == "k":
                    lk, rk = int(w[2], 16), int(w[3], 16)
                    lkey_ne_rkey += lk != rk
                    ks.append(rk)
                    batches[w[1]].append(rk)
                elif w[0] == "q":
                    qs.append(int(w[1], 16))
        for b in batches.values():
            live_key_dups += len(b) - len(set(b))
        live_qpn_dups += len(qs) - len(set(qs))
        keys += ks
        qpns += qs
        key_seqs.append(ks)
        qpn_seqs.append(qs)

def birthday(n, bits):
    return n * (n - 1) / 2 / 2.0 ** bits

def check(name, vals, seqs, bits, live_dups, dup_limit):
    n = len(vals)
    report(n >= (100000 if name == "keys" else 20000) - 10,
           "%s: gathered %d" % (name, n))
    lo = 2 if name == "qpns" else 1
    bad = [v for v in vals if v < lo or v >= 1 << bits]
    report(not bad, "%s: all in [%d, 2^%d) (%d outside)" % (name, lo, bits, len(bad)))
    report(live_dups == 0,
           "%s: no repeats among values alive together (%d)" % (name, live_dups))
    dups = n - len(set(vals))
    exp = birthday(n, bits)
    report(dups <= dup_limit,
           "%s: %d repeats overall, birthday expectation %.2f, limit %d"
           % (name, dups, exp, dup_limit))
    diffs = collections.Counter()
    for s in seqs:
        for a, b in zip(s, s[1:]):
            diffs[(b - a) % (1 << bits)] += 1
    d, c = diffs.most_common(1)[0]
    report(c <= 5, "%s: most frequent step 0x%x occurs %d times (<= 5)" % (name, d, c))
    worst = 0.0
    for bit in range(bits):
        frac = sum((v >> bit) & 1 for v in vals) / float(n)
        worst = max(worst, abs(frac - 0.5))
    report(worst <= 0.02, "%s: every bit set in 50%% +- %.2f%% (limit 2%%)"
           % (name, worst * 100))

check("keys", keys, key_seqs, 32, live_key_dups, 8)
exp_q = birthday(len(qpns), 24)
check("qpns", qpns, qpn_seqs, 24, live_qpn_dups,
      int(exp_q + 6 * math.sqrt(exp_q) + 3))
report(lkey_ne_rkey == 0, "keys: lkey == rkey (%d differ)" % lkey_ne_rkey)
sys.exit(failed)
EOF
