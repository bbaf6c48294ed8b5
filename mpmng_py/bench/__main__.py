"""`python3 -m mpmng_py.bench [...]`: the benchmark suite (run.py)."""
import sys

from mpmng_py.bench.run import main

sys.exit(main())
