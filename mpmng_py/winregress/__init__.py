"""httpd's own regression suite (perl-framework) against the cross-built
httpd.exe under wine64: stock mpm_winnt vs mpm_winnt_ng, each optionally
with mod_fhcache (`python3 -m mpmng_py.winregress`, test/win/regress/)."""
