#!/usr/bin/env bash
# `make deb`: Debian packages libapache2-mod-mpm-reuseport and
# libapache2-mod-fhcache into out/deb/, built with dpkg-buildpackage from a
# copy of the sources plus build/deb/debian/, then checked with lintian
# (fails on any lintian error).  Needs build/packages/deb.txt.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
out=${MPMNG_DEB_OUT:-$top/out/deb}
die() { echo "deb: $*" >&2; exit 1; }

ver=$(dpkg-parsechangelog -l "$top/build/deb/debian/changelog" -S Version)
stage=$out/mpm-ng-$ver
rm -rf "$out"
mkdir -p "$stage"
# What the package build needs: the Makefile, the module sources and their
# Debian .load/.conf files, the helpers both modules compile in (common/),
# the public headers and the docs.
cp -r "$top/Makefile" "$top/README.md" "$top/include" "$top/common" \
      "$top/docs" "$top/mpm_reuseport" "$top/mod_fhcache" "$stage/"
cp -r "$top/build/deb/debian" "$stage/debian"
mkdir -p "$out/logs"
echo "deb: building mpm-ng $ver in $stage"
if ! (cd "$stage" && dpkg-buildpackage -us -uc -b) >"$out/logs/build.log" 2>&1; then
    tail -n 40 "$out/logs/build.log" >&2
    die "dpkg-buildpackage failed (log $out/logs/build.log)"
fi
debs=("$out"/*.deb)
[ -e "${debs[0]}" ] || die "no .deb files in $out"
for d in "${debs[@]}"; do echo "deb: built $d"; done
if command -v lintian >/dev/null; then
    # lintian refuses to run as root without this
    if ! lintian --allow-root --fail-on error "${debs[@]}" >"$out/logs/lintian.log" 2>&1; then
        cat "$out/logs/lintian.log" >&2
        die "lintian reports errors"
    fi
    echo "deb: lintian: no errors ($(grep -c '^W:' "$out/logs/lintian.log" || true) warnings, log $out/logs/lintian.log)"
else
    die "lintian is not installed (build/packages/deb.txt)"
fi
