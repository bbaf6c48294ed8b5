#!/usr/bin/env bash
# `make check` stage "deb": builds the packages (make deb: dpkg-buildpackage
# and lintian), installs them on this machine's stock apache2 with dpkg,
# then, in private mount, network and PID namespaces (so the machine's
# /etc/apache2, runtime directories and network are untouched), enables
# them the Debian way (a2dismod mpm_event; a2enmod mpm_reuseport fhcache),
# starts apache2 from /etc/apache2 on the namespace's loopback, serves a
# file through the cache, restarts, upgrades (mpmng-upgrade), reinstalls
# the packages under load and upgrades again, reinstalls apache2 itself
# under load through `mpmng-upgrade --with dpkg -i ...`, and stops; finally
# purges the packages.
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
check "installed, not enabled: .so and mods-available files, nothing in mods-enabled" \
    test -f /usr/lib/apache2/modules/mod_mpm_reuseport.so \
      -a -f /usr/lib/apache2/modules/mod_fhcache.so \
      -a -f /etc/apache2/mods-available/mpm_reuseport.load \
      -a -f /etc/apache2/mods-available/fhcache.conf \
      -a -x /usr/sbin/mpmng-upgrade \
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
rm -rf "$sandbox"

check "machine's /etc/apache2 untouched (mpm_reuseport not enabled outside)" \
    test ! -e /etc/apache2/mods-enabled/mpm_reuseport.load
check "dpkg --purge removes the modules and their mods-available files" \
    bash -c 'dpkg --purge libapache2-mod-mpm-reuseport libapache2-mod-fhcache >/dev/null &&
             test ! -e /usr/lib/apache2/modules/mod_mpm_reuseport.so &&
             test ! -e /etc/apache2/mods-available/mpm_reuseport.load &&
             test ! -e /etc/apache2/mods-available/fhcache.load'
trap - EXIT
finish
