# Helpers for the library recipes (build/win/libs/*.sh) and the httpd build.
# Sourced, not run.  Its hash is part of every recipe's key: what a build
# produces may depend on anything here.
#
# Set by the caller: HERE (build/win), LOG (the current log file), JOBS.

TOOLCHAIN=$HERE/mingw64.cmake
NOPREFIX=$HERE/noprefix.cmake
PATCHES=$HERE/patches
TRIPLET=x86_64-w64-mingw32
WINE=/usr/lib/wine/wine64
WINESERVER=/usr/lib/wine/wineserver

die() { echo "build.sh: $*" >&2; exit 1; }

run_logged() {  # command...; its output goes to $LOG, on failure its tail to stderr
  if ! "$@" >>"$LOG" 2>&1; then
    echo "---- last 40 lines of $LOG ----" >&2
    tail -n 40 "$LOG" >&2
    die "failed: $* (full log: $LOG)"
  fi
}

unpack() {  # $1 = tarball path, $2 = destination dir (its single top directory is stripped)
  rm -rf "$2"; mkdir -p "$2"
  tar -xf "$1" -C "$2" --strip-components=1 --no-same-owner
}

apply_patch() {  # $1 = source dir, $2 = patch file
  patch -d "$1" -p1 --quiet --no-backup-if-mismatch < "$2" || die "patch $2 does not apply in $1"
}

cmake_build() {  # $1 = source dir, $2 = build dir, rest = cmake -D options
  local src=$1 bld=$2; shift 2
  run_logged cmake -S "$src" -B "$bld" -DCMAKE_TOOLCHAIN_FILE="$TOOLCHAIN" \
    -DCMAKE_BUILD_TYPE=Release "$@"
  run_logged cmake --build "$bld" -j "$JOBS"
}

cmake_install() {  # $1 = source dir, $2 = build dir, $3 = prefix, rest = cmake -D options
  local src=$1 bld=$2 prefix=$3; shift 3
  cmake_build "$src" "$bld" -DCMAKE_INSTALL_PREFIX="$prefix" "$@"
  run_logged cmake --install "$bld"
}
