"""Run httpd's own regression suite against Debian's apache2 with two MPMs.

The suite is the Apache::Test "perl-framework" that Debian ships in its
apache2 source package as debian/perl-framework (see debian/tests/
run-test-suite there).  For each MPM this script

  * copies the cached framework into out/regress/work/<mpm>/,
  * applies a few environmental patches (listen on 127.0.0.1 instead of
    0.0.0.0, per-run unix socket paths) and, for our MPM, a sizing block,
  * runs each t/TEST in a private network namespace that has only `lo`,
  * writes an httpd.conf that loads the chosen MPM plus every module Debian
    ships (like Debian's procedure does),
  * runs `perl Makefile.PL` and `t/TEST` as an unprivileged user,
  * saves per-test-file results to out/regress/<mpm>.txt,

then compares MPM B against MPM A.  Exit status: 0 when B has no failures
that A lacks, 1 when it has, 2 on a setup error or an incomplete run, 130
when interrupted.  See README.md.

Every process started here is ended by PID on exit, including on errors and
Ctrl-C: this process makes itself a child subreaper, so the daemonised
httpd (which calls setsid()) stays in its process tree.
"""
import argparse
import fcntl
import os
import re
import signal
import sys
import time

from mpmng_py import privhttpd
from mpmng_py.regress.base import OUT, RESULTS, ROOT, SetupError, log
from mpmng_py.regress.framework import ensure_framework, ensure_packages
from mpmng_py.regress.host import ensure_user, localhost_check, netns_available, pick_ports
from mpmng_py.regress.mpmrun import MpmRun
from mpmng_py.regress.parse import parse_log
from mpmng_py.regress.procs import Reaper, on_signal
from mpmng_py.regress.report import analyse, apache_version, compare, failing, write_results


def wait_runs(batch, reaper, what="t/TEST"):
    """Poll running MpmRuns until all ended; progress line every minute."""
    last_report = time.monotonic()
    pending = list(batch)
    while pending:
        for r in list(pending):
            if r.poll():
                pending.remove(r)
                r.finish(reaper)
                log("regress: [%s] %s finished in %dm%02ds (exit %s)" % (
                    r.mpm, what, r.duration // 60, r.duration % 60, r.proc.returncode))
            elif r.timed_out:
                r.stop(reaper)
        if time.monotonic() - last_report > 60 and pending:
            last_report = time.monotonic()
            log("regress: " + "; ".join(
                "[%s] %dm%02ds, %d files, at %s" % (
                    r.mpm, r.duration // 60, r.duration % 60, len(r.progress),
                    r.progress[-1][1] if r.progress else "(configuring)")
                for r in pending))
        reaper.reap_zombies()
        time.sleep(1)


def retry_regressions(a, b, pa, pb, reaper, results=RESULTS):
    """Test files that failed with B only are run once more with B.  Those
    that pass then are flaky: reported, not counted as regressions.  The
    re-run's logs go to `results` (mpmng_py.winregress passes its own)."""
    cands = sorted(n for n in failing(pb[0], pb[2]) - failing(pa[0], pa[2])
                   if not n.startswith("("))
    if not cands or os.environ.get("REGRESS_RETRY", "1") == "0":
        return
    log("regress: [%s] re-running %d test file(s) that failed only with %s: %s" % (
        b.mpm, len(cands), b.mpm, " ".join(cands)))
    logfile = os.path.join(results, b.mpm + ".retry.log")
    b.launch(reaper, tests=cands, logfile=logfile,
             errfile=os.path.join(results, b.mpm + ".retry.err"))
    wait_runs([b], reaper, "retry")
    again, _ = parse_log(logfile)
    for n in cands:
        x = again.get(n)
        if x and x["status"] == "ok":
            pb[0][n]["flaky"] = True
            pb[0][n]["reason"] = (pb[0][n]["reason"] + " (passed when re-run: flaky)").strip()
        elif x:
            pb[0][n]["reason"] = (pb[0][n]["reason"] + " (failed again when re-run%s)" % (
                ", subtests " + x["failed"] if x["failed"] else "")).strip()


def comparisons(names):
    """(reference, other) pairs: "X+fhcache" against X when X runs too,
    everything else against the first name (A)."""
    pairs = []
    for name in names[1:]:
        base = name.partition("+")[0]
        pairs.append((names.index(base) if base != name and base in names else 0,
                      names.index(name)))
    return pairs


def main():
    names = sorted(privhttpd.MPMS) + ["%s+fhcache" % m for m in sorted(privhttpd.MPMS)]
    # prog: the name its usage lines had when this was test/regress/regress.py
    ap = argparse.ArgumentParser(
        prog="regress.py", description="Run httpd's perl-framework with two MPMs and compare.")
    ap.add_argument("mpm_a", choices=names)
    ap.add_argument("mpm_b", choices=names)
    ap.add_argument("tests", nargs="*", help="test files (after --), default: all")
    ap.add_argument("--with-fhcache", action="store_true",
                    help="also run A+fhcache and B+fhcache (mod_fhcache, FHCache On), each "
                         "compared with the same MPM without it")
    ap.add_argument("--sequential", action="store_true",
                    help="run the two MPMs one after the other (default: in parallel, "
                         "unless REGRESS_PARALLEL=0)")
    ap.add_argument("--reparse", action="store_true",
                    help="run nothing: compare the existing out/regress/<mpm>.log files "
                         "(no re-runs, no error_log/sanitizer checks, .txt files kept)")
    args = ap.parse_intermixed_args()  # options may follow the MPMs
    if args.mpm_a == args.mpm_b:
        ap.error("MPM_A and MPM_B must differ")
    mpms = [args.mpm_a, args.mpm_b]
    if args.with_fhcache:
        mpms += ["%s+fhcache" % m for m in mpms if "+" not in m]
    pairs = comparisons(mpms)
    for t in args.tests:
        if not re.match(r"^[\w./-]+$", t):
            ap.error("bad test name %r" % t)
    if args.reparse:
        runs = []
        for mpm in mpms:
            r = MpmRun(mpm, 0, None, [], 0, False)
            copy = os.path.join(r.wd, "modules", os.path.basename(r.so))
            r.loaded_so = copy if os.path.exists(copy) else r.so
            if not os.path.exists(r.logfile):
                log("regress: ERROR: no %s" % r.logfile)
                return 2
            runs.append(r)
        log("regress: re-parsing existing logs (nothing run)")
        return compare(runs, [analyse(r) for r in runs], pairs, time.monotonic())
    parallel = not args.sequential and os.environ.get("REGRESS_PARALLEL", "1") != "0"
    timeout = int(os.environ.get("REGRESS_TIMEOUT", "2700"))

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
    try:
        for p in (OUT, RESULTS):
            os.chmod(p, os.stat(p).st_mode | 0o055)
        ensure_packages()
        ensure_framework()
        localhost_check()
        user = ensure_user() if os.geteuid() == 0 else None
        ports = pick_ports(len(mpms))
        netns = netns_available()
        if not netns:
            log("regress: note: no private network namespace (needs root and unshare, "
                "REGRESS_NETNS=0 turns it off); "
                "leaving out mod_heartbeat/mod_heartmonitor, which multicast to "
                "239.0.0.1: t/modules/heartbeat.t will be skipped")
        for mpm, port in zip(mpms, ports):
            runs.append(MpmRun(mpm, port, user, args.tests, timeout, netns))
        for r in runs:
            r.prepare()
        log("regress: %s, %s, apache2 %s, 127.0.0.1 ports %s%s" % (
            ", ".join("%s vs %s" % (mpms[i], mpms[j]) for i, j in pairs),
            "in parallel" if parallel else "sequentially",
            apache_version(), "/".join(str(r.port) for r in runs),
            ", each in a loopback-only network namespace" if netns else ""))
        if not reaper.subreaper:
            log("regress: note: PR_SET_CHILD_SUBREAPER unavailable; "
                "httpd is stopped through its pidfile")
        for batch in ([runs] if parallel else [[r] for r in runs]):
            for r in batch:
                log("regress: [%s] starting t/TEST on 127.0.0.1:%d (log %s)" % (
                    r.mpm, r.port, os.path.relpath(r.logfile, ROOT)))
                r.launch(reaper)
            wait_runs(batch, reaper)
            for r in batch:
                r.duration_main = r.duration
                r.timed_out_main = r.timed_out
                r.progress_main = r.progress
        parsed = [analyse(r) for r in runs]
        for i, j in pairs:
            retry_regressions(runs[i], runs[j], parsed[i], parsed[j], reaper)
        for r, (results, info, known) in zip(runs, parsed):
            for kind, lines in r.server_problems():
                results["(server) " + kind] = {"status": "failed", "failed": "",
                                               "reason": "; ".join(lines)[:2000], "notok": []}
            write_results(r, results, info, known)
            r.trim_logs()
    except SetupError as e:
        log("regress: ERROR: %s" % e)
        left = reaper.stop_all()
        if left:
            log("regress: WARNING: processes still alive: %s" % left)
        return 2
    except KeyboardInterrupt as e:
        log("\nregress: interrupted (%s); stopping everything we started" % e)
        for r in runs:
            r.stop(reaper)
        left = reaper.stop_all()
        if left:
            log("regress: WARNING: processes still alive: %s" % left)
        return 130

    left = reaper.stop_all()
    if left:
        log("regress: WARNING: processes still alive after stop: %s" % left)
    return compare(runs, parsed, pairs, t0)


if __name__ == "__main__":
    sys.exit(main())
