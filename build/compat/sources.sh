#!/usr/bin/env bash
# The httpd source tarballs `make compat` builds and tests, oldest first,
# one path per line: httpd-2.4.N.tar.gz in MPMNG_HTTPD_SOURCES (default:
# ../shared/httpd-src beside the checkout, where it exists).  Prints
# nothing when there are none (the callers say so and where to get them).
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dir=${MPMNG_HTTPD_SOURCES:-$top/../shared/httpd-src}
[ -d "$dir" ] || exit 0
find "$dir" -maxdepth 1 -name 'httpd-2.4.*.tar.gz' -printf '%p\n' | sort -V
