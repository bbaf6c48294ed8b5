#!/usr/bin/env bash
# Smoke test of a cross-built httpd.exe under wine64:
#
#   build/win/smoke.sh [stock|ng]      (default: stock; run build/win/build.sh first)
#
# Starts build/win/out/<part>/bin/httpd.exe (parent + child process, as on Windows;
# MPMNG_WIN_SMOKE_X=1 runs it single-process with -X) with a generated config on a free
# 127.0.0.1 port, fetches a small and a 256 KiB file over one keep-alive connection with
# curl, compares the bytes, stops httpd by PID and exits 0 (pass) or 1 (fail).
# Wine maps the Linux root to drive Z:, so Linux paths are given as Z:/path.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PART=${1:-stock}
case "$PART" in stock|ng) ;; *) echo "usage: $0 [stock|ng]" >&2; exit 2 ;; esac
PREFIX=$HERE/out/$PART
[ -x "$PREFIX/bin/httpd.exe" ] || { echo "smoke: $PREFIX/bin/httpd.exe missing; run build/win/build.sh $PART" >&2; exit 1; }
PREFIX=$(readlink -f "$PREFIX")
WINE=/usr/lib/wine/wine64
export WINEPREFIX=$HERE/cache/wineprefix WINEDEBUG=-all
if [ ! -f "$WINEPREFIX/system.reg" ]; then
  mkdir -p "$WINEPREFIX"
  "$WINE" wineboot -i >/dev/null 2>&1
fi

TMP=$(mktemp -d /tmp/mpmng-win-smoke.XXXXXX)
MARK=$(basename "$TMP")      # in the environment of every process we start (wine passes it on)
HPID=
winpath() { echo "Z:$1"; }

# Our httpd processes: the wine process we started and every httpd.exe carrying our marker
# (the httpd child is spawned by wine detached from our process group and parent).
# Wine's own helpers (wineserver, services.exe, ...) are left alone: they exit by
# themselves a few seconds after the last wine program in this prefix is gone.
our_pids() {
  local p
  if [ -n "$HPID" ] && [ -d "/proc/$HPID" ]; then echo "$HPID"; fi
  for p in /proc/[0-9]*; do
    p=${p#/proc/}
    [ "$p" != "$$" ] || continue
    { tr '\0' '\n' < "/proc/$p/environ"; } 2>/dev/null | grep -qx "MPMNG_SMOKE_MARK=$MARK" || continue
    { tr '\0' ' ' < "/proc/$p/cmdline"; } 2>/dev/null | grep -q 'httpd\.exe' || continue
    echo "$p"
  done
  return 0
}

stop_httpd() {
  local pids p
  pids=$(our_pids | sort -u)
  [ -n "$pids" ] || return 0
  kill -TERM $pids 2>/dev/null || true
  for _ in $(seq 1 20); do
    pids=$(for p in $pids; do if [ -d "/proc/$p" ]; then echo "$p"; fi; done)
    [ -n "$pids" ] || break
    sleep 0.1
  done
  if [ -n "$pids" ]; then kill -KILL $pids 2>/dev/null || true; fi
  return 0
}

cleanup() {
  local rc=$?
  stop_httpd
  if [ $rc = 0 ] && [ -z "${MPMNG_WIN_SMOKE_KEEP:-}" ]; then rm -rf "$TMP"; else echo "smoke: files kept in $TMP" >&2; fi
  exit $rc
}
trap cleanup EXIT

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$TMP/htdocs" "$TMP/got"
echo "hello from httpd.exe ($PART) under wine" > "$TMP/htdocs/hello.txt"
head -c 262144 /dev/urandom > "$TMP/htdocs/blob.bin"

cat > "$TMP/httpd.conf" <<EOF
ServerRoot "$(winpath "$PREFIX")"
ServerName 127.0.0.1
Listen 127.0.0.1:$PORT
LoadModule authz_core_module modules/mod_authz_core.so
LoadModule mime_module modules/mod_mime.so
LoadModule dir_module modules/mod_dir.so
LoadModule log_config_module modules/mod_log_config.so
TypesConfig conf/mime.types
PidFile "$(winpath "$TMP")/httpd.pid"
ErrorLog "$(winpath "$TMP")/error.log"
LogLevel info
LogFormat "%h %l %u %t \"%r\" %>s %b" common
CustomLog "$(winpath "$TMP")/access.log" common
DocumentRoot "$(winpath "$TMP")/htdocs"
<Directory />
    Require all denied
</Directory>
<Directory "$(winpath "$TMP")/htdocs">
    Require all granted
</Directory>
EOF

ARGS=(-f "$(winpath "$TMP")/httpd.conf")
[ -n "${MPMNG_WIN_SMOKE_X:-}" ] && ARGS=(-X "${ARGS[@]}")
MPMNG_SMOKE_MARK=$MARK setsid "$WINE" "$PREFIX/bin/httpd.exe" "${ARGS[@]}" \
  >"$TMP/stdout.log" 2>&1 </dev/null &
HPID=$!
t0=$(date +%s)

fail() {
  echo "smoke($PART): FAIL: $*" >&2
  for f in stdout.log error.log; do
    [ -s "$TMP/$f" ] && { echo "---- $f ----" >&2; tail -n 20 "$TMP/$f" >&2; }
  done
  exit 1
}

# wait for the port (up to 60 s; first start of a wine prefix is slow)
up=0
for _ in $(seq 1 600); do
  kill -0 "$HPID" 2>/dev/null || fail "httpd.exe exited during start-up"
  if curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$PORT/hello.txt"; then up=1; break; fi
  sleep 0.1
done
[ $up = 1 ] || fail "no answer on 127.0.0.1:$PORT after 60 s"
t_up=$(( $(date +%s) - t0 ))

# both files over one connection (keep-alive), then compare bytes and status codes
codes=$(curl -sS --max-time 30 -w '%{http_code} ' \
  -o "$TMP/got/hello.txt" "http://127.0.0.1:$PORT/hello.txt" \
  -o "$TMP/got/blob.bin"  "http://127.0.0.1:$PORT/blob.bin") || fail "curl failed"
[ "$codes" = "200 200 " ] || fail "HTTP status codes: $codes"
cmp -s "$TMP/htdocs/hello.txt" "$TMP/got/hello.txt" || fail "hello.txt differs"
cmp -s "$TMP/htdocs/blob.bin" "$TMP/got/blob.bin" || fail "blob.bin differs"
code=$(curl -s -o /dev/null --max-time 10 -w '%{http_code}' "http://127.0.0.1:$PORT/missing") || true
[ "$code" = 404 ] || fail "expected 404 for /missing, got $code"

if [ -n "${MPMNG_WIN_SMOKE_DEBUG:-}" ]; then
  for p in $(our_pids | sort -u); do echo "smoke: our process $p: $(tr '\0' ' ' < /proc/$p/cmdline 2>/dev/null)"; done
fi
mpm=$(grep -o 'mpm_winnt[a-z_]*_module' "$PREFIX/build-info.txt" | head -n1)
echo "smoke($PART): PASS ($mpm; up after ${t_up}s on 127.0.0.1:$PORT; 2 files byte-identical over keep-alive, 404 ok)"
