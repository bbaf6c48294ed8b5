"""Malformed input over the network: mutated HTTP/1.1 requests, HTTP/2
frames (h2c, and inside TLS) and TLS handshake records, each sent in pieces
to a server with our modules (the MPM's read-ahead, mod_fhcache, mod_ssl,
mod_http2, mod_reqtimeout).  After every batch the server must answer
normal requests over HTTP/1.1, TLS and h2c; at the end no child may have
crashed and no sanitizer report may have appeared (HttpdTestCase checks
both; `make check SANITIZE=1` builds our modules with ASan and UBSan).

MPMNG_FUZZ_INPUTS sets how many inputs (default 20,000; `make fuzz` sends
1,000,000), MPMNG_FUZZ_SEED the seed (printed: a failure is reproducible).
Inputs of a batch that broke the server are written to out/fuzz/."""
import asyncio
import os
import random
import signal
import ssl
import time

from mpmng_py.integration.common import (OUT, TEST_TIMEOUT, HttpdTestCase, curl, mpm_directives,
                                         needs_modules)
from mpmng_py.integration.fhcache_mpms import FHCACHE_SO
from mpmng_py.privhttpd import free_port
from mpmng_py.tlscert import make_certificate

INPUTS = int(os.environ.get("MPMNG_FUZZ_INPUTS", "20000"))
SEED = int(os.environ.get("MPMNG_FUZZ_SEED", "0")) or random.SystemRandom().randrange(1, 2**31)
BATCH = 2000
PARALLEL = 64
QUIET = 0.15        # seconds without an answer before a connection is dropped

H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def h2_frame(ftype, flags, stream, payload):
    return len(payload).to_bytes(3, "big") + bytes([ftype, flags]) + \
        stream.to_bytes(4, "big") + payload


def hpack_literal(name, value):
    return b"\x00" + bytes([len(name)]) + name + bytes([len(value)]) + value


def h2_get(path, stream=1):
    block = b"".join(hpack_literal(k, v) for k, v in (
        (b":method", b"GET"), (b":scheme", b"http"), (b":path", path),
        (b":authority", b"localhost")))
    return h2_frame(1, 0x05, stream, block)


HTTP1_SEEDS = [
    b"GET /f.txt HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET /big.bin HTTP/1.1\r\nHost: x\r\nRange: bytes=10-20,30-\r\n"
    b"If-Modified-Since: Sat, 01 Jan 2000 00:00:00 GMT\r\n\r\n",
    b"POST /f.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"
    b"GET /f.txt HTTP/1.1\r\nHost: x\r\n\r\n",
    b"POST /f.txt HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"5\r\nhello\r\n0\r\n\r\n",
    b"PUT /f.txt HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n",
    b"GET http://x/f.txt HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
    b"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET /f.txt HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\n"
    b"Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n",
    b"\r\n\r\nGET /dir/ HTTP/1.1\r\nHost: x\r\nA: b\r\n c\r\n\r\n",
]
H2_SEEDS = [
    H2_PREFACE + h2_frame(4, 0, 0, b"") + h2_get(b"/f.txt"),
    H2_PREFACE + h2_frame(4, 0, 0, b"\x00\x04\x00\x00\xff\xff") + h2_get(b"/big.bin")
    + h2_frame(8, 0, 1, b"\x00\x01\x00\x00") + h2_frame(6, 0, 0, b"12345678")
    + h2_frame(3, 0, 1, b"\x00\x00\x00\x08") + h2_get(b"/f.txt", 3),
    H2_PREFACE + h2_frame(4, 0, 0, b"") + h2_frame(7, 0, 0, b"\x00" * 8),
]
INTERESTING = [b"\r\n", b"\n", b"\r", b"\x00", b" ", b":", b"\t", b"\xff", b"%00", b"/../",
               b"Content-Length: 18446744073709551617\r\n", b"Content-Length: -1\r\n",
               b"Transfer-Encoding: chunked\r\n", b"Expect: 100-continue\r\n",
               b"Host: a\r\nHost: b\r\n", b"A" * 9000, b"\r\n\r\n", b"HTTP/1.1", b"ffffffff\r\n"]


def mutate(rng, data):
    data = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(6)
        at = rng.randrange(len(data) + 1)
        if op == 0 and data:
            data[min(at, len(data) - 1)] ^= 1 << rng.randrange(8)
        elif op == 1 and data:
            data[min(at, len(data) - 1):min(at, len(data) - 1) + 1] = rng.choice(INTERESTING)
        elif op == 2:
            data[at:at] = rng.choice(INTERESTING)
        elif op == 3:
            del data[at:at + rng.randint(1, 16)]
        elif op == 4:
            end = min(len(data), at + rng.randint(1, 64))
            data[at:at] = data[at:end] * rng.randint(1, 3)
        else:
            del data[at:]
    return bytes(data)


def pieces(rng, data):
    if len(data) < 2:
        return [data] if data else []
    cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, rng.randint(0, 4))))
    out, last = [], 0
    for c in cuts + [len(data)]:
        out.append(data[last:c])
        last = c
    return [p for p in out if p]


class Fuzzer:
    """Makes and sends inputs: (kind, bytes) with kind plain, h2c, tls-http1,
    tls-h2 (a real handshake, then the mutated bytes) or tls-hello (a
    mutated ClientHello)."""

    def __init__(self, host, port, tls_port, seed):
        self.host, self.port, self.tls_port = host, port, tls_port
        self.rng = random.Random(seed)
        self.ctx = {}
        for alpn in ("http/1.1", "h2"):
            c = ssl.create_default_context()
            c.check_hostname = False
            c.verify_mode = ssl.CERT_NONE
            c.set_alpn_protocols([alpn])
            self.ctx[alpn] = c
        self.hellos = [self._client_hello(v) for v in (ssl.TLSVersion.TLSv1_2,
                                                       ssl.TLSVersion.TLSv1_3)]

    @staticmethod
    def _client_hello(version):
        c = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        c.check_hostname = False
        c.verify_mode = ssl.CERT_NONE
        c.maximum_version = version
        inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
        obj = c.wrap_bio(inc, out, server_hostname="localhost")
        try:
            obj.do_handshake()
        except ssl.SSLWantReadError:
            pass
        return out.read()

    def make(self):
        r = self.rng
        kind = r.choice(("plain", "plain", "plain", "h2c", "tls-http1", "tls-h2", "tls-hello"))
        if kind in ("plain", "tls-http1"):
            seed = r.choice(HTTP1_SEEDS)
        elif kind in ("h2c", "tls-h2"):
            seed = r.choice(H2_SEEDS)
        else:
            seed = r.choice(self.hellos)
        return kind, mutate(r, seed), r.random() < 0.3

    async def send(self, kind, data, split):
        tls = kind in ("tls-http1", "tls-h2")
        port = self.tls_port if kind.startswith("tls") else self.port
        ctx = self.ctx["h2" if kind == "tls-h2" else "http/1.1"] if tls else None
        try:
            r, w = await asyncio.wait_for(asyncio.open_connection(
                self.host, port, ssl=ctx, server_hostname="localhost" if tls else None), 5)
        except (OSError, ssl.SSLError, asyncio.TimeoutError):
            return False        # refused handshakes are not the point here
        try:
            for p in (pieces(self.rng, data) if split else [data]):
                w.write(p)
                await w.drain()
                if split:
                    await asyncio.sleep(0.001)
            while await asyncio.wait_for(r.read(65536), QUIET):
                pass
        except (OSError, ssl.SSLError, asyncio.TimeoutError, asyncio.IncompleteReadError):
            pass
        finally:
            w.transport.abort()
        return True

    async def batch(self, n):
        sem = asyncio.Semaphore(PARALLEL)
        made = [self.make() for _ in range(n)]

        async def one(item):
            async with sem:
                return await self.send(*item)
        done = await asyncio.gather(*(one(m) for m in made))
        return made, sum(done)


@needs_modules("ssl", "socache_shmcb", "http2", "reqtimeout")
class MalformedInput(HttpdTestCase):
    def setUp(self):
        super().setUp()
        signal.alarm(max(TEST_TIMEOUT, INPUTS // 200 + 60))   # ~1,000 inputs/s

    def test_mutated_requests_frames_and_records(self):
        h = self.httpd(start=False, modules=["ssl", "socache_shmcb", "http2", "reqtimeout"],
                       files={"f.txt": "fuzz\n", "big.bin": "b" * 70000, "dir/x": "x"},
                       nofile=8192)
        tls_port = free_port()
        h.listen.append("127.0.0.1:%d" % tls_port)
        crt, key = make_certificate(h.dir)
        cache = ("LoadModule fhcache_module %s\nFHCache On\n" % FHCACHE_SO
                 if os.path.exists(FHCACHE_SO) else "")
        h.directives += mpm_directives(start=1, server_limit=1, thread_limit=32, threads=32,
                                       max_workers=32, min_spare=1, max_spare=32, buckets=1) + (
            cache + "Protocols h2 h2c http/1.1\nTimeout 3\nKeepAliveTimeout 2\n"
            "RequestReadTimeout header=2-4,MinRate=500 body=2,MinRate=500\n"
            "LimitRequestFields 20\nLimitRequestLine 1000\nLogLevel crit\n"
            "SSLSessionCache shmcb:%s/logs/ssl_scache(512000)\n"
            "<VirtualHost 127.0.0.1:%d>\n  SSLEngine on\n  SSLCertificateFile %s\n"
            "  SSLCertificateKeyFile %s\n</VirtualHost>\n" % (h.dir, tls_port, crt, key))
        h.start()
        fz = Fuzzer(h.host, h.port, tls_port, SEED)
        print("\n    seed %d, %d inputs" % (SEED, INPUTS), end=" ", flush=True)
        sent, t0 = 0, time.monotonic()
        while sent < INPUTS:
            n = min(BATCH, INPUTS - sent)
            made, delivered = asyncio.run(fz.batch(n))
            sent += n
            self.assertGreater(delivered, n // 2, "most connections were refused")
            self._still_serving(h, tls_port, made, sent)
            if sent % 100000 == 0:
                print("%d.." % sent, end=" ", flush=True)
        print("(%.0f inputs/s)" % (sent / (time.monotonic() - t0)), end=" ", flush=True)

    def _still_serving(self, h, tls_port, made, sent):
        checks = (("--http1.1", h.url("/f.txt")),
                  ("--http2-prior-knowledge", h.url("/f.txt")),
                  ("--http2", "https://127.0.0.1:%d/f.txt" % tls_port))
        for how, url in checks:
            r = curl("-k", how, url, timeout=10)
            if r.stdout != b"fuzz\n":
                path = self._keep(made, sent)
                self.fail("after %d inputs (seed %d), %s %s: %r %r; batch kept in %s" % (
                    sent, SEED, how, url, r.stdout[:200], r.stderr[-300:], path))

    @staticmethod
    def _keep(made, sent):
        d = os.path.join(OUT, "fuzz")
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "net-%d-%d.txt" % (SEED, sent))
        with open(path, "w") as f:
            for kind, data, split in made:
                f.write("%s %d %s\n" % (kind, split, data.hex()))
        return path
