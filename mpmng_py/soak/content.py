"""What the soak's server serves and how a response is judged: static files
of fixed sizes, the deployed file's versions, the CGI scripts and the upload
bodies.  Every body is computed from its name, so a client can check each
response byte for byte without keeping anything but the hash."""
import hashlib
import random
import re

# Static files served from the docroot (through mod_fhcache): small enough to
# be kept in memory (<= FHCacheMemoryFileMax 16K), served from a descriptor,
# and a 1 MiB download (sendfile on plain connections, read for TLS).
STATIC_SIZES = {"s500.bin": 500, "s16k.bin": 16 * 1024, "s1m.bin": 1 << 20}
# Files of the proxied backend (a second private httpd), under /backend/.
BACKEND_SIZES = {"be500.bin": 500, "be16k.bin": 16 * 1024}

# The deployed file cycles through sizes on both sides of the cache's
# in-memory limit, so a deploy also changes how the cache holds it.
DEPLOY_PATH = "/deploy/app.txt"
DEPLOY_SIZES = (300, 5000, 20000, 70000)
_VERSION_RE = re.compile(rb"^soak deploy version (\d+)\n")

# sh, not python: a CGI start costs ~1 ms instead of ~15 ms of CPU.
CGI_HELLO = ("#!/bin/sh\n"
             "printf 'Content-Type: text/plain\\r\\n\\r\\nhello %s\\n' \"$QUERY_STRING\"\n")
CGI_SHA = ("#!/bin/sh\n"
           "printf 'Content-Type: text/plain\\r\\n\\r\\n'\n"
           "sum=$(head -c \"${CONTENT_LENGTH:-0}\" | sha256sum)\n"
           "printf 'sha256=%s length=%s\\n' \"${sum%% *}\" \"$CONTENT_LENGTH\"\n")
CGI_SCRIPTS = {"hello.sh": CGI_HELLO, "sha.sh": CGI_SHA}


def body_of(name, size):
    """Content that differs at every offset (a misplaced range shows)."""
    out, seed, n = [], name.encode(), 0
    while n < size:
        seed = hashlib.sha256(seed).digest()
        out.append(seed)
        n += len(seed)
    return b"".join(out)[:size]


def sha(data):
    return hashlib.sha256(data).hexdigest()


def static_files():
    return {name: body_of(name, size) for name, size in STATIC_SIZES.items()}


def backend_files():
    return {name: body_of(name, size) for name, size in BACKEND_SIZES.items()}


def expected_hashes():
    """URL path -> sha256 of the body every GET of it must return."""
    out = {"/static/" + n: sha(b) for n, b in static_files().items()}
    out.update({"/backend/" + n: sha(b) for n, b in backend_files().items()})
    return out


def deploy_body(version):
    """The deployed file's content at a version: its number on the first
    line, then filler that depends on the version too (so a body mixing two
    versions never passes the check)."""
    head = b"soak deploy version %d\n" % version
    size = DEPLOY_SIZES[version % len(DEPLOY_SIZES)]
    line = b"v%d " % version * 16 + b"\n"
    filler = (line * (size // len(line) + 1))[:max(0, size - len(head))]
    return head + filler


def deploy_version(body):
    """The version a deployed-file body claims, or None if the body is not
    exactly that version's content (torn, mixed, truncated)."""
    m = _VERSION_RE.match(body)
    if not m:
        return None
    v = int(m.group(1))
    return v if body == deploy_body(v) else None


def hello_body(query):
    return b"hello %s\n" % query.encode()


def sha_reply(data):
    """What CGI_SHA answers to an upload of data."""
    return b"sha256=%s length=%d\n" % (sha(data).encode(), len(data))


def upload_bodies(seed, count=8, low=64 * 1024, high=1 << 20):
    """A few random upload bodies (64 KiB - 1 MiB), reproducible from the
    run's seed."""
    rnd = random.Random(seed)
    return [rnd.randbytes(rnd.randint(low, high)) for _ in range(count)]
