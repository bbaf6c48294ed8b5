#!/usr/bin/env bash
# The Windows distribution: httpd with mpm_winnt_ng and mod_fhcache, laid
# out as Windows users know it from the httpd zips they download.
#
#   build/win/dist.sh [OUTDIR]      (default: <repo>/out/win)
#
# Takes build/win/out/ng and build/win/out/fhcache (run build/win/build.sh
# first) and writes OUTDIR/mpm-ng-httpd-<version>-win64.zip holding
#   Apache24/bin       httpd.exe, libhttpd.dll, support programs, openssl.exe, DLLs
#   Apache24/conf      httpd's own configuration templates as its build made them,
#                      paths under ServerRoot written as ${SRVROOT} (Define SRVROOT
#                      "c:/Apache24"), extra/*.conf, openssl.cnf
#   Apache24/modules   every module built (mod_fhcache.so too), not httpd's test filters
#   Apache24/htdocs, icons, error, cgi-bin, logs, include, lib, licenses
#   Apache24/ReadMe.txt (build/win/dist/ReadMe.txt)
# The zip is rebuilt only when its inputs changed (their keys are in the
# zip's Apache24/build-info.txt).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
DEST=${1:-$REPO/out/win}
NG=$HERE/out/ng
FHC=$HERE/out/fhcache
FILES=$HERE/dist
# Debian source packages build.sh fetched (its MPMNG_WIN_SRC)
WIN_SRC=${MPMNG_WIN_SRC:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/mpm-ng/win-src}

die() { echo "dist.sh: $*" >&2; exit 1; }

[ -f "$NG/build-info.txt" ] || die "$NG missing: run build/win/build.sh first"
[ -f "$FHC/mod_fhcache.so" ] || die "$FHC/mod_fhcache.so missing: run build/win/build.sh first"
# Built for httpd's regression suite or as API examples, not shipped.
LEFT_OUT="bucketeer case_filter case_filter_in example_hooks example_ipc optional_fn_export
  optional_fn_import optional_hook_export optional_hook_import"
LEFT_OUT=$(echo $LEFT_OUT)

version=$(awk '$1 == "#define" && $2 == "AP_SERVER_PATCHLEVEL_NUMBER" {print "2.4." $3}' \
          "$NG/include/ap_release.h")
[ -n "$version" ] || die "no httpd version in $NG/include/ap_release.h"
zip=$DEST/mpm-ng-httpd-$version-win64.zip
key=$( { cat "$NG/.key" "$FHC/.key"; sha256sum "$0" "$FILES"/*; } | sha256sum | cut -c1-16)
if [ -f "$zip" ] && [ "$(cat "$zip.key" 2>/dev/null)" = "$key" ]; then
  echo "dist: up to date ($zip)"; exit 0
fi

stage=$(mktemp -d "${TMPDIR:-/tmp}/mpmng-dist.XXXXXX")
trap 'rm -rf "$stage"' EXIT
a=$stage/Apache24
mkdir -p "$a"

# ---- programs, libraries, modules ----
cp -rL "$NG/bin" "$NG/include" "$NG/lib" "$NG/htdocs" "$NG/icons" "$NG/error" "$a/"
mkdir -p "$a/modules" "$a/logs" "$a/cgi-bin" "$a/licenses"
for m in "$NG"/modules/mod_*.so; do
  name=$(basename "$m" .so); name=${name#mod_}
  case " $LEFT_OUT " in *" $name "*) continue ;; esac
  cp -L "$m" "$a/modules/"
done
cp -L "$FHC/mod_fhcache.so" "$a/modules/"
cp -rL "$(readlink -f "$HERE/out/deps")/licenses/." "$a/licenses/"
# httpd's own LICENSE and NOTICE, from the source it was built from
tarball=$WIN_SRC/$(sed -n 's/^httpd_tarball=\([^ ]*\).*/\1/p' "$NG/build-info.txt")
[ -f "$tarball" ] || die "httpd's source $tarball (build-info.txt) is gone: run build/win/build.sh"
tar -xzf "$tarball" -C "$a" --strip-components=1 "httpd-$version/LICENSE" \
    "httpd-$version/NOTICE" || die "no LICENSE and NOTICE in $tarball"

# ---- configuration ----
# httpd's own templates (docs/conf of its source), every path written under
# ${SRVROOT}; the LoadModule lines its build wrote for the modules it built.
mkdir -p "$stage/src"
tar -xzf "$tarball" -C "$stage/src" --strip-components=1 "httpd-$version/docs/conf" \
    || die "no docs/conf in $tarball"
python3 "$FILES/render_conf.py" "$stage/src/docs/conf" "$NG/conf/httpd.conf" "$a/conf" \
    "$LEFT_OUT" || die "the configuration could not be written"
cp -L "$(readlink -f "$HERE/out/deps")/conf/openssl.cnf" "$a/conf/"
# Windows line ends for the files users open in Notepad
sed 's/$/\r/' "$FILES/ReadMe.txt" > "$a/ReadMe.txt"
{ echo "httpd $version with mpm_winnt_ng, built by mpm-ng's build/win/build.sh"
  echo "dist_key=$key"; cat "$NG/build-info.txt"; } > "$a/build-info.txt"
# It names the inputs, not where this machine keeps them.
if grep -n -e "$REPO" -e "$WIN_SRC" -e "${HOME:-/root}/" "$a/build-info.txt" >&2; then
    die "build-info.txt names this machine's paths (above): build/win/build.sh write_build_info"
fi

mkdir -p "$DEST"
rm -f "$zip" "$zip.key"
python3 - "$stage" "$zip.tmp" <<'PY' || die "zip failed"
import os, sys, zipfile
stage, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
    for dirpath, dirs, files in os.walk(os.path.join(stage, "Apache24")):
        dirs.sort()
        rel = os.path.relpath(dirpath, stage)
        z.write(dirpath, rel)                   # empty folders (logs) too
        for f in sorted(files):
            z.write(os.path.join(dirpath, f), os.path.join(rel, f))
PY
mv "$zip.tmp" "$zip"
echo "$key" > "$zip.key"
echo "dist: $zip ($(du -h "$zip" | cut -f1), $(ls "$a/modules" | wc -l) modules)"
