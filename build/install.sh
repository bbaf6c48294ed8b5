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
# Every module built beside the MPM: out/mod_<name>.so with its Debian files
# in <dir>/debian/<name>.{load,conf}.
outdir=$(dirname "$so")
modules="mpm_reuseport:mpm_reuseport fhcache:mod_fhcache"

if [ $uninstall = 1 ]; then
    for m in $modules; do
        name=${m%%:*}
        if [ -e "$destdir/etc/apache2/mods-enabled/$name.load" ]; then
            echo "install: $name is enabled; run a2dismod $name first" >&2
            exit 1
        fi
    done
    for m in $modules; do
        name=${m%%:*}
        rm -f "$destdir$moddir/mod_$name.so" "$avail/$name.load" "$avail/$name.conf"
    done
    rm -f "$destdir/usr/sbin/mpmng-upgrade"
    exit 0
fi
install -d "$destdir$moddir"
debian=0
if [ -d /etc/apache2/mods-available ] || [ -n "$destdir" ]; then
    debian=1
    install -d "$avail"
fi
for m in $modules; do
    name=${m%%:*} dir=$top/${m#*:}
    install -m 644 "$outdir/mod_$name.so" "$destdir$moddir/mod_$name.so"
    echo "installed $destdir$moddir/mod_$name.so"
    if [ $debian = 1 ]; then
        sed "s|/usr/lib/apache2/modules|$moddir|" "$dir/debian/$name.load" \
            > "$avail/$name.load"
        install -m 644 "$dir/debian/$name.conf" "$avail/"
        echo "installed $avail/$name.{load,conf}"
    fi
done
# The binary upgrade's command (docs/mod_mpm_reuseport.md).
install -d "$destdir/usr/sbin"
install -m 755 "$top/mpm_reuseport/mpmng-upgrade" "$destdir/usr/sbin/mpmng-upgrade"
echo "installed $destdir/usr/sbin/mpmng-upgrade"
if [ $debian = 1 ]; then
    echo "enable: a2dismod mpm_event && a2enmod mpm_reuseport fhcache &&" \
         "systemctl restart apache2"
else
    echo "add to httpd.conf: LoadModule mpm_reuseport_module" \
         "$moddir/mod_mpm_reuseport.so (and fhcache_module, mod_fhcache.so)"
fi
