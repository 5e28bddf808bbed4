#!/usr/bin/env python3
"""bench/report.py — the Markdown report of bench/run.sh, and its plots.

Reads the raw figures that run.sh collected (RESULTS.tsv, one run per line:
label, unit, value, command and, for the figures that are plotted, plot,
series and message size in bytes) and the files beside it: RESULTS.tsv.fail
(measurements that did not run: label, reason), RESULTS.tsv.note (facts:
key, text) and RESULTS.tsv.prof (perf findings: path, process, kind,
value, name, command). Writes the report to OUT (medians, the ratios issue
5 names with their targets, idle, scale, loss, where time goes, the command
of each figure) and the plots beside it as OUT-lat-same.svg and so on:
latency and bandwidth versus message size, softofed against each peer,
drawn here by hand (SVG, Python's standard library only).

Usage: report.py --tsv RESULTS.tsv --out OUT.md --seconds S --reps N
                 --sweep-reps M [--quick] [--cpus A,B]
"""
import argparse
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import time

KIB, MIB = 1024, 1024 * 1024


class Results:
    def __init__(self, path):
        self.order, self.runs, self.unit, self.cmd, self.plot = [], {}, {}, {}, {}
        with open(path) as f:
            for line in f:
                parts = line.rstrip("\n").split("\t")
                if len(parts) < 4:
                    continue
                label, unit, value, cmd = parts[:4]
                try:
                    x = float(value)
                except ValueError:
                    continue
                if label not in self.runs:
                    self.order.append(label)
                    self.runs[label] = []
                self.runs[label].append(x)
                self.unit[label] = unit
                self.cmd[label] = cmd
                if len(parts) >= 7 and parts[4] and parts[5] and parts[6]:
                    self.plot[label] = (parts[4], parts[5], int(parts[6]))
        self.med = {k: statistics.median(v) for k, v in self.runs.items()}

    def get(self, label):
        return self.med.get(label)


def read_rows(path, n):
    rows = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                if line.strip():
                    p = line.rstrip("\n").split("\t")
                    rows.append(p + [""] * (n - len(p)))
    return rows


def fmt(x):
    if x is None:
        return "—"
    a = abs(x)
    if a >= 100:
        return "%.0f" % x
    if a >= 10:
        return "%.1f" % x
    if a >= 1:
        return "%.2f" % x
    return "%.3f" % x


def hsize(n):
    if n >= MIB and n % MIB == 0:
        return "%d MiB" % (n // MIB)
    if n >= KIB and n % KIB == 0:
        return "%d KiB" % (n // KIB)
    return "%d B" % n


def source_commit(build_note):
    """The commit the measured build was made from: the build's source tree
    (CMakeCache.txt's CMAKE_HOME_DIRECTORY) — a git work tree (said when it
    had uncommitted changes to tracked files) or an export holding its
    commit in .git-commit; else this checkout."""
    here = os.path.dirname(os.path.abspath(__file__))
    src = None
    build = build_note.split(" (")[0] if build_note else ""
    if build:
        if not os.path.isabs(build):
            build = os.path.join(here, "..", build)
        try:
            with open(os.path.join(build, "CMakeCache.txt")) as f:
                for line in f:
                    if line.startswith("CMAKE_HOME_DIRECTORY:"):
                        src = line.split("=", 1)[1].strip()
        except OSError:
            pass
    src = src or os.path.join(here, "..")
    marker = os.path.join(src, ".git-commit")
    if os.path.exists(marker):
        with open(marker) as f:
            return f.read().strip() + " (exported with git archive into %s)" % src
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                             cwd=src).stdout.strip() or "?"
        dirty = subprocess.run(["git", "status", "--porcelain", "-uno"], capture_output=True, text=True,
                               cwd=src).stdout.strip()
        if dirty:
            rev += " plus uncommitted changes to %d tracked files" % len(dirty.splitlines())
        return rev
    except OSError:
        return "?"


# ---------------------------------------------------------------------------
# SVG plots, by hand

COLORS = ["#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
          "#bcbd22", "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd"]


def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def svg_plot(path, title, ylabel, series):
    """series: list of (name, [(bytes, value)], is_ours); log-log axes."""
    pts = [(x, y) for _, p, _ in series for x, y in p if x > 0 and y > 0]
    if not pts:
        return False
    W, H = 960, 560
    L, R, T, B = 80, 330, 50, 60  # margins; the legend goes right
    pw, ph = W - L - R, H - T - B
    xs = [math.log2(x) for x, _ in pts]
    ys = [math.log10(y) for _, y in pts]
    x0, x1 = math.floor(min(xs)), math.ceil(max(xs))
    if x1 - x0 < 2:
        x1 = x0 + 2
    y0, y1 = math.floor(min(ys)), math.ceil(max(ys))
    if y1 - y0 < 1:
        y1 = y0 + 1

    def px(x):
        return L + (math.log2(x) - x0) / (x1 - x0) * pw

    def py(y):
        return T + ph - (math.log10(y) - y0) / (y1 - y0) * ph

    o = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
         'font-family="sans-serif" font-size="12">' % (W, H, W, H),
         '<rect width="100%" height="100%" fill="white"/>',
         '<text x="%d" y="28" font-size="16" font-weight="bold">%s</text>' % (L, esc(title))]
    # grid and ticks: x at every power of two (labels every third: 1 B,
    # 8 B, 64 B, ...), y at every decade (and 2, 5 faint)
    for e in range(x0, x1 + 1):
        X = px(2 ** e)
        major = e % 3 == 0
        o.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>' %
                 (X, T, X, T + ph, "#ccc" if major else "#eee"))
        if major or x1 - x0 <= 8:
            o.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (X, T + ph + 18, hsize(2 ** e)))
    for e in range(y0, y1 + 1):
        for m in (1, 2, 5):
            v = m * 10 ** e
            if e == y1 and m > 1:
                break
            Y = py(v)
            o.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s"/>' %
                     (L, Y, L + pw, Y, "#ccc" if m == 1 else "#f0f0f0"))
            if m == 1 or y1 - y0 <= 2:
                lab = ("%g" % v) if 1e-3 <= v < 1e6 else ("1e%d" % e)
                o.append('<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>' %
                         (L - 6, Y, lab))
    o.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="black"/>' % (L, T, pw, ph))
    o.append('<text x="%d" y="%d" text-anchor="middle">message size (bytes, log scale)</text>' %
             (L + pw // 2, H - 18))
    o.append('<text x="18" y="%d" text-anchor="middle" transform="rotate(-90 18 %d)">%s</text>' %
             (T + ph // 2, T + ph // 2, esc(ylabel)))
    # series
    ly = T + 6
    for i, (name, p, ours) in enumerate(series):
        p = sorted((x, y) for x, y in p if x > 0 and y > 0)
        if not p:
            continue
        c = COLORS[i % len(COLORS)]
        width = 2.6 if ours else 1.4
        dash = "" if ours else ' stroke-dasharray="6 3"'
        if len(p) > 1:
            o.append('<polyline fill="none" stroke="%s" stroke-width="%.1f"%s points="%s"/>' %
                     (c, width, dash, " ".join("%.1f,%.1f" % (px(x), py(y)) for x, y in p)))
        for x, y in p:
            o.append('<circle cx="%.1f" cy="%.1f" r="%.1f" fill="%s"><title>%s %s: %s</title></circle>' %
                     (px(x), py(y), 5 if len(p) == 1 else 3.5 if ours else 2.5, c, esc(name), hsize(x),
                      fmt(y)))
        # legend
        lx = L + pw + 16
        o.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="%.1f"%s/>' %
                 (lx, ly, lx + 26, ly, c, width, dash))
        o.append('<circle cx="%d" cy="%d" r="3" fill="%s"/>' % (lx + 13, ly, c))
        o.append('<text x="%d" y="%d" dominant-baseline="middle"%s>%s</text>' %
                 (lx + 32, ly, ' font-weight="bold"' if ours else "", esc(name)))
        ly += 18
    o.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(o) + "\n")
    return True


PLOTS = [
    ("lat-same", "Same host: one-way latency versus message size", "µs, one-way (log scale)"),
    ("bw-same", "Same host: bandwidth versus message size", "MiB/s (log scale)"),
    ("lat-veth", "Two hosts over veth: one-way latency versus message size", "µs, one-way (log scale)"),
    ("bw-veth", "Two hosts over veth: bandwidth versus message size", "MiB/s (log scale)"),
]


def make_plots(res, base):
    """The plots (name, file, title) that were written."""
    out = []
    for key, title, ylabel in PLOTS:
        ser = {}
        for label, (plot, series, size) in res.plot.items():
            if plot == key:
                ser.setdefault(series, []).append((size, res.med[label]))
        if not ser:
            continue
        names = sorted(ser, key=lambda n: (not n.startswith("softofed"), n))
        series = [(n, ser[n], n.startswith("softofed")) for n in names]
        path = "%s-%s.svg" % (base, key)
        if svg_plot(path, title, ylabel, series):
            out.append((key, os.path.basename(path), title))
    return out


# ---------------------------------------------------------------------------
# the report


def verdict(x, target):
    m = re.match(r"^([≤≥<>]) *([0-9.]+)", target)
    if x is None or not m:
        return ""
    op, v = m.group(1), float(m.group(2))
    ok = {"≤": x <= v, "≥": x >= v, "<": x < v, ">": x > v}[op]
    return "met" if ok else "**not met**"


def best(res, labels):
    vals = [(res.get(l), l) for l in labels if res.get(l) is not None]
    return max(vals) if vals else (None, None)


def main():
    if sys.argv[1:2] == ["--source-of"]:
        # run.sh asks before it measures: the tree may change during a run
        print(source_commit(sys.argv[2] if len(sys.argv) > 2 else ""))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--tsv", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seconds", default="?")
    ap.add_argument("--reps", default="?")
    ap.add_argument("--sweep-reps", default="?")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--cpus", default="0,1")
    a = ap.parse_args()

    res = Results(a.tsv)
    fails = read_rows(a.tsv + ".fail", 2)
    notes = read_rows(a.tsv + ".note", 2)
    prof = read_rows(a.tsv + ".prof", 6)
    note = {}
    for k, v in notes:
        note.setdefault(k, []).append(v)
    base = a.out[:-3] if a.out.endswith(".md") else a.out
    plots = make_plots(res, base)

    lines = []
    p = lines.append
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for l in f:
                if l.startswith("model name"):
                    cpu = l.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    build = note.get("build", [""])[0]
    commit = note["source"][0] if note.get("source") else source_commit(build)
    p("# softofed benchmark (issue 5) — %s, %s" % (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                                  platform.node()))
    p("")
    p("Measured: softofed commit %s, build `%s`. Machine: %s, %d CPUs, kernel %s. "
      "%s rounds of the figures that enter a ratio (each once per round), %s runs of the other points of the size sweeps%s; "
      "%s s in all. Produced by `bench/run.sh` (`make bench`)%s." %
      (commit, build or "build", cpu, os.cpu_count() or 0, platform.release(), a.reps, a.sweep_reps,
       " (BENCH_QUICK=1: fewer runs and iterations)" if a.quick else "", a.seconds,
       " with BENCH_QUICK=1" if a.quick else ""))
    p("")
    try:
        p("Load average at the end of the run %.2f %.2f %.2f (1, 5, 15 min): other work on the "
          "machine moves these figures; the ratios compare figures of the same run." % os.getloadavg())
    except OSError:
        pass
    p("")
    ca, cb = (a.cpus.split(",") + ["1"])[:2]
    p("Server / first process pinned to CPU %s, client / second to CPU %s (`taskset`); softofed on "
      "one host runs in a network namespace of its own with its own daemon (tests/lib.sh "
      "`sof_ns_run`); between hosts, two network namespaces joined by a veth pair (`sof_hosts_up "
      "2`), MTU 9000. Latencies are one-way (half the round trip): perftest's t_typical (median), "
      "sockperf's median, ucx_perftest's typical, fi_pingpong's average. MiB/s is 2^20 bytes per "
      "second (perftest's and ucx_perftest's \"MB/s\"; fi_pingpong's MB/sec, 10^6 bytes/s, is "
      "converted). fi_pingpong's bandwidth is a ping-pong's (one message in flight: size / one-way "
      "time), perftest's and ucx_perftest's a stream's." % (ca, cb))
    p("")

    # ------------------------------------------------------------ ratios
    g = res.get
    rows = []

    def ratio(a_, b_, text, target, times=1):
        # bench/run.sh takes both sides of a ratio once per round: the
        # value is the median of the per-round ratios; the ratio of the
        # medians is shown beside it (the only one when the counts differ);
        # times: b_ counts that many times (a round trip against twice a
        # one-way figure)
        ra, rb = res.runs.get(a_, []), res.runs.get(b_, [])
        of_med = g(a_) / (times * g(b_)) if g(a_) is not None and g(b_) else None
        per = [x / (times * y) for x, y in zip(ra, rb) if y] if ra and len(ra) == len(rb) else []
        x = statistics.median(per) if per else of_med
        rows.append((text, x, target, "%s / %s" % (a_, b_), of_med, per))

    ucx_bw_1m = [l for l in res.order if l.startswith("UCX same host: ucx_perftest") and " 1 MiB " in l
                 and ("tag_bw" in l or "put_bw" in l)]
    bucx, bucx_l = best(res, ucx_bw_1m)
    ratio("softofed same host: ib_send_lat 2 B", "physical: cache-line ping-pong one-way",
          "ib_send_lat 2 B / cache-line ping-pong", "≤ 5")
    ratio("softofed same host: ib_send_lat 2 B", "libfabric same host: fi_pingpong 2 B (shm)",
          "ib_send_lat 2 B / libfabric shm ping-pong", "≤ 1")
    # issue 18: the same-host small SEND at twice the cache line, at most UCX posix
    ratio("softofed same host: ib_send_lat 2 B", "physical: cache-line ping-pong one-way",
          "ib_send_lat 2 B / cache-line ping-pong (issue 18)", "≤ 2")
    ratio("softofed same host: ib_send_lat 2 B", "UCX same host: ucx_perftest tag_lat 2 B (posix)",
          "ib_send_lat 2 B / UCX posix tag_lat (issue 18)", "≤ 1")
    # the floor of a design in which each side writes into its peer's
    # queue: one line per direction (bench/cacheline_pingpong.c LINES 2)
    ratio("softofed same host: ib_send_lat 2 B", "physical: two-line ping-pong one-way",
          "ib_send_lat 2 B / two-line ping-pong", "—")
    ratio("softofed same host: ib_send_lat 2 B", "kernel loopback: tcp ping-pong 14 B (blocking)",
          "ib_send_lat 2 B / kernel TCP loopback (blocking)", "far below 1")
    ratio("softofed same host: ib_send_lat 2 B", "kernel loopback: tcp ping-pong 14 B (busy-polled)",
          "ib_send_lat 2 B / kernel TCP loopback (busy-polled)", "—")
    ratio("softofed same host: ib_write_lat 2 B", "softofed same host: ib_send_lat 2 B",
          "ib_write_lat / ib_send_lat", "≤ 1.5")
    ratio("softofed same host: ib_read_lat 2 B", "softofed same host: ib_send_lat 2 B",
          "ib_read_lat / ib_send_lat", "≤ 1.5")
    ratio("softofed same host: ib_atomic_lat 8 B", "softofed same host: ib_send_lat 2 B",
          "ib_atomic_lat / ib_send_lat", "≤ 1.5")
    ratio("softofed same host: ib_send_lat -e 2 B", "kernel loopback: tcp ping-pong 14 B (blocking)",
          "ib_send_lat -e / kernel TCP loopback (blocking)", "≤ 1")
    for op in ("write", "read"):
        ratio("softofed same host: ib_%s_bw 1 MiB" % op, "physical: memcpy 1 MiB",
              "ib_%s_bw 1 MiB / memcpy 1 MiB" % op, "≥ 0.7")
        if bucx_l:
            ratio("softofed same host: ib_%s_bw 1 MiB" % op, bucx_l,
                  "ib_%s_bw 1 MiB / best UCX 1 MiB (%s)" % (op, bucx_l.split("ucx_perftest ")[1]), "> 1")
        ratio("softofed same host: ib_%s_bw 1 MiB" % op, "libfabric same host: fi_stream 1 MiB (shm)",
              "ib_%s_bw 1 MiB / libfabric shm 1 MiB (stream)" % op, "> 1")
        ratio("softofed same host: ib_%s_bw 1 MiB" % op, "libfabric same host: fi_pingpong bw 1 MiB (shm)",
              "ib_%s_bw 1 MiB / libfabric shm 1 MiB (ping-pong)" % op, "—")
    ratio("softofed same host: ib_send_bw 1 MiB", "physical: memcpy 1 MiB",
          "ib_send_bw 1 MiB / memcpy 1 MiB", "—")
    ratio("softofed same host: ib_write_bw 1 MiB", "kernel loopback: tcp stream (iperf3)",
          "ib_write_bw 1 MiB / kernel TCP stream, loopback", "—")
    ratio("softofed veth: ib_send_lat 2 B", "kernel veth: udp ping-pong 14 B (busy-polled)",
          "veth: ib_send_lat 2 B / kernel UDP ping-pong (busy-polled)", "≤ 1.5")
    ratio("softofed veth: ib_send_lat 2 B", "kernel veth: udp ping-pong 14 B (blocking)",
          "veth: ib_send_lat 2 B / kernel UDP ping-pong (blocking)", "—")
    ratio("softofed veth: ib_send_lat 2 B", "UCX veth: ucx_perftest tag_lat 2 B (tcp)",
          "veth: ib_send_lat 2 B / UCX tcp tag_lat 2 B", "≤ 1")
    # issue 18: one-sided operations between hosts (perftest: WRITE and
    # SEND one-way, READ and atomics round trips), without and with a
    # CPU-busy process pinned beside the target
    for busy in ("", " (busy target host)"):
        v, send = "softofed veth: ", "softofed veth: ib_send_lat 2 B" + busy
        ratio(v + "ib_write_lat 2 B" + busy, send,
              "veth%s: ib_write_lat 2 B / ib_send_lat 2 B (both one-way)" % busy, "≤ 1.2")
        ratio(v + "ib_read_lat 2 B" + busy, send,
              "veth%s: ib_read_lat 2 B (round trip) / twice ib_send_lat 2 B" % busy, "≤ 1.2", 2)
        ratio(v + "ib_atomic_lat 8 B" + busy, send,
              "veth%s: ib_atomic_lat 8 B (round trip) / twice ib_send_lat 2 B" % busy, "≤ 1.2", 2)
        for l in ("ib_send_lat 2 B", "ib_write_lat 2 B", "ib_read_lat 2 B", "ib_atomic_lat 8 B"):
            ratio(v + l + busy + " (t_avg)", v + l + busy,
                  "veth%s: %s t_avg / t_typical" % (busy, l), "≤ 2")
    ratio("softofed veth: ib_write_bw 1 MiB", "kernel veth: tcp stream (iperf3)",
          "veth: ib_write_bw 1 MiB / kernel TCP stream (iperf3)", "≥ 1")
    ratio("softofed veth: ib_write_bw 1 MiB", "libfabric veth: fi_stream 1 MiB (udp;ofi_rxd)",
          "veth: ib_write_bw 1 MiB / libfabric udp;ofi_rxd 1 MiB (stream)", "≥ 10")
    ratio("softofed veth: ib_write_bw 1 MiB", "libfabric veth: fi_pingpong bw 1 MiB (udp;ofi_rxd)",
          "veth: ib_write_bw 1 MiB / libfabric udp;ofi_rxd 1 MiB (ping-pong)", "—")
    ratio("softofed veth: ib_write_bw 1 MiB", "UCX veth: ucx_perftest tag_bw 1 MiB (tcp)",
          "veth: ib_write_bw 1 MiB / UCX tcp tag_bw 1 MiB", "—")
    ratio("softofed wire: ib_write_bw 1 MiB (loss 1%)", "softofed wire: ib_write_bw 1 MiB (no loss)",
          "netwire: ib_write_bw 1 MiB at 1 % loss / loss-free", "≥ 0.5")

    # issue 22: rsockets (Debian's librspreload on our librdmacm) beside
    # the kernel's TCP, one host and between hosts, in the same rounds
    rows5, rows[:] = rows[:], []
    for where, bw_t, lat_t in (("loopback", "≥ 3", "≤ 0.5"), ("veth", "≥ 1.5", "≤ 1")):
        rs_, k_ = "rsockets %s: " % where, "kernel %s: " % where
        # the same three against the kernel for rsockets (Debian's
        # librspreload) and for SDP (our libsdp.so, `use sdp`)
        for t_, lib, over in ((rs_, "librspreload", "rsockets"), ("SDP %s: " % where, "libsdp", "SDP")):
            ratio(t_ + "tcp stream (iperf3 -P 1 over %s)" % lib, k_ + "tcp stream (iperf3)",
                  "%s: iperf3 over %s / kernel TCP (throughput)" % (where, over), bw_t)
            ratio(t_ + "tcp stream (iperf3 -P 4 over %s)" % lib, k_ + "tcp stream (iperf3)",
                  "%s: iperf3 -P 4 over %s / kernel TCP one stream (throughput)" % (where, over), "—")
            ratio(t_ + "tcp ping-pong 14 B (sockperf over %s)" % lib, k_ + "tcp ping-pong 14 B (blocking)",
                  "%s: sockperf TCP ping-pong over %s / kernel TCP (latency)" % (where, over), lat_t)
            if lib == "librspreload":
                ratio(rs_ + "udp ping-pong 14 B (sockperf over librspreload)", k_ + "udp ping-pong 14 B (blocking)",
                      "%s: sockperf UDP ping-pong over datagram rsockets / kernel UDP (latency)" % where, "—")
        ratio("SDP %s: tcp stream (iperf3 -P 1 over libsdp)" % where, rs_ + "tcp stream (iperf3 -P 1 over librspreload)",
              "%s: iperf3 over SDP / over rsockets (throughput)" % where, "—")
    rows22, rows[:] = rows[:], rows5

    p("## Issue 5's targets")
    p("")
    p("Each figure of a ratio was taken once per round, both sides of the ratio in the same round "
      "(bench/run.sh `rounds`); the value is the median of the per-round ratios, with their range "
      "and the ratio of the two medians beside it. \"met\" compares the value with the target as "
      "written in issue 5.")
    p("")
    p("| ratio | value | per-round range | ratio of medians | issue 5 target | |")
    p("|---|---|---|---|---|---|")
    for text, x, target, _, of_med, per in rows:
        rng = "%.2f – %.2f (%d rounds)" % (min(per), max(per), len(per)) if per else "—"
        p("| %s | %s | %s | %s | %s | %s |" % (text, "%.2f" % x if x is not None else "not measured", rng,
                                               "%.2f" % of_med if of_med is not None else "—", target,
                                               verdict(x, target)))
    k = "softofed same host: ib_write_bw -q 1 64 B (message rate)"
    p("| ib_write_bw -q 1 64 B message rate (Mpps) | %s | | | ≥ 10 | %s |" % (fmt(g(k)), verdict(g(k), "≥ 10")))
    k = "idle: daemon resident memory (fresh, no client)"
    v = g(k) / 1024 if g(k) is not None else None
    p("| idle daemon resident memory (MiB) | %s | | | < 16 | %s |" % (fmt(v), verdict(v, "< 16")))
    for k, text in (("idle: daemon CPU, no client", "idle daemon CPU (% of a CPU)"),
                    ("idle: daemon CPU, three programs waiting", "daemon CPU, programs waiting (%)"),
                    ("idle: ibv_rc_pingpong server waiting for a client CPU",
                     "ibv_rc_pingpong waiting for a client (%)"),
                    ("idle: ibv_rc_pingpong -e server waiting for a client CPU",
                     "ibv_rc_pingpong -e waiting for a client (%)"),
                    ("idle: ibv_rc_pingpong -e server connected, waiting for a completion CPU",
                     "ibv_rc_pingpong -e waiting for a completion (%)")):
        p("| %s | %s | | | no CPU (< 0.5 here) | %s |" % (text, fmt(g(k)), verdict(g(k), "< 0.5")))
    q, r = g("scale: connected"), g("scale: requested")
    if r is not None:
        p("| connected RC QPs in one process | %s of %s | | | 10,000 | %s |" %
          (fmt(q), fmt(r), verdict(q, "≥ 10000")))
    p("")
    if any(x is not None for _, x, _, _, _, _ in rows22):
        p("## Issue 22's targets: rsockets and SDP beside the kernel's TCP and UDP")
        p("")
        p("Debian's librspreload.so on our librdmacm (stream rsockets for TCP, datagram rsockets for "
          "UDP) and our libsdp.so (`use sdp`) against the kernel on loopback and between two "
          "network-namespace hosts on a veth; "
          "each pair of figures taken in the same round, as above.")
        p("")
        p("| ratio | value | per-round range | ratio of medians | issue 22 target | |")
        p("|---|---|---|---|---|---|")
        for text, x, target, _, of_med, per in rows22:
            rng = "%.2f – %.2f (%d rounds)" % (min(per), max(per), len(per)) if per else "—"
            p("| %s | %s | %s | %s | %s | %s |" % (text, "%.2f" % x if x is not None else "not measured",
                                                   rng, "%.2f" % of_med if of_med is not None else "—",
                                                   target, verdict(x, target)))
        p("")
    p("The two sides of each ratio are rows of the table of medians below (e.g. "
      "\"ib_send_lat 2 B / cache-line ping-pong\" is \"softofed same host: ib_send_lat 2 B\" over "
      "\"physical: cache-line ping-pong one-way\").")
    p("")

    # ------------------------------------------------------------ plots
    if plots:
        p("## Plots")
        p("")
        for key, fn, title in plots:
            p("- [%s](%s)" % (title, fn))
        p("")
        p("softofed solid and bold, peers dashed; each point is a median (hover for the value). "
          "Bandwidth plots also show memcpy (same host) and the kernel's TCP stream (iperf3, "
          "plotted at its 128 KiB write size).")
        p("")
        for key, fn, title in plots:
            p("![%s](%s)" % (title, fn))
            p("")

    # ------------------------------------------------------------ idle
    idle = [l for l in res.order if l.startswith("idle: ")]
    if idle:
        p("## Idle")
        p("")
        p("The daemon of the same-host namespace right after it started, alone, then with three "
          "`ibv_rc_pingpong` servers attached: two waiting for a client (busy-polling and `-e`) and "
          "one (`-e`) connected to a client that sent its address and nothing more, so it waits for "
          "a completion. CPU is utime + stime from /proc/PID/stat over the window, as a percentage "
          "of one CPU (0 = not one clock tick).")
        p("")
        p("| figure | median | unit | runs |")
        p("|---|---|---|---|")
        for l in idle:
            p("| %s | %s | %s | %d |" % (l[6:], fmt(res.med[l]), res.unit[l], len(res.runs[l])))
        p("")

    # ------------------------------------------------------------ registration
    rg = {l[len("registration: "):]: res.med[l] for l in res.order
          if l.startswith("registration: ")}
    if rg:
        p("## Memory registration (issue 17)")
        p("")
        p("`bench/reg_mr` (through `softofed run`): `ibv_reg_mr` and `ibv_dereg_mr` of private "
          "anonymous memory, touched (every page written before) and untouched (a fresh mmap), "
          "beside `memcpy` of the same memory (both buffers touched) and faulting it in (the first "
          "write to every page of a fresh mapping): the physical limits of this machine. Medians "
          "of the program's own runs (fresh memory each), in µs; rates in GB/s (10^9 bytes).")
        p("")
        p("| size | what | µs | GB/s | / memcpy | / fault | target | verdict |")
        p("|---|---|---|---|---|---|---|---|")
        targets = {4096: ("≤ 10 µs", lambda t, n: t <= 10),
                   1 << 20: ("≤ 100 µs", lambda t, n: t <= 100),
                   1 << 30: ("≥ 4 GB/s", lambda t, n: n / t / 1e3 >= 4)}
        for size, name in ((4096, "4 KiB"), (1 << 20, "1 MiB"), (1 << 30, "1 GiB")):
            mc, fl = rg.get("memcpy %s" % name), rg.get("fault %s" % name)
            for what in ("reg_touched", "dereg_touched", "reg_untouched", "dereg_untouched",
                         "memcpy", "fault"):
                t = rg.get("%s %s" % (what, name))
                if t is None:
                    continue
                rate = size / t / 1e3 if t else None
                tt, ok = targets[size] if what not in ("memcpy", "fault") else ("", None)
                p("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
                    name, what.replace("_", " "), fmt(t), fmt(rate) if rate else "",
                    fmt(t / mc) if mc and what != "memcpy" else "",
                    fmt(t / fl) if fl and what != "fault" else "", tt,
                    ("met" if ok(t, size) else "**not met**") if ok else ""))
        p("")
        for l in note.get("registration", []):
            p("- %s" % l)
        p("")

    # ------------------------------------------------------------ scale
    sc = {l[7:]: res.med[l] for l in res.order if l.startswith("scale: ")}
    if sc:
        p("## Scale: RC QPs in one process")
        p("")
        n = sc.get("qps", 0)
        p("`bench/qp_scale` (through `softofed run`): RC QPs with send and receive queues of %s "
          "entries (one SGE), one CQ per %s QPs shared as send and receive CQ (%s CQs), connected "
          "in pairs on this host (QP 2i to 2i+1, GID 0); one SEND checked on the first and the "
          "last pair. Resident memory is VmRSS; the QP rings are shared memory, mapped by the "
          "program and by the daemon, so the same pages count in both." %
          (int(sc.get("queue_depth", 0)), int(sc.get("qps_per_cq", 0)), int(sc.get("cqs", 0))))
        p("")
        p("| figure | value |")
        p("|---|---|")
        show = [("requested", "QPs requested", ""), ("qps", "QPs created", ""),
                ("connected", "QPs connected (RTS)", ""),
                ("create_s", "time to create them", " s"), ("create_us_per_qp", "per QP", " µs"),
                ("connect_s", "time to connect them (INIT, RTR, RTS)", " s"),
                ("connect_us_per_qp", "per QP", " µs"),
                ("rss_before_kib", "program resident memory before", " KiB"),
                ("rss_connected_kib", "program resident memory with the QPs", " KiB"),
                ("rss_per_qp_kib", "program resident memory per QP", " KiB"),
                ("daemon_rss_before_kib", "daemon resident memory before", " KiB"),
                ("daemon_rss_with_kib", "daemon resident memory with the QPs", " KiB"),
                ("daemon_rss_per_qp_kib", "daemon resident memory per QP", " KiB"),
                ("destroy_s", "time to destroy them", " s"),
                ("daemon_rss_after_kib", "daemon resident memory after they were destroyed", " KiB"),
                ("daemon_rss_after_exit_kib", "daemon resident memory after the program exited", " KiB"),
                ("nofile_limit", "RLIMIT_NOFILE of the program (raised to its hard limit)", "")]
        for k, text, u in show:
            if k in sc:
                v = sc[k]
                p("| %s | %s%s |" % (text, "{:,}".format(int(v)) if v == int(v) and v >= 100 else fmt(v), u))
        p("")
        for l in note.get("scale", []):
            p("- qp_scale: `%s`" % l)
        req = sc.get("requested")
        if req and n < req:
            lim = sc.get("nofile_limit")
            p("")
            p("Fewer QPs than requested: %d of %d were created (see `failed_at` above). Each QP "
              "holds file descriptors for its shared-memory segments, in the program and in the "
              "daemon, and RLIMIT_NOFILE is %s here — a hard limit this run cannot raise (no "
              "CAP_SYS_RESOURCE), so %d QPs is the largest count that worked on this machine." %
              (n, req, fmt(lim) if lim else "?", n))
        p("")

    # ------------------------------------------------------------ loss
    w0, w1 = g("softofed wire: ib_write_bw 1 MiB (no loss)"), g("softofed wire: ib_write_bw 1 MiB (loss 1%)")
    if w0 is not None or w1 is not None:
        p("## Loss")
        p("")
        p("`ib_write_bw -s 1048576 --mtu 4096` between hosts a and b joined through "
          "`tests/progs/netwire` (a user-space cable with netem's semantics; this kernel has no "
          "sch_netem), first loss-free, then with 1 %% of the frames host b sends dropped (b is the "
          "client: it sends the data; a's ACKs pass). The loss-free figure over the plain veth "
          "(no netwire hop) is %s MiB/s." % fmt(g("softofed veth: ib_write_bw 1 MiB")))
        p("")
        p("| link | MiB/s (median) |")
        p("|---|---|")
        p("| netwire, no loss | %s |" % fmt(w0))
        p("| netwire, 1 %% loss | %s |" % fmt(w1))
        if w0 and w1 is not None:
            p("| ratio | %.2f (target ≥ 0.5: %s) |" % (w1 / w0, verdict(w1 / w0, "≥ 0.5")))
        p("")
        for l in note.get("wire", []):
            p("- %s" % l)
        p("")
        sweep = ["no loss", "loss 0.1%", "loss 1%", "loss 5%", "loss 1% both ways"]
        ours = [g("softofed wire: ib_write_bw 1 MiB (sweep, %s)" % l) for l in sweep]
        tcp = [g("kernel wire (%s): tcp stream (iperf3)" % l) for l in sweep]
        if any(v is not None for v in ours + tcp):
            p("Beside the target, one run each of `ib_write_bw` (256 MiB) and of one kernel TCP "
              "stream (`iperf3`, commands below) through the same cable, at other losses of host "
              "b's frames and at 1 % each way (then a's ACKs are lost too); each also as a share "
              "of its own loss-free figure:")
            p("")
            p("| link | softofed MiB/s | share | kernel TCP MiB/s | share |")
            p("|---|---|---|---|---|")

            def share(v, v0):
                return "%.2f" % (v / v0) if v is not None and v0 else "—"
            for l, o, t in zip(sweep, ours, tcp):
                p("| %s | %s | %s | %s | %s |" % (l, fmt(o), share(o, ours[0]), fmt(t), share(t, tcp[0])))
            p("")

    # ------------------------------------------------------------ profiles
    if prof:
        p("## Where time goes")
        p("")
        p("`perf` with software cpu-clock samples (this virtual machine exposes no hardware "
          "counters), call graphs, and `perf stat` of the client for system calls "
          "(`raw_syscalls:sys_enter`) and context switches, divided by the run's iterations "
          "(the client's start-up is included, so small values are an upper bound). The daemons "
          "are sampled with `perf record -p` for the length of the run. Shares are of each "
          "process's own samples.")
        p("")
        paths = []
        for r in prof:
            if r[0] not in paths:
                paths.append(r[0])
        for path in paths:
            p("### %s" % path)
            p("")
            procs = []
            for r in prof:
                if r[0] == path and r[1] not in procs:
                    procs.append(r[1])
            for proc in procs:
                rs = [r for r in prof if r[0] == path and r[1] == proc]
                stat = {r[4]: r[3] for r in rs if r[2] == "stat"}
                dso = [(float(r[3]), r[4]) for r in rs if r[2] == "dso"]
                sym = [(float(r[3]), r[4]) for r in rs if r[2] == "sym"]
                txt = "**%s**: " % proc
                if "syscalls per iteration" in stat:
                    txt += "%s system calls and %s context switches per iteration, %s ms of CPU; " % (
                        stat.get("syscalls per iteration", "?"), stat.get("context switches per iteration", "?"),
                        stat.get("CPU ms", "?"))
                if "samples" in stat:
                    txt += "%s samples (%.0f ms of CPU at perf's 4 kHz); " % (
                        stat["samples"], float(stat["samples"]) / 4)
                if dso:
                    kern = sum(v for v, n in dso if "kernel" in n)
                    txt += "%.0f %% of the samples in the kernel; by object: %s. " % (
                        kern, ", ".join("%s %.1f %%" % (n, v) for v, n in dso[:5]))
                if sym:
                    txt += "Top symbols: %s." % ", ".join("`%s` %.1f %%" % (n, v) for v, n in sym[:8])
                if not dso and not sym and not stat:
                    txt += "no samples."
                p(txt)
                p("")
            cmds = []
            for r in prof:
                if r[0] == path and r[5] and r[5] not in cmds:
                    cmds.append(r[5])
            p("Commands: " + "; ".join("`%s`" % c for c in cmds))
            p("")

    # ------------------------------------------------------------ medians
    p("## Medians")
    p("")
    p("| measurement | median | unit | min | max | runs |")
    p("|---|---|---|---|---|---|")
    for k in res.order:
        v = res.runs[k]
        p("| %s | %s | %s | %s | %s | %d |" % (k, fmt(res.med[k]), res.unit[k], fmt(min(v)), fmt(max(v)), len(v)))
    p("")
    if fails:
        p("## Not measured")
        p("")
        for f in fails:
            p("- %s: %s" % (f[0], f[1]))
        p("")
    p("## Commands")
    p("")
    p("One measurement again: `BENCH_ONLY='REGEX' bench/run.sh` (labels as in the table of "
      "medians; e.g. `BENCH_ONLY='ib_send_lat 2 B' BENCH_REPS=3 bench/run.sh`; BENCH_BUILD=DIR "
      "picks the build). The same-host softofed, loopback, idle and scale commands run inside "
      "`sof_ns_run` (a network namespace with its own daemon), the veth ones with the server in "
      "host a and the client in host b (`sof_hosts_up 2`); PORT numbers are any free port. The "
      "command lines of each measurement's last run (message rates come from the same run as "
      "the bandwidth, fi_pingpong's bandwidth from the same run as its latency):")
    p("")
    for k in res.order:
        if k.endswith("(message rate)") or "fi_pingpong bw " in k:
            continue
        p("- %s: `%s`" % (k, res.cmd[k]))
    p("")
    p("UCX `posix,cma`: small tag messages go through posix shared memory either way; cma "
      "carries rendezvous (large) messages. libfabric `udp;ofi_rxd` is the rxd utility provider "
      "(reliable datagram endpoints: sequence numbers, acknowledgements, retransmission) over the "
      "udp provider — libfabric's UDP reliability layer; `udp` alone is its datagram endpoint "
      "(at most one MTU a message). Debian's libfabric-bin ships only fi_pingpong and fi_info "
      "(no fabtests bandwidth programs): libfabric's streams are bench/fi_stream.c's (RDM "
      "endpoint, 16 sends of 1 MiB in flight, each message's length and marks checked by the "
      "receiver, timed by the sender to the receiver's word that all arrived), and fi_pingpong's "
      "bandwidth is one message in flight.")
    with open(a.out, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
