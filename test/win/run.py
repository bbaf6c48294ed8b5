#!/usr/bin/env python3
"""The Windows tests' old entry point, kept for its callers: runs
`python3 -m mpmng_py.win ARGS` from the repository root, where the package
is importable without sys.path edits."""
import os
import sys

os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
os.execv(sys.executable, [sys.executable, "-m", "mpmng_py.win"] + sys.argv[1:])
