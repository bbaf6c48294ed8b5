"""Private Windows httpd instances with mod_ssl and mod_http2 under wine64:
an https listener beside the http one (TLS 1.2 and 1.3, a throwaway
certificate), HTTP/2 on both (h2 by ALPN, h2c), mod_fhcache if asked."""
import os
import socket

from mpmng_py.tlscert import client_context, make_certificate
from mpmng_py.win.winhttpd import MODULES, WINOUT, WinHttpd, available, free_port, winpath

FHCACHE = os.path.join(WINOUT, "fhcache", "mod_fhcache.so")
TLS_MODULES = MODULES + ["ssl", "socache_shmcb", "http2", "cgi"]


def has_tls():
    return available("ng") and os.path.exists(
        os.path.join(WINOUT, "ng", "modules", "mod_ssl.so"))


class TlsWinHttpd(WinHttpd):
    """A WinHttpd with an https listener (and h2) beside its http one."""

    def __init__(self, flavour="ng", cache=False, threads=32, extra="", accept_filter="",
                 env=None):
        self.tls_port = free_port()
        self.cache = cache
        super().__init__(flavour, threads=threads, modules=TLS_MODULES, extra=extra, env=env)
        crt, key = make_certificate(self.dir)
        cache_conf = ('LoadModule fhcache_module "%s"\nFHCache On\n' % winpath(FHCACHE)
                      if cache else "")
        self.extra = """{cache}
Listen 127.0.0.1:{tls} https
{accept_filter}
SSLSessionCache "shmcb:{d}/logs/ssl_scache(512000)"
Protocols h2 h2c http/1.1
H2WindowSize 65535
<VirtualHost 127.0.0.1:{tls}>
    SSLEngine on
    SSLCertificateFile "{crt}"
    SSLCertificateKeyFile "{key}"
    SSLProtocol -all +TLSv1.2 +TLSv1.3
</VirtualHost>
{extra}
""".format(cache=cache_conf, tls=self.tls_port, d=winpath(self.dir), crt=winpath(crt),
           key=winpath(key), accept_filter=accept_filter, extra=extra)

    def url(self, path, tls=True):
        return ("https://127.0.0.1:%d%s" % (self.tls_port, path) if tls
                else "http://127.0.0.1:%d%s" % (self.port, path))

    def tls_socket(self, version=None, alpn=None):
        raw = socket.create_connection(("127.0.0.1", self.tls_port), timeout=60)
        return client_context(version, alpn).wrap_socket(raw, server_hostname="localhost")
