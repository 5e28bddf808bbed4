#!/usr/bin/env python3
"""Route balance of a subnet's unicast tables (issue 20): every host sends
to every other host (a shift all-to-all: for each shift s, host i to host
i + s), each path followed through the switches' LFTs as ibroute printed
them; prints the most paths on any one switch-to-switch link direction,
the mean over the links used, and the links used.

    route_balance.py IBNETDISCOVER_OUTPUT IBROUTE_OUTPUTS

IBNETDISCOVER_OUTPUT: plain `ibnetdiscover`; IBROUTE_OUTPUTS: `ibroute LID`
of every switch, concatenated.
"""
import re
import sys
from collections import Counter


def main():
    ibnd, lfts = open(sys.argv[1]).read(), open(sys.argv[2]).read()
    sw_lid, links, ca_at, ca_lids = {}, {}, {}, []
    cur = None
    for line in ibnd.splitlines():
        m = re.match(r'^Switch\s+\d+\s+"S-([0-9a-f]+)".*base port 0 lid (\d+)', line)
        if m:
            cur = ('S', int(m.group(1), 16))
            sw_lid[int(m.group(2))] = cur[1]
            continue
        m = re.match(r'^Ca\s+\d+\s+"H-([0-9a-f]+)"', line)
        if m:
            cur = ('C', int(m.group(1), 16))
            continue
        if not cur:
            continue
        if cur[0] == 'S':
            m = re.match(r'^\[(\d+)\]\s+"([SH])-([0-9a-f]+)"\[(\d+)\]', line)
            if m:
                links[(cur[1], int(m.group(1)))] = (m.group(2), int(m.group(3), 16))
        else:
            m = re.match(r'^\[\d+\]\(([0-9a-f]+)\)\s+"S-([0-9a-f]+)"\[(\d+)\]\s+# lid (\d+)', line)
            if m:
                lid = int(m.group(4))
                ca_at[lid] = int(m.group(2), 16)
                ca_lids.append(lid)
    lft, sw = {}, None
    for line in lfts.splitlines():
        m = re.match(r'^Unicast lids .* guid 0x([0-9a-f]+)', line)
        if m:
            sw = int(m.group(1), 16)
            lft[sw] = {}
            continue
        m = re.match(r'^0x([0-9a-f]+) (\d+) :', line)
        if m and sw is not None:
            lft[sw][int(m.group(1), 16)] = int(m.group(2))
    use, broken = Counter(), 0
    hosts = sorted(ca_lids)
    n = len(hosts)
    for s in range(1, n):
        for i in range(n):
            src, dst = hosts[i], hosts[(i + s) % n]
            at, hops = ca_at[src], 0
            while hops < 64:
                port = lft.get(at, {}).get(dst)
                peer = links.get((at, port)) if port else None
                if not peer:
                    broken += 1
                    break
                if peer[0] == 'H':
                    break
                use[(at, port)] += 1
                at, hops = peer[1], hops + 1
            else:
                broken += 1
    if not use:
        print("no inter-switch paths (%d hosts, %d broken)" % (n, broken))
        return 1
    print("hosts %d pairs %d max %d mean %.1f links %d broken %d" %
          (n, n * (n - 1), max(use.values()), sum(use.values()) / len(use), len(use), broken))
    return 0


if __name__ == '__main__':
    sys.exit(main())
