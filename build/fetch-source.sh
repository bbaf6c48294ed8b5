#!/usr/bin/env bash
# Fetches a Debian source package (its .dsc, upstream tarball and Debian
# files) into DIR unless TARBALL is already there, and checks the tarball's
# sha256.  Enables deb-src entries in Debian's apt sources first if there are
# none (root only; otherwise says how).
#
#   build/fetch-source.sh DIR PKG=VERSION TARBALL SHA256 [LOG]
set -euo pipefail
[ $# -ge 4 ] || { echo "usage: $0 DIR PKG=VERSION TARBALL SHA256 [LOG]" >&2; exit 2; }
dir=$1 pkg=$2 tarball=$3 sum=$4 log=${5:-/dev/null}
die() { echo "fetch-source: $*" >&2; exit 1; }

ensure_deb_src() {
    local f=/etc/apt/sources.list.d/debian.sources
    if grep -qs '^Types:.*deb-src' "$f" || grep -qs '^deb-src ' /etc/apt/sources.list; then return 0; fi
    [ "$(id -u)" = 0 ] || die "no deb-src entries in apt sources; as root: sed -i 's/^Types: deb\$/Types: deb deb-src/' $f && apt-get update"
    [ -f "$f" ] || die "no deb-src entries and no $f to add them to"
    echo "fetch-source: enabling deb-src in $f"
    sed -i 's/^Types: deb$/Types: deb deb-src/' "$f"
    apt-get update -qq
}

mkdir -p "$dir"
if [ ! -f "$dir/$tarball" ]; then
    ensure_deb_src
    echo "fetch-source: fetching source package $pkg into $dir"
    (cd "$dir" && apt-get source --download-only "$pkg" >>"$log" 2>&1) \
        || { [ "$log" = /dev/null ] || tail -n 20 "$log" >&2; die "apt-get source --download-only $pkg failed"; }
    [ -f "$dir/$tarball" ] || die "$pkg: $tarball not found after download"
fi
echo "$sum  $dir/$tarball" | sha256sum -c --quiet - >/dev/null 2>&1 \
    || die "sha256 mismatch for $dir/$tarball (expected $sum)"
