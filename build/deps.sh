#!/usr/bin/env bash
# Installs the Debian packages a task needs: build/packages/GROUP.txt, one
# name per line, for each GROUP given (default: all).  As root on
# Debian/Ubuntu it installs what is missing (idempotent); otherwise it names
# what is missing and fails.
set -euo pipefail
cd "$(dirname "$0")/packages"

lists=()
for g in "${@:-*}"; do lists+=($g.txt); done
wanted=$(cat "${lists[@]}" | sed 's/#.*//' | tr -s ' \t' '\n' | grep -v '^$' | sort -u)
missing=()
for p in $wanted; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
    [ "$status" = installed ] || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
    echo "deps: missing Debian packages: ${missing[*]}" >&2
    echo "deps: install them (as root: apt-get install ${missing[*]}) and retry" >&2
    exit 1
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# Debian enables and starts the packaged apache2 on :80; our tests use their
# own private instances, so leave the system one as the package set it up.
