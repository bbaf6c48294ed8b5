"""A small HTTP/1.1 client over sockets (plain or TLS) for the soak: keeps
a connection alive between requests, tells the caller which local port a
request used and how many response bytes had arrived when it failed, so
that each failure can be attributed honestly."""
import select
import socket
import ssl
import time


class HttpError(Exception):
    """A request that failed.  got: response bytes received before the
    failure (0 means the server never answered it)."""

    def __init__(self, msg, got=0):
        super().__init__(msg)
        self.got = got


class Response:
    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body

    def keep_alive(self):
        return "close" not in self.headers.get("connection", "").lower()


def tls_context():
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx


class Connection:
    """One client connection; opened lazily by request().  t_open is when
    connect() started, port the local port, uses the requests sent on it."""

    def __init__(self, host, port, tls=None, timeout=30):
        self.host, self.port, self.tls, self.timeout = host, port, tls, timeout
        self.sock = None
        self.buf = b""
        self.got = 0
        self.uses = 0
        self.t_open = self.t_last = None
        self.local_port = 0

    def open(self):
        self.t_open = time.monotonic()
        self.uses = 0
        self.local_port = 0
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect((self.host, self.port))
            self.local_port = sock.getsockname()[1]
            if self.tls:
                sock = self.tls.wrap_socket(sock, server_hostname="localhost")
        except (OSError, ssl.SSLError) as e:
            sock.close()
            raise HttpError("connect: %s: %s" % (type(e).__name__, e)) from None
        self.sock, self.buf = sock, b""

    def close(self):
        if self.sock:
            try:
                self.sock.close()
            except OSError:
                pass
        self.sock = None

    def closed_by_server(self):
        """Whether the server closed this idle kept-alive connection (it is
        readable: EOF, or a TLS close_notify; an HTTP/1.1 server sends
        nothing unasked).  A client looks before it sends, as browsers do;
        a request sent anyway would meet the close."""
        if self.sock is None:
            return False
        try:
            if isinstance(self.sock, ssl.SSLSocket) and self.sock.pending():
                return True
            return bool(select.select([self.sock], [], [], 0)[0])
        except (OSError, ValueError):
            return True

    def request(self, method, path, body=b"", close=False):
        """Send one request and read its response.  Raises HttpError."""
        if self.sock is None:
            self.open()
        head = "%s %s HTTP/1.1\r\nHost: localhost\r\n" % (method, path)
        if body:
            head += "Content-Length: %d\r\nContent-Type: application/octet-stream\r\n" % len(body)
        if close:
            head += "Connection: close\r\n"
        self.got = 0
        self.uses += 1
        try:
            self.sock.sendall(head.encode() + b"\r\n" + body)
            resp = self._read_response(method == "HEAD")
        except (OSError, ssl.SSLError, EOFError, ValueError) as e:
            self.close()
            raise HttpError("%s: %s" % (type(e).__name__, e), self.got) from None
        self.t_last = time.monotonic()
        if close or not resp.keep_alive():
            self.close()
        return resp

    # ---- reading -----------------------------------------------------------
    def _fill(self):
        data = self.sock.recv(1 << 16)
        if not data:
            raise EOFError("connection closed by the server")
        self.got += len(data)
        self.buf += data

    def _until(self, sep):
        while sep not in self.buf:
            self._fill()
        head, self.buf = self.buf.split(sep, 1)
        return head

    def _exact(self, n):
        parts, have = [self.buf[:n]], len(self.buf[:n])
        self.buf = self.buf[n:]
        while have < n:
            data = self.sock.recv(min(1 << 18, n - have))
            if not data:
                raise EOFError("connection closed after %d of %d body bytes" % (have, n))
            self.got += len(data)
            parts.append(data)
            have += len(data)
        return b"".join(parts)

    def _read_response(self, head_only):
        lines = self._until(b"\r\n\r\n").decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1."):
            raise ValueError("bad status line %r" % lines[0][:80])
        status = int(parts[1])
        headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        if head_only or status in (204, 304) or status < 200:
            body = b""
        elif "chunked" in headers.get("transfer-encoding", "").lower():
            body = self._chunked()
        elif "content-length" in headers:
            body = self._exact(int(headers["content-length"]))
        else:
            body = self._to_eof()
        return Response(status, headers, body)

    def _chunked(self):
        parts = []
        while True:
            size = int(self._until(b"\r\n").split(b";")[0], 16)
            if size == 0:
                self._until(b"\r\n")
                return b"".join(parts)
            parts.append(self._exact(size))
            self._exact(2)

    def _to_eof(self):
        parts = [self.buf]
        self.buf = b""
        while True:
            data = self.sock.recv(1 << 16)
            if not data:
                self.close()
                return b"".join(parts)
            parts.append(data)
