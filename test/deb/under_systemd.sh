#!/usr/bin/env bash
# Run by test/deb/run.sh inside the namespaces systemd_boot.sh made (nsenter),
# systemd their PID 1: Debian's apache2.service with mpm-ng's drop-in runs
# mpm_reuseport; binary upgrades, a reload, apache2 itself reinstalled and
# systemctl restarts under load; the service follows each new parent and
# stops whole.  Then without the drop-in, to show what it is for, and the
# drop-in under mpm_event.  $1 = the scratch directory (/run/mpmng/box).
# Prints "ok: ..." / "FAILED: ..." lines.
set -uo pipefail
box=$1
# shellcheck source=test/deb/checks.sh
. "$(dirname "$0")/checks.sh"
pidfile=/run/apache2/apache2.pid
prop() { systemctl show apache2.service -p "$1" --value; }
main_is_pidfile() {
    local p
    p=$(cat "$pidfile" 2>/dev/null)
    [ -n "$p" ] && [ "$(prop MainPID)" = "$p" ] && [ "$(prop ActiveState)" = active ]
}
serves() { curl -s --max-time 2 -o /dev/null -w '%{http_code}' http://127.0.0.1/file.bin | grep -q 200; }
load() {  # $1 = output prefix: 16 kept-alive and 16 new-connection clients, 8 s
    wrk -t1 -c16 -d8s http://127.0.0.1/file.bin >"$box/$1-ka" 2>&1 &
    wrk -t1 -c16 -d8s -H "Connection: close" http://127.0.0.1/file.bin >"$box/$1-new" 2>&1 &
    wait_for 5 established 16
}
# A pid (not 0, whose kill -0 would be this process group) that runs no more.
gone() { [ "$1" -gt 0 ] && ! kill -0 "$1" 2>/dev/null; }
# A failed check says what systemd makes of the service (CI keeps only
# the lines that failed); the first also leaves systemd's and httpd's last
# words in the log.
told=
bad() {
    echo "FAILED: $1 [apache2.service $(prop ActiveState)/$(prop SubState)," \
        "Result=$(prop Result), MainPID=$(prop MainPID)]"
    [ -z "$told" ] || return 0
    told=1
    tail -n 12 "$box/console" 2>/dev/null | sed 's/^/    console| /'
    tail -n 12 /var/log/apache2/error.log 2>/dev/null | sed 's/^/    error.log| /'
}
export pidfile
export -f prop main_is_pidfile serves gone no_failures
cd /

check "systemd runs as PID 1 here" bash -c '[ "$(cat /proc/1/comm)" = systemd ]'
check "apache2.service has mpm-ng's drop-in (PIDFile=$pidfile)" \
    bash -c "[ \"\$(systemctl show apache2.service -p PIDFile --value)\" = $pidfile ]"
systemctl start apache2.service
check "systemctl start apache2: active, MainPID is the PidFile's pid, it serves" \
    wait_for 20 bash -c "main_is_pidfile && serves"
first=$(prop MainPID)

load upgrades
for i in 1 2 3; do
    check "mpmng-upgrade $i of 3 under load (systemd's apache2.service)" mpmng-upgrade --timeout 20
done
wait
check "three upgrades under load: no failed request (wrk, 16 kept-alive, 16 new connections)" \
    no_failures "$box/upgrades-ka" "$box/upgrades-new"
grep -h -E 'requests in|errors|Non-2xx' "$box/upgrades-ka" "$box/upgrades-new" | sed 's/^/    /'
check "the service followed: still active, MainPID the new parent's, the first parent gone" \
    wait_for 20 bash -c "main_is_pidfile && [ \"\$(prop MainPID)\" != $first ] && gone $first"

# An upgrade while the old server still sends a long download: the new
# parent tells systemd at once (MAINPID=), so the old one's exit later,
# even while a next upgrade has the PidFile aside, does not end the service
# (systemd alone re-read the PidFile then, found none and stopped it all).
head -c 100M /dev/zero >/var/www/html/big.bin
curl -s --limit-rate 1M -o /dev/null http://127.0.0.1/big.bin &
download=$!
wait_for 5 established 1
old=$(prop MainPID)
mpmng-upgrade --timeout 20 >/dev/null
new=$(cat "$pidfile")
check "an upgrade while the old parent sends a download: MainPID the new parent's at once" \
    wait_for 5 bash -c "[ \"\$(prop MainPID)\" = '$new' ] && [ '$new' != '$old' ] && kill -0 $old"
mv "$pidfile" "$pidfile.aside"
kill "$download"; wait "$download" 2>/dev/null
wait_for 20 gone "$old"
check "... its exit while the PidFile is moved aside leaves the service active" \
    bash -c "gone $old && [ \"\$(prop ActiveState)\" = active ] && [ \"\$(prop MainPID)\" = '$new' ]"
mv "$pidfile.aside" "$pidfile"
rm -f /var/www/html/big.bin
check "... and the new server serves" wait_for 10 serves

gen0=$(curl -s --max-time 2 'http://127.0.0.1/server-status?auto' | sed -n 's/^ParentServerConfigGeneration: //p')
main=$(prop MainPID)
systemctl reload apache2.service
check "systemctl reload (graceful): a new generation, the same MainPID" wait_for 20 bash -c \
    "g=\$(curl -s --max-time 2 'http://127.0.0.1/server-status?auto' | sed -n 's/^ParentServerConfigGeneration: //p');
     [ -n \"\$g\" ] && [ \"\$g\" != '$gen0' ] && [ \"\$(prop MainPID)\" = $main ]"

# apache2 itself, the documented way, where systemd runs: its postinst asks
# deb-systemd-invoke to restart apache2.service; mpmng-upgrade's hold
# refuses, then it hands over.
debs=$(ls "$box"/apache2_*.deb "$box"/apache2-bin_*.deb 2>/dev/null)
if [ "$(echo "$debs" | grep -c deb)" = 2 ]; then
    main=$(prop MainPID)
    load reinstall
    # shellcheck disable=SC2086
    check "mpmng-upgrade --with dpkg -i apache2 apache2-bin, under load, under systemd" \
        bash -c "mpmng-upgrade --with dpkg -i $(echo $debs) >'$box/apache2-upgrade.log' 2>&1"
    wait
    grep -E 'mpmng-upgrade|Setting up|policy-rc.d' "$box/apache2-upgrade.log" | sed 's/^/    /'
    check "apache2 reinstalled under systemd and load: no failed request" \
        no_failures "$box/reinstall-ka" "$box/reinstall-new"
    grep -h -E 'requests in|errors|Non-2xx' "$box/reinstall-ka" "$box/reinstall-new" | sed 's/^/    /'
    check "the postinst's restart was refused" \
        grep -q "policy-rc.d returned 101, not running 'restart apache2.service'" \
        "$box/apache2-upgrade.log"
    check "the service follows the new parent; the old one gone" \
        wait_for 20 bash -c "main_is_pidfile && [ \"\$(prop MainPID)\" != $main ] && gone $main"
else
    bad "apache2 and apache2-bin packages of the installed version to reinstall (run.sh fetches them)"
fi

# systemctl restart: a stop and a start, the listening sockets kept in
# systemd's file descriptor store meanwhile (the drop-in asks for it).
check "the listening sockets are in systemd's store (FDSTORE)" \
    bash -c "[ \"\$(prop NFileDescriptorStore)\" -ge 2 ]"
echo "    $(prop NFileDescriptorStore) socket(s) in the store"
load restarts
for i in 1 2 3; do
    main=$(prop MainPID)
    systemctl restart apache2.service
    check "systemctl restart $i of 3 under load: active again, a new main process" \
        wait_for 20 bash -c "main_is_pidfile && [ \"\$(prop MainPID)\" != $main ] && gone $main"
done
wait
check "three systemctl restarts under load: no failed request, no refused connection" \
    no_failures "$box/restarts-ka" "$box/restarts-new"
grep -h -E 'requests in|errors|Non-2xx' "$box/restarts-ka" "$box/restarts-new" | sed 's/^/    /'
check "the restarted server took its sockets from systemd's store" \
    grep -q "took over [0-9]* listening socket(s) from systemd's file descriptor store" \
    /var/log/apache2/error.log

# apache2 reinstalled the plain way (its postinst restarts the service):
# under systemd with the drop-in that restart fails nothing either.
if [ "$(echo "$debs" | grep -c deb)" = 2 ]; then
    main=$(prop MainPID)
    load plain-dpkg
    # shellcheck disable=SC2086
    dpkg -i $debs >"$box/plain-dpkg.log" 2>&1
    wait
    check "plain dpkg -i apache2 apache2-bin under load: the postinst restarted the service" \
        wait_for 20 bash -c "main_is_pidfile && [ \"\$(prop MainPID)\" != $main ]"
    check "... and no request failed (the restart through systemd's store)" \
        no_failures "$box/plain-dpkg-ka" "$box/plain-dpkg-new"
    grep -h -E 'requests in|errors|Non-2xx' "$box/plain-dpkg-ka" "$box/plain-dpkg-new" \
        | sed 's/^/    /'
fi

systemctl stop apache2.service
check "systemctl stop: inactive, no apache2 process left" \
    wait_for 20 bash -c "[ \"\$(prop ActiveState)\" = inactive ] && ! pgrep -x apache2"

check "after the stop systemd holds no socket: a connection is refused" \
    bash -c "[ \"\$(prop NFileDescriptorStore)\" = 0 ] && ! curl -s --max-time 2 http://127.0.0.1/"

# Without the drop-in (what Debian's unit alone does): the old parent's exit
# ends the service and systemd stops the rest, the new server included.
mv $box/units/apache2.service.d $box/units/drop-in.aside
systemctl daemon-reload
systemctl start apache2.service
wait_for 20 serves
old=$(prop MainPID)
mpmng-upgrade --timeout 20 >/dev/null
check "without the drop-in an upgrade ends the service (why the package ships it)" \
    wait_for 20 bash -c "gone $old && ! serves && [ \"\$(prop ActiveState)\" != active ]"
# ... and a systemctl restart under load cuts and refuses (a control for
# the restarts above; the numbers are reported).
systemctl start apache2.service
wait_for 20 serves
load plain-restart
systemctl restart apache2.service
wait
check "without the drop-in a systemctl restart under load fails requests (control)" \
    bash -c "! no_failures '$box/plain-restart-ka' '$box/plain-restart-new'"
grep -h -E 'requests in|errors|Non-2xx' "$box/plain-restart-ka" "$box/plain-restart-new" \
    | sed 's/^/    /'
systemctl stop apache2.service
mv $box/units/drop-in.aside $box/units/apache2.service.d
systemctl daemon-reload

# The drop-in under a stock MPM (mpm_event): start, restart, stop as usual.
a2dismod -q -f mpm_reuseport >/dev/null 2>&1
a2enmod -q mpm_event >/dev/null 2>&1
systemctl start apache2.service
check "with the drop-in and mpm_event: systemctl start serves" \
    wait_for 20 bash -c "main_is_pidfile && serves && ! grep -q mod_mpm_reuseport /proc/\$(prop MainPID)/maps"
main=$(prop MainPID)
systemctl restart apache2.service
check "... systemctl restart: a new main process serves" \
    wait_for 20 bash -c "main_is_pidfile && serves && [ \"\$(prop MainPID)\" != $main ]"
systemctl stop apache2.service
check "... systemctl stop: inactive, nothing left" \
    wait_for 20 bash -c "[ \"\$(prop ActiveState)\" = inactive ] && ! pgrep -x apache2"
grep -E '\[(emerg|alert|crit)\]' /var/log/apache2/error.log && bad "no emerg/alert/crit in error.log" \
    || ok "no emerg/alert/crit in error.log"
exit 0
