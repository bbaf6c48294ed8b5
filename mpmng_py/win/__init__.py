"""Windows tests under wine64: httpd.exe control (winhttpd), helpers shared
by the tests (wintest) and their runner (`python3 -m mpmng_py.win`); the
tests are test/win/test_*.py."""
