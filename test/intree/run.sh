#!/usr/bin/env bash
# `make check` stage "intree": builds httpd from Debian's apache2 source
# package with mpm-ng dropped in (build/intree/install.sh), twice:
#
#   static  ./configure --with-mpm=reuseport --enable-fhcache
#           the MPM linked into httpd; the whole integration suite runs
#           against that binary and its own modules (with --short, as
#           `make check` runs it: the serving, status, configuration, TLS,
#           restart and binary-upgrade tests; the integration stage has run
#           the whole suite against the same sources built as modules)
#   shared  ./configure --enable-mpms-shared=all --with-mpm=reuseport
#           mod_mpm_reuseport.so beside the stock MPMs; the serving tests
#           run with it, the stock event MPM from the same build starts,
#           and a server of this build is upgraded under load to Debian's
#           apache2 (another version) by mpm_reuseport's binary upgrade
#
# Configured the way Debian's debian/rules configures apache2 (same static
# modules, system APR/PCRE2, its BUILD_DATETIME/PLATFORM defines).  Work in
# out/intree/ (MPMNG_INTREE_DIR); the source tarball is kept between runs.
# Last line: "intree: N passed, N failed, N skipped".
#
#   test/intree/run.sh [--short]    build (unless built from these sources), test
#   test/intree/run.sh --build-only build only: `make check` runs this in its
#                                   background job, and its intree stage then
#                                   finds both builds (a lock orders the two)
set -uo pipefail
SHORT= BUILD_ONLY=
case "${1:-}" in
    --short) SHORT=1 ;;
    --build-only) BUILD_ONLY=1 ;;
    "") ;;
    *) echo "usage: $0 [--short | --build-only]" >&2; exit 2 ;;
esac
top=$(cd "$(dirname "$0")/../.." && pwd)
work=${MPMNG_INTREE_DIR:-$top/out/intree}
logs=$work/logs
PKG="apache2=2.4.68-1~deb12u1"
DSC="apache2_2.4.68-1~deb12u1.dsc"
ORIG="apache2_2.4.68.orig.tar.gz"
SUM="ed9a9d4500fb48bb28eaffb3ba71d06ccf86d498fa13ab9f781da010cc488498"
# What the integration suite loads, beyond the modules httpd builds by default.
MODS="authz_core authz_host mime dir status alias headers setenvif cgid cgi
      ratelimit env filter deflate include ssl socache_shmcb dialup reqtimeout"
jobs=$(nproc 2>/dev/null || echo 2)
passed=0 failed=0 skipped=0

say() { echo "intree: $*"; }
fail_setup() {
    say "$1"; [ -n "${2:-}" ] && [ -f "$2" ] && tail -n 30 "$2"
    say "$passed passed, $((failed + 1)) failed, $skipped skipped"; exit 1
}

# $1 = name, rest = configure arguments.  Builds tree-$1 into inst-$1.
build() {
    local name=$1; shift
    local tree=$work/tree-$name inst=$work/inst-$name t0=$SECONDS
    rm -rf "$inst"
    (cd "$tree" && CPPFLAGS="-DPLATFORM='\"Debian\"' -DBUILD_DATETIME='\"2026-01-01T00:00:00\"'" \
        ./configure --prefix="$inst" --enable-so --with-program-name=httpd \
        --with-apr=/usr/bin/apr-1-config --with-apr-util=/usr/bin/apu-1-config \
        --with-pcre=/usr/bin/pcre2-config --enable-log-config=static \
        --enable-mods-static="unixd logio watchdog version" "$@") \
        >"$logs/configure-$name.log" 2>&1 || fail_setup "$name: configure failed" "$logs/configure-$name.log"
    (cd "$tree" && make -j"$jobs" && make install) >"$logs/make-$name.log" 2>&1 \
        || fail_setup "$name: make failed" "$logs/make-$name.log"
    say "$name: built httpd in $((SECONDS - t0)) s -> $inst (logs $logs/*-$name.log)"
    echo -n "$name $((SECONDS - t0)) s, " >>"$work/built.times"
}

# $1 = label, rest = environment and arguments for the integration runner.
suite() {
    local label=$1; shift
    local log=$logs/suite-$label.log line
    env "$@" 2>&1 | tee "$log" | grep -E '^(FAIL|ERROR):|^[A-Za-z]*Error: |^integration:' | cut -c1-400
    line=$(grep -E '^integration: [0-9]+ passed' "$log" | tail -1)
    if [ -z "$line" ]; then
        say "$label: the integration runner printed no summary (log $log)"
        failed=$((failed + 1)); return
    fi
    read -r p f s < <(sed 's/integration: \([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped.*/\1 \2 \3/' <<<"$line")
    passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
    say "$label: $p passed, $f failed, $s skipped"
}

# One check: $1 = description, rest = command that must succeed.
check() {
    local what=$1; shift
    if "$@" >/dev/null 2>&1; then passed=$((passed + 1)); say "ok: $what"
    else failed=$((failed + 1)); say "FAILED: $what"; fi
}

# What the two builds are made of: our sources as install.sh places them,
# the glue, the package, this script (its configure lines) and the
# system's compiler and libraries they link.
source_key() {
    (cd "$top" && { echo "$PKG"; cat test/intree/run.sh
        dpkg-query -W -f '${Package} ${Version}\n' gcc libapr1-dev libaprutil1-dev \
            libpcre2-dev libssl-dev 2>/dev/null
        find mpm_reuseport mod_fhcache common include build/intree config.m4 -type f \
            | LC_ALL=C sort | xargs sha256sum; }) | sha256sum | cut -c1-16
}

build_both() {
    "$top/build/fetch-source.sh" "$work/src" "$PKG" "$ORIG" "$SUM" "$logs/fetch.log" \
        || fail_setup "cannot fetch $PKG" "$logs/fetch.log"
    rm -rf "$work/tree-static" "$work/tree-shared"
    dpkg-source -x "$work/src/$DSC" "$work/tree-static" >"$logs/unpack.log" 2>&1 \
        || fail_setup "dpkg-source -x $DSC failed" "$logs/unpack.log"
    "$top/build/intree/install.sh" "$work/tree-static" >"$logs/install.log" 2>&1 \
        || fail_setup "build/intree/install.sh failed" "$logs/install.log"
    cp -a "$work/tree-static" "$work/tree-shared"

    # httpd's smallest module set (few) and the ones the suite loads: its
    # default set would double the build's time and is not what is tested
    # here.  --enable-fhcache as the docs give it (with --enable-modules=none
    # it would mean "not built").
    build static --with-mpm=reuseport --enable-fhcache --enable-modules=few \
        --enable-mods-shared="$MODS"
    build shared --enable-mpms-shared=all --with-mpm=reuseport --enable-modules=none \
        --enable-mods-shared="authz_core authz_host mime dir status alias cgid fhcache"
}

mkdir -p "$logs"
# One build at a time (the background job's and a stage's); a build of the
# same sources is used as it is.
exec 9>"$work/.build.lock"
flock 9
key=$(source_key)
if [ "$(cat "$work/built.key" 2>/dev/null)" = "$key" ] \
        && [ -x "$work/inst-static/bin/httpd" ] && [ -x "$work/inst-shared/bin/httpd" ]; then
    say "both builds of these sources (key $key) are there: $(cat "$work/built.times")"
else
    rm -f "$work/built.key" "$work/built.times"
    build_both
    echo "built at $(date -u +%H:%M:%S) UTC" >>"$work/built.times"
    echo "$key" >"$work/built.key"
fi
flock -u 9
if [ -n "$BUILD_ONLY" ]; then
    say "0 passed, 0 failed, 0 skipped (built only)"
    exit 0
fi

S=$work/inst-static M=$work/inst-shared
check "static: httpd -V names the reuseport MPM" \
    grep -q 'Server MPM: *reuseport' <("$S/bin/httpd" -V)
check "static: the MPM is compiled in (httpd -l)" \
    grep -q 'mod_mpm_reuseport.c' <("$S/bin/httpd" -l)
check "shared: mod_mpm_reuseport.so beside the stock MPMs" \
    test -f "$M/modules/mod_mpm_reuseport.so" -a -f "$M/modules/mod_mpm_event.so" \
         -a -f "$M/modules/mod_mpm_prefork.so" -a -f "$M/modules/mod_fhcache.so"
check "shared: no MPM compiled in" \
    bash -c "! '$M/bin/httpd' -l | grep -q mod_mpm_"

# The suite finds mod_fhcache.so (and a loadable MPM) in MPMNG_OUT.
mkdir -p "$work/out-static" "$work/out-shared"
ln -sf "$S/modules/mod_fhcache.so" "$work/out-static/"
ln -sf "$M/modules/mod_fhcache.so" "$M/modules/mod_mpm_reuseport.so" "$work/out-shared/"
static_tests=()
# What a compiled-in MPM meets differently: its directives and hooks
# present before any LoadModule (configuration, serving, the status), a
# restart that reloads every module but it, and a binary upgrade that
# re-executes httpd itself.  The rest is the same code as the module's.
[ -n "$SHORT" ] && static_tests=(-k test_serving -k test_config -k test_status_numbers
                                 -k test_upgrade -k test_tls_h2.TlsServing
                                 -k test_restart.SeamlessRestart.test_ten_restarts_in_20s)
suite static -C "$top" APACHE2="$S/bin/httpd" MPMNG_SYSMODS="$S/modules" MPMNG_STATIC_MPM=reuseport \
    MPMNG_OUT="$work/out-static" python3 -m mpmng_py.integration "${static_tests[@]}"
suite shared -C "$top" APACHE2="$M/bin/httpd" MPMNG_SYSMODS="$M/modules" \
    MPMNG_OUT="$work/out-shared" python3 -m mpmng_py.integration -k test_serving
# A binary upgrade from this build to Debian's apache2, another version
# (modules of this build: the same module ABI, an older minor).
suite shared-upgrade -C "$top" APACHE2="$M/bin/httpd" MPMNG_SYSMODS="$M/modules" \
    MPMNG_OUT="$work/out-shared" MPMNG_UPGRADE_TO=/usr/sbin/apache2 \
    python3 -m mpmng_py.integration -k test_an_upgrade_to_another_httpd_build
suite shared-event -C "$top" APACHE2="$M/bin/httpd" MPMNG_SYSMODS="$M/modules" \
    MPMNG_OUT="$work/out-shared" python3 -m mpmng_py.integration --mpm event -k test_serving.StaticFiles.test_files_byte_identical

say "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
