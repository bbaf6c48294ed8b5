"""HTTP/2 by hand, for tests that need a client to do what no real one
does (stop reading, never open its window): the connection preface, a
SETTINGS frame, a GET's HEADERS frame without HPACK state, and frames
read back."""

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
    buf = b""
    while len(buf) < want:
        more = sock.recv(want - len(buf))
        if not more:
            break
        buf += more
    out, pos = [], 0
    while pos + 9 <= len(buf):
        n = int.from_bytes(buf[pos:pos + 3], "big")
        sid = int.from_bytes(buf[pos + 5:pos + 9], "big") & 0x7FFFFFFF
        out.append((buf[pos + 3], sid, buf[pos + 9:pos + 9 + n]))
        pos += 9 + n
    return out
