"""`python3 -m mpmng_py.regress MPM_A MPM_B [...]` (test/regress/run.sh):
httpd's perl-framework with two MPMs, compared (regress.py)."""
import sys

from mpmng_py.regress.regress import main

sys.exit(main())
