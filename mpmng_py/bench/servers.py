"""Server launchers for the benchmark: Debian's apache2 through the shared
mpmng_py/privhttpd.py, and a small private nginx launcher.

Every launcher writes its own config under a private directory, listens on
127.0.0.1 only, and stops exactly the processes it started, by PID."""
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time

from mpmng_py import privhttpd, tlscert
from mpmng_py.bench import procstat

NGINX = os.environ.get("NGINX", "/usr/sbin/nginx")

# Directives every httpd variant gets, before the variant's own.  They make
# httpd and nginx do the same work per request: keep-alive without a request
# cap, sendfile for static files, no access log, no per-request status
# bookkeeping (mod_status turns ExtendedStatus on when loaded).
HTTPD_BASE = {
    "common": """
KeepAlive On
MaxKeepAliveRequests 0
EnableSendfile On
EnableMMAP On
ExtendedStatus Off
ListenBacklog 4096
HostnameLookups Off
""",
    "throughput": "KeepAliveTimeout 30\nTimeout 60\n",
    "syscalls": "KeepAliveTimeout 30\nTimeout 60\n",
    "idle": "KeepAliveTimeout 900\nTimeout 900\n",
    # Room for two generations during a graceful restart (old children
    # finishing while new ones start), for every MPM alike.
    "restart": "KeepAliveTimeout 30\nTimeout 60\n",
    "slow": "KeepAliveTimeout 30\nTimeout 60\n",
    "flood": "KeepAliveTimeout 30\nTimeout 60\n",
    "app": "KeepAliveTimeout 30\nTimeout 60\n",
}

# TLS on a second port (tls=True), the same for every server: the same
# ECDSA P-256 certificate, TLS 1.3, a shared session cache, HTTP/2 offered
# by ALPN where the run has HTTP/2 workloads.
HTTPD_TLS = """
Listen 127.0.0.1:{port}
SSLSessionCache shmcb:{dir}/logs/ssl_scache(512000)
<VirtualHost 127.0.0.1:{port}>
  SSLEngine on
  SSLProtocol -all +TLSv1.3
  SSLCertificateFile {crt}
  SSLCertificateKeyFile {key}
  {protocols}
</VirtualHost>
"""
# After the variant's own directives (the later one wins).  Graceful
# restarts need scoreboard room for two generations (old children finishing
# while new ones start), for every MPM alike.
HTTPD_LATE = {"restart": "ServerLimit 16\n"}

NGINX_KEEPALIVE_TIMEOUT = {"throughput": "30s", "syscalls": "30s", "idle": "900s"}


def _wait_port(host, port, timeout):
    return privhttpd.wait_for_port(host, port, timeout)


class Server:
    """Common part: process tree inspection and settling."""
    host = "127.0.0.1"
    port = None
    root_pid = None
    full_restart = None     # a method where the server has a full restart

    def upgrade(self):
        """Binary upgrade: a new server process takes the listeners over
        and the old one finishes (where the server has one; else None)."""
        return None

    def can_upgrade(self):
        return False

    def _wait_new_pid(self, pidfile, old, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with open(pidfile) as f:
                    pid = int(f.read().strip() or 0)
                if pid and pid != old and privhttpd.pid_alive(pid):
                    return pid
            except (OSError, ValueError):
                pass
            time.sleep(0.02)
        raise RuntimeError("no new server after the upgrade signal\n" + self.log_tail())

    def pids(self):
        return procstat.tree_pids(self.root_pid) if self.root_pid else []

    h2port = None
    tls_port = None

    def url(self, path="/"):
        return "http://%s:%d%s" % (self.host, self.port, path)

    def url_for(self, wl):
        """Base URL for a workload: TLS ones use the TLS listener, h2c ones
        may use another port."""
        if getattr(wl, "tls", False):
            return "https://%s:%d" % (self.host, self.tls_port)
        port = self.h2port if (wl.mode == "h2" and self.h2port) else self.port
        return "http://%s:%d" % (self.host, port)

    def kill_left(self, procs):
        """SIGKILL what of procs outlived its stop; returns those PIDs."""
        left = [p for p in procs if privhttpd.pid_alive(p)]
        for p in left:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return left

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def log_tail(self, n=20):
        try:
            with open(self.errlog, errors="replace") as f:
                return "\n".join(f.read().splitlines()[-n:])
        except OSError:
            return ""

    def settle(self, timeout=120, quiet=1.0):
        """Wait until the process and thread counts stop changing (pre-spawned
        children and threads are all up).  Returns the last memory sample."""
        deadline = time.monotonic() + timeout
        last, since = None, time.monotonic()
        while time.monotonic() < deadline:
            m = procstat.tree_memory(self.root_pid)
            key = (m["procs"], m["threads"])
            if key != last:
                last, since = key, time.monotonic()
            elif time.monotonic() - since >= quiet:
                return m
            time.sleep(0.25)
        return procstat.tree_memory(self.root_pid)


class HttpdServer(Server):
    kind = "httpd"

    def __init__(self, variant, part, docroot, port=None, h2=False, tls=False):
        self.variant = variant
        modules = list(variant.modules)
        extra = ""
        if h2:  # HTTP/2 over cleartext (prior knowledge) on the same port
            modules.append("http2")
            extra = "Protocols h2c http/1.1\n"
        if tls:
            modules += ["ssl", "socache_shmcb"]
        if part == "slow":  # Debian's apache2 loads it; its defaults apply
            modules.append("reqtimeout")
        self.h = privhttpd.Httpd(mpm=variant.mpm, port=port, docroot=docroot,
                                 modules=modules, nofile=20000)
        if variant.httpd_prefix:    # another httpd build (--httpd)
            self.h.binary = os.path.join(variant.httpd_prefix, "bin", "httpd")
            self.h.sysmods = os.path.join(variant.httpd_prefix, "modules")
        self.port = self.h.port
        self.dir = self.h.dir
        if tls:
            crt, key = tlscert.make_certificate(self.dir)
            self.tls_port = privhttpd.free_port(self.host)
            extra += HTTPD_TLS.format(port=self.tls_port, dir=self.dir, crt=crt, key=key,
                                      protocols="Protocols h2 http/1.1" if h2 else "")
        self.h.directives = "\n".join([HTTPD_BASE["common"], HTTPD_BASE.get(part, ""), extra,
                                       variant.config(part, "directives"),
                                       HTTPD_LATE.get(part, "")])

    def start(self, timeout=180):
        self.h.start(timeout=timeout)
        self.root_pid = self.h.pid

    def reload(self):
        """Graceful restart (what `apachectl graceful` sends)."""
        os.kill(self.root_pid, signal.SIGUSR1)

    def full_restart(self):
        """Full restart (what `apachectl -k restart` sends)."""
        os.kill(self.root_pid, signal.SIGHUP)

    def can_upgrade(self):
        return self.variant.mpm[0] == "mpm_reuseport_module"

    def upgrade(self):
        """mpm_reuseport's binary upgrade (SIGUSR2, what mpmng-upgrade
        sends); returns once the PidFile names the new parent."""
        old = self.root_pid
        os.kill(old, signal.SIGUSR2)
        self.root_pid = self.h.pid = self._wait_new_pid(self.h.pidfile, old)

    def stop(self):
        if self.root_pid:
            left = self.h.stop(timeout=60)
            self.root_pid = None
            return left

    def log_tail(self, n=20):
        return self.h.log_tail(n)

    def config_text(self):
        return self.h.config_text()


NGINX_CONF = """\
daemon on;
master_process on;
pid {dir}/run/nginx.pid;
error_log {dir}/logs/error.log warn;
{user}
worker_rlimit_nofile 20000;
{main}
events {{
    use epoll;
{events}
}}
http {{
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000000;
    keepalive_timeout {ka_timeout};
    client_body_temp_path {dir}/tmp/body;
    proxy_temp_path {dir}/tmp/proxy;
    fastcgi_temp_path {dir}/tmp/fastcgi;
    uwsgi_temp_path {dir}/tmp/uwsgi;
    scgi_temp_path {dir}/tmp/scgi;
{http}
    server {{
        listen {host}:{port} backlog=4096 {listen_options};
{h2listen}{tlslisten}        server_name localhost;
        root {docroot};
        location = /nginx_status {{
            stub_status;
            allow 127.0.0.1;
            deny all;
        }}
{server}    }}
}}
"""


NGINX_TLS = """\
        listen {host}:{port} ssl {h2} backlog=4096 {listen_options};
        ssl_certificate {crt};
        ssl_certificate_key {key};
        ssl_protocols TLSv1.3;
        ssl_session_cache shared:SSL:10m;
"""


class NginxServer(Server):
    """Debian's nginx with a private prefix, config, pid file and port.
    extra_server: lines for its server block (a part's locations)."""
    kind = "nginx"
    extra_server = ""

    def __init__(self, variant, part, docroot, port=None, h2=False, tls=False):
        self.variant = variant
        self.part = part
        self.port = port or privhttpd.free_port(self.host)
        # nginx speaks cleartext HTTP/2 only on a listener of its own.
        self.h2port = privhttpd.free_port(self.host) if h2 else None
        self.h2 = h2
        self.docroot = docroot
        self.dir = tempfile.mkdtemp(prefix="mpmng-nginx-")
        os.chmod(self.dir, 0o755)
        for sub in ("conf", "logs", "run", "tmp"):
            os.makedirs(os.path.join(self.dir, sub), exist_ok=True)
        self.tls = None
        if tls:
            self.tls = tlscert.make_certificate(self.dir)
            self.tls_port = privhttpd.free_port(self.host)
        self.conf = os.path.join(self.dir, "conf", "nginx.conf")
        self.pidfile = os.path.join(self.dir, "run", "nginx.pid")
        self.errlog = os.path.join(self.dir, "logs", "error.log")

    def config_text(self):
        v = self.variant
        return NGINX_CONF.format(
            dir=self.dir, host=self.host, port=self.port, docroot=self.docroot,
            user="user www-data www-data;" if os.geteuid() == 0 else "",
            main=v.config(self.part, "main"),
            events=v.config(self.part, "events"),
            http=v.config(self.part, "http"),
            listen_options=v.meta.get("listen_options", ""),
            h2listen="        listen %s:%d http2 backlog=4096 %s;\n" % (
                self.host, self.h2port, v.meta.get("listen_options", "")) if self.h2port else "",
            tlslisten=NGINX_TLS.format(
                host=self.host, port=self.tls_port, h2="http2" if self.h2 else "",
                listen_options=v.meta.get("listen_options", ""), crt=self.tls[0],
                key=self.tls[1]) if self.tls else "",
            ka_timeout=NGINX_KEEPALIVE_TIMEOUT.get(self.part, "30s"),
            server=self.extra_server)

    def _run(self, *args):
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C"}
        return subprocess.run([NGINX, "-p", self.dir + "/", "-e", self.errlog,
                               "-c", self.conf] + list(args), env=env,
                              capture_output=True, text=True, timeout=60)

    def start(self, timeout=60):
        with open(self.conf, "w") as f:
            f.write(self.config_text())
        res = self._run()
        if res.returncode != 0:
            raise RuntimeError("nginx failed to start (%d): %s%s\n%s" % (
                res.returncode, res.stdout, res.stderr, self.log_tail()))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with open(self.pidfile) as f:
                    pid = int(f.read().strip())
                if privhttpd.pid_alive(pid):
                    self.root_pid = pid
                    break
            except (OSError, ValueError):
                pass
            time.sleep(0.05)
        else:
            raise RuntimeError("nginx wrote no pid file\n" + self.log_tail())
        if not _wait_port(self.host, self.port, timeout):
            raise RuntimeError("nginx pid %d never accepted on port %d\n%s" % (
                self.root_pid, self.port, self.log_tail()))

    def reload(self):
        """Configuration reload (`nginx -s reload`)."""
        os.kill(self.root_pid, signal.SIGHUP)

    def can_upgrade(self):
        return True

    def upgrade(self):
        """nginx's binary upgrade as its documentation gives it: USR2 (a
        new master from the binary on disk, the old pid file moves to
        .oldbin), then WINCH and QUIT to the old master."""
        old = self.root_pid
        os.kill(old, signal.SIGUSR2)
        self.root_pid = self._wait_new_pid(self.pidfile, old)
        os.kill(old, signal.SIGWINCH)
        os.kill(old, signal.SIGQUIT)

    def stop(self, timeout=30):
        if not self.root_pid:
            return []
        procs = self.pids()
        try:
            os.kill(self.root_pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(privhttpd.pid_alive(p) for p in procs):
            time.sleep(0.05)
        left = self.kill_left(procs)
        self.root_pid = None
        return left


H2O = os.environ.get("H2O", "/usr/bin/h2o")

H2O_CONF = """\
pid-file: {dir}/run/h2o.pid
error-log: {dir}/logs/error.log
{user}
{main}
listen:
  host: {host}
  port: {port}
{tls}
hosts:
  default:
    paths:
      /:
        file.dir: {docroot}
"""

H2O_TLS = """\
listen:
  host: {host}
  port: {port}
  ssl:
    certificate-file: {crt}
    key-file: {key}
    minimum-version: TLSv1.3
"""


class ForegroundServer(Server):
    """A server we run in the foreground (its own process group) with a
    private config, port and directory; subclasses give kind, config_text()
    and command()."""
    kind = None

    def __init__(self, variant, part, docroot, port=None, h2=False, tls=False):
        self.variant = variant
        self.part = part
        self.port = port or privhttpd.free_port(self.host)
        self.docroot = docroot
        self.dir = tempfile.mkdtemp(prefix="mpmng-%s-" % self.kind)
        os.chmod(self.dir, 0o755)
        for sub in ("conf", "logs", "run"):
            os.makedirs(os.path.join(self.dir, sub), exist_ok=True)
        self.conf = os.path.join(self.dir, "conf", "%s.conf" % self.kind)
        self.errlog = os.path.join(self.dir, "logs", "error.log")
        self.tls = tlscert.make_certificate(self.dir) if tls else None
        self.tls_port = privhttpd.free_port(self.host) if tls else None
        self.proc = None

    def start(self, timeout=60):
        with open(self.conf, "w") as f:
            f.write(self.config_text())
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C"}
        self.proc = subprocess.Popen(self.command(), env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        self.root_pid = self.proc.pid
        if not _wait_port(self.host, self.port, timeout):
            self.stop()
            raise RuntimeError("%s never accepted on port %d\n%s" % (
                self.kind, self.port, self.log_tail()))

    def stop(self, timeout=30):
        if not self.proc:
            return []
        procs = self.pids()
        self.proc.terminate()
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            pass
        left = self.kill_left(procs)
        if self.proc.poll() is None:
            self.proc.wait()
        self.proc = None
        self.root_pid = None
        return left


class H2oServer(ForegroundServer):
    """Debian's h2o: HTTP/2 over TLS by ALPN, and h2c on the plain port."""
    kind = "h2o"

    def config_text(self):
        main = self.variant.config(self.part, "main")
        if "num-threads" not in main:
            main += "num-threads: %d\n" % os.cpu_count()
        return H2O_CONF.format(
            dir=self.dir, host=self.host, port=self.port, docroot=self.docroot,
            user="user: www-data" if os.geteuid() == 0 else "",
            main=main,
            tls=H2O_TLS.format(host=self.host, port=self.tls_port, crt=self.tls[0],
                               key=self.tls[1]) if self.tls else "")

    def command(self):
        return [H2O, "-m", "master", "-c", self.conf]

    def reload(self):
        os.kill(self.root_pid, signal.SIGHUP)


LIGHTTPD = os.environ.get("LIGHTTPD", "/usr/sbin/lighttpd")

LIGHTTPD_CONF = """\
server.document-root = "{docroot}"
server.bind = "{host}"
server.port = {port}
server.pid-file = "{dir}/run/lighttpd.pid"
server.errorlog = "{errlog}"
{user}
mimetype.assign = (".bin" => "application/octet-stream", ".html" => "text/html")
{main}
{tls}
"""

LIGHTTPD_TLS = """\
server.modules += ("mod_openssl")
$SERVER["socket"] == "{host}:{port}" {{
    ssl.engine = "enable"
    ssl.pemfile = "{crt}"
    ssl.privkey = "{key}"
    ssl.openssl.ssl-conf-cmd = ("MinProtocol" => "TLSv1.3")
}}
"""


class LighttpdServer(ForegroundServer):
    """Debian's lighttpd: one worker process per CPU (server.max-worker);
    HTTP/2 (ALPN and h2c) is on by default in 1.4.69."""
    kind = "lighttpd"

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        if os.geteuid() == 0:   # it opens its log after dropping privileges
            www = pwd.getpwnam("www-data")
            os.chown(os.path.join(self.dir, "logs"), www.pw_uid, www.pw_gid)

    def config_text(self):
        main = self.variant.config(self.part, "main")
        if "server.max-worker" not in main:
            main += "server.max-worker = %d\n" % os.cpu_count()
        return LIGHTTPD_CONF.format(
            dir=self.dir, host=self.host, port=self.port, docroot=self.docroot,
            errlog=self.errlog, main=main,
            user=('server.username = "www-data"\nserver.groupname = "www-data"'
                  if os.geteuid() == 0 else ""),
            tls=LIGHTTPD_TLS.format(host=self.host, port=self.tls_port, crt=self.tls[0],
                                    key=self.tls[1]) if self.tls else "")

    def command(self):
        return [LIGHTTPD, "-D", "-f", self.conf]

    def reload(self):
        os.kill(self.root_pid, signal.SIGUSR1)


KINDS = {"httpd": HttpdServer, "nginx": NginxServer, "h2o": H2oServer,
         "lighttpd": LighttpdServer}


def make_server(variant, part, docroot, port=None, h2=False, tls=False):
    return KINDS[variant.kind](variant, part, docroot, port=port, h2=h2, tls=tls)
