#!/usr/bin/env python3
"""Every line of the project's Python (mpmng_py/, test/, bench/) is at most
100 columns, so the code reads without side-scrolling in a review.  Prints
each longer line as path:line: columns; exit status 1 if any.

    python3 test/build/check_line_length.py [--max N] [DIR...]
"""
import argparse
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DIRS = ["mpmng_py", "test", "bench"]
# Not ours: bench results are generated, caches hold third-party trees.
SKIP = {"__pycache__", "results", "cache"}


def python_files(top):
    for d, subdirs, files in os.walk(top):
        subdirs[:] = sorted(s for s in subdirs if s not in SKIP and not s.startswith("."))
        for name in sorted(files):
            if name.endswith(".py"):
                yield os.path.join(d, name)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--max", type=int, default=100)
    ap.add_argument("dirs", nargs="*", default=DIRS, help="relative to the repository root")
    args = ap.parse_args()
    files = long_lines = 0
    for top in args.dirs:
        for path in python_files(os.path.join(ROOT, top)):
            files += 1
            with open(path, encoding="utf-8") as f:
                for n, line in enumerate(f, 1):
                    cols = len(line.rstrip("\r\n"))
                    if cols > args.max:
                        long_lines += 1
                        print("%s:%d: %d columns" % (os.path.relpath(path, ROOT), n, cols))
    print("line-length: %d Python files, %d lines over %d columns"
          % (files, long_lines, args.max))
    return 1 if long_lines or not files else 0


if __name__ == "__main__":
    sys.exit(main())
