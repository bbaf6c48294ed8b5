"""HTTP/2 by hand, for tests that need a client to do what no real one
does (stop reading, never open its window): the connection preface, a
SETTINGS frame, a GET's HEADERS frame without HPACK state, and frames
read back."""
from mpmng_py.sockio import ShortRead, recv_exactly

H2_MAGIC = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
SETTINGS_INITIAL_WINDOW_SIZE = 0x4


def h2_settings_frame(**settings):
    """A SETTINGS frame; settings by id, e.g. {0x4: 1024} as
    h2_settings_frame(initial_window=1024)."""
    ids = {"initial_window": SETTINGS_INITIAL_WINDOW_SIZE}
    payload = b"".join(ids[k].to_bytes(2, "big") + v.to_bytes(4, "big")
                       for k, v in settings.items())
    return len(payload).to_bytes(3, "big") + b"\x04\x00" + b"\x00" * 4 + payload


# The client's preface with empty SETTINGS
H2_PREFACE = H2_MAGIC + h2_settings_frame()


def h2_get_frame(stream, host, path, tls):
    """A HEADERS frame (END_STREAM|END_HEADERS) for GET path: HPACK literal
    fields without indexing, so no encoder is needed."""
    def field(name, value):
        name, value = name.encode(), value.encode()
        return b"\x00" + bytes([len(name)]) + name + bytes([len(value)]) + value
    block = (field(":method", "GET") + field(":scheme", "https" if tls else "http")
             + field(":path", path) + field(":authority", host))
    return (len(block).to_bytes(3, "big") + b"\x01\x05" + stream.to_bytes(4, "big")
            + block)


def h2_frames(sock, want):
    """(type, stream, payload) of the frames in the first `want` bytes read."""
    sock.settimeout(10)
    try:
        buf = recv_exactly(sock, want)
    except ShortRead as short:
        buf = short.partial
    out, pos = [], 0
    while pos + 9 <= len(buf):
        n = int.from_bytes(buf[pos:pos + 3], "big")
        sid = int.from_bytes(buf[pos + 5:pos + 9], "big") & 0x7FFFFFFF
        out.append((buf[pos + 3], sid, buf[pos + 9:pos + 9 + n]))
        pos += 9 + n
    return out


# Frame types and flags used below (RFC 9113 section 6)
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY, WINDOW_UPDATE = 0, 1, 3, 4, 6, 7, 8
END_STREAM, ACK, PADDED, PRIORITY = 0x1, 0x1, 0x8, 0x20
REFUSED_STREAM = 0x7
MAX_WINDOW = (1 << 31) - 1


def h2_frame(ftype, flags, stream, payload=b""):
    return (len(payload).to_bytes(3, "big") + bytes([ftype, flags])
            + stream.to_bytes(4, "big") + payload)


def h2_read_frame(sock):
    """(type, flags, stream, payload), or None at the connection's end."""
    try:
        head = recv_exactly(sock, 9)
        payload = recv_exactly(sock, int.from_bytes(head[:3], "big"))
    except ShortRead:
        return None
    return head[3], head[4], int.from_bytes(head[5:9], "big") & 0x7FFFFFFF, payload


def unpadded(flags, payload, priority=False):
    if flags & PADDED:
        payload = payload[1:len(payload) - payload[0]]
    if priority:
        payload = payload[5:]
    return payload


class H2Requests:
    """GETs of one path on one HTTP/2 connection, `depth` streams open at
    a time, until the server ends the connection (or `stop()` is true), and
    what became of each stream (RFC 9113 section 6.8): `ok` (200, the whole
    `size` bytes), `refused` (above the GOAWAY's last stream id, or reset
    with REFUSED_STREAM: the server says it did not process them, a client
    retries them) and `lost` (anything else: started, then neither answered
    whole nor refused)."""

    def __init__(self, sock, authority, path, size, tls, depth=4):
        self.sock, self.size, self.depth = sock, size, depth
        self.request = lambda sid: h2_get_frame(sid, authority, path, tls)
        self.ok, self.refused, self.lost = 0, 0, []
        self.goaway = None
        self.open = {}      # stream id -> [status 200 seen, bytes]
        self.next_id = 1
        self.unacked = 0    # DATA bytes since the connection window was last topped up

    def run(self, stop):
        self.sock.sendall(H2_MAGIC + h2_settings_frame(initial_window=MAX_WINDOW)
                          + h2_frame(WINDOW_UPDATE, 0, 0, (MAX_WINDOW - 65535).to_bytes(4, "big")))
        while True:
            while (self.goaway is None and not stop() and len(self.open) < self.depth):
                self.open[self.next_id] = [False, 0]
                self.sock.sendall(self.request(self.next_id))
                self.next_id += 2
            if not self.open and (self.goaway is not None or stop()):
                return self
            frame = h2_read_frame(self.sock)
            if frame is None:
                break
            self.on_frame(*frame)
        for sid in sorted(self.open):   # the connection ended under them
            if self.goaway is not None and sid > self.goaway:
                self.refused += 1
            else:
                self.lost.append((sid, "connection closed (GOAWAY %s)" % self.goaway))
        self.open.clear()
        return self

    def on_frame(self, ftype, flags, sid, payload):
        if ftype == SETTINGS and not flags & ACK:
            self.sock.sendall(h2_frame(SETTINGS, ACK, 0))
        elif ftype == PING and not flags & ACK:
            self.sock.sendall(h2_frame(PING, ACK, 0, payload))
        elif ftype == GOAWAY:
            self.goaway = int.from_bytes(payload[:4], "big") & 0x7FFFFFFF
            for s in [s for s in self.open if s > self.goaway]:
                del self.open[s]
                self.refused += 1
        elif ftype == RST_STREAM and sid in self.open:
            del self.open[sid]
            code = int.from_bytes(payload[:4], "big")
            if code == REFUSED_STREAM:
                self.refused += 1
            else:
                self.lost.append((sid, "RST_STREAM %d" % code))
        elif ftype == HEADERS and sid in self.open:
            block = unpadded(flags, payload, flags & PRIORITY)
            self.open[sid][0] = self.open[sid][0] or 0x88 in block[:2]  # :status 200
            self.stream_data(flags, sid)
        elif ftype == DATA and sid in self.open:
            self.open[sid][1] += len(unpadded(flags, payload))
            self.unacked += len(payload)
            if self.unacked > (1 << 30):
                self.sock.sendall(h2_frame(WINDOW_UPDATE, 0, 0, self.unacked.to_bytes(4, "big")))
                self.unacked = 0
            self.stream_data(flags, sid)

    def stream_data(self, flags, sid):
        if not flags & END_STREAM:
            return
        status_ok, n = self.open.pop(sid)
        if status_ok and n == self.size:
            self.ok += 1
        else:
            self.lost.append((sid, "answered %s with %d bytes" % (
                "200" if status_ok else "not 200", n)))
