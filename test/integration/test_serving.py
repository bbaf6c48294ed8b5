"""Serving HTTP: static files, HEAD, Range, keep-alive, pipelining, large
request bodies through CGI, many concurrent connections, distribution over
children, mod_status."""
import os
import tempfile
import unittest

from mpmng_py.integration.common import (CGI_BODY, CGI_SLOW, HttpdTestCase, MPM, ResponseReader,
                                         connect, curl, mpm_directives, pid_counts, request_bytes,
                                         run_ab, run_wrk, sha256)

SIZES = {"empty.bin": 0, "small.bin": 500, "16k.bin": 16 * 1024,
         "1m.bin": 1 << 20, "10m.bin": 10 << 20}


class StaticFiles(HttpdTestCase):
    """One server for the static-file checks (2 buckets, 1 child each)."""

    def setUp(self):
        super().setUp()
        self.data = {name: os.urandom(size) for name, size in SIZES.items()}
        self.h = self.httpd(mpm_directives(start=2, buckets=2, threads=25,
                                           min_spare=25, max_spare=250),
                            files=self.data)

    def test_files_byte_identical(self):
        with tempfile.TemporaryDirectory() as tmp:
            for name, body in self.data.items():
                out = os.path.join(tmp, name)
                p = curl("-o", out, "-w", "%{http_code} %{size_download}",
                         self.h.url("/" + name))
                self.assertEqual(p.returncode, 0, p.stderr)
                code, size = p.stdout.decode().split()
                self.assertEqual(code, "200", name)
                self.assertEqual(int(size), len(body), name)
                with open(out, "rb") as f:
                    self.assertEqual(sha256(f.read()), sha256(body),
                                     "%s differs from the file on disk" % name)

    def test_head(self):
        with connect(self.h.host, self.h.port) as s:
            rd = ResponseReader(s)
            for name, body in self.data.items():
                s.sendall(request_bytes("HEAD", "/" + name, self.h.host))
                r = rd.read_response(head=True)
                self.assertEqual(r.status, 200, name)
                # httpd omits Content-Length on a HEAD of an empty file.
                self.assertEqual(int(r.header("content-length", 0 if not body else -1)),
                                 len(body), name)
            # Had any HEAD response carried a body, this GET would be misparsed.
            s.sendall(request_bytes("GET", "/small.bin", self.h.host))
            r = rd.read_response()
            self.assertEqual((r.status, r.body), (200, self.data["small.bin"]))

    def test_range(self):
        body = self.data["1m.bin"]
        for rng, want in (("100-199", body[100:200]), ("-500", body[-500:]),
                          ("1048000-", body[1048000:]), ("0-0", body[:1])):
            p = curl("-r", rng, "-w", "\n%{http_code}", self.h.url("/1m.bin"))
            self.assertEqual(p.returncode, 0, p.stderr)
            got, _, code = p.stdout.rpartition(b"\n")
            self.assertEqual(code, b"206", rng)
            self.assertEqual(got, want, "range %s" % rng)
        # Unsatisfiable range.
        p = curl("-r", "2000000-3000000", "-o", "/dev/null", "-w", "%{http_code}",
                 self.h.url("/1m.bin"))
        self.assertEqual(p.stdout, b"416")

    def test_keepalive_one_socket(self):
        order = ["small.bin", "16k.bin", "empty.bin", "1m.bin", "small.bin"] * 3
        with connect(self.h.host, self.h.port) as s:
            rd = ResponseReader(s)
            for i, name in enumerate(order):
                s.sendall(request_bytes("GET", "/" + name, self.h.host))
                r = rd.read_response()
                self.assertEqual(r.status, 200, "request %d %s" % (i, name))
                self.assertEqual(r.body, self.data[name], "request %d %s" % (i, name))
                self.assertNotEqual(r.header("connection", "").lower(), "close",
                                    "server closed keep-alive at request %d" % i)

    def test_pipelining(self):
        reqs = [("GET", "small.bin"), ("GET", "16k.bin"), ("HEAD", "1m.bin"),
                ("GET", "empty.bin"), ("GET", "1m.bin"), ("GET", "missing.bin"),
                ("GET", "small.bin")] * 2
        wire = b"".join(request_bytes(m, "/" + n, self.h.host) for m, n in reqs)
        with connect(self.h.host, self.h.port) as s:
            s.sendall(wire)
            rd = ResponseReader(s)
            for i, (method, name) in enumerate(reqs):
                r = rd.read_response(head=(method == "HEAD"))
                if name == "missing.bin":
                    self.assertEqual(r.status, 404, "response %d" % i)
                    continue
                self.assertEqual(r.status, 200, "response %d (%s %s)" % (i, method, name))
                if method == "HEAD":
                    self.assertEqual(int(r.header("content-length")), len(self.data[name]))
                else:
                    self.assertEqual(r.body, self.data[name],
                                     "response %d (%s) out of order or corrupt" % (i, name))


class ResponseFraming(HttpdTestCase):
    """One request at a time on one keep-alive connection, each kind of
    response the header filter produces: headers sent with a file body,
    with a body in memory, streamed chunked, and without a body.
    mpm_reuseport holds a response's headers until its body comes
    (rp_hold.c): each must arrive whole, in order, and a streamed body
    must not wait for its end."""

    def test_each_kind_of_response_on_one_connection(self):
        data = {"small.bin": os.urandom(500), "16k.bin": os.urandom(16 << 10),
                "empty.bin": b""}
        h = self.httpd(mpm_directives(start=1, buckets=1, threads=4,
                                      min_spare=1, max_spare=4),
                       files=data, cgi={"slow.py": CGI_SLOW})
        with connect(h.host, h.port) as s:
            rd = ResponseReader(s)

            def ask(method, path, headers=()):
                s.sendall(request_bytes(method, path, h.host, headers))
                return rd.read_response(head=(method == "HEAD"))

            for name in ("small.bin", "16k.bin", "empty.bin"):
                r = ask("GET", "/" + name)
                self.assertEqual((r.status, r.body), (200, data[name]), name)
            etag = ask("HEAD", "/small.bin").header("etag")
            self.assertTrue(etag)
            self.assertEqual(ask("GET", "/small.bin", [("If-None-Match", etag)]).status, 304)
            r = ask("GET", "/missing.bin")
            self.assertEqual(r.status, 404)
            self.assertIn(b"Not Found", r.body)

            # Streamed: headers and "begin" arrive while the script still
            # sleeps, not together with its "end".
            s.sendall(request_bytes("GET", "/cgi-bin/slow.py?1.5", h.host))
            rd.wait_for(b"begin", timeout=10)
            self.assertNotIn(b"end\n", rd.buf, "streamed start waited for the end")
            r = rd.read_response()
            self.assertEqual((r.status, r.body), (200, b"begin\nend\n"))
            self.assertIn("chunked", r.header("transfer-encoding", ""))

            r = ask("GET", "/small.bin")
            self.assertEqual((r.status, r.body), (200, data["small.bin"]))


class RequestBody(HttpdTestCase):
    def test_20mib_post_to_cgi(self):
        h = self.httpd(mpm_directives(start=2, buckets=2, threads=25,
                                      min_spare=25, max_spare=250),
                       cgi={"body.py": CGI_BODY})
        body = os.urandom(20 << 20)
        with tempfile.NamedTemporaryFile() as f:
            f.write(body)
            f.flush()
            p = curl("--data-binary", "@" + f.name, "-H", "Content-Type: application/octet-stream",
                     "-w", "%{http_code}\n", h.url("/cgi-bin/body.py"), timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        text = p.stdout.decode()
        self.assertTrue(text.endswith("200\n"), text)
        self.assertIn("length=%d\n" % len(body), text)
        self.assertIn("sha256=%s\n" % sha256(body), text)


class Concurrency(HttpdTestCase):
    def test_500_concurrent_keepalive(self):
        h = self.httpd(mpm_directives(server_limit=8, thread_limit=100, threads=100,
                                      start=8, max_workers=800, min_spare=100,
                                      max_spare=800, buckets=2)
                       + "MaxKeepAliveRequests 0\n", files={"index.html": b"x" * 256})
        h.wait_children(8)
        self.wait_workers(h, 800)
        res = run_ab(h.url("/index.html"), 20000, 500, keepalive=True)
        self.assertEqual(res.requests, 20000, res)
        self.assertEqual(res.failures, 0, res)
        res = run_wrk(h.url("/index.html"), 3, 500, threads=2)
        self.assertGreater(res.requests, 1000, res)
        self.assertEqual(res.failures, 0, res)

    def test_connections_spread_over_children(self):
        nchildren = 4
        h = self.httpd(mpm_directives(start=nchildren, buckets=2, threads=25,
                                      server_limit=8, max_workers=200,
                                      min_spare=25, max_spare=400),
                       files={"index.html": b"hello\n"}, access_log=True)
        kids = h.wait_children(nchildren)
        self.wait_workers(h, nchildren * 25)
        alog = h.access_log
        before = pid_counts(alog, "/index.html")
        n = 4000
        res = run_ab(h.url("/index.html"), n, 16)  # no keep-alive: new connections
        self.assertEqual(res.failures, 0, res)
        counts = pid_counts(alog, "/index.html")
        for pid, c in before.items():
            counts[pid] -= c
        self.assertEqual(sum(counts.values()), n, counts)
        self.assertEqual(sorted(p for p, c in counts.items() if c), kids,
                         "requests by PID %s, children %s" % (counts, kids))
        # A meaningful share: at least a fifth of an even split each.
        floor = n // nchildren // 5
        for pid in kids:
            self.assertGreaterEqual(counts.get(pid, 0), floor,
                                    "child %d served too little: %s" % (pid, counts))



class Status(HttpdTestCase):
    def test_status_shows_children_and_threads(self):
        h = self.httpd(mpm_directives(server_limit=4, thread_limit=32, threads=20,
                                      start=2, max_workers=80, min_spare=20,
                                      max_spare=200, buckets=2))
        h.wait_children(2)
        self.wait_workers(h, 40)
        st = h.status()
        board = st["Scoreboard"]
        # httpd 2.4.71's mod_status prints AP_MPMQ_HARD_LIMIT_DAEMONS (ServerLimit)
        # x AP_MPMQ_MAX_THREADS (ThreadsPerChild) slots, not ThreadLimit.
        self.assertEqual(len(board), 4 * 20,
                         "scoreboard must cover ServerLimit*ThreadsPerChild slots: %r" % board)
        self.assertEqual(len(board) - board.count("."), 40,
                         "2 children x 20 threads must be in use: %r" % board)
        self.assertEqual(st.get("ServerMPM"), MPM)
        self.assertGreaterEqual(int(st["BusyWorkers"]), 1)  # this request


if __name__ == "__main__":
    unittest.main()
