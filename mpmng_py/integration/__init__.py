"""Integration tests' helpers (common, fhcache_mpms) and their runner
(`python3 -m mpmng_py.integration`); the tests are test/integration/test_*.py."""
