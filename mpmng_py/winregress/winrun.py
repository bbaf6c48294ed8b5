"""One t/TEST run of the perl-framework against one Windows build under
wine64: its work tree (framework, build, wineprefix), httpd.conf, and the
checks of its logs.  The running, polling and stopping are the Linux
runner's (mpmng_py.regress.mpmrun.MpmRun).
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
from mpmng_py.regress.base import FRAMEWORK, SetupError, log
from mpmng_py.regress.mpmrun import MpmRun
from mpmng_py.regress.procs import run
from mpmng_py.win import crashreport
from mpmng_py.winregress.settings import (APXS, BUILDS, CGI_RELAY_SRC, CMODULE_NEEDS,
                                          CROSS_CC, FILE_STALL, MULTICAST_MODULES, RESULTS,
                                          SKIP_MODULES, WINE, WINNT_NG_CONF, WRAPPER,
                                          export_symbol, user_ids, wait_wineserver)

TEST_FILE = re.compile(r"^(t|Apache-Test)/\S+\.t$")
# What a crashed or killed server leaves: stock's parent after its child
# died (AH00427/AH00428), mpm_winnt_ng's parent after one of its children
# did, Wine's crash report.
ERROR_LOG_CRASH = (r"AH0042[78]|mpm_winnt_ng: child [0-9]+ exited with status"
                   r"|Unhandled (exception|page fault)|mpm_winnt_ng: crash: pid")
CONSOLE_CRASH = r"Unhandled (exception|page fault)|wine: .*(crash|Assertion)|killing what is left"


def sha16(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:16]


class WinRun(MpmRun):
    """name: "stock", "ng", "stock+fhcache" or "ng+fhcache"."""

    def __init__(self, name, port, user, test_args, timeout, netns, winout, template):
        # Not MpmRun.__init__: there is no Linux MPM module behind the name.
        self.mpm = name
        self.base, _, addon = name.partition("+")
        self.fhcache = addon == "fhcache"
        self.netns = netns
        self.port = port
        self.user = user
        self.test_args = test_args
        self.timeout = timeout
        self.template = template
        self.file_stall = FILE_STALL
        self.sym, self.control = BUILDS[self.base]
        self.build_src = os.path.join(winout, self.base)
        self.fhcache_src = os.path.join(winout, "fhcache", "mod_fhcache.so")
        self.wd = os.path.join(RESULTS, "work", name)
        self.fw = os.path.join(self.wd, "perl-framework")
        self.home = os.path.join(self.wd, "home")
        self.build = os.path.join(self.wd, "build")
        self.prefix = os.path.join(self.wd, "wineprefix")
        self.bindir = os.path.join(self.wd, "bin")
        self.logfile = os.path.join(RESULTS, name + ".log")
        self.errfile = os.path.join(RESULTS, name + ".err")
        self.txtfile = os.path.join(RESULTS, name + ".txt")
        self.pidfile = os.path.join(self.fw, "t", "logs", "httpd.pid")
        self.error_log = os.path.join(self.fw, "t", "logs", "error_log")
        self.console_log = os.path.join(self.fw, "t", "logs", "httpd-wine.log")
        self.sock_prefix = "/tmp/mpmng-winregress-%s-%s-%d" % (
            hashlib.sha1(self.wd.encode()).hexdigest()[:8], name, port)
        # the MPM is linked into libhttpd.dll on Windows
        self.so = os.path.join(self.build_src, "bin", "libhttpd.dll")
        self.loaded_so = self.so
        self.so_sha = None
        self.fhcache_so = None
        self.proc = None
        self.start = self.end = None
        self.timed_out = False
        self.progress = []
        self.modules = []
        self.header_lines = []

    # -- preparation ---------------------------------------------------
    def prepare(self):
        exe = os.path.join(self.build_src, "bin", "httpd.exe")
        if not os.path.exists(exe):
            raise SetupError("%s: %s does not exist (build/win/build.sh, or set "
                             "MPMNG_WINOUT)" % (self.mpm, exe))
        if self.fhcache and not os.path.exists(self.fhcache_src):
            raise SetupError("%s: %s does not exist" % (self.mpm, self.fhcache_src))
        shutil.rmtree(self.wd, ignore_errors=True)
        for stale in (".retry.log", ".retry.err", ".txt", ".log", ".err"):
            try:
                os.unlink(os.path.join(RESULTS, self.mpm + stale))
            except OSError:
                pass
        os.makedirs(self.home)
        os.makedirs(self.bindir)
        for p in (RESULTS, os.path.join(RESULTS, "work"), self.wd):
            os.chmod(p, 0o755)
        shutil.copytree(FRAMEWORK, self.fw, symlinks=True)
        # A copy of the build (symlinks dereferenced): a rebuild during the
        # run cannot change what runs, and the c-modules link against it.
        shutil.copytree(self.build_src, self.build)
        self.loaded_so = os.path.join(self.build, "bin", "libhttpd.dll")
        self.so_sha = sha16(self.loaded_so)
        if self.fhcache:
            os.makedirs(os.path.join(self.wd, "fhcache"))
            self.fhcache_so = os.path.join(self.wd, "fhcache", "mod_fhcache.so")
            shutil.copy2(self.fhcache_src, self.fhcache_so)
        r = run(["cp", "-a", self.template, self.prefix])
        if r.returncode != 0:
            raise SetupError("copying the wineprefix failed: %s" % r.stderr)
        self.patch()
        conf = self.write_httpd_conf()
        if "version" not in self.modules:
            raise SetupError("%s: the suite's configuration needs mod_version (<IfVersion> "
                             "in t/conf/*.conf.in, unguarded) and %s/modules has no "
                             "mod_version.so" % (self.mpm, self.build_src))
        self.drop_cmodules()
        relay = os.path.join(self.bindir, "cgi-relay.exe")
        r = run([CROSS_CC, "-O2", "-Wall", "-o", relay, CGI_RELAY_SRC])
        if r.returncode != 0:
            raise SetupError("building %s failed:\n%s" % (CGI_RELAY_SRC, r.stderr))
        httpd, apxs = self.write_shims()
        self.describe()
        if self.user:
            run(["chown", "-R", "%s:%s" % (self.user, self.user), self.wd], check=True)
            r = run(self.as_user(["test", "-x", WRAPPER, "-a", "-x", APXS, "-a",
                                  "-w", self.fw]))
            if r.returncode != 0:
                raise SetupError("user %s cannot reach %s or %s (check the permissions "
                                 "of their parent directories)" % (self.user, WRAPPER, self.wd))
        # `perl Makefile.PL` asks httpd.exe -V/-l: in a namespace of its own
        # too, and its wineserver gone before t/TEST starts another one.
        cmd = self.in_netns(self.as_user(self.env_cmd() + [
            "perl", "Makefile.PL", "-apxs", apxs, "-httpd", httpd, "-httpd_conf", conf]))
        r = run(cmd, cwd=self.fw, stdin=subprocess.DEVNULL)
        wait_wineserver(self.user, self.prefix, self.home)
        with open(os.path.join(self.wd, "makefile.log"), "w") as f:
            f.write(r.stdout + r.stderr)
        if r.returncode != 0:
            raise SetupError("%s: perl Makefile.PL failed:\n%s" % (
                self.mpm, (r.stdout + r.stderr)[-3000:]))

    def patch(self):
        """The Linux runner's environmental patches (loopback, per-run
        sockets, REGRESS_LOGLEVEL, the fhcache block), and mpm_winnt_ng's
        sizing in place of mpm_reuseport's."""
        super().patch()
        # Apache::Test writes User/Group unless perl itself runs on Windows;
        # httpd.exe has no such directives (no mod_unixd).
        self.sub("Apache-Test/lib/Apache/TestConfig.pm",
                 "    for my $name (qw(user group)) { #win32\n        if ($vars->{$name}) {\n",
                 "    for my $name (qw(user group)) { #win32\n"
                 "        if ($vars->{$name} and 0) {  # mpm-ng: not for httpd.exe\n")
        # httpd.exe has no unix domain sockets (mod_proxy crashed at the
        # request here), and the tests' socket servers would then wait for
        # a connection forever: those subtests skip.
        self.sub("t/modules/proxy.t",
                 "if (have_min_apache_version('2.4.7')) {\n    my $socket_path",
                 "if (have_min_apache_version('2.4.7') and 0) {  # mpm-ng: no AF_UNIX\n"
                 "    my $socket_path")
        self.sub("t/modules/proxy_fcgi.t", "foreach my $url (@udstests) {\n",
                 "foreach my $url (@udstests) {\n"
                 "    skip 'mpm-ng: httpd.exe has no unix domain sockets' foreach (1..2);\n"
                 "    next;\n")
        with open(os.path.join(self.fw, "t", "conf", "zz_mpmng_mpm.conf.in"), "w") as f:
            f.write("# added by mpm-ng mpmng_py/winregress\n" + WINNT_NG_CONF)

    def write_httpd_conf(self):
        """Like Debian's run-test-suite, every module the build has (so a
        build with more modules runs more of the suite).  Apache::Test only
        inherits LoadModule/LoadFile/TypesConfig from this file."""
        lines = ["# generated by mpm-ng mpmng_py/winregress: every module of %s"
                 % self.build_src]
        for so in sorted(glob.glob(os.path.join(self.build, "modules", "mod_*.so"))):
            name = os.path.basename(so)
            if name in SKIP_MODULES or (not self.netns and name in MULTICAST_MODULES):
                continue
            sym = export_symbol(so)
            if not sym:
                raise SetupError("%s exports no single *_module symbol" % so)
            lines.append('LoadModule %s "%s"' % (sym, so))
            self.modules.append(name[len("mod_"):-len(".so")])
        if self.fhcache_so:
            lines.append('LoadModule fhcache_module "%s"' % self.fhcache_so)
        lines += ['TypesConfig "%s"' % os.path.join(self.build, "conf", "mime.types"),
                  "ServerName localhost"]
        path = os.path.join(self.fw, "httpd.conf.winregress")
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        return path

    def drop_cmodules(self):
        """c-modules that would break the configuration of this build."""
        self.cmodules_dropped = []
        for cmod, needs in sorted(CMODULE_NEEDS.items()):
            lacking = [m for m in needs if m not in self.modules]
            if lacking:
                shutil.rmtree(os.path.join(self.fw, "c-modules", cmod))
                self.cmodules_dropped.append("%s (needs mod_%s)" % (cmod, ", mod_".join(lacking)))

    def write_shims(self):
        """bin/httpd and bin/apxs for Apache::Test: httpd-wine and
        apxs-mingw with this run's build and wineprefix."""
        def shim(name, env, *cmd):
            path = os.path.join(self.bindir, name)
            with open(path, "w") as f:
                f.write("#!/bin/sh\n# mpm-ng winregress: %s for this run\n" % name)
                for k, v in env.items():
                    f.write("%s='%s'; export %s\n" % (k, v, k))
                f.write('exec %s "$@"\n' % " ".join("'%s'" % c for c in cmd))
            os.chmod(path, 0o755)
            return path
        httpd = shim("httpd", {
            "HTTPD_WINE_EXE": os.path.join(self.build, "bin", "httpd.exe"),
            "HTTPD_WINE_CONTROL": self.control, "WINE64": WINE,
            "HTTPD_WINE_CGI_RELAY": os.path.join(self.bindir, "cgi-relay.exe"),
            "WINEPREFIX": self.prefix}, WRAPPER)
        # c-modules built once per build (keyed on their inputs), shared by runs
        cache = os.path.join(RESULTS, "cache", "c-modules")
        os.makedirs(cache, exist_ok=True)
        uid, gid = user_ids(self.user)
        os.chown(cache, uid, gid)
        apxs = shim("apxs", {"HTTPD_WINE_PREFIX": self.build, "APXS_MINGW_BINDIR": self.bindir,
                             "APXS_MINGW_LOG": os.path.join(self.wd, "apxs-mingw.log"),
                             "APXS_MINGW_CACHE": cache}, APXS)
        # t/ab/base.t runs <bindir>/ab (over http and https): the build's
        # abs.exe (ab with TLS) or ab.exe under Wine, or Debian's ab when the
        # build has neither
        ab_exe = [p for p in (os.path.join(self.build, "bin", n) for n in ("abs.exe", "ab.exe"))
                  if os.path.exists(p)]
        ab_exe = ab_exe[0] if ab_exe else None
        if ab_exe:
            shim("ab", {"WINEPREFIX": self.prefix, "WINEDEBUG": "-all",
                        "WINEDLLOVERRIDES": "mscoree,mshtml=;winedbg.exe=d"},
                 WINE, ab_exe)
        elif os.path.exists("/usr/bin/ab"):
            os.symlink("/usr/bin/ab", os.path.join(self.bindir, "ab"))
        return httpd, apxs

    def describe(self):
        info = {}
        try:
            with open(os.path.join(self.build, "build-info.txt")) as f:
                info = dict(l.strip().split("=", 1) for l in f if "=" in l)
        except OSError:
            pass
        self.header_lines = [
            "windows build: %s (%s, key %s), libhttpd.dll sha256 %s" % (
                self.build_src, info.get("mpm_module", self.sym), info.get("key", "?"),
                self.so_sha),
            "modules loaded (%d): %s" % (len(self.modules), " ".join(self.modules))]
        if self.cmodules_dropped:
            self.header_lines.append("c-modules left out (their configuration needs modules "
                                     "the build lacks): " + "; ".join(self.cmodules_dropped))
        if self.fhcache_so:
            self.header_lines.append("mod_fhcache.so: %s, sha256 %s" % (
                self.fhcache_src, sha16(self.fhcache_so)))

    def env_cmd(self):
        # WINEPREFIX and the rest are in the shims; APACHE_TEST_STARTUP_TIMEOUT:
        # httpd.exe starts in ~3 s alone, slower beside three other runs.
        return super().env_cmd() + ["APACHE_TEST_STARTUP_TIMEOUT=180"]

    # -- running -------------------------------------------------------
    def launch(self, reaper, tests=None, logfile=None, errfile=None):
        self.killed_files = []
        super().launch(reaper, tests, logfile, errfile)

    def poll(self):
        """The Linux runner's polling, and a test file that prints nothing
        for self.file_stall seconds (a response that never ends: a client
        waiting for a close that does not come) is killed, so the harness
        records it as failed and goes on with the next file."""
        done = super().poll()
        if done:
            return done
        if time.monotonic() - self._last_growth > self.file_stall:
            # (while configuring or starting no test file runs: nothing is
            # killed, REGRESS_STALL applies)
            running = self.running_tests()
            names = sorted(set(running.values()))
            if not names:
                return False
            log("regress: [%s] no output for %ds: killing %s (pids %s)" % (
                self.mpm, self.file_stall, " ".join(names),
                " ".join(str(p) for p in sorted(running))))
            for pid in running:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            self.killed_files += [n for n in names if n not in self.killed_files]
            self._last_growth = time.monotonic()
        return False

    def running_tests(self):
        """{pid: test file} of the processes under t/TEST that run a test
        file (the harness's `perl -w t/x.t`, anything it forked, and their
        descendants).  The harness prints a file's name only with its first
        output, so the last name in the log is not always the one running."""
        kids = {}
        for pid, state, parent in privhttpd.processes():
            if state != "Z":
                kids.setdefault(parent, []).append(pid)
        found, todo = {}, [(self.proc.pid, None)]
        while todo:
            pid, name = todo.pop()
            for kid in kids.get(pid, []):
                kname = name
                if kname is None:
                    try:
                        with open("/proc/%d/cmdline" % kid, "rb") as f:
                            argv = f.read().decode(errors="replace").split("\0")
                    except OSError:
                        continue
                    argv = [a for a in argv if a]
                    # `perl -w t/x.t`, not t/TEST with test files as arguments
                    if (argv and TEST_FILE.match(argv[-1])
                            and not any(a.endswith("t/TEST") for a in argv)):
                        kname = argv[-1]
                if kname:
                    found[kid] = kname
                todo.append((kid, kname))
        return found

    def finish(self, reaper):
        super().finish(reaper)
        wait_wineserver(self.user, self.prefix, self.home)

    def stop(self, reaper):
        super().stop(reaper)
        wait_wineserver(self.user, self.prefix, self.home, timeout=10)

    # -- results ---------------------------------------------------------
    @property
    def server_version(self):
        """From t/TEST's "using Apache/2.4.68 (Win64) (winnt MPM)" line."""
        try:
            with open(self.logfile, errors="replace") as f:
                for line in f:
                    m = re.match(r"^using (Apache/.*)$", line)
                    if m:
                        return "httpd.exe: %s under %s" % (m.group(1).strip(), WINE)
        except OSError:
            pass
        return "httpd.exe: %s (version not seen in the log)" % self.build_src

    def cmodules_missing(self):
        """c-modules that did not build for Windows (apxs-mingw.log)."""
        try:
            with open(os.path.join(self.wd, "apxs-mingw.log"), errors="replace") as f:
                return sorted(set(re.findall(r"^== .*/(mod_\w+)\.c: not built", f.read(), re.M)))
        except OSError:
            return []

    def crash_stack(self):
        """mpm_winnt_ng's crash report in error_log, its frames named."""
        try:
            with open(self.error_log, errors="replace") as f:
                text = f.read()
        except OSError:
            return []
        dirs = [os.path.join(self.build, d) for d in ("bin", "modules")]
        return crashreport.named_stack(text, dirs + [os.path.dirname(self.fhcache_src)])

    def server_problems(self):
        """A crashed child, Wine's crash report, a server killed because it
        would not stop, and a +fhcache run whose cache served nothing."""
        problems = []
        for path, pattern, what in ((self.error_log, ERROR_LOG_CRASH, "error_log"),
                                    (self.console_log, CONSOLE_CRASH, "console")):
            if os.path.exists(path):
                r = run(["grep", "-aE", "-m", "20", pattern, path])
                lines = [l for l in r.stdout.splitlines() if l.strip()]
                if lines:
                    problems.append((what, lines))
        stack = self.crash_stack()
        if stack:
            problems.append(("crash stack", stack))
        if self.fhcache and (not os.path.exists(self.error_log) or not self.fhcache_served()):
            self.fhcache_count = getattr(self, "fhcache_count", 0)
            problems.append(("fhcache", ["no response served by mod_fhcache "
                                         "(no 'mod_fhcache: serving' in error_log)"]))
        return problems
