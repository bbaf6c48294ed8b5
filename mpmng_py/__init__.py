"""mpm-ng's Python: the helpers shared by the tests (test/) and the
benchmarks (bench/), and the commands that run them.

Everything is imported from the repository root as one package, the same
way from every caller, with no sys.path edits:

    from mpmng_py import privhttpd
    from mpmng_py.win.winhttpd import WinHttpd, available

Commands run as modules from the repository root (the current directory is
then on sys.path), e.g. `python3 -m mpmng_py.integration -k NAME`.  Test
cases stay in test/integration/ and test/win/; their runners find them there.
Not `test` as the package: that name would shadow Python's own `test`.
"""
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
