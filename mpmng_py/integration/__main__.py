#!/usr/bin/env python3
"""Run the integration tests (test/integration/test_*.py, unittest).

    python3 -m mpmng_py.integration [-k PATTERN]... [-v] [--mpm NAME] [--no-netns]
                                    [--repeat N] [--hogs K] [--stress]

(from the repository root).

-k PATTERN   run only tests whose id (module.Class.method) contains PATTERN
             (shell wildcards allowed); may be repeated.
--mpm NAME   MPM to test: reuseport (default; out/mod_mpm_reuseport.so),
             or a stock one (worker, event) to check the suite itself.
             Same as MPMNG_TEST_MPM=NAME.  Reuseport-only tests are skipped
             for stock MPMs.
--repeat N   run the chosen tests N times (rounds) and report each
             test's failure rate at the end.
--hogs K     run K busy-loop processes beside the tests (a loaded machine).
--stress     choose the timing-sensitive tests (mpmng_py/integration/
             stress.py); with -k too, both.  `make check-stress` runs them
             50 times under 2 hogs.
--no-netns   run in the current network namespace.  By default, when run
             as root, the suite re-executes itself in a private network
             namespace (unshare -n, loopback only), so concurrent servers and
             benchmarks on the machine neither collide with its ports nor
             disturb its TCP counters.  MPMNG_TEST_NETNS=0 does the same.

The last line printed is `integration: N passed, N failed, N skipped`; the
exit status is non-zero on any failure or error, or if no test ran.
Environment: MPMNG_LD_PRELOAD (sanitizer builds), MPMNG_KEEP=1 (keep the
private server directories), MPMNG_TEST_TIMEOUT (per-test watchdog, s).
"""
import argparse
import os
import shutil
import subprocess
import sys
import time
import unittest

from mpmng_py import ROOT

TESTDIR = os.path.join(ROOT, "test", "integration")
NETNS_MARK = "MPMNG_IN_PRIVATE_NETNS"


def enter_private_netns(argv):
    """Re-exec in a new network namespace with lo up; returns only if that
    is not possible (then we run where we are)."""
    if os.environ.get(NETNS_MARK) or os.environ.get("MPMNG_TEST_NETNS") == "0":
        return
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("ip"):
        return
    probe = subprocess.run(["unshare", "--net", "ip", "link", "set", "lo", "up"],
                           capture_output=True)
    if probe.returncode != 0:
        print("note: cannot create a network namespace (%s); running in the "
              "current one" % probe.stderr.decode().strip(), file=sys.stderr)
        return
    env = dict(os.environ, **{NETNS_MARK: "1"})
    cmd = ["unshare", "--net", "--", "sh", "-c", 'ip link set lo up && exec "$@"',
           "sh", sys.executable, "-m", "mpmng_py.integration"] + argv
    sys.stdout.flush()
    os.execvpe("unshare", cmd, env)


class CountingResult(unittest.TextTestResult):
    """Counts each test once (a test with failing subtests is one failure)
    and prints one line per test with its time."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.outcomes = {}
        self._t0 = {}

    def startTest(self, test):
        self._t0[test.id()] = time.monotonic()
        self.stream.write("%s ... " % test.id())
        self.stream.flush()
        unittest.TestResult.startTest(self, test)

    def _set(self, test, outcome, note=""):
        tid = test.id()
        if self.outcomes.get(tid) == "FAIL":
            return
        self.outcomes[tid] = outcome

    def addSuccess(self, test):
        unittest.TestResult.addSuccess(self, test)
        self._set(test, self.outcomes.get(test.id(), "ok"))

    def addFailure(self, test, err):
        unittest.TestResult.addFailure(self, test, err)
        self._set(test, "FAIL")

    def addError(self, test, err):
        unittest.TestResult.addError(self, test, err)
        self._set(test, "FAIL")

    def addSkip(self, test, reason):
        unittest.TestResult.addSkip(self, test, reason)
        if isinstance(test, unittest.case._SubTest):
            # Its own line: the test's line (after it) says only "ok".
            self.stream.write("\n%s ... skip: %s\n" % (test.id(), reason))
            return
        self._set(test, "skip")
        self.outcomes[test.id()] = "skip: " + reason

    def addSubTest(self, test, subtest, err):
        unittest.TestResult.addSubTest(self, test, subtest, err)
        if err is not None:
            self.outcomes[test.id()] = "FAIL"

    def addExpectedFailure(self, test, err):
        unittest.TestResult.addExpectedFailure(self, test, err)
        self._set(test, "ok")

    def addUnexpectedSuccess(self, test):
        unittest.TestResult.addUnexpectedSuccess(self, test)
        self._set(test, "FAIL")

    def stopTest(self, test):
        unittest.TestResult.stopTest(self, test)
        tid = test.id()
        outcome = self.outcomes.setdefault(tid, "ok")
        self.stream.write("%s (%.1fs)\n" % (outcome, time.monotonic() - self._t0.get(tid, 0)))
        self.stream.flush()

    def printErrors(self):
        self.stream.write("\n")
        super().printErrors()

    def counts(self):
        vals = list(self.outcomes.values())
        failed = sum(1 for v in vals if v == "FAIL")
        skipped = sum(1 for v in vals if v.startswith("skip"))
        return len(vals) - failed - skipped, failed, skipped


class CountingRunner(unittest.TextTestRunner):
    resultclass = CountingResult


def main():
    ap = argparse.ArgumentParser(prog="python3 -m mpmng_py.integration",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("-k", action="append", default=[], metavar="PATTERN")
    ap.add_argument("-v", action="store_true", help="verbose unittest output")
    ap.add_argument("--mpm", help="MPM under test (default: reuseport)")
    ap.add_argument("--no-netns", action="store_true")
    ap.add_argument("--repeat", type=int, default=1, metavar="N")
    ap.add_argument("--hogs", type=int, default=0, metavar="K")
    ap.add_argument("--stress", action="store_true")
    args = ap.parse_args()

    if args.mpm:
        os.environ["MPMNG_TEST_MPM"] = args.mpm
    if not args.no_netns:
        enter_private_netns(sys.argv[1:])

    # After the re-exec above: the helpers read MPMNG_TEST_MPM when imported.
    from mpmng_py import privhttpd
    from mpmng_py.integration import common

    # The servers' parents become ours: how one ended is known, not guessed.
    privhttpd.reap_servers_here()
    mpm_path = privhttpd.MPMS.get(common.MPM, (None, "?"))[1]
    print("integration: MPM %s (%s), httpd %s (%s), %d CPUs, %s network namespace" % (
        common.MPM, mpm_path, ".".join(map(str, privhttpd.httpd_version())),
        privhttpd.APACHE2, common.NCPU,
        "private" if os.environ.get(NETNS_MARK) else "current"), flush=True)
    if not os.path.exists(mpm_path):
        print("warning: %s does not exist (run make first); every test that "
              "starts a server will fail" % mpm_path, flush=True)

    patterns = list(args.k)
    if args.stress:
        from mpmng_py.integration import stress
        patterns += stress.TESTS
    t0 = time.monotonic()
    if args.repeat > 1 or args.hogs:
        failed, ran = run_rounds(patterns, args)
        passed = ran - failed
        skipped = 0
    else:
        passed, failed, skipped = run_once(patterns, args)
    print("wall time %.0fs" % (time.monotonic() - t0))
    print("integration: %d passed, %d failed, %d skipped" % (passed, failed, skipped))
    sys.stdout.flush()
    return 1 if failed or passed + failed == 0 else 0


def load(patterns):
    loader = unittest.TestLoader()
    if patterns:
        loader.testNamePatterns = [p if "*" in p else "*%s*" % p for p in patterns]
    return loader.discover(TESTDIR, pattern="test_*.py", top_level_dir=TESTDIR)


def run_once(patterns, args, stream=sys.stdout):
    """One run of the chosen tests: (passed, failed, skipped), and the
    result (its outcomes per test id) as the runner's last result."""
    runner = CountingRunner(stream=stream, verbosity=2 if args.v else 0)
    result = runner.run(load(patterns))
    run_once.result = result
    passed, failed, skipped = result.counts()
    # Import errors of a test module show up as errors without an outcome.
    failed += sum(1 for t, _ in result.errors if t.id() not in result.outcomes)
    return passed, failed, skipped


def run_rounds(patterns, args):
    """--repeat rounds under --hogs busy loops: (failed runs, runs)."""
    from mpmng_py.cpuhogs import CpuHogs
    from mpmng_py.integration import stress

    stats = {}
    with CpuHogs(args.hogs) as hogs:
        for n in range(args.repeat):
            print("---- round %d of %d (%d cpu hog(s)) ----" % (n + 1, args.repeat, args.hogs),
                  flush=True)
            run_once(patterns, args)
            for tid, outcome in run_once.result.outcomes.items():
                stats.setdefault(tid, []).append(outcome)
            if args.hogs:
                elapsed = hogs.check()
                print("hogs: %.0f CPU seconds in %.0f s" % (hogs.usage(), elapsed), flush=True)
    failed = stress.report(stats, args.repeat, args.hogs, sys.stdout)
    ran = sum(len([o for o in v if not o.startswith("skip")]) for v in stats.values())
    return failed, ran


if __name__ == "__main__":
    sys.exit(main())
