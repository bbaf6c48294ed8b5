"""Part `app`: the workload this project exists for (issue #37): a PHP
application behind the web server plus large static files, at 1,000
keep-alive clients.

Every run: wrk -t2 with APP_CONNS connections for --app-seconds, a mix of
GETs (--app-php-share percent of them for the PHP page, the rest spread
over --app-files static files of --app-file-kb each).  The PHP page does
--app-php-loops rounds of md5 (about 1 ms at the default) and answers
~2 KB.  One php-fpm pool (pm static, --app-fpm-children, a Unix socket)
serves every FastCGI variant: httpd through mod_proxy_fcgi, nginx through
fastcgi_pass; prefork runs PHP in its own processes (mod_php, taken from
Debian's libapache2-mod-php8.2 package, unpacked, not installed: installing
it would switch the machine's apache2 to prefork).  Each server at its
distribution's default sizing (the variants' [app] sections).  Recorded
per run: requests per second, p50/p99, errors by kind, the web server's
PSS, threads and processes (sampled at 2/3 of the run, the largest of three
samples) and php-fpm's PSS, server CPU per request.  Nothing here passes
or fails on numbers."""
import glob
import os
import shutil
import signal
import subprocess
import tempfile
import time

from mpmng_py import privhttpd
from mpmng_py.bench import loadgen, procstat
from mpmng_py.bench.variants import rotated

DEFAULT_VARIANTS = ("reuseport+fhcache", "event", "worker", "prefork", "nginx")
APP_CONNS = 1000
COLS = ["time", "round", "variant", "php", "conns", "seconds", "requests", "rps",
        "p50_ms", "p99_ms", "err_connect", "err_read", "err_write", "err_timeout",
        "err_status", "server_pss_mb", "server_threads", "server_procs", "fpm_pss_mb",
        "server_cpu_us_per_req", "note"]

PHP_PAGE = """<?php
$h = '';
for ($i = 0; $i < %d; $i++) {
    $h = md5($h . $i);
}
header('Content-Type: text/html');
echo '<html><body><p>', $h, '</p>', str_repeat('<p>app page</p>', 128), '</body></html>';
"""

FPM_CONF = """[global]
pid = {dir}/php-fpm.pid
error_log = {dir}/php-fpm.log
daemonize = no

[app]
{user}
listen = {sock}
listen.mode = 0666
listen.backlog = 4096
pm = static
pm.max_children = {children}
"""

HTTPD_FCGI = """DirectoryIndex index.html
<FilesMatch "\\.php$">
    SetHandler "proxy:unix:{sock}|fcgi://localhost/"
</FilesMatch>
"""

# mod_php reads the php.ini of PHPINIDir: ours loads OPcache, as php-fpm's
# does (Debian's mod_php would read /etc/php/8.2/apache2, not installed).
HTTPD_MODPHP = """LoadModule php_module {so}
PHPINIDir {inidir}
<FilesMatch "\\.php$">
    SetHandler application/x-httpd-php
</FilesMatch>
"""

NGINX_FCGI = """        location ~ \\.php$ {{
            include /etc/nginx/fastcgi_params;
            fastcgi_param SCRIPT_FILENAME $document_root$fastcgi_script_name;
            fastcgi_pass unix:{sock};
        }}
"""

# wrk's Lua: every EVERYth request the PHP page, the others the static
# files in turn, each thread from another file (setup numbers them); the
# bench's reporter (loadgen.WRK_LUA) is appended for done().
MIX_LUA = """local reqs, n, i, nthreads = {}, %(files)d, 0, 0
setup = function(thread)
  thread:set("id", nthreads)
  nthreads = nthreads + 1
end
init = function(args)
  for k = 0, n - 1 do
    reqs[k] = wrk.format("GET", string.format("/static/f%%03d.bin", k))
  end
  reqs.php = wrk.format("GET", "/app.php")
  i = (id or 0) * 37
end
request = function()
  i = i + 1
  if i %% %(every)d == 0 then return reqs.php end
  return reqs[i %% n]
end
"""


def php_fpm_binary():
    found = sorted(glob.glob("/usr/sbin/php-fpm*"))
    return found[-1] if found else None


def mod_php_so():
    """libphp from Debian's package, unpacked under ~/.cache (not
    installed); None if it cannot be had."""
    cache = os.path.join(os.path.expanduser("~"), ".cache", "mpm-ng", "mod-php")
    found = glob.glob(os.path.join(cache, "usr/lib/apache2/modules/libphp*.so"))
    if found:
        return found[0]
    os.makedirs(cache, exist_ok=True)
    try:
        subprocess.run(["apt-get", "download", "libapache2-mod-php8.2"], cwd=cache,
                       check=True, capture_output=True, timeout=300)
        for deb in glob.glob(os.path.join(cache, "*.deb")):
            subprocess.run(["dpkg-deb", "-x", deb, cache], check=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return None
    found = glob.glob(os.path.join(cache, "usr/lib/apache2/modules/libphp*.so"))
    return found[0] if found else None


class Site:
    """The docroot: static/fNNN.bin and app.php."""

    def __init__(self, args):
        self.dir = tempfile.mkdtemp(prefix="mpmng-bench-app-")
        os.chmod(self.dir, 0o755)
        static = os.path.join(self.dir, "static")
        os.makedirs(static)
        os.chmod(static, 0o755)
        for k in range(args.app_files):
            path = os.path.join(static, "f%03d.bin" % k)
            with open(path, "wb") as f:
                f.write(os.urandom(args.app_file_kb * 1024))
            os.chmod(path, 0o644)
        with open(os.path.join(self.dir, "app.php"), "w") as f:
            f.write(PHP_PAGE % args.app_php_loops)
        os.chmod(os.path.join(self.dir, "app.php"), 0o644)
        self.inidir = os.path.join(self.dir, "php")
        os.makedirs(self.inidir)
        with open(os.path.join(self.inidir, "php.ini"), "w") as f:
            f.write("zend_extension=opcache\nopcache.enable=1\n")
        every = max(1, round(100 / max(1, args.app_php_share)))
        self.lua = os.path.join(self.dir, "mix.lua")
        with open(loadgen.WRK_LUA) as f:
            report = f.read()
        with open(self.lua, "w") as f:
            f.write(MIX_LUA % {"every": every, "files": args.app_files} + report)

    def cleanup(self):
        shutil.rmtree(self.dir, ignore_errors=True)


class Fpm:
    """A private php-fpm pool on a Unix socket."""

    def __init__(self, binary, children):
        self.dir = tempfile.mkdtemp(prefix="mpmng-bench-fpm-")
        os.chmod(self.dir, 0o755)
        self.sock = os.path.join(self.dir, "fpm.sock")
        conf = os.path.join(self.dir, "php-fpm.conf")
        user = "user = www-data\ngroup = www-data" if os.geteuid() == 0 else ""
        with open(conf, "w") as f:
            f.write(FPM_CONF.format(dir=self.dir, sock=self.sock, children=children,
                                    user=user))
        self.proc = subprocess.Popen([binary, "-F", "-y", conf] + (
            ["-R"] if os.geteuid() == 0 else []), stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 30
        while not os.path.exists(self.sock):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError("php-fpm did not start: %s" % self.log_tail())
            time.sleep(0.05)

    def log_tail(self):
        try:
            with open(os.path.join(self.dir, "php-fpm.log")) as f:
                return f.read()[-600:]
        except OSError:
            return ""

    def memory(self):
        return procstat.tree_memory(self.proc.pid)

    def stop(self):
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGQUIT)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def _server(v, site, fpm, modphp):
    """The variant's server with the PHP page wired in; (server, php kind)."""
    from mpmng_py.bench import servers
    srv = servers.make_server(v, "app", site.dir)
    if v.kind == "nginx":
        srv.extra_server = NGINX_FCGI.format(sock=fpm.sock)
        return srv, "fpm"
    if v.mpm[0] == "mpm_prefork_module" and modphp:
        srv.h.directives += "\n" + HTTPD_MODPHP.format(so=modphp, inidir=site.inidir)
        return srv, "mod_php"
    srv.h.modules += [m for m in ("proxy", "proxy_fcgi") if m not in srv.h.modules]
    srv.h.directives += "\n" + HTTPD_FCGI.format(sock=fpm.sock)
    return srv, "fpm"


def _memory_samples(srv, fpm, seconds):
    """Three samples around 2/3 of the run: the largest of each."""
    time.sleep(seconds * 0.5)
    best, fbest = {}, {}
    for _ in range(3):
        m, fm = procstat.tree_memory(srv.root_pid), fpm.memory()
        if m["pss_kb"] > best.get("pss_kb", -1):
            best = m
        if fm["pss_kb"] > fbest.get("pss_kb", -1):
            fbest = fm
        time.sleep(seconds * 0.1)
    return best, fbest


def _check_page(srv):
    """The PHP page answers through this server (not its source)."""
    import urllib.request
    with urllib.request.urlopen(srv.url("/app.php"), timeout=30) as r:
        body = r.read()
    if b"app page" not in body or b"<?php" in body:
        raise RuntimeError("the PHP page came back wrong: %r" % body[:120])


def _one(v, rnd, args, site, fpm, modphp, tsv, log):
    srv, php = _server(v, site, fpm, modphp)
    row = {"time": time.strftime("%H:%M:%S"), "round": rnd, "variant": v.name, "php": php,
           "conns": APP_CONNS, "seconds": args.app_seconds}
    wl = loadgen.Workload("ka", "500B", APP_CONNS)
    wl.path = "/"
    try:
        srv.start()
        srv.settle(timeout=120)
        _check_page(srv)
        warm = loadgen.Workload("ka", "500B", 50)
        warm.path = "/"
        loadgen.finish(warm, _start(warm, srv, site, 2))
        pids = srv.pids()
        c0 = procstat.tree_cpu_ns(srv.root_pid, pids)
        p = _start(wl, srv, site, args.app_seconds)
        mem, fmem = _memory_samples(srv, fpm, args.app_seconds)
        res = loadgen.finish(wl, p)
        c1 = procstat.tree_cpu_ns(srv.root_pid, sorted(set(pids) | set(srv.pids())))
        reqs = res["requests"]
        row.update({
            "requests": reqs, "rps": reqs / (res["duration_us"] / 1e6),
            "p50_ms": res["p50_us"] / 1000.0, "p99_ms": res["p99_us"] / 1000.0,
            "err_connect": res["err_connect"], "err_read": res["err_read"],
            "err_write": res["err_write"], "err_timeout": res["err_timeout"],
            "err_status": res["err_status"], "server_pss_mb": mem["pss_kb"] / 1024.0,
            "server_threads": mem["threads"], "server_procs": mem["procs"],
            "fpm_pss_mb": fmem["pss_kb"] / 1024.0 if php == "fpm" else "",
            "server_cpu_us_per_req": (c1 - c0) / 1e3 / reqs if reqs else ""})
        errs = sum(res[k] for k in ("err_connect", "err_read", "err_write", "err_timeout",
                                    "err_status"))
        log("app r%d %-18s %-7s %7.0f req/s, p50 %6.1f ms, p99 %7.1f ms, %d errors, "
            "server PSS %6.1f MB in %d procs / %d threads%s" % (
                rnd, v.name, php, row["rps"], row["p50_ms"], row["p99_ms"], errs,
                row["server_pss_mb"], mem["procs"], mem["threads"],
                ", php-fpm %.1f MB" % row["fpm_pss_mb"] if php == "fpm" else ""))
    except Exception as e:  # a failed run is recorded, the part goes on
        row["note"] = "failed: %s" % str(e)[:200]
        log("app %s failed: %s" % (v.name, str(e)[:400]))
    finally:
        srv.cleanup()
    tsv.row(row)


def _start(wl, srv, site, seconds):
    """wrk -t2 with the mix script."""
    return loadgen.start_script(srv.url("/"), wl.conns, seconds, site.lua, threads=2,
                                timeout_s=10)


def run(args, variants, docroot, tsv, log):
    binary = php_fpm_binary()
    if not binary:
        log("app part skipped: no php-fpm (apt-get install php-fpm)")
        return
    modphp = mod_php_so()
    if not modphp:
        log("app part: no mod_php (libapache2-mod-php8.2 could not be unpacked): "
            "prefork runs PHP through php-fpm too")
    site = Site(args)
    fpm = Fpm(binary, args.app_fpm_children)
    try:
        for rnd in range(1, args.rounds + 1):
            for v in rotated(variants, rnd):
                _one(v, rnd, args, site, fpm, modphp, tsv, log)
    finally:
        fpm.stop()
        site.cleanup()


def pick(variants, explicit):
    return [v for v in variants if v.name in DEFAULT_VARIANTS or v.name in explicit]
