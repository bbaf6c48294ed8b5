"""The event loop: idle keep-alive connections and slow readers hold no
worker thread, the loop enforces KeepAliveTimeout and Timeout, and when all
workers are busy a keep-alive connection's next request waits instead of
being dropped.  Each server has one child with very few threads, so a
thread-per-connection MPM fails these checks."""
import os
import socket
import time

from common import (CGI_SLOW, HttpdTestCase, ResponseReader, connect, mpm_directives,
                    request_bytes)


def one_child(threads, extra=""):
    return mpm_directives(start=1, server_limit=1, thread_limit=threads, threads=threads,
                          max_workers=threads, min_spare=1, max_spare=threads, buckets=1,
                          extra=extra)


def get(sock, rd, path, host="127.0.0.1"):
    sock.sendall(request_bytes("GET", path, host))
    return rd.read_response()


class IdleConnections(HttpdTestCase):
    def test_idle_keepalive_connections_hold_no_thread(self):
        idle = 60
        h = self.httpd(one_child(4, "KeepAliveTimeout 60\nMaxKeepAliveRequests 0\n"),
                       files={"a.txt": "a\n"})
        conns = []
        try:
            for i in range(idle):
                s = connect(h.host, h.port, timeout=5)
                rd = ResponseReader(s)
                conns.append((s, rd))
                r = get(s, rd, "/a.txt")
                self.assertEqual((r.status, r.body), (200, b"a\n"), "connection %d" % i)
            # 60 connections idle in keep-alive, 4 threads: still serving.
            t0 = time.monotonic()
            with connect(h.host, h.port, timeout=5) as s:
                r = get(s, ResponseReader(s), "/a.txt")
            self.assertEqual(r.status, 200)
            self.assertLess(time.monotonic() - t0, 2.0)
            st = h.status()
            self.assertGreaterEqual(int(st.get("ConnsAsyncKeepAlive", -1)), idle - 5, st)
            # And every idle connection is still usable.
            for i, (s, rd) in enumerate(conns):
                r = get(s, rd, "/a.txt")
                self.assertEqual(r.status, 200, "idle connection %d" % i)
        finally:
            for s, _ in conns:
                s.close()

    def test_keepalive_timeout_closes_idle_connection(self):
        h = self.httpd(one_child(2, "KeepAliveTimeout 1\n"), files={"a.txt": "a\n"})
        with connect(h.host, h.port) as s:
            rd = ResponseReader(s)
            self.assertEqual(get(s, rd, "/a.txt").status, 200)
            took = rd.wait_close(6)
        self.assertIsNotNone(took, "idle connection not closed 6s after KeepAliveTimeout 1")
        self.assertGreater(took, 0.7, "closed before KeepAliveTimeout")
        self.assertLess(took, 2.5, "KeepAliveTimeout 1 enforced late")


class SlowClients(HttpdTestCase):
    SIZE = 64 << 20

    def _stalled_download(self, h):
        """A client that asks for a big file and reads nothing."""
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.settimeout(10)
        s.connect((h.host, h.port))
        s.sendall(request_bytes("GET", "/big.bin", h.host))
        time.sleep(0.5)
        return s

    def _server(self, timeout):
        # With sendfile the handler hands the file over without reading it,
        # and what the client has not taken yet waits in write completion
        # (mmap'ed or read data beyond 64 KiB makes httpd's core block).
        return self.httpd(one_child(1, "Timeout %d\nEnableSendfile On\n" % timeout),
                          files={"big.bin": os.urandom(self.SIZE), "a.txt": "a\n"})

    def test_slow_reader_does_not_hold_the_only_worker(self):
        h = self._server(30)
        stalled = self._stalled_download(h)
        try:
            t0 = time.monotonic()
            with connect(h.host, h.port, timeout=5) as s:
                r = get(s, ResponseReader(s), "/a.txt")
            self.assertEqual((r.status, r.body), (200, b"a\n"))
            self.assertLess(time.monotonic() - t0, 2.0,
                            "a stalled download held the only worker")
            # The stalled download still completes once read.
            got = 0
            stalled.settimeout(20)
            head = b""
            while b"\r\n\r\n" not in head:
                head += stalled.recv(65536)
            got = len(head.split(b"\r\n\r\n", 1)[1])
            while got < self.SIZE:
                d = stalled.recv(1 << 20)
                if not d:
                    break
                got += len(d)
            self.assertEqual(got, self.SIZE, "download cut short")
        finally:
            stalled.close()

    def test_timeout_ends_a_stalled_write(self):
        h = self._server(2)
        stalled = self._stalled_download(h)
        try:
            time.sleep(4)       # no progress for longer than Timeout 2
            got, eof = 0, False
            stalled.settimeout(10)
            try:
                while True:
                    d = stalled.recv(1 << 20)
                    if not d:
                        eof = True
                        break
                    got += len(d)
            except ConnectionResetError:
                eof = True
            self.assertTrue(eof)
            self.assertLess(got, self.SIZE, "stalled write not ended by Timeout 2")
        finally:
            stalled.close()


class BusyWorkers(HttpdTestCase):
    def test_keepalive_request_waits_for_a_busy_worker(self):
        h = self.httpd(one_child(2, "KeepAliveTimeout 30\n"), files={"a.txt": "a\n"},
                       cgi={"slow.py": CGI_SLOW})
        k = connect(h.host, h.port, timeout=15)
        krd = ResponseReader(k)
        slow = []
        try:
            self.assertEqual(get(k, krd, "/a.txt").status, 200)
            for _ in range(2):  # both workers now wait on a CGI for 2s
                s = connect(h.host, h.port, timeout=15)
                rd = ResponseReader(s)
                s.sendall(request_bytes("GET", "/cgi-bin/slow.py?2", h.host))
                rd.wait_for(b"begin")
                slow.append((s, rd))
            t0 = time.monotonic()
            r = get(k, krd, "/a.txt")     # must wait, not be dropped
            self.assertEqual((r.status, r.body), (200, b"a\n"))
            self.assertGreater(time.monotonic() - t0, 0.5,
                               "answered while both workers were busy?")
            for s, rd in slow:
                self.assertEqual(rd.read_response().status, 200)
        finally:
            k.close()
            for s, _ in slow:
                s.close()


class LingeringClose(HttpdTestCase):
    """A connection the server closes while the client's data is still
    unread must linger (read and drop it), or the kernel answers with a
    reset that can destroy the response before the client reads it."""

    BODY = os.urandom(200000)

    def _server(self):
        return self.httpd(one_child(2, "MaxKeepAliveRequests 1\n"),
                          files={"big.bin": self.BODY})

    def _check(self, h, request):
        with connect(h.host, h.port) as s:
            s.sendall(request)
            time.sleep(0.5)         # the server has answered and closed by now
            rd = ResponseReader(s)
            r = rd.read_response()  # ConnectionResetError fails the test
            self.assertEqual((r.status, r.body), (200, self.BODY))
            # Whatever else it answered, the end is a clean close.
            self.assertIsNotNone(rd.wait_close(5), "connection not closed")

    def test_client_close_with_trailing_data_is_not_reset(self):
        h = self._server()
        self._check(h, request_bytes("GET", "/big.bin", h.host, headers=[("Connection", "close")])
                    + b"x" * 65536)

    def test_server_close_with_pipelined_requests_is_not_reset(self):
        h = self._server()      # MaxKeepAliveRequests 1: closes after one
        self._check(h, request_bytes("GET", "/big.bin", h.host) * 50)

    def test_client_close_without_more_data_closes_at_once(self):
        h = self._server()
        with connect(h.host, h.port) as s:
            rd = ResponseReader(s)
            s.sendall(request_bytes("GET", "/big.bin", h.host, headers=[("Connection", "close")]))
            self.assertEqual(rd.read_response().body, self.BODY)
            took = rd.wait_close(5)
        self.assertIsNotNone(took)
        self.assertLess(took, 1.0, "closing took %.1fs" % took)


class EarlyAnswer(HttpdTestCase):
    def test_body_arriving_after_an_early_answer_is_not_reset(self):
        """A request with Connection: close whose body the server refuses
        before reading it (413 on the headers): the body is still on its way
        when the answer goes out (here: sent only after it), so the close
        must linger rather than reset the connection under the client."""
        h = self.httpd(one_child(2, "LimitRequestBody 1000\n"), files={"a.txt": "a\n"})
        body = b"y" * (1 << 20)
        with connect(h.host, h.port) as s:
            s.sendall(request_bytes("POST", "/a.txt", h.host,
                                    headers=[("Connection", "close"),
                                             ("Content-Length", str(len(body)))]))
            rd = ResponseReader(s)
            r = rd.read_response()
            self.assertEqual(r.status, 413)
            time.sleep(0.2)     # the server has closed or is lingering now
            sent = 0
            try:
                while sent < len(body):
                    sent += s.send(body[sent:sent + 65536])
                    time.sleep(0.001)
            except (BrokenPipeError, ConnectionResetError) as e:
                self.fail("connection reset while the body was still being sent "
                          "(%d bytes sent): %s" % (sent, e))
            self.assertIsNotNone(rd.wait_close(10), "lingering close never ended")
