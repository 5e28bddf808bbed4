#!/usr/bin/env python3
"""Check rping's verbose output (tests/consumers/rdmacm.sh).

    rping_check.py FILE PREFIX COUNT SIZE

rping -v prints one line per ping: the client "ping data: DATA", the server
"server ping data: DATA". DATA is the client's buffer as it travelled (the
server reads it with RDMA READ and writes it back with RDMA WRITE): for ping
N, "rdma-ping-N: " followed by letters from chr(65 + N % 58) counting up
and wrapping from 'z' (122) to 'A' (65), SIZE - 1 characters in all (the
last byte is the terminating NUL). Every line with PREFIX must be exactly
that, for N = 0 .. COUNT - 1 in order. Prints "ok N lines" or the first
difference; exit 0 or 1.
"""
import sys


def expected(ping, size):
    head = "rdma-ping-%d: " % ping
    out = list(head[: size - 1])
    c = 65 + ping % 58
    for _ in range(len(head), size - 1):
        out.append(chr(c))
        c = 65 if c >= 122 else c + 1
    return "".join(out)


def main():
    if len(sys.argv) != 5:
        print(__doc__.strip().splitlines()[2])
        return 2
    path, prefix, count, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    with open(path, "r", encoding="latin-1") as f:
        lines = [l.rstrip("\n") for l in f if l.startswith(prefix)]
    for n, line in enumerate(lines):
        got = line[len(prefix):]
        want = expected(n, size)
        if got != want:
            at = next((i for i in range(min(len(got), len(want))) if got[i] != want[i]),
                      min(len(got), len(want)))
            print("ping %d differs at byte %d (got %d bytes, want %d): %r vs %r"
                  % (n, at, len(got), len(want), got[at:at + 16], want[at:at + 16]))
            return 1
    if len(lines) != count:
        print("%d lines with %r, want %d" % (len(lines), prefix, count))
        return 1
    print("ok %d lines" % len(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
