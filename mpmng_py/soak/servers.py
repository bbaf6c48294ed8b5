"""The soak's two private httpd instances (mpmng_py/privhttpd.py): the front
server under test (mpm_reuseport with mod_fhcache, TLS, HTTP/2, CGI through
mod_cgid, a reverse proxy) and the backend it proxies to (stock mpm_event,
never restarted)."""
import os

from mpmng_py import privhttpd
from mpmng_py.soak import content
from mpmng_py.tlscert import make_certificate

FHCACHE_SO = os.path.join(privhttpd.OUT, "mod_fhcache.so")
FRONT_MODULES = ["ssl", "socache_shmcb", "http2", "proxy", "proxy_http", "headers"]

# Two children (one per CPU bucket) of 32 threads.  MaxRequestWorkers and
# ServerLimit leave room for a second generation during a graceful restart
# (otherwise the new one has to take the old one's slots) and for
# replacements of killed children.  The spare-thread limits keep one child
# per bucket at this load, so samples compare like with like.
FRONT_CHILDREN = 2
FRONT_SIZING = """\
ReusePortBuckets 2
StartServers 2
ServerLimit 8
ThreadLimit 32
ThreadsPerChild 32
MaxRequestWorkers 256
MinSpareThreads 32
MaxSpareThreads 128
EnableSendfile On
"""

# The proxy drops pooled backend connections after 2 s idle, well before
# the backend's KeepAliveTimeout closes them: otherwise a request can be
# sent on a connection the backend is closing (a 502 that is no bug of the
# front server's).
BACKEND_SIZING = """\
StartServers 1
ServerLimit 1
ThreadsPerChild 16
MaxRequestWorkers 16
KeepAliveTimeout 30
"""


def _start(h):
    """h.start(), stopping whatever it started if it fails (the caller
    never gets h then)."""
    try:
        h.start()
    except BaseException:
        h.stop()
        raise
    return h


def start_backend():
    b = privhttpd.Httpd(mpm="event", directives=BACKEND_SIZING)
    for name, data in content.backend_files().items():
        b.write_file(name, data)
    return _start(b)


def _front_directives(h, backend_port):
    crt, key = make_certificate(h.dir, "localhost")
    cgi = os.path.join(h.dir, "cgi-bin")
    return (
        "LoadModule fhcache_module %s\nFHCache On\n" % FHCACHE_SO + FRONT_SIZING +
        "Protocols h2 h2c http/1.1\n"
        "SSLSessionCache shmcb:%s/logs/ssl_scache(512000)\n" % h.dir +
        "ScriptAlias /cgi-bin/ %s/\n<Directory %s>\n  Require all granted\n</Directory>\n"
        % (cgi, cgi) +
        "ProxyPass /backend/ http://127.0.0.1:%d/ ttl=2\n" % backend_port +
        # The serving child's PID and the client's port: which child had a
        # connection, when a failure needs explaining.
        'LogFormat "%%P %%{remote}p %%>s %%B %%D \\"%%r\\" %%H" soak\n'
        "CustomLog %s/logs/access_log soak\n" % h.dir +
        "<VirtualHost 127.0.0.1:%d>\n  ServerName localhost\n  SSLEngine on\n"
        "  SSLCertificateFile %s\n  SSLCertificateKeyFile %s\n</VirtualHost>\n"
        % (h.tls_port, crt, key))


def start_front(backend_port, cgi_module="cgid", extra=""):
    """The server under test; h.port is plain HTTP/1.1 and h2c, h.tls_port
    HTTPS with h2 and http/1.1 by ALPN.  CGI by mod_cgid (what Debian
    enables with threaded MPMs) or mod_cgi."""
    h = privhttpd.Httpd(mpm="reuseport", modules=FRONT_MODULES + [cgi_module])
    h.tls_port = privhttpd.free_port()
    h.listen.append("127.0.0.1:%d" % h.tls_port)
    for name, data in content.static_files().items():
        h.write_file("static/" + name, data)
    h.write_file(content.DEPLOY_PATH.lstrip("/"), content.deploy_body(0))
    for name, text in content.CGI_SCRIPTS.items():
        h.write_file(name, text, mode=0o755, base="cgi-bin")
    h.directives = _front_directives(h, backend_port) + extra + "\n"
    return _start(h)


def worker_children(h):
    """The parent's children that serve connections: every child but
    mod_cgid's daemon, which is single-threaded."""
    out = []
    for pid in h.children():
        try:
            if len(os.listdir("/proc/%d/task" % pid)) > 1:
                out.append(pid)
        except OSError:
            pass
    return out
