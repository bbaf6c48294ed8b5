"""Clients that take their time, many at once, for tests and benchmarks.

SlowClients(host, port, n, kind) opens n connections from an asyncio loop in a
background thread, so the caller can load the server meanwhile:

  headers    send a request line and a Host line, then one more header line
             every `interval` seconds, never ending the head (slowloris)
  body       send a POST head with Content-Length `body`, then `chunk` bytes
             of body every `interval` seconds until it is all sent, and
             read the answer
  handshake  send a TLS ClientHello and nothing after it
  readers    ask for `path` with a small receive buffer, then read one byte
             every `interval` seconds (a plain socket: nothing reads ahead;
             one ticker reads them all, so 5,000 readers cost the client
             little CPU beside the load it measures)
  silent     connect and send nothing

`finish_after=k` makes "headers" clients end their head after k extra lines
and read the answer.  Each connection records what happened to it:
`outcomes()` counts "open", "answered NNN", "closed" (by the server without an
answer), "refused" and "error: ...".
"""
import asyncio
import resource
import socket
import ssl
import threading
import time

KINDS = ("headers", "body", "handshake", "readers", "silent")


def raise_nofile(need):
    """Raise this process's open-files limit to at least `need` (up to the
    hard limit); returns the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = max(soft, min(hard, need))
    if want != soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    return want


def client_hello(server_name="localhost"):
    """The bytes of a TLS ClientHello, as Python's ssl would send them."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(incoming, outgoing, server_hostname=server_name)
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outgoing.read()


class SlowClients:
    def __init__(self, host, port, count, kind="headers", interval=5.0, path="/",
                 body=10000, chunk=1000, finish_after=None, connect_timeout=30):
        if kind not in KINDS:
            raise ValueError("kind must be one of %s" % (KINDS,))
        self.host, self.port, self.count, self.kind = host, port, count, kind
        self.interval, self.path = interval, path
        self.body, self.chunk, self.finish_after = body, chunk, finish_after
        self.connect_timeout = connect_timeout
        self.results = ["connecting"] * count
        self.connected = 0
        self._loop = None
        self._thread = None
        self._stop = None
        self._all_connected = threading.Event()
        self._readers = {}      # i -> [socket, first bytes read]

    # ---- control ---------------------------------------------------------
    def start(self):
        """Open every connection (returns once each is open or failed)."""
        raise_nofile(self.count + 256)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        if not self._all_connected.wait(self.connect_timeout + 5):
            raise RuntimeError("slow clients: only %d of %d connected" % (
                self.connected, self.count))
        return self

    def stop(self):
        """Close every connection still open."""
        if self._loop and self._stop:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread:
            self._thread.join(30)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def outcomes(self):
        out = {}
        for r in list(self.results):
            out[r] = out.get(r, 0) + 1
        return out

    def wait(self, cond, timeout):
        """Wait until cond(outcomes()) is true; returns the last outcomes."""
        deadline = time.monotonic() + timeout
        while True:
            o = self.outcomes()
            if cond(o) or time.monotonic() >= deadline:
                return o
            time.sleep(0.05)

    # ---- the loop ----------------------------------------------------------
    def _run(self):
        self._loop = asyncio.new_event_loop()
        try:
            self._loop.run_until_complete(self._main())
        finally:
            self._loop.close()

    async def _main(self):
        self._stop = asyncio.Event()
        opened = [asyncio.Event() for _ in range(self.count)]
        one = self._one_reader if self.kind == "readers" else self._one
        tasks = [asyncio.ensure_future(one(i, opened[i])) for i in range(self.count)]
        if self.kind == "readers":
            tasks.append(asyncio.ensure_future(self._tick_readers()))
        await asyncio.gather(*(e.wait() for e in opened))
        self._all_connected.set()
        await self._stop.wait()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for sock, _ in self._readers.values():
            sock.close()

    async def _open(self):
        return await asyncio.open_connection(self.host, self.port)

    def _opened(self, i, opened):
        self.connected += 1
        self.results[i] = "open"
        opened.set()

    def _not_opened(self, i, e, opened):
        self.results[i] = "refused" if isinstance(e, ConnectionRefusedError) \
            else "error: %s" % type(e).__name__
        opened.set()

    # ---- readers: plain sockets, one ticker ---------------------------------
    async def _one_reader(self, i, opened):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.setblocking(False)
        try:
            await asyncio.wait_for(asyncio.get_running_loop().sock_connect(
                s, (self.host, self.port)), self.connect_timeout)
            s.send(b"GET %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (
                self.path.encode(), self.host.encode()))
        except (OSError, asyncio.TimeoutError) as e:
            s.close()
            self._not_opened(i, e, opened)
            return
        self._readers[i] = [s, b""]
        self._opened(i, opened)

    async def _tick_readers(self):
        while await self._pause():
            for i, entry in list(self._readers.items()):
                if not self._read_byte(i, entry):
                    entry[0].close()
                    del self._readers[i]

    def _read_byte(self, i, entry):
        """One byte from reader i; False once its connection is over.  The
        status is recorded as it comes ("reading NNN"), the end too."""
        try:
            more = entry[0].recv(1)
        except BlockingIOError:
            return True
        except OSError as e:
            self.results[i] = "error: %s" % type(e).__name__
            return False
        if not more:
            self.results[i] = "closed" if b"\r\n" not in entry[1] else "read to end"
            return False
        if len(entry[1]) < 64:
            entry[1] += more
            if entry[1].endswith(b"\r\n") and entry[1].count(b"\r\n") == 1:
                parts = entry[1].split()
                self.results[i] = "reading %s" % (
                    parts[1].decode() if len(parts) > 1 else "?")
        return True

    async def _one(self, i, opened):
        try:
            r, w = await asyncio.wait_for(self._open(), self.connect_timeout)
        except (OSError, asyncio.TimeoutError) as e:
            self._not_opened(i, e, opened)
            return
        self._opened(i, opened)
        reader = asyncio.ensure_future(self._read_answer(i, r))
        try:
            await self._send(i, w)      # returns once stop() was called
        except (OSError, asyncio.CancelledError):
            pass
        finally:
            reader.cancel()
            w.close()

    async def _read_answer(self, i, r):
        """Record the status of the first answer, or that the server closed
        (a handshake's answer is not HTTP: only its end counts)."""
        data = b""
        try:
            while self.kind == "handshake" or b"\r\n" not in data:
                more = await r.read(4096)
                if not more:
                    self.results[i] = "closed"
                    return
                data += more
        except OSError as e:
            self.results[i] = "error: %s" % type(e).__name__
            return
        parts = data.split(b"\r\n", 1)[0].split()
        self.results[i] = "answered %s" % (parts[1].decode() if len(parts) > 1 else "?")

    async def _pause(self):
        try:
            await asyncio.wait_for(self._stop.wait(), self.interval)
            return False
        except asyncio.TimeoutError:
            return True

    async def _send(self, i, w):
        host = b"Host: %s\r\n" % self.host.encode()
        if self.kind == "silent":
            await self._stop.wait()
        elif self.kind == "handshake":
            w.write(client_hello())
            await w.drain()
            await self._stop.wait()
        elif self.kind == "headers":
            w.write(b"GET %s HTTP/1.1\r\n" % self.path.encode() + host)
            await w.drain()
            n = 0
            while await self._pause():
                if self.finish_after is not None and n >= self.finish_after:
                    w.write(b"\r\n")
                    await w.drain()
                    break
                w.write(b"X-Slow-%d: %d\r\n" % (n, i))
                await w.drain()
                n += 1
            await self._stop.wait()
        else:
            w.write(b"POST %s HTTP/1.1\r\n" % self.path.encode() + host
                    + b"Content-Length: %d\r\n\r\n" % self.body)
            await w.drain()
            sent = 0
            while sent < self.body and await self._pause():
                n = min(self.chunk, self.body - sent)
                w.write(bytes([97 + (i + sent) % 26]) * n)
                await w.drain()
                sent += n
            await self._stop.wait()
