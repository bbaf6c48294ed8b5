#!/usr/bin/env bash
# Builds every httpd release `make compat` tests (build/compat/sources.sh),
# each kept by key (build-httpd.sh): `make check` starts this in the
# background at the lowest priority (build/background.sh), and the compat
# stage then finds them built, or waits for the one still building.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rc=0
for t in $("$here/sources.sh"); do
    "$here/build-httpd.sh" "$t" || rc=1
done
exit $rc
