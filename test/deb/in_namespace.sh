#!/usr/bin/env bash
# Run by test/deb/run.sh inside `unshare --mount --net`: a private copy of
# /etc/apache2 and of the runtime directories, loopback only.  $1 = scratch
# directory, $2 and $3 = the two .deb files.  Prints "ok: ..." / "FAILED:
# ..." lines.
set -uo pipefail
tmp=$1
# shellcheck source=test/deb/checks.sh
. "$(dirname "$0")/checks.sh"

mount --make-rprivate / || { bad "cannot make mounts private"; exit 1; }
ip link set lo up || { bad "cannot bring up lo in the namespace"; exit 1; }
cp -a /etc/apache2 "$tmp/etc-apache2"
mount --bind "$tmp/etc-apache2" /etc/apache2
for d in /run/apache2 /var/log/apache2 /var/lock/apache2 /var/www/html; do
    mkdir -p "$d" && mount -t tmpfs tmpfs "$d"
done
chmod 755 /var/www/html
head -c 20000 /dev/urandom > /var/www/html/file.bin
chmod 644 /var/www/html/file.bin

set +u   # envvars reads variables that may be unset
. /etc/apache2/envvars
set -u
export APACHE_LOG_DIR=/var/log/apache2
ctl() { /usr/sbin/apache2 -k "$1"; }
status() { curl -s --max-time 5 "http://127.0.0.1/server-status?auto"; }
same_body() { curl -s --max-time 5 -o "$tmp/got" http://127.0.0.1/file.bin && cmp -s "$tmp/got" /var/www/html/file.bin; }

# Whatever MPM the machine's apache2 has enabled goes, as an operator would.
for m in mpm_event mpm_worker mpm_prefork; do a2dismod -q "$m" >/dev/null 2>&1; done
check "a2enmod mpm_reuseport fhcache" a2enmod -q mpm_reuseport fhcache status
check "apache2 -t accepts the configuration" /usr/sbin/apache2 -t
ctl start
check "apache2 starts and serves with mpm_reuseport" wait_for 20 bash -c "curl -s --max-time 2 http://127.0.0.1/server-status?auto | grep -q '^ReusePortBuckets:'"
# Each child has its cache: enough requests that some child sees the file twice.
check "a static file comes back byte-identical, 8 times" \
    bash -c "$(declare -f same_body); tmp=$tmp; for i in 1 2 3 4 5 6 7 8; do same_body || exit 1; done"
check "server-status shows the cache served a hit (totals: within a second)" \
    wait_for 5 bash -c "curl -s --max-time 2 http://127.0.0.1/server-status?auto | grep -Eq '^FHCacheTotalHits: [1-9]'"
gen0=$(status | sed -n 's/^ParentServerConfigGeneration: //p')
ctl restart
check "apache2 -k restart: a new generation serves" wait_for 20 bash -c \
    "g=\$(curl -s --max-time 2 http://127.0.0.1/server-status?auto | sed -n 's/^ParentServerConfigGeneration: //p'); [ -n \"\$g\" ] && [ \"\$g\" != '$gen0' ]"
check "after the restart the file is still served" \
    bash -c "$(declare -f same_body); tmp=$tmp; same_body"
pid0=$(cat /run/apache2/apache2.pid 2>/dev/null)
check "mpmng-upgrade: a new server process takes the listeners over" mpmng-upgrade
check "after the upgrade the PidFile names a new parent and the old one leaves" wait_for 20 \
    bash -c "p=\$(cat /run/apache2/apache2.pid); [ -n \"\$p\" ] && [ \"\$p\" != '$pid0' ] && ! kill -0 '$pid0' 2>/dev/null"
check "after the upgrade the file is still served" \
    bash -c "$(declare -f same_body); tmp=$tmp; same_body"
# A package upgrade under load, the documented way: dpkg puts the new files
# in place (the running server keeps what it has loaded), mpmng-upgrade
# hands the listeners to a new server that loads them.
wrk -t1 -c16 -d10s http://127.0.0.1/file.bin >"$tmp/wrk-ka" 2>&1 & ka=$!
wrk -t1 -c16 -d10s -H "Connection: close" http://127.0.0.1/file.bin >"$tmp/wrk-new" 2>&1 & new=$!
wait_for 5 established 16
pid0=$(cat /run/apache2/apache2.pid 2>/dev/null)
check "dpkg -i reinstalls both packages under load" \
    bash -c "dpkg -i '$2' '$3' >'$tmp/dpkg.log' 2>&1"
check "mpmng-upgrade after the reinstall, under load" mpmng-upgrade
wait $ka $new
check "reinstall and upgrade under load: no failed request (wrk, 16 kept-alive and 16 new connections)" \
    no_failures "$tmp/wrk-ka" "$tmp/wrk-new"
grep -h -E 'requests in|errors|Non-2xx' "$tmp/wrk-ka" "$tmp/wrk-new" | sed 's/^/    /'
check "after the reinstall a new parent serves" \
    bash -c "p=\$(cat /run/apache2/apache2.pid); [ -n \"\$p\" ] && [ \"\$p\" != '$pid0' ]"

# apache2 itself under load, the documented way: `mpmng-upgrade --with
# <the package command>` (here dpkg -i of the apache2 and apache2-bin
# packages of the installed version, fetched by run.sh) holds the restart
# that apache2's postinst asks invoke-rc.d for, then hands over.  /usr/sbin
# is a private copy without this machine's policy-rc.d (Docker images hold
# every restart), so the hold is mpmng-upgrade's alone, and with a runlevel
# that says 2, as on a booted machine (else invoke-rc.d restarts nothing
# here: without the hold this check fails, the server restarted under load).
debs=$(ls "$tmp"/apache2_*.deb "$tmp"/apache2-bin_*.deb 2>/dev/null)
if [ "$(echo "$debs" | grep -c deb)" = 2 ]; then
    mkdir -p "$tmp/usr-sbin" && mount -t tmpfs tmpfs "$tmp/usr-sbin" \
        && cp -a /usr/sbin/. "$tmp/usr-sbin/" && rm -f "$tmp/usr-sbin/policy-rc.d" \
        && rm -f "$tmp/usr-sbin/runlevel" && printf '#!/bin/sh\necho N 2\n' >"$tmp/usr-sbin/runlevel" \
        && chmod 755 "$tmp/usr-sbin/runlevel" && mount --bind "$tmp/usr-sbin" /usr/sbin
    wrk -t1 -c16 -d10s http://127.0.0.1/file.bin >"$tmp/wrk-ka2" 2>&1 & ka=$!
    wrk -t1 -c16 -d10s -H "Connection: close" http://127.0.0.1/file.bin >"$tmp/wrk-new2" 2>&1 & new=$!
    wait_for 5 established 16
    pid0=$(cat /run/apache2/apache2.pid 2>/dev/null)
    stops0=$(grep -c 'caught SIGTERM' /var/log/apache2/error.log)
    # shellcheck disable=SC2086
    check "mpmng-upgrade --with dpkg -i apache2 apache2-bin, under load" \
        bash -c "mpmng-upgrade --with dpkg -i $(echo $debs) >'$tmp/apache2-upgrade.log' 2>&1"
    wait $ka $new
    sed 's/^/    /' "$tmp/apache2-upgrade.log" | grep -E 'mpmng-upgrade|Setting up|Unpacking'
    check "apache2 reinstalled and upgraded under load: no failed request" \
        no_failures "$tmp/wrk-ka2" "$tmp/wrk-new2"
    grep -h -E 'requests in|errors|Non-2xx' "$tmp/wrk-ka2" "$tmp/wrk-new2" | sed 's/^/    /'
    check "apache2's postinst restarted nothing (held); one new parent serves" \
        bash -c "p=\$(cat /run/apache2/apache2.pid); [ -n \"\$p\" ] && [ \"\$p\" != '$pid0' ] &&
                 [ \$(grep -c 'caught SIGTERM' /var/log/apache2/error.log) = '$stops0' ] &&
                 grep -q 'invoke-rc.d: policy-rc.d denied execution of restart' '$tmp/apache2-upgrade.log'"
    check "the held policy-rc.d is gone afterwards" test ! -e /usr/sbin/policy-rc.d
else
    bad "apache2 and apache2-bin packages of the installed version to reinstall (run.sh fetches them)"
fi

ctl stop
check "apache2 -k stop: the server is gone" wait_for 20 bash -c "! curl -s --max-time 1 http://127.0.0.1/ >/dev/null"
grep -E '\[(emerg|alert|crit)\]' /var/log/apache2/error.log && bad "no emerg/alert/crit in error.log" || ok "no emerg/alert/crit in error.log"
cp /var/log/apache2/error.log "$tmp/error.log" 2>/dev/null
exit 0
