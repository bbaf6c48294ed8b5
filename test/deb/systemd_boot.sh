#!/usr/bin/env bash
# Run by test/deb/run.sh as the first process of private mount, network,
# PID and cgroup namespaces: prepares a private apache2 (as in_namespace.sh)
# and becomes the namespace's PID 1, the machine's systemd, with a unit path
# that holds only Debian's apache2.service, the drop-in directory the
# mpm-reuseport package installed and empty targets.  Nothing else of the
# machine's units runs: sysinit's units (tmpfiles, sysctl, ...) would act
# on the machine's files, which the mount namespace shares.
# $1 = the project, $2 = scratch directory; both appear under /run/mpmng.
set -uo pipefail
top=$1 box=$2
say() { echo "systemd_boot: $*"; }
mount --make-rprivate / || { say "cannot make mounts private"; exit 1; }
ip link set lo up || { say "cannot bring up lo"; exit 1; }
mount -t tmpfs tmpfs /run && mkdir -p /run/mpmng/top /run/mpmng/box /run/lock \
    && mount --bind "$top" /run/mpmng/top && mount --bind "$box" /run/mpmng/box \
    || { say "cannot make a private /run"; exit 1; }
box=/run/mpmng/box
# A private /tmp and /var/tmp besides (PrivateTmp= makes directories there).
mount -t tmpfs tmpfs /tmp && mount -t tmpfs tmpfs /var/tmp || { say "no private /tmp"; exit 1; }

cp -a /etc/apache2 "$box/etc-apache2" && mount --bind "$box/etc-apache2" /etc/apache2 \
    || { say "cannot copy /etc/apache2"; exit 1; }
for d in /var/log/apache2 /var/www/html; do mkdir -p "$d" && mount -t tmpfs tmpfs "$d"; done
chmod 755 /var/www/html
head -c 20000 /dev/urandom >/var/www/html/file.bin && chmod 644 /var/www/html/file.bin
for m in mpm_event mpm_worker mpm_prefork; do a2dismod -q "$m" >/dev/null 2>&1; done
a2enmod -q mpm_reuseport fhcache status >/dev/null || { say "a2enmod failed"; exit 1; }
# /usr/sbin without this machine's policy-rc.d (Docker images hold every
# restart): the holds the checks see are mpmng-upgrade's alone.
mkdir -p "$box/usr-sbin" && mount -t tmpfs tmpfs "$box/usr-sbin" \
    && cp -a /usr/sbin/. "$box/usr-sbin/" && rm -f "$box/usr-sbin/policy-rc.d" \
    && mount --bind "$box/usr-sbin" /usr/sbin || { say "cannot make a private /usr/sbin"; exit 1; }

units=$box/units
mkdir -p "$units" && cp /lib/systemd/system/apache2.service "$units/" \
    && cp -r /lib/systemd/system/apache2.service.d "$units/" \
    || { say "no apache2.service or no drop-in from the package"; exit 1; }
for t in mpmng-test sysinit basic shutdown network remote-fs nss-lookup sockets paths \
         timers slices local-fs; do
    printf '[Unit]\nDefaultDependencies=no\n' >"$units/$t.target"
done
# systemd writes its messages to /dev/console.
: >"$box/console" && mount --bind "$box/console" /dev/console
export container=mpmng SYSTEMD_UNIT_PATH=$units
say "starting systemd"
exec /lib/systemd/systemd --system --unit=mpmng-test.target
