#!/usr/bin/env python3
"""Idle keep-alive connections under wine64: how many each Windows MPM
holds with a small thread pool, what that costs, and whether they are all
served afterwards.

    python3 -m mpmng_py.bench.win_idle [--conns 10000] [--threads 64]
                              [--stock-threads 64] [--stock-conns 1000]

For each server (stock mpm_winnt, mpm_winnt_ng; both cross-built by
build/win/build.sh): start it with ThreadsPerChild --threads, open --conns
connections that each make one request and then stay idle
(mpmng_py/holdconns.py), then report how many are held, the server's
threads and memory (PSS of its wine processes, from /proc), the time of one
fresh request while they are held, and the result of one more request on
every held connection.  Results go to bench/results/<date-time>-win-idle/.
Wine is an emulator: compare the two only with each other.
"""
import argparse
import datetime
import os
import re
import subprocess
import sys
import time

from mpmng_py.bench import BENCH, procstat
from mpmng_py.bench.report import publish
from mpmng_py.holdconns import Holder
from mpmng_py.win.winhttpd import WinHttpd, available


def footprint(h):
    m = procstat.tree_memory(None, pids=h.wine_pids())
    return m["pss_kb"], m["threads"]


def fresh_request_ms(port):
    t0 = time.time()
    r = subprocess.run(["curl", "-s", "-m", "30", "-o", "/dev/null", "-w",
                        "%{http_code}", "http://127.0.0.1:%d/small.txt" % port],
                       capture_output=True, text=True)
    return (time.time() - t0) * 1000, r.stdout


def measure(flavour, threads, conns):
    h = WinHttpd(flavour, threads=threads,
                 extra="LogLevel warn\nKeepAliveTimeout 300\n"
                       "MaxKeepAliveRequests 0\nListenBacklog 4096")
    h.put("small.txt", b"x" * 500)
    h.start()
    row = {"server": flavour, "threads_per_child": threads}
    try:
        time.sleep(2)         # start-up's last allocations, before the baseline
        row["pss_before_kb"], row["threads_before"] = footprint(h)
        holder = Holder("127.0.0.1", h.port, "/small.txt")
        try:
            row["open"] = holder.ask("open %d" % conns)
            row["pss_held_kb"], row["threads_held"] = footprint(h)
            row["fresh_ms"], row["fresh_code"] = fresh_request_ms(h.port)
            row["again"] = holder.ask("again")
            row["alive"] = holder.ask("check")
        finally:
            holder.close()
    finally:
        h.stop()
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--conns", type=int, default=10000)
    ap.add_argument("--threads", type=int, default=64)
    ap.add_argument("--stock-threads", type=int, default=None,
                    help="ThreadsPerChild for stock (default: --threads)")
    ap.add_argument("--stock-conns", type=int, default=1000,
                    help="connections tried on stock: each one beyond its "
                         "threads waits 20 s for a response that does not "
                         "come, so the full count would take long")
    args = ap.parse_args()
    for flavour in ("ng", "stock"):
        if not available(flavour):
            sys.exit("mpmng_py.bench.win_idle: build/win/out/%s missing; run "
                     "build/win/build.sh first" % flavour)
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S") + "-win-idle"
    outdir = os.path.join(BENCH, "results", stamp)
    os.makedirs(outdir)
    rows = [measure("ng", args.threads, args.conns),
            measure("stock", args.stock_threads or args.threads,
                    args.stock_conns)]
    lines = ["# Idle keep-alive connections under wine64 (%s)" % stamp, "",
             "%d connections tried on ng, %d on stock; each makes one request, "
             "then stays idle (KeepAliveTimeout 300)." % (args.conns,
                                                         args.stock_conns), "",
             "| server | ThreadsPerChild | open | threads held | PSS before MB | "
             "PSS held MB | per conn KB | fresh request ms | again | alive |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        held = re.search(r"held=(\d+)", r["open"])
        n = int(held.group(1)) if held else 0
        per = ((r["pss_held_kb"] - r["pss_before_kb"]) / n) if n else 0
        lines.append("| %s | %d | %s | %d | %.1f | %.1f | %.1f | %.0f (%s) | %s | %s |" % (
            r["server"], r["threads_per_child"], r["open"], r["threads_held"],
            r["pss_before_kb"] / 1024, r["pss_held_kb"] / 1024, per,
            r["fresh_ms"], r["fresh_code"], r["again"], r["alive"]))
    text = "\n".join(lines) + "\n"
    publish(outdir, text)


if __name__ == "__main__":
    main()
