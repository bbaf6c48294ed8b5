#!/usr/bin/env bash
# make install / make uninstall: the module into httpd's module directory and,
# on Debian-family systems, mods-available/mpm_reuseport.{load,conf} so that
# `a2dismod mpm_event && a2enmod mpm_reuseport` works.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
uninstall=0
if [ "${1:-}" = --uninstall ]; then uninstall=1; shift; fi
so=$1 moddir=$2 destdir=${3:-}
avail="$destdir/etc/apache2/mods-available"

if [ $uninstall = 1 ]; then
    if [ -e "$destdir/etc/apache2/mods-enabled/mpm_reuseport.load" ]; then
        echo "install: mpm_reuseport is enabled; run a2dismod mpm_reuseport and" \
             "enable another MPM first" >&2
        exit 1
    fi
    rm -f "$destdir$moddir/mod_mpm_reuseport.so" "$avail/mpm_reuseport.load" \
          "$avail/mpm_reuseport.conf"
    exit 0
fi
install -d "$destdir$moddir"
install -m 644 "$so" "$destdir$moddir/mod_mpm_reuseport.so"
echo "installed $destdir$moddir/mod_mpm_reuseport.so"
if [ -d /etc/apache2/mods-available ] || [ -n "$destdir" ]; then
    install -d "$avail"
    sed "s|/usr/lib/apache2/modules|$moddir|" \
        "$top/mpm_reuseport/debian/mpm_reuseport.load" > "$avail/mpm_reuseport.load"
    install -m 644 "$top/mpm_reuseport/debian/mpm_reuseport.conf" "$avail/"
    echo "installed $avail/mpm_reuseport.{load,conf}:" \
         "a2dismod mpm_event && a2enmod mpm_reuseport && systemctl restart apache2"
else
    echo "add to httpd.conf: LoadModule mpm_reuseport_module $moddir/mod_mpm_reuseport.so"
fi
