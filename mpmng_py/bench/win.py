#!/usr/bin/env python3
"""Windows benchmark: mpm_winnt_ng against stock mpm_winnt, both
cross-built the same way (build/win/build.sh) and run side by side under
wine64 on loopback, driven by wrk from Linux.  mpm_winnt_ng runs twice:
with one child (`ng`) and with `ChildProcesses 2` (`ng-2ch`, the same
ThreadsPerChild in each child).

    python3 -m mpmng_py.bench.win [--rounds 5] [--seconds 5] [--workloads a,b]
                         [--servers stock,ng,ng-2ch]

Workloads: close-500B-c100 (a new connection per request, 100 at once),
ka-500B-c100 (keep-alive), ka-64K-c20 (TransmitFile-sized responses), ka-1M-c20 (1 MiB files).
`ng+fhc` and `stock+fhc` are the same servers with mod_fhcache
(build/win/out/fhcache) caching the files.
Each round runs every workload on each server in turn, the order rotated
every round; the summary gives medians and ratios to stock.  Results go to
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
import time

from mpmng_py import ROOT
from mpmng_py.bench import BENCH
from mpmng_py.bench.report import publish
from mpmng_py.win.winhttpd import WinHttpd, available

WORKLOADS = {
    "close-500B-c100": ("/small.txt", 100, True),
    "ka-500B-c100": ("/small.txt", 100, False),
    "ka-64K-c20": ("/mid.bin", 20, False),
    "ka-1M-c20": ("/big.bin", 20, False),
}
FHC_MODULE = os.path.join(ROOT, "build", "win", "out", "fhcache", "mod_fhcache.so")
FHC_CONF = 'LoadModule fhcache_module "%s"\nFHCache On' % ("Z:" + FHC_MODULE)
# Same worker count for both, enough for stock's thread per keep-alive
# connection (mpm_winnt_ng's idle connections hold none: python3 -m mpmng_py.bench.win_idle).
CONF = "ThreadsPerChild 150\nLogLevel warn\nMaxKeepAliveRequests 0"
# name: (build flavour, extra configuration)
SERVERS = {
    "stock": ("stock", ""),
    "ng": ("ng", ""),
    "ng-2ch": ("ng", "ChildProcesses 2"),
    "ng+fhc": ("ng", FHC_CONF),
    "stock+fhc": ("stock", FHC_CONF),
}


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


def wait_children(h, n, timeout=60):
    """Until n children accept (server-status lists them)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if len(h.status()["WinNTNGServingPids"].split()) >= n:
                return
        except (OSError, AssertionError, KeyError):
            pass
        time.sleep(0.3)
    sys.exit("mpmng_py.bench.win: %d children not serving in %d s" % (n, timeout))


def summary(rows, names, servers, args, stamp):
    ng = [n for n in servers if n != "stock"]
    lines = ["# mpm_winnt_ng vs stock mpm_winnt under wine64 (%s)" % stamp, "",
             "%d rounds x %d s per run, order rotated each round; medians. "
             "ng-2ch: ChildProcesses 2, ThreadsPerChild 150 in each."
             % (args.rounds, args.seconds), ""]
    head = ["workload"] + ["%s req/s" % n for n in servers]
    if "stock" in servers:
        head += ["%s/stock" % n for n in ng]
    # with the cache against the same server without it
    pairs = [(n, n[:-4]) for n in servers if n.endswith("+fhc")
             and n[:-4] in servers and n[:-4] != "stock"]
    head += ["%s/%s" % p for p in pairs]
    head += ["%s p99 ms" % n for n in servers] + ["errors " + "/".join(servers)]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for wl in names:
        med = {}
        for name in servers:
            sel = [r for r in rows if r[1] == wl and r[2] == name]
            med[name] = (statistics.median(r[3] for r in sel),
                         statistics.median(r[5] for r in sel),
                         sum(r[4] for r in sel))
        cells = [wl] + ["%.0f" % med[n][0] for n in servers]
        if "stock" in servers:
            cells += ["%.2f" % (med[n][0] / med["stock"][0]) if med["stock"][0]
                      else "inf" for n in ng]
        cells += ["%.2f" % (med[a][0] / med[b][0]) if med[b][0] else "inf"
                  for a, b in pairs]
        cells += ["%.1f" % med[n][1] for n in servers]
        cells.append("/".join("%d" % med[n][2] for n in servers))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--servers", default=",".join(SERVERS))
    args = ap.parse_args()
    names_s = args.servers.split(",")
    for name in names_s:
        if name not in SERVERS:
            sys.exit("mpmng_py.bench.win: unknown server %r; use %s"
                     % (name, ",".join(SERVERS)))
    for flavour in set(SERVERS[n][0] for n in names_s):
        if not available(flavour):
            sys.exit("mpmng_py.bench.win: build/win/out/%s missing; run "
                     "build/win/build.sh first" % flavour)
    if any("fhc" in n for n in names_s) and not os.path.exists(FHC_MODULE):
        sys.exit("mpmng_py.bench.win: %s missing; run build/win/build.sh first"
                 % FHC_MODULE)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S") + "-win"
    outdir = os.path.join(BENCH, "results", stamp)
    os.makedirs(outdir)
    servers = {}
    try:
        for name in names_s:
            flavour, extra = SERVERS[name]
            h = WinHttpd(flavour, extra=CONF + "\n" + extra, threads=150)
            h.put("small.txt", b"x" * 500)
            h.put("mid.bin", os.urandom(65536))
            h.put("big.bin", os.urandom(1 << 20))
            servers[name] = h.start()
            m = re.search(r"ChildProcesses (\d+)", extra)
            if m:
                wait_children(h, int(m.group(1)))
        rows = []
        names = args.workloads.split(",")
        for rnd in range(args.rounds):
            k = rnd % len(names_s)
            order = names_s[k:] + names_s[:k]
            for wl in names:
                path, conns, close = WORKLOADS[wl]
                for name in order:
                    rps, errors, p99 = run_wrk(servers[name].port, path, conns,
                                               close, args.seconds)
                    rows.append((rnd, wl, name, rps, errors, p99))
                    print("round %d %-16s %-6s %8.1f req/s  errors %d  p99 %.1f ms"
                          % (rnd, wl, name, rps, errors, p99), flush=True)
    finally:
        for h in servers.values():
            h.stop()
    with open(os.path.join(outdir, "raw.tsv"), "w") as f:
        f.write("round\tworkload\tserver\trps\terrors\tp99_ms\n")
        for r in rows:
            f.write("%d\t%s\t%s\t%.1f\t%d\t%.2f\n" % r)
    text = summary(rows, names, names_s, args, stamp)
    publish(outdir, text)


if __name__ == "__main__":
    main()
