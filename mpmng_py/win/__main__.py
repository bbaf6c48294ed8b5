#!/usr/bin/env python3
"""Windows tests: mpm_winnt_ng cross-built (build/win/build.sh) and run
under wine64.  Prints `win: N passed, N failed, N skipped` last.

    python3 -m mpmng_py.win [-k SUBSTRING] [-v]

(from the repository root).  The tests are test/win/test_*.py.
"""
import argparse
import os
import resource
import sys
import unittest

from mpmng_py import ROOT

TESTDIR = os.path.join(ROOT, "test", "win")


def main():
    ap = argparse.ArgumentParser(prog="python3 -m mpmng_py.win")
    ap.add_argument("-k", action="append", default=[])
    ap.add_argument("-v", action="store_true")
    args = ap.parse_args()
    # wineserver, started by the first test, holds every socket of the
    # server: let it have as many descriptors as the machine allows.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    suite = unittest.defaultTestLoader.discover(TESTDIR, pattern="test_*.py")

    def flat(s):
        for t in s:
            if isinstance(t, unittest.TestSuite):
                yield from flat(t)
            else:
                yield t
    tests = [t for t in flat(suite) if not args.k or any(k in t.id() for k in args.k)]
    r = unittest.TextTestRunner(verbosity=2 if args.v else 1).run(
        unittest.TestSuite(tests))
    bad = len(r.failures) + len(r.errors)
    skipped = len(r.skipped)
    print("win: %d passed, %d failed, %d skipped" % (
        r.testsRun - bad - skipped, bad, skipped))
    sys.exit(1 if bad or not r.testsRun else 0)


if __name__ == "__main__":
    main()
