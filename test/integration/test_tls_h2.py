"""HTTPS and HTTP/2 under the MPM, with real clients (Python's ssl, curl,
h2load, openssl s_client): files of every size byte-identical over TLS with
and without mod_fhcache (mpm_reuseport reads files for TLS itself:
rp_tlsbody.c), TLS 1.2 and 1.3, SNI, session resumption, client
certificates asked for, renegotiation refused; HTTP/2 over TLS (h2) and
cleartext (h2c, prior knowledge and Upgrade), many streams, large
downloads and uploads, idle HTTP/2 connections holding no thread, graceful
restarts and stops finishing the streams started.

Each server listens on a plain port (server-status, h2c) and a TLS port
(name-based virtual hosts a.test and b.test, each with its certificate)."""
import hashlib
import shutil
import signal
import os
import select
import socket
import ssl
import subprocess
import tempfile
import time

from mpmng_py.integration.common import (CGI_BODY, HttpdTestCase, ResponseReader, connect, curl,
                                         h2c_file_directives, mpm_directives, needs_httpd,
                                         needs_modules, request_bytes, reuseport_only, sha256)
from mpmng_py.integration.fhcache_mpms import FHCACHE_SO
from mpmng_py.netcounters import close_wait
from mpmng_py import privhttpd
from mpmng_py.privhttpd import free_port
from mpmng_py.h2raw import H2_PREFACE, h2_frames, h2_get_frame
from mpmng_py.tlscert import client_context, make_certificate

SIZES = (0, 1, 500, 16383, 16384, 16385, 100001, (1 << 20) + 7, 3 * (1 << 20) + 5)


def body_of(size):
    """Content that differs at every offset, so a misplaced range shows."""
    out, seed, n = [], b"mpm-ng", 0
    while n < size:
        seed = hashlib.sha256(seed).digest()
        out.append(seed)
        n += len(seed)
    return b"".join(out)[:size]


FILES = {"f%d.bin" % n: body_of(n) for n in SIZES}


def threads_of(h):
    return sum(len(os.listdir("/proc/%d/task" % p)) for p in h.processes())


class TlsServer:
    """Starts a server for a test: plain port h.port, TLS port h.tls_port,
    vhosts a.test (default) and b.test; extra vhost text for a.test."""

    def __init__(self, case, threads=16, protocols="http/1.1", cache=False, vhost_a="",
                 extra="", cgi=None, **kw):
        modules = ["ssl", "socache_shmcb", "headers"] + (["http2"] if "h2" in protocols else [])
        tls_port = free_port()
        h = case.httpd(start=False, modules=modules, files=FILES, cgi=cgi, nofile=4096, **kw)
        h.listen.append("127.0.0.1:%d" % tls_port)
        h.tls_port = tls_port
        crt_a, key_a = make_certificate(h.dir, "a")
        crt_b, key_b = make_certificate(h.dir, "b")
        self.cert_a = open(crt_a, "rb").read()
        b_root = os.path.join(h.dir, "htdocs-b")
        os.makedirs(b_root)
        with open(os.path.join(b_root, "who.txt"), "w") as f:
            f.write("b\n")
        h.write_file("who.txt", "a\n")
        os.chmod(b_root, 0o755)
        sizing = mpm_directives(start=1, server_limit=1, thread_limit=threads, threads=threads,
                                max_workers=threads, min_spare=1, max_spare=threads, buckets=1)
        cache_conf = ("LoadModule fhcache_module %s\nFHCache On\n" % FHCACHE_SO) if cache else ""
        vhost = ("<VirtualHost 127.0.0.1:{port}>\n  ServerName {name}\n  SSLEngine on\n"
                 "  SSLCertificateFile {crt}\n  SSLCertificateKeyFile {key}\n{more}"
                 "</VirtualHost>\n")
        h.directives += (
            sizing + cache_conf + extra + (h2c_file_directives() if "h2c" in protocols else "") +
            "Protocols %s\n" % protocols +
            "SSLSessionCache shmcb:%s/logs/ssl_scache(512000)\n" % h.dir +
            "<Directory %s>\n  Require all granted\n</Directory>\n" % b_root +
            vhost.format(port=tls_port, name="a.test", crt=crt_a, key=key_a, more=vhost_a) +
            vhost.format(port=tls_port, name="b.test", crt=crt_b, key=key_b,
                         more="  DocumentRoot %s\n" % b_root))
        h.start()
        self.h = h

    def url(self, path, tls=True, name="a.test"):
        port = self.h.tls_port if tls else self.h.port
        return "%s://%s:%d%s" % ("https" if tls else "http", name, port, path)

    def resolve(self, name="a.test"):
        return ["--resolve", "%s:%d:127.0.0.1" % (name, self.h.tls_port),
                "--resolve", "%s:%d:127.0.0.1" % (name, self.h.port)]

    def tls_socket(self, name="a.test", version=None, session=None, alpn=None, ctx=None):
        ctx = ctx or client_context(version, alpn)
        return ctx.wrap_socket(connect(self.h.host, self.h.tls_port, timeout=20),
                               server_hostname=name, session=session)


def cache_variants():
    return (False, True) if os.path.exists(FHCACHE_SO) else (False,)


@needs_modules("ssl", "socache_shmcb", "headers")
class TlsServing(HttpdTestCase):
    def test_files_of_every_size_byte_identical(self):
        """Every size, whole, HEAD, ranges, on one keep-alive connection and
        pipelined, with and without the cache (twice: a miss then a hit)."""
        for cache in cache_variants():
            with self.subTest(cache=cache):
                srv = TlsServer(self, cache=cache)
                with srv.tls_socket() as s:
                    rd = ResponseReader(s)
                    for _ in range(2):
                        for name, data in FILES.items():
                            s.sendall(request_bytes("GET", "/" + name, "a.test"))
                            r = rd.read_response()
                            self.assertEqual(r.status, 200, name)
                            self.assertEqual(sha256(r.body), sha256(data), name)
                    self._ranges_and_head(s, rd)
                    self._pipelined(s, rd)

    def _ranges_and_head(self, s, rd):
        big = FILES["f100001.bin"]
        s.sendall(request_bytes("HEAD", "/f100001.bin", "a.test"))
        r = rd.read_response(head=True)
        self.assertEqual((r.status, r.header("content-length")), (200, str(len(big))))
        s.sendall(request_bytes("GET", "/f100001.bin", "a.test",
                                headers=[("Range", "bytes=17000-17999")]))
        r = rd.read_response()
        self.assertEqual((r.status, r.body), (206, big[17000:18000]))
        s.sendall(request_bytes("GET", "/f100001.bin", "a.test",
                                headers=[("Range", "bytes=100-20000,50000-")]))
        r = rd.read_response()
        self.assertEqual(r.status, 206)
        self.assertIn(big[100:20001], r.body)
        self.assertIn(big[50000:], r.body)

    def _pipelined(self, s, rd):
        names = ["f500.bin", "f0.bin", "f16385.bin", "f1.bin"]
        s.sendall(b"".join(request_bytes("GET", "/" + n, "a.test") for n in names))
        for n in names:
            r = rd.read_response()
            self.assertEqual((r.status, sha256(r.body)), (200, sha256(FILES[n])), n)

    def test_tls_versions_and_session_resumption(self):
        srv = TlsServer(self)
        for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
            with self.subTest(version=version.name):
                ctx = client_context(version)
                session = None
                for attempt in range(2):
                    with srv.tls_socket(ctx=ctx, session=session) as s:
                        s.sendall(request_bytes("GET", "/f500.bin", "a.test"))
                        r = ResponseReader(s).read_response()
                        self.assertEqual((r.status, r.body), (200, FILES["f500.bin"]))
                        self.assertEqual(s.version(), version.name.replace("v1_", "v1."))
                        if attempt:
                            self.assertTrue(s.session_reused, "session not resumed")
                        session = s.session

    def test_sni_selects_virtual_host_and_certificate(self):
        srv = TlsServer(self)
        seen = {}
        for name in ("a.test", "b.test"):
            with srv.tls_socket(name=name) as s:
                seen[name] = s.getpeercert(binary_form=True)
                s.sendall(request_bytes("GET", "/who.txt", name))
                r = ResponseReader(s).read_response()
                self.assertEqual((r.status, r.body), (200, name[0].encode() + b"\n"))
        self.assertNotEqual(seen["a.test"], seen["b.test"])
        self.assertIn(seen["a.test"], ssl.PEM_cert_to_DER_cert(srv.cert_a.decode()))

    def test_client_certificate_is_asked_for(self):
        """SSLVerifyClient optional_no_ca: the server asks for a client
        certificate; one that sends it is seen with it, one without is
        served too."""
        srv = TlsServer(self, vhost_a="  SSLVerifyClient optional_no_ca\n"
                        "  Header always set X-Verify \"%{SSL_CLIENT_VERIFY}s\"\n"
                        "  Header always set X-Client \"%{SSL_CLIENT_S_DN_CN}s\"\n")
        ccrt, ckey = make_certificate(srv.h.dir, "client")
        for with_cert in (True, False):
            ctx = client_context(ssl.TLSVersion.TLSv1_3)
            if with_cert:
                ctx.load_cert_chain(ccrt, ckey)
            with srv.tls_socket(ctx=ctx) as s:
                s.sendall(request_bytes("GET", "/f500.bin", "a.test"))
                r = ResponseReader(s).read_response()
            self.assertEqual(r.status, 200)
            if with_cert:   # seen, not verified (no CA): "FAILED:<reason>"
                self.assertEqual(r.header("x-client"), "localhost")
                self.assertTrue(r.header("x-verify", "").startswith("FAILED"), r.headers)
            else:
                self.assertEqual(r.header("x-verify"), "NONE")

    @needs_httpd((2, 4, 38), "CVE-2019-0190: its mod_ssl loops on a client's TLS 1.2 "
                 "renegotiation with OpenSSL 1.1.1 or later, under mpm_event too; RHEL 8 "
                 "carries the fix")
    def test_client_renegotiation_is_refused(self):
        """TLS 1.2 renegotiation asked for by the client is refused (mod_ssl
        turns it off in OpenSSL: a no_renegotiation alert); the server goes
        on serving."""
        srv = TlsServer(self)
        p = subprocess.Popen(["openssl", "s_client", "-tls1_2", "-servername", "a.test",
                              "-connect", "127.0.0.1:%d" % srv.h.tls_port],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT)
        try:
            out, _ = p.communicate(b"R\n", timeout=20)
        finally:
            p.kill()
        self.assertIn(b"RENEGOTIATING", out, "s_client did not try: %r" % out[-400:])
        if privhttpd.httpd_version() >= (2, 4, 60):
            self.assertIn(b"no renegotiation", out, "not refused: %r" % out[-400:])
        else:
            # mod_ssl before 2.4.60 refuses by closing the connection.
            after = out.partition(b"RENEGOTIATING")[2]
            self.assertIn(b"unexpected eof", after, "not refused: %r" % out[-400:])
        with srv.tls_socket() as s:
            s.sendall(request_bytes("GET", "/f1.bin", "a.test"))
            self.assertEqual(ResponseReader(s).read_response().status, 200)


@needs_modules("ssl", "socache_shmcb", "headers", "http2")
class Http2(HttpdTestCase):
    def _h2load(self, url, n, c, m, extra=()):
        out = subprocess.run(["h2load", "-n", str(n), "-c", str(c), "-m", str(m)] + list(extra)
                             + [url], capture_output=True, text=True, timeout=120).stdout
        line = [l for l in out.splitlines() if l.startswith("requests:")]
        self.assertTrue(line, "h2load printed no totals:\n" + out[-800:])
        return line[0], out

    def test_many_streams_over_tls_and_cleartext(self):
        for cache in cache_variants():
            with self.subTest(cache=cache):
                srv = TlsServer(self, protocols="h2 h2c http/1.1", cache=cache)
                for url in ("https://127.0.0.1:%d/f500.bin" % srv.h.tls_port,
                            "http://127.0.0.1:%d/f16385.bin" % srv.h.port):
                    line, out = self._h2load(url, 2000, 10, 10)
                    self.assertIn("2000 succeeded, 0 failed, 0 errored", line, out[-800:])
                    self.assertIn("status codes: 2000 2xx", out)

    def test_large_downloads_byte_identical(self):
        """h2 (ALPN), h2c with prior knowledge and h2c by Upgrade."""
        for cache in cache_variants():
            srv = TlsServer(self, protocols="h2 h2c http/1.1", cache=cache)
            for tls, how in ((True, "--http2"), (False, "--http2-prior-knowledge"),
                             (False, "--http2")):
                for name in ("f0.bin", "f16385.bin", "f%d.bin" % (3 * (1 << 20) + 5)):
                    if how == "--http2" and not tls and len(FILES[name]) > 16385:
                        # curl 7.88 fails an Upgrade when more than its
                        # 32 KiB buffer arrives with the 101 (its limit)
                        continue
                    with self.subTest(cache=cache, tls=tls, how=how, name=name):
                        r = curl("-k", how, "-w", "\n%{http_version} %{http_code}",
                                 *srv.resolve(), srv.url("/" + name, tls))
                        body, _, tail = r.stdout.rpartition(b"\n")
                        self.assertEqual(tail, b"2 200", r.stderr)
                        self.assertEqual(sha256(body), sha256(FILES[name]))

    def test_large_uploads_to_a_cgi(self):
        srv = TlsServer(self, protocols="h2 h2c http/1.1", cgi={"sum.cgi": CGI_BODY})
        data = body_of(5 * (1 << 20) + 3)
        with tempfile.NamedTemporaryFile() as f:
            f.write(data)
            f.flush()
            for tls, how in ((True, "--http2"), (False, "--http2-prior-knowledge")):
                with self.subTest(tls=tls):
                    r = curl("-k", how, "--data-binary", "@" + f.name, *srv.resolve(),
                             srv.url("/cgi-bin/sum.cgi", tls))
                    self.assertIn(b"sha256=" + sha256(data).encode(), r.stdout, r.stderr)

    def _new_client_served_at_once(self, srv, threads_before, beside):
        """A new HTTP/2 client gets the 500 B file within 5 s (curl's start
        and TLS included; one left waiting hits curl's 10 s limit), and the
        server has the threads it had before the `beside` connections."""
        t0 = time.monotonic()
        r = curl("-k", "--http2", "-w", "\n%{http_version}", *srv.resolve(),
                 srv.url("/f500.bin"), timeout=10)
        took = time.monotonic() - t0
        self.assertEqual(r.stdout, FILES["f500.bin"] + b"\n2", r.stderr)
        self.assertLess(took, 5, "a new client waited %.1fs" % took)
        self.assertEqual(threads_of(srv.h), threads_before, "threads grew with " + beside)

    def test_idle_connections_hold_no_thread(self):
        """Many more idle HTTP/2 connections (TLS and cleartext, each after
        a request) than threads: the threads stay as they were and a new
        client is answered at once."""
        srv = TlsServer(self, threads=4, protocols="h2 h2c http/1.1",
                        extra="H2MinWorkers 1\nH2MaxWorkers 2\nKeepAliveTimeout 60\n")
        h = srv.h
        self.assertEqual(curl("--http2-prior-knowledge", h.url("/f1.bin")).stdout, FILES["f1.bin"])
        before = threads_of(h)
        idle = []
        try:
            for i in range(60):
                if i % 2:
                    s = srv.tls_socket(alpn=["h2"])
                    self.assertEqual(s.selected_alpn_protocol(), "h2")
                else:
                    s = connect(h.host, h.port)
                s.sendall(H2_PREFACE)
                self.assertTrue(s.recv(9), "no SETTINGS from the server")  # it speaks h2
                idle.append(s)
            self._new_client_served_at_once(srv, before, "idle h2 connections")
        finally:
            for s in idle:
                s.close()

    def test_small_flow_control_windows_byte_identical(self):
        """Windows of 1 KiB per stream and 64 KiB per connection, so the
        server waits for the client's WINDOW_UPDATEs all the way: a 3 MiB
        body whole (nghttp), and 200 streams at once (h2load), over TLS and
        cleartext, with and without the cache."""
        big = "f%d.bin" % (3 * (1 << 20) + 5)
        window = ["-w", "10", "-W", "16"]
        for cache in cache_variants():
            srv = TlsServer(self, protocols="h2 h2c http/1.1", cache=cache)
            for tls in (True, False):
                with self.subTest(cache=cache, tls=tls):
                    base = "%s://127.0.0.1:%d/" % (("https", srv.h.tls_port) if tls
                                                   else ("http", srv.h.port))
                    r = subprocess.run(["nghttp"] + window + [base + big],
                                       capture_output=True, timeout=120)
                    self.assertEqual(r.returncode, 0, r.stderr[-800:])
                    self.assertEqual(sha256(r.stdout), sha256(FILES[big]))
                    line, out = self._h2load(base + "f100001.bin", 200, 4, 10, extra=window)
                    self.assertIn("200 succeeded, 0 failed, 0 errored", line, out[-800:])

    @reuseport_only     # stock mpm_event runs out of workers here
    def test_stalled_readers_do_not_stop_other_clients(self):
        """20 HTTP/2 connections each start a 3 MiB download and then read
        nothing (their windows stay open, the socket fills): more than the
        server's threads and H2 workers.  A new client is answered at once
        and the threads stay as they were."""
        if (2, 4, 55) <= privhttpd.httpd_version() < (2, 4, 63):
            # Its mod_http2 (2.0.x) returns a connection to the MPM only once
            # no stream is open: one whose client reads nothing keeps its worker
            # (in a write that cannot proceed) under any MPM; from 2.4.63 it
            # hands that wait to the MPM.
            self.skipTest("httpd %s: its mod_http2 keeps a worker per stalled reader"
                          % ".".join(map(str, privhttpd.httpd_version())))
        srv = TlsServer(self, threads=4, protocols="h2 h2c http/1.1",
                        extra="H2MinWorkers 2\nH2MaxWorkers 2\nTimeout 30\n")
        h = srv.h
        big = "f%d.bin" % (3 * (1 << 20) + 5)
        self.assertEqual(curl("--http2-prior-knowledge", h.url("/f1.bin")).stdout, FILES["f1.bin"])
        before = threads_of(h)
        stalled = []
        try:
            for i in range(20):
                s = srv.tls_socket(alpn=["h2"]) if i % 2 else connect(h.host, h.port)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                s.sendall(H2_PREFACE + h2_get_frame(1, "a.test" if i % 2 else h.host,
                                                    "/" + big, tls=bool(i % 2)))
                stalled.append(s)
            # every stalled connection has its response under way
            self.wait_until(lambda: all(select.select([s], [], [], 0)[0] for s in stalled),
                            10, "an answer on every stalled connection")
            self._new_client_served_at_once(srv, before, "stalled h2 readers")
            # and the stalled ones were really being answered: 200 and DATA
            frames = h2_frames(stalled[0], 32768)
            self.assertIn((1, 1), [(t, sid) for t, sid, _ in frames], frames[:6])
            self.assertIn(b"\x88", [p[:1] for t, sid, p in frames if t == 1 and sid == 1])
            self.assertIn((0, 1), [(t, sid) for t, sid, _ in frames], frames[:6])
        finally:
            for s in stalled:
                s.close()

    def test_connections_the_client_closes_are_closed_at_once(self):
        """Idle HTTP/2 connections (h2c and h2) that the client then closes
        are closed by the server at once, not at KeepAliveTimeout: mod_http2
        takes the read that meets the client's FIN for "nothing yet" (core
        says EOF at the next read), so an edge-triggered poller must look
        again (under mpm_reuseport 9 of 10 stayed in CLOSE-WAIT for 30 s)."""
        srv = TlsServer(self, protocols="h2 h2c http/1.1", extra="KeepAliveTimeout 30\n")
        h = srv.h
        socks = []
        try:
            for i in range(10):
                tls = i % 2 == 1
                s = (srv.tls_socket(alpn=["h2"]) if tls
                     else connect(h.host, h.port, timeout=20))
                s.sendall(H2_PREFACE + h2_get_frame(1, "a.test", "/who.txt", tls))
                h2_read_until_end_of_stream(s, 1)
                socks.append(s)
            # idle on the server: no worker on them (the status request's own)
            self.wait_until(lambda: int(h.status().get("BusyWorkers", 99)) <= 1,
                            10, "the ten connections idle on the server")
        finally:
            for s in socks:
                s.close()
        ports = (h.port, h.tls_port)
        self.wait_until(lambda: close_wait(ports) == 0, 3,
                        "the server's side closed (CLOSE-WAIT: %d)" % close_wait(ports))

    def _downloads_across(self, action):
        """Four slow HTTP/2 downloads on one connection; action(h) while they
        run: each finishes whole."""
        srv = TlsServer(self, protocols="h2 h2c http/1.1", extra="KeepAliveTimeout 5\n")
        name = "f%d.bin" % (3 * (1 << 20) + 5)
        outdir = tempfile.mkdtemp(prefix="mpmng-h2dl-")
        args = ["curl", "-sS", "-k", "--http2", "--parallel", "--parallel-immediate",
                "--limit-rate", "1M", "--max-time", "60"] + srv.resolve()
        for i in range(4):
            args += ["-o", os.path.join(outdir, str(i)), srv.url("/%s?%d" % (name, i))]
        p = subprocess.Popen(args, stderr=subprocess.PIPE)
        try:
            self.wait_until(lambda: all(os.path.exists(os.path.join(outdir, str(i)))
                                        and os.path.getsize(os.path.join(outdir, str(i)))
                                        for i in range(4)), 20, "all four downloads started")
            action(srv.h)
            _, err = p.communicate(timeout=60)
        finally:
            p.kill()
        self.assertEqual(p.returncode, 0, err)
        try:
            for i in range(4):
                with open(os.path.join(outdir, str(i)), "rb") as f:
                    self.assertEqual(sha256(f.read()), sha256(FILES[name]), "download %d" % i)
        finally:
            shutil.rmtree(outdir)
        return srv.h

    @reuseport_only
    def test_batches_across_retiring_children_lose_nothing(self):
        """Children retire often (MaxConnectionsPerChild 3) while curl sends
        batches of 6 HTTP/2 transfers, a connection each (the soak's h2
        load): every transfer succeeds.  A stock MPM tells mod_http2 at
        once that the child stops; mod_http2 then sends its shutdown
        notice after the first stream, fails the connection on the next
        one and loses the batch (70 of 360 transfers under mpm_event)."""
        srv = TlsServer(self, protocols="h2 h2c http/1.1",
                        extra="ServerLimit 4\nMaxConnectionsPerChild 3\n")
        outdir = tempfile.mkdtemp(prefix="mpmng-h2ret-")
        names = ["f500.bin", "f16384.bin", "f%d.bin" % ((1 << 20) + 7), "f1.bin", "f100001.bin",
                 "f0.bin"]
        failed, kids, batches = [], set(), 60
        for batch in range(batches):
            args = ["curl", "-sS", "-k", "--http2", "--parallel", "--max-time", "30",
                    "-w", "%{exitcode} %{http_code} %{errormsg}\\n"] + srv.resolve()
            for i, name in enumerate(names):
                args += ["-o", os.path.join(outdir, str(i)), srv.url("/%s?%d" % (name, batch))]
            out = subprocess.run(args, capture_output=True, text=True, timeout=60).stdout
            done = [l for l in out.splitlines() if l.startswith("0 200")]
            failed += ["batch %d: %s" % (batch, l) for l in out.splitlines() if l not in done]
            self.assertEqual(len(out.splitlines()), len(names), out)
            kids |= set(srv.h.children())
        shutil.rmtree(outdir)
        print("\n    %d batches, %d children, failed: %s" % (batches, len(kids), failed[:6]),
              end=" ")
        self.assertGreaterEqual(len(kids), batches // 3 - 2, "the children retired")
        self.assertEqual(failed, [])

    def test_graceful_restart_finishes_started_streams(self):
        h = self._downloads_across(lambda h: h.graceful())
        self.assertEqual(curl("--http2-prior-knowledge", h.url("/f1.bin")).stdout, FILES["f1.bin"])

    def test_graceful_stop_finishes_started_streams(self):
        def graceful_stop(h):
            h.send_signal(signal.SIGWINCH)
            # the listeners close at once; the old child still sends
            self.wait_until(lambda: not _accepts(h.host, h.tls_port), 10, "listeners closed")
        h = self._downloads_across(graceful_stop)
        self.wait_gone([h.pid], 20, "the parent after its graceful stop")
        h.pid = None    # gone as asked: not a crash


def h2_read_until_end_of_stream(sock, stream):
    """Reads frames until HEADERS or DATA with END_STREAM on stream;
    acknowledges the server's SETTINGS as a client must."""
    sock.settimeout(10)
    buf = b""
    while True:
        while len(buf) >= 9 and len(buf) >= 9 + int.from_bytes(buf[:3], "big"):
            n = int.from_bytes(buf[:3], "big")
            kind, flags = buf[3], buf[4]
            sid = int.from_bytes(buf[5:9], "big") & 0x7FFFFFFF
            buf = buf[9 + n:]
            if kind == 4 and not flags & 1:
                sock.sendall(b"\x00\x00\x00\x04\x01\x00\x00\x00\x00")
            if sid == stream and kind in (0, 1) and flags & 1:
                return
        more = sock.recv(65536)
        if not more:
            raise EOFError("closed before the end of stream %d" % stream)
        buf += more


def _accepts(host, port):
    try:
        socket.create_connection((host, port), timeout=1).close()
        return True
    except OSError:
        return False
