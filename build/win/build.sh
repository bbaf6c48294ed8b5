#!/usr/bin/env bash
# Cross-build Apache httpd 2.4.68 for Windows x64 (mingw-w64 + CMake) on Debian 12.
#
#   build/win/build.sh [libs|stock|ng|fhcache|all]     (default: all)
#
# libs:    the libraries httpd and its modules use, one recipe each in
#          build/win/libs/ (APR, APR-util, expat, PCRE2, zlib, OpenSSL, nghttp2,
#          brotli, libxml2, Lua, Jansson, curl), from Debian's source packages
# stock:   httpd with the stock WinNT MPM and every module that builds (httpd.sh)
# ng:      the same with mpm_winnt_ng (every mpm_winnt_ng/*.c and common/*.c)
# fhcache: mod_fhcache.so from every mod_fhcache/*.c and common/*.c
# Results (consumers use these stable paths; each is a symlink to a keyed prefix):
#   build/win/out/stock   build/win/out/ng   build/win/out/fhcache/mod_fhcache.so
#     bin/      httpd.exe, libhttpd.dll, the support programs, openssl.exe, library DLLs
#     modules/  mod_*.so
#     conf/     the configuration httpd's build generates (httpd.conf, extra/, mime.types)
#     include/, lib/  headers and import libraries, for modules built outside httpd
#     htdocs/, icons/, error/, cgi-bin/, logs/
#     build-info.txt  what was built from what
# Every part is keyed on a hash of its inputs; a part whose key matches is not rebuilt.
# Each library is keyed on its recipe, source, patch, toolchain and the keys of the
# libraries it uses, so changing one recipe rebuilds it and what depends on it only.
#
# Environment:
#   MPMNG_WIN_SRC      directory of Debian source packages (default
#                      ~/.cache/mpm-ng/win-src; missing tarballs are fetched with
#                      apt-get source --download-only)
#   MPMNG_WIN_LIBS     where built libraries are kept by key (default
#                      ~/.cache/mpm-ng/win-libs: every checkout on the machine shares them,
#                      so a new clone builds only httpd and our parts)
#   MPMNG_WIN_MPM_DIR  MPM sources for "ng" (default: <repo>/mpm_winnt_ng)
#   MPMNG_WIN_JOBS     parallel jobs (default 2)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
USER_CACHE=${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/mpm-ng
SRC=${MPMNG_WIN_SRC:-$USER_CACHE/win-src}
MPM_DIR=${MPMNG_WIN_MPM_DIR:-$REPO/mpm_winnt_ng}
FHC_DIR=$REPO/mod_fhcache
COMMON_DIR=$REPO/common      # helpers every module compiles in
COMMON_INC=$REPO/include     # their headers
JOBS=${MPMNG_WIN_JOBS:-2}
CACHE=$HERE/cache
LIBS=${MPMNG_WIN_LIBS:-$USER_CACHE/win-libs}
OUT=$HERE/out
LOGS=$OUT/logs
WORK=$CACHE/work
LOG=/dev/null
export WINEPREFIX=$CACHE/wineprefix WINEDEBUG=-all

# The libraries, each after those it uses.
LIB_ORDER="zlib openssl expat apr apr-util pcre2 nghttp2 brotli libxml2 lua jansson curl"
HTTPD_SOURCE="apache2=2.4.68-1~deb12u1 apache2_2.4.68.orig.tar.gz ed9a9d4500fb48bb28eaffb3ba71d06ccf86d498fa13ab9f781da010cc488498"

. "$HERE/recipe.sh"
. "$HERE/httpd.sh"

usage() { echo "usage: $0 [libs|stock|ng|fhcache|all]" >&2; exit 2; }

case "${1:-all}" in
  libs)    PARTS=() ;;
  stock)   PARTS=(stock) ;;
  ng)      PARTS=(stock ng) ;;             # ng is stock's tree with its own MPM
  fhcache) PARTS=(stock ng fhcache) ;;     # the module builds against ng
  all)     PARTS=(stock ng fhcache) ;;
  *)       usage ;;
esac

now() { date +%s; }
hash_files() { sha256sum "$@" | awk '{print $1}' | sha256sum | cut -c1-16; }
hash_text() { sha256sum | cut -c1-16; }

ensure_tools() {
  local p missing=()
  for p in x86_64-w64-mingw32-gcc cmake make perl patch; do command -v "$p" >/dev/null || missing+=("$p"); done
  [ -x "$WINE" ] || missing+=("$WINE")
  [ ${#missing[@]} -eq 0 ] || die "missing: ${missing[*]} (apt-get install gcc-mingw-w64-x86-64 g++-mingw-w64-x86-64 wine64 cmake dpkg-dev)"
}

# gen_test_char runs under wine during the httpd build.  A first wineboot
# can fail for reasons outside this build (a wineserver left by something
# else, a loaded machine timing it out): it is logged, and tried once more
# on a new prefix with no wineserver running before the build gives up.
ensure_wineprefix() {
  local log=$LOGS/wineboot.log try
  [ -f "$WINEPREFIX/system.reg" ] && return 0
  mkdir -p "$LOGS"; : > "$log"
  for try in 1 2; do
    rm -rf "$WINEPREFIX"; mkdir -p "$WINEPREFIX"
    echo "--- wineboot -i, try $try" >> "$log"
    # The registry files are written when the wineserver exits: wait for it.
    if "$WINE" wineboot -i >> "$log" 2>&1 && "$WINESERVER" -w >> "$log" 2>&1 \
        && [ -f "$WINEPREFIX/system.reg" ]; then
      return 0
    fi
    echo "--- exit, prefix: $(ls "$WINEPREFIX" 2>&1 | tr '\n' ' ')" >> "$log"
    "$WINESERVER" -k >> "$log" 2>&1 || true
  done
  { echo "--- free space"; df -h "$CACHE" /tmp; } >> "$log" 2>&1
  tail -n 30 "$log" >&2
  die "wineboot -i failed twice for $WINEPREFIX (log: $log)"
}

fetch() {  # "pkg=version tarball sha256": the tarball's path on stdout
  local pkg tarball sum
  read -r pkg tarball sum <<<"$1"
  "$HERE/../fetch-source.sh" "$SRC" "$pkg" "$tarball" "$sum" "$LOGS/fetch.log" >&2 \
    || die "cannot fetch $pkg"
  echo "$SRC/$tarball"
}

publish_link() {  # $1 = keyed dir name in $OUT, $2 = link name; drops older keys
  local name=$1 link=$2 d
  ln -sfn "$name" "$OUT/.$link.new" && mv -T "$OUT/.$link.new" "$OUT/$link"
  for d in "$OUT/$link"-*; do
    [ "$d" = "$OUT/$name" ] || [ ! -d "$d" ] || [ -L "$d" ] || rm -rf "$d"
  done
}

toolchain_key() {
  { hash_files "$HERE/recipe.sh" "$TOOLCHAIN" "$NOPREFIX"; x86_64-w64-mingw32-gcc -dumpversion; } \
    | hash_text
}

# ---- libraries ----------------------------------------------------------------------------
declare -A LIB_KEY LIB_DIR

recipe_var() {  # $1 = library, $2 = variable: its value in the recipe
  ( SOURCE= PATCH= DEPENDS=; . "$HERE/libs/$1.sh"; eval "echo \"\$$2\"" )
}

lib_key() {  # $1 = library (the libraries it uses have their keys already)
  local lib=$1 dep patch
  patch=$(recipe_var "$lib" PATCH)
  { echo "$TOOLCHAIN_KEY"
    hash_files "$HERE/libs/$lib.sh" ${patch:+"$PATCHES/$patch"}
    for dep in $(recipe_var "$lib" DEPENDS); do
      [ -n "${LIB_KEY[$dep]:-}" ] || die "libs/$lib.sh: $dep must come before $lib in LIB_ORDER"
      echo "$dep ${LIB_KEY[$dep]}"
    done; } | hash_text
}

build_lib() {  # $1 = library; builds it into $LIBS/<lib>-<key> unless it is there
  local lib=$1 key=${LIB_KEY[$1]} w tmp t0 tarball dep
  [ -f "$LIBS/$lib-$key/.key" ] && return 0
  ensure_tools
  w=$WORK/lib-$lib; tmp=$LIBS/.$lib-$key.tmp
  LOG=$LOGS/lib-$lib.log; : > "$LOG"
  t0=$(now)
  tarball=$(fetch "$(recipe_var "$lib" SOURCE)")
  rm -rf "$w" "$tmp"; mkdir -p "$w"
  unpack "$tarball" "$w/src"
  [ -z "$(recipe_var "$lib" PATCH)" ] || apply_patch "$w/src" "$PATCHES/$(recipe_var "$lib" PATCH)"
  (
    SOURCE= PATCH= DEPENDS=
    . "$HERE/libs/$lib.sh"
    for dep in $DEPENDS; do eval "DEP_${dep//-/_}=\$LIBS/\$dep-\${LIB_KEY[\$dep]}"; done
    recipe "$w/src" "$w/build" "$tmp"
  )
  # its licence, for the distribution
  mkdir -p "$tmp/licenses/$lib"
  find "$w/src" -maxdepth 1 -type f \( -iname 'LICEN[CS]E*' -o -iname 'COPYING*' -o -iname 'NOTICE*' \
    -o -name 'Copyright' \) \
    -exec cp -p {} "$tmp/licenses/$lib/" \;
  [ -n "$(ls "$tmp/licenses/$lib")" ] || die "$lib: no licence file found in its source"
  echo "$key" > "$tmp/.key"
  rm -rf "${LIBS:?}/$lib-$key"; mv "$tmp" "$LIBS/$lib-$key"
  rm -rf "$w"
  echo "lib $lib: built in $(( $(now) - t0 ))s (key $key, log $LOG)"
}

# One prefix with every library (hard links), for httpd's build.
merge_libs() {  # $1 = destination
  local lib tmp=$1.tmp
  rm -rf "$tmp"; mkdir -p "$tmp"
  for lib in $LIB_ORDER; do
    # hard links where $LIBS is on the same file system, copies elsewhere
    cp -al "$LIBS/$lib-${LIB_KEY[$lib]}/." "$tmp/" 2>/dev/null \
      || cp -a "$LIBS/$lib-${LIB_KEY[$lib]}/." "$tmp/"
  done
  rm -f "$tmp/.key"
  mv "$tmp" "$1"
}

# ---- mod_fhcache ---------------------------------------------------------------------------
# Compiled directly (no CMake): a module is a DLL named .so importing libhttpd, APR, APR-util.
build_fhcache() {  # $1 = destination (new)
  local d=$1 ng=$OUT/ng f objs=() obj=$WORK/b-fhcache
  rm -rf "$obj"; mkdir -p "$d" "$obj"
  for f in $(find "$FHC_DIR" -maxdepth 1 -name '*.c' | LC_ALL=C sort) \
           $(find "$COMMON_DIR" -maxdepth 1 -name '*.c' | LC_ALL=C sort); do
    run_logged x86_64-w64-mingw32-gcc -O2 -g -Wall -Werror -std=gnu11 \
      -DWIN32 -D_WINDOWS -I"$ng/include" -I"$FHC_DIR" -I"$COMMON_INC" \
      -c "$f" -o "$obj/$(basename "${f%.c}").o"
    objs+=("$obj/$(basename "${f%.c}").o")
  done
  run_logged x86_64-w64-mingw32-gcc -shared -o "$d/mod_fhcache.so" "${objs[@]}" \
    "$ng/lib/libhttpd.dll.a" "$ng/lib/libaprutil-1.dll.a" "$ng/lib/libapr-1.dll.a" -lkernel32
}

# ---- keys of the parts -----------------------------------------------------------------------
sources_key() {  # $1 = directory, rest = extra dirs: names and hashes of their .c/.h files
  local f
  for f in $( { for d in "$@"; do find "$d" -maxdepth 1 \( -name '*.c' -o -name '*.h' \); done; } \
              | LC_ALL=C sort); do
    printf '%s %s\n' "$(basename "$f")" "$(sha256sum < "$f" | cut -c1-64)"
  done
}

part_key() {  # $1 = stock|ng|fhcache
  case "$1" in
    stock)   { echo "$DEPS_KEY"; hash_files "$HERE/httpd.sh" "$PATCHES/httpd-2.4.68.patch"
               echo "$HTTPD_SOURCE build-info $BUILD_INFO_FORMAT"; } | hash_text ;;
    ng)      { echo "${KEYS[stock]}"; sources_key "$MPM_DIR" "$COMMON_DIR" "$COMMON_INC"; } \
               | hash_text ;;
    fhcache) { echo "${KEYS[ng]}"; sources_key "$FHC_DIR" "$COMMON_DIR" "$COMMON_INC"; } \
               | hash_text ;;
  esac
}

check_mpm_dir() {
  [ -d "$MPM_DIR" ] || die "ng: MPM directory $MPM_DIR does not exist"
  [ -n "$(find "$MPM_DIR" -maxdepth 1 -name '*.c')" ] \
    || die "ng: no *.c files in $MPM_DIR (nothing to build the ng MPM from)"
}

httpd_tree() {  # the patched httpd source, once per stock key
  SRC_HTTPD=$WORK/httpd-${KEYS[stock]}
  [ -f "$SRC_HTTPD/.patched" ] && return 0
  # a new tree: the build dirs' CMake caches name the old one
  rm -rf "$WORK"/httpd-* "$WORK/b-stock" "$WORK/b-ng"
  unpack "$(fetch "$HTTPD_SOURCE")" "$SRC_HTTPD"
  apply_patch "$SRC_HTTPD" "$PATCHES/httpd-2.4.68.patch"
  touch "$SRC_HTTPD/.patched"
}

# What was built from what: the inputs by name and hash (Debian source
# packages, the checkout's files), never this machine's paths.  dist.sh
# finds httpd's tarball by its name in $SRC.
BUILD_INFO_FORMAT=2
write_build_info() {  # $1 = prefix, $2 = part, $3 = key, $4 = MPM sources (ng)
  local lib
  { echo "part=$2"; echo "key=$3"; echo "deps_key=$DEPS_KEY"
    echo "mpm_module=mpm_winnt$([ "$2" = ng ] && echo _ng)_module"
    echo "httpd_source=$(awk '{print $1}' <<<"$HTTPD_SOURCE")"
    echo "httpd_tarball=$(awk '{print $2 " sha256 " $3}' <<<"$HTTPD_SOURCE")"
    [ -z "$4" ] || echo "mpm_sources=${4//$REPO\//}"
    echo "modules=$(built_modules "$1")"
    for lib in $LIB_ORDER; do echo "lib_$lib=$(recipe_var "$lib" SOURCE | awk '{print $1}')"; done
  } > "$1/build-info.txt"
}

build_part() {  # $1 = stock|ng|fhcache
  local p=$1 k=${KEYS[$1]} d=$OUT/.$1-${KEYS[$1]}.tmp t0 srcs=""
  t0=$(now)
  ensure_tools; ensure_wineprefix
  LOG=$LOGS/$p.log; : > "$LOG"
  rm -rf "$d"
  case "$p" in
    stock)   httpd_tree; build_stock "$WORK/b-stock" "$d"
             write_build_info "$d" stock "$k" "" ;;
    ng)      check_mpm_dir; httpd_tree
             srcs=$(build_ng "$WORK/b-ng" "$d" "$OUT/stock-${KEYS[stock]}")
             write_build_info "$d" ng "$k" "$srcs" ;;
    fhcache) build_fhcache "$d" ;;
  esac
  echo "$k" > "$d/.key"
  rm -rf "${OUT:?}/$p-$k"; mv "$d" "$OUT/$p-$k"
  publish_link "$p-$k" "$p"
  echo "$p: built in $(( $(now) - t0 ))s -> $OUT/$p (key $k, log $LOG)"
}

# ---- main -----------------------------------------------------------------------------------
mkdir -p "$OUT" "$LOGS" "$CACHE" "$LIBS" "$WORK"
exec 9>"$CACHE/.build.lock"
flock 9

TOOLCHAIN_KEY=$(toolchain_key)
for lib in $LIB_ORDER; do
  LIB_KEY[$lib]=$(lib_key "$lib")
done
t0=$(now)
exec 8>"$LIBS/.lock"          # other checkouts share $LIBS
flock 8
for lib in $LIB_ORDER; do
  build_lib "$lib"
done
DEPS_KEY=$(for lib in $LIB_ORDER; do echo "$lib ${LIB_KEY[$lib]}"; done | hash_text)
if [ ! -d "$OUT/deps-$DEPS_KEY" ]; then
  merge_libs "$OUT/deps-$DEPS_KEY"
  publish_link "deps-$DEPS_KEY" deps
fi
DEPS=$OUT/deps-$DEPS_KEY
flock -u 8
echo "libs: up to date in $(( $(now) - t0 ))s (key $DEPS_KEY, $LIBS)"

declare -A KEYS
for p in "${PARTS[@]}"; do
  KEYS[$p]=$(part_key "$p")
done
for p in "${PARTS[@]}"; do
  k=${KEYS[$p]}
  if [ -f "$OUT/$p-$k/.key" ]; then
    [ "$(readlink "$OUT/$p" 2>/dev/null)" = "$p-$k" ] || publish_link "$p-$k" "$p"
    echo "$p: up to date ($OUT/$p -> $p-$k)"
    continue
  fi
  build_part "$p"
done
