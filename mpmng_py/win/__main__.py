#!/usr/bin/env python3
"""Windows tests: mpm_winnt_ng cross-built (build/win/build.sh) and run
under wine64.  Prints each test's time (slowest first, the first 15) and
`win: N passed, N failed, N skipped` last.

    python3 -m mpmng_py.win [--short] [-k SUBSTRING] [-v]

(from the repository root).  The tests are test/win/test_*.py.  `--short`
(what `make check` runs) skips the tests marked `@wintest.long_test`: the
ones that repeat, at length, what a shorter test already covers; `make
win-check` runs them all.
"""
import argparse
import os
import resource
import signal
import sys
import time
import unittest

from mpmng_py import ROOT
from mpmng_py.regress.procs import on_signal
from mpmng_py.win import wintest
from mpmng_py.win.wineprefix import PersistentWineserver

TESTDIR = os.path.join(ROOT, "test", "win")


class TimedResult(unittest.TextTestResult):
    """Records each test's wall time (the CI budget is watched by them)."""

    def startTest(self, test):
        self._t0 = time.monotonic()
        super().startTest(test)

    def stopTest(self, test):
        super().stopTest(test)
        self.times.append((time.monotonic() - self._t0, test.id()))


def flat(suite):
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from flat(t)
        else:
            yield t


def main():
    ap = argparse.ArgumentParser(prog="python3 -m mpmng_py.win")
    ap.add_argument("-k", action="append", default=[])
    ap.add_argument("-v", action="store_true")
    ap.add_argument("--short", action="store_true",
                    help="skip the tests marked long (make check)")
    args = ap.parse_args()
    if args.short:
        os.environ[wintest.SHORT_ENV] = "1"
    # wineserver (started below) holds every socket of the server: let it
    # have as many descriptors as the machine allows.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    # Stopped (make check's EXIT trap ends its Windows lane so), the tests'
    # finally blocks and the wineserver's exit still run.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    suite = unittest.defaultTestLoader.discover(TESTDIR, pattern="test_*.py")
    tests = [t for t in flat(suite) if not args.k or any(k in t.id() for k in args.k)]
    TimedResult.times = []
    with PersistentWineserver():
        r = unittest.TextTestRunner(verbosity=2 if args.v else 1,
                                    resultclass=TimedResult).run(unittest.TestSuite(tests))
    print("win: slowest tests: " + ", ".join(
        "%s %.0fs" % (name.split(".", 1)[-1], t)
        for t, name in sorted(TimedResult.times, reverse=True)[:15]))
    bad = len(r.failures) + len(r.errors)
    skipped = len(r.skipped)
    print("win: %d passed, %d failed, %d skipped" % (
        r.testsRun - bad - skipped, bad, skipped))
    sys.exit(1 if bad or not r.testsRun else 0)


if __name__ == "__main__":
    main()
