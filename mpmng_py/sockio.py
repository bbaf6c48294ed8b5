"""Socket reads the test helpers share (fcgiapp.py, h2raw.py)."""


class ShortRead(EOFError):
    """The peer closed before the bytes asked for came; `partial` holds what did."""

    def __init__(self, partial, wanted):
        super().__init__("closed after %d of %d bytes" % (len(partial), wanted))
        self.partial = partial


def recv_exactly(sock, n):
    """The next n bytes from sock; ShortRead if it closes first."""
    buf = b""
    while len(buf) < n:
        more = sock.recv(n - len(buf))
        if not more:
            raise ShortRead(buf, n)
        buf += more
    return buf
