"""Persistent wineservers: the one the Windows tests share for a whole
run (PersistentWineserver) and private copies of the tests' wineprefix with
a server of their own (WinePrefix), for tests that change the prefix
(install services, unzip a distribution into drive C:) so that nothing they
do can reach the prefix other tests use.  A private prefix's services.exe
is booted with WINEDEBUG=+eventlog and its output kept: Wine's ReportEvent
only writes the event text there, which is how tests see the event log."""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from mpmng_py.win import winhttpd
from mpmng_py.win.winhttpd import WINE

WINESERVER = os.path.join(os.path.dirname(WINE), "wineserver")


def start_server(env, boot_output=subprocess.DEVNULL, boot_debug=None):
    """A wineserver for env's prefix that stays until stop_server(), and
    wine's own processes booted.  Left to itself a wineserver exits a
    second or so after its last process, and a wine process that connects
    as it exits dies at once (exit 1, "recvmsg: Connection reset by
    peer"): an httpd.exe started right after the previous test's was
    killed (CI, stop 48; here 1 of 400 starts timed into that window)."""
    proc = subprocess.Popen([WINESERVER, "-p", "-f"], env=winhttpd.wine_env(env),
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    # Ready once its socket is there (in its working directory): a wine
    # process started before that would start a server of its own.
    deadline = time.monotonic() + 30
    while not os.path.exists("/proc/%d/cwd/socket" % proc.pid):
        if proc.poll() is not None or time.monotonic() > deadline:
            stop_server(proc, env)
            raise RuntimeError("wineserver -p did not start (exit %s)" % proc.returncode)
        time.sleep(0.05)
    # Wine's own processes (services.exe, winedevice.exe) start with the
    # first wine process and live as long as the server: booted here, they
    # hold no test's output pipe open (a test reading a tool's output to
    # its end would wait forever), and they get boot_debug's WINEDEBUG.
    boot_env = dict(env, WINEDEBUG=boot_debug) if boot_debug else env
    subprocess.run([WINE, "wineboot"], env=winhttpd.wine_env(boot_env),
                   stdin=subprocess.DEVNULL, stdout=boot_output, stderr=boot_output,
                   timeout=300)
    return proc


def stop_server(proc, env):
    subprocess.run([WINESERVER, "-k"], env=winhttpd.wine_env(env), capture_output=True,
                   timeout=60)
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class PersistentWineserver:
    """The tests' prefix with one wineserver for the whole run."""

    def __enter__(self):
        # One left by an earlier wine process (a build) must go first: a
        # second server on the prefix would not start.
        try:
            subprocess.run([WINESERVER, "-w"], env=winhttpd.wine_env(), capture_output=True,
                           timeout=60)
        except subprocess.TimeoutExpired:
            subprocess.run([WINESERVER, "-k"], env=winhttpd.wine_env(), capture_output=True,
                           timeout=60)
        self.proc = start_server({})
        return self

    def __exit__(self, *exc):
        stop_server(self.proc, {})


class WinePrefix:
    """A private wineprefix copy with a persistent wineserver."""

    def __init__(self, tag="wnsvc"):
        self.dir = tempfile.mkdtemp(prefix=tag + "-")
        self.path = os.path.join(self.dir, "pfx")
        subprocess.run(["cp", "-a", winhttpd.PREFIX, self.path], check=True,
                       timeout=300)
        self.boot_log = os.path.join(self.dir, "services.log")
        self.env = {"WINEPREFIX": self.path}
        # services.exe (and so every service) gets this environment and
        # this stderr: the service's event log entries end up in boot_log.
        with open(self.boot_log, "wb") as log:
            self.server = start_server(self.env, boot_output=log, boot_debug="+eventlog")

    def drive_c(self):
        return os.path.join(self.path, "drive_c")

    def run(self, *args, timeout=240):
        """(exit code, output) of a wine command.  Output goes through a
        file: a pipe could be held open by a process the command starts.
        Wine's own errors are in it (WINEDEBUG err): a command that failed
        with no output of its own (CI, stop 55) then says why."""
        env = dict(self.env, WINEDEBUG=os.environ.get("WINEDEBUG", "err+all,fixme-all"))
        with tempfile.TemporaryFile() as out:
            r = subprocess.run([WINE] + list(args), stdin=subprocess.DEVNULL,
                               stdout=out, stderr=subprocess.STDOUT,
                               env=winhttpd.wine_env(env), timeout=timeout)
            out.seek(0)
            return r.returncode, out.read().decode(errors="replace")

    def reg_query(self, key, tries=3):
        """(exit code, output) of `reg query key`, run again (at most tries
        times) while reg printed nothing of its own.  It prints the key or
        an error ("Unable to find ..."); once in CI (stop 55) it printed
        nothing for a key that was there, never in 4,600 queries here: that
        is Wine losing the tool's output or the tool, not an answer about
        the key.  Wine's own lines are shown."""
        for attempt in range(1, tries + 1):
            rc, out = self.run("reg", "query", key)
            if not_wines(out).strip():
                return rc, out
            print("\n    note: reg query %s printed nothing of its own (exit %d, try %d of %d)%s"
                  % (key, rc, attempt, tries, "; Wine said: " + out.strip() if out.strip() else ""),
                  end=" ", file=sys.stderr)
        return rc, out

    def event_log(self):
        with open(self.boot_log, errors="replace") as f:
            return "".join(l for l in f if ":eventlog:" in l)

    def pids(self, needle=b""):
        """Linux pids of this prefix's processes (whose command line holds
        needle)."""
        return winhttpd.linux_pids(
            needle, b"WINEPREFIX=" + self.path.encode() + b"\0")

    def close(self):
        stop_server(self.server, self.env)
        for pid in self.pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        shutil.rmtree(self.dir, ignore_errors=True)


WINE_DEBUG_LINE = re.compile(r"[0-9a-f]{4}:(err|fixme|warn|trace):")


def not_wines(out):
    """out without the lines of Wine's debug channels."""
    return "".join(l for l in out.splitlines(True) if not WINE_DEBUG_LINE.match(l))


def wait_until(what, timeout=60, step=0.5):
    deadline = time.time() + timeout
    while True:
        try:
            v = what()
            if v:
                return v
        except (OSError, AssertionError, KeyError, ValueError, IndexError):
            pass
        if time.time() > deadline:
            return None
        time.sleep(step)
