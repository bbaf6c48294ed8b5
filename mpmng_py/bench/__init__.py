"""Benchmarks (`python3 -m mpmng_py.bench`, `python3 -m mpmng_py.bench.win`):
servers, load generators, measurements and the report.  Results, variants
and wrk's Lua script stay in bench/."""
import os

from mpmng_py import ROOT

BENCH = os.path.join(ROOT, "bench")
