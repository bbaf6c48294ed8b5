"""mod_fhcache: a body sent from the cached descriptor never goes through
that descriptor's file offset, which every thread of the child shares.

APR reads a file bucket by mapping it (EnableMMAP) at the bucket's offset;
APR 1.7 maps only page-aligned offsets, and when the map fails it seeks
the descriptor and reads.  Buckets get split at other offsets all the
time: mod_ssl's coalescing filter puts the headers and the body's first
bytes into one 8 KiB record (the body's rest starts at 8192 minus the
headers), a Range request starts where the client asked, mod_ratelimit
cuts its chunks.  Two threads doing seek + read on one shared description
read each other's offsets: a response of the right length with the wrong
bytes (seen as 2 of 751 1 MiB HTTPS answers in test_lossy_network under
stock mpm_worker).

Deterministic check: after every kind of response, the cached descriptor's
offset (/proc/PID/fdinfo) is still 0.  Then the symptom itself: concurrent
HTTPS and Range downloads of one file, every body compared byte for byte.
Every case runs under each MPM of fhcache_mpms.MPMS."""
import hashlib
import os
import random
import socket
import threading
import time
import unittest

from mpmng_py.integration.common import HttpdTestCase, ResponseReader, needs_modules, request_bytes
from mpmng_py.integration.fhcache_mpms import FHCACHE_SO as SO, MPMS, one_child
from mpmng_py.privhttpd import free_port
from mpmng_py.tlscert import client_context, make_certificate

SIZE = 1 << 20      # above FHCacheMemoryFileMax: served from the descriptor
DATA = random.Random(7).randbytes(SIZE)
# Range starts that are not page-aligned, and small pieces core reads
# itself (below its 256-byte sendfile minimum).
RANGES = [(1000, SIZE - 1), (4097, 70000), (123457, 123500), (SIZE - 300, SIZE - 1)]


class BodyCases:
    """The cases; a subclass per MPM below sets MPM."""
    MPM = None

    def start(self, extra=""):
        port, tls_port = free_port(), free_port()
        h = self.httpd(start=False, mpm=self.MPM, modules=["ssl", "socache_shmcb"],
                       files={"big.bin": DATA}, port=port,
                       listen=["127.0.0.1:%d" % port, "127.0.0.1:%d" % tls_port])
        crt, key = make_certificate(h.dir)
        h.directives = (
            "LoadModule fhcache_module %s\nFHCache On\n" % SO + one_child(self.MPM) + extra +
            "<VirtualHost 127.0.0.1:%d>\n  SSLEngine on\n  SSLCertificateFile %s\n"
            "  SSLCertificateKeyFile %s\n</VirtualHost>\n" % (tls_port, crt, key))
        h.start()
        h.tls_port = tls_port
        self.wait_until(lambda: len(h.children()) == 1, 10, "one child")
        return h

    def get(self, h, tls=False, rng=None, conn=None):
        """GET /big.bin (bytes rng=(first, last) if given) on conn or a new
        connection; returns (response, connection)."""
        if conn is None:
            s = socket.create_connection((h.host, h.tls_port if tls else h.port), timeout=30)
            if tls:
                s = client_context().wrap_socket(s, server_hostname="localhost")
            conn = (s, ResponseReader(s))
        headers = [("Range", "bytes=%d-%d" % rng)] if rng else []
        conn[0].sendall(request_bytes("GET", "/big.bin", headers=headers))
        return conn[1].read_response(), conn

    def check(self, r, rng, what):
        want = DATA[rng[0]:rng[1] + 1] if rng else DATA
        self.assertEqual(r.status, 206 if rng else 200, what)
        self.assertEqual(len(r.body), len(want), what)
        if r.body != want:
            at = next(i for i, (a, b) in enumerate(zip(r.body, want)) if a != b)
            self.fail("%s: wrong bytes from offset %d of the body (sha256 %s, want %s)" % (
                what, at, hashlib.sha256(r.body).hexdigest()[:12],
                hashlib.sha256(want).hexdigest()[:12]))

    def descriptors(self, h):
        """{(pid, fd): file offset} of the child's descriptors of big.bin."""
        out = {}
        path = os.path.join(h.docroot, "big.bin")
        for pid in h.children():
            for fd in os.listdir("/proc/%d/fd" % pid):
                try:
                    if os.readlink("/proc/%d/fd/%s" % (pid, fd)) != path:
                        continue
                    with open("/proc/%d/fdinfo/%s" % (pid, fd)) as f:
                        out[(pid, fd)] = int(f.readline().split()[1])
                except (OSError, IndexError, ValueError):
                    pass    # closed meanwhile
        return out

    def cached_offset(self, h):
        """The offset of the cached descriptor: the one left once the
        descriptors of requests (EnableMMAP Off, EnableSendfile On: opened
        per request) are closed with their requests."""
        fds = self.wait_until(lambda: (lambda d: d if len(d) == 1 else None)(
            self.descriptors(h)), 10, "one descriptor of big.bin in the child")
        return list(fds.values())[0]

    def test_shared_offset_never_moves(self):
        for extra in ("", "EnableSendfile On\n", "EnableMMAP Off\n"):
            with self.subTest(config=extra.strip() or "default"):
                h = self.start(extra)
                r, conn = self.get(h)             # fills the cache
                conn[0].close()
                self.check(r, None, "first GET")
                self.assertEqual(self.cached_offset(h), 0, "after a plain GET")
                for tls in (False, True):
                    for rng in [None] + RANGES:
                        what = "%s GET%s (%s)" % ("https" if tls else "http",
                                                  " bytes=%d-%d" % rng if rng else "",
                                                  extra.strip() or "default")
                        r, conn = self.get(h, tls, rng)
                        conn[0].close()
                        self.check(r, rng, what)
                        self.assertEqual(self.cached_offset(h), 0, "the cached descriptor's "
                                         "file offset moved: read by seek + read, after " + what)
                self.assertGreater(int(h.status()["FHCacheHits"]), 8, extra)

    def test_concurrent_bodies_identical(self):
        """Several threads of one child send the file at once over TLS and
        as ranges, on keep-alive connections; every body must be the file's."""
        h = self.start()
        r, conn = self.get(h)
        conn[0].close()
        errors = []

        def client(i):
            rnd = random.Random(i)
            conn = None
            try:
                for n in range(6):
                    tls = (i + n) % 2 == 0
                    first = rnd.randrange(1, SIZE - 20000) | 1  # odd: never page-aligned
                    rng = None if tls and n % 3 == 0 else (first, SIZE - 1)
                    if conn and conn[2] != tls:
                        conn[0].close()
                        conn = None
                    r, conn = self.get(h, tls, rng, conn)
                    conn = conn[:2] + (tls,)
                    self.check(r, rng, "client %d request %d (%s%s)" % (
                        i, n, "https" if tls else "http", " range" if rng else ""))
            except Exception as e:  # noqa: BLE001 - every failure is a result
                errors.append("%s: %s" % (type(e).__name__, e))
            finally:
                if conn:
                    conn[0].close()

        threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(6)]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join(90)
        self.assertFalse([t for t in threads if t.is_alive()], "clients still running")
        self.assertEqual(errors, [], "%d of 36 responses wrong (%.1f s)" % (
            len(errors), time.monotonic() - t0))
        self.assertEqual(self.cached_offset(h), 0)


# One test class per MPM, e.g. FHCacheBodies_worker.test_shared_offset_never_moves.
for _mpm in MPMS:
    globals()["FHCacheBodies_" + _mpm] = needs_modules("ssl", "socache_shmcb")(
        unittest.skipUnless(os.path.exists(SO), "out/mod_fhcache.so not built")(
            type("FHCacheBodies_" + _mpm, (BodyCases, HttpdTestCase), {"MPM": _mpm})))
del _mpm


if __name__ == "__main__":
    unittest.main()
