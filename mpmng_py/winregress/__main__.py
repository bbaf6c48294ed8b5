"""`python3 -m mpmng_py.winregress [stock ng] [--with-fhcache] [--subset mpm|all]
[-- t/x.t ...]`: httpd's perl-framework against httpd.exe under wine64."""
import sys

from mpmng_py.winregress.main import main

sys.exit(main())
