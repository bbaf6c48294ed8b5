"""`python3 -m mpmng_py.soak [--seconds N] ...`: the soak (soak.py)."""
import sys

from mpmng_py.soak.soak import main

sys.exit(main(sys.argv[1:]))
