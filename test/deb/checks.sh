# shellcheck shell=bash
# Sourced by test/deb/in_namespace.sh and test/deb/under_systemd.sh: how a
# check reports ("ok: ..." / "FAILED: ..." lines, counted by run.sh), waiting
# for a condition, and reading wrk's outputs.
ok() { echo "ok: $1"; }
bad() { echo "FAILED: $1"; }
check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }
wait_for() {  # $1 = seconds, rest = command
    local n=$(( $1 * 10 )); shift
    while [ $n -gt 0 ]; do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; n=$((n - 1)); done
    return 1
}
no_failures() {  # wrk outputs: every one ran and none reports an error
    local f
    for f in "$@"; do
        grep -Eq '^ +[0-9]+ requests in' "$f" || return 1
        ! grep -Eq 'Socket errors|Non-2xx' "$f" || return 1
    done
}
# At least $1 connections established to port 80 (the load has started).
established() { [ "$(ss -Htn state established '( sport = :80 )' | wc -l)" -ge "$1" ]; }
