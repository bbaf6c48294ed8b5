#!/usr/bin/env python3
"""Windows benchmark: mpm_winnt_ng against stock mpm_winnt, both
cross-built the same way (build/win/build.sh) and run side by side under
wine64 on loopback, driven by wrk from Linux.

    python3 bench/win.py [--rounds 5] [--seconds 5] [--workloads a,b]

Workloads: close-500B-c100 (a new connection per request, 100 at once),
ka-500B-c100 (keep-alive), ka-64K-c20 (TransmitFile-sized responses).
Each round runs every workload on each server in turn, the order swapped
every round; the summary gives medians and ng/stock ratios.  Results go to
bench/results/<date-time>-win/ (raw.tsv, summary.md).  Wine is an emulator:
compare the two only with each other.
"""
import argparse
import datetime
import os
import re
import statistics
import subprocess
import sys

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
sys.path.insert(0, os.path.join(ROOT, "test", "win"))

from winhttpd import WinHttpd, available  # noqa: E402

WORKLOADS = {
    "close-500B-c100": ("/small.txt", 100, True),
    "ka-500B-c100": ("/small.txt", 100, False),
    "ka-64K-c20": ("/mid.bin", 20, False),
}
# Same worker count for both: stock holds a thread per keep-alive
# connection, and so does mpm_winnt_ng until keep-alive is event-driven.
CONF = "ThreadsPerChild 150\nLogLevel warn\nMaxKeepAliveRequests 0"


def run_wrk(port, path, conns, close, seconds):
    cmd = ["wrk", "-t2", "-c%d" % conns, "-d%ds" % seconds, "--latency",
           "http://127.0.0.1:%d%s" % (port, path)]
    if close:
        cmd[1:1] = ["-H", "Connection: close"]
    out = subprocess.run(cmd, capture_output=True, text=True,
                         timeout=seconds + 120).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), "
                  r"timeout (\d+)", out)
    errors = sum(map(int, m.groups())) if m else 0
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errors += int(m.group(1)) if m else 0
    m = re.search(r"99%\s+([\d.]+)(us|ms|s)", out)
    p99 = 0.0
    if m:
        p99 = float(m.group(1)) * {"us": 0.001, "ms": 1, "s": 1000}[m.group(2)]
    return rps, errors, p99


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    args = ap.parse_args()
    for flavour in ("ng", "stock"):
        if not available(flavour):
            sys.exit("bench/win.py: build/win/out/%s missing; run "
                     "build/win/build.sh first" % flavour)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S") + "-win"
    outdir = os.path.join(BENCH, "results", stamp)
    os.makedirs(outdir)
    servers = {}
    try:
        for flavour in ("stock", "ng"):
            h = WinHttpd(flavour, extra=CONF, threads=150)
            h.put("small.txt", b"x" * 500)
            h.put("mid.bin", os.urandom(65536))
            servers[flavour] = h.start()
        rows = []
        names = args.workloads.split(",")
        for rnd in range(args.rounds):
            order = ["stock", "ng"] if rnd % 2 == 0 else ["ng", "stock"]
            for wl in names:
                path, conns, close = WORKLOADS[wl]
                for flavour in order:
                    rps, errors, p99 = run_wrk(servers[flavour].port, path, conns,
                                               close, args.seconds)
                    rows.append((rnd, wl, flavour, rps, errors, p99))
                    print("round %d %-16s %-5s %8.1f req/s  errors %d  p99 %.1f ms"
                          % (rnd, wl, flavour, rps, errors, p99), flush=True)
    finally:
        for h in servers.values():
            h.stop()
    with open(os.path.join(outdir, "raw.tsv"), "w") as f:
        f.write("round\tworkload\tserver\trps\terrors\tp99_ms\n")
        for r in rows:
            f.write("%d\t%s\t%s\t%.1f\t%d\t%.2f\n" % r)
    lines = ["# mpm_winnt_ng vs stock mpm_winnt under wine64 (%s)" % stamp, "",
             "%d rounds x %d s per run, order swapped each round; medians."
             % (args.rounds, args.seconds), "",
             "| workload | stock req/s | ng req/s | ng/stock | stock p99 ms | "
             "ng p99 ms | errors stock/ng |", "|---|---|---|---|---|---|---|"]
    for wl in names:
        med = {}
        for flavour in ("stock", "ng"):
            sel = [r for r in rows if r[1] == wl and r[2] == flavour]
            med[flavour] = (statistics.median(r[3] for r in sel),
                            statistics.median(r[5] for r in sel),
                            sum(r[4] for r in sel))
        ratio = med["ng"][0] / med["stock"][0] if med["stock"][0] else float("inf")
        lines.append("| %s | %.0f | %.0f | %.2f | %.1f | %.1f | %d/%d |" % (
            wl, med["stock"][0], med["ng"][0], ratio, med["stock"][1],
            med["ng"][1], med["stock"][2], med["ng"][2]))
    text = "\n".join(lines) + "\n"
    with open(os.path.join(outdir, "summary.md"), "w") as f:
        f.write(text)
    print(text)
    print("results: %s" % outdir)


if __name__ == "__main__":
    main()
