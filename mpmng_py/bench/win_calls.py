#!/usr/bin/env python3
"""Where a request's time goes under Wine: wineserver calls per HTTP
request, mpm_winnt_ng beside stock mpm_winnt.

Under wine64 nearly every system call of a Windows program is a round trip
to the single-threaded wineserver, and two kinds of call (closing a handle,
and fetching the Unix fd of a socket, which Wine never caches for an
accepted socket) hold a lock of the whole process for the round trip.
Counting the calls is exact and does not suffer from the machine's noise,
unlike req/s.

    python3 -m mpmng_py.bench.win_calls [--requests 1000] [--servers stock,ng]
                               [--workloads close,ka,tls-close,tls-ka] [--keep-traces]

Each server runs alone on a private copy of the wineprefix with a fresh
wineserver started with request tracing (WINEDEBUG=+server); after a
warm-up, ab makes --requests requests (10 at once) and the trace lines
written meanwhile are counted.  Traced servers are several times slower:
the req/s printed here mean nothing.  Results go to
bench/results/<date-time>-wincalls/ (summary.md: the twelve most
frequent calls, then every call type); --keep-traces also keeps each
run's trace lines there (trace-SERVER-WORKLOAD.txt), to see which calls a
request makes in order.
"""
import argparse
import collections
import datetime
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from mpmng_py.bench import BENCH
from mpmng_py.bench.report import publish
from mpmng_py.win import winhttpd
from mpmng_py.win.tlswin import TlsWinHttpd
from mpmng_py.win.winhttpd import WinHttpd, available

# Debian keeps it out of PATH, beside wine64
WINESERVER = os.environ.get("WINESERVER", "/usr/lib/wine/wineserver")

# One child each: the calls a request costs do not depend on how many
# children share the load.
SERVERS = {"stock": ("stock", ""), "ng": ("ng", "")}
# ab's arguments, and whether over TLS (mod_ssl: a full handshake per
# connection, ab resumes no session)
WORKLOADS = {"close": ([], False), "ka": (["-k"], False),
             "tls-close": ([], True), "tls-ka": (["-k"], True)}
CONF = "ThreadsPerChild 64\nLogLevel warn\nMaxKeepAliveRequests 0"
# Calls made with the process's fd-cache lock held (Wine 8,
# dlls/ntdll/unix/server.c: NtClose and uncached server_get_unix_fd).
LOCKED = ("close_handle", "get_handle_fd")
REQUEST = re.compile(r"[0-9a-f]{4}: (\w+)\((?!\))")


def count_calls(trace):
    """Server requests by name in a +server trace (replies not counted)."""
    calls = collections.Counter()
    for line in trace.splitlines():
        m = REQUEST.match(line)
        if m:
            calls[m.group(1)] += 1
    return calls


def wine_env(prefix):
    return winhttpd.wine_env({"WINEPREFIX": prefix})


def run_ab(url, n, extra):
    out = subprocess.run(["ab", "-n", str(n), "-c", "10"] + extra + [url],
                         capture_output=True, text=True, timeout=1800).stdout
    m = re.search(r"Failed requests:\s+(\d+)", out)
    if not m or int(m.group(1)):
        sys.exit("mpmng_py.bench.win_calls: ab failed:\n" + out)


def wait_quiet(path, limit=30):
    """Until the trace grows only by an idle server's timer ticks (a few
    lines in half a second): the last connections' closes and lingering
    reads belong to the run that made them."""
    deadline = time.time() + limit
    size = os.path.getsize(path)
    while time.time() < deadline:
        time.sleep(0.5)
        before, size = size, os.path.getsize(path)
        if size - before < 4096:
            break
    return size


def measure(prefix, name, workload, n, keep=None):
    """Calls per request of one server on one workload; the trace is
    written to `keep` if given."""
    flavour, extra = SERVERS[name]
    # the next wine process starts a fresh wineserver with its WINEDEBUG
    for flag in ("-k", "-w"):                  # kill, wait until it is gone
        subprocess.run([WINESERVER, flag], env=wine_env(prefix),
                       capture_output=True, timeout=60)
    args, tls = WORKLOADS[workload]
    env = {"WINEPREFIX": prefix, "WINEDEBUG": "+server"}
    if tls:
        h = TlsWinHttpd(flavour, extra=CONF + "\n" + extra, threads=64, env=env)
        url = "https://127.0.0.1:%d/small.txt" % h.tls_port
    else:
        h = WinHttpd(flavour, extra=CONF + "\n" + extra, threads=64, env=env)
        url = "http://127.0.0.1:%d/small.txt" % h.port
    h.put("small.txt", b"x" * 500)
    try:
        h.start(timeout=300)
        log = os.path.join(h.dir, "console.log")
        run_ab(url, 200, args)                 # warm-up: threads, caches
        start = wait_quiet(log)
        run_ab(url, n, args)
        end = wait_quiet(log)
    finally:
        h.stop()
        subprocess.run([WINESERVER, "-k"], env=wine_env(prefix),
                       capture_output=True)
    with open(log, "rb") as f:
        f.seek(start)
        trace = f.read(end - start).decode(errors="replace")
    shutil.rmtree(h.dir, ignore_errors=True)
    if keep:
        with open(keep, "w") as f:
            f.write(trace)
    calls = count_calls(trace)
    return {k: v / n for k, v in calls.items()}


def table(rows, names):
    return ["| " + " | ".join([label] + ["%.1f" % vals[s] for s in names])
            + " |" for label, vals in rows]


def every_call(results, names, workloads):
    """Each call type's count per request, all of them: what one server
    makes and the other does not shows here even when it is rare."""
    lines = ["## every call type", "",
             "| call | " + " | ".join("%s %s" % (s, wl) for wl in workloads
                                      for s in names) + " |",
             "|" + "---|" * (1 + len(names) * len(workloads))]
    keys = sorted({k for r in results.values() for k in r})
    for k in keys:
        lines.append("| %s | " % k + " | ".join(
            "%.2f" % results[(s, wl)].get(k, 0) for wl in workloads
            for s in names) + " |")
    return lines + [""]


def summary(results, names, workloads, n, stamp):
    lines = ["# wineserver calls per request (%s)" % stamp, "",
             "ab -n %d -c 10, 500 B file (tls-: over https, a full handshake per "
             "connection); `locked`: close_handle + "
             "get_handle_fd, made holding the process's fd-cache lock." % n,
             ""]
    for wl in workloads:
        head = ["call"] + names
        lines += ["## %s" % wl, "", "| " + " | ".join(head) + " |",
                  "|" + "---|" * len(head)]
        per = {s: results[(s, wl)] for s in names}
        rows = [("all", {s: sum(per[s].values()) for s in names}),
                ("locked", {s: sum(per[s].get(k, 0) for k in LOCKED)
                            for s in names})]
        top = collections.Counter()
        for s in names:
            top.update(per[s])
        rows += [(k, {s: per[s].get(k, 0) for s in names})
                 for k, _ in top.most_common(12)]
        lines += table(rows, names) + [""]
    return "\n".join(lines + every_call(results, names, workloads))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=1000)
    ap.add_argument("--servers", default="stock,ng")
    ap.add_argument("--workloads", default="close,ka")
    ap.add_argument("--keep-traces", action="store_true",
                    help="keep each run's trace lines in the results")
    args = ap.parse_args()
    names = args.servers.split(",")
    workloads = args.workloads.split(",")
    for s in names:
        if s not in SERVERS:
            sys.exit("mpmng_py.bench.win_calls: unknown server %r; use %s"
                     % (s, ",".join(SERVERS)))
        if not available(SERVERS[s][0]):
            sys.exit("mpmng_py.bench.win_calls: build/win/out/%s missing; run "
                     "build/win/build.sh first" % SERVERS[s][0])
    for wl in workloads:
        if wl not in WORKLOADS:
            sys.exit("mpmng_py.bench.win_calls: unknown workload %r; use %s"
                     % (wl, ",".join(WORKLOADS)))
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S") + "-wincalls"
    outdir = os.path.join(BENCH, "results", stamp)
    tmp = tempfile.mkdtemp(prefix="wincalls-")
    prefix = os.path.join(tmp, "prefix")
    try:
        # a private prefix: its wineserver is ours to restart with tracing
        shutil.copytree(winhttpd.PREFIX, prefix, symlinks=True)
        results = {}
        os.makedirs(outdir, exist_ok=True)
        for wl in workloads:
            for s in names:
                keep = (os.path.join(outdir, "trace-%s-%s.txt" % (s, wl))
                        if args.keep_traces else None)
                results[(s, wl)] = measure(prefix, s, wl, args.requests, keep)
                print("%-6s %-5s %.1f calls per request" % (
                    s, wl, sum(results[(s, wl)].values())), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    text = summary(results, names, workloads, args.requests, stamp)
    publish(outdir, text)


if __name__ == "__main__":
    main()
