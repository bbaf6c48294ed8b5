"""httpd's own regression suite with two MPMs, compared
(`python3 -m mpmng_py.regress`, test/regress/run.sh)."""
