#!/usr/bin/env python3
"""The canonical node/link lines of a fabric, for tests/integration/fabric*.sh:

  fabric_topo.py expected FILE        from a topology file (ibsim's GUIDs:
                                      HCAs from 0x100000, node then ports;
                                      switches from 0x200000; names as
                                      node descriptions)
  fabric_topo.py ibnetdiscover FILE   from ibnetdiscover's output

Lines: "node GUID TYPE NPORTS DESC" and "link GUID PORT GUID PORT" (the
lower end first), sorted.
"""
import re
import sys


def canon(nodes, links):
    out = ['node 0x%016x %s %d %s' % n for n in nodes]
    seen = set()
    for a, pa, b, pb in links:
        x, y = sorted([(a, pa), (b, pb)])
        seen.add('link 0x%016x %d 0x%016x %d' % (x[0], x[1], y[0], y[1]))
    return sorted(out) + sorted(seen)


def expected(path):
    nodes, raw, cur = [], [], None
    for line in open(path):
        line = line.split('#')[0].strip()
        m = re.match(r'^(Switch|Hca|Ca)\s+(\d+)\s+"([^"]+)"', line)
        if m:
            cur = [m.group(1), int(m.group(2)), m.group(3)]
            nodes.append(cur)
            continue
        m = re.match(r'^\[(\d+)\]\s*"([^"]+)"\[(\d+)\]', line)
        if m:
            raw.append((cur[2], int(m.group(1)), m.group(2), int(m.group(3))))
    ca, sw, guid, out = 0x100000, 0x200000, {}, []
    for t, n, name in nodes:
        if t == 'Switch':
            guid[name] = sw
            sw += 1
        else:
            guid[name] = ca
            ca += n + 1
        out.append((guid[name], 'Switch' if t == 'Switch' else 'Hca', n, name))
    return canon(out, [(guid[a], pa, guid[b], pb) for a, pa, b, pb in raw])


def ibnetdiscover(path):
    nodes, links, cur = [], [], None
    for line in open(path):
        m = re.match(r'^(Switch|Ca)\s+(\d+)\s+"[SH]-([0-9a-f]+)"\s*#\s*"([^"]*)"', line)
        if m:
            cur = int(m.group(3), 16)
            nodes.append((cur, 'Switch' if m.group(1) == 'Switch' else 'Hca',
                          int(m.group(2)), m.group(4)))
            continue
        m = re.match(r'^\[(\d+)\](?:\([0-9a-f]+\))?\s*"[SH]-([0-9a-f]+)"\[(\d+)\]', line)
        if m and cur is not None:
            links.append((cur, int(m.group(1)), int(m.group(2), 16), int(m.group(3))))
    return canon(nodes, links)


if __name__ == '__main__':
    fn = {'expected': expected, 'ibnetdiscover': ibnetdiscover}[sys.argv[1]]
    print('\n'.join(fn(sys.argv[2])))
