#!/usr/bin/env python3
"""Milliseconds from OpenSM's first log line to its "-> SUBNET UP", by
OpenSM's own clock (its log lines start "Mon DD HH:MM:SS USEC ...").
Prints nothing when the log has no SUBNET UP.

Usage: bench/osm_start_ms.py OPENSM_LOG
"""
import re
import sys

STAMP = re.compile(r'^\w+ +\d+ (\d+):(\d+):(\d+) (\d+) ')


def main():
    first = None
    with open(sys.argv[1], errors='replace') as log:
        for line in log:
            m = STAMP.match(line)
            if not m:
                continue
            h, mi, s, us = (int(g) for g in m.groups())
            t = ((h * 60 + mi) * 60 + s) * 1000 + us / 1000
            if first is None:
                first = t
            if ' -> SUBNET UP' in line:
                print(int(t - first))
                return


if __name__ == '__main__':
    main()
