#!/usr/bin/env bash
# shellcheck disable=SC2317  # functions run through check, wait_for and trap
# `make demo` and `make demo-stop` as a newcomer runs them first: from a
# fresh build directory (make's OUT=, as in a clean clone) and on a free
# port, so that a demo the user runs (out/, port 8080) is left alone.
# Checks the start message, a page, the MPM's buckets and the cache's
# numbers in server-status, the listener sockets, and that demo-stop ends
# every process.  Ends with "demo: N passed, N failed"; exit 1 on failure.
set -u
cd "$(dirname "$0")/../.." || exit 1
# A newcomer's shell has none of make check's settings (a sanitizer build,
# make's command-line variables).
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES SANITIZE MPMNG_OUT MPMNG_LD_PRELOAD \
      OUT PORT DOCROOT

passed=0 failed=0
check() {  # check DESCRIPTION COMMAND...: one result, COMMAND's status
    if "${@:2}"; then
        echo "ok: $1"; passed=$((passed + 1))
    else
        echo "FAIL: $1"; failed=$((failed + 1))
    fi
}
finish() {
    echo "demo: $passed passed, $failed failed"
    [ "$failed" -eq 0 ]
    exit
}
wait_for() {  # wait_for SECONDS COMMAND...: until COMMAND succeeds
    local end=$((SECONDS + $1)); shift
    until "$@"; do
        [ "$SECONDS" -lt "$end" ] || return 1
        sleep 0.1
    done
}
alive() {  # a pid, not a zombie (kill -0 0 would mean our own process group)
    [[ "$1" =~ ^[1-9][0-9]*$ ]] && kill -0 "$1" 2>/dev/null &&
        ! grep -qs '^State:.*zombie' "/proc/$1/status"
}
none_alive() { local p; for p in "$@"; do ! alive "$p" || return 1; done; }

tmp=$(mktemp -d /tmp/mpmng-demo-test.XXXXXX)
chmod 755 "$tmp"
out=$tmp/out
pidfile=$out/demo/run/httpd.pid
server=
cleanup() {
    if [ -e "$pidfile" ]; then make -s demo-stop OUT="$out" >/dev/null 2>&1; fi
    # demo-stop failed: end what this test started, by PID.
    if [ -n "$server" ] && alive "$server"; then
        local kids; kids=$(pgrep -P "$server")
        kill -TERM "$server" 2>/dev/null
        # shellcheck disable=SC2086
        wait_for 10 none_alive "$server" $kids || kill -KILL "$server" $kids 2>/dev/null
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP  # so that cleanup runs then too

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])')
base=http://127.0.0.1:$port

echo "--- make demo OUT=$out PORT=$port"
timeout 900 make demo OUT="$out" PORT="$port" >"$tmp/start.log" 2>&1
rc=$?
# The start message, or on failure what came before it.
if grep -q '^mpm-ng demo:' "$tmp/start.log"; then
    sed -n '/^mpm-ng demo:/,$p' "$tmp/start.log"
else
    tail -n 40 "$tmp/start.log"
fi
check "make demo exits 0" test "$rc" -eq 0
[ "$rc" -eq 0 ] || finish
server=$(cat "$pidfile" 2>/dev/null)
check "the server's pid is in $pidfile" alive "$server"
check "both modules built into the fresh OUT" \
    test -f "$out/mod_mpm_reuseport.so" -a -f "$out/mod_fhcache.so"
says_all() {
    local s rc=0
    for s in "$@"; do
        grep -qF -- "$s" "$tmp/start.log" || { echo "  not in the message: $s"; rc=1; }
    done
    return "$rc"
}
check "the start message names the page, server-status, the cache and how to stop" \
    says_all "mpm-ng demo: $base/" "$base/server-status" "FHCache On" \
        "make demo-stop OUT=$out"

page() { curl -fsS --max-time 10 "$base/" | grep -q 'mpm_reuseport'; }
check "GET / serves the demo page" page

status_html() {
    curl -fsS --max-time 10 "$base/server-status" >"$tmp/status.html" &&
        grep -q 'Server MPM: reuseport' "$tmp/status.html" &&
        grep -q '<h2>mpm_reuseport buckets</h2>' "$tmp/status.html" &&
        grep -q '<h2>mod_fhcache</h2>' "$tmp/status.html"
}
check "server-status: MPM reuseport, the buckets table, the mod_fhcache table" status_html

auto() { curl -fsS --max-time 10 "$base/server-status?auto" >"$tmp/auto"; }
field() { sed -n "s/^$1: //p" "$tmp/auto"; }
num() { local v; v=$(field "$1"); [[ "$v" =~ ^[0-9]+$ ]] && echo "$v" || echo -1; }
accepted() { local b n=0; for ((b = 0; b < buckets; b++)); do
    n=$((n + $(num "ReusePortBucket${b}Accepted"))); done; echo "$n"; }
auto
buckets=$(num ReusePortBuckets)
every_bucket_accepting() {
    local b
    [ "$buckets" -ge 1 ] || return 1
    for ((b = 0; b < buckets; b++)); do
        [ "$(num "ReusePortBucket${b}Accepting")" -ge 1 ] || return 1
    done
}
check "server-status?auto: $buckets bucket(s), each with a child accepting" \
    every_bucket_accepting
listeners=$(ss -Hltn "sport = :$port" | wc -l)
check "one listener socket per bucket ($listeners sockets, $buckets buckets)" \
    test "$listeners" -eq "$buckets"
check "server-status?auto: mod_fhcache is on (FHCacheMode $(field FHCacheMode))" \
    test -n "$(field FHCacheMode)"

# The page three times and its stylesheet twice on one connection (so one
# child): two misses fill the cache, three hits.  Children publish their
# counters to the totals about once a second.
before=$(accepted)
curl -fsS --max-time 10 "$base/" "$base/style.css" "$base/" "$base/style.css" "$base/" \
    >/dev/null
counted() {
    auto && [ "$(num FHCacheTotalHits)" -ge 3 ] && [ "$(num FHCacheTotalEntries)" -ge 2 ] &&
        [ "$(accepted)" -gt "$before" ]
}
check "server-status?auto: cache hits and accepted connections grow" wait_for 10 counted
echo "  FHCacheTotalHits $(field FHCacheTotalHits) (>= 3)," \
    "FHCacheTotalEntries $(field FHCacheTotalEntries) (>= 2)," \
    "accepted $(accepted) (> $before)"

echo "--- make demo-stop OUT=$out"
kids=$(pgrep -P "$server")
make demo-stop OUT="$out" >"$tmp/stop.log" 2>&1
rc=$?
cat "$tmp/stop.log"
said() { [ "$rc" -eq 0 ] && grep -qx "$1" "$2"; }  # rc 0 and the line $1 in file $2
check "make demo-stop exits 0 and says stopped, nothing killed" said "demo: stopped" "$tmp/stop.log"
# shellcheck disable=SC2086
check "the parent and its $(wc -w <<<"$kids") children are gone" \
    wait_for 10 none_alive "$server" $kids
refused() { ! curl -s --max-time 5 -o /dev/null "$base/" 2>/dev/null; }
check "nothing answers on port $port" wait_for 10 refused
check "the pidfile is removed" test ! -e "$pidfile"
make demo-stop OUT="$out" >"$tmp/stop2.log" 2>&1
rc=$?
check "make demo-stop again says not running" said "demo: not running" "$tmp/stop2.log"
finish
