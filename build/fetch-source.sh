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
# apt may name a security update's pool for a file of an older version, or
# lack the newest update's .dsc (404) while the upstream tarball is there:
# only the tarball is used, so it is taken from whichever pool has it (the
# archive's main pool for a security path that is missing) and its sha256
# decides.
fetch_tarball_directly() {
    local uri
    uri=$(cd "$dir" && apt-get source --print-uris "$pkg" 2>>"$log" \
          | awk -v t="$tarball" '$2 == t {gsub("\047", "", $1); print $1}')
    [ -n "$uri" ] || return 1
    echo "fetch-source: $pkg: fetching $tarball by its URI" >>"$log"
    curl -fsSL -o "$dir/$tarball.part" "$uri" >>"$log" 2>&1 \
        || curl -fsSL -o "$dir/$tarball.part" \
               "$(sed 's#/debian-security/pool/updates/#/debian/pool/#' <<<"$uri")" >>"$log" 2>&1 \
        || { rm -f "$dir/$tarball.part"; return 1; }
    mv "$dir/$tarball.part" "$dir/$tarball"
}

if [ ! -f "$dir/$tarball" ]; then
    ensure_deb_src
    echo "fetch-source: fetching source package $pkg into $dir"
    if ! (cd "$dir" && apt-get source --download-only "$pkg" >>"$log" 2>&1) \
        && [ ! -f "$dir/$tarball" ] && ! fetch_tarball_directly; then
        [ "$log" = /dev/null ] || tail -n 20 "$log" >&2
        die "apt-get source --download-only $pkg failed"
    fi
    [ -f "$dir/$tarball" ] || die "$pkg: $tarball not found after download"
fi
echo "$sum  $dir/$tarball" | sha256sum -c --quiet - >/dev/null 2>&1 \
    || die "sha256 mismatch for $dir/$tarball (expected $sum)"
