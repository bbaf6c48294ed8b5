"""One t/TEST run of the perl-framework with one MPM: its work tree,
httpd.conf, the run itself and the checks of its logs.
"""
import glob
import hashlib
import os
import re
import shutil
import signal
import subprocess
import time

from mpmng_py import privhttpd
from mpmng_py.regress import oldconf
from mpmng_py.regress.base import (APXS, FHCACHE_CONF, FHCACHE_SO, FRAMEWORK, MULTICAST_LOADS,
                                   NETNS_SETUP, PATH, RESULTS, REUSEPORT_CONF, STALL, STOCK,
                                   SetupError, log)
from mpmng_py.regress.parse import HEADER
from mpmng_py.regress.procs import run


def own_module(line):
    """A LoadModule line of Debian's for the httpd under test: its module
    directory's file of that name, or a comment where it has none."""
    prefix = privhttpd.DEBIAN_MODS + "/"
    m = re.match(r"\s*LoadModule\s+\S+\s+(\S+)", line)
    if not m or privhttpd.SYSMODS == privhttpd.DEBIAN_MODS or not m.group(1).startswith(prefix):
        return line
    path = os.path.join(privhttpd.SYSMODS, m.group(1)[len(prefix):])
    if not os.path.exists(path):
        return "# not in this httpd build: " + line
    return line.replace(m.group(1), path)


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
        self.trimmed = []   # template lines this httpd release cannot parse

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
        self.trimmed = oldconf.trim_unparsed(self, self.configure, lambda: self.syntax_check(httpd))

    def configure(self):
        """t/conf generated from its templates, nothing run."""
        r = run(self.as_user(self.env_cmd() + ["t/TEST", "-configure"]), cwd=self.fw,
                stdin=subprocess.DEVNULL)
        if r.returncode != 0:
            raise SetupError("%s: t/TEST -configure failed:\n%s" % (
                self.mpm, (r.stdout + r.stderr)[-3000:]))

    def syntax_check(self, httpd):
        """httpd -t on the generated configuration, as Apache::Test starts it."""
        t = os.path.join(self.fw, "t")
        return run(self.as_user(self.env_cmd() + [
            httpd, "-d", t, "-f", os.path.join(t, "conf", "httpd.conf"),
            "-D", "APACHE2", "-D", "APACHE2_4", "-t"]), cwd=self.fw, stdin=subprocess.DEVNULL)

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
        self.sub(at + "TestConfig.pm",
                 "[Listen => '0.0.0.0:' . $port]", "[Listen => '127.0.0.1:' . $port]")
        self.sub(at + "TestConfigPerl.pm",
                 "(Listen => '0.0.0.0:' . $port)", "(Listen => '127.0.0.1:' . $port)")
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
        from this file.  Another httpd build (MPMNG_SYSMODS) loads the same
        modules from its own directory, those it has."""
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
                lines += [own_module(l.rstrip("\n")) for l in f]
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
