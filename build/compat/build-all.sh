#!/usr/bin/env bash
# Builds the httpd releases `make compat` tests (build/compat/sources.sh),
# or with --short the ones make check's compat stage tests (one per path
# through the httpd seam: python3 -m mpmng_py.compat --list --short, with
# the modules the integration suite loads: build-httpd.sh --modules), each
# kept by key (build-httpd.sh): `make check` starts this in the background
# at the lowest priority (build/background.sh), and the compat stage then
# finds them built, or waits for the one still building.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ "${1:-}" = --short ]; then
    list=$(cd "$here/../.." && python3 -m mpmng_py.compat --list --short) || exit 1
    modules=check
else
    list=$("$here/sources.sh")
    modules=all
fi
rc=0
for t in $list; do
    "$here/build-httpd.sh" --modules "$modules" "$t" || rc=1
done
exit $rc
