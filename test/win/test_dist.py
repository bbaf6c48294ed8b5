"""The Windows distribution (`make win-dist`) as a Windows user runs it.

The zip is unzipped into drive C: of a private copy of the wineprefix (no
httpd in it before) and run from C:\\Apache24\\bin with the configuration
it ships.  Changed in it: the ports (Listen in httpd.conf and
httpd-ssl.conf, to free loopback ports), and what the zip's ReadMe tells a
user to uncomment for HTTPS and HTTP/2 (after a first `httpd -t` of the
configuration as shipped).  What a site adds (a proxied
backend, a rewrite rule, gzip, CGI) comes from one file of the test's,
given with -c "Include ...".  Checked: httpd -t without -f or -d (the
ServerRoot is found from httpd.exe's place), the page, HTTPS with a
certificate made by the zip's openssl.exe, HTTP/2, the proxy, the rewrite,
a CGI batch file, gzip, and the service: -k install, net start, -k stop,
-k uninstall."""
import glob
import http.server
import os
import re
import subprocess
import tempfile
import threading
import unittest
import zipfile

from mpmng_py import ROOT
from mpmng_py.win.wineprefix import WinePrefix, wait_until
from mpmng_py.win.winhttpd import WINE, available, free_port, wine_env, winpath

DIST = os.path.join(ROOT, "out", "win")
BACKEND_BODY = b"hello from the backend\n"
CGI = "@echo off\r\necho Content-Type: text/plain\r\necho.\r\necho hello from cgi\r\n"


def the_zip():
    zips = sorted(glob.glob(os.path.join(DIST, "mpm-ng-httpd-2.4.*-win64.zip")))
    return zips[-1] if zips else None


class Backend(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", str(len(BACKEND_BODY)))
        self.end_headers()
        self.wfile.write(BACKEND_BODY)

    def log_message(self, *args):
        pass


def edit(path, pattern, repl, count=1):
    """Replaces pattern (a regex, multiline) in the file; fails if it
    does not occur `count` times, so a changed template is noticed."""
    with open(path, newline="") as f:
        text = f.read()
    new, n = re.subn(pattern, repl, text, flags=re.M)
    if n != count:
        raise AssertionError("%s: %r found %d times, expected %d"
                             % (path, pattern, n, count))
    with open(path, "w", newline="") as f:
        f.write(new)


def curl(*args, timeout=30):
    r = subprocess.run(["curl", "-sS", "-m", "20"] + list(args),
                       capture_output=True, timeout=timeout)
    return r.returncode, r.stdout, r.stderr.decode(errors="replace")


@unittest.skipUnless(available("ng"), "no cross-built mpm_winnt_ng (build/win/build.sh)")
class Distribution(unittest.TestCase):
    """In order: test_01 ... on one unzipped tree."""

    @classmethod
    def setUpClass(cls):
        zip_path = the_zip()
        if not zip_path:
            raise AssertionError("no zip in %s: run build/win/dist.sh (make win-dist)" % DIST)
        cls.pfx = WinePrefix("wndist")
        with zipfile.ZipFile(zip_path) as z:
            z.extractall(cls.pfx.drive_c())
        cls.root = os.path.join(cls.pfx.drive_c(), "Apache24")
        cls.exe = os.path.join(cls.root, "bin", "httpd.exe")
        cls.port, cls.sport = free_port(), free_port()
        cls.backend = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Backend)
        threading.Thread(target=cls.backend.serve_forever, daemon=True).start()
        cls.tmp = tempfile.mkdtemp(prefix="wndist-site-")
        cls.server = None
        cls.configure()

    @classmethod
    def tearDownClass(cls):
        try:
            cls.stop_console()
            cls.pfx.run(cls.exe, "-k", "uninstall")
        finally:
            cls.backend.shutdown()
            cls.pfx.close()

    # ---- the user's edits ----
    @classmethod
    def configure(cls):
        conf = os.path.join(cls.root, "conf", "httpd.conf")
        ssl = os.path.join(cls.root, "conf", "extra", "httpd-ssl.conf")
        edit(conf, r"^Listen 80\r?$", "Listen 127.0.0.1:%d" % cls.port)
        edit(ssl, r"^Listen 443\r?$", "Listen 127.0.0.1:%d" % cls.sport)
        edit(ssl, r"_default_:443", "_default_:%d" % cls.sport)
        edit(ssl, r"www\.example\.com:443", "localhost:%d" % cls.sport)
        # what a site adds
        site = os.path.join(cls.tmp, "site.conf")
        with open(site, "w") as f:
            f.write("""Protocols h2 h2c http/1.1
<IfModule !proxy_module>
LoadModule proxy_module modules/mod_proxy.so
</IfModule>
<IfModule !proxy_http_module>
LoadModule proxy_http_module modules/mod_proxy_http.so
</IfModule>
<IfModule !rewrite_module>
LoadModule rewrite_module modules/mod_rewrite.so
</IfModule>
<IfModule !deflate_module>
LoadModule deflate_module modules/mod_deflate.so
</IfModule>
<IfModule !cgi_module>
LoadModule cgi_module modules/mod_cgi.so
</IfModule>
ProxyPass /backend/ http://127.0.0.1:%d/
RewriteEngine On
RewriteRule ^/old$ /index.html [R=301,L]
AddOutputFilterByType DEFLATE text/html text/plain
""" % cls.backend.server_address[1])
        cls.site_args = ["-c", "Include " + winpath(site)]
        with open(os.path.join(cls.root, "cgi-bin", "hello.bat"), "w", newline="") as f:
            f.write(CGI)

    @classmethod
    def enable_https_and_h2(cls):
        """What the ReadMe says to uncomment for HTTPS and HTTP/2."""
        conf = os.path.join(cls.root, "conf", "httpd.conf")
        for line in ["LoadModule ssl_module modules/mod_ssl.so",
                     "LoadModule socache_shmcb_module modules/mod_socache_shmcb.so",
                     "LoadModule http2_module modules/mod_http2.so",
                     "Include conf/extra/httpd-ssl.conf"]:
            edit(conf, r"^#%s\r?$" % re.escape(line), line)

    @classmethod
    def httpd(cls, *args, timeout=240):
        return cls.pfx.run(cls.exe, *args, timeout=timeout)

    @classmethod
    def error_log(cls):
        try:
            with open(os.path.join(cls.root, "logs", "error_log"), errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    @classmethod
    def stop_console(cls):
        if cls.server and cls.server.poll() is None:
            cls.httpd("-k", "stop", timeout=120)
            try:
                cls.server.wait(60)
            except subprocess.TimeoutExpired:
                cls.server.kill()
        cls.server = None

    def page(self, scheme="http", port=None, path="/", *extra):
        return curl("-k", "-D", "-", *extra, "%s://127.0.0.1:%d%s" % (
            scheme, port or (self.sport if scheme == "https" else self.port), path))

    # ---- the steps ----
    def test_01_the_tree_is_the_one_windows_users_know(self):
        for d in ["bin", "conf", "conf/extra", "modules", "htdocs", "logs", "cgi-bin",
                  "icons", "error", "licenses"]:
            self.assertTrue(os.path.isdir(os.path.join(self.root, d)), d)
        for f in ["ReadMe.txt", "bin/httpd.exe", "bin/openssl.exe", "bin/ab.exe",
                  "bin/htpasswd.exe", "modules/mod_fhcache.so", "modules/mod_ssl.so",
                  "modules/mod_http2.so", "modules/mod_proxy_http2.so",
                  "modules/mod_rewrite.so", "conf/openssl.cnf", "conf/mime.types"]:
            self.assertTrue(os.path.isfile(os.path.join(self.root, f)), f)
        with open(os.path.join(self.root, "conf", "httpd.conf")) as f:
            conf = f.read()
        self.assertIn('Define SRVROOT "c:/Apache24"', conf)
        self.assertIn('ServerRoot "${SRVROOT}"', conf)
        self.assertNotIn("mod_bucketeer", conf)

    def test_02_syntax_ok_without_f_or_d(self):
        rc, out = self.httpd("-t")
        self.assertEqual(rc, 0, out)
        self.assertIn("Syntax OK", out)
        rc, out = self.httpd("-V")
        self.assertIn("WinNT-NG", out)

    def test_02b_every_module_in_the_zip_loads(self):
        """A module whose DLL imports one the zip lacks (libxml2.dll once
        imported libwinpthread-1.dll) stops httpd at LoadModule: load them
        all once.  The MPM is compiled in; mod_fhcache stays off."""
        lines = []
        for so in sorted(glob.glob(os.path.join(self.root, "modules", "mod_*.so"))):
            name = os.path.basename(so)[len("mod_"):-len(".so")]
            lines.append("<IfModule !%s_module>\nLoadModule %s_module modules/%s\n"
                         "</IfModule>" % (name, name, os.path.basename(so)))
        self.assertGreater(len(lines), 100)
        every = os.path.join(self.tmp, "every-module.conf")
        with open(every, "w") as f:
            f.write("\n".join(lines) + "\n")
        rc, out = self.httpd("-t", "-c", "Include " + winpath(every))
        self.assertEqual(rc, 0, out)
        self.assertIn("Syntax OK", out)
        rc, out = self.httpd("-M", "-c", "Include " + winpath(every))
        loaded = set(re.findall(r"^ (\w+)_module \(shared\)", out, re.M))
        for mod in ("xml2enc", "proxy_html", "ssl", "http2", "lua", "md", "brotli"):
            self.assertIn(mod, loaded, out[-2000:])

    def test_03_a_test_certificate_from_the_zips_openssl(self):
        bin_dir = os.path.dirname(self.exe)
        rc, out = self.pfx.run(os.path.join(bin_dir, "openssl.exe"), "req", "-x509",
                               "-newkey", "rsa:2048", "-nodes", "-days", "2",
                               "-keyout", winpath(os.path.join(self.root, "conf", "server.key")),
                               "-out", winpath(os.path.join(self.root, "conf", "server.crt")),
                               "-subj", "/CN=localhost",
                               "-config", winpath(os.path.join(self.root, "conf",
                                                               "openssl.cnf")))
        self.assertEqual(rc, 0, out)
        self.enable_https_and_h2()
        rc, out = self.httpd("-t", *self.site_args)
        self.assertEqual(rc, 0, out)

    def test_04_the_console_server_serves_every_feature(self):
        type(self).server = subprocess.Popen(
            [WINE, self.exe] + self.site_args, env=wine_env(self.pfx.env),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True)
        self.assertTrue(wait_until(lambda: self.page()[0] == 0, 90), self.error_log())
        rc, out, err = self.page()
        self.assertIn(b"200 OK", out)
        self.assertIn(b"It works!", out)
        rc, out, err = self.page("https")
        self.assertEqual(rc, 0, err + self.error_log())
        self.assertIn(b"It works!", out)
        rc, out, err = self.page("https", None, "/", "--http2", "-o", "/dev/null",
                                 "-w", "%{http_version}")
        self.assertEqual(out.splitlines()[-1], b"2", err)
        rc, out, err = self.page("http", None, "/backend/x")
        self.assertIn(BACKEND_BODY, out, err + self.error_log())
        rc, out, err = self.page("http", None, "/old")
        self.assertRegex(out, rb"HTTP/1.1 301.*\r\n(.*\r\n)*Location: http://[^\r]*/index.html")
        rc, out, err = self.page("http", None, "/cgi-bin/hello.bat")
        self.assertIn(b"hello from cgi", out, err + self.error_log())
        rc, out, err = self.page("http", None, "/index.html", "-H", "Accept-Encoding: gzip")
        self.assertIn(b"Content-Encoding: gzip", out)
        self.stop_console()
        self.assertTrue(wait_until(lambda: self.page()[0] == 7, 30))   # refused

    def test_05_the_service_install_start_stop(self):
        rc, out = self.httpd("-k", "install")
        self.assertEqual(rc, 0, out)
        self.assertIn("Apache2.4", out)
        rc, out = self.pfx.run("net", "start", "Apache2.4")
        self.assertEqual(rc, 0, out)
        self.assertTrue(wait_until(lambda: b"It works!" in self.page()[1], 90),
                        self.error_log())
        self.assertIn(b"It works!", self.page("https")[1])
        rc, out = self.httpd("-k", "stop")
        self.assertEqual(rc, 0, out + self.error_log())
        self.assertTrue(wait_until(lambda: self.page()[0] == 7, 60))
        rc, out = self.httpd("-k", "uninstall")
        self.assertEqual(rc, 0, out)
        self.assertIn("removed", out)


if __name__ == "__main__":
    unittest.main()
