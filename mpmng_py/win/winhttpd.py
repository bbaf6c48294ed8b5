"""Private Windows httpd instances under wine64, driven from Linux.

Starts a cross-built httpd.exe (build/win/out/ng or .../stock) with a
generated configuration on a loopback port, waits until it answers, and
stops it: `httpd.exe -k stop` for mpm_winnt_ng (named events), by killing
its wine processes for stock mpm_winnt (its -k only talks to services).
"""
import os
import signal
import socket
import subprocess
import tempfile
import time

from mpmng_py import ROOT

WINOUT = os.environ.get("MPMNG_WINOUT") or os.path.join(ROOT, "build", "win", "out")
WINE = os.environ.get("WINE64", "/usr/lib/wine/wine64")
PREFIX = os.environ.get("MPMNG_WINEPREFIX",
                        os.path.join(ROOT, "build", "win", "cache", "wineprefix"))

MODULES = ["authz_core", "authz_host", "mime", "dir", "status", "alias",
           "log_config", "headers", "cgi"]


def winpath(p):
    return "Z:" + os.path.abspath(p)


def wine_env(extra=None):
    env = dict(os.environ)
    env.update({"WINEPREFIX": PREFIX, "WINEDEBUG": env.get("WINEDEBUG", "-all"),
                "WINEDLLOVERRIDES": "mscoree,mshtml=", "DISPLAY": ""})
    env.update(extra or {})
    return env


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def linux_pids(cmdline_needle, environ_needle=None):
    """Pids of the processes whose command line holds cmdline_needle (and
    whose environment holds environ_needle, if given)."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            if environ_needle is not None:
                with open("/proc/%s/environ" % d, "rb") as f:
                    if environ_needle not in f.read():
                        continue
            with open("/proc/%s/cmdline" % d, "rb") as f:
                if cmdline_needle in f.read():
                    pids.append(int(d))
        except OSError:
            pass
    return pids


def available(flavour="ng"):
    exe = os.path.join(WINOUT, flavour, "bin", "httpd.exe")
    return os.path.exists(exe) and os.path.exists(WINE)


class WinHttpd:
    """One instance.  `extra` is appended to the configuration; `docroot`
    files can be written with put()."""

    def __init__(self, flavour="ng", extra="", env=None, threads=32,
                 modules=MODULES):
        self.flavour = flavour
        self.prefix = os.path.join(WINOUT, flavour)
        self.exe = os.path.join(self.prefix, "bin", "httpd.exe")
        self.dir = tempfile.mkdtemp(prefix="wnhttpd-")
        self.docroot = os.path.join(self.dir, "htdocs")
        os.makedirs(self.docroot)
        os.makedirs(os.path.join(self.dir, "logs"))
        self.port = free_port()
        self.extra = extra
        self.env = env or {}
        self.threads = threads
        self.modules = [m for m in modules if os.path.exists(
            os.path.join(self.prefix, "modules", "mod_%s.so" % m))]
        self.proc = None
        self.conf = os.path.join(self.dir, "httpd.conf")

    # ---- files ----
    def put(self, name, data):
        path = os.path.join(self.docroot, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def error_log(self):
        try:
            with open(os.path.join(self.dir, "logs", "error.log"),
                      errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def write_conf(self, extra=None):
        loads = "\n".join('LoadModule %s_module "%s"' % (
            m, winpath(os.path.join(self.prefix, "modules", "mod_%s.so" % m)))
            for m in self.modules)
        conf = """ServerRoot "{root}"
Listen 127.0.0.1:{port}
ServerName localhost
PidFile "{d}/logs/httpd.pid"
ErrorLog "{d}/logs/error.log"
LogLevel info
{loads}
DocumentRoot "{d}/htdocs"
<Directory "{d}/htdocs">
    Require all granted
    Options Indexes FollowSymLinks ExecCGI
</Directory>
TypesConfig conf/mime.types
AddType text/plain .txt
AddType application/octet-stream .bin
<IfModule cgi_module>
    AddHandler cgi-script .exe
</IfModule>
<Location /server-status>
    SetHandler server-status
</Location>
ExtendedStatus On
ThreadsPerChild {threads}
# httpd's default.  On, Wine 8 leaves the overlapped TransmitFile of a client that
# went away pending, and a stop after a load waits Timeout for that worker
# (docs/mod_mpm_winnt_ng.md): the tests of TransmitFile turn it on.
EnableSendfile Off
KeepAlive On
KeepAliveTimeout 5
MaxKeepAliveRequests 0
Timeout 30
{extra}
""".format(root=winpath(self.prefix), port=self.port, d=winpath(self.dir),
           loads=loads, threads=self.threads,
           extra=(self.extra if extra is None else extra) + "\n"
           + os.environ.get("MPMNG_WIN_EXTRA", ""))
        with open(self.conf, "w") as f:
            f.write(conf)

    # ---- lifecycle ----
    def httpd(self, *args, timeout=120, env=None):
        """Runs httpd.exe with this config and args to completion, in the
        instance's environment (its prefix, for one) plus env."""
        return subprocess.run([WINE, self.exe, "-f", winpath(self.conf)] + list(args),
                              env=wine_env(dict(self.env, **(env or {}))),
                              capture_output=True,
                              timeout=timeout, cwd=self.dir)

    def start(self, wait=True, timeout=90):
        self.write_conf()
        self.out = open(os.path.join(self.dir, "console.log"), "wb")
        self.proc = subprocess.Popen(
            [WINE, self.exe, "-f", winpath(self.conf)], env=wine_env(self.env),
            stdout=self.out, stderr=subprocess.STDOUT, cwd=self.dir,
            start_new_session=True)
        if wait:
            self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout=90):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("httpd.exe exited %s\n%s\n%s" % (
                    self.proc.returncode, self.console(), self.error_log()))
            if "accepting" in self.error_log() or self.flavour == "stock":
                try:
                    st = self.get("/server-status?auto", timeout=5)
                    if st[0] == 200:
                        return
                except OSError:
                    pass
            time.sleep(0.2)
        raise RuntimeError("httpd.exe not ready in %d s\n%s" % (
            timeout, self.error_log()))

    def console(self):
        try:
            with open(os.path.join(self.dir, "console.log"), errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def pid(self):
        with open(os.path.join(self.dir, "logs", "httpd.pid")) as f:
            return int(f.read().split()[0])

    def stop(self, timeout=60):
        if not self.proc:
            return
        if self.flavour == "ng" and self.proc.poll() is None:
            try:
                self.httpd("-k", "stop", timeout=60)
                self.proc.wait(timeout)
            except (subprocess.TimeoutExpired, OSError):
                pass
        self.kill()

    def kill(self):
        """Kills what is left of this instance: the wine64 process we
        started, and any wine process whose command line names our
        config (the child)."""
        if self.proc and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                pass
            self.proc.wait(10)
        for pid in self.wine_pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        if getattr(self, "out", None):
            self.out.close()
            self.out = None

    def wine_pids(self):
        """Linux pids of wine processes running this instance's config."""
        return linux_pids(winpath(self.conf).encode())

    # ---- talking to it ----
    def get(self, path, timeout=10, headers=None, send_after=0):
        """(status, headers dict, body) over a fresh connection; the
        request is sent send_after seconds after connecting."""
        s = socket.create_connection(("127.0.0.1", self.port), timeout=timeout)
        try:
            time.sleep(send_after)
            req = "GET %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n" % path
            for k, v in (headers or {}).items():
                req += "%s: %s\r\n" % (k, v)
            s.sendall((req + "\r\n").encode())
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        finally:
            s.close()
        return parse_response(data)

    def status(self):
        code, _, body = self.get("/server-status?auto")
        assert code == 200, code
        out = {}
        for line in body.decode(errors="replace").splitlines():
            if ": " in line:
                k, v = line.split(": ", 1)
                out[k] = v
        return out


def parse_response(data):
    """(status, headers, body); a connection closed before a status line
    is a ConnectionError (an OSError, as other lost requests are)."""
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    words = lines[0].split()
    if len(words) < 2 or not words[0].startswith("HTTP/"):
        raise ConnectionError("no HTTP response (%d bytes before the close)" % len(data))
    code = int(words[1])
    hdrs = {}
    for l in lines[1:]:
        if ":" in l:
            k, v = l.split(":", 1)
            hdrs[k.strip().lower()] = v.strip()
    return code, hdrs, body
