#!/usr/bin/env python3
"""bench/report.py — the Markdown report of bench/run.sh.

Reads the raw figures (one run per line: label, unit, value, command; tab
separated) and the measurements that did not run (label, reason), and prints
the report: medians per measurement, the ratios issue 5 names, the commands.

Usage: report.py RESULTS.tsv FAILED.tsv SECONDS REPS [quick]
"""
import os
import platform
import statistics
import subprocess
import sys
import time


def load(path):
    order, runs, unit, cmd = [], {}, {}, {}
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 4:
                continue
            label, u, v, c = parts[:4]
            try:
                x = float(v)
            except ValueError:
                continue
            if label not in runs:
                order.append(label)
                runs[label] = []
            runs[label].append(x)
            unit[label] = u
            cmd[label] = c
    return order, runs, unit, cmd


def fmt(x):
    if x >= 100:
        return "%.0f" % x
    if x >= 10:
        return "%.1f" % x
    if x >= 1:
        return "%.2f" % x
    return "%.3f" % x


def main():
    tsv, failed, secs, reps = sys.argv[1:5]
    quick = len(sys.argv) > 5 and sys.argv[5] == "quick"
    order, runs, unit, cmd = load(tsv)
    med = {k: statistics.median(v) for k, v in runs.items()}
    fails = []
    if os.path.exists(failed):
        with open(failed) as f:
            fails = [l.rstrip("\n").split("\t", 1) for l in f if l.strip()]

    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for l in f:
                if l.startswith("model name"):
                    cpu = l.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip()
    except OSError:
        rev = "?"

    p = print
    p("# softofed benchmark (issue 5) — %s, %s" % (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                                  platform.node()))
    p()
    p("Machine: %s, %d CPUs, kernel %s; softofed commit %s. %s runs per measurement%s, "
      "%s s in all. Produced by `bench/run.sh` (`make bench`)%s." %
      (cpu, os.cpu_count() or 0, platform.release(), rev, reps,
       " (BENCH_QUICK=1: fewer iterations)" if quick else "", secs,
       " with BENCH_QUICK=1" if quick else ""))
    p()
    try:
        la = "Load average at the end of the run %.2f %.2f %.2f (1, 5, 15 min): " \
            "other work on the machine moves these figures." % os.getloadavg()
    except OSError:
        la = ""
    p(la)
    p()
    p("Server / first process pinned to one CPU, client / second to another "
      "(`taskset`); softofed on one host runs in a network namespace of its own "
      "with its own daemon (tests/lib.sh `sof_ns_run`); between hosts, two "
      "network namespaces joined by a veth pair (`sof_hosts_up 2`). Latencies "
      "are one-way (half the round trip): perftest's t_typical (median), "
      "sockperf's median, ucx_perftest's typical, fi_pingpong's average. MiB/s "
      "is 2^20 bytes per second (perftest's \"MB/sec\").")
    p()

    def r(a, b, inverse=False):
        if a not in med or b not in med or med[b] == 0:
            return None
        return med[a] / med[b]

    p("## Ratios")
    p()
    p("| ratio (medians) | value | issue 5 target |")
    p("|---|---|---|")
    rows = [
        ("softofed same host: ib_send_lat 2 B", "physical: cache-line ping-pong one-way",
         "ib_send_lat 2 B / cache-line ping-pong", "≤ 5"),
        ("softofed same host: ib_send_lat 2 B", "libfabric same host: fi_pingpong 2 B (shm)",
         "ib_send_lat 2 B / libfabric shm ping-pong", "≤ 1"),
        ("softofed same host: ib_send_lat 2 B", "UCX same host: ucx_perftest tag_lat 2 B (posix)",
         "ib_send_lat 2 B / UCX posix tag_lat", "—"),
        ("softofed same host: ib_send_lat 2 B", "kernel loopback: tcp ping-pong 14 B (blocking)",
         "ib_send_lat 2 B / kernel TCP loopback (blocking)", "far below 1"),
        ("softofed same host: ib_send_lat 2 B", "kernel loopback: tcp ping-pong 14 B (busy-polled)",
         "ib_send_lat 2 B / kernel TCP loopback (busy-polled)", "—"),
        ("softofed same host: ib_send_lat 2 B", "kernel loopback: udp ping-pong 14 B (busy-polled)",
         "ib_send_lat 2 B / kernel UDP loopback (busy-polled)", "—"),
        ("softofed same host: ib_write_lat 2 B", "softofed same host: ib_send_lat 2 B",
         "ib_write_lat / ib_send_lat", "≤ 1.5"),
        ("softofed same host: ib_read_lat 2 B", "softofed same host: ib_send_lat 2 B",
         "ib_read_lat / ib_send_lat", "≤ 1.5"),
        ("softofed same host: ib_atomic_lat 8 B", "softofed same host: ib_send_lat 2 B",
         "ib_atomic_lat / ib_send_lat", "≤ 1.5"),
        ("softofed same host: ib_send_lat -e 2 B", "kernel loopback: tcp ping-pong 14 B (blocking)",
         "ib_send_lat -e / kernel TCP loopback (blocking)", "≤ 1"),
        ("softofed same host: ib_write_bw 1 MiB", "physical: memcpy 1 MiB",
         "ib_write_bw 1 MiB / memcpy 1 MiB", "≥ 0.7"),
        ("softofed same host: ib_read_bw 1 MiB", "physical: memcpy 1 MiB",
         "ib_read_bw 1 MiB / memcpy 1 MiB", "≥ 0.7"),
        ("softofed same host: ib_send_bw 1 MiB", "physical: memcpy 1 MiB",
         "ib_send_bw 1 MiB / memcpy 1 MiB", "—"),
        ("softofed same host: ib_write_bw 1 MiB", "kernel loopback: tcp stream (iperf3)",
         "ib_write_bw 1 MiB / kernel TCP stream, loopback", "—"),
        ("softofed veth: ib_send_lat 2 B", "kernel veth: udp ping-pong 14 B (busy-polled)",
         "veth: ib_send_lat 2 B / kernel UDP ping-pong (busy-polled)", "≤ 1.5"),
        ("softofed veth: ib_send_lat 2 B", "kernel veth: udp ping-pong 14 B (blocking)",
         "veth: ib_send_lat 2 B / kernel UDP ping-pong (blocking)", "—"),
        ("softofed veth: ib_write_bw 1 MiB", "kernel veth: tcp stream (iperf3)",
         "veth: ib_write_bw 1 MiB / kernel TCP stream (iperf3)", "≥ 1"),
    ]
    for a, b, text, target in rows:
        x = r(a, b)
        p("| %s | %s | %s |" % (text, "%.2f" % x if x is not None else "not measured", target))
    k = "softofed same host: ib_write_bw -q 1 64 B (message rate)"
    p("| ib_write_bw -q 1 64 B message rate (Mpps) | %s | ≥ 10 |" %
      (fmt(med[k]) if k in med else "not measured"))
    p()
    p("## Medians")
    p()
    p("| measurement | median | unit | min | max | runs |")
    p("|---|---|---|---|---|---|")
    for k in order:
        v = runs[k]
        p("| %s | %s | %s | %s | %s | %d |" % (k, fmt(med[k]), unit[k], fmt(min(v)), fmt(max(v)), len(v)))
    p()
    if fails:
        p("## Not measured")
        p()
        for f in fails:
            p("- %s: %s" % (f[0], f[1] if len(f) > 1 else ""))
        p()
    p("## Commands")
    p()
    p("One measurement again: `BENCH_ONLY='REGEX' bench/run.sh` (labels as in the "
      "table; e.g. `BENCH_ONLY='ib_send_lat 2 B' BENCH_REPS=3 bench/run.sh`). The "
      "same-host softofed and loopback commands run inside `sof_ns_run` (a network "
      "namespace with its own daemon); PORT is any free port. The command lines of "
      "each measurement's last run:")
    p()
    for k in order:
        p("- %s: `%s`" % (k, cmd[k]))
    p()
    p("UCX `posix,cma`: small tag messages go through posix shared memory "
      "either way; cma only carries rendezvous (large) messages.")
    p()
    p("Plots: not produced in this version (neither gnuplot nor matplotlib is among "
      "the bench's packages).")


if __name__ == "__main__":
    main()
