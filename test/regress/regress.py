#!/usr/bin/env python3
"""Run httpd's own regression suite against Debian's apache2 with two MPMs.

The suite is the Apache::Test "perl-framework" that Debian ships in its
apache2 source package as debian/perl-framework (see debian/tests/
run-test-suite there).  For each MPM this script

  * copies the cached framework into out/regress/work/<mpm>/,
  * applies a few environmental patches (listen on 127.0.0.1 instead of
    0.0.0.0, per-run unix socket paths) and, for our MPM, a sizing block,
  * runs each t/TEST in a private network namespace that has only `lo`,
  * writes an httpd.conf that loads the chosen MPM plus every module Debian
    ships (like Debian's procedure does),
  * runs `perl Makefile.PL` and `t/TEST` as an unprivileged user,
  * saves per-test-file results to out/regress/<mpm>.txt,

then compares MPM B against MPM A.  Exit status: 0 when B has no failures
that A lacks, 1 when it has, 2 on a setup error or an incomplete run, 130
when interrupted.  See README.md.

Every process started here is ended by PID on exit, including on errors and
Ctrl-C: this process makes itself a child subreaper, so the daemonised
httpd (which calls setsid()) stays in its process tree.
"""
import argparse
import ctypes
import fcntl
import glob
import hashlib
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import privhttpd  # noqa: E402  (MPM table, server env, /proc helpers)

ROOT = privhttpd.ROOT
OUT = privhttpd.OUT
RESULTS = os.path.join(OUT, "regress")
CACHE = os.path.join(RESULTS, "cache")
FRAMEWORK = os.path.join(CACHE, "perl-framework")
PACKAGES_FILE = os.path.join(ROOT, "build", "packages", "regress.txt")

TEST_USER = os.environ.get("REGRESS_USER", "mpmng-regress")
APXS = "/usr/bin/apxs2"
SOURCE_SPECS = ["apache2", "apache2=2.4.68-1~deb12u1"]  # newest first
BASE_PORTS = [8529, 8629, 8729, 8829]  # one per concurrent run, 100 apart
PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
STOCK = ("event", "worker", "prefork")
# No new t/TEST output for this long means a hang (the slowest test file
# takes well under a minute; configuring takes about one).
STALL = int(os.environ.get("REGRESS_STALL", "600"))
# Each t/TEST runs in a network namespace of its own that has only a
# loopback interface, so nothing it does can reach another address (the
# suite's mod_heartbeat test multicasts to 239.0.0.1: routed to lo here).
NETNS_SETUP = ("ip link set lo up && ip link set lo multicast on && "
               "ip route add 224.0.0.0/4 dev lo && exec \"$@\"")
# Without such a namespace these modules are left out (heartbeat.t skips).
MULTICAST_LOADS = ("heartbeat.load", "heartmonitor.load")
# "<mpm>+fhcache": the same MPM with mod_fhcache loaded and FHCache On for
# the whole server (every test file's files go through the cache).
FHCACHE_SO = os.path.join(OUT, "mod_fhcache.so")
FHCACHE_CONF = ("<IfModule fhcache_module>\n    FHCache On\n"
                "    # one line per response it serves: counted after the run\n"
                "    LogLevel fhcache:trace1\n</IfModule>\n")

# Sizing for our MPM: the same numbers Apache::Test gives mpm_worker
# (its <IfModule worker.c> block), spelled with 2.4 directive names.
REUSEPORT_CONF = """\
StartServers         @StartServersThreadedMPM@
ThreadsPerChild      @ThreadsPerChild@
MaxRequestWorkers    @MaxClientsThreadedMPM@
<IfDirective MinSpareThreads>
    MinSpareThreads  @ThreadsPerChild@
</IfDirective>
<IfDirective MaxSpareThreads>
    MaxSpareThreads  @MaxSpareThreadedMPM@
</IfDirective>
MaxConnectionsPerChild 0
ReusePortBuckets     auto
"""


def log(msg=""):
    print(msg, flush=True)


class SetupError(Exception):
    pass


# ---------------------------------------------------------------- processes
class Reaper:
    """Tracks what we started and ends all of it, by PID."""

    def __init__(self):
        self.pidfiles = []
        self.managed = set()
        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_CHILD_SUBREAPER = 36
        self.subreaper = libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0

    def descendants(self):
        out, todo = [], [os.getpid()]
        while todo:
            kids = privhttpd.children_of(todo.pop())
            out += kids
            todo += kids
        return out

    def reap_zombies(self):
        """Reap orphans re-parented to us (httpd after it exits).  Children
        that subprocess.Popen waits for itself (self.managed) are left to
        it, so their exit status is not lost."""
        me = os.getpid()
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) in self.managed:
                continue
            try:
                with open("/proc/%s/stat" % name) as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] == "Z" and int(fields[1]) == me:
                try:
                    os.waitpid(int(name), os.WNOHANG)
                except ChildProcessError:
                    pass

    def stop_httpd(self, pidfile, timeout=15):
        """SIGTERM an httpd parent from its pidfile so it cleans up its
        children, scoreboard and sockets itself; wait for all of them."""
        try:
            with open(pidfile) as f:
                pid = int(f.read().strip())
        except (OSError, ValueError):
            return
        if not privhttpd.pid_alive(pid):
            return
        procs = [pid] + privhttpd.children_of(pid)
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(privhttpd.pid_alive(p) for p in procs):
            self.reap_zombies()
            time.sleep(0.1)
        for p in procs:
            if privhttpd.pid_alive(p):
                try:
                    os.kill(p, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def stop_all(self):
        for pf in self.pidfiles:
            self.stop_httpd(pf)
        for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
            pids = self.descendants()
            if not pids:
                break
            for p in pids:
                try:
                    os.kill(p, sig)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline and self.descendants():
                self.reap_zombies()
                time.sleep(0.1)
        self.reap_zombies()
        return self.descendants()


def on_signal(signum, frame):
    raise KeyboardInterrupt("signal %d" % signum)


def run(cmd, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    return subprocess.run(cmd, **kw)


# ---------------------------------------------------------------- packages
def read_packages():
    with open(PACKAGES_FILE) as f:
        return [l.strip() for l in f if l.strip() and not l.startswith("#")]


def ensure_packages():
    pkgs = read_packages()
    missing = []
    for p in pkgs:
        r = run(["dpkg-query", "-W", "-f=${db:Status-Abbrev}", p])
        if r.returncode != 0 or not r.stdout.startswith("ii"):
            missing.append(p)
    if not missing:
        return
    if os.geteuid() != 0:
        raise SetupError("missing Debian packages (install them as root): "
                         + " ".join(missing))
    log("regress: installing missing packages: " + " ".join(missing))
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    cmd = ["apt-get", "install", "-y", "--no-install-recommends",
           "-o", "DPkg::Lock::Timeout=600"] + missing
    r = run(cmd, env=env)
    if r.returncode != 0:
        run(["apt-get", "update"], env=env)
        r = run(cmd, env=env)
    if r.returncode != 0:
        raise SetupError("apt-get install failed:\n" + r.stdout[-2000:] + r.stderr[-2000:])


# ---------------------------------------------------------------- framework
def deb_src_enabled():
    for path in glob.glob("/etc/apt/sources.list.d/*.sources"):
        with open(path) as f:
            for line in f:
                if re.match(r"^\s*Types:.*\bdeb-src\b", line):
                    return True
    for path in ["/etc/apt/sources.list"] + glob.glob("/etc/apt/sources.list.d/*.list"):
        try:
            with open(path) as f:
                if any(re.match(r"^\s*deb-src\s", l) for l in f):
                    return True
        except OSError:
            pass
    return False


def enable_deb_src():
    path = "/etc/apt/sources.list.d/debian.sources"
    if not os.path.exists(path):
        raise SetupError("no deb-src entries and no %s to add them to" % path)
    with open(path) as f:
        text = f.read()
    new = re.sub(r"(?m)^Types:[ \t]*deb[ \t]*$", "Types: deb deb-src", text)
    if new == text:
        raise SetupError("could not enable deb-src in %s" % path)
    with open(path, "w") as f:
        f.write(new)
    log("regress: enabled deb-src in %s" % path)


def ensure_framework():
    """The perl-framework, unpacked once into out/regress/cache/."""
    if os.path.exists(os.path.join(CACHE, ".complete")):
        return
    shutil.rmtree(CACHE, ignore_errors=True)
    os.makedirs(CACHE)
    local = os.environ.get("REGRESS_FRAMEWORK_SRC")
    if local:
        shutil.copytree(local, FRAMEWORK, symlinks=True)
        source = "local copy of " + local
    else:
        source = download_framework()
    with open(os.path.join(CACHE, "SOURCE"), "w") as f:
        f.write(source + "\n")
    open(os.path.join(CACHE, ".complete"), "w").close()
    log("regress: perl-framework cached in %s (%s)" % (FRAMEWORK, source))


def download_framework():
    if os.geteuid() != 0:
        raise SetupError("the perl-framework is not cached yet and fetching it "
                         "needs root (apt-get); or set REGRESS_FRAMEWORK_SRC")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    if not deb_src_enabled():
        enable_deb_src()
        run(["apt-get", "update"], env=env)
    tmp = tempfile.mkdtemp(prefix="dl-", dir=CACHE)
    os.chmod(tmp, 0o755)
    try:
        tarball, errors, updated = None, [], False
        for spec in SOURCE_SPECS:
            for attempt in (1, 2):
                r = run(["apt-get", "source", "--download-only", spec], cwd=tmp, env=env)
                found = glob.glob(os.path.join(tmp, "*.debian.tar.xz"))
                if r.returncode == 0 and found:
                    tarball = found[0]
                    break
                errors.append("%s: %s" % (spec, (r.stderr or r.stdout).strip()[-400:]))
                # "Unable to find a source package": lists never fetched.
                if attempt == 1 and not updated and "Unable to find" in r.stderr:
                    run(["apt-get", "update"], env=env)
                    updated = True
                    continue
                break
            if tarball:
                break
        if not tarball:
            raise SetupError("apt-get source failed:\n" + "\n".join(errors))
        with tarfile.open(tarball) as tf:
            members = [m for m in tf.getmembers()
                       if m.name.startswith("debian/perl-framework/")]
            if not members:
                raise SetupError("%s has no debian/perl-framework" % tarball)
            tf.extractall(tmp, members=members)
        os.rename(os.path.join(tmp, "debian", "perl-framework"), FRAMEWORK)
        return os.path.basename(tarball)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ---------------------------------------------------------------- user
def ensure_user():
    """Name of the unprivileged user the suite runs as (root only)."""
    try:
        pwd.getpwnam(TEST_USER)
    except KeyError:
        r = run(["useradd", "--system", "--user-group", "--no-create-home",
                 "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin",
                 TEST_USER])
        if r.returncode != 0:
            raise SetupError("useradd %s failed: %s" % (TEST_USER, r.stderr))
        log("regress: created system user %s" % TEST_USER)
    return TEST_USER


def localhost_check():
    addrs = {ai[4][0] for ai in socket.getaddrinfo("localhost", None)}
    if addrs != {"127.0.0.1"}:
        log("regress: WARNING: localhost resolves to %s; the suite assumes it is "
            "only 127.0.0.1 (Debian's run-test-suite removes localhost from "
            "the ::1 line of /etc/hosts). Clients fall back from ::1 to "
            "127.0.0.1, but access tests may be affected." % sorted(addrs))


def netns_available():
    if os.geteuid() != 0 or os.environ.get("REGRESS_NETNS", "1") == "0":
        return False
    r = run(["unshare", "--net", "--", "sh", "-c", NETNS_SETUP, "sh", "true"])
    return r.returncode == 0


def port_range_free(base, count=80):
    for port in range(base, base + count):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                return False
    return True


def pick_ports(n):
    ports = []
    for base in BASE_PORTS + list(range(9029, 20000, 100)):
        if len(ports) == n:
            break
        if port_range_free(base):
            ports.append(base)
    if len(ports) < n:
        raise SetupError("no free loopback port ranges")
    return ports


# ---------------------------------------------------------------- one MPM run
class MpmRun:
    def __init__(self, mpm, port, user, test_args, timeout, netns):
        self.mpm = mpm
        self.base, _, addon = mpm.partition("+")
        self.fhcache = addon == "fhcache"
        self.netns = netns
        self.port = port
        self.user = user
        self.test_args = test_args
        self.timeout = timeout
        self.sym, self.so = privhttpd.MPMS[self.base]
        self.wd = os.path.join(RESULTS, "work", mpm)
        self.fw = os.path.join(self.wd, "perl-framework")
        self.home = os.path.join(self.wd, "home")
        self.logfile = os.path.join(RESULTS, mpm + ".log")
        self.errfile = os.path.join(RESULTS, mpm + ".err")
        self.txtfile = os.path.join(RESULTS, mpm + ".txt")
        self.pidfile = os.path.join(self.fw, "t", "logs", "httpd.pid")
        self.error_log = os.path.join(self.fw, "t", "logs", "error_log")
        # unix sockets live in the shared /tmp: unique per checkout and run
        self.sock_prefix = "/tmp/mpmng-regress-%s-%s-%d" % (
            hashlib.sha1(self.wd.encode()).hexdigest()[:8], mpm, port)
        self.proc = None
        self.start = self.end = None
        self.timed_out = False
        self.progress = []  # (seconds since start, test file)
        self.so_sha = None

    def as_user(self, cmd):
        if self.user:
            return ["runuser", "-u", self.user, "--"] + cmd
        return cmd

    def in_netns(self, cmd):
        if self.netns:
            return ["unshare", "--net", "--", "sh", "-c", NETNS_SETUP, "sh"] + cmd
        return cmd

    def env_cmd(self):
        env = ["/usr/bin/env", "-i", "PATH=" + PATH, "LANG=C", "HOME=" + self.home,
               "HARNESS_VERBOSE=1", "APACHE_TEST_COLOR=0"]
        return env

    # -- preparation ---------------------------------------------------
    def prepare(self):
        if not os.path.exists(self.so):
            raise SetupError("%s: module %s does not exist%s" % (
                self.mpm, self.so, " (build it first)" if self.base not in STOCK else ""))
        shutil.rmtree(self.wd, ignore_errors=True)
        shutil.rmtree(os.path.join(RESULTS, self.mpm + "-sanitizer"), ignore_errors=True)
        for stale in (".retry.log", ".retry.err", ".txt", ".log", ".err"):
            try:
                os.unlink(os.path.join(RESULTS, self.mpm + stale))
            except OSError:
                pass
        os.makedirs(self.home)
        for p in (RESULTS, os.path.join(RESULTS, "work"), self.wd):
            os.chmod(p, 0o755)
        shutil.copytree(FRAMEWORK, self.fw, symlinks=True)
        so = self.so
        if self.base not in STOCK:
            so = self.snapshot(self.so)
        with open(so, "rb") as f:
            self.so_sha = hashlib.sha256(f.read()).hexdigest()[:16]
        self.loaded_so = so
        self.fhcache_so = None
        if self.fhcache:
            if not os.path.exists(FHCACHE_SO):
                raise SetupError("%s: %s does not exist (build it first)" % (self.mpm, FHCACHE_SO))
            self.fhcache_so = self.snapshot(FHCACHE_SO)
        self.patch()
        self.write_httpd_conf(so)
        httpd = self.write_wrapper()
        if self.user:
            run(["chown", "-R", "%s:%s" % (self.user, self.user), self.wd], check=True)
            r = run(self.as_user(["test", "-r", so, "-a", "-w", self.fw]))
            if r.returncode != 0:
                raise SetupError("user %s cannot reach %s (check the permissions of "
                                 "its parent directories)" % (self.user, self.wd))
        cmd = self.as_user(self.env_cmd() + [
            "perl", "Makefile.PL", "-apxs", APXS, "-httpd", httpd,
            "-httpd_conf", os.path.join(self.fw, "apache2.conf.mpmng")])
        r = run(cmd, cwd=self.fw, stdin=subprocess.DEVNULL)
        with open(os.path.join(self.wd, "makefile.log"), "w") as f:
            f.write(r.stdout + r.stderr)
        if r.returncode != 0:
            raise SetupError("%s: perl Makefile.PL failed:\n%s" % (
                self.mpm, (r.stdout + r.stderr)[-3000:]))

    def snapshot(self, path):
        """A copy of one of our modules, readable by the test user and
        immune to a rebuild of out/ while the suite runs.  Same base name,
        so the suite derives the same module name from it."""
        dest = os.path.join(self.wd, "modules", os.path.basename(path))
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copy2(path, dest)
        return dest

    def sub(self, rel, old, new, count_min=1):
        path = os.path.join(self.fw, rel)
        with open(path) as f:
            text = f.read()
        n = text.count(old)
        if n < count_min:
            raise SetupError("patch of %s failed: %r not found (suite changed?)" % (rel, old))
        with open(path, "w") as f:
            f.write(text.replace(old, new))

    def patch(self):
        """Environmental patches only; each must apply or we stop."""
        at = "Apache-Test/lib/Apache/"
        # Listen on loopback, never on all addresses.
        self.sub(at + "TestConfig.pm", "Listen     0.0.0.0:@Port@", "Listen     127.0.0.1:@Port@")
        self.sub(at + "TestConfig.pm", "[Listen => '0.0.0.0:' . $port]", "[Listen => '127.0.0.1:' . $port]")
        self.sub(at + "TestConfigPerl.pm", "(Listen => '0.0.0.0:' . $port)", "(Listen => '127.0.0.1:' . $port)")
        # Speed only: Apache::Test caches apxs answers unless they are empty,
        # and Debian's `apxs2 -q PREFIX` is empty, so every test file ran
        # apxs2 (and apr-1-config x4) ~120 times: ~2.5 s of CPU per file,
        # 85% of the suite's client CPU.  Cache empty answers too.
        self.sub(at + "TestConfig.pm",
                 "        chomp $val if defined $val; # apxs post-2.0.40 adds a new line\n"
                 "        if ($val) {\n",
                 "        chomp $val if defined $val; # apxs post-2.0.40 adds a new line\n"
                 "        if (defined $val) {  # mpm-ng: cache empty answers too\n")
        # The FastCGI test backend binds ":port" (all addresses).
        self.sub("t/modules/proxy_fcgi.t", 'FCGI::OpenSocket(":$fcgi_port", 10)',
                 'FCGI::OpenSocket("127.0.0.1:$fcgi_port", 10)')
        # Fixed unix socket paths in /tmp would collide between runs.
        for rel in ("t/modules/proxy.t", "t/conf/extra.conf.in"):
            self.sub(rel, "/tmp/test-ptf.sock", self.sock_prefix + "-ptf.sock")
        for rel in ("t/modules/proxy_fcgi.t", "t/conf/proxy.conf.in"):
            self.sub(rel, "/tmp/apache-test-builtinfcgi.sock", self.sock_prefix + "-fcgi.sock")
        # Apache::Test's template logs at trace8 (~1 GB of error_log per run);
        # REGRESS_LOGLEVEL=debug (or info...) trades that for speed.
        level = os.environ.get("REGRESS_LOGLEVEL")
        if level:
            if not re.match(r"^[a-z0-9: ]+$", level):
                raise SetupError("bad REGRESS_LOGLEVEL %r" % level)
            self.sub(at + "TestConfig.pm", "    LogLevel trace8\n", "    LogLevel %s\n" % level)
        # Sizing for our MPM (the suite only knows the stock ones).
        conf = os.environ.get("REGRESS_REUSEPORT_CONF", REUSEPORT_CONF)
        with open(os.path.join(self.fw, "t", "conf", "zz_mpmng_mpm.conf.in"), "w") as f:
            f.write("# added by mpm-ng test/regress/regress.py\n")
            f.write("<IfModule %s>\n%s</IfModule>\n" % (
                privhttpd.MPMS["reuseport"][0], conf))
        if self.fhcache:
            with open(os.path.join(self.fw, "t", "conf", "zz_mpmng_fhcache.conf.in"), "w") as f:
                f.write("# added by mpm-ng test/regress/regress.py\n" + FHCACHE_CONF)

    def write_httpd_conf(self, so):
        """Like Debian's run-test-suite: the MPM plus every module Debian
        ships.  Apache::Test only inherits LoadModule/LoadFile/TypesConfig
        from this file."""
        lines = ["# generated by mpm-ng test/regress/regress.py",
                 "LoadModule %s %s" % (self.sym, so)]
        if self.fhcache_so:
            lines.append("LoadModule fhcache_module %s" % self.fhcache_so)
        # Only apache2's own .load files: modules from other packages
        # (mod_perl, php, ...) would make the suite differ between machines.
        shipped = set(run(["dpkg-query", "-L", "apache2"]).stdout.split())
        for load in sorted(glob.glob("/etc/apache2/mods-available/*.load")):
            if os.path.basename(load).startswith("mpm_") or load not in shipped:
                continue
            if not self.netns and os.path.basename(load) in MULTICAST_LOADS:
                continue
            with open(load) as f:
                lines += [l.rstrip("\n") for l in f]
        for m in ("bucketeer", "case_filter", "case_filter_in"):
            path = "%s/mod_%s.so" % (privhttpd.SYSMODS, m)
            if os.path.exists(path):
                lines.append("LoadModule %s_module %s" % (m, path))
        lines += ["TypesConfig /etc/mime.types", "ServerName localhost"]
        with open(os.path.join(self.fw, "apache2.conf.mpmng"), "w") as f:
            f.write("\n".join(lines) + "\n")

    def write_wrapper(self):
        """httpd for Apache::Test: Debian's binary, or a wrapper that adds
        the sanitizer runtime (privhttpd.server_env) for the server only."""
        env = privhttpd.server_env()
        if "LD_PRELOAD" not in env:
            return privhttpd.APACHE2
        san = os.path.join(self.wd, "sanitizer")
        os.makedirs(san)
        extra = {k: env[k] for k in ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS")}
        # privhttpd's default log_path is out/, not writable by the test
        # user: keep the reports in the work dir unless the caller chose.
        if "ASAN_OPTIONS" not in os.environ:
            extra["ASAN_OPTIONS"] = "detect_leaks=0:abort_on_error=1:log_path=%s/asan" % san
        if "UBSAN_OPTIONS" not in os.environ:
            extra["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1:log_path=%s/ubsan" % san
        path = os.path.join(self.wd, "apache2-wrapper")
        with open(path, "w") as f:
            f.write("#!/bin/sh\n")
            for k, v in extra.items():
                f.write("%s='%s'; export %s\n" % (k, v.replace("'", ""), k))
            f.write('exec %s "$@"\n' % privhttpd.APACHE2)
        os.chmod(path, 0o755)
        return path

    # -- running -------------------------------------------------------
    def launch(self, reaper, tests=None, logfile=None, errfile=None):
        """Start t/TEST (all tests, or `tests`) in the background."""
        if self.pidfile not in reaper.pidfiles:
            reaper.pidfiles.append(self.pidfile)
        tests = self.test_args if tests is None else tests
        self.cur_log = logfile or self.logfile
        cmd = self.in_netns(self.as_user(self.env_cmd() + ["t/TEST", "-port", str(self.port)]
                                         + tests))
        self.out_f = open(self.cur_log, "w")
        self.err_f = open(errfile or self.errfile, "w")
        self.start = time.monotonic()
        self.end = None
        self.timed_out = False
        self.progress = []
        self.proc = subprocess.Popen(cmd, cwd=self.fw, stdin=subprocess.DEVNULL,
                                     stdout=self.out_f, stderr=self.err_f,
                                     start_new_session=True)
        reaper.managed.add(self.proc.pid)
        self._read_pos = 0
        self._partial = ""
        self._last_growth = time.monotonic()

    def poll(self):
        """Track progress; returns True once finished."""
        try:
            with open(self.cur_log, errors="replace") as f:
                f.seek(self._read_pos)
                data = f.read()
                self._read_pos = f.tell()
        except OSError:
            data = ""
        if data:
            self._last_growth = time.monotonic()
        now = time.monotonic() - self.start
        data = self._partial + data
        lines = data.split("\n")
        self._partial = lines.pop()
        for line in lines:
            m = HEADER.match(line)
            if m:
                self.progress.append((now, m.group(1)))
        if self.proc.poll() is not None:
            if self.end is None:
                self.end = time.monotonic()
            return True
        stalled = time.monotonic() - self._last_growth
        if (now > self.timeout or stalled > STALL) and not self.timed_out:
            self.timed_out = True
            log("regress: [%s] timed out after %ds (no output for %ds), stopping it"
                % (self.mpm, now, stalled))
        return False

    def finish(self, reaper):
        for f in (self.out_f, self.err_f):
            f.close()
        # t/TEST stops its server itself; make sure nothing is left.
        reaper.stop_httpd(self.pidfile)
        for suffix in ("-ptf.sock", "-fcgi.sock", "-ptf.sock.marker"):
            try:
                os.unlink(self.sock_prefix + suffix)
            except OSError:
                pass

    def stop(self, reaper):
        reaper.stop_httpd(self.pidfile)
        if self.proc and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait()

    @property
    def duration(self):
        if self.start is None:
            return 0
        return (self.end or time.monotonic()) - self.start

    # -- server-side checks --------------------------------------------
    def server_problems(self):
        """Crashed children in error_log and sanitizer reports: these are
        failures even when no test noticed them."""
        problems = []
        if os.path.exists(self.error_log):
            r = run(["grep", "-aE", "-m", "20",
                     r"AH00052: child pid [0-9]+ exit signal|dumped core|AH00060|AH00059",
                     self.error_log])
            crashes = [l for l in r.stdout.splitlines() if l.strip()]
            if crashes:
                problems.append(("error_log", crashes))
            if self.fhcache and not self.fhcache_served():
                problems.append(("fhcache", ["no response served by mod_fhcache "
                                             "(no 'mod_fhcache: serving' in error_log)"]))
        san = os.path.join(self.wd, "sanitizer")
        reports = sorted(glob.glob(os.path.join(san, "*")))
        if reports:
            dest = os.path.join(RESULTS, self.mpm + "-sanitizer")
            shutil.rmtree(dest, ignore_errors=True)
            os.makedirs(dest)
            for rep in reports:
                shutil.copy(rep, dest)
            problems.append(("sanitizer", ["%s (%s)" % (os.path.basename(r), dest)
                                           for r in reports]))
        return problems

    def fhcache_served(self):
        """Responses mod_fhcache served (its trace1 lines: the suite logs at
        trace8), so a run with the cache proves the cache was used."""
        r = run(["grep", "-ac", "mod_fhcache: serving ", self.error_log])
        self.fhcache_count = int(r.stdout.strip() or 0)
        return self.fhcache_count

    def trim_logs(self):
        """The suite logs at trace8: error_log reaches ~1 GB.  Keep it only
        when asked to (REGRESS_KEEP_LOGS=1)."""
        if os.environ.get("REGRESS_KEEP_LOGS") == "1":
            return
        try:
            size = os.path.getsize(self.error_log)
        except OSError:
            return
        if size > 50 * 1024 * 1024:
            with open(self.error_log, "rb") as f:
                f.seek(size - 1024 * 1024)
                tail = f.read()
            with open(self.error_log + ".tail", "wb") as f:
                f.write(tail)
            os.unlink(self.error_log)


# ---------------------------------------------------------------- parsing
HEADER = re.compile(r"^((?:t|Apache-Test)/\S+\.t) \.+ ?(.*)$")
SUMMARY_FILE = re.compile(r"^((?:t|Apache-Test)/\S+\.t)\s+\(Wstat: (\d+)(?: \(.*?\))? Tests: (\d+) Failed: (\d+)\)")


def parse_log(path):
    """Per-file results from t/TEST's (verbose) harness output.

    Returns (results, info): results maps file -> dict(status, failed,
    reason, notok); info has the harness totals line and Result."""
    with open(path, errors="replace") as f:
        lines = f.read().split("\n")
    results, blocks, cur = {}, {}, None
    i = 0
    summary_at = None
    info = {"files_line": "", "result": ""}
    for i, line in enumerate(lines):
        if line.startswith("Test Summary Report"):
            summary_at = i
            break
        m = HEADER.match(line)
        if m:
            cur = m.group(1)
            results[cur] = {"status": "ok", "failed": "", "reason": "", "notok": []}
            blocks[cur] = []
            rest = m.group(2).strip()
            if rest.startswith("skipped:"):
                results[cur]["status"] = "skipped"
                results[cur]["reason"] = rest[len("skipped:"):].strip()
            elif rest:
                blocks[cur].append(rest)
            continue
        if line.startswith("Files=") or line.startswith("All tests successful"):
            cur = None
        if cur:
            blocks[cur].append(line)
    for name, block in blocks.items():
        r = results[name]
        for l in block:
            m = re.match(r"^not ok (\d+)", l)
            if m:
                r["notok"].append(int(m.group(1)))
            if l.startswith("skipped:"):
                r["status"] = "skipped"
                r["reason"] = l[len("skipped:"):].strip()
            if re.match(r"^(Failed \d+/\d+ subtests|Dubious, test returned|"
                        r"No subtests run|Bad plan\.)", l):
                r["status"] = "failed"
        last = [l for l in block if l.strip()]
        # a block cut short (suite aborted) has no verdict line
        if r["status"] == "ok" and last and not re.match(
                r"^(ok|All \d+ subtests passed|skipped:)", last[-1].strip()) \
                and not any(l.strip() == "ok" for l in block[-3:]):
            r["status"] = "failed"
            r["reason"] = "no verdict in harness output"
    # the summary report is authoritative for failures
    if summary_at is not None:
        cur = None
        for line in lines[summary_at + 1:]:
            m = SUMMARY_FILE.match(line)
            if m:
                cur = m.group(1)
                r = results.setdefault(cur, {"status": "ok", "failed": "", "reason": "", "notok": []})
                if int(m.group(2)) != 0 or int(m.group(4)) > 0:
                    r["status"] = "failed"
                continue
            if cur is None:
                continue
            s = line.strip()
            mf = re.match(r"Failed tests?:(.*)", s)
            if mf:
                results[cur]["status"] = "failed"
                results[cur]["failed"] = re.sub(r"\s+", "", mf.group(1))
            elif s.startswith("Non-zero exit status:") or s.startswith("Parse errors:"):
                results[cur]["status"] = "failed"
                results[cur]["reason"] = (results[cur]["reason"] + " " + s).strip()
            elif s.startswith("Non-zero wait status:"):
                results[cur]["status"] = "failed"
                results[cur]["reason"] = (results[cur]["reason"] + " " + s).strip()
    for line in lines:
        if line.startswith("Files="):
            info["files_line"] = line.strip()
        if line.startswith("Result: "):
            info["result"] = line[len("Result: "):].strip()
    for name, r in results.items():
        if r["status"] == "failed" and not r["failed"] and r["notok"]:
            r["failed"] = ",".join(str(n) for n in r["notok"])
    return results, info


def info_t_mpm_only_difference(logpath, mpm_so):
    """t/modules/info.t compares mod_info's module list with the modules
    Apache::Test found.  The suite derives an MPM's expected name from its
    .so file name and only maps the stock MPMs (mod_mpm_event.so ->
    event.c, ...).  Return (expected, actual) when the lists differ only
    in that one MPM entry, else None."""
    with open(logpath, errors="replace") as f:
        text = f.read()
    start = text.find("t/modules/info.t ..")
    if start < 0:
        return None
    block = text[start:]
    m = re.search(r"\n(?:t|Apache-Test)/\S+\.t \.+", block[1:])
    if m:
        block = block[:m.start() + 1]
    ma = re.search(r"^actual(?:\(\d+ modules\))?:\n(.*)\n", block, re.M)
    me = re.search(r"^expect(?:\(\d+ modules\))?:\n(.*)\n", block, re.M)
    if not (ma and me):
        return None
    actual, expect = set(ma.group(1).split()), set(me.group(1).split())
    exp_name = re.sub(r"\.so$", ".c", os.path.basename(mpm_so))
    only_exp, only_act = expect - actual, actual - expect
    if only_exp == {exp_name} and len(only_act) <= 1:
        return exp_name, (next(iter(only_act)) if only_act else None)
    return None


# ---------------------------------------------------------------- reporting
def write_results(run_, results, info, known):
    with open(run_.txtfile, "w") as f:
        f.write("# mpm: %s (%s %s, sha256 %s)\n" % (run_.mpm, run_.sym, run_.so, run_.so_sha))
        if run_.fhcache:
            f.write("# fhcache: FHCache On, %d responses served by mod_fhcache\n"
                    % getattr(run_, "fhcache_count", 0))
        f.write("# apache2: %s\n" % apache_version())
        with open(os.path.join(CACHE, "SOURCE")) as s:
            f.write("# suite: perl-framework from %s\n" % s.read().strip())
        f.write("# harness: %s | Result: %s\n" % (info["files_line"] or "(no totals line)",
                                                  info["result"] or "(none)"))
        f.write("# duration: %ds%s\n" % (getattr(run_, "duration_main", run_.duration),
                                         " (TIMED OUT)" if getattr(run_, "timed_out_main",
                                                                   run_.timed_out) else ""))
        f.write("# format: FILE ok | FILE skipped REASON | FILE failed [SUBTESTS] [REASON]"
                " | FILE known-difference ...\n")
        for name in sorted(results):
            r = results[name]
            if name in known:
                f.write("%s known-difference %s\n" % (name, known[name]))
            elif r["status"] == "failed":
                f.write(("%s failed %s %s" % (name, r["failed"] or "-", r["reason"])).rstrip() + "\n")
            elif r["status"] == "skipped":
                f.write("%s skipped %s\n" % (name, r["reason"]))
            else:
                f.write("%s ok\n" % name)


_apache_version = None


def apache_version():
    global _apache_version
    if _apache_version is None:
        r = run([privhttpd.APACHE2, "-v"], env=privhttpd.server_env())
        m = re.search(r"Server version:\s*(.*)", r.stdout)
        dpkg = run(["dpkg-query", "-W", "-f=${Version}", "apache2-bin"]).stdout
        _apache_version = "%s, Debian apache2-bin %s" % (m.group(1) if m else "?", dpkg)
    return _apache_version


def classify(results):
    return {n for n, r in results.items() if r["status"] == "failed"}


def slowest(run_, n=5):
    prog = getattr(run_, "progress_main", run_.progress) + [
        (getattr(run_, "duration_main", run_.duration), None)]
    spans = [(prog[i + 1][0] - prog[i][0], prog[i][1]) for i in range(len(prog) - 1)]
    return sorted(spans, reverse=True)[:n]


def wait_runs(batch, reaper, what="t/TEST"):
    """Poll running MpmRuns until all ended; progress line every minute."""
    last_report = time.monotonic()
    pending = list(batch)
    while pending:
        for r in list(pending):
            if r.poll():
                pending.remove(r)
                r.finish(reaper)
                log("regress: [%s] %s finished in %dm%02ds (exit %s)" % (
                    r.mpm, what, r.duration // 60, r.duration % 60, r.proc.returncode))
            elif r.timed_out:
                r.stop(reaper)
        if time.monotonic() - last_report > 60 and pending:
            last_report = time.monotonic()
            log("regress: " + "; ".join(
                "[%s] %dm%02ds, %d files, at %s" % (
                    r.mpm, r.duration // 60, r.duration % 60, len(r.progress),
                    r.progress[-1][1] if r.progress else "(configuring)")
                for r in pending))
        reaper.reap_zombies()
        time.sleep(1)


def analyse(r):
    """results, info, known-differences of one run's main log."""
    results, info = parse_log(r.logfile)
    known = {}
    if results.get("t/modules/info.t", {}).get("status") == "failed":
        diff = info_t_mpm_only_difference(r.logfile, r.loaded_so)
        if diff:
            known["t/modules/info.t"] = (
                "suite expects MPM module name %s (derived from the .so file name; "
                "only stock MPMs are mapped), mod_info lists %s; all other modules "
                "match" % (diff[0], diff[1] or "nothing"))
    if not info["files_line"]:
        results["(harness) incomplete run"] = {
            "status": "failed", "failed": "",
            "reason": "no Files=/Tests= totals line in %s%s" % (
                os.path.relpath(r.logfile, ROOT), " (timed out)" if r.timed_out else ""),
            "notok": []}
    return results, info, known


def failing(results, known):
    return {n for n, x in results.items() if x["status"] == "failed" and n not in known}


def retry_regressions(a, b, pa, pb, reaper):
    """Test files that failed with B only are run once more with B.  Those
    that pass then are flaky: reported, not counted as regressions."""
    cands = sorted(n for n in failing(pb[0], pb[2]) - failing(pa[0], pa[2])
                   if not n.startswith("("))
    if not cands or os.environ.get("REGRESS_RETRY", "1") == "0":
        return
    log("regress: [%s] re-running %d test file(s) that failed only with %s: %s" % (
        b.mpm, len(cands), b.mpm, " ".join(cands)))
    logfile = os.path.join(RESULTS, b.mpm + ".retry.log")
    b.launch(reaper, tests=cands, logfile=logfile,
             errfile=os.path.join(RESULTS, b.mpm + ".retry.err"))
    wait_runs([b], reaper, "retry")
    again, _ = parse_log(logfile)
    for n in cands:
        x = again.get(n)
        if x and x["status"] == "ok":
            pb[0][n]["flaky"] = True
            pb[0][n]["reason"] = (pb[0][n]["reason"] + " (passed when re-run: flaky)").strip()
        elif x:
            pb[0][n]["reason"] = (pb[0][n]["reason"] + " (failed again when re-run%s)" % (
                ", subtests " + x["failed"] if x["failed"] else "")).strip()


def comparisons(names):
    """(reference, other) pairs: "X+fhcache" against X when X runs too,
    everything else against the first name (A)."""
    pairs = []
    for name in names[1:]:
        base = name.partition("+")[0]
        pairs.append((names.index(base) if base != name and base in names else 0,
                      names.index(name)))
    return pairs


def main():
    names = sorted(privhttpd.MPMS) + ["%s+fhcache" % m for m in sorted(privhttpd.MPMS)]
    ap = argparse.ArgumentParser(description="Run httpd's perl-framework with two MPMs and compare.")
    ap.add_argument("mpm_a", choices=names)
    ap.add_argument("mpm_b", choices=names)
    ap.add_argument("tests", nargs="*", help="test files (after --), default: all")
    ap.add_argument("--with-fhcache", action="store_true",
                    help="also run A+fhcache and B+fhcache (mod_fhcache, FHCache On), each "
                         "compared with the same MPM without it")
    ap.add_argument("--sequential", action="store_true",
                    help="run the two MPMs one after the other (default: in parallel, "
                         "unless REGRESS_PARALLEL=0)")
    ap.add_argument("--reparse", action="store_true",
                    help="run nothing: compare the existing out/regress/<mpm>.log files "
                         "(no re-runs, no error_log/sanitizer checks, .txt files kept)")
    args = ap.parse_intermixed_args()  # options may follow the MPMs
    if args.mpm_a == args.mpm_b:
        ap.error("MPM_A and MPM_B must differ")
    mpms = [args.mpm_a, args.mpm_b]
    if args.with_fhcache:
        mpms += ["%s+fhcache" % m for m in mpms if "+" not in m]
    pairs = comparisons(mpms)
    for t in args.tests:
        if not re.match(r"^[\w./-]+$", t):
            ap.error("bad test name %r" % t)
    if args.reparse:
        runs = []
        for mpm in mpms:
            r = MpmRun(mpm, 0, None, [], 0, False)
            copy = os.path.join(r.wd, "modules", os.path.basename(r.so))
            r.loaded_so = copy if os.path.exists(copy) else r.so
            if not os.path.exists(r.logfile):
                log("regress: ERROR: no %s" % r.logfile)
                return 2
            runs.append(r)
        log("regress: re-parsing existing logs (nothing run)")
        return compare(runs, [analyse(r) for r in runs], pairs, time.monotonic())
    parallel = not args.sequential and os.environ.get("REGRESS_PARALLEL", "1") != "0"
    timeout = int(os.environ.get("REGRESS_TIMEOUT", "2700"))

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    reaper = Reaper()
    runs = []
    t0 = time.monotonic()
    os.makedirs(RESULTS, exist_ok=True)
    lock = open(os.path.join(RESULTS, ".lock"), "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        log("regress: ERROR: another run is using %s" % RESULTS)
        return 2
    try:
        for p in (OUT, RESULTS):
            os.chmod(p, os.stat(p).st_mode | 0o055)
        ensure_packages()
        ensure_framework()
        localhost_check()
        user = ensure_user() if os.geteuid() == 0 else None
        ports = pick_ports(len(mpms))
        netns = netns_available()
        if not netns:
            log("regress: note: no private network namespace (needs root and unshare, "
                "REGRESS_NETNS=0 turns it off); "
                "leaving out mod_heartbeat/mod_heartmonitor, which multicast to "
                "239.0.0.1: t/modules/heartbeat.t will be skipped")
        for mpm, port in zip(mpms, ports):
            runs.append(MpmRun(mpm, port, user, args.tests, timeout, netns))
        for r in runs:
            r.prepare()
        log("regress: %s, %s, apache2 %s, 127.0.0.1 ports %s%s" % (
            ", ".join("%s vs %s" % (mpms[i], mpms[j]) for i, j in pairs),
            "in parallel" if parallel else "sequentially",
            apache_version(), "/".join(str(r.port) for r in runs),
            ", each in a loopback-only network namespace" if netns else ""))
        if not reaper.subreaper:
            log("regress: note: PR_SET_CHILD_SUBREAPER unavailable; "
                "httpd is stopped through its pidfile")
        for batch in ([runs] if parallel else [[r] for r in runs]):
            for r in batch:
                log("regress: [%s] starting t/TEST on 127.0.0.1:%d (log %s)" % (
                    r.mpm, r.port, os.path.relpath(r.logfile, ROOT)))
                r.launch(reaper)
            wait_runs(batch, reaper)
            for r in batch:
                r.duration_main = r.duration
                r.timed_out_main = r.timed_out
                r.progress_main = r.progress
        parsed = [analyse(r) for r in runs]
        for i, j in pairs:
            retry_regressions(runs[i], runs[j], parsed[i], parsed[j], reaper)
        for r, (results, info, known) in zip(runs, parsed):
            for kind, lines in r.server_problems():
                results["(server) " + kind] = {"status": "failed", "failed": "",
                                               "reason": "; ".join(lines)[:2000], "notok": []}
            write_results(r, results, info, known)
            r.trim_logs()
    except SetupError as e:
        log("regress: ERROR: %s" % e)
        left = reaper.stop_all()
        if left:
            log("regress: WARNING: processes still alive: %s" % left)
        return 2
    except KeyboardInterrupt as e:
        log("\nregress: interrupted (%s); stopping everything we started" % e)
        for r in runs:
            r.stop(reaper)
        left = reaper.stop_all()
        if left:
            log("regress: WARNING: processes still alive: %s" % left)
        return 130

    left = reaper.stop_all()
    if left:
        log("regress: WARNING: processes still alive after stop: %s" % left)
    return compare(runs, parsed, pairs, t0)


def compare(runs, parsed, pairs, t0):
    """Print each run's totals and the comparison of every pair (B against
    A); returns the exit status."""
    log("")
    for r, (res, info, known) in zip(runs, parsed):
        summarize_run(r, res, info, known)
    status = 0
    for i, j in pairs:
        status = max(status, compare_pair(runs[i], runs[j], parsed[i], parsed[j]))
    log("regress: total %dm%02ds" % ((time.monotonic() - t0) // 60, (time.monotonic() - t0) % 60))
    incomplete = [r.mpm for r, p in zip(runs, parsed) if "(harness) incomplete run" in p[0]]
    if incomplete:
        log("regress: ERROR: the suite did not complete with %s: no valid comparison"
            % " and ".join(incomplete))
    # the closing line: the totals of every B per test file (known
    # differences apart; a file that passed when re-run counts as passed:
    # it is reported above)
    st = []
    for _, j in pairs:
        rb, kb = parsed[j][0], parsed[j][2]
        st += ["ok" if x.get("flaky") else x["status"] for n, x in rb.items() if n not in kb]
    log("regress: %d passed, %d failed, %d skipped" % (
        st.count("ok"), st.count("failed"), st.count("skipped")))
    return 2 if incomplete else status


def summarize_run(r, res, info, known):
    st = [x["status"] for n, x in res.items() if n not in known]
    dur = getattr(r, "duration_main", r.duration)
    log("regress: %-9s %3d files: %d ok, %d failed, %d skipped%s; %s; Result: %s; %dm%02ds; %s" % (
        r.mpm, len(res), st.count("ok"), st.count("failed"), st.count("skipped"),
        ", %d known difference" % len(known) if known else "",
        info["files_line"].split(",")[1].strip() if info["files_line"].count(",") else "?",
        info["result"] or "?", dur // 60, dur % 60, os.path.relpath(r.txtfile, ROOT)))
    if r.fhcache:
        log("regress:           %d responses served by mod_fhcache"
            % getattr(r, "fhcache_count", 0))
    sl = slowest(r)
    if sl:
        log("regress:           slowest (approx.): " + ", ".join(
            "%s %ds" % (n, s) for s, n in sl if n))


def compare_pair(a, b, pa, pb):
    """Print how B compares with A; 1 if B has regressions, else 0."""
    (ra, ia, ka), (rb, ib, kb) = pa, pb
    flaky_b = {n for n, x in rb.items() if x.get("flaky")}
    fa = failing(ra, ka)
    fb = failing(rb, kb) - flaky_b
    log("regress: ===== %s (A) vs %s (B) =====" % (a.mpm, b.mpm))

    def detail(name, res):
        x = res.get(name)
        if not x:
            return "not run"
        out = []
        if x["failed"]:
            out.append("failed subtests " + x["failed"])
        if x["reason"]:
            out.append(x["reason"][:300])
        return "; ".join(out) or x["status"]

    def fmt(name, res):
        return "%s (%s)" % (name, detail(name, res))

    regressions = sorted(fb - fa)
    # files A ran but B never reported (e.g. B aborted) count as failures of B
    missing_b = sorted(n for n in ra if n not in rb and not n.startswith("("))
    fixed = sorted(fa - failing(rb, kb))
    both = sorted(fa & failing(rb, kb))
    skip_diff = sorted(n for n in set(ra) & set(rb)
                       if (ra[n]["status"] == "skipped") != (rb[n]["status"] == "skipped")
                       and n not in fa | fb)

    log("regress: fail with %s but not with %s (regressions): %d" % (
        b.mpm, a.mpm, len(regressions) + len(missing_b)))
    for n in regressions:
        log("regress:   - " + fmt(n, rb))
    for n in missing_b:
        log("regress:   - %s (ran with %s, no result with %s)" % (n, a.mpm, b.mpm))
    if flaky_b - fa:
        log("regress: failed with %s, passed when re-run (flaky, not counted): %d" % (
            b.mpm, len(flaky_b - fa)))
        for n in sorted(flaky_b - fa):
            log("regress:   - " + fmt(n, rb))
    log("regress: fail with %s but not with %s: %d" % (a.mpm, b.mpm, len(fixed)))
    for n in fixed:
        log("regress:   - " + fmt(n, ra))
    log("regress: fail with both (reported, not counted as regressions): %d" % len(both))
    for n in both:
        log("regress:   - %s (%s: %s | %s: %s)" % (n, a.mpm, detail(n, ra), b.mpm, detail(n, rb)))
    for mpm, known in ((a.mpm, ka), (b.mpm, kb)):
        for n, why in sorted(known.items()):
            log("regress: known difference with %s, not counted as a regression: %s: %s"
                % (mpm, n, why))
    if skip_diff:
        log("regress: skipped with only one of them (not failures):")
        for n in skip_diff:
            who, res = (a.mpm, ra) if ra[n]["status"] == "skipped" else (b.mpm, rb)
            log("regress:   - %s skipped with %s: %s" % (n, who, res[n]["reason"]))
    return 1 if regressions or missing_b else 0


if __name__ == "__main__":
    sys.exit(main())
