#!/usr/bin/env bash
# Cross-build Apache httpd 2.4.68 for Windows x64 (mingw-w64 + CMake) on Debian 12.
#
#   build/win/build.sh [stock|ng|fhcache|all]     (default: all)
#
# Builds APR, expat, PCRE2 and APR-util once, then httpd twice from the same deps:
#   stock:   the stock WinNT MPM (server/mpm/winnt/*.c, builtin module mpm_winnt)
#   ng:      every mpm_winnt_ng/*.c and common/*.c of this repository (builtin module
#            mpm_winnt_ng; include/ is on its include path)
#   fhcache: mod_fhcache.so from every mod_fhcache/*.c and common/*.c, against ng's headers and import
#            libraries (it loads into either httpd: both export the same API)
# Results (consumers use these stable paths; each is a symlink to a keyed prefix):
#   build/win/out/stock   build/win/out/ng   build/win/out/fhcache/mod_fhcache.so
#     bin/      httpd.exe, libhttpd.dll and the dependency DLLs
#     modules/  mod_*.so
#     include/  httpd + APR/APR-util headers
#     lib/      import libraries (libhttpd.dll.a, libapr-1.dll.a, libaprutil-1.dll.a, ...)
#     conf/     mime.types
# Every part is keyed on a hash of its inputs; a part whose key matches is not rebuilt.
#
# Environment:
#   MPMNG_WIN_SRC      directory holding the Debian source packages (default build/win/cache/src;
#                      missing tarballs are fetched there with apt-get source --download-only)
#   MPMNG_WIN_MPM_DIR  MPM sources for "ng" (default: <repo>/mpm_winnt_ng)
#   MPMNG_WIN_JOBS     parallel jobs (default 2)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
SRC=${MPMNG_WIN_SRC:-$HERE/cache/src}
MPM_DIR=${MPMNG_WIN_MPM_DIR:-$REPO/mpm_winnt_ng}
FHC_DIR=$REPO/mod_fhcache
COMMON_DIR=$REPO/common      # helpers every module compiles in
COMMON_INC=$REPO/include     # their headers
JOBS=${MPMNG_WIN_JOBS:-2}
CACHE=$HERE/cache
OUT=$HERE/out
LOGS=$OUT/logs
WORK=$CACHE/work
TOOLCHAIN=$HERE/mingw64.cmake
NOPREFIX=$HERE/noprefix.cmake
PATCHES=$HERE/patches
WINE=/usr/lib/wine/wine64
WINESERVER=/usr/lib/wine/wineserver
export WINEPREFIX=$CACHE/wineprefix WINEDEBUG=-all

# Debian source packages (pkg=version) and the sha256 of the upstream tarball used from each.
SOURCES=(
  "apr=1.7.2-3+deb12u1        apr_1.7.2.orig.tar.bz2        75e77cc86776c030c0a5c408dfbd0bf2a0b75eed5351e52d5439fa1e5509a43e"
  "apr-util=1.6.3-1+deb12u1   apr-util_1.6.3.orig.tar.bz2   a41076e3710746326c3945042994ad9a4fcac0ce0277dd8fea076fec3c9772b5"
  "pcre2=10.42-1              pcre2_10.42.orig.tar.gz       c33b418e3b936ee3153de2c61cc638e7e4fe3156022a5c77d0711bcbb9d64f1f"
  "expat=2.5.0-1+deb12u2      expat_2.5.0.orig.tar.gz       ab00ee05c7067fd10a35c5d2a4922ebba746ddd50ff83b79c828da17bbdf1757"
  "apache2=2.4.68-1~deb12u1   apache2_2.4.68.orig.tar.gz    ed9a9d4500fb48bb28eaffb3ba71d06ccf86d498fa13ab9f781da010cc488498"
)

# httpd modules built as modules/mod_*.so; every other module is disabled.
MODULES="authz_core authz_host mime dir alias log_config status headers setenvif autoindex"

die() { echo "build.sh: $*" >&2; exit 1; }
usage() { echo "usage: $0 [stock|ng|fhcache|all]" >&2; exit 2; }

case "${1:-all}" in
  stock)   PARTS=(stock) ;;
  ng)      PARTS=(ng) ;;
  fhcache) PARTS=(ng fhcache) ;;   # the module builds against ng
  all)     PARTS=(stock ng fhcache) ;;
  *)       usage ;;
esac

hash_files() { sha256sum "$@" | awk '{print $1}' | sha256sum | cut -c1-16; }

# ---- keys -------------------------------------------------------------------------------
# deps/httpd key: build script, toolchain files, patches, tarball sha256s (pinned above),
# compiler version.  The httpd patch is in it too, so stock and ng share one patched tree.
base_key() {
  { hash_files "$HERE/build.sh" "$TOOLCHAIN" "$NOPREFIX" "$PATCHES"/*
    x86_64-w64-mingw32-gcc -dumpversion; } | sha256sum | cut -c1-16
}

check_mpm_dir() {  # call in the main shell (die in $(...) would only end the subshell)
  [ -d "$MPM_DIR" ] || die "ng: MPM directory $MPM_DIR does not exist"
  [ -n "$(find "$MPM_DIR" -maxdepth 1 -name '*.c')" ] \
    || die "ng: no *.c files in $MPM_DIR (nothing to build the ng MPM from)"
}

common_files() {  # the shared helpers' sources and headers, sorted
  find "$COMMON_DIR" "$COMMON_INC" -maxdepth 1 \( -name '*.c' -o -name '*.h' \) | LC_ALL=C sort
}

common_sources() {  # the shared helpers' sources, sorted
  find "$COMMON_DIR" -maxdepth 1 -name '*.c' | LC_ALL=C sort
}

mpm_files() {  # the ng MPM's sources and headers with the shared ones, sorted
  { find "$MPM_DIR" -maxdepth 1 \( -name '*.c' -o -name '*.h' \); common_files; } | LC_ALL=C sort
}

fhc_files() {  # mod_fhcache's sources and headers with the shared ones, sorted
  { find "$FHC_DIR" -maxdepth 1 \( -name '*.c' -o -name '*.h' \); common_files; } | LC_ALL=C sort
}

part_key() {  # $1 = stock|ng|fhcache
  if [ "$1" = fhcache ]; then
    local f
    { echo "$BASE_KEY"
      for f in $(fhc_files); do printf '%s %s\n' "$(basename "$f")" "$(sha256sum < "$f" | cut -c1-64)"; done
    } | sha256sum | cut -c1-16
  elif [ "$1" = ng ]; then
    local f
    { echo "$BASE_KEY"
      for f in $(mpm_files); do printf '%s %s\n' "$(basename "$f")" "$(sha256sum < "$f" | cut -c1-64)"; done
    } | sha256sum | cut -c1-16
  else
    echo "$BASE_KEY"
  fi
}

# ---- helpers ----------------------------------------------------------------------------
now() { date +%s; }

run_logged() {  # $1 = log file, rest = command; on failure show the tail of the log
  local log=$1; shift
  if ! "$@" >>"$log" 2>&1; then
    echo "---- last 40 lines of $log ----" >&2
    tail -n 40 "$log" >&2
    die "failed: $* (full log: $log)"
  fi
}

ensure_tools() {
  local p missing=()
  for p in x86_64-w64-mingw32-gcc cmake make perl patch; do command -v "$p" >/dev/null || missing+=("$p"); done
  [ -x "$WINE" ] || missing+=("$WINE")
  [ ${#missing[@]} -eq 0 ] || die "missing: ${missing[*]} (apt-get install gcc-mingw-w64-x86-64 g++-mingw-w64-x86-64 wine64 cmake dpkg-dev)"
}

# gen_test_char runs under wine during the build.  A first wineboot can fail
# for reasons outside this build (a wineserver left by something else, a
# loaded machine timing it out): it is logged, and tried once more on a new
# prefix with no wineserver running before the build gives up.
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

fetch_sources() {
  local line pkg tarball sum
  for line in "${SOURCES[@]}"; do
    read -r pkg tarball sum <<<"$line"
    "$HERE/../fetch-source.sh" "$SRC" "$pkg" "$tarball" "$sum" "$LOGS/fetch.log" \
      || die "cannot fetch $pkg"
  done
}

unpack() {  # $1 = tarball name, $2 = destination dir (its single top directory is stripped)
  rm -rf "$2"; mkdir -p "$2"
  tar -xf "$SRC/$1" -C "$2" --strip-components=1 --no-same-owner
}

apply_patch() {  # $1 = source dir, $2 = patch file
  patch -d "$1" -p1 --quiet --no-backup-if-mismatch < "$2" || die "patch $2 does not apply in $1"
}

cmake_build() {  # $1 = log, $2 = source dir, $3 = build dir, rest = cmake -D options
  local log=$1 src=$2 bld=$3; shift 3
  run_logged "$log" cmake -S "$src" -B "$bld" -DCMAKE_TOOLCHAIN_FILE="$TOOLCHAIN" \
    -DCMAKE_BUILD_TYPE=Release "$@"
  run_logged "$log" cmake --build "$bld" -j "$JOBS"
}

publish() {  # $1 = finished tmp dir, $2 = keyed dir name, $3 = link name (or ""); drop older keys
  local name=$2 link=$3 prefix=${2%-*} d
  rm -rf "${OUT:?}/$name"
  mv "$1" "$OUT/$name"
  if [ -n "$link" ]; then
    ln -sfn "$name" "$OUT/.$link.new" && mv -T "$OUT/.$link.new" "$OUT/$link"
  fi
  for d in "$OUT/$prefix"-*; do
    [ "$d" = "$OUT/$name" ] || [ ! -d "$d" ] || [ -L "$d" ] || rm -rf "$d"
  done
}

# ---- dependencies: APR, expat, PCRE2, APR-util --------------------------------------------
build_deps() {
  local w=$WORK/deps-$BASE_KEY d=$OUT/.deps-$BASE_KEY.tmp log=$LOGS/deps.log
  rm -rf "$w" "$d"; mkdir -p "$w"; : >"$log"

  unpack apr_1.7.2.orig.tar.bz2 "$w/apr";      apply_patch "$w/apr" "$PATCHES/apr-1.7.2.patch"
  unpack apr-util_1.6.3.orig.tar.bz2 "$w/apu"; apply_patch "$w/apu" "$PATCHES/apr-util-1.6.3.patch"
  unpack pcre2_10.42.orig.tar.gz "$w/pcre2"
  unpack expat_2.5.0.orig.tar.gz "$w/expat"    # tarball of the GitHub tag: sources in expat/

  # APR: shared libapr-1.dll only (no static apr-1), private headers for httpd
  cmake_build "$log" "$w/apr" "$w/b-apr" -DCMAKE_INSTALL_PREFIX="$d" \
    -DCMAKE_USER_MAKE_RULES_OVERRIDE="$NOPREFIX" -DAPR_INSTALL_PRIVATE_H=ON \
    -DAPR_BUILD_STATIC=OFF -DINSTALL_PDB=OFF
  run_logged "$log" cmake --install "$w/b-apr"

  cmake_build "$log" "$w/expat/expat" "$w/b-expat" -DCMAKE_INSTALL_PREFIX="$d" \
    -DEXPAT_SHARED_LIBS=ON -DEXPAT_BUILD_TOOLS=OFF -DEXPAT_BUILD_EXAMPLES=OFF \
    -DEXPAT_BUILD_TESTS=OFF -DEXPAT_BUILD_DOCS=OFF -DEXPAT_BUILD_PKGCONFIG=OFF
  run_logged "$log" cmake --install "$w/b-expat"

  cmake_build "$log" "$w/pcre2" "$w/b-pcre2" -DCMAKE_INSTALL_PREFIX="$d" \
    -DBUILD_SHARED_LIBS=ON -DBUILD_STATIC_LIBS=OFF -DPCRE2_BUILD_PCRE2_8=ON \
    -DPCRE2_BUILD_PCRE2_16=OFF -DPCRE2_BUILD_PCRE2_32=OFF -DPCRE2_BUILD_PCRE2GREP=OFF \
    -DPCRE2_BUILD_TESTS=OFF -DPCRE2_SUPPORT_JIT=OFF
  run_logged "$log" cmake --install "$w/b-pcre2"

  # APR-util: no LDAP/ODBC/crypto; expat found by explicit paths
  cmake_build "$log" "$w/apu" "$w/b-apu" -DCMAKE_INSTALL_PREFIX="$d" \
    -DCMAKE_USER_MAKE_RULES_OVERRIDE="$NOPREFIX" -DAPU_BUILD_STATIC=OFF -DINSTALL_PDB=OFF \
    -DAPR_INCLUDE_DIR="$d/include" -DAPR_LIBRARIES="$d/lib/libapr-1.dll.a" \
    -DEXPAT_INCLUDE_DIR="$d/include" -DEXPAT_LIBRARY="$d/lib/libexpat.dll.a" \
    -DAPU_HAVE_ODBC=OFF -DAPR_HAS_LDAP=OFF -DAPU_HAVE_CRYPTO=OFF
  run_logged "$log" cmake --install "$w/b-apu"

  # patched httpd tree shared by the stock and ng builds
  unpack apache2_2.4.68.orig.tar.gz "$w/httpd"
  apply_patch "$w/httpd" "$PATCHES/httpd-2.4.68.patch"

  rm -rf "$w/apr" "$w/apu" "$w/pcre2" "$w/expat" "$w"/b-*
  echo "$BASE_KEY" > "$d/.key"
  publish "$d" "deps-$BASE_KEY" ""
}

# ---- httpd ----------------------------------------------------------------------------------
httpd_module_options() {  # -DENABLE_<MOD>=A for $MODULES, =O for every other module
  local m up
  for m in $(grep -oE '^  "modules/[^+"]+/mod_[a-z0-9_]+\+' "$1/CMakeLists.txt" | sed -E 's/.*mod_([a-z0-9_]+)\+$/\1/'); do
    up=$(echo "$m" | tr '[:lower:]' '[:upper:]')
    case " $MODULES " in
      *" $m "*) echo "-DENABLE_$up=A" ;;
      *)        echo "-DENABLE_$up=O" ;;
    esac
  done
}

build_httpd() {  # $1 = stock|ng, $2 = key
  local part=$1 key=$2 deps=$OUT/deps-$BASE_KEY src=$WORK/deps-$BASE_KEY/httpd
  local bld=$WORK/deps-$BASE_KEY/b-$part d=$OUT/.$part-$key.tmp log=$LOGS/$part.log
  local mpm_opts=() mod_opts=() f srcs=""
  : >"$log"
  if [ "$part" = ng ]; then
    for f in $(find "$MPM_DIR" -maxdepth 1 -name '*.c' | LC_ALL=C sort) $(common_sources); do
      srcs="$srcs${srcs:+;}$f"
    done
    mpm_opts=(-DMPM_NAME=mpm_winnt_ng "-DMPM_SOURCES=$srcs" "-DMPM_INCLUDE=$MPM_DIR;$COMMON_INC")
  else
    mpm_opts=(-UMPM_NAME -UMPM_SOURCES -UMPM_INCLUDE)   # CMakeLists defaults: stock winnt MPM
  fi
  mapfile -t mod_opts < <(httpd_module_options "$src")
  # The build dir persists per deps key, so an ng rebuild only recompiles what changed.
  # CMAKE_INSTALL_PREFIX is a staging dir (the perl install steps copy docs there);
  # the real install goes to the keyed prefix with cmake --install --prefix.
  cmake_build "$log" "$src" "$bld" -DCMAKE_INSTALL_PREFIX="$bld/stage" \
    -DCMAKE_USER_MAKE_RULES_OVERRIDE="$NOPREFIX" \
    -DAPR_INCLUDE_DIR="$deps/include" \
    "-DAPR_LIBRARIES=$deps/lib/libapr-1.dll.a;$deps/lib/libaprutil-1.dll.a" \
    -DPCRE_INCLUDE_DIR="$deps/include" -DPCRE_LIBRARIES="$deps/lib/libpcre2-8.dll.a" \
    -DPCRE_CFLAGS=-DHAVE_PCRE2 -DINSTALL_PDB=OFF -DINSTALL_MANUAL=OFF -DBUILD_SUPPORT=OFF \
    -DENABLE_MODULES=O "${mod_opts[@]}" "${mpm_opts[@]}"
  local want=mpm_winnt_module; [ "$part" = ng ] && want=mpm_winnt_ng_module
  grep -q "^extern module $want;" "$bld/modules.c" || die "$part: generated modules.c does not reference $want"
  rm -rf "$d"
  run_logged "$log" cmake --install "$bld" --prefix "$d"

  # dependencies next to httpd.exe, headers and import libraries for our own modules
  cp -p "$deps"/bin/*.dll "$d/bin/"
  cp -rp "$deps/include/." "$d/include/"
  cp -p "$deps"/lib/*.a "$d/lib/"
  mkdir -p "$d/conf"
  cp -p "$src/docs/conf/mime.types" "$d/conf/"
  { echo "part=$part"; echo "key=$key"; echo "deps_key=$BASE_KEY"
    echo "mpm_module=$(grep -o 'mpm_winnt[a-z_]*_module' "$bld/modules.c" | head -n1)"
    [ "$part" = ng ] && echo "mpm_sources=$srcs"
    echo "modules=$MODULES"; } > "$d/build-info.txt"
  echo "$key" > "$d/.key"
  publish "$d" "$part-$key" "$part"
}

# ---- mod_fhcache ---------------------------------------------------------------------------
# Compiled directly (no CMake): a module is a DLL named .so importing libhttpd, APR, APR-util.
build_fhcache() {  # $1 = key
  local key=$1 ng=$OUT/ng d=$OUT/.fhcache-$1.tmp log=$LOGS/fhcache.log f objs=()
  local obj=$WORK/deps-$BASE_KEY/b-fhcache
  : >"$log"; rm -rf "$d" "$obj"; mkdir -p "$d" "$obj"
  for f in $(find "$FHC_DIR" -maxdepth 1 -name '*.c' | LC_ALL=C sort) $(common_sources); do
    run_logged "$log" x86_64-w64-mingw32-gcc -O2 -g -Wall -Werror -std=gnu11 \
      -DWIN32 -D_WINDOWS -I"$ng/include" -I"$FHC_DIR" -I"$COMMON_INC" \
      -c "$f" -o "$obj/$(basename "${f%.c}").o"
    objs+=("$obj/$(basename "${f%.c}").o")
  done
  run_logged "$log" x86_64-w64-mingw32-gcc -shared -o "$d/mod_fhcache.so" "${objs[@]}" \
    "$ng/lib/libhttpd.dll.a" "$ng/lib/libaprutil-1.dll.a" "$ng/lib/libapr-1.dll.a" -lkernel32
  echo "$key" > "$d/.key"
  publish "$d" "fhcache-$key" fhcache
}

# ---- main -----------------------------------------------------------------------------------
mkdir -p "$OUT" "$LOGS" "$CACHE"
exec 9>"$CACHE/.build.lock"
flock 9

BASE_KEY=$(base_key)

declare -A KEYS
for p in "${PARTS[@]}"; do
  [ "$p" != ng ] || check_mpm_dir
  KEYS[$p]=$(part_key "$p")
done

if [ -f "$OUT/deps-$BASE_KEY/.key" ]; then
  deps_done=1
else
  deps_done=0
fi

if [ $deps_done = 0 ]; then
  ensure_tools; ensure_wineprefix; fetch_sources
  t0=$(now)
  rm -rf "$WORK"    # build dirs of older keys
  build_deps
  echo "deps: built APR, expat, PCRE2, APR-util in $(( $(now) - t0 ))s (key $BASE_KEY, log $LOGS/deps.log)"
else
  echo "deps: up to date (key $BASE_KEY)"
fi

for p in "${PARTS[@]}"; do
  k=${KEYS[$p]}
  if [ -f "$OUT/$p-$k/.key" ] && [ "$(readlink "$OUT/$p" 2>/dev/null)" = "$p-$k" ]; then
    echo "$p: up to date ($OUT/$p -> $p-$k)"
    continue
  fi
  if [ -f "$OUT/$p-$k/.key" ]; then  # built before, only the link is stale
    ln -sfn "$p-$k" "$OUT/$p"
    echo "$p: up to date ($OUT/$p -> $p-$k, link restored)"
    continue
  fi
  ensure_tools; ensure_wineprefix
  if [ "$p" = fhcache ]; then
    t0=$(now)
    build_fhcache "$k"
    echo "fhcache: built mod_fhcache.so in $(( $(now) - t0 ))s -> $OUT/fhcache (key $k, log $LOGS/fhcache.log)"
    continue
  fi
  [ -d "$WORK/deps-$BASE_KEY/httpd" ] || { fetch_sources; unpack apache2_2.4.68.orig.tar.gz "$WORK/deps-$BASE_KEY/httpd"; apply_patch "$WORK/deps-$BASE_KEY/httpd" "$PATCHES/httpd-2.4.68.patch"; }
  t0=$(now)
  build_httpd "$p" "$k"
  echo "$p: built httpd 2.4.68 ($(grep -o '^mpm_module=.*' "$OUT/$p/build-info.txt" | cut -d= -f2)) in $(( $(now) - t0 ))s -> $OUT/$p (key $k, log $LOGS/$p.log)"
done
