"""Private httpd instances for tests and benchmarks.

One place that writes a config, starts Debian's apache2 binary on a loopback
port, waits until it really accepts, and stops exactly the processes it
started (by PID).  Tests, the regression-suite runner and bench/ all use it.
"""
import collections
import fcntl
import glob
import os
import pwd
import re
import resource
import shutil
import signal
import socket
import subprocess
import tempfile
import time

from mpmng_py import ROOT

# Build output (our modules, sanitizer reports); MPMNG_OUT for a build made
# elsewhere (make OUT=DIR ...).
OUT = os.path.abspath(os.environ.get("MPMNG_OUT") or os.path.join(ROOT, "out"))
APACHE2 = os.environ.get("APACHE2", "/usr/sbin/apache2")
# httpd's own modules; an httpd built from source has its own (test/intree).
DEBIAN_MODS = "/usr/lib/apache2/modules"
SYSMODS = os.environ.get("MPMNG_SYSMODS", DEBIAN_MODS)
# An MPM linked into APACHE2 (./configure --with-mpm=NAME): never loaded.
STATIC_MPM = os.environ.get("MPMNG_STATIC_MPM", "")
# The apxs of APACHE2's build (the regression suite asks it).
APXS = os.environ.get("MPMNG_APXS", "/usr/bin/apxs2")

# MPM name -> (module symbol, .so path).  Ours are looked up in out/.
MPMS = {
    "reuseport": ("mpm_reuseport_module", os.path.join(OUT, "mod_mpm_reuseport.so")),
    "event": ("mpm_event_module", os.path.join(SYSMODS, "mod_mpm_event.so")),
    "worker": ("mpm_worker_module", os.path.join(SYSMODS, "mod_mpm_worker.so")),
    "prefork": ("mpm_prefork_module", os.path.join(SYSMODS, "mod_mpm_prefork.so")),
}

# Modules every private instance loads (static files, access control, status).
BASE_MODULES = ["authz_core", "authz_host", "mime", "dir", "status", "alias"]


_versions = {}


def httpd_version(binary=None):
    """(2, 4, N) of an httpd binary (APACHE2 by default), from -v."""
    binary = binary or APACHE2
    if binary not in _versions:
        out = subprocess.run([binary, "-v"], capture_output=True, text=True,
                             env=server_env()).stdout
        m = re.search(r"Apache/(\d+)\.(\d+)\.(\d+)", out)
        if not m:
            raise RuntimeError("%s -v names no version: %r" % (binary, out))
        _versions[binary] = tuple(int(x) for x in m.groups())
    return _versions[binary]


def server_env():
    """Environment for apache2: minimal, plus the sanitizer runtime when
    `make check SANITIZE=1` exported MPMNG_LD_PRELOAD (the apache2 binary
    is not instrumented, so libasan must be preloaded for our DSO)."""
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C"}
    if "TZ" in os.environ:
        env["TZ"] = os.environ["TZ"]    # its log's local time is the tests'
    preload = os.environ.get("MPMNG_LD_PRELOAD")
    if preload:
        _sanitizer_dir_writable()
        env["LD_PRELOAD"] = preload
        env["ASAN_OPTIONS"] = os.environ.get(
            "ASAN_OPTIONS", "detect_leaks=0:abort_on_error=1:log_path=" +
            os.path.join(OUT, "asan"))
        env["UBSAN_OPTIONS"] = os.environ.get(
            "UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1:log_path=" +
            os.path.join(OUT, "ubsan"))
    return env


def _sanitizer_dir_writable():
    """The children run as www-data and must be able to write their reports
    to out/ (a sanitizer that cannot open its log_path aborts without a
    report): give out/ to group www-data, sticky like /tmp."""
    os.makedirs(OUT, exist_ok=True)
    if os.geteuid() == 0:
        import grp
        try:
            os.chown(OUT, 0, grp.getgrnam("www-data").gr_gid)
            os.chmod(OUT, 0o1775)
        except (KeyError, OSError):
            pass


def sanitizer_reports():
    """Sanitizer report files (out/asan.*, out/ubsan.* or wherever the
    ASAN_OPTIONS/UBSAN_OPTIONS log_path of server_env() points)."""
    import glob
    env = server_env() if os.environ.get("MPMNG_LD_PRELOAD") else {}
    paths = set()
    for var, default in (("ASAN_OPTIONS", "asan"), ("UBSAN_OPTIONS", "ubsan")):
        m = [kv.split("=", 1)[1] for kv in env.get(var, "").split(":")
             if kv.startswith("log_path=")]
        prefix = m[0] if m else os.path.join(OUT, default)
        paths.update(glob.glob(prefix + ".*"))
    return paths


def _family(host):
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def bracket(host):
    """host as written in a URL or a Listen directive ([::1] for IPv6)."""
    return "[%s]" % host if ":" in host else host


_GIVEN_PORTS = collections.deque(maxlen=256)


def free_port(host="127.0.0.1", *more_hosts, tries=50):
    """A port the kernel just gave out on host (and also free on every one
    of more_hosts, e.g. "::1" for a dual-stack test), and not one of the
    last given here (two calls in a row, a server's HTTP and TLS ports,
    could get the same while neither is bound yet); good enough for
    loopback tests."""
    for _ in range(tries):
        with socket.socket(_family(host), socket.SOCK_STREAM) as s:
            s.bind((host, 0))
            port = s.getsockname()[1]
        if port in _GIVEN_PORTS:
            continue
        _GIVEN_PORTS.append(port)
        try:
            for other in more_hosts:
                with socket.socket(_family(other), socket.SOCK_STREAM) as s:
                    s.bind((other, port))
            return port
        except OSError:
            continue
    raise RuntimeError("no port free on %s" % ((host,) + more_hosts,))


def wait_for_port(host, port, timeout):
    """True once host:port takes a connection.  The last try starts after
    the deadline: a machine that stalled the waiter past it (a loaded CI
    run) must not fail a server that was ready all along."""
    deadline = time.monotonic() + timeout
    while True:
        last = time.monotonic() >= deadline
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return True
        except OSError:
            if last:
                return False
            time.sleep(0.05)


def _owner(path):
    try:
        return os.stat(path).st_uid
    except OSError:
        return None


def pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie is dead for our purposes.
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


# ---- how server processes ended ---------------------------------------
# `apache2 -k start` detaches: its parent's parent exits at once, so the
# server's parent is nobody's child but init's, and its exit status is
# lost.  A test runner that calls reap_servers_here() becomes their reaper
# instead (PR_SET_CHILD_SUBREAPER: orphans below it come to it), and
# reap() records how each ended.
_exits = {}


def reap_servers_here():
    """Make this process the reaper of the servers it starts; True if so."""
    import ctypes
    pr_set_child_subreaper = 36
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.prctl(pr_set_child_subreaper, 1, 0, 0, 0) == 0


def reap(pids):
    """Collect the exit of those of pids that are our children and ended
    (records it for how_it_ended(); a zombie would stay one otherwise)."""
    for pid in pids:
        try:
            got, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            continue
        if got == pid:
            _exits[pid] = status


def how_it_ended(pid):
    """'exited with status N' or 'killed by signal N (NAME)[, core dumped]',
    or why it is not known."""
    reap([pid])
    status = _exits.get(pid)
    if status is None:
        return "its exit status is unknown (not reaped by this process: see " \
               "reap_servers_here())"
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = "?"
        return "killed by signal %d (%s)%s" % (
            sig, name, ", core dumped" if os.WCOREDUMP(status) else "")
    return "exited with status %d" % os.WEXITSTATUS(status)


def core_pattern():
    try:
        with open("/proc/sys/kernel/core_pattern") as f:
            return f.read().strip()
    except OSError:
        return "?"


def core_backtraces(core_dir, binary=None, keep=False):
    """The gdb backtrace of each core file in core_dir, as text ('' if
    none); the cores are removed unless keep."""
    import glob
    texts = []
    for core in sorted(glob.glob(os.path.join(core_dir, "core*"))):
        if not shutil.which("gdb"):
            texts.append("%s: no gdb here to read it" % core)
            continue
        res = subprocess.run(["gdb", "-batch", "-nx", "-q", "-ex", "set pagination off",
                              "-ex", "info threads", "-ex", "bt 40",
                              binary or APACHE2, core],
                             capture_output=True, text=True, timeout=120)
        texts.append("---- %s ----\n%s" % (core, res.stdout + res.stderr))
        if not keep:
            os.unlink(core)
    if not texts and not core_pattern().startswith(("core", "%")):
        texts.append("(no core here: kernel.core_pattern is %r)" % core_pattern())
    return "\n".join(texts)


def processes():
    """(pid, state letter, parent pid) of every process, from /proc."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        yield int(name), fields[0], int(fields[1])


def children_of(ppid):
    """PIDs whose parent is ppid (from /proc), excluding zombies."""
    return sorted(pid for pid, state, parent in processes()
                  if parent == ppid and state != "Z")


class Httpd:
    """A private httpd: own ServerRoot, config, logs and docroot.

    mpm: key of MPMS, or a (symbol, path) pair.
    directives: extra config text appended at server level.
    modules: extra module names loaded from Debian's module dir.
    """

    def __init__(self, mpm="reuseport", directives="", port=None, docroot=None,
                 modules=(), host="127.0.0.1", workdir=None, listen=None,
                 nofile=None):
        self.mpm = MPMS[mpm] if isinstance(mpm, str) else mpm
        self.nofile = nofile  # open-files limit for the server (fault tests)
        self.env = {}           # more environment for the server's commands
        self.fds_at_3 = []      # descriptors the server gets as 3, 4, ... (systemd's way)
        self.binary = APACHE2   # the httpd started (an upgrade test swaps its file)
        self.sysmods = SYSMODS  # its own modules' directory
        self.directives = directives
        self.host = host
        self.port = port or free_port(host)
        self.listen = listen or ["%s:%d" % (bracket(host), self.port)]
        self.modules = list(BASE_MODULES) + [m for m in modules if m not in BASE_MODULES]
        self.dir = workdir or tempfile.mkdtemp(prefix="mpmng-httpd-")
        os.chmod(self.dir, 0o755)  # children run as www-data
        for sub in ("conf", "logs", "run", "htdocs"):
            os.makedirs(os.path.join(self.dir, sub), exist_ok=True)
        self.docroot = docroot or os.path.join(self.dir, "htdocs")
        self.conf = os.path.join(self.dir, "conf", "httpd.conf")
        self.pidfile = os.path.join(self.dir, "run", "httpd.pid")
        # Cores of a crash (the children run as www-data): the harness prints
        # their backtraces (core_backtraces()).
        self.core_dir = os.path.join(self.dir, "cores")
        os.makedirs(self.core_dir, exist_ok=True)
        os.chmod(self.core_dir, 0o1777)
        self.errlog = os.path.join(self.dir, "logs", "error_log")
        self.pid = None

    # ---- configuration -------------------------------------------------
    def config_text(self):
        sym, path = self.mpm
        lines = [
            "ServerRoot %s" % self.dir,
            "ServerName %s" % bracket(self.host),
            "PidFile %s" % self.pidfile,
            "DefaultRuntimeDir %s/run" % self.dir,
            "ScoreBoardFile %s/run/scoreboard" % self.dir,
            "ErrorLog %s" % self.errlog,
            "LogLevel warn",
            "CoreDumpDirectory %s" % self.core_dir,
        ]
        if sym != "mpm_%s_module" % STATIC_MPM:
            lines.append("LoadModule %s %s" % (sym, path))
        for m in self.modules:
            lines.append("LoadModule %s_module %s/mod_%s.so" % (m, self.sysmods, m))
        if os.geteuid() == 0:
            lines += ["User www-data", "Group www-data"]
        lines += ["Listen %s" % l for l in self.listen]
        lines += [
            "DocumentRoot %s" % self.docroot,
            "<Directory />", "  Require all denied", "  AllowOverride None", "</Directory>",
            "<Directory %s>" % self.docroot, "  Require all granted", "</Directory>",
            "TypesConfig /etc/mime.types",
            "DirectoryIndex index.html",
            "<Location /server-status>", "  SetHandler server-status",
            "  Require ip 127.0.0.1 ::1", "</Location>",
            "ExtendedStatus On",
            self.directives,
        ]
        return "\n".join(lines) + "\n"

    def write_config(self):
        with open(self.conf, "w") as f:
            f.write(self.config_text())

    def write_file(self, relpath, data, mode=0o644, base=None):
        """Create a file under the docroot (or under base, relative to the
        instance dir, e.g. "cgi-bin"), readable by the children; mode 0o755
        for scripts."""
        root = os.path.join(self.dir, base) if base else self.docroot
        path = os.path.join(root, relpath)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        for d in (root, os.path.dirname(path)):
            os.chmod(d, 0o755)
        with open(path, "wb") as f:
            f.write(data if isinstance(data, bytes) else data.encode())
        os.chmod(path, mode)
        return path

    # ---- lifecycle -----------------------------------------------------
    def run_ctl(self, *args, timeout=30):
        """Run apache2 -f conf ARGS; returns CompletedProcess (never raises)."""
        env = server_env()
        limit = None
        if self.nofile:
            limit = lambda: resource.setrlimit(resource.RLIMIT_NOFILE,
                                               (self.nofile, self.nofile))
        env.update(self.env)
        cmd = [self.binary, "-f", self.conf] + list(args)
        high = []
        moves = ""
        if self.fds_at_3:
            # Each at a number above those it goes to, so no move overwrites another.
            high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 100) for fd in self.fds_at_3]
            moves = "exec %s; " % " ".join("%d<&%d %d<&-" % (3 + i, fd, fd)
                                          for i, fd in enumerate(high))
        # Cores as large as they come (CoreDumpDirectory says where); not
        # set in this process, whose clients would leave theirs in the cwd.
        cmd = ["bash", "-c", 'ulimit -c "$(ulimit -H -c)"; %sexec "$@"' % moves,
               "bash"] + cmd
        try:
            return subprocess.run(cmd, env=env, capture_output=True, text=True,
                                  timeout=timeout, preexec_fn=limit,
                                  pass_fds=high)
        finally:
            for fd in high:
                os.close(fd)

    def configtest(self):
        self.write_config()
        return self.run_ctl("-t")

    def start(self, timeout=20, expect_fail=False):
        self.write_config()
        if os.path.exists(self.pidfile):
            os.unlink(self.pidfile)
        res = self.run_ctl("-k", "start")
        if expect_fail:
            if res.returncode == 0:
                # It started after all: remember the parent so that stop()
                # and cleanup() can end it.
                try:
                    self.pid = self._wait_pidfile(5)
                except RuntimeError:
                    pass
            return res
        if res.returncode != 0:
            raise RuntimeError("apache2 -k start failed (%d): %s%s\n%s" % (
                res.returncode, res.stdout, res.stderr, self.log_tail()))
        self.pid = self._wait_pidfile(timeout)
        if not wait_for_port(self.host, self.port, timeout):
            raise RuntimeError("httpd pid %s never accepted on %s:%d\n%s" % (
                self.pid, self.host, self.port, self.log_tail()))
        self._wait_running(timeout)
        if "cgid" in self.modules:
            self._wait_cgid(timeout)
        return res

    def _wait_cgid(self, timeout):
        """Until mod_cgid's socket belongs to User.  Its daemon binds the
        socket as root with mode 0700 and only then hands it to User: a
        child that connects in between gets EACCES, which mod_cgid does not
        retry (httpd's race, under any MPM: a CGI request in the first
        milliseconds of a loaded machine got "Permission denied: unable to
        connect to cgi daemon")."""
        uid = pwd.getpwnam("www-data").pw_uid if os.geteuid() == 0 else os.geteuid()
        pattern = os.path.join(self.dir, "run", "cgisock*")
        deadline = time.monotonic() + timeout
        while True:
            expired = time.monotonic() >= deadline     # then one last look
            socks = [p for p in glob.glob(pattern) if _owner(p) == uid]
            if socks:
                return
            if expired:
                raise RuntimeError("mod_cgid's socket (%s) never belonged to uid %d: %s\n%s" % (
                    pattern, uid, glob.glob(pattern), self.log_tail()))
            time.sleep(0.02)

    def _wait_running(self, timeout):
        """Until the parent logs that it runs: the PidFile and the port
        come first (the port is bound before httpd detaches), a graceful()
        before this line would count the start-up's line as its own."""
        deadline = time.monotonic() + timeout
        while True:
            expired = time.monotonic() >= deadline     # then one last look
            if self.generation_count() >= 1:
                return
            if not pid_alive(self.pid):
                raise RuntimeError("httpd parent %d died while starting: %s\n%s" % (
                    self.pid, how_it_ended(self.pid), self.log_tail()))
            if expired:
                raise RuntimeError("httpd pid %d never said it runs\n%s" % (
                    self.pid, self.log_tail()))
            time.sleep(0.02)

    def _wait_pidfile(self, timeout):
        deadline = time.monotonic() + timeout
        while True:
            expired = time.monotonic() >= deadline   # then one last look
            pid = self.pidfile_pid()
            if pid and pid_alive(pid):
                return pid
            if expired:
                raise RuntimeError("no pidfile after %ss\n%s" % (timeout, self.log_tail()))
            time.sleep(0.05)

    def send_signal(self, sig):
        os.kill(self.pid, sig)

    def children(self):
        return children_of(self.pid) if self.pid else []

    def wait_children(self, count, timeout=20):
        """Wait until the parent has `count` live children; returns them."""
        deadline = time.monotonic() + timeout
        while True:
            # Looked at once more after the deadline: a runner that was
            # not scheduled for the whole wait must not fail unseen.
            expired = time.monotonic() >= deadline
            kids = self.children()
            if len(kids) == count:
                return kids
            if expired:
                raise RuntimeError("expected %d children, have %s" % (count, kids))
            time.sleep(0.05)

    def generation_count(self):
        """How many times the parent said it resumed normal operations."""
        return self.log().count("resuming normal operations")

    def graceful(self, timeout=20):
        """SIGUSR1; returns once the new generation logged it is running.
        Raises if that does not happen in time or the parent dies."""
        before = self.generation_count()
        self.signalled_at = time.time()     # the log's clock, for its stamps
        self.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + timeout
        while True:
            expired = time.monotonic() >= deadline   # then one last look
            if self.generation_count() > before:
                return True
            if not pid_alive(self.pid):
                raise RuntimeError("httpd parent %d died during the graceful restart: %s\n%s"
                                   % (self.pid, how_it_ended(self.pid), self.log_tail()))
            if expired:
                raise RuntimeError("graceful restart not finished in %ss\n%s"
                                   % (timeout, self.log_tail()))
            time.sleep(0.05)

    def processes(self):
        """The parent and its current children."""
        return [self.pid] + self.children() if self.pid else []

    def stop(self, sig=signal.SIGTERM, timeout=30):
        """Stop the parent and every child it had, by PID; kill stragglers.
        Returns the PIDs that were still alive after timeout (and then got
        SIGKILL): [] means everything exited by itself."""
        procs = self.processes()
        if not procs:
            return []
        try:
            os.kill(procs[0], sig)
        except ProcessLookupError:
            pass
        return self.wait_exit(procs, timeout)

    def wait_exit(self, procs, timeout):
        """Wait for procs (from processes(), taken before a stop signal the
        caller sent) to exit; SIGKILL and return those still alive after
        timeout.  The instance counts as stopped afterwards."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(pid_alive(p) for p in procs):
            time.sleep(0.05)
        leftover = [p for p in procs if pid_alive(p)]
        for p in leftover:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if leftover:
            time.sleep(0.05)
        reap(procs)
        self.pid = None
        return leftover

    def connection_count(self):
        """TCP connections (not listeners) the server's processes hold open
        now: their socket descriptors matched against the kernel's TCP
        tables of the server's network namespace."""
        inodes = set()
        procs = self.processes()
        for pid in procs:
            fd_dir = "/proc/%d/fd" % pid
            try:
                names = os.listdir(fd_dir)
            except OSError:
                continue
            for name in names:
                try:
                    target = os.readlink(os.path.join(fd_dir, name))
                except OSError:
                    continue
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        held = 0
        for table in ("tcp", "tcp6"):
            try:
                with open("/proc/%d/net/%s" % (procs[0], table)) as f:
                    next(f)
                    for line in f:
                        cols = line.split()
                        # cols[3]: state (0A = LISTEN); cols[9]: inode
                        if cols[3] != "0A" and cols[9] in inodes:
                            held += 1
            except (OSError, IndexError, StopIteration):
                continue
        return held

    def pidfile_pid(self):
        """The pid the PidFile names now; 0 if there is none."""
        try:
            with open(self.pidfile) as f:
                return int(f.read().strip() or 0)
        except (OSError, ValueError):
            return 0

    def pidfile_parent(self):
        """The live parent the PidFile names, if it runs this instance's
        configuration (a binary upgrade's new parent that a test did not
        follow); else None."""
        pid = self.pidfile_pid()
        if not pid:
            return None
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            return None
        return pid if self.conf.encode() in args else None

    def cleanup(self):
        self.stop()
        stray = self.pidfile_parent()
        if stray:
            self.pid = stray
            self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    # ---- inspection ----------------------------------------------------
    def log(self):
        try:
            with open(self.errlog, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def log_tail(self, n=40):
        return "\n".join(self.log().splitlines()[-n:])

    def url(self, path="/"):
        return "http://%s:%d%s" % (bracket(self.host), self.port, path)

    def status(self, timeout=10):
        """/server-status?auto as a dict of str -> str (raises on non-200)."""
        import http.client
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            conn.request("GET", "/server-status?auto")
            resp = conn.getresponse()
            body = resp.read().decode("latin-1")
            if resp.status != 200:
                raise RuntimeError("server-status: HTTP %d" % resp.status)
        finally:
            conn.close()
        out = {}
        for line in body.splitlines():
            key, sep, val = line.partition(":")
            if sep:
                out[key.strip()] = val.strip()
        return out

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.cleanup()
