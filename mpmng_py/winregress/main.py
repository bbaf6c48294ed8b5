"""httpd's own regression suite against httpd.exe under wine64.

    python3 -m mpmng_py.winregress [A B] [--with-fhcache] [--subset mpm|all]
                                   [--winout DIR] [--sequential] [-- t/x.t ...]

A and B (default: stock ng) are builds of build/win/build.sh (stock
mpm_winnt, mpm_winnt_ng) or the same with mod_fhcache ("ng+fhcache").
`--with-fhcache` adds A+fhcache and B+fhcache, each compared with the same
build without the cache.  The suite is the Linux runner's (mpmng_py.regress:
Debian's perl-framework, its patches, parsing and comparison); the server is
httpd.exe started by test/win/regress/httpd-wine, the c-modules are built
by test/win/regress/apxs-mingw.  Results: out/winregress/<name>.txt.

Exit status: 0 = no test file fails with B (or a +fhcache run) that passes
with its reference; 1 = some do; 2 = setup error or an incomplete run
(including a run in which no test file ran); 130 = interrupted.  Every
process started is ended by PID on exit (this process is a subreaper).
"""
import argparse
import fcntl
import os
import re
import shutil
import signal
import time

from mpmng_py.regress.base import FRAMEWORK, OUT, SetupError, log
from mpmng_py.regress.framework import ensure_framework, ensure_packages
from mpmng_py.regress.host import ensure_user, localhost_check, netns_available, pick_ports
from mpmng_py.regress.procs import Reaper, on_signal
from mpmng_py.regress.regress import comparisons, retry_regressions, wait_runs
from mpmng_py.regress.report import analyse, compare, write_results
from mpmng_py.winregress.settings import (BUILDS, FILE_STALL, RESULTS, SUBSET_FILE_STALL,
                                          SUBSET_MPM, check_tools, default_winout,
                                          ensure_template_prefix)
from mpmng_py.winregress.winrun import WinRun

NAMES = sorted(BUILDS) + ["%s+fhcache" % b for b in sorted(BUILDS)]


def parse_args():
    ap = argparse.ArgumentParser(
        prog="python3 -m mpmng_py.winregress",
        description="httpd's perl-framework against httpd.exe under wine64, two builds "
                    "compared")
    ap.add_argument("runs", nargs="*", help="A B (default: stock ng), then test files "
                    "after --")
    ap.add_argument("--with-fhcache", action="store_true",
                    help="also run A+fhcache and B+fhcache, each compared with A / B")
    ap.add_argument("--subset", choices=("mpm", "all"), default="all",
                    help="mpm: the short list of files exercising the MPM and the cache "
                         "(make check); all: the whole suite (default)")
    ap.add_argument("--winout", default=default_winout(),
                    help="the builds' directory (default: $MPMNG_WINOUT or build/win/out)")
    ap.add_argument("--sequential", action="store_true",
                    help="one run after the other (default: all at once, unless "
                         "REGRESS_PARALLEL=0)")
    args = ap.parse_intermixed_args()
    names = [a for a in args.runs if a in NAMES]
    tests = [a for a in args.runs if a not in NAMES]
    if not names:
        names = ["stock", "ng"]
    if len(names) != 2 or names[0] == names[1]:
        ap.error("give two different runs of %s (or none: stock ng)" % ", ".join(NAMES))
    for t in tests:
        if not re.match(r"^[\w./-]+\.t$", t):
            ap.error("bad test file %r (run names: %s)" % (t, ", ".join(NAMES)))
    if args.with_fhcache:
        names += ["%s+fhcache" % n for n in names if "+" not in n]
    if not tests and args.subset == "mpm":
        tests = [t for t in SUBSET_MPM if os.path.exists(os.path.join(FRAMEWORK, t))]
    return args, names, tests


def nothing_ran(parsed):
    """A run in which no test file ran proves nothing: it counts as an
    incomplete run (exit status 2)."""
    for results, info, known in parsed:
        ran = [n for n, x in results.items()
               if not n.startswith("(") and x["status"] != "skipped"]
        if not ran and "(harness) incomplete run" not in results:
            results["(harness) incomplete run"] = {
                "status": "failed", "failed": "", "notok": [],
                "reason": "no test file ran (%d skipped): nothing was tested" % len(results)}


def main():
    args, names, tests = parse_args()
    pairs = comparisons(names)
    parallel = not args.sequential and os.environ.get("REGRESS_PARALLEL", "1") != "0"
    timeout = int(os.environ.get("REGRESS_TIMEOUT", "5400"))
    file_stall = int(os.environ.get("REGRESS_FILE_STALL") or (
        SUBSET_FILE_STALL if args.subset == "mpm" else FILE_STALL))
    winout = os.path.abspath(args.winout)

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    reaper = Reaper()
    runs = []
    t0 = time.monotonic()
    os.makedirs(RESULTS, exist_ok=True)
    lock = open(os.path.join(RESULTS, ".lock"), "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        log("regress: ERROR: another run is using %s" % RESULTS)
        return 2
    status = None
    try:
        for p in (OUT, RESULTS):
            os.chmod(p, os.stat(p).st_mode | 0o055)
        check_tools()
        ensure_packages()
        ensure_framework()
        localhost_check()
        user = ensure_user() if os.geteuid() == 0 else None
        template = ensure_template_prefix(user)
        ports = pick_ports(len(names))
        netns = netns_available()
        if not netns:
            log("regress: note: no private network namespace (needs root and unshare); "
                "mod_heartbeat/mod_heartmonitor are left out")
        for name, port in zip(names, ports):
            runs.append(WinRun(name, port, user, tests, timeout, netns, winout, template))
            runs[-1].file_stall = file_stall
        for r in runs:
            t = time.monotonic()
            r.prepare()
            log("regress: [%s] prepared in %ds: %d modules of %s%s" % (
                r.mpm, time.monotonic() - t, len(r.modules), r.build_src,
                " + mod_fhcache" if r.fhcache else ""))
        log("regress: %s, %s, httpd.exe under wine64, 127.0.0.1 ports %s%s; %s" % (
            ", ".join("%s vs %s" % (names[i], names[j]) for i, j in pairs),
            "in parallel" if parallel else "sequentially",
            "/".join(str(r.port) for r in runs),
            ", each in a loopback-only network namespace" if netns else "",
            "%d test files" % len(tests) if tests else "the whole suite"))
        for batch in ([runs] if parallel else [[r] for r in runs]):
            for r in batch:
                log("regress: [%s] starting t/TEST on 127.0.0.1:%d (log %s)" % (
                    r.mpm, r.port, os.path.relpath(r.logfile)))
                r.launch(reaper)
            wait_runs(batch, reaper)
            for r in batch:
                r.duration_main = r.duration
                r.timed_out_main = r.timed_out
                r.progress_main = r.progress
                r.killed_main = list(r.killed_files)
        parsed = [analyse(r) for r in runs]
        nothing_ran(parsed)
        for r, (results, info, known) in zip(runs, parsed):
            for name in r.killed_main:
                x = results.setdefault(name, {"status": "failed", "failed": "", "reason": "",
                                              "notok": []})
                x["status"] = "failed"
                x["reason"] = ("%s killed: no output for %ds" % (x["reason"],
                                                                  file_stall)).strip()
        for i, j in pairs:
            retry_regressions(runs[i], runs[j], parsed[i], parsed[j], reaper, results=RESULTS)
        for r, (results, info, known) in zip(runs, parsed):
            for kind, lines in r.server_problems():
                results["(server) " + kind] = {"status": "failed", "failed": "",
                                               "reason": "; ".join(lines)[:2000], "notok": []}
            missing = r.cmodules_missing()
            if missing:
                r.header_lines.append("c-modules that do not build for Windows (left out): "
                                      + " ".join(missing))
            write_results(r, results, info, known)
            r.trim_logs()
    except SetupError as e:
        log("regress: ERROR: %s" % e)
        status = 2
    except KeyboardInterrupt as e:
        log("\nregress: interrupted (%s); stopping everything we started" % e)
        for r in runs:
            r.stop(reaper)
        status = 130
    finally:
        left = reaper.stop_all()
        if left:
            log("regress: WARNING: processes still alive after stop: %s" % left)
        for r in runs:  # ~700 MB each
            shutil.rmtree(r.prefix, ignore_errors=True)
    if status is not None:
        return status
    return compare(runs, parsed, pairs, t0)
