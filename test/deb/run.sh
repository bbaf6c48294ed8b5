#!/usr/bin/env bash
# `make check` stage "deb": builds the packages (make deb: dpkg-buildpackage
# and lintian), installs them on this machine's stock apache2 with dpkg,
# then, in private mount, network and PID namespaces (so the machine's
# /etc/apache2, runtime directories and network are untouched), enables
# them the Debian way (a2dismod mpm_event; a2enmod mpm_reuseport fhcache),
# starts apache2 from /etc/apache2 on the namespace's loopback, serves a
# file through the cache, restarts, upgrades (mpmng-upgrade), reinstalls
# the packages under load and upgrades again, reinstalls apache2 itself
# under load through `mpmng-upgrade --with dpkg -i ...`, and stops; then
# the same with Debian's apache2.service under systemd (its own PID 1 in
# other namespaces: systemd_boot.sh, under_systemd.sh); finally purges the
# packages.
# Root only (it installs packages).  Last line: "deb: N passed, N failed".
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
out=$top/out/deb
passed=0 failed=0
say() { echo "deb: $*"; }
check() {
    local what=$1; shift
    if "$@"; then passed=$((passed + 1)); say "ok: $what"
    else failed=$((failed + 1)); say "FAILED: $what"; fi
}
finish() { say "$passed passed, $failed failed"; [ "$failed" -eq 0 ]; exit $?; }

if [ "$(id -u)" != 0 ]; then
    say "skipped: installing packages needs root"; finish
fi
check "make deb builds both packages, lintian reports no errors" \
    "$top/build/deb/build.sh"
mpm=$(ls "$out"/libapache2-mod-mpm-reuseport_*.deb 2>/dev/null | head -1)
fhc=$(ls "$out"/libapache2-mod-fhcache_*.deb 2>/dev/null | head -1)
[ -n "$mpm" ] && [ -n "$fhc" ] || { say "no packages to install"; failed=$((failed + 1)); finish; }

purge() { dpkg --purge libapache2-mod-mpm-reuseport libapache2-mod-fhcache >/dev/null 2>&1; }
trap purge EXIT
check "dpkg -i installs both on the stock apache2" \
    dpkg -i "$mpm" "$fhc"
check "installed, not enabled: .so, mods-available and systemd drop-in files, nothing in mods-enabled" \
    test -f /usr/lib/apache2/modules/mod_mpm_reuseport.so \
      -a -f /usr/lib/apache2/modules/mod_fhcache.so \
      -a -f /etc/apache2/mods-available/mpm_reuseport.load \
      -a -f /etc/apache2/mods-available/fhcache.conf \
      -a -x /usr/sbin/mpmng-upgrade \
      -a -f /lib/systemd/system/apache2.service.d/mpm-ng.conf \
      -a -f /lib/systemd/system/apache2@.service.d/mpm-ng.conf \
      -a ! -e /etc/apache2/mods-enabled/mpm_reuseport.load \
      -a ! -e /etc/apache2/mods-enabled/fhcache.load

# Everything below runs in the namespaces; it prints "ok:"/"FAILED:" lines.
sandbox=$(mktemp -d /tmp/mpmng-deb-XXXXXX)
chmod 755 "$sandbox"
# apache2's own packages, the installed version, for the namespace to
# reinstall under load (it has no network).
v=$(dpkg-query -W -f='${Version}' apache2 2>/dev/null)
(cd "$sandbox" && apt-get download -q "apache2=$v" "apache2-bin=$v") >"$sandbox/download.log" 2>&1 \
    || sed 's/^/  /' "$sandbox/download.log"
# A PID namespace too: whatever apache2 leaves behind ends with the script.
unshare --mount --net --pid --fork --mount-proc \
    bash "$top/test/deb/in_namespace.sh" "$sandbox" "$mpm" "$fhc" >"$sandbox/log" 2>&1
rc=$?
sed 's/^/  /' "$sandbox/log"
p=$(grep -c '^ok:' "$sandbox/log"); f=$(grep -c '^FAILED:' "$sandbox/log")
passed=$((passed + p)) failed=$((failed + f))
[ "$rc" -eq 0 ] || [ "$f" -gt 0 ] || { failed=$((failed + 1)); say "FAILED: the namespace script exited $rc"; }

# Under systemd: the same packages with Debian's apache2.service, the
# machine's systemd as PID 1 of its own namespaces (systemd_boot.sh: no unit
# of the machine's but apache2's runs there), the checks in under_systemd.sh.
under_systemd() {
    local box=$sandbox/systemd boot pid1='' log
    mkdir -p "$box" && chmod 755 "$box" && cp "$sandbox"/apache2*.deb "$box/" 2>/dev/null
    log=$box/log
    unshare --mount --net --pid --cgroup --fork --mount-proc \
        bash "$top/test/deb/systemd_boot.sh" "$top" "$box" >"$box/boot.log" 2>&1 &
    boot=$!
    for _ in $(seq 100); do
        pid1=$(pgrep -P "$boot" -x systemd) && break
        sleep 0.1
    done
    for _ in $(seq 100); do
        [ -n "$pid1" ] || break
        case $(nsenter -t "$pid1" -a systemctl show -p SystemState --value 2>/dev/null) in
            running|degraded) break ;;
        esac
        sleep 0.1
    done
    if [ -n "$pid1" ]; then
        timeout 300 nsenter -t "$pid1" -a bash /run/mpmng/top/test/deb/under_systemd.sh \
            /run/mpmng/box >"$log" 2>&1
        kill -9 "$pid1"
        wait "$boot" 2>/dev/null
    else
        wait "$boot" 2>/dev/null
        sed 's/^/  boot: /' "$box/boot.log"
        if grep -q '^systemd_boot: starting systemd' "$box/boot.log"; then
            # Everything was in place; systemd itself would not run here
            # (no cgroup rights, say): the machine's limit, not the package's.
            say "skipped under systemd: systemd did not stay up as PID 1 of a namespace here"
            return 0
        fi
        echo "FAILED: systemd_boot.sh prepared no systemd (boot log above)" >"$log"
    fi
    sed 's/^/  systemd: /' "$log"
    p=$(grep -c '^ok:' "$log"); f=$(grep -c '^FAILED:' "$log")
    passed=$((passed + p)) failed=$((failed + f))
    [ "$p" -gt 0 ] || { failed=$((failed + 1)); say "FAILED: no check ran under systemd"; }
}
under_systemd
rm -rf "$sandbox"

check "machine's /etc/apache2 untouched (mpm_reuseport not enabled outside)" \
    test ! -e /etc/apache2/mods-enabled/mpm_reuseport.load
check "dpkg --purge removes the modules and their mods-available files" \
    bash -c 'dpkg --purge libapache2-mod-mpm-reuseport libapache2-mod-fhcache >/dev/null &&
             test ! -e /usr/lib/apache2/modules/mod_mpm_reuseport.so &&
             test ! -e /etc/apache2/mods-available/mpm_reuseport.load &&
             test ! -e /etc/apache2/mods-available/fhcache.load &&
             test ! -e /lib/systemd/system/apache2.service.d/mpm-ng.conf'
trap - EXIT
finish
