#!/usr/bin/env bash
# Builds one httpd release from its source tarball with Debian's APR,
# APR-util, PCRE, OpenSSL, nghttp2 and zlib, into a prefix kept by key:
#
#   build/compat/build-httpd.sh [--modules all|check] TARBALL
#
# Prints the prefix (…/bin/httpd, …/bin/apxs, …/modules) on its last line.
# The key is the tarball's sha256, the configure arguments and RECIPE: a
# prefix whose key matches is reused, so the first run on a machine
# builds each version and later ones find it.  Every MPM and module httpd
# can build is built shared (mpm_event is that version's own reference;
# 450 s of CPU); with --modules check (make check) every MPM and the
# modules the integration suite loads (270 s), kept in the cache's check/.
# Environment: MPMNG_COMPAT_CACHE (default /var/cache/mpm-ng/httpd as
# root, ~/.cache/mpm-ng/httpd otherwise; shared by every checkout),
# MPMNG_COMPAT_JOBS.  Not under root's 0700 home: the regression suite
# runs these binaries and compiles against their headers as an
# unprivileged user.
set -euo pipefail
MODULES=all
if [ "${1:-}" = --modules ]; then MODULES=${2:-}; shift 2 || true; fi
[ $# -eq 1 ] || { echo "usage: $0 [--modules all|check] TARBALL" >&2; exit 2; }
tarball=$(readlink -f "$1")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ "$(id -u)" = 0 ]; then default_cache=/var/cache/mpm-ng/httpd
else default_cache=${XDG_CACHE_HOME:-$HOME/.cache}/mpm-ng/httpd; fi
CACHE=${MPMNG_COMPAT_CACHE:-$default_cache}
# make check's builds apart: a glob over the cache finds make compat's.
[ "$MODULES" = all ] || CACHE=$CACHE/$MODULES
JOBS=${MPMNG_COMPAT_JOBS:-2}
die() { echo "build-httpd: $*" >&2; exit 1; }

[ -f "$tarball" ] || die "no such tarball: $1"
name=$(basename "$tarball" .tar.gz)            # httpd-2.4.58
case "$name" in httpd-2.4.*) ;; *) die "$tarball: not an httpd-2.4.N tarball";; esac
# Laid out as Debian's apache2 (what the tests' configurations assume):
# unixd, log_config, logio, watchdog and version compiled in.
CONFIGURE_ARGS="--enable-so --with-apr=/usr/bin/apr-1-config
 --with-apr-util=/usr/bin/apu-1-config --enable-log-config=static
 --enable-unixd=static --enable-logio=static --enable-watchdog=static
 --enable-version=static --enable-mpms-shared=all --with-mpm=event"
# all (make compat: httpd's regression suite wants every module), or check
# (make check: what the integration suite loads; 60% of the CPU of all).
case "$MODULES" in
    all) CONFIGURE_ARGS+=" --enable-mods-shared=reallyall --enable-ssl --enable-http2
 --enable-proxy-http2" ;;
    check) CONFIGURE_ARGS+=" --enable-modules=none"
        for m in authz_core authz_host authn_core mime dir status alias headers setenvif env \
                 cgid cgi ratelimit filter deflate include ssl socache_shmcb reqtimeout dialup \
                 http2 proxy proxy_http proxy_fcgi proxy_http2 slotmem_shm heartbeat heartmonitor; do
            CONFIGURE_ARGS+=" --enable-${m//_/-}=shared"
        done ;;
    *) die "--modules $MODULES: not all or check" ;;
esac
# Optimized as distributions build it (Debian's and Red Hat's flags): left
# to configure, Debian's APR gives none, and httpd's own code cost about
# twice the CPU per request.
BUILD_CFLAGS="-g -O2 -fstack-protector-strong"
RECIPE=1    # raise when what this script does to a build changes
# A mod_ssl from before OpenSSL 3 uses ERR_GET_FUNC unguarded (2.4.37):
# it gets the macro from openssl3-compat.h (which says why).
COMPAT_CPPFLAGS=
ssl_init=$(tar xzf "$tarball" -O "$name/modules/ssl/ssl_engine_init.c" 2>/dev/null || true)
if grep -qF '(ERR_GET_FUNC(ERR_peek_last_error())' <<<"$ssl_init"; then
    COMPAT_CPPFLAGS=yes
fi
key=$( (sha256sum "$tarball" | cut -d' ' -f1
        echo "$CONFIGURE_ARGS $BUILD_CFLAGS $RECIPE"
        [ -z "$COMPAT_CPPFLAGS" ] || sha256sum "$HERE/openssl3-compat.h" | cut -d' ' -f1) \
       | sha256sum | cut -c1-16)
prefix=$CACHE/$name-$key
if [ -x "$prefix/bin/httpd" ] && [ -f "$prefix/.built" ]; then
    echo "$prefix"; exit 0
fi

mkdir -p "$CACHE"
# One build per key at a time (make check's background build, a make compat).
exec 9>"$CACHE/$name-$key.lock"
flock 9
if [ -x "$prefix/bin/httpd" ] && [ -f "$prefix/.built" ]; then
    echo "$prefix"; exit 0
fi
work=$CACHE/work-$name-$key
rm -rf "$work" "$prefix"
mkdir -p "$work"
log=$work/build.log
tar xzf "$tarball" -C "$work"
src=$work/$name
[ -x "$src/configure" ] || die "$tarball has no generated configure (see ../shared/httpd-src/README.md)"

# PCRE2 from the release whose configure knows it (2.4.53+), PCRE 1 before.
if grep -q pcre2-config "$src/configure"; then pcre=/usr/bin/pcre2-config
else pcre=/usr/bin/pcre-config; fi
[ -x "$pcre" ] || die "$pcre missing (apt-get install libpcre3-dev libpcre2-dev)"

if [ -n "$COMPAT_CPPFLAGS" ]; then
    # In the prefix: apxs hands httpd's CPPFLAGS on to modules built later.
    mkdir -p "$prefix/build"
    cp "$HERE/openssl3-compat.h" "$prefix/build/"
    COMPAT_CPPFLAGS="-include $prefix/build/openssl3-compat.h"
fi
echo "build-httpd: $name with $(basename "$pcre"), log $log" >&2
t0=$SECONDS
# shellcheck disable=SC2086 # one word per argument
if ! (cd "$src" && CPPFLAGS="$COMPAT_CPPFLAGS" CFLAGS="$BUILD_CFLAGS" \
        ./configure --prefix="$prefix" --with-pcre="$pcre" $CONFIGURE_ARGS \
        && make -j"$JOBS" && make install) >"$log" 2>&1; then
    tail -n 40 "$log" >&2
    die "$name failed to build (log $log)"
fi
# Built: record what from, drop the build tree, keep the log.
{ echo "tarball $(basename "$tarball") sha256 $(sha256sum "$tarball" | cut -d' ' -f1)"
  echo "apr $(apr-1-config --version) apr-util $(apu-1-config --version)"
  echo "pcre $($pcre --version) openssl $(openssl version | cut -d' ' -f2)"
  echo "CFLAGS $BUILD_CFLAGS"
  [ -z "$COMPAT_CPPFLAGS" ] || echo "CPPFLAGS $COMPAT_CPPFLAGS"
  echo "built in $((SECONDS - t0)) s"; } >"$prefix/build-info.txt"
cp "$log" "$prefix/build.log"
rm -rf "$work"
touch "$prefix/.built"
echo "build-httpd: $name built in $((SECONDS - t0)) s" >&2
echo "$prefix"
