"""Shared helpers for the mpm_reuseport integration tests.

Everything a test needs besides its own assertions lives here, once:
the MPM choice, the per-test private httpd with guaranteed cleanup and
crash/sanitizer checks, raw HTTP over sockets, load generation with real
clients (ab, wrk) and parsing of their results, listener inspection with
ss, access-log and TCP-counter helpers.
"""
import datetime
import glob
import hashlib
import os
import pwd
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import unittest

from mpmng_py import ROOT, privhttpd

# Which MPM the suite runs against: our reuseport MPM by default; a stock
# one (worker, event) to check the suite itself.
MPM = os.environ.get("MPMNG_TEST_MPM", "reuseport")
IS_REUSEPORT = MPM == "reuseport"
NCPU = os.sysconf("SC_NPROCESSORS_ONLN")
OUT = privhttpd.OUT

# Per-test watchdog (seconds): a hung test fails instead of hanging the suite.
TEST_TIMEOUT = int(os.environ.get("MPMNG_TEST_TIMEOUT", "120"))

# Signals in "exit signal X" lines that mean a crash (not our own kills).
CRASH_RE = re.compile(r"exit signal (Segmentation fault|Aborted|Bus error|"
                      r"Illegal instruction|Floating point exception)")


def mpm_available(name):
    """Whether this httpd can run MPM name: in a build with an MPM linked
    in (the in-tree build) only that one; otherwise one whose module is
    there."""
    if privhttpd.STATIC_MPM:
        return name == privhttpd.STATIC_MPM
    return os.path.exists(privhttpd.MPMS[name][1])


# What mod_http2 (httpd 2.4.68) loses of a busy HTTP/2 connection when its
# child stops, under every MPM: (1) after its shutdown notice (GOAWAY
# 2^31-1) its stream callback refuses a new stream with an error code that
# nghttp2 treats as fatal (h2_session.c on_begin_headers_cb, from
# icing/mod_h2 #212), so a stream the client sent before the notice reached
# it ends the connection and every stream open on it; (2) in its WAIT
# state it ends the session with a final GOAWAY naming a stream it read
# but never scheduled.  Once per stopping connection at most: the streams
# a client of H2Clients keeps open (4).  Tests of HTTP/2 clients across
# stops allow this many per connection that was open at the stop.
H2_RACE_LOST = 4


def needs_modules(*names):
    """Skip where httpd's module directory lacks one of these modules (the
    in-tree build has no mod_http2, for one)."""
    missing = [n for n in names
               if not os.path.exists(os.path.join(privhttpd.SYSMODS, "mod_%s.so" % n))]
    return unittest.skipIf(missing, "no mod_%s in %s" % (", mod_".join(missing),
                                                          privhttpd.SYSMODS))


def h2c_file_directives():
    """For a server whose HTTP/2 cleartext (h2c) clients fetch files: the
    mod_http2 of httpd 2.4.55 to 2.4.67 (2.0.x before 2.0.42) holds about
    four descriptors per file response of such a connection until it ends
    (mod_h2 issue 325), and a busy one runs out of them under mpm_event as
    under ours (4,096 in 1,000 responses here); H2CopyFiles On copies the
    data instead, as later releases do on such connections."""
    if (2, 4, 55) <= privhttpd.httpd_version() < (2, 4, 68):
        return "H2CopyFiles On\n"
    return ""


def needs_httpd(version, why):
    """Skip where the httpd under test (APACHE2) is older than version
    (a (2, 4, N) tuple): what the test checks needs a feature of that
    httpd; why names it.  The skip message is the per-version list of
    what does not apply there (make compat prints it)."""
    have = privhttpd.httpd_version()
    return unittest.skipIf(have < version, "httpd %s: needs %s+ (%s)" % (
        ".".join(map(str, have)), ".".join(map(str, version)), why))


def reuseport_only(cls_or_fn):
    """Skip for stock MPMs: the test checks reuseport-specific behaviour."""
    return unittest.skipUnless(
        IS_REUSEPORT, "reuseport-specific (MPMNG_TEST_MPM=%s)" % MPM)(cls_or_fn)


def mpm_directives(start=None, server_limit=None, thread_limit=None,
                   threads=None, max_workers=None, min_spare=None,
                   max_spare=None, buckets=None, reuseport=None, extra=""):
    """MPM configuration text.  ReusePortBuckets/ReusePort are emitted only
    for the reuseport MPM, so the same test can run on stock worker/event
    (where they would be unknown directives)."""
    lines = []
    for name, val in (("ServerLimit", server_limit), ("ThreadLimit", thread_limit),
                      ("StartServers", start), ("ThreadsPerChild", threads),
                      ("MaxRequestWorkers", max_workers),
                      ("MinSpareThreads", min_spare),
                      ("MaxSpareThreads", max_spare)):
        if val is not None:
            lines.append("%s %s" % (name, val))
    if IS_REUSEPORT:
        if buckets is not None:
            lines.append("ReusePortBuckets %s" % buckets)
        if reuseport is not None:
            lines.append("ReusePort %s" % ("on" if reuseport else "off"))
    if extra:
        lines.append(extra)
    return "\n".join(lines) + "\n"


def access_log_directives(path):
    """Access log with the serving child's PID first on each line."""
    return ('LogFormat "%%P %%>s %%B \\"%%r\\"" pidlog\n'
            'CustomLog %s pidlog\n' % path)


def cgi_directives(h):
    """ScriptAlias /cgi-bin/ to <instance>/cgi-bin (needs module cgid)."""
    d = os.path.join(h.dir, "cgi-bin")
    return ("ScriptAlias /cgi-bin/ %s/\n<Directory %s>\n  Require all granted\n"
            "</Directory>\n" % (d, d))


# ---- CGI scripts (run as www-data by Debian's python3) ---------------------
# The scripts are files in test/integration/cgi/; tests install them into an
# instance's cgi-bin by content (HttpdTestCase.httpd(cgi={name: text})).
CGI_DIR = os.path.join(ROOT, "test", "integration", "cgi")


def _cgi(name):
    with open(os.path.join(CGI_DIR, name)) as f:
        return f.read()


CGI_BODY = _cgi("body.py")   # the request body's length and sha256 (?wait=S: read later)
CGI_FDS = _cgi("fds.py")     # lists its open descriptors, uid and gid
CGI_SLOW = _cgi("slow.py")   # "begin", sleeps QUERY_STRING seconds (2), "end"


# ---- the test case base ------------------------------------------------------
def _built_sanitized():
    try:
        with open(os.path.join(OUT, ".variant")) as f:
            return f.read().strip() == "san"
    except OSError:
        return False


# Our modules built with ASan/UBSan (make SANITIZE=1): correctness holds,
# timing targets do not (a restart costs several times the CPU).
SANITIZED = _built_sanitized()


def _sanitizer_reports():
    # out/asan.* and out/ubsan.* always, and wherever a caller's log_path points.
    return (set(glob.glob(os.path.join(OUT, "asan.*")) + glob.glob(os.path.join(OUT, "ubsan.*")))
            | privhttpd.sanitizer_reports())


class _Watchdog(Exception):
    pass


class HttpdTestCase(unittest.TestCase):
    """A test that starts private httpd instances.  Every instance is
    stopped by PID (with its children) whatever happens; afterwards the test
    fails if any server process was left over, if a child crashed, or if a
    sanitizer report appeared in out/."""

    def setUp(self):
        self._san_before = _sanitizer_reports()
        # Registered first, so it runs last: after every httpd is stopped.
        self.addCleanup(self._check_sanitizers)
        self._old_alarm = signal.signal(signal.SIGALRM, self._on_alarm)
        signal.alarm(TEST_TIMEOUT)
        self.addCleanup(self._cancel_alarm)

    def _on_alarm(self, signum, frame):
        raise _Watchdog("test exceeded %ds watchdog" % TEST_TIMEOUT)

    def _cancel_alarm(self):
        signal.alarm(0)
        signal.signal(signal.SIGALRM, self._old_alarm)

    def _check_sanitizers(self):
        new = sorted(_sanitizer_reports() - self._san_before)
        if new:
            text = []
            for path in new:
                with open(path, errors="replace") as f:
                    text.append("==== %s ====\n%s" % (path, f.read()))
            print("\n".join(text), file=sys.stderr)
            self.fail("sanitizer report(s) appeared: %s" % ", ".join(new))

    def _failed_so_far(self):
        """Whether this test already failed (from a cleanup: unittest resets
        _outcome.success while cleanups run, so look at the recorded
        results; Python < 3.11 keeps them in _outcome.errors until later)."""
        outcome = getattr(self, "_outcome", None)
        if outcome is None:
            return False
        recorded = [t for t, _ in getattr(outcome, "errors", []) if _]
        result = getattr(outcome, "result", None)
        if result is not None:
            recorded += [t for t, _ in result.failures + result.errors]
        return any(t is self or getattr(t, "test_case", None) is self for t in recorded)

    def httpd(self, directives="", mpm=None, modules=(), files=None, cgi=None,
              access_log=False, start=True, reference=False, cgi_by="cgid", **kw):
        """Create (and by default start) a private httpd; its cleanup is
        registered before starting, so a failed start is cleaned up too.
        files: {docroot path: content}; cgi: {name: script} served under
        /cgi-bin/ by mod_cgid (cgi_by="cgi": mod_cgi, which forks scripts
        from the child that took the request); access_log: log "%P status bytes request" to
        h.access_log.  reference: a stock httpd with none of our modules,
        run for comparison; a crash of its own is reported, not failed
        (mpm_event's children can crash when stopped with busy workers,
        with or without us: docs/mod_fhcache.md).  Other keywords go to
        privhttpd.Httpd."""
        modules = list(modules) + ([cgi_by] if cgi else [])
        h = privhttpd.Httpd(mpm=mpm or MPM, modules=modules, **kw)
        h.reference = reference
        if reference and (h.mpm[1].startswith(OUT) or OUT in directives):
            raise ValueError("a reference server runs no module of ours")
        self.addCleanup(self._finish_httpd, h)
        extra = ""
        if cgi:
            extra += cgi_directives(h)
            for name, text in cgi.items():
                h.write_file(name, text, mode=0o755, base="cgi-bin")
        h.access_log = os.path.join(h.dir, "logs", "access_log") if access_log else None
        if access_log:
            extra += access_log_directives(h.access_log)
        h.directives = directives + extra
        for name, data in (files or {}).items():
            h.write_file(name, data)
        if start:
            h.start()
        return h

    def _finish_httpd(self, h):
        died = h.pid if h.pid and not privhttpd.pid_alive(h.pid) else None
        self._let_stock_mpm_close_connections(h)
        leftover = h.stop()
        stray = h.pidfile_parent()   # an upgrade's parent the test did not follow
        if stray:
            h.pid = stray
            leftover += h.stop()
        log = h.log()
        crashes = CRASH_RE.findall(log)
        if died:
            crashes.append("the parent (pid %d) died during the test: %s"
                           % (died, privhttpd.how_it_ended(died)))
        if crashes and getattr(h, "crashes_expected", False):
            crashes = []            # the test made them and checks them itself
        if crashes and getattr(h, "reference", False):
            print("\n    note: the stock reference server crashed (%s); not ours" %
                  ", ".join(crashes), file=sys.stderr)
            crashes = []
        if self._failed_so_far() or leftover or crashes or stray:
            print("\n---- error log of %s (%s) ----\n%s" % (
                h.dir, self.id(), h.log_tail(60)), file=sys.stderr)
        if crashes or self._failed_so_far():
            cores = privhttpd.core_backtraces(h.core_dir, h.binary,
                                              keep=bool(os.environ.get("MPMNG_KEEP")))
            if cores:
                print("\n---- cores of %s ----\n%s" % (h.dir, cores), file=sys.stderr)
        if os.environ.get("MPMNG_KEEP"):
            print("kept %s" % h.dir, file=sys.stderr)
        else:
            h.cleanup()
        self.assertEqual(leftover, [], "server processes left after stop "
                         "(SIGKILLed now): %s" % leftover)
        self.assertFalse(crashes, "a server process crashed: %s" % crashes)
        self.assertFalse(stray, "the PidFile's parent %s outlived the test's stop (an "
                         "upgrade the test did not follow; stopped now)" % stray)

    @staticmethod
    def _let_stock_mpm_close_connections(h):
        """Stock mpm_event (and worker) children can crash when SIGTERM
        finds them closing connections (docs/mod_fhcache.md, "Stopping
        under mpm_event and mpm_worker"; with or without our modules): give
        such a server up to 5 s to close what the test's clients left, so
        a test checks its own subject, not that race."""
        if h.mpm[0] not in ("mpm_event_module", "mpm_worker_module") or not h.pid:
            return
        deadline = time.monotonic() + 5
        while h.connection_count() and time.monotonic() < deadline:
            time.sleep(0.05)

    def wait_workers(self, h, n, timeout=20):
        """Wait until mod_status counts n started worker threads
        (BusyWorkers + IdleWorkers) in the current generation.  A timeout
        says what the server showed last (its scoreboard, its children)."""
        seen = {}

        def started():
            seen.clear()
            seen.update(h.status())
            return started_count(seen) == n
        try:
            return self.wait_until(started, timeout, "BusyWorkers+IdleWorkers == %d" % n,
                                   interval=0.1)
        except AssertionError as e:
            raise AssertionError("%s; last seen: BusyWorkers %s, IdleWorkers %s, "
                                 "Scoreboard %s; children %s; error log tail:\n%s" % (
                                     e, seen.get("BusyWorkers"), seen.get("IdleWorkers"),
                                     seen.get("Scoreboard"), h.children(),
                                     h.log()[-2000:])) from None

    def wait_gone(self, pids, timeout, what):
        """Wait until none of pids is alive (zombies count as gone)."""
        deadline = time.monotonic() + timeout
        while any(privhttpd.pid_alive(p) for p in pids):
            if time.monotonic() > deadline:
                self.fail("%s did not exit within %ss; still there: %s" % (
                    what, timeout, {p: proc_state(p) for p in pids if privhttpd.pid_alive(p)}))
            time.sleep(0.02)

    def wait_until(self, cond, timeout, what, interval=0.05):
        """Poll cond() until it returns a true value; fail after timeout."""
        deadline = time.monotonic() + timeout
        while True:
            expired = time.monotonic() >= deadline     # then one last look
            val = cond()
            if val:
                return val
            if expired:
                self.fail("timed out after %.1fs waiting for %s" % (timeout, what))
            time.sleep(interval)


def all_threads_stopped(pid):
    """Whether every thread of pid is stopped (state T in /proc)."""
    states = []
    for tid in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
            states.append(f.read().rsplit(")", 1)[1].split()[0])
    return bool(states) and all(st in ("T", "t") for st in states)


def wait_for_log(h, text, timeout):
    """True once text appears in h's error log (False after timeout)."""
    deadline = time.monotonic() + timeout
    while True:
        expired = time.monotonic() >= deadline          # then one last look
        if text in h.log():
            return True
        if expired:
            return False
        time.sleep(0.05)


_LOG_STAMP = re.compile(r"^\[(\w{3} \w{3} \d{2} \d{2}:\d{2}:\d{2}\.\d+ \d{4})\]")


def log_times(log, text):
    """The times (seconds since the epoch, as time.time()) of the error
    log's lines that contain text, in order."""
    times = []
    for line in log.splitlines():
        m = _LOG_STAMP.match(line)
        if m and text in line:
            stamp = datetime.datetime.strptime(m.group(1), "%a %b %d %H:%M:%S.%f %Y")
            times.append(stamp.timestamp())
    return times


def started_count(st):
    """Started worker threads in a server-status?auto dict."""
    return int(st.get("BusyWorkers", 0)) + int(st.get("IdleWorkers", 0))


def started_workers(h):
    return started_count(h.status())


# ---- raw HTTP ----------------------------------------------------------------
def connect(host, port, timeout=10):
    return socket.create_connection((host, port), timeout=timeout)


def busy_with_cgi(h, n, seconds, timeout=15):
    """n connections, each running CGI_SLOW for `seconds` (its "begin"
    arrived, so a worker is inside it): [(sock, ResponseReader)]."""
    busy = []
    for _ in range(n):
        s = connect(h.host, h.port, timeout=timeout)
        s.sendall(request_bytes("GET", "/cgi-bin/slow.py?%s" % seconds, h.host))
        rd = ResponseReader(s)
        rd.wait_for(b"begin")
        busy.append((s, rd))
    return busy


def request_bytes(method, path, host="localhost", headers=(), body=b""):
    lines = ["%s %s HTTP/1.1" % (method, path), "Host: %s" % host]
    lines += ["%s: %s" % kv for kv in headers]
    if body:
        lines.append("Content-Length: %d" % len(body))
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


class Response:
    def __init__(self, status, reason, headers, body):
        self.status, self.reason, self.headers, self.body = status, reason, headers, body

    def header(self, name, default=None):
        return self.headers.get(name.lower(), default)

    def __repr__(self):
        return "<Response %d %s, %d body bytes>" % (self.status, self.reason, len(self.body))


class ResponseReader:
    """Reads consecutive HTTP/1.1 responses from one socket (keep-alive,
    pipelining).  head=True for responses to HEAD (no body)."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""
        self.eof = False

    def fill(self):
        """Read what the socket has (blocking up to its timeout)."""
        data = self.sock.recv(1 << 16)
        if not data:
            self.eof = True
            raise EOFError("connection closed by server")
        self.buf += data

    def wait_for(self, marker, timeout=10):
        """Read until marker has arrived (e.g. the first part of a slow
        response); AssertionError after timeout."""
        deadline = time.monotonic() + timeout
        while marker not in self.buf:
            if time.monotonic() > deadline:
                raise AssertionError("no %r within %ss: %r" % (marker, timeout, self.buf[:200]))
            self.fill()

    def wait_close(self, timeout):
        """Read (and keep) data until the server closes the connection (EOF or
        reset).  Returns the seconds that took, or None if it stayed open."""
        t0 = time.monotonic()
        old = self.sock.gettimeout()
        try:
            while True:
                left = timeout - (time.monotonic() - t0)
                if left <= 0:
                    return None
                self.sock.settimeout(left)
                try:
                    self.fill()
                except (EOFError, ConnectionError):
                    return time.monotonic() - t0
                except socket.timeout:
                    return None
        finally:
            self.sock.settimeout(old)

    def _read_until(self, sep):
        while sep not in self.buf:
            self.fill()
        head, self.buf = self.buf.split(sep, 1)
        return head

    def _read_exact(self, n):
        while len(self.buf) < n:
            self.fill()
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def read_response(self, head=False):
        raw = self._read_until(b"\r\n\r\n").decode("latin-1")
        lines = raw.split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/"):
            raise ValueError("bad status line %r" % lines[0])
        status = int(parts[1])
        headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        if head or status in (204, 304) or 100 <= status < 200:
            body = b""
        elif "chunked" in headers.get("transfer-encoding", "").lower():
            body = b""
            while True:
                size = int(self._read_until(b"\r\n").split(b";")[0], 16)
                if size == 0:
                    self._read_until(b"\r\n")  # no trailers expected
                    break
                body += self._read_exact(size)
                self._read_exact(2)
        elif "content-length" in headers:
            body = self._read_exact(int(headers["content-length"]))
        else:
            while True:
                try:
                    self.fill()
                except EOFError:
                    break
            body, self.buf = self.buf, b""
        return Response(status, parts[2] if len(parts) > 2 else "", headers, body)


class H2Clients:
    """n h2c clients, each keeping 4 GETs of path (size bytes) open on one
    connection after another until stop(): what became of their streams
    (mpmng_py/h2raw.py H2Requests) and the errors of their connections."""

    def __init__(self, host, port, path, size, n=2):
        self.host, self.port, self.path, self.size = host, port, path, size
        self.conns, self.errors = [], []
        self.stop_ev = threading.Event()
        self.threads = [threading.Thread(target=self._client) for _ in range(n)]

    def _client(self):
        from mpmng_py.h2raw import H2Requests
        while not self.stop_ev.is_set():
            try:
                with connect(self.host, self.port) as s:
                    c = H2Requests(s, "%s:%d" % (self.host, self.port), self.path,
                                   self.size, tls=False)
                    self.conns.append(c)
                    c.run(self.stop_ev.is_set)
            except OSError as e:
                self.errors.append(repr(e))

    def start(self):
        for t in self.threads:
            t.start()
        return self

    def stop(self):
        self.stop_ev.set()
        for t in self.threads:
            t.join(30)

    def lost(self):
        return [l for c in self.conns for l in c.lost]

    def summary(self):
        return ("h2: %d streams answered, %d refused by GOAWAY, lost %s, on %d connections "
                "(errors %s)" % (sum(c.ok for c in self.conns),
                                 sum(c.refused for c in self.conns), self.lost()[:5],
                                 len(self.conns), self.errors[:3]))


def http_get(host, port, path="/", timeout=10, method="GET", headers=()):
    """One request on a fresh connection (Connection: close)."""
    with connect(host, port, timeout) as s:
        s.sendall(request_bytes(method, path, host,
                                list(headers) + [("Connection", "close")]))
        return ResponseReader(s).read_response(head=(method == "HEAD"))


def parallel_gets(host, port, n, path="/", timeout=10):
    """n concurrent GETs, each on its own new connection, all connections
    opened as close together as possible.  Returns a list of (ok, detail)
    per request and the wall time."""
    results = [None] * n
    barrier = threading.Barrier(n)

    def one(i):
        try:
            barrier.wait(timeout)
            r = http_get(host, port, path, timeout=timeout)
            results[i] = (r.status == 200, "HTTP %d" % r.status)
        except Exception as e:  # noqa: BLE001 - every failure is a result
            results[i] = (False, "%s: %s" % (type(e).__name__, e))

    t0 = time.monotonic()
    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout + 5)
    return [r or (False, "thread did not finish") for r in results], time.monotonic() - t0


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def curl(*args, timeout=60):
    """Run curl -sS with args; returns CompletedProcess (bytes output)."""
    return subprocess.run(["curl", "-sS", "--max-time", str(timeout)] + list(args),
                          capture_output=True, timeout=timeout + 10)


# ---- load generation -----------------------------------------------------------
class LoadResult:
    """Outcome of one ab/wrk run.  failures counts every request that did not
    get a 2xx answer: socket errors, timeouts, non-2xx, length mismatches."""

    def __init__(self, tool, requests, failures, detail, output):
        self.tool, self.requests, self.failures = tool, requests, failures
        self.detail, self.output = detail, output

    def __repr__(self):
        return "%s: %d requests, %d failures (%s)" % (
            self.tool, self.requests, self.failures, self.detail)


def _int(pattern, text, default=0):
    m = re.search(pattern, text)
    return int(m.group(1)) if m else default


def parse_ab(output):
    complete = _int(r"Complete requests:\s+(\d+)", output)
    failed = _int(r"Failed requests:\s+(\d+)", output)
    non2xx = _int(r"Non-2xx responses:\s+(\d+)", output)
    detail = "complete=%d failed=%d non2xx=%d" % (complete, failed, non2xx)
    m = re.search(r"\(Connect: (\d+), Receive: (\d+), Length: (\d+), Exceptions: (\d+)\)", output)
    if m:
        detail += " (connect=%s receive=%s length=%s exceptions=%s)" % m.groups()
    return LoadResult("ab", complete, failed + non2xx, detail, output)


def run_ab(url, n, c, keepalive=False, timeout_s=10, extra=()):
    """ab -r (keep going on receive errors); returns LoadResult.  If ab
    gives up early, the missing requests count as failures."""
    args = ["ab", "-q", "-r", "-n", str(n), "-c", str(c), "-s", str(timeout_s)]
    if keepalive:
        args.append("-k")
    args += list(extra) + [url]
    p = subprocess.run(args, capture_output=True, text=True, timeout=300)
    res = parse_ab(p.stdout + p.stderr)
    if p.returncode != 0 or res.requests < n:
        res.failures += max(0, n - res.requests)
        res.detail += " ab rc=%d: %s" % (p.returncode, p.stderr.strip()[-300:])
    return res


def wrk_percentile(output, pct):
    """Latency at pct (50, 75, 90, 99) in ms from `wrk --latency` output,
    or None."""
    m = re.search(r"^\s*%d%%\s+([\d.]+)(us|ms|s)\s*$" % pct, output, re.M)
    if not m:
        return None
    return float(m.group(1)) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[m.group(2)]


def parse_wrk(output):
    total = _int(r"(\d+) requests in", output)
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output)
    errs = dict(zip(("connect", "read", "write", "timeout"),
                    (int(x) for x in m.groups()))) if m else {}
    non2xx = _int(r"Non-2xx or 3xx responses: (\d+)", output)
    failures = sum(errs.values()) + non2xx
    detail = "socket errors %s, non-2xx/3xx %d" % (errs or "none", non2xx)
    res = LoadResult("wrk", total, failures, detail, output)
    res.p99 = wrk_percentile(output, 99)
    if res.p99 is not None:
        res.detail += ", p99 %.1f ms" % res.p99
    return res


class Wrk:
    """wrk running in the background: start(), then result() to wait."""

    def __init__(self, url, duration, connections, threads=1, close=False,
                 timeout_s=5, headers=(), latency=False):
        self.args = ["wrk", "-t%d" % threads, "-c%d" % connections,
                     "-d%ds" % duration, "--timeout", "%ds" % timeout_s]
        if latency:
            self.args.append("--latency")
        if close:
            self.args += ["-H", "Connection: close"]
        for h in headers:
            self.args += ["-H", h]
        self.args.append(url)
        self.duration = duration
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
        return self

    def result(self):
        try:
            out, _ = self.proc.communicate(timeout=self.duration + 30)
        except BaseException:
            self.proc.kill()
            self.proc.wait()
            raise
        res = parse_wrk(out)
        if self.proc.returncode != 0:
            res.failures += 1
            res.detail += " wrk rc=%d" % self.proc.returncode
        return res

    def stop(self):
        """End the load now and return its result: wrk ends on SIGINT as at
        the end of its duration, with its report."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        return self.result()

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def run_wrk(url, duration, connections, **kw):
    return Wrk(url, duration, connections, **kw).start().result()


# ---- inspection -------------------------------------------------------------------
def listeners(port):
    """LISTEN sockets on port from `ss -Hltnpe`: list of dicts with
    addr ("127.0.0.1:P" / "[::1]:P"), inode, pids (processes holding it)."""
    p = subprocess.run(["ss", "-Hltnpe", "sport = :%d" % port],
                       capture_output=True, text=True, timeout=10)
    out = []
    for line in p.stdout.splitlines():
        f = line.split()
        if len(f) < 4:
            continue
        ino = re.search(r"\bino:(\d+)", line)
        out.append({
            "addr": f[3],
            "inode": int(ino.group(1)) if ino else None,
            "pids": sorted({int(x) for x in re.findall(r"pid=(\d+)", line)}),
            "line": line,
        })
    return out


def ss_lines(port):
    """Plain `ss -Hltn "sport = :PORT"` lines, as the contract states it."""
    p = subprocess.run(["ss", "-Hltn", "sport = :%d" % port],
                       capture_output=True, text=True, timeout=10)
    return [l for l in p.stdout.splitlines() if l.strip()]


def proc_status(pid):
    """/proc/PID/status as {field: value text}."""
    with open("/proc/%d/status" % pid) as f:
        return dict((k, v.strip()) for k, _, v in (l.partition(":") for l in f))


def proc_ids(pid):
    """(real uid, real gid) of a process from /proc/PID/status."""
    st = proc_status(pid)
    return int(st["Uid"].split()[0]), int(st["Gid"].split()[0])


def tracer_of(pid):
    """The pid of the process tracing pid (0: none)."""
    return int(proc_status(pid).get("TracerPid", "0"))


def proc_state(pid):
    """'state, ppid, threads' of a process from /proc, for failure messages."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return "state %s ppid %s threads %s" % (fields[0], fields[1], fields[17])
    except OSError:
        return "gone"


def www_data_ids():
    pw = pwd.getpwnam("www-data")
    return pw.pw_uid, pw.pw_gid


def pid_counts(access_log, path=None):
    """{pid: requests} from an access log written with access_log_directives,
    counting only requests for path if given (so that e.g. our own
    /server-status polls do not count)."""
    counts = {}
    needle = ' %s HTTP/' % path if path else ""
    try:
        with open(access_log) as f:
            for line in f:
                pid = line.split(" ", 1)[0]
                if pid.isdigit() and needle in line:
                    counts[int(pid)] = counts.get(int(pid), 0) + 1
    except FileNotFoundError:
        pass
    return counts


def line_count(path):
    try:
        with open(path, "rb") as f:
            return sum(1 for _ in f)
    except FileNotFoundError:
        return 0


# TCP counters of the namespace: shared with bench/ (mpmng_py/netcounters.py).
from mpmng_py.netcounters import RESET_COUNTERS, reset_delta, tcp_counters  # noqa: E402,F401


def ipv6_loopback():
    """True if ::1 is configured (bindable)."""
    if not socket.has_ipv6:
        return False
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False
