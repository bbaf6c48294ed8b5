#!/usr/bin/env bash
# Drops mpm-ng into an httpd 2.4 source tree (e.g. Debian's: apt-get source
# apache2) and regenerates its configure script:
#
#   build/intree/install.sh /path/to/httpd-2.4.x
#   cd /path/to/httpd-2.4.x
#   ./configure --with-mpm=reuseport --enable-fhcache ...   # MPM linked in
#   ./configure --enable-mpms-shared=all --enable-fhcache ... # MPM as a .so
#
# It puts mpm_reuseport in server/mpm/reuseport/ (with ../../config.m4 and
# build/intree/mpm_reuseport/) and mod_fhcache in modules/fhcache/, each
# with its own copy of the shared helpers (common/*.c, include/*.h), then runs
# ./buildconf against the system's APR (apr-1-config) unless the tree has
# srclib/apr.  Needs autoconf, automake, libtool, python3 and APR's
# development files.  Run again after updating mpm-ng.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
here=$top/build/intree
die() { echo "intree: $*" >&2; exit 1; }

[ $# -eq 1 ] || die "usage: $0 HTTPD_SOURCE_DIR"
src=$(cd "$1" && pwd) || die "$1: no such directory"
[ -f "$src/include/ap_mmn.h" ] && [ -d "$src/server/mpm" ] && [ -x "$src/buildconf" ] \
    || die "$src does not look like an httpd source tree (no include/ap_mmn.h, server/mpm or buildconf)"
grep -q '#define AP_SERVER_MAJORVERSION_NUMBER 2' "$src/include/ap_release.h" \
    && grep -q '#define AP_SERVER_MINORVERSION_NUMBER 4' "$src/include/ap_release.h" \
    || die "$src is not httpd 2.4"

# $1 = our source dir, $2 = destination in the tree, $3.. = glue files.
# The shared helpers go beside each module's sources: the module's object
# list names them (mpmng_common_lo in its m4 file).
place() {
    local from=$top/$1 to=$src/$2
    shift 2
    rm -rf "$to"
    mkdir -p "$to"
    cp "$from"/*.c "$from"/*.h "$top"/common/*.c "$top"/include/*.h "$to"/
    cp "$@" "$to"/
    echo "intree: $(ls "$to"/*.c | wc -l) sources and glue in $to"
}
place mpm_reuseport server/mpm/reuseport \
    "$top/config.m4" "$here/mpm_reuseport/config3.m4" "$here/mpm_reuseport/Makefile.in"
place mod_fhcache modules/fhcache \
    "$here/mod_fhcache/config.m4" "$here/mod_fhcache/Makefile.in"

cd "$src"
if [ -f srclib/apr/build/apr_common.m4 ]; then
    args=()
else
    apr=$(command -v apr-1-config) || die "no apr-1-config: install libapr1-dev (or put APR's source in srclib/apr)"
    apu=$(command -v apu-1-config) || die "no apu-1-config: install libaprutil1-dev"
    args=(--with-apr="$apr" --with-apr-util="$apu")
fi
# Runs ./buildconf; 0 once configure knows our MPM.
buildconf() {
    local log
    log=$(mktemp)
    if ! ./buildconf "${args[@]}" >"$log" 2>&1; then
        cat "$log" >&2
        rm -f "$log"
        die "./buildconf failed in $src"
    fi
    grep -q 'reuseport' configure && { rm -f "$log"; return 0; }
    cat "$log" >&2
    rm -f "$log"
    return 1
}
# Once (CI, 2026-11-25) a buildconf run left a configure without our MPM and
# the next run in the same tree had it: then autoconf's cache goes and it
# runs once more, its log above.
if ! buildconf; then
    echo "intree: configure does not know the reuseport MPM; buildconf again" \
         "without autom4te.cache" >&2
    rm -rf autom4te.cache
    buildconf || die "configure does not know the reuseport MPM after buildconf"
fi
echo "intree: configure regenerated; now: ./configure --with-mpm=reuseport --enable-fhcache"
