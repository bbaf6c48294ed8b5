"""A minimal FastCGI responder for tests: answers every request with the
same small body, the way php-fpm answers a PHP page (headers and body in
FCGI_STDOUT, then an empty FCGI_STDOUT and FCGI_END_REQUEST).  Runs in a
thread on a loopback port: `with FcgiApp(b"hello\\n") as app: app.port`."""
import socket
import struct
import threading

from mpmng_py.sockio import recv_exactly

BEGIN_REQUEST, END_REQUEST, STDIN, STDOUT = 1, 3, 5, 6
KEEP_CONN = 1
HEADER = struct.Struct(">BBHHBB")   # version, type, request id, length, padding, reserved


def _record(kind, req_id, content=b""):
    return HEADER.pack(1, kind, req_id, len(content), 0, 0) + content


class FcgiApp:
    def __init__(self, body, content_type="text/plain"):
        self.answer = b"Content-Type: %s\r\n\r\n%s" % (content_type.encode(), body)
        self.requests = 0       # answered or being answered: counted before the answer goes
        self._count = threading.Lock()
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(128)
        self.port = self.sock.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self.sock.close()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._connection, args=(conn,), daemon=True).start()

    def _connection(self, conn):
        with conn:
            try:
                while self._one_request(conn):
                    pass
            except (EOFError, OSError):
                pass

    def _one_request(self, conn):
        """Read one request to the end of its FCGI_STDIN and answer it;
        True if the web server keeps the connection for another."""
        keep = False
        while True:
            _, kind, req_id, length, padding, _ = HEADER.unpack(recv_exactly(conn, HEADER.size))
            content = recv_exactly(conn, length + padding)[:length]
            if kind == BEGIN_REQUEST:
                keep = bool(content[2] & KEEP_CONN)
            elif kind == STDIN and not length:
                break
        # Counted before the answer goes (a client that has it may look at
        # once) and under a lock (+= from several connection threads).
        with self._count:
            self.requests += 1
        conn.sendall(_record(STDOUT, req_id, self.answer) + _record(STDOUT, req_id)
                     + _record(END_REQUEST, req_id, struct.pack(">IB3x", 0, 0)))
        return keep
