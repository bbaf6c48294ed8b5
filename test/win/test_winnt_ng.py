"""mpm_winnt_ng under wine64, driven by Linux clients (raw sockets, curl,
ab, wrk).  Each class starts its own cross-built httpd.exe."""
import os
import re
import socket
import subprocess
import time
import unittest

from mpmng_py.holdconns import Holder
from mpmng_py.win import crashreport
from mpmng_py.win.winhttpd import WinHttpd, available, parse_response, wine_env
from mpmng_py.win.wintest import assert_no_failed_request, long_test, payload, under_load, wrk

SIZES = {"empty.bin": 0, "one.bin": 1, "small.txt": 500, "mid.bin": 65536,
         "large.bin": 1 << 20, "huge.bin": 10 << 20}


def send_get(h, path="/small.txt"):
    """A new connection to h with one GET for path sent on it."""
    s = socket.create_connection(("127.0.0.1", h.port), timeout=10)
    s.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % path.encode())
    return s


def read_responses(sock, count, timeout=30):
    """Reads `count` HTTP/1.1 responses with Content-Length from sock."""
    sock.settimeout(timeout)
    buf = b""
    out = []
    while len(out) < count:
        while b"\r\n\r\n" not in buf:
            chunk = sock.recv(65536)
            if not chunk:
                raise EOFError("closed after %d responses" % len(out))
            buf += chunk
        head, _, rest = buf.partition(b"\r\n\r\n")
        m = re.search(rb"(?i)content-length:\s*(\d+)", head)
        n = int(m.group(1)) if m else 0
        while len(rest) < n:
            chunk = sock.recv(65536)
            if not chunk:
                raise EOFError("short body")
            rest += chunk
        code, hdrs, _ = parse_response(head + b"\r\n\r\n")
        out.append((code, hdrs, rest[:n]))
        buf = rest[n:]
    return out


@unittest.skipUnless(available("ng"), "no cross-built mpm_winnt_ng "
                     "(build/win/build.sh ng)")
class Serving(unittest.TestCase):
    """Static files, keep-alive, pipelining, uploads, concurrency."""

    @classmethod
    def setUpClass(cls):
        # The kernel's accept queue must hold 1,000 connections at once
        # (stock mpm_winnt fails ~60 of 3,000 requests with the default too).
        cls.h = WinHttpd(threads=64, extra="AcceptExPending 16\n"
                         "LimitRequestBody 0\nListenBacklog 2048")
        cls.files = {}
        for name, n in SIZES.items():
            cls.files[name] = payload(n, name)
            cls.h.put(name, cls.files[name])
        cls.h.start()

    @classmethod
    def tearDownClass(cls):
        cls.h.stop()

    def test_mpm_name(self):
        r = self.h.httpd("-V", timeout=60)
        self.assertIn(b"WinNT-NG", r.stdout, r.stdout + r.stderr)

    def test_static_files_are_byte_identical(self):
        for name, data in self.files.items():
            code, hdrs, body = self.h.get("/" + name, timeout=60)
            self.assertEqual(code, 200, name)
            self.assertEqual(len(body), len(data), name)
            self.assertTrue(body == data, name + " differs")

    def test_curl_sees_the_same_bytes(self):
        out = os.path.join(self.h.dir, "curl.out")
        r = subprocess.run(["curl", "-sS", "-o", out, "-w", "%{http_code}",
                            "http://127.0.0.1:%d/huge.bin" % self.h.port],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.stdout, "200", r.stderr)
        with open(out, "rb") as f:
            self.assertTrue(f.read() == self.files["huge.bin"])

    def test_keep_alive_serves_many_requests_on_one_connection(self):
        s = socket.create_connection(("127.0.0.1", self.h.port), timeout=30)
        try:
            for i in range(20):
                name = ["small.txt", "mid.bin", "one.bin"][i % 3]
                s.sendall(b"GET /%s HTTP/1.1\r\nHost: x\r\n\r\n" % name.encode())
                [(code, hdrs, body)] = read_responses(s, 1)
                self.assertEqual(code, 200)
                self.assertEqual(body, self.files[name])
        finally:
            s.close()

    def test_pipelined_requests_come_back_in_order(self):
        names = ["small.txt", "one.bin", "mid.bin", "small.txt", "empty.bin"]
        s = socket.create_connection(("127.0.0.1", self.h.port), timeout=30)
        try:
            s.sendall(b"".join(b"GET /%s HTTP/1.1\r\nHost: x\r\n\r\n" % n.encode()
                               for n in names))
            got = read_responses(s, len(names))
        finally:
            s.close()
        for n, (code, _, body) in zip(names, got):
            self.assertEqual(code, 200)
            self.assertEqual(body, self.files[n])

    def test_large_upload_is_read_and_the_connection_stays_usable(self):
        # The static handler refuses POST but must read the whole body
        # first; the next request on the connection proves it did.
        body = payload(20 << 20, "upload")
        s = socket.create_connection(("127.0.0.1", self.h.port), timeout=60)
        try:
            s.sendall(b"POST /small.txt HTTP/1.1\r\nHost: x\r\n"
                      b"Content-Length: %d\r\n\r\n" % len(body))
            s.sendall(body)
            s.sendall(b"GET /small.txt HTTP/1.1\r\nHost: x\r\n\r\n")
            (c1, _, _), (c2, _, b2) = read_responses(s, 2, timeout=120)
        finally:
            s.close()
        self.assertIn(c1, (200, 405))   # static handler: either, body read
        self.assertEqual(c2, 200)
        self.assertEqual(b2, self.files["small.txt"])

    def test_a_thousand_concurrent_connections_all_get_served(self):
        # ab keeps 1,000 connections open at once (one request each)
        r = subprocess.run(["ab", "-q", "-s", "120", "-n", "3000", "-c", "1000",
                            "http://127.0.0.1:%d/small.txt" % self.h.port],
                           capture_output=True, text=True, timeout=600)
        out = r.stdout + r.stderr
        self.assertRegex(out, r"Complete requests:\s+3000\b", out)
        self.assertRegex(out, r"Failed requests:\s+0\b", out)
        self.assertNotRegex(out, r"Non-2xx responses", out)

    def test_a_client_that_half_closes_gets_the_response_and_the_close(self):
        """httpd's t/apache/hostcheck.t: a request, then shutdown(SHUT_WR),
        then read to EOF.  Recycling must not keep our FIN back (under Wine
        a reused socket's FIN left only with its next connection)."""
        for i in range(3):
            with socket.create_connection(("127.0.0.1", self.h.port), timeout=10) as s:
                s.sendall(b"GET /small.txt HTTP/1.1\r\nHost: localhost\r\n\r\n")
                s.shutdown(socket.SHUT_WR)
                data = b""
                t0 = time.monotonic()
                while True:
                    more = s.recv(65536)
                    if not more:
                        break
                    data += more
                self.assertTrue(data.startswith(b"HTTP/1.1 200"), data[:100])
                self.assertLess(time.monotonic() - t0, 5)

    def test_accept_sockets_are_recycled(self):
        """Where every way a connection can end passes the start-up check
        (Windows), nearly every accept socket is reused.  Under Wine the
        FIN of a reused socket leaves late or not at all: no end passes,
        and auto mode closes every socket rather than keep a client that
        half-closed waiting (Recycling.test_transmitfile_forced: reuse)."""
        safe = "no way of ending a connection passed" not in self.h.error_log()
        before = self.h.status()
        reqs, errors, non2xx, out = wrk(self.h.port, seconds=3, conns=8, close=True)
        after = self.h.status()
        self.assertEqual(errors + non2xx, 0, out)
        self.assertEqual(after["WinNTNGRecycleMethod"], "TransmitFile" if safe else "none")
        accepted = int(after["WinNTNGAccepted"]) - int(before["WinNTNGAccepted"])
        created = int(after["WinNTNGSocketsCreated"]) - int(before["WinNTNGSocketsCreated"])
        recycled = int(after["WinNTNGSocketsRecycled"]) - int(before["WinNTNGSocketsRecycled"])
        self.assertGreater(accepted, 100, out)
        if not safe:
            self.assertEqual(recycled, 0, (accepted, recycled, created))
            self.assertGreaterEqual(created, accepted, (accepted, recycled, created))
            return
        # nearly every connection reused a socket instead of a new one
        self.assertGreater(recycled, accepted * 0.8, (accepted, recycled, created))
        self.assertLess(created, accepted * 0.2, (accepted, recycled, created))
        # Wine now and then refuses to recycle a socket whose client has
        # already gone (WSAENOTCONN); such a socket is closed instead.
        failed = int(after["WinNTNGRecycleFailed"]) - int(before["WinNTNGRecycleFailed"])
        self.assertLess(failed, accepted * 0.05, (accepted, failed))


@unittest.skipUnless(available("ng"), "no cross-built mpm_winnt_ng")
class Recycling(unittest.TestCase):
    """Both recycling paths, and the fallback when a method is broken."""

    def run_load(self, extra, env=None):
        h = WinHttpd(extra=extra, env=env)
        h.put("small.txt", payload(500, "small"))
        h.start()
        try:
            reqs, errors, non2xx, out = wrk(h.port, seconds=3, conns=8, close=True)
            st = h.status()
            return reqs, errors + non2xx, st, h.error_log(), out
        finally:
            h.stop()

    def test_off_closes_every_socket(self):
        reqs, bad, st, log, out = self.run_load("AcceptSocketReuse off")
        self.assertEqual(bad, 0, out)
        self.assertEqual(st["WinNTNGRecycleMethod"], "none")
        self.assertEqual(st["WinNTNGSocketsRecycled"], "0")
        self.assertGreaterEqual(int(st["WinNTNGSocketsCreated"]),
                                int(st["WinNTNGAccepted"]))

    def test_disconnectex_that_breaks_sends_falls_back_to_closing(self):
        # Wine 8: a socket reused after DisconnectEx accepts, then every
        # send fails.  The start-up check must notice; no request fails.
        reqs, bad, st, log, out = self.run_load("AcceptSocketReuse disconnectex")
        self.assertEqual(bad, 0, out)
        self.assertGreater(reqs, 50, out)
        if st["WinNTNGRecycleMethod"] == "DisconnectEx":
            self.skipTest("DisconnectEx reuse works here (not Wine 8)")
        self.assertEqual(st["WinNTNGRecycleMethod"], "none")
        self.assertIn("no method passed the start-up check", log)
        self.assertEqual(st["WinNTNGSocketsRecycled"], "0")

    @long_test("the default recycling, in every other test")
    def test_transmitfile_forced(self):
        reqs, bad, st, log, out = self.run_load("AcceptSocketReuse transmitfile")
        self.assertEqual(bad, 0, out)
        self.assertEqual(st["WinNTNGRecycleMethod"], "TransmitFile")
        self.assertGreater(int(st["WinNTNGSocketsRecycled"]), 50)

    @long_test("the default recycling, in every other test")
    def test_shared_listener_path_by_event_wait(self):
        # What a second child on real Windows takes: the listener belongs
        # to another process's completion port.
        reqs, bad, st, log, out = self.run_load("WinNTNGTestHook emulate-accept")
        self.assertEqual(bad, 0, out)
        self.assertEqual(st["WinNTNGListenersEmulated"], "1")
        self.assertGreater(reqs, 50, out)

    def test_accept_filter_none_uses_accept(self):
        reqs, bad, st, log, out = self.run_load("AcceptFilter http none")
        self.assertEqual(bad, 0, out)
        self.assertGreater(reqs, 50, out)
        self.assertEqual(st["WinNTNGSocketsRecycled"], "0")

    def test_accept_filter_none_socket_blocks(self):
        # accept() gives a socket that inherits the listener's non-blocking
        # mode; httpd must still wait for a request that comes late (a
        # non-blocking read would fail at once and close the connection).
        h = WinHttpd(extra="AcceptFilter http none")
        h.put("small.txt", payload(500, "small"))
        h.start()
        try:
            code, _, body = h.get("/small.txt", timeout=30, send_after=1.5)
            self.assertEqual(code, 200)
            self.assertEqual(body, payload(500, "small"))
        finally:
            h.stop()

    @long_test("Tls.test_accept_filter_https_connect_and_none")
    def test_accept_filter_data_is_served_as_connect(self):
        reqs, bad, st, log, out = self.run_load("AcceptFilter http data")
        self.assertEqual(bad, 0, out)
        self.assertGreater(reqs, 50, out)
        self.assertIn("data is served as connect", log)


@unittest.skipUnless(available("ng"), "no cross-built mpm_winnt_ng")
class KeepAliveWaits(unittest.TestCase):
    """Idle keep-alive connections wait on the completion port (a zero-byte
    WSARecv), not in a worker thread; the MPM enforces KeepAliveTimeout."""

    def test_idle_connections_hold_no_thread(self):
        # 8 workers, 400 idle connections: a thread per connection could
        # not even open them (each would hold its worker for 30 s).
        h = WinHttpd(threads=8, extra="KeepAliveTimeout 30")
        body = payload(500, "ka")
        h.put("small.txt", body)
        h.start()
        holder = Holder("127.0.0.1", h.port, "/small.txt")
        try:
            got = holder.numbers("open 400")
            self.assertEqual((got["held"], got["failed"]), (400, 0), got)
            st = h.status()
            self.assertGreaterEqual(int(st["WinNTNGKeepAliveParked"]), 400, st)
            self.assertLessEqual(int(st["WinNTNGWorkersBusy"]), 2, st)
            t0 = time.time()
            r = subprocess.run(["curl", "-s", "-m", "10", "-o", "/dev/null",
                                "-w", "%{http_code}",
                                "http://127.0.0.1:%d/small.txt" % h.port],
                               capture_output=True, text=True)
            self.assertEqual(r.stdout, "200")
            self.assertLess(time.time() - t0, 5)
            again = holder.numbers("again")
            self.assertEqual((again["ok"], again["failed"]), (400, 0), again)
            self.assertEqual(holder.ask("check"), "ALIVE 400")
        finally:
            holder.close()
            h.stop()
        self.assertNotIn("keep their worker thread", h.error_log())

    def test_keep_alive_timeout_closes_idle_connections(self):
        h = WinHttpd(threads=4, extra="KeepAliveTimeout 1")
        h.put("small.txt", b"y" * 100)
        h.start()
        try:
            s = send_get(h)
            (code, hdrs, body), = read_responses(s, 1)
            self.assertEqual((code, body), (200, b"y" * 100))
            t0 = time.time()
            self.assertEqual(s.recv(100), b"")     # the server's FIN
            waited = time.time() - t0
            s.close()
            self.assertGreater(waited, 0.7)
            self.assertLess(waited, 3.0)
            deadline = time.time() + 5
            while int(h.status()["WinNTNGKeepAliveParked"]) and time.time() < deadline:
                time.sleep(0.2)
            self.assertEqual(int(h.status()["WinNTNGKeepAliveParked"]), 0)
        finally:
            h.stop()

    def test_timed_out_connections_leave_no_slot_closing(self):
        # The worker that closes a timed-out connection marks its own
        # scoreboard slot closing, then ready: not the slot of the worker
        # that served the last request (idle since: 'C' until it works again).
        h = WinHttpd(threads=8, extra="KeepAliveTimeout 1")
        h.put("small.txt", b"c" * 100)
        h.start()
        socks = []
        try:
            socks = [send_get(h) for _ in range(6)]
            for s in socks:
                self.assertEqual(read_responses(s, 1)[0][0], 200)
            for s in socks:
                self.assertEqual(s.recv(100), b"")     # closed by KeepAliveTimeout
            # A slot closing for a moment is the close under way; closing
            # in two looks 0.5 s apart, a slot left behind (until the
            # status request happens to land on that worker).
            boards = []
            for _ in range(4):
                boards.append(h.status()["Scoreboard"])
                time.sleep(0.5)
            left = [i for i in range(len(boards[0]))
                    if any(a[i] == b[i] == "C" for a, b in zip(boards, boards[1:]))]
            self.assertEqual(left, [], "slots left closing: %s" % boards)
        finally:
            for s in socks:
                s.close()
            h.stop()

    def test_fallback_waits_in_the_thread(self):
        # WinNTNGTestHook keepalive-in-thread: the path taken when the
        # zero-byte receive cannot be posted; keep-alive must still work.
        h = WinHttpd(threads=5, extra="KeepAliveTimeout 10\n"
                     "WinNTNGTestHook keepalive-in-thread")
        h.put("small.txt", b"z" * 200)
        h.start()
        socks = []
        try:
            for i in range(3):
                socks.append(send_get(h))
                self.assertEqual(read_responses(socks[-1], 1)[0][0], 200)
            st = h.status()
            self.assertEqual(int(st["WinNTNGKeepAliveParked"]), 0, st)
            self.assertGreaterEqual(int(st["WinNTNGWorkersBusy"]), 3, st)
            time.sleep(0.5)
            for s in socks:
                s.sendall(b"GET /small.txt HTTP/1.1\r\nHost: x\r\n\r\n")
                (code, _, body), = read_responses(s, 1)
                self.assertEqual((code, body), (200, b"z" * 200))
        finally:
            for s in socks:
                s.close()
            h.stop()

    def test_a_request_after_a_pause_is_served_on_the_same_connection(self):
        h = WinHttpd(threads=2, extra="KeepAliveTimeout 10")
        files = {"a.bin": payload(70000, "a"), "b.txt": payload(300, "b")}
        for k, v in files.items():
            h.put(k, v)
        h.start()
        try:
            s = socket.create_connection(("127.0.0.1", h.port), timeout=10)
            for i in range(6):
                name = "a.bin" if i % 2 else "b.txt"
                s.sendall(("GET /%s HTTP/1.1\r\nHost: x\r\n\r\n" % name).encode())
                (code, hdrs, body), = read_responses(s, 1)
                self.assertEqual((code, body), (200, files[name]), i)
                time.sleep(0.3)
            # the client closing while parked ends the connection cleanly
            s.close()
            deadline = time.time() + 5
            while int(h.status()["WinNTNGConnections"]) > 1 and time.time() < deadline:
                time.sleep(0.2)
            self.assertLessEqual(int(h.status()["WinNTNGConnections"]), 1)
        finally:
            h.stop()


@unittest.skipUnless(available("ng"), "no cross-built mpm_winnt_ng")
class Lifecycle(unittest.TestCase):

    def test_stop_ends_every_process_and_removes_the_pid_file(self):
        h = WinHttpd()
        h.put("small.txt", b"x" * 500)
        h.start()
        try:
            pidfile = os.path.join(h.dir, "logs", "httpd.pid")
            self.assertTrue(os.path.exists(pidfile))
            r = h.httpd("-k", "stop")
            self.assertEqual(r.returncode, 0, r.stderr)
            h.proc.wait(60)
            deadline = time.time() + 30
            while h.wine_pids() and time.time() < deadline:
                time.sleep(0.2)
            self.assertEqual(h.wine_pids(), [])
            self.assertFalse(os.path.exists(pidfile))
            with self.assertRaises(OSError):
                socket.create_connection(("127.0.0.1", h.port), timeout=2)
        finally:
            h.kill()

    def test_stopping_runs_watchdog_stop_callbacks_once(self):
        """mod_watchdog runs a module's STOPPING callback from its thread
        when it sees the MPM stopping, and from pchild's cleanup if that
        thread still ran: both at once when pchild went right after the
        STOPPING state (mod_proxy_hcheck then destroyed its thread pool
        twice and the child crashed at exit, ~1 stop in 10).  Each stop
        must run it once, with no crash."""
        mods = ["authz_core", "authz_host", "mime", "dir", "status", "log_config", "watchdog",
                "proxy", "proxy_http", "proxy_hcheck"]
        for i in range(8):
            h = WinHttpd(modules=mods, extra="LogLevel info proxy_hcheck:debug")
            h.put("small.txt", b"x")
            h.start()
            try:
                self.assertEqual(h.httpd("-k", "stop").returncode, 0)
                h.proc.wait(60)
                log, console = h.error_log(), h.console()
            finally:
                h.kill()
            self.assertEqual(log.count("AH03261"), 1, "stop %d:\n%s" % (i + 1, log[-3000:]))
            self.assertNotIn("crash:", log)
            self.assertNotIn("page fault", console)

    def test_a_worker_stuck_in_a_handler_does_not_crash_the_exit(self):
        """A worker that never returns (here: mod_proxy_http waiting for a
        backend that accepts and never answers) is still busy when the
        child stops.  The child must not free the pools that worker runs
        on under it: it exits within its drain time and the workers' grace,
        says so, and no crash is reported."""
        backend = socket.socket()
        backend.bind(("127.0.0.1", 0))
        backend.listen(8)
        held = []
        mods = ["authz_core", "authz_host", "mime", "dir", "status", "log_config",
                "proxy", "proxy_http"]
        # 6 s of drain: long enough for the drain's progress line (every 5 s).
        h = WinHttpd(modules=mods, extra="GracefulShutdownTimeout 6\nProxyTimeout 120\n"
                     "ProxyPass /stuck http://127.0.0.1:%d/\n" % backend.getsockname()[1])
        h.put("small.txt", b"x")
        h.start()
        try:
            client = socket.create_connection(("127.0.0.1", h.port), timeout=30)
            client.sendall(b"GET /stuck HTTP/1.1\r\nHost: x\r\n\r\n")
            backend.settimeout(30)
            conn, _ = backend.accept()          # the worker now waits for an answer
            held.append(conn)
            t0 = time.time()
            self.assertEqual(h.httpd("-k", "stop").returncode, 0)
            h.proc.wait(60)
            took = time.time() - t0
            log, console = h.error_log(), h.console()
        finally:
            h.kill()
            for c in held:
                c.close()
            backend.close()
        self.assertIn("workers still busy", log, log[-3000:])
        # A stop that waits says on what.
        self.assertRegex(log, r"still finishing 1 connections after 5 s: 0 waiting for a "
                         r"keep-alive request, 0 for more of a request, 0 closing, "
                         r"1 in a worker thread")
        self.assertNotIn("crash:", log)
        self.assertNotIn("page fault", console)
        self.assertLess(took, 30, log[-3000:])
        print("\n    stopped with a worker stuck in a handler in %.1f s" % took, end=" ")

    def test_a_crash_is_reported_in_the_error_log_with_its_stack(self):
        """WinNTNGTestHook crash-at-exit: the child faults as it exits.  The
        error log names the exception and the address, and its stack lines
        name (nm, by ImageBase + offset) the functions that were running."""
        h = WinHttpd(extra="WinNTNGTestHook crash-at-exit")
        h.put("small.txt", b"x" * 500)
        h.start()
        try:
            self.assertEqual(h.get("/small.txt")[0], 200)
            r = h.httpd("-k", "stop")
            self.assertEqual(r.returncode, 0, r.stderr)
            h.proc.wait(60)
            log = h.error_log()
        finally:
            h.kill()
        head = re.search(r"crash: pid \d+ thread \d+: exception 0xc0000005 writing 0x18 "
                         r"at libhttpd\.dll\+0x[0-9a-f]+", log)
        self.assertIsNotNone(head, log[-3000:])
        dll = os.path.join(h.prefix, "bin", "libhttpd.dll")
        names = [crashreport.function_at(dll, off)[0]
                 for _, mod, off in crashreport.frames(log) if mod == "libhttpd.dll"]
        self.assertGreaterEqual(len(names), 2, log[-3000:])
        self.assertEqual(names[0], "wn_crash_on_purpose", names)
        self.assertEqual(names[1], "wn_child_main", names)
        self.assertIn("ap_run_mpm", names)

    def test_stock_command_line_forms(self):
        """-k and -n as stock httpd takes them (apr_getopt): a value
        attached ("-kstop") and in any case ("-k STOP"); -w accepted (it
        holds only a console window of httpd's own: here it returns)."""
        h = WinHttpd()
        h.put("small.txt", b"x" * 500)
        h.start()
        try:
            r = h.httpd("-w", "-t")
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn(b"Syntax OK", r.stdout + r.stderr)
            r = h.httpd("-w", "-t", "-C", "NoSuchDirective x")
            self.assertNotEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn(b"NoSuchDirective", r.stdout + r.stderr)
            r = h.httpd("-kGRACEFUL")
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            r = h.httpd("-k", "Stop")
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            h.proc.wait(60)
        finally:
            h.kill()

    @long_test("TwoChildren.test_graceful_restart_replaces_both_with_no_failed_request")
    def test_graceful_restart_under_load(self):
        # No failed request.  The read errors once seen here (0-9 per run)
        # came from the second child's AcceptEx completions being queued to
        # the first child's port (the shared socket's association).
        h = WinHttpd(threads=64)
        h.put("small.txt", payload(500, "small"))
        h.start()
        try:
            pids = set()

            def restarts():
                time.sleep(2)         # load on the first child
                for i in range(3):
                    before = int(h.status()["WinNTNGChildPid"])
                    pids.add(before)
                    r = h.httpd("-k", "restart")
                    self.assertEqual(r.returncode, 0, r.stderr)
                    # the old child answers until its successor accepts
                    deadline = time.time() + 30
                    while (int(h.status()["WinNTNGChildPid"]) == before
                           and time.time() < deadline):
                        time.sleep(0.3)
                    time.sleep(1)     # load on the new child before the next
            results = under_load(h.port, restarts)
            pids.add(int(h.status()["WinNTNGChildPid"]))
            assert_no_failed_request(self, results, "graceful restart")
            self.assertGreaterEqual(len(pids), 3, h.error_log())
            self.assertIn("stops accepting and finishes", h.error_log())
        finally:
            h.stop()

    def test_max_connections_per_child_replaces_the_child_seamlessly(self):
        h = WinHttpd(extra="MaxConnectionsPerChild 200")
        h.put("small.txt", payload(500, "small"))
        h.start()
        try:
            first = h.status()["WinNTNGChildPid"]
            reqs, errors, non2xx, out = wrk(h.port, seconds=6, conns=8, close=True)
            self.assertEqual(errors + non2xx, 0, out)
            self.assertGreater(reqs, 400, out)
            # The child keeps serving until its successor accepts (seconds
            # under a loaded Wine): the pid may change only after the load.
            deadline = time.time() + 30
            while h.status()["WinNTNGChildPid"] == first and time.time() < deadline:
                time.sleep(0.5)
            self.assertNotEqual(h.status()["WinNTNGChildPid"], first, h.error_log())
            self.assertIn("reached MaxConnectionsPerChild", h.error_log())
        finally:
            h.stop()

    def test_a_killed_child_is_replaced(self):
        h = WinHttpd()
        h.put("small.txt", b"x" * 500)
        h.start()
        try:
            st = h.status()
            child = int(st["WinNTNGChildPid"])
            r = subprocess.run(["/usr/lib/wine/wine64", "taskkill", "/F", "/PID",
                                str(child)], env=wine_env(),
                               capture_output=True, timeout=60)
            deadline = time.time() + 60
            new = None
            while time.time() < deadline:
                try:
                    new = int(h.status()["WinNTNGChildPid"])
                    if new != child:
                        break
                except (OSError, AssertionError, KeyError, IndexError, ValueError):
                    pass
                time.sleep(0.5)
            self.assertNotEqual(new, child, (r.stdout, r.stderr, h.error_log()))
            self.assertIn("starting another", h.error_log())
        finally:
            h.stop()


@unittest.skipUnless(available("ng"), "no cross-built mpm_winnt_ng")
class BadConfig(unittest.TestCase):
    CASES = [
        ("ThreadsPerChild lots", "ThreadsPerChild: 'lots' is not a whole number"),
        ("ThreadsPerChild 0", "ThreadsPerChild: 0 is out of range"),
        ("AcceptExPending 99999", "AcceptExPending: 99999 is out of range"),
        ("AcceptSocketReuse sometimes", "AcceptSocketReuse: 'sometimes' is not one of"),
        ("ThreadLimit 10\nThreadsPerChild 20",
         "ThreadsPerChild is larger than ThreadLimit"),
        ("ChildProcesses 0", "ChildProcesses: 0 is out of range; use 1 to 16"),
        ("ChildProcesses -1", "ChildProcesses: -1 is out of range"),
        ("ChildProcesses abc", "ChildProcesses: 'abc' is not a whole number"),
        ("ChildProcesses 17", "ChildProcesses: 17 is out of range"),
    ]

    def test_bad_values_fail_at_start_up_naming_the_directive(self):
        h = WinHttpd()
        try:
            for extra, message in self.CASES:
                h.write_conf(extra)
                r = h.httpd("-t", timeout=60)
                if not (r.stdout + r.stderr).strip():
                    # Seen once in CI: wine64 exited non-zero having printed
                    # nothing at all (not httpd's exit); ask again.
                    print("BadConfig: %r: no output (exit %d); retrying"
                          % (extra, r.returncode))
                    r = h.httpd("-t", timeout=60)
                text = (r.stdout + r.stderr).decode(errors="replace")
                self.assertNotEqual(r.returncode, 0, extra)
                self.assertIn(message, text, "%s (exit %d)" % (extra, r.returncode))
            h.write_conf("AcceptSocketReuse off\nAcceptExPending 4\n"
                         "ChildProcesses 16")
            r = h.httpd("-t", timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
        finally:
            h.kill()


if __name__ == "__main__":
    unittest.main()
