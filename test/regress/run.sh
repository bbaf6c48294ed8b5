#!/bin/bash
# Run httpd's own regression suite (the Apache::Test perl-framework from
# Debian's apache2 source package) against Debian's apache2 binary with two
# MPMs and compare the results.
#
#   test/regress/run.sh MPM_A MPM_B [-- t/some/test.t ...]
#
# MPM names: event, worker, prefork (Debian's modules) or reuseport
# (out/mod_mpm_reuseport.so).  Results: out/regress/<mpm>.txt (and .log).
# Exit status is non-zero iff B has failures that A does not have.
# See test/regress/README.md for details and environment knobs.
set -euo pipefail
# The runner is the package mpmng_py.regress, run from the repository root.
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
exec python3 -m mpmng_py.regress "$@"
